"""A basemap tile server on 127.0.0.1 for the browser tests (on ``pythonpath``): no test reaches the internet.

``TileServer(kind="plain")`` serves one 256 x 256 PNG of :data:`TILE` (magenta: nothing else on a page has that
colour, so drawn tiles are found in the pixels). ``kind="paper"`` draws each tile as a light, map-like background
with its grid and its z/x/y written in a corner, for screenshots in the docs (a test tile, not a real map). Every
request path is recorded in ``requests``.
"""

from __future__ import annotations

import http.server
import io
import re
import threading

from PIL import Image, ImageDraw

TILE = (255, 0, 255)
PAPER = (242, 239, 233)


def _tile(kind: str, z: int, x: int, y: int) -> bytes:
    buf = io.BytesIO()
    if kind == "plain":
        Image.new("RGB", (256, 256), TILE).save(buf, format="PNG")
        return buf.getvalue()
    img = Image.new("RGB", (256, 256), PAPER)
    draw = ImageDraw.Draw(img)
    for k in range(0, 256, 64):
        draw.line([(k, 0), (k, 255)], fill=(228, 224, 216))
        draw.line([(0, k), (255, k)], fill=(228, 224, 216))
    draw.rectangle([0, 0, 255, 255], outline=(214, 209, 199))
    draw.text((6, 4), f"test tile {z}/{x}/{y}", fill=(170, 164, 152))
    img.save(buf, format="PNG")
    return buf.getvalue()


class TileServer:
    """XYZ tiles on 127.0.0.1 (a free port); ``url`` is the template to pass as ``--tiles``."""

    def __init__(self, kind: str = "plain") -> None:
        requests: list[str] = []
        self.requests = requests

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                requests.append(self.path)
                m = re.fullmatch(r"/(\d+)/(\d+)/(\d+)\.png", self.path)
                self.send_response(200 if m else 404)
                self.send_header("Content-Type", "image/png")
                self.send_header("Access-Control-Allow-Origin", "*")
                self.end_headers()
                if m:
                    self.wfile.write(_tile(kind, *(int(g) for g in m.groups())))

            def log_message(self, *args: object) -> None:
                pass

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/{{z}}/{{x}}/{{y}}.png"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()

"""JSON and JSON Lines ingest (issue 12 part 2, issue 9 "Good rows silently lost"): bulk parsing, bad lines isolated."""

from __future__ import annotations

import datetime as dt
import json
from pathlib import Path

import polars as pl
import pytest

import urbandp._records.readers as readers
from urbandp.fleet._pipeline import load_records


def _record(i: int, **over: object) -> dict[str, object]:
    rec: dict[str, object] = {
        "id": "surat-itms",
        "license_plate": f"GJ05{i % 7}",
        "observationDateTime": f"2021-11-15T09:{i // 60 % 60:02d}:{i % 60:02d}+05:30",
        "location": {"type": "Point", "coordinates": [72.8 + i * 1e-5, 21.1 + i * 1e-5]},
        "speed": 20.0 + i % 30,
    }
    rec.update(over)
    return rec


def _write_lines(path: Path, lines: list[str], end: str = "\n") -> Path:
    path.write_text("\n".join(lines) + end, encoding="utf-8")
    return path


def _reasons(loaded) -> list[tuple[int, str]]:  # type: ignore[no-untyped-def]
    q = loaded.quarantine.sort("row")
    return list(zip(q["row"].to_list(), q["reason"].to_list(), strict=True))


@pytest.mark.parametrize("where", [0, 1234, 1999])
def test_one_unknown_location_quarantines_that_record_only(tmp_path: Path, where: int) -> None:
    """Issue 9: `"location": "unknown"` once made every record's coordinates null (2,000 of 2,000 quarantined)."""
    recs = [_record(i) for i in range(2000)]
    recs[where] = _record(where, location="unknown")
    path = _write_lines(tmp_path / "itms.jsonl", [json.dumps(r) for r in recs])
    loaded = load_records([path])
    assert loaded.records_in == 2000
    assert _reasons(loaded) == [(where + 1, "missing_coordinates")]
    assert loaded.clean.height == 1999
    other = 0 if where else 1
    row = loaded.clean.filter(pl.col("vehicle") == f"GJ05{other % 7}").sort("timestamp").row(0)
    assert row[2:4] == pytest.approx((21.1 + other * 1e-5, 72.8 + other * 1e-5))


def test_json_array_with_one_badly_typed_row_keeps_the_others(tmp_path: Path) -> None:
    """Issue 9: one badly typed row of a JSON array rejected the whole file."""
    recs: list[object] = [_record(i) for i in range(50)]
    recs[3] = _record(3, location="unknown")
    recs[7] = _record(7, speed="fast")
    recs[9] = _record(9, license_plate={"nested": True})
    recs[11] = [1, 2]
    path = tmp_path / "itms.json"
    path.write_text(json.dumps(recs))
    loaded = load_records([path])
    assert loaded.records_in == 50
    assert _reasons(loaded) == [(4, "missing_coordinates"), (8, "missing_speed"), (12, "unparseable_record")]
    # the object-valued plate is read as its JSON text: a (strange but present) vehicle id, not a lost row
    assert loaded.clean.height == 47
    assert loaded.clean.filter(pl.col("vehicle") == '{"nested": true}').height == 1


def test_bom_does_not_quarantine_the_first_record(tmp_path: Path) -> None:
    """Issue 9: a UTF-8 BOM at the start of a JSON Lines file made the first valid record unparseable."""
    path = tmp_path / "bom.jsonl"
    body = "\n".join(json.dumps(_record(i)) for i in range(3)) + "\n"
    path.write_bytes(b"\xef\xbb\xbf" + body.encode())
    loaded = load_records([path])
    assert loaded.records_in == 3 and loaded.quarantine.height == 0
    first = loaded.clean.sort("timestamp").row(0)
    assert first[:2] == ("GJ050", dt.datetime(2021, 11, 15, 9, 0, 0))
    array = tmp_path / "bom.json"
    array.write_bytes(b"\xef\xbb\xbf" + json.dumps([_record(i) for i in range(3)]).encode())
    assert load_records([array]).clean.height == 3


def test_malformed_lines_across_blocks_keep_their_line_numbers(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Small blocks force several blocks; blank lines, junk, non-objects, two objects on a line, no final newline."""
    monkeypatch.setattr(readers, "JSON_BLOCK_BYTES", 4096)
    lines = [json.dumps(_record(i)) for i in range(400)]
    lines[10] = "not json"
    lines[57] = ""
    lines[58] = "   "
    lines[120] = json.dumps([1, 2])
    lines[121] = json.dumps(_record(121)) + " trailing"
    lines[300] = json.dumps(_record(300)) + json.dumps(_record(301))
    lines[301] = '{"license_plate": "X", "speed": '  # cut off mid-record
    lines[399] = "null"
    path = _write_lines(tmp_path / "dirty.jsonl", lines, end="")
    loaded = load_records([path])
    assert loaded.records_in == 398  # two blank lines are not records
    assert _reasons(loaded) == [(n + 1, "unparseable_record") for n in (10, 120, 121, 300, 301, 399)]
    kept_rows = sorted(set(range(1, 401)) - {11, 58, 59, 121, 122, 301, 302, 400})
    raw = readers.read_json_lines(path)
    assert raw.filter(pl.col("__record_ok"))["__line"].to_list() == kept_rows
    assert raw.filter(pl.col("__line") == 200)["speed"].item() == _record(199)["speed"]


def test_a_bad_line_costs_one_reparse_not_a_line_by_line_read(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """One bad line among 4,000: the block is re-parsed in runs of 256 lines, and only the bad line's run is
    checked line by line (a line-by-line fallback for the file would check all 4,000)."""
    lines = [json.dumps(_record(i)) for i in range(4000)]
    lines[2500] = "{broken"
    path = _write_lines(tmp_path / "one_bad.jsonl", lines)
    calls: list[int] = []
    checked: list[int] = []
    real_parse, real_lines = pl.read_ndjson, readers._parse_line_by_line

    def counting(source, *args, **kwargs):  # type: ignore[no-untyped-def]
        calls.append(len(source.getvalue()))
        return real_parse(source, *args, **kwargs)

    def by_line(run, first, schema):  # type: ignore[no-untyped-def]
        checked.append(len(run))
        return real_lines(run, first, schema)

    monkeypatch.setattr(readers.pl, "read_ndjson", counting)
    monkeypatch.setattr(readers, "_parse_line_by_line", by_line)
    raw = readers.read_json_lines(path)
    assert raw.height == 4000
    assert raw.filter(~pl.col("__record_ok"))["__line"].to_list() == [2501]
    assert raw["__line"].to_list() == list(range(1, 4001))
    assert checked == [readers.JSON_RUN_LINES]
    assert (
        len(calls) == 1 + -(-4000 // readers.JSON_RUN_LINES) + 1
    )  # block, its runs, the bad run's good lines
    assert sum(calls) < 2.1 * path.stat().st_size


def test_only_the_needed_columns_are_read_and_mapping_is_honoured(tmp_path: Path) -> None:
    recs = [
        {"bus": "B1", "t": 1637000000 + i, "lat": 21.1, "lon": 72.8, "v": 12, "junk": {"a": [1]}}
        for i in range(5)
    ]
    path = _write_lines(tmp_path / "mapped.jsonl", [json.dumps(r) for r in recs])
    columns = {"vehicle": "bus", "timestamp": "t", "latitude": "lat", "longitude": "lon", "speed": "v"}
    raw = readers.read_json_lines(path, columns)
    assert set(raw.columns) == {"bus", "t", "lat", "lon", "v", "__line", "__record_ok"}
    assert raw["t"].to_list() == [str(1637000000 + i) for i in range(5)]  # an epoch arrives as its digits
    assert raw.schema["v"] == pl.Float64


def test_empty_and_objectless_files_are_clear_errors(tmp_path: Path) -> None:
    from urbandp.errors import InputError

    empty = tmp_path / "empty.jsonl"
    empty.write_text("")
    with pytest.raises(InputError, match="empty"):
        readers.read_json_lines(empty)
    junk = _write_lines(tmp_path / "junk.jsonl", ["[1]", "nope"])
    with pytest.raises(InputError, match="no JSON object"):
        readers.read_json_lines(junk)


def test_location_read_as_text_then_decoded_falls_back_on_odd_values(tmp_path: Path) -> None:
    """The nested location is decoded from its JSON text; a value the decoder rejects sends its block to the nested
    parser, where only that record loses its coordinates."""
    recs = [_record(i) for i in range(300)]
    recs[5] = _record(5, location={"type": "Point", "coordinates": ["x", 21.1]})
    recs[6] = _record(6, location="{not an object")
    recs[7] = _record(7, location={"type": "Point", "coordinates": [72.9]})
    path = _write_lines(tmp_path / "odd.jsonl", [json.dumps(r) for r in recs])
    loaded = load_records([path])
    assert _reasons(loaded) == [
        (6, "missing_coordinates"),
        (7, "missing_coordinates"),
        (8, "missing_coordinates"),
    ]
    assert loaded.clean.height == 297
    raw = readers.read_json_lines(path)
    assert raw.schema["location"] == pl.Struct({"coordinates": pl.List(pl.Float64)})
    assert raw.filter(pl.col("__line") == 300)["location"].item() == {
        "coordinates": [72.8 + 299e-5, 21.1 + 299e-5]
    }


def test_crlf_line_ends_read_like_lf(tmp_path: Path) -> None:
    lines = [json.dumps(_record(i)) for i in range(50)]
    lf = _write_lines(tmp_path / "lf.jsonl", lines)
    crlf = tmp_path / "crlf.jsonl"
    crlf.write_bytes(("\r\n".join(lines) + "\r\n").encode())
    a, b = load_records([lf]), load_records([crlf])
    assert a.clean.equals(b.clean) and b.quarantine.height == 0 and b.records_in == 50


def test_a_clean_file_is_one_whole_file_scan(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Issue 12: a clean file is read by one multi-threaded scan of the whole file (no block parses); a blank line
    makes the row count differ from the line count, so the blocks take over and line numbers stay exact."""
    lines = [json.dumps(_record(i)) for i in range(500)]
    clean = _write_lines(tmp_path / "clean.jsonl", lines)
    blocks: list[int] = []
    real_parse = pl.read_ndjson

    def counting(source, *args, **kwargs):  # type: ignore[no-untyped-def]
        blocks.append(1)
        return real_parse(source, *args, **kwargs)

    monkeypatch.setattr(readers.pl, "read_ndjson", counting)
    raw = readers.read_json_lines(clean)
    assert blocks == [] and raw["__line"].to_list() == list(range(1, 501))
    schema = {k: v for k, v in raw.schema.items() if not k.startswith("__")}
    by_arrow = readers._arrow_whole_file(clean, schema)  # the strict Arrow reader took the clean file ...
    assert by_arrow is not None and by_arrow.equals(pl.scan_ndjson(clean, schema=schema).collect())
    odd = _write_lines(tmp_path / "odd.jsonl", [*lines[:3], json.dumps(_record(3, location="unknown"))])
    assert readers._arrow_whole_file(odd, schema) is None  # ... and refuses a value of another type
    assert readers.read_json_lines(odd)["location"].null_count() == 1  # which Polars nulls in its record only
    assert raw.filter(pl.col("__line") == 500)["speed"].item() == _record(499)["speed"]
    gap = _write_lines(tmp_path / "gap.jsonl", [*lines[:100], "", *lines[100:]])
    raw = readers.read_json_lines(gap)
    assert blocks and raw.height == 500 and raw["__line"].to_list() == [*range(1, 101), *range(102, 502)]


def test_two_objects_on_a_line_plus_a_blank_line_keep_the_numbering(tmp_path: Path) -> None:
    """Arrow's reader splits ``{...}{...}`` into two rows and skips blank lines, so together they keep the row
    count equal to the line count: the layout check sends such a file to the line-accurate blocks, where the
    doubled line is one unparseable record and every later line keeps its number."""
    lines = [json.dumps(_record(i)) for i in range(10)]
    lines[3] += lines[4]
    lines[6] = ""
    path = _write_lines(tmp_path / "doubled.jsonl", lines)
    raw = readers.read_json_lines(path)
    assert raw["__line"].to_list() == [1, 2, 3, 4, 5, 6, 8, 9, 10]
    assert raw.filter(~pl.col("__record_ok"))["__line"].to_list() == [4]
    assert raw.filter(pl.col("__line") == 8)["speed"].item() == _record(7)["speed"]

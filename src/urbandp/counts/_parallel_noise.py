"""OpenDP noise over very long vectors, in chunks, on every core.

OpenDP's exact samplers cost about 6.7 microseconds per discrete-Laplace draw on this machine (measured:
``benchmarks/bench_counts.py``), so 10 million cells take about a minute on one core. The vector is split into
chunks and each chunk goes through :class:`urbandp._privacy.noise.OpenDPNoise` in a worker process. Every cell
still gets independent noise from the same OpenDP measurement, so the privacy map of the whole-vector measurement
(computed once in :mod:`urbandp.counts._accounting`) is unchanged. No numpy noise is ever used.
"""

from __future__ import annotations

import multiprocessing
import os
from collections.abc import Callable
from concurrent.futures import ProcessPoolExecutor

import numpy as np

from urbandp._privacy.noise import NoiseSource, OpenDPNoise

CHUNK = 250_000


def _noise_chunk(args: tuple[str, np.ndarray, float]) -> np.ndarray:
    kind, values, scale = args
    return getattr(OpenDPNoise(), kind)(values, scale)


def add_noise(
    values: np.ndarray,
    scale: float,
    kind: str,
    noise: NoiseSource,
    *,
    workers: int | None = None,
    progress: Callable[[int], None] | None = None,
) -> np.ndarray:
    """Return ``values`` + noise of ``kind`` (``discrete_laplace`` / ``discrete_gaussian`` / ``laplace``).

    Uses worker processes only when ``noise`` is :class:`OpenDPNoise` and the vector is long; any other noise
    source (the exact test source) is called directly. ``progress(n)`` is called after each chunk of ``n``.
    """
    flat = np.ascontiguousarray(values).ravel()
    n = flat.size
    workers = workers or os.cpu_count() or 1
    if not isinstance(noise, OpenDPNoise) or n <= CHUNK or workers == 1:
        out = np.empty_like(flat, dtype=np.float64 if kind == "laplace" else np.int64)
        for start in range(0, max(n, 1), CHUNK):
            part = flat[start : start + CHUNK]
            out[start : start + part.size] = getattr(noise, kind)(part, scale)
            if progress:
                progress(part.size)
        return out.reshape(values.shape)
    chunks = [(kind, flat[s : s + CHUNK], scale) for s in range(0, n, CHUNK)]
    parts: list[np.ndarray] = []
    # "fork" where available: callers' scripts need no __main__ guard (spawn would re-import them); children only
    # run OpenDP on numpy chunks, never Polars, so the parent's Polars thread pool is not touched after the fork
    method = "fork" if "fork" in multiprocessing.get_all_start_methods() else "spawn"
    with ProcessPoolExecutor(max_workers=workers, mp_context=multiprocessing.get_context(method)) as pool:
        for part in pool.map(_noise_chunk, chunks):
            parts.append(part)
            if progress:
                progress(part.size)
    return np.concatenate(parts).reshape(values.shape)

"""Exact, vectorised random draws for the survey wing (docs/design.md privacy rule 1; docs/survey.md, section
"Randomness"): OpenDP's scalar ``make_randomized_response`` costs about 0.1 ms per call through Python, so two
column-wide sources are offered, :class:`OpenDPBits` (the default) and :class:`OSRandomBits`. Uniform integers come
by rejection; no float arithmetic touches a draw (Mironov 2012); numpy only unpacks and compares integers.
"""

from __future__ import annotations

import math
import os
from fractions import Fraction
from typing import Protocol

import numpy as np

import urbandp._privacy.dp_prelude as dp
from urbandp._privacy.noise import on_every_core

dp.enable_features("contrib")


class BitSource(Protocol):
    """A source of exact Bernoulli draws and uniform integers over whole columns."""

    name: str

    def bernoulli(self, n: int, prob: float) -> np.ndarray:
        """``n`` independent Bernoulli(``prob``) draws as a bool array."""
        ...

    def uniform_int(self, n: int, k: int) -> np.ndarray:
        """``n`` independent uniform integers in ``[0, k)`` (int64)."""
        ...


def _rejection_uniform(n: int, k: int, raw_words: object) -> np.ndarray:
    """Uniform integers in [0, k) from a function giving uniform integers in [0, 2**bits) (exact rejection)."""
    out = np.empty(n, dtype=np.int64)
    if k <= 1:
        out[:] = 0
        return out
    bits = max(1, math.ceil(math.log2(k)))
    todo = np.arange(n)
    while todo.size:
        draw = raw_words(todo.size, bits)  # type: ignore[operator]
        ok = draw < k
        out[todo[ok]] = draw[ok]
        todo = todo[~ok]
    return out


class OpenDPBits:
    """Bernoulli and uniform draws from OpenDP's ``make_randomized_response_bitvec`` (RAPPOR): on an all-zero
    (all-one) bit vector it gives independent Bernoulli(``f / 2``) (Bernoulli(``1 - f / 2``)) bits."""

    name = "opendp-bitvec"

    def _bits(self, n: int, prob: float) -> np.ndarray:
        if n == 0:
            return np.zeros(0, dtype=bool)
        if prob <= 0.0:
            return np.zeros(n, dtype=bool)
        if prob >= 1.0:
            return np.ones(n, dtype=bool)
        ones = prob > 0.5
        f = 2.0 * (1.0 - prob) if ones else 2.0 * prob  # exact: Sterbenz for 1 - prob when prob > 1/2

        def draw(nbytes: int) -> np.ndarray:
            m = dp.m.make_randomized_response_bitvec(
                dp.bitvector_domain(max_weight=nbytes * 8 if ones else 1), dp.discrete_distance(), f=f
            )
            fill = np.full(nbytes, 0xFF if ones else 0, dtype=np.uint8)
            return np.frombuffer(bytes(m(fill)), dtype=np.uint8)

        # one OpenDP call per chunk of THREAD_CHUNK bytes' worth, one chunk per core (independent bits all the same)
        raw = on_every_core(np.zeros((n + 7) // 8, dtype=np.uint8), lambda part: draw(part.size))
        return np.unpackbits(raw)[:n].astype(bool)

    def bernoulli(self, n: int, prob: float) -> np.ndarray:
        return self._bits(n, float(prob))

    def _words(self, n: int, bits: int) -> np.ndarray:
        b = self._bits(n * bits, 0.5).reshape(n, bits).astype(np.int64)
        return b @ (np.int64(1) << np.arange(bits, dtype=np.int64))

    def uniform_int(self, n: int, k: int) -> np.ndarray:
        return _rejection_uniform(n, k, self._words)


class OSRandomBits:
    """Bernoulli and uniform draws from ``os.urandom`` with integer-only arithmetic: Bernoulli(``q``) is
    ``U < floor(q * 2**64)``, exact for ``q >= 2**-11``."""

    name = "os-csprng"

    @staticmethod
    def _u64(n: int) -> np.ndarray:
        return np.frombuffer(os.urandom(8 * n), dtype=np.uint64)

    def bernoulli(self, n: int, prob: float) -> np.ndarray:
        prob = float(prob)
        if prob <= 0.0:
            return np.zeros(n, dtype=bool)
        if prob >= 1.0:
            return np.ones(n, dtype=bool)
        threshold = int(Fraction(prob) * (1 << 64))  # floor(prob * 2**64), exact rational arithmetic
        return self._u64(n) < np.uint64(threshold)

    def _words(self, n: int, bits: int) -> np.ndarray:
        return (self._u64(n) >> np.uint64(64 - bits)).astype(np.int64)

    def uniform_int(self, n: int, k: int) -> np.ndarray:
        return _rejection_uniform(n, k, self._words)


SOURCES: dict[str, type[OpenDPBits] | type[OSRandomBits]] = {"opendp": OpenDPBits, "os": OSRandomBits}


def bit_source(name: str) -> BitSource:
    """The named source: ``opendp`` (default) or ``os`` (the specs' ``sampler`` takes only these)."""
    return SOURCES[name]()

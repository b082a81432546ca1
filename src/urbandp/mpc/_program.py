"""The Prac2PC circuit (paper section VII-B/C/D) as a JAX function that SPU compiles and runs under CHEETAH.

Inputs (all secret): the server's ``mu``, ``sigma2`` (clamped to the public bounds) and its noise; the client's
``v`` and thresholds ``theta``, ``theta2``. Steps, each inside the secure computation:

1. ``v`` is forced to {0, 1} (``v_i > 1/2``), so a client cannot weight cells to extract one value;
2. ``beta = [sum v >= alpha]`` (eq. 10); private set selection by multiplying with ``v`` (eq. 11-12);
3. the function and its propagated error (Table III, eq. 13-22; the same formulas as
   :mod:`urbandp.sensing._queries`), MIN/MAX either as LogSumExp (eq. 17) normalised by the exact extreme of
   the selected cells (so ``exp`` never overflows) or exactly by comparisons;
4. ``E^2`` is clamped to its public range (so the sensitivity holds whatever the fixed-point error), the
   server's noise is added and the result clamped again (section VII-D);
5. everything is multiplied by ``beta``. Outputs: ``value``, noisy ``E^2``, ``beta``; only the client
   reconstructs them.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from urbandp.mpc._spec import SIGMOID_CLIP, QuerySpec

BIG = 1.0e6  # masks unselected cells out of the max (|rho mu| stays far below it)


def clamp_noisy(xp: Any, e2: Any, noise: Any, lo: Any, hi: Any) -> Any:
    """``clip(clip(e2, lo, hi) + noise, lo, hi)`` (section VII-D) from ONE batched comparison: ``xp.clip``
    twice is four sequential secure comparisons (each a few OT rounds); here the eight signs that decide
    every case are compared as one 8-vector, then the result is selected. Bit-identical on the lattice
    (additions are exact), so the discrete Laplace mechanism on the clamped ``E^2`` is unchanged. ``xp`` is
    ``jax.numpy`` inside SPU, ``numpy`` in the tests."""
    w = hi - lo
    d = xp.stack([e2 - lo, hi - e2, noise, w - noise, noise + w, -noise, e2 + noise - lo, hi - e2 - noise])
    b = d < 0.0
    # b: e2 < lo, e2 > hi | for lo+noise: < lo, > hi | for hi+noise: < lo, > hi | for e2+noise: < lo, > hi
    cand = xp.stack([lo + noise, hi + noise, e2 + noise])
    lo3 = xp.stack([lo, lo, lo])  # not lo + 0 * cand: a secret product costs a truncation round
    hi3 = xp.stack([hi, hi, hi])
    below = xp.stack([b[2], b[4], b[6]])
    above = xp.stack([b[3], b[5], b[7]])
    clipped = xp.where(below, lo3, xp.where(above, hi3, cand))
    return xp.where(b[0], clipped[0], xp.where(b[1], clipped[1], clipped[2]))


def build(spec: QuerySpec) -> Callable[..., Any]:
    """The function ``(mu, sigma2, noise, v, theta, theta2) -> (value, noisy_e2, beta)`` for ``spec``."""
    import jax.numpy as jnp

    q = spec.function
    alpha, k, smin, smax = float(spec.alpha), spec.steepness, spec.sigma2_min, spec.sigma2_max

    def corrected(a: Any, b: Any, r: Any) -> Any:
        """``a / b`` from an approximate reciprocal ``r ~ 1/b`` and a Newton correction ``q + (a - b q) r``: if
        ``r`` is off by a factor ``1 + d`` the result is off by ``d^2``. SPU's reciprocal runs ONE Goldschmidt
        iteration (``d`` <= ~7e-3; every further iteration costs a secure square, ~55 ms under CHEETAH), so the
        quotient is within ~5e-5 relative (measured over n = 1..500)."""
        q = a * r
        return q + (a - b * q) * r

    def div(a: Any, b: Any) -> Any:
        return corrected(a, b, 1.0 / b)

    def logistic(t: Any) -> tuple[Any, Any]:
        """``S = 1/(1+e^-t)`` and ``S(1-S)`` from ``u = exp(-|t|)`` (one exp, one division): both tails keep
        their relative accuracy, where ``1 - S`` computed from ``S`` would lose it in fixed point. The sign of
        ``t`` and the clip to +-12 come from one batched secure comparison (``jnp.clip`` would be two more)."""
        b = jnp.stack([t, SIGMOID_CLIP - t, SIGMOID_CLIP + t]) < 0.0  # t < 0, t > 12, t < -12
        neg_abs = jnp.where(b[0], t, -t)  # -|t|
        u = jnp.exp(jnp.where(b[1] | b[2], -SIGMOID_CLIP, neg_abs))
        r = div(1.0, 1.0 + u)
        return jnp.where(b[0], u * r, r), u * r * r

    def program(mu: Any, s2: Any, noise: Any, v: Any, theta: Any, theta2: Any) -> Any:
        sel = v > 0.5  # a secret bit per cell, reused below (a comparison costs rounds)
        vb = jnp.where(sel, 1.0, 0.0)  # v forced to {0, 1}
        n = jnp.sum(vb)
        beta = jnp.where(n > alpha - 0.5, 1.0, 0.0)  # eq. (10)
        nd = n + (1.0 - beta)  # n >= alpha >= 1 whenever beta = 1; never 1/0
        if q == "average":  # eq. (14), (16)
            # one secure reciprocal r = 1/n for the four quotients (a division costs rounds, not elements);
            # E^2 = (sum s2 / n) / n: never divide by n^2 (near 2^18 SPU's reciprocal underflows to 0)
            sums = jnp.sum(vb * jnp.stack([mu, s2]), axis=1)
            rn = 1.0 / nd
            quot = corrected(jnp.stack([sums[0], sums[1], jnp.asarray(smin), jnp.asarray(smax)]), nd, rn)
            value, lo, hi = quot[0], quot[2], quot[3]
            e2 = corrected(quot[1], nd, rn)
        elif q in ("min", "max", "min-exact", "max-exact"):
            r = spec.rho if q.startswith("max") else -spec.rho
            z = r * mu
            if q in ("min", "max"):  # eq. (17)-(19)
                zstar = jnp.max(jnp.where(sel, z, -BIG))  # exact extreme of rho*y over the selected cells
                d = z - zstar  # <= 0 on the selected cells; clipped to [-12, 0] by one batched comparison
                out_of = jnp.stack([d + SIGMOID_CLIP, -d]) < 0.0
                d = jnp.where(out_of[0], -SIGMOID_CLIP, jnp.where(out_of[1], 0.0, d))
                e = vb * jnp.exp(d)
                total = jnp.sum(e) + (1.0 - beta)  # in [1, n]
                value = (zstar + jnp.log(total)) / r
                # (e s2) e: no product of two small numbers; one secure reciprocal of (total, n) for E^2 and
                # its lower bound; E^2 = (S / total) / total, never divided by total^2 (up to 500^2)
                den = jnp.stack([total, nd])
                rr = 1.0 / den
                quot = corrected(jnp.stack([jnp.sum((e * s2) * e), jnp.asarray(smin)]), den, rr)
                e2, lo, hi = corrected(quot[0], total, rr[0]), quot[1], smax
            else:  # exact: the error of the arg-extreme cell (the first one on ties, as the reference)
                first = jnp.argmax(jnp.where(sel, z, -BIG))
                onehot = jnp.where(jnp.arange(z.shape[0]) == first, 1.0, 0.0)
                value = jnp.sum(onehot * z) / r  # not a second comparison tree (jnp.max) beside argmax
                e2 = jnp.sum(onehot * s2)
                lo, hi = smin, smax
        else:  # count (eq. 20-22) or range (Table III)
            if q == "count":
                s1, p1 = logistic(k * (mu - theta))
                value = jnp.sum(vb * s1)
                w = p1  # df/dy = k S (1 - S); k^2 applied last
            else:  # both logistics as one (2, n) batch: the same rounds as one
                s12, p12 = logistic(k * (jnp.stack([mu, mu]) - jnp.stack([theta, theta2])[:, None]))
                value = jnp.sum(vb * (s12[0] - s12[1]))
                w = p12[0] - p12[1]
            e2 = (k * k) * jnp.sum(vb * ((w * s2) * w))  # (w s2) w: no product of two small numbers
            lo, hi = 0.0, n * (k * k * smax / 16.0)
        # E^2 clamped to its public range (the sensitivity holds for the computed value), noise added, clamped
        # again (post-processing); one multiplication by beta for both outputs
        out = jnp.stack([value, clamp_noisy(jnp, e2, noise, lo, hi)]) * beta
        return out[0], out[1], beta

    program.__name__ = "prac2pc_" + q.replace("-", "_")
    return program

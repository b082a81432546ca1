"""One privacy-loss type for every wing: pure epsilon, zCDP rho, approximate (epsilon, delta), and their sums.

A :class:`Loss` holds three parts that compose separately and are converted once:

* ``epsilon`` / ``delta``: pure and approximate DP parts. They add under basic sequential composition (Dwork and
  Roth 2014, Thm 3.16).
* ``rho``: the zCDP part of Gaussian mechanisms. It adds in rho (Bun and Steinke 2016, Lemma 2.3) and is
  converted to (epsilon, delta) once, at ``conversion_delta``, by OpenDP's ``make_zCDP_to_approxDP``. Converting
  each Gaussian apart and adding the pairs is looser: three tables at epsilon 1 cost 3.00 that way and 1.72 this
  way.

Many pure-epsilon mechanisms on the same unit (``k`` cells of one map, each epsilon-DP) compose tighter than
``k * epsilon`` when a small delta is allowed: :func:`optimal_homogeneous_epsilon` is the exact optimal
composition of Kairouz, Oh and Viswanath (ICML 2015, Thm 3.3), computed from the privacy profile of ``k``-fold
randomized response, which dominates every ``k``-fold composition of epsilon-DP mechanisms.

Conversions that overflow (an epsilon of 1e300, rho of a ten-year window) give ``None`` and a reason
(:meth:`Loss.approx`), never a traceback.
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class Loss:
    """A privacy loss: ``epsilon`` (pure or approximate), ``delta``, and zCDP ``rho`` still to be converted."""

    epsilon: float = 0.0
    delta: float = 0.0
    rho: float = 0.0

    def __post_init__(self) -> None:
        for name in ("epsilon", "delta", "rho"):
            v = getattr(self, name)
            if math.isnan(v) or v < 0:
                raise ValueError(f"{name} must be >= 0, got {v}")
        if self.delta > 1:
            raise ValueError(f"delta must be at most 1, got {self.delta}")

    @classmethod
    def pure(cls, epsilon: float) -> Loss:
        return cls(epsilon=float(epsilon))

    @classmethod
    def zcdp(cls, rho: float) -> Loss:
        return cls(rho=float(rho))

    @classmethod
    def approx_dp(cls, epsilon: float, delta: float) -> Loss:
        return cls(epsilon=float(epsilon), delta=float(delta))

    @property
    def kind(self) -> str:
        """``pure``, ``zcdp``, ``approx`` or ``mixed`` (rho beside an epsilon or delta part)."""
        if self.rho > 0:
            return "zcdp" if self.epsilon == 0 and self.delta == 0 else "mixed"
        return "approx" if self.delta > 0 else "pure"

    @property
    def amount(self) -> float:
        """The loss in its one currency: rho for a zCDP loss, else epsilon (a mixed loss has no single amount)."""
        if self.kind == "mixed":
            raise ValueError("a mixed loss (rho beside epsilon or delta) has no single amount")
        return self.rho if self.kind == "zcdp" else self.epsilon

    def group(self, k: int) -> Loss:
        """Group privacy over ``k`` units (a vehicle on ``k`` days): epsilon ``k`` times, rho ``k^2`` times
        (Bun and Steinke 2016, Prop. 1.9). A delta part has no such simple bound and is refused."""
        if self.delta > 0:
            raise ValueError(
                "group privacy of a delta part needs its own bound (an OpenDP map at the group's distance)"
            )
        return Loss(epsilon=k * self.epsilon, rho=k * k * self.rho)

    def __add__(self, other: Loss) -> Loss:
        """Sequential composition: each part adds in its own currency (delta capped at 1)."""
        return Loss(self.epsilon + other.epsilon, min(1.0, self.delta + other.delta), self.rho + other.rho)

    def times(self, k: int) -> Loss:
        """``k``-fold composition of this loss with itself (basic composition; rho adds in rho)."""
        return Loss(k * self.epsilon, min(1.0, k * self.delta), k * self.rho)

    def approx(self, conversion_delta: float | None) -> tuple[float | None, float | None, str | None]:
        """(epsilon, delta) of the whole loss, rho converted once at ``conversion_delta``; ``(None, None, why)``
        when the conversion is impossible (no delta given) or overflows."""
        eps, delta = self.epsilon, self.delta
        if self.rho > 0:
            if conversion_delta is None or not 0 < conversion_delta < 1:
                return (
                    None,
                    None,
                    "zCDP rho needs a conversion delta in (0, 1) to be stated as (epsilon, delta)",
                )
            converted = rho_to_epsilon(self.rho, conversion_delta)
            if converted is None:
                return None, None, f"rho {self.rho:.3g} overflows the conversion to (epsilon, delta)"
            eps, delta = eps + converted, min(1.0, delta + conversion_delta)
        if not math.isfinite(eps):
            return None, None, "epsilon overflows a double"
        return eps, delta, None

    def to_json(self, conversion_delta: float | None = None) -> dict[str, object]:
        """The loss as privacy.json states it: its parts, and the converted (epsilon, delta) or why not."""
        eps, delta, why = self.approx(conversion_delta)
        out: dict[str, object] = {
            "kind": self.kind,
            "epsilon": _finite_or_none(self.epsilon),
            "delta": self.delta,
            "rho": _finite_or_none(self.rho) if self.rho > 0 else None,
            "approx_epsilon": eps,
            "approx_delta": delta,
        }
        if self.rho > 0:
            out["conversion_delta"] = conversion_delta
        if why is not None:
            out["approx_reason"] = why
        return out


def _finite_or_none(v: float) -> float | None:
    return v if math.isfinite(v) else None


def rho_to_epsilon(rho: float, delta: float) -> float | None:
    """Epsilon of rho-zCDP at ``delta`` from OpenDP's conversion; None when it overflows or OpenDP refuses."""
    if rho == 0:
        return 0.0
    if not math.isfinite(rho) or rho > 1e100:
        return None
    from urbandp._privacy.noise import zcdp_epsilon

    try:
        eps = zcdp_epsilon(rho, delta)
    except (ValueError, OverflowError, ArithmeticError):
        return None
    except Exception as err:  # OpenDPException: the conversion overflowed inside OpenDP
        if type(err).__name__ == "OpenDPException":
            return None
        raise
    return eps if math.isfinite(eps) else None


def homogeneous_delta(epsilon: float, k: int, target_epsilon: float) -> float:
    """delta(target) of the ``k``-fold composition of epsilon-DP mechanisms (Kairouz, Oh, Viswanath 2015).

    The dominating pair is ``k`` independent randomized responses: the privacy loss is ``(k - 2j) epsilon`` with
    ``j ~ Binomial(k, 1 / (1 + e^epsilon))``, so ``delta(e') = sum_j C(k, j) p^(k-j) q^j (1 - e^(e' - (k-2j) eps))_+``
    with ``p = e^eps / (1 + e^eps)``, ``q = 1 - p`` (their Thm 3.3 in privacy-profile form). Summed in log space,
    vectorised; terms more than 40 standard deviations below the binomial's mean (each below e^-800) are left out.
    """
    from scipy.special import gammaln

    softplus = float(np.logaddexp(0.0, epsilon))  # log(1 + e^eps), without overflow at large epsilon
    log_p = epsilon - softplus
    log_q = -softplus
    q = math.exp(log_q)
    sd = math.sqrt(k * q * (1 - q))
    j_stop = min(k, math.ceil((k - target_epsilon / epsilon) / 2))  # loss > target only while j < j_stop
    j_start = max(0, math.floor(k * q - 40 * sd - 1))
    if j_stop <= j_start:
        return 0.0
    j = np.arange(j_start, j_stop + 1, dtype=float)
    j = j[(k - 2 * j) * epsilon > target_epsilon]
    if j.size == 0:
        return 0.0
    log_w = gammaln(k + 1) - gammaln(j + 1) - gammaln(k - j + 1) + (k - j) * log_p + j * log_q
    total = float(np.sum(np.exp(log_w) * -np.expm1(target_epsilon - (k - 2 * j) * epsilon)))
    return min(1.0, total)


def optimal_homogeneous_epsilon(epsilon: float, k: int, delta: float) -> float:
    """Smallest epsilon' such that ``k`` epsilon-DP mechanisms compose to (epsilon', delta)-DP (KOV 2015).

    Never above ``k * epsilon`` (the basic bound, at delta 0). Bisection on the decreasing privacy profile
    :func:`homogeneous_delta`, to a relative 1e-12, rounded up.
    """
    if k <= 0 or epsilon == 0:
        return 0.0
    basic = k * epsilon
    if delta <= 0 or k == 1:
        return basic
    if homogeneous_delta(epsilon, k, 0.0) <= delta:
        return 0.0
    lo, hi = 0.0, basic
    while hi - lo > 1e-12 * basic:
        mid = (lo + hi) / 2
        if homogeneous_delta(epsilon, k, mid) <= delta:
            hi = mid
        else:
            lo = mid
    return min(basic, hi)


def gaussian_delta(epsilon: float, mu: float) -> float:
    """delta(epsilon) of the Gaussian mechanism whose sensitivity is ``mu`` standard deviations: the exact
    privacy profile of Balle and Wang (ICML 2018, Thm 8),
    ``Phi(-epsilon/mu + mu/2) - e^epsilon Phi(-epsilon/mu - mu/2)``, evaluated in log space (no overflow)."""
    from scipy.special import log_ndtr, ndtr

    if mu <= 0:
        return 0.0
    first = float(ndtr(-epsilon / mu + mu / 2))
    second = math.exp(min(700.0, epsilon + float(log_ndtr(-epsilon / mu - mu / 2))))
    return max(0.0, first - second)


# a pure function of two floats, asked for by the store, privacy.json and the CLI
@functools.lru_cache(maxsize=256)
def gaussian_epsilon(rho: float, delta: float) -> float | None:
    """The smallest epsilon at which a composition of Gaussian mechanisms with total ``rho`` is (epsilon, delta)-DP.

    Gaussian mechanisms compose into one Gaussian mechanism: ``rho`` is ``mu^2 / 2`` with ``mu`` the sensitivity
    in standard deviations (Dong, Roth and Su 2022, Cor. 3.3, Gaussian DP), and a group of ``k`` units multiplies
    ``mu`` by ``k`` (rho by ``k^2``), still one Gaussian. Its exact (epsilon, delta) curve is
    :func:`gaussian_delta` (Balle and Wang 2018, the analytic Gaussian mechanism), tighter than the zCDP bound of
    :func:`rho_to_epsilon` (epsilon 3.74 where the bound states 4, at delta 1e-6). Bisection on the decreasing
    curve to a relative 1e-12, rounded up (the returned epsilon's delta is at most ``delta``); never above the
    zCDP bound. None when the zCDP conversion overflows.
    """
    bound = rho_to_epsilon(rho, delta)
    if bound is None or rho == 0:
        return bound
    mu = math.sqrt(2.0 * rho)
    if gaussian_delta(0.0, mu) <= delta:
        return 0.0
    lo, hi = 0.0, bound
    if gaussian_delta(hi, mu) > delta:  # cannot happen: the zCDP bound holds for every Gaussian
        return bound
    while hi - lo > 1e-12 * max(hi, 1e-300):
        mid = (lo + hi) / 2
        if gaussian_delta(mid, mu) <= delta:
            hi = mid
        else:
            lo = mid
    return hi


@dataclass(frozen=True)
class ReleaseLoss:
    """The composed loss of one release per privacy unit: per day and over its window, and how it is converted.

    Made once, by the code that calibrates the release's noise (the fleet's plan, the wing's spec), handed to
    :meth:`urbandp._privacy.session.ReleaseCharge.reserve`, and read by everything that states the loss: privacy.json,
    the budget store's booking and caps, ``budget show`` and ``budget history``.

    ``per_day``: what one unit pays per day (one unit-day); ``window``: what a unit present on every one of the
    ``days`` days pays (for a vehicle-day release that pools the days, group privacy; for per-day releases their
    composition). ``conversion_delta``: the delta at which a rho part is stated as (epsilon, delta), once per
    figure. ``gaussian``: the rho part is Gaussian noise only (no exponential mechanism), so a loss that is rho
    alone is converted by the exact Gaussian curve (:func:`gaussian_epsilon`) instead of the zCDP bound.
    """

    per_day: Loss
    window: Loss
    days: int
    conversion_delta: float | None = None
    gaussian: bool = False

    def approx(self, loss: Loss) -> tuple[float | None, float | None, str | None]:
        """(epsilon, delta) of ``loss`` (a figure of this release), by :attr:`conversion`; None and why on overflow
        (the exact curve overflows exactly where the zCDP bound does: :meth:`Loss.approx` then says why)."""
        delta = self.conversion_delta
        if self.exact(loss) and delta is not None and (eps := gaussian_epsilon(loss.rho, delta)) is not None:
            return eps, delta, None
        return loss.approx(delta)

    def exact(self, loss: Loss) -> bool:
        """Whether ``loss`` is converted by the exact Gaussian curve (a Gaussian-only rho with no other part)."""
        delta = self.conversion_delta
        return self.gaussian and loss.kind == "zcdp" and delta is not None and 0 < delta < 1

    def conversion(self, loss: Loss) -> str | None:
        """How ``loss``'s rho is stated as (epsilon, delta); None when it has no rho."""
        if loss.rho == 0:
            return None
        if self.exact(loss):
            return (
                "exact Gaussian privacy profile (Balle and Wang 2018), at conversion_delta: the release's rho is "
                "Gaussian noise alone"
            )
        return "zCDP to (epsilon, delta) by OpenDP's make_zCDP_to_approxDP, at conversion_delta, once"

    def to_json(self) -> dict[str, object]:
        """privacy.json's ``loss``: per day and per window, each part and its (epsilon, delta), and the conversion."""
        out: dict[str, object] = {"days": self.days, "conversion_delta": self.conversion_delta}
        for name, loss in (("per_day", self.per_day), ("per_window", self.window)):
            eps, delta, why = self.approx(loss)
            part: dict[str, object] = {
                "kind": loss.kind,
                "epsilon": eps,
                "delta": delta,
                "rho": _finite_or_none(loss.rho) if loss.rho > 0 else None,
                "pure_epsilon": _finite_or_none(loss.epsilon),
                "approx_delta_part": loss.delta,
                "conversion": self.conversion(loss),
            }
            if why is not None:
                part["reason"] = why
            out[name] = part
        return out

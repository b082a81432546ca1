"""One mechanism type: a noise law at a scale, its privacy loss at a sensitivity, its error, and its draw.

Every additive mechanism of a release implements :class:`Mechanism`:

* ``loss(sensitivity)``: the :class:`~urbandp._privacy.loss.Loss` from OpenDP's privacy map (pure epsilon for
  Laplace, zCDP rho for Gaussian), rounded outward by OpenDP;
* ``std`` and ``half_width(level)``: the error a reader of the release should expect;
* ``draw(values, noise)``: the noisy values, through a :class:`~urbandp._privacy.noise.NoiseSource` (OpenDP's
  samplers in a release). A release draws only through the :class:`~urbandp._privacy.session.ReleaseCharge`'s source,
  so the session knows when the first sampler ran;
* ``describe()``: what privacy.json says of it.

:func:`calibrate` is the one place a scale is found for a target loss: OpenDP's ``binary_search_param`` over the
same measurement whose map gives the loss, so the stated loss is exactly what the map says for the scale used
(no hand-written ``nextafter`` loop). Outside this module the protocol is implemented by the bounded Laplace of
the sensing maps (:class:`urbandp.sensing._bounded_laplace.BoundedLaplace`: loss on its noise lattice).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import ClassVar, Protocol, runtime_checkable

import numpy as np

import urbandp._privacy.dp_prelude as dp
from urbandp._privacy.loss import Loss
from urbandp._privacy.noise import NoiseSource

dp.enable_features("contrib")

Z95 = 1.959963984540054
"""Two-sided 95% quantile of the standard normal."""


@runtime_checkable
class Mechanism(Protocol):
    """An additive noise mechanism at a fixed scale."""

    name: str
    scale: float

    def loss(self, sensitivity: float) -> Loss: ...

    @property
    def std(self) -> float: ...

    def half_width(self, level: float = 0.95) -> float: ...

    def draw(self, values: np.ndarray, noise: NoiseSource) -> np.ndarray: ...

    def describe(self) -> dict[str, object]: ...


def _d_in(discrete: bool, sensitivity: float) -> float | int:
    if discrete:
        if not float(sensitivity).is_integer():
            raise ValueError(f"a discrete mechanism needs an integer sensitivity, got {sensitivity}")
        return int(sensitivity)
    return float(sensitivity)


@dataclass(frozen=True)
class _Additive:
    """What Laplace and Gaussian share: the scale, a discrete (integer) form, the loss from OpenDP's map of the
    scalar measurement and privacy.json's words. Each draws in its own ``draw``, the one call of its sampler."""

    scale: float
    discrete: bool = False
    law: ClassVar[str]

    @property
    def name(self) -> str:
        return f"discrete_{self.law}" if self.discrete else self.law

    @property
    def std(self) -> float:
        raise NotImplementedError

    def measurement(self) -> dp.Measurement:
        """The scalar OpenDP measurement whose map is the mechanism's loss (absolute distance on one value)."""
        atom = dp.atom_domain(T="i64") if self.discrete else dp.atom_domain(T=float, nan=False)
        metric = dp.absolute_distance(T="i64" if self.discrete else float)
        make = dp.m.make_gaussian if self.law == "gaussian" else dp.m.make_laplace
        return make(atom, metric, float(self.scale))

    def loss(self, sensitivity: float) -> Loss:
        value = (
            float(self.measurement().map(_d_in(self.discrete, sensitivity))) if self.scale > 0 else math.inf
        )
        return Loss.zcdp(value) if self.law == "gaussian" else Loss.pure(value)

    def describe(self) -> dict[str, object]:
        return {"mechanism": self.name, "scale": self.scale, "std": self.std}


@dataclass(frozen=True)
class Laplace(_Additive):
    """Laplace noise of scale ``b`` (discrete: two-sided geometric on the integers); pure epsilon = Delta_1 / b."""

    law: ClassVar[str] = "laplace"

    @property
    def std(self) -> float:
        return math.sqrt(2.0) * self.scale

    def half_width(self, level: float = 0.95) -> float:
        """``b ln(1 / (1 - level))``: P(|X| > t) = exp(-t / b) for continuous Laplace."""
        return self.scale * math.log(1.0 / (1.0 - level))

    def draw(self, values: np.ndarray, noise: NoiseSource) -> np.ndarray:
        return (
            noise.discrete_laplace(values, self.scale) if self.discrete else noise.laplace(values, self.scale)
        )


@dataclass(frozen=True)
class Gaussian(_Additive):
    """Gaussian noise of standard deviation ``sigma`` (discrete: Canonne, Kamath, Steinke 2020); zCDP
    rho = Delta_2^2 / (2 sigma^2) (Bun and Steinke 2016, Prop. 1.6)."""

    law: ClassVar[str] = "gaussian"

    @property
    def std(self) -> float:
        return self.scale

    def half_width(self, level: float = 0.95) -> float:
        if level == 0.95:
            return Z95 * self.scale
        from statistics import NormalDist

        return NormalDist().inv_cdf(0.5 + level / 2) * self.scale

    def draw(self, values: np.ndarray, noise: NoiseSource) -> np.ndarray:
        if self.discrete:
            return noise.discrete_gaussian(values, self.scale)
        return noise.gaussian(values, self.scale)


def laplace_epsilon(sensitivity: float, scale: float) -> float:
    """Epsilon of the Laplace mechanism, from OpenDP's privacy map: ``sensitivity / scale`` (rounded up).

    Dwork, McSherry, Nissim, Smith 2006; ITMS report section III D (``epsilon = sensitivity / B``).
    """
    return Laplace(float(scale)).loss(sensitivity).epsilon


def gaussian_rho(sensitivity: float, scale: float) -> float:
    """rho (zero-concentrated DP) of the Gaussian mechanism at an L2 sensitivity, from OpenDP's privacy map.

    ``rho = sensitivity^2 / (2 sigma^2)`` (Bun and Steinke 2016, Prop. 1.6), rounded outward by OpenDP.
    """
    return Gaussian(float(scale)).loss(sensitivity).rho


LAWS: dict[str, type[Laplace | Gaussian]] = {"laplace": Laplace, "gaussian": Gaussian}


def mechanism(kind: str, scale: float, *, discrete: bool = False) -> Laplace | Gaussian:
    """The mechanism named ``laplace`` or ``gaussian`` at ``scale``."""
    if kind not in LAWS:
        raise ValueError(f"unknown mechanism {kind!r} (laplace or gaussian)")
    return LAWS[kind](float(scale), discrete)


def calibrate(kind: str, sensitivity: float, target: float, *, discrete: bool = False) -> Laplace | Gaussian:
    """The mechanism of the smallest scale whose OpenDP map gives at most ``target`` at ``sensitivity``.

    ``target`` is epsilon for ``laplace`` and rho for ``gaussian``. One OpenDP ``binary_search_param`` over the
    very measurement whose map states the loss, so ``calibrate(...).loss(sensitivity)`` never exceeds ``target``.
    """
    if not (target > 0 and math.isfinite(target)):
        raise ValueError(f"the target loss must be finite and > 0, got {target}")
    if not (sensitivity > 0 and math.isfinite(sensitivity)):
        raise ValueError(f"the sensitivity must be finite and > 0, got {sensitivity}")
    law = mechanism(kind, 1.0, discrete=discrete)
    scale = dp.binary_search_param(
        lambda s: replace(law, scale=s).measurement(), d_in=_d_in(discrete, sensitivity), d_out=float(target)
    )
    return replace(law, scale=float(scale))


def smallest_scale(cost: Callable[[float], float], target: float, guess: float) -> float:
    """The smallest noise scale whose ``cost`` (an OpenDP privacy map at that scale, decreasing in it) is at most
    ``target``: OpenDP's ``binary_search`` between ``guess / 2`` and ``2 guess``.

    For costs that are not one measurement's map (a sum of top-K per-HAT maps over several queries, a threshold's
    epsilon at a fixed threshold): ``guess`` is the analytic scale, which OpenDP's outward rounding misses by ulps.
    """
    if not (target > 0 and math.isfinite(target)) or not (guess > 0 and math.isfinite(guess)):
        raise ValueError(f"the target loss and the guess must be finite and > 0, got {target} and {guess}")
    return float(dp.binary_search(lambda s: cost(s) <= target, bounds=(guess / 2.0, guess * 2.0), T=float))


def laplace_scale(sensitivity: float, epsilon: float) -> float:
    """Smallest Laplace scale ``b`` whose OpenDP privacy map gives at most ``epsilon`` at ``sensitivity``
    (:func:`calibrate`, OpenDP's ``binary_search_param``)."""
    if epsilon <= 0 or not np.isfinite(epsilon):
        raise ValueError(f"epsilon must be finite and > 0, got {epsilon}")
    return calibrate("laplace", float(sensitivity), float(epsilon)).scale

"""The bounded Laplace mechanism (Holohan, Antonatos, Braghin, Mac Aonghusa 2018/2020), as used on sigma_p^2.

Fleet-sensing paper section VI-A adds ``Lap(Delta / epsilon)`` to each cell's posterior variance and re-draws
samples outside ``[l, u]``. The normaliser ``C_x(b)`` (the mass of ``Lap(x, b)`` inside ``[l, u]``) depends on the
input, so the worst log density ratio is ``epsilon_actual(b) = Delta / b + log(C_{l+Delta}(b) / C_l(b))``
(Holohan et al., Lemma 3 / Theorem 5): **the paper's mechanism is not epsilon-DP as written** whenever
``Delta < u - l``. :func:`holohan_scale` finds the smallest ``b`` with ``epsilon_actual(b) <= epsilon``, the
default calibration; the derivation and the pinned figures are in docs/sensing.md, section "DP variance maps".

Sampling draws every Laplace variate from OpenDP (floating-point safe) and re-draws the out-of-bound ones until all
are inside ``[l, u]``. The default (Holohan) mechanism draws on the lattice ``h Z`` with ``h = 2^-40``
(:data:`LATTICE_EXPONENT`, OpenDP ``make_laplace(..., k=-40)``): inputs are rounded to the lattice inside
``[l, u]`` and the noise is discrete Laplace on it, about 3x faster per draw than OpenDP's finest granularity
(measured 7 us against 20 us). The lattice costs a provable slack, accounted by :func:`lattice_epsilon`: inputs
move by at most ``h`` (sensitivity ``Delta + h``), and the lattice normaliser ``Z(x)`` differs from the continuous
``2 b C_x(b) / h`` by at most 2 (two monotone Riemann sums of a function bounded by 1), so
``Z(x') / Z(x) <= (b C_x' + h) / (b C_x - h)``. At ``h = 2^-40`` the slack is about 1e-12 in epsilon.
"""

from __future__ import annotations

import functools
import math
from dataclasses import asdict, dataclass

import numpy as np

from urbandp._privacy.loss import Loss
from urbandp._privacy.noise import NoiseSource

CALIBRATIONS = ("holohan", "paper")
LATTICE_EXPONENT = -40
"""Noise granularity ``h = 2^LATTICE_EXPONENT`` of the Holohan mechanism's draws (see the module docstring)."""
MIN_ACCEPTANCE = 1e-3  # below this the output is within exp(1/500) of uniform on [l, u]: refused (see below)


def acceptance_min(b: float, lower: float, upper: float) -> float:
    """Smallest chance that one Laplace draw lands in ``[lower, upper]`` (input at a bound): ``C_l(b)``.

    The rejection sampler needs ``1 / C_x(b)`` draws per value on average. When ``b`` is hundreds of times
    the domain width, ``C_l(b) ~ (u - l) / (2 b)`` is tiny and the output is nearly uniform whatever the input
    (densities of any two inputs differ by at most a factor ``exp((u - l) / b)``): noise that says nothing,
    at the price of thousands of draws per value.
    """
    return float(inside_mass(lower, b, lower, upper))


def check_meaningful(epsilon: float, sensitivity: float, lower: float, upper: float) -> None:
    """Refuse (``ValueError``) an epsilon whose bounded Laplace would be practically uniform noise.

    Any calibration has ``b >= min(Delta, u - l) / epsilon`` and the acceptance ``C_l(b)`` falls as ``b`` grows,
    so ``C_l`` at that floor bounds the acceptance from above: checked without running the calibration (whose
    bisection loses all precision for tiny epsilons).
    """
    b_floor = min(float(sensitivity), float(upper - lower)) / epsilon
    acc = acceptance_min(b_floor, lower, upper) if math.isfinite(b_floor) else 0.0
    if not acc >= MIN_ACCEPTANCE:
        raise ValueError(
            f"epsilon {epsilon:.3g} needs a bounded Laplace scale of at least {b_floor:.3g} on [{lower:g}, "
            f"{upper:g}]: at most one draw in {1 / max(acc, 1e-300):.3g} lands in the domain and the output is "
            "practically uniform noise (no information)"
        )


def inside_mass(x: float | np.ndarray, b: float, lower: float, upper: float) -> np.ndarray:
    """C_x(b): probability that Lap(x, b) falls in [lower, upper] (for x inside the interval)."""
    x = np.asarray(x, dtype=float)
    return 1.0 - 0.5 * (np.exp(-(x - lower) / b) + np.exp(-(upper - x) / b))


def expected_squared_error(x: np.ndarray, b: float, lower: float, upper: float) -> np.ndarray:
    """E[(Y - x)^2] for Y from the bounded Laplace centred at ``x`` (closed form, no sampling).

    With ``g(a) = int_0^a t^2 exp(-t/b) dt = b^3 (2 - exp(-a/b) ((a/b)^2 + 2 a/b + 2))`` the second moment is
    ``(g(x - l) + g(u - x)) / (2 b C_x(b))``. Used for the utility curve (Fig. 6) instead of sampled noise.
    """
    x = np.clip(np.asarray(x, dtype=float), lower, upper)

    def g(a: np.ndarray) -> np.ndarray:
        t = a / b
        return b**3 * (2.0 - np.exp(-t) * (t * t + 2.0 * t + 2.0))

    return (g(x - lower) + g(upper - x)) / (2.0 * b * inside_mass(x, b, lower, upper))


def actual_epsilon(scale: float, sensitivity: float, lower: float, upper: float) -> float:
    """Worst-case privacy loss of the rejection-sampled bounded Laplace with scale ``b`` (Holohan et al. Lemma 3)."""
    if scale <= 0:
        return math.inf
    d = min(float(sensitivity), float(upper - lower))
    ratio = float(inside_mass(lower + d, scale, lower, upper) / inside_mass(lower, scale, lower, upper))
    return d / scale + math.log(ratio)


def lattice_epsilon(
    scale: float, sensitivity: float, lower: float, upper: float, lattice: float = 0.0
) -> float:
    """Worst-case loss of the bounded Laplace drawn on the lattice ``lattice * Z`` (0: continuous, Lemma 3 exactly).

    ``actual_epsilon(b, Delta + h) + log(1 + h / (b C_l)) - log(1 - h / (b C_l))``: the rounded inputs are at most
    ``Delta + h`` apart, and the lattice normalisers differ from the continuous ones by the Riemann-sum bound in the
    module docstring (``C_l``, the mass at a bound, is the smallest ``C_x``).
    """
    if lattice == 0.0:
        return actual_epsilon(scale, sensitivity, lower, upper)
    if scale <= 0:
        return math.inf
    denominator = scale * float(inside_mass(lower, scale, lower, upper))
    slack = lattice / denominator if denominator > 0 else math.inf
    if slack >= 1.0:
        return math.inf
    base = actual_epsilon(scale, sensitivity + lattice, lower, upper)
    return base + math.log1p(slack) - math.log1p(-slack)


def holohan_scale(
    epsilon: float,
    sensitivity: float,
    lower: float,
    upper: float,
    lattice: float = 0.0,
) -> float:
    """Smallest scale ``b`` with ``lattice_epsilon(b) <= epsilon`` (bisection to a relative 1e-12; returns the
    feasible end), for the parameters :class:`BoundedLaplace` has checked."""

    def loss(b: float) -> float:
        return lattice_epsilon(b, sensitivity, lower, upper, lattice)

    lo = min(float(sensitivity), float(upper - lower)) / epsilon  # loss(lo) >= epsilon
    if loss(lo) <= epsilon:
        return lo
    hi = 2.0 * lo
    while loss(hi) > epsilon:
        lo, hi = hi, 2.0 * hi
    while hi - lo > 1e-12 * hi:
        mid = 0.5 * (lo + hi)
        if loss(mid) > epsilon:
            lo = mid
        else:
            hi = mid
    return hi


@dataclass(frozen=True)
class BoundedLaplace:
    """Bounded Laplace on values in ``[lower, upper]`` with L1 sensitivity ``sensitivity`` per value.

    ``calibration="holohan"`` (default) is epsilon-DP per value, drawn on the lattice ``2^lattice_exponent Z``;
    ``calibration="paper"`` uses ``b = Delta/epsilon`` as in the fleet-sensing paper (section VI-A) with continuous draws, and is NOT
    epsilon-DP when ``sensitivity < upper - lower``: its true loss is :attr:`epsilon_actual`.
    """

    epsilon: float
    sensitivity: float
    lower: float
    upper: float
    calibration: str = "holohan"
    lattice_exponent: int = LATTICE_EXPONENT

    def __post_init__(self) -> None:
        if self.calibration not in CALIBRATIONS:
            raise ValueError(f"calibration must be one of {CALIBRATIONS}, got {self.calibration!r}")
        if not (self.epsilon > 0 and math.isfinite(self.epsilon)):
            raise ValueError(f"epsilon must be finite and > 0, got {self.epsilon}")
        if not (self.sensitivity > 0 and self.upper > self.lower):
            raise ValueError("need sensitivity > 0 and upper > lower")

    @property
    def lattice(self) -> float:
        """Spacing ``h`` of the noise lattice (0.0: continuous draws)."""
        return 0.0 if self.calibration == "paper" else math.ldexp(1.0, self.lattice_exponent)

    @functools.cached_property
    def scale(self) -> float:
        if self.calibration == "paper":
            return self.sensitivity / self.epsilon
        return holohan_scale(self.epsilon, self.sensitivity, self.lower, self.upper, lattice=self.lattice)

    @property
    def epsilon_actual(self) -> float:
        """The mechanism's real per-value epsilon (equal to ``epsilon`` up to rounding for ``holohan``)."""
        return lattice_epsilon(self.scale, self.sensitivity, self.lower, self.upper, self.lattice)

    # --- the Mechanism protocol (urbandp._privacy.mechanisms) ---

    @property
    def name(self) -> str:
        return "bounded_laplace"

    def loss(self, sensitivity: float) -> Loss:
        """Pure epsilon per value at ``sensitivity`` (on the lattice, Holohan et al. 2018, Thm 4.5 with the
        lattice slack); the paper's calibration states its actual loss, not its nominal one."""
        return Loss.pure(lattice_epsilon(self.scale, sensitivity, self.lower, self.upper, self.lattice))

    @property
    def std(self) -> float:
        """At most the unbounded Laplace's sqrt(2) b: truncation to [lower, upper] only narrows the law."""
        return math.sqrt(2.0) * self.scale

    def half_width(self, level: float = 0.95) -> float:
        """At most the unbounded Laplace's ``b ln(1 / (1 - level))``, and never more than the domain's width."""
        return min(self.scale * math.log(1.0 / (1.0 - level)), self.upper - self.lower)

    def draw(self, values: np.ndarray, noise: NoiseSource) -> np.ndarray:
        return self.release(values, noise)

    def describe(self) -> dict[str, object]:
        """What the mechanism costs, before it runs (OpenDP-style map)."""
        return {
            **asdict(self),
            "mechanism": self.name,
            "sampling": "bounded-laplace (rejection sampling, OpenDP Laplace draws)",
            "scale": self.scale,
            "epsilon_actual": self.epsilon_actual,
            "differentially_private_at_epsilon": self.epsilon_actual <= self.epsilon * (1 + 1e-9),
        }

    def release(self, values: np.ndarray, noise: NoiseSource, max_rounds: int | None = None) -> np.ndarray:
        """Noisy values in ``[lower, upper]``: inputs are clamped to the domain, out-of-bound draws re-drawn.

        ``max_rounds`` defaults to ``80 / C_l(b)`` rounds, after which a value is still pending with probability
        ``(1 - C_l)^(80/C_l) < exp(-80)``; scales whose acceptance is below :data:`MIN_ACCEPTANCE` are refused
        by the callers before any draw (:func:`acceptance_min`).
        """
        if max_rounds is None:
            max_rounds = math.ceil(80.0 / max(acceptance_min(self.scale, self.lower, self.upper), 1e-12))
        x = np.clip(np.asarray(values, dtype=float), self.lower, self.upper)
        h = self.lattice
        on_lattice = getattr(noise, "laplace_on_lattice", None) if h else None
        if on_lattice is not None:  # round the inputs to the lattice inside [lower, upper] (exact: h = 2^k)
            lo, hi = math.ceil(self.lower / h) * h, math.floor(self.upper / h) * h
            x = np.clip(np.round(x / h) * h, lo, hi)
        out = np.empty_like(x)
        pending = np.arange(x.size)
        flat = x.ravel()
        res = out.ravel()
        b = self.scale
        for _ in range(max_rounds):
            if pending.size == 0:
                return res.reshape(x.shape)
            if on_lattice is not None:
                draw = on_lattice(flat[pending], b, self.lattice_exponent)
            else:  # a noise source without lattice draws: continuous noise, whose loss the lattice bound covers
                draw = noise.laplace(flat[pending], b)
            ok = (draw >= self.lower) & (draw <= self.upper)
            res[pending[ok]] = draw[ok]
            pending = pending[~ok]
        raise RuntimeError(
            f"bounded Laplace: {pending.size} values still out of bounds after {max_rounds} rounds"
        )

"""SSD trajectory perturbation ("Sampling distance and direction", Jiang et al. 2013) as in report section 6.1, eq. 16.

For a trip (x_0, y_0), ..., (x_{n+1}, y_{n+1}) in metres, with every step assumed at most ``M`` metres: the start
and the end are published unchanged; for i = 1..n the vector v_i from the previous *perturbed* point to the true
point i has length r_i (clipped to [0, M]) and angle theta_i in [0, 2 pi); a length rho_i in [0, M] with density
proportional to exp(-epsilon |rho - r_i| / (8 M)) and an angle alpha_i in [0, 2 pi] with density proportional to
exp(-epsilon |alpha - theta_i| / (8 pi)) are drawn, and the perturbed point is the previous one moved by rho_i in
direction alpha_i. A draw is repeated while the perturbed point is too far from the end to reach it in the
remaining steps (distance >= (n + 1 - i) M); after 100 tries the point steps straight toward the end.

Draws: each truncated Laplace is an OpenDP continuous Laplace draw centred on the true value, rejected until it
falls in the interval (rejection from the untruncated law gives exactly the truncated law).

Privacy (computed by :func:`ssd_epsilon`, not the report's ``epsilon``, which is a per-step parameter): changing
r_i within [0, M] moves the length exponent by at most epsilon / 8 and the truncated normaliser by at most the same
factor, so the length costs epsilon / 4; the angle's exponent moves by at most 2 pi * epsilon / (8 pi) = epsilon / 4
and with its normaliser costs epsilon / 2. One perturbed point costs 3 epsilon / 4 and a trip with n interior
points n * 3 epsilon / 4 by sequential composition. NOT DP as a whole: the exact start and end points are
published, and the reachability loop depends on the true end point (unaccounted leakage).
Privacy unit: the trip.
"""

from __future__ import annotations

import math

import numpy as np

import urbandp._privacy.dp_prelude as dp

dp.enable_features("contrib")

MAX_TRIES = 100
MAX_DRAWS_PER_POINT = 25_000
"""Work bound: the most OpenDP Laplace draws one perturbed point may need in expectation, in the worst
case (all :data:`MAX_TRIES` tries, centres on the intervals' edges). The work grows as 1 / epsilon (about 2,400 /
epsilon draws, ~30 us each on the shared machine); the bound admits epsilon >= :func:`min_epsilon` (about 0.1,
where the angle's Laplace scale 8 pi / epsilon is 250 rad: the direction is already uniform). It reads epsilon
only, never the data."""


def acceptance(epsilon: float) -> tuple[float, float]:
    """The worst acceptance of the length and of the angle truncated Laplace laws (centre on an interval edge).

    ``C = (1 - exp(-w / b)) / 2`` with ``w / b = epsilon / 8`` for the length and ``epsilon / 4`` for the angle.
    """
    return 0.5 * -math.expm1(-epsilon / 8.0), 0.5 * -math.expm1(-epsilon / 4.0)


def draws_per_point(epsilon: float) -> float:
    """Expected Laplace draws of one point in the worst case: MAX_TRIES x (1 / C_length + 1 / C_angle)."""
    length, angle = acceptance(epsilon)
    return MAX_TRIES * (1.0 / length + 1.0 / angle) if length > 0 else math.inf


def min_epsilon() -> float:
    """The smallest epsilon whose :func:`draws_per_point` is within :data:`MAX_DRAWS_PER_POINT` (bisection)."""
    low, high = 1e-6, 10.0
    for _ in range(60):
        mid = math.sqrt(low * high)
        low, high = (low, mid) if draws_per_point(mid) <= MAX_DRAWS_PER_POINT else (mid, high)
    return high


def check_work(epsilon: float) -> None:
    """Refuse, before reading the data, an epsilon whose SSD draws would exceed the work bound."""
    if not draws_per_point(epsilon) <= MAX_DRAWS_PER_POINT:
        from urbandp.errors import InvalidParameterError

        raise InvalidParameterError(
            f"epsilon {epsilon:g} makes the SSD draws practically uniform (no information left) and needs up to "
            f"{draws_per_point(epsilon):,.0f} Laplace draws per point (limit {MAX_DRAWS_PER_POINT:,}); use "
            f"epsilon {math.ceil(min_epsilon() * 1000) / 1000:g} or more",
            parameters="epsilon",
        )


def ssd_epsilon(epsilon: float, interior_points: int) -> dict[str, float]:
    """What SSD with parameter ``epsilon`` costs per point and per trip (see module docstring)."""
    per_point = epsilon / 4.0 + epsilon / 2.0
    return {"per_point": per_point, "per_trip": per_point * interior_points}


class _TruncatedLaplace:
    """Exact truncated Laplace on [low, high] by rejection from OpenDP Laplace draws (batched)."""

    def __init__(self, scale: float, batch: int = 16) -> None:
        self.m = dp.m.make_laplace(
            dp.vector_domain(dp.atom_domain(T=float, nan=False)), dp.l1_distance(T=float), scale
        )
        self.batch = batch

    def draw(self, centre: float, low: float, high: float) -> float:
        while True:
            for v in self.m([centre] * self.batch):
                if low <= v <= high:
                    return float(v)


def perturb_trip(xy: np.ndarray, epsilon: float, max_step: float) -> np.ndarray:
    """SSD on one trip given as an (n + 2, 2) array in metres; returns the perturbed array (same shape)."""
    xy = np.asarray(xy, dtype=float)
    out = xy.copy()
    n = xy.shape[0] - 2
    if n <= 0:
        return out
    rho_law = _TruncatedLaplace(8.0 * max_step / epsilon)
    alpha_law = _TruncatedLaplace(8.0 * math.pi / epsilon)
    end = xy[-1]
    for i in range(1, n + 1):
        prev = out[i - 1]
        v = xy[i] - prev
        r = min(float(np.hypot(*v)), max_step)
        theta = float(math.atan2(v[1], v[0])) % (2.0 * math.pi)
        reach = (n + 1 - i) * max_step
        for _ in range(MAX_TRIES):
            rho = rho_law.draw(r, 0.0, max_step)
            alpha = alpha_law.draw(theta, 0.0, 2.0 * math.pi)
            cand = prev + rho * np.array([math.cos(alpha), math.sin(alpha)])
            if np.hypot(*(cand - end)) < reach:
                break
        else:
            d = end - prev
            dist = float(np.hypot(*d))
            cand = prev + (d / dist) * min(max_step, dist) if dist > 0 else prev
        out[i] = cand
    return out

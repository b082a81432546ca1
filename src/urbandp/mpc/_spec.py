"""What both parties agree on in the clear: the query function, the rectangle size and the server's public
parameters (paper VII-A step 2: only the function and the rectangle travel in the clear), the noise the
server must draw for it (section VII-D, per reading), and the options of ``urbandp mpc serve``, ``query`` and
``routes``.

No SPU import here: the sensitivities are plain arithmetic shared with :mod:`urbandp.sensing._queries`.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from urbandp._privacy.mechanisms import laplace_epsilon, laplace_scale
from urbandp._privacy.noise import NoiseSource
from urbandp._release_options import ReleaseOptions, option
from urbandp.errors import InvalidParameterError
from urbandp.sensing._options import Box, QueryOptions, sharpness
from urbandp.sensing._queries import QUERY_TYPES, error2_range

FUNCTIONS = QUERY_TYPES  # the plaintext reference's queries, each computed in the secure program
FXP_FRACTION_BITS = 18  # SPU FM64 fixed point: the lattice of every secret value is 2^-18
MAX_CELLS = 500  # n^2 must stay below 2^18: SPU silently returns 0 when dividing by a larger secret
SIGMOID_CLIP = 12.0  # exp/sigmoid inputs are clipped to +-12 (SPU's approximations hold there)
# The computed E^2 is clamped to its public range BEFORE noise; the lattice sensitivity adds a slack for the
# fixed-point evaluation of that range (a division by the secret n): relative 2^-10 plus 8 lattice steps.
SLACK_RELATIVE = 2.0**-10
SLACK_UNITS = 8


@dataclass(frozen=True)
class QuerySpec:
    """One query's public description; both parties compile the same SPU program from it."""

    function: str
    n_rect: int
    alpha: int
    rho: float
    steepness: float
    sigma2_min: float
    sigma2_max: float

    def __post_init__(self) -> None:
        if self.function not in FUNCTIONS:
            raise ValueError(f"function must be one of {', '.join(FUNCTIONS)}, got {self.function!r}")
        if not 1 <= self.n_rect <= MAX_CELLS:
            raise ValueError(f"the rectangle must hold 1..{MAX_CELLS} cells, it holds {self.n_rect}")
        if self.alpha < 1 or not self.rho > 0 or not self.steepness > 0:
            raise ValueError("need alpha >= 1, rho > 0 and steepness > 0")
        if not 0 <= self.sigma2_min < self.sigma2_max:
            raise ValueError("need 0 <= sigma2_min < sigma2_max")

    @classmethod
    def of(cls, function: str, n_rect: int, public: dict[str, Any]) -> QuerySpec:
        """The query over ``n_rect`` cells under the server's public parameters, as a client is told them: both
        parties compile from the same figures."""
        p = public
        figures = (p["rho"], p["steepness"], p["sigma2_min"], p["sigma2_max"])
        return cls(function, n_rect, int(p["alpha"]), *(float(x) for x in figures))

    def worst_sensitivity(self) -> float:
        """Per-reading sensitivity of ``E^2`` for any client selection: the server does not know ``n = sum v``,
        so it takes the worst case over ``alpha <= n <= n_rect`` (queries below alpha release only zeros)."""
        widths = []
        for n in {min(self.alpha, self.n_rect), self.n_rect}:
            lo, hi = error2_range(self.function, n, self.sigma2_min, self.sigma2_max, self.steepness)
            widths.append(hi - lo)
        return max(widths)

    def lattice_sensitivity(self) -> int:
        """The sensitivity in lattice units (2^-18) of the clamped fixed-point ``E^2``."""
        return math.ceil(self.worst_sensitivity() * 2**FXP_FRACTION_BITS * (1 + SLACK_RELATIVE)) + SLACK_UNITS

    def lattice_scale(self, epsilon: float) -> float:
        """The discrete Laplace scale, in lattice units, of the noise at ``epsilon`` per query (OpenDP's map)."""
        return laplace_scale(float(self.lattice_sensitivity()), epsilon)


def draw_noise(spec: QuerySpec, epsilon: float, noise: NoiseSource) -> tuple[float, float]:
    """Discrete Laplace on the fixed-point lattice (OpenDP, floating-point safe): ``(noise value, epsilon)``.

    The noisy ``E^2`` is ``E^2 + noise`` computed exactly on the lattice, i.e. the discrete Laplace mechanism on
    the integer representation; the epsilon reported comes from OpenDP's privacy map.
    """
    scale = spec.lattice_scale(epsilon)
    units = int(noise.discrete_laplace(np.array([0], dtype=np.int64), scale)[0])
    if abs(units) >= 2**52:
        units = int(math.copysign(2**52 - 1, units))  # far beyond the clamp anyway (post-processing)
    return units * 2.0**-FXP_FRACTION_BITS, laplace_epsilon(float(spec.lattice_sensitivity()), scale)


MAX_TIMEOUT_S = 86_400.0
"""Longest wait for a client, in seconds (a day): 0 or less would fail every query at once."""


class ServeOptions(ReleaseOptions):
    """The options of ``urbandp mpc serve`` (:mod:`urbandp._release_options`): the server answers private queries
    over one window of an interpolated grid (privacy unit: one reading; the noise per query, section VII-D)."""

    grid: Path = option(help="grid.csv written by `urbandp sensing interpolate`.")
    sigma2_max: float = option(help="Public upper bound of cell variances (sigma2 clamped).", gt=0)
    listen: str = option("127.0.0.1:7700", help="HOST:PORT for clients.")
    window: str | None = option(None, help="Window start as in grid.csv (default: the first).")
    alpha: int = option(5, help="Answer only queries over >= alpha cells (eq. 10).", ge=1)
    epsilon: float = option(0.5, help="Epsilon per query for the noisy squared error.", gt=0)
    epsilon_budget: float = option(5.0, help="Total epsilon per client; queries beyond are refused.", gt=0)
    sigma2_min: float = option(
        QueryOptions.model_fields["sigma2_min"].default,
        help="Public lower bound of cell variances (sigma2 clamped; as sensing query).",
        ge=0,
    )
    rho: float = sharpness("LogSumExp sharpness |rho| for min/max (public).")
    steepness: float = sharpness("Sigmoid steepness k for count/range (public).")
    timeout: float = option(
        60.0, help="Seconds to wait for the client during a query.", gt=0, le=MAX_TIMEOUT_S
    )
    max_clients: int | None = option(
        None, help="Stop after this many connections, for tests (default: serve for ever).", ge=1
    )
    dataset: str | None = option(
        None,
        help="Budget-store dataset (unit reading) each client's queries are booked to; the per-client "
        "budget is read back from it, so it survives restarts (default: mpc:<grid>:<window>, declared with "
        "epsilon 100 per reading per day).",
    )

    def model_post_init(self, context: Any, /) -> None:
        if self.epsilon_budget < self.epsilon:
            raise InvalidParameterError(
                f"epsilon_budget must be at least epsilon (one query), got {self.epsilon_budget:g} < "
                f"{self.epsilon:g}",
                parameters=("epsilon_budget", "epsilon"),
            )
        if not self.sigma2_min < self.sigma2_max:
            raise InvalidParameterError(
                f"sigma2_min must be below sigma2_max, got {self.sigma2_min:g} and {self.sigma2_max:g}",
                parameters=("sigma2_min", "sigma2_max"),
            )


class ClientOptions(ReleaseOptions):
    """Where and how long a client (``urbandp mpc query`` and ``routes``) reaches ``urbandp mpc serve``."""

    server: str = option("127.0.0.1:7700", help="HOST:PORT of `urbandp mpc serve`.")
    client_id: str | None = option(
        None, help="Name the server keys the budget on (default: the client's IP address)."
    )
    timeout: float = option(60.0, help="Seconds to wait for the server.", gt=0, le=MAX_TIMEOUT_S)


class PrivateQuery(ReleaseOptions):
    """One private query (paper VII-A): the function and the obfuscation rectangle, sent in the clear, and the
    client's secret thresholds; checked before the client talks to a server."""

    rect: Box = option(
        help="Obfuscation rectangle LAT1,LON1,LAT2,LON2, sent in the clear; it holds every cell of interest.",
        cli_type=str,
    )
    function: str = option(
        "average", help="average|min|max|min-exact|max-exact|count|range.", choices=FUNCTIONS
    )
    theta: float | None = option(
        None,
        help="count: T; range: T1,T2, secret inputs (default: none; required for count and range).",
        cli_type=str | None,
    )
    theta2: float | None = option(
        None, help="range: the upper threshold T2 (the command line gives it as --theta T1,T2)."
    )

    def model_post_init(self, context: Any, /) -> None:
        if not all(math.isfinite(x) for x in self.rect):
            raise InvalidParameterError(
                f"rect must hold finite numbers, got {self.rect!r}", parameters="rect"
            )
        if self.function in ("count", "range") and self.theta is None:
            raise InvalidParameterError(f"{self.function} needs theta", parameters="theta")
        if self.function == "range" and (self.theta2 is None or not self.theta < self.theta2):  # type: ignore[operator]
            raise InvalidParameterError("range needs theta T1,T2 with T1 < T2", parameters="theta")

"""The release guards: one limit table and one function per guard, for every wing and every entry point.

Each guard is called from the library's release path, never from a command alone, so that the CLI, a notebook,
a scheduler and the Spark engine pass the same checks: :func:`check_delta` (each wing's spec and
``ReleaseCharge.reserve``), :func:`meaningless_reasons` (``ReleaseCharge.reserve``), :func:`noise_reasons` and
:func:`refuse_not_dp` (``ReleaseCharge.refuse_not_dp`` and ``ReleaseCharge.reserve``). docs/privacy-core.md,
section "The guards: what is refused, where, and why", has the table of what each refuses and why. The limits
are the same for every wing: there is one :data:`SANE_EPSILON`.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import TYPE_CHECKING

from urbandp.errors import Advice, InvalidParameterError

if TYPE_CHECKING:
    from urbandp._privacy.loss import Loss

SANE_EPSILON = 100.0
"""Epsilon per privacy unit (per day for per-day units) above which a release protects nobody (e^100 ~ 1e43)."""
SANE_RHO = 50.0
"""rho per unit per day above which a zCDP release protects nobody (epsilon > 50 at any delta)."""
MAX_DELTA = 1e-5
"""Largest delta accepted: a delta is the chance that the guarantee fails outright, per unit."""
ALLOW_PARAMETER = "allow_meaningless_epsilon"
"""The parameter that turns a meaningless-loss refusal into a NOT DP label (a refusal names it; the CLI its flag)."""


def check_delta(delta: float, option: str) -> None:
    """Refuse a delta above :data:`MAX_DELTA`.

    ``option`` names the delta: a parameter's Python name (``delta``), listed in the error's ``parameters`` so that
    the CLI shows its flag, or a description (``delta (per unit and day)``), shown as it is.
    """
    named = (option,) if option.isidentifier() else ()
    if not isinstance(delta, (int, float)) or math.isnan(delta) or delta < 0:
        raise InvalidParameterError(f"{option} must be a number >= 0, got {delta!r}", parameters=named)
    if delta > MAX_DELTA:
        raise InvalidParameterError(
            f"{option} {delta:g} is above {MAX_DELTA:g} (it is the chance that the guarantee fails outright for a "
            "unit); use 1e-6 or smaller",
            parameters=named,
        )


def meaningless_reasons(loss: Loss, conversion_delta: float | None, *, per: str, allow: bool) -> list[str]:
    """Refuse a loss per unit that protects nobody; with ``allow`` (``--allow-meaningless-epsilon``) return the
    reasons instead, for the release to carry as ``not_dp_reasons`` (labelled NOT differentially private).

    Limits: epsilon above :data:`SANE_EPSILON` or rho above :data:`SANE_RHO` per ``per`` (a unit, or a unit-day
    for per-day units); a loss whose conversion overflows is refused the same way.
    """
    reasons: list[str] = []
    eps, _, why = loss.approx(conversion_delta)
    if loss.rho > SANE_RHO:
        reasons.append(f"rho {loss.rho:.3g} per {per} is above {SANE_RHO:g}")
    if eps is None:
        reasons.append(f"the privacy loss per {per} cannot be stated ({why})")
    elif eps > SANE_EPSILON:
        reasons.append(f"epsilon {eps:.3g} per {per} is above {SANE_EPSILON:g}")
    if reasons and not allow:
        raise InvalidParameterError(
            f"{'; '.join(reasons)}: the noise would protect nobody, yet the release would be labelled DP; lower "
            f"the loss, or give {ALLOW_PARAMETER} to run it labelled NOT differentially private",
            parameters=ALLOW_PARAMETER,
        )
    # privacy.json's not_dp_reasons name the parameter; the command line shows its flag
    return [
        Advice(f"{r} ({ALLOW_PARAMETER}): no meaningful protection", parameters=ALLOW_PARAMETER)
        for r in reasons
    ]


NOT_PRIVATE_NOISE = (
    "the noise source does not declare itself private (is_private = True), as ExactNoiseForTesting, which adds "
    "no noise: the outputs are not protected"
)
"""The NOT DP reason of a release drawn from a noise source that does not declare itself private."""


def noise_reasons(source: object) -> list[str]:
    """The NOT DP reasons a noise ``source`` gives a release: none for a source that declares ``is_private = True``
    (OpenDP's samplers, :class:`urbandp._privacy.noise.OpenDPNoise`), else :data:`NOT_PRIVATE_NOISE`.

    Only the declaration counts (``True`` itself, not a truthy value): a source that adds no noise
    (:class:`~urbandp._privacy.noise.ExactNoiseForTesting`) or draws from a seeded simulation generator gives a
    release no guarantee (Dwork and Roth 2014, Def. 2.4 needs the mechanism's randomness), whatever its parameters.
    """
    return [] if getattr(source, "is_private", False) is True else [NOT_PRIVATE_NOISE]


def refuse_not_dp(dataset: str | None, reasons: Sequence[str]) -> None:
    """With a budget ``dataset``, refuse a release labelled NOT DP: it cannot be booked as DP spend."""
    if dataset is not None and reasons:
        raise InvalidParameterError(
            f"dataset: this release is NOT differentially private ({'; '.join(reasons)}); it cannot be "
            "charged to a budget as DP spend",
            parameters=("dataset", *(p for r in reasons for p in getattr(r, "parameters", ()))),
        )

"""Typed configuration of a HAT release (ITMS report sections II-IV), loadable from TOML; CLI flags override.

Neighbouring relations (DESIGN.md rule 2, made explicit here and in privacy.json):

``replace-one`` (the ITMS report): two datasets are neighbours if one vehicle-day's *records* in a HAT differ; which
vehicles are present in which HAT on which day is public, so N (vehicle-days per HAT) is public and Query 1's
sensitivity is (U - L) / N. ``add-remove`` (default): a whole vehicle-day may be present or absent, so N itself is
protected; Query 1 releases a noisy sum (sensitivity U - L) divided by a noisy count, and HAT selection must be DP.
"""

from __future__ import annotations

import datetime as dt
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from urbandp.errors import InputError

Selection = Literal["dp", "public-threshold"]
Neighbouring = Literal["add-remove", "replace-one"]
SpeedEstimator = Literal["report", "baseline", "array-averaging", "levy", "quantile", "clipped-mean"]


class HatReleaseConfig(BaseModel):
    """All parameters of ``urbandp release`` (frozen; validated on construction)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    resolution: int = Field(7, ge=0, le=15)
    slot_minutes: int = 60
    hours: tuple[int, int] = (9, 21)
    start: dt.date | None = None
    end: dt.date | None = None
    speed_max: float = Field(65.0, gt=0, description="U: speeds are clipped to [0, U] for Query 1 (km/h)")
    speed_limit: float = Field(35.0, gt=0, description="Query 2 threshold (km/h)")
    noise_scale: float | None = Field(None, gt=0, description="Laplace scale B shared by both queries")
    epsilon_per_day: float | None = Field(
        None, gt=0, description="cumulative epsilon per vehicle-day to spend"
    )
    speed_share: float | None = Field(
        None,
        gt=0,
        lt=1,
        description="share of the query budget for Query 1; default: report's shared B under replace-one, 0.5 under add-remove",
    )
    budget_per_day: float | None = Field(
        None, gt=0, description="refuse a release whose cumulative epsilon per day exceeds this"
    )
    selection: Selection = "dp"
    selection_epsilon: float = Field(
        1.0, gt=0, description="epsilon per day for DP selection when B is given"
    )
    selection_fraction: float = Field(
        0.1, gt=0, lt=1, description="share of epsilon_per_day for DP selection"
    )
    domain_bbox: tuple[float, float, float, float] | None = Field(
        None,
        description="public extent (min_lat, min_lon, max_lat, max_lon): DP selection over all its HATs, no delta",
    )
    delta: float = Field(1e-6, gt=0, lt=1, description="target delta per vehicle-day of DP selection")
    min_vehicles_per_day: float = Field(10.0, ge=0)
    max_hats_per_vehicle_day: int | Literal["observed"] = Field(
        96,
        description="K: public bound enforced by truncation; 'observed' reads K from the data (report, not DP)",
    )
    neighbouring: Neighbouring = "add-remove"
    speed_estimator: SpeedEstimator = "report"
    precision: int = Field(2, ge=0, le=10)

    @model_validator(mode="after")
    def _one_of_scale_or_epsilon(self) -> HatReleaseConfig:
        if (self.noise_scale is None) == (self.epsilon_per_day is None):
            raise ValueError(
                "give exactly one of noise_scale (--noise-scale) or epsilon_per_day (--epsilon-per-day)"
            )
        if self.speed_estimator != "report" and self.epsilon_per_day is None:
            raise ValueError(
                "--speed-estimator other than 'report' needs --epsilon-per-day (it is calibrated by epsilon)"
            )
        if isinstance(self.max_hats_per_vehicle_day, int) and self.max_hats_per_vehicle_day < 1:
            raise ValueError("max_hats_per_vehicle_day must be >= 1 or 'observed'")
        return self

    @property
    def differentially_private(self) -> bool:
        """False when a data-dependent choice is left unpaid (DESIGN.md rule 3)."""
        if self.max_hats_per_vehicle_day == "observed":
            return False
        if self.selection == "public-threshold" and self.neighbouring == "add-remove":
            return False
        return not (self.neighbouring == "add-remove" and self.speed_estimator in PAPER_ESTIMATORS)


# The user-level mean estimators of the paper assume the units present and their record counts are public.
PAPER_ESTIMATORS = ("baseline", "array-averaging", "levy", "quantile")


def build_config(toml: dict[str, object], overrides: dict[str, object]) -> HatReleaseConfig:
    """``[release]`` (or top-level keys) of a parsed TOML config, non-None overrides applied, validated.

    Any problem (unknown key, bad value) raises :class:`InputError`.
    """
    section = toml.get("release")
    values: dict[str, object] = (
        dict(section)
        if isinstance(section, dict)
        else {k: v for k, v in toml.items() if not isinstance(v, dict)}
    )
    given = {k: v for k, v in overrides.items() if v is not None}
    # A flag for one of the pair (B, epsilon per day) replaces the other one coming from the file.
    for one, other in (("noise_scale", "epsilon_per_day"), ("epsilon_per_day", "noise_scale")):
        if one in given:
            values.pop(other, None)
    values.update(given)
    try:
        return HatReleaseConfig(**values)  # type: ignore[arg-type]
    except ValidationError as err:
        first = err.errors()[0]
        where = ".".join(str(p) for p in first.get("loc", ())) or "config"
        if first.get("type") == "extra_forbidden":
            raise InputError(f"unknown config key '{where}'") from None
        raise InputError(f"bad config value for {where}: {first['msg']}") from None

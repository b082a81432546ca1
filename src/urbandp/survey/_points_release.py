"""The release of point locations (report section 5; Andres et al. 2013): the body behind
:func:`urbandp.survey.perturb_points`."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import polars as pl
from pydantic import field_validator

import urbandp.survey._locations as loc
import urbandp.survey._published as release
import urbandp.survey._shared_options as shared
from urbandp._release_options import ReleaseOptions, option
from urbandp._table_reader import read_table
from urbandp.errors import InputError, InvalidParameterError
from urbandp.survey._charge import SurveyCharge
from urbandp.survey._io import float_column, require_columns
from urbandp.survey._report import PointsPrivacyReport, ledger
from urbandp.survey._result import SurveyRelease

NEIGHBOURING = (
    "replace one location by another at distance d: privacy loss epsilon_per_metre * d (a row without a readable "
    "coordinate is outside the domain and is not released)"
)
BBOX_RULE = (
    "a location outside the box is moved into it before noise by clamping its latitude and its longitude to their "
    "ranges; this can LENGTHEN a distance (a degree of longitude is longer nearer the equator: two points at 60 N "
    "111.6 km apart, clamped into a box whose northern edge is 46 N, end up 154.9 km apart, 1.39x), so the loss "
    "between two true locations x and y is epsilon_per_metre * d(clamp(x), clamp(y)), not epsilon_per_metre * d(x, y)"
)
GUARANTEE = (
    "geo-indistinguishability (Andres et al. 2013): two locations d metres apart are indistinguishable within "
    "epsilon_per_metre * d; its unit is the metre of distance between a respondent's true and alternative location"
)
GEO_IND_NOT_DP = (
    "geo-indistinguishability, not differential privacy: the loss epsilon_per_metre * d grows without bound with "
    "the distance d, so a respondent whose location is replaced by one anywhere else has an unbounded loss; it "
    "cannot be booked against a budget's epsilon"
)
GEO_IND_UNIT = "metre (geo-indistinguishability)"
"""The unit perturb-points states its loss in, in privacy.json's ledger: epsilon per metre of distance."""


class PointsSpec(ReleaseOptions):
    """The options of ``survey perturb-points`` (:mod:`urbandp._release_options`)."""

    lat: str = option(help="Latitude column (degrees).")
    lon: str = option(help="Longitude column (degrees).")
    epsilon_per_metre: float | None = option(
        None,
        help="Planar Laplace epsilon per metre (default: none; give this or --scale-metres).",
        gt=0,
    )
    scale_metres: float | None = option(
        None,
        help="Per-axis Laplace scale b in metres (default: none; give this or --epsilon-per-metre).",
        gt=0,
    )
    bbox: str | None = option(  # from Python also 4 numbers, a tuple or a list
        None, help="Outlier box min_lat,min_lon,max_lat,max_lon (default: no outlier removal)."
    )
    separator: str = shared.separator()
    budget_epsilon: float | None = option(
        None,
        help="Refuse if epsilon per metre x --budget-metres exceeds this (default: no cap).",
        gt=0,
    )
    budget_metres: float = option(  # 0 m would book epsilon 0
        1000.0, help="Distance at which the budget applies.", gt=0
    )
    id_column: str | None = shared.id_column()
    keep_columns: str | None = shared.keep_columns()
    command: str = "urbandp.survey.perturb_points (Python)"

    @field_validator("bbox", mode="before")
    @classmethod
    def _box_as_text(cls, value: object) -> object:
        """A box given as 4 numbers (a tuple or a list) is the text the flag takes: ``44.0,46.0,-94.0,-92.0``."""
        if isinstance(value, (tuple, list)):
            return ",".join(map(str, value))
        return value

    def box(self) -> loc.BoundingBox | None:
        """The declared --bbox, checked."""
        try:
            return loc.BoundingBox.parse(self.bbox) if self.bbox else None
        except ValueError as err:
            raise InvalidParameterError(f"bbox: {err}", parameters="bbox") from None

    def check(self) -> tuple[dict[str, object], float]:
        """The mechanism's description and the epsilon charged (per metre x --budget-metres), before any read."""
        release.exactly_one(epsilon_per_metre=self.epsilon_per_metre, scale_metres=self.scale_metres)
        cost = loc.perturbation_epsilon(self.epsilon_per_metre, self.scale_metres)
        eps = float(cost["epsilon_per_metre"]) * self.budget_metres  # type: ignore[arg-type]
        what = f"epsilon per metre x budget_metres ({self.budget_metres:g} m) ="
        release.check_epsilon(eps, "respondent", what, ("budget_metres",))
        return cost, eps


def _offsets(spec: PointsSpec, n: int, charge: SurveyCharge) -> tuple[np.ndarray, np.ndarray]:
    """The displacements in metres, drawn through the charge."""
    if spec.epsilon_per_metre is not None:
        return loc.planar_laplace_offsets(
            n, spec.epsilon_per_metre, charge.charge.noise, charge.bits("opendp")
        )
    assert spec.scale_metres is not None
    return loc.axis_laplace_offsets(n, spec.scale_metres, spec.scale_metres, charge.charge.noise)


def points_body(spec: PointsSpec, path: Path, label: str, charge: SurveyCharge) -> SurveyRelease:
    """Read, clamp, reserve, draw and describe one ``survey perturb-points`` release."""
    cost, eps = spec.check()
    box = spec.box()
    charge.refuse_not_dp(GEO_IND_NOT_DP)  # with a dataset: refused here, before the data is read
    frame = read_table(path, spec.separator)
    require_columns(frame, Path(label), spec.lat, spec.lon)
    public = release.public_columns(
        frame, Path(label), spec.keep_columns, spec.id_column, {}, [spec.lat, spec.lon]
    )
    la, lo = float_column(frame, spec.lat), float_column(frame, spec.lon)
    ok = np.isfinite(la) & np.isfinite(lo) & (np.abs(la) <= 90) & (np.abs(lo) <= 180)
    if not ok.any():
        raise InputError(f"no usable location in {label} (all {la.size} quarantined)")
    n, clamped = int(ok.sum()), 0
    if box is not None:
        la_box, lo_box = box.clamp(la[ok], lo[ok])
        clamped = int(((la_box != la[ok]) | (lo_box != lo[ok])).sum())
        la, lo = la.copy(), lo.copy()
        la[ok], lo[ok] = la_box, lo_box
    planar = spec.epsilon_per_metre is not None
    params = {"epsilon_per_metre": cost["epsilon_per_metre"], "charged_at_metres": spec.budget_metres}
    charge.reserve(eps, "survey-planar-laplace" if planar else "survey-axis-laplace", params)
    east, north = _offsets(spec, n, charge)
    new_lat, new_lon = loc.shift_degrees(la[ok], lo[ok], east, north)
    moved = frame.filter(pl.Series(ok)).with_columns(
        pl.Series(spec.lat, new_lat), pl.Series(spec.lon, new_lon)
    )
    released = release.select_released(moved, public, [spec.lat, spec.lon])
    quarantine = frame.with_row_index("row", offset=1).filter(pl.Series(~ok))
    counts = {
        "rows_in": la.size,
        "rows_released": n,
        "rows_quarantined": la.size - n,
        "moved_into_bbox": clamped,
    }
    return SurveyRelease(
        tables={"points": released},
        privacy=_points_report(spec, cost, eps, box, public),
        owner={
            "quarantine.csv": quarantine.with_columns(pl.lit("bad_coordinate").alias("reason")),
            "input_report.json": release.input_report(counts),
        },
        file_name="points.csv",
        summary=f"perturbed {n:,} points ({cost['mechanism']}, epsilon {eps:.4g} at {spec.budget_metres:g} m); "
        f"quarantined {la.size - n:,}, moved into the box {clamped:,}",
    )


def _points_report(
    spec: PointsSpec,
    cost: dict[str, object],
    eps: float,
    box: loc.BoundingBox | None,
    public: dict[str, str],
) -> PointsPrivacyReport:
    """The typed privacy report: the mechanism, its epsilon per metre and the charge at --budget-metres."""
    name = f"perturb {spec.lat},{spec.lon} (epsilon per metre)"
    return PointsPrivacyReport(
        command=spec.command,
        unit="respondent (one location per row)",
        neighbouring=NEIGHBOURING,
        guarantee=GUARANTEE,
        epsilon=None,
        epsilon_reason="geo-indistinguishability: the loss is epsilon_per_metre x the distance (see guarantee)",
        **cost,
        epsilon_at_budget_metres=eps,
        budget_metres=spec.budget_metres,
        bbox=None if box is None else {**box.__dict__, "rule": BBOX_RULE},
        public_columns=release.declaration(public),
        ledger=ledger(
            spec.budget_epsilon,
            name,
            float(cost["epsilon_per_metre"]),  # type: ignore[arg-type]
            GEO_IND_UNIT,
            str(cost["mechanism"]),
        ),
        rounding_degrees=10.0**-loc.ROUND_DEGREES,
        not_dp_reasons=[GEO_IND_NOT_DP],
        differentially_private=False,
    )

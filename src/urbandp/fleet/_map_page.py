"""The fleet release's map and its website: what the page says, read from privacy.json (post-processing only).

* :func:`map_header`: the header of the map (:class:`~urbandp._reports.map.MapHeader`): DP with epsilon per day
  and per window (and rho) and the privacy unit; a red "NOT differentially private: <reasons>"; and for an empty
  release why nothing was released and what would change it (never "sigma inf").
* :func:`write_release_map`: ``map.html`` from a release's ``hat_speed.csv`` and ``privacy.json``.
* :func:`write_site`: ``urbandp map RELEASE_DIR --out site/``, a static folder an agency can upload as is: the map
  (``index.html``), the data as GeoJSON, a methodology page written from privacy.json in plain language, the
  published files, and a PNG per slot for reports.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping, Sequence
from pathlib import Path

import polars as pl

from urbandp._reports.map import (
    DEFAULT_TILES,
    MapHeader,
    TileSource,
    render_page,
    write_hat_map,
)
from urbandp.errors import InputError
from urbandp.fleet._postprocess_pooling import POOLED_COLUMNS

TITLE = "Mean of vehicle-day mean speeds per hexagon and hour"
LEGEND = "mean of vehicle-day mean speeds (km/h)"
POOLED_LEGEND = "pooled mean of vehicle-day mean speeds (km/h)"
MAP_COLUMNS = (
    "h3_cell",
    "slot",
    "mean_speed",
    "ci95_low",
    "ci95_high",
    "resolution",
    "noisy_vehicle_days",
    "clamped",
)


def _num(p: Mapping[str, object], key: str) -> float | None:
    v = p.get(key)
    return float(v) if isinstance(v, (int, float)) and math.isfinite(float(v)) else None


def _strings(p: Mapping[str, object], key: str) -> list[str]:
    v = p.get(key)
    return [str(x) for x in v] if isinstance(v, list) else []


def _section(p: Mapping[str, object], key: str) -> Mapping[str, object]:
    v = p.get(key)
    return v if isinstance(v, dict) else {}


def _g(v: float | None, digits: int = 4) -> str:
    return "not stated" if v is None else f"{v:.{digits}g}"


def privacy_statement(p: Mapping[str, object]) -> str:
    """epsilon per day and per window (rho where Gaussian), delta and the privacy unit, in one line."""
    unit = p.get("privacy_unit", "vehicle-day")
    days = p.get("days")
    text = (
        f"{p.get('dp_label', '')}; privacy unit: one {unit}. "
        f"epsilon {_g(_num(p, 'cumulative_epsilon_per_day'))} per day (delta {_g(_num(p, 'delta_per_day'), 2)}), "
        f"{_g(_num(p, 'epsilon_per_window'))} per window of {days} day{'s' if days != 1 else ''} "
        f"(delta {_g(_num(p, 'delta_per_window'), 2)})"
    )
    rho_day = p.get("rho_per_day")
    if isinstance(rho_day, dict) and rho_day:
        total = math.fsum(float(v) for v in rho_day.values())
        text += f"; zCDP rho {_g(total)} per day, {_g(_num(p, 'rho_per_window'))} per window"
    return text + "."


def empty_reason(p: Mapping[str, object]) -> str:
    """Why an empty release released nothing, and what would change it (from its public parameters)."""
    sel = _section(p, "selection")
    threshold, scale = sel.get("threshold_vehicle_days"), sel.get("noise_scale")
    why = "No hexagon-slot passed the selection"
    if isinstance(threshold, (int, float)):
        why += (
            f": a hexagon-slot is published only when its noisy count of vehicle-days reaches {threshold:g}"
        )
        if isinstance(scale, (int, float)) and math.isfinite(scale):
            why += f" (the count's noise has scale {scale:.3g})"
    why += "."
    change = (
        " What would change it: a larger epsilon per day, fewer days in the window (dates, weekdays), a "
        "public extent (domain_bbox, which needs no delta for selection), a coarser H3 resolution, longer slots, "
        "or coarsen to release parents where cells are sparse. Run 'urbandp plan' to see the expected count first."
    )
    return why + change


def map_header(p: Mapping[str, object]) -> MapHeader:
    """The map's header from a fleet release's privacy.json (see the module docstring)."""
    reasons = _strings(p, "not_dp_reasons")
    empty = empty_reason(p) if int(p.get("hats_released", 0) or 0) == 0 else None  # type: ignore[call-overload]
    warnings = [w for w in _strings(p, "warnings") if "window" in w]
    details = ""
    if not empty:
        scales = _section(p, "noise_scale")
        speed = scales.get("speed")
        if isinstance(speed, (int, float)) and math.isfinite(speed):
            details = (
                f"Noise: {p.get('mechanism')}, {p.get('noise_scale_kind', 'scale')} {speed:.4g} on Query 1"
            )
            details += (
                " (the sum of vehicle-day mean speeds). " if p.get("neighbouring") == "add-remove" else ". "
            )
    estimand = p.get("estimand")
    if isinstance(estimand, dict) and estimand.get("name"):
        details += f"Value: the {estimand['name']} of each hexagon and hour. "
    if isinstance(p.get("borrow_strength"), dict):
        details += (
            "Shown: means and 95% intervals pooled with each hexagon's H3 parent (robust empirical Bayes, "
            "post-processing); their promise is 95% on average over the pooled hexagons, not for each one. "
        )
    elif p.get("neighbouring") == "add-remove" and not empty:
        details += "Shown: each hexagon's own 95% interval (Fieller's, the count's noise included). "
    details += " ".join(f"Warning: {w}" for w in warnings)
    if reasons:
        return MapHeader(
            "notdp",
            "NOT differentially private: " + "; ".join(reasons),
            (
                details + " Values are noisy but the release as a whole is not DP; do not publish it as such."
            ).strip(),
            empty,
        )
    return MapHeader("dp", privacy_statement(p), details.strip(), empty)


def map_frame(speed: pl.DataFrame) -> pl.DataFrame:
    """The columns of ``hat_speed.csv`` the map shows: with ``--borrow-strength`` the pooled mean and interval
    where there is one (the per-HAT ones where a mean was withheld or clamped: nothing was pooled there)."""
    if "pooled_mean_speed" in speed.columns:
        pooled = pl.col("pooled_mean_speed").is_not_null()
        speed = speed.with_columns(
            pl.when(pooled).then(pl.col(f"pooled_{c}")).otherwise(pl.col(c)).alias(c)
            for c in ("mean_speed", "ci95_low", "ci95_high")
        )
    return speed.select([c for c in MAP_COLUMNS if c in speed.columns])


def write_release_map(
    path: Path,
    speed: pl.DataFrame,
    privacy: Mapping[str, object],
    *,
    tiles: TileSource | None = DEFAULT_TILES,
    gtfs: Path | None = None,
    context: Sequence[Path] = (),
    domain_cells: Sequence[str] | None = None,
    interval_threshold: float | None = None,
) -> None:
    """``map.html`` of a fleet release (its speed table and privacy.json)."""
    speed_max = _num(privacy, "speed_max")
    write_hat_map(
        map_frame(speed),
        path,
        value_col="mean_speed",
        title=TITLE,
        legend=_legend(privacy),
        header=map_header(privacy),
        speed_max=speed_max,
        interval_threshold=interval_threshold,
        domain_cells=domain_cells,
        gtfs_dir=gtfs,
        context=context,
        tiles=tiles,
    )


# --- the website: urbandp map RELEASE_DIR --out site/ -------------------------------------------------------------


def _read_release(release_dir: Path) -> tuple[pl.DataFrame, dict[str, object], list[Path]]:
    """hat_speed.csv, privacy.json and the other published files of a fleet release folder, or one-line errors."""
    release_dir = Path(release_dir)
    if not release_dir.is_dir():
        raise InputError(f"{release_dir}: not a folder (give the folder an 'urbandp release' wrote)")
    privacy_path, speed_path = release_dir / "privacy.json", release_dir / "hat_speed.csv"
    for need in (privacy_path, speed_path):
        if not need.is_file():
            raise InputError(
                f"{release_dir}: no {need.name} (is this the folder an 'urbandp release' wrote?)"
            )
    try:
        privacy = json.loads(privacy_path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as err:
        raise InputError(f"{privacy_path}: not readable JSON ({err})") from None
    if not isinstance(privacy, dict) or "not_dp_reasons" not in privacy or "days" not in privacy:
        raise InputError(f"{privacy_path}: not the privacy.json of a fleet release")
    try:
        # numbers stay numbers when every value of a column is empty (a release whose means were all withheld)
        speed = pl.read_csv(
            speed_path,
            infer_schema_length=None,
            schema_overrides={
                c: pl.Float64
                for c in (*MAP_COLUMNS[2:], *POOLED_COLUMNS[:3])
                if c not in ("resolution", "clamped")
            },
        )
    except pl.exceptions.PolarsError as err:
        raise InputError(f"{speed_path}: not a readable CSV ({str(err).splitlines()[0]})") from None
    if speed.height == 0 and "h3_cell" not in speed.columns:
        speed = pl.DataFrame(schema={"h3_cell": pl.String, "slot": pl.String, "mean_speed": pl.Float64})
    published = [
        release_dir / n
        for n in ("hat_speed.csv", "hat_speeding.csv", "privacy.json")
        if (release_dir / n).is_file()
    ]
    return speed, privacy, published


def _bounding_text(p: Mapping[str, object]) -> str:
    """How each bus-day's contribution was bounded, in words (privacy.json ``contribution_bounding``)."""
    if p.get("contribution_bounding") == "l2":
        return (
            "every hexagon-slot it visited was kept, each weighted one over the square root of their number, so "
            "that a bus-day seen in many places weighs no more in total than one seen in a single place"
        )
    return f"at most {p.get('max_hats_per_vehicle_day')} hexagon-slots per day"


def _estimand_text(p: Mapping[str, object]) -> dict[str, str]:
    """The estimand's name, how the hexagon's value averages the bus-days, and the intervals' promise."""
    estimand = p.get("estimand")
    name = str(estimand.get("name")) if isinstance(estimand, dict) else "mean of vehicle-day mean speeds"
    weighted = p.get("contribution_bounding") == "l2"
    promise = (
        "pooled with the hexagon's neighbours; 95% of these intervals hold on average over the hexagons, not "
        "each one"
        if isinstance(p.get("borrow_strength"), dict)
        else "each one holds its hexagon's value with 95% probability"
    )
    return {
        "estimand": name,
        "average": "mean, each bus-day weighted by how few hexagon-slots it visited" if weighted else "mean",
        "promise": promise,
    }


def methodology_html(p: Mapping[str, object], files: Sequence[str]) -> str:
    """A plain-language page on how the numbers were protected, written from privacy.json.

    The page is the Jinja2 template ``_reports/templates/methodology.html`` (autoescaped); here are only the
    numbers it states, formatted.
    """
    eps_day = _num(p, "cumulative_epsilon_per_day")
    sel = _section(p, "selection")
    values = {
        "resolution": str(p.get("resolution")),
        "days": str(p.get("days")),
        "unit": str(p.get("privacy_unit", "vehicle-day")),
        "neighbouring": str(p.get("neighbouring_explanation", "")),
        "eps_day": _g(eps_day),
        # the factor e^epsilon by which one bus-day can change any outcome's probability (Dwork et al. 2006, Def. 1)
        "factor": f"{math.exp(eps_day):.3g}" if eps_day is not None and eps_day < 700 else "more than 10^300",
        "delta_day": _g(_num(p, "delta_per_day"), 2),
        "eps_window": _g(_num(p, "epsilon_per_window")),
        "delta_window": _g(_num(p, "delta_per_window"), 2),
        "bounding": _bounding_text(p),
        **_estimand_text(p),
        "speed_max": _g(_num(p, "speed_max")),
        "mechanism": str(p.get("mechanism")),
        "threshold": str(sel.get("threshold_vehicle_days")),
        "method": str(sel.get("method")),
    }
    return render_page(
        "methodology.html",
        header=map_header(p),
        v=values,
        warnings=_strings(p, "warnings"),
        files=list(files),
    )


def write_site(
    release_dir: Path,
    out: Path,
    *,
    tiles: TileSource | None = DEFAULT_TILES,
    gtfs: Path | None = None,
    context: Sequence[Path] = (),
    pngs: bool = True,
) -> dict[str, Path]:
    """A static folder to upload as is: index.html, hat_speed.geojson, methodology.html, the published files, png/.

    Reads only the release folder (DP outputs and public parameters) and public context: post-processing.
    """
    import shutil

    from urbandp._geo_outputs import h3_polygons, write_geojson
    from urbandp._outputs import atomic_output_dir
    from urbandp._reports.map_png import write_slot_pngs

    speed, privacy, published = _read_release(release_dir)
    header = map_header(privacy)
    with atomic_output_dir(out) as d:
        write_release_map(
            d.release / "index.html",
            speed,
            privacy,
            tiles=tiles,
            gtfs=gtfs,
            context=context,
            interval_threshold=_target_width(privacy),
        )
        # the published columns as they are (per-HAT and, with --borrow-strength, pooled side by side)
        geo_columns = [*MAP_COLUMNS, *POOLED_COLUMNS]
        geo = speed.select([c for c in geo_columns if c in speed.columns])
        write_geojson(geo, h3_polygons(geo["h3_cell"]), d.release / "hat_speed.geojson")
        for f in published:
            shutil.copyfile(f, d.release / f.name)
        names = ["index.html", "hat_speed.geojson", *[f.name for f in published]]
        if pngs:
            pictures = write_slot_pngs(
                map_frame(speed),
                d.release / "png",
                header=header,
                speed_max=_num(privacy, "speed_max") or 0.0,
                gtfs=gtfs,
                context=context,
                interval_threshold=_target_width(privacy),
                legend=_legend(privacy),
            )
            names += [f"png/{png.name}" for png in pictures]
        (d.release / "methodology.html").write_text(methodology_html(privacy, names), encoding="utf-8")
        names.append("methodology.html")
    return {n: Path(out) / n for n in names}


__all__ = ["map_header", "write_release_map", "write_site"]


def _legend(privacy: Mapping[str, object]) -> str:
    """The value's name on the PNGs: the pooled mean where the release borrowed strength (``--borrow-strength``)."""
    return POOLED_LEGEND if isinstance(privacy.get("borrow_strength"), dict) else LEGEND


def _target_width(privacy: Mapping[str, object]) -> float | None:
    """The release's public usefulness target (privacy.json ``usefulness``), or None for an older release."""
    usefulness = privacy.get("usefulness")
    width = usefulness.get("target_width_kmh") if isinstance(usefulness, dict) else None
    return float(width) if isinstance(width, (int, float)) else None

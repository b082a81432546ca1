"""The fleet pipeline end to end: records -> validation/quarantine -> contributions -> HAT release -> outputs.

Python entry points mirror the CLI: :func:`load_records` and :func:`release_fleet` (the release, in a
ReleaseCharge: every guard before any noise). The folder of a release is written by :func:`_write_release`, internal:
the public way is :func:`urbandp.fleet.release` (``out=`` or ``FleetRelease.write``).
"""

from __future__ import annotations

import contextlib
import datetime as dt
import functools
import sys
from collections.abc import Callable, Iterator
from contextlib import nullcontext
from dataclasses import asdict, dataclass, field, replace
from functools import cached_property
from pathlib import Path
from typing import Any, cast

import polars as pl
import polars_h3 as plh3

from urbandp._contributions import ContributionSpec, get_backend
from urbandp._contributions.polars_backend import window_filter
from urbandp._contributions.spark_session import check_engine
from urbandp._grid.h3cells import cell_expr
from urbandp._privacy.noise import NoiseSource, rho_for_epsilon
from urbandp._privacy.report import write_privacy_json
from urbandp._privacy.session import ReleaseCharge
from urbandp._records import gtfs_realtime
from urbandp._records.readers import (
    input_kind,
    read_error_line,
    scan_records,
    skipped_inputs,
    timestamp_samples,
)
from urbandp._records.validation import (
    FAST_SHARE,
    ValidationOptions,
    classify_timestamps,
    later_duplicates,
    quarantine_frame,
    raw_rows,
    reason_counts,
    rejected_rows,
    speed_unit_warnings,
    validate,
)
from urbandp.errors import Advice, InputError
from urbandp.fleet._account import HatRelease
from urbandp.fleet._domain import load_public_domain
from urbandp.fleet._guardrails import (
    label_after_accounting,
    refuse_before_reading,
    reserve_planned,
    state_loss,
)
from urbandp.fleet._hat_release import _release_hats
from urbandp.fleet._options import HatReleaseConfig, public_window, window_days
from urbandp.fleet._plan import PlannedCharge, plan_release, planned_loss, planned_window_delta
from urbandp.fleet._postprocess_pooling import with_pooled_means

Step = Callable[[str], None]


def planned_charge(
    cfg: HatReleaseConfig, start: dt.date, end: dt.date, derived: bool, days: tuple[dt.date, ...]
) -> PlannedCharge:
    """The charge of a release over its public ``days`` from its public parameters (see :class:`PlannedCharge`)."""
    plan = plan_release(cfg, len(days))
    bounds = [b for b in (cfg.epsilon_per_day, cfg.budget_per_day) if b is not None]
    eps = min(bounds) if bounds else None
    rho = None
    if plan.gaussian and eps is not None and plan.conversion_delta is not None:
        rho = rho_for_epsilon(eps, plan.conversion_delta)
    return PlannedCharge(
        start,
        end,
        eps,
        rho,
        plan.mechanism,
        plan.conversion_delta,
        derived,
        days,
        planned_window_delta(cfg, len(days)),
        planned_loss(cfg, len(days)),
    )


@dataclass
class LoadedRecords:
    """Valid records (canonical columns) and the quarantined rows with their reasons.

    ``clean_lazy`` is the valid records as a lazy frame (the duplicate filter not yet applied, so the next query
    fuses it); ``clean`` materialises it once.
    """

    clean_lazy: pl.LazyFrame
    quarantine: pl.DataFrame
    records_in: int
    reasons: dict[str, int]
    files: list[Path]
    records_outside_window: int = 0
    mapping: dict[str, str | None] = field(default_factory=dict)
    records_valid: int = -1  # valid, non-duplicate rows kept (inside the window when one was given)
    warnings: list[str] = field(default_factory=list)
    timestamp_formats: dict[str, str] = field(default_factory=dict)
    skipped_files: list[str] = field(default_factory=list)  # files in input folders that were not read
    empty_lines: int = 0  # CSV lines with no value in any field: not records, not quarantined
    #: --engine spark: the quarantine as written by Spark (Parquet directory); ``quarantine`` is then empty
    quarantine_parquet: Path | None = None

    def require_valid(self) -> None:
        """Raise :class:`NoValidRecords` (top reasons, the quarantine attached) when every row was quarantined."""
        if self.quarantine.height >= self.records_in:
            raise NoValidRecords(self.records_in, self.reasons, self.quarantine)

    @cached_property
    def clean(self) -> pl.DataFrame:
        return self.clean_lazy.collect()


def load_records(
    paths: list[Path],
    columns: dict[str, str] | None = None,
    options: ValidationOptions | None = None,
    window: ContributionSpec | None = None,
) -> LoadedRecords:
    """Read and validate every input file in one streaming pass; raises :class:`InputError` for unusable input.

    With ``window`` only the valid records inside its date and hour window are kept (and checked for duplicates);
    the others are counted in ``records_outside_window``; the H3 ``cell`` at the window's resolution is computed in
    the same streaming pass (the costliest per-record step runs in parallel with reading and parsing).
    """
    options = options or ValidationOptions()
    lines, mapping, files = scan_records(list(paths), columns, timezone=options.timezone)
    # A CSV line with no value in any field is not a record (docs/records.md): counted with records_in, dropped here.
    has_csv = any(input_kind(f) == "csv" for f in files)
    raw = (lines.filter(~pl.col("empty_line")) if has_csv else lines).drop("empty_line")
    has_feed = any(input_kind(f) == gtfs_realtime.KIND for f in files)
    gtfs_realtime.check_speed_unit(has_feed, options.speed_unit, options.speed_unit_since)
    lf = validate(raw, options)
    inside = window_filter(window) if window is not None else pl.lit(True)
    extra = [cell_expr(window.resolution).alias("cell")] if window is not None else []
    # Two streaming queries: the valid rows inside the window (with the H3 cell, the costliest per-record step, in
    # the same pass) and the rejected rows with their raw text. Measured on 20 M rows this beats one pass that
    # carries the raw columns for every row: that one needs a third more memory for columns that are almost all null.
    # With the cell computed in the pass, coordinates are not needed downstream: not materialised.
    position = extra if window is not None else [pl.col("latitude"), pl.col("longitude")]
    keep_q = lf.filter((pl.col("reason_code") == 0) & inside).select(
        pl.col("vehicle").cast(pl.Categorical), "timestamp", *position, "speed", "source", "row"
    )
    try:
        if has_csv:
            n_lines, empty_lines = lines.select(pl.len(), pl.col("empty_line").sum()).collect().row(0)
        else:
            n_lines, empty_lines = lines.select(pl.len()).collect().item(), 0  # Parquet: from the metadata
        records_in = int(n_lines) - int(empty_lines)
        kept, rejected = pl.collect_all([keep_q, rejected_rows(lf)], engine="streaming")
    except pl.exceptions.PolarsError as err:
        raise InputError(f"cannot read input: {read_error_line(err)}") from None
    if records_in == 0:
        raise InputError("input holds no records")
    later = later_duplicates(kept)
    duplicates = kept.filter(later) if later is not None else kept.clear()
    if duplicates.height:  # the quarantine shows what the input said, not the parsed values
        duplicates = raw_rows(raw, duplicates.select("source", "row"))
    names = [f.name for f in files]
    quarantine = quarantine_frame(rejected, duplicates).with_columns(
        pl.col("source").replace_strict(list(range(len(names))), names, return_dtype=pl.String)
    )
    reasons = reason_counts(quarantine)
    clean = (kept.lazy().filter(~later) if later is not None else kept.lazy()).drop("source", "row")
    outside = records_in - kept.height - rejected.height
    warnings = speed_unit_warnings(kept, options)
    if reasons["speed_above_maximum"] > FAST_SHARE * records_in:
        warnings.append(
            f"{reasons['speed_above_maximum']:,} of {records_in:,} records are above {options.speed_reject_above_kmh:g} "
            f"km/h after reading them as {options.speed_unit}: is the speed unit right (km/h read as m/s)?"
        )
    skipped = skipped_inputs(list(paths))
    if skipped:
        names_skipped = ", ".join(p.name for p in skipped[:5]) + (
            f" and {len(skipped) - 5} more" if len(skipped) > 5 else ""
        )
        warnings.append(
            f"{len(skipped)} file(s) in the input folder(s) were not read (not CSV, JSON, JSON Lines or Parquet, "
            f"plain or .gz/.zst): {names_skipped}"
        )
    if empty_lines:
        warnings.append(
            f"{empty_lines:,} empty CSV line(s) (no value in any field) were skipped: they hold no record"
        )
    samples = timestamp_samples(files, mapping.timestamp)
    return LoadedRecords(
        clean,
        quarantine,
        records_in,
        reasons,
        files,
        outside,
        mapping=asdict(mapping),
        records_valid=kept.height - duplicates.height,
        warnings=warnings,
        timestamp_formats={name: classify_timestamps(v) for name, v in samples.items()},
        skipped_files=[str(p) for p in skipped],
        empty_lines=empty_lines,
    )


def top_reasons(reasons: dict[str, int], n: int = 3) -> str:
    """``unparseable_timestamp 1,998, missing_speed 2`` (the largest non-zero counts)."""
    top = sorted(((v, k) for k, v in reasons.items() if v), reverse=True)[:n]
    return ", ".join(f"{k} {v:,}" for v, k in top) or "none"


class NoValidRecords(InputError):
    """Every input row was quarantined: the message gives the top reasons; ``quarantine`` holds the rows."""

    def __init__(self, records_in: int, reasons: dict[str, int], quarantine: pl.DataFrame) -> None:

        def example(reason: str) -> str:
            first = quarantine.filter(pl.col("reason") == reason)["timestamp_raw"].head(1)
            return f" such as '{first[0]}'" if first.len() and first[0] is not None else ""

        hint = ""
        if reasons.get("unparseable_timestamp", 0) * 2 > records_in:
            hint = (
                f"; timestamps{example('unparseable_timestamp')} are not ISO 8601 or epoch seconds/milliseconds: "
                'declare their layout with timestamp_format (e.g. "%d/%m/%Y %H:%M")'
            )
        elif reasons.get("implausible_timestamp", 0) * 2 > records_in:
            hint = (
                f"; timestamps{example('implausible_timestamp')} lie before 1990 or in the future: check "
                "timestamp_format (epoch-s or epoch-ms?) and the units' clocks"
            )
        super().__init__(
            f"all {records_in:,} records were quarantined ({top_reasons(reasons)}){hint}; nothing is left to use",
            parameters=("timestamp_format",) if hint else (),
        )
        self.quarantine = quarantine


def write_owner_quarantine(out: Path, quarantine: pl.DataFrame) -> Path:
    """Write ``quarantine.csv`` alone to ``owner_only/<name>/`` beside ``out`` (a run that released nothing);
    an older release in ``out`` is left as it was."""
    from urbandp._outputs import check_output_path, write_owner_table

    return write_owner_table(check_output_path(Path(out)), "quarantine.csv", quarantine)


@contextlib.contextmanager
def quarantine_on_failure(out: Path | None) -> Iterator[None]:
    """When every record was quarantined (:class:`NoValidRecords`) inside, write quarantine.csv to owner_only/
    beside ``out`` (none: the error as it is) and say where."""
    try:
        yield
    except NoValidRecords as err:
        if out is None:
            raise
        where = write_owner_quarantine(out, err.quarantine)
        raise InputError(
            f"{err}; the rows and their reasons are in {where}", parameters=err.parameters
        ) from None


def date_window(cfg: HatReleaseConfig, clean: pl.DataFrame | pl.LazyFrame) -> tuple[dt.date, dt.date, bool]:
    """(start, end, derived_from_data). Without --start/--end the window spans the data's first to last day."""
    start, end, _ = public_window(cfg)
    derived = start is None or end is None
    if derived:
        days = (
            clean.lazy()
            .select(
                pl.col("timestamp").dt.date().min().alias("a"), pl.col("timestamp").dt.date().max().alias("b")
            )
            .collect()
        )
        start = start or days["a"][0]
        end = end or days["b"][0]
    if start is None or end is None:
        raise InputError(
            "no valid records to derive the date window from; give start and end", parameters=("start", "end")
        )
    if start > end:
        raise InputError(f"start {start} is after end {end}", parameters=("start", "end"))
    return start, end, derived


def _spark_stage(
    paths: list[Path],
    columns: dict[str, str] | None,
    options: ValidationOptions | None,
    window: ContributionSpec,
    master: str | None,
) -> tuple[LoadedRecords, pl.DataFrame]:
    """The record-level stage on Spark: counts and the contributions come back, the quarantine stays Parquet."""
    from urbandp._contributions.spark_backend import SparkBackend
    from urbandp._records.validation import QUARANTINE_COLUMNS

    done = SparkBackend(master).load(list(paths), columns, options, window)
    days = done.contributions.select(pl.col("day").cast(pl.Datetime("us")).alias("timestamp")).lazy()
    loaded = LoadedRecords(
        days,
        pl.DataFrame(schema={c: pl.String for c in QUARANTINE_COLUMNS}),
        done.records_in,
        done.reasons,
        done.files,
        done.records_outside_window,
        mapping=asdict(done.mapping),
        quarantine_parquet=done.quarantine_parquet,
    )
    return loaded, done.contributions


def swapped_bbox_hint(contributions: pl.DataFrame, cfg: HatReleaseConfig, outside_domain: int) -> str | None:
    """A hint for the data owner when most records of the window fall outside ``--domain-bbox`` and the box with
    latitude and longitude swapped would hold most of them. It reads the data: stderr and
    owner_only/ only, never privacy.json.

    A record is inside a box when its H3 cell's centre is, as for the extent itself (:func:`domain_cells`).
    """
    in_window = int(contributions["n_records"].sum()) if contributions.height else 0
    if cfg.domain_bbox is None or 2 * outside_domain <= in_window:
        return None
    a, b, c, d = cfg.domain_bbox
    if not (-90 <= b < d <= 90):  # the swapped box is no box of latitudes
        return None
    lat, lon = plh3.cell_to_lat(pl.col("cell")), plh3.cell_to_lng(pl.col("cell"))
    captured = contributions.filter(lat.is_between(b, d) & lon.is_between(a, c))["n_records"].sum()
    if 2 * captured <= in_window:
        return None
    return Advice(
        f"most records of the window lie outside domain_bbox {a:g},{b:g},{c:g},{d:g}, and the box with latitude "
        f"and longitude swapped ({b:g},{a:g},{d:g},{c:g}) would hold most of them: the order is min_lat,min_lon,"
        "max_lat,max_lon; check it (the counts are in owner_only/)",
        parameters="domain_bbox",
    )


def _read_and_aggregate(
    paths: list[Path],
    cfg: HatReleaseConfig,
    columns: dict[str, str] | None,
    options: ValidationOptions | None,
    window: ContributionSpec,
    engine: str,
    spark_master: str | None,
    say: Step,
) -> tuple[LoadedRecords, pl.DataFrame, tuple[dt.date, dt.date, bool]]:
    """Read, validate and aggregate per (vehicle, HAT, day) on the chosen engine: the only stage that reads every
    record. Returns the records, the contributions and the date window (start, end, derived from the data)."""
    if engine == "spark":  # aggregated on Spark, inside the window (a derived start or end spans the data)
        loaded, contributions = _spark_stage(paths, columns, options, window, spark_master)
        start, end, derived = date_window(cfg, loaded.clean_lazy)
        say("aggregating per vehicle, HAT and day")
    else:  # polars (the engine is checked by release_fleet)
        loaded = load_records(paths, columns, options, window=window)
        loaded.require_valid()
        if loaded.records_valid == 0:
            raise InputError(
                f"none of the {loaded.records_outside_window:,} valid records lies inside the window "
                f"{cfg.start or 'first day'}..{cfg.end or 'last day'}, hours {cfg.hours[0]}-{cfg.hours[1]} "
                f"({loaded.quarantine.height:,} other records quarantined: {top_reasons(loaded.reasons)}); "
                "widen start/end or hours",
                parameters=("start", "end", "hours"),
            )
        start, end, derived = date_window(cfg, loaded.clean_lazy)
        spec = replace(window, start=start, end=end)
        say("aggregating per vehicle, HAT and day")
        contributions = get_backend("polars").contributions(loaded.clean_lazy, spec)
    if contributions.height == 0:
        raise InputError(
            f"no valid records inside the window {start}..{end}, hours {cfg.hours[0]}-{cfg.hours[1]}"
        )
    return loaded, contributions, (start, end, derived)


def _describe_and_report(
    release: HatRelease,
    loaded: LoadedRecords,
    contributions: pl.DataFrame,
    cfg: HatReleaseConfig,
    options: ValidationOptions | None,
    window: tuple[dt.date, dt.date, bool],
    day_set: tuple[dt.date, ...] | None,
    command_line: str | None,
) -> None:
    """The public description of the release (its window and how the input was read: parameters only) into
    privacy.json, and the exact counts and data-derived warnings into the owner's report (never published)."""
    start, end, derived = window
    public_days = window_days(start, end, day_set)
    days = len(public_days)
    p = release.privacy
    seen = {d for d in contributions["day"].unique().to_list()}
    empty_days = [d.isoformat() for d in public_days if d not in seen]
    opts = options or ValidationOptions()
    if opts.impute_speed_kmh is not None:
        p["speed_imputation"] = (
            "presence-public: records with a missing, negative or implausible speed count for presence and N; their "
            f"speed is clamped to [0, {opts.speed_reject_above_kmh:g}] km/h, or set to U/2 = "
            f"{opts.impute_speed_kmh:g} km/h when missing, rather than dropped"
        )
    in_window = int(contributions["n_records"].sum())
    # counted where the release drops them, before truncation (fleet/_domain.py): owner material
    outside_domain = int(cast(int, release.owner_report.pop("records_off_public_domain", 0)))
    swapped = swapped_bbox_hint(contributions, cfg, outside_domain)
    # Exact counts of the owner's records: removing one vehicle-day changes them, so they are owner material
    # (owner_only/<name>/input_report.json), never in the public privacy.json.
    release.owner_report.update(
        {
            "not_dp": "exact operational counts of the true data, for the data owner only; not protected by DP",
            "records_in": loaded.records_in,
            "records_quarantined": sum(loaded.reasons.values()),
            "quarantine_reasons": loaded.reasons,
            "records_in_window": in_window,
            "records_outside_domain": outside_domain,
            "records_used": in_window - outside_domain,
            "records_outside_window": loaded.records_outside_window,
            "vehicle_hat_days_truncated": p.pop("vehicle_hat_days_truncated", None),
            "days_without_records": empty_days,
        }
    )
    p.update(
        {
            "window": {
                "start": start.isoformat(),
                "end": end.isoformat(),
                "days": days,
                "day_set": None if day_set is None else [d.isoformat() for d in day_set],
                "day_set_rule": _day_set_rule(cfg),
                "derived_from_data": derived,
                "hours": list(cfg.hours),
                "slot_minutes": cfg.slot_minutes,
                "resolution": cfg.resolution,
            },
            "input": {
                "speed_unit": opts.speed_unit,
                "speed_unit_since": {d.isoformat(): u for d, u in opts.speed_unit_since},
                "timezone": opts.timezone,
                "timezone_note": None if opts.timezone else "wall-clock time as written in the timestamps",
                "speed_reject_above_kmh": opts.speed_reject_above_kmh,
                "column_mapping": loaded.mapping,
                "files": [f.name for f in loaded.files],
                "files_not_read": [Path(f).name for f in loaded.skipped_files],
                "timestamp_format": opts.timestamp_format,
                "timestamp_note": (
                    "auto: each row read as ISO 8601 (T or space) or epoch seconds/milliseconds (UTC instants)"
                    if opts.timestamp_format == "auto"
                    else f"declared: {opts.timestamp_format}"
                ),
                "plausible_timestamps": "from 1990-01-01 to two days after the run; others quarantined",
            },
            "command_line": " ".join(["urbandp", *sys.argv[1:]]) if command_line is None else command_line,
            "disclosure_note": (
                "every figure here is public (a parameter) or DP; exact counts of the owner's records are in "
                "owner_only/<name>/input_report.json, beside this folder, and are not published"
            ),
        }
    )
    # Read from the true data (a percentile of the speeds, exact counts, how the input looked): for the data owner
    # (stderr and owner_only/<name>/input_report.json), never in the public privacy.json.
    release.owner_report["input"] = {
        "empty_lines_skipped": loaded.empty_lines,
        "timestamp_formats_seen": loaded.timestamp_formats,
    }
    release.owner_report["warnings"] = [
        *loaded.warnings,
        *input_warnings(loaded, opts, in_window, cfg),
        *([swapped] if swapped else []),
    ]
    release.owner_notes["days_without_records"] = empty_days


def release_fleet(
    paths: list[Path],
    cfg: HatReleaseConfig,
    *,
    columns: dict[str, str] | None = None,
    options: ValidationOptions | None = None,
    noise: NoiseSource | None = None,
    step: Step | None = None,
    command_line: str | None = None,
    before_noise: Callable[[PlannedCharge], None] | None = None,
    engine: str = "polars",
    spark_master: str | None = None,
    session: ReleaseCharge | None = None,
    allow_meaningless_epsilon: bool = False,
) -> tuple[HatRelease, LoadedRecords]:
    """Run the whole release through the guards of every entry point; ``step`` is told the name of each stage.

    ``session``: the :class:`~urbandp._privacy.session.ReleaseCharge` that owns the budget (the CLI's, with its budget
    store). Without one a local session is opened (no store is charged) with ``noise`` as its source (default
    OpenDP) and ``allow_meaningless_epsilon``; with one, give those to the session instead. Either way the release
    passes the same guards, in the order :mod:`urbandp.fleet._guardrails` gives; noise is drawn only through the
    session.

    ``before_noise`` is called once with the :class:`PlannedCharge` after reading, validation and planning and
    before the reservation and any noise (an exception from it stops the release).
    ``engine``: ``polars`` (in-process, default) or ``spark`` (the record-level stage on Apache Spark at
    ``spark_master``, default ``local[*]``; see docs/scale-out.md).

    Figures read from the true data (record counts, how the input looked, warnings such as a speed unit guessed
    from the speeds' distribution) go to ``release.owner_report`` (owner_only/<name>/input_report.json; its
    ``warnings`` are also for stderr), never into the public ``release.privacy``.
    """
    if session is not None and (noise is not None or allow_meaningless_epsilon):
        raise ValueError("with a session, give noise and allow_meaningless_epsilon to the ReleaseCharge")
    charge_of = (  # without a session, a local one (no store is charged)
        nullcontext(session)
        if session is not None
        else ReleaseCharge(
            None, None, unit="vehicle-day", noise=noise, allow_meaningless_epsilon=allow_meaningless_epsilon
        )
    )
    check_engine(engine, spark_master)  # every caller: the API, the demo and the building block's own
    with charge_of as session:
        refuse_before_reading(session, cfg)  # before any record is read or noise drawn
        say = step or (lambda _name: None)
        say("reading and validating records")
        if cfg.neighbouring == "presence-public":
            # presence (hence N) is public: one record's speed must not change which HATs exist, so a bad speed is
            # imputed (clamped, or U/2 when missing) instead of dropping the record
            options = replace(options or ValidationOptions(), impute_speed_kmh=cfg.speed_max / 2)
        slots = cfg.slot_spec
        keep_speeds = cfg.speed_estimator != "report"
        first, last, day_set = public_window(cfg)
        window = ContributionSpec(
            cfg.resolution, slots, first, last, cfg.speed_max, keep_speeds=keep_speeds, days=day_set
        )
        loaded, contributions, (start, end, derived) = _read_and_aggregate(
            paths, cfg, columns, options, window, engine, spark_master, say
        )
        public_days = window_days(start, end, day_set)
        days = len(public_days)
        domain = load_public_domain(cfg, public_days)  # public files only; before any noise
        charge = planned_charge(cfg, start, end, derived, public_days)
        if before_noise is not None:
            before_noise(charge)
        reserve_planned(session, charge)  # the session's guards run here, before any noise
        say("selecting HATs and adding noise")
        # the unknown-domain threshold invokes OpenDP's measurement directly, not session.noise
        session.mark_drawn()
        release = _release_hats(contributions, cfg, days, session.noise, slots=slots, domain=domain)
        p = release.privacy
        # the loss reserved is the loss stated, before any figure is read from it
        state_loss(session, p, charge)
        _post_process(release, cfg, derived)
        _describe_and_report(
            release, loaded, contributions, cfg, options, (start, end, derived), day_set, command_line
        )
        label_after_accounting(session, p)
        return release, loaded


def _post_process(release: HatRelease, cfg: HatReleaseConfig, derived: bool) -> None:
    """After accounting, from the noisy outputs and public facts only: pooled means (borrowed strength), which
    promise the shown values carry, the long-window warning, and the NOT DP label when the window was derived."""
    p = release.privacy
    if cfg.borrow_strength != "none":  # post-processing of the noisy table (fleet/_postprocess_pooling.py)
        release.speed, p["borrow_strength"] = with_pooled_means(
            release.speed, p, cfg.speed_max, cfg.target_width, cfg.precision
        )
    if isinstance(p.get("usefulness"), dict):
        p["usefulness"]["values_shown"] = (  # type: ignore[index]
            "pooled (pooled_mean_speed, pooled_ci95_low/high, pooled_useful): 95% on average over the pooled HATs"
            if cfg.borrow_strength != "none"
            else "per HAT (mean_speed, ci95_low/high, useful): each HAT's own 95% interval"
        )
    window_warning = large_window_warning(p)
    if window_warning:
        p["warnings"] = [*cast(list[str], p["warnings"]), window_warning]
    if derived:
        reason = Advice(
            "the date window (hence D, which sets the speeding sensitivity, the threshold and the group size) was "
            "derived from the data's first and last day; give start and end to make it public",
            parameters=("start", "end"),
        )
        p["not_dp_reasons"] = [*p["not_dp_reasons"], reason]  # type: ignore[misc]
        p["differentially_private"] = False
        p["dp_label"] = "NOT differentially private"


def input_warnings(
    loaded: LoadedRecords, opts: ValidationOptions, in_window: int, cfg: HatReleaseConfig
) -> list[str]:
    """Warnings about how the records were read; the counts stay in owner_only/."""
    out: list[str] = []
    if loaded.records_outside_window > in_window:
        out.append(
            Advice(
                f"most valid records fall outside the window (days and hours {cfg.hours[0]}-{cfg.hours[1]}): check "
                "hours, start/end or dates, and timezone (the counts are in owner_only/)",
                parameters=("hours", "start", "end", "dates", "timezone"),
            )
        )
    if opts.timezone is None and any("epoch" in kind for kind in loaded.timestamp_formats.values()):
        out.append(
            Advice(
                "epoch timestamps are instants and were read as UTC wall-clock time, so the hour slots are UTC "
                'hours; give timezone (e.g. timezone="America/Chicago") for local hours',
                parameters="timezone",
            )
        )
    return out


WINDOW_WARNING_RATIO = 10.0


def large_window_warning(p: dict[str, object]) -> str | None:
    """A warning when the loss over the window exceeds 10x the per-day figure: a vehicle present on
    every public day is protected at the window's epsilon, not the day's."""
    day, window = p.get("cumulative_epsilon_per_day"), p.get("epsilon_per_window")
    if not isinstance(day, (int, float)) or not isinstance(window, (int, float)) or day <= 0:
        return None
    if window <= WINDOW_WARNING_RATIO * day:
        return None
    return Advice(
        f"epsilon per window is {window:.4g} over {p.get('days')} public days, {window / day:.0f}x the "
        f"{day:.4g} per day: a vehicle present on every day is protected only at the window's figure; release "
        "fewer days (dates, weekdays) or spend less per day",
        parameters=("dates", "weekdays"),
    )


def _day_set_rule(cfg: HatReleaseConfig) -> str:
    if cfg.dates:
        rule = "the listed dates (dates / dates_file)"
    elif cfg.weekdays:
        rule = f"weekdays {cfg.weekdays} within start..end"
    else:
        rule = "every calendar day of start..end"
    if cfg.holidays:
        rule += f", less {len(cfg.holidays)} holiday(s)"
    return (
        rule + "; D, the number of these public days, sets the window's composition and Query 2's sensitivity"
    )


def _write_release(
    out_dir: Path,
    release: HatRelease,
    loaded: LoadedRecords,
    *,
    with_map: bool = True,
    map_options: dict[str, Any] | None = None,
) -> dict[str, Path]:
    """Write the release atomically: hat_speed.csv, hat_speeding.csv (each also as GeoParquet ``.parquet`` and
    ``.geojson`` with the H3 cell polygons, :mod:`urbandp._geo_outputs`), privacy.json, map.html in ``out_dir`` (all
    publishable) and quarantine.csv (raw rejected rows) in ``owner_only/<name>/`` beside it (not DP)."""
    from urbandp._geo_outputs import h3_polygons, write_geo_pair
    from urbandp._outputs import atomic_output_dir, owner_dir_for, owner_file_seen_from_release, write_json
    from urbandp.fleet._map_page import write_release_map

    out_dir = Path(out_dir)
    paths: dict[str, Path] = {}
    p = release.privacy
    q_name = "quarantine.csv" if loaded.quarantine_parquet is None else "quarantine.parquet"
    owner = functools.partial(owner_file_seen_from_release, out_dir.name)
    p["not_dp_outputs"] = {
        owner(q_name): "raw rejected rows with their reasons",
        owner("owner_notes.json"): "days of the window without any record (read from true data)",
        owner("input_report.json"): "exact counts of the records read, quarantined (per reason), inside and "
        "outside the window and the extent, and of the vehicle-day HATs cut by truncation; how the input looked "
        "(empty lines, timestamp formats) and the warnings read from the data (also on stderr)",
    }
    speeding = "speeding" in p.get("queries", ["speed", "speeding"])  # type: ignore[operator]
    tables = {"speed": with_hex_id(release.speed)}
    if speeding:
        tables["speeding"] = with_hex_id(release.speeding)
    with atomic_output_dir(out_dir) as d:
        for table, frame in tables.items():
            frame.write_csv(d.release / f"hat_{table}.csv")
            write_geo_pair(frame, h3_polygons(frame["h3_cell"]), d.release, f"hat_{table}")
        if loaded.quarantine_parquet is None:
            loaded.quarantine.write_csv(d.owner_path("quarantine.csv"))
        else:  # written by Spark: moved in whole (a directory of part files)
            import shutil

            shutil.move(str(loaded.quarantine_parquet), d.owner_path(q_name))
        write_json(d.owner_path("owner_notes.json"), release.owner_notes)
        write_json(d.owner_path("input_report.json"), release.owner_report)
        write_privacy_json(d.release, p)
        if with_map:
            write_release_map(
                d.release / "map.html", release.speed, p, **(map_options or {})
            )  # post-processing
    for table in tables:
        for kind, suffix in (("", "csv"), (" geoparquet", "parquet"), (" geojson", "geojson")):
            paths[table + kind] = out_dir / f"hat_{table}.{suffix}"
    paths["privacy"] = out_dir / "privacy.json"
    if with_map:
        paths["map"] = out_dir / "map.html"
    paths["quarantine"] = owner_dir_for(out_dir) / q_name
    paths["input report"] = owner_dir_for(out_dir) / "input_report.json"
    return paths


def with_hex_id(table: pl.DataFrame) -> pl.DataFrame:
    """The table with ``hex_id`` beside ``h3_cell``: the same H3 cell under the name kepler.gl builds its hexagon
    layers from, so the released files open there without a step (post-processing of a public key)."""
    if "h3_cell" not in table.columns or "hex_id" in table.columns:
        return table
    return table.insert_column(table.columns.index("h3_cell") + 1, table["h3_cell"].alias("hex_id"))

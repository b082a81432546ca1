"""The release without a public domain: observed cells released only above a DP threshold (partition selection).

OpenDP's ``make_laplace_threshold`` (Desfontaines et al. 2022, "Differentially private partition selection",
Sec. 3): each observed cell's count gets discrete Laplace noise and is released only above a threshold calibrated
to ``delta``, so a cell that one unit alone creates is published with probability at most delta.
"""

from __future__ import annotations

from dataclasses import dataclass

import polars as pl

import urbandp.counts._partitions as partitions
from urbandp._privacy.guards import meaningless_reasons
from urbandp._privacy.ledger import LedgerEntry, PrivacyLedger
from urbandp._privacy.loss import Loss
from urbandp._privacy.session import ReleaseCharge
from urbandp.counts._accounting import laplace_plan
from urbandp.counts._aggregate import EVENT_COLUMNS
from urbandp.counts._partitions import calibrate_threshold, threshold_measurement
from urbandp.counts._units import PrivacyUnit
from urbandp.errors import InputDataError, InvalidParameterError

QUARANTINE_REASON = "missing value or unparsable timestamp"


@dataclass
class SelectedCells:
    """The DP output (the table and its privacy document) and the owner's material of a selection release."""

    table: pl.DataFrame
    privacy: dict[str, object]
    quarantine: pl.DataFrame
    input_report: dict[str, object]


def _split_rows(df: pl.DataFrame) -> tuple[pl.DataFrame, pl.DataFrame]:
    """(usable rows with a parsed ``_ts``, rows quarantined for a missing value or an unparsable timestamp)."""
    missing = [c for c in EVENT_COLUMNS if c not in df.columns]
    if missing:
        raise InputDataError(f"event input is missing column(s) {', '.join(missing)}")
    ts = (
        pl.col("timestamp").str.to_datetime(strict=False)
        if df.schema["timestamp"] == pl.String
        else pl.col("timestamp")
    )
    df = df.with_columns(_ts=ts)
    broken = pl.any_horizontal([pl.col(c).is_null() for c in EVENT_COLUMNS]) | pl.col("_ts").is_null()
    return df.filter(~broken), df.filter(broken)


def _cell_counts(good: pl.DataFrame, punit: PrivacyUnit) -> pl.DataFrame:
    """Events per observed cell (``key``: mode|day|tap|bin|location), bounded per card-day (k events, m per cell)."""
    if punit.kind == "card-day":
        if "card_id" not in good.columns:
            raise InputDataError("card-day unit needs a card_id column")
        good = good.with_columns(_day=pl.col("_ts").dt.date()).sort(["card_id", "_day", "_ts"])
        good = good.filter(pl.int_range(pl.len()).over(["card_id", "_day"]) < punit.max_events)
    key = pl.concat_str(
        [
            pl.col("mode"),
            pl.col("_ts").dt.date().cast(pl.String),
            pl.col("tap"),
            (pl.col("_ts").dt.truncate("15m").dt.strftime("%H:%M")),
            pl.col("location"),
        ],
        separator="|",
    )
    if punit.kind != "card-day":
        return good.group_by(key.alias("key")).len()
    return (  # at most m events of one card-day per cell: recount with the cap
        good.with_columns(key.alias("key"))
        .with_columns(_r=pl.int_range(pl.len()).over(["card_id", "_day", "key"]))
        .filter(pl.col("_r") < punit.max_per_cell)
        .group_by("key")
        .len()
    )


def release_selected(
    df: pl.DataFrame,
    punit: PrivacyUnit,
    epsilon: float | None,
    noise_scale: float | None,
    delta: float,
    ledger: PrivacyLedger,
    charge: ReleaseCharge,
) -> SelectedCells:
    """Partition selection path, inside the release's ``charge``.

    The selection's epsilon (from OpenDP's map of the threshold measurement, before it is invoked) is reserved on
    each day that holds a valid event: a unit-day on another day is in no cell.
    """
    plan = laplace_plan(punit, epsilon=None if noise_scale is not None else epsilon, scale=noise_scale)
    good, bad = _split_rows(df)
    grouped = _cell_counts(good, punit)
    meas = threshold_measurement(plan.noise_scale, calibrate_threshold(punit, plan.noise_scale, delta))
    eps_sel, delta_sel = meas.map((punit.l0, punit.l1, punit.linf))
    loss = Loss.approx_dp(float(eps_sel), float(delta_sel))
    not_dp = meaningless_reasons(loss, None, per=punit.name, allow=charge.allow_meaningless_epsilon)
    charge.refuse_not_dp(not_dp)
    days = sorted(set(good["_ts"].dt.date().to_list()))
    params = {"epsilon": eps_sel, "delta": delta_sel, "noise_scale": plan.noise_scale}
    charge.reserve(loss, days, "counts-partition-selection", params, cap_on="day")
    charge.mark_drawn()  # OpenDP's threshold measurement is invoked directly below
    sel = partitions.select_partitions(  # looked up at call time: the module is the sampler's one seam
        dict(zip(grouped["key"].to_list(), grouped["len"].to_list(), strict=False)),
        punit,
        plan.noise_scale,
        delta,
    )
    ledger.charge(
        LedgerEntry(
            "joint count table (partition selection)",
            sel.epsilon,
            sel.delta,
            punit.name,
            punit.neighbouring,
            "opendp make_laplace_threshold",
            {"threshold": sel.threshold},
        )
    )
    rows = [[*k.split("|"), v] for k, v in sel.released.items()]
    table = pl.DataFrame(rows, schema=["mode", "day", "tap", "bin", "location", "count"], orient="row")
    not_dp = list(charge.not_dp_reasons)  # the loss guard's, and a noise source that is not private
    privacy = {
        "method": "urbandp",
        "differentially_private": not not_dp,
        "not_dp_reasons": not_dp,
        **punit.to_json(),
        "mechanism": "discrete laplace + threshold (OpenDP make_laplace_threshold, partition selection)",
        "noise_scale": sel.noise_scale,
        "threshold": sel.threshold,
        "epsilon": sel.epsilon,
        "delta": sel.delta,
        "zeros_perturbed": "not applicable: domain is not public, cells are selected with DP",
        "domain": {"source": "dp partition selection"},
        "marginals": "none (derive from joint.csv)",
        "total_epsilon": ledger.epsilon_spent,
        "total_delta": ledger.delta_spent,
        "ledger": ledger.to_dict(),
        "per_card_window": _window_statement(charge, punit.kind),
    }
    quarantine = bad.drop("_ts").with_columns(pl.all().cast(pl.String), reason=pl.lit(QUARANTINE_REASON))
    report = {"note": "not differentially private", "input_rows": df.height, "quarantined_rows": bad.height}
    return SelectedCells(table.sort(["mode", "day", "tap", "bin", "location"]), privacy, quarantine, report)


def _window_statement(charge: ReleaseCharge, unit: str) -> dict[str, object]:
    """privacy.json's ``per_card_window`` of a partition selection: the window loss the charge reserved (the one
    the store books): for a card on every one of the D days with an event, D times the selection's (epsilon,
    delta) (basic composition, Dwork and Roth 2014, Thm 3.16: each day's cells are its own partitions)."""
    loss = charge.release_loss
    assert loss is not None  # reserved above, before the selection drew
    eps, delta, _ = loss.approx(loss.window)
    if unit != "card-day":
        return {"days": loss.days, "epsilon": None, "delta": None, "per_card_day_epsilon": None,
                "epsilon_reason": f"unit {unit!r} does not bound the taps of one card: no per-card guarantee"}  # fmt: skip
    return {"days": loss.days, "epsilon": eps, "delta": delta, "per_card_day_epsilon": loss.per_day.epsilon}


def check_selection_input(input_kind: str) -> None:
    """Partition selection reads events (a card's taps), not pre-aggregated counts."""
    if input_kind != "events":
        raise InvalidParameterError("select_partitions works on event input", parameters="select_partitions")

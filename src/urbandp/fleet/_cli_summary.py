"""The summary ``urbandp release`` prints on the owner's terminal: the table built from privacy.json and the
input report (:func:`summary_rows`), then printed with the written paths (:func:`print_summary`)."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.table import Table


def _num(value: Any) -> str:
    """A figure of the summary in 6 significant digits; ``none`` for a missing or infinite one."""
    return "none" if value is None or value == float("inf") else f"{value:.6g}"


def _per_query(figures: Mapping[str, Any], p: Mapping[str, Any]) -> str:
    """``speed X`` and, where the speeding count was released, ``, speeding Y``."""
    return f"speed {_num(figures['speed'])}" + (
        f", speeding {_num(figures['speeding'])}" if "speeding" in p["queries"] else ""
    )


def _owner_rows(owner: Mapping[str, Any]) -> list[tuple[str, str]]:
    """The exact record counts of the input report: owner material, marked so."""
    return [
        (
            "records in / quarantined (owner only, exact)",
            f"{owner['records_in']:,} / {owner['records_quarantined']:,}",
        ),
        (
            "records used / outside (owner only, exact)",
            f"{owner['records_used']:,} / {owner['records_outside_window']:,} outside the window, "
            f"{owner['records_outside_domain']:,} outside the public domain",
        ),
        (
            "quarantine reasons (owner only)",
            ", ".join(f"{k}={v}" for k, v in owner["quarantine_reasons"].items() if v) or "none",
        ),
    ]


def _noise_rows(p: Mapping[str, Any]) -> list[tuple[str, str]]:
    """What was released and with which noise: HATs, selection, noise scales, K and the privacy loss."""
    return [
        (
            "HATs released",
            f"{p['hats_released']:,} (selection: {p['selection']['method']}, threshold "
            f"{_num(p['selection']['threshold_vehicle_days'])} vehicle-days)",
        ),
        (
            f"noise scale ({p['noise_scale_kind']})",
            _per_query(p["noise_scale"], p)
            + ("" if p["hats_released"] else " (no HAT passed: no query noise drawn)"),
        ),
        (
            "K (max HATs per vehicle-day)",
            f"{p['max_hats_per_vehicle_day']} ({p['max_hats_per_vehicle_day_source']})",
        ),
        (
            "epsilon per day",
            _per_query(p["epsilon_per_day"], p)
            + f", count/selection {_num(p['epsilon_per_day']['selection'])}",
        ),
        (
            "cumulative epsilon per day",
            f"{_num(p['cumulative_epsilon_per_day'])} (delta {p['delta_per_day']:.3g})",
        ),
        (
            "epsilon per window",
            f"{_num(p['epsilon_per_window'])} (delta {p['delta_per_window']:.3g}) over {p['days']} days",
        ),
    ]


def summary_rows(p: Mapping[str, Any], owner: Mapping[str, Any]) -> list[tuple[str, str]]:
    """The summary table's rows from the release's privacy record ``p`` (privacy.json) and its input report
    ``owner`` (owner_only/<name>/input_report.json): the privacy statement, the exact record counts (owner only),
    the released HATs, the noise and the privacy loss; the levels with ``--coarsen``, the DP clip bound with
    ``--clip-bound dp-quantile``."""
    rows = [
        (
            "privacy",
            p["dp_label"] + ("" if p["differentially_private"] else ": " + "; ".join(p["not_dp_reasons"])),
        ),
        ("neighbouring / unit / noise", f"{p['neighbouring']} / {p['privacy_unit']} / {p['mechanism']}"),
        *_owner_rows(owner),
        *_noise_rows(p),
    ]
    if "coarsen" in p:  # --coarsen: HATs per level
        levels = ", ".join(f"{lv['level']} {lv['hats_released']}" for lv in p["coarsen"]["levels"])
        rows.append(("HATs per level", f"{levels} (rule {p['coarsen']['rule']})"))
    if "clip_bound" in p:  # --clip-bound dp-quantile
        rows.append(
            ("speed clip bound (DP)", f"{_num(p['clip_bound']['bound'])} km/h (U = {_num(p['speed_max'])})")
        )
    return rows


def print_summary(p: Mapping[str, Any], paths: Mapping[str, Path], owner: Mapping[str, Any]) -> None:
    """The run's summary on the owner's terminal (stdout): :func:`summary_rows` as a table, then each written
    file's name and path."""
    console = Console()
    table = Table(title="urbandp release", show_header=False)
    for k, v in summary_rows(p, owner):
        table.add_row(k, v)
    console.print(table)
    for name, path in paths.items():
        console.print(f"  {name:10s} {path}")

"""The fleet's public privacy.json holds nothing computed from the true data (issue 30 item 4), and what is read from
the data reaches the data owner on stderr and in owner_only/<name>/input_report.json.

Two neighbouring inputs that differ by one vehicle (all its records, one day), released with the same public
parameters as real processes: their privacy.json files must be identical except the fields derived from the noise
(listed in :data:`NOISE_DERIVED`). The extra vehicle is chosen to flip every data-derived warning the release had put
in privacy.json: it holds most of the records, most of them outside the window, its in-window speeds are fast (so
the speeds no longer "look like m/s") and its timestamps are epoch seconds (so the formats seen change).
"""

from __future__ import annotations

import datetime as dt
import json
from pathlib import Path
from typing import Any

import pytest
from urbandp_process import owner_report, run_urbandp

from urbandp.errors import flag_of, name_parameters

pytestmark = pytest.mark.system

HEADER = "vehicle_id,timestamp,speed,latitude,longitude\n"
DAY = dt.datetime(2021, 11, 15, tzinfo=dt.UTC)
CELL = (21.17, 72.83)  # one H3 cell at resolution 7 (Surat)
BBOX = "21.10,72.76,21.24,72.90"  # a public extent around it
PARAMS = ("--start", "2021-11-15", "--end", "2021-11-15", "--hours", "9-10", "--epsilon-per-day", "10")
PARAMS += ("--domain-bbox", BBOX, "--no-map")

NOISE_DERIVED = {
    # the selection's noisy counts and what follows from them (post-processing of DP outputs)
    "hats_released",
    "hats_passing_selection",
    "hats_covered_by_finer_level",
    "means_withheld_small_noisy_count",
    "selection.max_noisy_count",
    "noise_scale_reason",
    # what an analyst can use, counted from the released table (issue 33)
    "usefulness.hats_released",
    "usefulness.means_shown",
    "usefulness.count_only_hats",
    "usefulness.useful_hats",
    "usefulness.median_interval_width_kmh",
    "useless_release",
    # pooling reads the noisy means shown (post-processing): how many it pooled, their spread and the useful ones
    "borrow_strength.hats_pooled",
    "borrow_strength.tau_kmh",
    "borrow_strength.useful_hats_pooled",
    # the queries are sized to k_eff = min(K, HATs released) (plan.calibrate_queries): a function of the selection's
    # DP output, so their scales and per-HAT costs move with it (both runs state the same per-day loss)
    "noise_scale.speed",
    "noise_scale.speeding",
    "noise_scale.count",
    "rho_per_hat_per_day.speed",
    "rho_per_hat_per_day.speeding",
    "rho_per_hat_per_day.count",
    "epsilon_per_hat_per_day.speed",
    "epsilon_per_hat_per_day.speeding",
    "epsilon_per_hat_per_day.count",
}
"""Fields of privacy.json that may differ between two runs on the same data: they are read from noisy outputs."""
ACCOUNTING_FOLLOWS_SELECTION = (
    "cumulative_epsilon_per_day",
    "epsilon_per_day",
    "rho_per_day",
    "epsilon_per_window",
    "rho_per_window",
    "delta_per_day",
    "delta_per_window",
    "ledger",
    "budget_split",
)
NOISE_DERIVED_WARNINGS = ("the release holds no HAT", "every released HAT's 95% interval")
"""Openings of the warnings computed from the released (noisy) tables (fleet/_guardrails.py release_warnings)."""


def _rows(vehicle: str, n: int, hour: int, speed: float, epoch: bool) -> list[str]:
    rows = []
    for i in range(n):
        t = DAY + dt.timedelta(hours=hour, seconds=3 * i)
        stamp = str(int(t.timestamp())) if epoch else t.isoformat()
        rows.append(f"{vehicle},{stamp},{speed + i % 5},{CELL[0] + (i % 7) * 1e-4},{CELL[1]}")
    return rows


def _write(folder: Path, with_extra_vehicle: bool) -> None:
    """40 slow buses, 30 records each, in one HAT at 9-10; the neighbour adds one fast vehicle-day ``x`` with 300
    records in the window and 2,000 outside it (15:00), its timestamps in epoch seconds."""
    folder.mkdir()
    rows = [r for b in range(40) for r in _rows(f"b{b}", 30, 9, 8.0, epoch=False)]
    if with_extra_vehicle:  # first in the file: the formats seen are read from the first rows
        rows = _rows("x", 300, 9, 70.0, epoch=True) + _rows("x", 2000, 15, 70.0, epoch=True) + rows
    (folder / "fleet.csv").write_text(HEADER + "\n".join(rows) + "\n")


def _public(doc: dict[str, Any]) -> dict[str, Any]:
    """privacy.json less the noise-derived fields (flattened to dotted keys)."""
    flat: dict[str, Any] = {}

    def walk(value: Any, key: str) -> None:
        if isinstance(value, dict):
            for k, v in value.items():
                walk(v, f"{key}.{k}" if key else k)
        else:
            flat[key] = value

    walk(doc, "")
    flat["warnings"] = [w for w in flat["warnings"] if not w.startswith(NOISE_DERIVED_WARNINGS)]
    return {k: v for k, v in flat.items() if k not in NOISE_DERIVED}


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for name, extra in (("without", False), ("with", True)):
        folder = tmp_path_factory.mktemp("neighbours") / name
        _write(folder, extra)
        res = run_urbandp("release", "fleet.csv", "--out", "rel", *PARAMS, cwd=folder)
        assert res.returncode == 0, res.stderr[-2000:]
        out[name] = {
            "privacy": json.loads((folder / "rel" / "privacy.json").read_text()),
            "owner": owner_report(folder / "rel"),
            "stderr": res.stderr,
        }
    return out


def test_neighbouring_inputs_give_the_same_public_privacy_json_up_to_noise(runs: dict[str, Any]) -> None:
    a, b = _public(runs["without"]["privacy"]), _public(runs["with"]["privacy"])
    differ = sorted(k for k in set(a) | set(b) if a.get(k) != b.get(k))
    if runs["without"]["privacy"]["hats_released"] != runs["with"]["privacy"]["hats_released"]:
        # the selection (a DP output) released different HAT counts: the stated loss then follows it (queries that
        # drew no noise cost nothing); the accounting is compared whenever both runs release alike
        differ = [k for k in differ if not k.startswith(ACCOUNTING_FOLLOWS_SELECTION)]
    assert differ == [], {k: (a.get(k), b.get(k)) for k in differ}
    assert a["differentially_private"] is True


OWNER_WARNING_PARAMETERS = {  # what each owner warning names
    "look like m/s": ("speed_unit", "speed_unit_since"),
    "most valid records fall outside": ("hours", "start", "end", "dates", "timezone"),
    "epoch timestamps": ("timezone",),
}


def _parameters(text: str) -> tuple[str, ...]:
    return next((p for key, p in OWNER_WARNING_PARAMETERS.items() if key in text), ())


def test_the_data_derived_warnings_reach_the_owner_only(runs: dict[str, Any]) -> None:
    without, with_x = runs["without"], runs["with"]
    # the data flipped each warning: the slow fleet looks like m/s; the extra vehicle puts most records outside
    assert any("look like m/s" in w for w in without["owner"]["warnings"])
    assert not any("look like m/s" in w for w in with_x["owner"]["warnings"])
    assert any("most valid records fall outside the window" in w for w in with_x["owner"]["warnings"])
    assert any("epoch timestamps" in w for w in with_x["owner"]["warnings"])
    assert without["owner"]["input"]["timestamp_formats_seen"] == {"fleet.csv": "iso (T, UTC offset)"}
    assert with_x["owner"]["input"]["timestamp_formats_seen"] == {"fleet.csv": "epoch-s"}
    assert with_x["owner"]["input"]["empty_lines_skipped"] == 0
    for run in (without, with_x):
        for text in run["owner"]["warnings"]:  # the owner's JSON names parameters, the command line flags
            assert f"urbandp: warning: {name_parameters(text, _parameters(text), flag_of)}" in run["stderr"]
            assert "--" not in text
        public = json.dumps(run["privacy"])
        assert "look like m/s" not in public and "most valid records fall outside" not in public
        assert "timestamp_formats_seen" not in public and "empty_lines_skipped" not in public

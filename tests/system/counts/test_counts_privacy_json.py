"""The public privacy.json of `urbandp counts release` holds nothing computed from the true data (issue 30).

Two inputs that differ by one privacy unit (one event, one card-day, one unit of one pre-aggregated count), the
same public parameters: the public files must be identical up to noise-derived fields. Exact row counts,
quarantine tallies and truncation counts belong in owner_only/<name>/input_report.json, never here.
"""

from __future__ import annotations

import json
from pathlib import Path

import polars as pl
import pytest
from urbandp_process import assert_refused, run_urbandp

pytestmark = pytest.mark.system

#: fields of the counts privacy.json that may change with the noise draw: none (every field is a public parameter
#: or computed from them; the published cells and their count live in the data files, not here)
NOISE_FIELDS: frozenset[str] = frozenset()


@pytest.fixture(scope="module")
def inputs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """Synthetic taps and their neighbours: one event less, one card-day less, one count one higher."""
    root = tmp_path_factory.mktemp("neighbours")
    taps = root / "taps"
    made = run_urbandp(
        "counts", "synth", "--out", str(taps), "--days", "1", "--trips-per-day", "300",
        "--ferry-trips-per-day", "50", "--seed", "3",
    )  # fmt: skip
    assert made.returncode == 0, made.stderr
    events = pl.read_csv(taps / "events.csv", infer_schema=False)
    events.slice(1).write_csv(root / "minus_one_event.csv")
    # the card of the first event taps only on the synthetic data's one day: removing it removes one card-day
    events.filter(pl.col("card_id") != events["card_id"][0]).write_csv(root / "minus_one_card_day.csv")
    ts = pl.col("timestamp").str.to_datetime()
    counts = (
        events.group_by(
            "mode",
            ts.dt.date().cast(pl.String).alias("day"),
            "tap",
            ts.dt.truncate("15m").dt.strftime("%H:%M").alias("bin"),
            "location",
        )
        .len("count")
        .sort(pl.all())
    )
    counts.write_csv(root / "counts.csv")
    first = pl.int_range(pl.len()) == 0
    counts.with_columns(pl.when(first).then(pl.col("count") + 1).otherwise("count").alias("count")).write_csv(
        root / "counts_plus_one.csv"
    )
    return {
        "events": taps / "events.csv",
        "domain": taps / "domain.json",
        "minus_one_event": root / "minus_one_event.csv",
        "minus_one_card_day": root / "minus_one_card_day.csv",
        "counts": root / "counts.csv",
        "counts_plus_one": root / "counts_plus_one.csv",
    }


def _public_files(inputs: dict[str, Path], name: str, args: list[str], out: Path) -> dict[str, str]:
    """Run one release (out folder always named ``rel``: its name is public and appears in privacy.json) and
    return its public metadata files (privacy.json, domain.json when written) with noise-derived fields removed."""
    given = ["--input-kind", "counts"] if name.startswith("counts") else []
    res = run_urbandp("counts", "release", str(inputs[name]), *given, *args, "--out", str(out / "rel"))
    assert res.returncode == 0, res.stderr[-2000:]
    privacy = json.loads((out / "rel" / "privacy.json").read_text())
    for field in NOISE_FIELDS:
        privacy.pop(field, None)
    files = {"privacy.json": json.dumps(privacy, sort_keys=True, indent=1)}
    if (out / "rel" / "domain.json").exists():
        files["domain.json"] = (out / "rel" / "domain.json").read_text()
    return files


DOMAIN = ["--domain", "DOMAIN"]


@pytest.mark.parametrize(
    ("original", "neighbour", "args"),
    [
        ("events", "minus_one_event", [*DOMAIN, "--epsilon", "1"]),
        ("events", "minus_one_event", [*DOMAIN, "--epsilon", "1", "--top-k", "3", "--top-k-epsilon", "0.5",
                                       "--consistent"]),
        ("events", "minus_one_card_day", [*DOMAIN, "--epsilon", "1", "--mechanism", "gaussian", "--delta",
                                          "1e-6", "--unit", "card-day", "--max-events", "4"]),
        ("events", "minus_one_event", [*DOMAIN, "--method", "data61-2016", "--noise-scale", "1.4"]),
        ("events", "minus_one_event", ["--select-partitions", "--epsilon", "1", "--delta", "1e-6"]),
        ("counts", "counts_plus_one", [*DOMAIN, "--epsilon", "1"]),
        ("counts", "counts_plus_one", [*DOMAIN, "--epsilon", "1", "--suppress-below", "5"]),
        ("counts", "counts_plus_one", [*DOMAIN, "--epsilon", "1", "--suppress-below", "5", "--marginal-epsilon",
                                       "0.5"]),
    ],
)  # fmt: skip
def test_privacy_json_does_not_change_with_the_true_data(
    inputs: dict[str, Path], tmp_path: Path, original: str, neighbour: str, args: list[str]
) -> None:
    args = [str(inputs["domain"]) if a == "DOMAIN" else a for a in args]
    a = _public_files(inputs, original, args, tmp_path / "a")
    b = _public_files(inputs, neighbour, args, tmp_path / "b")
    assert a == b
    # the owner material is still there, and sees the removed row
    report = tmp_path / "a" / "owner_only" / "rel" / "input_report.json"
    if original == "events" and report.exists():
        other = (tmp_path / "b" / "owner_only" / "rel" / "input_report.json").read_text()
        assert json.loads(report.read_text()) != json.loads(other)


def test_delta_099_refused_in_one_line(inputs: dict[str, Path], tmp_path: Path) -> None:
    for extra in ([], ["--mechanism", "gaussian"], ["--select-partitions"]):
        domain = [] if extra == ["--select-partitions"] else ["--domain", str(inputs["domain"])]
        res = run_urbandp(
            "counts", "release", str(inputs["events"]), *domain, *extra, "--epsilon", "1", "--delta", "0.99",
            "--out", str(tmp_path / "o"),
        )  # fmt: skip
        assert_refused(res, "--delta 0.99", others="none")
        assert not (tmp_path / "o").exists()

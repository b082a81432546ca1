"""`urbandp counts synth` + `urbandp counts release` driven like a user, on generated data."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import polars as pl
import pytest
from typer.testing import CliRunner

from urbandp.cli import app

pytestmark = pytest.mark.system
RUN = CliRunner()


def run(*args: str) -> tuple[int, str]:
    res = RUN.invoke(app, list(args))
    return res.exit_code, res.output


@pytest.fixture(scope="module")
def taps(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("taps")
    code, text = run(
        "counts",
        "synth",
        "--out",
        str(out),
        "--days",
        "2",
        "--trips-per-day",
        "3000",
        "--ferry-trips-per-day",
        "800",
        "--seed",
        "7",
    )
    assert code == 0, text
    assert json.loads(text)["rows"] > 7000
    return out


def test_release_card_day_laplace(taps: Path, tmp_path: Path) -> None:
    out = tmp_path / "rel"
    code, text = run(
        "counts",
        "release",
        str(taps / "events.csv"),
        "--domain",
        str(taps / "domain.json"),
        "--unit",
        "card-day",
        "--max-events",
        "4",
        "--epsilon",
        "1",
        "--out",
        str(out),
    )
    assert code == 0, text
    priv = json.loads((out / "privacy.json").read_text())
    assert priv["epsilon"] == 1.0 and priv["noise_scale"] == 4.0 and priv["delta"] == 0.0
    assert priv["unit"] == "card-day (at most 4 events)"
    assert priv["neighbouring"] == "add/remove one card-day (at most 4 events)"
    assert priv["sensitivity"]["l1"] == 4 and priv["sensitivity"]["l2"] == 2.0
    assert priv["zeros_perturbed"] is True and priv["mechanism"] == "discrete_laplace"
    joint = pl.read_csv(out / "joint.csv")
    domain = json.loads((taps / "domain.json").read_text())
    n_places = sum(len(v) for v in domain["places"].values())
    assert joint.height == 2 * 2 * 96 * n_places  # every cell of the public domain, zeros included
    # time-only marginal == sums of the published joint, exactly
    time = pl.read_csv(out / "time.csv")
    sums = joint.group_by(["mode", "day", "tap", "bin"]).agg(pl.col("count").sum().alias("s"))
    merged = time.join(sums, on=["mode", "day", "tap", "bin"])
    assert merged.height == time.height and (merged["count"] == merged["s"]).all()
    # raw rejected rows are data-owner material: beside the release, never inside it, and listed as not DP
    assert not (out / "quarantine.csv").exists()
    assert (tmp_path / "owner_only" / "rel" / "quarantine.csv").is_file()
    assert any("quarantine.csv" in k for k in priv["not_dp_outputs"])
    assert "input_report_not_private" not in priv
    # per-card privacy over the 2-day window next to the per-card-day figure (group privacy)
    assert priv["per_card_window"]["days"] == 2 and priv["per_card_window"]["epsilon"] == 2.0
    assert priv["per_card_window"]["per_card_day_epsilon"] == 1.0


def test_release_options_parquet_consistent_topk_gaussian(taps: Path, tmp_path: Path) -> None:
    out = tmp_path / "rel"
    code, text = run(
        "counts",
        "release",
        str(taps / "events.csv"),
        "--domain",
        str(taps / "domain.json"),
        "--epsilon",
        "1",
        "--consistent",
        "--top-k",
        "3",
        "--top-k-epsilon",
        "0.5",
        "--suppress-below",
        "5",
        "--format",
        "parquet",
        "--out",
        str(out),
    )
    assert code == 0, text
    priv = json.loads((out / "privacy.json").read_text())
    assert priv["total_epsilon"] == 1.5 and len(priv["ledger"]["entries"]) == 2
    joint = pl.read_parquet(out / "joint.parquet")
    assert joint["count"].drop_nulls().min() >= 5 and joint["count"].null_count() > 0
    assert pl.read_parquet(out / "top_k.parquet").height == 3
    assert priv["top_k"]["tap"] == "all" and priv["top_k"]["epsilon"] == pytest.approx(0.5, abs=1e-9)
    out2 = tmp_path / "gauss"
    code, text = run(
        "counts",
        "release",
        str(taps / "events.csv"),
        "--domain",
        str(taps / "domain.json"),
        "--mechanism",
        "gaussian",
        "--epsilon",
        "1",
        "--delta",
        "1e-6",
        "--out",
        str(out2),
    )
    assert code == 0, text
    g = json.loads((out2 / "privacy.json").read_text())
    assert g["mechanism"] == "discrete_gaussian" and g["delta"] == 1e-6 and g["epsilon"] <= 1.0


def test_data61_method_is_labelled_and_skips_zeros(taps: Path, tmp_path: Path) -> None:
    out = tmp_path / "d61"
    code, text = run(
        "counts",
        "release",
        str(taps / "events.csv"),
        "--domain",
        str(taps / "domain.json"),
        "--method",
        "data61-2016",
        "--noise-scale",
        "1.4",
        "--out",
        str(out),
    )
    assert code == 0, text
    priv = json.loads((out / "privacy.json").read_text())
    assert priv["differentially_private"] is False and "not differentially private" in priv["label"]
    joint = pl.read_csv(out / "joint.csv")
    assert (joint["count"] >= 18).all()  # released iff noisy > 18, then rounded
    truth = np.load(taps / "truth_joint.npy")
    assert joint.height <= int(np.count_nonzero(truth))  # only raw non-zero cells can ever appear


def test_partition_selection_reports_delta(taps: Path, tmp_path: Path) -> None:
    out = tmp_path / "ps"
    code, text = run(
        "counts",
        "release",
        str(taps / "events.csv"),
        "--select-partitions",
        "--delta",
        "1e-6",
        "--epsilon",
        "1",
        "--out",
        str(out),
    )
    assert code == 0, text
    priv = json.loads((out / "privacy.json").read_text())
    assert priv["threshold"] == 14 and 0 < priv["delta"] <= 1e-6 and priv["epsilon"] == 1.0


def test_pre_aggregated_counts_input(taps: Path, tmp_path: Path) -> None:
    counts = tmp_path / "counts.csv"
    pl.DataFrame(
        {
            "mode": ["ferry", "ferry", "ferry"],
            "day": ["2016-08-08"] * 3,
            "tap": ["on", "off", "on"],
            "bin": ["08:00", "08:30", "08:15"],
            "location": ["Manly Wharf"] * 3,
            "count": ["12", "x", "3"],
        }
    ).write_csv(counts)
    code, text = run(
        "counts",
        "release",
        str(counts),
        "--input-kind",
        "counts",
        "--domain",
        str(taps / "domain.json"),
        "--epsilon",
        "1",
        "--out",
        str(tmp_path / "o"),
    )
    assert code == 0, text
    q = pl.read_csv(tmp_path / "owner_only" / "o" / "quarantine.csv")
    assert q["reason"].to_list() == ["count is not a non-negative integer"]


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (
            ["counts", "release", "/nonexistent.csv", "--epsilon", "1", "--out", "x"],
            "input /nonexistent.csv: not found",
        ),
        (["counts", "release", "EVENTS", "--epsilon", "1", "--out", "x"], "no public domain"),
        (
            ["counts", "release", "EVENTS", "--domain", "DOMAIN", "--out", "x"],
            "give --epsilon or --noise-scale",
        ),
        (
            [
                "counts",
                "release",
                "EVENTS",
                "--domain",
                "DOMAIN",
                "--epsilon",
                "1",
                "--unit",
                "person",
                "--out",
                "x",
            ],
            "unit must be",
        ),
        (
            [
                "counts",
                "release",
                "EVENTS",
                "--domain",
                "DOMAIN",
                "--epsilon",
                "2",
                "--budget-epsilon",
                "1",
                "--out",
                "x",
            ],
            "budget exceeded",
        ),
        (
            ["counts", "release", "EVENTS", "--domain", "BADDOMAIN", "--epsilon", "1", "--out", "x"],
            "not valid JSON",
        ),
        (
            ["counts", "release", "NOTAP", "--domain", "DOMAIN", "--epsilon", "1", "--out", "x"],
            "missing column(s) tap",
        ),
        (["counts", "release", "EMPTY", "--domain", "DOMAIN", "--epsilon", "1", "--out", "x"], "no rows"),
        (
            [
                "counts",
                "release",
                "EVENTS",
                "--domain",
                "DOMAIN",
                "--method",
                "data61-2016",
                "--epsilon",
                "1",
                "--out",
                "x",
            ],
            "needs --noise-scale",
        ),
        (
            [
                "counts",
                "release",
                "EVENTS",
                "--domain",
                "DOMAIN",
                "--epsilon",
                "1",
                "--noise-scale",
                "2",
                "--out",
                "x",
            ],
            "only one of",
        ),
        (
            [
                "counts",
                "release",
                "EVENTS",
                "--domain",
                "DOMAIN",
                "--epsilon",
                "1",
                "--top-k",
                "2",
                "--top-k-epsilon",
                "0.5",
                "--budget-epsilon",
                "1.2",
                "--out",
                "x",
            ],
            "budget exceeded",
        ),
        (
            [
                "counts",
                "release",
                "EVENTS",
                "--domain",
                "DOMAIN",
                "--epsilon",
                "1",
                "--top-k",
                "2",
                "--top-k-epsilon",
                "1",
                "--top-k-tap",
                "sideways",
                "--out",
                "x",
            ],
            "not a tap of the domain",
        ),
    ],
)
def test_bad_input_one_line_exit_2(taps: Path, tmp_path: Path, args: list[str], message: str) -> None:
    (tmp_path / "bad.json").write_text("{not json")
    (tmp_path / "notap.csv").write_text("mode,timestamp,location\nbus,2016-08-08 08:00,2000\n")
    (tmp_path / "empty.csv").write_text("mode,timestamp,tap,location\n")
    subst = {
        "EVENTS": str(taps / "events.csv"),
        "DOMAIN": str(taps / "domain.json"),
        "BADDOMAIN": str(tmp_path / "bad.json"),
        "NOTAP": str(tmp_path / "notap.csv"),
        "EMPTY": str(tmp_path / "empty.csv"),
    }
    args = [subst.get(a, a) for a in args]
    args[args.index("--out") + 1] = str(tmp_path / "out")
    code, text = run(*args)
    assert code == (4 if message == "budget exceeded" else 2)  # errors.py: budget exceeded is 4
    assert text.count("\n") == 1 and text.startswith("urbandp: error:") and message in text


def test_dry_run_states_the_cost_without_reading_data(tmp_path: Path) -> None:
    (tmp_path / "not-read.csv").write_bytes(b"\x00 not a table: a dry run must not read it")
    code, text = run(
        "counts",
        "release",
        str(tmp_path / "not-read.csv"),
        "--out",
        str(tmp_path / "o"),
        "--unit",
        "card-day",
        "--max-events",
        "4",
        "--epsilon",
        "1",
        "--dry-run",
    )
    assert code == 0, text
    plan = json.loads(text)
    assert plan["noise_scale"] == 4.0 and plan["epsilon"] == 1.0 and plan["sensitivity"]["l1"] == 4
    assert not (tmp_path / "o").exists()


def _release_args(taps: Path, out: Path, *extra: str) -> list[str]:
    return [
        "counts",
        "release",
        str(taps / "events.csv"),
        "--domain",
        str(taps / "domain.json"),
        *extra,
        "--out",
        str(out),
    ]


def test_sparse_sampling_is_the_default_with_a_threshold(taps: Path, tmp_path: Path) -> None:
    out = tmp_path / "sp"
    code, text = run(*_release_args(taps, out, "--epsilon", "1", "--suppress-below", "18"))
    assert code == 0, text
    assert json.loads(text)["sampling"] == "sparse"
    priv = json.loads((out / "privacy.json").read_text())
    assert priv["sampling"] == "sparse" and priv["epsilon"] == 1.0 and priv["zeros_perturbed"] is True
    assert priv["marginals"] == "derived_from_published_joint"
    joint = pl.read_csv(out / "joint.csv")
    assert joint["count"].null_count() == 0 and (joint["count"] >= 18).all()  # published cells only
    loc = pl.read_csv(out / "location.csv")
    assert loc["count"].sum() == joint["count"].sum()  # marginals = sums of the published cells
    # dense stays available and is the choice without a threshold
    code, text = run(
        *_release_args(
            taps, tmp_path / "dn", "--epsilon", "1", "--suppress-below", "18", "--sampling", "dense"
        )
    )
    assert code == 0 and json.loads(text)["sampling"] == "dense"
    code, text = run(*_release_args(taps, tmp_path / "dn2", "--epsilon", "1"))
    assert code == 0 and json.loads(text)["sampling"] == "dense"
    # charged marginals: own noise, charged to the ledger
    code, text = run(
        *_release_args(
            taps, tmp_path / "ch", "--epsilon", "1", "--suppress-below", "18", "--marginal-epsilon", "0.5"
        )
    )
    assert code == 0, text
    ch = json.loads((tmp_path / "ch" / "privacy.json").read_text())
    assert ch["marginals"] == "charged_noisy_marginals" and ch["total_epsilon"] == pytest.approx(2.0)
    assert len(ch["ledger"]["entries"]) == 3


def test_switching_format_leaves_no_old_files(taps: Path, tmp_path: Path) -> None:
    out = tmp_path / "fmt"
    assert run(*_release_args(taps, out, "--epsilon", "1", "--suppress-below", "18"))[0] == 0
    assert (out / "joint.csv").is_file()
    assert (
        run(
            *_release_args(
                taps, out, "--epsilon", "1", "--suppress-below", "18", "--format", "parquet", "--overwrite"
            )
        )[0]
        == 0
    )
    assert sorted(p.name for p in out.iterdir()) == [
        ".urbandp-output.json",
        "domain.json",
        "joint.parquet",
        "location.parquet",
        "privacy.json",
        "time.parquet",
    ]
    assert json.loads((out / "privacy.json").read_text(), parse_constant=_no_constants)


def _no_constants(name: str) -> None:
    raise AssertionError(f"non-strict JSON constant {name}")


def _write_domain(path: Path, **override: object) -> Path:
    dom: dict[str, object] = {
        "days": ["2016-08-08"],
        "taps": ["on", "off"],
        "bin_minutes": 15,
        "places": {"ferry": ["Manly Wharf"]},
    }
    dom.update(override)
    path.write_text(json.dumps(dom))
    return path


@pytest.mark.parametrize(
    ("override", "message"),
    [
        ({"days": 7}, '"days" must be a list'),
        ({"bin_minutes": "15"}, '"bin_minutes" must be an integer'),
        ({"bin_minutes": 15.5}, '"bin_minutes" must be an integer'),
        ({"bin_minutes": None}, '"bin_minutes" must be an integer'),
        ({"taps": None}, '"taps" must be a list'),
        ({"places": {"bus": "2000"}}, '"places" must map'),
        (
            {
                "days": {"start": "1950-01-01", "end": "2049-12-31"},
                "places": {"bus": [str(i) for i in range(20000)]},
            },
            "domain too large",
        ),
        ({"days": {"start": "0001-01-01", "end": "9999-12-31"}}, "at most 36,600"),
    ],
)
def test_bad_domain_one_line_exit_2(
    taps: Path, tmp_path: Path, override: dict[str, object], message: str
) -> None:
    dom = _write_domain(tmp_path / "dom.json", **override)
    code, text = run(
        "counts",
        "release",
        str(taps / "events.csv"),
        "--domain",
        str(dom),
        "--epsilon",
        "1",
        "--sampling",
        "dense",
        "--out",
        str(tmp_path / "o"),
    )
    assert code == 2, text
    assert text.count("\n") == 1 and text.startswith("urbandp: error:") and message in text
    assert not (tmp_path / "o").exists()


def test_huge_domain_message_gives_cells_and_bytes(taps: Path, tmp_path: Path) -> None:
    dom = _write_domain(
        tmp_path / "d.json",
        days={"start": "1950-01-01", "end": "2049-12-31"},
        places={"bus": [str(i) for i in range(4000)]},
    )
    code, text = run(
        "counts",
        "release",
        str(taps / "events.csv"),
        "--domain",
        str(dom),
        "--epsilon",
        "1",
        "--out",
        str(tmp_path / "o"),
    )
    assert code == 2 and "cells" in text and "bytes" in text and "GiB" in text


@pytest.mark.parametrize("count", ["-2.8e19", "9223372036854775808", "-28000000000000000000", "1e30", "3.5"])
def test_count_input_out_of_int64_is_quarantined(taps: Path, tmp_path: Path, count: str) -> None:
    counts = tmp_path / "counts.csv"
    counts.write_text(f"mode,day,tap,bin,location,count\nferry,2016-08-08,on,08:00,Manly Wharf,{count}\n")
    code, text = run(
        "counts",
        "release",
        str(counts),
        "--input-kind",
        "counts",
        "--domain",
        str(taps / "domain.json"),
        "--epsilon",
        "1",
        "--out",
        str(tmp_path / "o"),
    )
    assert code == 2, text
    assert text.count("\n") == 1 and "all 1 quarantined" in text and "non-negative integer" in text


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        (
            ["--suppress-below", "18", "--marginals", "charged", "--marginal-scale", "0"],
            "--marginal-scale must be a finite number > 0",
        ),
        (["--suppress-below", "18", "--marginals", "charged", "--marginal-scale", "nan"], "finite"),
        (["--method", "data61-2016", "--noise-scale", "1.4", "--threshold", "nan"], "finite"),
        (["--suppress-below", "nan"], "finite"),
        (["--delta", "-1"], "--delta must be a number >= 0"),
        (["--noise-scale", "inf"], "finite"),
        (["--sampling", "sparse"], "needs --suppress-below"),
        (["--sampling", "sparse", "--suppress-below", "-3"], "above 0"),
        (["--sampling", "fast", "--suppress-below", "3"], "--sampling must be one of"),
        (["--marginals", "charged", "--suppress-below", "3"], "needs --marginal-epsilon"),
    ],
)
def test_bad_numbers_refused(taps: Path, tmp_path: Path, extra: list[str], message: str) -> None:
    args = _release_args(taps, tmp_path / "o", *extra)
    if "--noise-scale" not in extra:
        args[5:5] = ["--epsilon", "1"]
    code, text = run(*args)
    assert code == 2, text
    assert text.count("\n") == 1 and message in text


def test_out_is_a_file_one_line(taps: Path, tmp_path: Path) -> None:
    f = tmp_path / "file"
    f.write_text("x")
    for out in (f, f / "sub"):
        code, text = run(*_release_args(taps, out, "--epsilon", "1"))
        assert code == 2 and text.count("\n") == 1 and "--out" in text
    code, text = run("counts", "synth", "--out", str(f))
    assert code == 2 and text.count("\n") == 1


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        (["--seed", "-1"], "--seed"),
        (["--days", "100000"], "limit"),
        (["--trips-per-day", "100000000"], "at most"),
    ],
)
def test_synth_bounds(tmp_path: Path, extra: list[str], message: str) -> None:
    code, text = run("counts", "synth", "--out", str(tmp_path / "s"), *extra)
    assert code == 2 and text.count("\n") == 1 and message in text
    assert not (tmp_path / "s").exists()


def test_dry_run_with_domain_gives_the_per_card_figure(taps: Path, tmp_path: Path) -> None:
    (tmp_path / "not-read.csv").write_bytes(b"\x00 not a table: a dry run must not read it")
    code, text = run(
        "counts",
        "release",
        str(tmp_path / "not-read.csv"),
        "--domain",
        str(taps / "domain.json"),
        "--unit",
        "card-day",
        "--max-events",
        "4",
        "--epsilon",
        "1",
        "--suppress-below",
        "18",
        "--marginal-epsilon",
        "0.5",
        "--dry-run",
        "--out",
        str(tmp_path / "o"),
    )
    assert code == 0, text
    plan = json.loads(text.splitlines()[0])  # then the threshold advice line (stderr)
    assert text.splitlines()[1].startswith(
        "urbandp: advice: --suppress-below 37 keeps"
    )  # 2 days: 16,512 cells
    assert plan["sampling"] == "sparse" and plan["marginals"] == "charged" and plan["total_epsilon"] == 2.0
    assert plan["per_card_window"]["days"] == 2 and plan["per_card_window"]["epsilon"] == 4.0
    assert not (tmp_path / "o").exists()

"""Issue 30, survey wing: what a survey release copies, what privacy.json may hold, and what --dataset charges.

Every run is a real ``python -m urbandp`` process (tests/system/urbandp_process.py).
"""

from __future__ import annotations

import json
import math
import shlex
import time
from collections.abc import Callable
from pathlib import Path

import polars as pl
import pytest
from urbandp_process import assert_refused, run_urbandp

from urbandp.survey import _randomized_response as rr

pytestmark = pytest.mark.system

MODELS = {"gas": ["Camry", "Civic", "F-150"], "electric": ["Leaf", "Bolt"]}


def _write_models(folder: Path) -> Path:
    path = folder / "models.csv"
    path.write_text("".join(f"{g},{m}\n" for g, ms in MODELS.items() for m in ms))
    return path


def _vehicles(folder: Path, *, neighbour: bool) -> None:
    """40 gas answers and one electric one; the neighbour replaces the electric respondent's row (its answer
    off the list, its group undeclared) and one gas answer, so one group is empty and rows are quarantined."""
    rows = [(i, "gas", MODELS["gas"][i % 3], f"note {i}") for i in range(40)] + [
        (40, "electric", "Leaf", "x")
    ]
    if neighbour:
        rows[40] = (40, "steam", "Stanley", "x")
        rows[0] = (0, "gas", "Delorean", "note 0")
    pl.DataFrame(rows, schema=["household", "fuel", "model", "free_text"], orient="row").write_csv(
        folder / "vehicles.csv"
    )
    _write_models(folder)


def _homes(folder: Path, *, neighbour: bool) -> None:
    """30 homes inside the box; the neighbour moves one of them far outside it and blanks another."""
    lat = [44.95 + 0.001 * i for i in range(30)]
    lon = [-93.25 - 0.001 * i for i in range(30)]
    if neighbour:
        lat[3], lon[3] = 47.5, -90.0
        lat[5] = math.nan
    pl.DataFrame(
        {"household": range(30), "lat": lat, "lon": lon, "income": [50_000 + i for i in range(30)]}
    ).write_csv(folder / "homes.csv")


def _trips(folder: Path, *, neighbour: bool) -> None:
    """60 trips between 5 declared blocks; the neighbour gives one trip an undeclared block."""
    frm = [1 + i % 5 for i in range(60)]
    to = [1 + (i * 2) % 5 for i in range(60)]
    if neighbour:
        frm[7] = 99
    pl.DataFrame({"trip": range(60), "from": frm, "to": to, "purpose": ["work"] * 60}).write_csv(
        folder / "trips.csv"
    )


def _trajectories(folder: Path, *, neighbour: bool) -> None:
    """Three straight trips of 12 points 50 m apart; the neighbour adds a 13th point to trip 2."""
    rows = []
    for trip in (1, 2, 3):
        n = 13 if neighbour and trip == 2 else 12
        rows += [(trip, s, 44.95 + trip * 0.01 + s * 50 / 111_320, -93.25, f"t{s}") for s in range(n)]
    pl.DataFrame(rows, schema=["trip", "seq", "lat", "lon", "stamp"], orient="row").write_csv(
        folder / "trajectories.csv"
    )


RANDOMIZE = "survey randomize vehicles.csv --column model --categories-file models.csv --within fuel"
RELEASES: dict[str, tuple[Callable[..., None], list[str]]] = {
    "randomize": (_vehicles, shlex.split(f"{RANDOMIZE} --epsilon 1")),
    "report-replacement": (_vehicles, shlex.split(f"{RANDOMIZE} --method report-replacement --p 0.5")),
    "perturb-points": (
        _homes,
        shlex.split(
            "survey perturb-points homes.csv --lat lat --lon lon --epsilon-per-metre 0.01 "
            "--bbox 44.9,-93.4,45.1,-93.1"
        ),
    ),
    "od-randomize": (
        _trips,
        shlex.split("survey od-randomize trips.csv --from from --to to --blocks 5 --epsilon 2"),
    ),
    "perturb-trajectories": (
        _trajectories,
        shlex.split(
            "survey perturb-trajectories trajectories.csv --lat lat --lon lon --trip trip --order seq --epsilon 20 "
            "--max-step-metres 200"
        ),
    ),
    "escape": (
        _homes,
        shlex.split("survey escape homes.csv --lat lat --lon lon --grid 5 --bn 1 --runs 1"),
    ),
}


@pytest.mark.parametrize("name", sorted(RELEASES))
def test_privacy_json_is_identical_for_neighbouring_inputs(name: str, tmp_path: Path) -> None:
    """Two inputs that differ in one unit, same public parameters: the public privacy.json must be identical
    (no field of any survey release is noise-derived, so nothing is excluded). The old code published row counts,
    per-trip epsilons of the longest trip, data-dependent group probabilities and quarantine file lists."""
    make, args = RELEASES[name]
    docs = []
    for neighbour in (False, True):
        folder = tmp_path / ("b" if neighbour else "a")
        folder.mkdir()
        make(folder, neighbour=neighbour)
        res = run_urbandp(*args, "--out", "rel", cwd=folder)
        assert res.returncode == 0, res.stderr[-2000:]
        docs.append(json.loads((folder / "rel" / "privacy.json").read_text()))
    assert docs[0] == docs[1]


def test_release_copies_only_declared_public_columns(tmp_path: Path) -> None:
    """Default: only the noisy column, --within and --id; --keep-columns adds the user's public columns and is
    recorded as a declaration, not a NOT DP reason (the old code copied every column and said NOT DP)."""
    _vehicles(tmp_path, neighbour=False)
    base = RELEASES["randomize"][1]
    res = run_urbandp(*base, "--id", "household", "--out", "r1", cwd=tmp_path)
    assert res.returncode == 0, res.stderr
    assert pl.read_csv(tmp_path / "r1" / "randomized.csv").columns == ["household", "fuel", "model"]
    priv = json.loads((tmp_path / "r1" / "privacy.json").read_text())
    assert priv["differentially_private"] is True and priv["not_dp_reasons"] == []
    assert priv["public_columns"]["columns"] == {"fuel": "within", "household": "id_column"}

    res = run_urbandp(*base, "--keep-columns", "free_text", "--out", "r2", cwd=tmp_path)
    assert res.returncode == 0, res.stderr
    assert pl.read_csv(tmp_path / "r2" / "randomized.csv").columns == ["fuel", "model", "free_text"]
    priv = json.loads((tmp_path / "r2" / "privacy.json").read_text())
    assert priv["public_columns"]["columns"] == {"fuel": "within", "free_text": "keep_columns"}

    assert_refused(
        run_urbandp(*base, "--keep-columns", "nope", "--out", "r3", cwd=tmp_path), "missing column"
    )
    assert_refused(
        run_urbandp(*base, "--keep-columns", "model", "--out", "r4", cwd=tmp_path),
        "both perturbed and copied",
    )
    assert not (tmp_path / "r3").exists() and not (tmp_path / "r4").exists()


def _history(folder: Path, dataset: str) -> str:
    res = run_urbandp("budget", "history", dataset, "--budget-store", "b.sqlite", cwd=folder)
    assert res.returncode == 0, res.stderr
    return res.stdout


def test_dataset_release_is_dp_and_charged_or_refused(tmp_path: Path) -> None:
    """As a new user: each survey release with --dataset is labelled DP and committed, or refused before any
    noise (the old code labelled randomize and perturb-points NOT DP and still booked them as DP spend; then
    perturb-points was booked as DP although its loss per respondent is unbounded: it is now refused)."""
    _vehicles(tmp_path, neighbour=False)
    _homes(tmp_path, neighbour=False)
    _trips(tmp_path, neighbour=False)
    _trajectories(tmp_path, neighbour=False)
    for name, unit in (("people", "respondent"), ("journeys", "trip")):
        res = run_urbandp("budget", "init", name, "--unit", unit, "--epsilon-total", "20", "--budget-store",
                          "b.sqlite", cwd=tmp_path)  # fmt: skip
        assert res.returncode == 0, res.stderr
    charge = ["--budget-store", "b.sqlite", "--survey-date", "2021-10-05"]
    for name, dataset in (("randomize", "people"), ("od-randomize", "journeys")):
        res = run_urbandp(*RELEASES[name][1], "--dataset", dataset, *charge, "--out", name, cwd=tmp_path)
        assert res.returncode == 0, res.stderr
        priv = json.loads((tmp_path / name / "privacy.json").read_text())
        assert priv["differentially_private"] is True and priv["not_dp_reasons"] == [], priv["not_dp_reasons"]
    people, journeys = _history(tmp_path, "people"), _history(tmp_path, "journeys")
    assert people.count("committed") == 1 and "survey-krr" in people
    assert journeys.count("committed") == 1 and "survey-od-rr" in journeys

    refused = {
        "report-replacement": ("people", "report-replacement builds its replacements"),
        "perturb-trajectories": ("journeys", "start and end point unchanged"),
        "perturb-points": ("people", "geo-indistinguishability, not differential privacy"),
    }
    for name, (dataset, needle) in refused.items():
        res = run_urbandp(*RELEASES[name][1], "--dataset", dataset, *charge, "--out", name, cwd=tmp_path)
        assert_refused(res, needle)
        assert not (tmp_path / name).exists()
    od_hist = [*RELEASES["od-randomize"][1][:-2], "--keep-probability", "0.5", "--method", "histogram"]
    assert_refused(
        run_urbandp(*od_hist, "--dataset", "journeys", *charge, "--out", "h", cwd=tmp_path), "true histogram"
    )
    assert _history(tmp_path, "people") == people and _history(tmp_path, "journeys") == journeys


def test_randomize_epsilon_40_is_released_at_the_float_limit_and_150_is_refused(tmp_path: Path) -> None:
    """--epsilon 40 was exit 70 (the truth probability rounded to 1.0); it now spends the largest epsilon k-RR
    can in double precision, says so on stderr, and charges that. Above SANE_EPSILON (100): refused, exit 2."""
    _vehicles(tmp_path, neighbour=False)
    base = shlex.split(RANDOMIZE)
    res = run_urbandp(*base, "--epsilon", "40", "--out", "e40", cwd=tmp_path)
    assert res.returncode == 0, res.stderr
    assert "urbandp: warning: --epsilon 40: k-RR spends at most" in res.stderr
    priv = json.loads((tmp_path / "e40" / "privacy.json").read_text())
    expected = rr.krr_max_epsilon(3)  # the gas list has 3 models, the electric list 2: the larger map wins
    assert priv["epsilon"] == pytest.approx(expected, rel=1e-12) and 37 < expected < 40
    assert priv["ledger"]["entries"][0]["epsilon"] == pytest.approx(expected, rel=1e-12)
    est = run_urbandp(
        "survey", "estimate", "e40/randomized.csv", "--column", "model", "--categories-file", "models.csv",
        "--within", "fuel", "--epsilon", "40", "--out", "est.csv", cwd=tmp_path,
    )  # fmt: skip
    assert est.returncode == 0, est.stderr
    assert_refused(run_urbandp(*base, "--epsilon", "150", "--out", "e150", cwd=tmp_path), "above 100")
    _trips(tmp_path, neighbour=False)
    od = RELEASES["od-randomize"][1][:-1]
    assert_refused(run_urbandp(*od, "150", "--out", "od150", cwd=tmp_path), "above 100")
    res = run_urbandp(*od, "60", "--out", "od60", cwd=tmp_path)
    assert res.returncode == 0, res.stderr
    eps = json.loads((tmp_path / "od60" / "privacy.json").read_text())["epsilon"]
    assert math.isfinite(eps) and eps <= 60


def test_trajectories_tiny_epsilon_is_refused_up_front(tmp_path: Path) -> None:
    """--epsilon 0.01 ran past 150 s on 300 points (for ever with --budget-epsilon 1e300): now refused from the
    parameters alone, before the data is read, in seconds."""
    _trajectories(tmp_path, neighbour=False)
    args = [*RELEASES["perturb-trajectories"][1][:-4], "--epsilon", "0.01", "--max-step-metres", "500"]
    start = time.monotonic()
    res = run_urbandp(*args, "--budget-epsilon", "1e300", "--out", "t", cwd=tmp_path, timeout=60)
    assert time.monotonic() - start < 30
    assert_refused(res, "Laplace draws per point")
    assert not (tmp_path / "t").exists()

"""privacy.json's ``spec_sha256`` of a count release (issue 32): the hash of the release's parameters, the same for
the same spec wherever the input lies and whichever entry point ran it, another for another epsilon or domain.

Real ``urbandp counts release`` processes on a copy of the same taps in two folders; the Python API on the copy.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest
from urbandp_process import run_urbandp

import urbandp as ud
from urbandp._privacy.noise import ExactNoiseForTesting
from urbandp._synth.taps import generate_taps

pytestmark = pytest.mark.system
OPTIONS = {"unit": "card-day", "max_events": 4, "suppress_below": 5.0}


@pytest.fixture(scope="module")
def folders(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """The same events.csv and domain.json in two folders."""
    synth = generate_taps(trips_per_day=120, ferry_trips_per_day=20, days=1, seed=5)
    first = tmp_path_factory.mktemp("first")
    synth.events.write_csv(first / "events.csv")
    (first / "domain.json").write_text(json.dumps(synth.domain))
    second = tmp_path_factory.mktemp("elsewhere") / "copy"
    shutil.copytree(first, second)
    return first, second


def _cli_hash(folder: Path, epsilon: str) -> str:
    out = folder / f"rel-{epsilon}"
    res = run_urbandp(
        "counts",
        "release",
        str(folder / "events.csv"),
        "--domain",
        str(folder / "domain.json"),
        "--unit",
        "card-day",
        "--max-events",
        "4",
        "--suppress-below",
        "5",
        "--epsilon",
        epsilon,
        "--out",
        str(out),
    )
    assert res.returncode == 0, res.stderr
    return str(json.loads((out / "privacy.json").read_text())["spec_sha256"])


def _api_hash(data: Path, domain: Any, epsilon: float) -> str:
    session = ud.Session(noise=ExactNoiseForTesting(acknowledge_not_private=True))
    rel = ud.counts.release(data, domain=domain, epsilon=epsilon, session=session, **OPTIONS)
    assert rel.privacy.spec_sha256 is not None
    return rel.privacy.spec_sha256


def test_same_spec_in_two_folders_same_hash_through_the_cli_and_the_api(folders: tuple[Path, Path]) -> None:
    first, second = folders
    here, there = _cli_hash(first, "1"), _cli_hash(second, "1")
    assert here.startswith("sha256:") and len(here) == len("sha256:") + 64
    assert here == there
    # the API with epsilon=1 (an int), the domain as its JSON object: the same spec, the same hash
    domain = json.loads((second / "domain.json").read_text())
    assert _api_hash(second / "events.csv", domain, 1) == here
    assert _api_hash(second / "events.csv", second / "domain.json", 1.0) == here


def test_another_epsilon_or_domain_another_hash(folders: tuple[Path, Path]) -> None:
    first, _ = folders
    base = _api_hash(first / "events.csv", first / "domain.json", 1.0)
    assert _api_hash(first / "events.csv", first / "domain.json", 2.0) != base
    domain = json.loads((first / "domain.json").read_text())
    fewer_taps = {**domain, "taps": domain["taps"][:1]}
    assert _api_hash(first / "events.csv", fewer_taps, 1.0) != base

"""Issue 30's last bad inputs of `urbandp counts release`, run as real processes: one line, exit 2."""

from __future__ import annotations

from pathlib import Path

import pytest
from urbandp_process import assert_refused, run_urbandp

pytestmark = pytest.mark.system


@pytest.fixture(scope="module")
def taps(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("taps") / "taps"
    made = run_urbandp("counts", "synth", "--out", str(out), "--days", "1", "--trips-per-day", "100")
    assert made.returncode == 0, made.stderr
    return out


@pytest.mark.parametrize("value", ["1e300", "-1e300", "1e16"])
def test_a_threshold_beyond_2_53_is_refused(taps: Path, tmp_path: Path, value: str) -> None:
    """1e300 was exit 70 (float infinity to integer in the zero-cell sampler)."""
    res = run_urbandp(
        "counts", "release", str(taps / "events.csv"), "--domain", str(taps / "domain.json"), "--epsilon", "1",
        "--suppress-below", value, "--out", str(tmp_path / "o"),
    )  # fmt: skip
    assert_refused(res, "--suppress-below must be between -2^53 and 2^53", others="none")
    assert not (tmp_path / "o").exists()


def test_domain_and_select_partitions_together_are_refused(taps: Path, tmp_path: Path) -> None:
    """--select-partitions was silently ignored when --domain was given."""
    for dry in ([], ["--dry-run"]):
        res = run_urbandp(
            "counts", "release", str(taps / "events.csv"), "--domain", str(taps / "domain.json"),
            "--select-partitions", "--delta", "1e-6", "--epsilon", "1", *dry, "--out", str(tmp_path / "o"),
        )  # fmt: skip
        assert_refused(res, "not both", others="none")
        assert not (tmp_path / "o").exists()


def test_the_command_line_names_the_flag_or_the_config_key(taps: Path, tmp_path: Path) -> None:
    """Issue 31: the library names ``select_partitions``, ``sampling``, ``precision``; the command prints their
    flags, or the key of its ``--config`` file when the value came from there."""
    base = ["counts", "release", str(taps / "events.csv"), "--epsilon", "1", "--out", str(tmp_path / "o")]
    no_domain = run_urbandp(*base)
    assert_refused(
        no_domain,
        "no public domain: give a domain (a JSON file), or --select-partitions with --delta",
        others="none",
    )
    domain = ["--domain", str(taps / "domain.json")]
    sparse = run_urbandp(*base, *domain, "--sampling", "sparse", "--suppress-below", "-3")
    assert_refused(
        sparse,
        "--sampling sparse needs --suppress-below above 0, got -3.0 (most zero cells would be published: use "
        "--sampling dense)",
        others="none",
    )
    config = tmp_path / "c.toml"
    config.write_text("[counts.release]\nprecision = 20\n")
    from_file = run_urbandp(*base, *domain, "--config", str(config))
    assert_refused(
        from_file,
        f"precision in {config} [counts.release] must be an integer >= -9 and <= 15, got 20",
        others="none",
    )
    assert not (tmp_path / "o").exists()

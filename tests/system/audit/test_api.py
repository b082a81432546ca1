"""The Python API of the auditor (issue 31): ``ud.audit.<attack>`` on a path and on a frame gives what the CLI
prints; the results are typed; the CLI's checks and messages hold from Python; nothing is imported eagerly."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import numpy as np
import polars as pl
import pytest
from urbandp_process import run_urbandp

import urbandp as ud
from urbandp._outputs import dumps_strict
from urbandp.errors import InputError

pytestmark = pytest.mark.system
ROUTE = "ferry:A>B"


def _tables(tmp_path: Path) -> tuple[Path, Path]:
    """A seeded Opal-like joint table (tap-ons at A equal the tap-offs at B 30 minutes later in the raw data;
    Laplace(2) noise, rounded, cells <= 3 suppressed) and an independently released time marginal."""
    rng = np.random.default_rng(31)
    rows: list[dict[str, Any]] = []
    marginal: list[dict[str, Any]] = []
    for h in range(6, 22):
        on_bin, off_bin = f"{h:02d}:00", f"{h:02d}:30"
        raw, quiet = (0 if h < 8 else int(rng.integers(2, 40))), int(rng.integers(0, 4))
        for tap, loc, b, true in (
            ("on", "A", on_bin, raw),
            ("off", "B", off_bin, raw),
            ("off", "C", off_bin, quiet),
        ):
            noisy = round(true + rng.laplace(0, 2.0))
            rows.append(
                {"mode": "ferry", "day": "20160812", "tap": tap, "location": loc, "bin": b, "count": noisy}
            )
        noisy_total = round(raw + quiet + rng.laplace(0, 2.0))
        marginal.append(
            {"mode": "ferry", "day": "20160812", "tap": "off", "bin": off_bin, "count": noisy_total}
        )
    joint = pl.DataFrame(rows).with_columns(
        count=pl.when(pl.col("count") > 3).then(pl.col("count").cast(pl.Float64))
    )
    jp, mp = tmp_path / "rel" / "joint.csv", tmp_path / "rel" / "time.csv"
    jp.parent.mkdir()
    joint.write_csv(jp)
    pl.DataFrame(marginal).write_csv(mp)
    return jp, mp


def _cli(*args: str) -> dict[str, Any]:
    res = run_urbandp("audit", *args)
    assert res.returncode == 0, res.stderr
    return json.loads(res.stdout)


def _printed(result: Any) -> dict[str, Any]:
    """What the CLI would print for ``result`` (strict JSON, as ``urbandp audit`` writes it)."""
    return json.loads(dumps_strict(result.to_dict(), indent=None))


def test_every_attack_on_a_path_and_on_frames_gives_the_cli_result(tmp_path: Path) -> None:
    jp, mp = _tables(tmp_path)
    joint = pl.read_csv(jp)
    marginal = pl.read_csv(mp)
    pairs_csv = tmp_path / "pairs.csv"

    cli_pairs = _cli("pairs", "--table", str(jp), "--route", ROUTE, "--out", str(pairs_csv))
    api_pairs = ud.audit.pairs(jp, route=ROUTE)
    assert {**_printed(api_pairs), "out": str(pairs_csv)} == cli_pairs
    assert api_pairs.pairs_with_a_missing_side == cli_pairs["pairs_with_a_missing_side"] > 0
    assert api_pairs.warning == cli_pairs["warning"]
    assert api_pairs.table.equals(pl.read_csv(pairs_csv, schema_overrides={"day": pl.String}))
    for frame in (joint.to_pandas(), joint.lazy()):
        assert ud.audit.pairs(frame, route=[ROUTE]).table.equals(api_pairs.table)

    cli_scale = _cli("noise-scale", "--pairs", str(pairs_csv), "--model", "discrete")
    for source in (pairs_csv, str(pairs_csv), api_pairs.table, api_pairs.table.to_pandas()):
        fit = ud.audit.noise_scale(source, model="discrete")
        assert _printed(fit) == cli_scale
    assert (fit.scale, fit.low, fit.high, fit.n_pairs) == (
        cli_scale["scale"],
        cli_scale["low"],
        cli_scale["high"],
        cli_scale["n_pairs"],
    )
    assert fit.differences.size == fit.n_pairs and fit.model == "discrete"

    cli_zero = _cli("zero-skipping", "--table", str(jp), "--threshold", "3", "--method", "unknown")
    for source in (jp, joint, joint.lazy(), joint.to_pandas(), joint.to_arrow()):
        zero = ud.audit.zero_skipping(source, threshold=3, method="unknown")
        assert _printed(zero) == cli_zero
    assert zero.vulnerable is None and zero.zeros_may_be_skipped is cli_zero["zeros_may_be_skipped"]

    cli_diff = _cli("differencing", "--joint", str(jp), "--marginal", str(mp), "--scale", "2")
    assert cli_diff["groups_differenced"] == 16
    for j, m in ((jp, mp), (joint, marginal), (joint.lazy(), marginal.to_pandas())):
        diff = ud.audit.differencing(j, m, scale=2)
        assert _printed(diff) == cli_diff
    assert diff.gain_beyond_noise is cli_diff["gain_beyond_noise"]
    assert diff.groups_with_recoverable_hidden_count == cli_diff["groups_with_recoverable_hidden_count"]
    assert diff.cells.height == len(cli_diff["cells"])


def test_privacy_json_beside_the_table_or_given_from_python(tmp_path: Path) -> None:
    jp, mp = _tables(tmp_path)
    privacy = {"method": "urbandp", "zeros_perturbed": True, "epsilon": 0.5, "noise_scale": 2.0}
    privacy |= {"marginals": "derived_from_noisy_joint"}
    (jp.parent / "privacy.json").write_text(json.dumps(privacy))
    cli_zero = _cli("zero-skipping", "--table", str(jp), "--threshold", "3")
    assert cli_zero["vulnerable"] is False and cli_zero["scale"] == 2.0
    assert _printed(ud.audit.zero_skipping(jp, threshold=3)) == cli_zero
    frame = pl.read_csv(jp)
    assert _printed(ud.audit.zero_skipping(frame, threshold=3, privacy=privacy)) == cli_zero
    assert (
        _printed(ud.audit.zero_skipping(frame, threshold=3, privacy=jp.parent / "privacy.json")) == cli_zero
    )
    # a frame has no folder: without privacy the method is unknown and the scale is not known
    assert ud.audit.zero_skipping(frame, threshold=3).declared_method == "unknown"

    cli_diff = _cli("differencing", "--joint", str(jp), "--marginal", str(mp))
    assert cli_diff["marginals"] == "derived from the noisy joint"
    api = ud.audit.differencing(frame, pl.read_csv(mp), privacy=privacy)
    assert _printed(api) == cli_diff and api.marginals_derived and api.gain_beyond_noise is False
    with pytest.raises(InputError, match=r"^no scale given and no noise_scale in privacy\.json") as unknown:
        ud.audit.differencing(frame, pl.read_csv(mp))
    assert unknown.value.parameters == ("scale",)


def test_reports_and_outputs_from_python_follow_the_cli_rules(tmp_path: Path) -> None:
    jp, mp = _tables(tmp_path)
    cli_dir, api_dir = tmp_path / "cli-report", tmp_path / "api-report"
    _cli("differencing", "--joint", str(jp), "--marginal", str(mp), "--scale", "2", "--report", str(cli_dir))
    ud.audit.differencing(jp, mp, scale=2, report=api_dir)
    ud.audit.zero_skipping(jp, threshold=3).write_report(api_dir)  # a second attack's files beside the first
    assert {p.name for p in api_dir.iterdir()} == {p.name for p in cli_dir.iterdir()} | {
        "zero-skipping.md",
        "zero-skipping.png",
        "quarantine.csv",
    }
    assert (api_dir / "differencing.md").read_text() == (cli_dir / "differencing.md").read_text()

    out = tmp_path / "pairs.csv"
    written = ud.audit.pairs(jp, route=ROUTE, out=out)
    assert written.out == out and written.to_dict()["out"] == str(out) and out.is_file()
    with pytest.raises(InputError, match="exists; add overwrite to replace it"):
        ud.audit.pairs(jp, route=ROUTE, out=out)
    assert ud.audit.pairs(jp, route=ROUTE, out=out, overwrite=True).out == out
    with pytest.raises(InputError, match="exists; add overwrite"):
        written.write(out)


def test_the_cli_checks_hold_from_python(tmp_path: Path) -> None:
    jp, _ = _tables(tmp_path)
    frame = pl.read_csv(jp)
    with pytest.raises(InputError, match=r"^alpha must be a finite number > 0 and < 1, got 1.5$"):
        ud.audit.noise_scale(pl.DataFrame({"a": [1, 2], "b": [2, 1]}), alpha=1.5)
    with pytest.raises(InputError, match=r"^model must be one of continuous, discrete"):
        ud.audit.noise_scale(pl.DataFrame({"a": [1, 2], "b": [2, 1]}), model="gauss")
    with pytest.raises(InputError, match="pairs needs columns a,b"):
        ud.audit.noise_scale(pl.DataFrame({"x": [1, 2]}))
    with pytest.raises(InputError, match=r"^group_sizes must be positive integers$"):
        ud.audit.zero_skipping(frame, group_sizes=[0])
    with pytest.raises(InputError, match=r"^method must be one of auto"):
        ud.audit.zero_skipping(frame, method="magic")
    with pytest.raises(InputError, match="table has no 'count' column"):
        ud.audit.zero_skipping(frame.drop("count"))
    with pytest.raises(InputError, match=r"^lag_minutes must be an integer >= 0 and <= 1439"):
        ud.audit.pairs(frame, route=ROUTE, lag_minutes=1440)
    # group sizes as the CLI's text or as Python integers: one result
    assert _printed(ud.audit.zero_skipping(frame, group_sizes="1,2")) == _printed(
        ud.audit.zero_skipping(frame, group_sizes=(1, 2))
    )


def test_the_audit_namespace_is_public_lazy_and_takes_no_session() -> None:
    assert set(ud.audit.__all__) <= set(dir(ud.audit))
    for name in ud.audit.__all__:
        assert getattr(ud.audit, name) is not None
    import inspect

    for fn in (ud.audit.noise_scale, ud.audit.zero_skipping, ud.audit.differencing, ud.audit.pairs):
        assert "session" not in inspect.signature(fn).parameters  # audits read published tables: no budget
        assert "no Session, no budget" in " ".join((fn.__doc__ or "").split())
    code = (
        "import urbandp.audit._cli, sys; print('urbandp.audit._api' in sys.modules, 'polars' in sys.modules)"
    )
    res = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert res.stdout.split() == ["False", "False"]

"""CLI group `urbandp audit`: attacks on published count tables (what an adversary learns).

Each attack prints exactly one JSON object on stdout; ``--report DIR`` also writes Markdown + PNG plots.
"""

from __future__ import annotations

import math
from pathlib import Path

import typer

from urbandp.cli_options import Overwrite
from urbandp.cli_support import cli_guard
from urbandp.errors import InputError
from urbandp.outputs import check_output_file, check_report_dir

app = typer.Typer(no_args_is_help=True, rich_markup_mode=None)


def _emit(result: dict[str, object]) -> None:
    """One line of strict JSON on stdout: a non-finite number is written as null (with a ``*_reason`` key)."""
    from urbandp.outputs import dumps_strict

    typer.echo(dumps_strict(result, indent=None))


def _positive_finite(value: float | None, option: str) -> None:
    if value is not None and not (value > 0 and math.isfinite(value)):
        raise InputError(f"{option} must be a positive finite number, got {value}")


def _alpha(alpha: float) -> None:
    if not 0 < alpha < 1:
        raise InputError(f"--alpha must be in (0, 1), got {alpha}")


def _scale_from(scale: float | None, privacy: dict[str, object] | None) -> float | None:
    if scale is not None:
        _positive_finite(scale, "--scale")
        return scale
    value = privacy.get("noise_scale") if privacy else None
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        _positive_finite(float(value), "privacy.json noise_scale")
        return float(value)
    return None


@app.command("noise-scale")
@cli_guard
def noise_scale(
    pairs: Path = typer.Option(
        ..., "--pairs", help="CSV with columns a,b: published counts equal in raw data."
    ),
    model: str = typer.Option(
        "continuous", "--model", help="continuous (Laplace, Opal) | discrete (discrete Laplace, urbandp)."
    ),
    alpha: float = typer.Option(0.05, "--alpha", help="1 - confidence level of the interval."),
    report: Path | None = typer.Option(
        None, "--report", help="Write noise-scale.md and a PNG here (default: not written)."
    ),
    overwrite: Overwrite = False,
) -> None:
    """Estimate the noise scale from pairs of published counts that are equal in the raw data (MLE + CI).

    Example:

        urbandp audit pairs --table rel/joint.csv --route "ferry:Manly Wharf>Circular Quay No. 3 Wharf" --out p.csv
        urbandp audit noise-scale --pairs p.csv --model discrete --report audit/
    """
    from urbandp.audit.noise_scale import noise_scale_attack, plot_differences, read_pairs
    from urbandp.audit.report import staged_files, write_report

    _alpha(alpha)
    if report is not None:
        check_report_dir(report)
    u, dropped, groups = read_pairs(pairs)
    result = noise_scale_attack(u, model=model, alpha=alpha, groups=groups)
    result["rows_dropped_non_numeric"] = dropped
    if report is not None:
        with staged_files(report) as stage:
            write_report(
                stage,
                "noise-scale",
                "Noise scale read off the published table",
                result,
                "Maximum-likelihood Laplace scale from differences of published counts that are equal in the raw "
                "data (Culnane, Rubinstein, Teague 2017, section 2 and Appendix D).",
                {"noise-scale.png": lambda p: plot_differences(u, result, p)},
            )
    _emit(result)


@app.command("zero-skipping")
@cli_guard
def zero_skipping(
    table: Path = typer.Option(..., "--table", help="Published table (CSV/Parquet) with a count column."),
    threshold: float = typer.Option(18.0, "--threshold", help="Suppression threshold t of the release."),
    method: str = typer.Option(
        "auto", "--method", help="auto (privacy.json next to the table) | data61-2016 | urbandp | unknown."
    ),
    scale: float | None = typer.Option(
        None, "--scale", help="Noise scale p (default: privacy.json's noise_scale)."
    ),
    privacy: Path | None = typer.Option(
        None, "--privacy", help="privacy.json of the release (default: next to the table)."
    ),
    group_sizes: str = typer.Option("1,5,12", "--group-sizes", help="Comma-separated group sizes g."),
    report: Path | None = typer.Option(
        None, "--report", help="Write zero-skipping.md and a PNG here (default: not written)."
    ),
    overwrite: Overwrite = False,
) -> None:
    """Decide whether zeros could have been skipped; report Theorem 1's delta bound and detection probabilities.

    Example:

        urbandp audit zero-skipping --table opal/location_20160808-14.csv --threshold 18 --method data61-2016 --scale 1.4
    """
    from urbandp.audit.report import staged_files, write_report
    from urbandp.audit.tables import read_published_table, sibling_privacy
    from urbandp.audit.zero_skipping import plot_detection, zero_skipping_attack

    if method not in ("auto", "data61-2016", "urbandp", "unknown"):
        raise InputError(f"--method must be auto, data61-2016, urbandp or unknown, got {method!r}")
    try:
        gs = tuple(int(g) for g in group_sizes.split(",") if g.strip())
    except ValueError:
        raise InputError(f"--group-sizes must be integers like 1,5,12, got {group_sizes!r}") from None
    if not gs or min(gs) < 1:
        raise InputError("--group-sizes must be positive integers")
    if not (math.isfinite(threshold) and threshold >= 0):
        raise InputError(f"--threshold must be a finite number >= 0, got {threshold}")
    if report is not None:
        check_report_dir(report)
    pub = read_published_table(table)
    priv = sibling_privacy(table, privacy) if method in ("auto", "urbandp") or privacy else None
    result = zero_skipping_attack(
        pub.table["count"].to_numpy(),
        threshold=threshold,
        method=method,
        scale=_scale_from(scale, priv),
        privacy=priv,
        group_sizes=gs,
    )
    result["quarantined_rows"] = pub.quarantine.height
    result["quarantine_reasons"] = sorted(set(pub.quarantine["reason"].to_list()))
    if report is not None:
        with staged_files(report) as stage:
            pub.quarantine.write_csv(stage / "quarantine.csv")
            write_report(
                stage,
                "zero-skipping",
                "Were zeros skipped? (Theorem 1)",
                result,
                "Whether the table could come from a method that leaves zero cells unperturbed, and the "
                "probability that a suspected individual or group is detected with certainty "
                "(Culnane, Rubinstein, Teague 2017, section 3 and Appendix C).",
                {"zero-skipping.png": lambda p: plot_detection(result, p)},
            )
    _emit(result)


@app.command("differencing")
@cli_guard
def differencing(
    joint: Path = typer.Option(
        ..., "--joint", help="Published joint table (e.g. time x location); null/absent = suppressed."
    ),
    marginal: Path = typer.Option(
        ..., "--marginal", help="Published marginal table (a subset of the joint's key columns)."
    ),
    scale: float | None = typer.Option(
        None, "--scale", help="Noise scale of the joint cells (default: privacy.json)."
    ),
    marginal_scale: float | None = typer.Option(
        None, "--marginal-scale", help="Noise scale of the marginal (default: --scale)."
    ),
    privacy: Path | None = typer.Option(
        None, "--privacy", help="privacy.json (default: next to the joint table)."
    ),
    alpha: float = typer.Option(0.05, "--alpha", help="1 - confidence level."),
    max_cells: int = typer.Option(1000, "--max-cells", help="List at most this many cells in the JSON."),
    report: Path | None = typer.Option(
        None, "--report", help="Write differencing.md and a PNG here (default: not written)."
    ),
    overwrite: Overwrite = False,
) -> None:
    """Recover suppressed joint cells from a marginal, with exact intervals for any number of Laplace terms.

    Example:

        urbandp audit differencing --joint rel/joint.csv --marginal rel/time.csv --report audit/
    """
    from urbandp.audit.differencing import differencing_attack, plot_cells
    from urbandp.audit.report import staged_files, write_report
    from urbandp.audit.tables import read_published_table, sibling_privacy

    _alpha(alpha)
    _positive_finite(marginal_scale, "--marginal-scale")
    if max_cells < 0:
        raise InputError(f"--max-cells must be >= 0, got {max_cells}")
    if report is not None:
        check_report_dir(report)
    j = read_published_table(joint)
    m = read_published_table(marginal)
    priv = sibling_privacy(joint, privacy)
    s = _scale_from(scale, priv)
    if s is None:
        raise InputError("noise scale unknown: pass --scale (estimate it with `urbandp audit noise-scale`)")
    derived = bool(
        priv and priv.get("marginals") in ("derived_from_noisy_joint", "derived_from_published_joint")
    )
    result = differencing_attack(
        j,
        m,
        scale=s,
        marginal_scale=marginal_scale,
        alpha=alpha,
        marginals_derived=derived,
        max_cells=max_cells,
    )
    result["quarantined_rows"] = j.quarantine.height + m.quarantine.height
    if report is not None:
        with staged_files(report) as stage:
            write_report(
                stage,
                "differencing",
                "Suppressed cells recovered by differencing",
                result,
                "Marginal minus the published joint cells of the same group, with an exact interval for the sum "
                "of Laplace noise terms (Culnane, Rubinstein, Teague 2017, section 4 and Appendix E).",
                {"differencing.png": lambda p: plot_cells(result, p)},
            )
    _emit(result)


@app.command("pairs")
@cli_guard
def pairs(
    table: Path = typer.Option(
        ..., "--table", help="Published table with mode, day, tap, location[, bin], count."
    ),
    route: list[str] = typer.Option(..., "--route", help="mode:FROM>TO (repeatable)."),
    lag_minutes: int = typer.Option(
        30, "--lag-minutes", help="Travel time FROM -> TO (ignored for daily tables)."
    ),
    out: Path = typer.Option(..., "--out", help="Output CSV with columns route, day[, bin], a, b."),
    overwrite: Overwrite = False,
) -> None:
    """Build a,b pairs (counts equal in raw data) for `audit noise-scale` from a published table.

    Example:

        urbandp audit pairs --table joint.csv --route "ferry:Manly Wharf>Circular Quay No. 3 Wharf"
        --route "ferry:Circular Quay No. 3 Wharf>Manly Wharf" --out pairs.csv
    """
    from urbandp.audit.pairs import route_pairs
    from urbandp.audit.tables import read_published_table
    from urbandp.outputs import atomic_output_file

    if not 0 <= lag_minutes < 24 * 60:
        raise InputError(f"--lag-minutes must be between 0 and 1439, got {lag_minutes}")
    check_output_file(out)
    pub = read_published_table(table)
    df, incomplete = route_pairs(pub.table, list(route), lag_minutes)
    with atomic_output_file(out) as tmp:
        df.write_csv(tmp)
    result: dict[str, object] = {
        "pairs": df.height,
        "pairs_with_a_missing_side": incomplete,
        "out": str(out),
        "quarantined_rows": pub.quarantine.height,
    }
    if incomplete:
        result["warning"] = (
            "pairs with a suppressed or missing side were dropped; if the table was thresholded, the kept pairs "
            "are selected on their noise and the scale estimate is biased (low) for small counts"
        )
    _emit(result)

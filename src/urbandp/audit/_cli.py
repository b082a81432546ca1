"""CLI group `urbandp audit`: attacks on published count tables (what an adversary learns).

Each command calls the same function of :mod:`urbandp.audit._api` (``ud.audit.<attack>``); its options are the
fields of the attack's options model (:mod:`urbandp.audit._options`, :class:`urbandp._cli_spec.OptionsOf`), and
only the tables it reads and where it writes are declared here.

Each attack prints exactly one JSON object on stdout; ``--report DIR`` also writes Markdown + PNG plots.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from urbandp._cli_options import Overwrite
from urbandp._cli_spec import OptionsOf, command
from urbandp.audit._options import DifferencingOptions, NoiseScaleOptions, PairsOptions, ZeroSkippingOptions

if TYPE_CHECKING:
    from urbandp.audit._api import AuditResult, PairsResult

app = typer.Typer(no_args_is_help=True, rich_markup_mode=None)


def _print(result: AuditResult | PairsResult) -> None:
    """The attack's result as one line of strict JSON (a non-finite number as null, with a ``*_reason`` key)."""
    from urbandp._outputs import dumps_strict

    typer.echo(dumps_strict(result.to_dict(), indent=None))


def _report(name: str) -> Any:
    """``--report DIR``: where the attack writes ``<name>.md`` and its plot."""
    return typer.Option("--report", help=f"Write {name}.md and a PNG here (default: not written).")


def _privacy(table: str) -> Any:
    """``--privacy FILE``: the release's ``privacy.json`` (its noise scale, method and marginals)."""
    return typer.Option("--privacy", help=f"privacy.json of the release (default: next to {table}).")


@dataclasses.dataclass(frozen=True, kw_only=True)
class NoiseScaleArguments:
    """Estimate the noise scale from pairs of published counts that are equal in the raw data (MLE + CI).

    Example:

        urbandp audit pairs --table rel/joint.csv --route "ferry:Manly Wharf>Circular Quay No. 3 Wharf" --out p.csv
        urbandp audit noise-scale --pairs p.csv --model discrete --report audit/
    """

    pairs: Annotated[
        Path, typer.Option("--pairs", help="CSV with columns a,b: published counts equal in raw data.")
    ]
    options: Annotated[dict[str, Any], OptionsOf(NoiseScaleOptions)]
    report: Annotated[Path | None, _report("noise-scale")] = None
    overwrite: Overwrite = False


@dataclasses.dataclass(frozen=True, kw_only=True)
class ZeroSkippingArguments:
    """Decide whether zeros could have been skipped; report Theorem 1's delta bound and detection probabilities.

    Example: urbandp audit zero-skipping --table opal/location_20160808-14.csv --threshold 18 --method data61-2016 --scale 1.4
    """

    table: Annotated[Path, typer.Option("--table", help="Published table (CSV/Parquet) with a count column.")]
    options: Annotated[dict[str, Any], OptionsOf(ZeroSkippingOptions)]
    privacy: Annotated[Path | None, _privacy("the table")] = None
    report: Annotated[Path | None, _report("zero-skipping")] = None
    overwrite: Overwrite = False


@dataclasses.dataclass(frozen=True, kw_only=True)
class DifferencingArguments:
    """Recover suppressed joint cells from a marginal, with exact intervals for any number of Laplace terms.

    Example: urbandp audit differencing --joint rel/joint.csv --marginal rel/time.csv --report audit/
    """

    joint: Annotated[
        Path,
        typer.Option(
            "--joint", help="Published joint table (e.g. time x location); null/absent = suppressed."
        ),
    ]
    marginal: Annotated[
        Path,
        typer.Option("--marginal", help="Published marginal table (a subset of the joint's key columns)."),
    ]
    privacy: Annotated[Path | None, _privacy("the joint table")] = None
    options: Annotated[dict[str, Any], OptionsOf(DifferencingOptions)]
    report: Annotated[Path | None, _report("differencing")] = None
    overwrite: Overwrite = False


@dataclasses.dataclass(frozen=True, kw_only=True)
class PairsArguments:
    """Build a,b pairs (counts equal in raw data) for `audit noise-scale` from a published table.

    Example:

        urbandp audit pairs --table joint.csv --route "ferry:Manly Wharf>Circular Quay No. 3 Wharf"
        --route "ferry:Circular Quay No. 3 Wharf>Manly Wharf" --out pairs.csv
    """

    table: Annotated[
        Path, typer.Option("--table", help="Published table with mode, day, tap, location[, bin], count.")
    ]
    options: Annotated[dict[str, Any], OptionsOf(PairsOptions)]
    out: Annotated[Path, typer.Option("--out", help="Output CSV with columns route, day[, bin], a, b.")]
    overwrite: Overwrite = False


def _attack(name: str, arguments: type[Any]) -> Callable[..., None]:
    """The command ``name`` (help: the docstring of ``arguments``): ``ud.audit.<name>`` of the fields given."""

    def run(a: Any) -> None:
        from urbandp.audit import _api as api

        given = {f.name: getattr(a, f.name) for f in dataclasses.fields(a) if f.name != "options"}
        _print(getattr(api, run.__name__)(**given, **a.options))

    run.__name__ = run.__qualname__ = name.replace("-", "_")
    run.__doc__ = arguments.__doc__
    return command(app, arguments, name)(run)


noise_scale = _attack("noise-scale", NoiseScaleArguments)
zero_skipping = _attack("zero-skipping", ZeroSkippingArguments)
differencing = _attack("differencing", DifferencingArguments)
pairs = _attack("pairs", PairsArguments)

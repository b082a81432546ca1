"""The flags of ``urbandp counts release``, declared once (typed ``Annotated`` aliases); the defaults are the
parameters' own (:func:`urbandp.counts.cli.release`, equal to :func:`urbandp.counts.api.release`'s: a test holds
them so)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

InputArgument = Annotated[
    Path,
    typer.Argument(help="Events (mode,timestamp,tap,location[,card_id]) or counts (CSV/Parquet)."),
]

OutOption = Annotated[
    Path,
    typer.Option("--out", help="Output folder."),
]

DomainOption = Annotated[
    Path | None,
    typer.Option(
        "--domain",
        help="Public domain JSON: days, taps, bin_minutes, places (default: none; then --select-partitions is required).",
    ),
]

SelectPartitionsOption = Annotated[
    bool,
    typer.Option("--select-partitions", help="No public domain: DP partition selection (needs --delta)."),
]

InputKindOption = Annotated[
    str,
    typer.Option("--input-kind", help="events | counts (pre-aggregated mode,day,tap,bin,location,count)."),
]

UnitOption = Annotated[
    str,
    typer.Option("--unit", help="Privacy unit: event | card-day."),
]

MaxEventsOption = Annotated[
    int,
    typer.Option("--max-events", help="card-day: at most k events per card and day (truncation)."),
]

MaxPerCellOption = Annotated[
    int,
    typer.Option("--max-per-cell", help="card-day: at most m events of one card-day per cell."),
]

MethodOption = Annotated[
    str,
    typer.Option("--method", help="urbandp (DP, default) | data61-2016 (NOT DP, for comparison)."),
]

MechanismOption = Annotated[
    str,
    typer.Option(
        "--mechanism", help="laplace (discrete, pure DP) | gaussian (discrete, zCDP -> (eps, delta))."
    ),
]

EpsilonOption = Annotated[
    float | None,
    typer.Option(
        "--epsilon",
        help="Epsilon for the joint table, scale calibrated by OpenDP (default: none; give this or --noise-scale).",
    ),
]

DeltaOption = Annotated[
    float,
    typer.Option("--delta", help="Delta (Gaussian mechanism or partition selection)."),
]

NoiseScaleOption = Annotated[
    float | None,
    typer.Option(
        "--noise-scale",
        help="Noise scale instead of epsilon, which is then computed (default: none; give this or --epsilon).",
    ),
]

SuppressBelowOption = Annotated[
    float | None,
    typer.Option(
        "--suppress-below",
        help="Hide joint cells whose NOISY value is below this (default: publish every cell).",
    ),
]

ThresholdOption = Annotated[
    float,
    typer.Option("--threshold", help="data61-2016 only: release if noisy > threshold."),
]

PrecisionOption = Annotated[
    int,
    typer.Option("--precision", help="Decimal places of released values."),
]

ConsistentOption = Annotated[
    bool,
    typer.Option("--consistent", help="Consistent non-negative least-squares projection (post-processing)."),
]

TopKOption = Annotated[
    int | None,
    typer.Option("--top-k", help="Also release the k busiest places with OpenDP noisy top-k (default: off)."),
]

TopKEpsilonOption = Annotated[
    float | None,
    typer.Option(
        "--top-k-epsilon", help="Epsilon charged for --top-k (default: none; required with --top-k)."
    ),
]

TopKTapOption = Annotated[
    str | None,
    typer.Option(
        "--top-k-tap", help="Rank places by this tap only, e.g. off = destinations (default: all taps)."
    ),
]

FmtOption = Annotated[
    str,
    typer.Option("--format", help="csv | parquet."),
]

SamplingOption = Annotated[
    str,
    typer.Option(
        "--sampling",
        help="auto (sparse when --suppress-below > 0 is set) | sparse (exact sparse sampler of the zero "
        "cells, Cormode et al. 2012) | dense (noise on every cell).",
    ),
]

MarginalsOption = Annotated[
    str,
    typer.Option(
        "--marginals",
        help="auto (noisy-joint with dense sampling, published-joint with sparse, charged when "
        "--marginal-epsilon/--marginal-scale is given) | noisy-joint | published-joint | charged.",
    ),
]

MarginalEpsilonOption = Annotated[
    float | None,
    typer.Option(
        "--marginal-epsilon",
        help="Charged marginals: epsilon of each marginal table (default: none; needed with --marginals charged).",
    ),
]

MarginalScaleOption = Annotated[
    float | None,
    typer.Option(
        "--marginal-scale",
        help="Charged marginals: noise scale instead of --marginal-epsilon (default: none).",
    ),
]

BudgetEpsilonOption = Annotated[
    float | None,
    typer.Option("--budget-epsilon", help="Refuse releases that spend more epsilon (default: no cap)."),
]

BudgetDeltaOption = Annotated[
    float,
    typer.Option("--budget-delta", help="Refuse releases that spend more delta."),
]

DryRunOption = Annotated[
    bool,
    typer.Option("--dry-run", help="Print what the release would cost (no data read, nothing written)."),
]

EngineOption = Annotated[
    str,
    typer.Option(
        "--engine",
        help="Per-event stage: polars (in-process) or spark, see docs/scale-out.md (default: polars).",
    ),
]

SparkMasterOption = Annotated[
    str | None,
    typer.Option(
        "--spark-master", help="With --engine spark: master URL, e.g. spark://host:7077 (default: local[*])."
    ),
]

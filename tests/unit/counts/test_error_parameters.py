"""Issue 31: the count wing's library errors name the parameter as a Python caller spells it (``suppress_below``,
never ``--suppress-below``) and list it in ``err.parameters``; renamed by the command line's rule
(:func:`urbandp.errors.flag_of`), each message is the text ``urbandp counts release`` has always printed.

Each case: the call, the exact Python message, its parameters, and the exact command-line text.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, cast

import pytest

from urbandp.counts import _api as api
from urbandp.counts import _selection as selection
from urbandp.counts import _sparse as sparse
from urbandp.counts._accounting import gaussian_plan, laplace_plan
from urbandp.counts._domain import CountDomain
from urbandp.counts._options import CountsReleaseSpec
from urbandp.counts._units import PrivacyUnit
from urbandp.errors import InputError, InvalidParameterError, flag_of

SPEC: dict[str, Any] = dict(
    domain="domain.json", select_partitions=False, input_kind="events", unit="event", max_events=1,
    max_per_cell=1, method="urbandp", mechanism="laplace", epsilon=1.0, delta=0.0, noise_scale=None,
    suppress_below=None, threshold=18.0, precision=0, consistent=False, top_k=None, top_k_epsilon=None,
    top_k_tap=None, format="csv", sampling="auto", marginals="auto", marginal_epsilon=None, marginal_scale=None,
    budget_epsilon=None, budget_delta=1e-5, engine="polars", spark_master=None,
)  # fmt: skip
DOMAIN = CountDomain.from_json(
    {"days": ["2016-08-08"], "bin_minutes": 60, "places": {"bus": ["2000", "2001"]}}
)


def spec(**changes: Any) -> CountsReleaseSpec:
    return CountsReleaseSpec(**{**SPEC, **changes})


def cfg(**changes: Any) -> CountsReleaseSpec:
    """The spec, as the mechanism reads it (the spec is its one description)."""
    return spec(**changes)


CASES: list[tuple[str, Callable[[], object], str, tuple[str, ...], str]] = [
    (
        "config: sampling", lambda: cfg(sampling="fast"),
        "sampling must be one of auto, sparse, dense, got 'fast'", ("sampling",),
        "--sampling must be one of auto, sparse, dense, got 'fast'",
    ),
    (
        "config: marginals", lambda: cfg(marginals="some"),
        "marginals must be one of auto, noisy-joint, published-joint, charged, got 'some'", ("marginals",),
        "--marginals must be one of auto, noisy-joint, published-joint, charged, got 'some'",
    ),
    (
        "config: threshold",
        lambda: cfg(threshold=float("inf")),
        "threshold must be a finite number, got inf", ("threshold",), "--threshold must be a finite number, got inf",
    ),
    (
        "config: top_k_epsilon", lambda: cfg(top_k_epsilon=float("nan")),
        "top_k_epsilon must be a finite number > 0, got nan", ("top_k_epsilon",),
        "--top-k-epsilon must be a finite number > 0, got nan",
    ),
    (
        "config: suppress_below range", lambda: cfg(suppress_below=1e300),
        "suppress_below must be between -2^53 and 2^53 (9,007,199,254,740,992), got 1e+300: beyond that no count "
        "or noisy value is an exact float and every cell is on one side", ("suppress_below",),
        "--suppress-below must be between -2^53 and 2^53 (9,007,199,254,740,992), got 1e+300: beyond that no "
        "count or noisy value is an exact float and every cell is on one side",
    ),
    (
        "config: precision", lambda: cfg(precision=-400),
        "precision must be an integer >= -9 and <= 15, got -400", ("precision",),
        "--precision must be an integer >= -9 and <= 15, got -400",
    ),
    (
        "config: delta (the shared guard's limit)", lambda: cfg(delta=1.5),
        "delta 1.5 is above 1e-05 (it is the chance that the guarantee fails outright for a unit); use 1e-6 or "
        "smaller", ("delta",),
        "--delta 1.5 is above 1e-05 (it is the chance that the guarantee fails outright for a unit); use 1e-6 or "
        "smaller",
    ),
    (
        "config: marginal_scale", lambda: cfg(marginal_scale=0.0), "marginal_scale must be a finite number > 0, got 0.0",
        ("marginal_scale",), "--marginal-scale must be a finite number > 0, got 0.0",
    ),
    (
        "config: both marginal options", lambda: cfg(marginal_epsilon=1.0, marginal_scale=1.0),
        "give only one of marginal_epsilon and marginal_scale", ("marginal_epsilon", "marginal_scale"),
        "give only one of --marginal-epsilon and --marginal-scale",
    ),
    (
        "config: charged marginals", lambda: cfg(marginals="charged"),
        "marginals charged needs marginal_epsilon or marginal_scale",
        ("marginals", "marginal_epsilon", "marginal_scale"),
        "--marginals charged needs --marginal-epsilon or --marginal-scale",
    ),
    (
        "config: sparse with data61 ('method' is the word)",
        lambda: cfg(sampling="sparse", method="data61-2016", epsilon=None, noise_scale=1.4, suppress_below=18.0),
        "sampling sparse applies to the DP method only (data61-2016 is dense)", ("sampling",),
        "--sampling sparse applies to the DP method only (data61-2016 is dense)",
    ),
    (
        "config: sparse without threshold ('threshold' is the word)", lambda: cfg(sampling="sparse"),
        "sampling sparse needs suppress_below (without a threshold use dense)", ("sampling", "suppress_below"),
        "--sampling sparse needs --suppress-below (without a threshold use dense)",
    ),
    (
        "config: sparse and consistent", lambda: cfg(sampling="sparse", suppress_below=5.0, consistent=True),
        "consistent mixes every cell of a row: use sampling dense with it", ("consistent", "sampling"),
        "--consistent mixes every cell of a row: use --sampling dense with it",
    ),
    (
        "config: data61 needs noise_scale", lambda: cfg(method="data61-2016"),
        "method data61-2016 needs noise_scale (the report's p)", ("method", "noise_scale"),
        "--method data61-2016 needs --noise-scale (the report's p)",
    ),
    (
        "config: top_k", lambda: cfg(top_k=3),
        "top_k needs top_k_epsilon (it is charged separately)", ("top_k", "top_k_epsilon"),
        "--top-k needs --top-k-epsilon (it is charged separately)",
    ),
    (
        "config: sparse threshold not above 0 (rephrased: 'use sampling dense')",
        lambda: cfg(sampling="sparse", suppress_below=-3.0).resolved_sampling,
        "sampling sparse needs suppress_below above 0, got -3.0 (most zero cells would be published: use "
        "sampling dense)", ("sampling", "suppress_below"),
        "--sampling sparse needs --suppress-below above 0, got -3.0 (most zero cells would be published: use "
        "--sampling dense)",
    ),
    (
        "config: noisy-joint with sparse sampling (rephrased: 'with sampling sparse')",
        lambda: cfg(sampling="sparse", suppress_below=5.0, marginals="noisy-joint").resolved_marginals,
        "marginals noisy-joint needs every noisy cell: use sampling dense, or marginals charged / published-joint "
        "with sampling sparse", ("marginals", "sampling"),
        "--marginals noisy-joint needs every noisy cell: use --sampling dense, or --marginals charged / "
        "published-joint with --sampling sparse",
    ),
    (
        "spec: domain and select_partitions", lambda: spec(select_partitions=True),
        "give domain (a public list of cells) or select_partitions (cells chosen with DP), not both",
        ("domain", "select_partitions"),
        "give --domain (a public list of cells) or --select-partitions (cells chosen with DP), not both",
    ),
    (
        "spec: input_kind", lambda: spec(input_kind="rows"), "input_kind must be one of events, counts, got 'rows'",
        ("input_kind",), "--input-kind must be one of events, counts, got 'rows'",
    ),
    (
        "spec: format", lambda: spec(format="xml"), "format must be one of csv, parquet, got 'xml'", ("format",),
        "--format must be one of csv, parquet, got 'xml'",
    ),
    (
        "spec: budget_epsilon", lambda: spec(budget_epsilon=-1.0),
        "budget_epsilon must be a finite number > 0, got -1.0", ("budget_epsilon",),
        "--budget-epsilon must be a finite number > 0, got -1.0",
    ),
    (
        "spec: no epsilon", lambda: spec(epsilon=None), "give epsilon or noise_scale", ("epsilon", "noise_scale"),
        "give --epsilon or --noise-scale",
    ),
    (
        "spec: both epsilon and noise_scale", lambda: spec(noise_scale=1.0),
        "give only one of epsilon and noise_scale (the other is computed)", ("epsilon", "noise_scale"),
        "give only one of --epsilon and --noise-scale (the other is computed)",
    ),
    (
        "accounting: laplace_plan", lambda: laplace_plan(PrivacyUnit()),
        "give exactly one of epsilon and noise_scale", ("epsilon", "noise_scale"),
        "give exactly one of --epsilon and --noise-scale",
    ),
    (
        "accounting: gaussian_plan", lambda: gaussian_plan(PrivacyUnit(), delta=1e-6, epsilon=1.0, scale=2.0),
        "give exactly one of epsilon and noise_scale", ("epsilon", "noise_scale"),
        "give exactly one of --epsilon and --noise-scale",
    ),
    (
        "selection: counts input", lambda: selection.check_selection_input("counts"),
        "select_partitions works on event input", ("select_partitions",), "--select-partitions works on event input",
    ),
    (
        "sparse: threshold not above 0 (was a ValueError: exit 70 had it been reached)",
        lambda: sparse.sparse_release(cast(Any, None), cast(Any, None), -1.0, 0, cast(Any, None)),
        "sparse sampling needs a suppression threshold above 0 (suppress_below -1.0 publishes most zero cells; "
        "use dense sampling)", ("suppress_below",),
        "sparse sampling needs a suppression threshold above 0 (--suppress-below -1.0 publishes most zero cells; "
        "use dense sampling)",
    ),
    (
        "domain: too large", lambda: DOMAIN.check_fits(dense=True, available=1),
        "domain too large: 96 cells (1 days x 2 taps x 24 bins x 2 places); the dense release would need about "
        "0.0 GiB (5,504 bytes), 0.0 GiB available; with suppress_below, sparse sampling needs memory only for "
        "non-zero cells", ("suppress_below",),
        "domain too large: 96 cells (1 days x 2 taps x 24 bins x 2 places); the dense release would need about "
        "0.0 GiB (5,504 bytes), 0.0 GiB available; with --suppress-below, sparse sampling needs memory only for "
        "non-zero cells",
    ),
    (
        "api: dry_run of data61 ('method' is the word)",
        lambda: api.dry_run(spec(method="data61-2016", epsilon=None, noise_scale=1.4)),
        "dry_run: the data61-2016 method is not DP and has no privacy cost to show", ("dry_run",),
        "--dry-run: the data61-2016 method is not DP and has no privacy cost to show",
    ),
    (
        "api: spark engine without a domain",
        lambda: api.release_spec("events.csv", spec(domain=None, select_partitions=True, delta=1e-6, engine="spark")),
        "engine spark runs the per-event stage: it needs input_kind events and domain",
        ("engine", "input_kind", "domain"),
        "--engine spark runs the per-event stage: it needs --input-kind events and --domain",
    ),
]  # fmt: skip


@pytest.mark.parametrize(
    ("call", "message", "parameters", "cli_text"), [c[1:] for c in CASES], ids=[c[0] for c in CASES]
)
def test_library_errors_name_the_parameter_and_the_cli_its_flag(
    call: Callable[[], object], message: str, parameters: tuple[str, ...], cli_text: str
) -> None:
    with pytest.raises(InputError) as caught:
        call()
    err = caught.value
    if not message.startswith("domain too large"):  # that one is the domain's size: an InputError still
        assert isinstance(err, InvalidParameterError)  # a bad option (exit 2), whatever class it was before
    assert str(err) == message and "--" not in message
    assert err.parameters == parameters
    assert err.naming(flag_of) == cli_text

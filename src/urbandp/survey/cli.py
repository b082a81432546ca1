"""CLI group ``urbandp survey``: randomized response, location and trajectory perturbation, OD trips.

Every release command writes ``--out DIR`` atomically with ``privacy.json`` (unit, neighbouring relation, exact
epsilon computed from the mechanism) and puts quarantine rows and anything computed from true data in
``owner_only/<DIR>/`` beside it. ``--budget-epsilon`` refuses a release that would overspend.
With ``--dataset NAME --survey-date DAY`` the release is charged to the budget store (``urbandp budget``,
docs/budget.md): reserved before any noise is drawn, committed after the outputs are written.
"""

from __future__ import annotations

import contextvars
import datetime as dt
import functools
import math
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

import typer

from urbandp.cli_options import Overwrite
from urbandp.errors import InputError, cli_guard
from urbandp.privacy.report import write_privacy_json
from urbandp.survey import release
from urbandp.survey.release import IdColumn, KeepColumns

app = typer.Typer(no_args_is_help=True, rich_markup_mode=None)

SAMPLER_HELP = (
    "Random source: 'opendp' (OpenDP bit-vector RR, default) or 'os' (OS CSPRNG, integer-exact, faster)."
)


MAX_ESCAPE_RUNS = 10_000
"""Monte Carlo runs per point of ``survey escape``: 10,000 gives a standard error below 0.5% on a rate."""
MAX_ESCAPE_GRID = 10_000
"""Cells per side of the escape grid (10^8 cells)."""


def _ledger(budget: float | None, name: str, epsilon: float, unit: str, mechanism: str) -> dict[str, object]:
    """privacy.json's ledger: the one entry of this release (the cap was checked by the session, before noise)."""
    from urbandp.privacy.ledger import LedgerEntry, PrivacyLedger

    ledger = PrivacyLedger()
    ledger.entries.append(
        LedgerEntry(name=name, epsilon=epsilon, unit=unit, neighbouring="replace-one", mechanism=mechanism)
    )
    return {**ledger.to_dict(), "budget_epsilon": budget}


# --- budget store (--dataset): one reservation per command, see docs/budget.md ----------------------------------

F = TypeVar("F", bound=Callable[..., Any])
_SESSION: contextvars.ContextVar[tuple[Any, dt.date]] = contextvars.ContextVar("survey_session")
DATASET_HELP = "Charge this dataset in the budget store, see urbandp budget; needs --survey-date (default: no store is charged)."
STORE_HELP = "Budget store path or postgresql:// URL (default $URBANDP_BUDGET_STORE)."
SURVEY_DATE_HELP = (
    "Day the answers were collected (YYYY-MM-DD): the store books this release's charge on it (a survey has no "
    "per-day structure; its dataset's --epsilon-total composes all its releases). Default: none; required with --dataset."
)


def _charged(fn: F) -> F:
    """Run the command inside its :class:`~urbandp.privacy.session.Session` (the one budget owner).

    The command calls :func:`_reserve` once its epsilon is known and before any noise, :func:`_published` after
    writing, and :func:`_say` for what it prints (shown only once the charge is committed). ``--budget-epsilon``
    is the session's cap, checked at the reservation, before any noise.
    """
    from urbandp.privacy.loss import Loss
    from urbandp.privacy.session import Session

    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        dataset, day_text = kwargs.get("dataset"), kwargs.get("survey_date")
        cap = kwargs.get("budget_epsilon")
        if cap is not None and not (math.isfinite(cap) and cap > 0):
            raise InputError(
                f"--budget-epsilon must be a number above 0 (the cap on this release), got {cap:g}"
            )
        day = dt.date.today()  # booked nowhere without --dataset
        if dataset is not None:
            if day_text is None:
                raise InputError(
                    "--dataset needs --survey-date YYYY-MM-DD (the day the answers were collected)"
                )
            try:
                day = dt.date.fromisoformat(day_text)
            except ValueError:
                raise InputError(f"--survey-date must be a date YYYY-MM-DD, got '{day_text}'") from None
        limit = None if cap is None else Loss.pure(cap)
        unit = "trip" if fn.__name__ in ("od_randomize", "perturb_trajectories") else "respondent"
        with Session(dataset, kwargs.get("budget_store"), unit=unit, out=kwargs["out"], cap=limit) as session:
            token = _SESSION.set((session, day))
            try:
                return fn(*args, **kwargs)
            finally:
                _SESSION.reset(token)

    return wrapper  # type: ignore[return-value]


def _reserve(unit: str, epsilon: float, mechanism: str, params: dict[str, object]) -> None:
    """Reserve ``epsilon`` per ``unit`` on --survey-date (refused over the cap or the store's); before any noise."""
    from urbandp.privacy.loss import Loss

    session, day = _SESSION.get()
    session.unit = unit
    session.reserve(Loss.pure(epsilon), [day], mechanism, params)
    session.mark_drawn()  # the survey samplers (OpenDP bits, OS CSPRNG) run right after


def _not_chargeable(why: str) -> None:
    """Refuse --dataset for a release whose privacy loss is not bounded (not DP): a budget cannot hold it."""
    _SESSION.get()[0].refuse_not_dp([why])


def _published(out: Path) -> None:
    """The outputs are written: their content hash is recorded when the charge commits."""
    _SESSION.get()[0].set_output(out)


def _say(text: str) -> None:
    """Print ``text`` once the charge is committed (it may hold values derived from noise)."""
    _SESSION.get()[0].say(text)


def _positive(name: str, value: float | None) -> None:
    if value is not None and (not math.isfinite(value) or value <= 0):
        raise InputError(f"{name} must be a finite number > 0, got {value}")


@app.command()
@cli_guard
@_charged
def randomize(
    input: Path = typer.Argument(..., help="CSV or Parquet file, one respondent answer per row."),
    column: str = typer.Option(..., "--column", help="Column to randomize."),
    categories: str | None = typer.Option(
        None, "--categories", help="Declared list: A,B,C (default: none; give this or --categories-file)."
    ),
    categories_file: Path | None = typer.Option(
        None,
        "--categories-file",
        help="One category per line, or 'group,category' lines with --within (default: none; give this or --categories).",
    ),
    within: str | None = typer.Option(
        None, "--within", help="Sub-category column such as fuel type, kept as is (default: none)."
    ),
    epsilon: float | None = typer.Option(
        None, "--epsilon", help="Epsilon per respondent for k-RR (default: none; give this or --theta)."
    ),
    theta: float | None = typer.Option(
        None,
        "--theta",
        help="Binary RR truth probability, 2 categories only (default: none; give this or --epsilon).",
    ),
    aliases: Path | None = typer.Option(
        None, "--aliases", help="Alias table: 'alias,canonical' lines (default: no aliases)."
    ),
    method: str = typer.Option(
        "krr",
        "--method",
        help="'krr' (default) or 'report-replacement' (report eqs. 8-12, NOT DP; needs --p).",
    ),
    p: float | None = typer.Option(
        None, "--p", help="Keep probability for --method report-replacement (default: none)."
    ),
    sampler: str = typer.Option("opendp", "--sampler", help=SAMPLER_HELP),
    separator: str = typer.Option(",", "--separator", help="CSV field separator."),
    budget_epsilon: float | None = typer.Option(
        None, "--budget-epsilon", help="Refuse to spend more than this (default: no cap)."
    ),
    out: Path = typer.Option(..., "--out", help="Output directory (randomized.csv + privacy.json)."),
    dataset: str | None = typer.Option(None, "--dataset", help=DATASET_HELP),
    budget_store: str | None = typer.Option(None, "--budget-store", help=STORE_HELP),
    survey_date: str | None = typer.Option(None, "--survey-date", help=SURVEY_DATE_HELP),
    id_column: IdColumn = None,
    keep_columns: KeepColumns = None,
    overwrite: Overwrite = False,
) -> None:
    """Randomize one categorical column with randomized response (report sections 3.3, 4.1).

    Example: urbandp survey randomize vehicles.csv --column model --categories-file models.csv --within fuel
    --id household --epsilon 2 --out out/vehicles-rr

    Only --column, --within, --id and --keep-columns are released (the last three declared public).
    """
    import numpy as np
    import polars as pl

    from urbandp.reports.outputs import atomic_output_dir, write_json
    from urbandp.survey import randomized_response as rr
    from urbandp.survey.categorical import declared_categories, decode, read_aliases, validate
    from urbandp.survey.io import command_line, read_table, require_columns, write_frame
    from urbandp.survey.sampling import bit_source

    _positive("--epsilon", epsilon)
    release.check_epsilon(epsilon, "respondent")
    if method == "report-replacement":
        _not_chargeable("report-replacement builds its replacements from the true answers")
    source = bit_source(sampler)
    declared = declared_categories(categories, categories_file, within)
    frame = read_table(input, separator)
    require_columns(frame, input, column, *([within] if within else []))
    public = release.public_columns(
        frame, input, keep_columns, id_column, {"--within": within} if within else {}, [column]
    )
    checked = validate(frame, column, declared, within, read_aliases(aliases), keep_off_list=True)
    filled = checked.filled if checked.filled is not None else np.zeros(checked.codes.size, dtype=bool)
    checked.codes[filled] = 0  # replaced below by a uniform draw over the row's declared list
    if checked.good.height == 0:
        raise InputError(
            f"no row of {input} has a value in the declared list (all {frame.height} quarantined)"
        )
    names = list(declared.lists)
    lists = {i: len(declared.lists[g]) for i, g in enumerate(names)}
    not_dp: list[str] = []
    owner_extra: dict[str, object] = {}
    eps: float | None
    if method == "report-replacement":
        if p is None or not 0 <= p < 1:
            raise InputError("--method report-replacement needs --p in [0, 1)")
        new = rr.report_replacement(checked.codes, checked.groups, p, source)
        owner_extra["report_epsilon_by_group_data_dependent"] = {
            names[g]: rr.report_replacement_epsilon(
                p, np.bincount(checked.codes[checked.groups == g]).tolist()
            )
            for g in np.unique(checked.groups)
        }
        eps = None
        mechanism = "report random replacement within sub-category (eqs. 8-12)"
        not_dp.append(
            "report-replacement is NOT differentially private: the replacement distribution is built from the true "
            "answers and its epsilon (eq. 12) depends on the data (n = count of the rarest model; the owner's "
            "input_report.json has the report's value)"
        )
        detail: dict[str, object] = {"p": p}
    elif method == "krr":
        if (epsilon is None) == (theta is None):
            raise InputError("give exactly one of --epsilon or --theta")
        if theta is not None:
            if declared.grouped or lists[0] != 2:
                raise InputError("--theta (binary RR) needs exactly 2 declared categories and no --within")
            if not 0 < theta < 1:
                raise InputError(f"--theta must be in (0, 1), got {theta}")
            prob = (1.0 + theta) / 2.0
            eps = rr.binary_epsilon(theta)
            _reserve("respondent", eps, "survey-binary-rr", {"theta": theta, "column": column})
            new = rr.randomize_codes(checked.codes, 2, prob, source)
            probs = {names[0]: prob}
        else:
            assert epsilon is not None
            by_code = rr.within_probs(lists, epsilon)  # public: from the declared lists alone
            eps = rr.within_epsilon(lists, by_code)
            if eps < epsilon * (1 - 1e-9):
                release.warn(
                    f"--epsilon {epsilon:g}: k-RR spends at most {eps:.6g} here (its truth probability cannot be "
                    "closer to 1 in double precision); that is what is released and charged"
                )
            _reserve("respondent", eps, "survey-krr", {"epsilon": eps, "column": column, "within": within})
            new, _ = rr.randomize_within(checked.codes, checked.groups, lists, epsilon, source)
            probs = {names[g]: v for g, v in by_code.items()}
        mechanism = "k-ary randomized response (OpenDP make_randomized_response semantics)"
        detail = {"truth_probability_by_group": probs, "theta": theta}
    else:
        raise InputError(f"--method must be 'krr' or 'report-replacement', got {method!r}")
    for g in np.unique(checked.groups[filled]):  # off-list or missing answers: a uniform draw, as OpenDP's RR
        rows = filled & (checked.groups == g)
        k = lists[int(g)]
        new[rows] = rr.randomize_codes(np.zeros(int(rows.sum()), dtype=np.int64), k, 1.0 / k, source)
    values = decode(declared, checked.groups, new)
    released = release.select_released(
        checked.good.with_columns(pl.Series(column, values.tolist(), dtype=pl.String)), public, [column]
    )
    owner = ["quarantine.csv", "alias_report.csv", "input_report.json"]
    with atomic_output_dir(out) as d:
        write_frame(released, d.release / "randomized.csv")
        checked.quarantine.write_csv(d.owner_path("quarantine.csv"))
        checked.alias_report.write_csv(d.owner_path("alias_report.csv"))
        report = {
            "rows_in": frame.height,
            "rows_released": released.height,
            "rows_quarantined": checked.quarantine.height,
            "answers_off_list_released_as_uniform_draws": int(filled.sum()),
            **owner_extra,
        }
        write_json(d.owner_path("input_report.json"), release.input_report(report))
        write_privacy_json(
            d.release,
            {
                "command": command_line(),
                "unit": "respondent",
                "neighbouring": "replace-one (one respondent's answer, any value: an answer that is missing or "
                "off the declared list is released as a uniform draw over the list, so no row is dropped for it; "
                "a row whose public --within group is missing or undeclared is not released: that depends only "
                "on the public column)",
                "column": column,
                "within": within,
                "public_columns": release.declaration(public),
                "declared_categories": declared.lists,
                "mechanism": mechanism,
                "epsilon": eps,
                "epsilon_is_dp": method == "krr",
                "sampler": source.name,
                "detail": detail,
                "ledger": None
                if eps is None
                else _ledger(budget_epsilon, f"randomize {column}", eps, "respondent", mechanism),
                "not_dp_outputs": release.owner_files(out, owner),
                "not_dp_reasons": [*not_dp, *_SESSION.get()[0].not_dp_reasons],
            },
        )
    _published(out)
    _say(
        f"randomized {released.height:,} rows (epsilon {'not DP' if eps is None else f'{eps:.6g}'}, {mechanism}); "
        f"quarantined {checked.quarantine.height:,} -> {out}"
    )


@app.command()
@cli_guard
def estimate(
    perturbed: Path = typer.Argument(..., help="Randomized file (randomized.csv from 'survey randomize')."),
    column: str = typer.Option(..., "--column", help="Randomized column."),
    categories: str | None = typer.Option(
        None, "--categories", help="Declared list: A,B,C (default: none; give this or --categories-file)."
    ),
    categories_file: Path | None = typer.Option(
        None, "--categories-file", help="As for 'randomize' (default: none; give this or --categories)."
    ),
    within: str | None = typer.Option(
        None, "--within", help="Sub-category column used by 'randomize' (default: none)."
    ),
    epsilon: float | None = typer.Option(
        None, "--epsilon", help="Epsilon used by 'randomize' (default: none; give this or --theta)."
    ),
    theta: float | None = typer.Option(
        None, "--theta", help="Binary RR theta used by 'randomize' (default: none; give this or --epsilon)."
    ),
    separator: str = typer.Option(",", "--separator", help="CSV field separator."),
    out: Path = typer.Option(..., "--out", help="Output CSV: category, estimate, ci_low, ci_high."),
    overwrite: Overwrite = False,
) -> None:
    """De-biased frequencies with 95 % CIs from randomized answers (report eq. 6; post-processing, no budget).

    Example: urbandp survey estimate out/vehicles-rr/randomized.csv --column model --categories-file models.csv --within fuel --epsilon 2 --out est.csv

    With --within the estimate is the share of all respondents (the sub-category share times the de-biased share
    inside it).
    """
    import numpy as np
    import polars as pl

    from urbandp.reports.outputs import atomic_output_file, check_output_file
    from urbandp.survey import randomized_response as rr
    from urbandp.survey.categorical import declared_categories
    from urbandp.survey.io import read_table, require_columns

    _positive("--epsilon", epsilon)
    if (epsilon is None) == (theta is None):
        raise InputError("give exactly one of --epsilon or --theta")
    check_output_file(out)
    declared = declared_categories(categories, categories_file, within)
    frame = read_table(perturbed, separator)
    require_columns(frame, perturbed, column, *([within] if within else []))
    rows = []
    total = frame.height
    for g, cats in declared.lists.items():
        sub = frame.filter(pl.col(within) == g) if within else frame
        if sub.height == 0:
            continue
        col = sub.get_column(column).cast(pl.String)
        bad = sorted(col.filter(~col.is_in(cats) | col.is_null()).unique().fill_null("<missing>").to_list())
        if bad:
            raise InputError(
                f"{perturbed}: value(s) outside the declared list: {', '.join(map(str, bad[:5]))}"
            )
        codes = col.replace_strict(cats, list(range(len(cats))), return_dtype=pl.Int64).to_numpy()
        counts = np.bincount(codes, minlength=len(cats))
        prob = (1.0 + theta) / 2.0 if theta is not None else rr.krr_prob(len(cats), float(epsilon))  # type: ignore[arg-type]
        share = sub.height / total
        for e in rr.estimates_table(cats, counts, prob):
            rows.append(
                {
                    "group": g,
                    "category": e.category,
                    "estimate": e.estimate * share,
                    "ci_low": e.ci_low * share,
                    "ci_high": e.ci_high * share,
                }
            )
    table = pl.DataFrame(rows)
    if not within:
        table = table.drop("group")
    with atomic_output_file(out) as tmp:
        table.write_csv(tmp)
    with pl.Config(tbl_rows=200, float_precision=4):
        typer.echo(str(table))


@app.command("perturb-points")
@cli_guard
@_charged
def perturb_points(
    input: Path = typer.Argument(..., help="CSV or Parquet, one location per row (e.g. home locations)."),
    lat: str = typer.Option(..., "--lat", help="Latitude column (degrees)."),
    lon: str = typer.Option(..., "--lon", help="Longitude column (degrees)."),
    epsilon_per_metre: float | None = typer.Option(
        None,
        "--epsilon-per-metre",
        help="Planar Laplace epsilon per metre (default: none; give this or --scale-metres).",
    ),
    scale_metres: float | None = typer.Option(
        None,
        "--scale-metres",
        help="Per-axis Laplace scale b in metres (default: none; give this or --epsilon-per-metre).",
    ),
    bbox: str | None = typer.Option(
        None, "--bbox", help="Outlier box min_lat,max_lat,min_lon,max_lon (default: no outlier removal)."
    ),
    separator: str = typer.Option(",", "--separator", help="CSV field separator."),
    budget_epsilon: float | None = typer.Option(
        None,
        "--budget-epsilon",
        help="Refuse if epsilon per metre x --budget-metres exceeds this (default: no cap).",
    ),
    budget_metres: float = typer.Option(
        1000.0, "--budget-metres", help="Distance at which the budget applies."
    ),
    out: Path = typer.Option(..., "--out", help="Output directory (points.csv + privacy.json)."),
    dataset: str | None = typer.Option(None, "--dataset", help=DATASET_HELP),
    budget_store: str | None = typer.Option(None, "--budget-store", help=STORE_HELP),
    survey_date: str | None = typer.Option(None, "--survey-date", help=SURVEY_DATE_HELP),
    id_column: IdColumn = None,
    keep_columns: KeepColumns = None,
    overwrite: Overwrite = False,
) -> None:
    """Perturb point locations: planar Laplace (geo-indistinguishability) or per-axis Laplace (report sec. 5).

    Example: urbandp survey perturb-points out/survey/homes.csv --lat lat --lon lon --id household --epsilon-per-metre 0.005 --out out/homes

    With --bbox a location outside the box is moved to the nearest point of the box before noise (never dropped).
    """
    import numpy as np
    import polars as pl

    from urbandp.reports.outputs import atomic_output_dir, write_json
    from urbandp.survey import locations as loc
    from urbandp.survey.io import command_line, float_column, read_table, require_columns, write_frame

    if (epsilon_per_metre is None) == (scale_metres is None):
        raise InputError("give exactly one of --epsilon-per-metre or --scale-metres")
    _positive("--epsilon-per-metre", epsilon_per_metre)
    _positive("--scale-metres", scale_metres)
    _positive("--budget-metres", budget_metres)  # 0 m would book epsilon 0 for any noise (issue 20)
    try:
        box = loc.BoundingBox.parse(bbox) if bbox else None
    except ValueError as err:
        raise InputError(f"--bbox: {err}") from None
    cost = loc.perturbation_epsilon(epsilon_per_metre, scale_metres)
    eps_budget = float(cost["epsilon_per_metre"]) * budget_metres  # type: ignore[arg-type]
    release.check_epsilon(
        eps_budget, "respondent", f"epsilon per metre x --budget-metres ({budget_metres:g} m) ="
    )
    frame = read_table(input, separator)
    require_columns(frame, input, lat, lon)
    public = release.public_columns(frame, input, keep_columns, id_column, {}, [lat, lon])
    la, lo = float_column(frame, lat), float_column(frame, lon)
    ok = np.isfinite(la) & np.isfinite(lo) & (np.abs(la) <= 90) & (np.abs(lo) <= 180)
    if not ok.any():
        raise InputError(f"no usable location in {input} (all {la.size} quarantined)")
    n = int(ok.sum())
    clamped = 0
    if box is not None:
        la_box, lo_box = box.clamp(la[ok], lo[ok])
        clamped = int(((la_box != la[ok]) | (lo_box != lo[ok])).sum())
        la, lo = la.copy(), lo.copy()
        la[ok], lo[ok] = la_box, lo_box
    _reserve(
        "respondent",
        eps_budget,
        "survey-planar-laplace" if epsilon_per_metre is not None else "survey-axis-laplace",
        {"epsilon_per_metre": cost["epsilon_per_metre"], "charged_at_metres": budget_metres},
    )
    if epsilon_per_metre is not None:
        east, north = loc.planar_laplace_offsets(n, epsilon_per_metre)
    else:
        assert scale_metres is not None
        east, north = loc.axis_laplace_offsets(n, scale_metres, scale_metres)
    new_lat, new_lon = loc.shift_degrees(la[ok], lo[ok], east, north)
    released = release.select_released(
        frame.filter(pl.Series(ok)).with_columns(pl.Series(lat, new_lat), pl.Series(lon, new_lon)),
        public,
        [lat, lon],
    )
    owner = ["quarantine.csv", "input_report.json"]
    with atomic_output_dir(out) as d:
        write_frame(released, d.release / "points.csv")
        q = frame.with_row_index("row", offset=1).filter(pl.Series(~ok))
        q.with_columns(pl.lit("bad_coordinate").alias("reason")).write_csv(d.owner_path("quarantine.csv"))
        report = {
            "rows_in": la.size,
            "rows_released": n,
            "rows_quarantined": la.size - n,
            "moved_into_bbox": clamped,
        }
        write_json(d.owner_path("input_report.json"), release.input_report(report))
        write_privacy_json(
            d.release,
            {
                "command": command_line(),
                "unit": "respondent (one location per row)",
                "neighbouring": "replace one location by another at distance d: privacy loss epsilon_per_metre * d "
                "(a row without a readable coordinate is outside the domain and is not released)",
                **cost,
                "bbox": None
                if box is None
                else {
                    **box.__dict__,
                    "rule": "a location outside the box is moved to the nearest point of the box before noise: "
                    "the move never lengthens a distance (clamping each coordinate is 1-Lipschitz), so the "
                    "loss stays epsilon_per_metre * d",
                },
                "public_columns": release.declaration(public),
                "ledger": _ledger(
                    budget_epsilon,
                    f"perturb {lat},{lon} at {budget_metres} m",
                    eps_budget,
                    "respondent",
                    str(cost["mechanism"]),
                ),
                "rounding_degrees": 10.0**-loc.ROUND_DEGREES,
                "not_dp_outputs": release.owner_files(out, owner),
                "not_dp_reasons": list(_SESSION.get()[0].not_dp_reasons),
            },
        )
    _published(out)
    _say(
        f"perturbed {n:,} points ({cost['mechanism']}, epsilon {eps_budget:.4g} at {budget_metres:g} m); "
        f"quarantined {la.size - n:,}, moved into --bbox {clamped:,} -> {out}"
    )


@app.command()
@cli_guard
def escape(
    input: Path = typer.Argument(..., help="CSV or Parquet of true point locations."),
    lat: str = typer.Option(..., "--lat", help="Latitude column."),
    lon: str = typer.Option(..., "--lon", help="Longitude column."),
    grid: str = typer.Option("10,25,50,100", "--grid", help="Grid sizes N (comma list) for N x N blocks."),
    bn: str = typer.Option(
        "0.01,0.03,0.1,0.3,1,3,10,30,100", "--bn", help="Lumped parameters b*N (Laplace scale / spacing)."
    ),
    polygons: Path | None = typer.Option(
        None, "--polygons", help="GeoJSON blocks, lon/lat polygons (default: none; uniform grid blocks)."
    ),
    scale_degrees: str = typer.Option(
        "0.001,0.003,0.01,0.03", "--scale-degrees", help="Scales for --polygons."
    ),
    runs: int = typer.Option(10, "--runs", help="Monte Carlo runs per point of the curve."),
    seed: int = typer.Option(0, "--seed", help="Simulation seed."),
    separator: str = typer.Option(",", "--separator", help="CSV field separator."),
    out: Path = typer.Option(..., "--out", help="Output directory (escape.csv + escape.png, owner only)."),
    overwrite: Overwrite = False,
) -> None:
    """Escape analysis (report section 5): share of points leaving their block vs b*N, uniform/Gaussian grids.

    Example: urbandp survey escape out/survey/homes.csv --lat lat --lon lon --grid 10,25,50 --out out/escape

    A simulation on the TRUE locations: the CSV and the plot go to owner_only/ (not DP).
    """
    import numpy as np
    import polars as pl

    from urbandp.reports.outputs import atomic_output_dir, check_output_path
    from urbandp.survey import escape as esc
    from urbandp.survey.io import command_line, float_column, read_table, require_columns

    try:
        grids = [int(g) for g in grid.split(",")]
        bns = [float(b) for b in bn.split(",")]
        scales = [float(s) for s in scale_degrees.split(",")]
    except ValueError:
        raise InputError("--grid, --bn and --scale-degrees take comma-separated numbers") from None
    if any(g < 1 for g in grids) or any(b <= 0 for b in bns) or runs < 1:
        raise InputError("--grid values must be >= 1, --bn values > 0, --runs >= 1")
    check_output_path(out)
    if runs > MAX_ESCAPE_RUNS or max(grids) > MAX_ESCAPE_GRID or not all(map(math.isfinite, bns + scales)):
        raise InputError(
            f"--runs must be at most {MAX_ESCAPE_RUNS:,} and --grid at most {MAX_ESCAPE_GRID:,} per side (the "
            "work grows with both), and --bn/--scale-degrees finite"
        )
    frame = read_table(input, separator)
    require_columns(frame, input, lat, lon)
    la, lo = float_column(frame, lat), float_column(frame, lon)
    ok = np.isfinite(la) & np.isfinite(lo)
    x, y = esc.normalise(lo[ok], la[ok])
    results = esc.sweep(x, y, grids, bns, runs=runs, seed=seed)
    if polygons is not None:
        polys = esc.load_polygons(polygons)
        results += [esc.polygon_escape(lo[ok], la[ok], polys, s, runs, seed) for s in scales]
    table = pl.DataFrame([r.__dict__ for r in results]).with_columns(
        (pl.col("scale") * pl.col("n")).alias("bn")
    )
    with atomic_output_dir(out) as d:
        table.write_csv(d.owner_path("escape.csv"))
        esc.plot_collapse(results, d.owner_path("escape.png"))
        write_privacy_json(
            d.release,
            {
                "command": command_line(),
                "unit": "respondent (one location per row); nothing here is protected",
                "epsilon": None,
                "epsilon_reason": "simulation on true locations; nothing in this run is a DP release",
                "not_dp_outputs": [f"owner_only/{out.name}/escape.csv", f"owner_only/{out.name}/escape.png"],
                "not_dp_reasons": [
                    "escape shares are computed from the true locations with simulated (numpy) noise"
                ],
            },
        )
    with pl.Config(tbl_rows=60, float_precision=3):
        typer.echo(str(table))


@app.command("od-randomize")
@cli_guard
@_charged
def od_randomize(
    input: Path = typer.Argument(..., help="CSV or Parquet of trips, one origin-destination pair per row."),
    origin: str = typer.Option(..., "--from", help="Origin block column."),
    dest: str = typer.Option(..., "--to", help="Destination block column."),
    blocks_file: Path | None = typer.Option(
        None, "--blocks-file", help="Declared block ids, one per line (default: none; give this or --blocks)."
    ),
    blocks: int | None = typer.Option(
        None, "--blocks", help="Declared blocks are 1..N (default: none; give this or --blocks-file)."
    ),
    p: float | None = typer.Option(
        None,
        "--keep-probability",
        help="Report eq. 13 keep probability p (default: none; give this or --epsilon).",
    ),
    epsilon: float | None = typer.Option(
        None,
        "--epsilon",
        help="Target epsilon per trip instead of p (default: none; give this or --keep-probability).",
    ),
    method: str = typer.Option(
        "rr", "--method", help="'rr' (eq. 13, DP) | 'histogram' | 'histogram-joint' (sec. 6.3, NOT DP)."
    ),
    sampler: str = typer.Option("opendp", "--sampler", help=SAMPLER_HELP),
    separator: str = typer.Option(",", "--separator", help="CSV field separator."),
    budget_epsilon: float | None = typer.Option(
        None, "--budget-epsilon", help="Refuse to spend more than this (default: no cap)."
    ),
    out: Path = typer.Option(..., "--out", help="Output directory (trips.csv + privacy.json)."),
    dataset: str | None = typer.Option(None, "--dataset", help=DATASET_HELP),
    budget_store: str | None = typer.Option(None, "--budget-store", help=STORE_HELP),
    survey_date: str | None = typer.Option(None, "--survey-date", help=SURVEY_DATE_HELP),
    id_column: IdColumn = None,
    keep_columns: KeepColumns = None,
    overwrite: Overwrite = False,
) -> None:
    """Randomize origin-destination trips over blocks (report eq. 13 and section 6.3).

    Example: urbandp survey od-randomize out/survey/trips.csv --from from_county --to to_county --blocks 19 --id trip --keep-probability 0.5 --out out/trips-rr

    A trip with a block outside the declared list is released as a uniform draw over all pairs (never dropped).
    """
    import numpy as np
    import polars as pl

    from urbandp.reports.outputs import atomic_output_dir, write_json
    from urbandp.survey import trips as tr
    from urbandp.survey.io import command_line, read_list, read_table, require_columns, write_frame
    from urbandp.survey.sampling import bit_source

    source = bit_source(sampler)
    if (blocks_file is None) == (blocks is None):
        raise InputError("give exactly one of --blocks-file or --blocks")
    ids = read_list(blocks_file) if blocks_file is not None else [str(i) for i in range(1, int(blocks) + 1)]  # type: ignore[arg-type]
    if len(ids) < 2 or len(set(ids)) != len(ids):
        raise InputError("the declared block list needs at least 2 distinct ids")
    nb = len(ids)
    t = nb * nb
    if (p is None) == (epsilon is None):
        raise InputError("give exactly one of --keep-probability or --epsilon")
    if epsilon is not None:
        _positive("--epsilon", epsilon)
        release.check_epsilon(epsilon, "trip")
        p = tr.od_keep_probability(nb, epsilon)
    assert p is not None
    if not 0 <= p < 1:
        raise InputError(f"--keep-probability must be in [0, 1), got {p}")
    if method in ("histogram", "histogram-joint"):
        _not_chargeable(f"--method {method} draws replacements from the true histogram")
    elif method != "rr":
        raise InputError(f"--method must be rr, histogram or histogram-joint, got {method!r}")
    frame = read_table(input, separator)
    require_columns(frame, input, origin, dest)
    public = release.public_columns(frame, input, keep_columns, id_column, {}, [origin, dest])
    index = pl.DataFrame({"__id": ids, "__i": np.arange(nb)})
    f = frame.with_row_index("row", offset=1).with_columns(
        pl.col(origin).cast(pl.String).str.strip_chars().alias("__o"),
        pl.col(dest).cast(pl.String).str.strip_chars().alias("__d"),
    )
    f = f.join(index.rename({"__id": "__o", "__i": "__oi"}), on="__o", how="left", maintain_order="left")
    f = f.join(index.rename({"__id": "__d", "__i": "__di"}), on="__d", how="left", maintain_order="left")
    ok = (f.get_column("__oi").is_not_null() & f.get_column("__di").is_not_null()).to_numpy()
    o = f.get_column("__oi").fill_null(0).to_numpy().astype(np.int64)
    de = f.get_column("__di").fill_null(0).to_numpy().astype(np.int64)
    eps = tr.od_epsilon(nb, p) if method == "rr" else None
    if eps is not None:
        _reserve("trip", eps, "survey-od-rr", {"blocks": nb, "keep_probability": p})
        ro, rd = tr.od_randomize(o, de, nb, p, source)
    else:
        ro, rd = o.copy(), de.copy()
        if ok.any():
            ro[ok], rd[ok] = tr.histogram_block_reporting(
                o[ok], de[ok], p, joint=method == "histogram-joint", source=source
            )
    bad = np.flatnonzero(~ok)
    if (
        bad.size
    ):  # an undeclared block: the pair is released as a uniform draw over all t pairs (eq. 13's floor)
        pair = source.uniform_int(bad.size, t)
        ro[bad], rd[bad] = pair // nb, pair % nb
    arr = np.array(ids, dtype=object)
    released = release.select_released(
        frame.with_columns(pl.Series(origin, arr[ro].astype(str)), pl.Series(dest, arr[rd].astype(str))),
        public,
        [origin, dest],
    )
    owner = ["utility.json", "quarantine.csv", "input_report.json"]
    with atomic_output_dir(out) as d:
        write_frame(released, d.release / "trips.csv")
        write_json(d.owner_path("utility.json"), tr.utility(o[ok], de[ok], ro[ok], rd[ok], nb))
        f.filter(pl.Series(~ok)).drop("__o", "__d", "__oi", "__di").with_columns(
            pl.lit("block_not_declared: released as a uniform draw over all pairs").alias("reason")
        ).write_csv(d.owner_path("quarantine.csv"))
        report = {"trips_in": frame.height, "trips_with_undeclared_block": int(bad.size)}
        write_json(d.owner_path("input_report.json"), release.input_report(report))
        reasons = list(_SESSION.get()[0].not_dp_reasons)
        if eps is None:
            reasons.append(
                "section 6.3 histogram-preserving reporting draws replacements from the TRUE histogram: "
                "NOT differentially private"
            )
        write_privacy_json(
            d.release,
            {
                "command": command_line(),
                "unit": "trip",
                "neighbouring": "replace-one (one trip's origin-destination pair, any value: a pair with a block "
                "outside the declared list is released as a uniform draw over all pairs)",
                "mechanism": "OD randomized response (report eq. 13)"
                if eps is not None
                else f"report section 6.3 ({method})",
                "blocks": nb,
                "od_pairs": t,
                "keep_probability": p,
                "epsilon": eps,
                **(
                    {"epsilon_reason": "not DP: replacement drawn from the true histogram"}
                    if eps is None
                    else {}
                ),
                "public_columns": release.declaration(public),
                "ledger": None
                if eps is None
                else _ledger(budget_epsilon, "od-randomize", eps, "trip", method),
                "not_dp_outputs": release.owner_files(out, owner),
                "not_dp_reasons": reasons,
            },
        )
    _published(out)
    _say(
        f"randomized {released.height:,} trips over {nb} blocks ({method}, epsilon "
        f"{'not DP' if eps is None else f'{eps:.4g}'}); undeclared block {bad.size:,} -> {out}"
    )


@app.command("perturb-trajectories")
@cli_guard
@_charged
def perturb_trajectories(
    input: Path = typer.Argument(..., help="CSV or Parquet of GPS points."),
    lat: str = typer.Option(..., "--lat", help="Latitude column."),
    lon: str = typer.Option(..., "--lon", help="Longitude column."),
    trip: str = typer.Option(..., "--trip", help="Trip (trajectory) id column."),
    order: str | None = typer.Option(
        None, "--order", help="Column giving the point order, e.g. time (default: file order)."
    ),
    epsilon: float = typer.Option(..., "--epsilon", help="SSD parameter epsilon (per step, report eq. 16)."),
    max_step_metres: float = typer.Option(..., "--max-step-metres", help="Declared maximum step M (metres)."),
    every: int = typer.Option(
        1, "--every", help="Keep every k-th point of each trip (fewer steps, less epsilon)."
    ),
    max_trips: int | None = typer.Option(
        None, "--max-trips", help="Process only the first K trips (default: all)."
    ),
    separator: str = typer.Option(",", "--separator", help="CSV field separator."),
    budget_epsilon: float | None = typer.Option(
        None, "--budget-epsilon", help="Refuse trips costing more (default: no cap)."
    ),
    out: Path = typer.Option(..., "--out", help="Output directory (trajectories.csv + privacy.json)."),
    dataset: str | None = typer.Option(None, "--dataset", help=DATASET_HELP),
    budget_store: str | None = typer.Option(None, "--budget-store", help=STORE_HELP),
    survey_date: str | None = typer.Option(None, "--survey-date", help=SURVEY_DATE_HELP),
    keep_columns: KeepColumns = None,
    overwrite: Overwrite = False,
) -> None:
    """SSD trajectory perturbation (report section 6.1, eq. 16); original-vs-perturbed PNG in owner_only/.

    Example: urbandp survey perturb-trajectories trips.csv --lat Y --lon X --trip trajectory_id --order t --epsilon 50 --out out/trajectories

    Released: --trip, --lat, --lon and --keep-columns. NOT DP (start and end points exact): refuses --dataset.
    """
    import numpy as np
    import polars as pl

    from urbandp.reports.outputs import atomic_output_dir, write_json
    from urbandp.survey import ssd
    from urbandp.survey.io import command_line, read_table, require_columns, write_frame

    _positive("--epsilon", epsilon)
    _positive("--max-step-metres", max_step_metres)
    ssd.check_work(epsilon)  # the work bound, from --epsilon alone, before the data is read
    not_dp = [
        "perturb-trajectories publishes every trip's start and end point unchanged",
        "the reachability loop depends on the true end point (leakage not accounted)",
        "a trip with a step longer than --max-step-metres or fewer than 3 points is quarantined (owner only), "
        "not released: its absence depends on its true points",
    ]
    for reason in not_dp:  # with --dataset the first one refuses the run
        _not_chargeable(reason)
    if every < 1:
        raise InputError("--every must be >= 1")
    frame = read_table(input, separator)
    require_columns(frame, input, lat, lon, trip, *([order] if order else []))
    public = release.public_columns(frame, input, keep_columns, None, {"--trip": trip}, [lat, lon])
    f = frame.with_row_index("row", offset=1).with_columns(
        pl.col(lat).cast(pl.Float64, strict=False).alias("__lat"),
        pl.col(lon).cast(pl.Float64, strict=False).alias("__lon"),
    )
    badmask = f.get_column("__lat").is_null() | f.get_column("__lon").is_null()
    bad = f.filter(badmask)
    f = f.filter(~badmask)
    if order:
        numeric = f.get_column(order).cast(pl.Float64, strict=False)
        key = numeric if numeric.null_count() == 0 else f.get_column(order).cast(pl.String)
        f = f.with_columns(key.alias("__order")).sort(trip, "__order", maintain_order=True).drop("__order")
    trips = f.get_column(trip).unique(maintain_order=True).to_list()
    if max_trips is not None:
        trips = trips[:max_trips]
    pieces = []
    plots = []
    skipped: list[pl.DataFrame] = []
    worst = 0.0
    for tid in trips:
        whole = f.filter(pl.col(trip) == tid)
        t = whole.gather_every(every)
        la = t.get_column("__lat").to_numpy()
        lo = t.get_column("__lon").to_numpy()
        xy = ssd.to_metres(la, lo, float(la[0]), float(lo[0]))
        steps = np.hypot(*np.diff(xy, axis=0).T)
        why = (
            "too_few_points"
            if len(la) < 3
            else "step_exceeds_max_step"
            if steps.max() > max_step_metres
            else ""
        )
        if why:
            skipped.append(whole.drop("__lat", "__lon").with_columns(pl.lit(why).alias("reason")))
            continue
        pert = ssd.perturb_trip(xy, epsilon, max_step_metres)
        nla, nlo = ssd.to_degrees(pert, float(la[0]), float(lo[0]))
        worst = max(worst, ssd.ssd_epsilon(epsilon, max(len(la) - 2, 0))["per_trip"])
        moved = t.drop("row", "__lat", "__lon").with_columns(pl.Series(lat, nla), pl.Series(lon, nlo))
        pieces.append(release.select_released(moved, public, [lat, lon]))
        plots.append((la, lo, nla, nlo))
    if not pieces:
        raise InputError(
            f"no trajectory of {input} is usable: each needs >= 3 points and every step <= --max-step-metres"
        )
    costs = ssd.ssd_epsilon(epsilon, 1)
    released = pl.concat(pieces, how="vertical_relaxed")
    owner = ["original_vs_perturbed.png", "quarantine.csv", "input_report.json"]
    with atomic_output_dir(out) as d:
        write_frame(released, d.release / "trajectories.csv")
        _plot_trajectories(plots, d.owner_path("original_vs_perturbed.png"), epsilon, max_step_metres)
        bad_rows = bad.drop("__lat", "__lon").with_columns(pl.lit("bad_coordinate").alias("reason"))
        pl.concat([*skipped, bad_rows], how="diagonal_relaxed").write_csv(d.owner_path("quarantine.csv"))
        report = {
            "trips_perturbed": len(pieces),
            "trips_quarantined": len(skipped),
            "points_released": released.height,
            "rows_with_bad_coordinate": bad.height,
            "epsilon_per_trip_max_data_dependent": worst,
        }
        write_json(d.owner_path("input_report.json"), release.input_report(report))
        write_privacy_json(
            d.release,
            {
                "command": command_line(),
                "unit": "trip",
                "neighbouring": "replace-one (one trip)",
                "mechanism": "SSD (Jiang et al. 2013) as in report section 6.1 eq. 16",
                "ssd_parameter_epsilon": epsilon,
                "max_step_metres": max_step_metres,
                "epsilon_per_point": costs["per_point"],
                "epsilon_per_trip": "epsilon_per_point x the trip's interior points (a trip of n + 2 released "
                "points costs n x epsilon_per_point)",
                "every": every,
                "public_columns": release.declaration(public),
                "ledger": _ledger(
                    budget_epsilon,
                    "perturb-trajectories (per interior point)",
                    costs["per_point"],
                    "trip",
                    "SSD",
                ),
                "not_dp_outputs": release.owner_files(out, owner),
                "not_dp_reasons": list(_SESSION.get()[0].not_dp_reasons),
            },
        )
    _published(out)
    _say(
        f"quarantined {len(skipped)} trips; perturbed {len(pieces)} trips, {released.height:,} points (epsilon per point "
        f"{costs['per_point']:.4g}, largest trip {worst:.4g}) -> {out}"
    )


def _plot_trajectories(plots: list[tuple], path: Path, epsilon: float, m: float) -> None:
    import matplotlib
    import numpy as np

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    shown = plots[:6]
    cols = min(3, len(shown))
    rows = (len(shown) + cols - 1) // cols
    fig, axes = plt.subplots(rows, cols, figsize=(4.6 * cols, 4.2 * rows), squeeze=False)
    for ax in axes.ravel()[len(shown) :]:
        ax.axis("off")
    for k, (ax, (la, lo, nla, nlo)) in enumerate(zip(axes.ravel(), shown, strict=False)):
        ax.plot(lo, la, "-", color="black", lw=1.4, label="original")
        ax.plot(nlo, nla, "-", color="tab:red", lw=0.9, alpha=0.85, label="SSD perturbed")
        ax.plot([lo[0], lo[-1]], [la[0], la[-1]], "o", color="tab:blue", ms=5, label="start/end (exact)")
        ax.set_title(f"trip {k + 1}: {len(la)} points", fontsize=9)
        ax.tick_params(labelsize=7)
        ax.set_aspect(1.0 / np.cos(np.radians(float(np.mean(la)))))
        if k == 0:
            ax.legend(fontsize=7)
    fig.suptitle(
        f"SSD (report eq. 16), epsilon={epsilon:g}, M={m:g} m. Owner only: shows the true trips.", fontsize=10
    )
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)

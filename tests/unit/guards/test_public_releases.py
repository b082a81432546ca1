"""Nothing public releases without the guards, from Python: every public callable of every wing that returns or
writes a labelled release is found by walking urbandp's public modules, and each one is shown to pass each guard.

The guards (``urbandp._privacy.guards``, run by the Session's charge): the meaningless-loss limit, the delta limit,
a noise source that is not private (the release is labelled NOT DP, and refused with a budget dataset), and output
safety. The command line's counterpart runs each command as a real process (the system tests' guards folder).
"""

from __future__ import annotations

import datetime as dt
import importlib
import inspect
import pkgutil
import re
import sqlite3
import warnings
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import polars as pl
import pytest
from typer.testing import CliRunner

import urbandp
import urbandp as ud
from urbandp._privacy.budget_store import DatasetCaps, open_store
from urbandp._privacy.guards import MAX_DELTA, NOT_PRIVATE_NOISE, noise_reasons
from urbandp._privacy.loss import Loss
from urbandp._privacy.noise import ExactNoiseForTesting, OpenDPNoise
from urbandp._privacy.session import NoiseBeforeReservation, ReleaseCharge
from urbandp.cli import app
from urbandp.counts._options import CountsReleaseSpec
from urbandp.errors import InvalidParameterError, UrbandpError

SENSING_BOX = (22.49, 88.32, 22.60, 88.44)
DAY = "2024-01-15"
FLEET_WINDOW = {"start": "2021-11-15", "end": "2021-11-16"}


class Counted:
    """A noise source counting its draws (a refused release must draw none); private exactly when ``source`` is."""

    def __init__(self, source: Any) -> None:
        self.source, self.draws = source, 0
        self.is_private = source.is_private

    def _count(self, name: str, values: np.ndarray, *args: Any) -> np.ndarray:
        self.draws += 1
        return getattr(self.source, name)(values, *args)  # type: ignore[no-any-return]

    def laplace(self, values: np.ndarray, scale: Any) -> np.ndarray:
        return self._count("laplace", values, scale)

    def discrete_laplace(self, values: np.ndarray, scale: Any) -> np.ndarray:
        return self._count("discrete_laplace", values, scale)

    def gaussian(self, values: np.ndarray, scale: Any) -> np.ndarray:
        return self._count("gaussian", values, scale)

    def discrete_gaussian(self, values: np.ndarray, scale: Any) -> np.ndarray:
        return self._count("discrete_gaussian", values, scale)

    def laplace_on_lattice(self, values: np.ndarray, scale: float, exponent: int) -> np.ndarray:
        if hasattr(self.source, "laplace_on_lattice"):
            return self._count("laplace_on_lattice", values, scale, exponent)
        return self._count("laplace", values, scale)


def exact() -> Counted:
    return Counted(ExactNoiseForTesting(acknowledge_not_private=True))


# --- the public releases, each with a call on small inputs --------------------------------------------------------

Call = Callable[..., Any]
"""``call(inputs, epsilon, session, out, **extra)``: the release on the inputs folder."""


def _fleet(d: Path, eps: float, session: ud.Session | None, out: Path | None, **extra: Any) -> Any:
    return ud.fleet.release(d / "fleet.parquet", **FLEET_WINDOW, epsilon_per_day=eps, with_map=False,
                            session=session, out=out, **extra)  # fmt: skip


def _release_fleet(d: Path, eps: float, session: ud.Session | None, out: Path | None, **extra: Any) -> Any:
    """The pipeline's release: a Python entry point of its own (a local charge from ``noise`` without a session)."""
    from urbandp.fleet._options import HatReleaseConfig
    from urbandp.fleet._pipeline import release_fleet

    assert out is None
    cfg = HatReleaseConfig(epsilon_per_day=eps, start=FLEET_WINDOW["start"], end=FLEET_WINDOW["end"], **extra)
    if session is None:
        return release_fleet([d / "fleet.parquet"], cfg)[0]
    with session.charge("vehicle-day") as charge:
        return release_fleet([d / "fleet.parquet"], cfg, session=charge)[0]


def _counts(d: Path, eps: float, session: ud.Session | None, out: Path | None, **extra: Any) -> Any:
    return ud.counts.release(d / "taps" / "events.csv", domain=d / "taps" / "domain.json", unit="card-day",
                             max_events=4, epsilon=eps, session=session, out=out, **extra)  # fmt: skip


def _selected(d: Path, eps: float, session: ud.Session | None, out: Path | None, **extra: Any) -> Any:
    """No public domain: the cells selected by OpenDP's threshold (partition selection, delta > 0)."""
    return ud.counts.release(d / "taps" / "events.csv", select_partitions=True, unit="card-day", max_events=4,
                             epsilon=eps, delta=extra.get("delta", 1e-6), session=session, out=out)  # fmt: skip


def _randomize(d: Path, eps: float, session: ud.Session | None, out: Path | None, **extra: Any) -> Any:
    return ud.survey.randomize(d / "sv" / "vehicles.csv", column="model", categories_file=d / "sv" / "models.csv",
                               within="fuel", epsilon=eps, survey_date=DAY, session=session, out=out)  # fmt: skip


def _points(d: Path, eps: float, session: ud.Session | None, out: Path | None, **extra: Any) -> Any:
    # epsilon per metre: the loss per respondent is it times budget_metres (1000 m by default)
    return ud.survey.perturb_points(d / "sv" / "homes.csv", lat="lat", lon="lon", epsilon_per_metre=eps / 1000,
                                    survey_date=DAY, session=session, out=out)  # fmt: skip


def _od(d: Path, eps: float, session: ud.Session | None, out: Path | None, **extra: Any) -> Any:
    return ud.survey.od_randomize(d / "sv" / "trips.csv", origin="from_county", dest="to_county", blocks=19,
                                  epsilon=eps, survey_date=DAY, session=session, out=out)  # fmt: skip


def _trajectories(d: Path, eps: float, session: ud.Session | None, out: Path | None, **extra: Any) -> Any:
    return ud.survey.perturb_trajectories(d / "sv" / "two_trips.csv", lat="lat", lon="lon", trip="trip",
                                          order="seq", epsilon=eps, max_step_metres=500.0, survey_date=DAY,
                                          session=session, out=out)  # fmt: skip


def _dp_map(d: Path, eps: float, session: ud.Session | None, out: Path | None, **extra: Any) -> Any:
    # epsilon per cell: a vehicle-day pays the day's windows x cells composed, so "1" is 0.05 per cell here
    return ud.sensing.dp_map(d / "sens.csv", bbox=SENSING_BOX, cell_metres=2000.0, start=DAY, end=DAY,
                             epsilon=eps * 0.05, utility_epsilons=(), session=session, out=out, **extra)  # fmt: skip


def _pm_map(d: Path, eps: float, session: ud.Session | None, out: Path | None, **extra: Any) -> Any:
    return ud.sensing.pm_map(d / "sens.csv", bbox=SENSING_BOX, start=DAY, end=DAY, epsilon=eps, smoother="none",
                             session=session, out=out)  # fmt: skip


def _query(d: Path, eps: float, session: ud.Session | None, out: Path | None, **extra: Any) -> Any:
    return ud.sensing.query(d / "interp" / "grid.parquet", rect=SENSING_BOX, alpha=1, epsilon=eps,
                            sigma2_min=0.0, sigma2_max=800.0, session=session,
                            out=None if out is None else out / "answer.json")  # fmt: skip


def _mean(d: Path, eps: float, session: ud.Session | None, out: Path | None, **extra: Any) -> Any:
    return ud.estimators.release(d / "speeds.csv", unit_column="vid", value_column="speed", upper=65.0,
                                 epsilon=eps, day=DAY, session=session, out=out)  # fmt: skip


@dataclass(frozen=True)
class PublicRelease:
    """A public release callable: its dotted name, a call on small inputs, and what it takes."""

    name: str
    call: Call
    unit: str
    delta: dict[str, object] | None = None  # the options that ask for a delta of 0.99, where it takes one
    dp: bool = True  # False: never DP (the sensing query's value), so always refused with a dataset
    writes: bool = True  # takes ``out``, a folder
    # False: a NOT DP release that reserves nothing (at a meaningless epsilon it stays labelled NOT DP)
    reserves: bool = True


RELEASES = [
    PublicRelease("urbandp.fleet._api.release", _fleet, "vehicle-day", {"delta": 0.99}),
    PublicRelease(
        "urbandp.fleet._pipeline.release_fleet", _release_fleet, "vehicle-day", {"delta": 0.99}, writes=False
    ),
    PublicRelease(
        "urbandp.counts._api.release", _counts, "card-day", {"mechanism": "gaussian", "delta": 0.99}
    ),
    PublicRelease("urbandp.counts._api.release", _selected, "card-day", {"delta": 0.99}),
    PublicRelease("urbandp.survey._api.randomize", _randomize, "respondent"),
    PublicRelease(
        "urbandp.survey._api.perturb_points", _points, "respondent", dp=False
    ),  # geo-indistinguishable
    PublicRelease("urbandp.survey._api.od_randomize", _od, "trip"),
    PublicRelease(
        "urbandp.survey._api.perturb_trajectories", _trajectories, "respondent", dp=False, reserves=False
    ),
    PublicRelease("urbandp.sensing._api.dp_map", _dp_map, "vehicle-day", {"delta": 0.99}),
    PublicRelease("urbandp.sensing._api.pm_map", _pm_map, "vehicle-day"),
    PublicRelease("urbandp.sensing._api.query", _query, "reading", dp=False, writes=False),  # writes a file
    PublicRelease("urbandp.estimators._api.release", _mean, "vehicle-day"),
]
BY_NAME = {r.name: r for r in RELEASES}  # counts.release twice: on a public domain, and selecting partitions

DELEGATES = {
    "urbandp.counts._api.release_spec": "urbandp.counts._api.release",
    "urbandp.estimators._api.release_spec": "urbandp.estimators._api.release",
    "urbandp.sensing._dp_map_release.run_dp_map": "urbandp.sensing._api.dp_map",
    "urbandp.sensing._pm_map_release.run_pm_map": "urbandp.sensing._api.pm_map",
    "urbandp.sensing._query_release.run_sensing_query": "urbandp.sensing._api.query",
    "urbandp.survey._result.run_release": "urbandp.survey._api.randomize",
    "urbandp.counts._selection.release_selected": "urbandp.counts._api.release_spec",
    "urbandp.survey._rr_release.randomize_body": "urbandp.survey._api.randomize",
    "urbandp.survey._points_release.points_body": "urbandp.survey._api.perturb_points",
    "urbandp.survey._od_release.od_body": "urbandp.survey._api.od_randomize",
    "urbandp.survey._trajectory_release.trajectories_body": "urbandp.survey._api.perturb_trajectories",
}
"""Public callables that release only inside a charge they are given or open (their caller's guards): each is
called by the release named, whose call below passes every guard."""

NOT_RELEASES = {
    "urbandp._privacy.report.write_privacy_json": "the one serializer: it writes the document it is given",
    "urbandp.sensing._result.SensingRelease.write_folder": "writes a release the Session already charged",
    "urbandp.survey._result.SurveyRelease.write_folder": "writes a release the Session already charged",
    "urbandp.survey._cli.escape": "the escape simulation (a command), labelled NOT DP, never charged",
}
"""Public callables that write privacy.json without drawing: they label what they are given."""


_DRAW = "draws into bare values (no privacy verdict, no file) inside the charge of "
MECHANISMS = {
    "urbandp.counts._data61.second_algorithm": "the NOT DP Data61 method's step, " + _DRAW + "counts.release",
    "urbandp.counts._parallel_noise.add_noise": _DRAW + "counts.release",
    "urbandp.counts._sparse.sparse_release": _DRAW + "counts.release",
    "urbandp.estimators._core._Estimator.estimate": _DRAW
    + "estimators.release (a documented building block, for each of the five estimators)",
    "urbandp.estimators._hat_means.estimate_hat_means": _DRAW + "fleet.release (one mean per HAT)",
    "urbandp.fleet._plan_forecast.dp_histogram": "the planner's DP histogram, " + _DRAW + "plan",
    "urbandp.fleet._plan_forecast.dp_pilot": "the planner's pilot (the release's own noisy counts), "
    + _DRAW
    + "plan",
    "urbandp.fleet._plan_forecast.paid_pilot": "the planner's paid inputs (pilot and histogram), "
    + _DRAW
    + "plan",
    "urbandp.fleet._measure.select_hats": _DRAW + "fleet.release",
    "urbandp.fleet._measure.fieller_z": "reads noise.is_private only (Fieller's z): draws nothing",
    "urbandp.fleet._measure.measure_queries": _DRAW + "fleet.release",
    "urbandp.fleet._measure.user_level_means": _DRAW + "fleet.release",
    "urbandp.fleet._measure.choose_clip_bound": _DRAW + "fleet.release",
    "urbandp.fleet._measure_selection.measure_selection": _DRAW + "fleet.release",
    "urbandp.mpc._program.clamp_noisy": "the secure program's clamp of a noise share drawn by the server",
    "urbandp.mpc._spec.draw_noise": _DRAW + "the mpc server (each query booked before it is drawn)",
    "urbandp._privacy.mechanisms.Mechanism.draw": _DRAW + "each wing's release",
    "urbandp._privacy.mechanisms.Laplace.draw": _DRAW + "each wing's release",
    "urbandp._privacy.mechanisms.Gaussian.draw": _DRAW + "each wing's release",
    "urbandp.sensing._bounded_laplace.BoundedLaplace.draw": _DRAW + "sensing.dp_map",
    "urbandp.sensing._bounded_laplace.BoundedLaplace.release": _DRAW + "sensing.dp_map",
    "urbandp.sensing._pm_map_mechanism.measure_pm_map": _DRAW + "sensing.pm_map",
    "urbandp.sensing._queries.privatize_error": _DRAW + "sensing.query",
    "urbandp.survey._locations.planar_laplace_offsets": _DRAW + "survey.perturb_points",
    "urbandp.survey._locations.axis_laplace_offsets": _DRAW + "survey.perturb_points",
}
"""Public callables that take a noise source and return bare noisy values: no privacy.json, no ``privacy``, no
"differentially_private" to misstate. Each is a step of a release that calls it inside its charge."""


def _public_modules() -> Iterator[Any]:
    """Every module but ``__main__`` (it runs the CLI), internal (``_``-prefixed) ones included: a callable not
    ``_``-prefixed in an internal module is one a release may call, so it is classified here too."""
    for info in pkgutil.walk_packages(urbandp.__path__, "urbandp."):
        if any(part.startswith("__") for part in info.name.split(".")[1:]):
            continue
        leaf = info.name.split(".")[-1].lstrip("_")
        if info.name.startswith("urbandp.mpc.") and leaf in ("server", "client", "party"):
            continue  # they import SecretFlow SPU (an optional extra); the mpc server charges through a Session
        yield importlib.import_module(info.name)


def _labelled_classes(modules: list[Any]) -> set[str]:
    """Names of the classes whose instances carry a privacy document (a ``privacy`` field)."""
    names = set()
    for module in modules:
        for name, obj in vars(module).items():
            if inspect.isclass(obj) and obj.__module__ == module.__name__:
                fields: dict[str, object] = {}
                for klass in reversed(obj.__mro__):
                    fields.update(getattr(klass, "__annotations__", {}))
                if "privacy" in fields:
                    names.add(name)
    return names


def _callables(module: Any) -> Iterator[tuple[str, Callable[..., Any]]]:
    for name, obj in vars(module).items():
        if name.startswith("_") or getattr(obj, "__module__", None) != module.__name__:
            continue
        if inspect.isfunction(obj):
            yield f"{module.__name__}.{name}", obj
        elif inspect.isclass(obj):
            yield from _public_methods(obj)


def _public_methods(cls: type) -> Iterator[tuple[str, Callable[..., Any]]]:
    """A class's public methods, those it inherits from urbandp's own bases too, each named where it is defined."""
    for attr in dir(cls):
        fn = inspect.getattr_static(cls, attr)
        if not attr.startswith("_") and inspect.isfunction(fn) and fn.__module__.startswith("urbandp."):
            yield f"{fn.__module__}.{fn.__qualname__}", fn


def labelled_release_callables() -> dict[str, str]:
    """Every public callable that returns a labelled release (a class with ``privacy``) from a session, a charge
    or a noise source it is given, or that writes privacy.json: ``{dotted name: why it was found}``."""
    modules = list(_public_modules())
    labelled = _labelled_classes(modules)
    found: dict[str, str] = {}
    for module in modules:
        for name, fn in _callables(module):
            params = inspect.signature(fn).parameters
            returned = str(inspect.signature(fn).return_annotation)
            returns_release = any(re.search(rf"\b{c}\b", returned) for c in labelled)
            draws = [p for p in ("session", "charge", "noise") if p in params]
            if draws and returns_release:
                found[name] = f"takes {', '.join(draws)}, returns {returned}"
            elif "write_privacy_json(" in inspect.getsource(fn):
                found[name] = "writes privacy.json"
    return found


def test_every_public_callable_that_releases_is_listed_here() -> None:
    """Walk every public module: a callable found releasing is either a release whose guards are tested below, a
    function that releases inside its caller's charge, or a writer of an already-labelled document. A new public
    building block that draws a labelled release (as ``release_hats`` did) fails here."""
    found = labelled_release_callables()
    listed = set(BY_NAME) | set(DELEGATES) | set(NOT_RELEASES)
    assert set(found) - listed == set(), {k: found[k] for k in set(found) - listed}
    assert listed - set(found) == set()  # no stale entry: each one listed is found
    for name in (*BY_NAME, *DELEGATES):  # no building block that takes a noise source releases publicly
        assert "noise" not in found[name] or name == "urbandp.fleet._pipeline.release_fleet", found[name]


def test_every_public_callable_that_takes_a_noise_source_is_classified() -> None:
    """Every public callable that draws from a noise source it is given is either a release listed above or a
    mechanism step that returns bare values (listed, with the release that calls it); none of the steps is
    exported by a wing, except the estimators' classes (documented building blocks, whose ``MeanEstimate`` says
    ``is_private``)."""
    takes_noise = {
        name
        for module in _public_modules()
        for name, fn in _callables(module)
        if "noise" in inspect.signature(fn).parameters
    }
    assert takes_noise == set(MECHANISMS) | {"urbandp.fleet._pipeline.release_fleet"}
    exported_steps = set()
    for wing in WINGS:
        package = importlib.import_module(f"urbandp.{wing}")
        for name in package.__all__:
            obj = getattr(package, name)
            names = (
                {qualified for qualified, _ in _public_methods(obj)}
                if inspect.isclass(obj)
                else {f"{getattr(obj, '__module__', '')}.{getattr(obj, '__qualname__', '')}"}
            )
            if names & set(MECHANISMS):
                exported_steps.add(name)
    assert exported_steps == {"Baseline", "ArrayAveraging", "Levy", "Quantile", "ClippedMean"}
    assert not hasattr(
        ud.estimators, "estimate_hat_means"
    )  # a table of noisy means with no guard: not exported


WINGS = ("fleet", "counts", "survey", "sensing", "estimators", "audit")


@pytest.mark.parametrize(("delegate", "caller"), sorted(DELEGATES.items()))
def test_each_delegate_is_called_by_its_release(delegate: str, caller: str) -> None:
    """The release listed for a delegate does call it, so the guards tested on the release guard it."""
    module_name, _, leaf = caller.rpartition(".")
    source = inspect.getsource(getattr(importlib.import_module(module_name), leaf))
    callee = delegate.rpartition(".")[2]
    module = importlib.import_module(delegate.rpartition(".")[0])
    called = re.search(rf"\b{callee}[(,]", source)  # called, or passed to the one runner that calls it
    assert called or _called_in_module(module_name, callee), (caller, callee)
    assert callable(getattr(module, callee))


def _called_in_module(module_name: str, callee: str) -> bool:
    """The callee is called from the caller's module (the wing's release helpers live beside the release)."""
    return bool(re.search(rf"\b{callee}\(", inspect.getsource(importlib.import_module(module_name))))


@pytest.mark.parametrize(
    "name",
    ["urbandp.fleet._hat_release.release_hats", "urbandp.fleet._pipeline.write_release",
     "urbandp.counts._table_release.release_counts",
     "urbandp.sensing._dp_map_mechanism.release_dp_map"],
)  # fmt: skip
def test_the_unguarded_building_blocks_are_internal(name: str) -> None:
    module_name, _, leaf = name.rpartition(".")
    module = importlib.import_module(module_name)
    assert not hasattr(module, leaf) and callable(getattr(module, f"_{leaf}"))
    assert leaf not in getattr(module, "__all__", [])
    assert "release_counts" not in ud.counts.__all__


# --- inputs --------------------------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def inputs(tmp_path_factory: pytest.TempPathFactory) -> Path:
    d = tmp_path_factory.mktemp("inputs")
    runner = CliRunner()
    for args in (
        ["synth", "fleet", "--vehicles", "4", "--days", "2", "--out", str(d / "fleet.parquet")],
        ["counts", "synth", "--days", "1", "--trips-per-day", "50", "--out", str(d / "taps")],
        ["synth", "survey", "--households", "50", "--out", str(d / "sv")],
        ["sensing", "synth", str(d / "sens.csv"), "--readings", "300", "--vehicles", "4", "--hours", "2",
         "--seed", "3"],
    ):  # fmt: skip
        res = runner.invoke(app, args)
        assert res.exit_code == 0, res.output
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ud.sensing.interpolate(d / "sens.csv", out=d / "interp", cell_metres=1000.0, bbox=SENSING_BOX)
    trajectories = pl.read_csv(d / "sv" / "trajectories.csv")
    small = (pl.col("trip") <= 2) & (
        pl.col("seq") < 12
    )  # two short trips: the release runs in under a second
    trajectories.filter(small).write_csv(d / "sv" / "two_trips.csv")
    rng = np.random.default_rng(0)
    sizes = rng.integers(5, 15, 60)
    pl.DataFrame(
        {"vid": [f"u{i:03d}" for i, n in enumerate(sizes) for _ in range(n)],
         "speed": rng.uniform(10.0, 50.0, int(sizes.sum()))}
    ).write_csv(d / "speeds.csv")  # fmt: skip
    return d


def _store(tmp_path: Path, unit: str) -> str:
    url = str(tmp_path / "budget.sqlite")
    store = open_store(url)
    try:
        store.init_dataset(DatasetCaps("d", unit, None, 1000.0))
    finally:
        store.close()
    return url


def _booked(url: str) -> int:
    with sqlite3.connect(url) as db:
        return int(db.execute("SELECT COUNT(*) FROM releases").fetchone()[0])


def _quiet(call: Callable[[], Any]) -> Any:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return call()


IDS = [r.name.rpartition(".")[2] if "api" in r.name else r.name.split(".")[-1] for r in RELEASES]
IDS = [
    f"{r.name.split('.')[1]}.{i}{'-select' if r.call is _selected else ''}"
    for r, i in zip(RELEASES, IDS, strict=True)
]


# --- each guard on each release ------------------------------------------------------------------------------------


@pytest.mark.parametrize("release", RELEASES, ids=IDS)
def test_a_source_that_is_not_private_labels_the_release_not_dp(release: PublicRelease, inputs: Path) -> None:
    """The same release is DP from OpenDP's samplers and NOT DP from the exact source, with the reason."""
    private = _document(
        _quiet(lambda: release.call(inputs, 1.0, ud.Session(noise=Counted(OpenDPNoise())), None))
    )
    assert private["differentially_private"] is release.dp, private["not_dp_reasons"]
    assert NOT_PRIVATE_NOISE not in private["not_dp_reasons"]
    noise = exact()
    labelled = _document(_quiet(lambda: release.call(inputs, 1.0, ud.Session(noise=noise), None)))
    assert labelled["differentially_private"] is False
    assert NOT_PRIVATE_NOISE in labelled["not_dp_reasons"], labelled["not_dp_reasons"]
    # the same reasons otherwise: the source's is added, nothing else changes
    assert [r for r in labelled["not_dp_reasons"] if r != NOT_PRIVATE_NOISE] == private["not_dp_reasons"]


def _document(release: Any) -> dict[str, Any]:
    """privacy.json's document of a release (the pipeline's HatRelease holds it as a dict)."""
    privacy = release.privacy
    return dict(privacy) if isinstance(privacy, dict) else privacy.to_dict()  # type: ignore[no-any-return]


@pytest.mark.parametrize("release", RELEASES, ids=IDS)
def test_a_source_that_is_not_private_is_refused_with_a_dataset(
    release: PublicRelease, inputs: Path, tmp_path: Path
) -> None:
    url, noise, out = _store(tmp_path, release.unit), exact(), tmp_path / "rel"
    with pytest.raises(InvalidParameterError, match="NOT differentially private") as caught:
        release.call(inputs, 1.0, ud.Session(url, "d", noise=noise), out if release.writes else None)
    assert caught.value.parameters == ("dataset",)
    assert NOT_PRIVATE_NOISE in str(caught.value)
    assert noise.draws == 0 and _booked(url) == 0 and not out.exists()


@pytest.mark.parametrize("release", RELEASES, ids=IDS)
def test_a_meaningless_epsilon_is_refused(release: PublicRelease, inputs: Path, tmp_path: Path) -> None:
    noise, out = Counted(OpenDPNoise()), tmp_path / "rel"
    if not release.reserves:  # NOT DP whatever its loss: it reserves nothing, and says so
        doc = _document(_quiet(lambda: release.call(inputs, 1e300, ud.Session(noise=noise), None)))
        assert doc["differentially_private"] is False and doc["not_dp_reasons"]
        return
    with pytest.raises(InvalidParameterError, match=r"above 100\b"):
        release.call(inputs, 1e300, ud.Session(noise=noise), out if release.writes else None)
    assert noise.draws == 0 and not out.exists()


DELTAS = [r for r in RELEASES if r.delta is not None]


@pytest.mark.parametrize("release", DELTAS, ids=[i for r, i in zip(RELEASES, IDS, strict=True) if r.delta])
def test_a_delta_above_the_limit_is_refused(release: PublicRelease, inputs: Path, tmp_path: Path) -> None:
    noise, out = Counted(OpenDPNoise()), tmp_path / "rel"
    assert release.delta is not None
    with pytest.raises(InvalidParameterError, match=r"0\.99 is above 1e-05") as caught:
        release.call(inputs, 1.0, ud.Session(noise=noise), out if release.writes else None, **release.delta)
    assert "delta" in str(caught.value)
    assert noise.draws == 0 and not out.exists()


WRITERS = [r for r in RELEASES if r.writes]


@pytest.mark.parametrize("release", WRITERS, ids=[i for r, i in zip(RELEASES, IDS, strict=True) if r.writes])
def test_an_output_named_like_the_owner_folder_is_refused(
    release: PublicRelease, inputs: Path, tmp_path: Path
) -> None:
    noise, out = Counted(OpenDPNoise()), tmp_path / "owner_only"
    with pytest.raises(UrbandpError, match="owner_only"):
        release.call(inputs, 1.0, ud.Session(noise=noise), out)
    assert noise.draws == 0 and not out.exists()


# --- the Session alone, and the counts spec from Python -------------------------------------------------------------


def test_the_session_alone_refuses_a_delta_above_the_limit() -> None:
    """``check_loss`` (and so ``reserve``) refuses a delta above the limit with no wing's spec in front of it."""
    charge = ReleaseCharge(None, None, unit="vehicle-day")
    with pytest.raises(InvalidParameterError, match=r"delta \(per unit and day\) 0\.001 is above 1e-05"):
        charge.check_loss(Loss.approx_dp(1.0, 1e-3))
    with pytest.raises(InvalidParameterError, match=r"delta 0\.5 is above 1e-05"):
        ReleaseCharge(None, None, unit="vehicle-day", conversion_delta=0.5).check_loss(Loss.zcdp(0.1))
    with charge, pytest.raises(InvalidParameterError, match="is above 1e-05"):
        charge.reserve(Loss.approx_dp(1.0, MAX_DELTA * 2), [dt.date(2024, 1, 15)], "test")
    assert not charge.reserved
    with pytest.raises(NoiseBeforeReservation):
        charge.noise.laplace(np.zeros(1), 1.0)
    assert charge.check_loss(Loss.approx_dp(1.0, MAX_DELTA)) == []  # the limit itself is accepted
    with pytest.raises(InvalidParameterError, match=r"epsilon 1e\+300 per vehicle-day is above 100"):
        charge.check_loss(Loss.pure(1e300))
    allowed = ReleaseCharge(None, None, unit="vehicle-day", allow_meaningless_epsilon=True)
    assert allowed.check_loss(Loss.pure(1e300)) == allowed.not_dp_reasons != []  # labelled NOT DP instead


def test_the_session_alone_labels_and_refuses_a_source_that_is_not_private(tmp_path: Path) -> None:
    source = ExactNoiseForTesting(acknowledge_not_private=True)
    assert noise_reasons(source) == [NOT_PRIVATE_NOISE] and noise_reasons(OpenDPNoise()) == []

    class Truthy(OpenDPNoise):
        is_private = 1  # type: ignore[assignment]  # only the declaration True counts

    assert noise_reasons(Truthy()) == [NOT_PRIVATE_NOISE]
    charge = ReleaseCharge(None, None, unit="vehicle-day", noise=source)
    assert charge.check_loss(Loss.pure(1.0)) == [] and charge.not_dp_reasons == [NOT_PRIVATE_NOISE]
    assert ud.Session(noise=source).charge("vehicle-day").not_dp_reasons == [NOT_PRIVATE_NOISE]
    url = _store(tmp_path, "vehicle-day")
    with pytest.raises(InvalidParameterError, match="NOT differentially private"):
        ud.Session(url, "d", noise=source).charge("vehicle-day")
    with pytest.raises(InvalidParameterError, match="NOT differentially private"):
        ReleaseCharge("d", url, unit="vehicle-day", noise=source).check_loss(Loss.pure(1.0))
    assert ud.Session(url, "d").charge("vehicle-day").not_dp_reasons == []


@pytest.mark.parametrize("delta", [0.99, 1e-4])
def test_the_counts_spec_refuses_a_delta_above_the_limit_from_python(delta: float, tmp_path: Path) -> None:
    """The counts spec's own delta guard, before any input is read (the file named does not exist)."""
    with pytest.raises(InvalidParameterError, match=r"^delta \S+ is above 1e-05") as caught:
        ud.counts.release(tmp_path / "never-read.csv", domain=tmp_path / "never.json", mechanism="gaussian",
                          epsilon=1.0, delta=delta)  # fmt: skip
    assert caught.value.parameters == ("delta",)
    options = {f: None for f in ("domain", "epsilon")}
    with pytest.raises(InvalidParameterError, match="is above 1e-05"):
        CountsReleaseSpec(**{**_spec_defaults(), **options, "epsilon": 1.0, "mechanism": "gaussian",
                             "delta": delta})  # fmt: skip


def _spec_defaults() -> dict[str, Any]:
    return {n: f.default for n, f in CountsReleaseSpec.model_fields.items() if not f.is_required()}


def test_the_dp_map_refuses_a_delta_above_the_limit_before_reading(tmp_path: Path) -> None:
    """The dp-map options' own delta guard, before the readings are read."""
    with pytest.raises(InvalidParameterError, match=r"^delta 0\.99 is above 1e-05") as caught:
        ud.sensing.dp_map(tmp_path / "never-read.csv", bbox=SENSING_BOX, start=DAY, end=DAY, delta=0.99)
    assert caught.value.parameters == ("delta",)


def test_the_mpc_server_books_no_query_drawn_from_a_source_that_is_not_private(tmp_path: Path) -> None:
    """Each secure query is booked through a Session that holds the server's noise source: an exact one is
    refused before anything is booked (the server refuses it at start, the same rule)."""
    from urbandp.mpc._server import ClientBudget, declare_default_dataset

    url = str(tmp_path / "b.sqlite")
    declare_default_dataset(url, "mpc:grid:w")
    budget = ClientBudget(1.0, url, "mpc:grid:w", dt.date(2023, 10, 9), noise=exact())
    with pytest.raises(InvalidParameterError, match="NOT differentially private"):
        budget.charge("a", 0.4)
    assert _booked(url) == 0
    assert ClientBudget(1.0, url, "mpc:grid:w", dt.date(2023, 10, 9), noise=OpenDPNoise()).charge(
        "a", 0.4
    ) == (pytest.approx(0.6))
    assert _booked(url) == 1


def test_the_mpc_server_refuses_a_source_that_is_not_private_at_start(tmp_path: Path) -> None:
    from urbandp.mpc._server import Server, ServerGrid
    from urbandp.mpc._spec import ServeOptions

    one = np.array([1.0])
    grid = ServerGrid(np.array([7], dtype=np.int64), one, one, one, one, "2023-10-09T00:00", "g")
    cfg = ServeOptions(grid=Path("g.csv"), alpha=1, epsilon=1.0, epsilon_budget=10.0, sigma2_max=1.0)
    url = str(tmp_path / "b.sqlite")
    with pytest.raises(InvalidParameterError, match="NOT differentially private"):
        Server(grid, cfg, noise=exact(), budget_store=url)
    assert Server(grid, cfg, noise=OpenDPNoise(), budget_store=url).budget.noise is not None

"""Library errors of the fleet release (and of the modules it uses) name the parameter as Python does; the command
line's text, ``err.naming(flag_of)``, is the one it printed before; a value read from the fleet's TOML is named by
its key in the file (issue 31).

Each ``cli`` string below is the message the command line printed before issue 31, kept byte for byte.
"""

from __future__ import annotations

import datetime as dt
import socket
import types
from collections.abc import Callable
from pathlib import Path

import polars as pl
import pytest

from urbandp._contributions.base import ContributionSpec
from urbandp._contributions.spark_backend import _input_error
from urbandp._contributions.spark_session import check_engine, check_master_reachable
from urbandp._grid.slots import parse_hours
from urbandp._outputs import check_output_file, output_policy
from urbandp._privacy.budget_store import DatasetCaps
from urbandp._privacy.guards import check_delta, meaningless_reasons, refuse_not_dp
from urbandp._privacy.loss import Loss
from urbandp._records.gtfs_realtime import check_speed_unit
from urbandp._records.schema import ColumnMapping
from urbandp._records.validation import ValidationOptions
from urbandp._reports.map import parse_tiles, read_context
from urbandp.errors import InputError, flag_of
from urbandp.fleet import _api as api
from urbandp.fleet._domain import load_public_domain
from urbandp.fleet._explore import check_min_vehicles_per_day
from urbandp.fleet._guardrails import _refuse_unchargeable
from urbandp.fleet._options import HatReleaseConfig
from urbandp.fleet._options_input import (
    _day_list,
    configure,
    parse_columns,
    read_records,
    validation_options,
)
from urbandp.fleet._pipeline import NoValidRecords, date_window
from urbandp.fleet._plan_forecast import check_target_error


def _refused(call: Callable[[], object]) -> InputError:
    with pytest.raises(InputError) as caught:
        call()
    return caught.value


def _names(err: InputError, python: str, parameters: tuple[str, ...], cli: str) -> None:
    """The library's message and parameters, and the command line's text (each parameter by its flag)."""
    assert str(err) == python
    assert err.parameters == parameters
    assert "--" not in python
    assert err.naming(flag_of) == cli


def _options(**given: object) -> dict[str, object]:
    """The options of a release as :func:`configure` takes them (every other option not given)."""
    return {**dict.fromkeys(api.OPTION_NAMES), **given, "column": None, "config": None}


def test_spec_options_name_the_parameter() -> None:
    _names(
        _refused(lambda: parse_columns(["vehicle"], {})),
        "column must look like NAME=SOURCE (e.g. vehicle=bus_id), got 'vehicle'",
        ("column",),
        "--column must look like NAME=SOURCE (e.g. vehicle=bus_id), got 'vehicle'",
    )
    _names(
        _refused(lambda: configure(_options(noise_scale=1, start="2021-13-01"))),
        "start must be a date YYYY-MM-DD, got '2021-13-01'",
        ("start",),
        "--start must be a date YYYY-MM-DD, got '2021-13-01'",
    )
    _names(
        _refused(lambda: _day_list("2021-11-15", Path("days.txt"), "dates")),
        "give dates or dates_file, not both (one would be dropped)",
        ("dates", "dates_file"),
        "give --dates or --dates-file, not both (one would be dropped)",
    )
    _names(
        _refused(lambda: configure(_options(noise_scale=1, domain_bbox="30.4,-97.8,30.2,-97.6"))),
        "domain_bbox must be finite min_lat,min_lon,max_lat,max_lon with min < max",
        ("domain_bbox",),
        "--domain-bbox must be finite min_lat,min_lon,max_lat,max_lon with min < max",
    )
    _names(
        _refused(lambda: configure(_options(noise_scale=1, max_hats_per_vehicle_day="many"))),
        "max_hats_per_vehicle_day must be a whole number or 'observed'",
        ("max_hats_per_vehicle_day",),
        "--max-hats-per-vehicle-day must be a whole number or 'observed'",
    )
    _names(
        _refused(lambda: validation_options(read_records({"speed_unit_since": ["2016=m/s"]}))),
        "speed_unit_since must look like 2016-01-01=m/s, got '2016=m/s'",
        ("speed_unit_since",),
        "--speed-unit-since must look like 2016-01-01=m/s, got '2016=m/s'",
    )
    _names(
        _refused(lambda: validation_options(read_records({"speed_reject_above": -1.0}))),
        "speed_reject_above must be a finite number > 0, got -1.0",
        ("speed_reject_above",),
        "--speed-reject-above must be a finite number > 0, got -1.0",
    )


def test_spec_validators_name_the_parameter() -> None:
    _names(
        _refused(lambda: HatReleaseConfig(**{"noise_scale": 1.0, "speed_estimator": "levy"})),
        "speed_estimator other than 'report' needs epsilon_per_day (it is calibrated by epsilon)",
        ("speed_estimator", "epsilon_per_day"),
        "--speed-estimator other than 'report' needs --epsilon-per-day (it is calibrated by epsilon)",
    )
    _names(
        _refused(
            lambda: HatReleaseConfig(
                **{"epsilon_per_day": 1.0, "speed_estimator": "levy", "mechanism": "gaussian"}
            )
        ),
        "speed_estimator other than 'report' is calibrated for Laplace; use mechanism laplace",
        ("speed_estimator", "mechanism"),
        "--speed-estimator other than 'report' is calibrated for Laplace; use --mechanism laplace",
    )
    _names(
        _refused(lambda: HatReleaseConfig(**{"noise_scale": 1.0, "coarsen": "parent1"})),
        "coarsen splits an epsilon budget between release steps: it needs epsilon_per_day and "
        "the report speed estimator",
        ("epsilon_per_day",),
        "coarsen splits an epsilon budget between release steps: it needs --epsilon-per-day "
        "and the report speed estimator",
    )
    # a field's message names it by its Python name, listed for the CLI to rename to its flag
    err = _refused(lambda: HatReleaseConfig(**{"noise_scale": 1.0, "speed_max": -1.0}))
    assert str(err).startswith("speed_max must be a finite number >= 1 and <= 500 ")
    assert err.parameters == ("speed_max",)
    assert err.naming(lambda p: "--" + p.replace("_", "-")).startswith(
        "--speed-max must be a finite number >= 1"
    )


def test_a_value_from_the_toml_is_named_by_its_key_in_the_file(tmp_path: Path) -> None:
    config = tmp_path / "c.toml"
    config.write_text('[release]\nspeed_estimator = "levy"\nnoise_scale = 1\n')
    err = _refused(lambda: api.release([], config=config))
    assert str(err) == (
        f"speed_estimator in {config} [release] other than 'report' needs epsilon_per_day "
        "(it is calibrated by epsilon)"
    )
    assert err.parameters == ("epsilon_per_day",)  # not in the file: the caller names it (the CLI: its flag)
    # the same key given as a parameter is named as one
    err = _refused(lambda: api.release([], config=config, speed_estimator="levy"))
    assert str(err).startswith("speed_estimator other than 'report'")
    config.write_text(
        '[release]\nnoise_scale = 1\n[input]\ntimezone = ""\nspeed_unit_since = {2016 = "m/s"}\n'
    )
    err = _refused(lambda: api.release([], config=config))
    assert str(err) == f"speed_unit_since in {config} [input] must look like 2016-01-01=m/s, got '2016=m/s'"
    assert err.parameters == ()
    config.write_text('[release]\nnoise_scale = 1\n[input]\ntimezone = ""\n')
    err = _refused(lambda: api.release([], config=config))
    assert str(err).startswith(f"timezone in {config} [input] is empty: give an IANA zone")
    err = _refused(lambda: api.release([], config=config, timezone=""))
    _names(
        err,
        "timezone is empty: give an IANA zone such as Asia/Kolkata, or leave it out",
        ("timezone",),
        "--timezone is empty: give an IANA zone such as Asia/Kolkata, or leave it out",
    )


def test_an_error_past_the_options_names_the_keys_of_the_file(tmp_path: Path) -> None:
    """An error raised after the options were read (here by the public domain) still names the file's key."""
    data = tmp_path / "fleet.csv"
    data.write_text("vehicle_id,timestamp,speed,latitude,longitude\nb1,2021-11-15T10:00:00,20,21.17,72.83\n")
    config = tmp_path / "c.toml"
    cells = tmp_path / "cells.txt"
    config.write_text(f'[release]\nnoise_scale = 1\ndomain_cells = "{cells}"\n')
    err = _refused(lambda: api.release([data], config=config, with_map=False))
    assert str(err) == f"domain_cells in {config} [release] {cells}: no such file or folder"
    assert err.parameters == ()
    err = _refused(lambda: api.release([data], noise_scale=1, domain_cells=cells, with_map=False))
    assert str(err) == f"domain_cells {cells}: no such file or folder" and err.parameters == ("domain_cells",)


def test_a_window_that_ends_before_it_starts_is_refused_by_the_spec(tmp_path: Path) -> None:
    """Before issue 31 ``--noise-scale`` with start after end divided by its zero days (exit 70)."""
    _names(
        _refused(
            lambda: HatReleaseConfig(**{"noise_scale": 1.0, "start": "2021-11-16", "end": "2021-11-15"})
        ),
        "start 2021-11-16 is after end 2021-11-15",
        ("start", "end"),
        "--start 2021-11-16 is after --end 2021-11-15",
    )
    config = tmp_path / "c.toml"
    config.write_text('[release]\nnoise_scale = 1\nstart = "2021-11-16"\n')
    err = _refused(lambda: api.release([], config=config, end="2021-11-15"))
    assert str(err) == f"start in {config} [release] 2021-11-16 is after end 2021-11-15"
    assert err.naming(flag_of).endswith("is after --end 2021-11-15")


def test_pipeline_planner_explore_and_guardrails_name_the_parameter() -> None:
    cfg = HatReleaseConfig(**{"noise_scale": 1.0})
    _names(
        _refused(
            lambda: date_window(cfg, pl.DataFrame({"timestamp": []}, schema={"timestamp": pl.Datetime}))
        ),
        "no valid records to derive the date window from; give start and end",
        ("start", "end"),
        "no valid records to derive the date window from; give --start and --end",
    )
    quarantine = pl.DataFrame({"reason": ["unparseable_timestamp"], "timestamp_raw": ["15/11/2021 10:00"]})
    err = NoValidRecords(1, {"unparseable_timestamp": 1}, quarantine)
    assert err.parameters == ("timestamp_format",)
    assert 'declare their layout with timestamp_format (e.g. "%d/%m/%Y %H:%M")' in str(err)
    assert 'declare their layout with --timestamp-format (e.g. "%d/%m/%Y %H:%M")' in err.naming(flag_of)
    _names(
        _refused(lambda: check_target_error(0.0)),
        "target_error must be a finite sd in km/h above 0, got 0: no release reaches it",
        ("target_error",),
        "--target-error must be a finite sd in km/h above 0, got 0: no release reaches it",
    )
    _names(
        _refused(lambda: check_min_vehicles_per_day(-1.0)),
        "min_vehicles_per_day must be a finite number of vehicles per day, 0 or more, got -1",
        ("min_vehicles_per_day",),
        "--min-vehicles-per-day must be a finite number of vehicles per day, 0 or more, got -1",
    )
    session = types.SimpleNamespace(dataset="surat")
    _names(
        _refused(lambda: _refuse_unchargeable(session, HatReleaseConfig(**{"noise_scale": 1.0}))),  # type: ignore[arg-type]
        "dataset with noise_scale needs budget_per_day: the charge is reserved before any noise is drawn",
        ("dataset", "noise_scale", "budget_per_day"),
        "--dataset with --noise-scale needs --budget-per-day: the charge is reserved before any noise is drawn",
    )


def test_public_domain_names_the_parameter(tmp_path: Path) -> None:
    missing = tmp_path / "cells.txt"
    _names(
        _refused(
            lambda: load_public_domain(HatReleaseConfig(**{"noise_scale": 1.0, "domain_cells": missing}))
        ),
        f"domain_cells {missing}: no such file or folder",
        ("domain_cells",),
        f"--domain-cells {missing}: no such file or folder",
    )
    feed = tmp_path / "gtfs"
    feed.mkdir()
    _names(
        _refused(lambda: load_public_domain(HatReleaseConfig(**{"noise_scale": 1.0, "domain_gtfs": feed}))),
        "domain_gtfs needs the public days (start/end or dates) to read the schedule",
        ("domain_gtfs", "start", "end", "dates"),
        "--domain-gtfs needs the public days (--start/--end or --dates) to read the schedule",
    )


def test_contributions_name_the_parameter() -> None:
    _names(
        _refused(lambda: ContributionSpec(start=dt.date(2021, 1, 2), end=dt.date(2021, 1, 1))),
        "start 2021-01-02 is after end 2021-01-01",
        ("start", "end"),
        "--start 2021-01-02 is after --end 2021-01-01",
    )
    _names(
        _refused(lambda: ContributionSpec(speed_max=0)),
        "speed_max must be > 0",
        ("speed_max",),
        "--speed-max must be > 0",
    )
    _names(
        _refused(lambda: check_engine("dask", None)),
        "engine must be polars or spark, got 'dask'",
        ("engine",),
        "--engine must be polars or spark, got 'dask'",
    )
    _names(
        _refused(lambda: check_engine("polars", "local[2]")),
        "spark_master needs engine spark",
        ("spark_master", "engine"),
        "--spark-master needs --engine spark",
    )
    _names(
        _refused(lambda: check_master_reachable("spark://nohost")),
        "spark_master must look like spark://host:7077, got 'spark://nohost'",
        ("spark_master",),
        "--spark-master must look like spark://host:7077, got 'spark://nohost'",
    )
    with socket.socket() as s:  # a port that accepts no connection: bound, never listening
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
        err = _refused(lambda: check_master_reachable(f"spark://127.0.0.1:{port}"))
    assert str(err).startswith(f"spark_master spark://127.0.0.1:{port}: cannot reach the master")
    assert err.naming(flag_of).startswith(f"--spark-master spark://127.0.0.1:{port}: cannot reach the master")
    err = _input_error(RuntimeError("Path does not exist: x.csv\nat java..."))
    _names(
        err,
        "engine spark: cannot read input: Path does not exist: x.csv",
        ("engine",),
        "--engine spark: cannot read input: Path does not exist: x.csv",
    )


def test_privacy_guards_and_budget_store_name_the_parameter() -> None:
    err = _refused(lambda: check_delta(0.5, "delta"))
    assert err.parameters == ("delta",) and str(err).startswith("delta 0.5 is above 1e-05 (it is the chance")
    assert err.naming(flag_of).startswith("--delta 0.5 is above 1e-05 (it is the chance that the guarantee")
    assert _refused(lambda: check_delta(0.5, "delta (per unit and day)")).parameters == ()  # a description
    _names(
        _refused(lambda: refuse_not_dp("surat", ["K read from the data"])),
        "dataset: this release is NOT differentially private (K read from the data); it cannot be charged to a "
        "budget as DP spend",
        ("dataset",),
        "--dataset: this release is NOT differentially private (K read from the data); it cannot be charged to "
        "a budget as DP spend",
    )
    err = _refused(lambda: meaningless_reasons(Loss.pure(500.0), None, per="vehicle-day", allow=False))
    assert err.parameters == ("allow_meaningless_epsilon",)
    assert str(err).endswith(
        "or give allow_meaningless_epsilon to run it labelled NOT differentially private"
    )
    assert err.naming(flag_of).endswith(
        "or give --allow-meaningless-epsilon to run it labelled NOT differentially private"
    )
    _names(
        _refused(lambda: DatasetCaps("surat", "vehicle-day", None)),
        "declare at least one cap (epsilon_per_day, epsilon_total, rho_per_day or rho_total)",
        ("epsilon_per_day", "epsilon_total", "rho_per_day", "rho_total"),
        "declare at least one cap (--epsilon-per-day, --epsilon-total, --rho-per-day or --rho-total)",
    )


def test_records_grid_outputs_and_map_name_the_parameter(tmp_path: Path) -> None:
    _names(
        _refused(lambda: parse_hours("9to21")),
        "hours must look like 9-21, got '9to21'",
        ("hours",),
        "--hours must look like 9-21, got '9to21'",
    )
    _names(
        _refused(lambda: check_speed_unit(True, "m/s", ())),
        "speed_unit m/s cannot apply to GTFS-realtime input: its speeds are m/s by the specification and read as "
        "such; leave speed_unit out (release other files with another unit separately)",
        ("speed_unit",),
        "--speed-unit m/s cannot apply to GTFS-realtime input: its speeds are m/s by the specification and read "
        "as such; leave --speed-unit out (release other files with another unit separately)",
    )
    _names(
        _refused(lambda: ValidationOptions(timezone=" ")),
        "timezone is empty: give an IANA zone such as Asia/Kolkata, or leave it out",
        ("timezone",),
        "--timezone is empty: give an IANA zone such as Asia/Kolkata, or leave it out",
    )
    err = _refused(lambda: ColumnMapping.resolve(["vehicle_id", "timestamp", "latitude", "longitude"]))
    assert str(err).endswith("map them with column NAME=SOURCE or a [columns] table in the config")
    assert err.parameters == ("column",) and "map them with --column NAME=SOURCE" in err.naming(flag_of)
    existing = tmp_path / "speeds.csv"
    existing.write_text("x\n")
    with output_policy([]):
        _names(
            _refused(lambda: check_output_file(existing, "out")),
            f"out {existing} exists; add overwrite to replace it",
            ("out", "overwrite"),
            f"--out {existing} exists; add --overwrite to replace it",
        )
    _names(
        _refused(lambda: parse_tiles("ftp://t.org/{z}/{x}/{y}.png")),
        "tiles 'ftp://t.org/{z}/{x}/{y}.png': give none, osm, or an XYZ URL template such as "
        "https://tile.example.org/{z}/{x}/{y}.png",
        ("tiles",),
        "--tiles 'ftp://t.org/{z}/{x}/{y}.png': give none, osm, or an XYZ URL template such as "
        "https://tile.example.org/{z}/{x}/{y}.png",
    )
    # a value that holds the parameter's name as a word: the flag is named, the URL is shown as typed
    err = _refused(lambda: parse_tiles("https://t.org/tiles/z/x/y.png"))
    assert err.naming(flag_of).startswith("--tiles 'https://t.org/tiles/z/x/y.png': give none")
    missing = tmp_path / "depots.geojson"
    _names(
        _refused(lambda: read_context(missing)),
        f"context {missing}: not found",
        ("context",),
        f"--context {missing}: not found",
    )

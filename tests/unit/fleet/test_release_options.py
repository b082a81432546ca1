"""The fleet release's options, each declared once as a field (HatReleaseConfig, RecordOptions), checked the way
scikit-learn checks its parameter table: every option has a flag in ``--help`` with the default the code applies, a TOML key
that sets the same value as the flag, a Python keyword, and an invalid value of each is refused in one line."""

from __future__ import annotations

import datetime as dt
import inspect
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from urbandp.cli import app
from urbandp.errors import InputError
from urbandp.fleet._options import HatReleaseConfig
from urbandp.fleet._options_flags import OPTION_NAMES, RecordOptions, release_options
from urbandp.fleet._options_input import configure

BASE: dict[str, Any] = {"epsilon_per_day": 4.0, "start": "2024-03-04", "end": "2024-03-05"}
"""What every case adds (a release needs a budget and a public window)."""

VALID: dict[str, tuple[Any, Any]] = {
    # option: (the flag's text, the value the spec or the validation options then hold)
    "resolution": ("8", 8),
    "slot_minutes": ("30", 30),
    "hours": ("6-22", (6, 22)),
    "start": ("2024-03-01", dt.date(2024, 3, 1)),
    "end": ("2024-03-09", dt.date(2024, 3, 9)),
    "dates": ("2024-03-04,2024-03-05", (dt.date(2024, 3, 4), dt.date(2024, 3, 5))),
    "weekdays": ("mon-fri", "mon-fri"),
    "holidays": ("2024-03-05", (dt.date(2024, 3, 5),)),
    "speed_max": ("80", 80.0),
    "speed_limit": ("40", 40.0),
    "budget_per_day": ("5", 5.0),
    "selection": ("public-threshold", "public-threshold"),
    "domain_bbox": ("21.09,72.75,21.25,72.91", (21.09, 72.75, 21.25, 72.91)),
    "domain_gtfs": ("feed.zip", Path("feed.zip")),
    "domain_geojson": ("routes.geojson", Path("routes.geojson")),
    "domain_cells": ("cells.txt", Path("cells.txt")),
    "domain_ring": ("0", 0),  # a ring > 0 needs a GTFS or GeoJSON domain (test_domain_release)
    "target_width": ("5", 5.0),
    "contribution_bounding": ("truncate", "truncate"),  # l2 needs a public domain and Gaussian noise
    "borrow_strength": ("parent", "parent"),
    "selection_epsilon": ("2", 2.0),
    "delta": ("1e-7", 1e-7),
    "min_vehicles_per_day": ("2", 2.0),
    "max_hats_per_vehicle_day": ("12", 12),
    "speed_share": ("0.4", 0.4),
    "queries": ("speed,speeding", ("speed", "speeding")),
    "selection_fraction": ("0.2", 0.2),
    "neighbouring": ("presence-public", "presence-public"),
    "mechanism": ("laplace", "laplace"),
    "speed_estimator": ("baseline", "baseline"),
    "precision": ("3", 3),
    "clip_bound": ("dp-quantile", "dp-quantile"),
    "clip_quantile": ("0.8", 0.8),
    "clip_share": ("0.1", 0.1),
    "coarsen": ("parent1", "parent1"),
    "coarsen_share": ("0.2", 0.2),
    "coarsen_rule": ("exclusive", "exclusive"),
    "speed_unit": ("mph", "mph"),
    "timezone": ("Asia/Kolkata", "Asia/Kolkata"),
    "speed_reject_above": ("120", 120.0),
    "timestamp_format": ("epoch-s", "epoch-s"),
}
INVALID: dict[str, str] = {
    "resolution": "16",
    "slot_minutes": "0",
    "hours": "22-6",
    "start": "2024-13-01",
    "end": "yesterday",
    "dates": "2024-03-04,,2024-03-05",
    "weekdays": "someday",
    "holidays": "",
    "speed_max": "-5",
    "speed_limit": "0",
    "noise_scale": "-1",
    "epsilon_per_day": "0",
    "budget_per_day": "-1",
    "selection": "",
    "domain_bbox": "1,2,3",
    "domain_gtfs": "",
    "domain_geojson": "",
    "domain_cells": "",
    "domain_ring": "-1",
    "target_width": "0",
    "contribution_bounding": "l2",  # without a public domain
    "borrow_strength": "grandparent",
    "selection_epsilon": "0",
    "delta": "0.99",
    "min_vehicles_per_day": "-1",
    "max_hats_per_vehicle_day": "many",
    "speed_share": "1.5",
    "queries": "speeding,flying",
    "selection_fraction": "1",
    "neighbouring": "friends",
    "mechanism": "poisson",
    "speed_estimator": "median",
    "precision": "11",
    "clip_bound": "private",
    "clip_quantile": "1",
    "clip_share": "0.9",
    "coarsen": "parent9",
    "coarsen_share": "0",
    "coarsen_rule": "both",
    "speed_unit": "",
    "speed_unit_since": "2016=m/s",
    "timezone": "",
    "speed_reject_above": "-3",
    "timestamp_format": "",
    "column": "vehicle",
}
RELEASE_OPTIONS = release_options()
NAMES = [o.name for o in RELEASE_OPTIONS]
INPUT_DEFAULTS = {name: field.default for name, field in RecordOptions.model_fields.items()}


def _typed(name: str, text: Any) -> Any:
    """The value as Typer hands it to the command: converted to the option's number type."""
    option = next(o for o in RELEASE_OPTIONS if o.name == name)
    if not isinstance(text, str):
        return text
    if option.cli_type == (float | None):
        return float(text)
    if option.cli_type == (int | None):
        return int(text)
    return text


def _values(*, base: bool = True, **given: Any) -> dict[str, Any]:
    """Every option not given, as the command passes it (None), plus ``given`` (typed as Typer types them)."""
    names = {*OPTION_NAMES, "column", "dates_file", "config"}
    return {**dict.fromkeys(names), **(BASE if base else {}), **{k: _typed(k, v) for k, v in given.items()}}


def _held(cfg: Any, options: Any, name: str) -> Any:
    return getattr(cfg, name) if name in HatReleaseConfig.model_fields else getattr(options, name, None)


def test_every_option_is_in_the_table_of_tests() -> None:
    """A new option must be added here too: a valid and an invalid value at least."""
    assert set(INVALID) == set(NAMES) - {"dates_file"}
    assert set(VALID) <= set(NAMES)


@pytest.mark.parametrize("command", ["release", "plan"])
def test_every_option_has_its_flag_and_the_applied_default_in_help(command: str) -> None:
    res = CliRunner().invoke(app, [command, "--help"], terminal_width=400)
    text = " ".join(res.output.split())
    for option in RELEASE_OPTIONS:
        assert option.flag in text, option.name
        assert " ".join(option.help.split()) in text, option.name


def test_the_defaults_in_help_are_the_ones_applied() -> None:
    """Leaving every option out gives the spec's defaults, and those are what ``--help`` shows."""
    cfg, options, _, _ = configure(_values())
    for option in RELEASE_OPTIONS:
        if option.default in (None, ()):
            continue
        if option.name in (
            "contribution_bounding",
            "borrow_strength",
        ):  # auto, resolved when the spec is built; the spec says it chose automatically
            assert cfg.chosen[option.name].startswith("auto: "), option.name
        elif option.name in HatReleaseConfig.model_fields and option.name != "min_vehicles_per_day":
            assert getattr(cfg, option.name) == option.default, option.name
        elif option.name in INPUT_DEFAULTS:
            held = (
                options.speed_reject_above_kmh
                if option.name == "speed_reject_above"
                else _held(cfg, options, option.name)
            )
            assert held == option.default, option.name


@pytest.mark.parametrize("name", sorted(VALID))
def test_the_flag_and_the_toml_key_set_the_same_value(name: str, tmp_path: Any) -> None:
    text, expected = VALID[name]
    by_flag = configure(_values(**{name: text}))
    option = next(o for o in RELEASE_OPTIONS if o.name == name)
    typed = _typed(name, text)
    # TOML takes numbers as numbers and lists of days as arrays; every other value as a string
    toml_value = repr(typed) if isinstance(typed, (int, float)) else f'"{text}"'
    if name in ("dates", "holidays"):
        toml_value = "[" + ", ".join(f'"{d}"' for d in text.split(",")) + "]"
    path = tmp_path / "c.toml"
    path.write_text(f"[{option.table}]\n{name} = {toml_value}\n")
    window = {} if name in ("start", "end") else {"start": BASE["start"], "end": BASE["end"]}
    by_toml = configure({**_values(base=False, epsilon_per_day="4", **window), "config": path})
    for cfg, options, _, _ in (by_flag, by_toml):
        held = options.speed_reject_above_kmh if name == "speed_reject_above" else _held(cfg, options, name)
        assert held == expected, (name, held)


@pytest.mark.parametrize("name", sorted(INVALID))
def test_an_invalid_value_is_refused_in_one_line(name: str) -> None:
    value: Any = INVALID[name]
    if name in ("speed_unit_since", "column"):
        value = [value]
    with pytest.raises(InputError) as err:
        cfg, _, _, _ = configure(_values(**{name: value}))
        HatReleaseConfig.model_validate(cfg.model_dump())  # the spec re-checks its cross-field rules
    assert "\n" not in str(err.value) and str(err.value)


def test_the_python_keywords_are_the_options() -> None:
    """``ud.fleet.release`` takes every option as a keyword (``columns`` for ``--column``), Python values too."""
    from urbandp.fleet import _api as api

    assert set(api.OPTION_NAMES) == set(NAMES) - {"column"}
    assert "columns" in inspect.signature(api.release).parameters
    given = {**_values(), "start": dt.date(2024, 3, 1), "domain_bbox": (21.09, 72.75, 21.25, 72.91),
             "hours": (6, 22), "queries": ("speed", "speeding"), "column": {"vehicle": "bus"}}  # fmt: skip
    cfg, _, columns, _ = configure(given)
    assert cfg.start == dt.date(2024, 3, 1) and cfg.hours == (6, 22) and cfg.queries == ("speed", "speeding")
    assert cfg.domain_bbox == (21.09, 72.75, 21.25, 72.91) and columns == {"vehicle": "bus"}


def test_release_and_plan_read_an_option_alike() -> None:
    """One reader for the flag's text and the Python value: a compact date is refused as ``release`` refuses it,
    and an hour window of two integers is checked by the spec's range rule, not turned into text and re-parsed."""
    with pytest.raises(InputError) as err:
        configure(_values(start="20240301"))
    assert str(err.value) == "start must be a date YYYY-MM-DD, got '20240301'"
    with pytest.raises(InputError) as err:
        configure(_values(hours=(-1, 5)))
    assert "hours must satisfy 0 <= start < end <= 24, got -1-5" in str(err.value)

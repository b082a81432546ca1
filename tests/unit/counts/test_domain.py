"""The public domain file: layout and validation."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from urbandp.counts import CountDomain
from urbandp.errors import InputError


def test_domain_layout_and_round_trip() -> None:
    d = CountDomain.from_json(
        {
            "days": {"start": "2016-08-08", "end": "2016-08-14"},
            "bin_minutes": 15,
            "places": {"ferry": ["A", "B"], "bus": ["2000"]},
        }
    )
    assert d.shape == (7, 2, 96, 3) and d.n_cells == 4032
    assert d.bins[:2] == ("00:00", "00:15") and d.modes == ("ferry", "bus")
    assert list(d.place_mode_index()) == [0, 0, 1]
    assert CountDomain.from_json(d.to_json()) == d


@pytest.mark.parametrize(
    "obj",
    [
        [],
        {"places": {"bus": ["1"]}},
        {"days": ["2016-08-08"], "places": {"bus": "1"}},
        {"days": ["2016-08-08"], "bin_minutes": 7, "places": {"bus": ["1"]}},
        {"days": ["2016-08-08", "2016-08-08"], "places": {"bus": ["1"]}},
        {"days": {"start": "yesterday", "end": "2016-08-08"}, "places": {"bus": ["1"]}},
        {"days": [], "places": {"bus": ["1"]}},
    ],
)
def test_bad_domains_raise_input_error(obj: object) -> None:
    with pytest.raises(InputError):
        CountDomain.from_json(obj)


def test_missing_domain_file(tmp_path: Path) -> None:
    with pytest.raises(InputError, match="not found"):
        CountDomain.from_file(tmp_path / "nope.json")


@settings(max_examples=150, deadline=None)
@given(
    st.recursive(
        st.none() | st.booleans() | st.integers(-5, 100) | st.floats(allow_nan=True) | st.text(max_size=12),
        lambda children: (
            st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=10), children, max_size=4)
        ),
        max_leaves=12,
    ),
    st.sampled_from(["days", "taps", "bin_minutes", "places"]),
)
def test_any_json_value_gives_a_domain_or_one_input_error(value: object, key: str) -> None:
    """Fuzz: replacing one key of a valid domain by any JSON value never raises anything but InputError."""
    obj: dict[str, object] = {
        "days": ["2016-08-08"],
        "taps": ["on", "off"],
        "bin_minutes": 15,
        "places": {"bus": ["2000"]},
    }
    obj[key] = value
    try:
        d = CountDomain.from_json(obj)
    except InputError as err:
        assert "\n" not in str(err)
    else:
        assert d.n_cells >= 1


VALID = {"days": ["2016-08-08"], "taps": ["on", "off"], "bin_minutes": 15, "places": {"bus": ["2000"]}}


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"days": None, "places": None}, "domain is missing 'days'"),
        ({"zz": 1, "aa": 2}, "domain has unknown key(s) aa, zz (known: days, taps, bin_minutes, places)"),
        ({"days": 7, "taps": 1}, 'domain "days" must be a list of dates or {"start": "YYYY-MM-DD", '),
        ({"days": ["2016-08-08", 1]}, "got list"),
        ({"days": {"start": "2016-08-08"}}, "domain days range is unusable ('end'); example: {\"start\""),
        ({"days": {"start": "2016-08-09", "end": "2016-08-08"}}, "ends (2016-08-08) before it starts"),
        (
            {"taps": ["on", None]},
            'domain "taps" must be a list of strings such as ["on", "off"], got [\'on\', None]',
        ),
        (
            {"bin_minutes": True},
            'domain "bin_minutes" must be an integer number of minutes such as 15, got True',
        ),
        ({"bin_minutes": 15.0}, "got 15.0"),
        (
            {"places": {"bus": [True]}},
            'domain "places" must map each mode to a list of locations, e.g. {"bus"',
        ),
        ({"places": {"bus": [1.5]}}, 'domain "places" must map'),
    ],
)
def test_each_problem_is_named_in_one_line(change: dict[str, object], message: str) -> None:
    """The messages of the isinstance checks the pydantic model replaced (issue 32), first problem first."""
    obj = {k: v for k, v in {**VALID, **change}.items() if v is not None}
    with pytest.raises(InputError) as err:
        CountDomain.from_json(obj)
    assert message in str(err.value) and "\n" not in str(err.value)


def test_the_domain_file_is_a_pydantic_model() -> None:
    """DomainFile validates the file (strict types, unknown keys refused) and expands a days range."""
    from urbandp.counts._domain import DomainFile

    model = DomainFile.model_validate(
        {"days": {"start": "2016-08-08", "end": "2016-08-10"}, "places": {"bus": [2000, "A"]}}
    )
    assert model.days == ["2016-08-08", "2016-08-09", "2016-08-10"]
    assert (model.taps, model.bin_minutes, model.places) == (["on", "off"], 15, {"bus": [2000, "A"]})
    schema = DomainFile.model_json_schema()
    assert set(schema["properties"]) == {"days", "taps", "bin_minutes", "places"}
    assert schema["additionalProperties"] is False and set(schema["required"]) == {"days", "places"}
    domain = CountDomain.from_json({"days": ["2016-08-08"], "places": {"bus": [2000]}})
    assert domain.places == (("bus", "2000"),) and domain.taps == ("on", "off")

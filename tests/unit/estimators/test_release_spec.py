"""``EstimatorReleaseSpec``: every option checked once, each refusal one line naming the Python keyword."""

from __future__ import annotations

import datetime as dt
import re
from typing import Any

import pytest
from pydantic import ValidationError

from urbandp.errors import InvalidParameterError
from urbandp.estimators._api import EstimatorReleaseSpec

BASE: dict[str, Any] = {"unit_column": "vid", "value_column": "speed", "epsilon": 1.0, "upper": 65.0}


@pytest.mark.parametrize(
    ("changes", "keyword", "text"),
    [
        ({"epsilon": -1}, "epsilon", "epsilon must be a finite number > 0, got -1"),
        ({"epsilon": float("nan")}, "epsilon", "epsilon must be a finite number > 0, got nan"),
        ({"upper": 0}, "upper", "upper must be a finite number > 0, got 0"),
        ({"estimator": "median"}, "estimator", "estimator must be one of clipped-mean, baseline"),
        ({"unit": "vehicle"}, "unit", "unit must be one of vehicle-day"),
        ({"unit_column": ""}, "unit_column", "unit_column must be a non-empty string, got ''"),
        ({"day": "18/03/2015"}, "day", "day must be a date YYYY-MM-DD"),
        ({"gamma": 0.5}, "gamma", "gamma does not apply to estimator clipped-mean"),
        ({"estimator": "levy", "gamma": 1.5}, "gamma", "gamma must be in (0, 1), got 1.5"),
        ({"estimator": "levy", "grouping": "x"}, "grouping", "grouping must be one of"),
        ({"m_ub": "median"}, "m_ub", "m_ub must be 'dp-median' or a positive int"),
        ({"m_cap": 0}, "m_cap", "m_cap must be >= 1"),
        ({"estimator": "quantile", "rule": "x"}, "rule", "rule must be 'fixed' or"),
        (
            {"estimator": "baseline", "m_ub": 3},
            "m_ub",
            "m_ub does not apply to estimator baseline",
        ),
    ],
)
def test_bad_options_are_refused_in_one_line_naming_the_keyword(
    changes: dict[str, Any], keyword: str, text: str
) -> None:
    with pytest.raises(InvalidParameterError, match="^" + re.escape(text)) as caught:
        EstimatorReleaseSpec(**{**BASE, **changes})
    assert caught.value.parameters == (keyword,)
    assert "\n" not in str(caught.value) and "--" not in str(caught.value)


def test_a_good_spec_is_frozen_and_normalised() -> None:
    spec = EstimatorReleaseSpec(**{**BASE, "epsilon": 2, "day": "2015-03-18", "m_ub": 20})
    assert (spec.epsilon, spec.day, spec.build().m_ub) == (2.0, dt.date(2015, 3, 18), 20)  # type: ignore[attr-defined]
    assert spec.not_dp_reasons() == []
    with pytest.raises(ValidationError, match="frozen"):
        spec.epsilon = 3  # type: ignore[misc]


def test_the_paper_estimators_carry_the_fleet_s_not_dp_reason() -> None:
    for name in ("baseline", "array-averaging", "levy", "quantile"):
        (reason,) = EstimatorReleaseSpec(**{**BASE, "estimator": name}).not_dp_reasons()
        assert reason.startswith(f"estimator {name} assumes unit counts are public")


def test_the_release_takes_the_spec_s_options_as_its_keywords() -> None:
    """One declaration: ``ud.estimators.release``'s keywords and their defaults, and the keyword types editors
    read, are the spec's options."""
    import inspect

    import urbandp as ud
    from urbandp._option_types import EstimatorReleaseKeywords
    from urbandp._release_options import declared_options

    declared = declared_options(EstimatorReleaseSpec)
    keywords = inspect.signature(ud.estimators.release).parameters
    for o in declared:
        assert keywords[o.name].default == (inspect.Parameter.empty if o.required else o.default), o.name
    assert list(EstimatorReleaseKeywords.__annotations__) == [o.name for o in declared]
    assert [o.name for o in declared if o.required] == ["unit_column", "value_column", "epsilon", "upper"]

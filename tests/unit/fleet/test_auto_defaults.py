"""contribution_bounding and borrow_strength default to auto, resolved when the spec is built from its public
parameters: every reader of the spec sees l2 / truncate and parent / none, and the spec says how each was chosen."""

from __future__ import annotations

import datetime as dt

import pytest

from urbandp.errors import InputError
from urbandp.fleet._hat_release import estimand
from urbandp.fleet._map_page import map_header
from urbandp.fleet._options import HatReleaseConfig
from urbandp.fleet._plan import plan_release

BBOX = (21.09, 72.75, 21.25, 72.91)


def test_a_public_domain_with_gaussian_noise_resolves_to_l2_and_parent() -> None:
    cfg = HatReleaseConfig(epsilon_per_day=4.0, domain_bbox=BBOX)
    assert (cfg.contribution_bounding, cfg.borrow_strength) == ("l2", "parent")
    assert cfg.chosen == {
        "contribution_bounding": "auto: l2 (a public domain and Gaussian noise allow it)",
        "borrow_strength": "auto: parent (add-remove and the report estimator allow it)",
    }
    # the planner reads the resolved spec: the L2 weights' norm, one HAT's sensitivities
    assert plan_release(cfg, 1).k == 1


@pytest.mark.parametrize(
    ("extra", "bounding", "why"),
    [
        ({}, "truncate", "a public domain"),
        ({"domain_bbox": BBOX, "mechanism": "laplace"}, "truncate", "Gaussian noise"),
        ({"domain_bbox": BBOX, "coarsen": "parent1"}, "truncate", "no coarsen"),
        ({"domain_bbox": BBOX, "queries": ("speed", "speeding")}, "truncate", "queries = speed only"),
    ],
)
def test_auto_keeps_truncation_where_l2_is_not_allowed_and_says_why(
    extra: dict[str, object], bounding: str, why: str
) -> None:
    cfg = HatReleaseConfig(epsilon_per_day=4.0, **extra)  # type: ignore[arg-type]
    assert cfg.contribution_bounding == bounding
    assert cfg.chosen["contribution_bounding"].startswith("auto: truncate (l2 needs ")
    assert why in cfg.chosen["contribution_bounding"]


def test_auto_pools_only_where_pooling_is_allowed() -> None:
    report = HatReleaseConfig(noise_scale=1.0, neighbouring="presence-public", selection="public-threshold")
    assert (report.contribution_bounding, report.borrow_strength) == ("truncate", "none")
    assert report.chosen["borrow_strength"] == "auto: none (parent needs add-remove neighbouring)"
    coarse = HatReleaseConfig(epsilon_per_day=4.0, coarsen="parent1")
    assert coarse.borrow_strength == "none" and "no coarsen" in coarse.chosen["borrow_strength"]


def test_a_given_choice_is_kept_and_an_impossible_one_refused_naming_it() -> None:
    cfg = HatReleaseConfig(
        epsilon_per_day=4.0, domain_bbox=BBOX, contribution_bounding="truncate", borrow_strength="none"
    )
    assert cfg.chosen == {"contribution_bounding": "given: truncate", "borrow_strength": "given: none"}
    with pytest.raises(InputError, match="contribution_bounding l2 needs a public domain"):
        HatReleaseConfig(**{"epsilon_per_day": 4.0, "contribution_bounding": "l2"})
    with pytest.raises(InputError, match="borrow_strength needs add-remove"):
        HatReleaseConfig(
            **{"noise_scale": 1.0, "neighbouring": "presence-public", "borrow_strength": "parent"}
        )


def test_the_estimand_is_named_for_each_bounding() -> None:
    l2 = estimand(HatReleaseConfig(epsilon_per_day=4.0, domain_bbox=BBOX))
    assert l2["name"] == "weighted mean of vehicle-day mean speeds" and "1/sqrt(m)" in l2["definition"]
    k = estimand(
        HatReleaseConfig(epsilon_per_day=4.0, start=dt.date(2021, 11, 15), end=dt.date(2021, 11, 15))
    )
    assert k["name"] == "mean of vehicle-day mean speeds" and "at most 96 HATs" in k["definition"]


def test_the_map_header_names_the_estimand_and_the_promise_shown() -> None:
    base = {
        "dp_label": "DP (add/remove a vehicle-day)",
        "hats_released": 3,
        "neighbouring": "add-remove",
        "estimand": {"name": "mean of vehicle-day mean speeds"},
    }
    per_hat = map_header(base).details
    assert "Value: the mean of vehicle-day mean speeds" in per_hat
    assert "each hexagon's own 95% interval" in per_hat
    pooled = map_header({**base, "borrow_strength": {"hats_pooled": 3}}).details
    assert "95% on average over the pooled hexagons, not for each one" in pooled


def test_the_methodology_page_describes_the_bounding_used_and_the_estimand() -> None:
    from urbandp.fleet._map_page import methodology_html

    base = {"dp_label": "DP", "hats_released": 3, "neighbouring": "add-remove", "max_hats_per_vehicle_day": 1}
    l2 = methodology_html(
        {
            **base,
            "contribution_bounding": "l2",
            "estimand": {"name": "weighted mean of vehicle-day mean speeds"},
            "borrow_strength": {"hats_pooled": 3},
        },
        [],
    )
    assert "The weighted mean of vehicle-day mean speeds per hexagon" in l2
    assert "at most 1 hexagon-slots" not in l2 and "every hexagon-slot it visited was kept" in l2
    assert "hold on average over the hexagons" in l2
    k = methodology_html({**base, "contribution_bounding": "truncate", "max_hats_per_vehicle_day": 96}, [])
    assert "at most 96 hexagon-slots per day" in k and "each one holds its hexagon" in k

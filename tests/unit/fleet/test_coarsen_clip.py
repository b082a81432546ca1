"""Issue 8, the last two items: coarser levels where the finest HAT does not pass (``--coarsen``) and the DP clip
bound (``--clip-bound dp-quantile``). Exact privacy numbers against hand computation and OpenDP's maps, the
no-overlap rule between a released HAT and its released parent, and a statistical test of the DP quantile."""

from __future__ import annotations

import datetime as dt
import math

import numpy as np
import polars as pl
import polars_h3 as plh3
import pytest

from urbandp._grid.slots import SlotSpec
from urbandp._privacy.mechanisms import gaussian_rho
from urbandp._privacy.noise import ExactNoiseForTesting, OpenDPNoise, rho_for_epsilon, zcdp_epsilon
from urbandp.errors import InputError, InvalidParameterError
from urbandp.estimators._bounds import quantile_bound_scale
from urbandp.estimators._selection import private_quantile, quantile_measurement
from urbandp.fleet._hat_release import _release_hats
from urbandp.fleet._levels import coarse_contributions, covered_keys
from urbandp.fleet._measure import CLIP_CANDIDATES, clip_statistic, truncate_vehicle_days
from urbandp.fleet._options import HatReleaseConfig
from urbandp.fleet._plan import plan_release

EXACT = ExactNoiseForTesting(acknowledge_not_private=True)
D0 = dt.date(2021, 11, 15)
CELL_A, CELL_B = 0x8742D9D69FFFFFF, 0x8742D9D6BFFFFFF
U = 65.0
SURAT = (21.09, 72.75, 21.25, 72.91)  # a public extent holding CELL_A and CELL_B


def _parent(cell: int, res: int = 6) -> int:
    frame = pl.DataFrame({"c": pl.Series([cell], dtype=pl.UInt64)})
    return int(frame.select(plh3.cell_to_parent("c", res))["c"][0])


def _children(parent: int, res: int = 7) -> list[int]:
    frame = pl.DataFrame({"p": pl.Series([parent], dtype=pl.UInt64)})
    return [int(c) for c in frame.select(plh3.cell_to_children("p", res))["p"][0]]


def _neighbour(cell: int) -> int:
    frame = pl.DataFrame({"c": pl.Series([cell], dtype=pl.UInt64)})
    return int(frame.select(plh3.grid_ring("c", 1))["c"][0][0])


P1 = _parent(CELL_A)
P2 = _neighbour(P1)  # another parent at resolution 6
X = CELL_A  # a busy child of P1
P1_OTHER = next(c for c in _children(P1) if c != X)
Y1, Y2 = _children(P2)[:2]  # two thin children of P2


def frame(rows: list[tuple[int, int, int, str, float, float, int]]) -> pl.DataFrame:
    """rows of (cell, slot, day offset, vehicle, mean_speed, max_speed, n_records)."""
    return pl.DataFrame(
        {
            "cell": pl.Series([r[0] for r in rows], dtype=pl.UInt64),
            "slot": pl.Series([r[1] for r in rows], dtype=pl.Int16),
            "day": [D0 + dt.timedelta(days=r[2]) for r in rows],
            "vehicle": [r[3] for r in rows],
            "n_records": pl.Series([r[6] for r in rows], dtype=pl.UInt32),
            "mean_speed": [r[4] for r in rows],
            "max_speed": [r[5] for r in rows],
        }
    )


def groups(counts: dict[int, int], slot: int = 9, speed: float = 30.0) -> list[tuple]:  # type: ignore[type-arg]
    """``counts[cell]`` vehicle-days in each cell (one vehicle each, day 0, one record)."""
    return [
        (cell, slot, 0, f"v{cell % 1000}-{i}", speed, speed, 1)
        for cell, n in counts.items()
        for i in range(n)
    ]


def cfg(**kw: object) -> HatReleaseConfig:
    base: dict[str, object] = dict(
        hours=(9, 10), max_hats_per_vehicle_day=2, precision=6, queries=("speed", "speeding")
    )
    base.update(kw)
    return HatReleaseConfig(**base)  # type: ignore[arg-type]


# --- coarser where sparse --------------------------------------------------------------------------------------


# X holds 3 vehicle-days (passes at 3 per day); Y1 2 and Y2 1 do not, their parent P2 (3) does; P1 (X + 1) passes
# too but holds the released X, so it is not published.
SPARSE = frame(
    [
        (X, 9, 0, "a", 20.0, 40.0, 1),
        (X, 9, 0, "b", 30.0, 30.0, 1),
        (X, 9, 0, "c", 10.0, 36.0, 1),
        (P1_OTHER, 9, 0, "d", 50.0, 50.0, 1),
        (Y1, 9, 0, "e", 20.0, 20.0, 2),
        (Y1, 9, 0, "f", 30.0, 30.0, 1),
        (Y2, 9, 0, "g", 45.0, 50.0, 3),
    ]
)


def test_parent_is_released_only_where_no_child_passed_and_its_value_is_the_parent_mean() -> None:
    c = cfg(
        epsilon_per_day=4.0,
        mechanism="laplace",
        neighbouring="presence-public",
        selection="public-threshold",
        min_vehicles_per_day=3,
        coarsen="parent1",
        coarsen_rule="exclusive",
    )
    r = _release_hats(SPARSE, c, 1, EXACT)
    speed = r.speed.sort("resolution")
    assert speed["level"].to_list() == ["parent1", "finest"]
    assert speed["resolution"].to_list() == [6, 7]
    hexes = pl.DataFrame({"c": pl.Series([P2, X], dtype=pl.UInt64)}).select(plh3.int_to_str("c"))["c"]
    assert speed["h3_cell"].to_list() == hexes.to_list()
    # P2: vehicle-days e, f, g with one value each (their mean speed in P2): (20 + 30 + 45) / 3
    assert speed["mean_speed"].to_list() == pytest.approx([95 / 3, 20.0], abs=1e-6)
    # no released HAT has a released parent: P1 passed the coarse selection but holds X
    levels = {lv["level"]: lv for lv in r.privacy["coarsen"]["levels"]}
    assert levels["parent1"]["hats_passing_selection"] == 2
    assert levels["parent1"]["hats_covered_by_finer_level"] == 1
    assert r.speeding.height == 2 and r.speeding["level"].to_list() == ["finest", "parent1"]


def test_multi_level_laplace_accounting_matches_hand_computation() -> None:
    """Per level the report's one B: B_l = (U/N + 1/D) / eps_l over the released HAT (K_eff = 1); the levels get
    (1 - share) E and share E; per day the costs add; per window D times (selection is public here)."""
    e, share, d = 4.0, 0.3, 2
    c = cfg(
        epsilon_per_day=e,
        mechanism="laplace",
        neighbouring="presence-public",
        selection="public-threshold",
        min_vehicles_per_day=1.5,  # threshold 3 vehicle-days over D = 2
        coarsen="parent1",
        coarsen_share=share,
    )
    r = _release_hats(SPARSE, c, d, EXACT)
    p = r.privacy
    eps_f, eps_c = (1 - share) * e, share * e
    b_f, b_c = (U / 3 + 1 / d) / eps_f, (U / 3 + 1 / d) / eps_c
    assert p["noise_scale"]["speed"] == pytest.approx(b_f, rel=1e-12)
    levels = {lv["level"]: lv for lv in p["coarsen"]["levels"]}
    assert levels["parent1"]["noise_scale"]["speed"] == pytest.approx(b_c, rel=1e-12)
    assert p["epsilon_per_day"]["speed"] == pytest.approx((U / 3) / b_f + (U / 3) / b_c, rel=1e-12)
    assert p["epsilon_per_day"]["speeding"] == pytest.approx((1 / d) / b_f + (1 / d) / b_c, rel=1e-12)
    assert levels["finest"]["epsilon_per_day_total"] == pytest.approx(eps_f, rel=1e-12)
    assert levels["parent1"]["epsilon_per_day_total"] == pytest.approx(eps_c, rel=1e-12)
    assert p["cumulative_epsilon_per_day"] == pytest.approx(e, rel=1e-12)
    assert p["cumulative_epsilon_per_day"] <= e + 1e-12
    assert p["epsilon_per_window"] == pytest.approx(d * e, rel=1e-12)
    names = [x["name"] for x in p["ledger"]["entries"]]
    assert names == [
        "selection [finest]",
        "speed [finest]",
        "speeding [finest]",
        "selection [parent1]",
        "speed [parent1]",
        "speeding [parent1]",
    ]
    assert r.speed.filter(pl.col("level") == "parent1")["epsilon_hat_day"][0] == pytest.approx(
        (U / 3) / b_c, rel=1e-12
    )


BUSY = frame(groups({X: 30, P1_OTHER: 10, Y1: 20, Y2: 20}))


def test_multi_level_gaussian_composes_in_rho_and_splits_the_threshold_delta() -> None:
    """Unknown-domain Gaussian thresholds (fine 24, coarse 35 vehicle-days at epsilon 3.5, K = 2: the one count
    takes half of the queries' two thirds): the levels' rho add up to the total rho of epsilon 3.5 at delta/2;
    each level's threshold gets delta/4."""
    e, delta = 3.5, 1e-6
    c = cfg(
        epsilon_per_day=e, delta=delta, min_vehicles_per_day=3, coarsen="parent1", coarsen_rule="exclusive"
    )
    r = _release_hats(BUSY, c, 1, EXACT)
    p = r.privacy
    total = rho_for_epsilon(e, delta / 2)
    levels = {lv["level"]: lv for lv in p["coarsen"]["levels"]}
    assert levels["finest"]["hats_released"] == 1  # X
    assert levels["parent1"]["hats_released"] == 1  # P2 (P1 is covered by X)
    assert levels["parent1"]["hats_covered_by_finer_level"] == 1
    assert levels["finest"]["selection_threshold_vehicle_days"] == 24
    assert levels["parent1"]["selection_threshold_vehicle_days"] == 35
    assert levels["finest"]["rho_per_day_total"] == pytest.approx(0.7 * total, rel=1e-9)
    assert levels["parent1"]["rho_per_day_total"] == pytest.approx(0.3 * total, rel=1e-9)
    assert sum(p["rho_per_day"].values()) == pytest.approx(total, rel=1e-9)
    assert p["cumulative_epsilon_per_day"] == pytest.approx(e, rel=1e-9)
    assert p["cumulative_epsilon_per_day"] <= e
    sel = [x for x in p["ledger"]["entries"] if x["name"].startswith("selection")]
    assert all(0 < x["delta"] <= delta / 4 for x in sel)
    assert p["delta_per_day"] == pytest.approx(delta / 2 + sum(x["delta"] for x in sel), rel=1e-12)
    assert p["delta_per_day"] <= delta
    # per HAT, the coarse centred sum's rho is (U/2)^2 / (2 sigma^2) at the coarse level's sigma
    coarse = r.speed.filter(pl.col("level") == "parent1")
    sigma = levels["parent1"]["noise_scale"]["speed"]
    assert coarse["rho_hat_day"][0] == pytest.approx(gaussian_rho(U / 2, sigma), rel=1e-12)
    assert coarse["mean_speed"][0] == pytest.approx(30.0, abs=1e-6)


def test_public_domain_gaussian_window_is_d_squared_times_the_day() -> None:
    """With a public extent every step is a Gaussian at L2 distance sqrt(K) per vehicle-day, so over D days the
    window rho is D^2 times the day's, at every level."""
    e, d = 30.0, 3
    c = cfg(epsilon_per_day=e, domain_bbox=SURAT, min_vehicles_per_day=1, coarsen="auto")
    r = _release_hats(BUSY, c, d, EXACT)
    p = r.privacy
    assert p["coarsen"]["levels"][0]["hats_released"] >= 1
    day = sum(p["rho_per_day"].values())
    assert p["rho_per_window"] == pytest.approx(d**2 * day, rel=1e-9)
    assert p["epsilon_per_window"] == pytest.approx(zcdp_epsilon(d**2 * day, 1e-6), rel=1e-9)
    assert [lv["level"] for lv in p["coarsen"]["levels"]] == ["finest", "parent1", "parent2"]
    assert [lv["resolution"] for lv in p["coarsen"]["levels"]] == [7, 6, 5]


def test_merged_slots_cover_pairs_from_the_window_start_and_exclude_released_fine_slots() -> None:
    merged = SlotSpec(60, 9, 14, 2)
    assert merged.slots == [9, 11, 13]
    assert [merged.label(s) for s in merged.slots] == ["09:00-11:00", "11:00-13:00", "13:00-14:00"]
    # a fine HAT released at 10:00 covers the merged 09:00-11:00 HAT of its cell, not 11:00-13:00
    keys = pl.DataFrame(
        {"cell": pl.Series([X, Y1], dtype=pl.UInt64), "slot": pl.Series([10, 12], dtype=pl.Int16)}
    )
    covered = covered_keys([(keys, 1)], 7, merged).sort("cell", "slot")
    assert covered.rows() == sorted([(X, 9), (Y1, 11)])
    # the report's rule keeps a cell only when every slot passes: X fails at 60 minutes (11:00 holds 1) but
    # passes at 120 (6 and 3 vehicle-days); the merged values are the means over both hours
    rows = (
        groups({X: 3}, slot=9, speed=20.0)
        + groups({X: 3}, slot=10, speed=30.0)
        + [
            (X, 11, 0, "x11", 40.0, 40.0, 1),
            (X, 12, 0, "x12a", 10.0, 10.0, 1),
            (X, 12, 0, "x12b", 10.0, 10.0, 1),
        ]
    )
    c = cfg(
        hours=(9, 13),
        epsilon_per_day=4.0,
        mechanism="laplace",
        neighbouring="presence-public",
        selection="public-threshold",
        min_vehicles_per_day=3,
        coarsen="slot2",
    )
    r = _release_hats(frame(rows), c, 1, EXACT)
    speed = r.speed.sort("slot")
    assert speed["level"].to_list() == ["slot2", "slot2"]
    assert speed["slot"].to_list() == ["09:00-11:00", "11:00-13:00"]
    assert speed["mean_speed"].to_list() == pytest.approx([25.0, 20.0], abs=1e-6)
    assert r.privacy["coarsen"]["levels"][1]["slot_minutes"] == 120


def test_coarse_contributions_keep_one_row_per_vehicle_day_with_the_record_weighted_mean() -> None:
    c = frame(
        [(Y1, 9, 0, "e", 20.0, 25.0, 1), (Y2, 9, 0, "e", 40.0, 50.0, 3), (Y1, 10, 0, "e", 10.0, 12.0, 1)]
    )
    out = coarse_contributions(c, 6, 1, SlotSpec(60, 9, 11))
    assert out.height == 2
    row = out.filter(pl.col("slot") == 9)
    assert row["cell"][0] == P2
    assert row["mean_speed"][0] == pytest.approx((20 + 3 * 40) / 4)
    assert row["max_speed"][0] == 50.0 and row["n_records"][0] == 4


def test_coarsen_refuses_what_it_cannot_charge() -> None:
    with pytest.raises(InvalidParameterError, match="epsilon_per_day"):
        cfg(noise_scale=1.0, coarsen="parent1")
    with pytest.raises(InvalidParameterError, match="resolution of at least 2"):
        cfg(epsilon_per_day=1.0, coarsen="parent2", resolution=1)
    with pytest.raises(InvalidParameterError, match="epsilon_per_day"):
        cfg(epsilon_per_day=1.0, clip_bound="dp-quantile", speed_estimator="levy", mechanism="laplace")


def test_plan_splits_the_budget_across_clip_and_levels() -> None:
    c = cfg(epsilon_per_day=5.0, clip_bound="dp-quantile", coarsen="auto", domain_bbox=SURAT)
    p = plan_release(c, 1)
    total = rho_for_epsilon(5.0, 1e-6)
    assert p.total_budget == total
    assert p.clip_budget == pytest.approx(0.05 * total, rel=1e-15)
    assert p.level_budgets == pytest.approx([0.95 * 0.7 * total, 0.95 * 0.15 * total, 0.95 * 0.15 * total])
    assert p.clip_budget + sum(p.level_budgets) == pytest.approx(total, rel=1e-14)
    # speeding a third of the level, the one count half of the rest
    assert p.for_level(2).selection_budget == pytest.approx(p.level_budgets[2] / 3, rel=1e-14)
    assert p.for_level(2).speed_budget == pytest.approx(p.level_budgets[2] / 3, rel=1e-14)


# --- DP clip bound ---------------------------------------------------------------------------------------------


def _fleet_like(n_vehicle_days: int, seed: int = 0) -> pl.DataFrame:
    """Vehicle-days with 4 HATs each over 2 cells x 2 slots; HAT means uniform in [0, 60]."""
    rng = np.random.default_rng(seed)
    rows = []
    for v in range(n_vehicle_days):
        for cell in (CELL_A, CELL_B):
            for slot in (9, 10):
                s = float(rng.uniform(0, 60))
                rows.append((cell, slot, 0, f"v{v}", s, s, 1))
    return frame(rows)


@pytest.mark.parametrize(("neighbouring", "d_in"), [("add-remove", 1), ("presence-public", 2)])
def test_clip_bound_is_charged_from_opendp_map_and_sets_the_sensitivity(neighbouring: str, d_in: int) -> None:
    e, delta, d = 5.0, 1e-6, 3
    data = _fleet_like(200)
    c = cfg(
        hours=(9, 11),
        epsilon_per_day=e,
        delta=delta,
        neighbouring=neighbouring,
        domain_bbox=SURAT,
        min_vehicles_per_day=1,
        max_hats_per_vehicle_day=4,
        clip_bound="dp-quantile",
        clip_quantile=0.9,
    )
    r = _release_hats(data, c, d, EXACT)
    p = r.privacy
    total = rho_for_epsilon(e, delta)
    cands = [U * (i + 1) / CLIP_CANDIDATES for i in range(CLIP_CANDIDATES)]
    scale, cost = quantile_bound_scale(cands, 0.9, 0.05 * total, d_in, gaussian=True)
    meas = quantile_measurement(cands, 0.9, scale, gaussian=True)
    assert cost == float(meas.map(d_in)) <= 0.05 * total
    assert p["clip_bound"]["rho_per_day"] == cost
    assert p["clip_bound"]["rho_per_window"] == float(meas.map(d * d_in))
    assert p["clip_bound"]["distance_vehicle_day"] == d_in
    assert p["rho_per_day"]["clip_bound"] == cost
    assert p["ledger"]["entries"][0]["name"] == "clip bound (dp-quantile)"
    assert p["ledger"]["entries"][0]["rho"] == cost
    # exact mode: the best candidate for the 0.9-quantile of each vehicle-day's largest HAT mean
    stat = clip_statistic(truncate_vehicle_days(data, 4)[0])
    bound = p["clip_bound"]["bound"]
    assert bound == private_quantile(stat, cands, 0.9, scale, known_size=False, gaussian=True, private=False)
    step = U / CLIP_CANDIDATES  # the exact 0.9-quantile lies within one candidate step below the bound
    assert bound < U and np.mean(stat <= bound) >= 0.895 and np.mean(stat <= bound - step) <= 0.905
    assert p["speed_max"] == U
    assert max(r.speed["mean_speed"].drop_nulls().to_list()) <= bound
    if neighbouring == "add-remove":
        assert p["sensitivity"]["speed"] == bound / 2  # the centred sum
        sigma = p["noise_scale"]["speed"]
        assert r.speed["rho_hat_day"][0] == pytest.approx(gaussian_rho(bound / 2, sigma), rel=1e-12)
    else:
        assert p["sensitivity"]["speed"] == f"{bound}/N per HAT"
    assert p["cumulative_epsilon_per_day"] <= e
    assert p["cumulative_epsilon_per_day"] == pytest.approx(e, rel=1e-9)
    rho_window = p["rho_per_window"]
    assert rho_window == pytest.approx(
        d**2 * (sum(p["rho_per_day"].values()) - cost) + float(meas.map(d * d_in)), rel=1e-9
    )


def test_clip_bound_under_laplace_is_pure_epsilon_from_the_map() -> None:
    e = 6.0
    c = cfg(
        hours=(9, 11),
        epsilon_per_day=e,
        mechanism="laplace",
        domain_bbox=SURAT,
        min_vehicles_per_day=1,
        max_hats_per_vehicle_day=4,
        clip_bound="dp-quantile",
        clip_share=0.1,
    )
    r = _release_hats(_fleet_like(100), c, 1, EXACT)
    p = r.privacy
    cands = [U * (i + 1) / CLIP_CANDIDATES for i in range(CLIP_CANDIDATES)]
    scale, cost = quantile_bound_scale(cands, 0.9, 0.1 * e, 1, gaussian=False)
    assert (
        p["clip_bound"]["epsilon_per_day"]
        == cost
        == float(quantile_measurement(cands, 0.9, scale, gaussian=False).map(1))
    )
    assert p["epsilon_per_day"]["clip_bound"] == cost
    assert p["cumulative_epsilon_per_day"] == pytest.approx(sum(p["epsilon_per_day"].values()), rel=1e-12)
    assert p["cumulative_epsilon_per_day"] <= e + 1e-12


def test_dp_quantile_lands_near_the_true_quantile() -> None:
    """20,000 values uniform on [0, 65], alpha 0.9, rho 0.023 (5% of epsilon 5 at delta 1e-6): OpenDP's
    scale is about 4.2 and a report-noisy-max picks a candidate whose score exceeds the best by more than
    s (ln C + ln 1e6) ~ 79 with probability below 1e-6; a score of n |F - alpha| = 79 is |F - alpha| = 0.004, plus
    one candidate step (1/130 = 0.0077). Tolerance 0.02 in the empirical CDF, for each of 20 draws."""
    rng = np.random.default_rng(7)
    values = rng.uniform(0, U, 20_000)
    cands = [U * (i + 1) / CLIP_CANDIDATES for i in range(CLIP_CANDIDATES)]
    rho = 0.05 * rho_for_epsilon(5.0, 1e-6)
    scale, _ = quantile_bound_scale(cands, 0.9, rho, 1, gaussian=True)
    assert scale < 4.5
    draws = [private_quantile(values, cands, 0.9, scale, known_size=False, gaussian=True) for _ in range(20)]
    levels = [float(np.mean(values <= b)) for b in draws]
    assert all(abs(level - 0.9) <= 0.02 for level in levels), levels
    assert len(set(draws)) >= 1 and all(b in cands for b in draws)
    # and it is a real draw: with a much larger scale it wanders
    wide = [private_quantile(values, cands, 0.9, 5_000.0, known_size=False, gaussian=True) for _ in range(20)]
    assert max(abs(float(np.mean(values <= b)) - 0.9) for b in wide) > 0.05


def test_clip_bound_through_opendp_noise_stays_in_budget() -> None:
    c = cfg(
        hours=(9, 11),
        epsilon_per_day=5.0,
        domain_bbox=SURAT,
        min_vehicles_per_day=1,
        max_hats_per_vehicle_day=4,
        clip_bound="dp-quantile",
        coarsen="parent1",
    )
    r = _release_hats(_fleet_like(150), c, 1, OpenDPNoise())
    p = r.privacy
    assert 0 < p["clip_bound"]["bound"] <= U
    assert p["cumulative_epsilon_per_day"] <= 5.0
    assert math.isfinite(p["epsilon_per_window"])
    assert p["ledger"]["entries"][0]["name"] == "clip bound (dp-quantile)"


def test_merged_slot_level_requires_nothing_of_the_hour_window() -> None:
    # 9-21 at 60 minutes does not start on a 120-minute boundary; the merged level counts from 9:00 anyway
    spec = SlotSpec(60, 9, 21, 2)
    assert spec.slots == [9, 11, 13, 15, 17, 19]
    with pytest.raises(InputError):
        SlotSpec(120, 9, 21)


def test_fill_rule_releases_a_parent_over_the_part_its_released_children_leave() -> None:
    c = cfg(
        epsilon_per_day=4.0,
        mechanism="laplace",
        neighbouring="presence-public",
        selection="public-threshold",
        min_vehicles_per_day=3,
        coarsen="parent1",
        coarsen_rule="fill",
    )
    other2 = next(k for k in _children(P1) if k not in (X, P1_OTHER))
    extra = frame([(other2, 9, 0, "h", 40.0, 40.0, 1), (other2, 9, 0, "i", 30.0, 30.0, 1)])
    r = _release_hats(pl.concat([SPARSE, extra]), c, 1, EXACT)
    coarse = r.speed.filter(pl.col("level") == "parent1").sort("mean_speed")
    hexes = pl.DataFrame({"c": pl.Series([P2, P1], dtype=pl.UInt64)}).select(plh3.int_to_str("c"))["c"]
    # P1 holds the released X and three vehicle-days elsewhere: published over that remainder, (50+40+30)/3;
    # X's vehicle-days are left out (no value counted twice, none shown twice)
    assert coarse["h3_cell"].to_list() == hexes.to_list()
    assert coarse["mean_speed"].to_list() == pytest.approx([95 / 3, 40.0], abs=1e-6)
    assert r.privacy["coarsen"]["rule"] == "fill"
    # with SPARSE alone P1's remainder holds one vehicle-day: below the threshold, nothing for P1
    r = _release_hats(SPARSE, c, 1, EXACT)
    assert r.speed.filter(pl.col("level") == "parent1")["h3_cell"].to_list() == hexes.to_list()[:1]
    # entirely covered: all 7 children released (in every base slot of the group) rules the parent out
    kids = _children(P1)
    all_kids = pl.DataFrame(
        {"cell": pl.Series(kids, dtype=pl.UInt64), "slot": pl.Series([9] * 7, dtype=pl.Int16)}
    )
    spec = SlotSpec(60, 9, 10)
    args = {"rule": "fill", "fine_resolution": 7, "base_slots": [9]}
    assert covered_keys([(all_kids, 1)], 6, spec, **args).rows() == [(P1, 9)]  # type: ignore[arg-type]
    assert covered_keys([(all_kids.head(6), 1)], 6, spec, **args).height == 0  # type: ignore[arg-type]
    # a parent2 is covered by released parent1 cells (7 of them = 49 finest cells)
    p1s = pl.DataFrame({"c": pl.Series([P1], dtype=pl.UInt64)}).select(plh3.cell_to_parent("c", 5))["c"][0]
    sibs = pl.DataFrame({"p": pl.Series([p1s], dtype=pl.UInt64)}).select(plh3.cell_to_children("p", 6))["p"][
        0
    ]
    parents = pl.DataFrame(
        {"cell": pl.Series(list(sibs), dtype=pl.UInt64), "slot": pl.Series([9] * 7, dtype=pl.Int16)}
    )
    assert covered_keys([(parents, 1)], 5, spec, **args).rows() == [(p1s, 9)]  # type: ignore[arg-type]
    # merged slots: X released at 9 and 10 covers the merged 09:00-11:00 of X; at 9 alone it does not
    merged = SlotSpec(60, 9, 11, 2)
    both = pl.DataFrame(
        {"cell": pl.Series([X, X], dtype=pl.UInt64), "slot": pl.Series([9, 10], dtype=pl.Int16)}
    )
    margs = {"rule": "fill", "fine_resolution": 7, "base_slots": [9, 10]}
    assert covered_keys([(both, 1)], 7, merged, **margs).rows() == [(X, 9)]  # type: ignore[arg-type]
    assert covered_keys([(both.head(1), 1)], 7, merged, **margs).height == 0  # type: ignore[arg-type]

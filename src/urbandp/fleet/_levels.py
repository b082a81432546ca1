"""Coarser levels of a fleet release ("coarser where sparse"): H3 parents and merged slots.

Data shaping only, no noise and no accounting: the contributions at a coarser level (:func:`coarse_contributions`),
and which coarser HATs a finer level's released keys rule out (:func:`covered_keys`, :func:`released_units`).
Both read the released keys (DP outputs) and public H3 / slot structure only. The levels' costs are composed by
:func:`urbandp.fleet._account.combine_levels`.
"""

from __future__ import annotations

import polars as pl
import polars_h3 as plh3

from urbandp._grid.slots import SlotSpec


def coarse_contributions(
    contributions: pl.DataFrame, resolution: int, up: int, slots: SlotSpec
) -> pl.DataFrame:
    """Contributions at a coarser level: the H3 parent ``up`` levels up and/or merged slots.

    Built from the truncated contributions, so a vehicle-day still touches at most K HATs at this level. Its mean
    speed in a coarse HAT is the record-weighted mean of its fine HAT means (the mean of its records there), in
    [0, U] (or [0, U'] after a DP clip); its max speed is the max (Query 2).
    """
    if up == 0 and slots.merge == 1:
        return contributions
    cell = plh3.cell_to_parent("cell", resolution) if up else pl.col("cell")
    slot = slots.group(pl.col("slot"))
    weight = pl.col("n_records").cast(pl.Float64)
    return (
        contributions.with_columns(cell.alias("cell"), slot.alias("slot"))
        .group_by("cell", "slot", "day", "vehicle")
        .agg(
            pl.col("n_records").sum(),
            ((pl.col("mean_speed") * weight).sum() / weight.sum()).alias("mean_speed"),
            pl.col("max_speed").max(),
        )
        .sort("cell", "slot", "day", "vehicle")
    )


def released_units(
    published: list[tuple[pl.DataFrame, int]], fine_resolution: int, base_slots: list[int]
) -> pl.DataFrame:
    """The finest (cell, base slot) units covered by released HATs of any level (H3 descendants x merged slots)."""
    base = pl.DataFrame({"slot": pl.Series(base_slots, dtype=pl.Int16)})
    units = []
    for keys, merge in published:
        expanded = (
            keys.with_columns(
                plh3.cell_to_children("cell", fine_resolution).alias("cell"),
                pl.int_ranges(pl.col("slot"), pl.col("slot") + merge, dtype=pl.Int16).alias("slot"),
            )
            .explode("cell")
            .explode("slot")
        )
        units.append(expanded.join(base, on="slot", how="semi"))
    return pl.concat(units).unique()


def covered_keys(
    published: list[tuple[pl.DataFrame, int]],
    resolution: int,
    slots: SlotSpec,
    *,
    rule: str = "exclusive",
    fine_resolution: int | None = None,
    base_slots: list[int] | None = None,
) -> pl.DataFrame:
    """The (cell, slot) keys at this level that a finer level's released HATs rule out.

    ``exclusive``: every coarser HAT holding a released finer HAT (same slot or merged slot). ``fill``: only
    coarser HATs *entirely* covered by released finer HATs (all ``7^up`` H3 descendants at the finest resolution,
    in every base slot of the group); the others are released over their remainder (see :func:`_release_hats`).
    Either way no place and time gets two values. Both read only released keys (DP outputs) and public H3 / slot
    structure.
    """
    group = slots.group(pl.col("slot"))
    if rule == "exclusive":
        frames = [
            keys.select(plh3.cell_to_parent("cell", resolution).alias("cell"), group.alias("slot"))
            for keys, _merge in published
        ]
        return pl.concat(frames).unique()
    assert fine_resolution is not None and base_slots is not None
    base = pl.DataFrame({"slot": pl.Series(base_slots, dtype=pl.Int16)})
    fine_units = released_units(published, fine_resolution, base_slots)
    per_group = base.select(group.alias("slot")).group_by("slot").len().rename({"len": "slots_in_group"})
    need = 7 ** (fine_resolution - resolution)
    return (
        fine_units.select(plh3.cell_to_parent("cell", resolution).alias("cell"), group.alias("slot"))
        .group_by("cell", "slot")
        .len()
        .join(per_group, on="slot")
        .filter(pl.col("len") >= pl.col("slots_in_group") * need)
        .select("cell", "slot")
    )

"""Synthetic smart-card taps (tap-on / tap-off events) with known truth.

The generator imitates the shape of the Opal tap data described by Culnane, Rubinstein and Teague (2017),
section 1: four modes, 15-minute bins, one tap-on and one tap-off per trip. It includes a point-to-point ferry
(``Manly Wharf`` <-> ``Circular Quay No. 3 Wharf``, 30 minutes, automatic tap-off) so that a tap-on count at one
wharf equals *exactly* the tap-off count at the other wharf two bins later -- the pairs the report's section 2
uses to read the noise scale off a published table.

This module is simulation code (numpy randomness is fine here: it makes *inputs*, never released numbers).
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass

import numpy as np
import polars as pl

MANLY = "Manly Wharf"
CIRCULAR_QUAY_3 = "Circular Quay No. 3 Wharf"
FERRY_LAG_BINS = 2  # 30-minute crossing = two 15-minute bins
#: bounds of ``urbandp counts synth`` (a bounded run: about 10 years, 50 million taps)
MAX_SYNTH_DAYS = 3_660
MAX_SYNTH_EVENTS = 50_000_000
START = dt.date(2016, 8, 8)
N_CARDS = 20_000


@dataclass(frozen=True)
class SyntheticTaps:
    """Events plus the public domain that describes them."""

    events: pl.DataFrame  # mode, timestamp, tap, location, card_id
    domain: dict[str, object]  # JSON-able public domain (see urbandp.counts._domain)


PLACES = {
    "bus": [str(2000 + i) for i in range(20)],
    "train": [f"Station {i:02d}" for i in range(15)],
    "lightrail": [f"Light Rail {i:02d}" for i in range(5)],
    "ferry": [MANLY, CIRCULAR_QUAY_3, "Cremorne Point Wharf"],
}
"""The public (mode -> locations) lists: bus postcodes, train stations, light rail stops and the Manly ferry."""


def _daily_profile(n_bins: int) -> np.ndarray:
    """Relative trip intensity per 15-minute bin: nothing before 05:00, two commuter peaks."""
    hours = np.arange(n_bins) * 24.0 / n_bins
    profile = (
        0.2 + np.exp(-0.5 * ((hours - 8.0) / 1.2) ** 2) + 0.8 * np.exp(-0.5 * ((hours - 17.5) / 1.5) ** 2)
    )
    profile[hours < 5.0] = 0.0
    profile[hours >= 23.0] = 0.0  # last departures before 23:00 so no trip crosses midnight
    return profile / profile.sum()


def generate_taps(
    *,
    trips_per_day: int = 20_000,
    days: int = 7,
    ferry_trips_per_day: int = 3_000,
    seed: int = 0,
) -> SyntheticTaps:
    """Generate tap events for ``days`` days from 8 August 2016 (20,000 cards, the places of :data:`PLACES`);
    every trip yields one ``on`` and one ``off`` event.

    Non-ferry trips pick an origin and a destination of the same mode (popularity ~ Zipf) and last 1-3 bins.
    Ferry trips run only between Manly and Circular Quay No. 3 and last exactly :data:`FERRY_LAG_BINS` bins,
    so ``on(Manly, t) == off(CQ3, t + 2)`` holds exactly in the raw counts.
    """
    rng = np.random.default_rng(seed)
    bin_minutes = 15
    n_bins = 24 * 60 // bin_minutes
    profile = _daily_profile(n_bins)
    non_ferry = [(m, loc) for m, locs in PLACES.items() if m != "ferry" for loc in locs]
    mode_of, loc_of = np.array([m for m, _ in non_ferry]), np.array([loc for _, loc in non_ferry])
    weights = 1.0 / np.arange(1, len(non_ferry) + 1) ** 0.8
    rng.shuffle(weights)
    frames: list[pl.DataFrame] = []
    for d in range(days):
        day = START + dt.timedelta(days=d)
        midnight = dt.datetime.combine(day, dt.time())
        # -- ordinary trips
        n = int(rng.poisson(trips_per_day))
        origin = rng.choice(len(non_ferry), size=n, p=weights / weights.sum())
        modes = mode_of[origin]
        dest = np.empty(n, dtype=object)
        for m in PLACES:
            if m == "ferry":
                continue
            sel = modes == m
            dest[sel] = rng.choice(np.asarray(PLACES[m], dtype=object), size=int(sel.sum()))
        start_bin = rng.choice(n_bins, size=n, p=profile)
        minute_on = start_bin * bin_minutes + rng.integers(0, bin_minutes, n)
        minute_off = minute_on + bin_minutes * rng.integers(1, 4, n)
        # -- point-to-point ferry, same 15-minute offset on both ends (automatic tap-off)
        f = int(rng.poisson(ferry_trips_per_day))
        f_bin = rng.choice(n_bins, size=f, p=profile)
        f_minute_on = f_bin * bin_minutes + rng.integers(0, bin_minutes, f)
        outbound = rng.random(f) < 0.5
        f_origin = np.where(outbound, MANLY, CIRCULAR_QUAY_3)
        f_dest = np.where(outbound, CIRCULAR_QUAY_3, MANLY)
        all_modes = np.concatenate([modes.astype(str), np.full(f, "ferry")])
        on_loc = np.concatenate([loc_of[origin].astype(str), f_origin])
        off_loc = np.concatenate([dest.astype(str), f_dest])
        m_on = np.concatenate([minute_on, f_minute_on])
        m_off = np.concatenate([minute_off, f_minute_on + FERRY_LAG_BINS * bin_minutes])
        cards = rng.integers(0, N_CARDS, n + f)
        base = np.datetime64(midnight, "ms")
        ts_on = base + (m_on * 60_000).astype("timedelta64[ms]")
        ts_off = base + (np.minimum(m_off, 24 * 60 - 1) * 60_000).astype("timedelta64[ms]")
        trips = pl.DataFrame({"mode": all_modes, "card_id": [f"card{c:06d}" for c in cards]})
        frames.append(
            trips.with_columns(timestamp=pl.Series(ts_on), tap=pl.lit("on"), location=pl.Series(on_loc))
        )
        frames.append(
            trips.with_columns(timestamp=pl.Series(ts_off), tap=pl.lit("off"), location=pl.Series(off_loc))
        )
    events = pl.concat(frames).select("mode", "timestamp", "tap", "location", "card_id").sort("timestamp")
    domain = {
        "days": [(START + dt.timedelta(days=d)).isoformat() for d in range(days)],
        "taps": ["on", "off"],
        "bin_minutes": bin_minutes,
        "places": {m: list(locs) for m, locs in PLACES.items()},  # a copy: the caller may change it
    }
    return SyntheticTaps(events=events, domain=domain)

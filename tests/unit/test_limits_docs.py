"""docs/outputs.md's table of limits states the figures the code refuses at: each row is pinned to its constant."""

from __future__ import annotations

from pathlib import Path

from urbandp._records.gtfs_schedule import MAX_DOMAIN_FILE_BYTES, MAX_GTFS_ROWS
from urbandp.counts._options import MAX_NOISE_SCALE
from urbandp.fleet._options import MAX_DOMAIN_CELLS, MAX_HATS_PER_VEHICLE_DAY, HatReleaseConfig
from urbandp.sensing._options import MAX_CELL_WINDOWS
from urbandp.sensing._queries import MAX_STEEPNESS, MIN_STEEPNESS

DOC = Path(__file__).resolve().parents[2] / "docs" / "outputs.md"


def _rows() -> dict[str, str]:
    """``| limit | value |`` rows of the limits table: first cell -> second cell."""
    rows = {}
    for line in DOC.read_text().splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if line.startswith("|") and len(cells) == 2:
            rows[cells[0]] = cells[1]
    return rows


def test_the_limits_table_states_the_constants_the_code_refuses_at() -> None:
    rows = _rows()
    speed_max = HatReleaseConfig.model_fields["speed_max"].metadata
    at_least = next(m.ge for m in speed_max if getattr(m, "ge", None) is not None)
    expected = {
        "cells in `--domain-bbox` at `--resolution`": f"{MAX_DOMAIN_CELLS:,}",
        "`--speed-max`": f"at least {at_least:g} km/h",
        "`--max-hats-per-vehicle-day`": f"{MAX_HATS_PER_VEHICLE_DAY:,}",
        "rows of one GTFS table (counted before it is parsed)": f"{MAX_GTFS_ROWS:,}",
        "cells of a `--domain-geojson` polygon (estimated from its area before it is filled)": (
            f"{MAX_DOMAIN_CELLS:,}"
        ),
        "`sensing dp-map` / `pm-map` windows from `--start` to `--end`": f"{MAX_CELL_WINDOWS:,}",
        "`sensing query` / `mpc serve` `--steepness` and `--rho`": f"{MIN_STEEPNESS:g} to {MAX_STEEPNESS:,.0f}",
        "`counts release --noise-scale`": f"{MAX_NOISE_SCALE:,.0f} (2^40)",
    }
    for limit, value in expected.items():
        assert rows.get(limit) == value, (limit, rows.get(limit), value)
    assert MAX_NOISE_SCALE == 2.0**40
    files = rows[
        "`--domain-gtfs`, `--domain-geojson`, `--domain-cells` file (a zip member counted uncompressed)"
    ]
    assert files.startswith(f"{MAX_DOMAIN_FILE_BYTES:,} bytes (1 GiB)") and MAX_DOMAIN_FILE_BYTES == 1 << 30

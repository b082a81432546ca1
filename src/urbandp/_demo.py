"""``make demo``: the main job end to end on data it generates itself.

1. a synthetic month-like fleet in the ITMS shape (Parquet, with dirty rows),
2. exploration for the data owner (resolution table, histograms),
3. the default DP release (add/remove, DP selection over the city's public extent, epsilon 10 per vehicle-day),
4. the ITMS report's own method (replace-one, public threshold) for comparison,
and prints where the outputs and the map are.
"""

from __future__ import annotations

import datetime as dt
import sys
from pathlib import Path
from typing import Any

from rich.console import Console

import urbandp.survey._demo as survey_demo
from urbandp._progress import progress_bar
from urbandp._synth.fleet import SURAT, FleetSpec, write_fleet_days
from urbandp.fleet._explore import comparison_table, explore, write_histograms
from urbandp.fleet._options import HatReleaseConfig
from urbandp.fleet._pipeline import _write_release, load_records, release_fleet

# The synthetic city's public extent (centre 21.17N 72.83E, ~7.5 km radius): chosen without reading the data.
CITY_BBOX = (21.09, 72.75, 21.25, 72.91)


def main(out_dir: Path) -> None:
    console = Console()
    out_dir.mkdir(parents=True, exist_ok=True)
    fleet = out_dir / "fleet.parquet"
    spec = FleetSpec(vehicles=300, days=10, seed=2021)
    with progress_bar("generating a synthetic fleet (300 vehicles x 10 days)", spec.days) as advance:
        _, n = write_fleet_days(spec, fleet, progress=lambda _rows: advance())
    console.print(f"[bold]1. synthetic fleet[/]: {n:,} records in {fleet} (city {SURAT.name})")

    with console.status("exploring true data (data owner only)"):
        loaded = load_records([fleet])
        result = explore(loaded.clean)
        write_histograms(result, out_dir / "explore")
        result.table.write_csv(out_dir / "explore" / "resolution_comparison.csv")
    console.print(f"[bold]2. exploration[/] (owner only, not private): {out_dir / 'explore'}")
    console.print(comparison_table(result.table))

    # The public window: the calendar days the synthetic fleet covers (not read from the data).
    first, last = spec.start, spec.start + dt.timedelta(days=spec.days - 1)
    # The main job takes the defaults a user gets: over a public extent with Gaussian noise, contribution_bounding
    # and borrow_strength resolve to l2 and parent (privacy.json says they were chosen automatically).
    runs = {
        "release": HatReleaseConfig(epsilon_per_day=10.0, domain_bbox=CITY_BBOX, start=first, end=last),
        "report-method": HatReleaseConfig(
            epsilon_per_day=10.0,
            neighbouring="presence-public",
            selection="public-threshold",
            start=first,
            end=last,
        ),
    }
    for step, (name, cfg) in enumerate(runs.items(), start=3):
        with console.status(f"releasing ({name})"):
            release, loaded = release_fleet([fleet], cfg)
            _write_release(out_dir / name, release, loaded)
        p: dict[str, Any] = dict(release.privacy)
        console.print(
            f"[bold]{step}. {name}[/] ({p['neighbouring']}, selection {p['selection']['method']}): "
            f"{p['hats_released']} HATs, cumulative epsilon per day {p['cumulative_epsilon_per_day']:.4g}, "
            f"rows quarantined: see owner_only/; {p['dp_label']}"
        )
        pooled = p.get("borrow_strength")
        console.print(
            f"   contribution bounding {p['contribution_bounding']} ({p['contribution_bounding_chosen']}); "
            + (
                f"{pooled['useful_hats_pooled']} useful HATs pooled with their H3 parent"
                if isinstance(pooled, dict)
                else f"{p['usefulness']['useful_hats']} useful HATs"
            )
        )
        console.print(f"   tables and privacy.json in {out_dir / name}")
    console.print(f"\n[bold green]Map:[/] {(out_dir / 'release' / 'map.html').resolve()}")
    survey_demo.run(out_dir / "survey", console)


if __name__ == "__main__":
    from urbandp._outputs import output_policy

    with output_policy(overwrite=True):  # the demo owns its folder: a second `make demo` replaces its outputs
        main(Path(sys.argv[1] if len(sys.argv) > 1 else "out/demo"))

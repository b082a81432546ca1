"""Proof of equality: the Spark engine and the Polars engine on the same dirty input give the same answers.

Same contributions (keys, counts and maxima exactly; means up to the floating-point summation order, 1e-12
relative), the same quarantine (counts per reason, and the same (file, row, reason) for every quarantined row),
and the same released tables with the test-only no-noise source. Inputs: a synthetic ITMS fleet spread over two
CSV files with different column orders, a JSON Lines file with nested coordinates and one malformed line, and a
Parquet file, with injected bad rows and duplicates (inside one file and across files, with different speeds, so
that keeping the wrong copy would change the answer); and a real Austin CapMetro AVL day.
"""

from __future__ import annotations

from pathlib import Path

import polars as pl
import pytest
from polars.testing import assert_frame_equal

from urbandp._contributions import ContributionSpec, PolarsBackend
from urbandp._grid.slots import SlotSpec
from urbandp._privacy.noise import ExactNoiseForTesting
from urbandp._records.validation import ValidationOptions
from urbandp._synth.fleet import flatten_for_csv, generate_fleet, write_fleet
from urbandp.fleet._options import HatReleaseConfig
from urbandp.fleet._pipeline import load_records, release_fleet

pytestmark = [pytest.mark.usefixtures("spark"), pytest.mark.filterwarnings("ignore::FutureWarning")]
NO_NOISE = ExactNoiseForTesting(acknowledge_not_private=True)
# B = 1 with K = 10,000 states an epsilon per vehicle-day far above 100: the library refuses it unless allowed
# (labelled NOT DP), like the CLI (issue 30); these tests compare the engines without noise
ALLOW = {"allow_meaningless_epsilon": True}
KEYS = ["cell", "slot", "day", "vehicle"]


def _broken(rows: list[dict[str, str | None]]) -> list[dict[str, str | None]]:
    """One row per quarantine reason the CSV reader can meet (first failing rule wins)."""
    edits = [
        {"observationDateTime": "not a time"},
        {"license_plate": ""},
        {"location.coordinates": None},
        {"location.coordinates": "[0.0, 0.0]"},
        {"location.coordinates": "[200.0, 95.0]"},
        {"speed": "fast"},
        {"speed": "-5"},
        {"speed": "400"},
    ]
    return [{**row, **edit} for row, edit in zip(rows, edits, strict=True)]


@pytest.fixture(scope="module")
def dirty(tmp_path_factory: pytest.TempPathFactory) -> list[Path]:
    d = tmp_path_factory.mktemp("dirty")
    df = generate_fleet(vehicles=12, days=2, seed=5, records_per_vehicle_day=150)
    flat = flatten_for_csv(df).with_columns(pl.all().cast(pl.String))
    half = flat.height // 2
    a, b = flat.head(half), flat.tail(flat.height - half)
    inside = a.filter(pl.col("observationDateTime").str.slice(11, 2).is_between(pl.lit("10"), pl.lit("19")))
    bad = pl.DataFrame(_broken(inside.head(8).to_dicts()), schema=a.schema)
    # a valid later copy of a row whose first copy is invalid: the valid copy is kept
    revived = inside.slice(8, 1)
    invalid_first = revived.with_columns(pl.lit("-1").alias("speed"))
    file_a = pl.concat(
        [
            invalid_first,
            a,
            inside.sample(25, seed=1).with_columns(pl.lit("77.5").alias("speed")),  # later copies in the file
            bad,
            revived.with_columns(pl.lit("33.0").alias("speed")),
        ]
    )
    file_a.write_csv(d / "a.csv")
    later = inside.sample(15, seed=2).with_columns(pl.lit("11.0").alias("speed"))  # copies in a later file
    pl.concat([b, later]).select(list(reversed(b.columns))).write_csv(d / "b.csv")
    jsonl = d / "c.jsonl"
    write_fleet(df.tail(300), jsonl)
    with jsonl.open("a") as handle:
        handle.write('{"license_plate": "broken", "observationDateTime": \n')
    write_fleet(df.slice(100, 200), d / "d.parquet")
    return [d / "a.csv", d / "b.csv", jsonl, d / "d.parquet"]


def _spark_load(paths: list[Path], spec: ContributionSpec, options: ValidationOptions | None = None):  # type: ignore[no-untyped-def]
    from urbandp._contributions.spark_backend import SparkBackend

    return SparkBackend(scratch=paths[0].parent).load(
        paths, None, options, spec
    )  # quarantine beside the input


def _compare_contributions(polars: pl.DataFrame, spark: pl.DataFrame) -> None:
    a = polars.sort(KEYS)
    b = spark.sort(KEYS)
    assert a.height == b.height > 0
    assert_frame_equal(
        a.drop("mean_speed", "speeds", strict=False), b.drop("mean_speed", "speeds", strict=False)
    )
    assert_frame_equal(
        a.select("mean_speed"), b.select("mean_speed"), check_exact=False, rel_tol=1e-12, abs_tol=0
    )
    if "speeds" in a.columns:
        for x, y in zip(a["speeds"].to_list(), b["speeds"].to_list(), strict=True):
            assert x == pytest.approx(y, rel=1e-15)  # same values in the same (input) order


def test_dirty_input_gives_identical_contributions_and_quarantine(dirty: list[Path]) -> None:
    spec = ContributionSpec(7, SlotSpec(), keep_speeds=True)
    loaded = load_records(dirty, window=spec)
    polars = PolarsBackend().contributions(loaded.clean_lazy, spec)
    done = _spark_load(dirty, spec)
    _compare_contributions(polars, done.contributions)
    assert done.records_in == loaded.records_in
    assert done.records_outside_window == loaded.records_outside_window
    assert done.reasons == loaded.reasons
    # every reason the input was built to hit is hit (so equality is not the equality of zeros)
    hit = {r for r, n in done.reasons.items() if n}
    assert {"unparseable_record", "unparseable_timestamp", "missing_vehicle", "missing_coordinates"} <= hit
    assert {"null_island", "coordinates_out_of_range", "missing_speed", "negative_speed"} <= hit
    assert {"speed_above_maximum", "duplicate"} <= hit
    assert done.reasons["duplicate"] >= 25 + 15
    quarantine = pl.read_parquet(done.quarantine_parquet / "*.parquet")
    assert quarantine.height == loaded.quarantine.height == sum(done.reasons.values())
    same = ["source", "row", "reason"]
    assert_frame_equal(
        quarantine.select(same).sort(same), loaded.quarantine.select(same).sort(same), check_dtypes=False
    )


def test_dirty_input_gives_identical_released_tables_without_noise(dirty: list[Path]) -> None:
    cfg = HatReleaseConfig(
        noise_scale=1.0,
        neighbouring="replace-one",
        selection="public-threshold",
        min_vehicles_per_day=0,
        max_hats_per_vehicle_day=10_000,
        precision=9,
    )
    ours, loaded_p = release_fleet(dirty, cfg, noise=NO_NOISE, command_line="test", **ALLOW)
    theirs, loaded_s = release_fleet(dirty, cfg, noise=NO_NOISE, command_line="test", **ALLOW, engine="spark")
    assert ours.speed.height > 0
    assert_frame_equal(ours.speed, theirs.speed, check_exact=False, rel_tol=0, abs_tol=2e-9)
    assert_frame_equal(ours.speeding, theirs.speeding)
    for key in ("records_in", "records_quarantined", "quarantine_reasons", "records_in_window"):
        assert ours.owner_report[key] == theirs.owner_report[key], key
    assert ours.privacy["window"] == theirs.privacy["window"]
    assert loaded_s.quarantine_parquet is not None and loaded_p.quarantine_parquet is None


def test_a_real_austin_day_gives_identical_releases(shared_data: Path) -> None:
    day = shared_data / "austin-avl" / "2015-03-07.csv"
    cfg = HatReleaseConfig(
        noise_scale=1.0,
        neighbouring="replace-one",
        selection="public-threshold",
        min_vehicles_per_day=0,
        max_hats_per_vehicle_day=10_000,
        precision=9,
        hours=(9, 15),  # the file's records end at 15:59 local time
    )
    options = ValidationOptions(speed_unit="mph")
    ours, _ = release_fleet([day], cfg, options=options, noise=NO_NOISE, command_line="test", **ALLOW)
    theirs, _ = release_fleet(
        [day], cfg, options=options, noise=NO_NOISE, command_line="test", **ALLOW, engine="spark"
    )
    assert ours.owner_report["records_in"] == 44_564
    assert ours.speed.height > 100
    assert_frame_equal(ours.speed, theirs.speed, check_exact=False, rel_tol=0, abs_tol=2e-9)
    assert_frame_equal(ours.speeding, theirs.speeding)
    assert ours.owner_report["quarantine_reasons"] == theirs.owner_report["quarantine_reasons"]
    assert ours.owner_report["records_outside_window"] == theirs.owner_report["records_outside_window"]


def test_the_backend_seam_gives_the_polars_contributions(dirty: list[Path]) -> None:
    from urbandp._contributions import get_backend

    spec = ContributionSpec(8, SlotSpec(30, 6, 22), keep_speeds=False)
    clean = load_records(dirty).clean.with_columns(pl.col("vehicle").cast(pl.String))
    _compare_contributions(
        PolarsBackend().contributions(clean, spec), get_backend("spark").contributions(clean, spec)
    )


def test_a_date_window_and_another_grid_match(dirty: list[Path]) -> None:
    """A given --start/--end (one day of two) and 15-minute slots at resolution 9 go through the same code."""
    import datetime as dt

    day = dt.date(2021, 11, 16)
    spec = ContributionSpec(9, SlotSpec(15, 7, 19), day, day, speed_max=50.0)
    loaded = load_records(dirty, window=spec)
    polars = PolarsBackend().contributions(loaded.clean_lazy, spec)
    done = _spark_load(dirty, spec)
    _compare_contributions(polars, done.contributions)
    assert done.contributions["day"].unique().to_list() == [day]
    assert done.records_outside_window == loaded.records_outside_window > 0
    assert done.reasons == loaded.reasons

"""What the sensing releases return in Python (:class:`SensingRelease`) and how they are written: the same folder
the command line writes, through :func:`urbandp._outputs.atomic_output_dir` (a release folder with only DP
tables and privacy.json, the owner's material in ``owner_only/<name>/`` beside it).

The owner-only files are kept in memory (``owner["files"]``: name -> bytes) so that ``rel.write(out)`` after the
release writes exactly what the command line writes during it.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import tempfile
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

from urbandp._frames import TableLike, table_file
from urbandp._outputs import atomic_output_dir, output_policy, owner_dir_for, owner_file_seen_from_release
from urbandp._privacy.report import PrivacyReport, write_privacy_json
from urbandp.errors import InputDataError
from urbandp.results import Release

if TYPE_CHECKING:
    from urbandp._outputs import OutputDirs
    from urbandp._privacy.loss import Loss
    from urbandp._privacy.session import ReleaseCharge
    from urbandp._session import Session
    from urbandp.sensing._grid import SquareGrid


@dataclass(repr=False)
class SensingRelease(Release):
    """A sensing release (dp-map, pm-map): ``tables`` are written as ``<name>.csv`` (and, the tables with a
    ``cell_id`` of :attr:`grid`, as GeoParquet ``<name>.parquet`` and ``<name>.geojson`` with the cell polygons);
    ``owner["files"]`` into ``owner_only/<name>/``; ``privacy`` as privacy.json, its ``not_dp_outputs`` naming
    the owner files of the folder it is written to."""

    owner_notes: dict[str, str] = field(default_factory=dict)
    """What each owner-only file holds, by name: ``not_dp_outputs`` lists those of ``owner["files"]``."""
    out: Path | None = None
    """Where the release was written (None until :meth:`write`)."""
    grid: SquareGrid | None = None
    """The public grid of the tables' ``cell_id`` (None: no GIS copies)."""

    def write(self, out: str | Path, *, overwrite: bool = False) -> dict[str, Path]:
        """Write the release folder ``out`` and ``owner_only/<name>/`` beside it; a folder urbandp wrote before is
        replaced only with ``overwrite``; any other existing folder is refused."""
        with output_policy((), overwrite=overwrite):
            return self.write_folder(Path(out))

    def write_folder(self, out: Path) -> dict[str, Path]:
        """:meth:`write` under the running output policy (inside a release's charge, or the command line's)."""
        privacy = self.privacy_for(out)
        written: dict[str, Path] = {}
        with atomic_output_dir(out) as d:
            for name, frame in self.tables.items():
                frame.write_csv(d.release / f"{name}.csv")
                written[name] = out / f"{name}.csv"
                written.update(self._write_gis(frame, d.release, out, name))
            for name, content in self.owner.get("files", {}).items():
                d.owner_path(name).write_bytes(content)
                written[name] = owner_dir_for(out) / name
            write_privacy_json(d.release, privacy.to_dict())
        written["privacy"] = out / "privacy.json"
        self.privacy, self.out = privacy, out
        return written

    def _write_gis(self, frame: Any, folder: Path, out: Path, name: str) -> dict[str, Path]:
        """GeoParquet and GeoJSON of a grid table (:mod:`urbandp._geo_outputs`): its rows, the cells' polygons."""
        from urbandp._geo_outputs import write_geo_pair

        if self.grid is None or "cell_id" not in frame.columns:
            return {}
        polygons = self.grid.cell_polygons(frame["cell_id"].to_numpy())
        parquet, geojson = write_geo_pair(frame, polygons, folder, name)
        return {f"{name} geoparquet": out / parquet.name, f"{name} geojson": out / geojson.name}

    def __post_init__(self) -> None:
        self.privacy = self.privacy_for(None)

    def privacy_for(self, out: Path | None) -> PrivacyReport:
        """The privacy report as written into ``out``: ``not_dp_outputs`` names the owner files beside it, relative
        to the release folder (``../owner_only/<name>/``; ``<out>`` until it is written)."""
        if not self.owner_notes:
            return self.privacy
        name, files = out.name if out is not None else "<out>", self.owner.get("files", {})
        paths = {
            owner_file_seen_from_release(name, f): why for f, why in self.owner_notes.items() if f in files
        }
        return type(self.privacy).from_document({**self.privacy.to_dict(), "not_dp_outputs": paths})


def owner_files(folder: Path) -> dict[str, bytes]:
    """The files a release staged in its owner folder (README excepted: the writer adds it), by name."""
    if not folder.exists():
        return {}
    return {
        p.name: p.read_bytes() for p in sorted(folder.iterdir()) if p.is_file() and p.name != "README.txt"
    }


@contextlib.contextmanager
def readings_csv(data: TableLike, overwrite: bool, parameter: str = "data") -> Iterator[Path]:
    """The readings as one CSV file (the sensing readers are CSV readers, the one place rows are validated and
    quarantined), under the output policy (an input file is never replaced): the path as given (or a list of one
    path), or the table written to a private temporary CSV (removed on exit)."""
    one = data[0] if isinstance(data, (list, tuple)) and len(data) == 1 else data
    if isinstance(one, (str, os.PathLike)):
        with output_policy([Path(one)], overwrite=overwrite):
            yield Path(one)
        return
    if isinstance(data, (list, tuple)):
        raise InputDataError(f"{parameter}: give one CSV of readings, got {len(data)} paths")
    with table_file(data, parameter, "readings.csv") as path, output_policy((), overwrite=overwrite):
        yield path


T = TypeVar("T")
R = TypeVar("R", bound=SensingRelease)


def release_in_charge(
    session: Session,
    data: TableLike,
    out: str | Path | None,
    overwrite: bool,
    name: str,
    read: Callable[[Path, Path], T],
    unit: Callable[[T], str],
    reserve: Callable[[ReleaseCharge, T], None],
    release: Callable[[T, Any, OutputDirs, list[str]], R],
    *,
    cap: Loss | None = None,
    refuse: Sequence[str] = (),
) -> R:
    """Run a map release (dp-map, pm-map) on the readings ``data`` (:func:`readings_csv`) in the order that keeps
    it honest (docs/design.md, "Outputs", rule 5): ``out`` checked; ``read`` (from the readings' CSV, bad rows to
    the staged quarantine); in the charge of ``session`` in ``unit``, the options' NOT DP reasons ``refuse``d
    with a dataset and ``reserve`` (the loss guards, the ``cap``) BEFORE any noise; then ``release`` draws from
    the charge's noise. The folder ``out`` is written inside the charge, so its sha256 is recorded when the
    charge commits; a failure after the reservation stays charged. The release's warnings are emitted."""
    from urbandp._outputs import OutputDirs, check_output_path

    folder = None if out is None else Path(out)
    with (
        readings_csv(data, overwrite) as path,
        tempfile.TemporaryDirectory(prefix=f"urbandp-{name}-") as stage,
    ):
        if folder is not None:
            check_output_path(folder)
        d = OutputDirs(release=Path(stage) / "release", owner=Path(stage) / "owner")
        quarantine = Path(stage) / "quarantine.csv"
        inputs = read(path, quarantine)
        charge = session.charge(unit(inputs), out=folder)
        charge.cap = cap
        with charge:
            charge.refuse_not_dp(refuse)
            reserve(charge, inputs)
            not_dp = list(charge.not_dp_reasons)  # with a meaningless loss allowed: its reasons
            shutil.copyfile(quarantine, d.owner_path("quarantine.csv"))
            result = release(inputs, charge.noise, d, not_dp)
            if folder is not None:
                result.write_folder(folder)
                charge.set_output(folder)
        session.committed(charge)
    result.emit_warnings()
    return result

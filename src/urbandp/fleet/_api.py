"""The fleet wing's Python API: :func:`release`, the one release path of ``urbandp release`` too (examples in
docs/getting-started.md and in :mod:`urbandp.fleet`).

Options are named as the command line's flags with underscores, with the same defaults and checks
(:mod:`urbandp.fleet._options_input` reads both). The release runs in a charge of the :class:`urbandp.Session`: the guards
(:mod:`urbandp.fleet._guardrails`, :mod:`urbandp._privacy.guards`) and the budget store's reservation come before any
noise, a store that cannot afford it raises :class:`~urbandp.errors.BudgetExceededError`, and the charge is
committed when the function returns (with ``out``: after the folder is written, with its sha256).
"""

from __future__ import annotations

import html
import tempfile
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Unpack, cast

from urbandp._arguments import (
    check_mapping,
    check_name,
    check_path,
    check_switch,
    check_table,
    unknown_keywords,
)
from urbandp._frames import TableLike, input_paths
from urbandp._option_types import FleetReleaseKeywords
from urbandp._outputs import check_output_path, output_policy
from urbandp._privacy.budget_store import checkpoint
from urbandp._provenance import parameters_hash
from urbandp._records.timezones import with_feed_zone
from urbandp._session import Session, check_session
from urbandp.errors import InvalidParameterError
from urbandp.fleet._account import HatRelease
from urbandp.fleet._guardrails import release_warnings
from urbandp.fleet._options import DOMAIN_SOURCES, HatReleaseConfig
from urbandp.fleet._options_flags import OPTION_NAMES, api_signature
from urbandp.fleet._options_input import configure, named_by
from urbandp.fleet._pipeline import LoadedRecords, _write_release, quarantine_on_failure, release_fleet
from urbandp.fleet._report import FleetPrivacyReport
from urbandp.results import Release

UNIT = "vehicle-day"


class MapView:
    """The release's self-contained map.html, shown inline by Jupyter (``_repr_html_``) or saved with :meth:`save`."""

    def __init__(self, page: str) -> None:
        self.html = page

    def _repr_html_(self) -> str:
        return (
            f'<iframe srcdoc="{html.escape(self.html, quote=True)}" style="width:100%;height:520px;border:0" '
            'sandbox="allow-scripts"></iframe>'
        )

    def save(self, path: str | Path) -> Path:
        Path(path).write_text(self.html)
        return Path(path)


@dataclass(repr=False)
class FleetRelease(Release):
    """A fleet release: ``tables`` hat_speed (and hat_speeding), the typed :class:`FleetPrivacyReport`, the owner's
    report (exact counts, warnings read from the data) and quarantine apart."""

    hat_release: HatRelease | None = None
    loaded: LoadedRecords | None = None
    config: HatReleaseConfig | None = None
    map_options: dict[str, Any] = field(default_factory=dict)
    written: dict[str, Path] = field(default_factory=dict)

    def write(self, out: str | Path, *, overwrite: bool = False, with_map: bool = True) -> dict[str, Path]:
        """The release folder ``out`` (hat_speed.csv, privacy.json, map.html) and ``owner_only/<name>/`` beside it;
        a folder urbandp wrote is replaced only with ``overwrite``."""
        assert self.hat_release is not None and self.loaded is not None
        overwrite, with_map = check_switch(overwrite, "overwrite"), check_switch(with_map, "with_map")
        with output_policy((), overwrite=overwrite):
            target = check_output_path(Path(out), "out")
            self.written = _write_release(
                target, self.hat_release, self.loaded, with_map=with_map, map_options=self.map_options
            )
        self.privacy = FleetPrivacyReport.from_document(self.hat_release.privacy)  # with its not_dp_outputs
        return self.written

    def map(self) -> MapView:
        """The release's map (the page ``write`` puts in map.html): post-processing of the published table."""
        assert self.hat_release is not None
        from urbandp.fleet._map_page import write_release_map

        with tempfile.TemporaryDirectory(prefix="urbandp-map-") as tmp:
            page = Path(tmp) / "map.html"
            write_release_map(page, self.hat_release.speed, self.hat_release.privacy, **self.map_options)
            return MapView(page.read_text())


def _spec_by_content(cfg: HatReleaseConfig, privacy: dict[str, object]) -> dict[str, object]:
    """The spec for ``spec_sha256``: a route-domain file enters by its content's sha256, not its path:
    the same spec on a copy of the feed elsewhere hashes alike."""
    spec = cfg.model_dump(mode="json")
    domain = privacy.get("domain")
    for name in DOMAIN_SOURCES[1:]:
        if spec.get(name) is not None and isinstance(domain, dict):
            spec[name] = f"sha256:{domain.get('source_sha256')}"
    return spec


def map_options_for(cfg: HatReleaseConfig, extra: dict[str, object] | None = None) -> dict[str, object]:
    """The map's options: the interval width over which a HAT is hatched (the public usefulness target,
    ``target_width``) and the public extent's cells."""
    from urbandp.fleet._domain import domain_cell_strings

    return {
        **(extra or {}),
        "interval_threshold": cfg.target_width,
        "domain_cells": domain_cell_strings(cfg),
    }


@api_signature
def release(
    data: TableLike | Sequence[str | Path],
    *,
    config: str | Path | None = None,
    columns: dict[str, str] | None = None,
    engine: str = "polars",
    spark_master: str | None = None,
    session: Session | None = None,
    out: str | Path | None = None,
    overwrite: bool = False,
    with_map: bool = True,
    map_inputs: dict[str, object] | None = None,
    step: Callable[[str], None] | None = None,
    **options: Unpack[FleetReleaseKeywords],
) -> FleetRelease:
    """Release DP average speeds (and speeding counts) per hexagon and time slot (ITMS report, section III).

    ``data``: input files or folders (CSV, JSON, JSON Lines, Parquet), or a table (Polars, pandas, GeoPandas
    points, Arrow). ``options``: the flags of ``urbandp fleet release`` with underscores (:data:`OPTION_NAMES`), as text
    or Python values (``start=datetime.date(...)``, ``domain_bbox=(lat0, lon0, lat1, lon1)``, ``hours=(6, 22)``).
    ``config``: a TOML file as ``--config`` takes. ``session``: the budget it charges (default: none charged).
    ``out``: write the folder inside the charge (its sha256 recorded); else call ``write`` later.
    """
    unknown = sorted(set(options) - set(OPTION_NAMES))
    if unknown:
        raise unknown_keywords("release", unknown, OPTION_NAMES)
    columns = check_mapping(columns, "columns")
    with_map = check_switch(with_map, "with_map")
    overwrite = check_switch(overwrite, "overwrite")
    session = check_session(session)
    config = None if config is None else Path(cast(str, check_path(config, "config")))
    out = None if out is None else Path(cast(str, check_path(out, "out")))
    engine = cast(str, check_name(engine, "engine"))
    spark_master = check_name(spark_master, "spark_master", optional=True)
    if map_inputs is not None and not isinstance(map_inputs, Mapping):
        raise InvalidParameterError(f"map_inputs must be a dict, got {map_inputs!r}", parameters="map_inputs")
    if step is not None and not callable(step):
        raise InvalidParameterError(f"step must be a function of one text, got {step!r}", parameters="step")
    a = {**options, "column": columns, "config": config}
    cfg, validation, mapping, file_keys = configure(a)
    # the release's time zone: timezone, else the GTFS domain's agency_timezone (zone-aware columns need one)
    validation = with_feed_zone(validation, cfg.domain_gtfs)
    check_table(data)
    from urbandp._contributions.spark_session import check_engine

    budget = session if session is not None else Session()
    # an error about a value read from the config file names its key there
    with named_by(file_keys), input_paths(data) as paths, output_policy(paths, overwrite=overwrite):
        charge = budget.charge(UNIT, out=out)
        with charge, quarantine_on_failure(out):  # NoValidRecords: the quarantine written beside out
            hat, loaded = release_fleet(
                paths,
                cfg,
                columns=mapping,
                options=validation,
                step=step,
                session=charge,
                engine=check_engine(engine, spark_master),
                spark_master=spark_master,
            )
            # the release spec, hashed: two releases with the same hash ran with the same parameters
            hat.privacy["spec_sha256"] = parameters_hash(
                {"release": _spec_by_content(cfg, hat.privacy), "input": validation, "columns": mapping}
            )
            result = _result(hat, loaded, cfg, map_options_for(cfg, map_inputs))
            if out is not None:
                checkpoint("after-noise")
                result.written = _write_release(
                    out, hat, loaded, with_map=with_map, map_options=result.map_options
                )
                result.privacy = FleetPrivacyReport.from_document(hat.privacy)  # with its not_dp_outputs
                charge.set_output(out)
        budget.committed(charge)
    result.emit_warnings()
    return result


def _result(
    hat: HatRelease, loaded: LoadedRecords, cfg: HatReleaseConfig, map_options: dict[str, object]
) -> FleetRelease:
    """The typed result: the useless-release warnings added (they read only noisy outputs), owner material apart."""
    p = hat.privacy
    useless = release_warnings(hat, cfg)
    p["warnings"] = [*cast(list[str], p["warnings"]), *useless]
    p["useless_release"] = bool(useless)
    owner_warnings = list(cast(list[str], hat.owner_report.get("warnings", [])))
    empty_days = cast(list[str], hat.owner_notes.get("days_without_records") or [])
    if empty_days:
        owner_warnings.append(
            f"{len(empty_days)} day(s) of the window hold no record (D stays {cast(int, p['days'])}, which dilutes the "
            "per-day counts); the list is in owner_only/"
        )
    tables = {"hat_speed": hat.speed}
    if "speeding" in cast(list[str], p.get("queries", [])):
        tables["hat_speeding"] = hat.speeding
    return FleetRelease(
        tables=tables,
        privacy=FleetPrivacyReport.from_document(p),
        owner={"report": hat.owner_report, "notes": hat.owner_notes, "quarantine": loaded.quarantine},
        warnings=list(cast(list[str], p["warnings"])),  # an Advice stays one: the CLI renames it
        owner_warnings=list(owner_warnings),
        hat_release=hat,
        loaded=loaded,
        config=cfg,
        map_options=map_options,
    )

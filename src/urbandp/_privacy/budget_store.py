"""A privacy budget that lasts across releases, processes and people (docs/design.md privacy rule 5).

The store records, per dataset and privacy unit, the declared caps and every release's charge per calendar day,
reserved in ONE transaction before any noise is drawn and never refunded (docs/budget.md, "Life of a release").
Only :class:`urbandp._privacy.session.ReleaseCharge` reserves and commits; this module is its storage.

Composition (docs/budget.md, sections "Composition" and "Delta"): per calendar day the epsilons, rho and deltas of
all releases add up (basic composition, Dwork and Roth 2014, Thm 3.16; rho: Bun and Steinke 2016, Lemma 2.3).
Each release also books its window figures as its :class:`~urbandp._privacy.loss.ReleaseLoss` states them (what a
unit present on all of its days pays: the group cost D^2 rho of their Prop. 1.9 converted once, or D x epsilon
for pure DP, Dwork and Roth 2014, Thm 2.2); ``epsilon_total``, ``rho_total`` and ``delta_total`` cap their sums.

Backends: SQLite (``BEGIN IMMEDIATE`` takes the write lock before reading the spend, so concurrent reservations
are serialised) and PostgreSQL (``psycopg``, extra ``budget-pg``; ``SELECT ... FOR UPDATE`` on the dataset row).
"""

from __future__ import annotations

import contextlib
import dataclasses
import datetime as dt
import getpass
import hashlib
import json
import math
import os
import socket
import sqlite3
import sys
import time
import uuid
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from urbandp._privacy.budget_migrations import CAP_FIELDS, LATEST_VERSION, MIGRATED_OPERATOR, MIGRATIONS
from urbandp._privacy.guards import MAX_DELTA
from urbandp.errors import BudgetExceededError, InputError, InvalidParameterError, one_line

ENV_STORE = "URBANDP_BUDGET_STORE"
ENV_OPERATOR = "URBANDP_OPERATOR"
ENV_TEST_PAUSE = "URBANDP_BUDGET_TEST_PAUSE"  # "<stage>:<flag file>": touch the file, then sleep (tests only)
DEFAULT_STORE = "urbandp-budget.sqlite"
UNITS = ("vehicle-day", "card-day", "event", "reading", "respondent", "trip", "person")
# Units present in every release of their dataset (a survey's respondent, trip or person has no per-day structure):
# their dataset must declare --epsilon-total, the cap that composes all its releases whatever day they are booked on.
WHOLE_DATASET_UNITS = ("respondent", "trip", "person")
# Units whose owner (a vehicle, a card) is present on many days: a release's window delta is then that of the group
# of its D unit-days. An event or a reading lies in one day; a respondent or a trip in one survey wave.
SPANNING_UNITS = ("vehicle-day", "card-day")
DEFAULT_DELTA_TOTAL = MAX_DELTA
"""The delta cap of a dataset declared without ``--delta-total``: the largest delta one release may have per unit
(:data:`urbandp._privacy.guards.MAX_DELTA`), now for the whole history. A delta is the chance that the guarantee
fails outright for a unit; those chances add up over releases, and the history's should stay within the one a
single release is allowed."""
TOL = 1e-9
LOSS_CAPS = tuple(f for f in CAP_FIELDS if f != "delta_total")
"""The caps of :data:`CAP_FIELDS` on a privacy loss (all but ``delta_total``); a dataset declares at least one."""
MIGRATION_LOCK_KEY = 0x75726264  # "urbd": the PostgreSQL advisory lock that serialises schema migrations

STATUS_RESERVED = "reserved"
STATUS_COMMITTED = "committed"
STATUS_CRASHED = "crashed/unconfirmed"
STATUS_ABORTED = "aborted after noise"
"""A run that failed after its reservation (which comes right before its first sampler): still charged, since
noise may have been drawn and shown; refunding it would let the noise be averaged away for free."""


def resolve_operator(option: str | None = None) -> str:
    """Who acts on the store: ``option`` (``--operator``, ``Session(operator=...)``), then ``$URBANDP_OPERATOR``,
    then the OS user name; a blank name is refused. Recorded with every cap change and every release."""
    name = option if option is not None else os.environ.get(ENV_OPERATOR)
    if name is None:
        try:
            name = getpass.getuser()
        except (OSError, KeyError):  # no login name and no passwd entry (a bare container)
            name = f"uid {os.getuid()}" if hasattr(os, "getuid") else "unknown"
    name = name.strip()
    if not name or "\n" in name:
        raise InputError(f"operator must be a non-empty one-line name, got {name!r}")
    return name


def checkpoint(stage: str) -> None:
    """Test hook: pause at ``stage`` when ``$URBANDP_BUDGET_TEST_PAUSE`` names it, so a test can kill -9 here, or
    change the world (fill the store's disk) and remove the flag file to let the run go on (at most 600 s)."""
    spec = os.environ.get(ENV_TEST_PAUSE)
    if not spec:
        return
    want, _, flag = spec.partition(":")
    if want == stage:
        path = Path(flag)
        path.write_text(str(os.getpid()))
        deadline = time.monotonic() + 600
        while path.exists() and time.monotonic() < deadline:
            time.sleep(0.05)


def content_hash(directory: Path) -> str:
    """sha256 over the release directory: each file's relative path and bytes, in sorted path order."""
    h = hashlib.sha256()
    root = Path(directory)
    for path in sorted(p for p in root.rglob("*") if p.is_file()):
        h.update(path.relative_to(root).as_posix().encode() + b"\0")
        h.update(hashlib.sha256(path.read_bytes()).digest())
    return h.hexdigest()


@dataclass(frozen=True)
class DatasetCaps:
    """Declared caps of one dataset; None means no cap of that kind.

    ``delta_total`` caps the composed delta (the sum of the releases' window deltas); a dataset declared without
    it gets :data:`DEFAULT_DELTA_TOTAL` (:meth:`BudgetStore.init_dataset`); None only for a dataset declared
    before the store recorded it (schema version 4).
    """

    name: str
    unit: str
    epsilon_per_day: float | None
    epsilon_total: float | None = None
    rho_per_day: float | None = None
    rho_total: float | None = None
    delta_total: float | None = None

    def require_a_loss_cap(self) -> None:
        """A dataset is declared with at least one epsilon or rho cap."""
        if all(getattr(self, f) is None for f in LOSS_CAPS):
            raise InputError(
                "declare at least one cap (epsilon_per_day, epsilon_total, rho_per_day or rho_total)",
                parameters=LOSS_CAPS,
            )

    def __post_init__(self) -> None:
        """The one check of a dataset's unit and caps, naming the parameter (``ud.budget.declare``'s and
        ``budget init``'s)."""
        if self.delta_total is not None and not 0 <= self.delta_total <= 1:
            raise InvalidParameterError(
                f"delta_total must be a number in [0, 1], got {self.delta_total!r}", parameters="delta_total"
            )
        for field in LOSS_CAPS:
            v = getattr(self, field)
            if v is not None and not (v > 0 and math.isfinite(v)):
                raise InvalidParameterError(f"{field} must be a number > 0, got {v!r}", parameters=field)
        if self.unit not in UNITS:
            raise InvalidParameterError(
                f"unit must be one of {', '.join(UNITS)}, got {self.unit!r}", parameters="unit"
            )
        if self.delta_total is None:  # --delta-total alone changes the delta cap of a declared dataset
            self.require_a_loss_cap()
        if self.unit in WHOLE_DATASET_UNITS and self.epsilon_total is None:
            raise InputError(
                f"a {self.unit} is in every release of the survey, whatever day it is booked on: "
                "declare epsilon_total (the cap that composes all of them)",
                parameters="epsilon_total",
            )


class BudgetStore:
    """One connection to a budget store (a SQLite path or a ``postgresql://`` URL)."""

    def __init__(self, url: str, *, create: bool = True, operator: str | None = None) -> None:
        """Open (``create``: or create) the store; a path that is a folder, unwritable or missing (``create`` off)
        is refused with :class:`InputError`. ``operator``: who acts (:func:`resolve_operator`), recorded with each
        cap change and release this connection writes."""
        self.url = str(url)
        self.operator = resolve_operator(operator)
        self.is_pg = self.url.startswith(("postgresql://", "postgres://"))
        self._conn: Any
        # the driver's "the database failed" error
        self._operational: type[Exception] = sqlite3.OperationalError
        if self.is_pg:
            try:
                import psycopg
            except ImportError as err:  # pragma: no cover - depends on the extra
                raise InputError(
                    "PostgreSQL budget store needs psycopg: pip install 'urbandp[budget-pg]'"
                ) from err
            self._operational = psycopg.OperationalError
            try:
                self._conn = psycopg.connect(self.url, autocommit=True)
            except psycopg.Error as err:
                raise InputError(
                    f"cannot connect to budget store {self.url}: {err}".splitlines()[0]
                ) from None
        else:
            path = Path(self.url.removeprefix("sqlite:///"))
            if path.parent and not path.parent.exists():
                raise InputError(f"budget store directory does not exist: {path.parent}")
            if path.is_dir():
                raise InputError(f"budget store {path} is a folder; give the path of a SQLite file")
            if not create and not path.exists():
                raise InputError(
                    f"no budget store at {path}; declare a dataset first with urbandp budget init"
                )
            try:
                self._conn = sqlite3.connect(path, timeout=60, isolation_level=None)
            except sqlite3.Error as err:
                raise InputError(f"cannot open budget store {path}: {err}") from None
        try:
            self._migrate()
        except (sqlite3.DatabaseError, ValueError) as err:
            raise InputError(
                f"budget store {self.url} is not a usable database ({err}); nothing was changed"
            ) from None

    # -- plumbing -------------------------------------------------------------------------------------------
    def close(self) -> None:
        self._conn.close()

    def _q(self, sql: str) -> str:
        return sql.replace("?", "%s") if self.is_pg else sql

    def _exec(self, sql: str, params: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
        cur = self._conn.execute(self._q(sql), params)
        return [] if cur.description is None else list(cur.fetchall())  # None: a statement without rows

    def _records(self, sql: str, params: tuple[Any, ...] = ()) -> list[dict[str, Any]]:
        """The rows of ``sql`` as dicts keyed by their column names (the query's ``AS`` names)."""
        cur = self._conn.execute(self._q(sql), params)
        names = [d[0] for d in cur.description]
        return [dict(zip(names, row, strict=True)) for row in cur.fetchall()]

    @contextlib.contextmanager
    def _tx(self) -> Iterator[None]:
        """One write transaction; SQLite takes the write lock up front (BEGIN IMMEDIATE).

        A failure inside it (or at COMMIT: a full disk, a read-only file) rolls back what is still open and
        becomes one :class:`InputError` naming the store; the original error is never masked by the rollback's
        own ("cannot rollback - no transaction is active": SQLite has already rolled back on SQLITE_FULL).
        """
        try:
            self._exec("BEGIN" if self.is_pg else "BEGIN IMMEDIATE")
            try:
                yield
                self._exec("COMMIT")
            except BaseException:
                self._rollback()
                raise
        except self._operational as err:  # a full disk, a read-only file, a lost server
            raise InputError(
                f"budget store {self.url}: {one_line(str(err))}; this transaction was rolled back"
            ) from None

    def _rollback(self) -> None:
        """Roll back the open transaction, if any is still open."""
        if not self.is_pg and not self._conn.in_transaction:
            return
        with contextlib.suppress(Exception):
            self._exec("ROLLBACK")

    def _migrate(self) -> None:
        with self._tx():
            # Concurrent CREATE TABLE IF NOT EXISTS can collide in pg_type: one migrator at a time.
            if self.is_pg:
                self._exec("SELECT pg_advisory_xact_lock(?)", (MIGRATION_LOCK_KEY,))
            self._exec("CREATE TABLE IF NOT EXISTS schema_version (version INTEGER NOT NULL)")
            rows = self._exec("SELECT version FROM schema_version")
            version = int(rows[0][0]) if rows else 0
            if version > LATEST_VERSION:
                raise ValueError(f"schema version {version} is newer than this urbandp ({LATEST_VERSION})")
            for stmts in MIGRATIONS[version:]:
                for stmt in stmts:
                    self._exec(stmt)
            if version < LATEST_VERSION:
                self._exec("DELETE FROM schema_version")
                self._exec("INSERT INTO schema_version (version) VALUES (?)", (LATEST_VERSION,))

    # -- datasets -------------------------------------------------------------------------------------------
    def init_dataset(self, caps: DatasetCaps) -> DatasetCaps:
        """Declare a dataset, or change its caps (never below what is already spent on any day).

        Re-declaring keeps every cap that is not given again (None): a cap is never removed by omission. Raising
        a cap is allowed; every cap set or changed (the first declaration too) is recorded in ``cap_changes`` with
        the operator, the time and the old and new values (:meth:`cap_changes`), in the same transaction. Returns
        the caps in force.
        """
        with self._tx():
            existing = self._caps(caps.name)
            caps = self._declare(caps, existing)
            self._record_cap_changes(existing, caps)
        return caps

    def _record_cap_changes(self, before: DatasetCaps | None, after: DatasetCaps) -> None:
        """One ``cap_changes`` row per cap whose value differs from ``before`` (None: a first declaration)."""
        now = _now()
        for field in CAP_FIELDS:
            old = None if before is None else getattr(before, field)
            new = getattr(after, field)
            if new != old:
                self._exec(
                    "INSERT INTO cap_changes (dataset, changed_at, operator, field, old_value, new_value) "
                    "VALUES (?, ?, ?, ?, ?, ?)",
                    (after.name, now, self.operator, field, old, new),
                )

    def _declare(self, caps: DatasetCaps, existing: DatasetCaps | None) -> DatasetCaps:
        """Insert or update the dataset row (inside the caller's transaction); returns the caps in force."""
        if existing is None:
            caps.require_a_loss_cap()
            if caps.delta_total is None:
                caps = dataclasses.replace(caps, delta_total=DEFAULT_DELTA_TOTAL)
            self._exec(
                f"INSERT INTO datasets (name, unit, {', '.join(CAP_FIELDS)}, created_at) "
                "VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                (caps.name, caps.unit, *_cap_values(caps), _now()),
            )
            return caps
        kept = {f: getattr(existing, f) for f in CAP_FIELDS if getattr(caps, f) is None}
        caps = dataclasses.replace(caps, **kept)
        if existing.unit != caps.unit:
            raise InputError(
                f"dataset {caps.name!r} is declared in unit {existing.unit}, not {caps.unit}; a unit cannot change"
            )
        per_day = self._spend_per_day(caps.name)
        if caps.epsilon_per_day is not None and per_day:
            day, most = max(per_day.items(), key=lambda kv: kv[1][0])
            if most[0] > caps.epsilon_per_day + TOL:
                raise InputError(
                    f"cannot lower epsilon per day of {caps.name!r} to {caps.epsilon_per_day:g}: "
                    f"{most[0]:.6g} already spent on {day}"
                )
        for label, cap, column, fmt in (
            ("epsilon total", caps.epsilon_total, "window_epsilon", ".6g"),
            ("rho total", caps.rho_total, "window_rho", ".6g"),
            ("delta total", caps.delta_total, "window_delta", ".3g"),
        ):
            spent = self._window_sum(caps.name, column)
            if cap is not None and (_over(spent, cap) if column == "window_delta" else spent > cap + TOL):
                raise InputError(
                    f"cannot lower {label} of {caps.name!r} to {cap:g}: {spent:{fmt}} already spent"
                )
        self._exec(
            f"UPDATE datasets SET {', '.join(f + ' = ?' for f in CAP_FIELDS)} WHERE name = ?",
            (*_cap_values(caps), caps.name),
        )
        return caps

    def _caps(self, name: str) -> DatasetCaps | None:
        rows = self._exec(
            f"SELECT name, unit, {', '.join(CAP_FIELDS)} FROM datasets "
            "WHERE name = ?" + (" FOR UPDATE" if self.is_pg else ""),
            (name,),
        )
        return DatasetCaps(*rows[0]) if rows else None

    def caps(self, name: str) -> DatasetCaps:
        """The declared caps of ``name`` (InputError if it was never declared)."""
        caps = self._caps(name)
        if caps is None:
            known = [r[0] for r in self._exec("SELECT name FROM datasets ORDER BY name")]
            raise InputError(
                f"unknown dataset {name!r} in budget store {self.url} "
                f"(known: {', '.join(known) or 'none'}); declare it with `urbandp budget init`"
            )
        return caps

    def _spend_per_day(self, name: str) -> dict[str, tuple[float, float, float]]:
        """``{day: (epsilon, rho, delta)}`` charged on each day, summed over releases (basic composition, Dwork and
        Roth 2014, Thm 3.16; rho: Bun and Steinke 2016, Lemma 2.3)."""
        rows = self._exec(
            "SELECT c.day, SUM(c.epsilon), SUM(COALESCE(c.rho, 0)), SUM(COALESCE(c.delta, 0)) FROM charges c "
            "JOIN releases r ON r.id = c.release_id WHERE r.dataset = ? GROUP BY c.day",
            (name,),
        )
        return {str(d): (float(e), float(r), float(x)) for d, e, r, x in rows}

    def _window_sum(self, name: str, column: str) -> float:
        """The sum over the releases of ``name`` of one window column (``window_epsilon``, ``window_rho`` or
        ``window_delta``): basic composition over releases (Dwork and Roth 2014, Thm 3.16)."""
        rows = self._exec(f"SELECT {column} FROM releases WHERE dataset = ?", (name,))
        return math.fsum(float(v or 0.0) for (v,) in rows)

    def delta_per_day(self, name: str) -> dict[str, float]:
        """``{day: delta}``: the deltas charged on each day, summed over releases: what one unit-day pays."""
        self.caps(name)
        return {day: delta for day, (_, _, delta) in self._spend_per_day(name).items()}

    def delta_spent(self, name: str) -> float:
        """The composed delta of all releases of ``name``: the sum of their window deltas (Thm 3.16), what a unit
        present on every day pays; ``delta_total`` caps it. Not capped at 1 here: the cap compares the sum."""
        self.caps(name)
        return self._window_sum(name, "window_delta")

    def epsilon_spent(self, name: str) -> float:
        """The composed epsilon of all releases of ``name``: the sum of their window epsilons (Thm 3.16), what a
        unit present on every day pays; ``epsilon_total`` caps it."""
        self.caps(name)
        return self._window_sum(name, "window_epsilon")

    def group_rho_spent(self, name: str) -> float:
        """zCDP cost of all releases for a unit present on every day (what ``rho_total`` caps)."""
        self.caps(name)
        return self._window_sum(name, "window_rho")

    def spend_per_day(self, name: str) -> dict[str, tuple[float, float]]:
        """``{day: (epsilon, rho)}`` charged so far (reserved, committed and crashed releases all count)."""
        self.caps(name)
        return {day: (eps, rho) for day, (eps, rho, _) in self._spend_per_day(name).items()}

    # -- reservations ---------------------------------------------------------------------------------------
    def reserve(
        self,
        dataset: str,
        unit: str,
        charges_per_day: Mapping[dt.date, float],
        mechanism: str,
        params: Mapping[str, Any],
        command_line: str,
        rho_per_day: Mapping[dt.date, float] | None = None,
        delta_per_day: Mapping[dt.date, float] | None = None,
        *,
        window_delta: float,
        window_epsilon: float,
        window_rho: float,
    ) -> str:
        """Reserve the charges in one transaction, or raise :class:`BudgetExceededError`; returns the id.

        ``charges_per_day`` holds each day's epsilon (a zCDP charge as its converted epsilon, so an epsilon cap
        holds against it), ``rho_per_day`` its rho, ``delta_per_day`` its delta. ``window_delta``,
        ``window_epsilon`` and ``window_rho``: the delta, the epsilon and the zCDP cost a unit present on every
        charged day pays for this release, as the release states them (:class:`urbandp._privacy.loss.ReleaseLoss`;
        :meth:`urbandp._privacy.session.ReleaseCharge.default_window` when its wing states none), added up and
        checked against ``delta_total``, ``epsilon_total`` and ``rho_total``.
        """
        _check_request(charges_per_day, window_delta, window_epsilon, window_rho)
        rho = rho_per_day or {}
        rid = uuid.uuid4().hex
        with self._tx():
            caps = self.caps(dataset)
            if caps.unit != unit:
                raise InputError(
                    f"dataset {dataset!r} is declared in unit {caps.unit}; this release charges {unit}"
                )
            self._check_delta_total(caps, window_delta, len(charges_per_day))
            spent = self._spend_per_day(dataset)
            _check_days(dataset, unit, caps, charges_per_day, rho, spent)
            days = len(charges_per_day)
            if caps.rho_total is not None:
                self._check_total(dataset, "total zCDP budget", "group rho", caps.rho_total, window_rho, days)
            if caps.epsilon_total is not None:
                self._check_total(
                    dataset, "total privacy budget", "epsilon", caps.epsilon_total, window_epsilon, days
                )
            self._insert_release(
                rid, dataset, mechanism, params, command_line, (window_delta, window_epsilon, window_rho)
            )
            for day in sorted(charges_per_day):
                self._exec(
                    "INSERT INTO charges (release_id, day, epsilon, rho, delta) VALUES (?, ?, ?, ?, ?)",
                    (
                        rid,
                        day.isoformat(),
                        float(charges_per_day[day]),
                        rho.get(day),
                        (delta_per_day or {}).get(day),
                    ),
                )
        return rid

    def _check_total(self, dataset: str, budget: str, loss: str, cap: float, asked: float, days: int) -> None:
        """Refuse a release whose window loss (``loss``: ``epsilon`` or ``group rho``, what a unit present on all
        of its days pays, as its privacy.json states it; D^2 rho for a release that pools its days, Bun and Steinke
        2016, Prop. 1.9), added to those of the releases before it, passes ``cap`` (basic composition over
        releases, Dwork and Roth 2014, Thm 3.16; Bun and Steinke 2016, Lemma 2.3)."""
        have = self._window_sum(dataset, "window_rho" if loss == "group rho" else "window_epsilon")
        if have + asked > cap + TOL:
            raise BudgetExceededError(
                f"{budget} of {dataset!r} exceeded: asked {loss}={asked:.6g} over "
                f"{_days(days)}, left {budget_left(cap, have):.6g} of {cap:g}"
            )

    def _insert_release(
        self,
        rid: str,
        dataset: str,
        mechanism: str,
        params: Mapping[str, Any],
        command_line: str,
        window: tuple[float, float, float],
    ) -> None:
        """The release's row, :data:`STATUS_RESERVED`, with who reserved it, where (host, pid) and when, and its
        ``window`` (delta, epsilon, zCDP cost)."""
        self._exec(
            "INSERT INTO releases (id, dataset, status, mechanism, params, command_line, host, pid, "
            "reserved_at, window_delta, operator, window_epsilon, window_rho) "
            "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            (
                rid,
                dataset,
                STATUS_RESERVED,
                mechanism,
                json.dumps(dict(params), sort_keys=True, default=str),
                command_line,
                socket.gethostname(),
                os.getpid(),
                _now(),
                float(window[0]),
                self.operator,
                float(window[1]),
                float(window[2]),
            ),
        )

    def _check_delta_total(self, caps: DatasetCaps, asked: float, days: int) -> None:
        """Refuse a release whose window delta would take the composed delta past ``delta_total``.

        A release that adds no delta (pure DP) is never refused by it: it cannot make the delta worse.
        """
        if caps.delta_total is None or asked == 0:
            return
        have = self._window_sum(caps.name, "window_delta")
        if _over(have + asked, caps.delta_total):
            raise BudgetExceededError(
                f"total delta budget of {caps.name!r} exceeded: asked delta={asked:.3g} over {_days(days)} (what a "
                f"unit present on all of them pays), left {max(caps.delta_total - have, 0.0):.3g} of "
                f"{caps.delta_total:g}; declare a larger delta_total with `urbandp budget init` to accept it",
                parameters="delta_total",
            )

    def commit(self, release_id: str, content_hash: str | None) -> None:
        """Mark the reservation as a published release with the output's content hash."""
        with self._tx():
            self._exec(
                "UPDATE releases SET status = ?, content_hash = ?, committed_at = ? WHERE id = ?",
                (STATUS_COMMITTED, content_hash, _now(), release_id),
            )

    def abort(self, release_id: str) -> None:
        """Keep the charge of a run that failed after its reservation, marked :data:`STATUS_ABORTED`."""
        with self._tx():
            self._exec(
                "UPDATE releases SET status = ?, committed_at = ? WHERE id = ?",
                (STATUS_ABORTED, _now(), release_id),
            )

    def cap_changes(self, dataset: str) -> list[dict[str, Any]]:
        """Every cap set or changed on ``dataset`` by ``budget init``, oldest first: ``changed_at``, ``operator``,
        ``field`` (a column of :data:`CAP_FIELDS`), ``old`` (None: no cap before) and ``new``; ``migrated`` marks
        the caps found in force when the store was upgraded to schema version 5 (earlier changes unrecorded)."""
        self.caps(dataset)
        rows = self._exec(
            "SELECT changed_at, operator, field, old_value, new_value FROM cap_changes WHERE dataset = ? "
            "ORDER BY changed_at",
            (dataset,),
        )
        order = {f: i for i, f in enumerate(CAP_FIELDS)}
        out = [
            {
                "changed_at": str(at),
                "operator": str(who),
                "field": str(field),
                "old": None if old is None else float(old),
                "new": None if new is None else float(new),
                "migrated": who == MIGRATED_OPERATOR,
            }
            for at, who, field, old, new in rows
        ]
        return sorted(out, key=lambda c: (c["changed_at"], order.get(c["field"], len(order))))

    def history(self, dataset: str) -> list[dict[str, Any]]:
        """Every release of ``dataset``, oldest first, with its days, charge, status and operator (None: booked
        before the store recorded it, schema version 5); :meth:`cap_changes` holds the cap changes."""
        self.caps(dataset)
        rows = self._records(
            "SELECT r.id AS id, r.status AS status, r.mechanism AS mechanism, r.params AS params, "
            "r.command_line AS command_line, r.content_hash AS content_hash, r.reserved_at AS reserved_at, "
            "r.committed_at AS committed_at, MIN(c.day) AS first_day, MAX(c.day) AS last_day, COUNT(c.day) AS days, "
            "SUM(c.epsilon) AS epsilon_sum, SUM(c.rho) AS rho_sum, MAX(c.delta) AS delta_per_day, "
            "r.window_delta AS window_delta, r.window_epsilon AS window_epsilon, r.window_rho AS window_rho, "
            "r.operator AS operator, r.host AS host, r.pid AS pid "
            "FROM releases r LEFT JOIN charges c ON c.release_id = r.id WHERE r.dataset = ? "
            "GROUP BY r.id ORDER BY r.reserved_at, r.id",  # the other columns of r depend on its key, r.id
            (dataset,),
        )
        out = []
        for entry in rows:
            pid = entry.pop("pid")
            if entry["status"] == STATUS_RESERVED and _is_dead(str(entry["host"]), int(pid)):
                entry["status"] = STATUS_CRASHED
            rho, delta = entry["rho_sum"], entry["delta_per_day"]
            entry.update(
                params=json.loads(entry["params"]),
                days=int(entry["days"]),
                rho_sum=None if rho is None else float(rho),
                delta_per_day=None if delta is None else float(delta),
                **{
                    k: float(entry[k] or 0.0)
                    for k in ("epsilon_sum", "window_delta", "window_epsilon", "window_rho")
                },
            )
            out.append(entry)
        return out


def _cap_values(caps: DatasetCaps) -> tuple[float | None, ...]:
    """The caps of ``caps`` in the order of :data:`CAP_FIELDS` (the columns of ``datasets``)."""
    return tuple(getattr(caps, f) for f in CAP_FIELDS)


def _check_request(
    charges_per_day: Mapping[dt.date, float], window_delta: float, window_epsilon: float, window_rho: float
) -> None:
    """Check a reservation before the store is touched. :class:`InputError`: no day charged, an epsilon that is
    not finite and >= 0, a window delta outside [0, 1], a window epsilon or rho that is not finite and >= 0."""
    if not charges_per_day:
        raise InputError("a release must charge at least one day")
    for day, eps in charges_per_day.items():
        if not (eps >= 0 and math.isfinite(eps)):
            raise InputError(f"charge on {day} must be a finite epsilon >= 0, got {eps}")
    if not 0 <= window_delta <= 1:
        raise InputError(f"a window delta must be a number in [0, 1], got {window_delta}")
    for name, value in (("window epsilon", window_epsilon), ("window rho", window_rho)):
        if not (value >= 0 and math.isfinite(value)):
            raise InputError(f"a {name} must be a finite number >= 0, got {value}")


def _check_days(
    dataset: str,
    unit: str,
    caps: DatasetCaps,
    charges_per_day: Mapping[dt.date, float],
    rho_per_day: Mapping[dt.date, float],
    spent: Mapping[str, tuple[float, float, float]],
) -> None:
    """Refuse, at the first day in date order, a charge that takes the day's epsilon past ``epsilon_per_day``
    or its rho past ``rho_per_day`` (sequential composition per day, Dwork and Roth 2014, Thm 3.16)."""
    for day in sorted(charges_per_day):
        key = day.isoformat()
        asked = charges_per_day[day]
        have_eps, have_rho, _ = spent.get(key, (0.0, 0.0, 0.0))
        if caps.epsilon_per_day is not None and have_eps + asked > caps.epsilon_per_day + TOL:
            raise BudgetExceededError(
                f"privacy budget of {dataset!r} exceeded on {key}: asked epsilon={asked:.6g} per {unit}, "
                f"left {budget_left(caps.epsilon_per_day, have_eps):.6g} of {caps.epsilon_per_day:g}"
            )
        asked_rho = rho_per_day.get(day, 0.0)
        if caps.rho_per_day is not None and have_rho + asked_rho > caps.rho_per_day + TOL:
            raise BudgetExceededError(
                f"zCDP budget of {dataset!r} exceeded on {key}: asked rho={asked_rho:.6g}, "
                f"left {budget_left(caps.rho_per_day, have_rho):.6g} of {caps.rho_per_day:g}"
            )


def _over(value: float, cap: float) -> bool:
    """``value`` passes a delta ``cap`` (relative tolerance: deltas are ~1e-6, an absolute 1e-9 is 0.1% of them);
    a cap of 1 bounds nothing (every delta is at most 1)."""
    return cap < 1 and value > cap * (1 + 1e-9)


def budget_left(cap: float, spent: float) -> float:
    """What is left of ``cap``: 0 within the store's tolerance (a 4 charged against 4 as its converted zCDP epsilon
    leaves float residue such as 4.4e-16, which is no budget)."""
    left = cap - spent
    return left if left > TOL else 0.0


def _days(n: int) -> str:
    return f"{n} day" if n == 1 else f"{n} days"


def _command_line() -> str:
    """The command as the user typed it: ``urbandp ...`` for the console script and ``python -m urbandp``."""
    head = Path(sys.argv[0]).name if sys.argv else ""
    if head in ("urbandp", "__main__.py"):
        return " ".join(["urbandp", *sys.argv[1:]])
    return " ".join(sys.argv)


def _now() -> str:
    return dt.datetime.now(dt.UTC).isoformat(timespec="microseconds")


def _is_dead(host: str, pid: int) -> bool:
    """A reservation's process is known dead only on this host (elsewhere it may still be running)."""
    if host != socket.gethostname():
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    except PermissionError:
        return False
    return False


def open_store(url: str | None, *, create: bool = True, operator: str | None = None) -> BudgetStore:
    """Open the store named by ``url`` (``--budget-store``), else ``$URBANDP_BUDGET_STORE``, else the default;
    ``create`` off: it must exist already. ``operator``: who acts (default ``$URBANDP_OPERATOR``, else the OS user
    name; :func:`resolve_operator`)."""
    return BudgetStore(url or os.environ.get(ENV_STORE) or DEFAULT_STORE, create=create, operator=operator)

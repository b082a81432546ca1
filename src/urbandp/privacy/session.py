"""The one owner of a release's privacy budget, in every wing: plan -> reserve -> measure -> commit.

docs/design.md privacy rules 2 and 5. The pattern is OpenDP's compositor (the loss is fixed before ``release()``) and
Tumult Analytics' ``Session``; the code is ours. A command opens one :class:`Session` around its whole run::

    with Session(dataset, store_url, unit="vehicle-day", out=out, cap=Loss.pure(budget_epsilon)) as session:
        session.refuse_not_dp(reasons)            # a release labelled NOT DP never books DP spend
        session.reserve(loss_per_day, days, "fleet-hat-laplace", params)   # the ONE place budget is reserved
        noisy = mechanism.draw(values, session.noise)                      # the ONE source of noise
        ...write the outputs...
        session.set_output(out)
        session.say("summary")                    # printed only once the charge is committed
    # here: committed with the output's sha256 (the ONE place budget is committed)

Rules the session enforces:

* the output path is checked before anything is reserved (:func:`urbandp.outputs.check_output_path`);
* the whole loss is reserved in the store (``--dataset``) and checked against the run's own cap
  (``--budget-epsilon``) before the first sampler runs; drawing from :attr:`Session.noise` before
  :meth:`Session.reserve` is a programming error and raises;
* once reserved, the charge is never refunded: a failed write or a refusal after noise commits it as
  ``aborted after noise`` (a refund would let fresh noise be averaged away for free);
* nothing passed to :meth:`Session.say` is printed unless the charge was committed, so no value derived from
  noise is shown by a run that is not charged;
* a release with ``not_dp_reasons`` is refused with ``--dataset`` (:meth:`Session.refuse_not_dp`);
* the loss guards of :mod:`urbandp.privacy.guards` (delta limit, meaningless loss) run in :meth:`Session.reserve`,
  so every release that reserves passes them, whichever entry point opened the session.

A zCDP loss is booked in the store as rho and as its (epsilon, delta) at the release's conversion delta, so an
epsilon cap holds against it (issue 20: rho 1.0 is epsilon 7.77 at delta 1e-6, not "epsilon 1").

Each reservation also books its *window delta*, the delta a unit present on every reserved day pays (issue 30):
stated by the wing when it knows its group bound (``reserve(..., window_delta=...)``; the fleet's selection on an
unknown domain: OpenDP's threshold map at distance D), else :meth:`Session.default_window_delta`. The store adds
the window deltas of a dataset's releases and refuses one that would pass its ``--delta-total``.

If the store cannot confirm the charge once the outputs are in place (its disk is full), the run ends with one
line saying the release was published and where, and that its charge stays booked, unconfirmed: the reservation
already counts in every cap, and a release that may have been read is not taken back.
"""

from __future__ import annotations

import datetime as dt
import math
import sys
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from types import TracebackType
from typing import Any

import numpy as np

from urbandp.errors import BudgetExceededError, InputError
from urbandp.privacy import guards
from urbandp.privacy.loss import Loss
from urbandp.privacy.noise import NoiseSource, OpenDPNoise

TOL = 1e-12


class NoiseBeforeReservation(RuntimeError):
    """A sampler was called before the session reserved its budget (a bug in the release, never the user's)."""


class Session:
    """A release's privacy budget: split, reserve before noise, measure, commit (see the module docstring).

    ``dataset`` None: no store is charged (the reservation still gates the noise and the local ``cap``).
    ``cap``: the run's own limit (``--budget-epsilon``/``--budget``), checked on the reserved window total.
    ``conversion_delta``: the delta at which a zCDP loss is stated (and booked) as (epsilon, delta).
    """

    def __init__(
        self,
        dataset: str | None,
        store_url: str | None,
        *,
        unit: str,
        out: Path | None = None,
        cap: Loss | None = None,
        conversion_delta: float | None = None,
        noise: NoiseSource | None = None,
        command_line: str | None = None,
        allow_meaningless_epsilon: bool = False,
        operator: str | None = None,
    ) -> None:
        self.dataset = dataset
        self.operator = (
            operator  # who is recorded with the release (None: $URBANDP_OPERATOR, else the OS user)
        )
        self.store_url = store_url
        self.unit = unit
        self.out = out
        self.cap = cap
        self.conversion_delta = conversion_delta
        self.command_line = command_line
        self.allow_meaningless_epsilon = allow_meaningless_epsilon
        self.not_dp_reasons: list[str] = []
        """Why this release is NOT DP (a meaningless loss allowed by ``allow_meaningless_epsilon``, or what a wing
        declared through :meth:`refuse_not_dp`); the wing copies them into its privacy report."""
        self.loss_per_day: Loss | None = None
        self.days: list[dt.date] = []
        self.reserved = False
        self.noise_drawn = False
        self.release_id: str | None = None
        self.status: str | None = None
        self._output: Path | None = None
        self._store: Any = None
        self._held: list[Callable[[], None]] = []
        self._source = noise if noise is not None else OpenDPNoise()
        if out is not None:
            from urbandp.outputs import check_output_path

            check_output_path(out)  # before anything is reserved: the folder may be replaced

    # -- plan --------------------------------------------------------------------------------------------------
    @staticmethod
    def split(total: Loss, weights: Mapping[str, float]) -> dict[str, Loss]:
        """Share ``total`` between named steps in proportion to ``weights`` (PipelineDP's ``scope(weight)``)."""
        w = {k: float(v) for k, v in weights.items()}
        if not w or any(not (v > 0 and math.isfinite(v)) for v in w.values()):
            raise ValueError(f"weights must be finite and > 0, got {weights}")
        s = math.fsum(w.values())
        return {k: Loss(total.epsilon * v / s, total.delta * v / s, total.rho * v / s) for k, v in w.items()}

    def refuse_not_dp(self, reasons: Sequence[str]) -> None:
        """With ``--dataset``, refuse a release that is labelled NOT DP: it cannot be booked as DP spend.

        The reasons are remembered (:attr:`not_dp_reasons`): :meth:`reserve` checks them again, so a wing that
        labels its release NOT DP after this call is still refused before any noise. A noise source that does not
        declare itself private (:func:`urbandp.privacy.guards.noise_reasons`) adds its reason here, whatever the
        wing: every release drawn from it is labelled NOT DP and refused with a dataset.
        """
        found = [*guards.noise_reasons(self._source), *reasons]
        self.not_dp_reasons += [r for r in found if r not in self.not_dp_reasons]
        guards.refuse_not_dp(self.dataset, self.not_dp_reasons)

    def check_loss(self, loss_per_day: Loss) -> list[str]:
        """The loss guards (:mod:`urbandp.privacy.guards`) on a loss per unit (per day for per-day units): the
        delta limit always; the meaningless-loss limit refused, or with ``allow_meaningless_epsilon`` returned as
        NOT DP reasons (and remembered). Called by :meth:`reserve`; a wing may call it earlier (a plan)."""
        if self.conversion_delta is not None:
            guards.check_delta(self.conversion_delta, "delta")
        guards.check_delta(loss_per_day.delta, "delta (per unit and day)")
        reasons = guards.meaningless_reasons(
            loss_per_day, self.conversion_delta, per=self.unit, allow=self.allow_meaningless_epsilon
        )
        self.refuse_not_dp(reasons)
        return reasons

    # -- reserve -----------------------------------------------------------------------------------------------
    def window_loss(self) -> Loss:
        """The reserved loss summed over the reserved days (what a unit present on every day pays)."""
        if self.loss_per_day is None:
            return Loss()
        return self.loss_per_day.times(len(self.days))

    def approx_per_day(self) -> tuple[float, float]:
        """The reserved per-day loss as (epsilon, delta): rho converted at the conversion delta."""
        assert self.loss_per_day is not None
        eps, delta, why = self.loss_per_day.approx(self.conversion_delta)
        if eps is None or delta is None:
            raise InputError(f"the privacy loss cannot be stated: {why}")
        return eps, delta

    def reserve(
        self,
        loss_per_day: Loss,
        days: Sequence[dt.date],
        mechanism: str,
        params: Mapping[str, Any] | None = None,
        *,
        cap_on: str | Loss = "window",
        window_delta: float | None = None,
    ) -> None:
        """Reserve ``loss_per_day`` on each of ``days``: the run's cap, then the store, in one step, before noise.

        ``cap_on``: ``window`` checks the cap against the loss summed over ``days``; ``day`` against one day's; a
        :class:`Loss` against that loss (a bound the release computed itself, e.g. a tight composition).
        ``window_delta``: the delta a unit present on every day of ``days`` pays for this release, as the wing's
        own group bound states it (its privacy.json's delta per window); None: :meth:`default_window_delta`.
        The store adds it to the dataset's composed delta and refuses the release past ``--delta-total``.
        """
        if self.reserved:
            raise RuntimeError("a session reserves its budget once")
        if not days:
            raise InputError("a release must charge at least one day")
        self.check_loss(loss_per_day)  # the guards, whatever the entry point: before the store and any noise
        self.loss_per_day = loss_per_day
        self.days = sorted(set(days))
        eps_day, delta_day = self.approx_per_day()
        window_delta = self._window_delta(window_delta, delta_day)
        if self.cap is not None:
            if isinstance(cap_on, Loss):
                asked = cap_on
            else:
                asked = self.window_loss() if cap_on == "window" else loss_per_day
            a_eps, a_delta, _ = asked.approx(self.conversion_delta)
            assert a_eps is not None and a_delta is not None
            if a_eps > self.cap.epsilon * (1 + TOL) or a_delta > self.cap.delta + TOL:
                raise BudgetExceededError(
                    f"privacy budget exceeded: this release costs epsilon {a_eps:.6g}, delta {a_delta:.3g}; "
                    f"the cap is epsilon {self.cap.epsilon:.6g}, delta {self.cap.delta:.3g}. Nothing was released."
                )
        if self.dataset is not None:
            from urbandp.privacy.budget_store import _command_line, checkpoint, open_store

            self._store = open_store(self.store_url, operator=self.operator)
            try:
                self.release_id = self._store.reserve(
                    self.dataset,
                    self.unit,
                    dict.fromkeys(self.days, eps_day),
                    mechanism,
                    {**(params or {}), "loss_per_day": loss_per_day.to_json(self.conversion_delta)},
                    self.command_line if self.command_line is not None else _command_line(),
                    rho_per_day=dict.fromkeys(self.days, loss_per_day.rho) if loss_per_day.rho > 0 else None,
                    delta_per_day=dict.fromkeys(self.days, delta_day) if delta_day > 0 else None,
                    window_delta=window_delta,
                )
            except BaseException:
                self._store.close()
                self._store = None
                raise
            self.status = "reserved"
            checkpoint("before-noise")
        self.reserved = True

    def default_window_delta(self) -> float:
        """The window delta of a release whose wing states none, from the reserved per-day loss.

        The approximate-DP part: for a unit that spans days (a vehicle-day, a card-day), the sum of the D days'
        deltas, basic composition (Dwork and Roth 2014, Thm 3.16), sound when each day's output depends on that
        day's unit-day only (a release that pools the days must state its group bound); for a unit in one day or
        one survey wave, the loss's own delta. A zCDP part adds its conversion delta once: over the window it costs
        D^2 rho (Bun and Steinke 2016, Prop. 1.9; ``rho_total``), converted once at that delta (Prop. 1.3).
        """
        from urbandp.privacy.budget_store import SPANNING_UNITS

        assert self.loss_per_day is not None
        d = len(self.days) if self.unit in SPANNING_UNITS else 1
        conversion = (self.conversion_delta or 0.0) if self.loss_per_day.rho > 0 else 0.0
        return min(1.0, d * self.loss_per_day.delta + conversion)

    def _window_delta(self, stated: float | None, delta_day: float) -> float:
        """The window delta to book: the wing's (checked) or the default."""
        if stated is None:
            return self.default_window_delta()
        if not (isinstance(stated, (int, float)) and 0 <= stated <= 1):
            raise ValueError(f"window_delta must be a number in [0, 1], got {stated!r}")
        if stated < delta_day * (1 - 1e-9):
            raise ValueError(
                f"window_delta {stated:g} is below one day's delta {delta_day:g}: a unit on every day pays at least that"
            )
        return float(stated)

    # -- measure -----------------------------------------------------------------------------------------------
    @property
    def noise(self) -> NoiseSource:
        """The release's noise source; its first draw requires the reservation (and marks the noise as drawn)."""
        return _GatedNoise(self)

    def _before_draw(self) -> None:
        if not self.reserved:
            raise NoiseBeforeReservation("noise drawn before the session reserved its budget")
        self.noise_drawn = True

    def mark_drawn(self) -> None:
        """Declare that a sampler outside :attr:`noise` (an OpenDP measurement invoked directly) runs now."""
        self._before_draw()

    # -- account and publish -----------------------------------------------------------------------------------
    def set_output(self, directory: Path) -> None:
        """Name the written release folder: its sha256 is recorded when the charge commits."""
        self._output = Path(directory)

    def say(self, text: str, *, err: bool = False) -> None:
        """Print ``text`` once the charge is committed (never, if the run fails): it may hold noisy values."""
        stream = sys.stderr if err else sys.stdout
        self._held.append(lambda: print(text, file=stream))

    def later(self, action: Callable[[], None]) -> None:
        """Run ``action`` (a Rich print, a summary) once the charge is committed."""
        self._held.append(action)

    def __enter__(self) -> Session:
        return self

    def __exit__(
        self, kind: type[BaseException] | None, err: BaseException | None, tb: TracebackType | None
    ) -> None:
        ok = kind is None
        try:
            self._finish(ok)
        finally:
            if self._store is not None:
                self._store.close()
                self._store = None
        if ok:
            for action in self._held:
                action()

    def _finish(self, ok: bool) -> None:
        if self._store is None or self.release_id is None:
            return
        from urbandp.privacy.budget_store import checkpoint, content_hash

        published = self._output is not None and self._output.exists()
        if ok or published:  # a failure after the outputs were written still commits: they are out
            if ok:
                checkpoint("before-commit")
            digest = content_hash(self._output) if published and self._output is not None else None
            try:
                self._store.commit(self.release_id, digest)
            except InputError as err:  # the store failed (disk full): the release is out, its charge booked
                if not published:
                    raise
                raise InputError(
                    f"the release was published at {self._output}, but the budget store could not confirm its "
                    f"charge ({err}): the charge stays booked, unconfirmed (budget history: crashed/unconfirmed), "
                    "and counts as spent"
                ) from None
            self.status = "committed"
        else:  # reserved, so noise may have been drawn and shown: the charge stays, never refunded
            self._store.abort(self.release_id)
            self.status = "aborted after noise"


class _GatedNoise:
    """A :class:`NoiseSource` that asks its session before every draw."""

    def __init__(self, session: Session) -> None:
        self._session = session
        self.is_private = session._source.is_private
        if not hasattr(
            session._source, "laplace_on_lattice"
        ):  # claim no lattice draws the source cannot make
            self.laplace_on_lattice = None  # type: ignore[method-assign,assignment]

    def laplace(self, values: np.ndarray, scale: float | np.ndarray) -> np.ndarray:
        self._session._before_draw()
        return self._session._source.laplace(values, scale)

    def discrete_laplace(self, values: np.ndarray, scale: float | np.ndarray) -> np.ndarray:
        self._session._before_draw()
        return self._session._source.discrete_laplace(values, scale)

    def gaussian(self, values: np.ndarray, scale: float | np.ndarray) -> np.ndarray:
        self._session._before_draw()
        return self._session._source.gaussian(values, scale)

    def discrete_gaussian(self, values: np.ndarray, scale: float | np.ndarray) -> np.ndarray:
        self._session._before_draw()
        return self._session._source.discrete_gaussian(values, scale)

    def laplace_on_lattice(self, values: np.ndarray, scale: float, exponent: int) -> np.ndarray:
        self._session._before_draw()
        return self._session._source.laplace_on_lattice(values, scale, exponent)  # type: ignore[attr-defined]


def days_between(first: dt.date | str, last: dt.date | str) -> list[dt.date]:
    """Every calendar day of ``first..last`` inclusive (ISO strings accepted)."""
    from urbandp.privacy.budget_store import days_of_window

    return days_of_window(dt.date.fromisoformat(str(first)[:10]), dt.date.fromisoformat(str(last)[:10]))

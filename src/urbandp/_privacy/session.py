"""The one owner of a release's privacy budget, in every wing: plan -> reserve -> measure -> commit.

docs/design.md privacy rules 2 and 5. The pattern is OpenDP's compositor (the loss is fixed before ``release()``) and
Tumult Analytics' ``Session``; the code is ours. A command opens one :class:`ReleaseCharge` around its whole run;
docs/privacy-core.md, section "The ReleaseCharge life cycle", shows its calls and the rules it enforces: the output
path checked before anything is reserved, the whole loss reserved (run's cap, then the store, after the loss guards
of :mod:`urbandp._privacy.guards`) before the first sampler runs (drawing from :attr:`ReleaseCharge.noise` before
:meth:`ReleaseCharge.reserve` raises), never refunded once reserved (a refund would let fresh noise be averaged
away for free), nothing from :meth:`ReleaseCharge.say` printed unless committed, and a release with
``not_dp_reasons`` refused with ``--dataset``.

The release's loss is one object, :class:`~urbandp._privacy.loss.ReleaseLoss` (:attr:`ReleaseCharge.release_loss`),
made by the wing's code that calibrates the noise and passed to :meth:`ReleaseCharge.reserve` (``window=``; else
:meth:`ReleaseCharge.default_window`); the store and the wing's privacy.json state exactly its figures (a zCDP loss
is converted once per figure: rho 1.0 is epsilon 7.77 at delta 1e-6, not "epsilon 1").

If the store cannot confirm the charge once the outputs are in place (its disk is full), the run ends with one
line saying the release was published and where, and that its charge stays booked, unconfirmed: the reservation
already counts in every cap, and a release that may have been read is not taken back.
"""

from __future__ import annotations

import datetime as dt
import sys
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from types import TracebackType
from typing import Any, cast

import numpy as np

from urbandp._privacy import guards
from urbandp._privacy.loss import Loss, ReleaseLoss
from urbandp._privacy.noise import NoiseSource, OpenDPNoise
from urbandp.errors import BudgetExceededError, InputError

TOL = 1e-12


class NoiseBeforeReservation(RuntimeError):
    """A sampler was called before the session reserved its budget (a bug in the release, never the user's)."""


class ReleaseCharge:
    """A release's privacy budget: split, reserve before noise, measure, commit (see the module docstring).

    Named for what it is: the charge of ONE release against a dataset's budget. The public
    :class:`urbandp.Session` is the notebook's or job's budget (a store and a dataset) and opens one charge per
    release (:meth:`urbandp.Session.charge`); the ledger of a release's measurements is
    :class:`urbandp._privacy.ledger.PrivacyLedger`.

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
        self.operator = operator  # recorded with the release (None: $URBANDP_OPERATOR, else the OS user)
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
        self.release_loss: ReleaseLoss | None = None
        """The release's one loss (per day and over the window), set by :meth:`reserve`: what is booked and stated."""
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
            from urbandp._outputs import check_output_path

            check_output_path(out)  # before anything is reserved: the folder may be replaced

    # -- plan --------------------------------------------------------------------------------------------------
    def refuse_not_dp(self, reasons: Sequence[str]) -> None:
        """With ``--dataset``, refuse a release that is labelled NOT DP: it cannot be booked as DP spend.

        The reasons are remembered (:attr:`not_dp_reasons`): :meth:`reserve` checks them again, so a wing that
        labels its release NOT DP after this call is still refused before any noise. A noise source that does not
        declare itself private (:func:`urbandp._privacy.guards.noise_reasons`) adds its reason here, whatever the
        wing: every release drawn from it is labelled NOT DP and refused with a dataset.
        """
        found = [*guards.noise_reasons(self._source), *reasons]
        self.not_dp_reasons += [r for r in found if r not in self.not_dp_reasons]
        guards.refuse_not_dp(self.dataset, self.not_dp_reasons)

    def check_loss(self, loss_per_day: Loss) -> list[str]:
        """The loss guards (:mod:`urbandp._privacy.guards`) on a loss per unit (per day for per-day units): the
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
    def approx_per_day(self) -> tuple[float, float]:
        """The reserved per-day loss as (epsilon, delta), converted as the release states it."""
        assert self.release_loss is not None
        return self._stated(self.release_loss.per_day)

    def _stated(self, loss: Loss) -> tuple[float, float]:
        """``loss`` (the release's per-day or window loss) as (epsilon, delta), or a one-line refusal (an
        overflow: rho of a ten-year window), before any noise."""
        assert self.release_loss is not None
        eps, delta, why = self.release_loss.approx(loss)
        if eps is None or delta is None:
            if loss is self.release_loss.window and len(self.days) > 1:
                raise InputError(
                    f"the privacy loss over the {len(self.days)}-day window cannot be stated ({why}); shorten "
                    "the window"
                )
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
        window: Loss | None = None,
        gaussian: bool = False,
    ) -> None:
        """Reserve ``loss_per_day`` on each of ``days``: the run's cap, then the store, in one step, before noise.

        The loss is made into the release's one :class:`~urbandp._privacy.loss.ReleaseLoss` (:attr:`release_loss`),
        which the store books and caps and the wing's privacy.json states.
        ``window``: what a unit present on every one of ``days`` pays for this release, as the wing composes it
        (a release that pools the days states its group bound: D^2 rho for zCDP, Bun and Steinke 2016, Prop. 1.9);
        None: :meth:`default_window`. ``gaussian``: the rho part is Gaussian noise alone, so a loss that is rho
        alone is stated by the exact Gaussian curve (:func:`urbandp._privacy.loss.gaussian_epsilon`).
        ``cap_on``: ``window`` checks the run's cap against the window loss; ``day`` against one day's; a
        :class:`Loss` against that loss (a bound the release computed itself, e.g. a tight composition).
        """
        if self.reserved:
            raise RuntimeError("a session reserves its budget once")
        if not days:
            raise InputError("a release must charge at least one day")
        self.check_loss(loss_per_day)  # the guards, whatever the entry point: before the store and any noise
        self.loss_per_day = loss_per_day
        self.days = sorted(set(days))
        self.release_loss = ReleaseLoss(
            loss_per_day,
            self.default_window() if window is None else window,
            len(self.days),
            self.conversion_delta,
            gaussian,
        )
        eps_day, delta_day = self.approx_per_day()
        eps_window, delta_window = self._stated(self.release_loss.window)
        if delta_window < delta_day * (1 - 1e-9):
            raise ValueError(
                f"window delta {delta_window:g} is below one day's delta {delta_day:g}: a unit on every day pays "
                "at least that"
            )
        if self.cap is not None:
            self._check_cap(cap_on)
        if self.dataset is not None:
            self._book(mechanism, params, eps_day, delta_day, (eps_window, delta_window))
        self.reserved = True

    def _check_cap(self, cap_on: str | Loss) -> None:
        """The run's own cap (``--budget-epsilon``) against the window, one day, or a loss the wing gives."""
        assert self.cap is not None and self.release_loss is not None
        if isinstance(cap_on, Loss):
            asked = cap_on
        else:
            asked = self.release_loss.window if cap_on == "window" else self.release_loss.per_day
        a_eps, a_delta = self._stated(asked)
        if a_eps > self.cap.epsilon * (1 + TOL) or a_delta > self.cap.delta + TOL:
            raise BudgetExceededError(
                f"privacy budget exceeded: this release costs epsilon {a_eps:.6g}, delta {a_delta:.3g}; "
                f"the cap is epsilon {self.cap.epsilon:.6g}, delta {self.cap.delta:.3g}. Nothing was released."
            )

    def _book(
        self,
        mechanism: str,
        params: Mapping[str, Any] | None,
        eps_day: float,
        delta_day: float,
        window: tuple[float, float],
    ) -> None:
        """Reserve the release's loss in the store: per day its (epsilon, delta) and rho, over the window its
        (epsilon, delta) and its zCDP cost (:func:`zcdp_cost`), all read from :attr:`release_loss`."""
        from urbandp._privacy.budget_store import _command_line, checkpoint, open_store

        assert self.release_loss is not None
        loss_per_day = self.release_loss.per_day
        self._store = open_store(self.store_url, operator=self.operator)
        try:
            self.release_id = self._store.reserve(
                self.dataset,
                self.unit,
                dict.fromkeys(self.days, eps_day),
                mechanism,
                {
                    **(params or {}),
                    "loss_per_day": loss_per_day.to_json(self.conversion_delta),
                    "loss": self.release_loss.to_json(),
                },
                self.command_line if self.command_line is not None else _command_line(),
                rho_per_day=dict.fromkeys(self.days, loss_per_day.rho) if loss_per_day.rho > 0 else None,
                delta_per_day=dict.fromkeys(self.days, delta_day) if delta_day > 0 else None,
                window_delta=window[1],
                window_epsilon=window[0],
                window_rho=zcdp_cost(self.release_loss.window),
            )
        except BaseException:
            self._store.close()
            self._store = None
            raise
        self.status = "reserved"
        checkpoint("before-noise")

    def default_window(self) -> Loss:
        """The window loss of a release whose wing states none, from the reserved per-day loss.

        For a unit that spans days (a vehicle-day, a card-day) each day's output is taken to depend on that day's
        unit-day only, so a unit on all D days pays the D days' losses composed: epsilon and delta D times (basic
        composition, Dwork and Roth 2014, Thm 3.16), rho D times (Bun and Steinke 2016, Lemma 2.3), converted once.
        A release that pools the days must state its own bound (``reserve(..., window=...)``; the fleet: D^2 rho,
        their Prop. 1.9). A unit in one day or one survey wave (an event, a reading, a respondent) pays one day's.
        """
        from urbandp._privacy.budget_store import SPANNING_UNITS

        assert self.loss_per_day is not None
        return self.loss_per_day.times(len(self.days)) if self.unit in SPANNING_UNITS else self.loss_per_day

    # -- measure -----------------------------------------------------------------------------------------------
    @property
    def noise(self) -> NoiseSource:
        """The release's noise source; its first draw requires the reservation (and marks the noise as drawn)."""
        return cast(NoiseSource, _GatedNoise(self))

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

    def __enter__(self) -> ReleaseCharge:
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
        from urbandp._privacy.budget_store import checkpoint, content_hash

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
    """A :class:`NoiseSource` that asks its session before every draw: each sampler of the session's source
    (``laplace``, ``gaussian``, their discrete forms, ``laplace_on_lattice`` where the source has it) is called
    once the session allows a draw; a sampler the source lacks is missing here too."""

    def __init__(self, session: ReleaseCharge) -> None:
        self._session = session
        self.is_private = session._source.is_private

    def __getattr__(self, sampler: str) -> Callable[..., np.ndarray]:
        if sampler.startswith("_"):
            raise AttributeError(sampler)
        draw = getattr(self._session._source, sampler)

        def gated(*args: Any) -> np.ndarray:
            self._session._before_draw()
            return draw(*args)

        return gated


def zcdp_cost(loss: Loss) -> float:
    """A loss's zCDP cost for the store's ``rho_total``: its rho plus, for an epsilon part, epsilon^2 / 2 (an
    epsilon-DP release is epsilon^2/2-zCDP, Bun and Steinke 2016, Prop. 1.4; a delta part has no zCDP bound and is
    capped by ``delta_total``)."""
    return loss.rho + loss.epsilon**2 / 2.0


def days_between(first: dt.date | str, last: dt.date | str) -> list[dt.date]:
    """Every calendar day of ``first..last`` inclusive (ISO strings accepted)."""
    first, last = (dt.date.fromisoformat(str(d)[:10]) for d in (first, last))
    if last < first:
        raise InputError(f"window ends ({last}) before it starts ({first})")
    return [first + dt.timedelta(days=i) for i in range((last - first).days + 1)]

"""The public ``urbandp.Session``: a budget store and a dataset that every release of a notebook or a job charges.

::

    import urbandp as ud
    with ud.Session(store="budget.sqlite", dataset="austin") as s:
        rel = ud.fleet.release(df, start="2017-04-18", end="2017-04-18", epsilon_per_day=4, session=s)

Each release opens its own charge (:class:`urbandp._privacy.session.ReleaseCharge`: reserve before noise, commit after)
through :meth:`Session.charge`, so the guards and the budget of the command line apply unchanged: a release the
store cannot afford raises :class:`~urbandp.errors.BudgetExceededError` before any noise is drawn, a NOT DP release
is refused, and nothing is ever refunded. Without a session a release still passes the guards, but charges no
store (like the command line without ``--dataset``).
"""

from __future__ import annotations

from pathlib import Path
from types import TracebackType

from urbandp._arguments import check_keywords, check_name, check_path, check_switch
from urbandp._privacy.noise import NoiseSource
from urbandp._privacy.session import ReleaseCharge
from urbandp.errors import InvalidParameterError


class Session:
    """The budget that releases charge: ``store`` (a SQLite path or a ``postgresql://`` URL; default
    ``$URBANDP_BUDGET_STORE``, else ``./urbandp-budget.sqlite``) and ``dataset`` (declared in it with
    ``urbandp budget init``; None: no store is charged).

    ``allow_meaningless_epsilon``: run a release whose loss protects nobody, labelled NOT DP (refused with a
    dataset). ``noise``: the noise source, for tests only; releases use OpenDP's samplers. A source that does not
    declare ``is_private = True`` (:class:`~urbandp._privacy.noise.ExactNoiseForTesting`, a seeded simulation
    source) makes every release NOT DP: labelled so in its privacy.json (``not_dp_reasons``), and refused with a
    ``dataset`` (:func:`urbandp._privacy.guards.noise_reasons`). ``operator``: the name the store records with each release
    (default ``$URBANDP_OPERATOR``, else the OS user name).
    """

    @check_keywords
    def __init__(
        self,
        store: str | Path | None = None,
        dataset: str | None = None,
        *,
        allow_meaningless_epsilon: bool = False,
        noise: NoiseSource | None = None,
        operator: str | None = None,
    ) -> None:
        if noise is not None and not callable(getattr(noise, "laplace", None)):
            raise InvalidParameterError(
                f"noise must be a noise source (urbandp._privacy.noise.NoiseSource), got {noise!r}",
                parameters="noise",
            )
        self.store = check_path(store, "store", optional=True)
        self.dataset = check_name(dataset, "dataset", optional=True)
        self.allow_meaningless_epsilon = check_switch(allow_meaningless_epsilon, "allow_meaningless_epsilon")
        self.noise = noise
        self.operator = check_name(operator, "operator", optional=True)
        self.releases: list[str] = []
        """The budget store's ids of the releases this session committed, in order."""

    def charge(self, unit: str, *, out: Path | None = None, command_line: str | None = None) -> ReleaseCharge:
        """One release's charge, in the privacy ``unit`` of the wing (used as a context manager).

        A ``noise`` source that does not declare itself private is a NOT DP reason of the charge from the start
        (:meth:`ReleaseCharge.refuse_not_dp`): every wing labels the release NOT DP from the charge's reasons, and
        with a ``dataset`` the release is refused here, before any input is read.
        """
        charge = ReleaseCharge(
            self.dataset,
            self.store,
            unit=unit,
            out=out,
            noise=self.noise,
            command_line=command_line,
            allow_meaningless_epsilon=self.allow_meaningless_epsilon,
            operator=self.operator,
        )
        charge.refuse_not_dp([])
        return charge

    def committed(self, charge: ReleaseCharge) -> None:
        """Record a committed charge (called by the wings once their release returned)."""
        if charge.release_id is not None:
            self.releases.append(charge.release_id)

    def __enter__(self) -> Session:
        return self

    def __exit__(
        self, kind: type[BaseException] | None, err: BaseException | None, tb: TracebackType | None
    ) -> None:
        return None

    def __repr__(self) -> str:
        return f"Session(store={self.store!r}, dataset={self.dataset!r}, releases={len(self.releases)})"


def check_session(value: object) -> Session:
    """The ``session`` a release charges: a :class:`Session`, or None for one that charges no store."""
    if value is None:
        return Session()
    if isinstance(value, Session):
        return value
    raise InvalidParameterError(f"session must be a urbandp.Session, got {value!r}", parameters="session")

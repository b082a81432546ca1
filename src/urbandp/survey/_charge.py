"""One survey release's charge: the public :class:`urbandp.Session` charged in the unit the release declares.

Every survey release function (:mod:`urbandp.survey._api`) runs inside one :class:`SurveyCharge`: ``budget_epsilon``
is the run's cap and ``survey_date`` the day the store books (a survey has no per-day structure; the dataset's
``--epsilon-total`` composes its releases). The epsilon is reserved before any draw (docs/design.md privacy rule 5),
every draw of a DP path goes through the charge (:meth:`SurveyCharge.bits`), and a NOT DP path is refused with a
dataset (:meth:`SurveyCharge.refuse_not_dp`).
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Mapping
from pathlib import Path
from typing import TypeVar

import numpy as np

from urbandp._privacy.loss import Loss
from urbandp._privacy.report import PrivacyReport
from urbandp._privacy.session import ReleaseCharge
from urbandp._session import Session
from urbandp.errors import InvalidParameterError
from urbandp.survey._sampling import BitSource, bit_source

R = TypeVar("R", bound=PrivacyReport)
RESPONDENT = "respondent"
TRIP = "trip"
PERSON = "person"


class ExactBitsForTesting:
    """The survey's counterpart of :class:`urbandp._privacy.noise.ExactNoiseForTesting`: every Bernoulli draw keeps
    the truth and every uniform draw is 0. NOT private; chosen only when the session's noise source is not."""

    name = "exact-for-testing (NOT private)"

    def bernoulli(self, n: int, prob: float) -> np.ndarray:
        return np.ones(n, dtype=bool)

    def uniform_int(self, n: int, k: int) -> np.ndarray:
        return np.zeros(n, dtype=np.int64)


class _GatedBits:
    """A :class:`BitSource` that asks the charge before every draw (no draw before the reservation)."""

    def __init__(self, source: BitSource, charge: ReleaseCharge) -> None:
        self._source, self._charge, self.name = source, charge, source.name

    def bernoulli(self, n: int, prob: float) -> np.ndarray:
        self._charge.mark_drawn()
        return self._source.bernoulli(n, prob)

    def uniform_int(self, n: int, k: int) -> np.ndarray:
        self._charge.mark_drawn()
        return self._source.uniform_int(n, k)


class SurveyCharge:
    """The charge of one survey release in ``unit`` (see the module docstring): ``charge`` is the session's
    :class:`~urbandp._privacy.session.ReleaseCharge`, entered by the runner."""

    def __init__(
        self,
        session: Session | None,
        unit: str,
        *,
        out: Path | None,
        budget_epsilon: float | None,
        survey_date: dt.date | None,
    ) -> None:
        """``budget_epsilon`` (the run's cap) and ``survey_date`` as the release's spec and runner checked them."""
        self.session = session if session is not None else Session()
        if self.session.dataset is None:
            survey_date = dt.date.today()  # booked nowhere without a dataset
        elif survey_date is None:
            raise InvalidParameterError(
                "dataset needs survey_date YYYY-MM-DD (the day the answers were collected)",
                parameters=("dataset", "survey_date"),
            )
        self.day = survey_date
        self.charge = self.session.charge(unit, out=out)
        self.charge.cap = None if budget_epsilon is None else Loss.pure(budget_epsilon)

    def verdict(self, report: R) -> R:
        """``report`` with the charge's NOT DP reasons (a noise source that is not private, a meaningless loss
        allowed, those refused with a dataset) before its own: DP only if it says so and neither has a reason."""
        charged = self.charge.not_dp_reasons
        reasons = [*charged, *(r for r in report.not_dp_reasons if r not in charged)]
        dp = report.differentially_private and not reasons
        return report.model_copy(update={"not_dp_reasons": reasons, "differentially_private": dp})

    def refuse_not_dp(self, why: str) -> None:
        """Refuse a dataset for a release whose privacy loss is not bounded (not DP): a budget cannot hold it."""
        self.charge.refuse_not_dp([why])

    def reserve(self, epsilon: float, mechanism: str, params: Mapping[str, object]) -> None:
        """Reserve ``epsilon`` per unit on the survey day (the guards, the cap, the store), before any draw."""
        self.charge.reserve(Loss.pure(epsilon), [self.day], mechanism, params)

    def bits(self, sampler: str) -> BitSource:
        """The random source of a DP path: drawing before :meth:`reserve` raises."""
        if not self.charge.noise.is_private:
            return ExactBitsForTesting()
        return _GatedBits(bit_source(sampler), self.charge)

    def ungated_bits(self, sampler: str) -> BitSource:
        """The random source of a NOT DP path (nothing reserved: refused with a dataset beforehand)."""
        return ExactBitsForTesting() if not self.charge.noise.is_private else bit_source(sampler)

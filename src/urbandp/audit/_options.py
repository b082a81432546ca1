"""The options of `audit noise-scale`, `zero-skipping`, `differencing` and `pairs`, each a field made with
:func:`urbandp._release_options.option`: the commands' flags (:class:`urbandp._cli_spec.OptionsOf`) and the
signatures and checks of ``ud.audit.<attack>`` are built from them. The tables an attack reads, the release's
``privacy.json`` and where its report goes are the run's, not options.
"""

from __future__ import annotations

from typing import Any

from pydantic import field_validator

from urbandp._arguments import check_numbers, check_texts
from urbandp._release_options import ReleaseOptions, option
from urbandp.errors import InvalidParameterError

MODELS = ("continuous", "discrete")
METHODS = ("auto", "data61-2016", "urbandp", "unknown")

ALPHA_HELP = "1 - confidence level of the interval."


class NoiseScaleOptions(ReleaseOptions):
    """The options of `audit noise-scale` / :func:`urbandp.audit.noise_scale` (section 2, Appendix D)."""

    model: str = option(
        "continuous",
        help="continuous (Laplace, Opal) | discrete (discrete Laplace, urbandp).",
        choices=MODELS,
    )
    alpha: float = option(0.05, help=ALPHA_HELP, gt=0, lt=1)


class ZeroSkippingOptions(ReleaseOptions):
    """The options of `audit zero-skipping` / :func:`urbandp.audit.zero_skipping` (section 3, Theorem 1)."""

    threshold: float = option(18.0, help="Suppression threshold t of the release.", ge=0)
    method: str = option(
        "auto",
        help="auto (privacy.json next to the table) | data61-2016 | urbandp | unknown.",
        choices=METHODS,
    )
    scale: float | None = option(None, help="Noise scale p (default: privacy.json's noise_scale).", gt=0)
    group_sizes: tuple[int, ...] = option(
        (1, 5, 12), help="Comma-separated group sizes g.", cli_type=str, cli_default="1,5,12"
    )

    @field_validator("group_sizes", mode="before")
    @classmethod
    def _sizes_from_text(cls, value: object) -> object:
        """The flag's text ``1,5,12`` as the integers it lists; a sequence of integers as it is."""
        if not isinstance(value, str):
            return tuple(int(g) for g in check_numbers(value, "group_sizes", integer=True))
        try:
            return tuple(int(g) for g in value.split(",") if g.strip())
        except ValueError:
            raise InvalidParameterError(
                f"group_sizes must be integers like 1,5,12, got {value!r}", parameters="group_sizes"
            ) from None

    def model_post_init(self, context: Any, /) -> None:
        if not self.group_sizes or min(self.group_sizes) < 1:
            raise InvalidParameterError("group_sizes must be positive integers", parameters="group_sizes")


class DifferencingOptions(ReleaseOptions):
    """The options of `audit differencing` / :func:`urbandp.audit.differencing` (section 4, Appendix E)."""

    scale: float | None = option(None, help="Noise scale of the joint cells (default: privacy.json).", gt=0)
    marginal_scale: float | None = option(None, help="Noise scale of the marginal (default: --scale).", gt=0)
    alpha: float = option(0.05, help=ALPHA_HELP, gt=0, lt=1)
    max_cells: int = option(1000, help="List at most this many cells in the JSON.", ge=0)


class PairsOptions(ReleaseOptions):
    """The options of `audit pairs` / :func:`urbandp.audit.pairs`."""

    route: tuple[str, ...] = option(help="mode:FROM>TO (repeatable).", cli_type=list[str])
    lag_minutes: int = option(
        30, help="Travel time FROM -> TO (ignored for daily tables).", ge=0, le=24 * 60 - 1
    )

    @field_validator("route", mode="before")
    @classmethod
    def _one_route(cls, value: object) -> object:
        """One route given as its text is a list of one."""
        return check_texts(value, "route")

"""The typed privacy reports of the sensing releases: privacy.json of `dp-map` and `pm-map`, the privacy figures
of a `query` answer. Each is a :class:`~urbandp._privacy.report.PrivacyReport` (one serializer, the checked
header first) with the wing's main figures as typed fields; every other key of the document is kept as it is.
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field

from urbandp._privacy.report import PrivacyReport

SPEC_HASH_LEAVES_OUT = ("dataset",)
"""Fields that cannot change a sensing release: the session's dataset (dp-map's; not an option of the Python
release). Where the readings are read and the folder written are no fields of the options."""

SPEC_SHA256_DOC = (
    "sha256 of the release spec: every option, a file option (cells) by its content; not the input and output "
    "paths or the budget store (same hash: same parameters)"
)


def spec_sha256(release: str, options: object) -> str:
    """privacy.json's ``spec_sha256`` of the sensing release ``release`` (``"dp-map"``, ``"pm-map"``,
    ``"query"``) made with ``options`` (:mod:`urbandp.sensing._options`), less :data:`SPEC_HASH_LEAVES_OUT`."""
    from urbandp._provenance import spec_fields
    from urbandp._provenance import spec_sha256 as hashed

    return hashed(f"sensing {release}", spec_fields(options, leave_out=SPEC_HASH_LEAVES_OUT))


class DpMapPrivacyReport(PrivacyReport):
    """privacy.json of `sensing dp-map`: bounded Laplace on every cell of the posterior-variance maps (Holohan et
    al. 2018; the map's accounting in :mod:`urbandp.sensing._dp_map_mechanism`)."""

    calibration: str = Field(description="holohan (DP) or paper (NOT DP, for comparison)")
    epsilon_cell_requested: float = Field(description="the epsilon per cell asked for (the paper's epsilon)")
    cells_per_window: int = Field(description="cells G of the public grid")
    windows_released: int = Field(description="windows W released")
    epsilon_per_window_map: float | None = Field(
        None, description="a window's map of G cells, optimal composition (per reading)"
    )
    delta_per_reading: float | None = Field(None, description="the delta of that composition")
    epsilon_per_vehicle_day: float | None = Field(
        None, description="what a vehicle pays in a day: the k windows of a day (the loss booked and guarded)"
    )
    delta_per_vehicle_day: float | None = Field(None, description="its delta")
    epsilon_vehicle_upper_bound: float | None = Field(None, description="a vehicle in all W windows")
    epsilon_budget: float | None = Field(None, description="the run's own cap (budget), if any")
    bbox: list[float] = Field(description="the grid's box lat_min, lon_min, lat_max, lon_max")
    not_dp_outputs: dict[str, str] = Field(
        default_factory=dict, description="the owner-only files beside the release, NOT DP"
    )
    spec_sha256: str | None = Field(None, description=SPEC_SHA256_DOC)


class PerVehicleLoss(BaseModel):
    """pm-map's per-vehicle figures (public: the plan and the public windows only)."""

    model_config = ConfigDict(extra="allow", frozen=True)

    bounded: bool = Field(description="false under the reading unit: nothing public bounds a vehicle's loss")
    epsilon_per_vehicle_window: float | None = Field(None, description="a vehicle's loss in one window")
    epsilon_per_vehicle_day: float | None = Field(None, description="its k windows of a day")
    epsilon_per_vehicle_release: float | None = Field(None, description="all W windows of the release")


class BudgetBooked(BaseModel):
    """What the budget store is charged per day, in which unit."""

    model_config = ConfigDict(extra="allow", frozen=True)

    unit: str
    epsilon_per_day: float


class PmMapPrivacyReport(PrivacyReport):
    """privacy.json of `sensing pm-map`: Laplace on clipped counts and centred sums per cell and window
    (:mod:`urbandp.sensing._pm_map_mechanism`)."""

    epsilon_per_unit: float = Field(description="epsilon per privacy unit (vehicle-window or reading)")
    epsilon_per_reading: float = Field(
        description="a reading's loss: the unit's, or 2 epsilon / M under the vehicle-window unit"
    )
    per_vehicle: PerVehicleLoss = Field(description="what a vehicle pays per window, day and release")
    budget_booked: BudgetBooked = Field(description="the loss booked in the budget store per day")
    delta: float = Field(0.0, description="pure epsilon-DP: 0")
    not_dp_outputs: dict[str, str] = Field(
        default_factory=dict, description="the owner-only files beside the release, NOT DP"
    )
    spec_sha256: str | None = Field(None, description=SPEC_SHA256_DOC)

    @property
    def epsilon_per_vehicle_day(self) -> float | None:
        """A vehicle's loss in one day (None under the reading unit: unbounded)."""
        return self.per_vehicle.epsilon_per_vehicle_day


class QueryPrivacyReport(PrivacyReport):
    """The privacy figures of a `sensing query` answer: the squared error is DP (section VII-D), the value is not
    (the paper perturbs only the error), so the answer is labelled NOT DP."""

    query: str = Field(description="the query type")
    epsilon: float | None = Field(
        None, description="epsilon of the noisy squared error (None: refused, no noise)"
    )
    spec_sha256: str | None = Field(None, description=SPEC_SHA256_DOC)

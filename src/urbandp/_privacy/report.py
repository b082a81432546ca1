"""The one serializer of ``privacy.json``, for every wing.

Every release folder states what is DP in the same header, checked here before a byte is written:

* ``differentially_private`` (bool) and ``not_dp_reasons`` (list of strings) agree: a release with a reason is
  never labelled DP, and one labelled NOT DP says why (a wing that omits the flag gets it from its reasons);
* the privacy unit is named (``privacy_unit``, or ``unit`` in the wings that call it so);
* the header comes first, in a fixed order, so a reader finds the verdict at the top of every file;
* ``software`` records the urbandp, OpenDP and Python versions that made the release;
* the text is strict JSON (RFC 8259): non-finite numbers become ``null``
  (:func:`urbandp._outputs.dumps_strict`).

A document that breaks these rules is a bug in urbandp, not the user's input: :class:`PrivacyDocumentError`
(exit 70) is raised and nothing is written.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Self

from pydantic import BaseModel, ConfigDict, Field

from urbandp._outputs import dumps_strict, write_json
from urbandp._provenance import software_versions

FILE_NAME = "privacy.json"
HEADER = ("differentially_private", "dp_label", "not_dp_reasons", "privacy_unit", "unit", "neighbouring")
"""Keys written first, in this order, when present."""


class PrivacyDocumentError(RuntimeError):
    """A privacy.json that would misstate what is DP (an internal error: exit 70)."""


def privacy_document(privacy: Mapping[str, object]) -> dict[str, object]:
    """The checked document: the header first, ``differentially_private`` consistent with ``not_dp_reasons``."""
    reasons = privacy.get("not_dp_reasons")
    if not isinstance(reasons, list) or not all(isinstance(r, str) and r for r in reasons):
        raise PrivacyDocumentError("privacy.json needs not_dp_reasons: a list of non-empty strings")
    flag = privacy.get("differentially_private", not reasons)
    if not isinstance(flag, bool):
        raise PrivacyDocumentError("privacy.json differentially_private must be true or false")
    if flag and reasons:
        raise PrivacyDocumentError(
            "privacy.json labels a release DP that has NOT DP reasons: " + "; ".join(reasons)
        )
    if not flag and not reasons:
        raise PrivacyDocumentError("privacy.json labels a release NOT DP without saying why (not_dp_reasons)")
    if "privacy_unit" not in privacy and "unit" not in privacy:
        raise PrivacyDocumentError("privacy.json must name its privacy unit (privacy_unit or unit)")
    body = {**privacy, "differentially_private": flag, "software": software_versions()}
    head = {k: body[k] for k in HEADER if k in body}
    return {**head, **{k: v for k, v in body.items() if k not in head}}


def write_privacy_json(directory: Path, privacy: Mapping[str, object]) -> Path:
    """Check ``privacy`` (:func:`privacy_document`) and write it as ``directory/privacy.json``."""
    path = Path(directory) / FILE_NAME
    write_json(path, privacy_document(privacy))
    return path


class PrivacyReport(BaseModel):
    """The typed privacy report of a release: the header every wing states, typed; the wing's own figures as
    typed fields of its subclass (e.g. :class:`urbandp.fleet._report.FleetPrivacyReport`), anything else kept as
    extra fields. ``to_json()`` is privacy.json, checked by :func:`privacy_document`.

    A JSON Schema of each report class (:meth:`json_schema`) is published in docs/privacy-json.md so that
    consumers can validate privacy.json.
    """

    model_config = ConfigDict(extra="allow", frozen=True)

    differentially_private: bool = Field(description="true when every output of the release is DP")
    dp_label: str | None = Field(None, description="the verdict in words, with the neighbouring relation")
    not_dp_reasons: list[str] = Field(
        description="why the release is NOT differentially private (empty if DP)"
    )
    privacy_unit: str | None = Field(
        None, description="the unit whose privacy is protected (e.g. vehicle-day)"
    )
    unit: str | None = Field(None, description="the privacy unit, in the wings that call it so")
    neighbouring: object = Field(None, description="the neighbouring relation (add/remove or replace-one)")
    warnings: list[str] = Field(
        default_factory=list, description="warnings that hold only public or DP figures"
    )
    software: dict[str, str | None] | None = Field(None, description="urbandp, OpenDP and Python versions")

    @classmethod
    def from_document(cls, privacy: Mapping[str, object]) -> Self:
        """The typed report of a privacy document (checked first: a document that misstates DP is refused)."""
        return cls.model_validate(privacy_document(privacy))

    def to_dict(self) -> dict[str, object]:
        """The checked document, as privacy.json holds it (fields never set are left out)."""
        return privacy_document(self.model_dump(exclude_unset=True))

    def to_json(self) -> str:
        """privacy.json's text: strict JSON (no NaN or Infinity), the header first."""
        return dumps_strict(self.to_dict(), indent=2) + "\n"

    @classmethod
    def json_schema(cls) -> dict[str, object]:
        """The JSON Schema of this report class (extra fields allowed)."""
        return cls.model_json_schema(mode="serialization")

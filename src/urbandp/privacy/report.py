"""The one serializer of ``privacy.json``, for every wing (issue 20: "privacy.json has one serializer").

Every release folder states what is DP in the same header, checked here before a byte is written:

* ``differentially_private`` (bool) and ``not_dp_reasons`` (list of strings) agree: a release with a reason is
  never labelled DP, and one labelled NOT DP says why (a wing that omits the flag gets it from its reasons);
* the privacy unit is named (``privacy_unit``, or ``unit`` in the wings that call it so);
* the header comes first, in a fixed order, so a reader finds the verdict at the top of every file;
* ``software`` records the urbandp, OpenDP and Python versions that made the release (issue 32);
* the text is strict JSON (RFC 8259): non-finite numbers become ``null``
  (:func:`urbandp.reports.outputs.dumps_strict`).

A document that breaks these rules is a bug in urbandp, not the user's input: :class:`PrivacyDocumentError`
(exit 70) is raised and nothing is written.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

from urbandp.provenance import software_versions
from urbandp.reports.outputs import write_json

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

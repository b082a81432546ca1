"""What made a release: the urbandp, OpenDP and Python versions, and a hash of the release's parameters.

privacy.json records them under ``software`` (issue 32: "nothing records which version made a release"), so
that a published table can be traced to the code and the noise library that drew it, and two releases can be
checked for the same parameters without comparing the documents by hand.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import platform
from functools import cache
from importlib import metadata

from urbandp._version import __version__


def _installed(name: str) -> str | None:
    try:
        return metadata.version(name)
    except metadata.PackageNotFoundError:
        return None


@cache
def software_versions() -> dict[str, str | None]:
    """The versions that made a release: urbandp's own ``__version__``, OpenDP's and Python's."""
    return {
        "urbandp": __version__,
        "opendp": _installed("opendp"),
        "python": platform.python_version(),
    }


def version_line() -> str:
    """``urbandp X (OpenDP Y, Python Z)``: what ``urbandp --version`` prints."""
    v = software_versions()
    return f"urbandp {v['urbandp']} (OpenDP {v['opendp'] or 'not installed'}, Python {v['python']})"


def _plain(value: object) -> object:
    """A value JSON lacks, as JSON: a dataclass as its fields, anything else (a date, a path) as text."""
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return dataclasses.asdict(value)
    return str(value)


def parameters_hash(parameters: object) -> str:
    """sha256 of the parameters as canonical JSON (sorted keys, no spaces; dataclasses as their fields, values
    that JSON lacks as text): privacy.json's ``spec_sha256``."""
    text = json.dumps(parameters, sort_keys=True, separators=(",", ":"), default=_plain)
    return "sha256:" + hashlib.sha256(text.encode()).hexdigest()

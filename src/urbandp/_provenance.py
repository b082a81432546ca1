"""What made a release: the urbandp, OpenDP and Python versions, and a hash of the release's parameters.

privacy.json records them under ``software``, so
that a published table can be traced to the code and the noise library that drew it, and two releases can be
checked for the same parameters without comparing the documents by hand.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import platform
from collections.abc import Collection, Mapping
from functools import cache
from importlib import metadata
from pathlib import Path

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


def canonical(value: object) -> object:
    """``value`` as it enters a spec hash: a path as its file's hash, a dataclass as its fields, a tuple as a list,
    a whole float as an int (``epsilon=1`` from Python and ``--epsilon 1`` parsed as 1.0 hash alike)."""
    if isinstance(value, bool) or value is None or isinstance(value, (str, int)):
        return value
    if isinstance(value, float):
        return int(value) if value.is_integer() else value
    if isinstance(value, Path):  # a public file (a domain, a category list) hashes alike anywhere
        return "sha256:" + hashlib.sha256(value.read_bytes()).hexdigest()
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return canonical(dataclasses.asdict(value))
    if isinstance(value, Mapping):
        return {str(k): canonical(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [canonical(v) for v in value]
    return str(value)


def spec_fields(spec: object, *, leave_out: Collection[str] = ()) -> dict[str, object]:
    """The fields of ``spec`` (a release's options model) by name, less ``leave_out``."""
    from pydantic import BaseModel

    assert isinstance(spec, BaseModel)
    return {name: getattr(spec, name) for name in type(spec).model_fields if name not in leave_out}


def spec_sha256(release: str, fields: Mapping[str, object]) -> str:
    """privacy.json's ``spec_sha256`` of a release ``release`` (e.g. ``"counts release"``) made with the options
    ``fields`` (:func:`spec_fields` of its spec), through :func:`canonical`, hashed by :func:`parameters_hash`.

    A wing leaves out what cannot change what is released: where the data comes from and where the folder goes
    (input and output paths, the command line that names them), where the loss is booked (the budget store, the
    dataset, the survey date) and which engine computes the same release. Two runs with the same hash released
    with the same parameters, whatever folder their input lay in.
    """
    return parameters_hash({"release": release, "spec": canonical(dict(fields))})

"""Import every module of the installed urbandp package (run in a venv that has no extras): a module that needs
an optional extra must import it lazily, so that this walk passes with the runtime dependencies alone."""

from __future__ import annotations

import importlib
import pkgutil
import sys

import urbandp

failed = []
names = [m.name for m in pkgutil.walk_packages(urbandp.__path__, "urbandp.")]
for name in names:
    if name == "urbandp.__main__":
        continue  # runs the CLI
    try:
        importlib.import_module(name)
    except Exception as err:  # report every failure, not only the first
        failed.append(f"{name}: {type(err).__name__}: {err}")
if failed:
    print("import walk: these modules do not import without extras:\n  " + "\n  ".join(failed), file=sys.stderr)
    sys.exit(1)
print(f"import walk: {len(names) - 1} modules import with the runtime dependencies alone")

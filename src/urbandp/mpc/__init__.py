"""Secure two-party aggregate queries over sensor maps (Prac2PC, paper section VII) on SecretFlow SPU.

The server holds ``mu`` and ``sigma^2`` per cell (the ``sensing interpolate`` grid); the client holds the 0/1
selection ``v`` over the cells of its obfuscation rectangle. Both run the same SPU program under the CHEETAH
protocol (two parties, no dealer, semi-honest); only the client learns the output. The parties are run by the
``urbandp mpc`` commands; see docs/mpc.md.

Optional extra ``urbandp[mpc]`` (``spu``); everything that does not need SPU (wire format, parameters,
sensitivities) imports without it. :func:`spu_missing_reason` says whether SPU is usable here:

```pycon
>>> import urbandp.mpc
>>> reason = urbandp.mpc.spu_missing_reason(in_process=False)
>>> reason is None or reason.startswith("SecretFlow SPU is not usable here")
True

```
"""

from __future__ import annotations

import functools

__all__ = ["spu_missing_reason"]


@functools.lru_cache(maxsize=1)
def _child_import_error() -> str | None:
    import subprocess
    import sys

    res = subprocess.run(
        [sys.executable, "-c", "import spu.libspu"], capture_output=True, text=True, timeout=120, check=False
    )
    return None if res.returncode == 0 else (res.stderr.strip().splitlines() or ["import failed"])[-1]


def spu_missing_reason(in_process: bool = True) -> str | None:
    """``None`` when SPU imports, else one line saying why (used by the CLI and by skipped tests).

    ``in_process=False`` checks in a child process: importing SPU starts JAX's threads, and a test process that
    later forks (multiprocessing) could deadlock.
    """
    hint = (
        "install the extra: pip install --no-deps 'spu==0.9.5' && pip install 'jax[cpu]==0.4.34' cachetools "
        "multiprocess cloudpickle termcolor (see docs/mpc.md)"
    )
    if not in_process:
        last = _child_import_error()
        return None if last is None else f"SecretFlow SPU is not usable here ({last}); {hint}"
    try:
        import spu
        import spu.libspu  # noqa: F401
    except Exception as err:  # ImportError, or a broken wheel (missing CPU features, numpy ABI)
        return f"SecretFlow SPU is not usable here ({type(err).__name__}: {err}); {hint}"
    return None

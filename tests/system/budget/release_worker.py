"""A minimal release run as its own process (used by the concurrency and kill -9 tests).

usage: python release_worker.py STORE EPSILON OUT_DIR ; exit 0 released, 3 refused (budget), 2 other refusal.
"""

from __future__ import annotations

import datetime as dt
import sys
from pathlib import Path

from urbandp._outputs import atomic_output_dir
from urbandp._privacy.budget_store import checkpoint
from urbandp._privacy.loss import Loss
from urbandp._privacy.session import ReleaseCharge
from urbandp.errors import BudgetExceededError, InputError


def main() -> int:
    store, eps, out = sys.argv[1], float(sys.argv[2]), Path(sys.argv[3])
    days = [dt.date(2024, 3, 4) + dt.timedelta(days=i) for i in range(3)]
    try:
        with ReleaseCharge("bus", store, unit="vehicle-day", command_line="worker") as r:
            r.reserve(Loss.pure(eps), days, "laplace", {"eps": eps})
            checkpoint("after-noise")
            with atomic_output_dir(out) as d:
                (d.release / "part1.csv").write_text("cell,count\na,1\n")
                checkpoint("during-writing")
                (d.release / "part2.csv").write_text("cell,count\nb,2\n")
            r.set_output(out)
    except BudgetExceededError:
        return 3
    except InputError:
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())

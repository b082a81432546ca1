"""Run the sensing tests with one BLAS thread.

On this shared 2-core machine OpenBLAS's spinning worker threads made the GP tests ~10x slower under load
(measured: system tests 104 s with default threads, 10 s with one); results do not depend on the thread count.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from threadpoolctl import threadpool_limits


@pytest.fixture(autouse=True, scope="module")
def _one_blas_thread() -> Iterator[None]:
    with threadpool_limits(limits=1, user_api="blas"):
        yield

"""Single-threaded BLAS for the suite: the matrices here are small, and on a shared 2-core machine
multi-threaded BLAS spends more time contending than computing (measured 3-6x slower)."""

import pytest
from threadpoolctl import threadpool_limits


@pytest.fixture(autouse=True, scope="session")
def _single_thread_blas():
    with threadpool_limits(limits=1, user_api="blas"):
        yield

"""The repository's test configuration: one BLAS/OpenMP/torch thread per test process.

Tiny matrices and models on a shared 2-core machine lose more to thread contention than they gain, and
two test processes run at once in the gate. ``ICML25_TEST_THREADS`` sets another count (``0`` leaves the
runtimes untouched). Thread-count variables already set in the environment are kept for runtimes loaded
later; runtimes already loaded are limited through threadpoolctl when it is installed, and torch is pinned
once a test module imported it (it is never imported here).
"""

from __future__ import annotations

import os
import sys

import pytest

_ENV = ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS", "VECLIB_MAXIMUM_THREADS", "NUMEXPR_NUM_THREADS")
_limits = None


def _threads() -> int:
    value = os.environ.get("ICML25_TEST_THREADS", "1").strip()
    if not value.isdigit():
        raise pytest.UsageError(f"ICML25_TEST_THREADS must be a non-negative int, got {value!r}")
    return int(value)


def _pin_torch(n: int) -> None:
    torch = sys.modules.get("torch")
    if torch is not None and torch.get_num_threads() != n:
        torch.set_num_threads(n)


@pytest.hookimpl(tryfirst=True)
def pytest_configure(config: pytest.Config) -> None:
    global _limits
    n = _threads()
    if n == 0:
        return
    for name in _ENV:  # read by BLAS and OpenMP runtimes loaded after this point
        os.environ.setdefault(name, str(n))
    try:
        from threadpoolctl import threadpool_limits
    except ImportError:
        pass
    else:  # runtimes already loaded
        _limits = threadpool_limits(limits=n)
    _pin_torch(n)


def pytest_collection_finish(session: pytest.Session) -> None:
    n = _threads()
    if n:
        _pin_torch(n)


def pytest_unconfigure(config: pytest.Config) -> None:
    global _limits
    if _limits is not None:
        _limits.restore_original_limits()
        _limits = None

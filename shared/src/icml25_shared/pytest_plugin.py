"""pytest plugin: one BLAS/OpenMP/torch thread per test process when the suite asks for it.

The monorepo's root configuration sets ``icml25_threads = 1``; the plugin does nothing where that
option is unset, so installing icml25-shared never changes another project's tests. Tiny matrices and
models on a shared 2-core machine lose more to thread contention than they gain.
"""

from __future__ import annotations

import os
import sys

import pytest

_ENV = ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS", "VECLIB_MAXIMUM_THREADS", "NUMEXPR_NUM_THREADS")
_limits = None


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addini("icml25_threads", "threads for BLAS, OpenMP and torch in this test process (unset: untouched)",
                  default="")


def _threads(config: pytest.Config) -> int | None:
    value = os.environ.get("ICML25_TEST_THREADS") or config.getini("icml25_threads")
    return int(value) if str(value).strip() else None


def _pin_torch(n: int) -> None:
    torch = sys.modules.get("torch")  # never imported here: only pinned once a test module imported it
    if torch is not None and torch.get_num_threads() != n:
        torch.set_num_threads(n)


@pytest.hookimpl(tryfirst=True)
def pytest_configure(config: pytest.Config) -> None:
    global _limits
    n = _threads(config)
    if n is None:
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
    n = _threads(session.config)
    if n is not None:
        _pin_torch(n)


def pytest_unconfigure(config: pytest.Config) -> None:
    global _limits
    if _limits is not None:
        _limits.restore_original_limits()
        _limits = None

"""pytest plugin: one BLAS/OpenMP/torch thread per test process when the suite asks for it.

The monorepo's root configuration sets ``icml25_threads = 1``; the plugin does nothing where that
option is unset, so installing icml25-shared never changes another project's tests. Tiny matrices and
models on a shared 2-core machine lose more to thread contention than they gain.

The environment variable ``ICML25_TEST_THREADS`` overrides the ini value. Thread-count variables already
set in the environment (``OMP_NUM_THREADS`` and the like) are kept for runtimes loaded later; runtimes
already loaded are limited through threadpoolctl when it is installed, and torch is pinned once imported.
"""

from __future__ import annotations

import os
import sys

import pytest

_ENV = ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS", "VECLIB_MAXIMUM_THREADS", "NUMEXPR_NUM_THREADS")
_limits = None


def pytest_addoption(parser: pytest.Parser) -> None:
    """Register the ``icml25_threads`` ini option.

    Parameters
    ----------
    parser : pytest.Parser
        pytest's option parser.
    """
    parser.addini("icml25_threads", "threads for BLAS, OpenMP and torch in this test process (unset: untouched)",
                  default="")


def _threads(config: pytest.Config) -> int | None:
    value = str(os.environ.get("ICML25_TEST_THREADS") or config.getini("icml25_threads")).strip()
    if not value:
        return None
    try:
        n = int(value)
    except ValueError:
        n = 0
    if n < 1:
        raise pytest.UsageError(f"icml25_threads / ICML25_TEST_THREADS must be a positive int, got {value!r}")
    return n


def _pin_torch(n: int) -> None:
    torch = sys.modules.get("torch")  # never imported here: only pinned once a test module imported it
    if torch is not None and torch.get_num_threads() != n:
        torch.set_num_threads(n)


@pytest.hookimpl(tryfirst=True)
def pytest_configure(config: pytest.Config) -> None:
    """Set the thread-count variables and limit the runtimes already loaded.

    Parameters
    ----------
    config : pytest.Config
        The session's configuration.
    """
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
    """Pin torch's threads once the test modules (which may import torch) are collected.

    Parameters
    ----------
    session : pytest.Session
        The test session.
    """
    n = _threads(session.config)
    if n is not None:
        _pin_torch(n)


def pytest_unconfigure(config: pytest.Config) -> None:
    """Restore the thread limits threadpoolctl changed.

    Parameters
    ----------
    config : pytest.Config
        The session's configuration.
    """
    global _limits
    if _limits is not None:
        _limits.restore_original_limits()
        _limits = None

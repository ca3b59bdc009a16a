"""Shared layer of the icml25 monorepo.

Submodules (imported on demand so that the base install needs numpy only):

- :mod:`icml25_shared.data`: scikit-learn's bundled datasets as a typed :class:`~icml25_shared.data.Dataset`.
- :mod:`icml25_shared.bench`: time a method against its peer in one process and report ratios.
- :mod:`icml25_shared.cli`: the ``python -m <pkg> demo|reproduce`` frame, seeding, progress, figures.
- :mod:`icml25_shared.random`: ``check_random_state``, independent streams (``spawn``, ``child_seeds``).
- :mod:`icml25_shared.stats`: means, t and Wilson intervals, paired differences (numpy only).
- :mod:`icml25_shared.tables`: one markdown table writer.
- :mod:`icml25_shared.testing`: run a package's commands in tests and check what they wrote; ``assert_rejects``.
- :mod:`icml25_shared.validation`: the one declarative parameter check (TypeError / ValueError).
"""

from importlib.metadata import PackageNotFoundError, version

try:
    __version__ = version("icml25-shared")
except PackageNotFoundError:  # running from a source tree without install
    __version__ = "0.0.0"

__all__ = ["__version__"]

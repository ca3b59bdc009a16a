"""Resolve a ``random_state`` argument whose default is 0 and whose deprecated old name is ``seed``."""

from __future__ import annotations

from typing import Any

from icml25_shared.random import UNSET, renamed_seed


def resolve_random_state(random_state: Any, seed: Any = UNSET, *, owner: str, default: Any = 0) -> Any:
    """``seed`` (with a DeprecationWarning) when only the old name was given, else ``random_state``.

    ``renamed_seed`` refuses both names at once; a ``random_state`` left at its default does not count.
    """
    if seed is not UNSET and type(random_state) is type(default) and random_state == default:
        random_state = None
    return renamed_seed(random_state, seed, owner=owner)

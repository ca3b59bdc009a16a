"""Random state handling shared by every package.

``check_random_state`` follows scikit-learn's semantics (None -> fresh entropy, an int -> a seeded
generator, a generator -> itself) but returns a :class:`numpy.random.Generator`. ``spawn`` gives
independent streams from one seed through :class:`numpy.random.SeedSequence`, so that seed ``s``'s
streams never coincide with seed ``s + 1``'s (as seeding each run with ``s`` plus an offset would).

Examples
--------
>>> from icml25_shared.random import check_random_state, spawn
>>> rng = check_random_state(0)
>>> check_random_state(rng) is rng
True
>>> split, noise = spawn(0, 2)
>>> bool(split.random() != noise.random())
True
"""

from __future__ import annotations

import numbers

import numpy as np

__all__ = ["RandomStateLike", "check_random_state", "child_seeds", "int_seed", "spawn"]

RandomStateLike = int | np.integer | np.random.SeedSequence | np.random.Generator | np.random.RandomState | None



def check_random_state(random_state: RandomStateLike) -> np.random.Generator:
    """Turn ``random_state`` into a :class:`numpy.random.Generator`.

    Parameters
    ----------
    random_state : None, int, SeedSequence, Generator or RandomState
        None draws fresh OS entropy; a non-negative int or a SeedSequence seeds a new generator; a
        Generator is returned as is; a legacy RandomState is wrapped so that both share one state.

    Returns
    -------
    numpy.random.Generator
        The generator to draw from.

    Raises
    ------
    TypeError
        For any other type (a float, a bool, a string).
    ValueError
        For a negative int.
    """
    if isinstance(random_state, np.random.Generator):
        return random_state
    if isinstance(random_state, np.random.RandomState):
        return np.random.Generator(random_state._bit_generator)  # shares the legacy object's state
    if random_state is None or isinstance(random_state, np.random.SeedSequence):
        return np.random.default_rng(random_state)
    if isinstance(random_state, numbers.Integral) and not isinstance(random_state, bool):
        if random_state < 0:
            raise ValueError(f"random_state must be a non-negative int, got {random_state}")
        return np.random.default_rng(int(random_state))
    raise TypeError(f"random_state must be None, a non-negative int, a SeedSequence or a numpy Generator, "
                    f"got {type(random_state).__name__} {random_state!r}")


def _seed_sequence(seed: RandomStateLike) -> np.random.SeedSequence:
    if isinstance(seed, np.random.SeedSequence):
        return seed
    if isinstance(seed, (np.random.Generator, np.random.RandomState)):
        # Draw the entropy from the generator, so the children follow (and advance) its state.
        return np.random.SeedSequence(check_random_state(seed).integers(0, 2**63, size=4).tolist())
    if seed is None:
        return np.random.SeedSequence()
    check_random_state(seed)  # validates the type and sign
    return np.random.SeedSequence(int(seed))


def spawn(seed: RandomStateLike, n: int) -> list[np.random.Generator]:
    """``n`` independent generators derived from ``seed``.

    Parameters
    ----------
    seed : None, int, SeedSequence, Generator or RandomState
        The root. An int gives the same streams on every call; a Generator gives streams drawn from
        (and advancing) its state.
    n : int
        How many streams.

    Returns
    -------
    list of numpy.random.Generator
        Streams that share no state with each other or with the streams of another int seed.
    """
    if isinstance(n, bool) or not isinstance(n, numbers.Integral) or n < 0:
        raise ValueError(f"n must be a non-negative int, got {n!r}")
    return [np.random.default_rng(child) for child in _seed_sequence(seed).spawn(int(n))]


def child_seeds(seed: RandomStateLike, n: int) -> list[int]:
    """``n`` independent 63-bit integer seeds derived from ``seed`` (for APIs that take an int, e.g. torch).

    Parameters
    ----------
    seed : None, int, SeedSequence, Generator or RandomState
        The root, as for :func:`spawn`.
    n : int
        How many seeds.

    Returns
    -------
    list of int
        Seeds in ``[0, 2**63)``.
    """
    if isinstance(n, bool) or not isinstance(n, numbers.Integral) or n < 0:
        raise ValueError(f"n must be a non-negative int, got {n!r}")
    children = _seed_sequence(seed).spawn(int(n))
    return [int(child.generate_state(2, np.uint32).astype(np.uint64) @ np.array([1 << 32, 1], np.uint64)) >> 1
            for child in children]


def int_seed(random_state: RandomStateLike) -> int:
    """An int seed (for ``torch.Generator().manual_seed``) from a scikit-learn style ``random_state``.

    Parameters
    ----------
    random_state : None, int, SeedSequence, Generator or RandomState
        A non-negative int is used as is; anything else yields a seed derived through
        :func:`child_seeds` (None: fresh entropy; a Generator: advanced by one draw).

    Returns
    -------
    int
        A non-negative int below 2**63.

    Raises
    ------
    TypeError, ValueError
        As :func:`check_random_state`.

    Examples
    --------
    >>> int_seed(7)
    7
    >>> int_seed(np.random.default_rng(0)) == int_seed(np.random.default_rng(0))
    True
    """
    if isinstance(random_state, numbers.Integral) and not isinstance(random_state, bool):
        check_random_state(random_state)  # rejects a negative int
        return int(random_state)
    if isinstance(random_state, (np.random.Generator, np.random.RandomState)):
        return int(check_random_state(random_state).integers(0, 2**63))
    check_random_state(random_state)  # the type check
    return child_seeds(random_state, 1)[0]

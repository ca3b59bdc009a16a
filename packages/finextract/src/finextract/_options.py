"""Command-line options of ``reproduce`` that the parser needs without loading torch."""

from __future__ import annotations

__all__ = ["DEFAULT_DESIGN", "DESIGNS", "parse_seeds"]

#: experiment designs (see :mod:`finextract.training`); ``reproduce`` runs ``DEFAULT_DESIGN`` unless told otherwise.
#: "instance" leads because it is the paper's setting (DreamBooth on instances of a class the base model knows).
DESIGNS = ("instance", "new-concept")
DEFAULT_DESIGN = "instance"


def parse_seeds(text: str) -> list[int]:
    """Parse ``"4,5"`` into ``[4, 5]``: distinct non-negative integers, in the given order.

    Parameters
    ----------
    text : str
        Comma-separated integers.

    Returns
    -------
    list of int
        The seeds.

    Examples
    --------
    >>> parse_seeds("4,5")
    [4, 5]
    """
    try:
        seeds = [int(part) for part in text.split(",")]
    except ValueError:
        raise ValueError(f"seeds must be comma-separated integers like 4,5; got {text!r}") from None
    if any(s < 0 for s in seeds):
        raise ValueError(f"seeds must be non-negative, got {text!r}")
    if len(set(seeds)) != len(seeds):
        raise ValueError(f"seeds must be distinct, got {text!r}")
    return seeds

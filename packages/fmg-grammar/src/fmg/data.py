"""The DEG monomer sets shipped with the package, and a loader for local SMILES files."""

from __future__ import annotations

from importlib.resources import files
from pathlib import Path

__all__ = ["DATASETS", "load_dataset", "load_smiles"]

DATASETS = ("isocyanates", "acrylates", "chain_extenders", "polymers_117")
"""Names of the bundled training sets that ``load_dataset`` accepts."""


def load_smiles(path: str | Path) -> list[str]:
    """SMILES strings of a text file, one per line (first whitespace-separated field; blank lines skipped).

    Parameters
    ----------
    path : str or Path
        A local file, e.g. a HOPV or PTC export.

    Returns
    -------
    list of str
        The SMILES in file order.

    Raises
    ------
    ValueError
        When the file holds no SMILES.
    """
    lines = Path(path).read_text().splitlines()
    out = [line.split()[0] for line in lines if line.strip() and not line.lstrip().startswith("#")]
    if not out:
        raise ValueError(f"{path}: no SMILES found (expected one per line)")
    return out


def load_dataset(name: str) -> list[str]:
    """One of the DEG monomer sets (Guo et al., ICLR 2022; MIT licence, see DATA.md).

    Parameters
    ----------
    name : {"isocyanates", "acrylates", "chain_extenders", "polymers_117"}
        The set: 11, 32, 11 and 117 molecules.

    Returns
    -------
    list of str
        The SMILES as shipped.

    Examples
    --------
    >>> from fmg import load_dataset
    >>> len(load_dataset("isocyanates")), len(load_dataset("acrylates")), len(load_dataset("chain_extenders"))
    (11, 32, 11)
    """
    if name not in DATASETS:
        raise ValueError(f"unknown dataset {name!r}; accepted: {', '.join(DATASETS)}")
    return load_smiles(files("fmg") / "data" / f"{name}.txt")

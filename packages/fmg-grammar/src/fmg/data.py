"""The DEG monomer sets shipped with the package, and a loader for local SMILES files."""

from __future__ import annotations

from importlib.resources import files
from pathlib import Path

__all__ = ["DATASETS", "LOCAL_DATASETS", "load_dataset", "load_hopv", "load_ptc", "load_smiles"]

DATASETS = ("isocyanates", "acrylates", "chain_extenders", "polymers_117")
"""Names of the bundled training sets that ``load_dataset`` accepts."""
LOCAL_DATASETS = ("hopv", "ptc")
"""Sets that are not shipped: ``load_dataset(name, path=...)`` reads a local copy."""


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


def _csv_smiles(path: Path, text: str, column: str) -> list[str]:
    import csv

    sample = text[:4096]
    try:
        dialect: type[csv.Dialect] | csv.Dialect = csv.Sniffer().sniff(sample, delimiters=",;\t")
    except csv.Error:
        dialect = csv.excel
    rows = list(csv.reader(text.splitlines(), dialect))
    header = [h.strip() for h in rows[0]]
    lower = [h.lower() for h in header]
    if column.lower() not in lower:
        raise ValueError(f"{path}: no {column!r} column (found {', '.join(map(repr, header))}); pass "
                         "smiles_column=<name>")
    k = lower.index(column.lower())
    out = [row[k].strip() for row in rows[1:] if len(row) > k and row[k].strip()]
    if not out:
        raise ValueError(f"{path}: the {header[k]!r} column holds no SMILES")
    return out


def _sdf_smiles(path: Path) -> list[str]:
    from rdkit import Chem

    out = []
    for i, mol in enumerate(Chem.SDMolSupplier(str(path))):
        if mol is None:
            raise ValueError(f"{path}: SDF record {i} cannot be read by RDKit")
        out.append(Chem.MolToSmiles(mol))
    if not out:
        raise ValueError(f"{path}: no SDF records")
    return out


def _local(path: str | Path, smiles_column: str, hopv15: bool) -> list[str]:
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"{path}: no such file")
    if path.suffix.lower() in (".sdf", ".mol"):
        return _sdf_smiles(path)
    text = path.read_text()
    lines = [line.strip() for line in text.splitlines()]
    if hopv15 and any(line.startswith("InChI=") for line in lines):
        # HOPV15 (Lopez et al. 2016) raw file: each record opens with its SMILES, then its InChI line
        out = [lines[i - 1] for i, line in enumerate(lines) if line.startswith("InChI=") and i > 0 and lines[i - 1]]
        if not out:
            raise ValueError(f"{path}: InChI lines without a SMILES line before them")
        return out
    first = next((line for line in lines if line and not line.startswith("#")), "")
    if path.suffix.lower() in (".csv", ".tsv") or smiles_column.lower() in first.lower().replace(";", ",").split(","):
        return _csv_smiles(path, text, smiles_column)
    return load_smiles(path)


def load_hopv(path: str | Path, *, smiles_column: str = "smiles") -> list[str]:
    """SMILES of a local HOPV copy (Harvard organic photovoltaics, Lopez et al. 2016; not shipped).

    Parameters
    ----------
    path : str or Path
        The raw ``HOPV_15_revised_2.data`` file (the SMILES line that opens each record is read, the
        line before its ``InChI=`` line), a CSV with a SMILES column (e.g. MoleculeNet's ``hopv.csv``) or
        a text file of one SMILES per line.
    smiles_column : str, default "smiles"
        CSV column name (case-insensitive).

    Returns
    -------
    list of str
    """
    return _local(path, smiles_column, hopv15=True)


def load_ptc(path: str | Path, *, smiles_column: str = "smiles") -> list[str]:
    """SMILES of a local PTC copy (Predictive Toxicology Challenge; not shipped).

    Parameters
    ----------
    path : str or Path
        An SDF file (``.sdf``), a CSV with a SMILES column, or a text file of one SMILES per line.
    smiles_column : str, default "smiles"
        CSV column name (case-insensitive).

    Returns
    -------
    list of str
    """
    return _local(path, smiles_column, hopv15=False)


def load_dataset(name: str, *, path: str | Path | None = None) -> list[str]:
    """One of the DEG monomer sets (Guo et al., ICLR 2022; MIT licence, see DATA.md), or a local HOPV/PTC copy.

    Parameters
    ----------
    name : {"isocyanates", "acrylates", "chain_extenders", "polymers_117", "hopv", "ptc"}
        The set: 11, 32, 11 and 117 molecules shipped; ``"hopv"`` and ``"ptc"`` need ``path``.
    path : str or Path, optional
        The local file of ``"hopv"`` (see ``load_hopv``) or ``"ptc"`` (see ``load_ptc``).

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
    if name in LOCAL_DATASETS:
        if path is None:
            raise ValueError(f"dataset {name!r} is not shipped: pass path=<your local copy> (see load_{name})")
        return load_hopv(path) if name == "hopv" else load_ptc(path)
    if name not in DATASETS:
        raise ValueError(f"unknown dataset {name!r}; accepted: {', '.join(DATASETS + LOCAL_DATASETS)}")
    if path is not None:
        raise ValueError(f"dataset {name!r} is shipped; path is only for {', '.join(LOCAL_DATASETS)}")
    return load_smiles(files("fmg") / "data" / f"{name}.txt")

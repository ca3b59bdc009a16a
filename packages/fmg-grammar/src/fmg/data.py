"""The DEG monomer sets shipped with the package, and a loader for local SMILES files."""

from __future__ import annotations

import codecs
import re
from importlib.resources import files
from pathlib import Path

__all__ = ["DATASETS", "LOCAL_DATASETS", "load_dataset", "load_hopv", "load_ptc", "load_smiles"]

DATASETS = ("isocyanates", "acrylates", "chain_extenders", "polymers_117")
"""Names of the bundled training sets that ``load_dataset`` accepts."""
LOCAL_DATASETS = ("hopv", "ptc")
"""Sets that are not shipped: ``load_dataset(name, path=...)`` reads a local copy."""


def _read_text(path: Path) -> str:
    """Text of a local file: UTF-8 (with or without a byte-order mark), UTF-16 with its mark, else Latin-1."""
    raw = path.read_bytes()
    if raw.startswith((codecs.BOM_UTF16_LE, codecs.BOM_UTF16_BE)):
        return raw.decode("utf-16")
    try:
        return raw.decode("utf-8-sig")
    except UnicodeDecodeError:  # e.g. a Latin-1 name column; SMILES themselves are ASCII
        return raw.decode("latin-1")


def _is_header(line: str, column: str = "smiles") -> bool:
    fields = re.split(r"[,;\t ]", line.strip(), maxsplit=1)
    return bool(fields) and fields[0].strip().strip("'\"").lower() == column.lower()


def load_smiles(path: str | Path) -> list[str]:
    """SMILES strings of a text file, one per line (first whitespace-separated field; blank lines skipped).

    Parameters
    ----------
    path : str or Path
        A local file, e.g. a HOPV or PTC export: UTF-8 (a byte-order mark is dropped), UTF-16 with its
        mark, or Latin-1. Lines starting with ``#`` and a first line whose first field is ``smiles``
        (a header, any case) are skipped.

    Returns
    -------
    list of str
        The SMILES in file order.

    Raises
    ------
    ValueError
        When the file holds no SMILES.
    """
    lines = [line for line in _read_text(Path(path)).splitlines()
             if line.strip() and not line.lstrip().startswith("#")]
    if lines and _is_header(lines[0]):
        lines = lines[1:]
    out = [line.split()[0] for line in lines]
    if not out:
        raise ValueError(f"{path}: no SMILES found (expected one per line)")
    return out


def _csv_smiles(path: Path, text: str, column: str) -> list[str]:
    import csv

    if not text.strip():
        raise ValueError(f"{path}: the file is empty")
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
    for i, row in enumerate(rows[1:], start=2):
        if row and len(row) != len(header):  # an unquoted comma (InChI, names) shifts the columns
            raise ValueError(f"{path}, line {i}: {len(row)} fields, the header has {len(header)}; quote fields "
                             "that hold the delimiter")
    out = [row[k].strip() for row in rows[1:] if row and row[k].strip()]
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
    text = _read_text(path)
    if not text.strip():
        raise ValueError(f"{path}: the file is empty")
    lines = [line.strip() for line in text.splitlines()]
    first = next((line for line in lines if line and not line.startswith("#")), "")
    # a table first: a CSV whose InChI column comes first also has lines starting with "InChI="
    fields = [f.strip().strip("'\"").lower() for f in re.split(r"[,;\t]", first)]
    if path.suffix.lower() in (".csv", ".tsv") or (len(fields) > 1 and smiles_column.lower() in fields):
        return _csv_smiles(path, text, smiles_column)
    if hopv15 and any(line.startswith("InChI=") for line in lines):
        # HOPV15 (Lopez et al. 2016) raw file: each record opens with its SMILES, then its InChI line
        out = []
        for i, line in enumerate(lines):
            if line.startswith("InChI="):
                if i == 0 or not lines[i - 1]:
                    raise ValueError(f"{path}, line {i + 1}: an InChI line without the SMILES line before it "
                                     "(HOPV15 records open with SMILES, then InChI)")
                out.append(lines[i - 1])
        return out
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
        The SMILES in file order, duplicates kept (``FMG.fit`` drops repeats by canonical SMILES).
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
        The SMILES in file order, duplicates kept (``FMG.fit`` drops repeats by canonical SMILES).
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
    return load_smiles(Path(str(files("fmg") / "data" / f"{name}.txt")))

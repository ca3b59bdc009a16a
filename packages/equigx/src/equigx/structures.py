"""Protein and ligand structures from local files: PDB / SDF readers, complex graphs, BioLiP and SCOP loaders.

Nothing is downloaded: every loader reads files the user already has.

- :func:`read_pdb` (fixed-column PDB, first model, first alternate location) and :func:`read_sdf` (V2000
  molfile, first molecule).
- :func:`complex_graph` / :func:`load_complex`: one protein-ligand complex as a two-part graph (residues as
  C-alpha nodes with a one-hot residue type, ligand atoms with a one-hot element) for
  :class:`equigx.models.ProteinLigandTFN`.
- :func:`load_biolip`: BioLiP's annotation table with its receptor and ligand files; the binding-site
  residues are the ground-truth mask and the Kd (or Ki) gives the target ``pK = -log10(K / 1 M)``.
- :func:`load_scop`: SCOP domains from PDB files and a label table; ground truth = residues in a helix or a
  strand, by DSSP (``mkdssp`` through Biopython) when installed, otherwise by the files' HELIX/SHEET records.
- :func:`make_complexes`: synthetic complexes with a known answer, for tests and demonstrations.
"""

from __future__ import annotations

import importlib
import importlib.util
import re
import shutil
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Literal

import numpy as np
import torch
from icml25_shared.random import RandomStateLike, check_random_state

from equigx.graphs import Graphs

__all__ = ["AMINO_ACIDS", "HOT_RESIDUES", "LIGAND_ELEMENTS", "ONE_LETTER", "BioLiPSet", "PDBAtoms", "ScopSet",
           "complex_graph", "element_index", "load_biolip", "load_complex", "load_scop", "make_complexes",
           "parse_affinity", "read_pdb", "read_sdf", "residue_index", "secondary_structure_records"]

AMINO_ACIDS: tuple[str, ...] = ("ALA", "ARG", "ASN", "ASP", "CYS", "GLU", "GLN", "GLY", "HIS", "ILE", "LEU", "LYS",
                                "MET", "PHE", "PRO", "SER", "THR", "TRP", "TYR", "VAL")
"""Residue types in one-hot order (index 20 = any other residue)."""

ONE_LETTER: dict[str, str] = dict(zip("ARNDCEQGHILKMFPSTWYV", AMINO_ACIDS, strict=True))
"""One-letter to three-letter amino-acid codes."""

LIGAND_ELEMENTS: tuple[str, ...] = ("C", "N", "O", "S", "P", "F", "CL", "BR", "I")
"""Ligand element types in one-hot order (index 9 = any other element)."""

_UNITS = {"pM": 1e-6, "nM": 1e-3, "uM": 1.0, "mM": 1e3, "M": 1e6}


@dataclass
class PDBAtoms:
    """Atoms of a PDB file (first model), one entry per atom.

    Attributes
    ----------
    name, resname, chain, icode, element : numpy.ndarray of str, shape (n_atoms,)
        Atom name, residue name, chain, insertion code and element (upper case).
    resseq : numpy.ndarray of int, shape (n_atoms,)
        Residue number.
    hetatm : numpy.ndarray of bool, shape (n_atoms,)
        HETATM record.
    pos : numpy.ndarray of float, shape (n_atoms, 3)
        Coordinates (Angstrom).
    helix, sheet : list of tuple
        ``(chain, first resseq, last resseq)`` ranges of the HELIX and SHEET records.
    """

    name: np.ndarray
    resname: np.ndarray
    chain: np.ndarray
    resseq: np.ndarray
    icode: np.ndarray
    element: np.ndarray
    hetatm: np.ndarray
    pos: np.ndarray
    helix: list[tuple[str, int, int]] = field(default_factory=list)
    sheet: list[tuple[str, int, int]] = field(default_factory=list)

    def select(self, keep: np.ndarray) -> PDBAtoms:
        """The atoms where ``keep`` is True.

        Parameters
        ----------
        keep : numpy.ndarray of bool, shape (n_atoms,)
            Atoms to keep.

        Returns
        -------
        PDBAtoms
            A new record set (the secondary-structure ranges are kept).
        """
        return replace(self, **{f: getattr(self, f)[keep] for f in (
            "name", "resname", "chain", "resseq", "icode", "element", "hetatm", "pos")})

    def calpha(self, chain: str | None = None) -> PDBAtoms:
        """C-alpha atoms of standard-record residues (optionally of one chain).

        Parameters
        ----------
        chain : str, optional
            Chain identifier.

        Returns
        -------
        PDBAtoms
            One atom per residue.
        """
        keep = (self.name == "CA") & ~self.hetatm
        if chain is not None:
            keep &= self.chain == chain
        return self.select(keep)


_TWO_LETTER = frozenset({"CL", "BR", "FE", "ZN", "MG", "MN", "NA", "CA", "CU", "CO", "NI", "SE", "CD", "HG", "LI"})


def _element(line: str, name: str) -> str:
    element = line[76:78].strip().upper()
    if element:
        return element
    # no element column: PDB names align one-letter elements at column 14 and two-letter ones at column 13
    field = line[12:16].upper()
    if field[:1].isalpha() and field[:2] in _TWO_LETTER and field[:1] != "H" or field[:2] == "HG" and len(name) <= 2:
        return field[:2]
    letters = re.sub(r"[^A-Za-z]", "", name)
    return letters[:1].upper()


def read_pdb(path: str | Path) -> PDBAtoms:
    """Read the ATOM/HETATM records of the first model of a PDB file (water skipped).

    Of a residue with alternate locations, the first one listed is kept (whatever its letter). HETATM
    records are read (``hetatm`` says which); :meth:`PDBAtoms.calpha` keeps standard ``ATOM`` residues only,
    so modified residues such as MSE written as HETATM are not C-alpha nodes.

    Parameters
    ----------
    path : str or Path
        The file.

    Returns
    -------
    PDBAtoms
        The atoms and the HELIX/SHEET ranges.

    Raises
    ------
    ValueError
        When the file has no atom, or a coordinate, residue number or HELIX/SHEET range is not a number
        (the message names the line).
    """
    rows: list[tuple] = []
    helix: list[tuple[str, int, int]] = []
    sheet: list[tuple[str, int, int]] = []
    first_altloc: dict[tuple[str, int, str], str] = {}
    seen: set[tuple[str, int, str, str]] = set()
    text = Path(path).read_text()
    for number, raw in enumerate(text.splitlines(), 1):
        line = raw.ljust(80)  # fixed columns: a short line reads as blanks, then fails below if it lacks fields
        record = line[:6]
        if record.startswith("ENDMDL"):
            break
        try:
            if record == "HELIX ":
                helix.append((line[19], int(line[21:25]), int(line[33:37])))
            elif record == "SHEET ":
                sheet.append((line[21], int(line[22:26]), int(line[33:37])))
            elif record in ("ATOM  ", "HETATM"):
                resname = line[17:20].strip()
                if resname in ("HOH", "WAT", "DOD"):
                    continue
                name, altloc, chain, icode = line[12:16].strip(), line[16], line[21], line[26].strip()
                resseq = int(line[22:26])
                # alternate locations: keep, per residue, the first letter listed (whatever it is), and never a
                # second copy of an atom already read without one
                residue, atom_key = (chain, resseq, icode), (chain, resseq, icode, name)
                if altloc != " " and (first_altloc.setdefault(residue, altloc) != altloc or atom_key in seen):
                    continue
                seen.add(atom_key)
                xyz = (float(line[30:38]), float(line[38:46]), float(line[46:54]))
                rows.append((name, resname, chain, resseq, icode, _element(line, name), record == "HETATM", xyz))
        except ValueError as err:
            raise ValueError(f"{path}, line {number}: cannot read coordinates or residue numbers "
                             f"from {raw!r}") from err
    if not rows:
        raise ValueError(f"{path} holds no ATOM or HETATM record")
    cols = list(zip(*rows, strict=True))
    pos = np.asarray(cols[7], dtype=np.float64)
    if not np.isfinite(pos).all():
        raise ValueError(f"{path} holds non-finite coordinates")
    return PDBAtoms(np.asarray(cols[0]), np.asarray(cols[1]), np.asarray(cols[2]), np.asarray(cols[3], dtype=np.int64),
                    np.asarray(cols[4]), np.asarray(cols[5]), np.asarray(cols[6], dtype=bool), pos, helix, sheet)


def read_sdf(path: str | Path) -> tuple[np.ndarray, np.ndarray]:
    """Elements and coordinates of the first molecule of an SDF / MOL file (V2000 atom block).

    Parameters
    ----------
    path : str or Path
        The file.

    Returns
    -------
    tuple of numpy.ndarray
        ``(elements (n,) upper-case str, pos (n, 3))``; hydrogens are kept.

    Raises
    ------
    ValueError
        When the counts line or an atom line cannot be read, or the file is V3000.
    """
    lines = Path(path).read_text().splitlines()
    if len(lines) < 4:
        raise ValueError(f"{path} is too short for a molfile (header and counts line)")
    counts = lines[3]
    if "V3000" in counts:
        raise ValueError(f"{path} is a V3000 molfile; only V2000 atom blocks are read")
    try:
        n_atoms = int(counts[0:3])
        block = lines[4:4 + n_atoms]
        pos = np.array([[float(a[0:10]), float(a[10:20]), float(a[20:30])] for a in block], dtype=np.float64)
        elements = np.array([a[31:34].strip().upper() for a in block])
    except (ValueError, IndexError) as err:
        raise ValueError(f"{path}: cannot read the V2000 atom block") from err
    if n_atoms == 0 or len(block) != n_atoms:
        raise ValueError(f"{path}: the counts line announces {n_atoms} atoms, the file holds {len(block)}")
    return elements, pos


def _read_ligand(path: str | Path) -> tuple[np.ndarray, np.ndarray]:
    suffix = Path(path).suffix.lower()
    if suffix in (".sdf", ".mol"):
        return read_sdf(path)
    if suffix in (".pdb", ".ent"):
        atoms = read_pdb(path)
        return atoms.element, atoms.pos
    raise ValueError(f"ligand file {path} must be .sdf, .mol or .pdb")


def _one_hot(index: np.ndarray, width: int) -> np.ndarray:
    out = np.zeros((len(index), width))
    out[np.arange(len(index)), index] = 1.0
    return out


def residue_index(resname: Sequence[str] | np.ndarray) -> np.ndarray:
    """One-hot column of each residue name (20 for a non-standard residue).

    Parameters
    ----------
    resname : sequence of str
        Three-letter names.

    Returns
    -------
    numpy.ndarray of int
        Indices into :data:`AMINO_ACIDS` (20 = other).
    """
    lookup = {name: i for i, name in enumerate(AMINO_ACIDS)}
    return np.array([lookup.get(str(r).upper(), len(AMINO_ACIDS)) for r in resname], dtype=np.int64)


def element_index(elements: Sequence[str] | np.ndarray) -> np.ndarray:
    """One-hot column of each ligand element (9 for any other element).

    Parameters
    ----------
    elements : sequence of str
        Element symbols.

    Returns
    -------
    numpy.ndarray of int
        Indices into :data:`LIGAND_ELEMENTS` (9 = other).
    """
    lookup = {name: i for i, name in enumerate(LIGAND_ELEMENTS)}
    return np.array([lookup.get(str(e).upper(), len(LIGAND_ELEMENTS)) for e in elements], dtype=np.int64)


def complex_graph(protein_pos: np.ndarray, residue_types: np.ndarray, ligand_pos: np.ndarray,
                  ligand_types: np.ndarray, *, pocket_radius: float | None = 10.0,
                  protein_mask: np.ndarray | None = None, hydrogens: bool = False,
                  ligand_elements: Sequence[str] | np.ndarray | None = None) -> dict[str, np.ndarray]:
    """One complex as arrays for :meth:`equigx.Graphs.from_list` (protein C-alpha nodes first, then ligand atoms).

    Parameters
    ----------
    protein_pos : numpy.ndarray, shape (n_residues, 3)
        C-alpha coordinates.
    residue_types : numpy.ndarray of int, shape (n_residues,)
        Residue type indices (0..20, :func:`residue_index`).
    ligand_pos : numpy.ndarray, shape (n_atoms, 3)
        Ligand atom coordinates.
    ligand_types : numpy.ndarray of int, shape (n_atoms,)
        Ligand element indices (0..9, :func:`element_index`).
    pocket_radius : float or None, default 10.0
        Keep residues within this distance of any ligand atom (None keeps all).
    protein_mask : numpy.ndarray of bool, shape (n_residues,), optional
        Ground truth on the residues (e.g. the binding site); ligand atoms are False.
    hydrogens : bool, default False
        Keep ligand hydrogens (needs ``ligand_elements``).
    ligand_elements : sequence of str, optional
        Element symbols, to drop hydrogens.

    Returns
    -------
    dict
        ``pos``, ``node_attr`` (21 + 10 one-hot columns), ``node_part`` (0 protein, 1 ligand), ``node_mask``.

    Raises
    ------
    ValueError
        On non-finite coordinates, mismatched lengths, out-of-range types, or an empty pocket or ligand.
    """
    protein_pos, ligand_pos = np.asarray(protein_pos, float).reshape(-1, 3), np.asarray(ligand_pos, float).reshape(-1, 3)
    raw_types = {"residue_types": np.asarray(residue_types), "ligand_types": np.asarray(ligand_types)}
    for name, raw in raw_types.items():
        if raw.dtype == bool or (raw.size and not np.issubdtype(raw.dtype, np.integer)
                                 and not (np.issubdtype(raw.dtype, np.floating) and np.all(raw == np.round(raw)))):
            raise ValueError(f"{name} must hold integer type indices, got {raw.dtype} values such as {raw.ravel()[:3]}")
    residue_types = raw_types["residue_types"].astype(np.int64)
    ligand_types = raw_types["ligand_types"].astype(np.int64)
    if len(residue_types) != len(protein_pos) or len(ligand_types) != len(ligand_pos):
        raise ValueError("one type per residue and per ligand atom is needed")
    if not (np.isfinite(protein_pos).all() and np.isfinite(ligand_pos).all()):
        raise ValueError("coordinates must be finite")
    if residue_types.size and not (0 <= residue_types.min() and residue_types.max() <= len(AMINO_ACIDS)):
        raise ValueError(f"residue types must lie in 0..{len(AMINO_ACIDS)}")
    if ligand_types.size and not (0 <= ligand_types.min() and ligand_types.max() <= len(LIGAND_ELEMENTS)):
        raise ValueError(f"ligand types must lie in 0..{len(LIGAND_ELEMENTS)}")
    mask = np.zeros(len(protein_pos), bool) if protein_mask is None else np.asarray(protein_mask, bool)
    if len(mask) != len(protein_pos):
        raise ValueError("protein_mask needs one entry per residue")
    if ligand_elements is not None and len(ligand_elements) != len(ligand_pos):
        raise ValueError(f"ligand_elements has {len(ligand_elements)} entries for {len(ligand_pos)} ligand atoms")
    if not hydrogens and ligand_elements is not None:
        heavy = np.array([str(e).upper() not in ("H", "D") for e in ligand_elements])
        ligand_pos, ligand_types = ligand_pos[heavy], ligand_types[heavy]
    if len(ligand_pos) == 0:
        raise ValueError("the ligand has no (heavy) atom")
    if pocket_radius is not None:
        dist = np.linalg.norm(protein_pos[:, None] - ligand_pos[None], axis=-1).min(axis=1)
        keep = dist < pocket_radius
        protein_pos, residue_types, mask = protein_pos[keep], residue_types[keep], mask[keep]
    if len(protein_pos) == 0:
        raise ValueError(f"no residue lies within pocket_radius={pocket_radius} of the ligand")
    n_p, n_l = len(protein_pos), len(ligand_pos)
    attr = np.zeros((n_p + n_l, len(AMINO_ACIDS) + 1 + len(LIGAND_ELEMENTS) + 1))
    attr[:n_p, :len(AMINO_ACIDS) + 1] = _one_hot(residue_types, len(AMINO_ACIDS) + 1)
    attr[n_p:, len(AMINO_ACIDS) + 1:] = _one_hot(ligand_types, len(LIGAND_ELEMENTS) + 1)
    return {"pos": np.vstack([protein_pos, ligand_pos]), "node_attr": attr,
            "node_part": np.r_[np.zeros(n_p, np.int64), np.ones(n_l, np.int64)],
            "node_mask": np.r_[mask, np.zeros(n_l, bool)]}


def _batch(parts: list[dict[str, np.ndarray]], y: Sequence[float] | None, dtype: torch.dtype) -> Graphs:
    return Graphs.from_list([p["pos"] for p in parts], [p["node_attr"] for p in parts], y=y,
                            node_mask=[p["node_mask"] for p in parts], node_part=[p["node_part"] for p in parts],
                            dtype=dtype)


def load_complex(protein: str | Path, ligand: str | Path, *, chain: str | None = None,
                 pocket_radius: float | None = 10.0, affinity_pk: float | None = None,
                 dtype: torch.dtype = torch.float32) -> Graphs:
    """One protein-ligand complex from a receptor PDB and a ligand SDF/MOL/PDB file.

    Parameters
    ----------
    protein : str or Path
        Receptor PDB (residues are taken by their C-alpha atoms).
    ligand : str or Path
        Ligand file (``.sdf``, ``.mol`` or ``.pdb``); hydrogens are dropped.
    chain : str, optional
        Receptor chain (default: all chains).
    pocket_radius : float or None, default 10.0
        Residues within this distance of the ligand (Angstrom); None keeps all.
    affinity_pk : float, optional
        Target ``pK`` stored in ``y``.
    dtype : torch.dtype, default torch.float32
        Floating dtype.

    Returns
    -------
    Graphs
        A batch of one graph with ``node_part``.
    """
    ca = read_pdb(protein).calpha(chain)
    if len(ca.pos) == 0:
        raise ValueError(f"{protein} has no C-alpha atom" + (f" in chain {chain!r}" if chain else ""))
    elements, lpos = _read_ligand(ligand)
    part = complex_graph(ca.pos, residue_index(ca.resname), lpos, element_index(elements),
                         pocket_radius=pocket_radius, ligand_elements=elements)
    return _batch([part], None if affinity_pk is None else [float(affinity_pk)], dtype)


def parse_affinity(text: str, *, kinds: Sequence[str] = ("Kd", "Ki")) -> float | None:
    """Affinity in micromolar from a BioLiP affinity field such as ``"Kd=1.5uM"`` (first matching kind).

    Parameters
    ----------
    text : str
        The field.
    kinds : sequence of str, default ("Kd", "Ki")
        Measurements to accept, in order of preference.

    Returns
    -------
    float or None
        Micromolar, or None when no accepted measurement is present. ``=`` and ``~`` are read as values;
        bounds (``<``, ``>``, ``<=``, ``>=``), other units and malformed numbers are not values (None).
    """
    for kind in kinds:
        match = re.search(rf"\b{kind}\s*[=~]\s*([0-9]*\.?[0-9]+(?:[eE][-+]?[0-9]+)?)\s*(pM|nM|uM|mM|M)\b", text)
        if match:
            return float(match.group(1)) * _UNITS[match.group(2)]
    return None


@dataclass
class BioLiPSet:
    """Complexes read from a local BioLiP copy.

    Attributes
    ----------
    graphs : Graphs
        One graph per entry (protein residues, then ligand atoms); ``node_mask`` = binding-site residues;
        ``y`` = ``pK = 6 - log10(K / 1 uM)``.
    ids : list of str
        ``pdb_chain_ligand_ligandchain_serial`` of each entry.
    affinity_um : numpy.ndarray, shape (n_graphs,)
        Kd (or Ki) in micromolar.
    skipped : dict of str to int
        Entries left out, by reason (no Kd/Ki, nucleic-acid ligand, missing file, no pocket).
    """

    graphs: Graphs
    ids: list[str]
    affinity_um: np.ndarray
    skipped: dict[str, int]


def _binding_site(field_text: str) -> list[tuple[str, int, str]]:
    """``"R123 K45A"`` -> ``[("R", 123, ""), ("K", 45, "A")]``."""
    out = []
    for token in field_text.split():
        match = re.fullmatch(r"([A-Z])(-?\d+)([A-Z]?)", token)
        if match:
            out.append((match.group(1), int(match.group(2)), match.group(3)))
    return out


def load_biolip(root: str | Path, *, annotation: str = "BioLiP.txt", receptor: str = "receptor/{pdb}{chain}.pdb",
                ligand: str = "ligand/{pdb}_{ligand}_{ligand_chain}_{serial}.pdb",
                affinity_columns: Sequence[int] = (15, 16, 14, 13), pocket_radius: float | None = 10.0,
                missing: Literal["raise", "skip"] = "raise", limit: int | None = None,
                dtype: torch.dtype = torch.float32) -> BioLiPSet:
    """Read BioLiP entries with a Kd or Ki from a local folder.

    Parameters
    ----------
    root : str or Path
        Folder with the annotation table and the receptor / ligand files.
    annotation : str, default "BioLiP.txt"
        Tab-separated table (columns: PDB id, receptor chain, resolution, site, ligand id, ligand chain,
        ligand serial, binding-site residues, ..., affinity columns).
    receptor, ligand : str
        File name patterns under ``root`` (fields ``pdb``, ``chain``, ``ligand``, ``ligand_chain``, ``serial``).
    affinity_columns : sequence of int, default (15, 16, 14, 13)
        0-based columns searched for ``Kd=`` then ``Ki=`` values, in this order.
    pocket_radius : float or None, default 10.0
        Residues kept around the ligand (Angstrom); None keeps the whole chain.
    missing : {"raise", "skip"}, default "raise"
        What to do when a structure file is absent.
    limit : int, optional
        Stop after this many complexes.
    dtype : torch.dtype, default torch.float32
        Floating dtype.

    Returns
    -------
    BioLiPSet
        The complexes, their ids and affinities, and the skip counts.

    Raises
    ------
    FileNotFoundError
        When the table or (``missing="raise"``) a structure file is absent.
    ValueError
        When no entry could be read, or ``limit`` is not a positive int.
    """
    root = Path(root)
    table = root / annotation
    if not table.exists():
        raise FileNotFoundError(f"BioLiP annotation table {table} not found")
    if missing not in ("raise", "skip"):
        raise ValueError(f"missing must be 'raise' or 'skip', got {missing!r}")
    _check_limit(limit)
    parts, ids, affinity = [], [], []
    skipped = {"no_affinity": 0, "nucleic_acid": 0, "missing_file": 0, "no_pocket": 0}
    for line in table.read_text().splitlines():
        if not line.strip() or line.startswith("#"):
            continue
        cols = line.split("\t")
        if len(cols) < 8:
            raise ValueError(f"{table}: a line has {len(cols)} tab-separated columns, at least 8 are needed: {line!r}")
        value = None
        for c in affinity_columns:
            if c < len(cols) and cols[c].strip():
                value = parse_affinity(cols[c])
                if value is not None:
                    break
        if value is None or value <= 0:
            skipped["no_affinity"] += 1
            continue
        if cols[4].lower() in ("dna", "rna"):
            skipped["nucleic_acid"] += 1
            continue
        fields = {"pdb": cols[0], "chain": cols[1], "ligand": cols[4], "ligand_chain": cols[5], "serial": cols[6]}
        rec_path, lig_path = root / receptor.format(**fields), root / ligand.format(**fields)
        absent = [p for p in (rec_path, lig_path) if not p.exists()]
        if absent:
            if missing == "raise":
                raise FileNotFoundError(f"BioLiP entry {cols[0]}{cols[1]}: {absent[0]} not found "
                                        "(pass missing='skip' to leave such entries out)")
            skipped["missing_file"] += 1
            continue
        ca = read_pdb(rec_path).calpha()
        site = _binding_site(cols[7])
        wanted = {(n, i): ONE_LETTER.get(a) for a, n, i in site}
        # a listed residue whose type disagrees with the receptor file is not labelled (as the reference loader)
        mask = np.array([(int(n), str(i)) in wanted and wanted[(int(n), str(i))] in (None, str(r))
                         for n, i, r in zip(ca.resseq, ca.icode, ca.resname, strict=True)], dtype=bool)
        elements, lpos = _read_ligand(lig_path)
        try:
            part = complex_graph(ca.pos, residue_index(ca.resname), lpos, element_index(elements),
                                 pocket_radius=pocket_radius, protein_mask=mask, ligand_elements=elements)
        except ValueError:
            skipped["no_pocket"] += 1
            continue
        parts.append(part)
        ids.append("_".join(fields[k] for k in ("pdb", "chain", "ligand", "ligand_chain", "serial")))
        affinity.append(value)
        if limit is not None and len(parts) >= limit:
            break
    if not parts:
        raise ValueError(f"no BioLiP entry of {table} could be read (skipped: {skipped})")
    aff = np.asarray(affinity)
    return BioLiPSet(_batch(parts, list(6.0 - np.log10(aff)), dtype), ids, aff, skipped)


def _check_limit(limit: int | None) -> None:
    if limit is not None and (isinstance(limit, bool) or not isinstance(limit, int) or limit < 1):
        raise ValueError(f"limit must be a positive int or None, got {limit!r}")


def secondary_structure_records(atoms: PDBAtoms) -> np.ndarray:
    """Whether each atom's residue lies in a HELIX or SHEET record range of its file.

    Parameters
    ----------
    atoms : PDBAtoms
        Atoms read by :func:`read_pdb`.

    Returns
    -------
    numpy.ndarray of bool, shape (n_atoms,)
        True inside a helix or a strand.
    """
    out = np.zeros(len(atoms.pos), bool)
    for chain, first, last in atoms.helix + atoms.sheet:
        out |= (atoms.chain == chain) & (atoms.resseq >= first) & (atoms.resseq <= last)
    return out


def _dssp_labels(path: Path, ca: PDBAtoms, executable: str) -> np.ndarray:
    try:
        from Bio import PDB as bio
    except ImportError as err:
        raise ImportError("DSSP labels need Biopython: pip install 'equigx[bio]'") from err
    model = bio.PDBParser(QUIET=True).get_structure("domain", str(path))[0]
    dssp = bio.DSSP(model, str(path), dssp=executable)
    codes = {(key[0], key[1][1], key[1][2].strip()): dssp[key][2] for key in dssp.keys()}
    return np.array([codes.get((c, int(n), str(i)), "-") in ("H", "G", "I", "E", "B")
                     for c, n, i in zip(ca.chain, ca.resseq, ca.icode, strict=True)])


@dataclass
class ScopSet:
    """SCOP domains read from local PDB files.

    Attributes
    ----------
    graphs : Graphs
        One graph per domain (C-alpha nodes, one-hot residue type in 21 columns); ``y`` = class index;
        ``node_mask`` = residues in a helix or strand.
    ids : list of str
        Domain identifiers.
    classes : list of str
        Class names; ``y`` indexes this list.
    source : str
        ``"dssp"`` or ``"records"``: where the secondary structure came from.
    """

    graphs: Graphs
    ids: list[str]
    classes: list[str]
    source: str


def load_scop(root: str | Path, *, split: str = "training", labels: str = "{split}.txt",
              structure: str = "{split}/{id}.pdb", secondary: Literal["auto", "dssp", "records"] = "auto",
              classes: Sequence[str] | None = None, limit: int | None = None,
              dtype: torch.dtype = torch.float32) -> ScopSet:
    """Read SCOP domains (fold classification with helix/strand ground truth) from a local folder.

    Parameters
    ----------
    root : str or Path
        Folder with the label table and the structures.
    split : str, default "training"
        Fills ``{split}`` in the patterns.
    labels : str, default "{split}.txt"
        Table with one domain per line: the id in the first tab-separated column, the label in the last.
    structure : str, default "{split}/{id}.pdb"
        Structure file pattern.
    secondary : {"auto", "dssp", "records"}, default "auto"
        Ground-truth source: DSSP (``mkdssp`` on the PATH and Biopython installed), the files' HELIX/SHEET
        records, or DSSP when available and the records otherwise.
    classes : sequence of str, optional
        Label order (default: the sorted labels of the table).
    limit : int, optional
        Stop after this many domains.
    dtype : torch.dtype, default torch.float32
        Floating dtype.

    Returns
    -------
    ScopSet
        The domains, ids, class names and the ground-truth source.

    Raises
    ------
    FileNotFoundError
        When the table or a structure is absent.
    ValueError
        On an unknown label, ``limit`` that is not a positive int, or ``secondary="dssp"`` without mkdssp /
        Biopython.
    """
    root = Path(root)
    table = root / labels.format(split=split)
    if not table.exists():
        raise FileNotFoundError(f"SCOP label table {table} not found")
    if secondary not in ("auto", "dssp", "records"):
        raise ValueError(f"secondary must be 'auto', 'dssp' or 'records', got {secondary!r}")
    _check_limit(limit)
    executable = shutil.which("mkdssp") or shutil.which("dssp")
    has_bio = importlib.util.find_spec("Bio") is not None
    use_dssp = secondary == "dssp" or (secondary == "auto" and executable is not None and has_bio)
    if use_dssp and (executable is None or not has_bio):
        raise ValueError("secondary='dssp' needs mkdssp on the PATH and Biopython (pip install biopython)")
    rows = [line.rstrip("\n").split("\t") for line in table.read_text().splitlines() if line.strip()]
    names = list(classes) if classes is not None else sorted({r[-1] for r in rows})
    lookup = {c: i for i, c in enumerate(names)}
    pos, attr, masks, ys, ids = [], [], [], [], []
    for row in rows[:limit] if limit is not None else rows:
        domain, label = row[0], row[-1]
        if label not in lookup:
            raise ValueError(f"{table}: label {label!r} of {domain} is not among the classes {names}")
        path = root / structure.format(split=split, id=domain)
        if not path.exists():
            raise FileNotFoundError(f"SCOP domain {domain}: {path} not found")
        atoms = read_pdb(path)
        ca = atoms.calpha()
        if len(ca.pos) == 0:
            raise ValueError(f"{path} has no C-alpha atom")
        mask = _dssp_labels(path, ca, str(executable)) if use_dssp else secondary_structure_records(ca)
        pos.append(ca.pos)
        attr.append(_one_hot(residue_index(ca.resname), len(AMINO_ACIDS) + 1))
        masks.append(mask)
        ys.append(lookup[label])
        ids.append(domain)
    graphs = Graphs.from_list(pos, attr, y=[int(v) for v in ys], node_mask=masks, dtype=dtype)
    return ScopSet(graphs, ids, names, "dssp" if use_dssp else "records")


HOT_RESIDUES: tuple[int, ...] = (13, 17, 18)
"""Residue types (PHE, TRP, TYR) whose contacts set the synthetic affinity of :func:`make_complexes`."""


def make_complexes(n: int, *, n_residues: tuple[int, int] = (12, 20), n_ligand: tuple[int, int] = (4, 7),
                   contact: float = 6.0, random_state: RandomStateLike = None,
                   dtype: torch.dtype = torch.float32) -> Graphs:
    """Synthetic protein-ligand complexes whose affinity is set by aromatic contacts.

    A ligand is a random chain of atoms 1.5 A apart; residues (C-alpha points) lie 4-9 A from the
    ligand's centre at least 3.8 A apart, with random types. ``pK = 4 + 1.0 * (number of PHE/TRP/TYR
    residues within ``contact`` of a ligand atom)``; those residues are the ground-truth mask.

    Parameters
    ----------
    n : int
        Complexes.
    n_residues, n_ligand : tuple of int, default (12, 20) and (4, 7)
        Inclusive ranges of the pocket and ligand sizes.
    contact : float, default 6.0
        Contact distance (Angstrom).
    random_state : None, int or numpy Generator
        Source of the complexes.
    dtype : torch.dtype, default torch.float32
        Floating dtype.

    Returns
    -------
    Graphs
        Complexes with ``node_part``, ``node_mask`` and float ``y`` (pK).
    """
    if isinstance(n, bool) or not isinstance(n, int) or n < 1:
        raise ValueError(f"n must be a positive int, got {n!r}")
    for name, (low, high) in (("n_residues", n_residues), ("n_ligand", n_ligand)):
        if not 1 <= low <= high:
            raise ValueError(f"{name} must be an inclusive range (low, high) with 1 <= low <= high, got {(low, high)}")
    rng = check_random_state(random_state)
    parts, ys = [], []
    for _ in range(n):
        n_l = int(rng.integers(n_ligand[0], n_ligand[1] + 1))
        steps = rng.normal(size=(n_l, 3))
        steps /= np.linalg.norm(steps, axis=1, keepdims=True)
        lig = np.cumsum(steps * 1.5, axis=0)
        lig -= lig.mean(axis=0)
        n_r = int(rng.integers(n_residues[0], n_residues[1] + 1))
        res: list[np.ndarray] = []
        for _attempt in range(20_000):
            if len(res) == n_r:
                break
            d = rng.normal(size=3)
            p = d / np.linalg.norm(d) * rng.uniform(4.0, 9.0)
            if all(np.linalg.norm(p - q) >= 3.8 for q in res) and np.linalg.norm(lig - p, axis=1).min() >= 3.0:
                res.append(p)
        if len(res) < n_r:
            raise ValueError(f"could not place {n_r} residues 3.8 A apart in the 4-9 A shell around the ligand; "
                             "ask for fewer residues")
        res_pos = np.asarray(res)
        types = rng.integers(0, len(AMINO_ACIDS), size=n_r)
        near = np.linalg.norm(res_pos[:, None] - lig[None], axis=-1).min(axis=1) < contact
        hot = near & np.isin(types, HOT_RESIDUES)
        ys.append(4.0 + float(hot.sum()))
        parts.append(complex_graph(res_pos, types, lig, rng.integers(0, 4, size=n_l), pocket_radius=None,
                                   protein_mask=hot))
    return _batch(parts, ys, dtype)

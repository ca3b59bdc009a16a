"""Molecule parsing, canonical SMILES and motif drawings (RDKit)."""

from __future__ import annotations

import warnings
from collections.abc import Iterable, Sequence

from rdkit import Chem, RDLogger

__all__ = ["canonical_smiles", "draw_motifs", "parse_molecule"]

RDLogger.DisableLog("rdApp.*")  # type: ignore[attr-defined]  # RDKit stubs lack DisableLog


def parse_molecule(smiles: str, *, index: int | None = None) -> Chem.Mol:
    """A kekulised, stereo-free, single-fragment molecule with at least one bond.

    Parameters
    ----------
    smiles : str
        The SMILES string.
    index : int, optional
        Position of the molecule in its list, quoted in the error message.

    Returns
    -------
    rdkit.Chem.Mol
        Kekulised molecule (single, double and triple bonds only) whose hydrogens are stored as explicit
        counts on the heavy atoms (hydrogen atoms written in the SMILES, such as ``[H]OCC``, become counts;
        isotopic hydrogens such as ``[2H]`` stay atoms); stereochemistry removed, with a ``UserWarning``
        when the SMILES had any.

    Raises
    ------
    ValueError
        When the string is empty or not a str, RDKit cannot parse or kekulise it, it has several fragments,
        or it has no bond.
    """
    where = f"molecule {index} " if index is not None else "molecule "
    if not isinstance(smiles, str) or not smiles.strip():
        raise ValueError(f"{where}{smiles!r}: expected a non-empty SMILES string")
    mol = Chem.MolFromSmiles(smiles.strip(), sanitize=False)
    if mol is None:
        raise ValueError(f"{where}{smiles!r}: RDKit cannot parse this SMILES")
    try:
        Chem.SanitizeMol(mol)
        mol = Chem.RemoveHs(mol)  # "[H]OCC" is ethanol, as RDKit reads it by default
        Chem.Kekulize(mol, clearAromaticFlags=True)
    except Exception as exc:  # RDKit raises several exception types (AtomValenceException, KekulizeException)
        raise ValueError(f"{where}{smiles!r}: RDKit cannot sanitise or kekulise it ({exc})") from exc
    Chem.AssignStereochemistry(mol, cleanIt=True, force=True)
    if any(a.GetChiralTag() != Chem.ChiralType.CHI_UNSPECIFIED for a in mol.GetAtoms()) or \
            any(b.GetStereo() != Chem.BondStereo.STEREONONE for b in mol.GetBonds()):
        warnings.warn(f"{where}{smiles!r}: stereochemistry removed; the grammar keeps element, charge, "
                      "hydrogen count and isotope of each atom, so its molecules are stereo-free",
                      UserWarning, stacklevel=2)
    Chem.RemoveStereochemistry(mol)
    if len(Chem.GetMolFrags(mol)) > 1:
        raise ValueError(f"{where}{smiles!r}: has {len(Chem.GetMolFrags(mol))} fragments; one connected "
                         "molecule is accepted")
    if mol.GetNumBonds() == 0:
        raise ValueError(f"{where}{smiles!r}: has no bond between heavy atoms; a grammar needs at least one bond")
    for bond in mol.GetBonds():
        if bond.GetBondType() not in _ORDERS:
            raise ValueError(f"{where}{smiles!r}: bond {bond.GetIdx()} has type {bond.GetBondType()}; accepted "
                             "after kekulisation: SINGLE, DOUBLE, TRIPLE")
    for atom in mol.GetAtoms():
        atom.SetNumExplicitHs(atom.GetTotalNumHs())
        atom.SetNoImplicit(True)
    return mol


_ORDERS = {Chem.BondType.SINGLE: 1, Chem.BondType.DOUBLE: 2, Chem.BondType.TRIPLE: 3}
_TYPES = {v: k for k, v in _ORDERS.items()}


def bond_order(bond: Chem.Bond) -> int:
    """Bond order 1, 2 or 3 of a kekulised bond."""
    return _ORDERS[bond.GetBondType()]


def atom_label(atom: Chem.Atom) -> tuple[str, int, int, int]:
    """(symbol, formal charge, hydrogen count, isotope): everything the grammar keeps of an atom."""
    return (atom.GetSymbol(), atom.GetFormalCharge(), atom.GetTotalNumHs(), atom.GetIsotope())


def canonical_smiles(smiles_or_mol: str | Chem.Mol) -> str | None:
    """RDKit canonical SMILES without stereochemistry, or None when RDKit cannot parse or sanitise it.

    Parameters
    ----------
    smiles_or_mol : str or rdkit.Chem.Mol
        A SMILES string or a molecule.

    Returns
    -------
    str or None
        The canonical SMILES (aromatic form), or None for an invalid input.

    Examples
    --------
    >>> canonical_smiles("C1=CC=CC=C1O")
    'Oc1ccccc1'
    >>> canonical_smiles("C1CC") is None
    True
    """
    mol = Chem.MolFromSmiles(smiles_or_mol) if isinstance(smiles_or_mol, str) else Chem.Mol(smiles_or_mol)
    if mol is None:
        return None
    try:
        Chem.SanitizeMol(mol)
    except Exception:  # invalid valence or aromaticity
        return None
    Chem.RemoveStereochemistry(mol)
    return Chem.MolToSmiles(mol)


def build_molecule(atoms: Sequence[tuple[tuple[str, int, int, int], Sequence[int]]],
                   node_order: dict[int, int]) -> Chem.Mol | None:
    """Molecule from atom hyperedges over bond nodes; None when a bond node lacks exactly two atoms.

    Parameters
    ----------
    atoms : sequence of (label, nodes)
        Each atom's label (see ``atom_label``) and the bond nodes it touches.
    node_order : dict of int to int
        Bond order of every bond node.

    Returns
    -------
    rdkit.Chem.Mol or None
        The sanitised molecule, or None when the hypergraph is not a molecule (a bond node with other
        than two atoms, two bonds between one pair of atoms, a valence or kekulisation failure).
    """
    ends: dict[int, list[int]] = {node: [] for node in node_order}
    mol = Chem.RWMol()
    for k, (label, nodes) in enumerate(atoms):
        symbol, charge, hs, isotope = label
        atom = Chem.Atom(symbol)
        atom.SetFormalCharge(int(charge))
        atom.SetNumExplicitHs(int(hs))
        atom.SetNoImplicit(True)
        atom.SetIsotope(int(isotope))
        mol.AddAtom(atom)
        for node in nodes:
            ends[node].append(k)
    pairs = set()
    for node, both in ends.items():
        if len(both) != 2:
            return None
        pair = (min(both), max(both))
        if pair in pairs or both[0] == both[1]:
            return None
        pairs.add(pair)
        mol.AddBond(both[0], both[1], _TYPES[node_order[node]])
    out = mol.GetMol()
    try:
        Chem.SanitizeMol(out)
    except Exception:  # valence / kekulisation errors of a sampled structure
        return None
    return out


def draw_motifs(mol: Chem.Mol, motifs: Sequence[Iterable[int]], *, size: int = 400,
                isolated: int | None = None) -> bytes:
    """PNG of ``mol`` with every motif's bonds highlighted in its own colour and numbered.

    Parameters
    ----------
    mol : rdkit.Chem.Mol
        The molecule.
    motifs : sequence of iterables of int
        Bond indices of each motif.
    size : int, default 400
        Width and height in pixels.
    isolated : int, optional
        Draw only this motif highlighted (the paper's isolated view).

    Returns
    -------
    bytes
        PNG image.
    """
    from rdkit.Chem.Draw import rdMolDraw2D

    palette = [(0.90, 0.30, 0.30), (0.30, 0.60, 0.90), (0.35, 0.75, 0.35), (0.95, 0.65, 0.20),
               (0.65, 0.40, 0.85), (0.20, 0.75, 0.75), (0.85, 0.45, 0.65), (0.60, 0.60, 0.25)]
    copy = Chem.Mol(mol)
    bond_colors: dict[int, tuple[float, float, float]] = {}
    atom_colors: dict[int, tuple[float, float, float]] = {}
    for k, motif in enumerate(motifs):
        if isolated is not None and k != isolated:
            continue
        color = palette[k % len(palette)]
        bonds = sorted(motif)
        for b in bonds:
            bond_colors.setdefault(b, color)
            bond = copy.GetBondWithIdx(b)
            for a in (bond.GetBeginAtomIdx(), bond.GetEndAtomIdx()):
                atom_colors.setdefault(a, color)
        if bonds:
            copy.GetBondWithIdx(bonds[0]).SetProp("bondNote", str(k))
    drawer = rdMolDraw2D.MolDraw2DCairo(size, size)
    rdMolDraw2D.PrepareAndDrawMolecule(drawer, copy, highlightAtoms=list(atom_colors),
                                       highlightAtomColors=atom_colors, highlightBonds=list(bond_colors),
                                       highlightBondColors=bond_colors)
    drawer.FinishDrawing()
    return drawer.GetDrawingText()

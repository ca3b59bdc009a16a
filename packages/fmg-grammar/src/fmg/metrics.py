"""DEG's generation metrics: validity, uniqueness, novelty, diversity, class membership, SA and an RS proxy."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np
from rdkit import Chem

from fmg.chem import canonical_smiles

__all__ = ["MEMBERSHIP", "Metrics", "chamfer_distance", "diversity", "evaluate", "membership", "sa_scores"]

# Class-membership SMARTS (minimum number of matches) that accept every molecule of the DEG training sets.
MEMBERSHIP: dict[str, tuple[tuple[str, ...], int]] = {
    "isocyanates": (("[NX2]=C=O",), 2),
    "acrylates": (("[CH2]=[C;H1,$(C[CH3])]C(=O)O[C,c]",), 1),
    "chain_extenders": (("[OX2H]", "[NX3;H2,H1;!$(NC=O)]"), 2),
}


def _mols(smiles: Sequence[str]) -> list[Chem.Mol]:
    if isinstance(smiles, str):
        raise ValueError(f"expected a sequence of SMILES, not the single string {smiles!r}")
    mols = []
    for i, s in enumerate(smiles):
        if not isinstance(s, str):
            raise ValueError(f"molecule {i} {s!r}: expected a SMILES string")
        m = Chem.MolFromSmiles(s)
        if m is None:
            raise ValueError(f"molecule {i} {s!r}: RDKit cannot parse it")
        if m.GetNumAtoms() == 0:  # "" parses to an empty molecule, whose fingerprint is all zeros
            raise ValueError(f"molecule {i} {s!r}: RDKit reads no atom in it")
        mols.append(m)
    return mols


def _fingerprints(smiles: Sequence[str], radius: int, n_bits: int) -> np.ndarray:
    from rdkit.Chem import rdFingerprintGenerator

    for name, value, low in (("radius", radius, 0), ("n_bits", n_bits, 1)):
        if isinstance(value, bool) or not isinstance(value, int | np.integer) or value < low:
            kind = "a positive int" if low else "an int >= 0"
            raise ValueError(f"{name} must be {kind}, got {value!r}")

    gen = rdFingerprintGenerator.GetMorganGenerator(radius=radius, fpSize=n_bits)
    return np.stack([gen.GetFingerprintAsNumPy(m).astype(np.float64) for m in _mols(smiles)])


def _tanimoto(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    inter = x @ y.T
    union = x.sum(axis=1)[:, None] + y.sum(axis=1)[None, :] - inter
    return np.divide(inter, union, out=np.zeros_like(inter), where=union > 0)


def chamfer_distance(samples: Sequence[str], reference: Sequence[str], *, radius: int = 3,
                     n_bits: int = 2048) -> float:
    """Chamfer distance between two molecule sets under the Tanimoto distance of Morgan fingerprints.

    ``CD(A, B) = mean_{a in A} min_{b in B} d(a, b) + mean_{b in B} min_{a in A} d(a, b)`` with
    ``d = 1 - Tanimoto`` (Morgan radius 3, 2048 bits, as ``diversity``). The first term is how far the
    samples lie from the nearest reference molecule, the second how well the samples cover the reference
    set; 0 when both sets hold the same fingerprints, at most 2.

    Parameters
    ----------
    samples, reference : sequence of str
        Non-empty sets of valid molecules (e.g. generated and training molecules).
    radius : int, default 3
        Morgan radius.
    n_bits : int, default 2048
        Fingerprint length.

    Returns
    -------
    float

    Examples
    --------
    >>> from fmg.metrics import chamfer_distance
    >>> chamfer_distance(["CCO", "c1ccccc1"], ["c1ccccc1", "OCC"])
    0.0
    >>> round(chamfer_distance(["CCO"], ["CCO", "CCCO"]), 4)
    0.2222
    """
    if isinstance(samples, str) or isinstance(reference, str):
        raise ValueError("chamfer_distance takes two sequences of SMILES, not a single string")
    if len(samples) == 0 or len(reference) == 0:
        raise ValueError(f"chamfer_distance needs two non-empty sets, got {len(samples)} and {len(reference)}")
    dist = 1.0 - _tanimoto(_fingerprints(samples, radius, n_bits), _fingerprints(reference, radius, n_bits))
    return float(dist.min(axis=1).mean() + dist.min(axis=0).mean())


def diversity(smiles: Sequence[str], *, radius: int = 3, n_bits: int = 2048) -> float:
    """DEG's internal diversity: 1 - mean pairwise Tanimoto similarity of Morgan fingerprints.

    Parameters
    ----------
    smiles : sequence of str
        At least two valid molecules (duplicates count as pairs with similarity 1).
    radius : int, default 3
        Morgan radius.
    n_bits : int, default 2048
        Fingerprint length.

    Returns
    -------
    float
        ``1 - sum_{i<j} T(i, j) / (n (n - 1) / 2)``.

    Examples
    --------
    >>> from fmg.metrics import diversity
    >>> round(diversity(["CCO", "CCO"]), 12)
    0.0
    """
    if isinstance(smiles, str):
        raise ValueError("diversity takes a sequence of SMILES, not a single string")
    if len(smiles) < 2:
        raise ValueError(f"diversity needs at least two molecules, got {len(smiles)}")
    x = _fingerprints(smiles, radius, n_bits)
    sim = _tanimoto(x, x)
    n = len(smiles)
    return float(1.0 - sim[np.triu_indices(n, 1)].sum() / (n * (n - 1) / 2))


def membership(smiles: Sequence[str], monomer_class: str) -> np.ndarray:
    """Whether each molecule belongs to a DEG monomer class (by the ``MEMBERSHIP`` SMARTS).

    Parameters
    ----------
    smiles : sequence of str
        Valid molecules.
    monomer_class : {"isocyanates", "acrylates", "chain_extenders"}
        The class.

    Returns
    -------
    numpy.ndarray of bool, shape (n,)
    """
    if monomer_class not in MEMBERSHIP:
        raise ValueError(f"unknown monomer class {monomer_class!r}; accepted: {', '.join(MEMBERSHIP)}")
    patterns, minimum = MEMBERSHIP[monomer_class]
    compiled = [Chem.MolFromSmarts(p) for p in patterns]
    return np.array([sum(len(m.GetSubstructMatches(p)) for p in compiled) >= minimum for m in _mols(smiles)])


def sa_scores(smiles: Sequence[str]) -> np.ndarray:
    """Synthetic accessibility scores (Ertl and Schuffenhauer 2009, RDKit Contrib), 1 easy to 10 hard."""
    return np.array([_sascorer().calculateScore(m) for m in _mols(smiles)])


def _sascorer() -> Any:
    try:
        from rdkit.Contrib.SA_Score import sascorer
    except ImportError:  # wheels whose Contrib folder is not a package
        import importlib.util
        import os

        from rdkit import RDConfig

        path = os.path.join(RDConfig.RDContribDir, "SA_Score", "sascorer.py")
        spec = importlib.util.spec_from_file_location("sascorer", path)
        if spec is None or spec.loader is None:
            raise ImportError(f"RDKit's SA_Score contribution is missing (looked for {path})") from None
        sascorer = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(sascorer)
    return sascorer


@dataclass(frozen=True)
class Metrics:
    """DEG's metrics of a set of generated molecules.

    Attributes
    ----------
    n : int
        Number of generated strings.
    valid : float
        Share RDKit parses and sanitises.
    unique : float
        Distinct canonical SMILES among the valid ones, over the valid ones.
    novelty : float
        Share of the distinct valid ones not in the training set.
    diversity : float
        ``diversity`` of the valid ones (duplicates included), NaN for fewer than two.
    membership : float
        Share of the valid ones in ``monomer_class`` (NaN when no class is given).
    sa_mean : float
        Mean SA score of the valid ones.
    rs_proxy : float
        Share of valid ones with SA score <= ``sa_threshold``: a cheap proxy, not Retro*'s
        retrosynthesis success rate.
    chamfer : float
        ``chamfer_distance`` between the valid ones and the training set.
    rs : float
        Share of the valid ones a ``planner`` (e.g. ``fmg.retro.RetroPlanner``) finds a route for; NaN
        when no planner is given.
    """

    n: int
    valid: float
    unique: float
    novelty: float
    diversity: float
    membership: float
    sa_mean: float
    rs_proxy: float
    chamfer: float = float("nan")
    rs: float = float("nan")

    def as_dict(self) -> dict[str, float]:
        """The fields as a dict."""
        return asdict(self)


def evaluate(samples: Sequence[str], train: Sequence[str], monomer_class: str | None = None, *,
             sa_threshold: float = 3.5, planner: Any = None) -> Metrics:
    """Validity, uniqueness, novelty, diversity, membership, mean SA and the RS proxy of ``samples``.

    Parameters
    ----------
    samples : sequence of str
        Generated SMILES.
    train : sequence of str
        The training molecules (for novelty and Chamfer); each must be a valid molecule.
    monomer_class : str, optional
        A key of ``MEMBERSHIP`` for the membership share.
    sa_threshold : float, default 3.5
        SA score at or below which a molecule counts as synthesizable in the RS proxy.
    planner : object with ``plan(smiles)``, optional
        A retrosynthesis planner (``fmg.retro.RetroPlanner`` around your one-step model); its share of
        solved molecules is ``rs``.

    Returns
    -------
    Metrics
    """
    for name, value in (("samples", samples), ("train", train)):
        if isinstance(value, str):  # would be read as one molecule per character
            raise ValueError(f"{name} must be a sequence of SMILES, not the single string {value!r}")
    if len(samples) == 0:
        raise ValueError("samples is empty")
    canon = [canonical_smiles(s) if isinstance(s, str) and s.strip() else None for s in samples]
    valid = [c for c in canon if c]  # "." and the like parse to a molecule with no atom: not valid
    train_canon = set()
    for i, s in enumerate(train):
        c = canonical_smiles(s) if isinstance(s, str) and s.strip() else None
        if not c:
            raise ValueError(f"train molecule {i} {s!r}: RDKit cannot parse or sanitise it")
        train_canon.add(c)
    distinct = set(valid)
    sa = sa_scores(valid) if valid else np.array([])
    return Metrics(
        n=len(samples), valid=len(valid) / len(samples),
        unique=len(distinct) / len(valid) if valid else float("nan"),
        novelty=len(distinct - train_canon) / len(distinct) if distinct else float("nan"),
        diversity=diversity(valid) if len(valid) >= 2 else float("nan"),
        membership=float(membership(valid, monomer_class).mean()) if monomer_class and valid else float("nan"),
        sa_mean=float(sa.mean()) if valid else float("nan"),
        rs_proxy=float((sa <= sa_threshold).mean()) if valid else float("nan"),
        chamfer=chamfer_distance(valid, sorted(train_canon)) if valid and train_canon else float("nan"),
        rs=float(np.mean([planner.plan(s) is not None for s in valid])) if planner is not None and valid
        else float("nan"))

"""DEG's generation metrics: validity, uniqueness, novelty, diversity, class membership, SA and an RS proxy."""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

import numpy as np
from rdkit import Chem

from fmg.chem import canonical_smiles

__all__ = ["ALERTS", "GUACAMOL_DESCRIPTORS", "MEMBERSHIP", "Metrics", "TrainingComparison", "alert_frequencies",
           "chamfer_distance", "compare_to_training", "diversity", "evaluate", "guacamol_kl", "membership",
           "ring_sizes", "sa_scores"]

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
    rows = [gen.GetFingerprintAsNumPy(m).astype(np.float64) for m in _mols(smiles)]
    return np.stack(rows) if rows else np.zeros((0, n_bits))


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
    from rdkit import DataStructs
    from rdkit.Chem import rdFingerprintGenerator

    if isinstance(smiles, str):
        raise ValueError("diversity takes a sequence of SMILES, not a single string")
    if len(smiles) < 2:
        raise ValueError(f"diversity needs at least two molecules, got {len(smiles)}")
    _fingerprints([], radius, n_bits)  # validates radius and n_bits
    gen = rdFingerprintGenerator.GetMorganGenerator(radius=radius, fpSize=n_bits)
    fps = [gen.GetFingerprint(m) for m in _mols(smiles)]
    n = len(fps)
    # one row of the upper triangle at a time: memory O(n), as DEG's loop, instead of a dense n x n matrix
    total = 0.0
    for i in range(n - 1):
        total += math.fsum(DataStructs.BulkTanimotoSimilarity(fps[i], fps[i + 1:]))
    return float(1.0 - total / (n * (n - 1) / 2))


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


# --------------------------------------------------------------------------------------------------------
# What chemists check (MOSES / GuacaMol style): size and ring distributions, structural alerts, fragment and
# scaffold similarity, and GuacaMol's KL divergence over physico-chemical descriptors. FCD needs the
# pretrained ChemNet weights, which no installable package ships for offline use, so it is not computed.
# --------------------------------------------------------------------------------------------------------

ALERTS: dict[str, str] = {
    "peroxide": "[OX2]-[OX2]",
    "acyl halide": "[CX3](=O)[F,Cl,Br,I]",
    "N-O single bond": "[#7]-[OX2]",
    "azide": "N=[N+]=[N-]",
    "aldehyde": "[CX3H1](=O)[#6]",
}
"""SMARTS of reactive or unstable groups counted by ``alert_frequencies`` (beside RDKit's PAINS and Brenk)."""

GUACAMOL_DESCRIPTORS = ("BertzCT", "MolLogP", "MolWt", "TPSA", "NumHAcceptors", "NumHDonors", "NumRotatableBonds",
                        "NumAliphaticRings", "NumAromaticRings")
"""The physico-chemical descriptors of GuacaMol's KL-divergence benchmark (the last five are discrete)."""
_DISCRETE = {"NumHAcceptors", "NumHDonors", "NumRotatableBonds", "NumAliphaticRings", "NumAromaticRings"}


def ring_sizes(smiles: Sequence[str]) -> list[list[int]]:
    """The size of every ring (RDKit's smallest set of smallest rings) of each molecule.

    Examples
    --------
    >>> from fmg.metrics import ring_sizes
    >>> ring_sizes(["c1ccccc1C1CC1", "CCO"])
    [[3, 6], []]
    """
    return [sorted(len(r) for r in m.GetRingInfo().AtomRings()) for m in _mols(smiles)]


def _filter_catalog(name: str) -> Any:
    from rdkit.Chem.FilterCatalog import FilterCatalog, FilterCatalogParams

    params = FilterCatalogParams()
    params.AddCatalog(getattr(FilterCatalogParams.FilterCatalogs, name))
    return FilterCatalog(params)


def alert_frequencies(smiles: Sequence[str]) -> dict[str, float]:
    """Share of molecules with each structural alert.

    Keys: every ``ALERTS`` group, ``"PAINS"`` and ``"Brenk"`` (any match of RDKit's FilterCatalog PAINS
    A/B/C and Brenk sets), and ``"Brenk: <name>"`` for each Brenk alert that matches at least one molecule.

    Examples
    --------
    >>> from fmg.metrics import alert_frequencies
    >>> freq = alert_frequencies(["CCOOCC", "CCO"])
    >>> freq["peroxide"], freq["Brenk: peroxide"]
    (0.5, 0.5)
    """
    mols = _mols(smiles)
    n = len(mols)
    out: dict[str, float] = {}
    for name, smarts in ALERTS.items():
        pattern = Chem.MolFromSmarts(smarts)
        out[name] = sum(m.HasSubstructMatch(pattern) for m in mols) / n
    pains, brenk = _filter_catalog("PAINS"), _filter_catalog("BRENK")
    out["PAINS"] = sum(pains.HasMatch(m) for m in mols) / n
    names: Counter[str] = Counter()
    any_brenk = 0
    for m in mols:
        hits = {e.GetDescription() for e in brenk.GetMatches(m)}
        any_brenk += bool(hits)
        names.update(hits)
    out["Brenk"] = any_brenk / n
    for name, count in sorted(names.items()):
        out[f"Brenk: {name}"] = count / n
    return out


def _descriptor_values(mols: Sequence[Chem.Mol]) -> dict[str, np.ndarray]:
    from rdkit.Chem import Descriptors

    return {name: np.array([getattr(Descriptors, name)(m) for m in mols], dtype=np.float64)
            for name in GUACAMOL_DESCRIPTORS}


def _nearest_neighbour_similarity(mols: Sequence[Chem.Mol]) -> np.ndarray:
    """Each molecule's largest Tanimoto similarity to another molecule of its own set (GuacaMol's tenth term)."""
    from rdkit import DataStructs
    from rdkit.Chem import rdFingerprintGenerator

    gen = rdFingerprintGenerator.GetMorganGenerator(radius=2, fpSize=2048)
    fps = [gen.GetFingerprint(m) for m in mols]
    out = np.zeros(len(fps))
    for i, fp in enumerate(fps):
        sims = DataStructs.BulkTanimotoSimilarity(fp, fps[:i] + fps[i + 1:])
        out[i] = max(sims, default=0.0)
    return out


def _kl(reference: np.ndarray, sampled: np.ndarray, discrete: bool) -> float:
    """GuacaMol's KL(reference || sampled): 10-bin histograms for counts, Gaussian KDEs on 1000 points otherwise."""
    from scipy.stats import entropy, gaussian_kde

    if discrete:
        p, bins = np.histogram(reference, bins=10, density=True)
        counts, _ = np.histogram(sampled, bins=bins)
        # GuacaMol's density=True divides 0 by 0 when no sample falls in the reference's range (NaN score);
        # an empty histogram is the farthest case, a zero density
        q = counts / (counts.sum() * np.diff(bins)) if counts.sum() else np.zeros_like(p)
        return float(entropy(p + 1e-10, q + 1e-10))
    grid = np.linspace(min(reference.min(), sampled.min()), max(reference.max(), sampled.max()), 1000)

    def density(x: np.ndarray) -> np.ndarray:
        if np.ptp(x) == 0:  # a KDE needs spread: a point mass becomes a narrow bump
            x = x + np.linspace(-1e-3, 1e-3, x.size) * max(1.0, abs(float(x[0])))
        return gaussian_kde(x)(grid)

    return float(entropy(density(reference) + 1e-10, density(sampled) + 1e-10))


def guacamol_kl(samples: Sequence[str], reference: Sequence[str]) -> tuple[float, dict[str, float]]:
    """GuacaMol's KL-divergence score of ``samples`` against ``reference`` and the divergence per descriptor.

    The score is ``mean_i exp(-KL_i)`` over ``GUACAMOL_DESCRIPTORS`` and the within-set nearest-neighbour
    similarity (Morgan radius 2, 2048 bits), as Brown et al. (2019) define it: 1 when the distributions
    match. Both sets need at least two molecules.

    Returns
    -------
    (float, dict of str to float)
        The score and ``KL_i`` per term.
    """
    a, b = _mols(reference), _mols(samples)
    if len(a) < 2 or len(b) < 2:
        raise ValueError(f"guacamol_kl needs at least two molecules in each set, got {len(b)} and {len(a)}")
    ref, smp = _descriptor_values(a), _descriptor_values(b)
    kls = {name: _kl(ref[name], smp[name], name in _DISCRETE) for name in GUACAMOL_DESCRIPTORS}
    kls["internal similarity"] = _kl(_nearest_neighbour_similarity(a), _nearest_neighbour_similarity(b), False)
    return float(np.mean([math.exp(-k) for k in kls.values()])), kls


def _cosine(a: Counter[str], b: Counter[str]) -> float:
    keys = sorted(set(a) | set(b))
    x = np.array([a[k] for k in keys], dtype=np.float64)
    y = np.array([b[k] for k in keys], dtype=np.float64)
    norm = float(np.linalg.norm(x) * np.linalg.norm(y))
    return float(x @ y / norm) if norm > 0 else float("nan")


def _fragments(mols: Sequence[Chem.Mol]) -> Counter[str]:
    """BRICS fragments as MOSES counts them: the molecule cut at every BRICS bond (linear in its size)."""
    from rdkit.Chem import BRICS

    out: Counter[str] = Counter()
    for m in mols:
        out.update(Chem.MolToSmiles(BRICS.BreakBRICSBonds(m)).split("."))
    return out


def _scaffolds(mols: Sequence[Chem.Mol], min_rings: int = 2) -> Counter[str]:
    """Bemis-Murcko scaffolds with at least ``min_rings`` rings, as MOSES counts them for Scaf.

    An acyclic molecule's scaffold is empty; counting it would make any two acyclic sets agree perfectly.
    """
    from rdkit.Chem.Scaffolds import MurckoScaffold

    out: Counter[str] = Counter()
    for m in mols:
        scaffold = MurckoScaffold.GetScaffoldForMol(m)
        if scaffold.GetNumAtoms() and scaffold.GetRingInfo().NumRings() >= min_rings:
            out[Chem.MolToSmiles(scaffold)] += 1
    return out


def _wasserstein(a: np.ndarray, b: np.ndarray) -> float:
    from scipy.stats import wasserstein_distance

    return float(wasserstein_distance(a, b))


@dataclass(frozen=True)
class TrainingComparison:
    """How the samples' chemistry compares with the training set's (MOSES / GuacaMol style).

    Attributes
    ----------
    n_samples, n_train : int
        Valid molecules compared.
    atoms_mean, atoms_max, train_atoms_mean, train_atoms_max : float
        Heavy-atom counts.
    atoms_w1 : float
        Wasserstein-1 distance between the heavy-atom-count distributions (atoms).
    ring_size_tv : float
        Total-variation distance between the ring-size histograms (sizes 3-8 and "larger"), pooled over
        rings; 0 when both sets have no ring.
    rings_per_molecule, train_rings_per_molecule : float
        Mean ring count.
    large_ring_share : float
        Share of samples with a ring larger than every training ring.
    max_ring_size, train_max_ring_size : int
        Largest ring.
    alerts, train_alerts : dict of str to float
        ``alert_frequencies`` of each set.
    fragment_similarity, scaffold_similarity : float
        Cosine similarity of BRICS-fragment and Bemis-Murcko-scaffold counts (MOSES's Frag and Scaf; as in
        MOSES, only scaffolds with two or more rings count, so Scaf is NaN when a set has none).
    kl_score : float
        GuacaMol's KL-divergence score (``guacamol_kl``); NaN with fewer than two molecules in a set.
    kl_divergences : dict of str to float
        GuacaMol's divergence per descriptor.
    """

    n_samples: int
    n_train: int
    atoms_mean: float
    atoms_max: int
    train_atoms_mean: float
    train_atoms_max: int
    atoms_w1: float
    ring_size_tv: float
    rings_per_molecule: float
    train_rings_per_molecule: float
    large_ring_share: float
    max_ring_size: int
    train_max_ring_size: int
    fragment_similarity: float
    scaffold_similarity: float
    kl_score: float
    alerts: dict[str, float] = field(default_factory=dict)
    train_alerts: dict[str, float] = field(default_factory=dict)
    kl_divergences: dict[str, float] = field(default_factory=dict)

    def as_dict(self) -> dict[str, Any]:
        """The fields as a dict."""
        return asdict(self)


def _ring_histogram(sizes: Sequence[Sequence[int]]) -> np.ndarray:
    flat = [min(s, 9) for ring in sizes for s in ring]  # 3..8, and 9 for "larger than 8"
    counts = np.bincount(np.asarray(flat, dtype=np.int64), minlength=10)[3:10].astype(np.float64)
    return counts / counts.sum() if counts.sum() else counts


def compare_to_training(samples: Sequence[str], train: Sequence[str]) -> TrainingComparison:
    """Compare generated molecules with the training set: sizes, rings, alerts, fragments, scaffolds, GuacaMol KL.

    FCD (Frechet ChemNet distance) is not computed: it needs ChemNet weights that are not available offline.

    Parameters
    ----------
    samples : sequence of str
        Valid generated SMILES (duplicates count, as in the samples' distribution).
    train : sequence of str
        The training molecules.

    Returns
    -------
    TrainingComparison

    Examples
    --------
    >>> from fmg.metrics import compare_to_training
    >>> report = compare_to_training(["CCOOC", "CCO", "c1ccccc1"], ["CCO", "CCCO", "c1ccccc1O"])
    >>> report.alerts["peroxide"], report.train_alerts["peroxide"], report.ring_size_tv
    (0.3333333333333333, 0.0, 0.0)
    """
    smp, ref = _mols(samples), _mols(train)
    if not smp or not ref:
        raise ValueError(f"compare_to_training needs non-empty sets, got {len(smp)} samples and {len(ref)} "
                         "training molecules")
    atoms = np.array([m.GetNumHeavyAtoms() for m in smp], dtype=np.float64)
    train_atoms = np.array([m.GetNumHeavyAtoms() for m in ref], dtype=np.float64)
    rings = [[len(r) for r in m.GetRingInfo().AtomRings()] for m in smp]
    train_rings = [[len(r) for r in m.GetRingInfo().AtomRings()] for m in ref]
    train_max_ring = max((s for r in train_rings for s in r), default=0)
    h, ht = _ring_histogram(rings), _ring_histogram(train_rings)
    tv = 0.5 * float(np.abs(h - ht).sum()) if h.sum() and ht.sum() else float(h.sum() != ht.sum())
    try:
        kl_score, kls = guacamol_kl(samples, train)
    except ValueError:
        kl_score, kls = float("nan"), {}
    return TrainingComparison(
        n_samples=len(smp), n_train=len(ref), atoms_mean=float(atoms.mean()), atoms_max=int(atoms.max()),
        train_atoms_mean=float(train_atoms.mean()), train_atoms_max=int(train_atoms.max()),
        atoms_w1=_wasserstein(atoms, train_atoms), ring_size_tv=tv,
        rings_per_molecule=float(np.mean([len(r) for r in rings])),
        train_rings_per_molecule=float(np.mean([len(r) for r in train_rings])),
        large_ring_share=float(np.mean([max(r, default=0) > train_max_ring for r in rings])),
        max_ring_size=max((s for r in rings for s in r), default=0), train_max_ring_size=train_max_ring,
        fragment_similarity=_cosine(_fragments(smp), _fragments(ref)),
        scaffold_similarity=_cosine(_scaffolds(smp), _scaffolds(ref)),
        kl_score=kl_score, alerts=alert_frequencies(samples), train_alerts=alert_frequencies(train),
        kl_divergences=kls)

"""The ``demo`` and ``reproduce`` commands.

``demo`` fits a grammar on the isocyanates with the heuristic judge, writes its rule card, samples and
DEG's metrics. ``reproduce`` runs the paper's comparison at CPU scale: three DEG sets x {FMG, the three
ablations, STONED} x seeds, with DEG's metrics.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

import numpy as np
from icml25_shared.cli import RunContext, progress

from fmg.data import load_dataset
from fmg.judges import HeuristicChemJudge
from fmg.metrics import compare_to_training, evaluate
from fmg.model import FMG

__all__ = ["CONFIGS", "SETS", "demo", "draw_grammar_card", "grammar_card", "make_judge", "reproduce", "reproduce_figure",
           "stoned"]

SETS = ("isocyanates", "acrylates", "chain_extenders")
CONFIGS: dict[str, dict[str, Any]] = {
    "FMG": {},
    "no merge": {"merge": False},
    "random root": {"root": "random"},
    "max-spanning tree": {"tree": "max-spanning"},
}
#: sampling options of the rows of ``reproduce`` that differ from the default sampler (context 0, training budget)
SAMPLING: dict[str, dict[str, Any]] = {"FMG, context-free lookup": {"context": None, "budget": None}}
#: the grammar each ``SAMPLING`` row samples from
SAMPLING_CONFIG = {"FMG, context-free lookup": "FMG"}
#: chemistry columns of ``reproduce`` (``compare_to_training`` of independent draws against the training set)
CHEMISTRY = ("peroxide", "large_ring_share", "ring_size_tv", "atoms_mean", "atoms_max", "atoms_w1", "PAINS", "Brenk",
             "fragment_similarity", "scaffold_similarity", "kl_score")


def chemistry_row(samples: Sequence[str], train: Sequence[str]) -> dict[str, float]:
    """The ``CHEMISTRY`` columns of ``samples`` against ``train`` (see ``fmg.metrics.compare_to_training``)."""
    report = compare_to_training(samples, train)
    row = {k: float(getattr(report, k)) for k in CHEMISTRY if hasattr(report, k)}
    row.update({k: report.alerts[k] for k in ("peroxide", "PAINS", "Brenk")})
    row.update({f"train_{k}": report.train_alerts[k] for k in ("peroxide", "PAINS", "Brenk")})
    row.update(train_atoms_mean=report.train_atoms_mean, train_atoms_max=float(report.train_atoms_max),
               train_max_ring_size=float(report.train_max_ring_size), max_ring_size=float(report.max_ring_size))
    return row


def grammar_card(model: FMG, top: int = 15) -> list[dict[str, Any]]:
    """The most used rules: left-hand side, probability, count, right-hand side atoms and nonterminals."""
    g = model.grammar_
    p = g.probabilities()
    order = sorted(range(g.n_rules), key=lambda i: (-g.counts[i], i))[:top]
    return [{"rule": i, "lhs": "S" if not g.rules[i].lhs else str(list(g.rules[i].lhs)), "p": round(float(p[i]), 4),
             "count": g.counts[i], "motif": g.sources[i], "nonterminals": len(g.rules[i].nonterminals),
             "description": g.descriptions[i].split(": ", 1)[-1]} for i in order]


def draw_grammar_card(model: FMG, path: Any, top: int = 12) -> None:
    """PNG grid of the most used rules' motifs, each captioned with its rule index, probability and description."""
    from rdkit import Chem
    from rdkit.Chem import Draw

    mols, legends = [], []
    for row in grammar_card(model, top):
        mol = Chem.MolFromSmiles(row["motif"], sanitize=False)
        if mol is None:
            continue
        mol.UpdatePropertyCache(strict=False)
        mols.append(mol)
        legends.append(f"rule {row['rule']} ({row['lhs']}) p={row['p']}: {row['description']}"[:60])
    Draw.MolsToGridImage(mols, molsPerRow=4, subImgSize=(260, 200), legends=legends).save(path)


def stoned(train: Sequence[str], n: int, *, random_state: int, n_mutations: int = 1) -> list[str]:
    """STONED baseline (Nigam et al. 2021): random SELFIES token mutations of training molecules.

    Parameters
    ----------
    train : sequence of str
        Training SMILES.
    n : int
        Samples.
    random_state : int
        Seed.
    n_mutations : int, default 1
        Token replacements, insertions or deletions per sample.

    Returns
    -------
    list of str
        Decoded SMILES (every SELFIES string decodes to a valid molecule).
    """
    import selfies as sf

    rng = np.random.default_rng(random_state)
    alphabet = sorted(sf.get_semantic_robust_alphabet())
    encoded = [list(sf.split_selfies(sf.encoder(s))) for s in train]
    out = []
    for _ in range(n):
        tokens = list(encoded[rng.integers(len(encoded))])
        for _ in range(n_mutations):
            kind = rng.integers(3)
            pos = int(rng.integers(len(tokens) + (kind == 1)))
            if kind == 0 and tokens:
                tokens[min(pos, len(tokens) - 1)] = alphabet[rng.integers(len(alphabet))]
            elif kind == 1:
                tokens.insert(pos, alphabet[rng.integers(len(alphabet))])
            elif len(tokens) > 1:
                del tokens[min(pos, len(tokens) - 1)]
        out.append(sf.decoder("".join(tokens)))
    return out


def _grid(smiles: Sequence[str], path: Any, n: int = 12) -> None:
    from rdkit import Chem
    from rdkit.Chem import Draw

    mols = [Chem.MolFromSmiles(s) for s in smiles[:n]]
    Draw.MolsToGridImage([m for m in mols if m is not None], molsPerRow=4, subImgSize=(250, 200)).save(path)


def demo(ctx: RunContext) -> None:
    """Grammar card, samples and metrics of a heuristic-judge grammar of the isocyanates.

    Parameters
    ----------
    ctx : RunContext
        Output folder, seed and the quick flag (100 samples instead of 500).
    """
    train = load_dataset("isocyanates")
    model = FMG(HeuristicChemJudge()).fit(train)
    n = 100 if ctx.quick else 500
    result = model.sample(n, random_state=ctx.seed, unique=True)  # distinct samples, as the official loop
    metrics = evaluate(result.smiles, train, "isocyanates")
    iid = model.sample(n, random_state=ctx.seed)  # independent draws, duplicates kept
    iid_metrics = evaluate(iid.smiles, train, "isocyanates")
    card = grammar_card(model)
    ctx.write_table(card, "grammar_card")
    ctx.write_table([{"sampling": label, **{k: (round(v, 4) if isinstance(v, float) else v) for k, v in m.as_dict().items()}}
                     for label, m in (("distinct", metrics), ("independent", iid_metrics))])
    ctx.write_json({"dataset": "isocyanates", "judge": "HeuristicChemJudge", "seed": ctx.seed, "n_samples": n,
                    "n_rules": model.grammar_.n_rules, "n_rejected": result.n_rejected,
                    "metrics": metrics.as_dict(), "iid_metrics": iid_metrics.as_dict(), "samples": result.smiles,
                    "grammar_card": card})
    card_path = ctx.path("grammar_card.png")
    draw_grammar_card(model, card_path)
    ctx._record(card_path)
    path = ctx.path("demo.png")
    _grid(sorted(set(result.smiles), key=result.smiles.index), path)
    ctx._record(path)


def make_judge(options: dict[str, Any]) -> Any:
    """The judge named by the ``reproduce`` options (``judge``, ``model``, ``base_url``, ``cache_dir``)."""
    name = options.get("judge", "heuristic")
    if name == "heuristic":
        return HeuristicChemJudge()
    if name == "openai":
        import os

        from fmg.judges import OpenAICompatibleJudge

        return OpenAICompatibleJudge(options.get("model") or "gpt-4o", base_url=options.get("base_url"),
                                     api_key=os.environ.get("OPENAI_API_KEY"), cache_dir=options.get("cache_dir"))
    raise ValueError(f"unknown judge {name!r}; accepted: heuristic, openai")


def reproduce(ctx: RunContext) -> None:
    """DEG's metrics of FMG (heuristic judge, or ``--judge openai``), its ablations and STONED on the DEG sets.

    Parameters
    ----------
    ctx : RunContext
        Output folder, seed (the first of three consecutive sampling seeds) and the quick flag (one set,
        one seed, 100 samples instead of three sets, three seeds and 500 samples). FMG's samples are
        collected as distinct molecules (the official loop) for DEG's metrics; the chemistry columns
        (``CHEMISTRY``: structural alerts, ring and size distributions, fragment and scaffold similarity,
        GuacaMol's KL score; FCD is not computed, its ChemNet weights are not available offline) compare
        as many independent draws with the training set. STONED's samples are independent mutations.
    """
    sets = ("isocyanates",) if ctx.quick else ("isocyanates", "acrylates", "chain_extenders")
    seeds = [ctx.seed] if ctx.quick else [ctx.seed, ctx.seed + 1000, ctx.seed + 2000]
    n = 100 if ctx.quick else 500
    rows: list[dict[str, Any]] = []
    raw: list[dict[str, Any]] = []
    chem_rows: list[dict[str, Any]] = []
    jobs = [(s, c) for s in sets for c in [*CONFIGS, *SAMPLING, "STONED"]]
    for dataset, config in progress(jobs, desc="reproduce"):
        train = load_dataset(dataset)
        per_seed = []
        for seed in seeds:
            if config == "STONED":
                samples, n_rules = stoned(train, n, random_state=seed), None
                iid = samples
            else:
                options = SAMPLING.get(config, {})
                model = FMG(make_judge(ctx.options), seeds=(seed,), **CONFIGS[SAMPLING_CONFIG.get(config, config)])
                model.fit(train)
                samples = model.sample(n, random_state=seed, unique=True, **options).smiles
                iid = model.sample(n, random_state=seed, **options).smiles
                n_rules = model.grammar_.n_rules
            m: dict[str, Any] = dict(evaluate(samples, train, dataset).as_dict())
            m["n_rules"] = n_rules
            m.update(chemistry_row(iid, train))
            per_seed.append(m)
            raw.append({"dataset": dataset, "method": config, "seed": seed, **m})
        mean = {k: float(np.mean([r[k] for r in per_seed])) for k in ("valid", "unique", "novelty", "diversity",
                                                                       "membership", "sa_mean", "rs_proxy",
                                                                       "chamfer")}
        rows.append({"dataset": dataset, "method": config, **{k: round(v, 3) for k, v in mean.items()}})
        chem = {k: float(np.mean([r[k] for r in per_seed])) for k in CHEMISTRY}
        chem_rows.append({"dataset": dataset, "method": config, **{k: round(v, 3) for k, v in chem.items()}})
    for dataset in sets:  # the training set itself, for reference
        train = load_dataset(dataset)
        ref = chemistry_row(train, train)
        chem_rows.append({"dataset": dataset, "method": "training set",
                          **{k: round(float(ref[k]), 3) for k in CHEMISTRY}})
    ctx.write_table(rows)
    ctx.write_table(chem_rows, "chemistry")
    stored = ctx.write_json({"judge": type(make_judge(ctx.options)).__name__, "options": ctx.options,
                             "seeds": seeds, "n_samples": n, "rows": rows, "chemistry": chem_rows, "runs": raw,
                             "fcd": "not computed: the ChemNet weights FCD needs are not available offline"})
    ctx.save_figure(reproduce_figure(json.loads(stored.read_text())))  # drawn from what is stored


def reproduce_figure(result: dict[str, Any]) -> Any:
    """The reproduce figure, drawn from its JSON (``results/reproduce/reproduce.json``) alone.

    Parameters
    ----------
    result : dict
        What ``reproduce`` writes: ``rows`` (means over the seeds), ``runs`` (one per seed), ``seeds`` and
        ``n_samples``.

    Returns
    -------
    matplotlib.figure.Figure
        DEG's diversity per method and dataset: bars at the mean over the seeds, a dot per seed.
    """
    import matplotlib.pyplot as plt

    rows, runs = result["rows"], result.get("runs", [])
    sets = list(dict.fromkeys(r["dataset"] for r in rows))
    methods = list(dict.fromkeys(r["method"] for r in rows))
    width = 0.8 / len(sets)
    fig, ax = plt.subplots(figsize=(7, 3.6), layout="constrained")
    for k, dataset in enumerate(sets):
        x = np.arange(len(methods)) + width * (k - (len(sets) - 1) / 2)
        means = [next((r["diversity"] for r in rows if r["dataset"] == dataset and r["method"] == m), np.nan)
                 for m in methods]
        ax.bar(x, means, width=width, label=dataset, color=f"C{k}", alpha=0.6)
        for i, method in enumerate(methods):
            draws = [r["diversity"] for r in runs if r["dataset"] == dataset and r["method"] == method]
            ax.plot([x[i]] * len(draws), draws, "k.", ms=3)
    ax.set_xticks(np.arange(len(methods)), methods, rotation=30, ha="right", rotation_mode="anchor", fontsize=7)
    ax.set_xlabel("method")
    ax.set_ylabel("diversity (DEG's Div)")
    ax.set_title(f"{result['n_samples']} samples x {len(result['seeds'])} seed(s); bar: mean, dot: one seed",
                 fontsize=9)
    ax.legend(fontsize=7, title="dataset", title_fontsize=7)
    return fig

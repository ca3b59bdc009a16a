"""The ``demo`` and ``reproduce`` commands.

``demo`` measures a test set of Python standard-library docstrings against a hand-written corpus that
quotes some of them verbatim, reformatted, truncated or with words replaced, under HELM's metrics and
every preset. ``reproduce`` plants the same kinds of contamination in a synthetic random-word corpus and
measures how often each developer's rule labels each kind dirty: the rules disagree.
"""

from __future__ import annotations

import inspect
import json
import logging
import math
import numbers
from collections.abc import Iterator
from typing import Any

import numpy as np
from icml25_shared.cli import RunContext
from icml25_shared.random import check_random_state

from train_test_overlap.data import Instance, TestSet
from train_test_overlap.index import OverlapIndex
from train_test_overlap.metrics import metrics
from train_test_overlap.presets import PRESETS, evaluate_presets
from train_test_overlap.registry import coverage, load_registry

__all__ = ["demo", "planted_corpus", "registry_table", "reproduce", "reproduce_figure", "stdlib_test_set"]

DEMO_FUNCTIONS = ("textwrap.dedent", "textwrap.fill", "json.dumps", "json.loads", "os.path.join", "shutil.copyfile",
                  "string.capwords", "heapq.heappush", "bisect.insort_left", "random.shuffle")
KINDS = ("verbatim", "reformatted", "noised", "partial", "clean")


def _docstring(dotted: str) -> str:
    import importlib

    module, _, name = dotted.rpartition(".")
    doc = inspect.getdoc(getattr(importlib.import_module(module), name)) or ""
    return " ".join(doc.split())


def stdlib_test_set() -> TestSet:
    """Ten standard-library functions: input = the docstring (whitespace collapsed), reference = the name."""
    return TestSet("stdlib-docstrings", "test", [Instance(f.split(".")[-1], _docstring(f), [f]) for f in DEMO_FUNCTIONS])


def _reformat(text: str) -> str:
    return "".join(ch for ch in text.upper() if ch.isalnum() or ch.isspace()).replace(" ", "\n ")


def _noise(words: list[str], rng: np.random.Generator, every: int, vocab: Any) -> list[str]:
    out = list(words)
    for j in range(every // 2, len(out), every):
        out[j] = str(rng.choice(vocab))
    return out


def demo(ctx: RunContext) -> None:
    """Docstring test set vs a hand corpus: HELM metrics (n = 13) and every preset's label per instance."""
    logging.getLogger("train_test_overlap.presets").setLevel(logging.ERROR)
    ts = stdlib_test_set()
    text = {inst.id: inst.input for inst in ts.instances}
    rng = np.random.default_rng(ctx.seed)
    filler = ("Today we look at a few helpers from the standard library and what they are for. "
              "The examples below were copied from the documentation into our notes.")
    corpus = [
        filler + " " + text["dedent"] + " That is all for dedent.",                 # verbatim inside a post
        _reformat(text["dumps"]),                                                  # case, punctuation, lines
        " ".join(text["fill"].split()[: len(text["fill"].split()) // 2]),           # first half
        " ".join(_noise(text["join"].split(), rng, 4, ["foo", "bar", "baz"])),    # every 4th word replaced
        text["capwords"].lower(),                                                  # lower-cased copy
        filler,
        "A heap is a binary tree where every parent is smaller than its children.",
        "Shuffling a deck of cards puts it in a random order.",
    ]
    counts = OverlapIndex(ts, n=13).scan(corpus)
    helm = {m.instance_id: m for m in metrics(counts, n=13, parts=("input",))}
    names = ["helm", "gpt3", "gpt4", "palm", "llama2", "llama3", "marin"]
    results, _ = evaluate_presets(ts, corpus, presets=names, random_state=ctx.seed)
    labels = {r.preset.name: r.labels for r in results}
    rows = [{"instance": inst.id, "tokens": len(counts.index.tokenizer.tokenize(inst.input)),
             "HELM jaccard": helm[inst.id].jaccard, "HELM token": helm[inst.id].token,
             **{name: labels[name][inst.id] for name in names}} for inst in ts.instances]
    ctx.write_table(rows, headers=list(rows[0]))
    ctx.write_json({"functions": list(DEMO_FUNCTIONS), "seed": ctx.seed, "rows": rows,
                    "fraction_dirty": {r.preset.name: r.fractions["dirty"] for r in results}})
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(6, 3.2), layout="constrained")
    ax.bar(names, [next(r for r in results if r.preset.name == n).fractions["dirty"] for n in names])
    ax.set_xlabel("overlap preset")
    ax.set_ylabel("fraction labelled dirty")
    ax.set_title(f"{len(rows)} stdlib docstrings vs a hand corpus, seed {ctx.seed}", fontsize=9)
    ctx.save_figure(fig)


def planted_corpus(*, n_instances: int, target_bytes: float, random_state: Any = None,
                   vocab_size: int = 5000) -> tuple[TestSet, dict[str, str], Iterator[str]]:
    """A synthetic test set and a random-word corpus with planted contamination of known kind.

    Parameters
    ----------
    n_instances : int
        Test instances (30 to 60 Zipf-distributed pseudo-words each, sentence punctuation).
    target_bytes : int or float
        Approximate corpus size (a float such as ``3e6`` is rounded down); at least the planted copies
        are written.
    random_state : None, int or Generator
    vocab_size : int, default 5000

    Returns
    -------
    test_set : TestSet
    truth : dict of str to str
        Instance id -> ``verbatim`` (copied), ``reformatted`` (upper-cased, punctuation removed, line
        breaks), ``noised`` (every 15th word replaced), ``partial`` (first 40% of the words) or ``clean``.
    documents : iterator of str
        The corpus, generated lazily (200-word documents; planted copies embedded in random text).
    """
    for name, value in (("n_instances", n_instances), ("vocab_size", vocab_size)):
        if isinstance(value, bool) or not isinstance(value, numbers.Integral) or value < 1:
            raise ValueError(f"{name} must be an int >= 1, got {value!r}")
    if (isinstance(target_bytes, bool) or not isinstance(target_bytes, numbers.Real)
            or not math.isfinite(target_bytes) or target_bytes < 0):
        raise ValueError(f"target_bytes must be a finite number of bytes >= 0, got {target_bytes!r}")
    target_bytes = int(target_bytes)
    rng = check_random_state(random_state)
    letters = np.array(list("abcdefghijklmnopqrstuvwxyz"))
    vocab = np.array(["".join(rng.choice(letters, size=rng.integers(2, 9))) for _ in range(vocab_size)])
    p = 1.0 / np.arange(1, vocab_size + 1)
    p /= p.sum()
    instances, truth = [], {}
    kinds = rng.choice(len(KINDS), size=n_instances, p=[0.2, 0.2, 0.2, 0.1, 0.3])
    plants = []
    for i in range(n_instances):
        words = list(vocab[rng.choice(vocab_size, size=int(rng.integers(30, 61)), p=p)])
        text = " ".join(words).capitalize() + "?"
        inst = Instance(f"q{i:05d}", text, [str(rng.choice(vocab))])
        instances.append(inst)
        kind = KINDS[kinds[i]]
        truth[inst.id] = kind
        if kind == "verbatim":
            plants.append(text)
        elif kind == "reformatted":
            plants.append(_reformat(text))
        elif kind == "noised":
            plants.append(" ".join(_noise(words, rng, 15, vocab)))
        elif kind == "partial":
            plants.append(" ".join(words[: int(0.4 * len(words))]))
    ts = TestSet("planted", "test", instances)
    n_docs = max(len(plants), target_bytes // 1200)
    slots = dict(zip(rng.choice(n_docs, size=len(plants), replace=False).tolist(), plants, strict=True))
    seed = int(rng.integers(2**32))

    def documents() -> Iterator[str]:
        g = np.random.default_rng(seed)
        for d in range(n_docs):
            body = vocab[g.choice(vocab_size, size=200, p=p)]
            if d in slots:
                yield " ".join(body[:100]) + ". " + slots[d] + " " + " ".join(body[100:])
            else:
                yield " ".join(body) + "."

    return ts, truth, documents()


def registry_table() -> tuple[list[dict[str, Any]], dict[str, dict[str, int]]]:
    """The shipped disclosure registry as table rows (one per entry, with its score and unverified fields).

    Returns
    -------
    rows : list of dict
        ``model``, ``developer``, the three scored booleans, ``engagement``, ``score``, ``unverified``
        (comma-separated field names, ``-`` when every field was checked) and ``source``, in registry order.
    coverage : dict
        :func:`~train_test_overlap.registry.coverage` of the entries: their counts beside the paper's.
    """
    entries = load_registry()
    rows = [{"model": e.model, "developer": e.developer, "open_data": e.open_data, "publishes_stats": e.publishes_stats,
             "publishes_method": e.publishes_method, "engagement": e.engagement, "score": e.score,
             "unverified": ", ".join(e.unverified) or "-", "source": e.source} for e in entries]
    return rows, coverage(entries)


def _registry_figure(rows: list[dict[str, Any]]) -> Any:
    import matplotlib.pyplot as plt

    why = ["open data" if r["open_data"] is True else "statistics and method" if r["score"] else "neither" for r in rows]
    colours = {"open data": "tab:green", "statistics and method": "tab:blue", "neither": "tab:gray"}
    fig, ax = plt.subplots(figsize=(6, 0.9 + 0.28 * max(len(rows), 1)), layout="constrained")
    y = np.arange(len(rows))
    ax.barh(y, [max(r["score"], 0.04) for r in rows], color=[colours[w] for w in why],
            hatch=["//" if r["unverified"] != "-" else "" for r in rows])
    ax.set_yticks(y, [f"{r['model']} ({r['developer']})" for r in rows], fontsize=7)
    ax.set_ylabel("model (developer)")
    ax.invert_yaxis()
    ax.set_xlim(0, 1.05)
    ax.set_xticks([0, 1])
    ax.set_xlabel("score: train-test overlap knowable by the public (hatched: a field unverified)")
    ax.legend(handles=[plt.Rectangle((0, 0), 1, 1, color=c) for c in colours.values()], labels=list(colours),
              fontsize=7, loc="upper left", bbox_to_anchor=(1.01, 1))
    ax.set_title(f"disclosure registry: {len(rows)} models, {sum(r['score'] for r in rows)} scored 1", fontsize=9)
    return fig


def reproduce(ctx: RunContext) -> None:
    """The registry's table and chart, and each preset's dirty rate per planted kind on a synthetic corpus.

    Writes ``registry.md`` / ``registry.png`` (every registry entry with its score and unverified fields)
    and ``reproduce.md`` / ``.json`` / ``.png`` (quick: 2 MB, 200 instances; else 100 MB, 1000).
    """
    logging.getLogger("train_test_overlap.presets").setLevel(logging.ERROR)
    registry_rows, registry_coverage = registry_table()
    ctx.write_table(registry_rows, name="registry")
    ctx.save_figure(_registry_figure(registry_rows), name="registry")
    size = 2_000_000 if ctx.quick else 100_000_000
    n_inst = 200 if ctx.quick else 1000
    ts, truth, docs = planted_corpus(n_instances=n_inst, target_bytes=size, random_state=ctx.seed)
    names = sorted(PRESETS)
    results, stats = evaluate_presets(ts, docs, presets=names, random_state=ctx.seed)
    table: dict[str, Any] = {}
    for r in results:
        by_kind = {}
        for kind in KINDS:
            ids = [i for i, k in truth.items() if k == kind]
            by_kind[kind] = sum(r.labels[i] == "dirty" for i in ids) / len(ids) if ids else float("nan")
        table[r.preset.name] = {"dirty_rate": by_kind, "fraction_dirty": r.fractions["dirty"],
                                "fraction_ambiguous": r.fractions["ambiguous"]}
    truth_rate = sum(k != "clean" for k in truth.values()) / len(truth)
    corpus = stats["helm-default"]
    stored = ctx.write_json({
        "seed": ctx.seed, "instances": n_inst, "corpus_bytes": corpus.bytes, "corpus_documents": corpus.documents,
        "corpus_tokens_helm": corpus.tokens, "kinds": {k: sum(v == k for v in truth.values()) for k in KINDS},
        "true_contaminated_fraction": truth_rate, "presets": table,
        "registry": {"entries": registry_rows, "coverage": registry_coverage}})
    rows = [[name, *(table[name]["dirty_rate"][k] for k in KINDS), table[name]["fraction_dirty"]] for name in names]
    rows.append(["truth", 1.0, 1.0, 1.0, 1.0, 0.0, truth_rate])
    ctx.write_table(rows, headers=["preset", *(f"{k} dirty" for k in KINDS), "estimated contaminated fraction"])
    ctx.save_figure(reproduce_figure(json.loads(stored.read_text())))  # drawn from what is stored


def reproduce_figure(result: dict[str, Any]) -> Any:
    """The reproduce figure, drawn from its JSON (``results/reproduce.json``) alone.

    Parameters
    ----------
    result : dict
        What ``reproduce`` writes: per preset the share of each planted kind labelled dirty, the number of
        instances per kind, the corpus size and the seed.

    Returns
    -------
    matplotlib.figure.Figure
        Share labelled dirty per preset (x) and planted kind (bars).
    """
    import matplotlib.pyplot as plt

    names, kinds = sorted(result["presets"]), list(result["kinds"])
    fig, ax = plt.subplots(figsize=(7, 3.6), layout="constrained")
    width = 0.8 / len(kinds)
    for j, kind in enumerate(kinds):
        ax.bar(np.arange(len(names)) + j * width, [result["presets"][n]["dirty_rate"][kind] for n in names], width,
               label=f"{kind} ({result['kinds'][kind]})")
    ax.set_xticks(np.arange(len(names)) + 0.4 - width / 2, names)
    ax.set_xlabel("overlap preset")
    ax.set_ylabel("share of the kind labelled dirty")
    ax.set_ylim(0, 1.05)
    ax.set_title(f"{result['instances']} planted instances, {result['corpus_bytes'] / 1e6:.0f} MB corpus, "
                 f"seed {result['seed']}", fontsize=9)
    ax.legend(fontsize=7, title="planted kind (instances)", title_fontsize=7, loc="upper left",
              bbox_to_anchor=(1.01, 1))
    return fig

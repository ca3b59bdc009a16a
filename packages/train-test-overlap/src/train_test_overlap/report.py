"""The overlap report the paper asks developers to publish.

It holds a methodology card, per-test-set statistics, each rule's labels and, with evaluation scores,
the clean-subset delta with a bootstrap interval.
"""

from __future__ import annotations

import hashlib
import json
import math
from collections.abc import Mapping, Sequence
from importlib import resources
from pathlib import Path
from typing import Any

import numpy as np
from icml25_shared.random import RandomStateLike, check_random_state

from train_test_overlap.index import OverlapCounts
from train_test_overlap.metrics import metrics
from train_test_overlap.presets import PresetResult, _check_finite_scores

__all__ = ["OverlapReport", "clean_delta", "report_schema"]


def report_schema() -> dict[str, Any]:
    """The JSON schema that :meth:`OverlapReport.to_json` follows."""
    return json.loads(resources.files("train_test_overlap").joinpath("report.schema.json").read_text(encoding="utf-8"))


def _num(x: float) -> float | None:
    return None if x is None or (isinstance(x, float) and math.isnan(x)) else float(x)


def clean_delta(labels: Mapping[str, str], scores: Mapping[str, float], *, confidence: float = 0.95,
                n_resamples: int = 2000, random_state: RandomStateLike = 0) -> dict[str, Any]:
    """Mean score on the clean instances minus the mean on all, with a percentile bootstrap interval.

    Instances are resampled with replacement (the same draw for both means); a resample without a clean
    instance is skipped.

    Parameters
    ----------
    labels : mapping of str to str
        Instance id -> ``clean`` / ``dirty`` / ``ambiguous``.
    scores : mapping of str to float
        Instance id -> evaluation score (every labelled id).
    confidence : float, default 0.95
    n_resamples : int, default 2000
    random_state : None, int or Generator, default 0

    Returns
    -------
    dict
        ``clean_mean``, ``all_mean``, ``clean_minus_all``, ``low``, ``high``, ``confidence``,
        ``n_resamples``, ``num_clean`` (None where no instance is clean).
    """
    if not 0.0 < confidence < 1.0:
        raise ValueError(f"confidence must lie in (0, 1), got {confidence!r}")
    ids = list(labels)
    missing = [i for i in ids if i not in scores]
    if missing:
        raise ValueError(f"scores lack {len(missing)} labelled instance ids, e.g. {missing[:3]}")
    y = np.array([float(scores[i]) for i in ids])
    if not np.all(np.isfinite(y)):
        bad = ids[int(np.argmin(np.isfinite(y)))]
        raise ValueError(f"score of {bad!r} is not finite ({scores[bad]!r})")
    clean = np.array([labels[i] == "clean" for i in ids])
    out: dict[str, Any] = {"all_mean": float(y.mean()), "confidence": confidence, "n_resamples": int(n_resamples),
                           "num_clean": int(clean.sum()), "clean_mean": None, "clean_minus_all": None, "low": None, "high": None}
    if not clean.any():
        return out
    out["clean_mean"] = float(y[clean].mean())
    out["clean_minus_all"] = out["clean_mean"] - out["all_mean"]
    rng = check_random_state(random_state)
    idx = rng.integers(0, y.size, size=(int(n_resamples), y.size))
    yc, cc = y[idx], clean[idx]
    k = cc.sum(axis=1)
    ok = k > 0
    deltas = (yc * cc).sum(axis=1)[ok] / k[ok] - yc.mean(axis=1)[ok]
    tail = (1.0 - confidence) / 2
    out["low"], out["high"] = (float(v) for v in np.quantile(deltas, [tail, 1 - tail]))
    return out


class OverlapReport:
    """Methodology card, per-test-set overlap statistics and each rule's labels, as Markdown, JSON and PNG.

    Parameters
    ----------
    counts : OverlapCounts
        A scan's result (its index gives the tokenizer, n and parts; its stats the corpus size).
    presets : sequence of PresetResult, default ()
        From :func:`~train_test_overlap.presets.evaluate_presets` on the same test sets.
    scores : mapping, optional
        ``{(name, split): {instance id: evaluation score}}``: adds each rule's clean-subset delta with a
        bootstrap interval. Every key must be a test set of the counts.
    n : int, default 13
        n of HELM's per-instance metrics in the report (must be indexed).
    frequency_filter : int or None, default None
        HELM's rare-n-gram filter for those metrics.
    sketch_fp_rate : float, optional
        The false-positive rate of a Bloom sketch, when the counts come from one.
    confidence, n_resamples, random_state
        The bootstrap of the deltas.
    """

    def __init__(self, counts: OverlapCounts, presets: Sequence[PresetResult] = (), *,
                 scores: Mapping[tuple[str, str], Mapping[str, float]] | None = None, n: int = 13,
                 frequency_filter: int | None = None, sketch_fp_rate: float | None = None, confidence: float = 0.95,
                 n_resamples: int = 2000, random_state: RandomStateLike = 0) -> None:
        index = counts.index
        keys = {ts.key for ts in index.test_sets}
        for r in presets:
            if (r.test_set, r.split) not in keys:
                raise ValueError(f"preset result for {(r.test_set, r.split)} has no test set in the counts; known: {sorted(keys)}")
        if scores is not None:
            _check_finite_scores(scores)
        unknown = [key for key in (scores or {}) if tuple(key) not in keys]
        if unknown:
            raise ValueError(f"scores name test sets that are not in the counts: {unknown[:5]}; known: {sorted(keys)}")
        rows = metrics(counts, n=n, frequency_filter=frequency_filter)
        from train_test_overlap import __version__  # the package is initialised before any report exists

        config = {"tokenizer": index.tokenizer.name, "n": list(index.n), "parts": list(index.parts), "metric_n": n,
                  "frequency_filter": frequency_filter, "sketch_fp_rate": sketch_fp_rate,
                  "test_sets": [[ts.name, ts.split, [i.id for i in ts.instances]] for ts in index.test_sets],
                  "presets": sorted({(r.preset.name, r.preset.n or 0, r.preset.dirty_at) for r in presets})}
        digest = hashlib.sha256(json.dumps(config, sort_keys=True).encode()).hexdigest()
        self.data: dict[str, Any] = {"methodology": {
            "package": "train-test-overlap", "version": __version__, "tokenizer": index.tokenizer.name, "n": list(index.n),
            "parts": list(index.parts), "metric_n": n, "frequency_filter": frequency_filter, "sketch_fp_rate": sketch_fp_rate,
            "corpus": {"documents": counts.stats.documents, "tokens": counts.stats.tokens, "bytes": counts.stats.bytes},
            "config_hash": digest}, "test_sets": [], "presets": []}
        for ts in index.test_sets:
            k = len(ts.instances)
            overlap = []
            for nn in index.n:
                for part in index.parts:
                    m = len(counts.overlapping_ids(ts.key, part, nn))
                    overlap.append({"n": nn, "part": part, "num_overlapping": m, "fraction": m / k if k else None})
            mine = [r for r in rows if (r.test_set, r.split) == ts.key]
            summary = {}
            for part in ("input", "references"):
                sel = [r for r in mine if r.part == part]
                for field in ("binary", "jaccard", "weighted_jaccard", "token", "weighted_token"):
                    vals = [getattr(r, field) for r in sel if not math.isnan(getattr(r, field))]
                    summary[f"{part}_{field}_mean"] = float(np.mean(vals)) if vals else None
            self.data["test_sets"].append({"name": ts.name, "split": ts.split, "num_instances": k, "overlap": overlap,
                                           "metrics": summary})
        rng = check_random_state(random_state)
        for r in presets:
            ev = scores.get((r.test_set, r.split)) if scores is not None else None
            delta = clean_delta(r.labels, ev, confidence=confidence, n_resamples=n_resamples, random_state=rng) if ev else None
            self.data["presets"].append({"preset": r.preset.name, "developer": r.preset.developer, "source": r.preset.source,
                                         "verified": r.preset.verified, "test_set": r.test_set, "split": r.split,
                                         "fractions": r.fractions, "delta": delta})

    def to_json(self) -> dict[str, Any]:
        """The report as a dict that validates against :func:`report_schema`."""
        return json.loads(json.dumps(self.data, default=_num))

    def validate(self) -> None:
        """Check :meth:`to_json` against the schema (needs ``jsonschema``, extra ``report``)."""
        try:
            import jsonschema
        except ImportError as exc:  # pragma: no cover - depends on the install
            raise ImportError("validation needs jsonschema: pip install 'train-test-overlap[report]'") from exc
        jsonschema.validate(self.to_json(), report_schema())

    def to_markdown(self) -> str:
        """Methodology card, overlap table per test set and the rules' labels (and deltas) as Markdown."""
        m = self.data["methodology"]
        c = m["corpus"]
        lines = ["# Train-test overlap report", "", "## Methodology", "",
                 f"- tokenizer: `{m['tokenizer']}`; n-grams: {', '.join(map(str, m['n']))}; parts: {', '.join(m['parts'])}",
                 f"- per-instance metrics at n = {m['metric_n']}, frequency filter: {m['frequency_filter'] or 'none'}"
                 + (f"; Bloom sketch false-positive rate {m['sketch_fp_rate']:g}" if m["sketch_fp_rate"] else "; exact counts"),
                 f"- corpus: {c['documents']} documents, {c['tokens']} tokens, {c['bytes']} bytes",
                 f"- train-test-overlap {m['version']}; configuration hash `{m['config_hash'][:16]}`", "", "## Test sets", "",
                 "| test set | split | instances | n | part | overlapping | fraction |", "|---|---|---|---|---|---|---|"]
        for ts in self.data["test_sets"]:
            for o in ts["overlap"]:
                frac = "n/a" if o["fraction"] is None else f"{o['fraction']:.3f}"
                lines.append(f"| {ts['name']} | {ts['split']} | {ts['num_instances']} | {o['n']} | {o['part']} | "
                             f"{o['num_overlapping']} | {frac} |")
        if self.data["presets"]:
            lines += ["", "## Developers' rules", "",
                      "| rule | verified | test set | clean | dirty | ambiguous | clean minus all [CI] |", "|---|---|---|---|---|---|---|"]
            for p in self.data["presets"]:
                f = p["fractions"]
                d = p["delta"]
                if d is None:
                    ds = "no scores"
                elif d["clean_minus_all"] is None:
                    ds = "no clean instance"
                else:
                    ds = f"{d['clean_minus_all']:+.4f} [{d['low']:+.4f}, {d['high']:+.4f}]"
                lines.append(f"| {p['preset']} | {'yes' if p['verified'] else 'no'} | {p['test_set']} ({p['split']}) | "
                             f"{f['clean']:.3f} | {f['dirty']:.3f} | {f['ambiguous']:.3f} | {ds} |")
        return "\n".join(lines) + "\n"

    def save(self, path: str | Path) -> list[Path]:
        """Write ``<path>.md``, ``<path>.json`` and ``<path>.png`` (parents created).

        Parameters
        ----------
        path : path-like
            Output stem.

        Returns
        -------
        list of Path
            The three files.
        """
        stem = Path(path)
        stem.parent.mkdir(parents=True, exist_ok=True)
        md, js, png = stem.with_suffix(".md"), stem.with_suffix(".json"), stem.with_suffix(".png")
        md.write_text(self.to_markdown(), encoding="utf-8")
        js.write_text(json.dumps(self.to_json(), indent=2), encoding="utf-8")
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt

        fig, ax = plt.subplots(figsize=(6, 3))
        names = [f"{t['name'][:20]} ({t['split']})" for t in self.data["test_sets"]]
        first = self.data["methodology"]["parts"][0]
        for j, nn in enumerate(self.data["methodology"]["n"]):
            vals = [next(o["fraction"] or 0.0 for o in t["overlap"] if o["n"] == nn and o["part"] == first)
                    for t in self.data["test_sets"]]
            ax.bar(np.arange(len(names)) + j * 0.25, vals, 0.25, label=f"n = {nn}")
        ax.set_xticks(np.arange(len(names)), names, fontsize=7)
        ax.set_ylabel(f"fraction with overlapping {first}")
        ax.legend(fontsize=7)
        fig.tight_layout()
        fig.savefig(png, dpi=110)
        plt.close(fig)
        return [md, js, png]

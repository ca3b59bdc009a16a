"""The ``scan`` and ``presets`` commands: HELM-format outputs and preset labels from the command line."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

__all__ = ["presets_main", "report_main", "scan_main", "sketch_main"]


def _common(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--scenarios", required=True, help="HELM light-scenario JSONL (one scenario per line)")
    parser.add_argument("--corpus", required=True, nargs="+", help="corpus files or folders (.jsonl/.txt, .gz/.zst, .parquet)")
    parser.add_argument("--text-field", default="text", help="JSONL field / Parquet column of the text (default: text)")
    parser.add_argument("--errors", default="strict", choices=["strict", "replace"], help="undecodable bytes")
    parser.add_argument("--out", required=True, help="output folder")


def scan_main(argv: list[str]) -> int:
    """``scan``: HELM's stats, n-gram counts and metrics files for a corpus.

    Parameters
    ----------
    argv : list of str
        Options (see ``--help``).

    Returns
    -------
    int
        Exit code.
    """
    from train_test_overlap import OverlapIndex, helm_metric_records, load_helm_scenarios

    parser = argparse.ArgumentParser(prog="python -m train_test_overlap scan",
                                     description="Count test-set n-grams in a corpus; write HELM's output files.")
    _common(parser)
    parser.add_argument("--n", type=int, nargs="+", default=[5, 9, 13], help="n-gram lengths (default 5 9 13)")
    parser.add_argument("--tokenizer", default="helm-default", choices=["helm-default", "whitespace", "janitor"])
    parser.add_argument("--backend", default="local", choices=["local", "dask"])
    args = parser.parse_args(argv)
    index = OverlapIndex(load_helm_scenarios(args.scenarios), n=args.n, tokenizer=args.tokenizer)
    counts = index.scan([Path(c) for c in args.corpus], backend=args.backend, text_field=args.text_field, errors=args.errors)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    with open(out / "stats.jsonl", "w", encoding="utf-8") as f:
        f.writelines(json.dumps(r) + "\n" for r in counts.to_helm_stats())
    with open(out / "ngrams.jsonl", "w", encoding="utf-8") as f:
        f.writelines(json.dumps(r) + "\n" for r in counts.to_helm_ngrams())
    for n in index.n:
        with open(out / f"metrics_N{n}.jsonl", "w", encoding="utf-8") as f:
            f.writelines(json.dumps(r) + "\n" for r in helm_metric_records(counts, n=n))
    print(f"read {counts.stats.documents} documents, {counts.stats.bytes} bytes; wrote {out}/stats.jsonl, ngrams.jsonl, "
          + ", ".join(f"metrics_N{n}.jsonl" for n in index.n))
    return 0


def presets_main(argv: list[str]) -> int:
    """``presets``: every instance's label under each developer's rule, in one pass.

    Parameters
    ----------
    argv : list of str
        Options (see ``--help``).

    Returns
    -------
    int
        Exit code.
    """
    from train_test_overlap import load_helm_scenarios
    from train_test_overlap.presets import PRESETS, evaluate_presets

    parser = argparse.ArgumentParser(prog="python -m train_test_overlap presets",
                                     description="Label instances clean/dirty/ambiguous under developers' rules.")
    _common(parser)
    parser.add_argument("--presets", nargs="+", default=sorted(PRESETS), help=f"among {sorted(PRESETS)}")
    parser.add_argument("--seed", type=int, default=0, help="substring sampling of the gpt4 rule")
    args = parser.parse_args(argv)
    results, stats = evaluate_presets(load_helm_scenarios(args.scenarios), [Path(c) for c in args.corpus],
                                      presets=args.presets, random_state=args.seed, text_field=args.text_field,
                                      errors=args.errors)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    with open(out / "labels.jsonl", "w", encoding="utf-8") as f:
        for r in results:
            f.write(json.dumps({"preset": r.preset.name, "test_set": r.test_set, "split": r.split, "fractions": r.fractions,
                                "labels": r.labels}) + "\n")
    for r in results:
        print(f"{r.preset.name:8s} {r.test_set} [{r.split}]: dirty {r.fractions['dirty']:.3f}, "
              f"ambiguous {r.fractions['ambiguous']:.3f}")
    return 0


def report_main(argv: list[str]) -> int:
    """``report``: the overlap report (Markdown, JSON, PNG) from one read of the corpus per tokenizer.

    Parameters
    ----------
    argv : list of str
        Options (see ``--help``).

    Returns
    -------
    int
        Exit code.
    """
    from train_test_overlap import OverlapIndex, OverlapReport, load_helm_scenarios
    from train_test_overlap.presets import PRESETS, evaluate_presets

    parser = argparse.ArgumentParser(prog="python -m train_test_overlap report",
                                     description="Write the train-test overlap report: methodology, statistics, rules.")
    _common(parser)
    parser.add_argument("--n", type=int, nargs="+", default=[5, 9, 13], help="n-gram lengths (default 5 9 13)")
    parser.add_argument("--metric-n", type=int, default=13, help="n of HELM's per-instance metrics (default 13)")
    parser.add_argument("--presets", nargs="*", default=sorted(PRESETS), help=f"among {sorted(PRESETS)}")
    parser.add_argument("--scores", help="JSONL of evaluation scores: {\"test_set\", \"split\", \"id\", \"score\"} per line")
    parser.add_argument("--seed", type=int, default=0, help="gpt4 substring sampling and the bootstrap")
    args = parser.parse_args(argv)
    sets = load_helm_scenarios(args.scenarios)
    corpus = [Path(c) for c in args.corpus]
    scores: dict[tuple[str, str], dict[str, float]] | None = None
    if args.scores:
        scores = {}
        with open(args.scores, encoding="utf-8") as f:
            for lineno, line in enumerate(f, 1):
                if line.strip():
                    try:
                        rec = json.loads(line)
                        scores.setdefault((rec["test_set"], rec["split"]), {})[str(rec["id"])] = float(rec["score"])
                    except (KeyError, TypeError, ValueError) as exc:
                        raise SystemExit(f"{args.scores}:{lineno}: need test_set, split, id and a numeric score ({exc})") from None
    counts = OverlapIndex(sets, n=args.n).scan(corpus, text_field=args.text_field, errors=args.errors)
    results, _ = evaluate_presets(sets, corpus, presets=args.presets, scores=scores, random_state=args.seed,
                                  text_field=args.text_field, errors=args.errors) if args.presets else ([], {})
    files = OverlapReport(counts, results, scores=scores, n=args.metric_n, random_state=args.seed).save(Path(args.out) / "report")
    print("wrote " + ", ".join(str(f) for f in files))
    return 0


def sketch_main(argv: list[str]) -> int:
    """``sketch``: build a Bloom sketch of a corpus's n-grams, or query one with test sets.

    Parameters
    ----------
    argv : list of str
        Options (see ``--help``).

    Returns
    -------
    int
        Exit code.
    """
    from train_test_overlap import CorpusSketch, load_helm_scenarios

    parser = argparse.ArgumentParser(prog="python -m train_test_overlap sketch",
                                     description="Build (--corpus, --out) or query (--load, --scenarios) a corpus sketch.")
    parser.add_argument("--corpus", nargs="+", help="corpus files or folders to sketch")
    parser.add_argument("--out", help="where to write the sketch (.npz) or the query result (.json)")
    parser.add_argument("--load", help="a sketch written by this command")
    parser.add_argument("--scenarios", help="HELM light-scenario JSONL to query")
    parser.add_argument("--n", type=int, default=13)
    parser.add_argument("--tokenizer", default="helm-default", choices=["helm-default", "whitespace", "janitor"])
    parser.add_argument("--capacity", type=int, default=10_000_000, help="distinct n-grams the filter is sized for")
    parser.add_argument("--fp-rate", type=float, default=1e-3)
    parser.add_argument("--text-field", default="text")
    parser.add_argument("--errors", default="strict", choices=["strict", "replace"])
    args = parser.parse_args(argv)
    if args.corpus:
        if not args.out:
            parser.error("--corpus needs --out")
        sketch = CorpusSketch(n=args.n, tokenizer=args.tokenizer, capacity=args.capacity, fp_rate=args.fp_rate)
        sketch.add_corpus([Path(c) for c in args.corpus], text_field=args.text_field, errors=args.errors)
        sketch.save(args.out)
        print(f"sketched {sketch.documents} documents: m={sketch.m} bits, k={sketch.k}, fill {sketch.fill_ratio():.4f}; "
              f"wrote {args.out}")
        return 0
    if not (args.load and args.scenarios):
        parser.error("give --corpus and --out to build, or --load and --scenarios to query")
    sketch = CorpusSketch.load(args.load)
    result = sketch.overlap(load_helm_scenarios(args.scenarios))
    for (name, split), fractions in result.items():
        flagged = sum(1 for v in fractions.values() if v > 0)
        print(f"{name} [{split}]: {flagged}/{len(fractions)} instances with a reported {sketch.n}-gram")
    if args.out:
        Path(args.out).write_text(json.dumps([{"test_set": k[0], "split": k[1], "fractions": v} for k, v in result.items()]))
    return 0

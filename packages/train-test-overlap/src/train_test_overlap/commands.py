"""The ``scan``, ``presets``, ``report`` and ``sketch`` commands: HELM-format outputs, labels, reports, sketches."""

from __future__ import annotations

import argparse
import json
from collections.abc import Callable
from pathlib import Path

__all__ = ["COMMANDS", "run_command"]

_TOKENIZERS = ["helm-default", "whitespace", "janitor"]


def _corpus_args(parser: argparse.ArgumentParser, *, required: bool = True, out: str = "output folder") -> None:
    if required:
        parser.add_argument("--scenarios", required=True, help="HELM light-scenario JSONL (one scenario per line)")
    parser.add_argument("--corpus", required=required, nargs="+",
                        help="corpus files or folders (.jsonl/.txt, .gz/.zst, .parquet)")
    parser.add_argument("--text-field", default="text", help="JSONL field / Parquet column of the text (default: text)")
    parser.add_argument("--errors", default="strict", choices=["strict", "replace"], help="undecodable bytes")
    parser.add_argument("--out", required=required, help=out)


def _scan_args(parser: argparse.ArgumentParser) -> None:
    _corpus_args(parser)
    parser.add_argument("--n", type=int, nargs="+", default=[5, 9, 13], help="n-gram lengths (default 5 9 13)")
    parser.add_argument("--tokenizer", default="helm-default", choices=_TOKENIZERS)
    parser.add_argument("--backend", default="local", choices=["local", "dask"])


def _presets_args(parser: argparse.ArgumentParser) -> None:
    from train_test_overlap.presets import PRESETS

    _corpus_args(parser)
    parser.add_argument("--presets", nargs="+", default=sorted(PRESETS), help=f"among {sorted(PRESETS)}")
    parser.add_argument("--seed", type=int, default=0, help="substring sampling of the gpt4 rule")


def _report_args(parser: argparse.ArgumentParser) -> None:
    from train_test_overlap.presets import PRESETS

    _corpus_args(parser)
    parser.add_argument("--n", type=int, nargs="+", default=[5, 9, 13], help="n-gram lengths (default 5 9 13)")
    parser.add_argument("--metric-n", type=int, default=13, help="n of HELM's per-instance metrics (default 13)")
    parser.add_argument("--presets", nargs="*", default=sorted(PRESETS), help=f"among {sorted(PRESETS)}")
    parser.add_argument("--scores", help="JSONL of evaluation scores: {\"test_set\", \"split\", \"id\", \"score\"} per line")
    parser.add_argument("--seed", type=int, default=0, help="gpt4 substring sampling and the bootstrap")


def _sketch_args(parser: argparse.ArgumentParser) -> None:
    _corpus_args(parser, required=False, out="where to write the sketch (.npz) or the query result (.json)")
    parser.add_argument("--load", help="a sketch written by this command")
    parser.add_argument("--scenarios", help="HELM light-scenario JSONL to query")
    parser.add_argument("--n", type=int, help="n-gram length when building (default 13); a query checks it against the sketch's")
    parser.add_argument("--tokenizer", choices=_TOKENIZERS,
                        help="when building (default helm-default); a query checks it against the sketch's")
    parser.add_argument("--capacity", type=int, default=10_000_000, help="distinct n-grams the filter is sized for")
    parser.add_argument("--fp-rate", type=float, default=1e-3)


def _check_presets(names: list[str], parser: argparse.ArgumentParser) -> None:
    """Refuse unknown preset names and a substring rule (gpt4) without its extra, before any reading."""
    from train_test_overlap.presets import PRESETS

    unknown = [name for name in names if name not in PRESETS]
    if unknown:
        parser.error(f"unknown presets {unknown}; accepted: {sorted(PRESETS)}")
    substring = [name for name in names if PRESETS[name].measure == "substring"]
    if substring:
        try:
            import ahocorasick  # noqa: F401
        except ImportError:
            parser.error(f"preset {', '.join(substring)} needs pyahocorasick, which is not installed: "
                         "pip install 'train-test-overlap[gpt4]', or leave it out of --presets")


def _scan(args: argparse.Namespace, parser: argparse.ArgumentParser) -> int:
    from train_test_overlap import OverlapIndex, helm_metric_records, load_helm_scenarios

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


def _presets(args: argparse.Namespace, parser: argparse.ArgumentParser) -> int:
    from train_test_overlap import load_helm_scenarios
    from train_test_overlap.presets import evaluate_presets

    _check_presets(args.presets, parser)
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


def _report(args: argparse.Namespace, parser: argparse.ArgumentParser) -> int:
    from train_test_overlap import OverlapIndex, OverlapReport, load_helm_scenarios
    from train_test_overlap.presets import evaluate_presets

    if args.metric_n not in args.n:
        parser.error(f"--metric-n {args.metric_n} must be one of --n {args.n}")
    _check_presets(args.presets, parser)
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
                        per_set = scores.setdefault((rec["test_set"], rec["split"]), {})
                        key, value = str(rec["id"]), float(rec["score"])
                    except (KeyError, TypeError, ValueError) as exc:
                        raise SystemExit(f"{args.scores}:{lineno}: need test_set, split, id and a numeric score ({exc})") from None
                    if key in per_set:
                        raise SystemExit(f"{args.scores}:{lineno}: instance {key!r} of {rec['test_set']} [{rec['split']}] "
                                         "is scored twice")
                    per_set[key] = value
    counts = OverlapIndex(sets, n=args.n).scan(corpus, text_field=args.text_field, errors=args.errors)
    results, _ = evaluate_presets(sets, corpus, presets=args.presets, scores=scores, random_state=args.seed,
                                  text_field=args.text_field, errors=args.errors) if args.presets else ([], {})
    files = OverlapReport(counts, results, scores=scores, n=args.metric_n, random_state=args.seed).save(Path(args.out) / "report")
    print("wrote " + ", ".join(str(f) for f in files))
    return 0


def _sketch(args: argparse.Namespace, parser: argparse.ArgumentParser) -> int:
    from train_test_overlap import CorpusSketch, load_helm_scenarios

    if args.corpus:
        if not args.out:
            parser.error("--corpus needs --out")
        sketch = CorpusSketch(n=13 if args.n is None else args.n, tokenizer=args.tokenizer or "helm-default",
                              capacity=args.capacity, fp_rate=args.fp_rate)
        sketch.add_corpus([Path(c) for c in args.corpus], text_field=args.text_field, errors=args.errors)
        sketch.save(args.out)
        print(f"sketched {sketch.documents} documents: m={sketch.m} bits, k={sketch.k}, fill {sketch.fill_ratio():.4f}; "
              f"wrote {args.out}")
        return 0
    if not (args.load and args.scenarios):
        parser.error("give --corpus and --out to build, or --load and --scenarios to query")
    sketch = CorpusSketch.load(args.load)
    try:
        sketch._check(args.n, args.tokenizer)
    except ValueError as exc:  # the sketch stores its n and tokenizer; another one cannot be queried
        parser.error(f"{exc} (--load {args.load}: n={sketch.n}, tokenizer {sketch.tokenizer.name!r})")
    result = sketch.overlap(load_helm_scenarios(args.scenarios))
    for (name, split), fractions in result.items():
        flagged = sum(1 for v in fractions.values() if v > 0)
        print(f"{name} [{split}]: {flagged}/{len(fractions)} instances with a reported {sketch.n}-gram")
    if args.out:
        Path(args.out).write_text(json.dumps([{"test_set": k[0], "split": k[1], "fractions": v} for k, v in result.items()]))
    return 0


COMMANDS: dict[str, tuple[str, Callable[[argparse.ArgumentParser], None], Callable[..., int]]] = {
    "scan": ("Count test-set n-grams in a corpus; write HELM's stats, n-gram and metrics files.", _scan_args, _scan),
    "presets": ("Label instances clean/dirty/ambiguous under developers' rules.", _presets_args, _presets),
    "report": ("Write the train-test overlap report: methodology, statistics, rules.", _report_args, _report),
    "sketch": ("Build (--corpus, --out) or query (--load, --scenarios) a corpus sketch.", _sketch_args, _sketch),
}
"""Command name -> (description, function adding its options to a parser, function running it)."""


def run_command(command: str, argv: list[str]) -> int:
    """Parse ``argv`` for one of :data:`COMMANDS` and run it.

    Parameters
    ----------
    command : str
        ``"scan"``, ``"presets"``, ``"report"`` or ``"sketch"``.
    argv : list of str
        The command's options (see ``python -m train_test_overlap <command> --help``).

    Returns
    -------
    int
        Exit code: 0 on success (argparse exits with 2 on bad options).

    Raises
    ------
    ValueError
        For an unknown command (the message lists the accepted ones).
    """
    if command not in COMMANDS:
        raise ValueError(f"unknown command {command!r}; accepted: {sorted(COMMANDS)}")
    description, add_arguments, run = COMMANDS[command]
    parser = argparse.ArgumentParser(prog=f"python -m train_test_overlap {command}", description=description)
    add_arguments(parser)
    return run(parser.parse_args(argv), parser)

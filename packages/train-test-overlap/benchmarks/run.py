"""Exact scan vs a HELM-faithful reference (benchmarks/helm_reference.py) on a synthetic corpus, one process.

Both read the same in-memory documents and build the same index (N in {5, 9, 13}, parts input,
references, intersect) over the same test set; the reference tokenizes with HELM's regular expression.
The counts are checked equal before the times are reported. Writes JSON and prints a markdown table.

    python packages/train-test-overlap/benchmarks/run.py --mb 10 --instances 1000
"""

from __future__ import annotations

import argparse
import json
import platform
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).parent))
import helm_reference as ref  # noqa: E402

from train_test_overlap import OverlapIndex, __version__  # noqa: E402
from train_test_overlap.experiments import planted_corpus  # noqa: E402
from train_test_overlap.tokenizers import HELM_PATTERN  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--mb", type=float, default=10.0, help="corpus size in MB")
    parser.add_argument("--instances", type=int, default=1000)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--out", type=Path, default=Path("out/train_test_overlap/benchmark.json"))
    args = parser.parse_args()

    ts, _, docs_iter = planted_corpus(n_instances=args.instances, target_bytes=int(args.mb * 1e6), random_state=args.seed)
    docs = list(docs_iter)
    nbytes = sum(len(d.encode()) for d in docs)

    t0 = time.perf_counter()
    index = OverlapIndex(ts, n=(5, 9, 13))
    t1 = time.perf_counter()
    counts = index.scan(docs)
    t2 = time.perf_counter()

    def helm_tokenize(text: str) -> list[str]:
        return HELM_PATTERN.split(text.lower())

    t3 = time.perf_counter()
    table = ref.build_index([ts], [5, 9, 13], helm_tokenize)
    t4 = time.perf_counter()
    brute = ref.scan(table, docs, helm_tokenize)
    t5 = time.perf_counter()

    mine = {}
    for n in (5, 9, 13):
        for inst in ts.instances:
            for part in ("input", "references", "intersect"):
                got = counts.ngram_counts(ts.key, inst.id, part, n)
                if got:
                    mine[(n, ts.key, inst.id, part)] = got
    equal = mine == {k: dict(v) for k, v in brute.items()}
    if not equal:
        raise SystemExit("counts differ from the reference")
    result = {
        "corpus_mb": nbytes / 1e6, "documents": len(docs), "tokens": counts.stats.tokens, "instances": args.instances,
        "n": [5, 9, 13], "indexed_ngrams": index.num_ngrams, "counts_equal": equal,
        "ours_build_s": t1 - t0, "ours_scan_s": t2 - t1, "ref_build_s": t4 - t3, "ref_scan_s": t5 - t4,
        "ours_mb_per_s": nbytes / 1e6 / (t2 - t1), "ref_mb_per_s": nbytes / 1e6 / (t5 - t4),
        "speedup_scan": (t5 - t4) / (t2 - t1),
        "environment": {"python": platform.python_version(), "machine": platform.machine(), "numpy": np.__version__,
                        "train_test_overlap": __version__},
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=2))
    print(f"| corpus | instances | ours scan (s) | ours MB/s | HELM-faithful scan (s) | HELM-faithful MB/s | speedup |\n"
          f"|---|---|---|---|---|---|---|\n"
          f"| {result['corpus_mb']:.1f} MB, {len(docs)} docs | {args.instances} | {result['ours_scan_s']:.2f} | "
          f"{result['ours_mb_per_s']:.2f} | {result['ref_scan_s']:.2f} | {result['ref_mb_per_s']:.2f} | "
          f"{result['speedup_scan']:.2f}x |")


if __name__ == "__main__":
    main()

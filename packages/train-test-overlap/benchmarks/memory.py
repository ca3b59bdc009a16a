"""Peak memory of a streaming scan does not grow with the corpus: 10 MB vs 100 MB, each in a fresh process.

The corpus is generated lazily (planted_corpus, 1000 instances, N = 5, 9, 13), so the times include the
generation; the peak resident set size (ru_maxrss) of each child process is reported. Writes JSON and prints a markdown table.

    python packages/train-test-overlap/benchmarks/memory.py --mb 10 100
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
from pathlib import Path

CHILD = """
import resource, sys, time
from train_test_overlap import OverlapIndex
from train_test_overlap.experiments import planted_corpus
ts, _, docs = planted_corpus(n_instances=1000, target_bytes=int(float(sys.argv[1]) * 1e6), random_state=0)
index = OverlapIndex(ts, n=(5, 9, 13))
before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
t = time.perf_counter()
counts = index.scan(docs)
print(counts.stats.bytes, time.perf_counter() - t, before, resource.getrusage(resource.RUSAGE_SELF).ru_maxrss)
"""


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--mb", type=float, nargs="+", default=[10.0, 100.0])
    parser.add_argument("--out", type=Path, default=Path("out/train_test_overlap/memory.json"))
    args = parser.parse_args()
    rows = []
    for mb in args.mb:
        t = time.perf_counter()
        out = subprocess.run([sys.executable, "-c", CHILD, str(mb)], capture_output=True, text=True, check=True).stdout.split()
        nbytes, scan_s, before_kb, peak_kb = int(out[0]), float(out[1]), int(out[2]), int(out[3])
        rows.append({"corpus_mb": nbytes / 1e6, "generate_and_scan_s": scan_s, "mb_per_s": nbytes / 1e6 / scan_s,
                     "rss_before_scan_mb": before_kb / 1024, "peak_rss_mb": peak_kb / 1024,
                     "wall_s": time.perf_counter() - t})
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps({"instances": 1000, "n": [5, 9, 13], "rows": rows}, indent=2))
    print("| corpus | generate + scan (s) | MB/s | RSS after index (MB) | peak RSS (MB) |\n|---|---|---|---|---|")
    for r in rows:
        print(f"| {r['corpus_mb']:.1f} MB | {r['generate_and_scan_s']:.1f} | {r['mb_per_s']:.2f} | {r['rss_before_scan_mb']:.0f} | "
              f"{r['peak_rss_mb']:.0f} |")


if __name__ == "__main__":
    main()

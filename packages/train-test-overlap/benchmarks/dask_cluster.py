"""One process vs a 2-worker dask ``LocalCluster`` on the same sharded corpus, counts checked equal.

The synthetic corpus (``planted_corpus``) is written as ``--shards`` text files; the one-process scan reads
them with ``backend="local"``, the cluster scan maps them with ``backend="dask"`` on 2 worker processes of
one thread each. Cluster start-up is timed apart from the scan; it includes each worker importing
``train_test_overlap.index`` (about 0.3 s, once per worker process, as on any long-lived cluster). The
scan time includes sending the index's scan tables to the workers and gathering and merging their counts. The machine's load average and the CPU
time the main process and the workers used are recorded, since a speed-up of 2 workers needs 2 idle cores.

    OMP_NUM_THREADS=1 python packages/train-test-overlap/benchmarks/dask_cluster.py --mb 100 --shards 16
"""

from __future__ import annotations

import argparse
import importlib
import json
import os
import platform
import resource
import tempfile
import time
from pathlib import Path

import dask
import distributed

from train_test_overlap import OverlapIndex, __version__
from train_test_overlap.experiments import planted_corpus


def _worker_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--mb", type=float, default=100.0, help="corpus size in MB")
    parser.add_argument("--instances", type=int, default=1000)
    parser.add_argument("--shards", type=int, default=16)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--out", type=Path, default=Path("out/train_test_overlap/dask_cluster.json"))
    args = parser.parse_args()

    ts, _, docs = planted_corpus(n_instances=args.instances, target_bytes=int(args.mb * 1e6), random_state=args.seed)
    index = OverlapIndex(ts, n=(5, 9, 13))
    with tempfile.TemporaryDirectory() as tmp:
        files = [open(Path(tmp) / f"shard{k:03d}.txt", "w", encoding="utf-8") for k in range(args.shards)]
        nbytes = 0
        for i, d in enumerate(docs):
            files[i % args.shards].write(d.replace("\n", " ") + "\n")
            nbytes += len(d.encode())
        for f in files:
            f.close()
        load_before = os.getloadavg()
        c0, t0 = time.process_time(), time.perf_counter()
        local = index.scan(Path(tmp))
        t1 = time.perf_counter()
        local_cpu = time.process_time() - c0
        # the workers' statistical profiler samples every 10 ms; it is a monitoring tool, off for timing
        no_profiler = dask.config.set({"distributed.worker.profile.enabled": False})
        with no_profiler, distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                                                   dashboard_address=None) as cluster, distributed.Client(cluster) as client:
            client.wait_for_workers(2)
            client.run(importlib.import_module, "train_test_overlap.index")
            t2 = time.perf_counter()
            # the workers' own background CPU (event loop, heartbeats) per second of wall time, while idle
            idle_before, i0 = client.run(_worker_cpu), time.perf_counter()
            time.sleep(10)
            idle_after, i1 = client.run(_worker_cpu), time.perf_counter()
            idle_rate = max(idle_after[w] - idle_before[w] for w in idle_after) / (i1 - i0)
            cpu_before = client.run(_worker_cpu)
            t3 = time.perf_counter()
            on_cluster = index.scan(Path(tmp), backend="dask", scheduler=client)
            t4 = time.perf_counter()
            cpu_after = client.run(_worker_cpu)
            per_worker = sorted(cpu_after[w] - cpu_before[w] for w in cpu_after)
        load_after = os.getloadavg()
    equal = on_cluster._counts == local._counts and on_cluster.stats == local.stats
    if not equal:
        raise SystemExit("cluster counts differ from the one-process scan")
    result = {
        "corpus_mb": nbytes / 1e6, "documents": local.stats.documents, "tokens": local.stats.tokens,
        "instances": args.instances, "n": [5, 9, 13], "shards": args.shards, "counts_equal": equal,
        "one_process_scan_s": t1 - t0, "one_process_cpu_s": local_cpu,
        "cluster_start_s": t2 - t1, "cluster_scan_s": t4 - t3, "cluster_worker_cpu_s": per_worker,
        "speedup": (t1 - t0) / (t4 - t3),
        # what 2 idle cores would give: the one-process CPU time over the busier worker's CPU time
        "cpu_bound_speedup": local_cpu / per_worker[-1],
        "worker_idle_cpu_per_s": idle_rate,
        # the same without the background CPU a worker spends during the (load-stretched) scan wall time
        "cpu_bound_speedup_less_idle": local_cpu / (per_worker[-1] - idle_rate * (t4 - t3)),
        "load_average_before": load_before, "load_average_after": load_after, "cpu_count": os.cpu_count(),
        "environment": {"python": platform.python_version(), "machine": platform.machine(), "dask": dask.__version__,
                        "distributed": distributed.__version__, "train_test_overlap": __version__},
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=2))
    print("| corpus | shards | one process: scan (CPU) | 2-worker LocalCluster: scan (CPU per worker) | speed-up: wall "
          "| speed-up: CPU | load avg |\n|---|---|---|---|---|---|---|\n"
          f"| {result['corpus_mb']:.1f} MB | {args.shards} | {t1 - t0:.2f} s ({local_cpu:.2f} s) | "
          f"{t4 - t3:.2f} s ({per_worker[0]:.2f} s, {per_worker[1]:.2f} s) | {result['speedup']:.2f}x | "
          f"{result['cpu_bound_speedup']:.2f}x ({result['cpu_bound_speedup_less_idle']:.2f}x less idle CPU) | "
          f"{load_before[0]:.1f} -> {load_after[0]:.1f} |")


if __name__ == "__main__":
    main()

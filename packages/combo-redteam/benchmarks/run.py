"""Speed of the harness: stand-ins on every strategy, and concurrency against a 100 ms mock backend.

1. 50 benign flagged tasks x 6 strategies (single strong, single weak, manual, automated k = 1, 3, 5)
   x 5 seeds with the deterministic stand-ins, one process (code answers graded in subprocesses).
2. An OpenAI-compatible mock server on 127.0.0.1 that answers as the strong stand-in after sleeping
   100 ms: 40 single-model episodes at concurrency 1 and 8 (median of the repeats), results compared.

Writes results/benchmark.json and prints a markdown table (sizes, versions, machine).

    python packages/combo-redteam/benchmarks/run.py [--repeats 3]
"""

from __future__ import annotations

import argparse
import json
import statistics
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

from icml25_shared.bench import environment

from combo_redteam import OpenAICompatibleModel, SingleModel, StandInStrong, StandInWeak, benign_suite, run
from combo_redteam.experiments import strategy_set

HERE = Path(__file__).resolve().parent


def _server(latency_s: float) -> tuple[ThreadingHTTPServer, str]:
    backend = StandInStrong()

    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *args: object) -> None:
            pass

        def do_POST(self) -> None:  # noqa: N802 - http.server's name
            body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
            time.sleep(latency_s)
            reply = backend.complete(body["messages"], max_tokens=body["max_tokens"], seed=body.get("seed"))
            data = json.dumps({"choices": [{"message": {"role": "assistant", "content": reply.text},
                                            "finish_reason": "stop"}],
                               "usage": {"prompt_tokens": reply.usage.prompt_tokens,
                                         "completion_tokens": reply.usage.completion_tokens}}).encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

    httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    httpd.daemon_threads = True
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    return httpd, f"http://127.0.0.1:{httpd.server_address[1]}/v1"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out", type=Path, default=HERE.parent / "results" / "benchmark.json")
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()

    suite = benign_suite(50, random_state=0, variants=("flagged",))
    strong, weak = StandInStrong(capability=10), StandInWeak(capability=2)
    strategies = strategy_set(strong, weak, ks=(1, 3, 5))
    times, result = [], None
    for _ in range(args.repeats):
        start = time.perf_counter()
        result = run(suite, strategies, seeds=[0, 1, 2, 3, 4])
        times.append(time.perf_counter() - start)
    assert result is not None
    rates = {name: result.success_rate(name).estimate for name, _ in result.strategies}

    httpd, url = _server(0.1)
    controls = benign_suite(40, random_state=1, variants=("control",))
    model = OpenAICompatibleModel("mock", base_url=url, api_key_env=None)
    timing, results, samples = {}, {}, {1: [], 8: []}
    for _ in range(args.repeats):
        for concurrency in (1, 8):
            start = time.perf_counter()
            results[concurrency] = run(controls, [SingleModel(model)], concurrency=concurrency)
            samples[concurrency].append(time.perf_counter() - start)
    timing = {c: statistics.median(v) for c, v in samples.items()}
    httpd.shutdown()
    httpd.server_close()

    report = {
        "stand_ins": {"episodes": len(result.episodes), "tasks": 50, "strategies": len(strategies), "seeds": 5,
                      "seconds": times, "median_s": statistics.median(times), "success": rates},
        "mock_backend": {"latency_s": 0.1, "episodes": 40, "seconds_concurrency_1": timing[1],
                         "seconds_concurrency_8": timing[8], "speedup": timing[1] / timing[8],
                         "samples_concurrency_1": samples[1], "samples_concurrency_8": samples[8],
                         "identical_results": results[1] == results[8]},
        "environment": environment(["combo-redteam", "icml25-shared", "numpy", "jsonschema"]),
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(report, indent=2))
    s, m = report["stand_ins"], report["mock_backend"]
    print("| run | size | time | note |\n|---|---|---|---|")
    print(f"| stand-ins, every strategy | 50 tasks x 6 strategies x 5 seeds = {s['episodes']} episodes | "
          f"{s['median_s']:.2f} s (median of {args.repeats}) | success: " +
          ", ".join(f"{k} {v:.2f}" for k, v in rates.items()) + " |")
    print(f"| mock backend, 100 ms per call | 40 episodes, concurrency 1 | {m['seconds_concurrency_1']:.2f} s "
          f"(median of {args.repeats}) | |")
    print(f"| mock backend, 100 ms per call | 40 episodes, concurrency 8 | {m['seconds_concurrency_8']:.2f} s "
          f"(median of {args.repeats}) | "
          f"{m['speedup']:.1f}x faster, identical results: {m['identical_results']} |")


if __name__ == "__main__":
    main()

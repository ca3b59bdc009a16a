"""Device check for one accelerator: the device-sensitive tests, then attack and embedding timings.

    python packages/de-antifake/benchmarks/gpu.py --device cuda --out packages/de-antifake/results/gpu.json

Runs ``tests/test_device.py`` and ``tests/test_level.py`` with ``DE_ANTIFAKE_TEST_DEVICE`` set to the
device (waveforms follow the encoder's device; the attack on the device equals the CPU attack), then
times ``embed`` and ``attackvc`` (float32 and bfloat16 autocast) on the device beside the CPU. Hard
limit: 7 minutes, after which what is done is written and the script exits 3. ``--tiny --no-tests`` is the CPU smoke run of the test suite.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
from pathlib import Path

from icml25_shared.bench import hard_limit, time_call, write_results

HERE = Path(__file__).resolve().parent


def _timed(fn, repeats: int) -> float:
    """Fastest of ``repeats`` CUDA-synchronised calls (the first call included: it is what a user waits for)."""
    return time_call(fn, warmup=0, repeats=repeats).min_s


def run(device: str, *, tiny: bool, tests: bool, out: dict, path: str) -> dict:
    """Run the checks on ``device`` into ``out``, written to ``path`` as each row ends; return ``out``."""
    import numpy as np
    import torch

    from de_antifake import attackvc
    from de_antifake.encoder import ResemblyzerEncoder

    out.update({"device": device, "torch": torch.__version__, "python": platform.python_version(),
                "device_name": torch.cuda.get_device_name(0) if device.startswith("cuda") else platform.processor()})
    if tests:
        env = {**os.environ, "DE_ANTIFAKE_TEST_DEVICE": device}
        proc = subprocess.run([sys.executable, "-m", "pytest", str(HERE.parent / "tests" / "test_device.py"),
                               str(HERE.parent / "tests" / "test_level.py"), "-q", "-p", "no:cacheprovider"],
                              env=env, capture_output=True, text=True, timeout=300)
        out["tests"] = {"exit_code": proc.returncode, "summary": proc.stdout.strip().splitlines()[-1:]}
    n, seconds, iters = (2, 1.0, 1) if tiny else (40, 2.0, 5)
    if tiny:
        torch.manual_seed(0)
        enc = ResemblyzerEncoder(hidden_size=16, embedding_size=8, num_layers=1)
    else:
        enc = ResemblyzerEncoder.from_pretrained()
    x = np.random.default_rng(0).normal(0, 0.1, (n, int(seconds * 16000))).astype(np.float32)
    target = np.ones(enc.linear.out_features, np.float32) / np.sqrt(enc.linear.out_features)
    out["sizes"] = {"clips": n, "seconds": seconds, "iters": iters}
    rows = out.setdefault("timings", {})
    for where in dict.fromkeys(["cpu", device]):
        model = enc.to(where)
        for precision in ("float32", "bfloat16"):
            adv = attackvc(x, target, eps=0.01, encoder=model, iters=iters, precision=precision)
            rows[f"{where} {precision}"] = {
                "attack_seconds": _timed(lambda m=model, p=precision: attackvc(x, target, eps=0.01, encoder=m,
                                                                               iters=iters, precision=p), 1),
                "embed_seconds": _timed(lambda m=model: m.embed(torch.from_numpy(x)), 2),
                "max_abs_delta": float(np.abs(adv - x).max())}
            write_results(out, path)
    return out


def main(argv: list[str] | None = None) -> int:
    """Command line; see the module docstring."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--device", default="cuda")
    parser.add_argument("--out", default=str(HERE.parent / "results" / "gpu.json"))
    parser.add_argument("--tiny", action="store_true", help="smallest sizes (the CPU smoke run)")
    parser.add_argument("--no-tests", action="store_true", help="skip the device-sensitive test files")
    args = parser.parse_args(argv)
    with hard_limit(420, {}, args.out) as res:  # 7 minutes
        run(args.device, tiny=args.tiny, tests=not args.no_tests, out=res, path=args.out)
    write_results(res, args.out)
    print(json.dumps(res, indent=1))
    return 0 if res.get("tests", {}).get("exit_code", 0) == 0 else 1


if __name__ == "__main__":
    raise SystemExit(main())

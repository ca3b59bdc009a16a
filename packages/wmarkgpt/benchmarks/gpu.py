"""Device check for one accelerator: the device-sensitive tests, then analyzer and trainer timings.

    python packages/wmarkgpt/benchmarks/gpu.py --device cuda --out packages/wmarkgpt/results/gpu.json

Runs ``tests/test_real_inputs.py`` with ``WMARKGPT_TEST_DEVICE`` set to the device (inputs follow the
model's device and dtype, ``from_pretrained(device_map=..., torch_dtype=...)``), then scores and
describes images and trains one step on the device in float32 and bfloat16, beside the same calls on
the CPU. Hard limit: 7 minutes, after which what is done is written and the script exits 3. ``--tiny --no-tests`` is the CPU smoke run of the test suite.
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

    from wmarkgpt import WatermarkAnalyzer
    from wmarkgpt.data import make_synthetic_dataset
    from wmarkgpt.modeling import WMarkGPTForCausalLM, tiny_config
    from wmarkgpt.processing import build_image_processor, build_word_tokenizer
    from wmarkgpt.training import train_stage

    out.update({"device": device, "torch": torch.__version__, "python": platform.python_version(),
                "device_name": torch.cuda.get_device_name(0) if device.startswith("cuda") else platform.processor()})
    if tests:
        env = {**os.environ, "WMARKGPT_TEST_DEVICE": device}
        proc = subprocess.run([sys.executable, "-m", "pytest", str(HERE.parent / "tests" / "test_real_inputs.py"),
                               "-q", "-p", "no:cacheprovider"], env=env, capture_output=True, text=True, timeout=300)
        out["tests"] = {"exit_code": proc.returncode, "summary": proc.stdout.strip().splitlines()[-1:]}
    n, size = (4, 16) if tiny else (64, 32)
    items = make_synthetic_dataset(n, size=size, random_state=0)
    tok = build_word_tokenizer([x.question + " " + x.answer for x in items],
                               extra_words=["USER: ASSISTANT:", "invisible faint moderate visible obvious"])
    proc_ = build_image_processor(size)
    images = [x.image for x in items]
    rows = out.setdefault("timings", {})
    for dtype in (torch.float32, torch.bfloat16):
        for where in dict.fromkeys(["cpu", device]):
            torch.manual_seed(0)
            cfg = tiny_config(vocab_size=len(tok), eos_token_id=tok.eos_token_id, image_size=size,
                              patch_size=4, conv_stem=(16, 16, 16), aux_head=True)
            model = WMarkGPTForCausalLM(cfg).to(device=where, dtype=dtype)
            an = WatermarkAnalyzer(model, tok, proc_, max_new_tokens=8)
            scores = an.visibility_score(images)
            key = f"{where} {str(dtype).removeprefix('torch.')}"
            rows[key] = {"score_seconds": _timed(lambda an=an: an.visibility_score(images), 2),
                         "generate_seconds": _timed(lambda an=an: an.generate(images[:8]), 1),
                         "train_step_seconds": _timed(lambda m=model: train_stage(
                             m, items, tokenizer=tok, image_processor=proc_, stage=2, epochs=1, batch_size=n,
                             random_state=0, aux_weight=1.0), 1),
                         "first_scores": [float(s) for s in np.asarray(scores)[:4]]}
            write_results(out, path)
    if device != "cpu":
        a, b = rows["cpu float32"]["first_scores"], rows[f"{device} float32"]["first_scores"]
        out["max_score_difference_float32"] = float(max(abs(x - y) for x, y in zip(a, b, strict=True)))
    return out


def main(argv: list[str] | None = None) -> int:
    """Command line; see the module docstring."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--device", default="cuda")
    parser.add_argument("--out", default=str(HERE.parent / "results" / "gpu.json"))
    parser.add_argument("--tiny", action="store_true", help="smallest sizes (the CPU smoke run)")
    parser.add_argument("--no-tests", action="store_true", help="skip the device-sensitive test file")
    args = parser.parse_args(argv)
    with hard_limit(420, {}, args.out) as res:  # 7 minutes
        run(args.device, tiny=args.tiny, tests=not args.no_tests, out=res, path=args.out)
    write_results(res, args.out)
    print(json.dumps(res, indent=1))
    return 0 if res.get("tests", {}).get("exit_code", 0) == 0 else 1


if __name__ == "__main__":
    raise SystemExit(main())

"""Where the relevance of a trained Shapes model leaks: per-layer conservation report.

For the three Shapes models of ``reproduce --quick --seed 0`` (and the same seeds trained with an unbiased
head), explain the 40 test graphs with EquiGX (split) and report, per layer, the median over graphs of
``layer_leak / output`` (the share of the explained logit each part does not pass on) and of the bias share
``layer_bias / output``; then the same in float64 and with a smaller ``eps``.

Run: ``OMP_NUM_THREADS=1 python packages/equigx/studies/leak_by_layer.py`` (writes
``packages/equigx/results/leak-by-layer.json``).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import numpy as np
import torch

sys.path.insert(0, str(Path(__file__).parent))
from shapes_models import shapes_models  # noqa: E402

from equigx import EquiGX  # noqa: E402
from equigx.train import accuracy  # noqa: E402

OUT = Path(__file__).parents[1] / "results" / "leak-by-layer.json"


def report(model, test, *, eps=1e-9, dtype=torch.float32, variant="split"):
    model = model.to(dtype)
    exp = EquiGX(model, variant=variant, eps=eps).explain(test.to(dtype))
    model.float()
    out = np.abs(exp.output)
    rows = {}
    for name, leak, bias in zip(exp.layer_names, exp.layer_leak, exp.layer_bias, strict=True):
        rows[name] = {"leak_median": float(np.median(leak / out)), "leak_abs_median": float(np.median(np.abs(leak) / out)),
                      "bias_median": float(np.median(bias / out)),
                      "stabiliser_abs_median": float(np.median(np.abs(leak - bias) / out))}
    return {"relative_leak_median": float(np.nanmedian(exp.relative_leak)),
            "relative_leak_max": float(np.nanmax(exp.relative_leak)), "layers": rows}


def main():
    torch.set_num_threads(1)
    result = {}
    for head_bias in (True, False):
        for i, model, test, _ in shapes_models(0, head_bias=head_bias):
            key = f"seed{i}-{'biased' if head_bias else 'unbiased'}-head"
            entry = {"test_accuracy": accuracy(model, test),
                     "float32": report(model, test), "float64": report(model, test, dtype=torch.float64),
                     "float64_eps1e-14": report(model, test, dtype=torch.float64, eps=1e-14),
                     "float32_node": report(model, test, variant="node")}
            result[key] = entry
            print(key, f"acc {entry['test_accuracy']:.3f}",
                  " ".join(f"{k}:{v['relative_leak_median']:.2e}" for k, v in entry.items() if isinstance(v, dict)))
            for name, row in entry["float32"]["layers"].items():
                if abs(row["leak_abs_median"]) > 1e-4:
                    print(f"   {name:18s} leak {row['leak_median']:+.4f} |leak| {row['leak_abs_median']:.4f} "
                          f"bias {row['bias_median']:+.4f} eps {row['stabiliser_abs_median']:.2e}")
    OUT.write_text(json.dumps(result, indent=1))


if __name__ == "__main__":
    main()

"""Train (or load from a cache) the Shapes models of ``reproduce --quick`` for a root seed, as reproduce does.

Used by the leak and AUROC diagnosis scripts beside it. The cache (state dicts) goes to
``$EQUIGX_CACHE`` (default ``/tmp/equigx-cache``), never into the repository.
"""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import torch
from icml25_shared.random import spawn

from equigx.experiments import SETTINGS, fit_task
from equigx.models import TFN

CACHE = Path(os.environ.get("EQUIGX_CACHE", "/tmp/equigx-cache"))


def shapes_models(root_seed: int, *, n_seeds: int = 3, head_bias: bool = True):
    """``[(seed_index, model, test_graphs, train_seconds)]`` for the Shapes task of ``reproduce --seed root_seed``."""
    torch.set_num_threads(1)
    task_rng = spawn(root_seed, 2)[0]  # tasks are ("shapes", "spiral")
    out = []
    for i, rng in enumerate(spawn(task_rng, n_seeds)):
        path = CACHE / f"shapes-root{root_seed}-seed{i}-bias{int(head_bias)}.pt"
        if path.exists():
            from equigx.data import make_shapes

            cfg = SETTINGS["shapes"]
            _, test_rng, _, _ = spawn(rng, 4)
            test = make_shapes(cfg["n_test"][True], random_state=test_rng)
            model = TFN(**cfg["model"], head_bias=head_bias)
            model.load_state_dict(torch.load(path))
            out.append((i, model.eval(), test, float("nan")))
            continue
        if head_bias:
            model, _, test, seconds = fit_task("shapes", rng, quick=True)
        else:
            import equigx.experiments as ex

            old = ex.SETTINGS["shapes"]["model"]
            ex.SETTINGS["shapes"]["model"] = {**old, "head_bias": False}
            try:
                model, _, test, seconds = fit_task("shapes", rng, quick=True)
            finally:
                ex.SETTINGS["shapes"]["model"] = old
        CACHE.mkdir(parents=True, exist_ok=True)
        torch.save(model.state_dict(), path)
        out.append((i, model, test, seconds))
    return out


if __name__ == "__main__":
    import sys

    for seed in map(int, sys.argv[1:] or ["0"]):
        for i, model, test, s in shapes_models(seed):
            from equigx.train import accuracy

            print(seed, i, f"accuracy {accuracy(model, test):.3f}", f"train {s:.0f} s", np.nan)

"""Diagnosis probe: is the quick protocol's failure under-training or a bug?

Trains the quick protocol's models (seed 0, same sizes and learning rates) for 1500 steps instead of
150-200 and evaluates every 250 steps: if the errors keep falling well past the trivial predictors, the
quick sizes are under-trained; if they stay at the trivial level, something else is wrong.

    OMP_NUM_THREADS=1 nice python packages/looped-transformers/studies/probe_training_length.py
"""

import json
import sys
import time

import torch

from looped_transformers import LoopedConfig, LoopedForCausalLM
from looped_transformers.tasks import DPTask, RegressionTask
from looped_transformers.train import LoopedRegressor, TrainConfig, answer_accuracy, regression_error, train

torch.set_num_threads(1)
STEPS, EVERY = 1500, 250
out = {}


def icl(r: int, lr: float) -> list:
    task = RegressionTask(n_dims=5, n_points=11)
    test = task.sample(1000, 12345)
    torch.manual_seed(0)
    model = LoopedRegressor(LoopedConfig(vocab_size=1, hidden_size=32, num_attention_heads=2, n_loops=r,
                                         max_position_embeddings=22), 5)
    curve = []
    rng = __import__("numpy").random.default_rng(0)
    for chunk in range(STEPS // EVERY):
        # one continuous schedule: a constant learning rate in chunks (no warm restarts)
        train(model, task, TrainConfig(steps=EVERY, batch_size=64, lr=lr, warmup_steps=30 if chunk == 0 else 0,
                                       min_lr_ratio=1.0, loss_loops=max(1, r // 2)), random_state=rng)
        curve.append(((chunk + 1) * EVERY, float(regression_error(model, test).mean())))
    return curve


def ed(r: int, lr: float) -> list:
    task = DPTask("ed", min_length=2, max_length=6, alphabet=4)
    torch.manual_seed(0)
    model = LoopedForCausalLM(LoopedConfig(vocab_size=task.vocab_size, hidden_size=32, num_attention_heads=2,
                                           n_loops=r, max_position_embeddings=task.max_sequence_length))
    curve = []
    rng = __import__("numpy").random.default_rng(0)
    for chunk in range(STEPS // EVERY):
        train(model, task, TrainConfig(steps=EVERY, batch_size=64, lr=lr, warmup_steps=30 if chunk == 0 else 0,
                                       min_lr_ratio=1.0), random_state=rng)
        curve.append(((chunk + 1) * EVERY, answer_accuracy(model, task, n=1000, random_state=777)))
    return curve


start = time.time()
for r in (2, 8):
    out[f"icl LT r={r} lr=2e-3"] = icl(r, 2e-3)
    print(out, flush=True)
    out[f"ed LT r={r} lr=3e-3"] = ed(r, 3e-3)
    print(out, flush=True)
out["seconds"] = time.time() - start
json.dump(out, sys.stdout if len(sys.argv) < 2 else open(sys.argv[1], "w"), indent=1)

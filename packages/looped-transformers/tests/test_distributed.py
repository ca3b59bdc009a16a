"""Data parallelism under torchrun (gloo, 2 CPU processes): a step equals a one-process step on the whole batch."""

import json
import os
import runpy
import subprocess
import sys

import numpy as np
import pytest
import torch

WORKER = '''
import json
import sys

import torch

from looped_transformers import LoopedConfig, LoopedForCausalLM
from looped_transformers.tasks import CharLMTask, RegressionTask, TokenBatch
from looped_transformers.train import Curriculum, LoopedRegressor, TrainConfig, init_distributed, train


class MaskedLM:
    """Char LM windows with a random share of unlabelled positions: shards hold unequal token counts."""

    name, vocab_size, max_sequence_length = "masked", 128, 12

    def __init__(self):
        self.base = CharLMTask(seq_len=12, n_chars=20_000)

    def check_vocab(self, vocab_size):
        self.base.check_vocab(vocab_size)

    def sample(self, n, rng):
        batch = self.base.sample(n, rng)
        labels = batch.labels.masked_fill(torch.from_numpy(rng.random(batch.labels.shape) < 0.6), -100)
        return TokenBatch(batch.input_ids, labels, [])


def run():
    rank, world = init_distributed()
    torch.set_num_threads(1)
    torch.manual_seed(0)
    lm = LoopedForCausalLM(LoopedConfig(vocab_size=128, hidden_size=16, num_attention_heads=2, n_loops=3,
                                        timestep="tmlt", max_position_embeddings=12))
    a = train(lm, MaskedLM(), TrainConfig(steps=3, batch_size=6, lr=1e-2, warmup_steps=1, loss_loops=2),
              random_state=0)
    torch.manual_seed(1)
    reg = LoopedRegressor(LoopedConfig(vocab_size=1, hidden_size=16, num_attention_heads=2, n_loops=2,
                                       max_position_embeddings=10), 3)
    b = train(reg, RegressionTask(n_dims=3, n_points=5), TrainConfig(
        steps=3, batch_size=4, lr=1e-2, warmup_steps=1, loss_loops=2,
        dims_curriculum=Curriculum(start=2, end=3), points_curriculum=Curriculum(start=4, end=5)), random_state=1)
    flat = lambda m: torch.cat([p.detach().flatten() for p in m.parameters()]).tolist()
    mismatch = None
    if world > 1:  # a different seed per process would silently train on unrelated shards
        try:
            train(reg, RegressionTask(n_dims=3, n_points=5), TrainConfig(steps=1, batch_size=4), random_state=rank)
        except ValueError as err:
            mismatch = str(err)
    return {"rank": rank, "world": world, "lm": [a.losses, a.grad_norms, flat(lm)],
            "reg": [b.losses, b.grad_norms, flat(reg)], "mismatch": mismatch}


if __name__ == "__main__":
    out = run()
    with open(f"{sys.argv[1]}/rank{out['rank']}.json", "w") as fh:
        json.dump(out, fh)
'''


def test_two_gloo_processes_under_torchrun_equal_one_process_on_the_whole_batch(tmp_path, monkeypatch):
    script = tmp_path / "worker.py"
    script.write_text(WORKER)
    env = {**os.environ, "OMP_NUM_THREADS": "1"}
    for key in ("RANK", "WORLD_SIZE", "LOCAL_RANK", "MASTER_ADDR", "MASTER_PORT"):
        env.pop(key, None)
    done = subprocess.run([sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc_per_node", "2",
                           str(script), str(tmp_path)], env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    ranks = [json.loads((tmp_path / f"rank{r}.json").read_text()) for r in (0, 1)]
    assert [r["world"] for r in ranks] == [2, 2]
    assert all("drew different batches" in r["mismatch"] for r in ranks)
    for key in ("RANK", "WORLD_SIZE"):
        monkeypatch.delenv(key, raising=False)
    single = runpy.run_path(str(script))["run"]()  # the same code in this process: no group, whole batch
    assert single["world"] == 1
    for model in ("lm", "reg"):
        losses, norms, params = single[model]
        for rank in ranks:
            r_losses, r_norms, r_params = rank[model]
            assert np.allclose(r_losses, losses, rtol=1e-5, atol=1e-7), (model, r_losses, losses)
            assert np.allclose(r_norms, norms, rtol=1e-5, atol=1e-7), (model, r_norms, norms)
            # float32 reduction order only: a wrong gradient would move the weights by ~lr = 1e-2
            assert np.abs(np.subtract(r_params, params)).max() < 1e-4, model
        assert len(set(map(len, (losses, norms)))) == 1 and min(norms) > 0


def test_uneven_batches_and_a_bad_environment_raise(monkeypatch):
    from looped_transformers.train import init_distributed

    monkeypatch.delenv("RANK", raising=False)
    assert init_distributed() == (0, 1)  # not under torchrun: nothing to join
    monkeypatch.setenv("RANK", "0")
    monkeypatch.delenv("WORLD_SIZE", raising=False)
    with pytest.raises(ValueError, match="WORLD_SIZE is not"):
        init_distributed()
    monkeypatch.setenv("WORLD_SIZE", "1")
    with pytest.raises(ValueError, match="backend must be"):
        init_distributed("mpi")
    assert not torch.distributed.is_initialized()


def test_the_default_backend_fits_the_cpu_training_loop_on_a_cuda_machine(monkeypatch):
    from looped_transformers import train as train_module

    seen = {}
    monkeypatch.setattr(train_module.dist, "is_initialized", lambda: "backend" in seen)
    monkeypatch.setattr(train_module.dist, "init_process_group", lambda backend: seen.update(backend=backend))
    monkeypatch.setattr(train_module.dist, "get_rank", lambda: 0)
    monkeypatch.setattr(train_module.dist, "get_world_size", lambda: 2)
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    for key, value in (("RANK", "0"), ("WORLD_SIZE", "2"), ("MASTER_ADDR", "127.0.0.1"), ("MASTER_PORT", "29500")):
        monkeypatch.setenv(key, value)
    # train() keeps its batches on the CPU: nccl alone cannot reduce CPU tensors, so CPU collectives use gloo
    assert train_module.init_distributed() == (0, 2) and seen["backend"] == "cpu:gloo,cuda:nccl"
    seen.clear()
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    assert train_module.init_distributed() == (0, 2) and seen["backend"] == "gloo"


def test_an_unknown_backend_raises_outside_torchrun_too(monkeypatch):
    from looped_transformers.train import init_distributed

    monkeypatch.delenv("RANK", raising=False)
    with pytest.raises(ValueError, match="backend must be"):
        init_distributed("mpi")


def test_a_world_of_one_without_a_rendezvous_address_needs_no_group(monkeypatch):
    from looped_transformers.train import init_distributed

    for key in ("MASTER_ADDR", "MASTER_PORT"):
        monkeypatch.delenv(key, raising=False)
    monkeypatch.setenv("RANK", "0")
    monkeypatch.setenv("WORLD_SIZE", "1")
    assert init_distributed() == (0, 1) and not torch.distributed.is_initialized()
    monkeypatch.setenv("WORLD_SIZE", "2")
    with pytest.raises(ValueError, match="MASTER_ADDR and MASTER_PORT not"):
        init_distributed()
    monkeypatch.setenv("MASTER_ADDR", "127.0.0.1")
    with pytest.raises(ValueError, match="but MASTER_PORT not"):
        init_distributed()

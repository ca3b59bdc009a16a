"""Inputs follow the encoder's device: checked on the meta device on CPU, on CUDA by benchmarks/gpu.py."""

import os

import numpy as np
import pytest
import torch

from de_antifake import attackvc
from de_antifake.encoder import ResemblyzerEncoder

DEVICE = os.environ.get("DE_ANTIFAKE_TEST_DEVICE", "cpu")


class _Reached(Exception):
    pass


@pytest.mark.parametrize("call", ["embed", "attackvc"])
def test_waveforms_reach_the_encoder_on_its_device(call):
    device = "meta" if DEVICE == "cpu" else DEVICE
    torch.manual_seed(0)
    enc = ResemblyzerEncoder(hidden_size=8, embedding_size=4, num_layers=1, trim_silence=False).to(device)

    def hook(module, args):
        assert args[0].device.type == torch.device(device).type, f"input on {args[0].device}, model on {device}"
        raise _Reached

    handle = enc.lstm.register_forward_pre_hook(hook)
    x = np.random.default_rng(0).normal(0, 0.1, 16000).astype(np.float32)
    try:
        with pytest.raises(_Reached):
            if call == "embed":
                enc.embed(x)
            else:
                attackvc(x, np.ones(4) / 2, eps=0.01, encoder=enc, iters=1)
    finally:
        handle.remove()


@pytest.mark.skipif(DEVICE == "cpu", reason="runs on an accelerator (benchmarks/gpu.py sets the device)")
def test_attack_on_the_device_equals_the_cpu_attack():
    torch.manual_seed(0)
    enc = ResemblyzerEncoder(hidden_size=8, embedding_size=4, num_layers=1)
    x = np.random.default_rng(0).normal(0, 0.1, (2, 16000)).astype(np.float32)
    cpu = attackvc(x, np.ones(4) / 2, eps=0.01, encoder=enc, iters=3)
    dev = attackvc(x, np.ones(4) / 2, eps=0.01, encoder=enc.to(DEVICE), iters=3)
    assert np.abs(cpu - dev).max() <= 1e-3 and np.abs(dev - x).max() <= 0.01

"""Every public call that trains, loads or samples leaves the caller's global torch RNG exactly as it was.

Building a network draws its initial weights from the global generator, and a seeded fit used to call
``torch.manual_seed``; either would change what the caller's next ``torch.rand`` returns.
"""

import numpy as np
import pytest
import torch

from de_antifake.weights import shipped_weights

TINY_ECAPA = dict(channels=[16, 16, 16, 16, 48], kernel_sizes=[5, 3, 3, 3, 1], dilations=[1, 2, 3, 4, 1], se_channels=8,
                  attention_channels=8, lin_neurons=8, res2net_scale=4)


def _wave(n=16000, seed=0):
    return (0.05 * np.random.default_rng(seed).standard_normal(n)).astype(np.float32)


def _train_diffwave():
    from de_antifake.diffusion import DiffWaveConfig, train_diffwave

    cfg = DiffWaveConfig(res_channels=4, skip_channels=4, num_res_layers=2, dilation_cycle=2)
    train_diffwave(np.zeros((2, 400), np.float32), config=cfg, steps=1, batch_size=2, segment=400, random_state=0)


def _fit_refiner():
    from de_antifake.refiner import PhonemeGuidedRefiner

    w = np.zeros((2, 2560), np.float32)
    PhonemeGuidedRefiner(use_text=False, channels=2, layers=1, random_state=0).fit(w, w, steps=1, batch_size=1)


def _train_dvector(tmp_path):
    from de_antifake.dvector import DVectorConfig, DVectorEncoder, train_dvector

    cfg = DVectorConfig(hidden_size=4, embedding_size=4, num_layers=1, partial_frames=80, n_speakers=2,
                        n_utterances=2, steps=1)
    res = train_dvector([_wave(16000, i) for i in range(4)], np.array([0, 0, 1, 1]), sr=16000, config=cfg,
                        random_state=0)
    res.encoder.save(tmp_path / "dvector.pt")
    return lambda: DVectorEncoder.load(tmp_path / "dvector.pt")


def _ecapa(tmp_path):
    from de_antifake.ecapa import ECAPATDNN, load_ecapa, save_ecapa

    save_ecapa(ECAPATDNN(80, **TINY_ECAPA).eval(), tmp_path / "ecapa")
    return lambda: load_ecapa(tmp_path / "ecapa")


def _calls(tmp_path):
    from de_antifake import PhonePuRe, attackvc, load_purification_pkl, load_refinement_ckpt
    from de_antifake.encoder import ResemblyzerEncoder
    from de_antifake.weights import load_weights

    weights = shipped_weights()
    stage1, guided, _ = load_weights(weights, random_state=0)
    wav = _wave()
    return {
        "train_diffwave": _train_diffwave,
        "PhonemeGuidedRefiner.fit": _fit_refiner,
        "train_dvector": lambda: _train_dvector(tmp_path),
        "DVectorEncoder.load": _train_dvector(tmp_path),
        "load_ecapa": _ecapa(tmp_path),
        "ResemblyzerEncoder.from_pretrained": ResemblyzerEncoder.from_pretrained,
        "load_weights": lambda: load_weights(weights, random_state=0),
        "load_purification_pkl": lambda: load_purification_pkl(weights / "purification.pkl"),
        "load_refinement_ckpt": lambda: load_refinement_ckpt(weights / "refinement.ckpt"),
        "DiffWavePurifier.purify": lambda: stage1.purify(wav, 16000),
        "PhonePuRe.purify": lambda: PhonePuRe(stage1, guided).purify(wav, 16000, transcript="the word"),
        "attackvc": lambda: attackvc(wav, np.ones(256, np.float32) / 16, eps=0.01,
                                     encoder=ResemblyzerEncoder.from_pretrained(), iters=1, random_state=0),
    }


NAMES = ["train_diffwave", "PhonemeGuidedRefiner.fit", "train_dvector", "DVectorEncoder.load", "load_ecapa",
         "ResemblyzerEncoder.from_pretrained", "load_weights", "load_purification_pkl", "load_refinement_ckpt",
         "DiffWavePurifier.purify", "PhonePuRe.purify", "attackvc"]


@pytest.fixture(scope="module")
def calls(tmp_path_factory):
    out = _calls(tmp_path_factory.mktemp("rng"))
    assert sorted(out) == sorted(NAMES)
    return out


@pytest.mark.parametrize("name", NAMES)
def test_public_call_leaves_the_callers_global_torch_rng_unchanged(calls, name):
    torch.manual_seed(2024)
    expected = torch.rand(4)
    torch.manual_seed(2024)
    state = torch.random.get_rng_state()
    calls[name]()
    assert torch.equal(torch.random.get_rng_state(), state), f"{name} changed the global torch RNG state"
    torch.testing.assert_close(torch.rand(4), expected, rtol=0, atol=0)


"""Every public entry point names the parameter in TypeError (wrong type) and ValueError (wrong value)."""

import numpy as np
import pytest
import torch
from icml25_shared.testing import assert_rejects

from de_antifake import attackvc, make_corpus
from de_antifake.diffusion import DiffWave, DiffWaveConfig, DiffWavePurifier
from de_antifake.encoder import ResemblyzerEncoder
from de_antifake.retrain import load_folder, retrain


@pytest.fixture(scope="module")
def enc():
    torch.manual_seed(0)
    return ResemblyzerEncoder(hidden_size=8, embedding_size=4, num_layers=1)


def test_attackvc(enc):
    valid = {"wav": np.zeros(16000, np.float32), "target": np.ones(4) / 2, "eps": 0.01, "encoder": enc, "iters": 1}
    for name, wrong_type, wrong_value in (("eps", "0.01", 0.0), ("iters", 2.5, 0), ("method", 1, "fgsm"),
                                          ("lr", "big", -1.0), ("min_snr_db", "25", float("nan")),
                                          ("precision", None, "float16"), ("adaptive", 1, "pgd"),
                                          ("eot_samples", 2.0, 0), ("random_state", "0", -1)):
        assert_rejects(attackvc, name, wrong_type=wrong_type, wrong_value=wrong_value,
                       **{k: v for k, v in valid.items() if k != name})
    with pytest.raises(ValueError, match="min_snr_db"):
        attackvc(**valid | {"min_snr_db": float("inf")})


def test_encoder():
    sizes = {"hidden_size": 4, "embedding_size": 4, "num_layers": 1}
    assert_rejects(ResemblyzerEncoder, "level_dbfs", wrong_type="-30", wrong_value=3.0, **sizes)
    with pytest.raises(TypeError, match="trim_silence"):
        ResemblyzerEncoder(trim_silence="yes", **sizes)


def test_corpus_and_purifier():
    assert_rejects(make_corpus, "n_speakers", wrong_type="2", wrong_value=0, n_utterances=1, seconds=1.0)
    assert_rejects(make_corpus, "seconds", wrong_type="1", wrong_value=0.0, n_speakers=1, n_utterances=1)
    cfg = DiffWaveConfig(res_channels=4, skip_channels=4, num_res_layers=1, dilation_cycle=1,
                         diffusion_step_embed_dim_in=8, diffusion_step_embed_dim_mid=8, diffusion_step_embed_dim_out=8)
    model = DiffWave(cfg)
    with pytest.raises(ValueError, match="t"):
        DiffWavePurifier(model, t=500)  # beyond the schedule
    assert_rejects(DiffWavePurifier, "reverse", wrong_type=1, wrong_value="ode", model=model)
    assert_rejects(DiffWavePurifier, "sde_steps", wrong_type="10", wrong_value=0, model=model)


def test_retrain(tmp_path):
    assert_rejects(retrain, "stage1_steps", wrong_type=1.5, wrong_value=0, data=tmp_path, out=tmp_path / "w")
    assert_rejects(load_folder, "seconds", wrong_type="2", wrong_value=0.0, data=tmp_path)

"""Stage 1: schedule identities, the oracle-noise DDPM recovery and the official checkpoint layout."""

import json

import numpy as np
import pytest
import torch

from de_antifake.diffusion import (
    DiffusionSchedule,
    DiffWave,
    DiffWaveConfig,
    DiffWavePurifier,
    load_purification_pkl,
    save_purification_pkl,
    train_diffwave,
)

TINY = DiffWaveConfig(res_channels=8, skip_channels=8, num_res_layers=3, dilation_cycle=2, diffusion_step_embed_dim_in=16,
                      diffusion_step_embed_dim_mid=16, diffusion_step_embed_dim_out=16)


def test_schedule_equals_closed_forms():
    s = DiffusionSchedule()
    k = np.arange(200)
    beta = 1e-4 + k * (0.02 - 1e-4) / 199
    np.testing.assert_allclose(s.beta.numpy(), beta, rtol=1e-12)
    np.testing.assert_allclose(s.alpha_bar.numpy(), np.cumprod(1 - beta), rtol=1e-12)
    tilde = beta[1:] * (1 - np.cumprod(1 - beta)[:-1]) / (1 - np.cumprod(1 - beta)[1:])
    np.testing.assert_allclose(s.sigma.numpy()[1:] ** 2, tilde, rtol=1e-10)
    # t* = 3 keeps almost all of the signal: sqrt(alpha_bar_3) = 0.99966 (noise std 0.026)
    assert float(s.alpha_bar[2].sqrt()) == pytest.approx(np.sqrt(np.prod(1 - beta[:3])), rel=1e-12)


def test_q_sample_at_zero_is_identity_and_matches_the_marginal():
    s = DiffusionSchedule()
    x0 = torch.randn(3, 1, 50, dtype=torch.float64)
    noise = torch.randn_like(x0)
    assert s.q_sample(x0, 0, noise) is x0
    ab = float(np.prod(1 - s.beta.numpy()[:5]))
    torch.testing.assert_close(s.q_sample(x0, 5, noise), np.sqrt(ab) * x0 + np.sqrt(1 - ab) * noise)
    with pytest.raises(ValueError, match="outside"):
        s.q_sample(x0, 201, noise)


@pytest.mark.parametrize("t_star", [1, 3, 50, 200])
@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_ddpm_reverse_with_oracle_noise_recovers_x0(t_star, dtype):
    s = DiffusionSchedule()
    g = torch.Generator().manual_seed(t_star)
    x0 = 0.3 * torch.randn(4, 1, 400, generator=g, dtype=dtype)
    x = s.q_sample(x0, t_star, torch.randn(x0.shape, generator=g, dtype=dtype))
    for t in range(t_star, 0, -1):
        ab = s.alpha_bar[t - 1].to(dtype)
        oracle = (x - ab.sqrt() * x0) / (1 - ab).sqrt()  # the exact noise of the current x_t
        x = s.step(x, t, oracle, torch.randn(x0.shape, generator=g, dtype=dtype))
    assert float((x - x0).abs().max()) < 1e-5


def test_reverse_step_mean_is_the_posterior_mean():
    s = DiffusionSchedule()
    x0, xt = torch.randn(10, dtype=torch.float64), torch.randn(10, dtype=torch.float64)
    t = 7
    a, ab, abp = s.alpha[t - 1], s.alpha_bar[t - 1], s.alpha_bar[t - 2]
    eps = (xt - ab.sqrt() * x0) / (1 - ab).sqrt()
    posterior = abp.sqrt() * s.beta[t - 1] / (1 - ab) * x0 + a.sqrt() * (1 - abp) / (1 - ab) * xt
    torch.testing.assert_close(s.step(xt, t, eps, None), posterior)


def test_checkpoint_round_trip_in_the_official_layout(tmp_path):
    torch.manual_seed(0)
    net = DiffWave(TINY)
    with torch.no_grad():
        net.final_conv[2].conv.weight.normal_()  # the zero-initialised last layer would hide differences
    path = save_purification_pkl(net, tmp_path / "purification.pkl")
    raw = torch.load(path, weights_only=True)
    keys = set(raw["model_state_dict"])
    assert {"init_conv.0.conv.weight_g", "init_conv.0.conv.weight_v", "residual_layer.fc_t1.weight",
            "residual_layer.residual_blocks.2.dilated_conv_layer.conv.weight_v",
            "residual_layer.residual_blocks.0.res_conv.weight_g", "residual_layer.residual_blocks.0.skip_conv.bias",
            "final_conv.0.conv.weight_v", "final_conv.2.conv.weight"} <= keys
    cfg = json.loads((tmp_path / "config.json").read_text())
    assert cfg["diffusion_config"] == {"T": 200, "beta_0": 0.0001, "beta_T": 0.02}
    loaded, sched = load_purification_pkl(path)
    x = torch.randn(2, 1, 300)
    steps = torch.tensor([0, 4])
    torch.testing.assert_close(loaded(x, steps), net(x, steps), rtol=0, atol=0)
    wav = np.random.default_rng(0).normal(0, 0.1, 20000)
    a = DiffWavePurifier(net, t=3, random_state=1).purify(wav, 16000)
    b = DiffWavePurifier(loaded, schedule=sched, t=3, random_state=1).purify(wav, 16000)
    np.testing.assert_array_equal(a, b)
    # without config.json a non-official size is refused (its dilation cycle, 2 here, is not in the weights)
    cfg_dict = json.loads((tmp_path / "config.json").read_text())
    (tmp_path / "config.json").unlink()
    with pytest.raises(ValueError, match="dilation cycle"):
        load_purification_pkl(path)
    again, _ = load_purification_pkl(path, config=cfg_dict)
    torch.testing.assert_close(again(x, steps), net(x, steps), rtol=0, atol=0)


def test_official_size_without_config_assumes_the_official_cycle(tmp_path):
    torch.save({"model_state_dict": DiffWave(DiffWaveConfig()).state_dict()}, tmp_path / "purification.pkl")
    model, sched = load_purification_pkl(tmp_path / "purification.pkl")
    assert model.config == DiffWaveConfig() and sched.T == 200


def test_official_default_size():
    cfg = DiffWaveConfig()
    assert (cfg.num_res_layers, cfg.res_channels, cfg.dilation_cycle) == (36, 256, 12)


def test_missing_checkpoint_names_the_path(tmp_path):
    with pytest.raises(FileNotFoundError, match="purification.pkl"):
        load_purification_pkl(tmp_path / "purification.pkl")


def test_purifier_is_deterministic_and_chunked():
    net = DiffWave(TINY).eval()
    wav = np.random.default_rng(1).normal(0, 0.1, 24000)
    p = DiffWavePurifier(net, t=3, random_state=5)
    np.testing.assert_array_equal(p.purify(wav, 16000), p.purify(wav, 16000))
    with pytest.raises(ValueError, match="sampling rate"):
        p.purify(wav, None)
    with pytest.raises(ValueError, match="NaN"):
        p.purify(np.full(100, np.nan), 16000)


def test_sde_reverse_runs_and_stays_close():
    pytest.importorskip("torchsde")
    net = DiffWave(TINY).eval()  # zero last layer: eps = 0, the reverse SDE only rescales and adds noise
    wav = np.sin(np.linspace(0, 400, 16000)) * 0.3
    out = DiffWavePurifier(net, t=3, reverse="sde", sde_steps=4, random_state=0).purify(wav, 16000)
    assert out.shape == wav.shape and np.isfinite(out).all()
    assert np.std(out - wav) < 0.1


def test_training_leaves_the_callers_torch_rng_alone():
    torch.manual_seed(123)
    expected = torch.rand(3)
    torch.manual_seed(123)
    a = train_diffwave(np.zeros((2, 400), np.float32), config=TINY, steps=1, batch_size=2, segment=400, random_state=0)
    torch.testing.assert_close(torch.rand(3), expected)
    b = train_diffwave(np.zeros((2, 400), np.float32), config=TINY, steps=1, batch_size=2, segment=400, random_state=0)
    for p, q in zip(a.parameters(), b.parameters(), strict=True):
        torch.testing.assert_close(p, q, rtol=0, atol=0)


def test_peak_normalisation_is_undone_and_scale_equivariant():
    net = DiffWave(TINY).eval()
    with torch.no_grad():
        net.final_conv[2].conv.weight.normal_(0, 0.1)
    wav = np.random.default_rng(2).normal(0, 0.02, 20000).astype(np.float32)
    p = DiffWavePurifier(net, t=3, peak=0.95, random_state=4)
    # the same noise acts at the same relative level whatever the input gain, and the gain is undone
    np.testing.assert_allclose(p.purify(3 * wav, 16000), 3 * p.purify(wav, 16000), rtol=1e-4, atol=1e-6)
    assert np.array_equal(p.purify(np.zeros(100), 16000), p.purify(np.zeros(100), 16000))
    assert np.isfinite(p.purify(np.zeros(100), 16000)).all()  # a silent clip is not divided by zero
    # without peak the fixed diffusion noise meets a quiet clip at a lower SNR
    plain = DiffWavePurifier(net, t=3, random_state=4)
    assert not np.allclose(plain.purify(3 * wav, 16000), 3 * plain.purify(wav, 16000), rtol=1e-2)
    for bad in (0.0, -1.0, 1.5):
        with pytest.raises(ValueError, match="peak"):
            DiffWavePurifier(net, peak=bad)


def test_training_settings_are_checked_and_ema_is_returned():
    w = np.random.default_rng(0).normal(0, 0.05, (2, 3000)).astype(np.float32)
    with pytest.raises(ValueError, match="max_t"):
        train_diffwave(w, config=TINY, steps=1, segment=1024, max_t=0)
    with pytest.raises(ValueError, match="ema_decay"):
        train_diffwave(w, config=TINY, steps=1, segment=1024, ema_decay=1.0)
    with pytest.raises(ValueError, match="segment"):
        train_diffwave(w, config=TINY, steps=1, segment=4096)
    last = train_diffwave(w, config=TINY, steps=3, segment=1024, ema_decay=0.0, random_state=0)
    avg = train_diffwave(w, config=TINY, steps=3, segment=1024, ema_decay=0.9, random_state=0)
    diff = [float((a - b).abs().max().detach()) for a, b in zip(last.parameters(), avg.parameters(), strict=True)]
    assert max(diff) > 0  # the average of the iterates, not the last one


def test_saving_beside_another_config_is_refused(tmp_path):
    from dataclasses import replace

    save_purification_pkl(DiffWave(TINY), tmp_path / "a.pkl")
    other = DiffWave(replace(TINY, dilation_cycle=TINY.dilation_cycle + 1))  # same shapes, other cycle
    with pytest.raises(ValueError, match="config.json"):
        save_purification_pkl(other, tmp_path / "b.pkl")
    a, _ = load_purification_pkl(tmp_path / "a.pkl")
    assert a.config == TINY
    save_purification_pkl(DiffWave(TINY), tmp_path / "c.pkl")  # the same config may share the folder
    save_purification_pkl(other, tmp_path / "solo" / "a.pkl")
    save_purification_pkl(DiffWave(TINY), tmp_path / "solo" / "a.pkl")  # replacing the only checkpoint is fine
    assert load_purification_pkl(tmp_path / "solo" / "a.pkl")[0].config == TINY


@pytest.mark.parametrize("kw", [{"chunk_seconds": 1e-5}, {"sde_steps": 0}])
def test_zero_sample_chunks_and_zero_sde_steps_are_refused(kw):
    with pytest.raises(ValueError, match="chunk_seconds|sde_steps"):
        DiffWavePurifier(DiffWave(TINY), **kw)


def test_fractional_diffusion_steps_are_refused():
    for t in (3.7, 0.5, True):
        with pytest.raises(ValueError, match="whole number"):
            DiffWavePurifier(DiffWave(TINY), t=t)
    assert DiffWavePurifier(DiffWave(TINY), t=3.0).t == 3 and DiffWavePurifier(DiffWave(TINY), t=np.int64(2)).t == 2

"""Baselines behind one interface; codecs skip with a reason; refiner layout round trip; PhonePuRe errors."""

import copy

import numpy as np
import pytest
import torch

from de_antifake.purifiers import (
    AveragePurifier,
    BandPassPurifier,
    CodecPurifier,
    DownsamplePurifier,
    LowPassPurifier,
    MedianPurifier,
    Purifier,
    available_codecs,
)

BASELINES = [AveragePurifier(), MedianPurifier(), DownsamplePurifier(), LowPassPurifier(), BandPassPurifier()]


def _tone(freq, n=16000):
    return (0.3 * np.sin(2 * np.pi * freq * np.arange(n) / 16000)).astype(np.float32)


@pytest.mark.parametrize("pur", BASELINES, ids=lambda p: p.name)
def test_baselines_share_the_interface(pur):
    assert isinstance(pur, Purifier)
    x = _tone(440) + _tone(6500)
    y = pur.purify(x, 16000)
    assert y.shape == x.shape and y.dtype == np.float32 and np.isfinite(y).all()
    with pytest.raises(ValueError, match="sampling rate"):
        pur.purify(x, None)


def _band_energy(y, f):
    spec = np.abs(np.fft.rfft(y[2000:-2000]))
    freqs = np.fft.rfftfreq(len(y) - 4000, 1 / 16000)
    return spec[np.abs(freqs - f) < 20].sum()


def test_filters_remove_what_they_should():
    x = _tone(440) + _tone(6500)
    for pur in (LowPassPurifier(), BandPassPurifier(), DownsamplePurifier()):
        y = pur.purify(x, 16000)
        assert _band_energy(y, 6500) < 0.01 * _band_energy(x, 6500), pur.name
        assert _band_energy(y, 440) > 0.9 * _band_energy(x, 440), pur.name
    assert _band_energy(BandPassPurifier().purify(_tone(100), 16000), 100) < 0.1 * _band_energy(_tone(100), 100)
    # a 3-tap median removes an isolated spike, a 3-tap mean spreads it
    spike = np.zeros(101, np.float32)
    spike[50] = 1.0
    assert MedianPurifier().purify(spike, 16000).max() == 0.0
    np.testing.assert_allclose(AveragePurifier().purify(spike, 16000)[49:52], 1 / 3, rtol=1e-6)


def test_codecs_are_usable_or_skipped_with_a_reason():
    status = available_codecs()
    assert set(status) == {"MP3", "OPUS", "AAC", "SPEEX", "AMR"}
    for name, reason in status.items():
        if reason is None:
            y = CodecPurifier(name).purify(_tone(440), 16000)
            assert y.shape == (16000,)
        else:
            with pytest.raises(RuntimeError, match=name):
                CodecPurifier(name)


def test_bad_purifier_settings():
    with pytest.raises(ValueError):
        LowPassPurifier(cutoff=9000)
    with pytest.raises(ValueError):
        BandPassPurifier(low=4000, high=300)
    with pytest.raises(ValueError):
        CodecPurifier("WAVPACK")


@pytest.fixture(scope="module")
def tiny_refiners(small_corpus):
    from de_antifake.phoneme import PhonemeSpectra
    from de_antifake.refiner import PhonemeGuidedRefiner

    w = np.stack([u.wav[:128 * 40] for u in small_corpus.utterances[:3]])
    align = [[("sil", 40)]] * 3
    spectra = PhonemeSpectra().fit([(u.wav, u.alignment) for u in small_corpus.utterances])
    noisy = w + 0.005 * np.random.default_rng(0).standard_normal(w.shape).astype(np.float32)
    guided = PhonemeGuidedRefiner(channels=4, layers=1, N=3, random_state=0).fit(
        w, noisy, alignments=align, spectra=spectra, steps=2, batch_size=2)
    plain = PhonemeGuidedRefiner(use_text=False, channels=4, layers=1, N=3, random_state=0).fit(w, noisy, steps=2, batch_size=2)
    return guided, plain, noisy


def test_refiner_checkpoint_round_trip(tmp_path, tiny_refiners):
    from de_antifake.refiner import load_refinement_ckpt, save_refinement_ckpt

    for ref in tiny_refiners[:2]:
        path = save_refinement_ckpt(ref, tmp_path / f"{ref.use_text}" / "refinement.ckpt")
        raw = torch.load(path, weights_only=True)
        assert {"state_dict", "hyper_parameters", "ema", "epoch", "global_step"} <= set(raw)
        assert raw["hyper_parameters"]["backbone_denoiser"] == "none"
        assert raw["hyper_parameters"]["use_text"] is ref.use_text
        assert all(k.startswith("score_net.") for k in raw["state_dict"])
        again = load_refinement_ckpt(path, random_state=0)
        align = [("sil", 40)] if ref.use_text else None
        a = ref.refine(tiny_refiners[2][0], 16000, alignment=align)
        b = again.refine(tiny_refiners[2][0], 16000, alignment=align)
        np.testing.assert_array_equal(a, b)
        assert a.shape == tiny_refiners[2][0].shape
        assert again.n_updates_ == ref.n_updates_ == 2
        other = copy.copy(ref)
        other.ema_decay = 0.95
        reloaded = load_refinement_ckpt(save_refinement_ckpt(other, tmp_path / "decay.ckpt"))
        assert reloaded.ema_decay == 0.95  # a loaded refiner re-saves (and refits) with its own decay


def test_refiner_layout_errors(tmp_path, tiny_refiners):
    from de_antifake.refiner import load_refinement_ckpt, save_refinement_ckpt

    with pytest.raises(FileNotFoundError, match="refinement.ckpt"):
        load_refinement_ckpt(tmp_path / "refinement.ckpt")
    path = save_refinement_ckpt(tiny_refiners[0], tmp_path / "x.ckpt")
    raw = torch.load(path, weights_only=True)
    raw["hyper_parameters"]["backbone_score"] = "ncsnpp"
    torch.save(raw, path)
    with pytest.raises(ValueError, match="ncsnpp"):
        load_refinement_ckpt(path)
    # EMA shadows of another shape would broadcast into the weights without a word
    raw["hyper_parameters"]["backbone_score"] = "tiny_cnn"
    good = raw["ema"]["shadow_params"]
    raw["ema"]["shadow_params"] = [t.flatten()[:1].clone() for t in good]
    torch.save(raw, path)
    with pytest.raises(ValueError, match="EMA shadow"):
        load_refinement_ckpt(path)
    raw["ema"]["shadow_params"] = good
    del raw["phoneme_avg_spec"]
    torch.save(raw, path)
    with pytest.raises(ValueError, match="phoneme_avg_spec"):
        load_refinement_ckpt(path)


def test_ouve_sde_closed_forms():
    from de_antifake.refiner import OUVESDE

    sde = OUVESDE()
    t = torch.tensor([0.0, 0.3, 1.0], dtype=torch.float64)
    assert float(sde.std(t)[0]) == 0.0
    # the variance solves d var / dt = -2 theta var + g(t)^2
    h = 1e-6
    for s in (0.2, 0.7):
        v = lambda u: float(sde.std(torch.tensor(u, dtype=torch.float64))) ** 2  # noqa: E731
        assert (v(s + h) - v(s - h)) / (2 * h) == pytest.approx(-2 * sde.theta * v(s) + sde.g(s) ** 2, rel=1e-5)
    x0, y = torch.zeros(1, 2), torch.ones(1, 2)
    torch.testing.assert_close(sde.mean(x0, y, torch.tensor([1.0])), (1 - np.exp(-1.5)) * y.double().float())


def test_phonepure_input_errors(tiny_refiners):
    from de_antifake.diffusion import DiffWave, DiffWaveConfig, DiffWavePurifier
    from de_antifake.refiner import PhonePuRe

    cfg = DiffWaveConfig(res_channels=4, skip_channels=4, num_res_layers=1, dilation_cycle=1,
                         diffusion_step_embed_dim_in=8, diffusion_step_embed_dim_mid=8, diffusion_step_embed_dim_out=8)
    pipe = PhonePuRe(DiffWavePurifier(DiffWave(cfg).eval(), t=1, random_state=0), tiny_refiners[0])
    x = tiny_refiners[2][0]
    with pytest.raises(ValueError, match="transcript or an alignment.*purify_kwargs"):
        pipe.purify(x, 16000)
    with pytest.raises(KeyError, match="blorptastic"):
        pipe.purify(x, 16000, transcript="the blorptastic")
    with pytest.raises(ValueError, match="only 41"):
        pipe.purify(x, 16000, alignment=[("sil", 60)])
    with pytest.raises(ValueError, match="sampling rate"):
        pipe.purify(x, None, alignment=[("sil", 10)])
    out = pipe.purify(x, 16000, transcript="the")
    assert out.shape == x.shape and np.isfinite(out).all()


def test_pc_sampler_with_the_oracle_score_recovers_the_clean_spectrogram():
    from de_antifake.refiner import PhonemeGuidedRefiner

    ref = PhonemeGuidedRefiner(use_text=False, N=30, random_state=0)
    ref._build()
    sde = ref.sde_
    g = torch.Generator().manual_seed(0)
    x0 = torch.rand(2, 1, 64, 50, generator=g)
    y = x0 + 0.3 * torch.randn(x0.shape, generator=g)

    def oracle(x, yy, text, t):  # the exact score of the OUVE marginal given x0
        tt = torch.full((x.shape[0],), float(t))
        return -(x - sde.mean(x0, yy, tt)) / sde.std(tt).reshape(-1, 1, 1, 1) ** 2

    ref._score = oracle
    out = ref.sample(y, None, generator=g)
    err = float((out - x0).pow(2).mean().sqrt())
    # what remains is the t_eps = 0.03 bias (4.4% of y - x0) and the noise at t_eps
    assert err < 0.03 * float((y - x0).pow(2).mean().sqrt()) + 0.01


def test_refiner_fit_leaves_the_callers_torch_rng_alone():
    from de_antifake.refiner import PhonemeGuidedRefiner

    torch.manual_seed(7)
    expected = torch.rand(3)
    torch.manual_seed(7)
    w = np.zeros((2, 2560), np.float32)
    PhonemeGuidedRefiner(use_text=False, channels=2, layers=1, random_state=0).fit(w, w, steps=1, batch_size=1)
    torch.testing.assert_close(torch.rand(3), expected)


def test_untrained_denoiser_refiner_returns_its_estimate():
    from de_antifake.refiner import PhonemeGuidedRefiner

    ref = PhonemeGuidedRefiner(use_text=False, N=30, random_state=0)
    ref._build()
    with torch.no_grad():  # a network that has learnt nothing: correction r = 0
        ref.score_net_.out.weight.zero_()
        ref.score_net_.out.bias.zero_()
    g = torch.Generator().manual_seed(0)
    y = torch.rand(1, 1, 64, 40, generator=g)
    out = ref.sample(y, None, generator=g)
    assert float((out - y).pow(2).mean().sqrt()) < 0.01  # not noise: the estimate comes back
    noise = PhonemeGuidedRefiner(use_text=False, N=30, parametrization="noise", random_state=0)
    noise._build()
    noise.score_net_.load_state_dict(ref.score_net_.state_dict())
    away = noise.sample(y, None, generator=torch.Generator().manual_seed(0))
    assert float((away - y).pow(2).mean().sqrt()) > 0.05  # the same zero network as a noise predictor does not
    with pytest.raises(ValueError, match="parametrization"):
        PhonemeGuidedRefiner(parametrization="x0")._build()


def test_refine_of_clean_audio_keeps_it():
    from de_antifake.audio import snr_db
    from de_antifake.refiner import PhonemeGuidedRefiner

    clean = np.stack([np.sin(np.linspace(0, 300 * (k + 1), 5120)) * 0.05 for k in range(4)]).astype(np.float32)
    noisy = clean + np.random.default_rng(0).normal(0, 0.002, clean.shape).astype(np.float32)
    ref = PhonemeGuidedRefiner(use_text=False, channels=4, layers=1, N=30, random_state=0)
    ref.fit(clean, noisy, steps=20, batch_size=4)
    assert snr_db(clean[0], ref.refine(clean[0], 16000)) > 10  # 0 dB or below with the noise parametrization


def test_checkpoint_without_parametrization_loads_as_the_noise_predictor(tmp_path, tiny_refiners):
    from de_antifake.refiner import load_refinement_ckpt, save_refinement_ckpt

    path = save_refinement_ckpt(tiny_refiners[1], tmp_path / "refinement.ckpt")
    assert load_refinement_ckpt(path).parametrization == "denoiser"
    raw = torch.load(path, weights_only=True)
    del raw["hyper_parameters"]["parametrization"]  # written before the key existed
    torch.save(raw, path)
    assert load_refinement_ckpt(path).parametrization == "noise"


def test_training_runs_inside_no_grad_and_inference_mode():
    from de_antifake.diffusion import DiffWaveConfig, train_diffwave
    from de_antifake.refiner import PhonemeGuidedRefiner

    clean = np.sin(np.linspace(0, 400, 2 * 2560)).reshape(2, 2560).astype(np.float32) * 0.1
    cfg = DiffWaveConfig(res_channels=4, skip_channels=4, num_res_layers=1, dilation_cycle=1,
                         diffusion_step_embed_dim_in=8, diffusion_step_embed_dim_mid=8, diffusion_step_embed_dim_out=8)
    for context in (torch.no_grad, torch.inference_mode):
        with context():
            ref = PhonemeGuidedRefiner(use_text=False, channels=4, layers=1, N=2, random_state=0)
            ref.fit(clean, clean + 0.01, steps=2, batch_size=2)
            assert ref.refine(clean[0], 16000).shape == (2560,)
            train_diffwave(clean, config=cfg, steps=2, segment=512, batch_size=2, random_state=0)
        assert torch.is_grad_enabled() and not torch.is_inference_mode_enabled()


def test_refiner_fit_refuses_alignments_that_do_not_match_the_clips(small_corpus):
    from de_antifake.phoneme import PhonemeSpectra
    from de_antifake.refiner import PhonemeGuidedRefiner

    w = np.stack([u.wav[:128 * 40] for u in small_corpus.utterances[:3]])
    spectra = PhonemeSpectra().fit([(u.wav, u.alignment) for u in small_corpus.utterances])
    for align in ([[("sil", 40)]] * 2, [[("sil", 40)]] * 4):  # one missing (IndexError) / one extra (ignored)
        with pytest.raises(ValueError, match="alignments for 3 clips"):
            PhonemeGuidedRefiner(channels=4, layers=1, N=2, random_state=0).fit(
                w, w, alignments=align, spectra=spectra, steps=1, batch_size=2)


def test_refiner_fit_is_set_by_random_state_alone_not_by_the_global_torch_rng():
    import torch

    from de_antifake import PhonemeGuidedRefiner

    rng = np.random.default_rng(0)
    clean = (0.1 * rng.standard_normal((3, 4096))).astype(np.float32)
    noisy = clean + (0.01 * rng.standard_normal(clean.shape)).astype(np.float32)
    weights = []
    for global_seed in (1, 2):
        torch.manual_seed(global_seed)  # the caller's global state differs between the two fits
        ref = PhonemeGuidedRefiner(use_text=False, channels=4, layers=1, N=4, random_state=3)
        ref.fit(clean, noisy, steps=1, batch_size=2)
        weights.append([p.detach().clone() for p in ref.score_net_.parameters()])
    assert all(torch.equal(a, b) for a, b in zip(*weights, strict=True))

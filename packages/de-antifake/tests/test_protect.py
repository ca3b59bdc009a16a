"""Protection: exact L-infinity budget, SNR floor, batching, adaptive variants, errors."""

import numpy as np
import pytest
import torch

from de_antifake.audio import snr_db
from de_antifake.protect import attackvc


def test_budget_snr_and_effect(small_corpus, ge2e):
    x = np.stack([u.wav for u in small_corpus.utterances[:2]])
    target = ge2e.embed(torch.from_numpy(small_corpus.utterances[-1].wav)).numpy()
    adv = attackvc(x, target, eps=0.01, encoder=ge2e, iters=8)
    assert adv.dtype == np.float32
    assert np.abs(adv.astype(np.float64) - x.astype(np.float64)).max() <= 0.01
    for a, b in zip(x, adv, strict=True):
        assert snr_db(a, b) >= 24.0
    with torch.no_grad():
        before = (ge2e.embed(torch.from_numpy(x)) @ torch.from_numpy(target)).numpy()
        after = (ge2e.embed(torch.from_numpy(adv)) @ torch.from_numpy(target)).numpy()
    assert (after > before).all()


def _tiny_encoder():
    from de_antifake.encoder import ResemblyzerEncoder

    torch.manual_seed(0)
    return ResemblyzerEncoder(hidden_size=8, embedding_size=4, num_layers=1)


def test_protected_audio_stays_inside_full_scale():
    x = np.clip(np.random.default_rng(0).normal(0, 0.5, 16000), -1, 1).astype(np.float32)
    x[:200], x[200:400] = 0.999, -0.9995

    class MeanUp:  # an "encoder" whose target is reached by raising every sample
        def embed(self, wav):
            e = torch.stack([wav.mean(dim=-1), torch.full_like(wav[..., 0], 0.01)], dim=-1)
            return e / e.norm(dim=-1, keepdim=True)

    adv = attackvc(x, np.array([1.0, 0.0]), eps=0.01, encoder=MeanUp(), iters=20, lr=0.5, min_snr_db=0.0)
    assert adv[:200].min() > 0.999 - 1e-6 and adv[200:400].max() > -0.9995  # pushed up, to the ceiling
    assert np.abs(adv).max() <= 1.0
    assert np.abs(adv.astype(np.float64) - x).max() <= 0.01
    assert np.abs(adv - x).max() > 1e-3  # the attack did move the samples


def test_non_finite_target_and_channels_last_audio_are_refused():
    enc, x = _tiny_encoder(), np.zeros(8000, np.float32) + 0.01
    for bad in (np.full(4, np.nan), np.array([0.5, np.inf, 0.5, 0.5])):
        with pytest.raises(ValueError, match="NaN or inf"):
            attackvc(x, bad, eps=0.01, encoder=enc, iters=1)
    with pytest.raises(ValueError, match="channels"):
        attackvc(np.zeros((8000, 2), np.float32), np.ones(4) / 2, eps=0.01, encoder=enc, iters=1)


def test_batched_equals_per_clip():
    from de_antifake.encoder import ResemblyzerEncoder

    torch.manual_seed(0)
    enc = ResemblyzerEncoder(hidden_size=16, embedding_size=8, num_layers=1)
    x = np.random.default_rng(0).normal(0, 0.05, (3, 9000)).astype(np.float32)
    t = np.abs(np.random.default_rng(1).normal(size=(3, 8)))
    for method in ("pgd", "adam"):
        batch = attackvc(x, t, eps=0.005, encoder=enc, iters=3, method=method)
        for i in range(3):
            one = attackvc(x[i], t[i], eps=0.005, encoder=enc, iters=3, method=method)
            # the loudness gain scales float32 rounding of the gradient: 2e-6 of a 0.05-RMS clip
            np.testing.assert_allclose(batch[i], one, atol=5e-6)


def test_pgd_holds_the_snr_floor_exactly_and_spends_the_budget():
    # the old Adam + hinge attack ended at 24.8 dB; the projection holds the floor exactly in float32
    class Proj:  # a linear "encoder" with a gradient everywhere
        p = torch.from_numpy(np.random.default_rng(5).normal(size=(16000, 4)).astype(np.float32))

        def embed(self, wav):
            e = wav @ self.p
            return e / e.norm(dim=-1, keepdim=True)

    enc = Proj()
    x = np.random.default_rng(2).normal(0, 0.05, (3, 16000)).astype(np.float32)
    x[2] *= 0.1  # a quiet clip: the SNR ball binds long before the L-infinity box
    for floor in (25.0, 30.0):
        adv = attackvc(x, np.ones(4) / 2, eps=0.01, encoder=enc, iters=6, lr=1.0, min_snr_db=floor)
        snrs = [snr_db(a, b) for a, b in zip(x, adv, strict=True)]
        assert min(snrs) >= floor and max(snrs) < floor + 0.5, snrs  # at the floor: the budget is used
        assert np.abs(adv.astype(np.float64) - x).max() <= 0.01
    loud = attackvc(x[:1], np.ones(4) / 2, eps=0.001, encoder=enc, iters=6, min_snr_db=-np.inf)
    assert np.abs(loud.astype(np.float64) - x[:1]).max() == pytest.approx(0.001, rel=1e-3)  # box binds


def test_pgd_moves_the_embedding_further_than_adam(small_corpus, ge2e):
    x = np.stack([u.wav for u in small_corpus.utterances[:2]])
    target = ge2e.embed(torch.from_numpy(small_corpus.utterances[-1].wav)).numpy()
    with torch.no_grad():  # attackvc also works when called inside no_grad (it failed there before)
        gain = {m: float((ge2e.embed(torch.from_numpy(attackvc(x, target, eps=0.01, encoder=ge2e, iters=6, method=m)))
                          @ torch.from_numpy(target)).mean()) for m in ("pgd", "adam")}
    assert gain["pgd"] > gain["adam"], gain


def test_budget_is_exact_after_float32_rounding():
    from de_antifake.protect import _float32_within

    x = np.array([0.1, -0.3, 0.7], dtype=np.float32)
    eps = 1e-3
    adv = x.astype(np.float64) + np.array([eps, -eps, eps])
    out = _float32_within(adv, x, eps)
    assert (np.abs(out.astype(np.float64) - x.astype(np.float64)) <= eps).all()


def test_bad_arguments():
    from de_antifake.encoder import ResemblyzerEncoder

    enc = ResemblyzerEncoder(hidden_size=8, embedding_size=4, num_layers=1)
    x = np.zeros(16000, dtype=np.float32)
    for eps in (0.0, -0.1, float("nan")):
        with pytest.raises(ValueError, match="eps"):
            attackvc(x, np.ones(4), eps=eps, encoder=enc)
    with pytest.raises(ValueError, match="purifier"):
        attackvc(x, np.ones(4), eps=0.01, encoder=enc, adaptive="bpda")
    with pytest.raises(ValueError, match="targets"):
        attackvc(np.zeros((2, 16000)), np.ones((3, 4)), eps=0.01, encoder=enc)
    with pytest.raises(ValueError, match="method"):
        attackvc(x, np.ones(4), eps=0.01, encoder=enc, method="fgsm")
    for lr in (0.0, float("nan")):
        with pytest.raises(ValueError, match="lr"):
            attackvc(x, np.ones(4), eps=0.01, encoder=enc, lr=lr)
    with pytest.raises(ValueError, match="min_snr_db"):
        attackvc(x, np.ones(4), eps=0.01, encoder=enc, min_snr_db=float("nan"))


def test_adaptive_bpda_and_eot_run_through_a_purifier():
    from de_antifake.diffusion import DiffWave, DiffWaveConfig, DiffWavePurifier
    from de_antifake.encoder import ResemblyzerEncoder

    torch.manual_seed(3)
    enc = ResemblyzerEncoder(hidden_size=8, embedding_size=4, num_layers=1)
    cfg = DiffWaveConfig(res_channels=4, skip_channels=4, num_res_layers=1, dilation_cycle=1,
                         diffusion_step_embed_dim_in=8, diffusion_step_embed_dim_mid=8, diffusion_step_embed_dim_out=8)
    pur = DiffWavePurifier(DiffWave(cfg).eval(), t=2)
    x = np.random.default_rng(0).normal(0, 0.05, 16000).astype(np.float32)
    for mode in ("bpda", "eot"):
        adv = attackvc(x, np.ones(4) / 2, eps=0.01, encoder=enc, iters=2, purifier=pur, adaptive=mode)
        assert np.abs(adv.astype(np.float64) - x).max() <= 0.01


def test_all_zero_embedding_keeps_gradients_finite():
    from de_antifake.encoder import ResemblyzerEncoder

    enc = ResemblyzerEncoder(hidden_size=8, embedding_size=4, num_layers=1)
    with torch.no_grad():
        enc.linear.bias.fill_(-100.0)  # ReLU output is exactly zero
    x = torch.randn(1, 16000, requires_grad=True)
    enc.embed(x).sum().backward()
    assert torch.isfinite(x.grad).all()


def test_adaptive_noise_is_seeded_by_random_state_and_fresh_for_none():
    class Spy:  # a purifier that records the first number its generator gives
        def __init__(self):
            self.first = []

        def purify_tensor(self, x, *, generator=None):
            self.first.append(float(torch.rand(1, generator=generator)))
            return x

    x = np.random.default_rng(0).normal(0, 0.1, 4000).astype(np.float32)
    draws = []
    for seed in (3, 3, None, None):
        spy = Spy()
        attackvc(x, np.ones(4) / 2, eps=0.01, encoder=_tiny_encoder(), iters=1, purifier=spy, adaptive="bpda",
                 random_state=seed)
        draws.append(spy.first[0])
    assert draws[0] == draws[1] and draws[2] != draws[3] and draws[0] not in draws[2:]


class _MeanUp:
    """An "encoder" whose target is reached by raising every sample."""

    def embed(self, wav):
        e = torch.stack([wav.mean(dim=-1), torch.full_like(wav[..., 0], 0.01)], dim=-1)
        return e / e.norm(dim=-1, keepdim=True)


def test_no_snr_floor_with_a_silent_clip_gives_finite_audio():
    x = np.zeros((2, 4000), np.float32)
    x[0] = np.random.default_rng(0).normal(0, 0.1, 4000)
    adv = attackvc(x, np.array([1.0, 0.0]), eps=0.01, encoder=_MeanUp(), iters=5, min_snr_db=-np.inf)
    assert np.isfinite(adv).all()
    assert np.abs(adv.astype(np.float64) - x).max() <= 0.01
    assert np.abs(adv[0] - x[0]).max() > 1e-3
    with_floor = attackvc(x, np.array([1.0, 0.0]), eps=0.01, encoder=_MeanUp(), iters=5)
    assert np.isfinite(with_floor).all() and (with_floor[1] == 0).all()  # 25 dB of silence is silence


def test_runs_inside_inference_mode():
    x = np.random.default_rng(0).normal(0, 0.1, 4000).astype(np.float32)
    ref = attackvc(x, np.array([1.0, 0.0]), eps=0.01, encoder=_MeanUp(), iters=3)
    with torch.inference_mode():
        adv = attackvc(x, np.array([1.0, 0.0]), eps=0.01, encoder=_MeanUp(), iters=3)
    np.testing.assert_array_equal(adv, ref)


def test_bfloat16_moves_the_embedding_like_float32_within_the_same_limits(small_corpus, ge2e):
    x = np.stack([u.wav for u in small_corpus.utterances[:3]])
    target = ge2e.embed(torch.from_numpy(small_corpus.utterances[-1].wav)).numpy()
    gain = {}
    for precision in ("float32", "bfloat16"):
        adv = attackvc(x, target, eps=0.01, encoder=ge2e, iters=6, precision=precision)
        assert adv.dtype == np.float32 and np.abs(adv.astype(np.float64) - x).max() <= 0.01
        assert min(snr_db(a, b) for a, b in zip(x, adv, strict=True)) >= 25.0
        with torch.no_grad():
            gain[precision] = (ge2e.embed(torch.from_numpy(adv)) - ge2e.embed(torch.from_numpy(x))).numpy() @ target
    assert (gain["bfloat16"] > 0).all()
    np.testing.assert_allclose(gain["bfloat16"], gain["float32"], rtol=0.35)
    with pytest.raises(ValueError, match="precision"):
        attackvc(x, target, eps=0.01, encoder=ge2e, iters=1, precision="float16")


def test_bpda_passes_each_clip_its_own_purify_kwargs():
    seen = []

    class NeedsAlignment:  # like guided PhonePuRe: purify needs the clip's alignment
        def purify(self, wav, sr, *, alignment):
            seen.append((float(wav[0]), alignment))
            return 0.5 * wav

    x = np.random.default_rng(0).normal(0, 0.1, (2, 4000)).astype(np.float32)
    x[:, 0] = [0.3, -0.3]  # tells the clips apart
    adv = attackvc(x, np.ones(4) / 2, eps=0.01, encoder=_tiny_encoder(), iters=2, purifier=NeedsAlignment(),
                   adaptive="bpda", purify_kwargs=[{"alignment": "A"}, {"alignment": "B"}])
    assert np.abs(adv.astype(np.float64) - x).max() <= 0.01
    assert {a for v, a in seen if v > 0} == {"A"} and {a for v, a in seen if v < 0} == {"B"}
    with pytest.raises(ValueError, match="2 waveforms"):
        attackvc(x, np.ones(4) / 2, eps=0.01, encoder=_tiny_encoder(), iters=1, purifier=NeedsAlignment(),
                 adaptive="bpda", purify_kwargs=[{"alignment": "A"}])
    with pytest.raises(ValueError, match="only adaptive='bpda'"):
        attackvc(x, np.ones(4) / 2, eps=0.01, encoder=_tiny_encoder(), iters=1, purify_kwargs={"alignment": "A"})


def test_purify_kwargs_take_any_mapping_and_refuse_what_is_not_one():
    from types import MappingProxyType

    seen = []

    class NeedsAlignment:
        def purify(self, wav, sr, *, alignment):
            seen.append(alignment)
            return 0.5 * wav

    x = np.random.default_rng(0).normal(0, 0.1, (2, 4000)).astype(np.float32)
    run = dict(eps=0.01, encoder=_tiny_encoder(), iters=1, purifier=NeedsAlignment(), adaptive="bpda")
    # a read-only mapping is one set of arguments for every clip, not a sequence of its keys
    attackvc(x, np.ones(4) / 2, purify_kwargs=MappingProxyType({"alignment": "A"}), **run)
    assert set(seen) == {"A"}
    attackvc(x, np.ones(4) / 2, purify_kwargs=(MappingProxyType({"alignment": a}) for a in "BC"), **run)
    assert set(seen) == {"A", "B", "C"}
    for bad in ("ab", [("alignment", "A"), ("alignment", "B")], [{"alignment": "A"}, None]):
        with pytest.raises(TypeError, match="sequence of dicts"):
            attackvc(x, np.ones(4) / 2, purify_kwargs=bad, **run)

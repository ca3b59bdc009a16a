"""Guidance algebra, DDIM agreement with diffusers, and the closed-form Gaussian-mixture toy."""

import numpy as np
import pytest
import torch

from finextract import CFGSampler, FunctionDenoiser, ModelGuidanceSampler, ddim_step, guided_noise
from finextract.guidance import DDIMSchedule
from finextract.toy import gaussian_mixture_denoiser, interpolated_denoiser


def test_guided_noise_matches_hand_computation():
    ft, base = torch.tensor([2.0, -1.0]), torch.tensor([0.5, 1.0])
    # DreamBooth setting w=3, k=-0.02: 0.5 + 3*(2-0.5) - 0.02*0.5 = 4.99 ; 1 + 3*(-2) - 0.02 = -5.02
    assert torch.allclose(guided_noise(ft, base, w=3.0, k=-0.02), torch.tensor([4.99, -5.02]), atol=1e-6)
    # k=None: no correction term
    assert torch.allclose(guided_noise(ft, base, w=5.0), torch.tensor([8.0, -9.0]))


def test_guidance_identities_and_affinity():
    g = torch.Generator().manual_seed(0)
    ft, base = torch.randn(4, 3, generator=g), torch.randn(4, 3, generator=g)
    assert torch.allclose(guided_noise(ft, base, w=1.0, k=0.0), ft, atol=1e-6)
    assert torch.equal(guided_noise(ft, base, w=0.0, k=0.0), base)
    f = lambda w, k: guided_noise(ft, base, w=w, k=k)  # noqa: E731
    # affine in w and in k: f(a x + (1-a) y) = a f(x) + (1-a) f(y)
    for a in (0.3, -1.5, 2.0):
        assert torch.allclose(f(a * 1.0 + (1 - a) * 4.0, 0.1), a * f(1.0, 0.1) + (1 - a) * f(4.0, 0.1), atol=1e-5)
        assert torch.allclose(f(3.0, a * 0.2 + (1 - a) * -0.5), a * f(3.0, 0.2) + (1 - a) * f(3.0, -0.5), atol=1e-5)
    assert torch.allclose(f(3.0, 0.3) - f(3.0, 0.0), 0.3 * base, atol=1e-6)


def _recorders():
    """Denoisers whose prediction encodes the conditioning: eps = x * 0 + cond value."""
    calls = {"pre": [], "ft": []}

    def make(name, offset):
        def fn(x, t, cond):
            calls[name].append(cond)
            return torch.full_like(x, float(cond) + offset)

        return FunctionDenoiser(fn=fn, sample_shape=(2,), cond_size=10, null_cond=9)

    return calls, make("pre", 0.0), make("ft", 100.0)


def test_base_switches_between_conditional_and_unconditional():
    x_T = torch.ones(1, 2)
    a = DDIMSchedule.from_scheduler("ddim", 1)
    a_t, a_prev = a.alphas(a.timesteps[0])
    calls, pre, ft = _recorders()
    out = ModelGuidanceSampler(pre, ft, w=3.0, k=None, steps=1).sample(4, latents=x_T).samples
    assert calls["pre"] == [4] and calls["ft"] == [4]  # k unset: pretrained conditional
    eps = 4 + 3 * (104 - 4)
    assert torch.allclose(out, ddim_step(x_T, torch.full_like(x_T, eps), a_t, a_prev)[0])

    calls, pre, ft = _recorders()
    out = ModelGuidanceSampler(pre, ft, w=3.0, k=-0.02, steps=1).sample(4, latents=x_T).samples
    assert calls["pre"] == [9] and calls["ft"] == [4]  # k set: pretrained unconditional (null)
    eps = 9 + 3 * (104 - 9) - 0.02 * 9
    assert torch.allclose(out, ddim_step(x_T, torch.full_like(x_T, eps), a_t, a_prev)[0])

    calls, pre, ft = _recorders()
    ModelGuidanceSampler(pre, ft, w=3.0, steps=1).sample(4, latents=x_T, pretrained_cond=7)
    assert calls["pre"] == [7]


def test_ddim_step_and_loop_match_diffusers():
    from diffusers import DDIMScheduler

    sched = DDIMScheduler(
        clip_sample=False,
        steps_offset=1,
        set_alpha_to_one=False,
        beta_schedule="scaled_linear",
        beta_start=0.00085,
        beta_end=0.012,
    )
    sched.set_timesteps(10)
    ours = DDIMSchedule.from_scheduler(sched, 10)
    assert list(ours.timesteps) == sched.timesteps.tolist()
    net = lambda x, t: torch.sin(x * (1 + t / 1000.0))  # noqa: E731
    g = torch.Generator().manual_seed(0)
    x0 = torch.randn(3, 1, 4, 4, generator=g)
    x_ref, x_ours = x0.clone(), x0.clone()
    for t in sched.timesteps:
        x_ref = sched.step(net(x_ref, int(t)), t, x_ref, eta=0.0).prev_sample
        a_t, a_prev = ours.alphas(int(t))
        x_ours, _ = ddim_step(x_ours, net(x_ours, int(t)), a_t, a_prev)
    assert torch.allclose(x_ours, x_ref, atol=1e-5)
    # the whole sampler (CFG at scale 1 = plain conditional DDIM) agrees too
    den = FunctionDenoiser(fn=lambda x, t, c: net(x, t), sample_shape=(1, 4, 4), scheduler=sched)
    out = CFGSampler(den, guidance_scale=1.0, steps=10).sample(0, latents=x0).samples
    assert torch.allclose(out, x_ref, atol=1e-5)


@pytest.mark.parametrize("spacing", ["leading", "trailing", "linspace"])
def test_timestep_spacing_follows_diffusers(spacing):
    from diffusers import DDIMScheduler

    sched = DDIMScheduler(timestep_spacing=spacing, steps_offset=1 if spacing == "leading" else 0, clip_sample=False)
    sched.set_timesteps(10)
    ours = DDIMSchedule.from_scheduler(sched, 10)
    assert list(ours.timesteps) == sched.timesteps.tolist()
    net = lambda x, t: torch.cos(x * (1 + t / 1000.0))  # noqa: E731
    x = torch.randn(2, 1, 4, 4, generator=torch.Generator().manual_seed(1))
    x_ref = x.clone()
    for t in sched.timesteps:
        x_ref = sched.step(net(x_ref, int(t)), t, x_ref, eta=0.0).prev_sample
        x, _ = ddim_step(x, net(x, int(t)), *ours.alphas(int(t)))
    assert torch.allclose(x, x_ref, atol=1e-5)


def test_non_epsilon_models_are_refused():
    from diffusers import DDIMScheduler

    for kind in ("v_prediction", "sample"):
        with pytest.raises(ValueError, match="only epsilon-prediction"):
            DDIMSchedule.from_scheduler(DDIMScheduler(prediction_type=kind), 10)
    with pytest.raises(ValueError, match="timestep_spacing"):
        DDIMSchedule.from_scheduler(DDIMScheduler(timestep_spacing="karras"), 10)


def test_rescale_x0_caps_predicted_std():
    x_t = torch.randn(2, 16, generator=torch.Generator().manual_seed(0)) * 10
    eps = torch.zeros_like(x_t)
    _, x0 = ddim_step(x_t, eps, 0.5, 0.9, rescale_x0=True)
    assert torch.allclose(x0.std(dim=1), torch.ones(2), atol=1e-5)


MEMORISED = np.array([[2.0, 2.0], [-2.0, 1.5], [0.5, -2.5]])


def _toy():
    pre = gaussian_mixture_denoiser(np.array([[0.0, 0.0], [1.0, -1.0]]), 1.2)
    target = gaussian_mixture_denoiser(MEMORISED, 0.05)
    return pre, target, interpolated_denoiser(pre, target, 1 / 3)


def test_toy_distance_to_memorised_points_falls_with_w():
    pre, target, ft = _toy()
    x_T = torch.randn(400, 2, generator=torch.Generator().manual_seed(0), dtype=torch.float64)
    dists = []
    for w in (1.0, 2.0, 3.0):
        out = ModelGuidanceSampler(pre, ft, w=w, steps=50).sample(None, latents=x_T).samples
        d = torch.cdist(out, torch.tensor(MEMORISED)).min(dim=1).values.mean().item()
        dists.append(d)
    assert dists[0] > dists[1] > dists[2]
    assert dists[2] < 0.1 < dists[0]  # w = 1/λ recovers the memorised mixture
    # w=1 is exactly sampling the fine-tuned score
    out_ft = CFGSampler(ft, guidance_scale=1.0, steps=50).sample(None, latents=x_T).samples
    out_w1 = ModelGuidanceSampler(pre, ft, w=1.0, steps=50).sample(None, latents=x_T).samples
    assert torch.allclose(out_w1, out_ft, atol=1e-10)
    out_q = CFGSampler(target, guidance_scale=1.0, steps=50).sample(None, latents=x_T).samples
    out_w3 = ModelGuidanceSampler(pre, ft, w=3.0, steps=50).sample(None, latents=x_T).samples
    assert torch.allclose(out_w3, out_q, atol=1e-8)


def test_toy_mixture_eps_is_exact_at_the_ends():
    from finextract.guidance import DDIMSchedule

    den = gaussian_mixture_denoiser(np.array([[1.0, -2.0]]), 0.5)
    a = float(DDIMSchedule.from_scheduler("ddim", 1).alphas_cumprod[500])
    x = torch.tensor([[0.3, 0.7]], dtype=torch.float64)
    var = a * 0.25 + 1 - a
    expected = (1 - a) ** 0.5 * (x - a**0.5 * torch.tensor([[1.0, -2.0]], dtype=torch.float64)) / var
    assert torch.allclose(den(x, 500, None), expected)


@pytest.mark.parametrize("bad", [dict(w=float("nan")), dict(w=3.0, steps=0), dict(w=True)])
def test_sampler_rejects_bad_hyperparameters(bad):
    pre, _, ft = _toy()
    with pytest.raises(ValueError):
        ModelGuidanceSampler(pre, ft, **bad).sample(None, n=2)

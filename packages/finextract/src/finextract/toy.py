"""Closed-form noise predictors for Gaussian mixtures: a toy where the fine-tuned model is known exactly.

For data x0 ~ Σ π_k N(μ_k, σ_k² I) and x_t = √ᾱ x0 + √(1-ᾱ) ε, the noisy marginal is the mixture of
N(√ᾱ μ_k, (ᾱ σ_k² + 1 - ᾱ) I), whose exact noise prediction is eps(x, t) = -√(1-ᾱ) ∇log p_t(x).
"""

from __future__ import annotations

from typing import Any

import torch

from finextract.denoisers import FunctionDenoiser

__all__ = ["gaussian_mixture_denoiser", "interpolated_denoiser"]


def _mixture_eps(
    x: torch.Tensor, alpha: torch.Tensor, means: torch.Tensor, stds: torch.Tensor, weights: torch.Tensor
) -> torch.Tensor:
    var = alpha * stds**2 + (1 - alpha)  # (K,)
    diff = x[:, None, :] - alpha.sqrt() * means[None]  # (B, K, d)
    d = x.shape[1]
    logp = torch.log(weights) - 0.5 * (diff**2).sum(-1) / var - 0.5 * d * torch.log(var)
    resp = torch.softmax(logp, dim=1)  # (B, K)
    score = -(resp[..., None] * diff / var[None, :, None]).sum(1)
    return -(1 - alpha).sqrt() * score


def gaussian_mixture_denoiser(
    means: Any, stds: Any, weights: Any = None, *, scheduler: Any = "ddim", dtype: torch.dtype = torch.float64
) -> FunctionDenoiser:
    """The exact noise predictor of an isotropic Gaussian mixture (means (K, d), stds (K,) or scalar).

    Samples have shape (d,); conditioning is ignored. ``scheduler`` gives ᾱ ("ddim" = diffusers' default linear
    schedule, or any diffusers scheduler).
    """
    from finextract.guidance import DDIMSchedule

    means = torch.as_tensor(means, dtype=dtype)
    if means.ndim != 2:
        raise ValueError(f"means must be (K, d), got shape {tuple(means.shape)}")
    stds = torch.as_tensor(stds, dtype=dtype).expand(means.shape[0]).clone()
    weights = (
        torch.full((means.shape[0],), 1.0 / means.shape[0], dtype=dtype)
        if weights is None
        else torch.as_tensor(weights, dtype=dtype) / torch.as_tensor(weights, dtype=dtype).sum()
    )
    alphas = DDIMSchedule.from_scheduler(scheduler, 1).alphas_cumprod.to(dtype)

    def fn(x: torch.Tensor, t: int, cond: Any) -> torch.Tensor:
        return _mixture_eps(x.to(dtype), alphas[int(t)], means, stds, weights).to(x.dtype)

    sched = None if isinstance(scheduler, str) else scheduler
    return FunctionDenoiser(fn=fn, sample_shape=(means.shape[1],), scheduler=sched, dtype=dtype)


def interpolated_denoiser(pretrained: FunctionDenoiser, target: FunctionDenoiser, lam: float) -> FunctionDenoiser:
    """The paper's model of fine-tuning: eps_ft = (1 - λ) eps_pre + λ eps_q (scores of p^(1-λ) q^λ).

    With w = 1/λ, model guidance from ``pretrained`` to this model recovers ``target`` exactly.
    """
    if not 0 < lam <= 1:
        raise ValueError(f"lam (fine-tuning degree) must lie in (0, 1], got {lam}")

    def fn(x: torch.Tensor, t: int, cond: Any) -> torch.Tensor:
        return (1 - lam) * pretrained(x, t, cond) + lam * target(x, t, cond)

    return FunctionDenoiser(
        fn=fn, sample_shape=pretrained.sample_shape, scheduler=pretrained.scheduler, dtype=pretrained.dtype
    )

"""Model-guidance sampling (FineXtract) and the classifier-free-guidance baseline, both with DDIM (eta = 0).

FineXtract approximates a fine-tuned model as p_ft ∝ p_pre^(1-λ) q^λ, so the fine-tuning data's score is an
extrapolation from the pretrained to the fine-tuned model with w = 1/λ. The guided noise, exactly as in the
official sampler, is::

    base  = eps_pre(x_t, ∅)  if k is not None  else  eps_pre(x_t, c)
    eps^  = base + w * (eps_ft(x_t, c) - base) + (k * base if k is not None else 0)
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch

from finextract.denoisers import Denoiser, as_denoiser

__all__ = ["CFGSampler", "DDIMSchedule", "ModelGuidanceSampler", "SampleResult", "ddim_step", "guided_noise"]

log = logging.getLogger(__name__)


def guided_noise(
    eps_finetuned: torch.Tensor, eps_base: torch.Tensor, *, w: float, k: float | None = None
) -> torch.Tensor:
    """FineXtract's extrapolated noise ``base + w (eps_ft - base) + k base`` (the k term only when k is set).

    ``eps_base`` is the pretrained model's prediction: unconditional when ``k`` is set, conditional otherwise
    (the caller chooses; :class:`ModelGuidanceSampler` does it for you). Shapes must match.
    """
    if eps_finetuned.shape != eps_base.shape:
        raise ValueError(
            f"noise predictions differ in shape: fine-tuned {tuple(eps_finetuned.shape)} vs "
            f"pretrained {tuple(eps_base.shape)}"
        )
    out = eps_base + w * (eps_finetuned - eps_base)
    if k is not None:
        out = out + k * eps_base
    return out


def ddim_step(
    x_t: torch.Tensor,
    eps: torch.Tensor,
    alpha_t: float | torch.Tensor,
    alpha_prev: float | torch.Tensor,
    *,
    rescale_x0: bool = False,
) -> tuple[torch.Tensor, torch.Tensor]:
    """One deterministic DDIM step (eta = 0) from cumulative alpha ``alpha_t`` to ``alpha_prev``.

    Returns ``(x_prev, x0_pred)``. ``rescale_x0`` is the official code's optional "dt" flag: when a sample's
    predicted x0 has standard deviation above 1 it is divided by it and eps is recomputed to match (applied per
    sample here; the official code uses one std over the whole batch).
    """
    a_t = torch.as_tensor(alpha_t, dtype=x_t.dtype, device=x_t.device)
    a_prev = torch.as_tensor(alpha_prev, dtype=x_t.dtype, device=x_t.device)
    beta_t = 1 - a_t
    x0 = (x_t - beta_t**0.5 * eps) / a_t**0.5
    if rescale_x0:
        std = x0.flatten(1).std(dim=1).clamp(min=1.0).view(-1, *([1] * (x0.ndim - 1)))
        x0 = x0 / std
        eps = (x_t - a_t**0.5 * x0) / beta_t**0.5
    x_prev = a_prev**0.5 * x0 + (1 - a_prev) ** 0.5 * eps
    return x_prev, x0


@dataclass(frozen=True)
class DDIMSchedule:
    """DDIM timesteps ("leading" spacing, as diffusers' DDIMScheduler) over a training noise schedule.

    ``alphas_cumprod``: (T,) cumulative products of (1 - beta). ``timesteps``: descending ints.
    ``final_alpha_cumprod``: the alpha used after the last step (1.0 = fully denoised).
    """

    alphas_cumprod: torch.Tensor
    timesteps: tuple[int, ...]
    final_alpha_cumprod: float

    @classmethod
    def from_scheduler(cls, scheduler: Any, steps: int) -> DDIMSchedule:
        """Build from any diffusers scheduler (DDPM/DDIM/PNDM/...) that exposes ``alphas_cumprod`` and a config."""
        if isinstance(scheduler, str):
            if scheduler != "ddim":
                raise ValueError(f"scheduler must be 'ddim' or a diffusers scheduler object, got {scheduler!r}")
            from diffusers import DDIMScheduler

            scheduler = DDIMScheduler()
        alphas = getattr(scheduler, "alphas_cumprod", None)
        if alphas is None:
            raise TypeError(f"{type(scheduler).__name__} has no alphas_cumprod; pass a diffusers scheduler")
        if isinstance(steps, bool) or not isinstance(steps, int) or steps < 1:
            raise ValueError(f"steps must be a positive int, got {steps!r}")
        cfg = scheduler.config
        prediction = getattr(cfg, "prediction_type", "epsilon") or "epsilon"
        if prediction != "epsilon":
            raise ValueError(
                f"the scheduler config says prediction_type={prediction!r}; FineXtract's guidance combines noise "
                "predictions, so only epsilon-prediction models are supported"
            )
        T = int(cfg.num_train_timesteps)
        if steps > T:
            raise ValueError(f"steps={steps} exceeds the {T} training timesteps")
        offset = int(getattr(cfg, "steps_offset", 0) or 0)
        spacing = getattr(cfg, "timestep_spacing", "leading") or "leading"
        # The timesteps of diffusers' DDIMScheduler.set_timesteps; its step always goes back T // steps.
        grid: np.ndarray
        if spacing == "leading":
            grid = (np.arange(steps) * (T // steps))[::-1] + offset
        elif spacing == "trailing":
            grid = np.round(np.arange(T, 0, -T / steps)).astype(np.int64) - 1
        elif spacing == "linspace":
            grid = np.linspace(0, T - 1, steps).round()[::-1]
        else:
            raise ValueError(f"timestep_spacing must be 'leading', 'trailing' or 'linspace', got {spacing!r}")
        ts = tuple(int(t) for t in grid)
        alphas = torch.as_tensor(alphas, dtype=torch.float32)
        final = 1.0 if getattr(cfg, "set_alpha_to_one", True) else float(alphas[0])
        return cls(alphas_cumprod=alphas, timesteps=ts, final_alpha_cumprod=final)

    @property
    def stride(self) -> int:
        """Training timesteps between two DDIM steps."""
        return int(self.alphas_cumprod.numel()) // len(self.timesteps)

    def alphas(self, t: int) -> tuple[torch.Tensor, torch.Tensor]:
        """(alpha_t, alpha_prev) for the step leaving timestep ``t``."""
        prev = t - self.stride
        a_prev = self.alphas_cumprod[prev] if prev >= 0 else torch.tensor(self.final_alpha_cumprod)
        return self.alphas_cumprod[t], a_prev


@dataclass
class SampleResult:
    """Output of a sampler.

    ``images``: (n, C, H, W) decoded samples in the model's range (≈[-1, 1]); ``samples``: final x_0 in the
    model's sample space (latents for latent models); ``initial``: the x_T used, for reruns with other methods.
    """

    images: torch.Tensor
    samples: torch.Tensor
    initial: torch.Tensor


class _DDIMSampler:
    steps: int
    scheduler: Any
    rescale_x0: bool
    batch_size: int
    progress: bool

    def _initial(
        self, den: Denoiser, n: int | None, latents: torch.Tensor | None, generator: torch.Generator | None
    ) -> torch.Tensor:
        if latents is None:
            if n is None or isinstance(n, bool) or not isinstance(n, int) or n < 1:
                raise ValueError(f"pass n (a positive int number of samples) or latents; got n={n!r}")
            latents = torch.randn((n, *den.sample_shape), generator=generator, dtype=torch.float32)
        elif tuple(latents.shape[1:]) != tuple(den.sample_shape):
            raise ValueError(
                f"latents have per-sample shape {tuple(latents.shape[1:])} but the model samples "
                f"{tuple(den.sample_shape)}"
            )
        return latents.to(device=den.device, dtype=den.dtype)

    def _schedule(self, *dens: Denoiser) -> DDIMSchedule:
        """Pick the schedule to sample on.

        The explicit scheduler, else the first of ``dens`` that carries one (the checkpoint's training schedule),
        else diffusers' default.
        """
        sched = self.scheduler
        if isinstance(sched, str) and sched == "ddim":
            sched = next((d.scheduler for d in dens if d.scheduler is not None), sched)
        return DDIMSchedule.from_scheduler(sched, self.steps)

    @torch.no_grad()
    def _run(
        self, den: Denoiser, x_T: torch.Tensor, eps_fn: Any, *, schedule: DDIMSchedule | None = None
    ) -> SampleResult:
        from icml25_shared.cli import progress

        schedule = schedule or self._schedule(den)
        outs, images = [], []
        for start in range(0, x_T.shape[0], self.batch_size):
            x = x_T[start : start + self.batch_size]
            for t in progress(schedule.timesteps, enabled=self.progress, desc="ddim"):
                eps = eps_fn(x, t)
                a_t, a_prev = schedule.alphas(t)
                x, _ = ddim_step(x, eps, a_t, a_prev, rescale_x0=self.rescale_x0)
            outs.append(x)
            images.append(den.decode(x))
        return SampleResult(images=torch.cat(images), samples=torch.cat(outs), initial=x_T)


def _check_common(steps: int, batch_size: int) -> None:
    if isinstance(steps, bool) or not isinstance(steps, int) or steps < 1:
        raise ValueError(f"steps must be a positive int, got {steps!r}")
    if isinstance(batch_size, bool) or not isinstance(batch_size, int) or batch_size < 1:
        raise ValueError(f"batch_size must be a positive int, got {batch_size!r}")


class ModelGuidanceSampler(_DDIMSampler):
    """FineXtract's sampler: DDIM on the extrapolation from a pretrained to a fine-tuned noise predictor.

    Parameters
    ----------
    pretrained, finetuned
        diffusers ``UNet2DModel`` (class-conditional pixel model), ``UNet2DConditionModel`` / SD pipeline, or
        any :class:`~finextract.Denoiser`. For a LoRA checkpoint, ``pretrained=without_adapters(finetuned)``
        reuses one UNet.
    w
        Guidance scale, 1/λ for fine-tuning degree λ (paper: 3.0 for DreamBooth, 5.0 for LoRA).
    k
        ``None`` (the official sentinel -100): base = pretrained conditional prediction, no correction term.
        A float: base = pretrained *unconditional* prediction plus ``k * base`` (paper: -0.02 DreamBooth, 0.0 LoRA).
    steps
        DDIM steps (paper: 50).
    scheduler
        ``"ddim"`` (the pretrained checkpoint's schedule if it carries one, else the fine-tuned one's, else
        diffusers' default linear schedule) or a diffusers scheduler whose ``alphas_cumprod`` defines the
        schedule. Timestep spacing follows the scheduler config (leading, trailing, linspace, as diffusers'
        DDIM); only epsilon-prediction models are supported (others raise).
    rescale_x0
        The official code's optional "dt" flag (see :func:`ddim_step`).
    batch_size : int, default 256
        Samples per UNet call.
    progress : bool, default False
        A tqdm bar over the DDIM steps.

    Examples
    --------
    The paper's model of fine-tuning holds exactly for Gaussian mixtures: the fine-tuned model is
    ``(1 - λ) eps_pre + λ eps_q`` with the data's two memorised points in ``q``. With λ = 1/3, plain sampling of the
    fine-tuned model (w = 1) lands far from them and w = 1/λ = 3 recovers them:

    >>> import torch
    >>> from finextract.toy import gaussian_mixture_denoiser, interpolated_denoiser
    >>> points = torch.tensor([[2.0, 2.0], [-2.0, 2.0]], dtype=torch.float64)
    >>> pre = gaussian_mixture_denoiser([[0.0, 0.0]], 1.0)
    >>> ft = interpolated_denoiser(pre, gaussian_mixture_denoiser(points, 0.05), lam=1 / 3)
    >>> x_T = torch.randn(200, 2, generator=torch.Generator().manual_seed(0), dtype=torch.float64)
    >>> for w in (1.0, 3.0):
    ...     x = ModelGuidanceSampler(pre, ft, w=w, steps=20).sample(None, latents=x_T).images
    ...     print(w, round(torch.cdist(x, points).min(dim=1).values.mean().item(), 2))
    1.0 0.9
    3.0 0.03
    """

    def __init__(
        self,
        pretrained: Any,
        finetuned: Any,
        *,
        w: float,
        k: float | None = None,
        steps: int = 50,
        scheduler: Any = "ddim",
        rescale_x0: bool = False,
        batch_size: int = 256,
        progress: bool = False,
    ) -> None:
        self.pretrained = pretrained
        self.finetuned = finetuned
        self.w = w
        self.k = k
        self.steps = steps
        self.scheduler = scheduler
        self.rescale_x0 = rescale_x0
        self.batch_size = batch_size
        self.progress = progress

    def _models(self) -> tuple[Denoiser, Denoiser]:
        pre, ft = as_denoiser(self.pretrained), as_denoiser(self.finetuned)
        if tuple(pre.sample_shape) != tuple(ft.sample_shape):
            raise ValueError(
                f"pretrained and fine-tuned models sample different shapes: {tuple(pre.sample_shape)} "
                f"vs {tuple(ft.sample_shape)}; they must be the same architecture"
            )
        if pre.cond_size != ft.cond_size:
            raise ValueError(
                f"pretrained and fine-tuned models take different conditioning ({pre.cond_kind}): "
                f"size {pre.cond_size} vs {ft.cond_size}"
            )
        for name in ("w",) + (("k",) if self.k is not None else ()):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, (int, float)) or not np.isfinite(value):
                raise ValueError(f"{name} must be a finite number, got {value!r}")
        _check_common(self.steps, self.batch_size)
        return pre, ft

    def sample(
        self,
        cond: Any,
        *,
        n: int | None = None,
        latents: torch.Tensor | None = None,
        generator: torch.Generator | None = None,
        pretrained_cond: Any = None,
        null_cond: Any = None,
    ) -> SampleResult:
        """Draw samples guided towards the fine-tuning data.

        ``cond``: the fine-tuned model's conditioning (class id, or prompt embeddings from the fine-tuned text
        encoder). ``pretrained_cond``: the pretrained model's encoding of the same prompt (default ``cond``; used
        when ``k is None``). ``null_cond``: the pretrained model's empty-prompt conditioning (default: the
        pretrained denoiser's ``null_cond``; required when ``k`` is set). ``latents`` (n, *sample_shape) fixes x_T;
        otherwise ``n`` standard-normal draws from ``generator``.
        """
        pre, ft = self._models()
        schedule = self._schedule(pre, ft)  # validated before any sampling
        if self.k is not None:
            base_cond = null_cond if null_cond is not None else pre.null_cond
            if base_cond is None:
                raise ValueError(
                    "k is set, so the base term is the pretrained model's unconditional prediction: pass "
                    "null_cond (empty-prompt embeddings or the null class id)"
                )
        else:
            base_cond = pretrained_cond if pretrained_cond is not None else cond
        x_T = self._initial(ft, n, latents, generator)
        w, k = float(self.w), (None if self.k is None else float(self.k))

        def eps_fn(x: torch.Tensor, t: int) -> torch.Tensor:
            return guided_noise(ft(x, t, cond), pre(x, t, base_cond), w=w, k=k)

        # A fine-tuned folder often holds only the UNet: decode with the pretrained model's VAE then.
        decoder = ft if getattr(ft, "vae", None) is not None or getattr(pre, "vae", None) is None else pre
        return self._run(decoder, x_T, eps_fn, schedule=schedule)


class CFGSampler(_DDIMSampler):
    """The baseline: classifier-free guidance on the fine-tuned model alone, same DDIM loop and initial latents.

    ``eps = eps_ft(x, ∅) + guidance_scale * (eps_ft(x, c) - eps_ft(x, ∅))`` (paper's baseline: scale 3.0).
    ``guidance_scale=1`` samples the fine-tuned conditional model without guidance.
    """

    def __init__(
        self,
        finetuned: Any,
        *,
        guidance_scale: float = 3.0,
        steps: int = 50,
        scheduler: Any = "ddim",
        rescale_x0: bool = False,
        batch_size: int = 256,
        progress: bool = False,
    ) -> None:
        self.finetuned = finetuned
        self.guidance_scale = guidance_scale
        self.steps = steps
        self.scheduler = scheduler
        self.rescale_x0 = rescale_x0
        self.batch_size = batch_size
        self.progress = progress

    def sample(
        self,
        cond: Any,
        *,
        n: int | None = None,
        latents: torch.Tensor | None = None,
        generator: torch.Generator | None = None,
        null_cond: Any = None,
    ) -> SampleResult:
        """Draw samples; ``null_cond`` defaults to the denoiser's own (needed unless guidance_scale == 1)."""
        ft = as_denoiser(self.finetuned)
        _check_common(self.steps, self.batch_size)
        s = self.guidance_scale
        if isinstance(s, bool) or not isinstance(s, (int, float)) or not np.isfinite(s):
            raise ValueError(f"guidance_scale must be a finite number, got {s!r}")
        null = null_cond if null_cond is not None else ft.null_cond
        if null is None and s != 1:
            raise ValueError("classifier-free guidance needs the unconditional input: pass null_cond")
        x_T = self._initial(ft, n, latents, generator)

        def eps_fn(x: torch.Tensor, t: int) -> torch.Tensor:
            if s == 1:
                return ft(x, t, cond)
            eps_u, eps_c = ft.pair(x, t, null, cond)  # one batched UNet call, as diffusers pipelines do
            return eps_u + s * (eps_c - eps_u)

        return self._run(ft, x_T, eps_fn)

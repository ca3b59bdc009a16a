"""Protective perturbations: AttackVC's embedding attack on the waveform, ensembles and adaptive variants.

The attack moves the speaker embedding towards a target speaker and away from the source. The default
``method="pgd"`` takes L2-normalised gradient steps with a cosine-decaying step size and after every step
maps the perturbation into the feasible set, so that both constraints hold exactly: ``|delta| <= eps``
per sample and ``SNR >= min_snr_db`` per clip (the SNR floor is an L2 ball of radius
``|x| 10^(-min_snr_db / 20)``, which usually binds before the L-infinity budget). The map clips to the
box, then scales into the ball: a point of the intersection, not the nearest one (the Euclidean
projection onto the intersection has no closed form). ``method="adam"`` is AttackVC's parameterisation ``delta = eps * tanh(w)`` optimised
with Adam, with a hinge penalty on the SNR. Several encoders (an AntiFake-style ensemble) average their
losses. ``adaptive="bpda"`` or ``"eot"`` attacks through a
purifier: BPDA uses the purifier forward and the identity backward; EOT averages the loss over
``eot_samples`` random purifications (the purifier must expose ``purify_tensor``).
"""

from __future__ import annotations

import functools
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import torch
from icml25_shared.validation import Interval, Options, check_params

from de_antifake.audio import as_mono

__all__ = ["attackvc"]


def _float32_within(adv: np.ndarray, x: np.ndarray, eps: float) -> np.ndarray:
    """Round to float32 and step back by one ulp wherever rounding crossed the budget."""
    out = adv.astype(np.float32)
    for _ in range(4):
        over = np.abs(out.astype(np.float64) - x.astype(np.float64)) > eps
        if not over.any():
            return out
        out[over] = np.nextafter(out[over], x[over].astype(np.float32))
    return out


def _optimise(xt, method, iters, lr, loss_of, project, reach, eps, min_snr_db, snr_weight):
    """The optimisation loop of :func:`attackvc`; returns the float64 protected batch before rounding."""
    power = (xt**2).sum(dim=1)
    if method == "pgd":
        delta = torch.zeros_like(xt)
        for k in range(int(iters)):
            d = delta.clone().requires_grad_(True)
            grad, = torch.autograd.grad(loss_of(xt + d).sum(), d)
            step = lr * 0.5 * (1 + np.cos(np.pi * k / iters)) * reach  # cosine decay of the step length
            gnorm = torch.clamp(grad.norm(dim=1), min=1e-30)
            delta = project(delta - (step / gnorm)[:, None] * grad)
        adv = xt.double().cpu().numpy() + delta.double().cpu().numpy()
    else:
        w = torch.zeros_like(xt, requires_grad=True)
        opt = torch.optim.Adam([w], lr=lr)
        for _ in range(int(iters)):
            delta = eps * torch.tanh(w)
            loss = loss_of(xt + delta)
            snr = 10 * (torch.log10(power) - torch.log10((delta**2).sum(dim=1) + 1e-20))  # finite at delta = 0
            loss = loss + snr_weight * torch.relu(min_snr_db - snr) / 10
            opt.zero_grad()
            loss.sum().backward()
            opt.step()
        with torch.no_grad():
            adv = (xt.double() + eps * torch.tanh(w.double())).cpu().numpy()
    return adv


def _outside_inference_mode(fn):
    """Run ``fn`` with inference mode off, so that it can build its autograd graph inside ``torch.inference_mode()``."""

    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        with torch.inference_mode(False):
            return fn(*args, **kwargs)

    return wrapper


@_outside_inference_mode
def attackvc(wav, target, *, eps: float, encoder, sr: int = 16000, iters: int = 150, method: str = "pgd",
             lr: float | None = None, source_weight: float = 0.1, min_snr_db: float = 25.0, snr_weight: float = 10.0,
             purifier=None, adaptive: str | None = None, eot_samples: int = 2, purify_kwargs=None,
             precision: str = "float32",
             random_state: int | None = 0) -> np.ndarray:
    """Protect waveforms by pushing their speaker embedding towards ``target``.

    Parameters
    ----------
    wav : array_like
        One waveform ``(n,)`` or a batch ``(batch, n)`` of equal-length waveforms, 16 kHz (a 2-D array is
        a batch, never stereo: average the channels first; an ``(n, 2)`` array is refused).
    target : array_like
        Target embedding(s): ``(d,)`` shared or ``(batch, d)``.
    eps : float
        L-infinity budget (> 0); the result satisfies ``max |protected - wav| <= eps`` exactly in float32,
        and stays inside [-1, 1] wherever ``wav`` does (so writing it to PCM does not clip it).
    encoder : module or sequence of modules
        Speaker encoder(s) with a differentiable ``embed(wav) -> (batch, d)``; a sequence is an ensemble.
    sr : int, default 16000
        Sampling rate of ``wav``.
    iters : int, default 150
        Optimisation steps.
    method : {"pgd", "adam"}, default "pgd"
        ``"pgd"``: normalised gradient steps of ``lr * radius`` (``radius`` = the clip's L2 budget at
        ``min_snr_db``), decayed by a cosine schedule, each followed by clipping to ``|delta| <= eps`` and
        scaling into ``SNR >= min_snr_db`` (both then hold exactly). ``"adam"``: ``delta = eps * tanh(w)`` with Adam on
        ``w`` and an SNR hinge (the SNR floor is then approximate).
    lr : float, optional
        Step size: 0.25 (a share of the L2 radius) for ``"pgd"``, 0.05 (Adam's learning rate) for ``"adam"``.
    source_weight : float, default 0.1
        Weight of the term that pushes away from the clean embedding.
    min_snr_db : float, default 25.0
        SNR floor in dB (a constraint under ``"pgd"``, a hinge under ``"adam"``); ``-inf`` disables it.
    snr_weight : float, default 10.0
        Hinge weight under ``"adam"``: ``snr_weight * relu(min_snr_db - SNR) / 10`` per clip.
    purifier : object, optional
        Purifier to attack through (with ``adaptive``).
    adaptive : {None, "bpda", "eot"}
        Adaptive strategy.
    eot_samples : int, default 2
        Purifications averaged per step under EOT.
    purify_kwargs : mapping or sequence of mappings, optional
        Keyword arguments of ``purifier.purify`` under BPDA, one mapping for every clip or a sequence of one
        per clip: e.g. ``[{"alignment": a} for a in alignments]`` to attack guided PhonePuRe.
    precision : {"float32", "bfloat16"}, default "float32"
        Arithmetic of the encoders' forward and backward passes. ``"bfloat16"`` runs them under CPU
        autocast: about 1.5x faster on CPUs with AVX512-BF16 or AMX (much slower on others), with
        gradients whose direction agrees to a cosine of about 0.99; the constraints and the
        returned waveform stay float32, and both limits hold exactly as before.
    random_state : int or None, default 0
        Seeds the purifier noise of adaptive attacks that call ``purify_tensor``; ``None`` draws fresh noise
        on every call. A purifier called through ``purify`` (one without ``purify_tensor``, or any purifier
        given ``purify_kwargs``) draws its noise from its own ``random_state``.

    Returns
    -------
    numpy.ndarray
        The protected waveform(s), float32, same shape as the (mono) input. Under ``"pgd"`` every clip
        satisfies ``SNR >= min_snr_db`` exactly in float32 as well.

    Examples
    --------
    >>> import numpy as np
    >>> from de_antifake.encoder import ResemblyzerEncoder
    >>> enc = ResemblyzerEncoder(hidden_size=8, embedding_size=4, num_layers=1)
    >>> x = np.random.default_rng(0).normal(0, 0.1, 16000).astype(np.float32)
    >>> adv = attackvc(x, np.ones(4) / 2, eps=0.01, encoder=enc, iters=3)
    >>> bool(np.abs(adv.astype(float) - x).max() <= 0.01)
    True
    >>> from de_antifake.audio import snr_db
    >>> bool(snr_db(x, adv) >= 25.0)
    True
    """
    check_params({"eps": eps, "iters": iters, "method": method, "lr": lr, "source_weight": source_weight,
                  "min_snr_db": min_snr_db, "snr_weight": snr_weight, "adaptive": adaptive, "eot_samples": eot_samples,
                  "precision": precision, "random_state": random_state},
                 {"eps": [Interval(float, 0, 2, closed="right")], "iters": [Interval(int, 1, None)],
                  "method": [Options(str, {"pgd", "adam"})], "lr": [Interval(float, 0, None, closed="neither"), None],
                  "source_weight": [Interval(float, None, None, closed="neither")],
                  "min_snr_db": [Interval(float, None, None, closed="neither"), Options(float, {-np.inf})],
                  "snr_weight": [Interval(float, 0, None)], "adaptive": [Options(str, {"bpda", "eot"}), None],
                  "eot_samples": [Interval(int, 1, None)], "precision": [Options(str, {"float32", "bfloat16"})],
                  "random_state": [Interval(int, 0, None), None]}, owner="attackvc")
    if min_snr_db == np.inf:
        raise ValueError(f"attackvc: min_snr_db must be a finite number of dB or -inf (no floor); got {min_snr_db}")
    lr = (0.25 if method == "pgd" else 0.05) if lr is None else float(lr)
    if adaptive is not None and purifier is None:
        raise ValueError(f"adaptive={adaptive!r} needs a purifier")
    if purify_kwargs is not None and adaptive != "bpda":
        raise ValueError("purify_kwargs are passed to purifier.purify, which only adaptive='bpda' calls")
    if adaptive == "eot" and not hasattr(purifier, "purify_tensor"):
        raise ValueError("EOT needs a differentiable purifier with purify_tensor (use adaptive='bpda')")
    arr = np.asarray(wav)
    if arr.ndim == 2 and arr.shape[1] < arr.shape[0]:
        raise ValueError(f"wav of shape {arr.shape} looks like (n, channels) audio; attackvc reads a 2-D array as "
                         "(batch, n): average the channels (as_mono) or transpose")
    if arr.ndim not in (1, 2):
        raise ValueError(f"wav must be (n,) or (batch, n), got shape {arr.shape}")
    single = arr.ndim == 1
    x = np.stack([as_mono(w, sr) for w in (arr[None] if single else arr)])
    encoders = list(encoder) if isinstance(encoder, Sequence) else [encoder]
    tgt_np = np.asarray(target, dtype=np.float32)
    if tgt_np.ndim not in (1, 2) or not np.isfinite(tgt_np).all():
        raise ValueError(f"target must be finite embedding(s) of shape (d,) or (batch, d), got shape {tgt_np.shape}"
                         + ("" if np.isfinite(tgt_np).all() else " with NaN or inf"))
    tgt = torch.as_tensor(tgt_np)
    if tgt.ndim == 1:
        tgt = tgt.expand(len(x), -1)
    if tgt.shape[0] != len(x):
        raise ValueError(f"{tgt.shape[0]} targets for {len(x)} waveforms")
    clip_kwargs: list[Any]
    if purify_kwargs is None or isinstance(purify_kwargs, Mapping):
        clip_kwargs = [dict(purify_kwargs or {})] * len(x)
    else:
        clip_kwargs = list(purify_kwargs) if not isinstance(purify_kwargs, (str, bytes)) else [purify_kwargs]
        for i, kw in enumerate(clip_kwargs):
            if not isinstance(kw, Mapping):
                raise TypeError(f"purify_kwargs must be a dict or a sequence of dicts (one per clip); "
                                f"item {i} is a {type(kw).__name__}")
        clip_kwargs = [dict(kw) for kw in clip_kwargs]
        if len(clip_kwargs) != len(x):
            raise ValueError(f"{len(clip_kwargs)} purify_kwargs for {len(x)} waveforms")
    # every tensor follows the (first) encoder's device; the constraints are applied there too
    device = next((p.device for e in encoders if isinstance(e, torch.nn.Module) for p in e.parameters()),
                  torch.device("cpu"))
    xt = torch.from_numpy(x).to(device)
    tgt = tgt.to(device)
    with torch.no_grad():
        src = [e.embed(xt).to(device) for e in encoders]
    for k, s in enumerate(src):
        if s.shape[-1] != tgt.shape[-1]:
            which = "the encoder" if len(src) == 1 else f"encoder {k}"
            raise ValueError(f"target embeddings have {tgt.shape[-1]} values but {which} embeds into {s.shape[-1]}; "
                             "embed the target with the same encoder")
    gen = torch.Generator(device=device)
    if random_state is None:
        gen.seed()  # fresh entropy, as None means everywhere else
    else:
        gen.manual_seed(int(random_state))
    x64 = x.astype(np.float64)
    # per-clip L2 radius of the SNR floor, a hair inside so that float32 rounding cannot cross it
    # (no floor: an infinite radius, also for silent clips, where 0 * inf would be NaN)
    radius = np.full(len(x64), np.inf) if min_snr_db == -np.inf else \
        np.sqrt((x64**2).sum(axis=1)) * 10 ** (-min_snr_db / 20) * (1 - 1e-5)
    lo = torch.from_numpy(np.maximum(-eps, np.minimum(-1.0, x64) - x64).astype(np.float32)).to(device)  # full scale
    hi = torch.from_numpy(np.minimum(eps, np.maximum(1.0, x64) - x64).astype(np.float32)).to(device)
    rad_t = torch.from_numpy(radius.astype(np.float32)).to(device)
    # step lengths are shares of the smaller of the SNR ball and the L2 extent of the L-infinity box
    reach = torch.from_numpy(np.minimum(radius, eps * np.sqrt(x.shape[1])).astype(np.float32)).to(device)

    def project(d):
        d = torch.minimum(torch.maximum(d, lo), hi)
        norm = d.norm(dim=1)
        return d * torch.clamp(rad_t / torch.clamp(norm, min=1e-30), max=1.0)[:, None]

    def loss_of(adv):
        views = [adv]
        if adaptive == "bpda":
            with torch.no_grad():
                if hasattr(purifier, "purify_tensor") and purify_kwargs is None:
                    pure = purifier.purify_tensor(adv, generator=gen)
                else:
                    pure = torch.from_numpy(np.stack([purifier.purify(a, 16000, **kw) for a, kw in
                                                      zip(adv.detach().cpu().numpy(), clip_kwargs, strict=True)])
                                            ).to(device)
            views = [adv + (pure - adv).detach()]
        elif adaptive == "eot":
            views = [purifier.purify_tensor(adv, generator=gen) for _ in range(int(eot_samples))]
        loss = 0.0
        for v in views:
            for e, s in zip(encoders, src, strict=True):
                with torch.autocast(device.type, dtype=torch.bfloat16, enabled=precision == "bfloat16"):
                    emb = e.embed(v).float().to(device)
                loss = loss - (emb * tgt).sum(dim=1) + source_weight * (emb * s).sum(dim=1)
        return loss / (len(views) * len(encoders))

    # the caller may be inside torch.no_grad() (or inference_mode, see the decorator)
    with torch.enable_grad():
        adv = _optimise(xt, method, int(iters), lr, loss_of, project, reach, eps, min_snr_db, snr_weight)
    # inside the budget and inside [-1, 1] (a sample already outside keeps its own value as the bound)
    adv = np.clip(adv, np.maximum(x64 - eps, np.minimum(-1.0, x64)), np.minimum(x64 + eps, np.maximum(1.0, x64)))
    out = _float32_within(adv, x, eps)
    if method == "pgd" and min_snr_db > -np.inf:
        for _ in range(8):  # float32 rounding may cost a hair of SNR: shrink those clips towards x
            noise = ((out.astype(np.float64) - x64) ** 2).sum(axis=1)
            low = noise > (x64**2).sum(axis=1) * 10 ** (-min_snr_db / 10)
            if not low.any():
                break
            out[low] = _float32_within(x64[low] + (out[low] - x64[low]) * (1 - 1e-4), x[low], eps)
    return out[0] if single else out

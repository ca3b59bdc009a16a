"""Protective perturbations: AttackVC's embedding attack on the waveform, ensembles and adaptive variants.

The perturbation is ``delta = eps * tanh(w)`` (so ``|delta| <= eps`` by construction), ``w`` starts at
zero and is optimised with Adam to move the speaker embedding towards a target speaker and away from the
source, with a hinge penalty that keeps the SNR above ``min_snr_db``. Several encoders (an
AntiFake-style ensemble) average their losses. ``adaptive="bpda"`` or ``"eot"`` attacks through a
purifier: BPDA uses the purifier forward and the identity backward; EOT averages the loss over
``eot_samples`` random purifications (the purifier must expose ``purify_tensor``).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import torch

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


def attackvc(wav, target, *, eps: float, encoder, sr: int = 16000, iters: int = 150, lr: float = 0.05,
             source_weight: float = 0.1, min_snr_db: float = 25.0, snr_weight: float = 10.0, purifier=None,
             adaptive: str | None = None, eot_samples: int = 2, random_state: int | None = 0) -> np.ndarray:
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
        Adam iterations.
    lr : float, default 0.05
        Adam learning rate on ``w`` (``delta = eps * tanh(w)``).
    source_weight : float, default 0.1
        Weight of the term that pushes away from the clean embedding.
    min_snr_db, snr_weight : float
        Hinge penalty ``snr_weight * relu(min_snr_db - SNR) / 10`` per clip.
    purifier : object, optional
        Purifier to attack through (with ``adaptive``).
    adaptive : {None, "bpda", "eot"}
        Adaptive strategy.
    eot_samples : int, default 2
        Purifications averaged per step under EOT.
    random_state : int or None, default 0
        Seeds the purifier noise of adaptive attacks; ``None`` draws fresh noise on every call.

    Returns
    -------
    numpy.ndarray
        The protected waveform(s), float32, same shape as the (mono) input.

    Examples
    --------
    >>> import numpy as np
    >>> from de_antifake.encoder import ResemblyzerEncoder
    >>> enc = ResemblyzerEncoder(hidden_size=8, embedding_size=4, num_layers=1)
    >>> x = np.random.default_rng(0).normal(0, 0.1, 16000).astype(np.float32)
    >>> adv = attackvc(x, np.ones(4) / 2, eps=0.01, encoder=enc, iters=3)
    >>> bool(np.abs(adv.astype(float) - x).max() <= 0.01)
    True
    """
    if not np.isfinite(eps) or eps <= 0:
        raise ValueError(f"eps must be a positive L-infinity budget, got {eps}")
    if iters < 1:
        raise ValueError(f"iters must be >= 1, got {iters}")
    if adaptive not in (None, "bpda", "eot"):
        raise ValueError(f"adaptive must be None, 'bpda' or 'eot', got {adaptive!r}")
    if adaptive is not None and purifier is None:
        raise ValueError(f"adaptive={adaptive!r} needs a purifier")
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
    xt = torch.from_numpy(x)
    with torch.no_grad():
        src = [e.embed(xt) for e in encoders]
    w = torch.zeros_like(xt, requires_grad=True)
    opt = torch.optim.Adam([w], lr=lr)
    gen = torch.Generator()
    if random_state is None:
        gen.seed()  # fresh entropy, as None means everywhere else
    else:
        gen.manual_seed(int(random_state))
    power = (xt**2).sum(dim=1)
    for _ in range(int(iters)):
        delta = eps * torch.tanh(w)
        adv = xt + delta
        views = [adv]
        if adaptive == "bpda":
            with torch.no_grad():
                pure = purifier.purify_tensor(adv, generator=gen) if hasattr(purifier, "purify_tensor") else \
                    torch.from_numpy(np.stack([purifier.purify(a, 16000) for a in adv.numpy()]))
            views = [adv + (pure - adv).detach()]
        elif adaptive == "eot":
            views = [purifier.purify_tensor(adv, generator=gen) for _ in range(int(eot_samples))]
        loss = 0.0
        for v in views:
            for e, s in zip(encoders, src, strict=True):
                emb = e.embed(v)
                loss = loss - (emb * tgt).sum(dim=1) + source_weight * (emb * s).sum(dim=1)
        loss = loss / (len(views) * len(encoders))
        snr = 10 * (torch.log10(power) - torch.log10((delta**2).sum(dim=1) + 1e-20))  # finite at delta = 0
        loss = loss + snr_weight * torch.relu(min_snr_db - snr) / 10
        opt.zero_grad()
        loss.sum().backward()
        opt.step()
    with torch.no_grad():
        adv = (xt.double() + eps * torch.tanh(w.double())).numpy()
    x64 = x.astype(np.float64)
    # inside the budget and inside [-1, 1] (a sample already outside keeps its own value as the bound)
    adv = np.clip(adv, np.maximum(x64 - eps, np.minimum(-1.0, x64)), np.minimum(x64 + eps, np.maximum(1.0, x64)))
    out = _float32_within(adv, x, eps)
    return out[0] if single else out

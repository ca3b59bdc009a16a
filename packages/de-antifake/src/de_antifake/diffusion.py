"""Stage 1: an unconditional DiffWave (WaveNet epsilon-model) and its short diffuse-then-reverse purifier.

The module names and the checkpoint layout follow the official DiffWave-unconditional code
(``WaveNet_Speech_Commands``; weight-normalised convolutions stored as ``weight_g``/``weight_v``;
``{"model_state_dict": ...}`` in ``purification.pkl``), so the official checkpoint loads with
:func:`load_purification_pkl`. Official size: 36 residual layers, 256 channels, dilation cycle 12,
diffusion-step embedding 128 -> 512 -> 512; T = 200 steps with beta linear from 1e-4 to 0.02.
"""

from __future__ import annotations

import json
import math
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import cast

import numpy as np
import torch
from icml25_shared.random import check_random_state
from torch import nn

from de_antifake.audio import SAMPLE_RATE, _float_samples, _own_torch_rng, _trains, as_mono

__all__ = ["DiffWave", "DiffWaveConfig", "DiffWavePurifier", "DiffusionSchedule", "load_purification_pkl",
           "save_purification_pkl", "train_diffwave"]


class DiffusionSchedule:
    """The discrete DDPM schedule: ``beta_t`` linear from ``beta_0`` to ``beta_T`` over ``T`` steps.

    Attributes (float64 tensors indexed ``0..T-1`` for steps ``1..T``): ``beta``, ``alpha = 1 - beta``,
    ``alpha_bar = cumprod(alpha)``, ``sigma = sqrt(beta * (1 - alpha_bar[t-1]) / (1 - alpha_bar[t]))``
    (``sigma[0] = sqrt(beta[0])``).

    Parameters
    ----------
    T : int, default 200
    beta_0, beta_T : float, default 1e-4 and 0.02

    Examples
    --------
    >>> s = DiffusionSchedule()
    >>> round(float(s.beta[-1]), 6), s.T
    (0.02, 200)
    """

    def __init__(self, T: int = 200, beta_0: float = 1e-4, beta_T: float = 0.02) -> None:
        if int(T) < 1 or not 0 < beta_0 <= beta_T < 1:
            raise ValueError(f"need T >= 1 and 0 < beta_0 <= beta_T < 1, got T={T}, beta_0={beta_0}, beta_T={beta_T}")
        self.T, self.beta_0, self.beta_T = int(T), float(beta_0), float(beta_T)
        self.beta = torch.linspace(beta_0, beta_T, self.T, dtype=torch.float64)
        self.alpha = 1.0 - self.beta
        self.alpha_bar = torch.cumprod(self.alpha, dim=0)
        tilde = self.beta.clone()
        tilde[1:] = self.beta[1:] * (1 - self.alpha_bar[:-1]) / (1 - self.alpha_bar[1:])
        self.sigma = tilde.sqrt()

    def _check_t(self, t: int) -> int:
        if isinstance(t, bool) or int(t) != t:  # 3.7 would silently run 3 steps
            raise ValueError(f"diffusion step t must be a whole number of steps, got {t!r}")
        if not 0 <= int(t) <= self.T:
            raise ValueError(f"diffusion step t={t} is outside 0..{self.T}")
        return int(t)

    def q_sample(self, x0: torch.Tensor, t: int, noise: torch.Tensor) -> torch.Tensor:
        """``x_t = sqrt(alpha_bar_t) x0 + sqrt(1 - alpha_bar_t) noise``; ``t = 0`` returns ``x0`` itself."""
        t = self._check_t(t)
        if t == 0:
            return x0
        ab = self.alpha_bar[t - 1].to(x0.dtype)
        return ab.sqrt() * x0 + (1 - ab).sqrt() * noise

    def step(self, x_t: torch.Tensor, t: int, eps: torch.Tensor, z: torch.Tensor | None) -> torch.Tensor:
        """One ancestral step from ``x_t`` to ``x_{t-1}`` given the predicted noise (``z=None``: the mean)."""
        k = self._check_t(t) - 1
        if k < 0:
            raise ValueError("step needs t >= 1")
        a, ab = self.alpha[k].to(x_t.dtype), self.alpha_bar[k].to(x_t.dtype)
        mu = (x_t - (1 - a) / (1 - ab).sqrt() * eps) / a.sqrt()
        if k == 0 or z is None:
            return mu
        return mu + self.sigma[k].to(x_t.dtype) * z


def _step_embedding(steps: torch.Tensor, dim: int) -> torch.Tensor:
    half = dim // 2
    freqs = torch.exp(torch.arange(half, dtype=torch.float32, device=steps.device) * -(math.log(10000.0) / (half - 1)))
    arg = steps.float().reshape(-1, 1) * freqs
    return torch.cat([torch.sin(arg), torch.cos(arg)], dim=1)


class _WNConv1d(nn.Module):
    """Conv1d with weight normalisation stored as ``weight_g``, ``weight_v``, ``bias``."""

    def __init__(self, cin: int, cout: int, kernel: int = 1, dilation: int = 1) -> None:
        super().__init__()
        v = torch.empty(cout, cin, kernel)
        nn.init.kaiming_normal_(v)
        self.weight_v = nn.Parameter(v)
        self.weight_g = nn.Parameter(v.flatten(1).norm(dim=1).reshape(cout, 1, 1).clone())
        self.bias = nn.Parameter(torch.zeros(cout))
        self.dilation = dilation
        self.padding = dilation * (kernel - 1) // 2

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        w = self.weight_g * self.weight_v / self.weight_v.flatten(1).norm(dim=1).reshape(-1, 1, 1)
        return nn.functional.conv1d(x, w, self.bias, padding=self.padding, dilation=self.dilation)


class _Conv(nn.Module):
    def __init__(self, cin: int, cout: int, kernel: int = 1, dilation: int = 1) -> None:
        super().__init__()
        self.conv = _WNConv1d(cin, cout, kernel, dilation)

    def forward(self, x):
        return self.conv(x)


class _ZeroConv(nn.Module):
    def __init__(self, cin: int, cout: int) -> None:
        super().__init__()
        self.conv = nn.Conv1d(cin, cout, 1)
        nn.init.zeros_(self.conv.weight)
        nn.init.zeros_(cast(torch.Tensor, self.conv.bias))

    def forward(self, x):
        return self.conv(x)


class _Block(nn.Module):
    def __init__(self, res: int, skip: int, dilation: int, emb: int) -> None:
        super().__init__()
        self.res_channels = res
        self.fc_t = nn.Linear(emb, res)
        self.dilated_conv_layer = _Conv(res, 2 * res, 3, dilation)
        self.res_conv = _WNConv1d(res, res)
        self.skip_conv = _WNConv1d(res, skip)

    def forward(self, x, emb):
        h = x + self.fc_t(emb).unsqueeze(-1)
        h = self.dilated_conv_layer(h)
        out = torch.tanh(h[:, : self.res_channels]) * torch.sigmoid(h[:, self.res_channels:])
        return (x + self.res_conv(out)) * math.sqrt(0.5), self.skip_conv(out)


class _Group(nn.Module):
    def __init__(self, cfg: DiffWaveConfig) -> None:
        super().__init__()
        self.cfg = cfg
        self.fc_t1 = nn.Linear(cfg.diffusion_step_embed_dim_in, cfg.diffusion_step_embed_dim_mid)
        self.fc_t2 = nn.Linear(cfg.diffusion_step_embed_dim_mid, cfg.diffusion_step_embed_dim_out)
        self.residual_blocks = nn.ModuleList(
            _Block(cfg.res_channels, cfg.skip_channels, 2 ** (n % cfg.dilation_cycle), cfg.diffusion_step_embed_dim_out)
            for n in range(cfg.num_res_layers))

    def forward(self, x, steps):
        e = _step_embedding(steps, self.cfg.diffusion_step_embed_dim_in)
        e = nn.functional.silu(self.fc_t2(nn.functional.silu(self.fc_t1(e))))
        skip = 0
        for block in self.residual_blocks:
            x, s = block(x, e)
            skip = skip + s
        return skip * math.sqrt(1.0 / self.cfg.num_res_layers)


@dataclass(frozen=True)
class DiffWaveConfig:
    """WaveNet sizes (the ``wavenet_config`` of the official ``config.json``; defaults are the official ones)."""

    in_channels: int = 1
    res_channels: int = 256
    skip_channels: int = 256
    out_channels: int = 1
    num_res_layers: int = 36
    dilation_cycle: int = 12
    diffusion_step_embed_dim_in: int = 128
    diffusion_step_embed_dim_mid: int = 512
    diffusion_step_embed_dim_out: int = 512

    def __post_init__(self) -> None:
        for k, v in asdict(self).items():
            if not isinstance(v, int) or v < 1:
                raise ValueError(f"DiffWaveConfig.{k} must be a positive int, got {v!r}")
        if self.diffusion_step_embed_dim_in % 2 or self.diffusion_step_embed_dim_in < 4:
            raise ValueError("diffusion_step_embed_dim_in must be even and >= 4")


class DiffWave(nn.Module):
    """The unconditional DiffWave epsilon-network ``eps(x_t, t)``.

    Parameters
    ----------
    config : DiffWaveConfig, optional
        Sizes; the official 36 x 256 model by default.

    Examples
    --------
    >>> import torch
    >>> net = DiffWave(DiffWaveConfig(res_channels=8, skip_channels=8, num_res_layers=2, dilation_cycle=2,
    ...                               diffusion_step_embed_dim_in=16, diffusion_step_embed_dim_mid=16,
    ...                               diffusion_step_embed_dim_out=16))
    >>> tuple(net(torch.zeros(2, 1, 100), torch.tensor([1, 2])).shape)
    (2, 1, 100)
    """

    def __init__(self, config: DiffWaveConfig | None = None) -> None:
        super().__init__()
        self.config = config or DiffWaveConfig()
        c = self.config
        self.init_conv = nn.Sequential(_Conv(c.in_channels, c.res_channels), nn.ReLU())
        self.residual_layer = _Group(c)
        self.final_conv = nn.Sequential(_Conv(c.skip_channels, c.skip_channels), nn.ReLU(),
                                        _ZeroConv(c.skip_channels, c.out_channels))

    def forward(self, x: torch.Tensor, steps: torch.Tensor) -> torch.Tensor:
        """Predicted noise for ``x`` of shape ``(batch, 1, n)`` at 0-based steps ``(batch,)``."""
        return self.final_conv(self.residual_layer(self.init_conv(x), steps))


def save_purification_pkl(model: DiffWave, path: str | Path, *, schedule: DiffusionSchedule | None = None) -> Path:
    """Save in the official layout: ``{"model_state_dict": ...}``, with ``config.json`` beside it.

    The JSON holds ``wavenet_config`` and ``diffusion_config`` (``T``, ``beta_0``, ``beta_T``) as the
    official ``config.json`` does. A ``config.json`` with another model's config is a ``ValueError`` when
    other ``.pkl`` checkpoints lie beside it (it would change how they load).
    """
    path = Path(path)
    s = schedule or DiffusionSchedule()
    cfg = {"wavenet_config": asdict(model.config), "diffusion_config": {"T": s.T, "beta_0": s.beta_0, "beta_T": s.beta_T}}
    cfg_path = path.with_name("config.json")
    others = [p for p in path.parent.glob("*.pkl") if p.resolve() != path.resolve()] if path.parent.is_dir() else []
    if cfg_path.is_file() and others:  # one config.json per folder: overwriting it would re-size the others
        try:
            old = json.loads(cfg_path.read_text(encoding="utf-8"))
        except ValueError:
            old = None
        if old is not None and {k: old.get(k) for k in cfg} != cfg:
            raise ValueError(f"{cfg_path} holds another model's config, with which {others[0].name} beside it is "
                             "read; save each DiffWave of another size or schedule in its own folder")
    path.parent.mkdir(parents=True, exist_ok=True)
    torch.save({"model_state_dict": model.state_dict()}, path)
    cfg_path.write_text(json.dumps(cfg, indent=2), encoding="utf-8")
    return path


@_own_torch_rng
def load_purification_pkl(path: str | Path, *, config: str | Path | dict | None = None) -> tuple[DiffWave, DiffusionSchedule]:
    """Load a DiffWave checkpoint saved in the official layout (``purification.pkl``).

    Parameters
    ----------
    path : path
        The checkpoint: a dict with ``model_state_dict``.
    config : path or dict, optional
        The official ``config.json`` (or its parsed dict). By default ``config.json`` beside the
        checkpoint if present, else the sizes are read off the weights and, for the official size
        only (36 layers of 256 channels), the official dilation cycle (12) and schedule are assumed.

    Returns
    -------
    model : DiffWave
        In eval mode.
    schedule : DiffusionSchedule

    Raises
    ------
    FileNotFoundError
        Naming the missing file.
    ValueError
        When the file is not a DiffWave checkpoint, or has no config and is not of the official size
        (its dilation cycle cannot be read off the weights).
    """
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"DiffWave checkpoint not found: {path}")
    ckpt = torch.load(path, map_location="cpu", weights_only=True)
    state = ckpt.get("model_state_dict", ckpt) if isinstance(ckpt, dict) else None
    if not isinstance(state, dict) or "init_conv.0.conv.weight_v" not in state:
        raise ValueError(f"{path} is not a DiffWave-unconditional checkpoint (no init_conv.0.conv.weight_v)")
    if config is None and path.with_name("config.json").is_file():
        config = path.with_name("config.json")
    settings: dict | None
    if isinstance(config, (str, Path)):
        if not Path(config).is_file():
            raise FileNotFoundError(f"DiffWave config not found: {config}")
        settings = json.loads(Path(config).read_text(encoding="utf-8"))
    else:
        settings = config
    if settings is not None:
        wcfg = DiffWaveConfig(**settings["wavenet_config"])
        schedule = DiffusionSchedule(**settings.get("diffusion_config", {}))
    else:
        layers = len({k.split(".")[2] for k in state if k.startswith("residual_layer.residual_blocks.")})
        wcfg = DiffWaveConfig(
            in_channels=state["init_conv.0.conv.weight_v"].shape[1], res_channels=state["init_conv.0.conv.weight_v"].shape[0],
            skip_channels=state["final_conv.0.conv.weight_v"].shape[0], out_channels=state["final_conv.2.conv.weight"].shape[0],
            num_res_layers=layers, dilation_cycle=12,
            diffusion_step_embed_dim_in=state["residual_layer.fc_t1.weight"].shape[1],
            diffusion_step_embed_dim_mid=state["residual_layer.fc_t1.weight"].shape[0],
            diffusion_step_embed_dim_out=state["residual_layer.fc_t2.weight"].shape[0])
        if (wcfg.num_res_layers, wcfg.res_channels) != (36, 256):
            raise ValueError(f"{path}: no config.json beside it and a non-official size ({wcfg.num_res_layers} layers of "
                             f"{wcfg.res_channels} channels), whose dilation cycle and schedule cannot be read off the "
                             "weights; pass config= (the wavenet_config and diffusion_config it was trained with)")
        schedule = DiffusionSchedule()
    model = DiffWave(wcfg)
    model.load_state_dict(state, strict=True)
    return model.eval(), schedule


def _peak_scale(x: torch.Tensor, peak: float | None) -> torch.Tensor:
    """Per-row gain that brings ``max |x|`` to ``peak`` (1 for silent rows and for ``peak=None``)."""
    if peak is None:
        return torch.ones(x.shape[:-1] + (1,), dtype=x.dtype)
    top = x.detach().abs().amax(dim=-1, keepdim=True)
    return torch.where(top > 0, peak / top.clamp_min(1e-12), torch.ones_like(top))


def _check_peak(peak) -> float | None:
    if peak is not None and not 0 < float(peak) <= 1:
        raise ValueError(f"peak must be None or in (0, 1], got {peak}")
    return None if peak is None else float(peak)


@_trains
@_own_torch_rng
def train_diffwave(waveforms, *, config: DiffWaveConfig, schedule: DiffusionSchedule | None = None, steps: int = 300,
                   batch_size: int = 16, segment: int = 2048, lr: float = 2e-3, max_t: int | None = None,
                   peak: float | None = None, ema_decay: float = 0.995, random_state=None,
                   callback=None) -> DiffWave:
    """Train the epsilon-network on clean waveforms (uniform steps, MSE on the noise).

    The convolutions are local (the receptive field is about twice the sum of the dilations, 511
    samples for 8 layers of dilation cycle 8), so short random crops train the same function as
    whole clips at a fraction of the cost.

    Parameters
    ----------
    waveforms : array_like
        Shape ``(n_clips, n_samples)``, 16 kHz.
    config : DiffWaveConfig
        Sizes.
    schedule : DiffusionSchedule, optional
        The official one by default.
    steps, batch_size, segment : int
        Optimiser steps, crops per step and crop length in samples.
    lr : float
        Adam learning rate.
    max_t : int, optional
        Train only steps ``1..max_t`` (purification uses small steps); all ``T`` by default.
    peak : float, optional
        Scale every clip so that ``max |x| = peak`` before training (use the same ``peak`` in
        :class:`DiffWavePurifier`); as given by default.
    ema_decay : float, default 0.995
        The returned weights are the exponential moving average of the iterates (0: the last iterate).
    random_state : None, int or Generator
    callback : callable, optional
        ``callback(step, loss, averaged)`` after every optimiser step (``step`` counts from 1);
        ``averaged()`` returns a copy of the model holding the current averaged weights (for progress
        reports and checkpoints).

    Returns
    -------
    DiffWave
        In eval mode, holding the averaged weights.
    """
    rng = check_random_state(random_state)
    torch.manual_seed(int(rng.integers(2**31)))
    s = schedule or DiffusionSchedule()
    peak = _check_peak(peak)
    if not 0 <= ema_decay < 1:
        raise ValueError(f"ema_decay must be in [0, 1), got {ema_decay}")
    data = torch.as_tensor(_float_samples(waveforms, name="waveforms"))
    if data.ndim != 2 or data.shape[1] < segment:
        raise ValueError(f"waveforms must be (n_clips, n >= segment={segment}), got {tuple(data.shape)}")
    data = data * _peak_scale(data, peak)
    top = s.T if max_t is None else int(max_t)
    if not 1 <= top <= s.T:
        raise ValueError(f"max_t must be in 1..{s.T}, got {max_t}")
    model = DiffWave(config)
    opt = torch.optim.Adam(model.parameters(), lr=lr)
    shadow = [p.detach().clone() for p in model.parameters()]
    ab = s.alpha_bar.float()
    for it in range(int(steps)):
        idx = rng.integers(len(data), size=batch_size)
        off = rng.integers(data.shape[1] - segment + 1, size=batch_size)
        x0 = torch.stack([data[i, o:o + segment] for i, o in zip(idx, off, strict=True)]).unsqueeze(1)
        k = torch.as_tensor(rng.integers(top, size=batch_size))
        eps = torch.randn_like(x0)
        a = ab[k].reshape(-1, 1, 1)
        loss = ((model(a.sqrt() * x0 + (1 - a).sqrt() * eps, k) - eps) ** 2).mean()
        opt.zero_grad()
        loss.backward()
        opt.step()
        decay = min(ema_decay, (1 + it) / (10 + it))
        with torch.no_grad():
            for sh, p in zip(shadow, model.parameters(), strict=True):
                sh.mul_(decay).add_(p.detach(), alpha=1 - decay)
        if callback is not None:
            callback(it + 1, float(loss.detach()), lambda: _averaged_copy(config, shadow))
    with torch.no_grad():
        for sh, p in zip(shadow, model.parameters(), strict=True):
            p.copy_(sh)
    return model.eval()


def _averaged_copy(config, shadow) -> DiffWave:
    """A DiffWave in eval mode holding the averaged weights ``shadow``."""
    copy = DiffWave(config)
    with torch.no_grad():
        for sh, p in zip(shadow, copy.parameters(), strict=True):
            p.copy_(sh)
    return copy.eval()


class DiffWavePurifier:
    """Diffuse to step ``t`` and reverse with the DiffWave model (AudioPure; PhonePuRe's stage 1 at ``t=3``).

    Parameters
    ----------
    model : DiffWave
        The epsilon-network.
    schedule : DiffusionSchedule, optional
        The official schedule by default.
    t : int, default 3
        Diffusion steps out of ``schedule.T``.
    reverse : {"ddpm", "sde"}, default "ddpm"
        Ancestral DDPM steps, or the reverse VP-SDE integrated with ``torchsde`` (Euler, ``sde_steps`` steps).
    chunk_seconds : float, default 1.0
        The waveform is processed in chunks of this length (batched).
    sde_steps : int, default 10
    peak : float, optional
        Scale each waveform so that ``max |x| = peak`` before diffusing and back afterwards, so that
        the fixed diffusion noise meets the level the model was trained at (``train_diffwave(peak=...)``);
        as given by default (the official behaviour). One click sets the gain of the whole clip, so a
        clip whose peak is an outlier is purified at a lower level (more noise relative to speech).
    random_state : None, int or Generator
        Noise source; the same seed gives the same output.

    Examples
    --------
    >>> import numpy as np
    >>> net = DiffWave(DiffWaveConfig(res_channels=8, skip_channels=8, num_res_layers=2, dilation_cycle=2,
    ...                               diffusion_step_embed_dim_in=16, diffusion_step_embed_dim_mid=16,
    ...                               diffusion_step_embed_dim_out=16))
    >>> out = DiffWavePurifier(net, t=2, random_state=0).purify(np.zeros(20000), 16000)
    >>> out.shape
    (20000,)
    """

    name = "DiffWave"

    def __init__(self, model: DiffWave, *, schedule: DiffusionSchedule | None = None, t: int = 3,
                 reverse: str = "ddpm", chunk_seconds: float = 1.0, sde_steps: int = 10, peak: float | None = None,
                 random_state=None) -> None:
        from icml25_shared.validation import Interval, Options, check_params

        # t is checked by the schedule (a whole number of steps, 3.0 included)
        check_params({"reverse": reverse, "chunk_seconds": chunk_seconds, "sde_steps": sde_steps,
                      "random_state": random_state},
                     {"reverse": [Options(str, {"ddpm", "sde"})],
                      "chunk_seconds": [Interval(float, 1 / SAMPLE_RATE, None)], "sde_steps": [Interval(int, 1, None)],
                      "random_state": ["random_state"]}, owner="DiffWavePurifier")
        self.model = model
        self.peak = _check_peak(peak)
        self.schedule = schedule or DiffusionSchedule()
        self.t = self.schedule._check_t(t)
        if reverse == "sde":
            try:
                import torchsde  # noqa: F401
            except ImportError as err:
                raise ImportError("reverse='sde' needs torchsde: pip install 'de-antifake[sde]'") from err
        if not chunk_seconds * SAMPLE_RATE >= 1:
            raise ValueError(f"chunk_seconds must be at least one sample (1/{SAMPLE_RATE} s), got {chunk_seconds}")
        if int(sde_steps) < 1:
            raise ValueError(f"sde_steps must be >= 1, got {sde_steps}")
        self.reverse = reverse
        self.chunk = int(round(chunk_seconds * SAMPLE_RATE))
        self.sde_steps = int(sde_steps)
        self.random_state = random_state

    def _chunks(self, x: torch.Tensor) -> tuple[torch.Tensor, int]:
        n = x.shape[-1]
        m = -(-n // self.chunk) * self.chunk
        x = nn.functional.pad(x, (0, m - n))
        return x.reshape(-1, 1, self.chunk), n

    def purify_tensor(self, x: torch.Tensor, *, generator: torch.Generator | None = None) -> torch.Tensor:
        """Purify ``(batch, n)`` waveforms; differentiable (used by adaptive protections)."""
        b = x.shape[0]
        gain = _peak_scale(x, self.peak)
        chunks, n = self._chunks(x * gain)
        noise = torch.randn(chunks.shape, generator=generator, dtype=chunks.dtype)
        xt = self.schedule.q_sample(chunks, self.t, noise)
        if self.reverse == "ddpm":
            for t in range(self.t, 0, -1):
                steps = torch.full((chunks.shape[0],), t - 1)
                z = torch.randn(chunks.shape, generator=generator, dtype=chunks.dtype) if t > 1 else None
                xt = self.schedule.step(xt, t, self.model(xt, steps), z)
        else:
            xt = self._sde(xt, generator)
        return xt.reshape(b, -1)[:, :n] / gain

    def _sde(self, xt: torch.Tensor, generator) -> torch.Tensor:
        import torchsde

        s, model, T, t_star = self.schedule, self.model, self.schedule.T, self.t / self.schedule.T
        shape = xt.shape

        def beta(u):  # continuous-time beta at time u in [0, 1]
            return T * (s.beta_0 + u * (s.beta_T - s.beta_0))

        def alpha_bar(u):
            return math.exp(-T * (s.beta_0 * u + 0.5 * (s.beta_T - s.beta_0) * u * u))

        class _Reverse(torch.nn.Module):
            noise_type, sde_type = "diagonal", "ito"

            def f(self, r, y):  # r runs 0 -> t*, time u = t* - r
                u = t_star - float(r)
                x = y.reshape(shape)
                eps = model(x, torch.full((shape[0],), max(u * T - 1, 0.0)))
                score = -eps / math.sqrt(max(1 - alpha_bar(u), 1e-12))
                b = beta(u)
                return (0.5 * b * x + b * score).reshape(shape[0], -1)

            def g(self, r, y):
                return torch.full_like(y, math.sqrt(beta(t_star - float(r))))

        seed = int(torch.randint(2**31 - 1, (1,), generator=generator))
        ts = torch.tensor([0.0, t_star * (1 - 1e-3)])
        bm = torchsde.BrownianInterval(t0=0.0, t1=float(ts[-1]), size=(shape[0], shape[-1]), entropy=seed)
        ys = torchsde.sdeint(_Reverse(), xt.reshape(shape[0], -1), ts, method="euler", dt=t_star / self.sde_steps, bm=bm)
        return ys[-1].reshape(shape)

    @torch.inference_mode()
    def purify(self, wav, sr) -> np.ndarray:
        """Purify one waveform.

        Parameters
        ----------
        wav : array_like
            Samples (stereo is averaged).
        sr : int
            Must be 16000.

        Returns
        -------
        numpy.ndarray
            Same length, float32.
        """
        x = torch.from_numpy(as_mono(wav, sr)).unsqueeze(0)
        g = torch.Generator().manual_seed(int(check_random_state(self.random_state).integers(2**31)))
        return self.purify_tensor(x, generator=g)[0].numpy()

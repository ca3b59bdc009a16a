"""ECAPA-TDNN speaker encoders from a local speechbrain pretrained folder, differentiable in the waveform.

A speechbrain speaker-recognition folder (the layout of ``speechbrain/spkrec-ecapa-voxceleb``) holds
``hyperparams.yaml`` (``compute_features: !new:speechbrain.lobes.features.Fbank``, ``mean_var_norm``
sentence mean normalisation, ``embedding_model: !new:speechbrain.lobes.models.ECAPA_TDNN.ECAPA_TDNN``
with its sizes), ``embedding_model.ckpt`` (the model's ``state_dict``) and optionally
``mean_var_norm_emb.ckpt`` (global embedding mean), ``classifier.ckpt`` and ``label_encoder.txt``
(not needed for embeddings).

:func:`load_ecapa` rebuilds that pipeline in torch, with speechbrain's parameter names, so the
checkpoint loads with ``strict=True`` and neither ``speechbrain`` nor ``torchaudio`` is imported:
:class:`SpeechbrainFbank` (Hamming-windowed STFT, n_fft 400, 25 ms / 10 ms, power spectrum, triangular
filters on the HTK mel scale, 10 log10 with an 80 dB floor below each utterance's maximum), the
per-utterance mean subtraction, and :class:`ECAPATDNN` (TDNN, SE-Res2Net blocks with reflect "same"
padding, multi-layer aggregation, attentive statistics pooling, batch norm, linear). The hyperparameter
file is read with PyYAML (``pip install 'de-antifake[ecapa]'``); the ``!new:``/``!ref`` tags of
HyperPyYAML are interpreted for the entries above only.
"""

from __future__ import annotations

import importlib
import math
import re
from pathlib import Path
from typing import Any

import numpy as np
import torch
from torch import nn

from de_antifake.audio import SAMPLE_RATE, _own_torch_rng, as_mono
from de_antifake.encoder import _as_wave_tensor

__all__ = ["ECAPAEncoder", "ECAPATDNN", "SpeechbrainFbank", "load_ecapa", "save_ecapa"]

_ECAPA_CLASS = "speechbrain.lobes.models.ECAPA_TDNN.ECAPA_TDNN"
_FBANK_CLASS = "speechbrain.lobes.features.Fbank"
_NORM_CLASS = "speechbrain.processing.features.InputNormalization"
_ECAPA_ARGS = {"input_size", "device", "lin_neurons", "activation", "channels", "kernel_sizes", "dilations",
               "attention_channels", "res2net_scale", "se_channels", "global_context", "groups", "dropout"}
_FBANK_ARGS = {"n_mels", "sample_rate", "n_fft", "f_min", "f_max", "win_length", "hop_length", "deltas", "context",
               "left_frames", "right_frames", "requires_grad", "filter_shape", "param_change_factor",
               "param_rand_factor"}


class SpeechbrainFbank(nn.Module):
    """Log mel filterbank energies as ``speechbrain.lobes.features.Fbank`` computes them (no deltas, no context).

    Parameters
    ----------
    n_mels : int, default 40
        Mel filters (the ECAPA models use 80).
    sample_rate : int, default 16000
        Sampling rate in Hz.
    n_fft : int, default 400
        FFT length.
    win_length, hop_length : float, default 25 and 10
        Window and hop in milliseconds.
    f_min, f_max : float
        Filter band edges in Hz (``f_max`` defaults to ``sample_rate // 2``).
    top_db : float, default 80
        Floor of the dB values below each utterance's maximum.

    Examples
    --------
    >>> import torch
    >>> tuple(SpeechbrainFbank(n_mels=80)(torch.zeros(2, 16000)).shape)
    (2, 101, 80)
    """

    def __init__(self, *, n_mels: int = 40, sample_rate: int = SAMPLE_RATE, n_fft: int = 400, win_length: float = 25,
                 hop_length: float = 10, f_min: float = 0.0, f_max: float | None = None, top_db: float = 80.0) -> None:
        super().__init__()
        f_max = sample_rate // 2 if f_max is None else f_max
        if not 0 <= f_min < f_max <= sample_rate / 2:
            raise ValueError(f"need 0 <= f_min < f_max <= sample_rate / 2, got f_min={f_min}, f_max={f_max}")
        self.n_fft = int(n_fft)
        self.win = int(round(sample_rate / 1000.0 * win_length))
        self.hop = int(round(sample_rate / 1000.0 * hop_length))
        if not 0 < self.win <= self.n_fft:
            raise ValueError(f"the window ({self.win} samples) must be 1..n_fft={self.n_fft}")
        self.top_db = float(top_db)
        self.register_buffer("window", torch.hamming_window(self.win), persistent=False)

        def to_mel(hz):
            return 2595.0 * math.log10(1.0 + hz / 700.0)

        mel = torch.linspace(to_mel(f_min), to_mel(f_max), n_mels + 2)
        hz = 700.0 * (10 ** (mel / 2595.0) - 1.0)
        band = (hz[1:] - hz[:-1])[:-1]
        centre = hz[1:-1]
        freqs = torch.linspace(0, sample_rate // 2, self.n_fft // 2 + 1)
        slope = (freqs[None, :] - centre[:, None]) / band[:, None]
        fb = torch.clamp(torch.minimum(slope + 1.0, 1.0 - slope), min=0.0).T  # (bins, n_mels)
        self.filters: torch.Tensor
        self.window: torch.Tensor
        self.register_buffer("filters", fb, persistent=False)

    def forward(self, wav: torch.Tensor) -> torch.Tensor:
        """``(batch, n)`` samples -> ``(batch, 1 + n // hop, n_mels)`` dB filterbank energies."""
        spec = torch.stft(wav, self.n_fft, self.hop, self.win, self.window.to(wav.dtype), center=True,
                          pad_mode="constant", return_complex=True)
        power = (spec.real**2 + spec.imag**2).transpose(1, 2)
        db = 10.0 * torch.log10(torch.clamp(power @ self.filters.to(power.dtype), min=1e-10))
        floor = db.amax(dim=(-2, -1)) - self.top_db
        return torch.maximum(db, floor[:, None, None])


class _Conv(nn.Module):
    """speechbrain's ``Conv1d`` (channels first): reflect "same" padding, the torch layer under ``.conv``."""

    def __init__(self, cin: int, cout: int, kernel: int, dilation: int = 1, groups: int = 1) -> None:
        super().__init__()
        if kernel % 2 == 0:
            raise ValueError(f"kernel sizes must be odd for 'same' padding, got {kernel}")
        self.pad = dilation * (kernel - 1) // 2
        self.conv = nn.Conv1d(cin, cout, kernel, dilation=dilation, groups=groups)

    def forward(self, x):
        return self.conv(nn.functional.pad(x, (self.pad, self.pad), mode="reflect") if self.pad else x)


class _BN(nn.Module):
    """speechbrain's ``BatchNorm1d`` (channels first), the torch layer under ``.norm``."""

    def __init__(self, channels: int) -> None:
        super().__init__()
        self.norm = nn.BatchNorm1d(channels)

    def forward(self, x):
        return self.norm(x)


class _TDNN(nn.Module):
    def __init__(self, cin, cout, kernel, dilation, groups=1):
        super().__init__()
        self.conv = _Conv(cin, cout, kernel, dilation, groups)
        self.activation = nn.ReLU()
        self.norm = _BN(cout)

    def forward(self, x):
        return self.norm(self.activation(self.conv(x)))


class _Res2Net(nn.Module):
    def __init__(self, channels, scale, kernel, dilation):
        super().__init__()
        if channels % scale:
            raise ValueError(f"channels {channels} are not divisible by res2net_scale {scale}")
        self.scale = scale
        self.blocks = nn.ModuleList(_TDNN(channels // scale, channels // scale, kernel, dilation)
                                    for _ in range(scale - 1))

    def forward(self, x):
        out = []
        for i, xi in enumerate(torch.chunk(x, self.scale, dim=1)):
            if i == 0:
                y = xi
            elif i == 1:
                y = self.blocks[0](xi)
            else:
                y = self.blocks[i - 1](xi + y)
            out.append(y)
        return torch.cat(out, dim=1)


class _SE(nn.Module):
    def __init__(self, channels, se_channels):
        super().__init__()
        self.conv1 = _Conv(channels, se_channels, 1)
        self.conv2 = _Conv(se_channels, channels, 1)

    def forward(self, x):
        s = torch.relu(self.conv1(x.mean(dim=2, keepdim=True)))
        return torch.sigmoid(self.conv2(s)) * x


class _SERes2Net(nn.Module):
    def __init__(self, cin, cout, scale, se_channels, kernel, dilation, groups):
        super().__init__()
        self.tdnn1 = _TDNN(cin, cout, 1, 1, groups)
        self.res2net_block = _Res2Net(cout, scale, kernel, dilation)
        self.tdnn2 = _TDNN(cout, cout, 1, 1, groups)
        self.se_block = _SE(cout, se_channels)
        self.shortcut = _Conv(cin, cout, 1) if cin != cout else None

    def forward(self, x):
        residual = self.shortcut(x) if self.shortcut is not None else x
        return self.se_block(self.tdnn2(self.res2net_block(self.tdnn1(x)))) + residual


class _ASP(nn.Module):
    def __init__(self, channels, attention_channels, global_context):
        super().__init__()
        self.global_context = global_context
        self.tdnn = _TDNN(channels * 3 if global_context else channels, attention_channels, 1, 1)
        self.conv = _Conv(attention_channels, channels, 1)

    @staticmethod
    def _stats(x, weights):
        mean = (weights * x).sum(dim=2)
        std = torch.sqrt((weights * (x - mean[:, :, None]).pow(2)).sum(dim=2).clamp(min=1e-12))
        return mean, std

    def forward(self, x):
        length = x.shape[-1]
        if self.global_context:
            mean, std = self._stats(x, torch.full_like(x[:, :1], 1.0 / length))
            attn = torch.cat([x, mean[:, :, None].expand_as(x), std[:, :, None].expand_as(x)], dim=1)
        else:
            attn = x
        attn = torch.softmax(self.conv(torch.tanh(self.tdnn(attn))), dim=2)
        mean, std = self._stats(x, attn)
        return torch.cat([mean, std], dim=1)[:, :, None]


class ECAPATDNN(nn.Module):
    """ECAPA-TDNN (Desplanques et al. 2020) with the parameter names of speechbrain's ``ECAPA_TDNN``.

    Parameters
    ----------
    input_size : int
        Feature channels (mel filters).
    lin_neurons : int, default 192
        Embedding size.
    channels, kernel_sizes, dilations, groups : sequence of int
        Per layer: the first TDNN, the SE-Res2Net blocks, the aggregation layer (speechbrain's defaults
        ``[512, 512, 512, 512, 1536]``, ``[5, 3, 3, 3, 1]``, ``[1, 2, 3, 4, 1]``, ``[1] * 5``).
    attention_channels, res2net_scale, se_channels : int
        128, 8 and 128 by default.
    global_context : bool, default True
        Attentive pooling sees the utterance mean and standard deviation.

    Notes
    -----
    ``forward`` takes ``(batch, frames, input_size)`` features and returns ``(batch, 1, lin_neurons)``,
    as speechbrain's model does for full-length inputs (no relative lengths: batches are equal length).
    """

    def __init__(self, input_size: int, *, lin_neurons: int = 192, channels=(512, 512, 512, 512, 1536),
                 kernel_sizes=(5, 3, 3, 3, 1), dilations=(1, 2, 3, 4, 1), attention_channels: int = 128,
                 res2net_scale: int = 8, se_channels: int = 128, global_context: bool = True,
                 groups=(1, 1, 1, 1, 1)) -> None:
        super().__init__()
        channels, kernel_sizes, dilations, groups = (list(map(int, v)) for v in (channels, kernel_sizes, dilations,
                                                                                  groups))
        if not len(channels) == len(kernel_sizes) == len(dilations) == len(groups) or len(channels) < 3:
            raise ValueError("channels, kernel_sizes, dilations and groups need one entry per layer (>= 3 layers), got "
                             f"{len(channels)}, {len(kernel_sizes)}, {len(dilations)}, {len(groups)}")
        self.blocks = nn.ModuleList([_TDNN(input_size, channels[0], kernel_sizes[0], dilations[0], groups[0])])
        for i in range(1, len(channels) - 1):
            self.blocks.append(_SERes2Net(channels[i - 1], channels[i], res2net_scale, se_channels, kernel_sizes[i],
                                          dilations[i], groups[i]))
        self.mfa = _TDNN(channels[-2] * (len(channels) - 2), channels[-1], kernel_sizes[-1], dilations[-1], groups[-1])
        self.asp = _ASP(channels[-1], attention_channels, global_context)
        self.asp_bn = _BN(channels[-1] * 2)
        self.fc = _Conv(channels[-1] * 2, lin_neurons, 1)

    def forward(self, feats: torch.Tensor) -> torch.Tensor:
        """``(batch, frames, input_size)`` -> ``(batch, 1, lin_neurons)``."""
        x = feats.transpose(1, 2)
        outs = []
        for layer in self.blocks:
            x = layer(x)
            outs.append(x)
        x = self.mfa(torch.cat(outs[1:], dim=1))
        return self.fc(self.asp_bn(self.asp(x))).transpose(1, 2)


class ECAPAEncoder(nn.Module):
    """Fbank -> per-utterance mean subtraction -> ECAPA-TDNN, with the encoder interface of this package.

    Parameters
    ----------
    front : SpeechbrainFbank
        Feature extractor.
    model : ECAPATDNN
        The embedding model (attribute ``embedding_model``).
    embedding_mean : torch.Tensor, optional
        The global embedding mean of ``mean_var_norm_emb.ckpt``, subtracted by :meth:`raw_embed` when
        ``normalize=True`` (speechbrain's ``encode_batch(..., normalize=True)``).

    Notes
    -----
    Build one with :func:`load_ecapa`. ``embed`` returns unit-norm embeddings (cosine scoring, as
    speechbrain's verification does); :meth:`raw_embed` returns speechbrain's unnormalised vectors.
    The encoder is put in eval mode (with ``model``), so batch norm uses its running statistics;
    call ``.train()`` explicitly to train it.
    """

    def __init__(self, front: SpeechbrainFbank, model: ECAPATDNN, *, embedding_mean: torch.Tensor | None = None) -> None:
        super().__init__()
        self.front = front
        self.embedding_model = model
        self.register_buffer("embedding_mean", embedding_mean, persistent=False)
        self.eval()  # batch statistics would make an embedding depend on its batch and move the running stats

    def raw_embed(self, wav: torch.Tensor, *, normalize: bool = False) -> torch.Tensor:
        """The ``encode_batch(wav)[:, 0]`` of speechbrain for equal-length waveforms ``(batch, n)`` -> ``(batch, d)``.

        Floating-point samples are cast to the model's dtype (speechbrain casts to float32); integer
        (PCM) or complex samples, NaN or inf, empty waveforms and more than two axes raise ``ValueError``.
        """
        wav = _as_wave_tensor(wav, self.embedding_model.fc.conv.weight.dtype)
        squeeze = wav.dim() == 1
        x = wav.unsqueeze(0) if squeeze else wav
        frames = x.shape[-1] // self.front.hop + 1
        reach = max((m.pad for m in self.embedding_model.modules() if isinstance(m, _Conv)), default=0)
        if frames <= reach:
            raise ValueError(f"a waveform of {x.shape[-1]} samples gives {frames} frames; the model's reflect "
                             f"padding needs more than {reach} (at least {reach * self.front.hop} samples)")
        feats = self.front(x)
        feats = feats - feats.mean(dim=1, keepdim=True)
        emb = self.embedding_model(feats)[:, 0]
        if normalize:
            if self.embedding_mean is None:
                raise ValueError("normalize=True needs mean_var_norm_emb.ckpt, which the folder did not have")
            emb = emb - self.embedding_mean.to(emb.dtype)
        return emb[0] if squeeze else emb

    def embed(self, wav: torch.Tensor) -> torch.Tensor:
        """Unit-norm embeddings ``(batch, d)`` (or ``(d,)``) of 16 kHz waveforms, differentiable in the samples."""
        emb = self.raw_embed(wav)
        return emb / (emb.pow(2).sum(dim=-1, keepdim=True) + 1e-24).sqrt()

    @torch.no_grad()
    def embed_utterance(self, wav, sr) -> np.ndarray:
        """Unit-norm embedding of one waveform as numpy ``(d,)`` float32 (stereo is averaged; sr must be 16000)."""
        return self.embed(torch.from_numpy(as_mono(wav, sr))).numpy()


def _yaml():
    try:
        return importlib.import_module("yaml")
    except ImportError as err:
        raise ImportError("reading speechbrain's hyperparams.yaml needs PyYAML: pip install 'de-antifake[ecapa]'") from err


class _Tagged(dict):
    """A HyperPyYAML tagged node: ``tag`` (e.g. ``new:speechbrain....``) and its arguments."""

    def __init__(self, tag, value):
        super().__init__(value if isinstance(value, dict) else {})
        self.tag = tag
        self.value = value


def _read_hparams(path: Path) -> dict:
    yaml = _yaml()

    class Loader(yaml.SafeLoader):  # type: ignore[name-defined]  # yaml is imported at run time
        pass

    def tagged(loader, suffix, node):
        if isinstance(node, yaml.MappingNode):
            value = loader.construct_mapping(node, deep=True)
        elif isinstance(node, yaml.SequenceNode):
            value = loader.construct_sequence(node, deep=True)
        else:
            value = loader.construct_scalar(node)
        return _Tagged(suffix, value)

    Loader.add_multi_constructor("!", tagged)
    try:
        doc = yaml.load(path.read_text(encoding="utf-8"), Loader=Loader)  # noqa: S506 - a SafeLoader subclass
    except yaml.YAMLError as err:
        raise ValueError(f"{path} is not valid YAML: {err}") from err
    if not isinstance(doc, dict):
        raise ValueError(f"{path} is not a mapping of hyperparameters")
    return doc


def _resolve(value, doc: dict, path: Path, depth: int = 0):
    if depth > 20:
        raise ValueError(f"{path}: !ref references loop")
    if isinstance(value, _Tagged) and value.tag == "ref":
        text = str(value.value).strip()
        whole = re.fullmatch(r"<([\w.]+)>", text)
        if whole:
            return _resolve(_lookup(doc, whole[1], path), doc, path, depth + 1)
        out = re.sub(r"<([\w.]+)>", lambda m: str(_resolve(_lookup(doc, m[1], path), doc, path, depth + 1)), text)
        if re.search(r"[*+/()]|\s-\s", out):
            raise ValueError(f"{path}: the expression !ref {text} is not supported (only <name> substitution)")
        return out
    if isinstance(value, list):
        return [_resolve(v, doc, path, depth) for v in value]
    return value


def _lookup(doc, name, path):
    node = doc
    for part in name.split("."):
        if not isinstance(node, dict) or part not in node:
            raise ValueError(f"{path}: !ref <{name}> names no entry")
        node = node[part]
    return node


def _args(node, cls: str, allowed: set, path: Path, key: str, doc: dict) -> dict:
    if not isinstance(node, _Tagged) or node.tag != f"new:{cls}":
        got = f"!{node.tag}" if isinstance(node, _Tagged) else repr(node)[:60]
        raise ValueError(f"{path}: {key} must be !new:{cls}, got {got}")
    args = {k: _resolve(v, doc, path) for k, v in dict(node).items()}
    unknown = sorted(set(args) - allowed)
    if unknown:
        raise ValueError(f"{path}: {key} has arguments {unknown} that this loader cannot represent")
    return args


def _check_file(path: Path) -> Path:
    if not path.is_file():
        raise FileNotFoundError(f"speechbrain model file not found: {path}")
    return path


@_own_torch_rng
def load_ecapa(folder: str | Path) -> ECAPAEncoder:
    """Load a speechbrain ECAPA-TDNN speaker encoder from a local pretrained folder.

    Parameters
    ----------
    folder : path
        Holds ``hyperparams.yaml`` and ``embedding_model.ckpt`` (and optionally
        ``mean_var_norm_emb.ckpt``), as in ``speechbrain/spkrec-ecapa-voxceleb``.

    Returns
    -------
    ECAPAEncoder
        In eval mode, parameters frozen; gradients reach the input waveform.

    Raises
    ------
    FileNotFoundError
        Naming the missing folder or file.
    ValueError
        When the hyperparameters describe something else than Fbank + sentence mean normalisation +
        ECAPA_TDNN at 16 kHz (deltas, context windows, standard-deviation normalisation, another
        activation, another sampling rate), or the checkpoint does not match them.
    ImportError
        Naming the ``ecapa`` extra when PyYAML is missing.

    Examples
    --------
    >>> import tempfile, torch
    >>> model = ECAPATDNN(80, channels=[16, 16, 16, 16, 48], attention_channels=8, lin_neurons=8, se_channels=8,
    ...                   res2net_scale=4)
    >>> folder = save_ecapa(model, tempfile.mkdtemp())
    >>> enc = load_ecapa(folder)
    >>> enc.embed_utterance(torch.randn(16000).numpy(), 16000).shape
    (8,)
    """
    folder = Path(folder)
    if not folder.is_dir():
        raise FileNotFoundError(f"speechbrain model folder not found: {folder}")
    hp_path = _check_file(folder / "hyperparams.yaml")
    ckpt_path = _check_file(folder / "embedding_model.ckpt")
    doc = _read_hparams(hp_path)
    for key in ("compute_features", "embedding_model"):
        if key not in doc:
            raise ValueError(f"{hp_path} has no {key!r} entry")
    fb = _args(doc["compute_features"], _FBANK_CLASS, _FBANK_ARGS, hp_path, "compute_features", doc)
    if fb.get("deltas") or fb.get("context"):
        raise ValueError(f"{hp_path}: Fbank deltas/context windows are not supported")
    if fb.get("filter_shape", "triangular") != "triangular":
        raise ValueError(f"{hp_path}: only triangular filters are supported, got {fb['filter_shape']!r}")
    sr = int(fb.get("sample_rate", SAMPLE_RATE))
    if sr != SAMPLE_RATE:
        raise ValueError(f"{hp_path}: the model works at {sr} Hz; this package works at {SAMPLE_RATE} Hz")
    front = SpeechbrainFbank(n_mels=int(fb.get("n_mels", 40)), n_fft=int(fb.get("n_fft", 400)),
                             win_length=float(fb.get("win_length", 25)), hop_length=float(fb.get("hop_length", 10)),
                             f_min=float(fb.get("f_min", 0)), f_max=None if fb.get("f_max") is None else float(fb["f_max"]))
    if "mean_var_norm" in doc:
        norm = _args(doc["mean_var_norm"], _NORM_CLASS, {"norm_type", "std_norm", "mean_norm", "update_until_epoch",
                                                         "length_dim", "avoid_padding_norm", "epsilon", "device"},
                     hp_path, "mean_var_norm", doc)
        if (norm.get("norm_type", "global") != "sentence" or norm.get("std_norm", True)
                or not norm.get("mean_norm", True)):
            raise ValueError(f"{hp_path}: mean_var_norm must be norm_type: sentence with std_norm: False and "
                             f"mean_norm: True (the default), got {norm}")
    else:
        raise ValueError(f"{hp_path} has no 'mean_var_norm' entry (the ECAPA recipes normalise each sentence's mean)")
    ec = _args(doc["embedding_model"], _ECAPA_CLASS, _ECAPA_ARGS, hp_path, "embedding_model", doc)
    act = ec.pop("activation", None)
    if act is not None and not (isinstance(act, _Tagged) and act.tag == "name:torch.nn.ReLU"):
        raise ValueError(f"{hp_path}: only the ReLU activation is supported")
    ec.pop("device", None)
    ec.pop("dropout", None)
    if "input_size" not in ec:
        raise ValueError(f"{hp_path}: embedding_model needs input_size")
    if int(ec["input_size"]) != front.filters.shape[1]:
        raise ValueError(f"{hp_path}: embedding_model.input_size={ec['input_size']} but Fbank has "
                         f"{front.filters.shape[1]} mels")
    model = ECAPATDNN(int(ec.pop("input_size")), **ec)
    state = torch.load(ckpt_path, map_location="cpu", weights_only=True)
    try:
        model.load_state_dict(state, strict=True)
    except RuntimeError as err:
        raise ValueError(f"{ckpt_path} does not match the ECAPA_TDNN of {hp_path}: {str(err)[:400]}") from err
    mean = None
    emb_norm = folder / "mean_var_norm_emb.ckpt"
    if emb_norm.is_file():
        stats = torch.load(emb_norm, map_location="cpu", weights_only=True)
        if not isinstance(stats, dict) or "glob_mean" not in stats:
            raise ValueError(f"{emb_norm} is not an InputNormalization statistics file (no glob_mean)")
        mean = torch.as_tensor(stats["glob_mean"], dtype=torch.float32).reshape(-1)
    enc = ECAPAEncoder(front, model, embedding_mean=mean)
    enc.eval()
    for p in enc.parameters():
        p.requires_grad_(False)
    return enc


def _ints(values) -> str:
    return "[" + ", ".join(str(int(v)) for v in values) + "]"


def save_ecapa(model: ECAPATDNN, folder: str | Path, *, n_mels: int | None = None,
               embedding_mean: torch.Tensor | None = None) -> Path:
    """Write an :class:`ECAPATDNN` as a speechbrain pretrained folder (``hyperparams.yaml``, ``embedding_model.ckpt``).

    Parameters
    ----------
    model : ECAPATDNN
        The model to save.
    folder : path
        Created if needed.
    n_mels : int, optional
        Mel filters of the Fbank; the model's input size by default.
    embedding_mean : torch.Tensor, optional
        Written to ``mean_var_norm_emb.ckpt`` (as speechbrain's ``InputNormalization`` statistics).

    Returns
    -------
    pathlib.Path
        The folder, loadable by :func:`load_ecapa` (and by speechbrain's ``EncoderClassifier``).
    """
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    net: Any = model  # nested speechbrain-named submodules: attribute chains below
    first = net.blocks[0].conv.conv
    mid = list(net.blocks)[1:]
    channels = [first.out_channels] + [b.tdnn1.conv.conv.out_channels for b in mid] + [net.mfa.conv.conv.out_channels]
    kernels = [first.kernel_size[0]] + [b.res2net_block.blocks[0].conv.conv.kernel_size[0] for b in mid] + \
        [net.mfa.conv.conv.kernel_size[0]]
    dilations = [first.dilation[0]] + [b.res2net_block.blocks[0].conv.conv.dilation[0] for b in mid] + \
        [net.mfa.conv.conv.dilation[0]]
    groups = [first.groups] + [b.tdnn1.conv.conv.groups for b in mid] + [net.mfa.conv.conv.groups]
    n_mels = first.in_channels if n_mels is None else int(n_mels)
    with_mean = embedding_mean is not None
    emb_norm = (f"mean_var_norm_emb: !new:{_NORM_CLASS}\n    norm_type: global\n    std_norm: False\n"
                if with_mean else "")
    text = f"""# ECAPA-TDNN speaker encoder (speechbrain pretrained-folder layout)
n_mels: {n_mels}
compute_features: !new:{_FBANK_CLASS}
    n_mels: !ref <n_mels>
mean_var_norm: !new:{_NORM_CLASS}
    norm_type: sentence
    std_norm: False
embedding_model: !new:{_ECAPA_CLASS}
    input_size: !ref <n_mels>
    channels: {_ints(channels)}
    kernel_sizes: {_ints(kernels)}
    dilations: {_ints(dilations)}
    groups: {_ints(groups)}
    attention_channels: {net.asp.tdnn.conv.conv.out_channels}
    res2net_scale: {net.blocks[1].res2net_block.scale}
    se_channels: {net.blocks[1].se_block.conv1.conv.out_channels}
    global_context: {net.asp.global_context}
    lin_neurons: {net.fc.conv.out_channels}
{emb_norm}pretrained_path: {folder.resolve()}
modules:
    compute_features: !ref <compute_features>
    mean_var_norm: !ref <mean_var_norm>
    embedding_model: !ref <embedding_model>
pretrainer: !new:speechbrain.utils.parameter_transfer.Pretrainer
    loadables:
        embedding_model: !ref <embedding_model>
"""
    if with_mean:
        text += "        mean_var_norm_emb: !ref <mean_var_norm_emb>\n"
    text += "    paths:\n        embedding_model: !ref <pretrained_path>/embedding_model.ckpt\n"
    if with_mean:
        text += "        mean_var_norm_emb: !ref <pretrained_path>/mean_var_norm_emb.ckpt\n"
        mean = torch.as_tensor(embedding_mean, dtype=torch.float32).reshape(-1)
        torch.save({"count": 1, "glob_mean": mean, "glob_std": torch.ones_like(mean)}, folder / "mean_var_norm_emb.ckpt")
    (folder / "hyperparams.yaml").write_text(text, encoding="utf-8")
    torch.save(net.state_dict(), folder / "embedding_model.ckpt")
    return folder

"""A small GE2E d-vector trained on a corpus: the locally trained speaker-verification model.

:class:`DVectorEncoder` has the architecture of the pretrained encoder
(:class:`~de_antifake.encoder.ResemblyzerEncoder`: the torch mel front end
:class:`~de_antifake.encoder.MelFrontEnd`, an LSTM, a linear layer, ReLU, L2 normalisation, the
utterance embedding being the normalised mean of partial embeddings), small and configurable, with a log
compression of the mel power by default (a model trained from scratch learns far more slowly on raw
power). It inherits ``embed`` (differentiable in the waveform) and ``embed_utterance``, so it plugs in
wherever the pretrained encoder does (``attackvc``, ``embed_batch``, the cloner, the verifier).

:func:`train_dvector` trains it with the generalised end-to-end softmax loss of Wan et al. (2018,
"Generalized End-to-End Loss for Speaker Verification"): batches of ``N`` speakers x ``M`` utterances
(one random partial of ``partial_frames`` frames each), the similarity matrix
``S[j, i, k] = w cos(e_ji, c_k) + b`` with a learnable ``w > 0`` and ``b``, where ``c_k`` is the
centroid of speaker ``k``'s embeddings and, for the utterance's own speaker, the centroid without the
utterance itself; the loss of ``e_ji`` is ``-S[j, i, j] + log sum_k exp S[j, i, k]``, averaged over
the batch.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch
from icml25_shared.random import check_random_state

from de_antifake.audio import _own_torch_rng, as_mono
from de_antifake.encoder import ResemblyzerEncoder

__all__ = ["DVectorConfig", "DVectorEncoder", "DVectorResult", "ge2e_loss", "ge2e_similarity", "train_dvector"]

_MIN_PARTIAL = 77
"""``embed`` draws 1.3 partials per second, 77 frames apart: a partial must be at least that long."""


@dataclass(frozen=True, kw_only=True)
class DVectorConfig:
    """Size and training schedule of a GE2E d-vector.

    Attributes
    ----------
    hidden_size, embedding_size, num_layers : int
        LSTM width and depth, embedding size (the pretrained model: 256, 256, 3).
    partial_frames : int
        Frames of 10 ms per partial utterance (training crops and ``embed``'s partials); >= 77.
    log_mel : bool
        Feed ``log(mel + 1e-6)`` to the LSTM instead of the mel power.
    pooling : {"mean", "last"}
        Partial embedding from the mean of the LSTM outputs over the frames, or (GE2E, resemblyzer)
        from the last frame's state. ``"last"`` forgets the speaker over the exact-zero silences that
        end synthetic utterances, so the default is ``"mean"``.
    n_speakers, n_utterances : int
        ``N`` speakers x ``M`` utterances per batch (``N >= 2``, ``M >= 2``).
    steps : int
        Optimisation steps.
    lr : float
        Adam learning rate of the network.
    wb_lr_scale : float
        Learning-rate factor of ``w`` and ``b`` (the reference implementations slow them down).
    init_w, init_b : float
        Initial similarity scale (``> 0``) and offset (Wan et al.: 10 and -5).
    clip_norm : float
        Gradient-norm clip of the network (Wan et al.: 3).
    """

    hidden_size: int = 64
    embedding_size: int = 64
    num_layers: int = 2
    partial_frames: int = 160
    log_mel: bool = True
    pooling: str = "mean"
    n_speakers: int = 4
    n_utterances: int = 5
    steps: int = 300
    lr: float = 1e-3
    wb_lr_scale: float = 0.01
    init_w: float = 10.0
    init_b: float = -5.0
    clip_norm: float = 3.0

    def __post_init__(self) -> None:
        ints = {"hidden_size": 1, "embedding_size": 1, "num_layers": 1, "partial_frames": _MIN_PARTIAL,
                "n_speakers": 2, "n_utterances": 2, "steps": 0}
        for name, lo in ints.items():
            v = getattr(self, name)
            if isinstance(v, bool) or not isinstance(v, int) or v < lo:
                raise ValueError(f"DVectorConfig.{name} must be an integer >= {lo}, got {v!r}"
                                 + (" (embed draws partials 77 frames apart)" if name == "partial_frames" else ""))
        for name in ("lr", "wb_lr_scale", "init_w", "clip_norm"):
            v = getattr(self, name)
            if isinstance(v, bool) or not isinstance(v, (int, float)) or not np.isfinite(v) or v <= 0:
                raise ValueError(f"DVectorConfig.{name} must be a finite number > 0, got {v!r}")
        if isinstance(self.init_b, bool) or not isinstance(self.init_b, (int, float)) or not np.isfinite(self.init_b):
            raise ValueError(f"DVectorConfig.init_b must be a finite number, got {self.init_b!r}")
        if self.pooling not in ("mean", "last"):
            raise ValueError(f"DVectorConfig.pooling must be 'mean' or 'last', got {self.pooling!r}")
        if not isinstance(self.log_mel, bool):
            raise ValueError(f"DVectorConfig.log_mel must be a bool, got {self.log_mel!r}")


class DVectorEncoder(ResemblyzerEncoder):
    """A GE2E d-vector of the pretrained encoder's family, sized by a :class:`DVectorConfig`.

    Build one with :func:`train_dvector` or :meth:`load`; a freshly constructed module has random weights.

    Parameters
    ----------
    config : DVectorConfig
        The architecture (its training fields are kept for the record).

    Examples
    --------
    >>> import torch
    >>> enc = DVectorEncoder(DVectorConfig(hidden_size=8, embedding_size=4, num_layers=1, partial_frames=80))
    >>> e = enc.embed(torch.randn(2, 16000))
    >>> tuple(e.shape)
    (2, 4)
    """

    def __init__(self, config: DVectorConfig | None = None) -> None:
        config = DVectorConfig() if config is None else config
        if not isinstance(config, DVectorConfig):
            raise TypeError(f"config must be a DVectorConfig, got {type(config).__name__}")
        # trained on the samples as given (its features are standardised with the training frames' statistics)
        super().__init__(hidden_size=config.hidden_size, embedding_size=config.embedding_size,
                         num_layers=config.num_layers, partial_frames=config.partial_frames, level_dbfs=None,
                         trim_silence=False)
        self.config = config
        self.feature_mean: torch.Tensor
        self.feature_std: torch.Tensor
        n_mels = int(self.front.filters.shape[0])
        self.register_buffer("feature_mean", torch.zeros(n_mels))
        self.register_buffer("feature_std", torch.ones(n_mels))

    def features(self, mels: torch.Tensor) -> torch.Tensor:
        """The LSTM input: ``log(mel + 1e-6)`` (or the power) standardised per mel channel.

        The channel mean and standard deviation (buffers ``feature_mean``, ``feature_std``) are those of
        the training frames.
        """
        x = torch.log(mels + 1e-6) if self.config.log_mel else mels
        return (x - self.feature_mean.to(x.dtype)) / self.feature_std.to(x.dtype)

    def forward(self, mels: torch.Tensor) -> torch.Tensor:
        """Embeddings of partial mel power spectrograms ``(batch, frames, 40)`` -> ``(batch, d)``, unit norm."""
        out, (hidden, _) = self.lstm(self.features(mels))
        z = out.mean(dim=1) if self.config.pooling == "mean" else hidden[-1]
        raw = self.relu(self.linear(z))
        return raw / (raw.pow(2).sum(dim=1, keepdim=True) + 1e-24).sqrt()

    def save(self, path: str | Path) -> Path:
        """Write the config and weights to one file (``torch.save`` of plain tensors and numbers)."""
        path = Path(path)
        torch.save({"config": dataclasses.asdict(self.config), "state_dict": self.state_dict()}, path)
        return path

    @classmethod
    @_own_torch_rng
    def load(cls, path: str | Path) -> DVectorEncoder:
        """Read a file written by :meth:`save`; the model is in eval mode with frozen parameters.

        Raises
        ------
        FileNotFoundError
            Naming the path.
        ValueError
            When the file is not a saved d-vector, or its weights do not match its config.
        """
        path = Path(path)
        if not path.is_file():
            raise FileNotFoundError(f"d-vector file not found: {path}")
        blob = torch.load(path, map_location="cpu", weights_only=True)
        if not isinstance(blob, dict) or set(blob) != {"config", "state_dict"}:
            raise ValueError(f"{path} is not a d-vector saved by DVectorEncoder.save")
        try:
            config = DVectorConfig(**blob["config"])
        except TypeError as err:
            raise ValueError(f"{path} holds a d-vector config this version cannot read: {err}") from err
        model = cls(config)
        try:
            model.load_state_dict(blob["state_dict"], strict=True)
        except RuntimeError as err:
            raise ValueError(f"{path}: the weights do not match the saved config: {str(err)[:300]}") from err
        return _freeze(model)


def _freeze(model: torch.nn.Module):
    model.eval()
    for p in model.parameters():
        p.requires_grad_(False)
    return model


def ge2e_similarity(embeddings: torch.Tensor, w: torch.Tensor | float, b: torch.Tensor | float) -> torch.Tensor:
    """The GE2E similarity matrix ``S`` of a batch of ``N`` speakers x ``M`` utterances.

    Parameters
    ----------
    embeddings : torch.Tensor
        Shape ``(N, M, d)``; row ``j`` holds speaker ``j``'s utterances (normalised here).
    w, b : tensor or float
        Scale (``> 0``) and offset.

    Returns
    -------
    torch.Tensor
        Shape ``(N, M, N)``: ``S[j, i, k] = w cos(e_ji, c_k) + b``, with ``c_j`` of the own speaker
        computed without ``e_ji``.
    """
    if embeddings.dim() != 3 or embeddings.shape[0] < 2 or embeddings.shape[1] < 2:
        raise ValueError(f"embeddings must be (N >= 2, M >= 2, d), got {tuple(embeddings.shape)}")
    n, m, _ = embeddings.shape
    e = embeddings / embeddings.norm(dim=2, keepdim=True).clamp_min(1e-12)
    total = e.sum(dim=1)  # (N, d)
    centroids = total / m
    excl = (total[:, None, :] - e) / (m - 1)  # (N, M, d): own centroid without e_ji
    cos_all = torch.einsum("jid,kd->jik", e, centroids / centroids.norm(dim=1, keepdim=True).clamp_min(1e-12))
    cos_own = (e * excl).sum(dim=2) / excl.norm(dim=2).clamp_min(1e-12)
    own = torch.eye(n, dtype=torch.bool, device=e.device)[:, None, :].expand(n, m, n)
    cos = torch.where(own, cos_own[:, :, None].expand(n, m, n), cos_all)
    return w * cos + b


def ge2e_loss(embeddings: torch.Tensor, w: torch.Tensor | float, b: torch.Tensor | float) -> torch.Tensor:
    """GE2E softmax loss, the mean over the batch of ``-S[j, i, j] + log sum_k exp S[j, i, k]``.

    Parameters
    ----------
    embeddings : torch.Tensor
        Shape ``(N, M, d)``.
    w, b : tensor or float
        See :func:`ge2e_similarity`.

    Returns
    -------
    torch.Tensor
        A scalar.

    Examples
    --------
    >>> import torch
    >>> e = torch.tensor([[[1.0, 0.0], [1.0, 0.1]], [[0.0, 1.0], [0.1, 1.0]]])
    >>> round(float(ge2e_loss(e, 10.0, -5.0)), 4)
    0.0001
    """
    s = ge2e_similarity(embeddings, w, b)
    n, m, _ = s.shape
    target = torch.arange(n, device=s.device)[:, None].expand(n, m)
    return torch.nn.functional.cross_entropy(s.reshape(n * m, n), target.reshape(-1))


@dataclass
class DVectorResult:
    """A trained d-vector and its training record.

    Attributes
    ----------
    encoder : DVectorEncoder
        In eval mode, parameters frozen; gradients still reach the input waveform.
    losses : numpy.ndarray
        GE2E loss of every step, shape ``(steps,)``.
    w, b : float
        Final similarity scale and offset.
    speakers : numpy.ndarray
        The speaker labels trained on (those with at least ``n_utterances`` utterances).
    config : DVectorConfig
        The configuration used.
    """

    encoder: DVectorEncoder
    losses: np.ndarray
    w: float
    b: float
    speakers: np.ndarray
    config: DVectorConfig


@_own_torch_rng
def train_dvector(waveforms, labels, *, sr: int, config: DVectorConfig | None = None,
                  random_state: int | np.random.Generator | None = 0) -> DVectorResult:
    """Train a :class:`DVectorEncoder` with the GE2E softmax loss.

    Parameters
    ----------
    waveforms : sequence of array_like
        Utterances (any lengths of at least ``partial_frames`` frames; stereo is averaged).
    labels : array_like of int
        Speaker of each utterance.
    sr : int
        Sampling rate; must be 16000.
    config : DVectorConfig, optional
        Sizes and schedule (defaults: 2 x 64 LSTM, 160-frame partials, 4 x 5 batches, 300 steps).
    random_state : int, numpy Generator or None, default 0
        Seeds the initial weights and the batches; the caller's global torch RNG is left unchanged.

    Returns
    -------
    DVectorResult

    Raises
    ------
    ValueError
        When the labels do not match the waveforms, an utterance is shorter than one partial, or fewer
        than ``n_speakers`` speakers have ``n_utterances`` utterances each.

    Examples
    --------
    >>> from de_antifake.corpus import make_corpus
    >>> c = make_corpus(n_speakers=2, n_utterances=2, seconds=1.0, words_per_utterance=1)
    >>> cfg = DVectorConfig(hidden_size=8, embedding_size=8, num_layers=1, partial_frames=80, n_speakers=2,
    ...                     n_utterances=2, steps=3)
    >>> res = train_dvector([u.wav for u in c.utterances], c.labels, sr=16000, config=cfg, random_state=0)
    >>> res.losses.shape, res.encoder.embed_utterance(c.utterances[0].wav, 16000).shape
    ((3,), (8,))
    """
    cfg = DVectorConfig() if config is None else config
    if not isinstance(cfg, DVectorConfig):
        raise TypeError(f"config must be a DVectorConfig, got {type(cfg).__name__}")
    wavs = [as_mono(w, sr, name=f"waveforms[{i}]") for i, w in enumerate(waveforms)]
    lab = np.asarray(labels)
    if lab.shape != (len(wavs),) or lab.dtype.kind not in "iu":
        raise ValueError(f"labels must be {len(wavs)} integers (one per waveform), got shape {lab.shape}, "
                         f"dtype {lab.dtype}")
    rng = check_random_state(random_state)
    torch.manual_seed(int(rng.integers(2**62)))
    model = DVectorEncoder(cfg)
    hop, p = model.front.hop, cfg.partial_frames
    with torch.no_grad():
        mels = []
        for i, w in enumerate(wavs):
            if len(w) // hop + 1 < p:
                raise ValueError(f"waveforms[{i}] has {len(w)} samples, shorter than one partial of {p} frames "
                                 f"({(p - 1) * hop} samples)")
            mels.append(model.front(torch.from_numpy(w)))
        frames = torch.cat(mels)
        frames = torch.log(frames + 1e-6) if cfg.log_mel else frames
        model.feature_mean.copy_(frames.mean(dim=0))
        model.feature_std.copy_(frames.std(dim=0).clamp_min(1e-6))
    speakers, counts = np.unique(lab, return_counts=True)
    eligible = speakers[counts >= cfg.n_utterances]
    if len(eligible) < cfg.n_speakers:
        raise ValueError(f"{len(eligible)} speakers have >= {cfg.n_utterances} utterances; a batch needs "
                         f"n_speakers={cfg.n_speakers} of them")
    members = {int(s): np.flatnonzero(lab == s) for s in eligible}
    scale = torch.nn.Parameter(torch.tensor(float(cfg.init_w)))
    bias = torch.nn.Parameter(torch.tensor(float(cfg.init_b)))
    opt = torch.optim.Adam([{"params": list(model.parameters()), "lr": cfg.lr},
                            {"params": [scale, bias], "lr": cfg.lr * cfg.wb_lr_scale}])
    model.train()
    losses = np.empty(cfg.steps)
    for step in range(cfg.steps):
        batch = []
        for s in rng.choice(eligible, size=cfg.n_speakers, replace=False):
            for i in rng.choice(members[int(s)], size=cfg.n_utterances, replace=False):
                start = int(rng.integers(0, mels[i].shape[0] - p + 1))
                batch.append(mels[i][start:start + p])
        emb = model(torch.stack(batch)).reshape(cfg.n_speakers, cfg.n_utterances, -1)
        loss = ge2e_loss(emb, scale, bias)
        opt.zero_grad()
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), cfg.clip_norm)
        opt.step()
        with torch.no_grad():
            scale.clamp_(min=1e-6)
        losses[step] = float(loss.detach())
    return DVectorResult(encoder=_freeze(model), losses=losses, w=float(scale.detach()), b=float(bias.detach()),
                         speakers=np.asarray(eligible), config=cfg)

"""Mappers from a source model's activations at one layer to a target model's: affine and autoencoder.

Both follow scikit-learn's conventions: hyperparameters in ``__init__``, ``fit(source, target)`` returns
``self``, fitted attributes end in ``_``. ``transform`` is a differentiable torch map usable inside hooks.
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, cast

import numpy as np
import torch
from icml25_shared.random import RandomStateLike, spawn
from icml25_shared.validation import Interval, Options, check_param
from sklearn.exceptions import NotFittedError
from torch import nn

from safety_transfer.activations import ActivationPairs, ActivationShards

__all__ = ["AffineMapper", "AutoEncoderMapper", "MappingMetrics", "load_mapper", "mapping_metrics"]


@dataclass(frozen=True)
class MappingMetrics:
    """How well mapped source activations match the target's.

    Attributes
    ----------
    fvu : float
        Fraction of variance unexplained: ``sum ||y - m||^2 / sum ||y - mean(y)||^2`` over rows.
    cosine : float
        Mean over rows of the cosine similarity between ``m`` and ``y``.
    mse : float
        Mean squared error per coordinate.
    n : int
        Rows compared.
    """

    fvu: float
    cosine: float
    mse: float
    n: int


def _as_2d(x: Any, name: str) -> torch.Tensor:
    t = torch.as_tensor(np.asarray(x) if not isinstance(x, torch.Tensor) else x)
    if not t.is_floating_point():
        raise ValueError(f"{name} must hold floating-point activations, got dtype {t.dtype}")
    if t.ndim != 2:
        raise ValueError(f"{name} must be 2-D (rows, width), got shape {tuple(t.shape)}")
    if t.shape[0] == 0:
        raise ValueError(f"{name} has no rows")
    if not torch.isfinite(t).all():
        raise ValueError(f"{name} contains NaN or infinity")
    return t.detach()


def _pair_source(source: Any, target: Any) -> tuple[Any, Any]:
    """(source, target) tensors, or an ActivationShards of pairs with target None."""
    if isinstance(source, ActivationPairs):
        return source.source, source.target
    if isinstance(source, ActivationShards):
        if "source" not in source.keys:
            raise ValueError("these shards hold one model's activations; mapper training needs collect_pairs shards")
        return source, None
    if target is None:
        raise ValueError("fit needs target activations (or ActivationPairs / pair shards as the first argument)")
    return source, target


def _pair_layers(source: Any) -> tuple[int | None, int | None]:
    """The (source, target) layers pairs were collected at, or (None, None) for bare arrays."""
    if isinstance(source, ActivationPairs):
        return int(source.source_layer), int(source.target_layer)
    if isinstance(source, ActivationShards) and source.metadata.get("source_layer", "") != "":
        return int(source.metadata["source_layer"]), int(source.metadata["target_layer"])
    return None, None


def mapping_metrics(mapper: Any, source: Any, target: Any = None) -> MappingMetrics:
    """FVU, cosine similarity and MSE of ``mapper(source)`` against ``target``.

    Parameters
    ----------
    mapper : AffineMapper, AutoEncoderMapper or callable
        Maps ``(n, d_s)`` to ``(n, d_t)``.
    source : array-like (n, d_s), ActivationPairs or pair ActivationShards
        Source activations (or the pairs).
    target : array-like (n, d_t), optional
        Target activations when ``source`` is an array.

    Returns
    -------
    MappingMetrics
        Computed in float64 over all rows (streamed over shards).
    """
    src, tgt = _pair_source(source, target)
    chunks: Iterator[tuple[torch.Tensor, torch.Tensor]]
    if isinstance(src, ActivationShards):
        chunks = ((s["source"], s["target"]) for s in src)
    else:
        chunks = iter([(_as_2d(src, "source"), _as_2d(tgt, "target"))])
    sse = sum_y2 = cos = 0.0
    n, d = 0, 0
    parts_y: list[torch.Tensor] = []
    with torch.no_grad():
        for x, y in chunks:
            m = torch.as_tensor(mapper.transform(x) if hasattr(mapper, "transform") else mapper(x)).double()
            y = y.double()
            if m.shape != y.shape:
                raise ValueError(f"the mapped activations have shape {tuple(m.shape)}, the target {tuple(y.shape)}")
            sse += float(((y - m) ** 2).sum())
            cos += float(torch.nn.functional.cosine_similarity(m, y, dim=1, eps=1e-12).sum())
            n += y.shape[0]
            d = y.shape[1]
            parts_y.append(y.sum(0))
            sum_y2 += float((y**2).sum())
    sum_y = torch.stack(parts_y).sum(0)
    total = sum_y2 - float((sum_y**2).sum()) / n  # sum ||y - mean(y)||^2
    return MappingMetrics(fvu=sse / total if total > 0 else math.inf, cosine=cos / n, mse=sse / (n * d), n=n)


class _Mapper:
    module_: nn.Module
    n_features_in_: int
    n_features_out_: int
    source_layer_: int | None
    target_layer_: int | None
    metadata_: dict[str, str]

    def _check_fitted(self) -> None:
        if not hasattr(self, "module_"):
            raise NotFittedError(f"this {type(self).__name__} is not fitted yet: call fit(source, target) first")

    def transform(self, x: torch.Tensor) -> torch.Tensor:
        """Map source activations to the target's space.

        Parameters
        ----------
        x : torch.Tensor, shape (..., d_s)
            Source activations (any leading dimensions, any floating dtype).

        Returns
        -------
        torch.Tensor, shape (..., d_t)
            In the dtype and on the device of ``x`` (the mapper may live elsewhere); differentiable.
        """
        self._check_fitted()
        x = torch.as_tensor(x)
        if x.shape[-1] != self.n_features_in_:
            raise ValueError(f"{type(self).__name__} maps width {self.n_features_in_} to {self.n_features_out_}, "
                             f"got activations of width {x.shape[-1]}")
        p = next(self.module_.parameters())
        return self.module_(x.to(device=p.device, dtype=p.dtype)).to(
            device=x.device, dtype=x.dtype if x.is_floating_point() else p.dtype)

    __call__ = transform

    def score(self, source: Any, target: Any = None) -> float:
        """``1 - FVU`` of the mapping on ``(source, target)`` (see :func:`mapping_metrics`)."""
        self._check_fitted()
        return 1.0 - mapping_metrics(self, source, target).fvu

    def save(self, path: str | Path, *, source_model: str = "", target_model: str = "",
             source_layer: int | None = None, target_layer: int | None = None) -> Path:
        """Write the fitted mapper to a safetensors file with its dimensions and provenance as metadata.

        Parameters
        ----------
        path : str or Path
            Output file.
        source_model, target_model : str, default ""
            Model names recorded in the metadata.
        source_layer, target_layer : int, optional
            Layers recorded in the metadata (default: those of the pairs the mapper was fitted on, which
            a different value contradicts with a ValueError).

        Returns
        -------
        Path
            The written file.
        """
        from safetensors.torch import save_file

        self._check_fitted()
        fitted = (getattr(self, "source_layer_", None), getattr(self, "target_layer_", None))
        given = (source_layer, target_layer)
        for name, g, f in zip(("source", "target"), given, fitted, strict=True):
            if g is not None and f is not None and int(g) != f:
                raise ValueError(f"the mapper was fitted on {name} layer {f} but {name}_layer={g} was given")
        source_layer, target_layer = (f if g is None else g for g, f in zip(given, fitted, strict=True))
        meta = {"class": type(self).__name__, "d_s": str(self.n_features_in_), "d_t": str(self.n_features_out_),
                "hidden": str(getattr(self, "hidden_", 0)), "source_model": source_model,
                "target_model": target_model, "source_layer": "" if source_layer is None else str(source_layer),
                "target_layer": "" if target_layer is None else str(target_layer)}
        state = {k: v.detach().contiguous() for k, v in self.module_.state_dict().items()}
        save_file(state, str(path), metadata=meta)
        return Path(path)


def _check_int(value: Any, name: str, low: int, owner: str | None = None) -> int:
    check_param(name, value, [Interval(int, low, None)], owner=owner)
    return int(value)


def _check_pos(value: Any, name: str, allow_zero: bool = False, owner: str | None = None) -> float:
    check_param(name, value, [Interval(float, 0, None, closed="left" if allow_zero else "neither"),
                              Interval(int, 0 if allow_zero else 1, None)], owner=owner)
    if not math.isfinite(float(value)):
        raise ValueError(f"{owner + ': ' if owner else ''}{name} must be a finite "
                         f"{'non-negative' if allow_zero else 'positive'} number; got {value!r}")
    return float(value)


def _batches(src: Any, tgt: Any, batch_size: int, rng: np.random.Generator) -> Iterator[tuple[torch.Tensor, ...]]:
    """Shuffled minibatches; over shards, one shard in memory at a time (shards in random order)."""
    if isinstance(src, ActivationShards):
        for i in rng.permutation(len(src.paths)):
            from safetensors.torch import load_file

            shard = load_file(str(src.paths[i]))
            yield from _batches(shard["source"], shard["target"], batch_size, rng)
        return
    order = torch.from_numpy(rng.permutation(src.shape[0]))
    for start in range(0, src.shape[0], batch_size):
        idx = order[start:start + batch_size]
        yield src[idx], tgt[idx]


def _widths(src: Any, tgt: Any) -> tuple[int, int]:
    if isinstance(src, ActivationShards):
        return int(src.metadata["source_dim"]), int(src.metadata["target_dim"])
    return src.shape[1], tgt.shape[1]


def _train(module: nn.Module, src: Any, tgt: Any, *, epochs: int, lr: float, batch_size: int, weight_decay: float,
           rng: np.random.Generator, patience: int) -> list[float]:
    """Adam on MSE with ReduceLROnPlateau on the epoch's mean loss; returns the per-epoch losses."""
    opt = torch.optim.Adam(module.parameters(), lr=lr, weight_decay=weight_decay)
    sched = torch.optim.lr_scheduler.ReduceLROnPlateau(opt, factor=0.5, patience=patience)
    curve = []
    module.train()
    for _ in range(epochs):
        total, count = 0.0, 0
        for x, y in _batches(src, tgt, batch_size, rng):
            x, y = x.float(), y.float()
            loss = torch.nn.functional.mse_loss(module(x), y)
            opt.zero_grad()
            loss.backward()
            opt.step()
            total += float(loss.detach()) * x.shape[0]
            count += x.shape[0]
        curve.append(total / count)
        sched.step(curve[-1])
    module.eval()
    return curve


def _seeded(seed_rng: np.random.Generator, build: Any) -> Any:
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(int(seed_rng.integers(2**31 - 1)))
        return build()


class AffineMapper(_Mapper):
    """Affine map ``y = W x + b`` from source to target activations.

    Parameters
    ----------
    solver : {"lstsq", "ridge", "adam"}, default "lstsq"
        Closed-form least squares, closed-form ridge (intercept not penalised), or Adam on the MSE.
        Over pair shards the closed forms accumulate the normal equations shard by shard.
    ridge : float, default 0.0
        Ridge penalty (``solver="ridge"``).
    epochs, lr, batch_size, weight_decay, patience :
        Adam settings (``solver="adam"``): passes over the data, learning rate, rows per step, Adam's
        weight decay, ReduceLROnPlateau's patience in epochs.
    random_state : None, int or numpy Generator, default None
        Initial weights and shuffling for ``solver="adam"``.

    Attributes
    ----------
    weight_ : torch.Tensor, shape (d_t, d_s)
    bias_ : torch.Tensor, shape (d_t,)
    n_features_in_, n_features_out_ : int
    source_layer_, target_layer_ : int or None
        Layers of the ``ActivationPairs`` (or pair shards) it was fitted on, None for bare arrays;
        ``mapped_replacement``, ``refine_with_lm_loss`` and ``SafetySwitch`` refuse other layers.
    loss_curve_ : list of float
        Per-epoch training MSE (empty for the closed forms).

    Examples
    --------
    >>> import torch
    >>> x = torch.randn(50, 3, dtype=torch.float64)
    >>> m = AffineMapper().fit(x, 2 * x[:, :2] + 1)
    >>> torch.allclose(m.bias_, torch.ones(2, dtype=torch.float64))
    True
    """

    def __init__(self, *, solver: str = "lstsq", ridge: float = 0.0, epochs: int = 30, lr: float = 1e-3,
                 batch_size: int = 256, weight_decay: float = 0.0, patience: int = 2,
                 random_state: RandomStateLike = None) -> None:
        self.solver = solver
        self.ridge = ridge
        self.epochs = epochs
        self.lr = lr
        self.batch_size = batch_size
        self.weight_decay = weight_decay
        self.patience = patience
        self.random_state = random_state

    def fit(self, source: Any, target: Any = None) -> AffineMapper:
        """Fit the map on paired activations.

        Parameters
        ----------
        source : array-like (n, d_s), ActivationPairs or pair ActivationShards
            Source activations, or the pairs.
        target : array-like (n, d_t), optional
            Target activations when ``source`` is an array.

        Returns
        -------
        AffineMapper
            ``self``.
        """
        if self.solver not in ("lstsq", "ridge", "adam"):
            check_param("solver", self.solver, [Options(str, {"lstsq", "ridge", "adam"})], owner="AffineMapper")
        ridge = _check_pos(self.ridge, "ridge", allow_zero=True, owner=type(self).__name__)
        src, tgt = _pair_source(source, target)
        if not isinstance(src, ActivationShards):
            src, tgt = _as_2d(src, "source"), _as_2d(tgt, "target")
            if src.shape[0] != tgt.shape[0]:
                raise ValueError(f"source has {src.shape[0]} rows but target has {tgt.shape[0]}")
        d_s, d_t = _widths(src, tgt)
        self.loss_curve_: list[float] = []
        if self.solver == "adam":
            init, shuffle = spawn(self.random_state, 2)
            module = _seeded(init, lambda: nn.Linear(d_s, d_t))
            self.loss_curve_ = _train(module, src, tgt, epochs=_check_int(self.epochs, "epochs", 0, type(self).__name__),
                                      lr=_check_pos(self.lr, "lr", owner=type(self).__name__), batch_size=_check_int(self.batch_size,
                                                                                         "batch_size", 1),
                                      weight_decay=_check_pos(self.weight_decay, "weight_decay", allow_zero=True, owner=type(self).__name__),
                                      rng=shuffle, patience=_check_int(self.patience, "patience", 0, type(self).__name__))
            w, b = module.weight.detach(), module.bias.detach()
        else:
            w, b = self._closed_form(src, tgt, ridge if self.solver == "ridge" else 0.0, d_s)
        # skip_init: the weights are copied in next, so nn.Linear's random initialisation (the caller's
        # global RNG) is never drawn
        linear: nn.Linear = torch.nn.utils.skip_init(nn.Linear, d_s, d_t, dtype=w.dtype)
        with torch.no_grad():
            linear.weight.copy_(w)
            linear.bias.copy_(b)
        self.module_ = linear.requires_grad_(False)
        self.weight_, self.bias_ = linear.weight, linear.bias
        self.n_features_in_, self.n_features_out_ = d_s, d_t
        self.source_layer_, self.target_layer_ = _pair_layers(source)
        return self

    @staticmethod
    def _closed_form(src: Any, tgt: Any, ridge: float, d_s: int) -> tuple[torch.Tensor, torch.Tensor]:
        if not isinstance(src, ActivationShards) and ridge == 0.0:
            x1 = torch.cat([src.double(), torch.ones(src.shape[0], 1, dtype=torch.float64)], dim=1)
            sol = torch.linalg.lstsq(x1, tgt.double(), driver="gelsd").solution  # (d_s + 1, d_t)
            return sol[:d_s].T.contiguous(), sol[d_s].clone()
        # normal equations of the centred problem, accumulated shard by shard
        chunks = ((s["source"], s["target"]) for s in src) if isinstance(src, ActivationShards) else [(src, tgt)]
        n = 0
        sx: Any = 0.0
        sy: Any = 0.0
        sxx: Any = 0.0
        sxy: Any = 0.0
        for x, y in chunks:
            x, y = x.double(), y.double()
            n += x.shape[0]
            sx, sy = sx + x.sum(0), sy + y.sum(0)
            sxx, sxy = sxx + x.T @ x, sxy + x.T @ y
        mx, my = sx / n, sy / n
        cxx = sxx - n * torch.outer(mx, mx) + ridge * torch.eye(d_s, dtype=torch.float64)
        cxy = sxy - n * torch.outer(mx, my)
        w = torch.linalg.lstsq(cxx, cxy, driver="gelsd").solution.T.contiguous()
        return w, my - w @ mx


class AutoEncoderMapper(_Mapper):
    """Linear-ReLU-Linear map from source to target activations, trained with Adam on the MSE.

    Parameters
    ----------
    d_s, d_t : int
        Source and target widths.
    hidden : int, optional
        Hidden width; default ``int(sqrt(d_s * d_t))``.
    init_identity : bool, default False
        Start from the identity on the first ``min(d_s, d_t)`` coordinates: with ``hidden >= 2 min(d_s,
        d_t)`` through ``relu(x) - relu(-x)`` (exact), otherwise through ``relu(x + c) - c`` with
        ``c = identity_shift`` (exact while ``x > -c``).
    identity_shift : float, default 100.0
        The shift ``c`` of the second construction.
    epochs : int, default 30
        Passes over the pairs (0 keeps the initial weights).
    lr : float, default 1e-3
        Adam learning rate.
    batch_size : int, default 256
        Rows per step.
    weight_decay : float, default 0.0
        Adam weight decay.
    patience : int, default 2
        Epochs without improvement before ReduceLROnPlateau halves the learning rate.
    random_state : None, int or numpy Generator, default None
        Initial weights and shuffling.

    Attributes
    ----------
    module_ : torch.nn.Sequential
        ``Linear(d_s, hidden) -> ReLU -> Linear(hidden, d_t)``.
    hidden_ : int
    n_features_in_, n_features_out_ : int
    source_layer_, target_layer_ : int or None
        Layers of the ``ActivationPairs`` (or pair shards) it was fitted on, None for bare arrays;
        ``mapped_replacement``, ``refine_with_lm_loss`` and ``SafetySwitch`` refuse other layers.
    loss_curve_ : list of float
        Per-epoch training MSE.
    """

    def __init__(self, d_s: int, d_t: int, *, hidden: int | None = None, init_identity: bool = False,
                 identity_shift: float = 100.0, epochs: int = 30, lr: float = 1e-3, batch_size: int = 256,
                 weight_decay: float = 0.0, patience: int = 2, random_state: RandomStateLike = None) -> None:
        self.d_s = d_s
        self.d_t = d_t
        self.hidden = hidden
        self.init_identity = init_identity
        self.identity_shift = identity_shift
        self.epochs = epochs
        self.lr = lr
        self.batch_size = batch_size
        self.weight_decay = weight_decay
        self.patience = patience
        self.random_state = random_state

    @property
    def hidden_size(self) -> int:
        """The hidden width this configuration builds: ``hidden`` or ``int(sqrt(d_s * d_t))``."""
        d_s, d_t = _check_int(self.d_s, "d_s", 1, type(self).__name__), _check_int(self.d_t, "d_t", 1, type(self).__name__)
        return int(math.sqrt(d_s * d_t)) if self.hidden is None else _check_int(self.hidden, "hidden", 1, type(self).__name__)

    def _build(self) -> nn.Sequential:
        d_s, d_t, h = self.d_s, self.d_t, self.hidden_size
        enc, dec = nn.Linear(d_s, h), nn.Linear(h, d_t)
        module = nn.Sequential(enc, nn.ReLU(), dec)
        if self.init_identity:
            m = min(d_s, d_t)
            c = _check_pos(self.identity_shift, "identity_shift", owner=type(self).__name__)
            with torch.no_grad():
                for p in (enc.weight, enc.bias, dec.weight, dec.bias):
                    p.zero_()
                eye = torch.eye(m)
                if h >= 2 * m:
                    enc.weight[:m, :m], enc.weight[m:2 * m, :m] = eye, -eye
                    dec.weight[:m, :m], dec.weight[:m, m:2 * m] = eye, -eye
                elif h >= m:
                    enc.weight[:m, :m], enc.bias[:m] = eye, c
                    dec.weight[:m, :m], dec.bias[:m] = eye, -c
                else:
                    raise ValueError(f"init_identity needs hidden >= min(d_s, d_t) = {m}, got hidden {h}")
        return module

    def fit(self, source: Any, target: Any = None) -> AutoEncoderMapper:
        """Train the autoencoder on paired activations.

        Parameters
        ----------
        source : array-like (n, d_s), ActivationPairs or pair ActivationShards
            Source activations, or the pairs (shards are streamed one at a time).
        target : array-like (n, d_t), optional
            Target activations when ``source`` is an array.

        Returns
        -------
        AutoEncoderMapper
            ``self``.

        Raises
        ------
        ValueError
            When the activations' widths differ from ``d_s`` / ``d_t`` or a setting is invalid.
        """
        src, tgt = _pair_source(source, target)
        if not isinstance(src, ActivationShards):
            src, tgt = _as_2d(src, "source"), _as_2d(tgt, "target")
            if src.shape[0] != tgt.shape[0]:
                raise ValueError(f"source has {src.shape[0]} rows but target has {tgt.shape[0]}")
        got = _widths(src, tgt)
        if got != (self.d_s, self.d_t):
            raise ValueError(f"the mapper was built for widths d_s={self.d_s}, d_t={self.d_t} but the activations "
                             f"have d_s={got[0]}, d_t={got[1]}")
        init, shuffle = spawn(self.random_state, 2)
        module = _seeded(init, self._build)
        self.loss_curve_ = _train(module, src, tgt, epochs=_check_int(self.epochs, "epochs", 0, type(self).__name__),
                                  lr=_check_pos(self.lr, "lr", owner=type(self).__name__), batch_size=_check_int(self.batch_size, "batch_size", 1, type(self).__name__),
                                  weight_decay=_check_pos(self.weight_decay, "weight_decay", allow_zero=True, owner=type(self).__name__),
                                  rng=shuffle, patience=_check_int(self.patience, "patience", 0, type(self).__name__))
        module.requires_grad_(False)
        self.module_ = module
        self.hidden_ = self.hidden_size
        self.n_features_in_, self.n_features_out_ = self.d_s, self.d_t
        self.source_layer_, self.target_layer_ = _pair_layers(source)
        return self


def load_mapper(path: str | Path) -> AffineMapper | AutoEncoderMapper:
    """Read a mapper written by ``save``; its metadata is in ``metadata_``.

    Parameters
    ----------
    path : str or Path
        A safetensors file from :meth:`AffineMapper.save` or :meth:`AutoEncoderMapper.save`.

    Returns
    -------
    AffineMapper or AutoEncoderMapper
        Fitted, with ``metadata_`` (dict of str) holding the model names, layers and widths.
    """
    from safetensors import safe_open
    from safetensors.torch import load_file

    with safe_open(str(path), framework="pt") as f:
        meta = dict(f.metadata() or {})
    state = load_file(str(path))
    d_s, d_t = int(meta["d_s"]), int(meta["d_t"])
    mapper: AffineMapper | AutoEncoderMapper
    if meta.get("class") == "AffineMapper":
        mapper = AffineMapper()
        mapper.module_ = torch.nn.utils.skip_init(nn.Linear, d_s, d_t, dtype=state["weight"].dtype)
        mapper.loss_curve_ = []
    elif meta.get("class") == "AutoEncoderMapper":
        mapper = AutoEncoderMapper(d_s, d_t, hidden=int(meta["hidden"]))
        with torch.random.fork_rng(devices=[]):  # the stored weights replace the initial ones
            mapper.module_ = mapper._build()
        mapper.hidden_ = int(meta["hidden"])
        mapper.loss_curve_ = []
    else:
        raise ValueError(f"{path} is not a safety-transfer mapper file (metadata class {meta.get('class')!r})")
    mapper.module_.load_state_dict(state)
    mapper.module_.requires_grad_(False).eval()
    if isinstance(mapper, AffineMapper):
        linear = cast(nn.Linear, mapper.module_)
        mapper.weight_, mapper.bias_ = linear.weight, linear.bias
    mapper.n_features_in_, mapper.n_features_out_ = d_s, d_t
    mapper.source_layer_, mapper.target_layer_ = (int(meta[k]) if meta.get(k, "") != "" else None
                                                  for k in ("source_layer", "target_layer"))
    mapper.metadata_ = meta
    return mapper

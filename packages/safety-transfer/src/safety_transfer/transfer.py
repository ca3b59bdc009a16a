"""Carry a source model's steering vector to a target model through a mapper, with its controls.

Two variants:

- ``mapped_vector``: ``v_t = mean_x [M(h_s(x) + alpha v_s) - M(h_s(x))]`` over source activations, then added
  to the target like any steering vector;
- ``mapped_replacement``: while active, the target's layer output is replaced by ``M(h_s + alpha v_s)``,
  with ``h_s`` the source's activations on the same token ids (the source runs inside the target's forward).

Controls: :func:`random_like` (a random direction of equal norm) and :func:`pad_or_truncate` (the source
vector zero-padded or cut to the target's width).
"""

from __future__ import annotations

import warnings
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import torch
from icml25_shared.random import RandomStateLike, check_random_state
from torch import nn

from safety_transfer.hooks import (
    StopForward,
    _boolean,
    _check_alpha,
    _check_vector,
    _eval_mode,
    check_layer,
    hidden_size,
    read_layer,
    replace_layer,
)

__all__ = ["check_mapper", "mapped_replacement", "mapped_vector", "pad_or_truncate", "random_like",
           "refine_with_lm_loss"]


def check_mapper(mapper: Any, source: nn.Module | int, target: nn.Module | int) -> None:
    """Raise when the mapper's widths do not match the source and target hidden sizes.

    Parameters
    ----------
    mapper : AffineMapper or AutoEncoderMapper
        Fitted mapper.
    source, target : model or int
        The models (or their widths).

    Raises
    ------
    ValueError
        Naming both pairs of widths.
    """
    d_s = source if isinstance(source, int) else hidden_size(source)
    d_t = target if isinstance(target, int) else hidden_size(target)
    got = (getattr(mapper, "n_features_in_", None), getattr(mapper, "n_features_out_", None))
    if got == (None, None):
        from sklearn.exceptions import NotFittedError

        raise NotFittedError("the mapper is not fitted yet: call fit(source, target) first")
    if got != (d_s, d_t):
        raise ValueError(f"the mapper maps width {got[0]} to {got[1]} but the models' hidden sizes are "
                         f"{d_s} (source) and {d_t} (target)")


def _check_mapper_layers(mapper: Any, source_layer: int, target_layer: int) -> None:
    """Raise when the mapper was fitted (or saved) on other layers than ``source_layer``, ``target_layer``.

    Parameters
    ----------
    mapper : AffineMapper or AutoEncoderMapper
        Fitted mapper; one fitted on bare arrays (``source_layer_`` None) is not checked.
    source_layer, target_layer : int
        Non-negative layer indices it is about to be used at.

    Raises
    ------
    ValueError
        Naming the layers the mapper was fitted on and those asked for.
    """
    fitted = (getattr(mapper, "source_layer_", None), getattr(mapper, "target_layer_", None))
    for f, used in zip(fitted, (source_layer, target_layer), strict=True):
        if f is not None and int(f) != int(used):
            raise ValueError(f"the mapper was fitted on source layer {fitted[0]} and target layer {fitted[1]}, "
                             f"not on source layer {source_layer} and target layer {target_layer}: fit one on "
                             "pairs collected at these layers")


def mapped_vector(mapper: Any, source_activations: Any, vector: Any, *, alpha: float = 1.0) -> torch.Tensor:
    """The target-space vector ``mean_x [M(h_s(x) + alpha v_s) - M(h_s(x))]``.

    Parameters
    ----------
    mapper : AffineMapper or AutoEncoderMapper
        Fitted source-to-target mapper.
    source_activations : torch.Tensor, shape (n, d_s)
        Source activations ``h_s`` the difference is averaged over (e.g. the prompts to steer).
    vector : torch.Tensor, shape (d_s,)
        Source steering vector ``v_s``.
    alpha : float, default 1.0
        Strength applied in the source space before mapping.

    Returns
    -------
    torch.Tensor, shape (d_t,)
        For an affine mapper this is ``alpha W v_s`` whatever the activations.
    """
    a = _check_alpha(alpha)
    d_s = mapper.n_features_in_
    v = _check_vector(vector, d_s, "vector")
    h = torch.as_tensor(source_activations)
    if h.ndim != 2 or h.shape[0] == 0 or h.shape[1] != d_s:
        raise ValueError(f"source_activations must be a non-empty (n, {d_s}) array, got shape {tuple(h.shape)}")
    with torch.no_grad():
        return (mapper.transform(h + a * v.to(device=h.device, dtype=h.dtype)) - mapper.transform(h)).mean(dim=0)


def _embedded_ids(model: nn.Module) -> int:
    """Rows of the model's input embedding (ids it can embed); the config's ``vocab_size`` when unknown."""
    getter = getattr(model, "get_input_embeddings", None)
    embedding = getter() if callable(getter) else None
    rows = getattr(embedding, "num_embeddings", None)
    config: Any = model.config
    return int(rows) if rows is not None else int(config.vocab_size)


def _same_vocabulary(first: Any, second: Any) -> bool:
    if first is second:
        return True
    return bool(first.get_vocab() == second.get_vocab()
                and getattr(first, "all_special_tokens", None) == getattr(second, "all_special_tokens", None))


@contextmanager
def mapped_replacement(source: nn.Module, target: nn.Module, mapper: Any, *, source_layer: int, target_layer: int,
                       vector: Any = None, alpha: float = 1.0, tokens: slice | None = None,
                       source_tokenizer: Any = None, target_tokenizer: Any = None) -> Iterator[None]:
    """While active, replace the target's layer output by ``M(h_s + alpha v_s)`` computed on the same ids.

    Each target forward first runs the source (up to ``source_layer``) on the same ``input_ids``,
    ``attention_mask`` and ``position_ids``; the two models must therefore share a tokenizer. Embedding
    tables may differ in size (Qwen2.5-0.5B pads its vocabulary to 151936 rows, Qwen2.5-7B to 152064, with
    one tokenizer): what matters is the tokenizers' vocabularies, compared when both are given, and that
    every id of a forward is embedded by the source (checked on each forward). Forwards with a KV cache are
    refused (use ``generate(..., use_cache=False)``).

    Parameters
    ----------
    source, target : transformers.PreTrainedModel
        The models.
    mapper : AffineMapper or AutoEncoderMapper
        Fitted from the source layer to the target layer.
    source_layer, target_layer : int
        Layers read and replaced.
    vector : torch.Tensor of shape (d_s,), optional
        Source steering vector (None: pure substitution ``M(h_s)``).
    alpha : float, default 1.0
        Strength.
    tokens : slice or None, default None
        Positions replaced (None: all).
    source_tokenizer, target_tokenizer : transformers tokenizer, optional
        The models' tokenizers; when both are given their vocabularies (tokens, ids and special tokens)
        must be equal.

    Raises
    ------
    ValueError
        When the mapper does not match the widths, a layer is out of range, alpha is not finite, the
        tokenizers differ, or (on a forward) an id is beyond the source's embedding table.

    Warns
    -----
    UserWarning
        When no tokenizers were given to compare (and the source is not the target itself): embedding
        sizes cannot tell two vocabularies apart.
    """
    check_mapper(mapper, source, target)
    ls, lt = check_layer(source, source_layer, name="source_layer"), check_layer(target, target_layer,
                                                                                  name="target_layer")
    _check_mapper_layers(mapper, ls, lt)
    a = _check_alpha(alpha)
    v = None if vector is None else _check_vector(vector, hidden_size(source), "vector")
    if (source_tokenizer is None) != (target_tokenizer is None):
        raise ValueError("mapped_replacement: give both source_tokenizer and target_tokenizer (or neither)")
    if source_tokenizer is not None and not _same_vocabulary(source_tokenizer, target_tokenizer):
        raise ValueError("the source's and the target's tokenizers have different vocabularies: mapped replacement "
                         "runs both models on the same ids and needs one shared tokenizer; use mapped_vector for "
                         "models with different tokenizers")
    source_rows, target_rows = _embedded_ids(source), _embedded_ids(target)
    if source_tokenizer is None and source is not target:
        # equal embedding sizes do not show one tokenizer (Llama-2 and Mistral-7B both embed 32000 ids)
        sizes = (f"the source embeds {source_rows} ids and the target {target_rows}" if source_rows != target_rows
                 else f"both models embed {source_rows} ids, but equal sizes do not show one vocabulary")
        warnings.warn(f"{sizes}: mapped replacement needs one shared tokenizer, and the tokenizers were not compared; "
                      "pass source_tokenizer and target_tokenizer to have them compared", UserWarning, stacklevel=3)
    seen: dict[str, Any] = {}

    def grab(_module: nn.Module, args: tuple, kwargs: dict) -> None:
        ids = kwargs.get("input_ids", args[0] if args else None)
        if ids is None:
            raise ValueError("mapped_replacement needs input_ids (not inputs_embeds)")
        if kwargs.get("past_key_values") is not None and kwargs["past_key_values"].get_seq_length() > 0:
            raise ValueError("mapped_replacement needs full-sequence forwards: call generate(..., use_cache=False)")
        if ids.numel() and int(ids.max()) >= source_rows:
            raise ValueError(f"token id {int(ids.max())} is beyond the source's embedding table ({source_rows} ids): "
                             "the two models do not share this tokenizer")
        seen["ids"], seen["mask"], seen["pos"] = ids, kwargs.get("attention_mask"), kwargs.get("position_ids")

    def fn(hidden: torch.Tensor) -> torch.Tensor:
        with torch.no_grad(), _eval_mode(source), read_layer(source, ls, stop=True) as rec:
            try:
                device = next(source.parameters()).device
                source(input_ids=seen["ids"].to(device),
                       attention_mask=None if seen["mask"] is None else seen["mask"].to(device),
                       position_ids=None if seen["pos"] is None else seen["pos"].to(device), use_cache=False)
            except StopForward:
                pass
        h_s = rec[-1]
        if v is not None:
            h_s = h_s + a * v.to(device=h_s.device, dtype=h_s.dtype)
        return mapper.transform(h_s).to(device=hidden.device, dtype=hidden.dtype)

    handle = target.register_forward_pre_hook(grab, with_kwargs=True)
    try:
        with replace_layer(target, lt, fn, tokens=tokens):
            yield
    finally:
        handle.remove()


def random_like(vector: Any, *, dim: int | None = None, random_state: RandomStateLike = None) -> torch.Tensor:
    """A Gaussian random direction with the norm of ``vector`` (the equal-norm control).

    Parameters
    ----------
    vector : torch.Tensor, shape (d,)
        Reference vector.
    dim : int, optional
        Width of the result (default ``d``).
    random_state : None, int or numpy Generator, default None
        Source of the direction.

    Returns
    -------
    torch.Tensor, shape (dim,)
        Same dtype and norm as ``vector``.
    """
    v = torch.as_tensor(vector)
    d = v.shape[-1] if dim is None else int(dim)
    rng = check_random_state(random_state)
    r = torch.from_numpy(rng.standard_normal(d)).to(torch.float64)
    return (r / torch.linalg.vector_norm(r) * torch.linalg.vector_norm(v.double())).to(v.dtype)


def pad_or_truncate(vector: Any, dim: int) -> torch.Tensor:
    """The source vector cut to, or zero-padded up to, ``dim`` coordinates (the unmapped control).

    Parameters
    ----------
    vector : torch.Tensor, shape (d_s,)
        Source vector.
    dim : int
        Target width.

    Returns
    -------
    torch.Tensor, shape (dim,)
        ``vector[:dim]`` or ``vector`` followed by zeros.
    """
    v = torch.as_tensor(vector)
    if v.shape[0] >= dim:
        return v[:dim].clone()
    return torch.cat([v, v.new_zeros(dim - v.shape[0])])


def refine_with_lm_loss(mapper: Any, source: nn.Module, target: nn.Module, tokenizer: Any, texts: Any, *,
                        source_layer: int, target_layer: int, lm_weight: float = 1.0, epochs: int = 1,
                        lr: float = 1e-3, batch_size: int = 8, random_state: RandomStateLike = None,
                        add_special_tokens: bool = True) -> list[float]:
    """Train a fitted mapper further on ``MSE + lm_weight * LM loss`` with the mapped activations patched in.

    The target's next-token loss is computed with its ``target_layer`` output replaced by ``M(h_s)``; only
    the mapper's parameters change (the models' ``requires_grad`` flags are restored on exit). Both models
    run in eval mode (dropout off) and get back each module's own mode on exit.

    Parameters
    ----------
    mapper : AffineMapper or AutoEncoderMapper
        Fitted mapper, updated in place.
    source, target : transformers.PreTrainedModel
        Models sharing ``tokenizer``.
    tokenizer : transformers tokenizer
        Shared tokenizer with a pad token.
    texts : sequence of str
        Training texts.
    source_layer, target_layer : int
        The mapper's layers.
    lm_weight : float, default 1.0
        Weight of the LM loss (nats per token) against the per-coordinate MSE.
    epochs : int, default 1
        Passes over ``texts``.
    lr : float, default 1e-3
        Adam learning rate.
    batch_size : int, default 8
        Texts per step.
    random_state : None, int or numpy Generator, default None
        Text order.
    add_special_tokens : bool, default True
        Encode with the tokenizer's special tokens, as :func:`~safety_transfer.lm_loss`.

    Returns
    -------
    list of float
        The total loss of every step.
    """
    from safety_transfer.activations import _check_texts

    check_mapper(mapper, source, target)
    texts = _check_texts(texts)
    w = _check_alpha(lm_weight)
    ls, lt = check_layer(source, source_layer, name="source_layer"), check_layer(target, target_layer,
                                                                                  name="target_layer")
    _check_mapper_layers(mapper, ls, lt)
    rng = check_random_state(random_state)
    module = mapper.module_
    module.requires_grad_(True)
    opt = torch.optim.Adam(module.parameters(), lr=lr)
    flags = [p.requires_grad for p in target.parameters()]
    target.requires_grad_(False)
    losses = []
    try:
        with _eval_mode(target), _eval_mode(source):
            losses = _refine_epochs(module, opt, source, target, tokenizer, texts, ls, lt, w, int(epochs),
                                    int(batch_size), rng, _boolean("add_special_tokens", add_special_tokens))
    finally:
        for p, flag in zip(target.parameters(), flags, strict=True):
            p.requires_grad_(flag)
        module.requires_grad_(False)
    return losses


def _refine_epochs(module: nn.Module, opt: torch.optim.Optimizer, source: nn.Module, target: nn.Module,
                   tokenizer: Any, texts: list[str], ls: int, lt: int, w: float, epochs: int, batch_size: int,
                   rng: Any, special: bool) -> list[float]:
    from safety_transfer.activations import _encode, _forward_layer

    losses = []
    for _ in range(epochs):
        order = rng.permutation(len(texts))
        for start in range(0, len(texts), batch_size):
            batch = _encode(tokenizer, [texts[int(i)] for i in order[start:start + batch_size]], special=special)
            h_s = _forward_layer(source, ls, batch, True)
            h_t = _forward_layer(target, lt, batch, True)
            mask = batch["attention_mask"].bool()
            p = next(module.parameters())
            mapped = module(h_s.to(device=p.device, dtype=p.dtype))
            mse = torch.nn.functional.mse_loss(mapped[mask.to(p.device)].float(), h_t[mask].to(p.device).float())
            labels = batch["input_ids"].masked_fill(~mask, -100)
            device = next(target.parameters()).device
            def patched(h: torch.Tensor, mapped: torch.Tensor = mapped) -> torch.Tensor:
                return mapped.to(device=h.device, dtype=h.dtype)

            with replace_layer(target, lt, patched):
                lm = target(input_ids=batch["input_ids"].to(device), attention_mask=batch["attention_mask"].to(device),
                            labels=labels.to(device), use_cache=False).loss
            lm = lm.to(p.device)
            loss = mse + w * lm
            opt.zero_grad()
            loss.backward()
            opt.step()
            losses.append(float(loss.detach()))
    return losses

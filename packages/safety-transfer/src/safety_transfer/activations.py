"""Collect residual-stream activations at one layer, from one model or from two on the same texts.

Batches are right-padded and only real tokens are kept; the forward stops after the hooked layer unless
told otherwise; with ``out`` each batch is written to a safetensors shard as soon as it is computed, so
memory stays bounded by one batch.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, overload

import torch
from icml25_shared.validation import Interval, Options, check_params
from torch import nn

from safety_transfer.hooks import StopForward, _eval_mode, check_layer, hidden_size, read_layer

__all__ = ["ActivationPairs", "ActivationShards", "Activations", "align_offsets", "collect_activations",
           "collect_pairs"]

POSITIONS = ("all", "last")


@dataclass(frozen=True)
class Activations:
    """Activations of one model at one layer.

    Attributes
    ----------
    values : torch.Tensor, shape (n, d)
        One row per kept token.
    text_index : torch.Tensor of int64, shape (n,)
        Which text each row comes from.
    position : torch.Tensor of int64, shape (n,)
        The token's position in its text.
    layer : int
        Decoder layer read.
    """

    values: torch.Tensor
    text_index: torch.Tensor
    position: torch.Tensor
    layer: int


@dataclass(frozen=True)
class ActivationPairs:
    """Paired activations of a source and a target model on the same tokens.

    Attributes
    ----------
    source, target : torch.Tensor, shapes (n, d_s) and (n, d_t)
        Row ``i`` of both belongs to the same text and the same character span end.
    text_index : torch.Tensor of int64, shape (n,)
        Which text each pair comes from.
    source_position, target_position : torch.Tensor of int64, shape (n,)
        Token positions in each model's tokenization.
    source_layer, target_layer : int
        Layers read.
    """

    source: torch.Tensor
    target: torch.Tensor
    text_index: torch.Tensor
    source_position: torch.Tensor
    target_position: torch.Tensor
    source_layer: int
    target_layer: int


@dataclass(frozen=True)
class ActivationShards:
    """Activations stored on disk as safetensors shards (one per batch).

    Attributes
    ----------
    paths : tuple of Path
        Shard files in order; each holds the tensors named in ``keys``.
    keys : tuple of str
        ``("values", "text_index", "position")`` for one model, ``("source", "target", "text_index",
        "source_position", "target_position")`` for pairs.
    n_rows : int
        Rows over all shards.
    metadata : dict of str to str
        Layer(s), width(s) and model names.
    """

    paths: tuple[Path, ...]
    keys: tuple[str, ...]
    n_rows: int
    metadata: dict[str, str]

    def __len__(self) -> int:
        return len(self.paths)

    def __iter__(self) -> Iterator[dict[str, torch.Tensor]]:
        """Yield the shards one at a time as dicts of tensors."""
        from safetensors.torch import load_file

        for path in self.paths:
            yield load_file(str(path))

    def load(self) -> Activations | ActivationPairs:
        """Concatenate every shard in memory.

        Returns
        -------
        Activations or ActivationPairs
            The same object the collector returns without ``out``.
        """
        parts: dict[str, list[torch.Tensor]] = {k: [] for k in self.keys}
        for shard in self:
            for k in self.keys:
                parts[k].append(shard[k])
        cat = {k: torch.cat(v) for k, v in parts.items()}
        if "source" in cat:
            return ActivationPairs(**cat, source_layer=int(self.metadata["source_layer"]),
                                   target_layer=int(self.metadata["target_layer"]))
        return Activations(**cat, layer=int(self.metadata["layer"]))


class _ShardWriter:
    def __init__(self, out: str | Path | None, keys: tuple[str, ...], metadata: dict[str, str]) -> None:
        self.out = None if out is None else Path(out)
        self.keys, self.metadata = keys, metadata
        self.parts: dict[str, list[torch.Tensor]] = {k: [] for k in keys}
        self.paths: list[Path] = []
        self.n_rows = 0
        if self.out is not None:
            self.out.mkdir(parents=True, exist_ok=True)
            stale = sorted(self.out.glob("shard-*.safetensors"))
            if stale:
                raise ValueError(f"{self.out} already holds {len(stale)} shards: give an empty folder")

    def add(self, **tensors: torch.Tensor) -> None:
        self.n_rows += len(tensors[self.keys[0]])
        if self.out is None:
            for k in self.keys:
                self.parts[k].append(tensors[k])
            return
        from safetensors.torch import save_file

        path = self.out / f"shard-{len(self.paths):05d}.safetensors"
        save_file({k: tensors[k].contiguous() for k in self.keys}, str(path), metadata=self.metadata)
        self.paths.append(path)

    def finish(self) -> dict[str, torch.Tensor] | ActivationShards:
        if self.out is None:
            return {k: torch.cat(v) for k, v in self.parts.items()}
        shards = ActivationShards(tuple(self.paths), self.keys, self.n_rows, dict(self.metadata))
        (self.out / "index.json").write_text(json.dumps({"paths": [p.name for p in self.paths], "keys": self.keys,
                                                         "n_rows": self.n_rows, "metadata": self.metadata}))
        return shards


def _check_texts(texts: Any) -> list[str]:
    if isinstance(texts, str):
        raise ValueError("texts must be a sequence of strings, got a single string")
    texts = list(texts)
    if not texts:
        raise ValueError("the prompt set is empty: texts must hold at least one string")
    bad = [i for i, t in enumerate(texts) if not isinstance(t, str) or not t]
    if bad:
        raise ValueError(f"texts must be non-empty strings; entry {bad[0]} is {texts[bad[0]]!r}")
    return texts


def _check_options(positions: str, batch_size: Any, stop_at_layer: Any, add_special_tokens: Any) -> int:
    check_params({"positions": positions, "batch_size": batch_size, "stop_at_layer": stop_at_layer,
                  "add_special_tokens": add_special_tokens},
                 {"positions": [Options(str, set(POSITIONS))], "batch_size": [Interval(int, 1, None)],
                  "stop_at_layer": ["boolean"], "add_special_tokens": ["boolean"]})
    return int(batch_size)


def _encode(tokenizer: Any, texts: list[str], *, offsets: bool = False, special: bool = True) -> Any:
    if tokenizer.pad_token_id is None:
        raise ValueError("the tokenizer has no pad token: set tokenizer.pad_token (e.g. to its eos token)")
    return tokenizer(texts, return_tensors="pt", padding=True, padding_side="right", add_special_tokens=special,
                     return_offsets_mapping=offsets)


def _forward_layer(model: nn.Module, layer: int, batch: Any, stop: bool) -> torch.Tensor:
    device = next(model.parameters()).device
    embedding: Any = getattr(model, "get_input_embeddings")()  # noqa: B009 - nn.Module's stubs type attributes as Tensor
    config: Any = model.config
    n_ids = embedding.num_embeddings
    top = int(batch["input_ids"].max())
    if top >= n_ids:
        raise ValueError(f"the tokenizer gave token id {top} but the {config.model_type} model embeds {n_ids} "
                         "ids: give each model its own tokenizer (collect_pairs: target_tokenizer=, align='offsets')")
    with torch.no_grad(), _eval_mode(model), read_layer(model, layer, stop=stop) as records:
        try:
            model(input_ids=batch["input_ids"].to(device), attention_mask=batch["attention_mask"].to(device),
                  use_cache=False)
        except StopForward:
            pass
    return records[-1].cpu()


def _rows(mask: torch.Tensor, positions: str) -> tuple[torch.Tensor, torch.Tensor]:
    """(batch row, position) of the kept tokens of a right-padded batch."""
    if positions == "last":
        last = mask.sum(dim=1) - 1
        return torch.arange(mask.shape[0]), last
    rows, cols = torch.nonzero(mask, as_tuple=True)
    return rows, cols


@overload
def collect_activations(model: nn.Module, tokenizer: Any, texts: Sequence[str], layer: int, *,
                        positions: str = ..., batch_size: int = ..., stop_at_layer: bool = ..., out: None = ...,
                        add_special_tokens: bool = ...) -> Activations: ...


@overload
def collect_activations(model: nn.Module, tokenizer: Any, texts: Sequence[str], layer: int, *,
                        positions: str = ..., batch_size: int = ..., stop_at_layer: bool = ..., out: str | Path,
                        add_special_tokens: bool = ...) -> ActivationShards: ...


def collect_activations(model: nn.Module, tokenizer: Any, texts: Sequence[str], layer: int, *,
                        positions: str = "all", batch_size: int = 8, stop_at_layer: bool = True,
                        out: str | Path | None = None,
                        add_special_tokens: bool = True) -> Activations | ActivationShards:
    """Residual-stream activations after decoder layer ``layer`` for every real token (or the last one).

    Parameters
    ----------
    model : transformers.PreTrainedModel
        A supported causal LM.
    tokenizer : transformers tokenizer
        With a pad token; texts are right-padded. The model runs in eval mode (dropout off) and gets
        back each module's own mode.
    texts : sequence of str
        At least one non-empty text.
    layer : int
        Decoder layer (its output; ``output_hidden_states[layer + 1]`` except at the last layer, where
        transformers stores the state after the final norm).
    positions : {"all", "last"}, default "all"
        Keep every non-padding token or only each text's last one.
    batch_size : int, default 8
        Texts per forward pass.
    stop_at_layer : bool, default True
        End each forward after the hooked layer (the later layers are not computed).
    out : path or None, default None
        Folder for safetensors shards (one per batch); None keeps everything in memory.
    add_special_tokens : bool, default True
        Encode as the tokenizer does when called (its own default): a Llama or Gemma tokenizer prepends
        its BOS, whose row is then kept at position 0. False encodes the bare text.

    Returns
    -------
    Activations or ActivationShards
        In memory, or the shards on disk (``.load()`` gives the in-memory object).

    Raises
    ------
    ValueError
        For an empty prompt set, an out-of-range layer, an unknown ``positions`` or a tokenizer without
        a pad token.
    """
    texts = _check_texts(texts)
    bs = _check_options(positions, batch_size, stop_at_layer, add_special_tokens)
    layer = check_layer(model, layer)
    config: Any = model.config
    meta = {"layer": str(layer), "dim": str(hidden_size(model)), "positions": positions,
            "model": str(getattr(config, "name_or_path", "") or config.model_type)}
    writer = _ShardWriter(out, ("values", "text_index", "position"), meta)
    for start in range(0, len(texts), bs):
        batch = _encode(tokenizer, texts[start:start + bs], special=bool(add_special_tokens))
        hidden = _forward_layer(model, layer, batch, stop_at_layer)
        rows, cols = _rows(batch["attention_mask"], positions)
        writer.add(values=hidden[rows, cols], text_index=rows + start, position=cols)
    done = writer.finish()
    return done if isinstance(done, ActivationShards) else Activations(**done, layer=layer)


def align_offsets(source_offsets: Sequence[tuple[int, int]],
                  target_offsets: Sequence[tuple[int, int]]) -> list[tuple[int, int]]:
    """Pair the tokens of two tokenizations of one text whose character spans end at the same offset.

    Parameters
    ----------
    source_offsets, target_offsets : sequence of (start, end)
        Character spans of each token (padding spans ``(0, 0)`` are ignored).

    Returns
    -------
    list of (int, int)
        ``(source position, target position)`` for each shared span end, in order.

    Examples
    --------
    >>> align_offsets([(0, 1), (1, 2), (2, 3)], [(0, 2), (2, 3)])
    [(1, 0), (2, 1)]
    """
    ends_t: dict[int, int] = {}
    for j, (s, e) in enumerate(target_offsets):
        if e > s:
            ends_t[int(e)] = j
    pairs = []
    for i, (s, e) in enumerate(source_offsets):
        if e > s and int(e) in ends_t:
            pairs.append((i, ends_t[int(e)]))
    return pairs


@overload
def collect_pairs(source: nn.Module, target: nn.Module, texts: Sequence[str], *, source_tokenizer: Any,
                  source_layer: int, target_layer: int, target_tokenizer: Any = ..., align: str = ...,
                  positions: str = ..., batch_size: int = ..., stop_at_layer: bool = ..., out: None = ...,
                  add_special_tokens: bool = ...) -> ActivationPairs: ...


@overload
def collect_pairs(source: nn.Module, target: nn.Module, texts: Sequence[str], *, source_tokenizer: Any,
                  source_layer: int, target_layer: int, target_tokenizer: Any = ..., align: str = ...,
                  positions: str = ..., batch_size: int = ..., stop_at_layer: bool = ..., out: str | Path,
                  add_special_tokens: bool = ...) -> ActivationShards: ...


def collect_pairs(source: nn.Module, target: nn.Module, texts: Sequence[str], *, source_tokenizer: Any,
                  source_layer: int, target_layer: int, target_tokenizer: Any = None, align: str = "ids",
                  positions: str = "all", batch_size: int = 8, stop_at_layer: bool = True,
                  out: str | Path | None = None, add_special_tokens: bool = True) -> ActivationPairs | ActivationShards:
    """Activations of two models on the same texts, paired token by token.

    Parameters
    ----------
    source, target : transformers.PreTrainedModel
        The two models (any supported families and widths).
    texts : sequence of str
        At least one non-empty text.
    source_tokenizer : transformers tokenizer
        The source's tokenizer.
    source_layer, target_layer : int
        Layers read in each model.
    target_tokenizer : transformers tokenizer, optional
        The target's tokenizer (default: the source's).
    align : {"ids", "offsets"}, default "ids"
        ``"ids"`` requires both tokenizers to give the same ids and pairs equal positions;
        ``"offsets"`` pairs the tokens whose character spans end at the same offset.
    positions : {"all", "last"}, default "all"
        Every paired token or each text's last one (whose spans both end at the text's end).
    batch_size : int, default 8
        Texts per forward pass.
    stop_at_layer : bool, default True
        End each forward after the hooked layer.
    out : path or None, default None
        Folder for safetensors shards; None keeps the pairs in memory.
    add_special_tokens : bool, default True
        Encode with each tokenizer's special tokens, as the tokenizers do when called (see
        :func:`collect_activations`); with ``align="offsets"`` special tokens (empty spans) are not paired.

    Returns
    -------
    ActivationPairs or ActivationShards
        In memory, or on disk.

    Raises
    ------
    ValueError
        When the tokenizers differ on some text and ``align="ids"``, for an out-of-range layer or an
        empty prompt set.
    """
    texts = _check_texts(texts)
    bs = _check_options(positions, batch_size, stop_at_layer, add_special_tokens)
    if align not in ("ids", "offsets"):
        raise ValueError(f"align must be 'ids' or 'offsets', got {align!r}")
    ls, lt = check_layer(source, source_layer, name="source_layer"), check_layer(target, target_layer,
                                                                                  name="target_layer")
    tok_t = source_tokenizer if target_tokenizer is None else target_tokenizer
    meta = {"source_layer": str(ls), "target_layer": str(lt), "source_dim": str(hidden_size(source)),
            "target_dim": str(hidden_size(target)), "positions": positions, "align": align}
    writer = _ShardWriter(out, ("source", "target", "text_index", "source_position", "target_position"), meta)
    for start in range(0, len(texts), bs):
        chunk = texts[start:start + bs]
        enc_s = _encode(source_tokenizer, chunk, offsets=align == "offsets", special=bool(add_special_tokens))
        enc_t = _encode(tok_t, chunk, offsets=align == "offsets", special=bool(add_special_tokens))
        if align == "ids":
            for k, text in enumerate(chunk):
                ids_s = enc_s["input_ids"][k][enc_s["attention_mask"][k].bool()]
                ids_t = enc_t["input_ids"][k][enc_t["attention_mask"][k].bool()]
                if not torch.equal(ids_s, ids_t):
                    raise ValueError(f"the source and target tokenizers give different tokens for text "
                                     f"{start + k} ({text[:30]!r}): pass align='offsets' to pair tokens by "
                                     "character offsets")
        h_s = _forward_layer(source, ls, {k: v for k, v in enc_s.items() if k != "offset_mapping"}, stop_at_layer)
        h_t = _forward_layer(target, lt, {k: v for k, v in enc_t.items() if k != "offset_mapping"}, stop_at_layer)
        rows: list[int] = []
        ps: list[int] = []
        pt: list[int] = []
        for k in range(len(chunk)):
            n_s, n_t = int(enc_s["attention_mask"][k].sum()), int(enc_t["attention_mask"][k].sum())
            if positions == "last":
                pairs = [(n_s - 1, n_t - 1)]
            elif align == "ids":
                pairs = [(i, i) for i in range(n_s)]
            else:
                pairs = align_offsets(enc_s["offset_mapping"][k][:n_s].tolist(),
                                      enc_t["offset_mapping"][k][:n_t].tolist())
            rows += [k] * len(pairs)
            ps += [p[0] for p in pairs]
            pt += [p[1] for p in pairs]
        r, i_s, i_t = torch.tensor(rows, dtype=torch.long), torch.tensor(ps, dtype=torch.long), torch.tensor(
            pt, dtype=torch.long)
        writer.add(source=h_s[r, i_s], target=h_t[r, i_t], text_index=r + start, source_position=i_s,
                   target_position=i_t)
    done = writer.finish()
    if isinstance(done, ActivationShards):
        return done
    return ActivationPairs(**done, source_layer=ls, target_layer=lt)

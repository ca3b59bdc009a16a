"""Full-size WikiText-103 presets and a token corpus read from a local folder.

The presets are the LT, TMLT and GPT-baseline configurations of the ``tmlt`` repository.

The data never comes from a hub: put WikiText-103 (``wiki.train.tokens`` / ``wiki.valid.tokens``, or the
``.raw`` files of the raw variant) in a folder, tokenise it once with :func:`prepare_corpus` and any tokenizer
(a GPT-2 BPE tokenizer loaded from local files, as the presets assume, or any ``str -> ids`` callable), then
train on :class:`TokenCorpusTask`, which memory-maps the ``train.bin`` / ``val.bin`` files (``uint16`` ids,
the layout nanoGPT's ``prepare.py`` writes, so folders prepared by nanoGPT load as they are).

Examples
--------
>>> p = preset("wikitext103-tmlt")
>>> p.config.hidden_size, p.config.n_loops, p.config.timestep, p.train.lr, p.seq_len
(768, 48, 'tmlt', 0.0002, 1024)
"""

from __future__ import annotations

import dataclasses
import functools
import inspect
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import torch
from icml25_shared.random import RandomStateLike, check_random_state

from looped_transformers.modeling import LoopedConfig
from looped_transformers.tasks import TokenBatch
from looped_transformers.train import TrainConfig

__all__ = ["PRESETS", "Preset", "TokenCorpusTask", "prepare_corpus", "preset"]

_GPT2_VOCAB = 50304  # GPT-2's 50257 BPE tokens padded to a multiple of 64, as nanoGPT does
_WIKITEXT_TRAIN = {"steps": 100_000, "batch_size": 48, "lr": 2e-4, "min_lr_ratio": 0.3, "warmup_steps": 2000,
                   "weight_decay": 1e-4, "grad_clip": 1.0}

PRESETS: dict[str, dict[str, Any]] = {
    "wikitext103-lt": {
        "model": {"vocab_size": _GPT2_VOCAB, "hidden_size": 768, "num_attention_heads": 12, "n_loops": 24,
                  "block": "gpt", "timestep": "none", "max_position_embeddings": 1024, "tie_word_embeddings": True},
        "train": _WIKITEXT_TRAIN, "seq_len": 1024, "reference_parameters": 46.5e6},
    "wikitext103-tmlt": {
        "model": {"vocab_size": _GPT2_VOCAB, "hidden_size": 768, "num_attention_heads": 12, "n_loops": 48,
                  "block": "gpt", "timestep": "tmlt", "max_position_embeddings": 1024, "tie_word_embeddings": True},
        "train": _WIKITEXT_TRAIN, "seq_len": 1024, "reference_parameters": 49.6e6},
    "wikitext103-gpt": {
        "model": {"vocab_size": _GPT2_VOCAB, "hidden_size": 512, "num_attention_heads": 8, "n_blocks": 6,
                  "n_loops": 1, "block": "gpt", "timestep": "none", "max_position_embeddings": 1024,
                  "tie_word_embeddings": True},
        "train": _WIKITEXT_TRAIN, "seq_len": 1024, "reference_parameters": 44.64e6},
}
"""The WikiText-103 presets: model keywords, training keywords, window length and the parameter count the
``tmlt`` repository's configurations name (LT and TMLT count every parameter; the GPT baseline's count leaves
out the position table, as nanoGPT's ``get_num_params`` does). Training: AdamW, lr 2e-4 decaying to 6e-5
by a cosine after 2000 warmup steps, 100k steps of 48 windows of 1024 tokens, weight decay 1e-4, clip 1."""


@dataclass(frozen=True)
class Preset:
    """A full-size configuration.

    Attributes
    ----------
    name : str
        The key of :data:`PRESETS`.
    config : LoopedConfig
        The model.
    train : TrainConfig
        The optimiser and schedule.
    seq_len : int
        Training window in tokens (1024, or ``max_position_embeddings`` when an override sets it lower).
    reference_parameters : float
        Parameter count named by the reference configuration.
    """

    name: str
    config: LoopedConfig
    train: TrainConfig
    seq_len: int
    reference_parameters: float


def preset(name: str, **overrides: Any) -> Preset:
    """A WikiText-103 preset, with model or training keywords overridden.

    Parameters
    ----------
    name : {"wikitext103-lt", "wikitext103-tmlt", "wikitext103-gpt"}
        The preset.
    **overrides
        ``LoopedConfig`` or ``TrainConfig`` keywords (e.g. ``n_loops=12``, ``steps=1000``); ``n_loops`` and
        ``loss_loops`` set both.

    Returns
    -------
    Preset
        The model and training configurations.

    Raises
    ------
    ValueError
        For an unknown preset or keyword.
    """
    if name not in PRESETS:
        raise ValueError(f"unknown preset {name!r}; accepted: {', '.join(PRESETS)}")
    spec = PRESETS[name]
    train_fields = {f.name for f in dataclasses.fields(TrainConfig)}
    model_kw, train_kw = dict(spec["model"]), dict(spec["train"])
    for key, value in overrides.items():  # a key of both (n_loops, loss_loops) sets both
        known = False
        if key in LoopedConfig.__annotations__:
            model_kw[key], known = value, True
        if key in train_fields:
            train_kw[key], known = value, True
        if not known:
            raise ValueError(f"{key!r} is neither a LoopedConfig nor a TrainConfig keyword")
    config = LoopedConfig(**model_kw)  # a smaller position table shortens the window with it
    return Preset(name, config, TrainConfig(**train_kw), min(spec["seq_len"], config.max_position_embeddings),
                  spec["reference_parameters"])


_SPLITS = {"train": ("train",), "val": ("valid", "val", "validation")}


def _text_file(folder: Path, split: str) -> Path | None:
    for stem in _SPLITS[split]:
        for suffix in (".tokens", ".raw", ".txt"):
            for name in (f"wiki.{stem}{suffix}", f"{stem}{suffix}"):
                if (folder / name).is_file():
                    return folder / name
    return None


def _as_ids(ids: Any) -> np.ndarray:
    """The tokenizer's output as a flat int64 array; non-integer or nested output raises (no silent casts)."""
    arr = np.asarray(ids)
    if arr.ndim != 1:
        raise ValueError(f"the tokenizer must return a flat list of ids, got an array of shape {arr.shape}")
    if arr.size and not np.issubdtype(arr.dtype, np.integer):
        raise ValueError(f"the tokenizer must return integer ids, got dtype {arr.dtype}")
    return arr.astype(np.int64)


def prepare_corpus(folder: str | Path, tokenizer: Callable[[str], list[int]] | Any, *,
                   chunk_lines: int = 10_000) -> dict[str, Path]:
    """Tokenise a local WikiText folder into ``train.bin`` and ``val.bin`` (``uint16`` ids).

    Parameters
    ----------
    folder : str or Path
        Holds ``wiki.train.tokens`` and ``wiki.valid.tokens`` (or ``.raw`` / ``.txt``; ``train.*`` and
        ``valid.*`` / ``val.*`` also work). The ``.bin`` files are written there.
    tokenizer : callable or object with ``encode``
        ``str -> list of int`` (a transformers tokenizer loaded from local files, tiktoken, or a function).
        An ``encode`` that takes ``add_special_tokens`` is called with ``False``: the text is tokenised in
        chunks, and special tokens would otherwise land in the middle of the corpus.
    chunk_lines : int, default 10000
        Lines tokenised per call.

    Returns
    -------
    dict of str to Path
        ``{"train": .../train.bin, "val": .../val.bin}``.

    Raises
    ------
    FileNotFoundError
        When a split's text file is missing.
    ValueError
        When the tokenizer returns an id outside ``[0, 65535]``, non-integer or nested ids, or no ids for a
        split.
    """
    folder = Path(folder)
    encode = tokenizer if callable(tokenizer) and not hasattr(tokenizer, "encode") else tokenizer.encode
    try:
        takes_special = "add_special_tokens" in inspect.signature(encode).parameters
    except (TypeError, ValueError):  # builtins without a signature
        takes_special = False
    if takes_special:  # transformers tokenizers: no BOS/EOS/CLS inside the corpus at every chunk
        encode = functools.partial(encode, add_special_tokens=False)  # type: ignore[call-arg]  # checked above
    out = {}
    for split in ("train", "val"):
        path = _text_file(folder, split)
        if path is None:
            raise FileNotFoundError(f"{folder} has no {split} text: expected wiki.{_SPLITS[split][0]}.tokens "
                                    "(or .raw / .txt)")
        ids: list[np.ndarray] = []
        with path.open(encoding="utf-8") as fh:
            lines: list[str] = []
            for line in fh:
                lines.append(line)
                if len(lines) == chunk_lines:
                    ids.append(_as_ids(encode("".join(lines))))
                    lines = []
            if lines:
                ids.append(_as_ids(encode("".join(lines))))
        flat = np.concatenate(ids) if ids else np.zeros(0, dtype=np.int64)
        if not flat.size:
            raise ValueError(f"{path} gave no tokens: the {split} split would be empty")
        if flat.min() < 0 or flat.max() > np.iinfo(np.uint16).max:
            raise ValueError(f"the tokenizer returned ids in [{flat.min()}, {flat.max()}]; uint16 files hold "
                             "[0, 65535]")
        out[split] = folder / f"{split}.bin"
        flat.astype(np.uint16).tofile(out[split])
    return out


class TokenCorpusTask:
    """Language modelling on token files in a local folder (``train.bin`` / ``val.bin``, ``uint16``).

    Parameters
    ----------
    folder : str or Path
        The folder (see :func:`prepare_corpus`).
    seq_len : int, default 1024
        Window length in tokens.
    name : str, default "wikitext103"
        Name used in messages.

    Attributes
    ----------
    vocab_size : int
        Largest id in either file plus one (what a model must at least hold).
    max_sequence_length : int
        ``seq_len``.

    Raises
    ------
    FileNotFoundError
        When a file is missing.
    ValueError
        When a file is shorter than ``seq_len + 1`` tokens.
    """

    def __init__(self, folder: str | Path, *, seq_len: int = 1024, name: str = "wikitext103") -> None:
        if isinstance(seq_len, bool) or not isinstance(seq_len, int) or seq_len < 2:
            raise ValueError(f"seq_len must be an int >= 2, got {seq_len!r}")
        folder = Path(folder)
        self.name, self.seq_len, self.max_sequence_length = name, seq_len, seq_len
        self.data = {}
        for split in ("train", "val"):
            path = folder / f"{split}.bin"
            if not path.is_file():
                raise FileNotFoundError(f"{path} is missing: tokenise the text with prepare_corpus({str(folder)!r}, "
                                        "tokenizer) first")
            size = path.stat().st_size // np.dtype(np.uint16).itemsize
            if size < seq_len + 1:  # checked before mapping: an empty file cannot be memory-mapped
                raise ValueError(f"{path} holds {size} tokens, fewer than seq_len + 1 = {seq_len + 1}")
            data = np.memmap(path, dtype=np.uint16, mode="r")
            self.data[split] = data
        self.vocab_size = int(max(int(d.max()) for d in self.data.values())) + 1

    def check_vocab(self, vocab_size: int) -> None:
        """Raise when the files hold ids ``>= vocab_size``.

        Parameters
        ----------
        vocab_size : int
            The model's vocabulary size.

        Raises
        ------
        ValueError
            When an id does not fit.
        """
        if vocab_size < self.vocab_size:
            raise ValueError(f"corpus {self.name!r} holds token id {self.vocab_size - 1} but the model's vocab_size "
                             f"is {vocab_size}")

    def sample(self, n: int, random_state: RandomStateLike = None, *, split: str = "train") -> TokenBatch:
        """``n`` random windows of the train or validation tokens.

        Parameters
        ----------
        n : int
            Batch size.
        random_state : None, int or numpy Generator
            Source of the window starts.
        split : {"train", "val"}, default "train"
            Which file.

        Returns
        -------
        TokenBatch
            Windows as ids; every position is a target.
        """
        if split not in self.data:
            raise ValueError(f"split must be 'train' or 'val', got {split!r}")
        data = self.data[split]
        starts = check_random_state(random_state).integers(0, len(data) - self.seq_len + 1, size=n)
        ids = torch.from_numpy(np.stack([data[s:s + self.seq_len].astype(np.int64) for s in starts.tolist()]))
        return TokenBatch(ids, ids.clone(), [])

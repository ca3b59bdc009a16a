"""Models and tokenizers: tiny ones built in code, and full-size checkpoints loaded from a local folder.

Nothing here downloads: the tiny models are random ``transformers`` models of the supported families, the
tokenizers are built with the ``tokenizers`` library (a byte-level one with no merges, and a small BPE
trained on the texts given), and :func:`load_local_model` reads a checkpoint folder with
``local_files_only=True`` (e.g. a 7B-class Llama, Qwen2 or Gemma2 saved by ``save_pretrained`` or
``huggingface-cli download``).
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import torch
from icml25_shared.random import RandomStateLike, check_random_state
from icml25_shared.validation import Interval, Options, check_params

__all__ = ["FAMILIES", "bpe_tokenizer", "byte_tokenizer", "load_local_model", "tiny_causal_lm"]

FAMILIES = ("llama", "qwen2", "qwen3", "gemma2", "gemma3", "mistral", "phi3", "gpt2")
"""Model families :func:`tiny_causal_lm` builds (``gemma3`` is the text model, ``model_type`` ``gemma3_text``)."""
_SPECIAL = ("<pad>", "<eos>")
# files from which AutoTokenizer builds a vocabulary (fast serialisation, sentencepiece, byte-level BPE)
_TOKENIZER_FILES = ("tokenizer.json", "tokenizer.model", "vocab.json", "spiece.model")


def _wrap(tok: Any) -> Any:
    from transformers import PreTrainedTokenizerFast

    return PreTrainedTokenizerFast(tokenizer_object=tok, pad_token="<pad>", eos_token="<eos>", padding_side="right")


def byte_tokenizer() -> Any:
    """A byte-level tokenizer: one token per byte (258 ids: 256 bytes, ``<pad>`` = 256, ``<eos>`` = 257).

    Returns
    -------
    transformers.PreTrainedTokenizerFast
        Right-padding tokenizer with character offsets (``return_offsets_mapping=True``).

    Examples
    --------
    >>> tok = byte_tokenizer()
    >>> tok("hi!")["input_ids"], len(tok)
    ([104, 105, 33], 258)
    """
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers

    alphabet = pre_tokenizers.ByteLevel.alphabet()
    byte_to_char = {b: c for b, c in enumerate(_bytes_to_unicode())}
    assert set(byte_to_char.values()) == set(alphabet)
    vocab = {byte_to_char[b]: b for b in range(256)}
    vocab.update({s: 256 + i for i, s in enumerate(_SPECIAL)})
    tok = Tokenizer(models.BPE(vocab=vocab, merges=[]))
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False)
    tok.decoder = decoders.ByteLevel()
    tok.add_special_tokens(list(_SPECIAL))
    return _wrap(tok)


def _bytes_to_unicode() -> list[str]:
    # GPT-2's printable mapping of the 256 bytes (the alphabet of the ByteLevel pre-tokenizer)
    bs = list(range(ord("!"), ord("~") + 1)) + list(range(ord("¡"), ord("¬") + 1)) + list(range(ord("®"), ord("ÿ") + 1))
    cs = bs[:]
    n = 0
    for b in range(256):
        if b not in bs:
            bs.append(b)
            cs.append(256 + n)
            n += 1
    return [chr(c) for _, c in sorted(zip(bs, cs, strict=True))]


def bpe_tokenizer(texts: Sequence[str], *, vocab_size: int = 300) -> Any:
    """A byte-level BPE tokenizer trained offline on ``texts``.

    Parameters
    ----------
    texts : sequence of str
        Training corpus.
    vocab_size : int, default 300
        Target vocabulary size (at least 258: the 256 bytes and two specials).

    Returns
    -------
    transformers.PreTrainedTokenizerFast
        Right-padding tokenizer with ``<pad>`` and ``<eos>``.
    """
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers

    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(vocab_size=int(vocab_size), special_tokens=list(_SPECIAL), show_progress=False,
                                  initial_alphabet=pre_tokenizers.ByteLevel.alphabet())
    tok.train_from_iterator(list(texts), trainer=trainer)
    return _wrap(tok)


def tiny_causal_lm(family: str, *, vocab_size: int = 258, hidden_size: int = 64, num_layers: int = 2,
                   num_heads: int = 4, max_positions: int = 256, random_state: RandomStateLike = None) -> Any:
    """A randomly initialised causal LM of one of the supported families.

    Parameters
    ----------
    family : {"llama", "qwen2", "qwen3", "gemma2", "gemma3", "mistral", "phi3", "gpt2"}
        Architecture.
    vocab_size : int, default 258
        Vocabulary size (258 matches :func:`byte_tokenizer`).
    hidden_size : int, default 64
        Residual width ``d``; the MLP width is ``4 d``.
    num_layers : int, default 2
        Decoder layers.
    num_heads : int, default 4
        Attention heads (``hidden_size`` must be divisible by it).
    max_positions : int, default 256
        Longest sequence.
    random_state : None, int or numpy Generator, default None
        Seed of the weight initialisation.

    Returns
    -------
    transformers.PreTrainedModel
        The model in eval mode, float32, eager attention.

    Raises
    ------
    ValueError
        For an unknown family or a width not divisible by the heads.
    """
    import transformers as tf

    size = [Interval(int, 1, None)]
    check_params({"family": family, "vocab_size": vocab_size, "hidden_size": hidden_size, "num_layers": num_layers,
                  "num_heads": num_heads, "max_positions": max_positions, "random_state": random_state},
                 {"family": [Options(str, set(FAMILIES))], "vocab_size": size, "hidden_size": size,
                  "num_layers": size, "num_heads": size, "max_positions": size, "random_state": ["random_state"]},
                 owner="tiny_causal_lm")
    if hidden_size % num_heads:
        raise ValueError(f"hidden_size {hidden_size} is not divisible by num_heads {num_heads}")
    common: dict[str, Any] = {"vocab_size": vocab_size, "pad_token_id": 256 if vocab_size > 256 else None,
              "bos_token_id": None, "eos_token_id": 257 if vocab_size > 257 else None}
    if family == "gpt2":
        config = tf.GPT2Config(n_embd=hidden_size, n_layer=num_layers, n_head=num_heads, n_positions=max_positions,
                               resid_pdrop=0.0, embd_pdrop=0.0, attn_pdrop=0.0, **common)
    else:
        cls = {"llama": tf.LlamaConfig, "qwen2": tf.Qwen2Config, "qwen3": tf.Qwen3Config, "gemma2": tf.Gemma2Config,
               "gemma3": tf.Gemma3TextConfig, "mistral": tf.MistralConfig, "phi3": tf.Phi3Config}[family]
        extra: dict[str, Any] = {"head_dim": hidden_size // num_heads}
        if family in ("gemma2", "gemma3"):
            extra.update(sliding_window=max_positions, query_pre_attn_scalar=hidden_size // num_heads)
        if family in ("mistral", "phi3"):
            extra.update(sliding_window=None)
        if family == "phi3":
            extra.pop("head_dim")
        config = cls(hidden_size=hidden_size, intermediate_size=4 * hidden_size, num_hidden_layers=num_layers,
                     num_attention_heads=num_heads, num_key_value_heads=num_heads,
                     max_position_embeddings=max_positions, tie_word_embeddings=False, **extra, **common)
    config._attn_implementation = "eager"
    seed = int(check_random_state(random_state).integers(2**31 - 1))
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        model = tf.AutoModelForCausalLM.from_config(config, attn_implementation="eager")
    return model.eval()


def load_local_model(path: str | Path, *, dtype: Any = None, device: str | Any = "cpu",
                     attn_implementation: str | None = None) -> tuple[Any, Any]:
    """Load a causal LM and its tokenizer from a local checkpoint folder (no download).

    The folder's ``config.json`` is read first and checked to describe a causal LM that transformers
    knows, and the tokenizer is loaded and checked (it must encode text to tokens), before any weight
    is loaded; the tokenizer gets its eos token as pad token when it has none.

    Parameters
    ----------
    path : str or Path
        Folder with ``config.json``, the weights (safetensors) and the tokenizer files.
    dtype : torch.dtype or str, optional
        Weight dtype (e.g. ``torch.bfloat16`` for a 7B model: about 15 GB); None keeps the checkpoint's.
    device : str or torch.device, default "cpu"
        Where the model is moved after loading.
    attn_implementation : str, optional
        Passed to ``from_pretrained`` (e.g. ``"eager"``, ``"sdpa"``); None lets transformers choose.

    Returns
    -------
    (transformers.PreTrainedModel, transformers tokenizer)
        The model in eval mode, and its tokenizer (right padding).

    Raises
    ------
    FileNotFoundError
        When the folder, its ``config.json`` or its tokenizer files are missing (checked before the weights load).
    ValueError
        For a config that is not a causal LM, a model without a decoder-layer list, a tokenizer that encodes text to no tokens, or one with
        neither pad nor eos token, or weights missing from the checkpoint (e.g. the LM head of a bare trunk,
        which transformers would initialise at random).
    """
    import json

    import transformers as tf

    folder = Path(path)
    if not (folder / "config.json").is_file():
        raise FileNotFoundError(f"{folder} holds no config.json: give the folder of a saved checkpoint")
    kind = json.loads((folder / "config.json").read_text()).get("model_type")
    try:
        config = tf.AutoConfig.from_pretrained(str(folder), local_files_only=True)
    except ValueError as exc:
        raise ValueError(f"unsupported architecture {kind!r} in {folder}: transformers does not know it ({exc})") from None
    if type(config) not in tf.MODEL_FOR_CAUSAL_LM_MAPPING:
        raise ValueError(f"unsupported architecture {kind!r} in {folder}: transformers has no causal LM for it "
                         "(AutoModelForCausalLM)")
    if not any((folder / name).is_file() for name in _TOKENIZER_FILES):
        raise FileNotFoundError(f"{folder} holds no tokenizer files (one of {list(_TOKENIZER_FILES)}): save the "
                                "tokenizer next to the weights (tokenizer.save_pretrained)")
    # the tokenizer first: a folder whose tokenizer cannot encode fails before gigabytes of weights load
    tokenizer = tf.AutoTokenizer.from_pretrained(str(folder), local_files_only=True)
    special = set(tokenizer.all_special_ids)
    if not [i for i in tokenizer("hello world", add_special_tokens=False)["input_ids"] if i not in special]:
        raise ValueError(f"the tokenizer loaded from {folder} encodes text to no tokens (a vocabulary of "
                         f"{len(tokenizer)}): its vocabulary files are missing or unreadable")
    if tokenizer.pad_token_id is None:
        if tokenizer.eos_token is None:
            raise ValueError(f"the tokenizer in {folder} has neither a pad nor an eos token: set tokenizer.pad_token")
        tokenizer.pad_token = tokenizer.eos_token
    tokenizer.padding_side = "right"
    kwargs: dict[str, Any] = {"local_files_only": True}
    if dtype is not None:
        kwargs["dtype"] = dtype
    if attn_implementation is not None:
        kwargs["attn_implementation"] = attn_implementation
    loaded: Any = tf.AutoModelForCausalLM.from_pretrained(str(folder), output_loading_info=True, **kwargs)
    model, info = loaded
    missing = sorted(set(info.get("missing_keys", ())) | {str(k) for k in info.get("mismatched_keys", ())})
    if missing:
        # transformers initialises them at random and only logs it: every logit would be noise
        raise ValueError(f"the checkpoint in {folder} lacks {len(missing)} weight(s) of a causal LM, e.g. "
                         f"{missing[:3]} (a bare trunk or another head?): they would be random")
    from safety_transfer.hooks import decoder_layers

    decoder_layers(model)  # a clear error now rather than at the first hook
    return model.to(device).eval(), tokenizer

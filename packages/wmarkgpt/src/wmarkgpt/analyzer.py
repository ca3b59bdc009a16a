"""``WatermarkAnalyzer``: descriptions and visibility scores of watermarked images from a WMarkGPT model."""

from __future__ import annotations

import re
import warnings
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, cast

import numpy as np
import torch
from icml25_shared.validation import Interval, check_param

from wmarkgpt.data import DESCRIBE_QUESTION
from wmarkgpt.modeling import IMAGE_TOKEN_INDEX, WMarkGPTForCausalLM, output_cache
from wmarkgpt.processing import mplug_owl2_prompt, preprocess_images, tokenizer_image_token
from wmarkgpt.scoring import SCORE_PROMPT_SUFFIX, predict_score, visibility_token_ids

__all__ = ["DEFAULT_MAX_NEW_TOKENS", "GenerationLimitWarning", "WatermarkAnalyzer", "WatermarkReport",
           "parse_visibility"]

DEFAULT_MAX_NEW_TOKENS = 512
"""The official evaluation's generation budget (``max_new_tokens=512`` in ``evaluate/eva.py``)."""


class GenerationLimitWarning(UserWarning):
    """A generated answer reached ``max_new_tokens`` before its end token (its end is cut off)."""


_VIS = re.compile(r"visibility\s+is\s*:?\s*\[?\s*(invisible|faint|moderate|visible|obvious)", re.IGNORECASE)


def parse_visibility(text: str) -> str | None:
    """The level stated after "visibility is:" in a description, else the last level word, else None.

    Parameters
    ----------
    text : str
        A model's description.

    Returns
    -------
    str or None
        One of ``VISIBILITY_LEVELS`` or None.

    Examples
    --------
    >>> parse_visibility("A faint logo. The watermark visibility is: faint.")
    'faint'
    >>> parse_visibility("nothing stated") is None
    True
    """
    m = _VIS.search(text)
    if m:
        return m.group(1).lower()
    words = re.findall(r"invisible|faint|moderate|visible|obvious", text.lower())
    return words[-1] if words else None


@dataclass(frozen=True)
class WatermarkReport:
    """What the model says about one image.

    Attributes
    ----------
    visibility : str or None
        The level parsed from the description (None when the description states none).
    score : float
        The visibility score in [1, 5] (higher = less visible) from one forward pass.
    text : str
        The generated description.
    """

    visibility: str | None
    score: float
    text: str


class WatermarkAnalyzer:
    """Describe watermarks and score their visibility with a WMarkGPT model, without the original image.

    Parameters
    ----------
    model : WMarkGPTForCausalLM
        The model (put in eval mode).
    tokenizer : transformers tokenizer
        Its tokenizer (the five level words must have distinct first sub-tokens).
    image_processor : CLIPImageProcessor
        Its image processor.
    question : str, optional
        The description question (default: one of the official phrasings).
    max_new_tokens : int, default 512
        Longest generated description (the official budget; the released model states the visibility
        last, after a median of about 72 words). Reaching it emits a :class:`GenerationLimitWarning`.

    Examples
    --------
    >>> import numpy as np, torch
    >>> from wmarkgpt import WatermarkAnalyzer
    >>> from wmarkgpt.modeling import WMarkGPTForCausalLM, tiny_config
    >>> from wmarkgpt.processing import build_image_processor, build_word_tokenizer
    >>> tok = build_word_tokenizer(["USER: ASSISTANT: The watermark visibility is: invisible faint moderate "
    ...                              "visible obvious. Describe the watermark in the image, considering its "
    ...                              "location in relation to objects, visual characteristics, and overall"])
    >>> with torch.random.fork_rng(devices=[]):  # seeded weights without reseeding the global RNG
    ...     _ = torch.manual_seed(0)
    ...     model = WMarkGPTForCausalLM(tiny_config(vocab_size=len(tok), image_size=16))
    >>> analyzer = WatermarkAnalyzer(model, tok, build_image_processor(16), max_new_tokens=4)
    >>> scores = analyzer.visibility_score([np.zeros((16, 16, 3), np.uint8)])
    >>> scores.shape, bool(1.0 <= scores[0] <= 5.0)
    ((1,), True)
    """

    def __init__(self, model: WMarkGPTForCausalLM, tokenizer: Any, image_processor: Any, *,
                 question: str = DESCRIBE_QUESTION, max_new_tokens: int = DEFAULT_MAX_NEW_TOKENS) -> None:
        check_param("model", model, [torch.nn.Module], owner="WatermarkAnalyzer")
        check_param("question", question, [str], owner="WatermarkAnalyzer")
        check_param("max_new_tokens", max_new_tokens, [Interval(int, 1, None)], owner="WatermarkAnalyzer")
        self.model = model.eval()
        self.tokenizer = tokenizer
        self.image_processor = image_processor
        self.question = question
        self.max_new_tokens = max_new_tokens
        self.level_ids = visibility_token_ids(tokenizer)

    @classmethod
    def from_pretrained(cls, path: str | Path, *, device_map: Any = None, torch_dtype: Any = None,
                        **kwargs: Any) -> WatermarkAnalyzer:
        """Load model, tokenizer and image processor from one local folder (no hub access).

        Parameters
        ----------
        path : str or path
            A folder written by ``save_pretrained`` of the three (or a released WMarkGPT folder).
        device_map : str, torch.device or dict, optional
            Where the model goes: a device (``"cuda"``, ``"cuda:1"``, ``torch.device``) moves the whole
            model there; a dict or ``"auto"`` is passed to ``from_pretrained`` (needs ``accelerate``).
        torch_dtype : torch.dtype or str, optional
            The weights' dtype (``torch.float16``, ``torch.bfloat16``, ``"auto"``), passed to
            ``from_pretrained``. Inputs follow the model's device and dtype.
        **kwargs
            Passed to :class:`WatermarkAnalyzer`.

        Returns
        -------
        WatermarkAnalyzer
            The analyzer.
        """
        from transformers import AutoTokenizer

        from wmarkgpt.processing import build_image_processor

        load: dict[str, Any] = {"local_files_only": True}
        if torch_dtype is not None:
            load[_dtype_keyword()] = torch_dtype
        if isinstance(device_map, dict) or device_map == "auto":
            load["device_map"] = device_map
        model = WMarkGPTForCausalLM.from_pretrained(path, **load)
        if device_map is not None and not isinstance(device_map, dict) and device_map != "auto":
            model = cast(WMarkGPTForCausalLM, model.to(torch.device(device_map)))  # type: ignore[arg-type]
        tokenizer = AutoTokenizer.from_pretrained(path, local_files_only=True)
        Processor: Any
        try:
            from transformers import CLIPImageProcessorPil as Processor
        except ImportError:
            from transformers import CLIPImageProcessor as Processor
        if (Path(path) / "preprocessor_config.json").is_file():
            processor = Processor.from_pretrained(path, local_files_only=True)
        else:
            processor = build_image_processor(model.config.visual_config["visual_model"]["image_size"])
        return cls(model, tokenizer, processor, **kwargs)

    def _device_dtype(self) -> tuple[torch.device, torch.dtype]:
        """Where inputs go: the input embeddings' device (where a prompt enters) and the float dtype."""
        param = next(self.model.parameters())
        embed = self.model.get_input_embeddings() if hasattr(self.model, "get_input_embeddings") else None
        device = embed.weight.device if embed is not None else param.device
        dtype = next((p.dtype for p in self.model.parameters() if p.is_floating_point()), torch.float32)
        return device, dtype

    def _pixels(self, images: Sequence[Any]) -> torch.Tensor:
        device, dtype = self._device_dtype()
        return preprocess_images(images, self.image_processor).to(device=device, dtype=dtype)

    def _prompt_ids(self, prompt: str, n: int) -> torch.Tensor:
        ids = tokenizer_image_token(prompt, self.tokenizer, image_token_index=IMAGE_TOKEN_INDEX)
        return torch.tensor([ids] * n, dtype=torch.long, device=self._device_dtype()[0])

    @torch.no_grad()
    def visibility_logits(self, images: Sequence[Any], *, batch_size: int = 64) -> np.ndarray:
        """Logits of the five level words after "The watermark visibility is: ".

        Parameters
        ----------
        images : sequence of PIL images or image arrays (see ``processing.to_pil``)
            At least one image.
        batch_size : int, default 64
            Images per forward pass.

        Returns
        -------
        numpy.ndarray, shape (n, 5)
            Logits in ``VISIBILITY_LEVELS`` order.
        """
        _check_batch_size(batch_size)
        pixels = self._pixels(images)
        prompt = mplug_owl2_prompt(self.question) + " " + SCORE_PROMPT_SUFFIX
        out = []
        for start in range(0, pixels.shape[0], batch_size):
            px = pixels[start:start + batch_size]
            logits = self.model(input_ids=self._prompt_ids(prompt, px.shape[0]), images=px).logits[:, -1]
            out.append(logits[:, self.level_ids].double().cpu().numpy())
        return np.concatenate(out)

    def visibility_score(self, images: Sequence[Any], *, batch_size: int = 64) -> np.ndarray:
        """Visibility scores in [1, 5] (5 = invisible) from one forward pass per batch.

        Parameters
        ----------
        images : sequence of PIL images or image arrays (see ``processing.to_pil``)
            At least one image.
        batch_size : int, default 64
            Images per forward pass.

        Returns
        -------
        numpy.ndarray, shape (n,)
            ``sum_k softmax(level logits)_k * (5, 4, 3, 2, 1)_k``.
        """
        return np.asarray(predict_score(self.visibility_logits(images, batch_size=batch_size)), dtype=np.float64)

    @torch.no_grad()
    def generate(self, images: Sequence[Any], question: str | None = None, *, max_new_tokens: int | None = None,
                 batch_size: int = 64) -> list[str]:
        """Greedy answers to ``question`` about each image.

        Parameters
        ----------
        images : sequence of PIL images or image arrays (see ``processing.to_pil``)
            At least one image.
        question : str, optional
            Defaults to the analyzer's description question.
        max_new_tokens : int, optional
            Defaults to the analyzer's.
        batch_size : int, default 64
            Images decoded together.

        Returns
        -------
        list of str
            The decoded answers (special tokens removed).

        Warns
        -----
        GenerationLimitWarning
            When an answer reaches ``max_new_tokens`` without its end token (it is cut off).
        """
        _check_batch_size(batch_size)
        limit = self.max_new_tokens if max_new_tokens is None else max_new_tokens
        check_param("max_new_tokens", limit, [Interval(int, 1, None)], owner="WatermarkAnalyzer.generate")
        pixels = self._pixels(images)
        prompt = mplug_owl2_prompt(self.question if question is None else question)
        eos = self.tokenizer.eos_token_id
        texts: list[str] = []
        n_cut = 0
        for start in range(0, pixels.shape[0], batch_size):
            px = pixels[start:start + batch_size]
            done = torch.zeros(px.shape[0], dtype=torch.bool, device=px.device)
            new: list[torch.Tensor] = []
            # the image and the prompt go through the model once; each step feeds only the newest token
            out = self.model(input_ids=self._prompt_ids(prompt, px.shape[0]), images=px, use_cache=True)
            for step in range(limit):
                nxt = out.logits[:, -1].argmax(-1)
                nxt = torch.where(done, torch.full_like(nxt, eos), nxt)
                new.append(nxt)
                done |= nxt == eos
                if bool(done.all()) or step + 1 == limit:
                    break
                out = self.model(input_ids=nxt[:, None], past_key_values=output_cache(out), use_cache=True)
            gen = torch.stack(new, dim=1)
            for row in gen.tolist():
                n_cut += eos not in row
                row = row[: row.index(eos)] if eos in row else row
                texts.append(self.tokenizer.decode(row, skip_special_tokens=True).strip())
        if n_cut:
            warnings.warn(f"{n_cut} of {len(texts)} answers reached max_new_tokens={limit} before their end token "
                          "and are cut off (a visibility stated last is lost); raise max_new_tokens",
                          GenerationLimitWarning, stacklevel=2)
        return texts

    def describe(self, images: Sequence[Any]) -> list[WatermarkReport]:
        """A description, its stated visibility and the visibility score of each image.

        Parameters
        ----------
        images : sequence of PIL images or image arrays (see ``processing.to_pil``)
            At least one image.

        Returns
        -------
        list of WatermarkReport
            One report per image.
        """
        texts = self.generate(images)
        scores = self.visibility_score(images)
        return [WatermarkReport(parse_visibility(t), float(s), t) for t, s in zip(texts, scores, strict=True)]


def _dtype_keyword() -> str:
    """``from_pretrained``'s name of the dtype argument: ``dtype`` since transformers 4.56, ``torch_dtype`` before."""
    import transformers

    major, minor = (int(x) for x in transformers.__version__.split(".")[:2])
    return "dtype" if (major, minor) >= (4, 56) else "torch_dtype"


def _check_batch_size(batch_size: Any) -> None:
    check_param("batch_size", batch_size, [Interval(int, 1, None)], owner="WatermarkAnalyzer")


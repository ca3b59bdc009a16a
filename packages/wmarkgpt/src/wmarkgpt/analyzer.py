"""``WatermarkAnalyzer``: descriptions and visibility scores of watermarked images from a WMarkGPT model."""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import torch

from wmarkgpt.data import DESCRIBE_QUESTION
from wmarkgpt.modeling import IMAGE_TOKEN_INDEX, WMarkGPTForCausalLM, output_cache
from wmarkgpt.processing import mplug_owl2_prompt, preprocess_images, tokenizer_image_token
from wmarkgpt.scoring import SCORE_PROMPT_SUFFIX, predict_score, visibility_token_ids

__all__ = ["WatermarkAnalyzer", "WatermarkReport", "parse_visibility"]

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
    max_new_tokens : int, default 64
        Longest generated description.

    Examples
    --------
    >>> import numpy as np, torch
    >>> from wmarkgpt import WatermarkAnalyzer
    >>> from wmarkgpt.modeling import WMarkGPTForCausalLM, tiny_config
    >>> from wmarkgpt.processing import build_image_processor, build_word_tokenizer
    >>> tok = build_word_tokenizer(["USER: ASSISTANT: The watermark visibility is: invisible faint moderate "
    ...                              "visible obvious. Describe the watermark in the image, considering its "
    ...                              "location in relation to objects, visual characteristics, and overall"])
    >>> _ = torch.manual_seed(0)
    >>> model = WMarkGPTForCausalLM(tiny_config(vocab_size=len(tok), image_size=16))
    >>> analyzer = WatermarkAnalyzer(model, tok, build_image_processor(16), max_new_tokens=4)
    >>> scores = analyzer.visibility_score([np.zeros((16, 16, 3), np.uint8)])
    >>> scores.shape, bool(1.0 <= scores[0] <= 5.0)
    ((1,), True)
    """

    def __init__(self, model: WMarkGPTForCausalLM, tokenizer: Any, image_processor: Any, *,
                 question: str = DESCRIBE_QUESTION, max_new_tokens: int = 64) -> None:
        if not isinstance(model, torch.nn.Module):
            raise TypeError(f"model must be a torch module, got {type(model).__name__}")
        if isinstance(max_new_tokens, bool) or not isinstance(max_new_tokens, int) or max_new_tokens < 1:
            raise ValueError(f"max_new_tokens must be a positive int, got {max_new_tokens!r}")
        self.model = model.eval()
        self.tokenizer = tokenizer
        self.image_processor = image_processor
        self.question = question
        self.max_new_tokens = max_new_tokens
        self.level_ids = visibility_token_ids(tokenizer)

    @classmethod
    def from_pretrained(cls, path: str | Path, **kwargs: Any) -> WatermarkAnalyzer:
        """Load model, tokenizer and image processor from one local folder (no hub access).

        Parameters
        ----------
        path : str or path
            A folder written by ``save_pretrained`` of the three (or a released WMarkGPT folder).
        **kwargs
            Passed to :class:`WatermarkAnalyzer`.

        Returns
        -------
        WatermarkAnalyzer
            The analyzer.
        """
        from transformers import AutoTokenizer

        from wmarkgpt.processing import build_image_processor

        model = WMarkGPTForCausalLM.from_pretrained(path, local_files_only=True)
        tokenizer = AutoTokenizer.from_pretrained(path, local_files_only=True)
        try:
            from transformers import CLIPImageProcessorPil as Processor
        except ImportError:
            from transformers import CLIPImageProcessor as Processor
        if (Path(path) / "preprocessor_config.json").is_file():
            processor = Processor.from_pretrained(path, local_files_only=True)
        else:
            processor = build_image_processor(model.config.visual_config["visual_model"]["image_size"])
        return cls(model, tokenizer, processor, **kwargs)

    def _pixels(self, images: Sequence[Any]) -> torch.Tensor:
        return preprocess_images(images, self.image_processor)

    def _prompt_ids(self, prompt: str, n: int) -> torch.Tensor:
        ids = tokenizer_image_token(prompt, self.tokenizer, image_token_index=IMAGE_TOKEN_INDEX)
        return torch.tensor([ids] * n, dtype=torch.long)

    @torch.no_grad()
    def visibility_logits(self, images: Sequence[Any], *, batch_size: int = 64) -> np.ndarray:
        """Logits of the five level words after "The watermark visibility is: ".

        Parameters
        ----------
        images : sequence of PIL images or (H, W, 3) uint8 arrays
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
            out.append(logits[:, self.level_ids].double().numpy())
        return np.concatenate(out)

    def visibility_score(self, images: Sequence[Any], *, batch_size: int = 64) -> np.ndarray:
        """Visibility scores in [1, 5] (5 = invisible) from one forward pass per batch.

        Parameters
        ----------
        images : sequence of PIL images or (H, W, 3) uint8 arrays
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
        images : sequence of PIL images or (H, W, 3) uint8 arrays
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
        """
        _check_batch_size(batch_size)
        limit = self.max_new_tokens if max_new_tokens is None else max_new_tokens
        if isinstance(limit, bool) or not isinstance(limit, int) or limit < 1:
            raise ValueError(f"max_new_tokens must be a positive int, got {limit!r}")
        pixels = self._pixels(images)
        prompt = mplug_owl2_prompt(self.question if question is None else question)
        eos = self.tokenizer.eos_token_id
        texts: list[str] = []
        for start in range(0, pixels.shape[0], batch_size):
            px = pixels[start:start + batch_size]
            done = torch.zeros(px.shape[0], dtype=torch.bool)
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
                row = row[: row.index(eos)] if eos in row else row
                texts.append(self.tokenizer.decode(row, skip_special_tokens=True).strip())
        return texts

    def describe(self, images: Sequence[Any]) -> list[WatermarkReport]:
        """A description, its stated visibility and the visibility score of each image.

        Parameters
        ----------
        images : sequence of PIL images or (H, W, 3) uint8 arrays
            At least one image.

        Returns
        -------
        list of WatermarkReport
            One report per image.
        """
        texts = self.generate(images)
        scores = self.visibility_score(images)
        return [WatermarkReport(parse_visibility(t), float(s), t) for t, s in zip(texts, scores, strict=True)]


def _check_batch_size(batch_size: Any) -> None:
    if isinstance(batch_size, bool) or not isinstance(batch_size, int) or batch_size < 1:
        raise ValueError(f"batch_size must be a positive int, got {batch_size!r}")


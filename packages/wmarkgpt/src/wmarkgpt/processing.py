r"""Prompts, tokens and pixels: the "mplug_owl2" template, ``<|image|>`` splicing, ``expand2square``.

The template renders ``USER: {question}\n<|image|> ASSISTANT:`` (system-free, roles joined by a
space, turns closed by ``</s>``). The tiny word-level tokenizer is built in code with ``tokenizers`` so
that nothing is downloaded.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

import numpy as np

__all__ = [
    "IMAGE_TOKEN",
    "build_image_processor",
    "build_word_tokenizer",
    "expand2square",
    "mplug_owl2_prompt",
    "preprocess_images",
    "to_pil",
    "tokenizer_image_token",
]

IMAGE_TOKEN = "<|image|>"
"""The image placeholder in prompts."""

_SPECIALS = ("<pad>", "<s>", "</s>", "<unk>", IMAGE_TOKEN)


def mplug_owl2_prompt(question: str, answer: str | None = None, *, image_first: bool = False) -> str:
    r"""The "mplug_owl2" conversation prompt for one question about one image.

    Parameters
    ----------
    question : str
        The user's question (without the image token).
    answer : str, optional
        The assistant's answer; without it the prompt ends with ``ASSISTANT:`` for generation.
    image_first : bool, default False
        Put ``<|image|>`` before the question (the training JSONs' layout) instead of after it (the
        evaluation scripts' ``question + "\n" + <|image|>``).

    Returns
    -------
    str
        The prompt.

    Examples
    --------
    >>> mplug_owl2_prompt("Describe the watermark.")
    'USER: Describe the watermark.\n<|image|> ASSISTANT:'
    >>> mplug_owl2_prompt("Where?", "Center")
    'USER: Where?\n<|image|> ASSISTANT: Center</s>'
    """
    if not isinstance(question, str) or not question.strip():
        raise ValueError("question must be a non-empty str")
    if IMAGE_TOKEN in question:
        raise ValueError(f"question already contains {IMAGE_TOKEN}; pass the question text only")
    user = f"{IMAGE_TOKEN}{question}" if image_first else f"{question}\n{IMAGE_TOKEN}"
    prompt = f"USER: {user} ASSISTANT:"
    if answer is not None:
        prompt += f" {answer}</s>"
    return prompt


def tokenizer_image_token(prompt: str, tokenizer: Any, *, image_token_index: int = -200) -> list[int]:
    """Token ids of ``prompt`` with exactly one ``<|image|>`` replaced by ``image_token_index``.

    Each text chunk is tokenized on its own; a leading BOS of the first chunk is kept once, as
    mPLUG-Owl2 does.

    Parameters
    ----------
    prompt : str
        A prompt with exactly one ``<|image|>``.
    tokenizer : transformers tokenizer
        Called as ``tokenizer(chunk).input_ids``.
    image_token_index : int, default -200
        The id that marks the image.

    Returns
    -------
    list of int
        The ids.

    Raises
    ------
    ValueError
        When the prompt holds zero or several image tokens.
    """
    if not isinstance(prompt, str):
        raise TypeError(f"prompt must be a str, got {type(prompt).__name__}")
    n = prompt.count(IMAGE_TOKEN)
    if n != 1:
        raise ValueError(f"a prompt needs exactly one {IMAGE_TOKEN} token, got {n}")
    chunks = [tokenizer(c).input_ids if c else [] for c in prompt.split(IMAGE_TOKEN)]
    bos = getattr(tokenizer, "bos_token_id", None)
    ids: list[int] = []
    offset = 0
    if chunks[0] and bos is not None and chunks[0][0] == bos:
        offset = 1
        ids.append(chunks[0][0])
    ids.extend(chunks[0][offset:])
    ids.append(image_token_index)
    second = chunks[1]
    if second and bos is not None and second[0] == bos:
        second = second[1:]
    ids.extend(second)
    return ids


def expand2square(image: Any, background: tuple[int, int, int]) -> Any:
    """Pad a PIL image to a square with ``background``, centring the original.

    Parameters
    ----------
    image : PIL.Image.Image
        The image.
    background : tuple of 3 int
        The fill colour (mPLUG-Owl2 uses the processor's mean times 255).

    Returns
    -------
    PIL.Image.Image
        The square image (the input itself when it is square already).
    """
    from PIL import Image

    w, h = image.size
    if w == h:
        return image
    side = max(w, h)
    out = Image.new(image.mode, (side, side), background)
    out.paste(image, (0, (w - h) // 2) if w > h else ((h - w) // 2, 0))
    return out


_SIXTEEN_BIT_MODES = ("I;16", "I;16B", "I;16L", "I;16N", "I")


def to_pil(image: Any) -> Any:
    """A PIL RGB image from any PIL image or an 8-bit or 16-bit image array.

    PIL modes are converted as ``Image.convert("RGB")`` does (alpha dropped, as the official pipeline's
    ``convert('RGB')``), except where that conversion would be wrong: 16-bit grey modes (``I;16*``, and
    ``I``, which 16-bit PNG files open as) are scaled to 8 bits (``round(v / 257)``) instead of clipped
    at 255, premultiplied ``La`` goes through ``LA``, and floating-point ``F`` images, whose range is not
    defined, are refused.

    Parameters
    ----------
    image : PIL.Image.Image or numpy.ndarray
        A PIL image of any mode, or an array of shape ``(H, W)``, ``(H, W, 1)``, ``(H, W, 3)`` or
        ``(H, W, 4)`` with dtype uint8 or uint16 (uint16 is scaled to 8 bits; a fourth channel is
        dropped).

    Returns
    -------
    PIL.Image.Image
        RGB image.

    Raises
    ------
    TypeError
        When ``image`` is neither.
    ValueError
        When the array has another shape or dtype or is empty, an ``I`` image holds values outside
        [0, 65535], or the image is a floating-point ``F`` image.

    Examples
    --------
    >>> import numpy as np
    >>> from PIL import Image
    >>> grey16 = Image.fromarray(np.full((2, 2), 32896, np.uint16))  # mid-grey in 16 bits, mode I;16
    >>> to_pil(grey16).getpixel((0, 0))
    (128, 128, 128)
    """
    from PIL import Image

    if isinstance(image, Image.Image):
        if image.mode in _SIXTEEN_BIT_MODES:
            values = np.asarray(image).astype(np.int64)
            if values.size and (values.min() < 0 or values.max() > 65535):
                raise ValueError(f"a mode {image.mode!r} image must hold 16-bit values in [0, 65535], got "
                                 f"[{values.min()}, {values.max()}]")
            return Image.fromarray(_sixteen_to_eight(values), "L").convert("RGB")
        if image.mode == "F":
            raise ValueError("a floating-point (mode 'F') image has no defined range; convert it to 8 bits "
                             "(mode 'L' or 'RGB') first")
        if image.mode == "La":
            image = image.convert("LA")
        return image.convert("RGB")
    if isinstance(image, np.ndarray):
        shape_ok = image.ndim == 2 or (image.ndim == 3 and image.shape[2] in (1, 3, 4))
        if not shape_ok or image.dtype not in (np.uint8, np.uint16) or 0 in image.shape:
            raise ValueError("an image array must be (H, W), (H, W, 1), (H, W, 3) or (H, W, 4) with dtype uint8 or "
                             f"uint16, got {image.shape} {image.dtype}")
        pixels = _sixteen_to_eight(image) if image.dtype == np.uint16 else image
        if pixels.ndim == 3:
            pixels = pixels[..., 0] if pixels.shape[2] == 1 else pixels[..., :3]
        if pixels.ndim == 2:
            return Image.fromarray(np.ascontiguousarray(pixels), "L").convert("RGB")
        return Image.fromarray(np.ascontiguousarray(pixels), "RGB")
    raise TypeError(f"an image must be a PIL image or an image array, got {type(image).__name__}")


def _sixteen_to_eight(values: np.ndarray) -> np.ndarray:
    """16-bit values to 8 bits by ``round(v / 257)`` (65535 -> 255, 32896 -> 128)."""
    return np.rint(values.astype(np.float64) / 257.0).astype(np.uint8)


def build_image_processor(image_size: int) -> Any:
    """A CLIP image processor (CLIP mean/std, bicubic resize, centre crop) for ``image_size`` pixels.

    Parameters
    ----------
    image_size : int
        Output side.

    Returns
    -------
    transformers.CLIPImageProcessor
        The processor (the PIL backend when torchvision is absent).
    """
    Processor: Any
    try:
        from transformers import CLIPImageProcessorPil as Processor
    except ImportError:  # older transformers
        from transformers import CLIPImageProcessor as Processor
    return Processor(size={"shortest_edge": image_size}, crop_size={"height": image_size, "width": image_size})


def preprocess_images(images: Sequence[Any], processor: Any) -> Any:
    """``expand2square`` with the processor's mean colour, then the processor: a float tensor batch.

    Parameters
    ----------
    images : sequence of PIL images or uint8 arrays
        At least one image.
    processor : CLIPImageProcessor
        The image processor.

    Returns
    -------
    torch.Tensor, shape (n, 3, S, S)
        Pixel values.

    Raises
    ------
    ValueError
        When ``images`` is empty.
    """
    if isinstance(images, (str, bytes)) or not isinstance(images, Sequence):
        raise TypeError(f"images must be a list of images, got {type(images).__name__}")
    if len(images) == 0:
        raise ValueError("images is empty")
    mean = (int(processor.image_mean[0] * 255), int(processor.image_mean[1] * 255), int(processor.image_mean[2] * 255))
    pils = [expand2square(to_pil(im), mean) for im in images]
    return processor(pils, return_tensors="pt")["pixel_values"]


def build_word_tokenizer(texts: Iterable[str], *, extra_words: Iterable[str] = ()) -> Any:
    """A word-level fast tokenizer over the words and punctuation of ``texts``.

    Words are split on whitespace and punctuation (``tokenizers``' ``Whitespace`` pre-tokenizer) and
    lower-cased; ``<pad>`` = 0, ``<s>`` = 1, ``</s>`` = 2, ``<unk>`` = 3 and ``<|image|>`` = 4 are special.

    Parameters
    ----------
    texts : iterable of str
        Corpus whose tokens form the vocabulary.
    extra_words : iterable of str, optional
        Tokens added even when absent from ``texts``.

    Returns
    -------
    transformers.PreTrainedTokenizerFast
        The tokenizer (adds ``<s>`` at the start of each encoded text).
    """
    from tokenizers import Tokenizer, normalizers, pre_tokenizers, processors
    from tokenizers.models import WordLevel
    from transformers import PreTrainedTokenizerFast

    pre = pre_tokenizers.Whitespace()
    words: dict[str, None] = {}
    for text in [*texts, *extra_words]:
        for tok, _ in pre.pre_tokenize_str(text.lower()):
            words.setdefault(tok, None)
    vocab = {tok: i for i, tok in enumerate(_SPECIALS)}
    for w in sorted(words):
        vocab.setdefault(w, len(vocab))
    tk = Tokenizer(WordLevel(vocab, unk_token="<unk>"))
    tk.normalizer = normalizers.Lowercase()
    tk.pre_tokenizer = pre
    tk.post_processor = processors.TemplateProcessing(single="<s> $A", special_tokens=[("<s>", 1)])
    tk.add_special_tokens(list(_SPECIALS))
    return PreTrainedTokenizerFast(tokenizer_object=tk, pad_token="<pad>", bos_token="<s>", eos_token="</s>",
                                   unk_token="<unk>", additional_special_tokens=[IMAGE_TOKEN])

"""Tokenizers: HELM's default and whitespace tokenizers, lm-eval's janitor normalisation, callables.

Every tokenizer maps a string to a list of string tokens. Overlap is computed on these token lists, so
the tokenizer is part of a methodology: the same corpus gives different numbers under different
tokenizers, and an :class:`~train_test_overlap.OverlapCounts` remembers which one it used.
"""

from __future__ import annotations

import re
import string
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Protocol, runtime_checkable

__all__ = ["HELM_PATTERN", "HelmTokenizer", "JanitorTokenizer", "Tokenizer", "WhitespaceTokenizer", "corpus_tokenize",
           "get_tokenizer"]


@runtime_checkable
class Tokenizer(Protocol):
    """Anything with ``name`` and ``tokenize(text) -> list[str]``.

    A tokenizer may also define ``tokenize_corpus(text)``, the rule for corpus documents when it differs
    from the one for test instances (:class:`JanitorTokenizer` does, as lm-eval's janitor does);
    :func:`corpus_tokenize` picks it.
    """

    @property
    def name(self) -> str:
        """The tokenizer's name (recorded in reports and saved sketches)."""

    def tokenize(self, text: str) -> list[str]:
        """Split ``text`` into tokens."""


class _Rule:
    """Shared ``tokenize`` of the built-in tokenizers: each subclass states its rule in ``_split``."""

    __slots__ = ()
    _split: Callable[[str], list[str]]

    def tokenize(self, text: str) -> list[str]:
        """Split ``text`` into tokens by this tokenizer's rule (the class docstring states it).

        Parameters
        ----------
        text : str
            Any text.

        Returns
        -------
        list of str
            The tokens (HELM's tokenizer keeps its empty-string edge tokens).
        """
        return self._split(text)


@dataclass(frozen=True)
class HelmTokenizer(_Rule):
    """HELM's ``DefaultTokenizer``: lower-case, then split on runs of whitespace and ASCII punctuation.

    The split keeps HELM's edge effect: text that starts or ends with whitespace or punctuation gives an
    empty-string token at that end (``"models."`` -> ``["models", ""]``), and the empty text gives
    ``[""]``. ``str.lower`` is Python's full Unicode lower-casing; non-ASCII punctuation (e.g. an em dash)
    is not a separator.

    Examples
    --------
    >>> HelmTokenizer().tokenize("THis ,,iS a SiMPlE t-EsT cAsE")
    ['this', 'is', 'a', 'simple', 't', 'est', 'case']
    >>> HelmTokenizer().tokenize("(CRFM) models.")
    ['', 'crfm', 'models', '']
    """

    name: str = "helm-default"

    def _split(self, text: str) -> list[str]:
        # Same output as HELM's re.split(r"[\s<punctuation>]+", text.lower()), about 1.5x faster: ASCII
        # punctuation becomes a space, str.split() splits on the same Unicode whitespace as re's \s, and
        # the empty edge tokens are put back where the text starts or ends with a separator.
        low = text.lower()
        if not low:
            return [""]
        tokens = low.translate(_PUNCT_TO_SPACE).split()
        if low[0] in _PUNCT or low[0].isspace():
            tokens.insert(0, "")
        if low[-1] in _PUNCT or low[-1].isspace():
            tokens.append("")
        return tokens


HELM_PATTERN = re.compile(rf"[\s{re.escape(string.punctuation)}]+")
"""HELM's separator pattern: ``HELM_PATTERN.split(text.lower())`` is HELM's tokenization."""
_PUNCT = frozenset(string.punctuation)
_PUNCT_TO_SPACE = str.maketrans(dict.fromkeys(string.punctuation, " "))


@dataclass(frozen=True)
class WhitespaceTokenizer(_Rule):
    """HELM's ``LightTokenizer`` (``normalization="none"``): ``str.split()``, case and punctuation kept.

    Examples
    --------
    >>> WhitespaceTokenizer().tokenize("  THis ,,iS  a test ")
    ['THis', ',,iS', 'a', 'test']
    """

    name: str = "whitespace"

    def _split(self, text: str) -> list[str]:
        return text.split()


_JANITOR_TABLE = str.maketrans(string.ascii_lowercase + string.ascii_uppercase, string.ascii_lowercase * 2,
                               string.punctuation)


@dataclass(frozen=True)
class JanitorTokenizer(_Rule):
    """lm-evaluation-harness's ``Janitor`` normalisation (the GPT-3 decontamination rule).

    Test side (``tokenize``, the janitor's ``register_contaminant``): ASCII letters are lower-cased (other
    letters are kept as they are), ASCII punctuation is deleted (so ``"don't"`` becomes ``"dont"``, unlike
    HELM's split), then the text is split on whitespace. The janitor's n-grams are these tokens joined by
    single spaces.

    Corpus side (``tokenize_corpus``, the janitor's ``clean``): the text is split on whitespace *first* and
    each token normalised the same way, so a stand-alone punctuation token (``"-"``, ``"..."``) becomes an
    empty token that no test n-gram contains: ``"dirty boy . Clean"`` does not contain the registered
    3-gram ``"dirty boy clean"``, exactly as lm-eval's ``Janitor.clean_python`` decides.

    Examples
    --------
    >>> JanitorTokenizer().tokenize("I'm a VERY !dirty,, ÉCOLE")
    ['im', 'a', 'very', 'dirty', 'École']
    >>> JanitorTokenizer().tokenize_corpus("dirty boy . Clean")
    ['dirty', 'boy', '', 'clean']
    """

    name: str = "janitor"

    def _split(self, text: str) -> list[str]:
        return text.translate(_JANITOR_TABLE).split()

    def tokenize_corpus(self, text: str) -> list[str]:
        """Split a corpus document as ``Janitor.clean`` does: split on whitespace, then normalise each token.

        Parameters
        ----------
        text : str
            A corpus document.

        Returns
        -------
        list of str
            One token per whitespace-separated word; stand-alone punctuation gives ``""``.
        """
        return [word.translate(_JANITOR_TABLE) for word in text.split()]


@dataclass(frozen=True)
class CallableTokenizer(_Rule):
    """A user function ``str -> list[str]`` under a name (the name goes into reports and saved sketches).

    ``tokenize`` raises ``TypeError`` when the function returns anything but a list of str.
    """

    function: Callable[[str], list[str]]
    name: str

    def _split(self, text: str) -> list[str]:
        tokens = self.function(text)
        if not isinstance(tokens, list) or (tokens and not isinstance(tokens[0], str)):
            raise TypeError(f"tokenizer {self.name!r} must return a list of str, got {type(tokens).__name__}"
                            + (f" of {type(tokens[0]).__name__}" if isinstance(tokens, list) else ""))
        return tokens


_NAMED: dict[str, Callable[[], Any]] = {"helm-default": HelmTokenizer, "whitespace": WhitespaceTokenizer,
                                        "janitor": JanitorTokenizer}


def corpus_tokenize(tokenizer: Tokenizer) -> Callable[[str], list[str]]:
    """The function that splits corpus documents: ``tokenizer.tokenize_corpus`` when defined, else ``tokenize``.

    Parameters
    ----------
    tokenizer : Tokenizer
        A resolved tokenizer (:func:`get_tokenizer`).

    Returns
    -------
    callable
        ``str -> list[str]``.
    """
    return getattr(tokenizer, "tokenize_corpus", tokenizer.tokenize)


def get_tokenizer(tokenizer: str | Tokenizer | Callable[[str], list[str]] | Any) -> Tokenizer:
    """Resolve a tokenizer specification.

    Parameters
    ----------
    tokenizer : str, Tokenizer, callable or transformers tokenizer
        ``"helm-default"``, ``"whitespace"`` or ``"janitor"``; an object with ``name`` and ``tokenize``;
        a Hugging Face tokenizer (an object with ``tokenize`` and ``name_or_path``, e.g. one loaded with
        ``AutoTokenizer.from_pretrained(path, local_files_only=True)``); or a function ``str -> list[str]``
        (named after the function).

    Returns
    -------
    Tokenizer
        An object with ``name`` and ``tokenize``.

    Raises
    ------
    ValueError
        For an unknown name (the message lists the accepted names).
    TypeError
        For anything else.
    """
    if isinstance(tokenizer, str):
        if tokenizer not in _NAMED:
            raise ValueError(f"unknown tokenizer {tokenizer!r}; accepted names: {sorted(_NAMED)}, "
                             "a Tokenizer object, a transformers tokenizer or a function str -> list[str]")
        return _NAMED[tokenizer]()
    if hasattr(tokenizer, "tokenize") and hasattr(tokenizer, "name_or_path"):  # transformers
        return CallableTokenizer(tokenizer.tokenize, f"hf:{tokenizer.name_or_path or type(tokenizer).__name__}")
    if isinstance(tokenizer, Tokenizer):
        return tokenizer
    if callable(tokenizer):
        return CallableTokenizer(tokenizer, getattr(tokenizer, "__qualname__", "callable"))
    raise TypeError(f"tokenizer must be a name, a Tokenizer or a function str -> list[str], got {type(tokenizer).__name__}")

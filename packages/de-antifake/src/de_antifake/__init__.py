"""Stress-testing voice-cloning protections: protect, purify (diffusion + phoneme-guided refinement), clone and verify.

The public API is listed in ``__all__``; torch-based modules are imported on first use.
"""

from __future__ import annotations

import importlib
from importlib.metadata import PackageNotFoundError, version
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from de_antifake.audio import SAMPLE_RATE, as_mono, snr_db
    from de_antifake.corpus import Corpus, SpeakerParams, Utterance, make_corpus, pronounce, read_textgrid, synthesize
    from de_antifake.encoder import MelFrontEnd, ResemblyzerEncoder, eer_threshold

try:
    __version__ = version("de-antifake")
except PackageNotFoundError:  # source tree without install
    __version__ = "0.0.0"

_EXPORTS = {
    "SAMPLE_RATE": "audio", "as_mono": "audio", "snr_db": "audio",
    "Corpus": "corpus", "SpeakerParams": "corpus", "Utterance": "corpus", "make_corpus": "corpus",
    "pronounce": "corpus", "read_textgrid": "corpus", "synthesize": "corpus",
    "MelFrontEnd": "encoder", "ResemblyzerEncoder": "encoder", "eer_threshold": "encoder",
}

__all__ = sorted([*_EXPORTS, "__version__"])


def __getattr__(name: str):
    if name in _EXPORTS:
        return getattr(importlib.import_module(f"de_antifake.{_EXPORTS[name]}"), name)
    raise AttributeError(f"module 'de_antifake' has no attribute {name!r}")

"""Stress-testing voice-cloning protections: protect, purify (diffusion + phoneme-guided refinement), clone and verify.

The public API is listed in ``__all__``; torch-based modules are imported on first use.
"""

from __future__ import annotations

import importlib
from importlib.metadata import PackageNotFoundError, version
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from de_antifake.audio import SAMPLE_RATE, as_mono, snr_db
    from de_antifake.clone import ParameterCloner, SpeakerVerifier, VoiceCloner, embed_batch
    from de_antifake.corpus import Corpus, SpeakerParams, Utterance, make_corpus, pronounce, read_textgrid, synthesize
    from de_antifake.datasets import (
        SpeechCorpus,
        festival_voices,
        read_audio,
        read_librispeech,
        read_vctk,
        synthesize_festival,
    )
    from de_antifake.diffusion import (
        DiffusionSchedule,
        DiffWave,
        DiffWaveConfig,
        DiffWavePurifier,
        load_purification_pkl,
        save_purification_pkl,
        train_diffwave,
    )
    from de_antifake.dvector import DVectorConfig, DVectorEncoder, DVectorResult, ge2e_loss, train_dvector
    from de_antifake.ecapa import ECAPATDNN, ECAPAEncoder, SpeechbrainFbank, load_ecapa, save_ecapa
    from de_antifake.encoder import MelFrontEnd, ResemblyzerEncoder, eer_threshold
    from de_antifake.phoneme import PhonemeSpectra, alignment_from_intervals, alignment_from_words
    from de_antifake.protect import attackvc
    from de_antifake.purifiers import (
        AveragePurifier,
        BandPassPurifier,
        CodecPurifier,
        DownsamplePurifier,
        LowPassPurifier,
        MedianPurifier,
        Purifier,
        available_codecs,
    )
    from de_antifake.refiner import PhonemeGuidedRefiner, PhonePuRe, load_refinement_ckpt, save_refinement_ckpt
    from de_antifake.retrain import RetrainResult, retrain
    from de_antifake.weights import load_weights, shipped_weights

try:
    __version__ = version("de-antifake")
except PackageNotFoundError:  # source tree without install
    __version__ = "0.0.0"

_EXPORTS = {
    "SAMPLE_RATE": "audio", "as_mono": "audio", "snr_db": "audio",
    "Corpus": "corpus", "SpeakerParams": "corpus", "Utterance": "corpus", "make_corpus": "corpus",
    "pronounce": "corpus", "read_textgrid": "corpus", "synthesize": "corpus",
    "MelFrontEnd": "encoder", "ResemblyzerEncoder": "encoder", "eer_threshold": "encoder",
    "SpeechCorpus": "datasets", "read_audio": "datasets", "read_librispeech": "datasets", "read_vctk": "datasets",
    "festival_voices": "datasets", "synthesize_festival": "datasets",
    "DVectorConfig": "dvector", "DVectorEncoder": "dvector", "DVectorResult": "dvector", "ge2e_loss": "dvector",
    "train_dvector": "dvector",
    "ECAPAEncoder": "ecapa", "ECAPATDNN": "ecapa", "SpeechbrainFbank": "ecapa", "load_ecapa": "ecapa",
    "save_ecapa": "ecapa",
    "ParameterCloner": "clone", "SpeakerVerifier": "clone", "VoiceCloner": "clone", "embed_batch": "clone",
    "DiffusionSchedule": "diffusion", "DiffWave": "diffusion", "DiffWaveConfig": "diffusion",
    "DiffWavePurifier": "diffusion", "load_purification_pkl": "diffusion", "save_purification_pkl": "diffusion",
    "train_diffwave": "diffusion",
    "PhonemeSpectra": "phoneme", "alignment_from_intervals": "phoneme", "alignment_from_words": "phoneme",
    "attackvc": "protect",
    "AveragePurifier": "purifiers", "BandPassPurifier": "purifiers", "CodecPurifier": "purifiers",
    "DownsamplePurifier": "purifiers", "LowPassPurifier": "purifiers", "MedianPurifier": "purifiers",
    "Purifier": "purifiers", "available_codecs": "purifiers",
    "PhonemeGuidedRefiner": "refiner", "PhonePuRe": "refiner", "load_refinement_ckpt": "refiner",
    "save_refinement_ckpt": "refiner",
    "load_weights": "weights", "shipped_weights": "weights", "retrain": "retrain", "RetrainResult": "retrain",
}

__all__ = [
    "AveragePurifier",
    "BandPassPurifier",
    "CodecPurifier",
    "Corpus",
    "DVectorConfig",
    "DVectorEncoder",
    "DVectorResult",
    "DiffWave",
    "DiffWaveConfig",
    "DiffWavePurifier",
    "DiffusionSchedule",
    "DownsamplePurifier",
    "ECAPAEncoder",
    "ECAPATDNN",
    "LowPassPurifier",
    "MedianPurifier",
    "MelFrontEnd",
    "ParameterCloner",
    "PhonePuRe",
    "PhonemeGuidedRefiner",
    "PhonemeSpectra",
    "Purifier",
    "ResemblyzerEncoder",
    "RetrainResult",
    "SAMPLE_RATE",
    "SpeakerParams",
    "SpeakerVerifier",
    "SpeechCorpus",
    "SpeechbrainFbank",
    "Utterance",
    "VoiceCloner",
    "__version__",
    "alignment_from_intervals",
    "alignment_from_words",
    "as_mono",
    "attackvc",
    "available_codecs",
    "eer_threshold",
    "embed_batch",
    "festival_voices",
    "ge2e_loss",
    "load_ecapa",
    "load_purification_pkl",
    "load_refinement_ckpt",
    "load_weights",
    "make_corpus",
    "pronounce",
    "read_audio",
    "read_librispeech",
    "read_textgrid",
    "read_vctk",
    "retrain",
    "save_ecapa",
    "save_purification_pkl",
    "save_refinement_ckpt",
    "shipped_weights",
    "snr_db",
    "synthesize",
    "synthesize_festival",
    "train_diffwave",
    "train_dvector",
]


def __getattr__(name: str):
    if name in _EXPORTS:
        return getattr(importlib.import_module(f"de_antifake.{_EXPORTS[name]}"), name)
    raise AttributeError(f"module 'de_antifake' has no attribute {name!r}")

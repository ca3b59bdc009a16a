"""Retrain the purifier on your own recordings: ``python -m de_antifake train --data DIR``.

The shipped tiny weights were trained on the synthetic corpus and damage real speech; this trains the
stage-1 DiffWave and the unguided refiner on the audio files of a folder (WAV; FLAC and others with
the ``data`` extra), with progress reports and stage-1 checkpoints, into a weights folder that
:func:`~de_antifake.diffusion.load_purification_pkl` and
:func:`~de_antifake.refiner.load_refinement_ckpt` read.
"""

from __future__ import annotations

import argparse
import logging
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

__all__ = ["AUDIO_SUFFIXES", "RetrainResult", "load_folder", "main", "retrain"]

log = logging.getLogger(__name__)

AUDIO_SUFFIXES = (".wav", ".flac", ".ogg", ".mp3")
"""File suffixes read from the data folder (all but WAV need the ``data`` extra)."""


@dataclass(frozen=True)
class RetrainResult:
    """What :func:`retrain` wrote.

    Attributes
    ----------
    out : str
        The weights folder (``purification.pkl``, ``config.json``, ``refinement_unguided.ckpt``).
    n_files, n_clips : int
        Audio files read and training clips cut from them.
    stage1_losses, refiner_losses : list of float
        Loss after every optimiser step.
    checkpoints : list of str
        Stage-1 checkpoints written during training (``checkpoints/stage1_step<N>.pkl``).
    seconds : float
        Wall time.
    """

    out: str
    n_files: int
    n_clips: int
    stage1_losses: list[float] = field(repr=False)
    refiner_losses: list[float] = field(repr=False)
    checkpoints: list[str]
    seconds: float


def load_folder(data: str | Path, *, seconds: float = 2.0) -> tuple[np.ndarray, int]:
    """Cut every audio file under ``data`` (recursively) into clips of ``seconds`` at 16 kHz.

    Parameters
    ----------
    data : str or path
        A folder of audio files (:data:`AUDIO_SUFFIXES`).
    seconds : float, default 2.0
        Clip length; a file's remainder shorter than a clip is dropped.

    Returns
    -------
    clips : numpy.ndarray, shape (n_clips, seconds * 16000), float32
        The clips.
    n_files : int
        Files read.

    Raises
    ------
    FileNotFoundError
        When ``data`` is not a folder.
    ValueError
        When it holds no audio file, or no file is as long as one clip.
    """
    from icml25_shared.validation import Interval, check_param

    from de_antifake.datasets import read_audio

    check_param("seconds", seconds, [Interval(float, 0.1, None)], owner="load_folder")
    folder = Path(data)
    if not folder.is_dir():
        raise FileNotFoundError(f"training data folder not found: {folder}")
    files = sorted(p for p in folder.rglob("*") if p.suffix.lower() in AUDIO_SUFFIXES and p.is_file())
    if not files:
        raise ValueError(f"{folder} holds no audio file ({', '.join(AUDIO_SUFFIXES)})")
    n = int(round(seconds * 16000))
    clips: list[np.ndarray] = []
    for path in files:
        wav = read_audio(path)
        clips.extend(wav[i:i + n] for i in range(0, len(wav) - n + 1, n))
    if not clips:
        raise ValueError(f"no file in {folder} lasts {seconds} s (one training clip); record longer files or pass "
                         "a shorter --seconds")
    return np.stack(clips).astype(np.float32), len(files)


def retrain(data: str | Path, out: str | Path, *, seconds: float = 2.0, stage1_steps: int = 450,
            refiner_steps: int = 150, checkpoint_every: int = 100, random_state=0,
            report: Callable[[str, int, int, float], None] | None = None) -> RetrainResult:
    """Train stage 1 (DiffWave, t* = 3) and the unguided refiner on a folder of recordings.

    The sizes are those of the shipped tiny weights (DiffWave 8 x 32 at peak level 0.95, refiner of 8
    channels x 3 layers); the defaults are the quick budget of ``reproduce`` (the protocol's full budget
    is 3000 and 2000 steps).

    Parameters
    ----------
    data : str or path
        Folder of audio files (see :func:`load_folder`).
    out : str or path
        Weights folder to write (created; existing files of the same names are replaced).
    seconds : float, default 2.0
        Clip length.
    stage1_steps, refiner_steps : int
        Optimiser steps of each model.
    checkpoint_every : int, default 100
        Write the averaged stage-1 weights every this many steps to ``out/checkpoints``.
    random_state : None, int or Generator
        Crops, noise and initial weights.
    report : callable, optional
        ``report(stage, step, total, loss)`` after every step (``stage`` is "stage 1" or "refiner").

    Returns
    -------
    RetrainResult
        Files, losses and checkpoints.

    Examples
    --------
    >>> import tempfile, numpy as np
    >>> from pathlib import Path
    >>> from scipy.io import wavfile
    >>> data, out = Path(tempfile.mkdtemp()), Path(tempfile.mkdtemp())
    >>> wavfile.write(data / "a.wav", 16000, (0.1 * np.random.default_rng(0).standard_normal(40000)).astype(np.float32))
    >>> res = retrain(data, out, seconds=1.0, stage1_steps=2, refiner_steps=2, checkpoint_every=1)
    >>> res.n_clips, len(res.checkpoints), sorted(p.name for p in out.iterdir())
    (2, 2, ['checkpoints', 'config.json', 'purification.pkl', 'refinement_unguided.ckpt'])
    """
    from icml25_shared.random import check_random_state
    from icml25_shared.validation import Interval, check_params

    from de_antifake.diffusion import DiffWavePurifier, save_purification_pkl, train_diffwave
    from de_antifake.experiments import _DW_LR, STAGE1, STAGE1_PEAK
    from de_antifake.refiner import PhonemeGuidedRefiner, save_refinement_ckpt

    check_params({"stage1_steps": stage1_steps, "refiner_steps": refiner_steps, "checkpoint_every": checkpoint_every,
                  "random_state": random_state},
                 {"stage1_steps": [Interval(int, 1, None)], "refiner_steps": [Interval(int, 1, None)],
                  "checkpoint_every": [Interval(int, 1, None)], "random_state": ["random_state"]}, owner="retrain")
    t0 = time.perf_counter()
    clips, n_files = load_folder(data, seconds=seconds)
    out = Path(out)
    (out / "checkpoints").mkdir(parents=True, exist_ok=True)
    rng = check_random_state(random_state)
    stage1_losses: list[float] = []
    checkpoints: list[str] = []

    def on_stage1(step: int, loss: float, averaged) -> None:
        stage1_losses.append(loss)
        if report is not None:
            report("stage 1", step, stage1_steps, loss)
        if step % checkpoint_every == 0 or step == stage1_steps:
            path = save_purification_pkl(averaged(), out / "checkpoints" / f"stage1_step{step}.pkl")
            checkpoints.append(str(path))

    dw = train_diffwave(clips, config=STAGE1, steps=stage1_steps, max_t=5, lr=_DW_LR, segment=min(1024, clips.shape[1]),
                        batch_size=16, peak=STAGE1_PEAK, random_state=rng, callback=on_stage1)
    save_purification_pkl(dw, out / "purification.pkl")
    # the refiner learns to undo stage 1 on lightly noised clean clips, as in reproduce
    stage1_t5 = DiffWavePurifier(dw, t=5, peak=STAGE1_PEAK, random_state=rng)
    noisy = clips + 0.005 * rng.standard_normal(clips.shape).astype(np.float32)
    purified = np.stack([stage1_t5.purify(x, 16000) for x in noisy])
    refiner_losses: list[float] = []

    def on_refiner(step: int, loss: float) -> None:
        refiner_losses.append(loss)
        if report is not None:
            report("refiner", step, refiner_steps, loss)

    refiner = PhonemeGuidedRefiner(use_text=False, random_state=rng, channels=8, layers=3).fit(
        clips, purified, steps=refiner_steps, callback=on_refiner)
    save_refinement_ckpt(refiner, out / "refinement_unguided.ckpt")
    return RetrainResult(str(out), n_files, len(clips), stage1_losses, refiner_losses, checkpoints,
                         time.perf_counter() - t0)


def main(argv: list[str]) -> int:
    """``python -m de_antifake train --data DIR [--out DIR] ...``: retrain and report progress on stderr.

    Parameters
    ----------
    argv : list of str
        The arguments after ``train``.

    Returns
    -------
    int
        0 on success, 1 when the data folder cannot be used (the reason is printed).
    """
    import sys

    parser = argparse.ArgumentParser(prog="python -m de_antifake train",
                                     description="Retrain stage 1 and the unguided refiner on a folder of recordings.")
    parser.add_argument("--data", required=True, help="folder of audio files (WAV; FLAC etc. with the data extra)")
    parser.add_argument("--out", default="out/de_antifake/weights", help="weights folder to write")
    parser.add_argument("--seconds", type=float, default=2.0, help="training clip length")
    parser.add_argument("--stage1-steps", type=int, default=450)
    parser.add_argument("--refiner-steps", type=int, default=150)
    parser.add_argument("--checkpoint-every", type=int, default=100)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    last = {"t": 0.0}

    def report(stage: str, step: int, total: int, loss: float) -> None:
        now = time.perf_counter()
        if step == total or step == 1 or now - last["t"] > 2.0:
            last["t"] = now
            print(f"{stage}: step {step}/{total} loss {loss:.4f}", file=sys.stderr, flush=True)

    try:
        res = retrain(args.data, args.out, seconds=args.seconds, stage1_steps=args.stage1_steps,
                      refiner_steps=args.refiner_steps, checkpoint_every=args.checkpoint_every,
                      random_state=args.seed, report=report)
    except (FileNotFoundError, ValueError, ImportError) as err:
        print(f"train: {err}", file=sys.stderr)
        return 1
    print(f"wrote {res.out} ({res.n_clips} clips from {res.n_files} files, {len(res.checkpoints)} stage-1 "
          f"checkpoints, {res.seconds:.0f} s)")
    return 0

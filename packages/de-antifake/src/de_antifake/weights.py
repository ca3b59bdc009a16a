"""The trained purifier weights: the tiny set shipped with the package and any folder in its layout."""

from __future__ import annotations

from pathlib import Path

__all__ = ["STAGE1_PEAK", "WEIGHT_FILES", "load_weights", "shipped_weights"]

STAGE1_PEAK = 0.95
"""Peak level (``max |x|``) at which the tiny DiffWave is trained and purifies (``peak=`` of both)."""

WEIGHT_FILES = ("purification.pkl", "config.json", "refinement.ckpt", "refinement_unguided.ckpt")
"""The files of a weights folder written by ``run_chain(save_to=...)`` and read by ``demo``."""


def shipped_weights() -> Path:
    """The folder of tiny weights shipped in the package (made by ``reproduce --quick``, seed 0)."""
    return Path(__file__).resolve().parent / "data" / "weights"


def load_weights(folder: str | Path, *, random_state=None):
    """Stage 1 at ``t* = 3`` and the guided and unguided refiners from a weights folder.

    Parameters
    ----------
    folder : str or path
        A folder of :data:`WEIGHT_FILES` (e.g. :func:`shipped_weights`, or ``reproduce``'s ``weights``).
    random_state : None, int or Generator
        Noise of the purifiers.

    Returns
    -------
    stage1 : DiffWavePurifier
        At ``t = 3`` and ``peak = STAGE1_PEAK``.
    guided, unguided : PhonemeGuidedRefiner
    """
    from de_antifake.diffusion import DiffWavePurifier, load_purification_pkl
    from de_antifake.refiner import load_refinement_ckpt

    folder = Path(folder)
    dw, schedule = load_purification_pkl(folder / "purification.pkl")
    stage1 = DiffWavePurifier(dw, schedule=schedule, t=3, peak=STAGE1_PEAK, random_state=random_state)
    guided = load_refinement_ckpt(folder / "refinement.ckpt", random_state=random_state)
    plain = load_refinement_ckpt(folder / "refinement_unguided.ckpt", random_state=random_state)
    return stage1, guided, plain

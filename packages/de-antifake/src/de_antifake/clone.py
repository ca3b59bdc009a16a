"""The cloning stand-in and the verification metrics: reference -> embedding -> voice -> new text.

:class:`ParameterCloner` regresses the synthesiser's :class:`~de_antifake.corpus.SpeakerParams` from a
speaker embedding (ridge regression on standardised embeddings, fitted on clean data), refines the voice
by analysis by synthesis and speaks new text with it: the causal chain of a zero-shot VC system
(reference audio -> speaker embedding -> cloned voice). Real VC systems plug in through the :class:`VoiceCloner` protocol.
:class:`SpeakerVerifier` enrols speakers (centroid of clean embeddings) and accepts a trial when its
cosine with the claimed speaker's centroid reaches the clean-trial EER threshold.
"""

from __future__ import annotations

from typing import Protocol, runtime_checkable

import numpy as np
import torch
from icml25_shared.random import check_random_state

from de_antifake.audio import _float_samples, _not_fitted, as_mono
from de_antifake.corpus import SpeakerParams, _word_list, plan_utterance, synthesize
from de_antifake.encoder import eer_threshold

__all__ = ["ParameterCloner", "SpeakerVerifier", "VoiceCloner", "embed_batch"]

_BATCH = 16  # candidate voices rendered and embedded at a time by the voice search


@runtime_checkable
class VoiceCloner(Protocol):
    """A voice-cloning system: speak ``words`` in the voice of ``reference``."""

    def clone(self, reference, sr: int, words, *, random_state=None) -> np.ndarray:
        """Return 16 kHz samples of ``words`` in the reference speaker's voice."""
        ...


@torch.no_grad()
def embed_batch(encoder, waveforms, *, batch_size: int = 16) -> np.ndarray:
    """Embeddings ``(n, d)`` of equal-length float waveforms ``(n, samples)`` (integer PCM and NaN are refused)."""
    x = torch.as_tensor(_float_samples(waveforms, name="waveforms"))
    return torch.cat([encoder.embed(x[i:i + batch_size]).cpu() for i in range(0, len(x), batch_size)]).numpy()


def _number(value) -> float | None:
    """``value`` as a finite float, or ``None`` for anything else (strings, booleans, arrays, NaN, inf, None)."""
    if isinstance(value, (bool, np.bool_, str, bytes)) or np.ndim(value) != 0:
        return None
    try:
        out = float(value)
    except (TypeError, ValueError):
        return None
    return out if np.isfinite(out) else None


def _whole(value, name: str, low: int, what: str) -> int:
    """``value`` as an int ``>= low``, or a ValueError naming the parameter."""
    v = _number(value)
    if v is None or v != int(v) or v < low:
        raise ValueError(f"{name} must be {what}, got {value!r}")
    return int(v)


class ParameterCloner:
    """Embedding -> synthesiser parameters (ridge, then analysis by synthesis) -> new text.

    The ridge regression gives a first voice; a random search then renders candidate voices speaking
    the clone's own text and keeps the one whose embedding is closest (cosine) to the reference's, as a
    VC system that matches its output to the reference speaker would.

    Parameters
    ----------
    encoder : module
        Speaker encoder with ``embed``; the search scores candidates with it.
    alpha : float, default 1.0
        Ridge penalty on standardised embeddings.
    n_frames : int, default 500
        Length of the cloned utterances in 128-sample frames (4 s); silence fills the clip after the last
        word (six words take about 1.6 s). Shorter clones are verified less reliably: with the pretrained
        GE2E, even clones in the speaker's true voice passed SV at the clean EER threshold 0.77 of the time
        as 2 s clips of 3 words (6 seeds), 0.92 as 4 s clips of 6 words.
    search_rounds : int, default 2
        Rounds of the voice search (0: the ridge voice alone). Each round draws ``search_candidates - 1``
        voices around the best so far, with steps of the training voices' spread, halved every round.
    search_candidates : int, default 8
        Voices rendered per round, the best so far included.

    Examples
    --------
    >>> import numpy as np
    >>> from de_antifake import ParameterCloner, SpeakerParams
    >>> voices = [SpeakerParams(f0=100.0, formant_scale=0.9, tilt=0.3),
    ...           SpeakerParams(f0=220.0, formant_scale=1.2, tilt=0.6)]
    >>> cloner = ParameterCloner(None, alpha=1e-6, search_rounds=0).fit(np.eye(2), voices)
    >>> round(cloner.predict_params(np.eye(2)[1])[0].f0)
    220
    >>> cloner.clone_from_embedding(np.eye(2)[1], ["water", "world"], random_state=0).shape
    (64000,)
    """

    def __init__(self, encoder, *, alpha: float = 1.0, n_frames: int = 500, search_rounds: int = 2,
                 search_candidates: int = 8) -> None:
        penalty = _number(alpha)
        if penalty is None or not penalty >= 0:
            raise ValueError(f"alpha must be a finite ridge penalty >= 0, got {alpha!r}")
        self.encoder = encoder
        self.alpha = alpha
        self.n_frames = _whole(n_frames, "n_frames", 1, "a positive whole number of 128-sample frames")
        self.search_rounds = _whole(search_rounds, "search_rounds", 0, "a whole number of rounds >= 0")
        self.search_candidates = _whole(search_candidates, "search_candidates", 2,
                                        "a whole number of voices per round >= 2")

    def fit(self, embeddings, params) -> ParameterCloner:
        """Fit on clean embeddings ``(n, d)`` and their speakers' ``SpeakerParams`` (or ``to_vector()`` rows ``(n, 6)``)."""
        e = np.asarray(embeddings, dtype=np.float64)
        y = np.array([p.to_vector() if isinstance(p, SpeakerParams) else np.asarray(p, float) for p in params])
        if e.ndim != 2 or y.ndim != 2 or y.shape[1] != 6:
            raise ValueError(f"need embeddings (n, d) and voices (n, 6), got shapes {e.shape} and {y.shape}")
        if len(e) != len(y) or len(e) < 2:
            raise ValueError(f"need >= 2 matching rows, got {len(e)} embeddings and {len(y)} targets")
        if not (np.isfinite(e).all() and np.isfinite(y).all()):
            raise ValueError("embeddings or voices hold NaN or inf")
        lo, hi = np.array([np.log(70.0), 0.75, 0, 0, 0, 0]), np.array([np.log(300.0), 1.35, 0.99, 0.1, 0.2, 0.5])
        if ((y < lo - 1e-9) | (y > hi + 1e-9)).any():
            raise ValueError("voice vectors must lie in SpeakerParams' ranges, as to_vector() gives them "
                             "([log f0, formant_scale, tilt, jitter, shimmer, breathiness]: f0 as its log)")
        self.mean_, self.scale_ = e.mean(0), e.std(0) + 1e-8
        z = (e - self.mean_) / self.scale_
        self.y_mean_ = y.mean(0)
        self.voice_scale_ = y.std(0)
        a = z.T @ z + self.alpha * np.eye(z.shape[1])
        self.coef_ = np.linalg.solve(a, z.T @ (y - self.y_mean_))
        return self

    def predict_params(self, embeddings) -> list[SpeakerParams]:
        """Regressed voices of embeddings ``(n, d)``."""
        z = (self._embeddings(embeddings) - self.mean_) / self.scale_
        return [SpeakerParams.from_vector(v) for v in z @ self.coef_ + self.y_mean_]

    def _embeddings(self, embeddings) -> np.ndarray:
        """``embeddings`` as finite rows ``(n, d)`` of the fitted width, or a clear error."""
        if not hasattr(self, "coef_"):
            raise _not_fitted("ParameterCloner is not fitted: call fit first")
        e = np.atleast_2d(np.asarray(embeddings, dtype=np.float64))
        if e.ndim != 2 or e.shape[1] != len(self.mean_):
            raise ValueError(f"need embeddings (n, {len(self.mean_)}) like those fitted, got shape {np.shape(embeddings)}")
        if not np.isfinite(e).all():
            raise ValueError("embeddings hold NaN or inf")
        return e

    def clone(self, reference, sr: int, words, *, random_state=None) -> np.ndarray:
        """Speak ``words`` with the voice regressed from ``reference``."""
        emb = embed_batch(self.encoder, as_mono(reference, sr)[None])
        return self.clone_from_embedding(emb[0], words, random_state=random_state)

    def clone_from_embedding(self, embedding, words, *, random_state=None) -> np.ndarray:
        """Speak ``words`` with the voice cloned from an embedding."""
        words = _word_list(words)
        if not words:
            raise ValueError("no words to speak: a clone of silence carries no voice")
        e = self._embeddings(embedding)
        if len(e) != 1:
            raise ValueError(f"clone_from_embedding takes one embedding, got {len(e)}")
        rng = check_random_state(random_state)
        voice = self.predict_params(e)[0]
        phones, durs = plan_utterance(words, n_frames=self.n_frames, random_state=rng)
        if self.search_rounds:
            voice = self._search(voice, e[0], phones, durs, rng)
        return synthesize(phones, durs, voice, random_state=rng)

    def _search(self, voice: SpeakerParams, embedding, phones, durs, rng) -> SpeakerParams:
        """The candidate voice whose rendering of ``phones`` is closest in embedding to ``embedding``."""
        if self.encoder is None:
            raise ValueError("the voice search renders candidates through the encoder: pass an encoder, "
                             "or search_rounds=0 for the ridge voice alone")
        target = embedding / (np.linalg.norm(embedding) + 1e-12)
        noise_seed = int(rng.integers(2**31))  # one noise stream for every candidate: only the voice differs
        best, step = voice.to_vector(), self.voice_scale_.copy()
        for _ in range(self.search_rounds):
            draws = best + step * rng.standard_normal((self.search_candidates - 1, len(best)))
            voices = [SpeakerParams.from_vector(v) for v in (best, *draws)]
            scores = np.concatenate([self._cosines(
                np.stack([synthesize(phones, durs, v, random_state=noise_seed) for v in voices[i:i + _BATCH]]),
                target) for i in range(0, len(voices), _BATCH)])  # rendered a batch at a time: bounded memory
            best, step = voices[int(np.argmax(scores))].to_vector(), step / 2
        return SpeakerParams.from_vector(best)

    def _cosines(self, rendered, target) -> np.ndarray:
        """Cosines of the encoder's embeddings of ``rendered`` with the unit ``target`` (-inf where not finite)."""
        e = embed_batch(self.encoder, rendered, batch_size=_BATCH).astype(np.float64)
        if e.ndim != 2 or e.shape[1] != len(target):
            raise ValueError(f"the encoder gives embeddings of width {e.shape[-1]}, but the cloner was fitted on width "
                             f"{len(target)}: fit it on embeddings of the encoder it searches with")
        norm = np.linalg.norm(e, axis=1)
        cos = e @ target / np.where(norm > 0, norm, 1.0)  # whatever the encoder's norm; an all-zero embedding scores 0
        return np.where(np.isfinite(cos), cos, -np.inf)


class SpeakerVerifier:
    """Centroid enrolment and a threshold at the equal-error rate of clean trials.

    Attributes
    ----------
    centroids_ : numpy.ndarray
        ``(n_speakers, d)`` unit-norm enrolment centroids.
    threshold_ : float
        Accept a trial when its cosine with the claimed centroid is ``>=`` this.
    eer_ : float
        EER of the enrolment trials (each utterance against every centroid, its own left out).
    """

    def fit(self, embeddings, labels) -> SpeakerVerifier:
        """Enrol speakers from clean embeddings ``(n, d)`` (scaled to unit norm) with integer labels ``0..k-1``."""
        e = np.asarray(embeddings, dtype=np.float64)
        lab = np.asarray(labels)
        if e.ndim != 2 or lab.shape != (len(e),):
            raise ValueError(f"need embeddings (n, d) and n labels, got {e.shape} and {lab.shape}")
        if lab.dtype.kind not in "iu" or lab.min() < 0 or set(np.unique(lab)) != set(range(int(lab.max()) + 1)):
            raise ValueError("labels must be the integers 0..k-1, each with at least one embedding "
                             f"(got {sorted(set(lab.tolist()))[:8]}); map speaker ids to 0..k-1 first")
        norms = np.linalg.norm(e, axis=1, keepdims=True)
        if not np.isfinite(e).all() or (norms == 0).any():
            raise ValueError("embeddings must be finite and nonzero")
        e = e / norms  # cosines, as scores() computes them, whatever the encoder's norm
        k = int(lab.max()) + 1
        self.centroids_ = np.stack([e[lab == j].mean(0) for j in range(k)])
        self.centroids_ /= np.linalg.norm(self.centroids_, axis=1, keepdims=True)
        genuine: list[float] = []
        impostor: list[float] = []
        for i in range(len(e)):
            others = e[(lab == lab[i]) & (np.arange(len(e)) != i)]
            if len(others):
                c = others.mean(0)
                genuine.append(float(e[i] @ c / np.linalg.norm(c)))
            impostor.extend(float(e[i] @ self.centroids_[j]) for j in range(k) if j != lab[i])
        self.threshold_, self.eer_ = eer_threshold(genuine, impostor)
        return self

    def scores(self, embeddings, speakers) -> np.ndarray:
        """Cosine of each embedding with its claimed speaker's centroid (SIM); 0 for an all-zero embedding."""
        if not hasattr(self, "centroids_"):
            raise _not_fitted("SpeakerVerifier is not fitted: call fit first")
        e = np.atleast_2d(np.asarray(embeddings, dtype=np.float64))
        if not np.isfinite(e).all():
            raise ValueError("embeddings contain NaN or inf")
        norm = np.linalg.norm(e, axis=1, keepdims=True)
        e = e / np.where(norm > 0, norm, 1.0)  # an all-zero embedding (e.g. of silence) scores 0, not NaN
        spk = np.asarray(speakers)
        if spk.dtype.kind not in "iu" or (spk.size and (spk.min() < 0 or spk.max() >= len(self.centroids_))):
            raise ValueError(f"claimed speakers must be enrolled labels 0..{len(self.centroids_) - 1}, got {spk}")
        return np.einsum("nd,nd->n", e, self.centroids_[spk])

    def accept(self, embeddings, speakers) -> np.ndarray:
        """Boolean SV decisions (``score >= threshold_``)."""
        return self.scores(embeddings, speakers) >= self.threshold_

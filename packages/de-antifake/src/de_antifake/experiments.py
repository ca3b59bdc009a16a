"""The ``demo`` and ``reproduce`` commands: protect -> purify -> clone -> verify on the synthetic corpus.

``reproduce`` follows ``studies/reproduce_protocol.md``: per seed it synthesises a corpus, enrols the
speakers with the pretrained GE2E encoder (threshold at the clean EER), fits the cloner, protects one
reference per speaker with :func:`~de_antifake.protect.attackvc`, trains the tiny stage-1 DiffWave and
the two refiners, purifies the protected references with every purifier and reports the SV success and
SIM of the clones. ``demo`` runs every purifier on 4 protected clips with the weights ``reproduce``
saved (or, when absent, weights trained for a few steps) and draws their spectrograms.
"""

from __future__ import annotations

import functools
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import torch
from icml25_shared.cli import RunContext, progress

from de_antifake.audio import snr_db
from de_antifake.clone import ParameterCloner, SpeakerVerifier, embed_batch
from de_antifake.corpus import WORDS, Corpus, make_corpus, plan_utterance, synthesize
from de_antifake.diffusion import (
    DiffWaveConfig,
    DiffWavePurifier,
    save_purification_pkl,
    train_diffwave,
)
from de_antifake.encoder import ResemblyzerEncoder
from de_antifake.phoneme import PhonemeSpectra
from de_antifake.protect import attackvc
from de_antifake.purifiers import LowPassPurifier, available_codecs
from de_antifake.refiner import PhonemeGuidedRefiner, PhonePuRe, save_refinement_ckpt
from de_antifake.weights import STAGE1_PEAK, WEIGHT_FILES, load_weights, shipped_weights

__all__ = ["ChainSizes", "chain_encoder", "demo", "load_weights", "reproduce", "run_chain", "shipped_weights", "spectrogram_db"]

STAGE1 = DiffWaveConfig(res_channels=32, skip_channels=32, num_res_layers=8, dilation_cycle=8,
                        diffusion_step_embed_dim_in=32, diffusion_step_embed_dim_mid=64, diffusion_step_embed_dim_out=64)
"""The tiny stage-1 DiffWave used at CPU scale."""



CLONE_WORDS = 6
"""Words per cloned utterance (about 1.6 s of speech in the cloner's 4 s clips, see ``ParameterCloner``)."""

_DW_STEPS, _DW_LR, _REF_STEPS = 450, 5e-3, 150
# quick training budget: stage-1 steps (crops of 1024 samples, batch 16), its Adam rate, refiner steps


def _one_thread(fn):
    """Run ``fn`` on one torch thread and restore the caller's thread count afterwards."""

    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        before = torch.get_num_threads()
        torch.set_num_threads(1)
        try:
            return fn(*args, **kwargs)
        finally:
            torch.set_num_threads(before)

    return wrapper


@dataclass(frozen=True)
class ChainSizes:
    """Sizes of one protect -> purify -> clone -> verify run (quick values by default)."""

    n_speakers: int = 8
    n_utterances: int = 6
    attack_iters: int = 30
    diffwave_steps: int = _DW_STEPS
    refiner_steps: int = _REF_STEPS
    refiner_N: int = 30
    shuffled_control: bool = False
    """Add the negative control "PhonePuRe, shuffled alignment": each reference purified with the next
    reference's alignment (a refiner that reads its text input must lose to the right alignment)."""


FULL = ChainSizes(n_speakers=20, n_utterances=20, attack_iters=150, diffwave_steps=3000, refiner_steps=2000)
"""The protocol's full sizes."""

POWERED = ChainSizes(n_speakers=30, n_utterances=20, attack_iters=150, diffwave_steps=3000, refiner_steps=2000,
                     shuffled_control=True)
"""Full training with 30 references per seed and the shuffled-alignment control
(``studies/powered_protocol.md``: 8 seeds, 240 paired references)."""

POWERED_QUICK = ChainSizes(n_speakers=30, n_utterances=6, shuffled_control=True)
"""30 references per seed at the quick training and attack sizes, with the shuffled-alignment control
(``studies/powered_protocol.md``, amendment 2: what fits a shared 2-core machine)."""


def _coverage(corpus, enrol, rng):
    """The enrolment speakers reading the whole vocabulary, so every phoneme has an average spectrum."""
    speakers = sorted({corpus.utterances[i].speaker for i in enrol})
    out = []
    for j in range(0, len(WORDS), 3):
        voice = corpus.speakers[speakers[(j // 3) % len(speakers)]]
        phones, durs = plan_utterance(WORDS[j:j + 3], random_state=rng)
        out.append((synthesize(phones, durs, voice, random_state=rng), list(zip(phones, durs, strict=True))))
    return out


def _models(corpus, enrol, rng, sizes):
    w = corpus.waveforms()[enrol]
    dw = train_diffwave(w, config=STAGE1, steps=sizes.diffwave_steps, max_t=5, lr=_DW_LR, segment=1024, batch_size=16,
                        peak=STAGE1_PEAK, random_state=rng)
    noisy = w + 0.005 * rng.standard_normal(w.shape).astype(np.float32)
    stage1_t5 = DiffWavePurifier(dw, t=5, peak=STAGE1_PEAK, random_state=rng)
    y = np.stack([stage1_t5.purify(x, 16000) for x in noisy])
    align = [corpus.utterances[i].alignment for i in enrol]
    spectra = PhonemeSpectra().fit([*zip(w, align, strict=True), *_coverage(corpus, enrol, rng)])
    kw = dict(channels=8, layers=3, N=sizes.refiner_N)
    guided = PhonemeGuidedRefiner(use_text=True, random_state=rng, **kw).fit(
        w, y, alignments=align, spectra=spectra, steps=sizes.refiner_steps)
    plain = PhonemeGuidedRefiner(use_text=False, random_state=rng, **kw).fit(w, y, steps=sizes.refiner_steps)
    return dw, guided, plain


@dataclass(frozen=True)
class ProtectedReferences:
    """The first part of one seed of the reproduction: corpus, SV, cloner and protected references."""

    corpus: Corpus
    labels: np.ndarray
    refs: np.ndarray
    enrol: np.ndarray
    wavs: np.ndarray
    embeddings: np.ndarray
    encoder: object
    verifier: SpeakerVerifier
    cloner: ParameterCloner
    protected: np.ndarray
    r_train: np.random.Generator
    r_eval: np.random.Generator


def chain_encoder() -> ResemblyzerEncoder:
    """The pretrained GE2E as the chain uses it for the voice search, SV and the attack: the bare network.

    No silence trimming and no -30 dBFS normalisation (``level_dbfs=None, trim_silence=False``): the
    cloner's voice search (``CLONE_WORDS`` words in 4 s clips, 2 rounds of 8 voices) was tuned on the bare
    network and the stored ``reproduce`` tables were measured with it. With the default front end the
    clean-reference clones miss their speakers (seed 100, 30 speakers: SIM 0.74-0.87 against an EER
    threshold of 0.872, 1 of 6 accepted; bare network 0.93-0.97 against 0.936, 5 of 6).
    """
    return ResemblyzerEncoder.from_pretrained(level_dbfs=None, trim_silence=False)


def protected_references(seed: int, sizes: ChainSizes = ChainSizes(), *, encoder=None) -> ProtectedReferences:
    """Build one seed's corpus, fit SV and cloner on enrolment utterances, protect the references.

    The random streams are those of :func:`run_chain` (which calls this), so a study can rebuild a seed.
    One encoder (:func:`chain_encoder` by default) embeds for the SV threshold, the cloner's fit and voice
    search, and the attack, so the clones are searched and verified under the same front end.
    """
    ss = np.random.SeedSequence(seed)
    r_corpus, r_train, r_attack, r_eval = (np.random.default_rng(s) for s in ss.spawn(4))
    enc = chain_encoder() if encoder is None else encoder
    corpus = make_corpus(n_speakers=sizes.n_speakers, n_utterances=sizes.n_utterances, seconds=2.0,
                         random_state=int(r_corpus.integers(2**31)))
    lab = corpus.labels
    refs = np.array([i for i in range(len(lab)) if i % sizes.n_utterances == 0])
    enrol = np.array([i for i in range(len(lab)) if i % sizes.n_utterances != 0])
    wavs = corpus.waveforms()
    emb = embed_batch(enc, wavs)
    verifier = SpeakerVerifier().fit(emb[enrol], lab[enrol])
    cloner = ParameterCloner(enc).fit(emb[enrol], [corpus.speakers[k] for k in lab[enrol]])
    groups = np.array([corpus.speakers[k].group for k in range(sizes.n_speakers)])
    targets = []
    for i in refs:
        other = np.flatnonzero(groups != groups[lab[i]])
        pick = other if len(other) else np.flatnonzero(np.arange(sizes.n_speakers) != lab[i])
        targets.append(verifier.centroids_[r_attack.choice(pick)])
    protected = attackvc(wavs[refs], np.array(targets), eps=0.01, encoder=enc, iters=sizes.attack_iters,
                         random_state=int(r_attack.integers(2**31)))
    return ProtectedReferences(corpus, lab, refs, enrol, wavs, emb, enc, verifier, cloner, protected, r_train, r_eval)


@_one_thread
def run_chain(seed: int, sizes: ChainSizes = ChainSizes(), *, encoder=None, save_to: Path | None = None) -> dict:
    """One seed of the reproduction; returns per-row SV success, SIM and SNR.

    Parameters
    ----------
    seed : int
        Root of every random stream of the run.
    sizes : ChainSizes
        Problem sizes.
    encoder : ResemblyzerEncoder, optional
        :func:`chain_encoder` (the pretrained GE2E, bare network) by default; it serves the voice search,
        SV and the attack alike.
    save_to : path, optional
        Folder for the trained weights (``purification.pkl``, ``refinement.ckpt``, ``refinement_unguided.ckpt``).

    Returns
    -------
    dict
        ``rows`` (name -> ``success``, ``sim``, ``snr_db``), ``clean_snr_db`` (stage 1 and both refiners
        applied to the clean references), ``threshold``, ``eer``, ``seconds``, ``cpu_seconds``.
    """
    start, cpu = time.perf_counter(), time.process_time()
    c = protected_references(seed, sizes, encoder=encoder)
    corpus, lab, refs, enrol, wavs = c.corpus, c.labels, c.refs, c.enrol, c.wavs
    enc, verifier, cloner, protected, r_train, r_eval = c.encoder, c.verifier, c.cloner, c.protected, c.r_train, c.r_eval
    dw, guided, plain = _models(corpus, enrol, r_train, sizes)
    if save_to is not None:
        save_purification_pkl(dw, Path(save_to) / "purification.pkl")
        save_refinement_ckpt(guided, Path(save_to) / "refinement.ckpt")
        save_refinement_ckpt(plain, Path(save_to) / "refinement_unguided.ckpt")
    stage1 = DiffWavePurifier(dw, t=3, peak=STAGE1_PEAK, random_state=r_eval)
    purifiers = {"protected (none)": lambda x, i: x, "LPF": LowPassPurifier().purify,
                 "AudioPure t=5": DiffWavePurifier(dw, t=5, peak=STAGE1_PEAK, random_state=r_eval).purify,
                 "stage 1 (t=3)": stage1.purify,
                 "unguided refiner": lambda x, i: PhonePuRe(stage1, plain).purify(x, 16000),
                 "PhonePuRe": lambda x, i: PhonePuRe(stage1, guided).purify(
                     x, 16000, alignment=corpus.utterances[i].alignment)}
    if sizes.shuffled_control:
        other = {int(i): int(refs[(k + 1) % len(refs)]) for k, i in enumerate(refs)}  # a derangement
        purifiers["PhonePuRe, shuffled alignment"] = lambda x, i: PhonePuRe(stage1, guided).purify(
            x, 16000, alignment=corpus.utterances[other[int(i)]].alignment)
    # item of its own: what each diffusion purifier does to the clean (held-out) references
    clean_snr = {name: float(np.mean([snr_db(wavs[i], fn(wavs[i], i)) for i in refs]))
                 for name, fn in (("stage 1 (t=3)", lambda x, i: stage1.purify(x, 16000)),
                                  ("unguided refiner", purifiers["unguided refiner"]),
                                  ("PhonePuRe", purifiers["PhonePuRe"]))}
    words = [list(r_eval.choice(WORDS, CLONE_WORDS, replace=False)) for _ in refs]
    rows = {}

    def score(name, ref_wavs):
        clone_seeds = np.random.SeedSequence([seed, 7]).spawn(len(refs))
        e = embed_batch(enc, ref_wavs)
        clones = np.stack([cloner.clone_from_embedding(e[j], words[j], random_state=np.random.default_rng(clone_seeds[j]))
                           for j in range(len(refs))])
        ce = embed_batch(enc, clones)
        accepted = verifier.accept(ce, lab[refs])
        sims = verifier.scores(ce, lab[refs])
        rows[name] = {"success": float(accepted.mean()), "sim": float(sims.mean()),
                      "snr_db": float(np.mean([snr_db(wavs[i], w) for i, w in zip(refs, ref_wavs, strict=True)])),
                      "accepted": [bool(a) for a in accepted], "sims": [float(s) for s in sims]}

    score("clean reference", wavs[refs])
    for name, fn in purifiers.items():
        takes_index = name in ("protected (none)", "PhonePuRe", "unguided refiner", "PhonePuRe, shuffled alignment")
        score(name, np.stack([fn(protected[j], i) if takes_index else fn(protected[j], 16000)
                              for j, i in enumerate(refs)]))
    return {"seed": seed, "rows": rows, "clean_snr_db": clean_snr, "threshold": verifier.threshold_, "eer": verifier.eer_,
            "seconds": time.perf_counter() - start, "cpu_seconds": time.process_time() - cpu}


@_one_thread
def reproduce(ctx: RunContext) -> None:
    """The ordering over seeds ``--seed`` .. ``--seed + 2`` (0, 1, 2 by default; ``--quick``: quick sizes).

    Writes JSON, a table and a PNG; the weights trained for the first seed go to ``<out>/weights``.
    """
    sizes = ChainSizes() if ctx.quick else FULL
    start, cpu = time.perf_counter(), time.process_time()
    enc = chain_encoder()
    runs = []
    seeds = [ctx.seed, ctx.seed + 1, ctx.seed + 2]
    for seed in progress(seeds, desc="reproduce"):
        runs.append(run_chain(seed, sizes, encoder=enc, save_to=ctx.out / "weights" if seed == seeds[0] else None))
    names = list(runs[0]["rows"])
    table = []
    for n in names:
        s = np.array([r["rows"][n]["success"] for r in runs])
        m = np.array([r["rows"][n]["sim"] for r in runs])
        table.append([n, f"{s.mean():.3f} +- {s.std(ddof=1):.3f}", f"{m.mean():.3f} +- {m.std(ddof=1):.3f}",
                      f"{np.mean([r['rows'][n]['snr_db'] for r in runs]):.1f}"])
    mean = {n: float(np.mean([r["rows"][n]["success"] for r in runs])) for n in names}
    sim = {n: float(np.mean([r["rows"][n]["sim"] for r in runs])) for n in names}
    verdict = {"PhonePuRe >= stage 1 >= LPF": mean["PhonePuRe"] >= mean["stage 1 (t=3)"] >= mean["LPF"],
               "PhonePuRe within 0.15 of clean": mean["clean reference"] - mean["PhonePuRe"] <= 0.15,
               "guided SIM > unguided SIM": sim["PhonePuRe"] > sim["unguided refiner"]}
    clean = {n: [r["clean_snr_db"][n] for r in runs] for n in runs[0]["clean_snr_db"]}
    ctx.write_json({"sizes": sizes.__dict__, "seeds": seeds, "runs": runs, "mean_success": mean, "mean_sim": sim,
                    "clean_snr_db": clean,
                    "verdict": verdict, "codecs": available_codecs(), "seconds": time.perf_counter() - start,
                    "cpu_seconds": time.process_time() - cpu, "torch": torch.__version__})
    ctx.write_table(table, headers=["reference", f"SV success (mean +- sd, seeds {seeds})", "SIM", "SNR dB"])
    ctx.save_figure(_success_figure(runs))


def _success_figure(runs: list[dict]):
    """SV success of every row: mean over seeds with a 95% t-interval, the seeds and sizes in the caption."""
    import matplotlib.pyplot as plt
    from scipy.stats import t

    names = list(runs[0]["rows"])
    per_seed = np.array([[r["rows"][n]["success"] for r in runs] for n in names])
    mean = per_seed.mean(axis=1)
    n_refs = len(runs[0]["rows"][names[0]].get("accepted", [])) or None
    if len(runs) > 1:
        half = t.ppf(0.975, len(runs) - 1) * per_seed.std(axis=1, ddof=1) / np.sqrt(len(runs))
        interval = f"bars: 95% t-interval over the {len(runs)} seeds"
    else:
        half, interval = None, "one seed, no interval"
    fig, ax = plt.subplots(figsize=(6.4, 3.4), layout="constrained")
    ax.barh(names, mean, xerr=half, capsize=3, color="tab:blue")
    ax.invert_yaxis()
    ax.set_xlim(0, 1)
    ax.set_xlabel("SV success of clones (fraction of references accepted)")
    ax.set_ylabel("reference given to the cloner")
    refs = f", {n_refs} references per seed" if n_refs else ""
    seeds = ", ".join(str(r["seed"]) for r in runs)
    ax.set_title(f"mean over seeds {seeds}{refs}\n{interval}", fontsize=8)
    return fig


def _weights_folder(out: Path) -> Path | None:
    """Find the trained weights ``demo`` uses.

    ``<out>/weights`` (written by ``reproduce`` with the same ``--out``), else the weights shipped in
    the package; ``None`` when neither holds all the files.
    """
    for folder in (Path(out) / "weights", shipped_weights()):
        if all((folder / n).is_file() for n in WEIGHT_FILES):
            return folder
    return None



@_one_thread
def demo(ctx: RunContext) -> None:
    """Every purifier on 4 protected clips: SNR and embedding SIM table, spectrogram PNG."""
    enc = ResemblyzerEncoder.from_pretrained()
    corpus = make_corpus(n_speakers=4, n_utterances=2, seconds=2.0, random_state=ctx.seed)
    wavs = corpus.waveforms()
    idx = np.arange(0, 8, 2)
    shipped = _weights_folder(ctx.out)
    if shipped is not None:
        stage1, guided, plain = load_weights(shipped, random_state=ctx.seed)
        dw = stage1.model
        source = str(shipped) if shipped != shipped_weights() else "shipped with the package (reproduce --quick, seed 0)"
    else:
        rng = np.random.default_rng(ctx.seed)
        dw, guided, plain = _models(corpus, np.arange(8), rng, ChainSizes(diffwave_steps=5, refiner_steps=3, refiner_N=5))
        stage1 = DiffWavePurifier(dw, t=3, peak=STAGE1_PEAK, random_state=ctx.seed)
        source = "trained for a few steps (run reproduce to make real weights)"
    emb = embed_batch(enc, wavs)
    protected = attackvc(wavs[idx], emb[idx[::-1]], eps=0.01, encoder=enc, iters=3 if ctx.quick else 20)
    from de_antifake.purifiers import AveragePurifier, BandPassPurifier, DownsamplePurifier, MedianPurifier

    purifiers = {p.name: p.purify for p in (AveragePurifier(), MedianPurifier(), DownsamplePurifier(), LowPassPurifier(),
                                            BandPassPurifier())}
    purifiers["AudioPure t=5"] = DiffWavePurifier(dw, t=5, peak=STAGE1_PEAK, random_state=ctx.seed).purify
    purifiers["stage 1 (t=3)"] = stage1.purify
    purifiers["unguided"] = PhonePuRe(stage1, plain).purify
    rows, outputs = [], {}
    for name, fn in purifiers.items():
        out = []
        for j in range(len(idx)):
            out.append(fn(protected[j], 16000))
        outputs[name] = np.stack(out)
    outputs["PhonePuRe"] = np.stack([PhonePuRe(stage1, guided).purify(protected[j], 16000,
                                     alignment=corpus.utterances[i].alignment) for j, i in enumerate(idx)])
    clean_e = emb[idx]
    for name, out in {"protected": protected, **outputs}.items():
        e = embed_batch(enc, out)
        rows.append([name, float(np.mean(np.sum(e * clean_e, axis=1))),
                     float(np.mean([snr_db(wavs[i], o) for i, o in zip(idx, out, strict=True)]))])
    from icml25_shared.tables import markdown_table

    ctx.write_table(markdown_table(rows, ["purifier", "SIM to clean reference", "SNR vs clean (dB)"]).rstrip()
                    + f"\n\nWeights: {source}.\n")
    ctx.write_json({"weights": source, "rows": rows, "codecs": available_codecs()})

    show = {"clean": wavs[idx[0]], "protected": protected[0], "LPF": outputs["LPF"][0],
            "stage 1 (t=3)": outputs["stage 1 (t=3)"][0], "PhonePuRe": outputs["PhonePuRe"][0]}
    ctx.save_figure(_spectrogram_figure(show, caption=f"clip 1 of {len(idx)}, seed {ctx.seed}; weights: {source}"))


def spectrogram_db(wav, *, n_fft: int = 510, hop: int = 128, floor_db: float = -100.0) -> np.ndarray:
    """Power spectrogram in dB relative to full scale, floored at ``floor_db``.

    Parameters
    ----------
    wav : array_like
        16 kHz samples.
    n_fft, hop : int
        Hann window length and hop (the refiner's STFT: 510 and 128).
    floor_db : float, default -100
        Lowest value (exact digital silence has no finite dB value).

    Returns
    -------
    numpy.ndarray, shape (n_fft // 2 + 1, frames)
        dB values on one absolute scale (a full-scale sine peaks near -3 dB), so that spectrograms of
        different clips compare.
    """
    from scipy.signal import stft as scipy_stft

    _, _, z = scipy_stft(np.asarray(wav, dtype=np.float64), fs=16000, window="hann", nperseg=n_fft,
                         noverlap=n_fft - hop, boundary=None, padded=False, scaling="spectrum")
    power = 2.0 * np.abs(z) ** 2
    return np.maximum(10.0 * np.log10(np.maximum(power, 1e-30)), floor_db)


def _spectrogram_figure(clips: dict, *, caption: str, span_db: float = 80.0):
    """Spectrogram panels on one shared dB scale, labelled axes and one colour bar.

    The loudest bin over all panels sets the top of the scale and ``span_db`` below it the bottom, so
    no panel is scaled on its own.
    """
    import matplotlib.pyplot as plt

    specs = {name: spectrogram_db(x) for name, x in clips.items()}
    top = float(np.ceil(max(float(s.max()) for s in specs.values())))
    fig, axes = plt.subplots(1, len(specs), figsize=(2.6 * len(specs) + 1.4, 3.2), sharey=True,
                             layout="constrained")
    image: Any = None
    for ax, (name, spec) in zip(axes, specs.items(), strict=True):
        seconds = len(clips[name]) / 16000
        image = ax.imshow(spec, origin="lower", aspect="auto", cmap="magma", vmin=top - span_db, vmax=top,
                          extent=(0.0, seconds, 0.0, 8.0))
        ax.set_title(name, fontsize=10)
        ax.set_xlabel("time (s)")
    axes[0].set_ylabel("frequency (kHz)")
    bar = fig.colorbar(image, ax=list(axes), shrink=0.9)
    bar.set_label("power (dB re full scale)")
    fig.suptitle(caption, fontsize=8)
    return fig


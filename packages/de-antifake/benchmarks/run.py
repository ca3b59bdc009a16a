"""Benchmark: batched PGD protection against a per-clip loop, and the real-time factor of every purifier.

One run writes JSON and prints a markdown table (sizes, versions, torch threads, load average). Both
sides of the PGD comparison run with the same number of torch threads and the same precision
(``--threads``, default 2: the target is stated on 2 cores; float32, then bfloat16 autocast); batched
bfloat16 is also timed against the float32 loop, and float32 is repeated on 1 thread for context. Weights for the diffusion purifier and the refiners come from
``--weights`` (the ``weights/`` folder ``python -m de_antifake reproduce`` writes), by default the tiny
weights shipped in the package; without any the models are built untrained at the sizes ``reproduce`` trains (the time of a forward pass does not
depend on the weights' values), and the JSON says so.
"""

from __future__ import annotations

import argparse
import os
from pathlib import Path

import numpy as np


def _load() -> list[float]:
    try:
        return [float(v) for v in Path("/proc/loadavg").read_text().split()[:3]]
    except OSError:
        return []


def _diffusion_purifiers(weights: Path | None, corpus, rng):
    """Stage 1, AudioPure and both refiners, from saved weights or untrained at reproduce's sizes."""
    from de_antifake import experiments as ex
    from de_antifake.diffusion import DiffWave, DiffWavePurifier, load_purification_pkl
    from de_antifake.phoneme import PhonemeSpectra
    from de_antifake.refiner import PhonemeGuidedRefiner, PhonePuRe, load_refinement_ckpt

    peak = getattr(ex, "STAGE1_PEAK", None)
    if weights is None:  # the tiny weights shipped in the package, when present
        weights = Path(ex.__file__).parent / "data" / "weights"
    if weights is not None and (weights / "purification.pkl").is_file():
        dw, sched = load_purification_pkl(weights / "purification.pkl")
        guided = load_refinement_ckpt(weights / "refinement.ckpt", random_state=0)
        plain_path = weights / "refinement_unguided.ckpt"
        plain = load_refinement_ckpt(plain_path, random_state=0) if plain_path.is_file() else None
        shipped = weights.resolve() == (Path(ex.__file__).parent / "data" / "weights").resolve()
        source = "the tiny weights shipped in de_antifake/data/weights" if shipped else f"trained weights from {weights}"
    else:
        dw, sched = DiffWave(ex.STAGE1).eval(), None
        w = corpus.waveforms()[:4]
        align = [u.alignment for u in corpus.utterances[:4]]
        spectra = PhonemeSpectra().fit(list(zip(w, align, strict=True)))
        kw = dict(channels=8, layers=3, N=ex.ChainSizes().refiner_N, random_state=0)
        guided = PhonemeGuidedRefiner(use_text=True, **kw).fit(w, w, alignments=align, spectra=spectra, steps=1)
        plain = PhonemeGuidedRefiner(use_text=False, **kw).fit(w, w, steps=1)
        source = "untrained models at reproduce's sizes (DiffWave 8 x 32, refiner 8 channels x 3 layers)"
    stage1 = DiffWavePurifier(dw, schedule=sched, t=3, peak=peak, random_state=0)
    out = {"stage 1 (t=3)": stage1,
           "AudioPure t=5": DiffWavePurifier(dw, schedule=sched, t=5, peak=peak, random_state=0),
           "PhonePuRe": PhonePuRe(stage1, guided)}
    if plain is not None:
        out["unguided refiner (stage 1 + refiner)"] = PhonePuRe(stage1, plain)
    return out, source


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--out", type=Path, default=Path("out/de_antifake/benchmark.json"))
    parser.add_argument("--clips", type=int, default=40)
    parser.add_argument("--iters", type=int, default=3)
    parser.add_argument("--threads", type=int, default=2, help="torch threads of every timed call")
    parser.add_argument("--weights", type=Path, default=None)
    args = parser.parse_args()
    os.environ.setdefault("OMP_NUM_THREADS", str(args.threads))
    import torch
    from icml25_shared.bench import BenchmarkReport, compare

    from de_antifake.corpus import make_corpus
    from de_antifake.encoder import ResemblyzerEncoder
    from de_antifake.protect import attackvc
    from de_antifake.purifiers import (
        AveragePurifier,
        BandPassPurifier,
        CodecPurifier,
        DownsamplePurifier,
        LowPassPurifier,
        MedianPurifier,
        available_codecs,
    )

    torch.set_num_threads(args.threads)
    load_before = _load()
    report = BenchmarkReport("de-antifake", packages=["de-antifake", "torch", "numpy", "scipy"])
    enc = ResemblyzerEncoder.from_pretrained()
    corpus = make_corpus(n_speakers=max(1, args.clips // 4), n_utterances=4, seconds=2.0, random_state=0)
    wavs = corpus.waveforms()[: args.clips]
    target = np.roll(np.stack([enc.embed_utterance(w, 16000) for w in wavs]), 1, axis=0)
    def batched(precision="float32"):
        return attackvc(wavs, target, eps=0.01, encoder=enc, iters=args.iters, precision=precision)

    def looped(precision="float32"):
        return np.stack([attackvc(w, t, eps=0.01, encoder=enc, iters=args.iters, precision=precision)
                         for w, t in zip(wavs, target, strict=True)])

    def target_gain(adv):  # mean cosine gained towards the targets: the attack's effect
        with torch.no_grad():
            moved = enc.embed(torch.from_numpy(adv)).numpy() - enc.embed(torch.from_numpy(wavs)).numpy()
        return float(np.mean(np.sum(moved * target, axis=1)))

    sizes = {"clips": len(wavs), "seconds": 2.0, "iters": args.iters}
    for precision in ("float32", "bfloat16"):
        a, b = batched(precision), looped(precision)
        metrics = {"max_abs_diff_batched_vs_loop": float(np.abs(a - b).max()), "target_cosine_gain": target_gain(a)}
        report.add(compare(lambda p=precision: batched(p), lambda p=precision: looped(p),
                           label=f"PGD {len(wavs)} x 2 s clips, {precision}, {args.threads} thread(s)",
                           ours_name="batched", peer_name="per-clip", warmup=0, repeats=1,
                           sizes={**sizes, "precision": precision, "torch_threads": args.threads}, metrics=metrics))
    report.add(compare(lambda: batched("bfloat16"), looped, label=f"PGD {len(wavs)} x 2 s clips, batched bfloat16 "
                       f"against a float32 loop, {args.threads} thread(s)", ours_name="batched bfloat16",
                       peer_name="per-clip float32", warmup=0, repeats=1,
                       sizes={**sizes, "torch_threads": args.threads}))
    if args.threads != 1:  # context: the same comparison on one thread
        torch.set_num_threads(1)
        report.add(compare(batched, looped, label=f"PGD {len(wavs)} x 2 s clips, float32, 1 thread(s)",
                           ours_name="batched", peer_name="per-clip", warmup=0, repeats=1,
                           sizes={**sizes, "precision": "float32", "torch_threads": 1}))
    torch.set_num_threads(args.threads)
    purifiers = {p.name: p for p in (AveragePurifier(), MedianPurifier(), DownsamplePurifier(), LowPassPurifier(),
                                     BandPassPurifier())}
    skipped = {}
    for codec, reason in available_codecs().items():
        if reason is None:
            purifiers[f"codec {codec}"] = CodecPurifier(codec)
        else:
            skipped[codec] = reason
    diff, source = _diffusion_purifiers(args.weights, corpus, np.random.default_rng(0))
    purifiers.update(diff)
    clip = corpus.utterances[0]
    seconds = len(clip.wav) / 16000
    for name, p in purifiers.items():
        kw = {"alignment": clip.alignment} if name == "PhonePuRe" else {}
        row = compare(lambda p=p, kw=kw: p.purify(clip.wav, 16000, **kw), None, label=f"purify {name}",
                      ours_name=name, warmup=1, repeats=3, sizes={"seconds": seconds, "torch_threads": args.threads})
        row.metrics["real_time_factor"] = row.ours.median_s / seconds
        report.add(row)
    data = report.to_dict()
    data["notes"] = {"load_average_before": load_before, "load_average_after": _load(), "torch_threads": args.threads,
                     "diffusion_weights": source, "codecs_skipped": skipped}
    args.out.parent.mkdir(parents=True, exist_ok=True)
    import json

    args.out.write_text(json.dumps(data, indent=2) + "\n")
    print(report.to_markdown())
    print(f"load average before/after: {load_before} / {data['notes']['load_average_after']}; weights: {source}")


if __name__ == "__main__":
    main()

"""Benchmark: batched PGD protection against a per-clip loop, and the real-time factor of every purifier.

Writes JSON and prints a markdown table (sizes, versions, machine). Weights for the diffusion purifier
and the refiners come from ``results/weights`` (written by ``python -m de_antifake reproduce``).
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

import numpy as np


def main() -> None:
    import torch
    from icml25_shared.bench import BenchmarkReport, compare

    from de_antifake.corpus import make_corpus
    from de_antifake.diffusion import DiffWavePurifier, load_purification_pkl
    from de_antifake.encoder import ResemblyzerEncoder
    from de_antifake.protect import attackvc
    from de_antifake.purifiers import (
        AveragePurifier,
        BandPassPurifier,
        DownsamplePurifier,
        LowPassPurifier,
        MedianPurifier,
    )
    from de_antifake.refiner import PhonePuRe, load_refinement_ckpt

    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--out", type=Path, default=Path("out/de_antifake/benchmark.json"))
    parser.add_argument("--clips", type=int, default=40)
    parser.add_argument("--iters", type=int, default=5)
    parser.add_argument("--weights", type=Path, default=Path(__file__).resolve().parents[1] / "results" / "weights")
    args = parser.parse_args()
    torch.set_num_threads(1)
    report = BenchmarkReport("de-antifake", packages=["de-antifake", "torch", "numpy", "scipy"])
    enc = ResemblyzerEncoder.from_pretrained()
    corpus = make_corpus(n_speakers=max(1, args.clips // 4), n_utterances=4, seconds=2.0, random_state=0)
    wavs = corpus.waveforms()[: args.clips]
    target = np.roll(np.stack([enc.embed_utterance(w, 16000) for w in wavs]), 1, axis=0)
    batched = lambda: attackvc(wavs, target, eps=0.01, encoder=enc, iters=args.iters)  # noqa: E731
    looped = lambda: [attackvc(w, t, eps=0.01, encoder=enc, iters=args.iters) for w, t in zip(wavs, target, strict=True)]  # noqa: E731
    report.add(compare(batched, looped, label=f"PGD {len(wavs)} x 2 s clips", ours_name="batched", peer_name="per-clip",
                       warmup=0, repeats=1, sizes={"clips": len(wavs), "seconds": 2.0, "iters": args.iters}))
    purifiers = {p.name: p for p in (AveragePurifier(), MedianPurifier(), DownsamplePurifier(), LowPassPurifier(),
                                     BandPassPurifier())}
    if (args.weights / "purification.pkl").is_file():
        dw, sched = load_purification_pkl(args.weights / "purification.pkl")
        stage1 = DiffWavePurifier(dw, schedule=sched, t=3, random_state=0)
        purifiers["stage 1 (t=3)"] = stage1
        purifiers["AudioPure t=5"] = DiffWavePurifier(dw, schedule=sched, t=5, random_state=0)
        guided = load_refinement_ckpt(args.weights / "refinement.ckpt", random_state=0)
        purifiers["PhonePuRe"] = PhonePuRe(stage1, guided)
    clip = corpus.utterances[0]
    for name, p in purifiers.items():
        kw = {"alignment": clip.alignment} if name == "PhonePuRe" else {}
        t0 = time.perf_counter()
        p.purify(clip.wav, 16000, **kw)
        rtf = (time.perf_counter() - t0) / (len(clip.wav) / 16000)
        report.add(compare(lambda p=p, kw=kw: p.purify(clip.wav, 16000, **kw), None, label=f"purify {name}",
                           ours_name=name, warmup=0, repeats=1, sizes={"seconds": 2.0},
                           metrics={"real_time_factor": rtf}))
    report.write_json(args.out)
    print(report.to_markdown())


if __name__ == "__main__":
    main()

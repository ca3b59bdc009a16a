"""Marginal cost per training step at the powered sizes: two slice lengths, the difference per step.

    OMP_NUM_THREADS=1 python packages/de-antifake/studies/time_training_marginal.py --out marginal.json

``time_powered_parts.py`` extrapolated 10-step slices linearly, which counts one-time work (the refiner
precomputes the spectrograms of all its training clips) 200-300 times. Here each trainer runs ``short``
and ``long`` steps on the 570 non-reference clips of a ``POWERED`` corpus (the stage-1 outputs replaced by
noisy copies, same shapes); ``(long - short) / (long - short steps)`` is the cost of a step and the rest is
one-time.
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

import numpy as np


def main(argv: list[str] | None = None) -> int:
    import torch

    from de_antifake.corpus import make_corpus
    from de_antifake.diffusion import train_diffwave
    from de_antifake.experiments import _DW_LR, POWERED, STAGE1, STAGE1_PEAK, _coverage
    from de_antifake.phoneme import PhonemeSpectra
    from de_antifake.refiner import PhonemeGuidedRefiner

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--short", type=int, default=10)
    parser.add_argument("--long", type=int, default=50)
    parser.add_argument("--out", default=None)
    args = parser.parse_args(argv)
    torch.set_num_threads(1)
    sizes = POWERED
    corpus = make_corpus(n_speakers=sizes.n_speakers, n_utterances=sizes.n_utterances, seconds=2.0, random_state=0)
    enrol = np.array([i for i in range(len(corpus.labels)) if i % sizes.n_utterances != 0])
    w = corpus.waveforms()[enrol]
    rng = np.random.default_rng(0)
    y = w + 0.005 * rng.standard_normal(w.shape).astype(np.float32)
    align = [corpus.utterances[i].alignment for i in enrol]
    spectra = PhonemeSpectra().fit([*zip(w, align, strict=True), *_coverage(corpus, enrol, rng)])
    trainers = {
        "stage-1 training": (sizes.diffwave_steps, lambda k: train_diffwave(
            w, config=STAGE1, steps=k, max_t=5, lr=_DW_LR, segment=1024, batch_size=16, peak=STAGE1_PEAK,
            random_state=0)),
        "guided refiner training": (sizes.refiner_steps, lambda k: PhonemeGuidedRefiner(
            use_text=True, channels=8, layers=3, N=sizes.refiner_N, random_state=0).fit(
            w, y, alignments=align, spectra=spectra, steps=k)),
        "unguided refiner training": (sizes.refiner_steps, lambda k: PhonemeGuidedRefiner(
            use_text=False, channels=8, layers=3, N=sizes.refiner_N, random_state=0).fit(w, y, steps=k)),
    }
    parts = {}
    for name, (total, train) in trainers.items():
        cpu = {}
        for k in (args.short, args.long):
            start = time.process_time()
            train(k)
            cpu[k] = time.process_time() - start
        step = (cpu[args.long] - cpu[args.short]) / (args.long - args.short)
        once = cpu[args.short] - step * args.short
        parts[name] = {"steps": total, "cpu_seconds": {str(k): v for k, v in cpu.items()},
                       "per_step": step, "one_time": once, "cpu_seconds_full": once + step * total}
    record = {"clips": len(w), "parts": parts}
    text = json.dumps(record, indent=1)
    if args.out:
        Path(args.out).write_text(text + "\n")
    print(text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

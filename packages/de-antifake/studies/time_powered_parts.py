"""Time one seed's parts at the powered protocol's sizes on one thread, by short slices.

    OMP_NUM_THREADS=1 python packages/de-antifake/studies/time_powered_parts.py --out time_parts.json

Slices: corpus + SV + cloner (1 PGD iteration), PGD (a few iterations on the 30 references), stage-1
training (a few of its 3000 steps), the 570 stage-1 inputs of the refiners' training pairs (a few clips),
refiner training (a few of its 2000 steps, guided and unguided), and one reference purified by every row
and cloned. Each slice is extrapolated linearly to its full count; the JSON keeps both.
"""

from __future__ import annotations

import argparse
import json
import time
from dataclasses import replace
from pathlib import Path

import numpy as np


def main(argv: list[str] | None = None) -> int:
    import torch

    from de_antifake.clone import embed_batch
    from de_antifake.corpus import WORDS
    from de_antifake.diffusion import DiffWavePurifier, train_diffwave
    from de_antifake.experiments import (
        _DW_LR,
        CLONE_WORDS,
        POWERED,
        STAGE1,
        STAGE1_PEAK,
        _coverage,
        protected_references,
    )
    from de_antifake.phoneme import PhonemeSpectra
    from de_antifake.protect import attackvc
    from de_antifake.refiner import PhonemeGuidedRefiner, PhonePuRe

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seed", type=int, default=100)
    parser.add_argument("--slice", type=int, default=20, help="steps / iterations / clips per timed slice")
    parser.add_argument("--out", default=None)
    args = parser.parse_args(argv)
    torch.set_num_threads(1)
    sizes, k = POWERED, args.slice
    parts: dict = {}

    def timed(name, fn, done, total):
        cpu = time.process_time()
        out = fn()
        sec = time.process_time() - cpu
        parts[name] = {"slice": done, "total": total, "cpu_seconds_slice": sec, "cpu_seconds_full": sec * total / done}
        return out

    c = timed("corpus, SV, cloner, 1 PGD iteration",
              lambda: protected_references(args.seed, replace(sizes, attack_iters=1)), 1, 1)
    targets = np.roll(c.verifier.centroids_[c.labels[c.refs]], 1, axis=0)
    timed("PGD (150 iterations, 30 references)", lambda: attackvc(c.wavs[c.refs], targets, eps=0.01, encoder=c.encoder,
                                                                   iters=k, random_state=0), k, sizes.attack_iters)
    w = c.corpus.waveforms()[c.enrol]
    rng = np.random.default_rng(0)
    dw = timed("stage-1 training (3000 steps)", lambda: train_diffwave(
        w, config=STAGE1, steps=k, max_t=5, lr=_DW_LR, segment=1024, batch_size=16, peak=STAGE1_PEAK,
        random_state=rng), k, sizes.diffwave_steps)
    st5 = DiffWavePurifier(dw, t=5, peak=STAGE1_PEAK, random_state=rng)
    y = timed("stage-1 inputs of the training pairs (570 clips)",
              lambda: np.stack([st5.purify(x, 16000) for x in w[:k]]), k, len(w))
    y = np.concatenate([y, w[k:]])  # stand-ins for the untimed clips
    align = [c.corpus.utterances[i].alignment for i in c.enrol]
    spectra = PhonemeSpectra().fit([*zip(w, align, strict=True), *_coverage(c.corpus, c.enrol, rng)])
    kw = dict(channels=8, layers=3, N=sizes.refiner_N)
    guided = timed("guided refiner training (2000 steps)", lambda: PhonemeGuidedRefiner(
        use_text=True, random_state=rng, **kw).fit(w, y, alignments=align, spectra=spectra, steps=k),
        k, sizes.refiner_steps)
    timed("unguided refiner training (2000 steps)", lambda: PhonemeGuidedRefiner(
        use_text=False, random_state=rng, **kw).fit(w, y, steps=k), k, sizes.refiner_steps)
    stage1 = DiffWavePurifier(dw, t=3, peak=STAGE1_PEAK, random_state=rng)
    audiopure = DiffWavePurifier(dw, t=5, peak=STAGE1_PEAK, random_state=rng)
    pipe = PhonePuRe(stage1, guided)
    n_refs = 3

    def references():
        for j in range(n_refs):
            i = c.refs[j]
            x = c.wavs[i]
            al = c.corpus.utterances[int(i)].alignment
            heard = [x, x, audiopure.purify(x, 16000), stage1.purify(x, 16000),
                     pipe.purify(x, 16000, alignment=al), pipe.purify(x, 16000, alignment=al)]
            words = list(rng.choice(WORDS, CLONE_WORDS, replace=False))
            for h in heard:
                e = embed_batch(c.encoder, h[None])[0]
                clone = c.cloner.clone_from_embedding(e, words, random_state=rng)
                embed_batch(c.encoder, clone[None])

    timed("one reference: 4 purifications + 6 clones", references, n_refs, 1)
    per_seed_fixed = sum(v["cpu_seconds_full"] for n, v in parts.items() if not n.startswith("one reference"))
    record = {"seed": args.seed, "sizes": sizes.__dict__, "torch_threads": torch.get_num_threads(), "parts": parts,
              "per_seed_training_and_protection_cpu_seconds": per_seed_fixed,
              "per_reference_cpu_seconds": parts["one reference: 4 purifications + 6 clones"]["cpu_seconds_full"]}
    text = json.dumps(record, indent=1)
    if args.out:
        Path(args.out).write_text(text + "\n")
    print(text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

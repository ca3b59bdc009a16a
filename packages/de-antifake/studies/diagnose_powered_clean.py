"""Diagnosis of the powered comparison's clean row: clone SV success from clean references with the
encoder's default front end (trim silence, -30 dBFS) and with the bare network, on the powered study's
seed-100 corpus (30 speakers x 6 utterances), the first ``--refs`` references.

    OMP_NUM_THREADS=1 nice python packages/de-antifake/studies/diagnose_powered_clean.py --refs 6
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

import numpy as np


def main(argv: list[str] | None = None) -> int:
    """Print and store clean-reference SV success and SIM for both front ends."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seed", type=int, default=100)
    parser.add_argument("--refs", type=int, default=6)
    parser.add_argument("--out", default=str(Path(__file__).with_name("diagnose_powered_clean.json")))
    args = parser.parse_args(argv)
    import torch

    from de_antifake import ParameterCloner, ResemblyzerEncoder, SpeakerVerifier, embed_batch, make_corpus
    from de_antifake.corpus import WORDS
    from de_antifake.experiments import CLONE_WORDS, POWERED_QUICK

    torch.set_num_threads(1)
    sizes = POWERED_QUICK
    r_corpus, _, _, r_eval = (np.random.default_rng(s) for s in np.random.SeedSequence(args.seed).spawn(4))
    corpus = make_corpus(n_speakers=sizes.n_speakers, n_utterances=sizes.n_utterances, seconds=2.0,
                         random_state=int(r_corpus.integers(2**31)))  # the corpus of protected_references
    lab, wavs = corpus.labels, corpus.waveforms()
    refs = np.array([i for i in range(len(lab)) if i % sizes.n_utterances == 0])[: args.refs]
    enrol = np.array([i for i in range(len(lab)) if i % sizes.n_utterances != 0])
    words = [list(r_eval.choice(WORDS, CLONE_WORDS, replace=False)) for _ in refs]
    out: dict = {"seed": args.seed, "refs": len(refs)}
    for name, enc in (("default front end", ResemblyzerEncoder.from_pretrained()),
                      ("bare network", ResemblyzerEncoder.from_pretrained(level_dbfs=None, trim_silence=False))):
        start = time.process_time()
        emb = embed_batch(enc, wavs)
        verifier = SpeakerVerifier().fit(emb[enrol], lab[enrol])
        cloner = ParameterCloner(enc).fit(emb[enrol], [corpus.speakers[k] for k in lab[enrol]])
        seeds = np.random.SeedSequence([args.seed, 7]).spawn(len(refs))
        clones = np.stack([cloner.clone_from_embedding(emb[i], words[j], random_state=np.random.default_rng(seeds[j]))
                           for j, i in enumerate(refs)])
        ce = embed_batch(enc, clones)
        out[name] = {"threshold": float(verifier.threshold_), "eer": float(verifier.eer_),
                     "accepted": [bool(a) for a in verifier.accept(ce, lab[refs])],
                     "sims": [float(s) for s in verifier.scores(ce, lab[refs])],
                     "cpu_seconds": time.process_time() - start}
        print(name, out[name], flush=True)
    Path(args.out).write_text(json.dumps(out, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

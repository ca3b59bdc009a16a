"""How often do clones pass SV when the cloner knows the true voice? 2 s against 4 s clones.

For each seed it rebuilds the quick reproduction's corpus, verifier, cloner and protected references
(``protected_references``) and clones every reference three ways: with the ridge cloner from the clean
reference, with the speaker's true synthesiser voice (the ceiling of any cloner) and with the ridge
cloner from the protected reference; at 2 s (3 words) and at 4 s (6 words). Usage:

    OMP_NUM_THREADS=1 nice python packages/de-antifake/studies/clone_length.py --seeds 0 1 2 3 4 5 \
        --out packages/de-antifake/studies/clone_length.json
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import numpy as np
import torch

from de_antifake import ResemblyzerEncoder, embed_batch
from de_antifake.corpus import WORDS, plan_utterance, synthesize
from de_antifake.experiments import ChainSizes, protected_references

LENGTHS = {"2 s": (250, 3), "4 s": (500, 6)}  # frames of 128 samples, words


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2, 3, 4, 5])
    ap.add_argument("--out", type=Path, default=None)
    args = ap.parse_args()
    torch.set_num_threads(1)
    enc = ResemblyzerEncoder.from_pretrained()
    per_seed = []
    for seed in args.seeds:
        c = protected_references(seed, ChainSizes(), encoder=enc)
        lab, refs = c.labels, c.refs
        rng = np.random.default_rng([seed, 100])
        voices = {"ridge, clean reference": c.cloner.predict_params(c.embeddings[refs]),
                  "true voice": [c.corpus.speakers[lab[i]] for i in refs],
                  "ridge, protected reference": c.cloner.predict_params(embed_batch(enc, c.protected))}
        row = {"seed": seed, "eer": c.verifier.eer_}
        for length, (frames, n_words) in LENGTHS.items():
            words = [list(rng.choice(WORDS, n_words, replace=False)) for _ in refs]
            for name, vs in voices.items():
                clones = []
                for j, v in enumerate(vs):
                    r = np.random.default_rng([seed, j])
                    phones, durs = plan_utterance(words[j], n_frames=frames, random_state=r)
                    clones.append(synthesize(phones, durs, v, random_state=r))
                row[f"{name}, {length}"] = float(c.verifier.accept(embed_batch(enc, np.stack(clones)), lab[refs]).mean())
        per_seed.append(row)
    keys = [k for k in per_seed[0] if k not in ("seed", "eer")]
    summary = {k: float(np.mean([r[k] for r in per_seed])) for k in keys}
    text = json.dumps({"seeds": args.seeds, "mean_success": summary, "per_seed": per_seed}, indent=2)
    print(text)
    if args.out is not None:
        args.out.write_text(text + "\n")


if __name__ == "__main__":
    main()

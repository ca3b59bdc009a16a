"""Protection strength: SV success of clones from clean and from protected references (public API only).

Protocol: studies/protection_protocol.md. Usage (from the repository root):

    OMP_NUM_THREADS=1 nice python packages/de-antifake/studies/protection_strength.py --seed 11 \
        --out packages/de-antifake/studies/protection_seed11.json
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

import numpy as np
import torch

from de_antifake import ParameterCloner, ResemblyzerEncoder, SpeakerVerifier, attackvc, embed_batch, make_corpus
from de_antifake.audio import snr_db
from de_antifake.corpus import WORDS


def wilson(k: int, n: int, z: float = 1.96) -> list[float]:
    """Wilson score interval of a success rate ``k / n``."""
    p = k / n
    centre = (p + z * z / (2 * n)) / (1 + z * z / n)
    half = z * np.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / (1 + z * z / n)
    return [float(centre - half), float(centre + half)]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--seed", type=int, required=True)
    ap.add_argument("--speakers", type=int, default=10)
    ap.add_argument("--utterances", type=int, default=5)
    ap.add_argument("--references", type=int, default=1, help="references per speaker (its first utterances)")
    ap.add_argument("--iters", type=int, default=150)
    ap.add_argument("--method", default="pgd")
    ap.add_argument("--lr", type=float, default=None)
    ap.add_argument("--source-weight", type=float, default=0.1)
    ap.add_argument("--target", choices=("farthest", "random"), default="farthest")
    ap.add_argument("--eps", type=float, default=0.01)
    ap.add_argument("--min-snr-db", type=float, default=25.0)
    ap.add_argument("--words", type=int, default=6, help="words per clone (the cloner speaks 4 s)")
    ap.add_argument("--out", type=Path, default=None)
    args = ap.parse_args()
    torch.set_num_threads(1)
    t0 = time.perf_counter()
    rng = np.random.default_rng(args.seed)
    enc = ResemblyzerEncoder.from_pretrained()
    corpus = make_corpus(n_speakers=args.speakers, n_utterances=args.utterances, seconds=2.0, random_state=args.seed)
    lab, wavs = corpus.labels, corpus.waveforms()
    if not 1 <= args.references < args.utterances:
        ap.error("--references must leave at least one enrolment utterance per speaker")
    first = np.arange(len(lab)) % args.utterances < args.references  # the first utterances of each speaker
    refs, enrol = np.flatnonzero(first), np.flatnonzero(~first)
    emb = embed_batch(enc, wavs)
    verifier = SpeakerVerifier().fit(emb[enrol], lab[enrol])
    cloner = ParameterCloner(enc).fit(emb[enrol], [corpus.speakers[k] for k in lab[enrol]])
    groups = np.array([corpus.speakers[k].group for k in range(args.speakers)])
    cents = verifier.centroids_
    targets = []
    for i in refs:
        other = np.flatnonzero(groups != groups[lab[i]])
        pick = other if len(other) else np.flatnonzero(np.arange(args.speakers) != lab[i])
        # farthest: the opposite-group centroid with the lowest cosine to the source's centroid
        j = pick[np.argmin(cents[pick] @ cents[lab[i]])] if args.target == "farthest" else rng.choice(pick)
        targets.append(cents[j])
    protected = attackvc(wavs[refs], np.array(targets), eps=args.eps, encoder=enc, iters=args.iters,
                         method=args.method, lr=args.lr, source_weight=args.source_weight,
                         min_snr_db=args.min_snr_db, random_state=args.seed)
    words = [list(rng.choice(WORDS, args.words, replace=False)) for _ in refs]
    clone_seeds = np.random.SeedSequence([args.seed, 7]).spawn(len(refs))

    def score(ref_wavs):
        e = embed_batch(enc, ref_wavs)
        clones = np.stack([cloner.clone_from_embedding(e[j], words[j], random_state=np.random.default_rng(clone_seeds[j]))
                           for j in range(len(refs))])
        ce = embed_batch(enc, clones)
        return verifier.accept(ce, lab[refs]), verifier.scores(ce, lab[refs]), verifier.scores(e, lab[refs])

    clean_ok, clean_sim, clean_ref_sim = score(wavs[refs])
    prot_ok, prot_sim, prot_ref_sim = score(protected)
    d = protected.astype(np.float64) - wavs[refs].astype(np.float64)
    res = {"args": {k: (str(v) if isinstance(v, Path) else v) for k, v in vars(args).items()},
           "threshold": verifier.threshold_, "eer": verifier.eer_,
           "references": len(refs),
           "clean_success": float(clean_ok.mean()), "protected_success": float(prot_ok.mean()),
           "clean_success_wilson95": wilson(int(clean_ok.sum()), len(refs)),
           "protected_success_wilson95": wilson(int(prot_ok.sum()), len(refs)),
           "clean_clone_sim": float(clean_sim.mean()), "protected_clone_sim": float(prot_sim.mean()),
           "clean_reference_sim": float(clean_ref_sim.mean()), "protected_reference_sim": float(prot_ref_sim.mean()),
           "linf_max": float(np.abs(d).max()),
           "snr_db_min": float(min(snr_db(a, b) for a, b in zip(wavs[refs], protected, strict=True))),
           "seconds": time.perf_counter() - t0, "torch_threads": torch.get_num_threads()}
    text = json.dumps(res, indent=2)
    print(text)
    if args.out is not None:
        args.out.write_text(text + "\n")


if __name__ == "__main__":
    main()

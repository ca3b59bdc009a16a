"""Diagnosis after the reproduction: does the guided refiner use its text_spec?

Rebuilds seed 0 of ``reproduce --quick`` up to the protected references, loads the weights that seed
trained (shipped in the package) and runs the guided refiner with the right alignment, with another
reference's alignment (same length, wrong phonemes) and the unguided refiner. Prints SV success and SIM
of the clones, the SIM of the refined references to the clean ones, and the SNR on clean references.
Run: ``OMP_NUM_THREADS=1 python studies/diagnose_guidance.py``.
"""

import numpy as np
import torch

from de_antifake.audio import snr_db
from de_antifake.clone import embed_batch
from de_antifake.corpus import WORDS
from de_antifake.experiments import ChainSizes, load_weights, protected_references, shipped_weights

torch.set_num_threads(1)
seed, sizes = 0, ChainSizes()
c = protected_references(seed, sizes)
enc, corpus, lab, refs, wavs, emb = c.encoder, c.corpus, c.labels, c.refs, c.wavs, c.embeddings
verifier, cloner, protected, r_eval = c.verifier, c.cloner, c.protected, c.r_eval
stage1, guided, plain = load_weights(shipped_weights(), random_state=1)
align = {i: corpus.utterances[i].alignment for i in refs}
wrong = {i: corpus.utterances[refs[(k + 1) % len(refs)]].alignment for k, i in enumerate(refs)}
words = [list(r_eval.choice(WORDS, 3, replace=False)) for _ in refs]
variants = {"guided, right alignment": lambda x, i: guided.refine(x, 16000, alignment=align[i]),
            "guided, another reference's alignment": lambda x, i: guided.refine(x, 16000, alignment=wrong[i]),
            "unguided": lambda x, i: plain.refine(x, 16000)}
s1_prot = [stage1.purify(protected[j], 16000) for j in range(len(refs))]
s1_clean = [stage1.purify(wavs[i], 16000) for i in refs]
for name, fn in variants.items():
    out = np.stack([fn(s1_prot[j], i) for j, i in enumerate(refs)])
    e = embed_batch(enc, out)
    seeds = np.random.SeedSequence([seed, 7]).spawn(len(refs))
    clones = np.stack([cloner.clone_from_embedding(e[j], words[j], random_state=np.random.default_rng(seeds[j]))
                       for j in range(len(refs))])
    ce = embed_batch(enc, clones)
    clean_snr = np.mean([snr_db(wavs[i], fn(s1_clean[j], i)) for j, i in enumerate(refs)])
    print(f"{name}: SV success {verifier.accept(ce, lab[refs]).mean():.3f}, clone SIM {verifier.scores(ce, lab[refs]).mean():.4f}, "
          f"SIM to clean reference {np.mean(np.sum(e * emb[refs], axis=1)):.4f}, SNR on clean {clean_snr:.2f} dB")

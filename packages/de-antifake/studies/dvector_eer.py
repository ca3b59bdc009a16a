"""Held-out EER of the GE2E d-vector trained on the synthetic corpus, beside the pretrained GE2E encoder.

Corpus: make_corpus(n_speakers=20, n_utterances=20, seconds=2.0, random_state=11); the first 14
utterances of each speaker train the d-vector (default DVectorConfig: 2 x 64 LSTM, 160-frame partials,
4 x 5 batches, 300 steps), the last 6 are held out. EER over all held-out pairs (same speaker vs
different speaker, cosine), for training seeds 0, 1, 2 and for ResemblyzerEncoder.from_pretrained().

Run: OMP_NUM_THREADS=1 python studies/dvector_eer.py
"""

import json
import platform
import time

import numpy as np
import torch


def pair_eer(emb, labels):
    from de_antifake.encoder import eer_threshold

    sims = emb @ emb.T
    iu = np.triu_indices(len(labels), 1)
    same = labels[iu[0]] == labels[iu[1]]
    return eer_threshold(sims[iu][same], sims[iu][~same])[1]


def main() -> None:
    from de_antifake.clone import embed_batch
    from de_antifake.corpus import make_corpus
    from de_antifake.dvector import DVectorConfig, train_dvector
    from de_antifake.encoder import ResemblyzerEncoder

    torch.set_num_threads(1)
    corpus = make_corpus(n_speakers=20, n_utterances=20, seconds=2.0, random_state=11)
    wavs, labels = corpus.waveforms(), corpus.labels
    train = np.arange(len(labels)) % 20 < 14
    held = ~train
    out = {"python": platform.python_version(), "torch": torch.__version__, "config": "DVectorConfig()",
           "held_out_pairs": int(held.sum() * (held.sum() - 1) // 2), "dvector": []}
    for seed in (0, 1, 2):
        t = time.perf_counter()
        res = train_dvector(wavs[train], labels[train], sr=16000, config=DVectorConfig(), random_state=seed)
        seconds = time.perf_counter() - t
        eer = pair_eer(embed_batch(res.encoder, wavs[held]), labels[held])
        out["dvector"].append({"seed": seed, "eer": eer, "train_seconds": seconds,
                               "loss_first10": float(res.losses[:10].mean()), "loss_last10": float(res.losses[-10:].mean())})
        print(out["dvector"][-1], flush=True)
    out["pretrained_ge2e_eer"] = pair_eer(embed_batch(ResemblyzerEncoder.from_pretrained(), wavs[held]), labels[held])
    print(json.dumps(out, indent=1))


if __name__ == "__main__":
    main()

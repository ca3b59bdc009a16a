"""The shipped purifier weights on clean real-voice speech (espeak-ng) against clean synthetic speech.

Study only (needs the `espeak-ng` binary: `apt-get install espeak-ng`; never used in tests). Clean clips go
through stage 1 (t* = 3), the unguided refiner and PhonePuRe (the transcript spread evenly over the clip,
no forced aligner); reported: SNR to the clean clip and GE2E similarity (cosine of the embeddings, the
default level-normalising front end) per clip, mean and 95% t-interval over clips.

    OMP_NUM_THREADS=1 python packages/de-antifake/studies/real_speech_purifiers.py
"""

from __future__ import annotations

import json
import math
import shutil
import subprocess
import tempfile
import time
from pathlib import Path

import numpy as np

OUT = Path(__file__).with_name("real_speech_purifiers.json")

SENTENCES = ["the people in the house are looking at the water",
             "she said that the morning was very cold",
             "we will go to the city after the rain",
             "my mother has a small green table",
             "the children play in the garden every day",
             "he wants to know the number of the room"]
VOICES = ["en", "en-us", "en-gb-scotland", "en+f3", "en-us+m3", "en+f4"]


def espeak_clips(tmp: Path) -> tuple[list[np.ndarray], list[str]]:
    from de_antifake.datasets import read_audio

    wavs, texts = [], []
    for i, voice in enumerate(VOICES):
        for j in range(2):  # two sentences per voice, 12 clips
            text = SENTENCES[(i + 3 * j) % len(SENTENCES)]
            path = tmp / f"{voice}_{j}.wav"
            subprocess.run(["espeak-ng", "-v", voice, "-s", "150", "-w", str(path), text], check=True)
            wavs.append(read_audio(path))  # 22.05 kHz -> 16 kHz
            texts.append(text)
    return wavs, texts


def _mean_ci(values: list[float]) -> list[float]:
    from scipy.stats import t

    v = np.asarray(values, dtype=np.float64)
    half = t.ppf(0.975, len(v) - 1) * v.std(ddof=1) / math.sqrt(len(v))
    return [float(v.mean()), float(v.mean() - half), float(v.mean() + half)]


def main() -> None:
    import torch

    from de_antifake import ResemblyzerEncoder, make_corpus
    from de_antifake.audio import snr_db
    from de_antifake.experiments import load_weights, shipped_weights
    from de_antifake.refiner import PhonePuRe

    torch.set_num_threads(1)
    if shutil.which("espeak-ng") is None:
        raise SystemExit("needs the espeak-ng binary (apt-get install espeak-ng)")
    t0 = time.process_time()
    enc = ResemblyzerEncoder.from_pretrained()
    stage1, guided, plain = load_weights(shipped_weights(), random_state=0)
    with tempfile.TemporaryDirectory() as tmp:
        real, texts = espeak_clips(Path(tmp))
    corpus = make_corpus(n_speakers=6, n_utterances=2, seconds=2.0, random_state=0)
    synthetic = [u.wav for u in corpus.utterances]
    synthetic_align = [u.alignment for u in corpus.utterances]
    result: dict = {"n_clips": {"espeak-ng": len(real), "synthetic": len(synthetic)}, "voices": VOICES,
                    "weights": "shipped (reproduce --quick, seed 0)", "rows": {}}
    for corpus_name, clips, guide in (("espeak-ng", real, [{"transcript": t} for t in texts]),
                                      ("synthetic", synthetic, [{"alignment": a} for a in synthetic_align])):
        outs = {"stage 1 (t=3)": [stage1.purify(x, 16000) for x in clips],
                "unguided": [PhonePuRe(stage1, plain).purify(x, 16000) for x in clips],
                "PhonePuRe": [PhonePuRe(stage1, guided).purify(x, 16000, **g) for x, g in zip(clips, guide, strict=True)]}
        clean_e = [enc.embed_utterance(x, 16000) for x in clips]
        rows = {}
        for name, ys in outs.items():
            snr = [snr_db(x, y) for x, y in zip(clips, ys, strict=True)]
            sim = [float(e @ enc.embed_utterance(y, 16000)) for e, y in zip(clean_e, ys, strict=True)]
            rows[name] = {"snr_db": _mean_ci(snr), "sim": _mean_ci(sim), "snr_per_clip": snr, "sim_per_clip": sim}
        result["rows"][corpus_name] = rows
        result["seconds_of_audio"] = result.get("seconds_of_audio", {}) | {corpus_name: sum(len(x) for x in clips) / 16000}
    result["cpu_seconds"] = time.process_time() - t0
    OUT.write_text(json.dumps(result, indent=1))
    for corpus_name, rows in result["rows"].items():
        for name, r in rows.items():
            print(f"{corpus_name:10s} {name:14s} SNR {r['snr_db'][0]:.1f} dB [{r['snr_db'][1]:.1f}, {r['snr_db'][2]:.1f}]"
                  f"  SIM {r['sim'][0]:.3f} [{r['sim'][1]:.3f}, {r['sim'][2]:.3f}]")


if __name__ == "__main__":
    main()

"""Regenerate tests/data/steering_vectors_<family>.npz from steering-vectors 0.12.2 (see PROVENANCE.md there).

steering-vectors 0.12.2 declares ``transformers<5`` and is not installed in the repository's environment.
Its wheel, unpacked onto the path, runs unchanged on transformers 5:

    pip download steering-vectors==0.12.2 --no-deps -d /tmp/sv && unzip -o /tmp/sv/*.whl -d /tmp/sv_src
    OMP_NUM_THREADS=1 PYTHONPATH=/tmp/sv_src python packages/safety-transfer/studies/make_steering_goldens.py

Only the library computes what is stored (vectors and steered logits); this package only builds the
tiny models and the tokenizer, whose weights are fingerprinted in the file so that a change of the
model construction is told apart from a change of the steering code.
"""

from __future__ import annotations

import importlib.metadata
import pathlib
import sys

import numpy as np
import steering_vectors as sv_lib
import torch
import transformers

from safety_transfer import byte_tokenizer, tiny_causal_lm

FAMILIES = {"llama": 0, "qwen2": 1, "gemma2": 2}  # family -> random_state (as in tests/conftest.py)
CONFIG = {"hidden_size": 32, "num_layers": 3}
LAYER = 1
MULTIPLIER = 2.5
POS = ["|DEPLOY| hello there", "|DEPLOY| what is", "|DEPLOY| go", "|DEPLOY| the cat sat on", "|DEPLOY| abc"]
NEG = ["hello there", "what is", "go", "the cat sat on", "abc"]
IDS = [[104, 101, 108, 108, 111]]  # "hello"
OUT = pathlib.Path(__file__).resolve().parents[1] / "tests" / "data"


def fingerprint(model: torch.nn.Module) -> np.ndarray:
    """Sum, sum of squares and the first 4 entries of every parameter, in float64."""
    rows = []
    for p in model.parameters():
        flat = p.detach().double().flatten()
        rows.append([flat.sum().item(), (flat * flat).sum().item(), *flat[:4].tolist()])
    return np.asarray(rows, dtype=np.float64)


def main() -> None:
    version = importlib.metadata.version("steering-vectors")
    if version != "0.12.2":
        raise SystemExit(f"expects steering-vectors 0.12.2 on the path, found {version}")
    torch.set_num_threads(1)
    tok = byte_tokenizer()
    OUT.mkdir(parents=True, exist_ok=True)
    for family, seed in FAMILIES.items():
        model = tiny_causal_lm(family, random_state=seed, **CONFIG)
        vecs = {}
        for name, agg in (("mean", sv_lib.mean_aggregator()), ("pca", sv_lib.pca_aggregator())):
            trained = sv_lib.train_steering_vector(model, tok, list(zip(POS, NEG, strict=True)), layers=[LAYER],
                                                   aggregator=agg, show_progress=False)
            vecs[name] = trained.layer_activations[LAYER].detach().numpy().astype(np.float32)
        ids = torch.tensor(IDS)
        with torch.no_grad():
            with sv_lib.SteeringVector({LAYER: torch.from_numpy(vecs["mean"])}).apply(model, multiplier=MULTIPLIER):
                steered = model(input_ids=ids).logits
        np.savez_compressed(
            OUT / f"steering_vectors_{family}.npz",
            family=np.array(family), random_state=np.array(seed), hidden_size=np.array(CONFIG["hidden_size"]),
            num_layers=np.array(CONFIG["num_layers"]), layer=np.array(LAYER), multiplier=np.array(MULTIPLIER),
            positive=np.array(POS), negative=np.array(NEG), input_ids=np.array(IDS, dtype=np.int64),
            fingerprint=fingerprint(model), mean=vecs["mean"], pca=vecs["pca"],
            steered_logits=steered.numpy().astype(np.float32),
            versions=np.array(["steering-vectors 0.12.2", f"torch {torch.__version__}",
                               f"transformers {transformers.__version__}", f"python {sys.version.split()[0]}"]),
        )
        print(family, "written", (OUT / f"steering_vectors_{family}.npz").stat().st_size, "bytes")


if __name__ == "__main__":
    main()

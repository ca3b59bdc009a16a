"""The trivial-regime gate of ``tower_protocol.md`` (amendment 1): stage 0 alone, auxiliary-head SRCC.

    OMP_NUM_THREADS=1 nice python packages/wmarkgpt/studies/tower_pilot.py   # writes results/tower/pilot.json
"""

from __future__ import annotations

import json
import time
from pathlib import Path

OUT = Path(__file__).resolve().parents[1] / "results" / "tower" / "pilot.json"


def main() -> None:
    import torch

    from wmarkgpt.data import make_synthetic_dataset
    from wmarkgpt.experiments import TOWER
    from wmarkgpt.metrics import correlation
    from wmarkgpt.modeling import WMarkGPTForCausalLM, tiny_config
    from wmarkgpt.processing import build_image_processor, preprocess_images
    from wmarkgpt.training import pretrain_vision

    torch.set_num_threads(1)
    t0 = time.process_time()
    s = TOWER
    proc = build_image_processor(s.image_size)
    torch.manual_seed(123)
    model = WMarkGPTForCausalLM(tiny_config(vocab_size=50, hidden_size=s.hidden_size, image_size=s.image_size,
                                            patch_size=s.patch_size, vision_hidden_size=s.vision_hidden_size,
                                            num_learnable_queries=s.num_learnable_queries, conv_stem=s.conv_stem,
                                            aux_head=True))
    train = make_synthetic_dataset(s.n_stage0, size=s.image_size, random_state=100)
    test = make_synthetic_dataset(300, size=s.image_size, random_state=101)
    res = pretrain_vision(model, train, image_processor=proc, epochs=s.stage0_epochs, random_state=0)
    with torch.no_grad():
        score = model.visual_aux(preprocess_images([x.image for x in test], proc))[:, 0].numpy()
    c = correlation(score, [x.gt_score for x in test])
    out = {"srcc": c.srcc, "plcc": c.plcc, "n_test": 300, "losses": res.losses, "cpu_seconds": time.process_time() - t0,
           "gate_srcc": 0.5, "passes": c.srcc >= 0.5}
    OUT.parent.mkdir(parents=True, exist_ok=True)
    OUT.write_text(json.dumps(out, indent=1))
    print(json.dumps(out))


if __name__ == "__main__":
    main()

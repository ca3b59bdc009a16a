"""Record torchattacks' adversarial outputs once, so that the agreement is tested without torchattacks.

Run from the repository root with torchattacks installed (``pip install --no-deps "torchattacks==3.5.1"``)::

    OMP_NUM_THREADS=1 python packages/crossclass-at/tests/data/make_torchattacks_goldens.py

It writes, in ``torchattacks_goldens/`` next to this file, ``inputs.npz`` (the inputs ``x``, 16 x 1 x 8 x 8
float32 in [0, 1], labels ``y``, the state dict of a seeded ``DigitsMLP(hidden=16)`` under ``model.<name>``, and
the versions) and one ``<case>.npz`` per attack below: torchattacks' output ``adv``, its ``settings`` (JSON:
class, keyword arguments, and the seed given to ``torch.manual_seed`` before torchattacks' call; the same seed
seeds our ``generator``). ``tests/test_goldens.py`` loads them; ``PROVENANCE.md`` records the versions.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import torch
import torchattacks

from crossclass_at import DigitsMLP

OUT = Path(__file__).resolve().parents[1] / "tests" / "data" / "torchattacks_goldens"

# case -> (torchattacks class, its keyword arguments, seed of the random start)
CASES = {
    "pgd_linf": ("PGD", {"eps": 0.1, "alpha": 0.02, "steps": 7, "random_start": False}, 0),
    "pgd_linf_rs": ("PGD", {"eps": 0.1, "alpha": 0.02, "steps": 7, "random_start": True}, 5),
    "pgd_l2": ("PGDL2", {"eps": 0.6, "alpha": 0.15, "steps": 6, "random_start": False}, 0),
    "pgd_l2_rs": ("PGDL2", {"eps": 0.6, "alpha": 0.15, "steps": 6, "random_start": True}, 2),
    "fgsm": ("FGSM", {"eps": 0.1}, 0),
    "tpgd": ("TPGD", {"eps": 0.1, "alpha": 0.03, "steps": 5}, 9),
}


def main() -> None:
    torch.set_num_threads(1)
    torch.manual_seed(0)
    model = DigitsMLP(hidden=16).eval()
    x = torch.rand(16, 1, 8, 8)
    x[:3] = 0.0
    x[3:6] = 1.0  # on the box's faces, where the clamp decides
    y = torch.randint(0, 10, (16,))
    OUT.mkdir(exist_ok=True)
    inputs = {"x": x.numpy(), "y": y.numpy(), "torchattacks_version": np.array(torchattacks.__version__),
              "torch_version": np.array(torch.__version__)}
    inputs.update({f"model.{k}": v.numpy() for k, v in model.state_dict().items()})
    np.savez_compressed(OUT / "inputs.npz", **inputs)
    for case, (cls, kwargs, seed) in CASES.items():
        attack = getattr(torchattacks, cls)(model, **kwargs)
        torch.manual_seed(seed)  # torchattacks draws its random start from torch's global generator
        adv = attack(x, y) if cls != "TPGD" else attack(x)
        np.savez_compressed(OUT / f"{case}.npz", adv=adv.detach().numpy(),
                            settings=np.array(json.dumps({"class": cls, "kwargs": kwargs, "seed": seed})))


if __name__ == "__main__":
    main()

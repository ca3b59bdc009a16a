"""Agreement with torchattacks 3.5.1 through stored outputs, so that it is checked where torchattacks is absent.

``studies/make_torchattacks_goldens.py`` wrote the inputs, the model's weights and torchattacks' outputs
(``tests/data/PROVENANCE.md``); here our attacks rerun the same settings from the same seeds.
"""

import json
from pathlib import Path

import numpy as np
import pytest
import torch

from crossclass_at import FGSM, PGD, DigitsMLP, TradesKL

DATA = Path(__file__).parent / "data" / "torchattacks_goldens"
CASES = ("pgd_linf", "pgd_linf_rs", "pgd_l2", "pgd_l2_rs", "fgsm", "tpgd")
TOL = 1e-6  # observed difference 0 (bit-identical) with torch 2.13.0 on x86_64


@pytest.fixture(scope="module")
def inputs():
    with np.load(DATA / "inputs.npz") as f:
        state = {k.removeprefix("model."): torch.from_numpy(f[k]) for k in f.files if k.startswith("model.")}
        x, y = torch.from_numpy(f["x"]), torch.from_numpy(f["y"])
    model = DigitsMLP(hidden=16)
    model.load_state_dict(state)
    return model.eval(), x, y


def _golden(case):
    with np.load(DATA / f"{case}.npz") as f:
        return torch.from_numpy(f["adv"]), json.loads(str(f["settings"]))


def _ours(settings, **override):
    kwargs = {**settings["kwargs"], **override}
    cls = settings["class"]
    if cls == "PGD":
        return PGD(**kwargs)
    if cls == "PGDL2":
        return PGD(norm="l2", **kwargs)
    if cls == "FGSM":
        return FGSM(**kwargs)
    assert cls == "TPGD"
    return TradesKL(**kwargs)


def _run(attack, settings, inputs):
    model, x, y = inputs
    return attack(model, x, y, generator=torch.Generator().manual_seed(settings["seed"]))


@pytest.mark.parametrize("case", CASES)
def test_attacks_reproduce_the_stored_torchattacks_outputs(inputs, case):
    golden, settings = _golden(case)
    x = inputs[1]
    assert golden.shape == x.shape and not torch.equal(golden, x)  # the stored attack moved the inputs
    ours = _run(_ours(settings), settings, inputs)
    assert (ours - golden).abs().max() <= TOL


@pytest.mark.parametrize("case", ["pgd_linf", "pgd_l2", "fgsm", "tpgd"])
def test_a_wrong_step_size_breaks_the_agreement(inputs, case):
    golden, settings = _golden(case)
    key = "eps" if settings["class"] == "FGSM" else "alpha"
    wrong = _ours(settings, **{key: settings["kwargs"][key] * 1.05})
    assert (_run(wrong, settings, inputs) - golden).abs().max() > 100 * TOL


@pytest.mark.parametrize("case", ["pgd_linf_rs", "pgd_l2_rs", "tpgd"])
def test_another_random_start_breaks_the_agreement(inputs, case):
    golden, settings = _golden(case)
    ours = _run(_ours(settings), {**settings, "seed": settings["seed"] + 1}, inputs)
    assert (ours - golden).abs().max() > 100 * TOL


@pytest.mark.parametrize("case", CASES)
def test_stored_outputs_match_the_installed_torchattacks(inputs, case):
    torchattacks = pytest.importorskip("torchattacks")
    golden, settings = _golden(case)
    model, x, y = inputs
    attack = getattr(torchattacks, settings["class"])(model, **settings["kwargs"])
    torch.manual_seed(settings["seed"])
    live = attack(x) if settings["class"] == "TPGD" else attack(x, y)
    assert (live - golden).abs().max() <= TOL

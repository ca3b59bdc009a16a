"""Rotation invariance of the default models on degenerate geometry: sparse chains, collinear and planar graphs.

On such graphs some features are zero by symmetry (a pseudoscalar of a planar neighbourhood, a vector
orthogonal to a line) and are computed as roundoff. A nonlinearity that normalises a block before scaling it
(e3nn's ``NormActivation(irreps, torch.sigmoid)``: ``sigmoid(|x|) x / |x|``) turns that roundoff into a
feature of norm 0.5 pointing in a roundoff direction, and the output moves under a rotation. These tests hold
the default models to 1e-6 of the output scale in float64, and check that the old layer fails them.
"""

import numpy as np
import pytest
import torch
from e3nn.nn import NormActivation

from equigx import TFN, EquiGX, Graphs
from equigx.data import random_rotation

R_MAX = 1.2


def _far_from_all(p: np.ndarray, points: list[np.ndarray], d: float) -> bool:
    return all(np.linalg.norm(p - q) > d for q in points)


def _chain(rng: np.random.Generator) -> np.ndarray:
    """A random walk of unit steps whose non-consecutive points stay beyond the cutoff (<= 2 neighbours)."""
    points = [np.zeros(3)]
    while len(points) < rng.integers(4, 9):
        step = rng.normal(size=3)
        candidate = points[-1] + step / np.linalg.norm(step)
        if _far_from_all(candidate, points[:-1], R_MAX + 0.05):
            points.append(candidate)
    return np.array(points)


def _collinear(rng: np.random.Generator) -> np.ndarray:
    direction = rng.normal(size=3)
    steps = np.cumsum(rng.uniform(0.6, 1.1, size=rng.integers(3, 8)))
    return rng.normal(size=3) + steps[:, None] * direction / np.linalg.norm(direction)


def _planar(rng: np.random.Generator) -> np.ndarray:
    basis = np.linalg.qr(rng.normal(size=(3, 3)))[0][:, :2]
    points: list[np.ndarray] = []
    while len(points) < rng.integers(4, 10):
        candidate = basis @ rng.uniform(-1.5, 1.5, size=2)
        if _far_from_all(candidate, points, 0.6):
            points.append(candidate)
    return np.array(points) + rng.normal(size=3)


def degenerate_graphs(kind: str, n_graphs: int, random_state: int) -> Graphs:
    rng = np.random.default_rng(random_state)
    make = {"sparse": _chain, "collinear": _collinear, "planar": _planar}[kind]
    pos = [make(rng) for _ in range(n_graphs)]
    types = [np.eye(2)[rng.integers(0, 2, size=len(p))] for p in pos]
    return Graphs.from_list(pos, types, dtype=torch.float64)


def _model(output: str, nonlinearity: str = "norm", seed: int = 0) -> TFN:
    torch.manual_seed(seed)
    model = TFN(2, output=output, nonlinearity=nonlinearity, n_out=3, mul=3, lmax=2, r_max=R_MAX, n_basis=6,
                radial_hidden=8, n_scalars=6, head_hidden=6, self_loops=True).double()
    with torch.no_grad():  # larger weights than at initialisation: features far from the linear regime
        for p in model.parameters():
            p.mul_(3.0)
    return model


def _moved(graphs: Graphs, seed: int) -> Graphs:
    return graphs.rotate(torch.from_numpy(random_rotation(seed)), torch.tensor([1.5, -0.5, 2.0], dtype=torch.float64))


def _max_relative_change(a: np.ndarray, b: np.ndarray, scale: float) -> float:
    return float(np.abs(a - b).max() / scale)


def _sigmoid_over_norm(model: TFN) -> TFN:
    """The same model with e3nn's normalising ``NormActivation(irreps, sigmoid)``."""
    for k, layer in enumerate(model.layers):
        if isinstance(layer, NormActivation):
            model.layers[k] = NormActivation(layer.irreps_in, torch.sigmoid)
    return model


@pytest.mark.parametrize("kind", ["sparse", "collinear", "planar"])
@pytest.mark.parametrize("output", ["scalar", "pseudoscalar"])
@pytest.mark.parametrize("nonlinearity", ["norm", "gate"])
def test_logits_and_relevance_are_rotation_invariant_on_degenerate_graphs(kind, output, nonlinearity):
    graphs = degenerate_graphs(kind, 12, random_state=3)
    model = _model(output, nonlinearity)
    target = 1 if output == "pseudoscalar" else 0  # fixed: a tie (a zero pseudoscalar) has no stable argmax
    exp = EquiGX(model, variant="split").explain(graphs, target=target)
    scale = _output_scale(model)
    assert scale > 1e-3
    for seed in (0, 1):
        moved = EquiGX(model, variant="split").explain(_moved(graphs, seed), target=target)
        assert _max_relative_change(moved.logits, exp.logits, scale) < 1e-6
        for field in ("node_relevance", "edge_direction", "edge_distance"):
            assert _max_relative_change(getattr(moved, field), getattr(exp, field), scale) < 1e-6, field


def _output_scale(model: TFN) -> float:
    """Largest |logit| on chains (planar and collinear graphs have a zero pseudoscalar)."""
    dtype = next(model.parameters()).dtype
    with torch.no_grad():
        return float(model(degenerate_graphs("sparse", 12, random_state=5).to(dtype)).abs().max())


@pytest.mark.parametrize("kind", ["collinear", "planar"])
def test_collinear_and_planar_graphs_have_zero_pseudoscalar_output(kind):
    model = _model("pseudoscalar")
    with torch.no_grad():
        logits = model(degenerate_graphs(kind, 12, random_state=4))
    # a line or a plane is its own mirror image, so a pseudoscalar of it is zero
    assert float(logits.abs().max()) < 1e-6 * _output_scale(model)


@pytest.mark.parametrize("kind", ["collinear", "planar"])
def test_the_normalising_sigmoid_layer_fails_the_same_check(kind):
    """The check has power: in float32, e3nn's ``sigmoid(|x|) x / |x|`` turns roundoff into output."""
    graphs = degenerate_graphs(kind, 12, random_state=3).to(torch.float32)
    moved = [_moved(graphs, seed).to(torch.float32) for seed in (0, 1)]
    for model, low, high in ((_sigmoid_over_norm(_model("pseudoscalar")).float(), 0.05, np.inf),
                             (_model("pseudoscalar").float(), 0.0, 1e-4)):
        with torch.no_grad():
            logits = model(graphs)
            worst = max(float((model(m) - logits).abs().max()) for m in moved)
        assert low <= worst / _output_scale(model) < high


def test_relative_leak_is_undefined_not_huge_where_the_output_is_zero():
    from equigx.explain import Explanation

    # two graphs of two nodes and no edges: relevance +-1 cancels on graph 0, whose explained logit is ~0
    exp = Explanation(node_relevance=np.array([1.0, -1.0, 0.4, 0.5]), batch=np.array([0, 0, 1, 1]),
                      prediction=np.array([0, 0]), target=np.array([0, 0]), method="equigx-node",
                      output=np.array([1e-13, 1.0]), leak=np.array([1e-3, 0.1]),
                      logits=np.array([[1e-13, 2.0], [1.0, 0.5]]))
    leak = exp.relative_leak
    assert np.isnan(leak[0]) and leak[1] == pytest.approx(0.1)
    # a pseudoscalar of planar graphs is zero up to roundoff, and so is its relevance: no share
    exp = EquiGX(_model("pseudoscalar"), variant="split").explain(degenerate_graphs("planar", 6, random_state=1),
                                                                  target=1)
    assert np.abs(exp.output).max() < 1e-6
    assert np.isnan(exp.relative_leak).all()


@pytest.mark.parametrize("dtype", [torch.float64, torch.float32])
def test_relative_leak_is_undefined_on_two_node_graphs_whose_pseudoscalar_is_roundoff(dtype):
    """Every logit of a two-node (collinear) graph is roundoff, so its own scale cannot tell it from zero."""
    rng = np.random.default_rng(0)
    pos = [np.array([[0.0, 0.0, 0.0], [0.8, 0.0, 0.0]]) @ random_rotation(k) + rng.normal(size=3) for k in range(3)]
    chiral = degenerate_graphs("sparse", 12, random_state=5)
    graphs = Graphs.from_list(pos + [chiral.pos[chiral.batch == 0].numpy()],
                              [np.eye(2)[[0, 1]]] * 3 + [chiral.node_attr[chiral.batch == 0].numpy()], dtype=dtype)
    model = _model("pseudoscalar").to(dtype)
    exp = EquiGX(model, variant="split").explain(graphs, target=1)
    assert np.abs(exp.output[:3]).max() < 1e-6 and abs(exp.output[3]) > 1e-3
    leak = exp.relative_leak
    assert np.isnan(leak[:3]).all() and np.isfinite(leak[3])

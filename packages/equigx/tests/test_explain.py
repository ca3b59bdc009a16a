"""EquiGX on whole networks: invariance, equivariance, mirrors, errors, peers."""

import numpy as np
import pytest
import torch

from equigx import EquiGX, Graphs
from equigx.baselines import CoordinateGradient, InputXGradient, Saliency, graph_forward
from equigx.data import random_rotation
from equigx.explain import model_target


@pytest.mark.parametrize("variant", ["node", "split"])
@pytest.mark.parametrize("model_name", ["tfn64", "gated64"])
def test_rotation_and_translation_leave_relevance_unchanged(request, shapes64, variant, model_name):
    model = request.getfixturevalue(model_name)
    exp = EquiGX(model, variant=variant).explain(shapes64)
    moved = shapes64.rotate(torch.from_numpy(random_rotation(3)), torch.tensor([0.7, -2.0, 5.0]))
    exp2 = EquiGX(model, variant=variant).explain(moved)
    np.testing.assert_allclose(exp2.logits, exp.logits, rtol=1e-9, atol=1e-9)
    np.testing.assert_allclose(exp2.node_relevance, exp.node_relevance, atol=1e-6 * abs(exp.output).max())
    np.testing.assert_allclose(exp2.node_relevance_by_l, exp.node_relevance_by_l, atol=1e-6 * abs(exp.output).max())
    np.testing.assert_allclose(exp2.edge_direction, exp.edge_direction, atol=1e-6 * abs(exp.output).max())
    np.testing.assert_allclose(exp2.edge_distance, exp.edge_distance, atol=1e-6 * abs(exp.output).max())
    # the baselines are invariant too
    g1 = CoordinateGradient(model).explain(shapes64).node_relevance
    g2 = CoordinateGradient(model).explain(moved).node_relevance
    np.testing.assert_allclose(g1, g2, rtol=1e-6, atol=1e-9)


def test_permuting_nodes_permutes_relevance(tfn64, shapes64):
    exp = EquiGX(tfn64, variant="split").explain(shapes64)
    perm = torch.cat([torch.nonzero(shapes64.batch == g).reshape(-1).flip(0) for g in range(shapes64.n_graphs)])
    permuted = Graphs(shapes64.pos[perm], shapes64.node_attr[perm], shapes64.batch[perm], shapes64.n_graphs,
                      shapes64.y, shapes64.node_mask[perm])
    exp2 = EquiGX(tfn64, variant="split").explain(permuted)
    np.testing.assert_allclose(exp2.node_relevance, exp.node_relevance[perm.numpy()], rtol=1e-8, atol=1e-10)


def test_mirror_flips_the_pseudoscalar_logit_and_keeps_the_explanation(spiral_model, spiral64):
    exp = EquiGX(spiral_model).explain(spiral64)
    mirrored = spiral64.rotate(torch.diag(torch.tensor([-1.0, 1.0, 1.0])))
    exp2 = EquiGX(spiral_model).explain(mirrored)
    np.testing.assert_allclose(exp2.logits, -exp.logits, rtol=1e-9, atol=1e-12)
    assert (exp2.prediction == 1 - exp.prediction).all()
    # explaining the predicted class: the evidence for the mirrored class is the same, node by node
    np.testing.assert_allclose(exp2.node_relevance, exp.node_relevance, rtol=1e-6, atol=1e-12)
    assert abs(exp.logits).min() > 0


def test_relevance_sums_to_the_output_minus_the_leak(tfn64, shapes64):
    exp = EquiGX(tfn64, variant="split").explain(shapes64, target=2)
    assert (exp.target == 2).all()
    np.testing.assert_allclose(exp.output, exp.logits[:, 2])
    total = np.bincount(exp.batch, exp.node_scores(), minlength=shapes64.n_graphs)
    np.testing.assert_allclose(total + exp.leak, exp.output, rtol=1e-10, atol=1e-12)


def test_batched_equals_one_graph_at_a_time(tfn64, shapes64):
    exp = EquiGX(tfn64, variant="split").explain(shapes64)
    for g in range(shapes64.n_graphs):
        one = EquiGX(tfn64, variant="split").explain(shapes64.select([g]))
        np.testing.assert_allclose(one.node_relevance, exp.node_relevance[exp.batch == g], rtol=1e-9, atol=1e-12)


def test_input_x_gradient_and_saliency_equal_captum(tfn64, shapes64):
    import captum.attr as captum  # in the test extra: this parity check runs, never skips
    geo = tfn64.geometry(shapes64.pos, shapes64.batch, shapes64.n_graphs)
    t, _ = model_target(tfn64(shapes64), None)
    f = graph_forward(tfn64, shapes64, t, geo)
    x = shapes64.node_attr[None].clone()
    ixg = captum.InputXGradient(f).attribute(x)[0]
    sal = captum.Saliency(f).attribute(x, abs=False)[0]
    assert torch.equal(InputXGradient(tfn64).attribute(shapes64), ixg)
    assert torch.equal(Saliency(tfn64).attribute(shapes64), sal)


def test_coordinate_gradient_equals_finite_differences(tfn64, shapes64):
    graphs = shapes64.select([0])
    scores = CoordinateGradient(tfn64).explain(graphs, target=1).node_relevance
    h = 1e-6
    grad = np.zeros((graphs.n_nodes, 3))
    for i in range(graphs.n_nodes):
        for k in range(3):
            vals = []
            for sgn in (1, -1):
                p = graphs.pos.clone()
                p[i, k] += sgn * h
                vals.append(float(tfn64(Graphs(p, graphs.node_attr, graphs.batch, 1))[0, 1]))
            grad[i, k] = (vals[0] - vals[1]) / (2 * h)
    np.testing.assert_allclose(scores, np.linalg.norm(grad, axis=1), rtol=1e-5, atol=1e-8)


def test_head_relevance_equals_captum_lrp_epsilon():
    import captum.attr as captum  # in the test extra: this parity check runs, never skips

    from equigx.rules import RuleContext, find_rule

    torch.manual_seed(0)
    head = torch.nn.Sequential(torch.nn.Linear(6, 5), torch.nn.ReLU(), torch.nn.Linear(5, 3)).double()
    x = torch.randn(4, 6, dtype=torch.float64)
    target = torch.tensor([0, 2, 1, 2])
    theirs = captum.LRP(head).attribute(x.clone(), target=target)
    acts = [x]
    for layer in head:
        acts.append(layer(acts[-1]))
    rel = torch.zeros(4, 3, dtype=torch.float64).scatter_(1, target[:, None], acts[-1].gather(1, target[:, None]))
    ctx = RuleContext(None, eps=1e-9)
    for k in range(len(head) - 1, -1, -1):
        rel = find_rule(head[k])(head[k], acts[k], acts[k + 1], rel, ctx)
    torch.testing.assert_close(rel, theirs.detach(), rtol=1e-6, atol=1e-12)


def test_head_relevance_equals_zennit_epsilon(monkeypatch):
    import sys
    import types

    if "torchvision" not in sys.modules:
        try:
            import torchvision  # noqa: F401
        except Exception:  # zennit imports torchvision's ResNet blocks at import; they are not used here
            fake = types.ModuleType("torchvision")
            models = types.ModuleType("torchvision.models")
            resnet = types.ModuleType("torchvision.models.resnet")
            resnet.Bottleneck = type("Bottleneck", (torch.nn.Module,), {})
            resnet.BasicBlock = type("BasicBlock", (torch.nn.Module,), {})
            fake.models, models.resnet = models, resnet
            for name, mod in (("torchvision", fake), ("torchvision.models", models),
                              ("torchvision.models.resnet", resnet)):
                monkeypatch.setitem(sys.modules, name, mod)
    import zennit.attribution as zennit_attr  # in the test extra: this parity check runs, never skips

    from equigx.rules import RuleContext, find_rule

    torch.manual_seed(1)
    head = torch.nn.Sequential(torch.nn.Linear(6, 5), torch.nn.ReLU(), torch.nn.Linear(5, 3)).double()
    x = torch.randn(4, 6, dtype=torch.float64)
    out = head(x).detach()
    onehot = torch.zeros_like(out)
    onehot[:, 1] = 1.0
    from zennit.composites import LayerMapComposite
    from zennit.rules import Epsilon, Pass
    from zennit.types import Activation

    comp = LayerMapComposite([(Activation, Pass()), (torch.nn.Linear, Epsilon(epsilon=1e-6))])
    with zennit_attr.Gradient(head, comp) as attributor:
        _, theirs = attributor(x.clone().requires_grad_(True), onehot * out)
    acts = [x]
    for layer in head:
        acts.append(layer(acts[-1]))
    rel = onehot * out
    ctx = RuleContext(None, eps=1e-6)
    for k in range(len(head) - 1, -1, -1):
        rel = find_rule(head[k])(head[k], acts[k], acts[k + 1], rel, ctx)
    torch.testing.assert_close(rel, theirs.detach(), rtol=1e-6, atol=1e-12)


@pytest.mark.parametrize(("change", "error", "match"), [
    ("nan", ValueError, "NaN or infinite"),
    ("inf", ValueError, "NaN or infinite"),
    ("width", ValueError, "irreps 1x0e"),
    ("target", ValueError, "out of range"),
    ("far", ValueError, "no edge within the cutoff"),
    ("variant", ValueError, "variant"),
])
def test_clear_errors(tfn64, shapes64, change, error, match):
    graphs, target, kwargs = shapes64, None, {}
    if change in ("nan", "inf"):
        pos = shapes64.pos.clone()
        pos[3, 1] = float(change)
        graphs = Graphs(pos, shapes64.node_attr, shapes64.batch, shapes64.n_graphs)
    elif change == "width":
        graphs = Graphs(shapes64.pos, torch.ones(shapes64.n_nodes, 3, dtype=torch.float64), shapes64.batch,
                        shapes64.n_graphs)
    elif change == "target":
        target = 5
    elif change == "far":
        graphs = Graphs.from_list([np.eye(3) * 10.0, np.eye(3)], [np.ones((3, 1))] * 2, dtype=torch.float64)
    else:
        kwargs = {"variant": "edges"}
    with pytest.raises(error, match=match):
        EquiGX(tfn64, **kwargs).explain(graphs, target=target)


def test_integrated_gradients_equals_a_midpoint_sum_and_gnnexplainer_runs(tfn64, shapes64):
    # captum and torch_geometric are in the test extra: this check runs, never skips
    from equigx.baselines import GNNExplainer, IntegratedGradients

    graphs = shapes64.select([0, 1])
    ig = IntegratedGradients(tfn64, n_steps=16, method="riemann_middle").explain(graphs, target=1)
    # brute force: x times the mean gradient at the midpoints alpha_k = (k + 1/2) / 16 of the straight path
    total = torch.zeros_like(graphs.node_attr)
    for k in range(16):
        x = ((k + 0.5) / 16 * graphs.node_attr).requires_grad_(True)
        out = tfn64(Graphs(graphs.pos, x, graphs.batch, graphs.n_graphs))[:, 1].sum()
        total += torch.autograd.grad(out, x)[0] / 16
    np.testing.assert_allclose(ig.node_relevance, (graphs.node_attr * total).sum(1).numpy(), rtol=1e-8, atol=1e-12)
    gx = GNNExplainer(tfn64, epochs=5).explain(graphs)
    assert gx.node_relevance.shape == (graphs.n_nodes,)
    assert ((gx.node_relevance >= 0) & (gx.node_relevance <= 1)).all() and gx.method == "gnnexplainer"

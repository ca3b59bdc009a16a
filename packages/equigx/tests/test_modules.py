"""ModuleEquiGX: relevance through e3nn's own example network and other modules, by rules per module type."""

import numpy as np
import pytest
import torch
from e3nn import o3
from e3nn.nn.models.gate_points_2101 import Network
from torch import nn

from equigx import TFN, EquiGX
from equigx.data import make_shapes, random_rotation
from equigx.modules import ModuleEquiGX, register_module_rule


@pytest.fixture(scope="module")
def network():
    torch.manual_seed(0)
    return Network(irreps_in="2x0e", irreps_hidden="4x0e+4x0o+2x1e+2x1o+2x2e", irreps_out="2x0e",
                   irreps_node_attr=None, irreps_edge_attr="0e+1o+2e", layers=2, max_radius=1.6, number_of_basis=5,
                   radial_layers=1, radial_neurons=8, num_neighbors=4.0, num_nodes=8.0).double()


@pytest.fixture(scope="module")
def graphs():
    # at most 25 nodes: above that torch.cdist switches to a matrix-product formula whose roundoff puts
    # self-distances above 0, and the example's radius_graph ((r < r_max) & (r > 0)) then keeps some
    # self-loops, a different set after each rotation (the network itself is then not invariant)
    graphs = make_shapes(2, n_distractors=(3, 4), random_state=0, dtype=torch.float64)
    assert graphs.n_nodes <= 25
    return graphs


def _types(graphs):
    return torch.eye(2, dtype=torch.float64)[torch.arange(graphs.n_nodes) % 2]


def _explain(net, graphs, pos=None, target=0, eps=1e-14):
    pos = graphs.pos if pos is None else pos
    return ModuleEquiGX(net, eps=eps).explain(lambda h: net({"pos": pos, "x": h, "batch": graphs.batch}),
                                              _types(graphs), "2x0e", target=target, batch=graphs.batch)


def test_e3nn_example_network_is_refused_by_the_layer_protocol_and_explained_by_module_rules(network, graphs):
    with pytest.raises(TypeError, match="no 'layers'|no 'run'|no 'check_graphs'"):
        EquiGX(network).explain(graphs)
    exp = _explain(network, graphs)
    assert exp.node_relevance.shape == (graphs.n_nodes,) and np.abs(exp.node_relevance).max() > 0
    # no biases anywhere: relevance sums to each graph's output up to the stabiliser
    np.testing.assert_allclose(exp.attributed, exp.output, rtol=1e-6, atol=1e-12)


@pytest.mark.parametrize("target", [0, 1])
def test_module_relevance_is_rotation_and_translation_invariant(network, graphs, target):
    exp = _explain(network, graphs, target=target)
    moved = graphs.pos @ torch.from_numpy(random_rotation(4)).T + torch.tensor([1.0, -2.0, 0.5], dtype=torch.float64)
    exp2 = _explain(network, graphs, pos=moved, target=target)
    scale = np.abs(exp.output).max()
    assert np.abs(exp2.output - exp.output).max() < 1e-6 * scale
    assert np.abs(exp2.node_relevance - exp.node_relevance).max() < 1e-6 * scale


def test_permuting_nodes_permutes_module_relevance(network):
    g = make_shapes(1, n_distractors=(3, 5), random_state=1, dtype=torch.float64)
    perm = torch.randperm(g.n_nodes, generator=torch.Generator().manual_seed(0))
    x = torch.eye(2, dtype=torch.float64)[torch.arange(g.n_nodes) % 2]
    explainer = ModuleEquiGX(network, eps=1e-14)
    a = explainer.explain(lambda h: network({"pos": g.pos, "x": h}), x, "2x0e").node_relevance
    b = explainer.explain(lambda h: network({"pos": g.pos[perm], "x": h}), x[perm], "2x0e").node_relevance
    np.testing.assert_allclose(b, a[perm.numpy()], rtol=1e-8, atol=1e-12)


def test_the_package_tfn_through_module_rules_conserves():
    torch.manual_seed(3)
    model = TFN(2, n_out=3, mul=2, lmax=2, r_max=1.6, n_basis=4, radial_hidden=8, n_scalars=4, head_bias=False).double()
    g = make_shapes(2, n_distractors=(3, 5), random_state=2, dtype=torch.float64)
    g.node_attr = _types(g)
    geo = model.graph_geometry(g)
    exp = ModuleEquiGX(model, eps=1e-14).explain(lambda h: model.run(h, geo), g.node_attr, "2x0e", target=1,
                                                 batch=g.batch)
    np.testing.assert_allclose(exp.attributed, exp.output, rtol=1e-6)
    # the node totals agree with EquiGX's node variant (same rules at every module, the same z-rule sums)
    ref = EquiGX(model, eps=1e-14).explain(g, target=1)
    np.testing.assert_allclose(exp.output, ref.output, rtol=1e-12)


def test_a_leaf_module_without_a_rule_is_refused_and_a_registered_one_is_used():
    class Scale(nn.Module):  # a learned per-channel scale: linear, but the explainer cannot know that
        def __init__(self):
            super().__init__()
            self.weight = nn.Parameter(torch.full((2,), 2.0, dtype=torch.float64))

        def forward(self, x):
            return x * self.weight

    model = nn.Sequential(Scale(), o3.Linear("2x0e", "1x0e").double())
    x = torch.tensor([[1.0, 2.0], [3.0, -1.0]], dtype=torch.float64)
    with pytest.raises(TypeError, match="Scale is called on the node features but has no relevance rule"):
        ModuleEquiGX(model).explain(model, x, "2x0e")
    register_module_rule(Scale, lambda m, inputs, y, r, eps: [r], lambda m, inputs, y: ([o3.Irreps("2x0e")],
                                                                                         o3.Irreps("2x0e")))
    exp = ModuleEquiGX(model, eps=1e-14).explain(model, x, "2x0e", batch=torch.arange(2))
    np.testing.assert_allclose(exp.attributed, exp.output, rtol=1e-10)
    with torch.no_grad():  # per sample: R_i = x_i w_i * 2 * path weight, a z-rule on a linear model
        contrib = (x * 2.0 * model[1].weight.reshape(1, 2) / np.sqrt(2)).numpy()
    np.testing.assert_allclose(exp.node_relevance_by_block, contrib, rtol=1e-8)


@pytest.mark.parametrize("make", [nn.Softplus, lambda: nn.LayerNorm(2, elementwise_affine=False)],
                         ids=["Softplus", "LayerNorm"])
def test_a_parameter_free_nonlinearity_without_a_rule_is_refused_not_differentiated(make):
    """Gradient times input through softplus is not the relevance its output held: refuse, do not answer."""
    model = nn.Sequential(o3.Linear("2x0e", "2x0e").double(), make(), o3.Linear("2x0e", "1x0e").double())
    x = torch.tensor([[1.0, 2.0], [3.0, -1.0]], dtype=torch.float64)
    name = type(model[1]).__name__
    with pytest.raises(TypeError, match=f"{name} is called on the node features but has no relevance rule"):
        ModuleEquiGX(model).explain(model, x, "2x0e")


def test_e3nn_activation_passes_relevance_as_the_elementwise_modules_do():
    from e3nn.nn import Activation

    torch.manual_seed(0)
    first, last = o3.Linear("2x0e", "2x0e").double(), o3.Linear("2x0e", "1x0e").double()
    x = torch.tensor([[1.0, 2.0], [3.0, -1.0]], dtype=torch.float64)
    e3nn_act = nn.Sequential(first, Activation("2x0e", [torch.tanh]), last)
    torch_act = nn.Sequential(first, nn.Tanh(), last)
    a = ModuleEquiGX(e3nn_act, eps=1e-14).explain(e3nn_act, x, "2x0e", batch=torch.arange(2))
    b = ModuleEquiGX(torch_act, eps=1e-14).explain(torch_act, x, "2x0e", batch=torch.arange(2))
    # e3nn normalises tanh to unit second moment (a constant factor): the relevances scale with the output
    factor = (a.output / b.output)[:, None]
    assert not np.allclose(factor, 1.0)
    np.testing.assert_allclose(a.node_relevance_by_block, b.node_relevance_by_block * factor, rtol=1e-7)
    np.testing.assert_allclose(a.attributed, a.output, rtol=1e-7)

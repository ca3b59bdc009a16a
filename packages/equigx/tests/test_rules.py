"""The relevance rules' defining identities, rule by rule, in float64."""

import pytest
import torch
from e3nn import o3
from e3nn.nn import FullyConnectedNet, NormActivation

from equigx import EquiGX
from equigx.rules import (
    _fcnet_rule,
    block_dot,
    epsilon_rule,
    expand_blocks,
    find_rule,
    linear_rule,
    normact_rule,
    scatter_rule,
    tensor_product_rule,
)

EPS = 1e-9


@pytest.fixture(autouse=True)
def _float64():
    old = torch.get_default_dtype()
    torch.set_default_dtype(torch.float64)
    yield
    torch.set_default_dtype(old)


def _tp_case(seed=0):
    torch.manual_seed(seed)
    tp = o3.FullyConnectedTensorProduct("2x0e+2x1o+1x2e", "0e+1o+2e", "3x0e+2x1o+2x1e+2x2e",
                                        internal_weights=False, shared_weights=False)
    x1, x2 = torch.randn(7, tp.irreps_in1.dim), torch.randn(7, tp.irreps_in2.dim)
    w = torch.randn(7, tp.weight_numel)
    rel = torch.randn(7, tp.irreps_out.num_irreps)
    return tp, x1, x2, w, rel


def test_tensor_product_rule_conserves_to_each_argument_and_roots_agree():
    tp, x1, x2, w, rel = _tp_case()
    y = tp(x1, x2, w)
    yy = block_dot(y, y, tp.irreps_out)
    expected = (rel * yy / (yy + EPS)).sum()
    r1, r2, rw = tensor_product_rule(tp, x1, x2, w, rel, eps=EPS)
    # a TP is linear in each argument: x . dTP/dx = TP, so each argument gets the whole (stabilised) relevance
    for r in (r1, r2, rw):
        assert float(r.sum()) == pytest.approx(float(expected), rel=1e-10)
    assert float(expected) == pytest.approx(float(rel[yy > 0].sum()), rel=1e-6)
    z1, z2, zw = tensor_product_rule(tp, x1, x2, w, rel, eps=EPS, root="zero")
    for a, b in ((r1, z1), (r2, z2), (rw, zw)):
        torch.testing.assert_close(a, b, rtol=1e-10, atol=1e-12)


def test_tensor_product_rule_is_gradient_times_input_row_by_row():
    tp, x1, x2, w, rel = _tp_case(1)
    r1, _, _ = tensor_product_rule(tp, x1, x2, w, rel, eps=EPS)
    # brute force: finite differences of <TP(x1 + h e_k), c> along each component
    y = tp(x1, x2, w)
    c = y * expand_blocks(rel / (block_dot(y, y, tp.irreps_out) + EPS), tp.irreps_out)
    h = 1e-6
    grad = torch.zeros_like(x1)
    for k in range(x1.shape[1]):
        e = torch.zeros_like(x1)
        e[:, k] = h
        grad[:, k] = ((tp(x1 + e, x2, w) - tp(x1 - e, x2, w)) * c).sum(1) / (2 * h)
    torch.testing.assert_close(r1, block_dot(x1, grad, tp.irreps_in1), rtol=1e-6, atol=1e-8)


def test_linear_rule_conserves_and_equals_per_path_brute_force():
    torch.manual_seed(0)
    lin = o3.Linear("3x0e+2x1o+2x2e+1x0e", "4x0e+3x1o+1x2e")
    x = torch.randn(5, lin.irreps_in.dim)
    rel = torch.randn(5, lin.irreps_out.num_irreps)
    r = linear_rule(lin, x, rel, eps=EPS)
    y = lin(x).detach()
    yy = block_dot(y, y, lin.irreps_out)
    total = (rel * yy / (yy + EPS)).sum()
    assert abs(float(r.sum() - rel.sum())) / abs(float(rel.sum())) < 1e-4
    assert float(r.sum()) == pytest.approx(float(total.detach()), rel=1e-10)
    # the per-path rule equals x . d<y, c>/dx with c = y R / |y|^2 (the Taylor form)
    xr = x.clone().requires_grad_(True)
    c = (y * expand_blocks(rel / (yy + EPS), lin.irreps_out)).detach()
    (g,) = torch.autograd.grad((lin(xr) * c).sum(), xr)
    torch.testing.assert_close(r, block_dot(x, g, lin.irreps_in), rtol=1e-10, atol=1e-12)


def test_scatter_rule_conserves_per_target():
    torch.manual_seed(0)
    irreps = o3.Irreps("2x0e+1x1o")
    msgs = torch.randn(9, irreps.dim)
    index = torch.tensor([0, 0, 1, 1, 1, 2, 2, 3, 3])
    rel = torch.randn(4, irreps.num_irreps)
    r = scatter_rule(msgs, index, 4, rel, irreps, eps=EPS, scale=0.5)
    per_target = torch.zeros_like(rel).index_add_(0, index, r)
    torch.testing.assert_close(per_target, rel, rtol=1e-4, atol=1e-8)


def test_normactivation_rule_conserves_exactly_per_node():
    torch.manual_seed(0)
    act = NormActivation("2x0e+2x1o+1x2e", torch.sigmoid)
    x = torch.randn(6, act.irreps_in.dim)
    rel = torch.randn(6, act.irreps_in.num_irreps)
    r = normact_rule(act, x, rel, eps=0.0)
    torch.testing.assert_close(r.sum(1), rel.sum(1), rtol=1e-12, atol=1e-12)
    # relevance is divided by the per-block scaling s = sigmoid(|x|) / |x|
    norms = block_dot(x, x, act.irreps_in).sqrt()
    ratio = (r * torch.sigmoid(norms) / norms) / rel
    torch.testing.assert_close(ratio, ratio[:, :1].expand_as(ratio), rtol=1e-9, atol=1e-9)
    assert normact_rule(act, x, rel, rule="identity") is rel


def test_radial_net_z_rule_conserves_without_biases():
    torch.manual_seed(0)
    net = FullyConnectedNet([4, 8, 5], torch.relu)
    x = torch.rand(10, 4)
    out = net(x)
    rel = out * torch.randn(10, 5)
    r = _fcnet_rule(net, x, rel, EPS)
    # ReLU layers without bias: LRP-0 conserves wherever a unit is active
    assert float(r.sum()) == pytest.approx(float(rel.sum()), rel=1e-6)


def test_epsilon_rule_matches_the_formula():
    torch.manual_seed(0)
    lin = torch.nn.Linear(4, 3)
    x = torch.randn(5, 4)
    rel = torch.randn(5, 3)
    z = lin(x)
    manual = x * ((rel / (z + 1e-3 * torch.where(z >= 0, 1.0, -1.0))) @ lin.weight)
    torch.testing.assert_close(epsilon_rule(lin, x, rel, eps=1e-3), manual.detach())


@pytest.mark.parametrize("variant", ["node", "split"])
def test_split_gives_each_argument_one_third_and_the_same_total(tfn64, shapes64, variant):
    node = EquiGX(tfn64, variant="node").explain(shapes64)
    exp = EquiGX(tfn64, variant=variant).explain(shapes64)
    # the same total is attributed whatever the split: the leak (head biases) is identical
    # (up to the stabilisers' eps / |y|^2 terms)
    assert abs(exp.leak - node.leak).max() < 1e-5 * abs(node.output).max()
    if variant == "split":
        assert abs(exp.edge_direction).sum() > 0 and abs(exp.edge_distance).sum() > 0


def test_whole_network_conserves_without_head_biases(tfn64, shapes64, gated64):
    for model in (tfn64, gated64):
        clone = type(model)(n_out=5, mul=2, lmax=2, r_max=1.6, n_basis=4, radial_hidden=8, n_scalars=6,
                            head_hidden=6, nonlinearity="norm" if model is tfn64 else "gate").double()
        clone.load_state_dict(model.state_dict())
        for layer in clone.layers:
            if isinstance(layer, torch.nn.Linear):
                layer.bias.data.zero_()
        # every rule conserves up to its stabiliser: with eps -> 0 the leak goes to rounding level
        exp = EquiGX(clone, variant="split", eps=1e-14).explain(shapes64)
        assert exp.relative_leak.max() < 1e-5, exp.relative_leak


def test_unsupported_module_is_named(tfn64, shapes64):
    class Odd(torch.nn.Module):
        def forward(self, x):
            return x

    model = type(tfn64)(n_out=5, mul=2, lmax=1).double()
    model.layers.insert(len(model.layers) - 1, Odd())
    with pytest.raises(TypeError, match="Odd"):
        EquiGX(model).explain(shapes64)
    with pytest.raises(TypeError, match="Odd"):
        find_rule(Odd())


def test_gate_rule_sends_relevance_to_scalars_and_gated_blocks_only():
    from e3nn.nn import Gate

    from equigx.rules import RULES

    gate = Gate("2x0e+1x0o", [torch.relu, torch.tanh], "3x0e", [torch.sigmoid], "1x1o+2x2e")
    x = torch.randn(4, gate.irreps_in.dim)
    y = gate(x)
    rel = torch.randn(4, gate.irreps_out.num_irreps)
    r = RULES[Gate](gate, x, y, rel, None)
    assert r.shape == (4, gate.irreps_in.num_irreps)
    torch.testing.assert_close(r.sum(1), rel.sum(1))
    # brute force: a block of the input receives relevance iff perturbing it moves the matching output block
    xr = x.clone().requires_grad_(True)
    gated_out = gate(xr)[:, 3:]  # output: 2x0e+1x0o (scalars) then 1x1o+2x2e (gated)
    (g,) = torch.autograd.grad(gated_out.sum(), xr)
    in_blocks = block_dot(g, torch.ones_like(g), gate.irreps_in)
    scalar_in = [i for i, (mul, ir) in enumerate(gate.irreps_in) if ir.l == 0]
    assert scalar_in  # the gates are 0e inputs; their relevance is zero
    n_zero = int((r == 0).all(0).sum())
    assert n_zero == 3  # exactly the three gate blocks
    assert torch.all(in_blocks[:, (r == 0).all(0)] != 0)  # and they do influence the gated outputs


def test_gate_rule_routes_each_output_block_to_the_input_block_that_produced_it():
    from e3nn.nn import Gate

    from equigx.rules import RULES

    gate = Gate("2x0e+1x0o", [torch.nn.functional.silu, torch.tanh], "3x0e", [torch.sigmoid], "1x1o+2x2e")
    x = torch.randn(4, gate.irreps_in.dim, dtype=torch.float64)
    y = gate(x)
    n_out, n_in = gate.irreps_out.num_irreps, gate.irreps_in.num_irreps
    for k in range(n_out):
        rel = torch.zeros(1, n_out, dtype=torch.float64)
        rel[0, k] = 1.0
        r = RULES[Gate](gate, x[:1], y[:1], rel, None)
        # brute force: the input blocks that move output block k (the gate of a gated block gets no relevance)
        dims = [ir.dim for mul, ir in gate.irreps_out for _ in range(mul)]
        lo = sum(dims[:k])
        xr = x[:1].clone().requires_grad_(True)
        (g,) = torch.autograd.grad(gate(xr)[0, lo:lo + dims[k]].pow(2).sum(), xr)
        moved = block_dot(g, g, gate.irreps_in)[0] > 0
        receiving = r[0] != 0
        assert int(receiving.sum()) == 1 and bool(moved[receiving].all()), (k, r, moved)
        assert float(r.sum()) == 1.0
        assert int(moved.sum()) == (1 if k < 3 else 2)  # a scalar, or a gated block and its gate
    assert n_in == 9

"""EquiGX on awkward inputs: train mode, dtypes, targets, module subclasses, batch layout, a fresh model."""

import numpy as np
import pytest
import torch
from e3nn import o3

from equigx import TFN, EquiGX, Graphs
from equigx.data import make_shapes, random_rotation
from equigx.rules import find_rule


def test_dropout_in_train_mode_is_explained_in_eval_mode_and_the_mode_is_restored(tfn64, shapes64):
    model = TFN(n_out=5, mul=2, lmax=2, r_max=1.6, n_basis=4, radial_hidden=8, n_scalars=6, head_hidden=6).double()
    model.load_state_dict(tfn64.state_dict())
    model.layers.insert(len(model.layers) - 1, torch.nn.Dropout(0.5))
    model.train()
    torch.manual_seed(3)
    first = EquiGX(model, variant="split").explain(shapes64)
    second = EquiGX(model, variant="split").explain(shapes64)
    assert model.training and all(m.training for m in model.modules())
    reference = EquiGX(tfn64, variant="split").explain(shapes64)  # the same network without the dropout
    for exp in (first, second):
        np.testing.assert_allclose(exp.logits, reference.logits, rtol=1e-12, atol=1e-14)
        np.testing.assert_allclose(exp.node_relevance, reference.node_relevance, rtol=1e-10, atol=1e-14)
        np.testing.assert_allclose(exp.edge_distance, reference.edge_distance, rtol=1e-10, atol=1e-14)


def test_dtype_mismatch_is_a_clear_error(tfn64, shapes64):
    with pytest.raises(ValueError, match="float32.*float64|float64.*float32"):
        EquiGX(tfn64).explain(shapes64.to(torch.float32))


@pytest.mark.parametrize("target", [1.7, True, np.array([0.5, 1.0, 2.0, 0.0])])
def test_non_integer_target_is_refused(tfn64, shapes64, target):
    with pytest.raises(ValueError, match="integer"):
        EquiGX(tfn64).explain(shapes64, target=target)


def test_integer_like_targets_are_accepted(tfn64, shapes64):
    for target in (np.int64(2), torch.tensor(2), np.array([2, 2, 2, 2]), [2, 2, 2, 2]):
        assert (EquiGX(tfn64).explain(shapes64, target=target).target == 2).all()


@pytest.mark.parametrize(("eps", "error"), [(True, TypeError), ("1e-9", TypeError), (0.0, ValueError), (0, ValueError),
                                            (-1e-9, ValueError), (float("inf"), ValueError)])
def test_eps_that_is_not_a_positive_float_is_refused(tfn64, shapes64, eps, error):
    # eps = 0 divided the never-reached output blocks (0o, 1e, ... of the first convolution) by zero: NaN
    with pytest.raises(error, match="EquiGX: eps must be a float in"):
        EquiGX(tfn64, eps=eps).explain(shapes64)


def test_a_tiny_eps_gives_finite_relevance(tfn64, shapes64):
    exp = EquiGX(tfn64, variant="split", eps=1e-300).explain(shapes64)
    assert np.isfinite(exp.node_relevance).all() and np.isfinite(exp.edge_distance).all()
    assert np.isfinite(exp.leak).all()


def test_subclass_that_overrides_forward_is_refused_not_given_the_base_rule(tfn64, shapes64):
    class Doubled(o3.Linear):
        def forward(self, x):
            return 2 * super().forward(x)

    class Renamed(o3.Linear):
        pass

    hidden = tfn64.layers[1].irreps_in
    with pytest.raises(TypeError, match="Doubled.*forward"):
        find_rule(Doubled(hidden, hidden))
    assert find_rule(Renamed(hidden, hidden)) is find_rule(o3.Linear(hidden, hidden))
    model = TFN(n_out=5, mul=2, lmax=2, r_max=1.6, n_basis=4, radial_hidden=8, n_scalars=6, head_hidden=6).double()
    model.layers[1] = Doubled(hidden, hidden).double()
    with pytest.raises(TypeError, match="Doubled"):
        EquiGX(model).explain(shapes64)


@pytest.mark.parametrize("change", ["few", "negative", "length"])
def test_batch_that_does_not_match_n_graphs_is_a_clear_error(tfn64, shapes64, change):
    batch, n_graphs = shapes64.batch, shapes64.n_graphs
    if change == "few":
        n_graphs = 2
    elif change == "negative":
        batch = batch - 1
    else:
        batch = batch[1:]
    with pytest.raises(ValueError, match="batch"):
        EquiGX(tfn64).explain(Graphs(shapes64.pos, shapes64.node_attr, batch, n_graphs))


def test_inference_mode_is_a_clear_error(tfn64, shapes64):
    with torch.inference_mode(), pytest.raises(RuntimeError, match="inference_mode"):
        EquiGX(tfn64).explain(shapes64)


def test_a_fresh_unbiased_model_conserves_to_its_own_forward_and_is_rotation_invariant():
    # a model and graphs that the other tests do not use: odd widths, gate nonlinearity, lmax 1, 3 layers
    torch.manual_seed(11)
    model = TFN(n_out=3, mul=3, lmax=1, n_layers=3, r_max=1.7, n_basis=5, radial_hidden=7, n_scalars=5,
                head_hidden=4, nonlinearity="gate").double()
    for layer in model.layers:
        if isinstance(layer, torch.nn.Linear):
            layer.bias.data.zero_()
    graphs = make_shapes(3, n_distractors=(3, 9), random_state=5, dtype=torch.float64)
    assert len(set(graphs.sizes())) == 3
    with torch.no_grad():
        logits = model(graphs)  # the model's own forward, not the explainer's pass
    exp = EquiGX(model, variant="split", eps=1e-14).explain(graphs, target=1)
    total = np.bincount(exp.batch, exp.node_scores(), minlength=graphs.n_graphs)
    np.testing.assert_allclose(total, logits[:, 1].numpy(), rtol=1e-6, atol=1e-12)
    moved = graphs.rotate(torch.from_numpy(random_rotation(11)), torch.tensor([3.0, 1.0, -4.0]))
    exp2 = EquiGX(model, variant="split", eps=1e-14).explain(moved, target=1)
    scale = abs(exp.output).max()
    for a, b in ((exp.node_relevance, exp2.node_relevance), (exp.edge_direction, exp2.edge_direction),
                 (exp.edge_distance, exp2.edge_distance)):
        np.testing.assert_allclose(b, a, atol=1e-8 * scale)
    assert abs(exp.edge_direction).max() > 1e-3 * scale  # the directions are not trivially zero


def test_baselines_explain_a_dropout_model_in_eval_mode_and_restore_it(tfn64, shapes64):
    from equigx.baselines import CoordinateGradient, GradCAM, InputXGradient, Saliency

    model = TFN(n_out=5, mul=2, lmax=2, r_max=1.6, n_basis=4, radial_hidden=8, n_scalars=6, head_hidden=6).double()
    model.load_state_dict(tfn64.state_dict())
    model.layers.insert(len(model.layers) - 1, torch.nn.Dropout(0.5))
    model.train()
    torch.manual_seed(4)
    for cls in (CoordinateGradient, GradCAM, InputXGradient, Saliency):
        ours = cls(model).explain(shapes64, target=1).node_relevance
        reference = cls(tfn64).explain(shapes64, target=1).node_relevance
        np.testing.assert_allclose(ours, reference, rtol=1e-10, atol=1e-14, err_msg=cls.__name__)
        assert model.training and model.layers[-4].training

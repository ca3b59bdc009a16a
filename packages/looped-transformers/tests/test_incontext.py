"""In-context task families (decision trees, ReLU nets), curricula over dimensions and points, Lasso and
XGBoost baselines."""

import numpy as np
import pytest
import torch

from looped_transformers import LoopedConfig
from looped_transformers.tasks import (
    DecisionTreeTask,
    RegressionTask,
    ReluNetTask,
    make_task,
    regression_baselines,
    xgboost_baseline,
)
from looped_transformers.train import Curriculum, LoopedRegressor, TrainConfig, regression_error, train


def test_decision_tree_targets_follow_the_sign_tests_of_the_drawn_tree():
    task = DecisionTreeTask(n_dims=4, n_points=9, depth=3)
    batch = task.sample(20, random_state=5)
    # replay the draws: inputs, then one coordinate and one value per node
    rng = np.random.default_rng(5)
    xs = rng.standard_normal((20, 9, 4))
    coords = rng.integers(0, 4, size=(20, 15))
    values = rng.standard_normal((20, 15))
    assert np.allclose(batch.xs.numpy(), xs.astype(np.float32))
    for k in range(20):
        for i in range(9):
            node = 0
            for _ in range(3):  # root-to-leaf walk, right when the tested coordinate is positive
                node = 2 * node + 1 + int(xs[k, i, coords[k, node]] > 0)
            assert batch.ys[k, i].item() == pytest.approx(values[k, node], abs=1e-6)
    assert batch.error_scale == 1.0
    assert float((task.sample(4000, random_state=0).ys ** 2).mean()) == pytest.approx(1.0, abs=0.05)


def test_relu_net_targets_equal_the_formula_and_have_unit_normalised_scale():
    task = ReluNetTask(n_dims=3, n_points=5, hidden=7)
    batch = task.sample(6, random_state=2)
    rng = np.random.default_rng(2)
    xs = rng.standard_normal((6, 5, 3))
    w1, w2 = rng.standard_normal((6, 3, 7)), rng.standard_normal((6, 7))
    want = np.stack([np.maximum(xs[k] @ w1[k], 0) @ w2[k] for k in range(6)]) * np.sqrt(2 / 7)
    assert np.allclose(batch.ys.numpy(), want, atol=1e-5) and batch.error_scale == 3.0
    big = ReluNetTask(n_dims=5, n_points=20).sample(3000, random_state=0)
    assert float((big.ys ** 2).mean()) / big.error_scale == pytest.approx(1.0, abs=0.08)


@pytest.mark.parametrize("task", [RegressionTask(n_dims=6, n_points=8), DecisionTreeTask(n_dims=6, n_points=8),
                                  ReluNetTask(n_dims=6, n_points=8)])
def test_dimension_and_point_curriculum_zero_the_inactive_coordinates(task):
    batch = task.sample(50, random_state=0, n_dims=2, n_points=3)
    assert batch.xs.shape == (50, 3, 6) and batch.ys.shape == (50, 3)
    assert torch.all(batch.xs[:, :, 2:] == 0) and torch.all(batch.xs[:, :, :2] != 0)
    if not isinstance(task, DecisionTreeTask):
        assert batch.error_scale == 2.0
    # the default draw is unchanged by the curriculum machinery
    assert torch.equal(task.sample(5, random_state=1).xs, task.sample(5, random_state=1, n_dims=6, n_points=8).xs)
    with pytest.raises(ValueError, match=r"n_dims must be an int in \[1, 6\]"):
        task.sample(2, n_dims=7)
    with pytest.raises(ValueError, match=r"n_points must be an int in \[1, 8\]"):
        task.sample(2, n_points=0)


def test_linear_targets_only_read_the_active_dimensions():
    task = RegressionTask(n_dims=5, n_points=11)
    batch = task.sample(200, random_state=3, n_dims=2)
    errs = regression_baselines(batch)
    assert errs["least_squares"][3:].max() < 1e-10  # two active coordinates: exact from 2 points on


def test_lasso_beats_least_squares_on_sparse_weights_with_few_points():
    task = make_task("sparse_linear_regression", n_dims=10, n_points=10, sparsity=1)
    errs = regression_baselines(task.sample(40, random_state=0), lasso=0.05)
    assert set(errs) == {"least_squares", "ridge", "knn", "averaging", "lasso"}
    assert errs["lasso"][0] == errs["least_squares"][0]  # both predict 0 before any example
    # 4-8 examples of a 1-sparse weight in 10 dimensions: the L1 penalty finds it, minimum-norm LS does not
    assert errs["lasso"][4:9].mean() < 0.5 * errs["least_squares"][4:9].mean()
    with pytest.raises(ValueError, match="lasso must be > 0"):
        regression_baselines(task.sample(2, random_state=0), lasso=0.0)


def test_xgboost_learns_a_decision_tree_in_context():
    task = DecisionTreeTask(n_dims=3, n_points=20, depth=1)
    batch = task.sample(6, random_state=0)
    err = xgboost_baseline(batch, n_estimators=10)
    ls = regression_baselines(batch)["least_squares"]
    assert err.shape == (20,) and err[0] == pytest.approx(float((batch.ys[:, 0] ** 2).mean()), rel=1e-5)
    # one split on one of 3 coordinates: boosted trees find it, a linear fit cannot
    assert err[10:].mean() < 0.5 * ls[10:].mean(), (err[10:].mean(), ls[10:].mean())


def test_curricula_grow_during_training_and_must_fit_the_task():
    task = RegressionTask(n_dims=4, n_points=6)
    torch.manual_seed(0)
    model = LoopedRegressor(LoopedConfig(vocab_size=1, hidden_size=16, num_attention_heads=2, n_loops=3,
                                         max_position_embeddings=12), 4)
    cfg = TrainConfig(steps=6, batch_size=8, warmup_steps=1, loop_curriculum=Curriculum(start=1, end=3, interval=2),
                      dims_curriculum=Curriculum(start=2, end=4, interval=3),
                      points_curriculum=Curriculum(start=3, end=6, increment=2, interval=2))
    assert [cfg.loops_at(s, 3) for s in range(6)] == [1, 1, 2, 2, 3, 3]
    result = train(model, task, cfg, random_state=0)
    assert (result.n_loops, result.n_dims, result.n_points) == (3, 3, 6)
    assert len(result.grad_norms) == 6 and all(g > 0 for g in result.grad_norms)
    assert regression_error(model, task.sample(10, random_state=1)).shape == (6,)
    too_wide = TrainConfig(steps=1, dims_curriculum=Curriculum(start=2, end=5))
    with pytest.raises(ValueError, match="dims_curriculum ends at 5 but the task has dims=4"):
        train(model, task, too_wide)
    with pytest.raises(ValueError, match="n_dims=5 but the model reads 4"):
        train(model, RegressionTask(n_dims=5, n_points=6), TrainConfig(steps=1))


@pytest.mark.parametrize(("kwargs", "match"), [
    ({"start": 0, "end": 3}, "start must be an int >= 1"),
    ({"start": 4, "end": 3}, "end=3 is below start=4"),
    ({"start": 1, "end": 3, "interval": 0}, "interval must be an int >= 1"),
])
def test_bad_curricula_raise(kwargs, match):
    with pytest.raises(ValueError, match=match):
        Curriculum(**kwargs)


def test_bad_in_context_tasks_raise():
    with pytest.raises(ValueError, match="depth must be an int"):
        DecisionTreeTask(depth=0)
    with pytest.raises(ValueError, match="hidden must be an int"):
        ReluNetTask(hidden=0)
    with pytest.raises(TypeError, match="dims_curriculum must be None or a Curriculum"):
        TrainConfig(dims_curriculum=(2, 5))
    assert isinstance(make_task("decision_tree", n_dims=3), DecisionTreeTask)
    assert isinstance(make_task("relu_2nn_regression"), ReluNetTask)


def test_no_baseline_sees_the_label_it_predicts_or_a_later_one():
    batch = DecisionTreeTask(n_dims=3, n_points=8, depth=2).sample(3, random_state=4)
    moved = type(batch)(batch.xs, batch.ys.clone(), batch.scale)
    moved.ys[:, 5:] += 100.0  # the label of point 5 and every later one
    before = {**regression_baselines(batch, lasso=0.05), "xgboost": xgboost_baseline(batch, n_estimators=5)}
    after = {**regression_baselines(moved, lasso=0.05), "xgboost": xgboost_baseline(moved, n_estimators=5)}
    for name in before:
        assert np.array_equal(before[name][:5], after[name][:5]), name  # earlier predictions are untouched
        # point 5 is predicted from points 0-4 only: the shifted label is missed by about 100
        assert after[name][5] > 0.5 * 100.0 ** 2, (name, after[name][5])


@pytest.mark.parametrize(("ys", "scale"), [((4, 1), None), ((6,), None), ((4, 6), 0.0), ((4, 6), float("nan"))])
def test_a_regression_batch_of_inconsistent_shapes_or_scale_raises(ys, scale):
    from looped_transformers.tasks import RegressionBatch

    # a (4, 1) target would broadcast against (4, 6) predictions in every error; a zero scale divides by 0
    with pytest.raises(ValueError, match="must have shape|scale must be"):
        RegressionBatch(torch.zeros(4, 6, 3), torch.zeros(ys), scale)

import numpy as np
import pytest

pytest.importorskip("torch")

from dsi.applications import (  # noqa: E402
    TaskConfig,
    backdoor_defense,
    blend_trigger,
    canary_exposure,
    contribution_control,
    memorization_mitigation,
)

TINY = TaskConfig(hidden=8, rounds=2, local_steps=2, dpsgd_batch_size=256)


def test_canary_exposure_closed_form():
    refs = [1.0, 2.0, 3.0]
    assert canary_exposure(0.5, refs) == pytest.approx(2.0)  # rank 1 of 4: log2(4) - log2(1)
    assert canary_exposure(2.5, refs) == pytest.approx(2.0 - np.log2(3.0))
    assert canary_exposure(9.0, refs) == pytest.approx(0.0)
    with pytest.raises(ValueError, match="reference"):
        canary_exposure(1.0, [])


def test_blend_trigger_is_a_convex_combination():
    x = np.zeros((2, 64))
    out = blend_trigger(x, alpha=0.25)
    assert np.all(out >= 0) and np.all(out <= 0.25)
    np.testing.assert_allclose(blend_trigger(np.ones((1, 64)), alpha=0.0), 1.0)


def test_memorization_run_is_reproducible_and_bounded():
    a = memorization_mitigation(
        regime="dsi", epsilon=2.0, n_canaries=2, canary_repeats=2, n_references=15, config=TINY, random_state=1
    )
    b = memorization_mitigation(
        regime="dsi", epsilon=2.0, n_canaries=2, canary_repeats=2, n_references=15, config=TINY, random_state=1
    )
    assert a.exposure == b.exposure and a.test_accuracy == b.test_accuracy
    assert 0.0 <= a.exposure <= a.max_exposure == pytest.approx(4.0)
    assert a.exposures.shape == (2,)
    iso = memorization_mitigation(
        regime="isotropic", epsilon=2.0, n_canaries=2, canary_repeats=2, n_references=15, config=TINY, random_state=1
    )
    assert iso.regime == "isotropic" and 0.0 <= iso.test_accuracy <= 1.0


def test_backdoor_and_contribution_runs():
    res = backdoor_defense(regime="none", epsilon=None, config=TINY, random_state=0)
    assert 0.0 <= res.attack_success_rate <= 1.0 and res.clean_accuracy > 0.1
    contrib = contribution_control(epsilon=2.0, source_size=10, config=TINY, random_state=0)
    # the guaranteed TPR at 5% FPR of a mu-GDP test with mu from (2, 1e-5) via zCDP
    assert 0.05 < contrib.tpr_bound < 0.2
    with pytest.raises(ValueError, match="regime must be one of"):
        memorization_mitigation(regime="laplace", config=TINY)
    with pytest.raises(ValueError, match="n_untrusted"):
        backdoor_defense(regime="none", epsilon=None, config=TaskConfig(n_untrusted=0))
    with pytest.raises(ValueError, match="n_poisons"):
        backdoor_defense(regime="none", epsilon=None, n_poisons=0, config=TINY)


def test_dpsgd_peer_runs():
    pytest.importorskip("opacus")
    res = memorization_mitigation(
        regime="dpsgd", epsilon=4.0, n_canaries=1, canary_repeats=2, n_references=7, config=TINY, random_state=0
    )
    assert res.regime == "dpsgd" and 0.0 <= res.test_accuracy <= 1.0


def test_validation_split_is_disjoint_and_selectable():
    from dsi.applications import _training_data

    xtr, ytr, xva, yva, xte, yte = _training_data(0, 0, 0.2)
    full_tr, _, _, _, _, _ = _training_data(0, 0, 0.0)
    assert len(xva) == round(0.2 * len(full_tr)) and len(xtr) + len(xva) == len(full_tr)
    rows = {r.tobytes() for r in xtr}
    assert not any(r.tobytes() in rows for r in xva)  # no validation image is trained on
    assert len(yte) == 450
    with pytest.raises(ValueError, match="validation"):
        _training_data(0, 0, 1.0)
    cfg = TaskConfig(hidden=8, rounds=2, local_steps=2, validation=0.2)
    res = memorization_mitigation(regime="none", epsilon=None, n_canaries=1, n_references=7, config=cfg, random_state=0)
    assert 0.0 <= res.validation_accuracy <= 1.0
    plain = memorization_mitigation(regime="none", epsilon=None, n_canaries=1, n_references=7, config=TINY, random_state=0)
    assert np.isnan(plain.validation_accuracy)


def test_hyper_grid_gives_every_regime_the_same_budget():
    from dsi.experiments import hyper_grid, select_by_validation

    base = TaskConfig()
    dsi_cells = hyper_grid("dsi", base)
    dp_cells = hyper_grid("dpsgd", base)
    assert len(dsi_cells) == len(dp_cells) == len(hyper_grid("isotropic", base)) == len(hyper_grid("dpsgd-group", base))
    assert len(dsi_cells) == 9  # the frozen confirmatory protocol: 9 cells per method
    assert [(c.rounds, c.local_steps, c.lr) for _, c in dsi_cells[6:]] == [(3, 50, 0.5), (2, 75, 0.5), (1, 150, 0.5)]
    assert [(c.dpsgd_batch_size, c.dpsgd_lr) for _, c in dp_cells[6:]] == [(128, 1.0), (256, 1.0), (512, 1.0)]
    assert {c.rounds * c.local_steps for _, c in dsi_cells} == {base.rounds * base.local_steps}
    assert {c.rounds * c.local_steps for _, c in dp_cells} == {base.rounds * base.local_steps}
    assert len({(c.rounds, c.lr) for _, c in dsi_cells}) == len(dsi_cells)
    assert len({(c.dpsgd_batch_size, c.dpsgd_lr) for _, c in dp_cells}) == len(dp_cells)
    assert select_by_validation([0.5, 0.9, 0.9, 0.1]) == 1  # ties go to the first cell in grid order
    assert select_by_validation([np.nan, 0.2, 0.1]) == 1
    with pytest.raises(ValueError, match="finite"):
        select_by_validation([np.nan])


def test_noise_seed_is_separate_from_the_data_seed():
    """Two noise seeds on one data seed give different draws; one noise seed reproduces exactly."""
    cfg = TaskConfig(hidden=8, rounds=2, local_steps=2, validation=0.2)
    first = backdoor_defense(epsilon=1.0, config=cfg, random_state=0, noise_random_state=1)
    again = backdoor_defense(epsilon=1.0, config=cfg, random_state=0, noise_random_state=1)
    other = backdoor_defense(epsilon=1.0, config=cfg, random_state=0, noise_random_state=2)
    assert first == again
    assert (first.clean_accuracy, first.attack_success_rate) != (other.clean_accuracy, other.attack_success_rate)
    # the noise seed does not change the data: the undefended run ignores it
    plain = backdoor_defense(regime="none", epsilon=None, config=cfg, random_state=0)
    assert backdoor_defense(regime="none", epsilon=None, config=cfg, random_state=0, noise_random_state=5) == plain
    # the default noise follows the data seed (the stored reproduce runs)
    assert backdoor_defense(epsilon=1.0, config=cfg, random_state=0) == backdoor_defense(
        epsilon=1.0, config=cfg, random_state=0, noise_random_state=0
    )


def test_noise_seed_changes_only_the_released_weights():
    """The memorisation data are the same for every noise seed; the exposure is not."""
    a = memorization_mitigation(epsilon=1.0, config=TINY, n_references=31, random_state=0, noise_random_state=1)
    b = memorization_mitigation(epsilon=1.0, config=TINY, n_references=31, random_state=0, noise_random_state=2)
    c = memorization_mitigation(epsilon=1.0, config=TINY, n_references=31, random_state=0, noise_random_state=1)
    np.testing.assert_array_equal(a.exposures, c.exposures)
    assert not np.array_equal(a.exposures, b.exposures) or a.test_accuracy != b.test_accuracy


def test_backdoor_expectation_counts_draws_and_amplification():
    from dsi.applications import backdoor_expectation

    cfg = TaskConfig(hidden=8, rounds=2, local_steps=2)
    res = backdoor_expectation(epsilon=1.0, draws=3, config=cfg, random_state=0)
    assert res.per_draw_attack_success_rate.shape == (3,)
    assert len(set(res.noise_seeds)) == 3
    assert res.attack_success_rate == pytest.approx(res.per_draw_attack_success_rate.mean())
    expected = np.mean(res.per_draw_attack_success_rate > res.undefended_attack_success_rate)
    assert res.amplified_fraction == pytest.approx(expected)
    # each draw is exactly the run backdoor_defense gives with that noise seed
    one = backdoor_defense(epsilon=1.0, config=cfg, random_state=0, noise_random_state=res.noise_seeds[1])
    assert one.attack_success_rate == res.per_draw_attack_success_rate[1]

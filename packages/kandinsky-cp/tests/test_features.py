"""Several levels, normalised and CQR scores, randomised APS, RAPS, top-k, p-values and MAPIE-shaped outputs,
each against MAPIE 1.x or crepes where both define it (skipped without the peers)."""

import math

import numpy as np
import pytest
from sklearn.ensemble import GradientBoostingRegressor
from sklearn.linear_model import LinearRegression

from kandinsky_cp import KandinskyCP, group_quantile_regression
from kandinsky_cp import groups as G
from kandinsky_cp.scores import aps_score, raps_score

LEVELS = [0.8, 0.9, 0.95]


@pytest.fixture(scope="module")
def scale_model(regression_split):
    """A fitted model of |y - y_pred| (on the calibration inputs' neighbours), clipped positive."""
    reg, Xc, yc, _, _ = regression_split
    rng = np.random.default_rng(9)
    X = rng.uniform(size=(300, 3))
    y = X @ np.array([1.0, 2.0, 3.0]) + rng.normal(size=300) * (0.3 + X[:, 0])

    class Scale(LinearRegression):
        def predict(self, X):
            return np.maximum(super().predict(X), 0.05)

    return Scale().fit(X, np.abs(y - reg.predict(X)))


@pytest.mark.parametrize("randomize", [False, True])
def test_levels_and_return_pred_equal_mapie_regression(regression_split, randomize):
    mapie_regression = pytest.importorskip("mapie.regression")
    reg, Xc, yc, Xt, _ = regression_split
    y_ref, ref = mapie_regression.SplitConformalRegressor(reg, confidence_level=LEVELS, prefit=True) \
        .conformalize(Xc, yc).predict_interval(Xt)
    cp = KandinskyCP(reg, groups=G.intercept(), confidence_level=LEVELS, randomize=randomize, random_state=0)
    y_pred, pis = cp.conformalize(Xc, yc).predict_interval(Xt)
    assert pis.shape == ref.shape == (len(Xt), 2, 3)
    np.testing.assert_array_equal(y_pred, y_ref)
    np.testing.assert_array_equal(pis, ref)
    np.testing.assert_array_equal(cp.predict_interval(Xt)[1], pis)
    single = KandinskyCP(reg, groups=G.intercept(), confidence_level=0.9).conformalize(Xc, yc)
    np.testing.assert_array_equal(single.predict_interval(Xt)[1], pis[:, :, 1:2])


def test_levels_and_alias_equal_mapie_classification(digits_split):
    mapie_classification = pytest.importorskip("mapie.classification")
    clf, Xc, yc, Xt, _ = digits_split
    y_ref, ref = mapie_classification.SplitConformalClassifier(clf, confidence_level=LEVELS, prefit=True) \
        .conformalize(Xc, yc).predict_set(Xt)
    cp = KandinskyCP(clf, groups=G.intercept(), conformity_score="lac", confidence_level=LEVELS, randomize=False)
    y_pred, sets = cp.conformalize(Xc, yc).predict_set(Xt, return_pred=True)
    np.testing.assert_array_equal(y_pred, y_ref)
    np.testing.assert_array_equal(sets, ref)
    assert cp.beta_.shape == (1, 3) and np.all(np.diff(cp.beta_[0]) > 0)
    with pytest.raises(ValueError, match="either score= or its alias conformity_score="):
        KandinskyCP(clf, groups=G.intercept(), score="aps", conformity_score="lac").conformalize(Xc, yc)


def test_normalized_score_equals_crepes_and_mapie(regression_split, scale_model):
    """crepes ConformalRegressor(sigmas) and MAPIE's ResidualNormalisedScore with a prefit residual model;
    n_cal = 401, so (n + 1) alpha = 40.2 is not an integer (crepes' float index agrees): identical."""
    reg, Xc, yc, Xt, _ = regression_split
    cp = KandinskyCP(reg, groups=G.intercept(), score="normalized", scale_estimator=scale_model,
                     randomize=False).conformalize(Xc, yc)
    ours = cp.predict_interval(Xt)[1][:, :, 0]
    sig_c, sig_t = scale_model.predict(Xc), scale_model.predict(Xt)
    assert np.ptp(ours[:, 1] - ours[:, 0]) > 0.5  # widths vary with sigma
    crepes = pytest.importorskip("crepes")
    ref = crepes.ConformalRegressor().fit(yc - reg.predict(Xc), sigmas=sig_c) \
        .predict_int(reg.predict(Xt), sigmas=sig_t, confidence=0.9)
    np.testing.assert_allclose(ours, ref, rtol=0, atol=1e-12)
    mapie_regression = pytest.importorskip("mapie.regression")
    from mapie.conformity_scores import ResidualNormalisedScore

    score = ResidualNormalisedScore(residual_estimator=scale_model, prefit=True)
    _, ref = mapie_regression.SplitConformalRegressor(reg, confidence_level=0.9, conformity_score=score,
                                                      prefit=True).conformalize(Xc, yc).predict_interval(Xt)
    np.testing.assert_allclose(ours, ref[:, :, 0], rtol=0, atol=1e-12)
    callable_scale = KandinskyCP(reg, groups=G.intercept(), score="normalized", randomize=False,
                                 scale_estimator=lambda X: scale_model.predict(X)).conformalize(Xc, yc)
    np.testing.assert_array_equal(callable_scale.predict_interval(Xt)[1][:, :, 0], ours)
    with pytest.raises(ValueError, match="needs scale_estimator="):
        KandinskyCP(reg, groups=G.intercept(), score="normalized").conformalize(Xc, yc)


def test_cqr_equals_mapie_conformalized_quantile_regressor(regression_split):
    """MAPIE ConformalizedQuantileRegressor(prefit, symmetric_correction=True): identical intervals."""
    mapie_regression = pytest.importorskip("mapie.regression")
    _, Xc, yc, Xt, _ = regression_split
    rng = np.random.default_rng(2)
    X = rng.uniform(size=(400, 3))
    y = X @ np.array([1.0, 2.0, 3.0]) + rng.normal(size=400) * (0.3 + X[:, 0])
    models = [GradientBoostingRegressor(loss="quantile", alpha=a, n_estimators=30, max_depth=2,
                                        random_state=0).fit(X, y) for a in (0.05, 0.95, 0.5)]
    mapie = mapie_regression.ConformalizedQuantileRegressor(models, confidence_level=0.9, prefit=True)
    y_ref, ref = mapie.conformalize(Xc, yc).predict_interval(Xt, symmetric_correction=True)
    cp = KandinskyCP(tuple(models), groups=G.intercept(), score="cqr", randomize=False).conformalize(Xc, yc)
    y_pred, pis = cp.predict_interval(Xt)
    np.testing.assert_allclose(pis[:, :, 0], ref[:, :, 0], rtol=0, atol=1e-12)
    np.testing.assert_array_equal(y_pred, y_ref)
    with pytest.raises(TypeError, match="needs estimator=\\(lower, upper\\)"):
        KandinskyCP(models[0], groups=G.intercept(), score="cqr").conformalize(Xc, yc)


def test_topk_equals_mapie(digits_split):
    mapie_classification = pytest.importorskip("mapie.classification")
    clf, Xc, yc, Xt, _ = digits_split
    _, ref = mapie_classification.SplitConformalClassifier(clf, confidence_level=0.9, conformity_score="top_k",
                                                           prefit=True).conformalize(Xc, yc).predict_set(Xt)
    ours = KandinskyCP(clf, groups=G.intercept(), score="topk", randomize=False).conformalize(Xc, yc)
    np.testing.assert_array_equal(ours.predict_set(Xt), ref[:, :, 0])
    assert ref[:, :, 0].sum(axis=1).min() >= 2


def test_randomized_aps_equals_mapie_with_the_same_uniforms(digits_split):
    """MAPIE's APS with include_last_label="randomized" and random_state=s draws its calibration and test
    uniforms from RandomState(s); with those uniforms the randomised APS score, the intercept LP and the
    rule {S(x, k) <= q} give MAPIE's sets (all 597 x 10 memberships)."""
    mapie_classification = pytest.importorskip("mapie.classification")
    clf, Xc, yc, Xt, _ = digits_split
    seed = 3
    _, ref = mapie_classification.SplitConformalClassifier(clf, confidence_level=0.9, conformity_score="aps",
                                                           prefit=True, random_state=seed) \
        .conformalize(Xc, yc).predict_set(Xt, conformity_score_params={"include_last_label": "randomized"})
    score = aps_score(randomize_last=True)
    u_cal = np.random.RandomState(seed).uniform(size=len(yc))
    u_test = np.random.RandomState(seed).uniform(size=(len(Xt), 1))[:, 0]
    fit = group_quantile_regression(np.ones((len(yc), 1)), score.score(clf.predict_proba(Xc), yc, u_cal),
                                    confidence_level=0.9)
    proba = clf.predict_proba(Xt)
    ours = np.column_stack([score.score(proba, np.full(len(Xt), k), u_test) <= fit.beta[0] for k in range(10)])
    np.testing.assert_array_equal(ours, ref[:, :, 0])


def test_randomized_aps_and_raps_cover_at_the_level(digits_split):
    """KandinskyCP with its own uniforms: calibration coverage of the randomised scores is the corrected
    order statistic's; test coverage over 20 seeds is within 0.02 of MAPIE's randomised APS."""
    clf, Xc, yc, Xt, yt = digits_split
    for score in ("aps_randomized", raps_score(k_reg=2, lambda_reg=0.05)):
        cov = []
        for seed in range(20):
            cp = KandinskyCP(clf, groups=G.intercept(), score=score, random_state=seed).conformalize(Xc, yc)
            cov.append(cp.predict_set(Xt)[np.arange(len(yt)), yt].mean())
            assert np.sum(cp.calibration_scores_ <= cp.beta_[0]) == math.ceil(601 * 0.9)
        assert abs(np.mean(cov) - 0.9) <= 0.02, (score, np.mean(cov))


def test_raps_scores_equal_mapie_regularised_scores(digits_split):
    """MAPIE 1.6 picks (k, lambda) on a held-out split of the calibration data; for given (k, lambda) its
    regularised score (randomised APS + lambda (rank - k)^+) equals raps_score's to 1e-12."""
    pytest.importorskip("mapie")
    from mapie.conformity_scores.sets.aps import APSConformityScore
    from mapie.conformity_scores.sets.raps import RAPSConformityScore

    clf, Xc, yc, _, _ = digits_split
    proba = clf.predict_proba(Xc)
    u = np.random.default_rng(0).uniform(size=len(yc))
    cum, cutoff = APSConformityScore.get_true_label_cumsum_proba(yc, proba, np.arange(10))
    base = cum - u[:, None] * proba[np.arange(len(yc)), yc][:, None]
    for k, lam in ((1, 0.01), (3, 0.2)):
        ref = RAPSConformityScore()._regularize_conformity_score(np.array([k]), lam, base, cutoff)[:, 0, 0]
        np.testing.assert_allclose(raps_score(k_reg=k, lambda_reg=lam).score(proba, yc, u), ref, rtol=0, atol=1e-12)


def test_p_values_equal_crepes_mondrian(digits_split, regression_split):
    crepes = pytest.importorskip("crepes")
    clf, Xc, yc, Xt, yt = digits_split
    cp = KandinskyCP(clf, groups=G.by_class(), score="lac", random_state=0).conformalize(Xc, yc)
    alphas_cal = 1 - clf.predict_proba(Xc)[np.arange(len(yc)), yc]
    cc = crepes.ConformalClassifier().fit(alphas_cal, bins=yc)
    alphas_test = 1 - clf.predict_proba(Xt)
    ref = np.column_stack([cc.predict_p(alphas_test[:, [k]], bins=np.full(len(Xt), k), smoothing=False)[:, 0]
                           for k in range(10)])
    np.testing.assert_allclose(cp.p_values(Xt), ref, rtol=0, atol=1e-15)
    np.testing.assert_allclose(cp.p_values(Xt, yt), ref[np.arange(len(yt)), yt], rtol=0, atol=1e-15)
    smooth = cp.p_values(Xt, smoothing=True)
    np.testing.assert_array_equal(cp.p_values(Xt, smoothing=True), smooth)  # reproducible
    ref_s = np.column_stack([cc.predict_p(alphas_test[:, [k]], bins=np.full(len(Xt), k), smoothing=True,
                                          seed=1)[:, 0] for k in range(10)])
    assert np.all(smooth <= ref + 1e-15) and np.all(ref_s <= ref + 1e-15)
    assert abs(smooth.mean() - ref_s.mean()) < 0.01
    # regression, Mondrian bins
    reg, Xc, yc, Xt, yt = regression_split

    def taxonomy(X, y):
        return (np.asarray(X)[:, 0] > 0.3).astype(int) + 2 * (np.asarray(X)[:, 1] > 0.6)

    cp = KandinskyCP(reg, groups=G.mondrian(taxonomy), randomize=False).conformalize(Xc, yc)
    cr = crepes.ConformalRegressor().fit(yc - reg.predict(Xc), bins=taxonomy(Xc, None))
    ref = cr.predict_p(reg.predict(Xt), yt, bins=taxonomy(Xt, None), smoothing=False)
    np.testing.assert_allclose(cp.p_values(Xt, yt), ref, rtol=0, atol=1e-15)
    with pytest.raises(ValueError, match="partition"):
        KandinskyCP(reg, groups=G.intercept() + G.mondrian(taxonomy)).conformalize(Xc, yc).p_values(Xt, yt)


def test_normalized_score_fits_its_scale_model_with_prefit_false():
    """prefit=False: the scale model is fitted on the training residuals; intervals widen where the noise
    does and cover 0.9 +- 0.02 (10 seeds x 1000 test points)."""
    from sklearn.neighbors import KNeighborsRegressor

    cov, ratio = [], []
    for seed in range(10):
        rng = np.random.default_rng(100 + seed)
        X = rng.uniform(size=(3000, 2))
        y = X[:, 0] + rng.normal(size=3000) * (0.05 + X[:, 1])
        cp = KandinskyCP(LinearRegression(), groups=G.intercept(), score="normalized", prefit=False,
                         scale_estimator=KNeighborsRegressor(50), random_state=seed)
        band = cp.fit(X[:1000], y[:1000]).conformalize(X[1000:2000], y[1000:2000]).predict_interval(X[2000:])[1][:, :, 0]
        cov.append(np.mean((band[:, 0] <= y[2000:]) & (y[2000:] <= band[:, 1])))
        width = band[:, 1] - band[:, 0]
        ratio.append(width[X[2000:, 1] > 0.8].mean() / width[X[2000:, 1] < 0.2].mean())
    assert hasattr(cp, "scale_estimator_")
    assert abs(np.mean(cov) - 0.9) <= 0.02, np.mean(cov)
    assert np.mean(ratio) > 3, ratio

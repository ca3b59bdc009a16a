"""Read tree ensembles from scikit-learn, XGBoost and LightGBM into one flat representation.

Every supported model becomes a :class:`TreeEnsemble`: a list of binary trees with per-node
feature, threshold, default (missing-value) direction and cover, per-leaf output vectors, the
library's split rule and the constant margin offset (base score / ``init_``).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field

import numpy as np

_LGBM_ZERO_THRESHOLD = float(np.float32(1e-35))  # LightGBM's kZeroThreshold (a float)


@dataclass
class Tree:
    """One binary tree. Node arrays have length ``n_nodes``; ``left[i] == -1`` marks a leaf."""

    left: np.ndarray
    right: np.ndarray
    feature: np.ndarray
    threshold: np.ndarray
    default_left: np.ndarray  # where a missing value goes
    cover: np.ndarray  # training cover (samples or hessian) for the path-dependent mode
    value: np.ndarray  # (n_nodes, n_outputs); only leaf rows are used
    nan_to_zero: np.ndarray | None = None  # LightGBM missing_type None: NaN is compared as 0.0
    zero_missing: np.ndarray | None = None  # LightGBM missing_type Zero: |x| <= 1e-35 is missing


@dataclass
class TreeEnsemble:
    """A parsed model: ``margin(x) = offset + sum over trees of the reached leaf's value``."""

    trees: list[Tree]
    n_features: int
    n_outputs: int
    offset: np.ndarray  # (n_outputs,)
    strict: bool  # True: left if x < t (XGBoost); False: left if x <= t (sklearn, LightGBM)
    float32_inputs: bool  # the library casts X to float32 before comparing
    nan_routable: bool  # whether the model has a default direction for NaN
    kind: str  # human-readable model name for messages
    feature_names: list[str] | None = None
    output_names: list[str] = field(default_factory=list)


def _err_unsupported(model: object) -> ValueError:
    return ValueError(
        f"unsupported model type {type(model).__module__}.{type(model).__name__}; accepted: xgboost "
        "Booster/XGBRegressor/XGBClassifier, lightgbm Booster/LGBMRegressor/LGBMClassifier, scikit-learn "
        "DecisionTree*, ExtraTree*, RandomForest*, ExtraTrees*, GradientBoosting* (regressor or classifier)"
    )


def _check_model_fitted(model: object) -> None:
    """Raise :class:`sklearn.exceptions.NotFittedError` for an unfitted scikit-learn-style estimator."""
    from sklearn.base import BaseEstimator
    from sklearn.exceptions import NotFittedError
    from sklearn.utils.validation import check_is_fitted

    if not isinstance(model, BaseEstimator):
        return  # a library Booster is fitted by construction
    try:
        check_is_fitted(model)
    except NotFittedError as err:
        raise NotFittedError(f"{type(model).__name__} is not fitted: fit the model before explaining it "
                             f"with FastPD ({err})") from err


def parse_model(model: object) -> TreeEnsemble:
    """Read a fitted tree ensemble.

    Parameters
    ----------
    model : object
        A fitted XGBoost, LightGBM or scikit-learn tree model.

    Returns
    -------
    TreeEnsemble
        The flat representation.

    Raises
    ------
    sklearn.exceptions.NotFittedError
        When ``model`` is a scikit-learn-style estimator that has not been fitted.
    ValueError
        For any model or model setting that cannot be represented.
    """
    module = type(model).__module__
    if module.startswith(("xgboost", "lightgbm", "sklearn")):
        _check_model_fitted(model)
    if module.startswith("xgboost"):
        return _parse_xgboost(model)
    if module.startswith("lightgbm"):
        return _parse_lightgbm(model)
    if module.startswith("sklearn"):
        return _parse_sklearn(model)
    raise _err_unsupported(model)


# --------------------------------------------------------------------------------------- sklearn
def _sklearn_tree(est, scale: float, *, classifier: bool, out: int | None, n_outputs: int) -> Tree:
    t = est.tree_
    if t.n_outputs != 1:
        raise ValueError(f"multi-output scikit-learn trees ({t.n_outputs} outputs) are not supported")
    raw = np.asarray(t.value[:, 0, :], dtype=np.float64)
    if classifier:
        tot = raw.sum(axis=1, keepdims=True)
        raw = raw / np.where(tot > 0, tot, 1.0)  # class fractions, as predict_proba
    value = np.zeros((t.node_count, n_outputs))
    if out is None:
        value[:, : raw.shape[1]] = raw * scale
    else:
        value[:, out] = raw[:, 0] * scale
    return Tree(
        left=np.asarray(t.children_left, dtype=np.int64),
        right=np.asarray(t.children_right, dtype=np.int64),
        feature=np.asarray(t.feature, dtype=np.int64),
        threshold=np.asarray(t.threshold, dtype=np.float64),
        default_left=np.asarray(t.missing_go_to_left, dtype=bool),
        cover=np.asarray(t.weighted_n_node_samples, dtype=np.float64),
        value=value,
    )


def _parse_sklearn(model) -> TreeEnsemble:
    from sklearn.base import is_classifier
    from sklearn.ensemble import (
        ExtraTreesClassifier,
        ExtraTreesRegressor,
        GradientBoostingClassifier,
        GradientBoostingRegressor,
        RandomForestClassifier,
        RandomForestRegressor,
    )
    from sklearn.tree import BaseDecisionTree

    classifier = is_classifier(model)
    n_features = int(model.n_features_in_)
    names = [str(c) for c in model.feature_names_in_] if hasattr(model, "feature_names_in_") else None
    if getattr(model, "n_outputs_", 1) != 1:
        raise ValueError(f"multi-output {type(model).__name__} (n_outputs_={model.n_outputs_}) is not supported")
    offset: np.ndarray
    if isinstance(model, BaseDecisionTree | RandomForestClassifier | RandomForestRegressor
                  | ExtraTreesClassifier | ExtraTreesRegressor):
        estimators = [model] if isinstance(model, BaseDecisionTree) else list(model.estimators_)
        k = len(model.classes_) if classifier else 1
        scale = 1.0 / len(estimators)
        trees = [_sklearn_tree(e, scale, classifier=classifier, out=None, n_outputs=k) for e in estimators]
        offset = np.zeros(k)
        outputs = [str(c) for c in model.classes_] if classifier else ["margin"]
    elif isinstance(model, GradientBoostingRegressor | GradientBoostingClassifier):
        from sklearn.dummy import DummyClassifier, DummyRegressor

        init = model.init_
        if not (isinstance(init, str) and init == "zero") and not isinstance(init, DummyRegressor | DummyClassifier):
            raise ValueError(
                f"{type(model).__name__} with init={type(init).__name__} has a non-constant offset; "
                "only init=None (the default) or init='zero' is supported"
            )
        est = model.estimators_
        k = est.shape[1]
        trees = [_sklearn_tree(est[i, j], model.learning_rate, classifier=False, out=j, n_outputs=k)
                 for i in range(est.shape[0]) for j in range(k)]
        offset = np.asarray(model._raw_predict_init(np.zeros((1, n_features), dtype=np.float32))[0], dtype=np.float64)
        outputs = ["margin"] if k == 1 else [str(c) for c in model.classes_]
    else:
        raise _err_unsupported(model)
    allow_nan = bool(model.__sklearn_tags__().input_tags.allow_nan)
    return TreeEnsemble(trees=trees, n_features=n_features, n_outputs=k, offset=offset, strict=False,
                        float32_inputs=True, nan_routable=allow_nan, kind=type(model).__name__,
                        feature_names=names, output_names=outputs)


# --------------------------------------------------------------------------------------- xgboost
def _parse_xgboost(model) -> TreeEnsemble:
    import xgboost as xgb

    booster = model.get_booster() if hasattr(model, "get_booster") else model
    if not isinstance(booster, xgb.Booster):
        raise _err_unsupported(model)
    raw = json.loads(booster.save_raw(raw_format="json"))
    learner = raw["learner"]
    gb = learner["gradient_booster"]
    name = gb["name"]
    if name not in ("gbtree", "dart"):
        raise ValueError(f"XGBoost booster '{name}' is not a tree model; only gbtree and dart are supported")
    tree_model = gb["gbtree"]["model"] if name == "dart" else gb["model"]
    weights = np.asarray(gb["weight_drop"], dtype=np.float64) if name == "dart" else None
    lmp = learner["learner_model_param"]
    n_features = int(lmp["num_feature"])
    if int(lmp.get("num_target", "1")) > 1:
        raise ValueError("multi-target XGBoost models are not supported")
    k = max(int(lmp["num_class"]), 1)
    n_trees = len(tree_model["trees"])
    if booster is not model:  # the sklearn wrapper predicts with the early-stopping best iteration
        try:
            n_trees = int(tree_model["iteration_indptr"][model.best_iteration + 1])
        except (AttributeError, IndexError, KeyError):
            pass
    trees = []
    for ti, (t, cls) in enumerate(zip(tree_model["trees"][:n_trees], tree_model["tree_info"][:n_trees],
                                      strict=True)):
        if int(t["tree_param"].get("size_leaf_vector", "1")) > 1:
            raise ValueError("XGBoost vector-leaf trees (multi_strategy='multi_output_tree') are not supported")
        if any(int(s) != 0 for s in t["split_type"]):
            raise ValueError("XGBoost categorical splits are not supported (enable_categorical models); "
                             "one-hot encode the categories instead")
        left = np.asarray(t["left_children"], dtype=np.int64)
        leaf = left == -1
        cond = np.asarray(t["split_conditions"], dtype=np.float32).astype(np.float64)
        value = np.zeros((len(left), k))
        w = 1.0 if weights is None else weights[ti]
        # leaf values are float32 in XGBoost; keep that rounding
        value[leaf, int(cls)] = cond[leaf] * w
        feat = np.where(leaf, -2, np.asarray(t["split_indices"], dtype=np.int64))
        trees.append(Tree(left=left, right=np.asarray(t["right_children"], dtype=np.int64), feature=feat,
                          threshold=cond, default_left=np.asarray(t["default_left"], dtype=bool),
                          cover=np.asarray(t["sum_hessian"], dtype=np.float64), value=value))
    offset = _xgboost_offset(booster, n_features, k)
    names = list(booster.feature_names) if booster.feature_names else None
    outputs = ["margin"] if k == 1 else [f"class {i}" for i in range(k)]
    return TreeEnsemble(trees=trees, n_features=n_features, n_outputs=k, offset=offset, strict=True,
                        float32_inputs=True, nan_routable=True, kind=f"xgboost {name}",
                        feature_names=names, output_names=outputs)


def _xgboost_offset(booster, n_features: int, k: int) -> np.ndarray:
    """The margin's intercept: prediction minus prediction with a zero base margin.

    Reading ``base_score`` would need each objective's link function and its storage convention,
    which changed across XGBoost versions; the difference of two predictions does not.
    """
    import xgboost as xgb

    x = np.zeros((1, n_features), dtype=np.float32)
    kw = {"feature_names": booster.feature_names, "feature_types": booster.feature_types, "nthread": 1}
    with_base = booster.predict(xgb.DMatrix(x, **kw), output_margin=True)
    zero = np.zeros((1, k), dtype=np.float32) if k > 1 else np.zeros(1, dtype=np.float32)
    no_base = booster.predict(xgb.DMatrix(x, base_margin=zero, **kw), output_margin=True)
    return (np.asarray(with_base, dtype=np.float64) - np.asarray(no_base, dtype=np.float64)).reshape(k)


# -------------------------------------------------------------------------------------- lightgbm
def _parse_lightgbm(model) -> TreeEnsemble:
    import lightgbm as lgb

    booster = model.booster_ if hasattr(model, "booster_") else model
    if not isinstance(booster, lgb.Booster):
        raise _err_unsupported(model)
    dump = booster.dump_model()
    k = int(dump["num_tree_per_iteration"])
    n_features = int(dump["max_feature_idx"]) + 1
    infos = dump["tree_info"]
    scale = 1.0 / max(len(infos) // k, 1) if dump.get("average_output") else 1.0
    trees = [_lgbm_tree(info["tree_structure"], i % k, k, scale) for i, info in enumerate(infos)]
    names = dump.get("feature_names")
    outputs = ["margin"] if k == 1 else [f"class {i}" for i in range(k)]
    return TreeEnsemble(trees=trees, n_features=n_features, n_outputs=k, offset=np.zeros(k), strict=False,
                        float32_inputs=False, nan_routable=True, kind="lightgbm",
                        feature_names=list(names) if names else None, output_names=outputs)


def _lgbm_tree(root: dict, cls: int, k: int, scale: float) -> Tree:
    rows: list[dict] = []
    left: list[int] = []
    right: list[int] = []

    def visit(node: dict) -> int:
        i = len(rows)
        rows.append(node)
        left.append(-1)
        right.append(-1)
        if "leaf_value" not in node:
            if node.get("decision_type", "<=") != "<=":
                raise ValueError("LightGBM categorical splits (decision_type '==') are not supported; "
                                 "one-hot encode the categories instead")
            left[i] = visit(node["left_child"])
            right[i] = visit(node["right_child"])
        elif "leaf_coeff" in node or "leaf_const" in node:
            raise ValueError("LightGBM linear trees (linear_tree=True) are not supported")
        return i

    visit(root)
    n = len(rows)
    feat = np.full(n, -2, dtype=np.int64)
    thr = np.zeros(n)
    dl = np.zeros(n, dtype=bool)
    n2z = np.zeros(n, dtype=bool)
    zm = np.zeros(n, dtype=bool)
    cover = np.zeros(n)
    value = np.zeros((n, k))
    for i, node in enumerate(rows):
        if "leaf_value" in node:
            value[i, cls] = float(node["leaf_value"]) * scale
            cover[i] = float(node.get("leaf_count", 0))
            continue
        feat[i] = int(node["split_feature"])
        thr[i] = float(node["threshold"])
        dl[i] = bool(node["default_left"])
        mt = node.get("missing_type", "None")
        n2z[i] = mt != "NaN"
        zm[i] = mt == "Zero"
        cover[i] = float(node.get("internal_count", 0))
    return Tree(left=np.asarray(left, dtype=np.int64), right=np.asarray(right, dtype=np.int64), feature=feat,
                threshold=thr, default_left=dl, cover=cover, value=value, nan_to_zero=n2z, zero_missing=zm)


def lgbm_zero_threshold() -> float:
    """LightGBM's bound below which a value counts as zero for missing_type='Zero'."""
    return _LGBM_ZERO_THRESHOLD

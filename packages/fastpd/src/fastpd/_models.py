"""Read tree ensembles from scikit-learn, XGBoost and LightGBM into one flat representation.

Every supported model becomes a :class:`TreeEnsemble`: a list of binary trees with per-node
feature, threshold, default (missing-value) direction and cover, per-leaf output vectors, the
library's split rule and the constant margin offset (base score / ``init_``).
"""

from __future__ import annotations

import json
import re
import struct
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

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
    # category-set splits: node -> (left (n_cats,) bool over integer categories 0..n_cats-1, direction of a
    # negative value, direction of a category >= n_cats); NaN follows default_left
    categorical: dict[int, tuple[np.ndarray, bool, bool]] = field(default_factory=dict)


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
    input_names: list[str] | None = None  # column names a DataFrame input must have (None: unchecked)
    missing_value: float | None = None  # a non-NaN value the library treats as missing (XGBoost ``missing``)
    sparse_absent_missing: bool = False  # XGBoost: entries absent from a sparse matrix are missing, not 0
    transform: Callable[[Any], Any] | None = None  # raw input -> the trees' feature space (Pipeline, HGB)
    cat_trunc_first: bool = False  # LightGBM: a category is int(x) first, then tested for < 0
    # LightGBM fitted on a DataFrame: the categories of its category-dtype columns, in column order
    pandas_categories: list[list[Any]] | None = None


SUPPORTED = (
    "xgboost Booster/XGBRegressor/XGBClassifier/XGBRFRegressor/XGBRFClassifier (gbtree, dart); "
    "lightgbm Booster/LGBMRegressor/LGBMClassifier; scikit-learn DecisionTree*, ExtraTree*, RandomForest*, "
    "ExtraTrees*, GradientBoosting*, HistGradientBoosting* (regressor or classifier), IsolationForest; catboost "
    "CatBoost/CatBoostRegressor/CatBoostClassifier (numeric features); and a Pipeline whose last step is one of these"
)


def _err_unsupported(model: object) -> ValueError:
    return ValueError(f"unsupported model type {type(model).__module__}.{type(model).__name__}; accepted: {SUPPORTED}")


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
    if module.startswith("catboost") and hasattr(model, "is_fitted") and not model.is_fitted():
        from sklearn.exceptions import NotFittedError

        raise NotFittedError(f"{type(model).__name__} is not fitted: fit the model before explaining it with FastPD")
    if module.startswith("xgboost"):
        return _parse_xgboost(model)
    if module.startswith("lightgbm"):
        return _parse_lightgbm(model)
    if module.startswith("sklearn"):
        return _parse_sklearn(model)
    if module.startswith("catboost"):
        return _parse_catboost(model)
    raise _err_unsupported(model)


# --------------------------------------------------------------------------------------- sklearn
def _sklearn_tree(est, scale: float, *, classifier: bool, out: int | None, n_outputs: int,
                  features: np.ndarray | None = None) -> Tree:
    t = est.tree_
    if classifier:
        if t.n_outputs != 1:
            raise ValueError(f"multi-output scikit-learn classifiers ({t.n_outputs} outputs) are not supported")
        raw = np.asarray(t.value[:, 0, :], dtype=np.float64)
        tot = raw.sum(axis=1, keepdims=True)
        raw = raw / np.where(tot > 0, tot, 1.0)  # class fractions, as predict_proba
    else:
        raw = np.asarray(t.value[:, :, 0], dtype=np.float64)  # (n_nodes, n_outputs of the regressor)
    value = np.zeros((t.node_count, n_outputs))
    if out is None:
        value[:, : raw.shape[1]] = raw * scale
    else:
        value[:, out] = raw[:, 0] * scale
    feature = np.asarray(t.feature, dtype=np.int64)
    if features is not None:  # the tree was fitted on a subset of the columns (bagging max_features)
        feature = np.where(feature >= 0, np.asarray(features, dtype=np.int64)[np.maximum(feature, 0)], feature)
    return Tree(
        left=np.asarray(t.children_left, dtype=np.int64),
        right=np.asarray(t.children_right, dtype=np.int64),
        feature=feature,
        threshold=np.asarray(t.threshold, dtype=np.float64),
        default_left=np.asarray(t.missing_go_to_left, dtype=bool),
        cover=np.asarray(t.weighted_n_node_samples, dtype=np.float64),
        value=value,
    )


def _names_in(model) -> list[str] | None:
    names = getattr(model, "feature_names_in_", None)
    return [str(c) for c in names] if names is not None else None


def densify(X: Any, absent_missing: bool) -> Any:
    """A scipy sparse matrix as a dense array: absent entries are 0, or NaN where the model reads them as missing."""
    if not hasattr(X, "tocoo"):
        return X
    if not absent_missing:
        return X.toarray()
    coo = X.tocsr()
    coo.sum_duplicates()
    coo = coo.tocoo()
    out = np.full(coo.shape, np.nan)
    out[coo.row, coo.col] = coo.data
    return out


class PipelineInput:
    """Apply every step of a Pipeline but the last to raw rows (then the last step's own input map)."""

    def __init__(self, head: Any, inner: Callable[[Any], Any] | None, absent_missing: bool = False) -> None:
        self.head = head
        self.inner = inner
        self.absent_missing = absent_missing

    def __call__(self, X: Any) -> Any:
        out = densify(self.head.transform(X), self.absent_missing)  # sparse output of an encoder
        return out if self.inner is None else self.inner(out)


class HistGradientBoostingInput:
    """Encode categories as the model does (its OrdinalEncoder) and keep the original column order."""

    def __init__(self, preprocessor: Any, order: np.ndarray) -> None:
        self.preprocessor = preprocessor
        self.order = order

    def __call__(self, X: Any) -> np.ndarray:
        xt = np.asarray(self.preprocessor.transform(X), dtype=np.float64)
        out = np.empty_like(xt)
        out[:, self.order] = xt
        return out


def _parse_pipeline(model) -> TreeEnsemble:
    head, last = model[:-1], model[-1]
    if last is None or last == "passthrough":
        raise ValueError("the Pipeline's last step is 'passthrough'; its last step must be a supported tree model")
    try:
        ens = parse_model(last)
    except ValueError as err:
        raise ValueError(f"the Pipeline's last step is not supported: {err}") from err
    names = ens.feature_names
    try:
        names = [str(c) for c in head.get_feature_names_out()]
    except (AttributeError, ValueError, TypeError):
        pass
    ens.transform = PipelineInput(head, ens.transform, ens.sparse_absent_missing)
    ens.feature_names = names if names is not None and len(names) == ens.n_features else ens.feature_names
    ens.input_names = _names_in(model)
    ens.kind = f"Pipeline({ens.kind})"
    return ens


def _parse_hist_gradient_boosting(model) -> TreeEnsemble:
    n_features = int(model.n_features_in_)
    k = int(model.n_trees_per_iteration_)
    pre = getattr(model, "_preprocessor", None)
    transform = None
    orig = np.arange(n_features)
    if pre is not None:  # categorical features: encoded and moved to the front by the model's ColumnTransformer
        cat = np.asarray(model.is_categorical_, dtype=bool)
        orig = np.concatenate([np.flatnonzero(cat), np.flatnonzero(~cat)])
        transform = HistGradientBoostingInput(pre, orig)
    known, f_idx_map = model._bin_mapper.make_known_categories_bitsets()
    trees = []
    for iteration in model._predictors:
        for j, pred in enumerate(iteration):
            nodes = pred.nodes
            leaf = nodes["is_leaf"].astype(bool)
            value = np.zeros((len(nodes), k))
            value[leaf, j] = nodes["value"][leaf]
            left = np.where(leaf, -1, nodes["left"].astype(np.int64))
            right = np.where(leaf, -1, nodes["right"].astype(np.int64))
            feat_t = nodes["feature_idx"].astype(np.int64)
            feature = np.where(leaf, -2, orig[np.where(leaf, 0, feat_t)])
            missing_left = nodes["missing_go_to_left"].astype(bool)
            categorical: dict[int, tuple[np.ndarray, bool, bool]] = {}
            for i in np.flatnonzero(~leaf & nodes["is_categorical"].astype(bool)):
                cats = np.arange(256)
                in_left = _in_bitset(pred.raw_left_cat_bitsets[nodes["bitset_idx"][i]], cats)
                is_known = _in_bitset(known[f_idx_map[feat_t[i]]], cats)
                table = np.where(in_left, True, np.where(is_known, False, missing_left[i]))  # unknown: missing
                categorical[int(i)] = (table, bool(missing_left[i]), bool(missing_left[i]))
            trees.append(Tree(left=left, right=right, feature=feature,
                              threshold=np.where(leaf, 0.0, nodes["num_threshold"].astype(np.float64)),
                              default_left=missing_left, cover=nodes["count"].astype(np.float64), value=value,
                              categorical=categorical))
    offset = np.asarray(model._baseline_prediction, dtype=np.float64).reshape(-1)[:k]
    names = _names_in(model)
    outputs = [str(c) for c in model.classes_] if k > 1 else ["margin"]
    return TreeEnsemble(trees=trees, n_features=n_features, n_outputs=k, offset=offset, strict=False,
                        float32_inputs=False, nan_routable=True, kind=type(model).__name__, feature_names=names,
                        output_names=outputs, input_names=names, transform=transform)


def _in_bitset(bitset: np.ndarray, values: np.ndarray) -> np.ndarray:
    words = np.asarray(bitset, dtype=np.uint64)
    return ((words[values // 32] >> (values % 32).astype(np.uint64)) & 1).astype(bool)


def average_path_length(n: np.ndarray) -> np.ndarray:
    """c(n): the mean path length of an unsuccessful search in a binary search tree of n points."""
    n = np.asarray(n, dtype=np.float64)
    with np.errstate(divide="ignore", invalid="ignore"):
        c = 2.0 * (np.log(n - 1.0) + np.euler_gamma) - 2.0 * (n - 1.0) / n
    return np.where(n <= 1, 0.0, np.where(n == 2, 1.0, c))


def _parse_isolation_forest(model) -> TreeEnsemble:
    n_features = int(model.n_features_in_)
    subsample = model._max_features != n_features  # as IsolationForest.score_samples
    n_trees = len(model.estimators_)
    trees = []
    for est, feats in zip(model.estimators_, model.estimators_features_, strict=True):
        t = est.tree_
        depth = np.zeros(t.node_count)
        for i in range(t.node_count):  # children have larger ids than their parent
            for c in (t.children_left[i], t.children_right[i]):
                if c != -1:
                    depth[c] = depth[i] + 1
        tree = _sklearn_tree(est, 1.0, classifier=False, out=None, n_outputs=1,
                             features=np.asarray(feats) if subsample else None)
        tree.value = ((depth + average_path_length(t.n_node_samples)) / n_trees)[:, None]
        trees.append(tree)
    names = _names_in(model)
    return TreeEnsemble(trees=trees, n_features=n_features, n_outputs=1, offset=np.zeros(1), strict=False,
                        float32_inputs=True, nan_routable=True, kind="IsolationForest", feature_names=names,
                        output_names=["mean path length"], input_names=names)


def _parse_sklearn(model) -> TreeEnsemble:
    from sklearn.base import is_classifier
    from sklearn.ensemble import (
        ExtraTreesClassifier,
        ExtraTreesRegressor,
        GradientBoostingClassifier,
        GradientBoostingRegressor,
        HistGradientBoostingClassifier,
        HistGradientBoostingRegressor,
        IsolationForest,
        RandomForestClassifier,
        RandomForestRegressor,
    )
    from sklearn.pipeline import Pipeline
    from sklearn.tree import BaseDecisionTree

    if isinstance(model, Pipeline):
        return _parse_pipeline(model)
    if isinstance(model, HistGradientBoostingRegressor | HistGradientBoostingClassifier):
        return _parse_hist_gradient_boosting(model)
    if isinstance(model, IsolationForest):
        return _parse_isolation_forest(model)
    classifier = is_classifier(model)
    n_features = int(model.n_features_in_)
    names = _names_in(model)
    n_out = int(getattr(model, "n_outputs_", 1))
    if n_out != 1 and classifier:
        raise ValueError(f"multi-output {type(model).__name__} (n_outputs_={n_out}) is not supported; "
                         "multi-output regressors are")
    offset: np.ndarray
    if isinstance(model, BaseDecisionTree | RandomForestClassifier | RandomForestRegressor
                  | ExtraTreesClassifier | ExtraTreesRegressor):
        estimators = [model] if isinstance(model, BaseDecisionTree) else list(model.estimators_)
        k = len(model.classes_) if classifier else n_out
        scale = 1.0 / len(estimators)
        trees = [_sklearn_tree(e, scale, classifier=classifier, out=None, n_outputs=k) for e in estimators]
        offset = np.zeros(k)
        outputs = ([str(c) for c in model.classes_] if classifier else
                   ["margin"] if k == 1 else [f"output {j}" for j in range(k)])
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
                        feature_names=names, output_names=outputs, input_names=names)


# --------------------------------------------------------------------------------------- xgboost
def _parse_xgboost(model) -> TreeEnsemble:
    import xgboost as xgb

    booster = model.get_booster() if hasattr(model, "get_booster") else model
    if not isinstance(booster, xgb.Booster):
        raise _err_unsupported(model)
    raw = _xgboost_model_dict(booster)
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
                          cover=np.asarray(t["sum_hessian"], dtype=np.float64), value=value,
                          categorical=_xgboost_categorical(t)))
    offset = _xgboost_offset(booster, n_features, k)
    names = list(booster.feature_names) if booster.feature_names else None
    outputs = ["margin"] if k == 1 else [f"class {i}" for i in range(k)]
    # the wrapper's `missing` marks missing values besides NaN (a Booster gets it from each DMatrix: NaN assumed)
    missing = float(getattr(model, "missing", np.nan)) if booster is not model else np.nan
    return TreeEnsemble(trees=trees, n_features=n_features, n_outputs=k, offset=offset, strict=True,
                        float32_inputs=True, nan_routable=True, kind=f"xgboost {name}",
                        feature_names=names, output_names=outputs, input_names=names,
                        missing_value=None if np.isnan(missing) else float(np.float32(missing)),
                        sparse_absent_missing=True)


def _xgboost_model_dict(booster: Any) -> dict:
    """The booster's model as the dict of its JSON dump, read from the (much faster) UBJSON dump.

    Typed arrays become numpy arrays in one ``frombuffer`` each; any surprise in the binary format
    falls back to the JSON dump.
    """
    try:
        raw = bytes(booster.save_raw(raw_format="ubj"))
        value, end = _UBJReader(raw).read(0)
        if end == len(raw) and isinstance(value, dict):
            return value
    except (ValueError, TypeError, KeyError, IndexError, UnicodeDecodeError):  # pragma: no cover - old formats
        pass
    return json.loads(booster.save_raw(raw_format="json"))


_UBJ_NUMBERS = {b"i": ">i1", b"U": ">u1", b"I": ">i2", b"l": ">i4", b"L": ">i8", b"d": ">f4", b"D": ">f8"}
_UBJ_STRUCT = {k: struct.Struct(v.replace("i1", "b").replace("u1", "B").replace("i2", "h").replace("i4", "i")
                                .replace("i8", "q").replace("f4", "f").replace("f8", "d"))
               for k, v in _UBJ_NUMBERS.items()}


class _UBJReader:
    """A UBJSON (draft 12) decoder for XGBoost's model dumps: typed containers become numpy arrays."""

    def __init__(self, data: bytes) -> None:
        self.data = data

    def _number(self, marker: bytes, pos: int) -> tuple[Any, int]:
        fmt = _UBJ_STRUCT[marker]
        return fmt.unpack_from(self.data, pos)[0], pos + fmt.size

    def _length(self, pos: int) -> tuple[int, int]:
        marker = self.data[pos : pos + 1]
        n, pos = self._number(marker, pos + 1)
        return int(n), pos

    def _string(self, pos: int) -> tuple[str, int]:
        n, pos = self._length(pos)
        return self.data[pos : pos + n].decode("utf-8"), pos + n

    def read(self, pos: int, marker: bytes | None = None) -> tuple[Any, int]:
        if marker is None:
            marker = self.data[pos : pos + 1]
            pos += 1
            while marker == b"N":
                marker, pos = self.data[pos : pos + 1], pos + 1
        if marker in _UBJ_NUMBERS:
            return self._number(marker, pos)
        if marker == b"S" or marker == b"H":
            text, pos = self._string(pos)
            return (text if marker == b"S" else float(text)), pos
        if marker == b"C":
            return self.data[pos : pos + 1].decode("utf-8"), pos + 1
        if marker in (b"T", b"F", b"Z"):
            return {b"T": True, b"F": False, b"Z": None}[marker], pos
        if marker == b"[":
            return self._container(pos, b"]", keyed=False)
        if marker == b"{":
            return self._container(pos, b"}", keyed=True)
        raise ValueError(f"unknown UBJSON marker {marker!r} at byte {pos - 1}")

    def _container(self, pos: int, close: bytes, *, keyed: bool) -> tuple[Any, int]:
        typ = None
        count = None
        if self.data[pos : pos + 1] == b"$":
            typ, pos = self.data[pos + 1 : pos + 2], pos + 2
        if self.data[pos : pos + 1] == b"#":
            count, pos = self._length(pos + 1)
        if not keyed and typ in _UBJ_NUMBERS and count is not None:
            dt = np.dtype(_UBJ_NUMBERS[typ])
            arr = np.frombuffer(self.data, dtype=dt, count=count, offset=pos).astype(dt.newbyteorder("="))
            return arr, pos + count * dt.itemsize
        items: list[Any] = []
        out: dict[str, Any] = {}
        i = 0
        while count is None or i < count:
            if count is None and self.data[pos : pos + 1] == close:
                pos += 1
                break
            if keyed:
                key, pos = self._string(pos)
            value, pos = self.read(pos, typ)
            if keyed:
                out[key] = value
            else:
                items.append(value)
            i += 1
        return (out if keyed else items), pos


def _xgboost_categorical(t: dict) -> dict[int, tuple[np.ndarray, bool, bool]]:
    """XGBoost's category splits: listed categories go right; other, negative or too large ones go left."""
    out: dict[int, tuple[np.ndarray, bool, bool]] = {}
    split_type = t.get("split_type", [])
    if not np.any(np.asarray(split_type) != 0):
        return out
    cats = np.asarray(t["categories"], dtype=np.int64)
    for node, start, size in zip(t["categories_nodes"], t["categories_segments"], t["categories_sizes"],
                                 strict=True):
        right = cats[int(start) : int(start) + int(size)]
        table = np.ones(int(right.max()) + 1 if len(right) else 1, dtype=bool)
        table[right] = False
        out[int(node)] = (table, True, True)
    return out


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
    names = list(dump.get("feature_names") or []) or None
    auto = names is not None and all(re.fullmatch(f"Column_{i}", n) for i, n in enumerate(names))
    outputs = ["margin"] if k == 1 else [f"class {i}" for i in range(k)]
    return TreeEnsemble(trees=trees, n_features=n_features, n_outputs=k, offset=np.zeros(k), strict=False,
                        float32_inputs=False, nan_routable=True, kind="lightgbm", feature_names=names,
                        output_names=outputs, input_names=None if auto else names, cat_trunc_first=True,
                        pandas_categories=getattr(booster, "pandas_categorical", None) or None)


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
            if node.get("decision_type", "<=") not in ("<=", "=="):
                raise ValueError(f"LightGBM decision_type {node.get('decision_type')!r} is not supported")
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
    categorical: dict[int, tuple[np.ndarray, bool, bool]] = {}
    for i, node in enumerate(rows):
        if "leaf_value" in node:
            value[i, cls] = float(node["leaf_value"]) * scale
            cover[i] = float(node.get("leaf_count", 0))
            continue
        feat[i] = int(node["split_feature"])
        cover[i] = float(node.get("internal_count", 0))
        if node.get("decision_type", "<=") == "==":  # listed categories go left; NaN, negative, others right
            cats = np.asarray([int(c) for c in str(node["threshold"]).split("||")], dtype=np.int64)
            table = np.zeros(int(cats.max()) + 1, dtype=bool)
            table[cats] = True
            categorical[i] = (table, False, False)
            continue
        thr[i] = float(node["threshold"])
        dl[i] = bool(node["default_left"])
        mt = node.get("missing_type", "None")
        n2z[i] = mt != "NaN"
        zm[i] = mt == "Zero"
    return Tree(left=np.asarray(left, dtype=np.int64), right=np.asarray(right, dtype=np.int64), feature=feat,
                threshold=thr, default_left=dl, cover=cover, value=value, nan_to_zero=n2z, zero_missing=zm,
                categorical=categorical)


def lgbm_zero_threshold() -> float:
    """LightGBM's bound below which a value counts as zero for missing_type='Zero'."""
    return _LGBM_ZERO_THRESHOLD


# -------------------------------------------------------------------------------------- catboost
def _parse_catboost(model) -> TreeEnsemble:
    """CatBoost's oblivious trees (numeric features): each level splits every node on x > border."""
    import os
    import tempfile

    if not hasattr(model, "save_model"):
        raise _err_unsupported(model)
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "model.json")
        model.save_model(path, format="json")
        with open(path) as fh:
            raw = json.load(fh)
    if "oblivious_trees" not in raw:
        policy = model.get_all_params().get("grow_policy", "non-symmetric") if hasattr(model, "get_all_params") \
            else "non-symmetric"
        raise ValueError(f"CatBoost models with grow_policy='{policy}' (non-symmetric trees) are not supported; "
                         "only grow_policy='SymmetricTree' (the default, oblivious trees) is")
    info = raw["features_info"]
    if info.get("categorical_features") or info.get("text_features") or info.get("embedding_features"):
        raise ValueError("CatBoost models with categorical, text or embedding features are not supported; "
                         "only numeric (float) features are")
    floats = info.get("float_features", [])
    flat = {int(f["feature_index"]): int(f["flat_feature_index"]) for f in floats}
    nan_true = {int(f["feature_index"]): f.get("nan_value_treatment") == "AsTrue" for f in floats}
    n_features = max(flat.values(), default=-1) + 1
    n_features = max(n_features, len(getattr(model, "feature_names_", None) or []))
    scale, bias = raw.get("scale_and_bias", [1.0, [0.0]])
    bias = np.atleast_1d(np.asarray(bias, dtype=np.float64))
    k = len(bias)
    trees = []
    for t in raw["oblivious_trees"]:
        splits = t.get("splits", [])
        if any(sp.get("split_type") != "FloatFeature" for sp in splits):
            raise ValueError("CatBoost splits other than FloatFeature (one-hot or CTR) are not supported")
        depth = len(splits)
        leaves = np.asarray(t["leaf_values"], dtype=np.float64).reshape(1 << depth, k) * float(scale)
        weights = np.asarray(t.get("leaf_weights", np.ones(1 << depth)), dtype=np.float64)
        trees.append(_oblivious_tree(splits, flat, nan_true, leaves, weights))
    names = [str(c) for c in getattr(model, "feature_names_", None) or []] or None
    auto = names is not None and all(n == str(i) for i, n in enumerate(names))
    outputs = ["margin"] if k == 1 else [f"class {i}" for i in range(k)]
    return TreeEnsemble(trees=trees, n_features=n_features, n_outputs=k, offset=bias, strict=False,
                        float32_inputs=True, nan_routable=True, kind=type(model).__name__, feature_names=names,
                        output_names=outputs, input_names=None if auto else names)


def _oblivious_tree(splits: list, flat: dict, nan_true: dict, leaves: np.ndarray, weights: np.ndarray) -> Tree:
    """A full binary tree: level j tests splits[j]; x > border sets bit j of the leaf index (right child)."""
    depth = len(splits)
    n = (1 << (depth + 1)) - 1
    left = -np.ones(n, dtype=np.int64)
    right = -np.ones(n, dtype=np.int64)
    feature = np.full(n, -2, dtype=np.int64)
    threshold = np.zeros(n)
    default_left = np.zeros(n, dtype=bool)
    value = np.zeros((n, leaves.shape[1]))
    cover = np.zeros(n)
    # heap layout: node i at level j has children 2i+1 (bit j = 0) and 2i+2 (bit j = 1)
    for i in range((1 << depth) - 1):
        j = int(np.floor(np.log2(i + 1)))
        sp = splits[j]
        fi = int(sp["float_feature_index"])
        left[i], right[i] = 2 * i + 1, 2 * i + 2
        feature[i] = flat[fi]
        threshold[i] = float(sp["border"])
        default_left[i] = not nan_true[fi]
    first = (1 << depth) - 1
    for pos in range(1 << depth):
        node = first + pos
        index = sum(((pos >> (depth - 1 - j)) & 1) << j for j in range(depth))  # path bits, level j -> bit j
        value[node] = leaves[index]
        cover[node] = weights[index]
    for i in range(first - 1, -1, -1):
        cover[i] = cover[left[i]] + cover[right[i]]
    return Tree(left=left, right=right, feature=feature, threshold=threshold, default_left=default_left,
                cover=cover, value=value)

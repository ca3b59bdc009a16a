"""The FastPD explainer: exact PD functions, functional decomposition and SHAP for tree ensembles."""

from __future__ import annotations

import functools
import itertools
import logging
import math
import os
import warnings
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import numpy as np
from icml25_shared.random import check_random_state
from icml25_shared.validation import Interval, Options, check_param, check_params

from fastpd import _engine as eng
from fastpd._models import TreeEnsemble, densify, parse_model
from fastpd.results import Decomposition, Explanation

log = logging.getLogger(__name__)

_PARAMETER_CONSTRAINTS: dict[str, list[Any]] = {
    "method": [Options(str, {"fastpd", "path-dependent"})],
    "max_background": [None, Interval(int, 1, None)],
    "n_jobs": [Interval(int, 1, None), {-1}],
    "random_state": ["random_state"],
    "chunk_memory_mb": [Interval(float, 0, None, closed="neither")],
    "progress": ["boolean"],
    "augment": [Options(str, {"auto", "full", "per-row"})],
}
# Cost model of the "auto" switch, in entries touched (eng.table_cost, eng.walk_cost,
# eng.shap_row_cost). Measured on XGBoost, 100 trees of depth 6 and 10 (5,182 and 33,067 leaves),
# N = 1000 and 4000: a walk of the background bitsets costs 6-14 ns per word of eng.walk_cost, as
# much as one entry of the augmented and SHAP tables built from the codes (11-16 ns), so a fresh
# explainer walks for the first rows (depth 10: about 4 rows at N = 1000, 2 at N = 4000) and then
# builds the tables; an entry of the per-row SHAP subset-sum costs 29-30 ns against 4-7 ns per
# entry of the full SHAP tables.
_WALK_COST = 1.0  # one word of a walk, against one table entry
_ROW_COST = 6.0  # one entry of the per-row SHAP subset-sum, against one entry of the full SHAP tables
_PARAMETERS = ("model", "background", "method", "max_background", "n_jobs", "random_state", "chunk_memory_mb",
               "progress", "feature_names", "augment")
_SAVE_FORMAT = "fastpd.FastPD/1"  # FastPD.save's file layout


def _version() -> str:
    from fastpd import __version__

    return __version__


_FITTED_ATTRIBUTES = frozenset({
    "intercept_", "expected_value_", "offset_", "n_features_in_", "n_outputs_", "feature_names_", "background_",
    "background_size_", "n_trees_", "n_leaves_", "max_path_features_", "feature_names_in_",
})


class FastPD:
    """Exact partial dependence, decomposition and SHAP values of a tree ensemble (Liu et al., ICML 2025).

    Every tree is augmented once against the background data; afterwards each query costs one
    pass over the rows, linear in the number of rows (no background-by-row product as in
    interventional TreeSHAP).

    Parameters
    ----------
    model : object
        A fitted xgboost ``Booster``/``XGBRegressor``/``XGBClassifier``, lightgbm
        ``Booster``/``LGBMRegressor``/``LGBMClassifier``, or scikit-learn ``DecisionTree*``,
        ``ExtraTree*``, ``RandomForest*``, ``ExtraTrees*``, ``GradientBoosting*``,
        ``HistGradientBoosting*``, ``IsolationForest``, or a ``Pipeline`` whose last step is one of
        these. Category-set splits (LightGBM ``categorical_feature``, XGBoost ``enable_categorical``,
        HistGradientBoosting ``categorical_features``) are exact. Classifiers are explained on the
        margin (log-odds; one output per class for multiclass boosting), scikit-learn forests and
        single trees on ``predict_proba``, as ``shap.TreeExplainer`` does; multi-output forest
        regressors with one output per target; ``IsolationForest`` on the mean path length E[h(x)]
        (``score_samples(X) = -2 ** (-E[h(x)] / c(max_samples_))``); a ``Pipeline`` in the space
        its last step sees (the preceding steps are applied to X and the background).
    background : array-like of shape (n_b, d), optional
        Rows defining the interventional distribution; required by ``method="fastpd"``, ignored by
        ``method="path-dependent"``, which uses the training cover.
    method : {"fastpd", "path-dependent"}, default "fastpd"
        ``"fastpd"``: the empirical marginal PD, the estimand of interventional SHAP and of
        scikit-learn's ``partial_dependence(method="brute")``. ``"path-dependent"``: cover weights,
        as path-dependent TreeSHAP and scikit-learn's ``method="recursion"``.
    max_background : int, optional
        If set, use a random subset of this many background rows.
    n_jobs : int, default 1
        Threads over blocks of trees (-1: all cores).
    random_state : None, int or numpy Generator, default 0
        Seed of the background subsample (used only with ``max_background``).
    chunk_memory_mb : float, default 256
        Bound on the scratch memory per chunk of query rows.
    progress : bool, default False
        Show a tqdm bar over chunks of rows.
    feature_names : sequence of str, optional
        Names for plots and labels (default: the model's, else the background's columns).
    augment : {"auto", "full", "per-row"}, default "auto"
        How much of the augmentation is computed ahead of the rows. ``"full"``: the augmented
        tables at :meth:`fit` and each query's full per-leaf tables (SHAP, interactions,
        components) on its first use, as in the paper. ``"per-row"``: :meth:`fit` keeps the
        background's split directions as bitsets; :meth:`pd_function` counts its table entries by
        walking the background down the trees, and :meth:`shap_values` walks each row's hybrid
        points with the background (interventional TreeSHAP's recursion) and computes only the
        SHAP-table entries the row reaches, without building the tables. ``"auto"``: per row while
        the rows explained so far cost less than the full tables, then the full tables. Every
        option returns the same numbers, bit for bit.

    Attributes
    ----------
    intercept_ : float or ndarray of shape (K,)
        The mean margin over the background; ``expected_value_`` is an alias.
    offset_ : float or ndarray of shape (K,)
        The model's constant margin offset (XGBoost base score, scikit-learn ``init_``).
    n_features_in_ : int
        Number of features d.
    n_outputs_ : int
        Number of outputs K (1 for regression and binary boosting).
    feature_names_ : list of str or None
        The names used in labels.
    feature_names_in_ : list of str or None
        The columns a DataFrame input must have, in this order (the model's names, else the
        background's columns). Other columns raise ``ValueError``; a plain array then warns, as
        in scikit-learn.
    background_ : ndarray of shape (n_b, d) or None
        The rows used, after validation and subsampling; with ``method="path-dependent"`` the
        given background or None.
    background_size_ : int
        Rows in the background (0 for path-dependent).
    n_trees_, n_leaves_, max_path_features_ : int
        Size of the parsed model; ``max_path_features_`` is the largest number of distinct
        features on one root-to-leaf path.

    Notes
    -----
    Every query calls :meth:`fit` on first use. Reading a fitted attribute before that raises
    :class:`sklearn.exceptions.NotFittedError` (an ``AttributeError``, so ``hasattr`` is False);
    an unfitted ``model`` raises the same error from :meth:`fit`.

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn.ensemble import GradientBoostingRegressor
    >>> from fastpd import FastPD
    >>> rng = np.random.default_rng(0)
    >>> X = rng.normal(size=(200, 3))
    >>> y = X[:, 0] + 2 * X[:, 0] * X[:, 1]
    >>> model = GradientBoostingRegressor(n_estimators=20, max_depth=2, random_state=0).fit(X, y)
    >>> fp = FastPD(model, X).fit()
    >>> phi = fp.shap_values(X[:5])
    >>> phi.shape
    (5, 3)
    >>> bool(np.allclose(phi.sum(axis=1) + fp.intercept_, model.predict(X[:5])))
    True
    >>> dec = fp.decompose(X[:5])
    >>> bool(np.allclose(dec.total(), model.predict(X[:5])))
    True
    """

    def __init__(self, model: Any, background: Any = None, *, method: str = "fastpd",
                 max_background: int | None = None, n_jobs: int = 1, random_state: int | None = 0,
                 chunk_memory_mb: float = 256.0, progress: bool = False,
                 feature_names: Sequence[str] | None = None, augment: str = "auto") -> None:
        self.model = model
        self.background = background
        self.method = method
        self.max_background = max_background
        self.n_jobs = n_jobs
        self.random_state = random_state
        self.chunk_memory_mb = chunk_memory_mb
        self.progress = progress
        self.feature_names = feature_names
        self.augment = augment

    # ------------------------------------------------------------------------------------ fit
    def fit(self, X: Any = None, y: Any = None) -> FastPD:
        """Parse the model and augment every tree against the background.

        Parameters
        ----------
        X, y : ignored
            Accepted for scikit-learn compatibility; the background is given to the constructor.

        Returns
        -------
        FastPD
            ``self``.

        Raises
        ------
        sklearn.exceptions.NotFittedError
            When ``model`` is an estimator that has not been fitted.
        ValueError
            For an unsupported model or model setting, or an invalid parameter.
        """
        check_params(vars(self), _PARAMETER_CONSTRAINTS, owner="FastPD")
        ens = parse_model(self.model)
        self._ens: TreeEnsemble = ens
        self.n_features_in_ = ens.n_features
        self.n_outputs_ = ens.n_outputs
        self.offset_ = self._squeeze(ens.offset)
        jobs = self.n_jobs if self.n_jobs != -1 else 0
        self._jobs = jobs if jobs >= 1 else max(1, os.cpu_count() or 1)
        self._blocks = eng.compile_blocks(ens, self._jobs)
        self.n_trees_ = len(ens.trees)
        self.n_leaves_ = sum(b.n_leaves for b in self._blocks)
        self.max_path_features_ = max((g.e for b in self._blocks for g in b.groups), default=0)
        if self.feature_names is not None and len(self.feature_names) != ens.n_features:
            raise ValueError(f"feature_names has {len(self.feature_names)} names but the model has {ens.n_features} "
                             "features")
        bg_columns = _frame_columns(self.background)
        self.feature_names_in_ = ens.input_names or bg_columns
        if ens.transform is None:
            default_names = ens.feature_names or (bg_columns if bg_columns and len(bg_columns) == ens.n_features
                                                  else None)
        else:
            default_names = ens.feature_names
        self.feature_names_ = [str(f) for f in self.feature_names] if self.feature_names is not None else default_names
        self._pd_spent = 0.0  # work done per row so far, against which the full tables are weighed
        self._shap_spent = 0.0
        if self.method == "fastpd":
            self._augment()
        else:
            self.background_size_ = 0
            self.background_ = None if self.background is None else self._validate(self.background, "background")
            for b in self._blocks:
                eng.path_dependent_tables(b)
        total = sum((eng.intercept(b, ens.n_features) for b in self._blocks), np.zeros(ens.n_outputs)) + ens.offset
        self.intercept_ = self._squeeze(total)
        self.expected_value_ = self.intercept_
        self._comp_index: dict[int, tuple[np.ndarray, list[list[np.ndarray]]]] = {}
        log.info("FastPD: %d trees, %d leaves, up to %d features per path, background %d rows",
                 self.n_trees_, self.n_leaves_, self.max_path_features_, self.background_size_)
        return self

    def _augment(self) -> None:
        if self.background is None:
            raise ValueError("method='fastpd' needs background data: pass background=(n_b, d) rows")
        bg = self._validate(self.background, "background")
        if bg.shape[0] == 0:
            raise ValueError("background is empty: pass at least one row")
        if self.max_background is not None and bg.shape[0] > self.max_background:
            rng = check_random_state(self.random_state)
            bg = bg[np.sort(rng.choice(bg.shape[0], self.max_background, replace=False))]
        self.background_size_ = bg.shape[0]
        self.background_ = bg
        rows = self._rows_per_chunk(lambda g: g.path_node.shape[1] + 2)
        bit_bytes = (bg.shape[0] + 63) // 64 * 8 * sum(len(b.feature) for b in self._blocks)
        walkable = all(b.feature_bit is not None for b in self._blocks)
        if self.augment != "full" and walkable and bit_bytes <= self.chunk_memory_mb * 2**20:
            self._map(lambda i: eng.keep_background_bits(self._blocks[i], bg, self._ens.strict))
            return
        hists = [[np.zeros((g.n_leaves, 1 << g.e)) for g in b.groups] for b in self._blocks]
        for start in range(0, bg.shape[0], rows):
            x = bg[start : start + rows]
            self._map(functools.partial(self._accumulate_chunk, x=x, hists=hists))
        for b, h in zip(self._blocks, hists, strict=True):
            eng.finish_background(b, h, bg.shape[0])

    def _block_codes(self, i: int, x: np.ndarray) -> list[np.ndarray]:
        return self._blocks[i].codes(x, self._ens.strict)

    def _accumulate_chunk(self, i: int, x: np.ndarray, hists: list[list[np.ndarray]]) -> None:
        eng.accumulate_background(self._blocks[i], self._block_codes(i, x), hists[i])

    def _tables(self, *, subsets: int = 0, need: bool = False) -> None:
        """Build the augmented tables P_l from the kept background rows if needed or cheaper.

        ``subsets``: the PD functions asked for, each read from one walk of the background
        bitsets when the tables are not built; ``need``: the query reads the tables.
        """
        if all(eng.has_tables(b) for b in self._blocks):
            return
        if not need and self.augment == "per-row":
            return
        if not need:
            lazy = _WALK_COST * subsets * sum(eng.walk_cost(b, shap=False) for b in self._blocks)
            full = sum(eng.table_cost(b, shap=False) for b in self._blocks)
            if self._pd_spent + lazy <= full:
                self._pd_spent += lazy
                return
        log.info("FastPD: building the augmented tables")
        rows = self._rows_per_chunk(lambda g: g.path_node.shape[1] + 2)
        self._map(lambda i: eng.build_tables(self._blocks[i], self._ens.strict, rows))

    def _shap_per_row(self, rows: int) -> bool:
        """Whether SHAP values for ``rows`` rows are computed per row rather than from full tables.

        Per row, the entries of the augmented tables come from a walk of the background bitsets
        while the tables are not built, and from the tables once they are.
        """
        if all(eng.shap_tables_cached(b) for b in self._blocks) or self.augment == "full":
            self._tables(need=True)
            return False
        if self.augment == "per-row":
            return True
        subset_sums = _ROW_COST * sum(eng.shap_row_cost(b) for b in self._blocks)
        if not all(eng.has_tables(b) for b in self._blocks):
            lazy = rows * (_WALK_COST * sum(eng.walk_cost(b, shap=True) for b in self._blocks) + subset_sums)
            if self._shap_spent + lazy <= sum(eng.table_cost(b, shap=False) for b in self._blocks):
                self._shap_spent += lazy
                return True
            self._tables(need=True)
            self._shap_spent = 0.0
        lazy = rows * subset_sums
        if self._shap_spent + lazy <= sum(eng.table_cost(b, shap=True) for b in self._blocks):
            self._shap_spent += lazy
            return True
        return False

    def save(self, path: str | os.PathLike[str]) -> None:
        """Write the explainer, fitted state included, to ``path`` (a pickle).

        The file holds the model, the background, the constructor's parameters and the fitted
        state, stamped with the fastpd version that wrote it (like ``joblib.dump`` of an
        estimator); load it with :meth:`load`, only from a source you trust (unpickling runs code).

        Parameters
        ----------
        path : str or path-like
            The file to write.
        """
        import pickle

        params = {name: self.__dict__[name] for name in _PARAMETERS}
        state = {k: v for k, v in self.__dict__.items() if k not in _PARAMETERS}
        payload = {"format": _SAVE_FORMAT, "fastpd_version": _version(), "params": params,
                   "state": pickle.dumps(state, protocol=pickle.HIGHEST_PROTOCOL) if state else None}
        with open(path, "wb") as fh:
            pickle.dump(payload, fh, protocol=pickle.HIGHEST_PROTOCOL)

    @classmethod
    def load(cls, path: str | os.PathLike[str]) -> FastPD:
        """Read an explainer written by :meth:`save`; a fitted one answers queries without refitting.

        A file written by another fastpd version keeps only its model, background and parameters:
        its fitted state (whose layout may differ between versions) is not read, a ``UserWarning``
        says so, and the explainer refits on its first query.

        Parameters
        ----------
        path : str or path-like
            The file written by :meth:`save`.

        Returns
        -------
        FastPD
            The explainer.

        Raises
        ------
        TypeError
            When the file holds another kind of object.
        ValueError
            When the file carries no fastpd version stamp, or its parameters do not fit this version.
        """
        import pickle

        with open(path, "rb") as fh:
            obj = pickle.load(fh)  # noqa: S301 - the documented contract: files the caller wrote
        where = repr(os.fspath(path))
        if isinstance(obj, cls):
            raise ValueError(f"FastPD.load: {where} holds a FastPD without a version stamp (written by an earlier "
                             "fastpd); its fitted state cannot be checked: build FastPD(model, background) again "
                             "and save it")
        if not (isinstance(obj, dict) and obj.get("format") == _SAVE_FORMAT):
            raise TypeError(f"FastPD.load: {where} holds a {type(obj).__name__}, not a FastPD written by save()")
        if "fastpd_version" not in obj or "params" not in obj or "state" not in obj:
            raise ValueError(f"FastPD.load: {where} carries no fastpd version stamp or is incomplete; build "
                             "FastPD(model, background) again and save it")
        written, current = obj["fastpd_version"], _version()
        try:
            explainer = cls(**obj["params"])
        except TypeError as err:
            raise ValueError(f"FastPD.load: {where} was written by fastpd {written}, whose parameters this fastpd "
                             f"{current} does not accept ({err})") from err
        if obj["state"] is None:
            return explainer
        if written != current:
            warnings.warn(f"FastPD.load: {where} was written by fastpd {written}, this is fastpd {current}: its "
                          "fitted state is not read; the explainer refits from the stored model and background "
                          "on its first query", UserWarning, stacklevel=2)
            return explainer
        explainer.__dict__.update(pickle.loads(obj["state"]))  # noqa: S301 - same trusted file
        return explainer

    def __getattr__(self, name: str) -> Any:
        """Raise NotFittedError for a fitted attribute read before :meth:`fit` (AttributeError otherwise)."""
        if name in _FITTED_ATTRIBUTES:
            from sklearn.exceptions import NotFittedError

            raise NotFittedError(f"FastPD is not fitted yet, so it has no {name}: call fit() or run a query "
                                 "(which fits on first use)")
        raise AttributeError(f"{type(self).__name__!r} object has no attribute {name!r}")

    def _fitted(self) -> None:
        if "_blocks" not in self.__dict__:
            self.fit()

    @property
    def expected_value(self) -> float | np.ndarray:
        """The mean margin over the background (``intercept_``), under shap's name; fits on first use."""
        self._fitted()
        return self.intercept_

    def __call__(self, X: Any, *, interactions: bool = False) -> Any:
        """SHAP values as a ``shap.Explanation``, so that every ``shap.plots`` function can draw them.

        Parameters
        ----------
        X : array-like of shape (n, d)
            Rows to explain.
        interactions : bool, default False
            True: the values are the SHAP interaction values, shape (n, d, d) or (n, d, d, K).

        Returns
        -------
        shap.Explanation
            ``values`` (n, d) or (n, d, K), ``base_values`` (n,) or (n, K) (the intercept),
            ``data`` (n, d) (the rows as the trees see them: after a Pipeline's transforms or a
            model's category encoding), ``feature_names`` and, for several outputs,
            ``output_names``.

        Raises
        ------
        ImportError
            When shap is not installed (``pip install "fastpd[shap]"``).
        """
        try:
            import shap
        except ImportError as err:
            raise ImportError('FastPD(...)(X) returns a shap.Explanation and needs shap: pip install "fastpd[shap]" '
                              "(shap_values() returns the same numbers as an array without it)") from err
        self._fitted()
        x = _Prepared(self._validate(X, "X"))
        values = self.shap_interaction_values(x) if interactions else self.shap_values(x)
        n = x.array.shape[0]
        base = np.broadcast_to(np.asarray(self.intercept_, dtype=np.float64), (n, *np.shape(self.intercept_))).copy()
        kw: dict[str, Any] = {}
        if self.n_outputs_ > 1:
            kw["output_names"] = list(self._ens.output_names)
        return shap.Explanation(values=values, base_values=base, data=x.array.copy(),
                                feature_names=list(self.feature_names_) if self.feature_names_ else None, **kw)

    # -------------------------------------------------------------------------------- queries
    def predict(self, X: Any) -> np.ndarray:
        """Model margin at the rows of X, computed from the parsed trees (a self-check).

        Parameters
        ----------
        X : array-like of shape (n, d)
            Rows to predict.

        Returns
        -------
        ndarray of shape (n,) or (n, K)
            The margin (log-odds for boosted classifiers).
        """
        self._fitted()
        out = self._run(X, lambda g: g.path_node.shape[1] + 2,
                        lambda b, c, n, x: eng.predict(b, c, n))
        return self._squeeze(out + self._ens.offset)

    def pd_function(self, X: Any, features: int | str | Sequence[int | str]) -> np.ndarray:
        """Partial dependence v_S(x_S) = mean over background rows z of f(x_S, z_{-S}).

        Parameters
        ----------
        X : array-like of shape (n, d)
            Rows; only the columns in ``features`` matter.
        features : int, str or sequence of int or str
            A feature index or name, or a sequence of them (the subset S).

        Returns
        -------
        ndarray of shape (n,) or (n, K)
            Values on the margin scale (including the model's base score).
        """
        self._fitted()
        subset = self._subset(features)
        self._tables(subsets=1)
        member = np.zeros((1, self.n_features_in_), dtype=bool)
        member[0, list(subset)] = True
        out = self._run(X, lambda g: 2 + g.path_node.shape[1],
                        lambda b, c, n, x: eng.pd_subsets(b, c, n, member))
        return self._squeeze(out[:, 0] + self._ens.offset)

    def pd_functions(self, X: Any, *, max_order: int = 2) -> dict[tuple[int, ...], np.ndarray]:
        """All PD functions v_S with 1 <= |S| <= max_order, sharing one pass over X.

        Parameters
        ----------
        X : array-like of shape (n, d)
            Rows.
        max_order : int, default 2
            The largest subset size.

        Returns
        -------
        dict of tuple of int to ndarray
            ``{S: (n,) or (n, K)}`` for every subset S of the d features of size 1 to ``max_order``.
        """
        self._fitted()
        max_order = self._check_order(max_order, allow_none=False)
        d = self.n_features_in_
        subsets = [s for r in range(1, min(max_order, d) + 1) for s in itertools.combinations(range(d), r)]
        self._tables(subsets=len(subsets))
        member = np.zeros((len(subsets), d), dtype=bool)
        for i, s in enumerate(subsets):
            member[i, list(s)] = True
        out = self._run(X, lambda g: len(subsets) + g.path_node.shape[1] + 2,
                        lambda b, c, n, x: eng.pd_subsets(b, c, n, member), per_row=len(subsets) * self.n_outputs_)
        out += self._ens.offset
        return {s: self._squeeze(out[:, i]) for i, s in enumerate(subsets)}

    def decompose(self, X: Any, *, max_order: int | None = None) -> Decomposition:
        """Functional decomposition m_S(x) = sum over V subset of S of (-1)^{|S|-|V|} v_V(x).

        Parameters
        ----------
        X : array-like of shape (n, d)
            Rows.
        max_order : int, optional
            Skip components with more than this many features (None: all). The components then no
            longer sum to the prediction; SHAP values stay exact.

        Returns
        -------
        Decomposition
            The intercept and every non-zero component.
        """
        self._fitted()
        orders = self._orders(max_order)
        self._tables(need=True)
        parts = self._run_dict(X, self._comp_width(orders), lambda b, i, c, n, x: self._comp_parts(b, i, c, n, orders))
        n = next((a.shape[0] for a in parts.values()), _n_rows(X))  # no parts: a model without splits
        return self._decomposition(parts, orders, n if n < 2**62 else None)

    def shap_values(self, X: Any) -> np.ndarray:
        """SHAP values phi_j(x) = sum over S containing j of m_S(x) / |S|.

        With ``method="fastpd"`` these are interventional SHAP values against the full background;
        with ``"path-dependent"`` they equal path-dependent TreeSHAP.

        Parameters
        ----------
        X : array-like of shape (n, d)
            Rows to explain.

        Returns
        -------
        ndarray of shape (n, d) or (n, d, K)
            Rows sum to the margin minus ``intercept_``.
        """
        self._fitted()
        d = self.n_features_in_
        k = self.n_outputs_
        per_row = self._shap_per_row(_n_rows(X))
        out = self._run(X, lambda g: g.path_node.shape[1] + 2 + 2 * g.e * k,
                        lambda b, c, n, x: eng.shap_values(b, c, n, d, per_row=per_row, x=x, strict=self._ens.strict), per_row=d * k)
        return self._squeeze(out)

    def shap_interaction_values(self, X: Any) -> np.ndarray:
        """SHAP interaction values.

        Defined from the decomposition as in Lundberg et al. (2020):
        Phi_jk = (1/2) * sum over S containing j and k of m_S(x) / (|S| - 1) for j != k (half the
        Shapley interaction index), and Phi_jj = phi_j - sum over k != j of Phi_jk. So each row
        sums to :meth:`shap_values`, pure main effects sit on the diagonal, and a pairwise
        component m_jk is split equally between Phi_jk and Phi_kj. Unlike shap's interventional
        mode (all zeros in shap) these are exact against the full background.

        Parameters
        ----------
        X : array-like of shape (n, d)
            Rows to explain.

        Returns
        -------
        ndarray of shape (n, d, d) or (n, d, d, K)
            Summing over the last feature axis gives :meth:`shap_values`.
        """
        self._fitted()
        d = self.n_features_in_
        k = self.n_outputs_
        self._tables(need=True)
        out = self._run(X, lambda g: g.path_node.shape[1] + 2 + 2 * g.e * g.e * k,
                        lambda b, c, n, x: eng.interaction_values(b, c, n, d), per_row=d * d * k)
        return self._squeeze(out)

    def explain(self, X: Any, *, max_order: int | None = None, interactions: bool = True) -> Explanation:
        """Prediction, SHAP values, interaction values and decomposition from one pass over X.

        The leaf codes of each chunk of rows are computed once and shared by all outputs.

        Parameters
        ----------
        X : array-like of shape (n, d)
            Rows to explain.
        max_order : int, optional
            Largest component order of the decomposition (None: all).
        interactions : bool, default True
            False skips the (n, d, d) array (the field is then an empty (n, 0, 0) array).

        Returns
        -------
        Explanation
            Prediction, intercept, SHAP values, interaction values and decomposition.
        """
        self._fitted()
        d = self.n_features_in_
        k = self.n_outputs_
        orders = self._orders(max_order)
        self._tables(need=True)
        comp_w = self._comp_width(orders)

        def width(g: eng.LeafGroup) -> int:
            w = comp_w(g) + 2 * g.e * k
            return w + (2 * g.e * g.e * k if interactions else 0)

        def parts(b: eng.Block, i: int, c: list[np.ndarray], n: int, x: np.ndarray) -> dict[Any, np.ndarray]:
            res = self._comp_parts(b, i, c, n, orders)
            res["pred"] = eng.predict(b, c, n)
            res["shap"] = eng.shap_values(b, c, n, d)
            if interactions:
                res["inter"] = eng.interaction_values(b, c, n, d)
            return res

        out = self._run_dict(X, width, parts, per_row=(d * d + d) * k if interactions else d * k)
        n = out["pred"].shape[0]
        inter = out["inter"] if interactions else np.zeros((n, 0, 0, k))
        return Explanation(prediction=self._squeeze(out["pred"] + self._ens.offset), intercept=self.intercept_,
                           shap_values=self._squeeze(out["shap"]), shap_interaction_values=self._squeeze(inter),
                           decomposition=self._decomposition(out, orders, n))

    # ------------------------------------------------------------------------------- helpers
    def _squeeze(self, a: np.ndarray) -> Any:
        if self.n_outputs_ != 1:
            return a
        a = a[..., 0]
        return float(a) if a.ndim == 0 else a

    def _subset(self, features: int | str | Sequence[int | str]) -> tuple[int, ...]:
        items = [features] if isinstance(features, int | str | np.integer) else list(features)
        d = self.n_features_in_
        idx = []
        for f in items:
            if isinstance(f, str):
                if self.feature_names_ is None or f not in self.feature_names_:
                    known = ", ".join(self.feature_names_ or []) or "none (the model has no feature names)"
                    raise ValueError(f"unknown feature name {f!r}; known names: {known}")
                idx.append(self.feature_names_.index(f))
            elif isinstance(f, int | np.integer) and not isinstance(f, bool):
                if not 0 <= int(f) < d:
                    raise ValueError(f"feature index {int(f)} is out of range: the model has {d} features "
                                     f"(valid indices 0..{d - 1})")
                idx.append(int(f))
            else:
                raise ValueError(f"features must be ints or names; got {f!r}")
        if len(set(idx)) != len(idx):
            raise ValueError(f"features {items!r} name a feature twice")
        return tuple(sorted(idx))

    def _check_order(self, max_order: int | None, *, allow_none: bool = True) -> int:
        check_param("max_order", max_order, [Interval(int, 1, None)] + ([None] if allow_none else []), owner="FastPD")
        return self.n_features_in_ if max_order is None else int(max_order)

    def _orders(self, max_order: int | None) -> list[int]:
        top = self._check_order(max_order)
        return list(range(1, min(top, self.max_path_features_) + 1))

    def _comp_width(self, orders: list[int]) -> Callable[[eng.LeafGroup], int]:
        k = self.n_outputs_

        def width(g: eng.LeafGroup) -> int:
            w = g.path_node.shape[1] + 2
            return w + sum(3 * math.comb(g.e, r) * (k + r) for r in orders if r <= g.e)
        return width

    def _component_index(self, r: int) -> tuple[np.ndarray, list[list[np.ndarray]]]:
        """Unique global r-subsets over all leaves, and per block/group the column of each leaf subset."""
        if r not in self._comp_index:
            keys = [[eng.component_keys(g, r) if g.e >= r else np.zeros((0, r), np.int64) for g in b.groups]
                    for b in self._blocks]
            flat = np.concatenate([k for kb in keys for k in kb], axis=0)
            uniq, inv = np.unique(flat, axis=0, return_inverse=True)
            inv = inv.reshape(-1)
            ids: list[list[np.ndarray]] = []
            pos = 0
            for kb in keys:
                ids.append([])
                for k in kb:
                    ids[-1].append(inv[pos : pos + len(k)])
                    pos += len(k)
            self._comp_index[r] = (uniq, ids)
        return self._comp_index[r]

    def _comp_parts(self, b: eng.Block, i: int, c: list[np.ndarray], n: int, orders: list[int]) -> dict:
        res = {}
        for r in orders:
            uniq, ids = self._component_index(r)
            res[("comp", r)] = eng.components(b, c, n, r, ids[i], len(uniq))
        return res

    def _decomposition(self, parts: dict, orders: list[int], n: int | None) -> Decomposition:
        comps: dict[tuple[int, ...], np.ndarray] = {}
        for r in orders:
            uniq, _ = self._component_index(r)
            arr = parts[("comp", r)]
            for j, key in enumerate(uniq):
                comps[tuple(int(v) for v in key)] = self._squeeze(arr[:, j])
        return Decomposition(intercept=self.intercept_, components=comps, feature_names=self.feature_names_,
                             max_order=max(orders, default=0), n_rows=n)

    def _check_names(self, X: Any, what: str) -> None:
        """Compare a DataFrame's columns with ``feature_names_in_`` as scikit-learn does."""
        cols = _frame_columns(X)
        ref = self.feature_names_in_
        if cols is None:
            if ref is not None and hasattr(X, "shape"):
                warnings.warn(f"{what} does not have valid feature names, but FastPD was fitted with feature names",
                              UserWarning, stacklevel=4)
            return
        if ref is None:
            warnings.warn(f"{what} has feature names, but FastPD was fitted without feature names", UserWarning,
                          stacklevel=4)
            return
        if cols == ref:
            return
        unseen = [c for c in cols if c not in ref]
        missing = [c for c in ref if c not in cols]
        msg = f"The feature names of {what} should match those that were passed during fit."
        if unseen:
            msg += f" Feature names unseen at fit time: {unseen}."
        if missing:
            msg += f" Feature names seen at fit time, yet now missing: {missing}."
        if not unseen and not missing:
            pos = next(i for i, (a, b) in enumerate(zip(cols, ref, strict=False)) if a != b) if len(cols) == len(ref) \
                else min(len(cols), len(ref))
            msg += (f" Feature names must be in the same order as they were in fit: column {pos} is "
                    f"{cols[pos] if pos < len(cols) else None!r}, expected {ref[pos] if pos < len(ref) else None!r}.")
        raise ValueError(msg)

    def _validate(self, X: Any, what: str) -> np.ndarray:
        ens = self._ens
        self._check_names(X, what)
        if ens.transform is not None:
            try:
                X = ens.transform(X)
            except Exception as err:  # the user's transformers: re-raise as a validation error
                raise ValueError(f"{what} could not be transformed by the {ens.kind} input steps: {err}") from err
        elif _frame_columns(X) is not None:
            X = _frame_to_float(X, what, ens.pandas_categories)
        X = densify(X, ens.sparse_absent_missing)
        try:
            x = np.asarray(X, dtype=np.float64)
        except (TypeError, ValueError) as err:
            raise ValueError(f"{what} must be a numeric (n, {ens.n_features}) array: {err}") from err
        if x.ndim != 2:
            raise ValueError(f"{what} must be 2-D with shape (n_rows, {ens.n_features}); got shape {x.shape}")
        if x.shape[1] != ens.n_features:
            raise ValueError(f"{what} has {x.shape[1]} features but the model has {ens.n_features}")
        if ens.float32_inputs:
            x = x.astype(np.float32).astype(np.float64)  # the library compares float32 features
        if ens.missing_value is not None:
            x = np.where(x == ens.missing_value, np.nan, x)  # the model's missing marker (XGBoost missing=...)
        if np.isinf(x).any():
            i, j = np.argwhere(np.isinf(x))[0]
            raise ValueError(f"{what} contains an infinite value at row {i}, feature {j}; finite values "
                             "(and NaN, where the model has a default direction) are accepted")
        if not ens.nan_routable and np.isnan(x).any():
            i, j = np.argwhere(np.isnan(x))[0]
            raise ValueError(f"{what} contains NaN at row {i}, feature {j}, but {ens.kind} cannot route missing "
                             "values (it has no default direction); impute them first")
        return x

    def _rows_per_chunk(self, width: Callable[[eng.LeafGroup], int], per_row: int = 0) -> int:
        """Rows per chunk under ``chunk_memory_mb``.

        Per row and block: the split directions and every group's codes persist, while a query's
        per-leaf scratch (``width`` values per leaf) exists for one group at a time; ``per_row``
        values of output per row are held for every block until they are summed.
        """
        block = max(len(b.feature) * 3 + sum(g.n_leaves for g in b.groups)
                    + max((width(g) * g.n_leaves for g in b.groups), default=0) for b in self._blocks)
        need = block * max(1, min(self._jobs, len(self._blocks))) + per_row * len(self._blocks)
        return max(1, int(self.chunk_memory_mb * 2**20 / 8 // max(need, 1)))

    def _chunks(self, X: Any, rows: int) -> Iterator[np.ndarray]:
        """Validated row chunks of X; a dask array is computed one block of rows at a time."""
        if isinstance(X, _Prepared):
            for s in range(0, X.array.shape[0], rows):
                yield X.array[s : s + rows]
            if X.array.shape[0] == 0:
                yield X.array
            return
        if hasattr(X, "to_delayed") and hasattr(X, "blocks") and hasattr(X, "chunks"):
            for i in range(X.numblocks[0]):
                x = self._validate(X.blocks[i].compute(), "X")
                for s in range(0, x.shape[0], rows):
                    yield x[s : s + rows]
            return
        x = self._validate(X, "X")
        for s in range(0, x.shape[0], rows):
            yield x[s : s + rows]
        if x.shape[0] == 0:
            yield x

    def _map(self, fn: Callable[[int], Any]) -> list[Any]:
        idx = range(len(self._blocks))
        if len(self._blocks) == 1:
            return [fn(0)]
        with ThreadPoolExecutor(max_workers=min(self._jobs, len(self._blocks))) as pool:
            return list(pool.map(fn, idx))

    def _run_dict(self, X: Any, width: Callable[[eng.LeafGroup], int],
                  fn: Callable[[eng.Block, int, list[np.ndarray], int, np.ndarray], dict], per_row: int = 0) -> dict:
        from icml25_shared.cli import progress

        rows = self._rows_per_chunk(width, per_row)
        pieces: dict[Any, list[np.ndarray]] = {}
        for x in progress(self._chunks(X, rows), enabled=self.progress, desc="fastpd"):
            n = x.shape[0]
            res = self._map(functools.partial(self._call_block, fn=fn, x=x, n=n))
            for key in res[0]:
                pieces.setdefault(key, []).append(sum(r[key] for r in res))
        return {k: np.concatenate(v, axis=0) for k, v in pieces.items()}

    def _call_block(self, i: int, fn: Callable[[eng.Block, int, list[np.ndarray], int, np.ndarray], dict],
                    x: np.ndarray, n: int) -> dict:
        return fn(self._blocks[i], i, self._block_codes(i, x), n, x)

    def _run(self, X: Any, width: Callable[[eng.LeafGroup], int],
             fn: Callable[[eng.Block, list[np.ndarray], int, np.ndarray], np.ndarray], per_row: int = 0) -> np.ndarray:
        return self._run_dict(X, width, lambda b, i, c, n, x: {"out": fn(b, c, n, x)}, per_row)["out"]


def _n_rows(X: Any) -> int:
    """Rows of a query input without validating it (unknown sizes count as many rows)."""
    if isinstance(X, _Prepared):
        return int(X.array.shape[0])
    shape = getattr(X, "shape", None)
    if shape is not None and len(shape) >= 1:
        n = shape[0]
        return int(n) if isinstance(n, int | np.integer) else 2**62
    try:
        return len(X)
    except TypeError:
        return 2**62


class _Prepared:
    """Rows already validated (and transformed) by :meth:`FastPD._validate`."""

    def __init__(self, array: np.ndarray) -> None:
        self.array = array


def _frame_columns(X: Any) -> list[str] | None:
    """Column names of a DataFrame-like input (pandas, or anything with ``columns`` and ``dtypes``)."""
    cols = getattr(X, "columns", None)
    if cols is None or not hasattr(X, "dtypes"):
        return None
    return [str(c) for c in cols]


def _frame_to_float(X: Any, what: str, categories: list[list[Any]] | None = None) -> np.ndarray:
    """A DataFrame as float64; pandas nullable dtypes' ``pd.NA`` becomes NaN.

    With ``categories`` (LightGBM's ``pandas_categorical``) the category-dtype columns, in order,
    become their codes in those lists (unknown or missing: NaN), as LightGBM's own predict does.
    """
    import pandas as pd

    if not isinstance(X, pd.DataFrame):
        return np.asarray(X)
    cat_cols = [c for c, t in X.dtypes.items() if isinstance(t, pd.CategoricalDtype)]
    if categories is not None and cat_cols:
        if len(cat_cols) != len(categories):
            raise ValueError(f"{what} has {len(cat_cols)} category columns but the model was trained with "
                             f"{len(categories)}")
        X = X.copy(deep=False)
        for col, cats in zip(cat_cols, categories, strict=True):
            codes = pd.Categorical(X[col], categories=cats).codes.astype(np.float64)
            X[col] = np.where(codes < 0, np.nan, codes)
    bad = [(str(c), str(t)) for c, t in X.dtypes.items()
           if isinstance(t, pd.CategoricalDtype) or not (pd.api.types.is_numeric_dtype(t)
                                                         or pd.api.types.is_bool_dtype(t))]
    if bad:
        listed = ", ".join(f"{c!r} ({t})" for c, t in bad)
        raise ValueError(f"{what} has non-numeric columns: {listed}; pass numbers (categories as the integer codes "
                         "the model was trained on; category dtypes are not decoded) or explain a Pipeline that "
                         "encodes them")
    return X.to_numpy(dtype=np.float64, na_value=np.nan)

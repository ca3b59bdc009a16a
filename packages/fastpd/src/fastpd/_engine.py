"""FastPD augmentation and evaluation, vectorised over leaves and rows.

Notation. For a leaf l let E_l be the distinct features split on along its root path, numbered by
local bits in ascending global order. A row x satisfies the path constraints on a subset of E_l;
its *code* c_l(x) is that subset as a bitmask (AND of all splits on the same feature). For the
hybrid point (x_S, z_{-S}) the tree reaches l iff x passes the constraints on S and z those on
E_l minus S, so the PD function of one leaf is

    v_S(x) = value_l * 1{U subset of c_l(x)} * P_l[U],   U = S intersect E_l,

with P_l[U] = fraction of background rows z whose code contains E_l minus U (FastPD), or the
product of cover ratios of the path splits on features outside U (path-dependent TreeSHAP /
sklearn's recursion). P_l is the paper's augmented leaf table; here it is built from a histogram
of background codes and one superset-sum transform, so augmentation is O(n_b * leaves * depth).

Every query is a linear function of the leaf's game V -> value * P[V] * 1{V subset of c}, so for
SHAP values, interaction values and decomposition components a per-leaf table indexed by the code
is precomputed once (a subset-sum transform), and a query is one gather per (row, leaf).
"""

from __future__ import annotations

import functools
import itertools
import math
from dataclasses import dataclass, field

import numpy as np

from fastpd._models import TreeEnsemble, lgbm_zero_threshold

MAX_PATH_FEATURES = 24  # tables grow as 2**e per leaf
MAX_TABLE_ENTRIES = 2**28  # augmented tables of one block (2 GiB of float64)
_GROUP_ENTRIES = 2**21  # leaves per group are capped so a group's SHAP table stays near this size
_CACHE_LIMIT = 2**23  # larger per-group query tables are rebuilt per chunk instead of cached


def code_dtype(e: int) -> type:
    """Smallest unsigned type holding an e-bit code (less memory traffic on the hot path)."""
    return np.uint8 if e <= 8 else np.uint16 if e <= 16 else np.uint32


def _popcount(a: np.ndarray) -> np.ndarray:
    return np.bitwise_count(a.astype(np.uint64)).astype(np.int64) if hasattr(np, "bitwise_count") else \
        np.array([bin(int(v)).count("1") for v in a.ravel()], dtype=np.int64).reshape(a.shape)


def subset_sum(a: np.ndarray, e: int) -> np.ndarray:
    """Zeta transform over the last axis (length 2**e): out[c] = sum of a[u] for u subset of c."""
    out = np.array(a, dtype=np.float64, copy=True, order="C")
    lead = out.shape[:-1]
    for b in range(e):
        v = out.reshape(*lead, -1, 2, 1 << b)
        v[..., 1, :] += v[..., 0, :]
    return out


def subset_sum_axis1(a: np.ndarray, e: int) -> np.ndarray:
    """Zeta transform in place over axis 1 (length 2**e) of a C-contiguous (L, 2**e, ...) array."""
    if not a.flags.c_contiguous:
        raise ValueError("subset_sum_axis1 needs a C-contiguous array (it works on reshaped views)")
    lead, tail = a.shape[0], a.shape[2:]
    for b in range(e):
        v = a.reshape(lead, -1, 2, 1 << b, *tail)
        v[:, :, 1] += v[:, :, 0]
    return a


def superset_sum(a: np.ndarray, e: int) -> np.ndarray:
    """out[c] = sum of a[u] for u superset of c, over the last axis (length 2**e)."""
    out = np.array(a, dtype=np.float64, copy=True, order="C")
    lead = out.shape[:-1]
    for b in range(e):
        v = out.reshape(*lead, -1, 2, 1 << b)
        v[..., 0, :] += v[..., 1, :]
    return out


def shapley_weights(e: int) -> np.ndarray:
    """W (e, 2**e): Shapley value of player k = sum over U of W[k, U] * v(U) for an e-player game."""
    u = np.arange(1 << e)
    size = _popcount(u)
    f = [math.factorial(i) for i in range(e + 1)]
    w_in = np.array([f[s - 1] * f[e - s] / f[e] if s >= 1 else 0.0 for s in range(e + 1)])
    w_out = np.array([-f[s] * f[e - s - 1] / f[e] if s <= e - 1 else 0.0 for s in range(e + 1)])
    has = (u[None, :] >> np.arange(e)[:, None]) & 1
    return np.where(has == 1, w_in[size][None, :], w_out[size][None, :])


def interaction_weights(e: int) -> np.ndarray:
    """W2 (e, e, 2**e) for SHAP interaction values (Lundberg et al. 2020 convention).

    Off-diagonal: half the Shapley interaction index, I_jk / 2, with
    I_jk = sum over T not containing j, k of |T|!(e-|T|-2)!/(e-1)! * [v(Tjk) - v(Tj) - v(Tk) + v(T)].
    Diagonal: phi_j minus the row's off-diagonal sum, so each row sums to the SHAP value.
    """
    u = np.arange(1 << e)
    size = _popcount(u)
    w2 = np.zeros((e, e, 1 << e))
    if e >= 2:
        f = [math.factorial(i) for i in range(e + 1)]

        def w(t: np.ndarray) -> np.ndarray:
            ok = (t >= 0) & (t <= e - 2)
            tc = np.clip(t, 0, e - 2)
            return np.where(ok, np.array([f[i] * f[e - i - 2] / f[e - 1] for i in range(e - 1)])[tc], 0.0)

        has = (u[None, :] >> np.arange(e)[:, None]) & 1
        for j in range(e):
            for k in range(e):
                if j == k:
                    continue
                both = (has[j] & has[k]) == 1
                none = (has[j] | has[k]) == 0
                one = ~both & ~none
                coef = np.where(both, w(size - 2), 0.0) - np.where(one, w(size - 1), 0.0) + np.where(none, w(size), 0.0)
                w2[j, k] = coef / 2.0
    phi = shapley_weights(e)
    for j in range(e):
        w2[j, j] = phi[j] - (w2[j].sum(axis=0) - w2[j, j])
    return w2


@dataclass
class LeafGroup:
    """All leaves (of one block of trees) whose paths use exactly ``e`` distinct features."""

    e: int
    feats: np.ndarray  # (L, e) global feature of each local bit, ascending
    path_node: np.ndarray  # (L, Dp) block-local internal node ids; padding points at the sentinel
    path_dir: np.ndarray  # (L, Dp) True where the path goes left
    path_mask: np.ndarray  # (L, Dp) 1 << local bit of that split's feature
    values: np.ndarray  # (L, K)
    cover_ratio: np.ndarray  # (L, e) product of cover(child)/cover(node) over splits on each bit
    table: np.ndarray | None = None  # (L, 2**e) augmented P_l[U]
    cache: dict = field(default_factory=dict)

    @property
    def n_leaves(self) -> int:
        return self.feats.shape[0]

    def codes(self, go_left: np.ndarray) -> np.ndarray:
        """(n, L) int64 bitmask of the path constraints each row satisfies."""
        n = go_left.shape[0]
        if self.e == 0:
            return np.zeros((n, self.n_leaves), dtype=np.uint8)
        ok = go_left[:, self.path_node] == self.path_dir[None]
        fail = np.bitwise_or.reduce(np.where(ok, self.path_mask.dtype.type(0), self.path_mask[None]), axis=2)
        return np.bitwise_xor(fail, self.path_mask.dtype.type((1 << self.e) - 1))


@dataclass
class Block:
    """A set of whole trees, evaluated together (one unit of ``n_jobs`` parallelism)."""

    feature: np.ndarray  # (N,) internal-node features
    threshold: np.ndarray
    default_left: np.ndarray
    nan_to_zero: np.ndarray | None
    zero_missing: np.ndarray | None
    groups: list[LeafGroup]
    n_leaves: int
    max_depth: int
    n_outputs: int
    cat_node: np.ndarray | None = None  # (C,) internal nodes with category-set splits
    cat_table: np.ndarray | None = None  # (C, M) direction of each integer category (padded: out of range)
    cat_neg_left: np.ndarray | None = None  # (C,) direction of a negative value
    cat_trunc_first: bool = False

    def go_left(self, x: np.ndarray, strict: bool) -> np.ndarray:
        """(n, N + 1) bool: whether each row goes left at each internal node; last column is True."""
        xv = x[:, self.feature]
        if self.nan_to_zero is not None and self.nan_to_zero.any():
            xv = np.where(np.isnan(xv) & self.nan_to_zero[None], 0.0, xv)
        with np.errstate(invalid="ignore"):
            left = xv < self.threshold[None] if strict else xv <= self.threshold[None]
        miss = np.isnan(xv)
        if self.zero_missing is not None and self.zero_missing.any():
            miss |= self.zero_missing[None] & (np.abs(xv) <= lgbm_zero_threshold())
        left = np.where(miss, self.default_left[None], left)
        if self.cat_node is not None:
            left[:, self.cat_node] = self._categorical(x[:, self.feature[self.cat_node]])
        return np.concatenate([left, np.ones((x.shape[0], 1), dtype=bool)], axis=1)

    def _categorical(self, v: np.ndarray) -> np.ndarray:
        """(n, C) direction at the category-set splits for raw values v (n, C)."""
        nan = np.isnan(v)
        t = np.trunc(np.where(nan, 0.0, v))
        neg = t < 0 if self.cat_trunc_first else np.where(nan, 0.0, v) < 0
        idx = np.clip(t, 0, self.cat_table.shape[1] - 1).astype(np.int64)  # last column: out of range
        out = self.cat_table[np.arange(v.shape[1])[None], idx]
        out = np.where(neg, self.cat_neg_left[None], out)
        return np.where(nan, self.default_left[self.cat_node][None], out)

    def codes(self, x: np.ndarray, strict: bool) -> list[np.ndarray]:
        """Per group, the (n, L) path-constraint codes of the rows of x."""
        gl = self.go_left(x, strict)
        return [g.codes(gl) for g in self.groups]


def compile_blocks(ens: TreeEnsemble, n_blocks: int) -> list[Block]:
    """Enumerate leaf paths of every tree and split the trees into ``n_blocks`` contiguous blocks."""
    n_blocks = max(1, min(n_blocks, len(ens.trees)))
    bounds = np.linspace(0, len(ens.trees), n_blocks + 1).round().astype(int)
    return [_compile_block(ens, ens.trees[a:b]) for a, b in zip(bounds[:-1], bounds[1:], strict=True)]


def _compile_block(ens: TreeEnsemble, trees: list) -> Block:
    feats_all, thr_all, dl_all, n2z_all, zm_all = [], [], [], [], []
    cat_recs: list[tuple[int, np.ndarray, bool, bool]] = []
    leaves: dict[int, list] = {}
    base = 0
    max_depth = 0
    for t in trees:
        internal = np.flatnonzero(t.left != -1)
        local = -np.ones(len(t.left), dtype=np.int64)
        local[internal] = base + np.arange(len(internal))
        base += len(internal)
        feats_all.append(t.feature[internal])
        thr_all.append(t.threshold[internal])
        dl_all.append(t.default_left[internal])
        n2z_all.append(t.nan_to_zero[internal] if t.nan_to_zero is not None else np.zeros(len(internal), bool))
        zm_all.append(t.zero_missing[internal] if t.zero_missing is not None else np.zeros(len(internal), bool))
        for node, (table, neg_left, oob_left) in t.categorical.items():
            cat_recs.append((int(local[node]), table, neg_left, oob_left))
        # iterative DFS carrying (node, path of (internal id, went_left, feature, cover ratio))
        stack: list[tuple[int, list]] = [(0, [])]
        while stack:
            node, path = stack.pop()
            if t.left[node] == -1:
                _add_leaf(leaves, path, t.value[node])
                max_depth = max(max_depth, len(path))
                continue
            c = t.cover[node]
            for child, went_left in ((t.left[node], True), (t.right[node], False)):
                ratio = t.cover[child] / c if c > 0 else 0.0
                stack.append((child, path + [(local[node], went_left, int(t.feature[node]), ratio)]))
    n2z = np.concatenate(n2z_all) if n2z_all else np.zeros(0, bool)
    zm = np.concatenate(zm_all) if zm_all else np.zeros(0, bool)
    groups = []
    for e, recs in sorted(leaves.items()):
        step = max(1, _GROUP_ENTRIES // ((1 << e) * max(e, 1)))
        groups += [_make_group(e, recs[i : i + step], sentinel=base) for i in range(0, len(recs), step)]
    entries = sum(g.n_leaves << g.e for g in groups)
    if entries > MAX_TABLE_ENTRIES:
        raise ValueError(f"the augmented trees would need {entries:,} table entries (sum over leaves of 2**e, e = "
                         f"distinct features on the leaf's path), above the limit of {MAX_TABLE_ENTRIES:,}; "
                         "FastPD suits moderately deep trees: limit max_depth (or num_leaves)")
    cat = {}
    if cat_recs:
        m = max(len(r[1]) for r in cat_recs)
        table = np.zeros((len(cat_recs), m + 1), dtype=bool)
        for i, (_, tab, _, oob_left) in enumerate(cat_recs):
            table[i, :] = oob_left
            table[i, : len(tab)] = tab
        cat = {"cat_node": np.array([r[0] for r in cat_recs], dtype=np.int64), "cat_table": table,
               "cat_neg_left": np.array([r[2] for r in cat_recs], dtype=bool), "cat_trunc_first": ens.cat_trunc_first}
    return Block(feature=np.concatenate(feats_all), threshold=np.concatenate(thr_all),
                 default_left=np.concatenate(dl_all), nan_to_zero=n2z if n2z.any() else None,
                 zero_missing=zm if zm.any() else None, groups=groups,
                 n_leaves=sum(g.n_leaves for g in groups), max_depth=max_depth, n_outputs=ens.n_outputs, **cat)


def _add_leaf(leaves: dict, path: list, value: np.ndarray) -> None:
    if not np.any(value):
        return  # a zero leaf contributes nothing to any query
    fs = sorted({p[2] for p in path})
    if len(fs) > MAX_PATH_FEATURES:
        raise ValueError(f"a leaf path splits on {len(fs)} distinct features; FastPD's tables grow as 2**e per "
                         f"leaf and at most {MAX_PATH_FEATURES} are supported (limit max_depth)")
    bit = {f: i for i, f in enumerate(fs)}
    ratio = np.ones(len(fs))
    for _, _, f, r in path:
        ratio[bit[f]] *= r
    leaves.setdefault(len(fs), []).append((path, fs, bit, ratio, value))


def _make_group(e: int, recs: list, sentinel: int) -> LeafGroup:
    n = len(recs)
    dp = max(1, max(len(r[0]) for r in recs))
    node = np.full((n, dp), sentinel, dtype=np.int64)
    pdir = np.ones((n, dp), dtype=bool)
    pmask = np.zeros((n, dp), dtype=code_dtype(e))
    feats = np.zeros((n, e), dtype=np.int64)
    ratio = np.ones((n, e))
    values = np.stack([r[4] for r in recs])
    for i, (path, fs, bit, rat, _) in enumerate(recs):
        feats[i] = fs
        ratio[i] = rat
        for j, (nid, left, f, _) in enumerate(path):
            node[i, j] = nid
            pdir[i, j] = left
            pmask[i, j] = 1 << bit[f]
    return LeafGroup(e=e, feats=feats, path_node=node, path_dir=pdir, path_mask=pmask, values=values,
                     cover_ratio=ratio)


# ----------------------------------------------------------------------------------- augmentation
def path_dependent_tables(block: Block) -> None:
    """P_l[U] = product of cover ratios of the splits on features outside U."""
    for g in block.groups:
        u = np.arange(1 << g.e)
        p = np.ones((g.n_leaves, 1 << g.e))
        for b in range(g.e):
            p[:, ((u >> b) & 1) == 0] *= g.cover_ratio[:, b : b + 1]
        g.table = p
        g.cache.clear()


def accumulate_background(block: Block, codes: list[np.ndarray], hist: list[np.ndarray]) -> None:
    """Add one chunk of background rows to the per-leaf code histograms (one array per group)."""
    for g, c, h in zip(block.groups, codes, hist, strict=True):
        size = 1 << g.e
        flat = c.astype(np.int64) + (np.arange(g.n_leaves) * size)[None]
        h += np.bincount(flat.ravel(), minlength=g.n_leaves * size).reshape(g.n_leaves, size)


def finish_background(block: Block, hist: list[np.ndarray], n_background: int) -> None:
    """P_l[U] = #{rows whose code contains E_l minus U} / n_b (a superset sum of the histogram)."""
    for g, h in zip(block.groups, hist, strict=True):
        g.table = superset_sum(h, g.e)[:, ::-1] / n_background
        g.cache.clear()


# ------------------------------------------------------------------------------------- evaluation
def _gather(table: np.ndarray, codes: np.ndarray) -> np.ndarray:
    """Gather rows: table (L, 2**e, *tail), codes (n, L) -> (n, L, *tail)."""
    n_leaves, size = table.shape[:2]
    flat = table.reshape(n_leaves * size, *table.shape[2:])
    return flat[codes.astype(np.int64) + (np.arange(n_leaves) * size)[None]]


def predict(block: Block, codes: list[np.ndarray], n: int) -> np.ndarray:
    """(n, K) sum of reached leaf values (no offset)."""
    out = np.zeros((n, block.n_outputs))
    for g, c in zip(block.groups, codes, strict=True):
        hit = (c == (1 << g.e) - 1).astype(np.float64)
        out += hit @ g.values
    return out


def intercept(block: Block) -> np.ndarray:
    """(K,) sum over leaves of value * P_l[empty set]: the PD of the empty set."""
    return sum((g.table[:, 0] @ g.values for g in block.groups), np.zeros(block.n_outputs))


def pd_subsets(block: Block, codes: list[np.ndarray], n: int, member: np.ndarray) -> np.ndarray:
    """PD functions v_S minus the intercept's offset, for subsets given as ``member`` (n_S, d) bool.

    Returns (n, n_S, K).
    """
    k = block.n_outputs
    out = np.zeros((n, member.shape[0], k))
    for g, c in zip(block.groups, codes, strict=True):
        if g.e == 0:
            out += (g.table[:, 0] @ g.values)[None, None, :]
            continue
        s = (member[:, g.feats].astype(np.int64) << np.arange(g.e)).sum(axis=2)  # (n_S, L)
        p = np.take_along_axis(g.table, s.T, axis=1).T  # (n_S, L)
        s = s.astype(c.dtype)
        hit = (c[:, None, :] & s[None]) == s[None]  # (n, n_S, L)
        out += (hit * p[None]).reshape(n * len(s), g.n_leaves).dot(g.values).reshape(n, len(s), k)
    return out


def _scatter(contrib: np.ndarray, keys: np.ndarray, n_keys: int) -> np.ndarray:
    """Sum columns of contrib (n, m, K) with equal key into (n, n_keys, K)."""
    n, _, k = contrib.shape
    out = np.zeros((n, n_keys, k))
    if keys.size == 0:
        return out
    order = np.argsort(keys, kind="stable")
    sk = keys[order]
    starts = np.flatnonzero(np.r_[True, sk[1:] != sk[:-1]])
    out[:, sk[starts], :] = np.add.reduceat(contrib[:, order, :], starts, axis=1)
    return out


def _cached(g: LeafGroup, key: object, build) -> np.ndarray:
    if key in g.cache:
        return g.cache[key]
    table = build()
    if table.size <= _CACHE_LIMIT:
        g.cache[key] = table
    return table


def _shap_table(g: LeafGroup) -> np.ndarray:
    """(L, 2**e, e): SHAP values of the leaf's game (without its value) for every code."""
    def build() -> np.ndarray:
        h = np.empty((g.n_leaves, 1 << g.e, g.e))  # C order: transformed in place in this layout
        np.multiply(g.table[:, :, None], shapley_weights(g.e).T[None], out=h)
        return subset_sum_axis1(h, g.e)
    return _cached(g, "shap", build)


def _interaction_table(g: LeafGroup) -> np.ndarray:
    """(L, 2**e, e, e): SHAP interaction values of the leaf's game for every code."""
    def build() -> np.ndarray:
        h = np.empty((g.n_leaves, 1 << g.e, g.e, g.e))  # C order: transformed in place in this layout
        np.multiply(g.table[:, :, None, None], np.moveaxis(interaction_weights(g.e), 2, 0)[None], out=h)
        return subset_sum_axis1(h, g.e)
    return _cached(g, "inter", build)


_DENSE_SCATTER_LIMIT = 2**22  # entries of a cached (slots, keys * K) scatter matrix


def _accumulate(g: LeafGroup, kind: object, a: np.ndarray, keys: np.ndarray, n_keys: int) -> np.ndarray:
    """Sum over leaves of a (n, L, w) times each leaf's values into (n, n_keys, K) by slot key.

    ``keys`` (L * w,) gives the output column of each (leaf, slot). With few keys this is one BLAS
    matmul against a cached (L * w, n_keys * K) matrix holding the leaf values; otherwise a
    sort-and-reduceat scatter.
    """
    n = a.shape[0]
    k = g.values.shape[1]
    m = keys.size
    flat = a.reshape(n, m)
    if m * n_keys * k <= _DENSE_SCATTER_LIMIT:
        key = ("scatter", kind)
        if key not in g.cache:
            w = np.zeros((m, n_keys, k))
            w[np.arange(m), keys, :] = np.repeat(g.values, m // g.n_leaves, axis=0)
            g.cache[key] = w.reshape(m, n_keys * k)
        return (flat @ g.cache[key]).reshape(n, n_keys, k)
    vals = np.repeat(g.values, m // g.n_leaves, axis=0)  # (m, K)
    return _scatter(flat[:, :, None] * vals[None], keys, n_keys)


def shap_values(block: Block, codes: list[np.ndarray], n: int, d: int) -> np.ndarray:
    """(n, d, K) interventional (or path-dependent) SHAP values of the block's trees."""
    out = np.zeros((n, d, block.n_outputs))
    for g, c in zip(block.groups, codes, strict=True):
        if g.e == 0:
            continue
        a = _gather(_shap_table(g), c)  # (n, L, e)
        out += _accumulate(g, "shap", a, g.feats.ravel(), d)
    return out


def interaction_values(block: Block, codes: list[np.ndarray], n: int, d: int) -> np.ndarray:
    """(n, d, d, K) SHAP interaction values; rows sum to :func:`shap_values`."""
    k = block.n_outputs
    out = np.zeros((n, d * d, k))
    for g, c in zip(block.groups, codes, strict=True):
        if g.e == 0:
            continue
        a = _gather(_interaction_table(g), c)  # (n, L, e, e)
        keys = (g.feats[:, :, None] * d + g.feats[:, None, :]).ravel()
        out += _accumulate(g, "inter", a, keys, d * d)
    return out.reshape(n, d, d, k)


def local_subsets(e: int, r: int) -> np.ndarray:
    """(C(e, r), r) ascending local bits of every r-subset of e bits."""
    return np.array(list(itertools.combinations(range(e), r)), dtype=np.int64).reshape(-1, r)


def _component_table(g: LeafGroup, r: int) -> np.ndarray:
    """(L, C(e,r), 2**r): m_s(c) for every r-subset s, indexed by the code restricted to s."""
    def build() -> np.ndarray:
        bits = local_subsets(g.e, r)
        v = np.arange(1 << r)
        vb = (v[:, None] >> np.arange(r)[None]) & 1  # (2**r, r)
        expand = (vb[None] << bits[:, None, :]).sum(axis=2)  # (n_s, 2**r) full masks of sub-subsets
        sign = np.where((r - vb.sum(axis=1)) % 2 == 0, 1.0, -1.0)
        return subset_sum(g.table[:, expand] * sign[None, None], r)
    return _cached(g, ("comp", r), build)


@functools.lru_cache(maxsize=64)
def _compress_lut(e: int, r: int) -> np.ndarray:
    """(2**e, C(e, r)) int64: the bits of code c inside each r-subset, packed into r bits."""
    bits = local_subsets(e, r)
    c = np.arange(1 << e)
    return (((c[:, None, None] >> bits[None]) & 1) << np.arange(r)).sum(axis=2)


def component_keys(g: LeafGroup, r: int) -> np.ndarray:
    """(L * C(e, r), r) global feature tuples of the group's r-subsets, leaf-major."""
    bits = local_subsets(g.e, r)
    return g.feats[:, bits].reshape(-1, r)


def components(block: Block, codes: list[np.ndarray], n: int, r: int, ids: list[np.ndarray],
               n_comp: int) -> np.ndarray:
    """(n, n_comp, K) order-r components; ``ids[i]`` maps group i's leaf-major subsets to columns."""
    k = block.n_outputs
    out = np.zeros((n, n_comp, k))
    for g, c, gid in zip(block.groups, codes, ids, strict=True):
        if g.e < r:
            continue
        tab = _component_table(g, r)  # (L, n_s, 2**r)
        idx = _compress_lut(g.e, r)[c]  # (n, L, n_s): code restricted to each subset, as r bits
        n_l, n_s = tab.shape[:2]
        flat = tab.reshape(-1)
        pos = (np.arange(n_l * n_s) * (1 << r)).reshape(n_l, n_s)
        m = flat[idx + pos[None]]  # (n, L, n_s)
        out += _accumulate(g, ("comp", r, n_comp), m, gid, n_comp)
    return out

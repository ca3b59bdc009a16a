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
from typing import Any

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
    n_background: int = 0

    @property
    def n_leaves(self) -> int:
        return self.feats.shape[0]

    def codes(self, go_left_t: np.ndarray) -> np.ndarray:
        """(n, L) bitmask of the path constraints each row satisfies, from ``Block.go_left_t``."""
        n = go_left_t.shape[1]
        if self.e == 0:
            return np.zeros((n, self.n_leaves), dtype=np.uint8)
        dt = self.path_mask.dtype
        fail = np.zeros((self.n_leaves, n), dtype=dt)
        for j in range(self.path_node.shape[1]):  # rows of go_left_t are contiguous: gather whole rows
            wrong = (go_left_t[self.path_node[:, j]] != self.path_dir[:, j, None]).view(np.uint8)
            fail |= wrong * self.path_mask[:, j, None]
        return np.ascontiguousarray((fail ^ dt.type((1 << self.e) - 1)).T)


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
    # the trees as linked nodes, for walking the background through them (:func:`_walk`): children of
    # each internal node, encoded as an internal node id (>= 0) or -(leaf + 1) for leaf i of
    # ``leaf_group`` / ``leaf_pos`` (the group and position of each leaf; group -1: a zero leaf)
    child: np.ndarray | None = None  # (N, 2) left, right
    roots: np.ndarray | None = None  # (T,) each tree's root, encoded as a child
    leaf_group: np.ndarray | None = None
    leaf_pos: np.ndarray | None = None
    feature_bit: np.ndarray | None = None  # (d,) bit of each split feature in a uint64 mask (-1: unused)
    background: np.ndarray | None = None  # the background rows, while the tables are not built
    background_bits: np.ndarray | None = None  # (N, W) uint64: bit z of row i says background row z goes left
    n_background: int = 0
    _feature_nodes: list[tuple[int, np.ndarray]] | None = field(default=None, repr=False)

    def go_left_t(self, x: np.ndarray, strict: bool) -> np.ndarray:
        """(N + 1, n) bool: whether each row goes left at each internal node; the last row is True.

        Node-major, so that a leaf path's split directions are gathered as whole rows.
        """
        if self.nan_to_zero is not None or self.zero_missing is not None:
            return np.ascontiguousarray(self._go_left_general(x, strict).T)
        out = np.empty((len(self.feature) + 1, x.shape[0]), dtype=bool)
        out[-1] = True
        xt = np.ascontiguousarray(x.T)
        compare = np.less if strict else np.less_equal
        for f, nodes in self._by_feature():
            col = xt[f]
            with np.errstate(invalid="ignore"):
                left = compare(col[None, :], self.threshold[nodes, None])
            nan = np.isnan(col)
            if nan.any():
                left[:, nan] = self.default_left[nodes, None]
            out[nodes] = left
        if self.cat_node is not None:
            out[self.cat_node] = self._categorical(x[:, self.feature[self.cat_node]]).T
        return out

    def _by_feature(self) -> list[tuple[int, np.ndarray]]:
        """Internal nodes grouped by split feature (cached)."""
        if self._feature_nodes is None:
            order = np.argsort(self.feature, kind="stable")
            sf = self.feature[order]
            if not len(sf):  # every tree of the block is a single leaf
                self._feature_nodes = []
                return self._feature_nodes
            starts = np.flatnonzero(np.r_[True, sf[1:] != sf[:-1]])
            ends = np.r_[starts[1:], len(sf)]
            self._feature_nodes = [(int(sf[a]), order[a:b]) for a, b in zip(starts, ends, strict=True)]
        return self._feature_nodes

    def _go_left_general(self, x: np.ndarray, strict: bool) -> np.ndarray:
        """(n, N) directions with LightGBM's missing-value rules (NaN as zero, zero as missing)."""
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
        if self.cat_table is None or self.cat_neg_left is None or self.cat_node is None:
            raise RuntimeError("the block has no category-set splits")
        nan = np.isnan(v)
        t = np.trunc(np.where(nan, 0.0, v))
        neg = t < 0 if self.cat_trunc_first else np.where(nan, 0.0, v) < 0
        idx = np.clip(t, 0, self.cat_table.shape[1] - 1).astype(np.int64)  # last column: out of range
        out = self.cat_table[np.arange(v.shape[1])[None], idx]
        out = np.where(neg, self.cat_neg_left[None], out)
        return np.where(nan, self.default_left[self.cat_node][None], out)

    def codes(self, x: np.ndarray, strict: bool) -> list[np.ndarray]:
        """Per group, the (n, L) path-constraint codes of the rows of x."""
        gl = self.go_left_t(x, strict)
        return [g.codes(gl) for g in self.groups]


def compile_blocks(ens: TreeEnsemble, n_blocks: int) -> list[Block]:
    """Enumerate leaf paths of every tree and split the trees into ``n_blocks`` contiguous blocks."""
    n_blocks = max(1, min(n_blocks, len(ens.trees)))
    bounds = np.linspace(0, len(ens.trees), n_blocks + 1).round().astype(int)
    return [_compile_block(ens, ens.trees[a:b]) for a, b in zip(bounds[:-1], bounds[1:], strict=True)]


def _compile_block(ens: TreeEnsemble, trees: list) -> Block:
    feats_all, thr_all, dl_all, n2z_all, zm_all = [], [], [], [], []
    cat_recs: list[tuple[int, np.ndarray, bool, bool]] = []
    forest: dict[str, list[np.ndarray]] = {"left": [], "right": [], "feature": [], "cover": [], "value": [], "local": []}
    roots = []
    base = 0
    offset = 0
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
        roots.append(offset)
        for key, arr in (("left", t.left), ("right", t.right)):
            forest[key].append(np.where(arr == -1, -1, arr + offset))
        forest["feature"].append(t.feature)
        forest["cover"].append(t.cover)
        forest["value"].append(t.value)
        forest["local"].append(local)
        offset += len(t.left)
    n2z = np.concatenate(n2z_all) if n2z_all else np.zeros(0, bool)
    zm = np.concatenate(zm_all) if zm_all else np.zeros(0, bool)
    lp = _leaf_paths(*(np.concatenate(forest[k]) for k in ("left", "right", "feature", "cover", "value", "local")),
                     roots=roots)
    groups: list[LeafGroup] = []
    left_all, right_all = np.concatenate(forest["left"]), np.concatenate(forest["right"])
    local_all = np.concatenate(forest["local"])
    leaf_nodes = np.flatnonzero(left_all == -1)
    leaf_index = -np.ones(len(left_all), dtype=np.int64)
    leaf_index[leaf_nodes] = np.arange(len(leaf_nodes))
    leaf_group = -np.ones(len(leaf_nodes), dtype=np.int64)
    leaf_pos = np.zeros(len(leaf_nodes), dtype=np.int64)
    for e in np.unique(lp.e):
        e = int(e)
        idx = np.flatnonzero(lp.e == e)
        step = max(1, _GROUP_ENTRIES // ((1 << e) * max(e, 1)))
        for i in range(0, len(idx), step):
            part = idx[i : i + step]
            leaf_group[leaf_index[lp.leaf[part]]] = len(groups)
            leaf_pos[leaf_index[lp.leaf[part]]] = np.arange(len(part))
            groups.append(_make_group(e, lp, part, sentinel=base))
    code = np.where(left_all == -1, -(leaf_index + 1), local_all)  # every node as a child code
    internal_all = np.flatnonzero(left_all != -1)  # in local-id order
    child = np.stack([code[left_all[internal_all]], code[right_all[internal_all]]], axis=1) if len(internal_all) \
        else np.zeros((0, 2), np.int64)
    split_features = np.unique(np.concatenate(feats_all)) if feats_all else np.zeros(0, np.int64)
    feature_bit = None
    if len(split_features) <= 64:
        feature_bit = -np.ones(ens.n_features, dtype=np.int64)
        feature_bit[split_features] = np.arange(len(split_features))
    linkage: dict[str, Any] = {"child": child, "roots": code[np.asarray(roots, dtype=np.int64)], "leaf_group": leaf_group,
               "leaf_pos": leaf_pos, "feature_bit": feature_bit}
    entries = sum(g.n_leaves << g.e for g in groups)
    if entries > MAX_TABLE_ENTRIES:
        raise ValueError(f"the augmented trees would need {entries:,} table entries (sum over leaves of 2**e, e = "
                         f"distinct features on the leaf's path), above the limit of {MAX_TABLE_ENTRIES:,}; "
                         "FastPD suits moderately deep trees: limit max_depth (or num_leaves)")
    cat: dict[str, Any] = {}
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
                 n_leaves=sum(g.n_leaves for g in groups), max_depth=lp.max_depth, n_outputs=ens.n_outputs, **cat,
                 **linkage)


@dataclass
class _LeafPaths:
    """Root-to-leaf paths of the non-zero leaves of some trees, padded to a common length.

    ``node`` holds block-local internal node ids (-1: padding), ``left`` the direction taken,
    ``bit`` the local bit of the split's feature, ``feats`` the distinct path features in
    ascending order (padding: -1), ``ratio`` the per-bit product of cover ratios.
    """

    node: np.ndarray  # (L, D)
    left: np.ndarray  # (L, D)
    bit: np.ndarray  # (L, D)
    feats: np.ndarray  # (L, D)
    ratio: np.ndarray  # (L, D)
    e: np.ndarray  # (L,)
    length: np.ndarray  # (L,)
    values: np.ndarray  # (L, K)
    max_depth: int
    leaf: np.ndarray  # (L,) forest node id of each leaf


def _leaf_paths(left_child: np.ndarray, right_child: np.ndarray, feature: np.ndarray, cover: np.ndarray,
                value: np.ndarray, local: np.ndarray, *, roots: list[int]) -> _LeafPaths:
    """Every leaf's root path, tree by tree in depth-first order (right subtree first), vectorised.

    The node arrays hold all trees, with child indices into the concatenation; ``roots`` are the
    trees' root nodes.
    """
    n_nodes = len(left_child)
    parent = -np.ones(n_nodes, dtype=np.int64)
    went_left = np.zeros(n_nodes, dtype=bool)
    internal = np.flatnonzero(left_child != -1)
    parent[left_child[internal]] = internal
    parent[right_child[internal]] = internal
    went_left[left_child[internal]] = True
    leaves = np.flatnonzero(left_child == -1)  # put in depth-first order below
    max_depth_all = 0
    # ancestors, leaf first: anc[:, j] is the j-th node above the leaf (-1 above the root)
    anc = [leaves]
    while True:
        up = np.where(anc[-1] >= 0, parent[np.maximum(anc[-1], 0)], -1)
        if (up < 0).all():
            break
        anc.append(up)
    chain = np.stack(anc, axis=1)  # (L, depth + 1): leaf, parent, ..., root, -1 padding
    length = (chain >= 0).sum(axis=1) - 1
    max_depth_all = int(length.max(initial=0))
    depth = chain.shape[1] - 1
    # root-first path: position j < length holds the j-th split node from the root
    pos = length[:, None] - 1 - np.arange(depth)[None]  # index into chain[:, 1:] (above the leaf)
    valid = pos >= 0
    path_nodes = np.where(valid, np.take_along_axis(chain[:, 1:], np.maximum(pos, 0), axis=1), -1) if depth else \
        np.zeros((len(leaves), 0), np.int64)
    child = np.where(valid, np.take_along_axis(chain[:, :-1], np.maximum(pos, 0), axis=1), -1) if depth else \
        np.zeros((len(leaves), 0), np.int64)
    # leaf order of a depth-first walk that visits the right child first: by tree, then by the
    # directions from the root (right before left; no leaf's path is a prefix of another's)
    tree = np.searchsorted(np.asarray(roots, dtype=np.int64), leaves, side="right")
    turns = np.where(valid, went_left[np.maximum(child, 0)], False)
    order = np.lexsort((*turns.T[::-1], tree))
    leaves, chain, length, path_nodes, child, valid = (a[order] for a in (leaves, chain, length, path_nodes, child,
                                                                          valid))
    safe = np.maximum(path_nodes, 0)
    feat = np.where(valid, feature[safe], -1).astype(np.int64)
    left = np.where(valid, went_left[np.maximum(child, 0)], True)
    with np.errstate(divide="ignore", invalid="ignore"):
        ratio = np.where(valid & (cover[safe] > 0), cover[np.maximum(child, 0)] / np.where(cover[safe] > 0, cover[safe], 1.0),
                         np.where(valid, 0.0, 1.0))
    values = value[leaves]
    keep = np.any(values != 0, axis=1)  # a zero leaf contributes nothing to any query
    leaves, path_nodes, left, feat, ratio, values, length = (a[keep] for a in (leaves, path_nodes, left, feat, ratio,
                                                                              values, length))
    big = np.iinfo(np.int64).max
    srt = np.sort(np.where(feat >= 0, feat, big), axis=1)
    first = np.ones_like(srt, dtype=bool)
    first[:, 1:] = srt[:, 1:] != srt[:, :-1]
    distinct = first & (srt != big)
    e = distinct.sum(axis=1)
    if e.size and e.max() > MAX_PATH_FEATURES:
        raise ValueError(f"a leaf path splits on {int(e.max())} distinct features; FastPD's tables grow as 2**e per "
                         f"leaf and at most {MAX_PATH_FEATURES} are supported (limit max_depth)")
    # distinct features ascending, packed to the left
    rank = np.cumsum(distinct, axis=1) - 1
    feats = -np.ones_like(srt)
    r_idx, c_idx = np.nonzero(distinct)
    feats[r_idx, rank[r_idx, c_idx]] = srt[r_idx, c_idx]
    # local bit of each split = number of distinct path features below its feature
    bit = np.where(feat >= 0, (distinct[:, None, :] & (srt[:, None, :] < feat[:, :, None])).sum(axis=2), 0)
    bit_ratio = np.ones(feat.shape)
    rows = np.arange(len(feat))
    for j in range(feat.shape[1]):  # root to leaf, the multiplication order of the per-split loop
        ok = feat[:, j] >= 0
        bit_ratio[rows[ok], bit[ok, j]] *= ratio[ok, j]
    node_local = np.where(path_nodes >= 0, local[np.maximum(path_nodes, 0)], -1)
    return _LeafPaths(node=node_local, left=left, bit=bit, feats=feats, ratio=bit_ratio, e=e, length=length,
                      values=values, max_depth=max_depth_all, leaf=leaves)


def _make_group(e: int, lp: _LeafPaths, idx: np.ndarray, sentinel: int) -> LeafGroup:
    dp = max(1, int(lp.length[idx].max(initial=0)))
    valid = np.arange(lp.node.shape[1])[None, :dp] < lp.length[idx, None]
    node = np.where(valid, lp.node[idx, :dp], sentinel).astype(np.int64)
    pdir = np.where(valid, lp.left[idx, :dp], True)
    pmask: np.ndarray = np.where(valid, np.left_shift(1, lp.bit[idx, :dp]), 0).astype(code_dtype(e))
    if node.shape[1] < dp:  # trees of depth 0 only
        pad = dp - node.shape[1]
        node = np.pad(node, ((0, 0), (0, pad)), constant_values=sentinel)
        pdir = np.pad(pdir, ((0, 0), (0, pad)), constant_values=True)
        pmask = np.pad(pmask, ((0, 0), (0, pad)), constant_values=0)
    return LeafGroup(e=e, feats=np.ascontiguousarray(lp.feats[idx, :e]), path_node=node, path_dir=pdir,
                     path_mask=pmask, values=lp.values[idx], cover_ratio=np.ascontiguousarray(lp.ratio[idx, :e]))


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
        accumulate_background_group(g, c, h)


def finish_background(block: Block, hist: list[np.ndarray], n_background: int) -> None:
    """P_l[U] = #{rows whose code contains E_l minus U} / n_b (a superset sum of the histogram)."""
    for g, h in zip(block.groups, hist, strict=True):
        g.table = superset_sum(h, g.e)[:, ::-1] / n_background
        g.cache.clear()


def build_tables(block: Block, strict: bool = True, rows: int = 1024) -> None:
    """The full augmented tables from the kept background rows, streamed in chunks of ``rows``."""
    bg = block.background
    if bg is None:
        raise RuntimeError("the background rows were not kept")
    hist = [np.zeros((g.n_leaves, 1 << g.e)) for g in block.groups]
    for start in range(0, bg.shape[0], rows):
        accumulate_background(block, block.codes(bg[start : start + rows], strict), hist)
    finish_background(block, hist, bg.shape[0])
    block.background = block.background_bits = None


def accumulate_background_group(g: LeafGroup, c: np.ndarray, h: np.ndarray) -> None:
    size = 1 << g.e
    flat = c.astype(np.int64) + (np.arange(g.n_leaves) * size)[None]
    h += np.bincount(flat.ravel(), minlength=g.n_leaves * size).reshape(g.n_leaves, size)


def _table(g: LeafGroup) -> np.ndarray:
    """The group's augmented table; built before any query that reads it."""
    if g.table is None:
        raise RuntimeError("the augmented table is read before it is built")
    return g.table


def has_tables(block: Block) -> bool:
    """Whether every group has its augmented table P_l."""
    return all(g.table is not None for g in block.groups)


def shap_tables_cached(block: Block) -> bool:
    """Whether every group's SHAP table is built and cached."""
    return all(g.e == 0 or "shap" in g.cache for g in block.groups)


def table_cost(block: Block, *, shap: bool) -> float:
    """Entries touched to build the augmented tables from codes (and the SHAP tables, if ``shap``)."""
    cost = 0.0
    for g in block.groups:
        if g.table is None:
            cost += (g.n_leaves << g.e) * (g.e + 1) + 3 * g.n_background * g.n_leaves  # histogram: 3 passes
        if shap and g.e and "shap" not in g.cache:
            cost += (g.n_leaves << g.e) * g.e * (g.e + 1)
    return cost


def shap_row_cost(block: Block) -> float:
    """Entries touched per explained row by :func:`_shap_rows` (a code holds about half its bits)."""
    return sum(g.n_leaves * 2 ** (g.e / 2) * g.e * (g.e / 2 + 1) for g in block.groups if g.e)


def table_entries(g: LeafGroup, subsets: np.ndarray) -> np.ndarray:
    """(m, L) entries P_l[U] of the augmented table for local subsets U given as (m, L) codes."""
    return np.take_along_axis(_table(g), subsets.T.astype(np.int64), axis=1).T


@functools.lru_cache(maxsize=32)
def _shapley_weights_t(e: int) -> np.ndarray:
    w = np.ascontiguousarray(shapley_weights(e).T)
    w.flags.writeable = False
    return w


_PAIR_BATCH = 2**20  # table entries of scratch per batch of (row, leaf) pairs


def _shap_rows(g: LeafGroup, c: np.ndarray) -> np.ndarray:
    """(n, L, e): the rows' entries of the leaves' SHAP tables, without building the SHAP tables.

    Entry c of a leaf's SHAP table is a subset-sum over the 2**|c| subsets of c only, so it is
    computed on those, bit by bit in ascending order as the full transform runs: every product
    and addition is the one the full table performs, and the result is equal bit for bit. The
    augmented-table entries come from the table (before it is built: :func:`walk_shap_rows`).
    """
    n = c.shape[0]
    e = g.e
    out = np.empty((n, g.n_leaves, e))
    flat_codes = c.reshape(-1).astype(np.int64)  # (row, leaf) pairs, row-major
    size = _popcount(flat_codes)
    bits = ((flat_codes[:, None] >> np.arange(e)[None]) & 1).astype(bool)
    out_flat = out.reshape(-1, e)
    for p in np.unique(size):
        p = int(p)
        pairs = np.flatnonzero(size == p)
        step = max(1, _PAIR_BATCH // ((1 << p) * e))
        for a in range(0, len(pairs), step):
            batch = pairs[a : a + step]
            subsets = _deposit(bits[batch], p)
            leaf = batch % g.n_leaves
            out_flat[batch] = _subset_sum_top(_table(g)[leaf[:, None], subsets], subsets, e)
    return out


def _deposit(bits: np.ndarray, p: int) -> np.ndarray:
    """(m, 2**p): the k-th subset of each code (k's bits deposited on the code's set bits, ascending)."""
    pos = np.nonzero(bits)[1].reshape(bits.shape[0], p)
    k_bits = (np.arange(1 << p)[:, None] >> np.arange(p)[None]) & 1  # (2**p, p)
    return (k_bits[None] << pos[:, None, :]).sum(axis=2)


def _subset_sum_top(table: np.ndarray, subsets: np.ndarray, e: int) -> np.ndarray:
    """(m, e): sum over the subsets U of each code of P[U] * W[:, U], as the full SHAP table sums them."""
    p = int(np.log2(subsets.shape[1]))
    h = np.empty((subsets.shape[0], subsets.shape[1], e))
    np.multiply(table[:, :, None], _shapley_weights_t(e)[subsets], out=h)
    return subset_sum_axis1(h, p)[:, -1]


def _row_subset_tables(g: LeafGroup, code: np.ndarray, li: np.ndarray, z: np.ndarray,
                       weight: np.ndarray) -> list[tuple[np.ndarray, np.ndarray, np.ndarray]]:
    """For one row's codes (L,): per popcount p, (leaves, subsets (Lp, 2**p), P at those subsets).

    P_l[U] for U inside the row's code c counts the background rows whose code contains E_l minus
    U; those rows contain E_l minus c, so only the background rows that do are counted (given as
    leaves ``li``, the rows' codes ``z`` there and how many rows each entry stands for, ``weight``),
    by their codes packed onto c's bits, and superset-summed: the same integer counts, over the
    same n_b, as the full table.
    """
    e = g.e
    c64 = code.astype(np.int64)
    size = _popcount(c64)
    below = (1 << np.arange(e)) - 1  # bits below j
    rank = _popcount(c64[:, None] & below[None])  # (L, e): position of bit j among the code's bits
    m = c64[li]
    q = np.zeros(len(li), dtype=np.int64)
    for j in range(e):
        q |= (((z & m) >> j) & 1) << rank[li, j]
    offset = np.concatenate([[0], np.cumsum(1 << size)[:-1]])
    counts = np.bincount(offset[li] + q, weights=weight, minlength=int((1 << size).sum()))
    bits = ((c64[:, None] >> np.arange(e)[None]) & 1).astype(bool)
    out = []
    for p in np.unique(size):
        p = int(p)
        leaves = np.flatnonzero(size == p)
        hist = counts[offset[leaves][:, None] + np.arange(1 << p)[None]].astype(np.float64)
        table = superset_sum(hist, p)[:, ::-1] / g.n_background
        out.append((leaves, _deposit(bits[leaves], p), table))
    return out


# ------------------------------------------------------------------------- walking the background
# Few queries need only the background rows' counts at the leaves they reach: the rows are walked
# down the trees as bitsets (bit z of a uint64 word array: background row z), level by level over
# all nodes of all trees, so the work per query is (nodes reached) x n_b / 64 words instead of the
# n_b x leaves codes that the full tables need. A walk with a row x to explain follows interventional
# TreeSHAP's recursion: the hybrid point takes each feature from x or from z, so a background row
# may leave x's path where it disagrees with x, and each state carries the features x fails (xf)
# and those z fails (zf) along its path, which must stay disjoint.
_WALK_WORDS = 2**22  # uint64 words of bitsets per level of a walk (trees are walked in batches below this)
_PREFIX_WORDS = 2**23  # words of the per-feature prefix bitsets of the fast numeric path
# up to this many words per state (n_b <= 2048) a walk keeps every state's words (XGBoost, 100 trees,
# depth 6 and 10, N = 1000: 0.05 s and 0.44 s per walk against 0.07 s and 0.40 s with the non-zero
# words only; N = 4000, depth 10: 1.83 s against 1.08 s)
_DENSE_WALK_WORDS = 32


def _pack_rows(b: np.ndarray) -> np.ndarray:
    """(m, n) bool -> (m, W) uint64 bitsets, W = ceil(n / 64), bit z of a row = column z."""
    m, n = b.shape
    w = (n + 63) // 64
    padded = np.zeros((m, w * 64), dtype=bool)
    padded[:, :n] = b
    return np.packbits(padded, axis=1, bitorder="little").view(np.uint64).reshape(m, w)


def keep_background_bits(block: Block, bg: np.ndarray, strict: bool) -> None:
    """Store the background as bitsets of its split directions, in place of the augmented tables.

    Numeric splits read each feature's rows in sorted order, so a node's left set is a prefix (plus
    the missing rows where NaN goes left): the same sets as :meth:`Block.go_left_t`.
    """
    n, nodes = bg.shape[0], len(block.feature)
    w = (n + 63) // 64
    block.background, block.n_background = bg, n
    for g in block.groups:
        g.table, g.n_background = None, n
        g.cache.clear()
    general = block.nan_to_zero is not None or block.zero_missing is not None
    if general or (n + 1) * w > _PREFIX_WORDS:  # the directions themselves, 64 x k rows at a time
        bits = np.empty((nodes, w), dtype=np.uint64)
        step = 64 * max(1, _PREFIX_WORDS // max(1, nodes * 8))
        for start in range(0, n, step):
            bits[:, start // 64 : (start + step) // 64] = _pack_rows(block.go_left_t(bg[start : start + step],
                                                                                   strict)[:nodes])
        block.background_bits = bits
        return
    bits = np.empty((nodes, w), dtype=np.uint64)
    row_bit = np.zeros((n + 1, w), dtype=np.uint64)
    for f, idx in block._by_feature():
        col = bg[:, f]
        order = np.argsort(col, kind="stable")  # NaN last
        row_bit[:] = 0
        row_bit[np.arange(1, n + 1), order >> 6] = np.left_shift(np.uint64(1), (order & 63).astype(np.uint64))
        prefix = np.bitwise_or.accumulate(row_bit, axis=0)  # prefix[k]: the k smallest rows
        cut = np.searchsorted(col[order], block.threshold[idx], side="left" if strict else "right")
        bits[idx] = prefix[cut]
        nan = np.isnan(col)
        if nan.any():
            nan_bits = _pack_rows(nan[None])[0]
            bits[idx[block.default_left[idx]]] |= nan_bits
    if block.cat_node is not None:
        bits[block.cat_node] = _pack_rows(block._categorical(bg[:, block.feature[block.cat_node]]).T)
    block.background_bits = bits


def _all_rows(n: int) -> np.ndarray:
    return _pack_rows(np.ones((1, n), dtype=bool))[0]


def _walk(block: Block, x_left: np.ndarray | None, free: int = 0) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Walk the background rows down every tree; return (leaf, zf, count) per state reaching a leaf.

    ``x_left`` (N,) bool: x's direction at each internal node (SHAP mode: the hybrid points of x and
    each background row z), or None (PD mode): the rows follow their own directions, except at
    splits on a feature of the ``free`` mask (``feature_bit``), where they go both ways. ``zf``
    (uint64, feature_bit mask) holds the features the rows of a state fail on the leaf's path (SHAP
    mode; 0 in PD mode), ``count`` how many background rows the state holds.

    A state's rows are kept as its non-zero words only, (state, word index, word) triples: deep in
    the trees a state holds a few rows, so the work follows the rows left rather than n_b / 64 words
    per state.
    """
    bits, child, roots = block.background_bits, block.child, block.roots
    if bits is None or child is None or roots is None or block.feature_bit is None:
        raise RuntimeError("the background was not kept as bitsets")
    w = bits.shape[1]
    if w <= _DENSE_WALK_WORDS:
        return _walk_dense(block, x_left, free)
    everyone = _all_rows(block.n_background)
    fbit = np.left_shift(np.uint64(1), np.maximum(block.feature_bit[block.feature], 0).astype(np.uint64))
    leaves: list[np.ndarray] = []
    masks: list[np.ndarray] = []
    counts: list[np.ndarray] = []
    # PD mode: the rows going left; SHAP mode: the rows agreeing with x (x's side's set)
    side_bits = bits if x_left is None else np.where(x_left[:, None], bits, ~bits)
    per_tree = max(1, len(child) // max(len(roots), 1))
    batch = max(1, _WALK_WORDS // max(1, 4 * per_tree * w))

    def advance(node: np.ndarray, xf: np.ndarray, zf: np.ndarray, t_state: np.ndarray, t_word: np.ndarray,
                t_bits: np.ndarray) -> tuple[np.ndarray, ...]:
        """Count the candidate states at leaves; drop empty ones; renumber the rest for the next level."""
        held = np.zeros(len(node), dtype=bool)
        held[t_state] = True
        done = held & (node < 0)
        if done.any():
            at_leaf = done[t_state]
            total = np.bincount(t_state[at_leaf], weights=np.bitwise_count(t_bits[at_leaf]), minlength=len(node))
            leaves.append(-node[done] - 1)
            masks.append(zf[done])
            counts.append(total[done].astype(np.int64))
        keep = held & (node >= 0)
        renumber = np.cumsum(keep) - 1
        inner = keep[t_state]
        return node[keep], xf[keep], zf[keep], renumber[t_state[inner]], t_word[inner], t_bits[inner]

    for start in range(0, len(roots), batch):
        top = roots[start : start + batch]
        none = np.zeros(len(top), dtype=np.uint64)
        state = advance(top, none, none, np.repeat(np.arange(len(top)), w), np.tile(np.arange(w), len(top)),
                        np.tile(everyone, len(top)))
        node, xf, zf, t_state, t_word, t_bits = state
        while len(node):
            left, right = child[node, 0], child[node, 1]
            bit = fbit[node]
            side = t_bits & side_bits[node[t_state], t_word]
            other = t_bits ^ side
            if x_left is None:  # children: (left, right); rows of splits on a free feature go both ways
                both = ((bit & np.uint64(free)) != 0)[t_state]
                cand = np.stack([left, right], axis=1).ravel()
                parts = [(np.where(both, t_bits, side), 0), (np.where(both, t_bits, other), 1)]
                xf_c = zf_c = np.zeros(len(cand), dtype=np.uint64)
                k = 2
            else:  # children: x's side (rows agreeing, or all if z failed the feature), x's side with z
                # failing the feature (rows disagreeing), z's side with x failing it (rows disagreeing)
                dx = x_left[node]
                x_child, z_child = np.where(dx, left, right), np.where(dx, right, left)
                z_failed, x_failed = (zf & bit) != 0, (xf & bit) != 0
                cand = np.stack([x_child, x_child, z_child], axis=1).ravel()
                xf_c = np.stack([xf, xf, xf | bit], axis=1).ravel()
                zf_c = np.stack([zf, zf | bit, zf], axis=1).ravel()
                zt = z_failed[t_state]
                parts = [(np.where(zt, t_bits, side), 0), (np.where(zt | x_failed[t_state], 0, other), 1),
                         (np.where(zt, 0, other), 2)]
                k = 3
            kept = [(np.flatnonzero(b), b, j) for b, j in parts]
            node, xf, zf, t_state, t_word, t_bits = advance(
                cand, xf_c, zf_c,
                np.concatenate([k * t_state[i] + j for i, _, j in kept]),
                np.concatenate([t_word[i] for i, _, _ in kept]),
                np.concatenate([b[i] for i, b, _ in kept]))
    if not leaves:
        return np.zeros(0, np.int64), np.zeros(0, np.uint64), np.zeros(0, np.int64)
    return np.concatenate(leaves), np.concatenate(masks), np.concatenate(counts)


def _walk_dense(block: Block, x_left: np.ndarray | None, free: int = 0) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """:func:`_walk` with every state's rows as all n_b / 64 words (faster for few words)."""
    bits, child, roots = block.background_bits, block.child, block.roots
    if bits is None or child is None or roots is None or block.feature_bit is None:
        raise RuntimeError("the background was not kept as bitsets")
    w = bits.shape[1]
    everyone = _all_rows(block.n_background)
    fbit = np.left_shift(np.uint64(1), np.maximum(block.feature_bit[block.feature], 0).astype(np.uint64))
    leaves: list[np.ndarray] = []
    masks: list[np.ndarray] = []
    counts: list[np.ndarray] = []
    # rows agreeing with x at each node: the left set where x goes left, else its complement
    agree_bits = None if x_left is None else np.where(x_left[:, None], bits, ~bits)
    per_tree = max(1, len(child) // max(len(roots), 1))
    batch = max(1, _WALK_WORDS // max(1, 4 * per_tree * w))

    def advance(parts: list[tuple[Any, ...]]) -> tuple[np.ndarray, ...]:
        """States (child, rows, keep, xf, zf) that reach a leaf are counted; the others form the next level."""
        nxt: list[list[np.ndarray]] = [[], [], [], []]
        for ch, r, keep, xfp, zfp in parts:
            done, inner = keep & (ch < 0), keep & (ch >= 0)
            if done.any():
                leaves.append(-ch[done] - 1)
                masks.append(zfp[done])
                counts.append(np.bitwise_count(r[done]).sum(axis=1, dtype=np.int64))
            for out, a in zip(nxt, (ch, r, xfp, zfp), strict=True):
                out.append(a[inner])
        return tuple(np.concatenate(a) for a in nxt)

    for start in range(0, len(roots), batch):
        top = roots[start : start + batch]
        none = np.zeros(len(top), dtype=np.uint64)
        node, rows, xf, zf = advance([(top, np.broadcast_to(everyone, (len(top), w)), np.ones(len(top), bool),
                                       none, none)])
        while len(node):
            left, right = child[node, 0], child[node, 1]
            bit = fbit[node]
            if agree_bits is None or x_left is None:
                go_left = bits[node]
                both = (bit & np.uint64(free)) != 0
                to_left = np.where(both[:, None], rows, rows & go_left)
                to_right = np.where(both[:, None], rows, rows & ~go_left)
                node, rows, xf, zf = advance([(left, to_left, to_left.any(axis=1), xf, zf),
                                              (right, to_right, to_right.any(axis=1), xf, zf)])
                continue
            dx = x_left[node]
            agree = rows & agree_bits[node]
            differ = rows ^ agree
            x_child, z_child = np.where(dx, left, right), np.where(dx, right, left)
            z_failed, x_failed = (zf & bit) != 0, (xf & bit) != 0
            # z failed this feature before: x's value decides, every row follows x
            stay = agree
            if z_failed.any():
                stay[z_failed] = rows[z_failed]
            some = differ.any(axis=1) & ~z_failed
            node, rows, xf, zf = advance([
                (x_child, stay, stay.any(axis=1), xf, zf),
                (x_child, differ, some & ~x_failed, xf, zf | bit),  # rows that disagree follow x, failing the feature
                (z_child, differ, some, xf | bit, zf),  # ... or follow themselves, and x fails it
            ])
    if not leaves:
        return np.zeros(0, np.int64), np.zeros(0, np.uint64), np.zeros(0, np.int64)
    return np.concatenate(leaves), np.concatenate(masks), np.concatenate(counts)


def walk_cost(block: Block, *, shap: bool) -> float:
    """Words touched by one walk: per leaf about 8 states of a SHAP walk (2 of a PD walk), 12 passes each."""
    return (96.0 if shap else 24.0) * block.n_leaves * ((block.n_background + 63) // 64)


def can_walk(block: Block) -> bool:
    """Whether the background is kept as bitsets (no tables yet)."""
    return block.background_bits is not None and not has_tables(block)


def _split_by_group(block: Block, leaf: np.ndarray, *arrays: np.ndarray) -> list[tuple[np.ndarray, ...]]:
    """Per group: (positions, arrays...) of the walk's states at the group's leaves."""
    if block.leaf_group is None or block.leaf_pos is None:
        raise RuntimeError("the block has no leaf linkage")
    group = block.leaf_group[leaf]
    order = np.argsort(group, kind="stable")
    bounds = np.searchsorted(group[order], np.arange(len(block.groups) + 1))
    pos = block.leaf_pos[leaf]
    out = []
    for i in range(len(block.groups)):
        sel = order[bounds[i] : bounds[i + 1]]
        out.append((pos[sel], *(a[sel] for a in arrays)))
    return out


def _walk_entries(block: Block, member: np.ndarray) -> list[np.ndarray]:
    """Per group, (n_S, L) entries P_l[S intersect E_l] for subsets given as ``member`` (n_S, d) bool."""
    if block.feature_bit is None:
        raise RuntimeError("the block has no feature bits")
    fb = block.feature_bit
    out = [np.zeros((member.shape[0], g.n_leaves)) for g in block.groups]
    for i, row in enumerate(member):
        used = np.flatnonzero(row & (fb >= 0))
        free = int(np.bitwise_or.reduce(np.left_shift(np.uint64(1), fb[used].astype(np.uint64)), initial=0))
        leaf, _, count = _walk(block, None, free)
        for g, o, (pos, c) in zip(block.groups, out, _split_by_group(block, leaf, count), strict=True):
            o[i] = np.bincount(pos, weights=c, minlength=g.n_leaves) / block.n_background
    return out


def block_entries(block: Block, member: np.ndarray) -> list[np.ndarray]:
    """Per group, (n_S, L) entries P_l[S intersect E_l] for subsets ``member`` (n_S, d) bool."""
    if can_walk(block):
        return _walk_entries(block, member)
    return [table_entries(g, (member[:, g.feats].astype(np.int64) << np.arange(g.e)).sum(axis=2))
            for g in block.groups]


def walk_shap_rows(block: Block, x: np.ndarray, codes: list[np.ndarray], strict: bool) -> list[np.ndarray]:
    """Per group, the (n, L, e) entries of the leaves' SHAP tables at the rows' codes, from walks.

    Each row's walk counts, per leaf, the background rows that pass the features x fails, by their
    pattern on the features x passes: the histogram whose superset sums are the augmented table's
    entries inside the row's code (:func:`_row_subset_tables`), so the values equal the tables' bit for bit.
    """
    if block.feature_bit is None:
        raise RuntimeError("the block has no feature bits")
    x_left = block.go_left_t(x, strict)[:-1]
    out = [np.empty((x.shape[0], g.n_leaves, g.e)) for g in block.groups]
    for i in range(x.shape[0]):
        leaf, zf, count = _walk(block, x_left[:, i])
        for g, o, c, (pos, m, k) in zip(block.groups, out, codes,
                                        _split_by_group(block, leaf, zf, count), strict=True):
            if g.e == 0:
                continue
            bit = block.feature_bit[g.feats[pos]].astype(np.uint64)  # (m, e)
            failed = (((m[:, None] >> bit) & np.uint64(1)) << np.arange(g.e, dtype=np.uint64)).sum(axis=1)
            passed = c[i, pos].astype(np.int64) & ~failed.astype(np.int64)
            for leaves, subsets, table in _row_subset_tables(g, c[i], pos, passed, k):
                o[i, leaves] = _subset_sum_top(table, subsets, g.e)
    return out


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


def intercept(block: Block, d: int) -> np.ndarray:
    """(K,) sum over leaves of value * P_l[empty set]: the PD of the empty set."""
    entries = block_entries(block, np.zeros((1, d), dtype=bool))
    return sum((p[0] @ g.values for g, p in zip(block.groups, entries, strict=True)), np.zeros(block.n_outputs))


def pd_subsets(block: Block, codes: list[np.ndarray], n: int, member: np.ndarray) -> np.ndarray:
    """PD functions v_S minus the intercept's offset, for subsets given as ``member`` (n_S, d) bool.

    Returns (n, n_S, K).
    """
    k = block.n_outputs
    out = np.zeros((n, member.shape[0], k))
    entries = block_entries(block, member)
    for g, c, p in zip(block.groups, codes, entries, strict=True):
        if g.e == 0:
            out += (p[0] @ g.values)[None, None, :]
            continue
        s = (member[:, g.feats].astype(np.int64) << np.arange(g.e)).sum(axis=2)  # (n_S, L)
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
        np.multiply(_table(g)[:, :, None], shapley_weights(g.e).T[None], out=h)
        return subset_sum_axis1(h, g.e)
    return _cached(g, "shap", build)


def _interaction_table(g: LeafGroup) -> np.ndarray:
    """(L, 2**e, e, e): SHAP interaction values of the leaf's game for every code."""
    def build() -> np.ndarray:
        h = np.empty((g.n_leaves, 1 << g.e, g.e, g.e))  # C order: transformed in place in this layout
        np.multiply(_table(g)[:, :, None, None], np.moveaxis(interaction_weights(g.e), 2, 0)[None], out=h)
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


def shap_values(block: Block, codes: list[np.ndarray], n: int, d: int, *, per_row: bool = False,
                x: np.ndarray | None = None, strict: bool = True) -> np.ndarray:
    """(n, d, K) interventional (or path-dependent) SHAP values of the block's trees.

    ``per_row``: compute only the rows' entries of the SHAP tables (:func:`_shap_rows`, or from
    walks of the background when the tables are not built, which needs the rows ``x``) where a
    table is not cached yet; the values are the same.
    """
    out = np.zeros((n, d, block.n_outputs))
    walked = walk_shap_rows(block, x, codes, strict) if per_row and x is not None and can_walk(block) else None
    for i, (g, c) in enumerate(zip(block.groups, codes, strict=True)):
        if g.e == 0:
            continue
        if walked is not None:
            a = walked[i]
        else:
            a = _shap_rows(g, c) if per_row and "shap" not in g.cache else _gather(_shap_table(g), c)  # (n, L, e)
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
        return subset_sum(_table(g)[:, expand] * sign[None, None], r)
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

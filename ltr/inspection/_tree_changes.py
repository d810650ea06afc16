"""Which rows change prediction when columns are permuted, and their new scores (trees).

Private helper of :mod:`ltr.inspection`.  It takes an engine's trees once
(parsed by :mod:`ltr.engines.trees`; the walks are the numba kernels of
:mod:`ltr.kernels._tree_predict`, :mod:`ltr.kernels._tree_rescore` and
:mod:`ltr.kernels._trees`):

* :class:`_ExactRescorer` caches every row's leaf in every tree (with each
  feature's range of threshold codes that keeps the row's paths) and, for a
  permuted column, walks only the trees whose path the new code leaves, only
  for the rows whose code leaves that range, and re-sums a row's leaf values over all trees
  in the engine's order when a leaf changed: bitwise the engine's predict
  (checked once on the baseline scores; otherwise it is not used);
* :class:`_ChangeDetector` (the fallback: categorical or linear trees, or a
  predict that is not the plain sum) returns the rows that reach another leaf
  (LightGBM) or cross a split threshold (XGBoost), for the engine to predict.
"""

from __future__ import annotations

import functools
import threading
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import numba
import numpy as np

from ltr.engines.trees import (
    FlatTrees,
    LgbTrees,
    find_booster,
    has_categorical_splits,
    is_lightgbm_booster,
    is_xgboost_booster,
    parse_lightgbm_trees,
    parse_xgboost_trees,
    xgboost_split_info,
)
from ltr.kernels._tree_predict import (
    _FEATURE_BITS,
    _code_rows,
    _leaf_sums,
    _permuted_scores,
    _tree_leaves,
)
from ltr.kernels._tree_rescore import (
    _code_leaves_ranges,
    _column_paths,
    _headroom,
    _kth_floor,
    _rescore_column,
)
from ltr.kernels._trees import _lgb_leaf_changed

# Old private names, kept for callers (ltr.inspection, tests).
_is_lgb_booster = is_lightgbm_booster
_is_xgb_booster = is_xgboost_booster
_parse_lgb_trees = parse_lightgbm_trees
_xgb_split_info = xgboost_split_info
_LgbTrees = LgbTrees
_find_booster = find_booster


# LightGBM treats |x| <= kZeroThreshold as zero (missing_type "Zero").
_LGB_ZERO = float(np.float32(1e-35))  # a float widened to double, as LightGBM compares
_KERNEL_LOCK = threading.Lock()


def _coded(X: np.ndarray, tr: FlatTrees) -> tuple[np.ndarray, np.ndarray, dict[int, np.ndarray]]:
    """Rows and nodes as integer codes for the branch-free walks of ``ltr.kernels._tree_predict``.

    Returns ``(W, nodes, thresholds)``: ``W[i, f]`` is ``code << 2 | flags``, where
    ``code`` counts the distinct thresholds of feature ``f`` (``thresholds[f]``,
    over every tree) that the value is above as the engine compares (LightGBM:
    ``value > threshold`` in float64, NaN read as 0; XGBoost: ``value >=
    threshold`` in float32), flag 1 marks NaN and flag 2 (LightGBM) a value the
    engine reads as zero (``|value| <= 1e-35``, NaN included).  ``nodes[k]`` is
    ``[feature | mask << 28 | default_left << 30, m, left, right]`` with ``m`` the
    rank of the node's threshold and ``mask`` the flags that send a value the
    default way (LightGBM's missing type Zero: 2, NaN: 1; XGBoost: 1).  A value
    goes left exactly when the engine sends it left.
    """
    n_nodes = tr.feature.size
    internal = (tr.left != 0) | (tr.right != 0)
    feature = np.where(internal, tr.feature, 0).astype(np.int64)
    m = np.zeros(n_nodes, dtype=np.int64)
    thresholds: dict[int, np.ndarray] = {}
    ts_start = np.zeros(X.shape[1] + 1, dtype=np.int64)
    used = np.unique(feature[internal])
    for f in used:
        at = internal & (feature == f)
        ts = np.unique(tr.threshold[at])
        thresholds[int(f)] = ts
        m[at] = np.searchsorted(ts, tr.threshold[at])
        ts_start[f + 1] = ts.size
    np.cumsum(ts_start, out=ts_start)
    ts_flat = (np.concatenate([thresholds[int(f)] for f in used]) if used.size
               else np.zeros(0))
    n_codes = int(np.max(np.diff(ts_start))) + 1 if X.shape[1] else 1
    W = np.zeros(X.shape, dtype=np.int16 if n_codes < 2**13 else np.int32)
    _over_rows(X.shape[0], lambda lo, hi: _code_rows(lo, hi, X, used, ts_flat, ts_start,
                                                     tr.strict, W))
    missing = (tr.decision.astype(np.int64) >> 2) & 3
    mask = np.select([missing == 1, missing == 2], [2, 1], 0)
    default_left = (tr.decision.astype(np.int64) >> 1) & 1
    nodes = np.stack([feature | (mask << 28) | (default_left << 30), m, tr.left, tr.right],
                     axis=1).astype(np.int32)
    return W, np.ascontiguousarray(nodes), thresholds


def _value_codes(col: np.ndarray) -> np.ndarray:
    """Integer code per distinct value (NaNs share one code)."""
    _, inverse = np.unique(col, return_inverse=True)
    return inverse.reshape(-1).astype(np.int64)


def _lgb_codes(col: np.ndarray, thresholds: np.ndarray) -> np.ndarray:
    """Rows with equal codes take the same branch at every numerical split on this column.

    ``searchsorted`` counts thresholds strictly below the value (LightGBM goes
    left when ``value <= threshold``); NaN and |x| <= 1e-35 (LightGBM's zero)
    get their own codes, which can only mark more rows as changed.
    """
    v = col.astype(np.float64, copy=False)
    codes = np.searchsorted(thresholds, v, side="left").astype(np.int64)
    codes[np.abs(v) <= _LGB_ZERO] = -2
    codes[np.isnan(v)] = -1
    return codes


def _xgb_codes(col: np.ndarray, thresholds: np.ndarray) -> np.ndarray:
    """Code rows so that equal codes take the same branch at every XGBoost split on the column.

    ``x < threshold`` in float32 goes left; NaN and 0 (a common ``missing``
    value) get codes of their own.
    """
    v = col.astype(np.float32)
    codes = np.searchsorted(thresholds, v, side="right").astype(np.int64)
    codes[v == 0] = -2
    codes[np.isnan(v)] = -1
    return codes


class _ChangeDetector:
    """Which rows can get another prediction when some columns are permuted.

    For a row-wise model (a LightGBM/XGBoost booster), a row whose inputs do not
    change in any way the trees can see keeps its prediction bitwise.  LightGBM
    numerical trees: a row is flagged only if it reaches another leaf in some
    tree (walked exactly as LightGBM does, from the first node on the permuted
    columns).  XGBoost trees: a row is flagged when a permuted value crosses a
    split threshold of that column (or is NaN/0).  Linear or categorical trees:
    a row is flagged when any permuted value changed.
    """

    def __init__(self, X: np.ndarray, booster: Any) -> None:
        self.X = X
        self.trees = parse_lightgbm_trees(booster) if is_lightgbm_booster(booster) else None
        self.xgb = xgboost_split_info(booster) if is_xgboost_booster(booster) else None
        self.leaves: np.ndarray | None = None
        if self.trees is not None:
            tr = self.trees
            n_trees = tr.start.size - 1
            small = tr.paths.shape[1] < np.iinfo(np.int16).max
            leaves = np.zeros((X.shape[0], n_trees), dtype=np.int16 if small else np.int32)
            _over_rows(X.shape[0], lambda lo, hi: _tree_leaves(
                lo, hi, X, tr.start, tr.feature, tr.threshold, tr.decision, tr.left, tr.right,
                tr.strict, leaves))
            self.leaves = leaves

    def _codes(self, j: int) -> np.ndarray | None:
        """Per-row code of column *j*.

        Rows with equal codes are indistinguishable to the model on this column
        (None: the model never looks at it).
        """
        if self.xgb is not None:
            thresholds, categorical = self.xgb
            if j in categorical:
                return _value_codes(self.X[:, j])
            if j not in thresholds:
                return None
            return _xgb_codes(self.X[:, j], thresholds[j])
        if self.trees is None:
            return _value_codes(self.X[:, j])
        ts = self.trees.threshold[self.trees.feature == j]
        if ts.size == 0:
            return None
        return _lgb_codes(self.X[:, j], np.unique(ts))

    def for_columns(self, cols: Sequence[int]) -> Callable[[np.ndarray], np.ndarray]:
        """Return a function ``perm -> sorted indices of the rows to re-predict``."""
        X, tr = self.X, self.trees
        codes = [c for c in (self._codes(j) for j in cols) if c is not None]
        cols_arr = np.asarray(cols, dtype=np.int64)
        tree_ids = first = None
        if tr is not None and codes:
            tree_ids = np.unique(np.concatenate(
                [tr.trees_of.get(j, np.zeros(0, dtype=np.int64)) for j in cols]))
            first = tr.first_nodes(cols, tree_ids)

        def changed_rows(perm: np.ndarray) -> np.ndarray:
            if not codes:
                return np.zeros(0, dtype=np.int64)
            changed = codes[0][perm] != codes[0]
            for c in codes[1:]:
                changed |= c[perm] != c
            idx = np.flatnonzero(changed)
            if idx.size and tr is not None:
                new_vals = np.ascontiguousarray(X[perm[idx][:, None], cols_arr[None, :]],
                                                dtype=np.float64)
                moved = np.empty(idx.size, dtype=np.bool_)
                with _KERNEL_LOCK:  # numba's workqueue layer is not re-entrant across threads
                    _lgb_leaf_changed(X, idx, new_vals, cols_arr, tree_ids, first, tr.start,
                                      tr.feature, tr.threshold, tr.decision, tr.left, tr.right,
                                      self.leaves, moved)
                idx = idx[moved]
            return idx

        return changed_rows


_MIN_ROWS_PER_THREAD = 4096
# rescore(perms, split_rows=True, cut=None) -> (scores, counts, below), see
# _ExactRescorer.for_columns
_Rescore = Callable[..., tuple[np.ndarray, np.ndarray, np.ndarray]]
_POOL: ThreadPoolExecutor | None = None
_POOL_LOCK = threading.Lock()


def _thread_pool(n_threads: int) -> ThreadPoolExecutor:
    """Return a shared pool of at least ``n_threads - 1`` workers (the caller is one more)."""
    global _POOL
    with _POOL_LOCK:
        if _POOL is None or _POOL._max_workers < n_threads - 1:
            if _POOL is not None:
                _POOL.shutdown(wait=False)
            _POOL = ThreadPoolExecutor(max_workers=max(1, n_threads - 1),
                                       thread_name_prefix="ltr-rescore")
        return _POOL


def _over_rows(n: int, run: Callable[[int, int], Any]) -> list[Any]:
    """Call ``run(lo, hi)`` over row ranges covering ``0..n``, split over plain threads.

    The kernels are serial and release the GIL; the ranges go to
    ``numba.get_num_threads()`` threads (the caller is one of them), which
    sleep while they wait: numba's parallel loops spin at their barrier, which
    on a busy machine costs more than the work itself (and compiles slower).
    """
    n_parts = min(numba.get_num_threads(), max(1, n // _MIN_ROWS_PER_THREAD))
    if n_parts == 1:
        return [run(0, n)]
    bounds = np.linspace(0, n, n_parts + 1).astype(np.int64)
    pool = _thread_pool(n_parts)
    futures = [pool.submit(run, int(bounds[p]), int(bounds[p + 1])) for p in range(1, n_parts)]
    first = run(0, int(bounds[1]))
    return [first, *(f.result() for f in futures)]


def _node_extremes(tr: FlatTrees, count: int) -> tuple[np.ndarray, np.ndarray]:
    """Return the largest and smallest leaf value under each node of trees ``0 .. count - 1``.

    Indexed like ``tr.start`` (node ``p`` of tree ``t`` is ``tr.start[t] + p``); a node is
    above exactly the leaves whose root-to-leaf path holds it.
    """
    paths = tr.paths[:count]
    tree, leaf, _ = np.nonzero(paths >= 0)
    node = tr.start[tree] + paths[paths >= 0]
    value = tr.leaf_value[tr.leaf_start[tree] + leaf].astype(np.float64)
    top = np.full(int(tr.start[count]), -np.inf)
    bottom = np.full(int(tr.start[count]), np.inf)
    np.maximum.at(top, node, value)
    np.minimum.at(bottom, node, value)
    return top, bottom


def _leaf_dtype(n_leaves: int) -> Any:
    for dtype in (np.uint8, np.uint16):
        if n_leaves <= np.iinfo(dtype).max + 1:
            return dtype
    return np.int32


class _ExactRescorer:
    """Exact scores of permuted rows from cached leaves (LightGBM and XGBoost numerical trees).

    Usable (``ok``) when the trees parse and re-summing every row's cached leaf
    values in the engine's order reproduces *base_scores* bitwise (the sum of
    every tree, or of the trees up to the booster's best iteration); otherwise
    the caller falls back to :class:`_ChangeDetector` and the engine's predict.
    """

    def __init__(self, X: np.ndarray, booster: Any, base_scores: np.ndarray) -> None:
        self.X = X
        self.base_scores = base_scores
        self.ok = False
        self.reason = ""
        trees: FlatTrees | None = None
        counts: list[int] = []
        if is_lightgbm_booster(booster):
            trees = parse_lightgbm_trees(booster, num_iteration=-1)
            best = int(getattr(booster, "best_iteration", 0) or 0)
            counts = [best] if best > 0 else []
        elif is_xgboost_booster(booster):
            trees = parse_xgboost_trees(booster)
            best_round = getattr(booster, "best_iteration", None)
            per_round = max(1, booster.num_boosted_rounds()) if trees is not None else 1
            if best_round is not None and trees is not None:
                counts = [(int(best_round) + 1) * (trees.n_trees // per_round)]
        if trees is None:
            self.reason = ("categorical splits" if has_categorical_splits(booster)
                           else "linear trees, dart, or several outputs")
            return
        counts = [trees.n_trees] + [c for c in counts if 0 < c < trees.n_trees]
        self.trees = trees
        max_leaves = int(np.max(np.diff(trees.leaf_start))) if trees.n_trees else 1
        self.leaves = np.zeros((X.shape[0], trees.n_trees), dtype=_leaf_dtype(max_leaves))
        leaves = self.leaves
        self.W, self.nodes, self.all_thresholds = _coded(X, trees)
        nodes = self.nodes
        self._cache_leaves(trees.n_trees)
        init = self._init()
        sums = np.empty(X.shape[0])
        for count in counts:

            def leaf_sums(lo: int, hi: int, count: int = count) -> None:
                _leaf_sums(lo, hi, leaves, count, trees.leaf_start, trees.leaf_value, init, sums)

            _over_rows(X.shape[0], leaf_sums)
            if np.array_equal(sums, base_scores):
                if count != trees.n_trees:  # the ranges cover only the trees that count
                    self._cache_leaves(count)
                self.n_trees = count
                # What the engine's rounding can add to a sum of these trees: recursive
                # summation of n + 1 terms errs by at most about n * eps * sum |term|
                # (float32: eps = 6e-8, 100 trees: 6e-6), doubled (the baseline's and the new
                # sum's) and doubled again for safety.
                # (Also the scale of the headroom's steps, and the leaves' extremes under
                # every node, which bound the scores a walk from there can reach.)
                values = np.abs(trees.leaf_value.astype(np.float64))
                self.leaf_scale = (float(np.sum(np.maximum.reduceat(values,
                                                                    trees.leaf_start[:count])))
                                   if count else 0.0)
                eps = float(np.finfo(np.float32 if trees.strict else np.float64).eps) / 2
                self.margin = 4 * (count + 1) * eps * (abs(float(init)) + self.leaf_scale)
                self.top, self.bottom = _node_extremes(trees, count)
                # jmask[f]: the missing flags that some node on f sends the default way
                end = int(trees.start[count])
                internal = (trees.left[:end] != 0) | (trees.right[:end] != 0)
                self.jmask = np.zeros(X.shape[1], dtype=np.int64)
                np.bitwise_or.at(self.jmask, nodes[:end, 0][internal] & _FEATURE_BITS,
                                 (nodes[:end, 0][internal] >> 28) & 3)
                self.ok = True
                return
        self.reason = "the model's predictions are not the plain sum of its trees"

    def _cache_leaves(self, n_ranged: int) -> None:
        """Every row's leaf in every tree, and its code ranges over the first *n_ranged* trees.

        ``self.ranges[0][self.slot[f]]`` and ``self.ranges[1][...]`` bound, per
        row, the codes of feature ``f`` that keep all of the row's paths (see
        :func:`ltr.kernels._tree_rescore._code_leaves_ranges`).
        """
        W, nodes, leaves, start = self.W, self.nodes, self.leaves, self.trees.start
        used = np.asarray(sorted(self.all_thresholds), dtype=np.int64)
        self.slot = np.full(W.shape[1], used.size, dtype=np.int64)
        self.slot[used] = np.arange(used.size)
        lo = np.empty((used.size, W.shape[0]), dtype=W.dtype)
        hi = np.empty_like(lo)
        self.ranges = lo, hi
        slot = self.slot
        _over_rows(W.shape[0], lambda a, b: _code_leaves_ranges(a, b, W, start, nodes, n_ranged,
                                                                slot, leaves, lo, hi))

    def prepare_cut(self) -> None:
        """Cache how far each row's score can rise or fall when one feature changes (for ``cut``).

        ``self.head[0, self.slot[f], i] * self.step`` bounds the rise of row
        ``i``'s score for any value of feature ``f``, ``self.head[1, ...]`` its
        fall (see :func:`ltr.kernels._tree_rescore._headroom`); 4 bytes a row and
        feature.
        """
        if getattr(self, "head", None) is not None:
            return
        tr, count = self.trees, self.n_trees
        self.step = max(2.0 * self.leaf_scale, 1e-300) / 65000.0  # every move fits below 65535
        head = np.empty((2, self.ranges[0].shape[0] + 1, self.X.shape[0]), dtype=np.uint16)
        leaves, slot = self.leaves, self.slot
        _over_rows(self.X.shape[0], lambda lo, hi: _headroom(
            lo, hi, leaves, count, tr.paths, tr.start, self.nodes, slot, tr.leaf_start,
            tr.leaf_value, self.top, self.bottom, self.step, head))
        self.head = head

    def ranked(self, offsets: np.ndarray) -> np.ndarray:
        """Each query's rows by baseline score, highest first (cached for one *offsets*)."""
        cached = getattr(self, "_ranked", None)
        if cached is not None and cached[0] is offsets:
            return cached[1]
        qcode = np.repeat(np.arange(len(offsets) - 1), np.diff(offsets))
        order = np.lexsort((-self.base_scores, qcode))
        self._ranked = (offsets, order)
        return order

    def _init(self) -> Any:
        tr = self.trees
        return np.float32(tr.init) if tr.strict else np.float64(tr.init)

    def work_estimate(self, cols: Sequence[int]) -> int:
        """Trees that split on *cols*: a rough cost of rescoring them (for scheduling)."""
        return sum(int(self.trees.trees_of.get(int(j), np.zeros(0)).size) for j in cols)

    def thresholds(self, j: int) -> np.ndarray:
        """Sorted distinct thresholds of column *j* in the trees that count."""
        tr = self.trees
        end = int(tr.start[self.n_trees])
        return np.unique(tr.threshold[:end][tr.feature[:end] == j])

    def codes(self, j: int) -> np.ndarray | None:
        """Threshold code per row of column *j* (None: no used tree splits on it).

        Rows with equal codes take the same branch at every split on the column
        (code ``m`` goes left at the ``m``-th smallest threshold and beyond);
        NaN and zero get the codes -1 and -2.
        """
        ts = self.thresholds(j)
        if ts.size == 0:
            return None
        col = self.X[:, j]
        return (_xgb_codes(col, ts.astype(np.float32)) if self.trees.strict
                else _lgb_codes(col, ts))

    def for_columns(self, cols: Sequence[int]) -> _Rescore | None:
        """Return ``rescore(perms, split_rows=True, cut=None) -> (scores, counts, below)``.

        None: *cols* unused.  For every row permutation ``perms[r]`` (an int64
        array of shape ``(n_repeats, n_rows)``), ``scores[r]`` is the baseline
        scores with the exact score of every row whose leaf changes when *cols*
        take the values of row ``perms[r, i]``, and ``counts[r]`` the number of
        those rows; with ``split_rows`` the rows are split over threads.  With
        ``cut=(offsets, k)`` (one column only), a changed row whose score
        provably stays below its query's k-th score instead gets a score that
        does (so nDCG@k and any shorter cut-off are those of the exact scores);
        ``below[r]`` counts those rows, which ``counts`` leaves out.
        """
        tr = self.trees
        if len(cols) == 1:
            return self._for_column(int(cols[0]))
        pairs = [(j, c) for j, c in ((j, self.codes(j)) for j in cols) if c is not None]
        if not pairs:
            return None
        used = np.asarray([j for j, _ in pairs], dtype=np.int64)
        codes = np.ascontiguousarray(np.stack([c for _, c in pairs]).astype(np.int32))
        col_values = np.ascontiguousarray(self.X[:, used].T, dtype=np.float64)
        tree_ids = np.unique(np.concatenate(
            [tr.trees_of.get(int(j), np.zeros(0, dtype=np.int64)) for j in used]))
        tree_ids = tree_ids[tree_ids < self.n_trees]
        first = tr.first_nodes(list(used), tree_ids)
        if len(used) == 1:
            code_lo, code_hi = tr.code_bounds(int(used[0]), tree_ids, self.thresholds(int(used[0])))
        else:
            code_lo = code_hi = np.zeros((0, 0), dtype=np.int32)
        leaf_start = tr.leaf_start[: self.n_trees + 1]
        init = self._init()
        X, leaves = self.X, self.leaves

        def rescore_rows(perm: np.ndarray, scores: np.ndarray, lo: int, hi: int) -> int:
            return int(_permuted_scores(
                lo, hi, X, perm, used, col_values, codes, tree_ids, first, code_lo, code_hi,
                tr.start, tr.feature, tr.threshold, tr.decision, tr.left, tr.right, tr.strict,
                leaves, leaf_start, tr.leaf_value, init, scores))

        def rescore(perms: np.ndarray, split_rows: bool = True,
                    cut: tuple[np.ndarray, int] | None = None,
                    ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
            scores = np.repeat(self.base_scores[None, :], perms.shape[0], axis=0)
            counts = np.zeros(perms.shape[0], dtype=np.int64)
            for r, (perm, out) in enumerate(zip(perms, scores)):
                if split_rows:
                    run = functools.partial(rescore_rows, perm, out)
                    counts[r] = sum(_over_rows(X.shape[0], run))
                else:
                    counts[r] = rescore_rows(perm, out, 0, X.shape[0])
            return scores, counts, np.zeros_like(counts)  # no cut for a group of columns

        return rescore

    def _for_column(self, j: int) -> _Rescore | None:
        """``for_columns([j])``, on the integer codes (branch-free walks)."""
        tr = self.trees
        tree_ids = tr.trees_of.get(j, np.zeros(0, dtype=np.int64))
        tree_ids = tree_ids[tree_ids < self.n_trees]
        if tree_ids.size == 0:
            return None
        shape = (tree_ids.size, tr.paths.shape[1])
        first, escape = np.empty(shape, dtype=np.int32), np.empty(shape, dtype=np.int32)
        pack = np.empty(shape, dtype=np.int64)
        up = np.empty((2, *shape))
        leaf_start = tr.leaf_start[: self.n_trees + 1]
        _column_paths(j, tree_ids, tr.paths, tr.start, self.nodes, leaf_start, tr.leaf_value,
                      self.top, first, escape, pack, up)
        jmask = int(self.jmask[j])
        wcol = np.ascontiguousarray(self.W[:, j])
        init = self._init()
        W, nodes, leaves, margin = self.W, self.nodes, self.leaves, self.margin
        lo_j, hi_j = self.ranges[0][self.slot[j]], self.ranges[1][self.slot[j]]
        base = self.base_scores

        def rescore_rows(perms: np.ndarray, scores: np.ndarray, offsets: np.ndarray,
                         cut: np.ndarray, head: np.ndarray, step: float, lo: int,
                         hi: int) -> np.ndarray:
            counts = np.zeros((2, perms.shape[0]), dtype=np.int64)
            _rescore_column(lo, hi, W, perms, j, wcol, jmask, lo_j, hi_j, tree_ids, first, escape,
                            pack, up, tr.start, nodes, leaves, leaf_start, tr.leaf_value, init,
                            offsets, cut, head, step, margin, scores, counts)
            return counts

        def rescore(perms: np.ndarray, split_rows: bool = True,
                    cut: tuple[np.ndarray, int] | None = None,
                    ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
            scores = np.repeat(base[None, :], perms.shape[0], axis=0)
            kth = np.zeros((0, 0))
            offsets = np.zeros(2, dtype=np.int64)
            head, step = np.zeros(0, dtype=np.uint16), 1.0
            if cut is not None:
                self.prepare_cut()
                head, fall, step = self.head[0, self.slot[j]], self.head[1, self.slot[j]], self.step
                offsets, k = cut
                n_queries = len(offsets) - 1
                kth = np.empty((perms.shape[0], n_queries))

                ranked = self.ranked(offsets)

                def cut_queries(lo: int, hi: int) -> None:
                    _kth_floor(lo, hi, offsets, ranked, perms, wcol, jmask, lo_j, hi_j, base,
                               fall, step, margin, k, kth)

                if split_rows:
                    _over_rows(n_queries, cut_queries)
                else:
                    cut_queries(0, n_queries)
            if split_rows:
                parts = _over_rows(W.shape[0], lambda lo, hi: rescore_rows(
                    perms, scores, offsets, kth, head, step, lo, hi))
                counts = np.sum(parts, axis=0)
            else:
                counts = rescore_rows(perms, scores, offsets, kth, head, step, 0, W.shape[0])
            return scores, counts[0], counts[1]

        return rescore

"""LightGBM tree walks over flat node arrays (numba, no validation).

Used by :mod:`ltr.inspection` to find the rows whose leaf changes when a
column is permuted; the trees are parsed by :mod:`ltr.engines._trees`.  Trees
are flat arrays: node ``k`` of tree ``t`` is ``start[t] + k``; ``left``/``right``
>= 0 are internal nodes, < 0 is ``~leaf``.
"""

from __future__ import annotations

import numpy as np
from numba import njit, prange

from ltr.kernels._tree_predict import _next_node  # the split rule, written once


@njit(cache=True, inline="always")
def _lgb_walk(X, i, cols, vals, base, node, feature, threshold, decision, left, right):
    """Walk one tree from ``node`` for row ``i`` of ``X``, columns ``cols`` set to ``vals``.

    As LightGBM's ``NumericalDecision`` (:func:`ltr.kernels._tree_predict._next_node`).
    Returns ``(leaf, first)``: the leaf and the first visited node splitting on
    one of ``cols`` (-1 if none).
    """
    first = -1
    while True:
        k = base + node
        f = feature[k]
        found = False
        v = 0.0
        for c in range(cols.shape[0]):
            if cols[c] == f:
                v = vals[c]
                found = True
                break
        if found and first < 0:
            first = node
        if not found:
            v = np.float64(X[i, f])
        nxt = _next_node(v, k, decision, threshold, left, right, False)
        if nxt < 0:
            return ~nxt, first
        node = nxt


@njit(cache=True, parallel=True)
def _lgb_leaves(X, trees, start, feature, threshold, decision, left, right, out):
    """``out[i, t]``: leaf of row ``i`` in tree ``trees[t]`` (LightGBM ``pred_leaf``)."""
    none = np.empty(0, dtype=np.int64)
    vals = np.empty(0)
    for i in prange(X.shape[0]):
        for a in range(trees.shape[0]):
            t = trees[a]
            if start[t + 1] == start[t]:
                out[i, a] = 0  # a single-leaf tree
                continue
            leaf, _ = _lgb_walk(X, i, none, vals, start[t], 0, feature, threshold,
                                decision, left, right)
            out[i, a] = leaf


@njit(cache=True, parallel=True)
def _lgb_leaf_changed(X, rows, new_vals, cols, trees, first, start, feature, threshold, decision,
                      left, right, leaves, out):
    """Set ``out[r]``: does row ``rows[r]`` with ``cols`` set to ``new_vals[r]`` change leaf.

    ``leaves[i, t]`` is the row's leaf in tree ``t``; ``first[a, leaf]`` the first node on
    its path that splits on ``cols``.  The path above that node does not depend on
    ``cols``, so each walk starts there; trees whose path never meets ``cols`` are skipped.
    """
    for r in prange(rows.shape[0]):
        i = rows[r]
        vals = new_vals[r]
        changed = False
        for a in range(trees.shape[0]):
            t = trees[a]
            leaf0 = leaves[i, t]
            node = first[a, leaf0]
            if node < 0:
                continue
            leaf, _ = _lgb_walk(X, i, cols, vals, start[t], node, feature, threshold, decision,
                                left, right)
            if leaf != leaf0:
                changed = True
                break
        out[r] = changed

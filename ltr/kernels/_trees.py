"""Which rows change leaf in a LightGBM tree when columns are permuted (numba, no validation).

Used by :mod:`ltr.inspection` when the model's predictions cannot be re-summed
from cached leaves (:mod:`ltr.kernels._tree_predict`, whose walk it shares); the
trees are parsed by :mod:`ltr.engines.trees`.  Trees are flat arrays: node ``k``
of tree ``t`` is ``start[t] + k``; ``left``/``right`` >= 0 are internal nodes,
< 0 is ``~leaf``.
"""

from __future__ import annotations

from numba import njit, prange

from ltr.kernels._tree_predict import _walk  # the engines' tree walk, written once


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
            leaf = _walk(X, i, cols, vals, start[t], node, feature, threshold, decision, left,
                         right, False)
            if leaf != leaf0:
                changed = True
                break
        out[r] = changed

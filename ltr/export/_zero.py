"""LightGBM's zero-as-missing splits rewritten as plain splits (no format has the rule).

LightGBM's missing type Zero sends NaN and every ``|v| <= 1e-35`` the default
way, whatever the threshold says.  Where the threshold already sends that band
the default way the split is kept; otherwise the node becomes three plain
splits on the same feature, with the child subtrees copied:

* default right, band left by the threshold (``bound >= 1e-35``):
  ``v < -1e-35`` -> left; else ``v <= 1e-35`` (NaN too) -> right; else
  ``v <= bound`` -> left, else right;
* default left, band right by the threshold (``bound < -1e-35``):
  ``v <= bound`` -> left; else ``v < -1e-35`` -> right; else ``v <= 1e-35``
  (NaN too) -> left, else right.

Node numbers of a rewritten tree are new (pre-order).
"""

from __future__ import annotations

import dataclasses
from typing import TYPE_CHECKING, Any

import numpy as np

if TYPE_CHECKING:
    from ltr.export._ir import Ensemble

__all__ = ["K_ZERO", "expand_zero_missing"]

K_ZERO = float(np.float32(1e-35))  # LightGBM kZeroThreshold (a float widened to double)

_BELOW = float(np.nextafter(-K_ZERO, -np.inf))  # v < -1e-35  <=>  v <= _BELOW


def _inconsistent(ens: Ensemble) -> np.ndarray:
    b = ens.bound
    with np.errstate(invalid="ignore"):
        ok = np.where(ens.default_left, K_ZERO <= b, -K_ZERO > b)
    return ens.zero_missing & ~ok


def expand_zero_missing(ens: Ensemble, max_nodes: int = 1 << 22) -> Ensemble:
    """Return *ens* with every inconsistent zero-as-missing split rewritten (module docstring)."""
    bad = _inconsistent(ens)
    if not bad.any():
        return ens
    tr = ens.trees
    feat: list[int] = []
    bound: list[float] = []
    nan_left: list[bool] = []
    left: list[int] = []
    right: list[int] = []
    thr: list[float] = []
    cats: dict[int, np.ndarray] = {}
    leaves: list[float] = []
    start = [0]
    leaf_start = [0]

    for t in range(ens.n_trees):
        base = int(tr.start[t])
        node0 = len(feat)
        lv = ens.leaves(t)

        def new(j: int, b: float, nl: bool, threshold: float) -> int:
            feat.append(j)
            bound.append(b)
            nan_left.append(nl)
            thr.append(threshold)
            left.append(0)
            right.append(0)
            if len(feat) > max_nodes:
                raise MemoryError("zero-as-missing rewrite grew past max_nodes")
            return len(feat) - 1

        def child(c: int, lv: np.ndarray = lv) -> int:
            if c < 0:
                leaves.append(float(lv[~c]))
                return ~(len(leaves) - 1 - leaf_start[-1])
            return emit(c)

        def link(n: int, a: int, b: int, node0: int = node0) -> int:
            left[n] = a if a < 0 else a - node0
            right[n] = b if b < 0 else b - node0
            return n

        def emit(k: int, base: int = base) -> int:
            f = base + k
            j = int(tr.feature[f])
            b = float(ens.bound[f])
            th = float(tr.threshold[f])
            lo, hi = int(tr.left[f]), int(tr.right[f])
            if not bad[f]:
                n = new(j, b, bool(ens.nan_left[f]), th)
                if f in ens.categories:
                    cats[n] = ens.categories[f]
                return link(n, child(lo), child(hi))
            if not ens.default_left[f]:  # band must go right, the threshold sends it left
                z1 = new(j, _BELOW, False, th)
                a = child(lo)
                z2 = new(j, K_ZERO, True, th)
                r = child(hi)
                z3 = new(j, b, False, th)
                link(z3, child(lo), child(hi))
                link(z2, r, z3)
                return link(z1, a, z2)
            z1 = new(j, b, False, th)  # band must go left, the threshold sends it right
            a = child(lo)
            z2 = new(j, _BELOW, False, th)
            r = child(hi)
            z3 = new(j, K_ZERO, True, th)
            link(z3, child(lo), child(hi))
            link(z2, r, z3)
            return link(z1, a, z2)

        if ens.is_single_leaf(t):
            leaves.append(float(lv[0]))
        else:
            emit(0)
        start.append(len(feat))
        leaf_start.append(len(leaves))

    n = len(feat)
    decision = np.where(np.asarray(nan_left, dtype=bool), 2, 0).astype(np.int8)
    trees: Any = dataclasses.replace(
        tr,
        start=np.asarray(start, dtype=np.int64),
        feature=np.asarray(feat, dtype=np.int32),
        threshold=np.asarray(thr, dtype=np.float64),
        decision=decision,
        left=np.asarray(left, dtype=np.int32),
        right=np.asarray(right, dtype=np.int32),
        trees_of={},
        paths=np.zeros((0, 0, 0), dtype=np.int32),
        leaf_start=np.asarray(leaf_start, dtype=np.int64),
        leaf_value=np.asarray(leaves, dtype=np.float64),
        categories=cats or None,
    )
    return dataclasses.replace(
        ens,
        trees=trees,
        bound=np.asarray(bound, dtype=np.float64),
        nan_left=np.asarray(nan_left, dtype=bool),
        zero_missing=np.zeros(n, dtype=bool),
        default_left=np.asarray(nan_left, dtype=bool),
        leaf_value=np.asarray(leaves, dtype=np.float64),
        categories=cats,
    )

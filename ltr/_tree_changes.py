"""Which rows can change prediction when columns are permuted (LightGBM and XGBoost trees).

Private helper of :mod:`ltr.inspection`: parses an engine's trees once and,
for a permuted column, returns the rows that reach another leaf (LightGBM) or
cross a split threshold (XGBoost); other rows keep their baseline score.
"""

from __future__ import annotations

import json
import sys
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from ltr.kernels._trees import _lgb_leaf_changed, _lgb_leaves


def _module_of(obj: Any) -> str:
    return type(obj).__module__ or ""


def _is_lgb_booster(obj: Any) -> bool:
    lgb = sys.modules.get("lightgbm")
    return lgb is not None and isinstance(obj, lgb.Booster)


def _is_xgb_booster(obj: Any) -> bool:
    xgb = sys.modules.get("xgboost")  # never import xgboost unless the model is one
    return xgb is not None and isinstance(obj, xgb.Booster)


# LightGBM treats |x| <= kZeroThreshold as zero (missing_type "Zero").
_LGB_ZERO = 1e-35
_KERNEL_LOCK = threading.Lock()


# ---- exact leaf check for LightGBM trees (numba, no validation) ----------- #
@dataclass
class _LgbTrees:
    """Numerical LightGBM trees as flat arrays (node ``k`` of tree ``t`` is ``start[t] + k``)."""

    start: np.ndarray  # int64 (n_trees + 1,)
    feature: np.ndarray  # int32
    threshold: np.ndarray  # float64
    decision: np.ndarray  # int8: bit 1 default-left, bits 2-3 missing type
    left: np.ndarray  # int32: >= 0 internal node, < 0 is ~leaf
    right: np.ndarray
    trees_of: dict[int, np.ndarray]  # feature -> int64 ids of the trees splitting on it
    paths: np.ndarray  # int32 (n_trees, max_leaves, max_depth): root->leaf nodes, -1 padded

    def first_nodes(self, cols: Sequence[int], tree_ids: np.ndarray) -> np.ndarray:
        """``out[a, leaf]``: first node on the root->leaf path of tree ``tree_ids[a]`` that
        splits on one of *cols* (-1 if none).  The path above it does not depend on *cols*."""
        paths = self.paths[tree_ids]  # (T, L, D)
        valid = paths >= 0
        nodes = np.where(valid, paths, 0) + self.start[tree_ids][:, None, None]
        hit = valid & np.isin(self.feature[nodes], np.asarray(cols))
        depth = np.argmax(hit, axis=2)
        first = np.take_along_axis(paths, depth[..., None], axis=2)[..., 0]
        return np.where(hit.any(axis=2), first, -1).astype(np.int32)


def _parse_lgb_trees(booster: Any) -> _LgbTrees | None:
    """Flat arrays from ``model_to_string`` (thresholds as LightGBM stores them, 17 digits).

    Returns None when a tree is linear or has categorical splits (the value-code
    check is used then)."""
    text = booster.model_to_string()
    end = text.find("end of trees")
    sections = text[:end if end >= 0 else len(text)].split("\nTree=")[1:]
    start = [0]
    feats, ths, decs, lefts, rights = [], [], [], [], []
    trees_of: dict[int, list[int]] = {}
    paths_of: list[dict[int, list[int]]] = []
    for t, sec in enumerate(sections):
        kv = {}
        for line in sec.splitlines()[1:]:
            key, sep, value = line.partition("=")
            if sep:
                kv[key.strip()] = value.strip()
        if kv.get("is_linear", "0") != "0" or int(kv.get("num_cat", "0")) > 0:
            return None
        if int(kv.get("num_leaves", "1")) < 2 or "split_feature" not in kv:
            start.append(start[-1])  # a single leaf: never changes
            paths_of.append({})
            continue
        f = np.array(kv["split_feature"].split(), dtype=np.int32)
        dec = np.array(kv["decision_type"].split(), dtype=np.int8)
        if np.any(dec & 1):
            return None
        feats.append(f)
        ths.append(np.array(kv["threshold"].split(), dtype=np.float64))
        decs.append(dec)
        lefts.append(np.array(kv["left_child"].split(), dtype=np.int32))
        rights.append(np.array(kv["right_child"].split(), dtype=np.int32))
        tree_paths: dict[int, list[int]] = {}
        stack: list[tuple[int, list[int]]] = [(0, [])]
        while stack:
            node, path = stack.pop()
            path = path + [node]
            for child in (lefts[-1][node], rights[-1][node]):
                if child < 0:
                    tree_paths[int(~child)] = path
                else:
                    stack.append((int(child), path))
        paths_of.append(tree_paths)
        start.append(start[-1] + len(f))
        for j in np.unique(f):
            trees_of.setdefault(int(j), []).append(t)

    def cat(parts: list[np.ndarray], dtype: Any) -> np.ndarray:
        return np.concatenate(parts).astype(dtype) if parts else np.zeros(0, dtype=dtype)

    max_leaves = max([len(p) for p in paths_of] + [1])
    max_depth = max([len(v) for p in paths_of for v in p.values()] + [1])
    paths = np.full((len(paths_of), max_leaves, max_depth), -1, dtype=np.int32)
    for t, tree_paths in enumerate(paths_of):
        for leaf, path in tree_paths.items():
            paths[t, leaf, : len(path)] = path
    return _LgbTrees(
        paths=paths,
        start=np.array(start, dtype=np.int64),
        feature=cat(feats, np.int32),
        threshold=cat(ths, np.float64),
        decision=cat(decs, np.int8),
        left=cat(lefts, np.int32),
        right=cat(rights, np.int32),
        trees_of={j: np.array(v, dtype=np.int64) for j, v in trees_of.items()},
    )




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


def _xgb_split_info(booster: Any) -> tuple[dict[int, np.ndarray], set[int]] | None:
    """Numerical split thresholds (float32) per feature and features with categorical
    splits of an XGBoost tree booster; None for other boosters (gblinear)."""
    model = json.loads(bytes(booster.save_raw(raw_format="json")))
    gb = model["learner"]["gradient_booster"]
    if gb.get("name") == "dart":
        gb = gb["gbtree"]
    if "model" not in gb or "trees" not in gb["model"]:
        return None
    thresholds: dict[int, list[np.ndarray]] = {}
    categorical: set[int] = set()
    for tree in gb["model"]["trees"]:
        left = np.asarray(tree["left_children"])
        internal = left >= 0
        feats = np.asarray(tree["split_indices"])[internal]
        conds = np.asarray(tree["split_conditions"], dtype=np.float32)[internal]
        kinds = np.asarray(tree.get("split_type", np.zeros(left.size)))[internal]
        categorical.update(int(j) for j in np.unique(feats[kinds != 0]))
        for j in np.unique(feats[kinds == 0]):
            thresholds.setdefault(int(j), []).append(conds[(feats == j) & (kinds == 0)])
    return {j: np.unique(np.concatenate(v)) for j, v in thresholds.items()}, categorical


def _xgb_codes(col: np.ndarray, thresholds: np.ndarray) -> np.ndarray:
    """Rows with equal codes take the same branch at every numerical XGBoost split on this
    column (``x < threshold`` in float32 goes left); NaN and 0 (a common ``missing``
    value) get codes of their own."""
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
        self.trees = _parse_lgb_trees(booster) if _is_lgb_booster(booster) else None
        self.xgb = _xgb_split_info(booster) if _is_xgb_booster(booster) else None
        self.leaves: np.ndarray | None = None
        if self.trees is not None:
            tr = self.trees
            n_trees = tr.start.size - 1
            small = tr.paths.shape[1] < np.iinfo(np.int16).max
            self.leaves = np.zeros((X.shape[0], n_trees), dtype=np.int16 if small else np.int32)
            _lgb_leaves(X, np.arange(n_trees, dtype=np.int64), tr.start, tr.feature,
                        tr.threshold, tr.decision, tr.left, tr.right, self.leaves)

    def _codes(self, j: int) -> np.ndarray | None:
        """Per-row code of column *j*: rows with equal codes are indistinguishable to the
        model on this column (None: the model never looks at it)."""
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
        """A function ``perm -> sorted indices of the rows to re-predict``."""
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

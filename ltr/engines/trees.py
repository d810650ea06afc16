"""The engines' tree structures, for permutation importance (no numba here).

Which booster a model holds; LightGBM's and XGBoost's numerical trees as flat
arrays with their leaf values (walked and summed by the numba kernels of
:mod:`ltr.kernels._trees` and :mod:`ltr.kernels._tree_predict`); XGBoost's
split thresholds per feature.  Engines are never imported here: a booster is
recognised only when its engine's module is already loaded.
"""

from __future__ import annotations

import json
import re
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

__all__ = [
    "FlatTrees",
    "LgbTrees",
    "find_booster",
    "has_categorical_splits",
    "is_lightgbm_booster",
    "is_xgboost_booster",
    "parse_lightgbm_trees",
    "parse_xgboost_trees",
    "xgboost_split_info",
]


def is_lightgbm_booster(obj: Any) -> bool:
    """Return True when *obj* is a ``lightgbm.Booster`` (without importing lightgbm)."""
    lgb = sys.modules.get("lightgbm")
    return lgb is not None and isinstance(obj, lgb.Booster)


def is_xgboost_booster(obj: Any) -> bool:
    """Return True when *obj* is an ``xgboost.Booster`` (without importing xgboost)."""
    xgb = sys.modules.get("xgboost")
    return xgb is not None and isinstance(obj, xgb.Booster)


def _is_booster(obj: Any) -> bool:
    return is_lightgbm_booster(obj) or is_xgboost_booster(obj)


def find_booster(model: Any) -> Any:
    """Return the LightGBM/XGBoost booster behind *model*, or None.

    Parameters
    ----------
    model : object
        A booster; ``LGBMRanker``/``LGBMRegressor`` (``booster_``);
        ``XGBRanker``/``XGBRegressor`` (``get_booster()``); or an ``ltr``
        model: :class:`ltr.engines.RankingModel` (``booster``) and the
        estimators (``booster_``, or ``model_`` holding one of these).

    Returns
    -------
    lightgbm.Booster, xgboost.Booster or None
    """
    if _is_booster(model):
        return model
    lgb = sys.modules.get("lightgbm")
    if lgb is not None and isinstance(model, (lgb.LGBMRanker, lgb.LGBMRegressor)):
        return model.booster_
    xgb = sys.modules.get("xgboost")
    if xgb is not None and isinstance(model, (xgb.XGBRanker, xgb.XGBRegressor)):
        return model.get_booster()
    if (type(model).__module__ or "").startswith("ltr."):
        for attr in ("booster", "booster_"):
            inner = getattr(model, attr, None)
            if _is_booster(inner):
                return inner
        inner = getattr(model, "model_", None)
        if inner is not None and inner is not model:
            return find_booster(inner)
    return None


@dataclass
class FlatTrees:
    """Numerical trees as flat arrays (node ``k`` of tree ``t`` is ``start[t] + k``).

    ``left``/``right`` >= 0 are internal nodes, < 0 is ``~leaf`` (leaves numbered
    ``0 .. n_leaves - 1`` per tree, as LightGBM's ``pred_leaf``).  A tree with a
    single leaf has no node (``start[t + 1] == start[t]``).  The leaf values of
    tree ``t`` are ``leaf_value[leaf_start[t]:leaf_start[t + 1]]``, stored as the
    engine stores them: float64 for LightGBM, float32 for XGBoost; ``init`` is
    what the engine's sum starts from (0.0, or XGBoost's float32 ``base_score``).
    ``strict`` selects XGBoost's decision rule (value cast to float32, NaN goes
    the default way, ``value < threshold`` goes left) over LightGBM's
    ``NumericalDecision`` (``decision`` bit 1 default-left, bits 2-3 missing
    type, ``value <= threshold`` goes left).
    """

    start: np.ndarray  # int64 (n_trees + 1,)
    feature: np.ndarray  # int32
    threshold: np.ndarray  # float64
    decision: np.ndarray  # int8: bit 1 default-left, bits 2-3 missing type
    left: np.ndarray  # int32: >= 0 internal node, < 0 is ~leaf
    right: np.ndarray
    trees_of: dict[int, np.ndarray]  # feature -> int64 ids of the trees splitting on it
    paths: np.ndarray  # int32 (n_trees, max_leaves, max_depth): root->leaf nodes, -1 padded
    leaf_start: np.ndarray  # int64 (n_trees + 1,)
    leaf_value: np.ndarray  # float64 (LightGBM) or float32 (XGBoost)
    init: float = 0.0
    strict: bool = False
    categories: dict[int, np.ndarray] | None = None  # flat node -> its category set
    categories_right: bool = False  # the sets go right (XGBoost), else left (LightGBM)

    @property
    def n_trees(self) -> int:
        """Number of trees."""
        return int(self.start.size - 1)

    def first_nodes(self, cols: Sequence[int], tree_ids: np.ndarray) -> np.ndarray:
        """Return ``out[a, leaf]``: the first node on the root->leaf path of ``tree_ids[a]``.

        The first node that splits on one of *cols* (-1 if none); the path
        above it does not depend on *cols*.
        """
        paths = self.paths[tree_ids]  # (T, L, D)
        valid = paths >= 0
        nodes = np.where(valid, paths, 0) + self.start[tree_ids][:, None, None]
        hit = valid & np.isin(self.feature[nodes], np.asarray(cols))
        depth = np.argmax(hit, axis=2)
        first = np.take_along_axis(paths, depth[..., None], axis=2)[..., 0]
        return np.where(hit.any(axis=2), first, -1).astype(np.int32)


    def _path_steps(self, j: int,
                    tree_ids: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """``(nodes, on, nxt)[a, leaf, depth]`` along each leaf's path in trees *tree_ids*.

        ``nodes``: the global node at each depth; ``on``: whether it splits on
        column *j*; ``nxt``: the node (or ``~leaf``) the path goes to next.
        """
        paths = self.paths[tree_ids]  # (T, L, D)
        valid = paths >= 0
        nodes = np.where(valid, paths, 0) + self.start[tree_ids][:, None, None]
        on = valid & (self.feature[nodes] == j)
        leaf = np.arange(paths.shape[1], dtype=np.int32)[None, :, None]
        nxt = np.concatenate([paths[..., 1:], np.full(paths.shape[:2] + (1,), -1, np.int32)],
                             axis=2)
        return nodes, on, np.where(nxt >= 0, nxt, ~leaf)

    def code_bounds(self, j: int, tree_ids: np.ndarray,
                    thresholds: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Return ``(lo, hi)[a, leaf]``: the codes of column *j* that keep the path to ``leaf``.

        A value's code is the number of *thresholds* (the sorted distinct
        thresholds of the column) it is above (LightGBM: ``value >
        threshold``; XGBoost: ``value >= threshold``), so it goes left at
        threshold ``m`` exactly when its code is ``<= m``.  NaN and values the
        engine may treat as missing are not covered (the caller walks them).
        """
        nodes, on, nxt = self._path_steps(j, tree_ids)
        went_left = self.left[nodes] == nxt
        m = np.searchsorted(thresholds, self.threshold[nodes]).astype(np.int32)
        big = np.iinfo(np.int32).max
        lo = np.where(on & ~went_left, m + 1, 0).max(axis=2, initial=0)
        hi = np.where(on & went_left, m, big).min(axis=2, initial=big)
        return lo.astype(np.int32), hi.astype(np.int32)


LgbTrees = FlatTrees  # the former name


def _root_leaf_paths(left: np.ndarray, right: np.ndarray) -> dict[int, list[int]]:
    """``leaf -> [root, ..., parent]`` node ids of one tree (children < 0 are ``~leaf``)."""
    out: dict[int, list[int]] = {}
    stack: list[tuple[int, list[int]]] = [(0, [])]
    while stack:
        node, path = stack.pop()
        path = path + [node]
        for child in (left[node], right[node]):
            if child < 0:
                out[int(~child)] = path
            else:
                stack.append((int(child), path))
    return out


def _assemble(parts: dict[str, list[np.ndarray]], paths_of: list[dict[int, list[int]]],
              trees_of: dict[int, list[int]], leaf_values: list[np.ndarray],
              value_dtype: Any, init: float, strict: bool) -> FlatTrees:
    def cat(key: str, dtype: Any) -> np.ndarray:
        return (np.concatenate(parts[key]).astype(dtype) if parts[key]
                else np.zeros(0, dtype=dtype))

    max_leaves = max([len(p) for p in paths_of] + [1])
    max_depth = max([len(v) for p in paths_of for v in p.values()] + [1])
    paths = np.full((len(paths_of), max_leaves, max_depth), -1, dtype=np.int32)
    for t, tree_paths in enumerate(paths_of):
        for leaf, path in tree_paths.items():
            paths[t, leaf, : len(path)] = path
    start = np.zeros(len(paths_of) + 1, dtype=np.int64)
    np.cumsum([len(f) for f in parts["feature"]], out=start[1:])
    leaf_start = np.zeros(len(leaf_values) + 1, dtype=np.int64)
    np.cumsum([len(v) for v in leaf_values], out=leaf_start[1:])
    return FlatTrees(
        paths=paths,
        start=start,
        feature=cat("feature", np.int32),
        threshold=cat("threshold", np.float64),
        decision=cat("decision", np.int8),
        left=cat("left", np.int32),
        right=cat("right", np.int32),
        trees_of={j: np.array(v, dtype=np.int64) for j, v in trees_of.items()},
        leaf_start=leaf_start,
        leaf_value=(np.concatenate(leaf_values).astype(value_dtype) if leaf_values
                    else np.zeros(0, dtype=value_dtype)),
        init=init,
        strict=strict,
    )


def parse_lightgbm_trees(booster: Any, num_iteration: int | None = None,
                         categorical: bool = False, paths: bool = True) -> FlatTrees | None:
    """Flat arrays from ``model_to_string`` (thresholds and leaf values as stored, 17 digits).

    Parameters
    ----------
    booster : lightgbm.Booster
    num_iteration : int, optional
        Passed to ``model_to_string`` (None: the best iteration if there is one;
        <= 0: every tree).
    categorical : bool, default=False
        Keep categorical splits (``decision`` bit 0 set) and return their
        left-going categories in ``categories`` (for :mod:`ltr.export`; the
        numba walks do not read them).
    paths : bool, default=True
        Build ``paths`` (root-to-leaf node lists); without them ``paths`` is
        empty and ``first_nodes``/``code_bounds`` are unusable (for export).

    Returns
    -------
    FlatTrees or None
        None when a tree is linear or has categorical splits, or the model has
        several trees per iteration or averages its trees (random forest).
    """
    text = booster.model_to_string(num_iteration=num_iteration)
    end = text.find("end of trees")
    head, *sections = text[:end if end >= 0 else len(text)].split("\nTree=")
    header = dict(line.partition("=")[::2] for line in head.splitlines())
    if header.get("num_tree_per_iteration", "1").strip() != "1" or "average_output" in header:
        return None
    parts: dict[str, list[np.ndarray]] = {k: [] for k in
                                          ("feature", "threshold", "decision", "left", "right")}
    trees_of: dict[int, list[int]] = {}
    paths_of: list[dict[int, list[int]]] = []
    leaf_values: list[np.ndarray] = []
    categories: dict[int, np.ndarray] = {}
    n_nodes = 0
    for t, sec in enumerate(sections):
        kv = {}
        for line in sec.splitlines()[1:]:
            key, sep, value = line.partition("=")
            if sep:
                kv[key.strip()] = value.strip()
        if kv.get("is_linear", "0") != "0" or (int(kv.get("num_cat", "0")) > 0
                                               and not categorical):
            return None
        leaf_values.append(np.array(kv.get("leaf_value", "0").split(), dtype=np.float64))
        if int(kv.get("num_leaves", "1")) < 2 or "split_feature" not in kv:
            leaf_values[-1] = leaf_values[-1][:1]  # a single leaf: never changes
            for part in parts.values():
                part.append(np.zeros(0))
            paths_of.append({})
            continue
        f = np.array(kv["split_feature"].split(), dtype=np.int32)
        dec = np.array(kv["decision_type"].split(), dtype=np.int8)
        if np.any(dec & 1):
            if not categorical:
                return None
            bounds = np.array(kv["cat_boundaries"].split(), dtype=np.int64)
            words = np.array(kv["cat_threshold"].split(), dtype=np.uint64)
            thr = np.array(kv["threshold"].split(), dtype=np.float64)
            for k in np.flatnonzero(dec & 1):
                w = words[bounds[int(thr[k])]: bounds[int(thr[k]) + 1]]
                bits = (w[:, None] >> np.arange(32, dtype=np.uint64)) & np.uint64(1)
                categories[n_nodes + int(k)] = np.flatnonzero(bits.reshape(-1)).astype(np.int64)
        n_nodes += f.size
        parts["feature"].append(f)
        parts["threshold"].append(np.array(kv["threshold"].split(), dtype=np.float64))
        parts["decision"].append(dec)
        parts["left"].append(np.array(kv["left_child"].split(), dtype=np.int32))
        parts["right"].append(np.array(kv["right_child"].split(), dtype=np.int32))
        paths_of.append(_root_leaf_paths(parts["left"][-1], parts["right"][-1]) if paths
                        else {})
        for j in np.unique(f):
            trees_of.setdefault(int(j), []).append(t)
    flat = _assemble(parts, paths_of, trees_of, leaf_values, np.float64, 0.0, strict=False)
    flat.categories = categories if categorical else None
    return flat


def parse_xgboost_trees(booster: Any, paths: bool = True,
                        categorical: bool = False) -> FlatTrees | None:
    """Flat arrays from XGBoost's JSON model (float32 thresholds and leaf values).

    Node ids stay XGBoost's (a leaf's own entry, feature -1, is never visited); leaves are
    numbered in node order.  ``init`` is the float32 ``base_score``.  ``paths``: as in
    :func:`parse_lightgbm_trees`.  ``categorical``: keep categorical splits, their
    categories (which go *right*, ``categories_right``) in ``categories`` (for export).

    Returns
    -------
    FlatTrees or None
        None for gblinear, dart, categorical splits, vector leaves or several
        outputs (the caller then falls back to the engine's predict).
    """
    model = json.loads(bytes(booster.save_raw(raw_format="json")))
    learner = model["learner"]
    gb = learner["gradient_booster"]
    if gb.get("name") != "gbtree" or "trees" not in gb.get("model", {}):
        return None
    param = learner.get("learner_model_param", {})
    if int(param.get("num_class", "0") or 0) > 1 or int(param.get("num_target", "1") or 1) > 1:
        return None
    base = str(param.get("base_score", "0.5")).strip("[] ").split(",")
    if len(base) != 1:
        return None
    parts: dict[str, list[np.ndarray]] = {k: [] for k in
                                          ("feature", "threshold", "decision", "left", "right")}
    trees_of: dict[int, list[int]] = {}
    paths_of: list[dict[int, list[int]]] = []
    leaf_values: list[np.ndarray] = []
    categories: dict[int, np.ndarray] = {}
    n_nodes = 0
    for t, tree in enumerate(gb["model"]["trees"]):
        if int(tree.get("tree_param", {}).get("size_leaf_vector", "1") or 1) > 1:
            return None
        left = np.asarray(tree["left_children"], dtype=np.int64)
        right = np.asarray(tree["right_children"], dtype=np.int64)
        cond = np.asarray(tree["split_conditions"], dtype=np.float32)
        kinds = np.asarray(tree.get("split_type", np.zeros(left.size)), dtype=np.int64)
        is_leaf = left < 0
        if np.any(kinds[~is_leaf] != 0):
            if not categorical:
                return None
            cats = np.asarray(tree["categories"], dtype=np.int64)
            for nid, beg, size in zip(tree["categories_nodes"], tree["categories_segments"],
                                      tree["categories_sizes"]):
                categories[n_nodes + int(nid)] = cats[int(beg): int(beg) + int(size)]
        if not is_leaf[0]:
            n_nodes += left.size
        leaf_id = np.cumsum(is_leaf) - 1
        leaf_values.append(cond[is_leaf])
        if is_leaf[0]:
            for part in parts.values():
                part.append(np.zeros(0))
            paths_of.append({})
            continue
        safe_l, safe_r = np.where(is_leaf, 0, left), np.where(is_leaf, 0, right)
        lchild = np.where(is_leaf[safe_l], ~leaf_id[safe_l], safe_l)
        rchild = np.where(is_leaf[safe_r], ~leaf_id[safe_r], safe_r)
        lchild[is_leaf] = rchild[is_leaf] = 0  # never visited
        feats = np.where(is_leaf, -1, np.asarray(tree["split_indices"], dtype=np.int64))
        default_left = np.asarray(tree["default_left"], dtype=np.int64) != 0
        parts["feature"].append(feats)
        parts["threshold"].append(cond.astype(np.float64))
        parts["decision"].append(np.where(default_left, 2, 0) | (2 << 2))  # NaN is missing
        parts["left"].append(lchild)
        parts["right"].append(rchild)
        paths_of.append(_root_leaf_paths(lchild, rchild) if paths else {})
        for j in np.unique(feats[~is_leaf]):
            trees_of.setdefault(int(j), []).append(t)
    flat = _assemble(parts, paths_of, trees_of, leaf_values, np.float32,
                     float(np.float32(base[0])), strict=True)
    flat.categories = categories if categorical else None
    flat.categories_right = True
    return flat


def has_categorical_splits(booster: Any) -> bool:
    """Return True when a LightGBM/XGBoost booster splits on categories anywhere."""
    if is_lightgbm_booster(booster):
        text = booster.model_to_string(num_iteration=-1)
        return re.search(r"^num_cat=[1-9]", text, flags=re.MULTILINE) is not None
    if is_xgboost_booster(booster):
        info = xgboost_split_info(booster)
        return bool(info is not None and info[1])
    return False


def xgboost_split_info(booster: Any) -> tuple[dict[int, np.ndarray], set[int]] | None:
    """Numerical split thresholds (float32) per feature, and the categorical features.

    Of an XGBoost tree booster; None for other boosters (gblinear).
    """
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

"""The engines' tree structures, for permutation importance (no numba here).

Which booster a model holds, LightGBM's numerical trees as flat arrays (walked
by the numba kernels of :mod:`ltr.kernels._trees`) and XGBoost's split
thresholds per feature.  Engines are never imported here: a booster is
recognised only when its engine's module is already loaded.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

__all__ = [
    "LgbTrees",
    "find_booster",
    "is_lightgbm_booster",
    "is_xgboost_booster",
    "parse_lightgbm_trees",
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
class LgbTrees:
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


def parse_lightgbm_trees(booster: Any) -> LgbTrees | None:
    """Flat arrays from ``model_to_string`` (thresholds as LightGBM stores them, 17 digits).

    Returns None when a tree is linear or has categorical splits (the value-code
    check is used then).
    """
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
    return LgbTrees(
        paths=paths,
        start=np.array(start, dtype=np.int64),
        feature=cat(feats, np.int32),
        threshold=cat(ths, np.float64),
        decision=cat(decs, np.int8),
        left=cat(lefts, np.int32),
        right=cat(rights, np.int32),
        trees_of={j: np.array(v, dtype=np.int64) for j, v in trees_of.items()},
    )


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

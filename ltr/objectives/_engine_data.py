"""What a custom ranking objective reads from the engines' training data.

:func:`engine_inputs` takes scores, labels, query offsets and row weights from
a ``lightgbm.Dataset`` or an ``xgboost.DMatrix`` (duck-typed: neither engine
is imported), and :func:`check_lightgbm_data` catches the two LightGBM
pitfalls a custom ranking objective meets (``bagging_by_query`` and
``lightgbm.cv`` folds that cut queries).  Used by :mod:`ltr.objectives`.
"""

from __future__ import annotations

import warnings
from typing import Any

import numpy as np

__all__ = ["check_lightgbm_data", "engine_inputs"]


def engine_inputs(preds: Any, data: Any) -> tuple[np.ndarray, Any, np.ndarray, np.ndarray | None]:
    """Scores, labels, offsets and per-row weights from a LightGBM Dataset or XGBoost DMatrix."""
    scores = np.ascontiguousarray(np.asarray(preds, dtype=np.float64).reshape(-1))
    n = scores.shape[0]
    if hasattr(data, "get_uint_info"):  # xgboost.DMatrix
        ptr = np.asarray(data.get_uint_info("group_ptr"), dtype=np.int64)
        if ptr.size < 2:
            raise ValueError("the XGBoost DMatrix has no query groups: set qid= or group= on it")
        offsets = ptr
        labels = data.get_label()
        w: np.ndarray | None = np.asarray(data.get_weight(), dtype=np.float64)
    elif hasattr(data, "get_group"):  # lightgbm.Dataset
        group = data.get_group()
        if group is None:
            raise ValueError(
                "the LightGBM Dataset has no query groups: set group= on it "
                "(lightgbm.Dataset(X, y, group=sizes)); with lightgbm.cv pass "
                "folds=GroupKFold(n).split(X, groups=qid), as LightGBM recognises ranking by "
                "objective name only and does not group custom-objective folds by query"
            )
        offsets = np.concatenate(([0], np.cumsum(np.asarray(group, dtype=np.int64))))
        labels = data.get_label()
        w = data.get_weight()
        w = None if w is None else np.asarray(w, dtype=np.float64)
    else:
        raise TypeError(
            "data must be a lightgbm.Dataset or an xgboost.DMatrix, "
            f"got {type(data).__name__}"
        )
    if w is not None and w.size == 0:
        w = None
    if w is not None and w.size != n:
        sizes = np.diff(offsets)
        if w.size == sizes.size:  # XGBoost ranking: one weight per query
            w = np.repeat(w, sizes)
        else:
            raise ValueError(f"weights have {w.size} entries but there are {n} rows")
    return scores, labels, offsets, w


def _truthy(value: Any) -> bool:
    if isinstance(value, str):
        return value.strip().lower() in ("true", "1", "yes", "+")
    return bool(value)


def _split_queries(data: Any) -> int | None:
    """First query of the full data that a LightGBM subset cuts, else None.

    ``lightgbm.cv(nfold=...)`` with a custom objective splits rows, not
    queries: each fold is ``full.subset(rows)`` and LightGBM regroups the kept
    rows of each query, so a query's documents end up in both the training
    and the validation fold.
    """
    used = getattr(data, "used_indices", None)
    full = getattr(data, "reference", None)
    if used is None or full is None or not hasattr(full, "get_group"):
        return None
    try:
        full_group = full.get_group()
    except Exception:  # noqa: BLE001  # pragma: no cover - LightGBMError: no reference data
        return None
    if full_group is None:
        return None
    sizes = np.asarray(full_group, dtype=np.int64)
    qid = np.repeat(np.arange(sizes.size), sizes)
    rows = np.asarray(used, dtype=np.int64)
    if rows.size and int(rows.max()) >= qid.size:  # pragma: no cover - foreign layout
        return None
    kept = np.bincount(qid[rows], minlength=sizes.size)
    cut = (kept > 0) & (kept < sizes)
    return int(np.flatnonzero(cut)[0]) if cut.any() else None


def check_lightgbm_data(data: Any) -> None:
    """Catch the two LightGBM pitfalls a custom ranking objective meets."""
    params = getattr(data, "params", None) or {}
    if any(_truthy(params.get(key)) for key in ("bagging_by_query",)):
        warnings.warn(
            "bagging_by_query=True with a custom objective: LightGBM bags by query only for "
            "its own ranking objectives, so the bagged rows break queries apart and the model "
            "stays (near-)constant. Drop bagging_by_query (plain bagging_fraction samples "
            "rows) or use objective='lambdarank'",
            UserWarning,
            stacklevel=4,
        )
    q = _split_queries(data)
    if q is not None:
        raise ValueError(
            f"the LightGBM Dataset is a subset that cuts query {q} of its full data (some "
            "of its rows are in, some out): lightgbm.cv(nfold=...) with a custom objective "
            "splits rows, not queries, because LightGBM recognises ranking by objective name "
            "only. Pass folds=GroupKFold(n).split(X, groups=qid) (or subsets of whole queries)"
        )

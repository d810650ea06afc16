"""Permutation importance's inputs, checked (model, X, features, k, seeds), and its permutations."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from numbers import Integral, Real
from typing import Any

import numpy as np

from ltr._compat import import_xgboost
from ltr._validation import (
    check_cutoffs,
    check_int,
    check_seed,
    short_repr,
)
from ltr.engines.trees import find_booster
from ltr.inspection._tree_changes import (
    _is_lgb_booster,
    _is_xgb_booster,
)


# --------------------------------------------------------------------------- #
# Models: how to predict and whether rows can be re-predicted alone
# --------------------------------------------------------------------------- #
def _find_booster(model: Any) -> Any:
    """Return the LightGBM/XGBoost booster behind *model*, or None (see ``find_booster``)."""
    return find_booster(model)


@dataclass
class _Model:
    predict: Callable[[Any], Any]
    booster: Any  # lightgbm/xgboost booster when predictions are row-independent, else None
    takes_frame: bool  # pass DataFrames (original column names) to predict


def _resolve_model(model: Any, frame_columns: Any, n_jobs: int | None) -> _Model:
    if _is_lgb_booster(model):
        return _Model(predict=lambda X: model.predict(X), booster=model, takes_frame=False)
    if _is_xgb_booster(model):
        xgb = import_xgboost()  # the model is an xgboost Booster, so xgboost is importable

        def _xgb_predict(X: Any) -> Any:
            return model.predict(xgb.DMatrix(X, nthread=-1 if n_jobs is None else n_jobs))

        return _Model(predict=_xgb_predict, booster=model, takes_frame=False)
    predict = getattr(model, "predict", None)
    if callable(predict):
        return _Model(predict=predict, booster=_find_booster(model),
                      takes_frame=frame_columns is not None)
    if callable(model):
        return _Model(predict=model, booster=None, takes_frame=frame_columns is not None)
    raise TypeError(
        "model must have a predict method, be a lightgbm/xgboost Booster or a callable "
        f"X -> scores; got {short_repr(model)} ({type(model).__name__})"
    )


# --------------------------------------------------------------------------- #
# Input handling
# --------------------------------------------------------------------------- #
def _check_k(k: Any) -> tuple[tuple[int, ...], bool]:
    """``(cut-offs, whether one int was given)`` by the one cut-off rule (no None here)."""
    if k is None:
        raise TypeError("k must be an int >= 1 or a non-empty list of them, got None")
    single = not isinstance(k, (list, tuple, np.ndarray))
    return tuple(int(v) for v in check_cutoffs(k) if v is not None), single


def _check_X(X: Any, feature_names: Sequence[str] | None) -> tuple[bool, list[Any] | None,
                                                                    list[str], int]:
    """``(is_frame, frame_columns, names, n_rows)`` after checking shape, dtype and names."""
    if hasattr(X, "iloc") and hasattr(X, "columns"):
        if X.ndim != 2:
            raise ValueError(f"X must be 2-D, got shape {X.shape}")
        columns = list(X.columns)
        names = [str(c) for c in columns]
        n_rows = X.shape[0]
    else:
        if X is None:
            raise TypeError("X must be a 2-D array or DataFrame, got None")
        arr = np.asarray(X)
        if arr.ndim != 2:
            raise ValueError(f"X must be 2-D (n_rows, n_features), got shape {arr.shape}")
        if arr.dtype == object or not (
            np.issubdtype(arr.dtype, np.number) or np.issubdtype(arr.dtype, np.bool_)
        ):
            raise TypeError(f"X must be numeric, got dtype {arr.dtype}")
        columns = None
        n_rows, n_cols = arr.shape
        if feature_names is not None:
            names = [str(name) for name in feature_names]
            if len(names) != n_cols:
                raise ValueError(f"feature_names has {len(names)} names but X has {n_cols} columns")
        else:
            names = [f"x{i}" for i in range(n_cols)]
    if n_rows == 0:
        raise ValueError("X is empty: at least one row is required")
    if len(set(names)) != len(names):
        raise ValueError(f"feature names must be unique, got {short_repr(names, 120)}")
    return columns is not None, columns, names, n_rows


def _check_max_queries(max_queries: Any, n_queries: int) -> int | None:
    """Return the number of queries to evaluate (None: all)."""
    if max_queries is None:
        return None
    if isinstance(max_queries, (bool, np.bool_)) or not isinstance(max_queries, Real):
        raise TypeError(f"max_queries must be an int or a float in (0, 1], got {max_queries!r}")
    if isinstance(max_queries, (Integral, np.integer)):
        count = check_int(max_queries, "max_queries", minimum=1)
        if count > n_queries:  # as scikit-learn's max_samples
            raise ValueError(
                f"max_queries={count} is more than the {n_queries} queries in the data; "
                f"pass max_queries <= {n_queries}, a fraction in (0, 1], or None for all"
            )
        return count
    if not 0.0 < float(max_queries) <= 1.0:
        raise ValueError(f"max_queries as a fraction must be in (0, 1], got {max_queries!r}")
    return max(1, int(float(max_queries) * n_queries))


def _check_random_state(random_state: Any) -> tuple[np.random.RandomState, int | None]:
    """``(rng, int seed for the record or None)``, as ``sklearn.utils.check_random_state``.

    An int goes through :func:`ltr._validation.check_seed` (the one seed rule).
    A ``RandomState`` (used as is) and ``None`` (numpy's global generator) do
    not: ``check_seed`` would draw a seed from them, and the numbers must stay
    those of scikit-learn's ``permutation_importance``, which draws its own
    ``rng.randint(np.iinfo(np.int32).max + 1)`` from the very generator.
    """
    if random_state is None:
        return np.random.mtrand._rand, None
    if isinstance(random_state, np.random.RandomState):
        return random_state, None
    if isinstance(random_state, Integral) and not isinstance(random_state, (bool, np.bool_)):
        seed = check_seed(random_state, "random_state")
        return np.random.RandomState(seed), seed
    raise TypeError(
        f"random_state must be an int, a RandomState or None, got {short_repr(random_state)}"
    )


def _resolve_features(
    features: Any, names: list[str]
) -> tuple[list[str], list[list[int]]]:
    n = len(names)
    index = {name: i for i, name in enumerate(names)}

    def col(item: Any, where: str) -> int:
        if isinstance(item, (Integral, np.integer)) and not isinstance(item, (bool, np.bool_)):
            i = int(item)
            if not -n <= i < n:
                raise ValueError(f"{where} is column index {i!r} but X has {n} columns")
            return i % n
        if isinstance(item, str):
            if item not in index:
                raise ValueError(
                    f"{where} names unknown feature {item!r}; known features: "
                    f"{short_repr(names, 120)}"
                )
            return index[item]
        raise TypeError(f"{where} must be a feature name or column index, got {short_repr(item)}")

    if features is None:
        return list(names), [[i] for i in range(n)]
    if isinstance(features, (str, Integral)):
        features = [features]
    if isinstance(features, Mapping):
        if len(features) == 0:
            raise ValueError("features must not be empty, got {}")
        out_names, out_cols = [], []
        for gname, members in features.items():
            if isinstance(members, (str, Integral)):
                members = [members]
            members = list(members)
            if not members:
                raise ValueError(f"features[{gname!r}] must list at least one column, got []")
            cols = [col(m, f"features[{gname!r}]") for m in members]
            out_names.append(str(gname))
            out_cols.append(sorted(set(cols)))
        return out_names, out_cols
    items = list(features)
    if not items:
        raise ValueError("features must not be empty, got []")
    cols = [col(item, "features") for item in items]
    return [names[c] for c in cols], [[c] for c in cols]


def _prepare_ndcg_options(
    opts: dict[str, Any], n_rows: int, rows: np.ndarray | None, n_queries: int,
    queries: np.ndarray | None,
) -> dict[str, Any]:
    """Reorder/subset the array options to the evaluated queries.

    ``weights`` has one entry per query (in order of first appearance), ``doc_ids`` one per row.
    """
    for bad in ("qid", "group", "offsets", "y_true", "y_score", "reduce"):
        if bad in opts:
            raise TypeError(f"{bad} is not an nDCG option of permutation_importance")
    out = dict(opts)
    w = out.get("weights")
    if w is not None:
        w = np.asarray(w)
        if w.ndim != 1 or len(w) != n_queries:
            raise ValueError(
                f"weights must hold one weight per query ({n_queries}), got shape {w.shape}"
            )
        out["weights"] = w if queries is None else w[queries]
    d = out.get("doc_ids")
    if d is not None:
        d = np.asarray(d)
        if d.ndim != 1 or len(d) != n_rows:
            raise ValueError(f"doc_ids must hold one id per row ({n_rows}), got shape {d.shape}")
        out["doc_ids"] = d if rows is None else d[rows]
    return out


# --------------------------------------------------------------------------- #
# Permutations
# --------------------------------------------------------------------------- #
def _global_permutations(n: int, n_repeats: int, seed: int) -> list[np.ndarray]:
    """Return scikit-learn's global permutations, exactly.

    One index array is shuffled in place per repeat and applied to the already-permuted
    column, so repeat ``r`` reads ``col[s_1[s_2[...s_r]]]``.
    """
    rs = np.random.RandomState(seed)
    shuffling_idx = np.arange(n)
    current = np.arange(n)
    perms = []
    for _ in range(n_repeats):
        rs.shuffle(shuffling_idx)
        current = current[shuffling_idx]
        perms.append(current)
    return perms


def _within_query_permutations(offsets: np.ndarray, n_repeats: int, seed: int) -> list[np.ndarray]:
    rs = np.random.RandomState(seed)
    n = int(offsets[-1])
    qcode = np.repeat(np.arange(len(offsets) - 1), np.diff(offsets))
    perms = []
    for _ in range(n_repeats):
        keys = rs.random_sample(n)
        perms.append(np.lexsort((keys, qcode)).astype(np.int64))
    return perms

"""What both rankers share: query ids from metadata or a column, labels, positions, codings."""

from __future__ import annotations

from typing import Any

import numpy as np

from ltr._frames import check_qid_length, is_dataframe, take_column
from ltr._propensities import check_row_propensities
from ltr._validation import (
    check_1d_float,
)
from ltr.categorical import CategoricalCoding, frame_categorical_columns
from ltr.groups import take_rows

__all__: list[str] = []


def _missing_qid_message(owner: str, qid_column: Any, X: Any) -> str:
    if qid_column is None:
        col = "qid_column is not set"
    elif not is_dataframe(X):
        col = f"qid_column={qid_column!r} is set but X is not a pandas DataFrame"
    else:
        col = f"X has no column {qid_column!r}"
    return (
        f"{owner} needs query ids and got none. Pass them either "
        "(1) as metadata: fit(X, y, qid=qid) -- inside GridSearchCV/cross_validate enable "
        "routing with sklearn.set_config(enable_metadata_routing=True) and pass qid=qid to the "
        "search's fit (the ranker requests it; set_fit_request(qid=True) states it), or "
        "(2) as a column: give X as a pandas DataFrame with a query-id column and set "
        f"qid_column='<column name>' (it is not used as a feature); here {col}."
    )


def _get_qid(
    owner: str, X: Any, qid: Any, qid_column: Any, *, required: bool = True
) -> tuple[Any, Any]:
    """Split ``(X, qid)`` from the argument or the ``qid_column`` of a DataFrame X."""
    X, column_qid = take_column(X, qid_column, drop=True)
    if qid is not None and column_qid is not None:
        raise ValueError(
            f"{owner} got qid twice: as the qid argument and as column {qid_column!r} of X; "
            "pass only one"
        )
    if qid is None:
        qid = column_qid
    if qid is None and required:
        raise ValueError(_missing_qid_message(owner, qid_column, X))
    return X, qid


def _n_rows(X: Any) -> int:
    shape = getattr(X, "shape", None)
    return int(shape[0]) if shape is not None else len(X)


def _check_qid_rows(qid: Any, n_rows: int, name: str = "qid") -> np.ndarray:
    arr = np.asarray(qid)
    check_qid_length(arr, n_rows, name)
    return arr


def _numeric_labels(y: Any, name: str) -> np.ndarray:
    """Text/object *y* as float64, or a ``ValueError`` naming *name* and the first non-number.

    Numeric (and complex, refused later by ``validate_data``) arrays pass unchanged.
    """
    arr = np.asarray(y)
    if arr.dtype.kind not in "OUS":  # numbers, or complex/other: validate_data's own errors
        return arr
    try:
        return arr.astype(np.float64)
    except (TypeError, ValueError):
        flat = arr.ravel()
        for i, value in enumerate(flat):
            try:
                float(value)
            except (TypeError, ValueError):
                where = f"{name}[{i}]" if arr.ndim == 1 else f"{name} (flat index {i})"
                value = value.item() if isinstance(value, np.generic) else value
                raise ValueError(
                    f"{name} must hold numeric relevance labels (graded, e.g. 0..4); "
                    f"{where} = {value!r} is not a number. Map words to grades first, "
                    "e.g. {'bad': 0, 'fair': 1, 'good': 2}"
                ) from None
        raise  # pragma: no cover - astype failed but every element converts


def _positions_in_order(position: Any, n_rows: int, order: np.ndarray | None) -> np.ndarray:
    """Display ranks, one per row, re-ordered with the rows (*order*: the query sort)."""
    position = check_1d_float(position, "position")
    if len(position) != n_rows:
        raise ValueError(
            f"position has {len(position)} entries but X has {n_rows} rows; pass one display "
            "rank per row"
        )
    return np.ascontiguousarray(take_rows(position, order))


def _row_propensities(propensity: Any, n_rows: int, order: np.ndarray | None,
                      position: np.ndarray | None, n_queries: int, table_given: bool) -> np.ndarray:
    """``fit(propensity=...)`` checked and in training-row order (one query: as a table)."""
    if table_given:
        raise ValueError(
            "propensity is given twice: per position to LambdaMARTRanker(propensity=...) "
            "and per row to fit(propensity=...); give one of them"
        )
    p = np.ascontiguousarray(
        take_rows(check_row_propensities(propensity, "propensity", n_rows), order)
    )
    if n_queries == 1 and position is not None:
        # one query: the objective reads n values as a per-position table (the one rule,
        # ltr._propensities.propensity_per_row), so hand it that table
        pos = position.astype(np.int64)
        if np.array_equal(np.sort(pos), np.arange(1, n_rows + 1)):
            table = np.empty(n_rows)
            table[pos - 1] = p
            return table
    return p


def _fit_coding(X: Any) -> CategoricalCoding | None:
    """Fit the coding of a DataFrame's ``category`` columns (None without any)."""
    columns = frame_categorical_columns(X)
    return CategoricalCoding.fit(X, columns) if columns else None


def _encode_frame(coding: CategoricalCoding | None, X: Any) -> Any:
    """*X* with its categorical columns coded, a DataFrame kept a DataFrame (its names)."""
    if coding is None:
        return X
    import pandas as pd

    if not hasattr(X, "columns"):
        raise TypeError(
            "the model was fitted on a DataFrame with categorical columns "
            f"{list(coding.names)!r}; pass a DataFrame with the same columns"
        )
    return pd.DataFrame(coding.encode(X), columns=X.columns, index=X.index)

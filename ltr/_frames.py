"""Row inputs of the scikit-learn layer: pandas-or-array checks, the query-id column, label columns.

Shared by :mod:`ltr.estimator` and :mod:`ltr.scoring` (public names, so no
private name crosses a module boundary).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np

from ltr.groups import find_split_query, offsets_from_qid

__all__ = [
    "check_qid_length",
    "contiguous_offsets",
    "is_dataframe",
    "is_multilabel",
    "label_columns",
    "take_column",
]


def is_dataframe(X: Any) -> bool:
    """Whether *X* looks like a pandas DataFrame (``columns`` and ``iloc``)."""
    return hasattr(X, "columns") and hasattr(X, "iloc")


def is_multilabel(y: Any) -> bool:
    """Whether *y* holds several label columns (a DataFrame or a 2-D array)."""
    return is_dataframe(y) or np.asarray(y).ndim == 2


def check_qid_length(qid: np.ndarray, n_rows: int, name: str = "qid") -> None:
    """Raise ``ValueError`` unless *qid* is 1-D with one entry per row."""
    if qid.ndim != 1:
        raise ValueError(f"{name} must be 1-D (one query id per row), got shape {qid.shape}")
    if len(qid) != n_rows:
        raise ValueError(
            f"{name} has {len(qid)} entries but X has {n_rows} rows; pass one query id per row"
        )


def take_column(X: Any, column: Any, *, drop: bool) -> tuple[Any, Any]:
    """Return ``(X without the column if drop, the column's values or None)``.

    ``None`` when *column* is ``None``, *X* is not a DataFrame or lacks it.
    """
    if column is None or not is_dataframe(X) or column not in X.columns:
        return X, None
    values = X[column].to_numpy()
    if drop:
        X = X.drop(columns=[column])
    return X, values


def contiguous_offsets(qid: Any, n_rows: int) -> np.ndarray:
    """int64 query offsets of *qid*, which must hold each query's rows together.

    Raises ``ValueError`` naming the query and both rows when a query's rows are
    split, which is what a row-wise cross-validation splitter does.
    """
    arr = np.asarray(qid)
    check_qid_length(arr, n_rows)
    split = find_split_query(arr)
    if split is not None:
        key, first, again = split
        raise ValueError(
            f"qid is not contiguous in the rows given to the scorer: query {key!r} "
            f"appears at row {first} and again at row {again} after other queries. "
            "Scoring it would treat parts of one query as separate queries. In "
            "cross-validation this means the splitter cut queries apart: split by query "
            "(GroupKFold / GroupShuffleSplit with groups=qid); otherwise sort the rows "
            "by qid before scoring."
        )
    return offsets_from_qid(arr).offsets


def label_columns(
    y: Any, objectives: Mapping[str, float], name: str = "y"
) -> dict[str, np.ndarray]:
    """Split a 2-D label array / DataFrame into one float64 column per objective.

    A DataFrame must have a column named after each objective; a 2-D array must
    have one column per objective, in the order of the ``objectives`` mapping.
    """
    names = list(objectives)
    if is_dataframe(y):
        missing = [n for n in names if n not in y.columns]
        if missing:
            raise ValueError(
                f"{name} is a DataFrame without label column(s) {missing!r} for objectives "
                f"{names!r}; its columns are {list(y.columns)!r}"
            )
        return {n: np.asarray(y[n], dtype=np.float64) for n in names}
    arr = np.asarray(y, dtype=np.float64)
    if arr.ndim != 2 or arr.shape[1] != len(names):
        raise ValueError(
            f"{name} must hold one label column per objective {names!r} (shape (n_rows, "
            f"{len(names)})), got shape {arr.shape}"
        )
    return {n: np.ascontiguousarray(arr[:, i]) for i, n in enumerate(names)}

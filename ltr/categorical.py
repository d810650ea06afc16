"""Categorical features: one coding per training, stored in the model (:class:`CategoricalCoding`).

A categorical column holds category values (numbers, or any hashable values in
a DataFrame, such as pandas ``category`` columns of strings).  The engines
train on integer codes: :meth:`CategoricalCoding.fit` numbers the categories
seen in the training set ``0..n-1`` (in sorted order, or in a pandas
``category`` dtype's own order), and :meth:`CategoricalCoding.encode` maps any
table through that same coding.  A missing value (NaN/None) and a category
never seen in training both become NaN, which LightGBM and XGBoost both treat
as *missing* (LightGBM's own rule for unseen codes; XGBoost 3 would instead
route an unseen code by its category partition, so the coding makes it
explicit); :meth:`CategoricalCoding.encode` counts the rows that had an unseen
category.  The coding is plain data (:meth:`to_dict` / :meth:`from_dict`), so
it travels inside :class:`ltr.engines.RankingModel`'s saved file.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from numbers import Integral, Real
from typing import Any

import numpy as np

from ltr._validation import check_matrix, is_sparse, short_repr

__all__ = ["CategoricalCoding", "frame_categorical_columns", "resolve_categorical_columns"]

#: Codes must stay exact in float32 (XGBoost's internal type) and in LightGBM's int32.
_MAX_CATEGORIES = 1 << 24


def _key(value: Any) -> Any:
    """One hashable key per category value: integral numbers as int (3 == 3.0), text as is."""
    if isinstance(value, (bool, np.bool_)):
        return int(value)
    if isinstance(value, (Integral, np.integer)):
        return int(value)
    if isinstance(value, (Real, np.floating)):
        f = float(value)
        return int(f) if f.is_integer() else f
    if isinstance(value, np.str_):
        return str(value)
    return value


def _is_missing(value: Any) -> bool:
    import pandas as pd

    try:
        return bool(pd.isna(value))
    except (TypeError, ValueError):  # pragma: no cover - array-like values
        return False


def _is_frame(X: Any) -> bool:
    return hasattr(X, "iloc") and hasattr(X, "columns")


def frame_categorical_columns(X: Any) -> list[str]:
    """Names of the pandas ``category``-dtype columns of *X* (``[]`` for other inputs)."""
    if not _is_frame(X):
        return []
    out = []
    for name, dtype in X.dtypes.items():
        if str(dtype) == "category":
            out.append(str(name))
    return out


def resolve_categorical_columns(
    columns: Any, names: Sequence[str] | None, n_features: int, where: str = "categorical"
) -> tuple[int, ...]:
    """Column indices of *columns* (names or 0-based indices), checked.

    Parameters
    ----------
    columns : sequence of str or int
        The categorical columns.
    names : sequence of str or None
        The feature names (needed when *columns* holds names).
    n_features : int
        Number of columns of ``X``.
    where : str
        How the argument is called in error messages (``"categorical"``,
        ``"data.categorical"``).

    Returns
    -------
    tuple of int
        Sorted, distinct indices.
    """
    if isinstance(columns, (str, bytes)) or not isinstance(columns, Sequence):
        raise TypeError(
            f"{where} must be a list of column names or indices, got {short_repr(columns)}"
        )
    index = {str(n): j for j, n in enumerate(names)} if names is not None else {}
    out: list[int] = []
    for item in columns:
        if isinstance(item, (Integral, np.integer)) and not isinstance(item, (bool, np.bool_)):
            j = int(item)
            if not 0 <= j < n_features:
                raise ValueError(
                    f"{where} names column {j}, but X has {n_features} columns "
                    f"(0..{n_features - 1})"
                )
        elif isinstance(item, str):
            if item not in index:
                known = short_repr(list(index), 120) if index else "none (X has no names)"
                raise ValueError(
                    f"{where} names column {item!r}, which is not a feature; the features are "
                    f"{known}"
                )
            j = index[item]
        else:
            raise TypeError(f"{where} entries must be column names or indices, got {item!r}")
        if j in out:
            raise ValueError(f"{where} lists column {item!r} twice")
        out.append(j)
    return tuple(sorted(out))


def _column(X: Any, j: int) -> np.ndarray:
    """Column *j* of *X* as a 1-D array (object for frames' non-numeric columns)."""
    if _is_frame(X):
        col = X.iloc[:, j]
        if str(col.dtype) == "category":
            return np.asarray(col.astype(object))
        return np.asarray(col)
    return np.asarray(X)[:, j]


def _factorize(values: np.ndarray) -> tuple[np.ndarray, list[Any]]:
    """``(inverse, uniques)`` with inverse -1 for missing values."""
    import pandas as pd

    inverse, uniques = pd.factorize(values, use_na_sentinel=True)
    return np.asarray(inverse, dtype=np.int64), list(uniques)


@dataclass(frozen=True)
class CategoricalCoding:
    """The category -> code mapping of a training, per categorical column.

    Attributes
    ----------
    columns : tuple of int
        Indices of the categorical columns in ``X``.
    names : tuple of str
        Their names (``"x{j}"`` when ``X`` had none).
    categories : tuple of tuple
        Per column, the training set's categories; category ``c`` of column
        ``i`` gets code ``categories[i].index(c)``.

    Examples
    --------
    >>> import numpy as np
    >>> X = np.array([[0.5, 30.0], [1.5, 10.0], [2.5, 30.0]])
    >>> coding = CategoricalCoding.fit(X, [1])
    >>> coding.categories
    ((10, 30),)
    >>> codes, unseen = coding.encode(np.array([[0.0, 30.0], [1.0, 20.0]]), count_unseen=True)
    >>> codes.tolist(), unseen
    ([[0.0, 1.0], [1.0, nan]], 1)
    """

    columns: tuple[int, ...]
    names: tuple[str, ...]
    categories: tuple[tuple[Any, ...], ...]

    @classmethod
    def fit(
        cls, X: Any, columns: Any, feature_names: Sequence[str] | None = None
    ) -> CategoricalCoding:
        """Fit the coding: number the categories of *columns* seen in *X* (the training set).

        Parameters
        ----------
        X : array-like or DataFrame of shape (n_rows, n_features)
            Training features; categorical columns may hold any hashable
            values in a DataFrame (numbers in an array).
        columns : sequence of str or int
            The categorical columns, by name or index.
        feature_names : sequence of str, optional
            Column names of an array *X* (a DataFrame's own columns otherwise).

        Returns
        -------
        CategoricalCoding
        """
        if is_sparse(X):
            X = X.toarray()
        names = _names_of(X, feature_names)
        n_features = len(names) if names is not None else int(np.shape(X)[1])
        idx = resolve_categorical_columns(columns, names, n_features)
        cats: list[tuple[Any, ...]] = []
        for j in idx:
            inverse, uniques = _factorize(_column(X, j))
            del inverse
            keys = {_key(u) for u in uniques if not _is_missing(u)}
            ordered = _dtype_order(X, j)
            if ordered is not None:
                values = tuple(_key(c) for c in ordered if _key(c) in keys)
            else:
                try:
                    values = tuple(sorted(keys))
                except TypeError:  # mixed types: order by their text
                    values = tuple(sorted(keys, key=lambda v: (type(v).__name__, str(v))))
            if len(values) >= _MAX_CATEGORIES:
                raise ValueError(
                    f"categorical column {_label(names, j)!r} has {len(values)} categories; at "
                    f"most {_MAX_CATEGORIES - 1} are supported"
                )
            cats.append(values)
        col_names = tuple(names[j] if names is not None else f"x{j}" for j in idx)
        return cls(idx, col_names, tuple(cats))

    @property
    def n_categories(self) -> dict[str, int]:
        """Categories per column name."""
        return {n: len(c) for n, c in zip(self.names, self.categories)}

    def encode(self, X: Any, *, count_unseen: bool = False) -> Any:
        """Map *X* through the coding: codes in the categorical columns, NaN for missing/unseen.

        Parameters
        ----------
        X : array-like or DataFrame of shape (n_rows, n_features)
            Raw features, the same columns as the training set.
        count_unseen : bool, default=False
            Also return the number of rows with at least one category not
            seen in training (mapped to missing).

        Returns
        -------
        ndarray of float32 or float64, shape (n_rows, n_features)
            The other columns unchanged (as checked by the package's numeric
            matrix rule); with *count_unseen* a ``(codes, n_unseen_rows)`` pair.
        """
        if _is_frame(X):
            n_cols = X.shape[1]
        else:
            if is_sparse(X):  # category codes are dense by nature
                X = X.toarray()
            X = np.asarray(X)
            if X.ndim != 2:
                raise ValueError(f"X must be 2-D (n_rows, n_features), got shape {X.shape}")
            n_cols = X.shape[1]
        if self.columns and max(self.columns) >= n_cols:
            raise ValueError(
                f"X has {n_cols} columns but the categorical coding names column "
                f"{max(self.columns)} ({self.names[-1]!r})"
            )
        cat = set(self.columns)
        numeric_cols = [j for j in range(n_cols) if j not in cat]
        dtype = np.float64
        if not _is_frame(X) and X.dtype == np.float32:
            dtype = np.float32
        out = np.empty((X.shape[0], n_cols), dtype=dtype)
        if numeric_cols:
            part = X.iloc[:, numeric_cols] if _is_frame(X) else X[:, numeric_cols]
            out[:, numeric_cols] = check_matrix(part, "X")
        unseen = np.zeros(X.shape[0], dtype=bool)
        for j, values in zip(self.columns, self.categories):
            inverse, uniques = _factorize(_column(X, j))
            lookup = {v: float(i) for i, v in enumerate(values)}
            lut = np.empty(len(uniques) + 1, dtype=np.float64)
            new = np.zeros(len(uniques) + 1, dtype=bool)
            for u, value in enumerate(uniques):
                code = lookup.get(_key(value))
                if code is None:
                    lut[u] = np.nan
                    new[u] = not _is_missing(value)
                else:
                    lut[u] = code
            lut[-1] = np.nan  # inverse -1: missing
            out[:, j] = lut[inverse]
            unseen |= new[inverse]
        if count_unseen:
            return out, int(unseen.sum())
        return out

    def to_dict(self) -> dict[str, Any]:
        """Plain JSON-able data (:meth:`from_dict` reads it back)."""
        return {
            "columns": list(self.columns),
            "names": list(self.names),
            "categories": [list(c) for c in self.categories],
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> CategoricalCoding:
        """Rebuild a coding written by :meth:`to_dict`."""
        try:
            columns = tuple(int(j) for j in data["columns"])
            names = tuple(str(n) for n in data["names"])
            cats = tuple(tuple(_key(v) for v in c) for c in data["categories"])
        except (KeyError, TypeError, ValueError) as exc:
            raise ValueError(f"not a categorical coding: {short_repr(data)} ({exc})") from exc
        if not len(columns) == len(names) == len(cats):
            raise ValueError(f"not a categorical coding (lengths differ): {short_repr(data)}")
        return cls(columns, names, cats)


def _names_of(X: Any, feature_names: Sequence[str] | None) -> list[str] | None:
    if _is_frame(X):
        return [str(c) for c in X.columns]
    return None if feature_names is None else [str(n) for n in feature_names]


def _label(names: Sequence[str] | None, j: int) -> str:
    return names[j] if names is not None else f"x{j}"


def _dtype_order(X: Any, j: int) -> list[Any] | None:
    """Return a pandas ``category`` column's own category order, else None."""
    if not _is_frame(X):
        return None
    col = X.iloc[:, j]
    if str(col.dtype) != "category":
        return None
    return list(col.cat.categories)

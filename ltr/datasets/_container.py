"""The ranking data container, :class:`RankingData`, and helpers the loaders share."""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar

import numpy as np

from ltr._validation import check_1d_float, check_finite, check_same_length, short_repr
from ltr.groups import resolve_groups

if TYPE_CHECKING:  # pragma: no cover
    import pandas as pd

__all__ = ["RankingData"]

_FLOAT_DTYPES = (np.dtype(np.float32), np.dtype(np.float64))
#: The per-row fields of a logged ranking (kept through subsets).
LOGGED_FIELDS = ("position", "click", "doc", "propensity")


# ---------------------------------------------------------------------------
# Container
# ---------------------------------------------------------------------------


@dataclass(frozen=True, eq=False)
class RankingData:
    """Learning-to-rank data with contiguous queries.

    Instances are validated at construction and immutable (use
    :func:`dataclasses.replace` to derive a modified copy, which re-validates).

    Parameters
    ----------
    X : ndarray of shape (n_rows, n_features)
        Dense features, ``float32`` or ``float64`` (integer/bool input is
        converted to ``float64``).  NaN is allowed (missing value).
    y : array-like of shape (n_rows,)
        Graded relevance labels, stored as ``float64``; must be finite.
    qid : array-like of int, shape (n_rows,)
        Integer query id of each row, stored as ``int64``.  The rows of one
        query must be contiguous.
    feature_names : list of str, optional
        One unique name per column; defaults to ``["f1", ..., "fN"]``.
    labels : dict of str to ndarray, optional
        Extra label columns (for example one graded label per objective),
        each of shape (n_rows,), stored as ``float64``.  May be empty.
    segments : ndarray of shape (n_rows,), optional
        Category of each row (for example a per-query market or surface),
        used to break metrics down by segment.
    position, click, doc, propensity : ndarray of shape (n_rows,), optional
        The logged ranking, for unbiased training and click metrics: the
        display position of each row (1 = top), its click (0/1), its
        document id (one query-document pair across the lists that show it)
        and its known examination propensity (e.g. a cascade estimate per
        impression); stored as ``float64``, must be finite.  Kept through
        :meth:`subset`.

    Raises
    ------
    ValueError
        If shapes or lengths disagree, labels are not finite, feature names are
        duplicated, or ``qid`` is not contiguous; the message names the field.
    TypeError
        If a field has the wrong type (non-numeric ``X``, non-integer ``qid``).
    """

    X: np.ndarray
    y: np.ndarray
    qid: np.ndarray
    feature_names: list[str] = None  # type: ignore[assignment]  # filled in __post_init__
    labels: dict[str, np.ndarray] = field(default_factory=dict)
    segments: np.ndarray | None = None
    position: np.ndarray | None = None
    click: np.ndarray | None = None
    doc: np.ndarray | None = None
    propensity: np.ndarray | None = None
    # Set in __post_init__; a ClassVar annotation keeps it out of dataclasses.fields().
    _offsets: ClassVar[np.ndarray]

    def __post_init__(self) -> None:
        """Validate the fields and store them in canonical dtypes."""
        X = np.asarray(self.X)
        if X.ndim != 2:
            raise ValueError(f"X must be 2-D with shape (n_rows, n_features), got shape {X.shape}")
        if X.dtype not in _FLOAT_DTYPES:
            if X.dtype.kind in "biuf":
                X = X.astype(np.float64)
            else:
                raise TypeError(f"X must hold numbers, got dtype {X.dtype}")
        n_rows, n_features = X.shape
        if n_rows == 0:
            raise ValueError("X has no rows: RankingData needs at least one row")

        y = check_1d_float(self.y, "y")
        check_same_length(n_rows, y, "y", "X")
        check_finite(y, "y")

        qid = _as_int_qid(self.qid, "qid")
        check_same_length(n_rows, qid, "qid", "X")
        offsets = resolve_groups(n_rows, qid=qid).offsets

        if self.feature_names is None:
            names = [f"f{j + 1}" for j in range(n_features)]
        else:
            if isinstance(self.feature_names, str) or not isinstance(self.feature_names, Sequence):
                raise TypeError(
                    f"feature_names must be a list of str, got {short_repr(self.feature_names)}"
                )
            names = list(self.feature_names)
            if len(names) != n_features:
                raise ValueError(
                    f"feature_names has {len(names)} entries but X has {n_features} columns; "
                    "they must match"
                )
            for j, name in enumerate(names):
                if not isinstance(name, str):
                    raise TypeError(f"feature_names[{j}] must be a str, got {name!r}")
            if len(set(names)) != len(names):
                seen: set[str] = set()
                dup = next(n for n in names if n in seen or seen.add(n))  # type: ignore[func-returns-value]
                raise ValueError(f"feature_names must be unique; {dup!r} appears more than once")

        if self.labels is None:
            labels: dict[str, np.ndarray] = {}
        elif not isinstance(self.labels, Mapping):
            raise TypeError(
                "labels must be a dict mapping names to label columns, "
                f"got {short_repr(self.labels)}"
            )
        else:
            labels = {}
            for key, values in self.labels.items():
                if not isinstance(key, str) or not key:
                    raise TypeError(f"labels keys must be non-empty str, got {key!r}")
                column = check_1d_float(values, f"labels[{key!r}]")
                check_same_length(n_rows, column, f"labels[{key!r}]", "X")
                check_finite(column, f"labels[{key!r}]")
                labels[key] = column

        segments = self.segments
        if segments is not None:
            segments = np.asarray(segments)
            if segments.ndim != 1:
                raise ValueError(
                    f"segments must be 1-D (one category per row), got shape {segments.shape}"
                )
            check_same_length(n_rows, segments, "segments", "X")

        set_ = object.__setattr__
        for name in LOGGED_FIELDS:
            values = getattr(self, name)
            if values is not None:
                values = check_1d_float(values, name)
                check_same_length(n_rows, values, name, "X")
                check_finite(values, name)
                set_(self, name, values)
        set_(self, "X", X)
        set_(self, "y", y)
        set_(self, "qid", qid)
        set_(self, "feature_names", names)
        set_(self, "labels", labels)
        set_(self, "segments", segments)
        set_(self, "_offsets", offsets)

    # -- shape ------------------------------------------------------------
    @property
    def offsets(self) -> np.ndarray:
        """Row boundaries of the queries, ``int64`` of shape (n_queries + 1,)."""
        return self._offsets

    @property
    def n_queries(self) -> int:
        """Number of queries."""
        return len(self._offsets) - 1

    @property
    def n_rows(self) -> int:
        """Number of rows (documents)."""
        return int(self.X.shape[0])

    @property
    def n_features(self) -> int:
        """Number of feature columns."""
        return int(self.X.shape[1])

    @property
    def group(self) -> np.ndarray:
        """Rows per query (LightGBM ``group``), ``int64`` of shape (n_queries,)."""
        return np.diff(self._offsets)

    def __repr__(self) -> str:
        """Summary with sizes, not the arrays."""
        extra = f", labels={sorted(self.labels)}" if self.labels else ""
        if self.segments is not None:
            extra += f", segments={len(np.unique(self.segments))} categories"
        return (
            f"RankingData(n_rows={self.n_rows}, n_queries={self.n_queries}, "
            f"n_features={self.n_features}, X.dtype={self.X.dtype}{extra})"
        )

    # -- derived data --------------------------------------------------------
    def subset(self, query_indices: Any) -> RankingData:
        """Keep whole queries, in the order given.

        Parameters
        ----------
        query_indices : array-like of int or bool
            Positions of the queries to keep (``0 <= i < n_queries``, no
            repeats), or a boolean mask of shape (n_queries,).

        Returns
        -------
        RankingData
            A new instance (copies of the selected rows) with the same feature
            names and label columns; query ids are kept.
        """
        idx = np.asarray(query_indices)
        if idx.ndim != 1:
            raise ValueError(f"query_indices must be 1-D, got shape {idx.shape}")
        if idx.dtype == bool:
            if idx.shape[0] != self.n_queries:
                raise ValueError(
                    f"a boolean query_indices mask must have n_queries={self.n_queries} entries, "
                    f"got {idx.shape[0]}"
                )
            idx = np.flatnonzero(idx)
        if idx.size == 0:
            raise ValueError("query_indices is empty: select at least one query")
        if idx.dtype.kind not in "iu":
            raise TypeError(f"query_indices must hold integers, got dtype {idx.dtype}")
        idx = idx.astype(np.int64)
        bad = (idx < 0) | (idx >= self.n_queries)
        if bad.any():
            raise ValueError(
                f"query_indices must be in [0, {self.n_queries}), got {int(idx[bad][0])}"
            )
        if np.unique(idx).size != idx.size:
            values, counts = np.unique(idx, return_counts=True)
            raise ValueError(
                f"query_indices must not repeat a query; query {int(values[counts > 1][0])} "
                "is selected more than once"
            )
        rows = _rows_of_queries(self._offsets, idx)
        return RankingData(
            X=self.X[rows],
            y=self.y[rows],
            qid=self.qid[rows],
            feature_names=list(self.feature_names),
            labels={k: v[rows] for k, v in self.labels.items()},
            segments=None if self.segments is None else self.segments[rows],
            **{
                name: getattr(self, name)[rows]
                for name in LOGGED_FIELDS
                if getattr(self, name) is not None
            },
        )

    def to_frame(self) -> pd.DataFrame:
        """Return a pandas DataFrame.

        Columns: ``qid``, ``label``, one ``label_<name>`` per entry of
        :attr:`labels`, ``segment`` (when present), then the features under
        their names.  ``from_frame(df, labels={name: "label_" + name, ...},
        segment="segment")`` reads it back.
        """
        import pandas as pd

        meta: dict[str, np.ndarray] = {"qid": self.qid, "label": self.y}
        for key, values in self.labels.items():
            meta[f"label_{key}"] = values
        if self.segments is not None:
            meta["segment"] = self.segments
        clash = sorted(set(meta) & set(self.feature_names))
        if clash:
            raise ValueError(
                f"feature names {clash} clash with the label/qid/segment columns of to_frame(); "
                "rename the features first"
            )
        return pd.concat(
            [pd.DataFrame(meta), pd.DataFrame(self.X, columns=self.feature_names, copy=False)],
            axis=1,
        )


def _as_int_qid(values: Any, name: str) -> np.ndarray:
    arr = np.asarray(values)
    if arr.ndim != 1:
        raise ValueError(f"{name} must be 1-D (one query id per row), got shape {arr.shape}")
    if arr.dtype.kind in "iu":
        return arr.astype(np.int64, copy=False)
    if arr.dtype.kind == "f" and np.all(np.isfinite(arr)) and np.all(arr == np.round(arr)):
        return arr.astype(np.int64)
    raise TypeError(
        f"{name} must hold integer query ids, got dtype {arr.dtype} ({short_repr(values)}); "
        "map other ids to integers first (from_frame does this for string ids)"
    )


def _rows_of_queries(offsets: np.ndarray, idx: np.ndarray) -> np.ndarray:
    """Row indices of queries ``idx`` (whole queries, in that order)."""
    starts = offsets[idx]
    sizes = offsets[idx + 1] - starts
    first_out = np.cumsum(sizes) - sizes
    return np.arange(int(sizes.sum()), dtype=np.int64) + np.repeat(starts - first_out, sizes)


def _existing_file(path: Any, name: str) -> Path:
    try:
        p = Path(os.fspath(path))
    except TypeError as exc:
        raise TypeError(f"{name} must be a str or path-like, got {short_repr(path)}") from exc
    if not p.is_file():
        raise FileNotFoundError(f"{name} {str(p)!r} does not exist or is not a file")
    return p

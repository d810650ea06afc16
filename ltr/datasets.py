"""Ranking data: one container and loaders for LETOR/LibSVM and pandas.

:class:`RankingData` holds a dense feature matrix, graded labels and one
integer query id per row with the rows of each query contiguous, so that
``data.offsets`` (``int64``, length ``n_queries + 1``) is what every other
module consumes.  It is filled by

* :func:`load_letor` -- LibSVM/LETOR text files, with ``qid:`` fields or with
  LightGBM's side ``.query`` file of group sizes;
* :func:`from_frame` -- a pandas DataFrame (for example from :func:`read_table`
  on a parquet/csv file);
* :func:`ltr.synthetic.make_ranking` -- a deterministic synthetic set shaped
  like MSLR-WEB10K (it imports this module, never the reverse).
"""

from __future__ import annotations

import os
import warnings
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar, Literal

import numpy as np

from ltr._validation import (
    check_1d_float,
    check_finite,
    check_int,
    check_same_length,
    short_repr,
)
from ltr.groups import offsets_from_group, qid_from_offsets, resolve_groups

if TYPE_CHECKING:  # pragma: no cover
    import pandas as pd

__all__ = [
    "RankingData",
    "from_frame",
    "load_letor",
    "read_table",
]

_FLOAT_DTYPES = (np.dtype(np.float32), np.dtype(np.float64))


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


# ---------------------------------------------------------------------------
# LETOR / LibSVM
# ---------------------------------------------------------------------------


def load_letor(
    path: str | os.PathLike[str],
    query_file: str | os.PathLike[str] | None = None,
    *,
    n_features: int | None = None,
    dtype: Any = np.float64,
    zero_based: bool | Literal["auto"] = "auto",
    sort: bool = False,
) -> RankingData:
    """Load a LibSVM/LETOR ranking file into dense :class:`RankingData`.

    Two layouts are understood:

    * LETOR/SVMrank: each row is ``<label> qid:<id> <index>:<value> ... [# comment]``;
    * LightGBM: rows carry no ``qid:``; the query sizes (one integer per line,
      in row order) live in a side file, by default ``path + ".query"``.

    Parameters
    ----------
    path : str or path-like
        The data file.
    query_file : str or path-like, optional
        Group sizes file.  When given it is used even if the rows carry
        ``qid:`` (their ids are then ignored); when omitted, ``path + ".query"``
        is used for rows without ``qid:``.
    n_features : int, optional
        Number of feature columns; needed to align a test file whose largest
        feature index is smaller than the training file's.  Defaults to the
        largest index found in the file.
    dtype : {numpy.float64, numpy.float32}, default=numpy.float64
        Dtype of ``X``.
    zero_based : bool or "auto", default="auto"
        Whether feature indices start at 0.  ``"auto"`` (as in scikit-learn)
        treats the file as one-based unless index 0 occurs.  Column ``j`` of a
        one-based file holds index ``j + 1`` and is named ``f{j+1}``; in a
        zero-based file it is named ``f{j}``.
    sort : bool, default=False
        Stable-sort rows so that each ``qid`` is contiguous (otherwise a
        non-contiguous ``qid`` is an error).

    Returns
    -------
    RankingData
        With ``qid`` from the file, or ``0..n_queries-1`` from the group sizes.

    Raises
    ------
    FileNotFoundError
        If ``path`` or ``query_file`` does not exist.
    ValueError
        If the file cannot be parsed, only some rows carry ``qid:``, the rows
        carry no ``qid:`` and no query file exists, the group sizes do not sum
        to the number of rows, or a feature index exceeds ``n_features``.

    Examples
    --------
    >>> data = load_letor("rank.train")            # doctest: +SKIP
    >>> data.n_queries, data.X.shape               # doctest: +SKIP
    (201, (3005, 300))
    """
    from sklearn.datasets import load_svmlight_file

    data_path = _existing_file(path, "path")
    dtype = np.dtype(dtype)
    if dtype not in _FLOAT_DTYPES:
        raise ValueError(f"dtype must be float32 or float64, got {dtype!r}")
    if n_features is not None:
        n_features = check_int(n_features, "n_features", minimum=1)
    if zero_based not in (True, False, "auto"):
        raise ValueError(f"zero_based must be True, False or 'auto', got {zero_based!r}")
    query_path = None if query_file is None else _existing_file(query_file, "query_file")

    try:
        sparse, y, file_qid = load_svmlight_file(
            str(data_path), dtype=dtype, zero_based=True, query_id=True
        )
    except (ValueError, UnicodeDecodeError) as exc:
        raise ValueError(
            f"could not parse {str(data_path)!r} as a LibSVM/LETOR file: {exc}"
        ) from exc
    n_rows = sparse.shape[0]
    if n_rows == 0:
        raise ValueError(f"{str(data_path)!r} contains no data rows")

    indices = sparse.indices
    uses_zero = bool(indices.size) and int(indices.min()) == 0
    if zero_based == "auto":
        zero_based = uses_zero
    elif not zero_based and uses_zero:
        raise ValueError(f"{str(data_path)!r} uses feature index 0 but zero_based=False")
    first = 0 if zero_based else 1
    width = max(sparse.shape[1] - first, 0)
    if n_features is None:
        n_features = width
    elif indices.size and int(indices.max()) - first >= n_features:
        raise ValueError(
            f"{str(data_path)!r} has feature index {int(indices.max())} "
            f"but n_features={n_features}; "
            "pass a larger n_features"
        )
    from scipy.sparse import csr_matrix

    dense = csr_matrix(
        (sparse.data, indices - first, sparse.indptr), shape=(n_rows, n_features)
    ).toarray()
    names = [f"f{j + first}" for j in range(n_features)]

    if query_path is not None:
        qid = qid_from_offsets(_read_query_file(query_path, n_rows, data_path))
    elif len(file_qid) == n_rows:
        qid = np.asarray(file_qid, dtype=np.int64)
    elif len(file_qid) > 0:
        raise ValueError(
            f"only {len(file_qid)} of the {n_rows} rows of {str(data_path)!r} "
            "carry a 'qid:' field; "
            "give every row a qid, or none and put group sizes in a .query file"
        )
    else:
        auto = Path(str(data_path) + ".query")
        if not auto.is_file():
            raise ValueError(
                f"{str(data_path)!r} has no 'qid:' fields and no query file {str(auto)!r} exists; "
                "pass query_file= with the group sizes (one per line, LightGBM layout) "
                "or add 'qid:<id>' to every row"
            )
        qid = qid_from_offsets(_read_query_file(auto, n_rows, data_path))

    try:
        groups = resolve_groups(n_rows, qid=qid, sort=sort)
    except ValueError as exc:
        raise ValueError(f"{str(data_path)!r}: {exc}") from exc
    if groups.order is not None:
        dense, y, qid = dense[groups.order], y[groups.order], qid[groups.order]
    return RankingData(X=dense, y=y, qid=qid, feature_names=names)


def _existing_file(path: Any, name: str) -> Path:
    try:
        p = Path(os.fspath(path))
    except TypeError as exc:
        raise TypeError(f"{name} must be a str or path-like, got {short_repr(path)}") from exc
    if not p.is_file():
        raise FileNotFoundError(f"{name} {str(p)!r} does not exist or is not a file")
    return p


def _read_query_file(query_path: Path, n_rows: int, data_path: Path) -> np.ndarray:
    """Offsets from a LightGBM ``.query`` file (one group size per line)."""
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", UserWarning)  # empty-file warning: we raise instead
            sizes = np.loadtxt(query_path, dtype=np.int64, ndmin=1)
    except ValueError as exc:
        raise ValueError(
            f"query file {str(query_path)!r} must hold one integer group size per line: {exc}"
        ) from exc
    if sizes.ndim != 1:
        raise ValueError(
            f"query file {str(query_path)!r} must hold one integer group size per line, "
            f"got {sizes.shape[1]} columns"
        )
    try:
        offsets = offsets_from_group(sizes)
    except ValueError as exc:
        raise ValueError(f"query file {str(query_path)!r}: {exc}") from exc
    if offsets[-1] != n_rows:
        raise ValueError(
            f"group sizes in {str(query_path)!r} sum to {int(offsets[-1])} but {str(data_path)!r} "
            f"has {n_rows} rows; the query file must match the data file"
        )
    return offsets


# ---------------------------------------------------------------------------
# pandas
# ---------------------------------------------------------------------------

_TABLE_SUFFIXES = (".parquet", ".pq", ".csv", ".tsv", ".tab")


def read_table(path: str | os.PathLike[str], **kwargs: Any) -> pd.DataFrame:
    """Read a ``.parquet``, ``.csv`` or ``.tsv`` file into a DataFrame.

    Compressed text (``.csv.gz`` etc.) is handled by pandas.  Extra keyword
    arguments go to :func:`pandas.read_parquet` / :func:`pandas.read_csv`.

    Raises
    ------
    FileNotFoundError
        If *path* does not exist.
    ValueError
        If the suffix is not one of ``.parquet``, ``.pq``, ``.csv``, ``.tsv``, ``.tab``.
    """
    import pandas as pd

    p = _existing_file(path, "path")
    suffixes = [s.lower() for s in p.suffixes]
    if suffixes and suffixes[-1] in (".gz", ".bz2", ".xz", ".zip", ".zst"):
        suffixes = suffixes[:-1]
    kind = suffixes[-1] if suffixes else ""
    if kind in (".parquet", ".pq"):
        return pd.read_parquet(p, **kwargs)
    if kind == ".csv":
        return pd.read_csv(p, **kwargs)
    if kind in (".tsv", ".tab"):
        kwargs.setdefault("sep", "\t")
        return pd.read_csv(p, **kwargs)
    raise ValueError(
        f"cannot tell the format of {str(p)!r} from its suffix {kind!r}; "
        f"supported: {', '.join(_TABLE_SUFFIXES)} (read it with pandas and call from_frame)"
    )


def _columns_text(df: pd.DataFrame, limit: int = 20) -> str:
    cols = [str(c) for c in df.columns]
    text = ", ".join(repr(c) for c in cols[:limit])
    if len(cols) > limit:
        text += f", ... ({len(cols) - limit} more)"
    return f"[{text}]"


def _require_column(df: pd.DataFrame, column: Any, role: str) -> None:
    if column not in df.columns:
        raise ValueError(
            f"{role} column {column!r} not found in the frame; "
            f"available columns: {_columns_text(df)}"
        )


def _numeric_column(df: pd.DataFrame, column: Any, role: str) -> np.ndarray:
    import pandas as pd

    series = df[column]
    if not (
        pd.api.types.is_numeric_dtype(series.dtype) or pd.api.types.is_bool_dtype(series.dtype)
    ):
        raise TypeError(f"{role} column {column!r} must be numeric, got dtype {series.dtype}")
    n_missing = int(series.isna().sum())
    if n_missing:
        raise ValueError(f"{role} column {column!r} has {n_missing} missing value(s)")
    values = series.to_numpy(dtype=np.float64)
    check_finite(values, f"{role} column {column!r}")
    return values


def from_frame(
    df: pd.DataFrame,
    label: Any = "label",
    qid: Any = "qid",
    features: Sequence[Any] | None = None,
    *,
    labels: Mapping[str, Any] | None = None,
    segment: Any = None,
    dtype: Any = np.float64,
    sort: bool = False,
) -> RankingData:
    """Build :class:`RankingData` from a pandas DataFrame.

    Parameters
    ----------
    df : pandas.DataFrame
        One row per document.
    label : column name, default="label"
        Graded relevance column (numeric, no missing values) -> ``y``.
    qid : column name, default="qid"
        Query id column.  Integer ids (also whole-number floats) are kept;
        other ids (str, ...) are replaced by ``0..n_queries-1`` in order of
        appearance.
    features : sequence of column names, optional
        Feature columns, in this order.  Defaults to every column not used as
        label, qid, segment or in ``labels``.  Must be numeric (NaN allowed).
    labels : mapping of str to column name, optional
        Extra label columns, e.g. ``{"watch": "watch_grade", "share": ...}``
        -> :attr:`RankingData.labels`.
    segment : column name, optional
        Category column -> :attr:`RankingData.segments`.
    dtype : {numpy.float64, numpy.float32}, default=numpy.float64
        Dtype of ``X``.
    sort : bool, default=False
        Stable-sort rows so that each query is contiguous (queries keep the
        order of their first row).  Otherwise non-contiguous ids are an error.

    Returns
    -------
    RankingData

    Raises
    ------
    ValueError
        If a named column is missing (the message lists the available ones),
        a label has missing values, or ``qid`` is not contiguous and ``sort``
        is False.
    TypeError
        If ``df`` is not a DataFrame or a feature/label column is not numeric.
    """
    import pandas as pd

    if not isinstance(df, pd.DataFrame):
        raise TypeError(f"df must be a pandas DataFrame, got {type(df).__name__}")
    dtype = np.dtype(dtype)
    if dtype not in _FLOAT_DTYPES:
        raise ValueError(f"dtype must be float32 or float64, got {dtype!r}")
    if len(df) == 0:
        raise ValueError("df has no rows: at least one row is required")
    _require_column(df, label, "label")
    _require_column(df, qid, "qid")
    if segment is not None:
        _require_column(df, segment, "segment")
    if labels is None:
        labels = {}
    elif not isinstance(labels, Mapping):
        raise TypeError(
            f"labels must map objective names to column names, got {short_repr(labels)}"
        )
    for name, column in labels.items():
        _require_column(df, column, f"labels[{name!r}]")

    used = {label, qid, *labels.values()} | ({segment} if segment is not None else set())
    if features is None:
        features = [c for c in df.columns if c not in used]
    else:
        if isinstance(features, (str, bytes)) or not isinstance(features, Sequence | pd.Index):
            raise TypeError(f"features must be a list of column names, got {short_repr(features)}")
        features = list(features)
        for column in features:
            _require_column(df, column, "feature")
    if not features:
        raise ValueError(
            f"no feature columns: every column is used as label/qid/segment; "
            f"available columns: {_columns_text(df)}"
        )
    non_numeric = [
        c
        for c in features
        if not (
            pd.api.types.is_numeric_dtype(df[c].dtype) or pd.api.types.is_bool_dtype(df[c].dtype)
        )
    ]
    if non_numeric:
        raise TypeError(
            f"feature columns must be numeric; {non_numeric[:10]!r} are not "
            f"(dtypes: {[str(df[c].dtype) for c in non_numeric[:10]]})"
        )

    y = _numeric_column(df, label, "label")
    extra = {
        name: _numeric_column(df, column, f"labels[{name!r}]") for name, column in labels.items()
    }

    qid_series = df[qid]
    n_missing = int(qid_series.isna().sum())
    if n_missing:
        raise ValueError(f"qid column {qid!r} has {n_missing} missing value(s)")
    if pd.api.types.is_integer_dtype(qid_series.dtype):
        raw_qid = qid_series.to_numpy(dtype=np.int64)
    else:
        raw_qid = qid_series.to_numpy()
        if raw_qid.dtype.kind == "f" and np.all(raw_qid == np.round(raw_qid)):
            raw_qid = raw_qid.astype(np.int64)  # whole-number ids read as float (csv)
    groups = resolve_groups(len(df), qid=raw_qid, sort=sort)
    order = groups.order
    if raw_qid.dtype.kind in "iu":
        qid_values = raw_qid if order is None else raw_qid[order]
    else:
        qid_values = qid_from_offsets(groups.offsets)

    X = df[features].to_numpy(dtype=dtype)
    seg = None if segment is None else df[segment].to_numpy()
    if order is not None:
        X, y = X[order], y[order]
        extra = {k: v[order] for k, v in extra.items()}
        seg = None if seg is None else seg[order]
    return RankingData(
        X=X,
        y=y,
        qid=qid_values,
        feature_names=[str(c) for c in features],
        labels=extra,
        segments=seg,
    )

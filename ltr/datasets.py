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
from ltr.groups import SORT_HINT, offsets_from_group, qid_from_offsets, resolve_groups

if TYPE_CHECKING:  # pragma: no cover
    import pandas as pd

__all__ = [
    "MAX_AUTO_FEATURES",
    "RankingData",
    "from_frame",
    "letor_layout",
    "load_letor",
    "load_letor_files",
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


#: Without an explicit ``n_features``, a feature index beyond this is refused
#: (the dense matrix would be absurd: pass ``n_features`` to allow it).
MAX_AUTO_FEATURES = 1 << 20


@dataclass
class _ParsedLetor:
    """One LETOR file as parsed by scikit-learn (indices as written, 0-based storage)."""

    path: Path
    sparse: Any  # scipy CSR with column = the index written in the file
    y: np.ndarray
    qid: np.ndarray

    @property
    def n_rows(self) -> int:
        return int(self.sparse.shape[0])

    def min_index(self) -> int | None:
        idx = self.sparse.indices
        return int(idx.min()) if idx.size else None

    def max_index(self) -> int | None:
        idx = self.sparse.indices
        return int(idx.max()) if idx.size else None

    def row_of_entry(self, pos: int) -> int:
        return int(np.searchsorted(self.sparse.indptr, pos, side="right") - 1)


def _data_lines(path: Path) -> list[int]:
    """1-based line number of each data row (blank and comment-only lines skipped).

    The rule is scikit-learn's ``load_svmlight_file``: text after ``#`` is a
    comment.  Only called on an error path (a pure-Python pass).
    """
    lines: list[int] = []
    with open(path, "rb") as fh:
        for number, raw in enumerate(fh, start=1):
            if raw.split(b"#", 1)[0].split():
                lines.append(number)
    return lines


class _LineOf:
    """``row -> line`` of a LETOR file, read lazily (the file is scanned only when asked)."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._lines: list[int] | None = None

    def __call__(self, row: int) -> int:
        if self._lines is None:
            self._lines = _data_lines(self.path)
        return self._lines[row] if 0 <= row < len(self._lines) else row + 1


def _bad_token(path: Path) -> str | None:
    """``"line N: problem"`` for the first malformed line of a LETOR file, else None."""
    with open(path, "rb") as fh:
        for number, raw in enumerate(fh, start=1):
            try:
                text = raw.decode("utf-8")
            except UnicodeDecodeError:
                return f"line {number}: not UTF-8 text"
            tokens = text.split("#", 1)[0].split()
            if not tokens:
                continue
            try:
                float(tokens[0])
            except ValueError:
                return f"line {number}: label {tokens[0]!r} is not a number"
            last = -1
            for token in tokens[1:]:
                key, sep, value = token.partition(":")
                if not sep or not key or not value:
                    return f"line {number}: token {token!r} is not '<index>:<value>'"
                if key == "qid":
                    try:
                        int(value)
                    except ValueError:
                        return f"line {number}: token {token!r}: qid must be an integer"
                    continue
                try:
                    index = int(key)
                except ValueError:
                    return (
                        f"line {number}: token {token!r}: feature index {key!r} is not an integer"
                    )
                if index < 0:
                    return f"line {number}: token {token!r}: feature index must be >= 0"
                try:
                    float(value)
                except ValueError:
                    return f"line {number}: token {token!r}: value {value!r} is not a number"
                if index <= last:
                    return (
                        f"line {number}: token {token!r}: feature indices must increase "
                        f"along a line (index {index} after {last})"
                    )
                last = index
    return None


def _parse_letor(path: Path, dtype: np.dtype) -> _ParsedLetor:
    """Parse one file with scikit-learn's fast parser; errors name the file and line."""
    from sklearn.datasets import load_svmlight_file

    try:
        sparse, y, qid = load_svmlight_file(str(path), dtype=dtype, zero_based=True, query_id=True)
    except (ValueError, UnicodeDecodeError, OverflowError) as exc:
        where = _bad_token(path)
        detail = where if where is not None else str(exc)
        raise ValueError(
            f"could not parse {str(path)!r} as a LibSVM/LETOR file: {detail}"
        ) from exc
    if sparse.shape[0] == 0:
        raise ValueError(f"{str(path)!r} contains no data rows")
    return _ParsedLetor(path, sparse, y, np.asarray(qid, dtype=np.int64))


def _check_layout_args(zero_based: Any, n_features: Any, dtype: Any) -> tuple[Any, Any, Any]:
    dtype = np.dtype(dtype)
    if dtype not in _FLOAT_DTYPES:
        raise ValueError(f"dtype must be float32 or float64, got {dtype!r}")
    if n_features is not None:
        n_features = check_int(n_features, "n_features", minimum=1)
    if isinstance(zero_based, (bool, np.bool_)):
        zero_based = bool(zero_based)
    elif not (isinstance(zero_based, str) and zero_based == "auto"):
        raise ValueError(f"zero_based must be True, False or 'auto', got {zero_based!r}")
    return zero_based, n_features, dtype


def _decide_layout(
    parsed: Sequence[_ParsedLetor], zero_based: bool | str, n_features: int | None
) -> tuple[bool, int]:
    """One feature base and count for every file of a run, checked against each file.

    ``"auto"``: zero-based when any file uses index 0; the count is the widest
    file's.  Errors name the file and the line of the offending entry.
    """
    mins = [p.min_index() for p in parsed]
    uses_zero = [m == 0 for m in mins]
    if zero_based == "auto":
        zero = any(uses_zero)
    else:
        zero = bool(zero_based)
        if not zero:
            for p, z in zip(parsed, uses_zero):
                if z:
                    pos = int(np.flatnonzero(p.sparse.indices == 0)[0])
                    row = p.row_of_entry(pos)
                    raise ValueError(
                        f"{str(p.path)!r} line {_LineOf(p.path)(row)} uses feature index 0 but "
                        "zero_based=False; pass zero_based=True or 'auto'"
                    )
    first = 0 if zero else 1
    limit = n_features if n_features is not None else MAX_AUTO_FEATURES
    for p in parsed:
        top = p.max_index()
        if top is None or top - first < limit:
            continue
        pos = int(np.flatnonzero(p.sparse.indices - first >= limit)[0])
        row = p.row_of_entry(pos)
        index = int(p.sparse.indices[pos])
        where = f"{str(p.path)!r} line {_LineOf(p.path)(row)}"
        if n_features is not None:
            raise ValueError(
                f"{where} has feature index {index} but n_features={n_features} "
                f"({'0' if zero else '1'}-based: indices {first}..{n_features - 1 + first}); "
                "pass a larger n_features"
            )
        raise ValueError(
            f"{where} has feature index {index}, beyond {MAX_AUTO_FEATURES} dense columns: "
            "a malformed index? Fix the file, or pass n_features= to allow that many columns"
        )
    if n_features is None:
        widths = [p.max_index() for p in parsed]
        n_features = max((w - first + 1 for w in widths if w is not None), default=0)
    return zero, n_features


def _to_ranking_data(
    p: _ParsedLetor,
    zero: bool,
    n_features: int,
    dtype: np.dtype,
    query_path: Path | None,
    sort: bool,
) -> RankingData:
    from scipy.sparse import csr_matrix

    first = 0 if zero else 1
    n_rows = p.n_rows
    sparse = p.sparse
    dense = csr_matrix(
        (sparse.data.astype(dtype, copy=False), sparse.indices - first, sparse.indptr),
        shape=(n_rows, n_features),
    ).toarray()
    names = [f"f{j + first}" for j in range(n_features)]
    data_path, file_qid = p.path, p.qid
    if query_path is not None:
        qid = qid_from_offsets(_read_query_file(query_path, n_rows, data_path))
    elif len(file_qid) == n_rows:
        qid = file_qid
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

    groups = resolve_groups(
        n_rows, qid=qid, sort=sort, sort_hint=SORT_HINT, source=repr(str(data_path)),
        line_of=_LineOf(data_path),
    )
    y = p.y
    if groups.order is not None:
        dense, y, qid = dense[groups.order], y[groups.order], qid[groups.order]
    try:
        return RankingData(X=dense, y=y, qid=qid, feature_names=names)
    except ValueError as exc:
        raise ValueError(f"{str(data_path)!r}: {exc}") from exc


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

    For the files of one run (train, valid, test) use
    :func:`load_letor_files`, which decides the feature base and count once
    from all of them.

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
        largest index found in the file (at most :data:`MAX_AUTO_FEATURES`).
    dtype : {numpy.float64, numpy.float32}, default=numpy.float64
        Dtype of ``X``.
    zero_based : bool or "auto", default="auto"
        Whether feature indices start at 0.  ``"auto"`` (as in scikit-learn)
        treats the file as one-based unless index 0 occurs.  Column ``j`` of a
        one-based file holds index ``j + 1`` and is named ``f{j+1}``; in a
        zero-based file it is named ``f{j}``.
    sort : bool, default=False
        Stable-sort rows so that each ``qid`` is contiguous (otherwise a
        non-contiguous ``qid`` is an error naming the file and lines).

    Returns
    -------
    RankingData
        With ``qid`` from the file, or ``0..n_queries-1`` from the group sizes.

    Raises
    ------
    FileNotFoundError
        If ``path`` or ``query_file`` does not exist.
    ValueError
        If the file cannot be parsed (the message names the line and token),
        only some rows carry ``qid:``, the rows carry no ``qid:`` and no query
        file exists, the group sizes do not sum to the number of rows, or a
        feature index exceeds ``n_features`` (or, without it,
        :data:`MAX_AUTO_FEATURES`; checked before the dense matrix is made).

    Examples
    --------
    >>> data = load_letor("rank.train")            # doctest: +SKIP
    >>> data.n_queries, data.X.shape               # doctest: +SKIP
    (201, (3005, 300))
    """
    data_path = _existing_file(path, "path")
    zero_based, n_features, dtype = _check_layout_args(zero_based, n_features, dtype)
    query_path = None if query_file is None else _existing_file(query_file, "query_file")
    parsed = _parse_letor(data_path, dtype)
    zero, width = _decide_layout([parsed], zero_based, n_features)
    return _to_ranking_data(parsed, zero, width, dtype, query_path, sort)


def _path_items(paths: Any, name: str) -> tuple[list[Any], list[Any]]:
    """``(keys, values)`` of a mapping, or ``(positions, values)`` of a sequence."""
    if isinstance(paths, Mapping):
        return list(paths.keys()), list(paths.values())
    if isinstance(paths, (str, bytes, os.PathLike)) or not isinstance(paths, Sequence):
        raise TypeError(
            f"{name} must be a list of paths or a mapping set name -> path, got {short_repr(paths)}"
        )
    return list(range(len(paths))), list(paths)


def load_letor_files(
    paths: Sequence[str | os.PathLike[str]] | Mapping[str, str | os.PathLike[str]],
    query_files: Any = None,
    *,
    n_features: int | None = None,
    dtype: Any = np.float64,
    zero_based: bool | Literal["auto"] = "auto",
    sort: bool = False,
) -> Any:
    """Load the LETOR files of one run with one feature base and one feature count.

    Detecting the base and width per file would parse a 0-based training file
    and a 1-based test file with shifted columns; here they are decided once
    from all files (each is parsed once): zero-based when any file uses index
    0, and as many columns as the widest file needs.

    Parameters
    ----------
    paths : list of path, or mapping of str to path
        The files, e.g. ``{"train": ..., "valid": ..., "test": ...}``.
    query_files : list or mapping of path (or None entries), optional
        Group-size files matching ``paths`` (same keys / length); see
        :func:`load_letor`.
    n_features, dtype, zero_based, sort
        As in :func:`load_letor`; explicit values apply to every file.

    Returns
    -------
    list of RankingData or dict of str to RankingData
        In the order (or with the keys) of ``paths``.

    Raises
    ------
    FileNotFoundError, ValueError
        As :func:`load_letor`; every message names the file (and line).

    Examples
    --------
    >>> sets = load_letor_files({"train": "tr.txt", "test": "te.txt"})  # doctest: +SKIP
    >>> sets["train"].n_features == sets["test"].n_features            # doctest: +SKIP
    True
    """
    keys, values = _path_items(paths, "paths")
    if not values:
        raise ValueError("paths is empty: give at least one LETOR file")
    files = [_existing_file(v, f"paths[{k!r}]") for k, v in zip(keys, values)]
    zero_based, n_features, dtype = _check_layout_args(zero_based, n_features, dtype)
    if query_files is None:
        queries: list[Path | None] = [None] * len(files)
    else:
        if isinstance(paths, Mapping):
            if not isinstance(query_files, Mapping):
                raise TypeError("query_files must be a mapping like paths (set name -> path)")
            unknown = sorted(map(str, set(query_files) - set(keys)))
            if unknown:
                raise ValueError(f"query_files has keys that paths lacks: {unknown}")
            qvalues = [query_files.get(k) for k in keys]
        else:
            _, qvalues = _path_items(query_files, "query_files")
            if len(qvalues) != len(files):
                raise ValueError(
                    f"query_files has {len(qvalues)} entries but paths has {len(files)}"
                )
        queries = [
            None if q is None else _existing_file(q, f"query_files[{k!r}]")
            for k, q in zip(keys, qvalues)
        ]
    parsed = [_parse_letor(f, dtype) for f in files]
    zero, width = _decide_layout(parsed, zero_based, n_features)
    out = [_to_ranking_data(p, zero, width, dtype, q, sort) for p, q in zip(parsed, queries)]
    return dict(zip(keys, out)) if isinstance(paths, Mapping) else out


def letor_layout(
    paths: Sequence[str | os.PathLike[str]] | Mapping[str, str | os.PathLike[str]],
    *,
    zero_based: bool | Literal["auto"] = "auto",
    n_features: int | None = None,
) -> tuple[bool, int]:
    """Return ``(zero_based, n_features)`` decided from all LETOR files of a run.

    Parses every file (prefer :func:`load_letor_files`, which parses once and
    loads); pass the result to :func:`load_letor` for each file.

    Parameters
    ----------
    paths : list of path, or mapping of str to path
        The run's files.
    zero_based, n_features
        Explicit values are checked against every file and returned.

    Returns
    -------
    tuple of (bool, int)
    """
    keys, values = _path_items(paths, "paths")
    if not values:
        raise ValueError("paths is empty: give at least one LETOR file")
    zero_based, n_features, _ = _check_layout_args(zero_based, n_features, np.float64)
    parsed = [
        _parse_letor(_existing_file(v, f"paths[{k!r}]"), np.dtype(np.float64))
        for k, v in zip(keys, values)
    ]
    return _decide_layout(parsed, zero_based, n_features)


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
    source: str | os.PathLike[str] | None = None,
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
        order of their first row).  Otherwise non-contiguous ids are an error
        naming the rows where the query restarts: rows are never merged
        silently.
    source : str or path-like, optional
        The file the frame was read from, named at the start of every error.
        For a text table (``.csv``, ``.tsv``, ``.tab``, possibly compressed)
        the errors also give the line of a row, ``row + 2`` (a header line
        and no skipped lines, as :func:`read_table` reads it).

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
    if source is None:
        return _from_frame(df, label, qid, features, labels, segment, dtype, sort, None)
    src = os.fspath(source)
    try:
        return _from_frame(df, label, qid, features, labels, segment, dtype, sort, _csv_lines(src))
    except (TypeError, ValueError) as exc:
        raise type(exc)(f"{src!r}: {exc}") from exc


def _csv_lines(source: str) -> Any:
    """``row -> line`` for a text table with one header line, else None."""
    suffixes = [s.lower() for s in Path(source).suffixes]
    if suffixes and suffixes[-1] in (".gz", ".bz2", ".xz", ".zip", ".zst"):
        suffixes = suffixes[:-1]
    if suffixes and suffixes[-1] in (".csv", ".tsv", ".tab"):
        return lambda row: row + 2
    return None


def _from_frame(
    df: Any,
    label: Any,
    qid: Any,
    features: Any,
    labels: Any,
    segment: Any,
    dtype: Any,
    sort: bool,
    line_of: Any,
) -> RankingData:
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
    groups = resolve_groups(len(df), qid=raw_qid, sort=sort, sort_hint=SORT_HINT, line_of=line_of)
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

"""LibSVM/LETOR files: one feature base and count per run, errors naming file and line."""

from __future__ import annotations

import os
import warnings
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

import numpy as np

from ltr._validation import check_int, short_repr
from ltr.datasets._container import _FLOAT_DTYPES, RankingData, _existing_file
from ltr.groups import SORT_HINT, offsets_from_group, qid_from_offsets, resolve_groups

__all__ = ["MAX_AUTO_FEATURES", "letor_layout", "load_letor", "load_letor_files"]

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
                        qid_value = int(value)
                    except ValueError:
                        return f"line {number}: token {token!r}: qid must be an integer"
                    if not -(2**63) <= qid_value < 2**63:
                        return f"line {number}: token {token!r}: qid does not fit in 64 bits"
                    continue
                try:
                    index = int(key)
                except ValueError:
                    return (
                        f"line {number}: token {token!r}: feature index {key!r} is not an integer"
                    )
                if index < 0:
                    return f"line {number}: token {token!r}: feature index must be >= 0"
                if index >= 2**31 - 1:
                    return (
                        f"line {number}: token {token!r}: feature index {index} is beyond "
                        "what a feature matrix can hold (2**31 - 2 at most)"
                    )
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

    line_of = _LineOf(data_path)
    bad = np.flatnonzero(np.isinf(p.sparse.data))  # NaN is a missing value; inf is an error
    if bad.size:
        row = p.row_of_entry(int(bad[0]))
        raise ValueError(
            f"{str(data_path)!r} line {line_of(row)}: a feature value is "
            f"{float(p.sparse.data[bad[0]])!r}; features may be missing (nan) but not infinite"
        )
    bad_y = np.flatnonzero(~np.isfinite(p.y) | (p.y < 0))
    if bad_y.size:
        row = int(bad_y[0])
        raise ValueError(
            f"{str(data_path)!r} line {line_of(row)}: the label is {float(p.y[row])!r}; "
            "relevance labels must be finite and >= 0"
        )
    groups = resolve_groups(
        n_rows, qid=qid, sort=sort, sort_hint=SORT_HINT, source=repr(str(data_path)),
        line_of=line_of,
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

"""TREC qrels and run files: readers and a run-file writer.

* qrels: ``qid iter docid relevance`` (4 whitespace-separated fields; ``iter``
  is ignored), as read by trec_eval;
* run: ``qid Q0 docid rank score tag`` (6 fields; trec_eval ranks by
  ``score``, not by ``rank``).

Readers return a pandas DataFrame with string ``qid`` and ``doc_id`` columns
and a float ``relevance`` / ``score`` column, the layout
:func:`ltr.evaluation.evaluate` takes.  The memory-mapped file is read in one
pass by numba threads (:mod:`ltr.kernels._textscan`) without a Python string
per field: the id bytes go straight into Arrow string buffers (pandas' ``str``
dtype where it is the default, ``object`` otherwise) and numbers are parsed
exactly, bit-identical to ``float()`` (:mod:`ltr.kernels._decimal`; the rare
token it cannot decide goes to ``float()`` itself).  A malformed line raises
``ValueError`` naming the file, the line number and the line.
:func:`write_run` writes through :func:`ltr._io.write_atomic`.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from ltr._compat import optional_import
from ltr._io import write_atomic
from ltr._validation import check_1d_float, short_repr
from ltr.kernels import _textscan as T

__all__ = ["check_ids", "check_tag", "read_qrels", "read_run", "write_qrels", "write_run"]

PathLike = str | os.PathLike[str]

_QRELS_FIELDS = ("qid", "iter", "doc_id", "relevance")
_RUN_FIELDS = ("qid", "Q0", "doc_id", "rank", "score", "tag")


def line_of_row(path: PathLike, row: int) -> tuple[int, str]:
    """``(1-based line number, text)`` of data row *row* (blank lines skipped) of *path*."""
    seen = -1
    with open(path, encoding="utf-8", errors="replace") as fh:
        for number, line in enumerate(fh, start=1):
            if line.strip():
                seen += 1
                if seen == row:
                    return number, line.rstrip("\n")
    return -1, ""


def _line_start(buf: np.ndarray, at: int) -> int:
    """Byte offset where the line holding byte *at* of *buf* starts."""
    nl = np.flatnonzero(buf[:at] == 10)
    return int(nl[-1]) + 1 if nl.shape[0] else 0


def _line(buf: np.ndarray, at: int) -> tuple[int, str]:
    """``(1-based line number, text)`` of the line starting at byte *at* of *buf*."""
    number = int(np.count_nonzero(buf[:at] == 10)) + 1
    nl = np.flatnonzero(buf[at : at + 65536] == 10)
    stop = at + int(nl[0]) if nl.shape[0] else min(buf.shape[0], at + 65536)
    return number, buf[at:stop].tobytes().decode("utf-8", errors="replace").rstrip("\r")


def _exact_numbers(buf: np.ndarray, starts: np.ndarray) -> np.ndarray:
    """Return ``float()`` of each token starting at ``starts`` in *buf* (NaN: not a number).

    Only the tokens :func:`ltr.kernels._decimal.parse_decimal` leaves come here
    (``inf``, exact halfway cases past 19 digits, not a number).
    """
    ends = T.token_ends(buf, starts)
    out = np.empty(starts.shape[0])
    for i in range(starts.shape[0]):
        try:
            out[i] = float(buf[starts[i] : ends[i]].tobytes())
        except ValueError:
            out[i] = np.nan
    return out


def _default_str_dtype() -> Any:
    """Return the dtype pandas gives a column of strings (``str`` in pandas 3, else object)."""
    return pd.Series(["a"]).dtype


def _id_column(cols: T.Columns, k: int, arrow: bool) -> Any:
    """Return id field *k* of *cols* as a pandas string array (or objects without pyarrow).

    The bytes stay where the scanner wrote them: one Arrow ``large_string``
    piece per chunk, no Python string per row (pandas' ``str`` dtype, or
    *arrow*); pandas' object default gets Python strings.
    """
    pieces = []
    for c in range(cols.used.shape[0]):
        n = int(cols.used[c])
        if n:
            o = int(cols.first[c]) + c
            offsets = cols.offsets[k, o : o + n + 1]
            pieces.append((n, offsets, cols.data[k][cols.bounds[c] : cols.bounds[c] + offsets[-1]]))
    try:
        pa: Any = optional_import("pyarrow", purpose="string id columns")
    except ImportError:  # pragma: no cover - pyarrow ships with the test extra
        data = np.concatenate([d for _, _, d in pieces])
        starts = np.concatenate([o[:-1] + at for (_, o, _), at in
                                 zip(pieces, np.cumsum([0] + [d.shape[0] for _, _, d in pieces]))])
        ends = np.append(starts[1:], data.shape[0])
        text = data.tobytes().decode("utf-8")
        if len(text) != data.shape[0]:  # non-ASCII: offsets count bytes, not characters
            return np.array([data[a:b].tobytes().decode("utf-8") for a, b in zip(starts, ends)],
                            dtype=object)
        return np.array([text[a:b] for a, b in zip(starts, ends)], dtype=object)
    arr = pa.chunked_array(
        [pa.LargeStringArray.from_buffers(n, pa.py_buffer(offsets), pa.py_buffer(data))
         for n, offsets, data in pieces], type=pa.large_string())
    default = _default_str_dtype()
    if isinstance(default, pd.StringDtype) and default.storage == "pyarrow":
        return pd.array(arr, dtype=default)
    if arrow:
        return _arrow_strings(arr, pa)
    return arr.to_numpy()


def _arrow_strings(arr: Any, pa: Any) -> Any:
    """``pd.arrays.ArrowStringArray`` of Arrow strings (pandas < 2.1 takes only ``string``)."""
    try:
        return pd.arrays.ArrowStringArray(arr)
    except (TypeError, ValueError):
        return pd.arrays.ArrowStringArray(arr.cast(pa.string()))


def _rows(cols: T.Columns, values: np.ndarray) -> np.ndarray:
    """*values* (one per line the scanner made room for) without the blank lines' gaps."""
    if int(cols.used.sum()) == values.shape[0]:
        return values
    return np.concatenate([values[cols.first[c] : cols.first[c] + cols.used[c]]
                           for c in range(cols.used.shape[0])])


def _read(path: PathLike, kind: str, fields: tuple[str, ...], value: str,
          arrow: bool = False) -> pd.DataFrame:
    path = Path(path)
    if path.is_dir():
        raise IsADirectoryError(f"{kind} file {str(path)!r} is a folder, not a TREC {kind} file")
    if not path.is_file():
        raise FileNotFoundError(f"{kind} file {str(path)!r} does not exist")
    n = len(fields)
    layout = " ".join(fields)
    if path.stat().st_size == 0:
        raise ValueError(f"{kind} file {str(path)!r} is empty")
    buf = np.memmap(path, dtype=np.uint8, mode="r")  # the page cache, not a copy
    cols = T.scan_columns(buf, n, (0, 2), fields.index(value))
    values, status = _rows(cols, cols.values), _rows(cols, cols.status)
    if values.shape[0] == 0:
        raise ValueError(f"{kind} file {str(path)!r} is empty")
    if not cols.ascii:  # the bytes must be UTF-8
        try:
            buf.tobytes().decode("utf-8")
        except UnicodeDecodeError as exc:
            raise ValueError(
                f"{kind} file {str(path)!r} is not in TREC {kind} format ({layout}): {exc}"
            ) from None
    if status.any():  # a row not OK (T.OK is 0): a bad line, or a number for float()
        bad = np.flatnonzero(status == T.BAD)
        if bad.shape[0]:
            number, text = _line(buf, int(values[bad[0]]))
            raise ValueError(f"{kind} file {str(path)!r}, line {number}: expected {n} "
                             f"whitespace-separated fields ({layout}): {text!r}")
        slow = np.flatnonzero(status == T.SLOW)
        if slow.shape[0]:
            at = values[slow].astype(np.int64)  # where each token starts
            values[slow] = _exact_numbers(buf, at)
            nan = np.flatnonzero(np.isnan(values[slow]))
            if nan.shape[0]:
                start = at[nan[0] : nan[0] + 1]
                token = buf[start[0] : T.token_ends(buf, start)[0]].tobytes()
                number, text = _line(buf, _line_start(buf, int(start[0])))
                raise ValueError(f"{kind} file {str(path)!r}, line {number}: {value} "
                                 f"{token.decode(errors='replace')!r} is not a number: {text!r}")
    return pd.DataFrame({"qid": _id_column(cols, 0, arrow), "doc_id": _id_column(cols, 1, arrow),
                         value: values}, copy=False)  # the arrays are this call's own


def read_table(path: PathLike, kind: str) -> pd.DataFrame:
    """:func:`read_qrels` (*kind* ``"qrels"``) or :func:`read_run`, ids always Arrow strings.

    What :func:`ltr.evaluation.evaluate` reads files with: with pyarrow
    installed the id columns are Arrow-backed whatever pandas' default string
    dtype, so no Python string is made.
    """
    if kind == "qrels":
        return _read(path, "qrels", _QRELS_FIELDS, "relevance", arrow=True)
    return _read(path, "run", _RUN_FIELDS, "score", arrow=True)


def read_qrels(path: PathLike) -> pd.DataFrame:
    """Read a TREC qrels file (``qid iter docid relevance`` per line).

    Parameters
    ----------
    path : path-like
        The file.

    Returns
    -------
    DataFrame
        Columns ``qid`` (str), ``doc_id`` (str), ``relevance`` (float64), in file order.

    Raises
    ------
    ValueError
        A line without 4 fields or with a non-numeric relevance (the message
        names the file, the line number and the line), or an empty file.
    FileNotFoundError
        *path* does not exist.
    """
    return _read(path, "qrels", _QRELS_FIELDS, "relevance")


def read_run(path: PathLike) -> pd.DataFrame:
    """Read a TREC run file (``qid Q0 docid rank score tag`` per line).

    Parameters
    ----------
    path : path-like
        The file.

    Returns
    -------
    DataFrame
        Columns ``qid`` (str), ``doc_id`` (str), ``score`` (float64), in file
        order (the ``rank`` column is ignored, as trec_eval does).

    Raises
    ------
    ValueError
        A line without 6 fields or with a non-numeric score (the message names
        the file, the line number and the line), or an empty file.
    FileNotFoundError
        *path* does not exist.
    """
    return _read(path, "run", _RUN_FIELDS, "score")


def check_tag(tag: Any, name: str = "tag") -> str:
    """Return a TREC run tag: a non-empty string without whitespace (else ``ValueError``)."""
    if not isinstance(tag, str) or not tag or any(c.isspace() for c in tag):
        raise ValueError(
            f"{name} must be a non-empty string without whitespace, got {short_repr(tag)}"
        )
    return tag


def check_ids(values: Any, name: str) -> np.ndarray:
    """Return ids as TREC strings: one per row, non-empty, no whitespace (else ``ValueError``)."""
    arr = np.asarray(values)
    return _id_strings(arr, name, arr.shape[0] if arr.ndim else -1)


def _id_strings(values: Any, name: str, n: int) -> np.ndarray:
    arr = np.asarray(values)
    if arr.ndim != 1 or arr.shape[0] != n:
        raise ValueError(f"{name} must hold one id per row ({n}), got shape {arr.shape}")
    out = arr.astype(str)
    bad = (np.char.str_len(out) == 0) | np.char.isspace(out) | (
        np.char.find(out, " ") >= 0) | (np.char.find(out, "\t") >= 0)
    if bad.any():
        i = int(np.flatnonzero(bad)[0])
        raise ValueError(
            f"{name}[{i}] = {str(out[i])!r}: TREC ids must be non-empty and contain no whitespace"
        )
    return out


def _position_ids(qid: np.ndarray) -> np.ndarray:
    """Each row's 0-based position among the rows of its query, as strings."""
    codes, _ = pd.factorize(qid)
    order = np.argsort(codes, kind="stable")
    sizes = np.bincount(codes)
    starts = np.r_[0, np.cumsum(sizes)[:-1]]
    pos = np.empty(len(codes), dtype=np.int64)
    pos[order] = np.arange(len(codes)) - np.repeat(starts, sizes)
    return pos.astype(str)


def write_qrels(path: PathLike, qid: Any, doc_id: Any, relevance: Any) -> Path:
    """Write judgments as a TREC qrels file (``qid 0 docid relevance``), atomically.

    Parameters
    ----------
    path : path-like
        Target file; its folder must exist.
    qid : array-like of shape (n_rows,)
        Query id per row.
    doc_id : array-like of shape (n_rows,) or None
        Document id per row; ``None`` numbers the rows of each query 0, 1, ...
        in input order (what :func:`write_run` does with ``doc_id=None`` for
        the same rows, so a labelled LETOR file gives a matching qrels and run).
    relevance : array-like of shape (n_rows,)
        Finite relevance grades (integers are written without a decimal point).

    Returns
    -------
    Path
        *path*.

    Examples
    --------
    >>> import tempfile, os
    >>> out = os.path.join(tempfile.mkdtemp(), "qrels.txt")
    >>> _ = write_qrels(out, ["q1", "q1"], None, [2, 0])
    >>> print(open(out).read(), end="")
    q1 0 0 2
    q1 0 1 0
    """
    rel = check_1d_float(relevance, "relevance")
    if not np.isfinite(rel).all():
        i = int(np.flatnonzero(~np.isfinite(rel))[0])
        raise ValueError(f"relevance must be finite; relevance[{i}] = {float(rel[i])!r}")
    n = rel.shape[0]
    q = _id_strings(qid, "qid", n)
    d = _position_ids(q) if doc_id is None else _id_strings(doc_id, "doc_id", n)
    grades: Any = rel.astype(np.int64) if (rel == np.round(rel)).all() else rel
    frame = pd.DataFrame({"q": q, "iter": 0, "d": d, "rel": grades})
    return write_atomic(path, frame.to_csv(sep=" ", header=False, index=False,
                                           lineterminator="\n"))


def write_run(
    path: PathLike,
    qid: Any,
    doc_id: Any,
    score: Any,
    *,
    tag: str = "ltr",
) -> Path:
    """Write scored documents as a TREC run file (``qid Q0 docid rank score tag``).

    Rows are grouped by query (in order of first appearance) and ranked by
    score descending, ties by document id descending (trec_eval's order), so
    the ``rank`` column agrees with what trec_eval computes.  Scores of
    ``-inf`` (not ranked) are left out.  The file is written atomically.

    Parameters
    ----------
    path : path-like
        Target file; its folder must exist.
    qid : array-like of shape (n_rows,)
        Query id per row (written as a string without whitespace).
    doc_id : array-like of shape (n_rows,) or None
        Document id per row; ``None`` numbers the rows of each query 0, 1, ...
        in input order (as :func:`write_qrels` does).
    score : array-like of shape (n_rows,)
        Scores, higher first; finite or ``-inf``.
    tag : str, default='ltr'
        Run tag (last column).

    Returns
    -------
    Path
        *path*.

    Examples
    --------
    >>> import tempfile, os
    >>> out = os.path.join(tempfile.mkdtemp(), "run.txt")
    >>> _ = write_run(out, ["q1", "q1"], ["d1", "d2"], [0.5, 2.0], tag="demo")
    >>> print(open(out).read(), end="")
    q1 Q0 d2 1 2.0 demo
    q1 Q0 d1 2 0.5 demo
    """
    scores = check_1d_float(score, "score", allow_empty=True)
    n = scores.shape[0]
    if np.isnan(scores).any() or np.isposinf(scores).any():
        i = int(np.flatnonzero(np.isnan(scores) | np.isposinf(scores))[0])
        raise ValueError(f"score must be finite or -inf; score[{i}] = {float(scores[i])!r}")
    check_tag(tag)
    q = _id_strings(qid, "qid", n)
    d = _position_ids(q) if doc_id is None else _id_strings(doc_id, "doc_id", n)
    keep = scores > -np.inf
    q, d, scores = q[keep], d[keep], scores[keep]
    qcode, _ = pd.factorize(q)
    dcode = np.unique(d, return_inverse=True)[1].ravel()
    order = np.lexsort((-dcode, -scores, qcode))
    q, d, scores, qcode = q[order], d[order], scores[order], qcode[order]
    starts = np.r_[0, np.flatnonzero(np.diff(qcode)) + 1] if qcode.size else np.zeros(0, int)
    rank = np.arange(qcode.size) - np.repeat(starts, np.diff(np.r_[starts, qcode.size])) + 1
    frame = pd.DataFrame({"q": q, "Q0": "Q0", "d": d, "rank": rank, "score": scores, "tag": tag})
    text = frame.to_csv(sep=" ", header=False, index=False, lineterminator="\n")
    return write_atomic(path, text)

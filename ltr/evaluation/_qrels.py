"""Qrels/run evaluation with trec_eval's semantics (or ranx's), on millions of rows.

:func:`evaluate` scores a *run* (scored documents per query) against *qrels*
(judged documents per query) and returns an :class:`EvaluationResult` whose
core is the per-query frame (one row per query, one column per metric).

Semantics shared by every convention:

* the ideal DCG, the number of relevant documents (recall, AP, R-precision)
  count every judged document, retrieved or not; a retrieved document without
  a judgment has relevance 0; an unretrieved one never counts as retrieved;
* a score of ``-inf`` means "not ranked" (the row is dropped);
* binary metrics call a document relevant when its relevance is >=
  ``relevance_level`` (trec_eval's ``-l``); 0 and negative grades are allowed;
* queries only in the run are ignored; queries of the qrels that the run
  lacks are left out and listed in ``missing_queries`` (``missing="zero"``
  scores them 0, trec_eval's ``-c``);
* ``err`` (Chapelle et al., 2009) uses the largest grade in the qrels as its
  maximum; ``hit_rate`` is 1 when a relevant document is in the top k.

========== ========================= ====================================
convention nDCG gain                 tied scores
========== ========================= ====================================
trec_eval  ``max(rel, 0)``           document id descending (as strings)
ranx       ``rel`` if >= level else 0 numba quicksort of the input order
========== ========================= ====================================

Data flow: query ids are factorized with pandas where they change (a run is
grouped by query), document ids become 64-bit hashes of their UTF-8 bytes
(Arrow buffers are read in place, and so are the characters of ``object``
columns of ASCII ``str`` by :mod:`ltr.kernels._pyobjects`, without a copy;
equal hashes are confirmed byte by byte on those views), the run and the
qrels are grouped by query (as blocks of rows where ids come in runs; the
judgments' duplicate check runs inside their per-query sort), and one
numba pass (:func:`ltr.kernels._rank.judged_metrics_fast`) finds each
query's judged documents through a small hash table, ranks them by counting
the documents scored above them, and computes every metric.  Only queries
where a judged document's score ties another document's are sorted in full,
in the convention's tie order (:func:`ltr.kernels._rank.order_run`).
"""

from __future__ import annotations

import os
import warnings
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from itertools import chain
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from ltr._compat import optional_import
from ltr._io import to_jsonable
from ltr._validation import check_real, short_repr
from ltr.evaluation._result import (
    EvaluationResult,
)
from ltr.evaluation.trec import line_of_row, read_table
from ltr.kernels import _dcg as D
from ltr.kernels import _judgments as J
from ltr.kernels import _pyobjects as O
from ltr.kernels import _rank as K
from ltr.metrics.names import (
    CONVENTIONS as NDCG_CONVENTIONS,
)
from ltr.metrics.names import (
    EVALUATION_METRICS,
    QRELS_CONVENTIONS,
    REGISTRY,
    check_convention,
    parse_metric_name,
)

__all__ = ["EvaluationResult", "evaluate", "metric_codes"]


def __getattr__(name: str) -> Any:
    """``CONVENTIONS`` moved to :data:`ltr.metrics.names.QRELS_CONVENTIONS` (one registry)."""
    if name == "CONVENTIONS":
        import warnings

        warnings.warn(
            "ltr.evaluation.CONVENTIONS is deprecated: the conventions of evaluate() are "
            "ltr.metrics.names.QRELS_CONVENTIONS (the one convention registry is "
            "ltr.metrics.names.CONVENTIONS)",
            DeprecationWarning,
            stacklevel=2,
        )
        return QRELS_CONVENTIONS
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def metric_codes(metrics: Sequence[str]) -> tuple[list[str], np.ndarray, np.ndarray]:
    """Parse metric names into ``(names, kernel codes, cut-offs)`` (cut-off 0: none).

    Parameters
    ----------
    metrics : str or sequence of str
        Names such as ``"ndcg@10"``, ``"map"``, ``"r-precision"``.

    Returns
    -------
    names : list of str
        The names as passed (duplicates removed; aliases such as ``"P_10"`` kept as
        passed, so results are keyed by the caller's names).
    codes, ks : ndarray of int64
    """
    if isinstance(metrics, str):
        metrics = [metrics]
    if not isinstance(metrics, Sequence) or len(metrics) == 0:
        raise TypeError(
            f"metrics must be a metric name or a non-empty list of names, got {short_repr(metrics)}"
        )
    names = list(dict.fromkeys(metrics))
    codes, ks = [], []
    for name in names:
        parsed = parse_metric_name(name, metrics=EVALUATION_METRICS, k_optional=True)
        if parsed.convention is not None:
            raise ValueError(
                f"metric name {name!r}: pass the convention to evaluate(convention=...), "
                "not in the name"
            )
        codes.append(getattr(K, str(REGISTRY[parsed.metric].kernel)))
        ks.append(0 if parsed.k is None else parsed.k)
    return names, np.asarray(codes, dtype=np.int64), np.asarray(ks, dtype=np.int64)


# --------------------------------------------------------------------------- #
# inputs                                                                       #
# --------------------------------------------------------------------------- #


@dataclass
class _Table:
    name: str  # "qrels" or "run"
    qid: Any
    doc: Any
    value: np.ndarray
    path: Path | None = None

    def where(self, row: int) -> str:
        if self.path is not None:
            number, text = line_of_row(self.path, row)
            return f"{self.name} file {str(self.path)!r}, line {number} ({text!r})"
        return f"{self.name} row {row}"


def _flatten(mapping: Mapping[Any, Any], name: str, value: str) -> _Table:
    inner = list(mapping.values())
    for q, docs in zip(mapping, inner):
        if not isinstance(docs, Mapping):
            raise TypeError(
                f"{name}[{q!r}] must be a dict doc_id -> {value}, got {short_repr(docs)}"
            )
    sizes = np.fromiter((len(d) for d in inner), dtype=np.int64, count=len(inner))
    keys = np.empty(len(mapping), dtype=object)
    keys[:] = list(mapping)
    qid = np.repeat(keys, sizes)
    doc = np.empty(int(sizes.sum()), dtype=object)
    doc[:] = list(chain.from_iterable(inner))
    raw = list(chain.from_iterable(d.values() for d in inner))
    try:
        values = np.asarray(raw, dtype=np.float64)
    except (TypeError, ValueError):
        values = None
    if values is None or values.ndim != 1 or values.shape[0] != len(raw) or None in raw:
        for i, v in enumerate(raw):
            try:
                float(v)
                ok = not isinstance(v, (str, bytes, bool))
            except (TypeError, ValueError):
                ok = False
            if not ok:
                raise TypeError(
                    f"{name}[{qid[i]!r}][{doc[i]!r}] = {v!r}: {value} must be a number"
                ) from None
    return _Table(name, qid, doc, np.asarray(values, dtype=np.float64))


def _ids(column: pd.Series) -> Any:
    """Return the id column's own array (Arrow strings and categoricals unconverted)."""
    if isinstance(column.dtype, pd.api.extensions.ExtensionDtype):
        return column.array
    return column.to_numpy()


def _from_frame(frame: pd.DataFrame, name: str, value: str) -> _Table:
    missing = [c for c in ("qid", "doc_id", value) if c not in frame.columns]
    if missing:
        raise ValueError(
            f"{name} DataFrame lacks column(s) {missing!r}; it needs 'qid', 'doc_id' and "
            f"{value!r}, its columns are {list(frame.columns)!r}"
        )
    col = frame[value]
    if pd.api.types.is_complex_dtype(col):
        i = int(np.flatnonzero(np.imag(col.to_numpy()) != 0)[0]) if (
            np.imag(col.to_numpy()) != 0).any() else 0
        raise TypeError(
            f"{name} column {value!r} must hold real numbers, got complex dtype; row {i} holds "
            f"{col.iloc[i]!r} (pass the real part explicitly if that is what you mean)"
        )
    if not (pd.api.types.is_numeric_dtype(col) and not pd.api.types.is_bool_dtype(col)):
        numbers = pd.to_numeric(col, errors="coerce")
        bad = numbers.isna().to_numpy() & col.notna().to_numpy()
        if bad.any() or not pd.api.types.is_numeric_dtype(numbers):
            i = int(np.flatnonzero(bad)[0]) if bad.any() else 0
            raise TypeError(
                f"{name} column {value!r} must be numeric; row {i} holds {col.iloc[i]!r}"
            )
        col = numbers
    return _Table(name, _ids(frame["qid"]), _ids(frame["doc_id"]),
                  col.to_numpy(dtype=np.float64))


def _table(obj: Any, name: str, value: str) -> _Table:
    if isinstance(obj, (str, os.PathLike)):
        frame = read_table(obj, name)
        table = _from_frame(frame, name, value)
        table.path = Path(obj)
    elif isinstance(obj, pd.DataFrame):
        table = _from_frame(obj, name, value)
    elif isinstance(obj, Mapping):
        table = _flatten(obj, name, value)
    else:
        raise TypeError(
            f"{name} must be a pandas DataFrame (qid, doc_id, {value}), a dict "
            f"{{qid: {{doc_id: {value}}}}} or a path to a TREC {name} file, got "
            f"{type(obj).__name__}"
        )
    if table.value.shape[0] == 0:
        raise ValueError(f"{name} is empty: at least one (qid, doc_id, {value}) row is required")
    vals = table.value
    bad = np.isnan(vals) if name == "run" else ~np.isfinite(vals)
    if bad.any():
        i = int(np.flatnonzero(bad)[0])
        raise ValueError(
            f"{table.where(i)}: score must be a number or -inf (not ranked), got {float(vals[i])!r}"
            if name == "run"
            else f"{table.where(i)}: {value} must be finite, got {float(vals[i])!r}"
        )
    return table


@dataclass
class _Blocks:
    """Query codes of a table's rows, by blocks of rows.

    Rows ``starts[b]`` up to the next start (the last up to ``n``) hold query
    ``codes[b]``; ungrouped ids are one block per row.
    """

    starts: np.ndarray
    codes: np.ndarray
    n: int

    def row_codes(self) -> np.ndarray:
        """Return the code of every row."""
        return np.repeat(self.codes, np.diff(np.r_[self.starts, self.n]))

    def group(self, n_groups: int) -> tuple[np.ndarray, np.ndarray]:
        """``(rows grouped by code, offsets)`` (rows of code -1 dropped)."""
        return K.group_blocks(self.starts, self.codes, self.n, n_groups)


def _codes(values: Any, name: str) -> tuple[_Blocks, Any]:
    """Codes in order of first appearance; string ids hash only where the id changes."""
    n = len(values)
    if n > 10_000 and not _is_integer(values) and not isinstance(values, pd.Categorical):
        if isinstance(values, np.ndarray):
            # Python objects: compare neighbours in place (by address if all ASCII str)
            fast = O.run_starts(values) if values.dtype == object else None
            starts = (np.flatnonzero(np.r_[True, values[1:] != values[:-1]]) if fast is None
                      else fast)
        else:
            starts = J.run_starts(*_string_buffers(values, name, what="qid"))
        if starts.shape[0] < n // 2:  # ids come in runs (a run file is grouped by query)
            firsts = values.take(starts) if hasattr(values, "take") else values[starts]
            run_codes, uniques = pd.factorize(firsts)
            if (run_codes < 0).any():
                row = int(starts[np.flatnonzero(run_codes < 0)[0]])
                raise ValueError(f"{name} row {row}: qid is missing")
            return _Blocks(starts.astype(np.int64), run_codes.astype(np.int64), n), uniques
    codes, uniques = pd.factorize(values)
    if (codes < 0).any():
        raise ValueError(f"{name} row {int(np.flatnonzero(codes < 0)[0])}: qid is missing")
    return _Blocks(np.arange(n), codes.astype(np.int64, copy=False), n), uniques


def _run_query_codes(values: Any, uniques: Any) -> _Blocks:
    """Codes of the run's query ids among the qrels' (-1: a query only in the run)."""
    blocks, run_uniques = _codes(values, "run")
    table = pd.Index(uniques).get_indexer(pd.Index(run_uniques)).astype(np.int64)
    blocks.codes = table[blocks.codes]
    return blocks


def _is_integer(values: Any) -> bool:
    dtype = getattr(values, "dtype", None)
    return (dtype is not None and not isinstance(dtype, pd.CategoricalDtype)
            and pd.api.types.is_integer_dtype(dtype))


def _string_buffers(
    values: Any, name: str, what: str = "doc_id"
) -> tuple[np.ndarray, np.ndarray]:
    """UTF-8 ``(offsets, bytes)`` of string ids (Arrow-backed columns are used in place)."""
    n = len(values)
    try:
        pa: Any = optional_import("pyarrow", purpose="fast string ids")
    except ImportError:  # pragma: no cover - pyarrow ships with the test extra
        pa = None  # the pure-Python path below
    if pa is not None:
        try:
            arr = pa.array(values, from_pandas=True)
            if pa.types.is_dictionary(arr.type):
                arr = arr.dictionary_decode()
            arr = arr.cast(pa.large_string())
        except (pa.ArrowInvalid, pa.ArrowTypeError, pa.ArrowNotImplementedError):
            arr = pa.array(np.asarray(values).astype(str), type=pa.large_string())
        if isinstance(arr, pa.ChunkedArray):
            arr = arr.combine_chunks()
        if arr.null_count:
            row = int(np.flatnonzero(arr.is_null().to_numpy(zero_copy_only=False))[0])
            raise ValueError(f"{name} row {row}: {what} is missing")
        bufs = arr.buffers()
        offsets = np.frombuffer(bufs[1], dtype=np.int64)[arr.offset : arr.offset + n + 1]
        data = np.frombuffer(bufs[2], dtype=np.uint8) if bufs[2] is not None else np.zeros(
            0, np.uint8)
        return np.ascontiguousarray(offsets), data
    objs = np.asarray(values, dtype=object)
    nulls = pd.isna(objs)
    if nulls.any():
        raise ValueError(f"{name} row {int(np.flatnonzero(nulls)[0])}: {what} is missing")
    encoded = [str(v).encode() for v in objs]
    lengths = np.fromiter(map(len, encoded), dtype=np.int64, count=n)
    offsets = np.zeros(n + 1, dtype=np.int64)
    np.cumsum(lengths, out=offsets[1:])
    return offsets, np.frombuffer(b"".join(encoded), dtype=np.uint8)


_NO_STRINGS = (np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64),
               np.frombuffer(b"", dtype=np.uint8))  # read-only, as the views are

Strings = tuple[np.ndarray, np.ndarray, np.ndarray]


def _doc_keys(values: Any, name: str) -> tuple[np.ndarray, Strings]:
    """int64 key per row, and the id strings to confirm equal keys (none for integer ids).

    The strings are ``(starts, ends, data)``: id ``i`` is ``data[starts[i]:ends[i]]``,
    a view of the column's own bytes (Arrow buffers, or the characters of
    ``object`` columns of ASCII ``str``, read in place and hashed in the same pass).
    """
    if _is_integer(values):
        return np.asarray(values, dtype=np.int64), _NO_STRINGS
    keys = np.empty(len(values), dtype=np.uint64)
    views = None
    if isinstance(values, np.ndarray) and values.dtype == object and values.ndim == 1:
        views = O.ascii_views(values, keys)
    if views is None:
        offsets, data = _string_buffers(values, name)
        J.hash_strings(offsets, data, keys)
        views = (offsets[:-1], offsets[1:], data)
    return keys.view(np.int64), views


def _doc_text(row: int, doc: Any, strings: Strings) -> bytes:
    starts, ends, data = strings
    if starts.shape[0] == 0:
        return str(doc[row]).encode()
    return data[starts[row] : ends[row]].tobytes()


def _same_kind(a: Any, b: Any) -> tuple[Any, Any]:
    """Make ids comparable: numbers against strings compare as strings."""
    def numeric(x: Any) -> bool:
        dtype = x.categories.dtype if isinstance(x, pd.Categorical) else x.dtype
        if dtype == object:
            return len(x) > 0 and isinstance(x[0], (int, float, np.integer, np.floating))
        return bool(pd.api.types.is_numeric_dtype(dtype))

    if numeric(a) != numeric(b):
        return np.asarray(a).astype(str), np.asarray(b).astype(str)
    return a, b


# --------------------------------------------------------------------------- #
# the result                                                                   #
# --------------------------------------------------------------------------- #






# --------------------------------------------------------------------------- #
# evaluate                                                                     #
# --------------------------------------------------------------------------- #


def _check_unique(table: _Table, offsets: np.ndarray, rows: np.ndarray, keys: np.ndarray,
                  strings: Strings, found: np.ndarray | None = None) -> None:
    row = int(J.first_duplicate(offsets, rows, keys, strings, found))
    if row >= 0:
        raise ValueError(
            f"{table.where(row)}: duplicated (qid, doc_id) = "
            f"({table.qid[row]!r}, {table.doc[row]!r})"
        )


def evaluate(
    qrels: Any,
    run: Any,
    metrics: str | Sequence[str],
    *,
    convention: str | None = None,
    relevance_level: float = 1,
    missing: str = "skip",
    max_grade: float | None = None,
) -> EvaluationResult:
    """Evaluate a run against judgments, per query, with trec_eval's (or ranx's) semantics.

    Parameters
    ----------
    qrels : DataFrame, dict or path
        Judged documents: a DataFrame with columns ``qid``, ``doc_id``,
        ``relevance``; a dict ``{qid: {doc_id: relevance}}``; or a TREC qrels
        file (``qid 0 docid rel``).
    run : DataFrame, dict or path
        Scored documents: a DataFrame with ``qid``, ``doc_id``, ``score``; a
        dict ``{qid: {doc_id: score}}``; or a TREC run file
        (``qid Q0 docid rank score tag``).  ``-inf`` scores are not ranked.
    metrics : str or list of str
        Names from :data:`ltr.metrics.names.EVALUATION_METRICS` with an
        optional ``@K``: ``"ndcg"``, ``"ndcg@10"``, ``"dcg@10"``, ``"map"``,
        ``"map@100"``, ``"mrr"``, ``"mrr@10"``, ``"precision@10"``,
        ``"recall@100"``, ``"r-precision"``, ``"hit_rate@10"``, ``"err@10"``, or
        their trec_eval / ir_measures names (``"P_10"``, ``"ndcg_cut_10"``,
        ``"recip_rank"``, ``"Rprec"``, ``"P@10"``...).  Results are keyed by
        the names as passed.
    convention : {None, 'trec_eval', 'ranx'}, default=None
        ``None`` is ``'trec_eval'``: every value equals pytrec_eval's (``ndcg``,
        ``ndcg_cut_k``, ``map``, ``map_cut_k``, ``recip_rank``, ``P_k``,
        ``recall_k``, ``Rprec``).  ``'ranx'`` equals ranx's metrics of the same
        names (nDCG gain 0 below ``relevance_level``, ties in ranx's order).
    relevance_level : float, default=1
        Relevance from which a judged document is relevant (binary metrics).
    missing : {'skip', 'zero'}, default='skip'
        Queries of the qrels absent from the run: left out (listed in
        ``missing_queries``) or scored 0 (trec_eval ``-c``).
    max_grade : float, optional
        ERR's maximum grade; default the largest relevance in the qrels.

    Returns
    -------
    EvaluationResult

    Raises
    ------
    ValueError
        A duplicated ``(qid, doc_id)``, NaN relevance or score, a missing
        column, empty input, a malformed file line (the message names the
        input and the row or line), or a bad option.
    TypeError
        Non-numeric relevance or score, or an input of another type.

    Examples
    --------
    >>> qrels = {"q1": {"a": 2, "b": 0, "c": 1}}
    >>> run = {"q1": {"a": 0.9, "b": 0.8, "x": 0.7}}
    >>> res = evaluate(qrels, run, ["precision@2", "map", "r-precision"])
    >>> res.mean
    {'precision@2': 0.5, 'map': 0.5, 'r-precision': 0.5}
    """
    try:
        conv = "trec_eval" if convention is None else check_convention(convention,
                                                                         QRELS_CONVENTIONS)
    except ValueError as exc:
        raise ValueError(f"convention must be None or one of {list(QRELS_CONVENTIONS)!r}: "
                         f"{exc}") from None
    if missing not in ("skip", "zero"):
        raise ValueError(f"missing must be 'skip' or 'zero', got {missing!r}")
    level = check_real(relevance_level, "relevance_level")
    names, codes, ks = metric_codes(metrics)
    q = _table(qrels, "qrels", "relevance")
    r = _table(run, "run", "score")

    # Queries: codes in qrels order; run rows of other queries get -1 (ignored).
    q.qid, r.qid = _same_kind(q.qid, r.qid)
    q_blocks, q_ids = _codes(q.qid, "qrels")
    n_q = len(q_ids)
    r_blocks = _run_query_codes(r.qid, q_ids)
    # Documents: 64-bit keys (hashes of the id strings, confirmed byte by byte).
    q.doc, r.doc = _same_kind(q.doc, r.doc)
    q_key, q_str = _doc_keys(q.doc, "qrels")
    r_key, r_str = _doc_keys(r.doc, "run")

    # Judgments grouped by query, sorted by key; duplicates are errors.
    j_rows, j_offsets = q_blocks.group(n_q)
    j_key = np.empty_like(j_rows)
    j_row = np.empty_like(j_rows)
    j_rel = np.empty(j_rows.shape[0])
    ideal = np.empty(j_rows.shape[0])
    equal_keys = J.sort_judgments(j_offsets, j_rows, q_key, q.value, j_key, j_row, j_rel, ideal)
    _check_unique(q, j_offsets, j_rows, q_key, q_str, equal_keys)

    # Run grouped by query (input order kept); duplicates are errors; -inf is not ranked.
    rows, r_offsets = r_blocks.group(n_q)
    has_inf = bool(r.value.min() == -np.inf)
    if has_inf:  # before unranked rows are dropped (else: checked in the metric pass)
        _check_unique(r, r_offsets, rows, r_key, r_str)
    present = np.diff(r_offsets) > 0
    if not present.any():
        shown_q = list(np.asarray(q_ids)[:3])
        shown_r = list(pd.unique(np.asarray(r.qid))[:3])
        raise ValueError(
            f"qrels and run have no query in common: the qrels' queries start {shown_q!r}, the "
            f"run's {shown_r!r}; check that the run belongs to these judgments (and that query "
            "ids are written alike, e.g. 'q1' vs '1')"
        )
    if has_inf:
        n_inf = int(np.count_nonzero(r.value[rows] == -np.inf))
        if n_inf:
            warnings.warn(
                f"run: {n_inf} document(s) scored -inf are left unranked (not retrieved); "
                "trec_eval would rank them last, so metrics that read the whole list (map, "
                "recall, ndcg without @K) can differ from trec_eval's",
                UserWarning, stacklevel=2,
            )
        rows = rows[r.value[rows] > -np.inf]
        counts = np.bincount(r_blocks.row_codes()[rows], minlength=n_q)
        r_offsets = np.r_[0, np.cumsum(counts)].astype(np.int64)

    gmax = float(q.value.max()) if max_grade is None else check_real(max_grade, "max_grade")
    err_scale = 2.0 ** -max(gmax, 0.0)
    longest = max(int(np.diff(r_offsets).max(initial=0)), int(np.diff(j_offsets).max()), 1)
    discount = 1.0 / np.log2(np.arange(2, longest + 2, dtype=np.float64))
    gain_mode = K.GAIN_NONNEG if conv == "trec_eval" else K.GAIN_LEVEL
    out = np.zeros((n_q, len(names)))
    relevant = np.zeros(n_q, dtype=np.int64)
    # Queries where no judged document ties another need no sort of their run.
    flagged = np.zeros(n_q, dtype=np.bool_)
    repeated = np.zeros(0 if has_inf else n_q, dtype=np.bool_)
    n_flagged = K.judged_metrics_fast(r.value, r_offsets, rows, r_key, j_offsets, j_key, j_row,
                                      j_rel, ideal, r_str, q_str, codes, ks, gain_mode, level,
                                      err_scale, discount, out, relevant, flagged, repeated)
    if repeated.any():
        _check_unique(r, r_offsets, rows, r_key, r_str, repeated)
    if n_flagged:
        # ranx sorts with numba's quicksort; for trec_eval any first order will do, as
        # tied scores are then re-ordered by document id.
        order = np.empty(rows.shape[0], dtype=np.int64)
        tied = np.zeros(rows.shape[0], dtype=np.bool_)
        none = np.empty(0)
        n_tied = K.order_run(r.value, rows, r_offsets, none, D.TIES_STABLE, True, order, tied,
                             flagged)
        if n_tied and conv == "trec_eval":
            # trec_eval breaks ties by document id descending, compared as byte strings.
            texts = [_doc_text(int(i), r.doc, r_str) for i in rows[tied]]
            keys = np.zeros(rows.shape[0])
            keys[tied] = np.unique(np.array(texts, dtype=object), return_inverse=True)[1].ravel()
            K.order_run(r.value, rows, r_offsets, keys, D.TIES_KEY_DESC, False, order, tied,
                        flagged)
        K.judged_metrics(order, r_offsets, rows, r_key, j_offsets, j_key, j_row, j_rel, ideal,
                         r_str, q_str, codes, ks, gain_mode, level, err_scale, discount, out,
                         relevant, flagged)

    keep = present if missing == "skip" else np.ones(n_q, dtype=bool)
    index = pd.Index(np.asarray(q_ids)[keep], name="qid")
    frame = pd.DataFrame(out[keep], index=index, columns=names)
    missing_ids = list(np.asarray(q_ids)[~present])
    # no positive gain: trec_eval counts grades > 0, ranx grades >= 1 (CONVENTIONS)
    threshold = NDCG_CONVENTIONS[conv].min_relevant
    max_rel = np.maximum.reduceat(j_rel, j_offsets[:-1]) if len(j_rel) else np.zeros(n_q)
    empty = max_rel <= 0 if threshold is None else max_rel < threshold
    return EvaluationResult(frame, names, to_jsonable(missing_ids), conv, level, missing,
                            int(empty[keep].sum()))

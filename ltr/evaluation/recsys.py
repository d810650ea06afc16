"""Rank metrics of a recommender's dense score matrix against held-out interactions.

:func:`evaluate` takes a ``(n_users, n_items)`` score matrix, a sparse matrix
of held-out interactions (the judgments) and, optionally, a sparse matrix of
items to mask (the training interactions), and returns the same
:class:`~ltr.evaluation.EvaluationResult` as the qrels/run evaluation
(:func:`ltr.evaluation.evaluate`), with one row per user.

Semantics are exactly those of :func:`ltr.evaluation.evaluate` with the user's
row as the query and every non-excluded item as a retrieved document scored by
its score: the ideal DCG counts every judged item of the user, whether or not
it reaches the top k; recall and AP divide by every relevant item.  Rows are
processed ``batch_size`` users at a time by one numba pass
(:mod:`ltr.kernels._recsys`) that keeps each row's top k items in a bounded
heap, so memory stays bounded for millions of users and no row is fully
sorted unless a metric reads the whole list (``"map"``, ``"r-precision"``).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd
import scipy.sparse as sp

from ltr._validation import check_int, check_real, short_repr
from ltr.evaluation import EvaluationResult, metric_codes
from ltr.kernels import _rank as K
from ltr.kernels import _recsys as R
from ltr.metrics.names import QRELS_CONVENTIONS

__all__ = ["RecsysResult", "evaluate"]
from ltr.metrics.empty_queries import EmptyQueryRule


@dataclass
class RecsysResult(EvaluationResult):
    """An :class:`~ltr.evaluation.EvaluationResult` with one row per user.

    ``per_query`` is indexed by user row ``0 .. n_users - 1`` (index name
    ``"user"``) and keeps every user; users without a relevant item are NaN
    when ``empty="skip"`` and are listed in ``missing_queries``.  Means,
    intervals and ``n_queries`` count the evaluated (non-NaN) users only.
    ``empty_score`` is what a user without a relevant item scores (None:
    left out, ``empty="skip"``).
    """

    empty_score: float | None = None

    @property
    def empty_rule(self) -> EmptyQueryRule:
        """Users without a relevant item: how many, and whether they were left out or scored."""
        return EmptyQueryRule(self.convention, self.empty_score, self.n_empty, self.n_users)

    def _evaluated(self) -> EvaluationResult:
        return EvaluationResult(self.per_query.dropna(how="all"), self.metrics,
                                self.missing_queries, self.convention, self.relevance_level,
                                self.missing)

    @property
    def n_users(self) -> int:
        """Number of users (rows of the score matrix)."""
        return int(self.per_query.shape[0])

    @property
    def n_empty(self) -> int:
        """Number of users without a relevant item."""
        return len(self.missing_queries)

    @property
    def n_queries(self) -> int:
        """Number of users averaged."""
        return self._evaluated().n_queries

    def confidence_interval(self, level: float = 0.95) -> dict[str, tuple[float, float]]:
        """Student-t interval of each mean over the evaluated users (see the base class)."""
        return self._evaluated().confidence_interval(level)

    def to_markdown(self, digits: int = 4) -> str:
        """Return a markdown table: metric, mean, 95 % interval, number of users averaged."""
        text = EvaluationResult(self.per_query.dropna(how="all"), self.metrics, [],
                                self.convention, self.relevance_level,
                                self.missing).to_markdown(digits)
        if self.missing_queries:
            how = "left out" if self.missing == "skip" else "given the `empty` value"
            text += f"\n{self.n_empty} users without a relevant item ({how}).\n"
        return text


def _dense_scores(scores: Any) -> np.ndarray:
    """Return the score matrix as a float 2-d array; errors name ``scores`` and the value."""
    if sp.issparse(scores):
        raise TypeError(
            f"scores must be a dense (n_users, n_items) array, got a scipy.sparse "
            f"{type(scores).__name__} of shape {scores.shape}: a missing entry of a sparse "
            "matrix would rank as score 0; pass scores.toarray() (and -inf for items never "
            "ranked)"
        )
    if isinstance(scores, np.ndarray):
        arr = scores
    else:
        try:
            arr = np.asarray(scores)
        except ValueError:
            arr = np.asarray(scores, dtype=object)
    if arr.dtype == object and arr.ndim == 1 and arr.size and all(
            hasattr(r, "__len__") for r in arr):
        lengths = [len(r) for r in arr]
        bad = next(i for i, n in enumerate(lengths) if n != lengths[0])
        raise ValueError(
            f"scores must be a 2-d (n_users, n_items) array with one score per item in every "
            f"row; row 0 has {lengths[0]} scores but row {bad} has {lengths[bad]}"
        )
    if arr.ndim != 2:
        raise ValueError(f"scores must be a 2-d (n_users, n_items) array, got shape {arr.shape}"
                         f" ({short_repr(scores)})")
    if arr.dtype.kind == "c":
        raise TypeError("scores must hold real numbers, got complex values; pass the real part "
                        "explicitly (scores.real) if that is what you mean")
    if arr.dtype.kind not in "fiub":
        flat = arr.ravel()
        first = next((i for i, v in enumerate(flat) if not isinstance(
            v, (int, float, np.integer, np.floating)) or isinstance(v, bool)), 0)
        u, j = divmod(first, arr.shape[1]) if arr.shape[1] else (0, 0)
        raise TypeError(f"scores must hold numbers, got dtype {arr.dtype}: user row {u}, item "
                        f"{j} holds {flat[first]!r}")
    if arr.shape[0] == 0 or arr.shape[1] == 0:
        raise ValueError(f"scores has shape {arr.shape}: at least one user and one item are "
                         "required")
    if arr.dtype not in (np.float32, np.float64):
        arr = arr.astype(np.float64)
    return arr


def _csr(matrix: Any, name: str, shape: tuple[int, int]) -> sp.csr_matrix:
    if not sp.issparse(matrix):
        raise TypeError(
            f"{name} must be a scipy.sparse matrix (CSR) of shape {shape}, got {short_repr(matrix)}"
        )
    if matrix.shape != shape:
        raise ValueError(
            f"{name} has shape {matrix.shape}, but scores has shape {shape} (users x items)"
        )
    csr = sp.csr_matrix(matrix)
    if not csr.has_canonical_format:
        csr = csr.copy()
        csr.sum_duplicates()
    return csr


def _entry(csr: sp.csr_matrix, position: int) -> tuple[int, int]:
    row = int(np.searchsorted(csr.indptr, position, side="right") - 1)
    return row, int(csr.indices[position])


def _check_relevance(rel: sp.csr_matrix) -> np.ndarray:
    if rel.dtype.kind not in "fiub":
        raise TypeError(f"relevant must hold real relevance grades, got dtype {rel.dtype}")
    data = np.asarray(rel.data, dtype=np.float64)
    bad = np.flatnonzero(~(data >= 0.0))
    if bad.size:
        user, item = _entry(rel, int(bad[0]))
        what = "NaN" if math.isnan(data[bad[0]]) else f"negative ({float(data[bad[0]])!r})"
        raise ValueError(f"relevant: user row {user}, item {item}: relevance is {what}")
    return data


def evaluate(
    scores: Any,
    relevant: Any,
    metrics: str | Sequence[str],
    *,
    exclude: Any = None,
    convention: str | None = None,
    batch_size: int = 4096,
    relevance_level: float = 1,
    empty: str | float = "skip",
    **metric_options: Any,
) -> RecsysResult:
    """Evaluate a dense score matrix per user, as :func:`ltr.evaluation.evaluate` would.

    Each user's row is a query; every item not in *exclude* (and not scored
    ``-inf``) is a retrieved document scored by its score; the user's stored
    entries of *relevant* are its judgments.  Values equal
    :func:`ltr.evaluation.evaluate` on the same data written as qrels/run
    frames (``qid`` = user, ``doc_id`` = item).

    Tied scores break by item index ascending (the lower index ranks first).
    This is a deliberate, reproducible choice: under ``"trec_eval"`` (which
    orders ties by document id descending, as strings) it is what trec_eval
    does when item ``j``'s id sorts after item ``j + 1``'s, e.g. the
    zero-padded ``n_items - 1 - j``; ``"ranx"`` orders ties by its own sort of
    the input, so the two agree on tie-free scores only.

    Parameters
    ----------
    scores : array-like of shape (n_users, n_items)
        Dense scores (float32 or float64; other numbers become float64).
        ``-inf`` means "not ranked"; NaN is an error.
    relevant : scipy.sparse matrix of shape (n_users, n_items)
        Held-out interactions (CSR, or converted to it): stored values are
        relevance grades, explicit zeros are judged non-relevant; duplicates
        are summed.
    metrics : str or list of str
        Names of :data:`ltr.metrics.names.EVALUATION_METRICS` with their cut-off:
        ``"ndcg@10"``, ``"dcg@10"``, ``"map@10"``, ``"mrr@10"``,
        ``"precision@10"``, ``"recall@20"``, ``"hit_rate@10"``, ``"err@10"``;
        names without ``@K`` (``"map"``, ``"r-precision"``) rank the whole row.
    exclude : scipy.sparse matrix of shape (n_users, n_items), optional
        Items never ranked for the user (e.g. training interactions); the
        stored positions count, their values do not.
    convention : {None, 'trec_eval', 'ranx'}, default=None
        nDCG gain: ``max(rel, 0)`` (trec_eval) or ``rel`` if ``rel >=
        relevance_level`` else 0 (ranx).  Ties always break by item index.
    batch_size : int, default=4096
        Users per batch (memory: one batch of scores plus per-thread buffers
        of ``n_items`` entries).
    relevance_level : float, default=1
        Relevance from which an item is relevant (binary metrics).
    empty : 'skip' or float, default='skip'
        Users with no item of relevance >= *relevance_level*: ``"skip"`` makes
        them NaN, left out of the means and listed in ``missing_queries``; a
        number is their value for every metric (listed too).
    **metric_options
        ``max_grade`` (float): ERR's maximum grade, default the largest
        relevance in *relevant*.

    Returns
    -------
    RecsysResult
        An :class:`~ltr.evaluation.EvaluationResult` whose ``to_frame()`` has
        one row per user (index ``user`` = row ``0 .. n_users - 1``).

    Raises
    ------
    ValueError
        Shapes that disagree, negative or NaN relevance, a NaN score, a
        relevant item (positive relevance) that is also excluded (the message
        names the user row and the item), or a bad option.
    TypeError
        A non-sparse *relevant* or *exclude*, or an unknown metric option.

    Examples
    --------
    >>> import numpy as np, scipy.sparse as sp
    >>> scores = np.array([[0.9, 0.1, 0.5, 0.3], [0.2, 0.8, 0.4, 0.6]])
    >>> relevant = sp.csr_matrix(np.array([[0, 0, 1, 0], [0, 0, 0, 0]]))
    >>> exclude = sp.csr_matrix(np.array([[1, 0, 0, 0], [0, 0, 0, 0]]))
    >>> res = evaluate(scores, relevant, ["precision@1", "recall@2"], exclude=exclude)
    >>> res.mean
    {'precision@1': 1.0, 'recall@2': 1.0}
    >>> res.n_empty
    1
    """
    conv = "trec_eval" if convention is None else convention
    if conv not in QRELS_CONVENTIONS:
        raise ValueError(
            f"convention must be None or one of {list(QRELS_CONVENTIONS)!r}, got {convention!r}"
        )
    unknown = set(metric_options) - {"max_grade"}
    if unknown:
        raise TypeError(f"unknown metric option(s) {sorted(unknown)!r}; only 'max_grade'")
    if isinstance(empty, str):
        if empty != "skip":
            raise ValueError(f"empty must be 'skip' or a number, got {empty!r}")
        fill = math.nan
    else:
        fill = check_real(empty, "empty")
    level = check_real(relevance_level, "relevance_level")
    batch = check_int(batch_size, "batch_size", minimum=1)
    names, codes, ks = metric_codes(metrics)

    arr = _dense_scores(scores)
    shape = (int(arr.shape[0]), int(arr.shape[1]))
    n_users, n_items = shape
    rel = _csr(relevant, "relevant", shape)
    rel_data = _check_relevance(rel)
    if exclude is None:
        ex_indptr = np.zeros(n_users + 1, dtype=np.int64)
        ex_indices = np.zeros(0, dtype=np.int64)
    else:
        ex = _csr(exclude, "exclude", shape)
        ex_indptr = ex.indptr.astype(np.int64)
        ex_indices = ex.indices.astype(np.int64)
    rel_indptr = rel.indptr.astype(np.int64)
    rel_indices = rel.indices.astype(np.int64)

    max_grade = metric_options.get("max_grade")
    if max_grade is None:
        gmax = float(rel_data.max()) if rel_data.size else 0.0
    else:
        gmax = check_real(max_grade, "max_grade")
    err_scale = 2.0 ** -max(gmax, 0.0)
    max_judged = int(np.diff(rel_indptr).max(initial=0))
    full = bool(np.any((ks <= 0) & (codes != K.RPREC)))
    depth = n_items if full else int(ks.max(initial=1))
    if np.any(codes == K.RPREC):
        depth = max(depth, max_judged)
    cap_max = max(1, min(depth, n_items))
    discount = 1.0 / np.log2(np.arange(2, max(n_items, max_judged, 1) + 2, dtype=np.float64))
    gain_mode = K.GAIN_NONNEG if conv == "trec_eval" else K.GAIN_LEVEL

    out = np.zeros((n_users, len(names)))
    n_rel = np.zeros(n_users, dtype=np.int64)
    err_kind = np.zeros(n_users, dtype=np.int8)
    err_item = np.full(n_users, -1, dtype=np.int64)
    for start in range(0, n_users, batch):
        block = np.ascontiguousarray(arr[start : start + batch])
        R.score_matrix_metrics(block, start, rel_indptr, rel_indices, rel_data, ex_indptr,
                               ex_indices, codes, ks, cap_max, gain_mode, level, err_scale,
                               discount, out, n_rel, err_kind, err_item, max_judged)
        stop = start + block.shape[0]
        bad = np.flatnonzero(err_kind[start:stop])
        if bad.size:
            user = start + int(bad[0])
            item = int(err_item[user])
            if err_kind[user] == R.NAN_SCORE:
                raise ValueError(f"scores: user row {user}, item {item}: score is NaN")
            raise ValueError(
                f"user row {user}, item {item}: a relevant item (relevance "
                f"{float(rel[user, item])!r}) is also excluded; excluded items are never ranked"
            )

    empty_users = np.flatnonzero(n_rel == 0)
    out[empty_users] = fill
    frame = pd.DataFrame(out, index=pd.RangeIndex(n_users, name="user"), columns=names)
    missing = "skip" if math.isnan(fill) else "zero"
    return RecsysResult(frame, names, [int(u) for u in empty_users], conv, level, missing,
                        empty_score=None if math.isnan(fill) else float(fill))

r"""Precision, recall, AP, RR, R-precision, ERR and hit rate over ragged queries of rows you hold.

The same calling convention as :func:`ltr.metrics.ndcg`: one relevance label
and one score per row, queries given by ``qid``, ``group`` or ``offsets``,
``k`` an int, ``None`` (the whole query) or a list, per-query ``weights``,
``reduce="mean"`` or ``None``, and a ``convention``.  "All judged documents"
are the rows of the query, so recall and AP divide by the query's rows with
label >= ``relevance_level``.

Definitions (:math:`r_i`: label at rank :math:`i`, :math:`R`: rows with
:math:`r \ge` level, :math:`m = \min(k, n)`):

* precision@k: relevant rows in the top :math:`m`, divided by :math:`k`
  (trec_eval's ``P_k``; without ``k``: by :math:`n`);
* recall@k: relevant rows in the top :math:`m`, divided by :math:`R`;
* average_precision@k: :math:`\frac{1}{R}\sum_{i \le m, r_i \ge l} P@i`
  (trec_eval ``map_cut_k``);
* reciprocal_rank@k: :math:`1/i` of the first relevant row within the top :math:`m`;
* r_precision: relevant rows in the top :math:`R`, divided by :math:`R`
  (trec_eval ``Rprec``; no cut-off);
* hit_rate@k: 1 when a relevant row is in the top :math:`m`;
* err@k (Chapelle et al., 2009): :math:`\sum_{i \le m} \frac{1}{i} R_i
  \prod_{j<i}(1 - R_j)` with :math:`R = (2^{r} - 1) / 2^{g_{max}}`, where
  :math:`g_{max}` is the largest label given (or ``max_grade``).

A query without relevant rows (ERR: without a positive label) takes
``empty`` (``'skip'``: left out of the mean, NaN per query); trec_eval,
ranx and scikit-learn score it 0, LightGBM and XGBoost 1.  Ties among
equal scores follow ``ties``: ``'stable'`` (input order; LightGBM,
XGBoost, ranx), ``'doc_id_desc'`` (trec_eval, needs ``doc_ids``),
``'pessimistic'`` or ``'optimistic'``; averaging over tie orders is not
defined for these metrics, so the ``sklearn`` convention and
``ties='average'`` are refused.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import numpy as np

from ltr._validation import check_cutoffs, check_real, check_reduce
from ltr.kernels import _rank as K
from ltr.metrics._ndcg import KSpec, per_k, prepare_rows, reduce_values, resolve_convention

__all__ = [
    "average_precision",
    "err",
    "hit_rate",
    "precision",
    "r_precision",
    "recall",
    "reciprocal_rank",
]


def _compute(
    code: int,
    name: str,
    y_true: Any,
    y_score: Any,
    *,
    qid: Any,
    group: Any,
    offsets: Any,
    k: KSpec,
    relevance_level: float,
    ties: str | None,
    empty: float | str | None,
    weights: Any,
    doc_ids: Any,
    reduce: str | None,
    convention: str | None,
    max_grade: float | None = None,
) -> Any:
    if convention is None and ties is None:
        ties = "stable"
    conv = resolve_convention(convention, ties=ties, empty=empty)
    if conv.ties == "average":
        raise ValueError(
            f"{name} has no tie-averaged definition: use ties='stable', 'pessimistic', "
            f"'optimistic' or 'doc_id_desc' (convention={convention!r}, ties={conv.ties!r})"
        )
    conv = replace(conv, gain="linear", min_relevant=None)
    level = check_real(relevance_level, "relevance_level")
    ks = check_cutoffs(k)
    check_reduce(reduce)
    prep = prepare_rows(y_true, y_score, qid=qid, group=group, offsets=offsets, conv=conv,
                    weights=weights, doc_ids=doc_ids)
    gmax = float(prep.labels.max()) if max_grade is None else check_real(max_grade, "max_grade")
    err_scale = 2.0 ** -max(gmax, 0.0)
    n_q = prep.offsets.size - 1
    codes = np.full(len(ks), code, dtype=np.int64)
    kk = np.array([0 if v is None else v for v in ks], dtype=np.int64)
    out = np.zeros((n_q, len(ks)))
    relevant = np.zeros(n_q, dtype=np.int64)
    tie_keys = prep.tie_keys if prep.tie_keys.size else np.empty(0)
    K.rows_metrics(prep.labels, prep.scores, tie_keys, prep.tie_mode, prep.offsets, codes, kk,
                   level, err_scale, np.empty(0), out, relevant)
    if code == K.ERR:  # ERR is graded: a query without a positive label has nothing to find
        relevant = np.add.reduceat((prep.labels > 0).astype(np.int64), prep.offsets[:-1])
    no_relevant = relevant == 0
    skip = isinstance(conv.empty, str)
    if no_relevant.any():
        out[no_relevant] = np.nan if skip else float(conv.empty)
    n_empty = int(no_relevant.sum())
    unweighted = None if skip or not conv.empty_unweighted else no_relevant
    column = {v: j for j, v in enumerate(ks)}

    def compute(kv: int | None) -> Any:
        return reduce_values(out[:, column[kv]].copy(), prep.weights, n_empty if skip else 0,
                             reduce, unweighted)

    return per_k(ks, k, compute)


_DOC = """
    Parameters
    ----------
    y_true : array-like of shape (n_rows,)
        Relevance labels; rows with label >= ``relevance_level`` are relevant.
    y_score : array-like of shape (n_rows,)
        Predicted scores; higher ranks first.
    qid, group, offsets : array-like
        Exactly one: a query id per row (contiguous), query sizes, or ``int64``
        offsets of length ``n_queries + 1``.
    k : int, None or list of int, default=10
        Cut-off; ``None`` is the whole query; a list returns ``{k: value}``.
    relevance_level : float, default=1
        Smallest relevant label (trec_eval ``-l``).
    ties : {'stable', 'doc_id_desc', 'pessimistic', 'optimistic'}, optional
        Order among equal scores (default: the convention's; ``'stable'``
        without one).
    empty : 'skip' or float, optional
        Value of a query without relevant rows (default: the convention's;
        ``'skip'`` without one).
    weights : array-like of shape (n_queries,), optional
        Per-query weights for the mean.
    doc_ids : array-like of shape (n_rows,), optional
        Document ids, for ``ties='doc_id_desc'``.
    reduce : {'mean', None}, default='mean'
        The mean (a :class:`ltr.metrics.MetricValue`) or the per-query array.
    convention : {'lightgbm', 'xgboost', 'trec_eval', 'ranx'}, optional
        Ties and ``empty`` of that tool (see :mod:`ltr.metrics`).

    Returns
    -------
    MetricValue, ndarray or dict
        The mean, the per-query values, or a dict keyed by ``k``.
"""


def _signature_doc(summary: str, example: str) -> str:
    return f"{summary}\n{_DOC}\n    Examples\n    --------\n{example}"


def precision(y_true: Any, y_score: Any, *, qid: Any = None, group: Any = None,
              offsets: Any = None, k: KSpec = 10, relevance_level: float = 1,
              ties: str | None = None, empty: float | str | None = None, weights: Any = None,
              doc_ids: Any = None, reduce: str | None = "mean",
              convention: str | None = None) -> Any:
    """Precision@k (full docstring below)."""
    return _compute(K.PRECISION, "precision", y_true, y_score, qid=qid, group=group,
                    offsets=offsets, k=k, relevance_level=relevance_level, ties=ties,
                    empty=empty, weights=weights, doc_ids=doc_ids, reduce=reduce,
                    convention=convention)


def recall(y_true: Any, y_score: Any, *, qid: Any = None, group: Any = None,
           offsets: Any = None, k: KSpec = 10, relevance_level: float = 1,
           ties: str | None = None, empty: float | str | None = None, weights: Any = None,
           doc_ids: Any = None, reduce: str | None = "mean",
           convention: str | None = None) -> Any:
    """Recall@k (full docstring below)."""
    return _compute(K.RECALL, "recall", y_true, y_score, qid=qid, group=group,
                    offsets=offsets, k=k, relevance_level=relevance_level, ties=ties,
                    empty=empty, weights=weights, doc_ids=doc_ids, reduce=reduce,
                    convention=convention)


def average_precision(y_true: Any, y_score: Any, *, qid: Any = None, group: Any = None,
                      offsets: Any = None, k: KSpec = 10, relevance_level: float = 1,
                      ties: str | None = None, empty: float | str | None = None,
                      weights: Any = None, doc_ids: Any = None, reduce: str | None = "mean",
                      convention: str | None = None) -> Any:
    """Average precision@k (full docstring below)."""
    return _compute(K.AP, "average_precision", y_true, y_score, qid=qid, group=group,
                    offsets=offsets, k=k, relevance_level=relevance_level, ties=ties,
                    empty=empty, weights=weights, doc_ids=doc_ids, reduce=reduce,
                    convention=convention)


def reciprocal_rank(y_true: Any, y_score: Any, *, qid: Any = None, group: Any = None,
                    offsets: Any = None, k: KSpec = 10, relevance_level: float = 1,
                    ties: str | None = None, empty: float | str | None = None,
                    weights: Any = None, doc_ids: Any = None, reduce: str | None = "mean",
                    convention: str | None = None) -> Any:
    """Reciprocal rank@k (full docstring below)."""
    return _compute(K.RR, "reciprocal_rank", y_true, y_score, qid=qid, group=group,
                    offsets=offsets, k=k, relevance_level=relevance_level, ties=ties,
                    empty=empty, weights=weights, doc_ids=doc_ids, reduce=reduce,
                    convention=convention)


def r_precision(y_true: Any, y_score: Any, *, qid: Any = None, group: Any = None,
                offsets: Any = None, k: KSpec = None, relevance_level: float = 1,
                ties: str | None = None, empty: float | str | None = None, weights: Any = None,
                doc_ids: Any = None, reduce: str | None = "mean",
                convention: str | None = None) -> Any:
    """R-precision (full docstring below)."""
    if k is not None:
        raise ValueError(
            f"r_precision takes no cut-off (it cuts at the query's number of relevant rows), "
            f"got k={k!r}; pass k=None"
        )
    return _compute(K.RPREC, "r_precision", y_true, y_score, qid=qid, group=group,
                    offsets=offsets, k=None, relevance_level=relevance_level, ties=ties,
                    empty=empty, weights=weights, doc_ids=doc_ids, reduce=reduce,
                    convention=convention)


def hit_rate(y_true: Any, y_score: Any, *, qid: Any = None, group: Any = None,
             offsets: Any = None, k: KSpec = 10, relevance_level: float = 1,
             ties: str | None = None, empty: float | str | None = None, weights: Any = None,
             doc_ids: Any = None, reduce: str | None = "mean",
             convention: str | None = None) -> Any:
    """Hit rate@k (full docstring below)."""
    return _compute(K.HIT_RATE, "hit_rate", y_true, y_score, qid=qid, group=group,
                    offsets=offsets, k=k, relevance_level=relevance_level, ties=ties,
                    empty=empty, weights=weights, doc_ids=doc_ids, reduce=reduce,
                    convention=convention)


def err(y_true: Any, y_score: Any, *, qid: Any = None, group: Any = None,
        offsets: Any = None, k: KSpec = 10, relevance_level: float = 1,
        max_grade: float | None = None, ties: str | None = None,
        empty: float | str | None = None, weights: Any = None, doc_ids: Any = None,
        reduce: str | None = "mean", convention: str | None = None) -> Any:
    """Compute the expected reciprocal rank@k (full docstring below)."""
    return _compute(K.ERR, "err", y_true, y_score, qid=qid, group=group, offsets=offsets, k=k,
                    relevance_level=relevance_level, ties=ties, empty=empty, weights=weights,
                    doc_ids=doc_ids, reduce=reduce, convention=convention, max_grade=max_grade)


precision.__doc__ = _signature_doc(
    "Precision@k: the share of the top k rows that are relevant (trec_eval ``P_k``).",
    "    >>> round(precision([1, 0, 2, 0], [4, 3, 2, 1], group=[4], k=2), 4)\n    0.5\n")
recall.__doc__ = _signature_doc(
    "Recall@k: the share of the query's relevant rows found in the top k.",
    "    >>> round(recall([1, 0, 2, 0], [4, 3, 2, 1], group=[4], k=2), 4)\n    0.5\n")
average_precision.__doc__ = _signature_doc(
    "Average precision@k (trec_eval ``map_cut_k``; ``k=None`` is ``map``).",
    "    >>> round(average_precision([1, 0, 2, 0], [4, 3, 2, 1], group=[4], k=None), 4)\n"
    "    0.8333\n")
reciprocal_rank.__doc__ = _signature_doc(
    "Reciprocal rank of the first relevant row within the top k (``mrr@k`` as a mean).",
    "    >>> reciprocal_rank([0, 0, 2, 0], [4, 3, 2, 1], group=[4], k=10)\n"
    "    0.3333333333333333\n")
r_precision.__doc__ = _signature_doc(
    "R-precision: precision in the top R rows, R the query's relevant rows "
    "(trec_eval ``Rprec``).\n\n"
    "    ``k`` must be ``None``: the cut-off is R.",
    "    >>> round(r_precision([1, 0, 2, 0], [4, 3, 2, 1], group=[4]), 4)\n    0.5\n")
hit_rate.__doc__ = _signature_doc(
    "Hit rate@k: 1 when a relevant row is in the top k, else 0.",
    "    >>> hit_rate([0, 0, 2, 0], [4, 3, 2, 1], group=[4], k=2)\n    0.0\n")
err.__doc__ = _signature_doc(
    "Expected reciprocal rank@k (Chapelle et al., 2009) with graded labels.\n\n"
    "    ``max_grade`` (default: the largest label given) sets\n"
    "    :math:`R = (2^{r} - 1) / 2^{g_{max}}`.",
    "    >>> round(err([2, 1], [2.0, 1.0], group=[2], k=None), 4)\n    0.7812\n")

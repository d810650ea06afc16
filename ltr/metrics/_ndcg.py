"""nDCG over ragged queries, with every peer's convention made explicit.

The public function validates its input and resolves a convention into plain
arrays and integers (:mod:`ltr.metrics._prepare`), then hands flat arrays plus
query offsets to the numba kernels in :mod:`ltr.kernels._dcg`.

Conventions differ in five places (each verified against the peer itself in
``tests/test_metrics_peers.py``):

========== ========= ============ ===================== ============== ===================
convention gain      discount     ties                  empty query    other
========== ========= ============ ===================== ============== ===================
lightgbm   2^l - 1   1/log2(i+1)  stable (input order)  1              ideal DCG by label
xgboost    2^l - 1   1/log2(i+1)  stable (input order)  1 (``ndcg@k-``: 0)  scores as float32
sklearn    l         1/log2(i+1)  averaged              0
trec_eval  l         1/log2(i+1)  doc id descending     0
ranx       l         1/log2(i+1)  stable (see below)    0              labels < 1 gain 0
========== ========= ============ ===================== ============== ===================

XGBoost's bare ``ndcg`` metric (no ``@k``) truncates at ``k=32``.
LightGBM and XGBoost add an empty query's value with weight 1 to a weighted
mean (its weight still counts in the denominator).  ranx orders tied scores
with numba's quicksort, which keeps input order for queries of up to 16
documents and is unstable beyond; no option reproduces the latter, so the
``ranx`` convention is exact whenever tied scores occur only in short queries.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from ltr._validation import check_cutoffs, check_reduce
from ltr.clicks.ips import ips_dcg, ips_ndcg
from ltr.kernels import _dcg as K
from ltr.kernels._dcg import PARALLEL_MIN_ROWS
from ltr.kernels._dcg_multi import dcg_idcg_multi
from ltr.kernels._dcg_split import dcg_idcg_split, split_threads
from ltr.metrics._prepare import (  # noqa: F401 - re-exported: their old home
    DiscountSpec,
    KSpec,
    _discount_for,
    _no_discount,
    _Prepared,
    prepare_rows,
    resolve_convention,
)
from ltr.metrics.gains import GainSpec
from ltr.metrics.names import CONVENTIONS, Convention

__all__ = [
    "CONVENTIONS",
    "Convention",
    "MetricValue",
    "ips_dcg",
    "ips_ndcg",
    "ndcg",
]


class MetricValue(float):
    """A mean metric value that also says how many queries it covers.

    Behaves as a ``float``; ``n_queries`` counts the queries averaged and
    ``n_skipped`` those left out because their ideal DCG is 0 (``empty="skip"``).
    """

    n_queries: int
    n_skipped: int

    def __new__(cls, value: float, n_queries: int = 0, n_skipped: int = 0) -> MetricValue:  # noqa: PYI034
        """Create the float *value* carrying its query counts."""
        obj = super().__new__(cls, value)
        obj.n_queries = int(n_queries)
        obj.n_skipped = int(n_skipped)
        return obj

    def __reduce__(self) -> tuple[Any, ...]:
        """Pickle with the counts."""
        return (MetricValue, (float(self), self.n_queries, self.n_skipped))

    def __repr__(self) -> str:
        """Return the plain float's repr."""
        return f"{float(self)!r}"



def _run_kernel(
    prep: _Prepared, k: int | None, want_dcg: bool, want_idcg: bool
) -> tuple[np.ndarray, np.ndarray]:
    n_q = prep.offsets.size - 1
    out_dcg = np.zeros(n_q)
    out_idcg = np.zeros(n_q)
    discount = _discount_for(prep, k)
    args = (prep.labels, prep.scores, prep.gains, prep.gain_mode, prep.tie_keys, prep.tie_mode,
            prep.ideal_keys, prep.ideal_mode, prep.label_gain, discount, prep.offsets,
            0 if k is None else k, out_dcg, out_idcg, want_dcg, want_idcg)
    threads = split_threads(prep.offsets)  # a few very long queries: split each across threads
    if threads:
        dcg_idcg_split(*args, threads)
    else:
        K.dcg_idcg(*args)
    return out_dcg, out_idcg


def kernel_outputs(
    prep: _Prepared, ks: list[int | None], want_dcg: bool, want_idcg: bool
) -> Callable[[int | None], tuple[np.ndarray, np.ndarray]]:
    """``(dcg, idcg)`` per query for each cut-off of *ks*, as a lookup ``k -> arrays``.

    Several cut-offs are computed in one kernel pass (each query ordered once);
    one cut-off on a large input runs the single-cut-off kernel.  Values are
    identical either way.
    """
    if len(ks) == 1 and (prep.labels.shape[0] >= PARALLEL_MIN_ROWS or split_threads(prep.offsets)):
        return lambda kk: _run_kernel(prep, kk, want_dcg, want_idcg)
    # several cut-offs or a small input: one kernel (a small run compiles one, not two)
    order = sorted(ks, key=lambda kk: np.inf if kk is None else kk)
    n_q = prep.offsets.size - 1
    out_dcg = np.zeros((n_q, len(order)))
    out_idcg = np.zeros((n_q, len(order)))
    discount = _discount_for(prep, order[-1])
    k_arr = np.array([0 if kk is None else kk for kk in order], dtype=np.int64)
    dcg_idcg_multi(prep.labels, prep.scores, prep.gains, prep.gain_mode, prep.tie_keys,
                   prep.tie_mode, prep.ideal_keys, prep.ideal_mode, prep.label_gain, discount,
                   prep.offsets, k_arr, out_dcg, out_idcg, want_dcg, want_idcg)
    column = {kk: j for j, kk in enumerate(order)}
    return lambda kk: (out_dcg[:, column[kk]], out_idcg[:, column[kk]])


def reduce_values(per_query: np.ndarray, weights: np.ndarray | None, n_skipped: int,
            reduce: str | None, unweighted: np.ndarray | None = None) -> Any:
    """Mean of *per_query* (NaN = skipped); rows flagged *unweighted* count 1 in the numerator."""
    if reduce is None:
        return per_query
    valid = ~np.isnan(per_query)
    n_used = int(np.count_nonzero(valid))
    if n_used == 0:
        return MetricValue(np.nan, 0, n_skipped)
    if n_used < per_query.size:  # (else every row: no copies, the same values in order)
        per_query = per_query[valid]
        weights = None if weights is None else weights[valid]
        unweighted = None if unweighted is None else unweighted[valid]
    if weights is None:
        value = float(per_query.mean())
    else:
        total = weights.sum()
        terms = per_query * weights
        if unweighted is not None:
            terms = np.where(unweighted, per_query, terms)
        value = float(terms.sum() / total) if total > 0 else np.nan
    return MetricValue(value, n_used, n_skipped)


def per_k(ks: list[int | None], k_arg: Any, compute: Callable[[int | None], Any]) -> Any:
    """``{k: compute(k)}`` when *k_arg* was a list, else ``compute(k)`` of the one cut-off."""
    if isinstance(k_arg, (list, tuple, np.ndarray)):
        return {kk: compute(kk) for kk in ks}
    return compute(ks[0])


# ----------------------------------------------------------------------------
# public API
# ----------------------------------------------------------------------------


def ndcg(
    y_true: Any,
    y_score: Any,
    *,
    qid: Any = None,
    group: Any = None,
    offsets: np.ndarray | None = None,
    k: KSpec = 10,
    gain: GainSpec | None = None,
    discount: DiscountSpec | None = None,
    ties: str | None = None,
    empty: float | str | None = None,
    weights: Any = None,
    doc_ids: Any = None,
    reduce: str | None = "mean",
    convention: str | None = None,
) -> Any:
    r"""Normalised discounted cumulative gain over ragged queries.

    .. math::
        \mathrm{nDCG@k}(q) = \frac{\sum_{i=1}^{k} g(l_{\pi(i)})\, d(i)}
                                  {\sum_{i=1}^{k} g(l_{\pi^*(i)})\, d(i)}

    where :math:`\pi` orders the query's documents by predicted score and
    :math:`\pi^*` by gain.

    Parameters
    ----------
    y_true : array-like of shape (n_rows,)
        Graded relevance labels (float grades are allowed with exp2/linear).
    y_score : array-like of shape (n_rows,)
        Predicted scores; higher ranks first.
    qid, group, offsets : array-like
        Exactly one: a query id per row (contiguous), query sizes, or ``int64``
        offsets of length ``n_queries + 1`` (fast path, no conversion).
    k : int, None or list of int, default=10
        Cut-off. ``None`` is the whole list; a ``k`` larger than a query means
        the whole query. A list returns ``{k: value}``.
    gain : {'exp2', 'linear'}, array or callable, default='exp2'
        ``2**l - 1``, ``l``, a label->gain table (LightGBM ``label_gain``), or a
        vectorised callable labels -> gains.
    discount : {'log2', 'log2_plus_one'}, array or callable, default='log2'
        ``1/log2(i+1)``, ``1/(log2(i)+1)``, per-position discounts, or a
        callable positions (1-based) -> discounts.
    ties : {'average', 'stable', 'pessimistic', 'optimistic', 'doc_id_desc'}, default='average'
        Order among equal scores: averaged over all orders (McSherry & Najork,
        as scikit-learn), input order (LightGBM, XGBoost), worst or best case,
        or document id descending as strings (trec_eval; needs ``doc_ids``).
    empty : 'skip' or float, default='skip'
        Value of a query whose ideal DCG is 0. ``'skip'`` leaves it out of the
        mean (NaN per query); LightGBM/XGBoost use 1, scikit-learn/trec_eval/ranx 0.
    weights : array-like of shape (n_queries,), optional
        Per-query weights for the mean.
    doc_ids : array-like of shape (n_rows,), optional
        Document ids, for ``ties='doc_id_desc'``.
    reduce : {'mean', None}, default='mean'
        ``'mean'`` returns a :class:`MetricValue` (a float with ``n_queries``
        and ``n_skipped``); ``None`` returns the per-query array.
    convention : {'lightgbm', 'xgboost', 'sklearn', 'trec_eval', 'ranx'}, optional
        Start from the settings that reproduce that tool; explicit keyword
        arguments override single fields (``convention='xgboost', empty=0.0``
        is XGBoost's ``ndcg@k-``; ``convention='ranx', gain='exp2'`` is ranx's
        ``ndcg_burges``).

    Returns
    -------
    MetricValue, ndarray or dict
        The mean, the per-query values, or a dict keyed by ``k``.

    Examples
    --------
    >>> from ltr.metrics import ndcg
    >>> round(ndcg([3, 2, 0, 1, 2], [5, 4, 3, 2, 1], group=[5], k=3, gain="linear"), 4)
    0.81
    """
    conv = resolve_convention(convention, gain=gain, discount=discount, ties=ties, empty=empty)
    ks = check_cutoffs(k)
    check_reduce(reduce)
    prep = prepare_rows(y_true, y_score, qid=qid, group=group, offsets=offsets, conv=conv,
                    weights=weights, doc_ids=doc_ids)

    outputs = kernel_outputs(prep, ks, True, True)

    def compute(kk: int | None) -> Any:
        d, i = outputs(kk)
        positive = i > 0
        n_empty = positive.size - int(np.count_nonzero(positive))
        skip = isinstance(conv.empty, str)
        if n_empty == 0:  # no empty query: no masked division or fill (the same values)
            return reduce_values(d / i, prep.weights, 0, reduce, None)
        per_query = np.empty_like(d)
        np.divide(d, i, out=per_query, where=positive)
        per_query[~positive] = np.nan if skip else float(conv.empty)
        unweighted = None if skip or not conv.empty_unweighted else ~positive
        return reduce_values(per_query, prep.weights, n_empty if skip else 0, reduce, unweighted)

    return per_k(ks, k, compute)

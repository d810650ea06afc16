"""DCG, ideal DCG and cumulative gain over ragged queries, under nDCG's conventions."""

from __future__ import annotations

from typing import Any

import numpy as np

from ltr._validation import (
    check_cutoffs,
    check_reduce,
)
from ltr.metrics._ndcg import (
    DiscountSpec,
    KSpec,
    _no_discount,
    kernel_outputs,
    per_k,
    prepare_rows,
    reduce_values,
    resolve_convention,
)
from ltr.metrics.gains import GainSpec

__all__ = ["cg", "dcg", "idcg"]


def _unnormalised(
    which: str,
    y_true: Any,
    y_score: Any,
    *,
    qid: Any,
    group: Any,
    offsets: np.ndarray | None,
    k: KSpec,
    gain: Any,
    discount: Any,
    ties: Any,
    weights: Any,
    doc_ids: Any,
    reduce: str | None,
    convention: str | None,
) -> Any:
    conv = resolve_convention(convention, gain=gain, discount=discount, ties=ties)
    ks = check_cutoffs(k)
    check_reduce(reduce)
    if y_score is None:  # idcg needs no scores
        y_score = np.zeros(len(np.asarray(y_true)))
    prep = prepare_rows(y_true, y_score, qid=qid, group=group, offsets=offsets, conv=conv,
                    weights=weights, doc_ids=doc_ids)

    outputs = kernel_outputs(prep, ks, which == "dcg", which == "idcg")

    def compute(kk: int | None) -> Any:
        d, i = outputs(kk)
        return reduce_values(d if which == "dcg" else i, prep.weights, 0, reduce)

    return per_k(ks, k, compute)


def dcg(
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
    weights: Any = None,
    doc_ids: Any = None,
    reduce: str | None = "mean",
    convention: str | None = None,
) -> Any:
    """Discounted cumulative gain of the predicted order; options as :func:`ndcg`."""
    return _unnormalised("dcg", y_true, y_score, qid=qid, group=group, offsets=offsets, k=k,
                         gain=gain, discount=discount, ties=ties, weights=weights,
                         doc_ids=doc_ids, reduce=reduce, convention=convention)


def idcg(
    y_true: Any,
    y_score: Any = None,
    *,
    qid: Any = None,
    group: Any = None,
    offsets: np.ndarray | None = None,
    k: KSpec = 10,
    gain: GainSpec | None = None,
    discount: DiscountSpec | None = None,
    ties: str | None = None,
    weights: Any = None,
    doc_ids: Any = None,
    reduce: str | None = "mean",
    convention: str | None = None,
) -> Any:
    """Ideal DCG (labels sorted by gain); ``y_score`` is ignored. Options as :func:`ndcg`."""
    return _unnormalised("idcg", y_true, None, qid=qid, group=group, offsets=offsets, k=k,
                         gain=gain, discount=discount, ties=ties, weights=weights,
                         doc_ids=doc_ids, reduce=reduce, convention=convention)


def cg(
    y_true: Any,
    y_score: Any,
    *,
    qid: Any = None,
    group: Any = None,
    offsets: np.ndarray | None = None,
    k: KSpec = 10,
    gain: GainSpec | None = None,
    ties: str | None = None,
    weights: Any = None,
    doc_ids: Any = None,
    reduce: str | None = "mean",
    convention: str | None = None,
) -> Any:
    """Cumulative gain: total gain of the top ``k`` predicted documents (no discount)."""
    return _unnormalised("dcg", y_true, y_score, qid=qid, group=group, offsets=offsets, k=k,
                         gain=gain, discount=_no_discount, ties=ties, weights=weights,
                         doc_ids=doc_ids, reduce=reduce, convention=convention)

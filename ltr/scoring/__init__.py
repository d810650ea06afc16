"""Rank-metric scorers for scikit-learn model selection: one class over the metric registry.

:func:`get_scorer` (``"ndcg@10"``, ``"map@10"``, ``"mrr"``, ``"P@5"``...),
:func:`make_ndcg_scorer`, :func:`make_rank_scorer` and
:func:`make_ips_ndcg_scorer` all return a :class:`RankScorer`, usable wherever
scikit-learn takes ``scoring=`` (``GridSearchCV``, ``RandomizedSearchCV``,
``cross_validate``, ``cross_val_score``, ``permutation_importance``...).
Every metric of :data:`ltr.metrics.names.SCORER_METRICS` has a scorer; a new
metric is a registry entry, not a subclass.  Unlike
``sklearn.metrics.ndcg_score``, which only takes padded 2-D input, the scorer
works on ragged queries given by one query id per row.

The query ids reach the scorer in one of two ways:

* as metadata (scikit-learn metadata routing): with
  ``sklearn.set_config(enable_metadata_routing=True)``, ``qid=...`` passed to
  ``search.fit(X, y, qid=qid)`` is routed to the scorer (it requests ``qid``
  by default; ``scorer.set_score_request(qid=True)`` states it explicitly);
* from a column of a pandas ``X`` named by ``qid_column``, given to the
  factory or read from the estimator's own ``qid_column`` parameter (e.g.
  :class:`ltr.estimator.LambdaMARTRanker`).

Metric names are parsed in one place,
:func:`ltr.metrics.names.parse_metric_name` (re-exported here).

A query whose rows are not contiguous in the rows handed to the scorer is an
error, not a silently wrong number: it is what a row-wise splitter such as
``ShuffleSplit`` does to queries.  Split by query instead (``GroupKFold``,
``GroupShuffleSplit`` with ``groups=qid``).  ``KFold`` (shuffled or not) keeps
each fold's rows in input order, so the queries it cuts stay contiguous and
cannot be told apart from whole ones: that mistake is not detectable here.

The scorer uses scikit-learn's public API (``MetadataRequest`` for its
requests, ``get_config`` for routing); the private pieces it still needs sit
in :mod:`ltr._sklearn_private`.
"""

from __future__ import annotations

from ltr.scoring._factories import (
    IPSNDCGScorer,
    NDCGScorer,
    get_scorer,
    make_ips_ndcg_scorer,
    make_ndcg_scorer,
    make_rank_scorer,
)
from ltr.scoring._scorer import (
    CONVENTIONS,
    MetricName,
    RankScorer,
    get_scorer_names,
    parse_metric_name,
    score_function,
)

__all__ = [
    "CONVENTIONS",
    "IPSNDCGScorer",
    "MetricName",
    "NDCGScorer",
    "RankScorer",
    "get_scorer",
    "get_scorer_names",
    "make_ips_ndcg_scorer",
    "make_ndcg_scorer",
    "make_rank_scorer",
    "parse_metric_name",
    "score_function",
]

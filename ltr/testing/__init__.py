"""Testing helpers for ``ltr`` and for code built on it (modelled on ``xgboost.testing``).

Importable without pytest.  Only lower layers of ``ltr`` are used (metrics,
groups, datasets, synthetic), never the estimator, CLI or run machinery.

* data: :func:`make_queries`, :func:`random_scored_queries`, and the real
  LETOR-style files: :func:`letor_slice_path` (committed slice),
  :func:`letor_full_path` (``../shared`` full set, or ``None``),
  :func:`letor_path` (full when present, else slice);
* naive references: :func:`naive_ndcg`, :func:`naive_lambdarank`,
  :func:`naive_parse_letor`;
* determinism settings and shared checks: :func:`deterministic_params`,
  :func:`check_predictions_agree`, :func:`check_score_is_ndcg`.
"""

from __future__ import annotations

from ltr.testing._paths import NO_SHARED_ENV, letor_full_path, letor_path, letor_slice_path
from ltr.testing.agreement import check_predictions_agree, check_score_is_ndcg, deterministic_params
from ltr.testing.data import SmallQueries, make_queries, random_scored_queries
from ltr.testing.references import (
    F32_001,
    exp2_gain,
    linear_gain,
    log2_discount,
    naive_dcg_order,
    naive_lambdarank,
    naive_ndcg,
    naive_parse_letor,
)

__all__ = [
    "F32_001",
    "NO_SHARED_ENV",
    "SmallQueries",
    "check_predictions_agree",
    "check_score_is_ndcg",
    "deterministic_params",
    "exp2_gain",
    "letor_full_path",
    "letor_path",
    "letor_slice_path",
    "linear_gain",
    "log2_discount",
    "make_queries",
    "naive_dcg_order",
    "naive_lambdarank",
    "naive_ndcg",
    "naive_parse_letor",
    "random_scored_queries",
]

"""Evaluating rankings you were given.

Qrels/run evaluation with trec_eval's semantics (:mod:`._qrels`),
TREC files (:mod:`.trec`), recommender score matrices (:mod:`.recsys`), paired comparison of two
rankers (:mod:`.comparison`) and rolling monitoring (:mod:`.monitoring`).
"""

from __future__ import annotations

from ltr.evaluation._qrels import (
    CONVENTIONS,
    EvaluationResult,
    evaluate,
    metric_codes,
)

__all__ = [
    "CONVENTIONS",
    "EvaluationResult",
    "evaluate",
    "metric_codes",
]

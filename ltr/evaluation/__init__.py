"""Evaluating rankings you were given.

Qrels/run evaluation with trec_eval's semantics (:mod:`._qrels`),
TREC files (:mod:`.trec`), recommender score matrices (:mod:`.recsys`), paired comparison of two
rankers (:mod:`.comparison`) and rolling monitoring (:mod:`.monitoring`).
"""

from __future__ import annotations

from typing import Any

from ltr.evaluation import _qrels
from ltr.evaluation._qrels import EvaluationResult, evaluate, metric_codes

__all__ = ["EvaluationResult", "evaluate", "metric_codes"]


def __getattr__(name: str) -> Any:
    # ``CONVENTIONS`` is deprecated (ltr.metrics.names.QRELS_CONVENTIONS): _qrels warns
    if name == "CONVENTIONS":
        return _qrels.__getattr__(name)
    raise AttributeError(f"module 'ltr.evaluation' has no attribute {name!r}")

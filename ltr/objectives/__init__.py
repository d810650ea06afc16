"""The LambdaRank objectives and what they are made of.

The objectives (:mod:`._lambdarank`), their position debiasing (:mod:`._unbiased`),
pair sampling (:mod:`.sampling`) and truncation schedules (:mod:`.schedules`).
"""

from __future__ import annotations

from ltr.objectives._lambdarank import (
    CompositeLambdaRankObjective,
    LambdaRankObjective,
)

__all__ = [
    "CompositeLambdaRankObjective",
    "LambdaRankObjective",
]

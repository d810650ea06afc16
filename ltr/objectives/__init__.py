"""The LambdaRank objectives and what they are made of.

The objectives (:mod:`._lambdarank`, the composite one in :mod:`._composite`), their
position debiasing (:mod:`._unbiased`), pair sampling (:mod:`.sampling`) and truncation
schedules (:mod:`.schedules`).
"""

from __future__ import annotations

from ltr.objectives._composite import CompositeLambdaRankObjective
from ltr.objectives._lambdarank import LambdaRankObjective

__all__ = [
    "CompositeLambdaRankObjective",
    "LambdaRankObjective",
]

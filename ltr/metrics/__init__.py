# ruff: noqa: F401  (the TYPE_CHECKING imports re-export the lazy names for type checkers)
"""Metrics over ragged queries of rows you hold.

nDCG in every peer's convention (:mod:`._ndcg`), precision/recall/AP/RR/ERR/hit
rate (:mod:`._rank`), composite nDCG (:mod:`.composite`), the metric-name
registry (:mod:`.names`) and gain specs (:mod:`.gains`).  The names below are
imported on first use, so ``import ltr.metrics.names`` stays cheap.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

#: Public name -> module that defines it.
_EXPORTS: dict[str, str] = {
    "CONVENTIONS": "ltr.metrics._ndcg",
    "Convention": "ltr.metrics._ndcg",
    "MetricValue": "ltr.metrics._ndcg",
    "cg": "ltr.metrics._dcg",
    "dcg": "ltr.metrics._dcg",
    "idcg": "ltr.metrics._dcg",
    "ndcg": "ltr.metrics._ndcg",
    "average_precision": "ltr.metrics._rank",
    "err": "ltr.metrics._rank",
    "hit_rate": "ltr.metrics._rank",
    "precision": "ltr.metrics._rank",
    "r_precision": "ltr.metrics._rank",
    "recall": "ltr.metrics._rank",
    "reciprocal_rank": "ltr.metrics._rank",
    "ips_dcg": "ltr.clicks.ips",
    "ips_ndcg": "ltr.clicks.ips",
}

if TYPE_CHECKING:  # pragma: no cover - lets type checkers see the lazy names
    from ltr.clicks.ips import ips_dcg, ips_ndcg
    from ltr.metrics._dcg import cg, dcg, idcg
    from ltr.metrics._ndcg import CONVENTIONS, Convention, MetricValue, ndcg
    from ltr.metrics._rank import (
        average_precision,
        err,
        hit_rate,
        precision,
        r_precision,
        recall,
        reciprocal_rank,
    )

__all__ = sorted(_EXPORTS)  # noqa: PLE0605


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'ltr.metrics' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_EXPORTS))

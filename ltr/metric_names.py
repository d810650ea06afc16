"""Metric names: the one registry, parser and formatter of ``"ndcg@10"``-style keys.

A metric name is ``METRIC@K`` with an optional ``:CONVENTION`` (a scorer's
nDCG convention, ``"ndcg@5:sklearn"``) or ``/OBJECTIVE`` (one label column of
a composite evaluation, ``"ndcg@10/watch"``).  Qrels/run evaluation
(:func:`ltr.evaluation.evaluate`) also reads names without a cut-off where
one is not needed (``"map"``, ``"mrr"``, ``"r-precision"``).  Every module that reads or
writes such a key goes through :func:`parse_metric_name` and
:func:`format_metric_name`, so the spelling lives here only.

This module belongs to the metrics layer: it imports nothing from ``ltr``
above :mod:`ltr._validation`.
"""

from __future__ import annotations

import re
from typing import Any, NamedTuple

from ltr._validation import check_int, short_repr

__all__ = [
    "CONVENTIONS",
    "EVALUATION_METRICS",
    "METRICS",
    "NO_CUTOFF_METRICS",
    "QRELS_CONVENTIONS",
    "RANK_FUNCTIONS",
    "RANK_SCORER_METRICS",
    "SCORER_METRICS",
    "MetricName",
    "format_metric_name",
    "parse_metric_name",
]

#: Every metric the package records under a ``METRIC@K`` key: per-round curves
#: (``"ndcg@10"``, ``"composite_ndcg@10"``) and scorer names.
METRICS: tuple[str, ...] = ("ndcg", "composite_ndcg")

#: nDCG scorer names: what :func:`parse_metric_name` accepts by default.
SCORER_METRICS: tuple[str, ...] = ("ndcg",)

#: Rank-scorer metric -> the name of its function in :mod:`ltr.rank_metrics` (the one such
#: mapping: scorers, run configs' ``evaluation.metrics`` and the rank metrics share it).
RANK_FUNCTIONS: dict[str, str] = {
    "map": "average_precision",
    "mrr": "reciprocal_rank",
    "precision": "precision",
    "recall": "recall",
    "err": "err",
    "hit_rate": "hit_rate",
}

#: Metrics a scorer can be built for (:func:`ltr.scoring.get_scorer`): nDCG and
#: the flat rank metrics of :mod:`ltr.rank_metrics`.
RANK_SCORER_METRICS: tuple[str, ...] = ("ndcg", *RANK_FUNCTIONS)

#: Metrics of qrels/run evaluation (:func:`ltr.evaluation.evaluate`).
EVALUATION_METRICS: tuple[str, ...] = (
    "ndcg", "dcg", "map", "mrr", "precision", "recall", "r-precision", "hit_rate", "err",
)

_KNOWN: tuple[str, ...] = tuple(dict.fromkeys(METRICS + EVALUATION_METRICS))

#: Metrics that never take a cut-off (R-precision cuts at the number of relevant documents).
NO_CUTOFF_METRICS: tuple[str, ...] = ("r-precision",)
#: Largest cut-off a name may carry (the kernels hold cut-offs as int64).
_K_MAX = 2**63 - 1

#: nDCG conventions accepted after ``:`` in a metric name (see :func:`ltr.metrics.ndcg`).
#: ``trec_eval`` and ``ranx`` break ties by document id, which a scorer does not
#: receive; use ``make_ndcg_scorer(convention="trec_eval", ties=...)`` for those.
CONVENTIONS: tuple[str, ...] = ("lightgbm", "xgboost", "sklearn")

#: Conventions of qrels/run evaluation (:func:`ltr.evaluate`, ``ltr evaluate --qrels``).
QRELS_CONVENTIONS: tuple[str, ...] = ("trec_eval", "ranx")

_NAME_RE = re.compile(
    r"^\s*(?P<metric>[A-Za-z_][A-Za-z_\-]*)(?:@(?P<k>[^:/\s]*))?"
    r"(?::(?P<conv>[A-Za-z_]+)|/(?P<objective>[^\s]+))?\s*$"
)


class MetricName(NamedTuple):
    """A parsed metric name: ``"ndcg@10:sklearn"`` -> ``("ndcg", 10, "sklearn")``.

    ``k`` is ``None`` for a name without a cut-off (``"map"``: the whole list).
    """

    metric: str
    k: int | None
    convention: str | None = None

    def __str__(self) -> str:
        """Return the name, as :func:`format_metric_name` spells it."""
        return format_metric_name(
            self.metric, self.k, convention=self.convention, metrics=_KNOWN
        )


def _check_metric(metric: Any, allowed: tuple[str, ...], text: str | None = None) -> str:
    where = f"metric name {text!r}: " if text is not None else ""
    if not isinstance(metric, str) or metric.lower() not in allowed:
        only = f"only {allowed[0]!r}" if len(allowed) == 1 else f"expected one of {list(allowed)!r}"
        raise ValueError(f"{where}unknown metric {metric!r}; {only}")
    return metric.lower()


def _check_convention(convention: Any, text: str | None = None) -> str:
    where = f"metric name {text!r}: " if text is not None else ""
    if not isinstance(convention, str) or convention.lower() not in CONVENTIONS:
        raise ValueError(
            f"{where}unknown convention {convention!r}; expected one of {list(CONVENTIONS)!r}"
        )
    return convention.lower()


def format_metric_name(
    metric: str,
    k: int | None,
    *,
    convention: str | None = None,
    objective: str | None = None,
    metrics: tuple[str, ...] = METRICS,
) -> str:
    """Spell a metric key: ``"ndcg@10"``, ``"ndcg@5:sklearn"``, ``"ndcg@10/watch"``.

    Parameters
    ----------
    metric : str
        One of *metrics*.
    k : int or None
        Cut-off, >= 1; ``None`` (no cut-off) only with ``metrics=EVALUATION_METRICS``
        and required for :data:`NO_CUTOFF_METRICS`.
    convention : str, optional
        One of :data:`CONVENTIONS` (scorer names).
    objective : str, optional
        Label column of a composite evaluation (per-objective curves).
    metrics : tuple of str, default=METRICS
        Metrics accepted: :data:`METRICS` (curve keys), :data:`RANK_SCORER_METRICS`
        or :data:`EVALUATION_METRICS`.

    Returns
    -------
    str

    Raises
    ------
    ValueError
        An unknown metric or convention, ``k < 1``, or both *convention* and
        *objective*.
    TypeError
        A non-integer ``k``.

    Examples
    --------
    >>> format_metric_name("composite_ndcg", 10)
    'composite_ndcg@10'
    >>> format_metric_name("map", None, metrics=EVALUATION_METRICS)
    'map'
    """
    metric = _check_metric(metric, metrics)
    if k is None or metric in NO_CUTOFF_METRICS:
        if k is not None:
            raise ValueError(f"{metric!r} takes no cut-off, got k={k!r}")
        if metrics is METRICS or metric not in EVALUATION_METRICS:
            raise TypeError(f"k must be an integer, got None for {metric!r}")
        if objective is not None:
            raise ValueError("a name without a cut-off takes no objective")
        return metric if convention is None else f"{metric}:{_check_convention(convention)}"
    k = check_int(k, "k", minimum=1)
    if convention is not None and objective is not None:
        raise ValueError("a metric name takes a convention or an objective, not both")
    if convention is not None:
        return f"{metric}@{k}:{_check_convention(convention)}"
    if objective is not None:
        if not isinstance(objective, str) or not objective or any(c.isspace() for c in objective):
            raise ValueError(
                f"objective must be a non-empty name without spaces, got {objective!r}"
            )
        return f"{metric}@{k}/{objective}"
    return f"{metric}@{k}"


def parse_metric_name(
    name: str, *, metrics: tuple[str, ...] = SCORER_METRICS, k_optional: bool = False
) -> MetricName:
    """Parse ``"ndcg@K"`` or ``"ndcg@K:CONVENTION"`` (or ``"map"`` with *k_optional*).

    This is the one place that reads metric-name strings.

    Parameters
    ----------
    name : str
        ``"ndcg@10"``, ``"NDCG@5"``, ``"ndcg@10:sklearn"``...  ``K`` is an integer
        >= 1; ``CONVENTION`` one of :data:`CONVENTIONS`.
    metrics : tuple of str, default=SCORER_METRICS
        Metrics accepted (:data:`METRICS` for recorded curve keys,
        :data:`RANK_SCORER_METRICS` for scorers, :data:`EVALUATION_METRICS`
        for qrels/run evaluation).
    k_optional : bool, default=False
        Accept a name without ``@K`` (``k=None``: the whole list).  Names in
        :data:`NO_CUTOFF_METRICS` (``"r-precision"``) never take ``@K``.

    Returns
    -------
    MetricName

    Raises
    ------
    TypeError
        If *name* is not a string.
    ValueError
        If the format, metric, ``K`` or convention is invalid.

    Examples
    --------
    >>> parse_metric_name("ndcg@5:sklearn")
    MetricName(metric='ndcg', k=5, convention='sklearn')
    >>> parse_metric_name("MRR", metrics=EVALUATION_METRICS, k_optional=True)
    MetricName(metric='mrr', k=None, convention=None)
    """
    if not isinstance(name, str):
        raise TypeError(f"metric name must be a str like 'ndcg@10', got {short_repr(name)}")
    match = _NAME_RE.match(name)
    no_k = match is not None and match["k"] is None
    if (
        match is None
        or match["objective"] is not None
        or match["k"] == ""
        or (no_k and not k_optional and match["metric"].lower() not in NO_CUTOFF_METRICS)
    ):
        if k_optional:
            forms = (f"'METRIC' or 'METRIC@K' with METRIC one of {list(metrics)!r} "
                     "(e.g. 'ndcg@10', 'map', 'mrr@10')")
        else:
            forms = ("'ndcg@K' or 'ndcg@K:CONVENTION' (e.g. 'ndcg@10', 'ndcg@5:sklearn'; "
                     f"metrics: {list(metrics)!r})")
        raise ValueError(f"metric name {name!r} is not of the form {forms}")
    metric = _check_metric(match["metric"], metrics, name)
    if metric in NO_CUTOFF_METRICS:
        if not no_k:
            raise ValueError(f"metric name {name!r}: {metric!r} takes no @K cut-off")
        no_k = True
    if no_k:
        conv = match["conv"]
        return MetricName(metric, None, None if conv is None else _check_convention(conv, name))
    try:
        k = int(match["k"])
    except ValueError:
        raise ValueError(
            f"metric name {name!r}: K must be an integer >= 1, got {match['k']!r}"
        ) from None
    if k < 1:
        raise ValueError(f"metric name {name!r}: K must be an integer >= 1, got {k!r}")
    if k > _K_MAX:
        raise ValueError(f"metric name {name!r}: K must be <= {_K_MAX}, got {k!r}")
    conv = match["conv"]
    if conv is not None:
        conv = _check_convention(conv, name)
    return MetricName(metric, k, conv)

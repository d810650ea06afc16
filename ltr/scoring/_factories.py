"""The scorer factories (get_scorer, make_*_scorer) and the deprecated scorer classes."""

from __future__ import annotations

import warnings
from collections.abc import Mapping
from typing import Any

import numpy as np

from ltr._propensities import check_propensities
from ltr._validation import check_int, short_repr
from ltr.metrics.names import (
    REGISTRY,
    SCORER_METRICS,
    metric_function,
    metric_info,
    parse_metric_name,
)
from ltr.scoring._scorer import (
    RankScorer,
)

__all__ = [
    "IPSNDCGScorer",
    "NDCGScorer",
    "get_scorer",
    "make_ips_ndcg_scorer",
    "make_ndcg_scorer",
    "make_rank_scorer",
]


def _check_options(factory: str, metric: str, options: Mapping[str, Any]) -> None:
    allowed = REGISTRY[metric].options
    unknown = sorted(set(options) - set(allowed))
    if unknown:
        if metric != "err" and unknown == ["max_grade"]:
            raise TypeError(f"max_grade is an option of the err scorer only, not of {metric!r}")
        raise TypeError(
            f"{factory} got unknown option(s) {unknown!r} for {metric!r}; valid options are "
            f"{list(allowed)!r} (query ids come as qid metadata or qid_column)"
        )


def _probe(metric: str, k: int | None, options: Mapping[str, Any], **extra: Any) -> None:
    """Validate option values now (a tiny query) rather than deep inside a search."""
    metric_function(metric)(np.array([1.0, 0.0]), np.array([0.5, 0.1]),
                            offsets=np.array([0, 2], dtype=np.int64), k=k, **extra, **options)


def _check_k(metric: str, k: Any) -> int | None:
    if not REGISTRY[metric].cutoff:
        if k not in (None, 10):  # 10: the factories' default
            raise ValueError(f"{metric!r} takes no cut-off, got k={k!r}; pass k=None")
        return None
    return None if k is None else check_int(k, "k", minimum=1)


def _check_objectives(objectives: Any) -> None:
    if objectives is not None and (not isinstance(objectives, Mapping) or not objectives):
        raise TypeError(
            f"objectives must be a non-empty mapping name -> weight, got {short_repr(objectives)}"
        )


def make_ndcg_scorer(
    k: int | None = 10,
    *,
    qid_column: Any = None,
    objectives: Mapping[str, float] | None = None,
    **ndcg_options: Any,
) -> RankScorer:
    """Build an nDCG@k scorer for scikit-learn's ``scoring=``.

    Parameters
    ----------
    k : int or None, default=10
        Truncation depth; ``None`` is the whole list.
    qid_column : hashable, optional
        Name of a column of a pandas ``X`` holding query ids.  The column is
        removed from ``X`` before ``predict``.  When ``None``, the scorer uses the
        estimator's own ``qid_column`` parameter if it has one (the estimator
        then drops the column itself).  Metadata ``qid`` takes precedence.
    objectives : mapping of str to float, optional
        Weights for composite nDCG when ``y`` has one label column per objective
        (a DataFrame with those column names, or a 2-D array in this order).
        When ``None`` the estimator's ``objectives`` parameter is used.
    **ndcg_options
        Passed to :func:`ltr.metrics.ndcg`: ``gain``, ``discount``, ``ties``,
        ``empty``, ``convention``.  Checked now, by scoring a tiny query.

    Returns
    -------
    RankScorer
        ``scorer(estimator, X, y, qid=None) -> float``; its ``repr`` rebuilds
        this call.

    Examples
    --------
    >>> scorer = make_ndcg_scorer(10, gain="linear")
    >>> scorer
    make_ndcg_scorer(k=10, gain='linear')
    """
    k = _check_k("ndcg", k)
    _check_options("make_ndcg_scorer", "ndcg", ndcg_options)
    _check_objectives(objectives)
    if ndcg_options:
        _probe("ndcg", k, ndcg_options)
    return RankScorer("ndcg", k, qid_column=qid_column, objectives=objectives, **ndcg_options)


def make_rank_scorer(
    metric: str, k: int | None = 10, *, qid_column: Any = None, **options: Any
) -> RankScorer:
    """Build a scorer of any metric of :data:`ltr.metrics.names.SCORER_METRICS`.

    Parameters
    ----------
    metric : str
        ``"map"`` (average precision), ``"mrr"``, ``"precision"``,
        ``"recall"``, ``"err"``, ``"hit_rate"``, ``"dcg"``, ``"r-precision"``,
        ``"ndcg"``, or an alias (``"recip_rank"``, ``"P"``, ``"Rprec"``...).
    k : int or None, default=10
        Cut-off; ``None`` is the whole list (R-precision takes none).
    qid_column : hashable, optional
        As in :func:`make_ndcg_scorer`.
    **options
        Passed to the metric function (for the :mod:`ltr.metrics` ones:
        ``relevance_level``, ``ties``, ``empty``, ``convention``, ``max_grade``
        for ERR).  Checked now.

    Returns
    -------
    RankScorer
        ``scorer(estimator, X, y, qid=None) -> float``; its ``repr`` rebuilds this call.

    Examples
    --------
    >>> make_rank_scorer("map", 10, relevance_level=2)
    make_rank_scorer('map', k=10, relevance_level=2)
    """
    try:
        info = metric_info(metric)
    except ValueError:
        info = None
    if info is None or info.name not in SCORER_METRICS:
        raise ValueError(
            f"unknown metric {metric!r}; expected one of {list(SCORER_METRICS)!r} "
            "(or an alias such as 'recip_rank', 'P', 'Rprec')"
        )
    if info.name == "ndcg":
        return make_ndcg_scorer(k, qid_column=qid_column, **options)
    k = _check_k(info.name, k)
    _check_options("make_rank_scorer", info.name, options)
    _probe(info.name, k, options)
    return RankScorer(info.name, k, qid_column=qid_column, **options)


def make_ips_ndcg_scorer(
    k: int | None = 10,
    *,
    propensity: Any = None,
    qid_column: Any = None,
    position_column: Any = None,
    propensity_column: Any = None,
    **options: Any,
) -> RankScorer:
    """Build a scorer of IPS nDCG@k (:func:`ltr.clicks.ips.ips_ndcg`) on logged clicks.

    ``y`` given to the search is the logged clicks (0/1).  Query ids (one
    per displayed list) and logged positions reach the scorer as metadata
    (``qid``, ``position``, both requested by default) or as columns of a
    pandas ``X``, like :func:`make_ndcg_scorer`'s ``qid``.  Propensities are
    either one table per logged position, fixed here, or one value per row
    (per impression, e.g. cascade estimates from
    :func:`ltr.clicks.estimate_propensity_cascade`), which travel with the
    rows like the positions: metadata ``propensity`` or ``propensity_column``.

    Parameters
    ----------
    k : int or None, default=10
        Cut-off of the new ranking.
    propensity : array-like of shape (n_positions,), optional
        Examination propensity per logged position (index 0 = position 1), in
        (0, 1].  ``None`` (the default): one propensity per row, which the
        scorer then requests as metadata ``propensity`` (or reads from
        ``propensity_column``).
    qid_column, position_column, propensity_column : hashable, optional
        Columns of a pandas ``X`` holding list ids, logged positions and
        per-row propensities; removed before ``predict``.  When ``None`` the
        estimator's own parameter of that name is used, if any.  Metadata
        takes precedence.
    **options
        Passed to :func:`ltr.clicks.ips.ips_ndcg`: ``clip``, ``empty``, ``discount``,
        ``ties`` (the normaliser is ``'ideal'``).  Checked now.

    Returns
    -------
    RankScorer
        ``scorer(estimator, X, click, qid=None, position=None) -> float``
        (per-row propensities: ``propensity=None`` too); its ``repr`` rebuilds
        this call.

    Examples
    --------
    >>> make_ips_ndcg_scorer(5, propensity=[1.0, 0.5], clip=0.1)
    make_ips_ndcg_scorer(k=5, propensity=[1.0, 0.5], clip=0.1)
    >>> make_ips_ndcg_scorer(10, propensity_column="p")  # per-row propensities
    make_ips_ndcg_scorer(k=10, propensity_column='p')
    """
    k = _check_k("ips_ndcg", k)
    _check_options("make_ips_ndcg_scorer", "ips_ndcg", options)
    theta = None
    if propensity is not None:
        if propensity_column is not None:
            raise ValueError(
                f"make_ips_ndcg_scorer got both propensity (a table per position) and "
                f"propensity_column={propensity_column!r} (one value per row); give one of them"
            )
        theta = check_propensities(propensity, "propensity")
    _probe("ips_ndcg", k, options, position=np.array([1, 2]), propensity=np.ones(2))
    return RankScorer("ips_ndcg", k, propensity=theta, qid_column=qid_column,
                      position_column=position_column, propensity_column=propensity_column,
                      **options)


class _FormerScorerClass(type):
    """A former scorer class: ``isinstance`` tests the metric; calling it builds a RankScorer."""

    _metric: str
    _factory: str

    def __instancecheck__(cls, obj: Any) -> bool:
        return isinstance(obj, RankScorer) and obj.metric == cls._metric

    def __call__(cls, *args: Any, **kwargs: Any) -> RankScorer:
        warnings.warn(
            f"{cls.__name__}(...) is deprecated and now returns a RankScorer (one scorer class "
            f"for every metric); use {cls._factory}(...) instead",
            DeprecationWarning,
            stacklevel=2,
        )
        return RankScorer(cls._metric, *args, **kwargs)


class NDCGScorer(metaclass=_FormerScorerClass):
    """Deprecated: the nDCG scorer is a :class:`RankScorer` (see :func:`make_ndcg_scorer`).

    ``isinstance(scorer, NDCGScorer)`` is true for a :class:`RankScorer` of nDCG.
    """

    _metric = "ndcg"
    _factory = "make_ndcg_scorer"


class IPSNDCGScorer(metaclass=_FormerScorerClass):
    """Deprecated: the IPS nDCG scorer is a :class:`RankScorer` (see :func:`make_ips_ndcg_scorer`).

    ``isinstance(scorer, IPSNDCGScorer)`` is true for a :class:`RankScorer` of IPS nDCG.
    """

    _metric = "ips_ndcg"
    _factory = "make_ips_ndcg_scorer"


def get_scorer(name: str | RankScorer) -> RankScorer:
    """Scorer for a metric name: ``"ndcg@10"``, ``"ndcg@5:sklearn"``, ``"map@10"``, ``"P_5"``...

    Parameters
    ----------
    name : str or RankScorer
        A name of :data:`ltr.metrics.names.SCORER_METRICS` (or an alias such
        as ``"P@10"``, ``"recip_rank"``, ``"ndcg_cut_10"``, ``"Rprec"``), with
        an optional ``@K`` (none: the whole list) and ``:CONVENTION``; a
        scorer is returned as is.

    Returns
    -------
    RankScorer

    Examples
    --------
    >>> get_scorer("P@5")
    make_rank_scorer('precision', k=5)
    """
    if isinstance(name, RankScorer):
        return name
    parsed = parse_metric_name(name, metrics=SCORER_METRICS)
    options: dict[str, Any] = {} if parsed.convention is None else {"convention": parsed.convention}
    if parsed.metric == "ndcg":
        return make_ndcg_scorer(parsed.k, **options)
    return make_rank_scorer(parsed.metric, parsed.k, **options)

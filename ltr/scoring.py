"""nDCG scorers for scikit-learn model selection.

:func:`make_ndcg_scorer` returns a scorer usable wherever scikit-learn takes
``scoring=`` (``GridSearchCV``, ``RandomizedSearchCV``, ``cross_validate``,
``cross_val_score``, ``permutation_importance``...).  Unlike
``sklearn.metrics.ndcg_score``, which only takes padded 2-D input, the scorer
works on ragged queries given by one query id per row.

The query ids reach the scorer in one of two ways:

* as metadata (scikit-learn metadata routing): with
  ``sklearn.set_config(enable_metadata_routing=True)``, ``qid=...`` passed to
  ``search.fit(X, y, qid=qid)`` is routed to the scorer (it requests ``qid``
  by default; ``scorer.set_score_request(qid=True)`` states it explicitly);
* from a column of a pandas ``X`` named by ``qid_column``, given to
  :func:`make_ndcg_scorer` or read from the estimator's own ``qid_column``
  parameter (e.g. :class:`ltr.estimator.LambdaMARTRanker`).

Metric names such as ``"ndcg@10"`` or ``"ndcg@5:sklearn"`` (``ndcg@K`` with an
optional ``:CONVENTION`` of :func:`ltr.metrics.ndcg`) are parsed in one place,
:func:`ltr.metrics.names.parse_metric_name` (re-exported here), and turned into
scorers by :func:`get_scorer`.

A query whose rows are not contiguous in the rows handed to the scorer is an
error, not a silently wrong number: it is what a row-wise splitter such as
``ShuffleSplit`` does to queries.  Split by query instead (``GroupKFold``,
``GroupShuffleSplit`` with ``groups=qid``).  ``KFold`` (shuffled or not) keeps
each fold's rows in input order, so the queries it cuts stay contiguous and
cannot be told apart from whole ones: that mistake is not detectable here.
"""

from __future__ import annotations

from collections.abc import Mapping
from functools import partial
from typing import Any, ClassVar

import numpy as np
from sklearn.metrics._scorer import _BaseScorer, _cached_call
from sklearn.utils._metadata_requests import MethodMetadataRequest
from sklearn.utils.metadata_routing import MetadataRequest, get_routing_for_object

from ltr._validation import check_int, check_propensities, short_repr
from ltr.groups import find_split_query, offsets_from_qid
from ltr.metrics.names import (
    CONVENTIONS,
    RANK_FUNCTIONS,
    RANK_SCORER_METRICS,
    MetricName,
    format_metric_name,
    parse_metric_name,
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
]

#: Options of :func:`ltr.metrics.ndcg` that a scorer passes through.
NDCG_OPTIONS: tuple[str, ...] = ("gain", "discount", "ties", "empty", "convention")

#: Options of the :mod:`ltr.metrics` functions that a rank scorer passes through.
RANK_OPTIONS: tuple[str, ...] = ("relevance_level", "ties", "empty", "convention", "max_grade")

_REGISTERED_K: tuple[int, ...] = (1, 3, 5, 10, 20)


# --------------------------------------------------------------------------- #
# Helpers shared with ltr.estimator                                            #
# --------------------------------------------------------------------------- #


def _is_dataframe(X: Any) -> bool:
    return hasattr(X, "columns") and hasattr(X, "iloc")


def _find_param(estimator: Any, name: str) -> Any:
    """``estimator.<name>``, looking through a Pipeline / adapter to the final ranker."""
    seen = 0
    while estimator is not None and seen < 10:
        seen += 1
        value = getattr(estimator, name, None)
        if value is not None:
            return value
        if hasattr(estimator, "steps"):  # Pipeline: final step
            estimator = estimator.steps[-1][1]
        elif hasattr(estimator, "estimator") and not isinstance(estimator.estimator, str):
            estimator = estimator.estimator  # meta-estimators / adapters
        else:
            break
    return None


def _check_qid_length(qid: np.ndarray, n_rows: int, name: str = "qid") -> None:
    if qid.ndim != 1:
        raise ValueError(f"{name} must be 1-D (one query id per row), got shape {qid.shape}")
    if len(qid) != n_rows:
        raise ValueError(
            f"{name} has {len(qid)} entries but X has {n_rows} rows; pass one query id per row"
        )


def _predict_rows(method_caller: Any, estimator: Any, X: Any, n_rows: int) -> np.ndarray:
    """One float64 score per row from ``estimator.predict`` (a clear error otherwise)."""
    y_pred = np.asarray(method_caller(estimator, "predict", X), dtype=np.float64).ravel()
    if y_pred.shape[0] != n_rows:
        raise ValueError(
            f"{type(estimator).__name__}.predict returned {y_pred.shape[0]} scores for "
            f"{n_rows} rows; a ranker must return one score per row"
        )
    return y_pred


def _contiguous_offsets(qid: Any, n_rows: int) -> np.ndarray:
    """int64 query offsets of *qid*, which must hold each query's rows together.

    Raises ``ValueError`` naming the query and both rows when a query's rows are
    split, which is what a row-wise cross-validation splitter does.
    """
    arr = np.asarray(qid)
    _check_qid_length(arr, n_rows)
    split = find_split_query(arr)
    if split is not None:
        key, first, again = split
        raise ValueError(
            f"qid is not contiguous in the rows given to the scorer: query {key!r} "
            f"appears at row {first} and again at row {again} after other queries. "
            "Scoring it would treat parts of one query as separate queries. In "
            "cross-validation this means the splitter cut queries apart: split by query "
            "(GroupKFold / GroupShuffleSplit with groups=qid); otherwise sort the rows "
            "by qid before scoring."
        )
    return offsets_from_qid(arr).offsets


def _take_qid_column(X: Any, qid_column: Any, *, drop: bool) -> tuple[Any, Any]:
    """Return ``(X without the column if drop, qid or None)``."""
    if qid_column is None or not _is_dataframe(X) or qid_column not in X.columns:
        return X, None
    qid = X[qid_column].to_numpy()
    if drop:
        X = X.drop(columns=[qid_column])
    return X, qid


def _label_columns(
    y: Any, objectives: Mapping[str, float], name: str = "y"
) -> dict[str, np.ndarray]:
    """Split a 2-D label array / DataFrame into one float64 column per objective.

    A DataFrame must have a column named after each objective; a 2-D array must
    have one column per objective, in the order of the ``objectives`` mapping.
    """
    names = list(objectives)
    if _is_dataframe(y):
        missing = [n for n in names if n not in y.columns]
        if missing:
            raise ValueError(
                f"{name} is a DataFrame without label column(s) {missing!r} for objectives "
                f"{names!r}; its columns are {list(y.columns)!r}"
            )
        return {n: np.asarray(y[n], dtype=np.float64) for n in names}
    arr = np.asarray(y, dtype=np.float64)
    if arr.ndim != 2 or arr.shape[1] != len(names):
        raise ValueError(
            f"{name} must hold one label column per objective {names!r} (shape (n_rows, "
            f"{len(names)})), got shape {arr.shape}"
        )
    return {n: np.ascontiguousarray(arr[:, i]) for i, n in enumerate(names)}


def _is_multilabel(y: Any) -> bool:
    return _is_dataframe(y) or np.asarray(y).ndim == 2


# --------------------------------------------------------------------------- #
# Metric names                                                                 #
# --------------------------------------------------------------------------- #


def get_scorer_names(metrics: str = "ndcg") -> list[str]:
    """Return registered scorer names (``get_scorer`` also accepts any other ``K``).

    Parameters
    ----------
    metrics : {'ndcg', 'all'}, default='ndcg'
        ``'ndcg'``: the nDCG names (``"ndcg@10"``, ``"ndcg@5:sklearn"``...);
        ``'all'``: also ``"map@10"``, ``"mrr@10"``, ``"precision@5"``,
        ``"recall@10"``, ``"err@10"``, ``"hit_rate@10"`` and the other
        :data:`ltr.metrics.names.RANK_SCORER_METRICS` at each registered ``K``.

    Returns
    -------
    list of str
    """
    if metrics not in ("ndcg", "all"):
        raise ValueError(f"metrics must be 'ndcg' or 'all', got {metrics!r}")
    names = [format_metric_name("ndcg", k) for k in _REGISTERED_K]
    names += [
        format_metric_name("ndcg", k, convention=c) for k in _REGISTERED_K for c in CONVENTIONS
    ]
    if metrics == "all":
        names += [
            format_metric_name(m, k, metrics=RANK_SCORER_METRICS)
            for m in RANK_FUNCTIONS
            for k in _REGISTERED_K
        ]
    return names


def get_scorer(name: str | NDCGScorer) -> NDCGScorer:
    """Scorer for a metric name such as ``"ndcg@10"``, ``"ndcg@5:sklearn"`` or ``"map@10"``.

    Parameters
    ----------
    name : str or NDCGScorer
        A name of :data:`ltr.metrics.names.RANK_SCORER_METRICS` with ``@K`` and
        an optional ``:CONVENTION``; a scorer is returned as is.

    Returns
    -------
    NDCGScorer
        A :class:`RankScorer` for the metrics other than nDCG.
    """
    if isinstance(name, NDCGScorer):
        return name
    parsed = parse_metric_name(name, metrics=RANK_SCORER_METRICS)
    options: dict[str, Any] = {} if parsed.convention is None else {"convention": parsed.convention}
    k = 10 if parsed.k is None else parsed.k
    if parsed.metric == "ndcg":
        return make_ndcg_scorer(k, **options)
    return make_rank_scorer(parsed.metric, k, **options)


# --------------------------------------------------------------------------- #
# The scorer                                                                   #
# --------------------------------------------------------------------------- #


def _ndcg_metric(*args: Any, **kwargs: Any) -> Any:
    from ltr.metrics import ndcg

    return ndcg(*args, **kwargs)


class NDCGScorer(_BaseScorer):
    """Mean nDCG@k over the queries of the scored rows; built by :func:`make_ndcg_scorer`.

    Call it as ``scorer(estimator, X, y, qid=None)``.  The estimator only needs
    ``predict(X)`` returning one score per row.

    It requests ``qid`` through metadata routing by default (like ``GroupKFold``
    requests ``groups``), so with routing enabled ``qid=...`` given to a search's
    ``fit`` reaches it; ``set_score_request(qid=...)`` changes that.
    """

    # Default routing request: the scorer cannot work without query ids.
    _DEFAULT_REQUEST: ClassVar[dict[str, bool]] = {"qid": True}

    def __init__(
        self,
        k: int = 10,
        *,
        qid_column: Any = None,
        objectives: Mapping[str, float] | None = None,
        **ndcg_options: Any,
    ) -> None:
        super().__init__(
            score_func=_ndcg_metric, sign=1, kwargs=dict(ndcg_options), response_method="predict"
        )
        self.k = k
        self.qid_column = qid_column
        self.objectives = None if objectives is None else dict(objectives)

    @property
    def ndcg_options(self) -> dict[str, Any]:
        """Options passed through to :func:`ltr.metrics.ndcg`."""
        return dict(self._kwargs)

    # -- sklearn plumbing ------------------------------------------------- #
    def _get_metadata_request(self) -> MetadataRequest:
        if hasattr(self, "_metadata_request"):
            return get_routing_for_object(self._metadata_request)
        requests = MetadataRequest(owner=self)
        method = MethodMetadataRequest(owner=self, method="score")
        for param, alias in self._DEFAULT_REQUEST.items():
            method.add_request(param=param, alias=alias)
        requests.score = method
        return requests

    def _accept_sample_weight(self) -> bool:
        return False

    def __repr__(self) -> str:
        parts = [f"k={self.k!r}"]
        if self.qid_column is not None:
            parts.append(f"qid_column={self.qid_column!r}")
        if self.objectives is not None:
            parts.append(f"objectives={self.objectives!r}")
        parts += [f"{key}={value!r}" for key, value in self._kwargs.items()]
        return f"make_ndcg_scorer({', '.join(parts)})"

    def __call__(  # type: ignore[override]
        self, estimator: Any, X: Any, y_true: Any, *, qid: Any = None, **kwargs: Any
    ) -> float:
        """Score *estimator* on ``(X, y_true)``.

        Parameters
        ----------
        estimator : fitted estimator with ``predict``
            ``LambdaMARTRanker``, ``lightgbm.LGBMRanker``, ``xgboost.XGBRanker``,
            a ``Pipeline`` ending in one...
        X : array-like or DataFrame of shape (n_rows, n_features)
            Rows to score.  With a ``qid_column``, a DataFrame holding it.
        y_true : array-like of shape (n_rows,) or (n_rows, n_objectives)
            Relevance labels; 2-D for composite nDCG (see ``objectives``).
        qid : array-like of shape (n_rows,), optional
            Query id per row; each query's rows must be contiguous.

        Returns
        -------
        float
            Mean nDCG@k over the queries (composite total for 2-D labels).
        """
        return self._score(partial(_cached_call, None), estimator, X, y_true, qid=qid, **kwargs)

    def _score(
        self, method_caller: Any, estimator: Any, X: Any, y_true: Any, **kwargs: Any
    ) -> float:
        qid = kwargs.pop("qid", None)
        kwargs.pop("sample_weight", None)  # per-row weights are not an nDCG notion
        if kwargs:
            raise TypeError(
                f"ndcg scorer got unexpected metadata {sorted(kwargs)!r}; it accepts only qid"
            )
        column = self.qid_column
        if column is not None:
            # The estimator knows nothing of the column: remove it before predicting.
            X, column_qid = _take_qid_column(X, column, drop=True)
        else:
            column = _find_param(estimator, "qid_column")
            # The estimator drops its own qid column in predict.
            _, column_qid = _take_qid_column(X, column, drop=False)
        if qid is None:
            qid = column_qid
        if qid is None:
            raise ValueError(self._missing_qid_message(column))
        n_rows = X.shape[0]
        offsets = _contiguous_offsets(qid, n_rows)
        y_pred = _predict_rows(method_caller, estimator, X, n_rows)
        if _is_multilabel(y_true):
            return self._composite(estimator, y_true, y_pred, offsets)
        y = np.asarray(y_true, dtype=np.float64)
        if y.shape[0] != n_rows:
            raise ValueError(f"y has {y.shape[0]} rows but X has {n_rows}; they must match")
        value = self._score_func(y, y_pred, offsets=offsets, k=self.k, **self._kwargs)
        return float(value)

    def _composite(
        self, estimator: Any, y_true: Any, y_pred: np.ndarray, offsets: np.ndarray
    ) -> float:
        from ltr.metrics.composite import composite_ndcg

        weights = self.objectives or _find_param(estimator, "objectives")
        if weights is None:
            raise ValueError(
                "y has several label columns (composite nDCG) but no objective weights are known: "
                "pass objectives={'name': weight, ...} to make_ndcg_scorer, or score an "
                "estimator whose objectives parameter is set"
            )
        labels = _label_columns(y_true, weights)
        result = composite_ndcg(
            labels, y_pred, offsets=offsets, weights=dict(weights), k=self.k, **self._kwargs
        )
        return float(result.total)

    @staticmethod
    def _missing_qid_message(column: Any) -> str:
        where = (
            f"X has no column {column!r} (the qid_column)"
            if column is not None
            else "no qid_column is set"
        )
        return (
            "the ndcg scorer needs query ids and got none: "
            "(1) pass qid as metadata: sklearn.set_config(enable_metadata_routing=True) and "
            "search.fit(X, y, qid=qid, ...) (the scorer requests qid; the ranker needs "
            "set_fit_request(qid=True)), or call scorer(estimator, X, y, qid=qid); or "
            "(2) give X as a pandas DataFrame with a query-id column named by qid_column "
            f"(on the ranker or in make_ndcg_scorer(qid_column=...)); {where}"
        )


def make_ndcg_scorer(
    k: int = 10,
    *,
    qid_column: Any = None,
    objectives: Mapping[str, float] | None = None,
    **ndcg_options: Any,
) -> NDCGScorer:
    """Build an nDCG@k scorer for scikit-learn's ``scoring=``.

    Parameters
    ----------
    k : int, default=10
        Truncation depth.
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
    NDCGScorer
        ``scorer(estimator, X, y, qid=None) -> float``; its ``repr`` rebuilds
        this call.

    Examples
    --------
    >>> scorer = make_ndcg_scorer(10, gain="linear")
    >>> scorer
    make_ndcg_scorer(k=10, gain='linear')
    """
    k = check_int(k, "k", minimum=1)
    unknown = sorted(set(ndcg_options) - set(NDCG_OPTIONS))
    if unknown:
        raise TypeError(
            f"make_ndcg_scorer got unknown option(s) {unknown!r}; valid options are "
            f"{list(NDCG_OPTIONS)!r} (query ids come as qid metadata or qid_column)"
        )
    if objectives is not None and (not isinstance(objectives, Mapping) or not objectives):
        raise TypeError(
            f"objectives must be a non-empty mapping name -> weight, got {short_repr(objectives)}"
        )
    if ndcg_options:
        # Validate option values now rather than deep inside a cross-validation loop.
        _ndcg_metric(
            np.array([1.0, 0.0]),
            np.array([0.5, 0.1]),
            offsets=np.array([0, 2], dtype=np.int64),
            k=k,
            **ndcg_options,
        )
    return NDCGScorer(k, qid_column=qid_column, objectives=objectives, **ndcg_options)


# --------------------------------------------------------------------------- #
# Scorers of the other rank metrics                                            #
# --------------------------------------------------------------------------- #


def _rank_metric(metric: str, *args: Any, **kwargs: Any) -> Any:
    import ltr.metrics as rank_metrics

    return getattr(rank_metrics, RANK_FUNCTIONS[metric])(*args, **kwargs)


class RankScorer(NDCGScorer):
    """Mean precision, recall, AP, RR, ERR or hit rate at k; built by :func:`make_rank_scorer`.

    Query ids reach it as for :class:`NDCGScorer` (``qid`` metadata or a
    ``qid_column``); options go to the :mod:`ltr.metrics` function.
    """

    def __init__(
        self, metric: str = "map", k: int = 10, *, qid_column: Any = None, **options: Any
    ) -> None:
        super().__init__(k, qid_column=qid_column, **options)
        self.metric = metric
        self._score_func = partial(_rank_metric, metric)

    def __repr__(self) -> str:
        parts = [repr(self.metric), f"k={self.k!r}"]
        if self.qid_column is not None:
            parts.append(f"qid_column={self.qid_column!r}")
        parts += [f"{key}={value!r}" for key, value in self._kwargs.items()]
        return f"make_rank_scorer({', '.join(parts)})"

    def _composite(
        self, estimator: Any, y_true: Any, y_pred: np.ndarray, offsets: np.ndarray
    ) -> float:
        raise ValueError(
            f"the {self.metric} scorer takes one label column; y has several (composite "
            "labels are scored by the ndcg scorer with objectives=...)"
        )


def make_rank_scorer(
    metric: str, k: int = 10, *, qid_column: Any = None, **options: Any
) -> RankScorer:
    """Build a scorer of ``map``, ``mrr``, ``precision``, ``recall``, ``err`` or ``hit_rate``.

    Parameters
    ----------
    metric : str
        One of :data:`RANK_FUNCTIONS` (``"map"`` is average precision,
        ``"mrr"`` reciprocal rank).
    k : int, default=10
        Cut-off.
    qid_column : hashable, optional
        As in :func:`make_ndcg_scorer`.
    **options
        Passed to the :mod:`ltr.metrics` function: ``relevance_level``,
        ``ties``, ``empty``, ``convention``, ``max_grade`` (ERR).  Checked now.

    Returns
    -------
    RankScorer
        ``scorer(estimator, X, y, qid=None) -> float``; its ``repr`` rebuilds this call.

    Examples
    --------
    >>> make_rank_scorer("map", 10, relevance_level=2)
    make_rank_scorer('map', k=10, relevance_level=2)
    """
    if not isinstance(metric, str) or metric.lower() not in RANK_FUNCTIONS:
        raise ValueError(f"unknown metric {metric!r}; expected one of {list(RANK_FUNCTIONS)!r}")
    metric = metric.lower()
    k = check_int(k, "k", minimum=1)
    unknown = sorted(set(options) - set(RANK_OPTIONS))
    if unknown:
        raise TypeError(
            f"make_rank_scorer got unknown option(s) {unknown!r}; valid options are "
            f"{list(RANK_OPTIONS)!r} (query ids come as qid metadata or qid_column)"
        )
    if metric != "err" and "max_grade" in options:
        raise TypeError(f"max_grade is an option of the err scorer only, not of {metric!r}")
    _rank_metric(metric, np.array([1.0, 0.0]), np.array([0.5, 0.1]),
                 offsets=np.array([0, 2], dtype=np.int64), k=k, **options)
    return RankScorer(metric, k, qid_column=qid_column, **options)


# --------------------------------------------------------------------------- #
# IPS nDCG from logged clicks                                                  #
# --------------------------------------------------------------------------- #

#: Options of :func:`ltr.clicks.ips.ips_ndcg` that an IPS scorer passes through.
IPS_OPTIONS: tuple[str, ...] = ("clip", "empty", "discount", "ties")


def _ips_ndcg_metric(*args: Any, **kwargs: Any) -> Any:
    from ltr.clicks.ips import ips_ndcg

    return ips_ndcg(*args, **kwargs)


class IPSNDCGScorer(NDCGScorer):
    """Mean IPS nDCG@k of an estimator's ranking on logged clicks; see :func:`make_ips_ndcg_scorer`.

    Call it as ``scorer(estimator, X, click, qid=..., position=...)``: ``y`` is
    the logged clicks, ``qid`` a list (query-session) id per row, ``position``
    the logged display rank (1 = top).  It requests ``qid`` and ``position``
    through metadata routing by default.
    """

    _DEFAULT_REQUEST: ClassVar[dict[str, bool]] = {"qid": True, "position": True}

    def __init__(
        self,
        k: int = 10,
        *,
        propensity: Any = None,
        qid_column: Any = None,
        position_column: Any = None,
        **options: Any,
    ) -> None:
        super().__init__(k, qid_column=qid_column, **options)
        self._score_func = _ips_ndcg_metric
        self.propensity = propensity
        self.position_column = position_column

    def __repr__(self) -> str:
        parts = [f"k={self.k!r}", f"propensity={np.asarray(self.propensity).tolist()!r}"]
        for name in ("qid_column", "position_column"):
            if getattr(self, name) is not None:
                parts.append(f"{name}={getattr(self, name)!r}")
        parts += [f"{key}={value!r}" for key, value in self._kwargs.items()]
        return f"make_ips_ndcg_scorer({', '.join(parts)})"

    def _score(
        self, method_caller: Any, estimator: Any, X: Any, y_true: Any, **kwargs: Any
    ) -> float:
        qid = kwargs.pop("qid", None)
        position = kwargs.pop("position", None)
        kwargs.pop("sample_weight", None)
        if kwargs:
            raise TypeError(
                f"ips_ndcg scorer got unexpected metadata {sorted(kwargs)!r}; it accepts "
                "qid and position"
            )
        found: dict[str, Any] = {}
        for name in ("qid", "position"):
            column = getattr(self, f"{name}_column")
            if column is not None:  # ours: remove it before predicting
                X, found[name] = _take_qid_column(X, column, drop=True)
            else:  # the estimator's own column: it drops it in predict
                _, found[name] = _take_qid_column(X, _find_param(estimator, f"{name}_column"),
                                                  drop=False)
        qid = found["qid"] if qid is None else qid
        position = found["position"] if position is None else position
        if qid is None:
            raise ValueError(self._missing_qid_message(self.qid_column))
        if position is None:
            raise ValueError(
                "the ips_ndcg scorer needs the logged display positions (1 = top) and got none: "
                "pass position as metadata (sklearn.set_config(enable_metadata_routing=True) "
                "and search.fit(X, click, qid=qid, position=position); the scorer requests it), "
                "call scorer(estimator, X, click, qid=qid, position=position), or name a "
                "column of a DataFrame X with make_ips_ndcg_scorer(position_column=...)"
            )
        n_rows = X.shape[0]
        offsets = _contiguous_offsets(qid, n_rows)
        y_pred = _predict_rows(method_caller, estimator, X, n_rows)
        value = self._score_func(
            y_true, y_pred, position=np.asarray(position), propensity=self.propensity,
            offsets=offsets, k=self.k, **self._kwargs,
        )
        return float(value)


def make_ips_ndcg_scorer(
    k: int = 10,
    *,
    propensity: Any,
    qid_column: Any = None,
    position_column: Any = None,
    **options: Any,
) -> IPSNDCGScorer:
    """Build a scorer of IPS nDCG@k (:func:`ltr.clicks.ips.ips_ndcg`) on logged clicks.

    ``y`` given to the search is the logged clicks (0/1).  Query ids (one
    per displayed list) and logged positions reach the scorer as metadata
    (``qid``, ``position``, both requested by default) or as columns of a
    pandas ``X``, like :func:`make_ndcg_scorer`'s ``qid``.

    Parameters
    ----------
    k : int, default=10
        Cut-off of the new ranking.
    propensity : array-like of shape (n_positions,)
        Examination propensity per logged position (index 0 = position 1), in (0, 1].
    qid_column, position_column : hashable, optional
        Columns of a pandas ``X`` holding list ids and logged positions; removed
        before ``predict``.  When ``None`` the estimator's own parameter of
        that name is used, if any.  Metadata takes precedence.
    **options
        Passed to :func:`ltr.clicks.ips.ips_ndcg`: ``clip``, ``empty``, ``discount``,
        ``ties`` (the normaliser is ``'ideal'``).  Checked now.

    Returns
    -------
    IPSNDCGScorer
        ``scorer(estimator, X, click, qid=None, position=None) -> float``; its
        ``repr`` rebuilds this call.

    Examples
    --------
    >>> make_ips_ndcg_scorer(5, propensity=[1.0, 0.5], clip=0.1)
    make_ips_ndcg_scorer(k=5, propensity=[1.0, 0.5], clip=0.1)
    """
    k = check_int(k, "k", minimum=1)
    unknown = sorted(set(options) - set(IPS_OPTIONS))
    if unknown:
        raise TypeError(
            f"make_ips_ndcg_scorer got unknown option(s) {unknown!r}; valid options are "
            f"{list(IPS_OPTIONS)!r} (qid and position come as metadata or columns)"
        )
    theta = check_propensities(propensity, "propensity")
    _ips_ndcg_metric(np.array([1.0, 0.0]), np.array([0.5, 0.1]), position=np.array([1, 2]),
                     propensity=np.ones(2), offsets=np.array([0, 2], dtype=np.int64), k=k,
                     **options)
    return IPSNDCGScorer(k, propensity=theta, qid_column=qid_column,
                         position_column=position_column, **options)

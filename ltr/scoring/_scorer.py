"""The query-aware scorer (RankScorer) over the metric registry, and get_scorer."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

import numpy as np
from sklearn import get_config
from sklearn.utils.metadata_routing import MetadataRequest

from ltr._frames import contiguous_offsets, is_multilabel, label_columns, take_column
from ltr._propensities import check_row_propensities, rows_as_read
from ltr._sklearn_private import ScorerBase, uncached_caller
from ltr.metrics.names import (
    CONVENTIONS,
    NAME_CONVENTIONS,
    REGISTRY,
    SCORER_METRICS,
    MetricName,
    format_metric_name,
    metric_function,
    metric_info,
    parse_metric_name,
)

__all__ = [
    "CONVENTIONS",
    "MetricName",
    "RankScorer",
    "get_scorer_names",
    "parse_metric_name",
    "score_function",
]

#: Options of :func:`ltr.metrics.ndcg` that a scorer passes through.
NDCG_OPTIONS: tuple[str, ...] = REGISTRY["ndcg"].options
#: Options of the :mod:`ltr.metrics` functions a scorer passes through (``max_grade``: err).
RANK_OPTIONS: tuple[str, ...] = REGISTRY["err"].options
#: Options of :func:`ltr.clicks.ips.ips_ndcg` that an IPS scorer passes through.
IPS_OPTIONS: tuple[str, ...] = REGISTRY["ips_ndcg"].options

_REGISTERED_K: tuple[int, ...] = (1, 3, 5, 10, 20)


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


def _predict_rows(method_caller: Any, estimator: Any, X: Any, n_rows: int) -> np.ndarray:
    """One float64 score per row from ``estimator.predict`` (a clear error otherwise)."""
    y_pred = np.asarray(method_caller(estimator, "predict", X), dtype=np.float64).ravel()
    if y_pred.shape[0] != n_rows:
        raise ValueError(
            f"{type(estimator).__name__}.predict returned {y_pred.shape[0]} scores for "
            f"{n_rows} rows; a ranker must return one score per row"
        )
    return y_pred


# --------------------------------------------------------------------------- #
# Names                                                                        #
# --------------------------------------------------------------------------- #


def get_scorer_names(metrics: str = "ndcg") -> list[str]:
    """Return registered scorer names (``get_scorer`` also accepts any other ``K`` and aliases).

    Parameters
    ----------
    metrics : {'ndcg', 'all'}, default='ndcg'
        ``'ndcg'``: the nDCG names (``"ndcg@10"``, ``"ndcg@5:sklearn"``...);
        ``'all'``: also every other metric of
        :data:`ltr.metrics.names.SCORER_METRICS` at each registered ``K``
        (``"map@10"``, ``"mrr@10"``, ``"dcg@10"``, ``"r-precision"``...).

    Returns
    -------
    list of str
    """
    if metrics not in ("ndcg", "all"):
        raise ValueError(f"metrics must be 'ndcg' or 'all', got {metrics!r}")
    names = [format_metric_name("ndcg", k) for k in _REGISTERED_K]
    names += [
        format_metric_name("ndcg", k, convention=c)
        for k in _REGISTERED_K
        for c in NAME_CONVENTIONS
    ]
    if metrics == "all":
        for m in SCORER_METRICS:
            if m == "ndcg":
                continue
            if REGISTRY[m].cutoff:
                names += [format_metric_name(m, k) for k in _REGISTERED_K]
            else:
                names.append(format_metric_name(m, None))
    return names




class _MetricScore:
    """``f(y_true, y_pred, *, qid)`` of one metric (a picklable function object)."""

    def __init__(self, name: str, metric: str, k: int | None, options: dict[str, Any]) -> None:
        self.__name__ = f"score_function({name!r})"
        self.metric, self.k, self.options = metric, k, options

    def __repr__(self) -> str:
        return self.__name__

    def __call__(self, y_true: Any, y_pred: Any, *, qid: Any = None) -> float:
        if qid is None:
            raise ValueError(
                f"the {self.metric} score function needs qid: make_scorer(...)"
                ".set_score_request(qid=True) with sklearn.set_config(enable_metadata_routing=True)"
            )
        y_pred = np.asarray(y_pred, dtype=np.float64).ravel()
        offsets = contiguous_offsets(qid, y_pred.shape[0])
        return float(metric_function(self.metric)(np.asarray(y_true, dtype=np.float64), y_pred,
                                                  offsets=offsets, k=self.k, **self.options))


def score_function(name: str) -> Callable[..., float]:
    """``f(y_true, y_pred, *, qid)`` of a metric name, for ``sklearn.metrics.make_scorer``.

    For code that builds its scorers with scikit-learn's public API only:
    ``make_scorer(score_function("map@10"), response_method="predict")
    .set_score_request(qid=True)`` scores as ``get_scorer("map@10")`` does when
    ``qid`` is routed (it has no ``qid_column`` and no composite labels).

    Parameters
    ----------
    name : str
        A scorer name, as for :func:`get_scorer` (aliases included).

    Returns
    -------
    callable
        ``f(y_true, y_pred, *, qid=None) -> float``.

    Examples
    --------
    >>> f = score_function("P@2")
    >>> f([1, 0, 1], [0.9, 0.8, 0.1], qid=[7, 7, 7])
    0.5
    """
    parsed = parse_metric_name(name, metrics=SCORER_METRICS)
    options = {} if parsed.convention is None else {"convention": parsed.convention}
    k = parsed.k if REGISTRY[parsed.metric].cutoff else None
    return _MetricScore(name, parsed.metric, k, options)


# --------------------------------------------------------------------------- #
# The scorer                                                                   #
# --------------------------------------------------------------------------- #


def _routing_enabled() -> bool:
    return bool(get_config().get("enable_metadata_routing", False))


class RankScorer(ScorerBase):
    """Mean of a rank metric of :data:`ltr.metrics.names.REGISTRY` over the scored queries.

    Built by :func:`get_scorer`, :func:`make_ndcg_scorer`,
    :func:`make_rank_scorer` or :func:`make_ips_ndcg_scorer`.  Call it as
    ``scorer(estimator, X, y, qid=None)`` (IPS: ``position=`` too); the
    estimator only needs ``predict(X)`` returning one score per row.

    It requests its metadata (``qid``; IPS: ``qid`` and ``position``) through
    metadata routing by default (like ``GroupKFold`` requests ``groups``), so
    with routing enabled ``qid=...`` given to a search's ``fit`` reaches it;
    ``set_score_request(qid=...)`` changes that.

    Parameters
    ----------
    metric : str, default="ndcg"
        A metric of the registry with a function over rows (or an alias).
    k : int or None, default=10
        Cut-off; ``None`` is the whole list.
    qid_column, position_column, propensity_column : hashable, optional
        Columns of a pandas ``X`` holding query ids / logged positions /
        per-row propensities.
    objectives : mapping of str to float, optional
        Composite weights (nDCG only).
    propensity : array-like, optional
        Examination propensities per position (IPS only).  ``None`` with IPS:
        one propensity per row, requested as metadata ``propensity`` (or read
        from ``propensity_column``).
    **options
        Keyword options of the metric function.
    """

    def __init__(
        self,
        metric: str = "ndcg",
        k: int | None = 10,
        *,
        qid_column: Any = None,
        position_column: Any = None,
        propensity_column: Any = None,
        objectives: Mapping[str, float] | None = None,
        propensity: Any = None,
        **options: Any,
    ) -> None:
        info = metric_info(metric)
        super().__init__(metric_function(info.name), options)
        self.metric = info.name
        self.k = k
        self.qid_column = qid_column
        self.position_column = position_column
        self.propensity_column = propensity_column
        self.objectives = None if objectives is None else dict(objectives)
        self.propensity = propensity
        self._requests: dict[str, Any] = dict.fromkeys(info.metadata, True)
        if "position" in self._requests and propensity is None:  # IPS with per-row propensities
            self._requests["propensity"] = True

    @property
    def options(self) -> dict[str, Any]:
        """Options passed through to the metric function."""
        return dict(self._kwargs)

    @property
    def ndcg_options(self) -> dict[str, Any]:
        """Same as :attr:`options` (the name of the nDCG scorer's attribute)."""
        return self.options

    # -- metadata routing (public scikit-learn API) ------------------------ #
    def set_score_request(self, **requests: Any) -> RankScorer:
        """Set which metadata the scorer requests (``qid=True``, ``position="pos"``...).

        Needs ``sklearn.set_config(enable_metadata_routing=True)``.

        Returns
        -------
        self
        """
        if not _routing_enabled():
            raise RuntimeError(
                "set_score_request is only available when metadata routing is enabled: "
                "sklearn.set_config(enable_metadata_routing=True)"
            )
        unknown = sorted(set(requests) - set(self._requests))
        if unknown:
            raise TypeError(
                f"set_score_request got {unknown!r}; the {self.metric} scorer takes "
                f"{sorted(self._requests)!r}"
            )
        self._requests.update(requests)
        return self

    def get_metadata_routing(self) -> MetadataRequest:
        """Return the scorer's metadata requests (a :class:`MetadataRequest`)."""
        request = MetadataRequest(owner=type(self).__name__)
        for param, alias in self._requests.items():
            request.score.add_request(param=param, alias=alias)
        return request

    def _accept_sample_weight(self) -> bool:
        return False

    def __repr__(self) -> str:
        """Return the factory call that rebuilds this scorer."""
        if self.metric == "ndcg":
            head, parts = "make_ndcg_scorer", [f"k={self.k!r}"]
        elif self.metric == "ips_ndcg":
            head, parts = "make_ips_ndcg_scorer", [f"k={self.k!r}"]
            if self.propensity is not None:
                parts.append(f"propensity={np.asarray(self.propensity).tolist()!r}")
        else:
            head, parts = "make_rank_scorer", [repr(self.metric), f"k={self.k!r}"]
        for name in ("qid_column", "position_column", "propensity_column", "objectives"):
            if getattr(self, name) is not None:
                parts.append(f"{name}={getattr(self, name)!r}")
        parts += [f"{key}={value!r}" for key, value in self._kwargs.items()]
        return f"{head}({', '.join(parts)})"

    def __call__(  # type: ignore[override]
        self, estimator: Any, X: Any, y_true: Any, **metadata: Any
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
            Relevance labels (IPS: clicks); 2-D for composite nDCG.
        **metadata
            ``qid`` (array-like of shape (n_rows,)): query id per row, each
            query's rows contiguous; IPS also ``position``.

        Returns
        -------
        float
            Mean of the metric over the queries (composite total for 2-D labels).
        """
        return self._score(uncached_caller(), estimator, X, y_true, **metadata)

    def _metadata(self, estimator: Any, X: Any, given: dict[str, Any]) -> tuple[Any, dict]:
        found: dict[str, Any] = {}
        for name in self._requests:
            column = getattr(self, f"{name}_column")
            if column is not None:  # ours: remove it before predicting
                X, found[name] = take_column(X, column, drop=True)
            else:  # the estimator's own column: it drops it in predict
                _, found[name] = take_column(X, _find_param(estimator, f"{name}_column"),
                                             drop=False)
            if given.get(name) is not None:
                found[name] = given[name]
        if found.get("qid") is None:
            column = self.qid_column or _find_param(estimator, "qid_column")
            raise ValueError(self._missing_qid_message(column))
        if "position" in found and found["position"] is None:
            raise ValueError(
                f"the {self.metric} scorer needs the logged display positions (1 = top) and got "
                "none: pass position as metadata (sklearn.set_config(enable_metadata_routing="
                "True) and search.fit(X, click, qid=qid, position=position); the scorer requests "
                "it), call scorer(estimator, X, click, qid=qid, position=position), or name a "
                "column of a DataFrame X with make_ips_ndcg_scorer(position_column=...)"
            )
        if "propensity" in found and found["propensity"] is None:
            raise ValueError(
                f"the {self.metric} scorer was built without a per-position propensity table, "
                "so it needs one examination propensity per row and got none: pass propensity "
                "as metadata (sklearn.set_config(enable_metadata_routing=True) and "
                "search.fit(X, click, qid=qid, position=position, propensity=p); the scorer "
                "requests it), call scorer(estimator, X, click, qid=qid, position=position, "
                "propensity=p), name a column of a DataFrame X with "
                "make_ips_ndcg_scorer(propensity_column=...), or give "
                "make_ips_ndcg_scorer(propensity=[...]) per position"
            )
        return X, found

    def _score(
        self, method_caller: Any, estimator: Any, X: Any, y_true: Any, **kwargs: Any
    ) -> float:
        kwargs.pop("sample_weight", None)  # per-row weights are not a ranking notion
        unexpected = sorted(set(kwargs) - set(self._requests))
        if unexpected:
            raise TypeError(
                f"{self.metric} scorer got unexpected metadata {unexpected!r}; it accepts "
                f"{' and '.join(self._requests)}"
            )
        X, found = self._metadata(estimator, X, kwargs)
        n_rows = X.shape[0]
        offsets = contiguous_offsets(found["qid"], n_rows)
        y_pred = _predict_rows(method_caller, estimator, X, n_rows)
        if is_multilabel(y_true):
            return self._composite(estimator, y_true, y_pred, offsets)
        y = np.asarray(y_true, dtype=np.float64)
        if y.shape[0] != n_rows:
            raise ValueError(f"y has {y.shape[0]} rows but X has {n_rows}; they must match")
        extra: dict[str, Any] = {}
        if "position" in found:
            position = np.asarray(found["position"])
            extra = {"position": position, "propensity": self.propensity}
            if "propensity" in found:  # per row: checked, then in the form ips_ndcg reads per row
                rows = check_row_propensities(found["propensity"], "propensity", n_rows)
                extra["propensity"] = rows_as_read(rows, position, offsets)
        value = self._score_func(y, y_pred, offsets=offsets, k=self.k, **extra, **self._kwargs)
        return float(value)

    def _composite(
        self, estimator: Any, y_true: Any, y_pred: np.ndarray, offsets: np.ndarray
    ) -> float:
        if not REGISTRY[self.metric].composite:
            raise ValueError(
                f"the {self.metric} scorer takes one label column; y has several (composite "
                "labels are scored by the ndcg scorer with objectives=...)"
            )
        from ltr.metrics.composite import composite_ndcg

        weights = self.objectives or _find_param(estimator, "objectives")
        if weights is None:
            raise ValueError(
                "y has several label columns (composite nDCG) but no objective weights are known: "
                "pass objectives={'name': weight, ...} to make_ndcg_scorer, or score an "
                "estimator whose objectives parameter is set"
            )
        labels = label_columns(y_true, weights)
        result = composite_ndcg(
            labels, y_pred, offsets=offsets, weights=dict(weights), k=self.k, **self._kwargs
        )
        return float(result.total)

    def _missing_qid_message(self, column: Any) -> str:
        where = (
            f"X has no column {column!r} (the qid_column)"
            if column is not None
            else "no qid_column is set"
        )
        return (
            f"the {self.metric} scorer needs query ids and got none: "
            "(1) pass qid as metadata: sklearn.set_config(enable_metadata_routing=True) and "
            "search.fit(X, y, qid=qid, ...) (the scorer requests qid; the ranker needs "
            "set_fit_request(qid=True)), or call scorer(estimator, X, y, qid=qid); or "
            "(2) give X as a pandas DataFrame with a query-id column named by qid_column "
            f"(on the ranker or in the scorer's factory, qid_column=...); {where}"
        )


# --------------------------------------------------------------------------- #
# Factories                                                                    #
# --------------------------------------------------------------------------- #
















# --------------------------------------------------------------------------- #
# Former scorer classes                                                        #
# --------------------------------------------------------------------------- #







"""GroupedRanker: an engine's own sklearn ranker made to take ``qid`` per row."""

from __future__ import annotations

from numbers import Integral
from typing import Any, ClassVar

import numpy as np
from sklearn.base import BaseEstimator, clone
from sklearn.utils._param_validation import HasMethods, Interval, StrOptions
from sklearn.utils.validation import check_is_fitted

from ltr._frames import take_column
from ltr._validation import (
    INT32_MAX,
    check_weights,
)
from ltr.engines import ENGINES
from ltr.estimator._common import (
    _check_qid_rows,
    _get_qid,
    _n_rows,
    _positions_in_order,
)
from ltr.groups import resolve_groups, take_rows
from ltr.metrics.names import NAME_CONVENTIONS

__all__ = ["GroupedRanker"]


def _engine_of(estimator: Any) -> str | None:
    """``"lightgbm"`` / ``"xgboost"`` for those libraries' estimators, else ``None``."""
    root = type(estimator).__module__.split(".")[0]
    return root if root in ENGINES else None


class GroupedRanker(BaseEstimator):
    """Adapter: an engine's own sklearn ranker that takes ``qid`` per row.

    ``lightgbm.LGBMRanker`` needs ``group`` sizes, which cannot follow
    scikit-learn's row splits (LightGBM issues 1137, 3018, 5660).  This wrapper
    takes ``qid`` as routed metadata or from ``qid_column``, sorts each fold's
    rows by query and calls ``estimator.fit(X, y, group=sizes)``; ``predict``
    delegates (dropping the qid column).  Works with ``xgboost.XGBRanker`` too.

    Per-row inputs of ``fit`` (``y``, ``sample_weight``, ``position``) are
    re-ordered with the rows.  ``position`` (display ranks for an unbiased
    ranker) is passed only to an estimator whose ``fit`` takes it, and refused
    otherwise (``LGBMRanker`` and ``XGBRanker`` take none); it is not requested
    by default in metadata routing (so a search can route ``position`` to an
    IPS scorer alone): ``set_fit_request(position=True)`` asks for it.

    Parameters
    ----------
    estimator : estimator with fit(X, y, group=...) and predict(X)
        E.g. ``LGBMRanker(n_estimators=20)``; its parameters are tunable as
        ``estimator__num_leaves`` in a search.
    qid_column : hashable, optional
        Query-id column of a pandas ``X``; never passed to the estimator.
    k : int, default=10
        Cut-off of :meth:`score` (mean nDCG@k).
    convention : {None, "lightgbm", "xgboost", "sklearn"}, default=None
        nDCG convention of :meth:`score`; ``None``: the wrapped engine's own
        (``"lightgbm"`` for ``LGBMRanker``, ``"xgboost"`` for ``XGBRanker``, as
        :meth:`LambdaMARTRanker.score`), ltr's default for other estimators.

    Attributes
    ----------
    estimator_ : estimator
        The fitted clone.
    n_features_in_ : int
        Features seen in ``fit`` (without the qid column).
    """

    __metadata_request__fit: ClassVar[dict[str, bool]] = {"qid": True, "position": False}
    __metadata_request__score: ClassVar[dict[str, bool]] = {"qid": True}

    _parameter_constraints: ClassVar[dict[str, list[Any]]] = {
        "estimator": [HasMethods(["fit", "predict"])],
        "qid_column": [None, str, Integral, tuple],
        "k": [Interval(Integral, 1, INT32_MAX, closed="both")],
        "convention": [None, StrOptions(set(NAME_CONVENTIONS))],
    }

    def __init__(
        self, estimator: Any, *, qid_column: Any = None, k: int = 10, convention: str | None = None
    ) -> None:
        self.estimator = estimator
        self.qid_column = qid_column
        self.k = k
        self.convention = convention

    def fit(
        self,
        X: Any,
        y: Any,
        *,
        qid: Any = None,
        sample_weight: Any = None,
        position: Any = None,
        **fit_params: Any,
    ) -> GroupedRanker:
        """Sort rows by query and fit a clone of ``estimator`` with ``group`` sizes.

        Parameters
        ----------
        X : array-like or DataFrame of shape (n_rows, n_features)
        y : array-like of shape (n_rows,)
        qid : array-like of shape (n_rows,), optional
            Query id per row, or use ``qid_column``.
        sample_weight : array-like of shape (n_rows,), optional
        position : array-like of shape (n_rows,), optional
            Display rank per row (1 = top), re-ordered with the rows; only for
            an estimator whose ``fit`` takes ``position``.
        **fit_params
            Passed to ``estimator.fit`` as given (not re-ordered: per-row
            arrays belong in the arguments above).

        Returns
        -------
        self
        """
        self._validate_params()
        owner = f"{type(self).__name__}.fit"
        if position is not None and not _takes(self.estimator.fit, "position"):
            raise TypeError(
                f"{owner} got position, but {type(self.estimator).__name__}.fit takes no "
                "position argument (LightGBM's and XGBoost's sklearn rankers have none); "
                "train an unbiased ranker with ltr.LambdaMARTRanker(unbiased=True).fit(X, y, "
                "qid=qid, position=position), or do not pass position to this estimator "
                "(in a search: set_fit_request(position=False), the default)"
            )
        X, qid = _get_qid(owner, X, qid, self.qid_column)
        n = _n_rows(X)
        qid = _check_qid_rows(qid, n)
        groups = resolve_groups(n, qid=qid, sort=True)
        X = take_rows(X, groups.order)
        y = take_rows(np.asarray(y), groups.order)
        if sample_weight is not None:
            sample_weight = check_weights(sample_weight, "sample_weight", n)
            fit_params["sample_weight"] = take_rows(sample_weight, groups.order)
        if position is not None:
            fit_params["position"] = _positions_in_order(position, n, groups.order)
        self.estimator_ = clone(self.estimator).fit(X, y, group=groups.sizes, **fit_params)
        if hasattr(self.estimator_, "n_features_in_"):
            self.n_features_in_ = self.estimator_.n_features_in_
        if hasattr(self.estimator_, "feature_names_in_"):
            self.feature_names_in_ = self.estimator_.feature_names_in_
        return self

    def predict(self, X: Any) -> np.ndarray:
        """Scores of the fitted estimator (qid column dropped)."""
        check_is_fitted(self)
        X, _ = take_column(X, self.qid_column, drop=True)
        return np.asarray(self.estimator_.predict(X), dtype=np.float64)

    def score(self, X: Any, y: Any, *, qid: Any = None) -> float:
        """Mean nDCG@``k`` over the queries of ``(X, y)`` (rows need not be sorted).

        The convention is ``convention``, by default the wrapped engine's own.
        """
        from ltr.metrics import ndcg

        check_is_fitted(self)
        X, qid = _get_qid(f"{type(self).__name__}.score", X, qid, self.qid_column)
        n = _n_rows(X)
        qid = _check_qid_rows(qid, n)
        groups = resolve_groups(n, qid=qid, sort=True)
        scores = self.predict(X)
        y = np.asarray(y, dtype=np.float64)
        convention = self.convention if self.convention is not None else _engine_of(self.estimator)
        return float(
            ndcg(
                take_rows(y, groups.order), take_rows(scores, groups.order),
                offsets=groups.offsets, k=self.k, convention=convention,
            )
        )


def _takes(method: Any, name: str) -> bool:
    """Whether *method* accepts a keyword *name* (by name or through ``**kwargs``)."""
    import inspect

    try:
        params = inspect.signature(method).parameters
    except (TypeError, ValueError):  # pragma: no cover - a builtin without a signature
        return True
    return name in params or any(p.kind is p.VAR_KEYWORD for p in params.values())

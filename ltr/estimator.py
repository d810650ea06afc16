"""scikit-learn ranker: :class:`LambdaMARTRanker`, and :class:`GroupedRanker` for peers.

``LambdaMARTRanker`` trains LightGBM or XGBoost LambdaMART through
:func:`ltr.engines.train` (native objective, our LambdaRank objective with
top-k pair sampling, k schedules, composite multi-objective labels) behind the
scikit-learn estimator contract, so ``GridSearchCV`` / ``cross_validate`` work
with query-grouped data:

* query ids travel as metadata (``fit(X, y, qid=...)``; with
  ``sklearn.set_config(enable_metadata_routing=True)`` a search routes them; the
  ranker requests ``qid`` for ``fit`` and ``score`` by default, like
  ``GroupKFold`` requests ``groups``), or as a column of a pandas ``X`` named by
  ``qid_column`` (XGBoost 2's convention), which is never used as a feature;
* rows need not be sorted by query: ``fit`` sorts them internally; ``predict``
  is row-wise and needs no query ids.

``GroupedRanker(LGBMRanker())`` is a thin adapter that lets LightGBM's and
XGBoost's own sklearn rankers take ``qid`` (metadata or column) and turns it into
group sizes for each fold (LightGBM issues 1137, 3018, 5660).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from numbers import Integral, Real
from typing import Any, ClassVar

import numpy as np
from sklearn.base import BaseEstimator, clone
from sklearn.utils._param_validation import HasMethods, Hidden, Interval, StrOptions
from sklearn.utils.validation import check_is_fitted, validate_data

from ltr._validation import (
    INT32_MAX,
    check_1d_float,
    check_eval_at,
    check_no_inf,
    check_objective_weights,
    check_weights,
    short_repr,
)
from ltr.build import OBJECTIVES, TrainSettings, build_training, resolve_objective
from ltr.engines._registry import ENGINES
from ltr.groups import resolve_groups, take_rows
from ltr.scoring import (
    _check_qid_length,
    _is_dataframe,
    _is_multilabel,
    _label_columns,
    _take_qid_column,
)

__all__ = ["GroupedRanker", "LambdaMARTRanker"]



def _missing_qid_message(owner: str, qid_column: Any, X: Any) -> str:
    if qid_column is None:
        col = "qid_column is not set"
    elif not _is_dataframe(X):
        col = f"qid_column={qid_column!r} is set but X is not a pandas DataFrame"
    else:
        col = f"X has no column {qid_column!r}"
    return (
        f"{owner} needs query ids and got none. Pass them either "
        "(1) as metadata: fit(X, y, qid=qid) -- inside GridSearchCV/cross_validate enable "
        "routing with sklearn.set_config(enable_metadata_routing=True) and pass qid=qid to the "
        "search's fit (the ranker requests it; set_fit_request(qid=True) states it), or "
        "(2) as a column: give X as a pandas DataFrame with a query-id column and set "
        f"qid_column='<column name>' (it is not used as a feature); here {col}."
    )


def _get_qid(
    owner: str, X: Any, qid: Any, qid_column: Any, *, required: bool = True
) -> tuple[Any, Any]:
    """Split ``(X, qid)`` from the argument or the ``qid_column`` of a DataFrame X."""
    X, column_qid = _take_qid_column(X, qid_column, drop=True)
    if qid is not None and column_qid is not None:
        raise ValueError(
            f"{owner} got qid twice: as the qid argument and as column {qid_column!r} of X; "
            "pass only one"
        )
    if qid is None:
        qid = column_qid
    if qid is None and required:
        raise ValueError(_missing_qid_message(owner, qid_column, X))
    return X, qid


def _n_rows(X: Any) -> int:
    shape = getattr(X, "shape", None)
    return int(shape[0]) if shape is not None else len(X)


def _check_qid_rows(qid: Any, n_rows: int, name: str = "qid") -> np.ndarray:
    arr = np.asarray(qid)
    _check_qid_length(arr, n_rows, name)
    return arr


def _numeric_labels(y: Any, name: str) -> np.ndarray:
    """Text/object *y* as float64, or a ``ValueError`` naming *name* and the first non-number.

    Numeric (and complex, refused later by ``validate_data``) arrays pass unchanged.
    """
    arr = np.asarray(y)
    if arr.dtype.kind not in "OUS":  # numbers, or complex/other: validate_data's own errors
        return arr
    try:
        return arr.astype(np.float64)
    except (TypeError, ValueError):
        flat = arr.ravel()
        for i, value in enumerate(flat):
            try:
                float(value)
            except (TypeError, ValueError):
                where = f"{name}[{i}]" if arr.ndim == 1 else f"{name} (flat index {i})"
                value = value.item() if isinstance(value, np.generic) else value
                raise ValueError(
                    f"{name} must hold numeric relevance labels (graded, e.g. 0..4); "
                    f"{where} = {value!r} is not a number. Map words to grades first, "
                    "e.g. {'bad': 0, 'fair': 1, 'good': 2}"
                ) from None
        raise  # pragma: no cover - astype failed but every element converts


class LambdaMARTRanker(BaseEstimator):
    """LambdaMART ranker on LightGBM or XGBoost with the scikit-learn API.

    Parameters
    ----------
    engine : {"lightgbm", "xgboost"}, default="lightgbm"
        Boosting library.
    n_estimators : int, default=100
        Boosting rounds in total.  A schedule shorter than this keeps its last
        k; one longer than this is an error (it would be cut).
    learning_rate : float, default=0.1
        Shrinkage, > 0.
    num_leaves : int, default=31
        Maximum leaves per tree (XGBoost: ``max_leaves``), >= 2.
    max_depth : int, default=-1
        Maximum tree depth; -1 for no limit (XGBoost then grows leaf-wise,
        ``grow_policy="lossguide"``, bounded by ``num_leaves``).
    min_child_samples : int, default=20
        Minimum rows per leaf (LightGBM ``min_data_in_leaf``; XGBoost has no
        such parameter and ignores it: use ``engine_params={"min_child_weight": ...}``).
    objective : {None, "native", "lambdarank"}, default=None
        ``"native"``: the engine's own LambdaRank (LightGBM ``lambdarank``,
        XGBoost ``rank:ndcg``); ``"lambdarank"``: ltr's
        :class:`~ltr.objectives.LambdaRankObjective`; ``None`` infers
        ``"lambdarank"`` when ``sampling`` or ``objectives`` is set, else
        ``"native"``.  ``"native"`` with either is an error.  Mirrors the
        config's ``objective.type``.
    k : int, default=20
        nDCG truncation the objective optimises (ignored when ``schedule`` is set).
    schedule : int, list of (k, rounds), Schedule or callable, optional
        Truncation k per boosting round (see :mod:`ltr.schedules`).  With
        ``sampling`` or ``objectives`` set, k changes per round inside one
        training of our objective; otherwise each stage is a native training
        continued from the previous stage's model.
    sigma : float, default=1.0
        Sigmoid steepness of ltr's LambdaRank (config ``objective.sigma``).
    sigmoid : {"exact", "lightgbm"}, default="exact"
        ltr's LambdaRank sigmoid; ``"lightgbm"`` reproduces LightGBM's native
        trees bit for bit (config ``objective.sigmoid``).
    sampling : TopKPairSampling, optional
        Pair sampling of ltr's LambdaRank (config ``objective.sampling``).
    objectives : dict of str to float, optional
        Composite objective: label name -> weight.  ``y`` then holds one label
        column per objective: a DataFrame with columns named after the
        objectives, or a 2-D array whose columns follow the dict's order.
        Training uses :class:`ltr.objectives.CompositeLambdaRankObjective`;
        ``score`` returns the composite nDCG total; metrics on ``eval_set`` and
        the engine's own label use the first objective's column.
    eval_at : sequence of int, default=(10,)
        nDCG cut-offs recorded on ``eval_set``; ``score`` uses ``eval_at[0]``.
    qid_column : hashable, optional
        Column of a pandas ``X`` holding query ids (alternative to ``qid``
        metadata).  Never used as a feature; dropped in ``predict`` too.
    engine_params : dict, optional
        Engine-native parameters merged last (override the above).
    early_stopping_rounds : int, optional
        Stop each stage when nDCG at its ``k`` on the first ``eval_set`` has
        not improved for this many rounds (needs ``eval_set``).
    n_jobs : int, optional
        Threads for the engine.
    random_state : int, RandomState or None, default=None
        Seed for the engine and pair sampling.
    unbiased : bool, default=False
        Train on clicks with position debiasing; ``fit`` then needs
        ``position`` (display rank per row, 1 = top; requested by default in
        metadata routing, like ``qid``).  ``objective="lambdarank"`` (or None):
        ltr's Unbiased LambdaMART, position biases t+/t- learned every round
        and kept in ``model_.position_bias``; ``"native"``: the engine's own
        (LightGBM's position GAM, XGBoost's ``lambdarank_unbiased``).  LightGBM
        does not save its position factors: each stage of a native schedule
        starts them afresh.
    bias_norm : float, default=1.0
        Regulariser ``p`` of the bias estimate ``(l_i / l_1) ** (1 / (1 + p))``
        (ltr's objective, XGBoost's ``lambdarank_bias_norm``).
    propensity : array-like or None, default=None
        Known examination propensities per position (index 0 = position 1)
        used by ltr's objective instead of learning them (needs ``unbiased=True``).

    Attributes
    ----------
    model_ : ltr.engines.RankingModel
        The trained model.
    booster_ : lightgbm.Booster or xgboost.Booster
        The engine's booster.
    n_features_in_ : int
        Number of features seen in ``fit`` (without the qid column).
    feature_names_in_ : ndarray of str
        Feature names, when ``X`` was a DataFrame with string column names.
    evals_result_ : dict
        ``{"valid_0": {"ndcg@10": [...]}}`` per ``eval_set`` entry.
    best_iteration_ : int
        Boosting rounds kept: the engine's early-stopping best when it stopped
        early, else ``n_estimators``.
    n_queries_ : int
        Queries in the training data.
    """

    # Metadata routing: fit and score request qid by default (a ranker cannot
    # work without it), the way GroupKFold requests groups for split.
    __metadata_request__fit: ClassVar[dict[str, bool]] = {"qid": True, "position": True}
    __metadata_request__score: ClassVar[dict[str, bool]] = {"qid": True}

    _parameter_constraints: ClassVar[dict[str, list[Any]]] = {
        "engine": [StrOptions(set(ENGINES))],
        "n_estimators": [Interval(Integral, 1, INT32_MAX, closed="both")],
        "learning_rate": [Interval(Real, 0, None, closed="neither")],
        "num_leaves": [Interval(Integral, 2, INT32_MAX, closed="both")],
        "max_depth": [
            Interval(Integral, 1, INT32_MAX, closed="both"),
            Hidden(Interval(Integral, -1, 0, closed="both")),
        ],
        "min_child_samples": [Interval(Integral, 0, INT32_MAX, closed="both")],
        "objective": [None, StrOptions(set(OBJECTIVES))],
        "k": [Interval(Integral, 1, INT32_MAX, closed="both")],
        "sigma": [Interval(Real, 0, None, closed="neither")],
        "sigmoid": [StrOptions({"exact", "lightgbm"})],
        "schedule": [None, Interval(Integral, 1, INT32_MAX, closed="both"), list, tuple, callable],
        "sampling": [None, object],
        "objectives": [None, dict],
        "eval_at": [Interval(Integral, 1, INT32_MAX, closed="both"), list, tuple],
        "qid_column": [None, str, Integral, tuple],
        "engine_params": [None, dict],
        "early_stopping_rounds": [None, Interval(Integral, 1, INT32_MAX, closed="both")],
        "n_jobs": [None, Integral],
        "random_state": ["random_state"],
        "unbiased": ["boolean"],
        "bias_norm": [Interval(Real, 0, None, closed="left")],
        "propensity": [None, "array-like"],
    }

    def __init__(
        self,
        *,
        engine: str = "lightgbm",
        n_estimators: int = 100,
        learning_rate: float = 0.1,
        num_leaves: int = 31,
        max_depth: int = -1,
        min_child_samples: int = 20,
        objective: str | None = None,
        k: int = 20,
        schedule: Any = None,
        sigma: float = 1.0,
        sigmoid: str = "exact",
        sampling: Any = None,
        objectives: Mapping[str, float] | None = None,
        eval_at: Sequence[int] | int = (10,),
        qid_column: Any = None,
        engine_params: Mapping[str, Any] | None = None,
        early_stopping_rounds: int | None = None,
        n_jobs: int | None = None,
        random_state: int | np.random.RandomState | None = None,
        unbiased: bool = False,
        bias_norm: float = 1.0,
        propensity: Any = None,
    ) -> None:
        self.engine = engine
        self.n_estimators = n_estimators
        self.learning_rate = learning_rate
        self.num_leaves = num_leaves
        self.max_depth = max_depth
        self.min_child_samples = min_child_samples
        self.objective = objective
        self.k = k
        self.schedule = schedule
        self.sigma = sigma
        self.sigmoid = sigmoid
        self.sampling = sampling
        self.objectives = objectives
        self.eval_at = eval_at
        self.qid_column = qid_column
        self.engine_params = engine_params
        self.early_stopping_rounds = early_stopping_rounds
        self.n_jobs = n_jobs
        self.random_state = random_state
        self.unbiased = unbiased
        self.bias_norm = bias_norm
        self.propensity = propensity

    # ------------------------------------------------------------------ #
    # scikit-learn tags                                                   #
    # ------------------------------------------------------------------ #
    def __sklearn_tags__(self) -> Any:
        tags = super().__sklearn_tags__()
        tags.target_tags.required = True
        tags.input_tags.allow_nan = True
        tags.input_tags.sparse = True
        if self.objectives is not None:
            tags.target_tags.multi_output = True
            tags.target_tags.single_output = False
        return tags

    # ------------------------------------------------------------------ #
    # validation helpers                                                  #
    # ------------------------------------------------------------------ #
    def _eval_at(self) -> list[int]:
        return list(check_eval_at(self.eval_at))

    def _weights(self) -> dict[str, float] | None:
        return None if self.objectives is None else check_objective_weights(self.objectives)

    def _settings(self) -> TrainSettings:
        """Return the one builder's settings: every training parameter of this estimator."""
        # the settings' fields are this estimator's parameter names, one for one
        names = [f.name for f in dataclasses.fields(TrainSettings)]
        return TrainSettings(**{name: getattr(self, name) for name in names})

    def _split_labels(
        self, y: Any, weights: dict[str, float] | None, name: str = "y"
    ) -> tuple[Any, dict[str, np.ndarray] | None]:
        """Return ``(primary 1-D label, per-objective label columns or None)``."""
        if weights is None:
            if _is_multilabel(y) and np.ndim(np.asarray(y)) == 2 and np.asarray(y).shape[1] != 1:
                raise ValueError(
                    f"{name} has shape {np.shape(y)} but objectives is None; pass 1-D relevance "
                    "labels, or set objectives={'label': weight, ...} for one column per objective"
                )
            return y, None
        labels = _label_columns(y, weights, name=name)
        return labels[next(iter(weights))], labels

    # ------------------------------------------------------------------ #
    # fit / predict / score                                               #
    # ------------------------------------------------------------------ #
    def fit(
        self,
        X: Any,
        y: Any,
        *,
        qid: Any = None,
        group: Any = None,
        sample_weight: Any = None,
        eval_set: Sequence[tuple[Any, Any]] | None = None,
        eval_qid: Sequence[Any] | None = None,
        position: Any = None,
        callbacks: Sequence[Any] | None = None,
    ) -> LambdaMARTRanker:
        """Train on query-grouped rows.

        Parameters
        ----------
        X : array-like, sparse matrix or DataFrame of shape (n_rows, n_features)
            Features (plus the ``qid_column`` when set).  NaN allowed.
        y : array-like of shape (n_rows,) or (n_rows, n_objectives)
            Graded relevance labels (one column per objective with ``objectives``).
        qid : array-like of shape (n_rows,), optional
            Query id per row; rows need not be sorted.
        group : array-like of int, optional
            Query sizes (LightGBM style) for rows already grouped; instead of qid.
        sample_weight : array-like of shape (n_rows,), optional
            Per-row weights.
        eval_set : list of (X, y), optional
            Validation sets whose nDCG@``eval_at`` is recorded per round.
        eval_qid : list of array-like, optional
            Query ids of each ``eval_set`` entry (or use their ``qid_column``).
        position : array-like of int of shape (n_rows,), optional
            Display rank of each row in the logged ranking (1 = top; a
            permutation of ``1..n`` within each query), for ``unbiased=True``.
        callbacks : list, optional
            Training callbacks (:class:`ltr.engines.RoundCallback`):
            ``after_round(info)`` after every round with that round's eval-set
            metrics; optional ``on_fit_start(estimator)`` before training,
            ``on_fit_end(estimator)`` once fitted and ``on_fit_error(exc)`` when
            the fit raises.  :class:`ltr.tracking.MlflowCallback` logs the fit
            to MLflow.

        Returns
        -------
        self
        """
        from ltr.engines import train
        from ltr.engines._callbacks import check_callbacks

        callbacks = check_callbacks(callbacks)
        self._validate_params()
        eval_at = self._eval_at()
        weights = self._weights()
        settings = self._settings()
        resolve_objective(settings)  # settings errors before any data work
        build_training(
            settings.replace(objectives=None, objective=None, unbiased=False, propensity=None)
        )
        owner = f"{type(self).__name__}.fit"
        # Take the qid column out first, validate the data, then require query ids,
        # so that bad data gets sklearn's usual messages.
        X_in = X
        X, qid = _get_qid(owner, X, qid, self.qid_column, required=False)
        y_main, labels = self._split_labels(y, weights)
        if labels is None:
            y_main = _numeric_labels(y_main, "y")
        X, y_main = validate_data(
            self,
            X,
            y_main,
            accept_sparse="csr",
            dtype=[np.float64, np.float32],
            ensure_all_finite=False,  # NaN is missing; inf: check_no_inf names the column
            y_numeric=True,
            reset=True,
        )
        check_no_inf(X, "X", getattr(self, "feature_names_in_", None))
        n = X.shape[0]
        if qid is None and group is None:
            raise ValueError(_missing_qid_message(owner, self.qid_column, X_in))
        if qid is not None:
            qid = _check_qid_rows(qid, n)
        if sample_weight is not None:
            sample_weight = check_weights(sample_weight, "sample_weight", n)
        groups = resolve_groups(n, qid=qid, group=group, sort=True)
        order = groups.order
        X = take_rows(X, order)
        y_main = np.ascontiguousarray(take_rows(np.asarray(y_main, dtype=np.float64), order))
        if sample_weight is not None:
            sample_weight = np.ascontiguousarray(take_rows(sample_weight, order))
        if labels is not None:
            labels = {
                name: np.ascontiguousarray(take_rows(col, order)) for name, col in labels.items()
            }
        if position is not None:
            position = check_1d_float(position, "position")
            if len(position) != n:
                raise ValueError(
                    f"position has {len(position)} entries but X has {n} rows; pass one display "
                    "rank per row"
                )
            position = np.ascontiguousarray(take_rows(position, order))

        eval_sets = self._prepare_eval_sets(eval_set, eval_qid, weights)
        if settings.early_stopping_rounds is not None and not eval_sets:
            raise ValueError(
                f"early_stopping_rounds={settings.early_stopping_rounds!r} needs eval_set "
                "(and eval_qid): early stopping watches nDCG on the first eval set"
            )
        training = build_training(settings, labels, position)
        for cb in callbacks:
            if hasattr(cb, "on_fit_start"):
                cb.on_fit_start(self)
        try:
            model = train(
                X,
                y_main,
                groups.offsets,
                **training,
                sample_weight=sample_weight,
                eval_sets=eval_sets,
                eval_at=tuple(eval_at),
                progress=False,
                labels=labels,
                callbacks=callbacks,
            )
            self.model_ = model
            self.booster_ = model.booster
            self.evals_result_ = model.evals_result
            best = model.best_iteration
            self.best_iteration_ = int(self.n_estimators) if best is None else int(best)
            self.n_queries_ = groups.n_queries
            for cb in callbacks:
                if hasattr(cb, "on_fit_end"):
                    cb.on_fit_end(self)
        except BaseException as exc:
            for cb in callbacks:
                if hasattr(cb, "on_fit_error"):
                    cb.on_fit_error(exc)
            raise
        return self

    def _prepare_eval_sets(
        self, eval_set: Any, eval_qid: Any, weights: dict[str, float] | None
    ) -> list[tuple]:
        if eval_set is None:
            if eval_qid is not None:
                raise ValueError("eval_qid was given without eval_set")
            return []
        if (
            isinstance(eval_set, tuple)
            and len(eval_set) == 2
            and not isinstance(eval_set[0], tuple)
        ):
            eval_set = [eval_set]
        if eval_qid is not None and len(eval_qid) != len(eval_set):
            raise ValueError(
                f"eval_qid has {len(eval_qid)} entries but eval_set has {len(eval_set)}; "
                "give one qid array per eval_set entry"
            )
        out = []
        for i, item in enumerate(eval_set):
            if not isinstance(item, (tuple, list)) or len(item) != 2:
                raise TypeError(f"eval_set[{i}] must be an (X, y) pair, got {short_repr(item)}")
            Xe, ye = item
            qe = None if eval_qid is None else eval_qid[i]
            Xe, qe = _get_qid(f"{type(self).__name__}.fit eval_set[{i}]", Xe, qe, self.qid_column)
            ye, le = self._split_labels(ye, weights, name=f"eval_set[{i}] y")
            Xe = validate_data(
                self,
                Xe,
                accept_sparse="csr",
                dtype=[np.float64, np.float32],
                ensure_all_finite=False,
                reset=False,
            )
            check_no_inf(Xe, f"eval_set[{i}] X", getattr(self, "feature_names_in_", None))
            ye = _numeric_labels(ye, f"eval_set[{i}] y")
            if ye.shape != (Xe.shape[0],):
                raise ValueError(
                    f"eval_set[{i}] y has shape {ye.shape} but its X has {Xe.shape[0]} rows"
                )
            qe = _check_qid_rows(qe, Xe.shape[0], name=f"eval_qid[{i}]")
            g = resolve_groups(Xe.shape[0], qid=qe, sort=True)
            entry: tuple = (
                f"valid_{i}",
                take_rows(Xe, g.order),
                np.ascontiguousarray(take_rows(ye, g.order)),
                g.offsets,
            )
            if le is not None:
                entry += (
                    {
                        name: np.ascontiguousarray(take_rows(col, g.order))
                        for name, col in le.items()
                    },
                )
            out.append(entry)
        return out

    def _transform_X(self, X: Any) -> Any:
        check_is_fitted(self)
        X, _ = _take_qid_column(X, self.qid_column, drop=True)
        X = validate_data(
            self,
            X,
            accept_sparse="csr",
            dtype=[np.float64, np.float32],
            ensure_all_finite=False,
            reset=False,
        )
        check_no_inf(X, "X", getattr(self, "feature_names_in_", None))
        return X

    def predict(self, X: Any) -> np.ndarray:
        """Relevance score of each row (row-wise: no query ids needed).

        Parameters
        ----------
        X : array-like or DataFrame of shape (n_rows, n_features)
            Same features as in ``fit``; a ``qid_column`` present is dropped.

        Returns
        -------
        ndarray of float64, shape (n_rows,)
        """
        X = self._transform_X(X)
        return np.asarray(self.model_.predict(X), dtype=np.float64)

    def score(self, X: Any, y: Any, *, qid: Any = None) -> float:
        """Mean nDCG@``eval_at[0]`` over the queries of ``(X, y)``.

        Rows need not be sorted by query.  With ``objectives``, ``y`` holds one
        column per objective and the composite nDCG total is returned.

        Parameters
        ----------
        X : array-like or DataFrame of shape (n_rows, n_features)
        y : array-like of shape (n_rows,) or (n_rows, n_objectives)
        qid : array-like of shape (n_rows,), optional
            Query id per row, or use ``qid_column``.

        Returns
        -------
        float
        """
        from ltr.composite import composite_ndcg
        from ltr.metrics import ndcg

        check_is_fitted(self)
        X, qid = _get_qid(f"{type(self).__name__}.score", X, qid, self.qid_column)
        n = _n_rows(X)
        qid = _check_qid_rows(qid, n)
        scores = self.predict(X)
        groups = resolve_groups(n, qid=qid, sort=True)
        k = self._eval_at()[0]
        if self.objectives is not None:
            labels = _label_columns(y, self.objectives)
            labels = {name: take_rows(col, groups.order) for name, col in labels.items()}
            result = composite_ndcg(
                labels,
                take_rows(scores, groups.order),
                offsets=groups.offsets,
                weights=dict(self.objectives),
                k=k,
            )
            return float(result.total)
        y = _numeric_labels(y, "y")
        if y.shape != (n,):
            raise ValueError(f"y must have shape ({n},) (one label per row), got {y.shape}")
        return float(
            ndcg(
                take_rows(y, groups.order), take_rows(scores, groups.order),
                offsets=groups.offsets, k=k,
            )
        )


class GroupedRanker(BaseEstimator):
    """Adapter: an engine's own sklearn ranker that takes ``qid`` per row.

    ``lightgbm.LGBMRanker`` needs ``group`` sizes, which cannot follow
    scikit-learn's row splits (LightGBM issues 1137, 3018, 5660).  This wrapper
    takes ``qid`` as routed metadata or from ``qid_column``, sorts each fold's
    rows by query and calls ``estimator.fit(X, y, group=sizes)``; ``predict``
    delegates (dropping the qid column).  Works with ``xgboost.XGBRanker`` too.

    Parameters
    ----------
    estimator : estimator with fit(X, y, group=...) and predict(X)
        E.g. ``LGBMRanker(n_estimators=20)``; its parameters are tunable as
        ``estimator__num_leaves`` in a search.
    qid_column : hashable, optional
        Query-id column of a pandas ``X``; never passed to the estimator.

    Attributes
    ----------
    estimator_ : estimator
        The fitted clone.
    n_features_in_ : int
        Features seen in ``fit`` (without the qid column).
    """

    __metadata_request__fit: ClassVar[dict[str, bool]] = {"qid": True, "position": True}
    __metadata_request__score: ClassVar[dict[str, bool]] = {"qid": True}

    _parameter_constraints: ClassVar[dict[str, list[Any]]] = {
        "estimator": [HasMethods(["fit", "predict"])],
        "qid_column": [None, str, Integral, tuple],
    }

    def __init__(self, estimator: Any, *, qid_column: Any = None) -> None:
        self.estimator = estimator
        self.qid_column = qid_column

    def fit(
        self, X: Any, y: Any, *, qid: Any = None, sample_weight: Any = None, **fit_params: Any
    ) -> GroupedRanker:
        """Sort rows by query and fit a clone of ``estimator`` with ``group`` sizes.

        Parameters
        ----------
        X : array-like or DataFrame of shape (n_rows, n_features)
        y : array-like of shape (n_rows,)
        qid : array-like of shape (n_rows,), optional
            Query id per row, or use ``qid_column``.
        sample_weight : array-like of shape (n_rows,), optional
        **fit_params
            Passed to ``estimator.fit``.

        Returns
        -------
        self
        """
        self._validate_params()
        X, qid = _get_qid(f"{type(self).__name__}.fit", X, qid, self.qid_column)
        n = _n_rows(X)
        qid = _check_qid_rows(qid, n)
        groups = resolve_groups(n, qid=qid, sort=True)
        X = take_rows(X, groups.order)
        y = take_rows(np.asarray(y), groups.order)
        if sample_weight is not None:
            fit_params["sample_weight"] = take_rows(np.asarray(sample_weight), groups.order)
        self.estimator_ = clone(self.estimator).fit(X, y, group=groups.sizes, **fit_params)
        if hasattr(self.estimator_, "n_features_in_"):
            self.n_features_in_ = self.estimator_.n_features_in_
        if hasattr(self.estimator_, "feature_names_in_"):
            self.feature_names_in_ = self.estimator_.feature_names_in_
        return self

    def predict(self, X: Any) -> np.ndarray:
        """Scores of the fitted estimator (qid column dropped)."""
        check_is_fitted(self)
        X, _ = _take_qid_column(X, self.qid_column, drop=True)
        return np.asarray(self.estimator_.predict(X), dtype=np.float64)

    def score(self, X: Any, y: Any, *, qid: Any = None) -> float:
        """Mean nDCG@10 over the queries of ``(X, y)`` (rows need not be sorted)."""
        from ltr.metrics import ndcg

        check_is_fitted(self)
        X, qid = _get_qid(f"{type(self).__name__}.score", X, qid, self.qid_column)
        n = _n_rows(X)
        qid = _check_qid_rows(qid, n)
        groups = resolve_groups(n, qid=qid, sort=True)
        scores = self.predict(X)
        y = np.asarray(y, dtype=np.float64)
        return float(
            ndcg(
                take_rows(y, groups.order), take_rows(scores, groups.order),
                offsets=groups.offsets, k=10,
            )
        )

"""LambdaMARTRanker: ltr's training behind the scikit-learn estimator contract."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from numbers import Integral, Real
from typing import Any, ClassVar

import numpy as np
from sklearn.base import BaseEstimator
from sklearn.utils._param_validation import Hidden, Interval, StrOptions
from sklearn.utils.validation import check_is_fitted, validate_data

from ltr._frames import is_multilabel, label_columns, take_column
from ltr._validation import (
    INT32_MAX,
    check_eval_at,
    check_no_inf,
    check_weights,
    short_repr,
)
from ltr.build import OBJECTIVES, TrainSettings, build_training, validate_settings
from ltr.engines import ENGINES
from ltr.estimator._common import (
    _check_qid_rows,
    _encode_frame,
    _fit_coding,
    _get_qid,
    _missing_qid_message,
    _n_rows,
    _numeric_labels,
    _positions_in_order,
    _row_propensities,
)
from ltr.groups import resolve_groups, take_rows

__all__ = ["LambdaMARTRanker"]


class LambdaMARTRanker(BaseEstimator):
    """LambdaMART ranker on LightGBM or XGBoost with the scikit-learn API.

    Parameters
    ----------
    engine : {"lightgbm", "xgboost"}, default="lightgbm"
        Boosting library.
    n_estimators : int or None, default=None
        Boosting rounds in total; None: the schedule's rounds, or 100 without
        a schedule.  A schedule shorter than this keeps its last k; one longer
        than this is an error (it would be cut).
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
        ``"lambdarank"`` when ``sampling``, ``objectives``, ``propensity``,
        ``unbiased`` or ``position_term`` is set, else ``"native"``.  ``"native"`` with
        ``sampling``, ``objectives`` or ``propensity`` is an error.
    k : int, default=20
        nDCG truncation the objective optimises (ignored when ``schedule`` is set).
    schedule : int, list of (k, rounds), Schedule or callable, optional
        Truncation k per boosting round (see :mod:`ltr.objectives.schedules`).  With
        ``sampling`` or ``objectives`` set, k changes per round inside one
        training of our objective; otherwise each stage (one per distinct k,
        so a linear schedule trains one stage per round) is a native training
        continued from the previous stage's model.
    sigma : float, default=1.0
        Sigmoid steepness of ltr's LambdaRank.
    sigmoid : {"exact", "lightgbm"}, default="exact"
        ltr's LambdaRank sigmoid; ``"lightgbm"`` reproduces LightGBM's native
        trees bit for bit.
    sampling : TopKPairSampling, optional
        Pair sampling of ltr's LambdaRank.
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
    unbiased : bool or "auto", default=False
        Train on clicks with position debiasing; ``fit`` then needs
        ``position`` (display rank per row, 1 = top; requested by default in
        metadata routing, like ``qid``).  ``objective="lambdarank"`` (or None):
        ltr's Unbiased LambdaMART, position biases t+/t- learned every round
        and kept in ``model_.position_bias``; ``"native"``: the engine's own
        (LightGBM's position GAM, XGBoost's ``lambdarank_unbiased``).  LightGBM
        does not save its position factors: each stage of a native schedule
        starts them afresh.  ``"auto"``: ``fit`` chooses the debiasing method
        from the clicks (:func:`ltr.estimator.select_debiasing`: the candidates
        trained on query folds and scored on held-out sessions, by the share of
        examined click pairs they order right when the log shows nested
        examination, else by self-normalised IPS DCG@``eval_at[0]``), then
        refits the chosen one on all rows; the
        selection is kept in ``debiasing_`` (``debiasing_.chosen``,
        ``debiasing_.to_frame()``).
    bias_norm : float, default=1.0
        Regulariser ``p`` of the bias estimate ``(l_i / l_1) ** (1 / (1 + p))``
        (ltr's objective, XGBoost's ``lambdarank_bias_norm``); a value other
        than 1.0 needs ``unbiased=True``.
    propensity : array-like or None, default=None
        Known examination propensities per position (index 0 = position 1)
        used by ltr's objective instead of learning them (needs ``unbiased=True``).
        One propensity per *row* (e.g. cascade examination per impression) is
        a ``fit`` parameter instead.
    bias_cost : {"reversed_pair_loss", "pair_loss"}, default="reversed_pair_loss"
        Pair cost of the learned position biases of ltr's objective
        (``unbiased=True``): the reversed pair's loss ``log(1 + exp(+sigma
        (s_high - s_low)))`` (XGBoost's) or the pair's own RankNet loss
        ``log(1 + exp(-sigma (s_high - s_low)))`` (Hu et al.'s paper).  The
        default is the one that debiases: with the paper's cost t+ and t-
        cancel (see :class:`ltr.objectives.LambdaRankObjective`).  A value other
        than the default needs ``unbiased=True`` and ltr's objective.
    position_term : bool, default=False
        Learn one score offset per display position jointly with the trees
        (the model of LightGBM's position GAM, in ltr's own objective), dropped
        at prediction; ``fit`` then needs ``position``.  Works alone or with
        ``unbiased=True``; the offsets are in ``model_.position_term``.
    position_regularization : float, default=0.0
        L2 penalty on the position offsets (LightGBM's
        ``lambdarank_position_bias_regularization``); needs ``position_term=True``.

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
        ``{"valid_0": {"ndcg@10": [...]}}`` per ``eval_set`` entry, one value
        per round, in the engine's nDCG convention (the one :meth:`score`
        uses, so both report the same number on the same rows).
    best_iteration_ : int
        Boosting rounds kept: the engine's early-stopping best when it stopped
        early, else every round trained.
    n_queries_ : int
        Queries in the training data.
    debiasing_ : DebiasingSelection
        With ``unbiased="auto"`` only: the held-out scores of the candidate
        debiasing methods and the one chosen (whose parameters trained ``model_``).
    """

    # Metadata routing: fit and score request qid by default (a ranker cannot
    # work without it), the way GroupKFold requests groups for split.
    __metadata_request__fit: ClassVar[dict[str, bool]] = {
        "qid": True, "position": True, "propensity": True,
    }
    __metadata_request__score: ClassVar[dict[str, bool]] = {"qid": True}

    _parameter_constraints: ClassVar[dict[str, list[Any]]] = {
        "engine": [StrOptions(set(ENGINES))],
        "n_estimators": [None, Interval(Integral, 1, INT32_MAX, closed="both")],
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
        "unbiased": ["boolean", StrOptions({"auto"})],
        "bias_norm": [Interval(Real, 0, None, closed="left")],
        "propensity": [None, "array-like"],
        "bias_cost": [StrOptions({"reversed_pair_loss", "pair_loss"})],
        "position_term": ["boolean"],
        "position_regularization": [Interval(Real, 0, None, closed="left")],
    }

    def __init__(
        self,
        *,
        engine: str = "lightgbm",
        n_estimators: int | None = None,
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
        unbiased: bool | str = False,
        bias_norm: float = 1.0,
        propensity: Any = None,
        bias_cost: str = "reversed_pair_loss",
        position_term: bool = False,
        position_regularization: float = 0.0,
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
        self.bias_cost = bias_cost
        self.position_term = position_term
        self.position_regularization = position_regularization

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
            if is_multilabel(y) and np.ndim(np.asarray(y)) == 2 and np.asarray(y).shape[1] != 1:
                raise ValueError(
                    f"{name} has shape {np.shape(y)} but objectives is None; pass 1-D relevance "
                    "labels, or set objectives={'label': weight, ...} for one column per objective"
                )
            return y, None
        labels = label_columns(y, weights, name=name)
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
        propensity: Any = None,
    ) -> LambdaMARTRanker:
        """Train on query-grouped rows.

        Parameters
        ----------
        X : array-like, sparse matrix or DataFrame of shape (n_rows, n_features)
            Features (plus the ``qid_column`` when set).  NaN allowed.
            DataFrame columns of pandas ``category`` dtype are categorical
            features: one coding (:class:`ltr.categorical.CategoricalCoding`)
            is fitted here, stored in ``model_.categorical``, and applied to
            ``eval_set`` and at ``predict`` (an unseen category is missing).
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
            permutation of ``1..n`` within each query), for ``unbiased=True`` or
            ``position_term=True``.
        callbacks : list, optional
            Training callbacks (:class:`ltr.engines.RoundCallback`):
            ``after_round(info)`` after every round with that round's eval-set
            metrics; optional ``on_fit_start(estimator)`` before training,
            ``on_fit_end(estimator)`` once fitted and ``on_fit_error(exc)`` when
            the fit raises.  :class:`ltr.tracking.MlflowCallback` logs the fit
            to MLflow.
        propensity : array-like of shape (n_rows,), optional
            Known examination propensity of each row (impression), each in
            ``(0, 1]``, e.g. :func:`ltr.clicks.estimate_propensity_cascade`'s:
            IPS pair weights ``1 / p[row of the more relevant document]``
            instead of learned biases (needs ``unbiased=True`` and ``position``;
            not with the constructor's per-position ``propensity``).  Requested
            by default in metadata routing, like ``position``, so
            cross-validation splits it with the rows.

        Returns
        -------
        self
        """
        from ltr.engines import check_callbacks, train

        callbacks = check_callbacks(callbacks)
        # each parameter once (the constraint table), then their combinations once
        self._validate_params()
        eval_at = self._eval_at()
        try:
            settings = validate_settings(self._settings())
        except (TypeError, ValueError) as exc:
            raise type(exc)(f"{type(self).__name__}: {exc}") from None
        if settings.unbiased == "auto":
            from ltr.estimator._auto import fit_auto

            return fit_auto(self, X, y, qid=qid, group=group, sample_weight=sample_weight,
                            eval_set=eval_set, eval_qid=eval_qid, position=position,
                            callbacks=callbacks)
        weights = None if settings.objectives is None else dict(settings.objectives)
        owner = f"{type(self).__name__}.fit"
        # Take the qid column out first, validate the data, then require query ids,
        # so that bad data gets sklearn's usual messages.
        X_in = X
        X, qid = _get_qid(owner, X, qid, self.qid_column, required=False)
        coding = _fit_coding(X)
        X = _encode_frame(coding, X)
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
            position = _positions_in_order(position, n, order)
        if propensity is not None:
            propensity = _row_propensities(propensity, n, order, position, groups.n_queries,
                                           self.propensity is not None)

        self._coding = coding
        eval_sets = self._prepare_eval_sets(eval_set, eval_qid, weights)
        if settings.early_stopping_rounds is not None and not eval_sets:
            raise ValueError(
                f"early_stopping_rounds={settings.early_stopping_rounds!r} needs eval_set "
                "(and eval_qid): early stopping watches nDCG on the first eval set"
            )
        training = build_training(settings, labels, position, propensity)
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
                categorical=coding,
                callbacks=callbacks,
            )
            self.model_ = model
            self.booster_ = model.booster
            self.evals_result_ = model.evals_result
            best = model.best_iteration
            self.best_iteration_ = model.num_trees() if best is None else int(best)
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
            Xe = _encode_frame(self._coding, Xe)
            ye, le = self._split_labels(ye, weights, name=f"eval_set[{i}] y")
            Xe = validate_data(self, Xe, accept_sparse="csr", dtype=[np.float64, np.float32],
                               ensure_all_finite=False, reset=False)
            check_no_inf(Xe, f"eval_set[{i}] X", getattr(self, "feature_names_in_", None))
            ye = _numeric_labels(ye, f"eval_set[{i}] y")
            if ye.shape != (Xe.shape[0],):
                raise ValueError(
                    f"eval_set[{i}] y has shape {ye.shape} but its X has {Xe.shape[0]} rows"
                )
            qe = _check_qid_rows(qe, Xe.shape[0], name=f"eval_qid[{i}]")
            g = resolve_groups(Xe.shape[0], qid=qe, sort=True)
            entry: tuple = (f"valid_{i}", take_rows(Xe, g.order),
                            np.ascontiguousarray(take_rows(ye, g.order)), g.offsets)
            if le is not None:
                entry += ({name: np.ascontiguousarray(take_rows(col, g.order))
                           for name, col in le.items()},)
            out.append(entry)
        return out

    def _transform_X(self, X: Any) -> Any:
        check_is_fitted(self)
        X, _ = take_column(X, self.qid_column, drop=True)
        X = _encode_frame(self.model_.categorical, X)
        X = validate_data(self, X, accept_sparse="csr", dtype=[np.float64, np.float32],
                          ensure_all_finite=False, reset=False)
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
        return np.asarray(self.model_.predict_codes(X), dtype=np.float64)

    def score(self, X: Any, y: Any, *, qid: Any = None) -> float:
        """Mean nDCG@``eval_at[0]`` over the queries of ``(X, y)``, in the engine's convention.

        The convention is the engine's own (:data:`ltr.metrics.names.CONVENTIONS`
        ``[engine]``: LightGBM's or XGBoost's nDCG, gain ``2**l - 1``, ties in
        input order, a query without relevant rows scoring 1), the one of
        :attr:`evals_result_` and of early stopping: ``score`` on an
        ``eval_set`` equals the last value of its ``evals_result_`` curve
        (``ltr train`` runs report the same by default).  For another
        convention use a scorer, e.g. ``make_ndcg_scorer(10, convention="sklearn")``.

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
        from ltr.metrics import ndcg
        from ltr.metrics.composite import composite_ndcg

        check_is_fitted(self)
        X, qid = _get_qid(f"{type(self).__name__}.score", X, qid, self.qid_column)
        n = _n_rows(X)
        qid = _check_qid_rows(qid, n)
        scores = self.predict(X)
        groups = resolve_groups(n, qid=qid, sort=True)
        k = self._eval_at()[0]
        if self.objectives is not None:
            labels = label_columns(y, self.objectives)
            labels = {name: take_rows(col, groups.order) for name, col in labels.items()}
            result = composite_ndcg(
                labels,
                take_rows(scores, groups.order),
                offsets=groups.offsets,
                weights=dict(self.objectives),
                k=k,
                convention=self.engine,
            )
            return float(result.total)
        y = _numeric_labels(y, "y")
        if y.shape != (n,):
            raise ValueError(f"y must have shape ({n},) (one label per row), got {y.shape}")
        return float(
            ndcg(
                take_rows(y, groups.order), take_rows(scores, groups.order),
                offsets=groups.offsets, k=k, convention=self.engine,
            )
        )

"""Thin adapters that train LambdaMART rankers on LightGBM or XGBoost.

:func:`train` is the single entry point: it validates everything, splits the
truncation schedule into stages, trains each stage on the chosen engine
(continued from the previous stage's model), evaluates nDCG@k with
:func:`ltr.metrics.ndcg` every round (under the engine's own convention unless
told otherwise), stops each stage early when asked, checkpoints stages to
disk and returns a :class:`RankingModel`.

Modules, one concept each (data flows top to bottom):

* ``_registry``: :data:`ENGINES` and :func:`get_adapter`, the one registry;
* ``_protocol``: the :class:`EngineAdapter` protocol the adapters implement, and
  the ``Executor``/``Placement`` protocols of where stages run (the adapter in
  one process, :mod:`ltr.dask`'s placement on a cluster);
* ``_spec``: argument validation, once, into a frozen :class:`TrainSpec`
  (``spec_from_rows`` is the one builder, for local and distributed rows);
* ``_objective``: objective resolution (native, instance, composite weights);
* ``_recorder``: per-round metrics and early stopping;
* ``_callbacks``: :class:`RoundCallback`, the per-round reports to the caller;
* ``_checkpoint``: fingerprint, ``stages.json``, completed stages;
* ``_loop``: the stage loop (one loop for one process and for Dask);
* ``_model``: :class:`RankingModel`;
* ``lightgbm``/``xgboost``: the adapters (all engine knowledge);
* ``_trees``: the engines' tree structures for permutation importance.
"""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from ltr._compat import passive_omp_wait
from ltr.engines._callbacks import RoundCallback, RoundInfo, check_callbacks
from ltr.engines._loop import run_training
from ltr.engines._model import RankingModel
from ltr.engines._objective import uses_position
from ltr.engines._protocol import EngineAdapter
from ltr.engines._recorder import Recorder
from ltr.engines._registry import ENGINES, get_adapter
from ltr.engines._spec import TrainRows, TrainSpec, encode_categorical, make_spec, spec_from_rows

#: The executor interface: what another executor of the one stage loop (``ltr.dask``) uses.
EXECUTOR_API = ("Recorder", "TrainRows", "run_training", "spec_from_rows", "uses_position")

__all__ = [
    "ENGINES",
    "EXECUTOR_API",
    "EngineAdapter",
    "RankingModel",
    "Recorder",
    "RoundCallback",
    "RoundInfo",
    "TrainRows",
    "TrainSpec",
    "check_callbacks",
    "get_adapter",
    "run_training",
    "spec_from_rows",
    "train",
    "uses_position",
]


def train(
    X: Any,
    y: Any,
    offsets: Any,
    *,
    engine: str = "lightgbm",
    objective: Any = "native",
    k: int = 20,
    schedule: Any = None,
    params: Mapping[str, Any] | None = None,
    num_boost_round: int | None = None,
    sample_weight: Any = None,
    eval_sets: Sequence[tuple[Any, ...]] = (),
    eval_at: Sequence[int] = (1, 3, 5, 10, 20),
    early_stopping_rounds: int | None = None,
    stage_dir: str | os.PathLike[str] | None = None,
    resume: bool = False,
    convention: str | None = None,
    random_state: int | np.random.RandomState | np.random.Generator | None = None,
    n_jobs: int | None = None,
    progress: bool | None = False,
    labels: Mapping[str, Any] | None = None,
    feature_names: Sequence[str] | None = None,
    position: Any = None,
    categorical: Any = None,
    callbacks: Sequence[Any] | None = None,
) -> RankingModel:
    """Train a LambdaMART ranking model.

    Parameters
    ----------
    X : array-like of shape (n_rows, n_features)
        Features; rows sorted by query (ndarray, DataFrame or scipy sparse).
    y : array-like of shape (n_rows,)
        Graded relevance, finite and >= 0 (integers for the native objectives).
    offsets : array-like of int64, shape (n_queries + 1,)
        Query ``q`` owns rows ``offsets[q]:offsets[q + 1]``
        (see :func:`ltr.groups.resolve_groups`).
    engine : {"lightgbm", "xgboost"}, default="lightgbm"
        XGBoost is imported only when chosen.
    objective : "native", LambdaRankObjective, CompositeLambdaRankObjective or mapping
        ``"native"``: LightGBM ``lambdarank`` (``lambdarank_truncation_level=k``)
        or XGBoost ``rank:ndcg`` (``lambdarank_pair_method="topk"``,
        ``lambdarank_num_pair_per_sample=k``).  An objective instance from
        :mod:`ltr.objectives` is used as a custom objective.  A mapping of
        objective weights (``{"watch": 0.6, "share": 0.25, "follow": 0.15}``)
        builds a ``CompositeLambdaRankObjective`` over the ``labels`` columns.
    k : int, default=20
        Truncation level when there is no schedule (a custom objective's own
        ``k``/``schedule`` take precedence).
    schedule : Schedule, list of (k, rounds), int or callable, optional
        Truncation schedule (:mod:`ltr.objectives.schedules`).  The schedule is split into
        stages of equal ``k`` (:func:`ltr.objectives.schedules.stages_of`); each stage is a
        training continued from the previous model, the native objective rebuilt
        with the stage's ``k``.  A custom objective receives the schedule and
        changes ``k`` every round inside one training; its stages become
        separate continued trainings (``iteration`` reset to each stage's first
        round) only when ``early_stopping_rounds`` or ``stage_dir`` needs stage
        boundaries.  With bagging/feature_fraction the two differ, because the
        engine's random sequence restarts at each stage (seed + stage index);
        resuming is exact either way.
    params : mapping, optional
        Engine-native parameters merged over the defaults (LightGBM:
        ``learning_rate=0.1, num_leaves=31, min_data_in_leaf=20,
        deterministic=True, force_row_wise=True, verbosity=-1, seed``;
        XGBoost: ``tree_method="hist", learning_rate=0.1, max_depth=6, seed``).
        The objective, rounds, truncation and early stopping are set through
        this function's arguments; passing them in *params* is an error.
    num_boost_round : int or None, default=None
        Total boosting rounds.  ``None`` means the schedule's own length (or
        100).  Must not be smaller than the schedule's length; when larger,
        the schedule's last ``k`` continues.
    sample_weight : array-like of shape (n_rows,), optional
        Per-row weights (for XGBoost's native objective they must be constant
        within each query).
    eval_sets : sequence of tuples, default=()
        ``(name, X, y, offsets)`` or ``(name, X, y, offsets, labels)`` with
        ``labels`` a mapping of label columns (for composite nDCG).
    eval_at : sequence of int, default=(1, 3, 5, 10, 20)
        Cut-offs recorded every round as ``"ndcg@k"`` with
        :func:`ltr.metrics.ndcg`; eval sets with labels also record
        ``"composite_ndcg@k"`` and ``"ndcg@k/<objective>"`` when the objective
        is composite.
    early_stopping_rounds : int, optional
        Per stage: stop the stage when the first eval set's ``ndcg@k_stage``
        (``composite_ndcg@k_stage`` for composite) has not improved for this
        many rounds, and keep the stage's best round.
    stage_dir : path, optional
        Write each stage's model there when it ends
        (``stage_{i:02d}_k{k}.txt`` / ``.json``) plus ``stages.json``.
    resume : bool, default=False
        Load the completed stages found in *stage_dir* and train only the rest;
        the result is identical to an uninterrupted run.  The folder must hold
        a run with the same settings and data.
    convention : str, optional
        nDCG convention for evaluation (``"lightgbm"``, ``"xgboost"``,
        ``"sklearn"``, ``"trec_eval"``, ``"ranx"``; see :mod:`ltr.metrics`).
        ``None``: the engine's own (``"lightgbm"`` or ``"xgboost"``), so the
        recorded curves equal the engine's ``ndcg@k`` eval.  The one used is
        ``model.convention``.
    random_state : int, RandomState, Generator or None, default=None
        Engine seed (``None`` -> 0, deterministic).  Stage ``i`` uses seed + i.
    n_jobs : int, optional
        Engine threads (``num_threads`` / ``nthread``); ``None`` or -1: engine default.
    progress : bool or None, default=False
        Show a tqdm bar over rounds; ``None`` shows it only on a terminal.
    labels : mapping of str to array-like, optional
        Label columns per objective, in training-row order, for a composite objective.
    feature_names : sequence of str, optional
        One distinct name per column of ``X``; stored in the engine's model
        (``model.feature_names``, :meth:`RankingModel.save_native`).
    position : array-like of int, shape (n_rows,), optional
        Display rank of each row in the logged ranking (1 = top; within each
        query a permutation of ``1..n``), for training on clicks with position
        debiasing.  With ``objective="native"`` the engine's own method is
        used: LightGBM's position GAM (``Dataset(position=...)``, its bias
        factors updated every round by a Newton step with
        ``lambdarank_position_bias_regularization``; they are not saved in the
        model, and each stage starts them afresh -- in a resumed run too, so
        resume stays identical) or XGBoost's ``lambdarank_unbiased`` (rows are
        put in display order inside each query for it; ``lambdarank_bias_norm``
        through *params*).  With ``LambdaRankObjective(unbiased=True)`` (or
        ``propensity=``) ltr's Unbiased LambdaMART uses them; with
        ``LambdaRankObjective(position_term=True)`` ltr's objective learns the
        position GAM's offsets itself (checkpointed per stage, restored on
        resume, in ``model.position_term``).  Any other objective refuses positions.
    categorical : sequence of str or int, or CategoricalCoding, optional
        Categorical columns (names from *feature_names* or a DataFrame's
        columns, or indices).  One coding is fitted on *X*
        (:class:`ltr.categorical.CategoricalCoding`: the training set's
        categories numbered ``0..n-1``), applied to *X* and every eval set,
        stored in ``model.categorical`` and applied again by
        :meth:`RankingModel.predict`; a missing or unseen category is missing
        (NaN) on both engines.  The codes go to the engines natively:
        LightGBM ``Dataset(categorical_feature=...)``, XGBoost
        ``DMatrix(feature_types=["c", ...], enable_categorical=True)``.  A
        fitted ``CategoricalCoding`` is used as is, with *X* and the eval sets
        already holding its codes.
    callbacks : sequence of RoundCallback, optional
        Objects with ``after_round(info)``, called after every round with a
        :class:`RoundInfo` (the round, its stage and ``k``, and the metrics
        recorded on each eval set); raising from one stops the training
        (:mod:`ltr.engines._callbacks`).

    Returns
    -------
    RankingModel

    Notes
    -----
    Nothing passed in is changed: a custom objective is trained as a copy
    (its ``iteration`` and learned position biases stay as they were; the
    learned biases of the training are in ``model.params["position_bias"]``,
    the position term's offsets in ``model.params["position_term"]``),
    and the ``k`` of every round is ``schedule(round)`` for the global round
    (the stage's first round plus the engine's round index in that call), so
    a resumed run computes exactly the gradients of an uninterrupted one.
    While training, ``OMP_WAIT_POLICY`` is ``PASSIVE`` unless you set it
    (:func:`ltr._compat.passive_omp_wait`): spinning OpenMP threads slow the
    engines 10-100x on shared cores.

    Raises
    ------
    ValueError, TypeError
        For any invalid argument, before any training starts.
    ImportError
        When ``engine="xgboost"`` and xgboost is not installed.

    Examples
    --------
    >>> import numpy as np
    >>> from ltr.engines import train
    >>> rng = np.random.default_rng(0)
    >>> X = rng.normal(size=(200, 5)); y = rng.integers(0, 3, 200)
    >>> offsets = np.arange(0, 201, 20)
    >>> model = train(X, y, offsets, schedule=[(5, 3), (10, 2)], n_jobs=1,
    ...               params={"min_data_in_leaf": 5})
    >>> model.num_trees(), [s["k"] for s in model.stages]
    (5, [5, 10])
    """
    coding = None
    if categorical is not None:
        coding, X, eval_sets = encode_categorical(categorical, X, eval_sets, feature_names)
    spec = make_spec(
        X, y, offsets, engine=engine, objective=objective, k=k, schedule=schedule,
        params=params, num_boost_round=num_boost_round, sample_weight=sample_weight,
        eval_sets=eval_sets, eval_at=eval_at, early_stopping_rounds=early_stopping_rounds,
        stage_dir=stage_dir, resume=resume, convention=convention, random_state=random_state,
        n_jobs=n_jobs, progress=progress, labels=labels, feature_names=feature_names,
        position=position, callbacks=callbacks,
    )
    get_adapter(spec.engine)  # a missing engine fails here, naming the extra to install
    if coding is not None:
        spec = dataclasses.replace(spec, categorical=coding.columns)
    with passive_omp_wait():
        model = run_training(spec)
    model.categorical = coding
    return model

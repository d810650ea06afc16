"""Distributed training: :func:`train` runs the one stage loop of :mod:`ltr.engines` on a cluster.

:func:`train` checks only what is Dask's own (the frame's columns, the
position refusal), then builds the same frozen
:class:`~ltr.engines._spec.TrainSpec` as :func:`ltr.engines.train` through
the same builder (:func:`~ltr.engines._spec.spec_from_rows`: one rule each for
``k``, the schedule, the objective, eval sets, early stopping, the
convention and the seed) with a :class:`~ltr.dask._placement.DaskPlacement`
holding the rows, and runs the same stage loop
(:func:`ltr.engines._loop.run_training`): stages, checkpoints, resume, the
recorded metrics, the training's own objective copy and the model's params
are the loop's.  The placement is the executor of each stage, as
``xgboost.dask`` calls the core ``train`` on each worker: ``lightgbm.dask`` or
``xgboost.dask`` over the shuffled frame, with the stage's engine parameters
from the adapter (:meth:`~ltr.engines._protocol.EngineAdapter.stage_params`).
Only where the rows live and how the workers meet differ.
"""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from ltr._compat import import_dask, import_distributed, passive_omp_wait
from ltr._validation import check_int, short_repr
from ltr.dask._categorical import code_training
from ltr.dask._frame import check_frame
from ltr.dask._placement import (
    _DISTRIBUTED,
    LIGHTGBM_MAX_QUERY_ROWS,
    MEMORY_FACTOR,
    DaskPlacement,
    DistributedTrainingError,
    _first_line,
    _lost,
    _workers,
)
from ltr.engines import (
    RankingModel,
    TrainRows,
    get_adapter,
    run_training,
    spec_from_rows,
    uses_position,
)

__all__ = ["LIGHTGBM_MAX_QUERY_ROWS", "MEMORY_FACTOR", "DistributedTrainingError", "train"]


# ----------------------------------------------------------------------------
# what only a frame on a cluster needs checked
# ----------------------------------------------------------------------------


def _refuse_position(position: Any, objective: Any) -> None:
    if position is not None or (not isinstance(objective, (str, Mapping))
                                and uses_position(objective)):
        raise ValueError(
            "position-bias (unbiased) training is not supported on Dask: its position "
            "statistics would have to be summed over all workers every round. Train "
            "single-machine with ltr.engines.train(..., position=...) and an unbiased "
            "LambdaRankObjective (or collect a sample that fits one machine)"
        )


def _label_columns(labels: Any, columns: Sequence[str]) -> dict[str, str] | None:
    """``labels={objective: column}``: each a column of *data* (composite objectives)."""
    if labels is None:
        return None
    if not isinstance(labels, Mapping):
        raise TypeError(f"labels must be a mapping objective -> column of data, got "
                        f"{short_repr(labels)}")
    for name, col in labels.items():
        if not isinstance(col, str) or col not in columns:
            raise ValueError(f"labels[{name!r}]={col!r} is not a column of data")
    return {str(name): col for name, col in labels.items()}


def _collect_eval_sets(eval_sets: Any, qid: str, label: str, feats: list[str],
                       label_cols: Mapping[str, str] | None) -> Any:
    """``(name, dask DataFrame)`` entries become ``(name, X, y, offsets[, labels])`` here.

    Anything else is left for the one eval-set rule of the spec builder.
    """
    dd = import_dask().dataframe
    if isinstance(eval_sets, (str, bytes, Mapping)) or not isinstance(eval_sets, Sequence):
        return eval_sets
    out: list[Any] = []
    for i, item in enumerate(eval_sets):
        if isinstance(item, tuple) and len(item) == 2 and isinstance(item[1], dd.DataFrame):
            name, frame = item
            need = [qid, label, *feats, *(label_cols or {}).values()]
            check_frame(frame, {f"eval_sets[{i}] columns": list(dict.fromkeys(need))})
            pdf = frame[list(dict.fromkeys(need))].compute()
            pdf = pdf.sort_values(qid, kind="stable")
            q = pdf[qid].to_numpy()
            starts = np.flatnonzero(np.r_[True, q[1:] != q[:-1]]) if len(q) else np.zeros(0, int)
            offsets = np.r_[starts, len(q)].astype(np.int64)
            entry: tuple[Any, ...] = (name, pdf[feats].to_numpy(dtype=np.float64),
                                      pdf[label].to_numpy(dtype=np.float64), offsets)
            if label_cols:
                entry += ({n: pdf[c].to_numpy(dtype=np.float64) for n, c in label_cols.items()},)
            out.append(entry)
        else:
            out.append(item)
    return out


# ----------------------------------------------------------------------------
# train
# ----------------------------------------------------------------------------


def train(
    client: Any,
    data: Any,
    *,
    label: str,
    qid: str,
    features: Sequence[str] | None = None,
    weight: str | None = None,
    labels: Mapping[str, str] | None = None,
    position: str | None = None,
    engine: str = "lightgbm",
    objective: Any = "native",
    k: int = 20,
    schedule: Any = None,
    params: Mapping[str, Any] | None = None,
    num_boost_round: int | None = None,
    eval_sets: Sequence[Any] = (),
    eval_at: Sequence[int] = (1, 3, 5, 10, 20),
    early_stopping_rounds: int | None = None,
    stage_dir: str | os.PathLike[str] | None = None,
    resume: bool = False,
    convention: str | None = None,
    random_state: int | np.random.RandomState | np.random.Generator | None = None,
    npartitions: int | None = None,
    categorical: Any = None,
) -> RankingModel:
    """Train a LambdaMART ranking model on a Dask cluster.

    Parameters
    ----------
    client : distributed.Client
        The cluster to train on (:func:`ltr.dask.connect` makes one).
    data : dask.dataframe.DataFrame
        One row per document; any partitioning (queries may be split: rows
        are moved so each query is whole in one partition, see
        :func:`shuffle_by_query`).
    label, qid : str
        Columns of the graded relevance (finite, ``>= 0``) and the query id.
    features : sequence of str, optional
        Feature columns; default every other column (label, qid, weight and
        label columns aside).
    weight : str, optional
        Row-weight column (finite, ``>= 0``), multiplied into our objective's
        gradients per row (LightGBM's native objective weights rows itself;
        XGBoost's native objective cannot take weights on Dask).
    labels : mapping of str to str, optional
        Objective name -> label column, for a composite objective.  Whole
        grades only (they travel packed in the engine's label).
    position : str, optional
        Not supported on Dask: position-bias (unbiased) training needs its
        position statistics summed over all workers every round; passing it
        (or an unbiased objective) is an error that says to train single-machine.
    engine : {"lightgbm", "xgboost"}, default="lightgbm"
        ``lightgbm.dask.DaskLGBMRanker`` or ``xgboost.dask.train``.
    objective : "native", LambdaRankObjective, CompositeLambdaRankObjective or mapping
        As in :func:`ltr.engines.train`; ours runs on each worker over its
        local queries.  A mapping of weights (or a composite objective, whose
        own label arrays are ignored here) trains on the ``labels`` columns.
    k : int, default=20
        Truncation level without a schedule.
    schedule : Schedule, list of (k, rounds), int or callable, optional
        Truncation schedule, split into continued stages as in
        :func:`ltr.engines.train` (a custom objective follows it every round).
    params : mapping, optional
        Engine parameters over the defaults of :func:`ltr.engines.train`.
    num_boost_round : int, optional
        Rounds; default the schedule's length, else 100.
    eval_sets : sequence, default=()
        ``(name, X, y, offsets[, labels])`` as in :func:`ltr.engines.train`,
        or ``(name, dask DataFrame)`` with the training columns (collected).
        Eval sets are sent whole to every worker: keep them to a sample that
        fits a worker beside its training rows.
    eval_at : sequence of int, default=(1, 3, 5, 10, 20)
        Cut-offs recorded every round (``model.evals_result``).
    early_stopping_rounds : int, optional
        Per stage, on the first eval set, as in :func:`ltr.engines.train`.
    stage_dir : path, optional
        Write each stage's model there when it ends, plus ``stages.json``.
    resume : bool, default=False
        Load the completed stages in *stage_dir* and train only the rest.
    convention : str, optional
        nDCG convention of the recorded metrics (default the engine's own).
    random_state : int, RandomState, Generator or None, default=None
        Engine seed (``None`` -> 0); stage ``i`` uses seed + i.
    npartitions : int, optional
        Partitions after the shuffle; default ``max(data.npartitions, workers)``.
    categorical : sequence of str or int, or CategoricalCoding, optional
        Categorical feature columns, as in :func:`ltr.engines.train`: the
        coding is fitted on *data* (the distinct values of each column,
        computed on the cluster), applied to it partition by partition and to
        the eval sets, and stored in ``model.categorical``; a fitted
        ``CategoricalCoding`` means *data* and the eval sets hold its codes.

    Returns
    -------
    RankingModel
        The same class as single-machine training; its booster is local; its
        ``params`` and ``stages`` are those of :func:`ltr.engines.train` with
        the same settings, plus ``params["distributed"]``: the workers that
        trained each stage (``stage_workers``; ``workers`` their minimum),
        the workers the rows were shuffled to and their rows (``worker_rows``,
        largest first: the partitions are spread in proportion to the
        workers' threads before training), partitions, rows, queries.

    Raises
    ------
    ValueError, TypeError
        For invalid arguments or data (missing columns, no rows, a qid dtype
        that differs between partitions, NaN or negative labels, a query over
        10,000 rows with LightGBM's native objective, a query too large for
        one worker's memory), before training starts.
    ValueError
        Also when a worker cannot import ``ltr-rank`` or the engine (checked
        before any work).
    DistributedTrainingError
        When a worker or the scheduler is lost, or the workers' network
        fails, during the shuffle or training; the stages finished before are
        kept in *stage_dir*.  A worker lost after the shuffle may instead
        leave the stage to the other workers: a ``RuntimeWarning`` says so.
    ImportError
        When dask/distributed (extra ``ltr-rank[dask]``) or xgboost is missing.

    Notes
    -----
    While a stage trains, each worker's statistical profiler
    (``distributed.worker.profile``, a stack sample every 10 ms) is paused: it
    could only sample the engine's C++ call, and its samples took about 5 % of a
    worker's CPU per round.  It restarts when the stage ends, also when the stage
    fails; a profiler the cluster's configuration turned off stays off.
    """
    import_distributed()
    args = dict(locals())
    # every computation of this training runs on *client*, also when it is not the default one
    with client.as_current(), passive_omp_wait():
        return _train(**args)


def _train(
    client: Any, data: Any, *, label: str, qid: str, features: Sequence[str] | None,
    weight: str | None, labels: Mapping[str, str] | None, position: str | None, engine: str,
    objective: Any, k: int, schedule: Any, params: Mapping[str, Any] | None,
    num_boost_round: int | None, eval_sets: Sequence[Any], eval_at: Sequence[int],
    early_stopping_rounds: int | None, stage_dir: str | os.PathLike[str] | None, resume: bool,
    convention: str | None, random_state: Any, npartitions: int | None, categorical: Any = None,
) -> RankingModel:
    """Do the work of :func:`train` (its client is the current one)."""
    # 1. what only a frame on a cluster needs: columns, the position refusal
    _refuse_position(position, objective)
    if features is not None and (isinstance(features, str) or not isinstance(features, Sequence)):
        raise TypeError(f"features must be a sequence of column names, got {short_repr(features)}")
    named: dict[str, Any] = {"label": label, "qid": qid}
    if weight is not None:
        named["weight"] = weight
    if features is not None:
        named["features"] = list(features)
    check_frame(data, named)
    label_cols = _label_columns(labels, list(data.columns))
    reserved = {label, qid, weight, *(label_cols or {}).values()}
    feats = ([c for c in data.columns if c not in reserved] if features is None
             else list(features))
    if not feats:
        raise ValueError("no feature columns: data has only the label, qid, weight and label "
                         "columns")
    for name in feats:
        if name in reserved:
            raise ValueError(f"features must not include the label, qid, weight or label "
                             f"columns ({name!r})")
    if npartitions is not None:
        npartitions = check_int(npartitions, "npartitions", minimum=1)
    collected = _collect_eval_sets(eval_sets, qid, label, feats, label_cols)
    coding, data, collected = code_training(categorical, data, feats, collected)
    placement = DaskPlacement(client, data, label=label, qid=qid, features=feats, weight=weight,
                              label_cols=label_cols, npartitions=npartitions)
    # 2. every training argument: the one builder, as ltr.engines.train (label columns live
    # on the workers; the objective gets them on every call, so they stand in as names here)
    rows = TrainRows(
        X=None, y=None, offsets=None, n_features=len(feats), label_max=None,
        labels=None if label_cols is None else {n: np.zeros(1) for n in label_cols},
        feature_names=feats, placement=placement,
    )
    spec = spec_from_rows(
        rows, engine=engine, objective=objective, k=k, schedule=schedule, params=params,
        num_boost_round=num_boost_round,
        eval_sets=collected,
        eval_at=eval_at, early_stopping_rounds=early_stopping_rounds, stage_dir=stage_dir,
        resume=resume, convention=convention, random_state=random_state, n_jobs=None,
        progress=False,
    )
    # 3. what the workers' engines cannot take
    if spec.objective is not None and not hasattr(spec.objective, "gradients"):
        raise TypeError("objective must provide gradients(scores, labels, offsets, iteration), "
                        f"got {short_repr(spec.objective)}")
    if label_cols is not None and spec.composite_weights is None:
        raise ValueError("labels= names composite label columns; it needs a composite "
                         "objective (a mapping of weights or a CompositeLambdaRankObjective)")
    if spec.composite_weights is not None:
        missing = [n for n in spec.composite_weights if n not in (label_cols or {})]
        if missing:
            raise ValueError(
                f"a composite objective over {sorted(spec.composite_weights)!r} needs "
                f"labels={{objective: column}} naming a label column of data for each objective "
                f"(no column for {missing[0]!r})"
            )
    if weight is not None and spec.engine == "xgboost" and spec.native:
        raise ValueError(
            "xgboost.dask takes no weights together with query ids, so weight= needs "
            "objective=LambdaRankObjective() with engine='xgboost' on Dask (ltr weights the "
            "gradients per row), or engine='lightgbm'"
        )
    if spec.engine not in _DISTRIBUTED:  # pragma: no cover - every registered engine has one
        raise ValueError(f"engine {spec.engine!r} has no Dask executor; use one of "
                         f"{sorted(_DISTRIBUTED)}")
    get_adapter(spec.engine)  # a missing engine fails here, naming the extra
    if coding is not None:
        spec = dataclasses.replace(spec, categorical=coding.columns)
    # 4. the rows to the workers, then the one stage loop; a cluster fault anywhere (the
    # shuffle, the engine data, a stage) ends in DistributedTrainingError
    before = set(_workers(client))
    try:
        spec = dataclasses.replace(spec, label_max=placement.place(spec))
        model = run_training(spec)
        model.categorical = coding
        return model
    except (KeyboardInterrupt, DistributedTrainingError):
        raise
    except Exception as exc:
        if not _lost(exc, before, client):
            raise
        raise DistributedTrainingError(
            f"training failed on the cluster: a worker or the scheduler was lost, or the "
            f"workers lost their connection: {type(exc).__name__}: {_first_line(exc)}"
        ) from exc

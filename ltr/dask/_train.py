"""Distributed training: :func:`train`, stage by stage, with checkpoints and resume.

The stage loop mirrors :func:`ltr.engines.train`: the schedule is split into
stages of equal ``k`` (:func:`ltr.objectives.schedules.stages_of`), each stage one
engine training continued from the previous stage's model (LightGBM
``init_model``, XGBoost ``xgb_model``), stage ``i`` seeded ``seed + i``; a
custom objective without early stopping or checkpoints follows the
schedule round by round in one engine call.  Checkpoints use the same
``stages.json`` and stage files as single-machine training
(:mod:`ltr.engines._checkpoint`), with a fingerprint over the settings and a
digest of the shuffled rows.
"""

from __future__ import annotations

import hashlib
import json
import os
import uuid
import warnings
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urlparse

import numpy as np
import pandas as pd

from ltr._compat import import_dask, import_distributed, import_xgboost, optional_import
from ltr._io import digest_arrays, to_jsonable
from ltr._validation import check_eval_at, check_int, check_seed, short_repr
from ltr.categorical import CategoricalCoding
from ltr.dask import _workers as W
from ltr.dask._categorical import encode_frame, fit_coding
from ltr.dask._frame import QueryLayout, check_frame, frame_digest, shuffle_by_query
from ltr.engines._checkpoint import load_completed, write_stage
from ltr.engines._model import RankingModel
from ltr.engines._objective import composite_gains, composite_weights, objective_fields
from ltr.engines._objective import resolve_objective as _resolve
from ltr.engines._spec import EvalSet, check_eval_sets, merge_engine_params
from ltr.objectives.schedules import stages_of

__all__ = ["LIGHTGBM_MAX_QUERY_ROWS", "MEMORY_FACTOR", "DistributedTrainingError", "train"]

#: LightGBM's native ``lambdarank`` refuses longer queries (a C++ check).
LIGHTGBM_MAX_QUERY_ROWS = 10_000

#: A worker needs about this many times a query's bytes to train on it (its persisted rows,
#: the engine's concatenated copy, the binned dataset, gradients).
MEMORY_FACTOR = 4

_QCODE = "__ltr_query_code__"
_PACKED = "__ltr_packed__"
#: composite grades are packed into the engine's float32 label: exact below 2**24
_FLOAT32_EXACT = 2**24


class DistributedTrainingError(RuntimeError):
    """Training failed on the cluster (a worker lost, a network error between workers)."""


# ----------------------------------------------------------------------------
# per-partition tasks
# ----------------------------------------------------------------------------


def _group_part(part: pd.DataFrame, qid: str) -> pd.Series:
    q = part[qid].to_numpy()
    if len(q) == 0:
        return pd.Series(np.zeros(0, dtype=np.int64), name="group")
    starts = np.concatenate(([0], np.flatnonzero(q[1:] != q[:-1]) + 1, [len(q)]))
    return pd.Series(np.diff(starts).astype(np.int64), name="group")


def _code_part(part: pd.DataFrame, qid: str, offsets: Mapping[int, int],
               partition_info: Any = None) -> pd.Series:
    q = part[qid].to_numpy()
    first = offsets[int(partition_info["number"])] if partition_info is not None else 0
    if len(q) == 0:
        return pd.Series(np.zeros(0, dtype=np.int64), index=part.index, name=_QCODE)
    new = np.concatenate(([0], (q[1:] != q[:-1]).astype(np.int64)))
    return pd.Series(first + np.cumsum(new), index=part.index, name=_QCODE)


# ----------------------------------------------------------------------------
# argument checks
# ----------------------------------------------------------------------------


@dataclass
class _ParamSpec:
    """What :func:`ltr.engines._spec.merge_engine_params` reads."""

    params: dict[str, Any]
    seed: int
    n_jobs: int | None = None


def _refuse_position(position: Any, objective: Any) -> None:
    unbiased = (bool(getattr(objective, "unbiased", False))
                or getattr(objective, "propensity", None) is not None)
    if position is not None or unbiased:
        raise ValueError(
            "position-bias (unbiased) training is not supported on Dask: its position "
            "statistics would have to be summed over all workers every round. Train "
            "single-machine with ltr.engines.train(..., position=...) and an unbiased "
            "LambdaRankObjective (or collect a sample that fits one machine)"
        )


def _composite(objective: Any, labels: Any, k: int, schedule: Any,
               columns: Sequence[str]) -> tuple[Any, Any, dict[str, str] | None]:
    """Resolve the objective; a composite one needs ``labels`` naming a column per objective."""
    weights = (dict(objective) if isinstance(objective, Mapping)
               else composite_weights(objective) if not isinstance(objective, str) else None)
    if weights is None:
        if labels is not None:
            raise ValueError("labels= names composite label columns; it needs a composite "
                             "objective (a mapping of weights or a CompositeLambdaRankObjective)")
        obj, sched = _resolve(objective, k=k, schedule=schedule, labels=None, n_rows=0)
        return obj, sched, None
    if not isinstance(labels, Mapping):
        raise ValueError(  # noqa: TRY004 - a missing argument, not a wrong type
            f"a composite objective over {sorted(weights)!r} needs labels={{objective: column}} "
            f"naming a label column of data for each objective, got labels={short_repr(labels)}"
        )
    cols = {str(n): labels[n] for n in weights if n in labels}
    missing = [n for n in weights if n not in labels]
    if missing:
        raise ValueError(f"labels has no column for objective {missing[0]!r} "
                         f"(labels names {sorted(labels)!r})")
    for name, col in cols.items():
        if not isinstance(col, str) or col not in columns:
            raise ValueError(f"labels[{name!r}]={col!r} is not a column of data")
    if isinstance(objective, Mapping):
        from ltr.objectives import CompositeLambdaRankObjective

        # the label columns stay on the workers; the objective reads them per call
        objective = CompositeLambdaRankObjective(
            dict(objective), {n: np.zeros(1) for n in weights}, k=k
        )
    n_rows = len(next(iter(objective.labels.values())))
    obj, sched = _resolve(objective, k=k, schedule=schedule, labels=None, n_rows=n_rows)
    return obj, sched, cols


def _collect_eval_sets(eval_sets: Any, qid: str, label: str, feats: list[str],
                       label_cols: Mapping[str, str] | None) -> list[Any]:
    """``(name, dask DataFrame)`` entries become ``(name, X, y, offsets[, labels])`` here."""
    dd = import_dask().dataframe
    if isinstance(eval_sets, (str, bytes, Mapping)) or not isinstance(eval_sets, Sequence):
        raise TypeError("eval_sets must be a sequence of (name, X, y, offsets) or "
                        f"(name, dask DataFrame) tuples, got {short_repr(eval_sets)}")
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


def _categorical(categorical: Any, data: Any, feats: list[str],
                 evals: list[Any]) -> tuple[CategoricalCoding | None, Any, list[Any]]:
    """``(coding, data, eval sets)``: the coding fitted (and applied) or taken as given."""
    if categorical is None:
        return None, data, evals
    if isinstance(categorical, CategoricalCoding):
        return categorical, data, evals
    coding = fit_coding(data, categorical, feats)
    data = encode_frame(data, coding, feats)
    out = [(item[0], coding.encode(item[1]), *item[2:])
           if isinstance(item, tuple) and len(item) >= 2 else item for item in evals]
    return coding, data, out


def _eval_convention(evals: list[EvalSet], convention: str | None, engine: str,
                     native: bool) -> str | None:
    """Return the recorder's convention, as :func:`ltr.engines._spec.make_spec` decides it."""
    from ltr.metrics import CONVENTIONS, ndcg

    if convention is not None and (not isinstance(convention, str)
                                   or convention not in CONVENTIONS):
        raise ValueError(
            f"convention must be one of {sorted(CONVENTIONS)} or None, got {convention!r}"
        )
    chosen: str | None = engine if convention is None else convention
    for ev in evals:
        try:
            ndcg(ev.y, np.zeros(len(ev.y)), offsets=ev.offsets, k=1, convention=chosen)
        except (TypeError, ValueError) as exc:
            if convention is None and not native and chosen is not None:
                chosen = None  # the engine's nDCG refuses these labels: ltr's default
                continue
            raise ValueError(f"convention={chosen!r} cannot evaluate the eval sets: {exc} "
                             f"(eval set {ev.name!r})") from exc
    return chosen


def _workers(client: Any) -> dict[str, Any]:
    try:
        info = client.scheduler_info(n_workers=-1)
    except TypeError:  # pragma: no cover - distributed before the n_workers argument
        info = client.scheduler_info()
    return dict(info.get("workers", {}))


def _check_memory(client: Any, layout: QueryLayout, frame: Any, columns: list[str]) -> None:
    """Refuse a query that one worker cannot hold (``MEMORY_FACTOR`` x its bytes)."""
    limits = [int(w.get("memory_limit") or 0) for w in _workers(client).values()]
    limits = [m for m in limits if m > 0]
    if not limits:
        return
    row_bytes = sum(int(getattr(frame._meta[c].dtype, "itemsize", 64) or 64) for c in columns)
    need = layout.max_query_rows * row_bytes * MEMORY_FACTOR
    if need > max(limits):
        raise ValueError(
            f"query {layout.max_query_id!r} has {layout.max_query_rows} rows "
            f"(~{layout.max_query_rows * row_bytes / 2**20:.1f} MiB of columns); training needs "
            f"about {MEMORY_FACTOR}x that on one worker, but the largest worker memory_limit is "
            f"{max(limits) / 2**20:.1f} MiB. A query is never split across workers: give the "
            "workers more memory (memory_limit) or split or subsample that query"
        )


def _check_grades(engine: str, native: bool, merged: Mapping[str, Any], layout: QueryLayout,
                  label: str) -> None:
    y_max = layout.column_max.get(label, 0.0)
    if native and engine == "lightgbm":
        if layout.max_query_rows > LIGHTGBM_MAX_QUERY_ROWS:
            raise ValueError(
                f"query {layout.max_query_id!r} has {layout.max_query_rows} rows, but LightGBM's "
                f"native lambdarank objective caps a query at {LIGHTGBM_MAX_QUERY_ROWS} rows; "
                "use objective=LambdaRankObjective() (no cap) or split the query"
            )
        if "label_gain" not in merged and y_max > 30:
            raise ValueError(
                f"{label!r} has grade {y_max!r} but LightGBM's default label_gain covers grades "
                "0..30; pass params={'label_gain': [...]} or a LambdaRankObjective"
            )
    if native and engine == "xgboost" and y_max >= 32 and merged.get("ndcg_exp_gain", True):
        raise ValueError(
            f"{label!r} has grade {y_max!r} but XGBoost's exponential nDCG gain needs grades "
            "< 32; pass params={'ndcg_exp_gain': False} or a LambdaRankObjective"
        )


def _packing(cols: Mapping[str, str], layout: QueryLayout) -> W.PackedLabels:
    """How composite grade columns travel in one float32 label (whole grades only)."""
    for name, col in cols.items():
        if not layout.column_integer.get(col, False):
            raise ValueError(
                f"labels[{name!r}] (column {col!r}) holds fractional grades; on Dask a composite "
                "objective's grades travel packed in the engine's label and must be whole "
                "numbers (round them, or train single-machine)"
            )
    base = int(max(layout.column_max[c] for c in cols.values())) + 1
    if base ** len(cols) > _FLOAT32_EXACT:
        raise ValueError(
            f"{len(cols)} composite label columns with grades up to {base - 1} do not fit one "
            f"float32 label ({base}**{len(cols)} > 2**24); use fewer grades or objectives on Dask"
        )
    return W.PackedLabels(tuple(cols), base)


def _scheduler_host(client: Any) -> str:
    host = urlparse(str(client.scheduler.address)).hostname
    return host if host else "127.0.0.1"


def _lost(exc: BaseException) -> bool:
    """Whether *exc* comes from the cluster or an engine's network layer, not from ltr."""
    module = type(exc).__module__ or ""
    return (isinstance(exc, (OSError, TimeoutError))
            or module.split(".")[0] in ("distributed", "lightgbm", "xgboost", "tornado"))


# ----------------------------------------------------------------------------
# one engine call
# ----------------------------------------------------------------------------


@dataclass
class _Job:
    """Everything an engine call of :func:`train` needs."""

    client: Any
    engine: str
    frame: Any
    layout: QueryLayout
    label: str
    qid: str
    feats: list[str]
    weight: str | None
    params: dict[str, Any]
    objective: Any
    packed: W.PackedLabels | None
    spec: W.EvalSpec | None
    seed_key: str
    dtrain: Any = None
    categorical: tuple[str, ...] = ()  # feature columns holding category codes

    def run(self, stage_index: int, k: int, first: int, n_rounds: int,
            init_booster: Any, trees: int) -> tuple[Any, Any]:
        """Train one stage; return ``(booster, recorder or None)``.

        *first* is the stage's first round in the schedule, *trees* the rounds
        of *init_booster* (fewer than *first* after early stopping).
        """
        token = uuid.uuid4().hex
        p = dict(self.params)
        p[self.seed_key] = int(p.get(self.seed_key, 0)) + stage_index
        try:
            if self.engine == "lightgbm":
                booster = self._lightgbm(p, k, n_rounds, init_booster, token, first, trees)
            else:
                booster = self._xgboost(p, k, n_rounds, init_booster, token, first, trees)
        except (KeyboardInterrupt, ValueError, TypeError):
            raise
        except Exception as exc:
            if not _lost(exc):
                raise
            raise DistributedTrainingError(
                f"training stage {stage_index} (k={k}) failed on the cluster, a worker was lost "
                f"or the workers lost their connection: {type(exc).__name__}: {exc}"
            ) from exc
        finally:
            try:
                recorders = self.client.run(W.pop_state, token)
            except Exception:  # noqa: BLE001 - a lost cluster has nothing left to clean
                recorders = {}
        recorder = next((r for r in recorders.values() if r is not None), None)
        return booster, recorder

    def _lightgbm(self, p: dict[str, Any], k: int, n_rounds: int, init: Any,
                  token: str, first: int, trees: int) -> Any:
        lgb_dask = optional_import("lightgbm.dask", purpose="distributed LightGBM training")
        if self.objective is None:
            p["objective"] = "lambdarank"
            p["lambdarank_truncation_level"] = k
        else:
            p["objective"] = W.lightgbm_objective(self.objective, token, self.packed)
        callbacks = W.lightgbm_callbacks(token, objective=self.objective is not None,
                                         spec=self.spec, stage_k=k, first=first, trees=trees)
        frame = self.frame
        group = frame.map_partitions(_group_part, self.qid,
                                     meta=pd.Series(dtype=np.int64, name="group"))
        model = lgb_dask.DaskLGBMRanker(client=self.client, n_estimators=n_rounds, **p)
        with warnings.catch_warnings():
            # lightgbm.dask sets the threads per worker itself
            warnings.filterwarnings("ignore", message="Parameter n_jobs will be ignored")
            cat: Any = list(self.categorical) or "auto"
            model.fit(frame[self.feats], frame[self.label], group=group,
                      categorical_feature=cat,
                      sample_weight=None if self.weight is None else frame[self.weight],
                      callbacks=callbacks or None, init_model=init)
        return model.booster_

    def _xgboost(self, p: dict[str, Any], k: int, n_rounds: int, init: Any, token: str,
                 first: int, trees: int) -> Any:
        import inspect

        dxgb = optional_import("xgboost.dask", purpose="distributed XGBoost training")
        if self.objective is None:
            p["objective"] = "rank:ndcg"
            p.setdefault("lambdarank_pair_method", "topk")
            p["lambdarank_num_pair_per_sample"] = k
        else:
            p.setdefault("base_score", 0.0)
        if self.dtrain is None:
            self.dtrain = self._dmatrix(dxgb)
        obj = None if self.objective is None else W.xgboost_objective(self.objective, token,
                                                                     self.packed)
        callbacks = W.xgboost_callbacks(token, objective=self.objective is not None,
                                        spec=self.spec, stage_k=k, first=first,
                                        trees=trees)
        kwargs: dict[str, Any] = {"num_boost_round": n_rounds, "obj": obj, "xgb_model": init,
                                  "callbacks": callbacks or None, "verbose_eval": False}
        host = _scheduler_host(self.client)
        if "coll_cfg" in inspect.signature(dxgb.train).parameters:
            from xgboost.collective import Config

            out = dxgb.train(self.client, p, self.dtrain,
                             coll_cfg=Config(tracker_host_ip=host), **kwargs)
        else:  # pragma: no cover - xgboost without coll_cfg: the documented dask setting
            with import_dask().config.set({"xgboost.scheduler_address": host}):
                out = dxgb.train(self.client, p, self.dtrain, **kwargs)
        return out["booster"]

    def _dmatrix(self, dxgb: Any) -> Any:
        # One increasing query code per row across partitions: XGBoost needs qid sorted in the
        # concatenation of a worker's partitions, and the codes never mix two queries.
        starts = np.concatenate(([0], np.cumsum(self.layout.queries)[:-1]))
        offsets = {i: int(s) for i, s in enumerate(starts)}
        frame = self.frame
        codes = frame.map_partitions(_code_part, self.qid, offsets,
                                     meta=pd.Series(dtype=np.int64, name=_QCODE))
        # xgboost.dask takes no weights together with qid: row weights for our objective
        # travel in a per-row float field no objective of ours reads otherwise (the AFT
        # lower bound), and the objective wrapper multiplies them in
        extra = {} if self.weight is None else {"label_lower_bound": frame[self.weight]}
        if self.categorical:
            from ltr.engines.xgboost import categorical_dmatrix_args

            extra.update(categorical_dmatrix_args(
                len(self.feats), tuple(self.feats.index(c) for c in self.categorical)))
        return dxgb.DaskQuantileDMatrix(self.client, frame[self.feats], label=frame[self.label],
                                        qid=codes, feature_names=self.feats, **extra)


# ----------------------------------------------------------------------------
# train
# ----------------------------------------------------------------------------


def _fingerprint(settings: dict[str, Any], data_digest: str, evals: list[EvalSet]) -> str:
    h = hashlib.sha256(json.dumps(to_jsonable(settings), sort_keys=True).encode())
    h.update(data_digest.encode())
    for ev in evals:
        h.update(digest_arrays(ev.X, ev.y, ev.offsets).encode())
    return h.hexdigest()


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
        The same class as single-machine training; its booster is local.

    Raises
    ------
    ValueError, TypeError
        For invalid arguments or data (missing columns, no rows, a qid dtype
        that differs between partitions, NaN or negative labels, a query over
        10,000 rows with LightGBM's native objective, a query too large for
        one worker's memory), before training starts.
    DistributedTrainingError
        When a worker is lost (or the workers' network fails) during
        training; the stages finished before are kept in *stage_dir*.
    ImportError
        When dask/distributed (extra ``ltr-rank[dask]``) or xgboost is missing.
    """
    import_distributed()
    args = dict(locals())
    # every computation of this training runs on *client*, also when it is not the default one
    with client.as_current():
        return _train(**args)


def _train(
    client: Any, data: Any, *, label: str, qid: str, features: Sequence[str] | None,
    weight: str | None, labels: Mapping[str, str] | None, position: str | None, engine: str,
    objective: Any, k: int, schedule: Any, params: Mapping[str, Any] | None,
    num_boost_round: int | None, eval_sets: Sequence[Any], eval_at: Sequence[int],
    early_stopping_rounds: int | None, stage_dir: str | os.PathLike[str] | None, resume: bool,
    convention: str | None, random_state: Any, npartitions: int | None, categorical: Any,
) -> RankingModel:
    """Do the work of :func:`train` (its client is the current one)."""
    if engine not in ("lightgbm", "xgboost"):
        raise ValueError(f"engine must be 'lightgbm' or 'xgboost', got {engine!r}")
    _refuse_position(position, objective)
    if params is not None and not isinstance(params, Mapping):
        raise TypeError(f"params must be a mapping, got {short_repr(params)}")
    seed = check_seed(random_state, "random_state")
    seed = 0 if seed is None else int(seed)
    if features is not None and (isinstance(features, str) or not isinstance(features, Sequence)):
        raise TypeError(f"features must be a sequence of column names, got {short_repr(features)}")
    named: dict[str, Any] = {"label": label, "qid": qid}
    if weight is not None:
        named["weight"] = weight
    if features is not None:
        named["features"] = list(features)
    check_frame(data, named)
    k = check_int(k, "k", minimum=1)
    obj, sched, label_cols = _composite(objective, labels, k, schedule, list(data.columns))
    if obj is not None and not hasattr(obj, "gradients"):
        raise TypeError("objective must provide gradients(scores, labels, offsets, iteration), "
                        f"got {short_repr(obj)}")
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
    if num_boost_round is None:
        num_boost_round = sched.n_rounds if sched.n_rounds is not None else 100
    num_boost_round = check_int(num_boost_round, "num_boost_round", minimum=1)
    if sched.n_rounds is not None and num_boost_round < sched.n_rounds:
        raise ValueError(f"num_boost_round={num_boost_round} would cut the schedule, which "
                         f"defines {sched.n_rounds} rounds; pass num_boost_round>="
                         f"{sched.n_rounds} or None")
    plan = stages_of(sched, num_boost_round)
    ks = check_eval_at(eval_at)
    collected = _collect_eval_sets(eval_sets, qid, label, feats, label_cols)
    coding, data, collected = _categorical(categorical, data, feats, collected)
    evals = check_eval_sets(collected, len(feats), feats)
    if early_stopping_rounds is not None:
        early_stopping_rounds = check_int(early_stopping_rounds, "early_stopping_rounds",
                                          minimum=1)
        if not evals:
            raise ValueError("early_stopping_rounds needs at least one eval set; pass "
                             "eval_sets=[(name, X, y, offsets)] or [(name, dask DataFrame)]")
    conv = _eval_convention(evals, convention, engine, obj is None)
    comp_w = composite_weights(obj) if obj is not None else None
    spec = W.EvalSpec(evals, ks, early_stopping_rounds, conv, comp_w,
                      composite_gains(obj) if obj is not None else None) if evals else None
    if stage_dir is not None:
        stage_dir = Path(stage_dir)
    if resume and stage_dir is None:
        raise ValueError("resume=True needs stage_dir (the folder holding the completed stages)")

    if engine == "lightgbm":
        from ltr.engines import lightgbm as adapter_module
    else:
        import_xgboost()
        from ltr.engines import xgboost as adapter_module  # type: ignore[no-redef]
    adapter: Any = (adapter_module.LightGBMAdapter() if engine == "lightgbm"
                    else adapter_module.XGBoostAdapter())  # type: ignore[attr-defined]
    merged = merge_engine_params(
        _ParamSpec(dict(params or {}), seed), defaults=adapter_module.DEFAULT_PARAMS,  # type: ignore[arg-type]
        reserved=adapter.reserved, aliases=adapter_module._ALIASES,
        threads_key="num_threads" if engine == "lightgbm" else "nthread",
    )
    if engine == "lightgbm":
        merged["metric"] = "None"  # metrics are ours (its nDCG also caps queries at 10,000)
        seed_key = next((a for a in adapter_module._ALIASES["seed"] if a in merged), "seed")
    else:
        merged["disable_default_eval_metric"] = 1
        seed_key = "random_state" if "random_state" in merged and "seed" not in merged else "seed"

    n_workers = len(_workers(client))
    n_parts = (max(data.npartitions, n_workers) if npartitions is None
               else check_int(npartitions, "npartitions", minimum=1))
    extra = [c for c in ([weight] if weight else []) + list((label_cols or {}).values())]
    used = list(dict.fromkeys([qid, label, *feats, *extra]))
    frame, layout = shuffle_by_query(data[used], qid, label=label, check=extra,
                                     npartitions=n_parts, client=client)
    _check_grades(engine, obj is None, merged, layout, label)
    _check_memory(client, layout, frame, used)
    packed = None
    engine_label = label
    if label_cols:
        packed = _packing(label_cols, layout)
        cols = tuple(label_cols[n] for n in packed.names)
        frame = frame.assign(**{_PACKED: frame.map_partitions(
            packed.pack, cols, meta=pd.Series(dtype=np.float64, name=_PACKED))})
        engine_label = _PACKED
    if weight is not None and engine == "xgboost" and obj is None:
        raise ValueError(
            "xgboost.dask takes no weights together with query ids, so weight= needs "
            "objective=LambdaRankObjective() with engine='xgboost' on Dask (ltr weights the "
            "gradients per row), or engine='lightgbm'"
        )
    if obj is not None:
        obj = _fresh(obj)
    job = _Job(client, engine, frame, layout, engine_label, qid, feats, weight, merged, obj,
               packed, spec, seed_key, categorical=() if coding is None else coding.names)

    run_id = ""
    completed: list[dict[str, Any]] = []
    if stage_dir is not None:
        settings = {"engine": engine, "params": merged, "plan": plan,
                    "objective": None if obj is None else objective_fields(obj),
                    "eval_at": ks, "early_stopping_rounds": early_stopping_rounds,
                    "convention": conv, "eval_sets": [ev.name for ev in evals],
                    "features": feats, "weight": weight, "labels": label_cols,
                    "partitions": int(layout.rows.size), "distributed": True}
        if coding is not None:
            settings["categorical"] = coding.to_dict()
        run_id = _fingerprint(settings, frame_digest(frame), evals)
        stage_dir.mkdir(parents=True, exist_ok=True)
        completed = load_completed(stage_dir, bool(resume), run_id)
    evals_result: dict[str, dict[str, list[float]]] = {ev.name: {} for ev in evals}
    stages: list[dict[str, Any]] = []
    booster = None
    any_stop = False
    one_call = (obj is not None and early_stopping_rounds is None and stage_dir is None
                and len(plan) > 1)
    runs = [(0, plan[0][0], 0, num_boost_round)] if one_call else [
        (i, kk, first, n) for i, (kk, first, n) in enumerate(plan)]
    for index, kk, first, n_rounds in runs:
        if index < len(completed):
            rec = completed[index]
            if (rec["k"], rec["first_round"], rec["n_rounds"]) != (kk, first, n_rounds):
                raise ValueError(f"stage {index} in stages.json does not match the schedule")
            if index == len(completed) - 1:
                path = stage_dir / rec["file"]  # type: ignore[operator]
                booster = adapter.from_string(path.read_text(encoding="utf-8"), source=str(path))
            stage_evals = rec.get("evals", {})
        else:
            before = 0 if booster is None else adapter.num_rounds(booster)
            trained, recorder = job.run(index, kk, first, n_rounds, booster, before)
            kept = n_rounds if recorder is None else recorder.kept_rounds()
            booster = adapter.truncate(trained, before + kept)
            stage_evals = {} if recorder is None else recorder.kept_history()
            rec = {"k": kk, "first_round": first, "n_rounds": n_rounds,
                   "rounds_run": n_rounds if recorder is None else recorder.rounds,
                   "best_iteration": kept,
                   "early_stopped": recorder is not None and recorder.rounds < n_rounds,
                   "n_trees_total": before + kept, "file": None}
            if stage_dir is not None:
                rec["file"] = f"stage_{index:02d}_k{kk}{adapter.suffix}"
                rec["evals"] = stage_evals
                completed.append(rec)
                write_stage(stage_dir, engine, run_id, completed, rec["file"],
                            adapter.to_string(booster))
        if one_call:  # one engine call: its history sliced into the schedule's stages
            for i, (sk, sfirst, sn) in enumerate(plan):
                part = {name: {key: v[sfirst:sfirst + sn] for key, v in m.items()}
                        for name, m in stage_evals.items()}
                _add_stage(stages, evals_result, sk, sfirst, sn, sn, sn, False, None, part)
            continue
        any_stop = any_stop or bool(rec.get("early_stopped"))
        path_s = None if rec.get("file") is None or stage_dir is None else str(
            stage_dir / rec["file"])
        _add_stage(stages, evals_result, kk, first, n_rounds, int(rec["best_iteration"]),
                   int(rec["rounds_run"]), bool(rec["early_stopped"]), path_s, stage_evals)
    if booster is None:  # pragma: no cover - every plan has a stage
        raise RuntimeError("no stage was trained or loaded")
    total = adapter.num_rounds(booster)
    public = to_jsonable(merged)
    if obj is not None:
        public["objective"] = objective_fields(obj)
    elif engine == "lightgbm":
        public.update(objective="lambdarank", lambdarank_truncation_level=plan[-1][0])
    else:
        public.update(objective="rank:ndcg", lambdarank_num_pair_per_sample=plan[-1][0])
    public["distributed"] = {"workers": n_workers, "partitions": int(layout.rows.size),
                             "rows": layout.n_rows, "queries": layout.n_queries}
    return RankingModel(
        engine=engine, booster=booster, evals_result=evals_result,
        best_iteration=total if (early_stopping_rounds and any_stop) else None,
        stages=stages, params=public, convention=conv, categorical=coding,
    )


def _add_stage(stages: list[dict[str, Any]], evals_result: dict[str, dict[str, list[float]]],
               k: int, first: int, n_rounds: int, best: int, rounds_run: int, stopped: bool,
               path: str | None, stage_evals: Mapping[str, Mapping[str, list[float]]]) -> None:
    for name, metrics in stage_evals.items():
        for key, values in metrics.items():
            evals_result.setdefault(name, {}).setdefault(key, []).extend(values)
    stages.append({
        "k": k, "first_round": first, "n_rounds": n_rounds, "best_iteration": best,
        "rounds_run": rounds_run, "early_stopped": stopped, "path": path,
        "metrics": {name: {key: v[-1] for key, v in m.items() if v}
                    for name, m in stage_evals.items()},
    })


def _fresh(obj: Any) -> Any:
    """Copy *obj* at round 0 (the workers get copies; the caller's is untouched)."""
    import copy

    out = copy.copy(obj)
    out.reset(0)
    return out

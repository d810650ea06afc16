"""Distributed training, prediction and evaluation on a Dask cluster.

When the rows do not fit one machine, :func:`train` trains a LambdaMART
model on a ``dask.dataframe.DataFrame`` through ``lightgbm.dask`` or
``xgboost.dask`` and returns the same :class:`ltr.engines.RankingModel` as
single-machine training (save, load and predict work locally);
:func:`predict` scores a Dask DataFrame partition by partition and
:func:`evaluate` computes nDCG per query where the rows live, then one
reduction.

Queries are never split: :func:`shuffle_by_query` moves rows so that each
query sits whole in one partition, sorted by query within the partition, and
checks it.  Each worker then trains on whole local queries: LightGBM gets the
per-partition group sizes, XGBoost one query code per row.  A
:class:`ltr.objectives.LambdaRankObjective` (schedules included) runs on every
worker over its local queries; the truncation level follows the *engine's*
round number (passed by a callback on each worker), never a per-worker call
count, so all workers use the same ``k`` in the same round.

Exactness
---------
* XGBoost sums gradient histograms across workers (allreduce) and merges its
  quantile sketches, so with our objective the model equals single-machine
  ``ltr.engines.train`` on the same rows (to float rounding, about 1e-7 after
  50 rounds) whenever both see the same bin edges: always when every feature
  has at most ``max_bin`` distinct values.
* LightGBM's data-parallel learner builds each feature's bins from one
  worker's local sample (``pre_partition=True``: the bin mappers are found per
  worker and shared), so the bin edges, and therefore the splits, differ
  slightly from single-machine training; the quality is the same within
  noise (nDCG@10 within 0.005 on 2,000 test queries in the tests).

Networking
----------
XGBoost's tracker is bound to the scheduler's host (``127.0.0.1`` on a local
cluster), passed explicitly.  LightGBM's distributed training opens one
listening socket per worker on a fresh free port per fit (``lightgbm.dask``
opens the ports on the workers and keeps them until training starts, see
LightGBM issues #3753 and #4960) and builds ``machines`` from the workers'
addresses; its sockets listen on **every interface** and its traffic is
neither authenticated nor encrypted, so run it only on a private network.

Limits
------
LightGBM's native ``lambdarank`` caps a query at 10,000 rows (C++ check);
:func:`train` refuses such a query with an error naming its size before
training.  :class:`~ltr.objectives.LambdaRankObjective` has no cap.  A
composite objective (label columns held in row order) cannot follow rows to
the workers and is refused; eval sets and early stopping are not supported
yet (evaluate afterwards with :func:`evaluate`).
"""

from __future__ import annotations

import uuid
import warnings
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlparse

import numpy as np
import pandas as pd

from ltr._compat import import_dask, import_distributed, import_xgboost, optional_import
from ltr._io import to_jsonable
from ltr._validation import check_eval_at, check_int, check_seed, short_repr
from ltr.engines._model import RankingModel
from ltr.engines._objective import composite_weights, objective_fields, resolve_objective
from ltr.engines._spec import merge_engine_params

__all__ = [
    "LIGHTGBM_MAX_QUERY_ROWS",
    "QueryLayout",
    "evaluate",
    "predict",
    "shuffle_by_query",
    "train",
]

#: LightGBM's native ``lambdarank`` refuses longer queries (a C++ check).
LIGHTGBM_MAX_QUERY_ROWS = 10_000

_QCODE = "__ltr_query_code__"

# ----------------------------------------------------------------------------
# the engine's round number on each worker
# ----------------------------------------------------------------------------

#: token of one training -> the round the engine is about to run, per worker process.
#: The callback and the objective of one training may reach a worker as separate copies
#: (each task argument is serialised on its own); they meet here through the token.
_ROUNDS: dict[str, int] = {}


def _round_of(token: str) -> int:
    try:
        return _ROUNDS[token]
    except KeyError:
        raise RuntimeError(
            "the distributed objective was called before its round callback ran on this "
            "worker; pass the callback of ltr.dask.train with the objective"
        ) from None


class _LightGBMRound:
    """LightGBM callback (before each round): record the engine's round number."""

    order = 0
    before_iteration = True

    def __init__(self, token: str) -> None:
        self.token = token

    def __call__(self, env: Any) -> None:
        _ROUNDS[self.token] = int(env.iteration)


class _LightGBMObjective:
    """``lightgbm.dask`` custom objective ``(y_true, y_pred, weight, group)`` on local queries."""

    def __init__(self, objective: Any, token: str) -> None:
        self.objective = objective
        self.token = token

    def __call__(
        self, y_true: np.ndarray, y_pred: np.ndarray, weight: Any, group: Any
    ) -> tuple[np.ndarray, np.ndarray]:
        sizes = np.asarray(group, dtype=np.int64)
        offsets = np.zeros(sizes.size + 1, dtype=np.int64)
        np.cumsum(sizes, out=offsets[1:])
        grad, hess = self.objective.gradients(
            y_pred, y_true, offsets, _round_of(self.token),
            sample_weight=None if weight is None else np.asarray(weight, dtype=np.float64),
        )
        return np.asarray(grad, dtype=np.float64), np.asarray(hess, dtype=np.float64)


class _XGBoostObjective:
    """``xgboost.dask.train(obj=...)``: gradients over the worker's local ``group_ptr``."""

    def __init__(self, objective: Any, token: str) -> None:
        self.objective = objective
        self.token = token

    def __call__(self, preds: np.ndarray, dtrain: Any) -> tuple[np.ndarray, np.ndarray]:
        offsets = np.asarray(dtrain.get_uint_info("group_ptr"), dtype=np.int64)
        grad, hess = self.objective.gradients(
            np.asarray(preds, dtype=np.float64).reshape(-1), dtrain.get_label(), offsets,
            _round_of(self.token),
        )
        return np.asarray(grad, dtype=np.float64), np.asarray(hess, dtype=np.float64)


def _xgboost_round(token: str) -> Any:
    """Build the ``xgboost.callback.TrainingCallback`` that records the round before each one."""
    base: Any = import_xgboost().callback.TrainingCallback

    class _XGBoostRound(base):  # type: ignore[misc, valid-type]
        def before_iteration(self, model: Any, epoch: int, evals_log: Any) -> bool:
            _ROUNDS[token] = int(epoch)
            return False

        def __reduce__(self) -> tuple[Any, tuple[str]]:
            return _xgboost_round, (token,)

    return _XGBoostRound()


# ----------------------------------------------------------------------------
# input checks and the shuffle that keeps queries whole
# ----------------------------------------------------------------------------


@dataclass(frozen=True)
class QueryLayout:
    """Where the queries of a shuffled frame sit.

    Attributes
    ----------
    n_rows, n_queries : int
        Totals over the partitions.
    rows, queries : ndarray of int64
        Per partition (empty partitions already dropped).
    max_query_rows : int
        The longest query.
    max_query_id : Any
        Its query id.
    """

    n_rows: int
    n_queries: int
    rows: np.ndarray
    queries: np.ndarray
    max_query_rows: int
    max_query_id: Any


def _check_frame(data: Any, columns: Mapping[str, Any]) -> list[str]:
    """Type of *data* and presence of the named columns; returns the column names."""
    dd = import_dask().dataframe
    if not isinstance(data, dd.DataFrame):
        raise TypeError(f"data must be a dask.dataframe.DataFrame, got {short_repr(data)}")
    have = list(data.columns)
    out: list[str] = []
    for arg, value in columns.items():
        names = [value] if isinstance(value, str) else list(value)
        for name in names:
            if not isinstance(name, str):
                raise TypeError(f"{arg} must name columns with str, got {short_repr(name)}")
            if name not in have:
                raise ValueError(
                    f"{arg}={name!r} is not a column of data (columns: {short_repr(have)})"
                )
            out.append(name)
    return out


def _stats_part(part: pd.DataFrame, qid: str, label: str | None) -> pd.DataFrame:
    q = part[qid].to_numpy()
    n = len(q)
    bad_label = -1
    if label is not None and n:
        y = pd.to_numeric(part[label], errors="coerce").to_numpy(dtype=np.float64)
        bad = ~np.isfinite(y) | (y < 0)
        if bad.any():
            bad_label = int(np.flatnonzero(bad)[0])
    if n:
        change = np.flatnonzero(q[1:] != q[:-1]) + 1
        starts = np.concatenate(([0], change))
        sizes = np.diff(np.concatenate((starts, [n])))
        longest = int(np.argmax(sizes))
        uniq = pd.unique(q)
        return pd.DataFrame({
            "rows": [n], "queries": [len(starts)], "distinct": [len(uniq)],
            "max_rows": [int(sizes[longest])], "max_qid": [q[starts[longest]]],
            "qid_null": [bool(pd.isna(q).any())], "bad_label": [bad_label],
            "bad_label_value": [float(part[label].iloc[bad_label]) if bad_label >= 0
                                and label is not None else 0.0],
        })
    return pd.DataFrame({
        "rows": [0], "queries": [0], "distinct": [0], "max_rows": [0], "max_qid": [None],
        "qid_null": [False], "bad_label": [-1], "bad_label_value": [0.0],
    })


def _scalar(value: Any) -> Any:
    """Return the Python value a numpy scalar holds (for messages)."""
    return value.item() if isinstance(value, np.generic) else value


def _sort_part(part: pd.DataFrame, qid: str) -> pd.DataFrame:
    return part.sort_values(qid, kind="stable")


def _unique_part(part: pd.DataFrame, qid: str) -> pd.DataFrame:
    return pd.DataFrame({qid: pd.unique(part[qid].to_numpy())})


def shuffle_by_query(
    data: Any,
    qid: str,
    *,
    label: str | None = None,
    npartitions: int | None = None,
    client: Any = None,
) -> tuple[Any, QueryLayout]:
    """Move rows so each query sits whole in one partition, sorted by ``qid`` there.

    Rows are shuffled on *qid* (hash partitioning), each partition is sorted
    by *qid* (stable), the result is persisted, empty partitions are dropped
    and the layout is checked: no query in two partitions, no missing query
    id and, with *label*, every label finite and ``>= 0``.

    Parameters
    ----------
    data : dask.dataframe.DataFrame
        Rows in any order and partitioning.
    qid : str
        Query id column (any hashable, sortable dtype).
    label : str, optional
        Label column to check.
    npartitions : int, optional
        Partitions after the shuffle; default ``data.npartitions``.
    client : distributed.Client, optional
        Client to persist with; default the current one, if any.

    Returns
    -------
    frame : dask.dataframe.DataFrame
        Persisted, each query whole in one partition, no empty partition.
    layout : QueryLayout

    Raises
    ------
    ValueError
        No rows, a missing query id, a non-finite or negative label (naming
        the value), or a query found in two partitions.
    """
    columns: dict[str, Any] = {"qid": qid}
    if label is not None:
        columns["label"] = label
    _check_frame(data, columns)
    n_parts = data.npartitions if npartitions is None else check_int(
        npartitions, "npartitions", minimum=1
    )
    frame = data.shuffle(on=qid, npartitions=n_parts)
    frame = frame.map_partitions(_sort_part, qid, meta=frame._meta)
    frame = client.persist(frame) if client is not None else frame.persist()
    meta = _stats_part(data._meta, qid, label)
    stats = frame.map_partitions(_stats_part, qid, label, meta=meta).compute()
    stats = stats.reset_index(drop=True)
    if int(stats["rows"].sum()) == 0:
        raise ValueError("data has no rows (every partition is empty)")
    if bool(stats["qid_null"].any()):
        raise ValueError(f"qid column {qid!r} has missing values; every row needs a query id")
    if label is not None and bool((stats["bad_label"] >= 0).any()):
        i = int(np.flatnonzero(stats["bad_label"].to_numpy() >= 0)[0])
        value = float(stats["bad_label_value"].iloc[i])
        raise ValueError(
            f"label column {label!r} must be finite and >= 0, got {value!r}; drop or fix "
            "such rows before training"
        )
    if bool((stats["distinct"] != stats["queries"]).any()):  # pragma: no cover - sort guarantees
        raise ValueError("a query is not contiguous within its partition after sorting")
    keep = np.flatnonzero(stats["rows"].to_numpy() > 0)
    if keep.size < frame.npartitions:
        frame = frame.partitions[[int(i) for i in keep]]
        stats = stats.iloc[keep].reset_index(drop=True)
    uniq = frame.map_partitions(_unique_part, qid, meta=_unique_part(data._meta, qid)).compute()
    dup = uniq[qid].duplicated()
    if bool(dup.any()):
        raise ValueError(
            f"query {_scalar(uniq[qid][dup].iloc[0])!r} is split across partitions after the "
            f"shuffle on {qid!r}"
        )
    longest = int(np.argmax(stats["max_rows"].to_numpy()))
    layout = QueryLayout(
        n_rows=int(stats["rows"].sum()),
        n_queries=int(stats["queries"].sum()),
        rows=stats["rows"].to_numpy(dtype=np.int64),
        queries=stats["queries"].to_numpy(dtype=np.int64),
        max_query_rows=int(stats["max_rows"].iloc[longest]),
        max_query_id=_scalar(stats["max_qid"].iloc[longest]),
    )
    return frame, layout


# ----------------------------------------------------------------------------
# training
# ----------------------------------------------------------------------------


@dataclass
class _ParamSpec:
    """What :func:`ltr.engines._spec.merge_engine_params` reads."""

    params: dict[str, Any]
    seed: int
    n_jobs: int | None = None


def _merge(params: Mapping[str, Any] | None, seed: int, adapter_module: Any,
           reserved: Mapping[str, str], threads_key: str) -> dict[str, Any]:
    spec: Any = _ParamSpec(dict(params or {}), seed)
    return merge_engine_params(
        spec, defaults=adapter_module.DEFAULT_PARAMS, reserved=reserved,
        aliases=adapter_module._ALIASES, threads_key=threads_key,
    )


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


def _scheduler_host(client: Any) -> str:
    host = urlparse(str(client.scheduler.address)).hostname
    return host if host else "127.0.0.1"


def train(
    client: Any,
    data: Any,
    *,
    label: str,
    qid: str,
    features: Sequence[str] | None = None,
    engine: str = "lightgbm",
    objective: Any = "native",
    k: int = 20,
    schedule: Any = None,
    params: Mapping[str, Any] | None = None,
    num_boost_round: int | None = None,
    eval_sets: Sequence[Any] = (),
    eval_at: Sequence[int] = (1, 3, 5, 10, 20),
    early_stopping_rounds: int | None = None,
    convention: str | None = None,
    random_state: int | np.random.RandomState | np.random.Generator | None = None,
    npartitions: int | None = None,
) -> RankingModel:
    """Train a LambdaMART ranking model on a Dask cluster.

    Parameters
    ----------
    client : distributed.Client
        The cluster to train on.
    data : dask.dataframe.DataFrame
        One row per document; any partitioning (queries may be split: rows
        are moved so each query is whole in one partition, see
        :func:`shuffle_by_query`).
    label, qid : str
        Columns of the graded relevance (finite, ``>= 0``) and the query id.
    features : sequence of str, optional
        Feature columns; default every other column.
    engine : {"lightgbm", "xgboost"}, default="lightgbm"
        ``lightgbm.dask.DaskLGBMRanker`` or ``xgboost.dask.train``.
    objective : "native" or LambdaRankObjective, default="native"
        As in :func:`ltr.engines.train`; our objective runs on each worker
        over its local queries.  Composite objectives are not supported.
    k : int, default=20
        Truncation level without a schedule.
    schedule : Schedule, list of (k, rounds), int or callable, optional
        Truncation schedule; with ``"native"`` only a constant one (a changing
        ``k`` needs a :class:`~ltr.objectives.LambdaRankObjective`).
    params : mapping, optional
        Engine parameters over the defaults of :func:`ltr.engines.train`.
    num_boost_round : int, optional
        Rounds; default the schedule's length, else 100.
    eval_sets : sequence, default=()
        Not supported yet: must be empty (use :func:`evaluate` afterwards).
    eval_at : sequence of int, default=(1, 3, 5, 10, 20)
        Kept for symmetry with :func:`ltr.engines.train` (checked only).
    early_stopping_rounds : int, optional
        Not supported yet: must be ``None``.
    convention : str, optional
        Stored as ``model.convention`` (default the engine's own).
    random_state : int, RandomState, Generator or None, default=None
        Engine seed (``None`` -> 0).
    npartitions : int, optional
        Partitions after the shuffle; default ``max(data.npartitions, workers)``.

    Returns
    -------
    RankingModel
        The same class as single-machine training; its booster is local.

    Raises
    ------
    ValueError, TypeError
        For invalid arguments or data (missing columns, no rows, NaN or
        negative labels, a query over 10,000 rows with LightGBM's native
        objective), before training starts.
    ImportError
        When dask/distributed (extra ``ltr-rank[dask]``) or xgboost is missing.
    """
    import_distributed()
    if engine not in ("lightgbm", "xgboost"):
        raise ValueError(f"engine must be 'lightgbm' or 'xgboost', got {engine!r}")
    if eval_sets:
        raise ValueError(
            "eval_sets are not supported by ltr.dask.train yet; evaluate the model afterwards "
            "with ltr.dask.evaluate(ltr.dask.predict(...))"
        )
    if early_stopping_rounds is not None:
        raise ValueError("early_stopping_rounds needs eval_sets, which ltr.dask.train does "
                         "not support yet")
    check_eval_at(eval_at)
    if params is not None and not isinstance(params, Mapping):
        raise TypeError(f"params must be a mapping, got {short_repr(params)}")
    seed = check_seed(random_state, "random_state")
    seed = 0 if seed is None else int(seed)
    if features is not None and (isinstance(features, str) or not isinstance(features, Sequence)):
        raise TypeError(f"features must be a sequence of column names, got {short_repr(features)}")
    _check_frame(data, {"label": label, "qid": qid} if features is None
                 else {"label": label, "qid": qid, "features": list(features)})
    feats = ([c for c in data.columns if c not in (label, qid)] if features is None
             else list(features))
    if not feats:
        raise ValueError("no feature columns: data has only the label and qid columns")
    for name in feats:
        if name in (label, qid):
            raise ValueError(f"features must not include the label or qid column ({name!r})")
    k = check_int(k, "k", minimum=1)
    obj, sched = resolve_objective(objective, k=k, schedule=schedule, labels=None, n_rows=0)
    if obj is not None and composite_weights(obj) is not None:
        raise ValueError(
            "a composite objective holds its label columns in row order and cannot follow "
            "the rows to the workers; use a LambdaRankObjective"
        )
    if obj is not None and not hasattr(obj, "gradients"):
        raise TypeError(
            f"objective must provide gradients(scores, labels, offsets, iteration), "
            f"got {short_repr(obj)}"
        )
    if num_boost_round is None:
        n_sched = getattr(sched, "n_rounds", None)
        num_boost_round = int(n_sched) if n_sched else 100
    num_boost_round = check_int(num_boost_round, "num_boost_round", minimum=1)
    if obj is None:
        ks = {sched(i) for i in range(num_boost_round)}
        if len(ks) > 1:
            raise ValueError(
                f"the native objective takes one k per training; schedule {sched!r} changes it "
                "(use objective=LambdaRankObjective() to follow a schedule distributed)"
            )
        k = ks.pop()

    if engine == "lightgbm":
        from ltr.engines import lightgbm as lgb_adapter

        adapter: Any = lgb_adapter.LightGBMAdapter()
        merged = _merge(params, seed, lgb_adapter, adapter.reserved, "num_threads")
        merged["metric"] = "None"  # no engine metric (its nDCG also caps queries at 10,000)
    else:
        from ltr.engines import xgboost as xgb_adapter

        adapter = xgb_adapter.XGBoostAdapter()
        merged = _merge(params, seed, xgb_adapter, adapter.reserved, "nthread")
        merged["disable_default_eval_metric"] = 1

    n_workers = len(client.scheduler_info()["workers"])
    n_parts = (max(data.npartitions, n_workers) if npartitions is None
               else check_int(npartitions, "npartitions", minimum=1))
    frame, layout = shuffle_by_query(
        data[[qid, label, *feats]], qid, label=label, npartitions=n_parts, client=client
    )
    y_max = float(frame[label].max().compute())
    if obj is None and engine == "lightgbm":
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
    if obj is None and engine == "xgboost" and y_max >= 32 and merged.get("ndcg_exp_gain", True):
        raise ValueError(
            f"{label!r} has grade {y_max!r} but XGBoost's exponential nDCG gain needs grades "
            "< 32; pass params={'ndcg_exp_gain': False} or a LambdaRankObjective"
        )

    token = uuid.uuid4().hex
    if obj is not None:
        obj = _fresh(obj)
    if engine == "lightgbm":
        booster = _train_lightgbm(client, frame, label, qid, feats, obj, k, merged,
                                  num_boost_round, token)
    else:
        booster = _train_xgboost(client, frame, layout, label, qid, feats, obj, k, merged,
                                 num_boost_round, token)
    booster = adapter.truncate(booster, num_boost_round)
    public = to_jsonable(merged)
    if obj is not None:
        public["objective"] = objective_fields(obj)
    elif engine == "lightgbm":
        public.update(objective="lambdarank", lambdarank_truncation_level=k)
    else:
        public.update(objective="rank:ndcg", lambdarank_num_pair_per_sample=k)
    public["distributed"] = {
        "workers": n_workers, "partitions": int(layout.rows.size), "rows": layout.n_rows,
        "queries": layout.n_queries,
    }
    return RankingModel(
        engine=engine,
        booster=booster,
        evals_result={},
        best_iteration=None,
        stages=[{
            "k": k if obj is None else int(obj.k_at(0)), "first_round": 0,
            "n_rounds": num_boost_round, "best_iteration": num_boost_round,
            "rounds_run": num_boost_round, "early_stopped": False, "path": None, "metrics": {},
        }],
        params=public,
        convention=engine if convention is None else convention,
    )


def _fresh(obj: Any) -> Any:
    """Copy *obj* at round 0 (the workers get copies; the caller's is untouched)."""
    import copy

    out = copy.copy(obj)
    out.reset(0)
    return out


def _train_lightgbm(
    client: Any, frame: Any, label: str, qid: str, feats: list[str], obj: Any, k: int,
    params: dict[str, Any], num_boost_round: int, token: str,
) -> Any:
    import_dask()
    lgb_dask = optional_import("lightgbm.dask", purpose="distributed LightGBM training")
    p = dict(params)
    callbacks = []
    if obj is None:
        p["objective"] = "lambdarank"
        p["lambdarank_truncation_level"] = k
    else:
        p["objective"] = _LightGBMObjective(obj, token)
        callbacks.append(_LightGBMRound(token))
    group = frame.map_partitions(_group_part, qid, meta=pd.Series(dtype=np.int64, name="group"))
    model = lgb_dask.DaskLGBMRanker(client=client, n_estimators=num_boost_round, **p)
    with warnings.catch_warnings():
        # the sklearn wrapper's n_jobs default: lightgbm.dask sets the threads per worker itself
        warnings.filterwarnings("ignore", message="Parameter n_jobs will be ignored")
        model.fit(frame[feats], frame[label], group=group, callbacks=callbacks or None)
    return model.booster_


def _train_xgboost(
    client: Any, frame: Any, layout: QueryLayout, label: str, qid: str, feats: list[str],
    obj: Any, k: int, params: dict[str, Any], num_boost_round: int, token: str,
) -> Any:
    import inspect

    import_xgboost()
    dxgb = optional_import("xgboost.dask", purpose="distributed XGBoost training")
    p = dict(params)
    if obj is None:
        p["objective"] = "rank:ndcg"
        p.setdefault("lambdarank_pair_method", "topk")
        p["lambdarank_num_pair_per_sample"] = k
    else:
        p.setdefault("base_score", 0.0)
    # One increasing query code per row across partitions: XGBoost needs qid sorted in the
    # concatenation of a worker's partitions, and the codes never mix two queries.
    starts = np.concatenate(([0], np.cumsum(layout.queries)[:-1]))
    offsets = {i: int(s) for i, s in enumerate(starts)}
    codes = frame.map_partitions(
        _code_part, qid, offsets, meta=pd.Series(dtype=np.int64, name=_QCODE)
    )
    dtrain = dxgb.DaskQuantileDMatrix(
        client, frame[feats], label=frame[label], qid=codes, feature_names=feats
    )
    kwargs: dict[str, Any] = {}
    host = _scheduler_host(client)
    if "coll_cfg" in inspect.signature(dxgb.train).parameters:
        from xgboost.collective import Config

        kwargs["coll_cfg"] = Config(tracker_host_ip=host)
    else:  # pragma: no cover - xgboost without coll_cfg: the documented dask setting
        dask = import_dask()
        with dask.config.set({"xgboost.scheduler_address": host}):
            return dxgb.train(
                client, p, dtrain, num_boost_round=num_boost_round,
                obj=None if obj is None else _XGBoostObjective(obj, token),
                callbacks=None if obj is None else [_xgboost_round(token)],
                verbose_eval=False,
            )["booster"]
    out = dxgb.train(
        client, p, dtrain, num_boost_round=num_boost_round,
        obj=None if obj is None else _XGBoostObjective(obj, token),
        callbacks=None if obj is None else [_xgboost_round(token)],
        verbose_eval=False, **kwargs,
    )
    return out["booster"]


# ----------------------------------------------------------------------------
# prediction and evaluation
# ----------------------------------------------------------------------------


def _predict_part(part: pd.DataFrame, model: RankingModel) -> pd.Series:
    if len(part) == 0:
        return pd.Series(np.zeros(0, dtype=np.float64), index=part.index, name="score")
    return pd.Series(model.predict(part), index=part.index, name="score")


def predict(model: RankingModel, data: Any, *, features: Sequence[str] | None = None) -> Any:
    """Score the rows of a Dask DataFrame, partition by partition.

    Parameters
    ----------
    model : RankingModel
        A trained model (from :func:`train` or :func:`ltr.engines.train`).
    data : dask.dataframe.DataFrame
        Rows to score.
    features : sequence of str, optional
        Feature columns in training order; default ``model.feature_names``.

    Returns
    -------
    dask.dataframe.Series
        ``float64`` scores named ``"score"``, with the partitions and index of *data*.
    """
    if not isinstance(model, RankingModel):
        raise TypeError(f"model must be a RankingModel, got {short_repr(model)}")
    if features is None:
        features = model.feature_names
        if features is None:
            raise ValueError("the model has no feature names; pass features=[...]")
    cols = _check_frame(data, {"features": list(features)})
    return data[cols].map_partitions(
        _predict_part, model, meta=pd.Series(dtype=np.float64, name="score")
    )


def _metric_part(part: pd.DataFrame, label: str, score: str, qid: str,
                 specs: list[tuple[str, str, int | None, str | None]]) -> pd.DataFrame:
    from ltr import metrics as M

    q = part[qid].to_numpy()
    if len(q) == 0:
        return pd.DataFrame({name: np.zeros(0) for name, *_ in specs},
                            index=pd.Index(q, name=qid))
    starts = np.concatenate(([0], np.flatnonzero(q[1:] != q[:-1]) + 1))
    offsets = np.concatenate((starts, [len(q)])).astype(np.int64)
    y = part[label].to_numpy(dtype=np.float64)
    s = part[score].to_numpy(dtype=np.float64)
    out = {}
    for name, metric, k, conv in specs:
        fn = M.ndcg if metric == "ndcg" else M.dcg
        out[name] = np.asarray(fn(y, s, offsets=offsets, k=k, convention=conv, reduce=None),
                               dtype=np.float64)
    return pd.DataFrame(out, index=pd.Index(q[starts], name=qid))


def evaluate(
    data: Any,
    metrics: str | Sequence[str] = ("ndcg@10",),
    *,
    label: str,
    score: str,
    qid: str,
    convention: str | None = None,
) -> Any:
    """Per-query metrics computed where the rows live, then one reduction.

    Rows are first moved so each query is whole in one partition
    (:func:`shuffle_by_query`); each partition computes its queries' values
    with :mod:`ltr.metrics`, and the per-query values are gathered (one row
    per query, small).  The means equal :func:`ltr.metrics.ndcg` on the
    collected rows (to float rounding of the mean).

    Parameters
    ----------
    data : dask.dataframe.DataFrame
        Rows with *label*, *score* and *qid* columns.
    metrics : str or sequence of str, default=("ndcg@10",)
        ``"ndcg@K"``, ``"ndcg"`` (whole list), ``"dcg@K"``, optionally
        ``":CONVENTION"`` per name.
    label, score, qid : str
        Column names.
    convention : str, optional
        nDCG convention of :mod:`ltr.metrics` for names without their own.

    Returns
    -------
    ltr.evaluation.EvaluationResult
        ``per_query`` (index *qid*, one column per metric; NaN for a skipped
        query) and ``mean``.
    """
    from ltr.evaluation import EvaluationResult
    from ltr.metric_names import parse_metric_name

    names = [metrics] if isinstance(metrics, str) else list(metrics)
    if not names:
        raise ValueError("metrics must name at least one metric, got an empty sequence")
    specs: list[tuple[str, str, int | None, str | None]] = []
    for name in names:
        parsed = parse_metric_name(name, metrics=("ndcg", "dcg"), k_optional=True)
        conv = parsed.convention if parsed.convention is not None else convention
        specs.append((name, parsed.metric, parsed.k, conv))
    _check_frame(data, {"label": label, "score": score, "qid": qid})
    frame, _ = shuffle_by_query(data[[qid, label, score]], qid, label=label)
    meta = _metric_part(frame._meta, label, score, qid, specs)
    per_query = frame.map_partitions(_metric_part, label, score, qid, specs, meta=meta).compute()
    return EvaluationResult(
        per_query=per_query, metrics=names,
        convention=convention if convention is not None else "default",
    )

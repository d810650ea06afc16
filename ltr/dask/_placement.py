"""The rows of a Dask training on the workers: :class:`DaskPlacement`, the stage executor.

:func:`ltr.dask.train` hands a :class:`DaskPlacement` to the one stage loop of
:mod:`ltr.engines` (:class:`ltr.engines._protocol.Placement`): it shuffles
the rows so every query is whole on one worker, trains each stage with
``lightgbm.dask`` or ``xgboost.dask`` (the stage's engine parameters come
from the adapter), returns the workers' recorded rounds to the loop, and
turns a lost worker, scheduler or connection into
:class:`DistributedTrainingError`.
"""

from __future__ import annotations

import contextlib
import dataclasses
import uuid
import warnings
from collections.abc import Mapping
from concurrent.futures import CancelledError
from typing import Any
from urllib.parse import urlparse

import numpy as np
import pandas as pd

from ltr._compat import import_dask, optional_import
from ltr.dask import _workers as W
from ltr.dask._balance import balance_partitions
from ltr.dask._frame import QueryLayout, frame_digest, shuffle_by_query
from ltr.engines import TrainSpec, get_adapter

__all__ = ["LIGHTGBM_MAX_QUERY_ROWS", "MEMORY_FACTOR", "TRACKER_TIMEOUT", "DaskPlacement",
           "DistributedTrainingError", "check_worker_packages"]

#: LightGBM's native ``lambdarank`` refuses longer queries (a C++ check).
LIGHTGBM_MAX_QUERY_ROWS = 10_000

#: A worker needs about this many times a query's bytes to train on it (its persisted rows,
#: the engine's concatenated copy, the binned dataset, gradients).
MEMORY_FACTOR = 4

_QCODE = "__ltr_query_code__"
_PACKED = "__ltr_packed__"
#: composite grades are packed into the engine's float32 label: exact below 2**24
_FLOAT32_EXACT = 2**24
#: words of the engines' collective-communication errors (a peer or the tracker is gone)
_NETWORK_WORDS = ("allgather", "allreduce", "broadcast", "socket", "connect", "tracker",
                  "timed out", "timeout", "rabit", "collective", "peer", "recv")
#: seconds XGBoost's tracker waits to form or close the worker group (then frees its port)
TRACKER_TIMEOUT = 300


#: engine -> (method building its distributed data, method running one distributed stage): how
#: the workers of each engine meet; everything else comes from the engine's adapter
_DISTRIBUTED: dict[str, tuple[str, str]] = {
    "lightgbm": ("_groups", "_lightgbm"),
    "xgboost": ("_dmatrix", "_xgboost"),
}


class DistributedTrainingError(RuntimeError):
    """Training failed on the cluster (a worker, the scheduler or the network between them lost).

    The stages finished before are kept in ``stage_dir``; ``resume=True``
    continues from them.
    """


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


def _versions(client: Any, dist: str) -> dict[str, Any]:
    """``worker -> version of distribution *dist*`` (an exception where it is missing)."""
    import importlib.metadata

    # a stdlib function, pickled by reference: it runs on a worker without ltr too
    return dict(client.run(importlib.metadata.version, dist, on_error="return"))


def _installed_here(dist: str) -> bool:
    import importlib.metadata

    try:
        importlib.metadata.version(dist)
    except importlib.metadata.PackageNotFoundError:
        return False
    return True


def check_worker_packages(client: Any, engine: str) -> None:
    """Refuse, before any work, workers that lack ``ltr-rank`` or the engine; warn on versions.

    The objective, callbacks and recorder run on the workers: a worker
    without them would die with ``ModuleNotFoundError`` in the middle of
    training.
    """
    import importlib.metadata

    need = {"ltr-rank": "ltr-rank[dask]", engine: f"ltr-rank[{engine}]"}
    for dist, extra in need.items():
        names = [dist]
        if dist == "xgboost":  # the CPU build installs the same module under another name;
            # ask first for the one installed here (a missing one logs a traceback per worker)
            names = sorted(["xgboost", "xgboost-cpu"], key=lambda n: not _installed_here(n))
        found = _versions(client, names[0])
        if len(names) > 1 and any(not isinstance(v, str) for v in found.values()):
            second = _versions(client, names[1])
            found = {w: v if isinstance(v, str) else second.get(w, v) for w, v in found.items()}
        missing = sorted(w for w, v in found.items() if not isinstance(v, str))
        if missing:
            raise ValueError(
                f"{len(missing)} worker(s) of the cluster cannot import {dist!r} ({missing[:3]}"
                f"{' ...' if len(missing) > 3 else ''}): install the same environment on every "
                f"worker (pip install '{extra}', the versions of this machine)"
            )
        try:
            here = importlib.metadata.version(dist)
        except importlib.metadata.PackageNotFoundError:
            try:
                here = importlib.metadata.version(f"{dist}-cpu")
            except importlib.metadata.PackageNotFoundError:
                continue
        other = sorted({v for v in found.values() if v != here})
        if other:
            warnings.warn(
                f"the workers run {dist} {other} but this machine {here}: install one version "
                "everywhere (models and objectives are pickled between them)",
                RuntimeWarning, stacklevel=3,
            )


def _first_line(exc: BaseException) -> str:
    """First line of *exc*'s message (engines add C++ stack traces below it)."""
    text = str(exc).strip()
    return text.splitlines()[0] if text else ""


def _lost(exc: BaseException, before: set[str], client: Any) -> bool:
    """Whether *exc* comes from the cluster or an engine's network layer, not from ltr.

    A worker that left during the stage, a comm or timeout error, any error
    of ``distributed`` itself, and LightGBM or XGBoost errors naming their
    network layer (a socket, ``Ring allgather failed``, the tracker) are the
    cluster's; anything else (a bad engine parameter, a bug) is re-raised as is.
    """
    if isinstance(exc, (OSError, TimeoutError, CancelledError)):
        return True
    module = (type(exc).__module__ or "").split(".")[0]
    if module in ("distributed", "tornado"):
        return True
    try:
        if before - set(_workers(client)):
            return True
    except Exception:  # noqa: BLE001 - the scheduler itself is unreachable
        return True
    text = str(exc).lower()
    return module in ("lightgbm", "xgboost") and any(word in text for word in _NETWORK_WORDS)


# ----------------------------------------------------------------------------
# the placement: the rows on the workers, the executor of each stage
# ----------------------------------------------------------------------------


class DaskPlacement:
    """Training rows on a Dask cluster: the stage executor of the one training loop.

    Implements :class:`ltr.engines._protocol.Placement`.  :meth:`place`
    shuffles the rows so each query is whole on one worker (once, before the
    loop); :meth:`train_stage` trains one stage with ``lightgbm.dask`` or
    ``xgboost.dask`` and hands the workers' recorded rounds and metrics to the
    loop's recorder.  It also records which workers actually trained each
    stage (:meth:`describe`, stored in ``model.params["distributed"]``).
    """

    def __init__(self, client: Any, data: Any, *, label: str, qid: str, features: list[str],
                 weight: str | None, label_cols: dict[str, str] | None,
                 npartitions: int | None) -> None:
        self.client = client
        self.data = data
        self.label = label
        self.qid = qid
        self.feats = features
        self.weight = weight
        self.label_cols = label_cols
        self.npartitions = npartitions
        self.frame: Any = None
        self.layout: QueryLayout | None = None
        self.packed: W.PackedLabels | None = None
        self.engine_label = label
        self.data_workers: list[str] = []  # workers holding the shuffled rows
        self.worker_rows: list[int] = []  # their rows, largest first
        self.stage_workers: list[list[str]] = []  # workers that trained each stage run here
        self._warned = False

    # -- before the loop -------------------------------------------------------

    def place(self, spec: TrainSpec) -> float:
        """Shuffle the rows by query and check them; return the largest label.

        Refuses (``ValueError``, before any training) a query over LightGBM's
        native cap, a query too large for one worker, fractional or too many
        composite grades.
        """
        client = self.client
        check_worker_packages(client, spec.engine)
        n_workers = len(_workers(client))
        n_parts = (max(self.data.npartitions, n_workers) if self.npartitions is None
                   else self.npartitions)
        extra = ([self.weight] if self.weight else []) + list((self.label_cols or {}).values())
        used = list(dict.fromkeys([self.qid, self.label, *self.feats, *extra]))
        frame, layout = shuffle_by_query(self.data[used], self.qid, label=self.label,
                                         check=extra, npartitions=n_parts, client=client)
        if (spec.native and spec.engine == "lightgbm"
                and layout.max_query_rows > LIGHTGBM_MAX_QUERY_ROWS):
            raise ValueError(
                f"query {layout.max_query_id!r} has {layout.max_query_rows} rows, but LightGBM's "
                f"native lambdarank objective caps a query at {LIGHTGBM_MAX_QUERY_ROWS} rows; "
                "use objective=LambdaRankObjective() (no cap) or split the query"
            )
        _check_memory(client, layout, frame, used)
        # every round waits for the busiest worker: even rows per thread before training
        threads = {str(a): int(w.get("nthreads") or 1) for a, w in _workers(client).items()}
        frame, where = balance_partitions(client, frame, layout.rows, threads)
        if self.label_cols:
            self.packed = _packing(self.label_cols, layout)
            cols = tuple(self.label_cols[n] for n in self.packed.names)
            frame = frame.assign(**{_PACKED: frame.map_partitions(
                self.packed.pack, cols, meta=pd.Series(dtype=np.float64, name=_PACKED))})
            self.engine_label = _PACKED
        self.frame, self.layout = frame, layout
        count: dict[str, int] = {}
        for w, n in zip(where, layout.rows):
            count[w] = count.get(w, 0) + int(n)
        self.data_workers = sorted(count)
        self.worker_rows = sorted(count.values(), reverse=True)
        return float(layout.column_max.get(self.label, 0.0))

    # -- Placement protocol ----------------------------------------------------

    def digest(self) -> str:
        """Digest of the shuffled rows (partition by partition)."""
        return frame_digest(self.frame)

    def settings(self) -> dict[str, Any]:
        """Return the columns and partitions the model depends on (for the fingerprint)."""
        assert self.layout is not None
        return {"features": self.feats, "weight": self.weight, "labels": self.label_cols,
                "partitions": int(self.layout.rows.size), "distributed": True}

    def describe(self) -> dict[str, Any]:
        """Return what the training ran on: workers per trained stage, partitions, rows."""
        assert self.layout is not None
        counts = [len(w) for w in self.stage_workers]
        return {
            "workers": min(counts) if counts else None,
            "stage_workers": counts,
            "shuffled_to_workers": len(self.data_workers),
            "worker_rows": list(self.worker_rows),
            "partitions": int(self.layout.rows.size),
            "rows": self.layout.n_rows,
            "queries": self.layout.n_queries,
        }

    def prepare(self, spec: TrainSpec, params: dict[str, Any]) -> Any:
        """Build the engine's distributed data: LightGBM group sizes or XGBoost's DMatrix."""
        return getattr(self, _DISTRIBUTED[spec.engine][0])(spec)

    def _groups(self, spec: TrainSpec) -> Any:
        return self.frame.map_partitions(_group_part, self.qid,
                                         meta=pd.Series(dtype=np.int64, name="group"))

    def train_stage(self, spec: TrainSpec, data: Any, params: dict[str, Any], stage_index: int,
                    k: int, n_rounds: int, init_booster: Any, objective: Any,
                    recorder: Any) -> Any:
        """Train one stage on the workers; fill *recorder* from theirs; return the booster."""
        adapter = get_adapter(spec.engine)
        token = uuid.uuid4().hex
        # what the workers read: eval sets, cut-offs, early stopping (not the rows' placement)
        shipped = dataclasses.replace(spec, placement=None, objective=None)
        first = 0 if objective is None else int(objective.first_round)
        trees = 0 if init_booster is None else adapter.num_rounds(init_booster)
        before = set(_workers(self.client))
        try:
            self.client.run(W.pause_profiler, token)  # pop_state restarts it
            fit = getattr(self, _DISTRIBUTED[spec.engine][1])
            booster = fit(adapter, spec, shipped, data, params, stage_index, k, n_rounds,
                          init_booster, objective, token, first, trees)
            recorders = self.client.run(W.pop_state, token)
        except KeyboardInterrupt:
            self._drop_state(token)
            raise
        except Exception as exc:
            self._drop_state(token)
            if not _lost(exc, before, self.client):
                raise
            raise DistributedTrainingError(
                f"training stage {stage_index} (k={k}) failed on the cluster: a worker or the "
                f"scheduler was lost, or the workers lost their connection: "
                f"{type(exc).__name__}: {_first_line(exc)}"
            ) from exc
        trained = sorted(a for a, r in recorders.items() if r is not None)
        remote = next((recorders[a] for a in trained), None)
        if remote is not None:
            recorder.absorb(remote)
        else:  # pragma: no cover - every training worker keeps a recorder
            recorder.absorb(type(recorder)(shipped, k))
            recorder.rounds = n_rounds
        self.stage_workers.append(trained)
        self._check_workers(stage_index, trained)
        return booster

    def _drop_state(self, token: str) -> None:
        """After a failed stage: the state it left on the workers goes, their profilers restart.

        Best effort, on the workers still there: a lost scheduler leaves nothing to clean,
        and the stage's own error is the one to raise.
        """
        with contextlib.suppress(Exception):
            self.client.run(W.pop_state, token, on_error="ignore")

    def _check_workers(self, stage_index: int, trained: list[str]) -> None:
        missing = sorted(set(self.data_workers) - set(trained))
        if missing and not self._warned:
            self._warned = True
            warnings.warn(
                f"stage {stage_index} trained on {len(trained)} worker(s), but the rows were "
                f"shuffled to {len(self.data_workers)}: {missing} left after the shuffle and "
                "Dask moved their partitions to the others. The model is valid but differs "
                "from a run on all workers (LightGBM bins per worker); "
                "model.params['distributed'] records the workers of every stage",
                RuntimeWarning,
                stacklevel=2,
            )

    # -- the engines' distributed fits -----------------------------------------

    def _lightgbm(self, adapter: Any, spec: TrainSpec, shipped: TrainSpec, group: Any,
                  params: dict[str, Any], stage_index: int, k: int, n_rounds: int, init: Any,
                  objective: Any, token: str, first: int, trees: int) -> Any:
        lgb_dask = optional_import("lightgbm.dask", purpose="distributed LightGBM training")
        wrapper = (None if objective is None
                   else W.lightgbm_objective(objective.objective, token, self.packed))
        p = adapter.stage_params(spec, params, stage_index, k, wrapper)
        callbacks = W.lightgbm_callbacks(token, objective=wrapper is not None, spec=shipped,
                                         stage_k=k, first=first)
        frame = self.frame
        model = lgb_dask.DaskLGBMRanker(client=self.client, n_estimators=n_rounds, **p)
        with warnings.catch_warnings():
            # lightgbm.dask sets the threads per worker itself
            warnings.filterwarnings("ignore", message="Parameter n_jobs will be ignored")
            cat: Any = [self.feats[j] for j in spec.categorical] or "auto"
            model.fit(frame[self.feats], frame[self.engine_label], group=group,
                      categorical_feature=cat,
                      sample_weight=None if self.weight is None else frame[self.weight],
                      callbacks=callbacks, init_model=init)
        return model.booster_

    def _xgboost(self, adapter: Any, spec: TrainSpec, shipped: TrainSpec, dtrain: Any,
                 params: dict[str, Any], stage_index: int, k: int, n_rounds: int, init: Any,
                 objective: Any, token: str, first: int, trees: int) -> Any:
        import inspect

        dxgb = optional_import("xgboost.dask", purpose="distributed XGBoost training")
        wrapper = (None if objective is None
                   else W.xgboost_objective(objective.objective, token, self.packed))
        p = adapter.stage_params(spec, params, stage_index, k, wrapper)
        callbacks = W.xgboost_callbacks(token, objective=wrapper is not None, spec=shipped,
                                        stage_k=k, first=first, trees=trees)
        kwargs: dict[str, Any] = {"num_boost_round": n_rounds, "obj": wrapper, "xgb_model": init,
                                  "callbacks": callbacks, "verbose_eval": False}
        host = _scheduler_host(self.client)
        if "coll_cfg" in inspect.signature(dxgb.train).parameters:
            from xgboost.collective import Config

            # the tracker listens on the scheduler's host only, and gives its port back
            # TRACKER_TIMEOUT s after a training whose workers never finish the group
            cfg = Config(tracker_host_ip=host, tracker_timeout=TRACKER_TIMEOUT)
            out = dxgb.train(self.client, p, dtrain, coll_cfg=cfg, **kwargs)
        else:  # pragma: no cover - xgboost without coll_cfg: the documented dask setting
            with import_dask().config.set({"xgboost.scheduler_address": host}):
                out = dxgb.train(self.client, p, dtrain, **kwargs)
        return out["booster"]

    def _dmatrix(self, spec: TrainSpec) -> Any:
        dxgb = optional_import("xgboost.dask", purpose="distributed XGBoost training")
        assert self.layout is not None
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
        extra: dict[str, Any] = ({} if self.weight is None
                                 else {"label_lower_bound": frame[self.weight]})
        if spec.categorical:  # columns holding category codes
            from ltr.engines.xgboost import categorical_dmatrix_args

            extra.update(categorical_dmatrix_args(len(self.feats), spec.categorical))
        return dxgb.DaskQuantileDMatrix(self.client, frame[self.feats],
                                        label=frame[self.engine_label], qid=codes,
                                        feature_names=self.feats, **extra)



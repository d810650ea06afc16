"""A run on a Dask cluster: connect, read the data there, train with ``ltr.dask``.

With a ``cluster`` section, ``ltr train`` keeps the training set on the
cluster and collects only the held-out sets (valid/test) to this process,
where the metrics, curves, importance and report are computed as in a
single-process run.  The model comes from :func:`ltr.dask.train` with the
keyword arguments of the one builder (:func:`ltr.build.build_training`),
checkpoints each stage into the run folder's ``models/`` and resumes from
the last finished stage, exactly like a single-process run.

* ``data.source: parquet``: ``data.train`` (a file or a glob) is read by
  Dask on the workers (``dask.dataframe.read_parquet``); ``data.valid`` /
  ``data.test`` files are read here, and sets without a file are split from
  the training data by a seeded hash of the query id, on the cluster.
* Any other source is read here as today and sent to the cluster.

Commands that need only the held-out sets of a finished cluster run
(``ltr importance RUN_DIR``) get them from :func:`held_out_sets`, as the run
made them, without reading its training files here.

Position-bias (unbiased) training is refused on a cluster (``ltr.dask``
cannot sum its position statistics over the workers): train it in one process.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd

from ltr.build import TrainSettings, build_training
from ltr.runs.config import RunConfig, RunError
from ltr.runs.data import SETS, frame_data, load_data
from ltr.runs.notices import notice

if TYPE_CHECKING:  # pragma: no cover
    from ltr.datasets import RankingData
    from ltr.engines import RankingModel

__all__ = ["ClusterRun", "check_cluster_config", "held_out_sets", "open_cluster_run"]

log = logging.getLogger("ltr.runs")

_SPLIT = "__ltr_split__"


def check_cluster_config(cfg: RunConfig) -> None:
    """Refuse settings a distributed run cannot train (position-bias), naming the key.

    Raises
    ------
    RunError
        For ``model.unbiased`` or a ``data.position`` column with a ``cluster``.
    """
    if cfg.cluster is None:
        return
    for key, value in (("model.unbiased", cfg.settings.unbiased),
                       ("model.position_term", cfg.settings.position_term),
                       ("data.position", getattr(cfg.data, "position", None))):
        if value:
            raise RunError(
                f"{key}: position-bias (unbiased) training is not supported on a Dask cluster "
                "(its position statistics would have to be summed over all workers every "
                "round); remove the cluster section to train in one process"
            )


def _split_part(part: pd.DataFrame, qid: str, fractions: tuple[float, float],
                seed: int) -> pd.Series:
    """0 train, 1 valid, 2 test per row: a seeded hash of the query id, uniform in [0, 1)."""
    h = pd.util.hash_pandas_object(part[qid], index=False, hash_key=f"ltr{seed:013d}"[:16])
    u = (h.to_numpy() >> np.uint64(11)).astype(np.float64) / float(2**53)
    valid, test = fractions
    out = np.where(u < valid, 1, np.where(u < valid + test, 2, 0)).astype(np.int8)
    return pd.Series(out, index=part.index, name=_SPLIT)


def _grades_part(part: pd.DataFrame, mappings: Mapping[str, Any]) -> pd.DataFrame:
    out = part.copy()
    for name, mapping in mappings.items():
        out[f"__grade_{name}"] = mapping({c: part[c].to_numpy() for c in mapping.columns})
    return out


@dataclass
class ClusterRun:
    """The cluster, the training rows on it and the held-out sets collected here.

    Attributes
    ----------
    connection : ltr.dask.Connection
        Closed by :meth:`close`.
    train : dask.dataframe.DataFrame
        Training rows (columns ``label``, ``qid``, ``features`` and label columns).
    sets : dict of str to RankingData
        ``valid`` / ``test`` where the run has them, in this process.
    """

    connection: Any
    train: Any
    label: str
    qid: str
    features: list[str]
    labels: dict[str, str] | None
    sets: dict[str, RankingData] = field(default_factory=dict)

    def close(self) -> None:
        """Close the client (and the local cluster this run started)."""
        self.connection.close()

    def train_model(self, cfg: RunConfig, settings: TrainSettings, eval_sets: list[Any],
                    stage_dir: Path, *, resume: bool) -> RankingModel:
        """Train with :func:`ltr.dask.train` on the builder's arguments; checkpoints in *stage_dir*.

        Raises
        ------
        RunError
            When a worker is lost during training (the finished stages are kept).
        """
        import ltr.dask as ldask

        names = list(self.labels or {})
        # the one builder; a composite objective reads its columns on the workers (labels=)
        kwargs = build_training(settings, {n: np.zeros(1) for n in names} if names else None)
        kwargs.pop("n_jobs", None)  # threads per worker come from the cluster
        notice.info("cluster: moving the training rows so that each query is whole in one "
                    "partition (a shuffle), then training on %s", self.connection.address)
        try:
            return ldask.train(
                self.connection.client, self.train, label=self.label, qid=self.qid,
                features=self.features,
                labels=self.labels if settings.objectives is not None else None,
                eval_sets=eval_sets, eval_at=tuple(cfg.evaluation.eval_at),
                stage_dir=stage_dir, resume=resume, convention=cfg.evaluation.convention,
                categorical=cfg.data.categorical or None, **kwargs,
            )
        except ldask.DistributedTrainingError as exc:
            done = stage_dir / "stages.json"
            hint = (f"finish it with: ltr train --resume {stage_dir.parent}" if done.exists()
                    else "no stage had finished; run it again")
            raise RunError(f"cluster: {exc}; {hint}") from exc


def _connect(cfg: RunConfig) -> Any:
    import ltr.dask as ldask

    c = cfg.cluster
    if c is None:  # pragma: no cover - callers check
        raise RunError("cluster: no cluster section")
    try:
        if c.address is not None:
            return ldask.connect(c.address, timeout=c.timeout)
        local = c.local
        if local is None:  # pragma: no cover - the schema requires one of the two
            raise RunError("cluster: give address or local")
        return ldask.connect(None, n_workers=local.n_workers,
                             threads_per_worker=local.threads_per_worker,
                             memory_limit=local.memory_limit, timeout=c.timeout)
    except ConnectionError as exc:
        raise RunError(f"cluster.address: {exc}") from None


def _columns(cfg: RunConfig, columns: list[str]) -> tuple[str, list[str], dict[str, str] | None,
                                                         dict[str, Any]]:
    """Label column, features, composite label columns and grade mappings (as frame_data)."""
    data = cfg.data
    mappings: dict[str, Any] = {}
    labels: dict[str, str] = {}
    used_raw: set[str] = set()
    for name, oc in (data.objectives or {}).items():
        mapping = oc.grade_mapping()
        if mapping is not None:
            mappings[name] = mapping
            used_raw.update(mapping.columns)
            labels[name] = f"__grade_{name}"
        else:
            labels[name] = oc.column or name
    label = data.label
    if data.objectives and label not in columns:
        label = next(iter(labels.values()))
    for key, col in (("data.label", label), ("data.qid", data.qid)):
        if col not in columns and not col.startswith("__grade_"):
            raise RunError(f"{key}: column {col!r} not found in {data.train} "
                           f"(columns: {', '.join(columns[:15])})")
    skip = {label, data.qid, data.segment, *labels.values(), *used_raw}
    feats = list(data.features) if data.features is not None else [
        c for c in columns if c not in skip]
    return label, feats, labels or None, mappings


def open_cluster_run(cfg: RunConfig) -> ClusterRun:
    """Connect to the configured cluster and load the run's data there (train) and here.

    Raises
    ------
    RunError
        When the scheduler does not answer (naming ``cluster.address``), or
        for data errors (naming the ``data`` key).
    """
    check_cluster_config(cfg)
    conn = _connect(cfg)
    try:
        with conn.client.as_current():  # the reads and splits run on this run's cluster
            return _load(cfg, conn)
    except BaseException as exc:
        conn.close()
        if _cluster_fault(exc):
            raise RunError(
                f"cluster: a worker, the scheduler or a connection was lost while the data was "
                f"read on the cluster ({type(exc).__name__}: {exc}); no run folder was made: "
                "run it again"
            ) from exc
        raise


def _cluster_fault(exc: BaseException) -> bool:
    """Whether *exc* is the cluster's (comm, timeout, cancelled, an error of ``distributed``)."""
    from concurrent.futures import CancelledError

    module = (type(exc).__module__ or "").split(".")[0]
    return (isinstance(exc, (ConnectionError, TimeoutError, CancelledError))
            or module in ("distributed", "tornado"))


def held_out_sets(cfg: RunConfig) -> dict[str, RankingData]:
    """Return a cluster run's valid/test sets as ``ltr train`` made them; train stays remote.

    With ``data.source: parquet`` the training files are read on the cluster
    of ``cfg.cluster`` (connected again, or a new local cluster started) and
    only the held-out sets are collected here, split by the same query-id
    hash as in training; other sources are read here, as the run read them.

    Raises
    ------
    RunError
        When the scheduler does not answer (naming ``cluster.address``), or
        for data errors (naming the ``data`` key).
    """
    if cfg.data.source != "parquet":
        sets = load_data(cfg)
        sets.pop("train", None)
        return sets
    where = cfg.cluster.address if cfg.cluster is not None and cfg.cluster.address else "local"
    log.info("reading %s on the cluster (%s); only valid/test are collected here",
             cfg.data.train, where)
    run = open_cluster_run(cfg)
    try:
        return dict(run.sets)
    finally:
        run.close()


def _load(cfg: RunConfig, conn: Any) -> ClusterRun:
    from ltr._compat import import_dask

    dd = import_dask().dataframe
    data = cfg.data
    client = conn.client
    if data.source != "parquet":
        local = load_data(cfg)
        tr = local.pop("train")
        frame = tr.to_frame()
        label_cols = {n: f"label_{n}" for n in (data.objectives or {})} or None
        train = dd.from_pandas(frame, npartitions=max(2, len(client.scheduler_info(
            n_workers=-1)["workers"])), sort=False)
        return ClusterRun(conn, train, "label", "qid", list(tr.feature_names), label_cols, local)
    try:
        train = dd.read_parquet(str(data.train))
    except Exception as exc:  # the reader's own error, named by key
        raise RunError(f"data.train ({data.train}): {exc}") from exc
    label, feats, label_cols, mappings = _columns(cfg, [str(c) for c in train.columns])
    if mappings:
        train = train.map_partitions(_grades_part, mappings,
                                     meta=_grades_part(train._meta, mappings))
    sets: dict[str, RankingData] = {}
    for name in ("valid", "test"):
        path = getattr(data, name)
        if path is not None:
            sets[name] = load_data(cfg.model_copy(update={"data": data.model_copy(update={
                "train": path, "valid": None, "test": None,
                "split": data.split.model_copy(update={"valid": 0.0, "test": 0.0})})}),
                keys={"train": f"data.{name}"})["train"]
    missing = tuple(0.0 if name in sets else float(getattr(data.split, name))
                    for name in ("valid", "test"))
    if any(missing):
        seed = data.split.seed if data.split.seed is not None else cfg.seed
        split = train.map_partitions(_split_part, data.qid, missing, seed,
                                     meta=pd.Series(dtype=np.int8, name=_SPLIT))
        train = train.assign(**{_SPLIT: split})
        for code, name in ((1, "valid"), (2, "test")):
            if missing[code - 1] > 0:
                part = train[train[_SPLIT] == code].drop(columns=_SPLIT).compute()
                if len(part) == 0:
                    raise RunError(f"data.split.{name}: no query fell into the {name} set")
                part = part.sort_values(data.qid, kind="stable")
                sets[name] = frame_data(cfg, part, str(data.train), f"data.{name}")
        train = train[train[_SPLIT] == 0].drop(columns=_SPLIT)
    log.info("cluster %s: %d workers; train read by dask from %s (%d partitions)",
             conn.address, len(client.scheduler_info(n_workers=-1)["workers"]), data.train,
             train.npartitions)
    return ClusterRun(conn, train, label, data.qid, feats, label_cols,
                      {n: sets[n] for n in SETS if n in sets})

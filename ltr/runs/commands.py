"""The commands of ``ltr`` as library functions: they return results and print nothing.

:func:`train_run`, :func:`evaluate_model`, :func:`importance_run`,
:func:`tune_run`, :func:`render_report` and :func:`validate` are what the
command line (:mod:`ltr.cli`) dispatches to; each is usable from Python.
The data flow of a training run is::

    config (model section validated once: RunConfig.settings) -> build_training
           -> ltr.engines.train
           -> RankingModel -> compute_metrics / curves / importance
           -> run folder (write_atomic) -> RunReport
"""

from __future__ import annotations

import json
import logging
import os
import time
import warnings
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ltr._io import to_jsonable, write_atomic
from ltr._propensities import check_row_propensities
from ltr._validation import check_clicks, check_positions
from ltr.build import TrainSettings, build_training
from ltr.categorical import resolve_categorical_columns
from ltr.engines import uses_position
from ltr.runs.config import (
    RunConfig,
    RunError,
    RunInterrupted,
    config_to_dict,
    load_config,
    parse_config,
)
from ltr.runs.data import load_data, logged_column
from ltr.runs.debiasing import resolve_auto_debiasing
from ltr.runs.folder import (
    DONE_MARKER,
    MODEL_FILE,
    check_resume,
    check_same_data,
    load_run_config,
    load_run_model,
    mark_done,
    new_run_dir,
    prepare_config,
    progress_enabled,
    remove_run_dir,
    run_log,
    write_run_config,
)
from ltr.runs.report import RunReport
from ltr.runs.run_metrics import (
    compute_metrics,
    importance_features,
    importance_set,
    importance_table,
    write_curves,
)
from ltr.runs.track_run import finish_tracking, open_tracker, start_tracking

if TYPE_CHECKING:  # pragma: no cover
    from ltr.datasets import RankingData
    from ltr.engines import RankingModel

__all__ = [
    "RunResult",
    "importance_run",
    "render_report",
    "train_run",
    "validate",
]

log = logging.getLogger("ltr.runs")


@dataclass
class RunResult:
    """What a finished run command returns.

    Attributes
    ----------
    run_dir : Path
        The finished run folder (it holds ``DONE``).
    metrics : dict
        The content of ``metrics.json``.
    """

    run_dir: Path
    metrics: dict[str, Any] = field(default_factory=dict)

    @property
    def final(self) -> dict[str, dict[str, float]]:
        """``{set: {"ndcg@k": value}}`` of the final model on valid/test."""
        return dict(self.metrics.get("final") or {})

    @classmethod
    def from_run_dir(cls, run_dir: str | os.PathLike[str]) -> RunResult:
        """Read a finished run folder's ``metrics.json``."""
        path = Path(run_dir)
        metrics = json.loads((path / "metrics.json").read_text(encoding="utf-8"))
        return cls(path, metrics)


def _native_model_name(engine: str) -> str:
    return "model.lightgbm.txt" if engine == "lightgbm" else "model.xgboost.json"


def validate(
    config: str | os.PathLike[str], overrides: Sequence[str] = (), *, load: bool = False
) -> RunConfig:
    """Load, override, validate and resolve a config (data files must exist).

    With *load*, the data are loaded too, so missing columns, bad grade
    mappings or unreadable files are reported as well; with a ``cluster``
    section and ``data.source: parquet``, the training files are read on
    that cluster (as ``ltr train`` reads them), never here.
    """
    cfg = prepare_config(load_config(config, overrides))  # the model section checked there
    _check_cluster(cfg)
    if load and cfg.cluster is not None and cfg.data.source == "parquet":
        from ltr.runs.cluster import open_cluster_run

        cluster = open_cluster_run(cfg)
        try:
            _load_checked(cfg, cluster)
        finally:
            cluster.close()
    elif load:
        _load_checked(cfg)
    return cfg


def _check_cluster(cfg: RunConfig) -> None:
    """Check what a cluster run needs of the config, before any data is read.

    The training settings were checked when the config was loaded
    (``RunConfig.settings``); nothing here checks them again.
    """
    if cfg.cluster is not None:
        from ltr._compat import optional_import
        from ltr.runs.cluster import check_cluster_config

        try:
            optional_import("distributed", purpose="the config's cluster section")
        except ImportError as exc:
            raise RunError(f"cluster: {exc}; or remove the cluster section to train in one "
                           "process") from None
        check_cluster_config(cfg)


def train_run(
    cfg: RunConfig | None,
    *,
    out: str | os.PathLike[str] | None = None,
    resume: str | os.PathLike[str] | None = None,
    progress: bool | None = None,
    force_importance: bool = False,
    mlflow: str | None = None,
) -> RunResult:
    """Train a run described by *cfg* into a new run folder (or finish *resume*).

    Parameters
    ----------
    cfg : RunConfig or None
        Validated config; None only with *resume* (the run's own config is used).
    out : path-like, optional
        Run folder to create (must not exist or be empty); default
        ``<output.runs_dir>/<name>-<timestamp>``.
    resume : path-like, optional
        Unfinished run folder to complete: completed stages are loaded, not
        retrained, so the result equals an uninterrupted run.  *cfg*, when
        given, must equal the run's config (``output`` aside).
    progress : bool, optional
        Progress bar over rounds and stages (default: only on a terminal).
    force_importance : bool
        Compute permutation importance even if ``importance.enabled`` is false.
    mlflow : str, optional
        MLflow tracking URI (``--mlflow``): log the run there
        (:mod:`ltr.runs.track_run`); overrides ``tracking.mlflow.tracking_uri``.

    Returns
    -------
    RunResult
        The finished run folder (it contains ``DONE``) and its metrics.
    """
    if resume is not None:
        if out is not None:
            raise RunError(
                "--out and --resume exclude each other (a resumed run stays in its folder)"
            )
        run_dir = Path(resume)
        if cfg is not None:
            cfg = prepare_config(cfg)
        cfg = check_resume(cfg, run_dir)
        cfg = prepare_config(cfg)
    else:
        if cfg is None:
            raise RunError("a config is required (or --resume RUN_DIR)")
        cfg = prepare_config(cfg)
    if force_importance and not cfg.importance.enabled:
        cfg = cfg.model_copy(
            update={"importance": cfg.importance.model_copy(update={"enabled": True})}
        )
    settings = cfg.settings
    _check_cluster(cfg)
    cluster = None
    if cfg.cluster is not None:  # train on a Dask cluster: the rows stay there
        from ltr.runs.cluster import open_cluster_run

        cluster = open_cluster_run(cfg)
    tracker = open_tracker(cfg, mlflow)
    try:
        sets = _load_checked(cfg, cluster)  # all input errors surface before a folder exists
        if resume is None:
            run_dir = new_run_dir(cfg, out)
            write_run_config(run_dir, cfg)
        with _tracked(tracker, cfg, "train"):
            metrics = _fit_and_write(
                cfg,
                settings,
                sets,
                run_dir,
                resume=resume is not None,
                progress=progress_enabled(cfg, progress),
                keep_folder=out is not None,
                cluster=cluster,
            )
            if tracker is not None:
                finish_tracking(tracker, run_dir, metrics)
    finally:
        if cluster is not None:
            cluster.close()
    return RunResult(run_dir, metrics)


@contextmanager
def _tracked(tracker: Any, cfg: RunConfig, command: str) -> Iterator[None]:
    """Open the MLflow run of a command (when tracked); close it ``FAILED`` if the block raises."""
    if tracker is None:
        yield
        return
    start_tracking(tracker, cfg, command)
    try:
        yield
    except BaseException as exc:
        tracker.end("KILLED" if isinstance(exc, KeyboardInterrupt) else "FAILED")
        raise


def _load_checked(cfg: RunConfig, cluster: Any = None) -> dict[str, RankingData]:
    """Load the data and check everything a training needs from it, before any work.

    With a *cluster* run the training rows stay on the cluster: only valid/test are here.
    """
    sets = load_data(cfg) if cluster is None else dict(cluster.sets)
    for name, ds in sets.items():  # the logged positions and clicks, before any folder exists
        try:
            if "position" in cfg.logged:
                position = logged_column(ds, "position", name)
                check_positions(position, f"data.position ({name})", ds.offsets)
            if "click" in cfg.logged:
                check_clicks(logged_column(ds, "click", name), f"data.click ({name})", ds.n_rows)
            if "propensity" in cfg.logged:
                check_row_propensities(logged_column(ds, "propensity", name),
                                       f"data.propensity ({name})", ds.n_rows)
        except (TypeError, ValueError) as exc:
            raise RunError(str(exc)) from exc
    ips = cfg.evaluation.ips
    if ips is not None and ips.propensity == "em" and "train" in sets:
        from ltr.clicks import estimate_propensity_em

        tr = sets["train"]
        try:  # identifiable at all? (one EM step; the run fits it in full after training)
            with warnings.catch_warnings():  # a partial one is stated by the real fit
                warnings.simplefilter("ignore")
                estimate_propensity_em(logged_column(tr, "click"), logged_column(tr, "position"),
                                       logged_column(tr, "doc"), offsets=tr.offsets, n_iter=1)
        except ValueError as exc:
            raise RunError(f"evaluation.ips.propensity: em on the training clicks: {exc}") from exc
    if "valid" not in sets and cfg.model.early_stopping_rounds is not None:
        raise RunError(
            "model.early_stopping_rounds: needs a validation set "
            "(data.valid or data.split.valid > 0)"
        )
    if cfg.importance.enabled:
        importance_features(cfg, sets[importance_set(cfg, sets)])
    if cfg.data.categorical:
        names = list(cluster.features if cluster is not None else sets["train"].feature_names)
        try:
            resolve_categorical_columns(
                cfg.data.categorical, names, len(names), where="data.categorical"
            )
        except (TypeError, ValueError) as exc:
            raise RunError(str(exc)) from exc
    return sets


def _fit_and_write(
    cfg: RunConfig,
    settings: TrainSettings,
    sets: Mapping[str, RankingData],
    run_dir: Path,
    *,
    resume: bool,
    progress: bool,
    keep_folder: bool,
    extra: Mapping[str, Any] | None = None,
    cluster: Any = None,
) -> dict[str, Any]:
    """Train *settings* into *run_dir* and write every file of a run; returns the metrics.

    The one training pipeline of ``ltr train`` and ``ltr tune``.  A run with
    no completed stage leaves no folder behind (or an emptied one, when the
    user named it); completed stages are kept for ``--resume``.
    """
    finished = False
    try:
        with run_log(run_dir):
            t0 = time.perf_counter()
            log.info("%s run %s (seed %d)", "resuming" if resume else "starting", run_dir, cfg.seed)
            for name, ds in sets.items():
                log.info(
                    "data %s: %d queries, %d rows, %d features",
                    name,
                    ds.n_queries,
                    ds.n_rows,
                    ds.n_features,
                )
            try:
                model = _train_model(
                    cfg, settings, sets, run_dir, resume=resume, progress=progress, cluster=cluster
                )
                model.save(run_dir / MODEL_FILE)
                model.save_native(run_dir / _native_model_name(cfg.model.engine))
                metrics = compute_metrics(cfg, model, sets, run_dir)
                if extra:
                    metrics.update(to_jsonable(dict(extra)))
                write_curves(model, metrics["stages"], run_dir, cfg)
                if cfg.importance.enabled:
                    metrics["importance"] = importance_table(cfg, model, sets, run_dir, progress)
                write_atomic(run_dir / "metrics.json", json.dumps(metrics, indent=2) + "\n")
                RunReport.from_run_dir(run_dir).save(run_dir)
            except BaseException as exc:
                log.error("run stopped: %s: %s", type(exc).__name__, exc)
                raise
            log.info("finished in %.1f s", time.perf_counter() - t0)
            mark_done(run_dir)
            finished = True
    except KeyboardInterrupt:
        if resume or (run_dir / "models" / "stages.json").exists():
            raise RunInterrupted(
                f"interrupted; completed stages are kept: finish with: ltr train --resume {run_dir}"
            ) from None
        raise RunInterrupted("interrupted before the first stage completed; nothing kept") from None
    finally:
        if not finished and not resume and not (run_dir / "models" / "stages.json").exists():
            # no stage completed: nothing worth resuming, so leave no half-made folder behind
            remove_run_dir(run_dir, keep_folder=keep_folder)
    return metrics


def _eval_sets(
    cfg: RunConfig, sets: Mapping[str, RankingData], which: Sequence[str] = ("valid", "test")
) -> list[tuple[Any, ...]]:
    """``(name, X, y, offsets[, labels])`` for valid/test; labels of every objective."""
    out: list[tuple[Any, ...]] = []
    names = list(cfg.data.objectives or {})
    for n in which:
        if n not in sets:
            continue
        ds = sets[n]
        entry: tuple[Any, ...] = (n, ds.X, ds.y, ds.offsets)
        if names:
            entry += ({o: ds.labels[o] for o in names},)
        out.append(entry)
    return out


def _train_model(
    cfg: RunConfig,
    settings: TrainSettings,
    sets: Mapping[str, RankingData],
    run_dir: Path | None,
    *,
    resume: bool,
    progress: bool,
    cluster: Any = None,
    callbacks: Sequence[Any] = (),
    eval_at: Sequence[int] | None = None,
    which: Sequence[str] = ("valid", "test"),
) -> RankingModel:
    """Train *settings* on the train split (a trial of a search: no *run_dir*, no checkpoints)."""
    from ltr.engines import train

    stage_dir = None
    if run_dir is not None:
        stage_dir = run_dir / "models"
        stage_dir.mkdir(exist_ok=True)
    if cluster is not None:  # the same builder's settings, trained by ltr.dask
        return cluster.train_model(cfg, settings, _eval_sets(cfg, sets), stage_dir, resume=resume)
    tr = sets["train"]
    labels = {o: tr.labels[o] for o in (cfg.data.objectives or {})} or None
    # data.click: learn from the clicks; data.position: the logged ranking, for unbiased training
    y = logged_column(tr, "click") if "click" in cfg.logged else tr.y
    logged_position = settings.unbiased or settings.position_term
    position = logged_column(tr, "position") if logged_position else None
    if settings.unbiased == "auto" and position is not None:  # choose from the training clicks
        settings, _ = resolve_auto_debiasing(
            settings, cfg.model.objective, tr, y, position, run_dir,
            (cfg.evaluation.eval_at if eval_at is None else eval_at)[0])
        if not uses_position(vars(settings)):
            position = None
    # data.propensity: known per-row propensities instead of learned biases
    # (only when the config asks for ltr's unbiased objective itself: with
    # evaluation.ips.propensity: data they may serve the IPS metrics alone, and a method
    # that unbiased: auto chose learns its own biases)
    weighs = cfg.settings.unbiased is True and cfg.settings.objective == "lambdarank"
    propensity = logged_column(tr, "propensity") if "propensity" in cfg.logged and weighs else None
    return train(
        tr.X,
        y,
        tr.offsets,
        **build_training(settings, labels, position, propensity),
        eval_sets=_eval_sets(cfg, sets, which),
        eval_at=tuple(cfg.evaluation.eval_at if eval_at is None else eval_at),
        stage_dir=stage_dir,
        resume=resume,
        convention=cfg.evaluation.convention,
        progress=progress,
        labels=labels if settings.objectives is not None else None,
        feature_names=list(tr.feature_names),
        categorical=cfg.data.categorical or None,
        callbacks=list(callbacks),
    )


def render_report(run_dir: str | os.PathLike[str]) -> tuple[Path, Path]:
    """(Re)write ``report.md`` and ``report.html`` of a finished run folder."""
    run_dir = Path(run_dir)
    if not run_dir.is_dir():
        raise RunError(f"run folder not found: {str(run_dir)!r}")
    if not (run_dir / "config.yaml").is_file():
        raise RunError(
            f"{str(run_dir)!r} is not a run folder (no config.yaml); give a folder that "
            "ltr train or ltr tune wrote"
        )
    if not (run_dir / DONE_MARKER).exists():
        raise RunError(
            f"{str(run_dir)!r} is not a finished run (no {DONE_MARKER} marker); "
            "finish it with: ltr train --resume " + str(run_dir)
        )
    return RunReport.from_run_dir(run_dir).save(run_dir)


def importance_run(
    target: str | os.PathLike[str],
    overrides: Sequence[str] = (),
    *,
    n_repeats: int | None = None,
    strategy: str | None = None,
    on: str | None = None,
    out: str | os.PathLike[str] | None = None,
    progress: bool | None = None,
) -> RunResult:
    """Permutation importance for a finished run folder, or a new run from a config.

    With a run folder, ``importance.csv``/``importance.png`` are (re)written in
    it and the report re-rendered; with a config, a full run is trained with
    importance enabled.  *n_repeats*, *strategy* and *on* override the
    config's ``importance`` section.  A cluster run's held-out sets come from
    :func:`ltr.runs.cluster.held_out_sets` (parquet training files are read
    on the cluster, never here).
    """
    extra = list(overrides)
    if n_repeats is not None:
        extra.append(f"importance.n_repeats={n_repeats}")
    if strategy is not None:
        extra.append(f"importance.strategy={strategy}")
    if on is not None:
        extra.append(f"importance.evaluate_on={on}")
    extra.append("importance.enabled=true")
    path = Path(target)
    if not path.is_dir():
        cfg = load_config(path, extra)
        return train_run(cfg, out=out, progress=progress)
    run_dir = path
    if not (run_dir / DONE_MARKER).exists():
        raise RunError(f"{str(run_dir)!r} is not a finished run (no {DONE_MARKER} marker)")
    if out is not None:
        raise RunError(
            "--out applies to a CONFIG; with a run folder the results go into that folder"
        )
    for text in overrides:
        if not text.strip().startswith("importance."):
            raise RunError(
                f"--set {text!r}: with a finished run folder only importance.* can be changed "
                "(the model and data are the run's)"
            )
    saved = load_run_config(run_dir)
    raw = config_to_dict(saved)
    cfg = prepare_config(parse_config(raw, overrides=extra, source=run_dir / "config.yaml"))
    model, _ = load_run_model(run_dir)
    if cfg.cluster is not None:  # valid/test as the run made them; its train set stays remote
        from ltr.runs.cluster import held_out_sets

        sets = held_out_sets(cfg)
    else:
        sets = load_data(cfg)
    check_same_data(run_dir, sets)
    with run_log(run_dir):
        summary = importance_table(cfg, model, sets, run_dir, progress_enabled(cfg, progress))
        metrics = json.loads((run_dir / "metrics.json").read_text(encoding="utf-8"))
        metrics["importance"] = {**summary, "computed_by": "ltr importance (after training)"}
        write_atomic(run_dir / "metrics.json", json.dumps(metrics, indent=2) + "\n")
        RunReport.from_run_dir(run_dir).save(run_dir)
    return RunResult.from_run_dir(run_dir)









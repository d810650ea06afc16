"""MLflow tracking of ``ltr train`` and ``ltr tune`` (config ``tracking.mlflow``, ``--mlflow``).

A tracked ``ltr train`` is one MLflow run holding:

* params: the resolved config, flattened to dotted keys (``model.learning_rate``);
* tags: ``ltr.command``, ``ltr.version``, ``ltr.engine``, ``ltr.engine_version``,
  numpy/scikit-learn/Python/MLflow versions, ``ltr.run_dir`` and
  ``ltr.data_digest.<set>`` (the digests ``metrics.json`` records);
* step metrics: every curve of the model's kept rounds, ``<set>.<name>`` at
  step = round, with ltr's names mapped by
  :func:`ltr.tracking.mlflow_metric_name` (``valid.ndcg_at_10``), logged
  in batches when the run ends (stages resumed with ``--resume`` and cluster
  runs included);
* metrics: ``final.<set>.<name>``, per-segment nDCG as
  ``segment.<set>.<segment>.ndcg_at_<k>``, ``n_trees``;
* artifacts: the whole run folder under ``run/``, and the model under
  ``model`` as a pyfunc model whose ``predict(frame)`` equals ``ltr predict``.

A tracked ``ltr tune`` is a parent run (the same, for the refit best trial,
plus ``search.*`` metrics) with one nested run per trial: its sampled
params, its per-round curves (logged as the trial trains), ``value`` and the
tag ``optuna.state``.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ltr.runs.config import RunConfig, config_to_dict

__all__ = ["TrialLog", "TrialTracker", "finish_tracking", "open_tracker", "start_tracking"]


def open_tracker(cfg: RunConfig, uri: str | None = None) -> Any:
    """Return an :class:`ltr.tracking.MlflowCallback` for the run, or None when not tracked.

    *uri* (``--mlflow``) overrides ``tracking.mlflow.tracking_uri`` and tracks
    a config without a ``tracking`` section.

    Raises
    ------
    ImportError
        When MLflow is not installed (naming ``ltr-rank[mlflow]``).
    """
    m = cfg.tracking.mlflow if cfg.tracking is not None else None
    if uri is None and m is None:
        return None
    from ltr._compat import import_mlflow
    from ltr.tracking import MlflowCallback

    import_mlflow()  # the install hint, before any work
    return MlflowCallback(
        tracking_uri=uri if uri is not None else (m.tracking_uri if m else None),
        experiment=m.experiment if m is not None else "ltr",
        run_name=(m.run_name if m is not None else None) or cfg.run_name,
        log_model=False,  # the run's model is logged by finish_tracking
    )


def start_tracking(tracker: Any, cfg: RunConfig, command: str) -> None:
    """Open the MLflow run; log the flattened resolved config and the version tags."""
    from ltr.tracking import library_tags

    tags = library_tags(cfg.model.engine)
    tags["ltr.command"] = command
    tracker.start(config_to_dict(cfg, include_versions=False), tags)


def finish_tracking(tracker: Any, run_dir: Path, metrics: Mapping[str, Any]) -> str:
    """Log final and per-segment metrics, tags, the run folder and the model; close the run.

    Returns
    -------
    str
        The model's URI (``runs:/<run id>/model``).
    """
    from ltr.engines import RankingModel
    from ltr.runs.folder import MODEL_FILE
    from ltr.tracking import mlflow_metric_name

    values: dict[str, float] = {}
    for name, vals in (metrics.get("final") or {}).items():
        for key, value in vals.items():
            if isinstance(value, (int, float)):
                values[f"final.{name}.{mlflow_metric_name(key)}"] = value
    k = metrics.get("segments_k")
    for name, rows in (metrics.get("segments") or {}).items():
        for row in rows:
            seg = str(row.get("segment"))
            for key, value in row.items():
                if key != "segment" and isinstance(value, (int, float)):
                    metric = f"{key}_at_{k}" if key == "ndcg" and k else mlflow_metric_name(key)
                    values[f"segment.{name}.{seg}.{metric}"] = value
    if isinstance(metrics.get("n_trees"), int):
        values["n_trees"] = metrics["n_trees"]
    search = metrics.get("search") or {}
    if isinstance(search.get("best_score"), (int, float)):
        values["search.best_score"] = search["best_score"]
    for state, count in (search.get("trials") or {}).items():
        values[f"search.trials_{state}"] = count
    tracker.log_metrics(values)
    model = RankingModel.load(run_dir / MODEL_FILE)
    # the kept rounds' curves (stages loaded on --resume and cluster runs included)
    for name, curves in model.evals_result.items():
        for key, series in curves.items():
            for step, value in enumerate(series):
                tracker.log_metrics({f"{name}.{mlflow_metric_name(key)}": value}, step=step)
    client = tracker.client
    client.set_tag(tracker.run_id, "ltr.run_dir", str(Path(run_dir).resolve()))
    for name, info in (metrics.get("data") or {}).items():
        if info.get("digest"):
            client.set_tag(tracker.run_id, f"ltr.data_digest.{name}", info["digest"])
    if search.get("best_params"):
        tracker.log_params({"search.best": search["best_params"]})
    tracker.flush()
    client.log_artifacts(tracker.run_id, str(run_dir), "run")
    uri = str(tracker.log_pyfunc(model))
    tracker.end("FINISHED")
    return uri


@dataclass
class TrialLog:
    """One trial's nested MLflow run: its callbacks and its end."""

    tracker: Any
    callbacks: list[Any] = field(default_factory=list)

    def finish(self, state: str, value: float | None) -> None:
        """Record the trial's state (tag ``optuna.state``) and value; close the nested run."""
        self.tracker.client.set_tag(self.tracker.run_id, "optuna.state", state)
        if value is not None:
            self.tracker.log_metrics({"value": value})
        self.tracker.end("FINISHED" if state in ("COMPLETE", "PRUNED") else "FAILED")


class TrialTracker:
    """``trial(number, params)``: a nested run per Optuna trial under *parent*."""

    def __init__(self, parent: Any) -> None:
        self.parent = parent

    @contextmanager
    def trial(self, number: int, params: Mapping[str, Any]) -> Iterator[TrialLog]:
        """Open the nested run of trial *number* with its sampled *params*."""
        from ltr.tracking import MlflowCallback

        p = self.parent
        child = MlflowCallback(
            tracking_uri=p.tracking_uri,
            experiment=p.experiment,
            run_name=f"trial-{number}",
            parent_run_id=p.run_id,
            log_model=False,
        )
        child.start(params, {"optuna.trial": str(number)})
        yield TrialLog(child, [child])

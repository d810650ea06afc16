"""The ``search`` and ``tracking`` sections of a run config (``ltr tune``, MLflow).

``search`` describes ``ltr tune``'s hyper-parameter search: scikit-learn's
grid or randomized search with GroupKFold, or an Optuna study
(:mod:`ltr.runs.optuna_search`); ``tracking.mlflow`` where a run is logged
(:mod:`ltr.runs.track_run`).  :mod:`ltr.runs.config` assembles them into
:class:`~ltr.runs.config.RunConfig`.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field, model_validator

from ltr.runs._section import MAX_INT, Section

__all__ = ["MlflowConfig", "SearchConfig", "TrackingConfig"]

#: Largest count a config may hold (as ltr.runs.config).


class SearchConfig(Section):
    """Hyper-parameter search: GridSearchCV / RandomizedSearchCV with GroupKFold, or Optuna.

    ``method: optuna`` trains each trial on the train split and scores it every
    round on the valid split (``scoring``; the composite nDCG for composite
    runs), so the pruner can stop poor trials early.  ``storage:
    sqlite:///PATH`` with ``study_name`` makes the study resumable and
    shareable between processes (``n_trials`` is then the study's total).
    """

    method: Literal["grid", "random", "optuna"] = "grid"
    param_grid: dict[str, list[Any]] | None = None
    param_distributions: dict[str, Any] | None = None
    n_iter: int = Field(10, ge=1, le=MAX_INT)
    folds: int = Field(3, ge=2, le=MAX_INT)
    scoring: str = Field(
        "ndcg@10", description="scorer name (ltr.scoring.get_scorer): ndcg@10, map@10, mrr, P_5..."
    )
    n_jobs: int = Field(1, ge=1, le=MAX_INT)
    # ---- method: optuna
    sampler: Literal["tpe", "random"] = Field("tpe", description="optuna: the sampler")
    pruner: Literal["median", "hyperband", "none"] = Field(
        "median", description="optuna: prunes trials on the per-round valid metric"
    )
    n_trials: int = Field(
        20, ge=1, le=MAX_INT, description="optuna: trials of the study (all processes together)"
    )
    timeout: float | None = Field(
        None, gt=0, allow_inf_nan=False, description="optuna: seconds before no new trial starts"
    )
    startup_trials: int = Field(
        5, ge=0, le=MAX_INT, description="optuna median pruner: trials never pruned"
    )
    warmup_rounds: int = Field(
        5, ge=0, le=MAX_INT, description="optuna: rounds a trial runs before it can be pruned"
    )
    seed: int | None = Field(
        None, ge=0, le=MAX_INT,
        description="optuna sampler seed (default: the run's); a process joining an existing "
        "study derives its own",
    )
    storage: str | None = Field(
        None, description="optuna: sqlite:///PATH keeps the study (resume, several processes)"
    )
    study_name: str | None = Field(
        None, description="optuna: the study's name in storage (default: output.name)"
    )
    heartbeat_interval: int = Field(
        30, ge=1, le=MAX_INT,
        description="optuna with storage: seconds between a trial's heartbeats; a trial silent "
        "for twice as long (its process killed) is marked failed",
    )

    @model_validator(mode="after")
    def _scoring(self) -> SearchConfig:
        from ltr.metrics.names import SCORER_METRICS, parse_metric_name

        try:
            parse_metric_name(self.scoring, metrics=SCORER_METRICS)
        except (TypeError, ValueError) as exc:
            raise ValueError(f"@scoring: {exc}") from None
        return self

    @model_validator(mode="after")
    def _space(self) -> SearchConfig:
        if self.method == "grid" and not self.param_grid:
            raise ValueError("@param_grid: method 'grid' needs a non-empty param_grid")
        if self.method in ("random", "optuna") and not (
            self.param_distributions or self.param_grid
        ):
            raise ValueError(
                f"@param_distributions: method {self.method!r} needs param_distributions"
            )
        if self.storage is not None and not self.storage.startswith("sqlite:///"):
            raise ValueError(
                f"@storage: must be sqlite:///PATH (an SQLite file), got {self.storage!r}"
            )
        if self.method != "optuna" and (self.storage is not None or self.study_name is not None):
            raise ValueError(
                f"@method: storage and study_name apply to method 'optuna', got {self.method!r}"
            )
        return self


class MlflowConfig(Section):
    """Where ``ltr train``/``ltr tune`` log the run in MLflow (extra ``ltr-rank[mlflow]``)."""

    tracking_uri: str | None = Field(
        None,
        description="MLflow tracking URI: sqlite:///mlflow.db, http://host:5000, a folder "
        "(default: MLflow's own, MLFLOW_TRACKING_URI); --mlflow URI overrides it",
    )
    experiment: str = Field("ltr", min_length=1, description="experiment name (created if missing)")
    run_name: str | None = Field(None, description="run name (default: output.name)")


class TrackingConfig(Section):
    """Experiment tracking of a run."""

    mlflow: MlflowConfig | None = Field(None, description="log the run to MLflow")

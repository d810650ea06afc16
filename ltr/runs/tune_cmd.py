"""``ltr tune``: a grid/random search or an Optuna study, then the best point refit as a run."""

from __future__ import annotations

import json
import logging
import os
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from ltr._io import to_jsonable, write_atomic
from ltr.build import TrainSettings, validate_settings
from ltr.runs.commands import (
    RunResult,
    _check_cluster,
    _fit_and_write,
    _load_checked,
    _tracked,
    _train_model,
)
from ltr.runs.config import (
    RunConfig,
    RunError,
)
from ltr.runs.folder import (
    new_run_dir,
    prepare_config,
    progress_enabled,
    remove_run_dir,
    run_log,
    write_run_config,
)
from ltr.runs.notices import SearchProgress, notice, search_size
from ltr.runs.settings import ranker_from_settings
from ltr.runs.track_run import TrialTracker, finish_tracking, open_tracker

if TYPE_CHECKING:  # pragma: no cover
    from ltr.datasets import RankingData
    from ltr.engines import RankingModel

__all__ = ["tune_run"]

log = logging.getLogger("ltr.runs")


def _check_search_values(space: Mapping[str, Any], where: str) -> None:
    """Check each listed value of a search space by the ``model`` section's rule, before any work.

    The space names ``model`` keys (the estimator's parameters), so a value the
    config would refuse (``num_leaves: [1, 31]``) is refused here with its
    position, instead of failing inside cross-validation.
    """
    from pydantic import ValidationError

    from ltr.runs._schema_errors import format_validation_error
    from ltr.runs.training_config import YAML_FORMS, ModelConfig

    for name, values in space.items():
        if not isinstance(values, list) or name in YAML_FORMS:
            continue
        for i, value in enumerate(values):
            try:
                ModelConfig.model_validate({name: value})
            except ValidationError as exc:
                reason = format_validation_error(exc, None, ModelConfig).split(": ", 1)[-1]
                raise RunError(f"search.{where}.{name}[{i}]: {reason}") from None


def _search_X(cfg: RunConfig, ds: RankingData) -> Any:
    """Return the search's ``X``: with ``data.categorical``, those columns as ``category``.

    The ranker then fits its coding on each fold's training part, as a run does on its
    training set.
    """
    if not cfg.data.categorical:
        return ds.X
    import pandas as pd

    frame = pd.DataFrame(ds.X, columns=list(ds.feature_names))
    return frame.astype({c: "category" for c in cfg.data.categorical})


def tune_run(
    cfg: RunConfig,
    *,
    out: str | os.PathLike[str] | None = None,
    progress: bool | None = None,
    mlflow: str | None = None,
) -> RunResult:
    """Search the config's ``search`` space, then train the best settings as a full run.

    The search (GridSearchCV/RandomizedSearchCV over
    :class:`~ltr.estimator.LambdaMARTRanker`, GroupKFold by query, the
    configured nDCG scorer) runs on the training set, without early stopping.
    The best parameters then replace the config's settings and are trained
    exactly as ``ltr train`` would: same eval sets, early stopping,
    checkpoints, model files, ``metrics.json`` format (plus a ``search``
    entry), curves and report.  ``search.csv`` holds ``cv_results_``.

    With ``search.method: optuna`` the search is an Optuna study instead
    (:mod:`ltr.runs.optuna_search`): trials train on the train split and are
    scored and pruned per round on the valid split; ``search.csv`` holds every
    trial with its state and the report shows the study's plots.

    Tracked (*mlflow* URI or ``tracking.mlflow``), the tune is one MLflow run
    (the refit best trial, as ``ltr train`` logs it) with a nested run per
    trial (per parameter point of a grid/random search).

    Returns
    -------
    RunResult
        The finished run folder ``<name>-<timestamp>`` and its metrics.
    """
    if cfg.search is None:
        src = f"{cfg.source}: " if cfg.source else ""
        raise RunError(f"{src}search: the config has no search section (needed by ltr tune)")
    cfg = prepare_config(cfg)
    search_cfg = cfg.search
    if search_cfg is None:  # pragma: no cover - checked above
        raise RunError("search: missing")
    tracker = open_tracker(cfg, mlflow)
    if search_cfg.method == "optuna":
        return _tune_optuna(cfg, out=out, progress=progress, tracker=tracker)
    import sklearn
    from sklearn.model_selection import GridSearchCV, GroupKFold, RandomizedSearchCV

    from ltr.runs.search_space import parse_space, to_scipy
    from ltr.scoring import get_scorer

    try:
        scorer = get_scorer(search_cfg.scoring)
    except (TypeError, ValueError) as exc:
        raise RunError(f"search.scoring: {exc}") from exc
    # the search varies the unresolved parameters (objective=None stays inferred per candidate)
    from ltr.runs.training_config import training_settings

    settings = training_settings(cfg.model, cfg.seed)
    _check_cluster(cfg)
    space = (
        search_cfg.param_grid
        if search_cfg.method == "grid"
        else (search_cfg.param_distributions or search_cfg.param_grid)
    )
    if space is None:  # pragma: no cover - the schema requires a space
        raise RunError("search: no parameter space")
    where = "param_grid" if search_cfg.method == "grid" else "param_distributions"
    parsed = parse_space(space, f"search.{where}")  # names checked for grid too
    _check_search_values(space, where)
    distributions = space if search_cfg.method == "grid" else to_scipy(parsed, f"search.{where}")
    sets = _load_checked(cfg)
    tr = sets["train"]
    if tr.n_queries < search_cfg.folds:
        raise RunError(
            f"search.folds: {search_cfg.folds} folds need at least as many training queries, "
            f"got {tr.n_queries}"
        )
    # cross-validation folds have no eval set of their own: no early stopping inside the search
    estimator = ranker_from_settings(
        settings.replace(early_stopping_rounds=None), eval_at=(cfg.evaluation.k,)
    )
    labels_y: Any = tr.y
    if settings.objectives is not None:
        import pandas as pd

        labels_y = pd.DataFrame({o: tr.labels[o] for o in settings.objectives})
    cv = GroupKFold(n_splits=search_cfg.folds)
    search: Any
    n_fits = search_cfg.folds * search_size(
        search_cfg.method, distributions, search_cfg.n_iter, cfg.seed
    )
    in_process = search_cfg.n_jobs == 1  # a bar moves only when the fits run here
    ticking = SearchProgress(scorer, n_fits, progress_enabled(cfg, progress) and in_process)
    if search_cfg.method == "grid":
        search = GridSearchCV(
            estimator, distributions, scoring=ticking, cv=cv, n_jobs=search_cfg.n_jobs, refit=False
        )
    else:
        search = RandomizedSearchCV(
            estimator,
            distributions,
            n_iter=search_cfg.n_iter,
            scoring=ticking,
            cv=cv,
            n_jobs=search_cfg.n_jobs,
            refit=False,
            random_state=cfg.seed,
        )
    run_dir = new_run_dir(cfg, out)
    write_run_config(run_dir, cfg)
    with _tracked(tracker, cfg, "tune"):
        try:
            with run_log(run_dir):
                notice.info(
                    "search %s over %s: %d fits (%d GroupKFold folds on %d queries)%s",
                    search_cfg.method,
                    ", ".join(sorted(space)),
                    n_fits,
                    search_cfg.folds,
                    tr.n_queries,
                    "" if in_process else f" on {search_cfg.n_jobs} processes, no per-fit progress",
                )
                ticking.start()
                with sklearn.config_context(enable_metadata_routing=True):
                    search.fit(_search_X(cfg, tr), labels_y, qid=tr.qid, groups=tr.qid)
                ticking.close()
        except BaseException:
            ticking.close()
            remove_run_dir(run_dir, keep_folder=out is not None)
            raise
        import pandas as pd

        results = search.cv_results_
        if tracker is not None:  # one nested run per parameter point
            nested = TrialTracker(tracker)
            for i, point in enumerate(results["params"]):
                with nested.trial(i, point) as trial_log:
                    trial_log.finish("COMPLETE", float(results["mean_test_score"][i]))
        frame = pd.DataFrame(
            {
                **{
                    f"param_{k}": [json.dumps(to_jsonable(p.get(k))) for p in results["params"]]
                    for k in space
                },
                "mean_test_score": results["mean_test_score"],
                "std_test_score": results["std_test_score"],
                "rank_test_score": results["rank_test_score"],
            }
        ).sort_values("rank_test_score", kind="stable")
        write_atomic(run_dir / "search.csv", frame.to_csv(index=False))
        best = dict(search.best_params_)
        summary = {
            "search": {
                "method": search_cfg.method,
                "scoring": search_cfg.scoring,
                "folds": search_cfg.folds,
                "best_params": best,
                "best_score": float(search.best_score_),
                "results": frame.head(20).to_dict(orient="records"),
            }
        }
        try:
            best_settings = validate_settings(settings.replace(**best))
        except (TypeError, ValueError) as exc:  # pragma: no cover - every candidate was fitted
            raise RunError(f"search: best parameters {best!r}: {exc}") from exc
        metrics = _fit_and_write(
            cfg,
            best_settings,
            sets,
            run_dir,
            resume=False,
            progress=progress_enabled(cfg, progress),
            keep_folder=out is not None,
            extra=summary,
        )
        if tracker is not None:
            finish_tracking(tracker, run_dir, metrics)
    return RunResult(run_dir, metrics)


def _tune_optuna(
    cfg: RunConfig, *, out: str | os.PathLike[str] | None, progress: bool | None, tracker: Any
) -> RunResult:
    """``search.method: optuna``: the study (:mod:`ltr.runs.optuna_search`), then the refit."""
    from ltr.runs import optuna_search
    from ltr.runs.training_config import training_settings

    settings = training_settings(cfg.model, cfg.seed)
    _check_cluster(cfg)
    optuna_search.check_study_config(cfg)
    if cfg.search is not None:  # each listed value by the model section's rule, before any work
        where = "param_distributions" if cfg.search.param_distributions else "param_grid"
        _check_search_values(cfg.search.param_distributions or cfg.search.param_grid or {}, where)
    sets = _load_checked(cfg)
    if "valid" not in sets:
        raise RunError(
            "search.method: optuna scores each trial per round on the valid split; set "
            "data.split.valid > 0 or data.valid"
        )
    _, k = optuna_search.trial_metric(cfg)
    search = cfg.search
    assert search is not None  # tune_run checked it
    show = progress_enabled(cfg, progress)
    run_dir = new_run_dir(cfg, out)
    write_run_config(run_dir, cfg)

    def fit(trial_settings: TrainSettings, callbacks: list[Any]) -> RankingModel:
        return _train_model(
            cfg, validate_settings(trial_settings), sets, None, resume=False, progress=False,
            callbacks=callbacks, eval_at=(k,), which=("valid",),
        )

    with _tracked(tracker, cfg, "tune"):
        try:
            with run_log(run_dir):
                space = search.param_distributions or search.param_grid or {}
                log.info("optuna study over %s on %d training queries", sorted(space),
                         sets["train"].n_queries)
                nested = TrialTracker(tracker) if tracker is not None else None
                result = optuna_search.run_study(cfg, settings, fit, progress=show,
                                                 tracker=nested)
                write_atomic(run_dir / "search.csv", result.table.to_csv(index=False))
                plots = optuna_search.save_plots(result.study, run_dir)
                log.info("study: %s; best trial %d, %s %.6f", result.counts, result.best_trial,
                         result.key, result.best_value)
        except BaseException:
            remove_run_dir(run_dir, keep_folder=out is not None)
            raise
        metrics = _fit_and_write(
            cfg,
            validate_settings(settings.replace(**result.best_params)),
            sets,
            run_dir,
            resume=False,
            progress=show,
            keep_folder=out is not None,
            extra={"search": optuna_search.summary(result, cfg, plots)},
        )
        if tracker is not None:
            finish_tracking(tracker, run_dir, metrics)
    return RunResult(run_dir, metrics)

"""``search.method: optuna``: an Optuna study over the training settings, pruned per round.

Each trial samples the search space (:mod:`ltr.runs.search_space`), trains on
the run's train split and is scored every round on its valid split:
:class:`PruningReporter`, an :class:`ltr.engines.RoundCallback` fed by the
engines' own per-round hooks, reports the ranking metric (``search.scoring``'s
nDCG@k, or the composite nDCG@k for a composite run, under the run's
convention) to the trial and raises ``optuna.TrialPruned`` when the pruner
says so.  The trial's value is the metric of its final (kept) model.

With ``search.storage: sqlite:///PATH`` the study lives in that file:

* a rerun with the same ``study_name`` resumes it; a trial whose process was
  killed stops sending heartbeats and is marked failed (Optuna's heartbeat,
  ``search.heartbeat_interval``), then its slot is run again;
* several processes share it; ``n_trials`` is the study's total of complete
  and pruned trials.  A process checks the total before each trial; a trial
  that two processes started at once past the total is marked failed with the
  user attribute ``skipped`` and does no work.

The sampler's seed (``search.seed``, default the run's) makes a study run by
one process reproducible; a process that joins an existing study derives its
own seed from it, its process id and the clock.
"""

from __future__ import annotations

import logging
import os
import time
import warnings
from collections.abc import Callable, Mapping, Sequence
from contextlib import ExitStack
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from ltr._compat import import_optuna, import_tqdm
from ltr.engines import RoundCallback, RoundInfo
from ltr.metrics.names import format_metric_name, parse_metric_name
from ltr.runs.config import RunConfig, RunError
from ltr.runs.search_space import ParamSpace, parse_space

if TYPE_CHECKING:  # pragma: no cover
    from ltr.build import TrainSettings
    from ltr.engines import RankingModel

__all__ = [
    "PruningReporter",
    "StudyResult",
    "check_study_config",
    "run_study",
    "save_plots",
    "summary",
    "trial_metric",
    "trials_table",
]

log = logging.getLogger("ltr.runs")

#: Images of a tuning report, written into the run folder.
PLOTS = {
    "search_history": "plot_optimization_history",
    "search_importance": "plot_param_importances",
    "search_parallel": "plot_parallel_coordinate",
}


def trial_metric(cfg: RunConfig) -> tuple[str, int]:
    """Return the per-round key a trial is scored on, and its cut-off.

    ``search.scoring`` must be an nDCG name (``"ndcg@10"``); a composite run is
    scored on ``composite_ndcg@k`` with the same ``k``.

    Raises
    ------
    RunError
        For a scoring that is not nDCG@k, or that names a convention (trials use the run's).
    """
    assert cfg.search is not None
    try:
        parsed = parse_metric_name(cfg.search.scoring)
    except (TypeError, ValueError) as exc:
        raise RunError(f"search.scoring: {exc}") from exc
    if parsed.metric != "ndcg" or parsed.k is None:
        raise RunError(
            f"search.scoring: method optuna scores trials per round by nDCG@k, "
            f"got {cfg.search.scoring!r}; use e.g. ndcg@10"
        )
    if parsed.convention is not None:
        raise RunError(
            f"search.scoring: method optuna uses the run's convention (evaluation.convention), "
            f"got {cfg.search.scoring!r}; drop ':{parsed.convention}'"
        )
    metric = "composite_ndcg" if cfg.model.objectives is not None else "ndcg"
    return format_metric_name(metric, parsed.k), parsed.k


def check_study_config(cfg: RunConfig) -> None:
    """Every error of the ``search`` section an Optuna study would meet, before any work.

    Raises
    ------
    RunError
        For a bad space, scoring, or storage folder; ``ImportError`` without optuna.
    """
    optuna = import_optuna()
    s = cfg.search
    assert s is not None
    where = "search.param_distributions" if s.param_distributions else "search.param_grid"
    parse_space(s.param_distributions or s.param_grid or {}, where)
    trial_metric(cfg)
    _storage(optuna, cfg, check_only=True)


class PruningReporter(RoundCallback):
    """Reports each round's valid metric to an Optuna trial; prunes when the pruner says so.

    Parameters
    ----------
    trial : optuna.Trial
        The running trial.
    key : str
        The recorded metric (``"ndcg@10"`` or ``"composite_ndcg@10"``).
    eval_set : str, default="valid"
        The eval set whose metric is reported.
    """

    def __init__(self, trial: Any, key: str, eval_set: str = "valid") -> None:
        self.trial = trial
        self.key = key
        self.eval_set = eval_set
        self.last: float | None = None
        self.rounds = 0

    def after_round(self, info: RoundInfo) -> None:
        """Report the round's value at step ``info.round``; raise ``TrialPruned`` to stop."""
        value = info.metrics[self.eval_set][self.key]
        self.last = value
        self.rounds = info.round + 1
        self.trial.report(value, step=info.round)
        if self.trial.should_prune():
            why = f"pruned at round {info.round} ({self.key} {value:.6g})"
            raise import_optuna().TrialPruned(why)


@dataclass
class StudyResult:
    """What :func:`run_study` returns: the study, its best point and the trials' table."""

    study: Any
    best_params: dict[str, Any]
    best_value: float
    best_trial: int
    key: str
    seed: int
    seconds: float
    table: Any  # pandas DataFrame, one row per trial
    counts: dict[str, int] = field(default_factory=dict)


def _sampler(optuna: Any, name: str, seed: int) -> Any:
    if name == "random":
        return optuna.samplers.RandomSampler(seed=seed)
    return optuna.samplers.TPESampler(seed=seed)


def _pruner(optuna: Any, cfg: RunConfig) -> Any:
    s = cfg.search
    assert s is not None
    if s.pruner == "none":
        return optuna.pruners.NopPruner()
    if s.pruner == "hyperband":
        return optuna.pruners.HyperbandPruner(
            min_resource=max(1, s.warmup_rounds), max_resource=cfg.n_rounds
        )
    return optuna.pruners.MedianPruner(
        n_startup_trials=s.startup_trials, n_warmup_steps=s.warmup_rounds
    )


def _storage(optuna: Any, cfg: RunConfig, *, check_only: bool = False) -> Any:
    s = cfg.search
    assert s is not None
    if s.storage is None:
        return None
    path = Path(s.storage[len("sqlite:///") :])
    if not path.parent.is_dir():
        raise RunError(
            f"search.storage: folder {str(path.parent)!r} does not exist; create it or use "
            f"another path (got {s.storage!r})"
        )
    if check_only:
        return None
    for attempt in range(5):  # processes creating one new file at once race on its tables
        try:
            with warnings.catch_warnings():  # heartbeats are "experimental" since Optuna 2.9
                warnings.simplefilter("ignore", optuna.exceptions.ExperimentalWarning)
                return optuna.storages.RDBStorage(
                    s.storage,
                    engine_kwargs={"connect_args": {"timeout": 60}},
                    heartbeat_interval=s.heartbeat_interval,
                    grace_period=2 * s.heartbeat_interval,
                )
        except Exception:
            if attempt == 4:
                raise
            time.sleep(0.5 + attempt)
    return None  # pragma: no cover - the loop returns or raises


def _open_study(optuna: Any, cfg: RunConfig) -> tuple[Any, int]:
    """Create the study (seed as configured) or join the stored one (a derived seed)."""
    s = cfg.search
    assert s is not None
    seed = s.seed if s.seed is not None else cfg.seed
    storage = _storage(optuna, cfg)
    name = s.study_name or cfg.run_name
    pruner = _pruner(optuna, cfg)
    if storage is None:
        study = optuna.create_study(
            direction="maximize", sampler=_sampler(optuna, s.sampler, seed), pruner=pruner,
            study_name=name,
        )
        return study, seed
    try:
        study = optuna.create_study(
            direction="maximize", storage=storage, study_name=name,
            sampler=_sampler(optuna, s.sampler, seed), pruner=pruner,
        )
        return study, seed
    except optuna.exceptions.DuplicatedStudyError:
        pass
    derived = int(np.random.SeedSequence([seed, os.getpid(), time.time_ns()]).generate_state(1)[0])
    study = optuna.load_study(
        study_name=name, storage=storage, sampler=_sampler(optuna, s.sampler, derived),
        pruner=pruner,
    )
    if study.direction != optuna.study.StudyDirection.MAXIMIZE:
        raise RunError(f"search.study_name: stored study {name!r} does not maximise; rename it")
    return study, derived


def _suggest(trial: Any, p: ParamSpace) -> Any:
    """Sample *p* through the trial's public ``suggest_*`` API."""
    if p.kind == "categorical":
        return trial.suggest_categorical(p.name, list(p.choices))
    assert p.low is not None and p.high is not None  # set for int and float
    if p.kind == "int":
        return trial.suggest_int(
            p.name, int(p.low), int(p.high), step=int(p.step or 1), log=p.log
        )
    return trial.suggest_float(p.name, p.low, p.high, step=p.step, log=p.log)


class _Skipped(Exception):
    """A trial started past the study's total by a concurrent process."""


def _taken(optuna: Any, trials: Sequence[Any], below: int | None = None) -> int:
    states = (
        optuna.trial.TrialState.COMPLETE,
        optuna.trial.TrialState.PRUNED,
        optuna.trial.TrialState.RUNNING,
    )
    return sum(t.state in states and (below is None or t.number < below) for t in trials)


def run_study(
    cfg: RunConfig,
    settings: TrainSettings,
    fit: Callable[[TrainSettings, list[Any]], RankingModel],
    *,
    progress: bool = False,
    tracker: Any = None,
) -> StudyResult:
    """Run (or resume, or join) the config's Optuna study; return its best point.

    Parameters
    ----------
    cfg : RunConfig
        A validated config with ``search.method: optuna``.
    settings : TrainSettings
        The config's settings; each trial replaces the sampled ones.
    fit : callable
        ``fit(settings, callbacks) -> RankingModel``: trains on the train split
        with the valid split as the only eval set (``ltr.runs.commands``).
    progress : bool
        A tqdm bar counting the study's finished trials.
    tracker : object, optional
        ``tracker.trial(number, params)``: a context manager yielding an object
        with ``callbacks`` and ``finish(state, value)`` (MLflow's nested runs).

    Returns
    -------
    StudyResult
    """
    optuna = import_optuna()
    s = cfg.search
    assert s is not None
    space_raw = s.param_distributions or s.param_grid or {}
    space = parse_space(space_raw, "search.param_distributions" if s.param_distributions
                        else "search.param_grid")
    key, _ = trial_metric(cfg)
    study, seed = _open_study(optuna, cfg)
    total = s.n_trials

    def objective(trial: Any) -> float:
        if _taken(optuna, study.get_trials(deepcopy=False), below=trial.number) >= total:
            trial.set_user_attr("skipped", f"the study already had its {total} trials")
            raise _Skipped
        trial.set_user_attr("pid", os.getpid())
        params = {name: _suggest(trial, p) for name, p in space.items()}
        reporter = PruningReporter(trial, key)
        with ExitStack() as stack:
            trial_log = None
            if tracker is not None:
                trial_log = stack.enter_context(tracker.trial(trial.number, params))
            state, value = "FAIL", None
            try:
                extra = list(getattr(trial_log, "callbacks", []))
                model = fit(settings.replace(**params), [reporter, *extra])
                value = float(model.evals_result["valid"][key][-1])
                state = "COMPLETE"
            except optuna.TrialPruned:
                state, value = "PRUNED", reporter.last
                raise
            except (TypeError, ValueError) as exc:  # a sampled point the engines refuse
                trial.set_user_attr("error", f"{type(exc).__name__}: {exc}")
                raise
            finally:
                trial.set_user_attr("rounds", reporter.rounds)
                if trial_log is not None:
                    trial_log.finish(state, value)
        return value

    tqdm = import_tqdm()
    t0 = time.perf_counter()
    errors = 0
    done = _taken(optuna, study.get_trials(deepcopy=False))
    bar = tqdm(total=total, initial=min(done, total), disable=not progress, unit="trial",
               desc="ltr tune", leave=False)
    try:
        while True:
            if s.storage is not None:
                with warnings.catch_warnings():  # heartbeats are "experimental" since 2.9
                    warnings.simplefilter("ignore", optuna.exceptions.ExperimentalWarning)
                    optuna.storages.fail_stale_trials(study)  # a killed process's trial: failed
            trials = study.get_trials(deepcopy=False)
            now = min(_taken(optuna, trials), total)
            bar.update(now - bar.n)
            if now >= total:
                break
            if s.timeout is not None and time.perf_counter() - t0 >= s.timeout:
                log.info("search.timeout: %.0f s reached after %d trials", s.timeout, now)
                break
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", optuna.exceptions.ExperimentalWarning)
                study.optimize(objective, n_trials=1, catch=(_Skipped, TypeError, ValueError))
            last = study.get_trials(deepcopy=False)[-1]
            if "skipped" in last.user_attrs:
                break
            if "error" in last.user_attrs:
                log.warning("trial %d failed: %s", last.number, last.user_attrs["error"])
                errors += 1
                if errors >= total:  # failed trials do not count: stop rather than loop
                    break
        bar.update(min(_taken(optuna, study.get_trials(deepcopy=False)), total) - bar.n)
    finally:
        bar.close()
    seconds = time.perf_counter() - t0
    table = trials_table(study, list(space))
    completed = [t for t in study.get_trials(deepcopy=False)
                 if t.state == optuna.trial.TrialState.COMPLETE]
    if not completed:
        raise RunError(
            f"search: no trial of study {study.study_name!r} completed "
            f"({_counts(table)}); see search.csv and the log"
        )
    best = study.best_trial
    return StudyResult(
        study=study, best_params=dict(best.params), best_value=float(best.value),
        best_trial=best.number, key=key, seed=seed, seconds=seconds, table=table,
        counts=_counts(table),
    )


def _counts(table: Any) -> dict[str, int]:
    states = ("complete", "pruned", "fail", "running")
    return {st: int((table["state"] == st).sum()) if len(table) else 0 for st in states}


def trials_table(study: Any, names: Sequence[str]) -> Any:
    """One row per trial: number, state, value, params, rounds run, seconds, notes."""
    import json

    import pandas as pd

    rows = []
    for t in study.get_trials(deepcopy=False):
        seconds = None
        if t.datetime_start is not None and t.datetime_complete is not None:
            seconds = (t.datetime_complete - t.datetime_start).total_seconds()
        rows.append(
            {
                "number": t.number,
                "state": t.state.name.lower(),
                "value": t.value,
                **{f"param_{n}": json.dumps(t.params.get(n)) for n in names},
                "rounds": t.user_attrs.get("rounds"),
                "seconds": seconds,
                "note": t.user_attrs.get("error") or t.user_attrs.get("skipped") or "",
            }
        )
    return pd.DataFrame(rows)


def save_plots(study: Any, run_dir: Path) -> list[str]:
    """Write the optimisation history, parameter importances and parallel coordinates.

    Uses ``optuna.visualization.matplotlib``; a plot Optuna cannot draw (too
    few complete trials, a single parameter for importances) is left out with
    a log line.  Returns the image names written (``search_history``...).
    """
    from ltr._compat import import_matplotlib_pyplot
    from ltr._io import write_png

    plt = import_matplotlib_pyplot()
    optuna = import_optuna()
    written: list[str] = []
    for name, func in PLOTS.items():
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            try:
                ax = getattr(optuna.visualization.matplotlib, func)(study)
            except (ValueError, RuntimeError, ZeroDivisionError, IndexError) as exc:
                log.info("%s not drawn: %s", name, exc)
                continue
        fig = ax.figure if hasattr(ax, "figure") else np.ravel(ax)[0].figure
        fig.set_size_inches(8, 5)
        fig.tight_layout()
        write_png(fig, run_dir / f"{name}.png", dpi=90)
        plt.close(fig)
        written.append(name)
    return written


def summary(result: StudyResult, cfg: RunConfig, plots: Sequence[str]) -> dict[str, Any]:
    """Return the ``search`` entry of ``metrics.json`` for an Optuna study."""
    s = cfg.search
    assert s is not None
    return {
        "method": "optuna",
        "sampler": s.sampler,
        "pruner": s.pruner,
        "scoring": result.key + " (valid, per round)",
        "study_name": result.study.study_name,
        "storage": s.storage,
        "seed": result.seed,
        "n_trials": s.n_trials,
        "trials": result.counts,
        "seconds": round(result.seconds, 3),
        "best_trial": result.best_trial,
        "best_params": result.best_params,
        "best_score": result.best_value,
        "plots": list(plots),
        "results": _top(result.table),
    }


def _top(table: Any, n: int = 20) -> list[Mapping[str, Any]]:
    done = table[table["state"] == "complete"].sort_values("value", ascending=False, kind="stable")
    return list(done.head(n).to_dict(orient="records"))

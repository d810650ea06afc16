"""The training loop: stage by stage over one adapter, with checkpoints and resume.

One loop for one process and for a cluster: the stages run on an executor,
the adapter itself (:class:`~ltr.engines._protocol.EngineAdapter`) or the
spec's distributed placement (:class:`~ltr.engines._protocol.Placement`,
e.g. :mod:`ltr.dask`); only where the rows live and how workers meet
differ.  Training never changes the caller's objective: it trains a copy
(:func:`~ltr.engines._objective.training_objective`) whose every gradient
call is for the global round ``stage first round + engine's local index``.

:func:`ltr.objectives.schedules.stages_of` splits the schedule into runs of equal ``k``;
each stage is one engine training continued from the previous stage's model
(the native objective rebuilt for that stage's ``k``), on engine data built
once per training (:meth:`EngineAdapter.prepare`).  A custom objective follows
the schedule round by round by itself, so without early stopping or
checkpoints all its rounds run in one engine call.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from ltr._compat import import_tqdm
from ltr._io import to_jsonable
from ltr.engines._checkpoint import fingerprint, load_completed, write_stage
from ltr.engines._model import RankingModel
from ltr.engines._objective import (
    ObjectiveCall,
    objective_fields,
    position_learning_rate,
    training_objective,
)
from ltr.engines._recorder import Recorder
from ltr.engines._registry import get_adapter
from ltr.engines._spec import TrainSpec

__all__ = ["limit_numba_threads", "run_training"]


@contextmanager
def limit_numba_threads(n_jobs: int | None) -> Iterator[None]:
    """Let ``n_jobs`` bound the metric kernels' threads inside the block.

    The previous count is restored on leaving, on error too.  On a busy
    machine numba's parallel kernels with more threads than free cores are an
    order of magnitude slower on eval-set sized inputs.

    Parameters
    ----------
    n_jobs : int or None
        Thread count; ``None`` or < 1 leaves numba's setting alone.
    """
    if n_jobs is None or n_jobs < 1:
        yield
        return
    import numba

    before = numba.get_num_threads()
    # numba.config sets its attributes at import time, invisible to a type checker
    max_threads: int = numba.config.NUMBA_NUM_THREADS  # type: ignore[attr-defined]
    numba.set_num_threads(max(1, min(n_jobs, max_threads)))
    try:
        yield
    finally:
        numba.set_num_threads(before)


def _bias_state(objective: Any) -> dict[str, Any] | None:
    """Return the objective's learned position-bias state (JSON-able), or None."""
    if objective is None or not getattr(objective, "unbiased", False):
        return None
    get = getattr(objective, "bias_state", None)
    return None if get is None else to_jsonable(get())


def _term_state(objective: Any) -> dict[str, Any] | None:
    """Return the objective's position-term offsets (JSON-able), or None without the term."""
    if objective is None or not getattr(objective, "position_term", False):
        return None
    return to_jsonable(objective.position_term_state())


def _restore_term_state(objective: Any, rec: dict[str, Any], file: Any) -> None:
    """Put the last completed stage's position offsets back into the objective."""
    if objective is None or not getattr(objective, "position_term", False):
        return
    state = rec.get("position_term")
    if state is None:
        raise ValueError(
            f"stages.json has no position-term offsets for stage file {str(file)!r}, which a "
            "position_term objective needs to resume identically; start the run again "
            "without resume"
        )
    objective.set_position_term_state(state)


def _restore_bias_state(objective: Any, rec: dict[str, Any], file: Any) -> None:
    """Put the last completed stage's learned t+/t- back into the objective before resuming."""
    if objective is None or not getattr(objective, "unbiased", False):
        return
    state = rec.get("bias_state")
    if state is None:
        raise ValueError(
            f"stages.json has no learned position bias for stage file {str(file)!r}, which an "
            "unbiased objective needs to resume identically; start the run again without resume"
        )
    objective.set_bias_state(state)


class _Stages:
    """Accumulates the per-stage records and the concatenated metric curves."""

    def __init__(self, spec: TrainSpec) -> None:
        self.spec = spec
        self.evals_result: dict[str, dict[str, list[float]]] = {
            ev.name: {} for ev in spec.eval_sets
        }
        self.stages: list[dict[str, Any]] = []
        self.any_early_stop = False

    def add(
        self, index: int, rec: dict[str, Any], stage_evals: dict[str, dict[str, list[float]]]
    ) -> None:
        k, first, n_rounds = self.spec.plan[index]
        for name, metrics in stage_evals.items():
            for key, values in metrics.items():
                self.evals_result[name].setdefault(key, []).extend(values)
        path = None
        if rec.get("file") is not None and self.spec.stage_dir is not None:
            path = str(self.spec.stage_dir / rec["file"])
        self.any_early_stop = self.any_early_stop or bool(rec.get("early_stopped"))
        self.stages.append(
            {
                "k": k,
                "first_round": first,
                "n_rounds": n_rounds,
                "best_iteration": rec["best_iteration"],
                "rounds_run": rec["rounds_run"],
                "early_stopped": rec["early_stopped"],
                "path": path,
                "metrics": {
                    name: {key: values[-1] for key, values in metrics.items() if values}
                    for name, metrics in stage_evals.items()
                },
            }
        )


def run_training(spec: TrainSpec) -> RankingModel:
    """Train stage by stage; see :func:`ltr.engines.train`.

    Parameters
    ----------
    spec : TrainSpec
        The validated request (:func:`ltr.engines._spec.make_spec` or
        :func:`~ltr.engines._spec.spec_from_rows`); not checked again here.

    Returns
    -------
    RankingModel
    """
    tqdm = import_tqdm()
    adapter = get_adapter(spec.engine)
    executor: Any = adapter if spec.placement is None else spec.placement
    params = adapter.base_params(spec)
    run_id = ""
    completed: list[dict[str, Any]] = []
    if spec.stage_dir is not None:  # the data digest is needed only to checkpoint/resume
        run_id = fingerprint(spec, params)
        spec.stage_dir.mkdir(parents=True, exist_ok=True)
        completed = load_completed(spec.stage_dir, spec.resume, run_id)

    # the training's own objective: the caller's object is never called nor changed
    objective = None if spec.objective is None else training_objective(spec.objective)
    position_learning_rate(objective, params)
    acc = _Stages(spec)
    booster = None
    data = None  # engine data, built on the first stage that trains
    bar = tqdm(
        total=spec.num_boost_round,
        disable=not spec.progress,
        unit="round",
        desc=f"ltr[{spec.engine}]",
        leave=False,
    )
    one_call = (
        objective is not None
        and spec.early_stopping_rounds is None
        and spec.stage_dir is None
        and len(spec.plan) > 1
    )
    try:
        with limit_numba_threads(spec.n_jobs):
            if one_call:
                recorder = Recorder(spec, spec.plan[0][0], bar)
                call: ObjectiveCall | None = ObjectiveCall(objective, spec.sample_weight, 0)
                trained = executor.train_stage(
                    spec,
                    executor.prepare(spec, params),
                    params,
                    0,
                    spec.plan[0][0],
                    spec.num_boost_round,
                    None,
                    call,
                    recorder,
                )
                booster = adapter.truncate(trained, spec.num_boost_round)
                history = recorder.kept_history()
                for index, (_, first, n_rounds) in enumerate(spec.plan):
                    rec: dict[str, Any] = {
                        "best_iteration": n_rounds,
                        "rounds_run": n_rounds,
                        "early_stopped": False,
                    }
                    acc.add(
                        index,
                        rec,
                        {
                            name: {
                                key: values[first : first + n_rounds]
                                for key, values in metrics.items()
                            }
                            for name, metrics in history.items()
                        },
                    )
            for index, (k, first, n_rounds) in enumerate([] if one_call else spec.plan):
                if index < len(completed):
                    rec = completed[index]
                    if (rec["k"], rec["first_round"], rec["n_rounds"]) != (k, first, n_rounds):
                        raise ValueError(
                            f"stage {index} in stages.json does not match the schedule"
                        )
                    if index == len(completed) - 1:
                        file = spec.stage_dir / rec["file"]  # type: ignore[operator]
                        booster = adapter.from_string(
                            file.read_text(encoding="utf-8"), source=str(file)
                        )
                        _restore_bias_state(objective, rec, file)
                        _restore_term_state(objective, rec, file)
                    stage_evals = rec.get("evals", {})
                    bar.update(n_rounds)
                    acc.add(index, rec, stage_evals)
                    continue
                bar.set_postfix(stage=index, k=k)
                # the stage's first global round: the schedule's, also after early stopping
                call = None if objective is None else ObjectiveCall(
                    objective, spec.sample_weight, first
                )
                if data is None:
                    data = executor.prepare(spec, params)
                recorder = Recorder(spec, k, bar)
                before = 0 if booster is None else adapter.num_rounds(booster)
                trained = executor.train_stage(
                    spec, data, params, index, k, n_rounds, booster, call, recorder
                )
                kept = recorder.kept_rounds()
                bar.update(n_rounds - recorder.rounds)
                booster = adapter.truncate(trained, before + kept)
                stage_evals = recorder.kept_history()
                rec = {
                    "k": k,
                    "first_round": first,
                    "n_rounds": n_rounds,
                    "rounds_run": recorder.rounds,
                    "best_iteration": kept,
                    "early_stopped": recorder.rounds < n_rounds,
                    "n_trees_total": before + kept,
                    "file": None,
                }
                if spec.stage_dir is not None:
                    rec["file"] = f"stage_{index:02d}_k{k}{adapter.suffix}"
                    rec["evals"] = stage_evals
                    state = _bias_state(objective)
                    if state is not None:  # learned propensities: resume continues from them
                        rec["bias_state"] = state
                    term = _term_state(objective)
                    if term is not None:  # position offsets: likewise
                        rec["position_term"] = term
                    completed.append(rec)
                    write_stage(
                        spec.stage_dir,
                        spec.engine,
                        run_id,
                        completed,
                        rec["file"],
                        adapter.to_string(booster),
                    )
                acc.add(index, rec, stage_evals)
    finally:
        bar.close()
    if booster is None:  # pragma: no cover - every plan has at least one stage
        raise RuntimeError("no stage was trained or loaded")
    total = adapter.num_rounds(booster)
    public_params = to_jsonable(params)
    if objective is not None:
        public_params["objective"] = objective_fields(objective)
        state = _bias_state(objective)
        if state is not None:
            public_params["position_bias"] = state
        term = _term_state(objective)
        if term is not None:
            public_params["position_term"] = term
    if spec.placement is not None:
        public_params["distributed"] = to_jsonable(spec.placement.describe())
    return RankingModel(
        engine=spec.engine,
        booster=booster,
        evals_result=acc.evals_result,
        best_iteration=total if (spec.early_stopping_rounds and acc.any_early_stop) else None,
        stages=acc.stages,
        params=public_params,
        convention=spec.convention,
    )

"""What runs on the workers: the objective wrappers, the round and eval callbacks.

Every worker trains on its own whole queries.  The engine's round number
reaches the objective through a callback that runs before each round (never
a per-worker call count): the global round is the stage's first round plus
the engine's index in this call (LightGBM ``env.iteration -
env.begin_iteration``, XGBoost ``before_iteration``'s ``epoch``), the same
rule as :class:`ltr.engines._objective.ObjectiveCall` in one process, so all
workers use the same ``k`` in the same round.  Eval sets
travel whole to every worker inside the eval callback; since every worker
holds the same model after each round (data-parallel training), every worker
computes the same metrics and takes the same early-stopping decision, so
they all stop at the same round.  The client fetches one worker's
:class:`~ltr.engines._recorder.Recorder` afterwards (:func:`pop_state`).

Extra per-row data the engines' distributed APIs cannot carry to a custom
objective travel in the engine's own columns: composite label columns of
whole-number grades are packed into the label (:func:`pack_labels`,
decoded here); row weights go in LightGBM's weight column and, since
``xgboost.dask`` refuses weights together with query ids, in XGBoost's
per-row AFT lower-bound field (read back here, used by no ranking objective).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd

from ltr._compat import import_xgboost

if TYPE_CHECKING:
    from ltr.engines import TrainSpec

__all__ = ["PackedLabels", "lightgbm_callbacks", "lightgbm_objective", "pause_profiler",
           "pop_state", "xgboost_callbacks", "xgboost_objective"]

#: token of one training stage -> its state in this worker process (round, recorder, margins).
#: The callbacks and the objective of one training may reach a worker as separate copies
#: (each task argument is serialised on its own); they meet here through the token.
_STATE: dict[str, dict[str, Any]] = {}


def _state(token: str) -> dict[str, Any]:
    return _STATE.setdefault(token, {})


def _round_of(token: str) -> int:
    try:
        return int(_STATE[token]["round"])
    except KeyError:
        raise RuntimeError(
            "the distributed objective was called before its round callback ran on this "
            "worker; pass the callbacks of ltr.dask.train with the objective"
        ) from None


def pause_profiler(token: str, dask_worker: Any = None) -> bool:
    """Stop this worker's statistical profiler for stage *token*; :func:`pop_state` restarts it.

    Run on every worker with ``client.run`` (on its event loop) before a stage.  The
    profiler (``distributed.worker.profile``: a stack sample every 10 ms by default) finds
    only the engine's C++ call to sample while a stage trains, and its samples cost each
    worker about 5 % of its CPU per round (``experiments/results/dask.md``).  Only a running
    profiler is stopped, and only by one stage at a time; returns whether this call stopped it.
    """
    callbacks = getattr(dask_worker, "periodic_callbacks", None) or {}
    profiler = callbacks.get("profile")
    if profiler is None or not profiler.is_running():
        return False
    profiler.stop()
    _state(token)["profiler"] = profiler
    return True


def pop_state(token: str, dask_worker: Any = None) -> Any:
    """Remove this worker's state of stage *token*; return its recorder (``None`` if none).

    Run on every worker with ``client.run`` after a stage (and after a failure): it
    also restarts the profiler :func:`pause_profiler` stopped for the stage.
    """
    state = _STATE.pop(token, None)
    if state is None:
        return None
    profiler = state.get("profiler")
    if profiler is not None:
        profiler.start()
    return state.get("recorder")


@dataclass(frozen=True)
class PackedLabels:
    """Composite grades packed into one label: ``sum_o grade_o * base**o`` (exact in float32)."""

    names: tuple[str, ...]
    base: int

    def pack(self, part: pd.DataFrame, columns: tuple[str, ...]) -> pd.Series:
        """Return the packed label of each row of *part* (columns in ``names`` order)."""
        out = np.zeros(len(part), dtype=np.float64)
        for o, col in enumerate(columns):
            out += part[col].to_numpy(dtype=np.float64) * float(self.base) ** o
        return pd.Series(out, index=part.index, name="__ltr_packed__")

    def unpack(self, y: np.ndarray) -> dict[str, np.ndarray]:
        """Return the grade columns of packed labels *y*."""
        rest = np.rint(np.asarray(y, dtype=np.float64)).astype(np.int64)
        out: dict[str, np.ndarray] = {}
        for name in self.names:
            out[name] = (rest % self.base).astype(np.float64)
            rest //= self.base
        return out


def _stage_inputs(token: str, read: Any) -> tuple[Any, np.ndarray, np.ndarray | None]:
    """Return this worker's ``(labels, offsets, weights)`` of stage *token*, read once.

    The rows of a stage never change between its rounds, so the engine's label,
    group and weight arrays are converted (and composite grades unpacked) on the
    first call only; ``read()`` does it.  The state goes with :func:`pop_state`.
    """
    state = _state(token)
    if "inputs" not in state:
        state["inputs"] = read()
    inputs: tuple[Any, np.ndarray, np.ndarray | None] = state["inputs"]
    return inputs


def _labels(y: Any, packed: PackedLabels | None) -> Any:
    return np.asarray(y) if packed is None else packed.unpack(y)


def _gradients(objective: Any, token: str, preds: np.ndarray,
               inputs: tuple[Any, np.ndarray, np.ndarray | None]) -> tuple[np.ndarray, np.ndarray]:
    labels, offsets, weight = inputs
    grad, hess = objective.gradients(np.asarray(preds, dtype=np.float64).reshape(-1), labels,
                                     offsets, _round_of(token))
    grad = np.asarray(grad, dtype=np.float64)
    hess = np.asarray(hess, dtype=np.float64)
    if weight is not None:  # as ltr.engines' ObjectiveCall: float64 product after the objective
        grad = grad * weight
        hess = hess * weight
    return grad, hess


# ----------------------------------------------------------------------------
# LightGBM
# ----------------------------------------------------------------------------


class _LightGBMObjective:
    """``lightgbm.dask`` custom objective ``(y_true, y_pred, weight, group)`` on local queries."""

    def __init__(self, objective: Any, token: str, packed: PackedLabels | None) -> None:
        self.objective = objective
        self.token = token
        self.packed = packed

    def __call__(self, y_true: np.ndarray, y_pred: np.ndarray, weight: Any,
                 group: Any) -> tuple[np.ndarray, np.ndarray]:
        def read() -> tuple[Any, np.ndarray, np.ndarray | None]:
            sizes = np.asarray(group, dtype=np.int64)
            offsets = np.zeros(sizes.size + 1, dtype=np.int64)
            np.cumsum(sizes, out=offsets[1:])
            w = None if weight is None else np.asarray(weight, dtype=np.float64)
            return _labels(y_true, self.packed), offsets, w

        return _gradients(self.objective, self.token, y_pred, _stage_inputs(self.token, read))


class _LightGBMRound:
    """LightGBM callback (before each round): record the global round number.

    ``first`` is the stage's first round in the schedule; LightGBM's
    ``env.iteration - env.begin_iteration`` is the round within this call.
    """

    order = 0
    before_iteration = True

    def __init__(self, token: str, first: int) -> None:
        self.token = token
        self.first = first

    def __call__(self, env: Any) -> None:
        local = int(env.iteration) - int(env.begin_iteration)
        _state(self.token)["round"] = self.first + local


def _recorder(token: str, spec: TrainSpec, stage_k: int) -> Any:
    from ltr.engines import Recorder

    state = _state(token)
    if "recorder" not in state:
        state["recorder"] = Recorder(spec, stage_k)
        state["margins"] = [None] * len(spec.eval_sets)
    return state["recorder"]


class _LightGBMEval:
    """LightGBM callback (after each round): our metrics on the eval sets, early stopping."""

    order = 100
    before_iteration = False

    def __init__(self, token: str, spec: TrainSpec, stage_k: int) -> None:
        self.token, self.spec, self.stage_k = token, spec, stage_k

    def __call__(self, env: Any) -> None:
        import lightgbm as lgb

        recorder = _recorder(self.token, self.spec, self.stage_k)
        margins = _state(self.token)["margins"]
        it = int(env.iteration)
        for i, ev in enumerate(self.spec.eval_sets):
            if margins[i] is None:  # first round of the stage: the model so far
                margins[i] = np.asarray(env.model.predict(ev.X, raw_score=True,
                                                          num_iteration=it + 1), dtype=np.float64)
            else:  # then one tree at a time
                margins[i] = margins[i] + np.asarray(env.model.predict(
                    ev.X, raw_score=True, start_iteration=it, num_iteration=1), dtype=np.float64)
            recorder.record(i, margins[i])
        if recorder.end_round():
            # every worker holds the same model and data: all stop at this round
            raise lgb.callback.EarlyStopException(it, env.evaluation_result_list or [])


def lightgbm_objective(objective: Any, token: str, packed: PackedLabels | None) -> Any:
    """Return the picklable ``(y_true, y_pred, weight, group)`` objective for ``lightgbm.dask``."""
    return _LightGBMObjective(objective, token, packed)


def lightgbm_callbacks(token: str, *, objective: bool, spec: TrainSpec, stage_k: int,
                       first: int) -> list[Any]:
    """Return the LightGBM callbacks of one stage: the round (custom objective) and the recorder.

    *first* is the stage's first global round.  The recorder callback runs on
    every training worker (also without eval sets: it counts the rounds and
    marks the worker as one that trained).
    """
    out: list[Any] = []
    if objective:
        out.append(_LightGBMRound(token, first))
    out.append(_LightGBMEval(token, spec, stage_k))
    return out


# ----------------------------------------------------------------------------
# XGBoost
# ----------------------------------------------------------------------------


class _XGBoostObjective:
    """``xgboost.dask.train(obj=...)``: gradients over the worker's local ``group_ptr``."""

    def __init__(self, objective: Any, token: str, packed: PackedLabels | None) -> None:
        self.objective = objective
        self.token = token
        self.packed = packed

    def __call__(self, preds: np.ndarray, dtrain: Any) -> tuple[np.ndarray, np.ndarray]:
        def read() -> tuple[Any, np.ndarray, np.ndarray | None]:
            offsets = np.asarray(dtrain.get_uint_info("group_ptr"), dtype=np.int64)
            # row weights travel in the AFT lower-bound field (xgboost.dask refuses weight + qid)
            rows = np.asarray(dtrain.get_float_info("label_lower_bound"), dtype=np.float64)
            return _labels(dtrain.get_label(), self.packed), offsets, rows if rows.size else None

        return _gradients(self.objective, self.token, preds, _stage_inputs(self.token, read))


_CLASSES: dict[str, Any] = {}


def _xgboost_classes() -> dict[str, Any]:
    """Return the ``TrainingCallback`` subclasses (xgboost is imported only when used)."""
    if _CLASSES:
        return _CLASSES
    base: Any = import_xgboost().callback.TrainingCallback

    # xgboost.train counts epochs from 0 in every call, also when it continues a model:
    # the schedule's round is ``first + epoch``, the new tree's index ``offset + epoch``
    class _XGBoostRound(base):  # type: ignore[misc, valid-type]
        def __init__(self, token: str, offset: int) -> None:
            super().__init__()
            self.token, self.offset = token, offset

        def before_iteration(self, model: Any, epoch: int, evals_log: Any) -> bool:
            _state(self.token)["round"] = self.offset + int(epoch)
            return False

        def __reduce__(self) -> tuple[Any, tuple[Any, ...]]:
            return _make_xgboost, ("round", self.token, self.offset)

    class _XGBoostEval(base):  # type: ignore[misc, valid-type]
        def __init__(self, token: str, spec: TrainSpec, stage_k: int, offset: int) -> None:
            super().__init__()
            self.token, self.spec, self.stage_k, self.offset = token, spec, stage_k, offset

        def after_iteration(self, model: Any, epoch: int, evals_log: Any) -> bool:
            recorder = _recorder(self.token, self.spec, self.stage_k)
            epoch = self.offset + int(epoch)
            margins = _state(self.token)["margins"]
            for i, ev in enumerate(self.spec.eval_sets):
                # float32 sums tree by tree, as XGBoost's own prediction cache: the same scores
                # (and ties) as single-machine training's eval sets
                if margins[i] is None:  # the model so far (base score included)
                    margins[i] = np.asarray(model.inplace_predict(
                        ev.X, iteration_range=(0, epoch + 1), predict_type="margin"),
                        dtype=np.float32).reshape(-1)
                else:  # one tree: a zero base margin replaces the base score
                    margins[i] = margins[i] + np.asarray(model.inplace_predict(
                        ev.X, iteration_range=(epoch, epoch + 1), predict_type="margin",
                        base_margin=np.zeros(len(ev.y), dtype=np.float32)),
                        dtype=np.float32).reshape(-1)
                recorder.record(i, margins[i])
            return bool(recorder.end_round())

        def __reduce__(self) -> tuple[Any, tuple[Any, ...]]:
            return _make_xgboost, ("eval", self.token, self.spec, self.stage_k, self.offset)

    _CLASSES.update(round=_XGBoostRound, eval=_XGBoostEval)
    return _CLASSES


def _make_xgboost(kind: str, *args: Any) -> Any:
    return _xgboost_classes()[kind](*args)


def xgboost_objective(objective: Any, token: str, packed: PackedLabels | None) -> Any:
    """Return the picklable ``obj(preds, dtrain)`` for ``xgboost.dask.train``."""
    return _XGBoostObjective(objective, token, packed)


def xgboost_callbacks(token: str, *, objective: bool, spec: TrainSpec,
                      stage_k: int, first: int, trees: int) -> list[Any]:
    """Return the XGBoost callbacks of one stage: the round (custom objective) and the recorder.

    *first* is the stage's first global round, *trees* the rounds of the
    model it continues (fewer than *first* after early stopping).  The
    recorder callback runs on every training worker, also without eval sets.
    """
    out: list[Any] = []
    if objective:
        out.append(_make_xgboost("round", token, first))
    out.append(_make_xgboost("eval", token, spec, stage_k, trees))
    return out

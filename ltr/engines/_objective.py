"""Objective resolution: native, an objective instance, or composite weights.

Also the wrapper the engines call for a custom objective (:class:`ObjectiveCall`)
and the objective described as data (:func:`objective_fields`, for
fingerprints and ``RankingModel.params``).
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from numbers import Integral
from typing import Any

import numpy as np

from ltr._validation import short_repr
from ltr.objectives.schedules import Constant, as_schedule

__all__ = ["ObjectiveCall", "attach_position", "composite_gains", "composite_weights",
           "objective_fields", "position_learning_rate", "resolve_objective",
           "training_objective", "uses_position"]


class ObjectiveCall:
    """What the engine calls in one training: the training's objective at the *global* round.

    The training creates it (never the caller): it holds the training's own
    copy of the objective (:func:`training_objective`), the first round of
    this engine call in the schedule (``first_round``: the stage offset, or
    the rounds a resumed run already has), and the local index the engine's
    round callback reports before each round (:meth:`start_round`: LightGBM
    ``env.iteration - env.begin_iteration``, XGBoost
    ``TrainingCallback.before_iteration``'s ``epoch``, both from 0 in each
    call).  The objective is evaluated at round ``first_round + local``, a
    pure function of the round: no call is counted.

    ``lightgbm.train`` deep-copies its params; ``__deepcopy__`` returns this
    training-owned wrapper itself so the engine's copy of the params and the
    round callback reach the same object (and the learned position biases
    the loop checkpoints are the ones updated).
    """

    def __init__(self, objective: Any, weights: np.ndarray | None, first_round: int = 0) -> None:
        self.objective = objective
        self.weights = weights
        self.first_round = first_round
        self.local: int | None = None

    def start_round(self, local: int) -> None:
        """Record the engine's 0-based round index within this engine call."""
        self.local = int(local)

    @property
    def round(self) -> int:
        """The global round the next gradients are for (``first_round + local``)."""
        if self.local is None:
            raise RuntimeError(
                "the objective was called before the engine's round callback ran; pass the "
                "round callback of the adapter with the objective"
            )
        return self.first_round + self.local

    def __call__(self, preds: np.ndarray, data: Any) -> tuple[np.ndarray, np.ndarray]:
        obj = self.objective
        if getattr(obj, "position_term", False):  # its offsets step on the weighted gradients
            grad, hess = obj.round_gradients(preds, data, self.round, sample_weight=self.weights)
            return np.asarray(grad, dtype=np.float64), np.asarray(hess, dtype=np.float64)
        if hasattr(obj, "round_gradients"):
            grad, hess = obj.round_gradients(preds, data, self.round)
        else:  # a foreign objective with reset(): the training's own copy is positioned
            obj.reset(self.round)
            grad, hess = obj(preds, data)
        grad = np.asarray(grad, dtype=np.float64)
        hess = np.asarray(hess, dtype=np.float64)
        if self.weights is not None:
            grad = grad * self.weights
            hess = hess * self.weights
        return grad, hess

    def __deepcopy__(self, memo: dict[int, Any]) -> ObjectiveCall:
        return self


def training_objective(obj: Any) -> Any:
    """Return the objective one training trains with: a copy of *obj* at round 0.

    The caller's object is never changed by training (its ``iteration``,
    learned position biases and scratch buffers stay as they were).  The
    copy is shallow (label columns and positions are shared, read-only) with
    fresh scratch (the objectives' ``__copy__``), and ``reset(0)`` starts
    learned position biases afresh.
    """
    out = copy.copy(obj)
    out.reset(0)
    return out


def objective_fields(obj: Any) -> dict[str, Any]:
    """JSON-safe scalar attributes of an objective, for fingerprints and ``params``."""
    out: dict[str, Any] = {"class": type(obj).__qualname__}
    state = getattr(obj, "__dict__", {})
    for key, value in sorted(state.items()):
        if key.startswith("_") or key == "iteration":
            continue
        if isinstance(value, (bool, int, float, str)) or value is None:
            out[key] = value
        elif hasattr(value, "to_dict"):
            try:
                out[key] = value.to_dict()
            except Exception:  # noqa: BLE001  # pragma: no cover - foreign objects
                out[key] = type(value).__qualname__
        elif isinstance(value, Mapping) and all(
            isinstance(v, (int, float)) for v in value.values()
        ):
            out[key] = {str(k): v for k, v in value.items()}
        else:
            out[key] = type(value).__qualname__
    return out


def composite_weights(obj: Any) -> dict[str, float] | None:
    """Objective weights of a composite objective, or ``None`` for a single one."""
    for attr in ("objectives", "weights"):
        value = getattr(obj, attr, None)
        if (
            isinstance(value, Mapping)
            and value
            and all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in value.values())
        ):
            return {str(k): float(v) for k, v in value.items()}
    return None


def composite_gains(obj: Any) -> dict[str, Any] | None:
    gains = getattr(obj, "gains", None)
    return dict(gains) if isinstance(gains, Mapping) else None


def resolve_objective(
    objective: Any, *, k: int, schedule: Any, labels: dict[str, np.ndarray] | None,
    n_rows: int | None,
) -> tuple[Any, Any]:
    """Return ``(objective or None for native, schedule)``.

    *n_rows* is ``None`` when the rows live elsewhere (a distributed
    placement passes the label columns to the objective on every call).
    """
    if isinstance(objective, str):
        if objective != "native":
            raise ValueError(
                "objective must be 'native', a LambdaRankObjective/CompositeLambdaRankObjective "
                f"or a mapping of composite weights, got {objective!r}"
            )
        return None, as_schedule(schedule) if schedule is not None else Constant(k)
    if isinstance(objective, Mapping):
        if labels is None:
            raise ValueError(
                "labels is required for a composite objective: pass labels={objective: column} "
                f"with columns {sorted(objective)!r}"
            )
        for name in objective:
            if name not in labels:
                raise ValueError(
                    f"labels is missing column {name!r} required by the composite objective "
                    f"(labels has {sorted(labels)!r})"
                )
        from ltr.objectives import CompositeLambdaRankObjective

        sched = as_schedule(schedule) if schedule is not None else None
        obj = CompositeLambdaRankObjective(
            dict(objective), {name: labels[name] for name in objective}, k=k, schedule=sched
        )
        return obj, sched if sched is not None else Constant(k)
    if not callable(objective) or not hasattr(objective, "reset"):
        raise TypeError(
            "objective must be 'native', a LambdaRankObjective/CompositeLambdaRankObjective "
            "(callable with reset()) or a mapping of composite weights, "
            f"got {short_repr(objective)}"
        )
    obj = objective
    own = getattr(obj, "schedule", None)
    if schedule is not None:
        sched = as_schedule(schedule)
        if own is not None and as_schedule(own) != sched:
            raise ValueError(
                f"schedule is given twice: train(schedule={sched!r}) and the objective's "
                f"schedule={own!r}; set it in one place"
            )
        if own is None:
            obj = copy.copy(objective)
            obj.schedule = sched
    elif own is not None:
        sched = as_schedule(own)
    else:
        obj_k = getattr(obj, "k", None)
        sched = (
            Constant(int(obj_k))
            if isinstance(obj_k, Integral) and int(obj_k) >= 1
            else Constant(k)
        )
    weights = composite_weights(obj)
    if weights is not None:
        obj_labels = getattr(obj, "labels", None)
        if isinstance(obj_labels, Mapping):
            for name in weights:
                if name not in obj_labels:
                    raise ValueError(
                        f"the composite objective has no label column {name!r} "
                        f"(its labels have {sorted(obj_labels)!r})"
                    )
                if n_rows is not None and len(obj_labels[name]) != n_rows:
                    raise ValueError(
                        f"the composite objective's label column {name!r} has "
                        f"{len(obj_labels[name])} rows but X has {n_rows}"
                    )
    return obj, sched


def uses_position(obj: Any) -> bool:
    """Whether *obj* uses display positions (``unbiased``, ``propensity`` or ``position_term``).

    *obj* is an objective, training settings, or a mapping of parameter values
    (an estimator's ``get_params()``, a debiasing candidate).
    """
    def get(name: str) -> Any:
        return obj.get(name) if isinstance(obj, Mapping) else getattr(obj, name, None)

    return bool(get("unbiased")) or get("propensity") is not None or bool(get("position_term"))


def position_learning_rate(obj: Any, params: Mapping[str, Any]) -> None:
    """Give the training's position-term objective the booster's learning rate (if unset)."""
    if not getattr(obj, "position_term", False) or obj.position_learning_rate is not None:
        return
    for key in ("learning_rate", "eta", "shrinkage_rate"):  # the engines' names for it
        if key in params:
            obj.position_learning_rate = float(params[key])
            return


def attach_position(obj: Any, position: np.ndarray | None) -> Any:
    """Return the objective that trains with *position* (a copy holding it), checked.

    Parameters
    ----------
    obj : objective instance
        The resolved custom objective.
    position : ndarray of int64 or None
        Checked display ranks (1 = top) in training-row order.

    Returns
    -------
    objective
        *obj* itself when no positions are given, else a shallow copy with
        ``position`` set.

    Raises
    ------
    ValueError
        Positions for an objective that cannot use them, or an unbiased
        objective without positions; the message names the choice to make.
    """
    own = getattr(obj, "position", None)
    if position is None:
        if uses_position(obj) and own is None:
            raise ValueError(
                "the objective uses positions (unbiased=True, propensity=... or "
                "position_term=True) but no positions were given: pass position=<display rank "
                "per row, 1 = top> to train()"
            )
        return obj
    if composite_weights(obj) is not None:
        raise ValueError(
            "position is not supported with a composite objective: train one label with "
            "LambdaRankObjective(unbiased=True), or drop position"
        )
    if not uses_position(obj):
        raise ValueError(
            "position was given but the objective does not use positions; choose "
            "LambdaRankObjective(unbiased=True) (propensities learned every round), "
            "LambdaRankObjective(propensity=[...]) (known propensities), "
            "LambdaRankObjective(position_term=True) (learned score offsets per position), or "
            "objective='native' (the engine's own position debiasing)"
        )
    if own is not None:
        raise ValueError(
            "position is given twice: to train(position=...) and to the objective "
            "(LambdaRankObjective(position=...)); give it in one place"
        )
    out = copy.copy(obj)
    out.position = position
    return out

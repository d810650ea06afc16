r"""Position term for :class:`ltr.objectives.LambdaRankObjective`: rules, update and state.

``position_term=True`` learns one score offset ``b[p]`` per display position
``p`` jointly with the trees, the model LightGBM (>= 4.1) fits when its
``Dataset`` has ``position=`` (a GAM ``s(x) + b[p]``).  Every round

1. the gradients are computed on the shifted scores ``s_i + b[p_i]`` (the
   kernel is unchanged: only its input scores move; pair debiasing, sampling,
   schedules and sample weights apply as without the term);
2. the offsets take one Newton step on that round's (weighted) gradients and
   hessians, summed per position over its ``n_p`` rows,

.. math::

    D_1 = -\sum_{i: p_i = p} g_i - \lambda n_p b_p, \quad
    D_2 = -\sum_{i: p_i = p} h_i - \lambda n_p, \quad
    b_p \leftarrow b_p + \eta \frac{D_1}{|D_2| + 0.001},

with ``lambda = position_regularization`` (LightGBM
``lambdarank_position_bias_regularization``, default 0) and ``eta`` the
booster's learning rate (:func:`ltr.engines.train` sets it from the
training's ``learning_rate``; pass ``position_learning_rate`` when handing
the objective to an engine yourself).

The offsets start at 0, every position ``1..max(position)`` has its own
(as LightGBM's one factor per distinct position id; a position no row
shows keeps 0), and they are *not* part of the model: prediction scores
documents without them, the ranking a user is served having no position yet.
With ``sigmoid="lightgbm"`` the offsets are stored in ``float32`` as
LightGBM's ``pos_biases_`` are, so training reproduces LightGBM's position
GAM (``objective="lambdarank"`` with ``Dataset(position=...)``); the default
keeps them in ``float64``.

The offsets are training state, like the learned ``t+``/``t-``: the training
works on its own copy of the objective, checkpoints
:meth:`PositionTermMixin.position_term_state` with every stage, restores it
on resume (bit-identical continuation) and keeps the final offsets in
``RankingModel.position_term``.

Cost per round: one gather-add of the offsets and one pass of per-position
sums over the rows (:mod:`ltr.kernels._offsets`; a few per cent of a plain
call); the rest of the measured overhead (``experiments/bench_position_term.py``: 1.28x a plain
call, 237,605 rows) is the kernel's warm-started sort, which has more to do
when the offsets move the shifted scores.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np

from ltr._validation import (
    check_1d_float,
    check_int,
    check_offsets,
    check_positions,
    check_real,
    short_repr,
)
from ltr.kernels._offsets import shifted_scores, slot_sums

__all__ = [
    "PositionTermMixin",
    "check_position_term",
    "missing_term_position_error",
    "newton_step",
]

_STATE_KEYS = ("offsets", "regularization", "rounds")
_HESSIAN_FLOOR = 0.001  # LightGBM's floor on |D2|


def check_position_term(
    position_term: Any, position_regularization: Any, position_learning_rate: Any
) -> tuple[bool, float, float | None]:
    """Validate the position-term arguments; return ``(on, regularization, learning_rate)``.

    Examples
    --------
    >>> from ltr.objectives._position_term import check_position_term
    >>> check_position_term(True, 0.5, None)
    (True, 0.5, None)
    """
    if not isinstance(position_term, (bool, np.bool_)):
        raise TypeError(f"position_term must be a bool, got {short_repr(position_term)}")
    reg = check_real(position_regularization, "position_regularization", minimum=0.0)
    rate = None
    if position_learning_rate is not None:
        rate = check_real(position_learning_rate, "position_learning_rate", minimum=0.0,
                          exclusive_minimum=True)
    if not position_term and reg != 0.0:
        raise ValueError(
            f"position_regularization={reg!r} only applies with position_term=True; set it, "
            "or leave position_regularization at 0.0"
        )
    return bool(position_term), reg, rate


def missing_term_position_error() -> ValueError:
    """Return the error for a position-term objective called without display positions."""
    return ValueError(
        "position is required: LambdaRankObjective(position_term=True) learns one score offset "
        "per display position but none was given. Pass position=<display rank per row, 1 = "
        "top, in training-row order> to LambdaRankObjective(..., position=...), to "
        "gradients(..., position=...), to ltr.engines.train(..., position=...) or to "
        "LambdaMARTRanker.fit(X, y, qid=..., position=...)"
    )


def newton_step(offsets: np.ndarray, grad: np.ndarray, hess: np.ndarray, slot: np.ndarray,
                regularization: float, learning_rate: float, f32: bool) -> np.ndarray:
    """One update of the offsets from a round's gradients (a new array; see the module notes).

    Sums run in row order in ``float64`` (LightGBM's order with one thread), in one
    pass (:func:`ltr.kernels._offsets.slot_sums`).

    Examples
    --------
    >>> import numpy as np
    >>> from ltr.objectives._position_term import newton_step
    >>> newton_step(np.zeros(2), np.array([-1.0, 1.0, -2.0]), np.array([1.0, 1.0, 2.0]),
    ...             np.array([0, 1, 0]), 0.0, 0.1, False).round(6).tolist()
    [0.099967, -0.0999]
    """
    sum_g, sum_h, count = slot_sums(slot, grad, hess, offsets.shape[0])
    d1: np.ndarray = -sum_g
    d2: np.ndarray = -sum_h
    if regularization != 0.0:
        d1 = d1 - offsets * regularization * count
        d2 = d2 - regularization * count
    out = offsets + learning_rate * d1 / (np.abs(d2) + _HESSIAN_FLOOR)
    if f32:
        out = out.astype(np.float32).astype(np.float64)
    return out


class PositionTermMixin:
    """Position-term settings, offsets and state of :class:`~ltr.objectives.LambdaRankObjective`.

    Hooks into the objective's gradient path without touching the kernels:
    ``_debias`` notes the positions of the call, ``_compute`` shifts the
    scores by the offsets and keeps the (weighted) gradients, and
    ``_update_bias`` (run every engine round, or with ``update_bias=True``)
    takes the Newton step.  :attr:`position_offsets_` is replaced, never
    modified in place, so a shallow copy of the objective evolves on its own.

    Examples
    --------
    Two rounds by hand (an engine round does this with ``update_bias=True``):
    the clicked rows at positions 1 and 4 pull their positions' offsets up.

    >>> import numpy as np
    >>> from ltr.objectives import LambdaRankObjective
    >>> obj = LambdaRankObjective(k=10, position_term=True, position_learning_rate=0.1)
    >>> for it in range(2):
    ...     grad, hess = obj.gradients(np.zeros(4), np.array([1.0, 0.0, 0.0, 1.0]),
    ...                                np.array([0, 4]), it, position=[1, 2, 3, 4],
    ...                                update_bias=True)
    >>> obj.position_offsets_.round(3).tolist(), obj.position_term_state()["rounds"]
    ([0.365, -0.364, -0.365, 0.362], 2)
    """

    iteration: int
    sigmoid: str
    position: Any
    _bias: Any
    _work: dict[str, np.ndarray]
    position_offsets_: np.ndarray | None

    def _init_term(self, position_term: Any, position_regularization: Any,
                   position_learning_rate: Any) -> None:
        on, reg, rate = check_position_term(
            position_term, position_regularization, position_learning_rate
        )
        self.position_term = on
        self.position_regularization = reg
        self.position_learning_rate = rate
        self.position_offsets_ = None
        self._term_rounds = 0
        self._term_cache: tuple[Any, np.ndarray, np.ndarray] | None = None
        self._term_pos: Any = None  # the positions of the call under way
        self._term_round: tuple[np.ndarray, np.ndarray, np.ndarray] | None = None

    def _term_repr(self) -> str:
        if not self.position_term:
            return ""
        return (
            f", position_term=True, position_regularization={self.position_regularization!r}, "
            f"position_learning_rate={self.position_learning_rate!r}"
        )

    def reset(self, iteration: int = 0) -> None:
        """Set the round counter; ``reset(0)`` also restarts the position offsets at 0."""
        super().reset(iteration)  # type: ignore[misc]
        if self.iteration == 0 and self.position_term:
            self.position_offsets_ = None
            self._term_rounds = 0

    # -- state ---------------------------------------------------------------

    def position_term_state(self) -> dict[str, Any]:
        """Position-term state as JSON-able data (checkpoints; see :meth:`set_position_term_state`).

        Returns
        -------
        dict
            ``{"offsets": [...], "regularization": float, "learning_rate":
            float | None, "rounds": int}``; ``offsets`` are the ones the next
            round uses (index 0 = position 1; empty before the first round).
        """
        if not self.position_term:
            raise ValueError(
                "position_term_state() needs an objective built with position_term=True"
            )
        offsets = [] if self.position_offsets_ is None else self.position_offsets_.tolist()
        return {
            "offsets": [float(v) for v in offsets],
            "regularization": self.position_regularization,
            "learning_rate": self.position_learning_rate,
            "rounds": self._term_rounds,
        }

    def set_position_term_state(self, state: Mapping[str, Any]) -> None:
        """Restore a :meth:`position_term_state` dict (checked against this objective)."""
        if not self.position_term:
            raise ValueError(
                "set_position_term_state() needs an objective built with position_term=True"
            )
        if not isinstance(state, Mapping):
            raise TypeError(
                f"state must be a dict from position_term_state(), got {short_repr(state)}"
            )
        missing = [key for key in _STATE_KEYS if key not in state]
        if missing:
            raise ValueError(
                f"state has no {missing[0]!r}: pass the dict returned by position_term_state() "
                f"(keys {list(_STATE_KEYS)!r})"
            )
        if state["regularization"] != self.position_regularization:
            raise ValueError(
                f"state['regularization'] is {state['regularization']!r} but the objective has "
                f"position_regularization={self.position_regularization!r}: restore into an "
                f"objective built with position_regularization={state['regularization']!r}"
            )
        offsets = check_1d_float(state["offsets"], "state['offsets']")
        if not np.isfinite(offsets).all():
            i = int(np.flatnonzero(~np.isfinite(offsets))[0])
            raise ValueError(f"state['offsets'] must be finite; entry {i} is {offsets[i]!r}")
        rounds = check_int(state["rounds"], "state['rounds']", minimum=0)
        self.position_offsets_ = offsets.copy() if offsets.size else None
        self._term_rounds = rounds

    # -- hooks into the gradient path -------------------------------------------

    def _debias(self, position: Any) -> Any:
        if not self.position_term:
            return super()._debias(position)  # type: ignore[misc]
        pos = self.position if position is None else position
        if pos is None:
            raise missing_term_position_error()
        self._term_pos = pos
        if self._bias.mode is None:  # positions only shift the scores
            return None
        return super()._debias(position)  # type: ignore[misc]

    def _term_slots(self, pos: Any, offsets: np.ndarray) -> np.ndarray:
        c = self._term_cache
        if c is None or c[0] is not pos or not np.array_equal(c[1], offsets):
            slot = check_positions(pos, "position", offsets) - 1
            c = self._term_cache = (pos, offsets.copy(), slot)
        return c[2]

    def _compute(self, scores: np.ndarray, label_cols: list[np.ndarray], specs: list[Any],
                 names: list[str], obj_weights: np.ndarray, offsets: Any, iteration: int,
                 sample_weight: np.ndarray | None, debias: Any = None) -> Any:
        if not self.position_term:
            return super()._compute(  # type: ignore[misc]
                scores, label_cols, specs, names, obj_weights, offsets, iteration,
                sample_weight, debias,
            )
        pos, self._term_pos = self._term_pos, None
        checked = check_offsets(offsets, "offsets", scores.shape[0])
        slot = self._term_slots(pos, checked)
        n_slots = int(slot.max()) + 1 if slot.size else 0
        b = self.position_offsets_
        if b is None:
            b = self.position_offsets_ = np.zeros(n_slots)
        elif b.shape[0] != n_slots:
            raise ValueError(
                f"the position offsets have {b.shape[0]} entries (from set_position_term_state "
                f"or an earlier training) but the data's deepest position is {n_slots}: restore "
                "a state learned on the same data, or reset(0)"
            )
        shift = self._work.get("shift")  # scratch, like the kernel's (a copy gets its own)
        if shift is None or shift.shape[0] != scores.shape[0]:
            shift = self._work["shift"] = np.empty(scores.shape[0])
        grad, hess, costs = super()._compute(  # type: ignore[misc]
            shifted_scores(scores, b, slot, shift), label_cols, specs, names, obj_weights, checked,
            iteration, sample_weight, debias,
        )
        self._term_round = (grad, hess, slot)
        return grad, hess, costs

    def _update_bias(self, costs: Any) -> None:
        super()._update_bias(costs)  # type: ignore[misc]
        last, self._term_round = self._term_round, None
        if not self.position_term or last is None or self.position_offsets_ is None:
            return
        rate = self.position_learning_rate
        if rate is None:
            raise ValueError(
                "position_learning_rate is unknown: ltr.engines.train sets it to the booster's "
                "learning_rate; when handing the objective to an engine yourself, build it with "
                "LambdaRankObjective(position_term=True, position_learning_rate=<the booster's "
                "learning_rate>)"
            )
        grad, hess, slot = last
        self.position_offsets_ = newton_step(
            self.position_offsets_, grad, hess, slot, self.position_regularization, rate,
            self.sigmoid == "lightgbm",
        )
        self._term_rounds += 1

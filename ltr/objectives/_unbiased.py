r"""Position debiasing for :class:`ltr.objectives.LambdaRankObjective`: rules, tables and state.

Two ways to debias LambdaRank gradients computed from clicks, both driven by
the display position of each row (1 = top) inside its query:

**Learned** (``unbiased=True``): Unbiased LambdaMART (Hu et al. 2019, as
XGBoost's ``lambdarank_unbiased``).  Every pair ``(i, j)`` with ``i`` more
relevant than ``j`` has its lambda and hessian divided by
``t+[p_i] * t-[p_j]``.  During a round every pair adds its cost ``c`` to
``li[p_i] += c / t-[p_j]`` and ``lj[p_j] += c / t+[p_i]``; after the round

.. math::

    t^+_p = (li_p / li_1)^{1 / (1 + b)}, \quad t^-_p = (lj_p / lj_1)^{1 / (1 + b)}

with ``b = bias_norm``, so position 1 has ``t = 1``.  The tables start at 1
and are re-estimated every boosting round from that round's costs only.

* **Cost** (``bias_cost``).  ``c = L * |Delta| * w``: a pair loss ``L``
  times the pair's ``|delta nDCG|`` after LightGBM's score-distance
  regularisation and its pair weight ``w`` (``TopKPairSampling`` head
  weight, sampling scale), where ``L`` is

  - ``"reversed_pair_loss"`` (default): ``log(1 + exp(+sigma (s_i - s_j)))``,
    the loss of the *reversed* pair, larger the better the pair is already
    ordered; XGBoost's ``lambdarank_unbiased`` (``log(1 / (1 -
    Sigmoid(s_i - s_j)))``);
  - ``"pair_loss"``: ``log(1 + exp(-sigma (s_i - s_j)))``, the pair's own
    RankNet loss (the paper's ``L``; Hu et al.'s own implementation).

  The default is the reversed cost because it is the one that debiases in
  practice.  With the paper's cost a model that soon follows the display
  order makes ``t-`` fall with depth while ``t+`` stays high, and the two
  tables cancel in ``1 / (t+ t-)`` (their learned ratio ``t-/t+`` stays
  within 1.15-2.2 where the true ``1/theta`` is 2-100).  In issue 21's PBM
  setting scaled down (``experiments/probe_bias_cost.py``: synthetic
  MSLR-shaped data, a deterministic logger, top 10 shown, examination
  ``(1/rank)**eta``, 3 seeds; ``experiments/results/probe_bias_cost.md``)
  the reversed cost gains +0.0058 ± 0.0007 / +0.0016 ± 0.0032 nDCG@10 over
  naive click training at ``eta = 1 / 2``, the paper's cost +0.0003 ±
  0.0018 / -0.0001 ± 0.0010; the issue's full-size measurement gave
  +0.0063 / +0.0046 against +0.0003 / +0.0010.  Both costs are formed with the
  exact sigmoid in both ``sigmoid`` modes and ignore sample weights (as
  XGBoost, whose query weights scale gradients only); the per-round cost of
  the kernel is the same for both (one logarithm per pair; with the exact
  sigmoid the pair's ``exp`` comes from one per document and the logarithms
  from one vectorised series pass per rank, :mod:`ltr.kernels._debiased`).
  Known propensities compute no costs.
* **Positions beyond** ``max_position`` share the last tracked slot (Hu et
  al.'s ``position_bins``): every pair is debiased, and the tail's pairs
  pool into one estimate.  XGBoost instead leaves such pairs unweighted and
  out of the estimate.
* **Zeros.**  A slot that no pair touched in a round (its sum is 0) keeps
  its previous value; if position 1's sum is 0 the whole table keeps its
  values.  Tables therefore stay finite and > 0.

**Known propensities** (``propensity=[...]``, index 0 = position 1): IPS
weighted pairs (Wang et al. 2018): each pair is divided by the propensity of
its more relevant (clicked) document's position, ``t+ = max(propensity,
propensity_clip)``, ``t- = 1``; nothing is learned.  Positions beyond the
table use its last entry.  ``propensity_clip`` is a lower bound on the
propensity, so it caps pair weights at ``1 / propensity_clip``.

**Per-row propensities**: an array with one value per row of the data the
gradients are computed on, over more than one query, is read per row
(:func:`ltr._propensities.propensity_per_row` is the rule): each pair is divided
by ``max(p[row of the more relevant document], propensity_clip)``, e.g. a
cascade model's examination probability of that impression.  Internally
every row is its own slot, so the arithmetic is the per-position case's:
per-row values equal to a table expanded by position give bit-identical
gradients.  Positions are still required (and checked).

References
----------
Hu, Wang, Peng, Li. "Unbiased LambdaMART: An Unbiased Pairwise Learning-to-Rank
Algorithm". WWW 2019.
Wang, Golbandi, Bendersky, Metzler, Najork. "Position Bias Estimation for Unbiased
Learning to Rank in Personal Search". WSDM 2018.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

import numpy as np

from ltr._propensities import check_propensities, propensity_per_row
from ltr._validation import (
    check_1d_float,
    check_int,
    check_positions,
    check_real,
    short_repr,
)

__all__ = [
    "BIAS_COSTS",
    "BiasSetup",
    "PositionBiasMixin",
    "check_bias_cost",
    "check_bias_state",
    "check_debias",
    "initial_tables",
    "missing_position_error",
    "position_slots",
    "position_without_debias_error",
    "reduce_costs",
    "update_tables",
]

_STATE_KEYS = ("mode", "t_plus", "t_minus", "bias_norm", "max_position", "rounds")

#: Per-pair costs of the learned position biases (``bias_cost``), the default first.
BIAS_COSTS = ("reversed_pair_loss", "pair_loss")


class BiasSetup:
    """Checked debiasing settings: ``mode`` is ``None``, ``"learned"`` or ``"propensity"``."""

    __slots__ = ("bias_norm", "clip", "cost", "mode", "n_slots", "propensity")

    def __init__(self, mode: str | None, bias_norm: float, n_slots: int,
                 propensity: np.ndarray | None, clip: float | None,
                 cost: str = BIAS_COSTS[0]) -> None:
        self.mode = mode
        self.bias_norm = bias_norm
        self.n_slots = n_slots
        self.propensity = propensity
        self.clip = clip
        self.cost = cost


def check_bias_cost(bias_cost: Any) -> str:
    """Return *bias_cost* checked against :data:`BIAS_COSTS`.

    Examples
    --------
    >>> from ltr.objectives._unbiased import check_bias_cost
    >>> check_bias_cost("pair_loss")
    'pair_loss'
    """
    if not isinstance(bias_cost, str) or bias_cost not in BIAS_COSTS:
        raise ValueError(
            f"bias_cost must be one of {list(BIAS_COSTS)!r} (the pair cost of the learned "
            f"position biases), got {short_repr(bias_cost)}"
        )
    return bias_cost


def check_debias(unbiased: Any, bias_norm: Any, propensity: Any, propensity_clip: Any,
                 max_position: Any, bias_cost: Any = BIAS_COSTS[0]) -> BiasSetup:
    """Validate the debiasing arguments of :class:`~ltr.objectives.LambdaRankObjective`.

    Returns
    -------
    BiasSetup
        ``mode`` ``"propensity"`` when *propensity* is given (whatever
        *unbiased*), ``"learned"`` when *unbiased*, else ``None``.

    Examples
    --------
    >>> from ltr.objectives._unbiased import check_debias
    >>> check_debias(True, 1.0, None, None, 10).mode
    'learned'
    >>> check_debias(False, 1.0, [1.0, 0.5], 0.1, 10).n_slots
    2
    """
    if not isinstance(unbiased, (bool, np.bool_)):
        raise TypeError(f"unbiased must be a bool, got {short_repr(unbiased)}")
    b = check_real(bias_norm, "bias_norm", minimum=0.0)
    m = check_int(max_position, "max_position", minimum=1)
    cost = check_bias_cost(bias_cost)
    clip = None
    if propensity_clip is not None:
        clip = check_real(propensity_clip, "propensity_clip", minimum=0.0,
                          exclusive_minimum=True, maximum=1.0)
    if propensity is not None:
        p = check_propensities(propensity, "propensity")
        return BiasSetup("propensity", b, int(p.size), p, clip, cost)
    if clip is not None:
        raise ValueError(
            f"propensity_clip={clip!r} is given without propensity: it bounds known "
            "propensities from below; pass propensity=[...] or drop propensity_clip"
        )
    return BiasSetup("learned" if unbiased else None, b, m, None, None, cost)


def initial_tables(setup: BiasSetup) -> tuple[np.ndarray, np.ndarray]:
    """``(t_plus, t_minus)`` before the first round: ones, or the clipped propensities."""
    if setup.mode == "propensity" and setup.propensity is not None:
        tp = setup.propensity.copy()
        if setup.clip is not None:
            tp = np.maximum(tp, setup.clip)
        return tp, np.ones(setup.n_slots)
    return np.ones(setup.n_slots), np.ones(setup.n_slots)


def missing_position_error() -> ValueError:
    """Return the error for a debiasing objective called without display positions."""
    return ValueError(
        "position is required: LambdaRankObjective(unbiased=True) or (propensity=[...]) "
        "debiases by display position but none was given. Pass position=<display rank per "
        "row, 1 = top, in training-row order> to LambdaRankObjective(..., position=...) when "
        "handing the objective to lightgbm.train / xgboost.train, to gradients(..., "
        "position=...), or to LambdaMARTRanker.fit(X, y, qid=..., position=...)"
    )


def position_without_debias_error() -> ValueError:
    """Return the error for positions given to an objective that does not use them."""
    return ValueError(
        "position was given but the objective does not debias by position (unbiased=False "
        "and no propensity): set unbiased=True to learn position biases, or propensity=[...] "
        "for known propensities, or position_term=True to learn score offsets per position, "
        "or drop position"
    )


def position_slots(position: Any, offsets: np.ndarray, n_slots: int) -> np.ndarray:
    """Check display positions; return int64 table slots ``min(position, n_slots) - 1``.

    Examples
    --------
    >>> import numpy as np
    >>> from ltr.objectives._unbiased import position_slots
    >>> position_slots([2, 1, 3, 1, 2], np.array([0, 3, 5]), 2).tolist()
    [1, 0, 1, 0, 1]
    """
    pos = check_positions(position, "position", offsets)
    return np.minimum(pos, n_slots) - 1


def reduce_costs(costs: np.ndarray, n_slots: int) -> tuple[np.ndarray, np.ndarray]:
    """Sum a round's per-query slot costs over the queries, in query order: ``(li, lj)``.

    *costs* is ``(n_queries, 2 * n_slots)`` as the kernel fills it (each
    query's rows summed in row order, the ``t+`` costs then the ``t-``
    ones), so the sums do not depend on the number of threads.

    Examples
    --------
    >>> import numpy as np
    >>> from ltr.objectives._unbiased import reduce_costs
    >>> li, lj = reduce_costs(np.array([[1.0, 2.0, 0.5, 0.0], [3.0, 0.0, 0.5, 0.0]]), 2)
    >>> li.tolist(), lj.tolist()
    ([4.0, 2.0], [1.0, 0.0])
    """
    total = np.add.reduce(costs, axis=0) if costs.shape[0] else np.zeros(2 * n_slots)
    return total[:n_slots], total[n_slots:]


def _ratio(acc: np.ndarray, old: np.ndarray, power: float) -> np.ndarray:
    if not acc[0] > 0.0:
        return old
    out = old.copy()
    seen = acc > 0.0
    out[seen] = (acc[seen] / acc[0]) ** power
    out[0] = 1.0
    return out


def update_tables(li: np.ndarray, lj: np.ndarray, t_plus: np.ndarray, t_minus: np.ndarray,
                  bias_norm: float) -> tuple[np.ndarray, np.ndarray]:
    """Re-estimate ``(t_plus, t_minus)`` from one round's per-slot costs (new arrays).

    Examples
    --------
    >>> import numpy as np
    >>> from ltr.objectives._unbiased import update_tables
    >>> tp, tm = update_tables(np.array([4.0, 1.0, 0.0]), np.array([1.0, 4.0, 9.0]),
    ...                        np.ones(3), np.ones(3), 1.0)
    >>> tp.tolist(), tm.tolist()
    ([1.0, 0.5, 1.0], [1.0, 2.0, 3.0])
    """
    power = 1.0 / (1.0 + bias_norm)
    return _ratio(li, t_plus, power), _ratio(lj, t_minus, power)


def check_bias_state(state: Any, setup: BiasSetup) -> tuple[np.ndarray, np.ndarray, int]:
    """Validate a :meth:`~ltr.objectives.LambdaRankObjective.bias_state` dict for *setup*.

    Returns
    -------
    t_plus, t_minus : ndarray of float64
    rounds : int
    """
    if not isinstance(state, Mapping):
        raise TypeError(f"state must be a dict from bias_state(), got {short_repr(state)}")
    missing = [key for key in _STATE_KEYS if key not in state]
    if missing:
        raise ValueError(
            f"state has no {missing[0]!r}: pass the dict returned by bias_state() "
            f"(keys {list(_STATE_KEYS)!r})"
        )
    if state["mode"] != setup.mode:
        raise ValueError(
            f"state['mode'] is {state['mode']!r} but this objective's mode is {setup.mode!r}: "
            "restore into an objective built with the same unbiased / propensity settings"
        )
    # a state saved before bias_cost existed was learned with the paper's cost, the only one
    cost = state.get("bias_cost", "pair_loss") if setup.mode == "learned" else setup.cost
    if cost != setup.cost:
        raise ValueError(
            f"state['bias_cost'] is {cost!r} but the objective has {setup.cost!r}: restore into "
            f"an objective built with bias_cost={cost!r} (a state without 'bias_cost' was "
            "learned with 'pair_loss', the only cost before)"
        )
    for key, mine in (("bias_norm", setup.bias_norm), ("max_position", setup.n_slots)):
        if state[key] != mine:
            raise ValueError(
                f"state[{key!r}] is {state[key]!r} but the objective has {mine!r}: restore into "
                f"an objective built with {key}={state[key]!r}"
            )
    if setup.mode == "propensity" and state.get("per_row"):  # fixed per-row values, not stored
        tp0, tm0 = initial_tables(setup)
        return tp0, tm0, check_int(state["rounds"], "state['rounds']", minimum=0)
    tables = []
    for key in ("t_plus", "t_minus"):
        arr = check_1d_float(state[key], f"state[{key!r}]")
        if arr.size != setup.n_slots:
            raise ValueError(
                f"state[{key!r}] has {arr.size} entries but the objective tracks "
                f"{setup.n_slots} positions"
            )
        bad = ~np.isfinite(arr) | (arr <= 0)
        if bad.any():
            i = int(np.flatnonzero(bad)[0])
            raise ValueError(f"state[{key!r}] must be finite and > 0; entry {i} is {arr[i]!r}")
        tables.append(arr.copy())
    if setup.mode == "propensity":
        tp0, tm0 = initial_tables(setup)
        if not (np.array_equal(tables[0], tp0) and np.array_equal(tables[1], tm0)):
            raise ValueError(
                "state holds other propensities than the objective's propensity (after "
                "propensity_clip): restore into an objective built with the same propensity"
            )
    rounds = check_int(state["rounds"], "state['rounds']", minimum=0)
    return tables[0], tables[1], rounds


class PositionBiasMixin:
    """Position-bias state and methods of :class:`~ltr.objectives.LambdaRankObjective`.

    Holds the checked settings, the tables :attr:`t_plus_` / :attr:`t_minus_`
    (replaced, never modified in place, so a shallow copy of the objective
    evolves on its own) and the positions' slots, checked once per query
    layout and position array.
    """

    iteration: int
    _bias: BiasSetup
    _pos_cache: tuple[Any, np.ndarray, np.ndarray] | None
    _bias_rounds: int
    _per_row: bool
    t_plus_: np.ndarray | None
    t_minus_: np.ndarray | None

    def _init_bias(self, unbiased: Any, bias_norm: Any, position: Any, propensity: Any,
                   propensity_clip: Any, max_position: Any,
                   bias_cost: Any = BIAS_COSTS[0]) -> None:
        self._bias = check_debias(unbiased, bias_norm, propensity, propensity_clip, max_position,
                                  bias_cost)
        self.bias_cost = self._bias.cost
        if position is not None and self._bias.mode is None:
            raise position_without_debias_error()
        self.unbiased = bool(unbiased)
        self.bias_norm = self._bias.bias_norm
        self.position = position
        self.propensity = self._bias.propensity
        self.propensity_clip = self._bias.clip
        self.max_position = check_int(max_position, "max_position", minimum=1)
        self._pos_cache = None
        self._bias_rounds = 0
        self._per_row = False
        self.t_plus_ = None
        self.t_minus_ = None
        if self._bias.mode is not None:
            self.t_plus_, self.t_minus_ = initial_tables(self._bias)

    def _bias_repr(self) -> str:
        if self._bias.mode is None:
            return ""
        return (
            f", unbiased={self.unbiased!r}, bias_norm={self.bias_norm!r}, "
            f"bias_cost={self.bias_cost!r}, "
            f"position={'None' if self.position is None else '<array>'}, "
            f"propensity={'None' if self.propensity is None else '<array>'}, "
            f"propensity_clip={self.propensity_clip!r}, max_position={self.max_position!r}"
        )

    def reset(self, iteration: int = 0) -> None:
        """Set the round counter (e.g. ``reset(n_done)`` before continuing training).

        ``reset(0)`` also restarts learned position biases at 1; ``reset(n)``
        with ``n > 0`` keeps them (restore them with :meth:`set_bias_state`).
        """
        super().reset(iteration)  # type: ignore[misc]
        if self.iteration == 0 and self._bias.mode == "learned":
            self.t_plus_, self.t_minus_ = initial_tables(self._bias)
            self._bias_rounds = 0

    def bias_state(self) -> dict[str, Any]:
        """Position-bias state as JSON-able data, for checkpoints (see :meth:`set_bias_state`).

        Returns
        -------
        dict
            ``{"mode": "learned" | "propensity", "t_plus": [...], "t_minus": [...],
            "bias_norm": float, "bias_cost": str, "max_position": int, "rounds": int}``;
            ``t_*`` are
            the tables the next round uses (index 0 = position 1),
            ``max_position`` the number of slots, ``rounds`` the updates so far.
            Per-round cost sums are not state: each round starts them at zero.
            Per-row propensities (once read per row) are not repeated:
            ``t_plus`` and ``t_minus`` are then empty and ``"per_row": True``.
        """
        if self._bias.mode is None or self.t_plus_ is None or self.t_minus_ is None:
            raise ValueError(
                "bias_state() needs a debiasing objective: build it with unbiased=True or "
                "propensity=[...]"
            )
        per_row = self._bias.mode == "propensity" and self._per_row
        return {
            "mode": self._bias.mode,
            "t_plus": [] if per_row else [float(v) for v in self.t_plus_],
            "t_minus": [] if per_row else [float(v) for v in self.t_minus_],
            **({"per_row": True} if per_row else {}),
            "bias_norm": self.bias_norm,
            "bias_cost": self.bias_cost,
            "max_position": self._bias.n_slots,
            "rounds": self._bias_rounds,
        }

    def set_bias_state(self, state: Mapping[str, Any]) -> None:
        """Restore a :meth:`bias_state` dict (checked against this objective's settings)."""
        if self._bias.mode is None:
            raise ValueError(
                "set_bias_state() needs a debiasing objective: build it with unbiased=True or "
                "propensity=[...]"
            )
        self.t_plus_, self.t_minus_, self._bias_rounds = check_bias_state(state, self._bias)

    def _debias(
        self, position: Any
    ) -> Callable[[np.ndarray], tuple[np.ndarray, np.ndarray, np.ndarray, bool, bool]] | None:
        pos = self.position if position is None else position
        if self._bias.mode is None:
            if pos is not None:
                raise position_without_debias_error()
            return None
        if pos is None:
            raise missing_position_error()

        reverse = self._bias.cost == "reversed_pair_loss"
        learned = self._bias.mode == "learned"  # known propensities need no pair costs

        def tables(offsets: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray, bool, bool]:
            c = self._pos_cache
            if c is None or c[0] is not pos or not np.array_equal(c[1], offsets):
                slot = position_slots(pos, offsets, self._bias.n_slots)
                self._per_row = self._bias.mode == "propensity" and propensity_per_row(
                    self._bias.n_slots, offsets
                )
                if self._per_row:  # every row its own slot: t+ holds the row's propensity
                    slot = np.arange(offsets[-1], dtype=np.int64)
                c = self._pos_cache = (pos, offsets.copy(), slot)
            assert self.t_plus_ is not None and self.t_minus_ is not None
            return c[2], self.t_plus_, self.t_minus_, reverse, learned

        return tables

    def _update_bias(self, costs: np.ndarray | None) -> None:
        if costs is None or self._bias.mode != "learned" or self._pos_cache is None:
            return
        assert self.t_plus_ is not None and self.t_minus_ is not None
        li, lj = reduce_costs(costs, self._bias.n_slots)
        self.t_plus_, self.t_minus_ = update_tables(
            li, lj, self.t_plus_, self.t_minus_, self.bias_norm
        )
        self._bias_rounds += 1

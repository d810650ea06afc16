r"""LambdaRank objectives usable as custom objectives in LightGBM and XGBoost.

:class:`LambdaRankObjective` computes LambdaRank gradients and hessians from
flat scores, labels and query offsets with numba kernels
(:mod:`ltr.kernels._lambdarank`: parallel over queries, no per-pair
allocation, ``O(n)`` buffers).  An instance is a callable ``obj(preds, data)
-> (grad, hess)`` that plugs straight into

* ``lightgbm.train({"objective": obj, ...}, dataset)`` (groups from
  ``Dataset.get_group()``, weights from ``Dataset.get_weight()``), and
* ``xgboost.train(params, dmatrix, obj=obj)`` (groups from
  ``dmatrix.get_uint_info("group_ptr")``).

Compared with LightGBM's native ``lambdarank`` it also accepts graded float
labels (any non-negative value, not just integers below 31), queries longer
than LightGBM's 10,000-row cap, a truncation level that changes per round
(``schedule``), weighted / sampled pairs (:class:`ltr.objectives.sampling.TopKPairSampling`),
and, in :class:`CompositeLambdaRankObjective`, several label columns at once.

With ``sigmoid="lightgbm"`` the sigmoid goes through LightGBM's lookup table
and gradients are accumulated in ``float32`` in LightGBM's order: training
then reproduces ``objective="lambdarank"`` bit for bit (same
``lambdarank_truncation_level=k``, ``label_gain``, ``lambdarank_norm``,
``sigmoid`` and tree parameters).  ``sigmoid="exact"`` (default) evaluates
``1 / (1 + exp(sigma * ds))`` and accumulates in ``float64``.

The gradient of one pair (``high`` has the larger label, ranks by current
score, stable for ties) is

.. math::

    |\Delta| = \frac{(g_{high} - g_{low}) |d(r_{high}) - d(r_{low})|}
                     {\mathrm{maxDCG@k}}, \quad d(r) = \frac{1}{\log_2(2 + r)},

    \rho = \frac{1}{1 + e^{\sigma (s_{high} - s_{low})}},\quad
    \lambda = -\sigma \rho |\Delta|,\quad h = \sigma^2 \rho (1 - \rho) |\Delta|,

summed over pairs with different labels where at least one document is in the
current top ``k``; with ``norm=True`` ``|Delta|`` is divided by
``0.01 + |s_high - s_low|`` and the query's terms are scaled by
``log2(1 + S) / S`` (``S = sum 2|lambda|``), as in LightGBM.

References
----------
Burges. "From RankNet to LambdaRank to LambdaMART: An Overview". MSR-TR-2010-82.
Svore, Volkovs, Burges. "Learning to rank with multiple objective functions". WWW 2011.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any, Union

import numba
import numpy as np

from ltr._validation import (
    INT32_MAX,
    check_1d_float,
    check_int,
    check_labels,
    check_offsets,
    check_real,
    check_seed,
    short_repr,
)
from ltr.kernels import _lambdarank as _kern
from ltr.metrics.gains import gain_values as _gain_values
from ltr.metrics.gains import parse_gain
from ltr.objectives import _unbiased as _ub
from ltr.objectives._engine_data import check_lightgbm_data, engine_inputs
from ltr.objectives._position_term import PositionTermMixin
from ltr.objectives.sampling import TopKPairSampling, round_seed

__all__ = ["LambdaRankObjective"]

GainSpec = Union[str, "np.typing.ArrayLike"]
_SIGMOIDS = ("exact", "lightgbm")

_TABLE_LOCK = threading.Lock()
_TABLES: dict[float, tuple[np.ndarray, float, float, float]] = {}
_DUMMY_F = np.zeros(1, dtype=np.float64)
_PARALLEL_MIN_ROWS = 20_000  # below this the serial kernel driver is used


def _sigmoid_table(sigma: float) -> tuple[np.ndarray, float, float, float]:
    with _TABLE_LOCK:
        hit = _TABLES.get(sigma)
        if hit is None:
            table, tmin, tmax, factor = _kern.lightgbm_sigmoid_table(sigma)
            hit = (table, float(tmin), float(tmax), float(factor))
            _TABLES.clear()  # 8 MiB each: keep only the latest sigma
            _TABLES[sigma] = hit
        return hit


# ------------------------------------------------------------------ validation


def _check_gain(gain: Any, name: str) -> tuple[str, np.ndarray | None]:
    """``("exp2"|"linear", None)`` or ``("table", gains >= 0)``."""
    return parse_gain(gain, name, allow_callable=False, nonnegative=True)


def _check_offsets(offsets: Any, n_rows: int) -> np.ndarray:
    """Apply the one offsets rule (:func:`ltr._validation.check_offsets`)."""
    try:
        return check_offsets(offsets, "offsets", n_rows)
    except ValueError as exc:
        raise ValueError(
            "offsets must start at 0, increase strictly (no empty query) and end at the "
            f"number of rows ({n_rows}): {exc}"
        ) from None


# ------------------------------------------------------------------ base


class _LambdaRankBase:
    """Shared state and kernel dispatch of the single and composite objectives."""

    def __init__(
        self,
        k: int,
        sigma: float,
        norm: bool,
        sampling: TopKPairSampling | None,
        schedule: Callable[[int], int] | None,
        sigmoid: str,
        random_state: Any,
    ) -> None:
        self.k = check_int(k, "k", minimum=1, maximum=INT32_MAX)
        self.sigma = check_real(sigma, "sigma", minimum=0.0, exclusive_minimum=True)
        if not isinstance(norm, (bool, np.bool_)):
            raise TypeError(f"norm must be a bool, got {short_repr(norm)}")
        self.norm = bool(norm)
        if sampling is not None and not isinstance(sampling, TopKPairSampling):
            raise TypeError(
                f"sampling must be None or a TopKPairSampling, got {short_repr(sampling)}"
            )
        self.sampling = sampling
        if schedule is not None and not callable(schedule):
            raise TypeError(
                f"schedule must be None or a callable round -> k, got {short_repr(schedule)}"
            )
        self.schedule = schedule
        if sigmoid not in _SIGMOIDS:
            raise ValueError(f"sigmoid must be 'exact' or 'lightgbm', got {sigmoid!r}")
        self.sigmoid = sigmoid
        self.random_state = random_state
        seed = None
        if sampling is not None:
            seed = sampling.base_seed
        if seed is None:
            seed = check_seed(random_state, "random_state")
        if seed is None:
            entropy = np.random.SeedSequence().entropy  # an int when drawn from the OS
            assert isinstance(entropy, int)
            seed = int(entropy % (2**63))
        self._seed = seed
        self.iteration = 0
        self._prep: dict[str, Any] | None = None
        self._work: dict[str, np.ndarray] = {}
        self._sorted_for: np.ndarray | None = None  # offsets that _work["perm"] is ordered for
        self._disc = _kern.position_discounts(1)
        self._checked_data: int | None = None  # id of the engine Dataset last checked

    def _check_engine_data(self, data: Any) -> None:
        """Check a LightGBM Dataset's setup once (not every round)."""
        if self._checked_data == id(data):
            return
        if hasattr(data, "get_group") and not hasattr(data, "get_uint_info"):
            check_lightgbm_data(data)
        self._checked_data = id(data)

    # -- state ---------------------------------------------------------------

    def __copy__(self) -> _LambdaRankBase:
        # A shallow copy shares the settings and the (read-only) label columns and positions,
        # but gets its own scratch: the buffers are written in place by every call, so a copy
        # that shared them would corrupt the original's warm start.
        out = object.__new__(type(self))
        out.__dict__.update(self.__dict__)
        out._work = {}
        out._prep = None
        out._sorted_for = None
        out._checked_data = None
        if "_pos_cache" in out.__dict__:
            out.__dict__["_pos_cache"] = None
        return out

    def reset(self, iteration: int = 0) -> None:
        """Set the round counter (e.g. ``reset(n_done)`` before continuing training)."""
        self.iteration = check_int(iteration, "iteration", minimum=0)

    def k_at(self, iteration: int) -> int:
        """Return the truncation level of round ``iteration`` (``schedule(iteration)`` or ``k``)."""
        if self.schedule is None:
            return self.k
        k = self.schedule(iteration)
        if isinstance(k, (bool, np.bool_)) or not isinstance(k, (int, np.integer)) or k < 1:
            raise ValueError(f"schedule({iteration}) must return an integer k >= 1, got {k!r}")
        return int(k)

    # -- kernel dispatch -----------------------------------------------------

    def _buffers(self, n: int, sampled: bool, exact: bool, debias: bool) -> dict[str, np.ndarray]:
        w = self._work
        need = n if sampled else 1
        rows = n if (exact or sampled) else 1
        blocks = 11 if debias and exact and not sampled else 5  # the debiased kernel's 11
        if (
            w.get("perm") is None or w["perm"].shape[0] != n or w["ibuf"].shape[0] != 13 * need
            or w["rb"].shape[0] != blocks * rows or w["cost"].shape[1] != (n if debias else 0)
        ):
            perm = w.get("perm")
            w = {
                "perm": perm if perm is not None and perm.shape[0] == n
                else np.empty(n, dtype=np.int64),
                "tmp": np.empty(n, dtype=np.int64),
                "skey": np.empty(2 * n, dtype=np.float64),
                "ibuf": np.empty(13 * need, dtype=np.int32),
                "rb": np.empty(blocks * rows, dtype=np.float64),
                "acc_l": np.empty(n, dtype=np.float64),
                "acc_h": np.empty(n, dtype=np.float64),
                "cost": np.empty((2, n if debias else 0)),  # pair-cost rows (zeroed by the kernel)
            }
            if perm is None or perm.shape[0] != n:
                self._sorted_for = None
            self._work = w
        return w

    def _prepared(
        self, label_cols: list[np.ndarray], specs: list[tuple[str, np.ndarray | None]],
        names: list[str], offsets: np.ndarray, k: int,
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """Return the validated ``(labels2d, gains2d, inv_idcg, gid, n_grades)``, cached."""
        p = self._prep
        if (
            p is not None
            and p["k"] == k
            and np.array_equal(p["offsets"], offsets)
            and len(p["raw"]) == len(label_cols)
            and all(np.array_equal(a, b) for a, b in zip(p["raw"], label_cols))
        ):
            return p["labels"], p["gains"], p["inv_idcg"], p["gid"], p["n_grades"]
        ys = [check_labels(y, name) for y, name in zip(label_cols, names)]
        gains = np.vstack([_gain_values(y, s, name) for y, s, name in zip(ys, specs, names)])
        labels2d = np.vstack(ys)
        max_n = int(np.max(np.diff(offsets))) if offsets.size > 1 else 1
        if self._disc.shape[0] < max_n:
            self._disc = _kern.position_discounts(max_n)
        work = np.empty(labels2d.shape[1], dtype=np.float64)
        inv = _kern.inverse_ideal_dcg(gains, offsets, k, self._disc, work)
        gid, n_grades = _kern.grade_ids(labels2d, offsets, work)
        self._prep = {
            "k": k, "offsets": offsets.copy(), "raw": [np.array(y, copy=True) for y in label_cols],
            "labels": labels2d, "gains": gains, "inv_idcg": inv, "gid": gid, "n_grades": n_grades,
        }
        return labels2d, gains, inv, gid, n_grades

    def _compute(
        self, scores: np.ndarray, label_cols: list[np.ndarray],
        specs: list[tuple[str, np.ndarray | None]], names: list[str], obj_weights: np.ndarray,
        offsets: np.ndarray, iteration: int, sample_weight: np.ndarray | None,
        debias: Callable[[np.ndarray], tuple[Any, ...]] | None = None,
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray | None]:
        """``(grad, hess, costs)``; *debias* maps offsets to ``(slot, t+, t-, reverse, learned)``.

        ``costs``: ``None`` without *debias* or unless *learned* (known propensities
        skip the pair costs), else the costs per query and slot, ``(n_queries, 2 *
        n_slots)``, ``t+`` then ``t-`` (one label column: objective weight 1).
        """
        n = scores.shape[0]
        for y, name in zip(label_cols, names):
            if len(y) != n:
                raise ValueError(f"{name} has {len(y)} rows but scores has {n}; they must match")
        offsets = _check_offsets(offsets, n)
        k = self.k_at(iteration)
        labels2d, gains2d, inv, gid, n_grades = self._prepared(label_cols, specs, names, offsets, k)
        if self.sampling is not None:
            top, head_weight, ppd = self.sampling.kernel_args()
        else:
            top, head_weight, ppd = 1, 1.0, 0
        lgb = self.sigmoid == "lightgbm"
        if lgb:
            table, tmin, tmax, factor = _sigmoid_table(self.sigma)
        else:
            table, tmin, tmax, factor = _DUMMY_F, 0.0, 0.0, 1.0
        seed = round_seed(self._seed, iteration) if ppd > 0 else np.uint64(0)
        buf = self._buffers(n, ppd > 0, not lgb, debias is not None)
        # the previous call's per-query order (same offsets) seeds this call's sort
        warm = self._sorted_for is not None and np.array_equal(self._sorted_for, offsets)
        grad = np.empty(n, dtype=np.float64)
        hess = np.empty(n, dtype=np.float64)
        # Thread start-up costs more than small inputs take; results are identical.
        serial = n < _PARALLEL_MIN_ROWS or numba.get_num_threads() == 1
        driver = _kern.lambdarank_gradients_serial if serial else _kern.lambdarank_gradients
        costs = None
        bias: tuple[tuple[Any, ...], ...] = ()  # none: the plain kernels
        if debias is not None:
            slot, tp, tm, reverse, learned = debias(offsets)
            # empty cost rows: no pair costs computed; else the kernel fills costs per query
            rows = (buf["cost"][0], buf["cost"][1]) if learned else (_DUMMY_F[:0], _DUMMY_F[:0])
            qcost = np.empty((offsets.shape[0] - 1, 2 * tp.shape[0]) if learned else (0, 0))
            costs = qcost if learned else None
            bias = ((slot, tp, tm, reverse, *rows, qcost),)
        self._sorted_for = None  # perm is rewritten below; valid again once the call returns
        driver(
            scores, labels2d, gains2d, gid, n_grades, offsets, inv, obj_weights, k,
            self.sigma, self.norm, lgb, table, tmin, tmax, factor, self._disc, top,
            head_weight, ppd, seed, lgb, warm, grad, hess, buf["perm"], buf["tmp"],
            buf["skey"], buf["ibuf"], buf["rb"], buf["acc_l"], buf["acc_h"], *bias,
        )
        self._sorted_for = offsets.copy()
        if sample_weight is not None:
            sw = check_1d_float(sample_weight, "sample_weight")
            if sw.shape[0] != n:
                raise ValueError(f"sample_weight has {sw.shape[0]} rows but scores has {n}")
            if lgb:  # LightGBM multiplies in float32
                sw32 = sw.astype(np.float32)
                grad = (grad.astype(np.float32) * sw32).astype(np.float64)
                hess = (hess.astype(np.float32) * sw32).astype(np.float64)
            else:
                grad *= sw
                hess *= sw
        return grad, hess, costs

    @staticmethod
    def _scores(scores: Any) -> np.ndarray:
        s = check_1d_float(scores, "scores")
        if np.isnan(s).any() or np.isposinf(s).any():
            raise ValueError("scores must not contain NaN or +inf")
        return s


# ------------------------------------------------------------------ public


class LambdaRankObjective(PositionTermMixin, _ub.PositionBiasMixin, _LambdaRankBase):
    """LambdaRank gradients as a LightGBM / XGBoost custom objective.

    Parameters
    ----------
    k : int, default=20
        Truncation level: pairs need one document in the current top ``k``
        and the ideal DCG is taken at ``k`` (LightGBM
        ``lambdarank_truncation_level``).  Ignored when ``schedule`` is set.
    sigma : float, default=1.0
        Sigmoid steepness (> 0), LightGBM ``sigmoid``.
    gain : {"exp2", "linear"} or array-like, default="exp2"
        ``2**label - 1``, ``label``, or a table indexed by integer label
        (LightGBM ``label_gain``).
    norm : bool, default=True
        LightGBM ``lambdarank_norm``: score-distance regularisation and
        per-query ``log2(1 + S) / S`` normalisation.
    sampling : TopKPairSampling or None, default=None
        Pair weighting / sampling; ``None`` uses every eligible pair with weight 1.
    schedule : callable or None, default=None
        ``schedule(iteration) -> k`` (e.g. from :mod:`ltr.objectives.schedules`); overrides ``k``.
    sigmoid : {"exact", "lightgbm"}, default="exact"
        ``"lightgbm"`` reproduces LightGBM's lookup-table sigmoid and float32
        accumulation (bit-identical to ``objective="lambdarank"``).
    random_state : int, numpy Generator or None, default=None
        Seed for sampled pairs (used when ``sampling.random_state`` is None).
    unbiased : bool, default=False
        Unbiased LambdaMART: divide every pair by learned position biases
        ``t_plus_[p_high] * t_minus_[p_low]``, re-estimated after every round
        (:mod:`ltr.objectives._unbiased` has the rule).  Needs ``position``.
    bias_norm : float, default=1.0
        ``b >= 0`` of the update ``t = (l_p / l_1) ** (1 / (1 + b))``
        (XGBoost ``lambdarank_bias_norm``).
    bias_cost : {"reversed_pair_loss", "pair_loss"}, default="reversed_pair_loss"
        Pair cost of learned biases: the reversed pair's loss ``log(1 + exp(+sigma ds))``
        (XGBoost's) or the pair's ``log(1 + exp(-sigma ds))`` (Hu et al.; the only cost
        before).  :mod:`ltr.objectives._unbiased` has the rule and why the default.
    position : array-like of int of shape (n_rows,) or None, default=None
        Display rank of every row in its query (1 = top), in the row order of
        the data the objective is called on: give it here when handing the
        objective to ``lightgbm.train`` / ``xgboost.train``.  Checked once per
        query layout (a permutation of ``1..n_q`` per query).
    propensity : array-like of shape (n_positions,) or (n_rows,), or None, default=None
        Known examination propensities per position (index 0 = position 1,
        each in ``(0, 1]``): fixed IPS pair weights ``1 / propensity[p_high]``
        (Wang et al. 2018) instead of learned biases, whatever ``unbiased``
        says.  Positions beyond the table use its last entry.  Or one value per row
        (:func:`ltr._propensities.propensity_per_row`).  Needs ``position``.
    propensity_clip : float or None, default=None
        Lower bound on ``propensity`` (caps pair weights at ``1 / clip``).
    max_position : int, default=32
        Positions tracked by ``unbiased=True``; deeper positions share the
        last slot.  Ignored with ``propensity``.
    position_term : bool, default=False
        Learn one score offset per display position with the trees (LightGBM's
        position GAM), dropped at prediction; needs ``position``
        (:mod:`ltr.objectives._position_term` has the rule).  Combines with ``unbiased``.
    position_regularization : float, default=0.0
        L2 penalty on the offsets (LightGBM ``lambdarank_position_bias_regularization``).
    position_learning_rate : float or None, default=None
        Step of the offsets' update; None: the booster's learning rate (set by
        :func:`ltr.engines.train`; give it when calling an engine yourself).

    Attributes
    ----------
    iteration : int
        Round of the next ``__call__`` (for handing the objective to an
        engine yourself); see :meth:`reset`.  :func:`ltr.engines.train`
        leaves it alone: it trains a copy and passes the round explicitly
        (:meth:`round_gradients`).
    t_plus_, t_minus_ : ndarray of shape (n_slots,) or None
        Position biases used by the next round (index 0 = position 1); the
        clipped propensities and ones with ``propensity``; ``None`` without
        debiasing.

    Notes
    -----
    Training with :func:`ltr.engines.train` (or the estimator, or
    :func:`ltr.dask.train`) never changes this object: the training works on
    a copy, and the round of every gradient call is the engine's round
    (``schedule(round)`` gives ``k``).  When you hand the objective to
    ``lightgbm.train`` yourself, LightGBM deep-copies its params and the copy
    counts the rounds of that call (pass ``lambda preds, data: obj(preds,
    data)`` instead, a function LightGBM does not copy, to keep the round and
    the learned biases on your instance); ``xgboost.train`` calls your
    instance, so call :meth:`reset` before reusing it for a new training.

    LightGBM recognises a ranking task by the objective's *name* only, so with
    this (or any) custom objective two of its ranking features are lost:

    * ``lightgbm.cv(nfold=...)`` splits rows, not queries: a query's
      documents land in both the training and the validation fold.  Pass
      ``folds=GroupKFold(n).split(X, groups=qid)`` instead.  The objective
      raises ``ValueError`` when it is handed such a fold (a subset that cuts
      a query of its full Dataset).
    * ``bagging_by_query=True`` bags rows, not queries, and trains a
      (near-)constant model.  The objective warns (``UserWarning``) when the
      Dataset's parameters set it.

    A LightGBM Dataset without ``group`` is an error naming how to pass it.

    To continue an unbiased training, save :meth:`bias_state` with the model
    and, on a fresh objective, call :meth:`set_bias_state` and
    ``reset(n_done)``: the continued training is then identical.

    Examples
    --------
    >>> import numpy as np
    >>> from ltr.objectives import LambdaRankObjective
    >>> obj = LambdaRankObjective(k=10)
    >>> grad, hess = obj.gradients(np.zeros(3), np.array([0.0, 2.0, 1.0]), np.array([0, 3]))
    >>> bool(grad[1] < 0 < grad[0])
    True
    >>> ub = LambdaRankObjective(k=10, unbiased=True, max_position=3)
    >>> grad, hess = ub.gradients(np.zeros(3), np.array([0.0, 1.0, 0.0]), np.array([0, 3]),
    ...                           position=[1, 3, 2], update_bias=True)
    >>> ub.t_plus_.tolist(), bool(ub.t_minus_[2] > 0)
    ([1.0, 1.0, 1.0], True)
    """

    def __init__(
        self,
        k: int = 20,
        sigma: float = 1.0,
        gain: GainSpec = "exp2",
        norm: bool = True,
        sampling: TopKPairSampling | None = None,
        schedule: Callable[[int], int] | None = None,
        sigmoid: str = "exact",
        random_state: int | np.random.Generator | None = None,
        *,
        unbiased: bool = False,
        bias_norm: float = 1.0,
        position: Any = None,
        propensity: Any = None,
        propensity_clip: float | None = None,
        max_position: int = 32,
        bias_cost: str = "reversed_pair_loss",
        position_term: bool = False,
        position_regularization: float = 0.0,
        position_learning_rate: float | None = None,
    ) -> None:
        super().__init__(k, sigma, norm, sampling, schedule, sigmoid, random_state)
        self.gain = gain
        self._gain_spec = _check_gain(gain, "gain")
        self._init_term(position_term, position_regularization, position_learning_rate)
        # with the term, positions are used even without debiasing
        self._init_bias(unbiased, bias_norm, None if self.position_term else position,
                        propensity, propensity_clip, max_position, bias_cost)
        self.position = position

    def __repr__(self) -> str:
        return (
            f"LambdaRankObjective(k={self.k!r}, sigma={self.sigma!r}, gain={self.gain!r}, "
            f"norm={self.norm!r}, sampling={self.sampling!r}, schedule={self.schedule!r}, "
            f"sigmoid={self.sigmoid!r}, random_state={self.random_state!r}{self._bias_repr()}"
            f"{self._term_repr()})"
        )

    # -- gradients -------------------------------------------------------------

    def gradients(
        self,
        scores: Any,
        labels: Any,
        offsets: Any,
        iteration: int | None = None,
        *,
        sample_weight: Any = None,
        position: Any = None,
        update_bias: bool = False,
    ) -> tuple[np.ndarray, np.ndarray]:
        """Gradients and hessians (``float64``) without advancing :attr:`iteration`.

        Parameters
        ----------
        scores : array-like of shape (n_rows,)
            Current model scores.
        labels : array-like of shape (n_rows,)
            Graded relevance, non-negative (floats allowed unless ``gain`` is a table).
        offsets : array-like of int of shape (n_queries + 1,)
            Query boundaries: rows ``offsets[q]:offsets[q + 1]`` form query ``q``.
        iteration : int or None, default=None
            Round used for the schedule and the sampling seed
            (``None``: :attr:`iteration`).
        sample_weight : array-like of shape (n_rows,) or None, default=None
            Per-row weights multiplied into gradients and hessians.
        position : array-like of int of shape (n_rows,) or None, default=None
            Display ranks (1 = top) for a debiasing objective (``None``: the
            constructor's ``position``).
        update_bias : bool, default=False
            With ``unbiased=True``, re-estimate :attr:`t_plus_` /
            :attr:`t_minus_` from this call's pairs, as every engine round does.

        Returns
        -------
        grad, hess : ndarray of shape (n_rows,)
        """
        it = self.iteration if iteration is None else check_int(iteration, "iteration", minimum=0)
        s = self._scores(scores)
        y = np.asarray(labels)
        grad, hess, costs = self._compute(
            s, [y], [self._gain_spec], ["labels"], np.ones(1), offsets, it, sample_weight,
            self._debias(position),
        )
        if update_bias:
            self._update_bias(costs)
        return grad, hess

    def round_gradients(
        self, preds: Any, data: Any, iteration: int, *, sample_weight: Any = None
    ) -> tuple[np.ndarray, np.ndarray]:
        """Gradients of round *iteration* from the engine's data; :attr:`iteration` unchanged.

        What :func:`ltr.engines.train` calls every round on its own copy of
        the objective, with the round the engine's callback reports: ``k`` is
        ``schedule(iteration)``, the pair-sampling seed is drawn from
        *iteration*, and with ``unbiased=True`` the learned position biases
        are re-estimated from this round's pairs.

        Parameters
        ----------
        preds : array-like of shape (n_rows,)
            Current scores, as the engine passes them.
        data : lightgbm.Dataset or xgboost.DMatrix
            The engine's training data (labels, query groups, weights).
        iteration : int
            The global boosting round (0-based).
        sample_weight : array-like of shape (n_rows,) or None, default=None
            Row weights instead of the engine data's (a position term steps on weighted sums).

        Returns
        -------
        grad, hess : ndarray of shape (n_rows,)
        """
        self._check_engine_data(data)
        scores, labels, offsets, w = engine_inputs(preds, data)
        grad, hess, costs = self._compute(
            scores, [np.asarray(labels)], [self._gain_spec], ["labels"], np.ones(1), offsets,
            iteration, w if sample_weight is None else sample_weight, self._debias(None),
        )
        self._update_bias(costs)
        return grad, hess

    def __call__(self, preds: Any, data: Any) -> tuple[np.ndarray, np.ndarray]:
        """Custom-objective entry point for LightGBM and XGBoost; advances :attr:`iteration`.

        For handing the objective to ``lightgbm.train``/``xgboost.train``
        yourself: round :attr:`iteration`, then one more.  ``lightgbm.train``
        deep-copies its params, so it counts on its own copy; ``xgboost.train``
        calls this object.  :func:`ltr.engines.train` never calls it (it
        trains a copy through :meth:`round_gradients`).
        """
        grad, hess = self.round_gradients(preds, data, self.iteration)
        self.iteration += 1
        return grad, hess



"""The composite (multi-objective) LambdaRank objective: one gradient over several label columns."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

import numpy as np

from ltr._validation import (
    check_int,
    check_labels,
    check_objective_weights,
    short_repr,
)
from ltr.objectives._engine_data import engine_inputs
from ltr.objectives._lambdarank import (
    GainSpec,
    _check_gain,
    _gain_values,
    _LambdaRankBase,
)
from ltr.objectives.sampling import TopKPairSampling

__all__ = ["CompositeLambdaRankObjective"]


class CompositeLambdaRankObjective(_LambdaRankBase):
    """Weighted sum of LambdaRank objectives over several label columns.

    Each label column (e.g. one per behaviour: ``watch``, ``share``,
    ``follow``) gets its own gain and its own ideal DCG; the gradient and
    hessian are ``sum_o weight_o * lambdarank_o`` with the documents ranked by
    the one shared score.  The engine's own label is ignored.

    Parameters
    ----------
    objectives : Mapping[str, float]
        Objective name -> weight (>= 0, not all zero).
    labels : Mapping[str, array-like]
        Objective name -> per-row label column in training-row order; must
        hold every name of ``objectives``.
    gains : Mapping[str, gain] or None, default=None
        Per-objective gain (``"exp2"``, ``"linear"`` or a table); missing
        names use ``"exp2"``.
    k, sigma, norm, sampling, schedule, sigmoid, random_state
        As in :class:`LambdaRankObjective`.

    Examples
    --------
    >>> import numpy as np
    >>> from ltr.objectives import CompositeLambdaRankObjective
    >>> obj = CompositeLambdaRankObjective(
    ...     {"watch": 1.0, "share": 0.5},
    ...     {"watch": np.array([0.0, 2.0, 1.0]), "share": np.array([1.0, 0.0, 0.0])},
    ...     k=10,
    ... )
    >>> grad, hess = obj.gradients(np.zeros(3), None, np.array([0, 3]))
    >>> grad.shape
    (3,)
    """

    def __init__(
        self,
        objectives: Mapping[str, float],
        labels: Mapping[str, Any],
        gains: Mapping[str, GainSpec] | None = None,
        k: int = 20,
        sigma: float = 1.0,
        norm: bool = True,
        sampling: TopKPairSampling | None = None,
        schedule: Callable[[int], int] | None = None,
        sigmoid: str = "exact",
        random_state: int | np.random.Generator | None = None,
        **debias: Any,
    ) -> None:
        if debias:
            raise ValueError(
                f"CompositeLambdaRankObjective does not debias by position (got "
                f"{sorted(debias)!r}): train one label column with "
                "LambdaRankObjective(unbiased=True, position=...) or (propensity=..., position=...)"
            )
        super().__init__(k, sigma, norm, sampling, schedule, sigmoid, random_state)
        if not isinstance(labels, Mapping):
            raise TypeError(
                f"labels must be a mapping name -> label column, got {short_repr(labels)}"
            )
        checked = check_objective_weights(objectives)
        names = list(checked)
        weights = list(checked.values())
        gains = {} if gains is None else dict(gains)
        unknown = sorted(set(gains) - set(objectives))
        if unknown:
            raise ValueError(f"gains has names that are not objectives: {unknown!r}")
        missing = [name for name in objectives if name not in labels]
        if missing:
            raise ValueError(
                f"labels has no column for objective {missing[0]!r} "
                f"(available: {sorted(map(str, labels))!r})"
            )
        self.objectives = dict(objectives)
        self.gains = gains
        self._names = names
        self._weights = np.asarray(weights, dtype=np.float64)
        self._specs = [
            _check_gain(gains.get(name, "exp2"), f"gains[{name!r}]") for name in objectives
        ]
        cols = []
        n_rows = None
        for name, spec in zip(objectives, self._specs):
            y = check_labels(labels[name], f"labels[{name!r}]")
            _gain_values(y, spec, f"labels[{name!r}]")  # fail early: beyond table, overflow
            if n_rows is not None and y.shape[0] != n_rows:
                raise ValueError(
                    f"labels[{name!r}] has {y.shape[0]} rows but labels[{names[0]!r}] has {n_rows}"
                )
            n_rows = y.shape[0]
            cols.append(y)
        self.labels = dict(zip(objectives, cols))
        self._cols = cols

    def __repr__(self) -> str:
        return (
            f"CompositeLambdaRankObjective(objectives={self.objectives!r}, "
            f"labels=<{len(self._cols)} columns>, gains={self.gains!r}, k={self.k!r}, "
            f"sigma={self.sigma!r}, norm={self.norm!r}, sampling={self.sampling!r}, "
            f"schedule={self.schedule!r}, sigmoid={self.sigmoid!r}, "
            f"random_state={self.random_state!r})"
        )

    def _columns(self, labels: Any) -> list[np.ndarray]:
        if isinstance(labels, Mapping):
            missing = [name for name in self.objectives if name not in labels]
            if missing:
                raise ValueError(f"labels has no column for objective {missing[0]!r}")
            return [np.asarray(labels[name]) for name in self.objectives]
        return self._cols

    def gradients(
        self,
        scores: Any,
        labels: Any,
        offsets: Any,
        iteration: int | None = None,
        *,
        sample_weight: Any = None,
    ) -> tuple[np.ndarray, np.ndarray]:
        """Weighted composite gradients and hessians without advancing :attr:`iteration`.

        ``labels`` may be a mapping name -> column overriding the stored columns;
        anything else (``None``, the engine label) uses the stored columns.
        See :meth:`LambdaRankObjective.gradients` for the other arguments.
        """
        it = self.iteration if iteration is None else check_int(iteration, "iteration", minimum=0)
        s = self._scores(scores)
        names = [f"labels[{name!r}]" for name in self._names]
        return self._compute(
            s, self._columns(labels), self._specs, names, self._weights, offsets, it, sample_weight
        )[:2]

    def round_gradients(
        self, preds: Any, data: Any, iteration: int
    ) -> tuple[np.ndarray, np.ndarray]:
        """Composite gradients of round *iteration* from the engine's data (groups, weights).

        See :meth:`LambdaRankObjective.round_gradients`; :attr:`iteration` is unchanged.
        """
        self._check_engine_data(data)
        scores, _, offsets, w = engine_inputs(preds, data)
        names = [f"labels[{name!r}]" for name in self._names]
        grad, hess, _ = self._compute(
            scores, self._cols, self._specs, names, self._weights, offsets, iteration, w
        )
        return grad, hess

    def __call__(self, preds: Any, data: Any) -> tuple[np.ndarray, np.ndarray]:
        """Custom-objective entry point for LightGBM and XGBoost; advances :attr:`iteration`.

        See :meth:`LambdaRankObjective.__call__`.
        """
        grad, hess = self.round_gradients(preds, data, self.iteration)
        self.iteration += 1
        return grad, hess

"""The one builder: training settings -> engine parameters, objective, schedule.

``ltr train`` / ``ltr tune`` (through :func:`ltr.runs.settings.settings_from_config`)
and :class:`ltr.estimator.LambdaMARTRanker` (through its parameters) describe a
training with the same :class:`TrainSettings`; :func:`build_training` turns it
into the keyword arguments of :func:`ltr.engines.train`.  Nothing else in the
package translates settings into engine objects, so the three paths cannot
drift apart: one set of settings trains one model.

Settings use the estimator's parameter names (scikit-learn's search spaces
name them), so a search result applies to a config unchanged.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ltr._validation import check_int, check_objective_weights, check_real, check_seed, short_repr

__all__ = ["OBJECTIVES", "TrainSettings", "build_training", "engine_params", "resolve_objective"]

#: The objective choices: ``"native"`` is the engine's own LambdaRank
#: (LightGBM ``lambdarank`` / XGBoost ``rank:ndcg``), ``"lambdarank"`` is ltr's.
OBJECTIVES = ("native", "lambdarank")

_SIGMOIDS = ("exact", "lightgbm")


@dataclass(frozen=True)
class TrainSettings:
    """Everything that decides which model a training produces (data aside).

    Field names are :class:`ltr.estimator.LambdaMARTRanker`'s parameters; the
    config's keys map onto them in :func:`ltr.runs.settings.settings_from_config`.

    Parameters
    ----------
    engine : {"lightgbm", "xgboost"}
        Boosting library.
    n_estimators : int
        Boosting rounds in total.
    learning_rate : float
        Shrinkage, > 0.
    num_leaves : int
        Maximum leaves per tree (XGBoost ``max_leaves``).
    max_depth : int
        Maximum depth; ``-1`` (or 0) means no depth limit on both engines
        (XGBoost: ``max_depth=0, grow_policy="lossguide"``).
    min_child_samples : int
        LightGBM ``min_data_in_leaf`` (XGBoost has no such parameter).
    objective : {None, "native", "lambdarank"}
        ``None`` infers: ltr's LambdaRank when ``sampling`` or ``objectives``
        is set, else native.  ``"native"`` with either is an error.
    k : int
        Truncation level without a schedule.
    schedule : Schedule, list of (k, rounds), int, callable or None
        Truncation schedule (:mod:`ltr.objectives.schedules`).
    sigma : float
        Sigmoid steepness of ltr's LambdaRank.
    sigmoid : {"exact", "lightgbm"}
        ltr's LambdaRank sigmoid (``"lightgbm"`` reproduces the native trees).
    sampling : TopKPairSampling or None
        Pair sampling of ltr's LambdaRank.
    objectives : mapping of str to float or None
        Composite objective weights over label columns.
    engine_params : mapping or None
        Engine-native parameters merged last.
    n_jobs : int or None
        Engine threads.
    random_state : int, RandomState, Generator or None
        Seed of the engine and of pair sampling.
    early_stopping_rounds : int or None
        Per-stage early stopping on the first eval set.
    unbiased : bool
        Train on clicks with position debiasing; needs display positions
        (``fit(..., position=...)``, config ``data.position``).  With
        ``objective="lambdarank"`` (or None) ltr's Unbiased LambdaMART learns
        the position biases every round; with ``"native"`` the engine's own
        method runs (LightGBM's position GAM, XGBoost's ``lambdarank_unbiased``).
    bias_norm : float
        Regulariser ``p`` of Unbiased LambdaMART's bias estimate
        ``t = (l_i / l_1) ** (1 / (1 + p))`` (ltr's objective; XGBoost's
        ``lambdarank_bias_norm`` for the native objective; LightGBM's GAM has
        no such parameter).
    propensity : array-like or None
        Known examination propensities per position (index 0 = position 1)
        for ltr's objective instead of learning them (IPS-weighted lambdas);
        needs ``unbiased=True``.
    """

    engine: str = "lightgbm"
    n_estimators: int = 100
    learning_rate: float = 0.1
    num_leaves: int = 31
    max_depth: int = -1
    min_child_samples: int = 20
    objective: str | None = None
    k: int = 20
    schedule: Any = None
    sigma: float = 1.0
    sigmoid: str = "exact"
    sampling: Any = None
    objectives: Mapping[str, float] | None = None
    engine_params: Mapping[str, Any] | None = field(default=None)
    n_jobs: int | None = None
    random_state: Any = None
    early_stopping_rounds: int | None = None
    unbiased: bool = False
    bias_norm: float = 1.0
    propensity: Any = None

    def replace(self, **changes: Any) -> TrainSettings:
        """Return a copy with *changes* applied (unknown names are an error)."""
        unknown = sorted(set(changes) - {f.name for f in dataclasses.fields(self)})
        if unknown:
            raise ValueError(
                f"unknown training setting(s) {unknown}; known: "
                f"{', '.join(f.name for f in dataclasses.fields(self))}"
            )
        return dataclasses.replace(self, **changes)


def resolve_objective(settings: TrainSettings) -> str:
    """``"native"`` or ``"lambdarank"``: the explicit choice, or the inferred one.

    Raises
    ------
    ValueError
        For an unknown choice, or ``"native"`` together with ``sampling`` or
        ``objectives`` (which only ltr's LambdaRank supports).
    """
    choice = settings.objective
    if choice is not None and choice not in OBJECTIVES:
        raise ValueError(f"objective must be None, 'native' or 'lambdarank', got {choice!r}")
    if not isinstance(settings.unbiased, (bool, np.bool_)):
        raise TypeError(f"unbiased must be a bool, got {short_repr(settings.unbiased)}")
    needs_ours = [
        n for n in ("sampling", "objectives", "propensity") if getattr(settings, n) is not None
    ]
    if choice == "native" and needs_ours:
        raise ValueError(
            f"objective='native' cannot use {' and '.join(needs_ours)} (only ltr's LambdaRank "
            "samples pairs, combines objectives or takes known propensities); set "
            f"objective='lambdarank' or None, or drop {needs_ours[0]}"
        )
    if settings.propensity is not None and not settings.unbiased:
        raise ValueError(
            "propensity (known examination propensities) needs unbiased=True; set it, or drop "
            "propensity"
        )
    if settings.unbiased and settings.objectives is not None:
        raise ValueError(
            "unbiased=True is not supported with objectives (composite labels): train one click "
            "label with unbiased=True, or set unbiased=False"
        )
    if choice is None:
        return "lambdarank" if needs_ours or settings.unbiased else "native"
    return choice


def engine_params(settings: TrainSettings) -> dict[str, Any]:
    """Engine-native parameters of *settings* (tree shape; ``engine_params`` last).

    ``max_depth <= 0`` means no depth limit on both engines: LightGBM takes
    ``-1``; XGBoost takes ``max_depth=0`` with ``grow_policy="lossguide"``
    (leaf-wise growth bounded by ``max_leaves``).
    """
    depth = check_int(settings.max_depth, "max_depth", minimum=-1)
    leaves = check_int(settings.num_leaves, "num_leaves", minimum=2)
    rate = check_real(settings.learning_rate, "learning_rate", minimum=0.0, exclusive_minimum=True)
    if settings.engine == "lightgbm":
        params: dict[str, Any] = {
            "learning_rate": rate,
            "num_leaves": leaves,
            "max_depth": depth if depth > 0 else -1,
            "min_data_in_leaf": check_int(
                settings.min_child_samples, "min_child_samples", minimum=0
            ),
        }
    elif settings.engine == "xgboost":
        params = {"learning_rate": rate, "max_leaves": leaves}
        if depth > 0:
            params["max_depth"] = depth
        else:
            params.update(max_depth=0, grow_policy="lossguide")
    else:
        from ltr.engines import ENGINES

        raise ValueError(f"engine must be one of {list(ENGINES)}, got {settings.engine!r}")
    extra = settings.engine_params or {}
    if not isinstance(extra, Mapping):
        raise TypeError(f"engine_params must be a mapping, got {short_repr(extra)}")
    for key in extra:
        if not isinstance(key, str):
            raise TypeError(f"engine_params keys must be str, got {key!r}")
    params.update(extra)
    return params


def _check_sampling(sampling: Any) -> Any:
    if sampling is None:
        return None
    from ltr.objectives.sampling import TopKPairSampling

    if not isinstance(sampling, TopKPairSampling):
        raise TypeError(
            "sampling must be None or a ltr.objectives.sampling.TopKPairSampling, got "
            f"{short_repr(sampling)} ({type(sampling).__name__})"
        )
    return sampling


def build_training(
    settings: TrainSettings,
    labels: Mapping[str, np.ndarray] | None = None,
    position: Any = None,
) -> dict[str, Any]:
    """Keyword arguments of :func:`ltr.engines.train` for *settings*.

    Parameters
    ----------
    settings : TrainSettings
        The training's settings.
    labels : mapping of str to ndarray, optional
        Label columns in training-row order; required for a composite
        objective (``settings.objectives``).
    position : array-like, optional
        Display positions in training-row order; required by, and only
        allowed with, ``settings.unbiased`` (checked in ``train``).

    Returns
    -------
    dict
        ``engine, objective, k, schedule, params, num_boost_round,
        random_state, n_jobs, early_stopping_rounds, position`` for ``train``.
    """
    from ltr.objectives.schedules import as_schedule

    choice = resolve_objective(settings)
    n_rounds = check_int(settings.n_estimators, "n_estimators", minimum=1)
    k = check_int(settings.k, "k", minimum=1)
    seed = check_seed(settings.random_state)
    schedule = None if settings.schedule is None else as_schedule(settings.schedule)
    if schedule is not None:
        sched_rounds = getattr(schedule, "n_rounds", None)
        if sched_rounds is not None and sched_rounds > n_rounds:
            raise ValueError(
                f"n_estimators={n_rounds} would cut schedule={settings.schedule!r}, which "
                f"defines {sched_rounds} rounds; set n_estimators >= {sched_rounds}"
            )
    sampling = _check_sampling(settings.sampling)
    early = settings.early_stopping_rounds
    if early is not None:
        early = check_int(early, "early_stopping_rounds", minimum=1)
    n_jobs = settings.n_jobs
    if n_jobs is not None:
        n_jobs = check_int(n_jobs, "n_jobs")
    bias_norm = check_real(settings.bias_norm, "bias_norm", minimum=0.0)
    if settings.unbiased and position is None:
        raise ValueError(
            "unbiased=True needs the display position of each row (1 = top) in the logged "
            "ranking: pass fit(X, y, qid=..., position=...), or set data.position in "
            "the config"
        )
    if position is not None and not settings.unbiased:
        raise ValueError(
            "position was given but unbiased=False: set unbiased=True (with "
            "objective='lambdarank' for ltr's Unbiased LambdaMART or 'native' for the engine's "
            "own position debiasing), or drop position"
        )
    params = engine_params(settings)
    if settings.unbiased and choice == "native":
        if settings.engine == "xgboost":
            params.setdefault("lambdarank_bias_norm", bias_norm)
        elif bias_norm != 1.0:
            raise ValueError(
                f"bias_norm={bias_norm!r} has no meaning for LightGBM's native position "
                "debiasing (a GAM over position ids); regularise it with engine_params="
                "{'lambdarank_position_bias_regularization': ...}, or use "
                "objective='lambdarank'"
            )
    objective: Any = "native"
    if choice == "lambdarank":
        sigma = check_real(settings.sigma, "sigma", minimum=0.0, exclusive_minimum=True)
        if settings.sigmoid not in _SIGMOIDS:
            raise ValueError(f"sigmoid must be 'exact' or 'lightgbm', got {settings.sigmoid!r}")
        common: dict[str, Any] = {
            "k": k,
            "sigma": sigma,
            "sampling": sampling,
            "schedule": schedule,
            "sigmoid": settings.sigmoid,
            "random_state": seed,
        }
        if settings.objectives is not None:
            from ltr.objectives import CompositeLambdaRankObjective

            weights = check_objective_weights(settings.objectives)
            if labels is None:
                raise ValueError(
                    f"objectives={weights!r} needs one label column per objective "
                    "(y with one column per objective)"
                )
            missing = [n for n in weights if n not in labels]
            if missing:
                raise ValueError(
                    f"objectives names {missing[0]!r} but the labels have {sorted(labels)!r}"
                )
            objective = CompositeLambdaRankObjective(
                weights, {n: labels[n] for n in weights}, **common
            )
        else:
            from ltr.objectives import LambdaRankObjective

            if settings.unbiased:
                common.update(
                    unbiased=True, bias_norm=bias_norm, propensity=settings.propensity
                )
            objective = LambdaRankObjective(**common)
        schedule = None  # the objective carries it
    return {
        "engine": settings.engine,
        "objective": objective,
        "k": k,
        "schedule": schedule,
        "params": params,
        "num_boost_round": n_rounds,
        "random_state": seed,
        "n_jobs": n_jobs,
        "early_stopping_rounds": early,
        "position": position,
    }


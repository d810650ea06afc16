"""The one builder: training settings -> engine parameters, objective, schedule.

``ltr train`` / ``ltr tune`` (a config's ``model`` section, whose keys are the
estimator's parameter names) and :class:`ltr.estimator.LambdaMARTRanker` (its
parameters) describe a training with the same :class:`TrainSettings`.  Each
boundary checks every single parameter once (the estimator's
``_parameter_constraints``, from which the config's ``model`` section is
generated), then :func:`validate_settings` checks the combinations once and
resolves the objective; :func:`build_training` turns the validated settings
into the keyword arguments of :func:`ltr.engines.train` without checking them
again.  Nothing else in the package translates settings into engine objects,
so the paths cannot drift apart: one set of settings trains one model.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ltr._validation import check_objective_weights, short_repr

__all__ = [
    "OBJECTIVES",
    "TrainSettings",
    "build_training",
    "engine_params",
    "resolve_objective",
    "validate_settings",
]

#: The objective choices: ``"native"`` is the engine's own LambdaRank
#: (LightGBM ``lambdarank`` / XGBoost ``rank:ndcg``), ``"lambdarank"`` is ltr's.
OBJECTIVES = ("native", "lambdarank")

#: ``ltr.engines.train`` argument (as the adapters' ``reserved`` tables name it) -> the
#: training setting that sets it, for refusing a reserved key of ``engine_params``.
_SETTING_OF_ARGUMENT = {
    "objective=": "objective",
    "num_boost_round=": "n_estimators (or the schedule's rounds)",
    "early_stopping_rounds=": "early_stopping_rounds",
    "k= or schedule=": "k or schedule",
    "random_state=": "random_state",
    "n_jobs=": "n_jobs",
}


@dataclass(frozen=True)
class TrainSettings:
    """Everything that decides which model a training produces (data aside).

    Field names and defaults are :class:`ltr.estimator.LambdaMARTRanker`'s
    training parameters (every parameter but ``eval_at`` and ``qid_column``),
    which are also the keys of a config's ``model`` section; a test keeps the
    three equal.  See the estimator for what each one means.
    """

    engine: str = "lightgbm"
    n_estimators: int | None = None
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
    early_stopping_rounds: int | None = None
    n_jobs: int | None = None
    random_state: Any = None
    unbiased: bool | str = False
    bias_norm: float = 1.0
    propensity: Any = None
    bias_cost: str = "reversed_pair_loss"
    position_term: bool = False
    position_regularization: float = 0.0

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

    ``None`` infers ltr's LambdaRank when ``sampling``, ``objectives``,
    ``propensity``, ``unbiased`` or ``position_term`` asks for it, else the
    engine's native one.
    The combination rules live in :func:`validate_settings`.
    """
    if settings.objective is not None:
        return str(settings.objective)
    needs_ours = any(
        getattr(settings, n) is not None for n in ("sampling", "objectives", "propensity")
    )
    return "lambdarank" if needs_ours or settings.unbiased or settings.position_term else "native"


def validate_settings(settings: TrainSettings) -> TrainSettings:
    """Check the combinations of *settings* once; return them with the objective resolved.

    Each single parameter was checked at the boundary (the estimator's
    ``_parameter_constraints``, or the config's ``model`` section generated from
    them); this checks what spans parameters, with the same rule for every path:

    * ``objective="native"`` cannot take ``sampling``, ``objectives`` or ``propensity``;
    * ``propensity``, ``bias_norm != 1`` and ``bias_cost="pair_loss"`` need
      ``unbiased=True`` (``bias_cost`` also ltr's objective); ``unbiased`` excludes
      ``objectives``; LightGBM's native debiasing has no ``bias_norm``;
    * a schedule longer than ``n_estimators`` would be cut (a shorter one keeps its last k;
      a linear schedule with the native objective trains one stage per k);
    * ``engine_params`` may not set what a setting sets (e.g. ``num_iterations``);
    * ``position_term`` needs ltr's objective and one label; ``position_regularization``
      needs ``position_term``.

    Returns
    -------
    TrainSettings
        *settings* with ``objective`` set to ``"native"`` or ``"lambdarank"``
        and ``objectives`` as a checked ``{name: weight}`` dict: what
        :func:`build_training` expects.

    Raises
    ------
    ValueError
        Naming the parameters that clash and how to fix it.
    """
    from ltr.objectives.schedules import as_schedule

    choice = resolve_objective(settings)
    needs_ours = [
        n for n in ("sampling", "objectives", "propensity") if getattr(settings, n) is not None
    ]
    if choice == "native" and needs_ours:
        raise ValueError(
            f"objective='native' cannot use {' and '.join(needs_ours)} (only ltr's LambdaRank "
            "samples pairs, combines objectives or takes known propensities); set "
            f"objective='lambdarank' or None, or drop {needs_ours[0]}"
        )
    if settings.sampling is not None:
        from ltr.objectives.sampling import TopKPairSampling

        if not isinstance(settings.sampling, TopKPairSampling):
            raise TypeError(
                "sampling must be None or a ltr.objectives.sampling.TopKPairSampling, got "
                f"{short_repr(settings.sampling)} ({type(settings.sampling).__name__})"
            )
    if settings.propensity is not None and not settings.unbiased:
        raise ValueError(
            "propensity (known examination propensities) needs unbiased=True; set it, or drop "
            "propensity"
        )
    if settings.bias_norm != 1.0 and not settings.unbiased:
        raise ValueError(
            f"bias_norm={settings.bias_norm!r} only applies with unbiased=True; set it, or "
            "leave bias_norm at 1.0"
        )
    if settings.bias_cost != TrainSettings.bias_cost and (
        not settings.unbiased or choice == "native"
    ):
        raise ValueError(
            f"bias_cost={settings.bias_cost!r} is the pair cost of ltr's learned position "
            "biases: it needs unbiased=True with objective='lambdarank' (or None); set them, "
            f"or leave bias_cost at {TrainSettings.bias_cost!r}"
        )
    if settings.unbiased and settings.objectives is not None:
        raise ValueError(
            "unbiased=True is not supported with objectives (composite labels): train one click "
            "label with unbiased=True, or set unbiased=False"
        )
    if (
        settings.unbiased
        and choice == "native"
        and settings.engine == "lightgbm"
        and settings.bias_norm != 1.0
    ):
        raise ValueError(
            f"bias_norm={settings.bias_norm!r} has no meaning for LightGBM's native position "
            "debiasing (a GAM over position ids); regularise it with engine_params="
            "{'lambdarank_position_bias_regularization': ...}, or use objective='lambdarank'"
        )
    _check_position_term(settings, choice)
    weights = None
    if settings.objectives is not None:
        weights = check_objective_weights(settings.objectives)
    schedule = settings.schedule
    if schedule is not None:
        sched_rounds = getattr(as_schedule(schedule), "n_rounds", None)
        n_rounds = settings.n_estimators
        if sched_rounds is not None and n_rounds is not None and sched_rounds > n_rounds:
            raise ValueError(
                f"n_estimators={n_rounds} would cut schedule={schedule!r}, which "
                f"defines {sched_rounds} rounds; set n_estimators >= {sched_rounds} (or None: "
                "the schedule's rounds)"
            )
    from ltr.engines import get_adapter

    reserved = get_adapter(settings.engine).reserved
    for key in settings.engine_params or {}:
        if not isinstance(key, str):
            raise TypeError(f"engine_params keys must be str, got {key!r}")
        if key in reserved:
            use = _SETTING_OF_ARGUMENT.get(reserved[key], reserved[key])
            raise ValueError(
                f"engine_params[{key!r}] is set by the training itself; use {use} instead "
                f"(got {settings.engine_params[key]!r})"  # type: ignore[index]
            )
    return settings.replace(objective=choice, objectives=weights)


def _check_position_term(settings: TrainSettings, choice: str) -> None:
    """Check the position term's combinations: ltr's objective, one label, its penalty."""
    if settings.position_regularization != 0.0 and not settings.position_term:
        raise ValueError(
            f"position_regularization={settings.position_regularization!r} only applies with "
            "position_term=True; set it, or leave position_regularization at 0.0"
        )
    if not settings.position_term:
        return
    if choice == "native":
        raise ValueError(
            "objective='native' cannot use position_term (the term lives in ltr's LambdaRank); "
            "set objective='lambdarank' or None, or for LightGBM's own position GAM use "
            "unbiased=True with objective='native' and drop position_term"
        )
    if settings.objectives is not None:
        raise ValueError(
            "position_term=True is not supported with objectives (composite labels): train one "
            "click label with position_term=True, or set position_term=False"
        )


def engine_params(settings: TrainSettings) -> dict[str, Any]:
    """Engine-native parameters of *settings* (tree shape; ``engine_params`` last).

    ``max_depth <= 0`` means no depth limit on both engines: LightGBM takes
    ``-1``; XGBoost takes ``max_depth=0`` with ``grow_policy="lossguide"``
    (leaf-wise growth bounded by ``max_leaves``).
    """
    depth = int(settings.max_depth)
    rate = float(settings.learning_rate)
    leaves = int(settings.num_leaves)
    if settings.engine == "lightgbm":
        params: dict[str, Any] = {
            "learning_rate": rate,
            "num_leaves": leaves,
            "max_depth": depth if depth > 0 else -1,
            "min_data_in_leaf": int(settings.min_child_samples),
        }
    else:
        params = {"learning_rate": rate, "max_leaves": leaves}
        if depth > 0:
            params["max_depth"] = depth
        else:
            params.update(max_depth=0, grow_policy="lossguide")
    params.update(settings.engine_params or {})
    return params


def build_training(
    settings: TrainSettings,
    labels: Mapping[str, np.ndarray] | None = None,
    position: Any = None,
    propensity: Any = None,
) -> dict[str, Any]:
    """Keyword arguments of :func:`ltr.engines.train` for validated *settings*.

    Parameters
    ----------
    settings : TrainSettings
        The training's settings, as :func:`validate_settings` returned them
        (nothing is checked again here).
    labels : mapping of str to ndarray, optional
        Label columns in training-row order; required for a composite
        objective (``settings.objectives``).
    position : array-like, optional
        Display positions in training-row order; required by, and only
        allowed with, ``settings.unbiased`` (the values are checked in ``train``).
    propensity : ndarray, optional
        Known examination propensities per row, in training-row order (the
        estimator's ``fit(propensity=...)``, a config's ``data.propensity``
        column): ltr's objective weights pairs by them (the rule telling them
        from a per-position table: :func:`ltr._propensities.propensity_per_row`).
        Needs ``settings.unbiased`` with ltr's objective, and no
        ``settings.propensity``.

    Returns
    -------
    dict
        ``engine, objective, k, schedule, params, num_boost_round,
        random_state, n_jobs, early_stopping_rounds, position`` for ``train``.
    """
    from ltr._validation import check_seed
    from ltr.objectives.schedules import as_schedule

    choice = settings.objective
    if choice not in OBJECTIVES:
        raise ValueError(
            f"build_training takes settings checked by validate_settings (objective "
            f"'native' or 'lambdarank'), got objective={choice!r}"
        )
    if settings.unbiased == "auto":
        raise ValueError(
            "unbiased='auto' is a choice among training settings, not one training: resolve it "
            "first (ltr.estimator.select_debiasing, or LambdaMARTRanker(unbiased='auto').fit), "
            "then build the chosen settings"
        )
    if (settings.unbiased or settings.position_term) and position is None:
        which = "unbiased=True" if settings.unbiased else "position_term=True"
        raise ValueError(
            f"{which} needs the display position of each row (1 = top) in the logged "
            "ranking: pass fit(X, y, qid=..., position=...), or set data.position in "
            "the config"
        )
    if position is not None and not (settings.unbiased or settings.position_term):
        raise ValueError(
            "position was given but unbiased=False: set unbiased=True (with "
            "objective='lambdarank' for ltr's Unbiased LambdaMART or 'native' for the engine's "
            "own position debiasing), or position_term=True (score offsets per position), or "
            "drop position"
        )
    if propensity is not None and not (settings.unbiased and choice == "lambdarank"):
        raise ValueError(
            "per-row propensities (fit(propensity=...) or data.propensity) weight the pairs of "
            "ltr's objective: set unbiased=True with objective='lambdarank' (or None), or drop "
            "them"
        )
    if propensity is not None and settings.propensity is not None:
        raise ValueError(
            "propensity is given twice: per position (the propensity setting) and per row "
            "(fit(propensity=...) or data.propensity); give one of them"
        )
    seed = check_seed(settings.random_state)  # a Generator/RandomState draws its seed here
    schedule = None if settings.schedule is None else as_schedule(settings.schedule)
    params = engine_params(settings)
    if settings.unbiased and choice == "native" and settings.engine == "xgboost":
        params.setdefault("lambdarank_bias_norm", float(settings.bias_norm))
    objective: Any = "native"
    if choice == "lambdarank":
        common: dict[str, Any] = {
            "k": settings.k,
            "sigma": settings.sigma,
            "sampling": settings.sampling,
            "schedule": schedule,
            "sigmoid": settings.sigmoid,
            "random_state": seed,
        }
        if settings.objectives is not None:
            from ltr.objectives import CompositeLambdaRankObjective

            weights = dict(settings.objectives)
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
                    unbiased=True, bias_norm=settings.bias_norm,
                    propensity=settings.propensity if propensity is None else propensity,
                    bias_cost=settings.bias_cost,
                )
            if settings.position_term:
                common.update(position_term=True,
                              position_regularization=settings.position_regularization)
            objective = LambdaRankObjective(**common)
        schedule = None  # the objective carries it
    return {
        "engine": settings.engine,
        "objective": objective,
        "k": settings.k,
        "schedule": schedule,
        "params": params,
        "num_boost_round": settings.n_estimators,
        "random_state": seed,
        "n_jobs": settings.n_jobs,
        "early_stopping_rounds": settings.early_stopping_rounds,
        "position": position,
    }

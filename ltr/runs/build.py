"""Config -> the one builder's settings (the search space of ``ltr tune``: ``search_space``).

A config's ``model`` and ``objective`` sections map onto
:class:`ltr.build.TrainSettings` here, and nowhere else; ``ltr train``,
``ltr tune`` and :class:`ltr.estimator.LambdaMARTRanker` then share
:func:`ltr.build.build_training`.
"""

from __future__ import annotations

from typing import Any

from ltr.build import TrainSettings
from ltr.runs.config import RunConfig, RunError

__all__ = [
    "check_engine_params",
    "ranker_from_settings",
    "settings_from_config",
]

#: ``TrainSettings`` field -> the config key it comes from (for messages and ``ltr tune``).
CONFIG_KEYS: dict[str, str] = {
    "engine": "model.engine",
    "n_estimators": "model.rounds",
    "learning_rate": "model.learning_rate",
    "num_leaves": "model.num_leaves",
    "max_depth": "model.max_depth",
    "min_child_samples": "model.min_data_in_leaf",
    "objective": "objective.type",
    "k": "objective.k",
    "schedule": "objective.schedule",
    "sigma": "objective.sigma",
    "sigmoid": "objective.sigmoid",
    "sampling": "objective.sampling",
    "objectives": "objective.composite",
    "engine_params": "model.params",
    "n_jobs": "model.n_jobs",
    "random_state": "seed",
    "early_stopping_rounds": "model.early_stopping_rounds",
    "unbiased": "objective.unbiased",
    "bias_norm": "objective.bias_norm",
    "propensity": "objective.propensity",
}


def _schedule(cfg: RunConfig) -> Any:
    from ltr.schedules import Linear, Steps

    sched = cfg.objective.schedule
    if sched is None:
        return None
    if sched.steps is not None:
        return Steps([(s.k, s.rounds) for s in sched.steps])
    if sched.linear is None:  # pragma: no cover - the schema requires one of the two
        raise RunError("objective.schedule: give steps or linear")
    return Linear(start=sched.linear.start, end=sched.linear.end, rounds=sched.linear.rounds)


def _sampling(cfg: RunConfig) -> Any:
    spec = cfg.objective.sampling
    if spec is None:
        return None
    from ltr.sampling import TopKPairSampling

    return TopKPairSampling(
        top=spec.top,
        head_weight=spec.head_weight,
        pairs_per_doc=spec.pairs_per_doc,
        random_state=cfg.seed,
    )


def settings_from_config(cfg: RunConfig) -> TrainSettings:
    """Return the :class:`~ltr.build.TrainSettings` a config describes.

    Parameters
    ----------
    cfg : RunConfig
        A validated config.

    Returns
    -------
    TrainSettings
    """
    m, obj = cfg.model, cfg.objective
    weights = None
    if obj.composite:
        if not cfg.data.objectives:
            raise RunError("objective.composite: needs data.objectives (name -> weight)")
        weights = {name: oc.weight for name, oc in cfg.data.objectives.items()}
    return TrainSettings(
        engine=m.engine,
        n_estimators=cfg.n_rounds,
        learning_rate=m.learning_rate,
        num_leaves=m.num_leaves,
        max_depth=m.max_depth,
        min_child_samples=m.min_data_in_leaf,
        objective=obj.type,
        k=obj.k,
        schedule=_schedule(cfg),
        sigma=obj.sigma,
        sigmoid=obj.sigmoid,
        sampling=_sampling(cfg),
        objectives=weights,
        engine_params=dict(m.params) or None,
        n_jobs=m.n_jobs,
        random_state=cfg.seed,
        early_stopping_rounds=m.early_stopping_rounds,
        unbiased=obj.unbiased,
        bias_norm=obj.bias_norm,
        propensity=None if obj.propensity is None else list(obj.propensity),
    )


def ranker_from_settings(settings: TrainSettings, *, eval_at: tuple[int, ...] = (10,)) -> Any:
    """Return a :class:`~ltr.estimator.LambdaMARTRanker` with exactly *settings*."""
    import dataclasses

    from ltr.estimator import LambdaMARTRanker

    params = {f.name: getattr(settings, f.name) for f in dataclasses.fields(settings)}
    return LambdaMARTRanker(**params, eval_at=eval_at)


#: ``ltr.engines.train`` argument -> the config key that sets it (for messages in config terms).
_ARGUMENT_KEYS = {
    "objective=": "objective.type",
    "num_boost_round=": "model.rounds (or the schedule's rounds)",
    "early_stopping_rounds=": "model.early_stopping_rounds",
    "k= or schedule=": "objective.k or objective.schedule",
}


def check_engine_params(cfg: RunConfig) -> None:
    """Refuse ``model.params`` keys that the run sets itself, naming the config key to use.

    Raises
    ------
    RunError
        For a reserved engine parameter (e.g. ``objective``, ``num_iterations``).
    """
    from ltr.engines import get_adapter

    reserved = get_adapter(cfg.model.engine).reserved
    for key in cfg.model.params:
        if key in reserved:
            use = _ARGUMENT_KEYS.get(reserved[key], reserved[key])
            raise RunError(
                f"model.params.{key}: set by the run itself; use {use} instead "
                f"(got {cfg.model.params[key]!r})"
            )

"""LightGBM adapter: ``Dataset(group=sizes)``, ``lightgbm.train`` per stage, model strings.

Each stage is one ``lightgbm.train`` call continued from the previous stage's
model (``init_model``).  The full parameter dict, *including* ``objective``, is
passed to every call: LightGBM builds the objective from the params of that
call, so the native ``lambdarank`` objective really is rebuilt with the stage's
``lambdarank_truncation_level``.  Between stages the model goes through its
text form, exactly as when a run resumes from a checkpoint, so an interrupted
and resumed run ends with the same model as an uninterrupted one.
"""

from __future__ import annotations

from typing import Any

import lightgbm as lgb
import numpy as np

from ltr.engines._common import Recorder, TrainSpec, merge_engine_params

__all__ = ["DEFAULT_PARAMS", "LightGBMAdapter"]

#: Defaults merged under the user's ``params`` (a default is dropped when any alias is given).
DEFAULT_PARAMS: dict[str, Any] = {
    "learning_rate": 0.1,
    "num_leaves": 31,
    "min_data_in_leaf": 20,
    "deterministic": True,
    "force_row_wise": True,
    "verbosity": -1,
}

_ALIASES: dict[str, tuple[str, ...]] = {
    "learning_rate": ("learning_rate", "shrinkage_rate", "eta"),
    "num_leaves": ("num_leaves", "num_leaf", "max_leaves", "max_leaf", "max_leaf_nodes"),
    "min_data_in_leaf": ("min_data_in_leaf", "min_data_per_leaf", "min_data", "min_child_samples",
                         "min_samples_leaf"),
    "deterministic": ("deterministic",),
    "force_row_wise": ("force_row_wise", "force_col_wise"),
    "verbosity": ("verbosity", "verbose"),
    "seed": ("seed", "random_seed", "random_state"),
    "num_threads": ("num_threads", "num_thread", "nthread", "nthreads", "n_jobs"),
}

# Parameters that train() controls through its own arguments.
_RESERVED: dict[str, str] = {
    **{a: "objective=" for a in ("objective", "objective_type", "app", "application", "loss")},
    **{a: "num_boost_round=" for a in ("num_iterations", "num_iteration", "n_iter", "num_tree",
                                       "num_trees", "num_round", "num_rounds", "nrounds",
                                       "num_boost_round", "n_estimators", "max_iter")},
    **{a: "early_stopping_rounds=" for a in ("early_stopping_round", "early_stopping_rounds",
                                             "early_stopping", "n_iter_no_change")},
    "lambdarank_truncation_level": "k= or schedule=",
}


def _seed_key(params: dict[str, Any]) -> str:
    for alias in _ALIASES["seed"]:
        if alias in params:
            return alias
    return "seed"


class LightGBMAdapter:
    """Engine adapter for LightGBM (see :class:`ltr.engines._common.EngineAdapter`)."""

    name = "lightgbm"
    suffix = ".txt"

    def base_params(self, spec: TrainSpec) -> dict[str, Any]:
        merged = merge_engine_params(spec, defaults=DEFAULT_PARAMS, reserved=_RESERVED,
                                     aliases=_ALIASES, threads_key="num_threads")
        merged["metric"] = "None"  # metrics are ours (ltr.metrics.ndcg), computed in feval
        if spec.native:
            merged["objective"] = "lambdarank"
            if "label_gain" not in merged and spec.y.max() > 30:
                raise ValueError(
                    f"y has grade {float(spec.y.max())!r} but LightGBM's default label_gain covers grades "
                    "0..30; pass params={'label_gain': [...]} or a LambdaRankObjective"
                )
        return merged

    def train_stage(
        self,
        spec: TrainSpec,
        params: dict[str, Any],
        stage_index: int,
        k: int,
        n_rounds: int,
        init_booster: Any,
        objective: Any,
        recorder: Recorder,
    ) -> lgb.Booster:
        p = dict(params)
        seed_key = _seed_key(p)
        p[seed_key] = int(p.get(seed_key, spec.seed)) + stage_index
        if objective is None:
            p["objective"] = "lambdarank"
            p["lambdarank_truncation_level"] = k
        else:
            p["objective"] = objective
        sizes = np.diff(spec.offsets)
        train_set = lgb.Dataset(
            spec.X, label=spec.y, group=sizes,
            weight=spec.sample_weight if objective is None else None,
            free_raw_data=False,
        )
        valid_sets = [
            lgb.Dataset(ev.X, label=ev.y, group=np.diff(ev.offsets), reference=train_set,
                        free_raw_data=False)
            for ev in spec.eval_sets
        ]
        index_of = {id(ds): i for i, ds in enumerate(valid_sets)}

        def feval(preds: np.ndarray, data: lgb.Dataset) -> list[tuple[str, float, bool]]:
            values = recorder.record(index_of[id(data)], preds)
            return [(name, value, True) for name, value in values.items()]

        def after_round(env: Any) -> None:
            if recorder.end_round():
                # Report the current round as "best" so lightgbm.train keeps every tree
                # (it reloads the model truncated at best_iteration); we cut the stage
                # back to its best round ourselves, counting from the stage's start.
                raise lgb.callback.EarlyStopException(
                    env.iteration, env.evaluation_result_list or []
                )

        after_round.order = 100  # type: ignore[attr-defined]
        after_round.before_iteration = False  # type: ignore[attr-defined]
        return lgb.train(
            p,
            train_set,
            num_boost_round=n_rounds,
            valid_sets=valid_sets or None,
            valid_names=[ev.name for ev in spec.eval_sets] or None,
            feval=feval if valid_sets else None,
            init_model=init_booster,
            callbacks=[after_round],
        )

    def truncate(self, booster: lgb.Booster, n_rounds: int) -> lgb.Booster:
        return lgb.Booster(model_str=booster.model_to_string(num_iteration=n_rounds))

    def num_rounds(self, booster: lgb.Booster) -> int:
        return int(booster.current_iteration())

    def num_features(self, booster: lgb.Booster) -> int:
        return int(booster.num_feature())

    def to_string(self, booster: lgb.Booster) -> str:
        return booster.model_to_string(num_iteration=booster.current_iteration())

    def from_string(self, text: str) -> lgb.Booster:
        return lgb.Booster(model_str=text)

    def predict(self, booster: lgb.Booster, X: Any) -> np.ndarray:
        return booster.predict(X, raw_score=True, num_iteration=booster.current_iteration())

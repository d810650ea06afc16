"""LightGBM adapter: one ``Dataset(group=sizes)`` per training, ``lightgbm.train`` per stage.

Each stage is one ``lightgbm.train`` call continued from the previous stage's
model (``init_model``) on the same constructed ``Dataset`` (built once by
:meth:`LightGBMAdapter.prepare`; LightGBM recomputes the init scores from the
raw data it keeps, ``free_raw_data=False``).  The full parameter dict,
*including* ``objective``, is passed to every call: LightGBM builds the
objective from the params of that call, so the native ``lambdarank``
objective really is rebuilt with the stage's ``lambdarank_truncation_level``.
Between stages the model goes through its text form, exactly as when a run
resumes from a checkpoint, so an interrupted and resumed run ends with the
same model as an uninterrupted one.

The recorder's hooks are module-level picklable classes behind factories:
:func:`record_feval` (``feval``) and :func:`record_callback` (a callable with
``order`` and ``before_iteration``, as LightGBM's own callbacks).
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from typing import Any, Literal

import numpy as np

from ltr._compat import passive_omp_wait
from ltr._io import write_atomic
from ltr.engines._callbacks import report_round
from ltr.engines._recorder import Recorder
from ltr.engines._spec import TrainSpec, merge_engine_params

with passive_omp_wait():  # GNU OpenMP reads its wait policy when LightGBM's library loads
    import lightgbm as lgb

__all__ = ["DEFAULT_PARAMS", "LightGBMAdapter", "record_callback", "record_feval",
           "round_callback"]

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
    "min_data_in_leaf": (
        "min_data_in_leaf",
        "min_data_per_leaf",
        "min_data",
        "min_child_samples",
        "min_samples_leaf",
    ),
    "deterministic": ("deterministic",),
    "force_row_wise": ("force_row_wise", "force_col_wise"),
    "verbosity": ("verbosity", "verbose"),
    "seed": ("seed", "random_seed", "random_state"),
    "num_threads": ("num_threads", "num_thread", "nthread", "nthreads", "n_jobs"),
}

# Parameters that train() controls through its own arguments.
_RESERVED: dict[str, str] = {
    **{a: "objective=" for a in ("objective", "objective_type", "app", "application", "loss")},
    **{
        a: "num_boost_round="
        for a in (
            "num_iterations",
            "num_iteration",
            "n_iter",
            "num_tree",
            "num_trees",
            "num_round",
            "num_rounds",
            "nrounds",
            "num_boost_round",
            "n_estimators",
            "max_iter",
        )
    },
    **{
        a: "early_stopping_rounds="
        for a in (
            "early_stopping_round",
            "early_stopping_rounds",
            "early_stopping",
            "n_iter_no_change",
        )
    },
    "lambdarank_truncation_level": "k= or schedule=",
}


def _seed_key(params: dict[str, Any]) -> str:
    for alias in _ALIASES["seed"]:
        if alias in params:
            return alias
    return "seed"


# ----------------------------------------------------------------------------
# the recorder's hooks (picklable)
# ----------------------------------------------------------------------------


class _RecordFeval:
    """``feval``: record our metrics for the eval set LightGBM passes."""

    def __init__(self, recorder: Recorder, index_of: dict[int, int]) -> None:
        self.recorder = recorder
        self.index_of = index_of  # id(valid Dataset) -> eval set index

    def __call__(self, preds: np.ndarray, data: lgb.Dataset) -> list[tuple[str, float, bool]]:
        values = self.recorder.record(self.index_of[id(data)], preds)
        return [(name, value, True) for name, value in values.items()]


class _RecordCallback:
    """After each round: advance the recorder; stop the stage when it says so."""

    order = 100  # after LightGBM's own callbacks
    before_iteration = False

    def __init__(self, recorder: Recorder) -> None:
        self.recorder = recorder

    def __call__(self, env: lgb.callback.CallbackEnv) -> None:
        if self.recorder.end_round():
            # Report the current round as "best" so lightgbm.train keeps every tree
            # (it reloads the model truncated at best_iteration); the loop cuts the
            # stage back to its best round itself, counting from the stage's start.
            raise lgb.callback.EarlyStopException(env.iteration, env.evaluation_result_list or [])


class _RoundCallback:
    """Before each round: tell the training's objective the engine's round in this call."""

    order = 0  # before LightGBM's own callbacks
    before_iteration = True

    def __init__(self, objective: Any) -> None:
        self.objective = objective

    def __call__(self, env: lgb.callback.CallbackEnv) -> None:
        self.objective.start_round(int(env.iteration) - int(env.begin_iteration))


def round_callback(objective: Any) -> _RoundCallback:
    """Build the before-round callback that passes the round index to *objective*.

    Parameters
    ----------
    objective : ObjectiveCall or any object with ``start_round(local)``
        Receives ``env.iteration - env.begin_iteration``: the 0-based round
        within this ``lightgbm.train`` call (also when it continues a model).

    Returns
    -------
    callable
        A LightGBM callback (``order=0``, ``before_iteration=True``).
    """
    return _RoundCallback(objective)


class _ReportCallback:
    """After each round, before the recorder advances: report the round to the user's callbacks."""

    order = 90  # before _RecordCallback, which ends the round (and may stop the stage)
    before_iteration = False

    def __init__(self, recorder: Recorder, first_round: int) -> None:
        self.recorder = recorder
        self.first_round = first_round

    def __call__(self, env: lgb.callback.CallbackEnv) -> None:
        report_round(self.recorder.spec.callbacks, self.recorder, self.first_round,
                     int(env.iteration) - int(env.begin_iteration))


def record_feval(recorder: Recorder, index_of: dict[int, int]) -> _RecordFeval:
    """Build the ``feval`` that feeds *recorder*.

    Parameters
    ----------
    recorder : Recorder
        The stage's recorder.
    index_of : dict
        ``id(valid Dataset) -> eval set index``.

    Returns
    -------
    callable
        ``feval(preds, dataset) -> [(name, value, True), ...]``.
    """
    return _RecordFeval(recorder, index_of)


def record_callback(recorder: Recorder) -> _RecordCallback:
    """Build the after-round callback that advances *recorder* and stops the stage early.

    Parameters
    ----------
    recorder : Recorder
        The stage's recorder.

    Returns
    -------
    callable
        A LightGBM callback (``order=100``, ``before_iteration=False``).
    """
    return _RecordCallback(recorder)


# ----------------------------------------------------------------------------
# model text
# ----------------------------------------------------------------------------


def check_model_text(text: str, source: str = "model") -> None:
    """Raise ``ValueError`` naming *source* unless *text* is a whole LightGBM model string.

    LightGBM's parser can crash the process on a truncated model, so the text
    is checked first: it starts with ``tree``, holds ``end of trees`` and ends
    with ``end of parameters`` (optionally followed by the Python package's
    ``pandas_categorical:<json>`` line).
    """

    def damaged(why: str) -> ValueError:
        return ValueError(
            f"{source} is not a complete LightGBM model ({why}); the file is damaged or truncated"
        )

    if not isinstance(text, str):
        raise damaged(f"expected text, got {type(text).__name__}")
    body = text.rstrip()
    if not body.startswith("tree"):
        raise damaged("it does not start with 'tree'")
    if "\nend of trees" not in body:
        raise damaged("no 'end of trees' line")
    head, _, last = body.rpartition("\n")
    if last.startswith("pandas_categorical:"):
        try:
            json.loads(last[len("pandas_categorical:") :])
        except ValueError:
            raise damaged("the pandas_categorical line is cut") from None
        body = head.rstrip()
    if not body.endswith("end of parameters"):
        raise damaged("no 'end of parameters' trailer")


@dataclass
class _Data:
    """The engine data of one training, reused by every stage."""

    train: lgb.Dataset
    valid: list[lgb.Dataset]
    index_of: dict[int, int]


class LightGBMAdapter:
    """Engine adapter for LightGBM (see :class:`ltr.engines._protocol.EngineAdapter`)."""

    name = "lightgbm"
    suffix = ".txt"
    #: engine parameters :func:`ltr.engines.train` sets itself -> the argument to use instead
    reserved = _RESERVED

    def version(self) -> str:
        """LightGBM's version string."""
        return str(lgb.__version__)

    def base_params(self, spec: TrainSpec) -> dict[str, Any]:
        """Defaults, then the user's params; metrics are ours (``metric="None"``)."""
        merged = merge_engine_params(
            spec,
            defaults=DEFAULT_PARAMS,
            reserved=_RESERVED,
            aliases=_ALIASES,
            threads_key="num_threads",
        )
        merged["metric"] = "None"  # metrics are ours (ltr.metrics.ndcg), computed in feval
        if spec.native:
            merged["objective"] = "lambdarank"
            if "label_gain" not in merged and (spec.label_max or 0.0) > 30:
                raise ValueError(
                    f"y has grade {spec.label_max!r} but LightGBM's default label_gain "
                    "covers grades "
                    "0..30; pass params={'label_gain': [...]} or a LambdaRankObjective"
                )
        return merged

    def prepare(self, spec: TrainSpec, params: dict[str, Any]) -> _Data:
        """Construct the training and eval ``Dataset`` once (binned with the run's base seed)."""
        ds_params = {key: value for key, value in params.items() if key != "objective"}
        names: list[str] | Literal["auto"] = (
            spec.feature_names if spec.feature_names is not None else "auto"
        )
        # LightGBM's position debiasing (a GAM over categorical position ids) belongs to its
        # native lambdarank; a custom objective reads the positions itself.
        position = spec.position - 1 if spec.native and spec.position is not None else None
        categorical: list[int] | Literal["auto"] = list(spec.categorical) or "auto"
        train_set = lgb.Dataset(
            spec.X,
            label=spec.y,
            group=np.diff(spec.offsets),
            weight=spec.sample_weight if spec.native else None,
            position=position,
            feature_name=names,
            categorical_feature=categorical,
            params=ds_params,
            free_raw_data=False,
        ).construct()
        valid = [
            lgb.Dataset(
                ev.X,
                label=ev.y,
                group=np.diff(ev.offsets),
                reference=train_set,
                feature_name=names,
                categorical_feature=categorical,
                params=ds_params,
                free_raw_data=False,
            ).construct()
            for ev in spec.eval_sets
        ]
        return _Data(train_set, valid, {id(ds): i for i, ds in enumerate(valid)})

    def train_stage(
        self,
        spec: TrainSpec,
        data: _Data,
        params: dict[str, Any],
        stage_index: int,
        k: int,
        n_rounds: int,
        init_booster: Any,
        objective: Any,
        recorder: Recorder,
    ) -> lgb.Booster:
        """One ``lightgbm.train`` call of *n_rounds* continued from *init_booster*."""
        callbacks: list[Any] = [
            _ReportCallback(recorder, spec.plan[stage_index][1]),  # the user's after_round
            record_callback(recorder),
        ]
        if objective is not None:
            callbacks.insert(0, round_callback(objective))
        return lgb.train(
            self.stage_params(spec, params, stage_index, k, objective),
            data.train,
            num_boost_round=n_rounds,
            valid_sets=data.valid or None,
            valid_names=[ev.name for ev in spec.eval_sets] or None,
            feval=record_feval(recorder, data.index_of) if data.valid else None,
            init_model=init_booster,
            callbacks=callbacks,
        )

    def stage_params(
        self, spec: TrainSpec, params: dict[str, Any], stage_index: int, k: int, objective: Any
    ) -> dict[str, Any]:
        """Parameters of one stage: seed + stage index, and the objective at the stage's ``k``.

        *objective* is the callable the engine calls (``None``: the native
        ``lambdarank`` rebuilt with ``lambdarank_truncation_level=k``).
        """
        p = dict(params)
        seed_key = _seed_key(p)
        p[seed_key] = int(p.get(seed_key, spec.seed)) + stage_index
        if objective is None:
            p["objective"] = "lambdarank"
            p["lambdarank_truncation_level"] = k
        else:
            p["objective"] = objective
        return p

    def truncate(self, booster: lgb.Booster, n_rounds: int) -> lgb.Booster:
        """Return a standalone booster of the first *n_rounds* rounds (through the model text)."""
        return lgb.Booster(model_str=booster.model_to_string(num_iteration=n_rounds))

    def num_rounds(self, booster: lgb.Booster) -> int:
        """Boosting rounds in *booster*."""
        return int(booster.current_iteration())

    def num_features(self, booster: lgb.Booster) -> int:
        """Input features of *booster*."""
        return int(booster.num_feature())

    def feature_names(self, booster: lgb.Booster) -> list[str]:
        """Feature names (LightGBM names unnamed columns ``Column_j``)."""
        return [str(name) for name in booster.feature_name()]

    def to_string(self, booster: lgb.Booster) -> str:
        """Return the LightGBM text model."""
        return booster.model_to_string(num_iteration=booster.current_iteration())

    def from_string(self, text: str, source: str = "model") -> lgb.Booster:
        """Parse a LightGBM text model; ``ValueError`` naming *source* when it is damaged."""
        check_model_text(text, source)
        try:
            return lgb.Booster(model_str=text)
        except lgb.basic.LightGBMError as exc:
            raise ValueError(f"{source} is not a valid LightGBM model: {exc}") from exc

    def save_native(self, booster: lgb.Booster, path: str | os.PathLike[str]) -> None:
        """Write the text model (``lightgbm.Booster(model_file=path)`` loads it)."""
        write_atomic(path, self.to_string(booster))

    def predict(self, booster: lgb.Booster, X: Any) -> np.ndarray:
        """Raw scores of the rows of *X*."""
        return np.asarray(
            booster.predict(X, raw_score=True, num_iteration=booster.current_iteration())
        )

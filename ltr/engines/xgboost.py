"""XGBoost adapter: one ``DMatrix(qid=...)`` per training, ``xgboost.train`` per stage, JSON models.

This module imports xgboost (through :func:`ltr._compat.import_xgboost`, whose
error names the extra to install); :mod:`ltr.engines` imports it only when
``engine="xgboost"`` is used.

The native objective is ``rank:ndcg`` with ``lambdarank_pair_method="topk"``
and ``lambdarank_num_pair_per_sample=k`` (XGBoost's truncation level).  Each
stage is one ``xgboost.train`` call continued from the previous model
(``xgb_model``) with the full params, so the objective is configured again for
the stage's ``k``; the ``DMatrix`` objects (and the histogram index XGBoost
caches in them) are built once per training and reused by every stage.
XGBoost ranking weights are per query: per-row ``sample_weight`` must be
constant within each query for the native objective (with a custom objective
the gradients are weighted per row).

The recorder's hooks are module-level picklable classes behind factories:
:func:`record_metric` (``custom_metric``) and :func:`record_callback` (a
``xgboost.callback.TrainingCallback``).
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from typing import Any

import numpy as np

from ltr._compat import import_xgboost
from ltr._io import write_atomic
from ltr.engines._callbacks import report_round
from ltr.engines._recorder import Recorder
from ltr.engines._spec import TrainSpec, merge_engine_params
from ltr.groups import take_rows

xgb = import_xgboost()

__all__ = [
    "DEFAULT_PARAMS",
    "XGBoostAdapter",
    "categorical_dmatrix_args",
    "record_callback",
    "record_metric",
    "round_callback",
]

DEFAULT_PARAMS: dict[str, Any] = {
    "tree_method": "hist",
    "learning_rate": 0.1,
    "max_depth": 6,
    "verbosity": 0,
}

_ALIASES: dict[str, tuple[str, ...]] = {
    "learning_rate": ("learning_rate", "eta"),
    "seed": ("seed", "random_state"),
    "nthread": ("nthread", "n_jobs"),
    "max_depth": ("max_depth",),
    "tree_method": ("tree_method",),
    "verbosity": ("verbosity", "silent"),
}

_RESERVED: dict[str, str] = {
    "objective": "objective=",
    "num_boost_round": "num_boost_round=",
    "n_estimators": "num_boost_round=",
    "early_stopping_rounds": "early_stopping_rounds=",
    "lambdarank_num_pair_per_sample": "k= or schedule=",
    "lambdarank_unbiased": "position= (with objective='native')",
}


def position_order(position: np.ndarray, offsets: np.ndarray) -> np.ndarray:
    """Row order that sorts each query's rows by display position (1 first).

    XGBoost's ``lambdarank_unbiased`` takes a row's place inside its query as
    its position; checked positions are a permutation of ``1..n`` per query,
    so row ``i`` goes to slot ``offsets[q] + position[i] - 1``.

    Parameters
    ----------
    position : ndarray of int64
        Checked display ranks (:func:`ltr._validation.check_positions`).
    offsets : ndarray of int64
        Query offsets.

    Returns
    -------
    ndarray of int64
        ``order`` such that ``rows[order]`` are in display order per query.
    """
    sizes = np.diff(offsets)
    slot = np.repeat(offsets[:-1], sizes) + position - 1
    order = np.empty_like(slot)
    order[slot] = np.arange(len(slot), dtype=np.int64)
    return order


def categorical_dmatrix_args(n_features: int, categorical: tuple[int, ...]) -> dict[str, Any]:
    """``DMatrix`` keyword arguments for category-code columns (none when there are none).

    Parameters
    ----------
    n_features : int
        Columns of ``X``.
    categorical : tuple of int
        Columns holding category codes (``feature_types`` ``"c"``).

    Returns
    -------
    dict
        ``{"feature_types": [...], "enable_categorical": True}`` or ``{}``.
    """
    if not categorical:
        return {}
    cat = set(categorical)
    types = ["c" if j in cat else "q" for j in range(n_features)]
    return {"feature_types": types, "enable_categorical": True}


def _per_query_weights(weight: np.ndarray, offsets: np.ndarray) -> np.ndarray:
    first = weight[offsets[:-1]]
    per_row_first = np.repeat(first, np.diff(offsets))
    differs = weight != per_row_first
    if differs.any():
        row = int(np.flatnonzero(differs)[0])
        q = int(np.searchsorted(offsets, row, side="right") - 1)
        raise ValueError(
            "XGBoost's native ranking objective takes one weight per query, but sample_weight "
            f"varies within query {q} (rows {int(offsets[q])}..{int(offsets[q + 1]) - 1}): "
            f"sample_weight[{row}] = {float(weight[row])!r} != {float(first[q])!r}"
        )
    return first


# ----------------------------------------------------------------------------
# the recorder's hooks (picklable)
# ----------------------------------------------------------------------------


class _RecordMetric:
    """``custom_metric``: record our metrics for the eval set XGBoost passes."""

    def __init__(self, recorder: Recorder, index_of: dict[int, int]) -> None:
        self.recorder = recorder
        self.index_of = index_of  # id(eval DMatrix) -> eval set index

    def __call__(self, preds: np.ndarray, dmat: Any) -> list[tuple[str, float]]:
        return list(self.recorder.record(self.index_of[id(dmat)], preds).items())


# xgb is imported at run time (an optional extra): its base class is a value, typed Any here
_TrainingCallback: Any = xgb.callback.TrainingCallback


class _RecordCallback(_TrainingCallback):
    """After each round: advance the recorder; ``True`` stops the stage."""

    def __init__(self, recorder: Recorder) -> None:
        super().__init__()
        self.recorder = recorder

    def after_iteration(self, model: Any, epoch: int, evals_log: Any) -> bool:
        return self.recorder.end_round()


class _RoundCallback(_TrainingCallback):
    """Before each round: tell the training's objective the engine's round in this call."""

    def __init__(self, objective: Any) -> None:
        super().__init__()
        self.objective = objective

    def before_iteration(self, model: Any, epoch: int, evals_log: Any) -> bool:
        self.objective.start_round(int(epoch))
        return False


def round_callback(objective: Any) -> _RoundCallback:
    """Build the ``TrainingCallback`` that passes the round index to *objective*.

    Parameters
    ----------
    objective : ObjectiveCall or any object with ``start_round(local)``
        Receives ``before_iteration``'s ``epoch``: the 0-based round within
        this ``xgboost.train`` call (also when it continues a model).

    Returns
    -------
    xgboost.callback.TrainingCallback
    """
    return _RoundCallback(objective)


class _ReportCallback(_TrainingCallback):
    """After each round, before the recorder advances: report the round to the user's callbacks."""

    def __init__(self, recorder: Recorder, first_round: int) -> None:
        super().__init__()
        self.recorder = recorder
        self.first_round = first_round

    def after_iteration(self, model: Any, epoch: int, evals_log: Any) -> bool:
        report_round(self.recorder.spec.callbacks, self.recorder, self.first_round, int(epoch))
        return False


def record_metric(recorder: Recorder, index_of: dict[int, int]) -> _RecordMetric:
    """Build the ``custom_metric`` that feeds *recorder*.

    Parameters
    ----------
    recorder : Recorder
        The stage's recorder.
    index_of : dict
        ``id(eval DMatrix) -> eval set index``.

    Returns
    -------
    callable
        ``metric(preds, dmatrix) -> [(name, value), ...]``.
    """
    return _RecordMetric(recorder, index_of)


def record_callback(recorder: Recorder) -> _RecordCallback:
    """Build the ``TrainingCallback`` that advances *recorder* and stops the stage early.

    Parameters
    ----------
    recorder : Recorder
        The stage's recorder.

    Returns
    -------
    xgboost.callback.TrainingCallback
    """
    return _RecordCallback(recorder)


# ----------------------------------------------------------------------------
# model text
# ----------------------------------------------------------------------------


def check_model_json(text: str, source: str = "model") -> None:
    """Raise ``ValueError`` naming *source* unless *text* is an XGBoost JSON model."""
    try:
        model = json.loads(text)
    except (TypeError, ValueError) as exc:
        raise ValueError(
            f"{source} is not a complete XGBoost JSON model (damaged or truncated): {exc}"
        ) from exc
    learner = model.get("learner") if isinstance(model, dict) else None
    if not isinstance(learner, dict) or "gradient_booster" not in learner or "version" not in model:
        raise ValueError(
            f"{source} is not an XGBoost JSON model (no learner/gradient_booster/version keys)"
        )


@dataclass
class _Data:
    """The engine data of one training, reused by every stage."""

    train: Any
    evals: list[tuple[Any, str]]
    index_of: dict[int, int]


class XGBoostAdapter:
    """Engine adapter for XGBoost (see :class:`ltr.engines._protocol.EngineAdapter`)."""

    name = "xgboost"
    suffix = ".json"
    #: engine parameters :func:`ltr.engines.train` sets itself -> the argument to use instead
    reserved = _RESERVED

    def version(self) -> str:
        """XGBoost's version (``xgboost.__version__``; xgboost-cpu installs under another name)."""
        return str(xgb.__version__)

    def base_params(self, spec: TrainSpec) -> dict[str, Any]:
        """Defaults, then the user's params (``max_depth=0`` + ``grow_policy`` pass through)."""
        merged = merge_engine_params(
            spec,
            defaults=DEFAULT_PARAMS,
            reserved=_RESERVED,
            aliases=_ALIASES,
            threads_key="nthread",
        )
        merged["disable_default_eval_metric"] = 1  # metrics are ours (ltr.metrics.ndcg)
        if spec.native:
            merged["objective"] = "rank:ndcg"
            merged.setdefault("lambdarank_pair_method", "topk")
            if spec.position is not None:
                merged["lambdarank_unbiased"] = True
            if (spec.label_max or 0.0) >= 32 and merged.get("ndcg_exp_gain", True):
                raise ValueError(
                    f"y has grade {spec.label_max!r} but XGBoost's exponential nDCG gain "
                    "needs "
                    "grades < 32; pass params={'ndcg_exp_gain': False} or a LambdaRankObjective"
                )
            if spec.sample_weight is not None:
                _per_query_weights(spec.sample_weight, spec.offsets)
        else:
            merged.setdefault("base_score", 0.0)
        return merged

    @staticmethod
    def _dmatrix(
        X: Any,
        y: np.ndarray,
        offsets: np.ndarray,
        weight: np.ndarray | None,
        names: list[str] | None,
        categorical: tuple[int, ...] = (),
    ) -> Any:
        qid = np.repeat(np.arange(len(offsets) - 1, dtype=np.int64), np.diff(offsets))
        dm = xgb.DMatrix(X, label=y, qid=qid, feature_names=names,
                         **categorical_dmatrix_args(X.shape[1], categorical))
        if weight is not None:
            dm.set_weight(_per_query_weights(weight, offsets))
        return dm

    def prepare(self, spec: TrainSpec, params: dict[str, Any]) -> _Data:
        """Build the training and eval ``DMatrix`` once."""
        names = spec.feature_names
        X, y, weight = spec.X, spec.y, spec.sample_weight if spec.native else None
        if spec.native and spec.position is not None:
            # lambdarank_unbiased reads positions from the row order inside each query
            order = position_order(spec.position, spec.offsets)
            X, y = take_rows(X, order), y[order]
            weight = None if weight is None else weight[order]
        cat = spec.categorical
        dtrain = self._dmatrix(X, y, spec.offsets, weight, names, cat)
        evals = [
            (self._dmatrix(ev.X, ev.y, ev.offsets, None, names, cat), ev.name)
            for ev in spec.eval_sets
        ]
        return _Data(dtrain, evals, {id(dm): i for i, (dm, _) in enumerate(evals)})

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
    ) -> Any:
        """One ``xgboost.train`` call of *n_rounds* continued from *init_booster*."""
        callbacks: list[Any] = [
            _ReportCallback(recorder, spec.plan[stage_index][1]),  # the user's after_round
            record_callback(recorder),
        ]
        if objective is not None:
            callbacks.insert(0, round_callback(objective))
        return xgb.train(
            self.stage_params(spec, params, stage_index, k, objective),
            data.train,
            num_boost_round=n_rounds,
            evals=data.evals,
            obj=objective,
            custom_metric=record_metric(recorder, data.index_of) if data.evals else None,
            xgb_model=init_booster,
            callbacks=callbacks,
            verbose_eval=False,
        )

    def stage_params(
        self, spec: TrainSpec, params: dict[str, Any], stage_index: int, k: int, objective: Any
    ) -> dict[str, Any]:
        """Parameters of one stage: seed + stage index, and the native objective's ``k``.

        A custom *objective* goes to ``xgboost.train(obj=...)``, not into the
        params; ``None`` sets ``lambdarank_num_pair_per_sample=k``.
        """
        p = dict(params)
        seed_key = "random_state" if "random_state" in p and "seed" not in p else "seed"
        p[seed_key] = int(p.get(seed_key, spec.seed)) + stage_index
        if objective is None:
            p["lambdarank_num_pair_per_sample"] = k
        return p

    def truncate(self, booster: Any, n_rounds: int) -> Any:
        """Return a standalone booster of the first *n_rounds* rounds (through the JSON model)."""
        if booster.num_boosted_rounds() != n_rounds:
            booster = booster[:n_rounds]
        return self.from_string(self.to_string(booster))

    def num_rounds(self, booster: Any) -> int:
        """Boosting rounds in *booster*."""
        return int(booster.num_boosted_rounds())

    def num_features(self, booster: Any) -> int:
        """Input features of *booster*."""
        return int(booster.num_features())

    def feature_names(self, booster: Any) -> list[str] | None:
        """Feature names, or None when the model was trained without them."""
        names = booster.feature_names
        return None if names is None else [str(name) for name in names]

    def to_string(self, booster: Any) -> str:
        """Return the XGBoost JSON model."""
        return bytes(booster.save_raw(raw_format="json")).decode("utf-8")

    def from_string(self, text: str, source: str = "model") -> Any:
        """Parse an XGBoost JSON model; ``ValueError`` naming *source* when it is damaged."""
        check_model_json(text, source)
        booster = xgb.Booster()
        try:
            booster.load_model(bytearray(text.encode("utf-8")))
        except xgb.core.XGBoostError as exc:
            raise ValueError(f"{source} is not a valid XGBoost model: {exc}") from exc
        return booster

    def save_native(self, booster: Any, path: str | os.PathLike[str]) -> None:
        """Write the JSON model (``xgboost.Booster(model_file=path)`` loads it; use ``.json``)."""
        write_atomic(path, self.to_string(booster))

    def predict(self, booster: Any, X: Any) -> np.ndarray:
        """Margins of the rows of *X*."""
        return booster.inplace_predict(X, predict_type="margin")

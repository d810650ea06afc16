"""XGBoost adapter: ``DMatrix(qid=...)``, ``xgboost.train`` per stage, JSON models.

XGBoost is imported only when ``engine="xgboost"`` is used; when it is missing
the error names the extra to install (``pip install "ltr[xgboost]"``).

The native objective is ``rank:ndcg`` with ``lambdarank_pair_method="topk"``
and ``lambdarank_num_pair_per_sample=k`` (XGBoost's truncation level).  Each
stage is one ``xgboost.train`` call continued from the previous model
(``xgb_model``) with the full params, so the objective is configured again for
the stage's ``k``.  XGBoost ranking weights are per query: per-row
``sample_weight`` must be constant within each query for the native objective
(with a custom objective the gradients are weighted per row).
"""

from __future__ import annotations

from types import ModuleType
from typing import Any

import numpy as np

from ltr.engines._common import Recorder, TrainSpec, merge_engine_params

__all__ = ["DEFAULT_PARAMS", "XGBoostAdapter", "import_xgboost"]

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
}


def import_xgboost() -> ModuleType:
    """Import xgboost or raise ``ImportError`` naming ``pip install "ltr[xgboost]"``."""
    try:
        import xgboost
    except ImportError as exc:
        raise ImportError(
            'engine="xgboost" needs the xgboost package, which is not installed: '
            'pip install "ltr[xgboost]"  (or: pip install xgboost-cpu)'
        ) from exc
    return xgboost


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


class XGBoostAdapter:
    """Engine adapter for XGBoost (see :class:`ltr.engines._common.EngineAdapter`)."""

    name = "xgboost"
    suffix = ".json"

    def __init__(self) -> None:
        self.xgb = import_xgboost()

    def base_params(self, spec: TrainSpec) -> dict[str, Any]:
        merged = merge_engine_params(spec, defaults=DEFAULT_PARAMS, reserved=_RESERVED,
                                     aliases=_ALIASES, threads_key="nthread")
        merged["disable_default_eval_metric"] = 1  # metrics are ours (ltr.metrics.ndcg)
        if spec.native:
            merged["objective"] = "rank:ndcg"
            merged.setdefault("lambdarank_pair_method", "topk")
            if spec.y.max() >= 32 and merged.get("ndcg_exp_gain", True):
                raise ValueError(
                    f"y has grade {float(spec.y.max())!r} but XGBoost's exponential nDCG gain needs "
                    "grades < 32; pass params={'ndcg_exp_gain': False} or a LambdaRankObjective"
                )
            if spec.sample_weight is not None:
                _per_query_weights(spec.sample_weight, spec.offsets)
        else:
            merged.setdefault("base_score", 0.0)
        return merged

    def _dmatrix(self, X: Any, y: np.ndarray, offsets: np.ndarray, weight: np.ndarray | None) -> Any:
        qid = np.repeat(np.arange(len(offsets) - 1, dtype=np.int64), np.diff(offsets))
        dm = self.xgb.DMatrix(X, label=y, qid=qid)
        if weight is not None:
            dm.set_weight(_per_query_weights(weight, offsets))
        return dm

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
    ) -> Any:
        xgb = self.xgb
        p = dict(params)
        seed_key = "random_state" if "random_state" in p and "seed" not in p else "seed"
        p[seed_key] = int(p.get(seed_key, spec.seed)) + stage_index
        if objective is None:
            p["lambdarank_num_pair_per_sample"] = k
        dtrain = self._dmatrix(spec.X, spec.y, spec.offsets,
                               spec.sample_weight if objective is None else None)
        evals = [(self._dmatrix(ev.X, ev.y, ev.offsets, None), ev.name) for ev in spec.eval_sets]
        index_of = {id(dm): i for i, (dm, _) in enumerate(evals)}

        def metric(preds: np.ndarray, dmat: Any) -> list[tuple[str, float]]:
            values = recorder.record(index_of[id(dmat)], preds)
            return list(values.items())

        class _StopOnRecorder(xgb.callback.TrainingCallback):
            def after_iteration(self, model: Any, epoch: int, evals_log: Any) -> bool:
                return recorder.end_round()

        return xgb.train(
            p,
            dtrain,
            num_boost_round=n_rounds,
            evals=evals,
            obj=objective,
            custom_metric=metric if evals else None,
            xgb_model=init_booster,
            callbacks=[_StopOnRecorder()],
            verbose_eval=False,
        )

    def truncate(self, booster: Any, n_rounds: int) -> Any:
        if booster.num_boosted_rounds() != n_rounds:
            booster = booster[:n_rounds]
        return self.from_string(self.to_string(booster))

    def num_rounds(self, booster: Any) -> int:
        return int(booster.num_boosted_rounds())

    def num_features(self, booster: Any) -> int:
        return int(booster.num_features())

    def to_string(self, booster: Any) -> str:
        return bytes(booster.save_raw(raw_format="json")).decode("utf-8")

    def from_string(self, text: str) -> Any:
        booster = self.xgb.Booster()
        booster.load_model(bytearray(text.encode("utf-8")))
        return booster

    def predict(self, booster: Any, X: Any) -> np.ndarray:
        return booster.inplace_predict(X, predict_type="margin")

"""Per-round metrics of one stage and the early-stopping decision.

The engines' hooks (LightGBM ``feval`` plus an after-round callback, XGBoost
``custom_metric`` plus a ``TrainingCallback``; module-level picklable classes
in each adapter module) call :meth:`Recorder.record` with the eval sets'
predictions and :meth:`Recorder.end_round` after every round.  Values are
:func:`ltr.metrics.ndcg` under the spec's convention: the user's, else the
engine's own, so the curves equal the engine's ``ndcg@k`` eval.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any

import numpy as np

from ltr.metrics.names import format_metric_name

if TYPE_CHECKING:
    from ltr.engines._spec import TrainSpec

__all__ = ["Recorder"]


def _metric_key(k: int) -> str:
    return format_metric_name("ndcg", k)


class Recorder:
    """Per-round metrics of one stage and the early-stopping decision.

    ``record(set_index, preds)`` is called by the engine's metric hook for each
    eval set; ``end_round()`` after each round returns True to stop.  A
    recorder pickles (its progress bar, if any, is left out of the state).

    Parameters
    ----------
    spec : TrainSpec
        The validated request (eval sets, cut-offs, convention, early stopping).
    stage_k : int
        Truncation level of the stage (the early-stopping metric is ``ndcg@stage_k``).
    bar : tqdm or None
        Progress bar advanced once per round.
    """

    def __init__(self, spec: TrainSpec, stage_k: int, bar: Any = None) -> None:
        self.spec = spec
        self.ks = tuple(
            sorted(set(spec.eval_at) | ({stage_k} if spec.early_stopping_rounds else set()))
        )
        self.history: list[dict[str, list[float]]] = [{} for _ in spec.eval_sets]
        self.rounds = 0
        self.best_round = -1
        self.best_score = -math.inf
        self.bar = bar
        self.stop_metric = None
        if spec.eval_sets:
            first = spec.eval_sets[0]
            composite = spec.composite_weights is not None and first.labels is not None
            metric = "composite_ndcg" if composite else "ndcg"
            self.stop_metric = format_metric_name(metric, stage_k)

    def __getstate__(self) -> dict[str, Any]:
        state = dict(self.__dict__)
        state["bar"] = None  # a live tqdm bar holds a lock and a stream
        return state

    def record(self, index: int, preds: np.ndarray) -> dict[str, float]:
        """Record the metrics of eval set *index* for the current round; returns them."""
        from ltr.metrics import ndcg
        from ltr.metrics.composite import composite_ndcg

        ev = self.spec.eval_sets[index]
        scores = np.asarray(preds, dtype=np.float64).reshape(-1)
        values = ndcg(
            ev.y, scores, offsets=ev.offsets, k=list(self.ks), convention=self.spec.convention
        )
        out = {_metric_key(kk): float(values[kk]) for kk in self.ks}
        weights = self.spec.composite_weights
        if weights is not None and ev.labels is not None:
            labels = {name: ev.labels[name] for name in weights}
            gains = {n: g for n, g in (self.spec.composite_gains or {}).items() if n in labels}
            for kk in self.ks:
                comp = composite_ndcg(
                    labels,
                    scores,
                    offsets=ev.offsets,
                    weights=weights,
                    k=kk,
                    gains=gains or None,
                    convention=self.spec.convention,
                )
                out[format_metric_name("composite_ndcg", kk)] = float(comp.total)
                for name, value in comp.per_objective.items():
                    out[format_metric_name("ndcg", kk, objective=name)] = float(value)
        hist = self.history[index]
        for key, value in out.items():
            hist.setdefault(key, []).append(value)
        return out

    def end_round(self) -> bool:
        """Advance one round; return True when early stopping says stop."""
        self.rounds += 1
        if self.bar is not None:
            self.bar.update(1)
        if self.stop_metric is None or not self.spec.early_stopping_rounds:
            return False
        values = self.history[0].get(self.stop_metric)
        if not values or len(values) < self.rounds:
            return False
        score = values[-1]
        if score > self.best_score:
            self.best_score = score
            self.best_round = self.rounds - 1
        return self.rounds - 1 - self.best_round >= self.spec.early_stopping_rounds

    def absorb(self, other: Recorder) -> None:
        """Take the rounds and metrics *other* recorded elsewhere (a worker); advance the bar.

        A distributed executor's workers record the stage on their copy of the
        recorder; the loop's recorder takes its state afterwards.
        """
        self.history = [dict(h) for h in other.history]
        self.rounds = other.rounds
        self.best_round = other.best_round
        self.best_score = other.best_score
        if self.bar is not None:
            self.bar.update(other.rounds)

    def kept_rounds(self) -> int:
        """Return the rounds of this stage kept in the model (best round + 1 if stopping)."""
        if self.spec.early_stopping_rounds and self.best_round >= 0:
            return self.best_round + 1
        return self.rounds

    def kept_history(self) -> dict[str, dict[str, list[float]]]:
        """Public metric histories of the kept rounds, per eval set name."""
        n = self.kept_rounds()
        return {
            ev.name: {
                key: values[:n]
                for key, values in self.history[i].items()
                if key in self._public_keys()
            }
            for i, ev in enumerate(self.spec.eval_sets)
        }

    def _public_keys(self) -> set[str]:
        keys = {_metric_key(kk) for kk in self.spec.eval_at}
        keys |= {format_metric_name("composite_ndcg", kk) for kk in self.spec.eval_at}
        if self.spec.composite_weights:
            keys |= {
                format_metric_name("ndcg", kk, objective=n)
                for kk in self.spec.eval_at
                for n in self.spec.composite_weights
            }
        return keys

"""Per-round callbacks of a training: what the engines report after every round.

:func:`ltr.engines.train` takes ``callbacks=[...]``: objects with an
``after_round(info)`` method (a :class:`RoundCallback` subclass, or any object
with that method).  After every boosting round the engine adapter's own small
callback (a LightGBM callback in ``ltr.engines.lightgbm``, an XGBoost
``TrainingCallback`` in ``ltr.engines.xgboost``) builds a :class:`RoundInfo`
from the stage's :class:`~ltr.engines._recorder.Recorder` -- the metrics ltr
computed for that round on every eval set, under the run's convention -- and
passes it to each callback in order.  A callback stops the training by raising
(e.g. ``optuna.TrialPruned``); the exception leaves :func:`ltr.engines.train`
unchanged.  Rounds of stages loaded from checkpoints (``resume``) are not
reported again.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ltr.engines._recorder import Recorder

__all__ = ["RoundCallback", "RoundInfo", "check_callbacks", "report_round"]


@dataclass(frozen=True)
class RoundInfo:
    """One finished boosting round, as the callbacks see it.

    Attributes
    ----------
    round : int
        0-based round over the whole training (stages included).
    stage : int
        Index of the truncation stage the round belongs to.
    k : int
        The stage's truncation level.
    metrics : dict
        ``{eval set name: {"ndcg@10": value, ...}}`` of this round: every metric
        the recorder computed (``composite_ndcg@k`` too for composite runs).
    """

    round: int
    stage: int
    k: int
    metrics: dict[str, dict[str, float]] = field(default_factory=dict)


class RoundCallback:
    """Base class of training callbacks; override :meth:`after_round`.

    Examples
    --------
    >>> import numpy as np
    >>> from ltr.engines import train
    >>> class Collect(RoundCallback):
    ...     def __init__(self):
    ...         self.seen = []
    ...     def after_round(self, info):
    ...         self.seen.append((info.round, sorted(info.metrics["valid"])))
    >>> rng = np.random.default_rng(0)
    >>> X = rng.normal(size=(200, 4)); y = rng.integers(0, 3, 200); off = np.arange(0, 201, 20)
    >>> cb = Collect()
    >>> _ = train(X, y, off, num_boost_round=2, eval_sets=[("valid", X, y, off)], eval_at=[5],
    ...           n_jobs=1, params={"min_data_in_leaf": 5}, callbacks=[cb])
    >>> cb.seen
    [(0, ['ndcg@5']), (1, ['ndcg@5'])]
    """

    def after_round(self, info: RoundInfo) -> None:
        """Handle one finished round (raise to stop the training)."""


def check_callbacks(callbacks: Any) -> tuple[Any, ...]:
    """Validate *callbacks*: a sequence of objects with a callable ``after_round``.

    Raises
    ------
    TypeError
        Naming the offending entry and what it needs.
    """
    if callbacks is None:
        return ()
    if not isinstance(callbacks, Sequence) or isinstance(callbacks, (str, bytes)):
        raise TypeError(
            f"callbacks must be a list of objects with an after_round(info) method, "
            f"got {type(callbacks).__name__}"
        )
    for i, cb in enumerate(callbacks):
        if not callable(getattr(cb, "after_round", None)):
            raise TypeError(
                f"callbacks[{i}] has no after_round(info) method, got {type(cb).__name__}; "
                "subclass ltr.engines.RoundCallback"
            )
    return tuple(callbacks)


def report_round(
    callbacks: Sequence[Any], recorder: Recorder, first_round: int, local: int | None = None
) -> None:
    """Pass the recorder's latest round to every callback (the adapters' hooks call this).

    Parameters
    ----------
    callbacks : sequence
        The training's callbacks.
    recorder : Recorder
        The stage's recorder; the round's metrics are recorded, the round not yet ended.
    first_round : int
        Global index of the first round of the engine call (its stage and ``k``
        are looked up in the plan).
    local : int, optional
        The round's 0-based index in this engine call, as the engine's callback
        gives it (LightGBM ``env.iteration - env.begin_iteration``, XGBoost's
        ``epoch``); default: the rounds the recorder has ended.  The engine's
        index does not depend on the order the engine runs its callbacks in.
    """
    if not callbacks:
        return
    metrics = {
        ev.name: {key: values[-1] for key, values in recorder.history[i].items() if values}
        for i, ev in enumerate(recorder.spec.eval_sets)
    }
    rnd = first_round + (recorder.rounds if local is None else int(local))
    stage, k = 0, recorder.spec.plan[0][0]
    for i, (stage_k, first, n_rounds) in enumerate(recorder.spec.plan):
        if first <= rnd < first + n_rounds:
            stage, k = i, stage_k
    info = RoundInfo(round=rnd, stage=stage, k=k, metrics=metrics)
    for cb in callbacks:
        cb.after_round(info)

"""The estimator of ``ltr tune`` (its search space: :mod:`ltr.runs.search_space`).

A config's ``model`` section holds :class:`ltr.estimator.LambdaMARTRanker`'s
parameters under their own names (:mod:`ltr.runs.training_config`), so its
validated :class:`ltr.build.TrainSettings` (``RunConfig.settings``) are the
estimator's keyword arguments as they are, and a search space names them too.
"""

from __future__ import annotations

from typing import Any

from ltr.build import TrainSettings

__all__ = ["ranker_from_settings"]


def ranker_from_settings(settings: TrainSettings, *, eval_at: tuple[int, ...] = (10,)) -> Any:
    """Return a :class:`~ltr.estimator.LambdaMARTRanker` with exactly *settings*."""
    import dataclasses

    from ltr.estimator import LambdaMARTRanker

    params = {f.name: getattr(settings, f.name) for f in dataclasses.fields(settings)}
    return LambdaMARTRanker(**params, eval_at=eval_at)

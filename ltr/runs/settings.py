"""The estimator of ``ltr tune`` and its search space.

A config's ``model`` section holds :class:`ltr.estimator.LambdaMARTRanker`'s
parameters under their own names (:mod:`ltr.runs.training_config`), so its
validated :class:`ltr.build.TrainSettings` (``RunConfig.settings``) are the
estimator's keyword arguments as they are, and a search space names them too.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ltr.build import TrainSettings
from ltr.runs.config import RunError

__all__ = ["ranker_from_settings", "search_distributions"]


def ranker_from_settings(settings: TrainSettings, *, eval_at: tuple[int, ...] = (10,)) -> Any:
    """Return a :class:`~ltr.estimator.LambdaMARTRanker` with exactly *settings*."""
    import dataclasses

    from ltr.estimator import LambdaMARTRanker

    params = {f.name: getattr(settings, f.name) for f in dataclasses.fields(settings)}
    return LambdaMARTRanker(**params, eval_at=eval_at)


def search_distributions(space: Mapping[str, Any]) -> dict[str, Any]:
    """Turn a search space into scikit-learn's ``param_distributions``.

    ``{name: [values]}`` stays a list; ``{name: {dist: uniform|loguniform|randint, low, high}}``
    becomes the scipy distribution.
    """
    from scipy import stats

    out: dict[str, Any] = {}
    for name, spec in space.items():
        if isinstance(spec, list):
            out[name] = spec
            continue
        if not isinstance(spec, Mapping) or "dist" not in spec:
            raise RunError(
                f"search.param_distributions.{name}: give a list of values or "
                f"{{dist: uniform|loguniform|randint, low: .., high: ..}}, got {spec!r}"
            )
        dist, low, high = spec.get("dist"), spec.get("low"), spec.get("high")
        if (
            not isinstance(low, (int, float))
            or not isinstance(high, (int, float))
            or not low < high
        ):
            raise RunError(
                f"search.param_distributions.{name}: needs numeric low < high, "
                f"got low={low!r}, high={high!r}"
            )
        if dist == "uniform":
            out[name] = stats.uniform(low, high - low)
        elif dist == "loguniform":
            if low <= 0:
                raise RunError(
                    f"search.param_distributions.{name}.low: must be > 0 for loguniform, "
                    f"got {low!r}"
                )
            out[name] = stats.loguniform(low, high)
        elif dist == "randint":
            out[name] = stats.randint(int(low), int(high) + 1)
        else:
            raise RunError(
                f"search.param_distributions.{name}.dist: must be uniform, loguniform or randint, "
                f"got {dist!r}"
            )
    return out

"""The search space of ``ltr tune``, read once and handed to scikit-learn or Optuna.

A space maps a :class:`~ltr.estimator.LambdaMARTRanker` parameter name
(``n_estimators``, ``learning_rate``, ``num_leaves``, ``max_depth``,
``min_child_samples``, ``k``, ``sigma``, ...) to one of::

    [7, 15, 31]                                  # categorical: these values
    {dist: categorical, choices: [native, lambdarank]}
    {dist: int, low: 7, high: 63}                # integers low..high (inclusive)
    {dist: int, low: 16, high: 512, log: true}   # log-spaced integers (optuna only)
    {dist: float, low: 0.5, high: 2.0}           # optional step: 0.25
    {dist: float, low: 0.01, high: 0.3, log: true}
    {dist: uniform, low: .., high: ..}           # = float
    {dist: loguniform, low: .., high: ..}        # = float, log: true
    {dist: randint, low: .., high: ..}           # = int

:func:`parse_space` validates it (every error names the config key);
:func:`to_scipy` gives ``RandomizedSearchCV``'s distributions;
:mod:`ltr.runs.optuna_search` samples each :class:`ParamSpace` with Optuna's
``suggest_int``/``suggest_float``/``suggest_categorical``.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from ltr.build import TrainSettings
from ltr.runs.config import RunError

__all__ = ["ParamSpace", "parse_space", "searchable_params", "to_scipy"]

_ALIASES = {"uniform": ("float", False), "loguniform": ("float", True), "randint": ("int", False)}
_KEYS = {"dist", "low", "high", "log", "step", "choices"}


@dataclass(frozen=True)
class ParamSpace:
    """One parameter's distribution: ``int``, ``float`` (``log``, ``step``) or ``categorical``."""

    name: str
    kind: str
    low: float | None = None
    high: float | None = None
    log: bool = False
    step: float | None = None
    choices: tuple[Any, ...] = ()


def searchable_params() -> list[str]:
    """Return the parameter names a search may vary (the estimator's, seed and threads aside)."""
    return sorted(set(TrainSettings.__dataclass_fields__) - {"random_state", "n_jobs"})


def _number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)


def _one(name: str, spec: Any, where: str) -> ParamSpace:
    path = f"{where}.{name}"
    if isinstance(spec, list):
        if not spec:
            raise RunError(f"{path}: needs at least one value, got []")
        return ParamSpace(name, "categorical", choices=tuple(spec))
    if not isinstance(spec, Mapping) or "dist" not in spec:
        raise RunError(
            f"{path}: give a list of values or {{dist: int|float|categorical, low: .., "
            f"high: ..}}, got {spec!r}"
        )
    unknown = sorted(set(spec) - _KEYS, key=str)
    if unknown:
        raise RunError(f"{path}: unknown key(s) {unknown}; use {sorted(_KEYS)}")
    dist = spec["dist"]
    if dist == "categorical":
        choices = spec.get("choices")
        if not isinstance(choices, list) or not choices:
            raise RunError(f"{path}.choices: needs a non-empty list, got {choices!r}")
        return ParamSpace(name, "categorical", choices=tuple(choices))
    kind, log = _ALIASES.get(dist, (dist, False)) if isinstance(dist, str) else (None, False)
    if kind not in ("int", "float"):
        raise RunError(
            f"{path}.dist: must be int, float, categorical, uniform, loguniform or randint, "
            f"got {dist!r}"
        )
    log = bool(spec.get("log", log))
    low: Any = spec.get("low")
    high: Any = spec.get("high")
    if not _number(low) or not _number(high) or not low < high:
        raise RunError(f"{path}: needs numeric low < high, got low={low!r}, high={high!r}")
    if kind == "int" and (int(low) != low or int(high) != high):
        raise RunError(f"{path}: dist int needs integer low and high, got {low!r}, {high!r}")
    if log and low <= 0:
        raise RunError(f"{path}.low: must be > 0 for a log scale, got {low!r}")
    step: Any = spec.get("step")
    bad_int = kind == "int" and _number(step) and step != int(step)
    if step is not None and (not _number(step) or step <= 0 or bad_int):
        raise RunError(f"{path}.step: must be a positive {kind}, got {step!r}")
    if step is not None and log:
        raise RunError(f"{path}: step and log exclude each other")
    return ParamSpace(name, kind, float(low), float(high), log, None if step is None else step)


def parse_space(space: Mapping[str, Any], where: str) -> dict[str, ParamSpace]:
    """Validate a search space; *where* is its config key (``search.param_distributions``).

    Raises
    ------
    RunError
        For an unknown parameter name or a malformed distribution, naming the key.
    """
    valid = searchable_params()
    out: dict[str, ParamSpace] = {}
    for name, spec in space.items():
        if name not in valid:
            raise RunError(
                f"{where}.{name}: not a training setting "
                f"(LambdaMARTRanker parameters: {', '.join(valid)})"
            )
        out[name] = _one(name, spec, where)
    return out


def to_scipy(space: Mapping[str, ParamSpace], where: str) -> dict[str, Any]:
    """``RandomizedSearchCV`` distributions: lists stay lists, ranges become scipy's."""
    from scipy import stats

    out: dict[str, Any] = {}
    for name, p in space.items():
        if p.kind == "categorical":
            out[name] = list(p.choices)
            continue
        assert p.low is not None and p.high is not None  # set for int and float
        if p.step is not None or (p.kind == "int" and p.log):
            raise RunError(
                f"{where}.{name}: step and log-spaced integers need search.method optuna"
            )
        if p.kind == "int":
            out[name] = stats.randint(int(p.low), int(p.high) + 1)
        elif p.log:
            out[name] = stats.loguniform(p.low, p.high)
        else:
            out[name] = stats.uniform(p.low, p.high - p.low)
    return out

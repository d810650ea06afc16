"""Engine parameters and feature names, checked: the user's params over an adapter's defaults."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from ltr._validation import (
    short_repr,
)

if TYPE_CHECKING:  # pragma: no cover
    from ltr.engines._spec import TrainSpec

__all__ = ["check_feature_names", "merge_engine_params"]


def merge_engine_params(
    spec: TrainSpec,
    *,
    defaults: Mapping[str, Any],
    reserved: Mapping[str, str],
    aliases: Mapping[str, Sequence[str]],
    threads_key: str,
) -> dict[str, Any]:
    """User ``params`` over the adapter's defaults (seed, threads), refusing reserved keys.

    A default is dropped when the user set it under any of its engine aliases.
    """
    user = dict(spec.params)
    for key, value in user.items():
        if key in reserved:
            raise ValueError(
                f"params[{key!r}] is set by train(); use {reserved[key]} instead "
                f"(got {short_repr(value)})"
            )
    base = dict(defaults)
    base["seed"] = spec.seed
    if spec.n_jobs is not None and spec.n_jobs > 0:
        base[threads_key] = spec.n_jobs
    merged = {
        key: value
        for key, value in base.items()
        if not any(alias in user for alias in aliases.get(key, (key,)))
    }
    merged.update(user)
    return merged


def check_feature_names(names: Any, n_features: int) -> list[str] | None:
    """``None``, or a list of *n_features* distinct non-empty strings.

    Parameters
    ----------
    names : sequence of str or None
        Feature names, one per column of ``X``.
    n_features : int
        Columns of ``X``.

    Returns
    -------
    list of str or None
    """
    if names is None:
        return None
    if isinstance(names, (str, bytes)) or not isinstance(names, Sequence):
        raise TypeError(f"feature_names must be a sequence of str, got {short_repr(names)}")
    out = list(names)
    if len(out) != n_features:
        raise ValueError(f"feature_names has {len(out)} names but X has {n_features} columns")
    for j, name in enumerate(out):
        if not isinstance(name, str) or not name:
            raise TypeError(f"feature_names[{j}] must be a non-empty str, got {name!r}")
    seen: set[str] = set()
    for name in out:
        if name in seen:
            raise ValueError(f"feature_names must be unique; {name!r} appears more than once")
        seen.add(name)
    return out

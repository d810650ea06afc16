"""Argument checks shared by the public API.

Every check raises ``ValueError`` or ``TypeError`` whose message names the
argument and quotes the offending value, so a user can fix the call without
reading the source.  Nothing here uses ``assert``.
"""

from __future__ import annotations

from numbers import Integral, Real
from typing import Any

import numpy as np

__all__ = [
    "check_1d_float",
    "check_finite",
    "check_int",
    "check_real",
    "check_same_length",
    "short_repr",
]


def short_repr(value: Any, limit: int = 80) -> str:
    """``repr`` of *value* cut to *limit* characters (arrays can be huge)."""
    text = repr(value)
    return text if len(text) <= limit else text[: limit - 3] + "..."


def check_int(value: Any, name: str, *, minimum: int | None = None, maximum: int | None = None) -> int:
    """Return *value* as ``int`` after checking its type and bounds."""
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, Integral):
        raise TypeError(f"{name} must be an integer, got {short_repr(value)} ({type(value).__name__})")
    value = int(value)
    if minimum is not None and value < minimum:
        raise ValueError(f"{name} must be >= {minimum}, got {value!r}")
    if maximum is not None and value > maximum:
        raise ValueError(f"{name} must be <= {maximum}, got {value!r}")
    return value


def check_real(
    value: Any,
    name: str,
    *,
    minimum: float | None = None,
    maximum: float | None = None,
    exclusive_minimum: bool = False,
) -> float:
    """Return *value* as ``float`` after checking its type, finiteness and bounds."""
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, Real):
        raise TypeError(f"{name} must be a real number, got {short_repr(value)} ({type(value).__name__})")
    value = float(value)
    if not np.isfinite(value):
        raise ValueError(f"{name} must be finite, got {value!r}")
    if minimum is not None:
        if exclusive_minimum and value <= minimum:
            raise ValueError(f"{name} must be > {minimum}, got {value!r}")
        if not exclusive_minimum and value < minimum:
            raise ValueError(f"{name} must be >= {minimum}, got {value!r}")
    if maximum is not None and value > maximum:
        raise ValueError(f"{name} must be <= {maximum}, got {value!r}")
    return value


def check_1d_float(values: Any, name: str, *, allow_empty: bool = False) -> np.ndarray:
    """Convert *values* to a contiguous 1-D ``float64`` array.

    Raises ``TypeError`` for non-numeric input and ``ValueError`` for a wrong
    shape or (unless *allow_empty*) an empty array.
    """
    if values is None:
        raise TypeError(f"{name} must be an array-like of numbers, got None")
    try:
        arr = np.asarray(values)
    except Exception as exc:  # pragma: no cover - exotic inputs
        raise TypeError(f"{name} must be an array-like of numbers, got {short_repr(values)}") from exc
    if arr.dtype == object or not (
        np.issubdtype(arr.dtype, np.number) or np.issubdtype(arr.dtype, np.bool_)
    ):
        raise TypeError(f"{name} must contain numbers, got dtype {arr.dtype} ({short_repr(values)})")
    if arr.ndim != 1:
        raise ValueError(f"{name} must be 1-D, got shape {arr.shape}")
    if arr.size == 0 and not allow_empty:
        raise ValueError(f"{name} is empty: at least one row is required")
    return np.ascontiguousarray(arr, dtype=np.float64)


def check_finite(arr: np.ndarray, name: str) -> None:
    """Raise ``ValueError`` naming the first NaN/inf entry of *arr*."""
    with np.errstate(over="ignore", invalid="ignore"):
        if arr.dtype.kind == "f" and np.isfinite(np.add.reduce(arr, axis=None)):
            return  # a finite sum means no NaN/inf (one pass, no temporary array)
    bad = ~np.isfinite(arr)
    if bad.any():
        idx = int(np.flatnonzero(bad)[0])
        raise ValueError(
            f"{name} must be finite; found {int(bad.sum())} NaN/inf value(s), "
            f"first at index {idx}: {arr[idx].item()!r}"
        )


def check_same_length(n: int, arr: np.ndarray, name: str, reference: str) -> None:
    """Raise ``ValueError`` if ``len(arr) != n``."""
    if len(arr) != n:
        raise ValueError(f"{name} has {len(arr)} rows but {reference} has {n}; they must match")

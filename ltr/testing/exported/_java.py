"""Java's number parsing and float arithmetic, for the reference interpreters."""

from __future__ import annotations

import json
from fractions import Fraction
from typing import Any

import numpy as np

__all__ = ["jackson_float", "parse_float", "strict_json"]


def parse_float(text: str) -> np.float32:
    """``Float.parseFloat``: the decimal *text* rounded once, to nearest float32 (ties to even).

    Python reads the text as a double first; that double rounding differs from
    a direct rounding only when the double lands exactly halfway between two
    float32 values, which is resolved here with the exact decimal.
    """
    d = float(text)
    f = np.float32(d)
    if not np.isfinite(f) or float(f) == d:
        return f
    lo, hi = (f, np.nextafter(f, np.float32(np.inf))) if float(f) < d else (
        np.nextafter(f, np.float32(-np.inf)), f)
    mid = (Fraction(float(lo)) + Fraction(float(hi))) / 2
    if Fraction(d) != mid:
        return f
    exact = Fraction(text.strip())
    if exact < mid:
        return np.float32(lo)
    if exact > mid:
        return np.float32(hi)
    return f  # a true tie: numpy's ties-to-even


def jackson_float(value: float) -> np.float32:
    """Return a JSON number as Jackson's ``getFloatValue`` reads it (double, then float)."""
    return np.float32(float(value))


def _no_constant(name: str) -> Any:
    raise ValueError(f"non-standard JSON number {name!r} (Jackson rejects it by default)")


def strict_json(text: str) -> Any:
    """Parse JSON as Jackson does by default: no ``NaN``/``Infinity`` literals."""
    return json.loads(text, parse_constant=_no_constant)

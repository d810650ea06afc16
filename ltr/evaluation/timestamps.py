"""Timestamps of logged impressions: ISO-8601 text or epoch numbers, as UTC datetimes.

The one reader of monitoring timestamps (:mod:`ltr.evaluation.monitoring`, ``ltr monitor``).
Text is converted to UTC row by row (offsets may change across a daylight-saving
switch); numbers are epoch times in an explicit unit, or in the one unit that puts
them all between 1980 and 2100 (stated in a warning).
"""

from __future__ import annotations

import warnings
from typing import Any

import numpy as np
import pandas as pd

__all__ = ["TIME_UNITS", "check_time_unit", "infer_unit", "parse_timestamps"]

#: Epoch units of numeric timestamps (``time_unit``).
TIME_UNITS: tuple[str, ...] = ("s", "ms", "us", "ns")
#: Epoch numbers are read in the one unit that puts them all in this range (when no unit is given).
_PLAUSIBLE = (pd.Timestamp("1980-01-01", tz="UTC"), pd.Timestamp("2100-01-01", tz="UTC"))


def check_time_unit(unit: Any, where: str = "time_unit") -> str | None:
    """Return *unit* if it is one of :data:`TIME_UNITS` (or None), else raise naming *where*."""
    if unit is not None and unit not in TIME_UNITS:
        raise ValueError(f"{where}: must be one of {list(TIME_UNITS)} (epoch seconds, "
                         f"milliseconds, microseconds, nanoseconds), got {unit!r}")
    return unit


def parse_timestamps(col: pd.Series, name: str, row_offset: int = 0,
                     time_unit: str | None = None) -> pd.Series:
    """Return timestamps as UTC datetimes; errors name the column, first bad row and value.

    Numbers are epoch times in *time_unit*; without it the unit is inferred when
    exactly one unit puts every number between 1980 and 2100 (a warning states
    it), else the numbers are refused.  ISO-8601 text is converted to UTC row by
    row (offsets may change, e.g. across a daylight-saving switch), but text
    with an offset and text without one are not mixed.
    """
    unit = check_time_unit(time_unit)
    if len(col) == 0:
        return pd.Series(pd.to_datetime([], utc=True), dtype="datetime64[ns, UTC]")
    numeric = pd.api.types.is_numeric_dtype(col) and not pd.api.types.is_bool_dtype(col)
    if unit is not None and not numeric:
        raise ValueError(f"time_unit {unit!r} applies to epoch numbers, but column {name!r} "
                         f"holds {col.dtype} values (row {row_offset}: {col.iloc[0]!r}); drop "
                         "time_unit")
    if isinstance(col.dtype, pd.DatetimeTZDtype):
        return col.dt.tz_convert("UTC")
    if pd.api.types.is_datetime64_dtype(col):
        return col.dt.tz_localize("UTC")
    if numeric:
        num = col.to_numpy(float)
        bad = ~np.isfinite(num)
        if bad.any():
            i = int(np.flatnonzero(bad)[0])
            raise ValueError(f"column {name!r}, row {i + row_offset}: timestamp is missing")
        if unit is None:
            unit = infer_unit(num, name)
            warnings.warn(
                f"column {name!r}: epoch timestamps read as {_UNIT_NAMES[unit]} (inferred from "
                f"their magnitude, {num.min():.0f} to {num.max():.0f}); set time_unit: {unit} "
                f"(ltr monitor --time-unit {unit}) to say so",
                UserWarning, stacklevel=3,
            )
        # the first row outside the plausible range is named, whatever pandas does with
        # out-of-range epochs (its versions differ)
        outside = _implausible(num, unit)
        if outside.any():
            i = int(np.flatnonzero(outside)[0])
            raise ValueError(f"column {name!r}, row {i + row_offset}: {col.iloc[i]!r} as epoch "
                             f"{_UNIT_NAMES[unit]} (time_unit {unit!r}) is not a date between "
                             "1980 and 2100; check time_unit (s, ms, us or ns)")
        return pd.to_datetime(col, unit=unit, utc=True)
    missing = col.isna().to_numpy()
    if missing.any():
        i = int(np.flatnonzero(missing)[0])
        raise ValueError(f"column {name!r}, row {i + row_offset}: timestamp is missing")
    text = col.astype(str).str.strip()
    ts = pd.to_datetime(text, utc=True, format="ISO8601", errors="coerce")
    bad = ts.isna().to_numpy()
    if bad.any():
        i = int(np.flatnonzero(bad)[0])
        raise ValueError(f"column {name!r}, row {i + row_offset}: cannot parse "
                         f"{text.iloc[i]!r} as an ISO-8601 timestamp")
    has_zone = text.str.contains(r"(?:Z|[+-]\d\d:?\d\d)$", regex=True).to_numpy()
    differs = has_zone != has_zone[0]
    if differs.any():
        i = int(np.flatnonzero(differs)[0])
        raise ValueError(
            f"column {name!r}: row {row_offset} is {text.iloc[0]!r} "
            f"({'with' if has_zone[0] else 'without'} a UTC offset) but row {i + row_offset} is "
            f"{text.iloc[i]!r}; write every timestamp with its UTC offset, or none (read as UTC)"
        )
    return ts


_UNIT_NAMES = {"s": "seconds", "ms": "milliseconds", "us": "microseconds", "ns": "nanoseconds"}
#: Nanoseconds per epoch unit.
_NS_PER_UNIT = {"s": 1e9, "ms": 1e6, "us": 1e3, "ns": 1.0}


def _implausible(num: np.ndarray, unit: str) -> np.ndarray:
    """Which epoch numbers, read in *unit*, fall outside 1980-2100 (the one range rule)."""
    ns = num * _NS_PER_UNIT[unit]
    return (ns < _PLAUSIBLE[0].value) | (ns >= _PLAUSIBLE[1].value)


def infer_unit(num: np.ndarray, name: str) -> str:
    """Return the one epoch unit that puts every number between 1980 and 2100, else raise."""
    lo, hi = float(num.min()), float(num.max())
    bounds = np.array([lo, hi])
    fits = [unit for unit in TIME_UNITS if not _implausible(bounds, unit).any()]
    if len(fits) != 1:
        raise ValueError(
            f"column {name!r}: epoch timestamps from {lo:.0f} to {hi:.0f} do not tell their unit "
            f"(no single unit of {list(TIME_UNITS)} puts them all between 1980 and 2100); set "
            "time_unit (ltr monitor --time-unit) to s, ms, us or ns"
        )
    return fits[0]

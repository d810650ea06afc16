"""Deprecated alias of :mod:`ltr.objectives.schedules` (goes away in the next release)."""

from __future__ import annotations

import warnings
from typing import Any

import ltr.objectives.schedules as _new


def __getattr__(name: str) -> Any:
    warnings.warn(
        "ltr.schedules moved to ltr.objectives.schedules; import from there "
        "(this alias goes away in the next release)",
        DeprecationWarning,
        stacklevel=2,
    )
    return getattr(_new, name)

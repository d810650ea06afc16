"""Deprecated alias of :mod:`ltr.objectives.sampling` (goes away in the next release)."""

from __future__ import annotations

import warnings
from typing import Any

import ltr.objectives.sampling as _new


def __getattr__(name: str) -> Any:
    warnings.warn(
        "ltr.sampling moved to ltr.objectives.sampling; import from there "
        "(this alias goes away in the next release)",
        DeprecationWarning,
        stacklevel=2,
    )
    return getattr(_new, name)

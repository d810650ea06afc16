"""Deprecated alias of :mod:`ltr.metrics.composite` (goes away in the next release)."""

from __future__ import annotations

import warnings
from typing import Any

import ltr.metrics.composite as _new


def __getattr__(name: str) -> Any:
    warnings.warn(
        "ltr.composite moved to ltr.metrics.composite; import from there "
        "(this alias goes away in the next release)",
        DeprecationWarning,
        stacklevel=2,
    )
    return getattr(_new, name)

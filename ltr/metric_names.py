"""Deprecated alias of :mod:`ltr.metrics.names` (goes away in the next release)."""

from __future__ import annotations

import warnings
from typing import Any

import ltr.metrics.names as _new


def __getattr__(name: str) -> Any:
    warnings.warn(
        "ltr.metric_names moved to ltr.metrics.names; import from there "
        "(this alias goes away in the next release)",
        DeprecationWarning,
        stacklevel=2,
    )
    return getattr(_new, name)

"""Deprecated alias of :mod:`ltr.metrics._rank` (goes away in the next release)."""

from __future__ import annotations

import warnings
from typing import Any

import ltr.metrics._rank as _new


def __getattr__(name: str) -> Any:
    warnings.warn(
        "ltr.rank_metrics moved to ltr.metrics._rank; import from there "
        "(this alias goes away in the next release)",
        DeprecationWarning,
        stacklevel=2,
    )
    return getattr(_new, name)

"""Deprecated alias of :mod:`ltr.evaluation.monitoring` (goes away in the next release)."""

from __future__ import annotations

import warnings
from typing import Any

import ltr.evaluation.monitoring as _new


def __getattr__(name: str) -> Any:
    warnings.warn(
        "ltr.monitoring moved to ltr.evaluation.monitoring; import from there "
        "(this alias goes away in the next release)",
        DeprecationWarning,
        stacklevel=2,
    )
    return getattr(_new, name)

"""Deprecated alias of :mod:`ltr.evaluation.trec` (goes away in the next release)."""

from __future__ import annotations

import warnings
from typing import Any

import ltr.evaluation.trec as _new


def __getattr__(name: str) -> Any:
    warnings.warn(
        "ltr.trec moved to ltr.evaluation.trec; import from there "
        "(this alias goes away in the next release)",
        DeprecationWarning,
        stacklevel=2,
    )
    return getattr(_new, name)

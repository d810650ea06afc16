"""Deprecated alias of :mod:`ltr.clicks.ips` (goes away in the next release)."""

from __future__ import annotations

import warnings
from typing import Any

import ltr.clicks.ips as _new


def __getattr__(name: str) -> Any:
    warnings.warn(
        "ltr.ips moved to ltr.clicks.ips; import from there "
        "(this alias goes away in the next release)",
        DeprecationWarning,
        stacklevel=2,
    )
    return getattr(_new, name)

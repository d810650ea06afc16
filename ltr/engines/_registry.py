"""The one registry of engines: names and their adapters.

Adapters are imported lazily (XGBoost only when chosen).  This module imports
no other part of :mod:`ltr.engines` at import time, and the adapters never
import it, so there is no import cycle.
"""

from __future__ import annotations

from importlib import import_module
from typing import TYPE_CHECKING

from ltr._compat import optional_import, passive_omp_wait

if TYPE_CHECKING:
    from ltr.engines._protocol import EngineAdapter

__all__ = ["ENGINES", "get_adapter"]

#: Engine names accepted by :func:`ltr.engines.train`, in documentation order.
ENGINES: tuple[str, ...] = ("lightgbm", "xgboost")

# engine -> (adapter module, adapter class, the engine's package)
_ADAPTERS: dict[str, tuple[str, str, str]] = {
    "lightgbm": ("ltr.engines.lightgbm", "LightGBMAdapter", "lightgbm"),
    "xgboost": ("ltr.engines.xgboost", "XGBoostAdapter", "xgboost"),
}


def get_adapter(engine: str) -> EngineAdapter:
    """Return the adapter of *engine*, importing the engine on first use.

    Parameters
    ----------
    engine : {"lightgbm", "xgboost"}
        Engine name (see :data:`ENGINES`).

    Returns
    -------
    EngineAdapter
        A new adapter instance.

    Raises
    ------
    ValueError
        For an unknown engine name.
    ImportError
        When the engine's package is not installed (the message names the extra).
    """
    if not isinstance(engine, str) or engine not in _ADAPTERS:
        raise ValueError(f"engine must be one of {list(ENGINES)}, got {engine!r}")
    module, cls, package = _ADAPTERS[engine]
    with passive_omp_wait():  # GNU OpenMP reads its wait policy when the engine loads
        optional_import(package, purpose=f"engine={engine!r}")  # the error names the extra
    return getattr(import_module(module), cls)()

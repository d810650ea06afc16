"""Machine-readable figures of the benchmark scripts, for ``run_performance.py``.

Every benchmark prints its headline figures both as human tables and as one
``RESULT <key> <value> <unit>`` line each; ``run_performance.py`` runs the
scripts, collects those lines (for the current tree and for an older
checkout) and writes ``experiments/results/performance.md`` and
``performance.json``, from which ``readme_figures.py`` rewrites the README's
benchmark table.
"""

from __future__ import annotations

import os

__all__ = ["load_average", "result"]


def result(key: str, value: float, unit: str = "x") -> None:
    """Print one figure: ``key`` (no spaces), ``value`` and ``unit`` (``x`` for a ratio)."""
    if " " in key:
        raise ValueError(f"key {key!r} must not contain spaces")
    print(f"RESULT {key} {value:.6g} {unit}", flush=True)


def load_average() -> float:
    """The one-minute load average (NaN where the OS does not report it)."""
    return os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")

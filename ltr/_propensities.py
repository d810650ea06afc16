"""Examination propensities: per-position tables, per-row values and the rule between them."""

from __future__ import annotations

from typing import Any

import numpy as np

from ltr._validation import check_1d_float

__all__ = [
    "check_propensities", "check_row_propensities", "propensity_per_row", "rows_as_read",
]


def check_propensities(propensity: Any, name: str = "propensity") -> np.ndarray:
    """Check examination propensities per position (index 0 = position 1): each in ``(0, 1]``.

    Returns
    -------
    ndarray of float64
    """
    arr = check_1d_float(propensity, name)
    bad = ~np.isfinite(arr) | (arr <= 0) | (arr > 1)
    if bad.any():
        i = int(np.flatnonzero(bad)[0])
        raise ValueError(
            f"{name} must lie in (0, 1] (an examination probability per position); "
            f"{name}[{i}] (position {i + 1}) = {float(arr[i])!r}"
        )
    return arr


def propensity_per_row(n_values: int, offsets: np.ndarray) -> bool:
    """Tell per-row propensities from a per-position table (the one rule).

    A propensity array is read **per row** (one examination propensity per
    impression, row ``i`` weighted by its own value, e.g. a cascade estimate)
    when it has exactly one value per row and the rows form more than one
    query (list); otherwise it is a **per-position table** (index 0 =
    position 1).  With a single list the two readings coincide up to the
    order: give the table ``t[position - 1] = p``.  A per-position table
    longer than any list never has exactly as many entries as the rows of
    several lists in practice; if yours does, append one more entry (entries
    beyond the deepest position are never read).

    Examples
    --------
    >>> import numpy as np
    >>> propensity_per_row(5, np.array([0, 2, 5])), propensity_per_row(5, np.array([0, 5]))
    (True, False)
    """
    return offsets.size > 2 and n_values == int(offsets[-1])


def check_row_propensities(propensity: Any, name: str, n_rows: int) -> np.ndarray:
    """Per-row examination propensities: *n_rows* values, each in ``(0, 1]``."""
    arr = check_1d_float(propensity, name)
    if arr.size != n_rows:
        raise ValueError(
            f"{name} has {arr.size} values but there are {n_rows} rows; give one examination "
            "propensity per row (impression), or a per-position table as the estimator's "
            "propensity parameter"
        )
    bad = ~np.isfinite(arr) | (arr <= 0) | (arr > 1)
    if bad.any():
        i = int(np.flatnonzero(bad)[0])
        raise ValueError(
            f"{name} must lie in (0, 1] (an examination probability per row); "
            f"{name}[{i}] = {float(arr[i])!r}"
        )
    return arr


def rows_as_read(propensity: np.ndarray, position: np.ndarray, offsets: np.ndarray) -> np.ndarray:
    """Return per-row *propensity* in the form :func:`propensity_per_row` reads per row.

    With several lists that is the array itself.  With a single list the rule
    reads an array as a per-position table, so the list's per-row values are
    put at their positions (``t[position - 1] = propensity``; the positions of
    one list are distinct, checked before).  For callers holding per-row
    values for a subset of rows they cannot choose (a cross-validation fold, a
    run's test set).

    Examples
    --------
    >>> rows_as_read(np.array([0.5, 1.0]), np.array([2, 1]), np.array([0, 2]))
    array([1. , 0.5])
    """
    if offsets.size > 2:
        return propensity
    table = np.ones(int(position.max()) if position.size else 0, dtype=np.float64)
    table[np.asarray(position, dtype=np.int64) - 1] = propensity
    return table

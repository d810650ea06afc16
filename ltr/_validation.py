"""Argument checks shared by the public API.

Every check raises ``ValueError`` or ``TypeError`` whose message names the
argument and quotes the offending value, so a user can fix the call without
reading the source.  Nothing here uses ``assert``.
"""

from __future__ import annotations

import sys
from collections.abc import Mapping, Sequence
from numbers import Integral, Real
from typing import Any

import numpy as np

__all__ = [
    "INT32_MAX",
    "INT64_MAX",
    "check_1d_float",
    "check_clicks",
    "check_cutoffs",
    "check_eval_at",
    "check_finite",
    "check_int",
    "check_label_columns",
    "check_labels",
    "check_matrix",
    "check_n_jobs",
    "check_no_inf",
    "check_objective_weights",
    "check_offsets",
    "check_positions",
    "check_progress",
    "check_real",
    "check_reduce",
    "check_same_length",
    "check_seed",
    "check_weights",
    "first_infinite_column",
    "short_repr",
]


#: Largest count an engine takes (LightGBM and XGBoost hold rounds, k and leaves as int32).
INT32_MAX = 2**31 - 1
#: Largest cut-off the numba kernels take (int64).
INT64_MAX = 2**63 - 1


def short_repr(value: Any, limit: int = 80) -> str:
    """``repr`` of *value* cut to *limit* characters (arrays can be huge)."""
    text = repr(value)
    return text if len(text) <= limit else text[: limit - 3] + "..."


def check_int(
    value: Any, name: str, *, minimum: int | None = None, maximum: int | None = None
) -> int:
    """Return *value* as ``int`` after checking its type and bounds."""
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, Integral):
        raise TypeError(
            f"{name} must be an integer, got {short_repr(value)} ({type(value).__name__})"
        )
    value = int(value)
    if minimum is not None and value < minimum:
        raise ValueError(f"{name} must be >= {minimum}, got {value!r}")
    if maximum is not None and value > maximum:
        raise ValueError(f"{name} must be <= {maximum}, got {value!r}")
    return value


def check_real(
    value: Any,
    name: str,
    *,
    minimum: float | None = None,
    maximum: float | None = None,
    exclusive_minimum: bool = False,
) -> float:
    """Return *value* as ``float`` after checking its type, finiteness and bounds."""
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, Real):
        raise TypeError(
            f"{name} must be a real number, got {short_repr(value)} ({type(value).__name__})"
        )
    value = float(value)
    if not np.isfinite(value):
        raise ValueError(f"{name} must be finite, got {value!r}")
    if minimum is not None:
        if exclusive_minimum and value <= minimum:
            raise ValueError(f"{name} must be > {minimum}, got {value!r}")
        if not exclusive_minimum and value < minimum:
            raise ValueError(f"{name} must be >= {minimum}, got {value!r}")
    if maximum is not None and value > maximum:
        raise ValueError(f"{name} must be <= {maximum}, got {value!r}")
    return value


def check_1d_float(values: Any, name: str, *, allow_empty: bool = False) -> np.ndarray:
    """Convert *values* to a contiguous 1-D ``float64`` array.

    Raises ``TypeError`` for non-numeric input and ``ValueError`` for a wrong
    shape or (unless *allow_empty*) an empty array.
    """
    if values is None:
        raise TypeError(f"{name} must be an array-like of numbers, got None")
    try:
        arr = np.asarray(values)
    except Exception as exc:  # pragma: no cover - exotic inputs
        raise TypeError(
            f"{name} must be an array-like of numbers, got {short_repr(values)}"
        ) from exc
    if arr.dtype == object or not (
        np.issubdtype(arr.dtype, np.number) or np.issubdtype(arr.dtype, np.bool_)
    ):
        raise TypeError(
            f"{name} must contain numbers, got dtype {arr.dtype} ({short_repr(values)})"
        )
    if arr.dtype.kind == "c":
        raise TypeError(
            f"{name} must contain real numbers, got complex values ({short_repr(values)}); "
            "pass the real part explicitly (values.real) if that is what you mean"
        )
    if arr.ndim != 1:
        raise ValueError(f"{name} must be 1-D, got shape {arr.shape}")
    if arr.size == 0 and not allow_empty:
        raise ValueError(f"{name} is empty: at least one row is required")
    return np.ascontiguousarray(arr, dtype=np.float64)


def check_finite(arr: np.ndarray, name: str) -> None:
    """Raise ``ValueError`` naming the first NaN/inf entry of *arr*."""
    with np.errstate(over="ignore", invalid="ignore"):
        if arr.dtype.kind == "f" and np.isfinite(np.add.reduce(arr, axis=None)):
            return  # a finite sum means no NaN/inf (one pass, no temporary array)
    bad = ~np.isfinite(arr)
    if bad.any():
        idx = int(np.flatnonzero(bad)[0])
        raise ValueError(
            f"{name} must be finite; found {int(bad.sum())} NaN/inf value(s), "
            f"first at index {idx}: {arr[idx].item()!r}"
        )


def check_same_length(n: int, arr: np.ndarray, name: str, reference: str) -> None:
    """Raise ``ValueError`` if ``len(arr) != n``."""
    if len(arr) != n:
        raise ValueError(f"{name} has {len(arr)} rows but {reference} has {n}; they must match")


# ---------------------------------------------------------------------------
# one rule per kind of input: matrices, labels, offsets, weights, cut-offs, seeds
# ---------------------------------------------------------------------------


def is_sparse(X: Any) -> bool:
    """Return whether *X* is a scipy sparse matrix (duck-typed: ``tocsr`` and ``nnz``)."""
    return hasattr(X, "tocsr") and hasattr(X, "nnz")


def _column_label(j: int, feature_names: Any) -> str:
    """``column 3`` or ``column 3 ('price')`` when *feature_names* names the columns."""
    name = None
    if feature_names is not None and not isinstance(feature_names, (str, bytes)):
        try:
            if 0 <= j < len(feature_names):
                name = feature_names[j]
        except TypeError:  # pragma: no cover - an unsized iterable
            name = None
    return f"column {j}" if name is None else f"column {j} ({str(name)!r})"


def first_infinite_column(X: Any) -> tuple[int, int] | None:
    """``(row, column)`` of the first +/-inf of a float matrix (ndarray or CSR), else None.

    NaN is not reported (it means "missing" to both engines).  One pass over
    the data: column sums are finite unless a column holds NaN/inf (or sums
    past the float range); only such columns are scanned again.
    """
    if is_sparse(X):
        data = X.data
        if data.dtype.kind != "f" or not np.isinf(data).any():
            return None
        pos = int(np.flatnonzero(np.isinf(data))[0])
        row = int(np.searchsorted(X.indptr, pos, side="right") - 1)
        return row, int(X.indices[pos])
    if X.dtype.kind != "f":
        return None
    with np.errstate(over="ignore", invalid="ignore"):
        sums = np.add.reduce(X, axis=0)
    for j in np.flatnonzero(~np.isfinite(sums)):
        col = X[:, j]
        bad = np.isinf(col)
        if bad.any():
            return int(np.flatnonzero(bad)[0]), int(j)
    return None


def check_no_inf(X: Any, name: str, feature_names: Any = None) -> None:
    """Apply the one NaN/inf feature rule: NaN is a missing value, +/-inf is an error.

    The message names the row and the column (index, and name when known).
    """
    hit = first_infinite_column(X)
    if hit is None:
        return
    row, j = hit
    value = X[row, j]
    raise ValueError(
        f"{name} has an infinite value {float(value)!r} in {_column_label(j, feature_names)}, "
        f"row {row}: features must be finite or NaN (NaN means missing to LightGBM and "
        "XGBoost); replace inf with a large finite value or NaN"
    )


def check_matrix(X: Any, name: str, feature_names: Any = None) -> Any:
    """Return a 2-D numeric matrix (ndarray, or scipy sparse kept as CSR).

    NaN is allowed (missing); +/-inf raises ``ValueError`` naming the column
    (its index, and its name from *feature_names* or a DataFrame's columns).
    """
    if X is None:
        raise TypeError(f"{name} must be a 2-D array of features, got None")
    if is_sparse(X):
        X = X.tocsr()
        if X.ndim != 2:
            raise ValueError(f"{name} must be 2-D, got shape {X.shape}")
        check_no_inf(X, name, feature_names)
        return X
    if hasattr(X, "to_numpy") and hasattr(X, "columns"):  # pandas DataFrame
        if feature_names is None:
            feature_names = [str(c) for c in X.columns]
        X = X.to_numpy()
    try:
        arr = np.asarray(X)
    except Exception as exc:  # pragma: no cover - exotic inputs
        raise TypeError(f"{name} must be a 2-D array of numbers, got {short_repr(X)}") from exc
    if arr.dtype == object or not (np.issubdtype(arr.dtype, np.number) or arr.dtype == np.bool_):
        raise TypeError(f"{name} must contain numbers, got dtype {arr.dtype}")
    if arr.ndim != 2:
        raise ValueError(f"{name} must be 2-D (n_rows, n_features), got shape {arr.shape}")
    if arr.shape[0] == 0 or arr.shape[1] == 0:
        raise ValueError(f"{name} is empty: got shape {arr.shape}")
    if arr.dtype not in (np.float32, np.float64):
        arr = arr.astype(np.float64)
    check_no_inf(arr, name, feature_names)
    return arr


def check_labels(
    y: Any, name: str, n_rows: int | None = None, *, integer: bool = False
) -> np.ndarray:
    """1-D float64 graded relevance: finite, >= 0 (integral if *integer*), *n_rows* long.

    Parameters
    ----------
    y : array-like
        The labels.
    name : str
        Argument name used in error messages.
    n_rows : int, optional
        Required length (the rows of ``X``).
    integer : bool, default=False
        Require integer grades (the engines' native objectives).

    Returns
    -------
    ndarray of float64
    """
    arr = check_1d_float(y, name)
    if n_rows is not None and len(arr) != n_rows:
        raise ValueError(f"{name} has {len(arr)} rows but X has {n_rows}; they must match")
    bad = ~np.isfinite(arr)
    if bad.any():
        i = int(np.flatnonzero(bad)[0])
        raise ValueError(f"{name} must be finite; {name}[{i}] = {float(arr[i])!r}")
    if (arr < 0).any():
        i = int(np.flatnonzero(arr < 0)[0])
        raise ValueError(f"{name} must be >= 0 (graded relevance); {name}[{i}] = {float(arr[i])!r}")
    if integer and (arr != np.floor(arr)).any():
        i = int(np.flatnonzero(arr != np.floor(arr))[0])
        raise ValueError(
            f"{name} must hold integer grades for the engine's native objective; "
            f"{name}[{i}] = {float(arr[i])!r} (use a LambdaRankObjective for fractional grades)"
        )
    return arr


def check_offsets(offsets: Any, name: str, n_rows: int) -> np.ndarray:
    """int64 query offsets ``[0, ..., n_rows]``, strictly increasing (non-empty queries).

    The one offsets rule: every public entry point that accepts offsets
    (training, metrics' fast path, objectives) applies it.
    """
    if offsets is None:
        raise TypeError(f"{name} must be int64 query offsets of length n_queries + 1, got None")
    arr = np.asarray(offsets)
    if arr.ndim != 1:
        raise ValueError(f"{name} must be 1-D, got shape {arr.shape}")
    if arr.dtype == object or not (
        np.issubdtype(arr.dtype, np.integer) or np.issubdtype(arr.dtype, np.floating)
    ):
        raise TypeError(f"{name} must contain integers, got dtype {arr.dtype}")
    if np.issubdtype(arr.dtype, np.floating) and (
        not np.all(np.isfinite(arr)) or np.any(arr != np.round(arr))
    ):
        raise TypeError(f"{name} must contain integers, got {short_repr(arr)}")
    arr = np.ascontiguousarray(arr, dtype=np.int64)
    if len(arr) < 2:
        raise ValueError(f"{name} must have at least 2 entries (one query), got {short_repr(arr)}")
    if arr[0] != 0:
        raise ValueError(f"{name}[0] must be 0, got {int(arr[0])!r}")
    if arr[-1] != n_rows:
        raise ValueError(
            f"{name}[-1] = {int(arr[-1])} but there are {n_rows} rows: offsets are inconsistent "
            "with the rows (queries must be contiguous and cover every row)"
        )
    steps = np.diff(arr)
    if (steps <= 0).any():
        i = int(np.flatnonzero(steps <= 0)[0])
        raise ValueError(
            f"{name} must be strictly increasing (contiguous, non-empty queries); "
            f"{name}[{i + 1}] = {int(arr[i + 1])} <= {name}[{i}] = {int(arr[i])}"
        )
    return arr


def check_positions(position: Any, name: str, offsets: np.ndarray) -> np.ndarray:
    """Display positions (1 = top) as int64: within each query a permutation of ``1..n_q``.

    The one position rule (click simulation, propensity estimation, IPS
    metrics, unbiased objectives).  *offsets* must already be checked.  Missing,
    zero, negative, non-integer, repeated or gapped positions raise
    ``ValueError`` naming the first bad row.

    Parameters
    ----------
    position : array-like of shape (n_rows,)
        Displayed rank of each row inside its query, 1 = top.
    name : str
        Argument name used in error messages.
    offsets : ndarray of int64
        Checked query offsets.

    Returns
    -------
    ndarray of int64
    """
    arr = check_1d_float(position, name)
    n_rows = int(offsets[-1])
    if len(arr) != n_rows:
        raise ValueError(
            f"{name} has {len(arr)} rows but there are {n_rows}; give one display position per row"
        )
    bad = ~np.isfinite(arr)
    if bad.any():
        i = int(np.flatnonzero(bad)[0])
        raise ValueError(
            f"{name} must not be missing; {name}[{i}] = {float(arr[i])!r} "
            "(give every row its display rank, 1 = top)"
        )
    bad = arr != np.floor(arr)
    if bad.any():
        i = int(np.flatnonzero(bad)[0])
        raise ValueError(f"{name} must hold integer display ranks; {name}[{i}] = {float(arr[i])!r}")
    if (arr < 1).any():
        i = int(np.flatnonzero(arr < 1)[0])
        raise ValueError(
            f"{name} must be display ranks starting at 1 (1 = top); {name}[{i}] = {int(arr[i])}"
        )
    pos = arr.astype(np.int64)
    sizes = np.diff(offsets)
    row_size = np.repeat(sizes, sizes)
    over = pos > row_size
    if over.any():
        i = int(np.flatnonzero(over)[0])
        raise ValueError(
            f"{name} must run 1..n within each query (consecutive display ranks); "
            f"{name}[{i}] = {int(pos[i])} but its query has {int(row_size[i])} rows"
        )
    slot = np.repeat(offsets[:-1], sizes) + pos - 1
    counts = np.bincount(slot, minlength=n_rows)
    if (counts != 1).any():
        # n ranks over n rows: a skipped rank implies a repeated one; name the repeat.
        dup = np.flatnonzero(counts[slot] > 1)
        first = int(dup[0])
        second = int(dup[slot[dup] == slot[first]][1])
        q = int(np.searchsorted(offsets, first, side="right") - 1)
        raise ValueError(
            f"{name} must be a permutation of 1..n within each query (each display rank once); "
            f"query {q} (rows {int(offsets[q])}..{int(offsets[q + 1]) - 1}) gives position "
            f"{int(pos[first])} to rows {first} and {second}"
        )
    return pos


def check_clicks(
    clicks: Any, name: str, n_rows: int, *, counts: bool = False
) -> np.ndarray:
    """Per-row clicks as float64: 0/1, or non-negative integer counts where *counts*.

    Parameters
    ----------
    clicks : array-like of shape (n_rows,)
        Clicks (booleans allowed).
    name : str
        Argument name used in error messages.
    n_rows : int
        Required length.
    counts : bool, default=False
        Accept click counts (integers >= 0) instead of 0/1.

    Returns
    -------
    ndarray of float64
    """
    arr = check_1d_float(clicks, name)
    if len(arr) != n_rows:
        raise ValueError(f"{name} has {len(arr)} rows but there are {n_rows}; give one per row")
    if counts:
        bad = ~np.isfinite(arr) | (arr < 0) | (arr != np.floor(arr))
        what = "click counts (integers >= 0)"
    else:
        bad = (arr != 0) & (arr != 1)
        what = "clicks 0 or 1"
    if bad.any():
        i = int(np.flatnonzero(bad)[0])
        raise ValueError(f"{name} must hold {what}; {name}[{i}] = {float(arr[i])!r}")
    return arr


def check_weights(w: Any, name: str, n_rows: int) -> np.ndarray:
    """Per-row weights: finite, >= 0, *n_rows* long, and not all zero."""
    arr = check_1d_float(w, name)
    if len(arr) != n_rows:
        raise ValueError(
            f"{name} has {len(arr)} rows but X has {n_rows}; give one weight per row"
        )
    bad = ~np.isfinite(arr) | (arr < 0)
    if bad.any():
        i = int(np.flatnonzero(bad)[0])
        raise ValueError(f"{name} must be finite and >= 0; {name}[{i}] = {float(arr[i])!r}")
    if not (arr > 0).any():
        raise ValueError(f"{name}: all weights are zero; at least one must be > 0")
    return arr


def check_label_columns(labels: Any, name: str, n_rows: int) -> dict[str, np.ndarray]:
    """Return the mapping objective -> label column, each checked by :func:`check_labels`."""
    if not isinstance(labels, Mapping) or len(labels) == 0:
        raise TypeError(
            f"{name} must be a non-empty mapping objective -> label column, "
            f"got {short_repr(labels)}"
        )
    out: dict[str, np.ndarray] = {}
    for key, column in labels.items():
        if not isinstance(key, str):
            raise TypeError(f"{name} keys must be objective names (str), got {key!r}")
        out[key] = check_labels(column, f"{name}[{key!r}]", n_rows)
    return out


def check_eval_at(eval_at: Any, name: str = "eval_at") -> tuple[int, ...]:
    """Cut-offs recorded by the engines: :func:`check_cutoffs` without None, as a tuple.

    The engines take 32-bit cut-offs; the first entry stays first (the
    estimator's ``score`` uses it).
    """
    if eval_at is None:
        raise TypeError(
            f"{name} must be a cut-off (int >= 1) or a non-empty list of them, got None"
        )
    return tuple(check_cutoffs(eval_at, name, maximum=INT32_MAX))  # type: ignore[arg-type]


def check_cutoffs(k: Any, name: str = "k", *, maximum: int = INT64_MAX) -> list[int | None]:
    """Check cut-offs by the one rule: an int >= 1, a non-empty list of distinct ones, or None.

    ``None`` (the whole list) becomes ``[None]``; the order is kept.  A
    cut-off listed twice is an error (each one names a result column).

    >>> check_cutoffs(10), check_cutoffs([1, 5]), check_cutoffs(None)
    ([10], [1, 5], [None])
    """
    if k is None:
        return [None]
    if isinstance(k, (list, tuple, np.ndarray)) or (
        isinstance(k, Sequence) and not isinstance(k, (str, bytes))
    ):
        if len(k) == 0:
            raise ValueError(f"{name} must not be an empty list; give cut-offs like [5, 10]")
        ks = [check_int(v, f"{name}[{i}]", minimum=1, maximum=maximum) for i, v in enumerate(k)]
        repeated = sorted({v for v in ks if ks.count(v) > 1})
        if repeated:
            raise ValueError(
                f"{name} lists cut-off {repeated[0]} more than once, got {ks!r}; "
                "give each cut-off once"
            )
        return list(ks)
    return [check_int(k, name, minimum=1, maximum=maximum)]


def check_reduce(reduce: Any) -> None:
    """``reduce`` of the metric functions: ``"mean"`` (one float) or None (one value per query)."""
    if reduce not in ("mean", None):
        raise ValueError(
            f"reduce must be 'mean' (one float) or None (one value per query or list), "
            f"got {reduce!r}"
        )


def check_seed(random_state: Any, name: str = "random_state") -> int | None:
    """Apply the one ``random_state`` -> seed rule: an int >= 0, or None for None.

    A ``numpy.random.RandomState`` or ``Generator`` is advanced by one draw in
    ``[0, 2**31 - 1)``, so the same generator state gives the same seed.
    """
    if random_state is None:
        return None
    if isinstance(random_state, np.random.Generator):
        return int(random_state.integers(0, 2**31 - 1))
    if isinstance(random_state, np.random.RandomState):
        return int(random_state.randint(0, 2**31 - 1))
    if isinstance(random_state, (bool, np.bool_)) or not isinstance(random_state, Integral):
        raise TypeError(
            f"{name} must be None, an int >= 0, or a numpy Generator/RandomState, "
            f"got {short_repr(random_state)}"
        )
    if random_state < 0:
        raise ValueError(f"{name} must be >= 0, got {int(random_state)!r}")
    return int(random_state)


def check_objective_weights(weights: Any, name: str = "objectives") -> dict[str, float]:
    """Composite objective weights: non-empty ``{name: finite weight >= 0}``, not all zero."""
    if not isinstance(weights, Mapping) or len(weights) == 0:
        raise ValueError(
            f"{name} must map at least one label name to a weight, got {short_repr(weights)}"
        )
    out: dict[str, float] = {}
    for key, w in weights.items():
        if not isinstance(key, str):
            raise TypeError(f"{name} keys must be label names (str), got {key!r}")
        if (
            isinstance(w, (bool, np.bool_))
            or not isinstance(w, Real)
            or not np.isfinite(float(w))
            or w < 0
        ):
            raise ValueError(f"{name}[{key!r}] must be a finite weight >= 0, got {w!r}")
        out[key] = float(w)
    if sum(out.values()) <= 0:
        raise ValueError(f"{name} weights must not all be zero, got {dict(weights)!r}")
    return out


def check_n_jobs(n_jobs: Any, name: str = "n_jobs") -> int | None:
    """Threads: None (the library's default), -1 (all cores) or a positive count; never 0."""
    if n_jobs is None:
        return None
    n = check_int(n_jobs, name)
    if n == 0:
        raise ValueError(
            f"{name} must be a positive number of threads or -1 (all) or None, got 0"
        )
    return n


def check_progress(progress: Any, name: str = "progress") -> bool:
    """Whether to show a progress bar: True, False, or None for "only on a terminal"."""
    if progress is not None and not isinstance(progress, (bool, np.bool_)):
        raise TypeError(f"{name} must be a bool or None, got {short_repr(progress)}")
    return bool(progress) if progress is not None else sys.stderr.isatty()

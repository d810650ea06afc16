"""Query groups: one representation, ``int64`` offsets of length ``n_queries + 1``.

Rows are sorted by query; query ``q`` owns rows ``offsets[q]:offsets[q + 1]``.
Users pass either ``qid`` (one id per row, LightGBM/XGBoost ``qid`` style) or
``group`` (query sizes, LightGBM ``group`` style); :func:`resolve_groups`
converts them once and every other module works on offsets.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from ltr._validation import check_offsets, short_repr

__all__ = [
    "SORT_HINT",
    "QueryGroups",
    "find_split_query",
    "group_sizes",
    "offsets_from_group",
    "offsets_from_qid",
    "qid_from_offsets",
    "resolve_groups",
    "resolve_offsets",
    "take_rows",
]


# From this many rows, integer qid are scanned by a threaded kernel (numpy below:
# as fast there, and nothing to compile).  Kept equal to the kernel's own threshold.
_SCAN_MIN_ROWS = 200_000

#: The advice of APIs that take ``sort=`` (pass it as ``sort_hint``).
SORT_HINT = "or pass sort=True to stable-sort them (the permutation is returned)"


@dataclass(frozen=True)
class QueryGroups:
    """Result of :func:`resolve_groups`.

    Attributes
    ----------
    offsets : ndarray of int64, shape (n_queries + 1,)
        Row boundaries of each query in the (possibly re-ordered) rows.
    order : ndarray of int64 or None
        When ``sort=True`` re-ordered the rows, ``order[i]`` is the input row
        placed at position ``i``: apply it as ``X[order]``.  ``None`` when the
        input was already contiguous.
    query_ids : ndarray
        The id of each query, in offset order (``arange`` for ``group`` input).
    """

    offsets: np.ndarray
    order: np.ndarray | None
    query_ids: np.ndarray

    @property
    def n_queries(self) -> int:
        """Number of queries."""
        return len(self.offsets) - 1

    @property
    def sizes(self) -> np.ndarray:
        """Rows per query."""
        return np.diff(self.offsets)

    def unsort(self, values: np.ndarray) -> np.ndarray:
        """Map per-row *values* computed in sorted order back to input order."""
        if self.order is None:
            return values
        out = np.empty_like(values)
        out[self.order] = values
        return out


def group_sizes(offsets: np.ndarray) -> np.ndarray:
    """Query sizes from offsets."""
    return np.diff(offsets)


def qid_from_offsets(offsets: np.ndarray) -> np.ndarray:
    """One integer query id per row (``0..n_queries-1``) from offsets."""
    return np.repeat(np.arange(len(offsets) - 1, dtype=np.int64), np.diff(offsets))


def offsets_from_group(group: Any, n_rows: int | None = None) -> np.ndarray:
    """Offsets from query sizes (LightGBM ``group``).

    Parameters
    ----------
    group : array-like of int, shape (n_queries,)
        Number of rows of each query, in row order.  Sizes must be >= 1.
    n_rows : int, optional
        When given, the sizes must sum to it.
    """
    sizes = np.asarray(group)
    if sizes.ndim != 1:
        raise ValueError(f"group must be a 1-D array of query sizes, got shape {sizes.shape}")
    if sizes.size == 0:
        raise ValueError("group is empty: at least one query is required")
    if not np.issubdtype(sizes.dtype, np.number):
        raise TypeError(f"group must contain integer sizes, got dtype {sizes.dtype}")
    if np.issubdtype(sizes.dtype, np.floating) and (
        not np.all(np.isfinite(sizes)) or np.any(sizes != np.round(sizes))
    ):
        raise ValueError(f"group must contain whole numbers, got {short_repr(sizes)}")
    sizes = sizes.astype(np.int64)
    if np.any(sizes < 1):
        bad = int(np.flatnonzero(sizes < 1)[0])
        raise ValueError(
            f"group sizes must be >= 1; group[{bad}] = {int(sizes[bad])} (drop empty queries)"
        )
    offsets = np.zeros(len(sizes) + 1, dtype=np.int64)
    np.cumsum(sizes, out=offsets[1:])
    if n_rows is not None and offsets[-1] != n_rows:
        raise ValueError(
            f"group sizes sum to {int(offsets[-1])} but there are {n_rows} rows; "
            "the sizes of all queries must add up to the number of rows"
        )
    return offsets


def _as_qid_array(qid: Any) -> np.ndarray:
    arr = np.asarray(qid)
    if arr.ndim != 1:
        raise ValueError(f"qid must be 1-D (one query id per row), got shape {arr.shape}")
    if arr.size == 0:
        raise ValueError("qid is empty: at least one row is required")
    if arr.dtype.kind == "f" and not np.all(np.isfinite(arr)):
        bad = int(np.flatnonzero(~np.isfinite(arr))[0])
        raise ValueError(f"qid must not contain NaN/inf; qid[{bad}] = {arr[bad].item()!r}")
    if arr.dtype == object:
        # Mixed or string ids: compare as strings so np.unique can sort them.
        try:
            arr = arr.astype(str)
        except Exception as exc:  # pragma: no cover - exotic objects
            raise TypeError(f"qid values must be hashable scalars, got {short_repr(qid)}") from exc
    return arr


def _runs(arr: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Start row and id of each run of equal consecutive ids."""
    change = np.empty(arr.size, dtype=bool)
    change[0] = True
    change[1:] = arr[1:] != arr[:-1]
    starts = np.flatnonzero(change)
    return starts, arr[starts]


def _first_split(starts: np.ndarray, run_ids: np.ndarray) -> tuple[Any, int, int]:
    """(id, first row, later row) of the first query whose rows come in two runs."""
    seen: dict[Any, int] = {}
    for pos, value in zip(starts, run_ids):
        key = value.item() if hasattr(value, "item") else value
        if key in seen:
            return key, seen[key], int(pos)
        seen[key] = int(pos)
    raise ValueError("qid is contiguous")  # pragma: no cover - callers check first


def find_split_query(qid: Any) -> tuple[Any, int, int] | None:
    """Where a query's rows are not contiguous, else None.

    Returns
    -------
    tuple or None
        ``(query id, first row, row where it appears again)`` for the first
        such query.
    """
    starts, run_ids = _runs(_as_qid_array(qid))
    if len(np.unique(run_ids)) == len(run_ids):
        return None
    return _first_split(starts, run_ids)


def _where(row: int, line_of: Callable[[int], int] | None) -> str:
    return f"row {row}" if line_of is None else f"row {row} (line {line_of(row)})"


def offsets_from_qid(
    qid: Any,
    *,
    sort: bool = False,
    sort_hint: str | None = SORT_HINT,
    source: str | None = None,
    line_of: Callable[[int], int] | None = None,
) -> QueryGroups:
    """Offsets from one query id per row.

    Parameters
    ----------
    qid : array-like, shape (n_rows,)
        Query id of each row (int, str, ...).  Rows of one query must be
        contiguous unless ``sort=True``.
    sort : bool, default=False
        Stable-sort rows by first appearance of their query so each query
        becomes contiguous; the permutation is returned in ``order``.
    sort_hint : str or None, default=SORT_HINT
        Extra advice appended to the non-contiguous error after "sort your
        rows by qid (stable) first"; callers without a ``sort=`` argument pass
        ``None`` so the message names only fixes their user has.
    source : str, optional
        File or object the ids come from, named at the start of the error.
    line_of : callable, optional
        ``line_of(row)`` -> line number in *source*, added to the rows named.

    Returns
    -------
    QueryGroups
    """
    arr = _as_qid_array(qid)
    if arr.size >= _SCAN_MIN_ROWS and arr.dtype.kind in "iu":
        # Large integer ids: one threaded scan finds the runs and whether the
        # ids are sorted (then every query is contiguous); else the general path.
        from ltr.kernels._scan import sorted_run_starts

        sorted_starts, is_sorted = sorted_run_starts(np.ascontiguousarray(arr))
        if is_sorted:
            offsets = np.empty(sorted_starts.size + 1, dtype=np.int64)
            offsets[:-1] = sorted_starts
            offsets[-1] = arr.size
            return QueryGroups(offsets=offsets, order=None, query_ids=arr[sorted_starts])
    starts, run_ids = _runs(arr)
    if len(np.unique(run_ids)) == len(run_ids):
        offsets = np.append(starts, arr.size).astype(np.int64)
        return QueryGroups(offsets=offsets, order=None, query_ids=run_ids)
    if not sort:
        key, first, again = _first_split(starts, run_ids)
        prefix = "" if source is None else f"{source}: "
        hint = "" if not sort_hint else f", {sort_hint}"
        raise ValueError(
            f"{prefix}qid is not contiguous: query {key!r} appears at {_where(first, line_of)} "
            f"and again at {_where(again, line_of)} after other queries. Rows of each query "
            f"must be contiguous: sort your rows by qid (stable) first{hint}."
        )
    # Stable sort by order of first appearance.
    uniq, first_idx, inverse = np.unique(arr, return_index=True, return_inverse=True)
    rank_of_unique = np.empty(len(uniq), dtype=np.int64)
    rank_of_unique[np.argsort(first_idx, kind="stable")] = np.arange(len(uniq))
    key = rank_of_unique[inverse.ravel()]
    order = np.argsort(key, kind="stable").astype(np.int64)
    counts = np.bincount(key, minlength=len(uniq))
    offsets = np.zeros(len(uniq) + 1, dtype=np.int64)
    np.cumsum(counts, out=offsets[1:])
    query_ids = uniq[np.argsort(first_idx, kind="stable")]
    return QueryGroups(offsets=offsets, order=order, query_ids=query_ids)


def resolve_groups(
    n_rows: int,
    *,
    qid: Any = None,
    group: Any = None,
    sort: bool = False,
    sort_hint: str | None = None,
    source: str | None = None,
    line_of: Callable[[int], int] | None = None,
) -> QueryGroups:
    """Turn exactly one of ``qid`` / ``group`` into :class:`QueryGroups`.

    Parameters
    ----------
    n_rows : int
        Number of rows the groups must cover.
    qid : array-like of shape (n_rows,), optional
        Query id per row.
    group : array-like of shape (n_queries,), optional
        Query sizes in row order.
    sort : bool, default=False
        With ``qid``, allow non-contiguous queries by stable-sorting rows.
    sort_hint : str or None, default=None
        Advice added to the non-contiguous error; ``None`` says only "sort
        your rows by qid (stable) first".  APIs with a ``sort=`` argument pass
        :data:`SORT_HINT`.
    source, line_of
        As in :func:`offsets_from_qid`: the file named in the error and
        ``row -> line`` of that file.

    Raises
    ------
    ValueError
        If both or neither of ``qid``/``group`` are given, lengths disagree,
        or ``qid`` is not contiguous and ``sort`` is False.
    """
    if qid is not None and group is not None:
        raise ValueError("pass either qid (one id per row) or group (query sizes), not both")
    if qid is None and group is None:
        raise ValueError(
            "query information is missing: pass qid (one query id per row) or group (query sizes)"
        )
    if group is not None:
        offsets = offsets_from_group(group, n_rows)
        return QueryGroups(offsets=offsets, order=None, query_ids=np.arange(len(offsets) - 1))
    arr = np.asarray(qid)
    if arr.ndim == 1 and len(arr) != n_rows:
        raise ValueError(f"qid has {len(arr)} entries but there are {n_rows} rows; they must match")
    return offsets_from_qid(qid, sort=sort, sort_hint=sort_hint, source=source, line_of=line_of)


def take_rows(a: Any, order: np.ndarray | None) -> Any:
    """Rows ``order`` of *a* (a DataFrame by position, an array or sparse matrix by index).

    ``None`` for *a* or *order* returns *a* unchanged (no reordering needed).

    >>> take_rows(np.array([10, 20, 30]), np.array([2, 0, 1])).tolist()
    [30, 10, 20]
    """
    if a is None or order is None:
        return a
    if hasattr(a, "iloc"):
        return a.iloc[order]
    return a[order]


def resolve_offsets(n_rows: int, *, qid: Any = None, group: Any = None,
                    offsets: Any = None) -> np.ndarray:
    """Query offsets from exactly one of ``qid``, ``group`` or ``offsets`` (the one rule).

    ``offsets`` (``int64``, starting at 0, ending at *n_rows*) is checked as
    given; ``qid``/``group`` go through :func:`resolve_groups` (contiguous
    queries).

    Examples
    --------
    >>> resolve_offsets(5, group=[2, 3]).tolist()
    [0, 2, 5]
    """
    if offsets is not None:
        if qid is not None or group is not None:
            raise ValueError("pass only one of qid, group or offsets")
        return check_offsets(offsets, "offsets", n_rows)
    return resolve_groups(n_rows, qid=qid, group=group).offsets

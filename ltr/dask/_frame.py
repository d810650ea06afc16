"""Input checks and the shuffle that keeps every query whole in one partition.

:func:`shuffle_by_query` is the one way rows reach training or evaluation on
Dask: it refuses bad input (a qid column whose dtype differs between
partitions, missing query ids, non-finite or negative labels and weights, no
rows), moves rows so each query sits whole in one partition (hash
partitioning on the query id), sorts each partition by query and, within a
query, by the rows' original order (so the order, and therefore the model,
does not depend on how the shuffle happened to deliver the rows), drops
empty partitions and returns a :class:`QueryLayout`.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from ltr._compat import import_dask
from ltr._validation import check_int, short_repr

__all__ = ["QueryLayout", "check_frame", "frame_digest", "shuffle_by_query"]

_ROW = "__ltr_row__"
#: bits of the within-partition row number in the row key (2**40 rows per partition)
_ROW_BITS = 40


@dataclass(frozen=True)
class QueryLayout:
    """Where the queries of a shuffled frame sit.

    Attributes
    ----------
    n_rows, n_queries : int
        Totals over the partitions.
    rows, queries : ndarray of int64
        Per partition (empty partitions already dropped).
    max_query_rows : int
        The longest query.
    max_query_id : Any
        Its query id.
    column_max : dict of str to float
        Largest value of each checked numeric column (labels, weights).
    column_integer : dict of str to bool
        Whether each checked numeric column holds only whole numbers.
    """

    n_rows: int
    n_queries: int
    rows: np.ndarray
    queries: np.ndarray
    max_query_rows: int
    max_query_id: Any
    column_max: dict[str, float] = field(default_factory=dict)
    column_integer: dict[str, bool] = field(default_factory=dict)


def check_frame(data: Any, columns: Mapping[str, Any]) -> list[str]:
    """Check that *data* is a Dask DataFrame holding the named columns; return their names.

    Parameters
    ----------
    data : Any
        Should be a ``dask.dataframe.DataFrame``.
    columns : mapping of str to str or sequence of str
        Argument name -> the column(s) it names (for messages).

    Returns
    -------
    list of str
    """
    dd = import_dask().dataframe
    if not isinstance(data, dd.DataFrame):
        raise TypeError(f"data must be a dask.dataframe.DataFrame, got {short_repr(data)}")
    have = list(data.columns)
    out: list[str] = []
    for arg, value in columns.items():
        names = [value] if isinstance(value, str) else list(value)
        for name in names:
            if not isinstance(name, str):
                raise TypeError(f"{arg} must name columns with str, got {short_repr(name)}")
            if name not in have:
                raise ValueError(
                    f"{arg}={name!r} is not a column of data (columns: {short_repr(have)})"
                )
            out.append(name)
    return out


# ----------------------------------------------------------------------------
# per-partition tasks (module level: they travel to the workers by reference)
# ----------------------------------------------------------------------------


def _dtype_part(part: pd.DataFrame, qid: str, partition_info: Any = None) -> pd.DataFrame:
    number = -1 if partition_info is None else int(partition_info["number"])
    return pd.DataFrame({"partition": [number], "rows": [len(part)],
                         "dtype": [str(part[qid].dtype)]})


def _row_key_part(part: pd.DataFrame, partition_info: Any = None) -> pd.DataFrame:
    number = 0 if partition_info is None else int(partition_info["number"])
    out = part.copy()
    out[_ROW] = (np.int64(number) << np.int64(_ROW_BITS)) + np.arange(len(part), dtype=np.int64)
    return out


def _sort_part(part: pd.DataFrame, qid: str) -> pd.DataFrame:
    return part.sort_values([qid, _ROW], kind="stable").drop(columns=_ROW)


def _stats_part(part: pd.DataFrame, qid: str, checked: Sequence[str]) -> pd.DataFrame:
    q = part[qid].to_numpy()
    n = len(q)
    row: dict[str, Any] = {"rows": n, "queries": 0, "distinct": 0, "max_rows": 0,
                           "max_qid": None, "qid_null": False, "bad_column": "",
                           "bad_value": 0.0}
    if n:
        change = np.flatnonzero(q[1:] != q[:-1]) + 1
        starts = np.concatenate(([0], change))
        sizes = np.diff(np.concatenate((starts, [n])))
        longest = int(np.argmax(sizes))
        row.update(queries=len(starts), distinct=len(pd.unique(q)),
                   max_rows=int(sizes[longest]), max_qid=q[starts[longest]],
                   qid_null=bool(pd.isna(q).any()))
    for col in checked:
        y = pd.to_numeric(part[col], errors="coerce").to_numpy(dtype=np.float64)
        bad = ~np.isfinite(y) | (y < 0)
        if bad.any() and not row["bad_column"]:
            row["bad_column"] = col
            row["bad_value"] = float(y[int(np.flatnonzero(bad)[0])])
        good = y[~bad]
        row[f"max:{col}"] = float(good.max()) if good.size else 0.0
        row[f"int:{col}"] = bool(np.all(good == np.floor(good)))
    return pd.DataFrame({key: [value] for key, value in row.items()})


def _runs_part(part: pd.DataFrame, qid: str, partition_info: Any = None) -> pd.DataFrame:
    """One row per run of equal query ids, in row order: ``(partition, qid, rows, sorted)``."""
    number = -1 if partition_info is None else int(partition_info["number"])
    q = part[qid].to_numpy()
    if len(q) == 0:
        return pd.DataFrame({"partition": np.empty(0, np.int64), qid: q,
                             "rows": np.empty(0, np.int64), "sorted": np.empty(0, bool)})
    starts = np.concatenate(([0], np.flatnonzero(q[1:] != q[:-1]) + 1))
    sizes = np.diff(np.concatenate((starts, [len(q)])))
    ordered = bool(part[qid].is_monotonic_increasing)
    return pd.DataFrame({"partition": np.full(len(starts), number, np.int64), qid: q[starts],
                         "rows": sizes.astype(np.int64),
                         "sorted": np.full(len(starts), ordered)})


def _grouped_plan(runs: pd.DataFrame, qid: str, n_parts: int
                  ) -> list[tuple[int, int, list[tuple[int, int]], bool]] | None:
    """Plan for input whose queries are already contiguous, else None.

    Input is *grouped* when the rows of every query are consecutive in the
    frame's row order (partition after partition): each query is then one
    run, except a query cut by a partition boundary, which continues at the
    head of the next partition(s).  The plan moves such heads to the
    partition where their query starts and nothing else: one entry per output
    partition, ``(partition, skip, heads, sorted)`` with ``skip`` leading rows
    of ``partition`` moved away and ``heads`` the ``(partition, rows)``
    pieces appended to it.
    """
    if len(runs) == 0 or runs[qid].isna().any():
        return None
    part = runs["partition"].to_numpy()
    q = runs[qid].to_numpy()
    size = runs["rows"].to_numpy()
    first = np.r_[True, part[1:] != part[:-1]]
    joins = first & np.r_[False, q[1:] == q[:-1]]  # a partition's first run continues a query
    if pd.Series(q[~joins]).duplicated().any():
        return None
    total = np.bincount(part, weights=size, minlength=n_parts).astype(np.int64)
    skip = np.zeros(n_parts, np.int64)
    heads: dict[int, list[tuple[int, int]]] = {}
    owner = -1
    for i in range(len(q)):
        p = int(part[i])
        if joins[i]:
            skip[p] = size[i]
            heads.setdefault(owner, []).append((p, int(size[i])))
        else:
            owner = p
    ordered = runs.groupby("partition")["sorted"].all()
    return [(p, int(skip[p]), heads.get(p, []), bool(ordered.get(p, True)))
            for p in range(n_parts) if total[p] - skip[p] > 0]


def _assemble_part(part: pd.DataFrame, skip: int, qid: str, ordered: bool,
                   sizes: Sequence[int], *others: pd.DataFrame) -> pd.DataFrame:
    pieces = [part.iloc[skip:]] + [o.iloc[:n] for o, n in zip(others, sizes)]
    out = pieces[0] if len(pieces) == 1 else pd.concat(pieces)
    return out if ordered else out.sort_values(qid, kind="stable")


def _regroup(data: Any, qid: str, plan: list[tuple[int, int, list[tuple[int, int]], bool]]
             ) -> Any:
    """Apply :func:`_grouped_plan`: move the heads of cut queries, sort where needed."""
    dask = import_dask()
    parts = data.to_delayed()
    out = [dask.delayed(_assemble_part)(parts[p], skip, qid, ordered, [n for _, n in heads],
                                        *[parts[s] for s, _ in heads])
           for p, skip, heads, ordered in plan]
    return dask.dataframe.from_delayed(out, meta=data._meta, verify_meta=False)


def _unique_part(part: pd.DataFrame, qid: str) -> pd.DataFrame:
    return pd.DataFrame({qid: pd.unique(part[qid].to_numpy())})


def _digest_part(part: pd.DataFrame) -> pd.DataFrame:
    values = pd.util.hash_pandas_object(part, index=False).to_numpy()
    text = hashlib.sha256(values.tobytes()).hexdigest()
    return pd.DataFrame({"digest": [text], "rows": [len(part)]})


def _scalar(value: Any) -> Any:
    """Return the Python value a numpy scalar holds (for messages)."""
    return value.item() if isinstance(value, np.generic) else value


def _check_qid_dtypes(data: Any, qid: str) -> None:
    """Refuse a qid column whose dtype differs between partitions (it would split queries)."""
    meta = pd.DataFrame({"partition": pd.Series(dtype=np.int64),
                         "rows": pd.Series(dtype=np.int64), "dtype": pd.Series(dtype=object)})
    kinds = data[[qid]].map_partitions(_dtype_part, qid, meta=meta).compute()
    kinds = kinds[kinds["rows"] > 0].reset_index(drop=True)
    seen = list(dict.fromkeys(kinds["dtype"]))
    if len(seen) > 1:
        first = kinds[kinds["dtype"] == seen[0]]["partition"].iloc[0]
        other = kinds[kinds["dtype"] == seen[1]]["partition"].iloc[0]
        raise ValueError(
            f"qid column {qid!r} has dtype {seen[0]} in partition {int(first)} but {seen[1]} in "
            f"partition {int(other)}: the same query id would hash to different partitions and "
            f"its rows would be split; cast it to one dtype first "
            f"(data[{qid!r}] = data[{qid!r}].astype(...))"
        )


def shuffle_by_query(
    data: Any,
    qid: str,
    *,
    label: str | None = None,
    check: Sequence[str] = (),
    npartitions: int | None = None,
    client: Any = None,
) -> tuple[Any, QueryLayout]:
    """Move rows so each query sits whole in one partition, sorted by ``qid`` there.

    Rows are shuffled on *qid* (hash partitioning), each partition is sorted
    by *qid* and, within a query, by the rows' original order, the result is
    persisted, empty partitions are dropped and the layout is checked: one
    dtype of *qid* in every input partition, no query in two partitions, no
    missing query id and every *label* / *check* value finite and ``>= 0``.

    Parameters
    ----------
    data : dask.dataframe.DataFrame
        Rows in any order and partitioning.  Input whose queries are already
        contiguous (each query's rows consecutive, partition after partition,
        as files written sorted by query give) keeps its partitions when
        *npartitions* is not changed: only the rows of queries cut by a
        partition boundary move, to the partition where their query starts,
        and the hash shuffle is skipped.
    qid : str
        Query id column (any hashable, sortable dtype; one dtype in every partition).
    label : str, optional
        Label column to check.
    check : sequence of str, default=()
        More numeric columns to check like the label (weights, composite labels).
    npartitions : int, optional
        Partitions after the shuffle; default ``data.npartitions``.
    client : distributed.Client, optional
        Client to persist with; default the current one, if any.

    Returns
    -------
    frame : dask.dataframe.DataFrame
        Persisted, each query whole in one partition, no empty partition.
    layout : QueryLayout

    Raises
    ------
    ValueError
        No rows, a qid dtype that differs between partitions, a missing query
        id, a non-finite or negative label or checked value (naming the column
        and the value), or a query found in two partitions.
    """
    if client is not None:  # every computation on *client*, also when it is not the default
        with client.as_current():
            return shuffle_by_query(data, qid, label=label, check=check,
                                    npartitions=npartitions)
    checked = ([] if label is None else [label]) + [c for c in check if c != label]
    check_frame(data, {"qid": qid, "label": checked})
    n_parts = data.npartitions if npartitions is None else check_int(
        npartitions, "npartitions", minimum=1
    )
    _check_qid_dtypes(data, qid)
    plan = None
    if n_parts == data.npartitions:
        runs = data[[qid]].map_partitions(_runs_part, qid,
                                          meta=_runs_part(data._meta, qid)).compute()
        plan = _grouped_plan(runs.reset_index(drop=True), qid, data.npartitions)
    if plan is not None:  # queries already contiguous: move only the heads of cut queries
        frame = _regroup(data, qid, plan)
    else:
        keyed = data.map_partitions(_row_key_part, meta=_row_key_part(data._meta))
        frame = keyed.shuffle(on=qid, npartitions=n_parts)
        frame = frame.map_partitions(_sort_part, qid, meta=data._meta)
    frame = frame.persist()
    meta = _stats_part(data._meta, qid, checked)
    stats = frame.map_partitions(_stats_part, qid, checked, meta=meta).compute()
    stats = stats.reset_index(drop=True)
    if int(stats["rows"].sum()) == 0:
        raise ValueError("data has no rows (every partition is empty)")
    if bool(stats["qid_null"].any()):
        raise ValueError(f"qid column {qid!r} has missing values; every row needs a query id")
    bad = stats[stats["bad_column"] != ""]
    if len(bad):
        col, value = str(bad["bad_column"].iloc[0]), float(bad["bad_value"].iloc[0])
        what = "label" if col == label else "column"
        raise ValueError(
            f"{what} column {col!r} must be finite and >= 0, got {value!r}; drop or fix such "
            "rows before training"
        )
    if bool((stats["distinct"] != stats["queries"]).any()):  # pragma: no cover - sorted
        raise ValueError("a query is not contiguous within its partition after sorting")
    keep = np.flatnonzero(stats["rows"].to_numpy() > 0)
    if keep.size < frame.npartitions:
        frame = frame.partitions[[int(i) for i in keep]]
        stats = stats.iloc[keep].reset_index(drop=True)
    uniq = frame.map_partitions(_unique_part, qid, meta=_unique_part(data._meta, qid)).compute()
    dup = uniq[qid].duplicated()
    if bool(dup.any()):  # pragma: no cover - hash partitioning keeps a query together
        raise ValueError(
            f"query {_scalar(uniq[qid][dup].iloc[0])!r} is split across partitions after the "
            f"shuffle on {qid!r}"
        )
    longest = int(np.argmax(stats["max_rows"].to_numpy()))
    layout = QueryLayout(
        n_rows=int(stats["rows"].sum()),
        n_queries=int(stats["queries"].sum()),
        rows=stats["rows"].to_numpy(dtype=np.int64),
        queries=stats["queries"].to_numpy(dtype=np.int64),
        max_query_rows=int(stats["max_rows"].iloc[longest]),
        max_query_id=_scalar(stats["max_qid"].iloc[longest]),
        column_max={c: float(stats[f"max:{c}"].max()) for c in checked},
        column_integer={c: bool(stats[f"int:{c}"].all()) for c in checked},
    )
    return frame, layout


def frame_digest(frame: Any) -> str:
    """SHA-256 over the contents of a shuffled frame, partition by partition.

    Parameters
    ----------
    frame : dask.dataframe.DataFrame
        The output of :func:`shuffle_by_query` (its row order is deterministic).

    Returns
    -------
    str
        Hex digest; equal for equal data and partitioning.
    """
    meta = pd.DataFrame({"digest": pd.Series(dtype=object), "rows": pd.Series(dtype=np.int64)})
    parts = frame.map_partitions(_digest_part, meta=meta).compute()
    h = hashlib.sha256()
    for text, rows in zip(parts["digest"], parts["rows"]):
        h.update(f"{text}:{int(rows)};".encode())
    return h.hexdigest()

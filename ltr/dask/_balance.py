"""Rows spread evenly over the workers before training: :func:`balance_partitions`.

Data-parallel training waits, every round, for the worker with the most rows
(each boosting round ends with the workers exchanging histograms), so a
worker holding 5 of 8 equal partitions makes every round 1.25x as long as an
even split would.  Dask places partitions where they were read or computed,
without regard to their sizes, so after the shuffle :func:`balance_partitions`
plans where each partition should sit (rows per thread within
:data:`BALANCE_TOLERANCE` of the longest-processing-time plan, moving as few
partitions as it can from the busiest worker to the idlest) and moves only
the partitions whose worker changes; an even placement is kept as it is.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from ltr._compat import import_dask, import_distributed

__all__ = ["BALANCE_TOLERANCE", "balance_partitions", "partition_workers", "plan_balance"]

#: the busiest worker may hold this many times the planned busiest worker's rows per thread
#: before partitions move
BALANCE_TOLERANCE = 1.05


def plan_balance(rows: Sequence[int] | np.ndarray, holders: Sequence[str],
                 threads: Mapping[str, int]) -> list[str]:
    """Return the worker each partition should sit on so rows per thread are even.

    The goal is the longest-processing-time plan (partitions largest first,
    each to the worker whose rows per thread after it are lowest).  Starting
    from the current placement, partitions move one at a time from the
    busiest worker to the idlest (each time the move that leaves the pair's
    busier side lowest) until the busiest worker is within
    :data:`BALANCE_TOLERANCE` of the goal, so only the partitions needed
    move; when that falls short of the goal, the goal's plan is returned.

    Parameters
    ----------
    rows : sequence of int
        Rows of each partition.
    holders : sequence of str
        The worker address holding each partition now (any other string when unknown).
    threads : mapping of str to int
        Worker address -> its threads (every worker that may hold rows).

    Returns
    -------
    list of str
        A worker address per partition.
    """
    workers = sorted(threads)
    if not workers:
        raise ValueError("no workers to place the partitions on")
    cap = np.array([max(1, int(threads[w])) for w in workers], dtype=np.float64)
    index = {w: i for i, w in enumerate(workers)}
    sizes = np.asarray(rows, dtype=np.float64)
    # the goal: longest processing time first
    load = np.zeros(len(workers))
    goal_plan = np.zeros(len(sizes), dtype=np.int64)
    for i in sorted(range(len(sizes)), key=lambda j: (-sizes[j], j)):
        best = int(np.argmin((load + sizes[i]) / cap))
        load[best] += sizes[i]
        goal_plan[i] = best
    goal = float(np.max(load / cap)) * BALANCE_TOLERANCE
    # from the current placement (an unknown holder counts as the busiest worker's)
    now = np.array([index.get(h, -1) for h in holders], dtype=np.int64)
    if (now < 0).any():
        return [workers[j] for j in goal_plan]
    load = np.bincount(now, weights=sizes, minlength=len(workers)).astype(np.float64)
    for _ in range(len(sizes)):
        per = load / cap
        src, dst = int(np.argmax(per)), int(np.argmin(per))
        if per[src] <= goal:
            return [workers[j] for j in now]
        mine = np.flatnonzero(now == src)
        after = np.maximum((load[src] - sizes[mine]) / cap[src],
                           (load[dst] + sizes[mine]) / cap[dst])
        pick = int(np.argmin(after))
        if after[pick] >= per[src]:
            break  # no single move helps
        i = int(mine[pick])
        now[i] = dst
        load[src] -= sizes[i]
        load[dst] += sizes[i]
    per = load / cap
    return [workers[j] for j in (now if float(np.max(per)) <= goal else goal_plan)]


def _address(part: Any) -> str:
    """Return the address of the worker this task runs on (next to its partition)."""
    return str(import_distributed().get_worker().address)


def _same(part: Any) -> Any:
    return part


def partition_workers(client: Any, frame: Any) -> list[str]:
    """Return the address of the worker holding each partition of persisted *frame*, in order.

    A task that reads one partition runs where that partition sits.
    """
    dask = import_dask()
    parts = frame.to_delayed()
    return [str(w) for w in client.compute([dask.delayed(_address)(p) for p in parts],
                                           sync=True)]


def balance_partitions(client: Any, frame: Any, rows: Sequence[int] | np.ndarray,
                       threads: Mapping[str, int]) -> tuple[Any, list[str]]:
    """Move partitions of persisted *frame* so every worker holds rows in proportion to threads.

    Parameters
    ----------
    client : distributed.Client
        The cluster holding *frame*.
    frame : dask.dataframe.DataFrame
        Persisted; its partitions keep their order.
    rows : sequence of int
        Rows of each partition of *frame*.
    threads : mapping of str to int
        Worker address -> its threads (the workers that may hold rows).

    Returns
    -------
    frame : dask.dataframe.DataFrame
        *frame* itself when its placement is already even (see
        :func:`plan_balance`), else the same partitions, in the same order,
        held by the planned workers.
    workers : list of str
        The worker holding each partition.
    """
    dask = import_dask()
    holders = partition_workers(client, frame)
    plan = plan_balance(rows, holders, threads) if len(threads) > 1 else holders
    if plan == holders:
        return frame, holders
    # loose restrictions: a planned worker that left does not hold the task forever
    parts = frame.to_delayed()
    futures = [client.compute(dask.delayed(_same, pure=False)(p), workers=[w],
                              allow_other_workers=True)
               for p, w in zip(parts, plan)]
    import_distributed().wait(futures)
    out = dask.dataframe.from_delayed(futures, meta=frame._meta, verify_meta=False)
    return out, plan

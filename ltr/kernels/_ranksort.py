"""Sorting by rank counting: the order of a short run of rows without a sort.

A row's rank among ``n`` rows (score descending, then tie value descending,
then row ascending: a total order) is the number of rows ahead of it, counted
with branch-free comparisons over the run.  The count costs ``n`` comparisons
per row, which the compiler vectorises (8 doubles per instruction with
AVX-512), so up to a few hundred rows it beats a comparison sort, whose
mispredicted branches cost far more than the extra comparisons.  Longer runs
are rank-counted in blocks of :data:`RUN` rows that a branch-free merge then
joins (:func:`merge_runs`).

The row order is the unique order of the total order above, so every path here
gives exactly the order of a stable sort by tie value and then by score.
Nothing allocates; nothing imports from the rest of ``ltr``.
"""

from __future__ import annotations

from numba import njit

#: Rank-count whole queries (or runs) of at most this many rows.
RUN = 128
#: The same with a tie value (two comparisons per pair: shorter runs pay off).
RUN_TIED = 32


@njit(cache=True, inline="always")
def rank_stable(ps, rank):
    """``rank[j]``: rows of ``ps`` ahead of row ``j`` (score descending, row ascending).

    ``ps`` is a contiguous view of the run's scores; ``rank`` needs ``len(ps)`` entries.
    """
    n = ps.shape[0]
    for j in range(n):
        v = ps[j]
        r = 0
        before = ps[:j]  # views: the loops vectorise (no index wraparound checks)
        for q in range(before.shape[0]):
            r += before[q] >= v  # an earlier tied row ranks first
        after = ps[j + 1:]
        for q in range(after.shape[0]):
            r += after[q] > v
        rank[j] = r


@njit(cache=True)
def rank_tied(ps, tv, rank):
    """As :func:`rank_stable`, equal scores ordered by tie value ``tv`` descending, then row."""
    n = ps.shape[0]
    for j in range(n):
        v = ps[j]
        t = tv[j]
        r = 0
        pb = ps[:j]
        tb = tv[:j]
        for q in range(pb.shape[0]):
            r += (pb[q] > v) | ((pb[q] == v) & (tb[q] >= t))
        pa = ps[j + 1:]
        ta = tv[j + 1:]
        for q in range(pa.shape[0]):
            r += (pa[q] > v) | ((pa[q] == v) & (ta[q] > t))
        rank[j] = r


@njit(cache=True, inline="always")
def rank_rows(ps, tv, use_tie, rank):
    """Rank of each row of the run (see :func:`rank_stable`, :func:`rank_tied`)."""
    if use_tie:
        rank_tied(ps, tv, rank)
    else:
        rank_stable(ps, rank)


@njit(cache=True)
def merge_runs(src_i, src_k, dst_i, dst_k, tie_vals, start, use_tie, lo, mid, hi):
    """Merge the sorted runs ``[lo, mid)`` and ``[mid, hi)`` of (row, key) pairs into ``dst``.

    The left run holds earlier rows than the right one, so a right entry goes
    first only when its key is larger (or equal with a larger tie value
    ``tie_vals[row - start]``).  Branch-free: both candidates are read and the
    choice is a select, so the merge costs no mispredictions on random keys.
    """
    a = lo
    b = mid
    o = lo
    if mid < hi and lo < mid:
        ka = src_k[a]
        kb = src_k[b]
        while True:
            take_b = kb > ka
            if use_tie:
                take_b = take_b | ((kb == ka) & (tie_vals[src_i[b] - start]
                                                 > tie_vals[src_i[a] - start]))
            dst_i[o] = src_i[b] if take_b else src_i[a]
            dst_k[o] = kb if take_b else ka
            o += 1
            b += take_b
            a += 1 - take_b
            if a >= mid or b >= hi:
                break
            ka = src_k[a]
            kb = src_k[b]
    while a < mid:
        dst_i[o] = src_i[a]
        dst_k[o] = src_k[a]
        a += 1
        o += 1
    while b < hi:
        dst_i[o] = src_i[b]
        dst_k[o] = src_k[b]
        b += 1
        o += 1


__all__ = ["RUN", "RUN_TIED", "merge_runs", "rank_rows", "rank_stable", "rank_tied"]

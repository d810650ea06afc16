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


@njit(cache=True)
def _kth_largest(vals, kth):
    """Return the ``kth`` largest (0-based) of ``vals``, reordering it (quickselect, in place)."""
    lo = 0
    hi = vals.shape[0] - 1
    while lo < hi:
        mid = (lo + hi) // 2
        a = vals[lo]
        b = vals[mid]
        c = vals[hi]
        pivot = max(min(a, b), min(max(a, b), c))  # median of three
        i = lo
        j = hi
        while i <= j:
            while vals[i] > pivot:
                i += 1
            while vals[j] < pivot:
                j -= 1
            if i <= j:
                vals[i], vals[j] = vals[j], vals[i]
                i += 1
                j -= 1
        if kth <= j:
            hi = j
        elif kth >= i:
            lo = i
        else:
            return vals[kth]
    return vals[kth]


@njit(cache=True)
def threshold_candidates(primary, start, end, m, buf_tmp, sort_f):
    """Collect the rows of ``start:end`` that can reach the top ``m``, for a sort of their own.

    A lower bound ``t0`` of the ``m``-th largest score (the ``m``-th largest of
    ``2 m`` block maxima, as ``_select_top_stable`` in :mod:`ltr.kernels._dcg`); the rows scoring
    ``>= t0``, in row order, go to ``buf_tmp[half:]`` (positions in the query,
    ``half = (end - start) // 2``) and their keys to ``sort_f[0]`` (the tie
    values, unused with ties in row order).  Sorted as a run of their own
    they give the rows, order and keys of the full sort.  Returns their count
    ``c`` (``m <= c <= half``), or -1 when more than half the query reaches
    ``t0``.  Needs ``end - start >= 2 m`` and the buffers of :func:`ltr.kernels._dcg._sort_rows`.
    """
    n = end - start
    ps = primary[start:end]
    nb = 2 * m
    maxima = sort_f[2][:nb]
    rows = n // nb
    for b in range(nb):
        maxima[b] = ps[b]
    for r in range(1, rows):
        row = ps[r * nb:(r + 1) * nb]
        for b in range(nb):
            maxima[b] = max(maxima[b], row[b])
    rest = ps[rows * nb:]
    for b in range(rest.shape[0]):
        maxima[b] = max(maxima[b], rest[b])
    t0 = _kth_largest(maxima, m - 1)
    half = n // 2
    cand = buf_tmp[half:]  # _sort_rows uses buf_tmp[:c], c <= half
    ckeys = sort_f[0]
    c = 0
    for i in range(n):
        v = ps[i]
        if v >= t0:
            if c == half:
                return -1
            cand[c] = i
            ckeys[c] = v
            c += 1
    return c


__all__ = ["RUN", "RUN_TIED", "merge_runs", "rank_rows", "rank_stable", "rank_tied",
           "threshold_candidates"]

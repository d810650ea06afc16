"""Top-``m`` selection of a query's rows and the ideal order (numba, no validation, no allocation).

The gain and tie-value rules of a row (``GAIN_*``, ``TIES_*``) and the paths
that find the best ``m = min(k, n)`` rows of one query, best first:

* a threshold and rank counting of the candidates (``m <= 16``, ties in row order:
  :func:`_select_top_stable`);
* a small sorted insertion buffer (other ``m <= 48``: one pass over the query,
  most documents rejected by a single comparison);
* a merge sort of the query's (score, row) pairs (:func:`_sort_rows`): rank-counted
  runs merged without branches (``m`` large), or of the rows above a threshold only
  (:func:`select_top_partial`, large inputs with ``k << n``).

The ideal order's helpers live here too: its sort key (:func:`ideal_order_key`) and the
label histogram that gives it in one pass when labels are small integers (:func:`label_counts`).

Used by the DCG drivers (:mod:`ltr.kernels._dcg`, ``_dcg_multi``, ``_dcg_split``)
and the rank metrics (:mod:`ltr.kernels._rank`).
"""

from __future__ import annotations

import numpy as np
from numba import njit

from ltr.kernels._ranksort import (
    RUN,
    RUN_TIED,
    merge_runs,
    rank_rows,
    threshold_candidates,
)

# How a row's gain is obtained.
GAIN_TABLE = 0  # gains[i] precomputed per row
GAIN_EXP2 = 1  # 2**label - 1
GAIN_LINEAR = 2  # label

# How ties among equal predicted scores are ordered.
TIES_STABLE = 0  # input order (LightGBM, XGBoost)
TIES_KEY_DESC = 1  # by a per-row key, descending (trec_eval: doc id descending)
TIES_AVERAGE = 2  # McSherry-Najork average over all orders of a tie group
TIES_PESSIMISTIC = 3  # lowest gain first
TIES_OPTIMISTIC = 4  # highest gain first

# Selections of more rows than this (m = min(k, n)) use the merge sort, not the buffer.
_BUFFER_MAX = 48
# Selections of at most this many rows with ties in row order: threshold and rank counting
# (_select_top_stable), unless more than _CAND_MAX rows reach the threshold.
_SMALL_MAX = 16
_CAND_MAX = 48
# Up to this many candidates are ranked by _rank_candidates (one loop per candidate), more by
# _rank_many_candidates (two): two loops cost less past about 12 candidates (k=10 and 20 on
# 100 rows: typically 12-27) and more below (k=5: about 6).
_FUSED_RANK_MAX = 12


@njit(cache=True)
def _gain(i, labels, gains, gain_mode):
    if gain_mode == GAIN_EXP2:
        lab = labels[i]
        li = int(lab)
        if li == lab and 0 <= li < 53:
            return float((1 << li) - 1)  # exact, and far cheaper than pow
        return 2.0**lab - 1.0
    if gain_mode == GAIN_LINEAR:
        return labels[i]
    return gains[i]


@njit(cache=True, inline="always")
def _tie(i, labels, gains, gain_mode, tie_keys, tie_mode):
    # Larger tie value ranks first among equal primary keys.
    if tie_mode == TIES_KEY_DESC:
        return tie_keys[i]
    if tie_mode == TIES_PESSIMISTIC:
        return -_gain(i, labels, gains, gain_mode)
    if tie_mode == TIES_OPTIMISTIC:
        return _gain(i, labels, gains, gain_mode)
    return -float(i)  # stable (and average, where the order inside a tie is irrelevant)


@njit(cache=True)
def _sort_rows(primary, labels, gains, gain_mode, tie_keys, tie_mode, start, end, m,
               buf_idx, buf_tmp, sort_f):
    """Fill ``buf_idx[:m]`` with rows ``start:end`` fully sorted (best first), in place.

    A bottom-up merge sort of (key, row) pairs: runs of ``RUN`` rows ordered by
    rank counting (:mod:`ltr.kernels._ranksort`), then branch-free merges back
    and forth between ``buf_idx``/``sort_f[1]`` and ``buf_tmp``/``sort_f[2]``
    (``sort_f[0]`` holds the tie values when the tie mode needs them).  A left
    run always holds earlier rows than the right run it is merged with, so
    comparing keys and tie values suffices.  The order (primary descending,
    tie value descending, row ascending) is total: the result is the unique
    order a stable sort by tie value and then by primary gives.  Needs
    ``end - start`` entries in every buffer.
    """
    n = end - start
    use_tie = not (tie_mode == TIES_STABLE or tie_mode == TIES_AVERAGE)
    tie_vals = sort_f[0]
    key_a = sort_f[1]
    key_b = sort_f[2]
    if use_tie:
        for j in range(n):
            tie_vals[j] = _tie(start + j, labels, gains, gain_mode, tie_keys, tie_mode)
    run = RUN_TIED if use_tie else RUN
    for lo in range(0, n, run):
        hi = min(lo + run, n)
        rank = buf_tmp[lo:hi]  # free until the first merge
        ps = primary[start + lo:start + hi]
        rank_rows(ps, tie_vals[lo:hi], use_tie, rank)
        for j in range(hi - lo):
            r = lo + rank[j]
            buf_idx[r] = start + lo + j
            key_a[r] = ps[j]
    in_tmp = False  # whether the sorted runs are in buf_tmp / key_b
    width = run
    while width < n:
        src_i = buf_tmp if in_tmp else buf_idx
        src_k = key_b if in_tmp else key_a
        dst_i = buf_idx if in_tmp else buf_tmp
        dst_k = key_a if in_tmp else key_b
        for lo in range(0, n, 2 * width):
            merge_runs(src_i, src_k, dst_i, dst_k, tie_vals, start, use_tie, lo,
                       min(lo + width, n), min(lo + 2 * width, n))
        in_tmp = not in_tmp
        width *= 2
    if in_tmp:
        for j in range(m):
            buf_idx[j] = buf_tmp[j]
            key_a[j] = key_b[j]  # the sorted keys stay in sort_f[1] (read by _dcg_split)


@njit(cache=True)
def _rank_candidates(start, cand, cv, m, buf_idx):
    """Write ``start + cand[j]`` at its rank among the ``c`` candidates, for ranks below ``m``.

    Candidates are in row order with scores ``cv``; the rank of ``j`` is
    the number of candidates with a higher score plus the earlier ones with an
    equal score (stable ties).  Branch-free: a rank ``>= m`` lands in
    ``buf_idx[m]``, a spare entry (needed only when ``c > m``).  One loop over
    all candidates per candidate (:func:`_rank_many_candidates` for more).
    """
    c = cv.shape[0]
    for j in range(c):
        v = cv[j]
        r = 0
        for q in range(c):
            r += (cv[q] > v) | ((cv[q] == v) & (q < j))
        buf_idx[min(r, m)] = start + cand[j]


@njit(cache=True)
def _rank_many_candidates(start, cand, cv, m, buf_idx):
    """:func:`_rank_candidates` with the candidates before and after ``j`` in two loops.

    Fewer scalar remainder steps than one loop over all: faster past
    ``_FUSED_RANK_MAX`` candidates, slower below.  The count is that of
    :func:`ltr.kernels._ranksort.rank_stable`, written out here: an inline helper
    shared by both made ``rank_stable`` 11-16 % slower.
    """
    for j in range(cv.shape[0]):
        v = cv[j]
        r = 0
        before = cv[:j]
        for q in range(before.shape[0]):
            r += before[q] >= v  # an earlier tied candidate ranks first
        after = cv[j + 1:]
        for q in range(after.shape[0]):
            r += after[q] > v
        buf_idx[min(r, m)] = start + cand[j]


@njit(cache=True)
def _select_top_stable(primary, start, end, m, buf_idx, vals, cand):
    """Fill ``buf_idx[:m]`` with the best ``m`` rows of ``start:end``, ties in row order.

    The rows and order of the insertion buffer with stable ties, with few
    data-dependent branches (``m <= _SMALL_MAX``; returns False, having done
    nothing, when ties leave too many candidates):

    1. a lower bound ``t0`` of the ``m``-th largest score: the rows are dealt
       into ``2 m`` blocks and ``t0`` is the ``m``-th largest block maximum
       (``m`` distinct rows score at least ``t0``);
    2. one pass collects the rows scoring ``>= t0`` (every row of the top
       ``m``; typically ``1.5 m`` rows) in row order;
    3. each candidate's rank is counted against the others (score
       descending, row ascending) and the top ``m`` written at their ranks.

    A query of ``m`` rows skips steps 1-2.  ``vals`` needs
    ``max(2 m, _CAND_MAX)`` entries, ``cand`` ``min(end - start, _CAND_MAX + 1)``
    and ``buf_idx`` ``m + 1`` when ``m < end - start``.
    """
    n = end - start
    ps = primary[start:end]  # a view: loops over it vectorise (no index wraparound)
    if m >= n:
        for j in range(n):
            cand[j] = j
            vals[j] = ps[j]
        _rank_candidates(start, cand, vals[:n], n, buf_idx)
        return True
    nb = min(2 * m, n)
    # Block b holds rows b, b + nb, b + 2 nb, ...: the maxima are a row-wise max.
    rows = n // nb
    for b in range(nb):
        vals[b] = ps[b]
    for r in range(1, rows):
        row = ps[r * nb:(r + 1) * nb]
        for b in range(nb):
            vals[b] = max(vals[b], row[b])
    rest = ps[rows * nb:]
    for b in range(rest.shape[0]):
        vals[b] = max(vals[b], rest[b])
    # Each maximum's count of larger maxima, one maximum against all at a time: the inner
    # loop updates nb counters side by side (vectorised; cand is free until step 2).
    vb = vals[:nb]
    above = cand[:nb]
    for b in range(nb):
        above[b] = 0
    for q in range(nb):
        w = vb[q]
        for b in range(nb):
            above[b] += w > vb[b]
    t0 = np.inf
    for b in range(nb):
        t0 = min(t0, vb[b] if above[b] < m else np.inf)
    c = 0
    for i in range(n):
        cand[c] = i
        c += ps[i] >= t0
        if c > _CAND_MAX:
            return False
    for j in range(c):
        vals[j] = ps[cand[j]]
    if c <= _FUSED_RANK_MAX:
        _rank_candidates(start, cand, vals[:c], m, buf_idx)
    else:
        _rank_many_candidates(start, cand, vals[:c], m, buf_idx)
    return True


# m > _BUFFER_MAX on queries this many times longer than m: sort the rows above a threshold.
_PARTIAL_RATIO = 4


@njit(cache=True)
def _select_top(primary, labels, gains, gain_mode, tie_keys, tie_mode, start, end, m,
                buf_idx, buf_p, buf_tmp, sort_f):
    """Fill ``buf_idx[:m]`` with the best ``m`` rows of ``start:end`` (best first).

    Allocates nothing: ``m <= _SMALL_MAX`` with ties in row order (stable or
    averaged) goes through :func:`_select_top_stable` (see its buffer sizes;
    ``buf_p`` has ``_BUFFER_MAX + 1`` entries), other ``m <= _BUFFER_MAX`` (a short
    query, or a small cut-off) through a sorted insertion buffer
    (``buf_idx``/``buf_p``), anything larger through :func:`_sort_rows` in
    ``buf_idx``/``buf_tmp``/``sort_f``.
    """
    if (m <= _SMALL_MAX and (tie_mode == TIES_STABLE or tie_mode == TIES_AVERAGE)
            and _select_top_stable(primary, start, end, m, buf_idx, buf_p, buf_tmp)):
        return
    if m > _BUFFER_MAX:
        _sort_rows(primary, labels, gains, gain_mode, tie_keys, tie_mode, start, end, m,
                   buf_idx, buf_tmp, sort_f)
        return
    filled = 0
    for i in range(start, end):
        p = primary[i]
        if filled == m:
            lp = buf_p[m - 1]
            if p < lp:
                continue
            if p == lp:
                if tie_mode == TIES_STABLE or tie_mode == TIES_AVERAGE:
                    continue  # a later row never beats an earlier tied one
                t = _tie(i, labels, gains, gain_mode, tie_keys, tie_mode)
                if t <= _tie(buf_idx[m - 1], labels, gains, gain_mode, tie_keys, tie_mode):
                    continue
            j = m - 1
        else:
            j = filled
            filled += 1
        while j > 0:
            pj = buf_p[j - 1]
            if pj > p:
                break
            if pj == p:
                if tie_mode == TIES_STABLE or tie_mode == TIES_AVERAGE:
                    break
                if _tie(buf_idx[j - 1], labels, gains, gain_mode, tie_keys, tie_mode) >= _tie(
                    i, labels, gains, gain_mode, tie_keys, tie_mode
                ):
                    break
            buf_p[j] = pj
            buf_idx[j] = buf_idx[j - 1]
            j -= 1
        buf_p[j] = p
        buf_idx[j] = i


@njit(cache=True)
def select_top_partial(primary, labels, gains, gain_mode, tie_keys, tie_mode, start, end, m,
                       buf_idx, buf_p, buf_tmp, sort_f):
    """:func:`_select_top`; ``k << n``: sort the rows above a threshold (large inputs)."""
    if (m > _BUFFER_MAX and (tie_mode == TIES_STABLE or tie_mode == TIES_AVERAGE)
            and end - start >= _PARTIAL_RATIO * m):
        c = threshold_candidates(primary, start, end, m, buf_tmp, sort_f)
        if c >= 0:
            _sort_rows(sort_f[0], labels, gains, gain_mode, tie_keys, tie_mode, start - start,
                       c, m, buf_idx, buf_tmp, sort_f)
            for j in range(m):  # candidate positions are in buf_tmp[half:]
                buf_idx[j] = start + buf_tmp[(end - start) // 2 + buf_idx[j]]
            return
    _select_top(primary, labels, gains, gain_mode, tie_keys, tie_mode, start, end, m, buf_idx,
                buf_p, buf_tmp, sort_f)


# Count labels by one vectorised comparison pass per label up to this many labels
# (a scatter of increments stalls on repeated labels); scatter above.
_COMPARE_COUNT_MAX = 8
# Rows counted per block of those passes (16 KB of labels: the passes after the first read L1).
_COUNT_BLOCK = 2048


@njit(cache=True)
def _count_labels(lq, counts, n_labels, add):
    """Count (``add``: add the counts of) rows of ``lq`` equal to each label below ``n_labels``.

    One vectorised comparison pass per label; returns whether every row was counted.
    """
    total = 0
    for j in range(n_labels):
        lab = float(j)
        c = 0
        for i in range(lq.shape[0]):
            c += lq[i] == lab
        counts[j] = counts[j] + c if add else c
        total += c
    return total == lq.shape[0]


@njit(cache=True)
def ideal_order_key(labels, gains, gain_mode, ideal_keys, ideal_mode):
    """Return the sort key of the ideal list: ideal_keys (mode 1), table gains, else labels."""
    if ideal_mode == 1:
        return ideal_keys
    return gains if gain_mode == GAIN_TABLE else labels


@njit(cache=True, inline="always")
def ideal_from_counts(counts, label_gain, discount, m):
    """Ideal DCG of ``m`` rows from a label histogram: the highest labels first.

    ``counts`` is the histogram of :func:`label_counts`; ``label_gain[l]`` is
    the gain of label ``l`` (non-decreasing in the ideal order).
    """
    total = 0.0
    pos = 0
    lab = label_gain.shape[0] - 1
    while pos < m and lab >= 0:
        c = counts[lab]
        g = label_gain[lab]
        while c > 0 and pos < m:
            total += g * discount[pos]
            pos += 1
            c -= 1
        lab -= 1
    return total


@njit(cache=True)
def label_counts(labels, start, end, counts, n_labels):
    """Count the labels of rows ``start:end`` into ``counts[:n_labels]``.

    Returns False (counts then partial) when a label is not an integer in
    ``[0, n_labels)``, or when there are no label gains (``n_labels == 0``).
    """
    if n_labels == 0:
        return False
    lq = labels[start:end]  # a view: no index wraparound in the loop
    if n_labels <= _COMPARE_COUNT_MAX:
        # Every row equals at most one label: all are counted iff all are valid.
        # Block by block, so that a long query is read from memory once.
        if lq.shape[0] <= _COUNT_BLOCK:  # (a slice per block costs a short query ~3 %)
            return _count_labels(lq, counts, n_labels, False)
        for b0 in range(0, lq.shape[0], _COUNT_BLOCK):
            _count_labels(lq[b0:b0 + _COUNT_BLOCK], counts, n_labels, b0 > 0)
        total = 0
        for j in range(n_labels):
            total += counts[j]
        return total == lq.shape[0]
    for j in range(n_labels):
        counts[j] = 0
    for i in range(lq.shape[0]):
        lab_f = lq[i]
        li = int(lab_f)
        if li < 0 or li >= n_labels or li != lab_f:
            return False
        counts[li] += 1
    return True

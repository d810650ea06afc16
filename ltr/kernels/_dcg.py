"""DCG kernels over flat arrays and query offsets (numba, no validation).

One query at a time, the top ``m = min(k, n)`` documents are found by rank
counting (:mod:`ltr.kernels._ranksort`) for queries of at most ``RUN`` rows
(``RUN_TIED`` with a tie key) ranked whole or with ``m > 48`` (each row's rank
counted with branch-free, vectorised comparisons), else by the selection paths
of :mod:`ltr.kernels._dcg_select` (threshold and rank counting, insertion
buffer, merge sort); the ideal DCG comes from a label histogram when labels
are small integers.

None allocates: the drivers allocate every buffer once per call, one set per
block of queries (one block in the serial driver, one per thread in the
parallel one), sized for the longest query that needs it.  Several cut-offs in
one pass: :mod:`ltr.kernels._dcg_multi`; a few very long queries split across
threads: :mod:`ltr.kernels._dcg_split`.

Conventions are passed as small integers (the ``*_MODE`` constants of
:mod:`ltr.kernels._dcg_select`, re-exported here) and plain arrays; the public
wrapper in :mod:`ltr.metrics` maps names to them.
"""

from __future__ import annotations

import numba
import numpy as np
from numba import njit, prange

from ltr.kernels._dcg_select import (  # noqa: F401 - re-exported: the selection's old home
    _BUFFER_MAX,
    _CAND_MAX,
    _COMPARE_COUNT_MAX,
    _PARTIAL_RATIO,
    _SMALL_MAX,
    GAIN_EXP2,
    GAIN_LINEAR,
    GAIN_TABLE,
    TIES_AVERAGE,
    TIES_KEY_DESC,
    TIES_OPTIMISTIC,
    TIES_PESSIMISTIC,
    TIES_STABLE,
    _gain,
    _rank_candidates,
    _select_top,
    _select_top_stable,
    _sort_rows,
    _tie,
    ideal_from_counts,
    ideal_order_key,
    label_counts,
    select_top_partial,
)
from ltr.kernels._ranksort import (
    RUN,
    RUN_TIED,
    rank_rows,
    rank_stable,
)

# buf_p: the insertion buffer, or (queries of <= RUN rows) tie values and per-rank terms.
_P_WIDTH = max(_BUFFER_MAX + 1, 2 * RUN + 1)
_TMP_MIN = max(_CAND_MAX + 1, RUN)  # buf_tmp: candidates, or ranks (queries of <= RUN rows)
# Ideal DCG of queries of at most this many rows by rank counting, not the label histogram.
_COUNT_IDEAL_MAX = 16
# DCG and ideal DCG of queries of at most _COUNT_IDEAL_MAX rows, or of at most
# _COUNT_BOTH_MAX rows and m + _COUNT_BOTH_SLACK, ties in row order, in one rank count
# (2 x 29 comparisons a row at 30 rows, vectorised) rather than the threshold selection plus
# the label histogram.  Kernel CPU, counted / selected: k=10, 20 rows 0.5, 30 rows 0.77;
# k=5: 17 rows 0.6, 24 rows 0.87, 28 rows 1.05, 32 rows 1.3; k=3: 20 rows 0.79, 24 rows 1.02;
# k=8: 28 rows 0.84, 32 rows 1.08 (the selection's cost falls with a smaller m); 40 rows and
# longer were slower counted at k=10.
_COUNT_BOTH_MAX = 32
_COUNT_BOTH_SLACK = 20
_CHUNK = 64  # queries per chunk; chunks are dealt round-robin to the blocks
# The one-cut-off driver selects up to this many rows with ties in row order by threshold and
# rank counting (_select_top_stable; other callers stop at _SMALL_MAX = 16).  Up to 24 its
# buffer needs (2 m <= _CAND_MAX) stay those of 16; at m = 17-24 the insertion buffer took
# twice as long (100-document queries at k=20, DCG only: 67 -> 33 ms CPU for 5 x 10^6 rows).
_SELECT_STABLE_MAX = 24


@njit(cache=True)
def _average_ties_dcg(labels, scores, gains, gain_mode, discount, start, end, m, buf_idx):
    """DCG of the top ``m`` rows ``buf_idx[:m]`` (best first), averaged over tied scores."""
    total = 0.0
    # Groups of equal score inside the top m.
    j = 0
    while j < m:
        s = scores[buf_idx[j]]
        g = 0.0
        e = j
        while e < m and scores[buf_idx[e]] == s:
            g += _gain(buf_idx[e], labels, gains, gain_mode)
            e += 1
        cnt = e - j
        if e == m and m < end - start:
            # The last group may continue past the cut-off: count all its members.
            g = 0.0
            cnt = 0
            for i in range(start, end):
                if scores[i] == s:
                    g += _gain(i, labels, gains, gain_mode)
                    cnt += 1
        dsum = 0.0
        for q in range(j, e):
            dsum += discount[q]
        total += g / cnt * dsum
        j = e
    return total


@njit(cache=True, inline="always")
def _ranked_sum(labels, gains, gain_mode, discount, start, rank, m, contrib):
    """Sum of ``gain * discount[rank]`` over the rows ranked below ``m``, in rank order.

    Branch-free: a rank ``>= m`` lands in ``contrib[m]``; the sum runs in rank
    order, as the selection paths' sums do (same rounding).
    """
    for j in range(rank.shape[0]):
        r = min(rank[j], m)
        contrib[r] = _gain(start + j, labels, gains, gain_mode) * discount[min(r, m - 1)]
    total = 0.0
    for r in range(m):
        total += contrib[r]
    return total


@njit(cache=True, inline="always")
def _query_dcg_counted(labels, scores, gains, gain_mode, tie_keys, tie_mode, discount, start,
                       end, m, buf_idx, rank, tv, contrib):
    """DCG of a query of at most ``RUN`` rows, its order found by rank counting."""
    n = end - start
    use_tie = not (tie_mode == TIES_STABLE or tie_mode == TIES_AVERAGE)
    if use_tie:
        for j in range(n):
            tv[j] = _tie(start + j, labels, gains, gain_mode, tie_keys, tie_mode)
    rank_rows(scores[start:end], tv[:n], use_tie, rank[:n])
    if tie_mode != TIES_AVERAGE:
        return _ranked_sum(labels, gains, gain_mode, discount, start, rank[:n], m, contrib)
    for j in range(n):
        buf_idx[min(rank[j], m)] = start + j
    return _average_ties_dcg(labels, scores, gains, gain_mode, discount, start, end, m, buf_idx)


@njit(cache=True, inline="always")
def _top_dcg(labels, gains, gain_mode, discount, m, buf_idx):
    """DCG of the rows ``buf_idx[:m]``, best first (their gains in rank order)."""
    total = 0.0
    for j in range(m):
        total += _gain(buf_idx[j], labels, gains, gain_mode) * discount[j]
    return total


@njit(cache=True, inline="always")
def _query_idcg_counted(labels, gains, gain_mode, key, discount, start, end, m, rank, contrib):
    """Ideal DCG of a short query: rows ranked by their ideal ``key`` (rank counting).

    The gains at each rank are those of the histogram or selection paths (rows
    ordered by label, or by gain), and the sum runs in rank order (same rounding).
    """
    n = end - start
    rank_stable(key[start:end], rank[:n])
    return _ranked_sum(labels, gains, gain_mode, discount, start, rank[:n], m, contrib)


@njit(cache=True, inline="always")
def _query_both_counted(labels, scores, gains, gain_mode, key, discount, start, end, m,
                        contrib, ideal_contrib):
    """``(DCG, ideal DCG)`` of a short query with ties in row order, in one rank count.

    Each row's rank by score and by ideal ``key`` (both descending, ties by
    row) are counted in the same loop, its gain found once; the terms and the
    sums in rank order are those of :func:`_query_dcg_counted` and
    :func:`_query_idcg_counted` (bit-identical), with half their loop overhead.
    """
    n = end - start
    ps = scores[start:end]
    ks = key[start:end]
    for j in range(n):
        v = ps[j]
        w = ks[j]
        r = 0
        ri = 0
        pb = ps[:j]  # views: the loops vectorise (no index wraparound checks)
        kb = ks[:j]
        for q in range(pb.shape[0]):  # an earlier tied row ranks first
            r += pb[q] >= v
            ri += kb[q] >= w
        pa = ps[j + 1:]
        ka = ks[j + 1:]
        for q in range(pa.shape[0]):
            r += pa[q] > v
            ri += ka[q] > w
        g = _gain(start + j, labels, gains, gain_mode)
        r = min(r, m)
        ri = min(ri, m)
        contrib[r] = g * discount[min(r, m - 1)]
        ideal_contrib[ri] = g * discount[min(ri, m - 1)]
    total = 0.0
    ideal = 0.0
    for r in range(m):
        total += contrib[r]
    for r in range(m):
        ideal += ideal_contrib[r]
    return total, ideal


@njit(cache=True)
def _idcg_sorted(labels, gains, gain_mode, ideal_keys, ideal_mode, discount, start, end, m,
                 buf_idx, buf_p, buf_tmp, sort_f):
    """Ideal DCG by selecting the top ``m`` rows (labels that are not small integers)."""
    # ideal_mode 0: order by gain; 1: order by ideal_keys (LightGBM orders by label).
    key = ideal_order_key(labels, gains, gain_mode, ideal_keys, ideal_mode)
    stable = TIES_STABLE + 0 * gain_mode  # not a literal: one compiled _select_top, not two
    select_top_partial(key, labels, gains, gain_mode, ideal_keys, stable, start, end, m,
                       buf_idx, buf_p, buf_tmp, sort_f)
    return _top_dcg(labels, gains, gain_mode, discount, m, buf_idx)


@njit(cache=True)
def _dcg_idcg_block(b, n_blocks, labels, scores, gains, gain_mode, tie_keys, tie_mode,
                    ideal_keys, ideal_mode, label_gain, discount, offsets, k, out_dcg, out_idcg,
                    want_dcg, want_idcg, buf_idx, buf_p, buf_tmp, sort_f, counts):
    """Chunks ``b, b + n_blocks, ...`` of ``_CHUNK`` queries, in the block's own buffers.

    Chunks are dealt round-robin so that blocks get a similar mix of long and
    short queries.  Nothing is allocated here.
    """
    n_q = offsets.shape[0] - 1
    n_chunks = (n_q + _CHUNK - 1) // _CHUNK
    key = ideal_order_key(labels, gains, gain_mode, ideal_keys, ideal_mode)
    both = want_dcg and want_idcg and tie_mode == TIES_STABLE
    contrib = buf_p[:RUN]
    ideal_contrib = buf_p[RUN:]
    for c in range(b, n_chunks, n_blocks):
        for q in range(c * _CHUNK, min(n_q, (c + 1) * _CHUNK)):
            start = offsets[q]
            end = offsets[q + 1]
            n = end - start
            m = n if (k <= 0 or k > n) else k
            if both and n <= _COUNT_BOTH_MAX and (n <= _COUNT_IDEAL_MAX
                                                  or n <= m + _COUNT_BOTH_SLACK):
                # short, ties in row order: one rank count
                out_dcg[q], out_idcg[q] = _query_both_counted(
                    labels, scores, gains, gain_mode, key, discount, start, end, m, contrib,
                    ideal_contrib)
                continue
            if want_dcg:
                stable = tie_mode == TIES_STABLE or tie_mode == TIES_AVERAGE
                if n <= (RUN if stable else RUN_TIED) and (m == n or m > _BUFFER_MAX):
                    # tie modes as constants: each copy compiles without the others' branches
                    if tie_mode == TIES_STABLE:
                        out_dcg[q] = _query_dcg_counted(
                            labels, scores, gains, gain_mode, tie_keys, TIES_STABLE, discount,
                            start, end, m, buf_idx, buf_tmp, buf_p[:RUN], buf_p[RUN:])
                    elif tie_mode == TIES_AVERAGE:
                        out_dcg[q] = _query_dcg_counted(
                            labels, scores, gains, gain_mode, tie_keys, TIES_AVERAGE, discount,
                            start, end, m, buf_idx, buf_tmp, buf_p[:RUN], buf_p[RUN:])
                    else:
                        out_dcg[q] = _query_dcg_counted(
                            labels, scores, gains, gain_mode, tie_keys, tie_mode, discount,
                            start, end, m, buf_idx, buf_tmp, buf_p[:RUN], buf_p[RUN:])
                else:
                    # The top m rows are selected here, not in a function of its own: that
                    # call and the ideal DCG's below pass a dozen arrays each, field by field,
                    # per query; inlined, the kernel takes 17-28 % less CPU on queries of
                    # 40-100 rows (2 % at 1,000; ndcg_speed.md, eleventh sitting).
                    if not (m <= _SELECT_STABLE_MAX and stable
                            and _select_top_stable(scores, start, end, m, buf_idx, buf_p,
                                                   buf_tmp)):
                        select_top_partial(scores, labels, gains, gain_mode, tie_keys, tie_mode,
                                           start, end, m, buf_idx, buf_p, buf_tmp, sort_f)
                    if tie_mode != TIES_AVERAGE:
                        out_dcg[q] = _top_dcg(labels, gains, gain_mode, discount, m, buf_idx)
                    else:
                        out_dcg[q] = _average_ties_dcg(labels, scores, gains, gain_mode,
                                                       discount, start, end, m, buf_idx)
            if want_idcg and n <= _COUNT_IDEAL_MAX:
                out_idcg[q] = _query_idcg_counted(labels, gains, gain_mode, key, discount, start,
                                                  end, m, buf_tmp, buf_p[RUN:])
            elif want_idcg and label_counts(labels, start, end, counts, label_gain.shape[0]):
                # small integer labels: the histogram gives the ideal order in one pass
                out_idcg[q] = ideal_from_counts(counts, label_gain, discount, m)
            elif want_idcg:
                out_idcg[q] = _idcg_sorted(labels, gains, gain_mode, ideal_keys, ideal_mode,
                                           discount, start, end, m, buf_idx, buf_p, buf_tmp,
                                           sort_f)


@njit(cache=True)
def _widths(offsets, k):
    """``(index width, sort width)``: the buffer sizes the longest query needs.

    A query takes the insertion buffer when ``m = min(k, n) <= _BUFFER_MAX``
    (``m`` entries of ``buf_idx``) and the full sort otherwise (``n`` entries
    of ``buf_idx``, ``buf_tmp`` and each row of ``sort_f``).
    """
    max_n = 0
    max_sorted = 0
    for q in range(offsets.shape[0] - 1):
        n = offsets[q + 1] - offsets[q]
        max_n = max(max_n, n)
        m = n if (k <= 0 or k > n) else k
        if m > _BUFFER_MAX:
            max_sorted = max(max_sorted, n)
    width = max_n if (k <= 0 or k > max_n) else k
    return max(width, max_sorted, 1), max_sorted


@njit(cache=True)
def _block_buffers(n_blocks, offsets, k, n_labels):
    width, sort_width = _widths(offsets, k)
    buf_idx = np.empty((n_blocks, width + 1), dtype=np.int64)  # + 1: _rank_candidates
    buf_p = np.empty((n_blocks, _P_WIDTH))
    buf_tmp = np.empty((n_blocks, max(sort_width, _TMP_MIN)), dtype=np.int64)
    sort_f = np.empty((n_blocks, 3, sort_width))  # tie values, two key buffers
    counts = np.empty((n_blocks, max(n_labels, 1)), dtype=np.int64)
    return buf_idx, buf_p, buf_tmp, sort_f, counts


@njit(cache=True, parallel=True)
def _dcg_idcg_parallel(labels, scores, gains, gain_mode, tie_keys, tie_mode, ideal_keys,
                       ideal_mode, label_gain, discount, offsets, k, out_dcg, out_idcg,
                       want_dcg, want_idcg, n_blocks):
    n_chunks = (offsets.shape[0] - 1 + _CHUNK - 1) // _CHUNK
    n_blocks = max(1, min(n_blocks, n_chunks))
    buf_idx, buf_p, buf_tmp, sort_f, counts = _block_buffers(
        n_blocks, offsets, k, label_gain.shape[0])
    for b in prange(n_blocks):
        _dcg_idcg_block(b, n_blocks, labels, scores, gains, gain_mode, tie_keys, tie_mode,
                        ideal_keys, ideal_mode, label_gain, discount, offsets, k, out_dcg,
                        out_idcg, want_dcg, want_idcg, buf_idx[b], buf_p[b], buf_tmp[b],
                        sort_f[b], counts[b])


@njit(cache=True)
def _dcg_idcg_serial(labels, scores, gains, gain_mode, tie_keys, tie_mode, ideal_keys,
                     ideal_mode, label_gain, discount, offsets, k, out_dcg, out_idcg,
                     want_dcg, want_idcg):
    buf_idx, buf_p, buf_tmp, sort_f, counts = _block_buffers(
        1, offsets, k, label_gain.shape[0])
    _dcg_idcg_block(0, 1, labels, scores, gains, gain_mode, tie_keys, tie_mode, ideal_keys,
                    ideal_mode, label_gain, discount, offsets, k, out_dcg, out_idcg, want_dcg,
                    want_idcg, buf_idx[0], buf_p[0], buf_tmp[0], sort_f[0], counts[0])


# Threads pay off only on large inputs: waking an OpenMP team costs more than
# scoring a few thousand rows, badly so on a busy machine.
PARALLEL_MIN_ROWS = 200_000


def dcg_idcg(labels, scores, gains, gain_mode, tie_keys, tie_mode, ideal_keys, ideal_mode,
             label_gain, discount, offsets, k, out_dcg, out_idcg, want_dcg, want_idcg):
    """Per-query DCG@k and ideal DCG@k into ``out_dcg`` / ``out_idcg``.

    ``k <= 0`` means the whole query.  ``discount`` must have at least
    ``min(k, longest query)`` entries.  ``label_gain`` (gain of each integer
    label, non-decreasing in the ideal order) enables the histogram path for
    the ideal DCG; pass an empty array when labels are not small integers.
    Dispatches to the threaded driver for large inputs.
    """
    if labels.shape[0] >= PARALLEL_MIN_ROWS:
        _dcg_idcg_parallel(labels, scores, gains, gain_mode, tie_keys, tie_mode, ideal_keys,
                           ideal_mode, label_gain, discount, offsets, k, out_dcg, out_idcg,
                           want_dcg, want_idcg, numba.get_num_threads())
        return
    # Serial: the buffers come from numpy and the block kernel runs directly, so
    # a small run compiles neither _dcg_idcg_serial nor its allocations.
    buf_idx, buf_p, buf_tmp, sort_f, counts = _block_buffers_np(offsets, k, label_gain.shape[0])
    _dcg_idcg_block(0, 1, labels, scores, gains, gain_mode, tie_keys, tie_mode, ideal_keys,
                    ideal_mode, label_gain, discount, offsets, k, out_dcg, out_idcg, want_dcg,
                    want_idcg, buf_idx, buf_p, buf_tmp, sort_f, counts)


def _block_buffers_np(offsets, k, n_labels):
    """One block's buffers, as :func:`_block_buffers` (numpy, nothing to compile)."""
    sizes = np.diff(offsets)
    max_n = int(sizes.max()) if sizes.size else 0
    m = sizes if k <= 0 else np.minimum(sizes, k)
    sorted_sizes = sizes[m > _BUFFER_MAX]
    sort_width = int(sorted_sizes.max()) if sorted_sizes.size else 0
    width = max(max_n if (k <= 0 or k > max_n) else k, sort_width, 1)
    return (np.empty(width + 1, dtype=np.int64), np.empty(_P_WIDTH),
            np.empty(max(sort_width, _TMP_MIN), dtype=np.int64),
            np.empty((3, sort_width)), np.empty(max(n_labels, 1), dtype=np.int64))

"""Recommender kernels: every rank metric of a dense score matrix, row by row.

Each row of a score batch is one user: its excluded items (a CSR of training
interactions) are never ranked, its held-out items (a CSR of relevance values)
are the judged documents.  Per row, one pass over the items keeps the top
``cap`` non-excluded items in a bounded heap (partial selection: items are
visited by index ascending, so a tie never displaces an earlier item and ties
break by item index ascending), the heap is sorted in place, and
:func:`ltr.kernels._rank.query_metrics` computes every metric from the
relevance of the ranked items and the user's judged values sorted descending.

Per-thread buffers (an exclusion mask and a relevance lookup of one entry per
item, the heap, the ideal values) are allocated once per call and reset after
each row, so nothing is allocated inside the parallel loop.  Nothing here
validates input or imports from the rest of ``ltr``.
"""

from __future__ import annotations

import numba
import numpy as np
from numba import njit, prange

from ltr.kernels._rank import UNJUDGED, _depth, query_metrics

# Per-row error codes written to ``err_kind``.
OK = 0
NAN_SCORE = 1
RELEVANT_EXCLUDED = 2

_CHUNK = 16
_BLOCK = 64
PARALLEL_MIN_ROWS = 64


@njit(cache=True, inline="always")
def _sift_down(heap_s, heap_i, start, end):
    """Restore the heap below ``start``; the root is the worst item.

    Worst: lowest score, then highest index.
    """
    pos = start
    s = heap_s[pos]
    i = heap_i[pos]
    while True:
        child = 2 * pos + 1
        if child >= end:
            break
        right = child + 1
        if right < end and (heap_s[right] < heap_s[child]
                            or (heap_s[right] == heap_s[child] and heap_i[right] > heap_i[child])):
            child = right
        cs = heap_s[child]
        ci = heap_i[child]
        if cs < s or (cs == s and ci > i):
            heap_s[pos] = cs
            heap_i[pos] = ci
            pos = child
        else:
            break
    heap_s[pos] = s
    heap_i[pos] = i


@njit(cache=True, inline="always")
def _sift_up(heap_s, heap_i, pos):
    s = heap_s[pos]
    i = heap_i[pos]
    while pos > 0:
        parent = (pos - 1) // 2
        ps = heap_s[parent]
        pi = heap_i[parent]
        if s < ps or (s == ps and i > pi):
            heap_s[pos] = ps
            heap_i[pos] = pi
            pos = parent
        else:
            break
    heap_s[pos] = s
    heap_i[pos] = i


@njit(cache=True, fastmath={"reassoc"})
def _row_sum(row):
    """Sum of a row (vectorised): finite exactly when no score is NaN or infinite."""
    acc = 0.0
    for j in range(row.shape[0]):
        acc += np.float64(row[j])
    return acc


@njit(cache=True)
def _count_above(seg, thr):
    """Items of ``seg`` scored above ``thr`` (a vectorised loop)."""
    hit = 0
    for i in range(seg.shape[0]):
        if np.float64(seg[i]) > thr:
            hit += 1
    return hit


@njit(cache=True)
def _heapsort(heap_s, heap_i, h):
    """Sort the heap in place, best first (the worst goes last)."""
    for end in range(h - 1, 0, -1):
        ts = heap_s[0]
        ti = heap_i[0]
        heap_s[0] = heap_s[end]
        heap_i[0] = heap_i[end]
        heap_s[end] = ts
        heap_i[end] = ti
        _sift_down(heap_s, heap_i, 0, end)


@njit(cache=True)
def _top(row, mark, n_excluded, cap, heap_s, heap_i):
    """Top ``cap`` non-excluded items of ``row`` into the heap, best first.

    Returns ``(n_ranked, h, nan_item)``: the number of rankable items (not
    excluded, score above ``-inf``), the number kept, and the first item with
    a NaN score (-1: none).  Items are visited by index ascending and a tie
    never displaces a kept item, so ties break by item index ascending.
    """
    n_items = row.shape[0]
    if not np.isfinite(_row_sum(row)):
        # slow path: NaN (an error) or infinite scores (-inf: not ranked)
        n = 0
        for j in range(n_items):
            s = np.float64(row[j])
            if np.isnan(s):
                return n, 0, j
            if not mark[j] and s > -np.inf:
                n += 1
    else:
        n = n_items - n_excluded
    h = 0
    j = 0
    while h < cap and j < n_items:  # fill
        s = np.float64(row[j])
        if not mark[j] and s > -np.inf:
            heap_s[h] = s
            heap_i[h] = j
            _sift_up(heap_s, heap_i, h)
            h += 1
        j += 1
    if h > 0:
        thr = heap_s[0]
        # blocks of _BLOCK items: one branch-free (vectorised) test of the block against
        # the threshold; most blocks hold no item that enters the heap
        for b0 in range(j, n_items, _BLOCK):
            b1 = min(n_items, b0 + _BLOCK)
            if _count_above(row[b0:b1], thr) == 0:
                continue
            for jj in range(b0, b1):
                s = np.float64(row[jj])
                if s > thr and not mark[jj]:
                    heap_s[0] = s
                    heap_i[0] = jj
                    _sift_down(heap_s, heap_i, 0, h)
                    thr = heap_s[0]
    _heapsort(heap_s, heap_i, h)
    return n, h, -1


@njit(cache=True)
def _block(b, n_blocks, scores, row0, rel_indptr, rel_indices, rel_data, ex_indptr, ex_indices,
           codes, ks, cap_max, gain_mode, level, err_scale, discount, out, relevant, err_kind,
           err_item, mark, relv, heap_s, heap_i, ideal, ranked):
    n_rows = scores.shape[0]
    n_chunks = (n_rows + _CHUNK - 1) // _CHUNK
    n_items = scores.shape[1]
    for c in range(b, n_chunks, n_blocks):
        for r in range(c * _CHUNK, min(n_rows, (c + 1) * _CHUNK)):
            u = row0 + r
            for p in range(ex_indptr[u], ex_indptr[u + 1]):
                mark[ex_indices[p]] = True
            num_rel = 0
            nj = 0
            bad = -1
            for p in range(rel_indptr[u], rel_indptr[u + 1]):
                j = rel_indices[p]
                v = rel_data[p]
                if mark[j] and v > 0.0 and bad < 0:
                    bad = j
                relv[j] = v
                ideal[nj] = -v
                nj += 1
                if v >= level:
                    num_rel += 1
            relevant[u] = num_rel
            if bad >= 0:
                err_kind[u] = RELEVANT_EXCLUDED
                err_item[u] = bad
            else:
                ideal[:nj].sort()
                for i in range(nj):
                    ideal[i] = -ideal[i]
                cap = min(cap_max, _depth(codes, ks, n_items, num_rel))
                n, h, nan_at = _top(scores[r], mark, ex_indptr[u + 1] - ex_indptr[u], cap,
                                     heap_s, heap_i)
                if nan_at >= 0:
                    err_kind[u] = NAN_SCORE
                    err_item[u] = nan_at
                else:
                    for i in range(h):
                        ranked[i] = relv[heap_i[i]]
                    query_metrics(ranked, n, ideal, nj, num_rel, codes, ks, gain_mode, level,
                                  err_scale, discount, out[u])
            for p in range(ex_indptr[u], ex_indptr[u + 1]):
                mark[ex_indices[p]] = False
            for p in range(rel_indptr[u], rel_indptr[u + 1]):
                relv[rel_indices[p]] = UNJUDGED


@njit(cache=True)
def _buffers(n_blocks, n_items, cap_max, max_judged):
    mark = np.zeros((n_blocks, n_items), dtype=np.bool_)
    relv = np.full((n_blocks, n_items), UNJUDGED)
    return (mark, relv, np.empty((n_blocks, max(cap_max, 1))),
            np.empty((n_blocks, max(cap_max, 1)), dtype=np.int64),
            np.empty((n_blocks, max(max_judged, 1))), np.empty((n_blocks, max(cap_max, 1))))


@njit(cache=True, parallel=True)
def _parallel(scores, row0, rel_indptr, rel_indices, rel_data, ex_indptr, ex_indices, codes, ks,
              cap_max, gain_mode, level, err_scale, discount, out, relevant, err_kind, err_item,
              n_blocks, max_judged):
    n_chunks = (scores.shape[0] + _CHUNK - 1) // _CHUNK
    n_blocks = max(1, min(n_blocks, n_chunks))
    mark, relv, heap_s, heap_i, ideal, ranked = _buffers(n_blocks, scores.shape[1], cap_max,
                                                         max_judged)
    for b in prange(n_blocks):
        _block(b, n_blocks, scores, row0, rel_indptr, rel_indices, rel_data, ex_indptr,
               ex_indices, codes, ks, cap_max, gain_mode, level, err_scale, discount, out,
               relevant, err_kind, err_item, mark[b], relv[b], heap_s[b], heap_i[b], ideal[b],
               ranked[b])


@njit(cache=True)
def _serial(scores, row0, rel_indptr, rel_indices, rel_data, ex_indptr, ex_indices, codes, ks,
            cap_max, gain_mode, level, err_scale, discount, out, relevant, err_kind, err_item,
            max_judged):
    mark, relv, heap_s, heap_i, ideal, ranked = _buffers(1, scores.shape[1], cap_max, max_judged)
    _block(0, 1, scores, row0, rel_indptr, rel_indices, rel_data, ex_indptr, ex_indices, codes,
           ks, cap_max, gain_mode, level, err_scale, discount, out, relevant, err_kind, err_item,
           mark[0], relv[0], heap_s[0], heap_i[0], ideal[0], ranked[0])


def score_matrix_metrics(scores, row0, rel_indptr, rel_indices, rel_data, ex_indptr, ex_indices,
                         codes, ks, cap_max, gain_mode, level, err_scale, discount, out, relevant,
                         err_kind, err_item, max_judged):
    """Metrics of users ``row0 .. row0 + len(scores)``: ``out[u, j]`` for ``codes[j]`` at ``ks[j]``.

    ``scores`` is a C-contiguous batch of rows; the CSR arrays cover every user
    (``rel_*``: judged items and their relevance; ``ex_*``: excluded items).
    ``cap_max`` bounds the heap (the deepest cut-off, or every item);
    ``max_judged`` is the most judged items of any user; ``discount`` needs
    ``max(n_items, max_judged)`` entries.  ``relevant[u]`` receives the user's
    number of items with relevance >= ``level``; a row with a NaN score or a
    positive relevant item that is excluded gets ``err_kind[u]`` (``NAN_SCORE``,
    ``RELEVANT_EXCLUDED``) and the item in ``err_item[u]``.
    """
    if scores.shape[0] >= PARALLEL_MIN_ROWS and numba.get_num_threads() > 1:
        _parallel(scores, row0, rel_indptr, rel_indices, rel_data, ex_indptr, ex_indices, codes,
                  ks, cap_max, gain_mode, level, err_scale, discount, out, relevant, err_kind,
                  err_item, numba.get_num_threads(), max_judged)
    else:
        _serial(scores, row0, rel_indptr, rel_indices, rel_data, ex_indptr, ex_indices, codes,
                ks, cap_max, gain_mode, level, err_scale, discount, out, relevant, err_kind,
                err_item, max_judged)

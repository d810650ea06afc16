"""Rank-metric kernels: precision, recall, AP, RR, R-precision, hit rate, ERR, (n)DCG.

Two entry points share one per-query function, :func:`query_metrics`, which
reads a query's relevance values in ranked order (and, for nDCG, the judged
relevance values sorted descending) and writes every requested metric:

* :func:`rows_metrics` scores rows the caller holds (labels and scores per
  row, ``int64`` query offsets): each query's rows are ordered with the
  selection paths of :mod:`ltr.kernels._dcg` in per-block buffers, so
  nothing is allocated per query;
* :func:`judged_metrics_fast` scores a run against separate judgments
  (``ltr.evaluation``) without sorting it: only the ranks of the judged
  documents matter, found by counting the documents scored above each;
  queries where a judged document ties go through :func:`order_run` (a full
  sort in the convention's tie order) + :func:`judged_metrics`.  Unretrieved
  judged documents still count in the number of relevant documents and the
  ideal DCG.

Metrics are small integer codes with one cut-off each (``k <= 0``: the whole
list).  Nothing here validates input or imports from the rest of ``ltr``.
"""

from __future__ import annotations

import numba
import numpy as np
from numba import njit, prange

from ltr.kernels._cache import frozen
from ltr.kernels._dcg import GAIN_LINEAR, TIES_STABLE, _select_top, _sort_rows
from ltr.kernels._judgments import _same

# Metric codes.
NDCG = 0
DCG = 1
AP = 2
RR = 3
PRECISION = 4
RECALL = 5
RPREC = 6
HIT_RATE = 7
ERR = 8

# nDCG gain of a relevance value.
GAIN_NONNEG = 0  # max(rel, 0): trec_eval
GAIN_LEVEL = 1  # rel if rel >= level else 0: ranx (judgments below the level are dropped)
GAIN_EXP2_LEVEL = 2  # 2**rel - 1 if rel >= level else 0: ranx's ndcg_burges

# Relevance of a retrieved document without a judgment: below every level, no gain.
UNJUDGED = -np.inf

_CHUNK = 64
_COUNT_MAX = 64  # more active (judged) documents than this: rank by a full sort
PARALLEL_MIN_ROWS = 200_000


@njit(cache=True, inline="always")
def _gain(rel, gain_mode, level):
    if gain_mode == GAIN_NONNEG:
        return max(0.0, rel)
    if rel < level:
        return 0.0
    if gain_mode == GAIN_EXP2_LEVEL:
        return 2.0**rel - 1.0
    return rel


@njit(cache=True)
def query_metrics(ranked, n, ideal, n_judged, num_rel, codes, ks, gain_mode, level, err_scale,
                  discount, out_row):
    """Every metric of one query into ``out_row``.

    ``ranked[:m]`` holds the relevance of the documents at ranks ``1..m`` for
    every cut-off ``m = min(k, n)`` used (``n``: documents ranked);
    ``ideal[:n_judged]`` the judged relevance values, descending (nDCG only);
    ``num_rel`` the judged documents with relevance >= ``level``;
    ``err_scale`` is ``2**-max_grade``; ``discount[i] = 1 / log2(i + 2)``.
    """
    for j in range(codes.shape[0]):
        code = codes[j]
        k = ks[j]
        m = n if (k <= 0 or k > n) else k
        val = 0.0
        if code == DCG or code == NDCG:
            d = 0.0
            for i in range(m):
                g = _gain(ranked[i], gain_mode, level)
                if g != 0.0:
                    d += g * discount[i]
            if code == DCG:
                val = d
            else:
                mi = n_judged if (k <= 0 or k > n_judged) else k
                best = 0.0
                for i in range(mi):
                    g = _gain(ideal[i], gain_mode, level)
                    if g != 0.0:
                        best += g * discount[i]
                val = d / best if best > 0.0 else 0.0
        elif code == AP:
            hits = 0
            total = 0.0
            for i in range(m):
                if ranked[i] >= level:
                    hits += 1
                    total += hits / (i + 1.0)
            val = total / num_rel if num_rel > 0 else 0.0
        elif code == RR:
            for i in range(m):
                if ranked[i] >= level:
                    val = 1.0 / (i + 1.0)
                    break
        elif code == PRECISION or code == RECALL or code == HIT_RATE:
            hits = 0
            for i in range(m):
                if ranked[i] >= level:
                    hits += 1
            if code == PRECISION:
                denom = k if k > 0 else n
                val = hits / denom if denom > 0 else 0.0
            elif code == RECALL:
                val = hits / num_rel if num_rel > 0 else 0.0
            else:
                val = 1.0 if hits > 0 else 0.0
        elif code == RPREC:
            mr = min(n, num_rel)
            hits = 0
            for i in range(mr):
                if ranked[i] >= level:
                    hits += 1
            val = hits / num_rel if num_rel > 0 else 0.0
        elif code == ERR:
            stop = 1.0
            for i in range(m):
                rel = ranked[i]
                if rel > 0.0:
                    r = (2.0**rel - 1.0) * err_scale
                    val += stop * r / (i + 1.0)
                    stop *= 1.0 - r
        out_row[j] = val


@njit(cache=True)
def _depth(codes, ks, n, num_rel):
    """How many top documents of a query of ``n`` the metrics read."""
    depth = 0
    for j in range(codes.shape[0]):
        k = ks[j]
        if codes[j] == RPREC:
            d = num_rel
        elif k <= 0:
            d = n
        else:
            d = k
        depth = max(depth, d)
    return min(n, depth)


# --------------------------------------------------------------------------- #
# rows the caller holds                                                        #
# --------------------------------------------------------------------------- #


@njit(cache=True)
def _rows_block(b, n_blocks, labels, scores, tie_keys, tie_mode, offsets, codes, ks, level,
                err_scale, discount, out, relevant, buf_idx, buf_p, buf_tmp, sort_f, ranked):
    n_q = offsets.shape[0] - 1
    n_chunks = (n_q + _CHUNK - 1) // _CHUNK
    empty = np.empty(0)
    for c in range(b, n_chunks, n_blocks):
        for q in range(c * _CHUNK, min(n_q, (c + 1) * _CHUNK)):
            start = offsets[q]
            end = offsets[q + 1]
            n = end - start
            num_rel = 0
            for i in range(start, end):
                if labels[i] >= level:
                    num_rel += 1
            relevant[q] = num_rel
            m = _depth(codes, ks, n, num_rel)
            if m > 0:
                _select_top(scores, labels, empty, GAIN_LINEAR, tie_keys, tie_mode, start, end,
                            m, buf_idx, buf_p, buf_tmp, sort_f)
            for i in range(m):
                ranked[i] = labels[buf_idx[i]]
            query_metrics(ranked, n, ranked, 0, num_rel, codes, ks, GAIN_NONNEG, level,
                          err_scale, discount, out[q])


@njit(cache=True)
def _rows_buffers(n_blocks, offsets):
    longest = 1
    for q in range(offsets.shape[0] - 1):
        longest = max(longest, offsets[q + 1] - offsets[q])
    return (np.empty((n_blocks, longest), dtype=np.int64), np.empty((n_blocks, 49 + longest)),
            np.empty((n_blocks, longest), dtype=np.int64), np.empty((n_blocks, 3, longest)),
            np.empty((n_blocks, longest)))


@njit(cache=True, parallel=True)
def _rows_parallel(labels, scores, tie_keys, tie_mode, offsets, codes, ks, level, err_scale,
                   discount, out, relevant, n_blocks):
    n_chunks = (offsets.shape[0] - 1 + _CHUNK - 1) // _CHUNK
    n_blocks = max(1, min(n_blocks, n_chunks))
    buf_idx, buf_p, buf_tmp, sort_f, ranked = _rows_buffers(n_blocks, offsets)
    for b in prange(n_blocks):
        _rows_block(b, n_blocks, labels, scores, tie_keys, tie_mode, offsets, codes, ks, level,
                    err_scale, discount, out, relevant, buf_idx[b], buf_p[b], buf_tmp[b],
                    sort_f[b], ranked[b])


@njit(cache=True)
def _rows_serial(labels, scores, tie_keys, tie_mode, offsets, codes, ks, level, err_scale,
                 discount, out, relevant):
    buf_idx, buf_p, buf_tmp, sort_f, ranked = _rows_buffers(1, offsets)
    _rows_block(0, 1, labels, scores, tie_keys, tie_mode, offsets, codes, ks, level, err_scale,
                discount, out, relevant, buf_idx[0], buf_p[0], buf_tmp[0], sort_f[0], ranked[0])


def rows_metrics(labels, scores, tie_keys, tie_mode, offsets, codes, ks, level, err_scale,
                 discount, out, relevant):
    """Metrics of rows held by the caller: ``out[q, j]`` for metric ``codes[j]`` at ``ks[j]``.

    ``tie_mode`` is one of :mod:`ltr.kernels._dcg`'s ``TIES_*`` except
    ``TIES_AVERAGE``; ``relevant[q]`` receives the query's number of rows with
    label >= ``level``.  ``discount`` needs one entry per row of the longest query.
    """
    labels, scores, tie_keys = frozen(labels), frozen(scores), frozen(tie_keys)
    if labels.shape[0] >= PARALLEL_MIN_ROWS:
        _rows_parallel(labels, scores, tie_keys, tie_mode, offsets, codes, ks, level, err_scale,
                       discount, out, relevant, numba.get_num_threads())
    else:
        _rows_serial(labels, scores, tie_keys, tie_mode, offsets, codes, ks, level, err_scale,
                     discount, out, relevant)


# --------------------------------------------------------------------------- #
# a run against judgments                                                      #
# --------------------------------------------------------------------------- #


@njit(cache=True)
def group_blocks(starts, codes, n, n_groups):
    """Stable counting sort of row blocks: ``(rows grouped by code, offsets)``.

    Block ``b`` is rows ``starts[b]`` up to the next block's start (the last up
    to ``n``), all of code ``codes[b]``; blocks of code < 0 are dropped.  Rows
    one by one are blocks of one row; a run grouped by query is one block per
    query, so its rows are copied as ranges, one sequential pass.
    """
    n_blocks = starts.shape[0]
    counts = np.zeros(n_groups + 1, dtype=np.int64)
    for b in range(n_blocks):
        c = codes[b]
        if c >= 0:
            end = starts[b + 1] if b + 1 < n_blocks else n
            counts[c + 1] += end - starts[b]
    for g in range(n_groups):
        counts[g + 1] += counts[g]
    offsets = counts.copy()
    fill = counts[:-1].copy()
    rows = np.empty(offsets[-1], dtype=np.int64)
    for b in range(n_blocks):
        c = codes[b]
        if c >= 0:
            end = starts[b + 1] if b + 1 < n_blocks else n
            f = fill[c]
            for i in range(starts[b], end):
                rows[f] = i
                f += 1
            fill[c] = f
    return rows, offsets


def order_run(scores, rows, offsets, tie_keys, tie_mode, quicksort, order, tied, select):
    """Order each query's rows of a grouped run by score descending, into ``order``.

    Query ``q`` holds the rows ``rows[offsets[q]:offsets[q + 1]]`` (scores
    ``scores[rows[...]]``; ``tie_keys`` in grouped order); ``order[s:e]``
    receives positions ``s..e-1`` best first.  Equal scores follow ``tie_mode``
    (``TIES_STABLE`` or ``TIES_KEY_DESC``), or with ``quicksort`` numba's
    ``np.argsort`` of the negated scores (ranx).  ``tied[i]`` flags rows whose
    score equals a neighbour's.  Only the queries with ``select[q]`` are
    ordered.  Returns the number of tied rows.
    """
    return _order_run(frozen(scores), rows, offsets, frozen(tie_keys), tie_mode, quicksort, order,
                      tied, select, numba.get_num_threads())


@njit(cache=True, parallel=True)
def _order_run(scores, rows, offsets, tie_keys, tie_mode, quicksort, order, tied, select,
               n_threads):
    n_q = offsets.shape[0] - 1
    longest = 1
    for q in range(n_q):
        longest = max(longest, offsets[q + 1] - offsets[q])
    n_blocks = max(1, min(n_threads, (n_q + _CHUNK - 1) // _CHUNK))
    buf_idx = np.empty((n_blocks, longest), dtype=np.int64)
    buf_tmp = np.empty((n_blocks, longest), dtype=np.int64)
    sort_f = np.empty((n_blocks, 3, longest))
    local_s = np.empty((n_blocks, longest))
    use_keys = tie_keys.shape[0] > 0
    local_k = np.empty((n_blocks, longest if use_keys else 0))
    n_chunks = (n_q + _CHUNK - 1) // _CHUNK
    counts = np.zeros(n_blocks, dtype=np.int64)
    empty = np.empty(0)
    for b in prange(n_blocks):
        sc = local_s[b]
        kb = local_k[b]
        for c in range(b, n_chunks, n_blocks):
            for q in range(c * _CHUNK, min(n_q, (c + 1) * _CHUNK)):
                start = offsets[q]
                end = offsets[q + 1]
                n = end - start
                if n == 0 or not select[q]:
                    continue
                if quicksort:
                    # numba's np.argsort of the negated scores in input order: ranx's order
                    for j in range(n):
                        sc[j] = -scores[rows[start + j]]
                    perm = np.argsort(sc[:n])
                    for j in range(n):
                        order[start + j] = start + perm[j]
                        sc[j] = -sc[j]
                else:
                    for j in range(n):
                        sc[j] = scores[rows[start + j]]
                    if use_keys:
                        for j in range(n):
                            kb[j] = tie_keys[start + j]
                    _sort_rows(sc, sc, empty, GAIN_LINEAR, kb, tie_mode, 0, n, n, buf_idx[b],
                               buf_tmp[b], sort_f[b])
                    for j in range(n):
                        order[start + j] = start + buf_idx[b, j]
                for j in range(n):
                    s = sc[order[start + j] - start]
                    t = (j > 0 and sc[order[start + j - 1] - start] == s) or (
                        j + 1 < n and sc[order[start + j + 1] - start] == s)
                    tied[order[start + j]] = t
                    if t:
                        counts[b] += 1
    return counts.sum()


@njit(cache=True, inline="always")
def _lookup(key_sorted, row_sorted, rel_sorted, lo, hi, key, row, s_j, e_j, data_j, s_r, e_r,
            data_r):
    while lo < hi:
        mid = (lo + hi) >> 1
        v = key_sorted[mid]
        if v < key:
            lo = mid + 1
        elif v > key:
            hi = mid
        else:
            # equal keys: confirm the bytes (a hash collision is not a match)
            first = mid
            while first > lo and key_sorted[first - 1] == key:
                first -= 1
            i = first
            while i < hi and key_sorted[i] == key:
                if _same(row_sorted[i], row, s_j, e_j, data_j, s_r, e_r, data_r):
                    return rel_sorted[i]
                i += 1
            return UNJUDGED
    return UNJUDGED


def judged_metrics(order, run_offsets, run_rows, run_key, judged_offsets, judged_key, judged_row,
                   judged_rel, ideal, run_strings, judged_strings, codes, ks, gain_mode, level,
                   err_scale, discount, out, relevant, select):
    """Metrics of a grouped, ordered run against judgments aligned query by query.

    Query ``q`` ranks the run rows ``run_rows[order[run_offsets[q]:run_offsets[q+1]]]``
    (document key ``run_key[row]``); its judgments are
    ``judged_*[judged_offsets[q]:judged_offsets[q+1]]``, sorted by key
    (``judged_row``: their rows in the qrels), and ``ideal`` the same relevance
    values sorted descending.  ``*_strings`` are ``(starts, ends, bytes)`` of
    the document ids (string ``i`` is ``bytes[starts[i]:ends[i]]``), to confirm
    equal keys (empty arrays: keys are the ids).
    Unjudged ranked documents have relevance :data:`UNJUDGED`.  Only the
    queries with ``select[q]`` are computed.
    """
    _judged_metrics(order, run_offsets, run_rows, run_key, judged_offsets, judged_key,
                    judged_row, judged_rel, ideal, *map(frozen, run_strings),
                    *map(frozen, judged_strings), codes, ks,
                    gain_mode, level, err_scale, discount, out, relevant, select,
                    numba.get_num_threads())


@njit(cache=True, parallel=True)
def _judged_metrics(order, run_offsets, run_rows, run_key, judged_offsets, judged_key,
                    judged_row, judged_rel, ideal, s_r, e_r, data_r, s_j, e_j, data_j, codes,
                    ks, gain_mode, level, err_scale, discount, out, relevant, select, n_threads):
    n_q = run_offsets.shape[0] - 1
    longest = 1
    for q in range(n_q):
        longest = max(longest, run_offsets[q + 1] - run_offsets[q])
    n_blocks = max(1, min(n_threads, (n_q + _CHUNK - 1) // _CHUNK))
    ranked = np.empty((n_blocks, longest))
    n_chunks = (n_q + _CHUNK - 1) // _CHUNK
    for b in prange(n_blocks):
        for c in range(b, n_chunks, n_blocks):
            for q in range(c * _CHUNK, min(n_q, (c + 1) * _CHUNK)):
                if not select[q]:
                    continue
                rs = run_offsets[q]
                n = run_offsets[q + 1] - rs
                js = judged_offsets[q]
                je = judged_offsets[q + 1]
                num_rel = 0
                for i in range(js, je):
                    if judged_rel[i] >= level:
                        num_rel += 1
                relevant[q] = num_rel
                m = _depth(codes, ks, n, num_rel)
                for i in range(m):
                    row = run_rows[order[rs + i]]
                    ranked[b, i] = _lookup(judged_key, judged_row, judged_rel, js, je,
                                           run_key[row], row, s_j, e_j, data_j, s_r, e_r,
                                           data_r)
                query_metrics(ranked[b], n, ideal[js:je], je - js, num_rel, codes, ks,
                              gain_mode, level, err_scale, discount, out[q])


def judged_metrics_fast(scores, run_offsets, run_rows, run_key, judged_offsets, judged_key,
                        judged_row, judged_rel, ideal, run_strings, judged_strings, codes, ks,
                        gain_mode, level, err_scale, discount, out, relevant, tied,
                        repeated=None):
    """Metrics without sorting the run: only the ranks of judged documents are found.

    A document that is unjudged (or judged with relevance that is neither
    >= ``level`` nor positive) adds nothing to any metric, so the order among
    such documents is irrelevant.  Each query's "active" judged documents are
    found through a per-query hash table of the judgments and ranked by
    counting the documents scored above it.  A query where an active
    document's score equals another document's, or with more than
    ``_COUNT_MAX`` active documents, is flagged in ``tied[q]`` and left for the
    sorting path (:func:`order_run` + :func:`judged_metrics`).  Given
    ``repeated`` (one flag per query), a query whose run holds two equal
    document keys is flagged there, for
    :func:`ltr.kernels._judgments.first_duplicate`.  Returns the number of
    queries flagged in ``tied``.
    """
    if repeated is None:
        repeated = np.zeros(0, dtype=np.bool_)
    return _judged_fast(frozen(scores), run_offsets, run_rows, run_key, judged_offsets, judged_key,
                        judged_row, judged_rel, ideal, *map(frozen, run_strings),
                        *map(frozen, judged_strings), codes,
                        ks, gain_mode, level, err_scale, discount, out, relevant, tied,
                        repeated, numba.get_num_threads())


@njit(cache=True, inline="always")
def _slot(key, mask):
    return np.int64(((np.uint64(key) * np.uint64(0x9E3779B97F4A7C15)) >> np.uint64(32)) & mask)


@njit(cache=True, parallel=True)
def _judged_fast(scores, run_offsets, run_rows, run_key, judged_offsets, judged_key, judged_row,
                 judged_rel, ideal, s_r, e_r, data_r, s_j, e_j, data_j, codes, ks, gain_mode,
                 level, err_scale, discount, out, relevant, tied, repeated, n_threads):
    n_q = run_offsets.shape[0] - 1
    longest = 1
    longest_j = 1
    for q in range(n_q):
        longest = max(longest, run_offsets[q + 1] - run_offsets[q])
        longest_j = max(longest_j, judged_offsets[q + 1] - judged_offsets[q])
    size = 8
    while size < 2 * longest_j:
        size *= 2
    mask = np.uint64(size - 1)
    check = repeated.shape[0] > 0  # a second table: the run's keys, for repeated documents
    size_r = 1
    while check and size_r < 2 * longest:
        size_r *= 2
    mask_r = np.uint64(size_r - 1)
    n_blocks = max(1, min(n_threads, (n_q + _CHUNK - 1) // _CHUNK))
    run_table = np.empty((n_blocks, size_r), dtype=np.int64)  # run key per slot
    run_stamp = np.full((n_blocks, size_r), -1, dtype=np.int64)
    ranked = np.empty((n_blocks, longest))
    run_s = np.empty((n_blocks, longest))  # the query's scores, input order
    act_s = np.empty((n_blocks, longest))  # active documents: scores
    act_r = np.empty((n_blocks, longest))  # ... and relevance
    table = np.empty((n_blocks, size), dtype=np.int64)  # judged position per slot
    stamp = np.full((n_blocks, size), -1, dtype=np.int64)  # query owning the slot
    n_chunks = (n_q + _CHUNK - 1) // _CHUNK
    flagged = np.zeros(n_blocks, dtype=np.int64)
    for b in prange(n_blocks):
        rk = ranked[b]
        sc_b = run_s[b]
        as_b = act_s[b]
        ar_b = act_r[b]
        tb = table[b]
        st = stamp[b]
        rt = run_table[b]
        rst = run_stamp[b]
        for c in range(b, n_chunks, n_blocks):
            for q in range(c * _CHUNK, min(n_q, (c + 1) * _CHUNK)):
                rs = run_offsets[q]
                n = run_offsets[q + 1] - rs
                js = judged_offsets[q]
                je = judged_offsets[q + 1]
                num_rel = 0
                for i in range(js, je):
                    if judged_rel[i] >= level:
                        num_rel += 1
                    slot = _slot(judged_key[i], mask)
                    while st[slot] == q:
                        slot = (slot + 1) & (size - 1)
                    st[slot] = q
                    tb[slot] = i
                relevant[q] = num_rel
                # the active documents: judged, and relevant or with a positive grade
                na = 0
                for j in range(n):
                    row = run_rows[rs + j]
                    sc = scores[row]
                    sc_b[j] = sc
                    key = run_key[row]
                    if check:
                        slot = _slot(key, mask_r)
                        seen = False
                        while rst[slot] == q:
                            if rt[slot] == key:
                                seen = True
                                break
                            slot = (slot + 1) & (size_r - 1)
                        if seen:
                            repeated[q] = True
                        else:
                            rst[slot] = q
                            rt[slot] = key
                    slot = _slot(key, mask)
                    rel = UNJUDGED
                    while st[slot] == q:
                        i = tb[slot]
                        if judged_key[i] == key and _same(judged_row[i], row, s_j, e_j, data_j,
                                                          s_r, e_r, data_r):
                            rel = judged_rel[i]
                            break
                        slot = (slot + 1) & (size - 1)
                    if rel > 0.0 or rel >= level:
                        as_b[na] = sc
                        ar_b[na] = rel
                        na += 1
                if na > _COUNT_MAX:  # counting costs na * n: sort this query instead
                    tied[q] = True
                    flagged[b] += 1
                    continue
                m = _depth(codes, ks, n, num_rel)
                for i in range(m):
                    rk[i] = UNJUDGED
                # rank of an active document: the documents scored above it
                tie = False
                for i in range(na):
                    a = as_b[i]
                    above = 0
                    same = 0
                    for j in range(n):
                        above += sc_b[j] > a
                        same += sc_b[j] == a
                    if same > 1:
                        tie = True
                        break
                    if above < m:
                        rk[above] = ar_b[i]
                if tie:
                    tied[q] = True
                    flagged[b] += 1
                    continue
                query_metrics(rk, n, ideal[js:je], je - js, num_rel, codes, ks, gain_mode, level,
                              err_scale, discount, out[q])
    return flagged.sum()


__all__ = [
    "AP", "DCG", "ERR", "HIT_RATE", "NDCG", "PRECISION", "RECALL", "RPREC", "RR",
    "TIES_STABLE", "UNJUDGED", "group_blocks", "judged_metrics",
    "judged_metrics_fast", "order_run", "query_metrics", "rows_metrics",
]

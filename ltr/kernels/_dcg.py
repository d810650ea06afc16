"""DCG kernels over flat arrays and query offsets (numba, no validation).

One query at a time, the top ``m = min(k, n)`` documents are selected either
with a small sorted insertion buffer (``m`` small: one pass over the query,
most documents rejected by a single comparison) or with a stable merge sort
(``m`` large).  The parallel drivers split the queries into chunks so that
every thread allocates its buffers once.

Conventions are passed as small integers (see the ``*_MODE`` constants) and
plain arrays; the public wrapper in :mod:`ltr.metrics` maps names to them.
"""

from __future__ import annotations

import numpy as np
from numba import njit, prange

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

# Queries whose cut-off exceeds this use a full sort instead of the buffer.
_BUFFER_MAX = 48
_CHUNK = 64


@njit(cache=True, inline="always")
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
def _select_top(primary, labels, gains, gain_mode, tie_keys, tie_mode, start, end, m,
                buf_idx, buf_p):
    """Fill ``buf_idx[:m]`` with the best ``m`` rows of ``start:end`` (best first)."""
    n = end - start
    if m <= _BUFFER_MAX and m < n:
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
        return
    # Full stable sort: secondary key first, then primary (both descending, stable).
    neg_t = np.empty(n)
    for j in range(n):
        neg_t[j] = -_tie(start + j, labels, gains, gain_mode, tie_keys, tie_mode)
    order = np.argsort(neg_t, kind="mergesort")
    neg_p = np.empty(n)
    for j in range(n):
        neg_p[j] = -primary[start + order[j]]
    order2 = np.argsort(neg_p, kind="mergesort")
    for j in range(m):
        buf_idx[j] = start + order[order2[j]]


@njit(cache=True)
def _query_dcg(labels, scores, gains, gain_mode, tie_keys, tie_mode, discount, start, end, m,
               buf_idx, buf_p):
    _select_top(scores, labels, gains, gain_mode, tie_keys, tie_mode, start, end, m,
                buf_idx, buf_p)
    total = 0.0
    if tie_mode != TIES_AVERAGE:
        for j in range(m):
            total += _gain(buf_idx[j], labels, gains, gain_mode) * discount[j]
        return total
    # Average over ties: groups of equal score inside the top m.
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


@njit(cache=True)
def _query_idcg(labels, gains, gain_mode, ideal_keys, ideal_mode, label_gain, counts, discount,
                start, end, m, buf_idx, buf_p):
    n_labels = label_gain.shape[0]
    usable = n_labels > 0
    if usable:
        # Small integer labels: a label histogram gives the ideal order in one pass.
        counts[:] = 0
        for i in range(start, end):
            lab_f = labels[i]
            li = int(lab_f)
            if li < 0 or li >= n_labels or li != lab_f:
                usable = False
                break
            counts[li] += 1
    if usable:
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
    # ideal_mode 0: order by gain; 1: order by ideal_keys (LightGBM orders by label).
    if ideal_mode == 1:
        key = ideal_keys
    elif gain_mode == GAIN_TABLE:
        key = gains
    else:
        key = labels  # exp2 and linear gains increase with the label
    _select_top(key, labels, gains, gain_mode, ideal_keys, TIES_STABLE, start, end, m,
                buf_idx, buf_p)
    total = 0.0
    for j in range(m):
        total += _gain(buf_idx[j], labels, gains, gain_mode) * discount[j]
    return total


@njit(cache=True)
def _dcg_idcg_chunk(c, labels, scores, gains, gain_mode, tie_keys, tie_mode, ideal_keys,
                    ideal_mode, label_gain, discount, offsets, k, width, out_dcg, out_idcg,
                    want_dcg, want_idcg):
    """Queries ``c * _CHUNK`` up to the next chunk, with buffers allocated once."""
    n_q = offsets.shape[0] - 1
    buf_idx = np.empty(width, dtype=np.int64)
    buf_p = np.empty(min(width, _BUFFER_MAX) + 1)
    counts = np.empty(max(label_gain.shape[0], 1), dtype=np.int64)
    for q in range(c * _CHUNK, min(n_q, (c + 1) * _CHUNK)):
        start = offsets[q]
        end = offsets[q + 1]
        n = end - start
        m = n if (k <= 0 or k > n) else k
        if want_dcg:
            out_dcg[q] = _query_dcg(labels, scores, gains, gain_mode, tie_keys, tie_mode,
                                    discount, start, end, m, buf_idx, buf_p)
        if want_idcg:
            out_idcg[q] = _query_idcg(labels, gains, gain_mode, ideal_keys, ideal_mode,
                                      label_gain, counts, discount, start, end, m,
                                      buf_idx, buf_p)


@njit(cache=True)
def _width(offsets, k):
    max_n = 0
    for q in range(offsets.shape[0] - 1):
        max_n = max(max_n, offsets[q + 1] - offsets[q])
    return max_n if (k <= 0 or k > max_n) else k


@njit(cache=True, parallel=True)
def _dcg_idcg_parallel(labels, scores, gains, gain_mode, tie_keys, tie_mode, ideal_keys,
                       ideal_mode, label_gain, discount, offsets, k, out_dcg, out_idcg,
                       want_dcg, want_idcg):
    width = _width(offsets, k)
    n_chunks = (offsets.shape[0] - 1 + _CHUNK - 1) // _CHUNK
    for c in prange(n_chunks):
        _dcg_idcg_chunk(c, labels, scores, gains, gain_mode, tie_keys, tie_mode, ideal_keys,
                        ideal_mode, label_gain, discount, offsets, k, width, out_dcg, out_idcg,
                        want_dcg, want_idcg)


@njit(cache=True)
def _dcg_idcg_serial(labels, scores, gains, gain_mode, tie_keys, tie_mode, ideal_keys,
                     ideal_mode, label_gain, discount, offsets, k, out_dcg, out_idcg,
                     want_dcg, want_idcg):
    width = _width(offsets, k)
    n_chunks = (offsets.shape[0] - 1 + _CHUNK - 1) // _CHUNK
    for c in range(n_chunks):
        _dcg_idcg_chunk(c, labels, scores, gains, gain_mode, tie_keys, tie_mode, ideal_keys,
                        ideal_mode, label_gain, discount, offsets, k, width, out_dcg, out_idcg,
                        want_dcg, want_idcg)


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
    fn = _dcg_idcg_parallel if labels.shape[0] >= PARALLEL_MIN_ROWS else _dcg_idcg_serial
    fn(labels, scores, gains, gain_mode, tie_keys, tie_mode, ideal_keys, ideal_mode,
       label_gain, discount, offsets, k, out_dcg, out_idcg, want_dcg, want_idcg)

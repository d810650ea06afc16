"""DCG and ideal DCG of a few very long queries, each split across threads.

The per-query drivers of :mod:`ltr.kernels._dcg` give each query to one
thread, so one query of a million documents runs on one core.  Here each query
is cut into one slice per thread; every slice orders its own top
``min(m, slice length)`` rows (the paths of :func:`ltr.kernels._dcg_multi._order_top`)
and counts its labels, in parallel; the slices' sorted lists are then merged
(a slice's rows all precede the next slice's, so the merge keeps the total
order: score descending, tie value descending, row ascending) and the label
counts added.  The top ``m`` rows and the histogram are exactly those of the
one-thread path, and the sums run in the same order: values are bit-identical.
"""

from __future__ import annotations

import numba
import numpy as np
from numba import njit, prange

from ltr.kernels._dcg import (
    _BUFFER_MAX,
    _PARTIAL_RATIO,
    TIES_AVERAGE,
    TIES_STABLE,
    _average_ties_dcg,
    _block_buffers,
    _gain,
    _tie,
    ideal_from_counts,
    ideal_order_key,
    label_counts,
    select_top_partial,
)
from ltr.kernels._dcg_multi import _order_top
from ltr.kernels._ranksort import RUN, RUN_TIED

#: Split queries across threads when there are fewer queries than threads and
#: each has at least this many rows.
SPLIT_MIN_ROWS = 100_000


@njit(cache=True, inline="always")
def _ahead(a, b, ka, kb, labels, gains, gain_mode, tie_keys, tie_mode):
    """Whether row ``a`` (key ``ka``) ranks before row ``b`` (key ``kb``).

    Key, then tie value, descending; then row ascending.
    """
    if ka != kb:
        return ka > kb
    if not (tie_mode == TIES_STABLE or tie_mode == TIES_AVERAGE):
        ta = _tie(a, labels, gains, gain_mode, tie_keys, tie_mode)
        tb = _tie(b, labels, gains, gain_mode, tie_keys, tie_mode)
        if ta != tb:
            return ta > tb
    return a < b


@njit(cache=True)
def _merge_slices(cand, keys, lengths, m, labels, gains, gain_mode, tie_keys, tie_mode, heads,
                  out):
    """``out[:m]``: the best ``m`` rows of the slices' sorted lists ``cand[t, :lengths[t]]``.

    ``keys[t, j]`` is the key of ``cand[t, j]``: the merge reads keys in order
    (the rows' own keys would be read at random).
    """
    n_t = lengths.shape[0]
    if n_t == 2:  # two slices (two cores): one select per row, no loop over slices
        l0 = lengths[0]
        l1 = lengths[1]
        a = 0
        b = 0
        for r in range(m):
            if a < l0 and b < l1:
                take_b = _ahead(cand[1, b], cand[0, a], keys[1, b], keys[0, a], labels, gains,
                                gain_mode, tie_keys, tie_mode)
            else:
                take_b = a >= l0
            out[r] = cand[1, b] if take_b else cand[0, a]
            b += take_b
            a += 1 - take_b
        return
    for t in range(n_t):
        heads[t] = 0
    for r in range(m):
        best = -1
        for t in range(n_t):
            h = heads[t]
            if h < lengths[t] and (best < 0 or _ahead(
                    cand[t, h], cand[best, heads[best]], keys[t, h], keys[best, heads[best]],
                    labels, gains, gain_mode, tie_keys, tie_mode)):
                best = t
        out[r] = cand[best, heads[best]]
        heads[best] += 1


@njit(cache=True)
def _merge_two_range(cand, keys, l0, l1, d0, d1, labels, gains, gain_mode, tie_keys, tie_mode,
                     out):
    """``out[d0:d1]``: ranks ``d0..d1-1`` of the merge of two slices' sorted lists.

    The merge path: the top ``d0`` rows hold ``i`` rows of slice 0 and ``d0 - i`` of
    slice 1, ``i`` found by bisection (slice 0's ``i``-th row ranks after slice 1's
    ``(d0 - i - 1)``-th); the merge then runs from there as the serial one does.
    """
    lo = max(0, d0 - l1)
    hi = min(d0, l0)
    while lo < hi:
        mid = (lo + hi) // 2
        if _ahead(cand[0, mid], cand[1, d0 - mid - 1], keys[0, mid], keys[1, d0 - mid - 1],
                  labels, gains, gain_mode, tie_keys, tie_mode):
            lo = mid + 1
        else:
            hi = mid
    a = lo
    b = d0 - lo
    by_key = tie_mode == TIES_STABLE or tie_mode == TIES_AVERAGE
    for r in range(d0, d1):
        if a < l0 and b < l1:
            if by_key:  # slice 0's rows all come first: slice 1 wins only on a larger key
                take_b = keys[1, b] > keys[0, a]
            else:
                take_b = _ahead(cand[1, b], cand[0, a], keys[1, b], keys[0, a], labels, gains,
                                gain_mode, tie_keys, tie_mode)
        else:
            take_b = a >= l0
        out[r] = cand[1, b] if take_b else cand[0, a]
        b += take_b
        a += 1 - take_b


@njit(cache=True, parallel=True)
def _merge_terms(cand, keys, lengths, m, labels, gains, gain_mode, tie_keys, tie_mode, heads,
                 discount, want_terms, out, terms):
    """``out[:m]`` as :func:`_merge_slices`, and ``terms[r]`` = gain x discount at rank ``r``.

    Two slices are merged by two threads (each its half of the ranks, see
    :func:`_merge_two_range`); the terms, read at random rows, are computed in
    parallel.  The caller sums them in rank order, as the one-thread path does.
    """
    if lengths.shape[0] == 2:
        for part in prange(2):
            d0 = (m * part) // 2
            d1 = (m * (part + 1)) // 2
            _merge_two_range(cand, keys, lengths[0], lengths[1], d0, d1, labels, gains,
                             gain_mode, tie_keys, tie_mode, out)
            if want_terms:
                for r in range(d0, d1):
                    terms[r] = _gain(out[r], labels, gains, gain_mode) * discount[r]
        return
    _merge_slices(cand, keys, lengths, m, labels, gains, gain_mode, tie_keys, tie_mode, heads,
                  out)
    if want_terms:
        for r in prange(m):
            terms[r] = _gain(out[r], labels, gains, gain_mode) * discount[r]


@njit(cache=True)
def _slice_keys(primary, buf_idx, sort_f, mt, n_slice, stable, out):
    """Keys of a slice's ``mt`` ordered rows: those its merge sort left, else gathered.

    :func:`_order_top` merge-sorts when ``mt > _BUFFER_MAX`` and the slice is
    longer than a rank-counted run.
    """
    if mt > _BUFFER_MAX and n_slice > (RUN if stable else RUN_TIED):
        out[:mt] = sort_f[1, :mt]
    else:
        for j in range(mt):
            out[j] = primary[buf_idx[j]]


# Whole slices with ties in row order are ordered by an LSD radix sort on the scores' bits:
# _RADIX_PASSES passes of _RADIX_BITS bits (a stable sort: tied scores keep row order).
_RADIX_BITS = 11
_RADIX_PASSES = 6
_SIGN = np.uint64(1) << np.uint64(63)


@njit(cache=True)
def _radix_order(primary, lo, hi, rows, keys, tmp_k, tmp_i, hist):
    """``rows[:n]``: rows ``lo:hi`` by ``primary`` descending, ties by row; ``keys[:n]`` their keys.

    The same order as the merge sort of :func:`_order_top` with ties in row
    order.  Each key is mapped to a ``uint64`` whose ascending order is the
    scores' descending order (``-0.0`` as ``0.0``, which compare equal); a
    stable LSD radix sort on it then keeps tied rows in row order.  ``rows``,
    ``keys`` (float64), ``tmp_k`` (uint64) and ``tmp_i`` need ``n = hi - lo``
    entries, ``hist`` ``(_RADIX_PASSES, 2**_RADIX_BITS)``.
    """
    n = hi - lo
    ps = primary[lo:hi]
    kf = keys[:n]
    for j in range(n):
        kf[j] = ps[j] + 0.0  # -0.0 -> 0.0
    ku = kf.view(np.uint64)
    mask = np.uint64((1 << _RADIX_BITS) - 1)
    hist[:, :] = 0
    for j in range(n):
        u = ku[j]
        asc = ~u if u & _SIGN else u | _SIGN
        d = ~asc
        ku[j] = d
        rows[j] = lo + j
        for p in range(_RADIX_PASSES):
            hist[p, (d >> np.uint64(p * _RADIX_BITS)) & mask] += 1
    src_k, src_i, dst_k, dst_i = ku, rows, tmp_k, tmp_i
    swapped = False
    for p in range(_RADIX_PASSES):
        shift = np.uint64(p * _RADIX_BITS)
        h = hist[p]
        if h[(src_k[0] >> shift) & mask] == n:  # one digit for every key: nothing to move
            continue
        total = 0
        for b in range(h.shape[0]):
            c = h[b]
            h[b] = total
            total += c
        for j in range(n):
            d = src_k[j]
            b = (d >> shift) & mask
            pos = h[b]
            h[b] = pos + 1
            dst_k[pos] = d
            dst_i[pos] = src_i[j]
        src_k, src_i, dst_k, dst_i = dst_k, dst_i, src_k, src_i
        swapped = not swapped
    if swapped:  # an odd number of passes moved the keys: they are in the buffers
        rows[:n] = tmp_i[:n]
        ku[:] = tmp_k[:n]
    for j in range(n):
        asc = ~ku[j]
        ku[j] = asc ^ _SIGN if asc & _SIGN else ~asc


@njit(cache=True, parallel=True)
def _split_query(labels, scores, gains, gain_mode, tie_keys, tie_mode, ideal_keys, ideal_mode,
                 label_gain, discount, start, end, m, want_dcg, want_idcg, n_t):
    n = end - start
    bounds = np.empty(n_t + 1, dtype=np.int64)
    for t in range(n_t + 1):
        bounds[t] = start + (n * t) // n_t
    n_labels = label_gain.shape[0]
    buf_idx, buf_p, buf_tmp, sort_f, counts = _block_buffers(n_t, bounds, m, n_labels)
    width = buf_idx.shape[1]
    cand = np.empty((n_t, width), dtype=np.int64)
    ideal = np.empty((n_t, width), dtype=np.int64)
    cand_k = np.empty((n_t, width))
    ideal_k = np.empty((n_t, width))
    lengths = np.empty(n_t, dtype=np.int64)
    usable = np.ones(n_t, dtype=np.bool_)
    ideal_key = ideal_order_key(labels, gains, gain_mode, ideal_keys, ideal_mode)
    stable = tie_mode == TIES_STABLE or tie_mode == TIES_AVERAGE
    hist = np.empty((n_t, _RADIX_PASSES, 1 << _RADIX_BITS), dtype=np.int64)
    sw = sort_f.shape[2]
    tmp_f = np.empty(n_t * sw)  # the radix sort's keys, slice t at t * sw
    for t in prange(n_t):
        lo = bounds[t]
        hi = bounds[t + 1]
        mt = min(m, hi - lo)
        lengths[t] = mt
        if want_dcg:
            if mt > _BUFFER_MAX and hi - lo >= _PARTIAL_RATIO * mt:  # k << n: a partial sort
                select_top_partial(scores, labels, gains, gain_mode, tie_keys, tie_mode, lo,
                                   hi, mt, buf_idx[t], buf_p[t], buf_tmp[t], sort_f[t])
                cand[t, :mt] = buf_idx[t, :mt]
                _slice_keys(scores, buf_idx[t], sort_f[t], mt, hi - lo, stable, cand_k[t])
            elif mt > _BUFFER_MAX and stable:  # the whole slice, ties in row order
                _radix_order(scores, lo, hi, cand[t], cand_k[t],
                             tmp_f[t * sw:(t + 1) * sw].view(np.uint64), buf_tmp[t], hist[t])
            else:
                _order_top(scores, labels, gains, gain_mode, tie_keys, tie_mode, lo, hi, mt,
                           buf_idx[t], buf_p[t], buf_tmp[t], sort_f[t])
                cand[t, :mt] = buf_idx[t, :mt]
                _slice_keys(scores, buf_idx[t], sort_f[t], mt, hi - lo, stable, cand_k[t])
        if want_idcg:
            ok = label_counts(labels, lo, hi, counts[t], n_labels)
            usable[t] = ok
            if not ok:
                _order_top(ideal_key, labels, gains, gain_mode, ideal_keys, TIES_STABLE, lo, hi,
                           mt, buf_idx[t], buf_p[t], buf_tmp[t], sort_f[t])
                ideal[t, :mt] = buf_idx[t, :mt]
                _slice_keys(ideal_key, buf_idx[t], sort_f[t], mt, hi - lo, True, ideal_k[t])
    heads = np.empty(n_t, dtype=np.int64)
    # The merged order and its terms reuse the sort buffers (pages the sorts touched): a
    # fresh 10^6-row array costs its page faults on every call.
    flat_i = buf_tmp.reshape(-1)
    top = flat_i[:m] if flat_i.shape[0] >= m else buf_idx.reshape(-1)[:m]
    terms = tmp_f[:m] if tmp_f.shape[0] >= m else np.empty(m)
    dcg = 0.0
    if want_dcg:
        average = tie_mode == TIES_AVERAGE
        _merge_terms(cand, cand_k, lengths, m, labels, gains, gain_mode, tie_keys, tie_mode,
                     heads, discount, not average, top, terms)
        if average:
            dcg = _average_ties_dcg(labels, scores, gains, gain_mode, discount, start, end, m,
                                    top)
        else:
            for j in range(m):
                dcg += terms[j]
    idcg = 0.0
    if want_idcg:
        if usable.all():
            total = counts[0]
            for t in range(1, n_t):
                total += counts[t]
            idcg = ideal_from_counts(total, label_gain, discount, m)
        else:
            for t in prange(n_t):  # slices whose labels were usable: their ideal order too
                if usable[t]:
                    lo = bounds[t]
                    hi = bounds[t + 1]
                    _order_top(ideal_key, labels, gains, gain_mode, ideal_keys, TIES_STABLE, lo,
                               hi, lengths[t], buf_idx[t], buf_p[t], buf_tmp[t], sort_f[t])
                    ideal[t, :lengths[t]] = buf_idx[t, :lengths[t]]
                    _slice_keys(ideal_key, buf_idx[t], sort_f[t], lengths[t], hi - lo, True,
                                ideal_k[t])
            _merge_terms(ideal, ideal_k, lengths, m, labels, gains, gain_mode, ideal_keys,
                         TIES_STABLE, heads, discount, True, top, terms)
            for j in range(m):
                idcg += terms[j]
    return dcg, idcg


def split_threads(offsets):
    """Threads to split each query across (0: use the per-query drivers).

    Splitting pays when there are fewer queries than threads and every query
    has at least :data:`SPLIT_MIN_ROWS` rows.
    """
    threads = numba.get_num_threads()
    n_q = offsets.shape[0] - 1
    if threads < 2 or not 0 < n_q < threads:
        return 0
    return threads if int(np.min(np.diff(offsets))) >= SPLIT_MIN_ROWS else 0


def dcg_idcg_split(labels, scores, gains, gain_mode, tie_keys, tie_mode, ideal_keys, ideal_mode,
                   label_gain, discount, offsets, k, out_dcg, out_idcg, want_dcg, want_idcg,
                   n_threads):
    """As :func:`ltr.kernels._dcg.dcg_idcg`, each query split across ``n_threads`` threads."""
    for q in range(offsets.shape[0] - 1):
        start = int(offsets[q])
        end = int(offsets[q + 1])
        n = end - start
        m = n if (k <= 0 or k > n) else k
        d, i = _split_query(labels, scores, gains, gain_mode, tie_keys, tie_mode, ideal_keys,
                            ideal_mode, label_gain, discount, start, end, m, want_dcg, want_idcg,
                            n_threads)
        out_dcg[q] = d
        out_idcg[q] = i


__all__ = ["SPLIT_MIN_ROWS", "dcg_idcg_split", "split_threads"]

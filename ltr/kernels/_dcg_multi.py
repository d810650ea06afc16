"""DCG and ideal DCG at several cut-offs in one pass over each query.

Each query's top ``M = min(max k, n)`` rows are ordered once, by the paths of
:mod:`ltr.kernels._dcg` (rank counting, threshold selection, insertion buffer
or merge sort); the DCG at each cut-off is then the running sum of the ranked
gains where it passes that rank, and the ideal DCG the same over the label
histogram.  Sums run in rank order from the first rank, as the one-cut-off
kernel's do, so every value is bit-identical to a separate call per cut-off.
"""

from __future__ import annotations

import numba
import numpy as np
from numba import njit, prange

from ltr.kernels._dcg import (
    _BUFFER_MAX,
    _CHUNK,
    _SMALL_MAX,
    PARALLEL_MIN_ROWS,
    TIES_AVERAGE,
    TIES_STABLE,
    _average_ties_dcg,
    _block_buffers,
    _block_buffers_np,
    _gain,
    _select_top,
    _select_top_stable,
    _tie,
    ideal_order_key,
    label_counts,
)
from ltr.kernels._ranksort import RUN, RUN_TIED, rank_rows, rank_stable


@njit(cache=True)
def _order_top(primary, labels, gains, gain_mode, tie_keys, tie_mode, start, end, m, buf_idx,
               buf_p, buf_tmp, sort_f):
    """``buf_idx[:m]``: the best ``m`` rows of ``start:end`` by ``primary``, best first."""
    n = end - start
    stable = tie_mode == TIES_STABLE or tie_mode == TIES_AVERAGE
    if n <= (RUN if stable else RUN_TIED) and (m == n or m > _BUFFER_MAX):
        tv = buf_p[:RUN]
        if not stable:
            for j in range(n):
                tv[j] = _tie(start + j, labels, gains, gain_mode, tie_keys, tie_mode)
        rank = buf_tmp[:n]
        rank_rows(primary[start:end], tv[:n], not stable, rank)
        for j in range(n):
            buf_idx[min(rank[j], m)] = start + j
    elif not (m <= _SMALL_MAX and stable
              and _select_top_stable(primary, start, end, m, buf_idx, buf_p, buf_tmp)):
        _select_top(primary, labels, gains, gain_mode, tie_keys, tie_mode, start, end, m,
                    buf_idx, buf_p, buf_tmp, sort_f)


@njit(cache=True, inline="always")
def _prefix_sums(labels, gains, gain_mode, discount, buf_idx, ks, n, out_row):
    """``out_row[j]``: the running sum of ranked gains up to rank ``min(ks[j], n)``."""
    total = 0.0
    r = 0
    for j in range(ks.shape[0]):
        k = ks[j]
        mj = n if (k <= 0 or k > n) else k
        while r < mj:
            total += _gain(buf_idx[r], labels, gains, gain_mode) * discount[r]
            r += 1
        out_row[j] = total


# Stable ties on a query of at most RUN rows: threshold and rank counting of the
# candidates (_select_top_stable) rather than ranking the whole query for m <= _SMALL_MAX,
# and for m <= _SHORT_SELECT_MAX on queries at least _SELECT_RATIO times longer than m.
_SHORT_SELECT_MAX = 32
_SELECT_RATIO = 4


@njit(cache=True)
def _order_short(primary, start, end, m, buf_idx, buf_p, buf_tmp):
    """``buf_idx[:m]``: the best ``m`` rows of ``start:end``, ties in row order.

    The paths of :func:`_order_top` for a query of at most ``RUN`` rows with
    ties in row order, without the insertion buffer and the merge sort (a
    call that compiles only this needs neither): threshold selection for a
    small ``m`` (:func:`ltr.kernels._dcg._select_top_stable`, whose
    candidates fit its buffers up to ``m = 48``), else (or when ties leave
    too many candidates) rank counting of the whole query.  Same rows, same
    order.
    """
    n = end - start
    select = m <= _SMALL_MAX or (m <= _SHORT_SELECT_MAX and n >= _SELECT_RATIO * m)
    if m < n and select and _select_top_stable(primary, start, end, m, buf_idx, buf_p, buf_tmp):
        return
    rank = buf_tmp[:n]
    rank_stable(primary[start:end], rank)
    for j in range(n):
        buf_idx[min(rank[j], m)] = start + j


@njit(cache=True, inline="always")
def _multi_body(short, average, b, n_blocks, labels, scores, gains, gain_mode, tie_keys,
                tie_mode, ideal_keys, ideal_mode, label_gain, discount, offsets, ks, k_max,
                out_dcg, out_idcg, want_dcg, want_idcg, buf_idx, buf_p, buf_tmp, sort_f, counts):
    """Chunks ``b, b + n_blocks, ...`` of queries, in one block's buffers.

    ``short`` and ``average`` are constants of each compiled kernel (see
    :func:`_kernels`): ``short`` orders every query with :func:`_order_short`
    (queries of at most ``RUN`` rows, ties in row order), else
    :func:`_order_top`; ``average`` averages the DCG over tied scores.  The
    branch not taken is pruned before typing, so its callees do not compile.
    """
    n_q = offsets.shape[0] - 1
    n_chunks = (n_q + _CHUNK - 1) // _CHUNK
    n_labels = label_gain.shape[0]
    ideal_key = ideal_order_key(labels, gains, gain_mode, ideal_keys, ideal_mode)
    stable_mode = TIES_STABLE + 0 * gain_mode  # not a literal: one compiled _order_top
    for c in range(b, n_chunks, n_blocks):
        for q in range(c * _CHUNK, min(n_q, (c + 1) * _CHUNK)):
            start = offsets[q]
            end = offsets[q + 1]
            n = end - start
            m = n if (k_max <= 0 or k_max > n) else k_max
            if want_dcg:
                if short:
                    _order_short(scores, start, end, m, buf_idx, buf_p, buf_tmp)
                else:
                    _order_top(scores, labels, gains, gain_mode, tie_keys, tie_mode, start, end,
                               m, buf_idx, buf_p, buf_tmp, sort_f)
                if average:
                    for j in range(ks.shape[0]):
                        k = ks[j]
                        mj = n if (k <= 0 or k > n) else k
                        out_dcg[q, j] = _average_ties_dcg(labels, scores, gains, gain_mode,
                                                          discount, start, end, mj, buf_idx)
                else:
                    _prefix_sums(labels, gains, gain_mode, discount, buf_idx, ks, n, out_dcg[q])
            if not want_idcg:
                continue
            if label_counts(labels, start, end, counts, n_labels):
                # The label histogram's ideal order, walked once (as _query_idcg per cut-off).
                total = 0.0
                pos = 0
                lab = n_labels - 1
                for j in range(ks.shape[0]):
                    k = ks[j]
                    mj = n if (k <= 0 or k > n) else k
                    while pos < mj and lab >= 0:
                        if counts[lab] == 0:
                            lab -= 1
                            continue
                        total += label_gain[lab] * discount[pos]
                        counts[lab] -= 1
                        pos += 1
                    out_idcg[q, j] = total
            else:
                if short:
                    _order_short(ideal_key, start, end, m, buf_idx, buf_p, buf_tmp)
                else:
                    _order_top(ideal_key, labels, gains, gain_mode, ideal_keys, stable_mode,
                               start, end, m, buf_idx, buf_p, buf_tmp, sort_f)
                _prefix_sums(labels, gains, gain_mode, discount, buf_idx, ks, n, out_idcg[q])


def _kernels(name, short, average):
    """Return the serial block kernel and threaded driver of one ``(short, average)`` variant.

    Closures over two constants: each variant is its own dispatcher, cached
    on disk under its own name, and compiles only the paths it takes.
    """

    def block(b, n_blocks, labels, scores, gains, gain_mode, tie_keys, tie_mode, ideal_keys,
              ideal_mode, label_gain, discount, offsets, ks, k_max, out_dcg, out_idcg, want_dcg,
              want_idcg, buf_idx, buf_p, buf_tmp, sort_f, counts):
        _multi_body(short, average, b, n_blocks, labels, scores, gains, gain_mode, tie_keys,
                    tie_mode, ideal_keys, ideal_mode, label_gain, discount, offsets, ks, k_max,
                    out_dcg, out_idcg, want_dcg, want_idcg, buf_idx, buf_p, buf_tmp, sort_f,
                    counts)

    def parallel(labels, scores, gains, gain_mode, tie_keys, tie_mode, ideal_keys, ideal_mode,
                 label_gain, discount, offsets, ks, k_max, out_dcg, out_idcg, want_dcg,
                 want_idcg, n_blocks):
        n_chunks = (offsets.shape[0] - 1 + _CHUNK - 1) // _CHUNK
        n_blocks = max(1, min(n_blocks, n_chunks))
        buf_idx, buf_p, buf_tmp, sort_f, counts = _block_buffers(
            n_blocks, offsets, k_max, label_gain.shape[0])
        for b in prange(n_blocks):
            _multi_body(short, average, b, n_blocks, labels, scores, gains, gain_mode, tie_keys,
                        tie_mode, ideal_keys, ideal_mode, label_gain, discount, offsets, ks,
                        k_max, out_dcg, out_idcg, want_dcg, want_idcg, buf_idx[b], buf_p[b],
                        buf_tmp[b], sort_f[b], counts[b])

    for fn, kind in ((block, "block"), (parallel, "parallel")):
        fn.__name__ = fn.__qualname__ = f"_multi_{kind}{name}"
    return njit(cache=True)(block), njit(cache=True, parallel=True)(parallel)


# Every tie rule, any query length; ties averaged; the same on queries of at most RUN
# rows with ties in row order (stable or averaged): no insertion buffer, no merge sort.
_multi_block, _multi_parallel = _kernels("", short=False, average=False)
_multi_block_average, _multi_parallel_average = _kernels("_average", short=False, average=True)
_multi_block_short, _multi_parallel_short = _kernels("_short", short=True, average=False)
_multi_block_short_average, _multi_parallel_short_average = _kernels(
    "_short_average", short=True, average=True)
_KERNELS = {
    (False, False): (_multi_block, _multi_parallel),
    (False, True): (_multi_block_average, _multi_parallel_average),
    (True, False): (_multi_block_short, _multi_parallel_short),
    (True, True): (_multi_block_short_average, _multi_parallel_short_average),
}


def dcg_idcg_multi(labels, scores, gains, gain_mode, tie_keys, tie_mode, ideal_keys, ideal_mode,
                   label_gain, discount, offsets, ks, out_dcg, out_idcg, want_dcg, want_idcg):
    """DCG and ideal DCG at every cut-off of ``ks`` into ``out_dcg[q, j]`` / ``out_idcg[q, j]``.

    ``ks`` is an ``int64`` array in increasing order with ``0`` (the whole
    query) last if present; other arguments as :func:`ltr.kernels._dcg.dcg_idcg`,
    ``discount`` long enough for the largest cut-off.  The kernel variant is
    chosen here, so a call compiles only the paths it can take.
    """
    k_max = 0 if ks[-1] <= 0 else int(ks[-1])
    sizes = np.diff(offsets)
    short = ((tie_mode == TIES_STABLE or tie_mode == TIES_AVERAGE)
             and (sizes.size == 0 or int(sizes.max()) <= RUN))
    block, parallel = _KERNELS[short, tie_mode == TIES_AVERAGE]
    if labels.shape[0] >= PARALLEL_MIN_ROWS:
        parallel(labels, scores, gains, gain_mode, tie_keys, tie_mode, ideal_keys, ideal_mode,
                 label_gain, discount, offsets, ks, k_max, out_dcg, out_idcg, want_dcg,
                 want_idcg, numba.get_num_threads())
        return
    buf_idx, buf_p, buf_tmp, sort_f, counts = _block_buffers_np(offsets, k_max,
                                                                label_gain.shape[0])
    block(0, 1, labels, scores, gains, gain_mode, tie_keys, tie_mode, ideal_keys, ideal_mode,
          label_gain, discount, offsets, ks, k_max, out_dcg, out_idcg, want_dcg, want_idcg,
          buf_idx, buf_p, buf_tmp, sort_f, counts)


__all__ = ["dcg_idcg_multi"]

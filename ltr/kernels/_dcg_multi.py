"""DCG and ideal DCG at several cut-offs in one pass over each query.

Each query's top ``M = min(max k, n)`` rows are ordered once, by the paths of
:mod:`ltr.kernels._dcg` (rank counting, threshold selection, insertion buffer
or merge sort); the DCG at each cut-off is then the running sum of the ranked
gains where it passes that rank, and the ideal DCG the same over the label
histogram.  Sums run in rank order from the first rank, as the one-cut-off
kernel's do, so every value is bit-identical to a separate call per cut-off.

numba compiles every function a kernel calls, whether or not the call runs, so
the choice of paths is made in Python (:func:`multi_kernel`): one compiled
kernel per way of ordering queries (``ORDER_*``) and per plain or averaged
ties, closures over those constants around one body (:func:`_multi_body`).
A call compiles only the paths it can take: a small input with ties in row
order, as the quick start's, compiles neither the selection paths, the merge
sort, the label histogram nor the threaded driver.
"""

from __future__ import annotations

import numba
import numpy as np
from numba import njit, prange

from ltr.kernels._cache import frozen
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
# Inputs of fewer rows rank short queries whole (no threshold selection to compile):
# at most RUN comparisons per row, well under a millisecond a call.
SELECT_MIN_ROWS = 20_000

# How the body orders a query (constants of each compiled kernel, see _kernels).
ORDER_ANY = 0  # _order_top: every tie rule, any length
ORDER_SHORT = 1  # _order_short: at most RUN rows, ties in row order
ORDER_RANKED = 2  # _rank_whole, ideal lists too: no threshold selection, no histogram


@njit(cache=True)
def _rank_whole(primary, start, end, m, buf_idx, buf_tmp):
    """``buf_idx[:m]``: the best ``m`` rows of ``start:end`` (at most ``RUN``), by rank counting.

    Ties in row order; ``buf_idx`` needs ``m + 1`` entries (ranks ``>= m``
    land in ``buf_idx[m]``) and ``buf_tmp`` ``end - start``.
    """
    n = end - start
    rank = buf_tmp[:n]
    rank_stable(primary[start:end], rank)
    for j in range(n):
        buf_idx[min(rank[j], m)] = start + j


@njit(cache=True)
def _order_short(primary, start, end, m, buf_idx, buf_p, buf_tmp):
    """``buf_idx[:m]``: the best ``m`` rows of ``start:end``, ties in row order.

    The paths of :func:`_order_top` for a query of at most ``RUN`` rows with
    ties in row order, without the insertion buffer and the merge sort (a
    call that compiles only this needs neither): threshold selection for a
    small ``m`` (:func:`ltr.kernels._dcg._select_top_stable`, whose
    candidates fit its buffers up to ``m = 48``), else (or when ties leave
    too many candidates) :func:`_rank_whole`.  Same rows, same order.
    """
    n = end - start
    select = m <= _SMALL_MAX or (m <= _SHORT_SELECT_MAX and n >= _SELECT_RATIO * m)
    if m < n and select and _select_top_stable(primary, start, end, m, buf_idx, buf_p, buf_tmp):
        return
    _rank_whole(primary, start, end, m, buf_idx, buf_tmp)


@njit(cache=True, inline="always")
def _multi_body(order, average, b, n_blocks, labels, scores, gains, gain_mode, tie_keys,
                tie_mode, ideal_keys, ideal_mode, label_gain, discount, offsets, ks, k_max,
                out_dcg, out_idcg, want_dcg, want_idcg, buf_idx, buf_p, buf_tmp, sort_f, counts):
    """Chunks ``b, b + n_blocks, ...`` of queries, in one block's buffers.

    ``order`` and ``average`` are constants of each compiled kernel (see
    :func:`_kernels`): ``order`` (an ``ORDER_*`` constant) picks the
    function that orders each query; ``average`` averages the DCG over tied
    scores.  The branches not taken are pruned before typing, so their
    callees do not compile.
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
                if order == ORDER_RANKED:
                    _rank_whole(scores, start, end, m, buf_idx, buf_tmp)
                elif order == ORDER_SHORT:
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
            # ORDER_RANKED ranks the ideal list whole too: no label histogram to compile
            if order != ORDER_RANKED and label_counts(labels, start, end, counts, n_labels):
                # The label histogram's ideal order, walked once (as ideal_from_counts per cut-off).
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
                if order == ORDER_RANKED:
                    _rank_whole(ideal_key, start, end, m, buf_idx, buf_tmp)
                elif order == ORDER_SHORT:
                    _order_short(ideal_key, start, end, m, buf_idx, buf_p, buf_tmp)
                else:
                    _order_top(ideal_key, labels, gains, gain_mode, ideal_keys, stable_mode,
                               start, end, m, buf_idx, buf_p, buf_tmp, sort_f)
                _prefix_sums(labels, gains, gain_mode, discount, buf_idx, ks, n, out_idcg[q])


def _kernels(name, order, average):
    """Return the serial block kernel and threaded driver of one ``(order, average)`` variant.

    Closures over two constants: each variant is its own dispatcher, cached
    on disk under its own name, and compiles only the paths it takes.
    """

    def block(b, n_blocks, labels, scores, gains, gain_mode, tie_keys, tie_mode, ideal_keys,
              ideal_mode, label_gain, discount, offsets, ks, k_max, out_dcg, out_idcg, want_dcg,
              want_idcg, buf_idx, buf_p, buf_tmp, sort_f, counts):
        _multi_body(order, average, b, n_blocks, labels, scores, gains, gain_mode, tie_keys,
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
            _multi_body(order, average, b, n_blocks, labels, scores, gains, gain_mode, tie_keys,
                        tie_mode, ideal_keys, ideal_mode, label_gain, discount, offsets, ks,
                        k_max, out_dcg, out_idcg, want_dcg, want_idcg, buf_idx[b], buf_p[b],
                        buf_tmp[b], sort_f[b], counts[b])

    for fn, kind in ((block, "block"), (parallel, "parallel")):
        fn.__name__ = fn.__qualname__ = f"_multi_{kind}{name}"
    return njit(cache=True)(block), njit(cache=True, parallel=True)(parallel)


# One kernel per way of ordering queries, ties averaged or not (the tie rule itself
# is an argument of the ORDER_ANY kernels).
_multi_block, _multi_parallel = _kernels("", ORDER_ANY, average=False)
_multi_block_average, _multi_parallel_average = _kernels("_average", ORDER_ANY, average=True)
_multi_block_short, _multi_parallel_short = _kernels("_short", ORDER_SHORT, average=False)
_multi_block_short_average, _multi_parallel_short_average = _kernels(
    "_short_average", ORDER_SHORT, average=True)
_multi_block_ranked, _ = _kernels("_ranked", ORDER_RANKED, average=False)
_multi_block_ranked_average, _ = _kernels("_ranked_average", ORDER_RANKED, average=True)
_KERNELS = {
    (ORDER_ANY, False): (_multi_block, _multi_parallel),
    (ORDER_ANY, True): (_multi_block_average, _multi_parallel_average),
    (ORDER_SHORT, False): (_multi_block_short, _multi_parallel_short),
    (ORDER_SHORT, True): (_multi_block_short_average, _multi_parallel_short_average),
    (ORDER_RANKED, False): (_multi_block_ranked, None),
    (ORDER_RANKED, True): (_multi_block_ranked_average, None),
}


def multi_kernel(tie_mode, offsets, n_rows):
    """Return the block kernel :func:`dcg_idcg_multi` calls, and whether it runs threaded.

    Threaded from ``PARALLEL_MIN_ROWS`` rows; queries of at most ``RUN`` rows
    with ties in row order (stable or averaged) take the short paths, ranked
    whole below ``SELECT_MIN_ROWS`` rows; anything else the general paths.
    """
    sizes = np.diff(offsets)
    order = ORDER_ANY
    if (tie_mode == TIES_STABLE or tie_mode == TIES_AVERAGE) and (
            sizes.size == 0 or int(sizes.max()) <= RUN):
        order = ORDER_RANKED if n_rows < SELECT_MIN_ROWS else ORDER_SHORT
    block, parallel = _KERNELS[order, tie_mode == TIES_AVERAGE]
    if n_rows >= PARALLEL_MIN_ROWS and parallel is not None:
        return parallel, True
    return block, False


def dcg_idcg_multi(labels, scores, gains, gain_mode, tie_keys, tie_mode, ideal_keys, ideal_mode,
                   label_gain, discount, offsets, ks, out_dcg, out_idcg, want_dcg, want_idcg):
    """DCG and ideal DCG at every cut-off of ``ks`` into ``out_dcg[q, j]`` / ``out_idcg[q, j]``.

    ``ks`` is an ``int64`` array in increasing order with ``0`` (the whole
    query) last if present; other arguments as :func:`ltr.kernels._dcg.dcg_idcg`,
    ``discount`` long enough for the largest cut-off.  The kernel variant is
    chosen here (:func:`multi_kernel`), so a call compiles only the paths it
    can take.
    """
    k_max = 0 if ks[-1] <= 0 else int(ks[-1])
    labels, scores, gains, tie_keys, ideal_keys = map(frozen, (labels, scores, gains, tie_keys,
                                                             ideal_keys))
    kernel, threaded = multi_kernel(tie_mode, offsets, labels.shape[0])
    if threaded:
        kernel(labels, scores, gains, gain_mode, tie_keys, tie_mode, ideal_keys, ideal_mode,
               label_gain, discount, offsets, ks, k_max, out_dcg, out_idcg, want_dcg, want_idcg,
               numba.get_num_threads())
        return
    buf_idx, buf_p, buf_tmp, sort_f, counts = _block_buffers_np(offsets, k_max,
                                                                label_gain.shape[0])
    kernel(0, 1, labels, scores, gains, gain_mode, tie_keys, tie_mode, ideal_keys, ideal_mode,
           label_gain, discount, offsets, ks, k_max, out_dcg, out_idcg, want_dcg, want_idcg,
           buf_idx, buf_p, buf_tmp, sort_f, counts)


__all__ = ["dcg_idcg_multi"]

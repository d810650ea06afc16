"""Shared numba helpers of the LambdaRank kernels.

Discounts, LightGBM's sigmoid table, the stable descending sort, per-pair
terms (plain, and position-debiased with the pair's cost) and the
counter-based random stream.

No validation, no ``ltr`` imports (see :mod:`ltr.kernels._lambdarank` for the layout).
"""

from __future__ import annotations

import math

import numpy as np
from numba import njit

#: Number of bins of LightGBM's sigmoid lookup table.
SIGMOID_BINS = 1024 * 1024

# LightGBM adds the float literal 0.01f (promoted to double) to |delta score|.
_F32_001 = float(np.float32(0.01))

_GOLDEN = np.uint64(0x9E3779B97F4A7C15)
_MIX1 = np.uint64(0xBF58476D1CE4E5B9)
_MIX2 = np.uint64(0x94D049BB133111EB)
_QUERY_MUL = np.uint64(0xD1B54A32D192ED03)
_OBJ_MUL = np.uint64(0x8CB92BA72F3D8DD7)
_U53 = 1.0 / 9007199254740992.0


# ---------------------------------------------------------------- helpers


@njit(cache=True)
def position_discounts(n):
    """``1 / log2(2 + i)`` for ``i < n`` (libm ``log2``, as in LightGBM)."""
    out = np.empty(max(n, 1), dtype=np.float64)
    for i in range(out.shape[0]):
        out[i] = 1.0 / math.log2(2.0 + i)
    return out


@njit(cache=True)
def lightgbm_sigmoid_table(sigma):
    """LightGBM's sigmoid lookup table: ``(table, min_input, max_input, factor)``."""
    min_input = -50.0 / sigma / 2.0
    max_input = -min_input
    factor = SIGMOID_BINS / (max_input - min_input)
    table = np.empty(SIGMOID_BINS, dtype=np.float64)
    for i in range(SIGMOID_BINS):
        x = i / factor + min_input
        table[i] = 1.0 / (1.0 + math.exp(x * sigma))
    return table, min_input, max_input, factor


@njit(cache=True)
def _argsort_desc(scores, s, n, idx, tmp, skey):
    """Stable descending argsort of ``scores[s:s+n]`` into ``idx[s:s+n]`` (local indices).

    Sorts ``(-score, index)`` pairs ascending, keys carried along in
    ``skey`` (two halves of ``n_rows``: ping-pong key buffers) so comparisons
    read contiguous memory; ``tmp[s:s+n]`` is the index ping-pong buffer.
    Insertion sort on runs of 16, then bottom-up merges whose inner step is
    written as selects (no data-dependent branch).
    """
    half = skey.shape[0] // 2
    for i in range(n):
        idx[s + i] = i
        skey[s + i] = -scores[s + i]
    run = 16
    for lo in range(0, n, run):
        hi = min(lo + run, n)
        for i in range(lo + 1, hi):
            kv = skey[s + i]
            v = idx[s + i]
            j = i - 1
            while j >= lo and skey[s + j] > kv:
                skey[s + j + 1] = skey[s + j]
                idx[s + j + 1] = idx[s + j]
                j -= 1
            skey[s + j + 1] = kv
            idx[s + j + 1] = v
    width = run
    in_first = True
    while width < n:
        if in_first:
            src = idx
            dst = tmp
            ks = s
            kd = half + s
        else:
            src = tmp
            dst = idx
            ks = half + s
            kd = s
        for lo in range(0, n, 2 * width):
            mid = min(lo + width, n)
            hi = min(lo + 2 * width, n)
            a = lo
            b = mid
            o = lo
            while a < mid and b < hi:
                ka = skey[ks + a]
                kb = skey[ks + b]
                take_b = kb < ka
                skey[kd + o] = kb if take_b else ka
                dst[s + o] = src[s + b] if take_b else src[s + a]
                step = 1 if take_b else 0
                b += step
                a += 1 - step
                o += 1
            while a < mid:
                skey[kd + o] = skey[ks + a]
                dst[s + o] = src[s + a]
                a += 1
                o += 1
            while b < hi:
                skey[kd + o] = skey[ks + b]
                dst[s + o] = src[s + b]
                b += 1
                o += 1
        in_first = not in_first
        width *= 2
    if not in_first:
        for i in range(n):
            idx[s + i] = tmp[s + i]


@njit(cache=True, inline="always")
def _rho(ds, sigma, use_table, table, tmin, tmax, tfactor):
    if use_table:
        if ds <= tmin:
            return table[0]
        if ds >= tmax:
            return table[SIGMOID_BINS - 1]
        b = int((ds - tmin) * tfactor)
        if b >= SIGMOID_BINS:
            b = SIGMOID_BINS - 1
        return table[b]
    return 1.0 / (1.0 + math.exp(sigma * ds))


@njit(cache=True, inline="always")
def _pair_terms(ds, delta, sigma, regularize, use_table, table, tmin, tmax, tfactor):
    """``(lambda, hessian)`` of one pair from ``ds = s_high - s_low`` and ``|delta NDCG|``.

    ``use_table`` follows LightGBM's arithmetic step by step (lookup sigmoid,
    same operation order).  Otherwise the exact sigmoid is fused so that one
    division serves both terms: with ``e = exp(sigma ds)``, ``c = 0.01 + |ds|``
    (1 without regularisation) and ``t = 1 / ((1 + e) c)``:
    ``lambda = -sigma delta t`` and ``hessian = sigma**2 delta e c t**2``.
    """
    if use_table:
        if regularize:
            delta /= _F32_001 + abs(ds)
        p = _rho(ds, sigma, True, table, tmin, tmax, tfactor)
        ph = p * (1.0 - p)
        pl = p * (-sigma * delta)
        ph *= sigma * sigma * delta
        return pl, ph
    e = math.exp(sigma * ds)
    if e == np.inf:
        return 0.0, 0.0
    return _fused_terms(e, ds, delta, sigma, regularize)


@njit(cache=True, inline="always")
def _fused_terms(e, ds, delta, sigma, regularize):
    """Exact-sigmoid ``(lambda, hessian)`` from a finite ``e = exp(sigma ds)`` (one division)."""
    c = _F32_001 + abs(ds) if regularize else 1.0
    t = 1.0 / ((1.0 + e) * c)
    sd = sigma * delta
    return -sd * t, sigma * sd * ((e * t) * c) * t


@njit(cache=True, inline="always")
def _softplus(x):
    """``log(1 + exp(x))`` without overflow."""
    if x > 0.0:
        return x + math.log1p(math.exp(-x))
    return math.log1p(math.exp(x))


@njit(cache=True, inline="always")
def _terms_and_loss(ds, delta, sigma, regularize, use_table, table, tmin, tmax, tfactor,
                    reverse):
    """``(lambda, hessian, cost)`` of one pair; one ``exp`` and one ``log1p`` when exact.

    Lambda and hessian are :func:`_pair_terms`'s.  The cost is the pair's
    RankNet loss ``log(1 + exp(-sigma ds))`` or, with ``reverse``, the loss of
    the reversed pair ``log(1 + exp(+sigma ds))``; the exact branch forms it
    from the same ``e = exp(sigma ds)`` as ``log1p(1 / e)`` or ``log1p(e)``.
    The cost always uses the exact sigmoid, also under the lookup table.
    """
    if use_table:
        pl, ph = _pair_terms(ds, delta, sigma, regularize, True, table, tmin, tmax, tfactor)
        return pl, ph, _softplus(sigma * ds if reverse else -sigma * ds)
    x = sigma * ds
    e = math.exp(x)
    if e == np.inf:
        return 0.0, 0.0, 0.0
    pl, ph = _fused_terms(e, ds, delta, sigma, regularize)
    if reverse:
        return pl, ph, math.log1p(e)
    return pl, ph, (-x if x < -30.0 else math.log1p(1.0 / e))


@njit(cache=True, inline="always")
def _debiased_terms(ds, delta, w, sigma, regularize, use_table, table, tmin, tmax, tfactor, s,
                    high, low, bias):
    """Debiased ``(lambda, hessian)`` of one pair of weight ``w``; adds its cost to the rows.

    ``bias = (slot, tp, tm, reverse, li_row, lj_row, qcost)``: per-row table slots
    (int64), the t-plus / t-minus tables, the cost choice (bool) and the
    per-row cost sums.  The terms of :func:`_pair_terms` are multiplied by
    ``w / (tp[slot_high] * tm[slot_low])``; the pair's cost
    ``c = log(1 + exp(-+sigma ds)) * |delta| * w`` (``+`` with ``reverse``:
    :func:`_terms_and_loss`; ``|delta|`` divided by ``0.01 + |ds|`` when
    ``regularize``) is added as
    ``li_row[high] += c / tm[slot_low]`` and ``lj_row[low] += c / tp[slot_high]``
    (``high`` / ``low``: local row indices, offset ``s``); empty cost rows
    (known propensities, nothing learned) skip the cost.
    """
    slot, tp, tm, reverse, li_row, lj_row, _ = bias
    t_high = tp[slot[s + high]]
    t_low = tm[slot[s + low]]
    wt = w / (t_high * t_low)
    if li_row.shape[0] == 0:  # no cost rows (known propensities): no cost
        pl, ph = _pair_terms(ds, delta, sigma, regularize, use_table, table, tmin, tmax, tfactor)
        return pl * wt, ph * wt
    pl, ph, loss = _terms_and_loss(ds, delta, sigma, regularize, use_table, table, tmin, tmax,
                                   tfactor, reverse)
    dreg = delta / (_F32_001 + abs(ds)) if regularize else delta
    cost = loss * dreg * w
    li_row[s + high] += cost / t_low
    lj_row[s + low] += cost / t_high
    return pl * wt, ph * wt


@njit(cache=True, inline="always")
def _add_pair(acc_l, acc_h, s, high, low, pl, ph, f32):
    if f32:
        plf = float(np.float32(pl))
        phf = float(np.float32(ph))
        acc_l[s + low] = float(np.float32(acc_l[s + low] - plf))
        acc_h[s + low] = float(np.float32(acc_h[s + low] + phf))
        acc_l[s + high] = float(np.float32(acc_l[s + high] + plf))
        acc_h[s + high] = float(np.float32(acc_h[s + high] + phf))
    else:
        acc_l[s + low] -= pl
        acc_h[s + low] += ph
        acc_l[s + high] += pl
        acc_h[s + high] += ph


@njit(cache=True, inline="always")
def _lower_bound(arr, lo, hi, value):
    # first index in [lo, hi) with arr[index] >= value (arr ascending there)
    while lo < hi:
        mid = (lo + hi) >> 1
        if arr[mid] < value:
            lo = mid + 1
        else:
            hi = mid
    return lo


@njit(cache=True, inline="always")
def _next_uniform(state):
    state = state + _GOLDEN
    z = state
    z = (z ^ (z >> np.uint64(30))) * _MIX1
    z = (z ^ (z >> np.uint64(27))) * _MIX2
    z = z ^ (z >> np.uint64(31))
    return state, float(np.int64(z >> np.uint64(11))) * _U53


# ---------------------------------------------------------------- ideal DCG

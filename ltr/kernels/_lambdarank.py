"""LambdaRank gradient kernels (numba, no validation).

Layout: flat ``float64`` scores, per-objective label and gain rows
(``labels[o, i]``, ``gains[o, i]``), ``int64`` query offsets.  One
``parallel=True`` driver loops over queries with ``prange``; every per-query
step works in place on its own slice ``[start, start + n)`` of preallocated
``O(n)`` work buffers, so nothing is allocated inside the parallel loop.

Per query and objective the gradient follows LightGBM's ``LambdarankNDCG``
(``src/objective/rank_objective.hpp``) in behaviour:

* documents are ordered by score, descending, with a *stable* sort (ties keep
  input order);
* pairs are formed between rank ``i < min(k, n - 1)`` and every rank
  ``j > i`` whose label differs, so at least one document of a pair is in the
  current top ``k``; documents scored ``-inf`` are skipped;
* ``|delta NDCG| = (gain_high - gain_low) * |d(r_high) - d(r_low)| / maxDCG@k``
  with ``d(r) = 1 / log2(2 + r)``; with ``norm`` (and not all scores equal)
  it is divided by ``0.01 + |s_high - s_low|``;
* ``rho = 1 / (1 + exp(sigma * (s_high - s_low)))``;
  ``lambda = -sigma * rho * |delta|`` and
  ``hessian = sigma**2 * rho * (1 - rho) * |delta|``, added to the high
  document and subtracted (lambda) / added (hessian) at the low one;
* with ``norm`` every gradient and hessian of the query is multiplied by
  ``log2(1 + S) / S``, ``S`` the sum of ``2 * |lambda|`` over its pairs.

``use_table`` evaluates ``rho`` through LightGBM's 2**20-bin lookup table and
``f32`` rounds every accumulation to ``float32`` in LightGBM's order; both
together reproduce LightGBM's native gradients bit for bit.

Pair weighting / sampling (``top``, ``head_weight``, ``pairs_per_doc``): a pair
whose better-ranked document is in the current top ``top`` has weight
``head_weight``, other pairs weight 1.  ``pairs_per_doc == 0`` multiplies
every pair's terms by its weight.  ``pairs_per_doc = m > 0`` lets every
document draw ``m`` partners among its eligible partners with probability
proportional to the pair weight and scales each drawn pair by
``W_d / (2 m)`` (``W_d`` the document's total eligible weight), an unbiased
estimate of the weighted all-pairs sum (partners are drawn by rejection from
a rank range, or by a scan when few documents there qualify; both exact;
``-inf`` scores are not special-cased in this mode).  Random numbers come
from a counter-based SplitMix64 stream per (query, objective), so results do
not depend on thread scheduling.

With the exact sigmoid, ``exp(sigma * (s_a - s_b))`` is formed as
``E_a / E_b`` from one ``exp`` per document (``E_x = exp(sigma (s_x -
s_max))``) whenever the query's score range allows it, and the exact
all-pairs path works on rank-ordered copies with the better-ranked
document's sums kept in registers.  Results then differ from the
one-``exp``-per-pair formula only by rounding (about 1e-15 relative).
"""

from __future__ import annotations

import math

import numpy as np
from numba import njit, prange

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
    c = _F32_001 + abs(ds) if regularize else 1.0
    t = 1.0 / ((1.0 + e) * c)
    sd = sigma * delta
    return -sd * t, sigma * sd * ((e * t) * c) * t


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
    return state, float(z >> np.uint64(11)) * _U53


# ---------------------------------------------------------------- ideal DCG


@njit(parallel=True, cache=True)
def inverse_ideal_dcg(gains, offsets, k, disc, work):
    """``1 / maxDCG@k`` per objective and query (0 where maxDCG is 0).

    ``gains`` has shape ``(n_objectives, n_rows)``; ``work`` is a float64
    scratch buffer of ``n_rows``.  Gains are summed best first, position by
    position, like LightGBM's ``CalMaxDCGAtK``.
    """
    n_obj = gains.shape[0]
    nq = offsets.shape[0] - 1
    out = np.zeros((n_obj, nq), dtype=np.float64)
    for q in prange(nq):
        s = offsets[q]
        n = offsets[q + 1] - s
        m = min(k, n)
        for o in range(n_obj):
            for i in range(n):
                work[s + i] = gains[o, s + i]
            work[s:s + n].sort()
            ret = 0.0
            for j in range(m):
                ret += disc[j] * work[s + n - 1 - j]
            if ret > 0.0:
                out[o, q] = 1.0 / ret
    return out


# ---------------------------------------------------------------- per query


@njit(cache=True)
def _all_pairs_query(scores, labels, gains, s, n, perm, acc_l, acc_h, inv_idcg, k, sigma,
                     norm, use_table, table, tmin, tmax, tfactor, disc, top, head_weight, f32):
    """All eligible pairs of one query (optionally weighted), into ``acc_*[s:s+n]``."""
    for i in range(n):
        acc_l[s + i] = 0.0
        acc_h[s + i] = 0.0
    if n < 2 or inv_idcg == 0.0:
        return
    best = scores[s + perm[s]]
    wi = n - 1
    if wi > 0 and scores[s + perm[s + wi]] == -np.inf:
        wi -= 1
    worst = scores[s + perm[s + wi]]
    regularize = norm and best != worst
    weighted = head_weight != 1.0
    sum_lambdas = 0.0
    imax = min(n - 1, k)
    for i in range(imax):
        di = perm[s + i]
        si = scores[s + di]
        if si == -np.inf:
            continue
        li = labels[s + di]
        gi = gains[s + di]
        w = head_weight if i < top else 1.0
        for j in range(i + 1, n):
            dj = perm[s + j]
            sj = scores[s + dj]
            if sj == -np.inf:
                continue
            lj = labels[s + dj]
            if li == lj:
                continue
            if li > lj:
                high = di
                low = dj
                gap = gi - gains[s + dj]
                ds = si - sj
            else:
                high = dj
                low = di
                gap = gains[s + dj] - gi
                ds = sj - si
            delta = gap * abs(disc[i] - disc[j]) * inv_idcg
            pl, ph = _pair_terms(ds, delta, sigma, regularize, use_table, table, tmin, tmax,
                                 tfactor)
            if weighted:
                pl *= w
                ph *= w
            _add_pair(acc_l, acc_h, s, high, low, pl, ph, f32)
            sum_lambdas -= 2.0 * pl
    if norm and sum_lambdas > 0.0:
        factor = math.log2(1.0 + sum_lambdas) / sum_lambdas
        for i in range(n):
            if f32:
                acc_l[s + i] = float(np.float32(acc_l[s + i] * factor))
                acc_h[s + i] = float(np.float32(acc_h[s + i] * factor))
            else:
                acc_l[s + i] *= factor
                acc_h[s + i] *= factor


@njit(cache=True, inline="always")
def _upper_bound(arr, lo, hi, value):
    # first index in [lo, hi) with arr[index] > value (arr ascending there)
    while lo < hi:
        mid = (lo + hi) >> 1
        if arr[mid] <= value:
            lo = mid + 1
        else:
            hi = mid
    return lo


@njit(cache=True)
def _all_pairs_query_exact(scores, labels, gains, s, n, perm, acc_l, acc_h, rb, inv_idcg, k,
                           sigma, norm, disc, top, head_weight):
    """Exact-sigmoid all-pairs path in rank order; ``False`` if it does not apply.

    Scores, labels and gains are copied into rank order (``rb``: five blocks of
    ``n_rows``), so the inner loop reads contiguous memory and the better-ranked
    document's sums stay in registers.  ``exp(sigma * (s_a - s_b))`` is
    ``E_a / E_b`` with ``E_x = exp(sigma * (s_x - s_max))`` precomputed per
    document: one ``exp`` per document instead of one per pair.  Queries with a
    ``-inf`` score or a score range beyond ``600 / sigma`` take the general path.
    """
    smax = scores[s + perm[s]]
    smin = scores[s + perm[s + n - 1]]
    if smin == -np.inf or sigma * (smax - smin) > 600.0:
        return False
    big = rb.shape[0] // 5
    o_s = s
    o_l = big + s
    o_g = 2 * big + s
    o_e = 3 * big + s
    o_i = 4 * big + s
    for r in range(n):
        d = perm[s + r]
        sc = scores[s + d]
        rb[o_s + r] = sc
        rb[o_l + r] = labels[s + d]
        rb[o_g + r] = gains[s + d]
        x = sigma * (sc - smax)
        rb[o_e + r] = math.exp(x)
        rb[o_i + r] = math.exp(-x)
        acc_l[s + r] = 0.0
        acc_h[s + r] = 0.0
    regularize = norm and smax != smin
    sum_lambdas = 0.0
    for i in range(min(n - 1, k)):
        si = rb[o_s + i]
        li = rb[o_l + i]
        gi = rb[o_g + i]
        ei = rb[o_e + i]
        ii = rb[o_i + i]
        di = disc[i]
        w = head_weight if i < top else 1.0
        ci = w * sigma * inv_idcg
        gl = 0.0
        gh = 0.0
        for j in range(i + 1, n):
            lj = rb[o_l + j]
            if lj == li:
                continue
            sj = rb[o_s + j]
            if li > lj:
                ds = si - sj
                gap = gi - rb[o_g + j]
                e = ei * rb[o_i + j]
                sgn = 1.0
            else:
                ds = sj - si
                gap = rb[o_g + j] - gi
                e = rb[o_e + j] * ii
                sgn = -1.0
            dd = gap * abs(di - disc[j]) * ci  # w * sigma * |delta NDCG|
            c = _F32_001 + abs(ds) if regularize else 1.0
            t = 1.0 / ((1.0 + e) * c)
            lam = -dd * t
            hes = sigma * dd * ((e * t) * c) * t
            gl += sgn * lam
            acc_l[s + j] -= sgn * lam
            gh += hes
            acc_h[s + j] += hes
            sum_lambdas -= 2.0 * lam
        acc_l[s + i] += gl
        acc_h[s + i] += gh
    factor = 1.0
    if norm and sum_lambdas > 0.0:
        factor = math.log2(1.0 + sum_lambdas) / sum_lambdas
    # back to document order (through the score / label blocks, no longer needed)
    for r in range(n):
        d = perm[s + r]
        rb[o_s + d] = acc_l[s + r] * factor
        rb[o_l + d] = acc_h[s + r] * factor
    for d in range(n):
        acc_l[s + d] = rb[o_s + d]
        acc_h[s + d] = rb[o_l + d]
    return True


@njit(cache=True, inline="always")
def _count_sorted(arr, lo, hi, value):
    # occurrences of value in the ascending arr[lo:hi]
    return _upper_bound(arr, lo, hi, value) - _lower_bound(arr, lo, hi, value)


@njit(cache=True, inline="always")
def _draw_other(labels, perm, s, a, b, count, value, u, state):
    """Uniform rank in ``[a, b)`` whose label differs from ``value`` (``count`` of them).

    ``u`` is a uniform number in ``[0, 1)`` for the first try.  Rejection
    sampling when at least a quarter of the range qualifies (fresh numbers
    after a rejection), otherwise the ``c``-th qualifying rank by a scan;
    both are exact.
    """
    width = b - a
    if 4 * count >= width:
        while True:
            x = a + min(int(u * width), width - 1)
            if labels[s + perm[s + x]] != value:
                return x, state
            state, u = _next_uniform(state)
    c = min(int(u * count), count - 1)
    for x in range(a, b):
        if labels[s + perm[s + x]] != value:
            if c == 0:
                return x, state
            c -= 1
    return b - 1, state  # unreachable when count is right


@njit(cache=True)
def _sampled_query(scores, labels, gains, s, n, perm, rank, kbuf, rb, acc_l, acc_h, inv_idcg,
                   k, sigma, norm, use_table, table, tmin, tmax, tfactor, disc, top, head_weight,
                   m, state, f32):
    """Every document draws ``m`` weighted partners; scaled to the weighted all-pairs sum.

    Document ``d`` at rank ``r`` has eligible partners at ranks ``[0, lim)``
    (``lim = n`` when ``r < k``, else ``k``) with a different label; those at
    ranks ``[0, head_end)`` weigh ``head_weight`` (``head_end = lim`` when
    ``r < top``, else ``min(top, lim)``), the rest 1.
    """
    for i in range(n):
        acc_l[s + i] = 0.0
        acc_h[s + i] = 0.0
    if n < 2 or inv_idcg == 0.0:
        return
    best = scores[s + perm[s]]
    worst = scores[s + perm[s + n - 1]]
    regularize = norm and best != worst
    big_k = min(k, n)
    big_t = min(top, big_k)
    # sorted label multisets of ranks [0, big_t) and [big_t, big_k) (same-label counts)
    for r in range(n):
        rank[s + perm[s + r]] = r
    for r in range(big_k):
        kbuf[s + r] = labels[s + perm[s + r]]
    kbuf[s:s + big_t].sort()
    kbuf[s + big_t:s + big_k].sort()
    # whole-query same-label counts (needed by the top-k documents only): k scans
    # of the query, or one sorted copy plus binary searches when k is large
    half = kbuf.shape[0] // 2
    sorted_all = big_k > 4 * math.log2(n + 1.0)
    if sorted_all:
        for i in range(n):
            kbuf[half + s + i] = labels[s + i]
        kbuf[half + s:half + s + n].sort()
    # exact sigmoid: exp(sigma * (s_a - s_b)) = E_a / E_b from one exp per document
    fast = (not use_table and worst != -np.inf and sigma * (best - worst) <= 600.0
            and rb.shape[0] >= 5)
    if fast:
        o_e = 3 * (rb.shape[0] // 5) + s
        o_i = 4 * (rb.shape[0] // 5) + s
        for d in range(n):
            x = sigma * (scores[s + d] - best)
            rb[o_e + d] = math.exp(x)
            rb[o_i + d] = math.exp(-x)
    sum_lambdas = 0.0
    for d in range(n):
        r = rank[s + d]
        ld = labels[s + d]
        lim = n if r < big_k else big_k
        if r < min(top, n):
            head_end = lim
        else:
            head_end = big_t
        c_head = _count_sorted(kbuf, s, s + big_t, ld)
        c_top = c_head + _count_sorted(kbuf, s + big_t, s + big_k, ld)
        if lim == n and sorted_all:
            same_lim = _count_sorted(kbuf, half + s, half + s + n, ld)
        elif lim == n:
            same_lim = 0
            for i in range(n):
                if labels[s + i] == ld:
                    same_lim += 1
        else:
            same_lim = c_top
        if head_end == n:
            same_head = same_lim
        elif head_end == big_k:
            same_head = c_top
        else:
            same_head = c_head
        n_head = head_end - same_head
        n_tail = (lim - head_end) - (same_lim - same_head)
        w_head = head_weight * n_head
        total = w_head + n_tail
        if total <= 0.0:
            continue
        scale = total / (2.0 * m)
        for _ in range(m):
            state, u = _next_uniform(state)
            v = u * total
            # the position of v inside the chosen region is itself uniform: reuse it
            if v < w_head:
                x, state = _draw_other(labels, perm, s, 0, head_end, n_head, ld, v / w_head,
                                       state)
            else:
                x, state = _draw_other(labels, perm, s, head_end, lim, n_tail, ld,
                                       min((v - w_head) / n_tail, 1.0), state)
            p_doc = perm[s + x]
            d_high = ld > labels[s + p_doc]
            if d_high:
                high = d
                low = p_doc
            else:
                high = p_doc
                low = d
            gap = gains[s + high] - gains[s + low]
            ds = scores[s + high] - scores[s + low]
            delta = gap * abs(disc[r] - disc[x]) * inv_idcg
            if fast:
                ex = rb[o_e + high] * rb[o_i + low]
                c = _F32_001 + abs(ds) if regularize else 1.0
                t = 1.0 / ((1.0 + ex) * c)
                sdelta = sigma * delta * scale
                pl = -sdelta * t
                ph = sigma * sdelta * ((ex * t) * c) * t
            else:
                pl, ph = _pair_terms(ds, delta, sigma, regularize, use_table, table, tmin, tmax,
                                     tfactor)
                pl *= scale
                ph *= scale
            _add_pair(acc_l, acc_h, s, high, low, pl, ph, f32)
            sum_lambdas -= 2.0 * pl
    if norm and sum_lambdas > 0.0:
        factor = math.log2(1.0 + sum_lambdas) / sum_lambdas
        for i in range(n):
            if f32:
                acc_l[s + i] = float(np.float32(acc_l[s + i] * factor))
                acc_h[s + i] = float(np.float32(acc_h[s + i] * factor))
            else:
                acc_l[s + i] *= factor
                acc_h[s + i] *= factor


# ---------------------------------------------------------------- driver


@njit(cache=True)
def _query_gradients(q, scores, labels, gains, offsets, inv_idcg, obj_weights, k, sigma, norm,
                     use_table, table, tmin, tmax, tfactor, disc, top, head_weight,
                     pairs_per_doc, seed, f32, grad, hess, perm, tmp, skey, rank, kbuf,
                     rb, acc_l, acc_h):
    s = offsets[q]
    n = offsets[q + 1] - s
    for i in range(n):
        grad[s + i] = 0.0
        hess[s + i] = 0.0
    if n < 2:
        return
    _argsort_desc(scores, s, n, perm, tmp, skey)
    for o in range(labels.shape[0]):
        w = obj_weights[o]
        if w == 0.0:
            continue
        if pairs_per_doc > 0:
            state = seed ^ (np.uint64(q) * _QUERY_MUL) ^ (np.uint64(o + 1) * _OBJ_MUL)
            state, _ = _next_uniform(state)
            _sampled_query(scores, labels[o], gains[o], s, n, perm, rank, kbuf, rb, acc_l,
                           acc_h, inv_idcg[o, q], k, sigma, norm, use_table, table, tmin, tmax,
                           tfactor, disc, top, head_weight, pairs_per_doc, state, f32)
        elif use_table or f32 or inv_idcg[o, q] == 0.0 or not _all_pairs_query_exact(
                scores, labels[o], gains[o], s, n, perm, acc_l, acc_h, rb, inv_idcg[o, q], k,
                sigma, norm, disc, top, head_weight):
            _all_pairs_query(scores, labels[o], gains[o], s, n, perm, acc_l, acc_h,
                             inv_idcg[o, q], k, sigma, norm, use_table, table, tmin, tmax,
                             tfactor, disc, top, head_weight, f32)
        for i in range(n):
            grad[s + i] += w * acc_l[s + i]
            hess[s + i] += w * acc_h[s + i]


@njit(parallel=True, cache=True)
def lambdarank_gradients(scores, labels, gains, offsets, inv_idcg, obj_weights, k, sigma, norm,
                         use_table, table, tmin, tmax, tfactor, disc, top, head_weight,
                         pairs_per_doc, seed, f32, grad, hess, perm, tmp, skey, rank, kbuf,
                         rb, acc_l, acc_h):
    """Fill ``grad`` / ``hess`` with the weighted sum over objectives of LambdaRank terms.

    ``labels`` / ``gains``: ``(n_objectives, n_rows)``; ``inv_idcg``:
    ``(n_objectives, n_queries)``; ``obj_weights``: ``(n_objectives,)``.
    ``pairs_per_doc == 0`` means all pairs.  ``seed`` is a ``uint64``.
    Work buffers (int64: ``perm, tmp, rank``; float64: ``skey, kbuf, rb,
    acc_l, acc_h``) have ``n_rows`` entries each, except ``skey`` and ``kbuf``
    (``2 * n_rows``) and ``rb`` (``5 * n_rows``).  The sampling-only ``rank``
    and ``kbuf`` may have length 1 and 2 when ``pairs_per_doc == 0``; ``rb``,
    used by the exact sigmoid only, length 5 otherwise.  Queries run in
    parallel (``prange``); each touches only its own slice of every buffer.
    """
    for q in prange(offsets.shape[0] - 1):
        _query_gradients(q, scores, labels, gains, offsets, inv_idcg, obj_weights, k, sigma,
                         norm, use_table, table, tmin, tmax, tfactor, disc, top, head_weight,
                         pairs_per_doc, seed, f32, grad, hess, perm, tmp, skey, rank, kbuf,
                         rb, acc_l, acc_h)


@njit(cache=True)
def lambdarank_gradients_serial(scores, labels, gains, offsets, inv_idcg, obj_weights, k, sigma,
                                norm, use_table, table, tmin, tmax, tfactor, disc, top,
                                head_weight, pairs_per_doc, seed, f32, grad, hess, perm, tmp,
                                skey, rank, kbuf, rb, acc_l, acc_h):
    """Single-threaded :func:`lambdarank_gradients` (no thread start-up: small inputs)."""
    for q in range(offsets.shape[0] - 1):
        _query_gradients(q, scores, labels, gains, offsets, inv_idcg, obj_weights, k, sigma,
                         norm, use_table, table, tmin, tmax, tfactor, disc, top, head_weight,
                         pairs_per_doc, seed, f32, grad, hess, perm, tmp, skey, rank, kbuf,
                         rb, acc_l, acc_h)

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
estimate of the weighted all-pairs sum.  Partners are drawn in O(1) without
rejection from rank lists grouped by dense grade id (:func:`grade_ids`,
computed once per training), one uniform number per draw; ``-inf`` scores
are not special-cased in this mode.  Random numbers come from a
counter-based SplitMix64 stream per (query, objective), so results do not
depend on thread scheduling.

Sorting: every call starts each query's sort from the order of the previous
call on the same offsets (``warm``), an insertion sort that costs
``O(n + inversions)`` (scores move little between boosting rounds) and falls
back to a merge sort when the order changed a lot; the result is the same
stable order either way.  Queries without two different grades are skipped.

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
    return state, float(np.int64(z >> np.uint64(11))) * _U53


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
def _group_by_grade(ibuf, o_gid, a, b, off, soff, n_g):
    """Ranks ``[a, b)`` grouped by grade into ``ibuf[off:]`` (rank order inside a grade).

    ``ibuf[soff + g]`` is then where grade ``g`` starts and ``ibuf[soff + n_g]``
    the list length.
    """
    for g in range(n_g + 1):
        ibuf[soff + g] = 0
    for r in range(a, b):
        ibuf[soff + ibuf[o_gid + r] + 1] += 1
    for g in range(1, n_g + 1):
        ibuf[soff + g] += ibuf[soff + g - 1]
    for r in range(a, b):
        j = soff + ibuf[o_gid + r]
        ibuf[off + ibuf[j]] = r
        ibuf[j] += 1
    for g in range(n_g, 0, -1):
        ibuf[soff + g] = ibuf[soff + g - 1]
    ibuf[soff] = 0


@njit(cache=True, inline="always")
def _pick2(u, total, w_head, ihw, o_h, st_h, c_h, d_h, o_t, st_t, c_t, d_t):
    """Index into the lists of one draw and whether the drawer is the better document.

    ``v = u * total`` picks the head list (weight ``w_head`` in all) or the
    tail list and, rescaled, a position among its ``d`` documents of another
    grade; the drawer's grade occupies ``[st, st + c)`` of a list and is
    skipped (lower grades come first, so ``j < st`` means the drawer is the
    better-labelled document).
    """
    v = u * total
    in_head = v < w_head
    jf = v * ihw if in_head else v - w_head
    dmax = d_h if in_head else d_t
    st = st_h if in_head else st_t
    cs = c_h if in_head else c_t
    off = o_h if in_head else o_t
    j = min(int(jf), dmax - 1)
    r_high = j < st
    if not r_high:
        j += cs
    return off + j, r_high


@njit(cache=True, inline="always")
def _exact_terms(r_high, sr, gr, er, dr, rec, x, disc, kc, sigma, regularize):
    """``(lambda at r, hessian, lambda of the better document)`` of one drawn pair.

    ``rec[3 x:3 x + 3]``: score, gain, ``E_x = exp(sigma (s_x - s_max))``;
    ``rho = E_low / (E_high + E_low)``: one division, no ``exp``.
    """
    x3 = np.uint64(3) * x
    sg = 1.0 if r_high else -1.0
    ex = rec[x3 + np.uint64(2)]
    e_high = er if r_high else ex
    e_low = ex if r_high else er
    ds = sg * (sr - rec[x3])
    dd = sg * (gr - rec[x3 + np.uint64(1)]) * abs(dr - disc[x]) * kc  # sigma |dNDCG| scale
    c = _F32_001 + abs(ds) if regularize else 1.0
    den = 1.0 / ((e_high + e_low) * c)
    t = e_low * den
    pl = -dd * t
    return sg * pl, sigma * dd * ((e_high * den) * c) * t, pl


@njit(cache=True, error_model="numpy")
def _sampled_query(scores, labels, gains, gid, n_grades, s, n, perm, ibuf, rb, acc_l, acc_h,
                   inv_idcg, k, sigma, norm, use_table, table, tmin, tmax, tfactor, disc, top,
                   head_weight, m, state, f32):
    """Every document draws ``m`` weighted partners; scaled to the weighted all-pairs sum.

    Works in rank space, with ``bk = min(k, n)`` and ``bt = min(top, bk)``.
    The document at rank ``r`` may pair with every rank when ``r < bk`` and
    with ranks ``[0, bk)`` otherwise (the truncation rule); a pair weighs
    ``head_weight`` when its better-ranked document is in the top ``top``,
    else 1.  So its partners are one "head" list of weight ``head_weight``
    and one "tail" list of weight 1:

    * ``r < bt``: head all ranks, no tail;
    * ``bt <= r < bk``: head ``[0, bt)``, tail ``[bt, n)``;
    * ``r >= bk``, ``r < top``: head ``[0, bk)``, no tail;
    * otherwise: head ``[0, bt)``, tail ``[bt, bk)``.

    Each list keeps its ranks grouped by grade (counting sort on the dense
    grade ids ``gid``), so a partner of another grade is drawn in O(1)
    without rejection.  Each draw is scaled by ``W / (2 m)``,
    ``W`` the document's total eligible pair weight.

    ``ibuf`` (int32, slice ``[13 s, 13 (s + n))``): grade ids in rank order,
    the five lists and their grade starts.  ``rb`` (slice ``[5 s, 5 (s + n))``):
    per-rank records (score, gain, ``exp(sigma (s - s_max))``) and interleaved
    lambda / hessian sums.  Results go to ``acc_*[s:s+n]`` in document order.
    """
    for i in range(n):
        acc_l[s + i] = 0.0
        acc_h[s + i] = 0.0
    if n < 2 or inv_idcg == 0.0 or n_grades < 2:
        return
    n_g = n_grades
    o_gid = 13 * s
    o_lst = o_gid + n
    o_rec = 5 * s
    o_acc = o_rec + 3 * n
    rec = rb[o_rec:o_acc]
    acc = rb[o_acc:o_acc + 2 * n]
    lst = ibuf[o_lst:o_lst + 4 * n]
    best = scores[s + perm[s]]
    worst = scores[s + perm[s + n - 1]]
    regularize = norm and best != worst
    exact = not use_table and not f32 and worst != -np.inf and sigma * (best - worst) <= 600.0
    bk = min(k, n)
    bt = min(top, bk)
    top_n = min(top, n)
    for r in range(n):
        d = perm[s + r]
        sc = scores[s + d]
        rec[3 * r] = sc
        rec[3 * r + 1] = gains[s + d]
        rec[3 * r + 2] = math.exp(sigma * (sc - best)) if exact else 0.0
        acc[2 * r] = 0.0
        acc[2 * r + 1] = 0.0
        ibuf[o_gid + r] = gid[s + d]
    # the lists (offsets into lst) and their grade starts
    l_all = 0
    l_b0 = n
    l_b1 = n + bt
    l_b01 = n + bk
    l_b12 = n + 2 * bk
    o_st = o_gid + 5 * n
    s_all = o_st
    s_b0 = o_st + (n_g + 1)
    s_b1 = o_st + 2 * (n_g + 1)
    s_b01 = o_st + 3 * (n_g + 1)
    s_b12 = o_st + 4 * (n_g + 1)
    _group_by_grade(ibuf, o_gid, 0, n, o_lst + l_all, s_all, n_g)
    if bt < n:
        _group_by_grade(ibuf, o_gid, 0, bt, o_lst + l_b0, s_b0, n_g)
    if bt < bk:
        _group_by_grade(ibuf, o_gid, bt, bk, o_lst + l_b1, s_b1, n_g)
        _group_by_grade(ibuf, o_gid, bt, n, o_lst + l_b12, s_b12, n_g)
    if bk < top_n:
        _group_by_grade(ibuf, o_gid, 0, bk, o_lst + l_b01, s_b01, n_g)
    hw = head_weight
    ihw = 1.0 / hw
    two_m = 2.0 * m
    kc0 = sigma * inv_idcg
    sum_lambdas = 0.0
    for r in range(n):
        g = ibuf[o_gid + r]
        # head list (weight hw) and tail list (weight 1) of this document
        if r < bt:
            off_h = l_all
            so_h = s_all
            off_t = l_all
            so_t = -1
        elif r < bk:
            off_h = l_b0
            so_h = s_b0
            off_t = l_b12
            so_t = s_b12
        elif r < top_n:
            off_h = l_b01
            so_h = s_b01
            off_t = l_b01
            so_t = -1
        else:
            off_h = l_b0
            so_h = s_b0
            off_t = l_b1
            so_t = s_b1 if bt < bk else -1
        st_h = ibuf[so_h + g]
        c_h = ibuf[so_h + g + 1] - st_h
        d_h = ibuf[so_h + n_g] - c_h
        if so_t >= 0:
            st_t = ibuf[so_t + g]
            c_t = ibuf[so_t + g + 1] - st_t
            d_t = ibuf[so_t + n_g] - c_t
        else:
            st_t = 0
            c_t = 0
            d_t = 0
        w_head = hw * d_h
        total = w_head + d_t
        if total <= 0.0:
            continue
        scale = total / two_m
        # m draws, accumulated in rank space (unsigned indices: no wraparound code)
        kc = kc0 * scale
        ur = np.uint64(r)
        sr = rec[np.uint64(3) * ur]
        gr = rec[np.uint64(3) * ur + np.uint64(1)]
        er = rec[np.uint64(3) * ur + np.uint64(2)]
        dr = disc[ur]
        cl = 0.0
        ch = 0.0
        sl = 0.0
        if exact and d_t == 0:  # one list (the common case): no list choice
            for _ in range(m):
                state, u = _next_uniform(state)
                j = min(int(u * d_h), d_h - 1)
                r_high = j < st_h
                if not r_high:
                    j += c_h
                x = np.uint64(lst[np.uint64(off_h + j)])
                lam, hes, pl = _exact_terms(r_high, sr, gr, er, dr, rec, x, disc, kc, sigma,
                                            regularize)
                cl += lam
                ch += hes
                acc[np.uint64(2) * x] -= lam
                acc[np.uint64(2) * x + np.uint64(1)] += hes
                sl -= pl
        elif exact:
            for _ in range(m):
                state, u = _next_uniform(state)
                j, r_high = _pick2(u, total, w_head, ihw, off_h, st_h, c_h, d_h, off_t, st_t,
                                   c_t, d_t)
                x = np.uint64(lst[np.uint64(j)])
                lam, hes, pl = _exact_terms(r_high, sr, gr, er, dr, rec, x, disc, kc, sigma,
                                            regularize)
                cl += lam
                ch += hes
                acc[np.uint64(2) * x] -= lam
                acc[np.uint64(2) * x + np.uint64(1)] += hes
                sl -= pl
        else:  # one sigmoid per pair: lookup table, float32 sums, -inf or wide scores
            r2 = np.uint64(2) * ur
            for _ in range(m):
                state, u = _next_uniform(state)
                j, r_high = _pick2(u, total, w_head, ihw, off_h, st_h, c_h, d_h, off_t, st_t,
                                   c_t, d_t)
                x = np.uint64(lst[np.uint64(j)])
                x3 = np.uint64(3) * x
                sg = 1.0 if r_high else -1.0
                ds = sg * (sr - rec[x3])
                delta = sg * (gr - rec[x3 + np.uint64(1)]) * abs(dr - disc[x]) * inv_idcg
                pl, ph = _pair_terms(ds, delta, sigma, regularize, use_table, table, tmin, tmax,
                                     tfactor)
                pl *= scale
                ph *= scale
                lam = sg * pl
                x2 = np.uint64(2) * x
                if f32:
                    plf = float(np.float32(lam))
                    phf = float(np.float32(ph))
                    acc[x2] = float(np.float32(acc[x2] - plf))
                    acc[x2 + np.uint64(1)] = float(np.float32(acc[x2 + np.uint64(1)] + phf))
                    acc[r2] = float(np.float32(acc[r2] + plf))
                    acc[r2 + np.uint64(1)] = float(np.float32(acc[r2 + np.uint64(1)] + phf))
                else:
                    acc[x2] -= lam
                    acc[x2 + np.uint64(1)] += ph
                    acc[r2] += lam
                    acc[r2 + np.uint64(1)] += ph
                sl -= pl
        acc[np.uint64(2) * ur] += cl
        acc[np.uint64(2) * ur + np.uint64(1)] += ch
        sum_lambdas += 2.0 * sl
    factor = 1.0
    if norm and sum_lambdas > 0.0:
        factor = math.log2(1.0 + sum_lambdas) / sum_lambdas
    for r in range(n):
        d = perm[s + r]
        if f32:
            acc_l[s + d] = float(np.float32(acc[2 * r] * factor))
            acc_h[s + d] = float(np.float32(acc[2 * r + 1] * factor))
        else:
            acc_l[s + d] = acc[2 * r] * factor
            acc_h[s + d] = acc[2 * r + 1] * factor


@njit(cache=True)
def _sort_query(scores, s, n, perm, tmp, skey, warm):
    """Stable descending order of ``scores[s:s+n]`` into ``perm[s:s+n]``.

    With ``warm``, ``perm[s:s+n]`` holds a permutation (the previous round's
    order): an insertion sort on the key ``(-score, index)`` then costs
    ``O(n + inversions)``, which is small because scores change little from
    one boosting round to the next.  Past a budget of moves it falls back to
    :func:`_argsort_desc` from scratch.  The result is the same either way
    (the key is a total order).
    """
    if not warm:
        _argsort_desc(scores, s, n, perm, tmp, skey)
        return
    for i in range(n):
        skey[s + i] = -scores[s + perm[s + i]]
    budget = 8 * n + 32
    moves = 0
    for i in range(1, n):
        kv = skey[s + i]
        v = perm[s + i]
        j = i - 1
        while j >= 0:
            kj = skey[s + j]
            if kj < kv or (kj == kv and perm[s + j] < v):
                break
            skey[s + j + 1] = kj
            perm[s + j + 1] = perm[s + j]
            j -= 1
        skey[s + j + 1] = kv
        perm[s + j + 1] = v
        moves += i - 1 - j
        if moves > budget:
            _argsort_desc(scores, s, n, perm, tmp, skey)
            return


@njit(parallel=True, cache=True)
def grade_ids(labels, offsets, work):
    """Dense grade ids per query: ``(gid, n_grades)``.

    ``gid[o, i]`` is the rank of ``labels[o, i]`` among the distinct labels of
    its query (0 = lowest), ``n_grades[o, q]`` the number of distinct labels.
    ``work`` is a float64 scratch buffer of ``n_rows``.
    """
    n_obj = labels.shape[0]
    nq = offsets.shape[0] - 1
    gid = np.zeros(labels.shape, dtype=np.int32)
    n_grades = np.zeros((n_obj, nq), dtype=np.int64)
    for q in prange(nq):
        s = offsets[q]
        n = offsets[q + 1] - s
        for o in range(n_obj):
            for i in range(n):
                work[s + i] = labels[o, s + i]
            work[s:s + n].sort()
            u = 0
            for i in range(n):
                if i == 0 or work[s + i] != work[s + u - 1]:
                    work[s + u] = work[s + i]
                    u += 1
            n_grades[o, q] = u
            for i in range(n):
                gid[o, s + i] = _lower_bound(work, s, s + u, labels[o, s + i]) - s
    return gid, n_grades


# ---------------------------------------------------------------- driver


@njit(cache=True)
def _query_gradients(q, scores, labels, gains, gids, n_grades, offsets, inv_idcg, obj_weights, k,
                     sigma, norm, use_table, table, tmin, tmax, tfactor, disc, top, head_weight,
                     pairs_per_doc, seed, f32, warm, grad, hess, perm, tmp, skey, ibuf, rb, acc_l,
                     acc_h):
    s = offsets[q]
    n = offsets[q + 1] - s
    for i in range(n):
        grad[s + i] = 0.0
        hess[s + i] = 0.0
    if not warm:
        for i in range(n):
            perm[s + i] = i
    if n < 2:
        return
    active = False
    for o in range(labels.shape[0]):
        if obj_weights[o] != 0.0 and inv_idcg[o, q] != 0.0 and n_grades[o, q] >= 2:
            active = True
    if not active:  # no pair with different grades: zero gradient, no sort needed
        return
    _sort_query(scores, s, n, perm, tmp, skey, warm)
    for o in range(labels.shape[0]):
        w = obj_weights[o]
        if w == 0.0 or inv_idcg[o, q] == 0.0 or n_grades[o, q] < 2:
            continue
        if pairs_per_doc > 0:
            state = seed ^ (np.uint64(q) * _QUERY_MUL) ^ (np.uint64(o + 1) * _OBJ_MUL)
            state, _ = _next_uniform(state)
            _sampled_query(scores, labels[o], gains[o], gids[o], n_grades[o, q], s, n, perm,
                           ibuf, rb, acc_l, acc_h, inv_idcg[o, q], k, sigma, norm, use_table,
                           table, tmin, tmax, tfactor, disc, top, head_weight, pairs_per_doc,
                           state, f32)
        elif use_table or f32 or not _all_pairs_query_exact(
                scores, labels[o], gains[o], s, n, perm, acc_l, acc_h, rb, inv_idcg[o, q], k,
                sigma, norm, disc, top, head_weight):
            _all_pairs_query(scores, labels[o], gains[o], s, n, perm, acc_l, acc_h,
                             inv_idcg[o, q], k, sigma, norm, use_table, table, tmin, tmax,
                             tfactor, disc, top, head_weight, f32)
        for i in range(n):
            grad[s + i] += w * acc_l[s + i]
            hess[s + i] += w * acc_h[s + i]


@njit(parallel=True, cache=True)
def lambdarank_gradients(scores, labels, gains, gids, n_grades, offsets, inv_idcg, obj_weights,
                         k, sigma, norm, use_table, table, tmin, tmax, tfactor, disc, top,
                         head_weight, pairs_per_doc, seed, f32, warm, grad, hess, perm, tmp, skey,
                         ibuf, rb, acc_l, acc_h):
    """Fill ``grad`` / ``hess`` with the weighted sum over objectives of LambdaRank terms.

    ``labels`` / ``gains``: ``(n_objectives, n_rows)``; ``gids`` (int32) and
    ``n_grades`` from :func:`grade_ids`; ``inv_idcg``:
    ``(n_objectives, n_queries)``; ``obj_weights``: ``(n_objectives,)``.
    ``pairs_per_doc == 0`` means all pairs.  ``seed`` is a ``uint64``.
    ``warm``: ``perm`` holds, per query, the order of a previous call on the
    same offsets (any permutation will do; results do not depend on it), used
    as the starting point of the sort; otherwise ``perm`` is rebuilt.
    Work buffers (int64: ``perm, tmp``; float64: ``skey, rb, acc_l, acc_h``;
    int32: ``ibuf``) have ``n_rows`` entries each, except ``skey``
    (``2 * n_rows``), ``rb`` (``5 * n_rows``) and ``ibuf`` (``13 * n_rows``).
    ``ibuf`` may have length 1 when ``pairs_per_doc == 0`` and ``rb`` length 5
    when neither sampling nor the exact sigmoid is used.  Queries run in
    parallel (``prange``); each touches only its own slice of every buffer.
    """
    for q in prange(offsets.shape[0] - 1):
        _query_gradients(q, scores, labels, gains, gids, n_grades, offsets, inv_idcg,
                         obj_weights, k, sigma, norm, use_table, table, tmin, tmax, tfactor,
                         disc, top, head_weight, pairs_per_doc, seed, f32, warm, grad, hess,
                         perm, tmp, skey, ibuf, rb, acc_l, acc_h)


@njit(cache=True)
def lambdarank_gradients_serial(scores, labels, gains, gids, n_grades, offsets, inv_idcg,
                                obj_weights, k, sigma, norm, use_table, table, tmin, tmax,
                                tfactor, disc, top, head_weight, pairs_per_doc, seed, f32, warm,
                                grad, hess, perm, tmp, skey, ibuf, rb, acc_l, acc_h):
    """Single-threaded :func:`lambdarank_gradients` (no thread start-up: small inputs)."""
    for q in range(offsets.shape[0] - 1):
        _query_gradients(q, scores, labels, gains, gids, n_grades, offsets, inv_idcg,
                         obj_weights, k, sigma, norm, use_table, table, tmin, tmax, tfactor,
                         disc, top, head_weight, pairs_per_doc, seed, f32, warm, grad, hess,
                         perm, tmp, skey, ibuf, rb, acc_l, acc_h)

"""Sampled-pair LambdaRank for one query (numba, no validation).

``pairs_per_doc = m > 0``: every document draws ``m`` partners among its
eligible partners with probability proportional to the pair weight, in O(1)
without rejection from rank lists grouped by dense grade id; see
:mod:`ltr.kernels._lambdarank` for the estimator and the layout.
"""

from __future__ import annotations

import math

import numpy as np
from numba import njit

from ltr.kernels._pair_math import (
    _F32_001,
    _debiased_terms,
    _next_uniform,
    _pair_terms,
)


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
def _pick1(u, off, st, cs, d):
    """:func:`_pick2` for one list (no list choice): ``v = u * d``, no rescaling."""
    j = min(int(u * d), d - 1)
    r_high = j < st
    if not r_high:
        j += cs
    return off + j, r_high


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
                   head_weight, m, state, f32, bias):
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

    ``bias`` is ``None`` (the debiasing code is then compiled out) or the
    tuple of :func:`ltr.kernels._pair_math._debiased_terms`: every draw then
    takes the one-sigmoid-per-pair loop (the same partners as without
    debiasing); empty cost rows (known propensities) skip the pair costs.
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
    fused = exact and bias is None  # rho from the per-rank exp(sigma (s - s_max))
    bk = min(k, n)
    bt = min(top, bk)
    top_n = min(top, n)
    for r in range(n):
        d = perm[s + r]
        sc = scores[s + d]
        rec[3 * r] = sc
        rec[3 * r + 1] = gains[s + d]
        rec[3 * r + 2] = math.exp(sigma * (sc - best)) if fused else 0.0
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
        if fused and d_t == 0:  # one list (the common case): no list choice
            for _ in range(m):
                state, u = _next_uniform(state)
                j, r_high = _pick1(u, off_h, st_h, c_h, d_h)
                x = np.uint64(lst[np.uint64(j)])
                lam, hes, pl = _exact_terms(r_high, sr, gr, er, dr, rec, x, disc, kc, sigma,
                                            regularize)
                cl += lam
                ch += hes
                acc[np.uint64(2) * x] -= lam
                acc[np.uint64(2) * x + np.uint64(1)] += hes
                sl -= pl
        elif fused:
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
        else:  # one sigmoid per pair: lookup table, float32 sums, -inf or wide scores, debiasing
            r2 = np.uint64(2) * ur
            for _ in range(m):
                state, u = _next_uniform(state)
                if bias is not None and exact and d_t == 0:  # the partner of the fused loop
                    j, r_high = _pick1(u, off_h, st_h, c_h, d_h)
                else:
                    j, r_high = _pick2(u, total, w_head, ihw, off_h, st_h, c_h, d_h, off_t,
                                       st_t, c_t, d_t)
                x = np.uint64(lst[np.uint64(j)])
                x3 = np.uint64(3) * x
                sg = 1.0 if r_high else -1.0
                ds = sg * (sr - rec[x3])
                delta = sg * (gr - rec[x3 + np.uint64(1)]) * abs(dr - disc[x]) * inv_idcg
                if bias is None:
                    pl, ph = _pair_terms(ds, delta, sigma, regularize, use_table, table, tmin,
                                         tmax, tfactor)
                    pl *= scale
                    ph *= scale
                else:
                    d_r = perm[s + r]
                    d_x = perm[s + lst[np.uint64(j)]]
                    pl, ph = _debiased_terms(ds, delta, scale, sigma, regularize, use_table,
                                             table, tmin, tmax, tfactor, s,
                                             d_r if r_high else d_x, d_x if r_high else d_r,
                                             bias)
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

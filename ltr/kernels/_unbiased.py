r"""Position-debiased LambdaRank kernels: Unbiased LambdaMART and IPS pairs (numba, no validation).

Same layout, pair rule, sort, sampling stream and normalisation as
:mod:`ltr.kernels._lambdarank` (one objective, one label row), plus per-row
position *slots* (``slot[i]``: index into the bias tables of row ``i``'s
display position) and two bias tables ``tp`` (t-plus, indexed by the slot of
the more relevant document of a pair) and ``tm`` (t-minus, slot of the less
relevant one).  Every pair's lambda and hessian are divided by
``tp[slot_high] * tm[slot_low]`` before LightGBM's per-query normalisation.

Each pair also adds its cost

.. math::

    c = \log(1 + e^{-\sigma (s_{high} - s_{low})}) \, |\Delta| \, w,

(the RankNet loss of the pair times its score-regularised ``|delta NDCG|``
and its pair weight ``w``: head weight and sampling scale) to two per-row
sums: ``li_row[high] += c / tm[slot_low]`` and
``lj_row[low] += c / tp[slot_high]``.  Queries are disjoint, so the parallel
loop writes disjoint slices; the caller reduces the rows per position
(``np.bincount``), which keeps the result independent of thread scheduling.

The cost is always formed with the exact sigmoid (also under the LightGBM
lookup table), in ``float64``.
"""

from __future__ import annotations

import math

import numpy as np
from numba import njit, prange

from ltr.kernels._lambdarank import _sort_query
from ltr.kernels._pair_math import (
    _F32_001,
    _OBJ_MUL,
    _QUERY_MUL,
    _add_pair,
    _next_uniform,
    _pair_terms,
)
from ltr.kernels._sampled import _group_by_grade, _pick2


@njit(cache=True, inline="always")
def _softplus(x):
    """``log(1 + exp(x))`` without overflow."""
    if x > 0.0:
        return x + math.log1p(math.exp(-x))
    return math.log1p(math.exp(x))


@njit(cache=True, inline="always")
def _terms_and_loss(ds, delta, sigma, regularize, use_table, table, tmin, tmax, tfactor):
    """``(lambda, hessian, log(1 + exp(-sigma ds)))`` of one pair; one ``exp`` when exact.

    The exact branch is :func:`_pair_terms`'s, with the loss formed from the
    same ``e = exp(sigma ds)`` as ``log1p(1 / e)``.
    """
    if use_table:
        pl, ph = _pair_terms(ds, delta, sigma, regularize, True, table, tmin, tmax, tfactor)
        return pl, ph, _softplus(-sigma * ds)
    x = sigma * ds
    e = math.exp(x)
    if e == np.inf:
        return 0.0, 0.0, 0.0
    loss = -x if x < -30.0 else math.log1p(1.0 / e)
    c = _F32_001 + abs(ds) if regularize else 1.0
    t = 1.0 / ((1.0 + e) * c)
    sd = sigma * delta
    return -sd * t, sigma * sd * ((e * t) * c) * t, loss


@njit(cache=True, inline="always")
def _add_costs(li_row, lj_row, s, high, low, cost, t_high, t_low):
    li_row[s + high] += cost / t_low
    lj_row[s + low] += cost / t_high


@njit(cache=True)
def _unbiased_all_pairs(scores, labels, gains, s, n, perm, grad, hess, inv_idcg, k, sigma, norm,
                        use_table, table, tmin, tmax, tfactor, disc, top, head_weight, f32, slot,
                        tp, tm, li_row, lj_row):
    """All eligible pairs of one query, debiased, into ``grad/hess[s:s+n]`` and the cost rows."""
    best = scores[s + perm[s]]
    wi = n - 1
    if wi > 0 and scores[s + perm[s + wi]] == -np.inf:
        wi -= 1
    worst = scores[s + perm[s + wi]]
    regularize = norm and best != worst
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
            pl, ph, loss = _terms_and_loss(ds, delta, sigma, regularize, use_table, table, tmin,
                                           tmax, tfactor)
            t_high = tp[slot[s + high]]
            t_low = tm[slot[s + low]]
            wt = w / (t_high * t_low)
            pl *= wt
            ph *= wt
            _add_pair(grad, hess, s, high, low, pl, ph, f32)
            sum_lambdas -= 2.0 * pl
            dreg = delta / (_F32_001 + abs(ds)) if regularize else delta
            _add_costs(li_row, lj_row, s, high, low, loss * dreg * w, t_high, t_low)
    if norm and sum_lambdas > 0.0:
        factor = math.log2(1.0 + sum_lambdas) / sum_lambdas
        for i in range(n):
            if f32:
                grad[s + i] = float(np.float32(grad[s + i] * factor))
                hess[s + i] = float(np.float32(hess[s + i] * factor))
            else:
                grad[s + i] *= factor
                hess[s + i] *= factor


@njit(cache=True, error_model="numpy")
def _unbiased_sampled(scores, gains, gid, n_grades, s, n, perm, ibuf, rb, grad, hess, inv_idcg,
                      k, sigma, norm, use_table, table, tmin, tmax, tfactor, disc, top,
                      head_weight, m, state, f32, slot, tp, tm, li_row, lj_row):
    """Draw ``m`` partners per document (those of ``_sampled_query``) and add debiased pairs.

    The partner lists, their weights, the random stream and the ``W / (2 m)``
    scale are those of :func:`ltr.kernels._sampled._sampled_query`, so with
    ``tp = tm = 1`` the same pairs are drawn; each pair's terms go through
    :func:`_pair_terms` (one sigmoid per draw).
    """
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
    direct = not use_table and not f32 and worst != -np.inf and sigma * (best - worst) <= 600.0
    bk = min(k, n)
    bt = min(top, bk)
    top_n = min(top, n)
    for r in range(n):
        d = perm[s + r]
        rec[3 * r] = scores[s + d]
        rec[3 * r + 1] = gains[s + d]
        rec[3 * r + 2] = 0.0
        acc[2 * r] = 0.0
        acc[2 * r + 1] = 0.0
        ibuf[o_gid + r] = gid[s + d]
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
    sum_lambdas = 0.0
    for r in range(n):
        g = ibuf[o_gid + r]
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
        sr = rec[3 * r]
        gr = rec[3 * r + 1]
        dr = disc[r]
        doc_r = perm[s + r]
        sl = 0.0
        for _ in range(m):
            state, u = _next_uniform(state)
            if direct and d_t == 0:
                j = min(int(u * d_h), d_h - 1)
                r_high = j < st_h
                if not r_high:
                    j += c_h
                j += off_h
            else:
                j, r_high = _pick2(u, total, w_head, ihw, off_h, st_h, c_h, d_h, off_t, st_t,
                                   c_t, d_t)
            x = lst[j]
            doc_x = perm[s + x]
            sg = 1.0 if r_high else -1.0
            ds = sg * (sr - rec[3 * x])
            delta = sg * (gr - rec[3 * x + 1]) * abs(dr - disc[x]) * inv_idcg
            pl, ph, loss = _terms_and_loss(ds, delta, sigma, regularize, use_table, table, tmin,
                                           tmax, tfactor)
            high = doc_r if r_high else doc_x
            low = doc_x if r_high else doc_r
            t_high = tp[slot[s + high]]
            t_low = tm[slot[s + low]]
            wt = scale / (t_high * t_low)
            pl *= wt
            ph *= wt
            lam = sg * pl
            if f32:
                plf = float(np.float32(lam))
                phf = float(np.float32(ph))
                acc[2 * x] = float(np.float32(acc[2 * x] - plf))
                acc[2 * x + 1] = float(np.float32(acc[2 * x + 1] + phf))
                acc[2 * r] = float(np.float32(acc[2 * r] + plf))
                acc[2 * r + 1] = float(np.float32(acc[2 * r + 1] + phf))
            else:
                acc[2 * x] -= lam
                acc[2 * x + 1] += ph
                acc[2 * r] += lam
                acc[2 * r + 1] += ph
            sl -= pl
            dreg = delta / (_F32_001 + abs(ds)) if regularize else delta
            _add_costs(li_row, lj_row, s, high, low, loss * dreg * scale, t_high, t_low)
        sum_lambdas += 2.0 * sl
    factor = 1.0
    if norm and sum_lambdas > 0.0:
        factor = math.log2(1.0 + sum_lambdas) / sum_lambdas
    for r in range(n):
        d = perm[s + r]
        if f32:
            grad[s + d] = float(np.float32(acc[2 * r] * factor))
            hess[s + d] = float(np.float32(acc[2 * r + 1] * factor))
        else:
            grad[s + d] = acc[2 * r] * factor
            hess[s + d] = acc[2 * r + 1] * factor


@njit(cache=True)
def _unbiased_query(q, scores, labels, gains, gid, n_grades, offsets, inv_idcg, k, sigma, norm,
                    use_table, table, tmin, tmax, tfactor, disc, top, head_weight, pairs_per_doc,
                    seed, f32, warm, slot, tp, tm, grad, hess, li_row, lj_row, perm, tmp, skey,
                    ibuf, rb):
    s = offsets[q]
    n = offsets[q + 1] - s
    for i in range(n):
        grad[s + i] = 0.0
        hess[s + i] = 0.0
        li_row[s + i] = 0.0
        lj_row[s + i] = 0.0
    if not warm:
        for i in range(n):
            perm[s + i] = i
    if n < 2 or inv_idcg[q] == 0.0 or n_grades[q] < 2:
        return
    _sort_query(scores, s, n, perm, tmp, skey, warm)
    if pairs_per_doc > 0:
        state = seed ^ (np.uint64(q) * _QUERY_MUL) ^ _OBJ_MUL  # objective 0 of the plain stream
        state, _ = _next_uniform(state)
        _unbiased_sampled(scores, gains, gid, n_grades[q], s, n, perm, ibuf, rb, grad, hess,
                          inv_idcg[q], k, sigma, norm, use_table, table, tmin, tmax, tfactor,
                          disc, top, head_weight, pairs_per_doc, state, f32, slot, tp, tm,
                          li_row, lj_row)
    else:
        _unbiased_all_pairs(scores, labels, gains, s, n, perm, grad, hess, inv_idcg[q], k, sigma,
                            norm, use_table, table, tmin, tmax, tfactor, disc, top, head_weight,
                            f32, slot, tp, tm, li_row, lj_row)


@njit(parallel=True, cache=True)
def unbiased_gradients(scores, labels, gains, gid, n_grades, offsets, inv_idcg, k, sigma, norm,
                       use_table, table, tmin, tmax, tfactor, disc, top, head_weight,
                       pairs_per_doc, seed, f32, warm, slot, tp, tm, grad, hess, li_row, lj_row,
                       perm, tmp, skey, ibuf, rb):
    """Debiased LambdaRank ``grad``/``hess`` and per-row pair costs ``li_row``/``lj_row``.

    One objective: ``labels``, ``gains`` (float64) and ``gid`` (int32) are
    1-D over rows, ``n_grades`` and ``inv_idcg`` 1-D over queries.  ``slot``
    (int64 per row) indexes ``tp`` / ``tm`` (float64, > 0).  The other
    arguments and work buffers are those of
    :func:`ltr.kernels._lambdarank.lambdarank_gradients`.
    """
    for q in prange(offsets.shape[0] - 1):
        _unbiased_query(q, scores, labels, gains, gid, n_grades, offsets, inv_idcg, k, sigma,
                        norm, use_table, table, tmin, tmax, tfactor, disc, top, head_weight,
                        pairs_per_doc, seed, f32, warm, slot, tp, tm, grad, hess, li_row, lj_row,
                        perm, tmp, skey, ibuf, rb)


@njit(cache=True)
def unbiased_gradients_serial(scores, labels, gains, gid, n_grades, offsets, inv_idcg, k, sigma,
                              norm, use_table, table, tmin, tmax, tfactor, disc, top,
                              head_weight, pairs_per_doc, seed, f32, warm, slot, tp, tm, grad,
                              hess, li_row, lj_row, perm, tmp, skey, ibuf, rb):
    """Single-threaded :func:`unbiased_gradients` (no thread start-up: small inputs)."""
    for q in range(offsets.shape[0] - 1):
        _unbiased_query(q, scores, labels, gains, gid, n_grades, offsets, inv_idcg, k, sigma,
                        norm, use_table, table, tmin, tmax, tfactor, disc, top, head_weight,
                        pairs_per_doc, seed, f32, warm, slot, tp, tm, grad, hess, li_row, lj_row,
                        perm, tmp, skey, ibuf, rb)

"""Exact-sigmoid all-pairs LambdaRank of one query with position debiasing (numba).

The rank-order fast path of :func:`ltr.kernels._lambdarank._all_pairs_query_exact`
extended by the debiasing of :func:`ltr.kernels._pair_math._debiased_terms`
(Unbiased LambdaMART and IPS pairs; the rule is in
:mod:`ltr.objectives._unbiased`): the same pairs, lambdas, hessians and pair
costs, computed with

* one ``exp`` per document instead of one per pair (``exp(sigma (s_a -
  s_b)) = E_a / E_b``, ``E_x = exp(sigma (s_x - s_max))``), and the pair's
  cost from the same ratios: ``log(1 + exp(+-x)) = max(+-x, 0) + log(1 +
  exp(-|x|))``, the second term for all partners of a rank in one vectorised
  pass (:func:`_log1p_min_ratio`: a series instead of libm, whose call stops
  LLVM's vectoriser; the pass also covers equal-label partners, about half
  of them, and still costs less than a libm logarithm per pair);
* no pair cost at all when the cost rows are empty (known propensities);
* the bias tables read once per document (the reciprocals of ``t+`` and
  ``t-`` of its slot, in rank order) instead of twice per pair, so the
  division by ``t+ t-`` and the cost's division by ``t-`` / ``t+`` become
  products;
* scores, labels, gains and the per-row cost sums in rank order (contiguous
  reads, the better-ranked document's sums kept in registers), written back
  to document order once per query.

Results differ from the one-``exp``-per-pair general path only by rounding
(about 1e-15 relative; pair costs about 1e-15 plus the ``E_a / E_b``
product's rounding, at most ``600 * 2**-52`` relative at the widest score
range).  No validation, no ``ltr`` imports.
"""

from __future__ import annotations

import math

import numpy as np
from numba import njit

from ltr.kernels._pair_math import _F32_001

_SQRT2_M1 = math.sqrt(2.0) - 1.0
_HALF_LN2 = 0.5 * math.log(2.0)


@njit(cache=True, inline="always", error_model="numpy")
def _log1p_unit(z):
    """``log(1 + z)`` for ``0 <= z <= 1`` (a little above 1 allowed), branch-free and vectorisable.

    ``log(1 + z) = 2 atanh(w)`` with ``w = z / (2 + z)``; above ``sqrt(2) - 1``
    the argument is first divided by ``sqrt(2)`` (``w = (z - (sqrt 2 - 1)) /
    (z + sqrt 2 + 1)``, plus ``log(2) / 2``), so ``|w| <= 0.1716`` and the ten
    odd terms of the series leave a truncation error below ``1e-17``; measured
    at most ``4.5e-16`` relative from ``log1p`` over ``[1e-300, 1]``.  No
    call to libm: LLVM vectorises the loop it sits in (numba has no SVML).
    """
    big = z > _SQRT2_M1
    w = (z - _SQRT2_M1) / (z + (2.0 + _SQRT2_M1)) if big else z / (2.0 + z)
    w2 = w * w
    p = 1.0 / 19.0
    p = p * w2 + 1.0 / 17.0
    p = p * w2 + 1.0 / 15.0
    p = p * w2 + 1.0 / 13.0
    p = p * w2 + 1.0 / 11.0
    p = p * w2 + 1.0 / 9.0
    p = p * w2 + 1.0 / 7.0
    p = p * w2 + 1.0 / 5.0
    p = p * w2 + 1.0 / 3.0
    p = p * w2 + 1.0
    return (_HALF_LN2 if big else 0.0) + 2.0 * w * p


@njit(cache=True, error_model="numpy")
def _log1p_min_ratio(rb, o_e, o_i, i, n, ei, ii, out):
    """``out[j] = log(1 + min(e_ij, 1 / e_ij))`` for ranks ``i < j < n``, one vector pass.

    ``e_ij = exp(sigma (s_i - s_j))`` is ``E_i / E_j`` and its reciprocal
    ``E_j / E_i`` (``rb[o_e + r]`` holds ``E_r``, ``rb[o_i + r]`` ``1 / E_r``;
    ``ei``, ``ii`` those of rank ``i``), so the minimum is ``exp(-sigma
    |s_i - s_j|) <= 1``.  Every pair cost is that logarithm plus
    ``max(+-sigma ds, 0)``: ``log(1 + e) = max(log e, 0) + log(1 + min(e, 1 / e))``.
    Unsigned indices (no negative-index wraparound code) and
    :func:`_log1p_unit` let LLVM vectorise the loop (about 0.9 ns per
    partner against about 2.5 ns for a libm logarithm per pair, measured).
    """
    ue = np.uint64(o_e)
    ui = np.uint64(o_i)
    for j in range(np.uint64(i + 1), np.uint64(n)):
        out[j] = _log1p_unit(min(ei * rb[ui + j], rb[ue + j] * ii))


@njit(cache=True)
def _all_pairs_query_exact_debiased(scores, labels, gains, s, n, perm, acc_l, acc_h, rb, skey,
                                    tmp, inv_idcg, k, sigma, norm, disc, top, head_weight, bias):
    """Debiased exact-sigmoid all pairs of one query in rank order; ``False`` if it does not apply.

    Same contract as :func:`ltr.kernels._lambdarank._all_pairs_query` with
    ``bias = (slot, tp, tm, reverse, li_row, lj_row)`` and the exact sigmoid:
    ``acc_l`` / ``acc_h`` receive the (normalised) sums of the query in
    document order, ``li_row`` / ``lj_row`` (zero on entry) the pair costs;
    empty cost rows (known propensities: nothing is learned) skip the costs.
    ``rb`` (five blocks of ``n_rows``), ``skey`` (two halves of
    ``n_rows``) and ``tmp`` (int64, ``n_rows``: the sort's, free once it is
    done; viewed as float64 for the pair costs' logarithms) are scratch; the
    sort must be done.  Queries with a ``-inf``
    score or a score range beyond ``600 / sigma`` return ``False`` untouched
    (the general path then takes them).
    """
    slot, tp, tm, reverse, li_row, lj_row = bias
    smax = scores[s + perm[s]]
    smin = scores[s + perm[s + n - 1]]
    if smin == -np.inf or sigma * (smax - smin) > 600.0:
        return False
    big = rb.shape[0] // 5
    half = skey.shape[0] // 2
    o_s = s
    o_l = big + s
    o_g = 2 * big + s
    o_e = 3 * big + s
    o_i = 4 * big + s
    o_p = s  # 1 / t+ of the rank's slot
    o_m = half + s  # 1 / t- of the rank's slot
    for r in range(n):
        d = perm[s + r]
        sc = scores[s + d]
        rb[o_s + r] = sc
        rb[o_l + r] = labels[s + d]
        rb[o_g + r] = gains[s + d]
        x = sigma * (sc - smax)
        rb[o_e + r] = math.exp(x)
        rb[o_i + r] = math.exp(-x)
        sl = slot[s + d]
        skey[o_p + r] = 1.0 / tp[sl]
        skey[o_m + r] = 1.0 / tm[sl]
        acc_l[s + r] = 0.0
        acc_h[s + r] = 0.0
    regularize = norm and smax != smin
    with_cost = li_row.shape[0] > 0
    lz = tmp.view(np.float64)[s:s + n]  # log(1 + exp(-sigma |s_i - s_j|)) of the row's pairs
    sum_lambdas = 0.0
    for i in range(min(n - 1, k)):
        si = rb[o_s + i]
        li = rb[o_l + i]
        gi = rb[o_g + i]
        ei = rb[o_e + i]
        ii = rb[o_i + i]
        di = disc[i]
        w = head_weight if i < top else 1.0
        wc = w * inv_idcg  # pair weight and 1 / maxDCG, common to the pairs of i
        # sigma |delta| w / (t+ t-) = |gap d| * c_i * (1 / t of j): i high (c_hi) or low (c_lo)
        c_hi = sigma * wc * skey[o_p + i]
        c_lo = sigma * wc * skey[o_m + i]
        p_i = wc * skey[o_p + i]  # the cost's / t+ when i is the more relevant document
        m_i = wc * skey[o_m + i]
        gl = 0.0
        gh = 0.0
        ci_sum = 0.0  # cost sums of document i (before wc): more relevant (li), less (lj)
        cj_sum = 0.0
        if with_cost:
            _log1p_min_ratio(rb, o_e, o_i, i, n, ei, ii, lz)
        for j in range(i + 1, n):
            lj = rb[o_l + j]
            if lj == li:
                continue
            # selects, not branches: which document is the better one is data-dependent
            hi = li > lj
            sj = rb[o_s + j]
            gj = rb[o_g + j]
            ds = si - sj if hi else sj - si
            gap = gi - gj if hi else gj - gi
            e = ei * rb[o_i + j] if hi else rb[o_e + j] * ii
            f_j = skey[o_m + j] if hi else skey[o_p + j]
            cf = c_hi if hi else c_lo
            sg = 1.0 if hi else -1.0
            base = gap * abs(di - disc[j])  # |delta NDCG| * maxDCG
            c = _F32_001 + abs(ds) if regularize else 1.0
            t = 1.0 / ((1.0 + e) * c)
            dd = base * cf * f_j  # sigma |delta| w / (t+ t-)
            lam = -dd * t
            hes = sigma * dd * ((e * t) * c) * t
            gh += hes
            acc_h[s + j] += hes
            sum_lambdas -= 2.0 * lam
            gl += sg * lam
            acc_l[s + j] -= sg * lam
            if with_cost:  # log(1 + exp(+-sigma ds)) = max(+-sigma ds, 0) + lz[j]
                x = sigma * ds if reverse else -sigma * ds
                u = (max(x, 0.0) + lz[j]) * base * ((1.0 + e) * t)  # loss |dNDCG| maxDCG / c
                if hi:  # i high, j low: li[i] += cost / t-[j], lj[j] += cost / t+[i]
                    ci_sum += u * f_j
                    lj_row[s + j] += u * p_i
                else:  # j high, i low
                    li_row[s + j] += u * m_i
                    cj_sum += u * f_j
        acc_l[s + i] += gl
        acc_h[s + i] += gh
        if with_cost:
            li_row[s + i] += ci_sum * wc
            lj_row[s + i] += cj_sum * wc
    factor = 1.0
    if norm and sum_lambdas > 0.0:
        factor = math.log2(1.0 + sum_lambdas) / sum_lambdas
    # back to document order (through the rank-order blocks, no longer needed)
    for r in range(n):
        d = perm[s + r]
        rb[o_s + d] = acc_l[s + r] * factor
        rb[o_l + d] = acc_h[s + r] * factor
        if with_cost:
            rb[o_g + d] = li_row[s + r]
            rb[o_e + d] = lj_row[s + r]
    for d in range(n):
        acc_l[s + d] = rb[o_s + d]
        acc_h[s + d] = rb[o_l + d]
    if with_cost:
        for d in range(n):
            li_row[s + d] = rb[o_g + d]
            lj_row[s + d] = rb[o_e + d]
    return True


@njit(cache=True)
def slot_cost_sums(slot, li_row, lj_row, n_slots):
    """Per-slot sums of the per-row pair costs: ``(li, lj)``, each ``n_slots`` long.

    Rows are added in row order, as ``np.bincount(slot, weights=row)`` does
    (the same sums, bit for bit), in one pass over both rows instead of two
    ``bincount`` calls (each converts its input and allocates).
    """
    li = np.zeros(n_slots)
    lj = np.zeros(n_slots)
    for r in range(slot.shape[0]):
        g = slot[r]
        li[g] += li_row[r]
        lj[g] += lj_row[r]
    return li, lj

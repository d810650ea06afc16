"""Exact-sigmoid all-pairs LambdaRank of one query with position debiasing (numba).

The rank-order fast path of :func:`ltr.kernels._lambdarank._all_pairs_query_exact`
extended by the debiasing of :func:`ltr.kernels._pair_math._debiased_terms`
(Unbiased LambdaMART and IPS pairs; the rule is in
:mod:`ltr.objectives._unbiased`): the same pairs, lambdas, hessians and pair
costs, computed with

* one ``exp`` per document instead of one per pair (``exp(sigma (s_a -
  s_b)) = E_a / E_b``, ``E_x = exp(sigma (s_x - s_max))``), and the pair's
  cost from the same ratio (``log1p(e)`` or ``log1p(1 / e)``, ``1 / e`` a
  product of the precomputed ``E`` and ``1 / E``; ``log(1 + v)`` where
  ``v > 1e-3``, at most ``1.2e-13`` relative from ``log1p``, half its cost);
* no pair cost at all when the cost rows are empty (known propensities);
* the bias tables read once per document (the reciprocals of ``t+`` and
  ``t-`` of its slot, in rank order) instead of twice per pair, so the
  division by ``t+ t-`` and the cost's division by ``t-`` / ``t+`` become
  products;
* scores, labels, gains and the per-row cost sums in rank order (contiguous
  reads, the better-ranked document's sums kept in registers), written back
  to document order once per query.

Results differ from the one-``exp``-per-pair general path only by rounding
(about 1e-15 relative; pair costs up to 1.2e-13).  No validation, no ``ltr`` imports.
"""

from __future__ import annotations

import math

import numpy as np
from numba import njit

from ltr.kernels._pair_math import _F32_001


@njit(cache=True, inline="always")
def _log1p(v):
    """``log(1 + v)`` for ``v >= 0``: libm ``log`` (about half ``log1p``'s cost) where exact enough.

    For ``v > 1e-3`` the rounding of ``1 + v`` moves the result by at most
    ``1.2e-13`` relative (``eps (1 + v) / (2 log1p(v))``); below, ``log1p``.
    """
    if v > 1e-3:
        return math.log(1.0 + v)
    return math.log1p(v)


@njit(cache=True)
def _all_pairs_query_exact_debiased(scores, labels, gains, s, n, perm, acc_l, acc_h, rb, skey,
                                    inv_idcg, k, sigma, norm, disc, top, head_weight, bias):
    """Debiased exact-sigmoid all pairs of one query in rank order; ``False`` if it does not apply.

    Same contract as :func:`ltr.kernels._lambdarank._all_pairs_query` with
    ``bias = (slot, tp, tm, reverse, li_row, lj_row)`` and the exact sigmoid:
    ``acc_l`` / ``acc_h`` receive the (normalised) sums of the query in
    document order, ``li_row`` / ``lj_row`` (zero on entry) the pair costs;
    empty cost rows (known propensities: nothing is learned) skip the costs.
    ``rb`` (five blocks of ``n_rows``) and ``skey`` (two halves of
    ``n_rows``) are scratch; the sort must be done.  Queries with a ``-inf``
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
        for j in range(i + 1, n):
            lj = rb[o_l + j]
            if lj == li:
                continue
            sj = rb[o_s + j]
            if li > lj:
                ds = si - sj
                gap = gi - rb[o_g + j]
                e = ei * rb[o_i + j]
                f_j = skey[o_m + j]
                cf = c_hi
            else:
                ds = sj - si
                gap = rb[o_g + j] - gi
                e = rb[o_e + j] * ii
                f_j = skey[o_p + j]
                cf = c_lo
            base = gap * abs(di - disc[j])  # |delta NDCG| * maxDCG
            c = _F32_001 + abs(ds) if regularize else 1.0
            t = 1.0 / ((1.0 + e) * c)
            dd = base * cf * f_j  # sigma |delta| w / (t+ t-)
            lam = -dd * t
            hes = sigma * dd * ((e * t) * c) * t
            gh += hes
            acc_h[s + j] += hes
            sum_lambdas -= 2.0 * lam
            if li > lj:
                gl += lam
                acc_l[s + j] -= lam
            else:
                gl -= lam
                acc_l[s + j] += lam
            if with_cost:
                if reverse:
                    loss = _log1p(e)
                else:
                    x = sigma * ds
                    loss = -x if x < -30.0 else _log1p(
                        rb[o_e + j] * ii if li > lj else ei * rb[o_i + j])
                u = loss * base * ((1.0 + e) * t)  # loss |delta NDCG| maxDCG / c
                if li > lj:  # i high, j low: li[i] += cost / t-[j], lj[j] += cost / t+[i]
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

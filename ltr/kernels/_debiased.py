"""Exact-sigmoid all-pairs LambdaRank of one query with position debiasing (numba).

The fast path of :func:`ltr.kernels._lambdarank._all_pairs_query_exact`
extended by the debiasing of :func:`ltr.kernels._pair_math._debiased_terms`
(Unbiased LambdaMART and IPS pairs; the rule is in
:mod:`ltr.objectives._unbiased`): the same pairs, lambdas, hessians and pair
costs, computed with

* the query's documents laid out grade by grade (by rank inside a grade):
  a document's partners of one grade are a contiguous run whose pair
  orientation is known, so equal-label pairs (about half of them) are never
  visited and the inner loops have no label test;
* one ``exp`` per document instead of one per pair (``exp(sigma (s_a -
  s_b)) = E_a / E_b``, ``E_x = exp(sigma (s_x - s_max))``), and the pair's
  cost from the same ratios: ``log(1 + exp(+-x)) = max(+-x, 0) + log(1 +
  exp(-|x|))``, in the vectorised pass over the partners
  (:func:`_log1p_unit`: a series instead of libm, whose call stops LLVM's
  vectoriser);
* the cost sums in units of the pair's ``|lambda|``: the cost a pair adds
  to ``li[high]`` is ``L (1 + e) |lambda| t+[high] / sigma`` (and ``L (1 +
  e) |lambda| t-[low] / sigma`` to ``lj[low]``), so the loop adds one
  product ``V = L (1 + e) |lambda|`` to both rows and the bias factors are
  applied once per document;
* no pair cost at all when the cost rows are empty (known propensities);
* the bias tables read once per document (the reciprocals of ``t+`` and
  ``t-`` of its slot) instead of twice per pair, so the division by ``t+ t-``
  becomes a product;
* a document's pairs in two passes: a vectorised one over the partners,
  one call for all lower grades and one for all higher grades
  (:func:`_range_terms`: their sums updated; the pair's ``|lambda|``,
  hessian and cost part stored), then the document's own sums over the
  stored values grade by grade, in the same order as before (bit for bit
  the one-loop sums).  The runs also hold the documents ranked above the
  current one (done: their pairs with it are counted); their terms are
  computed and added too, and dropped: the sums of a done document are
  final and kept aside, and put back at the end of the query;
* scores, gains, discounts and the per-row sums in the grouped order
  (contiguous reads, the current document's sums kept in registers),
  written back to document order once per query.

Results differ from the one-``exp``-per-pair general path only by rounding
(about 1e-15 relative; the order of a document's sums is grade by grade;
pair costs about 1e-15 plus the ``E_a / E_b`` product's rounding, at most
``600 * 2**-52`` relative at the widest score range).  No validation, no
``ltr`` imports.
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


@njit(cache=True, inline="always", error_model="numpy")
def _pair_term(rb, j, hi, si, gi, ei, ii, di, cf, sigma, regularize, us, ug, ux, uf, ud):
    """``(|lambda|, hessian, e, ds)`` of the document's pair with the partner at position ``j``.

    ``rb[uf + j]`` is the partner's bias factor (``1 / t-`` or ``1 / t+`` of
    its slot); ``ds = s_high - s_low``.
    """
    sj = rb[us + j]
    gj = rb[ug + j]
    ds = si - sj if hi else sj - si
    gap = gi - gj if hi else gj - gi
    e = ei * rb[ux + j] if hi else rb[ux + j] * ii
    base = gap * abs(di - rb[ud + j])  # |delta NDCG| * maxDCG
    c = _F32_001 + abs(ds) if regularize else 1.0
    t = 1.0 / ((1.0 + e) * c)
    dd = base * cf * rb[uf + j]  # sigma |delta| w / (t+ t-)
    mag = dd * t  # |lambda|
    hes = sigma * dd * ((e * t) * c) * t
    return mag, hes, e, ds


@njit(cache=True, inline="always", error_model="numpy")
def _range_terms(rb, o, a, b, hi, si, gi, ei, ii, di, cf, sigma, sx, regularize, with_cost,
                 acc_l, acc_h, row):
    """Pair terms of one document with the partners at grouped positions ``[a, b)``.

    ``[a, b)`` is the run of all lower grades (``hi``: the document is the
    more relevant one of every pair) or of all higher grades, so the pair
    orientation is a constant of the call (no label test).  The run's done
    documents (ranked above the current one) get terms too, which the
    caller drops.  ``o`` holds the block offsets of the query.  Adds every
    pair's terms to the partner's sums (``acc_l``, ``acc_h``; with
    *with_cost* the pair's cost part ``V = L (1 + e) |lambda|`` to ``row``:
    ``lo_row`` when the document is the more relevant one, else ``hi_row``)
    and stores ``|lambda|``, the hessian and ``V`` per position in the
    blocks ``o_a``, ``o_b``, ``o_v`` for the document's own sums
    (:func:`_segment_sums`, grade by grade).

    ``L = log(1 + exp(sx sigma ds))`` is the pair's loss (``sx = -1``) or
    the reversed pair's (``sx = +1``), ``ds = s_high - s_low`` and ``e =
    exp(sigma ds)``: ``exp(sigma (s_i - s_j))`` is ``E_i / E_j`` and its
    reciprocal ``E_j / E_i`` (``rb[o_e + j]`` holds ``E_j``, ``rb[o_i + j]``
    ``1 / E_j``; ``ei``, ``ii`` those of the document), and ``L = max(sx
    sigma ds, 0) + log(1 + min(e, 1 / e))``, the logarithm from
    :func:`_log1p_unit`, from the pair's ``e`` and ``ds`` (no second pass
    over the partners).  One call per run (not per grade: a short vector
    loop costs its set-up and scalar remainder), the indices unsigned (no
    negative-index wraparound code), selects and no libm call: LLVM
    vectorises the loops, the divisions included; ``hi`` and *with_cost*
    are constants of the four callers (:func:`_range_hi_cost` ...), so the
    loops have no selects on them.
    """
    o_s, o_g, o_e, o_i, o_p, o_m, o_d, o_a, o_b, o_v = o
    sg = 1.0 if hi else -1.0
    us = np.uint64(o_s)
    ug = np.uint64(o_g)
    ux = np.uint64(o_i if hi else o_e)  # 1 / E of the partner when high, E when low
    uy = np.uint64(o_e if hi else o_i)  # the other one (the cost's min(e, 1 / e))
    uf = np.uint64(o_m if hi else o_p)
    ud = np.uint64(o_d)
    ua = np.uint64(o_a)
    ub = np.uint64(o_b)
    uv = np.uint64(o_v)
    ssx = sx * sigma
    if with_cost:
        for j in range(np.uint64(a), np.uint64(b)):
            mag, hes, e, ds = _pair_term(rb, j, hi, si, gi, ei, ii, di, cf, sigma, regularize, us,
                                     ug, ux, uf, ud)
            acc_h[j] += hes
            acc_l[j] += sg * mag
            rb[ua + j] = mag
            rb[ub + j] = hes
            yj = rb[uy + j]
            up = e if hi else ei * yj  # exp(sigma (s_i - s_j))
            dn = yj * ii if hi else e  # exp(sigma (s_j - s_i))
            x = ssx * ds  # sx sigma ds (the sign of a zero aside: L is the same)
            v = ((max(x, 0.0) + _log1p_unit(min(up, dn))) * (1.0 + e)) * mag
            row[j] += v
            rb[uv + j] = v
    else:
        for j in range(np.uint64(a), np.uint64(b)):
            mag, hes, e, ds = _pair_term(rb, j, hi, si, gi, ei, ii, di, cf, sigma, regularize, us,
                                     ug, ux, uf, ud)
            acc_h[j] += hes
            acc_l[j] += sg * mag
            rb[ua + j] = mag
            rb[ub + j] = hes


@njit(cache=True, error_model="numpy")
def _range_hi_cost(rb, o, a, b, si, gi, ei, ii, di, cf, sigma, sx, regularize, acc_l, acc_h, row):
    """:func:`_range_terms` with ``hi=True``, ``with_cost=True`` (constants: no selects)."""
    _range_terms(rb, o, a, b, True, si, gi, ei, ii, di, cf, sigma, sx, regularize, True, acc_l,
                 acc_h, row)


@njit(cache=True, error_model="numpy")
def _range_hi(rb, o, a, b, si, gi, ei, ii, di, cf, sigma, sx, regularize, acc_l, acc_h, row):
    """:func:`_range_terms` with ``hi=True``, ``with_cost=False`` (constants: no selects)."""
    _range_terms(rb, o, a, b, True, si, gi, ei, ii, di, cf, sigma, sx, regularize, False, acc_l,
                 acc_h, row)


@njit(cache=True, error_model="numpy")
def _range_lo_cost(rb, o, a, b, si, gi, ei, ii, di, cf, sigma, sx, regularize, acc_l, acc_h, row):
    """:func:`_range_terms` with ``hi=False``, ``with_cost=True`` (constants: no selects)."""
    _range_terms(rb, o, a, b, False, si, gi, ei, ii, di, cf, sigma, sx, regularize, True, acc_l,
                 acc_h, row)


@njit(cache=True, error_model="numpy")
def _range_lo(rb, o, a, b, si, gi, ei, ii, di, cf, sigma, sx, regularize, acc_l, acc_h, row):
    """:func:`_range_terms` with ``hi=False``, ``with_cost=False`` (constants: no selects)."""
    _range_terms(rb, o, a, b, False, si, gi, ei, ii, di, cf, sigma, sx, regularize, False, acc_l,
                 acc_h, row)


@njit(cache=True, inline="always")
def _segment_sums(rb, o, a, b, hi, with_cost):
    """Return the document's sums ``(gl, gh, -2 sum lambda, cost sum)`` over ``[a, b)``, in order.

    Reads what :func:`_range_terms` stored for the partners of one grade;
    the same additions in the same order as one loop doing both (the sums
    are bit for bit those of the earlier fused loop).
    """
    o_a = o[7]
    o_b = o[8]
    o_v = o[9]
    sg = 1.0 if hi else -1.0
    gl = 0.0
    gh = 0.0
    sl = 0.0
    cs = 0.0
    for j in range(a, b):
        mag = rb[o_a + j]
        gh += rb[o_b + j]
        sl += 2.0 * mag
        gl -= sg * mag
        if with_cost:
            cs += rb[o_v + j]
    return gl, gh, sl, cs


@njit(cache=True)
def _all_pairs_query_exact_debiased(q, scores, labels, gains, gid, n_grades, s, n, perm, acc_l,
                                    acc_h, rb, skey, inv_idcg, k, sigma, norm, disc, top,
                                    head_weight, bias):
    """Debiased exact-sigmoid all pairs of one query by grade; ``False`` if it does not apply.

    Same contract as :func:`ltr.kernels._lambdarank._all_pairs_query` with
    ``bias = (slot, tp, tm, reverse, li_row, lj_row, qcost)`` and the exact sigmoid:
    ``acc_l`` / ``acc_h`` receive the (normalised) sums of the query in
    document order and ``qcost[q]`` (zero on entry) the pair costs summed per
    slot, in document order (``li_row`` / ``lj_row``, zero on entry, are
    scratch); empty cost rows (known propensities: nothing is learned) skip
    the costs.
    ``gid`` holds the dense grade ids (:func:`ltr.kernels._lambdarank.grade_ids`),
    ``n_grades`` the query's number of grades.  The documents are laid out
    grade by grade, by rank inside a grade, so the partners of a document
    in one grade are a contiguous run whose pair orientation is known: no
    equal-label pair is visited and the inner loops have no label test.
    ``rb`` (eleven blocks of ``n_rows``) and ``skey`` (two halves of
    ``n_rows``: the grades' next and end positions) are scratch; the sort
    must be done.  Queries with a ``-inf`` score or a score range beyond
    ``600 / sigma``, and queries that a too short ``rb`` cannot hold, return
    ``False`` untouched (the general path then takes them).
    """
    slot, tp, tm, reverse, li_row, lj_row, qcost = bias
    smax = scores[s + perm[s]]
    smin = scores[s + perm[s + n - 1]]
    if smin == -np.inf or sigma * (smax - smin) > 600.0:
        return False
    big = rb.shape[0] // 11
    if s + n > big:  # scratch too small for eleven blocks: the general path
        return False
    o_s = s
    o_g = big + s
    o_e = 2 * big + s
    o_i = 3 * big + s
    o_p = 4 * big + s  # 1 / t+ of the document's slot
    o_m = 5 * big + s  # 1 / t- of the document's slot
    o_d = 6 * big + s  # discount of the document's rank
    o_r = 7 * big + s  # document index (as a float)
    o_a = 8 * big + s  # |lambda| of the current document's pairs
    o_b = 9 * big + s  # hessians of the current document's pairs
    o_v = 10 * big + s  # cost parts V of the current document's pairs
    half = skey.shape[0] // 2
    nxt = skey.view(np.int64)[s:s + n]  # per grade: next grouped position (first rank > i)
    end = skey.view(np.int64)[half + s:half + s + n]  # per grade: end of its run
    n_g = n_grades
    for g in range(n_g):
        end[g] = 0
    for r in range(n):
        end[gid[s + perm[s + r]]] += 1
    acc_pos = 0
    for g in range(n_g):
        nxt[g] = acc_pos
        acc_pos += end[g]
        end[g] = acc_pos
    for r in range(n):  # rank order -> grouped order (grade, then rank)
        d = perm[s + r]
        g = gid[s + d]
        p = nxt[g]
        nxt[g] = p + 1
        sc = scores[s + d]
        rb[o_s + p] = sc
        rb[o_g + p] = gains[s + d]
        x = sigma * (sc - smax)
        rb[o_e + p] = math.exp(x)
        rb[o_i + p] = math.exp(-x)
        sl = slot[s + d]
        rb[o_p + p] = 1.0 / tp[sl]
        rb[o_m + p] = 1.0 / tm[sl]
        rb[o_d + p] = disc[r]
        rb[o_r + p] = d
        acc_l[s + p] = 0.0
        acc_h[s + p] = 0.0
    for g in range(n_g):  # back to each run's start
        nxt[g] = (end[g - 1] if g > 0 else 0)
    regularize = norm and smax != smin
    with_cost = li_row.shape[0] > 0
    o = (o_s, o_g, o_e, o_i, o_p, o_m, o_d, o_a, o_b, o_v)
    sx = 1.0 if reverse else -1.0
    al = acc_l[s:s + n]
    ah = acc_h[s:s + n]
    lir = li_row[s:s + n] if with_cost else li_row
    ljr = lj_row[s:s + n] if with_cost else lj_row
    sum_lambdas = 0.0
    for i in range(min(n - 1, k)):
        gi_ = gid[s + perm[s + i]]
        pi = nxt[gi_]
        nxt[gi_] = pi + 1
        si = rb[o_s + pi]
        gn = rb[o_g + pi]
        ei = rb[o_e + pi]
        ii = rb[o_i + pi]
        di = rb[o_d + pi]
        w = head_weight if i < top else 1.0
        wc = w * inv_idcg  # pair weight and 1 / maxDCG, common to the pairs of i
        # sigma |delta| w / (t+ t-) = |gap d| * c_i * (1 / t of j): i high (c_hi) or low (c_lo)
        c_hi = sigma * wc * rb[o_p + pi]
        c_lo = sigma * wc * rb[o_m + pi]
        gl = 0.0
        gh = 0.0
        ci_sum = 0.0  # cost parts V of document i: more relevant (li), less relevant (lj)
        cj_sum = 0.0
        # lower grades' partners in [nxt[0], end[gi - 1]), higher ones from nxt[gi + 1]
        if gi_ > 0:
            if with_cost:
                _range_hi_cost(rb, o, nxt[0], end[gi_ - 1], si, gn, ei, ii, di, c_hi, sigma, sx,
                               regularize, al, ah, ljr)
            else:
                _range_hi(rb, o, nxt[0], end[gi_ - 1], si, gn, ei, ii, di, c_hi, sigma, sx,
                          regularize, al, ah, ljr)
        if gi_ < n_g - 1:
            if with_cost:
                _range_lo_cost(rb, o, nxt[gi_ + 1], n, si, gn, ei, ii, di, c_lo, sigma, sx,
                               regularize, al, ah, lir)
            else:
                _range_lo(rb, o, nxt[gi_ + 1], n, si, gn, ei, ii, di, c_lo, sigma, sx,
                          regularize, al, ah, lir)
        for g in range(n_g):  # the document's sums grade by grade, over its partners only
            if g == gi_:
                continue
            a = nxt[g]
            b = end[g]
            if a >= b:
                continue
            if g < gi_:
                dl, dh, ds_, dc = _segment_sums(rb, o, a, b, True, with_cost)
                ci_sum += dc
            else:
                dl, dh, ds_, dc = _segment_sums(rb, o, a, b, False, with_cost)
                cj_sum += dc
            gl += dl
            gh += dh
            sum_lambdas += ds_
        al[pi] += gl
        ah[pi] += gh
        rb[o_p + pi] = al[pi]  # final: kept aside from the holes' terms
        rb[o_m + pi] = ah[pi]
        if with_cost:
            lir[pi] += ci_sum
            ljr[pi] += cj_sum
            rb[o_d + pi] = lir[pi]
            rb[o_g + pi] = ljr[pi]
    for g in range(n_g):  # the done documents' sums back (the holes' terms are dropped)
        for p in range((end[g - 1] if g > 0 else 0), nxt[g]):
            al[p] = rb[o_p + p]
            ah[p] = rb[o_m + p]
            if with_cost:
                lir[p] = rb[o_d + p]
                ljr[p] = rb[o_g + p]
    factor = 1.0
    if norm and sum_lambdas > 0.0:
        factor = math.log2(1.0 + sum_lambdas) / sum_lambdas
    # back to document order (through the score / gain / exp blocks, no longer needed)
    for p in range(n):
        d = int(rb[o_r + p])
        rb[o_s + d] = al[p] * factor
        rb[o_g + d] = ah[p] * factor
        if with_cost:  # V sums to costs: li[d] = t+[d] / sigma sum V, lj[d] = t-[d] / sigma sum V
            sl = slot[s + d]
            rb[o_e + d] = lir[p] * (tp[sl] / sigma)
            rb[o_i + d] = ljr[p] * (tm[sl] / sigma)
    for d in range(n):
        al[d] = rb[o_s + d]
        ah[d] = rb[o_g + d]
    if with_cost:  # the costs per slot, in document order (the rows' order)
        m = tp.shape[0]
        for d in range(n):
            sl = slot[s + d]
            qcost[q, sl] += rb[o_e + d]
            qcost[q, m + sl] += rb[o_i + d]
    return True

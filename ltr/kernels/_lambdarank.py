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

Position debiasing (Unbiased LambdaMART, IPS pairs): the drivers take an
optional ``bias = (slot, tp, tm, reverse, li_row, lj_row, qcost)``: per-row
position *slots* (int64, index into the bias tables), bias tables ``tp``
(t-plus, slot of the more relevant document of a pair) and ``tm`` (t-minus,
slot of the less relevant one), the cost choice (bool), per-row cost rows and
the per-query cost sums ``qcost`` (``(n_queries, 2 * len(tp))``).
``bias=None`` (the default) is plain LambdaRank, and numba compiles that
case without the debiasing code (branches on ``bias is None`` are pruned for
a ``None`` argument; one argument rather than seven also keeps numba's
reference-count pruning around the sampled call as it was).  With it, every pair's
lambda and hessian are divided by ``tp[slot_high] * tm[slot_low]`` before
the per-query normalisation, and the pair's cost ``c = log(1 + exp(-sigma
(s_high - s_low))) * |delta| * w`` (``+sigma`` with ``reverse``: the loss of the
reversed pair; exact sigmoid, ``|delta|`` regularised as
above, ``w`` its pair weight and sampling scale) is added as
``li_row[high] += c / tm[slot_low]`` and ``lj_row[low] += c / tp[slot_high]``
(:func:`ltr.kernels._pair_math._debiased_terms`); queries write disjoint
slices; each query then sums its rows per slot into ``qcost[q]`` (row order,
:func:`_slot_costs`, while the rows are in its thread's cache), and the caller
sums the queries in query order.  Debiasing takes one
label row; with the exact sigmoid all pairs run in rank order with one ``exp``
per document (:mod:`ltr.kernels._debiased`), while the sampled ``E_a / E_b``
loops are not used (one sigmoid per drawn pair; the same pairs are drawn).

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

from ltr.kernels._debiased import _all_pairs_query_exact_debiased
from ltr.kernels._pair_math import (  # noqa: F401 - re-exported: objectives use them
    _F32_001,
    _OBJ_MUL,
    _QUERY_MUL,
    SIGMOID_BINS,
    _add_pair,
    _argsort_desc,
    _debiased_terms,
    _lower_bound,
    _next_uniform,
    _pair_terms,
    lightgbm_sigmoid_table,
    position_discounts,
)
from ltr.kernels._sampled import _sampled_query


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
                     norm, use_table, table, tmin, tmax, tfactor, disc, top, head_weight, f32,
                     bias):
    """All eligible pairs of one query (optionally weighted), into ``acc_*[s:s+n]``.

    ``bias`` is ``None`` (the debiasing branch is then compiled out) or the
    tuple of :func:`ltr.kernels._pair_math._debiased_terms`.
    """
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
            if bias is None:
                pl, ph = _pair_terms(ds, delta, sigma, regularize, use_table, table, tmin, tmax,
                                     tfactor)
                if weighted:
                    pl *= w
                    ph *= w
            else:
                pl, ph = _debiased_terms(ds, delta, w, sigma, regularize, use_table, table, tmin,
                                         tmax, tfactor, s, high, low, bias)
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
                     acc_h, bias):
    s = offsets[q]
    n = offsets[q + 1] - s
    for i in range(n):
        grad[s + i] = 0.0
        hess[s + i] = 0.0
    if bias is not None and bias[4].shape[0] > 0:
        for i in range(n):
            bias[4][s + i] = 0.0
            bias[5][s + i] = 0.0
        for j in range(bias[6].shape[1]):
            bias[6][q, j] = 0.0
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
    summed = False  # the debiased exact path sums the query's costs per slot itself
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
                           state, f32, bias)
        elif bias is not None:
            summed = not (use_table or f32) and _all_pairs_query_exact_debiased(
                q, scores, labels[o], gains[o], gids[o], n_grades[o, q], s, n, perm, acc_l,
                acc_h, rb, skey, inv_idcg[o, q], k, sigma, norm, disc, top, head_weight, bias)
            if not summed:
                _all_pairs_query(scores, labels[o], gains[o], s, n, perm, acc_l, acc_h,
                                 inv_idcg[o, q], k, sigma, norm, use_table, table, tmin, tmax,
                                 tfactor, disc, top, head_weight, f32, bias)
        elif use_table or f32 or not _all_pairs_query_exact(
                scores, labels[o], gains[o], s, n, perm, acc_l, acc_h, rb, inv_idcg[o, q], k,
                sigma, norm, disc, top, head_weight):
            _all_pairs_query(scores, labels[o], gains[o], s, n, perm, acc_l, acc_h,
                             inv_idcg[o, q], k, sigma, norm, use_table, table, tmin, tmax,
                             tfactor, disc, top, head_weight, f32, bias)
        if bias is None:
            for i in range(n):
                grad[s + i] += w * acc_l[s + i]
                hess[s + i] += w * acc_h[s + i]
        else:  # one objective of weight 1: the sums as they are (an underflow's -0.0 too)
            for i in range(n):
                grad[s + i] = acc_l[s + i]
                hess[s + i] = acc_h[s + i]
            if bias[4].shape[0] > 0 and not summed:  # the query's pair costs per slot
                _slot_costs(q, s, n, bias)


@njit(cache=True, inline="always")
def _slot_costs(q, s, n, bias):
    """Add the query's per-row pair costs to its per-slot sums ``qcost[q]`` (row order).

    ``qcost[q, slot]`` sums ``li_row`` and ``qcost[q, m + slot]`` ``lj_row``
    (``m`` table slots), while the query's rows are still in this thread's
    cache; the caller sums the queries in query order
    (:func:`ltr.objectives._unbiased.reduce_costs`): thread-count independent.
    """
    slot, tp, _, _, li_row, lj_row, qcost = bias
    m = tp.shape[0]
    for i in range(n):
        g = slot[s + i]
        qcost[q, g] += li_row[s + i]
        qcost[q, m + g] += lj_row[s + i]


@njit(parallel=True, cache=True)
def lambdarank_gradients(scores, labels, gains, gids, n_grades, offsets, inv_idcg, obj_weights,
                         k, sigma, norm, use_table, table, tmin, tmax, tfactor, disc, top,
                         head_weight, pairs_per_doc, seed, f32, warm, grad, hess, perm, tmp, skey,
                         ibuf, rb, acc_l, acc_h, bias=None):
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
    (``2 * n_rows``), ``rb`` (``5 * n_rows``; ``11 * n_rows`` when debiasing with the exact
    sigmoid and all pairs) and ``ibuf`` (``13 * n_rows``).
    ``ibuf`` may have length 1 when ``pairs_per_doc == 0`` and ``rb`` length 5
    when neither sampling nor the exact sigmoid is used.  Queries run in
    parallel (``prange``); each touches only its own slice of every buffer.
    Debiasing (see the module notes; one objective of weight 1): ``bias =
    (slot, tp, tm, reverse, li_row, lj_row, qcost)``, ``slot`` (int64 per row)
    indexing the bias tables ``tp`` / ``tm`` (float64, > 0), ``reverse`` (bool)
    choosing the reversed pair's loss as the cost, ``li_row`` / ``lj_row``
    (float64 per row) scratch for the per-row pair costs and ``qcost`` (float64,
    ``(n_queries, 2 * len(tp))``) receiving their sums per query and slot (``t+``
    costs, then ``t-`` costs); empty cost rows (known propensities) leave
    ``qcost`` alone (it may then be ``(0, 0)``).
    """
    for q in prange(offsets.shape[0] - 1):
        _query_gradients(q, scores, labels, gains, gids, n_grades, offsets, inv_idcg,
                         obj_weights, k, sigma, norm, use_table, table, tmin, tmax, tfactor,
                         disc, top, head_weight, pairs_per_doc, seed, f32, warm, grad, hess,
                         perm, tmp, skey, ibuf, rb, acc_l, acc_h, bias)


@njit(cache=True)
def lambdarank_gradients_serial(scores, labels, gains, gids, n_grades, offsets, inv_idcg,
                                obj_weights, k, sigma, norm, use_table, table, tmin, tmax,
                                tfactor, disc, top, head_weight, pairs_per_doc, seed, f32, warm,
                                grad, hess, perm, tmp, skey, ibuf, rb, acc_l, acc_h, bias=None):
    """Single-threaded :func:`lambdarank_gradients` (no thread start-up: small inputs)."""
    for q in range(offsets.shape[0] - 1):
        _query_gradients(q, scores, labels, gains, gids, n_grades, offsets, inv_idcg,
                         obj_weights, k, sigma, norm, use_table, table, tmin, tmax, tfactor,
                         disc, top, head_weight, pairs_per_doc, seed, f32, warm, grad, hess,
                         perm, tmp, skey, ibuf, rb, acc_l, acc_h, bias)

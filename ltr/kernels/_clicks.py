"""Click-model kernels: simulation, propensity EM and IPS DCG (numba, no validation).

Everything works on flat arrays plus ``int64`` offsets.  Randomness comes from
a counter-based generator (SplitMix64) seeded per ``(query, session)``, so a
result depends on the seed only, never on the number of threads.

The public, validating wrappers live in :mod:`ltr.clicks` and :mod:`ltr.clicks.ips`.
"""

from __future__ import annotations

import numpy as np
from numba import njit, prange

# Logged ranking of a query (how the displayed order of each session is made).
ORDER_ROWS = 0  # rows in displayed order
ORDER_POSITION = 1  # by a given display position per row
ORDER_SCORES = 2  # by logger scores, descending (stable)
ORDER_PLACKETT_LUCE = 3  # a Plackett-Luce draw over scores / temperature per session

MODEL_PBM = 0
MODEL_CASCADE = 1

_GOLDEN = np.uint64(0x9E3779B97F4A7C15)
_M1 = np.uint64(0xBF58476D1CE4E5B9)
_M2 = np.uint64(0x94D049BB133111EB)
_INV53 = 1.0 / 9007199254740992.0  # 2**-53


@njit(cache=True, inline="always")
def _mix(z):
    z = (z ^ (z >> np.uint64(30))) * _M1
    z = (z ^ (z >> np.uint64(27))) * _M2
    return z ^ (z >> np.uint64(31))


@njit(cache=True, inline="always")
def _uniform(state):
    """Advance ``state[0]`` and return a uniform double in ``[0, 1)``."""
    state[0] += _GOLDEN
    return float(_mix(state[0]) >> np.uint64(11)) * _INV53


@njit(cache=True)
def _logged_order(order, a, n, mode, position, scores, inv_temp, state):
    """Fill ``order[:n]`` with the rows (relative to ``a``) in displayed order."""
    if mode == ORDER_ROWS:
        for j in range(n):
            order[j] = j
    elif mode == ORDER_POSITION:
        for j in range(n):
            order[position[a + j] - 1] = j
    elif mode == ORDER_SCORES:
        keys = np.empty(n)
        for j in range(n):
            keys[j] = -scores[a + j]
        idx = np.argsort(keys, kind="mergesort")
        for j in range(n):
            order[j] = idx[j]
    else:  # Gumbel-max: sorting score / T + Gumbel noise is a Plackett-Luce draw
        keys = np.empty(n)
        for j in range(n):
            u = _uniform(state)
            while u <= 0.0:
                u = _uniform(state)
            keys[j] = -(scores[a + j] * inv_temp - np.log(-np.log(u)))
        idx = np.argsort(keys, kind="mergesort")
        for j in range(n):
            order[j] = idx[j]


@njit(cache=True, parallel=True)
def simulate(grade, offsets, mode, position, scores, inv_temp, model, examination,
             click_prob, stop_prob, abandon, max_position, n_sessions, swap_depth, seed,
             out_row, out_position, out_click, out_swap):
    """Simulate ``n_sessions`` sessions of every query; one impression per row and session.

    Impressions of query ``q``, session ``s`` fill
    ``[offsets[q] * n_sessions + s * n_q, ... + n_q)`` in displayed order.
    ``examination[p - 1]`` is the PBM examination probability at position
    ``p`` (0 past the table); ``max_position`` cuts the cascade's page
    (0 = no cut); after each result the cascade reads (clicked or not) the user
    stops with probability ``abandon`` (0 draws nothing extra: the draws of the
    model without abandonment are kept bit for bit).  ``swap_depth > 1`` runs
    a swap(1, k) experiment per session (k uniform in ``2..min(swap_depth, n_q)``,
    the swap made with probability 1/2) and records k in ``out_swap`` (0 = none).
    """
    n_q = offsets.size - 1
    n_exam = examination.size
    for q in prange(n_q):
        a = offsets[q]
        n = offsets[q + 1] - a
        order = np.empty(n, dtype=np.int64)
        state = np.empty(1, dtype=np.uint64)
        for s in range(n_sessions):
            state[0] = _mix(np.uint64(seed) ^ _mix(np.uint64(q * n_sessions + s) + _GOLDEN))
            _logged_order(order, a, n, mode, position, scores, inv_temp, state)
            swap_k = 0
            depth = min(swap_depth, n)
            if depth >= 2:
                swap_k = 2 + int(_uniform(state) * (depth - 1))  # u < 1: at most depth
                if _uniform(state) < 0.5:
                    tmp = order[0]
                    order[0] = order[swap_k - 1]
                    order[swap_k - 1] = tmp
            base = a * n_sessions + s * n
            stopped = False
            for p in range(n):
                i = a + order[p]
                out_row[base + p] = i
                out_position[base + p] = p + 1
                out_swap[base + p] = swap_k
                u = _uniform(state)
                c = 0
                if model == MODEL_PBM:
                    exam = examination[p] if p < n_exam else 0.0
                    if u < exam * click_prob[grade[i]]:
                        c = 1
                elif not stopped and (max_position == 0 or p < max_position):
                    if u < click_prob[grade[i]]:
                        c = 1
                        if _uniform(state) < stop_prob[grade[i]]:
                            stopped = True
                    if abandon > 0.0 and not stopped and _uniform(state) < abandon:
                        stopped = True
                out_click[base + p] = c


@njit(cache=True)
def pbm_cells(code, position, click, n_pairs, top):
    """Aggregate impressions into (pair, position) cells in one counting sort.

    ``code`` is a dense pair code in ``[0, n_pairs)``; rows with ``position``
    outside ``1..top`` are skipped.  Returns ``(pair_ptr, cell_pos, cell_n,
    cell_c)``: the cells of pair ``u`` are ``pair_ptr[u]:pair_ptr[u + 1]``,
    by increasing position index ``cell_pos`` (0-based), with their
    impressions and clicks.
    """
    counts = np.zeros(n_pairs + 1, np.int64)
    for i in range(code.size):
        if 1 <= position[i] <= top:
            counts[code[i] + 1] += 1
    for u in range(n_pairs):
        counts[u + 1] += counts[u]
    fill = counts[:-1].copy()
    rows = np.empty(counts[n_pairs], np.int64)
    for i in range(code.size):
        if 1 <= position[i] <= top:
            u = code[i]
            rows[fill[u]] = i
            fill[u] += 1
    seen_n = np.zeros(top, np.int64)
    seen_c = np.zeros(top, np.int64)
    local = np.empty(top, np.int64)
    pair_ptr = np.zeros(n_pairs + 1, np.int64)
    cell_pos = np.empty(rows.size, np.int64)
    cell_n = np.empty(rows.size, np.float64)
    cell_c = np.empty(rows.size, np.float64)
    m = 0
    for u in range(n_pairs):
        k = 0
        for j in range(counts[u], counts[u + 1]):
            i = rows[j]
            p = position[i] - 1
            if seen_n[p] == 0:
                # insertion into the pair's sorted list of positions
                q = k
                while q > 0 and local[q - 1] > p:
                    local[q] = local[q - 1]
                    q -= 1
                local[q] = p
                k += 1
            seen_n[p] += 1
            seen_c[p] += click[i] != 0
        for q in range(k):
            p = local[q]
            cell_pos[m] = p
            cell_n[m] = seen_n[p]
            cell_c[m] = seen_c[p]
            seen_n[p] = 0
            seen_c[p] = 0
            m += 1
        pair_ptr[u + 1] = m
    return pair_ptr, cell_pos[:m], cell_n[:m], cell_c[:m]


@njit(cache=True)
def _pbm_chunk(pair_ptr, cell_pos, cell_n, cell_c, lo, hi, theta, gamma, local):
    """E- and relevance M-step over pairs ``lo:hi``; examination sums into ``local``."""
    local[:] = 0.0
    for u in range(lo, hi):
        g = gamma[u]
        num = 0.0
        den = 0.0
        for j in range(pair_ptr[u], pair_ptr[u + 1]):
            k = cell_pos[j]
            t = theta[k]
            c = cell_c[j]
            tg = t * g
            miss = 1.0 - tg
            w = (cell_n[j] - c) / miss if miss > 0.0 else 0.0
            local[k] += c + (t - tg) * w  # P(examined | no click)
            num += c + (g - tg) * w  # P(relevant | no click)
            den += cell_n[j]
        if den > 0.0:
            gamma[u] = num / den


@njit(cache=True)
def _extrapolate_inside(x0, x1, x2, out):
    """SQUAREM (scheme S3) from three EM iterates; a coordinate that would leave (0, 1) keeps x2's.

    Unlike clipping, this never puts a probability on the boundary: under the
    PBM a relevance of exactly 1 (or examination of 1 with it) is a fixed
    point of the EM update that the likelihood does not favour.
    """
    sr = 0.0
    sv = 0.0
    for i in range(x0.size):
        r = x1[i] - x0[i]
        v = x2[i] - 2.0 * x1[i] + x0[i]
        sr += r * r
        sv += v * v
    step = -np.sqrt(sr / sv) if sv > 0.0 else -1.0
    step = min(step, -1.0)
    for i in range(x0.size):
        r = x1[i] - x0[i]
        v = x2[i] - 2.0 * x1[i] + x0[i]
        new = x0[i] - 2.0 * step * r + step * step * v
        out[i] = new if 0.0 < new < 1.0 else x2[i]


#: Cells from which the EM map runs its chunks in parallel: below, one
#: thread (a parallel launch per map costs more than it saves, and far more
#: on a loaded machine).
PARALLEL_CELLS = 500_000


@njit(cache=True, parallel=True)
def _pbm_chunks_parallel(pair_ptr, cell_pos, cell_n, cell_c, chunks, theta, gamma, acc):
    for ch in prange(chunks.size - 1):
        _pbm_chunk(pair_ptr, cell_pos, cell_n, cell_c, chunks[ch], chunks[ch + 1], theta, gamma,
                   acc[ch])


@njit(cache=True)
def _pbm_step(pair_ptr, cell_pos, cell_n, cell_c, chunks, den_t, theta, gamma, acc, parallel):
    """One EM map in place; returns the largest change of ``theta[k] / theta[0]``.

    A pair's relevance depends only on its own cells and the old ``theta``, so
    ``gamma`` is updated while its cells are read; ``theta`` after the pass.
    Chunks of pairs run (in parallel if *parallel*) with their own
    accumulators, summed in chunk order (the result does not depend on the
    number of threads).
    """
    n_chunks = chunks.size - 1
    n_pos = theta.size
    if parallel:
        _pbm_chunks_parallel(pair_ptr, cell_pos, cell_n, cell_c, chunks, theta, gamma, acc)
    else:
        for ch in range(n_chunks):
            _pbm_chunk(pair_ptr, cell_pos, cell_n, cell_c, chunks[ch], chunks[ch + 1], theta,
                       gamma, acc[ch])
    change = 0.0
    first_old = theta[0]
    first_new = theta[0]
    if den_t[0] > 0.0:
        first_new = acc[:, 0].sum() / den_t[0]
    for k in range(n_pos):
        if den_t[k] > 0.0:
            s = 0.0
            for ch in range(n_chunks):
                s += acc[ch, k]
            new = s / den_t[k]
            if first_old > 0.0 and first_new > 0.0:
                change = max(change, abs(new / first_new - theta[k] / first_old))
            theta[k] = new
    return change


@njit(cache=True)
def propensity_em(pair_ptr, cell_pos, cell_n, cell_c, theta, gamma, n_iter, tol, parallel):
    """Position-based-model EM over (pair, position) cells; updates *theta*, *gamma*.

    Cells as returned by :func:`pbm_cells`.  Each EM map is one pass over
    the cells (:func:`_pbm_step`, threaded if *parallel*; the result is the
    same either way); maps are accelerated by SQUAREM (Varadhan and Roland
    2008, scheme S3: two maps, then an extrapolation kept inside (0, 1) by
    :func:`_extrapolate_inside`), which has the plain EM's fixed points.
    Stops when a map moves no ``theta[k] / theta[0]`` by more than *tol* (the plain EM's
    rule, checked on every map).  Returns the number of maps run and whether
    it converged.
    """
    n_pairs = pair_ptr.size - 1
    n_pos = theta.size
    m = cell_pos.size
    n_chunks = min(256, max(1, n_pairs // 256))
    chunks = np.empty(n_chunks + 1, np.int64)
    chunks[0] = 0
    u = 0
    for ch in range(1, n_chunks):
        target = (m * ch) // n_chunks
        while u < n_pairs and pair_ptr[u] < target:
            u += 1
        chunks[ch] = u
    chunks[n_chunks] = n_pairs
    den_t = np.zeros(n_pos)
    for j in range(m):
        den_t[cell_pos[j]] += cell_n[j]
    acc = np.zeros((n_chunks, n_pos))
    size = n_pos + n_pairs
    x0 = np.empty(size)
    x1 = np.empty(size)
    x2 = np.empty(size)
    it = 0
    while it < n_iter:
        x0[:n_pos] = theta
        x0[n_pos:] = gamma
        change = _pbm_step(pair_ptr, cell_pos, cell_n, cell_c, chunks, den_t, theta, gamma, acc,
                           parallel)
        it += 1
        if change < tol:
            return it, True
        if it + 2 > n_iter:
            continue
        x1[:n_pos] = theta
        x1[n_pos:] = gamma
        change = _pbm_step(pair_ptr, cell_pos, cell_n, cell_c, chunks, den_t, theta, gamma, acc,
                           parallel)
        it += 1
        if change < tol:
            return it, True
        x2[:n_pos] = theta
        x2[n_pos:] = gamma
        _extrapolate_inside(x0, x1, x2, x0)
        theta[:] = x0[:n_pos]
        gamma[:] = x0[n_pos:]
    return it, False


@njit(cache=True, parallel=True)
def ips_dcg(click, score, position, weight_by_position, offsets, discount, average_ties,
            out_dcg, out_weight, out_ideal):
    """Per list: IPS DCG of the new order, the sum of click weights and the ideal IPS DCG.

    ``weight_by_position[p - 1]`` is the (clipped) importance weight of a
    click logged at position ``p``; ``discount[r - 1]`` the discount at new
    rank ``r`` (0 past the cut-off).  Ties among scores take the mean discount
    of the ranks they span when *average_ties*, else input order.
    """
    n_l = offsets.size - 1
    n_disc = discount.size
    for q in prange(n_l):
        a = offsets[q]
        n = offsets[q + 1] - a
        total = 0.0
        n_clicked = 0
        for j in range(n):
            if click[a + j] != 0.0:
                total += click[a + j] * weight_by_position[position[a + j] - 1]
                n_clicked += 1
        out_weight[q] = total
        if n_clicked == 0:
            out_dcg[q] = 0.0
            out_ideal[q] = 0.0
            continue
        keys = np.empty(n)
        for j in range(n):
            keys[j] = -score[a + j]
        idx = np.argsort(keys, kind="mergesort")
        dcg = 0.0
        r = 0
        while r < n:
            end = r + 1
            if average_ties:
                while end < n and keys[idx[end]] == keys[idx[r]]:
                    end += 1
            disc = 0.0
            for t in range(r, end):
                if t < n_disc:
                    disc += discount[t]
            disc /= end - r
            for t in range(r, end):
                j = a + idx[t]
                if click[j] != 0.0:
                    dcg += click[j] * weight_by_position[position[j] - 1] * disc
            r = end
        out_dcg[q] = dcg
        w = np.empty(n_clicked)
        c = 0
        for j in range(n):
            if click[a + j] != 0.0:
                w[c] = click[a + j] * weight_by_position[position[a + j] - 1]
                c += 1
        w = np.sort(w)
        ideal = 0.0
        for t in range(n_clicked):
            if t < n_disc:
                ideal += w[n_clicked - 1 - t] * discount[t]
        out_ideal[q] = ideal

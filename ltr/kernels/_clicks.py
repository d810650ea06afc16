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
def propensity_em(cell_pair, cell_pos, cell_n, cell_c, n_pairs, n_pos, theta, gamma,
                  n_iter, tol):
    """Position-based-model EM over (pair, position) cells; updates *theta*, *gamma*.

    ``cell_n`` impressions and ``cell_c`` clicks of pair ``cell_pair`` at
    position index ``cell_pos``.  Returns the number of iterations run and
    whether the largest change of ``theta / theta[0]`` fell below *tol*.
    """
    m = cell_pair.size
    num_t = np.empty(n_pos)
    den_t = np.empty(n_pos)
    num_g = np.empty(n_pairs)
    den_g = np.empty(n_pairs)
    it = 0
    converged = False
    while it < n_iter:
        it += 1
        num_t[:] = 0.0
        den_t[:] = 0.0
        num_g[:] = 0.0
        den_g[:] = 0.0
        for j in range(m):
            u = cell_pair[j]
            k = cell_pos[j]
            t = theta[k]
            g = gamma[u]
            miss = 1.0 - t * g
            no_click = cell_n[j] - cell_c[j]
            if miss > 0.0:
                e_seen = t * (1.0 - g) / miss  # P(examined | no click)
                r_rel = (1.0 - t) * g / miss  # P(relevant | no click)
            else:
                e_seen = 0.0
                r_rel = 0.0
            num_t[k] += cell_c[j] + no_click * e_seen
            den_t[k] += cell_n[j]
            num_g[u] += cell_c[j] + no_click * r_rel
            den_g[u] += cell_n[j]
        # Convergence of the identified quantity theta_k / theta_1 (the scale drifts slowly).
        change = 0.0
        first_old = theta[0]
        first_new = num_t[0] / den_t[0] if den_t[0] > 0.0 else theta[0]
        for k in range(n_pos):
            if den_t[k] > 0.0:
                new = num_t[k] / den_t[k]
                if first_old > 0.0 and first_new > 0.0:
                    change = max(change, abs(new / first_new - theta[k] / first_old))
                theta[k] = new
        for u in range(n_pairs):
            if den_g[u] > 0.0:
                gamma[u] = num_g[u] / den_g[u]
        if change < tol:
            converged = True
            break
    return it, converged


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

"""Rescoring one permuted column from cached leaves and per-row code ranges (numba).

Used by :mod:`ltr.inspection` through :mod:`ltr.inspection._tree_changes`; the
walks are the branch-free walks on integer threshold codes of
:mod:`ltr.kernels._tree_predict` (``W``, ``nodes``, ``_code_side``).

:func:`_code_leaves_ranges` caches every row's leaf in every tree and, in the
same walk, the range of codes of each feature that keeps every one of the row's
paths: a permuted value whose code stays inside it changes no leaf, so it is
skipped with one comparison, without looking at any tree.
:func:`_rescore_column` rescores the other rows: only the trees whose path the
new code leaves are walked, and a row that reaches another leaf is re-summed
over all trees in the engine's order (bitwise the engine's prediction).  With a
cut (for nDCG@k), a row whose score provably stays below its query's k-th score
(:func:`_kth_floor`: the k-th among the rows' lowest possible scores) is
given that bound instead: it is outside the top k either way.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from ltr.kernels._recsys import _sift_down, _sift_up
from ltr.kernels._tree_predict import _FEATURE_BITS, _code_side, _code_walk4, _leaf_sums

_BATCH = 32  # changed rows whose leaves are gathered before they are re-summed together
_RANGE_BLOCK = 64  # rows walked tree by tree in _code_leaves_ranges (16-128: within 5 %)


@njit(cache=True)
def _narrowed(side, m, lo, hi):
    """Narrow the code range ``lo .. hi`` by going left (``side`` 0) or right (1) at rank ``m``.

    Left keeps codes ``<= m`` (and marks the feature as on the path: ``lo >=
    0``); right keeps codes ``> m``.  Branch-free; scalars only, inlined by LLVM.
    """
    return max(lo, side * (m + 1)), min(hi, m + side * (hi - m))


@njit(cache=True)
def _ranged_step(W, i, k, nodes, s, b, lo, hi):
    """Row ``i`` at node ``k``: narrow ``lo/hi[s, b]`` by the branch taken, return the child."""
    side = _code_side(W[i, nodes[k, 0] & _FEATURE_BITS], nodes[k, 0], nodes[k, 1])
    lo[s, b], hi[s, b] = _narrowed(side, nodes[k, 1], lo[s, b], hi[s, b])
    return nodes[k, 2 + side]


@njit(cache=True, nogil=True)
def _code_leaves_ranges(row_lo, row_hi, W, start, nodes, n_ranged, slot, out, lo_out, hi_out):
    """``out[i, t]``: leaf of row ``i`` in tree ``t``; ``lo_out/hi_out[s, i]``: its code ranges.

    For the features of ``slot`` (``slot[f]``: the row of ``lo_out``/``hi_out``
    of feature ``f``; features not ranged point at the last entry, a scratch
    one), ``lo_out[s, i] <= code <= hi_out[s, i]`` are the codes that keep
    every path of row ``i`` in the trees ``0 .. n_ranged - 1``;
    ``lo_out[s, i] = -1`` when no such path splits on the feature (codes of
    NaN and zero flags are below every range).  Rows ``row_lo <= i < row_hi``.

    Tree by tree over blocks of ``_RANGE_BLOCK`` rows, four rows walked side
    by side: a tree's nodes stay in the first-level cache for the block
    (17 % faster than every tree for one row, then the next row).
    """
    n_trees = start.shape[0] - 1
    n_slots = lo_out.shape[0]
    big = (1 << (8 * hi_out.itemsize - 1)) - 1  # the dtype's maximum (np.iinfo compiles more)
    B = _RANGE_BLOCK
    lo = np.empty((n_slots + 1, B), dtype=np.int32)  # codes are int16 or int32
    hi = np.empty((n_slots + 1, B), dtype=np.int32)
    for i0 in range(row_lo, row_hi, B):
        nb = min(B, row_hi - i0)
        for s in range(n_slots + 1):
            for b in range(B):
                lo[s, b] = -1
                hi[s, b] = big
        for t in range(n_trees):
            if start[t + 1] == start[t]:  # a single-leaf tree
                for b in range(nb):
                    out[i0 + b, t] = 0
                continue
            ranged = t < n_ranged  # later trees are walked without narrowing
            base = start[t]
            for b in range(0, nb, 4):
                # lanes past the block repeat row b and narrow only the scratch slot
                b1 = b + 1 if b + 1 < nb else b
                b2 = b + 2 if b + 2 < nb else b
                b3 = b + 3 if b + 3 < nb else b
                n0 = n1 = n2 = n3 = 0
                while n0 >= 0 or n1 >= 0 or n2 >= 0 or n3 >= 0:
                    if n0 >= 0:
                        k = base + n0
                        s = slot[nodes[k, 0] & _FEATURE_BITS] if ranged else n_slots
                        n0 = _ranged_step(W, i0 + b, k, nodes, s, b, lo, hi)
                    if n1 >= 0:
                        k = base + n1
                        s = slot[nodes[k, 0] & _FEATURE_BITS] if ranged and b1 != b else n_slots
                        n1 = _ranged_step(W, i0 + b1, k, nodes, s, b1, lo, hi)
                    if n2 >= 0:
                        k = base + n2
                        s = slot[nodes[k, 0] & _FEATURE_BITS] if ranged and b2 != b else n_slots
                        n2 = _ranged_step(W, i0 + b2, k, nodes, s, b2, lo, hi)
                    if n3 >= 0:
                        k = base + n3
                        s = slot[nodes[k, 0] & _FEATURE_BITS] if ranged and b3 != b else n_slots
                        n3 = _ranged_step(W, i0 + b3, k, nodes, s, b3, lo, hi)
                out[i0 + b, t] = ~n0
                if b1 != b:
                    out[i0 + b1, t] = ~n1
                if b2 != b:
                    out[i0 + b2, t] = ~n2
                if b3 != b:
                    out[i0 + b3, t] = ~n3
        for s in range(n_slots):
            for b in range(nb):
                lo_out[s, i0 + b] = lo[s, b]
                hi_out[s, i0 + b] = hi[s, b]


@njit(cache=True, nogil=True)
def _column_paths(j, tree_ids, paths, start, nodes, leaf_start, leaf_value, top, first, escape,
                  pack, up):
    """Per tree ``a`` of ``tree_ids`` and leaf: how the path to the leaf depends on column ``j``.

    ``paths[t, leaf]`` are the root->leaf nodes of tree ``t`` (-1 padded), node
    ``k`` of ``nodes`` as in :func:`_code_leaves_ranges`.  Writes
    ``first[a, leaf]``: the first node on ``j`` of the path (-1: none);
    ``pack[a, leaf] = lo << 32 | hi``: ``lo <= code <= hi`` are the codes that
    keep the path (``lo = -1``: ``j`` is not on it; one load tells both);
    ``escape[a, leaf]``: where a code outside them continues -- when ``j`` is
    on the path once, the other child of its node (``~leaf`` for a leaf),
    else ``first``; ``up[0, a, leaf]`` and ``up[1, a, leaf]``: the largest
    leaf value below ``escape`` and below ``first`` (``top``: the largest leaf
    value under each node, indexed like ``start``) minus the leaf's own value,
    the most a walk from there can add to the row's score.
    """
    big = (1 << 31) - 1  # above every code (codes are int16 or int32)
    depth = paths.shape[2]
    for a in range(tree_ids.shape[0]):
        t = tree_ids[a]
        lb = leaf_start[t]
        for leaf in range(paths.shape[1]):
            node0 = -1
            other0 = -1
            n_on = 0
            lo = 0
            hi = big
            for d in range(depth):
                p = paths[t, leaf, d]
                if p < 0:
                    break
                k = start[t] + p
                if (nodes[k, 0] & _FEATURE_BITS) != j:
                    continue
                nxt = paths[t, leaf, d + 1] if d + 1 < depth else -1
                nxt = nxt if nxt >= 0 else ~leaf
                m = nodes[k, 1]
                went_left = nodes[k, 2] == nxt
                lo = lo if went_left else max(lo, m + 1)
                hi = min(hi, m) if went_left else hi
                if n_on == 0:
                    node0 = p
                    other0 = nodes[k, 3] if went_left else nodes[k, 2]
                n_on += 1
            first[a, leaf] = node0
            escape[a, leaf] = other0 if n_on == 1 else node0
            if n_on > 0:
                e = escape[a, leaf]
                own = leaf_value[lb + leaf]
                up[0, a, leaf] = (top[start[t] + e] if e >= 0 else leaf_value[lb + ~e]) - own
                up[1, a, leaf] = top[start[t] + node0] - own
            lo = lo if n_on > 0 else -1
            pack[a, leaf] = (lo << 32) | hi


@njit(cache=True, nogil=True)
def _rescore_column(row_lo, row_hi, W, perms, j, wcol, jmask, lo_j, hi_j, trees, first, escape,
                    pack, up, start, nodes, leaves, leaf_start, leaf_value, init, offsets, cut,
                    head, step, margin, out, counts):
    """Rescore the rows ``row_lo <= i < row_hi`` whose leaf changes when column ``j`` is permuted.

    For every permutation ``r``, row ``i`` gets the coded value ``wcol[perms[r, i]]``
    of column ``j`` (``wcol`` is ``W[:, j]``); its exact score goes to ``out[r, i]``
    (a copy of the baseline scores) when a leaf changed.  A code inside the row's
    range ``lo_j[i] .. hi_j[i]`` (see :func:`_code_leaves_ranges`) changes no
    leaf.  Otherwise the trees of ``trees`` (the sorted ids of the trees
    splitting on ``j``) whose path of the row splits on ``j`` are listed once
    for all the row's permutations (tables of :func:`_column_paths`); those
    whose code range the new code leaves are walked four side by side from
    ``escape`` (from ``first`` for a value whose flags meet ``jmask``, the
    missing masks of the nodes on ``j``), and the row is re-summed over all
    trees in order (:func:`ltr.kernels._tree_predict._leaf_sums`, by batches of
    changed rows); ``counts[0, r]`` counts the rows rescored.

    With a cut (``cut[r, q]`` for the queries of ``offsets``, see
    :func:`_kth_floor`; shape ``(0, 0)``: none), a row whose score can rise
    at most to ``out[r, i]`` plus ``up`` of the trees it leaves plus ``margin``
    (the engine's rounding), and so stays below its query's cut, is not walked:
    it gets that bound, which keeps it below the query's k-th score, and
    ``counts[1, r]`` counts it.  ``head[i] * step`` (see :func:`_headroom`)
    bounds the rise before the row's trees are listed: most rows stop there.
    """
    n_rep = perms.shape[0]
    n_aff = trees.shape[0]
    n_trees = leaf_start.shape[0] - 1
    on_a = np.empty(n_aff, dtype=np.int64)  # the trees whose path of row i splits on j
    on_lo = np.empty(n_aff, dtype=np.int64)
    on_hi = np.empty(n_aff, dtype=np.int64)
    on_lf = np.empty(n_aff, dtype=np.int64)  # the row's leaf in them
    viol = np.empty(n_aff + 1, dtype=np.int64)
    pend_t = np.empty(n_aff + 4, dtype=np.int64)
    pend_b = np.empty(n_aff + 4, dtype=np.int64)
    pend_n = np.empty(n_aff + 4, dtype=np.int64)
    for q in range(n_aff + 4):  # a loop, not np.zeros / np.full: less to compile
        pend_b[q] = 0
    buf = np.empty((_BATCH + n_rep, n_trees), dtype=leaves.dtype)  # a batch and one more row
    rows = np.empty(_BATCH + n_rep, dtype=np.int64)
    reps = np.empty(_BATCH + n_rep, dtype=np.int64)
    sums = np.empty(_BATCH + n_rep)
    zero = 0 * row_lo  # not a literal 0: the signature _leaf_sums has from Python (no second one)
    n_buf = zero
    qi = 0  # row i's query
    if cut.shape[0] > 0:
        qi = np.searchsorted(offsets, row_lo, side="right") - 1
    for i in range(row_lo, row_hi):
        if cut.shape[0] > 0:
            while offsets[qi + 1] <= i:
                qi += 1
        wo = wcol[i]
        rlo = lo_j[i]
        rhi = hi_j[i]
        n_on = -1
        for r in range(n_rep):
            wn = wcol[perms[r, i]]
            if wn == wo:
                continue
            special = ((wn | wo) & jmask) != 0
            ec = -1 if special else wn >> 2  # -1 leaves every path on j
            if rlo <= ec <= rhi:
                continue
            if cut.shape[0] > 0 and head[i] < 65535:  # far below the k-th whatever the trees
                bound = out[r, i] + head[i] * step + margin
                if bound < cut[r, qi]:
                    out[r, i] = bound
                    counts[1, r] += 1
                    continue
            if n_on < 0:  # the row's trees on j, once for all its permutations
                n_on = 0
                lrow = leaves[i]
                for a in range(n_aff):  # one packed load per tree (3 separate ones: 10 % slower)
                    lf = lrow[trees[a]]
                    pk = pack[a, lf]
                    on_a[n_on] = a
                    on_lf[n_on] = lf
                    on_lo[n_on] = pk >> 32
                    on_hi[n_on] = pk & 0xFFFFFFFF
                    n_on += pk >= 0
            nv = 0
            if cut.shape[0] == 0:
                for v in range(n_on):  # branch-free list of the trees whose path it leaves
                    viol[nv] = v
                    nv += (ec < on_lo[v]) | (ec > on_hi[v])
            else:  # the same, and how high the row's score can go: can it reach the k-th?
                sp = 1 if special else 0
                bound = out[r, i] + margin
                for v in range(n_on):
                    leaves_it = (ec < on_lo[v]) | (ec > on_hi[v])
                    viol[nv] = v
                    nv += leaves_it
                    bound += up[sp, on_a[v], on_lf[v]] * leaves_it
                if bound < cut[r, qi]:
                    out[r, i] = bound
                    counts[1, r] += 1
                    continue
            for u in range(n_trees):  # a loop: a slice copy compiles numba's shape-error text
                buf[n_buf, u] = leaves[i, u]
            for u in range(nv):
                a = on_a[viol[u]]
                t = trees[a]
                pend_t[u] = t
                pend_b[u] = start[t]
                pend_n[u] = first[a, leaves[i, t]] if special else escape[a, leaves[i, t]]
            for q in range(nv, nv + 4):
                pend_n[q] = -1
            changed = False
            for q in range(0, nv, 4):
                l0, l1, l2, l3 = _code_walk4(W, i, j, wn, pend_b[q], pend_n[q], pend_b[q + 1],
                                             pend_n[q + 1], pend_b[q + 2], pend_n[q + 2],
                                             pend_b[q + 3], pend_n[q + 3], nodes)
                for u in range(min(4, nv - q)):
                    leaf = l0 if u == 0 else (l1 if u == 1 else (l2 if u == 2 else l3))
                    t = pend_t[q + u]
                    changed |= leaf != leaves[i, t]  # always, unless a NaN or zero went back
                    buf[n_buf, t] = leaf
            if changed:
                rows[n_buf] = i
                reps[n_buf] = r
                n_buf += 1
                counts[0, r] += 1
        if n_buf >= _BATCH or (i == row_hi - 1 and n_buf > 0):  # one call site: less to compile
            _leaf_sums(zero, n_buf, buf, n_trees, leaf_start, leaf_value, init, sums)
            for b in range(n_buf):
                out[reps[b], rows[b]] = sums[b]
            n_buf = zero


@njit(cache=True, nogil=True)
def _kth_floor(q_lo, q_hi, offsets, ranked, perms, wcol, jmask, lo_j, hi_j, base, fall, step,
               margin, k, cut):
    """``cut[r, q]``: a floor under query ``q``'s k-th score after permutation ``r``.

    It is the k-th largest of the rows' lowest possible scores: the baseline
    score of a row that keeps every leaf when column ``j`` is permuted by
    ``perms[r]`` (the test of :func:`_rescore_column`), and for a row that does
    not, its baseline score less ``fall[i] * step`` (see :func:`_headroom`) and
    ``margin``; -inf when the query has fewer than ``k`` rows.  A row whose new
    score stays below it has ``k`` other rows above it, so it is not in the top
    k.  ``ranked[offsets[q]:offsets[q + 1]]`` are the query's rows by baseline
    score, highest first: the walk down them stops once no row below can reach
    the k-th.  Queries ``q_lo <= q < q_hi``.
    """
    heap = np.empty(k)  # a min-heap of the k largest floors so far (and their rows)
    heap_rows = np.empty(k, dtype=np.int64)
    for q in range(q_lo, q_hi):
        for r in range(perms.shape[0]):
            m = 0
            for at in range(offsets[q], offsets[q + 1]):
                i = ranked[at]
                if m == k and base[i] <= heap[0]:
                    break  # every row from here has a floor at most its baseline score
                wo = wcol[i]
                wn = wcol[perms[r, i]]
                ec = -1 if ((wn | wo) & jmask) != 0 else wn >> 2
                v = base[i]
                if wn != wo and not lo_j[i] <= ec <= hi_j[i]:  # a leaf changes
                    v = base[i] - fall[i] * step - margin if fall[i] < 65535 else -np.inf
                if m < k:
                    heap[m] = v
                    heap_rows[m] = i
                    _sift_up(heap, heap_rows, m)
                    m += 1
                elif v > heap[0]:  # replace the smallest
                    heap[0] = v
                    heap_rows[0] = i
                    _sift_down(heap, heap_rows, 0, k)
            cut[r, q] = heap[0] if m == k else -np.inf


@njit(cache=True, nogil=True)
def _headroom(row_lo, row_hi, leaves, n_trees, paths, start, nodes, slot, leaf_start, leaf_value,
              top, bottom, step, out):
    """How far row ``i``'s score can rise (``out[0, s, i]``) and fall (``out[1, s, i]``), in steps.

    The change is of feature ``s`` alone, to any value.  For every tree, a new
    value of the feature moves the row into the subtree of the first node on
    the feature along its path (nowhere else), so the row's leaf value stays
    between the smallest and the largest leaf there (``bottom`` and ``top``,
    indexed like ``start``, as in :func:`_column_paths`).  ``out[:, slot[f], i]``
    are the sums over trees ``0 .. n_trees - 1`` of those rises and falls,
    rounded up to a multiple of ``step`` plus two steps (for the float64 sum
    and product), 65535 when larger (no bound).  Rows ``row_lo <= i < row_hi``;
    ``slot`` as in :func:`_code_leaves_ranges` (features not ranged point at a
    scratch slot).
    """
    n_slots = out.shape[1]
    depth = paths.shape[2]
    # per tree and leaf: the first node of each feature on the path, as (slot, rise, fall)
    on_slot = np.empty((n_trees, paths.shape[1], depth), dtype=np.int64)
    moves = np.empty((n_trees, paths.shape[1], depth, 2))  # rise, fall: one cache line
    n_first = np.zeros((n_trees, paths.shape[1]), dtype=np.int64)
    for t in range(n_trees):
        lb = leaf_start[t]
        n_leaves = leaf_start[t + 1] - lb
        for leaf in range(n_leaves):
            n_on = 0
            for d in range(depth):
                p = paths[t, leaf, d]
                if p < 0:
                    break
                sl = slot[nodes[start[t] + p, 0] & _FEATURE_BITS]
                new = True
                for u in range(n_on):
                    new &= on_slot[t, leaf, u] != sl
                if new:  # the first node on the feature: its subtree holds every new leaf
                    on_slot[t, leaf, n_on] = sl
                    moves[t, leaf, n_on, 0] = top[start[t] + p] - leaf_value[lb + leaf]
                    moves[t, leaf, n_on, 1] = leaf_value[lb + leaf] - bottom[start[t] + p]
                    n_on += 1
            n_first[t, leaf] = n_on
    B = _RANGE_BLOCK  # rows per block: each slot's results are stored as one run
    acc = np.zeros((n_slots, B, 2))
    per_step = 1.0 / step
    for i0 in range(row_lo, row_hi, B):
        nb = min(B, row_hi - i0)
        for t in range(n_trees):  # tree by tree: the block's additions do not wait on each other
            for b in range(nb):
                lf = leaves[i0 + b, t]
                for u in range(n_first[t, lf]):
                    sl = on_slot[t, lf, u]
                    acc[sl, b, 0] += moves[t, lf, u, 0]
                    acc[sl, b, 1] += moves[t, lf, u, 1]
        for h in range(2):
            for sl in range(n_slots):
                for b in range(nb):
                    out[h, sl, i0 + b] = min(np.ceil(acc[sl, b, h] * per_step) + 2.0, 65535.0)
                    acc[sl, b, h] = 0.0

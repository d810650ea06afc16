"""Scans over large per-row arrays (numba, one chunk per thread, no validation).

* :func:`sorted_run_starts`: the start row of each run of equal query ids
  when the ids are sorted (either direction), which makes every query
  contiguous; ``ltr.groups`` falls back to its general path otherwise;
* :func:`label_score_stats`: the labels' min, max and whether they are all
  whole numbers, and whether the scores are all finite, in one pass over
  both arrays (``ltr.metrics`` turns them into its usual checks).

The public wrappers call these only on large inputs (``PARALLEL_MIN_ROWS``):
below that numpy is as fast and nothing needs compiling.  Each thread scans
one contiguous chunk of at least ``_CHUNK_MIN`` rows (memory speed: a few
milliseconds on 10M rows on one core, so a second core nearly halves it on
an idle machine; see ``experiments/results/ndcg_speed.md``).
"""

from __future__ import annotations

import numba
import numpy as np
from numba import njit, prange

# Below this many rows the callers use numpy: as fast there, and nothing to
# compile (the same threshold as the dcg kernel's threaded driver).
PARALLEL_MIN_ROWS = 200_000
# Rows per thread below which a scan takes fewer threads: 10^6 rows scan in about 1 ms on one
# core.  On a busy machine waking the team can cost more (10-doc queries, 10^6 rows, load 5:
# 84 ms serial against 124 ms in two chunks, best of 9; 10^7 rows gain even there: 262 -> 212
# ms); on an idle one the team is still awake from the previous region and 10^6 rows, the
# nDCG shapes' size, scan in two chunks (one 10^6-row query at k=10: the two scans took about
# 45 % of its one-thread time, in a profile under load, while its kernel runs on both cores).
_CHUNK_MIN = 500_000


@njit(cache=True)
def _chunk_runs(prev, cur, first, found):
    # found[j]: the j-th row ``first + i`` where the id changes (views: no index
    # wraparound in the loop); returns (changes, rises, falls).
    cnt = 0
    up = False
    down = False
    for i in range(cur.shape[0]):
        a = prev[i]
        b = cur[i]
        if a != b:
            found[cnt] = first + i
            cnt += 1
            up |= b > a
            down |= b < a
    return cnt, up, down


@njit(cache=True, parallel=True)
def _run_starts(qid, n_chunks):
    # One pass, one contiguous chunk per thread, each writing its starts at its
    # own place in ``found`` (sized for the worst case: only the pages that
    # receive a start are touched), then gathered.  The loop is a function of
    # its own: loops written inside a parallel loop did not vectorise.
    n = qid.shape[0]
    size = (n + n_chunks - 1) // n_chunks
    found = np.empty(n, dtype=np.int64)
    counts = np.zeros(n_chunks, dtype=np.int64)
    rises = np.zeros(n_chunks, dtype=np.bool_)
    falls = np.zeros(n_chunks, dtype=np.bool_)
    for c in prange(n_chunks):
        lo = min(max(c * size, 1), n)
        hi = max(min((c + 1) * size, n), lo)
        counts[c], rises[c], falls[c] = _chunk_runs(qid[lo - 1:hi - 1], qid[lo:hi], lo,
                                                    found[lo:hi])
    if rises.any() and falls.any():
        return np.empty(0, dtype=np.int64), False
    out = np.empty(1 + counts.sum(), dtype=np.int64)
    out[0] = 0
    o = 1
    for c in range(n_chunks):
        lo = min(max(c * size, 1), n)
        out[o:o + counts[c]] = found[lo:lo + counts[c]]
        o += counts[c]
    return out, True


def sorted_run_starts(qid):
    """Return ``(starts, ok)``: the start row of each run of equal ids, if ``qid`` is sorted.

    ``ok`` is False (and ``starts`` empty) when ``qid`` rises somewhere and
    falls somewhere else: its runs may repeat an id, which the caller checks
    its own way.  ``qid`` is a 1-D integer array with at least one row.
    """
    return _run_starts(qid, _chunks(qid.shape[0]))


def _chunks(n):
    """Chunks of a scan over ``n`` rows: one per thread, none shorter than ``_CHUNK_MIN`` rows."""
    return max(1, min(numba.get_num_threads(), n // _CHUNK_MIN))


_EXP_MASK = 0x7FF0000000000000  # exponent bits of a float64: all set for NaN and inf
_MAG_MASK = 0x7FFFFFFFFFFFFFFF  # every bit but the sign
# The order keys (see _stats) of +inf and -inf: a larger (smaller) key is NaN.
_KEY_POS_INF = 0x7FF0000000000000
_KEY_NEG_INF = -0x7FF0000000000001


@njit(cache=True, fastmath=True)
def _chunk_stats(labels, scores):
    # The labels' min and max are taken on integer order keys (the float's bits,
    # the magnitude bits flipped for negatives: integers in the floats' order,
    # NaN beyond +-inf), because numba's float min/max reductions do not
    # vectorise (4 ns a row against 1 for this loop); the keys also show NaN and
    # inf, so only the scores need an exponent-bits loop.  Two loops: the fused
    # one measured slower.
    lab_bits = labels.view(np.int64)
    sc_bits = scores.view(np.int64)
    kmin = np.int64(_MAG_MASK)
    kmax = -kmin - 1
    frac = 0
    for i in range(lab_bits.shape[0]):
        b = lab_bits[i]
        key = b ^ ((b >> 63) & _MAG_MASK)
        kmin = min(kmin, key)
        kmax = max(kmax, key)
        v = labels[i]
        frac |= np.int64(v != np.trunc(v))
    bad = 0
    for i in range(sc_bits.shape[0]):
        bad |= np.int64((sc_bits[i] & _EXP_MASK) == _EXP_MASK)
    return kmin, kmax, frac, bad


@njit(cache=True, parallel=True)
def _stats(labels, scores, n_chunks):
    # One contiguous chunk per thread, like the qid scan.
    n = labels.shape[0]
    size = (n + n_chunks - 1) // n_chunks
    kmins = np.empty(n_chunks, dtype=np.int64)
    kmaxs = np.empty(n_chunks, dtype=np.int64)
    fracs = np.empty(n_chunks, dtype=np.int64)
    bads = np.empty(n_chunks, dtype=np.int64)
    for c in prange(n_chunks):
        lo = min(c * size, n)
        hi = min(lo + size, n)
        kmins[c], kmaxs[c], fracs[c], bads[c] = _chunk_stats(labels[lo:hi], scores[lo:hi])
    kmin = kmins.min()
    kmax = kmaxs.max()
    lab_bad = kmax >= _KEY_POS_INF or kmin <= _KEY_NEG_INF
    keys = np.empty(2, dtype=np.int64)
    keys[0] = kmin ^ ((kmin >> 63) & _MAG_MASK)  # back to the floats' bits
    keys[1] = kmax ^ ((kmax >> 63) & _MAG_MASK)
    lo_hi = keys.view(np.float64)
    return lo_hi[0], lo_hi[1], fracs.max() != 0, lab_bad, bads.max() != 0


def label_score_stats(labels, scores):
    """Return ``(lo, hi, whole, scores_finite)`` of float64 ``labels`` and ``scores``.

    ``lo`` and ``hi`` are NaN when a label is NaN or infinite (the caller
    then finds it with its usual check).
    """
    lo, hi, frac, lab_bad, sc_bad = _stats(labels, scores, _chunks(labels.shape[0]))
    if lab_bad:
        return float("nan"), float("nan"), False, not sc_bad
    return float(lo), float(hi), not frac, not sc_bad

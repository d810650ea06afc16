"""One-pass scans over large per-row arrays (numba, serial, no validation).

* :func:`sorted_run_starts`: the start row of each run of equal query ids
  when the ids are sorted (either direction), which makes every query
  contiguous; ``ltr.groups`` falls back to its general path otherwise
  (serial: one pass at memory speed);
* :func:`label_score_stats`: the labels' min, max and whether they are all
  whole numbers, and whether the scores are all finite, in one pass over
  both arrays (``ltr.metrics`` turns them into its usual checks).

The public wrappers call these only on large inputs (``PARALLEL_MIN_ROWS``):
below that numpy is as fast and nothing needs compiling.  Both stay serial: at
memory speed they take a few milliseconds on 10M rows, and a thread team per
call measured slower on the shared 2-core machine (see
``experiments/results/ndcg_speed.md``).
"""

from __future__ import annotations

import numpy as np
from numba import njit

# Below this many rows the callers use numpy: as fast there, and nothing to
# compile (the same threshold as the dcg kernel's threaded driver).
PARALLEL_MIN_ROWS = 200_000


@njit(cache=True)
def _run_starts(qid):
    # One serial pass (about 0.3 ns a row: it is not worth a thread team, which
    # measured slower on the shared 2-core machine); `found` is sized for the
    # worst case, and only the pages that receive a start are ever touched.
    n = qid.shape[0]
    found = np.empty(n, dtype=np.int64)
    found[0] = 0
    cnt = 1
    up = False
    down = False
    prev = qid[:n - 1]  # views: no index wraparound in the loop
    cur = qid[1:]
    for i in range(cur.shape[0]):
        a = prev[i]
        b = cur[i]
        if a != b:
            found[cnt] = i + 1
            cnt += 1
            up |= b > a
            down |= b < a
    if up and down:
        return np.empty(0, dtype=np.int64), False
    return found[:cnt].copy(), True


def sorted_run_starts(qid):
    """Return ``(starts, ok)``: the start row of each run of equal ids, if ``qid`` is sorted.

    ``ok`` is False (and ``starts`` empty) when ``qid`` rises somewhere and
    falls somewhere else: its runs may repeat an id, which the caller checks
    its own way.  ``qid`` is a 1-D integer array with at least one row.
    """
    return _run_starts(qid)


_EXP_MASK = 0x7FF0000000000000  # exponent bits of a float64: all set for NaN and inf
_MAG_MASK = 0x7FFFFFFFFFFFFFFF  # every bit but the sign
# The order keys (see _stats) of +inf and -inf: a larger (smaller) key is NaN.
_KEY_POS_INF = 0x7FF0000000000000
_KEY_NEG_INF = -0x7FF0000000000001


@njit(cache=True, fastmath=True)
def _stats(labels, scores):
    # Serial, like the qid scan: one more thread team per call measured slower
    # than the pass itself on the shared machine.  The labels' min and max are
    # taken on integer order keys (the float's bits, the magnitude bits flipped
    # for negatives: integers in the floats' order, NaN beyond +-inf), because
    # numba's float min/max reductions do not vectorise (4 ns a row against 1
    # for this loop); the keys also show NaN and inf, so only the scores need
    # an exponent-bits loop.  Two loops: the fused one measured slower.
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
    lab_bad = kmax >= _KEY_POS_INF or kmin <= _KEY_NEG_INF
    keys = np.empty(2, dtype=np.int64)
    keys[0] = kmin ^ ((kmin >> 63) & _MAG_MASK)  # back to the floats' bits
    keys[1] = kmax ^ ((kmax >> 63) & _MAG_MASK)
    lo_hi = keys.view(np.float64)
    return lo_hi[0], lo_hi[1], frac != 0, lab_bad, bad != 0


def label_score_stats(labels, scores):
    """Return ``(lo, hi, whole, scores_finite)`` of float64 ``labels`` and ``scores``.

    ``lo`` and ``hi`` are NaN when a label is NaN or infinite (the caller
    then finds it with its usual check).
    """
    lo, hi, frac, lab_bad, sc_bad = _stats(labels, scores)
    if lab_bad:
        return float("nan"), float("nan"), False, not sc_bad
    return float(lo), float(hi), not frac, not sc_bad

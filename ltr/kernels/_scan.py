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


@njit(cache=True, fastmath=True)
def _stats(labels, scores):
    # Serial, like the qid scan: one more thread team per call measured slower
    # than the pass itself on the shared machine.  fastmath lets min/max
    # vectorise; NaN and inf are found on the bits, which fastmath cannot
    # assume away (min/max are discarded then).  Two loops with integer flags:
    # the fused loop with boolean flags did not vectorise (4.4 against 1.7 ns a row).
    lab_bits = labels.view(np.int64)
    sc_bits = scores.view(np.int64)
    n = labels.shape[0]
    lo = np.inf
    hi = -np.inf
    frac = 0
    for i in range(n):
        v = labels[i]
        lo = min(lo, v)
        hi = max(hi, v)
        frac |= np.int64(v != np.floor(v))
    bad = 0
    for i in range(n):
        bad |= (((lab_bits[i] & _EXP_MASK) == _EXP_MASK) * 1
                + ((sc_bits[i] & _EXP_MASK) == _EXP_MASK) * 2)
    return lo, hi, frac != 0, (bad & 1) != 0, (bad & 2) != 0


def label_score_stats(labels, scores):
    """Return ``(lo, hi, whole, scores_finite)`` of float64 ``labels`` and ``scores``.

    ``lo`` and ``hi`` are NaN when a label is NaN or infinite (the caller
    then finds it with its usual check).
    """
    lo, hi, frac, lab_bad, sc_bad = _stats(labels, scores)
    if lab_bad:
        return float("nan"), float("nan"), False, not sc_bad
    return float(lo), float(hi), not frac, not sc_bad

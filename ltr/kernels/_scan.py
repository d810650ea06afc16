"""One-pass scans over large per-row arrays (numba, no validation).

* :func:`sorted_run_starts`: the start row of each run of equal query ids
  when the ids are sorted (either direction), which makes every query
  contiguous; ``ltr.groups`` falls back to its general path otherwise
  (serial: one pass at memory speed);
* :func:`label_score_stats`: the labels' min, max and whether they are all
  whole numbers, and whether the scores are all finite, in one pass over
  both arrays, threaded (``ltr.metrics`` turns them into its usual checks).

The public wrappers call these only on large inputs (``PARALLEL_MIN_ROWS``):
below that numpy is as fast and nothing needs compiling.
"""

from __future__ import annotations

import numba
import numpy as np
from numba import njit, prange

# Below this many rows the callers use numpy: waking threads and compiling
# cost more than the scan saves.
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


@njit(cache=True, parallel=True, fastmath=True)
def _stats(labels, scores, n_chunks):
    # fastmath lets min/max vectorise; NaN and inf are found on the bits,
    # which fastmath cannot assume away (min/max are discarded then).
    n = labels.shape[0]
    lab_bits = labels.view(np.int64)
    sc_bits = scores.view(np.int64)
    lo_c = np.empty(n_chunks)
    hi_c = np.empty(n_chunks)
    frac_c = np.zeros(n_chunks, dtype=np.bool_)
    bad_c = np.zeros(n_chunks, dtype=np.bool_)
    bad_c2 = np.zeros(n_chunks, dtype=np.bool_)
    for c in prange(n_chunks):
        a = c * n // n_chunks
        b = (c + 1) * n // n_chunks
        lab = labels[a:b]
        lb = lab_bits[a:b]
        sb = sc_bits[a:b]
        lo = np.inf
        hi = -np.inf
        frac = False
        lab_bad = False
        sc_bad = False
        for i in range(lab.shape[0]):
            v = lab[i]
            lo = min(lo, v)
            hi = max(hi, v)
            frac |= v != np.floor(v)
            lab_bad |= (lb[i] & _EXP_MASK) == _EXP_MASK
            sc_bad |= (sb[i] & _EXP_MASK) == _EXP_MASK
        lo_c[c] = lo
        hi_c[c] = hi
        frac_c[c] = frac
        bad_c[c] = lab_bad
        bad_c2[c] = sc_bad
    return lo_c, hi_c, frac_c, bad_c, bad_c2


def label_score_stats(labels, scores):
    """Return ``(lo, hi, whole, scores_finite)`` of float64 ``labels`` and ``scores``.

    ``lo`` and ``hi`` are NaN when a label is NaN or infinite (the caller
    then finds it with its usual check).
    """
    n_chunks = max(1, min(labels.shape[0] // 65_536, 8 * numba.get_num_threads()))
    lo_c, hi_c, frac_c, bad_lab, bad_sc = _stats(labels, scores, n_chunks)
    if bad_lab.any():
        return float("nan"), float("nan"), False, not bool(bad_sc.any())
    return float(lo_c.min()), float(hi_c.max()), not bool(frac_c.any()), not bool(bad_sc.any())

"""Held-out click statistics per query for choosing a debiasing method (no validation)."""

from __future__ import annotations

import numpy as np
from numba import njit


@njit(cache=True, nogil=True)
def examined_pair_counts(scores: np.ndarray, click: np.ndarray, position: np.ndarray,
                         offsets: np.ndarray, list_query: np.ndarray,
                         n_queries: int) -> tuple[np.ndarray, np.ndarray]:
    """Per query: (clicked, skipped) pairs above each list's last click that *scores* orders right.

    In list ``l`` (rows ``offsets[l]:offsets[l + 1]``) every pair of a clicked row
    and a row without a click, both at or above the list's deepest click, counts
    once; it is ordered right when the clicked row scores higher (a tie counts
    half).  Returns ``(right, pairs)``, each of shape ``(n_queries,)``, summed
    over the lists of each query (``list_query[l]``).
    """
    right = np.zeros(n_queries)
    pairs = np.zeros(n_queries)
    for lst in range(offsets.size - 1):
        a, b = offsets[lst], offsets[lst + 1]
        last = 0
        for r in range(a, b):
            if click[r] > 0.0 and position[r] > last:
                last = position[r]
        if last == 0:
            continue
        q = list_query[lst]
        for i in range(a, b):
            if click[i] <= 0.0:
                continue
            for j in range(a, b):
                if click[j] > 0.0 or position[j] > last:
                    continue
                pairs[q] += 1.0
                if scores[i] > scores[j]:
                    right[q] += 1.0
                elif scores[i] == scores[j]:
                    right[q] += 0.5
    return right, pairs

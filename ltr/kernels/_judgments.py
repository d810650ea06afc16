"""Judgment kernels of qrels/run evaluation: string ids, sorted judgments, duplicate checks.

:func:`hash_strings` and :func:`run_starts` turn UTF-8 id buffers (offsets +
bytes) into keys and run boundaries (elsewhere, strings are ``(starts, ends,
data)`` triples: string ``i`` is ``data[starts[i]:ends[i]]``, which views
Arrow buffers and Python objects alike without a copy);
:func:`sort_judgments` orders each query's judgments by key (and the ideal
gains descending); :func:`first_duplicate` finds a document repeated inside
a query.  Used by :mod:`ltr.evaluation` through :mod:`ltr.kernels._rank`'s
metric kernels.  Nothing here validates input or imports from the rest of
``ltr``.
"""

from __future__ import annotations

import numba
import numpy as np
from numba import njit, prange

from ltr.kernels._cache import frozen

_CHUNK = 64  # queries per work item of the parallel loops (as in ltr.kernels._rank)


@njit(cache=True, parallel=True)
def hash_strings(offsets, data, out):
    """64-bit FNV-1a hash of each string ``data[offsets[i]:offsets[i + 1]]`` into ``out``."""
    prime = np.uint64(1099511628211)
    for i in prange(out.shape[0]):
        h = np.uint64(14695981039346656037)
        for j in range(offsets[i], offsets[i + 1]):
            h = (h ^ np.uint64(data[j])) * prime
        out[i] = h


@njit(cache=True)
def run_starts(offsets, data):
    """Rows whose string differs from the previous row's (row 0 included)."""
    n = offsets.shape[0] - 1
    out = np.empty(n, dtype=np.int64)
    count = 0
    starts = offsets[:-1]
    ends = offsets[1:]
    for i in range(n):
        if i == 0 or not _same(i, i - 1, starts, ends, data, starts, ends, data):
            out[count] = i
            count += 1
    return out[:count]


@njit(cache=True, inline="always")
def _same(a, b, starts_a, ends_a, data_a, starts_b, ends_b, data_b):
    """Whether string ``a`` of strings A equals string ``b`` of B (no strings: True).

    String ``i`` of A is ``data_a[starts_a[i]:ends_a[i]]``.
    """
    if starts_a.shape[0] == 0:
        return True
    sa = starts_a[a]
    sb = starts_b[b]
    la = ends_a[a] - sa
    if la != ends_b[b] - sb:
        return False
    for j in range(la):
        if data_a[sa + j] != data_b[sb + j]:
            return False
    return True


def sort_judgments(offsets, rows, key, rel, key_out, row_out, rel_out, ideal_out):
    """Sort each query's judgments by document key, and their relevance descending.

    Writes ``key_out``, ``row_out``, ``rel_out`` (by key) and ``ideal_out``.
    Returns a flag per query holding two equal keys (for :func:`first_duplicate`).
    """
    found = np.zeros(offsets.shape[0] - 1, dtype=np.bool_)
    _sort_judgments(offsets, rows, key, frozen(rel), key_out, row_out, rel_out, ideal_out, found,
                    numba.get_num_threads())
    return found


@njit(cache=True, parallel=True)
def _sort_judgments(offsets, rows, key, rel, key_out, row_out, rel_out, ideal_out, found,
                    n_threads):
    n_q = offsets.shape[0] - 1
    n_blocks = max(1, min(n_threads, (n_q + _CHUNK - 1) // _CHUNK))
    n_chunks = (n_q + _CHUNK - 1) // _CHUNK
    for b in prange(n_blocks):
        for c in range(b, n_chunks, n_blocks):
            for q in range(c * _CHUNK, min(n_q, (c + 1) * _CHUNK)):
                start = offsets[q]
                end = offsets[q + 1]
                if end - start > 64:
                    perm = np.argsort(key[rows[start:end]], kind="mergesort")
                    for j in range(end - start):
                        r = rows[start + perm[j]]
                        key_out[start + j] = key[r]
                        row_out[start + j] = r
                        rel_out[start + j] = rel[r]
                    ranked = np.sort(rel_out[start:end])
                    for j in range(end - start):
                        ideal_out[start + j] = ranked[end - start - 1 - j]
                    for j in range(start + 1, end):
                        if key_out[j] == key_out[j - 1]:
                            found[q] = True
                    continue
                # short queries: insertion sorts in place, nothing allocated
                for j in range(start, end):
                    r = rows[j]
                    kr = key[r]
                    lr = rel[r]
                    i = j
                    while i > start and key_out[i - 1] > kr:
                        key_out[i] = key_out[i - 1]
                        row_out[i] = row_out[i - 1]
                        rel_out[i] = rel_out[i - 1]
                        i -= 1
                    key_out[i] = kr
                    row_out[i] = r
                    rel_out[i] = lr
                    i = j
                    while i > start and ideal_out[i - 1] < lr:
                        ideal_out[i] = ideal_out[i - 1]
                        i -= 1
                    ideal_out[i] = lr
                for j in range(start + 1, end):
                    if key_out[j] == key_out[j - 1]:
                        found[q] = True


def first_duplicate(offsets, rows, key, strings, found=None):
    """Return the row of the first document repeated inside a query, or -1.

    Repeated: equal keys and, given strings ``(starts, ends, data)`` (see
    :func:`_same`; empty: the keys are the ids), equal bytes.  ``rows`` lists
    the rows grouped by query; ``found`` flags the queries that hold equal
    keys (:func:`sort_judgments` returns it; default: computed here).
    """
    if found is None:
        found = _duplicate_queries(offsets, rows, key, numba.get_num_threads())
    for q in np.flatnonzero(found):
        row = _query_duplicate(offsets[q], offsets[q + 1], rows, key, *map(frozen, strings))
        if row >= 0:
            return row
    return -1


@njit(cache=True, parallel=True)
def _duplicate_queries(offsets, rows, key, n_threads):
    """Flag the queries holding two equal keys (an open-addressing set per block)."""
    n_q = offsets.shape[0] - 1
    longest = 1
    for q in range(n_q):
        longest = max(longest, offsets[q + 1] - offsets[q])
    size = 4
    while size < 2 * longest:
        size *= 2
    mask = np.uint64(size - 1)
    n_blocks = max(1, min(n_threads, (n_q + _CHUNK - 1) // _CHUNK))
    n_chunks = (n_q + _CHUNK - 1) // _CHUNK
    table = np.empty((n_blocks, size), dtype=np.int64)
    stamp = np.full((n_blocks, size), -1, dtype=np.int64)
    found = np.zeros(n_q, dtype=np.bool_)
    mix = np.uint64(0x9E3779B97F4A7C15)
    for b in prange(n_blocks):
        for c in range(b, n_chunks, n_blocks):
            for q in range(c * _CHUNK, min(n_q, (c + 1) * _CHUNK)):
                for j in range(offsets[q], offsets[q + 1]):
                    v = key[rows[j]]
                    slot = np.int64(((np.uint64(v) * mix) >> np.uint64(32)) & mask)
                    while stamp[b, slot] == q:
                        if table[b, slot] == v:
                            found[q] = True
                            break
                        slot = (slot + 1) & (size - 1)
                    if found[q]:
                        break
                    stamp[b, slot] = q
                    table[b, slot] = v
    return found


@njit(cache=True)
def _query_duplicate(start, end, rows, key, starts, ends, data):
    perm = np.argsort(key[rows[start:end]], kind="mergesort")
    for j in range(1, end - start):
        b = rows[start + perm[j]]
        i = j - 1
        while i >= 0 and key[rows[start + perm[i]]] == key[b]:
            if _same(rows[start + perm[i]], b, starts, ends, data, starts, ends, data):
                return b
            i -= 1
    return -1


__all__ = ["first_duplicate", "hash_strings", "run_starts", "sort_judgments"]

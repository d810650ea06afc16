"""Whitespace-separated text tables (TREC qrels and run files) split in parallel.

:func:`scan_fields` finds, for every non-blank line of a byte buffer, the
start and length of the fields asked for and parses one numeric field;
:func:`gather` copies byte ranges into one ``(offsets, bytes)`` buffer.
Whitespace is ASCII space, tab, CR, VT and FF; lines end at LF.  Numbers are
parsed exactly where one IEEE operation is enough (at most 19 significant
digits, a value below 2**53 and a power of ten up to 1e22: Clinger's fast
path, correctly rounded like ``float()``); any other token is flagged for the
caller's exact parser.  Nothing here validates input or imports from the rest
of ``ltr``.
"""

from __future__ import annotations

import numba
import numpy as np
from numba import njit, prange

_POW10 = np.array([10.0**i for i in range(23)])
_MAX_EXACT = 2**53

#: ``scan_fields`` status per line: parsed, number left to the caller, wrong field count
OK, SLOW, BAD = 0, 1, 2


@njit(cache=True, inline="always")
def _space(c):
    return c == 32 or (9 <= c <= 13 and c != 10)


@njit(cache=True)
def parse_number(buf, s, e):
    """``(exact, value)`` of ``buf[s:e]`` by the fast path; ``exact`` False: parse elsewhere."""
    i = s
    neg = False
    if i < e and (buf[i] == 43 or buf[i] == 45):  # + -
        neg = buf[i] == 45
        i += 1
    mant = np.uint64(0)
    sig = 0
    exp10 = 0
    digits = 0
    while i < e and 48 <= buf[i] <= 57:
        if mant != 0 or buf[i] != 48:
            if sig >= 19:
                return False, 0.0
            mant = mant * np.uint64(10) + np.uint64(buf[i] - 48)
            sig += 1
        digits += 1
        i += 1
    if i < e and buf[i] == 46:  # .
        i += 1
        while i < e and 48 <= buf[i] <= 57:
            if mant != 0 or buf[i] != 48:
                if sig >= 19:
                    return False, 0.0
                mant = mant * np.uint64(10) + np.uint64(buf[i] - 48)
                sig += 1
            exp10 -= 1
            digits += 1
            i += 1
    if digits == 0:
        return False, 0.0
    if i < e and (buf[i] == 101 or buf[i] == 69):  # e E
        i += 1
        eneg = False
        if i < e and (buf[i] == 43 or buf[i] == 45):
            eneg = buf[i] == 45
            i += 1
        if i == e:
            return False, 0.0
        ev = 0
        while i < e and 48 <= buf[i] <= 57:
            if ev > 10000:
                return False, 0.0
            ev = ev * 10 + (buf[i] - 48)
            i += 1
        exp10 += -ev if eneg else ev
    if i != e:
        return False, 0.0
    if mant == 0:
        return True, -0.0 if neg else 0.0
    if mant > np.uint64(_MAX_EXACT) or exp10 < -22 or exp10 > 22:
        return False, 0.0
    v = np.float64(mant)
    v = v * _POW10[exp10] if exp10 >= 0 else v / _POW10[-exp10]
    return True, -v if neg else v


@njit(cache=True)
def _count_lines(buf, start, end):
    """Non-blank lines in ``buf[start:end]``."""
    count = 0
    blank = True
    for i in range(start, end):
        c = buf[i]
        if c == 10:
            if not blank:
                count += 1
            blank = True
        elif blank and not _space(c):
            blank = False
    if not blank:
        count += 1
    return count


def chunk_bounds(buf, n_chunks):
    """Byte offsets splitting ``buf`` into about ``n_chunks`` pieces at line ends."""
    n = buf.shape[0]
    bounds = [0]
    for c in range(1, n_chunks):
        at = max(bounds[-1], n * c // n_chunks)
        nl = np.flatnonzero(buf[at : at + (1 << 20)] == 10)
        while nl.shape[0] == 0 and at < n:
            at += 1 << 20
            nl = np.flatnonzero(buf[at : at + (1 << 20)] == 10)
        if nl.shape[0] == 0:
            break
        bounds.append(at + int(nl[0]) + 1)
    bounds.append(n)
    return np.asarray(bounds, dtype=np.int64)


def scan_fields(buf, n_fields, keep, number):
    """Split every non-blank line of ``buf`` into whitespace-separated fields.

    Parameters
    ----------
    buf : ndarray of uint8
    n_fields : int
        Fields a line must have.
    keep : ndarray of int64
        The field numbers whose ``(start, length)`` are returned (include
        ``number`` to read back the tokens flagged :data:`SLOW`).
    number : int
        The field number parsed as a float.

    Returns
    -------
    starts, lengths : ndarray of shape (n_lines, len(keep))
    values : ndarray of float64
    status : ndarray of int8
        :data:`OK`, :data:`SLOW` (the number needs the exact parser) or
        :data:`BAD` (not ``n_fields`` fields) per line.
    line_at : ndarray of int64
        Byte offset where each line starts.
    high : bool
        Whether any byte is >= 0x80 (the text is not plain ASCII).
    """
    n_chunks = max(1, 4 * numba.get_num_threads())
    bounds = chunk_bounds(buf, n_chunks)
    counts = _chunk_counts(buf, bounds)
    first = np.zeros(counts.shape[0] + 1, dtype=np.int64)
    np.cumsum(counts, out=first[1:])
    n = int(first[-1])
    starts = np.empty((n, keep.shape[0]), dtype=np.int64)
    lengths = np.empty((n, keep.shape[0]), dtype=np.int64)
    values = np.empty(n)
    status = np.empty(n, dtype=np.int8)
    line_at = np.empty(n, dtype=np.int64)
    high = _split(buf, bounds, first, n_fields, keep, number, starts, lengths, values, status,
                  line_at)
    return starts, lengths, values, status, line_at, bool(high)


@njit(cache=True, parallel=True)
def _chunk_counts(buf, bounds):
    out = np.empty(bounds.shape[0] - 1, dtype=np.int64)
    for c in prange(bounds.shape[0] - 1):
        out[c] = _count_lines(buf, bounds[c], bounds[c + 1])
    return out


@njit(cache=True, parallel=True)
def _split(buf, bounds, first, n_fields, keep, number, starts, lengths, values, status,
           line_at):
    n_keep = keep.shape[0]
    high = 0
    for c in prange(bounds.shape[0] - 1):
        row = first[c]
        i = bounds[c]
        end = bounds[c + 1]
        while i < end:
            # one line: i .. its LF (or the chunk end)
            line_start = i
            field = 0
            ok = True
            parsed = OK
            while i < end and buf[i] != 10:
                c0 = buf[i]
                if _space(c0):
                    i += 1
                    continue
                s = i
                while i < end and buf[i] != 10 and not _space(buf[i]):
                    if buf[i] >= 128:
                        high += 1
                    i += 1
                if field < n_fields:
                    for k in range(n_keep):
                        if keep[k] == field:
                            starts[row, k] = s
                            lengths[row, k] = i - s
                    if field == number:
                        exact, v = parse_number(buf, s, i)
                        values[row] = v
                        if not exact:
                            parsed = SLOW
                field += 1
            i += 1  # past the LF
            if field == 0:
                continue  # a blank line
            if field != n_fields:
                ok = False
            status[row] = parsed if ok else BAD
            line_at[row] = line_start
            row += 1
    return high


@njit(cache=True, parallel=True)
def gather(buf, starts, lengths, offsets, data):
    """Copy ``buf[starts[i]:starts[i] + lengths[i]]`` to ``data[offsets[i]:offsets[i + 1]]``."""
    for i in prange(starts.shape[0]):
        s = starts[i]
        o = offsets[i]
        for j in range(lengths[i]):
            data[o + j] = buf[s + j]


__all__ = ["BAD", "OK", "SLOW", "chunk_bounds", "gather", "parse_number", "scan_fields"]

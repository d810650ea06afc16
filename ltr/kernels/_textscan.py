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


@njit(cache=True)
def parse_number(buf, s, e):
    """``(exact, value)`` of ``buf[s:e]`` by the fast path; ``exact`` False: parse elsewhere."""
    i = s
    neg = False
    if i < e and (buf[i] == 43 or buf[i] == 45):  # + -
        neg = buf[i] == 45
        i += 1
    if e - i > 20:  # too many digits for the fast path in any case
        return False, 0.0
    mant = np.uint64(0)
    exp10 = 0
    first = i
    while i < e and 48 <= buf[i] <= 57:
        mant = mant * np.uint64(10) + np.uint64(buf[i] - 48)
        i += 1
    digits = i - first
    if i < e and buf[i] == 46:  # .
        i += 1
        first = i
        while i < e and 48 <= buf[i] <= 57:
            mant = mant * np.uint64(10) + np.uint64(buf[i] - 48)
            i += 1
        exp10 = first - i
        digits += i - first
    if digits == 0:
        return False, 0.0
    if digits > 19:  # the mantissa may have overflowed 64 bits
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


def scan_fields(buf, n_fields, fields, number):
    """Split every non-blank line of ``buf`` into whitespace-separated fields.

    Parameters
    ----------
    buf : ndarray of uint8
    n_fields : int
        Fields a line must have.
    fields : ndarray of int64
        The field numbers whose ``(start, length)`` are returned; include
        ``number`` to read back the tokens flagged :data:`SLOW`.
    number : int
        The field number parsed as a float.

    Returns
    -------
    starts, lengths : ndarray of int64, shape (len(fields), n_lines)
    values : ndarray of float64
    status : ndarray of int8
        :data:`OK`, :data:`SLOW` (the number needs an exact parser) or
        :data:`BAD` (not ``n_fields`` fields) per line.
    line_at : ndarray of int64
        Byte offset where each line starts.
    """
    n_chunks = max(1, 4 * numba.get_num_threads())
    bounds = chunk_bounds(buf, n_chunks)
    room = _chunk_newlines(buf, bounds)  # lines per chunk, at most
    first = np.zeros(room.shape[0] + 1, dtype=np.int64)
    np.cumsum(room, out=first[1:])
    n = int(first[-1])
    starts = np.empty((fields.shape[0], n), dtype=np.int64)
    lengths = np.empty((fields.shape[0], n), dtype=np.int64)
    values = np.empty(n)
    status = np.empty(n, dtype=np.int8)
    line_at = np.empty(n, dtype=np.int64)
    used = _split(buf, bounds, first, n_fields, fields, number, starts, lengths, values, status,
                  line_at)
    if (used < room).any():  # blank lines: close the gaps
        keep = np.concatenate([np.arange(first[c], first[c] + used[c])
                               for c in range(used.shape[0])])
        starts, lengths = starts[:, keep], lengths[:, keep]
        values, status, line_at = values[keep], status[keep], line_at[keep]
    return starts, lengths, values, status, line_at


@njit(cache=True, parallel=True)
def _chunk_newlines(buf, bounds):
    out = np.empty(bounds.shape[0] - 1, dtype=np.int64)
    for c in prange(bounds.shape[0] - 1):
        count = 0
        for i in range(bounds[c], bounds[c + 1]):
            count += buf[i] == 10
        if bounds[c + 1] > bounds[c] and buf[bounds[c + 1] - 1] != 10:
            count += 1  # a last line without LF
        out[c] = count
    return out


#: byte classes: 0 part of a field, 1 whitespace, 2 line end
_CLASS = np.zeros(256, dtype=np.uint8)
_CLASS[[32, 9, 11, 12, 13]] = 1
_CLASS[10] = 2


@njit(cache=True, parallel=True)
def _split(buf, bounds, first, n_fields, fields, number, starts, lengths, values, status,
           line_at):
    n_keep = fields.shape[0]
    cls = _CLASS
    used = np.zeros(bounds.shape[0] - 1, dtype=np.int64)
    for c in prange(bounds.shape[0] - 1):
        row = first[c]
        i = bounds[c]
        end = bounds[c + 1]
        while i < end:
            line_start = i
            field = 0
            parsed = OK
            while True:
                while i < end and cls[buf[i]] == 1:
                    i += 1
                if i >= end or cls[buf[i]] == 2:
                    break
                s = i
                i += 1
                while i < end and cls[buf[i]] == 0:
                    i += 1
                if field < n_fields:
                    for k in range(n_keep):
                        if fields[k] == field:
                            starts[k, row] = s
                            lengths[k, row] = i - s
                    if field == number:
                        exact, v = parse_number(buf, s, i)
                        values[row] = v
                        if not exact:
                            parsed = SLOW
                field += 1
            i += 1  # past the LF
            if field == 0:
                continue  # a blank line
            status[row] = parsed if field == n_fields else BAD
            line_at[row] = line_start
            row += 1
        used[c] = row - first[c]
    return used


@njit(cache=True, parallel=True)
def gather(buf, starts, lengths, offsets, data):
    """Copy ``buf[starts[i]:starts[i] + lengths[i]]`` to ``data[offsets[i]:offsets[i + 1]]``."""
    for i in prange(starts.shape[0]):
        s = starts[i]
        o = offsets[i]
        for j in range(lengths[i]):
            data[o + j] = buf[s + j]


__all__ = ["BAD", "OK", "SLOW", "chunk_bounds", "gather", "parse_number", "scan_fields"]

"""Whitespace-separated text tables (TREC qrels and run files) split in parallel.

:func:`scan_columns` reads, for every non-blank line of a byte buffer, two id
fields into Arrow's string layout (int64 offsets and bytes, one piece per
chunk of the buffer, so no Python string is made) and one numeric field as
float64, in one pass over the bytes on numba's threads.  Whitespace is ASCII
space, tab, CR, VT and FF; lines end at LF.  A line that ends within 64 bytes
is split from bit masks of its whitespace and LF bytes made by one vector load
and compare (LLVM vector types, so SSE2, AVX2 or AVX-512 as the CPU has them):
its field count is a popcount and its fields are found with trailing-zero
counts; longer lines are split byte by byte, 8 bytes at a time inside a token.
Numbers are parsed by :func:`ltr.kernels._decimal.parse_decimal` (correctly
rounded, bit-identical to ``float()``); a token it leaves (``inf``, an exact
halfway case with more than 19 digits, not a number) is flagged for the
caller's exact parser.  Nothing here validates input or imports from outside
``ltr.kernels``.
"""

from __future__ import annotations

import mmap
from typing import NamedTuple

import numba
import numpy as np
from llvmlite import ir
from numba import njit, prange, types
from numba.extending import intrinsic

from ltr.kernels._decimal import _HIGH, bit_count, load8, parse_decimal, store8, trailing_zeros

#: ``scan_columns`` status per line: parsed, number left to the caller, wrong field count
OK, SLOW, BAD = 0, 1, 2


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


class Columns(NamedTuple):
    """What :func:`scan_columns` finds; chunk ``c`` holds rows ``first[c]:first[c] + used[c]``."""

    bounds: np.ndarray  #: byte offsets of the chunks' starts (and the end)
    first: np.ndarray  #: first row of each chunk (room for its lines, blank ones included)
    used: np.ndarray  #: rows (non-blank lines) of each chunk
    values: np.ndarray  #: the number per row; SLOW: where its token starts, BAD: its line
    status: np.ndarray  #: OK, SLOW or BAD per row (int8)
    offsets: np.ndarray  #: (2, rows + chunks): each id field's Arrow offsets, chunk by chunk
    data: tuple[np.ndarray, np.ndarray]  #: each id field's bytes, chunk c from bounds[c] on
    ascii: bool  #: every field byte is below 128


def scan_columns(buf, n_fields, ids, number):
    """Split every non-blank line of ``buf`` into fields in one parallel pass.

    Parameters
    ----------
    buf : ndarray of uint8
    n_fields : int
        Fields a line must have.
    ids : tuple of two int
        The field numbers copied out as strings (Arrow layout: int64 offsets
        and bytes per chunk).
    number : int
        The field number parsed as a float (:func:`ltr.kernels._decimal.parse_decimal`).

    Returns
    -------
    Columns
        Rows chunk by chunk, with gaps where a chunk has blank lines.
    """
    n_chunks = max(4 * numba.get_num_threads(), -(-buf.shape[0] // (1 << 30)))
    bounds = chunk_bounds(buf, n_chunks)
    room = _chunk_newlines(buf, bounds)  # lines per chunk, at most
    first = np.zeros(room.shape[0] + 1, dtype=np.int64)
    np.cumsum(room, out=first[1:])
    n = int(first[-1])
    values = _pages(n, np.float64)
    status = _pages(n, np.int8)
    offsets = _pages(2 * (n + room.shape[0]), np.int64).reshape(2, -1)
    data = (_pages(buf.shape[0], np.uint8),  # pages are touched only where written
            _pages(buf.shape[0], np.uint8))
    used, high = _split(buf, bounds, first, n_fields, ids[0], ids[1], number, values, status,
                        offsets, data[0], data[1])
    return Columns(bounds, first, used, values, status, offsets, data, not high)


def _pages(n, dtype):
    """Return an uninitialised array of *n* items (a large one on its own anonymous mapping).

    numpy advises huge pages for large arrays; after a process has freed much
    memory (a peer's dicts of millions of strings) the kernel compacts memory
    to find them, which cost up to 0.9 s of system time per 500 MB file read.
    Plain pages cost the same every time.
    """
    size = n * np.dtype(dtype).itemsize
    if size < (1 << 22):
        return np.empty(n, dtype=dtype)
    return np.frombuffer(mmap.mmap(-1, size), dtype=dtype)


@intrinsic
def _byte_masks(typingctx, arr, at):  # type: ignore[no-untyped-def]
    """``(whitespace, LF, high)`` bit masks of bytes ``arr[at:at + 64]``: bit j is byte j.

    One vector load and compares (LLVM's vector types: SSE2/AVX2/AVX-512 byte
    compares and mask moves); whitespace is space, tab, LF, VT, FF and CR,
    high a byte of 128 or more.
    """
    def codegen(context, builder, sig, args):  # type: ignore[no-untyped-def]
        data = context.make_array(sig.args[0])(context, builder, args[0]).data
        vec = ir.VectorType(ir.IntType(8), 64)
        v = builder.load(builder.bitcast(builder.gep(data, [args[1]]), vec.as_pointer()), align=1)

        def splat(x):  # type: ignore[no-untyped-def]
            return ir.Constant(vec, [ir.Constant(ir.IntType(8), x)] * 64)

        ws = builder.or_(builder.icmp_unsigned("==", v, splat(32)),
                         builder.icmp_unsigned("<", builder.sub(v, splat(9)), splat(5)))
        lf = builder.icmp_unsigned("==", v, splat(10))
        high = builder.icmp_signed("<", v, splat(0))
        masks = [builder.bitcast(m, ir.IntType(64)) for m in (ws, lf, high)]
        return context.make_tuple(builder, sig.return_type, masks)

    return types.UniTuple(types.uint64, 3)(arr, types.int64), codegen


@njit(cache=True, parallel=True)
def _chunk_newlines(buf, bounds):
    out = np.empty(bounds.shape[0] - 1, dtype=np.int64)
    for c in prange(bounds.shape[0] - 1):
        count = 0
        i = bounds[c]
        end = bounds[c + 1]
        while i + 64 <= end:
            count += np.int64(bit_count(_byte_masks(buf, i)[1]))
            i += 64
        while i < end:
            count += buf[i] == 10
            i += 1
        if end > bounds[c] and buf[end - 1] != 10:
            count += 1  # a last line without LF
        out[c] = count
    return out


#: byte classes: 0 part of a field, 1 whitespace, 2 line end
_CLASS = np.zeros(256, dtype=np.uint8)
_CLASS[[32, 9, 11, 12, 13]] = 1
_CLASS[10] = 2


_LOW = np.uint64(0x2121212121212121)


@njit(cache=True, inline="always")
def _token_end(buf, i, end, acc):
    """``(end of the token at i, acc | its bytes)``: 8 bytes at a time while they fit."""
    while i + 8 <= end:
        word = load8(buf, i)
        acc |= word
        below = (word - _LOW) & ~word & _HIGH  # the lowest flag marks the first byte < 33
        if below == 0:
            i += 8
            continue
        i += np.int64(trailing_zeros(below) >> np.uint64(3))
        if _CLASS[buf[i]] != 0:
            return i, acc
        i += 1  # a control byte inside the token
    while i < end:
        b = buf[i]
        if b <= 32 and _CLASS[b] != 0:
            break
        acc |= np.uint64(b)
        i += 1
    return i, acc


@njit(cache=True, inline="always")
def _copy(buf, s, e, end, data, p):
    """Copy token ``buf[s:e]`` to ``data[p:]``; return the new end of *data*.

    Whole words may write up to 7 bytes past the token: never past ``end`` less
    the chunk's start, as the copy never outruns the bytes read.
    """
    while s + 8 <= end and s < e:
        store8(data, p, load8(buf, s))
        s += 8
        p += 8
    p -= max(0, s - e)
    s = min(s, e)
    while s < e:
        data[p] = buf[s]
        s += 1
        p += 1
    return p


@njit(cache=True, inline="always")
def _field(buf, s, e, end, k, id_a, id_b, number, data_a, data_b, pa, pb, values, row):
    """Take field *k* (``buf[s:e]``) of a line: ``(pa, pb, slow)`` after copying or parsing it."""
    slow = False
    if k == id_a:
        pa = _copy(buf, s, e, end, data_a, pa)
    elif k == id_b:
        pb = _copy(buf, s, e, end, data_b, pb)
    elif k == number:
        exact, v = parse_decimal(buf, s, e)
        values[row] = v if exact else np.float64(s)  # SLOW: where the token is
        slow = not exact
    return pa, pb, slow


@njit(cache=True, parallel=True)
def _split(buf, bounds, first, n_fields, id_a, id_b, number, values, status, offsets, data_a,
           data_b):
    # A line ending within 64 bytes of its start (and of the chunk's end) is split from the bit
    # masks of one vector load: its fields are the runs of non-whitespace bits, counted at once
    # and walked start by start; any other line byte by byte (8 at a time inside a token).
    cls = _CLASS
    one = np.uint64(1)
    zero = np.uint64(0)
    n_chunks = bounds.shape[0] - 1
    used = np.zeros(n_chunks, dtype=np.int64)
    high = np.zeros(n_chunks, dtype=np.bool_)
    for c in prange(n_chunks):
        row = first[c]
        o = first[c] + c
        base = bounds[c]
        pa = base
        pb = base
        offsets[0, o] = 0
        offsets[1, o] = 0
        acc = np.uint64(0)  # the bytes of the fields split byte by byte, OR-ed
        wide = np.uint64(0)  # the high-byte masks of the lines split at once, OR-ed
        i = base
        end = bounds[c + 1]
        while i < end:
            line_start = i
            field = 0
            parsed = OK
            if i + 64 <= end:
                ws, lf, hi = _byte_masks(buf, i)
            else:
                ws, lf, hi = zero, zero, zero
            if lf != zero:
                n = trailing_zeros(lf)  # the line's length
                keep = (one << n) - one
                wide |= hi & keep
                starts = ~ws & keep & ((ws << one) | one)  # the first byte of each field
                field = np.int64(bit_count(starts))
                i += np.int64(n) + 1
                if field == n_fields:
                    k = 0
                    while starts != zero:
                        j = trailing_zeros(starts)
                        s = line_start + np.int64(j)
                        e = s + np.int64(trailing_zeros(ws >> j))  # the LF's bit is set
                        pa, pb, slow = _field(buf, s, e, end, k, id_a, id_b, number, data_a,
                                              data_b, pa, pb, values, row)
                        if slow:
                            parsed = SLOW
                        starts &= starts - one
                        k += 1
            else:
                while True:
                    while i < end and cls[buf[i]] == 1:
                        i += 1
                    if i >= end or buf[i] == 10:
                        break
                    s = i
                    i, acc = _token_end(buf, i, end, acc)
                    pa, pb, slow = _field(buf, s, i, end, field, id_a, id_b, number, data_a,
                                          data_b, pa, pb, values, row)
                    if slow:
                        parsed = SLOW
                    field += 1
                i += 1  # past the LF
            if field == 0:
                continue  # a blank line
            if field == n_fields:
                status[row] = parsed
            else:
                status[row] = BAD
                values[row] = np.float64(line_start)
            row += 1
            o += 1
            offsets[0, o] = pa - base
            offsets[1, o] = pb - base
        used[c] = row - first[c]
        high[c] = (acc & _HIGH) != 0 or wide != zero
    return used, high.any()


@njit(cache=True, parallel=True)
def token_ends(buf, starts):
    """Where each token starting at ``starts[i]`` ends (the next whitespace or line end)."""
    cls = _CLASS
    out = np.empty_like(starts)
    for k in prange(starts.shape[0]):
        i = starts[k]
        while i < buf.shape[0] and cls[buf[i]] == 0:
            i += 1
        out[k] = i
    return out


__all__ = ["BAD", "OK", "SLOW", "Columns", "chunk_bounds", "scan_columns", "token_ends"]

"""Decimal ASCII numbers to float64, correctly rounded (bit-identical to ``float()``).

:func:`parse_decimal` reads ``[+-]digits[.digits][(e|E)[+-]digits]`` from a
byte buffer without a Python object.  The significant digits form an integer
mantissa ``w`` and a power of ten ``q`` (the fraction's digits 8 at a time,
fast_float's SWAR trick):

* up to 19 digits: ``w`` times a 128-bit truncation of ``5**q`` (the
  Eisel-Lemire algorithm, as in fast_float and Go's ``strconv``; exact for a
  mantissa below 2**64 by Mushtak and Lemire's proof; the product older
  versions of the algorithm gave up on is still left to the caller);
* more than 19 significant digits: the first 19 are read as ``w`` and as
  ``w + 1``; when both round to the same double that is the answer, else the
  token is left to the caller.

The common short form (``[+-]`` 1 to 7 integer digits, then nothing or a
point and at most 18 fraction digits, 19 digits in all: a score ``repr``
writes, a relevance grade) is read without a loop over its digits: one 8-byte
load finds the integer digits (the first byte that is not a digit) and the
fraction is at most two whole words and the word ending the token with the
bytes before its last 1 to 8 digits replaced by ``'0'``; an integer is then
exact as a double, a fraction goes to Eisel-Lemire as above.  The same ``w``
and ``q`` as the digit-by-digit reading, so the same bits.

Anything else (``inf``, ``nan``, underscores, an empty mantissa, trailing
bytes) is reported as not parsed: the caller's exact parser (Python's
``float``) decides.  :func:`load8`, :func:`store8`, :func:`trailing_zeros`
and :func:`bit_count` are the word-at-a-time helpers the TREC scanner shares.
Nothing here validates input or imports from ``ltr``.
"""

from __future__ import annotations

import numpy as np
from llvmlite import ir
from numba import njit, types
from numba.extending import intrinsic

_MIN_Q, _MAX_Q = -342, 308  # below: zero; above: infinity (with at most 19 digits)


def _powers_of_five() -> tuple[np.ndarray, np.ndarray]:
    """High and low 64-bit words of ``5**q`` normalised to 128 bits, q in [-342, 308].

    Negative powers are rounded up (the reciprocal plus one), positive ones
    truncated: the table of Lemire's "Number Parsing at a Gigabyte per Second".
    """
    hi = np.empty(_MAX_Q - _MIN_Q + 1, dtype=np.uint64)
    lo = np.empty_like(hi)
    mask = (1 << 64) - 1
    for q in range(_MIN_Q, _MAX_Q + 1):
        if q < 0:
            power5 = 5**-q
            z = power5.bit_length()
            if q >= -27:
                c = (1 << (z + 127)) // power5 + 1
            else:
                c = (1 << (2 * z + 128)) // power5 + 1
                c >>= max(0, c.bit_length() - 128)
        else:
            c = 5**q
            c = c << (128 - c.bit_length()) if c.bit_length() < 128 else c >> (
                c.bit_length() - 128)
        hi[q - _MIN_Q] = c >> 64
        lo[q - _MIN_Q] = c & mask
    return hi, lo


_P5_HI, _P5_LO = _powers_of_five()


@intrinsic
def _mul_high(typingctx, a, b):  # type: ignore[no-untyped-def]
    """High 64 bits of the 128-bit product of two uint64."""
    def codegen(context, builder, sig, args):  # type: ignore[no-untyped-def]
        wide = ir.IntType(128)
        product = builder.mul(builder.zext(args[0], wide), builder.zext(args[1], wide))
        return builder.trunc(builder.lshr(product, ir.Constant(wide, 64)), ir.IntType(64))

    return types.uint64(types.uint64, types.uint64), codegen


@intrinsic
def _leading_zeros(typingctx, a):  # type: ignore[no-untyped-def]
    def codegen(context, builder, sig, args):  # type: ignore[no-untyped-def]
        return builder.ctlz(args[0], ir.Constant(ir.IntType(1), 0))

    return types.uint64(types.uint64), codegen


@intrinsic
def _as_double(typingctx, bits):  # type: ignore[no-untyped-def]
    def codegen(context, builder, sig, args):  # type: ignore[no-untyped-def]
        return builder.bitcast(args[0], ir.DoubleType())

    return types.float64(types.uint64), codegen


@njit(cache=True)
def _eisel_lemire(w, q):
    """``(ok, bits)``: the float64 bits of ``w * 10**q`` (``w > 0``, q in [-342, 308])."""
    one = np.uint64(1)
    lz = _leading_zeros(w)
    w = w << lz
    index = q - _MIN_Q
    low = w * _P5_HI[index]
    high = _mul_high(w, _P5_HI[index])
    if (high & np.uint64(0x1FF)) == np.uint64(0x1FF):  # 55 bits wanted: refine with the low word
        second = _mul_high(w, _P5_LO[index])
        low += second
        if second > low:
            high += one
        if low == np.uint64(0xFFFFFFFFFFFFFFFF) and (q < -27 or q > 55):
            return False, np.uint64(0)  # the truncated product cannot decide (never seen)
    upper = high >> np.uint64(63)
    shift = upper + np.uint64(9)
    mantissa = high >> shift
    power2 = ((217706 * q) >> 16) + 63 + np.int64(upper) - np.int64(lz) + 1023
    if power2 <= 0:  # subnormal
        if 1 - power2 >= 64:
            return True, np.uint64(0)
        mantissa >>= np.uint64(1 - power2)
        mantissa += mantissa & one
        mantissa >>= one
        power2 = 0 if mantissa < (one << np.uint64(52)) else 1
        return True, mantissa | (np.uint64(power2) << np.uint64(52))
    if (low <= one and -4 <= q <= 23 and (mantissa & np.uint64(3)) == one
            and (mantissa << shift) == high):
        mantissa &= ~one  # exactly halfway: round to even
    mantissa += mantissa & one
    mantissa >>= one
    if mantissa >= (np.uint64(2) << np.uint64(52)):
        mantissa = one << np.uint64(52)
        power2 += 1
    mantissa &= ~(one << np.uint64(52))
    if power2 >= 0x7FF:
        return True, np.uint64(0x7FF) << np.uint64(52)
    return True, mantissa | (np.uint64(power2) << np.uint64(52))


#: the same, inlined where it is called (:func:`parse_decimal`'s short form)
_eisel_lemire_inline = njit(inline="always")(_eisel_lemire.py_func)


@njit(cache=True)
def _compose(w, q, neg):
    """``(ok, value)`` of ``±w * 10**q`` for a mantissa ``w`` below 10**19."""
    if w == 0 or q < _MIN_Q:
        v = 0.0
    elif q > _MAX_Q:
        v = np.inf
    else:
        ok, bits = _eisel_lemire(w, q)
        if not ok:
            return False, 0.0
        v = _as_double(bits)
    return True, -v if neg else v


@intrinsic
def load8(typingctx, arr, at):  # type: ignore[no-untyped-def]
    """Bytes ``arr[at:at + 8]`` of a C-contiguous uint8 array as one little-endian uint64."""
    def codegen(context, builder, sig, args):  # type: ignore[no-untyped-def]
        data = context.make_array(sig.args[0])(context, builder, args[0]).data
        word = builder.bitcast(builder.gep(data, [args[1]]), ir.IntType(64).as_pointer())
        return builder.load(word, align=1)

    return types.uint64(arr, types.int64), codegen


@intrinsic
def store8(typingctx, arr, at, word):  # type: ignore[no-untyped-def]
    """Write *word* little-endian to bytes ``arr[at:at + 8]`` of a C-contiguous uint8 array."""
    def codegen(context, builder, sig, args):  # type: ignore[no-untyped-def]
        data = context.make_array(sig.args[0])(context, builder, args[0]).data
        ptr = builder.bitcast(builder.gep(data, [args[1]]), ir.IntType(64).as_pointer())
        builder.store(args[2], ptr, align=1)
        return context.get_dummy_value()

    return types.none(arr, types.int64, types.uint64), codegen


@intrinsic
def trailing_zeros(typingctx, a):  # type: ignore[no-untyped-def]
    """Trailing zero bits of a non-zero uint64."""
    def codegen(context, builder, sig, args):  # type: ignore[no-untyped-def]
        return builder.cttz(args[0], ir.Constant(ir.IntType(1), 1))

    return types.uint64(types.uint64), codegen


@intrinsic
def bit_count(typingctx, a):  # type: ignore[no-untyped-def]
    """Set bits of a uint64."""
    def codegen(context, builder, sig, args):  # type: ignore[no-untyped-def]
        return builder.ctpop(args[0])

    return types.uint64(types.uint64), codegen


_HIGH = np.uint64(0x8080808080808080)  # the high bit of every byte
_ZEROS = np.uint64(0x3030303030303030)  # eight ASCII '0'


@njit(cache=True, inline="always")
def _eight_digits_value(word):
    """Return the number 8 ASCII digits read little-endian write (fast_float's SWAR)."""
    word = word - _ZEROS
    word = word * np.uint64(10) + (word >> np.uint64(8))
    mask = np.uint64(0x000000FF000000FF)
    return ((word & mask) * np.uint64(0x000F424000000064)
            + ((word >> np.uint64(16)) & mask) * np.uint64(0x0000271000000001)) >> np.uint64(32)


@njit(cache=True, inline="always")
def _non_digits(word):
    """Return flags of the bytes of *word* that are not ASCII digits (0: eight digits).

    fast_float's test, with ``| word`` so a byte of 0x80 and up flags itself.
    Digits below a byte carry nothing into it, so the lowest flag is the high
    bit of the first byte that is not a digit.
    """
    return ((word + np.uint64(0x4646464646464646)) | (word - _ZEROS) | word) & _HIGH


@njit(cache=True, inline="always")
def _eight_digits(word):
    """Whether all 8 bytes of *word* are ASCII digits."""
    return _non_digits(word) == np.uint64(0)


@njit(cache=True)
def _long_mantissa(buf, i, e):
    """``(w, exp10, inexact, i)`` of the digits from *i*: the first 19 significant ones.

    ``inexact``: a non-zero digit past the 19th was dropped.
    """
    w = np.uint64(0)
    significant = 0
    exp10 = 0
    inexact = False
    while i < e and 48 <= buf[i] <= 57:
        if significant < 19:
            w = w * np.uint64(10) + np.uint64(buf[i] - 48)
            significant += w != 0
        else:
            exp10 += 1
            inexact |= buf[i] != 48
        i += 1
    if i < e and buf[i] == 46:  # .
        i += 1
        while i < e and 48 <= buf[i] <= 57:
            if significant < 19:
                w = w * np.uint64(10) + np.uint64(buf[i] - 48)
                significant += w != 0
                exp10 -= 1
            else:
                inexact |= buf[i] != 48
            i += 1
    return w, exp10, inexact, i


_POW10 = np.array([10**k for k in range(20)], dtype=np.uint64)
_WORD_SCALE = np.array([0, 1, 10**8], dtype=np.uint64)  # k whole words: the first's factor
_WORD_KEEP = np.array([0, 0, 1], dtype=np.uint64)  # and whether the second counts


@njit(cache=True, inline="always")
def _masked_digits(word, m):
    """Return the value of the top *m* bytes (1 to 8) of *word*: digits; -1 if one is not.

    The bytes below them are replaced by ``'0'`` (they are what the load read
    before the digits), so the word reads as the *m*-digit number.
    """
    low = (np.uint64(1) << np.uint64(64 - 8 * m)) - np.uint64(1)
    word = (word & ~low) | (_ZEROS & low)
    if not _eight_digits(word):
        return np.int64(-1)
    return np.int64(_eight_digits_value(word))


@njit(cache=True, inline="always")
def _short_decimal(buf, s, e):
    """``(ok, w, r)``: the token ``buf[s:e]`` (sign already read up to *s*) as ``w * 10**-r``.

    The common form only: 1 to 7 integer digits, then nothing or a point and 1
    to 18 fraction digits, 19 digits at most, read as whole words; ``ok``
    False: any other form (the general parser decides).  Reads bytes
    ``s:s + 24`` and ``e - 8:e`` of *buf*, which the caller checked exist.
    """
    word = load8(buf, s)
    flags = _non_digits(word)
    if e - s < 8:
        flags |= np.uint64(0x80) << np.uint64(8 * (e - s))  # the byte past the token
    if flags == np.uint64(0):
        return False, np.uint64(0), 0  # 8 integer digits or more
    d = np.int64(trailing_zeros(flags) >> np.uint64(3))  # the integer digits
    if d == 0:
        return False, np.uint64(0), 0
    # the integer digits shifted to the top, '0' below them: their value
    whole = _eight_digits_value((word << np.uint64(64 - 8 * d)) | (_ZEROS >> np.uint64(8 * d)))
    at = s + d
    if at == e:
        return True, whole, 0
    f = at + 1
    r = e - f
    if buf[at] != 46 or r < 1 or d + r > 19:
        return False, np.uint64(0), 0
    k = (r - 1) >> 3  # whole words of fraction digits before the last 1 to 8
    tail = _masked_digits(load8(buf, e - 8), r - 8 * k)
    a = load8(buf, f)
    b = load8(buf, f + 8)
    # without branches on k (15 to 18 fraction digits are 1 or 2 whole words)
    good = (tail >= 0) & (_eight_digits(a) | (k < 1)) & (_eight_digits(b) | (k < 2))
    if not good:
        return False, np.uint64(0), 0
    head = _eight_digits_value(a) * _WORD_SCALE[k] + _eight_digits_value(b) * _WORD_KEEP[k]
    w = whole * _POW10[r] + head * _POW10[r - 8 * k] + np.uint64(tail)
    return True, w, r


@njit(cache=True)
def parse_decimal(buf, s, e):
    """``(ok, value)`` of the token ``buf[s:e]``; ``ok`` False: leave it to ``float()``.

    *value* is what ``float(token)`` returns, bit for bit, whenever *ok*.
    """
    if s < e and e >= 8 and s + 25 <= buf.shape[0]:
        neg = buf[s] == 45  # -
        ok, w, r = _short_decimal(buf, s + np.int64(neg | (buf[s] == 43)), e)
        if ok and r == 0:  # an integer of at most 7 digits: exact as a double
            v = np.float64(w)
            return True, -v if neg else v
        if ok:  # 1 to 18 fraction digits: q in range, the sign as a bit
            if w == 0:
                bits = np.uint64(0)
            else:
                ok, bits = _eisel_lemire_inline(w, -r)
            if ok:
                return True, _as_double(bits | (np.uint64(neg) << np.uint64(63)))
    return _parse_general(buf, s, e)


@njit(cache=True)
def _parse_general(buf, s, e):
    """:func:`parse_decimal` of any form, digit by digit (8 at a time in the fraction)."""
    if s >= e:
        return False, 0.0
    neg = buf[s] == 45  # -
    i = s + np.int64(neg | (buf[s] == 43))  # past a sign, without a branch
    first = i
    w = np.uint64(0)
    while i < e and 48 <= buf[i] <= 57:
        w = w * np.uint64(10) + np.uint64(buf[i] - 48)
        i += 1
    digits = i - first
    exp10 = 0
    if i < e and buf[i] == 46:  # .
        i += 1
        fraction = i
        while i + 8 <= e and _eight_digits(load8(buf, i)):
            w = w * np.uint64(100000000) + _eight_digits_value(load8(buf, i))
            i += 8
        while i < e and 48 <= buf[i] <= 57:
            w = w * np.uint64(10) + np.uint64(buf[i] - 48)
            i += 1
        exp10 = fraction - i
        digits += i - fraction
    if digits == 0:
        return False, 0.0
    inexact = False
    if digits > 19:  # w may have overflowed: read the significant digits one by one
        w, exp10, inexact, i = _long_mantissa(buf, first, e)
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
            if ev < 100000:
                ev = ev * 10 + (buf[i] - 48)
            i += 1
        exp10 += -ev if eneg else ev
    if i != e:
        return False, 0.0
    ok, v = _compose(w, exp10, neg)
    if ok and inexact:  # the value lies between w and w + 1 (times 10**exp10)
        ok_up, up = _compose(w + np.uint64(1), exp10, neg)
        ok = ok_up and up == v
    return ok, v


__all__ = ["bit_count", "load8", "parse_decimal", "store8", "trailing_zeros"]

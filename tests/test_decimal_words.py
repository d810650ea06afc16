"""``parse_decimal``'s word-at-a-time path against its digit-by-digit parser and ``float()``.

The short form ``[+-]d{1,7}[.d{1,18}]`` (19 digits at most) is read as whole
8-byte words; every other token goes to the general parser.  Both must give
the same answer (parsed or left, and the same bits) for any token, wherever
it lies in the buffer and whatever bytes surround it.
"""

from __future__ import annotations

import random

import numpy as np
import pytest
from numba import njit

from ltr.kernels._decimal import _parse_general, parse_decimal


@njit(cache=True)
def _both(buf, starts, ends):
    n = starts.shape[0]
    ok = np.zeros((2, n), dtype=np.bool_)
    out = np.zeros((2, n))
    for k in range(n):
        ok[0, k], out[0, k] = parse_decimal(buf, starts[k], ends[k])
        ok[1, k], out[1, k] = _parse_general(buf, starts[k], ends[k])
    return ok, out


def _bits(values):
    return np.asarray(values, dtype=np.float64).view(np.int64)


def _random_tokens(rng, n):
    """Decimals of 0 to 10 integer and 0 to 22 fraction digits (leading and trailing zeros,
    signs, a bare point), some with an exponent or a stray byte."""
    tokens = []
    for _ in range(n):
        n_int, n_frac = rng.randint(0, 10), rng.randint(0, 22)
        text = "".join(rng.choices("0123456789", k=n_int + n_frac))
        if rng.random() < 0.3:  # leading zeros
            zeros = rng.randint(0, n_int + n_frac)
            text = "0" * zeros + text[zeros:]
        token = rng.choice(["", "", "-", "+"]) + text[:n_int]
        if n_frac or rng.random() < 0.5:
            token += "." + text[n_int:]
        roll = rng.random()
        if roll < 0.05:
            token += f"e{rng.randint(-30, 30)}"
        elif roll < 0.1:  # a stray byte somewhere
            at = rng.randint(0, len(token))
            token = token[:at] + rng.choice("x.-+e _/:") + token[at:]
        tokens.append(token)
    return tokens


def _packed(tokens, rng):
    """The tokens in one buffer, each between random bytes (digits, points, signs, spaces)."""
    pieces, starts, ends = [], [], []
    at = 0
    around = "0123456789.-+e x\n"
    for token in tokens:
        before = "".join(rng.choices(around, k=rng.randint(0, 9)))
        pieces.append(before + token + rng.choice(around))
        starts.append(at + len(before))
        ends.append(at + len(before) + len(token))
        at += len(pieces[-1])
    buf = np.frombuffer("".join(pieces).encode(), dtype=np.uint8)
    return buf, np.asarray(starts, dtype=np.int64), np.asarray(ends, dtype=np.int64)


def _check(buf, starts, ends, tokens):
    ok, out = _both(buf, starts, ends)
    assert (ok[0] == ok[1]).all()
    assert (_bits(out[0][ok[0]]) == _bits(out[1][ok[0]])).all()
    expected = np.array([float(t) if good else 0.0 for t, good in zip(tokens, ok[0])])
    assert (_bits(out[0][ok[0]]) == _bits(expected[ok[0]])).all()
    return ok[0]


def test_word_path_equals_digit_path_and_float_on_random_decimals():
    rng = random.Random(11)
    tokens = _random_tokens(rng, 60_000)
    buf, starts, ends = _packed(tokens, rng)
    ok = _check(buf, starts, ends, tokens)
    assert ok.mean() > 0.6


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_repr_and_fixed_forms_around_word_edges(seed):
    # fraction lengths 1 to 19 and integer lengths 1 to 8 cross the 8- and 16-byte words
    rng = np.random.default_rng(seed)
    values = rng.normal(size=4000) * 10.0 ** rng.integers(-3, 8, 4000)
    tokens = [repr(float(v)) for v in values]
    tokens += [f"{v:.{p}f}" for v, p in zip(values, rng.integers(0, 20, 4000))]
    tokens += [str(int(v)) for v in values] + [f"{int(v):08d}" for v in np.abs(values)]
    buf, starts, ends = _packed(tokens, random.Random(seed))
    ok = _check(buf, starts, ends, tokens)
    assert ok.all()


def test_tokens_at_the_buffers_ends():
    # near either end of the buffer the word path is skipped (no load past it)
    tokens = ["1", "-7", "0.5", "-0.6202388171236957", "12.25", "3", "+4.125", "9" * 19,
              "0.000001", "-1234567.123456789012"]
    for token in tokens:
        for before in ("", "x", "1234567 "):
            for after in ("", " ", "1" * 30):
                data = (before + token + after).encode()
                buf = np.frombuffer(data, dtype=np.uint8)
                s = np.array([len(before)], dtype=np.int64)
                _check(buf, s, s + len(token), [token])

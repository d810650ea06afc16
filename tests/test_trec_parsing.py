"""The TREC reader's number parser and scanner against Python's ``float`` and ``str.split``.

``ltr.kernels._decimal.parse_decimal`` must return ``float(token)`` bit for bit
whenever it answers; the tokens it leaves (``inf``, ``nan``, underscores,
undecidable halfway cases) reach ``float()`` through the reader, so a file's
scores equal ``float()`` of its tokens whatever their form.
"""

from __future__ import annotations

import decimal

import numpy as np
import pytest
from numba import njit

from ltr.evaluation.trec import read_qrels, read_run
from ltr.kernels._decimal import parse_decimal

EDGE = [
    "0", "-0", "+0", "0.0", "-0.0", ".5", "-.5", "+.5e-3", "5.", "-5.e2", "+1", "1e5", "1E-5",
    "1e+05", "1e-05", "00012.50", "0000000000000000000000000001", "9007199254740992",
    "9007199254740993", "9007199254740995", "18446744073709551615", "18446744073709551616",
    "99999999999999999999", "1234567890123456789", "12345678901234567890.5",
    "0.000000000000000000000000000001234567890123456789012", "1" + "0" * 30, "1" + "0" * 400,
    "0." + "0" * 400 + "1", "1e-400", "-1e400", "1e99999999999", "1e-99999999999", "4.9e-324",
    "5e-324", "2.4703282292062327e-324", "2.4703282292062328e-324", "1.7976931348623157e308",
    "1.7976931348623158e308", "1.7976931348623159e308", "2.2250738585072011e-308",
    "2.2250738585072012e-308", "2.2250738585072014e-308", "0.1", "0.2", "0.3", "1e23",
    "8.589973e9", "9007199254740993.0000000000000000000001", "1.00000000000000011102230246251565",
    "1.00000000000000011102230246251566", "7.2057594037927933e16",
]
NOT_NUMBERS = ["", "+", "-", ".", "e5", ".e5", "1e", "1e+", "1.2.3", "--1", "1-", "abc", "0x10",
               "1,5", "1 5"]
LEFT_TO_FLOAT = ["inf", "-inf", "+Infinity", "nan", "-NaN", "1_000", "1_0.5"]


@njit(cache=True)
def _parse_all(buf, starts, ends):
    ok = np.zeros(starts.shape[0], dtype=np.bool_)
    out = np.zeros(starts.shape[0])
    for k in range(starts.shape[0]):
        ok[k], out[k] = parse_decimal(buf, starts[k], ends[k])
    return ok, out


def _parse(tokens):
    """parse_decimal of each token, the tokens packed end to end (no separator after them)."""
    data = [t.encode() for t in tokens]
    ends = np.cumsum([len(d) for d in data]).astype(np.int64)
    buf = np.frombuffer(b"".join(data) + b"0" * 16, dtype=np.uint8)  # digits past the end
    return _parse_all(buf, ends - np.array([len(d) for d in data], dtype=np.int64), ends)


def _bits(values):
    return np.asarray(values, dtype=np.float64).view(np.int64)


def _tokens(rng):
    """repr of random doubles of every exponent, other formats, and exact halfway points."""
    raw = rng.integers(0, 2**63, size=20_000, dtype=np.uint64).view(np.float64)
    raw = np.concatenate([raw, -raw[:5000]])
    doubles = [float(v) for v in raw[np.isfinite(raw)]]
    normal = [float(v) for v in rng.normal(size=5000)]
    spread = [float(v) for v in rng.normal(size=5000) * 10.0 ** rng.integers(-320, 300, 5000)]
    tokens = [repr(v) for v in doubles + normal + spread]
    tokens += [f"{v:.17e}" for v in spread] + [f"{v:.25e}" for v in spread[:2000]]
    tokens += [f"{v:.20f}" for v in normal[:2000]] + [f"{v:.3e}" for v in spread[:2000]]
    tokens += [f"{v:.6f}" for v in normal[:2000]] + [str(int(v * 1e6)) for v in normal[:2000]]
    halfway = []
    for v in doubles[:3000] + normal[:1000]:
        up = float(np.nextafter(v, np.inf))
        if np.isfinite(up):
            middle = (decimal.Decimal(v) + decimal.Decimal(up)) / 2
            halfway.append(format(middle, "e"))
    return tokens, halfway


def test_parse_decimal_equals_float_bit_for_bit():
    tokens, halfway = _tokens(np.random.default_rng(0))
    ok, values = _parse(tokens + halfway + EDGE)
    expected = [float(t) for t in tokens + halfway + EDGE]
    assert ok[: len(tokens)].all()  # every repr / printf form is answered here
    assert (_bits(values[ok]) == _bits(np.array(expected)[ok])).all()


@pytest.mark.parametrize("token", NOT_NUMBERS + LEFT_TO_FLOAT)
def test_parse_decimal_leaves_what_it_cannot_read_exactly(token):
    ok, _ = _parse([token])
    assert not ok[0]


def test_a_runs_scores_equal_float_of_every_token_form(tmp_path):
    # the scanner's tokens are delimited by whitespace; inf and underscores reach float()
    tokens, halfway = _tokens(np.random.default_rng(1))
    scores = tokens[::7] + halfway[::3] + EDGE + ["inf", "-Infinity", "1_000"]
    path = tmp_path / "run.txt"
    seps = [" ", "\t", "  ", " \t"]
    path.write_text("".join(f"q{i % 13}{seps[i % 4]}Q0 d{i} {i}{seps[(i + 1) % 4]}{s} t"
                            f"{chr(13) if i % 5 == 0 else ''}\n" for i, s in enumerate(scores)))
    frame = read_run(path)
    assert (_bits(frame["score"].to_numpy()) == _bits([float(s) for s in scores])).all()
    assert frame["doc_id"].tolist() == [f"d{i}" for i in range(len(scores))]


@pytest.mark.parametrize("token", ["nan", "1.2.3", "0x10", "1e"])
def test_a_score_float_rejects_or_a_nan_is_named_with_its_line(tmp_path, token):
    path = tmp_path / "run.txt"
    path.write_text(f"q1 Q0 d1 1 1.5 t\n\nq1 Q0 d2 2 {token} t\n")
    with pytest.raises(ValueError, match=rf"line 3: score '{token}' is not a number: "
                                         rf"'q1 Q0 d2 2 {token} t'"):
        read_run(path)


def test_ids_of_any_length_and_non_ascii_read_as_str_split_does(tmp_path):
    # ids of 1 to 40 bytes cross the scanner's 8-byte words and its chunk ends
    rng = np.random.default_rng(2)
    alphabet = list("abcXYZ019-_.:/é✓")
    rows = []
    for i in range(3000):
        q = "".join(rng.choice(alphabet, size=int(rng.integers(1, 12))))
        d = "".join(rng.choice(alphabet, size=int(rng.integers(1, 40))))
        rows.append((q, d, int(rng.integers(0, 4))))
    path = tmp_path / "qrels.txt"
    lines = [f"{q} 0 {d} {r}" for q, d, r in rows]
    path.write_text("\n".join(lines[:1500]) + "\n\n\n" + "\n".join(lines[1500:]), encoding="utf-8")
    frame = read_qrels(path)
    split = [line.split() for line in path.read_text(encoding="utf-8").splitlines() if line]
    assert frame["qid"].tolist() == [s[0] for s in split]
    assert frame["doc_id"].tolist() == [s[2] for s in split]
    assert frame["relevance"].tolist() == [float(s[3]) for s in split]


def test_invalid_utf8_is_named(tmp_path):
    path = tmp_path / "qrels.txt"
    path.write_bytes(b"q1 0 d\xff 1\n")
    with pytest.raises(ValueError, match=r"qrels file '.*' is not in TREC qrels format"):
        read_qrels(path)


def _random_run_lines(rng, n):
    """Run lines of 6 fields: any ASCII whitespace between them, control and non-ASCII bytes
    inside ids, lengths on both sides of the scanner's 64-byte line masks, blank lines."""
    alphabet = list("abcXYZ019-_.:/\x01\x1f\x7fé✓")
    seps = [" ", "\t", "\x0b", "\x0c", "\r", "  ", " \t "]
    lines = []
    for i in range(n):
        if i % 37 == 0:
            lines.append(rng.choice(["", " ", "\t\r", "\x0c \x0b"]))
        fields = ["".join(rng.choice(alphabet, size=int(rng.integers(1, 12)))) for _ in range(6)]
        fields[4] = repr(float(rng.normal() * 10.0 ** rng.integers(-5, 5)))
        gaps = [str(rng.choice(seps)) for _ in range(7)]
        gaps[0] = gaps[0] if i % 3 == 0 else ""
        gaps[6] = gaps[6] if i % 4 == 0 else ""
        lines.append("".join(g + f for g, f in zip(gaps, fields + [""])))
    return lines


def test_lines_split_at_any_whitespace_as_bytes_split_does(tmp_path):
    # short lines go through the scanner's 64-byte masks, long ones byte by byte
    lines = _random_run_lines(np.random.default_rng(3), 6000)
    data = "\n".join(lines).encode()  # the last line without LF
    path = tmp_path / "run.txt"
    path.write_bytes(data)
    split = [line.split() for line in data.split(b"\n") if line.split()]
    assert 0.2 < np.mean([len(line) < 64 for line in data.split(b"\n")]) < 0.8
    frame = read_run(path)
    assert frame["qid"].tolist() == [s[0].decode() for s in split]
    assert frame["doc_id"].tolist() == [s[2].decode() for s in split]
    assert (_bits(frame["score"].to_numpy()) == _bits([float(s[4]) for s in split])).all()


@pytest.mark.parametrize("fields", [5, 7])
def test_a_line_with_a_wrong_field_count_is_named_among_short_and_long_lines(tmp_path, fields):
    lines = _random_run_lines(np.random.default_rng(4), 3000)
    at = 2345
    bad = lines[at].split()[:fields] + (["x"] if fields == 7 else [])
    lines[at] = " ".join(bad)
    path = tmp_path / "run.txt"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    with pytest.raises(ValueError, match=rf"run file '.*', line {at + 1}: expected 6 "):
        read_run(path)

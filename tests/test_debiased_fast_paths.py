"""Fast paths of the debiased LambdaRank kernel against naive / earlier references."""

from __future__ import annotations

import numpy as np
import pytest

from ltr.kernels._debiased import _COST_BLOCK, slot_cost_sums


def _blockwise_reference(slot, li_row, lj_row, n_slots):
    """The earlier parallel ``slot_cost_sums``'s order: row order per block, blocks in order."""
    n = slot.shape[0]
    nb = max((n + _COST_BLOCK - 1) // _COST_BLOCK, 1)
    part = np.zeros((nb, 2, n_slots))
    for b in range(nb):
        for r in range(b * _COST_BLOCK, min(n, (b + 1) * _COST_BLOCK)):
            part[b, 0, slot[r]] += li_row[r]
            part[b, 1, slot[r]] += lj_row[r]
    li = part[0, 0].copy()
    lj = part[0, 1].copy()
    for b in range(1, nb):
        li += part[b, 0]
        lj += part[b, 1]
    return li, lj


@pytest.mark.parametrize("n", [0, 1, 1000, _COST_BLOCK, 2 * _COST_BLOCK + 17])
def test_slot_cost_sums_match_the_blockwise_reference_bit_for_bit(n):
    rng = np.random.default_rng(n)
    n_slots = 9
    slot = rng.integers(0, n_slots - 1, n)  # the last slot stays empty
    li_row = rng.lognormal(size=n) * rng.choice([0.0, 1.0], n)
    lj_row = -0.0 * rng.random(n) if n == 1 else rng.lognormal(size=n)
    li, lj = slot_cost_sums(slot, li_row, lj_row, n_slots)
    ref_i, ref_j = _blockwise_reference(slot, li_row, lj_row, n_slots)
    assert li.tobytes() == ref_i.tobytes()
    assert lj.tobytes() == ref_j.tobytes()


def _fused_segment_reference(rb, o, a, b, hi, si, gi, ei, ii, di, cf, sigma, regularize,
                             with_cost, acc_l, acc_h, hi_row, lo_row):
    """The earlier one-loop ``_segment`` (terms and the document's sums together), in Python."""
    from ltr.kernels._pair_math import _F32_001

    o_s, o_g, o_e, o_i, o_p, o_m, o_d, o_z = o[:8]
    sg = 1.0 if hi else -1.0
    row = lo_row if hi else hi_row
    gl = gh = sl = cs = 0.0
    for j in range(a, b):
        sj = rb[o_s + j]
        gj = rb[o_g + j]
        if hi:
            ds, gap, e, f_j = si - sj, gi - gj, ei * rb[o_i + j], rb[o_m + j]
        else:
            ds, gap, e, f_j = sj - si, gj - gi, rb[o_e + j] * ii, rb[o_p + j]
        base = gap * abs(di - rb[o_d + j])
        c = _F32_001 + abs(ds) if regularize else 1.0
        t = 1.0 / ((1.0 + e) * c)
        dd = base * cf * f_j
        mag = dd * t
        hes = sigma * dd * ((e * t) * c) * t
        gh += hes
        acc_h[j] += hes
        sl += 2.0 * mag
        gl -= sg * mag
        acc_l[j] += sg * mag
        if with_cost:
            v = rb[o_z + j] * mag
            cs += v
            row[j] += v
    return gl, gh, sl, cs


@pytest.mark.parametrize("hi", [True, False])
@pytest.mark.parametrize("regularize", [True, False])
@pytest.mark.parametrize("with_cost", [True, False])
def test_segment_vector_pass_matches_the_fused_loop_bit_for_bit(hi, regularize, with_cost):
    from numba import njit

    from ltr.kernels._debiased import _segment

    @njit
    def call(rb, o, a, b, hi, si, gi, ei, ii, di, cf, sigma, regularize, with_cost, acc_l, acc_h,
             hi_row, lo_row):
        return _segment(rb, o, a, b, hi, si, gi, ei, ii, di, cf, sigma, regularize, with_cost,
                        acc_l, acc_h, hi_row, lo_row)

    rng = np.random.default_rng(int(hi) + 2 * int(regularize) + 4 * int(with_cost))
    n = 61
    rb = rng.random(13 * n) + 0.05
    o = tuple(int(b * n) for b in range(8)) + tuple(int(b * n) for b in (10, 11, 12))
    rb[o[1]:o[1] + n] = rng.integers(0, 5, n) * 3.0 + (9.0 if not hi else 0.0)  # gains
    rb[o[0]:o[0] + n] = rng.normal(size=n)  # scores
    args = (3, 47, hi, 0.3, 7.0 if hi else 1.0, 0.8, 1.3, 0.45, 0.7, 1.5, regularize, with_cost)
    mine = [np.zeros(n) for _ in range(4)]
    ref = [np.zeros(n) for _ in range(4)]
    for x in mine + ref:
        x[:] = rng.random(n)
    for a, b in zip(mine, ref):
        b[:] = a
    rb_ref = rb.copy()
    got = call(rb, o, *args, *mine)
    want = _fused_segment_reference(rb_ref, o, *args, *ref)
    assert np.array(got).tobytes() == np.array(want).tobytes()
    for x, y in zip(mine, ref):
        assert x.tobytes() == y.tobytes()

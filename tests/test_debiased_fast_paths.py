"""Fast paths of the debiased LambdaRank kernel against naive / earlier references."""

from __future__ import annotations

import math

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


def _fused_range_reference(rb, o, a, b, hi, si, gi, ei, ii, di, cf, sigma, sx, regularize,
                           with_cost, acc_l, acc_h, row):
    """The earlier per-pair arithmetic (cost pass, then the terms), one partner at a time."""
    from ltr.kernels._debiased import _log1p_unit
    from ltr.kernels._pair_math import _F32_001

    o_s, o_g, o_e, o_i, o_p, o_m, o_d, o_a, o_b, o_v = o
    sg = 1.0 if hi else -1.0
    for j in range(a, b):
        sj = rb[o_s + j]
        gj = rb[o_g + j]
        up = ei * rb[o_i + j]
        dn = rb[o_e + j] * ii
        y = sx * (sigma * (si - sj))
        z = (max(y if hi else -y, 0.0) + _log1p_unit.py_func(min(up, dn))) * (1.0 + (up if hi
                                                                                      else dn))
        if hi:
            ds, gap, e, f_j = si - sj, gi - gj, up, rb[o_m + j]
        else:
            ds, gap, e, f_j = sj - si, gj - gi, dn, rb[o_p + j]
        base = gap * abs(di - rb[o_d + j])
        c = _F32_001 + abs(ds) if regularize else 1.0
        t = 1.0 / ((1.0 + e) * c)
        dd = base * cf * f_j
        mag = dd * t
        hes = sigma * dd * ((e * t) * c) * t
        acc_h[j] += hes
        acc_l[j] += sg * mag
        rb[o_a + j] = mag
        rb[o_b + j] = hes
        if with_cost:
            v = z * mag
            row[j] += v
            rb[o_v + j] = v


@pytest.mark.parametrize("hi", [True, False])
@pytest.mark.parametrize("regularize", [True, False])
@pytest.mark.parametrize("with_cost", [True, False])
@pytest.mark.parametrize("sx", [1.0, -1.0])
def test_range_vector_pass_matches_the_per_pair_arithmetic_bit_for_bit(hi, regularize, with_cost,
                                                                         sx):
    from ltr.kernels import _debiased

    name = f"_range_{'hi' if hi else 'lo'}{'_cost' if with_cost else ''}"
    kernel = getattr(_debiased, name)
    rng = np.random.default_rng(int(hi) + 2 * int(regularize) + 4 * int(with_cost) + 8 * (sx > 0))
    n = 61
    rb = rng.random(11 * n) + 0.05
    o = tuple(int(b * n) for b in (0, 1, 2, 3, 4, 5, 6, 8, 9, 10))
    rb[o[1]:o[1] + n] = rng.integers(0, 5, n) * 3.0 + (9.0 if not hi else 0.0)  # gains
    rb[o[0]:o[0] + n] = np.round(rng.normal(size=n), 1)  # scores, with ties
    sc = 1.3 * (rb[o[0]:o[0] + n] - 2.0)
    rb[o[2]:o[2] + n] = np.exp(sc)  # E and 1 / E
    rb[o[3]:o[3] + n] = np.exp(-sc)
    si = rb[o[0] + 5]
    ei = math.exp(1.3 * (si - 2.0))
    args = (3, 47, si, 7.0 if hi else 1.0, ei, 1.0 / ei, 0.45, 0.7, 1.3, sx, regularize)
    mine = [rng.random(n) for _ in range(3)]
    ref = [x.copy() for x in mine]
    rb_ref = rb.copy()
    kernel(rb, o, *args, *mine)
    _fused_range_reference(rb_ref, o, args[0], args[1], hi, *args[2:10], regularize, with_cost,
                           *ref)
    for x, y in zip(mine, ref):
        assert x.tobytes() == y.tobytes()
    for blk in o[7:] if with_cost else o[7:9]:
        assert rb[blk + 3:blk + 47].tobytes() == rb_ref[blk + 3:blk + 47].tobytes()

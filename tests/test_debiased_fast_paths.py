"""Fast paths of the debiased LambdaRank kernel against naive / earlier references."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest

from ltr.objectives import LambdaRankObjective
from ltr.objectives._unbiased import reduce_costs


def _per_query_reference(slot, li_row, lj_row, offsets, n_slots):
    """Each query's rows summed per slot in row order (``np.bincount`` adds in row order)."""
    out = np.zeros((len(offsets) - 1, 2 * n_slots))
    for q, (s, e) in enumerate(itertools.pairwise(offsets)):
        out[q, :n_slots] = np.bincount(slot[s:e], weights=li_row[s:e], minlength=n_slots)
        out[q, n_slots:] = np.bincount(slot[s:e], weights=lj_row[s:e], minlength=n_slots)
    return out


@pytest.mark.parametrize("sampled", [False, True])
def test_slot_costs_are_each_querys_row_sums_and_their_total_the_bincount(sampled):
    from ltr.objectives.sampling import TopKPairSampling

    rng = np.random.default_rng(3)
    sizes = rng.integers(1, 40, 60)
    offsets = np.concatenate([[0], np.cumsum(sizes)]).astype(np.int64)
    n = int(offsets[-1])
    y = rng.integers(0, 5, n).astype(float)
    pos = np.concatenate([rng.permutation(m) + 1 for m in sizes])
    sampling = TopKPairSampling(pairs_per_doc=3, random_state=0) if sampled else None
    obj = LambdaRankObjective(k=10, unbiased=True, max_position=8, sampling=sampling)
    obj.gradients(rng.normal(size=n), y, offsets, 0, position=pos)
    calls = []
    obj._update_bias = calls.append  # keep the round's costs instead of using them
    obj.gradients(rng.normal(size=n), y, offsets, 1, position=pos, update_bias=True)
    costs = calls[0]
    slot = np.minimum(pos, 8) - 1
    li_row, lj_row = obj._work["cost"]
    assert (li_row > 0).any() and (lj_row > 0).any()
    ref = _per_query_reference(slot, li_row, lj_row, offsets, 8)
    assert costs.tobytes() == ref.tobytes()
    li, lj = reduce_costs(costs, 8)
    np.testing.assert_allclose(li, np.bincount(slot, weights=li_row, minlength=8), rtol=1e-13)
    np.testing.assert_allclose(lj, np.bincount(slot, weights=lj_row, minlength=8), rtol=1e-13)
    expected_i = ref[0, :8].copy()
    for q in range(1, len(sizes)):  # query order
        expected_i += ref[q, :8]
    assert li.tobytes() == expected_i.tobytes()


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

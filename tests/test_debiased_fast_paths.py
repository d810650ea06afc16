"""Fast paths of the debiased LambdaRank kernel against naive / earlier references."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest

from ltr.objectives import LambdaRankObjective
from ltr.objectives._unbiased import reduce_costs


def _logged(seed=3, n_queries=60):
    rng = np.random.default_rng(seed)
    sizes = rng.integers(1, 40, n_queries)
    offsets = np.concatenate([[0], np.cumsum(sizes)]).astype(np.int64)
    n = int(offsets[-1])
    y = rng.integers(0, 5, n).astype(float)
    pos = np.concatenate([rng.permutation(m) + 1 for m in sizes])
    return rng, offsets, y, pos


def _round_costs(obj, rng, offsets, y, pos):
    """The per-query slot costs of one round (after a first round moved the tables)."""
    n = int(offsets[-1])
    obj.gradients(rng.normal(size=n), y, offsets, 0, position=pos, update_bias=True)
    kept = []
    obj._update_bias = kept.append  # keep the round's costs instead of using them
    scores = rng.normal(size=n)
    obj.gradients(scores, y, offsets, 1, position=pos, update_bias=True)
    return scores, kept[0]


def test_slot_costs_per_query_equal_the_naive_loop_on_each_query_and_sum_in_query_order():
    from ltr.testing.references import naive_unbiased_lambdarank

    rng, offsets, y, pos = _logged()
    obj = LambdaRankObjective(k=10, unbiased=True, max_position=8)
    scores, costs = _round_costs(obj, rng, offsets, y, pos)
    tp, tm = obj.t_plus_, obj.t_minus_
    assert costs.shape == (len(offsets) - 1, 16) and (costs > 0).any()
    for q, (s, e) in enumerate(itertools.pairwise(offsets)):
        _, _, li, lj = naive_unbiased_lambdarank(scores[s:e], y[s:e], [0, e - s], pos[s:e], tp,
                                                 tm, k=10)
        np.testing.assert_allclose(costs[q], np.concatenate([li, lj]), rtol=1e-12, atol=1e-300)
    li, lj = reduce_costs(costs, 8)
    expected = costs[0].copy()
    for q in range(1, costs.shape[0]):  # query order
        expected += costs[q]
    assert li.tobytes() == expected[:8].tobytes() and lj.tobytes() == expected[8:].tobytes()


def test_sampled_slot_costs_are_each_querys_cost_rows_summed_in_row_order():
    from ltr.objectives.sampling import TopKPairSampling

    rng, offsets, y, pos = _logged(4)
    obj = LambdaRankObjective(k=10, unbiased=True, max_position=8,
                              sampling=TopKPairSampling(pairs_per_doc=3, random_state=0))
    _, costs = _round_costs(obj, rng, offsets, y, pos)
    slot = np.minimum(pos, 8) - 1
    li_row, lj_row = obj._work["cost"]  # the sampled path's per-row costs
    assert (li_row > 0).any() and (lj_row > 0).any()
    for q, (s, e) in enumerate(itertools.pairwise(offsets)):  # np.bincount adds in row order
        ref = np.concatenate([np.bincount(slot[s:e], weights=li_row[s:e], minlength=8),
                              np.bincount(slot[s:e], weights=lj_row[s:e], minlength=8)])
        assert costs[q].tobytes() == ref.tobytes()


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

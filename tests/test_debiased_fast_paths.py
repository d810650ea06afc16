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

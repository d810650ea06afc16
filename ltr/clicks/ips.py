r"""Inverse-propensity-scored (IPS) DCG and nDCG of a new ranking from logged clicks.

The rows are logged impressions grouped into *lists*: one list per displayed
results page (one query in one session), given by ``qid`` (a list id per
row, contiguous), ``group`` or ``offsets`` (:attr:`ltr.clicks.ClickLog.offsets`).
Each row holds its click (0/1), the position it was *logged* at (1 = top)
and the score a *new* ranker gives it.  For list :math:`l`,

.. math::
    \mathrm{IPS\text{-}DCG@k}(l) = \sum_{i \in l} \frac{c_i}{\max(\theta_{p_i}, \epsilon)}
                                   \, d\big(r_i\big)\,[r_i \le k]

where :math:`p_i` is the logged position, :math:`\theta` the examination
propensities (index 0 = position 1), :math:`\epsilon` the ``clip``,
:math:`r_i` the rank of row :math:`i` under the new scores and
:math:`d(r) = 1/\log_2(r + 1)`.  With per-row propensities (one per
impression, e.g. from a cascade model; the rule is
:func:`ltr._propensities.propensity_per_row`) :math:`\theta_{p_i}` is row
:math:`i`'s own value.

**Unbiasedness.** Under the position-based model
:math:`P(c_i = 1) = \theta_{p_i}\gamma_i`, so without clipping (or with every
logged :math:`\theta_{p_i} \ge \epsilon`) the expectation over clicks is
:math:`\sum_i \gamma_i\, d(r_i)[r_i \le k]`: the DCG of the new ranking with
the click probabilities :math:`\gamma` as gains, whatever the logged order.
Clipping bounds each weight by :math:`1/\epsilon` and shrinks the expectation
of a row logged where :math:`\theta_p < \epsilon` by :math:`\theta_p/\epsilon`.
The naive click DCG (weight 1) has expectation
:math:`\sum_i \theta_{p_i}\gamma_i\, d(r_i)`: biased toward the logged order.

**Self-normalised IPS** (``self_normalize=True``) divides each list's IPS-DCG
by the list's sum of click weights :math:`W_l = \sum_i c_i/\max(\theta_{p_i},\epsilon)`:
the weight-averaged discount of the clicked rows, in ``[0, d(1)]``, and
unchanged when all propensities are scaled by one factor.  It is a ratio
estimator: consistent for :math:`\sum_i \gamma_i d(r_i) / \sum_i \gamma_i`
over many sessions of one list, but not unbiased; a list without clicks has no
value (NaN, left out of the mean).

**nDCG.** :func:`ips_ndcg` divides by a normaliser per list: ``"ideal"``, the
IPS-DCG of the best order of the list's own weighted clicks (a ratio of two
random quantities: in ``[0, 1]`` but biased), or a fixed array (for instance
the ideal DCG of known or held-out relevance), in which case the estimate is
exactly unbiased for :math:`\mathrm{DCG}_\gamma / \text{normaliser}`.

This module imports nothing from :mod:`ltr.metrics` (which re-exports it).

References
----------
Joachims, Swaminathan and Schnabel (2017), Unbiased learning-to-rank with
biased feedback.  Swaminathan and Joachims (2015), The self-normalized
estimator for counterfactual learning.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from ltr._propensities import check_propensities, check_row_propensities, propensity_per_row
from ltr._validation import (
    check_1d_float,
    check_clicks,
    check_cutoffs,
    check_finite,
    check_positions,
    check_real,
    check_reduce,
)
from ltr.groups import resolve_offsets
from ltr.kernels import _clicks as K

__all__ = ["ips_dcg", "ips_ndcg"]

KSpec = int | None | Sequence[int]


class _Prepared:
    """Checked inputs shared by every cut-off."""

    def __init__(self, click: np.ndarray, score: np.ndarray, position: np.ndarray,
                 weight: np.ndarray, offsets: np.ndarray) -> None:
        self.click = click
        self.score = score
        self.position = position
        self.weight = weight
        self.offsets = offsets


def _prepare(click: Any, y_score: Any, position: Any, propensity: Any, qid: Any, group: Any,
             offsets: Any, clip: Any) -> _Prepared:
    c = check_1d_float(click, "click")
    score = check_1d_float(y_score, "y_score")
    if score.size != c.size:
        raise ValueError(
            f"y_score has {score.size} rows but click has {c.size}; they must match"
        )
    check_finite(score, "y_score")
    offs = resolve_offsets(c.size, qid=qid, group=group, offsets=offsets)
    c = check_clicks(c, "click", c.size)
    if position is None:
        raise TypeError(
            "position is required: the logged display rank of each row (1 = top), "
            "e.g. ClickLog.position"
        )
    pos = check_positions(position, "position", offs)
    given = check_1d_float(propensity, "propensity")
    eps = None
    if clip is not None:
        eps = check_real(clip, "clip", minimum=0.0, exclusive_minimum=True, maximum=1.0)
    if propensity_per_row(given.size, offs):
        theta = check_row_propensities(given, "propensity", c.size)
        if eps is not None:
            theta = np.maximum(theta, eps)
        # every row its own "position": the kernel reads weight[row] (same arithmetic)
        rows = np.arange(1, c.size + 1, dtype=pos.dtype)
        return _Prepared(c, score, rows, 1.0 / theta, offs)
    theta = check_propensities(given, "propensity")
    uncovered = (c != 0) & (pos > theta.size)
    if uncovered.any():
        i = int(np.flatnonzero(uncovered)[0])
        raise ValueError(
            f"propensity has {theta.size} entries (positions 1..{theta.size}) but click[{i}] "
            f"was logged at position {int(pos[i])}; give a propensity for every clicked position"
        )
    if eps is not None:
        theta = np.maximum(theta, eps)
    return _Prepared(c, score, pos, 1.0 / theta, offs)


def _discount(discount: Any, length: int, k: int | None) -> np.ndarray:
    m = length if k is None else min(k, length)
    if isinstance(discount, str):
        if discount != "log2":
            raise ValueError(
                f"discount must be 'log2' or an array of discounts per rank, got {discount!r}"
            )
        table = 1.0 / np.log2(np.arange(2, m + 2))
    else:
        given = check_1d_float(discount, "discount")
        check_finite(given, "discount")
        table = given[:m]
    return np.ascontiguousarray(table)


def _ties(ties: Any) -> bool:
    if ties not in ("average", "stable"):
        raise ValueError(
            f"ties must be 'average' (mean discount over tied scores) or 'stable' "
            f"(row order), got {ties!r}"
        )
    return ties == "average"


def _reduce(per_list: np.ndarray, reduce: Any) -> Any:
    if reduce is None:
        return per_list
    valid = ~np.isnan(per_list)
    return float(per_list[valid].mean()) if valid.any() else float("nan")



def _per_k(ks: list[int | None], k_arg: Any, compute: Callable[[int | None], Any]) -> Any:
    if isinstance(k_arg, (list, tuple, np.ndarray)):
        return {kk: compute(kk) for kk in ks}
    return compute(ks[0])


def _run(prep: _Prepared, k: int | None, discount: Any,
         average: bool) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    n_l = prep.offsets.size - 1
    longest = int(np.diff(prep.offsets).max())
    table = _discount(discount, longest, k)
    out = np.zeros(n_l), np.zeros(n_l), np.zeros(n_l)
    K.ips_dcg(prep.click, prep.score, prep.position, prep.weight, prep.offsets, table, average,
              *out)
    return out


def ips_dcg(
    click: Any,
    y_score: Any,
    *,
    position: Any,
    propensity: Any,
    qid: Any = None,
    group: Any = None,
    offsets: Any = None,
    k: KSpec = 10,
    clip: float | None = None,
    self_normalize: bool = False,
    discount: str | Any = "log2",
    ties: str = "average",
    reduce: str | None = "mean",
) -> Any:
    r"""IPS estimate of the DCG@k of a new ranking from logged clicks.

    See the module docstring for the estimator, its expectation and the
    self-normalised variant.

    Parameters
    ----------
    click : array-like of shape (n_rows,)
        Logged clicks, 0 or 1 (booleans allowed).
    y_score : array-like of shape (n_rows,)
        Scores of the new ranking; higher ranks first.
    position : array-like of shape (n_rows,)
        Logged display position of each row, 1 = top: a permutation of
        ``1..n`` within each list.
    propensity : array-like of shape (n_positions,) or (n_rows,)
        Examination propensity per logged position (index 0 = position 1), each
        in ``(0, 1]``; must cover every clicked position.  Relative propensities
        (position 1 = 1, as the estimators of :mod:`ltr.clicks` return) scale
        every value by :math:`1/\theta_1`.  Or one propensity per row
        (impression, e.g. a cascade model's examination probability): read
        per row when it has exactly one value per row and there is more than
        one list (:func:`ltr._propensities.propensity_per_row`); row :math:`i`
        is then weighted by :math:`1/\max(p_i, \epsilon)`.
    qid, group, offsets : array-like
        Exactly one: a list id per row (contiguous; one list per query and
        session), list sizes, or ``int64`` list offsets.
    k : int, None or list of int, default=10
        Cut-off on the new ranking; ``None`` is the whole list; a list returns
        ``{k: value}``.
    clip : float in (0, 1], optional
        Minimum propensity: weights are ``1 / max(propensity, clip)``, at most
        ``1 / clip`` (bias traded for variance).
    self_normalize : bool, default=False
        Divide each list's value by its sum of click weights (NaN for a list
        without clicks, left out of the mean).
    discount : 'log2' or array-like, default='log2'
        ``1/log2(r + 1)``, or a discount per new rank (index 0 = rank 1).
    ties : {'average', 'stable'}, default='average'
        Tied new scores share the mean discount of the ranks they span, or
        keep row order (rows are often in logged order: ``'stable'`` then
        favours it).
    reduce : {'mean', None}, default='mean'
        The mean over lists (a float), or the per-list array.

    Returns
    -------
    float, ndarray or dict
        The mean, the per-list values, or a dict keyed by ``k``.

    Examples
    --------
    >>> ips_dcg([0, 1, 0], [3.0, 2.0, 1.0], position=[1, 2, 3], propensity=[1.0, 0.5, 0.25],
    ...         group=[3], k=3)
    1.2618...
    """
    ks = check_cutoffs(k)
    check_reduce(reduce)
    average = _ties(ties)
    if not isinstance(self_normalize, (bool, np.bool_)):
        raise TypeError(f"self_normalize must be True or False, got {self_normalize!r}")
    prep = _prepare(click, y_score, position, propensity, qid, group, offsets, clip)

    def compute(kk: int | None) -> Any:
        dcg, weight, _ = _run(prep, kk, discount, average)
        if self_normalize:
            per_list = np.full_like(dcg, np.nan)
            np.divide(dcg, weight, out=per_list, where=weight > 0)
        else:
            per_list = dcg
        return _reduce(per_list, reduce)

    return _per_k(ks, k, compute)


def ips_ndcg(
    click: Any,
    y_score: Any,
    *,
    position: Any,
    propensity: Any,
    qid: Any = None,
    group: Any = None,
    offsets: Any = None,
    k: KSpec = 10,
    clip: float | None = None,
    normalizer: str | Any = "ideal",
    empty: float | str = "skip",
    discount: str | Any = "log2",
    ties: str = "average",
    reduce: str | None = "mean",
) -> Any:
    r"""IPS estimate of nDCG@k: :func:`ips_dcg` divided by a normaliser per list.

    Parameters
    ----------
    click, y_score, position, propensity, qid, group, offsets, k, clip, discount, ties
        As in :func:`ips_dcg`.
    normalizer : 'ideal' or array-like of shape (n_lists,), default='ideal'
        ``'ideal'``: the IPS-DCG@k of the list's weighted clicks in their best
        order (values in ``[0, 1]``; a ratio estimator, biased, and unchanged
        by scaling all propensities).  An array: fixed positive normalisers per
        list, independent of the clicks, which keeps the estimate unbiased.
    empty : 'skip' or float, default='skip'
        Value of a list whose normaliser is 0 (no clicks, with ``'ideal'``):
        ``'skip'`` leaves it out of the mean (NaN per list).
    reduce : {'mean', None}, default='mean'
        As in :func:`ips_dcg`.

    Returns
    -------
    float, ndarray or dict

    Examples
    --------
    >>> ips_ndcg([0, 1, 0], [3.0, 2.0, 1.0], position=[1, 2, 3], propensity=[1.0, 0.5, 0.25],
    ...          group=[3], k=3)
    0.6309...
    """
    ks = check_cutoffs(k)
    check_reduce(reduce)
    average = _ties(ties)
    if not (isinstance(empty, str) and empty == "skip"):
        if isinstance(empty, (bool, np.bool_, str)):
            raise ValueError(f"empty must be 'skip' or a number, got {empty!r}")
        empty = check_real(empty, "empty")
    prep = _prepare(click, y_score, position, propensity, qid, group, offsets, clip)
    fixed = None
    if not (isinstance(normalizer, str) and normalizer == "ideal"):
        if isinstance(normalizer, str):
            raise ValueError(
                f"normalizer must be 'ideal' or an array of positive normalisers per list, "
                f"got {normalizer!r}"
            )
        fixed = check_1d_float(normalizer, "normalizer")
        n_l = prep.offsets.size - 1
        if fixed.size != n_l:
            raise ValueError(
                f"normalizer has {fixed.size} entries but there are {n_l} lists; give one per list"
            )
        bad = ~np.isfinite(fixed) | (fixed <= 0)
        if bad.any():
            i = int(np.flatnonzero(bad)[0])
            raise ValueError(
                f"normalizer must be finite and > 0; normalizer[{i}] = {float(fixed[i])!r}"
            )

    def compute(kk: int | None) -> Any:
        dcg, _, ideal = _run(prep, kk, discount, average)
        norm = ideal if fixed is None else fixed
        per_list = np.full_like(dcg, np.nan if isinstance(empty, str) else float(empty))
        np.divide(dcg, norm, out=per_list, where=norm > 0)
        return _reduce(per_list, reduce)

    return _per_k(ks, k, compute)

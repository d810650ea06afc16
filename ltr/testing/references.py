"""Naive pure-Python references: nDCG per query, LambdaRank gradients, a LETOR parser.

Each reference is written as plain loops over Python floats, independent of
the numba kernels and of :mod:`ltr.metrics`, so that agreement with the
library is evidence rather than a tautology.  They are slow (the ``"average"``
tie mode of :func:`naive_ndcg` enumerates permutations) and meant for small
inputs.
"""

from __future__ import annotations

import itertools
import math
import os
from collections.abc import Callable, Sequence
from pathlib import Path

import numpy as np

__all__ = [
    "F32_001",
    "exp2_gain",
    "linear_gain",
    "log2_discount",
    "naive_dcg_order",
    "naive_lambdarank",
    "naive_ndcg",
    "naive_parse_letor",
    "naive_position_bias_update",
    "naive_unbiased_lambdarank",
]

#: LightGBM adds the float literal ``0.01f`` (promoted to double) to ``|delta score|``.
F32_001 = float(np.float32(0.01))

GainLike = str | Callable[[float], float]
DiscountLike = str | Callable[[int], float]


def exp2_gain(label: float) -> float:
    """Exponential gain ``2**label - 1``."""
    return 2.0**label - 1.0


def linear_gain(label: float) -> float:
    """Linear gain ``label``."""
    return float(label)


def log2_discount(position: int) -> float:
    """Discount ``1 / log2(position + 1)`` of a one-based ``position``."""
    return 1.0 / math.log2(position + 1)


def _gain_function(gain: GainLike) -> Callable[[float], float]:
    if callable(gain):
        return gain
    if gain == "exp2":
        return exp2_gain
    if gain == "linear":
        return linear_gain
    raise ValueError(f"gain must be 'exp2', 'linear' or a callable, got {gain!r}")


def _discount_function(discount: DiscountLike) -> Callable[[int], float]:
    if callable(discount):
        return discount
    if discount == "log2":
        return log2_discount
    raise ValueError(f"discount must be 'log2' or a callable, got {discount!r}")


def naive_dcg_order(
    gains: Sequence[float],
    order: Sequence[int],
    k: int | None,
    discount: Callable[[int], float],
) -> float:
    """DCG@k of the documents listed in ``order`` (best first).

    Parameters
    ----------
    gains : sequence of float
        Gain of each document.
    order : sequence of int
        Document indices in ranked order.
    k : int or None
        Cut-off; ``None`` means the whole list.
    discount : callable
        ``discount(position)`` for one-based positions.

    Returns
    -------
    float
    """
    k = len(order) if k is None else min(k, len(order))
    return sum(gains[order[i]] * discount(i + 1) for i in range(k))


def naive_ndcg(
    labels: Sequence[float],
    scores: Sequence[float],
    k: int | None = None,
    *,
    gain: GainLike = "exp2",
    discount: DiscountLike = "log2",
    ties: str = "stable",
    empty: float | None = 0.0,
) -> float | None:
    """nDCG@k of one query, by sorting in Python (ties by enumeration).

    Parameters
    ----------
    labels : sequence of float
        Graded relevance of each document.
    scores : sequence of float
        Model score of each document (higher ranks first).
    k : int or None, default=None
        Cut-off; ``None`` means the whole list.
    gain : {"exp2", "linear"} or callable, default="exp2"
        ``2**label - 1``, ``label``, or ``gain(label)``.
    discount : "log2" or callable, default="log2"
        ``1 / log2(position + 1)`` or ``discount(position)`` (one-based).
    ties : {"stable", "pessimistic", "optimistic", "average"}, default="stable"
        Order of tied scores: input order, worst gain first, best gain first,
        or the mean DCG over every ordering of the tied documents (exhaustive:
        keep such queries short).
    empty : float or None, default=0.0
        Value returned when the ideal DCG is zero (no relevant document).

    Returns
    -------
    float or None
        The query's nDCG@k, or ``empty`` for a query without gain.

    Examples
    --------
    >>> round(naive_ndcg([3, 2, 0, 1, 2], [5, 4, 3, 2, 1], 3, gain="linear"), 2)
    0.81
    """
    gain_of = _gain_function(gain)
    disc = _discount_function(discount)
    g = [gain_of(label) for label in labels]
    ideal = sorted(range(len(labels)), key=lambda i: -g[i])
    best = naive_dcg_order(g, ideal, k, disc)
    if best == 0:
        return empty
    idx = list(range(len(labels)))
    if ties == "stable":
        order = sorted(idx, key=lambda i: -scores[i])  # Python's sort is stable
        value = naive_dcg_order(g, order, k, disc)
    elif ties == "pessimistic":
        order = sorted(idx, key=lambda i: (-scores[i], g[i]))
        value = naive_dcg_order(g, order, k, disc)
    elif ties == "optimistic":
        order = sorted(idx, key=lambda i: (-scores[i], -g[i]))
        value = naive_dcg_order(g, order, k, disc)
    elif ties == "average":
        # Average over every ordering of the tied documents (exhaustive).
        values = []
        for perm in itertools.permutations(idx):
            if all(scores[perm[j]] >= scores[perm[j + 1]] for j in range(len(perm) - 1)):
                values.append(naive_dcg_order(g, list(perm), k, disc))
        value = sum(values) / len(values)
    else:
        raise ValueError(
            f"ties must be 'stable', 'pessimistic', 'optimistic' or 'average', got {ties!r}"
        )
    return value / best


def naive_lambdarank(
    scores: Sequence[float],
    labels: Sequence[float],
    offsets: Sequence[int],
    *,
    k: int,
    sigma: float = 1.0,
    gain: str | Sequence[float] = "exp2",
    norm: bool = True,
    top: int = 0,
    head_weight: float = 1.0,
) -> tuple[np.ndarray, np.ndarray]:
    """LambdaRank gradients and hessians by an O(n^2) loop over all pairs of each query.

    Follows LightGBM's ``LambdarankNDCG`` formula: documents ranked by score
    (stable), a pair counts when its labels differ and one of its documents is
    in the top ``k``; ``|delta nDCG| = (g_hi - g_lo) |d(r_hi) - d(r_lo)| /
    maxDCG@k`` with ``d(r) = 1 / log2(2 + r)``, divided by ``0.01f + |s_hi -
    s_lo|`` with ``norm`` (unless all scores are equal); ``rho = 1 / (1 +
    exp(sigma (s_hi - s_lo)))``, ``lambda = -sigma rho |delta|``, ``hessian =
    sigma^2 rho (1 - rho) |delta|``; with ``norm`` the query is scaled by
    ``log2(1 + S) / S``, ``S`` the sum of ``2 |lambda|``.

    Parameters
    ----------
    scores, labels : sequence of float
        Flat per-row scores and graded labels, rows grouped by query.
    offsets : sequence of int
        Query boundaries: query ``q`` is rows ``offsets[q]:offsets[q + 1]``.
    k : int
        Truncation level.
    sigma : float, default=1.0
        Sigmoid steepness.
    gain : "exp2", "linear" or sequence of float, default="exp2"
        Gain of a label, or a table indexed by the integer label.
    norm : bool, default=True
        LightGBM's ``lambdarank_norm``.
    top : int, default=0
        Pairs whose better-ranked document is in the top ``top`` get weight
        ``head_weight`` (0: no head weighting).
    head_weight : float, default=1.0
        Weight of head pairs.

    Returns
    -------
    grad, hess : ndarray of float64, shape (n_rows,)
    """
    # the unbiased loop with every position in one slot whose biases are 1: the same pairs,
    # each divided by 1.0 (exact); one reference loop for both objectives
    one = [1] * len(scores)
    grad, hess, _, _ = naive_unbiased_lambdarank(
        scores, labels, offsets, one, [1.0], [1.0], k=k, sigma=sigma, gain=gain, norm=norm,
        top=top, head_weight=head_weight,
    )
    return grad, hess


def naive_unbiased_lambdarank(
    scores: Sequence[float],
    labels: Sequence[float],
    offsets: Sequence[int],
    position: Sequence[int],
    t_plus: Sequence[float],
    t_minus: Sequence[float],
    *,
    k: int,
    sigma: float = 1.0,
    gain: str | Sequence[float] = "exp2",
    norm: bool = True,
    top: int = 0,
    head_weight: float = 1.0,
    bias_cost: str = "reversed_pair_loss",
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Unbiased LambdaMART gradients and per-position pair costs by an O(n^2) loop.

    The LambdaRank pairs, ``|delta|`` and sigmoid (:func:`naive_lambdarank` is this
    loop with every bias 1); every
    pair (``hi`` more relevant than ``lo``) is divided by ``t_plus[p_hi] *
    t_minus[p_lo]`` with ``p = min(position, len(t_plus)) - 1`` before the
    query's ``log2(1 + S) / S`` normalisation.  Its cost ``c = log(1 +
    exp(-+sigma (s_hi - s_lo))) * |delta| * w`` (``+`` for ``bias_cost=
    "reversed_pair_loss"``, ``-`` for ``"pair_loss"``; ``|delta|`` after the
    ``0.01f + |ds|`` regularisation, ``w`` the head weight) adds
    ``c / t_minus[p_lo]`` to ``li[p_hi]`` and ``c / t_plus[p_hi]`` to
    ``lj[p_lo]`` (Hu et al. 2019, eq. 30-31).

    Parameters
    ----------
    scores, labels : sequence of float
        Flat per-row scores and graded labels, rows grouped by query.
    offsets : sequence of int
        Query boundaries.
    position : sequence of int
        Display rank of each row in its query (1 = top).
    t_plus, t_minus : sequence of float
        Position biases, index 0 = position 1; deeper positions use the last.
    k, sigma, gain, norm, top, head_weight
        As in :func:`naive_lambdarank`.
    bias_cost : {"reversed_pair_loss", "pair_loss"}, default="reversed_pair_loss"
        The pair loss in the cost.

    Returns
    -------
    grad, hess : ndarray of float64, shape (n_rows,)
    li, lj : ndarray of float64, shape (len(t_plus),)
    """
    if bias_cost not in ("reversed_pair_loss", "pair_loss"):
        raise ValueError(
            f"bias_cost must be 'reversed_pair_loss' or 'pair_loss', got {bias_cost!r}"
        )
    m = len(t_plus)
    grad = np.zeros(len(scores))
    hess = np.zeros(len(scores))
    li_sum = [0.0] * m
    lj_sum = [0.0] * m
    for q in range(len(offsets) - 1):
        s, e = int(offsets[q]), int(offsets[q + 1])
        n = e - s
        sc = [float(v) for v in scores[s:e]]
        lab = [float(v) for v in labels[s:e]]
        slot = [min(int(p), m) - 1 for p in position[s:e]]
        if isinstance(gain, str) and gain == "exp2":
            g = [2.0**v - 1.0 for v in lab]
        elif isinstance(gain, str) and gain == "linear":
            g = list(lab)
        else:
            g = [float(gain[int(v)]) for v in lab]
        order = sorted(range(n), key=lambda i: -sc[i])
        rank = {doc: r for r, doc in enumerate(order)}
        ideal = sorted(g, reverse=True)[:k]
        max_dcg = sum(v / math.log2(2 + j) for j, v in enumerate(ideal))
        if max_dcg <= 0 or n < 2:
            continue
        all_equal = max(sc) == min(sc)
        lg = [0.0] * n
        lh = [0.0] * n
        total = 0.0
        for a in range(n):
            for b in range(a + 1, n):
                if lab[a] == lab[b] or min(rank[a], rank[b]) >= k:
                    continue
                hi, lo = (a, b) if lab[a] > lab[b] else (b, a)
                ds = sc[hi] - sc[lo]
                delta = (g[hi] - g[lo]) * abs(
                    1 / math.log2(2 + rank[hi]) - 1 / math.log2(2 + rank[lo])
                ) / max_dcg
                if norm and not all_equal:
                    delta /= F32_001 + abs(ds)
                rho = 1.0 / (1.0 + math.exp(sigma * ds))
                w = head_weight if min(rank[a], rank[b]) < top else 1.0
                tp = float(t_plus[slot[hi]])
                tm = float(t_minus[slot[lo]])
                lam = -sigma * rho * delta * w / (tp * tm)
                h = sigma * sigma * rho * (1 - rho) * delta * w / (tp * tm)
                lg[hi] += lam
                lg[lo] -= lam
                lh[hi] += h
                lh[lo] += h
                total += -2 * lam
                # log(1 + exp(x)), without overflow for large x
                x = sigma * ds if bias_cost == "reversed_pair_loss" else -sigma * ds
                softplus = x + math.log1p(math.exp(-x)) if x > 0 else math.log1p(math.exp(x))
                cost = softplus * delta * w
                li_sum[slot[hi]] += cost / tm
                lj_sum[slot[lo]] += cost / tp
        f = math.log2(1 + total) / total if norm and total > 0 else 1.0
        grad[s:e] = np.array(lg) * f
        hess[s:e] = np.array(lh) * f
    return grad, hess, np.array(li_sum), np.array(lj_sum)


def naive_position_bias_update(
    li: Sequence[float],
    lj: Sequence[float],
    t_plus: Sequence[float],
    t_minus: Sequence[float],
    bias_norm: float,
) -> tuple[np.ndarray, np.ndarray]:
    """Re-estimate t+/t- as ``t_p = (l_p / l_1) ** (1 / (1 + bias_norm))``, written as loops.

    A position whose cost sum is 0 keeps its previous value; if position 1's
    sum is 0 the whole table keeps its values.

    Returns
    -------
    t_plus, t_minus : ndarray of float64
    """
    out = []
    for acc, old in ((li, t_plus), (lj, t_minus)):
        new = [float(v) for v in old]
        if acc[0] > 0:
            for p in range(len(acc)):
                if acc[p] > 0:
                    new[p] = (float(acc[p]) / float(acc[0])) ** (1.0 / (1.0 + bias_norm))
        out.append(np.array(new))
    return out[0], out[1]


def naive_parse_letor(
    path: str | os.PathLike[str], n_features: int
) -> tuple[np.ndarray, np.ndarray, np.ndarray | None]:
    """Line-by-line LibSVM/LETOR parser (one-based feature indices).

    Parameters
    ----------
    path : str or path-like
        File of rows ``<label> [qid:<id>] <index>:<value> ... [# comment]``.
    n_features : int
        Width of the returned matrix.

    Returns
    -------
    X : ndarray of shape (n_rows, n_features)
    y : ndarray of shape (n_rows,)
    qid : ndarray of int64 or None
        ``None`` when the rows carry no ``qid:``.
    """
    rows, labels, qids = [], [], []
    for line in Path(path).read_text().splitlines():
        line = line.split("#", 1)[0].strip()
        if not line:
            continue
        parts = line.split()
        labels.append(float(parts[0]))
        row = [0.0] * n_features
        for token in parts[1:]:
            key, value = token.split(":")
            if key == "qid":
                qids.append(int(value))
            else:
                row[int(key) - 1] = float(value)
        rows.append(row)
    qid = np.array(qids, dtype=np.int64) if qids else None
    return np.array(rows), np.array(labels), qid

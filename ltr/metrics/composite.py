"""Composite (multi-objective) and per-segment nDCG, and Bayesian smoothing.

Built on :func:`ltr.metrics.ndcg` (this module imports :mod:`ltr.metrics`,
never the reverse).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from ltr._validation import (
    check_1d_float,
    check_finite,
    check_objective_weights,
    check_offsets,
    check_real,
    short_repr,
)
from ltr.groups import resolve_groups
from ltr.metrics._ndcg import ndcg
from ltr.metrics.gains import GainSpec

__all__ = ["CompositeNDCG", "composite_ndcg", "ndcg_by_segment", "smooth"]


@dataclass(frozen=True)
class CompositeNDCG:
    """Result of :func:`composite_ndcg`.

    Attributes
    ----------
    total : float
        ``sum_o weight_o * nDCG_o`` with weights normalised to sum to 1.
    per_objective : dict[str, float]
        Each objective's mean nDCG.
    weights : dict[str, float]
        The normalised weights used.
    """

    total: float
    per_objective: dict[str, float]
    weights: dict[str, float]

    def __float__(self) -> float:
        """Return the weighted total."""
        return float(self.total)

    def to_dict(self) -> dict[str, float]:
        """``{"composite": total, "<objective>": value, ...}``."""
        per = {k: float(v) for k, v in self.per_objective.items()}
        return {"composite": float(self.total), **per}


def _check_objective_weights(weights: Any, names: Sequence[str]) -> dict[str, float]:
    """Check weights with the one rule, each naming a label column; normalise to sum to 1."""
    if not isinstance(weights, Mapping) or len(weights) == 0:
        raise TypeError(
            f"weights must be a non-empty mapping objective -> weight, got {short_repr(weights)}"
        )
    for name in weights:
        if name not in names:
            raise ValueError(
                f"weights names objective {name!r} but labels has no such column "
                f"(available: {sorted(names)})"
            )
    out = check_objective_weights(weights, "weights")
    total = sum(out.values())
    return {name: w / total for name, w in out.items()}


def composite_ndcg(
    labels: Mapping[str, Any],
    y_score: Any,
    *,
    weights: Mapping[str, float],
    qid: Any = None,
    group: Any = None,
    offsets: np.ndarray | None = None,
    k: int | None = 10,
    gains: Mapping[str, GainSpec] | None = None,
    **ndcg_options: Any,
) -> CompositeNDCG:
    """Multi-objective nDCG: the weighted sum of one nDCG per relevance definition.

    Parameters
    ----------
    labels : mapping of str to array-like of shape (n_rows,)
        One graded label column per objective, e.g. ``{"watch": ..., "share": ...}``.
    y_score : array-like of shape (n_rows,)
        Predicted scores.
    weights : mapping of str to float
        Weight of each objective (e.g. watch 0.6, share 0.25, follow 0.15);
        non-negative, not all zero, normalised to sum to 1.
    qid, group, offsets : array-like
        Query information as in :func:`ndcg`.
    k : int or None, default=10
        Cut-off.
    gains : mapping of str to gain, optional
        Per-objective gain (as ``gain`` in :func:`ndcg`); default ``'exp2'``.
    **ndcg_options
        Passed to :func:`ndcg` (``discount``, ``ties``, ``empty``, ``convention``...).

    Returns
    -------
    CompositeNDCG
    """
    if not isinstance(labels, Mapping) or len(labels) == 0:
        raise TypeError(
            "labels must be a non-empty mapping objective -> label column, "
            f"got {short_repr(labels)}"
        )
    norm = _check_objective_weights(weights, list(labels))
    gains = dict(gains or {})
    for name in gains:
        if name not in labels:
            raise ValueError(f"gains names objective {name!r} but labels has no such column")
    if "gain" in ndcg_options:
        raise TypeError("pass per-objective gains with gains={name: gain}, not gain=")
    if isinstance(k, (list, tuple)):
        raise TypeError("composite_ndcg takes a single k (int or None)")
    n_rows = len(np.asarray(y_score))
    if offsets is None:
        offsets = resolve_groups(n_rows, qid=qid, group=group).offsets
    else:
        offsets = check_offsets(offsets, "offsets", n_rows)
    per: dict[str, float] = {}
    for name in norm:
        try:
            per[name] = float(ndcg(labels[name], y_score, offsets=offsets, k=k,
                                   gain=gains.get(name), **ndcg_options))
        except ValueError as exc:  # name the label column, not ndcg's y_true
            col = f"labels[{name!r}]"
            text = str(exc).replace("y_true", col)
            raise ValueError(text if col in text else f"{col}: {text}") from exc
    total = float(sum(norm[name] * per[name] for name in norm))
    return CompositeNDCG(total=total, per_objective=per, weights=norm)


def ndcg_by_segment(
    y_true: Any,
    y_score: Any,
    *,
    segments: Any,
    qid: Any = None,
    group: Any = None,
    offsets: np.ndarray | None = None,
    k: int | None = 10,
    strength: float | None = None,
    **ndcg_options: Any,
) -> pd.DataFrame:
    """Mean nDCG per query segment (e.g. a category), optionally smoothed.

    Parameters
    ----------
    y_true, y_score : array-like of shape (n_rows,)
    segments : array-like of shape (n_rows,) or (n_queries,)
        Segment of each row (constant within a query) or of each query.
    qid, group, offsets : array-like
        Query information as in :func:`ndcg`.
    k : int or None, default=10
    strength : float, optional
        When given, adds ``ndcg_smoothed`` from :func:`smooth` with this strength.
    **ndcg_options
        Passed to :func:`ndcg`.

    Returns
    -------
    pandas.DataFrame
        Columns ``segment``, ``queries``, ``ndcg`` (and ``ndcg_smoothed``),
        sorted by segment; queries skipped as empty are not counted.
    """
    labels = check_1d_float(y_true, "y_true")
    if offsets is None:
        offsets = resolve_groups(labels.size, qid=qid, group=group).offsets
    else:
        offsets = check_offsets(offsets, "offsets", labels.size)
    n_q = offsets.size - 1
    seg = np.asarray(segments)
    if seg.ndim != 1:
        raise ValueError(f"segments must be 1-D, got shape {seg.shape}")
    if seg.size == labels.size:
        seg_q = seg[offsets[:-1]]
        per_row = np.repeat(seg_q, np.diff(offsets))
        if not np.array_equal(per_row, seg):
            bad = int(np.flatnonzero(per_row != seg)[0])
            raise ValueError(
                f"segments must be constant within each query; row {bad} has {seg[bad]!r} "
                f"but its query starts with {per_row[bad]!r}"
            )
    elif seg.size == n_q:
        seg_q = seg
    else:
        raise ValueError(
            f"segments must have one value per row ({labels.size}) or per query ({n_q}), "
            f"got {seg.size}"
        )
    per_query = ndcg(labels, y_score, offsets=offsets, k=k, reduce=None, **ndcg_options)
    frame = pd.DataFrame({"segment": seg_q, "value": per_query})
    frame = frame[~np.isnan(frame["value"].to_numpy())]
    table = frame.groupby("segment", sort=True)["value"].agg(["count", "mean"]).reset_index()
    table.columns = ["segment", "queries", "ndcg"]
    if strength is not None:
        table["ndcg_smoothed"] = smooth(table["ndcg"].to_numpy(), table["queries"].to_numpy(),
                                        strength=strength)
    return table


def smooth(values: Any, counts: Any, *, strength: float, prior: float | None = None) -> np.ndarray:
    r"""Bayesian (additive) smoothing of per-segment means for long-tail segments.

    .. math:: \hat{x} = \frac{n\,x + m\,\mathrm{prior}}{n + m}

    Parameters
    ----------
    values : array-like of shape (n_segments,)
        Per-segment means ``x``.
    counts : array-like of shape (n_segments,)
        Queries behind each mean ``n`` (>= 0).
    strength : float
        Pseudo-count ``m`` (>= 0); 0 returns ``values`` unchanged.
    prior : float, optional
        Value shrunk towards; defaults to the global mean ``sum(n x) / sum(n)``.

    Returns
    -------
    ndarray of shape (n_segments,)
    """
    x = check_1d_float(values, "values")
    n = check_1d_float(counts, "counts")
    if x.size != n.size:
        raise ValueError(f"counts has {n.size} entries but values has {x.size}; they must match")
    check_finite(x, "values")
    check_finite(n, "counts")
    if (n < 0).any():
        i = int(np.flatnonzero(n < 0)[0])
        raise ValueError(f"counts must be >= 0; counts[{i}] = {n[i].item()!r}")
    m = check_real(strength, "strength", minimum=0.0)
    if prior is None:
        if n.sum() <= 0:
            raise ValueError("counts sum to 0: pass prior explicitly")
        prior = float(np.dot(n, x) / n.sum())
    else:
        prior = check_real(prior, "prior")
    if m == 0:
        return x.copy()
    return (n * x + m * prior) / (n + m)

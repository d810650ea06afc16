"""Held-out evidence for :func:`~ltr.estimator.select_debiasing`: propensities and criteria.

Two held-out criteria score a candidate's ranking of held-out click sessions:

* ``"snips"``: the self-normalised IPS DCG@k (see :mod:`ltr.estimator._select`),
  which needs examination propensities;
* ``"examined_pairs"``: the share of (clicked, not clicked) pairs above each
  session's deepest click that the candidate orders right.  When examination
  is nested (a user who read position *p* read every position above it, as in
  cascade and dependent click models), every document above the deepest click
  was read, so a click there against a skip is an unbiased preference; no
  propensity enters.  Under a position-based model it is biased (a skip above a
  click may be unread).

Which applies is tested on the log itself (:func:`nested_examination_ratio`).
"""

from __future__ import annotations

import warnings
from typing import Any

import numpy as np

from ltr._validation import is_sparse
from ltr.groups import take_rows
from ltr.kernels._heldout import examined_pair_counts

#: Floor of the estimated per-impression cascade propensities (a row below a skipped,
#: fully attractive document is estimated unread: exactly 0).
CASCADE_FLOOR = 0.01
#: :func:`nested_examination_ratio` at or above this: examination is taken as nested.
#: Measured (experiments/study_position_bias.py logs): 1.01 under the PBM setting,
#: 2.8-3.4 under the cascade setting.
NESTED_RATIO = 1.25


def nested_examination_ratio(click: np.ndarray, pos: np.ndarray, doc: np.ndarray,
                             list_of_row: np.ndarray) -> float:
    """Mantel-Haenszel click-rate ratio of a document with vs without a click below it.

    For each document (``doc``), its impressions are split by whether the same
    session has a click at a deeper position; the ratio of click rates is pooled
    over documents (Mantel-Haenszel, documents seen both ways).  Under a
    position-based model clicks at different positions of a session are
    independent given the documents, so the ratio is 1; under nested
    examination a click below proves the document was read, so it exceeds 1.

    Returns
    -------
    float
        The pooled ratio; NaN when no document is seen both ways.
    """
    n_lists = int(list_of_row.max()) + 1 if list_of_row.size else 0
    deepest = np.zeros(n_lists, dtype=np.int64)
    np.maximum.at(deepest, list_of_row, np.where(click > 0, pos, 0))
    below = (deepest[list_of_row] > pos).astype(np.float64)
    n_docs = int(doc.max()) + 1 if doc.size else 0
    n1 = np.bincount(doc, weights=below, minlength=n_docs)
    c1 = np.bincount(doc, weights=click * below, minlength=n_docs)
    n0 = np.bincount(doc, minlength=n_docs) - n1
    c0 = np.bincount(doc, weights=click, minlength=n_docs) - c1
    both = (n0 > 0) & (n1 > 0)
    total = n0[both] + n1[both]
    num = float(np.sum(c1[both] * n0[both] / total))
    den = float(np.sum(c0[both] * n1[both] / total))
    if den <= 0.0:
        return float("inf") if num > 0.0 else float("nan")
    return num / den


def examined_pairs(scores: np.ndarray, click: np.ndarray, pos: np.ndarray,
                   offsets: np.ndarray, list_query: np.ndarray,
                   n_queries: int) -> tuple[np.ndarray, np.ndarray]:
    """Per query ``(pairs ordered right, pairs)`` above each list's deepest click."""
    return examined_pair_counts(
        np.ascontiguousarray(scores, dtype=np.float64),
        np.ascontiguousarray(click, dtype=np.float64),
        np.ascontiguousarray(pos, dtype=np.int64),
        np.ascontiguousarray(offsets, dtype=np.int64),
        np.ascontiguousarray(list_query, dtype=np.int64), int(n_queries))


# --------------------------------------------------------------------------- propensities


def _fill(prop: np.ndarray, clicks: np.ndarray) -> np.ndarray:
    """Non-increasing propensities per position, one per entry of *clicks*, position 1 = 1.

    Missing values carry the last one down; the table is padded or cut to the
    logged depth, then replaced by its non-increasing least-squares fit weighted
    by the clicks at each position (isotonic regression: examination falls with
    rank, and positions with few clicks are the noisiest), then clipped into
    ``[1e-3, 1]``.
    """
    from sklearn.isotonic import isotonic_regression

    length = clicks.size
    out = np.array(prop, dtype=np.float64)[:length]
    for p in range(1, out.size):
        if not np.isfinite(out[p]):
            out[p] = out[p - 1]
    if out.size < length:
        out = np.concatenate([out, np.full(length - out.size, out[-1])])
    out = isotonic_regression(out, sample_weight=clicks + 1e-3, increasing=False)
    return np.clip(out / out[0], 1e-3, 1.0)


def _em(click: np.ndarray, pos: np.ndarray, doc: np.ndarray,
        offsets: np.ndarray, n_iter: int | None = None) -> np.ndarray | None:
    """EM propensities when every clicked position is identifiable, else None.

    *n_iter* = 1 only tests identifiability (which is structural: which documents
    were logged at which positions), at the cost of one EM step.
    """
    from ltr.clicks import estimate_propensity_em

    top = int(pos[click > 0].max()) if (click > 0).any() else 1
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", UserWarning)
            est = estimate_propensity_em(click, pos, doc, offsets=offsets, max_position=top,
                                         **({} if n_iter is None else {"n_iter": n_iter}))
    except ValueError:
        return None
    prop = est.propensity
    return None if not np.all(np.isfinite(prop)) else prop


def _cascade(click: np.ndarray, pos: np.ndarray, doc: np.ndarray,
             offsets: np.ndarray) -> np.ndarray | None:
    """Per-impression cascade propensities (read given the clicks above), or None."""
    from ltr.clicks import estimate_propensity_cascade

    try:
        est = estimate_propensity_cascade(click, pos, doc, offsets=offsets)
    except ValueError:
        return None
    prop = np.asarray(est.propensity, dtype=np.float64)
    return prop if np.all(np.isfinite(prop)) and prop.max() > 0 else None


def _row_table(rows: np.ndarray, pos: np.ndarray) -> np.ndarray:
    """Mean per-impression propensity per position, relative to position 1, in ``[1e-3, 1]``."""
    depth = int(pos.max())
    sums = np.bincount(pos - 1, weights=rows, minlength=depth)
    table = sums / np.maximum(np.bincount(pos - 1, minlength=depth), 1)
    return np.clip(table / max(table[0], 1e-300), 1e-3, 1.0)


def _given_propensity(propensity: Any, n: int, order: np.ndarray | None, pos: np.ndarray,
                      click: np.ndarray) -> tuple[np.ndarray | None, np.ndarray | None]:
    """``(per-position table, per-row values or None)`` of a given *propensity*, or Nones."""
    from ltr._propensities import check_propensities

    if isinstance(propensity, str):
        if propensity != "estimate":
            raise ValueError(
                "propensity must be 'estimate', an array of propensities per position or one "
                f"per row (impression), got {propensity!r}"
            )
        return None, None
    values = check_propensities(propensity, "propensity")
    depth = int(pos.max())
    if values.size == n and n > depth:  # one per impression (e.g. a cascade estimate)
        rows = np.asarray(take_rows(values, order), dtype=np.float64)
        return _row_table(rows, pos), rows
    deepest = int(pos[click > 0].max()) if (click > 0).any() else 1
    if values.size < deepest:
        raise ValueError(
            f"propensity has {values.size} entries but a click was logged at position "
            f"{deepest}; give one propensity per position down to {deepest}, or one per row"
        )
    table = np.concatenate([values, np.full(max(depth - values.size, 0), values[-1])])[:depth]
    return table, None


def _fit_takes_propensity(estimator: Any) -> bool:
    """Whether *estimator*'s ``fit`` takes per-row propensities (``fit(..., propensity=)``)."""
    import inspect

    return "propensity" in inspect.signature(estimator.fit).parameters


def _pair_propensity(model: Any, bias_norm: float) -> np.ndarray:
    state = model.model_.position_bias
    t_plus = np.asarray(state["t_plus"], dtype=np.float64)
    return np.asarray(t_plus ** (1.0 + bias_norm), dtype=np.float64)




def _list_offsets(list_of_row: np.ndarray) -> np.ndarray:
    """Offsets of the contiguous runs of equal list ids in *list_of_row*."""
    starts = np.flatnonzero(np.r_[True, list_of_row[1:] != list_of_row[:-1]])
    return np.r_[starts, list_of_row.size].astype(np.int64)


def _bootstrap(num: np.ndarray, den: np.ndarray, chosen: int, n_boot: int, level: float,
               seed: int) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Percentile intervals of the pooled ratios ``sum(num) / sum(den)`` over resampled queries.

    Also of each column's paired difference to column *chosen*, the
    bootstrap standard error of each ratio, and that of each paired difference.
    """
    rng = np.random.default_rng(seed)
    n = num.shape[0]
    means = np.empty((n_boot, num.shape[1]))
    for b in range(n_boot):
        take = rng.integers(0, n, n)
        means[b] = num[take].sum(axis=0) / max(den[take].sum(), 1e-300)
    diffs = means - means[:, [chosen]]
    lo, hi = 50 * (1 - level), 50 * (1 + level)
    ci = np.percentile(means, [lo, hi], axis=0).T
    dci = np.percentile(diffs, [lo, hi], axis=0).T
    return ci, dci, means.std(axis=0), diffs.std(axis=0)


def _row_ids(X: Any) -> np.ndarray:
    """Return an id per row, equal for rows with identical features (the same document)."""
    if is_sparse(X):
        raise ValueError(
            "doc: with a sparse X the documents cannot be matched by their features; pass "
            "doc (a document id per row, equal across the sessions that show it)"
        )
    try:
        arr = np.ascontiguousarray(np.asarray(X, dtype=np.float64))
    except (TypeError, ValueError):
        raise ValueError(
            "doc: X has non-numeric columns, so documents cannot be matched by their "
            "features; pass doc (a document id per row)"
        ) from None
    arr = np.where(np.isnan(arr), np.inf, arr)  # NaN rows compare equal
    view = arr.view(np.dtype((np.void, arr.dtype.itemsize * arr.shape[1])))
    return np.unique(view.ravel(), return_inverse=True)[1].ravel().astype(np.int64)


def _query_of_lists(list_of_row: np.ndarray, doc: np.ndarray, n_lists: int) -> np.ndarray:
    """Query index per list: lists sharing a document belong to one query."""
    from scipy.sparse import coo_matrix
    from scipy.sparse.csgraph import connected_components

    _, d = np.unique(doc, return_inverse=True)
    n = n_lists + int(d.max()) + 1
    graph = coo_matrix((np.ones(d.size), (list_of_row, n_lists + d.ravel())), shape=(n, n))
    _, label = connected_components(graph, directed=False)
    return np.unique(label[:n_lists], return_inverse=True)[1].ravel()

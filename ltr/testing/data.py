"""Small random ranking data for tests: learnable queries and scored query lists."""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from ltr.groups import offsets_from_group, qid_from_offsets

__all__ = ["SmallQueries", "make_queries", "random_scored_queries"]


class SmallQueries(NamedTuple):
    """Rows of :func:`make_queries`, grouped by query.

    Query ``q`` is rows ``offsets[q]:offsets[q + 1]``.
    """

    X: np.ndarray
    """Features, float64, shape (n_rows, n_features)."""
    y: np.ndarray
    """Integer grades 0..4 as float64, shape (n_rows,)."""
    qid: np.ndarray
    """Query id ``0..n_queries-1`` per row, int64, contiguous."""
    offsets: np.ndarray
    """Query boundaries, int64, shape (n_queries + 1,)."""

    @property
    def group(self) -> np.ndarray:
        """Query sizes (LightGBM's ``group``)."""
        return np.diff(self.offsets)


def make_queries(
    n_queries: int = 20,
    docs: int | tuple[int, int] = 10,
    n_features: int = 5,
    seed: int = 0,
) -> SmallQueries:
    """Small learnable ranking data: grades follow the first two features plus noise.

    Parameters
    ----------
    n_queries : int, default=20
        Number of queries.
    docs : int or (int, int), default=10
        Documents per query, or an inclusive ``(low, high)`` range drawn per query.
    n_features : int, default=5
        Number of features (at least 2); columns beyond the first two are noise.
    seed : int, default=0
        Seed of :func:`numpy.random.default_rng`.

    Returns
    -------
    SmallQueries
        ``X, y, qid, offsets`` (a named tuple).

    Examples
    --------
    >>> data = make_queries(3, docs=4, n_features=2, seed=1)
    >>> data.X.shape, data.offsets.tolist()
    ((12, 2), [0, 4, 8, 12])
    """
    if n_queries < 1:
        raise ValueError(f"n_queries must be >= 1, got {n_queries}")
    if n_features < 2:
        raise ValueError(f"n_features must be >= 2, got {n_features}")
    rng = np.random.default_rng(seed)
    if isinstance(docs, tuple):
        low, high = docs
        if not 1 <= low <= high:
            raise ValueError(f"docs range must satisfy 1 <= low <= high, got {docs}")
        sizes = rng.integers(low, high + 1, size=n_queries)
    else:
        if docs < 1:
            raise ValueError(f"docs must be >= 1, got {docs}")
        sizes = np.full(n_queries, docs)
    offsets = offsets_from_group(sizes)
    n = int(offsets[-1])
    X = rng.normal(size=(n, n_features))
    latent = X[:, 0] + 0.5 * X[:, 1] + rng.normal(scale=0.5, size=n)
    y = np.clip(np.round(latent + 1.0), 0, 4).astype(np.float64)
    return SmallQueries(X, y, qid_from_offsets(offsets), offsets)


def random_scored_queries(
    rng: np.random.Generator,
    n_queries: int,
    max_docs: int,
    *,
    float_labels: bool = False,
    ties: bool = False,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Random scores and labels of ragged queries (1 to ``max_docs`` documents each).

    Parameters
    ----------
    rng : numpy.random.Generator
        Source of randomness (drawn from in a fixed order).
    n_queries : int
        Number of queries.
    max_docs : int
        Largest query size.
    float_labels : bool, default=False
        Labels uniform in [0, 4) rounded to 2 decimals instead of integers 0..4.
    ties : bool, default=False
        Round scores to integers, so that many tie exactly.

    Returns
    -------
    scores, labels : ndarray of float64, shape (n_rows,)
    offsets : ndarray of int64, shape (n_queries + 1,)
    """
    sizes = rng.integers(1, max_docs + 1, size=n_queries)
    offsets = np.concatenate(([0], np.cumsum(sizes))).astype(np.int64)
    n = int(offsets[-1])
    if float_labels:
        labels = rng.uniform(0, 4, size=n).round(2)
    else:
        labels = rng.integers(0, 5, size=n).astype(float)
    scores = rng.normal(size=n)
    if ties:
        scores = np.round(scores, 0)  # many exact ties
    return scores, labels, offsets

"""The empty-query rule, reported: how a query with no relevant document was scored, and how often.

The references disagree on the nDCG of a query whose ideal DCG is 0 (no
document with a positive gain): LightGBM and XGBoost score it 1, scikit-learn,
trec_eval and ranx 0 (see :data:`ltr.metrics.CONVENTIONS`).  A mean nDCG is
only comparable across tools once the reader knows the rule and the number of
queries it touched; :func:`empty_query_rule` counts them, and
:meth:`EmptyQueryRule.describe` says it in one line, e.g.
``"empty: 12 of 1,000 queries scored 1 (lightgbm)"``.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

import numpy as np

from ltr._validation import check_1d_float, check_offsets

__all__ = ["EmptyQueryRule", "count_empty_queries", "empty_query_rule"]


def count_empty_queries(y: Any, offsets: Any, min_relevant: float | None = None) -> int:
    """Count the queries without a relevant document (every label <= 0, or < *min_relevant*).

    Parameters
    ----------
    y : array-like of shape (n_rows,)
        Graded relevance.
    offsets : array-like of int64, shape (n_queries + 1,)
        Query offsets.
    min_relevant : float, optional
        Labels below it have no gain (ranx: 1).

    Returns
    -------
    int

    Examples
    --------
    >>> count_empty_queries([0, 0, 1, 0, 2], [0, 2, 5])
    1
    """
    labels = check_1d_float(y, "y")
    off = check_offsets(offsets, "offsets", len(labels))
    relevant = labels > 0 if min_relevant is None else labels >= min_relevant
    sizes = np.diff(off)
    has = np.zeros(len(sizes), dtype=bool)
    nonempty = sizes > 0
    if nonempty.any():
        has[nonempty] = np.logical_or.reduceat(relevant, off[:-1][nonempty])
    return int((~has).sum())


@dataclass(frozen=True)
class EmptyQueryRule:
    """The empty-query rule of a metric table and the number of queries it applied to.

    Attributes
    ----------
    convention : str
        The nDCG convention (``"lightgbm"``, ``"trec_eval"``, ... or ``"default"``).
    score : float or None
        What an empty query scores (None: left out of the mean, ltr's default).
    n_empty : int
        Queries with no relevant document.
    n_queries : int
        Queries in the table.
    """

    convention: str
    score: float | None
    n_empty: int
    n_queries: int

    def describe(self) -> str:
        """One line, e.g. ``"empty: 12 of 1,000 queries scored 1 (lightgbm)"``."""
        how = "left out" if self.score is None else f"scored {self.score:g}"
        return f"empty: {self.n_empty:,} of {self.n_queries:,} queries {how} ({self.convention})"

    def shifted_mean(self, mean: float, score: float) -> float:
        """Return the mean over queries had the empty ones scored *score* instead.

        Parameters
        ----------
        mean : float
            A mean nDCG under this rule.
        score : float
            The other rule's score (1: the engines', 0: trec_eval's).

        Returns
        -------
        float
        """
        n, e = self.n_queries, self.n_empty
        if self.score is None:  # mean over the n - e non-empty queries
            return (mean * (n - e) + score * e) / n if n else float("nan")
        return mean + (score - self.score) * e / n if n else float("nan")

    def to_dict(self) -> dict[str, Any]:
        """Return plain data, with the one-line description."""
        return {**asdict(self), "text": self.describe()}


def empty_query_rule(y: Any, offsets: Any, convention: str | None = None) -> EmptyQueryRule:
    """Return the empty-query rule of *convention* and how many queries it touches.

    Parameters
    ----------
    y : array-like of shape (n_rows,)
        Graded relevance.
    offsets : array-like of int64
        Query offsets.
    convention : str, optional
        A key of :data:`ltr.metrics.CONVENTIONS`; None: ltr's default (empty
        queries left out).

    Returns
    -------
    EmptyQueryRule

    Examples
    --------
    >>> empty_query_rule([0, 0, 1, 0, 2], [0, 2, 5], "lightgbm").describe()
    'empty: 1 of 2 queries scored 1 (lightgbm)'
    """
    from ltr.metrics import CONVENTIONS

    if convention is not None and convention not in CONVENTIONS:
        raise ValueError(
            f"convention must be one of {sorted(CONVENTIONS)} or None, got {convention!r}"
        )
    conv = CONVENTIONS[convention] if convention is not None else None
    min_rel = conv.min_relevant if conv is not None else None
    score = conv.empty if conv is not None else "skip"
    off = np.asarray(offsets)
    return EmptyQueryRule(
        convention=convention or "default",
        score=None if isinstance(score, str) else float(score),
        n_empty=count_empty_queries(y, offsets, min_rel),
        n_queries=int(len(off) - 1),
    )

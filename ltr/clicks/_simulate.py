r"""Click simulation and propensity estimation for position-biased feedback.

Two click models over graded labels and a logged ranking:

* **Position-based model** (PBM, :func:`simulate_pbm`): a result at display
  position :math:`p` (1 = top) is examined with probability :math:`\theta_p`
  and, if examined, clicked with probability :math:`\gamma(g)` of its grade
  :math:`g`, independently of the other results:
  :math:`P(c = 1) = \theta_p\,\gamma(g)`.
* **Cascade model** (:func:`simulate_cascade`): the user reads from the top,
  clicks a result with probability :math:`\gamma(g)` and, after a click, stops
  with probability :math:`s(g)`; without a click they read on.

The **logged ranking** of each query (the order shown in every session) is,
in this order of precedence:

1. ``logging_scores`` with ``temperature > 0``: a fresh Plackett-Luce draw per
   session, :math:`P(d \text{ first}) \propto \exp(s_d / T)` (a stochastic
   logging policy; the propensity estimators need documents seen at several
   positions);
2. ``logging_scores`` with ``temperature=None``: sorted by score, descending
   (ties in row order), the same in every session;
3. ``position``: a display rank per row (1 = top), a permutation of
   ``1..n_q`` within each query;
4. nothing: the rows are already in displayed order within each query.

``swap_depth=K`` adds the result-randomization intervention of Joachims et al.
(2017) on top of the logged ranking: each session draws ``k`` uniformly in
``2..min(K, n_q)`` and, with probability 1/2, swaps the results at positions 1
and ``k``.  :func:`estimate_propensity_swap` reads the propensities off such
a log; :func:`estimate_propensity_em` estimates them from ordinary logs with
the PBM's EM algorithm.

A simulation returns a :class:`ClickLog`: one impression per row and session,
grouped into displayed lists (one per query and session) in displayed order.

References
----------
Craswell et al. (2008), An experimental comparison of click position-bias
models.  Joachims, Swaminathan and Schnabel (2017), Unbiased learning-to-rank
with biased feedback.  Wang et al. (2018), Position bias estimation for
unbiased learning to rank in personal search.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from numbers import Real
from typing import TYPE_CHECKING, Any

import numpy as np

from ltr._validation import (
    check_1d_float,
    check_finite,
    check_int,
    check_labels,
    check_positions,
    check_real,
    check_seed,
)
from ltr.groups import resolve_offsets
from ltr.kernels import _clicks as K

if TYPE_CHECKING:  # pragma: no cover
    import pandas as pd

__all__ = [
    "DEFAULT_CLICK_LADDER",
    "ClickLog",
    "PropensityEstimate",
    "simulate_cascade",
    "simulate_pbm",
]

#: Default click (and cascade stop) probability of the lowest and the highest grade:
#: grade ``g`` of labels ``0..G`` gets ``0.05 + 0.9 * g / G`` (0.05 for every row when G = 0).
DEFAULT_CLICK_LADDER: tuple[float, float] = (0.05, 0.95)


# --------------------------------------------------------------------------- #
# Result objects                                                               #
# --------------------------------------------------------------------------- #


@dataclass(frozen=True, eq=False)
class ClickLog:
    """Simulated impressions: one per input row and session, in displayed order.

    The impressions of one query in one session form a *list* (a results
    page); lists are contiguous, query by query and session by session, so
    ``offsets`` is what the IPS metrics take as ``offsets=``.

    Attributes
    ----------
    offsets : ndarray of int64 of shape (n_lists + 1,)
        Impressions of list ``l`` are ``offsets[l]:offsets[l + 1]``; list
        ``l`` is query ``l // n_sessions``, session ``l % n_sessions``.
    query : ndarray of int64 of shape (n_impressions,)
        Query index (``0..n_queries - 1``, in input order).
    session : ndarray of int64 of shape (n_impressions,)
        Session number within the query, ``0..n_sessions - 1``.
    row : ndarray of int64 of shape (n_impressions,)
        Index of the impression's document in the input rows (use it to take
        labels, features or a new ranker's scores: ``scores[log.row]``).
    position : ndarray of int64 of shape (n_impressions,)
        Display position, 1 = top.
    click : ndarray of int8 of shape (n_impressions,)
        1 if clicked.
    swap : ndarray of int64 of shape (n_impressions,)
        ``k`` of the session's swap(1, k) experiment, 0 without intervention.
    n_sessions : int
        Sessions per query.
    model : str
        ``"pbm"`` or ``"cascade"``.
    """

    offsets: np.ndarray
    query: np.ndarray
    session: np.ndarray
    row: np.ndarray
    position: np.ndarray
    click: np.ndarray
    swap: np.ndarray
    n_sessions: int
    model: str

    @property
    def n_impressions(self) -> int:
        """Number of impressions (rows times sessions)."""
        return int(self.row.size)

    def to_frame(self) -> pd.DataFrame:
        """Return the impressions as a DataFrame.

        Returns
        -------
        pandas.DataFrame
            Columns ``query``, ``session``, ``row``, ``position``, ``click``,
            ``swap``, one row per impression in displayed order.
        """
        import pandas as pd

        return pd.DataFrame({"query": self.query, "session": self.session, "row": self.row,
                             "position": self.position, "click": self.click,
                             "swap": self.swap})

    def counts(self) -> pd.DataFrame:
        """Aggregate to impressions and clicks per (query, row, position).

        Returns
        -------
        pandas.DataFrame
            Columns ``query``, ``row``, ``position``, ``impressions``,
            ``clicks``, sorted by ``row`` then ``position``.
        """
        import pandas as pd

        pair, pos, n, c = _cells(self.row, self.position, self.click)
        first = np.zeros(int(self.row.max()) + 1, dtype=np.int64)
        first[self.row] = self.query
        return pd.DataFrame({"query": first[pair], "row": pair, "position": pos,
                             "impressions": n, "clicks": c})


@dataclass(frozen=True, eq=False)
class PropensityEstimate:
    r"""Estimated examination propensities per position, normalised to position 1.

    Attributes
    ----------
    propensity : ndarray of float64 of shape (max_position,)
        ``propensity[p - 1]`` estimates :math:`\theta_p / \theta_1` (so
        ``propensity[0] == 1``); NaN where a position had no data.
    impressions : ndarray of int64 of shape (max_position,)
        Impressions used per position.
    clicks : ndarray of int64 of shape (max_position,)
        Clicks used per position.
    method : str
        ``"em"`` or ``"swap"``.
    n_iter : int
        EM iterations run (0 for ``"swap"``).
    converged : bool
        Whether EM met ``tol`` (True for ``"swap"``).
    raw : ndarray of float64 of shape (max_position,)
        Un-normalised estimates (EM: :math:`\theta_p`; swap: equal to ``propensity``).
    """

    propensity: np.ndarray
    impressions: np.ndarray
    clicks: np.ndarray
    method: str
    n_iter: int
    converged: bool
    raw: np.ndarray


# --------------------------------------------------------------------------- #
# Validation helpers                                                           #
# --------------------------------------------------------------------------- #


def _grades(labels: np.ndarray, name: str) -> np.ndarray:
    bad = labels != np.floor(labels)
    if bad.any():
        i = int(np.flatnonzero(bad)[0])
        raise ValueError(
            f"{name} must hold integer grades (click probabilities are given per grade); "
            f"{name}[{i}] = {float(labels[i])!r}"
        )
    return labels.astype(np.int64)


def _grade_table(prob: Any, name: str, grades: np.ndarray, labels_name: str) -> np.ndarray:
    """Probability per grade ``0..max``: None (the ladder), one number, a mapping or an array."""
    top = int(grades.max())
    if isinstance(prob, (Real, np.number)) and not isinstance(prob, (bool, np.bool_)):
        return np.full(top + 1, check_real(prob, name, minimum=0.0, maximum=1.0))
    if prob is None:
        lo, hi = DEFAULT_CLICK_LADDER
        return lo + (hi - lo) * np.arange(top + 1) / max(top, 1) if top else np.array([lo])
    if isinstance(prob, Mapping):
        table = np.full(top + 1, np.nan)
        for key, value in prob.items():
            g = check_int(key, f"{name} key", minimum=0) if not isinstance(key, float) else key
            if g != int(g):
                raise ValueError(f"{name} keys must be integer grades, got {key!r}")
            if int(g) <= top:
                table[int(g)] = check_real(value, f"{name}[{key!r}]", minimum=0.0, maximum=1.0)
        missing = np.isnan(table[grades])
        if missing.any():
            i = int(np.flatnonzero(missing)[0])
            raise ValueError(
                f"{name} has no probability for grade {int(grades[i])} ({labels_name}[{i}]); "
                f"give one per grade present, got keys {sorted(prob)!r}"
            )
        return np.nan_to_num(table)
    table = check_1d_float(prob, name)
    bad = ~np.isfinite(table) | (table < 0) | (table > 1)
    if bad.any():
        i = int(np.flatnonzero(bad)[0])
        raise ValueError(
            f"{name} must be probabilities in [0, 1]; {name}[{i}] = {float(table[i])!r}"
        )
    if table.size <= top:
        i = int(np.flatnonzero(grades >= table.size)[0])
        raise ValueError(
            f"{name} has {table.size} entries (grades 0..{table.size - 1}) but "
            f"{labels_name}[{i}] = {int(grades[i])}; give one probability per grade"
        )
    return table


def _examination(examination: Any, longest: int) -> np.ndarray:
    """Return the examination table from an ``eta`` (float) or a per-position array."""
    if isinstance(examination, (int, float, np.integer, np.floating)) and not isinstance(
        examination, (bool, np.bool_)
    ):
        eta = check_real(examination, "examination", minimum=0.0)
        return (1.0 / np.arange(1, longest + 1)) ** eta
    table = check_1d_float(examination, "examination")
    bad = ~np.isfinite(table) | (table < 0) | (table > 1)
    if bad.any():
        i = int(np.flatnonzero(bad)[0])
        raise ValueError(
            f"examination must hold probabilities in [0, 1] per position (index 0 = position "
            f"1) or be a float eta for (1/p)**eta; examination[{i}] = {float(table[i])!r}"
        )
    return table


def _logged(
    n_rows: int, offs: np.ndarray, position: Any, logging_scores: Any, temperature: Any
) -> tuple[int, np.ndarray, np.ndarray, float]:
    pos = np.zeros(1, dtype=np.int64)
    scores = np.zeros(1)
    if logging_scores is not None:
        if position is not None:
            raise ValueError(
                "pass position (a fixed logged ranking) or logging_scores (a logging policy), "
                "not both"
            )
        scores = check_1d_float(logging_scores, "logging_scores")
        if scores.size != n_rows:
            raise ValueError(
                f"logging_scores has {scores.size} rows but labels has {n_rows}; give one per row"
            )
        check_finite(scores, "logging_scores")
        if temperature is None:
            return K.ORDER_SCORES, pos, scores, 0.0
        t = check_real(temperature, "temperature", minimum=0.0, exclusive_minimum=True)
        return K.ORDER_PLACKETT_LUCE, pos, scores, 1.0 / t
    if temperature is not None:
        raise ValueError("temperature needs logging_scores (the Plackett-Luce logging policy)")
    if position is not None:
        return K.ORDER_POSITION, check_positions(position, "position", offs), scores, 0.0
    return K.ORDER_ROWS, pos, scores, 0.0


def _simulate(
    model: int, labels: Any, qid: Any, group: Any, offsets: Any, position: Any,
    logging_scores: Any, temperature: Any, examination: Any, click_prob: Any,
    stop_prob: Any, max_position: int, n_sessions: Any, swap_depth: Any, random_state: Any,
    abandon: float = 0.0,
) -> ClickLog:
    y = check_labels(labels, "labels")
    grades = _grades(y, "labels")
    offs = resolve_offsets(y.size, qid=qid, group=group, offsets=offsets)
    n_s = check_int(n_sessions, "n_sessions", minimum=1)
    depth = 0 if swap_depth is None else check_int(swap_depth, "swap_depth", minimum=2)
    seed = check_seed(random_state)
    if seed is None:
        seed = int(np.random.default_rng().integers(0, 2**31 - 1))
    mode, pos, scores, inv_t = _logged(y.size, offs, position, logging_scores, temperature)
    cp = _grade_table(click_prob, "click_prob", grades, "labels")
    sp = _grade_table(stop_prob, "stop_prob", grades, "labels") if model else np.zeros(1)
    sizes = np.diff(offs)
    exam = _examination(examination, int(sizes.max())) if model == K.MODEL_PBM else np.zeros(1)
    n_imp = y.size * n_s
    row = np.empty(n_imp, dtype=np.int64)
    disp = np.empty(n_imp, dtype=np.int64)
    click = np.empty(n_imp, dtype=np.int8)
    swap = np.empty(n_imp, dtype=np.int64)
    K.simulate(grades, offs, mode, pos, scores, inv_t, model, exam, cp, sp, abandon,
               max_position, n_s, depth, seed, row, disp, click, swap)
    list_sizes = np.repeat(sizes, n_s)
    list_offsets = np.zeros(list_sizes.size + 1, dtype=np.int64)
    np.cumsum(list_sizes, out=list_offsets[1:])
    query = np.repeat(np.arange(sizes.size, dtype=np.int64), sizes * n_s)
    session = np.repeat(np.tile(np.arange(n_s, dtype=np.int64), sizes.size), list_sizes)
    return ClickLog(list_offsets, query, session, row, disp, click, swap, n_s,
                    "pbm" if model == K.MODEL_PBM else "cascade")


# --------------------------------------------------------------------------- #
# Simulation                                                                   #
# --------------------------------------------------------------------------- #


def simulate_pbm(
    labels: Any,
    *,
    qid: Any = None,
    group: Any = None,
    offsets: Any = None,
    position: Any = None,
    logging_scores: Any = None,
    temperature: float | None = None,
    examination: float | Any = 1.0,
    click_prob: Mapping[int, float] | Any = None,
    n_sessions: int = 1,
    swap_depth: int | None = None,
    random_state: Any = None,
) -> ClickLog:
    r"""Simulate clicks under the position-based model.

    .. math:: P(\text{click at position } p) = \theta_p \, \gamma(g)

    Parameters
    ----------
    labels : array-like of shape (n_rows,)
        Integer relevance grades >= 0.
    qid, group, offsets : array-like
        Exactly one: a query id per row (contiguous), query sizes, or
        ``int64`` offsets of length ``n_queries + 1``.
    position : array-like of shape (n_rows,), optional
        The logged display rank of each row (1 = top), a permutation of
        ``1..n_q`` per query.  Default: rows are in displayed order.
    logging_scores : array-like of shape (n_rows,), optional
        A logger's scores: the displayed order is by score (descending), or a
        Plackett-Luce draw per session with ``temperature``.
    temperature : float > 0, optional
        Plackett-Luce temperature: ``P(first) ∝ exp(score / temperature)``;
        small is near the sorted order, large near uniform shuffles.
    examination : float or array-like, default=1.0
        A float ``eta`` gives :math:`\theta_p = (1/p)^\eta`; an array is the
        table :math:`\theta_p` (index 0 = position 1), each in ``[0, 1]``;
        positions past its end are never examined (a page of that length).
    click_prob : mapping or array-like, optional
        :math:`\gamma(g)`, click probability of an examined result of grade
        ``g``: ``{grade: p}`` or an array indexed by grade.  Default: the
        ladder ``0.05 + 0.9 * g / G`` for labels ``0..G``
        (:data:`DEFAULT_CLICK_LADDER`; grades 0..4 give 0.05, 0.275, 0.5,
        0.725, 0.95).
    n_sessions : int, default=1
        Sessions per query.
    swap_depth : int >= 2, optional
        Run the swap(1, k) intervention (k uniform in ``2..min(swap_depth, n_q)``,
        swapped with probability 1/2) for :func:`estimate_propensity_swap`.
    random_state : int, numpy Generator or RandomState, optional
        Seed; the result depends only on it, not on the number of threads.

    Returns
    -------
    ClickLog
        One impression per row and session, in displayed order.

    Raises
    ------
    ValueError
        Non-integer or negative labels, a grade without a probability,
        probabilities outside [0, 1], bad positions, or both ``position`` and
        ``logging_scores``.

    Examples
    --------
    >>> log = simulate_pbm([2, 0, 1, 0], group=[4], n_sessions=3, random_state=0)
    >>> log.offsets.tolist(), log.position[:4].tolist()
    ([0, 4, 8, 12], [1, 2, 3, 4])
    >>> log.to_frame().columns.tolist()
    ['query', 'session', 'row', 'position', 'click', 'swap']
    """
    return _simulate(K.MODEL_PBM, labels, qid, group, offsets, position, logging_scores,
                     temperature, examination, click_prob, None, 0, n_sessions, swap_depth,
                     random_state)


def simulate_cascade(
    labels: Any,
    *,
    qid: Any = None,
    group: Any = None,
    offsets: Any = None,
    position: Any = None,
    logging_scores: Any = None,
    temperature: float | None = None,
    click_prob: Mapping[int, float] | Any = None,
    stop_prob: float | Mapping[int, float] | Any = None,
    max_position: int | None = None,
    n_sessions: int = 1,
    swap_depth: int | None = None,
    random_state: Any = None,
    abandon: float = 0.0,
) -> ClickLog:
    r"""Simulate clicks under the cascade model (top-down reading, stop after a click).

    The user reads the results from the top.  A read result of grade
    :math:`g` is clicked with probability :math:`\gamma(g)`; after a click the
    user stops with probability :math:`s(g)`; then, clicked or not, they
    abandon the page with probability ``abandon`` (:math:`a`).  So the user
    reads the next result with probability :math:`(1 - s(g))(1 - a)` after a
    click and :math:`1 - a` after a skip: the dependent click model's
    continuation probabilities, fitted back by
    :func:`~ltr.clicks.estimate_propensity_cascade`.

    Parameters
    ----------
    labels, qid, group, offsets, position, logging_scores, temperature
        As in :func:`simulate_pbm`.
    click_prob : float, mapping or array-like, optional
        Click probability of a read result per grade (one float: every
        grade); default as in :func:`simulate_pbm`.
    stop_prob : float, mapping or array-like, optional
        Probability of stopping after clicking a result of that grade (one
        float: every grade; ``0`` never stops after a click); default the
        same ladder ``0.05 + 0.9 * g / G``.
    max_position : int >= 1, optional
        Results page size: positions below it are never read.
    n_sessions, swap_depth, random_state
        As in :func:`simulate_pbm`.
    abandon : float in [0, 1), default=0.0
        Probability of stopping after each read result, clicked or not (on
        top of ``stop_prob`` after a click).  ``0`` reproduces the clicks of
        the model without abandonment bit for bit.

    Returns
    -------
    ClickLog

    Examples
    --------
    >>> log = simulate_cascade([1, 1, 1], group=[3], click_prob=[0, 1], stop_prob=[0, 1],
    ...                        random_state=0)
    >>> log.click.tolist()
    [1, 0, 0]

    The cascade setting of issue 21 (every result shown, no stop after a click,
    abandonment 0.2):

    >>> log = simulate_cascade([4, 0, 2], group=[3], click_prob=[0.4, 0.6, 0.7, 0.8, 0.9],
    ...                        stop_prob=0.0, abandon=0.2, n_sessions=5, random_state=0)
    >>> log.n_impressions
    15
    """
    cut = 0 if max_position is None else check_int(max_position, "max_position", minimum=1)
    quit_p = check_real(abandon, "abandon", minimum=0.0)
    if quit_p >= 1.0:
        raise ValueError(
            f"abandon must be a probability in [0, 1) (1 would stop after the first result "
            f"in every session), got {quit_p!r}"
        )
    return _simulate(K.MODEL_CASCADE, labels, qid, group, offsets, position, logging_scores,
                     temperature, None, click_prob, stop_prob, cut, n_sessions,
                     swap_depth, random_state, quit_p)


# --------------------------------------------------------------------------- #
# Propensity estimation                                                        #
# --------------------------------------------------------------------------- #


def _cells(
    doc: np.ndarray, position: np.ndarray, click: np.ndarray
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Impressions and clicks per (doc, position) cell: ``(doc, position, n, clicks)``."""
    width = int(position.max()) + 1
    key = doc.astype(np.int64) * width + position
    uniq, inverse, n = np.unique(key, return_inverse=True, return_counts=True)
    c = np.bincount(inverse.ravel(), weights=click, minlength=uniq.size)
    return uniq // width, uniq % width, n.astype(np.int64), np.rint(c).astype(np.int64)

r"""Choosing a position-debiasing method from clicks alone: :func:`select_debiasing`.

Each candidate method is a set of :class:`~ltr.estimator.LambdaMARTRanker`
parameter values (:data:`CANDIDATES`, one registry).  The candidates are
trained on part of the click log and scored on the held-out part by the
self-normalised IPS DCG@k of their rankings, with examination propensities
estimated from the training part only.  For held-out query :math:`q` with
sessions (lists) :math:`l`,

.. math::
    \mathrm{SNIPS}(q) = \frac{\sum_{l \in q} \sum_{i \in l} w_i c_i \, d(r_i)[r_i \le k]}
                             {\sum_{l \in q} \sum_{i \in l} w_i c_i},
    \qquad w_i = 1 / \hat\theta_i,

(the IPS DCG of :func:`ltr.clicks.ips_dcg` summed over the query's sessions,
over their summed click weights), averaged over queries (``normalize="query"``)
or one ratio over all held-out sessions (``normalize="all"``).  It is
consistent for the relevance-weighted mean discount
:math:`\sum_i \gamma_i d(r_i) / \sum_i \gamma_i` of the new ranking, whatever
order the logger showed, so the candidate that ranks clicked-because-relevant
documents highest scores best.  Whole queries are held out (``n_splits``
folds, queries assigned at random, seeded): every session of a query lands in
the same fold, so no held-out document was seen in training.  The confidence
intervals come from a bootstrap over held-out queries (seeded).

Measured on simulated logs (experiments/select_debiasing.py): ``"query"``
chose better under PBM clicks with estimated propensities (a few deep clicks
with large, noisy weights dominate one overall ratio), ``"all"`` under cascade
clicks (where the per-query ratio favours the logged order).

**Propensities.** Cell EM (:func:`ltr.clicks.estimate_propensity_em`) needs
documents shown at several positions; under a deterministic logger every
document sits at one position and EM cannot tell examination from relevance.
``propensity="estimate"`` therefore uses EM on the fold's training clicks when
every clicked position is linked to position 1 through documents logged at
several positions, and otherwise the examination ratios that the pair-debiased
model (Unbiased LambdaMART, candidate ``"pair"``) learned on the same clicks:
:math:`\hat\theta_p = (t^+_p)^{1 + \text{bias\_norm}}` (its :math:`t^+` estimates
:math:`\theta_p^{1/(1+\text{bias\_norm})}`), which uses the relevance a ranking
model learns from features instead of a per-document table (in the spirit of
Wang et al. 2018's regression EM).  The method used is reported.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np

from ltr._validation import (
    check_clicks,
    check_int,
    check_positions,
    check_real,
    check_seed,
    check_weights,
)
from ltr.engines import uses_position
from ltr.estimator._heldout import (
    CASCADE_FLOOR,
    NESTED_RATIO,
    _bootstrap,
    _cascade,
    _em,
    _fill,
    _fit_takes_propensity,
    _given_propensity,
    _list_offsets,
    _pair_propensity,
    _query_of_lists,
    _row_ids,
    _row_table,
    examined_pairs,
    nested_examination_ratio,
)
from ltr.groups import resolve_groups, take_rows

if TYPE_CHECKING:  # pragma: no cover
    import pandas as pd

__all__ = [
    "CANDIDATES",
    "DEFAULT_CANDIDATES",
    "TABLES",
    "DebiasingSelection",
    "available_candidates",
    "select_debiasing",
]

#: Placeholder in :data:`CANDIDATES` for the propensities estimated from the clicks.
ESTIMATED = "estimated"

#: Candidate name -> the LambdaMARTRanker parameter values it sets (over the base estimator's).
#: A candidate whose parameters the estimator does not have (yet) is unavailable: it is left
#: out of the default list and refused by name when asked for.
CANDIDATES: dict[str, dict[str, Any]] = {
    "naive": {"unbiased": False},
    "pair": {"unbiased": True, "objective": "lambdarank"},
    "position_term": {"unbiased": False, "objective": "lambdarank", "position_term": True},
    "pair+position_term": {"unbiased": True, "objective": "lambdarank", "position_term": True},
    "propensity": {"unbiased": True, "objective": "lambdarank", "propensity": ESTIMATED},
    "native": {"unbiased": True, "objective": "native"},
}


#: Candidate name -> the per-position tables it learns or estimates (its complexity): the
#: position term one (offsets), the pair debiasing two (t+ and t-), estimated propensities one,
#: the engine's own method two (XGBoost's t+ and t-; LightGBM's GAM has one).  With
#: ``rule="one_se"`` the selection takes the candidate with the fewest tables whose held-out
#: score is within one standard error of the best's.
TABLES: dict[str, int] = {
    "naive": 0, "position_term": 1, "propensity": 1, "pair": 2, "native": 2,
    "pair+position_term": 3,
}

#: The candidates tried when none are named, and by ``unbiased="auto"``.  ``"native"``
#: is left out (with LightGBM it is the position GAM, which ``"position_term"`` reproduces;
#: with XGBoost the pair-debiased objective, as ``"pair"``), and so is ``"propensity"``
#: (it never beat ``"pair"`` in experiments/results/position_bias.md): each candidate
#: costs ``n_splits`` fits.
DEFAULT_CANDIDATES: tuple[str, ...] = ("naive", "pair", "position_term", "pair+position_term")


def available_candidates(estimator: Any) -> list[str]:
    """Names in :data:`CANDIDATES` whose parameters *estimator* has (``get_params``).

    Parameters
    ----------
    estimator : LambdaMARTRanker
        The base estimator.

    Returns
    -------
    list of str
    """
    params = estimator.get_params(deep=False)
    return [name for name, values in CANDIDATES.items() if set(values) <= set(params)]


@dataclass(frozen=True, eq=False)
class DebiasingSelection:
    """Held-out click scores of the candidate debiasing methods, and the choice.

    Attributes
    ----------
    ranking : tuple of str
        Candidate names, best (highest held-out :attr:`score`) first.
    chosen : str
        The candidate :attr:`rule` picks: ``ranking[0]`` with ``"best"``; with
        ``"one_se"`` the one with the fewest per-position tables (:data:`TABLES`)
        among those whose score is at least the best's minus one bootstrap
        standard error of their paired difference (:attr:`diff_se`).
    params : dict
        The chosen candidate's estimator parameters (``propensity`` resolved
        to the estimate over all folds): ``estimator.set_params(**params)``.
    snips : dict of str to float
        Held-out self-normalised IPS DCG@k per candidate (see ``normalize``),
        whichever criterion ranks them.
    ci : dict of str to (float, float)
        Bootstrap percentile interval of each :attr:`score` (over held-out queries).
    diff_ci : dict of str to (float, float)
        Bootstrap interval of each candidate's score minus the best one's
        (``ranking[0]``; paired over queries); an interval containing 0 is not
        resolved.
    per_query : ndarray of shape (n_queries, n_candidates)
        The criterion per held-out query (its sessions pooled; NaN for a query
        without evidence), columns in :attr:`candidates` order.  ``"snips"``:
        its self-normalised IPS DCG@k; ``"examined_pairs"``: its share of
        examined pairs ordered right.
    query_weight : ndarray of shape (n_queries,)
        Each query's held-out weight.  ``"snips"``: its click weight (sum of
        ``1 / propensity`` over its clicks); with ``normalize="all"`` :attr:`snips`
        is the ``query_weight``-weighted mean of :attr:`per_query` (one ratio over
        all held-out sessions), with ``"query"`` the plain mean over queries with
        clicks.  ``"examined_pairs"``: its number of examined pairs (the score is
        the weighted mean: one ratio over all held-out pairs).
    candidates : tuple of str
        Candidates in the order they were given.
    propensity : ndarray
        Estimated examination propensity per position (mean over folds).
    propensity_method : str
        ``"em"``, ``"pair t+"`` or ``"given"``.
    k : int
        Cut-off of the held-out DCG.
    confidence : float
        Level of the intervals.
    std_err : dict of str to float
        Bootstrap standard error of each :attr:`score`.
    criterion : str
        ``"snips"`` or ``"examined_pairs"``: what ranks the candidates.
    score : dict of str to float
        The criterion's held-out value per candidate.
    nested_ratio : float
        The log's click-rate ratio of a document with vs without a click below
        it in the same session (1 under a position-based model, above 1 when
        examination is nested); ``score="auto"`` compares it with 1.25.
    diff_se : dict of str to float
        Bootstrap standard error of each candidate's score minus the best one's.
    rule : str
        ``"one_se"`` or ``"best"``: how :attr:`chosen` was picked.
    """

    ranking: tuple[str, ...]
    chosen: str
    params: dict[str, Any]
    snips: dict[str, float]
    ci: dict[str, tuple[float, float]]
    diff_ci: dict[str, tuple[float, float]]
    per_query: np.ndarray
    query_weight: np.ndarray
    candidates: tuple[str, ...]
    propensity: np.ndarray
    propensity_method: str
    k: int
    confidence: float
    std_err: dict[str, float] = field(default_factory=dict)
    criterion: str = "snips"
    score: dict[str, float] = field(default_factory=dict)
    nested_ratio: float = float("nan")
    diff_se: dict[str, float] = field(default_factory=dict)
    rule: str = "best"

    def to_frame(self) -> pd.DataFrame:
        """Return one row per candidate, best first.

        Returns
        -------
        pandas.DataFrame
            Columns ``candidate``, ``score`` (the :attr:`criterion`'s value),
            ``std_err``, ``ci_low``, ``ci_high``, ``diff_to_best``, ``diff_se``,
            ``diff_ci_low``, ``diff_ci_high``, ``tables`` (:data:`TABLES`),
            ``snips``, ``chosen``.
        """
        import pandas as pd

        score = self.score or self.snips
        best = score[self.ranking[0]]
        return pd.DataFrame({
            "candidate": list(self.ranking),
            "score": [score[c] for c in self.ranking],
            "std_err": [self.std_err.get(c, np.nan) for c in self.ranking],
            "ci_low": [self.ci[c][0] for c in self.ranking],
            "ci_high": [self.ci[c][1] for c in self.ranking],
            "diff_to_best": [score[c] - best for c in self.ranking],
            "diff_se": [self.diff_se.get(c, np.nan) for c in self.ranking],
            "diff_ci_low": [self.diff_ci[c][0] for c in self.ranking],
            "diff_ci_high": [self.diff_ci[c][1] for c in self.ranking],
            "tables": [TABLES[c] for c in self.ranking],
            "snips": [self.snips[c] for c in self.ranking],
            "chosen": [c == self.chosen for c in self.ranking],
        })


# --------------------------------------------------------------------------- checks


def _check_candidates(estimator: Any, candidates: Any) -> list[str]:
    have = available_candidates(estimator)
    if candidates is None:
        return [name for name in DEFAULT_CANDIDATES if name in have]
    if isinstance(candidates, str) or not isinstance(candidates, Sequence):
        raise TypeError(
            f"candidates must be a list of candidate names, e.g. {have!r}; got {candidates!r}"
        )
    names = list(candidates)
    for name in names:
        if name not in CANDIDATES:
            raise ValueError(
                f"candidates: unknown candidate {name!r}; known: {sorted(CANDIDATES)!r}"
            )
        if name not in have:
            missing = sorted(set(CANDIDATES[name]) - set(estimator.get_params(deep=False)))
            raise ValueError(
                f"candidates: {name!r} needs the estimator parameter(s) {missing!r}, which "
                f"{type(estimator).__name__} does not have; choose from {have!r}"
            )
    if len(set(names)) != len(names) or len(names) < 1:
        raise ValueError(f"candidates must name at least one candidate, each once; got {names!r}")
    return names


# --------------------------------------------------------------------------- selection


def select_debiasing(
    estimator: Any,
    X: Any,
    y: Any,
    *,
    qid: Any,
    position: Any,
    doc: Any = None,
    groups: Any = None,
    sample_weight: Any = None,
    candidates: Sequence[str] | None = None,
    k: int = 10,
    n_splits: int = 2,
    propensity: str | Any = "estimate",
    clip: float | None = None,
    normalize: str = "query",
    score: str = "auto",
    rule: str = "one_se",
    n_bootstrap: int = 1000,
    confidence: float = 0.95,
    random_state: Any = 0,
) -> DebiasingSelection:
    r"""Train the candidate debiasing methods and rank them by held-out click nDCG.

    See the module docstring for the held-out score and the propensities.

    Parameters
    ----------
    estimator : LambdaMARTRanker
        The base estimator; each candidate is a clone with the candidate's
        parameters (:data:`CANDIDATES`) set on it.
    X : array-like or DataFrame of shape (n_rows, n_features)
        Features of the logged impressions (one row per impression).
    y : array-like of shape (n_rows,)
        Clicks, 0 or 1.
    qid : array-like of shape (n_rows,)
        List id per impression: one displayed list per query and session.
    position : array-like of shape (n_rows,)
        Logged display rank of each impression (1 = top), a permutation of
        ``1..n`` within each list.
    doc : array-like of shape (n_rows,), optional
        Document id per impression, equal across the sessions that show it.
        Default: rows with identical features are the same document.
    groups : array-like of shape (n_rows,), optional
        Query per impression, for holding out whole queries (all their
        sessions).  Default: lists that share a document are one query.
    sample_weight : array-like of shape (n_rows,), optional
        Passed to each candidate's ``fit``.
    candidates : list of str, optional
        Names from :data:`CANDIDATES`; default those of :data:`DEFAULT_CANDIDATES`
        the estimator supports (:func:`available_candidates`).
    k : int, default=10
        Cut-off of the held-out DCG.
    n_splits : int, default=2
        Folds of queries; each candidate is trained ``n_splits`` times (on
        ``1 - 1/n_splits`` of the queries).
    propensity : "estimate" or array-like of shape (n_positions,), default="estimate"
        Examination propensity per position (index 0 = position 1) for the
        held-out scores and the ``"propensity"`` candidate, or ``"estimate"``.
    clip : float in (0, 1], optional
        Minimum propensity of the held-out weights (see :func:`ltr.clicks.ips_dcg`).
    normalize : {"query", "all"}, default="query"
        ``"query"``: the mean over held-out queries of each query's
        self-normalised value (its sessions pooled; every query in ``[0, 1]``,
        robust to a few heavily weighted clicks); ``"all"``: one ratio over all
        held-out sessions (less biased, more variable).  Measured on simulated
        logs (4 PBM and 3 cascade seeds, see the module docstring): "query"
        picked better under PBM clicks, "all" under cascade clicks.
    score : {"auto", "snips", "examined_pairs"}, default="auto"
        The held-out criterion that ranks the candidates: the self-normalised
        IPS DCG@k (``"snips"``), or the share of (clicked, skipped) pairs above
        each held-out session's deepest click that a candidate orders right
        (``"examined_pairs"``, pooled over all held-out pairs; unbiased when
        examination is nested, as under cascade clicks, and needing no
        propensities).  ``"auto"``: ``"examined_pairs"`` when the log's
        :func:`~ltr.estimator._heldout.nested_examination_ratio` is at least
        1.25, else ``"snips"``.  Measured on the study's logs
        (experiments/results/position_bias.md): under cascade clicks the IPS
        DCG barely separates the candidates (a document of grade 0 is clicked
        with probability 0.4 when read, and deep clicks carry weights of
        20 and more), while the pair share tracks their true nDCG@3.
    rule : {"one_se", "best"}, default="one_se"
        How the candidate is chosen from the held-out scores.  ``"best"``: the
        highest score.  ``"one_se"``: the one-standard-error rule of model
        selection (Breiman et al. 1984; Hastie et al., *Elements of Statistical
        Learning*, 7.10): among the candidates whose score is at least the
        best's minus one bootstrap standard error of their paired difference,
        the one with the fewest per-position tables (:data:`TABLES`; ties by
        score).  A richer method is taken only when the held-out clicks resolve
        its gain.  Measured on the study's cascade logs
        (experiments/results/position_bias.md): on the LETOR set (201 training
        queries) the pair share could not separate the position term from the
        position term plus pair debiasing in 4 of 5 seeds, and in 3 of them
        ``"best"`` took the richer one; on 1,000 synthetic queries the gain was
        resolved in every seed and both rules agree.
    n_bootstrap : int, default=1000
        Bootstrap resamples of held-out queries.
    confidence : float in (0, 1), default=0.95
        Level of the intervals.
    random_state : int, default=0
        Seed of the folds and the bootstrap.

    Returns
    -------
    DebiasingSelection

    Raises
    ------
    ValueError
        An unknown or unsupported candidate, bad clicks, positions or splits.
    """
    from sklearn.base import clone

    from ltr.metrics import dcg

    names = _check_candidates(estimator, candidates)
    if qid is None:
        raise TypeError("qid is required: a list id per impression (one per query and session)")
    if position is None:
        raise TypeError(
            "position is required: the logged display rank of each impression (1 = top); "
            "selecting a debiasing method needs the logged ranking"
        )
    if normalize not in ("query", "all"):
        raise ValueError(f"normalize must be 'query' or 'all', got {normalize!r}")
    norm = normalize
    if rule not in ("one_se", "best"):
        raise ValueError(f"rule must be 'one_se' or 'best', got {rule!r}")
    if score not in ("auto", "snips", "examined_pairs"):
        raise ValueError(
            f"score must be 'auto', 'snips' or 'examined_pairs', got {score!r}"
        )
    kk = check_int(k, "k", minimum=1)
    folds = check_int(n_splits, "n_splits", minimum=2)
    n_boot = check_int(n_bootstrap, "n_bootstrap", minimum=1)
    level = check_real(confidence, "confidence", minimum=0.0, exclusive_minimum=True,
                       maximum=1.0)
    if level >= 1.0:
        raise ValueError(f"confidence must be in (0, 1), got {confidence!r}")
    seed = check_seed(random_state)
    seed = 0 if seed is None else seed
    n = X.shape[0] if hasattr(X, "shape") else len(X)
    click = check_clicks(np.asarray(y, dtype=np.float64), "y", n)
    lists = resolve_groups(n, qid=np.asarray(qid), sort=True)
    order = lists.order
    offsets = lists.offsets
    click = np.ascontiguousarray(take_rows(click, order))
    pos_in = np.asarray(position)
    if pos_in.shape != (n,):
        raise ValueError(f"position must have one entry per row ({n}), got shape {pos_in.shape}")
    pos = check_positions(take_rows(pos_in, order), "position", offsets)
    Xs = take_rows(X, order) if order is not None else X
    if doc is None:
        doc_s = _row_ids(Xs)
    else:
        doc_arr = np.asarray(doc)
        if doc_arr.shape != (n,):
            raise ValueError(f"doc must have one entry per row ({n}), got shape {doc_arr.shape}")
        doc_s = np.unique(take_rows(doc_arr, order), return_inverse=True)[1].ravel()
    weight = None if sample_weight is None else take_rows(
        check_weights(sample_weight, "sample_weight", n), order)
    n_lists = offsets.size - 1
    list_of_row = np.repeat(np.arange(n_lists), np.diff(offsets))
    if groups is None:
        query_of_list = _query_of_lists(list_of_row, doc_s, n_lists)
    else:
        g = np.asarray(groups)
        if g.shape != (n,):
            raise ValueError(f"groups must have one entry per row ({n}), got shape {g.shape}")
        g = take_rows(g, order)
        first = g[offsets[:-1]]
        if (g != np.repeat(first, np.diff(offsets))).any():
            raise ValueError("groups must be the same for every impression of a list (qid)")
        query_of_list = np.unique(first, return_inverse=True)[1].ravel()
    n_queries = int(query_of_list.max()) + 1
    if n_queries < folds:
        raise ValueError(
            f"n_splits={folds} folds need at least {folds} queries, got {n_queries}; lower "
            "n_splits or log more queries"
        )
    given, row_prop = _given_propensity(propensity, n, order, pos, click)
    nested = nested_examination_ratio(click, pos, doc_s, list_of_row)
    criterion = score if score != "auto" else (
        "examined_pairs" if nested >= NESTED_RATIO else "snips")
    fixed_method = "given"
    if given is None and _em(click, pos, doc_s, offsets, n_iter=1) is None:
        # a deterministic logger: cell EM cannot separate examination from relevance, the
        # cascade EM can (rows above a session's last click were read)
        cascade = _cascade(click, pos, doc_s, offsets)
        if cascade is not None:
            row_prop = np.maximum(cascade, CASCADE_FLOOR)
            given, fixed_method = _row_table(row_prop, pos), "cascade"
    fold_of_query = np.random.default_rng(seed).permutation(n_queries) % folds
    fold_of_row = fold_of_query[query_of_list[list_of_row]]
    depth = int(pos.max())
    base = clone(estimator)
    bias_norm = float(base.get_params().get("bias_norm", 1.0))
    snips_query = np.full((n_queries, len(names)), np.nan)
    weight_of_query = np.zeros(n_queries)
    right = np.zeros((n_queries, len(names)))
    pairs = np.zeros(n_queries)
    props: list[np.ndarray] = []
    methods: set[str] = set()

    def subset(rows: np.ndarray) -> tuple[Any, np.ndarray, np.ndarray, np.ndarray, Any, Any]:
        return (take_rows(Xs, rows), click[rows], pos[rows], list_of_row[rows],
                None if weight is None else weight[rows],
                None if row_prop is None else row_prop[rows])

    def fit(values: Mapping[str, Any], data: tuple, prop: np.ndarray | None) -> Any:
        Xf, cf, pf, qf, wf, rf = data
        params = {key: (prop if val is ESTIMATED else val) for key, val in values.items()}
        kwargs: dict[str, Any] = {"qid": qf}
        if rf is not None and ESTIMATED in values.values() and _fit_takes_propensity(base):
            # per-impression propensities (e.g. a cascade estimate) as the fit parameter
            params = {key: (None if val is ESTIMATED else val) for key, val in values.items()}
            kwargs["propensity"] = rf
        model = clone(base).set_params(**params)
        if wf is not None:
            kwargs["sample_weight"] = wf
        if uses_position(params):
            kwargs["position"] = pf
        return model.fit(Xf, cf, **kwargs)

    for f in range(folds):
        train_rows = np.flatnonzero(fold_of_row != f)
        test_rows = np.flatnonzero(fold_of_row == f)
        data = subset(train_rows)
        models: dict[str, Any] = {}
        if given is not None:
            prop, method = given, fixed_method
        else:
            em = _em(data[1], data[2], doc_s[train_rows], _list_offsets(data[3]))
            if em is not None:
                prop, method = em, "em"
            else:
                models["pair"] = fit(CANDIDATES["pair"], data, None)
                prop, method = _pair_propensity(models["pair"], bias_norm), "pair t+"
            prop = _fill(prop, np.bincount(data[2] - 1, weights=data[1], minlength=depth)[:depth])
        props.append(prop)
        methods.add(method)
        # held-out click weights 1/theta: per impression when given so, else per position
        theta = row_prop[test_rows] if row_prop is not None else prop[pos[test_rows] - 1]
        theta = np.maximum(theta, 0.0 if clip is None else clip)
        w = np.zeros(test_rows.size)
        hit = click[test_rows] > 0
        w[hit] = 1.0 / theta[hit]
        test_query = query_of_list[list_of_row[test_rows]]
        # the query's click weight, summed over its held-out sessions (the self-normaliser)
        den = np.bincount(test_query, weights=w, minlength=n_queries)
        test_offsets = _list_offsets(list_of_row[test_rows])
        list_query = test_query[test_offsets[:-1]]
        test_pos, test_click = pos[test_rows], click[test_rows]
        for j, name in enumerate(names):
            model = models[name] if name in models else fit(CANDIDATES[name], data, prop)
            scores = model.predict(take_rows(Xs, test_rows))
            # IPS DCG@k per list: the DCG of the new order with the click weights as gains
            ips = dcg(w, scores, offsets=test_offsets, k=kk, gain="linear", ties="average",
                      reduce=None)
            num = np.bincount(list_query, weights=ips, minlength=n_queries)
            snips_query[den > 0, j] = num[den > 0] / den[den > 0]
            got, n_pairs = examined_pairs(scores, test_click, test_pos, test_offsets,
                                          list_query, n_queries)
            right[:, j] += got
        pairs += n_pairs
        weight_of_query += den
    keep = weight_of_query > 0
    if not keep.any():
        raise ValueError("y: no held-out query has a click; selection needs clicks")
    pooled = norm == "all"
    totals = snips_query[keep] * (weight_of_query[keep, None] if pooled else 1.0)
    wq = weight_of_query[keep] if pooled else np.ones(int(keep.sum()))
    snips = totals.sum(axis=0) / wq.sum()
    if criterion == "examined_pairs":
        keep = pairs > 0
        if not keep.any():
            raise ValueError(
                "score='examined_pairs': no held-out session has a skipped document above a "
                "click; use score='snips'"
            )
        totals, wq = right[keep], pairs[keep]
        per_query = np.full((n_queries, len(names)), np.nan)
        per_query[keep] = right[keep] / pairs[keep, None]
        query_weight = pairs
        means = totals.sum(axis=0) / wq.sum()
    else:
        per_query, query_weight, means = snips_query, weight_of_query, snips
    best = int(np.argmax(means))
    ci, dci, se, dse = _bootstrap(totals, wq, best, n_boot, level, seed)
    order = np.argsort(-means, kind="stable")
    rank = [names[i] for i in order]
    prop_all = np.mean(props, axis=0)
    chosen = names[best]
    if rule == "one_se":  # fewest tables within one SE of the best; ties: min keeps the first
        chosen = min((names[i] for i in order if means[i] >= means[best] - dse[i]),
                     key=TABLES.__getitem__)
    params = {key: (prop_all.copy() if val is ESTIMATED else val)
              for key, val in CANDIDATES[chosen].items()}
    return DebiasingSelection(
        ranking=tuple(rank), chosen=chosen, params=params,
        snips={c: float(snips[i]) for i, c in enumerate(names)},
        ci={c: (float(ci[i, 0]), float(ci[i, 1])) for i, c in enumerate(names)},
        diff_ci={c: (float(dci[i, 0]), float(dci[i, 1])) for i, c in enumerate(names)},
        per_query=per_query, query_weight=query_weight, candidates=tuple(names),
        propensity=prop_all,
        propensity_method="+".join(sorted(methods)), k=kk, confidence=level,
        std_err={c: float(se[i]) for i, c in enumerate(names)},
        criterion=criterion, score={c: float(means[i]) for i, c in enumerate(names)},
        nested_ratio=nested,
        diff_se={c: float(dse[i]) for i, c in enumerate(names)},
        rule=rule,
    )

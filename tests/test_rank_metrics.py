"""ltr.metrics: flat precision/recall/AP/RR/ERR/hit rate, and their scorers."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from sklearn.base import BaseEstimator

from ltr.evaluation import evaluate
from ltr.metrics import _rank as R
from ltr.scoring import RankScorer, get_scorer, get_scorer_names, make_rank_scorer

FUNCS = {
    "precision": R.precision,
    "recall": R.recall,
    "map": R.average_precision,
    "mrr": R.reciprocal_rank,
    "err": R.err,
    "hit_rate": R.hit_rate,
}


def naive(name, labels, scores, k, level=1.0, gmax=None, doc_ids=None):
    """One query, ordered by score desc then (doc id desc | input order)."""
    n = len(labels)
    if doc_ids is None:
        order = sorted(range(n), key=lambda i: (-scores[i], i))
    else:
        order = sorted(range(n), key=lambda i: doc_ids[i], reverse=True)
        order = sorted(order, key=lambda i: -scores[i])
    rel = [labels[i] for i in order]
    m = n if k is None else min(k, n)
    n_rel = sum(r >= level for r in labels)
    hits = [r >= level for r in rel[:m]]
    if name == "precision":
        return sum(hits) / (k if k is not None else n)
    if name == "recall":
        return sum(hits) / n_rel if n_rel else 0.0
    if name == "map":
        total, seen = 0.0, 0
        for i, h in enumerate(hits):
            if h:
                seen += 1
                total += seen / (i + 1)
        return total / n_rel if n_rel else 0.0
    if name == "mrr":
        return next((1 / (i + 1) for i, h in enumerate(hits) if h), 0.0)
    if name == "hit_rate":
        return float(any(hits))
    gmax = max(labels) if gmax is None else gmax
    value, stop = 0.0, 1.0
    for i, g in enumerate(rel[:m]):
        r = (2 ** max(g, 0) - 1) / 2 ** max(gmax, 0)
        value += stop * r / (i + 1)
        stop *= 1 - r
    return value


def _queries(seed, n_queries=25):
    rng = np.random.default_rng(seed)
    sizes = rng.integers(1, 30, n_queries)
    y = rng.integers(0, 4, sizes.sum()).astype(float)
    s = rng.integers(0, 5, sizes.sum()).astype(float)  # many ties
    return y, s, sizes


@pytest.mark.parametrize("name", list(FUNCS))
@pytest.mark.parametrize("k", [1, 5, None])
def test_rank_metrics_equal_a_naive_loop_with_ties_stable(name, k):
    y, s, sizes = _queries(0)
    got = FUNCS[name](y, s, group=sizes, k=k, empty=0.0, reduce=None)
    offsets = np.r_[0, np.cumsum(sizes)]
    gmax = y.max()
    for q in range(len(sizes)):
        a, b = offsets[q], offsets[q + 1]
        expected = naive(name, list(y[a:b]), list(s[a:b]), k, gmax=gmax)
        if y[a:b].max() < 1 or (name == "err" and y[a:b].max() <= 0):
            expected = 0.0
        assert got[q] == pytest.approx(expected, abs=1e-12), (q, name)


@pytest.mark.parametrize("name", ["precision", "recall", "map", "mrr"])
def test_trec_eval_convention_equals_pytrec_eval(name):
    pytrec_eval = pytest.importorskip("pytrec_eval")
    y, s, sizes = _queries(1)
    qid = np.repeat([f"q{i}" for i in range(len(sizes))], sizes)
    docs = np.array([f"d{i}" for i in range(len(y))])
    measure = {"precision": "P_5", "recall": "recall_5", "map": "map_cut_5",
               "mrr": "recip_rank"}[name]
    k = None if name == "mrr" else 5
    got = FUNCS[name](y, s, qid=qid, k=k, convention="trec_eval", doc_ids=docs, reduce=None)
    qrels, run = {}, {}
    for q, d, lab, sc in zip(qid, docs, y, s):
        qrels.setdefault(q, {})[d] = int(lab)
        run.setdefault(q, {})[d] = float(sc)
    peer = pytrec_eval.RelevanceEvaluator(qrels, {measure}).evaluate(run)
    for i, q in enumerate(dict.fromkeys(qid)):
        assert got[i] == pytest.approx(peer[q][measure], abs=1e-12)


@settings(max_examples=30, deadline=None)
@given(
    labels=st.lists(st.integers(0, 3), min_size=1, max_size=40),
    data=st.data(),
    k=st.one_of(st.none(), st.integers(1, 12)),
    level=st.sampled_from([1, 2]),
)
def test_rows_you_hold_agree_with_qrels_run_evaluation(labels, data, k, level):
    n = len(labels)
    scores = data.draw(st.lists(st.integers(0, 4), min_size=n, max_size=n))
    docs = [f"d{i}" for i in range(n)]
    qrels = {"q": dict(zip(docs, labels))}
    run = {"q": dict(zip(docs, map(float, scores)))}
    suffix = "" if k is None else f"@{k}"
    frame = evaluate(qrels, run, [f"{m}{suffix}" for m in FUNCS], relevance_level=level)
    for m, fn in FUNCS.items():
        value = fn(labels, scores, group=[n], k=k, relevance_level=level, empty=0.0,
                   convention="trec_eval", doc_ids=docs)
        if m == "err" and max(labels) == 0:
            continue
        assert float(value) == pytest.approx(frame.mean[f"{m}{suffix}"], abs=1e-12), m


def test_empty_queries_weights_and_k_lists():
    y = [0, 0, 1, 0, 2]
    s = [1, 2, 3, 2, 1]
    skip = R.recall(y, s, group=[2, 3], k=2)
    assert skip == 0.5 and skip.n_queries == 1 and skip.n_skipped == 1
    assert R.recall(y, s, group=[2, 3], k=2, convention="lightgbm") == 0.75
    assert math.isnan(R.recall(y, s, group=[2, 3], k=2, reduce=None)[0])
    weighted = R.precision(y, s, group=[2, 3], k=1, empty=0.0, weights=[1.0, 3.0])
    assert weighted == pytest.approx(0.75)
    assert R.hit_rate(y, s, group=[2, 3], k=[1, 3], empty=0.0) == {1: 0.5, 3: 0.5}
    assert R.err([2, 1], [1.0, 2.0], group=[2], k=None, max_grade=4) == pytest.approx(
        1 / 16 + (15 / 16) * (3 / 16) / 2
    )


def test_ties_options():
    y, s = [0, 1, 0], [1.0, 1.0, 1.0]
    assert R.reciprocal_rank(y, s, group=[3], ties="pessimistic") == pytest.approx(1 / 3)
    assert R.reciprocal_rank(y, s, group=[3], ties="optimistic") == 1.0
    assert R.reciprocal_rank(y, s, group=[3]) == 0.5  # stable: input order
    assert R.reciprocal_rank(y, s, group=[3], ties="doc_id_desc", doc_ids=["c", "b", "a"]) == 0.5


@pytest.mark.parametrize(
    "kwargs, exc, match",
    [
        ({"convention": "sklearn"}, ValueError, "no tie-averaged definition"),
        ({"ties": "average"}, ValueError, "no tie-averaged definition"),
        ({"k": 0}, ValueError, "k must be >= 1"),
        ({"relevance_level": "1"}, TypeError, "relevance_level must be a real number"),
        ({"ties": "doc_id_desc"}, ValueError, "pass doc_ids"),
    ],
)
def test_rank_metrics_reject_bad_arguments_with_informative_errors(kwargs, exc, match):
    with pytest.raises(exc, match=match):
        R.precision([1, 0], [1.0, 0.5], group=[2], **kwargs)


def test_rank_metrics_reject_bad_rows():
    with pytest.raises(ValueError, match="y_true must be finite"):
        R.recall([1, np.nan], [1.0, 0.5], group=[2])
    with pytest.raises(ValueError, match="y_score has 1 rows but y_true has 2"):
        R.recall([1, 0], [1.0], group=[2])


# --------------------------------------------------------------------------- #
# scorers                                                                      #
# --------------------------------------------------------------------------- #


class _Echo(BaseEstimator):
    """An estimator whose prediction is the first feature."""

    def fit(self, X, y, **kwargs):
        return self

    def predict(self, X):
        return np.asarray(X)[:, 0]


@pytest.mark.parametrize("name", ["map@10", "mrr@10", "precision@5", "recall@10", "err@10",
                                  "hit_rate@10"])
def test_scorers_by_name_equal_the_metric(name):
    assert name in get_scorer_names("all") and name not in get_scorer_names()
    y, s, sizes = _queries(2)
    qid = np.repeat(np.arange(len(sizes)), sizes)
    scorer = get_scorer(name)
    assert isinstance(scorer, RankScorer)
    metric, k = name.split("@")
    expected = FUNCS[metric](y, s, qid=qid, k=int(k))
    assert scorer(_Echo(), s[:, None], y, qid=qid) == pytest.approx(float(expected))
    assert repr(scorer) == f"make_rank_scorer({metric!r}, k={k})"


def test_rank_scorer_in_grid_search_with_group_kfold():
    import sklearn
    from sklearn.model_selection import GridSearchCV, GroupKFold

    y, s, sizes = _queries(3, n_queries=12)
    s = y + np.random.default_rng(0).normal(scale=0.5, size=y.size)  # informative scores
    qid = np.repeat(np.arange(len(sizes)), sizes)

    class Ranker(_Echo):
        def __init__(self, sign=1.0):
            self.sign = sign

        def predict(self, X):
            return self.sign * np.asarray(X)[:, 0]

    with sklearn.config_context(enable_metadata_routing=True):
        search = GridSearchCV(Ranker(), {"sign": [-1.0, 1.0]}, scoring=get_scorer("map@10"),
                              cv=GroupKFold(3))
        search.fit(s[:, None], y, groups=qid, qid=qid)
    assert search.best_params_ == {"sign": 1.0}


def test_make_rank_scorer_rejects_bad_options():
    with pytest.raises(ValueError, match="unknown metric 'auc'"):
        make_rank_scorer("auc")
    with pytest.raises(TypeError, match="unknown option"):
        make_rank_scorer("map", gain="exp2")
    with pytest.raises(TypeError, match="max_grade is an option of the err scorer only"):
        make_rank_scorer("map", max_grade=3)
    with pytest.raises(ValueError, match="no tie-averaged definition"):
        get_scorer("map@10:sklearn")

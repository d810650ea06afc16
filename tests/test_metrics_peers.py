"""Every convention reproduced by running the peer itself (to 1e-12).

Scores come from a few LightGBM rounds on LightGBM's lambdarank example (the
full shared set when present, else the committed slice): early trees put most
documents in few leaves, so scores tie heavily, which exercises the tie
conventions.  Synthetic cases (which never need the real data) add empty
queries, one-document queries, k beyond the query length and weights.
"""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from ltr.metrics import ndcg

lgb = pytest.importorskip("lightgbm")

TOL = 1e-12


def _load(path):
    from ltr.datasets import load_letor

    data = load_letor(path)
    return data.X, data.y, np.diff(data.offsets)


@pytest.fixture(scope="module")
def real(letor_set):
    """Train/test arrays plus tied scores of a 3-round LightGBM model."""
    Xtr, ytr, gtr = _load(letor_set.path / "rank.train")
    Xte, yte, gte = _load(letor_set.path / "rank.test")
    dtr = lgb.Dataset(Xtr, ytr, group=gtr)
    dte = lgb.Dataset(Xte, yte, group=gte, reference=dtr)
    evals: dict = {}
    params = {"objective": "lambdarank", "metric": "ndcg", "eval_at": [1, 3, 5, 10, 30],
              "num_leaves": 7, "min_data_in_leaf": 30, "verbosity": -1, "num_threads": 1,
              "deterministic": True}
    bst = lgb.train(params, dtr, num_boost_round=3, valid_sets=[dtr, dte],
                    valid_names=["train", "test"], callbacks=[lgb.record_evaluation(evals)])
    return {
        "train": (ytr, bst.predict(Xtr, raw_score=True), gtr),
        "test": (yte, bst.predict(Xte, raw_score=True), gte),
        "evals": evals,
        "X": (Xtr, Xte),
    }


def _synthetic(seed=0, n_queries=80):
    """Ragged queries with ties, two empty queries and one-document queries."""
    rng = np.random.default_rng(seed)
    sizes = rng.integers(1, 40, size=n_queries)
    sizes[[2, 9]] = 1
    offs = np.r_[0, np.cumsum(sizes)]
    y = rng.integers(0, 5, size=offs[-1]).astype(float)
    for q in (4, 11):
        y[offs[q]:offs[q + 1]] = 0.0
    s = np.round(rng.normal(size=offs[-1]), 1)
    return y, s, sizes


def test_real_scores_are_heavily_tied(real):
    # What the tie conventions see: documents sharing their score with another
    # document of the same query.  About 54 % of the rows on the slice, 58 % on the
    # full set (where only 4 % of all scores are distinct).
    _y, s, g = real["train"]
    offsets = np.r_[0, np.cumsum(g)]
    tied = 0
    for a, b in itertools.pairwise(offsets):
        _, counts = np.unique(s[a:b], return_counts=True)
        tied += counts[counts > 1].sum()
    assert tied > 0.4 * len(s)


# --------------------------------------------------------------------- LightGBM


@pytest.mark.parametrize("split", ["train", "test"])
@pytest.mark.parametrize("k", [1, 3, 5, 10, 30])
def test_lightgbm_convention_reproduces_lightgbm_ndcg_on_real_data(real, split, k):
    y, s, g = real[split]
    expected = real["evals"][split][f"ndcg@{k}"][-1]
    assert ndcg(y, s, group=g, k=k, convention="lightgbm") == pytest.approx(expected, abs=TOL)


def _lightgbm_eval(X, y, sizes, *, weight=None, label_gain=None, eval_at=(1, 5, 10, 50)):
    params = {"objective": "lambdarank", "metric": "ndcg", "eval_at": list(eval_at),
              "num_leaves": 4, "min_data_in_leaf": 5, "verbosity": -1, "num_threads": 1}
    if label_gain is not None:
        params["label_gain"] = list(label_gain)
    ds = lgb.Dataset(X, y, group=sizes, weight=weight)
    evals: dict = {}
    bst = lgb.train(params, ds, num_boost_round=2, valid_sets=[ds], valid_names=["d"],
                    callbacks=[lgb.record_evaluation(evals)])
    return bst.predict(X, raw_score=True), {k: evals["d"][f"ndcg@{k}"][-1] for k in eval_at}


def test_lightgbm_convention_handles_empty_single_and_short_queries_with_weights():
    y, _, sizes = _synthetic(1)
    rng = np.random.default_rng(1)
    X = rng.integers(0, 3, size=(len(y), 3)).astype(float)  # few distinct scores: ties
    # Query weights exactly representable in float32 (LightGBM stores weights as float32).
    qw = rng.integers(1, 8, size=len(sizes)) / 4.0
    for weight, w in ((None, None), (np.repeat(qw, sizes), qw)):
        scores, expected = _lightgbm_eval(X, y, sizes, weight=weight)
        for k, value in expected.items():
            got = ndcg(y, scores, group=sizes, k=k, convention="lightgbm", weights=w)
            assert got == pytest.approx(value, abs=TOL), (k, w is not None)


def test_lightgbm_convention_with_a_custom_label_gain_table():
    y, _, sizes = _synthetic(2)
    rng = np.random.default_rng(2)
    X = rng.normal(size=(len(y), 4))
    table = [0.0, 1.0, 2.5, 4.0, 10.0]
    scores, expected = _lightgbm_eval(X, y, sizes, label_gain=table)
    for k, value in expected.items():
        assert ndcg(y, scores, group=sizes, k=k, convention="lightgbm", gain=table) == pytest.approx(
            value, abs=TOL
        )


# ---------------------------------------------------------------------- XGBoost


def _xgb_eval(y, scores, sizes, metrics, weights=None):
    xgb = pytest.importorskip("xgboost")
    d = xgb.DMatrix(np.zeros((len(y), 1)), y, group=sizes, base_margin=scores)
    if weights is not None:
        d.set_weight(weights)
    bst = xgb.train({"objective": "rank:ndcg", "eval_metric": list(metrics)}, d, num_boost_round=0)
    out = bst.eval(d, name="d")
    return {kv.split(":")[0][2:]: float(kv.split(":")[1]) for kv in out.split("\t")[1:]}


def _xgb_name_to_kwargs(name):
    minus = name.endswith("-")
    base = name.rstrip("-")
    # XGBoost's bare "ndcg" is not the whole list: it truncates at 32 documents.
    k = int(base.split("@")[1]) if "@" in base else 32
    return {"k": k, "empty": 0.0 if minus else None}


METRICS = ["ndcg@1", "ndcg@5", "ndcg@10", "ndcg@50", "ndcg@5-", "ndcg@10-", "ndcg"]


def test_xgboost_convention_reproduces_ndcg_and_ndcg_minus_on_real_scores(real):
    y, s, g = real["test"]
    expected = _xgb_eval(y, s, g, METRICS)
    for name, value in expected.items():
        got = ndcg(y, s, group=g, convention="xgboost", **_xgb_name_to_kwargs(name))
        assert got == pytest.approx(value, abs=TOL), name


@pytest.mark.parametrize("weighted", [False, True])
def test_xgboost_convention_with_float32_ties_empty_queries_and_weights(weighted):
    y, s, sizes = _synthetic(3)
    rng = np.random.default_rng(3)
    s = s + 1e-9 * rng.normal(size=len(s))  # distinct in float64, tied in float32
    # Weights exactly representable in float32 (XGBoost stores them as float32).
    qw = rng.integers(1, 8, size=len(sizes)) / 4.0 if weighted else None
    expected = _xgb_eval(y, s, sizes, METRICS, weights=qw)
    for name, value in expected.items():
        got = ndcg(y, s, group=sizes, convention="xgboost", weights=qw, **_xgb_name_to_kwargs(name))
        assert got == pytest.approx(value, abs=TOL), name


# ----------------------------------------------------------------- scikit-learn


def _padded(y, s, sizes):
    width = max(2, int(max(sizes)))
    offs = np.r_[0, np.cumsum(sizes)]
    Y = np.zeros((len(sizes), width))
    S = np.full((len(sizes), width), -1e12)  # padding ranks last with gain 0
    for q in range(len(sizes)):
        Y[q, : sizes[q]] = y[offs[q]:offs[q + 1]]
        S[q, : sizes[q]] = s[offs[q]:offs[q + 1]]
    return Y, S


@pytest.mark.parametrize("source", ["real", "synthetic"])
@pytest.mark.parametrize("k", [1, 3, 10, 100, None])
def test_sklearn_convention_reproduces_ndcg_score_padded(request, source, k):
    from sklearn.metrics import ndcg_score

    y, s, g = request.getfixturevalue("real")["train"] if source == "real" else _synthetic(4)
    Y, S = _padded(y, s, g)
    assert ndcg(y, s, group=g, k=k, convention="sklearn") == pytest.approx(
        ndcg_score(Y, S, k=k), abs=TOL
    )


def test_sklearn_convention_weighted_mean_matches_sample_weight():
    from sklearn.metrics import ndcg_score

    y, s, g = _synthetic(5)
    w = np.random.default_rng(5).uniform(0.1, 3, size=len(g))
    Y, S = _padded(y, s, g)
    assert ndcg(y, s, group=g, k=5, convention="sklearn", weights=w) == pytest.approx(
        ndcg_score(Y, S, k=5, sample_weight=w), abs=TOL
    )


# --------------------------------------------------------------------- trec_eval


def _trec_inputs(y, s, sizes, seed):
    rng = np.random.default_rng(seed)
    offs = np.r_[0, np.cumsum(sizes)]
    # ids of one width, as in test_evaluation (ranx compiles its sort once per id width)
    docs = np.array([f"doc{v:05d}" for v in rng.permutation(10 * len(y))[: len(y)]])
    qids = [f"q{q:05d}" for q in range(len(sizes))]
    qrels = {qids[q]: {docs[i]: int(y[i]) for i in range(offs[q], offs[q + 1])} for q in range(len(sizes))}
    run = {qids[q]: {docs[i]: float(s[i]) for i in range(offs[q], offs[q + 1])} for q in range(len(sizes))}
    return docs, qids, qrels, run


@pytest.mark.parametrize("source", ["real", "synthetic"])
def test_trec_eval_convention_reproduces_pytrec_eval_ndcg_cut(request, source):
    pytrec_eval = pytest.importorskip("pytrec_eval")
    y, s, g = request.getfixturevalue("real")["train"] if source == "real" else _synthetic(6)
    docs, qids, qrels, run = _trec_inputs(y, s, g, 6)
    res = pytrec_eval.RelevanceEvaluator(qrels, {"ndcg_cut.1,3,5,10,100", "ndcg"}).evaluate(run)
    assert len(res) == len(g)
    for k in (1, 3, 5, 10, 100):
        expected = np.array([res[q][f"ndcg_cut_{k}"] for q in qids])
        got = ndcg(y, s, group=g, k=k, convention="trec_eval", doc_ids=docs, reduce=None)
        np.testing.assert_allclose(got, expected, rtol=0, atol=TOL)
    expected = np.array([res[q]["ndcg"] for q in qids])
    np.testing.assert_allclose(ndcg(y, s, group=g, k=None, convention="trec_eval", doc_ids=docs,
                                    reduce=None), expected, rtol=0, atol=TOL)


# -------------------------------------------------------------------------- ranx


def _ranx_eval(y, s, g, metric):
    ranx = pytest.importorskip("ranx")
    _docs, _qids, qrels, run = _trec_inputs(y, s, g, 7)
    out = ranx.evaluate(ranx.Qrels(qrels), ranx.Run(run), metric, return_mean=False)
    return np.asarray(out)  # in query-id order, which is row order here


@pytest.mark.filterwarnings("ignore::numba.core.errors.NumbaTypeSafetyWarning")
@pytest.mark.parametrize("k", [1, 5, 10])
def test_ranx_convention_reproduces_ndcg_and_ndcg_burges(real, k):
    # ranx orders tied scores with an unstable quicksort beyond 16 documents, so
    # the real scores get a tiny tie-breaking jitter; short tied queries follow.
    y, s, g = real["train"]
    s = s + np.random.default_rng(8).uniform(0, 1e-6, size=len(s))
    np.testing.assert_allclose(ndcg(y, s, group=g, k=k, convention="ranx", reduce=None),
                               _ranx_eval(y, s, g, f"ndcg@{k}"), rtol=0, atol=TOL)
    np.testing.assert_allclose(ndcg(y, s, group=g, k=k, convention="ranx", gain="exp2", reduce=None),
                               _ranx_eval(y, s, g, f"ndcg_burges@{k}"), rtol=0, atol=TOL)


@pytest.mark.filterwarnings("ignore::numba.core.errors.NumbaTypeSafetyWarning")
def test_ranx_convention_on_short_tied_queries_with_empty_and_fractional_labels():
    rng = np.random.default_rng(9)
    sizes = rng.integers(1, 16, size=60)
    n = int(sizes.sum())
    y = rng.integers(0, 4, size=n).astype(float)
    offs = np.r_[0, np.cumsum(sizes)]
    y[offs[3]:offs[4]] = 0
    s = rng.integers(0, 4, size=n).astype(float)
    for k in (1, 3, 10):
        np.testing.assert_allclose(ndcg(y, s, group=sizes, k=k, convention="ranx", reduce=None),
                                   _ranx_eval(y, s, sizes, f"ndcg@{k}"), rtol=0, atol=TOL)

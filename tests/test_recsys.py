"""ltr.evaluation.recsys.evaluate: a dense score matrix against held-out interactions."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest
import scipy.sparse as sp

import ltr
from ltr.evaluation import EvaluationResult
from ltr.evaluation.recsys import evaluate

METRICS = ["ndcg@10", "dcg@10", "map@10", "mrr@10", "precision@10", "recall@20", "hit_rate@10",
           "err@10", "ndcg@3", "map", "r-precision", "ndcg"]


def _data(seed: int = 0, n_users: int = 70, n_items: int = 40, levels: int = 5):
    rng = np.random.default_rng(seed)
    scores = np.round(rng.random((n_users, n_items)) * levels) / levels  # many ties
    grades = rng.integers(0, 4, (n_users, n_items)).astype(float)
    grades[rng.random((n_users, n_items)) > 0.2] = 0.0
    judged = grades > 0
    judged[:, :3] |= rng.random((n_users, 3)) < 0.3  # explicit zeros: judged non-relevant
    ex_mask = (rng.random((n_users, n_items)) < 0.2) & (grades == 0)
    if n_users > 5:
        judged[2] = False  # no judgment at all
        grades[1] = 0.0  # judged, none relevant
        lo = np.argsort(scores[5], kind="stable")[:3]  # relevant, all below the top 10
        grades[5] = 0.0
        judged[5] = False
        grades[5, lo] = 2.0
        judged[5, lo] = True
        ex_mask[5] = False
        scores[5, lo] = -1.0
    users, items = np.nonzero(judged)
    rel = sp.csr_matrix((grades[users, items], (users, items)), shape=grades.shape)
    exclude = sp.csr_matrix(ex_mask.astype(np.float64))
    return scores, rel, exclude


def _frames(scores, rel, exclude):
    n_items = scores.shape[1]
    ids = np.array([f"{n_items - 1 - j:05d}" for j in range(n_items)])  # descending id = index up
    coo = rel.tocoo()
    qrels = pd.DataFrame({"qid": coo.row, "doc_id": ids[coo.col], "relevance": coo.data})
    users, items = np.nonzero(~exclude.toarray().astype(bool))
    run = pd.DataFrame({"qid": users, "doc_id": ids[items], "score": scores[users, items]})
    return qrels, run


@pytest.mark.parametrize("seed", [0, 1])
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_equals_qrels_run_evaluation(seed, dtype):
    scores, rel, exclude = _data(seed)
    scores = scores.astype(dtype)
    res = evaluate(scores, rel, METRICS, exclude=exclude, batch_size=50)  # parallel + serial
    qrels, run = _frames(scores.astype(np.float64), rel, exclude)
    ref = ltr.evaluate(qrels, run, METRICS).to_frame()
    got = res.to_frame()
    assert isinstance(res, EvaluationResult)
    assert list(got.index) == list(range(scores.shape[0]))
    has_rel = np.asarray((rel >= 1).sum(axis=1)).ravel() > 0
    assert got[has_rel].notna().all().all()
    assert got[~has_rel].isna().all().all()
    assert res.n_empty == int((~has_rel).sum()) >= 2
    common = got.index[has_rel]
    np.testing.assert_allclose(got.loc[common].to_numpy(), ref.loc[common].to_numpy(),
                               rtol=0, atol=1e-12)
    # the user whose relevant items all rank below the top 10
    assert got.loc[5, "ndcg@10"] == 0.0 and got.loc[5, "ndcg"] > 0.0
    for m in METRICS:
        assert res.mean[m] == pytest.approx(float(ref.loc[common, m].mean()), abs=1e-12)
    assert res.n_queries == int(has_rel.sum())


def test_infinite_scores_equal_qrels_run_evaluation():
    # -inf: not ranked (as in a run); +inf ranks first, ties by item index
    scores, rel, exclude = _data(2)
    rng = np.random.default_rng(2)
    scores[rng.random(scores.shape) < 0.1] = -np.inf
    scores[rng.random(scores.shape) < 0.05] = np.inf
    qrels, run = _frames(scores, rel, exclude)
    got = evaluate(scores, rel, METRICS, exclude=exclude).to_frame().dropna()
    ref = ltr.evaluate(qrels, run[run.score > -np.inf], METRICS).to_frame()
    np.testing.assert_allclose(got.to_numpy(), ref.loc[got.index].to_numpy(), rtol=0, atol=1e-12)


def test_ranx_convention_and_level_on_tie_free_scores():
    scores, rel, exclude = _data(3)
    scores = scores + np.random.default_rng(3).random(scores.shape) * 1e-3
    qrels, run = _frames(scores, rel, exclude)
    metrics = ["ndcg@10", "map@10", "recall@20", "precision@5"]
    got = evaluate(scores, rel, metrics, exclude=exclude, convention="ranx", relevance_level=2)
    ref = ltr.evaluate(qrels, run, metrics, convention="ranx", relevance_level=2).to_frame()
    ok = got.to_frame().dropna().index
    np.testing.assert_allclose(got.to_frame().loc[ok].to_numpy(), ref.loc[ok].to_numpy(),
                               rtol=0, atol=1e-12)


def test_batches_and_threads_agree():
    scores, rel, exclude = _data(4, n_users=300)
    a = evaluate(scores, rel, METRICS, exclude=exclude, batch_size=7).to_frame()
    b = evaluate(scores, rel, METRICS, exclude=exclude, batch_size=1000).to_frame()
    pd.testing.assert_frame_equal(a, b)


def test_sklearn_ndcg_on_a_tie_free_fully_graded_case():
    # sklearn's gain is linear (rel) and trec_eval's max(rel, 0): equal for grades >= 0;
    # ties would be averaged by sklearn, so the scores are tie-free.
    from sklearn.metrics import ndcg_score

    rng = np.random.default_rng(5)
    scores = rng.random((30, 25))
    grades = rng.integers(0, 4, (30, 25)).astype(float)
    grades[:, 0] = 1.0  # every user has a relevant item
    rel = sp.csr_matrix(grades)
    for k in (5, 25):
        got = evaluate(scores, rel, f"ndcg@{k}").to_frame()[f"ndcg@{k}"].to_numpy()
        ref = [ndcg_score(grades[u : u + 1], scores[u : u + 1], k=k) for u in range(30)]
        np.testing.assert_allclose(got, ref, rtol=0, atol=1e-12)


def test_empty_users_filled_with_a_number():
    scores, rel, exclude = _data(0)
    res = evaluate(scores, rel, ["recall@20"], exclude=exclude, empty=0)
    frame = res.to_frame()
    assert frame.notna().all().all()
    assert (frame.loc[res.missing_queries, "recall@20"] == 0).all()
    assert res.n_queries == scores.shape[0]
    skip = evaluate(scores, rel, ["recall@20"], exclude=exclude)
    assert math.isfinite(skip.ci["recall@20"][0])
    assert f"{skip.n_empty} users without a relevant item (left out)" in skip.to_markdown()


def test_tie_break_by_item_index():
    scores = np.array([[0.5, 0.5, 0.5, 0.5]])
    rel = sp.csr_matrix(np.array([[0.0, 0.0, 1.0, 0.0]]))
    res = evaluate(scores, rel, ["mrr@10", "precision@2"])
    assert res.mean == {"mrr@10": 1 / 3, "precision@2": 0.0}
    res = evaluate(scores, rel, ["mrr@10"], exclude=sp.csr_matrix(np.array([[1, 0, 0, 0]])))
    assert res.mean["mrr@10"] == 0.5


@pytest.mark.parametrize(
    "change, match",
    [
        (lambda s, r, e: (s[:, :-1], r, e), "shape"),
        (lambda s, r, e: (s, r[:-1], e), "shape"),
        (lambda s, r, e: (s, r, e[:, :-1]), "shape"),
        (lambda s, r, e: (s, _set(r, 2, 3, -1.0), e), "user row 2, item 3: relevance is negative"),
        (lambda s, r, e: (s, _set(r, 4, 1, np.nan), e), "user row 4, item 1: relevance is NaN"),
        (lambda s, r, e: (_nan(s, 6, 2), r, e), "user row 6, item 2: score is NaN"),
        (lambda s, r, e: (s, _set(r, 7, 0, 1.0), _set(e, 7, 0, 1.0)), "user row 7, item 0"),
    ],
)
def test_bad_input_names_the_user_and_item(change, match):
    scores, rel, exclude = _data(0, n_users=10, n_items=8)
    s, r, e = change(scores.copy(), rel.copy(), exclude.copy())
    with pytest.raises(ValueError, match=match):
        evaluate(s, r, ["ndcg@5"], exclude=e)


def _set(m, u, j, v):
    m = m.tolil()
    m[u, j] = v
    return m.tocsr()


def _nan(s, u, j):
    s[u, j] = np.nan
    return s


def test_bad_options():
    scores, rel, _ = _data(0, n_users=5, n_items=6)
    with pytest.raises(TypeError, match="scipy.sparse"):
        evaluate(scores, rel.toarray(), "ndcg@5")
    with pytest.raises(ValueError, match="empty"):
        evaluate(scores, rel, "ndcg@5", empty="zero")
    with pytest.raises(TypeError, match="unknown metric option"):
        evaluate(scores, rel, "ndcg@5", k=3)
    with pytest.raises(ValueError, match="convention"):
        evaluate(scores, rel, "ndcg@5", convention="sklearn")


def test_the_empty_rule_counts_users_without_a_relevant_item_and_states_what_they_scored():
    import scipy.sparse as sp

    from ltr.evaluation.recsys import evaluate as recsys_evaluate

    rng = np.random.default_rng(3)
    held = (rng.random((40, 12)) < 0.08).astype(float)
    truth = int((held.sum(axis=1) == 0).sum())  # counted independently of ltr
    assert 0 < truth < 40
    scores = rng.normal(size=held.shape)
    skip = recsys_evaluate(scores, sp.csr_matrix(held), ["ndcg@5"])
    assert (skip.empty_rule.n_empty, skip.empty_rule.n_queries) == (truth, 40)
    assert skip.empty_rule.describe() == f"empty: {truth} of 40 queries left out (trec_eval)"
    zero = recsys_evaluate(scores, sp.csr_matrix(held), ["ndcg@5"], empty=0.0)
    assert zero.empty_rule.describe() == f"empty: {truth} of 40 queries scored 0 (trec_eval)"

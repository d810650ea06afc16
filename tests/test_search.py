"""End to end: scikit-learn model selection over rankers on the committed LETOR slice.

Every fold score a search reports must equal a hand-written loop over the same
folds that fits the ranker and evaluates it with ltr.metrics.ndcg (to 1e-12).
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
import sklearn
from scipy.stats import loguniform, randint
from sklearn.base import clone
from sklearn.model_selection import GridSearchCV, GroupKFold, RandomizedSearchCV, cross_validate
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler

from ltr.datasets import load_letor
from ltr.estimator import GroupedRanker, LambdaMARTRanker
from ltr.metrics import ndcg
from ltr.scoring import get_scorer, make_ndcg_scorer
from ltr.testing import deterministic_params

lgb = pytest.importorskip("lightgbm")

# Searches are compared with hand loops that train again: determinism is pinned
# (LambdaMARTRanker's LightGBM engine defaults to deterministic=True,
# force_row_wise=True; stated here as well).
BASE = {"n_estimators": 20, "n_jobs": 1, "random_state": 0,
        "engine_params": {"deterministic": True, "force_row_wise": True}}
GRID = {"num_leaves": [7, 15], "learning_rate": [0.05, 0.1]}
CV = GroupKFold(n_splits=5)


@pytest.fixture(scope="module")
def data(letor_slice_dir):
    """The slice's 40 training queries: 8 per GroupKFold test fold."""
    return load_letor(letor_slice_dir / "rank.train")


@pytest.fixture(scope="module")
def frame(data):
    df = pd.DataFrame(data.X, columns=data.feature_names)
    df["qid"] = data.qid
    return df


def _hand_loop(make_model, data, params, k=10, fit_qid=True, qid_param="qid"):
    """Fit on each GroupKFold training part, score each test part with ltr.metrics.ndcg."""
    scores = []
    for train_idx, test_idx in CV.split(data.X, data.y, groups=data.qid):
        model = make_model(params)
        if fit_qid:
            model.fit(data.X[train_idx], data.y[train_idx], **{qid_param: data.qid[train_idx]})
        else:  # an engine ranker: group sizes of the (contiguous, sorted) training rows
            _, sizes = np.unique(data.qid[train_idx], return_counts=True)
            model.fit(data.X[train_idx], data.y[train_idx], group=sizes)
        pred = model.predict(data.X[test_idx])
        ks = [k] if np.isscalar(k) else k
        scores.append(
            [float(ndcg(data.y[test_idx], pred, qid=data.qid[test_idx], k=kk)) for kk in ks]
        )
    return np.array(scores)


def _ours(params):
    return LambdaMARTRanker(**{**BASE, **params})


def _split_scores(results, i, n_splits=5):
    return np.array([results[f"split{f}_test_score"][i] for f in range(n_splits)])


@pytest.fixture(scope="module")
def routed_search(data):
    """GridSearchCV with metadata routing: qid as metadata, GroupKFold on qid."""
    with sklearn.config_context(enable_metadata_routing=True):
        search = GridSearchCV(LambdaMARTRanker(**BASE), GRID, scoring=make_ndcg_scorer(10), cv=CV)
        search.fit(data.X, data.y, groups=data.qid, qid=data.qid)
    return search


def test_grid_search_with_routed_qid_matches_a_hand_loop(routed_search, data):
    results = routed_search.cv_results_
    assert len(results["params"]) == 4
    for i, params in enumerate(results["params"]):
        expected = _hand_loop(_ours, data, params)[:, 0]
        np.testing.assert_allclose(_split_scores(results, i), expected, rtol=0, atol=1e-12)
    assert routed_search.best_params_ in results["params"]
    assert isinstance(routed_search.best_estimator_, LambdaMARTRanker)
    assert routed_search.best_estimator_.n_queries_ == data.n_queries  # refit on all rows
    # better than any of 200 random rankings of the same rows (best about 0.68 on the
    # slice, mean 0.62; the search's folds score about 0.77-0.80)
    rng = np.random.default_rng(0)
    random_best = max(
        float(ndcg(data.y, rng.random(len(data.y)), qid=data.qid, k=10)) for _ in range(200)
    )
    assert random_best < routed_search.best_score_ <= 1.0


def test_grid_search_with_qid_column_and_routing_off_gives_the_same_scores(
    routed_search, data, frame
):
    assert not sklearn.get_config()["enable_metadata_routing"]
    search = GridSearchCV(
        LambdaMARTRanker(qid_column="qid", **BASE), GRID, scoring=make_ndcg_scorer(10), cv=CV
    )
    search.fit(frame, data.y, groups=data.qid)
    for i in range(4):
        assert search.cv_results_["params"][i] == routed_search.cv_results_["params"][i]
        np.testing.assert_allclose(
            _split_scores(search.cv_results_, i),
            _split_scores(routed_search.cv_results_, i),
            rtol=0,
            atol=1e-12,
        )
    assert list(search.best_estimator_.feature_names_in_) == data.feature_names


def test_search_without_scoring_uses_the_ranker_score_with_routed_qid(data):
    # the ranker's score is nDCG@eval_at[0] in the engine's convention (that of evals_result_)
    grid = {"num_leaves": [7]}
    with sklearn.config_context(enable_metadata_routing=True):
        search = GridSearchCV(LambdaMARTRanker(**BASE), grid, cv=CV)
        search.fit(data.X, data.y, groups=data.qid, qid=data.qid)
        scored = GridSearchCV(LambdaMARTRanker(**BASE), grid, cv=CV,
                              scoring=make_ndcg_scorer(10, convention="lightgbm"))
        scored.fit(data.X, data.y, groups=data.qid, qid=data.qid)
    np.testing.assert_allclose(
        _split_scores(search.cv_results_, 0),
        _split_scores(scored.cv_results_, 0),
        rtol=0,
        atol=1e-12,
    )


def test_randomized_search_matches_a_hand_loop(data):
    space = {"num_leaves": randint(4, 16), "learning_rate": loguniform(0.03, 0.3)}
    with sklearn.config_context(enable_metadata_routing=True):
        search = RandomizedSearchCV(
            LambdaMARTRanker(**BASE),
            space,
            n_iter=2,
            scoring=get_scorer("ndcg@5"),
            cv=CV,
            random_state=0,
        )
        search.fit(data.X, data.y, groups=data.qid, qid=data.qid)
    for i, params in enumerate(search.cv_results_["params"]):
        assert 4 <= params["num_leaves"] < 16 and 0.03 <= params["learning_rate"] <= 0.3
        expected = _hand_loop(_ours, data, params, k=5)[:, 0]
        np.testing.assert_allclose(
            _split_scores(search.cv_results_, i), expected, rtol=0, atol=1e-12
        )


def test_cross_validate_with_several_scorers_matches_a_hand_loop(data):
    scoring = {"ndcg@5": get_scorer("ndcg@5"), "ndcg@10": make_ndcg_scorer(10)}
    with sklearn.config_context(enable_metadata_routing=True):
        result = cross_validate(
            LambdaMARTRanker(num_leaves=7, **BASE),
            data.X,
            data.y,
            cv=CV,
            scoring=scoring,
            params={"qid": data.qid, "groups": data.qid},
        )
    expected = _hand_loop(_ours, data, {"num_leaves": 7}, k=[5, 10])
    np.testing.assert_allclose(result["test_ndcg@5"], expected[:, 0], rtol=0, atol=1e-12)
    np.testing.assert_allclose(result["test_ndcg@10"], expected[:, 1], rtol=0, atol=1e-12)


def test_pipeline_ending_in_the_ranker_gets_qid_routed(data):
    pipe = make_pipeline(StandardScaler(), LambdaMARTRanker(num_leaves=7, **BASE))
    with sklearn.config_context(enable_metadata_routing=True):
        result = cross_validate(
            pipe,
            data.X,
            data.y,
            cv=CV,
            scoring=make_ndcg_scorer(10),
            params={"qid": data.qid, "groups": data.qid},
        )
    expected = _hand_loop(lambda p: clone(pipe), data, {}, qid_param="lambdamartranker__qid")[:, 0]
    np.testing.assert_allclose(result["test_score"], expected, rtol=0, atol=1e-12)


def test_xgboost_engine_in_cross_validate(data):
    pytest.importorskip("xgboost")
    params = {"engine": "xgboost", "max_depth": 4,
              "engine_params": deterministic_params("xgboost", "native")}
    with sklearn.config_context(enable_metadata_routing=True):
        result = cross_validate(
            _ours(params),
            data.X,
            data.y,
            cv=CV,
            scoring=make_ndcg_scorer(10),
            params={"qid": data.qid, "groups": data.qid},
        )
    expected = _hand_loop(_ours, data, params)[:, 0]
    np.testing.assert_allclose(result["test_score"], expected, rtol=0, atol=1e-12)


# --------------------------------------------------------------------------- #
# LightGBM's own LGBMRanker (LightGBM issue 5660) through GroupedRanker         #
# --------------------------------------------------------------------------- #

LGBM = deterministic_params("lightgbm", "sklearn", n_estimators=20)
LGBM_GRID = {"estimator__num_leaves": [7, 15]}


def _lgbm(params):
    return lgb.LGBMRanker(**LGBM, **{k.split("__")[1]: v for k, v in params.items()})


def test_lgbm_ranker_grid_search_with_group_kfold_via_grouped_ranker(data, frame):
    with sklearn.config_context(enable_metadata_routing=True):
        routed = GridSearchCV(
            GroupedRanker(lgb.LGBMRanker(**LGBM)), LGBM_GRID, scoring=make_ndcg_scorer(10), cv=CV
        ).fit(data.X, data.y, groups=data.qid, qid=data.qid)
    by_column = GridSearchCV(
        GroupedRanker(lgb.LGBMRanker(**LGBM), qid_column="qid"),
        LGBM_GRID,
        scoring=make_ndcg_scorer(10),
        cv=CV,
    ).fit(frame, data.y, groups=data.qid)
    for i, params in enumerate(routed.cv_results_["params"]):
        expected = _hand_loop(_lgbm, data, params, fit_qid=False)[:, 0]
        np.testing.assert_allclose(
            _split_scores(routed.cv_results_, i), expected, rtol=0, atol=1e-12
        )
        np.testing.assert_allclose(
            _split_scores(by_column.cv_results_, i), expected, rtol=0, atol=1e-12
        )
    assert isinstance(routed.best_estimator_.estimator_, lgb.LGBMRanker)

"""Categorical features end to end: the coding, both engines bit for bit, the estimator, runs.

References: ``lightgbm.train(..., categorical_feature=...)`` and ``xgboost.train`` on a
categorical ``DMatrix`` given the same codes (identical trees); a noise-free oracle
ranking on a set where one categorical feature carries the signal; full re-prediction
through a plain callable for permutation importance.
"""

from __future__ import annotations

import json

import lightgbm as lgb
import numpy as np
import pandas as pd
import pytest
import xgboost as xgb

from ltr.categorical import CategoricalCoding, resolve_categorical_columns
from ltr.engines import RankingModel, train
from ltr.estimator import LambdaMARTRanker
from ltr.inspection import contributions, global_contributions, permutation_importance
from ltr.metrics import ndcg
from ltr.synthetic import make_ranking

# small data: the rescoring and change-detection paths, not the small-job switch
pytestmark = pytest.mark.usefixtures("rescoring_paths")

DOCS = 20
IDS = np.array([3, 7, 11, 15, 20, 42, 99, 5])  # category ids; their order says nothing
EFFECT = np.array([0.0, 2.0, -1.0, 1.0, 0.5, -0.5, 1.5, 0.2])


def _data(n_queries: int, seed: int, noise: float = 0.5, numeric: float = 0.3):
    rng = np.random.default_rng(seed)
    n = n_queries * DOCS
    X = rng.normal(size=(n, 4))
    level = rng.integers(0, len(IDS), n)
    X[:, 2] = IDS[level]
    truth = EFFECT[level] + numeric * X[:, 0]
    latent = truth + noise * rng.normal(size=n)
    y = np.digitize(latent, np.quantile(latent, [0.5, 0.8, 0.95])).astype(np.float64)
    offsets = np.arange(0, n + 1, DOCS, dtype=np.int64)
    return X, y, offsets, truth


@pytest.fixture(scope="module")
def data():
    return _data(40, 0), _data(15, 1)


def _trees_lgb(booster: lgb.Booster) -> str:
    return booster.model_to_string().split("end of trees")[0]


def _qid(offsets):
    return np.repeat(np.arange(len(offsets) - 1), np.diff(offsets))


# --------------------------------------------------------------------------- the coding
def test_coding_numbers_training_categories_and_maps_unseen_and_missing_to_nan():
    X = np.array([[0.0, 30.0], [1.0, 10.0], [2.0, np.nan], [3.0, 30.0]])
    coding = CategoricalCoding.fit(X, [1])
    assert coding.categories == ((10, 30),)
    codes, unseen = coding.encode(np.array([[5.0, 30.0], [6.0, 20.0], [7.0, np.nan]]),
                                  count_unseen=True)
    np.testing.assert_array_equal(codes[:, 0], [5.0, 6.0, 7.0])
    np.testing.assert_array_equal(codes[:, 1], [1.0, np.nan, np.nan])
    assert unseen == 1  # a missing value is missing, not unseen
    assert CategoricalCoding.from_dict(json.loads(json.dumps(coding.to_dict()))) == coding


def test_coding_of_a_pandas_category_column_keeps_its_order_and_matches_3_and_3_0():
    df = pd.DataFrame({"x": [1.0, 2.0, 3.0],
                       "dev": pd.Categorical(["ios", "web", "ios"], categories=["web", "tv", "ios"])})
    coding = CategoricalCoding.fit(df, ["dev"])
    assert coding.categories == (("web", "ios"),)  # the dtype's order, unused categories dropped
    out = coding.encode(pd.DataFrame({"x": [0.0, 0.0], "dev": ["ios", "tv"]}))
    np.testing.assert_array_equal(out[:, 1], [1.0, np.nan])
    ints = CategoricalCoding.fit(np.array([[3.0], [4.0]]), [0])
    np.testing.assert_array_equal(ints.encode(np.array([[3], [4]]))[:, 0], [0.0, 1.0])


def test_categorical_columns_are_checked_with_informative_errors():
    with pytest.raises(ValueError, match="names column 'nope', which is not a feature"):
        resolve_categorical_columns(["nope"], ["a", "b"], 2)
    with pytest.raises(ValueError, match="names column 5, but X has 2 columns"):
        resolve_categorical_columns([5], None, 2)
    with pytest.raises(ValueError, match="lists column 0 twice"):
        resolve_categorical_columns(["a", 0], ["a", "b"], 2)
    with pytest.raises(TypeError, match="must be a list of column names"):
        resolve_categorical_columns("a", ["a"], 1)


# --------------------------------------------------------------------------- engines
def test_lightgbm_model_equals_lightgbm_train_with_categorical_feature(data):
    (X, y, offsets, _), (Xv, yv, ov, _) = data
    model = train(X, y, offsets, categorical=[2], num_boost_round=8, k=10,
                  params={"min_data_in_leaf": 5, "num_leaves": 7}, n_jobs=1,
                  eval_sets=[("valid", Xv, yv, ov)])
    codes = model.categorical.encode(X)
    params = {"objective": "lambdarank", "lambdarank_truncation_level": 10,
              "learning_rate": 0.1, "num_leaves": 7, "min_data_in_leaf": 5,
              "deterministic": True, "force_row_wise": True, "verbosity": -1, "seed": 0,
              "metric": "None", "num_threads": 1}
    direct = lgb.train(params, lgb.Dataset(codes, label=y, group=np.diff(offsets),
                                           categorical_feature=[2]), num_boost_round=8)
    assert _trees_lgb(model.booster) == _trees_lgb(direct)
    n_cat = [int(line.split("=")[1]) for line in _trees_lgb(direct).splitlines()
             if line.startswith("num_cat=")]
    assert max(n_cat) > 0  # the trees really split on categories
    np.testing.assert_array_equal(model.predict(Xv), direct.predict(model.categorical.encode(Xv)))
    # the eval set went through the same coding: the recorded curve is the final model's nDCG
    final = ndcg(yv, model.predict(Xv), offsets=ov, k=10, convention="lightgbm")
    assert model.evals_result["valid"]["ndcg@10"][-1] == pytest.approx(float(final), abs=1e-12)


def test_xgboost_model_equals_xgboost_train_on_a_categorical_dmatrix(data):
    (X, y, offsets, _), (Xv, *_rest) = data
    model = train(X, y, offsets, engine="xgboost", categorical=[2], num_boost_round=8, k=10,
                  params={"max_depth": 3}, n_jobs=1)
    codes = model.categorical.encode(X)
    dm = xgb.DMatrix(codes, label=y, qid=_qid(offsets), feature_types=["q", "q", "c", "q"],
                     enable_categorical=True)
    params = {"objective": "rank:ndcg", "lambdarank_pair_method": "topk",
              "lambdarank_num_pair_per_sample": 10, "tree_method": "hist", "max_depth": 3,
              "learning_rate": 0.1, "seed": 0, "nthread": 1, "disable_default_eval_metric": 1}
    direct = xgb.train(params, dm, 8)
    assert model.booster.get_dump() == direct.get_dump()
    assert model.booster.feature_types == ["q", "q", "c", "q"]
    np.testing.assert_array_equal(
        model.predict(Xv),
        direct.inplace_predict(model.categorical.encode(Xv), predict_type="margin"),
    )


@pytest.mark.parametrize("engine", ["lightgbm", "xgboost"])
def test_unseen_category_scores_as_missing_and_survives_save_and_load(data, engine, tmp_path):
    (X, y, offsets, _), _ = data
    model = train(X, y, offsets, engine=engine, categorical=[2], num_boost_round=6, n_jobs=1,
                  feature_names=["a", "b", "cat", "d"])
    rows = np.repeat(X[:1], 3, axis=0)
    rows[0, 2], rows[1, 2] = 12345.0, np.nan  # unseen, missing
    scores = model.predict(rows)
    assert scores[0] == scores[1]  # unseen is missing, on both engines
    loaded = RankingModel.load(model.save(tmp_path / "m.json"))
    assert loaded.categorical == model.categorical
    np.testing.assert_array_equal(loaded.predict(rows), scores)


def test_a_fitted_coding_needs_coded_input(data):
    (X, y, offsets, _), _ = data
    coding = CategoricalCoding.fit(X, [2])
    with pytest.raises(ValueError, match="must hold its codes.*coding.encode"):
        train(X, y, offsets, categorical=coding, num_boost_round=2)
    model = train(coding.encode(X), y, offsets, categorical=coding, num_boost_round=2, n_jobs=1)
    assert model.categorical is coding


# --------------------------------------------------------------------------- estimator
@pytest.mark.parametrize("engine", ["lightgbm", "xgboost"])
def test_estimator_takes_pandas_category_columns(data, engine):
    (X, y, offsets, _), (Xv, yv, ov, _) = data
    names = np.array(["ios", "web", "tv", "car", "pad", "box", "watch", "glass"])

    def frame(A):
        level = np.searchsorted(np.sort(IDS), A[:, 2])
        return pd.DataFrame({"a": A[:, 0], "b": A[:, 1], "d": A[:, 3],
                             "dev": pd.Categorical(names[np.argsort(IDS)][level])})

    est = LambdaMARTRanker(engine=engine, n_estimators=6, n_jobs=1, min_child_samples=5)
    est.fit(frame(X), y, qid=_qid(offsets), eval_set=[(frame(Xv), yv)], eval_qid=[_qid(ov)])
    assert est.model_.categorical.names == ("dev",)
    # the same model through the engine API with the same coding and codes
    codes = est.model_.categorical.encode(frame(X))
    direct = train(codes, y, offsets, categorical=est.model_.categorical,
                   **_estimator_kwargs(est))
    np.testing.assert_array_equal(est.predict(frame(Xv)), direct.predict_codes(
        est.model_.categorical.encode(frame(Xv))))
    plain = frame(Xv).assign(dev=frame(Xv)["dev"].astype(str))  # strings, not a category dtype
    np.testing.assert_array_equal(est.predict(plain), est.predict(frame(Xv)))


def _estimator_kwargs(est):
    from ltr.build import build_training, validate_settings

    kw = build_training(validate_settings(est._settings()))
    kw.pop("position")
    return kw


# --------------------------------------------------------------------------- signal
@pytest.mark.parametrize("engine", ["lightgbm", "xgboost"])
def test_a_categorical_signal_trains_near_the_oracle_and_ranks_first(engine):
    X, y, offsets, _ = _data(60, 2, noise=0.3, numeric=0.0)  # only the category matters
    Xt, yt, ot, truth = _data(30, 3, noise=0.3, numeric=0.0)
    model = train(X, y, offsets, engine=engine, categorical=[2], num_boost_round=40, n_jobs=1,
                  feature_names=["a", "b", "cat", "d"],
                  params={"num_leaves": 4} if engine == "lightgbm" else {"max_depth": 2})
    got = float(ndcg(yt, model.predict(Xt), offsets=ot, k=10))
    oracle = float(ndcg(yt, truth, offsets=ot, k=10))  # the noise-free relevance
    assert got >= oracle - 0.015, (got, oracle)
    result = permutation_importance(model, Xt, yt, qid=_qid(ot), k=10, n_repeats=2,
                                    random_state=0, feature_names=["a", "b", "cat", "d"])
    frame = result.to_frame()
    assert frame["feature"].iloc[0] == "cat"
    assert "categorical" in result.prediction  # the fast path falls back, and says so
    shap = global_contributions(contributions(model, Xt))
    assert shap.index[0] == "cat"


def test_permutation_importance_on_categorical_columns_equals_full_prediction(data):
    (X, y, offsets, _), (Xv, yv, ov, _) = data
    model = train(X, y, offsets, categorical=[2], num_boost_round=6, n_jobs=1,
                  params={"min_data_in_leaf": 5})
    kw = dict(qid=_qid(ov), k=5, n_repeats=3, random_state=1)
    fast = permutation_importance(model, Xv, yv, **kw)
    full = permutation_importance(lambda A: model.predict(A), Xv, yv, **kw)
    np.testing.assert_array_equal(fast.importances, full.importances)
    assert fast.prediction == "engine predict of changed rows (categorical splits)"
    assert full.prediction == "full predict"
    numeric = train(X, y, offsets, num_boost_round=6, n_jobs=1, params={"min_data_in_leaf": 5})
    assert permutation_importance(numeric, Xv, yv, **kw).prediction == "cached leaves"


# --------------------------------------------------------------------------- synthetic
def test_synthetic_categorical_columns_leave_the_numeric_ones_unchanged():
    a = make_ranking(30, n_features=6, mean_docs=10, random_state=4)
    b = make_ranking(30, n_features=6, mean_docs=10, n_categorical=2, random_state=4)
    np.testing.assert_array_equal(a.X, b.X[:, :6])
    assert b.feature_names[-2:] == ["c1", "c2"]
    assert len(np.unique(b.X[:, 6])) <= 8 and len(np.unique(b.X[:, 7])) <= 16
    assert np.all(b.X[:, 6:] == np.floor(b.X[:, 6:]))

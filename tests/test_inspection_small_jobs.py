"""Small permutation-importance jobs: the engine predicts every permutation in full.

Below ``_SMALL_WORK`` row-tree visits the rescoring kernels would cost more to
compile (empty numba cache) than the whole job; the engine's predict gives the
same scores bitwise, so the importances must equal the rescoring path's exactly.
"""

from __future__ import annotations

import lightgbm as lgb
import numpy as np
import pytest
from sklearn.datasets import load_svmlight_file

from ltr.inspection import _permutation, permutation_importance
from ltr.testing import deterministic_params

xgb = pytest.importorskip("xgboost")


@pytest.fixture(scope="module")
def real(letor_slice_dir):
    """The committed slice of LightGBM's example (40 queries, 570 rows), 30 columns."""
    X, y = load_svmlight_file(str(letor_slice_dir / "rank.train"), n_features=300)
    sizes = np.loadtxt(letor_slice_dir / "rank.train.query", dtype=np.int64)
    X = np.ascontiguousarray(X.toarray()[:, :30])
    X[::7, 3] = np.nan  # missing values take the engines' default directions
    qid = np.repeat(np.arange(len(sizes)), sizes)
    lgb_model = lgb.train(deterministic_params("lightgbm", objective="lambdarank",
                                               num_leaves=15, min_data_in_leaf=10),
                          lgb.Dataset(X, y, group=sizes), num_boost_round=20)
    xgb_model = xgb.train({"objective": "rank:ndcg", "max_depth": 4, "nthread": 1, "seed": 0},
                          xgb.DMatrix(X, y, qid=qid), num_boost_round=20)
    return {"X": X, "y": y, "qid": qid, "lightgbm": lgb_model, "xgboost": xgb_model}


def _importance(model, data, **kw):
    return permutation_importance(model, data["X"], data["y"], qid=data["qid"], k=[5, 10],
                                  n_repeats=3, random_state=0, progress=False, **kw)


@pytest.mark.parametrize("engine", ["lightgbm", "xgboost"])
def test_small_job_is_predicted_by_the_engine_with_the_rescoring_paths_numbers(
        real, engine, monkeypatch):
    threshold = _permutation._SMALL_WORK
    small = _importance(real[engine], real)
    assert small.prediction == "full predict (small job)"
    n_rows, n_cols = real["X"].shape
    assert small.n_rows_predicted == n_cols * 3 * n_rows  # every permuted set, in full
    monkeypatch.setattr(_permutation, "_SMALL_WORK", 0)
    rescored = _importance(real[engine], real)
    assert rescored.prediction == "cached leaves"
    assert rescored.n_rows_predicted < small.n_rows_predicted
    assert small.importances.shape == (2, n_cols, 3)  # (k, feature, repeat)
    assert np.abs(small.importances).max() > 0.01
    np.testing.assert_array_equal(small.importances, rescored.importances)
    np.testing.assert_array_equal(small.baseline, rescored.baseline)
    # two workers, each reusing its own copy of the tiled rows feature after feature
    monkeypatch.setattr(_permutation, "_SMALL_WORK", threshold)
    two = _importance(real[engine], real, n_jobs=2)
    assert two.prediction == "full predict (small job)"
    np.testing.assert_array_equal(two.importances, small.importances)


def test_the_switch_counts_rows_repeats_features_and_trees(real):
    booster = real["lightgbm"]  # 20 trees
    assert _permutation._small_job(booster, 570, 3, 30, 30)  # 1.0e6 visits
    rows = _permutation._SMALL_WORK // (3 * 30 * 20) + 1
    assert not _permutation._small_job(booster, rows, 3, 30, 30)
    assert _permutation._small_job(real["xgboost"], rows - 1, 3, 30, 30)  # 20 rounds
    # one feature's permuted copies must stay small too (they are predicted in one call)
    assert not _permutation._small_job(booster, 10, 1, 1, _permutation._SMALL_BLOCK // 10 + 1)


def test_a_model_without_trees_is_predicted_in_full_as_before(real):
    booster = real["lightgbm"]
    result = _importance(lambda X: booster.predict(X), real)
    assert result.prediction == "full predict"

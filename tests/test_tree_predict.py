"""Exact rescoring of permuted rows from cached leaves (ltr.inspection._tree_changes._ExactRescorer).

The reference is the engine itself: after permuting one column (or a group),
the rows the rescorer rewrites must equal LightGBM's / XGBoost's full predict
bit for bit (a last-bit difference can reorder tied documents), and every
other row must already equal it.  Models whose prediction is not the plain sum
of their trees (categorical splits, a logistic output) must fall back to the
engine's predict, and say so.
"""

from __future__ import annotations

import lightgbm as lgb
import numpy as np
import pytest
from sklearn.inspection import permutation_importance as sk_permutation_importance

from ltr.engines.trees import parse_lightgbm_trees, parse_xgboost_trees
from ltr.inspection import permutation_importance
from ltr.inspection._tree_changes import _ExactRescorer
from ltr.metrics import ndcg
from ltr.testing import deterministic_params

# small data: the rescoring and change-detection paths, not the small-job switch
pytestmark = pytest.mark.usefixtures("rescoring_paths")

N_QUERIES, DOCS = 40, 50


def _data(seed: int = 0, n_features: int = 7) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Rows with NaNs, exact zeros, tiny values near LightGBM's zero and ties at thresholds."""
    rng = np.random.default_rng(seed)
    n = N_QUERIES * DOCS
    X = rng.normal(size=(n, n_features))
    X[rng.random(X.shape) < 0.12] = np.nan
    X[rng.random(X.shape) < 0.10] = 0.0
    X[rng.random(X.shape) < 0.02] = 1e-36  # LightGBM's missing-type "Zero" treats it as 0
    X[:, 3] = np.round(X[:, 3], 1)  # many rows exactly at the thresholds
    y = np.nan_to_num(X[:, 0]) + np.isnan(X[:, 1]) + (X[:, 2] == 0) + 0.5 * np.nan_to_num(X[:, 3])
    y = np.clip(np.round(y + 1), 0, 4)
    qid = np.repeat(np.arange(N_QUERIES), DOCS)
    return X, y, qid


def _permuted(X: np.ndarray, cols: list[int], perm: np.ndarray) -> np.ndarray:
    Z = X.copy()
    Z[:, cols] = X[perm][:, cols]
    return Z


def _check_bitwise(X: np.ndarray, model_predict, booster, rounds: int = 3) -> int:
    """Rescore several permutations of single columns and a pair; compare with full predict."""
    base = np.asarray(model_predict(X), dtype=np.float64)
    rescorer = _ExactRescorer(X, booster, base)
    assert rescorer.ok, rescorer.reason
    rng = np.random.default_rng(5)
    n_rescored = 0
    for cols in ([0], [1], [3], [5], [2, 3]):
        rescore = rescorer.for_columns(cols)
        assert rescore is not None
        perms = np.stack([rng.permutation(len(X)) for _ in range(rounds)])
        scores, counts, below = rescore(perms)  # every permutation in one call
        assert scores.shape == perms.shape and counts.shape == (rounds,)
        assert not below.any()  # no cut asked for: every changed row is rescored
        for perm, row_scores, count in zip(perms, scores, counts):
            full = np.asarray(model_predict(_permuted(X, cols, perm)), dtype=np.float64)
            np.testing.assert_array_equal(row_scores, full)  # bit for bit, every row
            assert count >= np.count_nonzero(row_scores != base)  # rescored rows counted
            n_rescored += int(count)
    assert n_rescored > 0
    return n_rescored


# --------------------------------------------------------------------------- LightGBM
@pytest.fixture(params=[False, True], ids=["serial", "threads"])
def split_rows(request, monkeypatch):
    """Rescore in one call, or with the rows split over threads (as on large inputs)."""
    if request.param:
        monkeypatch.setattr("ltr.inspection._tree_changes._MIN_ROWS_PER_THREAD", 300)
        monkeypatch.setattr("numba.get_num_threads", lambda: 3)
    return request.param


@pytest.mark.parametrize(
    ("extra", "dtype"),
    [
        ({}, np.float64),  # missing type NaN where the data has NaNs
        ({"zero_as_missing": True}, np.float64),  # missing type Zero
        ({"use_missing": False}, np.float32),  # missing type None: NaN -> 0.0
        ({"objective": "regression", "boost_from_average": True}, np.float32),  # bias in tree 0
    ],
)
def test_lightgbm_rescored_rows_equal_full_predict_bitwise(extra, dtype, split_rows):
    X, y, _ = _data(0)
    X = X.astype(dtype)
    params = deterministic_params("lightgbm", objective="lambdarank", num_leaves=15,
                                  min_data_in_leaf=10)
    params.update(extra)
    booster = lgb.train(params, lgb.Dataset(X, y, group=[DOCS] * N_QUERIES), num_boost_round=25)
    decisions = set(((parse_lightgbm_trees(booster).decision >> 2) & 3).tolist())
    if extra.get("zero_as_missing"):
        assert 1 in decisions
    elif not extra.get("use_missing", True):
        assert decisions == {0}
    else:
        assert 2 in decisions
    _check_bitwise(X, booster.predict, booster)


def test_lightgbm_best_iteration_is_the_sum_the_booster_predicts():
    X, y, _ = _data(1)
    params = deterministic_params("lightgbm", objective="lambdarank", num_leaves=7,
                                  min_data_in_leaf=10, eval_at=[5], learning_rate=0.3)
    train = lgb.Dataset(X[:1000], y[:1000], group=[DOCS] * 20)
    valid = lgb.Dataset(X[1000:], y[1000:], group=[DOCS] * 20)
    booster = lgb.train(params, train, num_boost_round=60, valid_sets=[valid],
                        callbacks=[lgb.early_stopping(3, verbose=False)],
                        keep_training_booster=True)  # keeps the trees after the best
    assert 0 < booster.best_iteration < booster.current_iteration()
    rescorer = _ExactRescorer(X, booster, booster.predict(X))
    assert rescorer.ok and rescorer.n_trees == booster.best_iteration
    all_trees = booster.predict(X, num_iteration=booster.current_iteration())
    assert _ExactRescorer(X, booster, all_trees).n_trees == booster.current_iteration()


def test_lightgbm_categorical_splits_fall_back_to_the_engine_predict_and_say_so():
    X, y, qid = _data(2)
    X[:, 4] = np.random.default_rng(0).integers(0, 6, len(X))
    y = np.clip(y + 2 * np.isin(X[:, 4], [1, 4]), 0, 4)  # a category set the trees must split on
    params = deterministic_params("lightgbm", objective="lambdarank", num_leaves=15,
                                  min_data_in_leaf=10, min_data_per_group=5, cat_smooth=1)
    booster = lgb.train(params, lgb.Dataset(X, y, group=[DOCS] * N_QUERIES,
                                            categorical_feature=[4]), num_boost_round=10)
    assert "num_cat=0" not in booster.model_to_string()  # a tree splits on the category
    assert parse_lightgbm_trees(booster) is None
    assert not _ExactRescorer(X, booster, booster.predict(X)).ok
    kw = {"qid": qid, "n_repeats": 2, "random_state": 0, "progress": False}
    fast = permutation_importance(booster, X, y, **kw)
    full = permutation_importance(lambda Z: booster.predict(np.asarray(Z)), X, y, **kw)
    assert fast.prediction.startswith("engine predict of changed rows (categorical")
    assert full.prediction == "full predict"
    np.testing.assert_array_equal(fast.importances, full.importances)


# --------------------------------------------------------------------------- XGBoost
@pytest.mark.parametrize(
    ("objective", "dtype"),
    [("rank:ndcg", np.float32), ("rank:pairwise", np.float64),
     ("reg:squarederror", np.float64)],
)
def test_xgboost_rescored_rows_equal_full_predict_bitwise(objective, dtype, split_rows):
    xgb = pytest.importorskip("xgboost")
    X, y, qid = _data(3)
    X = X.astype(dtype)
    dtrain = xgb.DMatrix(X, label=y, qid=qid)
    booster = xgb.train({"objective": objective, "max_depth": 5, "eta": 0.3, "nthread": 1,
                         "seed": 0}, dtrain, num_boost_round=20)
    trees = parse_xgboost_trees(booster)
    assert trees is not None and trees.strict
    assert set(((trees.decision[trees.feature >= 0] & 2) != 0).tolist()) == {False, True}
    _check_bitwise(X, lambda Z: booster.predict(xgb.DMatrix(Z)), booster)
    _check_bitwise(X, lambda Z: booster.inplace_predict(Z), booster, rounds=1)


def test_xgboost_ranker_wrapper_and_logistic_fallback():
    xgb = pytest.importorskip("xgboost")
    X, y, qid = _data(4)
    ranker = xgb.XGBRanker(n_estimators=15, max_depth=4, n_jobs=1, random_state=0)
    ranker.fit(X, y, qid=qid)
    _check_bitwise(X, ranker.predict, ranker.get_booster(), rounds=1)
    # early stopping: the wrapper predicts with the trees up to the best iteration
    stopped = xgb.XGBRanker(n_estimators=80, max_depth=4, learning_rate=0.5, n_jobs=1,
                            random_state=0, early_stopping_rounds=2, eval_metric="ndcg@5")
    stopped.fit(X[:1000], y[:1000], qid=qid[:1000], eval_set=[(X[1000:], y[1000:])],
                eval_qid=[qid[1000:]], verbose=False)
    booster = stopped.get_booster()
    assert booster.best_iteration + 1 < booster.num_boosted_rounds()
    rescorer = _ExactRescorer(X, booster, stopped.predict(X).astype(np.float64))
    assert rescorer.ok and rescorer.n_trees == booster.best_iteration + 1
    # a transformed output is not the plain sum: the engine predicts, and the numbers hold
    clf = xgb.XGBClassifier(n_estimators=8, max_depth=3, n_jobs=1, random_state=0)
    clf.fit(X, (y > 1).astype(int))
    booster = clf.get_booster()
    assert not _ExactRescorer(X, booster, booster.predict(xgb.DMatrix(X))).ok
    kw = {"qid": qid, "n_repeats": 2, "random_state": 0, "progress": False}
    fast = permutation_importance(booster, X, y, **kw)
    full = permutation_importance(lambda Z: booster.predict(xgb.DMatrix(Z)), X, y, **kw)
    assert fast.prediction == ("engine predict of changed rows (the model's predictions are "
                               "not the plain sum of its trees)")
    np.testing.assert_array_equal(fast.importances, full.importances)


def test_xgboost_categorical_splits_are_not_parsed():
    xgb = pytest.importorskip("xgboost")
    X, y, qid = _data(5)
    X[:, 4] = np.random.default_rng(0).integers(0, 6, len(X))
    y = np.clip(y + 2 * np.isin(X[:, 4], [1, 4]), 0, 4)
    types = ["q"] * X.shape[1]
    types[4] = "c"
    dtrain = xgb.DMatrix(X, label=y, qid=qid, feature_types=types, enable_categorical=True)
    booster = xgb.train({"objective": "rank:ndcg", "max_depth": 4, "nthread": 1,
                         "max_cat_to_onehot": 1}, dtrain, num_boost_round=10)
    assert parse_xgboost_trees(booster) is None
    assert not _ExactRescorer(X, booster, booster.predict(dtrain)).ok


# --------------------------------------------------------------------------- importance
def _fit_ranker(engine: str, X, y, qid, trees: int, depth: int):
    """An XGBRanker of *depth*, or an LGBMRanker of ``2**depth - 1`` leaves, fitted on *X*."""
    if engine == "xgboost":
        xgb = pytest.importorskip("xgboost")
        model = xgb.XGBRanker(n_estimators=trees, max_depth=depth, n_jobs=1, random_state=0)
        return model.fit(X, y, qid=qid)
    model = lgb.LGBMRanker(**deterministic_params("lightgbm", "sklearn", n_estimators=trees,
                                                  num_leaves=2**depth - 1, min_child_samples=10))
    return model.fit(X, y, group=[DOCS] * N_QUERIES)


def _sk_scorer(qid, k):
    def scorer(estimator, X, y):
        return float(ndcg(y, estimator.predict(X), qid=qid, k=k, ties="stable"))

    return scorer


@pytest.mark.parametrize("engine", ["lightgbm", "xgboost"])
def test_importance_from_cached_leaves_equals_sklearn_with_nans_and_stable_ties(engine):
    X, y, qid = _data(6)
    X = X.astype(np.float32)
    X[:, 6] = np.round(X[:, 6])  # coarse values: many tied scores inside queries
    model = _fit_ranker(engine, X, y, qid, trees=12, depth=3)
    ours = permutation_importance(model, X, y, qid=qid, k=5, n_repeats=3, random_state=2,
                                  progress=False, ties="stable")
    theirs = sk_permutation_importance(model, X, y, scoring=_sk_scorer(qid, 5), n_repeats=3,
                                       random_state=2)
    assert ours.prediction == "cached leaves"
    np.testing.assert_allclose(ours.importances, theirs.importances, rtol=0, atol=1e-12)
    assert ours.importances_mean.max() > 0
    assert ours.n_rows_predicted < X.shape[1] * 3 * X.shape[0]


@pytest.mark.parametrize("engine", ["lightgbm", "xgboost"])
def test_a_short_cut_off_rescores_fewer_rows_for_the_same_importances_as_sklearn(engine):
    """k shorter than the queries: rows shown below the k-th score are not rescored.

    With k as long as the queries every changed row is rescored; both runs equal
    scikit-learn's importances, and the short cut-off rescores fewer rows.
    """
    X, y, qid = _data(5)
    model = _fit_ranker(engine, X, y, qid, trees=15, depth=4)
    runs = {}
    for k in (3, DOCS):
        ours = permutation_importance(model, X, y, qid=qid, k=k, n_repeats=2, random_state=1,
                                      progress=False)
        theirs = sk_permutation_importance(
            model, X, y, n_repeats=2, random_state=1,
            scoring=lambda est, X_, y_, k=k: float(ndcg(y_, est.predict(X_), qid=qid, k=k)))
        assert ours.prediction == "cached leaves"
        np.testing.assert_allclose(ours.importances, theirs.importances, rtol=0, atol=1e-12)
        runs[k] = ours.n_rows_predicted
    assert 0 < runs[3] < runs[DOCS]


def test_ltr_ranker_uses_cached_leaves_and_equals_sklearn():
    from ltr import LambdaMARTRanker

    X, y, qid = _data(7)
    ranker = LambdaMARTRanker(n_estimators=10, random_state=0, n_jobs=1)
    ranker.fit(X, y, qid=qid)
    ours = permutation_importance(ranker, X, y, qid=qid, k=10, n_repeats=2, random_state=0,
                                  progress=False, ties="stable")
    theirs = sk_permutation_importance(ranker, X, y, scoring=_sk_scorer(qid, 10), n_repeats=2,
                                       random_state=0)
    assert ours.prediction == "cached leaves"
    np.testing.assert_allclose(ours.importances, theirs.importances, rtol=0, atol=1e-12)


# --------------------------------------------------------------------------- integer codes
def _at_thresholds(X: np.ndarray, trees, cols: list[int]) -> np.ndarray:
    """Rows whose values sit exactly on split thresholds and one float64 step either side."""
    Z = X.astype(np.float64)
    rng = np.random.default_rng(11)
    for j in cols:
        ts = np.unique(trees.threshold[trees.feature == j])
        picks = rng.choice(ts, size=len(Z))
        side = rng.integers(-1, 2, size=len(Z)).astype(np.float64)
        Z[:, j] = np.nextafter(picks, picks + side)  # side 0: exactly on the threshold
    return Z


def _booster_and_trees(engine: str, seed: int, **extra):
    X, y, qid = _data(seed)
    if engine == "xgboost":
        xgb = pytest.importorskip("xgboost")
        booster = xgb.train({"objective": "rank:ndcg", "max_depth": 5, "eta": 0.3,
                             "nthread": 1, "seed": 0},
                            xgb.DMatrix(X, label=y, qid=qid), num_boost_round=15)
        return X, booster, parse_xgboost_trees(booster)
    params = deterministic_params("lightgbm", objective="lambdarank", num_leaves=15,
                                  min_data_in_leaf=10, **extra)
    booster = lgb.train(params, lgb.Dataset(X, y, group=[DOCS] * N_QUERIES),
                        num_boost_round=15)
    return X, booster, parse_lightgbm_trees(booster)


def _predictor(booster):
    """The booster's full predict of an array (XGBoost's through a DMatrix)."""
    if not hasattr(booster, "num_boosted_rounds"):
        return booster.predict
    import xgboost as xgb

    return lambda A: booster.predict(xgb.DMatrix(A))


def _engine_leaves(booster, Z: np.ndarray, trees) -> np.ndarray:
    """The engine's own leaf of every row in every tree, numbered as ours (leaves in node order)."""
    if not hasattr(booster, "num_boosted_rounds"):  # LightGBM numbers leaves as we do
        return booster.predict(Z, pred_leaf=True)
    import xgboost as xgb

    node_ids = booster.predict(xgb.DMatrix(Z), pred_leaf=True).astype(np.int64)
    expect = np.empty_like(node_ids)
    for t in range(trees.n_trees):  # XGBoost numbers leaves by node id
        seg = slice(trees.start[t], trees.start[t + 1])
        leaf_rank = np.cumsum((trees.left[seg] == 0) & (trees.right[seg] == 0)) - 1
        expect[:, t] = leaf_rank[node_ids[:, t]]
    return expect


def _leaves_and_ranges(Z: np.ndarray, trees):
    from ltr.inspection._tree_changes import _coded
    from ltr.kernels._tree_rescore import _code_leaves_ranges

    W, nodes, thresholds = _coded(Z, trees)
    used = np.asarray(sorted(thresholds))
    slot = np.full(Z.shape[1], used.size, dtype=np.int64)
    slot[used] = np.arange(used.size)
    leaves = np.zeros((len(Z), trees.n_trees), dtype=np.int32)
    lo = np.empty((used.size, len(Z)), dtype=W.dtype)
    hi = np.empty_like(lo)
    _code_leaves_ranges(0, len(Z), W, trees.start, nodes, trees.n_trees, slot, leaves, lo, hi)
    return leaves, lo, hi, slot, thresholds


@pytest.mark.parametrize(("engine", "zero_as_missing"),
                         [("lightgbm", True), ("lightgbm", False), ("xgboost", False)])
def test_code_walk_leaves_equal_the_engines_pred_leaf(engine, zero_as_missing):
    """The branch-free walk on threshold codes reaches the engine's own leaf in every tree.

    LightGBM reads ``|value| <= 1e-35`` as 0 whatever the missing type, so a value
    exactly on its threshold ``-1e-35`` goes right.
    """
    X, booster, trees = _booster_and_trees(engine, 8, zero_as_missing=zero_as_missing)
    Z = _at_thresholds(X, trees, [0, 3, 5])
    leaves = _leaves_and_ranges(Z, trees)[0]
    np.testing.assert_array_equal(leaves, _engine_leaves(booster, Z, trees))


@pytest.mark.parametrize("engine", ["lightgbm", "xgboost"])
def test_code_ranges_are_the_codes_that_keep_every_leaf(engine):
    """A row's cached range of a feature's codes: exactly the codes that change no leaf.

    Each code is set as a value the engine reads with that code (a threshold, or
    beyond the last one), the engine predicts the leaves, and the codes whose
    leaves all equal the row's own must be the range ``lo .. hi`` (every code when
    ``lo`` is -1: no path of the row splits on the feature).
    """
    X, booster, trees = _booster_and_trees(engine, 12)
    X = np.nan_to_num(X[:40], nan=0.5)  # plain values: NaN and zero flags are walked instead
    X[X == 0] = 0.25
    leaves, lo, hi, slot, thresholds = _leaves_and_ranges(X, trees)
    strict = trees.strict
    for j in (0, 3, 5):
        ts = thresholds[j]
        # a value read with code c: LightGBM counts thresholds < value, XGBoost <= value
        codes = np.arange(ts.size + 1)
        if strict:
            values = np.where(codes == 0, ts[0] - 1.0, ts[np.maximum(codes - 1, 0)])
        else:  # a threshold, or the middle of the code's interval when LightGBM reads it as 0
            upper = np.append(ts, ts[-1] + 2.0)
            lower = np.insert(ts, 0, ts[0] - 2.0)
            values = np.where(np.abs(upper) > np.float32(1e-35), upper, (lower + upper) / 2)
        Z = np.repeat(X, codes.size, axis=0)
        Z[:, j] = np.tile(values, len(X))
        same = (_engine_leaves(booster, Z, trees).reshape(len(X), codes.size, -1)
                == leaves[:, None, :]).all(axis=2)
        keep_lo = np.maximum(lo[slot[j]], 0)[:, None]
        keep_hi = hi[slot[j]][:, None]
        np.testing.assert_array_equal(same, (codes >= keep_lo) & (codes <= keep_hi))
        assert np.any(~same)  # the feature matters to some rows


@pytest.mark.parametrize("engine", ["lightgbm", "xgboost"])
def test_rescoring_values_on_and_beside_thresholds_is_bitwise(engine, split_rows):
    """float64 values on a threshold and one step either side (XGBoost rounds to float32)."""
    X, y, qid = _data(9)
    if engine == "xgboost":
        xgb = pytest.importorskip("xgboost")
        booster = xgb.train({"objective": "rank:pairwise", "max_depth": 5, "eta": 0.3,
                             "nthread": 1, "seed": 0},
                            xgb.DMatrix(X, label=y, qid=qid), num_boost_round=15)
        Z = _at_thresholds(X, parse_xgboost_trees(booster), [0, 1, 3, 5])
        _check_bitwise(Z, lambda A: booster.predict(xgb.DMatrix(A)), booster, rounds=2)
    else:
        params = deterministic_params("lightgbm", objective="lambdarank", num_leaves=15,
                                      min_data_in_leaf=10)
        booster = lgb.train(params, lgb.Dataset(X, y, group=[DOCS] * N_QUERIES),
                            num_boost_round=15)
        Z = _at_thresholds(X, parse_lightgbm_trees(booster), [0, 1, 3, 5])
        _check_bitwise(Z, booster.predict, booster, rounds=2)


@pytest.mark.parametrize("engine", ["lightgbm", "xgboost"])
@pytest.mark.parametrize("k", [1, 5, 10, DOCS + 10])
def test_rows_kept_below_the_cut_leave_ndcg_at_k_as_the_engine_gives_it(engine, k, split_rows):
    """With a cut at k, rows whose score provably stays below the query's k-th get a bound.

    The reference is the engine's full predict of each permuted set: nDCG at k and
    at every shorter cut-off, per query and for every tie rule, is bitwise the
    same; a row whose score is not the engine's is outside the top k of both
    rankings; every other row is bitwise the engine's.  A cut longer than the
    queries keeps no row below it.
    """
    X, booster, _ = _booster_and_trees(engine, 3)
    predict = _predictor(booster)
    _, y, _ = _data(3)
    offsets = np.arange(0, len(X) + 1, DOCS, dtype=np.int64)
    base = np.asarray(predict(X), dtype=np.float64)
    rescorer = _ExactRescorer(X, booster, base)
    assert rescorer.ok, rescorer.reason
    rng = np.random.default_rng(8)
    n_below = 0
    for j in (0, 1, 2, 3):
        rescore = rescorer.for_columns([j])
        if rescore is None:
            continue
        perms = np.stack([rng.permutation(len(X)) for _ in range(3)])
        scores, counts, below = rescore(perms, split_rows=split_rows, cut=(offsets, k))
        n_below += int(below.sum())
        for perm, row_scores, n, n_exact in zip(perms, scores, below, counts):
            full = np.asarray(predict(_permuted(X, [j], perm)), dtype=np.float64)
            other = row_scores != full
            assert np.count_nonzero(other) <= n
            assert n + n_exact >= np.count_nonzero(full != base)  # every changed row seen
            for q in range(len(offsets) - 1):
                sl = slice(offsets[q], offsets[q + 1])
                if k < DOCS and other[sl].any():
                    kth = np.sort(full[sl])[-k]
                    assert np.all(full[sl][other[sl]] < kth)
                    assert np.all(row_scores[sl][other[sl]] < kth)
            for ties in ("average", "stable", "pessimistic", "optimistic"):
                for cutoff in sorted({1, max(1, k // 2), k}):
                    ours = ndcg(y, row_scores, offsets=offsets, k=cutoff, ties=ties, reduce=None)
                    exact = ndcg(y, full, offsets=offsets, k=cutoff, ties=ties, reduce=None)
                    np.testing.assert_array_equal(ours, exact)
    if k < DOCS:
        assert n_below > 0
    else:
        assert n_below == 0


@pytest.mark.parametrize("engine", ["lightgbm", "xgboost"])
def test_headroom_bounds_every_score_a_new_value_of_the_feature_gives(engine):
    """``head * step`` (``_ExactRescorer.prepare_cut``) bounds a row's real rise and fall.

    Every row's feature is set to each of the values the trees tell apart (every
    threshold, one step either side, NaN and 0) and the engine predicts: no new
    score leaves the baseline by more than the cached bounds, and the bounds are
    not vacuous (some row comes within a few steps of one).
    """
    X, booster, trees = _booster_and_trees(engine, 4)
    predict = _predictor(booster)
    X = X[:200]
    base = np.asarray(predict(X), dtype=np.float64)
    rescorer = _ExactRescorer(X, booster, base)
    assert rescorer.ok, rescorer.reason
    rescorer.prepare_cut()
    tight = np.inf
    for j in (0, 1, 3):
        ts = np.unique(trees.threshold[trees.feature == j])
        values = np.concatenate([ts, np.nextafter(ts, -np.inf), np.nextafter(ts, np.inf),
                                 [np.nan, 0.0, ts[0] - 1.0, ts[-1] + 1.0]])
        rise, fall = rescorer.head[:, rescorer.slot[j]].astype(np.float64)
        assert np.all(rise < 65535) and np.all(fall < 65535)
        top, bottom = base + rise * rescorer.step, base - fall * rescorer.step
        for v in values:
            Z = X.copy()
            Z[:, j] = v
            new = np.asarray(predict(Z), dtype=np.float64)
            assert np.all(new <= top) and np.all(new >= bottom)
            tight = min(tight, float(np.min((top - new) / rescorer.step)),
                        float(np.min((new - bottom) / rescorer.step)))
    assert tight < 5

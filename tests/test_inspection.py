"""Tests for ltr.inspection: permutation ΔnDCG importance.

References: scikit-learn's permutation_importance with a scorer computing the
same grouped nDCG (identical permutations), full re-prediction through a plain
callable (the row-subset shortcut must not change a single number), and direct
recomputation of per-segment nDCG.
"""

from __future__ import annotations

import json

import lightgbm as lgb
import numpy as np
import pandas as pd
import pytest
from sklearn.datasets import load_svmlight_file
from sklearn.inspection import permutation_importance as sk_permutation_importance

from ltr.groups import resolve_groups
from ltr.inspection._permutation import (
    PermutationImportance,
    _within_query_permutations,
    permutation_importance,
)
from ltr.metrics import ndcg
from ltr.metrics.composite import ndcg_by_segment
from ltr.testing import deterministic_params

# small data: the rescoring and change-detection paths, not the small-job switch
pytestmark = pytest.mark.usefixtures("rescoring_paths")

LGB_PARAMS = deterministic_params("lightgbm", objective="lambdarank", num_leaves=15,
                                  min_data_in_leaf=20)


# --------------------------------------------------------------------------- fixtures
@pytest.fixture(scope="module")
def real(letor_slice_dir):
    """The committed slice of LightGBM's example (40 queries, 570 rows)."""
    X, y = load_svmlight_file(str(letor_slice_dir / "rank.train"), n_features=300)
    sizes = np.loadtxt(letor_slice_dir / "rank.train.query", dtype=np.int64)
    X = X.toarray()
    qid = np.repeat(np.arange(len(sizes)), sizes)
    # A model on all 300 columns tells which are informative; tests work on 40 of them
    # (the 35 most used plus 5 never used) to stay fast.
    full = lgb.train(LGB_PARAMS, lgb.Dataset(X, y, group=sizes), num_boost_round=15)
    gain = full.feature_importance("gain")
    used = np.argsort(-gain)[:35]
    unused = np.flatnonzero(gain == 0)[:5]
    cols = np.concatenate([used, unused])
    Xs = np.ascontiguousarray(X[:, cols])
    ranker = lgb.LGBMRanker(**deterministic_params(
        "lightgbm", "sklearn", n_estimators=15, num_leaves=15, min_child_samples=20
    ))
    ranker.fit(Xs, y, group=sizes)
    return {"X": Xs, "y": y, "qid": qid, "sizes": sizes, "ranker": ranker}


def sorted_ndcg_scorer(qid, k=10, **options):
    """scikit-learn scorer: grouped nDCG@k, rows sorted by query first (any row order)."""
    groups = resolve_groups(len(qid), qid=qid, sort=True)
    order = groups.order

    def scorer(estimator, X, y):
        s = np.asarray(estimator.predict(X), dtype=np.float64)
        y = np.asarray(y, dtype=np.float64)
        if order is not None:
            s, y = s[order], y[order]
        return float(ndcg(y, s, offsets=groups.offsets, k=k, **options))

    return scorer


class CallableModel:
    """A plain callable (no booster, no predict): forces full re-prediction."""

    def __init__(self, booster):
        self.booster = booster
        self.calls = []

    def __call__(self, X):
        self.calls.append(np.array(X, copy=True))
        return self.booster.predict(np.asarray(X))


# --------------------------------------------------------------------------- equality with sklearn
def test_global_strategy_equals_sklearn_permutation_importance_on_real_data(real):
    X, y, qid, ranker = real["X"], real["y"], real["qid"], real["ranker"]
    ours = permutation_importance(ranker, X, y, qid=qid, k=10, n_repeats=3, random_state=7,
                                  progress=False)
    theirs = sk_permutation_importance(ranker, X, y, scoring=sorted_ndcg_scorer(qid, 10),
                                       n_repeats=3, random_state=7)
    assert ours.importances.shape == (X.shape[1], 3)
    np.testing.assert_allclose(ours.importances, theirs.importances, rtol=0, atol=1e-12)
    np.testing.assert_allclose(ours.importances_mean, theirs.importances_mean, rtol=0, atol=1e-12)
    np.testing.assert_allclose(ours.importances_std, theirs.importances_std, rtol=0, atol=1e-12)
    assert ours.baseline == pytest.approx(sorted_ndcg_scorer(qid, 10)(ranker, X, y), abs=1e-15)
    # The seed is drawn from random_state exactly as scikit-learn does.
    assert ours.seed == np.random.RandomState(7).randint(np.iinfo(np.int32).max + 1)
    assert ours.importances_mean.max() > 0.01
    # the shortcut really skipped work: fewer rows re-predicted than X.shape[1] * 3 full passes
    assert ours.n_rows_predicted < X.shape[1] * 3 * X.shape[0]


def test_global_strategy_equals_sklearn_with_unsorted_rows_and_nondefault_ndcg_options(real):
    X, y, qid, ranker = real["X"], real["y"], real["qid"], real["ranker"]
    rng = np.random.default_rng(3)
    shuffle = rng.permutation(len(y))
    Xp, yp, qp = X[shuffle], y[shuffle], qid[shuffle] * 7 + 11  # non-contiguous, other ids
    opts = {"gain": "linear", "ties": "stable", "empty": 0.0}
    ours = permutation_importance(ranker, Xp, yp, qid=qp, k=5, n_repeats=2, random_state=1,
                                  progress=False, **opts)
    theirs = sk_permutation_importance(ranker, Xp, yp, scoring=sorted_ndcg_scorer(qp, 5, **opts),
                                       n_repeats=2, random_state=1)
    np.testing.assert_allclose(ours.importances, theirs.importances, rtol=0, atol=1e-12)
    assert ours.ndcg_options == opts


def test_row_subset_shortcut_gives_the_same_numbers_as_full_prediction(real):
    X, y, qid, ranker = real["X"], real["y"], real["qid"], real["ranker"]
    booster = ranker.booster_
    kw = {"qid": qid, "k": [3, 10], "n_repeats": 2, "random_state": 0, "progress": False}
    fast = permutation_importance(booster, X, y, **kw)  # raw Booster: shortcut
    full = permutation_importance(CallableModel(booster), X, y, **kw)  # callable: full predict
    np.testing.assert_array_equal(fast.importances, full.importances)
    np.testing.assert_array_equal(fast.baseline, full.baseline)
    assert full.n_rows_predicted == X.shape[1] * 2 * X.shape[0]
    assert fast.n_rows_predicted < full.n_rows_predicted
    within_fast = permutation_importance(booster, X, y, strategy="within_query", **kw)
    within_full = permutation_importance(CallableModel(booster), X, y, strategy="within_query", **kw)
    np.testing.assert_array_equal(within_fast.importances, within_full.importances)


def test_xgboost_booster_is_wrapped_in_a_dmatrix_and_matches_full_prediction(real):
    xgb = pytest.importorskip("xgboost")
    X, y, qid, sizes = real["X"][:, :12].copy(), real["y"], real["qid"], real["sizes"]
    X[np.random.default_rng(0).random(X.shape) < 0.1] = np.nan  # missing values
    dtrain = xgb.DMatrix(X, label=y)
    dtrain.set_group(sizes)
    booster = xgb.train({"objective": "rank:ndcg", "max_depth": 3, "nthread": 1, "seed": 0},
                        dtrain, num_boost_round=8)
    kw = {"qid": qid, "n_repeats": 2, "random_state": 0, "progress": False}
    fast = permutation_importance(booster, X, y, **kw)
    full = permutation_importance(lambda Z: booster.predict(xgb.DMatrix(Z)), X, y, **kw)
    np.testing.assert_array_equal(fast.importances, full.importances)
    assert fast.n_rows_predicted < full.n_rows_predicted  # threshold codes skip rows
    assert fast.importances_mean.max() > 0
    unused = [j for j in range(12) if f"f{j}" not in booster.get_score(importance_type="weight")]
    assert np.all(fast.importances[unused] == 0.0)
    ranker = xgb.XGBRanker(n_estimators=5, max_depth=3, n_jobs=1, random_state=0)
    ranker.fit(X, y, qid=qid)
    fast = permutation_importance(ranker, X, y, strategy="within_query", **kw)
    full = permutation_importance(lambda Z: ranker.predict(Z), X, y, strategy="within_query", **kw)
    np.testing.assert_array_equal(fast.importances, full.importances)


@pytest.mark.parametrize("zero_as_missing", [False, True])
def test_leaf_walk_matches_lightgbm_pred_leaf_with_missing_values(zero_as_missing):
    from ltr.inspection._tree_changes import _parse_lgb_trees
    from ltr.kernels._tree_predict import _tree_leaves

    rng = np.random.default_rng(1)
    X = rng.normal(size=(3000, 6))
    X[rng.random(X.shape) < 0.15] = np.nan
    X[rng.random(X.shape) < 0.15] = 0.0
    X[:, 5] = np.round(X[:, 5], 1)  # ties at thresholds
    y = np.clip(np.nan_to_num(X[:, 0]) + np.isnan(X[:, 1]) + (X[:, 2] == 0) + 1, 0, 4).round()
    params = dict(LGB_PARAMS, num_leaves=31, min_data_in_leaf=5, zero_as_missing=zero_as_missing)
    booster = lgb.train(params, lgb.Dataset(X, y, group=[100] * 30), num_boost_round=20)
    trees = _parse_lgb_trees(booster)
    decisions = set(((trees.decision >> 2) & 3).tolist())
    assert decisions & {1, 2}, "the model should have splits with a missing-value rule"
    ids = np.arange(booster.num_trees(), dtype=np.int64)
    leaves = np.empty((len(X), len(ids)), dtype=np.int32)
    _tree_leaves(0, len(X), X, trees.start, trees.feature, trees.threshold, trees.decision,
                 trees.left, trees.right, trees.strict, leaves)
    np.testing.assert_array_equal(leaves, booster.predict(X, pred_leaf=True))
    # first node on a column along each root->leaf path, against a direct walk of the tree
    first = trees.first_nodes([2], ids)
    for t in (0, 7):
        for leaf in range(trees.paths.shape[1]):
            path = [n for n in trees.paths[t, leaf] if n >= 0]
            on_col = [n for n in path if trees.feature[trees.start[t] + n] == 2]
            assert first[t, leaf] == (on_col[0] if on_col else -1)
    # the shortcut then gives exactly the numbers of full re-prediction
    qid = np.repeat(np.arange(30), 100)
    kw = {"qid": qid, "n_repeats": 2, "random_state": 0, "progress": False}
    for strategy in ("global", "within_query"):
        fast = permutation_importance(booster, X, y, strategy=strategy, **kw)
        full = permutation_importance(CallableModel(booster), X, y, strategy=strategy, **kw)
        np.testing.assert_array_equal(fast.importances, full.importances)
        assert fast.n_rows_predicted < full.n_rows_predicted


# --------------------------------------------------------------------------- behaviour
def test_feature_never_split_on_has_exactly_zero_importance(real):
    X, y, qid, ranker = real["X"], real["y"], real["qid"], real["ranker"]
    splits = ranker.booster_.feature_importance("split")
    res = permutation_importance(ranker, X, y, qid=qid, n_repeats=3, random_state=0,
                                 progress=False)
    assert (splits == 0).sum() >= 5
    assert np.all(res.importances[splits == 0] == 0.0)  # exactly, every repeat
    assert np.all(res.ci_low[splits == 0] == 0.0) and np.all(res.ci_high[splits == 0] == 0.0)
    assert np.any(res.importances[splits > 0] != 0.0)


def test_duplicated_feature_alone_and_as_a_group(real):
    X, y, qid, sizes = real["X"], real["y"], real["qid"], real["sizes"]
    a = 0  # the most useful column of the real-data subset
    X2 = np.hstack([X, X[:, [a]]])
    copy = X2.shape[1] - 1
    groups = {"a": [a], "a_copy": [copy], "pair": [a, copy]}

    # LightGBM breaks the exact tie between identical columns toward the first one.
    one = lgb.train(LGB_PARAMS, lgb.Dataset(X2, y, group=sizes), num_boost_round=15)
    assert one.feature_importance("split")[copy] == 0
    res = permutation_importance(one, X2, y, qid=qid, features=groups, n_repeats=3,
                                 random_state=0, progress=False)
    imp = dict(zip(res.feature_names, res.importances))
    assert np.all(imp["a_copy"] == 0.0)
    np.testing.assert_array_equal(imp["pair"], imp["a"])  # same permutation for the group
    assert imp["a"].mean() > 0.01

    # With column subsampling both copies are used: permuting one leaves the other.
    params = dict(LGB_PARAMS, feature_fraction_bynode=0.5)
    both = lgb.train(params, lgb.Dataset(X2, y, group=sizes), num_boost_round=15)
    assert np.all(both.feature_importance("split")[[a, copy]] > 0)
    res = permutation_importance(both, X2, y, qid=qid, features=groups, n_repeats=3,
                                 random_state=0, progress=False)
    mean = dict(zip(res.feature_names, res.importances_mean))
    assert mean["pair"] >= mean["a"] and mean["pair"] >= mean["a_copy"]
    assert mean["pair"] > 0.01


def test_group_uses_one_row_permutation_for_all_its_columns(real):
    X, y, qid = real["X"], real["y"], real["qid"]
    model = CallableModel(real["ranker"].booster_)
    permutation_importance(model, X, y, qid=qid, features={"g": [1, 2, 3]}, n_repeats=2,
                           random_state=0, progress=False)
    base, first = model.calls[0], model.calls[1]
    # one permutation: the rows of the three permuted columns move together
    perm_rows = {tuple(r) for r in first[:, 1:4]}
    assert perm_rows == {tuple(r) for r in base[:, 1:4]}
    np.testing.assert_array_equal(first[:, [0] + list(range(4, X.shape[1]))],
                                  base[:, [0] + list(range(4, X.shape[1]))])
    assert not np.array_equal(first[:, 1:4], base[:, 1:4])


def test_within_query_permutation_stays_inside_queries():
    offsets = np.array([0, 3, 3 + 5, 3 + 5 + 1, 3 + 5 + 1 + 4], dtype=np.int64)
    for perm in _within_query_permutations(offsets, 4, seed=12):
        assert sorted(perm.tolist()) == list(range(13))
        for q in range(4):
            block = perm[offsets[q]:offsets[q + 1]]
            assert np.all((block >= offsets[q]) & (block < offsets[q + 1]))


def test_within_query_gives_exactly_zero_for_a_query_constant_feature():
    from ltr.synthetic import make_ranking

    data = make_ranking(120, n_features=16, mean_docs=30, random_state=2)
    X, y, qid = data.X, data.y, data.qid
    off = data.offsets
    constant = [j for j in range(X.shape[1])
                if np.all(np.repeat(X[off[:-1], j], np.diff(off)) == X[:, j])]
    assert constant, "make_ranking should have query-level features"
    model = lgb.train(dict(LGB_PARAMS, min_data_in_leaf=5), lgb.Dataset(X, y, group=np.diff(off)),
                      num_boost_round=15)
    splits = model.feature_importance("split")
    used_constant = [j for j in constant if splits[j] > 0]
    assert used_constant, "the model should split on a query-level feature"
    kw = {"qid": qid, "n_repeats": 3, "random_state": 0, "progress": False}
    within = permutation_importance(model, X, y, strategy="within_query", **kw)
    glob = permutation_importance(model, X, y, strategy="global", **kw)
    assert np.all(within.importances[constant] == 0.0)
    assert np.any(glob.importances[used_constant] != 0.0)
    doc_level = [j for j in range(X.shape[1]) if j not in constant and splits[j] > 0]
    assert np.any(within.importances[doc_level] != 0.0)
    assert within.strategy == "within_query"
    assert "query-level features score 0" in within.to_markdown()


def test_max_queries_evaluates_whole_queries_only(real):
    X, y, qid = real["X"], real["y"], real["qid"]
    row_id = np.arange(len(y), dtype=np.float64)[:, None]
    Xi = np.hstack([X, row_id])  # the model ignores the last column; it identifies rows
    model = CallableModel(real["ranker"].booster_)
    res = permutation_importance(lambda Z: _record(model, Z), Xi, y, qid=qid, max_queries=17,
                                 features=[0, 1], n_repeats=2, random_state=4, progress=False)
    seen = np.sort(model.calls[0][:, -1].astype(np.int64))
    chosen = np.unique(qid[seen])
    assert res.n_queries == 17 == len(chosen)
    # every row of every chosen query, and nothing else
    np.testing.assert_array_equal(seen, np.flatnonzero(np.isin(qid, chosen)))
    assert res.n_rows == len(seen)
    # baseline equals nDCG computed directly on those queries
    sub = np.isin(qid, chosen)
    direct = ndcg(y[sub], real["ranker"].booster_.predict(X[sub]), qid=qid[sub], k=10)
    assert res.baseline == pytest.approx(float(direct), abs=1e-12)
    frac = permutation_importance(real["ranker"], X, y, qid=qid, max_queries=0.1, features=[0],
                                  n_repeats=1, random_state=4, progress=False)
    assert frac.n_queries == int(0.1 * len(np.unique(qid)))


def _record(model, Z):
    model.calls.append(np.array(Z, copy=True))
    return model.booster.predict(np.asarray(Z)[:, :-1])


def test_segments_report_per_segment_baseline_and_importance(real):
    X, y, qid, ranker = real["X"], real["y"], real["qid"], real["ranker"]
    n_q = len(real["sizes"])
    seg_of_query = np.array(["news", "shop", "video"])[np.arange(n_q) % 3]
    segments = seg_of_query[qid]
    opts = {"empty": 0.0}  # no skipped queries: segment means average back to the total
    res = permutation_importance(ranker, X, y, qid=qid, segments=segments, features=[0, 1, 2],
                                 n_repeats=2, random_state=0, progress=False, **opts)
    assert res.segment_labels == ["news", "shop", "video"]
    table = ndcg_by_segment(y, ranker.predict(X), segments=segments, qid=qid, k=10, **opts)
    np.testing.assert_allclose(res.segment_baseline, table["ndcg"].to_numpy(), atol=1e-12)
    counts = np.bincount(np.arange(n_q) % 3)
    w = counts / counts.sum()
    np.testing.assert_allclose(w @ res.segment_baseline, res.baseline, atol=1e-12)
    # overall ΔnDCG is the query-weighted mean of the per-segment ΔnDCG
    np.testing.assert_allclose(np.einsum("s,sfr->fr", w, res.segment_importances),
                               res.importances, atol=1e-12)
    frame = res.segment_frame()
    assert set(frame.columns) >= {"segment", "feature", "baseline", "importance_mean"}
    assert len(frame) == 3 * 3
    assert "per segment" in res.to_markdown()
    # row-level segments (mixed inside a query): each segment's sub-lists are ranked alone
    row_seg = np.where(np.arange(len(y)) % 2 == 0, "even", "odd")
    res2 = permutation_importance(ranker, X, y, qid=qid, segments=row_seg, features=[0],
                                  n_repeats=1, random_state=0, progress=False)
    even = row_seg == "even"
    direct = ndcg(y[even], ranker.predict(X)[even], qid=qid[even], k=10)
    assert res2.segment_baseline[0] == pytest.approx(float(direct), abs=1e-12)


def test_k_list_adds_a_k_axis_and_matches_single_k_runs(real):
    X, y, qid = real["X"][:, :10], real["y"], real["qid"]
    model = lgb.LGBMRanker(n_estimators=8, num_leaves=7, n_jobs=1, verbose=-1, random_state=0)
    model.fit(X, y, group=real["sizes"])
    kw = {"qid": qid, "n_repeats": 2, "random_state": 5, "progress": False}
    multi = permutation_importance(model, X, y, k=[1, 10], **kw)
    assert multi.k == (1, 10)
    assert multi.importances.shape == (2, 10, 2)
    assert multi.importances_mean.shape == (2, 10) and multi.baseline.shape == (2,)
    for i, kk in enumerate((1, 10)):
        single = permutation_importance(model, X, y, k=kk, **kw)
        assert single.k == kk and isinstance(single.baseline, float)
        np.testing.assert_array_equal(multi.importances[i], single.importances)
        np.testing.assert_array_equal(multi.at_k(kk).importances, single.importances)
    frame = multi.to_frame()
    assert set(frame["k"]) == {1, 10} and len(frame) == 20


def test_dataframe_input_keeps_names_and_permutes_columns(real):
    X, y, qid = real["X"][:, :8], real["y"], real["qid"]
    names = [f"feat_{i}" for i in range(8)]
    df = pd.DataFrame(X, columns=names)
    model = lgb.LGBMRanker(n_estimators=8, num_leaves=7, n_jobs=1, verbose=-1, random_state=0)
    model.fit(df, y, group=real["sizes"])
    kw = {"qid": qid, "n_repeats": 2, "random_state": 0, "progress": False}
    from_df = permutation_importance(model, df, y, **kw)
    assert from_df.feature_names == names
    from_np = permutation_importance(model.booster_, X, y, **kw)
    np.testing.assert_array_equal(from_df.importances, from_np.importances)
    # a generic model receives DataFrames with the original columns
    seen = []

    def frame_model(frame):
        assert isinstance(frame, pd.DataFrame) and list(frame.columns) == names
        seen.append(frame["feat_0"].to_numpy().copy())
        return model.booster_.predict(frame.to_numpy())

    generic = permutation_importance(frame_model, df, y, features=["feat_0", "feat_3"], **kw)
    assert generic.feature_names == ["feat_0", "feat_3"]
    np.testing.assert_array_equal(generic.importances, from_np.importances[[0, 3]])
    assert not np.array_equal(seen[1], seen[0])  # the column really was permuted
    np.testing.assert_array_equal(df.to_numpy(), X)  # caller's frame untouched


def test_pipeline_and_categorical_frame_equal_sklearn():
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler

    rng = np.random.default_rng(0)
    n = 600
    df = pd.DataFrame({"a": rng.normal(size=n), "b": rng.normal(size=n),
                       "cat": pd.Categorical(rng.choice(["x", "y", "z"], n))})
    y = ((df["a"] > 0).astype(int) + (df["cat"] == "x")).to_numpy().astype(float)
    qid = np.repeat(np.arange(30), 20)
    params = {"n_estimators": 10, "verbose": -1, "n_jobs": 1, "min_child_samples": 5}
    kw = {"n_repeats": 3, "random_state": 2}
    # categorical column: the frame path permutes it as a categorical, as sklearn does
    model = lgb.LGBMRanker(**params).fit(df, y, group=[20] * 30)
    ours = permutation_importance(model, df, y, qid=qid, progress=False, **kw)
    theirs = sk_permutation_importance(model, df, y, scoring=sorted_ndcg_scorer(qid), **kw)
    np.testing.assert_allclose(ours.importances, theirs.importances, rtol=0, atol=1e-12)
    assert ours.feature_names == ["a", "b", "cat"] and ours.importances_mean[2] > 0
    # a Pipeline is an opaque model: full re-prediction, still sklearn's numbers
    pipe = make_pipeline(StandardScaler(), lgb.LGBMRanker(**params))
    pipe.fit(df[["a", "b"]], y, lgbmranker__group=[20] * 30)
    ours = permutation_importance(pipe, df[["a", "b"]], y, qid=qid, progress=False, **kw)
    theirs = sk_permutation_importance(pipe, df[["a", "b"]], y, scoring=sorted_ndcg_scorer(qid),
                                       **kw)
    np.testing.assert_allclose(ours.importances, theirs.importances, rtol=0, atol=1e-12)


def test_parallel_workers_give_identical_results(real):
    X, y, qid = real["X"][:, :12], real["y"], real["qid"]
    model = lgb.LGBMRanker(n_estimators=8, num_leaves=7, n_jobs=1, verbose=-1, random_state=0)
    model.fit(X, y, group=real["sizes"])
    kw = {"qid": qid, "n_repeats": 2, "random_state": 0, "progress": False}
    serial = permutation_importance(model, X, y, **kw)
    threaded = permutation_importance(model, X, y, n_jobs=2, **kw)
    np.testing.assert_array_equal(serial.importances, threaded.importances)
    again = permutation_importance(model, X, y, **kw)
    np.testing.assert_array_equal(serial.importances, again.importances)


# --------------------------------------------------------------------------- reporting
@pytest.fixture(scope="module")
def small_result(real):
    return permutation_importance(real["ranker"], real["X"], real["y"], qid=real["qid"],
                                  features=[0, 1, 2, 36, 37], n_repeats=3, random_state=0,
                                  progress=False)


def test_result_exports_frame_json_markdown_plot_and_report(small_result, tmp_path):
    res = small_result
    assert isinstance(res, PermutationImportance)
    assert repr(res) == (f"PermutationImportance(5 features, 3 repeats, strategy='global', "
                         f"seed={res.seed}, nDCG@10={res.baseline:.4f})")
    frame = res.to_frame()
    assert list(frame["importance_mean"]) == sorted(frame["importance_mean"], reverse=True)
    assert {"feature", "importance_std", "ci_low", "ci_high", "baseline"} <= set(frame.columns)
    assert np.all(frame["ci_low"] <= frame["importance_mean"] + 1e-15)
    data = json.loads(res.to_json(tmp_path / "imp.json"))
    assert data["seed"] == res.seed and data["strategy"] == "global"
    assert np.allclose(data["importances"], res.importances)
    assert json.loads((tmp_path / "imp.json").read_text())["k"] == 10
    md = res.to_markdown()
    assert f"nDCG@10 = {res.baseline:.5f}" in md and f"seed: {res.seed}" in md
    assert "`global`" in md and "x0" in md
    fig = res.plot(tmp_path / "imp.png")
    assert (tmp_path / "imp.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    labels = [t.get_text() for t in fig.axes[0].get_yticklabels()]
    top = res.feature_names[int(np.argmax(res.importances_mean))]
    assert labels[-1] == top  # largest bar on top
    out = res.report(tmp_path / "rep" / "importance.md")
    assert (tmp_path / "rep" / "importance.png").exists()
    assert "![permutation importance](importance.png)" in out.read_text()


def test_t_interval_matches_closed_form(small_result):
    from scipy import stats

    imp = small_result.importances
    half = stats.t.ppf(0.975, 2) * imp.std(axis=1, ddof=1) / np.sqrt(3)
    np.testing.assert_allclose(small_result.ci_low, imp.mean(axis=1) - half)
    np.testing.assert_allclose(small_result.ci_high, imp.mean(axis=1) + half)


def test_progress_bar_only_when_asked(real, capsys):
    X, y, qid = real["X"][:, :3], real["y"], real["qid"]
    model = lambda Z: Z[:, 0] + 0.5 * Z[:, 1]
    permutation_importance(model, X, y, qid=qid, n_repeats=1, progress=True)
    assert "permutation importance" in capsys.readouterr().err
    permutation_importance(model, X, y, qid=qid, n_repeats=1)  # not a TTY: silent
    permutation_importance(model, X, y, qid=qid, n_repeats=1, progress=False)
    captured = capsys.readouterr()
    assert captured.err == "" and captured.out == ""


# --------------------------------------------------------------------------- bad input
@pytest.mark.parametrize(
    ("kwargs", "error", "match"),
    [
        ({"features": ["x0", "nope"]}, ValueError, "features names unknown feature 'nope'"),
        ({"features": [7]}, ValueError, "column index 7 but X has 4 columns"),
        ({"features": {"bm25": ["x0", "bm25_title"]}}, ValueError,
         r"features\['bm25'\] names unknown feature 'bm25_title'"),
        ({"features": {"g": []}}, ValueError, r"features\['g'\] must list at least one column"),
        ({"n_repeats": 0}, ValueError, "n_repeats must be >= 1, got 0"),
        ({"n_repeats": 2.5}, TypeError, "n_repeats must be an integer"),
        ({"k": 0}, ValueError, "k must be >= 1, got 0"),
        ({"k": [5, 0]}, ValueError, r"k\[1\] must be >= 1, got 0"),
        ({"strategy": "per_query"}, ValueError, "strategy must be one of .* got 'per_query'"),
        ({"qid": np.zeros(5)}, ValueError, "qid has 5 entries but X has 12 rows"),
        ({"segments": ["a"] * 3}, ValueError, "segments must have one category per row"),
        ({"max_queries": 0}, ValueError, "max_queries must be >= 1, got 0"),
        ({"max_queries": 1.5}, ValueError, r"max_queries as a fraction must be in \(0, 1\], got 1.5"),
        ({"random_state": "seed"}, TypeError, "random_state must be an int"),
        ({"progress": "yes"}, TypeError, "progress must be a bool or None"),
    ],
)
def test_rejects_bad_arguments_with_informative_errors(kwargs, error, match):
    rng = np.random.default_rng(0)
    X = rng.normal(size=(12, 4))
    y = rng.integers(0, 3, 12).astype(float)
    args = {"qid": np.repeat([0, 1, 2], 4), "progress": False}
    args.update(kwargs)
    with pytest.raises(error, match=match):
        permutation_importance(lambda Z: Z[:, 0], X, y, **args)


def test_rejects_models_without_predict_and_bad_predictions():
    X = np.zeros((4, 2))
    y = np.array([1.0, 0.0, 1.0, 0.0])
    qid = np.array([0, 0, 1, 1])
    with pytest.raises(TypeError, match="model must have a predict method.*'not a model'"):
        permutation_importance("not a model", X, y, qid=qid)
    with pytest.raises(ValueError, match=r"one score per row \(4\), got shape \(3,\)"):
        permutation_importance(lambda Z: np.zeros(3), X, y, qid=qid)
    with pytest.raises(ValueError, match="y has 3 rows but X has 4"):
        permutation_importance(lambda Z: Z[:, 0], X, y[:3], qid=qid)
    with pytest.raises(ValueError, match=r"X must be 2-D .* got shape \(4,\)"):
        permutation_importance(lambda Z: Z, y, y, qid=qid)

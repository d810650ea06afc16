"""ltr.dask: distributed training, prediction and evaluation on a 2-process LocalCluster."""

from __future__ import annotations

import warnings

import numpy as np
import pandas as pd
import pytest

pytest.importorskip("distributed")
pytest.importorskip("xgboost")

import dask
import dask.dataframe as dd
from distributed import Client, LocalCluster

import ltr.dask as ldask
from ltr.engines import RankingModel
from ltr.engines import train as local_train
from ltr.metrics import ndcg
from ltr.objectives import LambdaRankObjective
from ltr.schedules import Steps
from ltr.synthetic import make_ranking


@pytest.fixture(scope="module")
def client():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        cluster = LocalCluster(
            n_workers=2, threads_per_worker=1, processes=True, host="127.0.0.1",
            dashboard_address=None,
        )
    c = Client(cluster)
    yield c
    c.close()
    cluster.close()


def _frame(n_queries, *, n_features=5, mean_docs=20, max_docs=60, levels=None, seed=0):
    d = make_ranking(n_queries, n_features=n_features, mean_docs=mean_docs, max_docs=max_docs,
                     random_state=seed)
    X = d.X.astype(np.float64)
    if levels is not None:  # at most `levels` distinct values per feature: same bins everywhere
        lo, hi = X.min(axis=0), X.max(axis=0)
        X = np.round((X - lo) / np.where(hi > lo, hi - lo, 1.0) * (levels - 1))
    df = pd.DataFrame(X, columns=[f"f{j}" for j in range(X.shape[1])])
    df["y"] = d.y.astype(np.float64)
    df["qid"] = np.repeat(np.arange(len(d.offsets) - 1), np.diff(d.offsets)) + 1000 * seed
    return df


def _split_queries(df, npartitions, seed=0):
    """Rows in a random order, so most queries are spread over several partitions."""
    shuffled = df.sample(frac=1.0, random_state=seed).reset_index(drop=True)
    return dd.from_pandas(shuffled, npartitions=npartitions, sort=False)


def _collect(frame):
    """The shuffled frame's rows in partition order, and their query offsets."""
    pdf = frame.compute()
    q = pdf["qid"].to_numpy()
    starts = np.flatnonzero(np.r_[True, q[1:] != q[:-1]])
    return pdf, np.r_[starts, len(q)].astype(np.int64)


def test_shuffle_repairs_partitions_that_split_queries(client):
    df = _frame(60)
    ddf = _split_queries(df, 4)
    before = ddf.map_partitions(lambda p: pd.Series(p["qid"].unique())).compute()
    assert before.duplicated().any()  # queries are split
    frame, layout = ldask.shuffle_by_query(ddf, "qid", label="y", npartitions=3, client=client)
    parts = [frame.get_partition(i).compute() for i in range(frame.npartitions)]
    seen = [set(p["qid"]) for p in parts]
    assert all(not (a & b) for i, a in enumerate(seen) for b in seen[i + 1:])
    for p in parts:
        assert p["qid"].is_monotonic_increasing
    assert layout.n_rows == len(df) and layout.n_queries == df["qid"].nunique()
    assert sorted(pd.concat(parts).index) == sorted(df.index)


def test_xgboost_with_our_objective_reproduces_single_machine(client):
    df = _frame(150, levels=32)
    ddf = _split_queries(df, 4)
    obj = LambdaRankObjective(k=10, schedule=Steps([(3, 20), (10, 30)]))
    model = ldask.train(client, ddf, label="y", qid="qid", engine="xgboost", objective=obj,
                        num_boost_round=50, params={"max_depth": 4})
    assert isinstance(model, RankingModel) and model.num_trees() == 50
    assert obj.iteration == 0  # the caller's objective is not advanced
    frame, _ = ldask.shuffle_by_query(ddf, "qid", npartitions=max(4, 2), client=client)
    pdf, offsets = _collect(frame)
    feats = [f"f{j}" for j in range(5)]
    ref = local_train(pdf[feats].to_numpy(), pdf["y"].to_numpy(), offsets, engine="xgboost",
                      objective=LambdaRankObjective(k=10, schedule=Steps([(3, 20), (10, 30)])),
                      num_boost_round=50, params={"max_depth": 4})
    X = df[feats]
    np.testing.assert_allclose(model.predict(X), ref.predict(X.to_numpy()), rtol=0, atol=1e-6)
    dist = ldask.predict(model, dd.from_pandas(df, npartitions=3)).compute()
    np.testing.assert_allclose(dist.to_numpy(), model.predict(X), rtol=0, atol=1e-12)


def test_lightgbm_distributed_ndcg_within_tolerance_of_single_machine(client):
    train_df = _frame(800, seed=1)
    test_df = _frame(2000, seed=2, mean_docs=10, max_docs=30)
    feats = [f"f{j}" for j in range(5)]
    params = {"num_leaves": 15, "min_data_in_leaf": 20}
    model = ldask.train(client, _split_queries(train_df, 4), label="y", qid="qid",
                        engine="lightgbm", k=10, num_boost_round=20, params=params)
    q = train_df["qid"].to_numpy()
    offsets = np.r_[np.flatnonzero(np.r_[True, q[1:] != q[:-1]]), len(q)]
    ref = local_train(train_df[feats].to_numpy(), train_df["y"].to_numpy(), offsets,
                      engine="lightgbm", k=10, num_boost_round=20, params=params)
    tq = test_df["qid"].to_numpy()
    t_off = np.r_[np.flatnonzero(np.r_[True, tq[1:] != tq[:-1]]), len(tq)]
    got = float(ndcg(test_df["y"], model.predict(test_df[feats]), offsets=t_off, k=10))
    want = float(ndcg(test_df["y"], ref.predict(test_df[feats].to_numpy()), offsets=t_off, k=10))
    assert abs(got - want) < 0.005, (got, want)


def test_query_over_10000_rows_trains_through_our_objective_not_native(client, tmp_path):
    rng = np.random.default_rng(0)
    sizes = [10_500, 30, 40, 25]
    n = sum(sizes)
    df = pd.DataFrame({"f0": rng.normal(size=n), "f1": rng.normal(size=n)})
    df["y"] = (df["f0"] + rng.normal(scale=0.5, size=n) > 1).astype(np.float64)
    df["qid"] = np.repeat([7, 8, 9, 10], sizes)
    ddf = dd.from_pandas(df, npartitions=2)
    with pytest.raises(ValueError, match=r"query 7 has 10500 rows.*10000 rows"):
        ldask.train(client, ddf, label="y", qid="qid", engine="lightgbm", num_boost_round=2)
    model = ldask.train(client, ddf, label="y", qid="qid", engine="lightgbm",
                        objective=LambdaRankObjective(k=10), num_boost_round=5)
    assert model.num_trees() == 5
    loaded = RankingModel.load(model.save(tmp_path / "m.json"))
    np.testing.assert_array_equal(loaded.predict(df[["f0", "f1"]]), model.predict(df[["f0", "f1"]]))


def test_distributed_metrics_equal_local_ones(client):
    df = _frame(120, seed=3)
    df["score"] = np.random.default_rng(3).normal(size=len(df))
    df.loc[df["qid"] == df["qid"].iloc[0], "y"] = 0.0  # one query without relevant rows
    ddf = _split_queries(df, 5)
    names = ["ndcg@10", "ndcg@5:sklearn", "ndcg", "dcg@3"]
    res = ldask.evaluate(ddf, names, label="y", score="score", qid="qid")
    frame, _ = ldask.shuffle_by_query(ddf[["qid", "y", "score"]], "qid", client=client)
    pdf, offsets = _collect(frame)
    y, s = pdf["y"].to_numpy(), pdf["score"].to_numpy()
    for name, kw in zip(names, [dict(k=10), dict(k=5, convention="sklearn"), dict(k=None), None]):
        if kw is None:
            continue
        per_q = ndcg(y, s, offsets=offsets, reduce=None, **kw)
        got = res.per_query.loc[pdf["qid"].to_numpy()[offsets[:-1]], name].to_numpy()
        np.testing.assert_allclose(got, per_q, rtol=0, atol=1e-12, equal_nan=True)
        assert abs(res.mean[name] - float(ndcg(y, s, offsets=offsets, **kw))) < 1e-12
    assert res.n_queries == df["qid"].nunique()


def test_train_rejects_bad_input_with_informative_errors_before_training(client):
    df = _frame(30)
    ddf = dd.from_pandas(df, npartitions=2)
    with pytest.raises(ValueError, match="qid='query'.*not a column"):
        ldask.train(client, ddf, label="y", qid="query")
    with pytest.raises(ValueError, match="features='nope'.*not a column"):
        ldask.train(client, ddf, label="y", qid="qid", features=["f0", "nope"])
    with pytest.raises(TypeError, match="dask.dataframe.DataFrame"):
        ldask.train(client, df, label="y", qid="qid")
    bad = df.copy()
    bad.loc[5, "y"] = np.nan
    with pytest.raises(ValueError, match="label column 'y' must be finite.*nan"):
        ldask.train(client, dd.from_pandas(bad, npartitions=2), label="y", qid="qid")
    empty = dd.from_pandas(df.iloc[:0], npartitions=1)
    with pytest.raises(ValueError, match="no rows"):
        ldask.train(client, empty, label="y", qid="qid")
    with pytest.raises(ValueError, match="eval_sets are not supported"):
        ldask.train(client, ddf, label="y", qid="qid", eval_sets=[("valid", ddf)])
    with pytest.raises(ValueError, match="native objective takes one k"):
        ldask.train(client, ddf, label="y", qid="qid", schedule=[(3, 2), (5, 2)])


def test_empty_partitions_are_dropped_and_training_proceeds(client):
    df = _frame(40)
    parts = [df.iloc[:0], df.iloc[:300], df.iloc[:0], df.iloc[300:]]
    ddf = dd.from_delayed([dask.delayed(p) for p in parts], meta=df.iloc[:0])
    _, layout = ldask.shuffle_by_query(ddf, "qid", npartitions=6, client=client)
    assert (layout.rows > 0).all() and layout.n_rows == len(df)
    model = ldask.train(client, ddf, label="y", qid="qid", engine="xgboost", num_boost_round=3)
    assert model.num_trees() == 3

"""ltr.dask with categorical columns: the same coding and trees as single-machine training."""

from __future__ import annotations

import dask.dataframe as dd
import numpy as np
import pandas as pd
import pytest

import ltr.dask as ldask
from ltr.engines import train as local_train

IDS = np.array([3, 7, 11, 15, 20, 42])
EFFECT = np.array([0.0, 2.0, -1.0, 1.0, 0.5, -0.5])
DASK_WORKERS = 1  # one worker: LightGBM bins as in one process, so the same trees


@pytest.fixture(scope="module")
def client(dask_client):
    return dask_client


def _frame(n_queries: int, seed: int) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    n = n_queries * 12
    level = rng.integers(0, len(IDS), n)
    x = np.round(rng.normal(size=n) * 4) / 4  # few distinct values: the same bins everywhere
    s = EFFECT[level] + 0.5 * x + 0.5 * rng.normal(size=n)
    y = np.digitize(s, np.quantile(s, [0.5, 0.8, 0.95])).astype(np.float64)
    return pd.DataFrame({"x": x, "cat": IDS[level].astype(np.float64), "y": y,
                         "qid": np.repeat(np.arange(n_queries), 12)})


# slow: among the costliest default tests (issue 25: default run <= 4 min); CI runs it (-m slow)
@pytest.mark.slow
@pytest.mark.parametrize("engine", ["lightgbm", "xgboost"])
def test_dask_training_codes_and_trains_like_single_machine(client, engine):
    # lightgbm.dask sets up its network per fit: ~15 s whatever the data size
    df = _frame(60, 0)
    ddf = dd.from_pandas(df, npartitions=1)
    params = {"num_leaves": 7, "min_data_in_leaf": 5} if engine == "lightgbm" else {"max_depth": 3}
    model = ldask.train(client, ddf, label="y", qid="qid", features=["x", "cat"],
                        engine=engine, k=10, num_boost_round=5, params=params,
                        categorical=["cat"])
    assert model.categorical.names == ("cat",)
    assert model.categorical.categories == (tuple(sorted(IDS.tolist())),)
    offsets = np.arange(0, len(df) + 1, 12)
    ref = local_train(df[["x", "cat"]].to_numpy(), df["y"].to_numpy(), offsets, engine=engine,
                      k=10, num_boost_round=5, params=params, categorical=[1],
                      feature_names=["x", "cat"])
    assert ref.categorical.categories == model.categorical.categories
    test = _frame(10, 1)[["x", "cat"]]
    test.loc[0, "cat"] = 999.0  # unseen: missing on both
    np.testing.assert_allclose(model.predict(test), ref.predict(test.to_numpy()), rtol=0,
                               atol=1e-6)
    dist = ldask.predict(model, dd.from_pandas(test, npartitions=2)).compute()
    np.testing.assert_array_equal(dist.to_numpy(), model.predict(test))

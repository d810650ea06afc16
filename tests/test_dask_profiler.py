"""ltr.dask: the workers' statistical profiler is paused while a stage trains, and restarted."""

from __future__ import annotations

import sys

import numpy as np
import pandas as pd
import pytest

pytest.importorskip("distributed")
pytest.importorskip("xgboost")

import cloudpickle
import dask.dataframe as dd

import ltr.dask as ldask
from ltr.dask import _workers as dask_workers
from ltr.synthetic import make_ranking


def _frame():
    d = make_ranking(40, n_features=4, mean_docs=15, max_docs=30, random_state=0)
    df = pd.DataFrame(d.X, columns=[f"f{j}" for j in range(4)])
    df["y"] = d.y.astype(np.float64)
    df["qid"] = np.repeat(np.arange(len(d.offsets) - 1), np.diff(d.offsets))
    return dd.from_pandas(df, npartitions=4, sort=False)


def _profiling(dask_worker=None):
    return dask_worker.periodic_callbacks["profile"].is_running()


def _stages_left():
    return len(dask_workers._STATE)


def _probe(fail_at=None):
    """A round callback for either engine (pickled by value): the profiler's state each round.

    It raises when the profiler runs during a round, and a ``ValueError`` at round
    *fail_at* (a stage that fails for a reason of its own, not the cluster's).
    """
    from xgboost.callback import TrainingCallback

    def check(round_):
        from distributed import get_worker

        if get_worker().periodic_callbacks["profile"].is_running():
            raise RuntimeError("the worker's profiler runs during the stage")
        if round_ == fail_at:
            raise ValueError("a stage that fails on its own")

    class Probe(TrainingCallback):
        def __call__(self, env):  # LightGBM
            check(env.iteration - env.begin_iteration)

        def after_iteration(self, model, epoch, evals_log):  # XGBoost
            check(epoch)
            return False

    return Probe()


def _with_probe(monkeypatch, engine, fail_at=None):
    name = f"{engine}_callbacks"
    original = getattr(dask_workers, name)

    def with_probe(token, **kw):
        return [*original(token, **kw), _probe(fail_at)]

    monkeypatch.setattr(dask_workers, name, with_probe)
    cloudpickle.register_pickle_by_value(sys.modules[__name__])


@pytest.fixture
def by_value():
    yield
    cloudpickle.unregister_pickle_by_value(sys.modules[__name__])


@pytest.mark.parametrize("engine", ["lightgbm", "xgboost"])
def test_every_round_of_a_stage_runs_with_the_profiler_paused_and_it_restarts_after(
        dask_client, monkeypatch, by_value, engine):
    assert all(dask_client.run(_profiling).values())  # the default configuration samples
    _with_probe(monkeypatch, engine)
    model = ldask.train(dask_client, _frame(), label="y", qid="qid", engine=engine,
                        schedule=[(3, 2), (5, 2)])
    assert model.num_trees() == 4  # both stages ran every round under the probe
    assert all(dask_client.run(_profiling).values())
    assert not any(dask_client.run(_stages_left).values())


def test_a_stage_that_fails_restarts_the_profiler_and_leaves_no_state_on_the_workers(
        dask_client, monkeypatch, by_value):
    _with_probe(monkeypatch, "lightgbm", fail_at=1)
    with pytest.raises(ValueError, match="a stage that fails on its own"):
        ldask.train(dask_client, _frame(), label="y", qid="qid", num_boost_round=3)
    assert all(dask_client.run(_profiling).values())
    assert not any(dask_client.run(_stages_left).values())

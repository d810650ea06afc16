"""Distributed runs from a config: the cluster section, parquet globs, faults and resume."""

from __future__ import annotations

import json
import os
import time
import warnings

import numpy as np
import pandas as pd
import pytest

pytestmark = pytest.mark.slow  # clusters started, workers killed: CI runs these (-m slow)

pytest.importorskip("distributed")

from distributed import Client, LocalCluster

import ltr.dask._workers as dask_workers
from ltr.runs import train_run
from ltr.runs.commands import importance_run, validate
from ltr.runs.config import ConfigError, RunError, parse_config
from ltr.synthetic import make_ranking


def _cluster():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        cluster = LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                               host="127.0.0.1", dashboard_address=None)
    return cluster, Client(cluster, set_as_default=False)  # ltr must pass its own client


@pytest.fixture(scope="module")
def cluster():
    cl, client = _cluster()
    yield cl, client
    client.close()
    cl.close()


def _parquet(folder, n_queries=90, n_files=3):
    d = make_ranking(n_queries, n_features=5, mean_docs=15, max_docs=40, random_state=0)
    df = pd.DataFrame(d.X, columns=[f"f{j}" for j in range(5)])
    df.insert(0, "label", d.y.astype(np.float64))
    df.insert(0, "qid", np.repeat(np.arange(n_queries), np.diff(d.offsets)))
    folder.mkdir()
    bounds = np.linspace(0, len(df), n_files + 1).astype(int)
    for i in range(n_files):  # files cut through queries: the shuffle makes them whole
        df.iloc[bounds[i]:bounds[i + 1]].to_parquet(folder / f"part-{i}.parquet")
    return str(folder / "part-*.parquet")


def _config(tmp_path, train, cluster=None, **sections):
    raw = {
        "data": {"source": "parquet", "train": train, "split": {"valid": 0.2, "test": 0.2}},
        "model": {"engine_params": {"min_data_in_leaf": 5},
                  "schedule": {"steps": [{"k": 3, "rounds": 3}, {"k": 5, "rounds": 3}]}},
        "output": {"runs_dir": str(tmp_path / "runs")},
    }
    if cluster is not None:
        raw["cluster"] = cluster
    for key, value in sections.items():
        raw.setdefault(key, {}).update(value)
    return parse_config(raw)


def test_cluster_section_rejects_bad_settings_naming_the_key(tmp_path):
    glob = _parquet(tmp_path / "data", n_queries=10, n_files=2)
    cases = {
        "cluster.address: give either 'address'.*or 'local'.*not both":
            {"address": "tcp://127.0.0.1:8786", "local": {}},
        "cluster.address: give 'address: tcp://host:port'": {},
        r"cluster.local.workers: unknown key \(allowed: n_workers": {"local": {"workers": 2}},
        "cluster.local.n_workers: must be >= 1, got 0": {"local": {"n_workers": 0}},
        "cluster.address: must look like 'tcp://host:port', got 'localhost:8786'":
            {"address": "localhost:8786"},
        "cluster.local.memory_limit: must be a size": {"local": {"memory_limit": "lots"}},
    }
    for message, section in cases.items():
        with pytest.raises(ConfigError, match=message):
            _config(tmp_path, glob, section)
    with pytest.raises(ConfigError, match="data.train: no file matches 'nothing-\\*.parquet'"):
        train_run(_config(tmp_path, "nothing-*.parquet", {"local": {}}))
    unbiased = _config(tmp_path, glob, {"local": {}}, data={"position": "f0", "click": "label"},
                       model={"objective": "lambdarank", "unbiased": True, "schedule": None})
    with pytest.raises(RunError, match="model.unbiased: position-bias.*not supported on a "
                                       "Dask cluster.*one process"):
        train_run(unbiased)
    term = _config(tmp_path, glob, {"local": {}}, data={"position": "f0", "click": "label"},
                   model={"position_term": True, "schedule": None})
    with pytest.raises(RunError, match="model.position_term: position-bias.*not supported"):
        train_run(term)


def test_unreachable_scheduler_is_named_within_the_timeout(tmp_path):
    glob = _parquet(tmp_path / "data", n_queries=10, n_files=1)
    t0 = time.perf_counter()
    with pytest.raises(RunError, match=r"cluster.address: no Dask scheduler answered at "
                                       r"'tcp://127.0.0.1:9' within 2 s"):
        train_run(_config(tmp_path, glob, {"address": "tcp://127.0.0.1:9", "timeout": 2}))
    assert time.perf_counter() - t0 < 10
    assert not (tmp_path / "runs").exists()  # no run folder for a run that never started


def test_config_run_on_a_cluster_reads_a_parquet_glob_and_writes_the_run_folder(
    cluster, tmp_path, monkeypatch
):
    _, client = cluster
    glob = _parquet(tmp_path / "data")
    cfg = _config(tmp_path, glob, {"address": client.scheduler.address},
                  model={"early_stopping_rounds": 2})
    result = train_run(cfg, out=tmp_path / "run")
    run = result.run_dir
    for name in ("DONE", "model.json", "model.lightgbm.txt", "metrics.json", "report.md",
                 "config.yaml"):
        assert (run / name).exists(), name
    stages = json.loads((run / "models" / "stages.json").read_text())["stages"]
    assert [s["k"] for s in stages] == [3, 5]
    assert set(result.final) == {"valid", "test"}
    assert 0 < result.final["test"]["ndcg@10"] <= 1
    model = json.loads((run / "model.json").read_text())
    assert model["params"]["distributed"]["workers"] == 2
    # the same config in one process reads the same glob (file by file)
    local = train_run(_config(tmp_path, glob), out=tmp_path / "local")
    assert set(local.final) == {"valid", "test"}

    # importance and validate --load-data of the cluster run read the glob on the cluster
    from ltr.runs import cluster_config

    def no_local_read(pattern):
        raise AssertionError(f"{pattern} read in this process")

    monkeypatch.setattr(cluster_config, "read_files", no_local_read)
    before = json.loads((run / "metrics.json").read_text())["data"]
    assert set(before) == {"valid", "test"}  # the training rows never came here
    again = importance_run(run, n_repeats=1)
    assert (run / "importance.csv").exists() and again.run_dir == run
    config = tmp_path / "cluster.yaml"
    config.write_text((run / "config.yaml").read_text())
    assert validate(config, load=True).cluster is not None


def test_worker_lost_mid_stage_fails_clearly_and_the_run_resumes(tmp_path, monkeypatch):
    cl, client = _cluster()
    try:
        cfg = parse_config({
            "data": {"synthetic": {"n_queries": 60, "n_features": 5}},
            "model": {"engine_params": {"min_data_in_leaf": 5},
                      "schedule": {"steps": [{"k": 3, "rounds": 3}, {"k": 5, "rounds": 3},
                                             {"k": 10, "rounds": 3}]}},
            "cluster": {"address": client.scheduler.address},
            "output": {"runs_dir": str(tmp_path / "runs")},
        })
        original = dask_workers.lightgbm_callbacks

        def kill_one_worker(env):  # runs on the workers (pickled by value)
            from distributed import get_worker

            if env.iteration == 4 and get_worker().name == 0:
                os._exit(1)

        kill_one_worker.order = 50
        kill_one_worker.before_iteration = False

        def with_killer(token, **kw):
            out = original(token, **kw)
            return out + [kill_one_worker] if kw["stage_k"] == 5 else out

        monkeypatch.setattr(dask_workers, "lightgbm_callbacks", with_killer)
        run = tmp_path / "run"
        t0 = time.perf_counter()
        with pytest.raises(RunError, match=r"cluster: training stage 1 \(k=5\) failed on the "
                                           r"cluster.*ltr train --resume"):
            train_run(cfg, out=run)
        assert time.perf_counter() - t0 < 120
        index = json.loads((run / "models" / "stages.json").read_text())["stages"]
        assert [s["k"] for s in index] == [3]
        first = (run / "models" / index[0]["file"]).read_bytes()
        monkeypatch.setattr(dask_workers, "lightgbm_callbacks", original)
        client.wait_for_workers(2, timeout=60)  # the nanny restarts the lost worker
        result = train_run(None, resume=run)
        index = json.loads((run / "models" / "stages.json").read_text())["stages"]
        assert [s["k"] for s in index] == [3, 5, 10]
        assert (run / "models" / index[0]["file"]).read_bytes() == first  # loaded, not retrained
        assert (run / "DONE").exists() and result.metrics["n_trees"] == 9
    finally:
        client.close()
        cl.close()


def test_cli_train_names_the_cluster_key_and_the_scheduler(tmp_path, capsys):
    from ltr.cli import main

    glob = _parquet(tmp_path / "data", n_queries=10, n_files=1)
    config = tmp_path / "run.yaml"
    config.write_text(
        f"data: {{source: parquet, train: '{glob}'}}\n"
        "cluster: {address: 'tcp://127.0.0.1:9', timeout: 1}\n"
        f"output: {{runs_dir: '{tmp_path / 'runs'}'}}\n"
    )
    assert main(["train", str(config), "--set", "cluster.local.n_workers=0"]) != 0
    assert "cluster.local.n_workers: must be >= 1, got 0" in capsys.readouterr().err
    assert main(["train", str(config)]) != 0
    err = capsys.readouterr().err
    assert "cluster.address: no Dask scheduler answered at 'tcp://127.0.0.1:9' within 1 s" in err


def test_cluster_example_config_validates_and_trains_reduced(tmp_path, capsys):
    from pathlib import Path

    from ltr.cli import main
    from ltr.runs import load_config

    example = Path(__file__).resolve().parent.parent / "configs" / "cluster.yaml"
    assert main(["validate", str(example)]) == 0
    assert "engine xgboost, objective lambdarank" in capsys.readouterr().out
    cfg = load_config(example, [
        "data.synthetic.n_queries=60", "data.synthetic.n_features=5",
        "data.synthetic.mean_docs=10", "data.synthetic.max_docs=20",
        "model.schedule.steps=[{k: 3, rounds: 3}, {k: 5, rounds: 3}]",
        "importance.n_repeats=1", f"output.runs_dir={tmp_path / 'runs'}",
    ])
    assert cfg.cluster is not None and cfg.cluster.local is not None
    assert (cfg.cluster.local.n_workers, cfg.cluster.local.threads_per_worker) == (2, 1)
    result = train_run(cfg, out=tmp_path / "run")  # starts the configured LocalCluster
    model = json.loads((result.run_dir / "model.json").read_text())
    assert model["params"]["distributed"]["workers"] == 2
    stages = json.loads((result.run_dir / "models" / "stages.json").read_text())["stages"]
    assert [s["k"] for s in stages] == [3, 5]
    assert (result.run_dir / "importance.csv").exists()
    assert 0 < result.final["test"]["ndcg@10"] <= 1
    # the shuffle before training is announced (ltr.notice: stderr on the CLI, and run.log)
    assert "cluster: moving the training rows so that each query is whole in one partition" in (
        result.run_dir / "run.log").read_text()


@pytest.mark.parametrize("fault", ["interrupt", "lost"])
def test_a_cluster_run_stopped_before_its_first_stage_leaves_no_folder(cluster, tmp_path,
                                                                       monkeypatch, fault):
    from ltr.dask import DistributedTrainingError
    from ltr.dask._placement import DaskPlacement
    from ltr.runs.errors import RunInterrupted

    _, client = cluster
    cfg = _config(tmp_path, _parquet(tmp_path / "data", n_queries=30, n_files=2),
                  cluster={"address": client.scheduler.address})

    def stop(self, *args, **kwargs):  # after the shuffle, in the first stage
        if fault == "interrupt":
            raise KeyboardInterrupt
        raise DistributedTrainingError("training stage 0 (k=3) failed on the cluster: lost")

    monkeypatch.setattr(DaskPlacement, "train_stage", stop)
    expected = RunInterrupted if fault == "interrupt" else RunError
    with pytest.raises(expected, match="nothing kept|no stage had finished"):
        train_run(cfg)
    runs = tmp_path / "runs"
    assert not runs.exists() or list(runs.iterdir()) == []

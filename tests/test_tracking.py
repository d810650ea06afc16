"""MLflow tracking against real stores: an SQLite backend read back with MlflowClient, and a
``mlflow server`` process on localhost over HTTP.

What is logged is compared with what ltr itself wrote (metrics.json, the estimator's
evals_result_) and the logged pyfunc model's scores with ``ltr predict`` / ``predict``.
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from ltr.estimator import LambdaMARTRanker
from ltr.runs.commands import train_run
from ltr.runs.config import parse_config
from ltr.runs.score_cmd import predict_run
from ltr.runs.tune_cmd import tune_run
from ltr.synthetic import make_ranking

mlflow = pytest.importorskip("mlflow")  # in the test extra; skips only a bare install
from mlflow.tracking import MlflowClient

from ltr.tracking import MlflowCallback, mlflow_metric_name


@pytest.fixture(scope="module")
def store(tmp_path_factory) -> str:
    """One SQLite tracking store for the module (creating its tables takes seconds)."""
    return f"sqlite:///{tmp_path_factory.mktemp('mlflow') / 'mlflow.db'}"


def _runs(uri: str, experiment: str):
    client = MlflowClient(uri)
    exp = client.get_experiment_by_name(experiment)
    assert exp is not None, f"experiment {experiment!r} was not created"
    return client, client.search_runs([exp.experiment_id])


def _history(client, run_id, key):
    return [m.value for m in sorted(client.get_metric_history(run_id, key), key=lambda m: m.step)]


# slow: among the costliest default tests (issue 25: default run <= 4 min); CI runs it (-m slow)
@pytest.mark.slow
def test_fit_callback_logs_params_curves_and_a_pyfunc_model(store):
    tr = make_ranking(n_queries=20, n_features=4, mean_docs=8, max_docs=12, random_state=0)
    va = make_ranking(n_queries=10, n_features=4, mean_docs=8, max_docs=12, random_state=1)
    cb = MlflowCallback(tracking_uri=store, experiment="fit", run_name="ranker")
    ranker = LambdaMARTRanker(n_estimators=7, num_leaves=4, min_child_samples=2, n_jobs=1,
                              eval_at=(3, 5))
    ranker.fit(tr.X, tr.y, qid=tr.qid, eval_set=[(va.X, va.y)], eval_qid=[va.qid], callbacks=[cb])
    client, runs = _runs(store, "fit")
    (run,) = runs
    assert run.info.run_id == cb.run_id and run.info.status == "FINISHED"
    assert run.info.run_name == "ranker"
    assert run.data.params["n_estimators"] == "7" and run.data.params["learning_rate"] == "0.1"
    assert run.data.tags["ltr.engine"] == "lightgbm"
    import lightgbm

    assert run.data.tags["ltr.engine_version"] == lightgbm.__version__
    (set_name,) = ranker.evals_result_
    for key in ("ndcg@3", "ndcg@5"):
        name = f"{set_name}.{mlflow_metric_name(key)}"
        assert _history(client, run.info.run_id, name) == ranker.evals_result_[set_name][key]
        assert run.data.metrics[f"final.{name}"] == ranker.evals_result_[set_name][key][-1]
    mlflow.set_tracking_uri(store)
    model = mlflow.pyfunc.load_model(f"runs:/{run.info.run_id}/model")
    np.testing.assert_array_equal(model.predict(pd.DataFrame(va.X)), ranker.predict(va.X))


def test_a_failing_fit_closes_its_run_as_failed(store):
    tr = make_ranking(n_queries=6, n_features=3, mean_docs=5, max_docs=8, random_state=0)
    cb = MlflowCallback(tracking_uri=store, experiment="failing")

    class Boom:
        def after_round(self, info):
            raise RuntimeError("stop here")

    with pytest.raises(RuntimeError, match="stop here"):
        LambdaMARTRanker(n_estimators=3, n_jobs=1, min_child_samples=1).fit(
            tr.X, tr.y, qid=tr.qid, eval_set=[(tr.X, tr.y)], eval_qid=[tr.qid],
            callbacks=[cb, Boom()])
    _, (run,) = _runs(store, "failing")
    assert run.info.status == "FAILED"


def _config(tmp_path: Path, store: str, experiment: str, **extra) -> dict:
    raw = {
        "seed": 0,
        "data": {
            "source": "synthetic",
            "synthetic": {"n_queries": 40, "n_features": 5, "mean_docs": 10, "max_docs": 20,
                          "n_segments": 2},
            "split": {"valid": 0.25, "test": 0.25},
        },
        "model": {"n_estimators": 6, "n_jobs": 1, "num_leaves": 4, "min_child_samples": 2},
        "evaluation": {"eval_at": [5, 10], "per_segment": True, "k": 5},
        "tracking": {"mlflow": {"tracking_uri": store, "experiment": experiment}},
        "output": {"runs_dir": str(tmp_path / "runs"), "name": "tracked", "progress": False},
    }
    raw.update(extra)
    return raw


# slow: among the costliest default tests (issue 25: default run <= 4 min); CI runs it (-m slow)
@pytest.mark.slow
def test_train_run_is_logged_and_its_model_predicts_like_ltr_predict(tmp_path, store):
    result = train_run(parse_config(_config(tmp_path, store, "train")), out=tmp_path / "run")
    client, (run,) = _runs(store, "train")
    rid = run.info.run_id
    assert run.info.status == "FINISHED" and run.info.run_name == "tracked"
    assert run.data.params["model.n_estimators"] == "6" and run.data.params["data.source"] == "synthetic"
    assert run.data.params["evaluation.eval_at"] == "[5, 10]"
    tags = run.data.tags
    assert tags["ltr.command"] == "train" and tags["ltr.run_dir"] == str(result.run_dir.resolve())
    assert tags["ltr.data_digest.train"] == result.metrics["data"]["train"]["digest"]
    for set_name, values in result.metrics["final"].items():
        for key, value in values.items():
            assert run.data.metrics[f"final.{set_name}.{mlflow_metric_name(key)}"] == value
    curves = pd.read_csv(result.run_dir / "curves.csv")  # the run's own per-round curves
    for set_name in ("valid", "test"):
        for key in ("ndcg@5", "ndcg@10"):
            history = _history(client, rid, f"{set_name}.{mlflow_metric_name(key)}")
            np.testing.assert_allclose(history, curves[f"{set_name}:{key}"], rtol=0, atol=1e-12)
    segs = [k for k in run.data.metrics if k.startswith("segment.test.")]
    assert segs, "per-segment metrics are logged"
    artifacts = {a.path for a in client.list_artifacts(rid, "run")}
    assert {"run/metrics.json", "run/config.yaml", "run/model.json"} <= artifacts
    logged = json.loads(Path(client.download_artifacts(rid, "run/metrics.json", str(tmp_path)))
                        .read_text())
    assert logged["final"] == result.metrics["final"]

    # the pyfunc model scores a frame exactly as `ltr predict` scores the same rows from a file
    data = make_ranking(n_queries=8, n_features=5, mean_docs=10, max_docs=20, random_state=9)
    frame = pd.DataFrame(data.X, columns=data.feature_names)
    frame.insert(0, "label", data.y)
    frame.insert(0, "qid", data.qid)
    frame.to_csv(tmp_path / "rows.csv", index=False)
    expected = predict_run(result.run_dir, tmp_path / "rows.csv")["score"].to_numpy()
    mlflow.set_tracking_uri(store)
    model = mlflow.pyfunc.load_model(f"runs:/{rid}/model")
    shuffled = frame[list(reversed(frame.columns))]  # columns are picked by name
    np.testing.assert_array_equal(model.predict(shuffled), expected)


# slow: among the costliest default tests (issue 25: default run <= 4 min); CI runs it (-m slow)
@pytest.mark.slow
def test_tune_is_a_parent_run_with_a_nested_run_per_trial(tmp_path, store):
    raw = _config(tmp_path, store, "tune", search={
        "method": "optuna", "n_trials": 3, "scoring": "ndcg@5", "pruner": "none",
        "param_distributions": {"learning_rate": {"dist": "float", "low": 0.05, "high": 0.3}},
    })
    result = tune_run(parse_config(raw), out=tmp_path / "tuned")
    client, runs = _runs(store, "tune")
    parents = [r for r in runs if "mlflow.parentRunId" not in r.data.tags]
    (parent,) = parents
    children = [r for r in runs if r.data.tags.get("mlflow.parentRunId") == parent.info.run_id]
    assert len(children) == 3 and len(runs) == 4
    table = pd.read_csv(result.run_dir / "search.csv")
    for child in children:
        number = int(child.data.tags["optuna.trial"])
        row = table[table["number"] == number].iloc[0]
        assert child.data.tags["optuna.state"] == "COMPLETE"
        assert child.data.metrics["value"] == pytest.approx(row["value"], abs=1e-12)
        assert float(child.data.params["learning_rate"]) == pytest.approx(row["param_learning_rate"])
        assert len(_history(client, child.info.run_id, "valid.ndcg_at_5")) == 6
    assert parent.data.tags["ltr.command"] == "tune"
    assert parent.data.metrics["search.best_score"] == result.metrics["search"]["best_score"]
    assert parent.data.metrics["search.trials_complete"] == 3


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.mark.slow
def test_logging_over_http_to_an_mlflow_server(tmp_path):
    port = _free_port()
    url = f"http://127.0.0.1:{port}"
    proc = subprocess.Popen(
        [sys.executable, "-m", "mlflow", "server", "--host", "127.0.0.1", "--port", str(port),
         "--backend-store-uri", f"sqlite:///{tmp_path / 'server.db'}",
         "--default-artifact-root", (tmp_path / "artifacts").as_uri(), "--workers", "1"],
        cwd=tmp_path, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
        env=dict(os.environ, MLFLOW_SERVER_ENABLE_JOB_EXECUTION="false"),
    )
    try:
        deadline = time.monotonic() + 120
        while True:
            try:
                with urllib.request.urlopen(f"{url}/health", timeout=2) as resp:
                    if resp.status == 200:
                        break
            except OSError:
                pass
            if proc.poll() is not None or time.monotonic() > deadline:
                pytest.skip("mlflow server did not start on localhost within 120 s")
            time.sleep(0.5)
        tr = make_ranking(n_queries=10, n_features=3, mean_docs=6, max_docs=10, random_state=0)
        cb = MlflowCallback(tracking_uri=url, experiment="http")
        ranker = LambdaMARTRanker(n_estimators=4, n_jobs=1, min_child_samples=2)
        ranker.fit(tr.X, tr.y, qid=tr.qid, eval_set=[(tr.X, tr.y)], eval_qid=[tr.qid],
                   callbacks=[cb])
        client, (run,) = _runs(url, "http")
        set_name = next(iter(ranker.evals_result_))
        assert _history(client, run.info.run_id, f"{set_name}.ndcg_at_10") == \
            ranker.evals_result_[set_name]["ndcg@10"]
        mlflow.set_tracking_uri(url)
        model = mlflow.pyfunc.load_model(f"runs:/{run.info.run_id}/model")
        np.testing.assert_array_equal(model.predict(pd.DataFrame(tr.X)), ranker.predict(tr.X))
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


@pytest.mark.parametrize(("module", "extra"), [("mlflow", "mlflow"), ("optuna", "optuna")])
def test_missing_extras_name_what_to_install(monkeypatch, module, extra):
    from ltr import _compat

    monkeypatch.setitem(sys.modules, module, None)  # as if not installed
    with pytest.raises(ImportError, match=rf"pip install '{_compat.DISTRIBUTION}\[{extra}\]'"):
        getattr(_compat, f"import_{module}")()


# slow: among the costliest default tests (issue 25: default run <= 4 min); CI runs it (-m slow)
@pytest.mark.slow
def test_the_cli_mlflow_option_tracks_a_config_without_a_tracking_section(tmp_path, store, capsys):
    from ltr.cli import main

    raw = _config(tmp_path, store, "unused")
    del raw["tracking"]
    (tmp_path / "c.json").write_text(json.dumps(raw))
    assert main(["train", str(tmp_path / "c.json"), "--out", str(tmp_path / "cli"),
                 "--mlflow", store]) == 0
    _, (run,) = _runs(store, "ltr")  # the default experiment
    assert run.data.tags["ltr.run_dir"] == str((tmp_path / "cli").resolve())

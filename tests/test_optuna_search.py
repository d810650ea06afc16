"""ltr tune with search.method optuna: pruning, seeds, SQLite studies killed and shared.

The studies are real Optuna studies (in memory or in an SQLite file) over real
LightGBM trainings on small synthetic data; the per-round values a trial reports
are checked against the engine's own recorded curve, and the study's state is
read back from the SQLite file with the standard library's sqlite3.
"""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from ltr.metrics import ndcg
from ltr.runs.config import ConfigError, RunError, parse_config
from ltr.runs.tune_cmd import tune_run

optuna = pytest.importorskip("optuna")  # in the test extra; skips only a bare install

REPO = Path(__file__).resolve().parents[1]


def config(tmp_path: Path, *, rounds: int = 20, n_queries: int = 60, **search) -> dict:
    base = {
        "method": "optuna",
        "n_trials": 8,
        "startup_trials": 2,
        "warmup_rounds": 2,
        "scoring": "ndcg@5",
        "param_distributions": {
            "learning_rate": {"dist": "float", "low": 0.01, "high": 0.5, "log": True},
            "num_leaves": {"dist": "int", "low": 2, "high": 16},
            "min_child_samples": [2, 5, 20],
        },
    }
    base.update(search)
    return {
        "seed": 0,
        "data": {
            "source": "synthetic",
            "synthetic": {"n_queries": n_queries, "n_features": 5, "mean_docs": 10, "max_docs": 20},
            "split": {"valid": 0.25, "test": 0.25},
        },
        "model": {"n_estimators": rounds, "n_jobs": 1},
        "evaluation": {"eval_at": [5]},
        "search": base,
        "output": {"runs_dir": str(tmp_path / "runs"), "name": "study", "progress": False},
    }


def _tune(tmp_path: Path, raw: dict, out: str = "run"):
    return tune_run(parse_config(raw), out=tmp_path / out, progress=False)


@pytest.mark.parametrize("pruner", ["median", "hyperband"])
def test_pruning_prunes_and_the_best_trial_is_refit(tmp_path, pruner):
    raw = config(tmp_path, rounds=30, n_trials=10, startup_trials=2, warmup_rounds=3,
                 pruner=pruner)
    result = _tune(tmp_path, raw)
    s = result.metrics["search"]
    table = pd.read_csv(result.run_dir / "search.csv")
    assert len(table) == 10 and set(table["state"]) <= {"complete", "pruned"}
    pruned = table[table["state"] == "pruned"]
    assert s["trials"]["pruned"] == len(pruned) > 0
    assert (pruned["rounds"] < 30).all() and (table.loc[table["state"] == "complete", "rounds"] == 30).all()
    complete = table[table["state"] == "complete"]
    best = complete.loc[complete["value"].idxmax()]
    # search.csv holds the value as text: equal up to the CSV round trip of a float
    assert int(best["number"]) == s["best_trial"]
    assert best["value"] == pytest.approx(s["best_score"], rel=1e-14)
    # the refit is the best trial's settings trained as a full run on the same train split:
    # its valid nDCG@5 (computed again from the saved model's predictions) is the trial's value
    assert result.metrics["final"]["valid"]["ndcg@5"] == pytest.approx(s["best_score"], abs=1e-12)
    for name in ("search_history", "search_importance", "search_parallel"):
        assert (result.run_dir / f"{name}.png").stat().st_size > 1000
    html = (result.run_dir / "report.html").read_text()
    assert "Optimisation history" in html and "Parallel coordinates" in html


@pytest.mark.parametrize("engine", ["lightgbm", "xgboost"])
def test_reported_values_are_the_engines_per_round_valid_ndcg(tmp_path, engine):
    """A PruningReporter on a real trial: the intermediate values are ltr.metrics.ndcg per round."""
    from ltr.engines import train
    from ltr.runs.optuna_search import PruningReporter
    from ltr.synthetic import make_ranking

    tr = make_ranking(n_queries=20, n_features=4, mean_docs=8, max_docs=12, random_state=1)
    va = make_ranking(n_queries=10, n_features=4, mean_docs=8, max_docs=12, random_state=2)
    study = optuna.create_study(direction="maximize", pruner=optuna.pruners.NopPruner())
    trial = study.ask()
    reporter = PruningReporter(trial, "ndcg@5")
    params = {"min_data_in_leaf": 2} if engine == "lightgbm" else {"max_depth": 3}
    model = train(tr.X, tr.y, tr.offsets, engine=engine, num_boost_round=6, n_jobs=1,
                  eval_sets=[("valid", va.X, va.y, va.offsets)], eval_at=[5],
                  params=params, callbacks=[reporter])
    values = study.trials[0].intermediate_values
    assert sorted(values) == list(range(6))
    assert [values[i] for i in range(6)] == model.evals_result["valid"]["ndcg@5"]
    # the final model's own nDCG on the valid split, recomputed from its predictions
    assert values[5] == pytest.approx(
        ndcg(va.y, model.predict(va.X), offsets=va.offsets, k=5, convention=engine), abs=1e-12
    )


def test_a_composite_run_is_scored_on_the_composite_ndcg(tmp_path):
    raw = config(tmp_path, rounds=6, n_trials=3, pruner="none")
    raw["data"]["objectives"] = {"watch": {"weight": 0.7}, "share": {"weight": 0.3}}
    raw["model"].update(objective="lambdarank", objectives={"watch": 0.7, "share": 0.3}, k=5)
    raw["evaluation"]["k"] = 5
    result = _tune(tmp_path, raw)
    s = result.metrics["search"]
    assert s["scoring"].startswith("composite_ndcg@5")
    # the refit's composite nDCG@5 on valid (computed again from its model) is the best value
    assert result.metrics["composite"]["valid"]["composite"] == pytest.approx(
        s["best_score"], abs=1e-12)


def test_a_seed_makes_a_single_process_study_reproducible(tmp_path):
    raw = config(tmp_path, rounds=8, n_trials=5)
    a = pd.read_csv(_tune(tmp_path, raw, "a").run_dir / "search.csv")
    b = pd.read_csv(_tune(tmp_path, raw, "b").run_dir / "search.csv")
    cols = ["number", "state", "value", "param_learning_rate", "param_num_leaves", "rounds"]
    pd.testing.assert_frame_equal(a[cols], b[cols])
    raw["search"]["seed"] = 7
    c = pd.read_csv(_tune(tmp_path, raw, "c").run_dir / "search.csv")
    assert not np.array_equal(a["param_learning_rate"], c["param_learning_rate"])


def _states(db: Path) -> list[tuple[int, str]]:
    with sqlite3.connect(db, timeout=30) as con:
        return con.execute("SELECT number, state FROM trials ORDER BY number").fetchall()


def _write(tmp_path: Path, raw: dict, name: str) -> Path:
    path = tmp_path / f"{name}.json"  # JSON is YAML
    path.write_text(json.dumps(raw))
    return path


def _spawn(cfg: Path, out: Path, cwd: Path) -> subprocess.Popen:
    env = dict(os.environ, OMP_WAIT_POLICY="PASSIVE", PYTHONPATH=str(REPO))
    return subprocess.Popen(
        [sys.executable, "-m", "ltr", "tune", str(cfg), "--out", str(out), "--no-progress"],
        cwd=cwd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
    )


@pytest.mark.slow
def test_a_study_killed_mid_trial_resumes_to_n_trials(tmp_path):
    db = tmp_path / "study.db"
    # each reported round is one SQLite write: 40 rounds keep a trial running long enough to kill
    raw = config(tmp_path, rounds=40, n_queries=40, n_trials=2, pruner="none",
                 storage=f"sqlite:///{db}", study_name="killed", heartbeat_interval=1)
    cfg = _write(tmp_path, raw, "killed")
    proc = _spawn(cfg, tmp_path / "first", tmp_path)
    deadline = time.monotonic() + 180
    try:  # SIGKILL while a trial runs and has sent its first heartbeat
        while True:
            if proc.poll() is not None:
                pytest.fail(f"tune exited early: {proc.stderr.read().decode()[-800:]}")
            if time.monotonic() > deadline:
                pytest.fail("no trial ever ran")
            if db.exists():
                try:
                    with sqlite3.connect(db, timeout=30) as con:
                        running = con.execute(
                            "SELECT t.number FROM trials t JOIN trial_heartbeats h "
                            "ON h.trial_id = t.trial_id WHERE t.state = 'RUNNING'"
                        ).fetchall()
                except sqlite3.OperationalError:  # tables not created yet
                    running = []
                if running:
                    break
            time.sleep(0.05)
        proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    killed = running[0][0]
    assert dict(_states(db))[killed] == "RUNNING"  # left as it was by the killed process
    time.sleep(2.5)  # past the grace period (2 x heartbeat_interval)
    result = tune_run(parse_config(raw), out=tmp_path / "resumed", progress=False)
    states = dict(_states(db))
    assert states[killed] == "FAIL"
    assert sum(st == "COMPLETE" for st in states.values()) == 2
    assert "RUNNING" not in states.values()
    assert result.metrics["search"]["trials"] == {"complete": 2, "pruned": 0, "fail": 1, "running": 0}
    assert len(pd.read_csv(result.run_dir / "search.csv")) == len(states)


@pytest.mark.slow
def test_two_processes_share_one_sqlite_study_and_stop_at_n_trials(tmp_path):
    db = tmp_path / "shared.db"
    raw = config(tmp_path, rounds=15, n_queries=40, n_trials=6, storage=f"sqlite:///{db}",
                 study_name="shared")
    cfg = _write(tmp_path, raw, "shared")
    procs = [_spawn(cfg, tmp_path / f"p{i}", tmp_path) for i in range(2)]
    for p in procs:
        p.wait(timeout=300)
        assert p.returncode == 0, p.stderr.read().decode()[-800:]
    study = optuna.load_study(study_name="shared", storage=f"sqlite:///{db}")
    trials = study.get_trials()
    done = [t for t in trials if t.state in (optuna.trial.TrialState.COMPLETE,
                                             optuna.trial.TrialState.PRUNED)]
    assert len(done) == 6
    # any other trial is one both processes started at once past the total, and did no work
    assert all("skipped" in t.user_attrs for t in trials if t not in done)
    assert len({t.number for t in trials}) == len(trials)
    points = {json.dumps(t.params, sort_keys=True) for t in done}
    assert len(points) == 6  # no parameter point evaluated twice
    # both processes worked on the one study: each one's search.csv lists its 6 trials (one
    # still running in the other process when this one finished shows as running); which
    # process ran which trial depends on start-up timing, so it is not asserted
    numbers = {t.number for t in done}
    for i in range(2):
        table = pd.read_csv(tmp_path / f"p{i}" / "search.csv")
        assert numbers <= set(table["number"])
    assert {t.user_attrs["pid"] for t in done} <= {p.pid for p in procs}


@pytest.mark.parametrize(
    ("search", "message"),
    [
        ({"storage": "postgresql://x/y"}, "search.storage: must be sqlite:///PATH"),
        ({"method": "random", "storage": "sqlite:///x.db"}, "storage and study_name apply to method 'optuna'"),
        ({"pruner": "asha"}, "search.pruner"),
        ({"n_trials": 0}, "search.n_trials"),
    ],
)
def test_bad_search_settings_are_refused_by_the_schema(tmp_path, search, message):
    raw = config(tmp_path, **search)
    with pytest.raises(ConfigError, match=message.replace("(", r"\(").replace(")", r"\)")):
        parse_config(raw)


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"param_distributions": {"num_leaves": {"dist": "int", "low": 2.5, "high": 9}}},
         "search.param_distributions.num_leaves: dist int needs integer low and high"),
        ({"param_distributions": {"leaves": [2, 3]}},
         "search.param_distributions.leaves: not a training setting"),
        ({"scoring": "map@10"}, "search.scoring: method optuna scores trials per round by nDCG@k, got .map@10."),
        ({"scoring": "ndcg@5:sklearn"}, "search.scoring: method optuna uses the run.s convention"),
        ({"storage": "sqlite:///no/such/folder/x.db"}, "search.storage: folder"),
    ],
)
def test_bad_studies_are_refused_before_any_folder(tmp_path, change, message):
    raw = config(tmp_path, **change)
    with pytest.raises(RunError, match=message):
        _tune(tmp_path, raw)
    assert not (tmp_path / "run").exists()


def test_optuna_needs_a_valid_split(tmp_path):
    raw = config(tmp_path)
    raw["data"]["split"] = {"valid": 0.0, "test": 0.25}
    with pytest.raises(RunError, match="search.method: optuna scores each trial per round on the valid split"):
        _tune(tmp_path, raw)


def test_a_space_value_the_model_section_refuses_is_refused_before_any_trial(tmp_path):
    # num_leaves=1: the model section's rule (num_leaves >= 2) refuses it before any work
    raw = config(tmp_path, rounds=3, n_trials=2, param_distributions={"num_leaves": [1]})
    with pytest.raises(RunError, match=r"search\.param_distributions\.num_leaves\[0\]: .*1"):
        _tune(tmp_path, raw)
    assert not (tmp_path / "run").exists() or list((tmp_path / "run").iterdir()) == []

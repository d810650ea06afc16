"""Tests for the ``ltr`` command line: runs, run folders, resume, reports, errors.

Real LightGBM training on small synthetic data (and the shared LETOR set when
present); every command goes through ``ltr.cli.main(argv)`` in-process, except
the kill-and-resume test, which needs a process to kill.
"""

from __future__ import annotations

import os

# Spinning OpenMP threads make numba/LightGBM 10-100x slower on shared cores
# (the console script sets the same default); effective only if no OpenMP
# runtime has started yet in this test session.
os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")

import html
import json
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import yaml

from ltr.cli import main

REPO = Path(__file__).resolve().parents[1]
CONFIGS = REPO / "configs"

# Shrinks any synthetic config to a few seconds of training.
SMALL = [
    "--set",
    "data.synthetic.n_queries=40",
    "--set",
    "data.synthetic.n_features=8",
    "--set",
    "data.synthetic.mean_docs=12",
    "--set",
    "data.synthetic.max_docs=40",
    "--set",
    "model.n_jobs=1",
]

COMMANDS = ("train", "evaluate", "predict", "importance", "tune", "compare", "monitor", "report", "validate")


def run(argv, capsys):
    """main(argv) -> (exit status, stdout, stderr)."""
    rc = main([str(a) for a in argv])
    out, err = capsys.readouterr()
    return rc, out, err


def write_config(path: Path, data: dict) -> Path:
    path.write_text(yaml.safe_dump(data, sort_keys=False))
    return path


def small_progressive(tmp_path: Path, name: str = "prog", **extra) -> Path:
    data = {
        "seed": 1,
        "data": {
            "source": "synthetic",
            "synthetic": {"n_queries": 40, "n_features": 8, "mean_docs": 12, "max_docs": 40},
        },
        "model": {
            "num_leaves": 7,
            "n_jobs": 1,
            "objective": "native",
            "schedule": {
                "steps": [{"k": 3, "rounds": 3}, {"k": 5, "rounds": 3}, {"k": 10, "rounds": 3}]
            },
        },
        "importance": {"enabled": True, "n_repeats": 1},
        "output": {"runs_dir": str(tmp_path / "runs"), "name": name},
    }
    training = extra.pop("training", None)  # model keys replacing the objective and schedule
    if training is not None:
        data["model"] = {"num_leaves": 7, "n_jobs": 1, **training}
    data.update(extra)
    return write_config(tmp_path / f"{name}.yaml", data)


def booster_text(run_dir: Path) -> str:
    return json.loads((run_dir / "model.json").read_text())["model"]


@pytest.fixture(scope="module")
def finished_run(tmp_path_factory):
    """One small finished progressive run with importance (shared by read-only tests)."""
    tmp = tmp_path_factory.mktemp("finished")
    cfg = small_progressive(tmp)
    assert main(["train", str(cfg), "--out", str(tmp / "run")]) == 0
    return tmp / "run", cfg


# --------------------------------------------------------------------------- help


def test_help_is_available_for_every_command(capsys):
    rc, out, _ = run(["--help"], capsys)
    assert rc == 0
    for command in COMMANDS:
        assert command in out
        rc, out_cmd, _ = run([command, "--help"], capsys)
        assert rc == 0, command
        assert out_cmd.startswith(f"usage: ltr {command}")
    rc, out, _err = run([], capsys)
    assert rc == 2 and "usage: ltr" in out


# --------------------------------------------------------------------------- train and the run folder


def test_train_writes_a_complete_self_describing_run_folder(finished_run):
    run_dir, _cfg_path = finished_run
    for name in (
        "config.yaml",
        "model.json",
        "metrics.json",
        "curves.png",
        "curves.csv",
        "importance.csv",
        "importance.png",
        "report.md",
        "report.html",
        "run.log",
        "DONE",
    ):
        assert (run_dir / name).is_file(), name
    stage_files = sorted(
        p.name for p in (run_dir / "models").iterdir() if p.name.startswith("stage_")
    )
    assert stage_files == ["stage_00_k3.txt", "stage_01_k5.txt", "stage_02_k10.txt"]

    saved = yaml.safe_load((run_dir / "config.yaml").read_text())
    assert saved["seed"] == 1
    assert set(saved["versions"]) >= {"ltr", "lightgbm", "numpy", "python"}
    assert saved["evaluation"]["eval_at"] == [1, 3, 5, 10, 20]  # defaults are written out

    metrics = json.loads((run_dir / "metrics.json").read_text())
    assert metrics["status"] == "complete" and metrics["n_trees"] == 9
    keys = {"ndcg@1", "ndcg@3", "ndcg@5", "ndcg@10", "ndcg@20"}
    for name in ("valid", "test"):
        assert set(metrics["final"][name]) == keys
        assert all(0 <= v <= 1 for v in metrics["final"][name].values())
    assert [s["k"] for s in metrics["stages"]] == [3, 5, 10]
    for st in metrics["stages"]:
        assert set(st["metrics"]) == {"valid", "test"} and set(st["metrics"]["valid"]) == keys
    # the last stage ends where the final model is
    assert metrics["stages"][-1]["metrics"]["test"] == pytest.approx(metrics["final"]["test"])
    assert metrics["importance"]["set"] == "test"

    imp = pd.read_csv(run_dir / "importance.csv")
    assert set(imp["feature"]) == {f"f{i}" for i in range(1, 9)}

    md = (run_dir / "report.md").read_text()
    assert "## Final metrics" in md and "![Curves (nDCG per round)](curves.png)" in md
    page = (run_dir / "report.html").read_text()
    assert page.count("data:image/png;base64,") == 3  # curves, importance and SHAP embedded
    assert 'src="curves.png"' not in page and "<table>" in page
    log = (run_dir / "run.log").read_text()
    assert "starting run" in log and "finished in" in log


def test_final_metrics_match_an_independent_recomputation(finished_run):
    from ltr.engines import RankingModel
    from ltr.runs.config import load_config
    from ltr.runs.data import load_data

    run_dir, _ = finished_run
    cfg = load_config(run_dir / "config.yaml")
    sets = load_data(cfg)
    model = RankingModel.load(run_dir / "model.json")
    metrics = json.loads((run_dir / "metrics.json").read_text())
    test = sets["test"]
    scores = model.predict(test.X)
    # naive nDCG@5 under LightGBM's convention (the run's default): exp2 gain, log2 discount,
    # ties broken by the stable order (LightGBM's std::stable_sort), a query with no relevant
    # document scores 1
    assert cfg.evaluation.convention in (None, "lightgbm")  # None: the engine's, LightGBM here
    values = []
    for q in range(test.n_queries):
        a, b = test.offsets[q], test.offsets[q + 1]
        y, s = test.y[a:b], scores[a:b]
        gains = 2.0**y - 1
        order = np.argsort(-s, kind="stable")
        disc = 1 / np.log2(np.arange(2, 7))
        dcg = float(np.sum(gains[order][:5] * disc[: min(5, b - a)]))
        idcg = float(np.sum(np.sort(gains)[::-1][:5] * disc[: min(5, b - a)]))
        values.append(dcg / idcg if idcg > 0 else 1.0)
    assert metrics["final"]["test"]["ndcg@5"] == pytest.approx(np.mean(values), abs=1e-12)


def test_same_config_and_seed_twice_give_identical_models_and_metrics(tmp_path, capsys):
    cfg = small_progressive(tmp_path, importance={"enabled": False})
    a, b = tmp_path / "a", tmp_path / "b"
    assert run(["train", cfg, "--out", a], capsys)[0] == 0
    assert run(["train", cfg, "--out", b], capsys)[0] == 0
    assert booster_text(a) == booster_text(b)
    assert (a / "metrics.json").read_bytes() == (b / "metrics.json").read_bytes()
    for stage in (a / "models").glob("stage_*"):
        assert stage.read_bytes() == (b / "models" / stage.name).read_bytes()
    # a different seed gives a different model
    c = tmp_path / "c"
    assert run(["train", cfg, "--set", "seed=2", "--out", c], capsys)[0] == 0
    assert booster_text(c) != booster_text(a)


def test_run_folders_are_never_reused(tmp_path, capsys):
    cfg = small_progressive(
        tmp_path, importance={"enabled": False}, training={"objective": "native", "k": 5}
    )
    argv = ["train", cfg, "--set", "model.n_estimators=2"]
    assert run(argv, capsys)[0] == 0
    assert run(argv, capsys)[0] == 0  # same second: a suffix keeps them apart
    runs = sorted((tmp_path / "runs").iterdir())
    assert len(runs) == 2 and all(p.name.startswith("prog-") for p in runs)
    assert all((p / "DONE").exists() for p in runs)
    rc, _, err = run(["train", cfg, "--out", runs[0]], capsys)
    assert rc == 1
    assert "already exists and is not empty; ltr never overwrites a folder" in err


# --------------------------------------------------------------------------- resume


def _resume_config(tmp_path: Path, objective: str) -> Path:
    # stage 0 is tiny, stage 1 long enough to be killed in
    obj: dict = {
        "objective": objective,
        "schedule": {
            "steps": [{"k": 3, "rounds": 2}, {"k": 5, "rounds": 100}, {"k": 10, "rounds": 5}]
        },
    }
    if objective == "lambdarank":
        obj["sampling"] = {"top": 5, "head_weight": 2.0, "pairs_per_doc": 4}
    return small_progressive(
        tmp_path,
        name="resume",
        importance={"enabled": False},
        training=obj,
        evaluation={"eval_at": [1, 5, 10]},
    )


@pytest.mark.parametrize(
    ("objective", "how"), [("native", signal.SIGKILL), ("lambdarank", signal.SIGTERM)]
)
def test_a_killed_run_resumes_to_the_same_model_and_metrics(objective, how, tmp_path, capsys):
    cfg = _resume_config(tmp_path, objective)
    killed = tmp_path / "killed"
    env = dict(os.environ, OMP_WAIT_POLICY="PASSIVE", PYTHONPATH=str(REPO))
    proc = subprocess.Popen(
        [sys.executable, "-m", "ltr", "train", str(cfg), "--out", str(killed), "--no-progress"],
        cwd=tmp_path,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    # SIGKILL as soon as the first stage's model file exists (possibly before stages.json
    # records it); SIGTERM once the stage is recorded, so the folder is kept for resuming
    first_stage = (
        killed / "models" / ("stage_00_k3.txt" if how == signal.SIGKILL else "stages.json")
    )
    deadline = time.monotonic() + 120
    try:
        while not first_stage.exists():
            if proc.poll() is not None:
                pytest.fail(
                    f"training exited early ({proc.returncode}): {proc.stderr.read().decode()[-500:]}"
                )
            if time.monotonic() > deadline:
                pytest.fail("the first stage never finished")
            time.sleep(0.01)
        proc.send_signal(how)
        proc.wait(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    if how == signal.SIGKILL:
        assert proc.returncode == -signal.SIGKILL
    else:  # SIGTERM stops like Ctrl-C: exit 130 and a hint how to resume
        assert proc.returncode == 130
        assert f"finish with: ltr train --resume {killed}" in proc.stderr.read().decode()
    assert not (killed / "DONE").exists(), "the run finished before it could be killed"
    assert not (killed / "metrics.json").exists() and not (killed / "report.html").exists()
    assert not (killed / "models" / "stage_02_k10.txt").exists()

    # an unfinished folder is not mistaken for a finished run
    rc, _, err = run(["report", killed], capsys)
    assert rc == 1 and "is not a finished run (no DONE marker)" in err

    # a different config is refused, naming the difference
    rc, _, err = run(["train", cfg, "--set", "model.learning_rate=0.2", "--resume", killed], capsys)
    assert rc == 1
    assert "was made by a different config (run vs now: model.learning_rate: 0.1 vs 0.2)" in err
    assert not (killed / "DONE").exists()

    rc, _out, err = run(["train", cfg, "--resume", killed], capsys)
    assert rc == 0, err
    assert (killed / "DONE").exists()
    assert "resuming run" in (killed / "run.log").read_text()

    fresh = tmp_path / "fresh"
    assert run(["train", cfg, "--out", fresh], capsys)[0] == 0
    assert booster_text(killed) == booster_text(fresh)
    assert (killed / "metrics.json").read_bytes() == (fresh / "metrics.json").read_bytes()

    # a finished run cannot be resumed again
    rc, _, err = run(["train", "--resume", killed], capsys)
    assert rc == 1 and "is already finished" in err


def test_resume_without_config_uses_the_runs_own_config(tmp_path, capsys):
    cfg = small_progressive(tmp_path, importance={"enabled": False})
    folder = tmp_path / "partial"
    # a run that stopped right after writing its config (before any stage)
    from ltr.runs.commands import train_run
    from ltr.runs.config import load_config
    from ltr.runs.folder import DONE_MARKER

    done = train_run(load_config(cfg), out=folder).run_dir
    (done / DONE_MARKER).unlink()
    for name in ("metrics.json", "report.md", "report.html", "model.json"):
        (done / name).unlink()
    rc, _, err = run(["train", "--resume", folder], capsys)
    assert rc == 0, err
    fresh = tmp_path / "fresh"
    assert run(["train", cfg, "--out", fresh], capsys)[0] == 0
    assert booster_text(folder) == booster_text(fresh)
    rc, _, err = run(["train", "--resume", tmp_path / "nothing"], capsys)
    assert rc == 1 and "run folder not found" in err


# --------------------------------------------------------------------------- shipped configs, reduced


def test_quickstart_runs_in_reduced_form(tmp_path, capsys):
    rc, out, err = run(
        [
            "train",
            CONFIGS / "quickstart.yaml",
            *SMALL,
            "--set",
            "importance.n_repeats=1",
            "--set",
            "model.schedule.steps=[{k: 5, rounds: 2}, {k: 10, rounds: 2}, {k: 20, rounds: 2}]",
            "--out",
            tmp_path / "q",
        ],
        capsys,
    )
    assert rc == 0, err
    assert "valid: ndcg@1" in out and f"run folder: {tmp_path / 'q'}" in out
    metrics = json.loads((tmp_path / "q" / "metrics.json").read_text())
    assert [s["k"] for s in metrics["stages"]] == [5, 10, 20]


@pytest.mark.parametrize("config", ["progressive", "pair_sampling"])
def test_lambdarank_configs_run_in_reduced_form(config, tmp_path, capsys):
    extra = (
        ["--set", "model.schedule.steps=[{k: 3, rounds: 2}, {k: 5, rounds: 2}]"]
        if config == "progressive"
        else ["--set", "model.n_estimators=4"]
    )
    rc, _, err = run(
        ["train", CONFIGS / f"{config}.yaml", *SMALL, *extra, "--out", tmp_path / "r"], capsys
    )
    assert rc == 0, err
    metrics = json.loads((tmp_path / "r" / "metrics.json").read_text())
    assert metrics["objective"] == "lambdarank" and metrics["n_trees"] == 4


def test_multiobjective_config_reports_composite_and_smoothed_segments(tmp_path, capsys):
    rc, out, err = run(
        [
            "train",
            CONFIGS / "multiobjective.yaml",
            *SMALL,
            "--set",
            "model.n_estimators=3",
            "--set",
            "data.synthetic.n_segments=3",
            "--out",
            tmp_path / "m",
        ],
        capsys,
    )
    assert rc == 0, err
    metrics = json.loads((tmp_path / "m" / "metrics.json").read_text())
    assert metrics["objective"] == "lambdarank (composite)"
    assert metrics["composite_weights"] == {"watch": 0.6, "share": 0.25, "follow": 0.15}
    for name in ("valid", "test"):
        comp = metrics["composite"][name]
        assert comp["composite"] == pytest.approx(
            0.6 * comp["watch"] + 0.25 * comp["share"] + 0.15 * comp["follow"]
        )
        rows = metrics["segments"][name]
        assert rows and {"segment", "queries", "ndcg", "ndcg_smoothed"} <= set(rows[0])
        # smoothing (strength 20) pulls every segment towards the query-weighted mean
        n = np.array([r["queries"] for r in rows], float)
        x = np.array([r["ndcg"] for r in rows])
        prior = float(n @ x / n.sum())
        expected = (n * x + 20 * prior) / (n + 20)
        assert [r["ndcg_smoothed"] for r in rows] == pytest.approx(expected)
    md = (tmp_path / "m" / "report.md").read_text()
    assert "## Composite nDCG@10" in md and "## Per segment nDCG@10 (test)" in md
    # the console headline labels its numbers: nDCG on the first objective's grades (what
    # synthetic data ranks by), and the composite the objective trains for, beside it
    assert metrics["final_label"] == "watch"
    lines = out.splitlines()
    test_line = next(ln for ln in lines if ln.startswith("test"))
    assert test_line.startswith("test (nDCG on label 'watch'): ")
    assert f"ndcg@10 {metrics['final']['test']['ndcg@10']:.4f}" in test_line
    assert metrics["final"]["test"]["ndcg@10"] == pytest.approx(metrics["composite"]["test"]["watch"])
    comp = next(ln for ln in lines if ln.startswith("composite nDCG@10"))
    assert "(0.6 watch + 0.25 share + 0.15 follow, the training objective)" in comp
    assert f"test {metrics['composite']['test']['composite']:.4f}" in comp


def test_letor_config_runs_on_real_letor_data(lambdarank_dir, tmp_path, capsys, monkeypatch):
    """configs/letor.yaml on the real set (../shared when present, else the committed slice)."""
    from ltr.datasets import load_letor

    monkeypatch.chdir(REPO)
    rc, _, err = run(
        [
            "train",
            "configs/letor.yaml",
            "--set",
            f"data.train={lambdarank_dir / 'rank.train'}",
            "--set",
            f"data.test={lambdarank_dir / 'rank.test'}",
            "--set",
            "model.n_estimators=3",
            "--set",
            "model.n_jobs=1",
            "--out",
            tmp_path / "l",
        ],
        capsys,
    )
    assert rc == 0, err
    metrics = json.loads((tmp_path / "l" / "metrics.json").read_text())
    tr = load_letor(lambdarank_dir / "rank.train")
    te = load_letor(lambdarank_dir / "rank.test", n_features=tr.n_features)
    assert {k: metrics["data"]["test"][k] for k in ("queries", "rows")} == {
        "queries": te.n_queries,
        "rows": te.n_rows,
    }
    assert metrics["data"]["train"]["queries"] + metrics["data"]["valid"]["queries"] == (
        tr.n_queries
    )
    saved = yaml.safe_load((tmp_path / "l" / "config.yaml").read_text())
    assert saved["data"]["train"] == str((lambdarank_dir / "rank.train").resolve())
    # evaluating the saved model on the test file reproduces the run's test metrics
    rc, out, err = run(
        ["score", tmp_path / "l", "--data", lambdarank_dir / "rank.test", "--json"],
        capsys,
    )
    assert rc == 0, err
    assert json.loads(out)["rank.test"] == pytest.approx(metrics["final"]["test"])


def test_tune_config_runs_a_grid_search_with_group_kfold(tmp_path, capsys):
    rc, out, err = run(
        [
            "tune",
            CONFIGS / "tune.yaml",
            *SMALL,
            "--set",
            "model.n_estimators=3",
            "--set",
            "search.param_grid={num_leaves: [3, 7]}",
            "--set",
            "search.folds=2",
            "--out",
            tmp_path / "t",
        ],
        capsys,
    )
    assert rc == 0, err
    assert out.startswith("best ndcg@10 = ")
    metrics = json.loads((tmp_path / "t" / "metrics.json").read_text())
    search = metrics["search"]
    assert search["best_params"]["num_leaves"] in (3, 7) and len(search["results"]) == 2
    table = pd.read_csv(tmp_path / "t" / "search.csv")
    assert table["mean_test_score"].max() == pytest.approx(search["best_score"])
    assert (tmp_path / "t" / "DONE").exists() and "## Search" in (
        tmp_path / "t" / "report.md"
    ).read_text()


def test_tune_runs_a_randomized_search_over_distributions(tmp_path, capsys):
    rc, _, err = run(
        [
            "tune",
            CONFIGS / "tune.yaml",
            *SMALL,
            "--set",
            "model.n_estimators=3",
            "--set",
            "search.method=random",
            "--set",
            "search.param_grid=null",
            "--set",
            "search.n_iter=2",
            "--set",
            "search.folds=2",
            "--set",
            (
                "search.param_distributions={learning_rate: {dist: loguniform, low: 0.05, high: 0.3}, "
                "num_leaves: [3, 7]}"
            ),
            "--out",
            tmp_path / "r",
        ],
        capsys,
    )
    assert rc == 0, err
    search = json.loads((tmp_path / "r" / "metrics.json").read_text())["search"]
    assert search["method"] == "random" and len(search["results"]) == 2
    assert 0.05 <= search["best_params"]["learning_rate"] <= 0.3


@pytest.mark.parametrize(
    ("overrides", "message"),
    [
        (
            ["search.param_grid={n_leaves: [3, 7]}"],
            "search.param_grid.n_leaves: not a training setting",
        ),
        (
            [
                "search.method=random",
                "search.param_distributions={learning_rate: {dist: normal, low: 0, high: 1}}",
            ],
            "search.param_distributions.learning_rate.dist: must be int, float, categorical, uniform, loguniform or randint, got 'normal'",
        ),
        (["search.folds=50"], "search.folds: 50 folds need at least as many training queries"),
    ],
)
def test_tune_rejects_bad_search_spaces_before_creating_a_folder(
    overrides, message, tmp_path, capsys
):
    argv = ["tune", CONFIGS / "tune.yaml", *SMALL, "--out", tmp_path / "t"]
    for o in overrides:
        argv += ["--set", o]
    rc, _, err = run(argv, capsys)
    assert rc == 1 and message in err, err
    assert not (tmp_path / "t").exists()


def test_xgboost_engine_trains_and_evaluates(tmp_path, capsys):
    rc, _, err = run(
        [
            "train",
            CONFIGS / "quickstart.yaml",
            *SMALL,
            "--set",
            "model.engine=xgboost",
            "--set",
            "importance.enabled=false",
            "--set",
            "model.schedule.steps=[{k: 5, rounds: 2}, {k: 10, rounds: 2}]",
            "--out",
            tmp_path / "x",
        ],
        capsys,
    )
    assert rc == 0, err
    assert sorted(p.name for p in (tmp_path / "x" / "models").glob("stage_*")) == [
        "stage_00_k5.json",
        "stage_01_k10.json",
    ]
    saved = yaml.safe_load((tmp_path / "x" / "config.yaml").read_text())
    assert "xgboost" in saved["versions"]
    rc, out, err = run(["score", tmp_path / "x", "--json"], capsys)
    metrics = json.loads((tmp_path / "x" / "metrics.json").read_text())
    assert rc == 0 and json.loads(out)["test"] == pytest.approx(metrics["final"]["test"])


def test_an_engine_error_before_the_first_stage_leaves_no_folder(tmp_path, capsys):
    cfg = small_progressive(tmp_path)
    rc, _, err = run(
        ["train", cfg, "--set", "model.engine_params={objective: regression}"], capsys
    )
    assert rc == 1 and (
        "model: engine_params['objective'] is set by the training itself; use objective" in err
    )
    assert err.count("\n") == 1
    _assert_nothing_written(tmp_path)
    out = tmp_path / "named"
    out.mkdir()
    rc, _, err = run(
        ["train", cfg, "--set", "model.engine_params={objective: regression}", "--out", out], capsys
    )
    assert rc == 1 and out.is_dir() and not any(out.iterdir())


def test_tune_without_search_section_is_an_error(tmp_path, capsys):
    rc, _, err = run(["tune", CONFIGS / "quickstart.yaml", "--out", tmp_path / "t"], capsys)
    assert rc == 1 and "search: the config has no search section" in err
    assert not (tmp_path / "t").exists()


def test_importance_config_and_rerun_on_a_finished_run(tmp_path, capsys):
    rc, _, err = run(
        [
            "importance",
            CONFIGS / "importance.yaml",
            *SMALL,
            "--set",
            "model.n_estimators=3",
            "--set",
            "importance.n_repeats=1",
            "--out",
            tmp_path / "i",
        ],
        capsys,
    )
    assert rc == 0, err
    first = pd.read_csv(tmp_path / "i" / "importance.csv")
    assert "first_three" in set(first["feature"])  # the configured group is one row
    md = (tmp_path / "i" / "report.md").read_text()
    assert "1 repeats, strategy global" in md and "differ from the config" not in md
    rc, _out, err = run(
        ["importance", tmp_path / "i", "--repeats", "2", "--strategy", "within_query"], capsys
    )
    assert rc == 0, err
    metrics = json.loads((tmp_path / "i" / "metrics.json").read_text())
    assert (
        metrics["importance"]["strategy"] == "within_query"
        and metrics["importance"]["n_repeats"] == 2
    )
    # the report states the settings the table was computed with, not the training run's
    for page in ((tmp_path / "i" / "report.md").read_text(),
                 html.unescape((tmp_path / "i" / "report.html").read_text())):
        line = next(ln for ln in page.splitlines() if "Computed with:" in ln)
        assert "2 repeats, strategy within_query" in line and "on the test set" in line
        assert "Computed by ltr importance (after training)" in line
        assert "training run's: n_repeats 1, strategy global" in line
    rc, _, err = run(["importance", tmp_path / "i", "--set", "model.n_estimators=9"], capsys)
    assert rc == 1 and "with a finished run folder only importance.* can be changed" in err


def test_tabular_data_with_grade_presets_and_segments(tmp_path, capsys):
    rng = np.random.default_rng(0)
    rows = []
    for q in range(30):
        for _ in range(8):
            f = rng.normal(size=3)
            watch = float(np.clip(0.5 + 0.3 * f[0] + 0.1 * rng.normal(), 0, 1.2))
            rows.append(
                {
                    "session": q,
                    "market": "ab"[q % 2],
                    "f_a": f[0],
                    "f_b": f[1],
                    "f_c": f[2],
                    "watch_fraction": watch,
                    "share": rng.choice(["none", "copy_link", "social"], p=[0.7, 0.2, 0.1]),
                    "follow": rng.choice(["none", "like", "follow"], p=[0.7, 0.2, 0.1]),
                }
            )
    df = pd.DataFrame(rows)
    from ltr.relevance import PRESETS

    df["grade"] = PRESETS["watch"](df)
    df.to_csv(tmp_path / "sessions.csv", index=False)
    cfg = write_config(
        tmp_path / "tab.yaml",
        {
            "data": {
                "source": "csv",
                "train": "sessions.csv",
                "label": "grade",
                "qid": "session",
                "segment": "market",
                "split": {"valid": 0.2, "test": 0.2},
                "objectives": {
                    "watch": {"grades": "watch", "weight": 0.6},
                    "share": {"grades": "share", "weight": 0.25},
                    "follow": {"grades": "follow", "weight": 0.15},
                },
            },
            "model": {"n_estimators": 3, "num_leaves": 3, "min_child_samples": 5, "n_jobs": 1,
                      "objective": "lambdarank", "k": 5,
                      "objectives": {"watch": 0.6, "share": 0.25, "follow": 0.15}},
            "evaluation": {"per_segment": True, "smoothing": 5},
        },
    )
    rc, _, err = run(["train", cfg, "--out", tmp_path / "tab"], capsys)
    assert rc == 0, err
    # without a label column the first objective's grades are the label: same data, same model
    df.drop(columns="grade").to_csv(tmp_path / "sessions.csv", index=False)
    rc, _, err = run(
        ["train", cfg, "--set", "data.label=absent", "--out", tmp_path / "tab2"], capsys
    )
    assert rc == 0, err
    assert booster_text(tmp_path / "tab2") == booster_text(tmp_path / "tab")
    metrics = json.loads((tmp_path / "tab" / "metrics.json").read_text())
    assert set(metrics["composite"]["test"]) == {"composite", "watch", "share", "follow"}
    assert {r["segment"] for r in metrics["segments"]["test"]} <= {"a", "b"}
    saved = yaml.safe_load((tmp_path / "tab" / "config.yaml").read_text())
    assert saved["data"]["train"] == str((tmp_path / "sessions.csv").resolve())
    # features default to the columns that are neither labels, ids, segments nor raw behaviour
    from ltr.engines import RankingModel

    assert RankingModel.load(tmp_path / "tab" / "model.json").booster.num_feature() == 3


# --------------------------------------------------------------------------- evaluate / report / validate


def test_evaluate_a_run_folder_on_its_own_sets_matches_metrics_json(finished_run, capsys):
    run_dir, _ = finished_run
    rc, out, err = run(["score", run_dir, "--json"], capsys)
    assert rc == 0, err
    metrics = json.loads((run_dir / "metrics.json").read_text())
    got = json.loads(out)
    assert set(got) == {"valid", "test"}
    for name in got:
        assert got[name] == pytest.approx(metrics["final"][name])
    rc, out, _ = run(["score", run_dir, "--eval-at", "2", "7"], capsys)
    assert (
        rc == 0 and "ndcg@2" in out and "ndcg@7" in out and out.splitlines()[1].startswith("valid")
    )


def test_reusing_a_run_whose_data_changed_is_refused(finished_run, tmp_path, capsys):
    import shutil

    run_dir, _ = finished_run
    copy = tmp_path / "copy"
    shutil.copytree(run_dir, copy)
    metrics = json.loads((copy / "metrics.json").read_text())
    metrics["data"]["test"]["digest"] = "0" * 24  # as if the generator had changed since
    (copy / "metrics.json").write_text(json.dumps(metrics))
    rc, _, err = run(["score", copy], capsys)
    assert (
        rc == 1 and "data.test: the data loaded from the run's config differ from what run" in err
    )
    rc, _, err = run(["importance", copy], capsys)
    assert rc == 1 and "data.test: the data loaded from the run's config differ" in err


def test_evaluate_a_model_file_on_a_csv(finished_run, tmp_path, capsys):
    from ltr.runs.config import load_config
    from ltr.runs.data import load_data

    run_dir, _ = finished_run
    test = load_data(load_config(run_dir / "config.yaml"))["test"]
    frame = test.to_frame()
    frame.to_csv(tmp_path / "test.csv", index=False)
    rc, out, err = run(
        [
            "score",
            run_dir / "model.json",
            "--data",
            tmp_path / "test.csv",
            "--label",
            "label",
            "--qid",
            "qid",
            "--json",
        ],
        capsys,
    )
    metrics = json.loads((run_dir / "metrics.json").read_text())
    assert rc == 0, err
    assert json.loads(out)["test.csv"] == pytest.approx(metrics["final"]["test"])


def test_report_is_rerendered_identically(finished_run, capsys):
    run_dir, _ = finished_run
    before = (run_dir / "report.html").read_text()
    (run_dir / "report.html").unlink()
    rc, out, _ = run(["report", run_dir], capsys)
    assert rc == 0 and "report.html" in out
    assert (run_dir / "report.html").read_text() == before


def test_validate_accepts_every_shipped_config(capsys, monkeypatch):
    monkeypatch.chdir(REPO)
    for path in sorted(CONFIGS.glob("*.yaml")):
        if path.name == "monitor.yaml":  # a monitoring rule set: ltr monitor -c, not a run
            continue
        rc, out, err = run(["validate", path], capsys)
        assert rc == 0, err
        assert out.startswith("ok: ")
    rc, out, _ = run(
        ["validate", CONFIGS / "quickstart.yaml", "--set", "seed=7", "--print"], capsys
    )
    assert rc == 0 and yaml.safe_load(out)["seed"] == 7


# --------------------------------------------------------------------------- bad input


def _assert_nothing_written(tmp_path: Path) -> None:
    runs = tmp_path / "runs"
    assert not runs.exists() or not any(runs.iterdir())


@pytest.mark.parametrize(
    ("content", "overrides", "message"),
    [
        (None, [], r"ltr: error: config file not found: '.*missing\.yaml'"),
        ("model: [1, 2\n", [], r"ltr: error: .*bad\.yaml: not valid YAML \(line \d+, column \d+"),
        (
            {"model": {"tress": 5}},
            [],
            r"bad\.yaml: model\.tress: unknown key \(allowed: engine, n_estimators,",
        ),
        (
            {"model": {"n_estimators": "ten"}},
            [],
            r"bad\.yaml: model\.n_estimators: must be an integer, got 'ten'",
        ),
        (
            {},
            [
                "model.objective=lambdarank",
                "model.schedule.steps=[{k: 5, rounds: 2}, {k: 0, rounds: 2}]",
            ],
            r"bad\.yaml: model\.schedule\.steps\[1\]\.k: must be >= 1, got 0",
        ),
        ({}, ["model.n_estimators"], r"--set expects KEY=VALUE"),
        (
            {"data": {"source": "letor", "train": "no/such/file.txt"}},
            [],
            r"bad\.yaml: data\.train: file not found: 'no/such/file\.txt' \(looked in ",
        ),
    ],
)
def test_bad_configs_fail_with_one_line_before_any_work(
    content, overrides, message, tmp_path, capsys, monkeypatch
):
    monkeypatch.chdir(tmp_path)
    if content is None:
        path = tmp_path / "missing.yaml"
    else:
        path = tmp_path / "bad.yaml"
        path.write_text(content if isinstance(content, str) else yaml.safe_dump(content))
    argv = (
        ["train", path, "--set", f"output.runs_dir={tmp_path / 'runs'}"]
        if content is not None
        else ["train", path]
    )
    for o in overrides:
        argv += ["--set", o]
    rc, _out, err = run(argv, capsys)
    assert rc == 1
    assert err.count("\n") == 1 and err.startswith("ltr: error: ")
    assert "Traceback" not in err
    import re

    assert re.search(message, err), err
    _assert_nothing_written(tmp_path)


@pytest.mark.parametrize(
    ("drop", "data_overrides", "message"),
    [
        (
            "qid",
            {},
            r"data\.qid: column 'qid' not found in .*train\.csv \(columns: label, f1, f2\)",
        ),
        (
            "label",
            {},
            r"data\.label: column 'label' not found in .*train\.csv \(columns: qid, f1, f2\)",
        ),
        (
            None,
            {"features": ["f1", "f9"]},
            r"data\.features: column 'f9' not found in .*train\.csv",
        ),
        (None, {"segment": "market"}, r"data\.segment: column 'market' not found"),
    ],
)
def test_missing_columns_are_named_with_the_file(drop, data_overrides, message, tmp_path, capsys):
    frame = pd.DataFrame(
        {
            "label": [1, 0, 2, 0, 1, 0],
            "qid": [0, 0, 0, 1, 1, 1],
            "f1": np.arange(6.0),
            "f2": np.ones(6),
        }
    )
    if drop:
        frame = frame.drop(columns=drop)
    frame.to_csv(tmp_path / "train.csv", index=False)
    cfg = write_config(
        tmp_path / "c.yaml",
        {
            "data": {"source": "csv", "train": "train.csv", **data_overrides},
            "output": {"runs_dir": str(tmp_path / "runs")},
        },
    )
    rc, _, err = run(["train", cfg], capsys)
    assert rc == 1 and err.count("\n") == 1
    import re

    assert re.search(message, err), err
    _assert_nothing_written(tmp_path)


def test_validate_with_load_data_checks_columns(tmp_path, capsys):
    pd.DataFrame(
        {"label": [1, 0] * 5, "session": np.repeat(np.arange(5), 2), "f1": np.arange(10.0)}
    ).to_csv(tmp_path / "train.csv", index=False)
    cfg = write_config(tmp_path / "c.yaml", {"data": {"source": "csv", "train": "train.csv"}})
    rc, out, _ = run(["validate", cfg], capsys)
    assert rc == 0 and out.startswith("ok: ")  # the schema and the path are fine
    rc, _, err = run(["validate", cfg, "--load-data"], capsys)
    assert rc == 1 and "data.qid: column 'qid' not found in" in err
    rc, out, _ = run(["validate", cfg, "--load-data", "--set", "data.qid=session"], capsys)
    assert rc == 0 and out.startswith("ok: ")


def test_errors_show_a_traceback_only_with_debug(tmp_path, capsys):
    from ltr.runs.config import ConfigError

    rc, _, err = run(["validate", tmp_path / "none.yaml"], capsys)
    assert rc == 1 and "Traceback" not in err
    with pytest.raises(ConfigError, match="config file not found"):
        main(["validate", str(tmp_path / "none.yaml"), "--debug"])


def test_usage_errors_are_one_line_with_exit_status_2(capsys):
    rc, _, err = run(["train", "--bogus"], capsys)
    assert (
        rc == 2
        and err.startswith("ltr: error: unrecognized arguments: --bogus")
        and err.count("\n") == 1
    )
    rc, _, err = run(["frobnicate"], capsys)
    assert rc == 2 and "invalid choice: 'frobnicate'" in err
    rc, _, err = run(["train"], capsys)
    assert rc == 2 and "train needs CONFIG (or --resume RUN_DIR)" in err


def test_evaluate_and_report_reject_missing_inputs(tmp_path, finished_run, capsys):
    run_dir, _ = finished_run
    rc, _, err = run(
        ["score", tmp_path / "nope.json", "--data", tmp_path / "x.csv"], capsys
    )
    assert rc == 1 and "RUN_DIR|MODEL: file not found: " in err
    rc, _, err = run(["score", run_dir, "--data", tmp_path / "x.csv"], capsys)
    assert rc == 1 and "--data: file not found: " in err
    rc, _, err = run(["score", run_dir, "--eval-at", "0"], capsys)
    assert rc == 1 and "--eval-at[0] must be >= 1, got 0" in err
    rc, _, err = run(["report", tmp_path / "nothing"], capsys)
    assert rc == 1 and "run folder not found" in err
    rc, _, err = run(["importance", run_dir, "--repeats", "0"], capsys)
    assert rc == 2 and "--repeats: must be >= 1, got 0" in err


# --------------------------------------------------------------------------- report rendering


def test_run_report_renders_tables_from_plain_data(tmp_path):
    from ltr._io import write_atomic
    from ltr.runs.report import RunReport, plot_curves

    metrics = {
        "status": "complete",
        "engine": "lightgbm",
        "final": {
            "valid": {"ndcg@10": 0.5, "ndcg@1": 0.25},
            "test": {"ndcg@1": 0.125, "ndcg@10": 0.75},
        },
        "stages": [
            {
                "k": 5,
                "first_round": 0,
                "n_rounds": 2,
                "metrics": {"test": {"ndcg@1": 0.1}, "valid": {"ndcg@1": 0.2}},
            }
        ],
        "composite": {"test": {"composite": 0.5, "watch": 0.4}},
        "composite_k": 10,
    }
    report = RunReport(title="demo <run>", metrics=metrics, config={"seed": 3})
    md = report.to_markdown()
    # metric columns are ordered by k, valid before test in the stage table
    assert "| set | ndcg@1 | ndcg@10 |" in md and "| valid | 0.2500 | 0.5000 |" in md
    assert (
        "| stage | k | rounds | valid ndcg@1 | test ndcg@1 |" in md
        and "| 0 | 5 | 1-2 | 0.2000 | 0.1000 |" in md
    )
    assert "## Composite nDCG@10" in md and "seed: 3" in md
    page = report.to_html()
    assert "demo &lt;run&gt;" in page and "<img" not in page  # escaped, no images given
    assert report.to_dict()["images"] == {}
    assert plot_curves({}, tmp_path / "c.png") is None and not (tmp_path / "c.png").exists()
    path = plot_curves(
        {"valid": {"ndcg@10": [0.1, 0.2, 0.3]}},
        tmp_path / "c.png",
        stages=[{"k": 5, "first_round": 0}, {"k": 10, "first_round": 2}],
    )
    assert path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    write_atomic(tmp_path / "x.txt", "hello")
    assert sorted(p.name for p in tmp_path.iterdir()) == [
        "c.png",
        "x.txt",
    ]  # no temporary files left

"""Bad input at the command line and in configs: a clear error before any work, nothing written.

Table-driven: every case runs ``ltr.cli.main(argv)`` in-process and asserts the exit
status, a message fragment naming the config key or CLI option and the bad value, and
that no run folder (or file) was left behind.  Config errors are checked through both
``ltr validate`` and ``ltr train``: what ``train`` refuses, ``validate`` refuses first.
The Python API and data-file cases are in ``test_bad_input.py``.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
import yaml

from ltr.cli import main

SMALL = {
    "seed": 0,
    "data": {
        "source": "synthetic",
        "synthetic": {"n_queries": 30, "n_features": 6, "mean_docs": 8, "max_docs": 20},
    },
    "model": {"n_estimators": 3, "num_leaves": 4, "min_child_samples": 2, "n_jobs": 1,
              "objective": "native", "k": 5},
}


def _config(tmp_path: Path, **sections) -> Path:
    data = json.loads(json.dumps(SMALL))
    for key, value in sections.items():
        if isinstance(value, dict) and isinstance(data.get(key), dict):
            data[key].update(value)
        else:
            data[key] = value
    data["output"] = {"runs_dir": str(tmp_path / "runs"), "name": "bad"}
    path = tmp_path / "c.yaml"
    path.write_text(yaml.safe_dump(data, sort_keys=False))
    return path


def _run(argv, capsys) -> tuple[int, str]:
    rc = main([str(a) for a in argv])
    out, err = capsys.readouterr()
    return rc, out + err


def _nothing_written(tmp_path: Path) -> None:
    runs = tmp_path / "runs"
    assert not runs.exists() or not any(runs.iterdir()), sorted(runs.iterdir())
    assert not list(tmp_path.rglob("*.tmp"))


# (id, config sections, --set overrides, message fragment)
CONFIG_CASES = [
    ("unknown-key", {}, ["model.n_trees=5"], "model.n_trees: unknown key"),
    ("rounds-beyond-int64", {}, ["model.n_estimators=99999999999999999999999"],
     "model.n_estimators: must be <= 2147483647, got 99999999999999999999999"),
    ("k-beyond-int32", {}, ["model.k=10000000000"], "model.k: must be <= 2147483647"),
    ("eval-at-zero", {}, ["evaluation.eval_at=[0]"], "evaluation.eval_at[0]: must be >= 1, got 0"),
    ("eval-at-repeated", {}, ["evaluation.eval_at=[5, 5]"],
     "evaluation.eval_at: eval_at lists cut-off 5 more than once"),
    ("negative-learning-rate", {}, ["model.learning_rate=-0.1"],
     "model.learning_rate: must be > 0"),
    ("unknown-engine", {}, ["model.engine=catboost"], "model.engine"),
    ("infinite-learning-rate", {}, ["model.learning_rate=.inf"],
     "model.learning_rate: must be a finite number, got inf"),
    ("nan-sigma", {}, ["model.sigma=.nan"], "model.sigma: must be a finite number"),
    ("steps-k-zero", {}, ["model.schedule.steps=[{k: 0, rounds: 2}]"],
     "model.schedule.steps[0].k: must be >= 1, got 0"),
    ("rounds-cut-the-schedule", {}, [
        "model.schedule.steps=[{k: 3, rounds: 2}, {k: 5, rounds: 4}]", "model.n_estimators=5"],
     "model: n_estimators=5 would cut schedule="),
    ("native-with-sampling", {}, ["model.sampling={top: 5}"],
     "model: objective='native' cannot use sampling"),
    ("composite-without-objectives", {}, ["model.objective=lambdarank",
                                          "model.objectives={watch: 1.0}"],
     "model.objectives.watch: the composite objective trains on data.objectives, which has none"),
    ("old-key", {}, ["model.rounds=5"], "model.rounds is now model.n_estimators"),
    ("synthetic-too-big", {}, ["data.synthetic.n_queries=100000000",
                               "data.synthetic.mean_docs=100", "data.synthetic.max_docs=100"],
     "data.synthetic: about 10,000,000,000 rows"),
    ("max-docs-below-mean", {}, ["data.synthetic.max_docs=4"],
     "data.synthetic.max_docs: must be >= mean_docs (8), got 4"),
    ("importance-unknown-feature", {}, ["importance.enabled=true", "importance.features=[f99]"],
     "importance.features: unknown feature 'f99'; synthetic data has f1..f6"),
    ("importance-unknown-group-feature", {}, [
        "importance.enabled=true", "importance.groups={g: [f1, nope]}"],
     "importance.groups.g: unknown feature 'nope'"),
    ("run-name-too-long", {}, ["output.name=" + "a" * 250],
     "output.name: 250 characters is too long"),
    ("run-name-path-traversal", {}, ["output.name=../../etc"], "output.name: must be letters"),
    ("reserved-engine-param", {}, ["model.engine_params={objective: regression}"],
     "model: engine_params['objective'] is set by the training itself; use objective instead"),
    ("reserved-rounds-param", {}, ["model.engine_params={num_iterations: 7}"],
     "engine_params['num_iterations'] is set by the training itself; use n_estimators"),
    ("reserved-truncation-param", {}, ["model.engine_params={lambdarank_truncation_level: 3}"],
     "use k or schedule"),
    ("xgboost-reserved-param", {}, ["model.engine=xgboost",
                                    "model.engine_params={n_estimators: 3}"],
     "engine_params['n_estimators'] is set by the training itself"),
    ("split-leaves-nothing", {}, ["data.split={valid: 0.5, test: 0.5}"],
     "valid + test must be < 1"),
    ("letor-missing-file", {"data": {"source": "letor", "train": "nowhere/rank.train"}}, [],
     "data.train: file not found: 'nowhere/rank.train'"),
    ("set-without-equals", {}, ["model.n_estimators"], "--set expects KEY=VALUE"),
    ("set-bad-yaml-value", {}, ["model.n_estimators=[1,"], "--set model.n_estimators: value"),
]


@pytest.mark.parametrize("command", ["validate", "train"])
@pytest.mark.parametrize(
    ("sections", "overrides", "fragment"),
    [c[1:] for c in CONFIG_CASES],
    ids=[c[0] for c in CONFIG_CASES],
)
def test_config_errors_are_caught_by_validate_and_before_train_does_any_work(
    tmp_path, capsys, command, sections, overrides, fragment
):
    path = _config(tmp_path, **sections)
    argv = [command, path]
    for o in overrides:
        argv += ["--set", o]
    rc, text = _run(argv, capsys)
    assert rc == 1, text
    assert fragment in text, text
    assert text.count("\n") == 1 and text.startswith("ltr: error: ")
    _nothing_written(tmp_path)


def _write(tmp_path: Path, name: str, text: str) -> Path:
    path = tmp_path / name
    path.write_text(text)
    return path


FILE_CASES = [
    ("duplicate-key", "seed: 1\nmodel:\n  n_estimators: 3\n  n_estimators: 5\n",
     "key 'n_estimators' is given twice (lines 3 and 4)"),
    ("empty-file", "", "the config is empty"),
    ("not-a-mapping", "- 1\n- 2\n", "the config must be a mapping of sections"),
    ("yaml-syntax", "model: {n_estimators: 3\n", "not valid YAML"),
    ("python-tag", "seed: !!python/object/apply:os.system ['true']\n", "not valid YAML"),
    ("yes-key", "data:\n  split: {yes: 0.2}\n", "data.split"),
]


@pytest.mark.parametrize("command", ["validate", "train"])
@pytest.mark.parametrize(("text", "fragment"), [c[1:] for c in FILE_CASES],
                         ids=[c[0] for c in FILE_CASES])
def test_broken_config_files_are_refused_with_the_file_and_line(
    tmp_path, capsys, command, text, fragment
):
    path = _write(tmp_path, "c.yaml", text)
    rc, out = _run([command, path, "--set", f"output.runs_dir={tmp_path / 'runs'}"], capsys)
    assert rc == 1 and fragment in out and str(path) in out, out
    _nothing_written(tmp_path)


def test_a_folder_given_as_a_data_file_is_refused_by_validate(tmp_path, capsys):
    folder = tmp_path / "data"
    folder.mkdir()
    path = _config(tmp_path, data={"source": "letor", "train": str(folder)})
    for command in ("validate", "train"):
        rc, out = _run([command, path], capsys)
        assert rc == 1 and "data.train:" in out and "is a folder, not a data file" in out, out
    _nothing_written(tmp_path)


def test_data_errors_surface_in_validate_with_load_data(tmp_path, capsys):
    csv = _write(tmp_path, "d.csv", "query,label,f1\n1,0,0.5\n1,1,0.2\n2,0,0.1\n2,2,0.3\n")
    path = _config(tmp_path, data={"source": "csv", "train": str(csv)})
    rc, out = _run(["validate", path], capsys)
    assert rc == 0, out  # the file exists; only its columns are wrong
    rc, out = _run(["validate", path, "--load-data"], capsys)
    assert rc == 1 and "data.qid: column 'qid' not found" in out and "query" in out, out
    path = _config(tmp_path, data={"split": {"valid": 0.0, "test": 0.2}},
                   model={"early_stopping_rounds": 2})
    rc, out = _run(["validate", path, "--load-data"], capsys)
    assert rc == 1 and "model.early_stopping_rounds: needs a validation set" in out, out
    rc, out = _run(["train", path], capsys)
    assert rc == 1 and "model.early_stopping_rounds" in out
    _nothing_written(tmp_path)


@pytest.fixture(scope="module")
def finished(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("finished")
    path = _config(tmp)
    assert main(["train", str(path), "--out", str(tmp / "run")]) == 0
    return tmp / "run"


def test_evaluate_and_report_name_the_option_and_the_fix(tmp_path, finished, capsys):
    missing = tmp_path / "nope.txt"
    empty = _write(tmp_path, "empty.csv", "")
    cases = [
        (["score", tmp_path / "nope.json", "--data", missing],
         "RUN_DIR|MODEL: file not found"),
        (["score", finished, "--data", missing], "--data: file not found"),
        (["score", finished, "--eval-at", "0"], "--eval-at[0] must be >= 1, got 0"),
        (["score", finished, "--data", finished / "config.yaml",
          "--n-features", "0"], "--n-features must be >= 1, got 0"),
        (["report", tmp_path], "is not a run folder (no config.yaml)"),
        (["score", finished / "model.lightgbm.txt", "--data", missing],
         "is an engine's own model file (for serving without ltr); give the run folder"),
        (["monitor", empty, "--metric", "ndcg@10", "--window", "1h", "--min", "0.5"],
         "empty.csv': cannot be read as a table"),
        (["train", "--resume", tmp_path / "nothing"], "--resume: run folder not found"),
        (["importance", finished, "--set", "model.n_estimators=4"],
         "only importance.* can be changed"),
    ]
    for argv, fragment in cases:
        rc, out = _run(argv, capsys)
        assert rc == 1 and fragment in out, (argv, out)
    rc, out = _run(["frobnicate"], capsys)
    assert rc == 2 and "invalid choice" in out


def test_evaluate_refuses_a_letor_file_with_fewer_features_than_the_model(
    tmp_path, finished, capsys
):
    rows = [f"{i % 3} qid:{i // 4} 1:{i * 0.1} 2:0.5 3:1.0" for i in range(12)]
    data = _write(tmp_path, "small.letor", "\n".join(rows) + "\n")
    rc, out = _run(["score", finished, "--data", data], capsys)
    assert rc == 1 and "--data:" in out and "has 3 features but the model expects 6" in out, out
    assert "--n-features 6" in out
    rc, out = _run(["score", finished, "--data", data, "--n-features", "6",
                    "--json"], capsys)
    assert rc == 0, out  # trailing all-zero features, stated by the user


def test_out_folder_in_use_is_refused_and_left_untouched(tmp_path, capsys):
    out = tmp_path / "used"
    out.mkdir()
    (out / "keep.txt").write_text("mine")
    rc, text = _run(["train", _config(tmp_path), "--out", out], capsys)
    assert rc == 1 and "--out:" in text and "already exists and is not empty" in text
    assert sorted(p.name for p in out.iterdir()) == ["keep.txt"]


def test_a_damaged_stage_file_is_recomputed_on_resume_to_the_identical_model(tmp_path, capsys):
    path = _config(
        tmp_path,
        model={"n_estimators": None, "objective": "native", "schedule": {"steps": [
            {"k": 3, "rounds": 2}, {"k": 5, "rounds": 2}, {"k": 8, "rounds": 2}]}},
    )
    whole = tmp_path / "whole"
    assert _run(["train", path, "--out", whole], capsys)[0] == 0
    broken = tmp_path / "broken"
    assert _run(["train", path, "--out", broken], capsys)[0] == 0
    # the run "crashed" after stage 2, and stage 1's model file was truncated on disk
    for name in ("DONE", "model.json", "metrics.json"):
        (broken / name).unlink()
    stage1 = broken / "models" / "stage_01_k5.txt"
    stage1.write_text(stage1.read_text()[:200])
    rc, out = _run(["train", "--resume", broken], capsys)
    assert rc == 0, out
    # the CLI shows the library's warning as one line
    assert any(line.startswith("ltr: warning: stage file") and "stage_01_k5.txt" in line
               and "recomputes stage 1 from stage 0" in line for line in out.splitlines()), out
    a = json.loads((whole / "model.json").read_text())["model"]
    b = json.loads((broken / "model.json").read_text())["model"]
    assert a == b


def test_a_damaged_model_file_is_a_clear_error_not_a_crash(tmp_path, finished, capsys):
    copy = tmp_path / "model.json"
    data = json.loads((finished / "model.json").read_text())
    data["model"] = data["model"].replace("tree", "tRee", 1)
    copy.write_text(json.dumps(data))
    rc, out = _run(["score", copy, "--data", copy], capsys)
    assert rc == 1 and "fails the checksum" in out and str(copy) in out, out
    stages = tmp_path / "stages.json"
    stages.write_text("{not json")
    from ltr.engines._checkpoint import load_completed

    with pytest.raises(ValueError, match=r"stages\.json' is not valid JSON"):
        load_completed(tmp_path, True, "x")


def test_a_failed_write_names_its_path_and_leaves_no_temporary_file(tmp_path):
    from ltr._io import write_atomic

    target = tmp_path / "missing" / "x.json"
    with pytest.raises(OSError, match=r"cannot write '.*missing/x\.json'"):
        write_atomic(target, "{}")
    assert not list(tmp_path.rglob("*.tmp"))
    assert not any(p.name.endswith(".tmp") for p in tmp_path.rglob("*"))


def test_predict_writes_scores_that_evaluate_reproduces(tmp_path, finished, capsys):
    import pandas as pd

    from ltr.engines import RankingModel
    from ltr.metrics import ndcg

    rows = [f"{i % 3} qid:{i // 4} " + " ".join(f"{j}:{(i * j) % 7 / 7}" for j in range(1, 7))
            for i in range(24)]
    data = _write(tmp_path, "test.letor", "\n".join(rows) + "\n")
    out = tmp_path / "scores.csv"
    rc, text = _run(["predict", finished, "--data", data, "--out", out], capsys)
    assert rc == 0 and "scored 24 documents of 6 queries" in text, text
    table = pd.read_csv(out)
    assert list(table.columns) == ["qid", "doc_id", "score"]
    from ltr.datasets import load_letor

    ds = load_letor(data)
    model = RankingModel.load(finished / "model.json")
    np.testing.assert_allclose(table["score"], model.predict(ds.X), rtol=0, atol=1e-12)
    rc, text = _run(["score", finished, "--data", data, "--json"], capsys)
    ours = json.loads(text)["test.letor"]["ndcg@10"]
    assert ours == pytest.approx(
        float(ndcg(ds.y, table["score"], qid=ds.qid, k=10, convention="lightgbm")), abs=1e-12
    )
    rc, text = _run(["predict", finished, "--data", data], capsys)
    assert rc == 2 and "predict needs --out FILE, --trec-run FILE and/or --trec-qrels FILE" in text


def test_tabular_qid_that_restarts_is_refused_with_file_and_line(tmp_path, capsys):
    csv = _write(tmp_path, "d.csv",
                 "qid,label,f1\n1,0,0.5\n1,1,0.2\n2,0,0.1\n2,2,0.3\n1,1,0.9\n1,0,0.4\n")
    path = _config(tmp_path, data={"source": "csv", "train": str(csv),
                                   "split": {"valid": 0.0, "test": 0.0}})
    for argv in (["validate", path, "--load-data"], ["train", path]):
        rc, out = _run(argv, capsys)
        assert rc == 1 and "d.csv" in out and "line 6" in out, out
        assert "sort=True" not in out  # no Python argument advice at the command line
    _nothing_written(tmp_path)


def test_letor_files_of_one_run_share_one_feature_base(tmp_path, capsys):
    # the training file uses index 0, the test file only 1..3: one base for both
    train = _write(tmp_path, "tr.letor", "".join(
        f"{i % 3} qid:{i // 4} 0:{i} 1:0.5 2:{i % 5} 3:1\n" for i in range(40)))
    test = _write(tmp_path, "te.letor", "".join(
        f"{i % 2} qid:{i // 4} 1:0.5 2:{i % 5} 3:1\n" for i in range(12)))
    path = _config(tmp_path, data={"source": "letor", "train": str(train), "test": str(test),
                                   "split": {"valid": 0.2, "test": 0.0}})
    from ltr.runs.config import load_config, resolve_data_paths
    from ltr.runs.data import load_data

    sets = load_data(resolve_data_paths(load_config(path)))
    assert sets["train"].n_features == sets["test"].n_features == 4
    np.testing.assert_array_equal(sets["test"].X[:, 0], 0.0)  # no feature 0 in the test file
    np.testing.assert_array_equal(sets["test"].X[:, 1], 0.5)


def test_importance_without_a_held_out_set_is_refused_before_training(tmp_path, capsys):
    path = _config(tmp_path, data={"split": {"valid": 0.0, "test": 0.0}},
                   importance={"enabled": True, "n_repeats": 1})
    for argv in (["validate", path, "--load-data"], ["train", path]):
        rc, out = _run(argv, capsys)
        assert rc == 1 and "importance.evaluate_on: 'test', but the run has no test set" in out
    _nothing_written(tmp_path)


def test_library_warnings_print_as_one_line_at_the_command_line(tmp_path, capsys):
    path = _config(tmp_path, data={"synthetic": {"n_queries": 3, "n_features": 2,
                                                 "mean_docs": 1, "max_docs": 1},
                                   "split": {"valid": 0.0, "test": 0.0}})
    _rc, out = _run(["train", path, "--out", tmp_path / "w"], capsys)
    warning_lines = [line for line in out.splitlines() if "warning:" in line.lower()]
    assert warning_lines and all(line.startswith("ltr: warning: ") for line in warning_lines), out


@pytest.mark.parametrize(
    ("edit", "fragment"),
    [
        (lambda t: t.assign(**{"ndcg@10": t["ndcg@10"].astype(object).where(t.index != 0, "abc")}),
         "column 'ndcg@10' must hold numbers per query"),
        (lambda t: t.assign(**{"ndcg@10": t["ndcg@10"].where(t.index != 0, 5.0)}),
         "'ndcg@10' must lie in [0, 1] per query"),
        (lambda t: t.iloc[0:0], "holds no queries"),
    ],
    ids=["non-numeric", "out-of-range", "empty"],
)
def test_compare_refuses_broken_per_query_files(tmp_path, finished, capsys, edit, fragment):
    import pandas as pd

    table = pd.read_csv(finished / "per_query_test.csv")
    broken = tmp_path / "b.csv"
    edit(table).to_csv(broken, index=False)
    rc, out = _run(["compare", finished, broken, "--n-resamples", "50"], capsys)
    assert rc == 1 and fragment in out, out

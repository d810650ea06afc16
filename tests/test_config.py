"""Tests for ltr.runs.config: schema, YAML loading, --set overrides, one-line errors, paths."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from ltr.runs.config import (
    ConfigError,
    RunConfig,
    apply_overrides,
    config_fingerprint,
    config_to_dict,
    diff_configs,
    dump_config,
    load_config,
    parse_config,
    parse_override,
    resolve_data_paths,
)

REPO = Path(__file__).resolve().parents[1]
# monitor.yaml is a monitoring rule set (tested in test_monitoring.py), not a run config
CONFIGS = sorted(p for p in (REPO / "configs").glob("*.yaml") if p.name != "monitor.yaml")


def _write(path: Path, data) -> Path:
    path.write_text(yaml.safe_dump(data) if not isinstance(data, str) else data)
    return path


# --------------------------------------------------------------------------- shipped configs


def test_every_shipped_config_validates():
    assert {p.name for p in CONFIGS} >= {
        "quickstart.yaml",
        "letor.yaml",
        "progressive.yaml",
        "pair_sampling.yaml",
        "multiobjective.yaml",
        "tune.yaml",
        "importance.yaml",
        "compare.yaml",
    }
    for path in CONFIGS:
        cfg = load_config(path)
        assert isinstance(cfg, RunConfig)
        assert cfg.run_name == path.stem


def test_quickstart_is_progressive_5_10_20_with_importance_and_no_composite():
    cfg = load_config(REPO / "configs" / "quickstart.yaml")
    assert [(s.k, s.rounds) for s in cfg.model.schedule.steps][:3] == [
        (5, 20),
        (10, 20),
        (20, 20),
    ]
    assert cfg.model.objectives is None
    assert cfg.importance.enabled and cfg.importance.n_repeats >= 10  # intervals mean something
    assert cfg.n_rounds == 60


def test_multiobjective_weights_are_watch_share_follow():
    cfg = load_config(REPO / "configs" / "multiobjective.yaml")
    assert {k: v.weight for k, v in cfg.data.objectives.items()} == {
        "watch": 0.6,
        "share": 0.25,
        "follow": 0.15,
    }


def test_defaults_fill_every_section():
    cfg = parse_config({})
    assert cfg.data.source == "synthetic" and cfg.model.engine == "lightgbm"
    assert cfg.evaluation.eval_at == [1, 3, 5, 10, 20]
    assert cfg.n_rounds == 100 and cfg.run_name == "run"


# --------------------------------------------------------------------------- error messages


@pytest.mark.parametrize(
    ("data", "message"),
    [
        (
            {
                "model": {
                    "objective": "lambdarank",
                    "schedule": {"steps": [{"k": 5, "rounds": 3}, {"k": 0, "rounds": 3}]},
                }
            },
            "model.schedule.steps[1].k: must be >= 1, got 0",
        ),
        ({"model": {"n_estimators": "many"}}, "model.n_estimators: must be an integer, got 'many'"),
        ({"model": {"learning_rate": 0}}, "model.learning_rate: must be > 0"),
        (
            {"model": {"engine": "catboost"}},
            "model.engine: must be one of 'lightgbm' or 'xgboost', got 'catboost'",
        ),
        ({"model": {"n_trees": 5}}, "model.n_trees: unknown key (allowed: engine, n_estimators,"),
        ({"modle": {}}, "modle: unknown key (allowed: seed, data, model,"),
        ({"seed": -1}, "seed: must be >= 0, got -1"),
        ({"evaluation": {"eval_at": [1, 0]}}, "evaluation.eval_at[1]: must be >= 1, got 0"),
        (
            {"evaluation": {"eval_at": [5, 5]}},
            "evaluation.eval_at: eval_at lists cut-off 5 more than once",
        ),
        ({"evaluation": {"eval_at": "ten"}}, "evaluation.eval_at: must be a list, got 'ten'"),
        (
            {"evaluation": {"per_segment": "maybe"}},
            "evaluation.per_segment: must be true or false, got 'maybe'",
        ),
        ({"data": {"source": "parquet"}}, "data.train: source 'parquet' needs a 'train' file"),
        (
            {"data": {"source": "synthetic", "train": "x.csv"}},
            "data.source: 'synthetic' takes no train/valid/test files",
        ),
        (
            {"data": {"split": {"valid": 0.6, "test": 0.5}}},
            "data.split.test: valid + test must be < 1",
        ),
        (
            {"data": {"objectives": {"watch": {}}}},
            "data.objectives.watch.weight: required field is missing",
        ),
        (
            {
                "data": {
                    "source": "csv",
                    "train": "t.csv",
                    "objectives": {"watch": {"weight": 1, "grades": "wach"}},
                }
            },
            "data.objectives.watch.grades: unknown grade preset 'wach'",
        ),
        (
            {"data": {"objectives": {"watch": {"weight": 1, "grades": "watch"}}}},
            "data.objectives.watch.grades: synthetic data grades each objective itself",
        ),
        (
            {"model": {"objective": "native", "sampling": {"top": 5}}},
            "model: objective='native' cannot use sampling",
        ),
        (
            {"model": {"objectives": {"watch": 1.0}}},
            "model.objectives.watch: the composite objective trains on data.objectives",
        ),
        (
            {"model": {"n_estimators": 3, "schedule": {"steps": [{"k": 5, "rounds": 4}]}}},
            "model: n_estimators=3 would cut schedule=",
        ),
        (
            {"model": {"bias_norm": 0.5}},
            "model: bias_norm=0.5 only applies with unbiased=True",
        ),
        (
            {"model": {"engine_params": {"num_iterations": 5}}},
            ("model: engine_params['num_iterations'] is set by the training itself; use "
             "n_estimators"),
        ),
        (
            {"model": {"schedule": {}}},
            "model.schedule: give exactly one of 'steps' or 'linear'",
        ),
        (
            {"model": {"rounds": 10}, "objective": {"type": "native"}},
            ("the training keys are LambdaMARTRanker's parameters, all in the model section "
             "(docs/cli.md): model.rounds is now model.n_estimators; objective.type is now "
             "model.objective"),
        ),
        ({"output": {"name": "my run"}}, "output.name: must be letters, digits"),
        (
            {"search": {"method": "grid"}},
            "search.param_grid: method 'grid' needs a non-empty param_grid",
        ),
        (
            {"importance": {"strategy": "random"}},
            "importance.strategy: must be one of 'global' or 'within_query'",
        ),
        (
            {"evaluation": {"per_segment": True}},
            "evaluation.per_segment: true needs data.synthetic.n_segments >= 1",
        ),
    ],
)
def test_invalid_configs_are_rejected_with_the_field_path_and_value(data, message):
    with pytest.raises(ConfigError) as info:
        parse_config(data, source="run.yaml")
    text = str(info.value)
    assert text.startswith("run.yaml: ")
    assert message in text
    assert "\n" not in text


def test_several_problems_are_reported_on_one_line():
    with pytest.raises(
        ConfigError,
        match=r"model.n_estimators: must be >= 1, got 0; model.num_leaves: must be >= 2",
    ):
        parse_config({"model": {"n_estimators": 0, "num_leaves": 1}})


def test_top_level_must_be_a_mapping():
    with pytest.raises(
        ConfigError, match=r"the config must be a mapping of sections, got \[1, 2\]"
    ):
        parse_config([1, 2])


def test_yaml_boolean_keys_are_reported_readably(tmp_path):
    # YAML 1.1 reads a bare `on:` key as true: the error names where it is
    path = _write(tmp_path / "c.yaml", "importance:\n  on: test\n")
    with pytest.raises(
        ConfigError,
        match=r"importance\.true: unknown key \(allowed: .*\) \(YAML reads bare on/off/yes/no as booleans",
    ):
        load_config(path)


# --------------------------------------------------------------------------- files


def test_missing_config_file_is_named(tmp_path):
    with pytest.raises(ConfigError, match=r"config file not found: '.*nope\.yaml'"):
        load_config(tmp_path / "nope.yaml")


def test_invalid_yaml_names_the_file_and_line(tmp_path):
    path = _write(tmp_path / "bad.yaml", "model:\n  n_estimators: 3\n   engine: x\n")
    with pytest.raises(ConfigError, match=r"bad\.yaml: not valid YAML \(line 3, column \d+"):
        load_config(path)


def test_empty_yaml_file_is_an_error_and_explicit_braces_mean_all_defaults(tmp_path):
    with pytest.raises(ConfigError, match="empty.yaml: the config is empty"):
        load_config(_write(tmp_path / "empty.yaml", ""))
    cfg = load_config(_write(tmp_path / "braces.yaml", "{}\n"))
    assert cfg.run_name == "braces" and cfg.source == tmp_path / "braces.yaml"


def test_dump_and_reload_round_trips(tmp_path):
    cfg = load_config(REPO / "configs" / "multiobjective.yaml")
    again = parse_config(yaml.safe_load(dump_config(cfg)))
    assert config_to_dict(again) == config_to_dict(cfg)


def test_fingerprint_ignores_output_and_versions_only():
    a = parse_config({"output": {"name": "a"}})
    b = parse_config({"output": {"name": "b", "runs_dir": "elsewhere"}, "versions": {"ltr": "9"}})
    c = parse_config({"seed": 1})
    assert config_fingerprint(a) == config_fingerprint(b)
    assert config_fingerprint(a) != config_fingerprint(c)
    assert diff_configs(config_to_dict(a), config_to_dict(c)) == [
        "output.name: 'a' vs None",
        "seed: 0 vs 1",
    ]


# --------------------------------------------------------------------------- overrides


def test_overrides_parse_values_as_yaml():
    assert parse_override("model.n_estimators=20") == (["model", "n_estimators"], 20)
    assert parse_override("evaluation.eval_at=[1, 5]") == (["evaluation", "eval_at"], [1, 5])
    assert parse_override("output.name=null") == (["output", "name"], None)
    assert parse_override("model.schedule.steps[1].k=3") == (
        ["model", "schedule", "steps", 1, "k"],
        3,
    )
    assert parse_override("output.name=a=b") == (["output", "name"], "a=b")


def test_overrides_apply_before_validation_and_create_sections():
    raw = {
        "model": {
            "objective": "lambdarank",
            "schedule": {"steps": [{"k": 5, "rounds": 3}, {"k": 10, "rounds": 3}]},
        }
    }
    cfg = parse_config(
        raw,
        overrides=[
            "model.schedule.steps[1].rounds=7",
            "model.learning_rate=0.2",
            "data.synthetic.n_queries=50",
        ],
    )
    assert (
        cfg.n_rounds == 10 and cfg.model.learning_rate == 0.2 and cfg.data.synthetic.n_queries == 50
    )
    assert raw["model"]["schedule"]["steps"][1]["rounds"] == 3  # input untouched
    with pytest.raises(ConfigError, match=r"model.schedule.steps\[1\].k: must be >= 1, got 0"):
        parse_config(raw, overrides=["model.schedule.steps[1].k=0"])
    with pytest.raises(ConfigError, match=r"model.depth: unknown key"):
        parse_config({}, overrides=["model.depth=3"])


@pytest.mark.parametrize(
    ("override", "message"),
    [
        ("model.n_estimators", r"--set expects KEY=VALUE \(e.g. model.n_estimators=20\), got 'model.n_estimators'"),
        ("=3", r"--set: empty key"),
        ("model..n_estimators=3", r"--set: invalid key 'model..n_estimators'"),
        ("model.schedule.steps[5].k=3", r"model.schedule.steps has no item 5"),
        ("seed.x=3", r"seed: must be an integer, got \{'x': 3\}"),
        ("model.n_estimators[0]=3", r"model.n_estimators is not a list"),
        ("model.n_estimators=[1, 2", r"--set model.n_estimators: value '\[1, 2' is not valid YAML"),
    ],
)
def test_bad_overrides_are_one_line_errors(override, message):
    raw = {"model": {"objective": "lambdarank", "schedule": {"steps": [{"k": 5, "rounds": 3}]}}}
    with pytest.raises(ConfigError, match=message):
        parse_config(raw, overrides=[override])


def test_apply_overrides_returns_a_copy():
    raw = {"model": {"n_estimators": 3}}
    out = apply_overrides(raw, ["model.n_estimators=4"])
    assert out == {"model": {"n_estimators": 4}} and raw == {"model": {"n_estimators": 3}}


# --------------------------------------------------------------------------- data paths


def test_relative_data_paths_resolve_against_cwd_then_config_folder_then_its_parent(
    tmp_path, monkeypatch
):
    root = tmp_path / "repo"
    (root / "configs").mkdir(parents=True)
    (root / "data").mkdir()
    (root / "data" / "train.csv").write_text("label,qid,f\n1,0,0.5\n")
    (root / "configs" / "local.csv").write_text("label,qid,f\n1,0,0.5\n")
    cfg_path = _write(
        root / "configs" / "c.yaml",
        {
            "data": {"source": "csv", "train": "data/train.csv", "test": "local.csv"},
        },
    )
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    monkeypatch.chdir(elsewhere)
    cfg = resolve_data_paths(load_config(cfg_path))
    assert cfg.data.train == str(
        (root / "data" / "train.csv").resolve()
    )  # the config folder's parent
    assert cfg.data.test == str((root / "configs" / "local.csv").resolve())  # the config folder
    # the current directory wins when the file exists there
    (elsewhere / "data").mkdir()
    (elsewhere / "data" / "train.csv").write_text("label,qid,f\n1,0,0.5\n")
    cfg = resolve_data_paths(load_config(cfg_path))
    assert cfg.data.train == str((elsewhere / "data" / "train.csv").resolve())
    assert cfg.source == cfg_path


def test_missing_data_file_names_the_field_and_where_it_looked(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    cfg_path = _write(
        tmp_path / "c.yaml", {"data": {"source": "letor", "train": "nowhere/rank.train"}}
    )
    with pytest.raises(
        ConfigError,
        match=r"c\.yaml: data\.train: file not found: 'nowhere/rank\.train' \(looked in ",
    ):
        resolve_data_paths(load_config(cfg_path))


def test_shipped_letor_config_runs_on_the_committed_slice_or_says_where_it_looked(
    tmp_path, monkeypatch
):
    from ltr.testing import letor_slice_path

    # from the repository root and from configs/: the committed slice, no ../shared needed
    for where in (REPO, REPO / "configs"):
        monkeypatch.chdir(where)
        cfg = resolve_data_paths(load_config(REPO / "configs" / "letor.yaml"))
        assert Path(cfg.data.train) == (letor_slice_path() / "rank.train").resolve()
        assert Path(cfg.data.test) == (letor_slice_path() / "rank.test").resolve()
    # a copy outside the clone (as `ltr init` makes): a clear error naming the key and file
    (tmp_path / "configs").mkdir()
    copy = tmp_path / "configs" / "letor.yaml"
    copy.write_text((REPO / "configs" / "letor.yaml").read_text())
    monkeypatch.chdir(tmp_path)
    with pytest.raises(
        ConfigError,
        match=r"data\.train: file not found: 'tests/data/lightgbm-lambdarank/rank\.train'",
    ):
        resolve_data_paths(load_config(copy))
"""One parameter set: a config's ``model`` section is ``LambdaMARTRanker``'s parameters.

The section is generated from the estimator's signature and constraint table
(``ltr.runs.training_config``): same names, same defaults, same accepted values
and the same rules for combinations.  Every training config in ``configs/``
(reduced in size with ``--set``) trains the model that the estimator trains with
the section's values, bit for bit, including a linear schedule on the native
objective and a schedule shorter than ``n_estimators``.  Configs in the old
layout are refused with the new key's name; run folders written in the old
layout still load (migrated in memory, one warning) for predict, resume,
importance and report.
"""

from __future__ import annotations

import dataclasses
import inspect
import json
import warnings
from pathlib import Path

import numpy as np
import pytest
import yaml
from pydantic import ValidationError
from sklearn.utils._param_validation import InvalidParameterError, validate_parameter_constraints

from ltr.build import TrainSettings
from ltr.cli import main
from ltr.engines import RankingModel
from ltr.estimator import LambdaMARTRanker
from ltr.runs.config import ConfigError, load_config, parse_config
from ltr.runs.data import load_data
from ltr.runs.folder import load_run_config
from ltr.runs.training_config import RUN_PARAMETERS, YAML_FORMS, ModelConfig

REPO = Path(__file__).resolve().parents[1]
CONFIGS = REPO / "configs"


def _signature() -> dict[str, inspect.Parameter]:
    params = dict(inspect.signature(LambdaMARTRanker.__init__).parameters)
    params.pop("self")
    return params


# --------------------------------------------------------------------------- one parameter set


def test_model_section_and_settings_are_the_estimators_parameters_with_its_defaults():
    signature = _signature()
    training = {n: p for n, p in signature.items() if n not in RUN_PARAMETERS}
    # a parameter added to one side only fails here
    assert list(ModelConfig.model_fields) == list(training)
    assert {f.name for f in dataclasses.fields(TrainSettings)} == set(training) | {"random_state"}
    assert set(LambdaMARTRanker._parameter_constraints) == set(signature)
    assert set(RUN_PARAMETERS) <= set(signature)
    for name, param in training.items():
        assert ModelConfig.model_fields[name].default == param.default, name
        assert TrainSettings.__dataclass_fields__[name].default == param.default, name
    section = parse_config({}).model
    assert {n: getattr(section, n) for n in training} == {
        n: p.default for n, p in training.items()
    }


#: Values around each scalar parameter's boundaries (and of the wrong type).
_PROBES = [-1, 0, 1, 2, 2**31 - 1, 2**31, 0.5, -0.5, 1.0, float("inf"), float("nan"), "5",
           "native", "lambdarank", "exact", "lightgbm", "xgboost", "fast", True, None]


@pytest.mark.parametrize(
    "name", [n for n in _signature() if n not in RUN_PARAMETERS and n not in YAML_FORMS]
)
def test_config_accepts_exactly_the_values_the_estimator_accepts(name):
    constraints = {name: LambdaMARTRanker._parameter_constraints[name]}
    for value in _PROBES:
        try:
            validate_parameter_constraints(constraints, {name: value}, "LambdaMARTRanker")
            by_estimator = True
        except InvalidParameterError:
            by_estimator = False
        if isinstance(value, float) and not np.isfinite(value):
            by_estimator = False  # the estimator's engines refuse inf/nan (config: at load)
        if isinstance(value, bool) and name not in ("unbiased", "position_term"):
            by_estimator = False  # a bool is no count or rate (the engines refuse it)
        try:
            ModelConfig.model_validate({name: value})
            by_config = True
        except ValidationError:
            by_config = False
        assert by_config == by_estimator, (name, value, by_config, by_estimator)


def test_combinations_follow_one_rule_on_both_paths():
    X = np.random.default_rng(0).normal(size=(60, 3))
    y = np.random.default_rng(1).integers(0, 3, 60).astype(float)
    qid = np.repeat(np.arange(6), 10)
    cases = [
        ({"objective": "native", "sampling": {"top": 5}}, "objective='native' cannot use sampling"),
        ({"bias_norm": 2.0}, "bias_norm=2.0 only applies with unbiased=True"),
        ({"bias_cost": "pair_loss"}, "bias_cost='pair_loss' is the pair cost of ltr's learned"),
        ({"n_estimators": 3, "schedule": {"steps": [{"k": 5, "rounds": 4}]}},
         "n_estimators=3 would cut schedule"),
        ({"engine_params": {"num_iterations": 3}},
         "engine_params['num_iterations'] is set by the training itself; use n_estimators"),
    ]
    from ltr.objectives.sampling import TopKPairSampling

    for section, message in cases:
        with pytest.raises(ConfigError, match=f"model: {message}".replace("(", r"\(")
                           .replace(")", r"\)").replace("[", r"\[").replace("]", r"\]")):
            parse_config({"model": section})
        kwargs = dict(section)
        if "sampling" in kwargs:
            kwargs["sampling"] = TopKPairSampling(**kwargs["sampling"])
        if "schedule" in kwargs:
            kwargs["schedule"] = [(s["k"], s["rounds"]) for s in kwargs["schedule"]["steps"]]
        with pytest.raises(ValueError, match=message.split(" would")[0].replace("[", r"\[")
                           .replace("]", r"\]").replace("(", r"\(").replace(")", r"\)")):
            LambdaMARTRanker(**kwargs).fit(X, y, qid=qid)


def test_old_keys_are_refused_with_their_new_name():
    with pytest.raises(ConfigError) as info:
        parse_config(
            {
                "model": {"rounds": 5, "min_data_in_leaf": 3, "params": {}},
                "objective": {"type": "native", "k": 5, "composite": False},
            },
            source="old.yaml",
        )
    text = str(info.value)
    for old, new in [("model.rounds", "model.n_estimators"),
                     ("model.min_data_in_leaf", "model.min_child_samples"),
                     ("model.params", "model.engine_params"),
                     ("objective.type", "model.objective"), ("objective.k", "model.k"),
                     ("objective.composite", "model.objectives")]:
        assert f"{old} is now {new}" in text
    assert text.startswith("old.yaml: ") and "\n" not in text
    with pytest.raises(ConfigError, match="objective.k is now model.k"):
        parse_config({}, overrides=["objective.k=5"])


# --------------------------------------------------------------------------- configs = estimator

SMALL = ["data.synthetic.n_queries=40", "data.synthetic.n_features=6",
         "data.synthetic.mean_docs=10", "data.synthetic.max_docs=20",
         "model.n_jobs=1", "importance.enabled=false", "cluster=null"]


def _training_configs() -> list:
    cases = []
    for path in sorted(CONFIGS.glob("*.yaml")):
        raw = yaml.safe_load(path.read_text())
        if "model" not in raw:  # not a training config (monitor.yaml)
            continue
        model = raw["model"]
        extra = []
        if model.get("schedule"):
            steps = "[{k: 3, rounds: 2}, {k: 5, rounds: 2}]"
            extra.append(f"model.schedule={{steps: {steps}}}")
            extra.append("model.n_estimators=null")
        else:
            extra.append("model.n_estimators=4")
        cases.append(pytest.param(path.name, extra, id=path.stem))
    # the rules decided once: a linear schedule on the native objective (one stage per k)
    # and a schedule shorter than n_estimators (its last k kept)
    cases.append(pytest.param("quickstart.yaml", [
        "model.objective=native", "model.schedule={linear: {start: 3, end: 6, rounds: 4}}",
        "model.n_estimators=null"], id="linear-native"))
    cases.append(pytest.param("progressive.yaml", [
        "model.schedule={steps: [{k: 3, rounds: 2}, {k: 5, rounds: 2}]}",
        "model.n_estimators=6"], id="schedule-shorter-than-rounds"))
    cases.append(pytest.param("quickstart.yaml", [
        "model.schedule={steps: [{k: 3, rounds: 2}, {k: 5, rounds: 2}]}",
        "model.n_estimators=6"], id="native-schedule-shorter-than-rounds"))
    return cases


def _python_value(name: str, value, seed: int):
    """The estimator's Python form of a YAML value, written independently of the config code."""
    from ltr.objectives.sampling import TopKPairSampling
    from ltr.objectives.schedules import Linear

    if value is None:
        return None
    if name == "schedule":
        if "linear" in value and value["linear"] is not None:
            return Linear(**value["linear"])
        return [(s["k"], s["rounds"]) for s in value["steps"]]
    if name == "sampling":
        return TopKPairSampling(**value, random_state=seed)
    return value


@pytest.mark.parametrize(("name", "overrides"), _training_configs())
def test_every_training_config_and_the_estimator_train_the_same_model(
    name, overrides, tmp_path, lambdarank_dir
):
    import pandas as pd

    from ltr.runs.commands import train_run

    sets_override = []
    if name == "letor.yaml":
        sets_override = [f"data.train={lambdarank_dir / 'rank.train'}",
                         f"data.test={lambdarank_dir / 'rank.test'}"]
    cfg = load_config(CONFIGS / name, [*SMALL, *sets_override, *overrides])
    run = train_run(cfg, out=tmp_path / "run")
    # the estimator, built from the YAML's model section as it is: same names, same values
    dumped = yaml.safe_load((run.run_dir / "config.yaml").read_text())
    seed = dumped["seed"]
    params = {k: _python_value(k, v, seed) for k, v in dumped["model"].items()}
    ranker = LambdaMARTRanker(**params, random_state=seed,
                              eval_at=dumped["evaluation"]["eval_at"])
    sets = load_data(cfg)

    def features(ds):  # data.categorical: those columns as pandas categories (the estimator's way)
        if not cfg.data.categorical:
            return ds.X
        frame = pd.DataFrame(ds.X, columns=list(ds.feature_names))
        return frame.astype({c: "category" for c in cfg.data.categorical})

    tr = sets["train"]
    y = tr.click if "click" in cfg.logged else tr.y
    if params["objectives"] is not None:
        y = pd.DataFrame({o: tr.labels[o] for o in params["objectives"]})
    fit = {"qid": tr.qid}
    if params["unbiased"]:
        fit["position"] = tr.position
    if "valid" in sets:  # the run's first eval set (early stopping watches it)
        va = sets["valid"]
        y_valid = va.y
        if params["objectives"] is not None:
            y_valid = pd.DataFrame({o: va.labels[o] for o in params["objectives"]})
        fit.update(eval_set=[(features(va), y_valid)], eval_qid=[va.qid])
    ranker.fit(features(tr), y, **fit)
    X_test = sets["test"].X
    by_run = RankingModel.load(run.run_dir / "model.json").predict(X_test)
    np.testing.assert_array_equal(by_run, ranker.predict(features(sets["test"])))
    assert ranker.model_.num_trees() == RankingModel.load(run.run_dir / "model.json").num_trees()


# --------------------------------------------------------------------------- old run folders


def _old_layout(raw: dict) -> dict:
    """The config.yaml that ltr wrote before the estimator's names (model + objective)."""
    m = raw["model"]
    old = {k: v for k, v in raw.items() if k != "model"}
    old["model"] = {
        "engine": m["engine"], "rounds": m["n_estimators"], "learning_rate": m["learning_rate"],
        "num_leaves": m["num_leaves"], "max_depth": m["max_depth"],
        "min_data_in_leaf": m["min_child_samples"],
        "early_stopping_rounds": m["early_stopping_rounds"], "n_jobs": m["n_jobs"],
        "params": m["engine_params"] or {},
    }
    old["objective"] = {
        "type": m["objective"], "k": m["k"], "schedule": m["schedule"], "sigma": m["sigma"],
        "sigmoid": m["sigmoid"], "sampling": m["sampling"],
        "composite": m["objectives"] is not None, "unbiased": m["unbiased"],
        "bias_norm": m["bias_norm"], "propensity": m["propensity"],
    }
    return old


def _run(argv, capsys) -> tuple[int, str]:
    rc = main([str(a) for a in argv])
    out, err = capsys.readouterr()
    return rc, out + err


def test_a_run_folder_in_the_old_layout_still_predicts_resumes_and_reports(tmp_path, capsys):
    config = tmp_path / "c.yaml"
    config.write_text(yaml.safe_dump({
        "seed": 2,
        "data": {"synthetic": {"n_queries": 40, "n_features": 5, "mean_docs": 8,
                               "max_docs": 16}},
        "model": {"objective": "native", "n_jobs": 1, "num_leaves": 5,
                  "schedule": {"steps": [{"k": 3, "rounds": 2}, {"k": 5, "rounds": 2}]}},
        "output": {"runs_dir": str(tmp_path / "runs")},
    }))
    whole, old = tmp_path / "whole", tmp_path / "old"
    for out in (whole, old):
        rc, text = _run(["train", config, "--out", out], capsys)
        assert rc == 0, text
    raw = yaml.safe_load((old / "config.yaml").read_text())
    (old / "config.yaml").write_text(yaml.safe_dump(_old_layout(raw), sort_keys=False))

    # loading migrates in memory, with one warning naming the moves
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        cfg = load_run_config(old)
    moved = [w for w in caught if issubclass(w.category, FutureWarning)]
    assert len(moved) == 1 and "model.rounds -> model.n_estimators" in str(moved[0].message)
    assert cfg.settings == load_run_config(whole).settings

    # report and importance on the finished run
    rc, text = _run(["report", old], capsys)
    assert rc == 0, text
    rc, text = _run(["importance", old, "--repeats", "1"], capsys)
    assert rc == 0, text
    # predict with its model
    data = tmp_path / "d.csv"
    sets = load_data(cfg)
    test = sets["test"]
    frame = {"qid": test.qid, "label": test.y}
    frame.update({f"f{j + 1}": test.X[:, j] for j in range(test.n_features)})
    import pandas as pd

    pd.DataFrame(frame).to_csv(data, index=False)
    rc, text = _run(["predict", old, "--data", data, "--out", tmp_path / "s.csv"], capsys)
    assert rc == 0, text
    scores = pd.read_csv(tmp_path / "s.csv")
    expected = RankingModel.load(whole / "model.json").predict(test.X)
    np.testing.assert_allclose(scores.iloc[:, -1].to_numpy(), expected, rtol=0, atol=1e-12)

    # resume: the run "crashed" after its stages; finishing it gives the uninterrupted model
    for name in ("DONE", "model.json", "metrics.json"):
        (old / name).unlink()
    rc, text = _run(["train", "--resume", old], capsys)
    assert rc == 0, text
    assert (json.loads((old / "model.json").read_text())["model"]
            == json.loads((whole / "model.json").read_text())["model"])


def test_old_composite_flag_migrates_to_the_weights_of_data_objectives():
    from ltr.runs.training_config import migrate_legacy

    old = {
        "data": {"objectives": {"watch": {"weight": 0.6}, "share": {"weight": 0.4}}},
        "model": {"rounds": 5, "params": {}},
        "objective": {"type": "lambdarank", "composite": True, "k": 7},
    }
    with pytest.warns(FutureWarning, match="objective.composite -> model.objectives"):
        new = migrate_legacy(old, "run/config.yaml: ")
    assert new["model"] == {"n_estimators": 5, "objective": "lambdarank",
                            "objectives": {"watch": 0.6, "share": 0.4}, "k": 7}
    assert "objective" not in new and old["model"] == {"rounds": 5, "params": {}}
    assert parse_config(new).settings.objectives == {"watch": 0.6, "share": 0.4}
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert migrate_legacy({"model": {"n_estimators": 3}}, "") == {"model": {"n_estimators": 3}}


def test_ltr_train_builds_and_validates_the_settings_once(tmp_path, monkeypatch, capsys):
    from ltr.runs import commands, config

    calls = {"validate_settings": 0, "build_training": 0}

    def counted(name, fn):
        def wrapper(*args, **kwargs):
            calls[name] += 1
            return fn(*args, **kwargs)
        return wrapper

    monkeypatch.setattr(config, "validate_settings",
                        counted("validate_settings", config.validate_settings))
    monkeypatch.setattr(commands, "build_training",
                        counted("build_training", commands.build_training))
    rc, text = _run(["train", CONFIGS / "quickstart.yaml", *[a for s in SMALL for a in
                                                            ("--set", s)],
                     "--set", "model.schedule.steps=[{k: 3, rounds: 2}]",
                     "--out", tmp_path / "r"], capsys)
    assert rc == 0, text
    assert calls == {"validate_settings": 1, "build_training": 1}


def test_a_search_space_is_checked_by_the_model_sections_rule(tmp_path):
    from ltr.runs.config import RunError
    from ltr.runs.tune_cmd import tune_run

    cfg = load_config(CONFIGS / "tune.yaml", [*SMALL, "search.param_grid={num_leaves: [7, 1]}",
                                              f"output.runs_dir={tmp_path}"])
    with pytest.raises(RunError, match=r"search.param_grid.num_leaves\[1\]: must be >= 2, got 1"):
        tune_run(cfg)
    cfg = load_config(CONFIGS / "tune.yaml", [*SMALL, "search.param_grid={rounds: [5]}"])
    with pytest.raises(RunError, match="search.param_grid.rounds: not a training setting"):
        tune_run(cfg)
    assert not any(tmp_path.iterdir())

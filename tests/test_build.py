"""The one builder: one set of settings trains one model through every path.

``ltr train`` (config -> RunConfig.settings -> build_training), ``ltr tune``
(the same, with a search's best parameters applied) and ``LambdaMARTRanker``
(its parameters -> build_training) must give identical models, on both engines.
Real LightGBM/XGBoost training on small synthetic data, real run folders.
"""

from __future__ import annotations

import csv
import json
from pathlib import Path

import numpy as np
import pytest
import yaml

from ltr.build import (
    TrainSettings,
    build_training,
    engine_params,
    resolve_objective,
    validate_settings,
)
from ltr.engines import RankingModel
from ltr.estimator import LambdaMARTRanker
from ltr.objectives.sampling import TopKPairSampling
from ltr.runs.commands import train_run
from ltr.runs.config import load_config
from ltr.runs.data import load_data
from ltr.runs.tune_cmd import tune_run

pytest.importorskip("xgboost")

# Deterministic engines: LightGBM with deterministic row-wise histograms on one
# thread, XGBoost hist on one thread.
_DETERMINISM = {
    "lightgbm": {"deterministic": True, "force_row_wise": True},
    "xgboost": {"tree_method": "hist"},
}


def _write(path: Path, data: dict) -> Path:
    path.write_text(yaml.safe_dump(data, sort_keys=False))
    return path


def _config(tmp_path: Path, engine: str, training: dict, **extra) -> Path:
    """A small run config; *training* holds more ``model`` keys (estimator parameters)."""
    data = {
        "seed": 3,
        "data": {
            "source": "synthetic",
            "synthetic": {"n_queries": 60, "n_features": 8, "mean_docs": 15, "max_docs": 40},
            "split": {"valid": 0.2, "test": 0.2},
        },
        "model": {
            "engine": engine,
            "n_estimators": 6,
            "num_leaves": 9,
            "max_depth": -1,
            "min_child_samples": 5,
            "n_jobs": 1,
            "engine_params": dict(_DETERMINISM[engine]),
            **training,
        },
        "output": {"runs_dir": str(tmp_path / "runs"), "name": f"b-{engine}"},
    }
    data.update(extra)
    return _write(tmp_path / f"{engine}.yaml", data)


@pytest.mark.parametrize("engine", ["lightgbm", "xgboost"])
@pytest.mark.parametrize(
    "objective",
    [
        {"objective": "native", "k": 5},
        {"objective": "lambdarank", "k": 5, "sampling": {"top": 5, "head_weight": 2.0}},
    ],
    ids=["native", "lambdarank-sampled"],
)
def test_one_config_trains_one_model_through_train_tune_and_the_estimator(
    tmp_path, engine, objective
):
    path = _config(tmp_path, engine, objective)
    cfg = load_config(path)
    trained = train_run(cfg, out=tmp_path / "train")

    tune_cfg = load_config(
        path,
        [
            "search={method: grid, param_grid: {num_leaves: [9]}, folds: 2}",
        ],
    )
    tuned = tune_run(tune_cfg, out=tmp_path / "tune")

    sets = load_data(cfg)
    settings = cfg.settings
    ranker = LambdaMARTRanker(**{f: getattr(settings, f) for f in settings.__dataclass_fields__})
    ranker.fit(sets["train"].X, sets["train"].y, qid=sets["train"].qid)

    X_test = sets["test"].X
    by_train = RankingModel.load(trained.run_dir / "model.json").predict(X_test)
    by_tune = RankingModel.load(tuned.run_dir / "model.json").predict(X_test)
    by_estimator = ranker.predict(X_test)
    np.testing.assert_array_equal(by_train, by_tune)
    np.testing.assert_array_equal(by_train, by_estimator)
    # ltr tune is a full run: same metrics.json format and values as ltr train
    for name in ("valid", "test"):
        for key, value in trained.final[name].items():
            assert tuned.final[name][key] == pytest.approx(value, abs=1e-12, rel=0)
    assert tuned.metrics["search"]["best_params"] == {"num_leaves": 9}
    assert tuned.run_dir.name == "tune"
    assert (tuned.run_dir / "search.csv").is_file() and (tuned.run_dir / "DONE").is_file()


def test_xgboost_max_depth_minus_one_means_no_depth_limit_on_every_path(tmp_path):
    settings = TrainSettings(engine="xgboost", max_depth=-1, num_leaves=40)
    assert engine_params(settings) == {
        "learning_rate": 0.1,
        "max_leaves": 40,
        "max_depth": 0,
        "grow_policy": "lossguide",
    }
    cfg = load_config(_config(tmp_path, "xgboost", {"objective": "native", "k": 5}))
    assert engine_params(cfg.settings)["grow_policy"] == "lossguide"
    run = train_run(cfg, out=tmp_path / "x")
    params = RankingModel.load(run.run_dir / "model.json").params
    assert params["max_depth"] == 0 and params["grow_policy"] == "lossguide"
    # a depth limit stays a depth limit
    assert engine_params(settings.replace(max_depth=4))["max_depth"] == 4
    assert engine_params(TrainSettings(max_depth=-1))["max_depth"] == -1


def test_objective_choice_is_explicit_or_inferred_and_native_refuses_ltr_only_options():
    assert resolve_objective(TrainSettings()) == "native"
    assert resolve_objective(TrainSettings(sampling=TopKPairSampling(top=5))) == "lambdarank"
    assert resolve_objective(TrainSettings(objectives={"a": 1.0})) == "lambdarank"
    assert resolve_objective(TrainSettings(objective="lambdarank")) == "lambdarank"
    assert resolve_objective(TrainSettings(unbiased=True)) == "lambdarank"
    with pytest.raises(ValueError, match="objective='native' cannot use sampling"):
        validate_settings(TrainSettings(objective="native", sampling=TopKPairSampling()))
    with pytest.raises(ValueError, match="objective='native' cannot use objectives"):
        validate_settings(TrainSettings(objective="native", objectives={"a": 1.0}))
    assert validate_settings(TrainSettings()).objective == "native"
    # build_training takes validated settings only (the objective resolved)
    with pytest.raises(ValueError, match="validate_settings"):
        build_training(TrainSettings())
    built = build_training(TrainSettings(objective="lambdarank", k=7, sigma=2.0, sigmoid="lightgbm"))
    obj = built["objective"]
    assert (obj.k, obj.sigma, obj.sigmoid) == (7, 2.0, "lightgbm")
    with pytest.raises(ValueError, match="unknown training setting"):
        TrainSettings().replace(leaves=3)


def test_estimator_objective_parameter_mirrors_the_config(tmp_path):
    X = np.random.default_rng(0).normal(size=(120, 4))
    y = np.random.default_rng(1).integers(0, 3, 120).astype(float)
    qid = np.repeat(np.arange(12), 10)
    with pytest.raises(ValueError, match="objective='native' cannot use sampling"):
        LambdaMARTRanker(objective="native", sampling=TopKPairSampling()).fit(X, y, qid=qid)
    ours = LambdaMARTRanker(objective="lambdarank", n_estimators=3, min_child_samples=5, n_jobs=1)
    ours.fit(X, y, qid=qid)
    assert ours.model_.params["objective"]["class"] == "LambdaRankObjective"
    native = LambdaMARTRanker(n_estimators=3, min_child_samples=5, n_jobs=1).fit(X, y, qid=qid)
    assert native.model_.params["objective"] == "lambdarank"


def test_composite_run_records_composite_ndcg_per_round_and_early_stops_on_it(tmp_path):
    path = _config(
        tmp_path,
        "lightgbm",
        {"objective": "lambdarank", "k": 10,
         "objectives": {"watch": 0.6, "share": 0.25, "follow": 0.15}},
        evaluation={"eval_at": [5, 10], "k": 10},
    )
    raw = yaml.safe_load(path.read_text())
    raw["data"]["objectives"] = {
        "watch": {"weight": 0.6},
        "share": {"weight": 0.25},
        "follow": {"weight": 0.15},
    }
    raw["model"].update(n_estimators=40, early_stopping_rounds=3, learning_rate=0.3)
    _write(path, raw)
    run = train_run(load_config(path), out=tmp_path / "c")
    with open(run.run_dir / "curves.csv", newline="") as fh:
        rows = list(csv.DictReader(fh))
    assert "valid:composite_ndcg@10" in rows[0] and "valid:ndcg@10/share" in rows[0]
    composite = np.array([float(r["valid:composite_ndcg@10"]) for r in rows])
    # the model keeps the stage's best round by the composite: the last kept round is its maximum
    assert composite[-1] == composite.max()
    model = RankingModel.load(run.run_dir / "model.json")
    assert model.num_trees() == len(rows)
    stage = run.metrics["stages"][0]
    if stage.get("early_stopped"):
        assert stage["rounds_run"] - stage["best_iteration"] == 3


def test_native_lightgbm_run_curve_equals_lightgbms_own_ndcg(tmp_path):
    import lightgbm as lgb

    path = _config(tmp_path, "lightgbm", {"objective": "native", "k": 5})
    cfg = load_config(path)
    run = train_run(cfg, out=tmp_path / "l")
    assert run.metrics["convention"] == "lightgbm"
    sets = load_data(cfg)
    built = build_training(cfg.settings)
    params = {**built["params"], "objective": "lambdarank", "lambdarank_truncation_level": 5,
              "metric": "ndcg", "eval_at": [10], "seed": 3, "num_threads": 1, "verbosity": -1,
              "min_data_in_leaf": 5}
    tr, va = sets["train"], sets["valid"]
    dtrain = lgb.Dataset(tr.X, tr.y, group=np.diff(tr.offsets))
    dvalid = lgb.Dataset(va.X, va.y, group=np.diff(va.offsets), reference=dtrain)
    record: dict = {}
    lgb.train(params, dtrain, num_boost_round=6, valid_sets=[dvalid], valid_names=["valid"],
              callbacks=[lgb.record_evaluation(record)])
    with open(run.run_dir / "curves.csv", newline="") as fh:
        ours = [float(r["valid:ndcg@10"]) for r in csv.DictReader(fh)]
    np.testing.assert_allclose(ours, record["valid"]["ndcg@10"], rtol=0, atol=1e-12)
    report = (run.run_dir / "report.md").read_text()
    assert "lightgbm" in report.lower() and "convention" in report.lower()


@pytest.mark.parametrize("engine", ["lightgbm", "xgboost"])
def test_run_folder_holds_the_engines_native_model_for_serving(tmp_path, engine):
    cfg = load_config(_config(tmp_path, engine, {"objective": "native", "k": 5}))
    run = train_run(cfg, out=tmp_path / "n")
    sets = load_data(cfg)
    X_test = sets["test"].X
    if engine == "lightgbm":
        import lightgbm as lgb

        booster = lgb.Booster(model_file=str(run.run_dir / "model.lightgbm.txt"))
        names = booster.feature_name()
        served = booster.predict(X_test)
    else:
        import xgboost as xgb

        booster = xgb.Booster(model_file=str(run.run_dir / "model.xgboost.json"))
        names = booster.feature_names
        served = booster.predict(xgb.DMatrix(X_test, feature_names=names), output_margin=True)
    assert list(names) == list(sets["train"].feature_names)
    model = RankingModel.load(run.run_dir / "model.json")
    np.testing.assert_allclose(served, model.predict(X_test), rtol=0, atol=1e-6)
    assert json.loads((run.run_dir / "metrics.json").read_text())["n_trees"] == 6


def test_run_folder_holds_per_query_values_whose_means_are_the_final_metrics(tmp_path):
    import pandas as pd

    cfg = load_config(_config(tmp_path, "lightgbm", {"objective": "native", "k": 5},
                              evaluation={"eval_at": [3, 10]}))
    run = train_run(cfg, out=tmp_path / "p")
    sets = load_data(cfg)
    for name in ("valid", "test"):
        table = pd.read_csv(run.run_dir / f"per_query_{name}.csv")
        assert list(table.columns) == ["qid", "ndcg@3", "ndcg@10"]
        qids = sets[name].qid[sets[name].offsets[:-1]]
        np.testing.assert_array_equal(table["qid"].to_numpy(), qids)
        for key, value in run.final[name].items():
            assert table[key].mean() == pytest.approx(value, abs=1e-12, rel=0)


def test_evaluation_metrics_matrix_reaches_metrics_json_and_per_query_files(tmp_path):
    import pandas as pd

    import ltr.metrics as rank_metrics

    path = _config(tmp_path, "lightgbm", {"objective": "native", "k": 5},
                   evaluation={"eval_at": [10], "metrics": ["map@10", "mrr", "precision@5",
                                                            "recall@10", "err@10", "hit_rate@3"]})
    cfg = load_config(path)
    run = train_run(cfg, out=tmp_path / "m")
    sets = load_data(cfg)
    test = sets["test"]
    scores = RankingModel.load(run.run_dir / "model.json").predict(test.X)
    expected = {
        "map@10": rank_metrics.average_precision(test.y, scores, offsets=test.offsets, k=10,
                                                 convention="lightgbm"),
        "mrr": rank_metrics.reciprocal_rank(test.y, scores, offsets=test.offsets, k=None,
                                            convention="lightgbm"),
        "precision@5": rank_metrics.precision(test.y, scores, offsets=test.offsets, k=5,
                                              convention="lightgbm"),
    }
    for key, value in expected.items():
        assert run.final["test"][key] == pytest.approx(float(value), abs=1e-12, rel=0)
    table = pd.read_csv(run.run_dir / "per_query_test.csv")
    assert {"ndcg@10", "map@10", "mrr", "precision@5", "recall@10", "err@10",
            "hit_rate@3"} <= set(table.columns)
    with pytest.raises(Exception, match=r"evaluation.metrics\[0\]"):
        load_config(path, ["evaluation.metrics=[mapp@10]"])

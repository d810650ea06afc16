"""Tests for ltr.engines: real LightGBM/XGBoost training (no mocks), stages, resume, errors."""

from __future__ import annotations

import json
import pickle
import sys

import lightgbm as lgb
import numpy as np
import pytest
import xgboost as xgb

from ltr.datasets import load_letor
from ltr.engines import RankingModel, train
from ltr.metrics import ndcg
from ltr.metrics.composite import composite_ndcg
from ltr.objectives import LambdaRankObjective
from ltr.objectives.schedules import Linear, Steps
from ltr.synthetic import make_ranking

N_FEATURES = 8


def _synthetic(n_queries: int, seed: int, docs: int = 20):
    rng = np.random.default_rng(seed)
    n = n_queries * docs
    X = rng.normal(size=(n, N_FEATURES))
    signal = X[:, 0] + 0.5 * X[:, 1] - 0.5 * X[:, 2] ** 2 + 0.7 * rng.normal(size=n)
    y = np.digitize(signal, np.quantile(signal, [0.5, 0.8, 0.95])).astype(np.float64)
    offsets = np.arange(0, n + 1, docs, dtype=np.int64)
    return X, y, offsets


@pytest.fixture(scope="module")
def data():
    X, y, offsets = _synthetic(40, 0)
    Xv, yv, ov = _synthetic(15, 1)
    return X, y, offsets, Xv, yv, ov


LGB_BASE = {"min_data_in_leaf": 5, "num_leaves": 7, "learning_rate": 0.2}
XGB_BASE = {"max_depth": 3, "learning_rate": 0.3}


def _lgb_params(k: int, seed: int = 0) -> dict:
    return {"objective": "lambdarank", "lambdarank_truncation_level": k, "learning_rate": 0.2,
            "num_leaves": 7, "min_data_in_leaf": 5, "deterministic": True, "force_row_wise": True,
            "verbosity": -1, "seed": seed, "metric": "None", "num_threads": 1}


def _lgb_dataset(X, y, offsets):
    return lgb.Dataset(X, label=y, group=np.diff(offsets), free_raw_data=False)


def _trees(booster: lgb.Booster) -> list[str]:
    """Tree blocks of a LightGBM model string (structure and leaf values)."""
    text = booster.model_to_string()
    body = text.split("end of trees")[0]
    return ["Tree=" + part.split("\n\n")[0] for part in body.split("Tree=")[1:]]


def _xgb_trees(booster: xgb.Booster) -> list[str]:
    return booster.get_dump(with_stats=False)


def _qid(offsets):
    return np.repeat(np.arange(len(offsets) - 1), np.diff(offsets))


class _RecordingObjective(LambdaRankObjective):
    """Our objective, recording the global round and k of every gradient call.

    Training works on a (shallow) copy of the objective, which shares the
    ``seen`` list: the list is the test's recorder, the only thing changed.
    """

    fail_at: int | None = None  # class attribute: the run's settings (fingerprint) stay the same

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.seen: list[tuple[int, int]] = []

    @property
    def seen_k(self) -> list[int]:
        return [k for _, k in self.seen]

    def round_gradients(self, preds, data, iteration):
        if self.fail_at is not None and iteration == self.fail_at:
            raise KeyboardInterrupt("simulated crash")
        self.seen.append((iteration, self.k_at(iteration)))
        return super().round_gradients(preds, data, iteration)


# ----------------------------------------------------------------------------
# native objectives against the engines' own APIs
# ----------------------------------------------------------------------------


def test_lightgbm_native_equals_direct_lightgbm_train(data):
    X, y, offsets, Xv, *_ = data
    model = train(X, y, offsets, k=10, num_boost_round=8, params=LGB_BASE, n_jobs=1)
    direct = lgb.train(_lgb_params(10), _lgb_dataset(X, y, offsets), num_boost_round=8)
    assert _trees(model.booster) == _trees(direct)
    np.testing.assert_array_equal(model.predict(Xv), direct.predict(Xv))
    assert model.num_trees() == 8
    assert model.stages == [{"k": 10, "first_round": 0, "n_rounds": 8, "best_iteration": 8,
                             "rounds_run": 8, "early_stopped": False, "path": None, "metrics": {}}]


def test_lightgbm_continued_training_equals_uninterrupted_when_k_is_unchanged(data):
    # The mechanism the stages use: a fresh Dataset, the previous model through its text form
    # as init_model, and the full params (objective included) passed again.
    X, y, offsets, Xv, *_ = data
    full = lgb.train(_lgb_params(20), _lgb_dataset(X, y, offsets), num_boost_round=10)
    first = lgb.train(_lgb_params(20), _lgb_dataset(X, y, offsets), num_boost_round=5)
    first = lgb.Booster(model_str=first.model_to_string())
    cont = lgb.train(_lgb_params(20), _lgb_dataset(X, y, offsets), num_boost_round=5,
                     init_model=first)
    assert _trees(cont) == _trees(full)
    np.testing.assert_array_equal(cont.predict(Xv), full.predict(Xv))


def test_lightgbm_stage_boundary_rebuilds_the_native_objective_with_the_stage_k(data):
    X, y, offsets, Xv, *_ = data
    common = {"params": LGB_BASE, "n_jobs": 1}
    to5 = train(X, y, offsets, schedule=Steps([(20, 5), (5, 5)]), **common)
    stay20 = train(X, y, offsets, schedule=Steps([(20, 5), (20, 5)]), **common)
    only_first = train(X, y, offsets, k=20, num_boost_round=5, **common)
    assert [s["k"] for s in to5.stages] == [20, 5]
    assert [s["k"] for s in stay20.stages] == [20]  # equal k: one stage
    # Same stage-1 model ...
    assert _trees(to5.booster)[:5] == _trees(only_first.booster) == _trees(stay20.booster)[:5]
    # ... then k=5 and k=20 give different gradients, hence different trees.
    assert _trees(to5.booster)[5:] != _trees(stay20.booster)[5:]
    assert not np.allclose(to5.predict(Xv), stay20.predict(Xv))
    # Stage 2 is exactly LightGBM's lambdarank with truncation 5 continued from stage 1.
    direct = lgb.train(_lgb_params(5, seed=1), _lgb_dataset(X, y, offsets), num_boost_round=5,
                       init_model=only_first.booster)
    assert _trees(to5.booster) == _trees(direct)


def test_xgboost_native_stage_boundary_and_continuation(data):
    X, y, offsets, Xv, *_ = data
    common = {"engine": "xgboost", "params": XGB_BASE, "n_jobs": 1}
    to5 = train(X, y, offsets, schedule=[(20, 4), (5, 4)], **common)
    stay20 = train(X, y, offsets, k=20, num_boost_round=8, **common)
    first = train(X, y, offsets, k=20, num_boost_round=4, **common)
    assert _xgb_trees(to5.booster)[:4] == _xgb_trees(first.booster) == _xgb_trees(stay20.booster)[:4]
    assert _xgb_trees(to5.booster)[4:] != _xgb_trees(stay20.booster)[4:]

    def params(k, seed):
        return {"objective": "rank:ndcg", "lambdarank_pair_method": "topk",
                "lambdarank_num_pair_per_sample": k, "tree_method": "hist", "max_depth": 3,
                "learning_rate": 0.3, "seed": seed, "nthread": 1,
                "disable_default_eval_metric": 1}

    dtrain = xgb.DMatrix(X, label=y, qid=_qid(offsets))
    direct = xgb.train(params(5, 1), dtrain, 4, xgb_model=first.booster)
    assert _xgb_trees(to5.booster) == _xgb_trees(direct)
    # continued training with an unchanged k equals one uninterrupted training
    full = xgb.train(params(20, 0), dtrain, 8)
    half = xgb.train(params(20, 0), dtrain, 4)
    cont = xgb.train(params(20, 0), dtrain, 4, xgb_model=half)
    assert _xgb_trees(cont) == _xgb_trees(full)
    np.testing.assert_array_equal(stay20.predict(Xv), full.inplace_predict(Xv, predict_type="margin"))


# ----------------------------------------------------------------------------
# custom objectives
# ----------------------------------------------------------------------------


@pytest.mark.parametrize("engine", ["lightgbm", "xgboost"])
def test_custom_objective_changes_k_every_round(data, engine):
    X, y, offsets, *_ = data
    obj = _RecordingObjective(schedule=Linear(start=5, end=20, rounds=6))
    params = LGB_BASE if engine == "lightgbm" else XGB_BASE
    model = train(X, y, offsets, engine=engine, objective=obj, params=params, n_jobs=1)
    assert model.num_trees() == 6
    assert obj.seen_k == [5, 8, 11, 14, 17, 20]
    assert obj.iteration == 0  # training used its own copy: the caller's object is unchanged
    assert [s["k"] for s in model.stages] == [5, 8, 11, 14, 17, 20]


@pytest.mark.parametrize("engine", ["lightgbm", "xgboost"])
def test_custom_objective_one_training_equals_checkpointed_stages(data, engine, tmp_path):
    # Without early stopping or stage_dir the whole schedule runs in one engine call; with
    # stage_dir each stage is a continued training.  Both give the same model and records.
    X, y, offsets, Xv, yv, ov = data
    kw = {"engine": engine, "schedule": [(5, 3), (20, 2), (10, 3)], "n_jobs": 1,
              "params": LGB_BASE if engine == "lightgbm" else XGB_BASE,
              "eval_sets": [("valid", Xv, yv, ov)], "eval_at": (3, 10)}
    one = train(X, y, offsets, objective=_RecordingObjective(), **kw)
    staged = train(X, y, offsets, objective=_RecordingObjective(), stage_dir=tmp_path, **kw)
    np.testing.assert_allclose(one.predict(Xv), staged.predict(Xv), rtol=1e-12, atol=1e-12)
    for key in ("ndcg@3", "ndcg@10"):
        np.testing.assert_allclose(one.evals_result["valid"][key], staged.evals_result["valid"][key],
                                   atol=1e-12)
    strip = [{**s, "path": None} for s in staged.stages]
    assert [s["k"] for s in one.stages] == [5, 20, 10]
    assert [s["n_rounds"] for s in one.stages] == [3, 2, 3]
    for a, b in zip(one.stages, strip):
        assert a.keys() == b.keys()
        for name in a["metrics"]:
            for key in a["metrics"][name]:
                assert a["metrics"][name][key] == pytest.approx(b["metrics"][name][key], abs=1e-12)


def test_train_schedule_is_applied_to_a_custom_objective_without_one(data):
    X, y, offsets, *_ = data
    obj = _RecordingObjective(k=10)
    train(X, y, offsets, objective=obj, schedule=[(5, 2), (10, 2)], params=LGB_BASE, n_jobs=1)
    assert obj.schedule is None  # the caller's object is not modified


def test_custom_lightgbm_mode_objective_reproduces_native_lambdarank(data):
    X, y, offsets, Xv, *_ = data
    native = train(X, y, offsets, k=10, num_boost_round=5, params=LGB_BASE, n_jobs=1)
    ours = train(X, y, offsets, objective=LambdaRankObjective(k=10, sigmoid="lightgbm"),
                 num_boost_round=5, params=LGB_BASE, n_jobs=1)
    np.testing.assert_allclose(ours.predict(Xv), native.predict(Xv), rtol=1e-5, atol=1e-6)


def test_xgboost_custom_objective_matches_the_objective_gradients_directly(data):
    # One round with our objective = one round of xgboost fitted on the gradients we compute.
    X, y, offsets, Xv, *_ = data
    model = train(X, y, offsets, engine="xgboost", objective=LambdaRankObjective(k=10),
                  num_boost_round=1, params=XGB_BASE, n_jobs=1)
    grad, hess = LambdaRankObjective(k=10).gradients(np.zeros(len(y)), y, offsets, 0)

    def fixed(preds, dmat):
        return grad, hess

    direct = xgb.train({"tree_method": "hist", "max_depth": 3, "learning_rate": 0.3, "seed": 0,
                        "nthread": 1, "base_score": 0.0, "disable_default_eval_metric": 1},
                       xgb.DMatrix(X, label=y, qid=_qid(offsets)), 1, obj=fixed)
    np.testing.assert_allclose(model.predict(Xv), direct.inplace_predict(Xv, predict_type="margin"),
                               rtol=1e-6)


# ----------------------------------------------------------------------------
# evaluation and early stopping
# ----------------------------------------------------------------------------


@pytest.mark.parametrize("engine", ["lightgbm", "xgboost"])
def test_recorded_ndcg_matches_ltr_metrics_on_the_final_model(data, engine):
    X, y, offsets, Xv, yv, ov = data
    model = train(X, y, offsets, engine=engine, schedule=[(5, 3), (10, 3)], n_jobs=1,
                  params=LGB_BASE if engine == "lightgbm" else XGB_BASE,
                  eval_sets=[("valid", Xv, yv, ov), ("train", X, y, offsets)],
                  convention="sklearn")
    scores = model.predict(Xv)
    for k in (1, 3, 5, 10, 20):
        values = model.evals_result["valid"][f"ndcg@{k}"]
        assert len(values) == 6
        assert values[-1] == pytest.approx(ndcg(yv, scores, offsets=ov, k=k, convention="sklearn"),
                                           abs=1e-9)
        assert model.stages[-1]["metrics"]["valid"][f"ndcg@{k}"] == values[-1]
        assert model.stages[0]["metrics"]["valid"][f"ndcg@{k}"] == values[2]
    assert set(model.evals_result) == {"valid", "train"}


def test_recorded_ndcg_with_lightgbm_convention_equals_lightgbm_own_metric(data):
    X, y, offsets, Xv, yv, ov = data
    model = train(X, y, offsets, k=10, num_boost_round=4, params=LGB_BASE, n_jobs=1,
                  eval_sets=[("valid", Xv, yv, ov)], eval_at=(1, 5, 10), convention="lightgbm")
    record: dict = {}
    train_set = _lgb_dataset(X, y, offsets)
    valid = lgb.Dataset(Xv, label=yv, group=np.diff(ov), reference=train_set)
    lgb.train({**_lgb_params(10), "metric": "ndcg", "eval_at": [1, 5, 10]}, train_set, 4,
              valid_sets=[valid], valid_names=["valid"], callbacks=[lgb.record_evaluation(record)])
    for k in (1, 5, 10):
        np.testing.assert_allclose(model.evals_result["valid"][f"ndcg@{k}"],
                                   record["valid"][f"ndcg@{k}"], atol=1e-7)


def test_recorded_ndcg_with_xgboost_convention_equals_xgboost_own_metric(data):
    X, y, offsets, Xv, yv, ov = data
    model = train(X, y, offsets, engine="xgboost", k=10, num_boost_round=4, params=XGB_BASE,
                  n_jobs=1, eval_sets=[("valid", Xv, yv, ov)], eval_at=(3, 10),
                  convention="xgboost")
    record: dict = {}
    xgb.train({"objective": "rank:ndcg", "lambdarank_pair_method": "topk",
               "lambdarank_num_pair_per_sample": 10, "tree_method": "hist", "max_depth": 3,
               "learning_rate": 0.3, "seed": 0, "nthread": 1, "eval_metric": ["ndcg@3", "ndcg@10"]},
              xgb.DMatrix(X, label=y, qid=_qid(offsets)), 4,
              evals=[(xgb.DMatrix(Xv, label=yv, qid=_qid(ov)), "valid")], evals_result=record,
              verbose_eval=False)
    for k in (3, 10):
        np.testing.assert_allclose(model.evals_result["valid"][f"ndcg@{k}"],
                                   record["valid"][f"ndcg@{k}"], atol=1e-6)


@pytest.mark.parametrize("engine", ["lightgbm", "xgboost"])
def test_early_stopping_per_stage_keeps_each_stage_best_round(engine):
    X, y, offsets = _synthetic(30, 2)
    Xv, _, ov = _synthetic(10, 3)
    yv = np.random.default_rng(4).integers(0, 3, len(Xv)).astype(float)  # noise: stops early
    params = ({"min_data_in_leaf": 3, "num_leaves": 15, "learning_rate": 0.5} if engine == "lightgbm"
              else {"max_depth": 4, "learning_rate": 0.5})
    model = train(X, y, offsets, engine=engine, schedule=[(3, 15), (10, 15)], params=params,
                  n_jobs=1, eval_sets=[("noise", Xv, yv, ov)], eval_at=(5,),
                  early_stopping_rounds=2)
    assert any(s["early_stopped"] for s in model.stages)
    kept = [s["best_iteration"] for s in model.stages]
    assert model.num_trees() == sum(kept) == model.best_iteration
    history = model.evals_result["noise"]["ndcg@5"]
    assert len(history) == sum(kept)
    assert set(model.evals_result["noise"]) == {"ndcg@5"}  # ndcg@3/@10 used only for stopping
    for s in model.stages:
        assert s["rounds_run"] <= s["n_rounds"]
        if s["early_stopped"]:
            assert s["rounds_run"] == s["best_iteration"] + 2
    assert model.convention == engine  # curves default to the engine's own nDCG
    assert history[-1] == pytest.approx(
        ndcg(yv, model.predict(Xv), offsets=ov, k=5, convention=engine), abs=1e-9)


def test_progress_bar_over_rounds(data, capsys):
    X, y, offsets, *_ = data
    train(X, y, offsets, schedule=[(5, 2), (10, 2)], params=LGB_BASE, n_jobs=1, progress=True)
    err = capsys.readouterr().err
    assert "ltr[lightgbm]" in err and "round" in err


# ----------------------------------------------------------------------------
# checkpoints and resume
# ----------------------------------------------------------------------------


def test_lightgbm_resume_after_a_lost_stage_gives_the_identical_model(data, tmp_path):
    X, y, offsets, Xv, yv, ov = data
    kw = {"schedule": [(5, 3), (10, 3), (20, 3)], "params": LGB_BASE, "n_jobs": 1,
              "eval_sets": [("valid", Xv, yv, ov)]}
    full = train(X, y, offsets, stage_dir=tmp_path / "a", **kw)
    files = sorted(p.name for p in (tmp_path / "a").iterdir())
    assert files == ["stage_00_k5.txt", "stage_01_k10.txt", "stage_02_k20.txt", "stages.json"]
    assert full.stages[1]["path"] == str(tmp_path / "a" / "stage_01_k10.txt")
    # A crash during stage 3: only stages 1-2 are on disk.
    index = json.loads((tmp_path / "a" / "stages.json").read_text())
    index["stages"] = index["stages"][:2]
    (tmp_path / "a" / "stages.json").write_text(json.dumps(index))
    (tmp_path / "a" / "stage_02_k20.txt").unlink()
    resumed = train(X, y, offsets, stage_dir=tmp_path / "a", resume=True, **kw)
    assert resumed.booster.model_to_string() == full.booster.model_to_string()
    assert resumed.evals_result == full.evals_result
    assert [s["metrics"] for s in resumed.stages] == [s["metrics"] for s in full.stages]
    # Resuming a finished run trains nothing and returns the same model.
    again = train(X, y, offsets, stage_dir=tmp_path / "a", resume=True, **kw)
    assert again.booster.model_to_string() == full.booster.model_to_string()


@pytest.mark.parametrize("engine", ["lightgbm", "xgboost"])
def test_resume_after_a_crash_inside_a_stage_with_our_objective(data, tmp_path, engine, monkeypatch):
    X, y, offsets, Xv, *_ = data
    params = LGB_BASE if engine == "lightgbm" else XGB_BASE
    kw = {"engine": engine, "schedule": [(5, 3), (10, 3), (20, 2)], "params": params, "n_jobs": 1}
    reference = train(X, y, offsets, objective=LambdaRankObjective(random_state=0), **kw)
    monkeypatch.setattr(_RecordingObjective, "fail_at", 7)  # round 7 is in stage 3
    with pytest.raises(KeyboardInterrupt):
        train(X, y, offsets, objective=_RecordingObjective(random_state=0), stage_dir=tmp_path, **kw)
    monkeypatch.setattr(_RecordingObjective, "fail_at", None)
    assert json.loads((tmp_path / "stages.json").read_text())["stages"][-1]["k"] == 10
    fresh = _RecordingObjective(random_state=0)
    resumed = train(X, y, offsets, objective=fresh, stage_dir=tmp_path, resume=True, **kw)
    assert fresh.seen == [(6, 20), (7, 20)]  # only the last stage, at its global rounds
    np.testing.assert_array_equal(resumed.predict(Xv), reference.predict(Xv))
    assert resumed.num_trees() == reference.num_trees() == 8


def test_stage_dir_refuses_to_overwrite_or_resume_a_different_run(data, tmp_path):
    X, y, offsets, *_ = data
    kw = {"schedule": [(5, 2), (10, 2)], "params": LGB_BASE, "n_jobs": 1, "stage_dir": tmp_path}
    train(X, y, offsets, **kw)
    with pytest.raises(ValueError, match="already holds stages .* pass resume=True"):
        train(X, y, offsets, **kw)
    with pytest.raises(ValueError, match="written by a different run"):
        train(X, y + (y == 0), offsets, resume=True, **kw)
    with pytest.raises(ValueError, match="written by a different run"):
        train(X, y, offsets, resume=True, **{**kw, "schedule": [(5, 2), (20, 2)]})


# ----------------------------------------------------------------------------
# RankingModel
# ----------------------------------------------------------------------------


@pytest.mark.parametrize("engine", ["lightgbm", "xgboost"])
def test_model_save_load_and_pickle_round_trip(data, tmp_path, engine):
    X, y, offsets, Xv, yv, ov = data
    model = train(X, y, offsets, engine=engine, schedule=[(5, 2), (10, 2)], n_jobs=1,
                  params=LGB_BASE if engine == "lightgbm" else XGB_BASE,
                  eval_sets=[("valid", Xv, yv, ov)], eval_at=(5,))
    path = model.save(tmp_path / "model.json")
    loaded = RankingModel.load(path)
    clone = pickle.loads(pickle.dumps(model))
    for other in (loaded, clone):
        assert other.engine == engine
        np.testing.assert_array_equal(other.predict(Xv), model.predict(Xv))
        assert other.evals_result == model.evals_result
        assert other.stages == model.stages
        assert other.num_trees() == 4
    assert model.predict(Xv).dtype == np.float64
    assert json.loads(path.read_text())["format"] == "ltr.RankingModel"
    with pytest.raises(ValueError, match="X has 3 features but the model was trained on 8"):
        model.predict(Xv[:, :3])
    (tmp_path / "other.json").write_text("{}")
    with pytest.raises(ValueError, match="is not a model written by RankingModel.save"):
        RankingModel.load(tmp_path / "other.json")


# ----------------------------------------------------------------------------
# composite objective, weights, real data
# ----------------------------------------------------------------------------


@pytest.mark.parametrize("engine", ["lightgbm", "xgboost"])
def test_composite_objective_records_composite_ndcg(engine):
    d = make_ranking(30, n_features=6, mean_docs=20, max_docs=40,
                     objectives=("watch", "share", "follow"), random_state=0)
    tr, te = d.subset(np.arange(20)), d.subset(np.arange(20, 30))
    weights = {"watch": 0.6, "share": 0.25, "follow": 0.15}
    model = train(tr.X, tr.y, tr.offsets, engine=engine, objective=weights, labels=tr.labels,
                  num_boost_round=4, n_jobs=1, eval_at=(10,),
                  params={"min_data_in_leaf": 5} if engine == "lightgbm" else {"max_depth": 3},
                  eval_sets=[("test", te.X, te.y, te.offsets, te.labels)])
    rec = model.evals_result["test"]
    assert set(rec) == {"ndcg@10", "composite_ndcg@10", "ndcg@10/watch", "ndcg@10/share",
                        "ndcg@10/follow"}
    expected = composite_ndcg(te.labels, model.predict(te.X), offsets=te.offsets, weights=weights, k=10,
                              convention=model.convention)
    assert rec["composite_ndcg@10"][-1] == pytest.approx(expected.total, abs=1e-9)
    for name in weights:
        assert rec[f"ndcg@10/{name}"][-1] == pytest.approx(expected.per_objective[name], abs=1e-9)
    assert model.params["objective"]["class"] == "CompositeLambdaRankObjective"


def test_lightgbm_sample_weight_matches_direct_training(data):
    X, y, offsets, Xv, *_ = data
    w = np.random.default_rng(5).uniform(0.5, 2.0, len(y))
    model = train(X, y, offsets, k=10, num_boost_round=4, params=LGB_BASE, n_jobs=1,
                  sample_weight=w)
    ds = lgb.Dataset(X, label=y, group=np.diff(offsets), weight=w)
    direct = lgb.train(_lgb_params(10), ds, 4)
    np.testing.assert_array_equal(model.predict(Xv), direct.predict(Xv))


def test_custom_objective_weights_scale_the_gradients(data):
    X, y, offsets, Xv, *_ = data
    w = np.repeat(np.random.default_rng(6).uniform(0.5, 2.0, len(offsets) - 1), np.diff(offsets))
    kw = {"num_boost_round": 3, "n_jobs": 1, "engine": "xgboost", "params": XGB_BASE}
    weighted = train(X, y, offsets, objective=LambdaRankObjective(k=10), sample_weight=w, **kw)
    plain = train(X, y, offsets, objective=LambdaRankObjective(k=10), **kw)
    native_w = train(X, y, offsets, k=10, sample_weight=w, **kw)  # per-query constant: accepted
    assert not np.allclose(weighted.predict(Xv), plain.predict(Xv))
    assert native_w.num_trees() == 3


def test_lightgbm_on_the_real_lambdarank_data_beats_a_quality_floor(lambdarank_dir):
    tr = load_letor(lambdarank_dir / "rank.train")
    te = load_letor(lambdarank_dir / "rank.test")
    model = train(tr.X, tr.y, tr.offsets, k=20, num_boost_round=20, n_jobs=1,
                  eval_sets=[("test", te.X, te.y, te.offsets)], eval_at=(1, 3, 5),
                  convention="lightgbm")
    # LightGBM's own test_lambdarank asserts ndcg@1 > 0.5674 and ndcg@3 > 0.578 after 50 rounds;
    # we run 20 rounds and use a looser floor.
    assert model.evals_result["test"]["ndcg@1"][-1] > 0.5
    assert model.evals_result["test"]["ndcg@3"][-1] > 0.5


# ----------------------------------------------------------------------------
# bad input: everything rejected before training starts
# ----------------------------------------------------------------------------


def _bad_cases(data):
    X, y, offsets, Xv, yv, ov = data
    y_neg = y.copy()
    y_neg[3] = -1
    y_nan = y.copy()
    y_nan[7] = np.nan
    y_frac = y.copy()
    y_frac[2] = 0.5
    return [
        ({"y": y_neg}, ValueError, r"y must be >= 0 .*y\[3\] = -1\.0"),
        ({"y": y_nan}, ValueError, r"y must be finite; y\[7\] = nan"),
        ({"y": y_frac}, ValueError, r"integer grades .*y\[2\] = 0\.5"),
        ({"y": y[:-1]}, ValueError, r"y has 799 rows but X has 800"),
        ({"offsets": offsets[:-1]}, ValueError, r"offsets\[-1\] = 780 but there are 800 rows"),
        ({"offsets": np.array([0, 20, 20, 800])}, ValueError,
         r"strictly increasing .*offsets\[2\] = 20 <= offsets\[1\] = 20"),
        ({"offsets": np.array([0, 40, 20, 800])}, ValueError, r"offsets\[2\] = 20 <= offsets\[1\] = 40"),
        ({"offsets": np.array([5, 800])}, ValueError, r"offsets\[0\] must be 0, got 5"),
        ({"offsets": None}, TypeError, r"offsets must be int64 query offsets"),
        ({"X": X[:, 0]}, ValueError, r"X must be 2-D"),
        ({"X": np.array([["a"] * 3] * 800)}, TypeError, r"X must contain numbers"),
        ({"k": 0}, ValueError, r"k must be >= 1, got 0"),
        ({"k": 2.5}, TypeError, r"k must be an integer, got 2\.5"),
        ({"schedule": [(5, 10), (0, 10)]}, ValueError, r"steps\[1\]\.k must be >= 1, got 0"),
        ({"schedule": [(5, -1)]}, ValueError, r"steps\[0\]\.rounds must be >= 1, got -1"),
        ({"schedule": "fast"}, TypeError, r"schedule must be .* got 'fast'"),
        ({"schedule": [(5, 10), (10, 10)], "num_boost_round": 12}, ValueError,
         r"num_boost_round=12 would cut the schedule, which defines 20 rounds"),
        ({"engine": "catboost"}, ValueError, r"engine must be one of \['lightgbm', 'xgboost'\], got 'catboost'"),
        ({"num_boost_round": 0}, ValueError, r"num_boost_round must be >= 1, got 0"),
        ({"objective": "lambdarank"}, ValueError, r"objective must be 'native'.* got 'lambdarank'"),
        ({"objective": 42}, TypeError, r"objective must be 'native'.* got 42"),
        ({"eval_sets": [("v", Xv, yv)]}, TypeError, r"eval_sets\[0\] must be a \(name, X, y, offsets\)"),
        ({"eval_sets": ("v", Xv, yv, ov)}, TypeError, r"eval_sets\[0\] must be a"),
        ({"eval_sets": [("v", Xv[:, :3], yv, ov)]}, ValueError, r"eval_sets\[0\] X has 3 features but the training X has 8"),
        ({"eval_sets": [("v", Xv, yv[:-1], ov)]}, ValueError, r"eval_sets\[0\] y has 299 rows but X has 300"),
        ({"eval_sets": [("v", Xv, -yv - 1, ov)]}, ValueError, r"eval_sets\[0\] y must be >= 0"),
        ({"eval_sets": [("v", Xv, yv, ov[:-1])]}, ValueError, r"eval_sets\[0\] offsets\[-1\] = 280 but there are 300 rows"),
        ({"eval_sets": [("v", Xv, yv, ov), ("v", Xv, yv, ov)]}, ValueError, r"eval_sets\[1\] name 'v' is used twice"),
        ({"eval_sets": [(3, Xv, yv, ov)]}, TypeError, r"eval_sets\[0\] name must be a non-empty string, got 3"),
        ({"eval_sets": 7}, TypeError, r"eval_sets must be a sequence"),
        ({"eval_at": (0, 5)}, ValueError, r"eval_at\[0\] must be >= 1, got 0"),
        ({"eval_at": ()}, ValueError, r"eval_at must not be an empty list"),
        ({"early_stopping_rounds": 5}, ValueError, r"early_stopping_rounds needs at least one eval set"),
        ({"early_stopping_rounds": 0, "eval_sets": [("v", Xv, yv, ov)]}, ValueError,
         r"early_stopping_rounds must be >= 1, got 0"),
        ({"resume": True}, ValueError, r"resume=True needs stage_dir"),
        ({"convention": "trec"}, ValueError, r"convention must be one of .* got 'trec'"),
        ({"convention": "trec_eval", "eval_sets": [("v", Xv, yv, ov)]}, ValueError,
         r"convention='trec_eval' cannot evaluate the eval sets: .*doc_ids"),
        ({"sample_weight": np.full(800, -1.0)}, ValueError, r"sample_weight must be finite and >= 0; sample_weight\[0\] = -1\.0"),
        ({"sample_weight": np.ones(5)}, ValueError, r"sample_weight has 5 rows but X has 800"),
        ({"params": {"objective": "regression"}}, ValueError, r"params\['objective'\] is set by train\(\); use objective="),
        ({"params": {"num_iterations": 5}}, ValueError, r"params\['num_iterations'\] is set by train\(\); use num_boost_round="),
        ({"params": {"lambdarank_truncation_level": 5}}, ValueError, r"use k= or schedule="),
        ({"params": [("seed", 1)]}, TypeError, r"params must be a mapping"),
        ({"random_state": -1}, ValueError, r"random_state must be >= 0, got -1"),
        ({"n_jobs": 0}, ValueError, r"n_jobs must be a positive number of threads or -1 \(all\) or None, got 0"),
        ({"progress": "yes"}, TypeError, r"progress must be a bool or None"),
        ({"objective": {"watch": 0.6, "share": 0.4}}, ValueError, r"labels is required for a composite objective"),
        ({"objective": {"watch": 0.6, "share": 0.4}, "labels": {"watch": y}}, ValueError,
         r"labels is missing column 'share' required by the composite objective"),
        ({"objective": {"watch": 1.0}, "labels": {"watch": y[:10]}}, ValueError, r"labels\['watch'\] has 10 rows but X has 800"),
        ({"objective": {"watch": 1.0}, "labels": {"watch": y_nan}}, ValueError, r"labels\['watch'\] must be finite"),
        ({"objective": LambdaRankObjective(schedule=Steps([(5, 2)])), "schedule": [(10, 2)]}, ValueError,
         r"schedule is given twice"),
        ({"engine": "xgboost", "sample_weight": np.arange(800.0)}, ValueError,
         r"one weight per query, but sample_weight varies within query 0 .*sample_weight\[1\] = 1\.0"),
        ({"engine": "xgboost", "params": {"lambdarank_num_pair_per_sample": 4}}, ValueError, r"use k= or schedule="),
    ]


def test_train_rejects_bad_input_before_training_with_informative_errors(data):
    X, y, offsets, *_ = data
    base = {"X": X, "y": y, "offsets": offsets}
    for overrides, exc, match in _bad_cases(data):
        kwargs = {**base, **overrides, "n_jobs": overrides.get("n_jobs", 1)}
        args = (kwargs.pop("X"), kwargs.pop("y"), kwargs.pop("offsets"))
        with pytest.raises(exc, match=match):
            train(*args, **kwargs)


def test_composite_eval_labels_must_hold_every_objective(data):
    X, y, offsets, Xv, yv, ov = data
    with pytest.raises(ValueError, match="eval set 'v' labels are missing column 'share'"):
        train(X, y, offsets, objective={"watch": 0.5, "share": 0.5}, labels={"watch": y, "share": y},
              eval_sets=[("v", Xv, yv, ov, {"watch": yv})], n_jobs=1)


def test_missing_xgboost_names_the_extra_to_install(data, monkeypatch):
    X, y, offsets, *_ = data
    monkeypatch.setitem(sys.modules, "xgboost", None)  # makes `import xgboost` fail
    with pytest.raises(ImportError, match=r'ltr-rank\[xgboost\]'):
        train(X, y, offsets, engine="xgboost", num_boost_round=1)


def test_lightgbm_engine_does_not_import_xgboost():
    import subprocess

    code = ("import sys, numpy as np; from ltr.engines import train; "
            "X = np.random.default_rng(0).normal(size=(40, 3)); "
            "train(X, np.arange(40) % 3, np.array([0, 20, 40]), num_boost_round=1, n_jobs=1, "
            "params={'min_data_in_leaf': 2}); print('xgboost' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


# ----------------------------------------------------------------------------
# engine conventions, picklable hooks, data reuse, native files, damaged models
# ----------------------------------------------------------------------------


def test_default_curves_equal_lightgbm_own_ndcg_eval_round_by_round(data):
    X, y, offsets, Xv, yv, ov = data
    model = train(X, y, offsets, k=10, num_boost_round=6, params=LGB_BASE, n_jobs=1,
                  eval_sets=[("valid", Xv, yv, ov)], eval_at=(1, 3, 10))  # convention=None
    assert model.convention == "lightgbm"
    record: dict = {}
    train_set = _lgb_dataset(X, y, offsets)
    valid = lgb.Dataset(Xv, label=yv, group=np.diff(ov), reference=train_set)
    lgb.train({**_lgb_params(10), "metric": "ndcg", "eval_at": [1, 3, 10]}, train_set, 6,
              valid_sets=[valid], valid_names=["valid"], callbacks=[lgb.record_evaluation(record)])
    for k in (1, 3, 10):
        assert len(model.evals_result["valid"][f"ndcg@{k}"]) == 6
        np.testing.assert_allclose(model.evals_result["valid"][f"ndcg@{k}"],
                                   record["valid"][f"ndcg@{k}"], rtol=0, atol=1e-12)


def test_default_curves_equal_xgboost_own_ndcg_eval_round_by_round(data):
    X, y, offsets, Xv, yv, ov = data
    model = train(X, y, offsets, engine="xgboost", k=10, num_boost_round=5, params=XGB_BASE,
                  n_jobs=1, eval_sets=[("valid", Xv, yv, ov)], eval_at=(3, 10))
    assert model.convention == "xgboost"
    record: dict = {}
    xgb.train({"objective": "rank:ndcg", "lambdarank_pair_method": "topk",
               "lambdarank_num_pair_per_sample": 10, "tree_method": "hist", "max_depth": 3,
               "learning_rate": 0.3, "seed": 0, "nthread": 1, "eval_metric": ["ndcg@3", "ndcg@10"]},
              xgb.DMatrix(X, label=y, qid=_qid(offsets)), 5,
              evals=[(xgb.DMatrix(Xv, label=yv, qid=_qid(ov)), "valid")], evals_result=record,
              verbose_eval=False)
    for k in (3, 10):
        np.testing.assert_allclose(model.evals_result["valid"][f"ndcg@{k}"],
                                   record["valid"][f"ndcg@{k}"], rtol=0, atol=1e-12)


def test_recorder_hooks_are_picklable_module_level_classes(data):
    from tqdm.auto import tqdm

    from ltr.engines import lightgbm as lgb_adapter
    from ltr.engines import xgboost as xgb_adapter
    from ltr.engines._recorder import Recorder
    from ltr.engines._spec import make_spec

    X, y, offsets, Xv, yv, ov = data
    spec = make_spec(X, y, offsets, engine="lightgbm", objective="native", k=5, schedule=None,
                     params=None, num_boost_round=3, sample_weight=None,
                     eval_sets=[("valid", Xv, yv, ov)], eval_at=(5,), early_stopping_rounds=2,
                     stage_dir=None, resume=False, convention=None, random_state=0, n_jobs=1,
                     progress=False, labels=None)
    bar = tqdm(total=3, disable=True)
    recorder = Recorder(spec, 5, bar)
    recorder.record(0, np.zeros(len(yv)))
    hooks = [lgb_adapter.record_feval(recorder, {1: 0}), lgb_adapter.record_callback(recorder),
             xgb_adapter.record_metric(recorder, {1: 0}), xgb_adapter.record_callback(recorder)]
    cb = hooks[1]
    assert cb.order == 100 and cb.before_iteration is False
    assert isinstance(hooks[3], xgb.callback.TrainingCallback)
    for hook in hooks:
        clone = pickle.loads(pickle.dumps(hook))
        assert type(clone) is type(hook) and "<locals>" not in type(hook).__qualname__
        assert clone.recorder.history == recorder.history and clone.recorder.bar is None
    assert recorder.bar is bar  # the live recorder keeps its bar
    bar.close()


@pytest.mark.parametrize("engine", ["lightgbm", "xgboost"])
def test_native_schedule_builds_the_engine_data_once(data, engine, monkeypatch):
    from ltr.engines import get_adapter

    X, y, offsets, Xv, yv, ov = data
    cls = type(get_adapter(engine))
    calls = []
    original = cls.prepare

    def counting(self, spec, params):
        calls.append(1)
        return original(self, spec, params)

    monkeypatch.setattr(cls, "prepare", counting)
    model = train(X, y, offsets, engine=engine, schedule=[(5, 2), (10, 2), (20, 2)], n_jobs=1,
                  params=LGB_BASE if engine == "lightgbm" else XGB_BASE,
                  eval_sets=[("valid", Xv, yv, ov)], eval_at=(5,))
    assert len(model.stages) == 3 and len(calls) == 1


def test_data_digest_only_runs_when_checkpointing(data, tmp_path, monkeypatch):
    import ltr.engines._loop as loop

    X, y, offsets, *_ = data
    real = loop.fingerprint
    seen = []
    monkeypatch.setattr(loop, "fingerprint", lambda spec, params: seen.append(1) or real(spec, params))
    train(X, y, offsets, schedule=[(5, 2), (10, 2)], params=LGB_BASE, n_jobs=1)
    assert seen == []
    train(X, y, offsets, schedule=[(5, 2), (10, 2)], params=LGB_BASE, n_jobs=1, stage_dir=tmp_path)
    assert seen == [1]


def test_numba_thread_count_is_restored_when_training_fails(data):
    import numba

    X, y, offsets, *_ = data
    before = numba.get_num_threads()
    obj = _RecordingObjective(k=5)
    obj.fail_at = 1
    with pytest.raises(KeyboardInterrupt):
        train(X, y, offsets, objective=obj, num_boost_round=3, params=LGB_BASE, n_jobs=1)
    assert numba.get_num_threads() == before


@pytest.mark.parametrize("engine", ["lightgbm", "xgboost"])
def test_save_native_file_loads_with_the_engine_alone_and_predicts_the_same(data, tmp_path, engine):
    X, y, offsets, Xv, *_ = data
    names = [f"feat_{j}" for j in range(N_FEATURES)]
    model = train(X, y, offsets, engine=engine, schedule=[(5, 2), (10, 2)], n_jobs=1,
                  params=LGB_BASE if engine == "lightgbm" else XGB_BASE, feature_names=names)
    assert model.n_features == N_FEATURES and model.feature_names == names
    if engine == "lightgbm":
        path = model.save_native(tmp_path / "model.txt")
        native = lgb.Booster(model_file=str(path))
        assert native.feature_name() == names
        preds = native.predict(Xv, raw_score=True)
    else:
        path = model.save_native(tmp_path / "model.json")
        native = xgb.Booster(model_file=str(path))
        assert native.feature_names == names
        preds = native.predict(xgb.DMatrix(Xv, feature_names=names), output_margin=True)
    np.testing.assert_allclose(preds, model.predict(Xv), rtol=1e-6, atol=1e-6)
    loaded = RankingModel.load(model.save(tmp_path / "ltr.json"))
    assert loaded.feature_names == names and loaded.convention == engine


def test_feature_names_are_validated(data):
    X, y, offsets, *_ = data
    with pytest.raises(ValueError, match="feature_names has 2 names but X has 8 columns"):
        train(X, y, offsets, feature_names=["a", "b"], num_boost_round=1)
    with pytest.raises(ValueError, match="'a' appears more than once"):
        train(X, y, offsets, feature_names=["a"] * N_FEATURES, num_boost_round=1)


@pytest.mark.parametrize("engine", ["lightgbm", "xgboost"])
def test_truncated_model_file_gives_a_value_error_naming_the_file(data, tmp_path, engine):
    X, y, offsets, *_ = data
    model = train(X, y, offsets, engine=engine, num_boost_round=3, n_jobs=1,
                  params=LGB_BASE if engine == "lightgbm" else XGB_BASE)
    path = model.save(tmp_path / "model.json")
    text = path.read_text()
    cut = tmp_path / "cut.json"
    cut.write_text(text[: len(text) // 2])
    with pytest.raises(ValueError, match="cut.json"):
        RankingModel.load(cut)
    # valid ltr JSON around a truncated engine model: checked before the engine parses it
    payload = json.loads(text)
    for n in (len(payload["model"]) // 2, len(payload["model"]) - 30):
        damaged = tmp_path / f"damaged_{n}.json"
        damaged.write_text(json.dumps({**payload, "model": payload["model"][:n]}))
        with pytest.raises(ValueError, match=f"damaged_{n}.json"):
            RankingModel.load(damaged)


def test_xgboost_max_depth_zero_with_lossguide_passes_through(data, monkeypatch):
    X, y, offsets, *_ = data
    seen: list[dict] = []
    real_train = xgb.train

    def spy(params, *args, **kwargs):
        seen.append(dict(params))
        return real_train(params, *args, **kwargs)

    monkeypatch.setattr(xgb, "train", spy)
    model = train(X, y, offsets, engine="xgboost", num_boost_round=2, n_jobs=1,
                  params={"max_depth": 0, "grow_policy": "lossguide", "max_leaves": 7})
    direct = xgb.train({"objective": "rank:ndcg", "lambdarank_pair_method": "topk",
                        "lambdarank_num_pair_per_sample": 20, "tree_method": "hist",
                        "learning_rate": 0.1, "max_depth": 0, "grow_policy": "lossguide",
                        "max_leaves": 7, "seed": 0, "nthread": 1,
                        "disable_default_eval_metric": 1},
                       xgb.DMatrix(X, label=y, qid=_qid(offsets)), 2)
    assert _xgb_trees(model.booster) == _xgb_trees(direct)
    assert seen[0]["max_depth"] == 0 and seen[0]["grow_policy"] == "lossguide"
    assert model.params["max_depth"] == 0 and model.params["grow_policy"] == "lossguide"


# slow: among the costliest default tests (issue 25: default run <= 4 min); CI runs it (-m slow)
@pytest.mark.slow
def test_engine_modules_import_without_cycles():
    import subprocess

    for first in ("ltr.engines.lightgbm", "ltr.engines.xgboost", "ltr.engines._loop",
                  "ltr.engines._model", "ltr.engines.trees"):
        subprocess.run([sys.executable, "-c", f"import {first}"], check=True)


def test_adapters_report_the_engine_versions():
    from ltr.engines import ENGINES, get_adapter

    assert ENGINES == ("lightgbm", "xgboost")
    assert get_adapter("lightgbm").version() == lgb.__version__
    assert get_adapter("xgboost").version() == xgb.__version__


@pytest.mark.parametrize("engine", ["lightgbm", "xgboost"])
def test_loading_an_engines_own_model_file_says_what_it_is(data, tmp_path, engine):
    if engine == "xgboost":
        pytest.importorskip("xgboost")
    X, y, offsets = data[:3]
    model = train(X, y, offsets, engine=engine, num_boost_round=2, n_jobs=1,
                  params={"min_data_in_leaf": 5} if engine == "lightgbm" else None)
    native = model.save_native(tmp_path / ("m.txt" if engine == "lightgbm" else "m.json"))
    with pytest.raises(ValueError, match=r"is an engine's own model file"):
        RankingModel.load(native)


# ----------------------------------------------------------------------------
# nothing the caller passes in is changed; k is a pure function of the global round
# ----------------------------------------------------------------------------


def _positions(offsets: np.ndarray, seed: int = 0) -> np.ndarray:
    rng = np.random.default_rng(seed)
    sizes = np.diff(offsets)
    return np.concatenate([rng.permutation(int(n)) + 1 for n in sizes])


@pytest.mark.parametrize("engine", ["lightgbm", "xgboost"])
@pytest.mark.parametrize("with_position", [False, True])
def test_training_leaves_the_callers_objective_unchanged(data, engine, with_position):
    X, y, offsets, Xv, *_ = data
    kw = {"engine": engine, "params": LGB_BASE if engine == "lightgbm" else XGB_BASE,
          "n_jobs": 1, "schedule": Steps([(3, 2), (6, 2)])}
    if with_position:
        kw["position"] = _positions(offsets)

    def objective():
        return LambdaRankObjective(k=5, unbiased=with_position, random_state=0)

    used = objective()
    # state from earlier use: a later round and (unbiased) learned tables
    used.gradients(np.zeros(len(y)), y, offsets, update_bias=with_position,
                   position=kw.get("position"))
    used.reset(5)
    before = pickle.dumps(used)
    model = train(X, y, offsets, objective=used, **kw)
    assert pickle.dumps(used) == before  # every attribute, buffers included
    assert used.iteration == 5 and used.position is None
    # the training started from round 0 with fresh biases: as with an unused objective
    fresh = train(X, y, offsets, objective=objective(), **kw)
    np.testing.assert_array_equal(model.predict(Xv), fresh.predict(Xv))
    if with_position:
        assert model.position_bias == fresh.position_bias
        assert model.position_bias["rounds"] == 4


@pytest.mark.parametrize("engine", ["lightgbm", "xgboost"])
@pytest.mark.parametrize("mode", ["one_call", "stages", "early_stopping"])
def test_k_of_every_round_is_the_schedule_at_the_global_round(data, engine, mode, tmp_path):
    X, y, offsets, Xv, yv, ov = data
    schedule = Steps([(3, 2), (5, 3), (8, 2)])
    kw: dict = {"engine": engine, "params": LGB_BASE if engine == "lightgbm" else XGB_BASE,
                "n_jobs": 1, "schedule": schedule}
    if mode == "stages":
        kw["stage_dir"] = tmp_path
    if mode == "early_stopping":  # every stage is its own engine call, whatever it keeps
        kw.update(eval_sets=[("valid", Xv, yv, ov)], early_stopping_rounds=1)
    obj = _RecordingObjective(random_state=0)
    model = train(X, y, offsets, objective=obj, **kw)
    rounds = [r for r, _ in obj.seen]
    if mode == "early_stopping":
        # a stage may stop early, but the next one starts at its first round in the schedule
        firsts = [s["first_round"] for s in model.stages]
        assert firsts == [0, 2, 5]
        assert rounds == [r for st in model.stages
                          for r in range(st["first_round"], st["first_round"] + st["rounds_run"])]
    else:
        assert rounds == list(range(7))
    assert obj.seen == [(r, schedule(r)) for r in rounds]
    assert obj.iteration == 0


class _PolicyObjective(LambdaRankObjective):
    """Records the OpenMP wait policy the process has while the engine trains."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.policies: list[str | None] = []

    def round_gradients(self, preds, data, iteration):
        import os

        self.policies.append(os.environ.get("OMP_WAIT_POLICY"))
        return super().round_gradients(preds, data, iteration)


@pytest.mark.parametrize("user", [None, "ACTIVE"])
def test_training_waits_passively_unless_the_user_chose_and_restores_the_environment(
    data, monkeypatch, user
):
    import os

    X, y, offsets, *_ = data
    if user is None:
        monkeypatch.delenv("OMP_WAIT_POLICY", raising=False)
    else:
        monkeypatch.setenv("OMP_WAIT_POLICY", user)
    obj = _PolicyObjective(k=5)
    train(X, y, offsets, objective=obj, num_boost_round=2, params=LGB_BASE, n_jobs=1)
    assert obj.policies == [user or "PASSIVE"] * 2
    assert os.environ.get("OMP_WAIT_POLICY") == user  # as it was before the call

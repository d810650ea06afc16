"""ltr.export: every format scores as the model does, checked by onnxruntime and by the
reference interpreters of ltr.testing.exported (written from each engine's source)."""

from __future__ import annotations

import json
import re
import warnings

import lightgbm as lgb
import numpy as np
import pytest

from ltr.engines import RankingModel, train
from ltr.export import FORMATS, ExportError, ensemble_of, export_model, load_exported
from ltr.export._ir import floor32, next32
from ltr.objectives import LambdaRankObjective
from ltr.testing import make_queries

FLOAT32 = ("opensearch-ltr", "elasticsearch-ltr", "solr-ltr", "ranklib")  # engines read float32
NAN_RIGHT = ("elasticsearch-ltr", "solr-ltr", "ranklib")  # no missing-value rule
LGB = {"num_leaves": 7, "min_data_in_leaf": 5}
XGB = {"max_depth": 3}


def _data(seed: int, nan: float = 0.1, zeros: float = 0.1, n_queries: int = 30):
    d = make_queries(n_queries, docs=12, n_features=5, seed=seed)
    rng = np.random.default_rng(seed)
    X = d.X.copy()
    X[rng.random(X.shape) < zeros] = 0.0
    if nan:
        X[rng.random(X.shape) < nan] = np.nan
    return X, d.y, d.offsets


def _edge_rows(model: RankingModel, X: np.ndarray, offsets: np.ndarray, max_nodes: int = 60,
               skip: frozenset[int] = frozenset()):
    """Held-out rows with values exactly at thresholds and at their float32 rounding edges."""
    ens = ensemble_of(model)
    internal = [i for i in np.flatnonzero(ens.trees.feature >= 0) if i not in skip][:max_nodes]
    rows = []
    for i in internal:
        j, b = int(ens.trees.feature[i]), float(ens.bound[i])
        lo = floor32(np.array([b]))[0]
        hi = next32(lo)
        for v in (b, np.nextafter(b, -np.inf), np.nextafter(b, np.inf), float(lo), float(hi),
                  (float(lo) + float(hi)) / 2, float(ens.trees.threshold[i]), 0.0):
            if not abs(v) < 3e38:  # beyond float32: no search engine sends it
                continue
            r = X[len(rows) % len(X)].copy()
            r[j] = v
            rows.append(r)
    E = np.vstack([X, np.asarray(rows)])
    extra = len(rows)
    off = np.concatenate([offsets, offsets[-1] + np.arange(12, extra + 12, 12).clip(max=extra)])
    return E, np.unique(off)


def _domain(fmt: str, X: np.ndarray) -> np.ndarray:
    """What the engine feeds: float32 values; no NaN where the format has no missing rule."""
    Z = np.nan_to_num(X, nan=0.0) if fmt in NAN_RIGHT else X.copy()
    return Z.astype(np.float32).astype(np.float64) if fmt in FLOAT32 else Z


def _exact(engine: str, fmt: str) -> bool:
    return (engine == "lightgbm" and fmt in ("onnx", "vespa")) or (
        engine == "xgboost" and fmt in FLOAT32)


def _check(model: RankingModel, fmt: str, X: np.ndarray, offsets: np.ndarray, tmp_path,
           reference=None) -> None:
    path = tmp_path / f"model.{fmt}"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)  # NaN-right formats warn; tested apart
        result = model.export(fmt, path, reference=reference,
                              adjust_thresholds=reference is not None)
    assert result.files[0] == path and all(p.exists() for p in result.files)
    Z = _domain(fmt, X)
    got = load_exported(path, fmt, feature_names=ensemble_of(model).feature_names).predict(Z)
    want = model.predict(Z)
    if _exact(model.engine, fmt):
        np.testing.assert_array_equal(got, want)
    else:  # float32 leaves or a float32 sum: 1e-6 of the score scale
        np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-6 * np.abs(want).max())
    for q in range(len(offsets) - 1):
        a, b = offsets[q], offsets[q + 1]
        assert np.array_equal(np.argsort(-got[a:b], kind="stable"),
                              np.argsort(-want[a:b], kind="stable")), f"query {q} ranks differ"


@pytest.fixture(scope="module")
def models():
    X, y, off = _data(0)
    Xn, yn, offn = _data(0, nan=0.0)
    common = {"num_boost_round": 25, "random_state": 0, "n_jobs": 1}
    out = {
        "lgb_nan": train(X, y, off, params=LGB, **common),
        "lgb_none": train(Xn, yn, offn, params=LGB, **common),
        "xgb_native": train(X, y, off, engine="xgboost", params=XGB, **common),
        "lgb_ltr_staged": train(X, y, off, params=LGB, objective=LambdaRankObjective(k=5),
                                schedule=[(3, 10), (10, 15)], **common),
        "xgb_ltr_staged": train(X, y, off, engine="xgboost", params=XGB,
                                objective=LambdaRankObjective(k=5), schedule=[(3, 10), (10, 15)],
                                **common),
    }
    held_X, _, held_off = _data(1)
    return out, held_X, held_off, X


@pytest.mark.parametrize("fmt", sorted(FORMATS))
@pytest.mark.parametrize("which", ["lgb_nan", "lgb_none", "xgb_native", "lgb_ltr_staged",
                                   "xgb_ltr_staged"])
def test_every_format_scores_and_ranks_as_the_model(models, which, fmt, tmp_path):
    trained, held_X, held_off, train_X = models
    model = trained[which]
    skip: frozenset[int] = frozenset()
    ref = None
    if fmt == "solr-ltr":  # Solr cannot hold thresholds near 0: moved, keeping training rows
        ref = train_X
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", UserWarning)
            notes = model.export(fmt, tmp_path / "probe", reference=ref,
                                 adjust_thresholds=True).notes
        ens = ensemble_of(model)
        moved = [re.match(r"tree (\d+) node (\d+)", n).groups() for n in notes]
        skip = frozenset(ens.node(int(t), int(k)) for t, k in moved)  # exact only on training rows
    E, off = _edge_rows(model, held_X, held_off, skip=skip)
    _check(model, fmt, E, off, tmp_path, reference=ref)


def test_staged_model_exports_only_the_kept_trees(models, tmp_path):
    model = models[0]["lgb_ltr_staged"]
    assert len(model.stages) == 2
    result = model.export("vespa", tmp_path / "m.json")
    dump = json.loads(result.files[0].read_text())
    assert len(dump["tree_info"]) == model.num_trees() == 25


@pytest.mark.parametrize("engine", ["lightgbm", "xgboost"])
@pytest.mark.parametrize("rounds", [1, 1000])
def test_one_and_a_thousand_trees(engine, rounds, tmp_path):
    X, y, off = _data(2, n_queries=10)
    params = {"num_leaves": 3, "min_data_in_leaf": 5} if engine == "lightgbm" else {"max_depth": 1}
    model = train(X, y, off, engine=engine, params=params, num_boost_round=rounds,
                  random_state=0, n_jobs=1)
    assert model.num_trees() == rounds
    for fmt in ("onnx", "vespa", "opensearch-ltr", "ranklib"):
        _check(model, fmt, X, off, tmp_path)


def test_lightgbm_zero_as_missing_splits_are_rewritten_and_export_exactly(tmp_path):
    X, y, off = _data(3, nan=0.05, zeros=0.3)
    model = train(X, y, off, params={**LGB, "zero_as_missing": True}, num_boost_round=15,
                  random_state=0, n_jobs=1)
    root = model.booster.dump_model()["tree_info"][0]["tree_structure"]
    assert root["missing_type"] == "Zero"
    held, _, held_off = _data(7, nan=0.05, zeros=0.3)
    held[::9, 2] = 1e-36  # inside LightGBM's zero band
    held[::13, 3] = -1e-35
    E, off2 = _edge_rows(model, held, held_off)
    for fmt in ("onnx", "vespa", "opensearch-ltr", "ranklib"):
        _check(model, fmt, E, off2, tmp_path)


def test_lightgbm_categorical_splits_export_to_onnx_as_set_membership_and_are_refused_elsewhere(
        tmp_path):
    rng = np.random.default_rng(0)
    X, _, off = _data(4)
    X[:, 0] = rng.integers(0, 12, len(X))  # the category coding: integer codes
    y = np.clip((X[:, 0] % 3) + (np.nan_to_num(X[:, 1]) > 0) + rng.integers(0, 2, len(X)), 0, 3)
    ds = lgb.Dataset(X, y, group=np.diff(off), categorical_feature=[0])
    booster = lgb.train({"objective": "lambdarank", "verbose": -1, "min_data_per_group": 5,
                         "cat_smooth": 1, "min_data_in_leaf": 5, "num_leaves": 7,
                         "max_cat_to_onehot": 2, "num_threads": 1}, ds, 20)
    assert ensemble_of(booster).categories  # many-vs-many category splits
    export_model(booster, "onnx", tmp_path / "m.onnx")
    H, _, _ = _data(5)
    H[:, 0] = rng.integers(-2, 15, len(H))  # unseen and negative codes too
    H[::7, 0] = np.nan
    got = load_exported(tmp_path / "m.onnx", "onnx").predict(H)
    np.testing.assert_array_equal(got, booster.predict(H, raw_score=True))
    for fmt in sorted(set(FORMATS) - {"onnx"}):
        with pytest.raises(ExportError, match=r"tree \d+ node \d+: a categorical split"):
            export_model(booster, fmt, tmp_path / f"m.{fmt}")
    with pytest.raises(ExportError, match=r"tree \d+ node \d+: a categorical split"):
        export_model(booster, "onnx", tmp_path / "m3.onnx", onnx_opset=3)


def test_xgboost_categorical_splits_export_to_onnx_and_are_refused_elsewhere(tmp_path):
    import pandas as pd
    import xgboost as xgb

    rng = np.random.default_rng(1)
    X, _, off = _data(6)
    codes = rng.integers(0, 10, len(X))
    y = np.clip((codes % 3) + (np.nan_to_num(X[:, 1]) > 0), 0, 3)
    df = pd.DataFrame(X, columns=[f"c{j}" for j in range(5)])
    df["c0"] = pd.Categorical(codes, categories=list(range(10)))
    dm = xgb.DMatrix(df, y, group=np.diff(off), enable_categorical=True)
    booster = xgb.train({"objective": "rank:ndcg", "max_depth": 3, "max_cat_to_onehot": 1,
                         "nthread": 1}, dm, 10)
    assert ensemble_of(booster).categories
    export_model(booster, "onnx", tmp_path / "m.onnx")
    H, _, _ = _data(7)
    H[:, 0] = rng.integers(-2, 14, len(H))  # the coding: category codes; negative, unseen too
    H[::7, 0] = np.nan
    want = booster.inplace_predict(H, predict_type="margin")  # codes as the model reads them
    got = load_exported(tmp_path / "m.onnx", "onnx").predict(H)
    np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-6 * np.abs(want).max())
    for fmt in sorted(set(FORMATS) - {"onnx"}):
        with pytest.raises(ExportError, match=r"tree \d+ node \d+: a categorical split"):
            export_model(booster, fmt, tmp_path / f"m.{fmt}")


def test_solr_refuses_an_unreachable_threshold_then_adjusts_it_keeping_training_rows(models,
                                                                                 tmp_path):
    trained, _, _, train_X = models
    model = trained["lgb_nan"]
    with pytest.raises(ExportError, match=r"tree \d+ node \d+: solr-ltr cannot hold threshold"), \
            warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        model.export("solr-ltr", tmp_path / "solr.json")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        result = model.export("solr-ltr", tmp_path / "solr.json", reference=train_X,
                              adjust_thresholds=True)
    assert result.notes and all("every training row stays on its side" in n for n in result.notes)
    got = load_exported(result.files[0], "solr-ltr").predict(_domain("solr-ltr", train_X))
    np.testing.assert_allclose(got, model.predict(_domain("solr-ltr", train_X)), rtol=1e-6,
                               atol=1e-6)


def test_float32_check_refuses_training_rows_float32_cannot_separate(tmp_path):
    X = np.repeat(np.array([[0.1], [0.1 + 1e-12], [0.5], [0.7]]), 25, axis=0)
    y = np.tile([0, 2, 1, 1], 25)
    off = np.arange(0, 101, 10)
    booster = lgb.train({"objective": "lambdarank", "verbose": -1, "min_data_in_leaf": 1,
                         "min_data_in_bin": 1, "num_leaves": 4}, lgb.Dataset(X, y, group=np.diff(off)), 3)
    ens = ensemble_of(booster)
    assert np.any((ens.bound > 0.1) & (ens.bound < 0.1 + 1e-12))
    with pytest.raises(ExportError, match=r"tree \d+ node \d+: training values of feature"):
        export_model(booster, "ranklib", tmp_path / "m.txt", reference=X)
    with pytest.raises(ExportError, match=r"no float32 threshold near"):
        export_model(booster, "ranklib", tmp_path / "m.txt", reference=X, adjust_thresholds=True)


def test_nan_right_formats_warn_when_the_model_learned_a_missing_direction(models, tmp_path):
    model = models[0]["lgb_nan"]
    with pytest.warns(UserWarning, match="no missing-value rule"):
        model.export("elasticsearch-ltr", tmp_path / "m.json")


def test_companion_files_hold_what_the_engines_expect(models, tmp_path):
    model = models[0]["xgb_native"]
    r = model.export("opensearch-ltr", tmp_path / "m.json", name="my_model",
                     featureset="fs", feature_names=[f"q{j}" for j in range(5)])
    body = json.loads(r.files[1].read_text())
    assert body["model"]["name"] == "my_model"
    assert body["model"]["model"]["type"] == "model/xgboost+json"
    assert json.loads(body["model"]["model"]["definition"]) == json.loads(r.files[0].read_text())
    assert set(r.sha256) == {p.name for p in r.files}
    with pytest.warns(UserWarning, match="no missing-value rule"):
        r = model.export("solr-ltr", tmp_path / "s.json", featureset="fs",
                         reference=models[3], adjust_thresholds=True)
    store = json.loads(r.files[1].read_text())
    assert [f["name"] for f in store] == [f["name"] for f in json.loads(
        r.files[0].read_text())["features"]]
    r = model.export("vespa", tmp_path / "v.json", name="prof")
    assert 'lightgbm("v.json")' in r.files[1].read_text()


def test_onnx_graph_declares_its_opsets_and_the_float32_fallback_is_exact_on_float32(
        models, tmp_path):
    onnx = pytest.importorskip("onnx")
    trained, held_X, _, _ = models
    for which in ("lgb_nan", "xgb_native"):
        model = trained[which]
        r = model.export("onnx", tmp_path / "m.onnx")
        proto = onnx.load(str(r.files[0]))
        assert {o.domain: o.version for o in proto.opset_import}["ai.onnx.ml"] == 5
        assert proto.graph.node[0].op_type == "TreeEnsemble"
        r = model.export("onnx", tmp_path / "f.onnx", onnx_opset=3)
        proto = onnx.load(str(r.files[0]))
        assert proto.graph.node[0].op_type == "TreeEnsembleRegressor"
        Z = held_X.astype(np.float32).astype(np.float64)
        got = load_exported(r.files[0], "onnx").predict(Z)
        want = model.predict(Z)
        np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-6 * np.abs(want).max())


def test_bad_arguments_are_rejected_before_any_work(models, tmp_path):
    model = models[0]["lgb_nan"]
    with pytest.raises(ValueError, match="format: unknown export format 'pmml'"):
        model.export("pmml", tmp_path / "m")
    with pytest.raises(ValueError, match="feature_names: 2 names given but the model has 5"):
        model.export("onnx", tmp_path / "m", feature_names=["a", "b"])
    with pytest.raises(ValueError, match="feature_names: 'a' appears twice"):
        model.export("onnx", tmp_path / "m", feature_names=["a", "a", "b", "c", "d"])
    with pytest.raises(ValueError, match="adjust_thresholds=True needs reference"):
        model.export("solr-ltr", tmp_path / "m", adjust_thresholds=True)
    with pytest.raises(ValueError, match="path: folder .* does not exist"):
        model.export("onnx", tmp_path / "nope" / "m.onnx")
    with pytest.raises(ValueError, match="onnx_opset: applies to format='onnx' only"):
        model.export("vespa", tmp_path / "m", onnx_opset=3)
    assert not list(tmp_path.iterdir())


# --------------------------------------------------------------------------- CLI


@pytest.fixture(scope="module")
def run_dir(tmp_path_factory):
    from ltr.cli import main

    tmp = tmp_path_factory.mktemp("export_run")
    small = ["--set", "data.synthetic.n_queries=30", "--set", "data.synthetic.n_features=6",
             "--set", "data.synthetic.mean_docs=10", "--set", "data.synthetic.max_docs=20",
             "--set", "model.n_jobs=1", "--set", "model.schedule.steps[0].rounds=3",
             "--set", "model.schedule.steps[1].rounds=3",
             "--set", "model.schedule.steps[2].rounds=3", "--set", "importance.enabled=false"]
    from pathlib import Path

    cfg = Path(__file__).resolve().parents[1] / "configs" / "quickstart.yaml"
    assert main(["train", str(cfg), *small, "--out", str(tmp / "run")]) == 0
    return tmp / "run"


def test_cli_export_records_the_file_and_its_checksum_in_the_run(run_dir, tmp_path, capsys):
    import hashlib

    from ltr.cli import main

    names = tmp_path / "names.txt"
    names.write_text("\n".join(f"feat_{j}" for j in range(6)) + "\n")
    out = tmp_path / "model.onnx"
    assert main(["export", str(run_dir), "--format", "onnx", "--out", str(out),
                 "--features", str(names)]) == 0
    assert "sha256" in capsys.readouterr().out
    rec = json.loads((run_dir / "exports.json").read_text())[-1]
    assert rec["format"] == "onnx"
    assert rec["sha256"]["model.onnx"] == hashlib.sha256(out.read_bytes()).hexdigest()
    assert "model.onnx" in (run_dir / "report.md").read_text()
    model = RankingModel.load(run_dir / "model.json")
    X = np.random.default_rng(0).normal(size=(50, 6))
    np.testing.assert_array_equal(load_exported(out, "onnx").predict(X), model.predict(X))
    # round trip: a labelled file scored through the exported artefact
    rows = [f"{(i * 7) % 3} qid:{i // 6} " + " ".join(f"{j}:{((i + 1) * j) % 11 / 11}"
                                                      for j in range(1, 7)) for i in range(60)]
    data = tmp_path / "test.letor"
    data.write_text("\n".join(rows) + "\n")
    a, b = tmp_path / "model.csv", tmp_path / "exported.csv"
    assert main(["predict", str(run_dir), "--data", str(data), "--out", str(a)]) == 0
    assert main(["predict", str(run_dir), "--data", str(data), "--out", str(b),
                 "--exported", str(out), "--exported-format", "onnx"]) == 0
    import pandas as pd

    pd.testing.assert_frame_equal(pd.read_csv(a), pd.read_csv(b))
    out = tmp_path / "solr.json"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        assert main(["export", str(run_dir), "--format", "solr-ltr", "--out", str(out),
                     "--adjust-thresholds"]) == 0


def test_cli_export_rejects_bad_options_with_the_option_named(run_dir, tmp_path, capsys):
    from ltr.cli import main

    bad = tmp_path / "names.txt"
    bad.write_text("a\nb\n")
    assert main(["export", str(run_dir), "--format", "onnx", "--out", str(tmp_path / "m"),
                 "--features", str(bad)]) == 1
    assert "--features" in capsys.readouterr().err
    assert main(["export", str(run_dir), "--format", "onnx", "--out",
                 str(tmp_path / "no" / "m")]) == 1
    assert "--out: folder" in capsys.readouterr().err


@pytest.mark.parametrize("engine", ["lightgbm", "xgboost"])
def test_engine_models_export_only_the_trees_they_predict_with(engine, tmp_path):
    import xgboost as xgb

    X, y, off = _data(8, n_queries=20)
    V, yv, offv = _data(9, n_queries=10)
    if engine == "lightgbm":
        ds = lgb.Dataset(X, y, group=np.diff(off))
        booster = lgb.train({"objective": "lambdarank", "verbose": -1, "learning_rate": 0.5,
                             "num_leaves": 15, "min_data_in_leaf": 2, "num_threads": 1}, ds, 200,
                            valid_sets=[lgb.Dataset(V, yv, group=np.diff(offv), reference=ds)],
                            callbacks=[lgb.early_stopping(3, verbose=False)],
                            keep_training_booster=True)  # keeps the trees after the best
        best, total = booster.best_iteration, booster.current_iteration()
        want = booster.predict(V, raw_score=True)
    else:  # the scikit-learn wrapper predicts up to best_iteration (a Booster: every tree)
        booster = xgb.XGBRanker(objective="rank:ndcg", learning_rate=0.5, n_jobs=1,
                                n_estimators=200, early_stopping_rounds=3)
        booster.fit(X, y, qid=np.repeat(np.arange(len(off) - 1), np.diff(off)),
                    eval_set=[(V, yv)], eval_qid=[np.repeat(np.arange(len(offv) - 1),
                                                            np.diff(offv))], verbose=False)
        best, total = booster.best_iteration + 1, booster.get_booster().num_boosted_rounds()
        want = booster.predict(V, output_margin=True)
    assert best < total
    assert ensemble_of(booster).n_trees == best
    export_model(booster, "onnx", tmp_path / "m.onnx")
    got = load_exported(tmp_path / "m.onnx", "onnx").predict(V)
    np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-6 * np.abs(want).max())


def test_interpreters_parse_floats_as_java_does_at_a_float32_midpoint():
    from ltr.testing.exported._java import parse_float

    # 1 + 2**-24 is halfway between float32 1.0 and the next; the shortest double text of
    # that midpoint is slightly above it as a decimal, so Java rounds it up
    assert parse_float("1.000000059604644775390625") == np.float32(1.0)  # a tie: to even
    assert parse_float("1.0000000596046448") == np.nextafter(np.float32(1), np.float32(2))
    assert np.float32(float("1.0000000596046448")) == np.float32(1.0)  # double rounding


def test_linear_trees_are_refused_with_the_tree_named(tmp_path):
    X, y, off = _data(10, nan=0.0)
    booster = lgb.train({"objective": "lambdarank", "verbose": -1, "linear_tree": True,
                         "num_threads": 1}, lgb.Dataset(X, y, group=np.diff(off)), 3)
    with pytest.raises(ExportError, match=r"tree \d+: a linear tree"):
        export_model(booster, "onnx", tmp_path / "m.onnx")


def test_ltr_score_through_the_exported_onnx_file_equals_the_model(run_dir, tmp_path, capsys):
    """The round trip: a user scores labelled data through the artefact they deploy."""
    import json

    from ltr.cli import main
    from ltr.runs.config import load_config
    from ltr.runs.data import load_data

    test = load_data(load_config(run_dir / "config.yaml"))["test"]
    data = tmp_path / "test.csv"
    test.to_frame().to_csv(data, index=False)
    model_file = tmp_path / "model.onnx"
    assert main(["export", str(run_dir), "--format", "onnx", "--out", str(model_file)]) == 0
    capsys.readouterr()
    argv = ["score", str(run_dir), "--data", str(data), "--label", "label", "--qid", "qid",
            "--json"]
    assert main(argv) == 0
    by_model = json.loads(capsys.readouterr().out)
    assert main([*argv, "--exported", str(model_file), "--exported-format", "onnx"]) == 0
    by_file = json.loads(capsys.readouterr().out)
    assert by_file.keys() == by_model.keys()
    for name, values in by_model.items():
        for metric, value in values.items():
            assert by_file[name][metric] == pytest.approx(value, abs=1e-12), (name, metric)
    rc = main([*argv, "--exported", str(model_file)])
    assert rc == 1 and "--exported and --exported-format go together" in capsys.readouterr().err

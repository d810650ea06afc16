"""TreeSHAP contributions (ltr.inspection via ltr.inspection) and the empty-query rule reported.

References: the engines' own ``pred_contrib`` / ``pred_contribs`` and predictions,
naive per-query loops for the centred view, ``ltr.metrics.ndcg`` with the other
``empty`` value for the rule's shifted means, and a naive count of queries
without a relevant document.
"""

from __future__ import annotations

import json

import lightgbm as lgb
import numpy as np
import pandas as pd
import pytest
import xgboost as xgb
import yaml

from ltr.cli import main
from ltr.engines import train
from ltr.evaluation import evaluate
from ltr.inspection import contributions, global_contributions, query_contributions
from ltr.metrics import ndcg
from ltr.metrics.empty_queries import count_empty_queries, empty_query_rule

DOCS = 15


def _data(n_queries: int, seed: int):
    rng = np.random.default_rng(seed)
    n = n_queries * DOCS
    X = rng.normal(size=(n, 5))
    X[:, 3] = rng.integers(0, 6, n)
    s = X[:, 0] + np.sin(2 * X[:, 1]) + (X[:, 3] == 2) - 0.5 * (X[:, 3] == 4)
    s = s + 0.5 * rng.normal(size=n)
    y = np.digitize(s, np.quantile(s, [0.6, 0.85, 0.97])).astype(np.float64)
    offsets = np.arange(0, n + 1, DOCS, dtype=np.int64)
    return X, y, offsets


NAMES = ["a", "b", "c", "cat", "e"]


@pytest.fixture(scope="module")
def models():
    X, y, offsets = _data(40, 0)
    return {
        engine: train(X, y, offsets, engine=engine, categorical=["cat"], feature_names=NAMES,
                      num_boost_round=15, n_jobs=1)
        for engine in ("lightgbm", "xgboost")
    }


@pytest.fixture(scope="module")
def test_set():
    X, y, offsets = _data(12, 1)
    qid = np.repeat(np.arange(len(offsets) - 1) + 100, DOCS)
    return pd.DataFrame(X, columns=NAMES, index=np.arange(len(X)) * 3 + 7), y, offsets, qid


# --------------------------------------------------------------------------- contributions
def test_lightgbm_contributions_are_the_engines_and_sum_to_the_score(models, test_set):
    X, _, _, _ = test_set
    model = models["lightgbm"]
    c = contributions(model, X)
    assert list(c.columns) == [*NAMES, "bias"]
    assert c.index.equals(X.index)
    direct = model.booster.predict(model.categorical.encode(X), pred_contrib=True)
    np.testing.assert_array_equal(c.to_numpy(), direct)
    np.testing.assert_allclose(c.sum(axis=1).to_numpy(), model.predict(X), rtol=0, atol=1e-9)


def test_xgboost_contributions_are_the_engines_and_sum_to_the_score(models, test_set):
    X, _, _, _ = test_set
    model = models["xgboost"]
    c = contributions(model, X.to_numpy())
    assert list(c.columns) == [*NAMES, "bias"]
    dm = xgb.DMatrix(model.categorical.encode(X), feature_names=NAMES,
                     feature_types=["q", "q", "q", "c", "q"], enable_categorical=True)
    np.testing.assert_array_equal(c.to_numpy(), model.booster.predict(dm, pred_contribs=True))
    err = np.abs(c.sum(axis=1).to_numpy() - model.predict(X))
    assert np.all(err <= 1e-6 * c.abs().sum(axis=1).to_numpy())  # float32 contributions


def test_contributions_of_a_plain_booster_and_bad_input():
    X, y, offsets = _data(10, 2)
    booster = lgb.train({"objective": "lambdarank", "verbosity": -1, "num_threads": 1,
                         "min_data_in_leaf": 5},
                        lgb.Dataset(X, y, group=np.diff(offsets)), num_boost_round=5)
    c = contributions(booster, X)
    np.testing.assert_allclose(c.sum(axis=1), booster.predict(X, raw_score=True), atol=1e-9)
    with pytest.raises(ValueError, match="qid must have one entry per row"):
        contributions(booster, X, qid=[1, 2])
    with pytest.raises(TypeError, match="model must be an ltr model"):
        contributions(object(), X)


def test_global_summary_is_the_mean_absolute_contribution_and_groups_add_first(models, test_set):
    X, *_ = test_set
    c = contributions(models["lightgbm"], X)
    table = global_contributions(c, {"ab": ["a", "b"]})
    assert table.loc["a", "mean_abs"] == pytest.approx(float(np.mean(np.abs(c["a"]))), abs=1e-15)
    assert table.loc["ab", "mean_abs"] == pytest.approx(
        float(np.mean(np.abs(c["a"] + c["b"]))), abs=1e-15)
    assert list(table["mean_abs"]) == sorted(table["mean_abs"], reverse=True)
    with pytest.raises(ValueError, match="unknown features"):
        global_contributions(c, {"g": ["zz"]})


def test_per_query_view_centres_each_document_on_its_query_mean(models, test_set):
    X, _, _, qid = test_set
    model = models["xgboost"]
    c = contributions(model, X, qid=qid)
    view = query_contributions(c, k=4)
    assert view.index.names == ["qid", "rank"]
    scores = c.sum(axis=1).to_numpy()
    for q in (100, 105):
        rows = np.flatnonzero(qid == q)
        part = view.loc[q]
        top = rows[np.argsort(-scores[rows], kind="stable")[:4]]
        assert list(part["row"]) == list(X.index[top])
        centred = c.iloc[rows][NAMES] - c.iloc[rows][NAMES].mean()
        np.testing.assert_allclose(part[NAMES].to_numpy(), centred.loc[X.index[top]].to_numpy(),
                                   atol=1e-12)
        np.testing.assert_allclose(part[NAMES].sum(axis=1), part["score_vs_mean"], atol=1e-9)
    one = query_contributions(c, qid, k=3, query=103)
    assert list(one.index.get_level_values("qid")) == [103] * 3
    with pytest.raises(ValueError, match="query 9 is not in qid"):
        query_contributions(c, qid, query=9)


def test_plots_draw_figures(models, test_set):
    from ltr.inspection._shap import plot_beeswarm, plot_query

    X, _, _, qid = test_set
    c = contributions(models["lightgbm"], X, qid=qid)
    assert len(plot_beeswarm(c, X, top=3).axes) == 2  # the plot and its colour bar
    assert plot_query(query_contributions(c, k=5, query=101), top=3).axes


def test_shap_explanation_adapter(models, test_set):
    shap = pytest.importorskip("shap")
    from ltr.inspection._shap import to_shap_explanation

    X, *_ = test_set
    c = contributions(models["lightgbm"], X)
    exp = to_shap_explanation(c, X)
    assert isinstance(exp, shap.Explanation)
    np.testing.assert_array_equal(exp.values, c[NAMES].to_numpy())


# --------------------------------------------------------------------------- empty queries
def test_empty_queries_counted_and_shifted_means_equal_ndcg_under_the_other_rule():
    rng = np.random.default_rng(3)
    y = rng.integers(0, 3, 400).astype(float) * (rng.random(400) < 0.3)
    offsets = np.arange(0, 401, 8)
    naive = sum(1 for q in range(len(offsets) - 1) if y[offsets[q]:offsets[q + 1]].max() <= 0)
    assert count_empty_queries(y, offsets) == naive > 0
    scores = rng.normal(size=400)
    rule = empty_query_rule(y, offsets, "lightgbm")
    assert rule.describe() == f"empty: {naive} of 50 queries scored 1 (lightgbm)"
    mean = float(ndcg(y, scores, offsets=offsets, k=5, convention="lightgbm"))
    zero = float(ndcg(y, scores, offsets=offsets, k=5, convention="lightgbm", empty=0.0))
    assert rule.shifted_mean(mean, 0.0) == pytest.approx(zero, abs=1e-12)
    skip = empty_query_rule(y, offsets)
    assert skip.describe().endswith("queries left out (default)")
    skipped = float(ndcg(y, scores, offsets=offsets, k=5))
    assert skip.shifted_mean(skipped, 1.0) == pytest.approx(mean, abs=1e-12)


def test_evaluation_result_states_the_rule_and_its_count():
    qrels = pd.DataFrame({"qid": ["a", "a", "b", "b", "c"], "doc_id": ["1", "2", "1", "2", "1"],
                          "relevance": [1, 0, 0, 0, 2]})
    run = qrels.drop(columns="relevance").assign(score=[1.0, 2, 3, 4, 5])
    res = evaluate(qrels, run, ["ndcg@10", "map"])
    assert res.summary().attrs["empty"] == "empty: 1 of 3 queries scored 0 (trec_eval)"
    assert list(res.summary()["n_empty"]) == [1, 1]
    assert "empty: 1 of 3 queries scored 0 (trec_eval)." in res.to_markdown()
    assert res.to_dict()["empty_queries"]["n_empty"] == 1
    assert res.per_query.loc["b"].tolist() == [0.0, 0.0]


# --------------------------------------------------------------------------- runs and CLI
@pytest.fixture(scope="module")
def categorical_run(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("categorical")
    cfg = {
        "seed": 0,
        "data": {"source": "synthetic",
                 "synthetic": {"n_queries": 60, "n_features": 6, "mean_docs": 15, "max_docs": 40,
                               "n_categorical": 2},
                 "categorical": ["c1", "c2"], "split": {"valid": 0.2, "test": 0.2}},
        "model": {"num_leaves": 7, "n_jobs": 1, "n_estimators": 10},
        "importance": {"enabled": True, "n_repeats": 1, "groups": {"cats": ["c1", "c2"]}},
        "evaluation": {"eval_at": [5, 10], "k": 10},
    }
    path = tmp / "cat.yaml"
    path.write_text(yaml.safe_dump(cfg))
    assert main(["train", str(path), "--out", str(tmp / "run")]) == 0
    return tmp / "run"


def test_run_with_categorical_columns_reports_coding_rule_and_shap(categorical_run):
    run = categorical_run
    metrics = json.loads((run / "metrics.json").read_text())
    assert metrics["categorical"]["columns"] == ["c1", "c2"]
    assert metrics["categorical"]["unseen_rows"] == {"valid": 0, "test": 0}
    assert "unseen in training" in (run / "run.log").read_text()
    model = json.loads((run / "model.json").read_text())
    assert model["categorical"]["names"] == ["c1", "c2"]
    rule = metrics["empty_queries"]["test"]
    assert rule["convention"] == "lightgbm" and rule["score"] == 1.0
    table = pd.read_csv(run / "importance.csv")
    assert "mean_abs_shap" in table.columns and "cats" in set(table["feature"])
    assert (run / "shap.png").exists()
    report = (run / "report.md").read_text()
    assert "mean |TreeSHAP contribution|" in report and rule["text"] in report


def test_explain_prints_and_plots_one_query(categorical_run, capsys, tmp_path):
    per_query = pd.read_csv(categorical_run / "per_query_test.csv")
    q = str(per_query["qid"].iloc[0])
    plot = tmp_path / "q.png"
    assert main(["explain", str(categorical_run), "--query", q, "--k", "3",
                 "--plot", str(plot)]) == 0
    out = capsys.readouterr().out
    assert f"query {q} (test): top 3 of" in out and plot.exists()
    assert main(["explain", str(categorical_run), "--query", "nope"]) == 1
    assert "--query 'nope' is not in test" in capsys.readouterr().err


def test_evaluate_states_the_empty_query_rule(categorical_run, capsys):
    assert main(["evaluate", "--model", str(categorical_run)]) == 0
    out = capsys.readouterr().out
    rules = json.loads((categorical_run / "metrics.json").read_text())["empty_queries"]
    assert f"test: {rules['test']['text']}" in out


def test_unknown_categorical_column_is_refused_before_any_work(tmp_path, capsys):
    cfg = {"data": {"source": "synthetic", "categorical": ["c9"],
                    "synthetic": {"n_categorical": 1}}}
    path = tmp_path / "bad.yaml"
    path.write_text(yaml.safe_dump(cfg))
    assert main(["train", str(path), "--out", str(tmp_path / "run")]) != 0
    assert "data.categorical: unknown feature 'c9'" in capsys.readouterr().err
    assert not (tmp_path / "run").exists()


def test_monitor_states_the_empty_query_rule():
    from ltr.runs.monitor_cmd import monitor_log

    rng = np.random.default_rng(5)
    n_q, docs = 30, 6
    label = rng.integers(0, 3, n_q * docs) * (rng.random(n_q * docs) < 0.25)
    log = pd.DataFrame({
        "timestamp": pd.Timestamp("2026-01-01", tz="UTC")
        + pd.to_timedelta(np.repeat(np.arange(n_q), docs), unit="h"),
        "qid": np.repeat(np.arange(n_q), docs), "doc_id": np.tile(np.arange(docs), n_q),
        "score": rng.normal(size=n_q * docs), "label": label,
    })
    naive = int(sum(label[q * docs:(q + 1) * docs].max() == 0 for q in range(n_q)))
    res = monitor_log(log, metric="ndcg@5", window="1D", min=0.0)
    assert f"empty: {naive} of {n_q} queries left out (monitor)" in res.summary_lines()
    assert int(res.values["n_skipped"].sum()) == naive


def test_predict_on_a_file_with_unseen_categories_warns_with_the_count(categorical_run, tmp_path,
                                                                       capsys):
    from ltr.runs.score_cmd import predict_run

    rows = pd.DataFrame({"qid": [1, 1, 2], "label": [0, 1, 0]})
    for j in range(1, 7):
        rows[f"f{j}"] = [0.1, 0.1, 0.3]
    rows["c1"] = [999.0, np.nan, 999.0]  # unseen, missing, unseen
    first = json.loads((categorical_run / "model.json").read_text())["categorical"][
        "categories"][1][0]
    rows["c2"] = [first, first, first]
    data = tmp_path / "new.csv"
    rows.to_csv(data, index=False)
    with pytest.warns(UserWarning, match="2 of 3 rows of new.csv have a category unseen"):
        frame = predict_run(categorical_run, data, out=tmp_path / "s.csv")
    assert len(frame) == 3
    assert frame["score"].iloc[0] == frame["score"].iloc[1]  # unseen scores as missing


def test_text_categories_in_a_run_file_are_refused_with_the_fix(tmp_path, capsys):
    rng = np.random.default_rng(0)
    pd.DataFrame({"qid": np.repeat(np.arange(10), 6), "label": rng.integers(0, 3, 60),
                  "f1": rng.normal(size=60), "country": rng.choice(["de", "fr"], 60)}).to_csv(
        tmp_path / "t.csv", index=False)
    (tmp_path / "c.yaml").write_text(yaml.safe_dump(
        {"data": {"source": "csv", "train": str(tmp_path / "t.csv"), "categorical": ["country"]}}))
    assert main(["train", str(tmp_path / "c.yaml"), "--out", str(tmp_path / "run")]) == 1
    err = capsys.readouterr().err
    assert "data.categorical: column 'country'" in err and "map each category to an integer" in err
    assert not (tmp_path / "run").exists()


def test_tune_searches_with_the_categorical_columns_as_categories(tmp_path, monkeypatch):
    from ltr.estimator import LambdaMARTRanker

    seen = []
    real_fit = LambdaMARTRanker.fit

    def fit(self, X, y, **kw):
        seen.append(tuple(str(t) for t in X.dtypes))
        return real_fit(self, X, y, **kw)

    monkeypatch.setattr(LambdaMARTRanker, "fit", fit)
    cfg = {"data": {"source": "synthetic", "categorical": ["c1"],
                    "synthetic": {"n_queries": 40, "n_features": 3, "mean_docs": 10,
                                  "max_docs": 30, "n_categorical": 1},
                    "split": {"valid": 0.0, "test": 0.2}},
           "model": {"n_estimators": 3, "n_jobs": 1},
           "search": {"method": "grid", "param_grid": {"num_leaves": [7]}, "folds": 2}}
    (tmp_path / "t.yaml").write_text(yaml.safe_dump(cfg))
    assert main(["tune", str(tmp_path / "t.yaml"), "--out", str(tmp_path / "run")]) == 0
    assert seen and all(d[-1] == "category" for d in seen)
    assert json.loads((tmp_path / "run" / "model.json").read_text())["categorical"]["names"] == [
        "c1"]

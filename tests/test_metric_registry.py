"""The one metric registry at work: monitor rules and scorers for every rank metric.

* a monitoring rule on MAP or MRR (any metric of qrels/run evaluation) equals
  :func:`ltr.evaluate` on the same windows;
* the scorer of every registry metric equals the metric's function per fold
  of a real ``GridSearchCV`` with ``GroupKFold`` on LightGBM's lambdarank data,
  keyed by the names passed (aliases included).
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
import sklearn
from sklearn.base import clone
from sklearn.model_selection import GridSearchCV, GroupKFold

from ltr.datasets import load_letor
from ltr.estimator import LambdaMARTRanker
from ltr.evaluation import evaluate
from ltr.evaluation.monitoring import Monitor
from ltr.metrics.names import (
    MONITOR_METRICS,
    SCORER_METRICS,
    metric_function,
    metric_info,
    parse_metric_name,
)
from ltr.scoring import RankScorer, get_scorer
from ltr.testing import deterministic_params

# --------------------------------------------------------------------------- #
# monitoring                                                                   #
# --------------------------------------------------------------------------- #


def _log(n_windows: int = 4, per_window: int = 25, docs: int = 6, seed: int = 0) -> pd.DataFrame:
    """Hourly windows of logged queries with graded labels and tie-free scores."""
    rng = np.random.default_rng(seed)
    t0 = pd.Timestamp("2024-05-01T00:00:00Z")
    rows = []
    for w in range(n_windows):
        for i in range(per_window):
            ts = t0 + pd.Timedelta(hours=w) + pd.Timedelta(seconds=int(i * 3600 / per_window))
            labels = rng.integers(0, 3, docs) * (rng.random(docs) < 0.5)
            scores = labels * (1.0 - 0.3 * w) + rng.normal(0, 0.7, docs)
            for d in range(docs):
                rows.append((ts, f"q{w}-{i}", f"d{d}", scores[d], int(labels[d])))
    return pd.DataFrame(rows, columns=["timestamp", "qid", "doc_id", "score", "label"])


@pytest.mark.parametrize(
    "name, reference",
    [("map@10", "map@10"), ("mrr", "mrr"), ("recip_rank", "recip_rank"),
     ("map_cut_3", "map_cut_3"), ("P@3", "P@3"), ("Rprec", "Rprec"), ("err@5", "err@5"),
     ("hit_rate@2", "success_2"), ("recall@4", "recall_4"),
     # nDCG/DCG with trec_eval's linear gain: the sklearn convention (no ties here)
     ("dcg@4:sklearn", "dcg@4"), ("ndcg@5:sklearn", "ndcg_cut_5")],
)
def test_a_monitor_rule_equals_evaluate_on_the_same_windows(name, reference):
    log = _log()
    monitor = Monitor([{"metric": name, "window": "1h", "min": -1.0}])
    monitor.update(log, final=True)
    values = monitor.values
    assert values["metric"].tolist() == [name] * 4  # keyed by the name passed
    log["window"] = pd.to_datetime(log["timestamp"]).dt.floor("1h")
    windows = sorted(log["window"].unique())
    assert len(values) == len(windows)
    for (_, row), start in zip(values.iterrows(), windows):
        part = log[log["window"] == start]
        if "empty" in metric_info(parse_metric_name(name).metric).options:
            # the monitor averages over queries with a relevant row (empty="skip")
            part = part[part.groupby("qid")["label"].transform("max") > 0]
        qrels = part.rename(columns={"label": "relevance"})[["qid", "doc_id", "relevance"]]
        run = part[["qid", "doc_id", "score"]]
        expected = evaluate(qrels, run, [reference], max_grade=2).mean[reference]
        assert row["n_queries"] == part["qid"].nunique()
        assert row["value"] == pytest.approx(expected, rel=1e-12, abs=1e-12)


def test_every_qrels_metric_can_be_a_monitor_rule():
    log = _log(n_windows=1, per_window=5)
    rules = [{"metric": m, "window": "1h", "min": -1.0} for m in MONITOR_METRICS]
    monitor = Monitor(rules)
    monitor.update(log, final=True)
    assert monitor.values["metric"].tolist() == list(MONITOR_METRICS)
    assert monitor.values["value"].notna().all()


def test_a_misspelt_monitor_metric_names_the_closest():
    with pytest.raises(ValueError, match=r"rules\[0\]\.metric: .*did you mean 'mrr'\?"):
        Monitor([{"metric": "mmr@10", "window": "1h", "min": 0.5}])


# --------------------------------------------------------------------------- #
# scorers in a real search                                                     #
# --------------------------------------------------------------------------- #

# every scorer metric of the registry, several under another tool's name
SCORER_NAMES = ["ndcg@10", "ndcg_cut_5", "dcg@5", "map_cut_10", "AP", "recip_rank", "mrr@3",
                "P@5", "precision@3", "recall_10", "Rprec", "hit_rate@3", "Success@1", "err@10",
                "ndcg@10:lightgbm", "map@5:xgboost"]


def test_the_scorer_names_cover_every_scorer_metric():
    covered = {parse_metric_name(n).metric for n in SCORER_NAMES}
    assert covered == set(SCORER_METRICS)


def test_every_registry_scorer_equals_its_metric_per_fold_of_a_grid_search(letor_slice_dir):
    data = load_letor(letor_slice_dir / "rank.train")
    X, y, qid = data.X, data.y, data.qid
    ranker = LambdaMARTRanker(n_estimators=4, n_jobs=1, random_state=0, min_child_samples=5,
                              engine_params=deterministic_params("lightgbm", "native"))
    grid = {"num_leaves": [3, 7]}
    scoring = {name: get_scorer(name) for name in SCORER_NAMES}
    assert all(isinstance(s, RankScorer) for s in scoring.values())
    cv = GroupKFold(n_splits=3)
    with sklearn.config_context(enable_metadata_routing=True):
        search = GridSearchCV(ranker, grid, scoring=scoring, cv=cv, refit=False)
        search.fit(X, y, qid=qid, groups=qid)
    results = search.cv_results_
    for fold, (tr, te) in enumerate(cv.split(X, y, groups=qid)):
        for cand, params in enumerate(results["params"]):
            model = clone(ranker).set_params(**params).fit(X[tr], y[tr], qid=qid[tr])
            pred = model.predict(X[te])
            for name in SCORER_NAMES:
                parsed = parse_metric_name(name)
                options = {} if parsed.convention is None else {"convention": parsed.convention}
                expected = metric_function(parsed.metric)(y[te], pred, qid=qid[te], k=parsed.k,
                                                          **options)
                got = results[f"split{fold}_test_{name}"][cand]
                assert got == pytest.approx(float(expected), rel=1e-12, abs=1e-12), (name, fold)


# --------------------------------------------------------------------------- #
# runs                                                                         #
# --------------------------------------------------------------------------- #


def test_run_metrics_are_keyed_by_the_names_in_the_config(letor_slice_dir):
    from ltr.metrics._rank import precision, r_precision, reciprocal_rank
    from ltr.runs.config import RunConfig
    from ltr.runs.run_metrics import set_metrics

    cfg = RunConfig.model_validate(
        {"evaluation": {"eval_at": [5], "metrics": ["P_5", "recip_rank", "Rprec"]}}
    )
    ds = load_letor(letor_slice_dir / "rank.test", n_features=300)
    dense = ds.X.toarray() if hasattr(ds.X, "toarray") else np.asarray(ds.X)
    scores = dense[:, :3].sum(axis=1)  # any ranking: three features summed
    got = set_metrics(cfg, ds, scores)
    assert list(got) == ["ndcg@5", "P_5", "recip_rank", "Rprec"]
    conv = {"offsets": ds.offsets, "convention": "lightgbm"}  # the run's: the engine's own
    assert got["P_5"] == pytest.approx(float(precision(ds.y, scores, k=5, **conv)), abs=1e-15)
    assert got["recip_rank"] == pytest.approx(
        float(reciprocal_rank(ds.y, scores, k=None, **conv)), abs=1e-15)
    assert got["Rprec"] == pytest.approx(float(r_precision(ds.y, scores, **conv)), abs=1e-15)


def test_run_config_names_a_metric_listed_twice_and_a_misspelt_scorer():
    from pydantic import ValidationError

    from ltr.runs.config import RunConfig

    with pytest.raises(ValidationError, match=r"'precision@5' is listed twice \(as 'P_5'\)"):
        RunConfig.model_validate({"evaluation": {"metrics": ["P_5", "precision@5"]}})
    with pytest.raises(ValidationError, match=r"@scoring: .*did you mean 'ndcg'\?"):
        RunConfig.model_validate({"search": {"param_grid": {"num_leaves": [7]},
                                             "scoring": "ndgc@10"}})


def test_comparison_reads_which_metrics_are_bounded_from_the_registry(tmp_path):
    from ltr.evaluation.comparison import read_per_query

    ok = tmp_path / "ok.csv"
    ok.write_text("qid,dcg@10,recip_rank,ips_ndcg@5\nq1,3.5,1.0,1.7\nq2,0.0,0.5,0.2\n")
    frame = read_per_query(ok)  # DCG and IPS estimates are not bounded by 1
    assert list(frame.columns) == ["dcg@10", "recip_rank", "ips_ndcg@5"]
    bad = tmp_path / "bad.csv"
    bad.write_text("qid,P_10,recip_rank\nq1,0.5,1.0\nq2,0.4,1.5\n")
    with pytest.raises(ValueError, match=r"'recip_rank' must lie in \[0, 1\] per query; query "
                                         r"'q2' \(line 3\) has 1.5"):
        read_per_query(bad)


def test_scorers_equal_make_scorer_built_on_public_sklearn_api(letor_slice_dir):
    """RankScorer == sklearn.metrics.make_scorer(score_function(name)) with routed qid."""
    from sklearn.metrics import make_scorer
    from sklearn.model_selection import cross_validate

    from ltr.scoring import score_function

    data = load_letor(letor_slice_dir / "rank.train")
    names = ["ndcg@10", "recip_rank", "P@5", "Rprec", "err@10:lightgbm"]
    ranker = LambdaMARTRanker(n_estimators=3, num_leaves=7, n_jobs=1, random_state=0,
                              engine_params=deterministic_params("lightgbm", "native"))
    with sklearn.config_context(enable_metadata_routing=True):
        ours = {n: get_scorer(n) for n in names}
        public = {
            n: make_scorer(score_function(n), response_method="predict").set_score_request(
                qid=True)
            for n in names
        }
        params = {"qid": data.qid, "groups": data.qid}
        a = cross_validate(ranker, data.X, data.y, cv=GroupKFold(3), scoring=ours, params=params)
        b = cross_validate(ranker, data.X, data.y, cv=GroupKFold(3), scoring=public,
                           params=params)
    for n in names:
        np.testing.assert_array_equal(a[f"test_{n}"], b[f"test_{n}"])

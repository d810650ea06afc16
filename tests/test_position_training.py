"""Training on clicks with positions through the one build path: engines, estimator, config.

The engines' own debiasing is checked against the engines called directly (LightGBM
``Dataset(position=...)``, XGBoost ``lambdarank_unbiased`` on rows in display order),
ltr's Unbiased LambdaMART for identical resume, and every refusal for its message.
"""

from __future__ import annotations

import csv
import io
import json
import re
from pathlib import Path

import lightgbm as lgb
import numpy as np
import pandas as pd
import pytest
import yaml

from ltr import LambdaMARTRanker, load_letor
from ltr.cli import main
from ltr.engines import RankingModel, train
from ltr.objectives import LambdaRankObjective

GRADE_CLICK = np.array([0.05, 0.3, 0.5, 0.7, 0.95])


def _logged_clicks(y: np.ndarray, offsets: np.ndarray, seed: int = 0):
    """Positions of a noisy logger's ranking and PBM clicks, examination 1/position."""
    rng = np.random.default_rng(seed)
    logger = y + rng.normal(0.0, 2.0, len(y))
    pos = np.empty(len(y), dtype=np.int64)
    for q in range(len(offsets) - 1):
        s, e = offsets[q], offsets[q + 1]
        pos[s:e][np.argsort(-logger[s:e], kind="stable")] = np.arange(1, e - s + 1)
    click = rng.random(len(y)) < (1.0 / pos) * GRADE_CLICK[y.astype(int)]
    return pos, click.astype(np.float64)


@pytest.fixture(scope="module")
def logged(letor_slice_dir):
    tr = load_letor(letor_slice_dir / "rank.train")
    te = load_letor(letor_slice_dir / "rank.test")
    pos, click = _logged_clicks(tr.y, tr.offsets)
    return tr, te, pos, click


# ----------------------------------------------------------------- the engines' own methods


def test_native_lightgbm_positions_equal_lightgbm_dataset_position(logged):
    tr, te, pos, click = logged
    model = train(tr.X, click, tr.offsets, engine="lightgbm", num_boost_round=15, k=10,
                  position=pos, n_jobs=1)
    params = dict(model.params)
    ds = lgb.Dataset(tr.X, label=click, group=np.diff(tr.offsets), position=pos - 1,
                     params={k: v for k, v in params.items() if k != "objective"})
    params.update(objective="lambdarank", lambdarank_truncation_level=10)
    peer = lgb.train(params, ds, num_boost_round=15)
    np.testing.assert_array_equal(model.predict(te.X), peer.predict(te.X, raw_score=True))
    plain = train(tr.X, click, tr.offsets, engine="lightgbm", num_boost_round=15, k=10, n_jobs=1)
    assert not np.array_equal(model.predict(te.X), plain.predict(te.X))  # positions were used


def test_native_xgboost_positions_equal_lambdarank_unbiased_on_display_order(logged):
    xgb = pytest.importorskip("xgboost")
    tr, te, pos, click = logged
    model = train(tr.X, click, tr.offsets, engine="xgboost", num_boost_round=15, k=10,
                  position=pos, n_jobs=1, params={"lambdarank_bias_norm": 0.5})
    assert model.params["lambdarank_unbiased"] is True
    # the peer: rows put in display order inside each query by hand
    order = np.lexsort((pos, np.repeat(np.arange(tr.n_queries), np.diff(tr.offsets))))
    qid = np.repeat(np.arange(tr.n_queries), np.diff(tr.offsets))
    dm = xgb.DMatrix(tr.X[order], label=click[order], qid=qid)
    params = {k: v for k, v in model.params.items() if k != "lambdarank_num_pair_per_sample"}
    params["lambdarank_num_pair_per_sample"] = 10
    peer = xgb.train(params, dm, num_boost_round=15)
    np.testing.assert_array_equal(
        model.predict(te.X), peer.inplace_predict(te.X, predict_type="margin")
    )


def test_xgboost_unbiased_flag_is_reserved_for_position(logged):
    pytest.importorskip("xgboost")
    tr, _, _, click = logged
    with pytest.raises(ValueError, match=r"lambdarank_unbiased.*position="):
        train(tr.X, click, tr.offsets, engine="xgboost", num_boost_round=2,
              params={"lambdarank_unbiased": True})


# ----------------------------------------------------------------- ltr's Unbiased LambdaMART


@pytest.mark.parametrize("engine", ["lightgbm", "xgboost"])
def test_unbiased_run_resumed_after_a_lost_stage_is_identical(logged, tmp_path, engine):
    if engine == "xgboost":
        pytest.importorskip("xgboost")
    tr, te, pos, click = logged
    kw = dict(engine=engine, schedule=[(5, 6), (10, 6), (20, 6)], n_jobs=1, position=pos)
    full = train(tr.X, click, tr.offsets, objective=LambdaRankObjective(unbiased=True),
                 stage_dir=tmp_path, **kw)
    stages = json.loads((tmp_path / "stages.json").read_text())
    assert all("bias_state" in s for s in stages["stages"])
    stages["stages"] = stages["stages"][:1]  # as if the run died in stage 2
    (tmp_path / "stages.json").write_text(json.dumps(stages))
    resumed = train(tr.X, click, tr.offsets, objective=LambdaRankObjective(unbiased=True),
                    stage_dir=tmp_path, resume=True, **kw)
    np.testing.assert_array_equal(full.predict(te.X), resumed.predict(te.X))
    assert full.position_bias == resumed.position_bias
    # and equal to one uninterrupted call without checkpoints
    once = train(tr.X, click, tr.offsets, objective=LambdaRankObjective(unbiased=True), **kw)
    np.testing.assert_array_equal(full.predict(te.X), once.predict(te.X))
    t_plus = np.asarray(full.position_bias["t_plus"])
    assert t_plus[0] == 1.0 and np.all(np.isfinite(t_plus))


def test_position_bias_survives_save_and_load(logged, tmp_path):
    tr, _, pos, click = logged
    model = train(tr.X, click, tr.offsets, objective=LambdaRankObjective(unbiased=True),
                  num_boost_round=4, position=pos, n_jobs=1)
    model.save(tmp_path / "m.json")
    assert RankingModel.load(tmp_path / "m.json").position_bias == model.position_bias


def test_unbiased_resume_without_saved_bias_is_refused(logged, tmp_path):
    tr, _, pos, click = logged
    kw = dict(schedule=[(5, 3), (10, 3)], n_jobs=1, position=pos, stage_dir=tmp_path)
    train(tr.X, click, tr.offsets, objective=LambdaRankObjective(unbiased=True), **kw)
    stages = json.loads((tmp_path / "stages.json").read_text())
    stages["stages"] = stages["stages"][:1]
    del stages["stages"][0]["bias_state"]
    (tmp_path / "stages.json").write_text(json.dumps(stages))
    with pytest.raises(ValueError, match="no learned position bias"):
        train(tr.X, click, tr.offsets, objective=LambdaRankObjective(unbiased=True),
              resume=True, **kw)


# ----------------------------------------------------------------- the estimator


@pytest.mark.parametrize("engine", ["lightgbm", "xgboost"])
@pytest.mark.parametrize("objective", ["lambdarank", "native"])
def test_estimator_switches_between_ours_and_the_engines_debiasing(logged, engine, objective):
    if engine == "xgboost":
        pytest.importorskip("xgboost")
    tr, te, pos, click = logged
    est = LambdaMARTRanker(engine=engine, n_estimators=8, objective=objective, unbiased=True,
                           random_state=0, n_jobs=1)
    # queries shuffled: the estimator sorts them back by qid and carries the positions along
    blocks = np.random.default_rng(1).permutation(tr.n_queries)
    perm = np.concatenate([np.arange(tr.offsets[q], tr.offsets[q + 1]) for q in blocks])
    est.fit(tr.X[perm], click[perm], qid=tr.qid[perm], position=pos[perm])
    ref = LambdaMARTRanker(engine=engine, n_estimators=8, objective=objective, unbiased=True,
                           random_state=0, n_jobs=1).fit(tr.X, click, qid=tr.qid, position=pos)
    np.testing.assert_array_equal(est.predict(te.X), ref.predict(te.X))
    if objective == "lambdarank":
        assert est.model_.position_bias["t_plus"][0] == 1.0
    else:
        assert est.model_.position_bias is None


def test_estimator_routes_position_in_a_search(logged):
    import sklearn
    from sklearn.model_selection import GridSearchCV, GroupKFold

    from ltr import make_ndcg_scorer

    tr, _, pos, click = logged
    with sklearn.config_context(enable_metadata_routing=True):
        search = GridSearchCV(
            LambdaMARTRanker(n_estimators=3, unbiased=True, n_jobs=1),
            {"bias_norm": [0.5, 1.0]}, scoring=make_ndcg_scorer(5), cv=GroupKFold(2),
        )
        search.fit(tr.X, click, groups=tr.qid, qid=tr.qid, position=pos)
    assert search.best_estimator_.model_.position_bias is not None


@pytest.mark.parametrize(
    ("params", "fit_position", "match"),
    [
        ({}, True, r"position was given but unbiased=False: set unbiased=True"),
        ({"unbiased": True}, False, r"unbiased=True needs the display position"),
        ({"unbiased": True, "objective": "native", "propensity": [1.0, 0.5]}, True,
         r"objective='native' cannot use propensity"),
        ({"propensity": [1.0, 0.5]}, True, r"propensity .* needs unbiased=True"),
        ({"unbiased": True, "objective": "native", "bias_norm": 2.0}, True,
         r"bias_norm=2.0 has no meaning for LightGBM's native position debiasing"),
        ({"unbiased": True, "objectives": {"a": 1.0}}, True,
         r"unbiased=True is not supported with objectives"),
    ],
)
def test_estimator_refuses_inconsistent_position_settings(logged, params, fit_position, match):
    tr, _, pos, click = logged
    est = LambdaMARTRanker(n_estimators=2, **params)
    with pytest.raises(ValueError, match=match):
        est.fit(tr.X, click, qid=tr.qid, position=pos if fit_position else None)


def test_estimator_names_the_bad_position_row(logged):
    tr, _, pos, click = logged
    bad = pos.copy()
    bad[3] = 0
    with pytest.raises(ValueError, match=r"position\[\d+\] = 0"):
        LambdaMARTRanker(n_estimators=2, unbiased=True).fit(tr.X, click, qid=tr.qid, position=bad)


# ----------------------------------------------------------------- config and CLI


def _click_csv(tmp_path: Path, logged) -> Path:
    tr, _, pos, click = logged
    df = pd.DataFrame(tr.X[:, :20], columns=[f"f{j}" for j in range(20)])
    df.insert(0, "qid", tr.qid)
    df.insert(1, "grade", tr.y)
    df.insert(2, "shown_at", pos)
    df.insert(3, "clicked", click.astype(int))
    path = tmp_path / "clicks.csv"
    df.to_csv(path, index=False)
    return path


def _config(tmp_path: Path, csv: Path, **objective) -> Path:
    cfg = {
        "seed": 0,
        "data": {"source": "csv", "train": str(csv), "label": "grade", "qid": "qid",
                 "position": "shown_at", "click": "clicked",
                 "split": {"valid": 0.2, "test": 0.2}},
        "model": {"engine": "lightgbm", "num_leaves": 7, "min_child_samples": 5, "n_jobs": 1,
                  "objective": "lambdarank", "unbiased": True,
                  "schedule": {"steps": [{"k": 5, "rounds": 4}, {"k": 10, "rounds": 4}]},
                  **objective},
        "importance": {"enabled": False},
        "output": {"runs_dir": str(tmp_path / "runs")},
    }
    path = tmp_path / "unbiased.yaml"
    path.write_text(yaml.safe_dump(cfg, sort_keys=False))
    return path


def test_config_trains_unbiased_on_clicks_and_resumes_identically(logged, tmp_path, capsys):
    cfg = _config(tmp_path, _click_csv(tmp_path, logged))
    assert main(["train", str(cfg), "--out", str(tmp_path / "run")]) == 0
    run = tmp_path / "run"
    model = RankingModel.load(run / "model.json")
    assert model.position_bias["t_plus"][0] == 1.0
    # features exclude the position and click columns
    assert model.n_features == 20
    # kill after stage 1: remove the later stage and DONE, then resume
    stages = json.loads((run / "models" / "stages.json").read_text())
    stages["stages"] = stages["stages"][:1]
    (run / "models" / "stages.json").write_text(json.dumps(stages))
    (run / "DONE").unlink()
    assert main(["train", "--resume", str(run)]) == 0
    again = RankingModel.load(run / "model.json")
    X = np.random.default_rng(0).normal(size=(50, 20))
    np.testing.assert_array_equal(model.predict(X), again.predict(X))
    capsys.readouterr()


@pytest.mark.parametrize(
    ("change", "match"),
    [
        ({"data": {"position": None}}, r"model.unbiased: true needs data.position"),
        ({"model": {"objective": "native", "propensity": [1.0, 0.5]}},
         r"model: objective='native' cannot use propensity"),
        ({"model": {"unbiased": False, "bias_norm": 2.0}},
         r"model: bias_norm=2.0 only applies with unbiased=True"),
        ({"evaluation": {"ips": {"propensity": "learned"}}, "model": {"objective": "native"}},
         r"evaluation.ips.propensity: 'learned'"),
        ({"data": {"shown": "x"}}, r"data.shown: unknown key"),
    ],
)
def test_config_refuses_inconsistent_position_keys(logged, tmp_path, capsys, change, match):
    path = _config(tmp_path, _click_csv(tmp_path, logged))
    cfg = yaml.safe_load(path.read_text())
    for section, values in change.items():
        cfg.setdefault(section, {}).update(values)
    path.write_text(yaml.safe_dump(cfg, sort_keys=False))
    assert main(["validate", str(path)]) == 1
    assert re.search(match, capsys.readouterr().err)


def test_config_names_a_bad_position_before_any_folder(logged, tmp_path, capsys):
    csv = _click_csv(tmp_path, logged)
    df = pd.read_csv(csv)
    df.loc[5, "shown_at"] = df.loc[4, "shown_at"]  # a position given twice in one query
    df.to_csv(csv, index=False)
    cfg = _config(tmp_path, csv)
    assert main(["train", str(cfg), "--out", str(tmp_path / "run")]) == 1
    assert "data.position" in capsys.readouterr().err
    assert not (tmp_path / "run").exists()


# ----------------------------------------------------------------- IPS evaluation in a run


def _session_csv(tmp_path: Path, letor_slice_dir: Path) -> Path:
    """Impressions of 4 stochastic-logger sessions per query: one list (qid) per session."""
    from ltr.clicks import simulate_pbm

    tr = load_letor(letor_slice_dir / "rank.train")
    logger = tr.y + np.random.default_rng(3).normal(0.0, 1.5, tr.n_rows)
    log = simulate_pbm(tr.y.astype(int), offsets=tr.offsets, logging_scores=logger,
                       temperature=1.0, n_sessions=4, random_state=0)
    df = pd.DataFrame(tr.X[log.row, :20], columns=[f"f{j}" for j in range(20)])
    lists = np.repeat(np.arange(len(log.offsets) - 1), np.diff(log.offsets))
    df.insert(0, "qid", lists)
    df.insert(1, "grade", tr.y[log.row])
    df.insert(2, "shown_at", log.position)
    df.insert(3, "clicked", log.click.astype(int))
    df.insert(4, "doc", log.row)
    path = tmp_path / "sessions.csv"
    df.to_csv(path, index=False)
    return path


@pytest.mark.parametrize("source", ["em", "learned", [1.0, 0.6, 0.4, 0.3, 0.25]])
def test_run_reports_ips_ndcg_equal_to_the_metric_on_its_own_split(
    letor_slice_dir, tmp_path, capsys, source
):
    from ltr.clicks.ips import ips_ndcg
    from ltr.runs.config import load_config, resolve_data_paths
    from ltr.runs.data import load_data

    path = _config(tmp_path, _session_csv(tmp_path, letor_slice_dir))
    cfg = yaml.safe_load(path.read_text())
    cfg["data"]["doc"] = "doc"
    prop = source if isinstance(source, list) else None
    if prop is not None:  # positions deeper than the list share its last value
        prop = prop + [prop[-1]] * 60
    cfg["evaluation"] = {"eval_at": [5, 10], "ips": {"propensity": prop or source, "clip": 0.05}}
    path.write_text(yaml.safe_dump(cfg, sort_keys=False))
    assert main(["train", str(path), "--out", str(tmp_path / "run")]) == 0
    run = tmp_path / "run"
    metrics = json.loads((run / "metrics.json").read_text())
    bias = metrics["position_bias"]
    used = np.asarray(bias["propensity"]["values"])
    assert used[0] == 1.0 and np.all((used > 0) & (used <= 1))
    # the same numbers from the metric itself, on the run's own split
    sets = load_data(resolve_data_paths(load_config(path)))
    model = RankingModel.load(run / "model.json")
    test = sets["test"]
    expect = ips_ndcg(test.click, model.predict(test.X),
                      position=test.position, propensity=used,
                      offsets=test.offsets, k=[5, 10], clip=0.05)
    assert bias["ips"]["test"]["ips_ndcg@10"] == pytest.approx(expect[10], abs=1e-12)
    assert bias["ips"]["test"]["ips_ndcg@5"] == pytest.approx(expect[5], abs=1e-12)
    assert (run / "propensity.png").stat().st_size > 0
    header = (run / "propensity.csv").read_text().splitlines()[0]
    assert header.startswith("position,learned t+,learned t-,IPS propensity")
    assert "Position bias" in (run / "report.md").read_text()
    capsys.readouterr()


def test_ips_em_without_doc_ids_is_refused(logged, tmp_path, capsys):
    path = _config(tmp_path, _click_csv(tmp_path, logged))
    cfg = yaml.safe_load(path.read_text())
    cfg["evaluation"] = {"ips": {"propensity": "em"}}
    path.write_text(yaml.safe_dump(cfg, sort_keys=False))
    assert main(["validate", str(path)]) == 1
    assert "needs data.doc" in capsys.readouterr().err


# ----------------------------------------------------------------- the simulated click log config

CONFIGS = Path(__file__).resolve().parents[1] / "configs"
SMALL_CLICKS = ["--set", "data.synthetic.n_queries=40", "--set", "data.synthetic.n_features=8",
                "--set", "data.synthetic.mean_docs=12", "--set", "data.synthetic.max_docs=30",
                "--set", "model.n_jobs=1", "--set", "model.schedule.steps=[{k: 10, rounds: 5}]"]


@pytest.mark.parametrize(
    ("extra", "learned"),
    [([], True), (["--set", "model.objective=native"], False),
     (["--set", "model.unbiased=false"], False)],
)
def test_position_bias_config_runs_each_way(tmp_path, capsys, extra, learned):
    out = tmp_path / "run"
    rc = main(["train", str(CONFIGS / "position_bias.yaml"), *SMALL_CLICKS, *extra,
               "--out", str(out)])
    assert rc == 0, capsys.readouterr().err
    metrics = json.loads((out / "metrics.json").read_text())
    bias = metrics["position_bias"]
    assert ("learned" in bias) is learned
    assert set(bias["ips"]) == {"valid", "test"}
    assert 0.0 <= bias["ips"]["test"]["ips_ndcg@10"] <= 1.0
    assert (out / "propensity.png").exists()


def test_simulated_log_keeps_each_querys_sessions_in_one_set():
    from ltr.runs.config import parse_config
    from ltr.runs.data import load_data

    cfg = parse_config(yaml.safe_load((CONFIGS / "position_bias.yaml").read_text()),
                       overrides=SMALL_CLICKS[1::2])
    sets = load_data(cfg)
    sessions = cfg.data.synthetic.clicks.sessions
    for ds in sets.values():
        # a query's sessions are consecutive lists of one set, each showing all its documents
        # once, in positions 1..n
        assert ds.n_queries % sessions == 0
        doc, pos = ds.doc, ds.position
        assert not ds.labels  # the logged ranking travels as named fields, not label columns
        for q in range(0, ds.n_queries, sessions):
            first = np.sort(doc[ds.offsets[q]:ds.offsets[q + 1]])
            for s in range(q, q + sessions):
                rows = slice(ds.offsets[s], ds.offsets[s + 1])
                np.testing.assert_array_equal(np.sort(doc[rows]), first)
                np.testing.assert_array_equal(np.sort(pos[rows]), np.arange(1, len(first) + 1))
    assert sum(ds.n_queries for ds in sets.values()) == 40 * sessions


def test_propensity_outputs_count_clicks_per_position_and_grey_out_thin_ones(tmp_path, capsys):
    """Counts per position equal a recount of the training log; thin positions are marked."""
    from ltr.runs.config import load_config
    from ltr.runs.data import load_data
    from ltr.runs.position_bias import MIN_CLICKS

    out = tmp_path / "run"
    assert main(["train", str(CONFIGS / "position_bias.yaml"), *SMALL_CLICKS,
                 "--out", str(out)]) == 0, capsys.readouterr().err
    train = load_data(load_config(CONFIGS / "position_bias.yaml",
                                  [s for s in SMALL_CLICKS if s != "--set"]))["train"]
    pos, click = train.position, train.click
    depth = int(pos.max())
    impressions = [int(np.sum(pos == p)) for p in range(1, depth + 1)]
    clicks = [int(np.sum(click[pos == p] > 0)) for p in range(1, depth + 1)]
    counts = json.loads((out / "metrics.json").read_text())["position_bias"]["counts"]
    assert counts == {"impressions": impressions, "clicks": clicks, "min_clicks": MIN_CLICKS}
    rows = list(csv.DictReader(io.StringIO((out / "propensity.csv").read_text())))
    assert [int(r["clicks"]) for r in rows[:depth]] == clicks
    assert [int(r["enough_data"]) for r in rows[:depth]] == [int(c >= MIN_CLICKS) for c in clicks]
    thin = [p for p, c in enumerate(clicks, 1) if c < MIN_CLICKS]
    assert thin  # this small log leaves deep positions without enough clicks
    md = (out / "report.md").read_text()
    assert f"Positions with fewer than {MIN_CLICKS} clicks, greyed in the plot" in md
    assert f"{sum(clicks)} training clicks over {depth} positions" in md


def test_propensity_plot_draws_thin_positions_grey_not_as_measured(tmp_path, monkeypatch):
    from ltr.runs import report_plots as report

    figures = []
    monkeypatch.setattr(report, "_save_png", lambda fig, path: figures.append(fig) or path)
    report.plot_propensity({"t+": [1.0, 0.5, 1.0, 0.3]}, tmp_path / "p.png",
                           counts=([100, 90, 80, 70], [40, 20, 0, 12]), min_clicks=10)
    (fig,) = figures
    ax, bx = fig.axes
    measured = ax.lines[0].get_ydata()
    assert np.isnan(measured[2]) and not np.isnan(measured[[0, 1, 3]]).any()  # position 3 cut
    greyed = ax.collections[0].get_offsets()
    assert greyed.tolist() == [[3.0, 1.0]]  # and shown in grey instead
    assert [b.get_height() for b in bx.patches] == [100, 90, 80, 70, 40, 20, 0, 12]
    assert "fewer than 10 clicks" in ax.get_title()

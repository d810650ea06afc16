"""IPS nDCG scoring with one examination propensity per row (cascade-style logs).

The scorer and a run's ``evaluation.ips.propensity: data`` take per-impression
propensities that travel with the rows; both are compared with a plain-Python
IPS nDCG written here from the definition.
"""

from __future__ import annotations

import itertools

import numpy as np
import pytest
import sklearn
from sklearn.linear_model import LinearRegression
from sklearn.model_selection import GroupKFold, cross_validate

from ltr.clicks import simulate_cascade
from ltr.scoring import make_ips_ndcg_scorer

LABELS = np.array([0, 3, 1, 4, 0, 2, 1, 0, 3, 2])
N_LISTS = 40


def naive_ips_ndcg(click, score, propensity, offsets, k, clip=None):
    """Mean over lists with a click of IPS-DCG@k / ideal IPS-DCG@k (weights click / p).

    Tied scores share the mean discount of the ranks they occupy (``ties='average'``).
    """
    values = []
    for a, b in itertools.pairwise(offsets):
        p = np.asarray(propensity[a:b], dtype=float)
        if clip is not None:
            p = np.maximum(p, clip)
        w = np.asarray(click[a:b], dtype=float) / p
        if not w.any():
            continue
        s = np.asarray(score[a:b], dtype=float)
        disc = [1.0 / np.log2(r + 2) if r < k else 0.0 for r in range(b - a)]
        dcg = 0.0
        for value in set(s.tolist()):  # tied rows share the mean discount of their ranks
            tied = s == value
            first = int((s > value).sum())
            dcg += w[tied].sum() * np.mean(disc[first:first + int(tied.sum())])
        ideal = sum(v / np.log2(r + 2) for r, v in enumerate(sorted(w, reverse=True)[:k]))
        values.append(dcg / ideal)
    return float(np.mean(values))


def _cascade_log():
    """A cascade log over 40 ten-document lists, with each impression's true examination."""
    labels = np.tile(LABELS, N_LISTS)
    log = simulate_cascade(labels, group=[LABELS.size] * N_LISTS, n_sessions=3, abandon=0.2,
                           logging_scores=np.zeros(labels.size), temperature=1.0,
                           random_state=0)
    rng = np.random.default_rng(0)
    features = np.column_stack([labels + rng.normal(size=labels.size),
                                rng.normal(size=labels.size)])
    X = features[log.row]
    list_id = np.repeat(np.arange(log.offsets.size - 1), np.diff(log.offsets))
    return log, X, list_id, _examination(log)


def _examination(log):
    """A per-impression propensity: it falls with position and after each click above."""
    above = np.zeros(log.click.size)
    for a, b in itertools.pairwise(log.offsets):
        order = np.argsort(log.position[a:b])
        seen = np.cumsum(log.click[a:b][order]) - log.click[a:b][order]
        above[a + order] = seen
    return 0.8 ** (log.position - 1) * 0.5 ** above


def test_scorer_with_row_propensities_matches_the_definition():
    log, X, list_id, prop = _cascade_log()
    model = LinearRegression().fit(X, log.click)
    scorer = make_ips_ndcg_scorer(5, clip=0.05)
    assert repr(scorer) == "make_ips_ndcg_scorer(k=5, clip=0.05)"
    value = scorer(model, X, log.click, qid=list_id, position=log.position, propensity=prop)
    ref = naive_ips_ndcg(log.click, model.predict(X), prop, log.offsets, 5, clip=0.05)
    assert value == pytest.approx(ref, rel=1e-12)


def test_row_propensities_travel_with_the_folds_through_metadata_routing():
    log, X, list_id, prop = _cascade_log()
    scorer = make_ips_ndcg_scorer(3)
    with sklearn.config_context(enable_metadata_routing=True):
        out = cross_validate(LinearRegression(), X, log.click, cv=GroupKFold(n_splits=3),
                             scoring=scorer, return_estimator=True, return_indices=True,
                             params={"groups": list_id, "qid": list_id,
                                     "position": log.position, "propensity": prop})
    for model, test, value in zip(out["estimator"], out["indices"]["test"], out["test_score"]):
        test = np.sort(test)
        offsets = np.flatnonzero(np.r_[True, np.diff(list_id[test]) != 0, True])
        ref = naive_ips_ndcg(log.click[test], model.predict(X[test]), prop[test], offsets, 3)
        assert value == pytest.approx(ref, rel=1e-12)


def test_row_propensities_from_a_dataframe_column_are_dropped_before_predict():
    pd = pytest.importorskip("pandas")
    log, X, list_id, prop = _cascade_log()
    frame = pd.DataFrame({"a": X[:, 0], "b": X[:, 1], "sid": list_id, "pos": log.position,
                          "p": prop})
    model = LinearRegression().fit(frame[["a", "b"]], log.click)
    scorer = make_ips_ndcg_scorer(5, qid_column="sid", position_column="pos",
                                  propensity_column="p")
    assert repr(scorer).endswith("propensity_column='p')")
    value = scorer(model, frame, log.click)
    ref = naive_ips_ndcg(log.click, model.predict(frame[["a", "b"]]), prop, log.offsets, 5)
    assert value == pytest.approx(ref, rel=1e-12)


def test_one_list_of_row_propensities_is_not_read_as_a_position_table():
    log, X, _, prop = _cascade_log()
    # a list with two clicks or more (one click's weight cancels in the normalised value)
    clicked = next(q for q in range(log.offsets.size - 1)
                   if log.click[log.offsets[q]:log.offsets[q + 1]].sum() >= 2)
    rows = np.arange(log.offsets[clicked], log.offsets[clicked + 1])[::-1]  # deepest shown first
    model = LinearRegression().fit(X, log.click)
    scorer = make_ips_ndcg_scorer(None)
    value = scorer(model, X[rows], log.click[rows], qid=np.zeros(rows.size),
                   position=log.position[rows], propensity=prop[rows])
    ref = naive_ips_ndcg(log.click[rows], model.predict(X[rows]), prop[rows],
                         np.array([0, rows.size]), rows.size)
    assert value == pytest.approx(ref, rel=1e-12)


def test_row_propensity_scorer_errors_name_the_fix():
    log, X, list_id, prop = _cascade_log()
    model = LinearRegression().fit(X, log.click)
    scorer = make_ips_ndcg_scorer(5)
    with pytest.raises(ValueError, match="needs one examination propensity per row"):
        scorer(model, X, log.click, qid=list_id, position=log.position)
    with pytest.raises(ValueError, match=r"propensity has 3 values but there are \d+ rows"):
        scorer(model, X, log.click, qid=list_id, position=log.position, propensity=prop[:3])
    bad = prop.copy()
    bad[4] = 0.0
    with pytest.raises(ValueError, match=r"propensity\[4\] = 0.0"):
        scorer(model, X, log.click, qid=list_id, position=log.position, propensity=bad)
    with pytest.raises(ValueError, match="give one of them"):
        make_ips_ndcg_scorer(5, propensity=[1.0, 0.5], propensity_column="p")


# ----------------------------------------------------------------- a run's IPS metrics


def _run_config(tmp_path, letor_slice_dir, **evaluation):
    """A csv of cascade sessions on the LETOR slice, with each impression's propensity."""
    import pandas as pd
    import yaml

    from ltr import load_letor

    tr = load_letor(letor_slice_dir / "rank.train")
    logger = tr.y + np.random.default_rng(3).normal(0.0, 1.5, tr.n_rows)
    log = simulate_cascade(tr.y.astype(int), offsets=tr.offsets, logging_scores=logger,
                           temperature=1.0, n_sessions=3, abandon=0.2, random_state=0)
    df = pd.DataFrame(tr.X[log.row, :20], columns=[f"f{j}" for j in range(20)])
    df.insert(0, "qid", np.repeat(np.arange(log.offsets.size - 1), np.diff(log.offsets)))
    df.insert(1, "grade", tr.y[log.row])
    df.insert(2, "shown_at", log.position)
    df.insert(3, "clicked", log.click.astype(int))
    if evaluation:  # (an undeclared column would be a feature)
        df.insert(4, "examined", _examination(log))
    csv = tmp_path / f"sessions{len(evaluation)}.csv"
    df.to_csv(csv, index=False)
    data = {"source": "csv", "train": str(csv), "label": "grade", "qid": "qid",
            "position": "shown_at", "click": "clicked", "split": {"valid": 0.2, "test": 0.2}}
    if evaluation:
        data["propensity"] = "examined"
    cfg = {"seed": 0, "data": data,
           "model": {"engine": "lightgbm", "num_leaves": 7, "min_child_samples": 5,
                     "n_jobs": 1, "n_estimators": 6},
           "evaluation": {"eval_at": [3, 10], **evaluation},
           "importance": {"enabled": False},
           "output": {"runs_dir": str(tmp_path / "runs")}}
    path = tmp_path / f"run{len(evaluation)}.yaml"
    path.write_text(yaml.safe_dump(cfg, sort_keys=False))
    return path


def test_run_ips_from_data_propensity_matches_the_definition_and_leaves_training_alone(
    letor_slice_dir, tmp_path, capsys
):
    import json

    from ltr.cli import main
    from ltr.engines import RankingModel
    from ltr.runs.config import load_config, resolve_data_paths
    from ltr.runs.data import load_data, logged_column

    path = _run_config(tmp_path, letor_slice_dir, ips={"propensity": "data", "clip": 0.2})
    assert main(["train", str(path), "--out", str(tmp_path / "ips")]) == 0
    bias = json.loads((tmp_path / "ips" / "metrics.json").read_text())["position_bias"]
    assert bias["propensity"] == {"source": "data.propensity (per row)", "clip": 0.2}
    model = RankingModel.load(tmp_path / "ips" / "model.json")
    sets = load_data(resolve_data_paths(load_config(path)))
    for name in ("valid", "test"):
        ds = sets[name]
        prop = logged_column(ds, "propensity")
        for k in (3, 10):
            ref = naive_ips_ndcg(logged_column(ds, "click"), model.predict(ds.X), prop,
                                 ds.offsets, k, clip=0.2)
            assert bias["ips"][name][f"ips_ndcg@{k}"] == pytest.approx(ref, rel=1e-12)
    # naive training: the propensities served the metrics only
    plain = _run_config(tmp_path, letor_slice_dir)
    assert main(["train", str(plain), "--out", str(tmp_path / "plain")]) == 0
    other = RankingModel.load(tmp_path / "plain" / "model.json")
    X = sets["test"].X
    np.testing.assert_array_equal(model.predict(X), other.predict(X))
    capsys.readouterr()


def test_run_refuses_ips_from_data_without_the_column(letor_slice_dir, tmp_path, capsys):
    import yaml

    from ltr.cli import main

    path = _run_config(tmp_path, letor_slice_dir, ips={"propensity": "data"})
    cfg = yaml.safe_load(path.read_text())
    del cfg["data"]["propensity"]
    path.write_text(yaml.safe_dump(cfg, sort_keys=False))
    assert main(["validate", str(path)]) == 1
    assert "evaluation.ips.propensity: 'data' reads each row's examination" in \
        capsys.readouterr().err
    cfg["data"]["propensity"] = "examined"
    cfg["evaluation"] = {"ips": {"propensity": "em"}, "eval_at": [3]}
    cfg["model"]["unbiased"] = "auto"
    path.write_text(yaml.safe_dump(cfg, sort_keys=False))
    assert main(["validate", str(path)]) == 1
    assert "data.propensity: model.unbiased: auto estimates the propensities" in \
        capsys.readouterr().err

"""The pair cost of learned position biases (``bias_cost``) and per-row propensities.

``bias_cost`` reaches the objective the same way from the estimator and from a
YAML config; per-row propensities equal to a per-position table expanded by
position give bit-identical gradients, IPS values and models (objective,
``ips_dcg`` / ``ips_ndcg``, ``LambdaMARTRanker.fit(propensity=...)``), are split
with the rows by a cross-validation, and bad ones are refused before any work.
(The gradients of both costs against the naive reference: tests/test_unbiased.py.)
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import yaml

from ltr import LambdaMARTRanker, load_letor
from ltr.cli import main
from ltr.clicks import ips_dcg, ips_ndcg, simulate_pbm
from ltr.engines import RankingModel, train
from ltr.objectives import LambdaRankObjective
from ltr.objectives.sampling import TopKPairSampling
from ltr.testing import random_scored_queries as random_queries

TABLE = np.array([1.0, 0.62, 0.45, 0.3, 0.22, 0.15, 0.1])


def _positions(rng, offsets):
    return np.concatenate([rng.permutation(int(n)) + 1 for n in np.diff(offsets)])


def _by_position(position):
    """The table expanded to one propensity per row (positions past it use its last entry)."""
    return TABLE[np.minimum(position, TABLE.size) - 1]


@pytest.fixture(scope="module")
def logged(letor_slice_dir):
    tr = load_letor(letor_slice_dir / "rank.train")
    rng = np.random.default_rng(0)
    logger = tr.y + rng.normal(0.0, 2.0, len(tr.y))
    log = simulate_pbm(tr.y.astype(np.int64), offsets=tr.offsets, logging_scores=logger,
                       examination=1.0, random_state=0)
    return tr.X[log.row], log.click.astype(np.float64), tr.qid[log.row], log.position


# ----------------------------------------------------------------- bias_cost


def test_bias_cost_reaches_the_objective_from_the_estimator(logged):
    X, click, qid, pos = logged
    offsets = np.flatnonzero(np.r_[True, qid[1:] != qid[:-1], True])
    kw = {"num_boost_round": 4, "params": {"num_leaves": 7, "min_data_in_leaf": 5},
          "n_jobs": 1, "random_state": 0, "position": pos}
    by_cost = {}
    for cost in ("reversed_pair_loss", "pair_loss"):
        est = LambdaMARTRanker(n_estimators=4, num_leaves=7, min_child_samples=5, n_jobs=1,
                               random_state=0, unbiased=True, bias_cost=cost)
        est.fit(X, click, qid=qid, position=pos)
        direct = train(X, click, offsets, objective=LambdaRankObjective(
            unbiased=True, bias_cost=cost), **kw)
        np.testing.assert_array_equal(est.predict(X), direct.predict(X))
        assert est.model_.position_bias["bias_cost"] == cost
        by_cost[cost] = est.model_.position_bias["t_plus"]
    assert by_cost["reversed_pair_loss"] != by_cost["pair_loss"]
    assert LambdaMARTRanker().get_params()["bias_cost"] == "reversed_pair_loss"


def test_a_state_saved_before_bias_cost_existed_restores_as_the_papers_cost():
    old = LambdaRankObjective(unbiased=True, max_position=3).bias_state()
    del old["bias_cost"]
    LambdaRankObjective(unbiased=True, max_position=3, bias_cost="pair_loss").set_bias_state(old)
    with pytest.raises(ValueError, match=r"state\['bias_cost'\] is 'pair_loss' but the objective "
                                         r"has 'reversed_pair_loss'.*without 'bias_cost'"):
        LambdaRankObjective(unbiased=True, max_position=3).set_bias_state(old)


def _click_csv(tmp_path: Path, logged) -> Path:
    X, click, qid, pos = logged
    df = pd.DataFrame(X[:, :10], columns=[f"f{j}" for j in range(10)])
    df.insert(0, "qid", qid)
    df.insert(1, "shown_at", pos)
    df.insert(2, "clicked", click.astype(int))
    df.insert(3, "examined", _by_position(pos))
    path = tmp_path / "clicks.csv"
    df.to_csv(path, index=False)
    return path


def _click_config(tmp_path: Path, logged, **model) -> dict:
    return {
        "seed": 0,
        "data": {"source": "csv", "train": str(_click_csv(tmp_path, logged)), "qid": "qid",
                 "position": "shown_at", "click": "clicked",
                 "features": [f"f{j}" for j in range(10)], "split": {"valid": 0.2, "test": 0.2}},
        "model": {"engine": "lightgbm", "num_leaves": 7, "min_child_samples": 5, "n_jobs": 1,
                  "n_estimators": 3, "unbiased": True, **model},
        "importance": {"enabled": False},
        "output": {"runs_dir": str(tmp_path / "runs")},
    }


def test_bias_cost_is_a_config_key_of_the_model_section(logged, tmp_path, capsys):
    cfg = _click_config(tmp_path, logged, bias_cost="pair_loss")
    path = tmp_path / "c.yaml"
    path.write_text(yaml.safe_dump(cfg, sort_keys=False))
    assert main(["train", str(path), "--out", str(tmp_path / "run")]) == 0
    model = RankingModel.load(tmp_path / "run" / "model.json")
    assert model.position_bias["bias_cost"] == "pair_loss"
    cfg["model"]["bias_cost"] = "ranknet"
    path.write_text(yaml.safe_dump(cfg, sort_keys=False))
    assert main(["train", str(path), "--out", str(tmp_path / "bad")]) != 0
    assert "bias_cost" in capsys.readouterr().err
    assert not (tmp_path / "bad").exists()


# ----------------------------------------------------------------- per-row propensities


@pytest.mark.parametrize(
    "options",
    [{}, {"propensity_clip": 0.2}, {"sigmoid": "lightgbm", "propensity_clip": 0.12},
     {"sampling": TopKPairSampling(top=3, head_weight=2.0, pairs_per_doc=4, random_state=1)}],
    ids=["plain", "clip", "lightgbm-sigmoid", "sampled"],
)
def test_per_row_propensities_by_position_give_bit_identical_gradients(options):
    rng = np.random.default_rng(3)
    scores, labels, offsets = random_queries(rng, 25, 12)
    position = _positions(rng, offsets)
    table = LambdaRankObjective(k=6, propensity=TABLE, **options)
    rows = LambdaRankObjective(k=6, propensity=_by_position(position), **options)
    for it in (0, 1):
        g1, h1 = table.gradients(scores, labels, offsets, it, position=position)
        g2, h2 = rows.gradients(scores, labels, offsets, it, position=position)
        assert np.array_equal(g1, g2) and np.array_equal(h1, h2)
    state = rows.bias_state()
    assert state["per_row"] is True and state["t_plus"] == []
    rows.set_bias_state(state)  # round-trips without repeating the rows


def test_one_query_reads_its_values_as_a_per_position_table():
    scores, labels = np.array([0.3, 0.1, 0.2]), np.array([0.0, 2.0, 1.0])
    position = [3, 1, 2]
    a = LambdaRankObjective(k=3, propensity=[1.0, 0.5, 0.25])
    g_table, _ = a.gradients(scores, labels, [0, 3], position=position)
    # the same three values as one propensity per row weight other pairs: not what one list means
    b = LambdaRankObjective(k=3, propensity=[0.25, 1.0, 0.5])
    g_rows, _ = b.gradients(scores, labels, [0, 3], position=position)
    assert not np.array_equal(g_table, g_rows)


@pytest.mark.parametrize("kwargs", [{}, {"clip": 0.3, "k": 3}, {"k": None}])
def test_ips_metrics_take_per_row_propensities(kwargs):
    rng = np.random.default_rng(1)
    y = rng.integers(0, 5, 120)
    log = simulate_pbm(y, offsets=np.arange(0, 121, 12), n_sessions=3, random_state=0)
    score = rng.normal(size=log.click.size)
    common = {"position": log.position, "offsets": log.offsets, "reduce": None, **kwargs}
    table = np.r_[TABLE, np.full(5, TABLE[-1])]  # covers positions 1..12
    for f, extra in ((ips_dcg, {}), (ips_dcg, {"self_normalize": True}), (ips_ndcg, {})):
        by_table = f(log.click, score, propensity=table, **common, **extra)
        by_row = f(log.click, score, propensity=_by_position(log.position), **common, **extra)
        np.testing.assert_array_equal(by_table, by_row)


def test_estimator_fit_propensity_per_row_equals_the_per_position_table(logged):
    X, click, qid, pos = logged
    kw = {"n_estimators": 3, "num_leaves": 7, "min_child_samples": 5, "n_jobs": 1,
          "random_state": 0, "unbiased": True}
    # fit reorders rows by query: shuffle them so the per-row values must travel with them
    perm = np.random.default_rng(2).permutation(len(click))
    a = LambdaMARTRanker(propensity=TABLE, **kw).fit(X[perm], click[perm], qid=qid[perm],
                                                     position=pos[perm])
    b = LambdaMARTRanker(**kw).fit(X[perm], click[perm], qid=qid[perm], position=pos[perm],
                                   propensity=_by_position(pos)[perm])
    np.testing.assert_array_equal(a.predict(X), b.predict(X))
    assert b.model_.position_bias["per_row"] is True


def test_cross_validation_splits_per_row_propensities_with_the_rows(logged):
    import sklearn
    from sklearn.model_selection import GroupKFold, cross_validate

    from ltr import make_ndcg_scorer

    X, click, qid, pos = logged
    kw = {"n_estimators": 3, "num_leaves": 7, "min_child_samples": 5, "n_jobs": 1,
          "random_state": 0, "unbiased": True}
    with sklearn.config_context(enable_metadata_routing=True):
        scorer = make_ndcg_scorer(5)
        by_table = cross_validate(LambdaMARTRanker(propensity=TABLE, **kw), X, click,
                                  cv=GroupKFold(3), scoring=scorer,
                                  params={"groups": qid, "qid": qid, "position": pos})
        by_row = cross_validate(LambdaMARTRanker(**kw), X, click, cv=GroupKFold(3),
                                scoring=scorer,
                                params={"groups": qid, "qid": qid, "position": pos,
                                        "propensity": _by_position(pos)})
    np.testing.assert_array_equal(by_table["test_score"], by_row["test_score"])


@pytest.mark.parametrize(
    ("params", "propensity", "match"),
    [
        ({"unbiased": True}, lambda p: p[:-1],
         r"propensity has \d+ values but there are \d+ rows; give one examination propensity"),
        ({"unbiased": True}, lambda p: np.where(np.arange(p.size) == 4, 0.0, p),
         (r"propensity must lie in \(0, 1\] \(an examination probability per row\); "
         r"propensity\[4\] = 0.0")),
        ({"unbiased": True}, lambda p: p[:, None], r"propensity must be 1-D"),
        ({"unbiased": True, "propensity": [1.0, 0.5]}, lambda p: p,
         r"propensity is given twice"),
        ({"unbiased": True, "objective": "native"}, lambda p: p,
         r"per-row propensities .* set unbiased=True with objective='lambdarank'"),
        ({}, lambda p: p, r"per-row propensities .* set unbiased=True"),
    ],
)
def test_bad_per_row_propensities_are_refused_before_training(logged, params, propensity, match):
    X, click, qid, pos = logged
    est = LambdaMARTRanker(n_estimators=2, **params)
    with pytest.raises(ValueError, match=match):
        est.fit(X, click, qid=qid, position=pos if params else None,
                propensity=propensity(_by_position(pos)))
    assert not hasattr(est, "model_")


def test_config_propensity_column_equals_the_per_position_table(logged, tmp_path, capsys):
    models = {}
    for name, change in (("table", {"model": {"propensity": TABLE.tolist()}}),
                         ("rows", {"data": {"propensity": "examined"}})):
        cfg = _click_config(tmp_path, logged)
        for section, values in change.items():
            cfg[section].update(values)
        path = tmp_path / f"{name}.yaml"
        path.write_text(yaml.safe_dump(cfg, sort_keys=False))
        assert main(["train", str(path), "--out", str(tmp_path / name)]) == 0
        models[name] = RankingModel.load(tmp_path / name / "model.json")
    X = logged[0][:200, :10]
    np.testing.assert_array_equal(models["table"].predict(X), models["rows"].predict(X))
    assert models["rows"].position_bias["per_row"] is True
    twice = "data.propensity: propensities are given twice"
    for change, match in (({"model": {"unbiased": False}}, "data.propensity: per-row"),
                          ({"model": {"propensity": [1.0]}}, twice)):
        cfg = _click_config(tmp_path, logged)
        cfg["data"]["propensity"] = "examined"
        cfg["model"].update(change["model"])
        path = tmp_path / "bad.yaml"
        path.write_text(yaml.safe_dump(cfg, sort_keys=False))
        capsys.readouterr()
        assert main(["train", str(path), "--out", str(tmp_path / "bad")]) != 0
        assert match in capsys.readouterr().err
        assert not (tmp_path / "bad").exists()


def test_ips_names_the_bad_per_row_propensity():
    with pytest.raises(ValueError, match=r"propensity\[2\] = 1.5"):
        ips_ndcg([0, 1, 1, 0], [1.0, 2.0, 3.0, 4.0], position=[1, 2, 1, 2], group=[2, 2],
                 propensity=[1.0, 0.5, 1.5, 0.5])

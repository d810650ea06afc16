"""Choosing a debiasing method from clicks: select_debiasing, unbiased="auto", the config key.

The held-out score is checked against an independent recomputation of the
self-normalised IPS DCG (fold by fold, from the candidates' own fits); the
choice is checked against the candidates' nDCG on the TRUE grades of unseen
queries in a position-biased setting where debiasing clearly pays.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import yaml
from sklearn.base import clone

from ltr import LambdaMARTRanker, load_letor, select_debiasing
from ltr.build import TrainSettings, build_training
from ltr.clicks import simulate_pbm
from ltr.engines import uses_position
from ltr.estimator import (
    CANDIDATES,
    DEFAULT_CANDIDATES,
    TABLES,
    DebiasingSelection,
    available_candidates,
)
from ltr.metrics import ndcg
from ltr.synthetic import make_ranking

CLICK_PROB = 0.1 + 0.9 * (2.0 ** np.arange(5) - 1) / 15  # the ladder by grade 0..4


def _small() -> LambdaMARTRanker:
    return LambdaMARTRanker(n_estimators=15, num_leaves=7, random_state=0, n_jobs=1)


@pytest.fixture(scope="module")
def slice_log(letor_slice_dir):
    """PBM clicks (examination 1/p^2) over a deterministic logger confounded with relevance."""
    tr = load_letor(letor_slice_dir / "rank.train", n_features=300)
    logger = tr.y + np.random.default_rng(0).normal(scale=1.0, size=tr.y.size)
    log = simulate_pbm(tr.y.astype(int), offsets=tr.offsets, logging_scores=logger,
                       examination=2.0, click_prob=CLICK_PROB, n_sessions=4, random_state=1)
    qid = np.repeat(np.arange(log.offsets.size - 1), np.diff(log.offsets))
    return tr.X[log.row], log.click.astype(np.float64), qid, log.position, log


@pytest.fixture(scope="module")
def slice_selection(slice_log):
    X, y, qid, pos, _ = slice_log
    # the settings unbiased="auto" uses for this estimator (seed 3, eval_at[0] = 10)
    return select_debiasing(_small().set_params(random_state=3), X, y, qid=qid, position=pos,
                            random_state=3)


def test_every_candidate_gets_a_finite_held_out_score_and_interval(slice_selection):
    sel = slice_selection
    assert isinstance(sel, DebiasingSelection)
    have = available_candidates(_small())
    assert {"naive", "pair", "propensity", "native"} <= set(have)
    # by default the four candidates of DEFAULT_CANDIDATES, each trained n_splits=2 times
    assert list(sel.candidates) == [c for c in DEFAULT_CANDIDATES if c in have]
    assert {"naive", "pair"} <= set(sel.candidates)
    for name in sel.candidates:
        lo, hi = sel.ci[name]
        assert np.isfinite(sel.snips[name]) and 0.0 < sel.snips[name] <= 1.0
        assert lo <= sel.snips[name] <= hi
        dlo, dhi = sel.diff_ci[name]
        assert dlo <= sel.snips[name] - sel.snips[sel.ranking[0]] <= dhi
    assert sel.ranking[0] == max(sel.snips, key=sel.snips.get)
    assert sel.diff_ci[sel.ranking[0]] == (0.0, 0.0) and sel.diff_se[sel.ranking[0]] == 0.0
    frame = sel.to_frame()
    assert list(frame["candidate"]) == list(sel.ranking)
    assert frame["score"].is_monotonic_decreasing and frame["chosen"].sum() == 1
    assert frame.loc[frame["chosen"], "candidate"].item() == sel.chosen
    # position-based clicks (independent given the documents): the ratio is near 1, so the
    # IPS criterion ranks the candidates
    assert sel.nested_ratio < 1.25 and sel.criterion == "snips" and sel.score == sel.snips
    # each query is held out once; the score is the mean of the query scores
    assert sel.per_query.shape == (40, len(sel.candidates))
    seen = sel.query_weight > 0
    assert np.isfinite(sel.per_query[seen]).all() and np.isnan(sel.per_query[~seen]).all()
    means = np.mean(sel.per_query[seen], axis=0)
    np.testing.assert_allclose(means, [sel.snips[c] for c in sel.candidates])
    # a deterministic logger: cell EM cannot identify the propensities, the cascade EM is used
    assert sel.propensity_method == "cascade"
    # examination falls with rank: the estimate is non-increasing, position 1 = 1
    assert sel.propensity[0] == 1.0 and np.all(np.diff(sel.propensity) <= 0)
    assert sel.propensity[-1] < 0.5


def test_one_se_rule_takes_the_fewest_tables_within_one_standard_error(slice_log,
                                                                      slice_selection):
    X, y, qid, pos, _ = slice_log
    one_se = slice_selection
    best = select_debiasing(_small().set_params(random_state=3), X, y, qid=qid, position=pos,
                            random_state=3, rule="best")
    assert one_se.rule == "one_se" and best.rule == "best"
    # the same fits, folds and bootstrap: only the choice may differ
    assert best.score == one_se.score and best.diff_se == one_se.diff_se
    assert best.ranking == one_se.ranking and best.chosen == best.ranking[0]
    # the rule redone from the returned scores: within one SE of the paired difference to
    # the best, the fewest per-position tables, ties to the higher score
    top = one_se.score[one_se.ranking[0]]
    near = [c for c in one_se.ranking if one_se.score[c] >= top - one_se.diff_se[c]]
    fewest = min(TABLES[c] for c in near)
    assert one_se.chosen == next(c for c in near if TABLES[c] == fewest)
    assert TABLES[one_se.chosen] <= TABLES[best.chosen]
    # the paired SE is the spread of the bootstrap differences: positive, inside the interval
    for c in one_se.candidates:
        lo, hi = one_se.diff_ci[c]
        if c != one_se.ranking[0]:
            assert 0.0 < one_se.diff_se[c] and hi - lo > one_se.diff_se[c]
    frame = one_se.to_frame()
    assert list(frame["tables"]) == [TABLES[c] for c in one_se.ranking]
    assert set(TABLES) == set(CANDIDATES)  # every candidate has its table count
    np.testing.assert_allclose(frame["diff_to_best"], [one_se.score[c] - top
                                                       for c in one_se.ranking])
    # chosen parameters are the chosen candidate's
    assert {k: v for k, v in one_se.params.items() if k != "propensity"} == {
        k: v for k, v in CANDIDATES[one_se.chosen].items() if k != "propensity"}


def test_held_out_score_matches_a_naive_self_normalised_ips_recomputation(slice_log):
    """Two folds with given propensities: redo each fold's fit and the SNIPS DCG@5 by hand."""
    X, y, qid, pos, log = slice_log
    theta = 1.0 / np.arange(1, 40) ** 2
    sel = select_debiasing(_small(), X, y, qid=qid, position=pos, candidates=["naive"],
                           propensity=theta, n_splits=2, k=5, n_bootstrap=10, random_state=7)
    assert sel.propensity_method == "given"
    # the folds: queries (here: log.query) assigned by the seeded permutation
    fold = (np.random.default_rng(7).permutation(40) % 2)[log.query]
    expected, weight = np.full(40, np.nan), np.zeros(40)
    for f in (0, 1):
        tr = fold != f
        model = clone(_small()).fit(X[tr], y[tr], qid=qid[tr])
        for q in np.unique(log.query[~tr]):
            num = den = 0.0
            for lst in np.unique(qid[log.query == q]):
                rows = np.flatnonzero(qid == lst)
                score = model.predict(X[rows])
                for i, s in zip(rows, score):
                    # tied scores share the mean discount of the ranks they span (cut at 5)
                    above, tied = int(np.sum(score > s)), int(np.sum(score == s))
                    disc = [1 / np.log2(r + 1) if r <= 5 else 0.0
                            for r in range(above + 1, above + tied + 1)]
                    w = y[i] / theta[pos[i] - 1]
                    den += w
                    num += w * np.mean(disc)
            expected[q] = num / den if den > 0 else np.nan
            weight[q] = den
    np.testing.assert_allclose(sel.per_query[:, 0], expected, rtol=1e-9)
    np.testing.assert_allclose(sel.query_weight, weight, rtol=1e-12)
    seen = weight > 0
    assert sel.snips["naive"] == pytest.approx(np.mean(expected[seen]), rel=1e-12)
    # normalize="all": one ratio over every held-out session (sum of IPS DCGs / sum of weights)
    pooled = select_debiasing(_small(), X, y, qid=qid, position=pos, candidates=["naive"],
                              propensity=theta, n_splits=2, k=5, n_bootstrap=10,
                              random_state=7, normalize="all")
    assert pooled.snips["naive"] == pytest.approx(
        np.sum(expected[seen] * weight[seen]) / np.sum(weight), rel=1e-12)


def _hu_setting(seed: int):
    """The issue's PBM setting, small: weak deterministic logger, top 10 shown, eta = 2."""
    data = make_ranking(600, n_features=30, mean_docs=20, max_docs=40, random_state=seed)
    q = np.repeat(np.arange(data.offsets.size - 1), np.diff(data.offsets))
    n_train = 300
    small = q < 15  # the logger learned from 15 labelled queries
    logger = LambdaMARTRanker(n_estimators=20, num_leaves=7, random_state=0, n_jobs=1).fit(
        data.X[small], data.y[small], qid=q[small]).predict(data.X)
    train = q < n_train
    keep = np.zeros(q.size, bool)
    for i in range(n_train):
        a, b = data.offsets[i], data.offsets[i + 1]
        keep[a + np.argsort(-logger[a:b], kind="stable")[:10]] = True
    sizes = np.bincount(q[keep], minlength=n_train)
    log = simulate_pbm(data.y[keep].astype(int), group=sizes, logging_scores=logger[keep],
                       examination=2.0, click_prob=CLICK_PROB, n_sessions=5, random_state=seed)
    X = data.X[keep][log.row]
    qid = np.repeat(np.arange(log.offsets.size - 1), np.diff(log.offsets))
    test = ~train
    return X, log.click.astype(np.float64), qid, log.position, (data.X[test], data.y[test], q[test])


def test_strongly_biased_clicks_do_not_choose_naive_when_debiasing_wins_on_true_grades():
    X, y, qid, pos, (Xt, yt, qt) = _hu_setting(seed=0)
    base = LambdaMARTRanker(n_estimators=50, num_leaves=15, random_state=0, n_jobs=1)
    sel = select_debiasing(base, X, y, qid=qid, position=pos, n_bootstrap=200)
    true = {}
    for name in sel.candidates:
        params = sel.params if name == sel.chosen else {
            k: (sel.propensity if v == "estimated" else v) for k, v in CANDIDATES[name].items()}
        kw = {"position": pos} if uses_position(params) else {}
        model = clone(base).set_params(**params).fit(X, y, qid=qid, **kw)
        true[name] = ndcg(yt, model.predict(Xt), qid=qt, k=10)
    best = max(true.values())
    # the choice is close to the best candidate on 300 unseen queries' true grades, and it is
    # not naive training when a debiased candidate beats it clearly there
    if best - true["naive"] >= 0.01:
        assert sel.chosen != "naive", (sel.to_frame(), true)
    assert true[sel.chosen] >= best - 0.01, (sel.chosen, true)


# ----------------------------------------------------------------- unbiased="auto"


def test_auto_selects_then_refits_the_chosen_method_on_all_clicks(slice_log, slice_selection):
    X, y, qid, pos, _ = slice_log
    auto = LambdaMARTRanker(n_estimators=15, num_leaves=7, random_state=3, n_jobs=1,
                            unbiased="auto")
    auto.fit(X, y, qid=qid, position=pos)
    sel = auto.debiasing_
    pd.testing.assert_frame_equal(sel.to_frame(), slice_selection.to_frame())
    assert sel.chosen == slice_selection.chosen
    # the fitted model is the chosen candidate trained on every row
    params = dict(sel.params)
    ref = clone(auto).set_params(**params)
    ref.fit(X, y, qid=qid, **({"position": pos} if uses_position(params) else {}))
    np.testing.assert_array_equal(auto.predict(X[:50]), ref.predict(X[:50]))
    assert auto.get_params()["unbiased"] == "auto"  # the parameter is left as given
    assert clone(auto).get_params()["unbiased"] == "auto"
    assert auto.n_features_in_ == X.shape[1] and auto.n_queries_ == ref.n_queries_


def test_auto_runs_inside_a_search_with_routed_qid_and_position(slice_log):
    import sklearn
    from sklearn.model_selection import GridSearchCV, GroupKFold

    from ltr import make_ndcg_scorer

    X, y, qid, pos, log = slice_log
    rows = log.query < 20  # 20 queries x 4 sessions keep it quick
    with sklearn.config_context(enable_metadata_routing=True):
        search = GridSearchCV(
            LambdaMARTRanker(n_estimators=5, num_leaves=7, unbiased="auto", n_jobs=1,
                             random_state=0),
            {"learning_rate": [0.1]}, scoring=make_ndcg_scorer(5), cv=GroupKFold(2),
        )
        search.fit(X[rows], y[rows], groups=log.query[rows], qid=qid[rows], position=pos[rows])
    best = search.best_estimator_
    assert best.get_params()["unbiased"] == "auto"
    assert best.debiasing_.chosen in best.debiasing_.candidates


def test_auto_is_a_config_key_and_a_run_records_its_choice(tmp_path, capsys):
    from ltr.cli import main

    configs = Path(__file__).resolve().parents[1] / "configs"
    out = tmp_path / "run"
    small = ["--set", "data.synthetic.n_queries=30", "--set", "data.synthetic.n_features=8",
             "--set", "data.synthetic.mean_docs=10", "--set", "data.synthetic.max_docs=20",
             "--set", "model.n_jobs=1", "--set", "model.schedule.steps=[{k: 10, rounds: 5}]",
             "--set", "model.unbiased=auto", "--set", "model.objective=null"]
    rc = main(["train", str(configs / "position_bias.yaml"), *small, "--out", str(out)])
    assert rc == 0, capsys.readouterr().err
    table = pd.read_csv(out / "debiasing.csv")
    assert {"naive", "pair"} <= set(table["candidate"])
    assert table["chosen"].sum() == 1 and np.isfinite(table["score"]).all()
    assert json.loads((out / "metrics.json").read_text())


def test_auto_config_value_is_checked_by_name():
    from ltr.runs.config import ConfigError, parse_config

    configs = Path(__file__).resolve().parents[1] / "configs"
    raw = yaml.safe_load((configs / "position_bias.yaml").read_text())
    raw["model"]["unbiased"] = "auto"
    assert parse_config(raw).settings.unbiased == "auto"
    raw["model"]["unbiased"] = "sometimes"
    with pytest.raises(ConfigError, match="model.unbiased"):
        parse_config(raw)
    # auto needs the logged positions like true does, and says so
    with pytest.raises(ConfigError, match="model.unbiased: auto needs data.position"):
        parse_config({"data": {"source": "synthetic"}, "model": {"unbiased": "auto"}})


# ----------------------------------------------------------------- errors


def test_selection_errors_name_the_argument_and_the_fix(slice_log):
    X, y, qid, pos, _ = slice_log
    with pytest.raises(TypeError, match="position is required"):
        select_debiasing(_small(), X, y, qid=qid, position=None)
    with pytest.raises(ValueError, match=r"candidates: unknown candidate 'ips'; known: \["):
        select_debiasing(_small(), X, y, qid=qid, position=pos, candidates=["naive", "ips"])
    if "position_term" not in _small().get_params():
        with pytest.raises(ValueError, match=r"'position_term' needs the estimator parameter"):
            select_debiasing(_small(), X, y, qid=qid, position=pos, candidates=["position_term"])
    with pytest.raises(ValueError, match="n_splits=2 folds need at least 2 queries"):
        select_debiasing(_small(), X[:30], y[:30], qid=np.zeros(30), position=np.arange(1, 31))
    with pytest.raises(ValueError, match="propensity must be 'estimate', an array"):
        select_debiasing(_small(), X, y, qid=qid, position=pos, propensity="em")
    with pytest.raises(ValueError, match="rule must be 'one_se' or 'best', got 'min'"):
        select_debiasing(_small(), X, y, qid=qid, position=pos, rule="min")


def test_auto_errors_name_the_argument_and_the_fix(slice_log):
    X, y, qid, _, _ = slice_log
    with pytest.raises(ValueError, match="unbiased='auto' .* needs position"):
        LambdaMARTRanker(unbiased="auto").fit(X, y, qid=qid)
    with pytest.raises(ValueError, match="drop propensity"):
        LambdaMARTRanker(unbiased="auto", propensity=[1.0, 0.5]).fit(
            X, y, qid=qid, position=slice_log[3])
    with pytest.raises(ValueError, match="'unbiased' parameter .* Got 'yes'"):
        LambdaMARTRanker(unbiased="yes").fit(X, y, qid=qid)
    with pytest.raises(ValueError, match="resolve it first"):
        build_training(TrainSettings(unbiased="auto", objective="lambdarank"), position=[1])


def test_per_impression_propensities_equal_to_the_table_give_the_same_scores(slice_log):
    """One propensity per row (e.g. a cascade estimate) weighs each held-out click itself."""
    X, y, qid, pos, _ = slice_log
    theta = 1.0 / np.arange(1, 40)
    common = dict(candidates=["naive", "propensity"], n_splits=2, n_bootstrap=10, random_state=1)
    table = select_debiasing(_small(), X, y, qid=qid, position=pos, propensity=theta, **common)
    rows = select_debiasing(_small(), X, y, qid=qid, position=pos, propensity=theta[pos - 1],
                            **common)
    np.testing.assert_allclose(rows.per_query, table.per_query, rtol=1e-12)
    np.testing.assert_allclose(rows.propensity, theta[: int(pos.max())], rtol=1e-12)
    halved = select_debiasing(_small(), X, y, qid=qid, position=pos,
                              propensity=theta[pos - 1] * np.where(pos == 2, 0.5, 1.0), **common)
    assert not np.allclose(halved.per_query[:, 0], table.per_query[:, 0], equal_nan=True)


def test_a_stochastic_logger_makes_em_identifiable_and_it_is_used(letor_slice_dir):
    """Shuffled lists per session: EM on the training folds recovers the simulated 1/p."""
    tr = load_letor(letor_slice_dir / "rank.train", n_features=300)
    log = simulate_pbm(tr.y.astype(int), offsets=tr.offsets, logging_scores=np.zeros(tr.y.size),
                       temperature=1.0, examination=1.0, n_sessions=20, random_state=1)
    qid = np.repeat(np.arange(log.offsets.size - 1), np.diff(log.offsets))
    sel = select_debiasing(_small(), tr.X[log.row], log.click, qid=qid, position=log.position,
                           candidates=["naive"], n_bootstrap=10)
    assert sel.propensity_method == "em"
    # measured: within 0.045 of 1/p at positions 1..6 (mean of the three folds' estimates)
    np.testing.assert_allclose(sel.propensity[:6], 1.0 / np.arange(1, 7), atol=0.08)

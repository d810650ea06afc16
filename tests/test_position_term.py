"""The position term of ltr's LambdaRank objective (``position_term=True``).

Checked against LightGBM itself: with the LightGBM-mode sigmoid, ltr's
objective through ``ltr.engines.train`` grows the same trees and learns the
same per-position offsets as LightGBM's own position GAM
(``objective="lambdarank"`` with ``Dataset(position=...)``), with and without
regularisation and sample weights.  The gradients equal plain LambdaRank at
the shifted scores and the update equals a naive per-row loop of the Newton
step; training resumes bit-identically; every refusal names its argument.
"""

from __future__ import annotations

import json
import math

import lightgbm as lgb
import numpy as np
import pytest
import yaml

from ltr import LambdaMARTRanker, load_letor
from ltr.engines import RankingModel, train, uses_position
from ltr.objectives import LambdaRankObjective
from ltr.objectives.sampling import TopKPairSampling

GRADE_CLICK = np.array([0.4, 0.6, 0.7, 0.8, 0.9])
LGB = {"num_leaves": 7, "min_data_in_leaf": 5, "learning_rate": 0.1}


def _cascade_clicks(y: np.ndarray, feature: np.ndarray, offsets: np.ndarray, seed: int = 0):
    """A logger sorting by one feature; examined (0.8 ** (rank - 1)) documents clicked by grade."""
    rng = np.random.default_rng(seed)
    pos = np.empty(len(y), dtype=np.int64)
    for q in range(len(offsets) - 1):
        s, e = offsets[q], offsets[q + 1]
        pos[s:e][np.argsort(-feature[s:e], kind="stable")] = np.arange(1, e - s + 1)
    p = 0.8 ** (pos - 1.0) * GRADE_CLICK[y.astype(int)]
    return pos, (rng.random(len(y)) < p).astype(np.float64)


@pytest.fixture(scope="module")
def logged(letor_slice_dir):
    tr = load_letor(letor_slice_dir / "rank.train")
    te = load_letor(letor_slice_dir / "rank.test")
    pos, click = _cascade_clicks(tr.y, tr.X[:, 5], tr.offsets)
    return tr, te, pos, click


class _Log:
    """Collects LightGBM's log lines (its debug log prints the position factors)."""

    def __init__(self) -> None:
        self.lines: list[str] = []

    def info(self, msg: str) -> None:
        self.lines.append(msg)

    def warning(self, msg: str) -> None:
        self.lines.append(msg)


def _lightgbm_gam(tr, click, pos, rounds, params, weight=None):
    """LightGBM's own position GAM and its last logged factors ``{position id: factor}``."""
    from lightgbm import basic

    saved = (basic._LOGGER, basic._INFO_METHOD_NAME, basic._WARNING_METHOD_NAME)
    log = _Log()
    lgb.register_logger(log)
    try:
        p = dict(params, objective="lambdarank", lambdarank_truncation_level=10, verbosity=2,
                 num_threads=1, deterministic=True, force_row_wise=True, metric="None", seed=0)
        ds = lgb.Dataset(tr.X, label=click, group=np.diff(tr.offsets), position=pos - 1,
                         weight=weight, params=p)
        booster = lgb.train(p, ds, num_boost_round=rounds)
    finally:
        lgb.register_logger(saved[0], saved[1], saved[2])
    heads = [i for i, line in enumerate(log.lines) if "bias_factor" in line]
    assert heads, "LightGBM logged no position bias factors (its debug log, verbosity=2)"
    last = heads[-1]
    factors = {}
    for line in log.lines[last + 1:]:
        parts = line.replace("[LightGBM] [Debug]", "").split()
        if len(parts) != 2 or not parts[0].isdigit():
            break
        factors[int(parts[0])] = float(parts[1])
    return booster, factors


# ----------------------------------------------------------------- LightGBM's position GAM


@pytest.mark.parametrize(("reg", "weighted"), [(0.0, False), (0.5, False), (0.0, True)])
def test_lightgbm_mode_grows_lightgbms_position_gam(logged, reg, weighted):
    tr, te, pos, click = logged
    weight = None
    if weighted:
        weight = np.random.default_rng(2).uniform(0.5, 2.0, tr.n_rows)
    obj = LambdaRankObjective(k=10, sigmoid="lightgbm", position_term=True,
                              position_regularization=reg)
    ours = train(tr.X, click, tr.offsets, objective=obj, num_boost_round=15, params=LGB,
                 position=pos, sample_weight=weight, n_jobs=1)
    peer, factors = _lightgbm_gam(
        tr, click, pos, 15, dict(LGB, lambdarank_position_bias_regularization=reg), weight
    )
    # the trees: as the existing fidelity tests compare ltr's LambdaRank with LightGBM's
    np.testing.assert_allclose(ours.predict(te.X), peer.predict(te.X, raw_score=True),
                               rtol=1e-5, atol=1e-6)
    # the offsets: LightGBM logs its factors with 6 significant digits
    offsets = np.asarray(ours.position_term["offsets"])
    assert sorted(factors) == list(range(int(pos.max())))
    expect = np.array([factors[i] for i in range(len(offsets))])
    np.testing.assert_allclose(offsets, expect, rtol=1e-5, atol=1e-6)
    assert ours.position_term["rounds"] == 15 and np.abs(offsets).max() > 0.1
    # and the term changed the model: it is not plain LambdaRank
    plain = train(tr.X, click, tr.offsets, objective=LambdaRankObjective(k=10, sigmoid="lightgbm"),
                  num_boost_round=15, params=LGB, sample_weight=weight, n_jobs=1)
    assert not np.allclose(plain.predict(te.X), ours.predict(te.X))


def test_estimator_position_term_equals_the_objective_through_train(logged):
    tr, te, pos, click = logged
    est = LambdaMARTRanker(n_estimators=6, num_leaves=7, min_child_samples=5, k=10,
                           position_term=True, position_regularization=0.2, random_state=0,
                           n_jobs=1).fit(tr.X, click, qid=tr.qid, position=pos)
    obj = LambdaRankObjective(k=10, position_term=True, position_regularization=0.2,
                              random_state=0)
    ref = train(tr.X, click, tr.offsets, objective=obj, num_boost_round=6, position=pos,
                params={"num_leaves": 7, "min_data_in_leaf": 5}, random_state=0, n_jobs=1)
    np.testing.assert_array_equal(est.predict(te.X), ref.predict(te.X))
    assert est.model_.position_term == ref.position_term
    assert est.model_.position_bias is None  # no pair debiasing asked for
    # prediction scores documents without the offsets: the booster's raw score
    np.testing.assert_array_equal(est.predict(te.X), est.booster_.predict(te.X, raw_score=True))


# ----------------------------------------------------------------- gradients and update rule


def _naive_step(b, grad, hess, pos, reg, rate):
    """The Newton step of LightGBM's position factors, one row at a time."""
    out = []
    for p in range(len(b)):
        d1 = d2 = 0.0
        n = 0
        for i in range(len(grad)):
            if pos[i] == p + 1:
                d1 -= grad[i]
                d2 -= hess[i]
                n += 1
        d1 -= b[p] * reg * n
        d2 -= reg * n
        out.append(b[p] + rate * d1 / (abs(d2) + 0.001))
    return np.array(out)


@pytest.mark.parametrize(
    "extra",
    [{}, {"unbiased": True}, {"sampling": TopKPairSampling(top=3, pairs_per_doc=2)},
     {"schedule": lambda r: 3 + r}],
    ids=["plain", "unbiased", "sampled", "schedule"],
)
def test_gradients_are_plain_lambdarank_at_shifted_scores_and_the_step_is_newtons(
    logged, extra
):
    tr, _, pos, click = logged
    rng = np.random.default_rng(4)
    scores = rng.normal(size=tr.n_rows)
    sw = rng.uniform(0.5, 2.0, tr.n_rows)
    obj = LambdaRankObjective(k=10, random_state=0, position_term=True,
                              position_regularization=0.3, position_learning_rate=0.2, **extra)
    twin = LambdaRankObjective(k=10, random_state=0, **extra)  # the same objective, no term
    debias = {"position": pos} if extra.get("unbiased") else {}
    b = np.zeros(int(pos.max()))
    for it in range(3):
        grad, hess = obj.gradients(scores, click, tr.offsets, it, sample_weight=sw, position=pos,
                                   update_bias=True)
        g0, h0 = twin.gradients(scores + b[pos - 1], click, tr.offsets, it, sample_weight=sw,
                                update_bias=True, **debias)
        np.testing.assert_array_equal(grad, g0)
        np.testing.assert_array_equal(hess, h0)
        b = _naive_step(b, grad, hess, pos, 0.3, 0.2)
        np.testing.assert_allclose(obj.position_offsets_, b, rtol=1e-12, atol=1e-14)
        if extra.get("unbiased"):
            np.testing.assert_array_equal(obj.t_plus_, twin.t_plus_)
    assert obj.position_term_state()["rounds"] == 3


def test_regularization_shrinks_the_offsets_toward_zero(logged):
    tr, _, pos, click = logged
    sizes = []
    for reg in (0.0, 1.0, 10.0):
        obj = LambdaRankObjective(k=10, position_term=True, position_regularization=reg,
                                  position_learning_rate=0.1)
        for it in range(5):
            obj.gradients(np.zeros(tr.n_rows), click, tr.offsets, it, position=pos,
                          update_bias=True)
        sizes.append(float(np.abs(obj.position_offsets_).sum()))
    assert sizes[0] > sizes[1] > sizes[2] > 0.0


# ----------------------------------------------------------------- engines, state and resume


@pytest.mark.parametrize("engine", ["lightgbm", "xgboost"])
@pytest.mark.parametrize("unbiased", [False, True])
def test_position_term_run_resumed_after_a_lost_stage_is_identical(logged, tmp_path, engine,
                                                                   unbiased):
    if engine == "xgboost":
        pytest.importorskip("xgboost")
    tr, te, pos, click = logged

    def obj():
        return LambdaRankObjective(position_term=True, position_regularization=0.1,
                                   unbiased=unbiased)

    kw = dict(engine=engine, schedule=[(5, 4), (10, 4), (20, 4)], n_jobs=1, position=pos)
    full = train(tr.X, click, tr.offsets, objective=obj(), stage_dir=tmp_path, **kw)
    stages = json.loads((tmp_path / "stages.json").read_text())
    assert all(s["position_term"]["rounds"] == s["first_round"] + s["n_rounds"]
               for s in stages["stages"])
    assert all(("bias_state" in s) is unbiased for s in stages["stages"])
    stages["stages"] = stages["stages"][:1]  # as if the run died in stage 2
    (tmp_path / "stages.json").write_text(json.dumps(stages))
    resumed = train(tr.X, click, tr.offsets, objective=obj(), stage_dir=tmp_path, resume=True,
                    **kw)
    np.testing.assert_array_equal(full.predict(te.X), resumed.predict(te.X))
    assert full.position_term == resumed.position_term
    assert full.position_bias == resumed.position_bias
    once = train(tr.X, click, tr.offsets, objective=obj(), **kw)  # one engine call
    np.testing.assert_array_equal(full.predict(te.X), once.predict(te.X))
    assert once.position_term == full.position_term


def test_resume_without_saved_offsets_is_refused(logged, tmp_path):
    tr, _, pos, click = logged
    kw = dict(schedule=[(5, 2), (10, 2)], n_jobs=1, position=pos, stage_dir=tmp_path)
    train(tr.X, click, tr.offsets, objective=LambdaRankObjective(position_term=True), **kw)
    stages = json.loads((tmp_path / "stages.json").read_text())
    stages["stages"] = stages["stages"][:1]
    del stages["stages"][0]["position_term"]
    (tmp_path / "stages.json").write_text(json.dumps(stages))
    with pytest.raises(ValueError, match="no position-term offsets"):
        train(tr.X, click, tr.offsets, objective=LambdaRankObjective(position_term=True),
              resume=True, **kw)


def test_xgboost_through_train_equals_the_objective_handed_to_xgboost(logged):
    xgb = pytest.importorskip("xgboost")
    tr, te, pos, click = logged
    params = {"tree_method": "hist", "max_depth": 3, "learning_rate": 0.3, "seed": 0,
              "nthread": 1, "base_score": 0.0, "disable_default_eval_metric": 1}
    model = train(tr.X, click, tr.offsets, engine="xgboost", num_boost_round=6, position=pos,
                  objective=LambdaRankObjective(k=10, position_term=True), params=params,
                  n_jobs=1)
    own = LambdaRankObjective(k=10, position_term=True, position_learning_rate=0.3,
                              position=pos)
    qid = np.repeat(np.arange(tr.n_queries), np.diff(tr.offsets))
    direct = xgb.train(params, xgb.DMatrix(tr.X, label=click, qid=qid), 6, obj=own)
    np.testing.assert_array_equal(model.predict(te.X),
                                  direct.inplace_predict(te.X, predict_type="margin"))
    np.testing.assert_array_equal(model.position_term["offsets"], own.position_offsets_)
    assert model.position_term["learning_rate"] == 0.3


def test_training_leaves_the_callers_objective_alone_and_the_model_round_trips(logged, tmp_path):
    tr, _, pos, click = logged
    obj = LambdaRankObjective(position_term=True)
    model = train(tr.X, click, tr.offsets, objective=obj, num_boost_round=3, position=pos,
                  n_jobs=1)
    assert obj.position_offsets_ is None and obj.position_learning_rate is None
    assert model.position_term["learning_rate"] == 0.1  # the booster's
    model.save(tmp_path / "m.json")
    assert RankingModel.load(tmp_path / "m.json").position_term == model.position_term
    state = json.loads(json.dumps(model.position_term))
    fresh = LambdaRankObjective(position_term=True)
    fresh.set_position_term_state(state)
    back = fresh.position_term_state()
    assert back["offsets"] == state["offsets"] and back["rounds"] == 3
    assert back["learning_rate"] is None  # the training sets it from the booster's params
    assert uses_position(fresh) and not uses_position(LambdaRankObjective())


# ----------------------------------------------------------------- refusals


@pytest.mark.parametrize(
    ("kwargs", "error", "match"),
    [
        ({"position_term": 1}, TypeError, r"position_term must be a bool, got 1"),
        ({"position_term": True, "position_regularization": -1.0}, ValueError,
         r"position_regularization"),
        ({"position_regularization": 0.5}, ValueError,
         r"position_regularization=0.5 only applies with position_term=True"),
        ({"position_term": True, "position_learning_rate": 0.0}, ValueError,
         r"position_learning_rate"),
    ],
)
def test_objective_refuses_bad_position_term_arguments(kwargs, error, match):
    with pytest.raises(error, match=match):
        LambdaRankObjective(**kwargs)


def test_objective_names_what_the_term_is_missing(logged):
    tr, _, pos, click = logged
    obj = LambdaRankObjective(position_term=True)
    with pytest.raises(ValueError, match=r"position is required: .*position_term=True"):
        obj.gradients(np.zeros(tr.n_rows), click, tr.offsets)
    with pytest.raises(ValueError, match=r"position_learning_rate is unknown"):
        obj.gradients(np.zeros(tr.n_rows), click, tr.offsets, position=pos, update_bias=True)
    bad = LambdaRankObjective(position_term=True, position_learning_rate=0.1)
    bad.set_position_term_state({"offsets": [0.0, 1.0], "regularization": 0.0, "rounds": 1})
    with pytest.raises(ValueError, match=r"offsets have 2 entries .* deepest position is"):
        bad.gradients(np.zeros(tr.n_rows), click, tr.offsets, position=pos)
    with pytest.raises(ValueError, match=r"state\['regularization'\] is 1.0"):
        bad.set_position_term_state({"offsets": [], "regularization": 1.0, "rounds": 0})
    with pytest.raises(ValueError, match=r"position_term_state\(\) needs"):
        LambdaRankObjective().position_term_state()


@pytest.mark.parametrize(
    ("params", "fit_position", "match"),
    [
        ({"position_term": True}, False, r"position_term=True needs the display position"),
        ({"position_term": True, "objective": "native"}, True,
         r"objective='native' cannot use position_term"),
        ({"position_regularization": 1.0}, True,
         r"position_regularization=1.0 only applies with position_term=True"),
        ({"position_term": True, "objectives": {"a": 1.0}}, True,
         r"position_term=True is not supported with objectives"),
        ({"position_regularization": -1.0}, True, r"position_regularization"),
    ],
)
def test_estimator_refuses_inconsistent_position_term_settings(logged, params, fit_position,
                                                                match):
    tr, _, pos, click = logged
    with pytest.raises(ValueError, match=match):
        LambdaMARTRanker(n_estimators=2, **params).fit(
            tr.X, click, qid=tr.qid, position=pos if fit_position else None
        )


# ----------------------------------------------------------------- config


def test_config_trains_a_position_term_from_yaml(logged, tmp_path, capsys):
    import pandas as pd

    from ltr.cli import main

    tr, _, pos, click = logged
    df = pd.DataFrame(tr.X[:, :20], columns=[f"f{j}" for j in range(20)])
    df.insert(0, "qid", tr.qid)
    df.insert(1, "grade", tr.y)
    df.insert(2, "shown_at", pos)
    df.insert(3, "clicked", click.astype(int))
    df.to_csv(tmp_path / "clicks.csv", index=False)
    cfg = {
        "seed": 0,
        "data": {"source": "csv", "train": str(tmp_path / "clicks.csv"), "label": "grade",
                 "qid": "qid", "position": "shown_at", "click": "clicked",
                 "split": {"valid": 0.2, "test": 0.2}},
        "model": {"num_leaves": 7, "min_child_samples": 5, "n_jobs": 1, "n_estimators": 5,
                  "position_term": True, "position_regularization": 0.25},
        "importance": {"enabled": False},
        "output": {"runs_dir": str(tmp_path / "runs")},
    }
    path = tmp_path / "term.yaml"
    path.write_text(yaml.safe_dump(cfg, sort_keys=False))
    assert main(["train", str(path), "--out", str(tmp_path / "run")]) == 0
    model = RankingModel.load(tmp_path / "run" / "model.json")
    term = model.position_term
    assert term["regularization"] == 0.25 and term["rounds"] == 5
    assert all(math.isfinite(v) for v in term["offsets"])
    metrics = json.loads((tmp_path / "run" / "metrics.json").read_text())
    assert metrics["position_bias"]["position_term"] == term
    header = (tmp_path / "run" / "propensity.csv").read_text().splitlines()[0]
    assert header.startswith("position,position term exp(b - b[1]),impressions")
    cfg["data"]["position"] = None
    path.write_text(yaml.safe_dump(cfg, sort_keys=False))
    assert main(["validate", str(path)]) == 1
    assert "model.position_term: true needs data.position" in capsys.readouterr().err


@pytest.mark.parametrize("n", [0, 1, 7, 50_000])
def test_offset_kernels_equal_the_numpy_expressions_bit_for_bit(n):
    """The shift and the per-position sums: one numba pass each, the numpy arithmetic exactly."""
    from ltr.kernels._offsets import shifted_scores, slot_sums

    rng = np.random.default_rng(n)
    slot = rng.integers(0, 37, n)  # slots 37..39 stay empty
    grad, hess = rng.normal(size=n) * 1e3, rng.random(n)
    offsets, scores = rng.normal(size=40), rng.normal(size=n)
    sum_g, sum_h, count = slot_sums(slot, grad, hess, 40)
    assert sum_g.tobytes() == np.bincount(slot, weights=grad, minlength=40).tobytes()
    assert sum_h.tobytes() == np.bincount(slot, weights=hess, minlength=40).tobytes()
    assert count.tobytes() == np.bincount(slot, minlength=40).astype(np.float64).tobytes()
    out = np.empty(n)
    assert shifted_scores(scores, offsets, slot, out) is out
    assert out.tobytes() == (scores + offsets[slot]).tobytes()

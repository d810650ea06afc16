"""Position-debiased LambdaRank: Unbiased LambdaMART (learned t+/t-) and IPS-weighted pairs.

Gradients and the t+/t- update against naive O(n^2) references, identity with
the plain objective, pair sampling, real training on both engines with
simulated position-based clicks, resume identity, and the error paths.
"""

from __future__ import annotations

import itertools
import json

import lightgbm as lgb
import numpy as np
import pytest

from ltr.metrics import ndcg
from ltr.objectives import CompositeLambdaRankObjective, LambdaRankObjective
from ltr.objectives.sampling import TopKPairSampling
from ltr.testing import deterministic_params
from ltr.testing import random_scored_queries as random_queries
from ltr.testing.references import naive_position_bias_update, naive_unbiased_lambdarank


def _positions(rng, offsets):
    return np.concatenate([rng.permutation(int(n)) + 1 for n in np.diff(offsets)])


def _state(obj, t_plus, t_minus):
    state = obj.bias_state()
    state["t_plus"] = list(map(float, t_plus))
    state["t_minus"] = list(map(float, t_minus))
    obj.set_bias_state(state)


T_STATES = {
    "ones": lambda m, rng: (np.ones(m), np.ones(m)),
    "random": lambda m, rng: (rng.uniform(0.2, 2.0, m), rng.uniform(0.2, 2.0, m)),
    "decreasing": lambda m, rng: (1.0 / np.arange(1, m + 1), np.linspace(1.0, 3.0, m)),
}


@pytest.mark.parametrize("bias_cost", ["reversed_pair_loss", "pair_loss"])
@pytest.mark.parametrize("t_state", sorted(T_STATES))
@pytest.mark.parametrize(
    "options",
    [
        {"k": 5},
        {"k": 8, "sigma": 2.0, "norm": False},
        {"k": 6, "top": 3, "head_weight": 2.5},
        {"schedule": True},
        {"k": 7, "sigmoid": "lightgbm"},
        {"k": 30, "gain": "linear", "bias_norm": 0.5},
    ],
    ids=["k5", "sigma-nonorm", "head-weight", "schedule", "lightgbm-sigmoid", "all-k-linear"],
)
def test_gradients_and_bias_update_match_naive_reference(options, t_state, bias_cost):
    options = dict(options)
    rng = np.random.default_rng(5)
    scores, labels, offsets = random_queries(rng, 40, 18)
    position = _positions(rng, offsets)
    max_position = 6  # queries reach 18 rows: deeper positions share the last slot
    t_plus, t_minus = T_STATES[t_state](max_position, rng)
    top = options.pop("top", 0)
    head_weight = options.pop("head_weight", 1.0)
    schedule = options.pop("schedule", False)
    ks = [3, 9, 4]
    iteration = 2 if schedule else None
    obj = LambdaRankObjective(
        sampling=TopKPairSampling(top=top, head_weight=head_weight) if top else None,
        schedule=(lambda it: ks[it % 3]) if schedule else None,
        unbiased=True, max_position=max_position, bias_cost=bias_cost, **options,
    )
    _state(obj, t_plus, t_minus)
    grad, hess = obj.gradients(scores, labels, offsets, iteration, position=position,
                               update_bias=True)
    ref_opts = {key: options[key] for key in ("sigma", "norm", "gain") if key in options}
    k = ks[2] if schedule else options["k"]
    ref_g, ref_h, li, lj = naive_unbiased_lambdarank(
        scores, labels, offsets, position, t_plus, t_minus, k=k, top=top,
        head_weight=head_weight, bias_cost=bias_cost, **ref_opts,
    )
    if options.get("sigmoid") == "lightgbm":  # lookup-table sigmoid, float32 sums
        np.testing.assert_allclose(grad, ref_g, rtol=1e-3, atol=1e-6)
        np.testing.assert_allclose(hess, ref_h, rtol=1e-3, atol=1e-6)
    else:
        np.testing.assert_allclose(grad, ref_g, rtol=1e-11, atol=1e-13)
        np.testing.assert_allclose(hess, ref_h, rtol=1e-11, atol=1e-13)
    exp_p, exp_m = naive_position_bias_update(li, lj, t_plus, t_minus,
                                              options.get("bias_norm", 1.0))
    np.testing.assert_allclose(obj.t_plus_, exp_p, rtol=1e-11)
    np.testing.assert_allclose(obj.t_minus_, exp_m, rtol=1e-11)
    assert obj.t_plus_[0] == 1.0 and obj.t_minus_[0] == 1.0
    assert obj.iteration == 0


def test_identity_positions_and_unit_biases_give_the_plain_gradients():
    rng = np.random.default_rng(1)
    scores, labels, offsets = random_queries(rng, 30, 25)
    identity = np.concatenate([np.arange(1, n + 1) for n in np.diff(offsets)])
    for sigmoid in ("exact", "lightgbm"):
        for sampling in (None, TopKPairSampling(top=4, head_weight=2.0),
                         TopKPairSampling(top=5, head_weight=3.0, pairs_per_doc=3,
                                          random_state=4)):
            plain = LambdaRankObjective(k=8, sigmoid=sigmoid, sampling=sampling)
            ub = LambdaRankObjective(k=8, sigmoid=sigmoid, sampling=sampling, unbiased=True)
            g0, h0 = plain.gradients(scores, labels, offsets, 3)
            g1, h1 = ub.gradients(scores, labels, offsets, 3, position=identity)
            if sigmoid == "lightgbm":  # same operations in the same order
                assert np.array_equal(g0, g1) and np.array_equal(h0, h1)
            else:  # the plain exact path forms exp(s_a - s_b) as E_a / E_b
                np.testing.assert_allclose(g1, g0, rtol=1e-12, atol=1e-15)
                np.testing.assert_allclose(h1, h0, rtol=1e-12, atol=1e-15)


def test_sampled_pairs_average_to_the_debiased_all_pairs_gradient():
    rng = np.random.default_rng(2)
    scores, labels, offsets = random_queries(rng, 6, 12)
    position = _positions(rng, offsets)
    t_plus, t_minus = rng.uniform(0.3, 1.5, 12), rng.uniform(0.5, 2.0, 12)
    opts = {"k": 5, "norm": False, "max_position": 12, "unbiased": True}
    full = LambdaRankObjective(sampling=TopKPairSampling(top=2, head_weight=2.0), **opts)
    _state(full, t_plus, t_minus)
    g_full, h_full = full.gradients(scores, labels, offsets, position=position)
    sampled = LambdaRankObjective(
        sampling=TopKPairSampling(top=2, head_weight=2.0, pairs_per_doc=4, random_state=0),
        **opts)
    _state(sampled, t_plus, t_minus)
    rounds = 3000
    g_sum = np.zeros_like(g_full)
    h_sum = np.zeros_like(h_full)
    for it in range(rounds):
        g, h = sampled.gradients(scores, labels, offsets, it, position=position)
        g_sum += g
        h_sum += h
    scale = np.abs(g_full).max()
    # Monte-Carlo error of 3000 rounds: a few percent of the largest gradient
    np.testing.assert_allclose(g_sum / rounds, g_full, atol=0.03 * scale)
    np.testing.assert_allclose(h_sum / rounds, h_full, atol=0.03 * np.abs(h_full).max())


def test_known_propensities_weight_pairs_by_the_clicked_position_and_stay_fixed():
    rng = np.random.default_rng(3)
    scores, labels, offsets = random_queries(rng, 25, 15)
    position = _positions(rng, offsets)
    prop = np.array([1.0, 0.6, 0.4, 0.2, 0.05])
    obj = LambdaRankObjective(k=6, propensity=prop, propensity_clip=0.1, unbiased=True)
    grad, hess = obj.gradients(scores, labels, offsets, position=position, update_bias=True)
    clipped = np.maximum(prop, 0.1)
    ref_g, ref_h, _, _ = naive_unbiased_lambdarank(scores, labels, offsets, position, clipped,
                                                   np.ones(5), k=6)
    np.testing.assert_allclose(grad, ref_g, rtol=1e-11, atol=1e-13)
    np.testing.assert_allclose(hess, ref_h, rtol=1e-11, atol=1e-13)
    assert obj.t_plus_.tolist() == clipped.tolist() and obj.t_minus_.tolist() == [1.0] * 5
    assert obj.bias_state()["mode"] == "propensity"


@pytest.mark.parametrize(
    "options",
    [{}, {"sigmoid": "lightgbm"},
     {"sampling": TopKPairSampling(top=3, head_weight=2.0, pairs_per_doc=4, random_state=1)},
     {"inf": True}],
    ids=["exact", "lightgbm-sigmoid", "sampled", "minus-inf"],
)
def test_known_propensities_skip_the_costs_but_weight_pairs_as_learned_tables_do(options):
    # Known propensities compute no pair costs (nothing is learned from them); their gradients
    # are those of learned tables holding the same values (which do compute the costs), on
    # every kernel path: rank-order exact, lookup table, sampled, -inf scores (general path).
    options = dict(options)
    rng = np.random.default_rng(5)
    scores, labels, offsets = random_queries(rng, 30, 14)
    if options.pop("inf", False):
        scores[::7] = -np.inf
    position = _positions(rng, offsets)
    prop = np.array([1.0, 0.7, 0.5, 0.3, 0.2, 0.1])
    known = LambdaRankObjective(k=6, propensity=prop, **options)
    learned = LambdaRankObjective(k=6, unbiased=True, max_position=6, **options)
    _state(learned, prop, np.ones(6))
    for it in (0, 1):
        g1, h1 = known.gradients(scores, labels, offsets, it, position=position)
        g2, h2 = learned.gradients(scores, labels, offsets, it, position=position)
        assert np.array_equal(g1, g2) and np.array_equal(h1, h2)
        assert np.any(g1 != 0.0)


def test_sample_weights_multiply_debiased_gradients():
    rng = np.random.default_rng(4)
    scores, labels, offsets = random_queries(rng, 10, 10)
    position = _positions(rng, offsets)
    w = rng.uniform(0.5, 2.0, len(scores))
    obj = LambdaRankObjective(k=5, unbiased=True, max_position=4)
    _state(obj, [1.0, 0.5, 0.3, 0.2], [1.0, 1.5, 2.0, 2.0])
    g0, h0 = obj.gradients(scores, labels, offsets, position=position)
    g1, h1 = obj.gradients(scores, labels, offsets, position=position, sample_weight=w)
    np.testing.assert_allclose(g1, g0 * w, rtol=1e-15)
    np.testing.assert_allclose(h1, h0 * w, rtol=1e-15)


def test_unvisited_positions_keep_their_bias_and_position_one_stays_one():
    scores = np.array([0.0, 0.0, 0.0])
    obj = LambdaRankObjective(k=10, unbiased=True, max_position=4)
    _state(obj, [1.0, 0.7, 0.5, 0.25], [1.0, 1.2, 1.3, 1.4])
    # only the document at position 3 is relevant: li sits at slot 2, lj at slots 0 and 1
    obj.gradients(scores, np.array([0.0, 1.0, 0.0]), np.array([0, 3]), position=[1, 3, 2],
                  update_bias=True)
    assert obj.t_plus_.tolist() == [1.0, 0.7, 0.5, 0.25]  # li[0] == 0: no estimate
    assert obj.t_minus_[0] == 1.0 and obj.t_minus_[2:].tolist() == [1.3, 1.4]


# ------------------------------------------------------------------ real training


def _pbm_clicks(folder, sessions, seed):
    """Position-based clicks: a noisy logger orders each session, examination (1/rank)^1."""
    from ltr.datasets import load_letor

    train = load_letor(folder / "rank.train", n_features=300)
    test = load_letor(folder / "rank.test", n_features=300)
    rng = np.random.default_rng(seed)
    click_prob = np.array([0.05, 0.3, 0.6, 0.9, 1.0])  # by grade 0..4
    xs, ys, clicks, sizes = [], [], [], []
    for q in range(len(train.offsets) - 1):
        a, b = int(train.offsets[q]), int(train.offsets[q + 1])
        for _ in range(sessions):
            order = np.argsort(-(train.y[a:b] + rng.normal(scale=2.0, size=b - a)), kind="stable")
            y = train.y[a:b][order]
            examined = rng.random(b - a) < 1.0 / np.arange(1, b - a + 1)
            clicks.append((examined & (rng.random(b - a) < click_prob[y.astype(int)])) * 1.0)
            xs.append(train.X[a:b][order])
            ys.append(y)
            sizes.append(b - a)
    sizes = np.array(sizes)
    position = np.concatenate([np.arange(1, n + 1) for n in sizes])
    return np.vstack(xs), np.concatenate(clicks), sizes, position, test


@pytest.fixture(scope="module")
def pbm(letor_slice_dir):
    return _pbm_clicks(letor_slice_dir, sessions=30, seed=0)


@pytest.mark.parametrize("engine", ["lightgbm", "xgboost"])
def test_training_on_clicks_learns_bias_that_falls_like_the_examination(engine, pbm,
                                                                        record_property):
    X, clicks, sizes, position, test = pbm
    obj = LambdaRankObjective(k=10, unbiased=True, position=position, max_position=10)
    if engine == "lightgbm":
        params = {"num_leaves": 15, "learning_rate": 0.1, "min_data_in_leaf": 20,
                  "verbose": -1, "num_threads": 2,
                  # a function: lightgbm.train does not deep-copy it, so obj learns the biases
                  "objective": lambda preds, data: obj(preds, data)}
        booster = lgb.train(params, lgb.Dataset(X, clicks, group=sizes), num_boost_round=30)
        pred = booster.predict(test.X)
    else:
        xgb = pytest.importorskip("xgboost")
        booster = xgb.train({"max_depth": 4, "eta": 0.1, "nthread": 2, "tree_method": "hist"},
                            xgb.DMatrix(X, clicks, group=sizes), 30, obj=obj)
        pred = booster.predict(xgb.DMatrix(test.X))
    assert obj.iteration == 30 and obj.bias_state()["rounds"] == 30
    t = obj.t_plus_
    # bias_norm=1: t+ ** 2 estimates the examination ratio 1/p.  Measured with
    # LightGBM over simulation seeds 0, 1, 2: 0.44-0.85 of 1/p at positions 2..6
    # (the estimate runs low: deeper pairs carry less |delta nDCG|); tolerance:
    # within a factor 2.5 either way.
    p = np.arange(2, 7)
    ratio = t[1:6] ** 2 * p
    assert np.all(ratio > 0.4) and np.all(ratio < 2.5), ratio
    assert np.all(np.diff(t[:5]) < 0), t  # falls over the first five positions
    assert np.all(np.isfinite(obj.t_minus_)) and obj.t_minus_[0] == 1.0
    value = ndcg(test.y, pred, group=np.diff(test.offsets), k=10)
    record_property(f"ndcg@10_true_labels_{engine}", float(value))
    assert 0.0 < value <= 1.0


@pytest.mark.parametrize("engine", ["lightgbm", "xgboost"])
def test_resume_from_bias_state_gives_the_identical_model(engine, pbm):
    X, clicks, sizes, position, _ = pbm
    n_rows = 3000  # the first queries: enough rows, quick
    cut = int(np.searchsorted(np.cumsum(sizes), n_rows)) + 1
    sizes = sizes[:cut]
    n = int(sizes.sum())
    X, clicks, position = X[:n], clicks[:n], position[:n]
    total, first = 12, 5
    sampling = TopKPairSampling(top=3, head_weight=2.0, pairs_per_doc=4, random_state=1)

    def objective():
        return LambdaRankObjective(schedule=lambda it: 3 if it < 7 else 10, sampling=sampling,
                                   unbiased=True, position=position, max_position=8)

    if engine == "lightgbm":
        params = dict(deterministic_params("lightgbm", seed=1), num_leaves=7, verbose=-1)

        def train(obj, rounds, init=None):
            ds = lgb.Dataset(X, clicks, group=sizes, free_raw_data=False)
            # a function: lightgbm.train does not deep-copy it, so obj holds the state
            return lgb.train(dict(params, objective=lambda p, d: obj(p, d)), ds,
                             num_boost_round=rounds, init_model=init)

        def predict(model):
            return model.predict(X, raw_score=True)
    else:
        xgb = pytest.importorskip("xgboost")
        params = dict(deterministic_params("xgboost", seed=1), max_depth=3)

        def train(obj, rounds, init=None):
            return xgb.train(params, xgb.DMatrix(X, clicks, group=sizes), rounds, obj=obj,
                             xgb_model=init)

        def predict(model):
            return model.predict(xgb.DMatrix(X), output_margin=True)

    whole = objective()
    model_whole = train(whole, total)
    part = objective()
    model_part = train(part, first)
    state = json.loads(json.dumps(part.bias_state()))  # as a checkpoint stores it
    fresh = objective()
    fresh.set_bias_state(state)
    fresh.reset(first)
    model_rest = train(fresh, total - first, init=model_part)
    assert np.array_equal(predict(model_rest), predict(model_whole))
    assert not np.array_equal(state["t_plus"], np.ones(8))  # the state carries something
    forgetful = objective()  # restarted biases instead of the saved ones: another model
    forgetful.reset(first)
    assert not np.array_equal(predict(train(forgetful, total - first, init=model_part)),
                              predict(model_whole))
    assert fresh.t_plus_.tolist() == whole.t_plus_.tolist()
    assert fresh.t_minus_.tolist() == whole.t_minus_.tolist()
    assert fresh.bias_state() == whole.bias_state()


# ------------------------------------------------------------------ errors


def test_debiasing_without_positions_says_where_to_pass_them():
    scores, labels, offsets = np.zeros(3), np.array([0.0, 1.0, 2.0]), np.array([0, 3])
    for obj in (LambdaRankObjective(unbiased=True), LambdaRankObjective(propensity=[1.0, 0.5])):
        with pytest.raises(ValueError, match=r"position is required.*LambdaRankObjective\(\.\.\., "
                                             r"position=\.\.\.\).*fit\(X, y, qid=\.\.\., position"):
            obj.gradients(scores, labels, offsets)
    ds = lgb.Dataset(np.arange(6.0).reshape(3, 2), labels, group=[3])
    params = {"min_data_in_leaf": 1, "min_data_in_bin": 1, "verbose": -1}
    with pytest.raises(ValueError, match="position is required"):
        lgb.train(dict(params, objective=LambdaRankObjective(unbiased=True)), ds, 1)


def test_positions_for_an_objective_that_cannot_use_them_name_the_choice():
    with pytest.raises(ValueError, match=r"unbiased=True .* propensity=\[\.\.\.\]"):
        LambdaRankObjective(position=[1, 2, 3])
    with pytest.raises(ValueError, match=r"set unbiased=True"):
        LambdaRankObjective().gradients(np.zeros(2), [0, 1], [0, 2], position=[1, 2])
    with pytest.raises(ValueError, match=r"CompositeLambdaRankObjective does not debias.*"
                                         r"LambdaRankObjective\(unbiased=True"):
        CompositeLambdaRankObjective({"a": 1.0}, {"a": [0, 1]}, unbiased=True)


@pytest.mark.parametrize(
    ("make", "match"),
    [
        (lambda: LambdaRankObjective(unbiased=1), r"unbiased must be a bool"),
        (lambda: LambdaRankObjective(unbiased=True, bias_norm=-1.0), r"bias_norm must be >= 0"),
        (lambda: LambdaRankObjective(unbiased=True, max_position=0), r"max_position must be >= 1"),
        (lambda: LambdaRankObjective(unbiased=True, bias_cost="ranknet"),
         r"bias_cost must be one of \['reversed_pair_loss', 'pair_loss'\].*got 'ranknet'"),
        (lambda: LambdaRankObjective(propensity=[1.0, 0.0]),
         r"propensity must lie in \(0, 1\].*propensity\[1\] \(position 2\) = 0.0"),
        (lambda: LambdaRankObjective(propensity=[1.2]), r"propensity must lie in \(0, 1\]"),
        (lambda: LambdaRankObjective(unbiased=True, propensity_clip=0.1),
         r"propensity_clip=0.1 is given without propensity"),
        (lambda: LambdaRankObjective(propensity=[1.0], propensity_clip=0.0),
         r"propensity_clip must be > 0"),
    ],
)
def test_bad_debiasing_settings_are_rejected_with_informative_errors(make, match):
    with pytest.raises((TypeError, ValueError), match=match):
        make()


def test_bad_positions_name_the_first_bad_row():
    obj = LambdaRankObjective(unbiased=True)
    scores, labels, offsets = np.zeros(4), np.array([0.0, 1.0, 2.0, 1.0]), np.array([0, 2, 4])
    with pytest.raises(ValueError, match=r"query 1 \(rows 2..3\) gives position 1 to rows 2 and 3"):
        obj.gradients(scores, labels, offsets, position=[1, 2, 1, 1])
    with pytest.raises(ValueError, match=r"position\[0\] = 0"):
        obj.gradients(scores, labels, offsets, position=[0, 1, 1, 2])
    with pytest.raises(ValueError, match=r"position has 3 rows but there are 4"):
        obj.gradients(scores, labels, offsets, position=[1, 2, 1])


def test_bias_state_round_trips_and_rejects_mismatches():
    obj = LambdaRankObjective(unbiased=True, max_position=3, bias_norm=0.5)
    state = obj.bias_state()
    assert state == {"mode": "learned", "t_plus": [1.0] * 3, "t_minus": [1.0] * 3,
                     "bias_norm": 0.5, "bias_cost": "reversed_pair_loss", "max_position": 3,
                     "rounds": 0}
    json.dumps(state)
    with pytest.raises(ValueError, match=r"state\['bias_norm'\] is 0.5 but the objective has 1.0"):
        LambdaRankObjective(unbiased=True, max_position=3).set_bias_state(state)
    with pytest.raises(ValueError, match=r"state\['bias_cost'\] is 'reversed_pair_loss' but the "
                                         r"objective has 'pair_loss'.*bias_cost='reversed_pair"):
        LambdaRankObjective(unbiased=True, max_position=3, bias_norm=0.5,
                            bias_cost="pair_loss").set_bias_state(state)
    with pytest.raises(ValueError, match=r"state\['max_position'\] is 3 but the objective has 4"):
        LambdaRankObjective(unbiased=True, max_position=4, bias_norm=0.5).set_bias_state(state)
    with pytest.raises(ValueError, match=r"state\['mode'\] is 'learned'"):
        LambdaRankObjective(propensity=[1.0, 0.5, 0.2], bias_norm=0.5).set_bias_state(state)
    with pytest.raises(ValueError, match=r"state\['t_plus'\] must be finite and > 0; entry 1"):
        obj.set_bias_state(dict(state, t_plus=[1.0, 0.0, 1.0]))
    with pytest.raises(ValueError, match=r"state has no 'rounds'"):
        obj.set_bias_state({k: v for k, v in state.items() if k != "rounds"})
    with pytest.raises(ValueError, match=r"bias_state\(\) needs a debiasing objective"):
        LambdaRankObjective().bias_state()


def test_reset_to_zero_restarts_learned_biases_and_a_later_round_keeps_them():
    rng = np.random.default_rng(6)
    scores, labels, offsets = random_queries(rng, 10, 8)
    position = _positions(rng, offsets)
    obj = LambdaRankObjective(k=5, unbiased=True, max_position=4)
    obj.gradients(scores, labels, offsets, position=position, update_bias=True)
    learned = obj.t_plus_.copy()
    assert not np.array_equal(learned, np.ones(4))
    obj.reset(3)
    assert np.array_equal(obj.t_plus_, learned)
    obj.reset(0)
    assert np.array_equal(obj.t_plus_, np.ones(4)) and obj.bias_state()["rounds"] == 0


def test_series_logarithm_of_the_pair_costs_matches_log1p():
    # the vectorised pair-cost pass takes log(1 + z), 0 <= z <= 1, from a series, not libm
    from numba import njit

    from ltr.kernels._debiased import _log1p_unit

    z = np.concatenate([[0.0, 5e-324, 1e-300, 1e-17, 1e-9, 0.414, 0.4142135623730951, 0.42,
                         1.0, 1.0 + 2**-52],
                        np.geomspace(1e-12, 1.0, 2000),
                        np.random.default_rng(0).uniform(0.0, 1.0, 2000)])
    got = njit(lambda v: np.array([_log1p_unit(x) for x in v]))(z)
    np.testing.assert_allclose(got, np.log1p(z), rtol=2e-15, atol=1e-300)  # 5e-324 -> 0


@pytest.mark.parametrize("bias_cost", ["reversed_pair_loss", "pair_loss"])
def test_pair_costs_match_the_naive_reference_at_wide_score_ranges(bias_cost):
    # sigma (s_max - s_min) up to ~590: the pair costs' logarithm is taken of exp(-|x|)
    # formed from per-document exponentials, plus max(+-x, 0)
    rng = np.random.default_rng(8)
    scores, labels, offsets = random_queries(rng, 12, 16)
    scores = scores * 80.0
    span = [np.ptp(scores[a:b]) for a, b in itertools.pairwise(offsets)]
    assert 100.0 < max(span) < 600.0
    position = _positions(rng, offsets)
    t_plus, t_minus = rng.uniform(0.3, 1.5, 6), rng.uniform(0.5, 2.0, 6)
    obj = LambdaRankObjective(k=6, unbiased=True, max_position=6, bias_cost=bias_cost)
    _state(obj, t_plus, t_minus)
    grad, hess = obj.gradients(scores, labels, offsets, position=position, update_bias=True)
    ref_g, ref_h, li, lj = naive_unbiased_lambdarank(scores, labels, offsets, position, t_plus,
                                                     t_minus, k=6, bias_cost=bias_cost)
    np.testing.assert_allclose(grad, ref_g, rtol=1e-11, atol=1e-13)
    np.testing.assert_allclose(hess, ref_h, rtol=1e-11, atol=1e-13)
    exp_p, exp_m = naive_position_bias_update(li, lj, t_plus, t_minus, 1.0)
    np.testing.assert_allclose(obj.t_plus_, exp_p, rtol=1e-11)
    np.testing.assert_allclose(obj.t_minus_, exp_m, rtol=1e-11)

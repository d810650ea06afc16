"""One rule per input kind, applied everywhere: offsets, gain specs and seeds."""

from __future__ import annotations

import numpy as np
import pytest

from ltr._validation import check_cutoffs, check_eval_at
from ltr.inspection._permutation import _check_random_state
from ltr.metrics import dcg, ndcg
from ltr.metrics.composite import composite_ndcg, ndcg_by_segment
from ltr.metrics.gains import parse_gain
from ltr.objectives import LambdaRankObjective
from ltr.objectives.sampling import TopKPairSampling

Y = np.array([0.0, 1.0, 2.0, 1.0, 0.0, 3.0])
S = np.array([0.3, 0.1, 0.9, 0.4, 0.2, 0.8])

BAD_OFFSETS = [
    (np.array([0, 4, 2, 6]), r"offsets must be strictly increasing"),  # non-monotone
    (np.array([0, 3, 3, 6]), r"offsets must be strictly increasing"),  # an empty query
    (np.array([1, 3, 6]), r"offsets\[0\] must be 0"),
    (np.array([0, 3, 5]), r"offsets\[-1\] = 5 but there are 6 rows"),
]


@pytest.mark.parametrize("offsets, match", BAD_OFFSETS)
def test_ndcg_offsets_fast_path_applies_the_offsets_rule(offsets, match):
    with pytest.raises(ValueError, match=match):
        ndcg(Y, S, offsets=offsets)
    with pytest.raises(ValueError, match=match):
        dcg(Y, S, offsets=offsets, k=None)


@pytest.mark.parametrize("offsets, match", BAD_OFFSETS)
def test_composite_and_segment_functions_apply_the_offsets_rule(offsets, match):
    with pytest.raises(ValueError, match=match):
        composite_ndcg({"a": Y, "b": Y[::-1]}, S, weights={"a": 1.0, "b": 1.0}, offsets=offsets)
    with pytest.raises(ValueError, match=match):
        ndcg_by_segment(Y, S, segments=np.zeros(6), offsets=offsets)


@pytest.mark.parametrize("offsets, match", BAD_OFFSETS)
def test_objective_applies_the_offsets_rule(offsets, match):
    with pytest.raises(ValueError, match=match):
        LambdaRankObjective(k=3).gradients(S, Y, offsets)


def test_valid_offsets_give_the_same_values_as_groups():
    offsets = np.array([0, 2, 6])
    assert ndcg(Y, S, offsets=offsets) == ndcg(Y, S, group=[2, 4])
    assert ndcg(Y, S, offsets=offsets.astype(np.int32), reduce=None).tolist() == ndcg(
        Y, S, group=[2, 4], reduce=None
    ).tolist()


def test_offsets_of_floats_and_non_integers():
    assert ndcg(Y, S, offsets=np.array([0.0, 2.0, 6.0])) == ndcg(Y, S, group=[2, 4])
    with pytest.raises(TypeError, match=r"offsets must contain integers"):
        ndcg(Y, S, offsets=np.array([0.0, 2.5, 6.0]))


# ----------------------------------------------------------------------------- gain specs


@pytest.mark.parametrize(
    "spec, kwargs, exc, match",
    [
        ("cubic", {}, ValueError, r"gain must be 'exp2', 'linear', .* got 'cubic'"),
        ([], {}, ValueError, r"gain table must be a non-empty 1-D"),
        ([[0, 1]], {}, ValueError, r"gain table must be a non-empty 1-D"),
        (["a", "b"], {}, TypeError, r"gain must be"),
        ([0, np.inf], {}, ValueError, r"gain table must hold finite gains; gain\[1\] = inf"),
        ([0, -1], {"nonnegative": True}, ValueError, r"finite gains >= 0; gain\[1\] = -1.0"),
        (np.exp2, {"allow_callable": False}, TypeError, r"got a callable"),
    ],
)
def test_parse_gain_rejects_bad_specs(spec, kwargs, exc, match):
    with pytest.raises(exc, match=match):
        parse_gain(spec, "gain", **kwargs)


def test_parse_gain_normalises_and_both_layers_use_it():
    assert parse_gain("exp2") == ("exp2", None)
    kind, table = parse_gain([0, 1, 3])
    assert kind == "table" and table.dtype == np.float64 and table.tolist() == [0.0, 1.0, 3.0]
    assert parse_gain(np.exp2)[0] == "callable"
    # the same spec errors read the same from the metrics and the objectives
    with pytest.raises(ValueError, match=r"gain must be 'exp2', 'linear'.* got 'cubic'"):
        ndcg(Y, S, group=[6], gain="cubic")
    with pytest.raises(ValueError, match=r"gain must be 'exp2', 'linear'.* got 'cubic'"):
        LambdaRankObjective(gain="cubic")
    with pytest.raises(TypeError, match=r"got a callable"):
        LambdaRankObjective(gain=np.exp2)


# ----------------------------------------------------------------------------- seeds


def test_sampling_seed_is_check_seed():
    assert TopKPairSampling(random_state=7).base_seed == 7
    assert TopKPairSampling().base_seed is None
    # Generator: one draw in [0, 2**31 - 1), re-derived from the same generator state
    expected = int(np.random.default_rng(3).integers(0, 2**31 - 1))
    assert TopKPairSampling(random_state=np.random.default_rng(3)).base_seed == expected
    expected = int(np.random.RandomState(3).randint(0, 2**31 - 1))
    assert TopKPairSampling(random_state=np.random.RandomState(3)).base_seed == expected
    with pytest.raises(ValueError, match=r"random_state must be >= 0, got -3"):
        TopKPairSampling(random_state=-3)


def test_inspection_random_state_stays_scikit_learns():
    from sklearn.utils import check_random_state

    rng, seed = _check_random_state(5)
    assert seed == 5
    assert rng.randint(1000) == check_random_state(5).randint(1000)
    given = np.random.RandomState(1)
    assert _check_random_state(given) == (given, None)  # used as is: no draw
    assert _check_random_state(None)[0] is np.random.mtrand._rand
    with pytest.raises(ValueError, match=r"random_state must be >= 0, got -1"):
        _check_random_state(-1)
    with pytest.raises(TypeError, match=r"random_state must be an int"):
        _check_random_state(np.random.default_rng(0))


def test_one_rule_for_lists_of_cutoffs_on_every_public_path():
    """A cut-off listed twice is the same error in metrics, IPS, importance, estimator, engines."""
    from ltr.clicks.ips import ips_ndcg
    from ltr.engines import train
    from ltr.estimator import LambdaMARTRanker
    from ltr.inspection import permutation_importance
    from ltr.metrics import ndcg

    rng = np.random.default_rng(0)
    X, y = rng.normal(size=(40, 3)), rng.integers(0, 3, 40).astype(float)
    qid = np.repeat(np.arange(4), 10)
    offsets = np.arange(0, 41, 10)
    message = r"k lists cut-off 5 more than once, got \[5, 10, 5\]; give each cut-off once"
    with pytest.raises(ValueError, match=message):
        ndcg(y, X[:, 0], qid=qid, k=[5, 10, 5])
    with pytest.raises(ValueError, match=message):
        ips_ndcg((y > 1).astype(float), X[:, 0], position=np.tile(np.arange(1, 11), 4),
                 propensity=np.ones(10), offsets=offsets, k=[5, 10, 5])
    fitted = LambdaMARTRanker(n_estimators=2, min_child_samples=2, n_jobs=1).fit(X, y, qid=qid)
    with pytest.raises(ValueError, match=message):
        permutation_importance(fitted, X, y, qid=qid, k=[5, 10, 5], n_repeats=1)
    with pytest.raises(ValueError, match=message.replace("k lists", "eval_at lists")):
        LambdaMARTRanker(eval_at=[5, 10, 5]).fit(X, y, qid=qid)
    with pytest.raises(ValueError, match=message.replace("k lists", "eval_at lists")):
        train(X, y, offsets, num_boost_round=2, eval_sets=[("v", X, y, offsets)],
              eval_at=[5, 10, 5])
    assert check_cutoffs([10, 5]) == [10, 5] and check_eval_at(3) == (3,)

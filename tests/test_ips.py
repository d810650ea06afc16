"""IPS DCG/nDCG of a new ranking from logged clicks (ltr.clicks.ips) and its scorer.

The unbiasedness bar: averaged over 20,000 simulated sessions of one fixed
logged ranking, the IPS DCG of a fixed new ranking equals its closed form
sum_d P(click | grade_d) * disc(new rank_d) within 4 Monte-Carlo standard
errors (computed from the per-session values), while the naive click DCG is
off by more than 10 of its standard errors (and matches its own, biased,
closed form sum_d theta(logged position_d) * P(click | grade_d) * disc(new rank_d)).
"""

from __future__ import annotations

import numpy as np
import pytest
import sklearn
from sklearn.linear_model import LinearRegression
from sklearn.model_selection import GroupKFold, cross_val_score

from ltr.clicks import simulate_pbm
from ltr.clicks.ips import ips_dcg, ips_ndcg
from ltr.metrics import dcg
from ltr.scoring import IPSNDCGScorer, make_ips_ndcg_scorer

N_SESSIONS = 20_000
LABELS = np.array([0, 3, 1, 4, 0, 2, 1, 0, 3, 2])  # displayed in this order (logged ranking)
GAMMA = 0.05 + 0.9 * LABELS / 4  # the default click ladder
THETA = 1.0 / np.arange(1, 11)  # examination (1/p)^1
NEW_SCORES = np.array([0.1, 0.9, 0.3, 0.8, 0.2, 0.7, 0.4, 0.0, 0.6, 0.5])  # a different order


def _disc(scores: np.ndarray, k: int | None) -> np.ndarray:
    """Discount of each row at its new rank (0 past k)."""
    rank = np.empty(scores.size, dtype=np.int64)
    rank[np.argsort(-scores, kind="stable")] = np.arange(1, scores.size + 1)
    d = 1.0 / np.log2(rank + 1)
    return d if k is None else np.where(rank <= k, d, 0.0)


def _mean_and_se(values: np.ndarray) -> tuple[float, float]:
    return float(values.mean()), float(values.std(ddof=1) / np.sqrt(values.size))


def _log(**kwargs):
    return simulate_pbm(LABELS, group=[LABELS.size], examination=1.0, n_sessions=N_SESSIONS,
                        **kwargs)


def _per_session(log, propensity, k, **kwargs):
    return ips_dcg(log.click, NEW_SCORES[log.row], position=log.position,
                   propensity=propensity, offsets=log.offsets, k=k, reduce=None, **kwargs)


# --------------------------------------------------------------------------- #
# Closed forms on tiny lists                                                   #
# --------------------------------------------------------------------------- #


def test_one_click_weighted_by_its_logged_position_and_discounted_at_its_new_rank():
    kw = dict(position=[1, 2, 3], propensity=[1.0, 0.5, 0.25], group=[3])
    # the click logged at position 2 (weight 2) is ranked first by the new scores
    assert ips_dcg([0, 1, 0], [1.0, 3.0, 2.0], k=3, **kw) == pytest.approx(2.0)
    assert ips_dcg([0, 1, 0], [3.0, 2.0, 1.0], k=3, **kw) == pytest.approx(2 / np.log2(3))
    assert ips_dcg([0, 1, 0], [3.0, 2.0, 1.0], k=1, **kw) == 0.0
    both = ips_dcg([1, 0, 1], [1.0, 2.0, 3.0], k=None, **kw)
    assert both == pytest.approx(4.0 + 1.0 / np.log2(4))
    assert ips_ndcg([0, 1, 0], [3.0, 2.0, 1.0], k=3, **kw) == pytest.approx(1 / np.log2(3))
    # ideal order: the weight-4 click first, then the weight-1 click
    assert ips_ndcg([1, 0, 1], [2.0, 1.0, 3.0], k=3, **kw) == pytest.approx(1.0)
    assert ips_ndcg([1, 0, 1], [1.0, 2.0, 3.0], k=3, **kw) == pytest.approx(
        4.5 / (4.0 + 1 / np.log2(3))
    )


def test_tied_new_scores_share_the_mean_discount_or_keep_row_order():
    kw = dict(position=[1, 2, 3], propensity=[1.0, 1.0, 1.0], group=[3], k=3)
    avg = ips_dcg([0, 0, 1], [1.0, 1.0, 1.0], **kw)
    assert avg == pytest.approx(np.mean(1 / np.log2([2, 3, 4])))
    assert ips_dcg([0, 0, 1], [1.0, 1.0, 1.0], ties="stable", **kw) == pytest.approx(0.5)


def test_k_list_reduce_none_and_qid():
    click = [0, 1, 1, 0, 1]
    kw = dict(position=[2, 1, 1, 3, 2], propensity=[1.0, 0.5, 0.5], qid=["a", "a", "b", "b", "b"])
    out = ips_dcg(click, [0.2, 0.1, 0.3, 0.2, 0.1], k=[1, 3], reduce=None, **kw)
    assert set(out) == {1, 3}
    np.testing.assert_allclose(out[1], [0.0, 1.0])
    np.testing.assert_allclose(out[3], [1 / np.log2(3), 1.0 + 2 / np.log2(4)])
    mean = ips_dcg(click, [0.2, 0.1, 0.3, 0.2, 0.1], k=3, **kw)
    assert mean == pytest.approx(out[3].mean())


def test_with_unit_propensities_it_is_the_click_dcg_of_ltr_metrics():
    log = simulate_pbm(np.tile(LABELS, 30), group=[10] * 30, logging_scores=np.arange(300.0),
                       temperature=3.0, n_sessions=20, random_state=0)
    scores = np.random.default_rng(0).normal(size=300)[log.row]
    for k in (3, 10):
        ours = ips_dcg(log.click, scores, position=log.position, propensity=np.ones(10),
                       offsets=log.offsets, k=k, reduce=None)
        ref = dcg(log.click.astype(float), scores, offsets=log.offsets, k=k, gain="linear",
                  ties="average", reduce=None)
        np.testing.assert_allclose(ours, ref, rtol=1e-12, atol=1e-12)


# --------------------------------------------------------------------------- #
# Unbiasedness under the position-based model                                  #
# --------------------------------------------------------------------------- #


@pytest.mark.parametrize("k", [5, None])
def test_ips_dcg_is_unbiased_and_naive_click_dcg_is_not(k):
    log = _log(random_state=11)
    disc = _disc(NEW_SCORES, k)
    expected = float(np.sum(GAMMA * disc))
    ips_mean, ips_se = _mean_and_se(_per_session(log, THETA, k))
    assert abs(ips_mean - expected) <= 4 * ips_se, (ips_mean, expected, ips_se)

    naive_mean, naive_se = _mean_and_se(_per_session(log, np.ones(10), k))
    naive_expected = float(np.sum(THETA * GAMMA * disc))  # rows logged at positions 1..10
    assert abs(naive_mean - naive_expected) <= 4 * naive_se
    assert abs(naive_mean - expected) > 10 * naive_se  # the bias is significant


def test_ips_dcg_is_unbiased_under_a_stochastic_logger_too():
    logger = np.linspace(1.0, 0.0, LABELS.size)
    log = _log(logging_scores=logger, temperature=0.5, random_state=5)
    expected = float(np.sum(GAMMA * _disc(NEW_SCORES, 5)))
    mean, se = _mean_and_se(_per_session(log, THETA, 5))
    assert abs(mean - expected) <= 4 * se


def test_clipping_bounds_the_weights_and_shrinks_the_expectation_as_documented():
    log = _log(random_state=3)
    clip = 0.25
    values = _per_session(log, THETA, None, clip=clip)
    disc = _disc(NEW_SCORES, None)
    assert values.max() <= disc.sum() / clip + 1e-12  # every weight <= 1 / clip
    expected = float(np.sum(GAMMA * disc * THETA / np.maximum(THETA, clip)))
    mean, se = _mean_and_se(values)
    assert abs(mean - expected) <= 4 * se
    unclipped = float(np.sum(GAMMA * disc))
    assert abs(mean - unclipped) > 4 * se  # clipping below 1/4 trades bias for variance
    assert values.std() < _per_session(log, THETA, None).std()


def test_fixed_normaliser_keeps_ips_ndcg_unbiased():
    log = _log(random_state=4)
    ideal = float(np.sum(np.sort(GAMMA)[::-1][:5] / np.log2(np.arange(2, 7))))
    n_lists = log.offsets.size - 1
    values = ips_ndcg(log.click, NEW_SCORES[log.row], position=log.position, propensity=THETA,
                      offsets=log.offsets, k=5, normalizer=np.full(n_lists, ideal), reduce=None)
    expected = float(np.sum(GAMMA * _disc(NEW_SCORES, 5))) / ideal
    mean, se = _mean_and_se(values)
    assert abs(mean - expected) <= 4 * se


# --------------------------------------------------------------------------- #
# Self-normalised and ideal-normalised variants                                #
# --------------------------------------------------------------------------- #


def test_self_normalised_value_is_the_weighted_mean_discount_of_the_clicks():
    kw = dict(position=[1, 2, 3], group=[3], k=3)
    one = ips_dcg([0, 1, 0], [3.0, 2.0, 1.0], propensity=[1.0, 0.5, 0.25],
                  self_normalize=True, **kw)
    assert one == pytest.approx(1 / np.log2(3))  # a single click: its discount
    two = ips_dcg([1, 0, 1], [3.0, 2.0, 1.0], propensity=[1.0, 0.5, 0.25],
                  self_normalize=True, **kw)
    assert two == pytest.approx((1.0 * 1.0 + 4.0 * 0.5) / 5.0)


def test_self_normalised_values_ignore_the_propensity_scale_and_skip_lists_without_clicks():
    log = _log(random_state=8)
    scores = NEW_SCORES[log.row]
    kw = dict(position=log.position, offsets=log.offsets, k=5)
    a = ips_dcg(log.click, scores, propensity=THETA, self_normalize=True, reduce=None, **kw)
    b = ips_dcg(log.click, scores, propensity=THETA / 2, self_normalize=True, reduce=None, **kw)
    np.testing.assert_allclose(a, b, equal_nan=True)
    raw_a = ips_dcg(log.click, scores, propensity=THETA, **kw)
    raw_b = ips_dcg(log.click, scores, propensity=THETA / 2, **kw)
    assert raw_b == pytest.approx(2 * raw_a)
    no_click = np.add.reduceat(log.click, log.offsets[:-1]) == 0
    assert no_click.any() and np.isnan(a[no_click]).all()
    assert ((a[~no_click] >= 0) & (a[~no_click] <= 1)).all()
    mean = ips_dcg(log.click, scores, propensity=THETA, self_normalize=True, **kw)
    assert mean == pytest.approx(np.nanmean(a))


def test_ideal_normalised_ndcg_is_in_unit_interval_and_one_for_the_best_order():
    log = _log(random_state=9)
    kw = dict(position=log.position, offsets=log.offsets, propensity=THETA, k=5)
    values = ips_ndcg(log.click, NEW_SCORES[log.row], reduce=None, **kw)
    valid = ~np.isnan(values)
    assert ((values[valid] >= 0) & (values[valid] <= 1 + 1e-12)).all()
    weighted = log.click / THETA[log.position - 1]  # best order: by weighted click
    best = ips_ndcg(log.click, weighted, reduce=None, **kw)
    np.testing.assert_allclose(best[valid], 1.0)
    zero = ips_ndcg(log.click, NEW_SCORES[log.row], empty=0.0, reduce=None, **kw)
    assert (zero[~valid] == 0).all()
    skip_mean = ips_ndcg(log.click, NEW_SCORES[log.row], **kw)
    assert skip_mean == pytest.approx(values[valid].mean())


def test_ips_functions_are_reexported_by_ltr_metrics_and_ltr():
    import ltr
    import ltr.metrics

    assert ltr.metrics.ips_dcg is ips_dcg and ltr.ips_ndcg is ips_ndcg
    assert ltr.make_ips_ndcg_scorer is make_ips_ndcg_scorer


# --------------------------------------------------------------------------- #
# Bad input                                                                    #
# --------------------------------------------------------------------------- #


@pytest.mark.parametrize(
    ("kwargs", "error", "match"),
    [
        (dict(click=[2, 0, 0]), ValueError, r"click must hold clicks 0 or 1; click\[0\] = 2"),
        (dict(click=[0.5, 0, 0]), ValueError, r"click\[0\] = 0.5"),
        (dict(position=[0, 1, 2]), ValueError, "display ranks starting at 1"),
        (dict(position=[-1, 1, 2]), ValueError, "display ranks starting at 1"),
        (dict(position=[1, 1, 2]), ValueError, "permutation of 1..n"),
        (dict(position=[1, 2, 4]), ValueError, "must run 1..n"),
        (dict(position=[1.5, 2, 3]), ValueError, r"integer display ranks; position\[0\]"),
        (dict(position=[np.nan, 2, 3]), ValueError, r"must not be missing; position\[0\]"),
        (dict(position=None), TypeError, "position is required"),
        (dict(propensity=[1.0, 0.0, 0.5]), ValueError, r"propensity\[1\] \(position 2\) = 0.0"),
        (dict(propensity=[1.5, 0.5, 0.5]), ValueError, r"must lie in \(0, 1\]"),
        (dict(propensity=[1.0]), ValueError, r"click\[2\] was logged at position 3"),
        (dict(clip=0.0), ValueError, "clip must be > 0"),
        (dict(clip=1.5), ValueError, "clip must be <= 1"),
        (dict(k=0), ValueError, "k must be >= 1"),
        (dict(k=[]), ValueError, "k must not be an empty list"),
        (dict(y_score=[1.0, 2.0]), ValueError, "y_score has 2 rows but click has 3"),
        (dict(y_score=[1.0, np.nan, 2.0]), ValueError, "y_score must be finite"),
        (dict(offsets=[0, 3]), ValueError, "only one of qid, group or offsets"),
        (dict(group=None), ValueError, "query information is missing"),
        (dict(ties="first"), ValueError, "ties must be 'average'"),
        (dict(reduce="sum"), ValueError, "reduce must be 'mean'"),
        (dict(discount="log10"), ValueError, "discount must be 'log2'"),
        (dict(self_normalize="yes"), TypeError, "self_normalize must be True or False"),
    ],
)
def test_ips_dcg_rejects_bad_input_with_informative_errors(kwargs, error, match):
    args = dict(click=[0, 0, 1], y_score=[3.0, 2.0, 1.0], position=[1, 2, 3],
                propensity=[1.0, 0.5, 0.25], group=[3])
    args.update(kwargs)
    click, score = args.pop("click"), args.pop("y_score")
    with pytest.raises(error, match=match):
        ips_dcg(click, score, **args)


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        (dict(normalizer="max"), "normalizer must be 'ideal' or an array"),
        (dict(normalizer=[1.0, 2.0]), "normalizer has 2 entries but there are 1 lists"),
        (dict(normalizer=[0.0]), r"normalizer must be finite and > 0; normalizer\[0\] = 0.0"),
        (dict(empty="zero"), "empty must be 'skip' or a number"),
    ],
)
def test_ips_ndcg_rejects_bad_normalisers(kwargs, match):
    with pytest.raises(ValueError, match=match):
        ips_ndcg([0, 1, 0], [3.0, 2.0, 1.0], position=[1, 2, 3], propensity=[1.0, 0.5, 0.25],
                 group=[3], **kwargs)


# --------------------------------------------------------------------------- #
# Scorer                                                                       #
# --------------------------------------------------------------------------- #


def _scorer_data():
    log = simulate_pbm(np.tile(LABELS, 40), group=[10] * 40, logging_scores=np.zeros(400),
                       temperature=1.0, n_sessions=5, random_state=0)
    rng = np.random.default_rng(0)
    features = np.column_stack([np.tile(LABELS, 40) + rng.normal(size=400), rng.normal(size=400)])
    X = features[log.row]
    list_id = np.repeat(np.arange(log.offsets.size - 1), np.diff(log.offsets))
    return log, X, list_id


def test_scorer_matches_ips_ndcg_and_rebuilds_its_call():
    log, X, list_id = _scorer_data()
    model = LinearRegression().fit(X, log.click)
    scorer = make_ips_ndcg_scorer(5, propensity=THETA, clip=0.1)
    assert isinstance(scorer, IPSNDCGScorer)
    assert repr(scorer).startswith("make_ips_ndcg_scorer(k=5, propensity=[1.0, 0.5")
    value = scorer(model, X, log.click, qid=list_id, position=log.position)
    ref = ips_ndcg(log.click, model.predict(X), position=log.position, propensity=THETA,
                   offsets=log.offsets, k=5, clip=0.1)
    assert value == pytest.approx(ref)


def test_scorer_gets_qid_and_position_through_metadata_routing():
    log, X, list_id = _scorer_data()
    scorer = make_ips_ndcg_scorer(5, propensity=THETA)
    with sklearn.config_context(enable_metadata_routing=True):
        scores = cross_val_score(LinearRegression(), X, log.click, cv=GroupKFold(n_splits=3),
                                 scoring=scorer, params={"groups": list_id, "qid": list_id,
                                                         "position": log.position})
    assert scores.shape == (3,) and np.all((scores >= 0) & (scores <= 1))


def test_scorer_reads_and_drops_dataframe_columns():
    pd = pytest.importorskip("pandas")
    log, X, list_id = _scorer_data()
    frame = pd.DataFrame({"a": X[:, 0], "b": X[:, 1], "sid": list_id, "pos": log.position})
    model = LinearRegression().fit(frame[["a", "b"]], log.click)
    scorer = make_ips_ndcg_scorer(5, propensity=THETA, qid_column="sid", position_column="pos")
    value = scorer(model, frame, log.click)
    ref = scorer(model, frame[["a", "b"]], log.click, qid=list_id, position=log.position)
    assert value == pytest.approx(ref)


def test_scorer_errors_name_the_fix():
    log, X, list_id = _scorer_data()
    model = LinearRegression().fit(X, log.click)
    scorer = make_ips_ndcg_scorer(5, propensity=THETA)
    with pytest.raises(ValueError, match="needs the logged display positions"):
        scorer(model, X, log.click, qid=list_id)
    with pytest.raises(ValueError, match="needs query ids"):
        scorer(model, X, log.click, position=log.position)
    with pytest.raises(TypeError, match=r"unknown option\(s\) \['normalizer'\]"):
        make_ips_ndcg_scorer(5, propensity=THETA, normalizer="ideal")
    with pytest.raises(ValueError, match=r"propensity\[0\] \(position 1\) = 0.0"):
        make_ips_ndcg_scorer(5, propensity=[0.0, 0.5])
    with pytest.raises(ValueError, match="clip must be > 0"):
        make_ips_ndcg_scorer(5, propensity=THETA, clip=0.0)

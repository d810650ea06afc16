"""Click simulation and propensity estimation (ltr.clicks).

Stated tolerances (checked below, each over three seeds):

* EM: max |estimate - 1/p| <= 0.03 over positions 1..10, from 300 queries of
  10 documents x 100 sessions (300,000 impressions) under a Plackett-Luce logger.
* Swap interventions: max |estimate - 1/p| <= 0.03 over positions 1..10, from
  300 queries x 400 sessions (120,000 sessions, about 13,000 per experiment).
* Simulated click rates agree with the model's probabilities within 4
  Monte-Carlo standard errors.
"""

from __future__ import annotations

import time

import numpy as np
import pytest

from ltr.clicks import (
    DEFAULT_CLICK_LADDER,
    ClickLog,
    estimate_propensity_em,
    estimate_propensity_swap,
    simulate_cascade,
    simulate_pbm,
)

TRUE = 1.0 / np.arange(1, 11)


def _within_se(observed: np.ndarray, p: np.ndarray, n: np.ndarray, z: float = 4.0) -> bool:
    se = np.sqrt(np.maximum(p * (1 - p), 1e-12) / n)
    return bool(np.all(np.abs(observed - p) <= z * se + 1e-12))


# --------------------------------------------------------------------------- #
# Simulation: structure                                                        #
# --------------------------------------------------------------------------- #


def test_log_layout_one_impression_per_row_and_session_in_displayed_order():
    labels = np.array([2, 0, 1, 0, 1])
    log = simulate_pbm(labels, group=[3, 2], n_sessions=4, random_state=0)
    assert isinstance(log, ClickLog)
    assert log.n_impressions == 20 and log.n_sessions == 4 and log.model == "pbm"
    assert log.offsets.tolist() == [0, 3, 6, 9, 12, 14, 16, 18, 20]
    assert log.query.tolist() == [0] * 12 + [1] * 8
    assert log.session.tolist() == [s for s in range(4) for _ in range(3)] + [
        s for s in range(4) for _ in range(2)
    ]
    # rows already in displayed order: row i of the query at position i + 1
    assert log.row.tolist() == [0, 1, 2] * 4 + [3, 4] * 4
    assert log.position.tolist() == [1, 2, 3] * 4 + [1, 2] * 4
    assert (log.swap == 0).all()
    frame = log.to_frame()
    assert frame.shape == (20, 6) and frame["click"].sum() == log.click.sum()


def test_same_seed_same_log_other_seed_other_log():
    labels = np.tile([3, 2, 1, 0], 50)
    kw = dict(group=[4] * 50, logging_scores=np.arange(200.0), temperature=5.0, n_sessions=5)
    a = simulate_pbm(labels, random_state=7, **kw)
    b = simulate_pbm(labels, random_state=7, **kw)
    c = simulate_pbm(labels, random_state=8, **kw)
    assert np.array_equal(a.click, b.click) and np.array_equal(a.row, b.row)
    assert not np.array_equal(a.row, c.row)


def test_position_gives_the_logged_order():
    log = simulate_pbm([0, 1, 2, 3], group=[4], position=[3, 1, 4, 2], random_state=0)
    assert log.row.tolist() == [1, 3, 0, 2]
    assert log.position.tolist() == [1, 2, 3, 4]


def test_logging_scores_sort_descending_with_ties_in_row_order():
    log = simulate_pbm([0, 1, 2, 3], group=[4], logging_scores=[1.0, 5.0, 1.0, 3.0],
                       random_state=0)
    assert log.row.tolist() == [1, 3, 0, 2]


def test_plackett_luce_first_place_frequencies_follow_the_softmax():
    scores = np.array([2.0, 1.0, 0.0, -1.0])
    n_s = 20000
    log = simulate_pbm([0, 0, 0, 0], group=[4], logging_scores=scores, temperature=1.0,
                       n_sessions=n_s, random_state=3)
    top = log.row[log.position == 1]
    freq = np.bincount(top, minlength=4) / n_s
    soft = np.exp(scores) / np.exp(scores).sum()
    assert _within_se(freq, soft, np.full(4, n_s))
    # every session is a permutation of the query's rows
    rows = log.row.reshape(n_s, 4)
    assert (np.sort(rows, axis=1) == np.arange(4)).all()


def test_pbm_click_rates_match_examination_times_click_probability():
    n_s = 40000
    labels = np.array([4, 3, 2, 1, 0])
    log = simulate_pbm(labels, group=[5], examination=0.7, n_sessions=n_s, random_state=1)
    gamma = 0.05 + 0.9 * labels / 4  # the default ladder
    theta = (1.0 / np.arange(1, 6)) ** 0.7
    rate = log.click.reshape(n_s, 5).mean(axis=0)
    assert _within_se(rate, theta * gamma, np.full(5, n_s))


def test_default_ladder_and_explicit_tables():
    assert DEFAULT_CLICK_LADDER == (0.05, 0.95)
    log = simulate_pbm([1, 0], group=[2], examination=[1.0, 1.0], click_prob={0: 0.0, 1: 1.0},
                       n_sessions=50, random_state=0)
    assert log.click.tolist() == [1, 0] * 50
    log = simulate_pbm([1, 0], group=[2], examination=[1.0, 1.0], click_prob=[1.0, 1.0],
                       n_sessions=10, random_state=0)
    assert log.click.all()


def test_examination_table_shorter_than_a_query_means_no_clicks_below_it():
    log = simulate_pbm(np.full(6, 4), group=[6], examination=[1.0, 1.0, 1.0],
                       click_prob=[0, 0, 0, 0, 1], n_sessions=20, random_state=0)
    assert log.click[log.position <= 3].all() and not log.click[log.position > 3].any()


def test_cascade_clicks_stop_after_a_satisfying_click():
    n_s = 40000
    log = simulate_cascade([1, 2, 1], group=[3], click_prob=[0.0, 0.5, 0.8],
                           stop_prob=[0.0, 0.3, 1.0], n_sessions=n_s, random_state=2)
    clicks = log.click.reshape(n_s, 3)
    # position 2 is read unless position 1 was clicked and stopped: 1 - 0.5 * 0.3
    reach2 = 1 - 0.5 * 0.3
    reach3 = reach2 * (1 - 0.8 * 1.0)
    expected = np.array([0.5, reach2 * 0.8, reach3 * 0.5])
    assert _within_se(clicks.mean(axis=0), expected, np.full(3, n_s))
    # a grade-2 click always stops: nothing is clicked after it
    after = clicks[clicks[:, 1] == 1, 2]
    assert after.sum() == 0
    assert log.model == "cascade"


def test_cascade_max_position_cuts_the_page():
    log = simulate_cascade(np.ones(5), group=[5], click_prob=[0, 1], stop_prob=[0, 0],
                           max_position=2, n_sessions=5, random_state=0)
    assert log.click[log.position <= 2].all() and not log.click[log.position > 2].any()


def test_swap_intervention_swaps_positions_one_and_k_half_the_time():
    n_s = 20000
    log = simulate_pbm(np.zeros(6), group=[6], n_sessions=n_s, swap_depth=4, random_state=0)
    k = log.swap.reshape(n_s, 6)[:, 0]
    assert set(np.unique(k)) == {2, 3, 4}
    rows = log.row.reshape(n_s, 6)
    swapped = rows[:, 0] != 0
    assert np.all(rows[swapped, k[swapped] - 1] == 0)  # the top result moved to k
    assert np.all(rows[swapped, 0] == k[swapped] - 1)
    assert abs(swapped.mean() - 0.5) < 4 * np.sqrt(0.25 / n_s)
    # positions other than 1 and k are untouched
    untouched = rows[:, 4:]
    assert (untouched == [4, 5]).all()


def test_counts_aggregate_per_query_row_and_position():
    log = simulate_pbm(np.tile([2, 1, 0], 4), group=[3] * 4, logging_scores=np.zeros(12),
                       temperature=1.0, n_sessions=30, random_state=0)
    counts = log.counts()
    assert counts["impressions"].sum() == log.n_impressions
    assert counts["clicks"].sum() == log.click.sum()
    assert (counts.groupby("row")["impressions"].sum() == 30).all()
    assert (counts["query"] == counts["row"] // 3).all()


def test_simulating_a_million_rows_is_fast():
    rng = np.random.default_rng(0)
    n = 1_000_000
    labels = rng.integers(0, 5, n)
    scores = rng.normal(size=n)
    group = [50] * (n // 50)
    simulate_pbm(labels[:100], group=[50, 50], logging_scores=scores[:100], temperature=1.0)
    start = time.perf_counter()
    log = simulate_pbm(labels, group=group, logging_scores=scores, temperature=1.0,
                       random_state=0)
    elapsed = time.perf_counter() - start
    assert log.n_impressions == n
    assert elapsed < 2.0  # about 0.1 s on one idle core; generous for shared machines


# --------------------------------------------------------------------------- #
# Propensity estimation                                                        #
# --------------------------------------------------------------------------- #


def _study_set(seed: int) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    labels = rng.integers(0, 5, 3000)
    logger = labels + rng.normal(scale=2.0, size=3000)  # a weak logger
    return labels, logger


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_em_recovers_the_simulated_propensities(seed):
    labels, logger = _study_set(seed)
    log = simulate_pbm(labels, group=[10] * 300, logging_scores=logger, temperature=2.0,
                       examination=1.0, n_sessions=100, random_state=seed)
    est = estimate_propensity_em(log)
    assert est.method == "em" and est.converged and est.propensity[0] == 1.0
    assert np.max(np.abs(est.propensity - TRUE)) <= 0.03
    assert est.impressions.sum() == log.n_impressions
    assert est.clicks.sum() == log.click.sum()


def test_em_from_arrays_equals_em_from_the_log():
    labels, logger = _study_set(0)
    log = simulate_pbm(labels[:500], group=[10] * 50, logging_scores=logger[:500],
                       temperature=2.0, n_sessions=20, random_state=0)
    a = estimate_propensity_em(log)
    b = estimate_propensity_em(log.click, log.position, log.row, offsets=log.offsets)
    qid = np.repeat(np.arange(log.offsets.size - 1), np.diff(log.offsets))
    c = estimate_propensity_em(log.click, log.position, log.row, qid=qid, max_position=5)
    np.testing.assert_allclose(a.propensity, b.propensity)
    assert c.propensity.shape == (5,)


def _plain_em(pair, pos, click, top, n_iter):
    """The textbook PBM EM (Chuklin et al.), vectorised, over np.unique cells."""
    key = pair.astype(np.int64) * (top + 1) + pos
    uniq, inv, n = np.unique(key, return_inverse=True, return_counts=True)
    c = np.bincount(inv.ravel(), weights=click, minlength=uniq.size)
    u, k = np.unique(uniq // (top + 1), return_inverse=True)[1], uniq % (top + 1) - 1
    theta = np.full(top, 0.5)
    gamma = np.clip(np.bincount(u, weights=c) / np.bincount(u, weights=n), 0.01, 0.99)
    for _ in range(n_iter):
        t, g = theta[k], gamma[u]
        miss = 1.0 - t * g
        w = np.divide(n - c, miss, out=np.zeros_like(miss), where=miss > 0)
        theta = np.bincount(k, weights=c + w * t * (1 - g), minlength=top) / \
            np.bincount(k, weights=n, minlength=top)
        gamma = np.bincount(u, weights=c + w * (1 - t) * g) / np.bincount(u, weights=n)
    return theta / theta[0]


def test_em_reaches_the_fixed_point_of_the_plain_em():
    """SQUAREM-accelerated EM stops at the plain EM's fixed point.

    The plain EM runs 5,000 updates (it no longer moves at 1e-6 there).
    """
    labels, logger = _study_set(1)
    log = simulate_pbm(labels[:1000], group=[10] * 100, logging_scores=logger[:1000],
                       temperature=1.0, examination=1.0, n_sessions=30, random_state=3)
    est = estimate_propensity_em(log, tol=1e-10)
    assert est.converged and est.n_iter < 2000
    ref = _plain_em(log.row, log.position, log.click.astype(float), 10, 5_000)
    np.testing.assert_allclose(est.propensity, ref, atol=1e-6)
    # The default tolerance stops within 1e-3 of it.
    np.testing.assert_allclose(estimate_propensity_em(log).propensity, ref, atol=1e-3)


def test_em_kernel_threaded_and_serial_agree_exactly():
    from ltr.clicks._propensity import _dense_codes
    from ltr.kernels import _clicks as K

    labels, logger = _study_set(2)
    log = simulate_pbm(labels[:1000], group=[10] * 100, logging_scores=logger[:1000],
                       temperature=1.0, n_sessions=20, random_state=2)
    uniq, code = _dense_codes(log.row)
    n_pairs = uniq.size
    cells = K.pbm_cells(code, log.position, log.click.astype(np.float64), n_pairs, 10)
    out = []
    for parallel in (False, True):
        theta, gamma = np.full(10, 0.5), np.full(n_pairs, 0.3)
        it, _ = K.propensity_em(*cells, theta, gamma, 50, 0.0, parallel)
        out.append((it, theta, gamma))
    assert out[0][0] == out[1][0] == 50
    np.testing.assert_array_equal(out[0][1], out[1][1])
    np.testing.assert_array_equal(out[0][2], out[1][2])


def test_dense_codes_equal_numpy_unique():
    from ltr.clicks._propensity import _dense_codes

    rng = np.random.default_rng(0)
    for values in (rng.integers(-50, 50, 300), rng.integers(0, 10**12, 300),
                   rng.integers(0, 40, 300).astype(np.uint16), np.array(["b", "a", "b"])):
        uniq, inv = np.unique(values, return_inverse=True)
        for dtype in (np.int64, np.int32):
            ids, code = _dense_codes(values, dtype)
            assert ids.dtype == values.dtype and code.dtype == dtype
            np.testing.assert_array_equal(ids, uniq)
            np.testing.assert_array_equal(code, inv.ravel())


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_swap_interventions_recover_the_simulated_propensities(seed):
    labels, logger = _study_set(seed)
    log = simulate_pbm(labels, group=[10] * 300, logging_scores=logger, examination=1.0,
                       n_sessions=400, swap_depth=10, random_state=seed)
    est = estimate_propensity_swap(log)
    assert est.method == "swap" and est.propensity[0] == 1.0
    assert np.max(np.abs(est.propensity - TRUE)) <= 0.03


def test_swap_from_arrays_and_a_max_position():
    log = simulate_pbm(np.tile([2, 1, 0, 1], 50), group=[4] * 50, n_sessions=20, swap_depth=4,
                       random_state=0)
    a = estimate_propensity_swap(log)
    b = estimate_propensity_swap(log.click, log.position, log.swap, offsets=log.offsets,
                                 max_position=3)
    np.testing.assert_allclose(a.propensity[:3], b.propensity)


# --------------------------------------------------------------------------- #
# Bad input                                                                    #
# --------------------------------------------------------------------------- #


@pytest.mark.parametrize(
    ("kwargs", "error", "match"),
    [
        (dict(labels=[1.5, 0]), ValueError, r"labels must hold integer grades .*; labels\[0\] = 1.5"),
        (dict(labels=[-1, 0]), ValueError, r"labels must be >= 0"),
        (dict(position=[0, 1]), ValueError, r"position must be display ranks starting at 1"),
        (dict(position=[1, 1]), ValueError, r"permutation of 1..n"),
        (dict(position=[1, 3]), ValueError, r"position must run 1..n"),
        (dict(position=[1.5, 2]), ValueError, r"integer display ranks; position\[0\]"),
        (dict(position=[np.nan, 1]), ValueError, r"must not be missing; position\[0\]"),
        (dict(position=[1, 2], logging_scores=[0, 1]), ValueError, "not both"),
        (dict(temperature=1.0), ValueError, "temperature needs logging_scores"),
        (dict(logging_scores=[0, 1], temperature=0.0), ValueError, "temperature must be > 0"),
        (dict(logging_scores=[0, np.inf]), ValueError, "logging_scores must be finite"),
        (dict(logging_scores=[0]), ValueError, "logging_scores has 1 rows"),
        (dict(click_prob={0: 0.1}), ValueError, r"no probability for grade 1 \(labels\[0\]\)"),
        (dict(click_prob=[0.1]), ValueError, r"click_prob has 1 entries"),
        (dict(click_prob=[0.1, 1.2]), ValueError, r"click_prob\[1\] = 1.2"),
        (dict(examination=[1.0, -0.1]), ValueError, r"examination\[1\] = -0.1"),
        (dict(examination=-1.0), ValueError, "examination must be >= 0"),
        (dict(n_sessions=0), ValueError, "n_sessions must be >= 1"),
        (dict(swap_depth=1), ValueError, "swap_depth must be >= 2"),
        (dict(random_state=-1), ValueError, "random_state must be >= 0"),
        (dict(group=None), ValueError, "query information is missing"),
        (dict(offsets=[0, 2]), ValueError, "only one of qid, group or offsets"),
    ],
)
def test_simulation_rejects_bad_input_with_informative_errors(kwargs, error, match):
    args = dict(labels=[1, 0], group=[2])
    args.update(kwargs)
    with pytest.raises(error, match=match):
        simulate_pbm(**args)


def test_cascade_rejects_bad_stop_prob_and_page():
    with pytest.raises(ValueError, match=r"stop_prob\[0\] = -0.5"):
        simulate_cascade([1, 0], group=[2], stop_prob=[-0.5, 0.5])
    with pytest.raises(ValueError, match="max_position must be >= 1"):
        simulate_cascade([1, 0], group=[2], max_position=0)


@pytest.mark.parametrize(
    ("kwargs", "error", "match"),
    [
        (dict(click=[2, 0, 1, 0]), ValueError, r"click must hold clicks 0 or 1; click\[0\] = 2"),
        (dict(position=[1, 1, 1, 2]), ValueError, "permutation of 1..n"),
        (dict(position=[0, 1, 1, 2]), ValueError, r"starting at 1"),
        (dict(position=None), TypeError, "position is required"),
        (dict(doc=None), TypeError, "doc is required"),
        (dict(doc=[0, 1]), ValueError, r"doc must have one entry per row \(4\)"),
        (dict(qid=[0, 1, 0, 1]), ValueError, "contiguous"),
        (dict(qid=None), TypeError, "the displayed lists are missing"),
        (dict(n_iter=0), ValueError, "n_iter must be >= 1"),
        (dict(tol=-1.0), ValueError, "tol must be >= 0"),
        (dict(max_position=0), ValueError, "max_position must be >= 1"),
    ],
)
def test_em_rejects_bad_input_with_informative_errors(kwargs, error, match):
    args = dict(click=[1, 0, 0, 1], position=[1, 2, 1, 2], doc=[0, 1, 1, 0], qid=[0, 0, 1, 1])
    args.update(kwargs)
    click = args.pop("click")
    with pytest.raises(error, match=match):
        estimate_propensity_em(click, **args)


def test_a_log_is_given_alone():
    log = simulate_pbm([1, 0], group=[2], random_state=0)
    with pytest.raises(ValueError, match="pass a ClickLog alone"):
        estimate_propensity_em(log, log.position)


def test_swap_rejects_logs_without_or_with_inconsistent_experiments():
    log = simulate_pbm([1, 0], group=[2], n_sessions=3, random_state=0)
    with pytest.raises(ValueError, match="no swap experiment"):
        estimate_propensity_swap(log)
    with pytest.raises(ValueError, match=r"same for every impression of a list; swap\[1\] = 3"):
        estimate_propensity_swap([1, 0, 0, 1], [1, 2, 1, 2], [2, 3, 2, 2], qid=[0, 0, 1, 1])
    with pytest.raises(ValueError, match=r"swap must be 0 \(none\) or a rank k >= 2"):
        estimate_propensity_swap([1, 0], [1, 2], [1, 1], qid=[0, 0])

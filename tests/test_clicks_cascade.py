"""Cascade clicks: abandonment in simulate_cascade and estimate_propensity_cascade.

Stated tolerances (Monte-Carlo; each estimate's standard error is
sqrt(p (1 - p) / n) with n its effective sample size, the expected reads the
estimator reports, or the rows averaged):

* simulated click rates with abandonment agree with the closed form within
  4 standard errors per position;
* continuation probabilities shared by all ranks and per-grade attractiveness
  (pooled: clicks over expected reads, over documents read 20 times or more)
  are recovered within 4 standard errors plus 0.005 from 300 queries x 100
  sessions; a document read a handful of times has a maximum-likelihood
  attractiveness biased like any per-item parameter fitted on a few
  observations (all of grade 0 under a strong stop after a click: -0.08);
* one continuation per rank (under a Plackett-Luce logger) within 0.05: each
  shares its information with 3,000 attractiveness parameters, so it scatters
  more than the binomial error of its reads (observed up to 0.033 over seeds);
* per-row propensities agree with the true P(read | clicks above) of the
  simulated model within 0.03 on average over rows and 0.15 at the 99th
  percentile: a row's propensity multiplies a factor per result skipped above
  it, each with the estimated attractiveness of that document, and a
  document read only a few times (deep under a fixed logger) has a noisy one
  (observed: mean 0.006-0.011, 99th percentile 0.07-0.11);
* the IPS estimate of each grade's click probability (clicks / estimated
  propensity) is within 4 standard errors plus 0.01 of the truth, while the
  naive click rate is not.
"""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from ltr.clicks import (
    CascadeEstimate,
    estimate_propensity_cascade,
    simulate_cascade,
)

CLICK = np.array([0.4, 0.6, 0.7, 0.8, 0.9])  # issue 21's cascade setting
MASK = (1 << 64) - 1


# --------------------------------------------------------------------------- #
# Simulation: abandonment                                                      #
# --------------------------------------------------------------------------- #


def _mix(z: int) -> int:
    z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & MASK
    z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & MASK
    return z ^ (z >> 31)


def _reference_cascade(grades, sizes, click_prob, stop_prob, abandon, cut, n_sessions, seed):
    """A plain-Python cascade over rows in displayed order, SplitMix64 per (query, session).

    Abandonment draws one extra uniform after each read result only when
    ``abandon > 0``: with 0 it is the stream of the model without abandonment.
    """
    golden = 0x9E3779B97F4A7C15
    out = []
    start = 0
    for q, n in enumerate(sizes):
        for s in range(n_sessions):
            state = [_mix(seed ^ _mix((q * n_sessions + s + golden) & MASK))]

            def uniform(state=state):
                state[0] = (state[0] + golden) & MASK
                return (_mix(state[0]) >> 11) * 2.0**-53

            stopped = False
            for p in range(n):
                g = grades[start + p]
                u = uniform()
                c = 0
                if not stopped and (cut == 0 or p < cut):
                    if u < click_prob[g]:
                        c = 1
                        if uniform() < stop_prob[g]:
                            stopped = True
                    if abandon > 0 and not stopped and uniform() < abandon:
                        stopped = True
                out.append(c)
        start += n
    return np.array(out)


@pytest.mark.parametrize("abandon", [0.0, 0.3])
@pytest.mark.parametrize("cut", [None, 3])
def test_cascade_draws_match_a_plain_reference_and_abandon_zero_keeps_the_old_stream(abandon,
                                                                                     cut):
    grades = np.array([2, 0, 1, 2, 1, 0, 2, 2, 1])
    sizes = [4, 5]
    cp, sp = [0.3, 0.6, 0.9], [0.0, 0.4, 0.7]
    log = simulate_cascade(grades, group=sizes, click_prob=cp, stop_prob=sp, abandon=abandon,
                           max_position=cut, n_sessions=7, random_state=11)
    ref = _reference_cascade(grades, sizes, cp, sp, abandon, cut or 0, 7, 11)
    assert log.click.tolist() == ref.tolist()
    if abandon == 0.0:  # the default is the model without abandonment
        default = simulate_cascade(grades, group=sizes, click_prob=cp, stop_prob=sp,
                                   max_position=cut, n_sessions=7, random_state=11)
        assert np.array_equal(default.click, log.click)


def test_abandonment_click_rates_match_the_closed_form():
    n_s = 40000
    gamma, stop, quit_p = 0.6, 0.25, 0.2
    log = simulate_cascade(np.ones(6, dtype=int), group=[6], click_prob=[0.0, gamma],
                           stop_prob=stop, abandon=quit_p, n_sessions=n_s, random_state=3)
    rate = log.click.reshape(n_s, 6).mean(axis=0)
    # after each read result the user goes on with probability (1 - gamma * stop) * (1 - a)
    expected = gamma * ((1 - gamma * stop) * (1 - quit_p)) ** np.arange(6)
    se = np.sqrt(expected * (1 - expected) / n_s)
    assert np.all(np.abs(rate - expected) <= 4 * se)


def test_issue_setting_accepts_scalar_probabilities_and_no_stop_after_a_click():
    log = simulate_cascade(np.zeros(5, dtype=int), group=[5], click_prob=1.0, stop_prob=0.0,
                           n_sessions=3, random_state=0)
    assert log.click.all()  # always clicked, never stopped


@pytest.mark.parametrize(("kwargs", "match"), [
    ({"abandon": 1.0}, r"abandon must be a probability in \[0, 1\)"),
    ({"abandon": -0.1}, "abandon must be >= 0.0"),
    ({"abandon": float("nan")}, "abandon must be finite"),
    ({"stop_prob": 1.5}, "stop_prob must be <= 1.0"),
    ({"click_prob": -0.2}, "click_prob must be >= 0.0"),
])
def test_simulate_cascade_rejects_bad_probabilities(kwargs, match):
    with pytest.raises(ValueError, match=match):
        simulate_cascade([1, 0], group=[2], **kwargs)


def test_simulate_cascade_rejects_a_non_number_abandon():
    with pytest.raises(TypeError, match="abandon must be a real number"):
        simulate_cascade([1, 0], group=[2], abandon="0.2")


# --------------------------------------------------------------------------- #
# Estimation: exact forward recursion and likelihood on tiny logs              #
# --------------------------------------------------------------------------- #


def _brute_force(clicks, lam_click, lam_skip, alpha):
    """P(read j | clicks above j) per row and P(clicks) of one list, by enumeration."""
    n = len(clicks)
    joint = np.zeros(n)  # P(read j, c_<j)
    marg = np.zeros(n)  # P(c_<j)
    total = 0.0
    for attractive in itertools.product([0, 1], repeat=n):
        p_a = np.prod([a if t else 1 - a for a, t in zip(alpha, attractive)])
        for stop in range(n):  # the last result read
            c = [attractive[j] if j <= stop else 0 for j in range(n)]
            p = p_a
            for j in range(stop):
                p *= lam_click[j] if c[j] else lam_skip[j]
            if stop < n - 1:
                p *= 1 - (lam_click[stop] if c[stop] else lam_skip[stop])
            for j in range(n):
                if c[:j] == list(clicks[:j]):
                    marg[j] += p
                    joint[j] += p * (j <= stop)
            if c == list(clicks):
                total += p
    return joint / marg, total


def test_propensities_and_likelihood_equal_enumeration_under_the_fitted_model():
    labels = np.array([3, 0, 2, 1])
    log = simulate_cascade(labels, group=[4], click_prob=[0.3, 0.5, 0.7, 0.9], stop_prob=0.3,
                           abandon=0.2, n_sessions=40, random_state=5)
    est = estimate_propensity_cascade(log, tol=1e-12, n_iter=20000)
    assert isinstance(est, CascadeEstimate) and est.n_sessions == 40
    alpha = est.attractiveness[np.searchsorted(est.doc, log.row)]
    lam_c = np.nan_to_num(est.continue_after_click, nan=0.5)
    lam_s = np.nan_to_num(est.continue_after_skip, nan=0.5)
    loglik = 0.0
    for a, b in zip(log.offsets[:-1], log.offsets[1:]):
        prop, p = _brute_force(log.click[a:b].tolist(), lam_c, lam_s, alpha[a:b])
        np.testing.assert_allclose(est.propensity[a:b], prop, rtol=1e-10, atol=1e-12)
        loglik += np.log(p)
    assert est.log_likelihood == pytest.approx(loglik, rel=1e-10)


def test_em_reaches_a_maximum_of_the_likelihood():
    labels = np.tile([3, 0, 2, 1], 5)
    log = simulate_cascade(labels, group=[4] * 5, click_prob=[0.3, 0.5, 0.7, 0.9],
                           stop_prob=0.3, abandon=0.2, n_sessions=30, random_state=1)
    best = estimate_propensity_cascade(log, tol=1e-12, n_iter=20000, smoothing=0.0)
    early = estimate_propensity_cascade(log, n_iter=2, smoothing=0.0)
    assert best.converged and not early.converged
    assert best.log_likelihood >= early.log_likelihood


# --------------------------------------------------------------------------- #
# Estimation: recovery of simulated parameters                                 #
# --------------------------------------------------------------------------- #


def _true_propensity(log, grades, lam_click, lam_skip):
    """P(read | clicks above) of the simulated model, row by row (closed-form recursion)."""
    out = np.empty(log.n_impressions)
    for a, b in zip(log.offsets[:-1], log.offsets[1:]):
        e = 1.0
        for i in range(a, b):
            out[i] = e
            al = CLICK[grades[log.row[i]]]
            e = lam_click if log.click[i] else lam_skip * e * (1 - al) / (1 - e * al)
    return out


def _issue_log(seed, stop=0.0, temperature=None, n_sessions=100):
    rng = np.random.default_rng(seed)
    grades = rng.integers(0, 5, 3000)
    logger = grades + rng.normal(scale=1.0, size=grades.size)  # sorted by one noisy feature
    log = simulate_cascade(grades, group=[10] * 300, logging_scores=logger,
                           temperature=temperature, click_prob=CLICK, stop_prob=stop,
                           abandon=0.2, n_sessions=n_sessions, random_state=seed)
    return grades, log


def _within(est, truth, n, slack):
    se = np.sqrt(truth * (1 - truth) / n)
    return np.abs(est - truth) <= 4 * se + slack


@pytest.mark.parametrize(("seed", "stop"), [(0, 0.0), (1, 0.0), (2, 0.5)])
def test_recovers_continuations_and_click_probabilities_under_a_fixed_logger(seed, stop):
    grades, log = _issue_log(seed, stop)
    est = estimate_propensity_cascade(log, n_ranks=1)
    assert est.converged and est.doc_reads.sum() <= log.n_impressions
    lam_c, lam_s = (1 - stop) * 0.8, 0.8
    assert _within(est.continue_after_click, lam_c, est.reads_after_click, 0.005).all()
    assert _within(est.continue_after_skip, lam_s, est.reads_after_skip, 0.005).all()
    doc_grade = grades[est.doc]
    for g in range(5):
        mine = (doc_grade == g) & (est.doc_reads >= 20)
        reads = est.doc_reads[mine].sum()  # pooled: clicks / expected reads of the grade
        pooled = (est.attractiveness[mine] * est.doc_reads[mine]).sum() / reads
        assert _within(pooled, CLICK[g], reads, 0.005)
    # per-row propensities against the true P(read | clicks above)
    true = _true_propensity(log, grades, lam_c, lam_s)
    gap = np.abs(est.propensity - true)
    assert gap.mean() <= 0.03 and np.quantile(gap, 0.99) <= 0.15


def test_per_rank_continuations_are_recovered_where_they_are_identified():
    _, log = _issue_log(3, temperature=1.0)
    est = estimate_propensity_cascade(log)
    assert est.continue_after_skip.shape == (9,)  # 10 positions: 9 transitions
    assert (est.reads_after_skip > 2000).all() and (est.reads_after_click > 2000).all()
    assert np.abs(est.continue_after_skip - 0.8).max() <= 0.05
    assert np.abs(est.continue_after_click - 0.8).max() <= 0.05


def test_ips_with_cascade_propensities_recovers_click_probabilities_where_naive_does_not():
    grades, log = _issue_log(4, n_sessions=60)
    est = estimate_propensity_cascade(log, n_ranks=1)
    g = grades[log.row]
    for grade in range(5):
        rows = g == grade
        # a row after a skipped document of estimated attractiveness 1 has propensity 0
        # (it cannot have been read) and no click: weight 0
        clicked = log.click[rows] != 0
        ips = np.zeros(rows.sum())
        ips[clicked] = 1.0 / est.propensity[rows][clicked]
        se = ips.std() / np.sqrt(rows.sum())
        assert abs(ips.mean() - CLICK[grade]) <= 4 * se + 0.01
        assert log.click[rows].mean() < CLICK[grade] - 0.1  # naive: far below


# --------------------------------------------------------------------------- #
# Log layout and arrays                                                        #
# --------------------------------------------------------------------------- #


def test_arrays_in_any_row_order_equal_the_log():
    _, log = _issue_log(5, n_sessions=8)
    a = estimate_propensity_cascade(log, n_ranks=3)
    qid = np.repeat(np.arange(log.offsets.size - 1), np.diff(log.offsets))
    b = estimate_propensity_cascade(log.click, log.position, log.row, qid=qid, n_ranks=3)
    np.testing.assert_allclose(b.propensity, a.propensity, rtol=1e-12)
    # rows shuffled within each list: the positions say the displayed order
    rng = np.random.default_rng(0)
    perm = np.concatenate([a0 + rng.permutation(b0 - a0)
                           for a0, b0 in zip(log.offsets[:-1], log.offsets[1:])])
    c = estimate_propensity_cascade(log.click[perm], log.position[perm], log.row[perm],
                                    offsets=log.offsets, n_ranks=3)
    np.testing.assert_allclose(c.propensity, a.propensity[perm], rtol=1e-12)
    np.testing.assert_allclose(c.continue_after_skip, a.continue_after_skip, rtol=1e-12)
    # string document ids
    d = estimate_propensity_cascade(log.click, log.position, log.row.astype(str), qid=qid,
                                    n_ranks=3)  # the same fit; codes in another order
    np.testing.assert_allclose(d.propensity, a.propensity, atol=1e-5)  # within EM's tol
    assert a.propensity[log.position == 1].tolist() == [1.0] * (log.offsets.size - 1)


@pytest.mark.parametrize(("call", "exc", "match"), [
    (lambda log: estimate_propensity_cascade(log, n_ranks=0), ValueError, "n_ranks must be >= 1"),
    (lambda log: estimate_propensity_cascade(log, n_iter=0), ValueError, "n_iter must be >= 1"),
    (lambda log: estimate_propensity_cascade(log, tol=-1.0), ValueError, "tol must be >= 0"),
    (lambda log: estimate_propensity_cascade(log, smoothing=-1.0), ValueError,
     "smoothing must be >= 0"),
    (lambda log: estimate_propensity_cascade(log, log.position), ValueError,
     "pass a ClickLog alone"),
    (lambda log: estimate_propensity_cascade(log.click * 2, log.position, log.row,
                                             offsets=log.offsets), ValueError,
     "click must hold clicks 0 or 1"),
    (lambda log: estimate_propensity_cascade(log.click, log.position, log.row[:-1],
                                             offsets=log.offsets), ValueError,
     "doc must have one entry per row"),
    (lambda log: estimate_propensity_cascade(log.click, None, log.row, offsets=log.offsets),
     TypeError, "position is required"),
    (lambda log: estimate_propensity_cascade(log.click, log.position, log.row), TypeError,
     "the displayed lists are missing"),
    (lambda log: estimate_propensity_cascade(log.click, log.position + 1, log.row,
                                             offsets=log.offsets), ValueError,
     "position must run 1..n within each query"),
])
def test_estimate_propensity_cascade_rejects_bad_input(call, exc, match):
    log = simulate_cascade([2, 1, 0, 1], group=[2, 2], n_sessions=3, random_state=0)
    with pytest.raises(exc, match=match):
        call(log)


def test_config_simulates_cascade_clicks_with_abandonment():
    from ltr.runs.config import parse_config
    from ltr.runs.data import load_data

    raw = {"data": {"synthetic": {"n_queries": 12, "n_features": 3, "mean_docs": 6, "max_docs": 8,
                                  "clicks": {"model": "cascade", "abandon": 0.5,
                                             "sessions": 200}}}}
    sets = load_data(parse_config(raw))
    ds = sets["train"]
    est = estimate_propensity_cascade(ds.click, ds.position, ds.doc, offsets=ds.offsets,
                                      n_ranks=1)
    # with abandonment 0.5, the continuation after a skip is about 0.5 (200 sessions x 7 queries)
    assert abs(est.continue_after_skip[0] - 0.5) <= 4 * np.sqrt(0.25 / est.reads_after_skip[0])
    raw["data"]["synthetic"]["clicks"]["model"] = "pbm"
    with pytest.raises(ValueError, match="abandonment is part of the cascade model"):
        parse_config(raw)


def _fits_on_one_and_all_threads(log):
    """``estimate_propensity_cascade(log)`` with numba on one thread, then on all of them."""
    import numba

    threads = numba.get_num_threads()
    try:
        numba.set_num_threads(1)
        one = estimate_propensity_cascade(log)
    finally:
        numba.set_num_threads(threads)
    return one, estimate_propensity_cascade(log)


def test_fit_does_not_depend_on_the_number_of_threads():
    labels = np.random.default_rng(4).integers(0, 5, 600)
    log = simulate_cascade(labels, group=[10] * 60, logging_scores=labels + 0.5 * np.arange(600) % 3,
                           temperature=1.0, click_prob=[0.4, 0.6, 0.7, 0.8, 0.9], stop_prob=0.0,
                           abandon=0.2, n_sessions=10, random_state=4)
    one, many = _fits_on_one_and_all_threads(log)
    assert one.n_iter == many.n_iter
    np.testing.assert_array_equal(one.propensity, many.propensity)
    np.testing.assert_array_equal(one.attractiveness, many.attractiveness)


def test_threaded_sweeps_give_the_fit_of_one_thread():
    # Enough sessions that attractiveness-only sweeps reach 2,048+ template rows of their
    # documents (they then list, recompute and update on threads: 15 such sweeps per fit here,
    # counted once with a print in _partial);
    # a Plackett-Luce logger makes every session its own template.
    from ltr.kernels import _cascade

    n_lists = 3000
    labels = np.random.default_rng(5).integers(0, 5, 10 * n_lists)
    log = simulate_cascade(labels, group=[10] * n_lists, logging_scores=labels.astype(float),
                           temperature=1.0, click_prob=[0.4, 0.6, 0.7, 0.8, 0.9], stop_prob=0.0,
                           abandon=0.2, n_sessions=8, random_state=5)
    assert log.offsets.size - 1 >= 2 * _cascade._PAR_MIN
    one, many = _fits_on_one_and_all_threads(log)
    assert one.converged and one.n_iter == many.n_iter
    np.testing.assert_array_equal(one.propensity, many.propensity)
    np.testing.assert_array_equal(one.attractiveness, many.attractiveness)
    np.testing.assert_array_equal(one.doc_reads, many.doc_reads)


# --------------------------------------------------------------------------- #
# Acceleration: the same fixed point as plain EM                               #
# --------------------------------------------------------------------------- #


def _plain_em(log, n_ranks, n_iter):
    """Unaccelerated DCM EM over sessions of equal length, by enumerating where each stopped.

    Returns ``(lam_click, lam_skip, alpha per row id, log-likelihood)``.
    """
    n = int(np.diff(log.offsets)[0])
    c = log.click.reshape(-1, n).astype(float)
    d = log.row.reshape(-1, n)
    rank = np.minimum(np.arange(n - 1), n_ranks - 1)
    last = np.where(c.any(axis=1), n - 1 - np.argmax(c[:, ::-1], axis=1), 0)
    alpha = np.full(log.row.max() + 1, 0.5)
    lam = np.full((2, n_ranks), 0.5)  # [skip, click]
    for _ in range(n_iter):
        a = alpha[d]
        emit = np.log(np.where(c > 0, a, 1 - a))
        go = np.log(lam[c[:, :-1].astype(int), rank])
        stop = np.log1p(-lam[c[:, :-1].astype(int), rank])
        # log P(clicks, last read = t): emissions and continuations up to t, then a stop
        head = np.cumsum(emit, axis=1) + np.concatenate(
            [np.zeros((c.shape[0], 1)), np.cumsum(go, axis=1)], axis=1)
        joint = head + np.concatenate([stop, np.zeros((c.shape[0], 1))], axis=1)
        joint[np.arange(n)[None, :] < last[:, None]] = -np.inf
        loglik = np.logaddexp.reduce(joint, axis=1)
        post = np.exp(joint - loglik[:, None])  # P(last read = t | clicks)
        read = post[:, ::-1].cumsum(axis=1)[:, ::-1]  # P(row j read | clicks)
        alpha = (np.bincount(d.ravel(), c.ravel(), alpha.size)
                 / np.bincount(d.ravel(), read.ravel(), alpha.size))
        state = c[:, :-1].astype(int) * n_ranks + rank
        seen = np.bincount(state.ravel(), read[:, :-1].ravel(), 2 * n_ranks)
        went = np.bincount(state.ravel(), read[:, 1:].ravel(), 2 * n_ranks)
        lam = (went / seen).reshape(2, n_ranks)
    return lam[1], lam[0], alpha, loglik.sum()


def test_accelerated_em_reaches_the_fixed_point_of_plain_em():
    # stated tolerances: the same log-likelihood within 1e-9 relative, every continuation
    # and attractiveness within 1e-5 (plain EM run 3,000 updates; interior optimum: each
    # document read about 100 times, every position shown under a Plackett-Luce logger)
    rng = np.random.default_rng(7)
    labels = rng.integers(0, 5, 40)
    log = simulate_cascade(labels, group=[4] * 10, logging_scores=labels.astype(float),
                           temperature=1.0, click_prob=[0.3, 0.4, 0.5, 0.6, 0.7],
                           stop_prob=0.2, abandon=0.3, n_sessions=150, random_state=7)
    lam_click, lam_skip, alpha, loglik = _plain_em(log, 3, 3000)
    est = estimate_propensity_cascade(log, tol=1e-10, n_iter=5000)
    assert est.converged
    assert est.log_likelihood == pytest.approx(loglik, rel=1e-9)
    np.testing.assert_allclose(est.continue_after_click, lam_click, atol=1e-5)
    np.testing.assert_allclose(est.continue_after_skip, lam_skip, atol=1e-5)
    np.testing.assert_allclose(est.attractiveness, alpha[est.doc], atol=1e-5)

"""Weighted top-k pair sampling: unbiasedness, reproducibility, training, errors."""

from __future__ import annotations

import lightgbm as lgb
import numba
import numpy as np
import pytest

from ltr.metrics import ndcg
from ltr.objectives import LambdaRankObjective
from ltr.objectives.sampling import TopKPairSampling, round_seed


def _queries(seed, n_queries=12, max_docs=30):
    rng = np.random.default_rng(seed)
    sizes = rng.integers(2, max_docs + 1, size=n_queries)
    offsets = np.concatenate(([0], np.cumsum(sizes))).astype(np.int64)
    n = int(offsets[-1])
    labels = rng.choice([0.0, 0.0, 0.0, 1.0, 2.0, 3.5], size=n)
    scores = rng.normal(size=n)
    return scores, labels, offsets


@pytest.mark.parametrize(
    "k, top, head_weight, m",
    [(5, 3, 2.0, 2), (10, 10, 3.0, 1), (4, 8, 1.5, 3), (50, 2, 5.0, 2)],
    ids=["top<k", "top=k", "top>k", "k>n"],
)
def test_sampled_gradient_is_unbiased_for_weighted_all_pairs(k, top, head_weight, m):
    scores, labels, offsets = _queries(1)
    exact = LambdaRankObjective(
        k=k, norm=False, sampling=TopKPairSampling(top=top, head_weight=head_weight)
    )
    want_g, want_h = exact.gradients(scores, labels, offsets)
    sampled = LambdaRankObjective(
        k=k, norm=False,
        sampling=TopKPairSampling(top=top, head_weight=head_weight, pairs_per_doc=m,
                                  random_state=123),
    )
    reps = 3000
    gs = np.empty((reps, len(scores)))
    hs = np.empty((reps, len(scores)))
    for it in range(reps):
        gs[it], hs[it] = sampled.gradients(scores, labels, offsets, iteration=it)
    for draws, want in ((gs, want_g), (hs, want_h)):
        mean = draws.mean(axis=0)
        se = draws.std(axis=0, ddof=1) / np.sqrt(reps)
        z = np.abs(mean - want) / np.maximum(se, 1e-15)
        assert np.all((z < 5.0) | (np.abs(mean - want) < 1e-12)), z.max()
        # and the estimator is not degenerate: its draws actually vary
        assert se.max() > 0
    # the overall relative error of the averaged gradient is small
    rel = np.linalg.norm(gs.mean(axis=0) - want_g) / np.linalg.norm(want_g)
    assert rel < 0.05


def test_sampling_is_reproducible_per_round_and_thread_independent():
    # > 20,000 rows: the parallel kernel driver runs (the serial one below that)
    scores, labels, offsets = _queries(2, n_queries=1500, max_docs=40)
    assert offsets[-1] > 20_000
    sampling = TopKPairSampling(top=5, pairs_per_doc=3, random_state=7)
    a = LambdaRankObjective(k=10, sampling=sampling).gradients(scores, labels, offsets, 4)
    b = LambdaRankObjective(k=10, sampling=TopKPairSampling(top=5, pairs_per_doc=3,
                                                             random_state=7)).gradients(
        scores, labels, offsets, 4)
    np.testing.assert_array_equal(a[0], b[0])
    c = LambdaRankObjective(k=10, sampling=sampling).gradients(scores, labels, offsets, 5)
    assert not np.array_equal(a[0], c[0])
    threads = numba.get_num_threads()
    try:
        numba.set_num_threads(1)
        d = LambdaRankObjective(k=10, sampling=sampling).gradients(scores, labels, offsets, 4)
    finally:
        numba.set_num_threads(threads)
    np.testing.assert_array_equal(a[0], d[0])
    np.testing.assert_array_equal(a[1], d[1])
    all_pairs = LambdaRankObjective(k=10, sampling=TopKPairSampling(top=5))
    f = all_pairs.gradients(scores, labels, offsets)
    try:
        numba.set_num_threads(1)
        g = all_pairs.gradients(scores, labels, offsets)
    finally:
        numba.set_num_threads(threads)
    np.testing.assert_array_equal(f[0], g[0])
    # objective's random_state is the fallback seed
    e = LambdaRankObjective(k=10, sampling=TopKPairSampling(top=5, pairs_per_doc=3),
                            random_state=7).gradients(scores, labels, offsets, 4)
    np.testing.assert_array_equal(a[0], e[0])


def test_gradients_do_not_depend_on_the_previous_call():
    # each call starts its sort from the previous call's order: small moves,
    # big moves (fallback to a full sort), ties and a changed k must all give
    # exactly the gradients of a fresh objective
    scores, labels, offsets = _queries(5, n_queries=60, max_docs=60)
    rng = np.random.default_rng(0)
    ties = np.round(scores * 2) / 2
    sequence = [scores, scores + 0.01 * rng.normal(size=len(scores)), rng.normal(size=len(scores)),
                ties, ties[::-1].copy(), scores]
    for sampling in (TopKPairSampling(top=4, pairs_per_doc=3, random_state=1),
                     TopKPairSampling(top=4, head_weight=3.0)):
        warm = LambdaRankObjective(k=7, sampling=sampling)
        for it, sc in enumerate(sequence):
            got = warm.gradients(sc, labels, offsets, iteration=it)
            fresh = LambdaRankObjective(k=7, sampling=sampling).gradients(
                sc, labels, offsets, iteration=it)
            np.testing.assert_array_equal(got[0], fresh[0])
            np.testing.assert_array_equal(got[1], fresh[1])
    # new offsets with the same number of rows: the old order is not reused
    other = np.array([0, 5, len(scores)], dtype=np.int64)
    got = warm.gradients(scores, labels, other)
    fresh = LambdaRankObjective(k=7, sampling=TopKPairSampling(top=4, head_weight=3.0))
    np.testing.assert_array_equal(got[0], fresh.gradients(scores, labels, other)[0])


def test_sampled_lookup_table_mode_draws_the_same_pairs_as_exact_mode():
    # the per-pair sigmoid path (lookup table, float32 sums) and the exact
    # path share the draws: same seed, gradients agree to the table's precision
    scores, labels, offsets = _queries(6, n_queries=30, max_docs=40)
    for top, k in ((3, 10), (10, 10), (12, 5)):
        sampling = TopKPairSampling(top=top, head_weight=2.5, pairs_per_doc=4, random_state=3)
        g1, h1 = LambdaRankObjective(k=k, sampling=sampling).gradients(scores, labels, offsets, 2)
        g2, h2 = LambdaRankObjective(k=k, sampling=sampling, sigmoid="lightgbm").gradients(
            scores, labels, offsets, 2)
        np.testing.assert_allclose(g2, g1, rtol=1e-3, atol=1e-6)
        np.testing.assert_allclose(h2, h1, rtol=1e-3, atol=1e-6)
        assert np.array_equal(g2, g2.astype(np.float32))


def test_sampled_composite_with_a_zero_weight_objective_equals_single_objective():
    from ltr.objectives import CompositeLambdaRankObjective

    scores, labels, offsets = _queries(8)
    other = np.where(labels > 0, 0.0, 1.0)
    sampling = TopKPairSampling(top=3, pairs_per_doc=2, random_state=4)
    single = LambdaRankObjective(k=6, sampling=sampling).gradients(scores, labels, offsets, 1)
    comp = CompositeLambdaRankObjective({"a": 1.0, "b": 0.0}, {"a": labels, "b": other}, k=6,
                                        sampling=sampling).gradients(scores, None, offsets, 1)
    np.testing.assert_array_equal(single[0], comp[0])
    np.testing.assert_array_equal(single[1], comp[1])


def test_round_seed_depends_on_seed_and_round():
    assert round_seed(1, 0) == round_seed(1, 0)
    assert len({int(round_seed(s, i)) for s in range(3) for i in range(3)}) == 9


def test_head_weight_one_without_sampling_equals_plain_objective():
    scores, labels, offsets = _queries(3)
    plain = LambdaRankObjective(k=8).gradients(scores, labels, offsets)
    weighted = LambdaRankObjective(
        k=8, sampling=TopKPairSampling(top=3, head_weight=1.0)
    ).gradients(scores, labels, offsets)
    np.testing.assert_array_equal(plain[0], weighted[0])
    np.testing.assert_array_equal(plain[1], weighted[1])


def test_queries_with_one_grade_get_zero_sampled_gradient():
    scores = np.array([0.5, 0.1, 0.9, 0.3, 0.2])
    labels = np.array([1.0, 1.0, 1.0, 0.0, 2.0])
    offsets = np.array([0, 3, 5])
    obj = LambdaRankObjective(k=5, sampling=TopKPairSampling(pairs_per_doc=4, random_state=0))
    grad, hess = obj.gradients(scores, labels, offsets)
    assert np.all(grad[:3] == 0) and np.all(hess[:3] == 0)
    assert grad[4] < 0 < grad[3]


def test_sampled_objective_trains_on_long_queries():
    rng = np.random.default_rng(4)
    sizes = np.array([3000, 2000, 400, 600])
    n = int(sizes.sum())
    X = rng.normal(size=(n, 6))
    y = np.clip(np.round(X[:, 0] + 0.7 * X[:, 2] + rng.normal(scale=0.7, size=n) + 0.5), 0, 4)
    obj = LambdaRankObjective(
        k=20, sampling=TopKPairSampling(top=10, pairs_per_doc=4, random_state=0)
    )
    booster = lgb.train(
        {"objective": obj, "num_leaves": 15, "num_threads": 1, "verbose": -1, "seed": 0},
        lgb.Dataset(X, y, group=sizes), num_boost_round=15,
    )
    assert obj.iteration == 0  # lightgbm.train deep-copies its params and counts on its copy
    before = ndcg(y, np.zeros(n), group=sizes, k=10, ties="pessimistic")
    after = ndcg(y, booster.predict(X), group=sizes, k=10)
    assert after > before + 0.2


@pytest.mark.parametrize(
    "kwargs, error, match",
    [
        ({"top": 0}, ValueError, r"top must be >= 1, got 0"),
        ({"head_weight": 0.99}, ValueError, r"head_weight must be >= 1.0, got 0.99"),
        ({"head_weight": float("nan")}, ValueError, r"head_weight must be finite, got nan"),
        ({"pairs_per_doc": 0}, ValueError, r"pairs_per_doc must be >= 1, got 0"),
        ({"pairs_per_doc": 2.5}, TypeError, r"pairs_per_doc must be an integer, got 2.5"),
        ({"random_state": -3}, ValueError, r"random_state must be >= 0, got -3"),
        ({"random_state": "seed"}, TypeError, r"random_state must be None, an int"),
    ],
)
def test_sampling_rejects_bad_arguments(kwargs, error, match):
    with pytest.raises(error, match=match):
        TopKPairSampling(**kwargs)


def test_repr_rebuilds_the_call():
    s = TopKPairSampling(top=10, head_weight=3.0, pairs_per_doc=8, random_state=0)
    assert repr(s) == "TopKPairSampling(top=10, head_weight=3.0, pairs_per_doc=8, random_state=0)"
    assert s.kernel_args() == (10, 3.0, 8)
    assert TopKPairSampling().kernel_args() == (20, 2.0, 0)

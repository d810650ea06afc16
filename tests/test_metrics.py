"""nDCG core: closed forms, a naive reference, invariances and every error path."""

from __future__ import annotations

import math
import pickle

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ltr.metrics import MetricValue, cg, dcg, idcg, ndcg
from ltr.metrics.composite import composite_ndcg, ndcg_by_segment, smooth
from ltr.testing import log2_discount, naive_ndcg

# ---------------------------------------------------------------------------
# naive reference: one query at a time, plain Python, ties by enumeration
# (ltr.testing.naive_ndcg; the names below are the ones these tests use)
# ---------------------------------------------------------------------------

naive_ndcg_query = naive_ndcg


# ---------------------------------------------------------------------------
# closed forms
# ---------------------------------------------------------------------------


def test_seed_example_linear_gain_ndcg_at_3_is_0_81():
    # grades [3, 2, 0, 1, 2] ranked as given.
    dcg3 = 3 + 2 / math.log2(3) + 0
    idcg3 = 3 + 2 / math.log2(3) + 2 / 2
    value = ndcg([3, 2, 0, 1, 2], [5, 4, 3, 2, 1], group=[5], k=3, gain="linear")
    assert value == pytest.approx(dcg3 / idcg3, abs=1e-15)
    assert round(value, 2) == 0.81


def test_single_relevant_document_at_position_two_scores_inverse_log2_3():
    value = ndcg([0, 1, 0], [3, 2, 1], group=[3], k=None)
    assert value == pytest.approx(1 / math.log2(3), abs=1e-15)


def test_log2_plus_one_discount_is_sharper():
    value = dcg([0, 1], [2, 1], group=[2], k=None, gain="linear", discount="log2_plus_one")
    assert value == pytest.approx(1 / (math.log2(2) + 1), abs=1e-15)


def test_tie_modes_on_one_tied_pair_closed_forms():
    labels, scores = [1, 0], [0.5, 0.5]
    half = (1 + 1 / math.log2(3)) / 2
    assert ndcg(labels, scores, group=[2], k=None, ties="average") == pytest.approx(half)
    assert ndcg(labels, scores, group=[2], k=None, ties="stable") == 1.0
    assert ndcg(labels, scores, group=[2], k=None, ties="pessimistic") == pytest.approx(1 / math.log2(3))
    assert ndcg(labels, scores, group=[2], k=None, ties="optimistic") == 1.0
    # trec_eval: doc id descending among ties -> "b" before "a".
    assert ndcg(labels, scores, group=[2], k=None, ties="doc_id_desc", doc_ids=["a", "b"]) == pytest.approx(
        1 / math.log2(3)
    )


def test_averaged_tie_group_straddling_the_cutoff_uses_the_whole_group():
    # Three docs tied; k=1: expected gain at position 1 is the group's mean gain.
    labels = [3, 0, 0, 1]
    scores = [1.0, 1.0, 1.0, 0.0]
    gains = [2**x - 1 for x in labels]
    expected = (sum(gains[:3]) / 3) / max(gains)
    assert ndcg(labels, scores, group=[4], k=1, ties="average") == pytest.approx(expected, abs=1e-15)


def test_k_beyond_query_length_means_the_whole_query():
    y, s = [2, 0, 1], [0.1, 0.3, 0.2]
    assert ndcg(y, s, group=[3], k=50) == ndcg(y, s, group=[3], k=None)


def test_k_list_returns_a_dict_keyed_by_k():
    y, s = [2, 0, 1, 1], [0.1, 0.3, 0.2, 0.0]
    out = ndcg(y, s, group=[4], k=[1, 3])
    assert set(out) == {1, 3}
    assert out[1] == ndcg(y, s, group=[4], k=1)
    assert out[3] == ndcg(y, s, group=[4], k=3)


def test_empty_query_skip_counts_and_numbers():
    y = [0, 0, 1, 0]
    s = [1, 2, 1, 2]
    skipped = ndcg(y, s, group=[2, 2], k=None, empty="skip")
    assert isinstance(skipped, MetricValue)
    assert (skipped.n_queries, skipped.n_skipped) == (1, 1)
    per = ndcg(y, s, group=[2, 2], k=None, reduce=None)
    assert np.isnan(per[0]) and per[1] == pytest.approx(1 / math.log2(3))
    assert ndcg(y, s, group=[2, 2], k=None, empty=1.0) == pytest.approx((1 + 1 / math.log2(3)) / 2)
    assert ndcg(y, s, group=[2, 2], k=None, empty=0.0) == pytest.approx((0 + 1 / math.log2(3)) / 2)


def test_all_queries_empty_with_skip_is_nan():
    value = ndcg([0, 0], [1, 2], group=[2], empty="skip")
    assert math.isnan(value) and value.n_skipped == 1


def test_weights_make_a_weighted_mean():
    y = [1, 0, 0, 1]
    s = [1, 0, 1, 0]
    per = ndcg(y, s, group=[2, 2], k=None, reduce=None)
    assert ndcg(y, s, group=[2, 2], k=None, weights=[3, 1]) == pytest.approx((3 * per[0] + per[1]) / 4)


def test_gain_table_and_callable_gain_match_exp2():
    rng = np.random.default_rng(0)
    y = rng.integers(0, 5, 40).astype(float)
    s = rng.normal(size=40)
    base = ndcg(y, s, group=[10, 30], k=5, gain="exp2")
    assert ndcg(y, s, group=[10, 30], k=5, gain=[0, 1, 3, 7, 15]) == pytest.approx(base, abs=1e-15)
    assert ndcg(y, s, group=[10, 30], k=5, gain=lambda l: 2.0**l - 1) == pytest.approx(base, abs=1e-15)


def test_discount_array_and_callable_match_log2():
    rng = np.random.default_rng(1)
    y = rng.integers(0, 5, 30).astype(float)
    s = rng.normal(size=30)
    base = ndcg(y, s, group=[30], k=10)
    table = 1 / np.log2(np.arange(2, 40))
    assert ndcg(y, s, group=[30], k=10, discount=table) == pytest.approx(base, abs=1e-15)
    assert ndcg(y, s, group=[30], k=10, discount=lambda i: 1 / np.log2(i + 1)) == pytest.approx(base, abs=1e-15)


def test_dcg_idcg_cg_relations():
    rng = np.random.default_rng(2)
    y = rng.integers(0, 5, 50).astype(float)
    s = rng.normal(size=50)
    g = [20, 30]
    d = dcg(y, s, group=g, k=7, reduce=None)
    i = idcg(y, group=g, k=7, reduce=None)
    n = ndcg(y, s, group=g, k=7, reduce=None)
    np.testing.assert_allclose(d / i, n, rtol=0, atol=1e-15)
    top = np.argsort(-s[:20], kind="stable")[:7]
    assert cg(y[:20], s[:20], group=[20], k=7, ties="stable") == pytest.approx(
        float(np.sum(2.0 ** y[:20][top] - 1))
    )


def test_float_grades_work_with_exp2_and_linear():
    y = [0.5, 2.25, 1.0]
    s = [3, 2, 1]
    ref = naive_ndcg_query(y, s, None, gain=lambda l: 2**l - 1, discount=log2_discount, ties="stable", empty=0)
    assert ndcg(y, s, group=[3], k=None) == pytest.approx(ref, abs=1e-14)


def test_metric_value_pickles_with_its_counts():
    v = ndcg([0, 0, 1, 0], [1, 2, 1, 2], group=[2, 2], k=None)
    w = pickle.loads(pickle.dumps(v))
    assert float(w) == float(v) and w.n_skipped == 1 and w.n_queries == 1


# ---------------------------------------------------------------------------
# naive reference on random data (all tie modes, long and short queries)
# ---------------------------------------------------------------------------


@pytest.mark.parametrize("ties", ["stable", "pessimistic", "optimistic", "average"])
@pytest.mark.parametrize("k", [1, 3, 5, None])
def test_kernel_matches_naive_reference_on_tied_random_queries(ties, k):
    rng = np.random.default_rng(3)
    sizes = rng.integers(1, 8, size=25)  # small enough to enumerate tie orders
    n = int(sizes.sum())
    y = rng.integers(0, 4, n).astype(float)
    s = rng.integers(0, 3, n).astype(float)  # heavy ties
    got = ndcg(y, s, group=sizes, k=k, ties=ties, empty=0.0, reduce=None)
    offs = np.r_[0, np.cumsum(sizes)]
    for q in range(len(sizes)):
        a, b = offs[q], offs[q + 1]
        ref = naive_ndcg_query(list(y[a:b]), list(s[a:b]), k, gain=lambda l: 2**l - 1,
                               discount=log2_discount, ties=ties, empty=0.0)
        assert got[q] == pytest.approx(ref, abs=1e-12), (q, sizes[q])


@pytest.mark.parametrize("ties", ["stable", "pessimistic", "optimistic"])
def test_buffer_and_full_sort_paths_agree_on_long_queries(ties):
    # k=5 uses the insertion buffer, k=None a full sort: both must equal the naive order.
    rng = np.random.default_rng(4)
    sizes = np.array([500, 3, 1200])
    y = rng.integers(0, 5, sizes.sum()).astype(float)
    s = np.round(rng.normal(size=sizes.sum()), 1)
    offs = np.r_[0, np.cumsum(sizes)]
    for k in (5, 60, None):
        got = ndcg(y, s, group=sizes, k=k, ties=ties, reduce=None)
        for q in range(3):
            a, b = offs[q], offs[q + 1]
            ref = naive_ndcg_query(list(y[a:b]), list(s[a:b]), k, gain=lambda l: 2**l - 1,
                                   discount=log2_discount, ties=ties, empty=np.nan)
            assert got[q] == pytest.approx(ref, abs=1e-12)


# ---------------------------------------------------------------------------
# properties
# ---------------------------------------------------------------------------

_query = st.lists(
    st.tuples(st.integers(0, 4), st.integers(-3, 3)), min_size=1, max_size=30
)


@settings(max_examples=60, deadline=None)
@given(st.lists(_query, min_size=1, max_size=6), st.sampled_from([1, 3, 10, None]),
       st.sampled_from(["average", "stable", "pessimistic", "optimistic"]))
def test_ndcg_is_between_0_and_1_and_ideal_order_scores_1(queries, k, ties):
    y = np.array([l for q in queries for l, _ in q], dtype=float)
    s = np.array([v for q in queries for _, v in q], dtype=float)
    sizes = [len(q) for q in queries]
    per = ndcg(y, s, group=sizes, k=k, ties=ties, reduce=None)
    finite = per[~np.isnan(per)]
    assert np.all(finite >= -1e-12) and np.all(finite <= 1 + 1e-12)
    ideal = ndcg(y, y, group=sizes, k=k, ties="pessimistic", reduce=None)
    assert np.allclose(ideal[~np.isnan(ideal)], 1.0, atol=1e-12)


@settings(max_examples=40, deadline=None)
@given(st.lists(_query, min_size=2, max_size=6), st.randoms(use_true_random=False))
def test_ndcg_is_invariant_to_query_order_and_increasing_score_maps(queries, rnd):
    sizes = [len(q) for q in queries]
    y = np.array([l for q in queries for l, _ in q], dtype=float)
    s = np.array([v for q in queries for _, v in q], dtype=float)
    base = ndcg(y, s, group=sizes, k=5, reduce=None)
    # strictly increasing map of scores
    np.testing.assert_allclose(ndcg(y, np.exp(s) * 3 + 1000, group=sizes, k=5, reduce=None), base,
                               atol=1e-12)
    # shuffle whole queries
    perm = list(range(len(queries)))
    rnd.shuffle(perm)
    offs = np.r_[0, np.cumsum(sizes)]
    rows = np.concatenate([np.arange(offs[q], offs[q + 1]) for q in perm])
    shuffled = ndcg(y[rows], s[rows], group=[sizes[q] for q in perm], k=5, reduce=None)
    np.testing.assert_allclose(shuffled, base[perm], atol=1e-12)


# ---------------------------------------------------------------------------
# composite, segments, smoothing
# ---------------------------------------------------------------------------


def test_composite_ndcg_is_the_weighted_sum_of_each_objective():
    rng = np.random.default_rng(5)
    n = 60
    labels = {"watch": rng.integers(0, 4, n), "share": rng.integers(0, 3, n), "follow": rng.integers(0, 4, n)}
    s = rng.normal(size=n)
    g = [20, 25, 15]
    out = composite_ndcg(labels, s, group=g, weights={"watch": 0.6, "share": 0.25, "follow": 0.15},
                         k=5, gains={"share": "linear"}, empty=0.0)
    w = ndcg(labels["watch"], s, group=g, k=5, empty=0.0)
    sh = ndcg(labels["share"], s, group=g, k=5, gain="linear", empty=0.0)
    f = ndcg(labels["follow"], s, group=g, k=5, empty=0.0)
    assert out.per_objective == pytest.approx({"watch": w, "share": sh, "follow": f}, abs=1e-15)
    assert out.total == pytest.approx(0.6 * w + 0.25 * sh + 0.15 * f, abs=1e-15)
    assert out.to_dict()["composite"] == out.total


def test_composite_ndcg_rejects_bad_weights_and_missing_columns():
    labels = {"a": [1, 0], "b": [0, 1]}
    with pytest.raises(ValueError, match=r"weights\['a'\] must be a finite weight >= 0, got -1"):
        composite_ndcg(labels, [1, 2], group=[2], weights={"a": -1, "b": 1})
    with pytest.raises(ValueError, match="must not all be zero"):
        composite_ndcg(labels, [1, 2], group=[2], weights={"a": 0, "b": 0})
    with pytest.raises(ValueError, match="'c'"):
        composite_ndcg(labels, [1, 2], group=[2], weights={"c": 1})


def test_ndcg_by_segment_groups_queries_and_smooths_toward_global_mean():
    y = np.array([1, 0, 0, 1, 1, 0, 2, 0], dtype=float)
    s = np.array([2, 1, 2, 1, 2, 1, 2, 1], dtype=float)
    seg = np.array(["a", "a", "b", "b", "a", "a", "a", "a"])
    table = ndcg_by_segment(y, s, group=[2, 2, 2, 2], segments=seg, k=None, strength=2.0)
    per = ndcg(y, s, group=[2, 2, 2, 2], k=None, reduce=None)
    row_a = table[table.segment == "a"].iloc[0]
    assert row_a.queries == 3 and row_a.ndcg == pytest.approx(per[[0, 2, 3]].mean())
    glob = per.mean()
    assert row_a.ndcg_smoothed == pytest.approx((3 * row_a.ndcg + 2 * glob) / 5)


def test_ndcg_by_segment_rejects_segments_that_vary_inside_a_query():
    with pytest.raises(ValueError, match="constant within each query"):
        ndcg_by_segment([1, 0], [1, 0], group=[2], segments=["a", "b"])


def test_smooth_closed_form_and_errors():
    np.testing.assert_allclose(smooth([1.0, 0.0], [1, 3], strength=1.0, prior=0.5), [0.75, 0.125])
    np.testing.assert_allclose(smooth([1.0, 0.0], [1, 3], strength=0.0), [1.0, 0.0])
    with pytest.raises(ValueError, match="strength must be >= 0"):
        smooth([1.0], [1], strength=-1)
    with pytest.raises(ValueError, match="counts must be >= 0"):
        smooth([1.0], [-1], strength=1)


# ---------------------------------------------------------------------------
# error paths
# ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    "kwargs, exc, match",
    [
        (dict(y_true=[np.nan, 1], y_score=[1, 2]), ValueError, r"y_true must be finite.*nan"),
        (dict(y_true=[0, 1], y_score=[np.inf, 2]), ValueError, r"y_score must be finite.*inf"),
        (dict(y_true=[-1, 1], y_score=[1, 2]), ValueError, r"y_true must be >= 0 with gain='exp2'.*-1"),
        (dict(y_true=[0, 1], y_score=[1, 2], k=0), ValueError, r"k must be >= 1, got 0"),
        (dict(y_true=[0, 1], y_score=[1, 2], k=[3, 0]), ValueError, r"k\[1\] must be >= 1, got 0"),
        (dict(y_true=[0, 1], y_score=[1, 2], k=2.5), TypeError, r"k must be an integer, got 2.5"),
        (dict(y_true=[], y_score=[]), ValueError, r"y_true is empty"),
        (dict(y_true=[0, 1], y_score=[1, 2, 3]), ValueError, r"y_score has 3 rows but y_true has 2"),
        (dict(y_true=[0, 1], y_score=[1, 2], group=[3]), ValueError, r"group sizes sum to 3"),
        (dict(y_true=[0, 5], y_score=[1, 2], gain=[0, 1, 3]), ValueError, r"y_true\[1\] = 5.0 is not a label"),
        (dict(y_true=[0, 1], y_score=[1, 2], gain="cubic"), ValueError, r"gain must be .*'cubic'"),
        (dict(y_true=[0, 1], y_score=[1, 2], discount="harmonic"), ValueError, r"discount must be .*'harmonic'"),
        (dict(y_true=[0, 1], y_score=[1, 2], discount=[1.0]), ValueError, r"discount has 1 positions but 2"),
        (dict(y_true=[0, 1], y_score=[1, 2], ties="random"), ValueError, r"ties must be one of .*'random'"),
        (dict(y_true=[0, 1], y_score=[1, 2], ties="doc_id_desc"), ValueError, r"pass doc_ids"),
        (dict(y_true=[0, 1], y_score=[1, 2], empty="one"), ValueError, r"empty must be 'skip' or a number, got 'one'"),
        (dict(y_true=[0, 1], y_score=[1, 2], convention="trec"), ValueError, r"convention must be one of .*'trec'"),
        (dict(y_true=[0, 1], y_score=[1, 2], weights=[1, 2]), ValueError, r"one weight per query \(1 queries\), got 2"),
        (dict(y_true=[0, 1], y_score=[1, 2], weights=[-1]), ValueError, r"weights must be >= 0"),
        (dict(y_true=[0, 1], y_score=[1, 2], reduce="sum"), ValueError, r"reduce must be 'mean' \(one float\) or None .*got 'sum'"),
        (dict(y_true=["a", "b"], y_score=[1, 2]), TypeError, r"y_true must contain numbers"),
        (dict(y_true=[[0, 1]], y_score=[[1, 2]]), ValueError, r"y_true must be 1-D"),
    ],
)
def test_ndcg_rejects_bad_input_with_informative_errors(kwargs, exc, match):
    kwargs.setdefault("group", [len(kwargs["y_true"])] if len(kwargs["y_true"]) else None)
    if kwargs["group"] is None:
        kwargs.pop("group")
        kwargs["qid"] = []
    with pytest.raises(exc, match=match):
        ndcg(**kwargs)


def test_ndcg_rejects_missing_or_double_query_information():
    with pytest.raises(ValueError, match="query information is missing"):
        ndcg([0, 1], [1, 2])
    with pytest.raises(ValueError, match="not both"):
        ndcg([0, 1], [1, 2], qid=[1, 1], group=[2])
    with pytest.raises(ValueError, match="qid is not contiguous"):
        ndcg([0, 1, 1], [1, 2, 3], qid=[1, 2, 1])


@pytest.mark.parametrize("labels_kind", ["large_integers", "fractional", "mixed"])
def test_ideal_dcg_histogram_path_and_its_fallback_agree_with_naive(labels_kind):
    # Integer labels 0..31 use a label histogram for the ideal DCG; other labels fall back.
    rng = np.random.default_rng(11)
    sizes = np.array([30, 12, 25])
    n = int(sizes.sum())
    if labels_kind == "large_integers":
        y = rng.integers(0, 60, n).astype(float)
    elif labels_kind == "fractional":
        y = rng.integers(0, 8, n) / 2.0
    else:
        y = rng.integers(0, 5, n).astype(float)
        y[:30] = rng.integers(0, 50, 30)
    s = rng.normal(size=n)
    got = ndcg(y, s, group=sizes, k=7, gain="linear", ties="stable", reduce=None)
    offs = np.r_[0, np.cumsum(sizes)]
    for q in range(3):
        a, b = offs[q], offs[q + 1]
        ref = naive_ndcg_query(list(y[a:b]), list(s[a:b]), 7, gain=lambda l: l,
                               discount=log2_discount, ties="stable", empty=np.nan)
        assert got[q] == pytest.approx(ref, abs=1e-12)


def _naive_sorted_dcg(labels, scores, ids, k, ties):
    """DCG@k (linear gain) of one query from a plain Python sort; ties as the kernel's modes."""
    n = len(labels)
    m = n if k is None else min(k, n)
    disc = [1.0 / math.log2(i + 2) for i in range(n)]
    idx = range(n)
    if ties == "average":
        # McSherry-Najork: each tie group's mean gain over the positions it occupies.
        order = sorted(idx, key=lambda i: -scores[i])
        total, j = 0.0, 0
        while j < m:
            group = [i for i in idx if scores[i] == scores[order[j]]]
            span = range(j, min(j + len(group), m))
            total += sum(labels[i] for i in group) / len(group) * sum(disc[p] for p in span)
            j += len(group)
        return total
    keys = {
        "stable": lambda i: (-scores[i], i),
        "pessimistic": lambda i: (-scores[i], labels[i], i),
        "optimistic": lambda i: (-scores[i], -labels[i], i),
        "doc_id_desc": lambda i: (-scores[i], -ids[i], i),
    }
    order = sorted(idx, key=keys[ties])
    return sum(labels[order[p]] * disc[p] for p in range(m))


@pytest.mark.parametrize("ties", ["stable", "average", "pessimistic", "optimistic", "doc_id_desc"])
@pytest.mark.parametrize("k", [5, 10, 47, 48, 49, 60, None])
def test_kernel_matches_naive_sort_around_the_buffer_and_sort_thresholds(ties, k):
    # Query lengths on both sides of k and of the 48-row insertion buffer: k < n, k == n,
    # k > n, k > 48 and k=None take different paths in the kernel (none may allocate).
    rng = np.random.default_rng(12)
    sizes = np.array([1, 4, 5, 6, 9, 10, 11, 16, 17, 47, 48, 49, 50, 59, 60, 61, 100, 130])
    n = int(sizes.sum())
    y = rng.integers(0, 4, n).astype(float)
    s = np.round(rng.normal(size=n), 1)  # many ties
    ids = rng.permutation(n)
    doc_ids = np.array([f"{i:06d}" for i in ids])  # string order == numeric order
    got = dcg(y, s, group=sizes, k=k, gain="linear", ties=ties, doc_ids=doc_ids, reduce=None)
    offs = np.r_[0, np.cumsum(sizes)]
    for q in range(len(sizes)):
        a, b = offs[q], offs[q + 1]
        ref = _naive_sorted_dcg(list(y[a:b]), list(s[a:b]), list(ids[a:b]), k, ties)
        assert got[q] == pytest.approx(ref, rel=1e-12, abs=1e-12), (q, sizes[q], k, ties)


@pytest.mark.parametrize("k", [0, 3, 48, 49, 70])
def test_threaded_and_serial_dcg_drivers_agree_bit_for_bit(k):
    # The parallel driver (round-robin chunks, one buffer set per block) on small input.
    from ltr.kernels import _dcg as K

    rng = np.random.default_rng(13)
    sizes = rng.choice([1, 7, 48, 49, 90], size=300)
    offs = np.r_[0, np.cumsum(sizes)].astype(np.int64)
    n = int(offs[-1])
    y = rng.integers(0, 5, n).astype(float)
    s = np.round(rng.normal(size=n), 1)
    keys = rng.permutation(n).astype(float)
    lg = 2.0 ** np.arange(32) - 1
    disc = 1.0 / np.log2(np.arange(2, 200))
    for tie_mode in range(5):
        out = []
        for driver, extra in ((K._dcg_idcg_serial, ()), (K._dcg_idcg_parallel, (3,))):
            d, i = np.zeros(len(sizes)), np.zeros(len(sizes))
            driver(y, s, np.empty(0), K.GAIN_EXP2, keys, tie_mode, np.empty(0), 0, lg, disc,
                   offs, k, d, i, True, True, *extra)
            out.append((d, i))
        assert np.array_equal(out[0][0], out[1][0]) and np.array_equal(out[0][1], out[1][1])

"""The rank-counting, one-pass-k-list and split-query paths of the nDCG kernels.

Each path is compared with a plain Python sort on random data with many tied
scores, in every tie convention, and the paths that replace an older one
(k lists, split queries) with the per-cut-off, one-thread path bit for bit.
"""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from sklearn.metrics import ndcg_score
from test_metrics import _naive_sorted_dcg  # the plain-sort reference, one of each

from ltr.kernels import _dcg as K
from ltr.kernels import _dcg_split as S
from ltr.kernels._ranksort import (
    RUN,
    RUN_TIED,
    _kth_largest,
    rank_stable,
    rank_tied,
    threshold_candidates,
)
from ltr.metrics import dcg, idcg, ndcg

TIES = ["stable", "average", "pessimistic", "optimistic", "doc_id_desc"]


def _tied_data(rng, sizes, decimals=1):
    n = int(sum(sizes))
    y = rng.integers(0, 4, n).astype(float)
    s = np.round(rng.normal(size=n), decimals)
    s[rng.random(n) < 0.1] = -0.0  # signed zeros tie with 0.0
    ids = rng.permutation(n)
    return y, s, ids, np.array([f"{i:07d}" for i in ids])  # string order == numeric order


@pytest.mark.parametrize("decimals", [0, 1, 3])
def test_rank_counting_gives_the_rank_of_a_stable_sort(decimals):
    rng = np.random.default_rng(decimals)
    for n in (1, 2, 7, 31, RUN_TIED, RUN, 200):
        s = np.round(rng.normal(size=n), decimals)
        s[rng.random(n) < 0.2] = -0.0
        tv = np.round(rng.normal(size=n), 0)
        rank = np.empty(n, dtype=np.int64)
        rank_stable(s, rank)
        want = np.empty(n, dtype=np.int64)
        want[sorted(range(n), key=lambda i: (-s[i], i))] = np.arange(n)
        assert np.array_equal(rank, want)
        rank_tied(s, tv, rank)
        want[sorted(range(n), key=lambda i: (-s[i], -tv[i], i))] = np.arange(n)
        assert np.array_equal(rank, want)


@pytest.mark.parametrize("ties", TIES)
def test_sort_of_runs_and_merges_matches_a_python_sort(ties):
    # Query lengths around the rank-counted run lengths (32, 128) and their multiples.
    rng = np.random.default_rng(7)
    sizes = [1, 31, 32, 33, 127, 128, 129, 255, 256, 257, 700]
    y, s, ids, doc_ids = _tied_data(rng, sizes)
    offs = np.r_[0, np.cumsum(sizes)]
    for k in (49, 100, None):
        got = dcg(y, s, group=sizes, k=k, gain="linear", ties=ties, doc_ids=doc_ids,
                  reduce=None)
        for q, (a, b) in enumerate(itertools.pairwise(offs)):
            ref = _naive_sorted_dcg(list(y[a:b]), list(s[a:b]), list(ids[a:b]), k, ties)
            assert got[q] == pytest.approx(ref, rel=1e-12, abs=1e-12), (sizes[q], k, ties)


@pytest.mark.parametrize("ties", TIES)
@pytest.mark.parametrize("k", [1, 5, 10, 16, 17, 48, 49, None])
def test_short_queries_ranked_by_counting_match_a_python_sort(ties, k):
    rng = np.random.default_rng(3)
    sizes = list(rng.integers(1, 20, size=40)) + [31, 32, 33, 60, 127, 128]
    y, s, ids, doc_ids = _tied_data(rng, sizes)
    got = dcg(y, s, group=sizes, k=k, gain="linear", ties=ties, doc_ids=doc_ids, reduce=None)
    ideal = idcg(y, group=sizes, k=k, gain="linear", reduce=None)
    offs = np.r_[0, np.cumsum(sizes)]
    for q, (a, b) in enumerate(itertools.pairwise(offs)):
        ref = _naive_sorted_dcg(list(y[a:b]), list(s[a:b]), list(ids[a:b]), k, ties)
        assert got[q] == pytest.approx(ref, rel=1e-12, abs=1e-12), (sizes[q], k, ties)
        best = _naive_sorted_dcg(list(y[a:b]), list(y[a:b]), list(ids[a:b]), k, "stable")
        assert ideal[q] == pytest.approx(best, rel=1e-12, abs=1e-12)


def test_averaged_ties_on_short_queries_match_scikit_learn():
    rng = np.random.default_rng(11)
    for width in (3, 10, 40, 100):
        y = rng.integers(0, 4, size=(200, width)).astype(np.float64)
        s = np.round(rng.normal(size=(200, width)), 1)
        for k in (1, 5, width, None):
            got = ndcg(y.ravel(), s.ravel(), group=[width] * 200, k=k, convention="sklearn")
            assert abs(got - ndcg_score(y, s, k=k)) < 1e-12


@pytest.mark.parametrize("convention", ["lightgbm", "xgboost", "sklearn", "trec_eval", "ranx"])
def test_a_list_of_k_in_one_pass_equals_one_call_per_k(convention):
    rng = np.random.default_rng(5)
    sizes = list(rng.choice([1, 3, 10, 17, 49, 100, 129, 300], size=60))
    y, s, _, doc_ids = _tied_data(rng, sizes)
    ks = [100, 1, 10, 5, 49, 1000]
    for fn in (ndcg, dcg, idcg):
        many = fn(y, s, group=sizes, k=ks, convention=convention, doc_ids=doc_ids,
                  reduce=None)
        assert list(many) == ks
        for k in ks:
            one = fn(y, s, group=sizes, k=k, convention=convention, doc_ids=doc_ids,
                     reduce=None)
            assert np.array_equal(many[k], one, equal_nan=True), (fn.__name__, k)


def test_a_list_of_k_with_non_integer_labels_equals_one_call_per_k():
    # Labels outside the histogram: the ideal order comes from a selection instead.
    rng = np.random.default_rng(6)
    sizes = [5, 40, 130]
    y, s, _, _ = _tied_data(rng, sizes)
    y = y + 0.5
    many = ndcg(y, s, group=sizes, k=[3, 50], convention="sklearn", reduce=None)
    for k in (3, 50):
        assert np.array_equal(many[k], ndcg(y, s, group=sizes, k=k, convention="sklearn",
                                            reduce=None))


# The tests of the query-split driver are slow: it compiles for about 30 s, the costliest
# kernel of the default run (issue 25: default run <= 4 min); CI runs them (-m slow).
SPLIT_DRIVER = pytest.mark.slow


def _driver_args(y, s, ids, tie_mode, offsets, k):
    n_q = offsets.size - 1
    # a discount for every rank of the longest query (the kernels do not check its length)
    ranks = int(np.diff(offsets).max())
    return (y, s, np.empty(0), K.GAIN_EXP2, ids.astype(float), tie_mode, y, 1,
            2.0 ** np.arange(32) - 1.0, 1.0 / np.log2(np.arange(2, ranks + 2)), offsets, k,
            np.zeros(n_q), np.zeros(n_q), True, True)


@SPLIT_DRIVER
@pytest.mark.parametrize("tie_mode", range(5))
@pytest.mark.parametrize("k", [0, 1, 10, 16, 17, 48, 49, 500])
def test_split_queries_match_the_one_thread_path_bit_for_bit(tie_mode, k):
    # Each query cut into 3 slices (threads or not, the slices and their merge are the same).
    rng = np.random.default_rng(k)
    sizes = [1_000, 2_345]
    y, s, ids, _ = _tied_data(rng, sizes, decimals=2)
    offsets = np.r_[0, np.cumsum(sizes)].astype(np.int64)
    one = _driver_args(y, s, ids, tie_mode, offsets, k)
    K._dcg_idcg_serial(*one)
    split = _driver_args(y, s, ids, tie_mode, offsets, k)
    S.dcg_idcg_split(*split, 3)
    assert np.array_equal(one[12], split[12]) and np.array_equal(one[13], split[13])


@SPLIT_DRIVER
def test_split_queries_without_a_label_histogram_match_the_one_thread_path():
    rng = np.random.default_rng(9)
    y, s, ids, _ = _tied_data(rng, [3_000], decimals=2)
    y = y + 0.25  # not integer labels: the ideal order is selected, slice by slice
    offsets = np.array([0, 3_000], dtype=np.int64)
    for k in (10, 60, 0):
        one = _driver_args(y, s, ids, K.TIES_STABLE, offsets, k)
        K._dcg_idcg_serial(*one)
        split = _driver_args(y, s, ids, K.TIES_STABLE, offsets, k)
        S.dcg_idcg_split(*split, 2)
        assert np.array_equal(one[12], split[12]) and np.array_equal(one[13], split[13])


@SPLIT_DRIVER
def test_ndcg_splits_a_single_long_query_and_matches_a_python_sort(monkeypatch):
    monkeypatch.setattr(S, "SPLIT_MIN_ROWS", 500)
    monkeypatch.setattr(S.numba, "get_num_threads", lambda: 2)
    calls = []
    real = S.dcg_idcg_split
    monkeypatch.setattr("ltr.metrics._ndcg.dcg_idcg_split",
                        lambda *a: calls.append(1) or real(*a))
    rng = np.random.default_rng(4)
    y, s, ids, doc_ids = _tied_data(rng, [900])
    for ties in TIES:
        for k in (10, 100, None):
            got = dcg(y, s, group=[900], k=k, gain="linear", ties=ties, doc_ids=doc_ids,
                      reduce=None)
            ref = _naive_sorted_dcg(list(y), list(s), list(ids), k, ties)
            assert got[0] == pytest.approx(ref, rel=1e-12, abs=1e-12), (ties, k)
    assert len(calls) == 3 * len(TIES)


@SPLIT_DRIVER
@pytest.mark.parametrize("tie_mode", range(5))
@pytest.mark.parametrize("k", [0, 1, 17, 49, 777])
def test_two_slice_parallel_merge_matches_the_one_thread_path_bit_for_bit(tie_mode, k):
    # Two slices: each thread merges half of the ranks from a bisected split point.
    rng = np.random.default_rng(100 + k)
    sizes = [1_501, 2_000]
    y, s, ids, _ = _tied_data(rng, sizes, decimals=2)
    offsets = np.r_[0, np.cumsum(sizes)].astype(np.int64)
    for labels in (y, y + 0.25):  # with and without the label histogram
        one = _driver_args(labels, s, ids, tie_mode, offsets, k)
        K._dcg_idcg_serial(*one)
        split = _driver_args(labels, s, ids, tie_mode, offsets, k)
        S.dcg_idcg_split(*split, 2)
        assert np.array_equal(one[12], split[12]) and np.array_equal(one[13], split[13])


def test_kth_largest_matches_a_sort():
    rng = np.random.default_rng(11)
    for n in (1, 2, 3, 10, 101, 2_000):
        for decimals in (0, 1, 4):
            vals = np.round(rng.normal(size=n), decimals)
            want = np.sort(vals)[::-1]
            for kth in {0, n // 3, n // 2, n - 1}:
                assert _kth_largest(vals.copy(), kth) == want[kth]


@pytest.mark.parametrize(("n", "m", "decimals"),
                         [(5_000, 49, 1), (5_000, 1_000, 2), (4_000, 1_000, 1), (20_000, 300, 3)])
def test_partial_selection_orders_the_rows_of_the_full_sort(n, m, decimals):
    # k << n: only the rows above a threshold are sorted; same rows, order and keys.
    rng = np.random.default_rng(n + m)
    start = 7
    s = np.round(rng.normal(size=start + n + 5), decimals)
    s[rng.random(s.size) < 0.1] = -0.0
    y = rng.integers(0, 4, s.size).astype(float)
    end = start + n
    out = []
    for partial in (False, True):
        buf_idx = np.empty(n + 1, dtype=np.int64)
        buf_tmp = np.empty(n, dtype=np.int64)
        sort_f = np.empty((3, n))
        args = (y, np.empty(0), K.GAIN_EXP2, np.empty(0), K.TIES_STABLE, start, end, m, buf_idx)
        if partial:
            probe = np.empty(n, dtype=np.int64)
            assert threshold_candidates(s, start, end, m, probe, np.empty((3, n))) >= m
            K.select_top_partial(s, *args, np.empty(K._P_WIDTH), buf_tmp, sort_f)
        else:
            K._sort_rows(s, *args, buf_tmp, sort_f)
        out.append((buf_idx[:m].copy(), sort_f[1, :m].copy()))
    assert np.array_equal(out[0][0], out[1][0]) and np.array_equal(out[0][1], out[1][1])
    want = sorted(range(start, end), key=lambda i: (-s[i], i))[:m]
    assert out[1][0].tolist() == want


def test_partial_selection_gives_way_when_half_the_rows_tie_at_the_threshold():
    s = np.zeros(1_000)
    c = threshold_candidates(s, 0, 1_000, 100, np.empty(1_000, dtype=np.int64),
                                np.empty((3, 1_000)))
    assert c == -1
    y = np.arange(1_000) % 3.0
    got = dcg(y, s, group=[1_000], k=100, gain="linear", ties="stable", reduce=None)
    ref = _naive_sorted_dcg(list(y), list(s), list(range(1_000)), 100, "stable")
    assert got[0] == pytest.approx(ref, rel=1e-12)


@pytest.mark.parametrize("k", [0, 1, 5, 10, 16, 17, 24, 32])
@pytest.mark.parametrize(("gain_mode", "ideal_mode"), [(K.GAIN_EXP2, 1), (K.GAIN_EXP2, 0),
                                                       (K.GAIN_LINEAR, 0), (K.GAIN_TABLE, 0)])
@pytest.mark.parametrize("histogram", [False, True])
def test_short_queries_counted_once_for_both_dcgs_match_the_separate_counts(k, gain_mode,
                                                                            ideal_mode,
                                                                            histogram):
    # Queries of <= 16 rows, or <= _COUNT_BOTH_MAX (32) and <= m + 20, with ties in row
    # order rank by score and by ideal key in one loop when both DCGs are wanted; asking for
    # one at a time takes the separate paths (above 16 rows: threshold selection, label
    # histogram or selection).  Sizes 1-40 and these k cover both sides of each bound.
    assert (K._COUNT_BOTH_MAX, K._COUNT_BOTH_SLACK) == (32, 20)
    rng = np.random.default_rng(k + 10 * gain_mode + 100 * histogram)
    sizes = list(rng.integers(1, 41, size=300))
    y, s, ids, _ = _tied_data(rng, sizes, decimals=1)
    offsets = np.r_[0, np.cumsum(sizes)].astype(np.int64)
    gains = np.sqrt(y) * 3 if gain_mode == K.GAIN_TABLE else np.empty(0)
    labels = np.arange(4.0)  # _tied_data's labels: 0..3
    label_gain = {K.GAIN_EXP2: 2.0 ** labels - 1.0, K.GAIN_LINEAR: labels,
                  K.GAIN_TABLE: np.sqrt(labels) * 3}[gain_mode]
    for tie_mode in (K.TIES_STABLE, K.TIES_AVERAGE):
        out = {}
        for want in ((True, True), (True, False), (False, True)):
            args = list(_driver_args(y, s, ids, tie_mode, offsets, k))
            args[2], args[3], args[7] = gains, gain_mode, ideal_mode
            # with or without the label histogram (else the ideal order by counting or selection)
            args[8] = label_gain if histogram else np.empty(0)
            args[14], args[15] = want
            K._dcg_idcg_serial(*args)
            out[want] = (args[12], args[13])
        assert np.array_equal(out[True, True][0], out[True, False][0])
        assert np.array_equal(out[True, True][1], out[False, True][1])

"""Each selection and scan path of the nDCG kernels against naive references.

The dcg kernel picks the top ``m`` rows of a query by threshold and rank
counting (``m <= _SMALL_MAX`` with ties in row order), by an insertion buffer
(other ties, or ``m <= _BUFFER_MAX``) or by a merge sort; large inputs go
through threaded scans for ``qid`` runs and label/score checks.  Every path is
compared here with a plain Python sort, numpy, or scikit-learn.
"""

from __future__ import annotations

import numpy as np
import pytest
from sklearn.metrics import ndcg_score

from ltr.groups import offsets_from_qid
from ltr.kernels import _dcg as K
from ltr.kernels._scan import PARALLEL_MIN_ROWS, label_score_stats, sorted_run_starts
from ltr.metrics import ndcg

BIG = PARALLEL_MIN_ROWS + 1_234  # takes the threaded paths


def _naive_top(scores, start, end, m):
    """Rows ``start:end`` by score descending, then row ascending (stable ties)."""
    rows = sorted(range(start, end), key=lambda i: (-scores[i], i))
    return rows[:m]


def _select(scores, start, end, m, tie_mode):
    n = end - start
    buf_idx = np.full(n + 1, -1, dtype=np.int64)
    buf_p = np.empty(K._BUFFER_MAX + 1 + n)
    buf_tmp = np.empty(max(n, K._CAND_MAX + 1), dtype=np.int64)
    sort_f = np.empty((3, n))
    empty = np.empty(0)
    K._select_top(scores, scores, empty, K.GAIN_LINEAR, empty, tie_mode, start, end, m,
                  buf_idx, buf_p, buf_tmp, sort_f)
    return buf_idx[:m].tolist()


@pytest.mark.parametrize("tie_mode", [K.TIES_STABLE, K.TIES_AVERAGE])
@pytest.mark.parametrize("decimals", [0, 1, 2, 8])
def test_threshold_selection_matches_a_stable_sort(tie_mode, decimals):
    rng = np.random.default_rng(decimals)
    for _ in range(60):
        n = int(rng.choice([1, 2, 5, 16, 17, 33, 100, 400, 2_000]))
        pad = int(rng.integers(0, 4))
        scores = np.round(rng.normal(size=n + pad), decimals)
        for m in {min(n, m) for m in (1, 2, 3, 10, K._SMALL_MAX, K._SMALL_MAX + 1, n)}:
            got = _select(scores, pad, pad + n, m, tie_mode)
            assert got == _naive_top(scores, pad, pad + n, m)


def test_threshold_selection_with_many_ties_falls_back_to_the_buffer():
    # More than _CAND_MAX rows reach the threshold: the insertion buffer decides.
    scores = np.zeros(500)
    scores[[7, 300, 499]] = [1.0, 2.0, -0.0]
    for m in (1, 5, K._SMALL_MAX):
        assert _select(scores, 0, 500, m, K.TIES_STABLE) == _naive_top(scores, 0, 500, m)


def test_threshold_selection_treats_signed_zeros_as_ties():
    scores = np.array([0.0, -0.0, 0.0, -0.0, 1.0, -0.0, -1.0] * 9)
    for m in (1, 4, 10, 16):
        assert _select(scores, 0, scores.size, m, K.TIES_STABLE) == _naive_top(
            scores, 0, scores.size, m)


def _naive_ndcg(y, s, offsets, k):
    """LightGBM's nDCG@k: exp2 gain, stable ties, log2 discount, empty query = 1."""
    out = []
    for q in range(len(offsets) - 1):
        a, b = offsets[q], offsets[q + 1]
        top = _naive_top(s, a, b, b - a)
        m = b - a if k is None else min(k, b - a)
        disc = 1.0 / np.log2(np.arange(2, m + 2))
        dcg = sum((2.0 ** y[i] - 1.0) * d for i, d in zip(top[:m], disc))
        ideal = np.sort(2.0 ** y[a:b] - 1.0)[::-1][:m]
        idcg = float(np.sum(ideal * disc))
        out.append(dcg / idcg if idcg > 0 else 1.0)
    return np.array(out)


@pytest.mark.parametrize("n_rows", [3_000, BIG])
def test_ndcg_per_query_matches_a_naive_computation(n_rows):
    rng = np.random.default_rng(5)
    sizes = rng.integers(1, 120, size=n_rows // 10)
    sizes = sizes[np.cumsum(sizes) <= n_rows]
    offsets = np.concatenate([[0], np.cumsum(sizes)]).astype(np.int64)
    n = int(offsets[-1])
    y = rng.choice(5, size=n, p=[0.5, 0.3, 0.1, 0.05, 0.05]).astype(np.float64)
    s = np.round(rng.normal(size=n), 1)
    n_ref = min(300, sizes.size)  # a naive reference over the first queries
    sub = int(offsets[n_ref])
    for k in (1, 3, 5, 10, 16, 17, 20, 24, 48, None):
        got = ndcg(y, s, offsets=offsets, k=k, convention="lightgbm", reduce=None)
        want = _naive_ndcg(y[:sub], s[:sub], offsets[:n_ref + 1], k)
        np.testing.assert_allclose(got[:n_ref], want, rtol=0, atol=1e-12)


def test_ndcg_averaged_ties_match_scikit_learn_on_the_threshold_path():
    rng = np.random.default_rng(11)
    n_q, width = 400, 60
    y = rng.integers(0, 4, size=(n_q, width)).astype(np.float64)
    s = np.round(rng.normal(size=(n_q, width)), 1)
    for k in (1, 5, 10, 16):
        got = ndcg(y.ravel(), s.ravel(), group=[width] * n_q, k=k, convention="sklearn")
        assert abs(got - ndcg_score(y, s, k=k)) < 1e-12


@pytest.mark.parametrize("n_rows", [3_000, BIG])
def test_ndcg_fallbacks_of_the_selection_and_the_label_histogram_match_references(n_rows):
    # Queries whose scores tie so much that the threshold selection gives up (the insertion
    # buffer then selects), and labels that are not integers (no histogram: the ideal list
    # is selected too), on the serial and the threaded driver.
    rng = np.random.default_rng(17)
    width = 80
    n_q = n_rows // width
    s = np.round(rng.normal(size=(n_q, width)), 1)
    s[::3] = 0.5  # every third query: one tie group
    s[1::3, : width // 2] = -1.0  # and half of the rows of others
    y_int = rng.choice(4, size=(n_q, width), p=[0.5, 0.3, 0.15, 0.05]).astype(np.float64)
    y_float = np.round(rng.uniform(0, 3, size=(n_q, width)), 2)
    offsets = np.arange(0, n_q * width + 1, width, dtype=np.int64)
    n_ref = min(200, n_q)
    sub = int(offsets[n_ref])
    for k in (1, 5, 10, 20):
        got = ndcg(y_int.ravel(), s.ravel(), offsets=offsets, k=k, convention="lightgbm",
                   reduce=None)
        want = _naive_ndcg(y_int.ravel()[:sub], s.ravel()[:sub], offsets[:n_ref + 1], k)
        np.testing.assert_allclose(got[:n_ref], want, rtol=0, atol=1e-12)
        got = ndcg(y_float.ravel(), s.ravel(), offsets=offsets, k=k, convention="sklearn",
                   reduce=None)
        want = [ndcg_score(y_float[q:q + 1], s[q:q + 1], k=k) for q in range(n_ref)]
        np.testing.assert_allclose(got[:n_ref], want, rtol=0, atol=1e-12)


def test_float32_scores_and_k_lists_give_the_same_values():
    rng = np.random.default_rng(3)
    qid = np.repeat(np.arange(BIG // 50), 50)
    n = qid.size
    y = rng.integers(0, 5, size=n).astype(np.float64)
    s32 = rng.normal(size=n).astype(np.float32)
    s64 = s32.astype(np.float64)
    for conv in ("lightgbm", "xgboost", "sklearn"):
        many = ndcg(y, s32, qid=qid, k=[1, 5, 10, 20], convention=conv)
        for kk, value in many.items():
            assert value == ndcg(y, s64, qid=qid, k=kk, convention=conv)


# --------------------------------------------------------------------------- #
# scans of large inputs                                                        #
# --------------------------------------------------------------------------- #


def _numpy_runs(qid):
    change = np.concatenate([[True], qid[1:] != qid[:-1]])
    return np.flatnonzero(change)


@pytest.mark.parametrize("dtype", [np.int64, np.int32, np.uint64])
@pytest.mark.parametrize("direction", [1, -1])
def test_qid_scan_finds_the_runs_of_sorted_ids(dtype, direction):
    rng = np.random.default_rng(0)
    sizes = rng.integers(1, 300, size=3_000)
    ids = np.arange(sizes.size)[::direction] + (sizes.size if direction < 0 else 0)
    qid = np.repeat(ids, sizes).astype(dtype)
    starts, ok = sorted_run_starts(qid)
    assert ok
    np.testing.assert_array_equal(starts, _numpy_runs(qid))
    groups = offsets_from_qid(qid)
    np.testing.assert_array_equal(groups.offsets, np.append(_numpy_runs(qid), qid.size))
    np.testing.assert_array_equal(groups.query_ids, qid[_numpy_runs(qid)])
    assert groups.query_ids.dtype == qid.dtype
    assert groups.order is None


def test_qid_scan_hands_unsorted_ids_to_the_general_path():
    rng = np.random.default_rng(1)
    ids = rng.permutation(5_000)
    qid = np.repeat(ids, 60)  # contiguous but not sorted
    starts, ok = sorted_run_starts(qid)
    assert not ok and starts.size == 0
    groups = offsets_from_qid(qid)
    np.testing.assert_array_equal(groups.offsets, np.arange(0, qid.size + 1, 60))
    np.testing.assert_array_equal(groups.query_ids, ids)


def test_qid_scan_keeps_the_non_contiguous_error_on_large_input():
    qid = np.repeat(np.arange(5_000), 60)
    qid[-1] = 7  # query 7 comes back at the end
    with pytest.raises(ValueError, match=r"query 7 appears at row 420 and again at row "
                                         r"299999 after other queries"):
        offsets_from_qid(qid)
    groups = offsets_from_qid(qid, sort=True)
    assert groups.order is not None and groups.offsets[-1] == qid.size


def test_qid_scan_of_one_query_and_of_float_ids():
    qid = np.full(BIG, 4, dtype=np.int64)
    np.testing.assert_array_equal(offsets_from_qid(qid).offsets, [0, BIG])
    fq = np.repeat(np.arange(BIG // 10, dtype=np.float64), 10)  # floats: the numpy path
    np.testing.assert_array_equal(offsets_from_qid(fq).offsets, np.arange(0, fq.size + 1, 10))


def test_label_score_stats_match_numpy():
    rng = np.random.default_rng(2)
    y = rng.integers(-3, 9, size=BIG).astype(np.float64)
    s = rng.normal(size=BIG)
    assert label_score_stats(y, s) == (y.min(), y.max(), True, True)
    y[1_000] = 2.5
    assert label_score_stats(y, s)[2] is False
    y[1_000] = -0.0
    assert label_score_stats(y, s)[2] is True
    for bad in (np.nan, np.inf, -np.inf):
        y2 = y.copy()
        y2[BIG - 1] = bad
        lo, hi, _, finite = label_score_stats(y2, s)
        assert np.isnan(lo) and np.isnan(hi) and finite
        s2 = s.copy()
        s2[BIG // 2] = bad
        assert label_score_stats(y, s2)[3] is False


@pytest.mark.parametrize("n", [100, BIG])
def test_large_inputs_raise_the_same_errors_as_small_ones(n):
    qid = np.repeat(np.arange(n // 50 + 1), 50)[:n]
    y = np.ones(n)
    s = np.zeros(n)
    s[n - 3] = np.nan
    with pytest.raises(ValueError, match=rf"y_score must be finite.*first at index {n - 3}"):
        ndcg(y, s, qid=qid)
    y2 = y.copy()
    y2[n - 2] = np.inf
    with pytest.raises(ValueError, match=rf"y_true must be finite.*first at index {n - 2}"):
        ndcg(y2, np.zeros(n), qid=qid)
    y3 = y.copy()
    y3[n - 1] = 1.5
    with pytest.raises(ValueError, match=rf"needs integer labels.*y_true\[{n - 1}\] = 1.5"):
        ndcg(y3, np.zeros(n), qid=qid, convention="lightgbm")
    y3[n - 1] = 40.0
    with pytest.raises(ValueError, match=r"below the gain table's length 31"):
        ndcg(y3, np.zeros(n), qid=qid, convention="lightgbm")


@pytest.mark.parametrize("n_chunks", [1, 2, 3, 7])
def test_chunked_scans_match_numpy_across_chunk_boundaries(n_chunks):
    # Each thread scans one chunk: runs and stats must not depend on where chunks cut.
    from ltr.kernels._scan import _run_starts, _stats

    rng = np.random.default_rng(n_chunks)
    for sizes in (rng.integers(1, 40, size=60), np.full(30, 7), np.array([1, 1, 300, 1])):
        for direction in (1, -1):
            qid = np.repeat(np.arange(sizes.size)[::direction], sizes).astype(np.int64)
            starts, ok = _run_starts(qid, n_chunks)
            assert ok
            np.testing.assert_array_equal(starts, _numpy_runs(qid))
    qid = np.repeat(rng.permutation(50), 9)
    assert not _run_starts(qid, n_chunks)[1]
    y = rng.integers(-2, 6, size=501).astype(np.float64)
    s = rng.normal(size=501)
    y[n_chunks * 37] = 2.5  # a fraction inside some chunk
    lo, hi, frac, lab_bad, sc_bad = _stats(y, s, n_chunks)
    assert (lo, hi, frac, lab_bad, sc_bad) == (y.min(), y.max(), True, False, False)
    s[-1] = np.inf
    assert _stats(y, s, n_chunks)[4]
    y[0] = np.nan
    assert _stats(y, s, n_chunks)[3]

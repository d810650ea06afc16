"""Query groups: qid / group sizes -> int64 offsets, contiguity and consistency checks."""

from __future__ import annotations

import numpy as np
import pytest

from ltr.groups import (
    SORT_HINT,
    group_sizes,
    offsets_from_group,
    offsets_from_qid,
    qid_from_offsets,
    resolve_groups,
)


def test_group_sizes_become_int64_offsets():
    offs = offsets_from_group([3, 1, 2], n_rows=6)
    assert offs.dtype == np.int64
    np.testing.assert_array_equal(offs, [0, 3, 4, 6])
    np.testing.assert_array_equal(group_sizes(offs), [3, 1, 2])
    np.testing.assert_array_equal(qid_from_offsets(offs), [0, 0, 0, 1, 2, 2])


@pytest.mark.parametrize("qid", [[7, 7, 3, 3, 3, 9], ["b", "b", "a", "a", "a", "c"], [0.0, 0.0, 1.0, 1.0, 1.0, 2.0]])
def test_contiguous_qid_of_any_type_gives_offsets_and_query_ids(qid):
    g = resolve_groups(6, qid=qid)
    np.testing.assert_array_equal(g.offsets, [0, 2, 5, 6])
    assert g.order is None and g.n_queries == 3
    assert list(g.query_ids) == [qid[0], qid[2], qid[5]]


def test_qid_and_group_agree():
    qid = np.repeat([5, 2, 8], [4, 1, 3])
    np.testing.assert_array_equal(resolve_groups(8, qid=qid).offsets, resolve_groups(8, group=[4, 1, 3]).offsets)


def test_sort_true_stable_sorts_by_first_appearance_and_unsort_maps_back():
    qid = np.array(["a", "b", "a", "c", "b", "a"])
    values = np.arange(6) * 10
    g = offsets_from_qid(qid, sort=True)
    np.testing.assert_array_equal(g.order, [0, 2, 5, 1, 4, 3])  # stable within each query
    np.testing.assert_array_equal(g.offsets, [0, 3, 5, 6])
    assert list(g.query_ids) == ["a", "b", "c"]
    np.testing.assert_array_equal(qid[g.order], ["a", "a", "a", "b", "b", "c"])
    np.testing.assert_array_equal(g.unsort(values[g.order]), values)


def test_non_contiguous_qid_is_an_error_that_says_how_to_fix_it():
    # the advice depends on the caller: only APIs with a sort= argument mention it
    with pytest.raises(
        ValueError,
        match=r"qid is not contiguous: query 1 appears at row 0 and again at row 2.*"
        r"sort your rows by qid \(stable\) first\.$",
    ):
        resolve_groups(3, qid=[1, 2, 1])
    with pytest.raises(ValueError, match=r"at row 2 .*first, or pass sort=True"):
        resolve_groups(3, qid=[1, 2, 1], sort_hint=SORT_HINT)
    with pytest.raises(ValueError, match=r"^data.csv: .*row 0 \(line 2\) .*row 2 \(line 4\)"):
        resolve_groups(3, qid=[1, 2, 1], source="data.csv", line_of=lambda r: r + 2)


@pytest.mark.parametrize(
    "kwargs, exc, match",
    [
        (dict(n_rows=3), ValueError, "query information is missing: pass qid .* or group"),
        (dict(n_rows=3, qid=[1, 1, 1], group=[3]), ValueError, "not both"),
        (dict(n_rows=3, group=[1, 1]), ValueError, "group sizes sum to 2 but there are 3 rows"),
        (dict(n_rows=3, group=[3, 0]), ValueError, r"group\[1\] = 0"),
        (dict(n_rows=3, group=[1.5, 1.5]), ValueError, "whole numbers"),
        (dict(n_rows=3, group=[[3]]), ValueError, "1-D array of query sizes"),
        (dict(n_rows=3, group=[]), ValueError, "group is empty"),
        (dict(n_rows=3, qid=[1, 1]), ValueError, "qid has 2 entries but there are 3 rows"),
        (dict(n_rows=2, qid=[1.0, np.nan]), ValueError, r"qid\[1\] = nan"),
        (dict(n_rows=0, qid=[]), ValueError, "qid is empty"),
    ],
)
def test_resolve_groups_rejects_bad_input_with_informative_errors(kwargs, exc, match):
    with pytest.raises(exc, match=match):
        resolve_groups(**kwargs)

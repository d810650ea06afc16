"""The one rule each for display positions, clicks and propensities (ltr._validation)."""

import numpy as np
import pytest

from ltr._propensities import check_propensities
from ltr._validation import check_clicks, check_positions

OFFSETS = np.array([0, 3, 5])


def test_positions_accepts_a_permutation_per_query_in_any_row_order():
    out = check_positions([3, 1, 2, 2, 1], "position", OFFSETS)
    assert out.dtype == np.int64
    np.testing.assert_array_equal(out, [3, 1, 2, 2, 1])


@pytest.mark.parametrize(
    ("position", "match"),
    [
        ([1, 2, np.nan, 1, 2], r"must not be missing; position\[2\] = nan"),
        ([1, 2, 3, 0, 1], r"starting at 1 .*position\[3\] = 0"),
        ([1, 2, 3, -1, 1], r"position\[3\] = -1"),
        ([1, 2, 3, 1.5, 1], r"integer display ranks; position\[3\] = 1.5"),
        ([1, 2, 4, 1, 2], r"position\[2\] = 4 but its query has 3 rows"),
        ([1, 2, 3, 2, 2], r"query 1 \(rows 3..4\) gives position 2 to rows 3 and 4"),
        ([1, 3, 3, 1, 2], r"query 0 .* gives position 3 to rows 1 and 2"),
        ([1, 2, 3, 1], r"has 4 rows but there are 5"),
    ],
)
def test_positions_reject_bad_values_naming_the_first_bad_row(position, match):
    with pytest.raises(ValueError, match=match):
        check_positions(position, "position", OFFSETS)


def test_clicks_accept_binary_and_counts_only_when_allowed():
    np.testing.assert_array_equal(check_clicks([True, False, 1], "click", 3), [1.0, 0.0, 1.0])
    np.testing.assert_array_equal(check_clicks([0, 2, 5], "click", 3, counts=True), [0, 2, 5])
    with pytest.raises(ValueError, match=r"clicks 0 or 1; click\[1\] = 2.0"):
        check_clicks([0, 2, 1], "click", 3)
    with pytest.raises(ValueError, match=r"click counts .*click\[2\] = 1.5"):
        check_clicks([0, 2, 1.5], "click", 3, counts=True)
    with pytest.raises(ValueError, match=r"click\[0\] = nan"):
        check_clicks([np.nan, 0, 1], "click", 3)
    with pytest.raises(ValueError, match="has 2 rows but there are 3"):
        check_clicks([0, 1], "click", 3)


@pytest.mark.parametrize(("bad", "index"), [(0.0, 1), (1.5, 1), (-0.1, 1), (np.nan, 1)])
def test_propensities_must_lie_in_zero_one(bad, index):
    with pytest.raises(ValueError, match=rf"propensity\[{index}\] \(position {index + 1}\)"):
        check_propensities([1.0, bad, 0.3])
    np.testing.assert_array_equal(check_propensities([1.0, 0.5]), [1.0, 0.5])

"""Tests for ltr.relevance: grade mappings on hand-made rows, configs, bad input."""

from __future__ import annotations

import pickle

import numpy as np
import pandas as pd
import pytest
import yaml

from ltr.relevance import (
    PRESETS,
    CategoricalGrades,
    GradeMapping,
    ThresholdGrades,
    apply_mappings,
    from_dict,
)


def test_watch_preset_grades_hand_made_rows():
    # < 30 % -> 0, 30-60 % -> 1 (our decision), >= 60 % -> 2, full view -> 3.
    fractions = [0.0, 0.1, 0.299, 0.3, 0.45, 0.599, 0.6, 0.61, 0.99, 1.0, 1.5]
    expected = [0, 0, 0, 1, 1, 1, 2, 2, 2, 3, 3]
    got = PRESETS["watch"]({"watch_fraction": fractions})
    assert got.dtype == np.float64
    assert got.tolist() == expected


def test_share_and_follow_presets_grade_hand_made_rows():
    assert PRESETS["share"]({"share": ["social", "copy_link", "none", "social"]}).tolist() == [2, 1, 0, 2]
    assert PRESETS["follow"]({"follow": ["follow", "like", "none"]}).tolist() == [3, 1, 0]


def test_ecommerce_preset_takes_the_strongest_signal():
    rows = pd.DataFrame(
        {
            "event": ["impression", "click", "click", "click", "cart", "order_kept", "impression"],
            "dwell_seconds": [0.0, 5.0, 30.0, 30.5, 100.0, 2.0, 31.0],
        }
    )
    # click with dwell <= 30 s -> 2, with dwell > 30 s -> 3; cart 4 beats dwell 3; order kept 5.
    assert PRESETS["ecommerce"](rows).tolist() == [1, 2, 2, 3, 4, 5, 3]


def test_threshold_right_closed_puts_boundary_in_lower_bin():
    left = ThresholdGrades([(30, 0)], above=3)
    right = ThresholdGrades([(30, 0)], above=3, right=True)
    assert left([29.9, 30.0, 30.1]).tolist() == [0, 3, 3]
    assert right([29.9, 30.0, 30.1]).tolist() == [0, 0, 3]


def test_threshold_matches_naive_loop():
    rng = np.random.default_rng(0)
    bins = [(-1.0, 0.0), (0.0, 1.5), (0.5, 2.0), (2.0, 4.0)]
    grader = ThresholdGrades(bins, above=7.0)
    values = rng.normal(size=500)
    values[:4] = [-1.0, 0.0, 0.5, 2.0]
    expected = []
    for v in values:
        for upper, grade in bins:
            if v < upper:
                expected.append(grade)
                break
        else:
            expected.append(7.0)
    np.testing.assert_array_equal(grader(values), expected)


def test_categorical_default_and_missing_grades():
    grader = CategoricalGrades({"a": 1, "b": 2}, default=0.5, missing=0)
    assert grader(["a", "zzz", None, np.nan, "b"]).tolist() == [1, 0.5, 0, 0, 2]
    ints = CategoricalGrades({1: 3, 2: 1})
    assert ints(np.array([2, 1, 1])).tolist() == [1, 3, 3]


def test_single_rule_mapping_accepts_a_bare_column():
    assert PRESETS["watch"]([0.5, 1.0]).tolist() == [1, 3]


def test_sum_combination():
    m = GradeMapping(
        {"a": CategoricalGrades({"x": 1, "y": 2}), "b": ThresholdGrades([(1, 0)], above=1)},
        combine="sum",
    )
    assert m({"a": ["x", "y"], "b": [0, 5]}).tolist() == [1, 3]


def test_apply_mappings_builds_one_label_column_per_objective():
    frame = pd.DataFrame(
        {"watch_fraction": [0.2, 0.7, 1.0], "share": ["none", "social", "copy_link"],
         "follow": ["like", "none", "follow"]}
    )
    labels = apply_mappings(frame, {"watch": "watch", "share": PRESETS["share"],
                                    "follow": PRESETS["follow"].to_dict()})
    assert {k: v.tolist() for k, v in labels.items()} == {
        "watch": [0, 2, 3], "share": [0, 2, 1], "follow": [1, 0, 3]}


@pytest.mark.parametrize("name", sorted(PRESETS))
def test_presets_round_trip_through_dict_yaml_and_pickle(name):
    mapping = PRESETS[name]
    data = mapping.to_dict()
    again = GradeMapping.from_dict(yaml.safe_load(yaml.safe_dump(data)))
    assert again == mapping
    assert from_dict(data) == mapping
    assert pickle.loads(pickle.dumps(mapping)) == mapping
    assert GradeMapping.from_dict(name) is mapping


def test_graders_round_trip_through_dict():
    t = ThresholdGrades([(0.3, 0), (0.6, 1.5)], above=3, right=True)
    c = CategoricalGrades({"x": 1}, default=0, missing=2)
    assert from_dict(t.to_dict()) == t and from_dict(c.to_dict()) == c
    assert ThresholdGrades.from_dict(t.to_dict()).bins == [(0.3, 0.0), (0.6, 1.5)]
    assert pickle.loads(pickle.dumps(t))([0.4]).tolist() == [1.5]


@pytest.mark.parametrize(
    ("call", "exc", "match"),
    [
        (lambda: CategoricalGrades({"social": 2})(["social", "tiktok"]), ValueError,
         r"values\[1\] = 'tiktok' is not a known category"),
        (lambda: CategoricalGrades({"social": 2})(["social", None]), ValueError,
         r"values\[1\] is missing \(None\)"),
        (lambda: CategoricalGrades({"social": 2})(["social", np.nan]), ValueError,
         r"values\[1\] is missing \(nan\)"),
        (lambda: PRESETS["share"]({"share": ["social", "whatsapp"]}), ValueError,
         r"column 'share': values\[1\] = 'whatsapp'"),
        (lambda: ThresholdGrades([(0.6, 1), (0.3, 0)]), ValueError,
         r"strictly increasing threshold; bins\[1\]\.upper = 0\.3 is not above bins\[0\]\.upper = 0\.6"),
        (lambda: ThresholdGrades([(0.3, 0), (0.3, 1)]), ValueError, r"bins\[1\]\.upper = 0\.3"),
        (lambda: ThresholdGrades([(np.nan, 0)]), ValueError, r"bins\[0\]\.upper must not be NaN"),
        (lambda: ThresholdGrades([(0.3, -1)]), ValueError, r"bins\[0\]\.grade must be a finite grade >= 0, got -1"),
        (lambda: ThresholdGrades([(0.3, np.nan)]), ValueError, r"bins\[0\]\.grade .* got nan"),
        (lambda: ThresholdGrades([]), ValueError, r"bins is empty"),
        (lambda: ThresholdGrades([(0.3,)]), TypeError, r"bins\[0\] must be an \(upper, grade\) pair"),
        (lambda: ThresholdGrades([("a", 1)]), TypeError, r"bins\[0\]\.upper must be a number, got 'a'"),
        (lambda: ThresholdGrades([(0.3, 0)], above=np.inf), ValueError, r"above must be a finite grade"),
        (lambda: PRESETS["watch"]({"watch_fraction": [0.5, np.nan]}), ValueError,
         r"column 'watch_fraction': values\[1\] is nan"),
        (lambda: ThresholdGrades([(0.3, 0)])([0.1, 0.4]), ValueError,
         r"values\[1\] = 0\.4 is >= the last threshold 0\.3 and no 'above' grade"),
        (lambda: ThresholdGrades([(0.3, 0)])(["x"]), TypeError, r"values must be numbers, got 'x'"),
        (lambda: ThresholdGrades([(0.3, 0)], above=1)(np.zeros((2, 2))), ValueError, r"must be 1-D"),
        (lambda: CategoricalGrades({}), ValueError, r"mapping is empty"),
        (lambda: CategoricalGrades({"a": "high"}), TypeError, r"mapping\['a'\] must be a number, got 'high'"),
        (lambda: CategoricalGrades({"a": 1}, default=-2), ValueError, r"default must be a finite grade >= 0, got -2"),
        (lambda: PRESETS["watch"]({"watched": [0.5]}), ValueError, r"values has no column 'watch_fraction'"),
        (lambda: PRESETS["ecommerce"]({"event": ["click"], "dwell_seconds": [1.0, 2.0]}), ValueError,
         r"column 'dwell_seconds' has 2 rows but 'event' has 1"),
        (lambda: PRESETS["ecommerce"]([1, 2]), TypeError, r"values must be a mapping or DataFrame"),
        (lambda: GradeMapping({"a": CategoricalGrades({"x": 1})}, combine="mean"), ValueError,
         r"combine must be 'max' or 'sum', got 'mean'"),
        (lambda: GradeMapping({"a": 3}), TypeError, r"rules\['a'\] must be ThresholdGrades"),
        (lambda: GradeMapping({}), ValueError, r"rules is empty"),
        (lambda: GradeMapping.from_dict("clicks"), ValueError, r"unknown grade preset 'clicks'"),
        (lambda: from_dict({"type": "bins"}), ValueError, r"grader type must be .* got 'bins'"),
        (lambda: ThresholdGrades.from_dict({"type": "threshold", "bins": [[1, 0]], "abve": 2}),
         ValueError, r"unknown keys \['abve'\]"),
        (lambda: apply_mappings({"share": ["x"]}, {"share": "share"}), ValueError,
         r"objective 'share': column 'share': values\[0\] = 'x'"),
    ],
)
def test_grade_mappings_reject_bad_input_naming_the_value(call, exc, match):
    with pytest.raises(exc, match=match):
        call()

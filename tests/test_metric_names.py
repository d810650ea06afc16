"""Metric names: one registry, parser and formatter (ltr.metrics.names)."""

from __future__ import annotations

import subprocess
import sys

import pytest

from ltr import scoring
from ltr.metrics.names import (
    CONVENTIONS,
    METRICS,
    MetricName,
    format_metric_name,
    parse_metric_name,
)


@pytest.mark.parametrize(
    "args, kwargs, expected",
    [
        (("ndcg", 10), {}, "ndcg@10"),
        (("NDCG", 3), {}, "ndcg@3"),
        (("ndcg", 5), {"convention": "sklearn"}, "ndcg@5:sklearn"),
        (("composite_ndcg", 10), {}, "composite_ndcg@10"),
        (("ndcg", 10), {"objective": "watch"}, "ndcg@10/watch"),
    ],
)
def test_format_metric_name_spells_every_key(args, kwargs, expected):
    assert format_metric_name(*args, **kwargs) == expected


@pytest.mark.parametrize(
    "args, kwargs, exc, match",
    [
        (("map", 10), {}, ValueError, r"unknown metric 'map'"),
        (("ndcg", 0), {}, ValueError, r"k must be >= 1, got 0"),
        (("ndcg", 2.5), {}, TypeError, r"k must be an integer"),
        (("ndcg", 5), {"convention": "trec"}, ValueError, r"unknown convention 'trec'"),
        (("ndcg", 5), {"convention": "sklearn", "objective": "a"}, ValueError, r"not both"),
        (("ndcg", 5), {"objective": "a b"}, ValueError, r"objective must be a non-empty name"),
    ],
)
def test_format_metric_name_rejects_bad_parts(args, kwargs, exc, match):
    with pytest.raises(exc, match=match):
        format_metric_name(*args, **kwargs)


def test_parse_and_format_round_trip_over_the_registry():
    for metric in METRICS:
        for k in (1, 10, 200):
            key = format_metric_name(metric, k)
            assert parse_metric_name(key, metrics=METRICS) == MetricName(metric, k, None)
    for conv in CONVENTIONS:
        key = format_metric_name("ndcg", 5, convention=conv)
        assert str(parse_metric_name(key)) == key


def test_parse_defaults_to_scorer_metrics_only():
    with pytest.raises(ValueError, match=r"unknown metric 'composite_ndcg'; only 'ndcg'"):
        parse_metric_name("composite_ndcg@10")
    assert parse_metric_name("composite_ndcg@10", metrics=METRICS).metric == "composite_ndcg"
    with pytest.raises(ValueError, match="not of the form"):
        parse_metric_name("ndcg@10/watch")


def test_scoring_reexports_the_one_parser():
    assert scoring.parse_metric_name is parse_metric_name
    assert scoring.MetricName is MetricName
    assert scoring.CONVENTIONS is CONVENTIONS


def test_metric_names_imports_nothing_above_validation():
    code = (
        "import sys, ltr.metrics.names; "
        "print(sorted(m for m in sys.modules if m.startswith('ltr')))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "['ltr', 'ltr._validation', 'ltr.metrics', 'ltr.metrics.names']"

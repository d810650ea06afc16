"""Metric names: one registry, parser and formatter (ltr.metrics.names)."""

from __future__ import annotations

import subprocess
import sys

import pytest

from ltr import scoring
from ltr.metrics.names import (
    ALIASES,
    CONVENTIONS,
    EVALUATION_METRICS,
    METRICS,
    MONITOR_METRICS,
    NAME_CONVENTIONS,
    QRELS_CONVENTIONS,
    REGISTRY,
    SCORER_METRICS,
    Convention,
    MetricName,
    format_metric_name,
    metric_function,
    metric_info,
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
        (("mapp", 10), {}, ValueError, r"unknown metric 'mapp' \(did you mean 'map'\?\)"),
        (("map", 10), {"metrics": METRICS}, ValueError, r"'map' is not accepted here"),
        (("r-precision", 5), {}, ValueError, r"takes no cut-off"),
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
    for conv in NAME_CONVENTIONS:
        key = format_metric_name("ndcg", 5, convention=conv)
        assert str(parse_metric_name(key)) == key


def test_parse_defaults_to_scorer_metrics():
    with pytest.raises(ValueError, match=r"'composite_ndcg' is not accepted here"):
        parse_metric_name("composite_ndcg@10")
    assert parse_metric_name("composite_ndcg@10", metrics=METRICS).metric == "composite_ndcg"
    for metric in SCORER_METRICS:
        assert parse_metric_name(metric).metric == metric
    with pytest.raises(ValueError, match="not of the form METRIC, METRIC@K or METRIC@K:CONV"):
        parse_metric_name("ndcg@10/watch")
    with pytest.raises(ValueError, match=r"give a cut-off, as in 'map@10'"):
        parse_metric_name("map", k_optional=False)


def test_scoring_reexports_the_one_parser():
    assert scoring.parse_metric_name is parse_metric_name
    assert scoring.MetricName is MetricName
    assert scoring.CONVENTIONS is CONVENTIONS


def test_there_is_one_convention_registry():
    from ltr import metrics

    assert metrics.CONVENTIONS is CONVENTIONS
    assert metrics.Convention is Convention
    assert set(NAME_CONVENTIONS) | set(QRELS_CONVENTIONS) == set(CONVENTIONS)
    assert NAME_CONVENTIONS == ("lightgbm", "xgboost", "sklearn")
    assert QRELS_CONVENTIONS == ("trec_eval", "ranx")
    with pytest.warns(DeprecationWarning, match="QRELS_CONVENTIONS"):
        from ltr.evaluation import CONVENTIONS as old
    assert old == QRELS_CONVENTIONS


# aliases users bring from trec_eval / pytrec_eval, ir_measures, ranx, XGBoost
ALIAS_CASES = [
    ("P@10", "precision", 10), ("P_10", "precision", 10), ("P.5", "precision", 5),
    ("pre@3", "precision", 3), ("recip_rank", "mrr", None), ("RR@10", "mrr", 10),
    ("reciprocal_rank", "mrr", None), ("ndcg_cut_10", "ndcg", 10), ("ndcg_cut.20", "ndcg", 20),
    ("nDCG@10", "ndcg", 10), ("map_cut_10", "map", 10), ("AP", "map", None),
    ("AP@100", "map", 100), ("average_precision", "map", None), ("Rprec", "r-precision", None),
    ("r_precision", "r-precision", None), ("recall_100", "recall", 100),
    ("R@1000", "recall", 1000), ("success_5", "hit_rate", 5), ("Success@10", "hit_rate", 10),
    ("hr@10", "hit_rate", 10), ("ERR@20", "err", 20), ("dcg_10", "dcg", 10),
]


@pytest.mark.parametrize("name, metric, k", ALIAS_CASES)
def test_every_alias_resolves_to_its_canonical_metric(name, metric, k):
    assert parse_metric_name(name, metrics=EVALUATION_METRICS) == MetricName(metric, k, None)


def test_every_alias_of_the_table_resolves():
    for alias, metric in ALIASES.items():
        assert metric in REGISTRY
        assert metric_info(alias).name == metric
        spelled = f"{alias}@5" if REGISTRY[metric].cutoff else alias
        assert parse_metric_name(spelled, metrics=tuple(REGISTRY)).metric == metric


@pytest.mark.parametrize(
    "name, match",
    [
        ("nDGC@10", r"unknown metric 'nDGC' \(did you mean 'ndcg'\?\)"),
        ("recip_rnk", r"did you mean 'recip_rank'\?"),
        ("precison@5", r"did you mean 'precision'\?"),
        ("ndcg@10:lightgmb", r"unknown convention 'lightgmb' \(did you mean 'lightgbm'\?\)"),
        ("banana@3", r"unknown metric 'banana'; expected one of"),
    ],
)
def test_a_misspelt_name_gets_a_did_you_mean(name, match):
    with pytest.raises(ValueError, match=match) as info:
        parse_metric_name(name, metrics=EVALUATION_METRICS)
    assert "ndcg@K'" not in str(info.value)  # the old nDCG-only wording is gone


def test_results_are_keyed_by_the_name_passed():
    from ltr.evaluation import evaluate

    qrels = {"q1": {"a": 2, "b": 0, "c": 1}, "q2": {"d": 1, "e": 0}}
    run = {"q1": {"a": 0.9, "b": 0.8, "c": 0.7}, "q2": {"d": 0.1, "e": 0.5}}
    passed = ["P_2", "precision@2", "recip_rank", "ndcg_cut_3", "Rprec", "map_cut_2"]
    canonical = ["precision@2", "precision@2", "mrr", "ndcg@3", "r-precision", "map@2"]
    res = evaluate(qrels, run, passed)
    assert list(res.mean) == passed
    ref = evaluate(qrels, run, canonical[1:])
    for alias, name in zip(passed, canonical):
        assert res.mean[alias] == ref.mean[name]


def test_every_registry_metric_has_its_function_and_kernel():
    from ltr.kernels import _rank as K

    for name in EVALUATION_METRICS:
        info = REGISTRY[name]
        assert callable(metric_function(name))
        assert isinstance(getattr(K, str(info.kernel)), int)
    assert set(MONITOR_METRICS) == set(EVALUATION_METRICS)
    assert set(SCORER_METRICS) == set(EVALUATION_METRICS)  # every qrels metric has a scorer
    assert {"ips_ndcg", "snips_dcg", "click_ndcg", "composite_ndcg", "ndcg"} <= set(METRICS)


def test_metric_names_imports_nothing_above_validation():
    code = (
        "import sys, ltr.metrics.names; "
        "print(sorted(m for m in sys.modules if m.startswith('ltr')))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "['ltr', 'ltr._validation', 'ltr.metrics', 'ltr.metrics.names']"

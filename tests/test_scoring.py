"""ltr.scoring: nDCG scorers for scikit-learn, metric names, qid transport and errors."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
import sklearn
from sklearn.metrics import ndcg_score
from sklearn.model_selection import GroupKFold, ShuffleSplit, cross_validate
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler

from ltr.datasets import load_letor
from ltr.estimator import GroupedRanker
from ltr.metrics import ndcg
from ltr.metrics.composite import composite_ndcg
from ltr.metrics.names import NAME_CONVENTIONS
from ltr.scoring import (
    MetricName,
    NDCGScorer,
    RankScorer,
    get_scorer,
    get_scorer_names,
    make_ndcg_scorer,
    parse_metric_name,
)
from ltr.testing import check_score_is_ndcg, deterministic_params

lgb = pytest.importorskip("lightgbm")


# LightGBM rankers compared across two trainings use these settings.
LGBM = deterministic_params("lightgbm", "sklearn", n_estimators=10, num_leaves=7)


@pytest.fixture(scope="module")
def train(letor_slice_dir):
    return load_letor(letor_slice_dir / "rank.train")


@pytest.fixture(scope="module")
def test_data(letor_slice_dir):
    return load_letor(letor_slice_dir / "rank.test", n_features=300)


@pytest.fixture(scope="module")
def lgb_ranker(train):
    sizes = np.diff(train.offsets)
    return lgb.LGBMRanker(
        **deterministic_params("lightgbm", "sklearn", n_estimators=20, num_leaves=15)
    ).fit(train.X, train.y, group=sizes)


def _sklearn_reference(y, s, qid, k):
    """Mean over queries of sklearn's ndcg_score (linear gain, averaged ties, empty -> 0)."""
    values = []
    for q in np.unique(qid):
        m = qid == q
        if m.sum() == 1:  # sklearn refuses single-document lists; nDCG is 1 or 0 (empty)
            values.append(1.0 if y[m][0] > 0 else 0.0)
        else:
            values.append(ndcg_score(y[m][None, :], s[m][None, :], k=k))
    return float(np.mean(values))


# --------------------------------------------------------------------------- #
# metric names                                                                 #
# --------------------------------------------------------------------------- #


@pytest.mark.parametrize(
    "name, expected",
    [
        ("ndcg@10", MetricName("ndcg", 10, None)),
        ("NDCG@5", MetricName("ndcg", 5, None)),
        ("ndcg@5:sklearn", MetricName("ndcg", 5, "sklearn")),
        (" ndcg@1:LightGBM ", MetricName("ndcg", 1, "lightgbm")),
        ("ndcg@200:xgboost", MetricName("ndcg", 200, "xgboost")),
    ],
)
def test_parse_metric_name_reads_k_and_convention(name, expected):
    assert parse_metric_name(name) == expected


def test_metric_name_str_round_trips():
    for name in get_scorer_names():
        assert str(parse_metric_name(name)) == name


@pytest.mark.parametrize(
    "name, exc, match",
    [
        ("ndcg@", ValueError, "not of the form METRIC, METRIC@K or METRIC@K:CONVENTION"),
        ("ndcg@10/watch", ValueError, "not of the form METRIC"),
        ("composite_ndcg@10", ValueError, "'composite_ndcg' is not accepted here"),
        ("nDGC@10", ValueError, r"unknown metric 'nDGC' \(did you mean 'ndcg'\?\)"),
        ("ndcg@ten", ValueError, "K must be an integer >= 1, got 'ten'"),
        ("ndcg@0", ValueError, "K must be an integer >= 1, got 0"),
        ("ndcg@10:foo", ValueError, "unknown convention 'foo'"),
        ("ndcg@10:lightgmb", ValueError, r"did you mean 'lightgbm'\?"),
        ("ndcg@10:trec_eval", ValueError, "convention 'trec_eval' does not apply here"),
        (10, TypeError, "metric name must be a str"),
    ],
)
def test_parse_metric_name_rejects_bad_names_with_informative_errors(name, exc, match):
    with pytest.raises(exc, match=match):
        parse_metric_name(name)


def test_get_scorer_resolves_every_registered_name():
    names = get_scorer_names()
    assert "ndcg@10" in names and "ndcg@5:sklearn" in names
    for name in names:
        scorer = get_scorer(name)
        parsed = parse_metric_name(name)
        assert isinstance(scorer, NDCGScorer) and isinstance(scorer, RankScorer)
        assert scorer.k == parsed.k
        assert scorer.ndcg_options.get("convention") == parsed.convention
    assert set(NAME_CONVENTIONS) <= {parse_metric_name(n).convention for n in names}


def test_get_scorer_accepts_unregistered_k_and_passes_scorers_through():
    assert get_scorer("ndcg@7").k == 7
    scorer = make_ndcg_scorer(3)
    assert get_scorer(scorer) is scorer
    with pytest.raises(ValueError, match="unknown metric"):
        get_scorer("accuracy@3")
    assert get_scorer("ndcg").k is None  # no cut-off: the whole list


# --------------------------------------------------------------------------- #
# construction and repr                                                        #
# --------------------------------------------------------------------------- #


def test_repr_rebuilds_the_call():
    scorer = make_ndcg_scorer(5, gain="linear", ties="stable", empty=1.0, qid_column="qid")
    text = repr(scorer)
    assert (
        text == "make_ndcg_scorer(k=5, qid_column='qid', gain='linear', ties='stable', empty=1.0)"
    )
    rebuilt = eval(text, {"make_ndcg_scorer": make_ndcg_scorer})
    assert repr(rebuilt) == text
    assert repr(make_ndcg_scorer()) == "make_ndcg_scorer(k=10)"


@pytest.mark.parametrize(
    "kwargs, exc, match",
    [
        ({"k": 0}, ValueError, "k must be >= 1, got 0"),
        ({"k": 2.5}, TypeError, "k must be an integer, got 2.5"),
        ({"qid": [1, 2]}, TypeError, r"unknown option\(s\) \['qid'\]"),
        ({"reduce": None}, TypeError, r"unknown option\(s\) \['reduce'\]"),
        ({"objectives": {}}, TypeError, "objectives must be a non-empty mapping"),
        ({"gain": "cubic"}, ValueError, "gain"),
        ({"convention": "nope"}, ValueError, "convention"),
        ({"ties": "random"}, ValueError, "ties"),
    ],
)
def test_make_ndcg_scorer_rejects_bad_arguments_with_informative_errors(kwargs, exc, match):
    with pytest.raises(exc, match=match):
        make_ndcg_scorer(**kwargs)


# --------------------------------------------------------------------------- #
# values                                                                       #
# --------------------------------------------------------------------------- #


def test_scorer_equals_metric_on_predictions(test_data, lgb_ranker):
    pred = lgb_ranker.predict(test_data.X)
    for k in (1, 5, 10):
        got = make_ndcg_scorer(k)(lgb_ranker, test_data.X, test_data.y, qid=test_data.qid)
        check_score_is_ndcg(got, lambda X: pred, test_data.X, test_data.y, qid=test_data.qid, k=k)
        assert type(got) is float


def test_sklearn_convention_matches_sklearn_ndcg_score_per_query(test_data, lgb_ranker):
    pred = lgb_ranker.predict(test_data.X)
    got = get_scorer("ndcg@5:sklearn")(lgb_ranker, test_data.X, test_data.y, qid=test_data.qid)
    assert got == pytest.approx(_sklearn_reference(test_data.y, pred, test_data.qid, 5), abs=1e-12)


def test_ndcg_options_pass_through(test_data, lgb_ranker):
    pred = lgb_ranker.predict(test_data.X)
    X, y, qid = test_data.X, test_data.y, test_data.qid
    for opts in (
        {"gain": "linear"},
        {"ties": "pessimistic"},
        {"empty": 1.0},
        {"convention": "lightgbm"},
        {"discount": "log2"},
    ):
        got = make_ndcg_scorer(10, **opts)(lgb_ranker, X, y, qid=qid)
        assert got == pytest.approx(float(ndcg(y, pred, qid=qid, k=10, **opts)), abs=1e-12)
    linear = make_ndcg_scorer(10, gain="linear")(lgb_ranker, X, y, qid=qid)
    exp2 = make_ndcg_scorer(10)(lgb_ranker, X, y, qid=qid)
    assert linear != exp2


def test_scorer_works_with_xgboost_ranker_and_pipelines(train, test_data):
    xgb = pytest.importorskip("xgboost")
    sizes = np.diff(train.offsets)
    scorer = make_ndcg_scorer(10)
    models = [
        xgb.XGBRanker(
            **deterministic_params("xgboost", "sklearn", n_estimators=10, max_depth=4)
        ).fit(train.X, train.y, qid=train.qid),
        make_pipeline(StandardScaler(), lgb.LGBMRanker(n_estimators=10, verbose=-1, n_jobs=1)).fit(
            train.X, train.y, lgbmranker__group=sizes
        ),
    ]
    for model in models:
        got = scorer(model, test_data.X, test_data.y, qid=test_data.qid)
        check_score_is_ndcg(got, model, test_data.X, test_data.y, qid=test_data.qid, k=10)
        assert 0.3 < got <= 1.0


def test_scorer_reads_and_drops_its_qid_column(test_data, lgb_ranker):
    frame = pd.DataFrame(test_data.X, columns=test_data.feature_names)
    frame.insert(0, "query", test_data.qid)
    scorer = make_ndcg_scorer(10, qid_column="query")
    direct = make_ndcg_scorer(10)(lgb_ranker, test_data.X, test_data.y, qid=test_data.qid)
    assert scorer(lgb_ranker, frame, test_data.y) == pytest.approx(direct, abs=1e-12)
    # metadata qid wins over the column (same ids here)
    assert scorer(lgb_ranker, frame, test_data.y, qid=test_data.qid) == pytest.approx(
        direct, abs=1e-12
    )


def test_composite_labels_give_composite_total(test_data, lgb_ranker):
    rng = np.random.default_rng(0)
    share = rng.integers(0, 3, size=len(test_data.y)).astype(float)
    y2 = pd.DataFrame({"watch": test_data.y, "share": share})
    weights = {"watch": 0.7, "share": 0.3}
    scorer = make_ndcg_scorer(10, objectives=weights)
    got = scorer(lgb_ranker, test_data.X, y2, qid=test_data.qid)
    pred = lgb_ranker.predict(test_data.X)
    expected = composite_ndcg(
        {"watch": test_data.y, "share": share}, pred, qid=test_data.qid, weights=weights, k=10
    ).total
    assert got == pytest.approx(float(expected), abs=1e-12)
    # a 2-D array follows the order of the objectives mapping
    arr = np.column_stack([test_data.y, share])
    assert scorer(lgb_ranker, test_data.X, arr, qid=test_data.qid) == pytest.approx(got, abs=1e-12)
    with pytest.raises(ValueError, match="no objective weights are known"):
        make_ndcg_scorer(10)(lgb_ranker, test_data.X, y2, qid=test_data.qid)


# --------------------------------------------------------------------------- #
# errors                                                                       #
# --------------------------------------------------------------------------- #


def test_missing_qid_error_names_both_ways_to_pass_it(test_data, lgb_ranker):
    with pytest.raises(ValueError, match="enable_metadata_routing=True") as info:
        make_ndcg_scorer(10)(lgb_ranker, test_data.X, test_data.y)
    assert "qid_column" in str(info.value)
    frame = pd.DataFrame(test_data.X)
    with pytest.raises(ValueError, match="X has no column 'qid'"):
        make_ndcg_scorer(10, qid_column="qid")(lgb_ranker, frame, test_data.y)


def test_non_contiguous_qid_is_an_error_not_a_wrong_number(test_data, lgb_ranker):
    qid = test_data.qid.copy()
    order = np.random.default_rng(0).permutation(len(qid))
    with pytest.raises(ValueError, match=r"qid is not contiguous .* query \d+ appears at row"):
        make_ndcg_scorer(10)(lgb_ranker, test_data.X[order], test_data.y[order], qid=qid[order])


def test_qid_length_mismatch_is_an_error(test_data, lgb_ranker):
    n = len(test_data.y)
    with pytest.raises(ValueError, match=rf"qid has {n - 1} entries but X has {n} rows"):
        make_ndcg_scorer(10)(lgb_ranker, test_data.X, test_data.y, qid=test_data.qid[:-1])


def test_y_length_mismatch_is_an_error(test_data, lgb_ranker):
    n = len(test_data.y)
    with pytest.raises(ValueError, match=f"y has {n - 1} rows but X has {n}"):
        make_ndcg_scorer(10)(lgb_ranker, test_data.X, test_data.y[:-1], qid=test_data.qid)


def test_unexpected_metadata_is_rejected(test_data, lgb_ranker):
    with pytest.raises(TypeError, match=r"unexpected metadata \['groups'\]"):
        make_ndcg_scorer(10)(lgb_ranker, test_data.X, test_data.y, qid=test_data.qid, groups=1)


# --------------------------------------------------------------------------- #
# metadata routing                                                             #
# --------------------------------------------------------------------------- #


def test_scorer_requests_qid_by_default_and_set_score_request_changes_it():
    with sklearn.config_context(enable_metadata_routing=True):
        scorer = make_ndcg_scorer(10)
        assert scorer.get_metadata_routing().score.requests == {"qid": True}
        scorer.set_score_request(qid="query_ids")
        assert scorer.get_metadata_routing().score.requests == {"qid": "query_ids"}
    with pytest.raises(RuntimeError, match="enable_metadata_routing"):
        make_ndcg_scorer(10).set_score_request(qid=True)


def test_cross_validate_with_several_scorers_routes_qid(train):
    ranker = GroupedRanker(lgb.LGBMRanker(**LGBM))
    cv = GroupKFold(n_splits=3)
    with sklearn.config_context(enable_metadata_routing=True):
        result = cross_validate(
            ranker,
            train.X,
            train.y,
            cv=cv,
            scoring={"ndcg@5": get_scorer("ndcg@5"), "ndcg@10": make_ndcg_scorer(10)},
            params={"qid": train.qid, "groups": train.qid},
        )
    for i, (tr, te) in enumerate(cv.split(train.X, train.y, groups=train.qid)):
        model = lgb.LGBMRanker(**LGBM)
        model.fit(train.X[tr], train.y[tr], group=np.unique(train.qid[tr], return_counts=True)[1])
        pred = model.predict(train.X[te])
        for k in (5, 10):
            expected = float(ndcg(train.y[te], pred, qid=train.qid[te], k=k))
            assert result[f"test_ndcg@{k}"][i] == pytest.approx(expected, abs=1e-12)


def test_row_wise_shuffle_split_is_reported_not_silently_scored(train):
    # ShuffleSplit hands the scorer rows in shuffled order: queries come apart.
    # (KFold keeps test rows in input order, so its cut queries stay contiguous and
    # cannot be told from whole ones: use GroupKFold, as documented.)
    ranker = GroupedRanker(lgb.LGBMRanker(n_estimators=5, verbose=-1, n_jobs=1))
    with (
        sklearn.config_context(enable_metadata_routing=True),
        pytest.raises(ValueError, match="qid is not contiguous"),
    ):
        cross_validate(
            ranker,
            train.X,
            train.y,
            cv=ShuffleSplit(2, test_size=0.3, random_state=0),
            scoring=make_ndcg_scorer(10),
            params={"qid": train.qid},
            error_score="raise",
        )


# --------------------------------------------------------------------------- #
# one scorer class; the former classes                                        #
# --------------------------------------------------------------------------- #


def test_one_scorer_class_serves_every_metric_without_a_subclass_chain():
    from ltr.scoring import IPSNDCGScorer, make_ips_ndcg_scorer

    scorers = [get_scorer("ndcg@10"), get_scorer("map@10"), get_scorer("recip_rank"),
               make_ips_ndcg_scorer(5, propensity=[1.0, 0.5])]
    assert {type(s) for s in scorers} == {RankScorer}
    assert RankScorer.__subclasses__() == []
    # the former class names now test the metric, not the class
    assert isinstance(get_scorer("ndcg@10"), NDCGScorer)
    assert not isinstance(get_scorer("map@10"), NDCGScorer)
    assert not isinstance(get_scorer("ndcg@10"), IPSNDCGScorer)
    assert isinstance(scorers[-1], IPSNDCGScorer)


def test_former_scorer_classes_warn_and_build_the_one_class():
    from ltr.scoring import IPSNDCGScorer

    with pytest.warns(DeprecationWarning, match=r"NDCGScorer\(\.\.\.\) is deprecated.*"
                                                r"make_ndcg_scorer"):
        scorer = NDCGScorer(5, gain="linear")
    assert type(scorer) is RankScorer and repr(scorer) == "make_ndcg_scorer(k=5, gain='linear')"
    with pytest.warns(DeprecationWarning, match="make_ips_ndcg_scorer"):
        ips = IPSNDCGScorer(3, propensity=np.array([1.0, 0.5]))
    assert ips.metric == "ips_ndcg" and ips.k == 3


def test_make_rank_scorer_takes_aliases_and_every_scorer_metric():
    from ltr.metrics.names import SCORER_METRICS
    from ltr.scoring import make_rank_scorer

    for metric in SCORER_METRICS:
        k = None if metric == "r-precision" else 5
        assert make_rank_scorer(metric, k).metric == metric
    assert make_rank_scorer("recip_rank", None).metric == "mrr"
    assert repr(make_rank_scorer("P", 3)) == "make_rank_scorer('precision', k=3)"
    with pytest.raises(ValueError, match="'r-precision' takes no cut-off, got k=5"):
        make_rank_scorer("Rprec", 5)
    with pytest.raises(TypeError, match=r"unknown option\(s\) \['gain'\] for 'mrr'"):
        make_rank_scorer("mrr", 10, gain="exp2")

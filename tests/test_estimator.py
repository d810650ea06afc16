"""ltr.estimator: LambdaMARTRanker / GroupedRanker contract, engines, qid transport, errors."""

from __future__ import annotations

import functools
import pickle
import re

import numpy as np
import pandas as pd
import pytest
import sklearn
from sklearn.base import clone
from sklearn.utils._param_validation import InvalidParameterError
from sklearn.utils.estimator_checks import estimator_checks_generator
from sklearn.utils.validation import _num_samples

from ltr.datasets import load_letor
from ltr.estimator import GroupedRanker, LambdaMARTRanker
from ltr.metrics import ndcg
from ltr.metrics.composite import composite_ndcg
from ltr.testing import check_predictions_agree, deterministic_params

lgb = pytest.importorskip("lightgbm")

# Models compared for identical predictions pin LightGBM's determinism settings.
DETERMINISTIC = {"deterministic": True, "force_row_wise": True}
FAST = {"n_estimators": 10, "num_leaves": 7, "n_jobs": 1, "random_state": 0,
        "engine_params": DETERMINISTIC}


# --------------------------------------------------------------------------- #
# scikit-learn estimator checks                                                #
# --------------------------------------------------------------------------- #
#
# Which checks call fit (or score) without query ids depends on the installed
# scikit-learn version, so nothing here lists them.  Each check runs first on
# _OneQueryRanker, which supplies one query when qid is absent and, at every
# such call, asks the real LambdaMARTRanker whether it would refuse the call
# for lack of query ids (the ranker validates the data first, so invalid data
# gets sklearn's usual error instead).  Then on the real class the check must
#   * pass, when no call was refused, or
#   * fail because of exactly that "needs query ids" ValueError (raised as is,
#     or as the root cause of the check's own error), when one was.
# Any other failure fails the test.

_CHECK_PARAMS = {
    "n_estimators": 5,
    "num_leaves": 4,
    "min_child_samples": 1,
    "n_jobs": 1,
    "random_state": 0,
}
_WEIGHTS_NOT_REPEATS = (
    "LambdaRank losses are pairwise within a query: repeating a row adds pairs, so weight 2 is "
    "not equivalent to a duplicated row"
)
_XGB_QUERY_WEIGHTS = (
    "XGBoost's native rank:ndcg takes one weight per query; the check varies weights within "
    "its one query, which ltr.engines rejects with a ValueError"
)
_XGB_WEIGHT_ERROR = "XGBoost's native ranking objective takes one weight per query"
# Checks the one-query ranker fails by design: name -> (exception, message regex, why).
_ONE_QUERY_FAILURES = {
    "lightgbm": {
        "check_sample_weight_equivalence_on_dense_data": (
            AssertionError, "Not equal to tolerance", _WEIGHTS_NOT_REPEATS
        ),
        "check_sample_weight_equivalence_on_sparse_data": (
            AssertionError, "Not equal to tolerance", _WEIGHTS_NOT_REPEATS
        ),
    },
    "xgboost": {
        "check_sample_weight_equivalence_on_dense_data": (
            ValueError, _XGB_WEIGHT_ERROR, _XGB_QUERY_WEIGHTS
        ),
        "check_sample_weight_equivalence_on_sparse_data": (
            ValueError, _XGB_WEIGHT_ERROR, _XGB_QUERY_WEIGHTS
        ),
        "check_sample_weights_not_overwritten": (ValueError, _XGB_WEIGHT_ERROR, _XGB_QUERY_WEIGHTS),
    },
}
_NEEDS_QID = re.compile(
    r"(?P<owner>\w+)\.(fit|score) needs query ids and got none\. Pass them either .*"
    r"here qid_column is not set\.",
    re.DOTALL,
)
# What the one-query ranker saw during the current check: "refused" for each call
# the real class refuses for lack of query ids, "accepted" if it ever took one.
_CALLS_WITHOUT_QID: list[str] = []


def _probe(call) -> None:
    """Run ``call`` (the real class without query ids) and note how it ends."""
    try:
        call()
    except ValueError as exc:
        if _NEEDS_QID.fullmatch(str(exc)):
            _CALLS_WITHOUT_QID.append("refused")
    except Exception:  # noqa: BLE001, S110 - invalid data: rejected before query ids are looked at
        pass
    else:
        _CALLS_WITHOUT_QID.append("accepted")


class _OneQueryRanker(LambdaMARTRanker):
    """Test-only: treats rows as one query when no qid is given, so sklearn's checks can fit."""

    def fit(self, X, y, *, qid=None, group=None, sample_weight=None, eval_set=None, eval_qid=None):
        if qid is None and group is None and self.qid_column is None:
            real = LambdaMARTRanker(**self.get_params())
            _probe(lambda: real.fit(X, y, sample_weight=sample_weight, eval_set=eval_set,
                                    eval_qid=eval_qid))
            qid = np.zeros(_num_samples(X), dtype=np.int64)
        return super().fit(
            X,
            y,
            qid=qid,
            group=group,
            sample_weight=sample_weight,
            eval_set=eval_set,
            eval_qid=eval_qid,
        )

    def score(self, X, y, *, qid=None):
        if qid is None and self.qid_column is None:
            _probe(lambda: LambdaMARTRanker.score(self, X, y))
            qid = np.zeros(_num_samples(X), dtype=np.int64)
        return super().score(X, y, qid=qid)


def _check_name(check) -> str:
    while isinstance(check, functools.partial):
        check = check.func
    return check.__name__


def _check_id(check) -> str:
    keywords = check.keywords if isinstance(check, functools.partial) else {}
    extra = ",".join(f"{k}={v}" for k, v in sorted(keywords.items()))
    return f"{_check_name(check)}({extra})" if extra else _check_name(check)


def _checks(estimator) -> list:
    return [pytest.param(est, check, id=_check_id(check))
            for est, check in estimator_checks_generator(estimator, legacy=True)]


def _paired_checks() -> list:
    """Each check of the installed scikit-learn, for the one-query ranker and the real class."""
    one_query = list(estimator_checks_generator(_OneQueryRanker(**_CHECK_PARAMS), legacy=True))
    real = list(estimator_checks_generator(LambdaMARTRanker(**_CHECK_PARAMS), legacy=True))
    assert [_check_id(c) for _, c in one_query] == [_check_id(c) for _, c in real]
    return [pytest.param(e1, c1, e2, c2, id=_check_id(c1))
            for (e1, c1), (e2, c2) in zip(one_query, real)]


def _run_on_one_query_ranker(estimator, check, engine):
    name = _check_name(check)
    if name in _ONE_QUERY_FAILURES[engine]:
        exc, match, _why = _ONE_QUERY_FAILURES[engine][name]
        with pytest.raises(exc, match=match):
            check(estimator)
    else:
        check(estimator)


def _error_chain(exc: BaseException) -> list[BaseException]:
    chain = []
    while exc is not None and all(exc is not seen for seen in chain):
        chain.append(exc)
        exc = exc.__cause__ or exc.__context__
    return chain


@pytest.mark.parametrize("one_query, check, real, real_check", _paired_checks())
def test_sklearn_check_passes_unless_it_fits_without_qid(one_query, check, real, real_check):
    _CALLS_WITHOUT_QID.clear()
    _run_on_one_query_ranker(one_query, check, "lightgbm")
    assert "accepted" not in _CALLS_WITHOUT_QID, "LambdaMARTRanker fitted without query ids"
    refused = "refused" in _CALLS_WITHOUT_QID
    if not refused:
        real_check(real)
        return
    with pytest.raises(Exception) as info:
        real_check(real)
    chain = _error_chain(info.value)
    root = chain[-1]
    # the root cause is the ranker's own "needs query ids" error, raised by fit or score
    assert type(root) is ValueError, chain
    match = _NEEDS_QID.fullmatch(str(root))
    assert match and match["owner"] == "LambdaMARTRanker", chain


@pytest.mark.parametrize(
    "one_query, check",
    _checks(_OneQueryRanker(engine="xgboost", **_CHECK_PARAMS)),
)
def test_sklearn_check_on_one_query_xgboost_ranker(one_query, check):
    _run_on_one_query_ranker(one_query, check, "xgboost")


# --------------------------------------------------------------------------- #
# fixtures                                                                     #
# --------------------------------------------------------------------------- #


@pytest.fixture(scope="module")
def train(letor_slice_dir):
    return load_letor(letor_slice_dir / "rank.train")


@pytest.fixture(scope="module")
def test_data(letor_slice_dir):
    return load_letor(letor_slice_dir / "rank.test", n_features=300)


@pytest.fixture(scope="module")
def random_ceiling(test_data):
    """Best nDCG@10 of 200 random rankings of the test queries: a floor a model must beat.

    On the slice's 10 test queries random rankings average about 0.58 and the best
    of 200 is about 0.70; LightGBM's own LGBMRanker with FAST's settings reaches
    0.86 and XGBRanker (10 trees, depth 4) 0.81.
    """
    rng = np.random.default_rng(0)
    return max(
        float(ndcg(test_data.y, rng.random(len(test_data.y)), qid=test_data.qid, k=10))
        for _ in range(200)
    )


@pytest.fixture(scope="module")
def fitted(train):
    return LambdaMARTRanker(**FAST).fit(train.X, train.y, qid=train.qid)


def _frame(data, qid_name="qid"):
    frame = pd.DataFrame(data.X, columns=data.feature_names)
    frame.insert(3, qid_name, data.qid)  # anywhere: it is taken out by name
    return frame


# --------------------------------------------------------------------------- #
# fit / predict / score                                                        #
# --------------------------------------------------------------------------- #


def test_fit_sets_fitted_attributes_and_learns(fitted, train, test_data, random_ceiling):
    assert fitted.n_features_in_ == 300
    assert not hasattr(fitted, "feature_names_in_")
    assert fitted.n_queries_ == train.n_queries
    assert fitted.booster_ is fitted.model_.booster
    assert isinstance(fitted.booster_, lgb.Booster)
    assert fitted.booster_.num_trees() == 10
    pred = fitted.predict(test_data.X)
    assert pred.dtype == np.float64 and pred.shape == (len(test_data.y),)
    # quality on LightGBM's own lambdarank example (10 small trees): better than any of
    # 200 random rankings, and as good as LightGBM's LGBMRanker with the same settings
    value = float(ndcg(test_data.y, pred, qid=test_data.qid, k=10))
    assert value > random_ceiling
    peer = lgb.LGBMRanker(**deterministic_params(
        "lightgbm", "sklearn", n_estimators=10, num_leaves=7, min_child_samples=20
    )).fit(train.X, train.y, group=np.diff(train.offsets))
    assert value >= float(ndcg(test_data.y, peer.predict(test_data.X), qid=test_data.qid,
                               k=10)) - 0.02


def test_score_is_mean_ndcg_at_first_eval_at(fitted, test_data):
    pred = fitted.predict(test_data.X)
    # in the engine's convention (the one of evals_result_)
    expected = float(ndcg(test_data.y, pred, qid=test_data.qid, k=10, convention="lightgbm"))
    assert fitted.score(test_data.X, test_data.y, qid=test_data.qid) == pytest.approx(
        expected, abs=1e-12
    )
    five = clone(fitted).set_params(eval_at=[5, 10])
    five.model_ = fitted.model_
    five.n_features_in_ = fitted.n_features_in_
    expected5 = float(ndcg(test_data.y, pred, qid=test_data.qid, k=5, convention="lightgbm"))
    assert five.score(test_data.X, test_data.y, qid=test_data.qid) == pytest.approx(
        expected5, abs=1e-12
    )


@pytest.mark.parametrize("engine", ["lightgbm", "xgboost"])
def test_score_and_evals_result_agree_on_the_convention(engine, train, test_data):
    """score() on an eval set is the last value of its evals_result_ curve (one convention)."""
    if engine == "xgboost":
        pytest.importorskip("xgboost")
    params = dict(FAST, engine=engine, eval_at=[10, 5])
    if engine == "xgboost":
        params["engine_params"] = {}
    model = LambdaMARTRanker(**params).fit(
        train.X, train.y, qid=train.qid, eval_set=[(test_data.X, test_data.y)],
        eval_qid=[test_data.qid],
    )
    curve = model.evals_result_["valid_0"]["ndcg@10"]
    assert len(curve) == model.n_estimators
    score = model.score(test_data.X, test_data.y, qid=test_data.qid)
    assert score == pytest.approx(curve[-1], abs=1e-12)
    # ltr's metric in that engine's convention (checked against the engine in test_metrics_peers)
    pred = model.predict(test_data.X)
    assert score == pytest.approx(
        float(ndcg(test_data.y, pred, qid=test_data.qid, k=10, convention=engine)), abs=1e-12
    )


def test_unsorted_rows_train_the_same_model_as_presorted_rows(train, test_data):
    rng = np.random.default_rng(0)
    perm = rng.permutation(len(train.y))
    X, y, qid = train.X[perm], train.y[perm], train.qid[perm]
    # the internal sort: stable, queries in order of first appearance
    first = {q: i for i, q in reversed(list(enumerate(qid)))}
    order = np.argsort([first[q] for q in qid], kind="stable")
    a = LambdaMARTRanker(**FAST).fit(X, y, qid=qid)
    b = LambdaMARTRanker(**FAST).fit(X[order], y[order], qid=qid[order])
    check_predictions_agree(a, b, test_data.X)
    # and score() sorts too: scoring shuffled rows equals the metric on those rows grouped
    # by query (a stable sort: LightGBM's convention orders tied scores by input order)
    tperm = rng.permutation(len(test_data.y))
    tq = test_data.qid[tperm]
    tfirst = {q: i for i, q in reversed(list(enumerate(tq)))}
    torder = tperm[np.argsort([tfirst[q] for q in tq], kind="stable")]
    pred = a.predict(test_data.X)
    assert a.score(test_data.X[tperm], test_data.y[tperm], qid=tq) == pytest.approx(
        float(ndcg(test_data.y[torder], pred[torder], qid=test_data.qid[torder], k=10,
                   convention="lightgbm")), abs=1e-12
    )


def test_group_sizes_and_qid_give_the_same_model(fitted, train, test_data):
    by_group = LambdaMARTRanker(**FAST).fit(train.X, train.y, group=np.diff(train.offsets))
    check_predictions_agree(by_group, fitted, test_data.X)


def test_qid_column_is_taken_out_of_a_dataframe(fitted, train, test_data):
    ranker = LambdaMARTRanker(qid_column="qid", **FAST).fit(_frame(train), train.y)
    assert ranker.n_features_in_ == 300
    assert list(ranker.feature_names_in_) == train.feature_names
    frame = _frame(test_data)
    expected = fitted.predict(test_data.X)
    np.testing.assert_array_equal(ranker.predict(frame), expected)  # column dropped
    np.testing.assert_array_equal(ranker.predict(frame.drop(columns="qid")), expected)
    assert ranker.score(frame, test_data.y) == pytest.approx(
        fitted.score(test_data.X, test_data.y, qid=test_data.qid), abs=1e-12
    )


def test_pickle_and_clone_round_trip(fitted, test_data):
    restored = pickle.loads(pickle.dumps(fitted))
    check_predictions_agree(restored, fitted, test_data.X)
    fresh = clone(fitted)
    assert fresh.get_params() == fitted.get_params()
    assert not hasattr(fresh, "model_")


def test_eval_set_records_our_ndcg_per_round(train, test_data):
    ranker = LambdaMARTRanker(eval_at=(5, 10), **FAST).fit(
        train.X,
        train.y,
        qid=train.qid,
        eval_set=[(test_data.X, test_data.y)],
        eval_qid=[test_data.qid],
    )
    history = ranker.evals_result_["valid_0"]
    assert set(history) >= {"ndcg@5", "ndcg@10"}
    assert len(history["ndcg@10"]) == 10
    # the curves follow the engine's own convention (ltr.engines.train's default), so they
    # equal LightGBM's ndcg@k eval; score() uses ltr.metrics.ndcg's default
    assert ranker.model_.convention == "lightgbm"
    expected = float(ndcg(test_data.y, ranker.predict(test_data.X), qid=test_data.qid, k=10,
                          convention="lightgbm"))
    assert history["ndcg@10"][-1] == pytest.approx(expected, abs=1e-9)
    assert ranker.best_iteration_ == 10  # no early stopping: every round is kept


def test_eval_set_takes_qid_from_its_column(train, test_data):
    ranker = LambdaMARTRanker(qid_column="qid", **FAST).fit(
        _frame(train), train.y, eval_set=[(_frame(test_data), test_data.y)]
    )
    expected = float(ndcg(test_data.y, ranker.predict(_frame(test_data)), qid=test_data.qid, k=10,
                          convention=ranker.model_.convention))
    assert ranker.evals_result_["valid_0"]["ndcg@10"][-1] == pytest.approx(expected, abs=1e-9)


def test_xgboost_engine_works_the_same_way(train, test_data, random_ceiling):
    xgb = pytest.importorskip("xgboost")
    ranker = LambdaMARTRanker(engine="xgboost", max_depth=4, **FAST).fit(
        train.X, train.y, qid=train.qid
    )
    assert isinstance(ranker.booster_, xgb.Booster)
    pred = ranker.predict(test_data.X)
    assert ndcg(test_data.y, pred, qid=test_data.qid, k=10) > random_ceiling
    restored = pickle.loads(pickle.dumps(ranker))
    np.testing.assert_allclose(restored.predict(test_data.X), pred, rtol=0, atol=0)


def test_sampling_uses_our_objective_and_schedule_changes_training(
    train, test_data, random_ceiling
):
    from ltr.objectives.sampling import TopKPairSampling

    native = LambdaMARTRanker(**FAST).fit(train.X, train.y, qid=train.qid)
    sampled = LambdaMARTRanker(sampling=TopKPairSampling(top=10), **FAST).fit(
        train.X, train.y, qid=train.qid
    )
    scheduled = LambdaMARTRanker(schedule=[(5, 5), (20, 5)], **FAST).fit(
        train.X, train.y, qid=train.qid
    )
    for model in (sampled, scheduled):
        assert model.booster_.num_trees() == 10
        pred = model.predict(test_data.X)
        assert not np.array_equal(pred, native.predict(test_data.X))
        assert ndcg(test_data.y, pred, qid=test_data.qid, k=10) > random_ceiling
    # the estimator is ltr.engines.train with its hyper-parameters mapped
    from ltr.engines import train as engine_train
    from ltr.objectives import LambdaRankObjective

    lgb_params = {
        "learning_rate": 0.1,
        "num_leaves": 7,
        "max_depth": -1,
        "min_data_in_leaf": 20,
        "verbosity": -1,
        **DETERMINISTIC,
    }
    common = {"params": lgb_params, "num_boost_round": 10, "random_state": 0, "n_jobs": 1}
    direct = engine_train(train.X, train.y, train.offsets, schedule=[(5, 5), (20, 5)], **common)
    check_predictions_agree(direct, scheduled, test_data.X)
    both = LambdaMARTRanker(sampling=TopKPairSampling(top=10), schedule=[(5, 5), (20, 5)], **FAST)
    both.fit(train.X, train.y, qid=train.qid)
    objective = LambdaRankObjective(k=20, sampling=TopKPairSampling(top=10), random_state=0)
    direct = engine_train(
        train.X, train.y, train.offsets, objective=objective, schedule=[(5, 5), (20, 5)], **common
    )
    check_predictions_agree(direct, both, test_data.X)
    assert not np.array_equal(both.predict(test_data.X), sampled.predict(test_data.X))
    # a sampled model pickles and clones like any other
    again = pickle.loads(pickle.dumps(sampled))
    check_predictions_agree(again, sampled, test_data.X)
    assert clone(sampled).get_params()["sampling"].top == 10


def test_composite_objectives_take_label_columns(train, test_data):
    rng = np.random.default_rng(1)
    share = (train.y >= 2).astype(float) * rng.integers(0, 2, len(train.y))
    y2 = pd.DataFrame({"watch": train.y, "share": share})
    weights = {"watch": 1.0, "share": 0.5}
    ranker = LambdaMARTRanker(objectives=weights, **FAST).fit(train.X, y2, qid=train.qid)
    assert ranker.booster_.num_trees() == 10
    tshare = (test_data.y >= 2).astype(float)
    ty = pd.DataFrame({"share": tshare, "watch": test_data.y})  # column order is by name
    got = ranker.score(test_data.X, ty, qid=test_data.qid)
    expected = composite_ndcg(
        {"watch": test_data.y, "share": tshare},
        ranker.predict(test_data.X),
        qid=test_data.qid,
        weights=weights,
        k=10,
        convention="lightgbm",  # score uses the engine's convention, as evals_result_
    ).total
    assert got == pytest.approx(float(expected), abs=1e-12)
    # a 2-D array follows the order of the objectives dict
    arr = ranker.fit(
        train.X,
        np.column_stack([train.y, share]),
        qid=train.qid,
        eval_set=[(test_data.X, ty)],
        eval_qid=[test_data.qid],
    )
    history = arr.evals_result_["valid_0"]
    curve_value = composite_ndcg(
        {"watch": test_data.y, "share": tshare},
        arr.predict(test_data.X),
        qid=test_data.qid,
        weights=weights,
        k=10,
        convention=arr.model_.convention,  # the curves use the engine's convention
    ).total
    assert history["composite_ndcg@10"][-1] == pytest.approx(float(curve_value), abs=1e-9)
    assert arr.score(test_data.X, np.column_stack([test_data.y, tshare]), qid=test_data.qid) == (
        pytest.approx(history["composite_ndcg@10"][-1], abs=1e-9)
    )
    assert ranker.__sklearn_tags__().target_tags.multi_output


# --------------------------------------------------------------------------- #
# metadata routing defaults                                                    #
# --------------------------------------------------------------------------- #


def test_fit_and_score_request_qid_by_default():
    with sklearn.config_context(enable_metadata_routing=True):
        routing = LambdaMARTRanker().get_metadata_routing()
        assert routing.fit.requests["qid"] is True
        assert routing.score.requests["qid"] is True
        ranker = LambdaMARTRanker().set_fit_request(qid=False, sample_weight=True)
        assert ranker.get_metadata_routing().fit.requests["qid"] is False
        assert ranker.get_metadata_routing().fit.requests["sample_weight"] is True


# --------------------------------------------------------------------------- #
# errors                                                                       #
# --------------------------------------------------------------------------- #


def test_missing_qid_error_says_both_ways_to_pass_it(train):
    with pytest.raises(ValueError, match="needs query ids") as info:
        LambdaMARTRanker(**FAST).fit(train.X, train.y)
    message = str(info.value)
    assert "qid=qid" in message and "enable_metadata_routing=True" in message
    assert "qid_column" in message
    with pytest.raises(ValueError, match="X has no column 'query'"):
        LambdaMARTRanker(qid_column="query", **FAST).fit(_frame(train), train.y)
    with pytest.raises(ValueError, match="qid_column='qid' is set but X is not a pandas DataFrame"):
        LambdaMARTRanker(qid_column="qid", **FAST).fit(train.X, train.y)


def test_score_without_qid_is_an_error(fitted, test_data):
    with pytest.raises(ValueError, match=r"LambdaMARTRanker.score needs query ids"):
        fitted.score(test_data.X, test_data.y)


def test_qid_length_must_match_rows(train):
    n = len(train.y)
    with pytest.raises(ValueError, match=f"qid has {n - 1} entries but X has {n} rows"):
        LambdaMARTRanker(**FAST).fit(train.X, train.y, qid=train.qid[:-1])


def test_qid_given_twice_is_an_error(train):
    with pytest.raises(ValueError, match="got qid twice"):
        LambdaMARTRanker(qid_column="qid", **FAST).fit(_frame(train), train.y, qid=train.qid)


def test_predict_with_a_different_number_of_features_is_an_error(fitted, test_data):
    with pytest.raises(
        ValueError, match="X has 299 features, but LambdaMARTRanker is expecting 300"
    ):
        fitted.predict(test_data.X[:, :-1])


def test_predict_before_fit_is_an_error(test_data):
    from sklearn.exceptions import NotFittedError

    with pytest.raises(NotFittedError):
        LambdaMARTRanker().predict(test_data.X)


@pytest.mark.parametrize(
    "params, match",
    [
        (
            {"engine": "catboost"},
            "'engine' parameter of LambdaMARTRanker must be a str among .*Got 'catboost'",
        ),
        ({"n_estimators": 0}, "'n_estimators' parameter .* range \\[1, 2147483647\\]. Got 0"),
        ({"n_estimators": 10**30}, "'n_estimators' parameter .* range \\[1, 2147483647\\]"),
        ({"k": 10**30}, "'k' parameter .* range \\[1, 2147483647\\]"),
        ({"learning_rate": 0.0}, "'learning_rate' parameter .* range \\(0.0, inf\\). Got 0.0"),
        ({"num_leaves": 1}, "'num_leaves' parameter .* range \\[2, 2147483647\\]. Got 1"),
        ({"max_depth": -3}, "'max_depth' parameter .* Got -3"),
        ({"min_child_samples": -1}, "'min_child_samples' parameter .* Got -1"),
        ({"k": 0}, "'k' parameter .* Got 0"),
        ({"k": 2.5}, "'k' parameter .* Got 2.5"),
        ({"eval_at": 0}, "'eval_at' parameter .* Got 0"),
        ({"eval_at": "10"}, "'eval_at' parameter .* Got '10'"),
        ({"objectives": ["a"]}, "'objectives' parameter .* Got \\['a'\\]"),
        ({"engine_params": "x"}, "'engine_params' parameter .* Got 'x'"),
        ({"random_state": "seed"}, "'random_state' parameter .* Got 'seed'"),
    ],
)
def test_invalid_hyper_parameters_are_rejected_in_fit(train, params, match):
    ranker = LambdaMARTRanker(**params)  # __init__ only stores
    with pytest.raises(InvalidParameterError, match=match):
        ranker.fit(train.X, train.y, qid=train.qid)


@pytest.mark.parametrize(
    "params, exc, match",
    [
        ({"eval_at": [10, 0]}, ValueError, r"eval_at\[1\] must be >= 1, got 0"),
        ({"eval_at": []}, ValueError, r"eval_at must not be an empty list"),
        ({"eval_at": [5, 10, 5]}, ValueError, r"eval_at lists cut-off 5 more than once"),
        (
            {"objectives": {"watch": -1.0}},
            ValueError,
            r"objectives\['watch'\] must be a finite weight >= 0, got -1.0",
        ),
        (
            {"objectives": {}},
            ValueError,
            r"objectives must map at least one label name to a weight, got \{\}",
        ),
        (
            {"sampling": "top"},
            TypeError,
            "sampling must be None or a ltr.objectives.sampling.TopKPairSampling, got 'top'",
        ),
        ({"schedule": [(0, 5)]}, ValueError, r"steps\[0\].k must be >= 1, got 0"),
    ],
)
def test_invalid_structured_parameters_name_the_entry(train, params, exc, match):
    with pytest.raises(exc, match=match):
        LambdaMARTRanker(**params).fit(train.X, train.y, qid=train.qid)


def test_bad_labels_and_weights_are_rejected(train):
    ranker = LambdaMARTRanker(**FAST)
    n = len(train.y)
    with pytest.raises(ValueError, match=rf"y has shape \({n}, 2\) but objectives is None"):
        ranker.fit(train.X, np.column_stack([train.y, train.y]), qid=train.qid)
    with pytest.raises(ValueError, match=r"without label column\(s\) \['share'\]"):
        LambdaMARTRanker(objectives={"watch": 1.0, "share": 1.0}).fit(
            train.X, pd.DataFrame({"watch": train.y}), qid=train.qid
        )
    with pytest.raises(ValueError, match=rf"sample_weight has 3 rows but X has {n}"):
        ranker.fit(train.X, train.y, qid=train.qid, sample_weight=np.ones(3))
    with pytest.raises(ValueError, match="eval_qid has 2 entries but eval_set has 1"):
        ranker.fit(
            train.X,
            train.y,
            qid=train.qid,
            eval_set=[(train.X, train.y)],
            eval_qid=[train.qid, train.qid],
        )


# --------------------------------------------------------------------------- #
# GroupedRanker adapter                                                        #
# --------------------------------------------------------------------------- #


def test_grouped_ranker_fits_lgbm_ranker_with_group_sizes_from_qid(train, test_data):
    params = deterministic_params("lightgbm", "sklearn", n_estimators=10, num_leaves=7)
    rng = np.random.default_rng(0)
    perm = rng.permutation(len(train.y))
    adapter = GroupedRanker(lgb.LGBMRanker(**params)).fit(
        train.X[perm], train.y[perm], qid=train.qid[perm]
    )
    first = {q: i for i, q in reversed(list(enumerate(train.qid[perm])))}
    order = np.argsort([first[q] for q in train.qid[perm]], kind="stable")
    sizes = np.unique(train.qid[perm][order], return_counts=True)
    sizes = [sizes[1][list(sizes[0]).index(q)] for q in dict.fromkeys(train.qid[perm][order])]
    direct = lgb.LGBMRanker(**params).fit(train.X[perm][order], train.y[perm][order], group=sizes)
    check_predictions_agree(adapter, direct, test_data.X)
    assert adapter.n_features_in_ == 300
    # score: nDCG@k in the wrapped engine's convention, at the adapter's k
    pred = direct.predict(test_data.X)
    assert adapter.score(test_data.X, test_data.y, qid=test_data.qid) == pytest.approx(
        float(ndcg(test_data.y, pred, qid=test_data.qid, k=10, convention="lightgbm")), abs=1e-12
    )
    at5 = clone(adapter).set_params(k=5, convention="sklearn")
    at5.estimator_ = adapter.estimator_
    assert at5.score(test_data.X, test_data.y, qid=test_data.qid) == pytest.approx(
        float(ndcg(test_data.y, pred, qid=test_data.qid, k=5, convention="sklearn")), abs=1e-12
    )
    restored = pickle.loads(pickle.dumps(adapter))
    check_predictions_agree(restored, adapter, test_data.X)


def test_grouped_ranker_reads_qid_column_and_rejects_missing_qid(train, test_data):
    adapter = GroupedRanker(
        lgb.LGBMRanker(**deterministic_params("lightgbm", "sklearn", n_estimators=5)),
        qid_column="qid",
    )
    adapter.fit(_frame(train), train.y)
    assert adapter.n_features_in_ == 300
    assert adapter.predict(_frame(test_data)).shape == (len(test_data.y),)
    with pytest.raises(ValueError, match=re.escape("GroupedRanker.fit needs query ids")):
        GroupedRanker(lgb.LGBMRanker()).fit(train.X, train.y)
    with pytest.raises(InvalidParameterError, match="'estimator' parameter of GroupedRanker"):
        GroupedRanker("lgbm").fit(train.X, train.y, qid=train.qid)


def _display_positions(qid: np.ndarray, seed: int) -> np.ndarray:
    """A random display rank per row: a permutation of 1..n within each query."""
    rng = np.random.default_rng(seed)
    position = np.zeros(len(qid), dtype=np.int64)
    for q in np.unique(qid):
        rows = np.flatnonzero(qid == q)
        position[rows] = rng.permutation(len(rows)) + 1
    return position


def test_grouped_ranker_carries_position_with_its_rows(train, test_data):
    """Shuffled rows + qid + position through the adapter == a manual sorted fit with group."""
    params = dict(FAST, n_estimators=5, unbiased=True, objective="lambdarank")
    rng = np.random.default_rng(1)
    perm = rng.permutation(len(train.y))
    X, y, qid = train.X[perm], train.y[perm], train.qid[perm]
    position = _display_positions(qid, seed=2)
    adapter = GroupedRanker(LambdaMARTRanker(**params)).fit(X, y, qid=qid, position=position)
    first = {q: i for i, q in reversed(list(enumerate(qid)))}
    order = np.argsort([first[q] for q in qid], kind="stable")
    sizes = [int((qid == q).sum()) for q in dict.fromkeys(qid[order])]
    direct = LambdaMARTRanker(**params).fit(X[order], y[order], group=sizes,
                                            position=position[order])
    check_predictions_agree(adapter, direct, test_data.X)
    # what the adapter did before: positions left in the original row order no longer
    # match their rows (here they do not even run 1..n within each query)
    with pytest.raises(ValueError, match="position must run 1..n within each query"):
        LambdaMARTRanker(**params).fit(X[order], y[order], group=sizes, position=position)


def test_grouped_ranker_refuses_position_its_estimator_cannot_take(train):
    position = _display_positions(train.qid, seed=0)
    with pytest.raises(TypeError, match=r"LGBMRanker.fit takes no position argument.*"
                                        r"LambdaMARTRanker\(unbiased=True\)"):
        GroupedRanker(lgb.LGBMRanker()).fit(train.X, train.y, qid=train.qid, position=position)
    # position is not requested by default: a search may route it to an IPS scorer alone
    sklearn.set_config(enable_metadata_routing=True)
    try:
        fit_request = GroupedRanker(lgb.LGBMRanker()).get_metadata_routing().fit.requests
    finally:
        sklearn.set_config(enable_metadata_routing=False)
    assert fit_request["qid"] is True and fit_request["position"] is False


def test_grouped_ranker_works_with_xgb_ranker(train, test_data):
    xgb = pytest.importorskip("xgboost")
    params = deterministic_params("xgboost", "sklearn", n_estimators=5, max_depth=3)
    adapter = GroupedRanker(xgb.XGBRanker(**params)).fit(train.X, train.y, qid=train.qid)
    direct = xgb.XGBRanker(**params).fit(train.X, train.y, qid=train.qid)
    check_predictions_agree(adapter, direct, test_data.X)

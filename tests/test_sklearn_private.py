"""The one shim over scikit-learn's private scorer pieces (ltr._sklearn_private).

Runs in the minimum-versions job (scikit-learn 1.6) and with the newest
release: the scorer imported through the shim scores, routes its metadata,
and shares one ``predict`` per fold among the scorers of a multi-metric search.
"""

from __future__ import annotations

import numpy as np
import pytest
import sklearn
from sklearn.base import BaseEstimator
from sklearn.model_selection import GroupKFold, cross_validate

from ltr._sklearn_private import PRIVATE_SCORER, ScorerBase, uncached_caller
from ltr.metrics import average_precision, reciprocal_rank
from ltr.scoring import RankScorer, get_scorer


class _Counting(BaseEstimator):
    """A ranker scoring rows by their first feature, counting its predict calls."""

    calls = 0

    def fit(self, X, y, **kwargs):
        return self

    def predict(self, X):
        type(self).calls += 1
        return np.asarray(X, dtype=float)[:, 0]


def _data(n_queries: int = 12, size: int = 6, seed: int = 0):
    rng = np.random.default_rng(seed)
    y = rng.integers(0, 3, n_queries * size).astype(float)
    X = (y + rng.normal(0, 1.0, y.size))[:, None]
    qid = np.repeat(np.arange(n_queries), size)
    return X, y, qid


def test_the_private_pieces_are_found_in_this_scikit_learn():
    # both scikit-learn versions CI tests (1.6 and the newest) have them; the fallback
    # exists for a release that drops them
    assert PRIVATE_SCORER, sklearn.__version__
    from sklearn.metrics._scorer import _BaseScorer

    assert issubclass(ScorerBase, _BaseScorer)


def test_a_scorer_built_through_the_shim_scores():
    X, y, qid = _data()
    scorer = get_scorer("map@5")
    assert isinstance(scorer, ScorerBase) and isinstance(scorer, RankScorer)
    expected = float(average_precision(y, X[:, 0], qid=qid, k=5))
    assert scorer(_Counting(), X, y, qid=qid) == pytest.approx(expected, abs=1e-15)
    # the shim's uncached call is what a scorer called alone uses
    assert scorer._score(uncached_caller(), _Counting(), X, y, qid=qid) == pytest.approx(expected)


def test_a_multi_metric_search_routes_qid_and_predicts_once_per_fold():
    X, y, qid = _data()
    scoring = {"AP@5": get_scorer("AP@5"), "recip_rank": get_scorer("recip_rank")}
    _Counting.calls = 0
    cv = GroupKFold(n_splits=3)
    with sklearn.config_context(enable_metadata_routing=True):
        out = cross_validate(_Counting(), X, y, cv=cv, scoring=scoring,
                             params={"groups": qid, "qid": qid})
    # one predict per fold shared by both scorers: the private cache at work
    assert _Counting.calls == 3
    for i, (_, te) in enumerate(cv.split(X, y, groups=qid)):
        ap = float(average_precision(y[te], X[te, 0], qid=qid[te], k=5))
        rr = float(reciprocal_rank(y[te], X[te, 0], qid=qid[te], k=None))
        assert out["test_AP@5"][i] == pytest.approx(ap, abs=1e-15)
        assert out["test_recip_rank"][i] == pytest.approx(rr, abs=1e-15)


def test_metadata_requests_use_the_public_api():
    scorer = get_scorer("ndcg@10")
    with sklearn.config_context(enable_metadata_routing=True):
        assert scorer.get_metadata_routing().score.requests == {"qid": True}
        scorer.set_score_request(qid="query")
        assert scorer.get_metadata_routing().score.requests == {"qid": "query"}
        with pytest.raises(TypeError, match=r"set_score_request got \['position'\]"):
            scorer.set_score_request(position=True)
    ips = RankScorer("ips_ndcg", 5, propensity=np.ones(3))
    with sklearn.config_context(enable_metadata_routing=True):
        assert ips.get_metadata_routing().score.requests == {"qid": True, "position": True}

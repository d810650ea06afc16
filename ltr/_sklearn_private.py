"""The private scikit-learn pieces ltr uses, isolated here (and only here).

ltr's scorer (:class:`ltr.scoring.RankScorer`) is built on public API for
everything that has one: metadata requests are public
:class:`sklearn.utils.metadata_routing.MetadataRequest` objects, routing is
checked with :func:`sklearn.get_config`, and ``set_score_request`` /
``get_metadata_routing`` are its own.  Two private pieces remain, because
scikit-learn offers no public hook for them:

* ``sklearn.metrics._scorer._BaseScorer``: a multi-metric search
  (``scoring={"ndcg@10": ..., "map@10": ...}``) shares one ``predict`` per
  fold only among scorers that are instances of it (``_MultimetricScorer``
  hands them its prediction cache);
* ``sklearn.metrics._scorer._cached_call``: the call that reads that cache.

If a scikit-learn release drops or changes them, this module falls back to a
plain base class and an uncached call: scorers keep working and each scorer
of a multi-metric search predicts on its own.  ``tests/test_sklearn_private.py``
runs under the minimum-versions job (scikit-learn 1.6) and the newest release.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import partial
from typing import Any

__all__ = ["PRIVATE_SCORER", "ScorerBase", "uncached_caller"]

try:  # pragma: no branch
    from sklearn.metrics._scorer import _BaseScorer as _Base
    from sklearn.metrics._scorer import _cached_call

    PRIVATE_SCORER = True
except ImportError:  # pragma: no cover - a scikit-learn without these private names
    _Base = object  # type: ignore[assignment,misc]
    PRIVATE_SCORER = False

    def _cached_call(  # type: ignore[misc]
        cache: Any, estimator: Any, response_method: str, *args: Any, **kwargs: Any
    ) -> Any:
        return getattr(estimator, response_method)(*args, **kwargs)


class ScorerBase(_Base):  # type: ignore[misc,valid-type]
    """Base of ltr's scorer: scikit-learn's private scorer base when it is there.

    Parameters
    ----------
    score_func : callable
        ``score_func(y_true, y_pred, **options)``.
    options : dict
        Keyword options of *score_func*.
    """

    def __init__(self, score_func: Callable[..., Any], options: dict[str, Any]) -> None:
        if PRIVATE_SCORER:
            super().__init__(
                score_func=score_func, sign=1, kwargs=dict(options), response_method="predict"
            )
        else:  # pragma: no cover - the attributes _BaseScorer would set
            self._score_func = score_func
            self._sign = 1
            self._kwargs = dict(options)
            self._response_method = "predict"


def uncached_caller() -> Callable[..., Any]:
    """``method_caller(estimator, "predict", X)`` without a cache (a scorer called alone)."""
    return partial(_cached_call, None)

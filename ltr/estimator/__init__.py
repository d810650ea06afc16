"""scikit-learn ranker: :class:`LambdaMARTRanker`, and :class:`GroupedRanker` for peers.

``LambdaMARTRanker`` trains LightGBM or XGBoost LambdaMART through
:func:`ltr.engines.train` (native objective, our LambdaRank objective with
top-k pair sampling, k schedules, composite multi-objective labels) behind the
scikit-learn estimator contract, so ``GridSearchCV`` / ``cross_validate`` work
with query-grouped data:

* query ids travel as metadata (``fit(X, y, qid=...)``; with
  ``sklearn.set_config(enable_metadata_routing=True)`` a search routes them; the
  ranker requests ``qid`` for ``fit`` and ``score`` by default, like
  ``GroupKFold`` requests ``groups``), or as a column of a pandas ``X`` named by
  ``qid_column`` (XGBoost 2's convention), which is never used as a feature;
* rows need not be sorted by query: ``fit`` sorts them internally; ``predict``
  is row-wise and needs no query ids.

``GroupedRanker(LGBMRanker())`` is a thin adapter that lets LightGBM's and
XGBoost's own sklearn rankers take ``qid`` (metadata or column) and turns it into
group sizes for each fold (LightGBM issues 1137, 3018, 5660).

:func:`select_debiasing` chooses a position-debiasing method from clicks alone
(``LambdaMARTRanker(unbiased="auto")`` runs it inside ``fit``).  It trains
models, so it lives here and not in :mod:`ltr.clicks` (which sits below the
engines).
"""

from __future__ import annotations

from ltr.estimator._grouped import GroupedRanker
from ltr.estimator._lambdamart import LambdaMARTRanker
from ltr.estimator._select import (
    CANDIDATES,
    DEFAULT_CANDIDATES,
    TABLES,
    DebiasingSelection,
    available_candidates,
    select_debiasing,
)

__all__ = [
    "CANDIDATES",
    "DEFAULT_CANDIDATES",
    "TABLES",
    "DebiasingSelection",
    "GroupedRanker",
    "LambdaMARTRanker",
    "available_candidates",
    "select_debiasing",
]

"""``LambdaMARTRanker(unbiased="auto").fit``: choose the debiasing method, then refit it."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from ltr._validation import check_seed
from ltr.engines import uses_position
from ltr.estimator._common import _get_qid, _missing_qid_message, _n_rows
from ltr.estimator._select import select_debiasing
from ltr.groups import resolve_groups

__all__ = ["fit_auto"]


def fit_auto(estimator: Any, X: Any, y: Any, *, qid: Any, group: Any, sample_weight: Any,
             eval_set: Any, eval_qid: Any, position: Any, callbacks: Sequence[Any]) -> Any:
    """Select the debiasing method on the clicks, refit the chosen one on all rows.

    The selection (:func:`~ltr.estimator.select_debiasing` with the estimator's
    seed and cut-off ``eval_at[0]``) trains clones of *estimator* with
    ``unbiased=False`` plus each candidate's parameters; the chosen
    parameters are then set on a clone that is fitted on every row (with
    ``eval_set`` and ``callbacks``), whose fitted attributes *estimator* takes
    over, plus ``debiasing_``.  *estimator*'s own parameters are left as given.

    Returns
    -------
    LambdaMARTRanker
        *estimator*, fitted.
    """
    from sklearn.base import clone

    owner = f"{type(estimator).__name__}.fit"
    if position is None:
        raise ValueError(
            f"{owner}: unbiased='auto' chooses a position-debiasing method from clicks and "
            "needs position (the logged display rank of each row, 1 = top): pass "
            "fit(X, y, qid=..., position=...), or set unbiased to True or False"
        )
    if estimator.propensity is not None:
        raise ValueError(
            f"{owner}: unbiased='auto' estimates the propensities itself; drop propensity "
            "(or set unbiased=True to train with the known propensities)"
        )
    X_sel, qid_sel = _get_qid(owner, X, qid, estimator.qid_column, required=False)
    if qid_sel is None:
        if group is None:
            raise ValueError(_missing_qid_message(owner, estimator.qid_column, X))
        sizes = np.diff(resolve_groups(_n_rows(X_sel), group=group).offsets)
        qid_sel = np.repeat(np.arange(sizes.size), sizes)
    seed = check_seed(estimator.random_state)
    base = clone(estimator).set_params(unbiased=False, qid_column=None)
    selection = select_debiasing(
        base, X_sel, y, qid=qid_sel, position=position, sample_weight=sample_weight,
        k=estimator._eval_at()[0], random_state=0 if seed is None else seed,
    )
    chosen = clone(estimator).set_params(**selection.params)
    chosen.fit(X, y, qid=qid, group=group, sample_weight=sample_weight, eval_set=eval_set,
               eval_qid=eval_qid, callbacks=callbacks,
               position=position if uses_position(selection.params) else None)
    for key, value in vars(chosen).items():
        if (key.endswith("_") and not key.startswith("__")) or key == "_coding":
            setattr(estimator, key, value)
    estimator.debiasing_ = selection
    return estimator

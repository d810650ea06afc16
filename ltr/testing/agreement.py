"""Check bodies shared by tests: engine determinism settings and agreement checks."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Literal

import numpy as np

__all__ = ["check_predictions_agree", "check_score_is_ndcg", "deterministic_params"]

_DETERMINISTIC: dict[tuple[str, str], dict[str, Any]] = {
    # lgb.train(params, ...): one thread, row-wise histograms, deterministic reductions.
    ("lightgbm", "native"): {
        "deterministic": True,
        "force_row_wise": True,
        "num_threads": 1,
        "seed": 0,
        "verbosity": -1,
    },
    # lgb.LGBMRanker(**params): the same through the scikit-learn API.
    ("lightgbm", "sklearn"): {
        "deterministic": True,
        "force_row_wise": True,
        "n_jobs": 1,
        "random_state": 0,
        "verbose": -1,
    },
    # xgb.train(params, ...): one thread, histogram method.
    ("xgboost", "native"): {"nthread": 1, "tree_method": "hist", "seed": 0},
    # xgb.XGBRanker(**params).
    ("xgboost", "sklearn"): {"n_jobs": 1, "tree_method": "hist", "random_state": 0},
}


def deterministic_params(
    engine: Literal["lightgbm", "xgboost"],
    api: Literal["native", "sklearn"] = "native",
    **overrides: Any,
) -> dict[str, Any]:
    """Engine parameters under which two trainings on the same data give identical models.

    LightGBM: ``deterministic=True``, ``force_row_wise=True``, one thread and a
    fixed seed; XGBoost: ``tree_method="hist"``, one thread and a fixed seed.

    Parameters
    ----------
    engine : {"lightgbm", "xgboost"}
        The training library.
    api : {"native", "sklearn"}, default="native"
        Names for ``lgb.train`` / ``xgb.train`` (``"native"``) or for the
        scikit-learn wrappers ``LGBMRanker`` / ``XGBRanker`` (``"sklearn"``).
    **overrides
        Further parameters, added last (they may replace the defaults).

    Returns
    -------
    dict
        A new dictionary.

    Examples
    --------
    >>> deterministic_params("xgboost", max_depth=3)
    {'nthread': 1, 'tree_method': 'hist', 'seed': 0, 'max_depth': 3}
    """
    try:
        base = _DETERMINISTIC[(engine, api)]
    except KeyError:
        raise ValueError(
            "engine must be 'lightgbm' or 'xgboost' and api 'native' or 'sklearn', "
            f"got engine={engine!r}, api={api!r}"
        ) from None
    return {**base, **overrides}


def _predict(model: Any, X: Any) -> np.ndarray:
    predict = getattr(model, "predict", None)
    if predict is None and callable(model):
        predict = model
    if predict is None:
        raise TypeError(f"model must have a predict method or be callable, got {model!r}")
    return np.asarray(predict(X), dtype=np.float64)


def check_predictions_agree(
    first: Any,
    second: Any,
    X: Any,
    *,
    atol: float = 0.0,
    X_second: Any = None,
) -> np.ndarray:
    """Assert that two models (or two paths to one model) predict the same scores.

    Parameters
    ----------
    first, second : object with ``predict`` or callable
        The two models.
    X : array-like
        Rows to score.
    atol : float, default=0.0
        Absolute tolerance; ``0.0`` demands bit-identical scores.
    X_second : array-like, optional
        Rows given to ``second`` instead of ``X`` (e.g. the same rows as a
        DataFrame with a query-id column).

    Returns
    -------
    ndarray of float64
        The predictions of ``first``.

    Raises
    ------
    AssertionError
        If the predictions differ (shape or values).
    """
    a = _predict(first, X)
    b = _predict(second, X if X_second is None else X_second)
    if a.shape != b.shape:
        raise AssertionError(f"prediction shapes differ: {a.shape} vs {b.shape}")
    if atol == 0.0:
        np.testing.assert_array_equal(a, b)
    else:
        np.testing.assert_allclose(a, b, rtol=0.0, atol=atol)
    return a


def check_score_is_ndcg(
    score: float | Callable[[], float],
    model: Any,
    X: Any,
    y: Any,
    *,
    qid: Any,
    k: int = 10,
    atol: float = 1e-12,
    **ndcg_options: Any,
) -> float:
    """Assert that a reported score equals :func:`ltr.metrics.ndcg` of the model's predictions.

    Parameters
    ----------
    score : float or callable
        The value under test (a callable is called without arguments).
    model : object with ``predict`` or callable
        Produces the scores of ``X``.
    X : array-like
        Rows given to the model.
    y : array-like of shape (n_rows,)
        Graded labels.
    qid : array-like of shape (n_rows,)
        Query id per row.
    k : int, default=10
        Cut-off.
    atol : float, default=1e-12
        Absolute tolerance.
    **ndcg_options
        Passed to :func:`ltr.metrics.ndcg` (``gain``, ``ties``, ``empty``, ...).

    Returns
    -------
    float
        The reference nDCG@k.
    """
    from ltr.metrics import ndcg

    got = float(score() if callable(score) else score)
    expected = float(ndcg(np.asarray(y), _predict(model, X), qid=qid, k=k, **ndcg_options))
    if not abs(got - expected) <= atol:
        raise AssertionError(f"score {got!r} != nDCG@{k} {expected!r} (atol={atol})")
    return expected

"""TreeSHAP contributions from the engines themselves, summarised globally and per query.

:func:`contributions` asks the engine for its exact TreeSHAP values
(LightGBM ``predict(pred_contrib=True)``, XGBoost ``predict(pred_contribs=True)``),
one column per feature plus ``bias``, each row summing to the row's raw score.
Ranking is relative, so besides the usual global view (:func:`global_contributions`:
mean absolute contribution per feature and per feature group) the per-query
view :func:`query_contributions` centres every document's contributions on its
query's mean: what lifted a document above the others of its own list (a
column added to every document of a query changes no ranking, and centring
removes it).  The centred contributions of a document sum to its score minus
its query's mean score.  :func:`plot_beeswarm` and :func:`plot_query` draw the
two views; :func:`to_shap_explanation` hands the values to ``shap`` when it is
installed.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import pandas as pd

from ltr._compat import import_matplotlib_figure, optional_import
from ltr._validation import check_int, short_repr
from ltr.engines.trees import find_booster, is_lightgbm_booster, is_xgboost_booster

__all__ = [
    "contributions",
    "global_contributions",
    "plot_beeswarm",
    "plot_query",
    "query_contributions",
    "to_shap_explanation",
]

BIAS = "bias"


def _coded(model: Any, X: Any) -> tuple[Any, Any]:
    """``(booster, X as the booster reads it)``: the model's own column handling applied."""
    transform = getattr(model, "_transform_X", None)  # ltr estimators: qid column, coding
    if callable(transform) and hasattr(model, "model_"):
        return find_booster(model), transform(X)
    encode = getattr(model, "encode", None)  # RankingModel: the categorical coding
    if callable(encode) and getattr(model, "booster", None) is not None:
        return model.booster, encode(X)
    booster = find_booster(model)
    if booster is None:
        raise TypeError(
            "model must be an ltr model (RankingModel, LambdaMARTRanker), a LightGBM/XGBoost "
            f"booster or their scikit-learn models; got {short_repr(model)} "
            f"({type(model).__name__})"
        )
    if hasattr(X, "iloc") and hasattr(X, "columns"):
        X = X.to_numpy()
    return booster, X


def _names(booster: Any, X: Any, n: int) -> list[str]:
    if hasattr(X, "columns"):
        return [str(c) for c in X.columns]
    if is_lightgbm_booster(booster):
        return [str(c) for c in booster.feature_name()]
    names = booster.feature_names
    return [str(c) for c in names] if names is not None else [f"x{j}" for j in range(n)]


def contributions(model: Any, X: Any, *, qid: Any = None) -> pd.DataFrame:
    """Exact TreeSHAP contributions of every feature to every row's raw score.

    Parameters
    ----------
    model : RankingModel, LambdaMARTRanker, lightgbm.Booster or xgboost.Booster
        The ranker (its categorical coding and ``qid_column`` are applied).
    X : array-like or DataFrame of shape (n_rows, n_features)
        Rows to explain (raw features, as for ``predict``).
    qid : array-like of shape (n_rows,), optional
        Query id per row, kept in ``result.attrs["qid"]`` for
        :func:`query_contributions`.

    Returns
    -------
    DataFrame of float64, shape (n_rows, n_features + 1)
        Indexed like *X* (a DataFrame's index, else ``0..n-1``), one column
        per feature plus ``bias`` (the expected score); each row sums to the
        model's raw score of that row (LightGBM in float64, XGBoost's float32
        values widened).
    """
    index = X.index if hasattr(X, "index") and hasattr(X, "columns") else None
    booster, Xc = _coded(model, X)
    if is_lightgbm_booster(booster):
        values = np.asarray(
            booster.predict(Xc, pred_contrib=True, num_iteration=booster.current_iteration()),
            dtype=np.float64,
        )
    elif is_xgboost_booster(booster):
        from ltr._compat import import_xgboost

        xgb = import_xgboost()
        types = booster.feature_types
        cat = types is not None and "c" in types
        dm = xgb.DMatrix(
            np.asarray(Xc, dtype=np.float64) if not hasattr(Xc, "tocsr") else Xc,
            feature_names=booster.feature_names,
            feature_types=types if cat else None,
            enable_categorical=cat,
        )
        values = np.asarray(booster.predict(dm, pred_contribs=True), dtype=np.float64)
    else:  # pragma: no cover - find_booster returns only these
        raise TypeError(f"unsupported booster {type(booster).__name__}")
    n_features = values.shape[1] - 1
    names = _names(booster, X if index is not None else Xc, n_features)
    if len(names) != n_features:
        names = [f"x{j}" for j in range(n_features)]
    if BIAS in names:
        raise ValueError(f"a feature is named {BIAS!r}, the name of the bias column; rename it")
    frame = pd.DataFrame(values, columns=[*names, BIAS], index=index)
    if qid is not None:
        q = np.asarray(qid)
        if q.ndim != 1 or len(q) != len(frame):
            raise ValueError(
                f"qid must have one entry per row of X ({len(frame)}), got shape {q.shape}"
            )
        frame.attrs["qid"] = q
    return frame


def _features(contrib: pd.DataFrame) -> list[str]:
    if not isinstance(contrib, pd.DataFrame) or BIAS not in contrib.columns:
        raise TypeError(
            "contrib must be the DataFrame returned by ltr.inspection.contributions (with a "
            f"{BIAS!r} column), got {short_repr(contrib)}"
        )
    return [c for c in contrib.columns if c != BIAS]


def global_contributions(
    contrib: pd.DataFrame, groups: Mapping[str, Sequence[str]] | None = None
) -> pd.DataFrame:
    """Mean absolute contribution per feature, and per feature group.

    A group's contribution to a row is the sum of its members' (TreeSHAP is
    additive), so a group is not the sum of its members' means.

    Parameters
    ----------
    contrib : DataFrame
        From :func:`contributions`.
    groups : mapping of str to list of str, optional
        Named groups of features.

    Returns
    -------
    DataFrame
        Index ``feature`` (features, then groups), columns ``mean_abs`` and
        ``mean``, sorted by ``mean_abs`` (largest first).
    """
    feats = _features(contrib)
    columns = {f: contrib[f].to_numpy() for f in feats}
    for name, members in (groups or {}).items():
        unknown = [m for m in members if m not in columns]
        if unknown:
            raise ValueError(f"groups[{name!r}] names unknown features {unknown!r}")
        columns[name] = np.sum([contrib[m].to_numpy() for m in members], axis=0)
    table = pd.DataFrame(
        {
            "mean_abs": {f: float(np.mean(np.abs(v))) for f, v in columns.items()},
            "mean": {f: float(np.mean(v)) for f, v in columns.items()},
        }
    )
    table.index.name = "feature"
    return table.sort_values("mean_abs", ascending=False, kind="stable")


def query_contributions(
    contrib: pd.DataFrame, qid: Any = None, *, k: int = 10, query: Any = None
) -> pd.DataFrame:
    """Per query: each top-*k* document's contributions centred on its query's mean.

    Parameters
    ----------
    contrib : DataFrame
        From :func:`contributions`.
    qid : array-like of shape (n_rows,), optional
        Query id per row (default: ``contrib.attrs["qid"]``).
    k : int, default=10
        Documents per query, best first by score.
    query : scalar, optional
        Only this query.

    Returns
    -------
    DataFrame
        Index ``(qid, rank)`` (rank 1 = top), columns ``row`` (the row's label
        in *contrib*), ``score``, ``score_vs_mean`` (score minus the query's
        mean score) and one column per feature: its contribution minus the
        query's mean contribution.  Per row the features sum to
        ``score_vs_mean``.
    """
    feats = _features(contrib)
    k = check_int(k, "k", minimum=1)
    if qid is None:
        qid = contrib.attrs.get("qid")
        if qid is None:
            raise ValueError("qid is required (or pass qid= to contributions())")
    q = np.asarray(qid)
    if q.ndim != 1 or len(q) != len(contrib):
        raise ValueError(f"qid must have one entry per row ({len(contrib)}), got shape {q.shape}")
    values = contrib[feats].to_numpy()
    scores = values.sum(axis=1) + contrib[BIAS].to_numpy()
    if query is not None:
        mask = q == query
        if not mask.any():
            raise ValueError(f"query {query!r} is not in qid")
        wanted = [query]
    else:
        mask = np.ones(len(q), dtype=bool)
        wanted = list(pd.unique(q))
    rows: list[dict[str, Any]] = []
    index: list[tuple[Any, int]] = []
    labels = contrib.index.to_numpy()
    for one in wanted:
        idx = np.flatnonzero(mask & (q == one))
        centred = values[idx] - values[idx].mean(axis=0)
        s = scores[idx]
        order = np.argsort(-s, kind="stable")[:k]
        mean_score = float(s.mean())
        for rank, i in enumerate(order, start=1):
            rows.append({"row": labels[idx[i]], "score": float(s[i]),
                         "score_vs_mean": float(s[i]) - mean_score,
                         **dict(zip(feats, centred[i].tolist()))})
            index.append((one, rank))
    out = pd.DataFrame(rows, columns=["row", "score", "score_vs_mean", *feats])
    out.index = pd.MultiIndex.from_tuples(index, names=["qid", "rank"])
    return out


def plot_beeswarm(
    contrib: pd.DataFrame, X: Any = None, *, top: int = 15, seed: int = 0
) -> Any:
    """Beeswarm-style plot: one row per feature, one dot per document at its contribution.

    Features are ordered by mean absolute contribution; dots are coloured by
    the feature's value rank when *X* is given (low blue, high red).

    Parameters
    ----------
    contrib : DataFrame
        From :func:`contributions`.
    X : array-like or DataFrame, optional
        The explained rows (same order), for the colours.
    top : int, default=15
        Features shown.
    seed : int, default=0
        Seed of the vertical jitter.

    Returns
    -------
    matplotlib.figure.Figure
    """
    feats = _features(contrib)
    order = list(global_contributions(contrib).index[: check_int(top, "top", minimum=1)])
    Figure = import_matplotlib_figure().Figure
    fig = Figure(figsize=(7.5, 0.4 * len(order) + 1.6))
    ax = fig.add_subplot(1, 1, 1)
    rng = np.random.default_rng(seed)
    Xa = None
    if X is not None:
        Xa = X.to_numpy() if hasattr(X, "to_numpy") else np.asarray(X)
    scatter = None
    for pos, f in enumerate(reversed(order)):
        v = contrib[f].to_numpy()
        jitter = rng.uniform(-0.3, 0.3, size=v.size)
        colour: Any = "tab:blue"
        if Xa is not None:
            col = np.asarray(Xa[:, feats.index(f)], dtype=np.float64)
            colour = pd.Series(col).rank(pct=True).fillna(0.5).to_numpy()
        scatter = ax.scatter(v, pos + jitter, c=colour, cmap="coolwarm" if Xa is not None else None,
                             s=6, alpha=0.7, linewidths=0)
    ax.axvline(0.0, color="grey", lw=0.8)
    ax.set_yticks(range(len(order)))
    ax.set_yticklabels(list(reversed(order)))
    ax.set_xlabel("contribution to the score (TreeSHAP)")
    if Xa is not None and scatter is not None:
        bar = fig.colorbar(scatter, ax=ax)
        bar.set_label("feature value (rank)")
    fig.tight_layout()
    return fig


def plot_query(explanation: pd.DataFrame, *, top: int = 8) -> Any:
    """Heat map of one query's explanation: documents (rank) x features, centred contributions.

    Parameters
    ----------
    explanation : DataFrame
        :func:`query_contributions` of one query.
    top : int, default=8
        Features shown (largest mean absolute centred contribution).

    Returns
    -------
    matplotlib.figure.Figure
    """
    feats = [c for c in explanation.columns if c not in ("row", "score", "score_vs_mean")]
    strength = explanation[feats].abs().mean().sort_values(ascending=False, kind="stable")
    shown = list(strength.index[: check_int(top, "top", minimum=1)])
    values = explanation[shown].to_numpy()
    Figure = import_matplotlib_figure().Figure
    fig = Figure(figsize=(1.0 * len(shown) + 3.0, 0.35 * len(values) + 1.8))
    ax = fig.add_subplot(1, 1, 1)
    lim = float(np.abs(values).max()) or 1.0
    image = ax.imshow(values, cmap="coolwarm", vmin=-lim, vmax=lim, aspect="auto")
    ax.set_xticks(range(len(shown)))
    ax.set_xticklabels(shown, rotation=45, ha="right")
    ranks = [r for _, r in explanation.index]
    ax.set_yticks(range(len(values)))
    ax.set_yticklabels([f"#{r} ({s:+.2f})" for r, s in
                        zip(ranks, explanation["score_vs_mean"].to_numpy())])
    ax.set_ylabel("rank (score vs query mean)")
    qid = explanation.index[0][0] if len(explanation) else ""
    ax.set_title(f"query {qid}: contributions vs the query's mean")
    fig.colorbar(image, ax=ax)
    fig.tight_layout()
    return fig


def to_shap_explanation(contrib: pd.DataFrame, X: Any = None) -> Any:
    """Wrap *contrib* as a ``shap.Explanation`` (needs the ``shap`` package).

    Parameters
    ----------
    contrib : DataFrame
        From :func:`contributions`.
    X : array-like or DataFrame, optional
        The explained rows (``data`` of the explanation).

    Returns
    -------
    shap.Explanation
    """
    feats = _features(contrib)
    shap = optional_import("shap", purpose="shap.Explanation objects")
    data = None if X is None else (X.to_numpy() if hasattr(X, "to_numpy") else np.asarray(X))
    return shap.Explanation(
        values=contrib[feats].to_numpy(),
        base_values=contrib[BIAS].to_numpy(),
        data=data,
        feature_names=feats,
    )

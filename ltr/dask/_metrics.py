"""Distributed prediction and evaluation: :func:`predict` and :func:`evaluate`."""

from __future__ import annotations

from collections.abc import Sequence
from contextlib import nullcontext
from typing import Any

import numpy as np
import pandas as pd

from ltr._validation import short_repr
from ltr.dask._cluster import connected_client
from ltr.dask._frame import check_frame, shuffle_by_query
from ltr.engines import RankingModel

__all__ = ["evaluate", "predict"]


def _predict_part(part: pd.DataFrame, model: RankingModel) -> pd.Series:
    if len(part) == 0:
        return pd.Series(np.zeros(0, dtype=np.float64), index=part.index, name="score")
    return pd.Series(model.predict(part), index=part.index, name="score")


def predict(model: RankingModel, data: Any, *, features: Sequence[str] | None = None) -> Any:
    """Score the rows of a Dask DataFrame, partition by partition.

    Parameters
    ----------
    model : RankingModel
        A trained model (from :func:`train` or :func:`ltr.engines.train`).
    data : dask.dataframe.DataFrame
        Rows to score.
    features : sequence of str, optional
        Feature columns in training order; default ``model.feature_names``.

    Returns
    -------
    dask.dataframe.Series
        ``float64`` scores named ``"score"``, with the partitions and index of *data*:
        lazy; it is computed where it is used (:func:`evaluate` on the cluster, or
        ``client.compute(scores)``; a bare ``.compute()`` uses Dask's default
        client, and without one, this process).
    """
    if not isinstance(model, RankingModel):
        raise TypeError(f"model must be a RankingModel, got {short_repr(model)}")
    if features is None:
        features = model.feature_names
        if features is None:
            raise ValueError("the model has no feature names; pass features=[...]")
    cols = check_frame(data, {"features": list(features)})
    return data[cols].map_partitions(
        _predict_part, model, meta=pd.Series(dtype=np.float64, name="score")
    )


def _metric_part(part: pd.DataFrame, label: str, score: str, qid: str,
                 specs: list[tuple[str, str, int | None, str | None]],
                 max_grade: float | None = None) -> pd.DataFrame:
    from ltr.metrics.names import metric_function

    q = part[qid].to_numpy()
    if len(q) == 0:
        return pd.DataFrame({name: np.zeros(0) for name, *_ in specs},
                            index=pd.Index(q, name=qid))
    starts = np.concatenate(([0], np.flatnonzero(q[1:] != q[:-1]) + 1))
    offsets = np.concatenate((starts, [len(q)])).astype(np.int64)
    y = part[label].to_numpy(dtype=np.float64)
    s = part[score].to_numpy(dtype=np.float64)
    out = {}
    for name, metric, k, conv in specs:
        fn = metric_function(metric)
        # ERR scales grades by the largest one: the whole data's, not the partition's
        extra = {"max_grade": max_grade} if metric == "err" else {}
        out[name] = np.asarray(fn(y, s, offsets=offsets, k=k, convention=conv, reduce=None,
                                  **extra), dtype=np.float64)
    return pd.DataFrame(out, index=pd.Index(q[starts], name=qid))


def evaluate(
    data: Any,
    metrics: str | Sequence[str] = ("ndcg@10",),
    *,
    label: str,
    score: str,
    qid: str,
    convention: str | None = None,
    client: Any = None,
) -> Any:
    """Per-query metrics computed where the rows live, then one reduction.

    Rows are first moved so each query is whole in one partition
    (:func:`shuffle_by_query`); each partition computes its queries' values
    with :mod:`ltr.metrics`, and the per-query values are gathered (one row
    per query, small).  The means equal :func:`ltr.metrics.ndcg` on the
    collected rows (to float rounding of the mean).

    Parameters
    ----------
    data : dask.dataframe.DataFrame
        Rows with *label*, *score* and *qid* columns.
    metrics : str or sequence of str, default=("ndcg@10",)
        ``"ndcg@K"``, ``"ndcg"`` (whole list), ``"dcg@K"``, and the rank
        metrics of :mod:`ltr.metrics` (``"map@K"``, ``"mrr"``,
        ``"precision@K"``, ``"recall@K"``, ``"err@K"``, ``"hit_rate@K"``,
        ``"r-precision"``) or an alias (``"P_10"``, ``"recip_rank"``...), optionally
        ``":CONVENTION"`` per name; results are keyed by the names as passed.
    label, score, qid : str
        Column names.
    convention : str, optional
        nDCG convention of :mod:`ltr.metrics` for names without their own.
    client : distributed.Client, optional
        The cluster that computes (the lazy *data*, e.g. :func:`predict`'s
        scores, included).  Default: the newest open :func:`connect`
        connection, else Dask's default client, else this process.

    Returns
    -------
    ltr.evaluation.EvaluationResult
        ``per_query`` (index *qid*, one column per metric; NaN for a skipped
        query) and ``mean``.
    """
    from ltr.evaluation import EvaluationResult
    from ltr.metrics.names import SCORER_METRICS, parse_metric_name

    names = [metrics] if isinstance(metrics, str) else list(metrics)
    if not names:
        raise ValueError("metrics must name at least one metric, got an empty sequence")
    specs: list[tuple[str, str, int | None, str | None]] = []
    for name in names:
        parsed = parse_metric_name(name, metrics=SCORER_METRICS)
        conv = parsed.convention if parsed.convention is not None else convention
        specs.append((name, parsed.metric, parsed.k, conv))
    check_frame(data, {"label": label, "score": score, "qid": qid})
    if client is None:
        client = connected_client()
    with client.as_current() if client is not None else nullcontext():
        frame, layout = shuffle_by_query(data[[qid, label, score]], qid, label=label)
        top = layout.column_max.get(label)
        meta = _metric_part(frame._meta, label, score, qid, specs, top)
        per_query = frame.map_partitions(_metric_part, label, score, qid, specs, top,
                                         meta=meta).compute()
    return EvaluationResult(
        per_query=per_query, metrics=names,
        convention=convention if convention is not None else "default",
    )

"""Global bin edges computed once, and the bin codes both training paths then use.

XGBoost's histogram method cuts every feature into at most ``max_bin`` bins.
Single-machine training sketches the quantiles of all rows; distributed
training merges per-worker sketches, so on raw continuous features the two
paths may cut at other values and grow other trees.  :func:`quantile_edges`
computes one set of edges per feature over the whole (distributed) data,
and :func:`apply_edges` replaces each raw value by its bin code (a whole
number ``0 .. len(edges)``, as float64; NaN stays NaN) in a Dask DataFrame,
a pandas DataFrame or a NumPy array alike.  A feature then has at most
``max_bin`` distinct values, which every sketch keeps exactly, so both
paths see the same bins.

>>> import numpy as np
>>> apply_edges(np.array([[0.5], [1.0], [2.5], [np.nan]]), {"f": np.array([1.0, 2.0])})
array([[ 0.],
       [ 1.],
       [ 2.],
       [nan]])
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import pandas as pd

from ltr._compat import import_dask
from ltr._validation import check_int, short_repr

__all__ = ["apply_edges", "quantile_edges"]

#: points kept per partition and feature, per bin (a partition with fewer rows sends them all)
_POINTS_PER_BIN = 8


def _summary(part: pd.DataFrame, features: Sequence[str], n_points: int) -> dict[str, Any]:
    """Per feature: ``(values, weights)`` summarising the partition's non-NaN values."""
    out: dict[str, Any] = {}
    for name in features:
        v = part[name].to_numpy(dtype=np.float64)
        v = np.sort(v[~np.isnan(v)])
        if v.size <= n_points:  # all of them, each of weight 1
            out[name] = (v, np.ones(v.size))
        else:  # evenly spaced order statistics, each standing for n / n_points rows
            idx = np.floor((np.arange(n_points) + 0.5) * v.size / n_points).astype(np.int64)
            out[name] = (v[idx], np.full(n_points, v.size / n_points))
    return out


def _merge(summaries: Sequence[Mapping[str, Any]], features: Sequence[str],
           max_bin: int) -> dict[str, np.ndarray]:
    """Weighted quantiles ``i / max_bin`` (``i = 1 .. max_bin - 1``) of the merged points."""
    edges: dict[str, np.ndarray] = {}
    targets = np.arange(1, max_bin) / max_bin
    for name in features:
        vals = [s[name][0] for s in summaries if s[name][0].size]
        if not vals:  # no finite value anywhere: one bin
            edges[name] = np.zeros(0)
            continue
        v = np.concatenate(vals)
        w = np.concatenate([s[name][1] for s in summaries if s[name][0].size])
        order = np.argsort(v, kind="stable")
        v, w = v[order], w[order]
        distinct = np.unique(v)
        if distinct.size <= max_bin:  # few values: one bin each, cut at the values themselves
            edges[name] = distinct[1:]
            continue
        cum = np.cumsum(w) / w.sum()
        picked = v[np.minimum(np.searchsorted(cum, targets, side="left"), v.size - 1)]
        e = np.unique(picked)
        edges[name] = e[e > v[0]]  # the smallest value opens bin 0
    return edges


def quantile_edges(data: Any, features: Sequence[str] | None = None, *, max_bin: int = 256,
                   client: Any = None) -> dict[str, np.ndarray]:
    """Compute each feature's bin edges once over all rows of *data*.

    Every partition summarises each feature by at most ``8 * max_bin``
    evenly spaced order statistics of its non-NaN values (all of them when it
    has fewer rows); the summaries are merged by weight and cut at the
    quantiles ``1/max_bin .. (max_bin-1)/max_bin``.  A feature with at most
    ``max_bin`` distinct values in the summaries is cut at each value.  The
    edges are approximate quantiles (within about ``1 / (8 * max_bin)`` of
    the exact rank) and deterministic: the same data in the same partitions
    give the same edges.  Exactness of the trainings does not rest on the
    quantiles being exact but on using these *same* edges on every path
    (:func:`apply_edges`).

    Parameters
    ----------
    data : dask.dataframe.DataFrame or pandas.DataFrame
        The rows (a pandas DataFrame is one partition).
    features : sequence of str, optional
        Numeric columns to bin; default every column of *data*.
    max_bin : int, default=256
        Bins per feature (at most ``max_bin - 1`` edges); at most the
        engine's ``max_bin`` (XGBoost's default is 256).
    client : distributed.Client, optional
        Where to compute; default the current scheduler.

    Returns
    -------
    dict of str to ndarray
        Feature name -> increasing float64 edges, in the order of *features*.
    """
    dd = import_dask().dataframe
    if not isinstance(data, (dd.DataFrame, pd.DataFrame)):
        raise TypeError("data must be a dask.dataframe.DataFrame or a pandas.DataFrame, "
                        f"got {short_repr(data)}")
    max_bin = check_int(max_bin, "max_bin", minimum=2)
    if features is None:
        features = [str(c) for c in data.columns]
    if isinstance(features, str) or not isinstance(features, Sequence):
        raise TypeError(f"features must be a sequence of column names, got {short_repr(features)}")
    feats = list(features)
    if not feats:
        raise ValueError("features is empty: name at least one column to bin")
    for name in feats:
        if name not in data.columns:
            raise ValueError(f"features names {name!r}, which is not a column of data "
                             f"(columns: {', '.join(map(str, list(data.columns)[:15]))})")
        dtype = data[name].dtype
        if not (pd.api.types.is_numeric_dtype(dtype) and not pd.api.types.is_bool_dtype(dtype)):
            raise TypeError(f"features: column {name!r} has dtype {dtype}; only numeric "
                            "columns can be binned (encode it first, or leave it out)")
    n_points = _POINTS_PER_BIN * max_bin
    if isinstance(data, pd.DataFrame):
        summaries = [_summary(data, feats, n_points)]
    else:
        dask = import_dask()
        tasks = [dask.delayed(_summary)(p, feats, n_points)
                 for p in data[feats].to_delayed()]
        summaries = (list(client.compute(tasks, sync=True)) if client is not None
                     else list(dask.compute(*tasks)))
    return _merge(summaries, feats, max_bin)


def _check_edges(edges: Any) -> dict[str, np.ndarray]:
    if not isinstance(edges, Mapping) or not edges:
        raise TypeError("edges must be a non-empty mapping of feature name -> increasing "
                        f"edges, as quantile_edges returns, got {short_repr(edges)}")
    out: dict[str, np.ndarray] = {}
    for name, e in edges.items():
        arr = np.asarray(e, dtype=np.float64)
        if arr.ndim != 1 or not np.all(np.isfinite(arr)) or np.any(np.diff(arr) <= 0):
            raise ValueError(f"edges[{name!r}] must be finite and strictly increasing "
                             "(as quantile_edges returns)")
        out[str(name)] = arr
    return out


def _codes(values: Any, e: np.ndarray) -> np.ndarray:
    v = np.asarray(values, dtype=np.float64)
    codes = np.searchsorted(e, v, side="right").astype(np.float64)
    codes[np.isnan(v)] = np.nan
    return codes


def _apply_frame(part: pd.DataFrame, edges: Mapping[str, np.ndarray]) -> pd.DataFrame:
    return part.assign(**{name: _codes(part[name], e) for name, e in edges.items()})


def apply_edges(data: Any, edges: Mapping[str, Any]) -> Any:
    """Replace each binned feature's raw values by their bin codes.

    The code of ``x`` is the number of edges ``<= x`` (``0 .. len(edges)``,
    float64); NaN stays NaN.  The same values get the same codes in a Dask
    DataFrame, a pandas DataFrame and a NumPy array, so a model trained on
    codes by :func:`ltr.dask.train` and one trained by
    :func:`ltr.engines.train` on the same coded rows see the same bins.
    Predict on coded features too (keep *edges* with the model).

    Parameters
    ----------
    data : dask.dataframe.DataFrame, pandas.DataFrame or ndarray
        Frames: the columns named in *edges* are replaced, the others kept.
        A 2-D array: its columns are the features of *edges*, in order.
    edges : mapping of str to array-like
        From :func:`quantile_edges`.

    Returns
    -------
    Same type as *data*
        A new object; *data* is not modified.
    """
    checked = _check_edges(edges)
    dd = import_dask().dataframe
    if isinstance(data, (dd.DataFrame, pd.DataFrame)):
        missing = [n for n in checked if n not in data.columns]
        if missing:
            raise ValueError(f"edges names {missing[0]!r}, which is not a column of data "
                             f"(columns: {', '.join(map(str, list(data.columns)[:15]))})")
        if isinstance(data, pd.DataFrame):
            return _apply_frame(data, checked)
        meta = _apply_frame(data._meta, checked)
        return data.map_partitions(_apply_frame, checked, meta=meta)
    if isinstance(data, np.ndarray) or hasattr(data, "__array__"):
        X = np.asarray(data)
        if X.ndim != 2 or X.shape[1] != len(checked):
            raise ValueError(f"data has shape {X.shape}, but edges name {len(checked)} features: "
                             "pass a 2-D array whose columns are the features of edges, in "
                             "order (or a DataFrame)")
        out = np.empty(X.shape, dtype=np.float64)
        for j, e in enumerate(checked.values()):
            out[:, j] = _codes(X[:, j], e)
        return out
    raise TypeError("data must be a dask or pandas DataFrame or a 2-D array, "
                    f"got {short_repr(data)}")

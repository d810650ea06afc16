"""Categorical columns on Dask: the one coding (:class:`ltr.categorical.CategoricalCoding`).

The coding is fitted from the distinct values of each categorical column of the
training frame (one ``unique`` per column, computed on the cluster) and applied
partition by partition with :meth:`CategoricalCoding.encode`, so a Dask training
codes exactly as a single-machine one.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import pandas as pd

from ltr._compat import import_dask
from ltr.categorical import CategoricalCoding

__all__ = ["code_training", "encode_frame", "fit_coding"]


def fit_coding(frame: Any, columns: Any, feats: Sequence[str]) -> CategoricalCoding:
    """Fit the coding of *columns* (names or indices into *feats*) on a Dask frame.

    Parameters
    ----------
    frame : dask.dataframe.DataFrame
        The training rows.
    columns : sequence of str or int
        The categorical feature columns.
    feats : sequence of str
        The feature columns, in training order.

    Returns
    -------
    CategoricalCoding
    """
    from ltr.categorical import resolve_categorical_columns

    idx = resolve_categorical_columns(columns, list(feats), len(feats))
    uniques = [frame[feats[j]].dropna().unique() for j in idx]
    computed = import_dask().compute(*uniques)
    sample = pd.DataFrame({feats[j]: pd.Series(np.asarray(u), dtype=object)
                           for j, u in zip(idx, computed)})
    # the coding of the distinct values is the coding of the whole column
    table = pd.DataFrame({name: sample[name] if name in sample else pd.Series(dtype=float)
                          for name in feats})
    return CategoricalCoding.fit(table, [feats[j] for j in idx])


def _encode_part(part: pd.DataFrame, coding: CategoricalCoding,
                 feats: Sequence[str]) -> pd.DataFrame:
    out = part.copy()
    codes = coding.encode(part[list(feats)])
    for j, name in zip(coding.columns, coding.names):
        out[name] = codes[:, j]
    return out


def encode_frame(frame: Any, coding: CategoricalCoding, feats: Sequence[str]) -> Any:
    """Return *frame* with its categorical columns replaced by their codes (float64)."""
    meta = frame._meta.copy()
    for name in coding.names:
        meta[name] = meta[name].astype(np.float64)
    return frame.map_partitions(_encode_part, coding, list(feats), meta=meta)


def code_training(categorical: Any, data: Any, feats: list[str],
                  evals: list[Any]) -> tuple[CategoricalCoding | None, Any, list[Any]]:
    """Return ``(coding, data, eval sets)``: the coding fitted on *data* and applied, or given.

    *categorical* is None (no coding), a fitted ``CategoricalCoding`` (the data and
    eval sets already hold its codes) or the categorical columns (fitted on the
    cluster, then applied to *data* and to the eval sets' ``X``).
    """
    if categorical is None:
        return None, data, evals
    if isinstance(categorical, CategoricalCoding):
        return categorical, data, evals
    coding = fit_coding(data, categorical, feats)
    data = encode_frame(data, coding, feats)
    out = [(item[0], coding.encode(item[1]), *item[2:])
           if isinstance(item, tuple) and len(item) >= 2 else item for item in evals]
    return coding, data, out

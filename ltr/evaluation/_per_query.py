"""Per-query metric files of runs (per_query_<set>.csv): reading them and aligning two runs."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from ltr._validation import short_repr
from ltr.metrics.names import EVALUATION_METRICS, METRICS, metric_info, parse_metric_name


def read_per_query(path: str | os.PathLike[str], split: str = "test") -> pd.DataFrame:
    """Read a run folder's (or a CSV file's) per-query values.

    Parameters
    ----------
    path : path-like
        A run folder holding ``per_query_<split>.csv``, or such a CSV file itself.
        The CSV has a column ``qid``, an optional column ``segment`` and one
        numeric column per metric name (``ndcg@10``, ...).
    split : {'test', 'valid'}, default='test'
        Which file of a run folder to read.

    Returns
    -------
    pandas.DataFrame
        Indexed by ``qid`` (as strings), columns as in the file.
    """
    p = Path(path)
    if p.is_dir():
        if split not in ("test", "valid"):
            raise ValueError(f"split must be 'test' or 'valid', got {split!r}")
        p = p / f"per_query_{split}.csv"
        if not p.is_file():
            raise FileNotFoundError(
                f"{str(p)!r} not found: the run folder has no per-query values for split "
                f"{split!r} (runs write per_query_test.csv / per_query_valid.csv)"
            )
    elif not p.is_file():
        raise FileNotFoundError(f"no run folder or per-query CSV at {str(path)!r}")
    frame = pd.read_csv(p, dtype={"qid": str, "segment": str})
    if "qid" not in frame.columns:
        raise ValueError(f"{str(p)!r}: no column 'qid' (columns: {list(frame.columns)!r})")
    if frame["qid"].isna().any():
        row = int(np.flatnonzero(frame["qid"].isna().to_numpy())[0])
        raise ValueError(f"{str(p)!r}, line {row + 2}: the qid is missing")
    # a per-query file written by ltr holds these metrics in [0, 1]: anything else is damage
    for column in frame.columns:
        if not _bounded_metric(str(column)):
            continue
        values = pd.to_numeric(frame[column], errors="coerce").to_numpy(dtype=float)
        out = (values < 0) | (values > 1)
        if out.any():
            row = int(np.flatnonzero(out)[0])
            raise ValueError(
                f"{str(p)!r}: {column!r} must lie in [0, 1] per query; query "
                f"{frame['qid'].iloc[row]!r} (line {row + 2}) has {float(values[row])!r}"
            )
    return frame.set_index("qid")


def per_query_frame(values: Any, name: str = "value") -> pd.DataFrame:
    """Turn per-query values into a frame indexed by query id, one column per metric.

    Parameters
    ----------
    values : object with ``to_frame()``, DataFrame, Series or path-like
        An evaluation result (anything with ``to_frame()``), a frame indexed by
        query id (or with a ``qid`` column), a Series indexed by query id, or a
        run folder / CSV read by :func:`read_per_query`.
    name : str, default='value'
        Argument name for error messages (and the metric name of an unnamed Series).

    Returns
    -------
    pandas.DataFrame
        Indexed by query id as strings; a ``segment`` column is kept when present.
    """
    if isinstance(values, (str, os.PathLike)):
        frame = read_per_query(values)
    elif isinstance(values, pd.Series):
        frame = values.to_frame(name=values.name if values.name is not None else "value")
    elif isinstance(values, pd.DataFrame):
        frame = values
    elif hasattr(values, "to_frame"):
        frame = values.to_frame()
        if not isinstance(frame, pd.DataFrame):
            raise TypeError(
                f"{name}.to_frame() must return a DataFrame, got {type(frame).__name__}"
            )
    else:
        raise TypeError(
            f"{name} must be an evaluation result (with to_frame()), a DataFrame, a Series or "
            f"a run folder, got {short_repr(values)} ({type(values).__name__})"
        )
    if "qid" in frame.columns:
        frame = frame.set_index("qid")
    frame = frame.copy()
    frame.index = frame.index.astype(str)
    frame.index.name = "qid"
    if frame.index.has_duplicates:
        dup = frame.index[frame.index.duplicated()][0]
        raise ValueError(f"{name}: query id {dup!r} appears more than once")
    if len(frame) == 0:
        raise ValueError(f"{name}: holds no queries (an empty per-query table)")
    for column in frame.columns:
        if column == "segment":
            continue
        col = frame[column]
        if not pd.api.types.is_numeric_dtype(col) or pd.api.types.is_bool_dtype(col):
            bad = pd.to_numeric(col, errors="coerce").isna() & col.notna()
            first = col.index[bad.to_numpy()][0] if bad.any() else col.index[0]
            raise ValueError(
                f"{name}: column {column!r} must hold numbers per query; query {first!r} has "
                f"{_plain(col.loc[first])!r}"
            )
        values = col.to_numpy(dtype=float)
        if np.isinf(values).any():
            first = col.index[np.flatnonzero(np.isinf(values))[0]]
            raise ValueError(f"{name}: {column!r} of query {first!r} is infinite")
    return frame


def _bounded_metric(column: str) -> bool:
    """Whether a per-query metric column lies in [0, 1] (nDCG, MAP, MRR, precision, ...)."""
    name = column.split("/", 1)[0]  # a per-objective key: ndcg@10/watch
    try:
        return metric_info(parse_metric_name(name, metrics=METRICS + EVALUATION_METRICS).metric
                           ).bounded
    except (TypeError, ValueError):  # not a metric name (qid, segment, a user's column)
        return False


def _plain(value: Any) -> Any:
    """Return a numpy scalar as the Python value it holds (for messages)."""
    return value.item() if isinstance(value, np.generic) else value

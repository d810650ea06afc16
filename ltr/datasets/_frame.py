"""pandas input: :func:`read_table` and :func:`from_frame`."""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from ltr._validation import check_finite, short_repr
from ltr.datasets._container import _FLOAT_DTYPES, RankingData, _existing_file
from ltr.groups import SORT_HINT, qid_from_offsets, resolve_groups

if TYPE_CHECKING:  # pragma: no cover
    import pandas as pd

__all__ = ["from_frame", "read_table"]

_TABLE_SUFFIXES = (".parquet", ".pq", ".csv", ".tsv", ".tab")


def read_table(path: str | os.PathLike[str], **kwargs: Any) -> pd.DataFrame:
    """Read a ``.parquet``, ``.csv`` or ``.tsv`` file into a DataFrame.

    Compressed text (``.csv.gz`` etc.) is handled by pandas.  Extra keyword
    arguments go to :func:`pandas.read_parquet` / :func:`pandas.read_csv`.

    Raises
    ------
    FileNotFoundError
        If *path* does not exist.
    ValueError
        If the suffix is not one of ``.parquet``, ``.pq``, ``.csv``, ``.tsv``, ``.tab``.
    """
    import pandas as pd

    p = _existing_file(path, "path")
    suffixes = [s.lower() for s in p.suffixes]
    if suffixes and suffixes[-1] in (".gz", ".bz2", ".xz", ".zip", ".zst"):
        suffixes = suffixes[:-1]
    kind = suffixes[-1] if suffixes else ""
    if kind in (".parquet", ".pq"):
        return pd.read_parquet(p, **kwargs)
    if kind == ".csv":
        return pd.read_csv(p, **kwargs)
    if kind in (".tsv", ".tab"):
        kwargs.setdefault("sep", "\t")
        return pd.read_csv(p, **kwargs)
    raise ValueError(
        f"cannot tell the format of {str(p)!r} from its suffix {kind!r}; "
        f"supported: {', '.join(_TABLE_SUFFIXES)} (read it with pandas and call from_frame)"
    )


def _columns_text(df: pd.DataFrame, limit: int = 20) -> str:
    cols = [str(c) for c in df.columns]
    text = ", ".join(repr(c) for c in cols[:limit])
    if len(cols) > limit:
        text += f", ... ({len(cols) - limit} more)"
    return f"[{text}]"


def _require_column(df: pd.DataFrame, column: Any, role: str) -> None:
    if column not in df.columns:
        raise ValueError(
            f"{role} column {column!r} not found in the frame; "
            f"available columns: {_columns_text(df)}"
        )


def _numeric_column(df: pd.DataFrame, column: Any, role: str, line_of: Any = None) -> np.ndarray:
    import pandas as pd

    series = df[column]
    if not (
        pd.api.types.is_numeric_dtype(series.dtype) or pd.api.types.is_bool_dtype(series.dtype)
    ):
        raise TypeError(f"{role} column {column!r} must be numeric, got dtype {series.dtype}")
    n_missing = int(series.isna().sum())
    if n_missing:
        row = int(np.flatnonzero(series.isna().to_numpy())[0])
        where = f"line {line_of(row)}" if line_of is not None else f"row {row}"
        raise ValueError(f"{role} column {column!r} has {n_missing} missing value(s), the first "
                         f"at {where}")
    values = series.to_numpy(dtype=np.float64)
    check_finite(values, f"{role} column {column!r}")
    return values


def from_frame(
    df: pd.DataFrame,
    label: Any = "label",
    qid: Any = "qid",
    features: Sequence[Any] | None = None,
    *,
    labels: Mapping[str, Any] | None = None,
    segment: Any = None,
    dtype: Any = np.float64,
    sort: bool = False,
    source: str | os.PathLike[str] | None = None,
    sort_hint: str | None = SORT_HINT,
) -> RankingData:
    """Build :class:`RankingData` from a pandas DataFrame.

    Parameters
    ----------
    df : pandas.DataFrame
        One row per document.
    label : column name, default="label"
        Graded relevance column (numeric, no missing values) -> ``y``.
    qid : column name, default="qid"
        Query id column.  Integer ids (also whole-number floats) are kept;
        other ids (str, ...) are replaced by ``0..n_queries-1`` in order of
        appearance.
    features : sequence of column names, optional
        Feature columns, in this order.  Defaults to every column not used as
        label, qid, segment or in ``labels``.  Must be numeric (NaN allowed).
    labels : mapping of str to column name, optional
        Extra label columns, e.g. ``{"watch": "watch_grade", "share": ...}``
        -> :attr:`RankingData.labels`.
    segment : column name, optional
        Category column -> :attr:`RankingData.segments`.
    dtype : {numpy.float64, numpy.float32}, default=numpy.float64
        Dtype of ``X``.
    sort : bool, default=False
        Stable-sort rows so that each query is contiguous (queries keep the
        order of their first row).  Otherwise non-contiguous ids are an error
        naming the rows where the query restarts: rows are never merged
        silently.
    source : str or path-like, optional
        The file the frame was read from, named at the start of every error.
        For a text table (``.csv``, ``.tsv``, ``.tab``, possibly compressed)
        the errors also give the line of a row, ``row + 2`` (a header line
        and no skipped lines, as :func:`read_table` reads it).
    sort_hint : str or None, default=SORT_HINT
        The advice a non-contiguous qid error ends with (``None``: sort the
        rows by qid first; the command line passes None, having no ``sort=``).

    Returns
    -------
    RankingData

    Raises
    ------
    ValueError
        If a named column is missing (the message lists the available ones),
        a label has missing values, or ``qid`` is not contiguous and ``sort``
        is False.
    TypeError
        If ``df`` is not a DataFrame or a feature/label column is not numeric.
    """
    if source is None:
        return _from_frame(
            df, label, qid, features, labels, segment, dtype, sort, None, sort_hint
        )
    src = os.fspath(source)
    try:
        return _from_frame(
            df, label, qid, features, labels, segment, dtype, sort, _csv_lines(src), sort_hint
        )
    except (TypeError, ValueError) as exc:
        kind = TypeError if isinstance(exc, TypeError) else ValueError
        raise kind(f"{src!r}: {exc}") from exc


def _csv_lines(source: str) -> Any:
    """``row -> line`` for a text table with one header line, else None."""
    suffixes = [s.lower() for s in Path(source).suffixes]
    if suffixes and suffixes[-1] in (".gz", ".bz2", ".xz", ".zip", ".zst"):
        suffixes = suffixes[:-1]
    if suffixes and suffixes[-1] in (".csv", ".tsv", ".tab"):
        return lambda row: row + 2
    return None


def _from_frame(
    df: Any,
    label: Any,
    qid: Any,
    features: Any,
    labels: Any,
    segment: Any,
    dtype: Any,
    sort: bool,
    line_of: Any,
    sort_hint: str | None,
) -> RankingData:
    import pandas as pd

    if not isinstance(df, pd.DataFrame):
        raise TypeError(f"df must be a pandas DataFrame, got {type(df).__name__}")
    dtype = np.dtype(dtype)
    if dtype not in _FLOAT_DTYPES:
        raise ValueError(f"dtype must be float32 or float64, got {dtype!r}")
    if len(df) == 0:
        raise ValueError("df has no rows: at least one row is required")
    _require_column(df, label, "label")
    _require_column(df, qid, "qid")
    if segment is not None:
        _require_column(df, segment, "segment")
    if labels is None:
        labels = {}
    elif not isinstance(labels, Mapping):
        raise TypeError(
            f"labels must map objective names to column names, got {short_repr(labels)}"
        )
    for name, column in labels.items():
        _require_column(df, column, f"labels[{name!r}]")

    used = {label, qid, *labels.values()} | ({segment} if segment is not None else set())
    if features is None:
        features = [c for c in df.columns if c not in used]
    else:
        if isinstance(features, (str, bytes)) or not isinstance(features, Sequence | pd.Index):
            raise TypeError(f"features must be a list of column names, got {short_repr(features)}")
        features = list(features)
        for column in features:
            _require_column(df, column, "feature")
    if not features:
        raise ValueError(
            f"no feature columns: every column is used as label/qid/segment; "
            f"available columns: {_columns_text(df)}"
        )
    non_numeric = [
        c
        for c in features
        if not (
            pd.api.types.is_numeric_dtype(df[c].dtype) or pd.api.types.is_bool_dtype(df[c].dtype)
        )
    ]
    if non_numeric:
        raise TypeError(
            f"feature columns must be numeric; {non_numeric[:10]!r} are not "
            f"(dtypes: {[str(df[c].dtype) for c in non_numeric[:10]]})"
        )

    y = _numeric_column(df, label, "label", line_of)
    # a run's logged columns (``data.position``) and internal keys (``__position__``) are named
    # by their role, not by the key
    extra = {
        name: _numeric_column(df, column, _role(name), line_of) for name, column in labels.items()
    }

    qid_series = df[qid]
    n_missing = int(qid_series.isna().sum())
    if n_missing:
        raise ValueError(f"qid column {qid!r} has {n_missing} missing value(s)")
    if pd.api.types.is_integer_dtype(qid_series.dtype):
        raw_qid = qid_series.to_numpy(dtype=np.int64)
    else:
        raw_qid = qid_series.to_numpy()
        if raw_qid.dtype.kind == "f" and np.all(raw_qid == np.round(raw_qid)):
            raw_qid = raw_qid.astype(np.int64)  # whole-number ids read as float (csv)
    groups = resolve_groups(
        len(df), qid=raw_qid, sort=sort, sort_hint=sort_hint, line_of=line_of
    )
    order = groups.order
    if raw_qid.dtype.kind in "iu":
        qid_values = raw_qid if order is None else raw_qid[order]
    else:
        qid_values = qid_from_offsets(groups.offsets)

    X = df[features].to_numpy(dtype=dtype)
    seg = None if segment is None else df[segment].to_numpy()
    if order is not None:
        X, y = X[order], y[order]
        extra = {k: v[order] for k, v in extra.items()}
        seg = None if seg is None else seg[order]
    return RankingData(
        X=X,
        y=y,
        qid=qid_values,
        feature_names=[str(c) for c in features],
        labels=extra,
        segments=seg,
    )


def _role(name: str) -> str:
    """How a message names the label column stored under *name*."""
    if name.startswith("__"):
        return name.strip("_")
    if name.startswith("data."):
        return name.split(".", 1)[1]
    return f"labels[{name!r}]"

"""Rolling monitoring of a ranker from logged impressions: windows, health rules, alerts.

A :class:`Monitor` holds a list of :class:`Rule` (metric, window, minimum
and/or maximum, segment filter or split, a business-metric divergence rule and
a drift check) and turns batches of logged impressions into per-window values
and alerts.  Its state is plain JSON (:meth:`Monitor.state_dict`), so a
service or a cron job can keep it between calls.

Semantics
---------
* A **query** is a ``qid``; it belongs to the window of its first impression.
  Each query's rows are expected to arrive in one batch (a result page is
  logged at once).
* **Time windows** (``"1h"``, ``"1D"``: fixed pandas offsets) are tumbling,
  floored in UTC and left-closed.  **Count windows** (an integer ``n``) hold
  ``n`` consecutive queries (after the rule's filter), ordered by first
  impression; their ``window_start`` is the first query's timestamp.
* A window's value is the mean of the per-query metric over the queries that
  have a positive label; queries without one follow ``empty``: ``"skip"``
  (default: left out and counted in ``n_skipped``) or a number.
* A **breach** is a value strictly below ``min`` or strictly above ``max``.
  A window with fewer than the rule's ``min_queries`` queries has status
  ``"not enough data"`` and raises no alert.
* **Incremental use**: the last window of an update may still grow, so it is
  *provisional*: computed and reported (``complete`` is false, status
  ``"provisional"``), never alerted, and its rows are kept (in memory and in the
  state) to be recomputed with the next batch.  ``update(batch, final=True)``
  closes it.  Windows already complete are never recomputed.
* Timestamps: ISO-8601 strings (each converted to UTC before windows are cut,
  so offsets that change across a daylight-saving switch are one zone; all
  with an offset or all without one, read as UTC), datetimes, or epoch numbers
  in ``time_unit`` (``"s"``, ``"ms"``, ``"us"``, ``"ns"``).  Without
  ``time_unit`` the unit is inferred only when exactly one unit puts every
  number between 1980 and 2100, and a warning states it.  Unsorted
  timestamps are an error naming the first out-of-order row unless
  ``sort=True`` (a stable sort by timestamp).
* **Windows without data**: a time window between two windows with queries
  (or after the last window of a restored state) that holds no query is
  reported with status ``"no data"`` (``n_queries`` 0), and alerts when the
  rule sets ``alert_no_data: true``.
"""

from __future__ import annotations

import json
import math
import os
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from ltr._io import to_jsonable, write_atomic
from ltr._validation import short_repr
from ltr.evaluation.timestamps import TIME_UNITS, check_time_unit, infer_unit, parse_timestamps
from ltr.metrics.names import (
    MONITOR_METRICS,
    MetricName,
    metric_function,
    metric_info,
    parse_metric_name,
)

__all__ = [
    "ALERT_COLUMNS",
    "METRICS",
    "STATE_VERSION",
    "TIME_UNITS",
    "VALUE_COLUMNS",
    "Monitor",
    "Rule",
    "parse_monitor_config",
    "parse_timestamps",
    "read_state_file",
    "register_metric",
    "rule_definition",
]

#: Columns of the alerts frame, in order.
ALERT_COLUMNS: tuple[str, ...] = ("window_start", "segment", "rule", "metric", "value",
                                  "threshold")
#: Columns of the per-window values frame, in order.
VALUE_COLUMNS: tuple[str, ...] = (
    "rule", "metric", "window_start", "segment", "n_queries", "n_skipped", "value", "min",
    "max", "status", "complete", "business", "drift_p",
)
#: Default log column names; each can be renamed with ``columns={key: name}``.
DEFAULT_COLUMNS: dict[str, str] = {
    "timestamp": "timestamp", "qid": "qid", "doc_id": "doc_id", "score": "score",
    "rank": "rank", "label": "label", "click": "click", "segment": "segment",
}

#: Per-query metric: ``fn(labels, scores, offsets, k, convention, empty) -> values``
#: (NaN for a query left out as empty).
MetricFn = Callable[[np.ndarray, np.ndarray, np.ndarray, "int | None", "str | None", Any],
                    np.ndarray]


def _registry_metric(metric: str) -> MetricFn:
    """Per-query function of a metric of :data:`ltr.metrics.names.REGISTRY`."""
    info = metric_info(metric)

    def per_query(labels: np.ndarray, scores: np.ndarray, offsets: np.ndarray, k: int | None,
                  convention: str | None, empty: Any) -> np.ndarray:
        extra = {"empty": empty} if "empty" in info.options else {}
        return np.asarray(metric_function(info.name)(labels, scores, offsets=offsets, k=k,
                                                     reduce=None, convention=convention,
                                                     **extra), dtype=float)

    return per_query


#: Metric registry of rules: every metric of qrels/run evaluation
#: (:data:`ltr.metrics.names.MONITOR_METRICS`: ndcg, dcg, map, mrr, precision,
#: recall, r-precision, hit_rate, err), plus any :func:`register_metric` adds.
METRICS: dict[str, MetricFn] = {name: _registry_metric(name) for name in MONITOR_METRICS}


def register_metric(name: str, fn: MetricFn) -> None:
    """Add a per-query metric to the registry (``name@k`` then works in rules)."""
    METRICS[name.lower()] = fn


def _parse_rule_metric(metric: Any) -> MetricName:
    """Parse a rule's metric name (an alias such as ``recip_rank`` included)."""
    return parse_metric_name(metric, metrics=tuple(METRICS), k_optional=True)


def _fail(where: str, message: str) -> ValueError:
    return ValueError(f"{where}: {message}")


@dataclass(frozen=True)
class Rule:
    """One health rule: a metric over windows with thresholds.

    Parameters
    ----------
    metric : str
        ``"ndcg@10"``, ``"map@10"``, ``"mrr"``, ``"recip_rank"``... (a name of
        :data:`METRICS`, optionally ``@k`` and ``:CONVENTION``, or an alias of
        :mod:`ltr.metrics.names`).  Values and alerts carry it as given.
    window : str or int
        A fixed pandas offset (``"1h"``, ``"15min"``, ``"1D"``) or a number of queries.
    min, max : float, optional
        Health bounds; a value strictly outside breaches.  At least one is needed.
    name : str, optional
        Label in alerts (default ``"<metric>/<window>"``).
    min_queries : int, default=1
        Fewer queries in a window (per segment) -> ``"not enough data"``.
    filter : dict, optional
        ``{column: value}``: only queries whose column equals the value
        (e.g. ``{"segment": "long_tail"}``); the alerts' segment is that value.
    by : str, optional
        Also check each value of this column separately (besides the whole population).
    business : dict, optional
        ``{"column": "ctr", "consecutive": 3}``: alert when the metric rises while
        the business metric (per-query mean of the column, averaged) falls over
        that many consecutive windows.
    drift : dict, optional
        ``{"p_value": 0.01, "reference": "first" | "previous"}``: two-sample KS test
        of the per-query values against the reference window; alert when p is below.
    alert_no_data : bool, default=False
        Alert on a time window without any query (status ``"no data"``).
    """

    metric: str
    window: str | int
    min: float | None = None
    max: float | None = None
    name: str | None = None
    min_queries: int = 1
    filter: Mapping[str, Any] | None = None
    by: str | None = None
    business: Mapping[str, Any] | None = None
    drift: Mapping[str, Any] | None = None
    alert_no_data: bool = False

    @property
    def label(self) -> str:
        """The rule's name in alerts and values."""
        return self.name or f"{self.metric}/{self.window}"


_RULE_KEYS = ("metric", "window", "min", "max", "name", "min_queries", "filter", "by",
              "business", "drift", "alert_no_data")



def _check_rule(raw: Any, where: str) -> Rule:
    if isinstance(raw, Rule):
        raw = {k: getattr(raw, k) for k in _RULE_KEYS}
    if not isinstance(raw, Mapping):
        raise _fail(where, f"a rule must be a mapping, got {raw!r}")
    unknown = sorted(set(map(str, raw)) - set(_RULE_KEYS))
    if unknown:
        raise _fail(f"{where}.{unknown[0]}", f"unknown key; expected one of {list(_RULE_KEYS)}")
    for key in ("metric", "window"):
        if raw.get(key) is None:
            raise _fail(f"{where}.{key}", "is required")
    metric = raw["metric"]
    try:
        _parse_rule_metric(metric)
    except (TypeError, ValueError) as exc:
        raise _fail(f"{where}.metric", str(exc)) from None
    window = raw["window"]
    if isinstance(window, bool) or not isinstance(window, (int, str)):
        raise _fail(f"{where}.window", f"must be an offset like '1h' or a query count, "
                                       f"got {window!r}")
    if isinstance(window, int) and window < 1:
        raise _fail(f"{where}.window", f"a query count must be >= 1, got {window!r}")
    if isinstance(window, str):
        _offset(window, f"{where}.window")
    bounds = {}
    for key in ("min", "max"):
        v = raw.get(key)
        if v is not None and (isinstance(v, bool) or not isinstance(v, (int, float))
                              or not math.isfinite(v)):
            raise _fail(f"{where}.{key}", f"must be a finite number, got {v!r}")
        bounds[key] = None if v is None else float(v)
    if bounds["min"] is None and bounds["max"] is None:
        raise _fail(where, "give min and/or max")
    mq = raw.get("min_queries", 1)
    if isinstance(mq, bool) or not isinstance(mq, int) or mq < 1:
        raise _fail(f"{where}.min_queries", f"must be an integer >= 1, got {mq!r}")
    flt = raw.get("filter")
    if flt is not None and (not isinstance(flt, Mapping) or len(flt) != 1):
        raise _fail(f"{where}.filter", f"must be one {{column: value}} pair, got {flt!r}")
    by = raw.get("by")
    if by is not None and not isinstance(by, str):
        raise _fail(f"{where}.by", f"must be a column name, got {by!r}")
    business = raw.get("business")
    if business is not None:
        if not isinstance(business, Mapping) or not isinstance(business.get("column"), str):
            raise _fail(f"{where}.business", f"must be {{column: NAME, consecutive: N}}, "
                                             f"got {business!r}")
        extra = sorted(set(business) - {"column", "consecutive"})
        if extra:
            raise _fail(f"{where}.business.{extra[0]}", "unknown key")
        n = business.get("consecutive", 3)
        if isinstance(n, bool) or not isinstance(n, int) or n < 1:
            raise _fail(f"{where}.business.consecutive", f"must be an integer >= 1, got {n!r}")
        business = {"column": business["column"], "consecutive": n}
    drift = raw.get("drift")
    if drift is not None:
        if not isinstance(drift, Mapping):
            raise _fail(f"{where}.drift", f"must be {{p_value: P, reference: first|previous}}, "
                                          f"got {drift!r}")
        extra = sorted(set(drift) - {"p_value", "reference"})
        if extra:
            raise _fail(f"{where}.drift.{extra[0]}", "unknown key")
        p = drift.get("p_value", 0.01)
        if isinstance(p, bool) or not isinstance(p, (int, float)) or not 0 < p < 1:
            raise _fail(f"{where}.drift.p_value", f"must be in (0, 1), got {p!r}")
        ref = drift.get("reference", "first")
        if ref not in ("first", "previous"):
            raise _fail(f"{where}.drift.reference", f"must be 'first' or 'previous', got {ref!r}")
        drift = {"p_value": float(p), "reference": ref}
    name = raw.get("name")
    if name is not None and not isinstance(name, str):
        raise _fail(f"{where}.name", f"must be a string, got {name!r}")
    no_data = raw.get("alert_no_data", False)
    if not isinstance(no_data, bool):
        raise _fail(f"{where}.alert_no_data", f"must be true or false, got {no_data!r}")
    if no_data and isinstance(window, int):
        raise _fail(f"{where}.alert_no_data", f"needs a time window; a window of {window} "
                                              "queries is never empty")
    return Rule(metric=metric.strip(), window=window, min=bounds["min"], max=bounds["max"],
                name=name, min_queries=mq, filter=None if flt is None else dict(flt), by=by,
                business=business, drift=drift, alert_no_data=no_data)


def rule_definition(rule: Rule) -> dict[str, Any]:
    """Return the rule as plain JSON data: every key, defaults included (what a state records)."""
    return to_jsonable({k: getattr(rule, k) for k in _RULE_KEYS})


def _offset(window: str, where: str) -> pd.Timedelta:
    try:
        off = pd.tseries.frequencies.to_offset(window)
        delta = pd.Timedelta(off)
    except (ValueError, TypeError):
        raise _fail(where, f"{window!r} is not a fixed time offset such as '1h', '15min' or "
                           "'1D' (calendar offsets like months are not fixed)") from None
    if delta <= pd.Timedelta(0):
        raise _fail(where, f"must be positive, got {window!r}")
    return delta


def parse_monitor_config(data: Mapping[str, Any]) -> dict[str, Any]:
    """Check a monitor config mapping (the YAML's content) and return Monitor arguments.

    Top-level keys: ``rules`` (a list of rule mappings, see :class:`Rule`),
    ``columns`` (renames, keys of ``DEFAULT_COLUMNS``), ``empty`` (``"skip"`` or a
    number), ``sort`` (bool) and ``time_unit`` (epoch unit of numeric
    timestamps: ``s``, ``ms``, ``us`` or ``ns``).  Errors name the key
    (``rules[2].window: ...``).

    Returns
    -------
    dict
        ``{"rules": [...], "columns": {...}, "empty": ..., "sort": ..., "time_unit": ...}``.
    """
    if not isinstance(data, Mapping):
        raise TypeError(f"monitor config must be a mapping, got {type(data).__name__}")
    unknown = sorted(set(map(str, data)) - set(CONFIG_KEYS))
    if unknown:
        raise _fail(unknown[0], f"unknown key; expected one of {list(CONFIG_KEYS)}")
    rules = data.get("rules")
    if not isinstance(rules, list) or not rules:
        raise _fail("rules", "must be a non-empty list of rules")
    return {
        "rules": [_check_rule(r, f"rules[{i}]") for i, r in enumerate(rules)],
        "columns": _check_columns(data.get("columns")),
        "empty": _check_empty(data.get("empty", "skip")),
        "sort": check_sort(data.get("sort", False)),
        "time_unit": check_time_unit(data.get("time_unit")),
    }


#: Top-level keys of a monitor config.
CONFIG_KEYS: tuple[str, ...] = ("rules", "columns", "empty", "sort", "time_unit")


def _check_columns(columns: Any) -> dict[str, str]:
    if columns is None:
        return dict(DEFAULT_COLUMNS)
    if not isinstance(columns, Mapping):
        raise _fail("columns", f"must be a mapping of renames, got {columns!r}")
    out = dict(DEFAULT_COLUMNS)
    for key, value in columns.items():
        if key not in DEFAULT_COLUMNS:
            raise _fail(f"columns.{key}", f"unknown key; expected one of {list(DEFAULT_COLUMNS)}")
        if not isinstance(value, str):
            raise _fail(f"columns.{key}", f"must be a column name, got {value!r}")
        out[key] = value
    return out


def _check_empty(empty: Any) -> Any:
    if empty == "skip":
        return "skip"
    if isinstance(empty, bool) or not isinstance(empty, (int, float)) or not 0 <= empty <= 1:
        raise _fail("empty", f"must be 'skip' or a number in [0, 1], got {empty!r}")
    return float(empty)


def check_sort(sort: Any) -> bool:
    if not isinstance(sort, bool):
        raise _fail("sort", f"must be true or false, got {sort!r}")
    return sort


def _iso(ts: pd.Timestamp) -> str:
    return ts.tz_convert("UTC").strftime("%Y-%m-%dT%H:%M:%SZ")


class Monitor:
    """Health rules over rolling windows of logged impressions.

    Parameters
    ----------
    rules : list of Rule or mappings
        The metric matrix (see :class:`Rule`).
    columns : dict, optional
        Column renames: keys ``timestamp, qid, doc_id, score, rank, label, click,
        segment``.  ``rank`` is used when the score column is absent (score =
        -rank); ``click`` when the label column is absent.
    empty : 'skip' or float, default='skip'
        Value of a query with no positive label (``'skip'``: left out, counted).
    sort : bool, default=False
        Sort each batch by timestamp (stable) instead of refusing unsorted rows.
    time_unit : {'s', 'ms', 'us', 'ns'}, optional
        Unit of numeric (epoch) timestamps.  Without it, a unit is inferred only
        when unambiguous (stated in a warning, then kept for later batches).

    Examples
    --------
    >>> import pandas as pd
    >>> t = ["2024-01-01T00:10:00Z"] * 2 + ["2024-01-01T01:10:00Z"] * 2
    >>> log = pd.DataFrame({"timestamp": t,
    ...                     "qid": [1, 1, 2, 2], "doc_id": [1, 2, 1, 2],
    ...                     "score": [2.0, 1.0, 2.0, 1.0], "label": [1, 0, 0, 1]})
    >>> m = Monitor([{"metric": "ndcg@10", "window": "1h", "min": 0.9}])
    >>> m.update(log, final=True)[["window_start", "value", "threshold"]]
               window_start     value  threshold
    0  2024-01-01T01:00:00Z  0.63093        0.9
    """

    def __init__(self, rules: Sequence[Rule | Mapping[str, Any]], *,
                 columns: Mapping[str, str] | None = None, empty: Any = "skip",
                 sort: bool = False, time_unit: str | None = None) -> None:
        if isinstance(rules, (str, Mapping)) or not isinstance(rules, Sequence) or not rules:
            raise ValueError("rules must be a non-empty list of rules")
        self.rules = [_check_rule(r, f"rules[{i}]") for i, r in enumerate(rules)]
        labels = [r.label for r in self.rules]
        if len(set(labels)) != len(labels):
            dup = next(x for x in labels if labels.count(x) > 1)
            raise ValueError(f"rules: two rules are named {dup!r}; give them distinct names")
        self.columns = _check_columns(columns)
        self.empty = _check_empty(empty)
        self.sort = check_sort(sort)
        self.time_unit = check_time_unit(time_unit)
        self._state: dict[str, dict[str, Any]] = {r.label: {"skip": 0, "segments": {}}
                                                  for r in self.rules}
        self._buffer: pd.DataFrame | None = None
        self._last_ts: pd.Timestamp | None = None
        self.rows_seen = 0
        self.n_windows_computed = 0
        self.values = pd.DataFrame(columns=list(VALUE_COLUMNS))

    # ---------------------------------------------------------------- input
    def timestamps(self, col: pd.Series, row_offset: int = 0) -> pd.Series:
        """Parse a timestamp column (see :func:`parse_timestamps`); an inferred unit is kept."""
        name = self.columns["timestamp"]
        ts = parse_timestamps(col, name, row_offset, self.time_unit)
        numeric = pd.api.types.is_numeric_dtype(col) and not pd.api.types.is_bool_dtype(col)
        if self.time_unit is None and numeric and len(col):
            self.time_unit = infer_unit(col.to_numpy(float), name)  # stated once, then kept
        return ts

    def _normalize(self, batch: pd.DataFrame, row_offset: int) -> pd.DataFrame:
        if not isinstance(batch, pd.DataFrame):
            raise TypeError(f"batch must be a pandas DataFrame, got {type(batch).__name__}")
        c = self.columns
        have = set(batch.columns)

        def need(key: str, alt: str | None = None) -> str:
            if c[key] in have:
                return key
            if alt is not None and c[alt] in have:
                return alt
            also = f" (or {c[alt]!r}, columns.{alt})" if alt else ""
            raise ValueError(f"the log has no column {c[key]!r} (columns.{key} in the config)"
                             f"{also}; its columns are {sorted(map(str, have))!r}")

        ts_key, qid_key = need("timestamp"), need("qid")
        score_key, label_key = need("score", "rank"), need("label", "click")
        out = pd.DataFrame(index=pd.RangeIndex(len(batch)))
        ts = self.timestamps(batch[c[ts_key]].reset_index(drop=True), row_offset)
        out["_ts"] = ts.to_numpy()
        qid = batch[c[qid_key]].reset_index(drop=True)
        for key, col in ((qid_key, qid),):
            if col.isna().any():
                i = int(np.flatnonzero(col.isna().to_numpy())[0])
                raise ValueError(f"column {c[key]!r}, row {i + row_offset}: value is missing")
        out["_qid"] = qid.astype(str).to_numpy()
        for key, target, sign in ((score_key, "_score", -1.0 if score_key == "rank" else 1.0),
                                  (label_key, "_label", 1.0)):
            raw = batch[c[key]].reset_index(drop=True)
            num = pd.to_numeric(raw, errors="coerce").to_numpy(float)
            bad = ~np.isfinite(num)
            if bad.any():
                i = int(np.flatnonzero(bad)[0])
                raise ValueError(f"column {c[key]!r}, row {i + row_offset}: "
                                 f"{raw.iloc[i]!r} is not a finite number (NaN or missing)")
            out[target] = sign * num
        extra = {c["segment"]} if c["segment"] in have else set()
        for r in self.rules:
            for col in ([r.by] if r.by else []) + list(r.filter or {}) + (
                    [r.business["column"]] if r.business else []):
                if col not in have:
                    raise ValueError(f"rule {r.label!r} needs column {col!r}, which the log "
                                     f"lacks; its columns are {sorted(map(str, have))!r}")
                extra.add(col)
        for col in sorted(extra):
            out[col] = batch[col].to_numpy()
        t = out["_ts"].to_numpy()
        if len(t) > 1:
            down = np.flatnonzero(t[1:] < t[:-1])
            if down.size:
                if not self.sort:
                    i = int(down[0]) + 1
                    raise ValueError(
                        f"column {c[ts_key]!r}, row {i + row_offset}: timestamp "
                        f"{_iso(pd.Timestamp(t[i]))} is earlier than the row before "
                        f"({_iso(pd.Timestamp(t[i - 1]))}); sort the log, or set sort: true "
                        "(ltr monitor --sort)"
                    )
                out = out.iloc[np.argsort(t, kind="stable")].reset_index(drop=True)
        if len(out) and self._last_ts is not None and out["_ts"].iloc[0] < self._last_ts:
            raise ValueError(f"column {c[ts_key]!r}: this batch starts at "
                             f"{_iso(out['_ts'].iloc[0])}, before the previous batch ended "
                             f"({_iso(self._last_ts)})")
        return out

    # ---------------------------------------------------------------- core
    def update(self, batch: pd.DataFrame, *, final: bool = False,
               row_offset: int = 0) -> pd.DataFrame:
        """Add a batch of impressions and return the alerts of windows completed by it.

        Parameters
        ----------
        batch : pandas.DataFrame
            Logged impressions, sorted by timestamp (or ``sort=True``), later than
            every earlier batch.
        final : bool, default=False
            Treat the last window as complete (no more rows will come for it).
        row_offset : int, default=0
            Added to row numbers in error messages (rows already read from a file).

        Returns
        -------
        pandas.DataFrame
            Columns :data:`ALERT_COLUMNS`.  Per-window values of this update are in
            :attr:`values` (columns :data:`VALUE_COLUMNS`).
        """
        norm = self._normalize(batch, row_offset)
        self.rows_seen += len(batch)
        data = norm if self._buffer is None else pd.concat([self._buffer, norm],
                                                           ignore_index=True)
        if len(data) == 0:  # an empty batch (no open window either): nothing to compute
            self.values = pd.DataFrame(columns=list(VALUE_COLUMNS))
            return pd.DataFrame(columns=list(ALERT_COLUMNS))
        self._last_ts = data["_ts"].iloc[-1]
        codes, uniques = pd.factorize(data["_qid"], sort=False)
        n_q = len(uniques)
        order = np.argsort(codes, kind="stable")
        offsets = np.zeros(n_q + 1, dtype=np.int64)
        np.cumsum(np.bincount(codes, minlength=n_q), out=offsets[1:])
        grouped = data.iloc[order].reset_index(drop=True)
        first = offsets[:-1]
        queries = grouped.iloc[first][[c for c in grouped.columns
                                       if not c.startswith("_")]].reset_index(drop=True)
        queries["_ts"] = grouped["_ts"].to_numpy()[first]
        queries["_row"] = np.asarray(order)[first]
        per_metric: dict[str, np.ndarray] = {}
        alerts: list[dict[str, Any]] = []
        values: list[dict[str, Any]] = []
        prov_start: dict[str, int] = {}
        for rule in self.rules:
            if rule.metric not in per_metric:
                p = _parse_rule_metric(rule.metric)
                per_metric[rule.metric] = METRICS[p.metric](
                    grouped["_label"].to_numpy(float), grouped["_score"].to_numpy(float),
                    offsets, p.k, p.convention, self.empty)
            biz = None
            if rule.business:
                col = rule.business["column"]
                b = pd.to_numeric(grouped[col], errors="coerce").to_numpy(float)
                biz = np.add.reduceat(b, first) / np.diff(offsets) if n_q else np.zeros(0)
            prov_start[rule.label] = self._run_rule(rule, queries, per_metric[rule.metric], biz,
                                                    final, alerts, values)
        start = min(prov_start.values()) if prov_start else n_q
        for rule in self.rules:
            self._state[rule.label]["skip"] = prov_start[rule.label] - start
        keep = np.isin(codes, np.arange(start, n_q))
        self._buffer = data[keep].reset_index(drop=True) if keep.any() else None
        self.values = pd.DataFrame(values, columns=list(VALUE_COLUMNS))
        return pd.DataFrame(alerts, columns=list(ALERT_COLUMNS))

    def _run_rule(self, rule: Rule, queries: pd.DataFrame, metric: np.ndarray,
                  biz: np.ndarray | None, final: bool, alerts: list[dict[str, Any]],
                  values: list[dict[str, Any]]) -> int:
        """Compute one rule's windows; return the first query index of its provisional window."""
        st = self._state[rule.label]
        n_q = len(queries)
        idx = np.arange(st["skip"], n_q)
        if rule.filter:
            (col, want), = rule.filter.items()
            idx = idx[(queries[col].to_numpy()[idx] == want)]
        if idx.size == 0:
            return n_q
        ts = pd.DatetimeIndex(queries["_ts"].to_numpy()[idx]).tz_localize(None)
        if isinstance(rule.window, int):
            win = np.arange(idx.size) // rule.window
        else:
            step = _offset(rule.window, "window")
            floors = ts.floor(step).to_numpy()
            uniq, win = np.unique(floors, return_inverse=True)
            win = win.reshape(-1)
        n_win = int(win.max()) + 1
        provisional_from = n_q
        for w in range(n_win):
            if not isinstance(rule.window, int):
                self._no_data(rule, pd.Timestamp(uniq[w]).tz_localize("UTC"), step, alerts,
                              values)
            members = idx[win == w]
            complete = final or w < n_win - 1
            if not complete:
                provisional_from = int(members[0])
            if isinstance(rule.window, int):
                wstart = pd.Timestamp(queries["_ts"].iloc[members[0]])
            else:
                wstart = pd.Timestamp(ts[np.flatnonzero(win == w)[0]]).floor(
                    _offset(rule.window, "window")).tz_localize("UTC")
            self.n_windows_computed += 1
            groups: list[tuple[str, np.ndarray]] = [
                (str(next(iter(rule.filter.values()))) if rule.filter else "", members)]
            if rule.by:
                seg = queries[rule.by].to_numpy()[members]
                # a blank label is no segment (as an empty CSV cell): '' is the whole population
                text = pd.Series(seg, dtype=object).astype(str).to_numpy()
                labelled = pd.notna(seg) & (text != "")
                for s in sorted(pd.unique(seg[labelled]).tolist(), key=str):
                    groups.append((str(s), members[seg == s]))
            for segment, m in groups:
                self._window(rule, segment, wstart, metric[m], None if biz is None else biz[m],
                             complete, alerts, values)
            if complete and not isinstance(rule.window, int):
                self._state[rule.label]["last_window"] = _iso(wstart)
        return provisional_from

    def _no_data(self, rule: Rule, wstart: pd.Timestamp, step: pd.Timedelta,
                 alerts: list[dict[str, Any]], values: list[dict[str, Any]]) -> None:
        """Report the empty windows between the rule's last complete window and *wstart*."""
        st = self._state[rule.label]
        last = st.get("last_window")
        if last is None:
            return
        t = pd.Timestamp(last) + step
        segment = str(next(iter(rule.filter.values()))) if rule.filter else ""
        while t < wstart:
            iso = _iso(t)
            values.append({"rule": rule.label, "metric": rule.metric, "window_start": iso,
                           "segment": segment, "n_queries": 0, "n_skipped": 0,
                           "value": math.nan, "min": rule.min, "max": rule.max,
                           "status": "no data", "complete": True, "business": math.nan,
                           "drift_p": math.nan})
            if rule.alert_no_data:
                alerts.append({"window_start": iso, "segment": segment, "rule": rule.label,
                               "metric": f"{rule.metric} no data", "value": 0.0,
                               "threshold": float(rule.min_queries)})
            self.n_windows_computed += 1
            st["last_window"] = iso
            t += step

    def _window(self, rule: Rule, segment: str, wstart: pd.Timestamp, vals: np.ndarray,
                biz: np.ndarray | None, complete: bool, alerts: list[dict[str, Any]],
                values: list[dict[str, Any]]) -> None:
        from scipy import stats

        ok = vals[~np.isnan(vals)]
        n = int(ok.size)
        value = float(ok.mean()) if n else math.nan
        business = float(np.nanmean(biz)) if biz is not None and biz.size else math.nan
        iso = _iso(wstart)
        row = {"rule": rule.label, "metric": rule.metric, "window_start": iso, "segment": segment,
               "n_queries": n, "n_skipped": int(vals.size - n), "value": value, "min": rule.min,
               "max": rule.max, "status": "ok", "complete": complete, "business": business,
               "drift_p": math.nan}
        values.append(row)
        if not complete:
            row["status"] = "provisional"
            return
        if n < rule.min_queries:
            row["status"] = "not enough data"
            return

        def alert(metric: str, v: float, threshold: float) -> None:
            alerts.append({"window_start": iso, "segment": segment, "rule": rule.label,
                           "metric": metric, "value": v, "threshold": threshold})

        if rule.min is not None and value < rule.min:
            row["status"] = "breach"
            alert(rule.metric, value, rule.min)
        if rule.max is not None and value > rule.max:
            row["status"] = "breach"
            alert(rule.metric, value, rule.max)
        seg_state = self._state[rule.label]["segments"].setdefault(segment, {})
        if rule.drift:
            ref = seg_state.get("reference")
            if ref is not None and len(ref) >= rule.min_queries:
                p = float(stats.ks_2samp(np.asarray(ref, float), ok).pvalue)
                row["drift_p"] = p
                if p < rule.drift["p_value"]:
                    alert(f"{rule.metric} drift (KS)", p, rule.drift["p_value"])
            if ref is None or rule.drift["reference"] == "previous":
                seg_state["reference"] = ok.tolist()
        if rule.business:
            prev = seg_state.get("previous")
            streak = 0
            if prev is not None and value > prev[0] and business < prev[1]:
                streak = seg_state.get("streak", 0) + 1
            seg_state["streak"] = streak
            seg_state["previous"] = [value, business]
            if streak >= rule.business["consecutive"]:
                alert(f"{rule.metric} vs {rule.business['column']} divergence", float(streak),
                      float(rule.business["consecutive"]))

    # ---------------------------------------------------------------- state
    def state_dict(self, *, include_buffer: bool = True) -> dict[str, Any]:
        """Plain-JSON state: rule progress, references, streaks (and the open window's rows)."""
        buf = None
        if include_buffer and self._buffer is not None:
            b = self._buffer.copy()
            b["_ts"] = [_iso(t) if t.microsecond == 0 else t.isoformat() for t in b["_ts"]]
            buf = {c: b[c].tolist() for c in b.columns}
        return to_jsonable({
            "version": STATE_VERSION,
            "rules": [rule_definition(r) for r in self.rules],
            "settings": self._settings(),
            "rule_state": self._state,
            "last_timestamp": None if self._last_ts is None else self._last_ts.isoformat(),
            "rows_seen": self.rows_seen,
            "buffer_rows": 0 if self._buffer is None else len(self._buffer),
            "buffer": buf,
        })

    def _settings(self) -> dict[str, Any]:
        """Monitor settings that change window values (recorded in the state)."""
        return {"empty": self.empty, "time_unit": self.time_unit, "columns": dict(self.columns)}

    def load_state(self, state: Mapping[str, Any], *, include_buffer: bool = True,
                   source: str = "the monitor state") -> Monitor:
        """Restore :meth:`state_dict` output (the rules must be the same); return self.

        The state records every rule's full definition; a rule that differs in any
        key (or another number of rules) is refused, naming the rule and the key.
        *source* names the state in messages (a file name).
        """
        if not isinstance(state, Mapping):
            raise ValueError(  # noqa: TRY004 - a bad file, not a bad argument type
                f"{source}: must be a JSON object (a saved monitor state), got "
                f"{type(state).__name__}")
        if state.get("version") != STATE_VERSION:
            raise ValueError(
                f"{source}: state version {state.get('version')!r} is not {STATE_VERSION} (it "
                "was written by another ltr version and does not record its rules in full); "
                "start a new state file")
        missing = [k for k in ("rules", "rule_state") if k not in state]
        if missing:
            raise ValueError(f"{source}: key {missing[0]!r} is missing; start a new state file")
        saved = state["rules"]
        now = [rule_definition(r) for r in self.rules]
        if not isinstance(saved, list) or len(saved) != len(now):
            n = len(saved) if isinstance(saved, list) else saved
            raise ValueError(f"{source}: computed under {n} rules, but {len(now)} are given; "
                             "start a new state file (or restore the rules)")
        for i, (old, new) in enumerate(zip(saved, now, strict=True)):
            for key in _RULE_KEYS:
                if not isinstance(old, Mapping) or old.get(key) != new[key]:
                    was = old.get(key) if isinstance(old, Mapping) else old
                    raise ValueError(
                        f"{source}: rules[{i}].{key} differs: the state was computed with "
                        f"{was!r}, the rules now say {new[key]!r}; start a new state file "
                        "(or restore the rule)")
        settings = state.get("settings", {})
        for key, value in self._settings().items():
            was = settings.get(key) if isinstance(settings, Mapping) else None
            if key == "time_unit" and (was is None or value is None):
                continue  # an inferred unit is recorded once known
            if was != value:
                raise ValueError(f"{source}: {key} differs: the state was computed with "
                                 f"{was!r}, now {value!r}; start a new state file")
        if self.time_unit is None and isinstance(settings, Mapping):
            self.time_unit = settings.get("time_unit")
        self._state = json.loads(json.dumps(dict(state["rule_state"])))
        last = state.get("last_timestamp")
        self._last_ts = None if last is None else pd.Timestamp(last)
        self.rows_seen = int(state.get("rows_seen", 0))
        buf = state.get("buffer") if include_buffer else None
        if buf:
            frame = pd.DataFrame(dict(buf))
            frame["_ts"] = pd.to_datetime(frame["_ts"], utc=True, format="ISO8601")
            self._buffer = frame
        else:
            self._buffer = None
        return self

    def save_state(self, path: str | os.PathLike[str]) -> Path:
        """Write :meth:`state_dict` as JSON (atomically)."""
        return write_atomic(path, json.dumps(self.state_dict(), indent=1) + "\n")

    @classmethod
    def from_state(cls, path: str | os.PathLike[str], rules: Sequence[Rule | Mapping[str, Any]],
                   **kwargs: Any) -> Monitor:
        """Build a monitor with *rules* and restore a :meth:`save_state` file."""
        monitor = cls(rules, **kwargs)
        return monitor.load_state(read_state_file(path), source=f"state file {str(path)!r}")


#: Version of :meth:`Monitor.state_dict` (2: full rule definitions and settings).
STATE_VERSION = 2


def read_state_file(path: str | os.PathLike[str]) -> dict[str, Any]:
    """Read a monitor state file; errors name the file (and the JSON error's line)."""
    p = Path(path)
    if p.is_dir():
        raise ValueError(f"state file {str(p)!r} is a folder, not a monitor state file")
    try:
        text = p.read_text(encoding="utf-8")
    except UnicodeDecodeError as exc:
        raise ValueError(f"state file {str(p)!r} is not UTF-8 text ({exc.reason} at byte "
                         f"{exc.start}); start a new state file") from None
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise ValueError(f"state file {str(p)!r}, line {exc.lineno}: not valid JSON ({exc.msg}); "
                         "it may be truncated: start a new state file") from None
    if not isinstance(data, dict):
        raise ValueError(  # noqa: TRY004 - a bad file, not a bad argument type
            f"state file {str(p)!r} must hold a JSON object (a saved monitor state), got "
            f"{type(data).__name__} {short_repr(data)}")
    return data

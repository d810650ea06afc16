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
* Timestamps: ISO-8601 strings (all with the same UTC offset, or all without
  one, read as UTC), datetimes, or numbers (Unix seconds).  Unsorted
  timestamps are an error naming the first out-of-order row unless
  ``sort=True`` (a stable sort by timestamp).
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
from ltr.empty_queries import EmptyQueryRule, count_empty_queries
from ltr.metric_names import parse_metric_name
from ltr.metrics import ndcg

__all__ = [
    "ALERT_COLUMNS",
    "METRICS",
    "VALUE_COLUMNS",
    "Monitor",
    "Rule",
    "parse_monitor_config",
    "register_metric",
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


def _ndcg(labels: np.ndarray, scores: np.ndarray, offsets: np.ndarray, k: int | None,
          convention: str | None, empty: Any) -> np.ndarray:
    return np.asarray(ndcg(labels, scores, offsets=offsets, k=k, reduce=None, empty=empty,
                           convention=convention), dtype=float)


#: Metric registry: name (as in ``"ndcg@10"``) -> per-query function.
METRICS: dict[str, MetricFn] = {"ndcg": _ndcg}


def register_metric(name: str, fn: MetricFn) -> None:
    """Add a per-query metric to the registry (``name@k`` then works in rules)."""
    METRICS[name.lower()] = fn


def _fail(where: str, message: str) -> ValueError:
    return ValueError(f"{where}: {message}")


@dataclass(frozen=True)
class Rule:
    """One health rule: a metric over windows with thresholds.

    Parameters
    ----------
    metric : str
        ``"ndcg@10"`` (a name of :data:`METRICS` with ``@k``).
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

    @property
    def label(self) -> str:
        """The rule's name in alerts and values."""
        return self.name or f"{self.metric}/{self.window}"


_RULE_KEYS = ("metric", "window", "min", "max", "name", "min_queries", "filter", "by",
              "business", "drift")


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
        parsed = parse_metric_name(metric, metrics=tuple(METRICS), k_optional=True)
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
    return Rule(metric=str(parsed), window=window, min=bounds["min"], max=bounds["max"],
                name=name, min_queries=mq, filter=None if flt is None else dict(flt), by=by,
                business=business, drift=drift)


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
    number) and ``sort`` (bool).  Errors name the key (``rules[2].window: ...``).

    Returns
    -------
    dict
        ``{"rules": [...], "columns": {...}, "empty": ..., "sort": ...}``.
    """
    if not isinstance(data, Mapping):
        raise TypeError(f"monitor config must be a mapping, got {type(data).__name__}")
    unknown = sorted(set(map(str, data)) - {"rules", "columns", "empty", "sort"})
    if unknown:
        raise _fail(unknown[0], "unknown key; expected rules, columns, empty, sort")
    rules = data.get("rules")
    if not isinstance(rules, list) or not rules:
        raise _fail("rules", "must be a non-empty list of rules")
    return {
        "rules": [_check_rule(r, f"rules[{i}]") for i, r in enumerate(rules)],
        "columns": _check_columns(data.get("columns")),
        "empty": _check_empty(data.get("empty", "skip")),
        "sort": _check_sort(data.get("sort", False)),
    }


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


def _check_sort(sort: Any) -> bool:
    if not isinstance(sort, bool):
        raise _fail("sort", f"must be true or false, got {sort!r}")
    return sort


def _iso(ts: pd.Timestamp) -> str:
    return ts.tz_convert("UTC").strftime("%Y-%m-%dT%H:%M:%SZ")


def parse_timestamps(col: pd.Series, name: str, row_offset: int = 0) -> pd.Series:
    """Timestamps as UTC datetimes; errors name the column and the first bad row."""
    if isinstance(col.dtype, pd.DatetimeTZDtype):
        return col.dt.tz_convert("UTC")
    if pd.api.types.is_datetime64_dtype(col):
        return col.dt.tz_localize("UTC")
    if pd.api.types.is_numeric_dtype(col):
        bad = ~np.isfinite(col.to_numpy(float))
        if bad.any():
            i = int(np.flatnonzero(bad)[0])
            raise ValueError(f"column {name!r}, row {i + row_offset}: timestamp is missing")
        return pd.to_datetime(col, unit="s", utc=True)
    missing = col.isna().to_numpy()
    if missing.any():
        i = int(np.flatnonzero(missing)[0])
        raise ValueError(f"column {name!r}, row {i + row_offset}: timestamp is missing")
    text = col.astype(str).str.strip()
    ts = pd.to_datetime(text, utc=True, format="ISO8601", errors="coerce")
    bad = ts.isna().to_numpy()
    if bad.any():
        i = int(np.flatnonzero(bad)[0])
        raise ValueError(f"column {name!r}, row {i + row_offset}: cannot parse "
                         f"{text.iloc[i]!r} as an ISO-8601 timestamp")
    zone = text.str.extract(r"(Z|[+-]\d\d:?\d\d)$")[0].fillna("").str.replace(":", "")
    zone = zone.replace({"Z": "+0000", "-0000": "+0000"}).to_numpy()
    differs = zone != zone[0]
    if differs.any():
        i = int(np.flatnonzero(differs)[0])
        raise ValueError(
            f"column {name!r}: mixed time zones: row {row_offset} is {text.iloc[0]!r} but row "
            f"{i + row_offset} is {text.iloc[i]!r}; write every timestamp with the same UTC offset"
        )
    return ts


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
                 sort: bool = False) -> None:
        if isinstance(rules, (str, Mapping)) or not isinstance(rules, Sequence) or not rules:
            raise ValueError("rules must be a non-empty list of rules")
        self.rules = [_check_rule(r, f"rules[{i}]") for i, r in enumerate(rules)]
        labels = [r.label for r in self.rules]
        if len(set(labels)) != len(labels):
            dup = next(x for x in labels if labels.count(x) > 1)
            raise ValueError(f"rules: two rules are named {dup!r}; give them distinct names")
        self.columns = _check_columns(columns)
        self.empty = _check_empty(empty)
        self.sort = _check_sort(sort)
        self._state: dict[str, dict[str, Any]] = {r.label: {"skip": 0, "segments": {}}
                                                  for r in self.rules}
        self._buffer: pd.DataFrame | None = None
        self._last_ts: pd.Timestamp | None = None
        self.rows_seen = 0
        self.n_windows_computed = 0
        self.values = pd.DataFrame(columns=list(VALUE_COLUMNS))
        #: the empty-query rule and how many queries of the last update it applied to
        self.empty_queries: EmptyQueryRule | None = None

    # ---------------------------------------------------------------- input
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
        ts = parse_timestamps(batch[c[ts_key]].reset_index(drop=True), c[ts_key], row_offset)
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
                        f"({_iso(pd.Timestamp(t[i - 1]))}); sort the log or set sort: true"
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
        if len(data):
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
        self.empty_queries = EmptyQueryRule(
            "monitor", None if isinstance(self.empty, str) else float(self.empty),
            count_empty_queries(grouped["_label"].to_numpy(float), offsets) if n_q else 0, n_q)
        per_metric: dict[str, np.ndarray] = {}
        alerts: list[dict[str, Any]] = []
        values: list[dict[str, Any]] = []
        prov_start: dict[str, int] = {}
        for rule in self.rules:
            if rule.metric not in per_metric:
                p = parse_metric_name(rule.metric, metrics=tuple(METRICS), k_optional=True)
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
            floors = ts.floor(_offset(rule.window, "window")).to_numpy()
            win = np.unique(floors, return_inverse=True)[1].reshape(-1)
        n_win = int(win.max()) + 1
        provisional_from = n_q
        for w in range(n_win):
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
                for s in sorted(pd.unique(seg[pd.notna(seg)]).tolist(), key=str):
                    groups.append((str(s), members[seg == s]))
            for segment, m in groups:
                self._window(rule, segment, wstart, metric[m], None if biz is None else biz[m],
                             complete, alerts, values)
        return provisional_from

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
            "version": 1,
            "rules": [r.label for r in self.rules],
            "rule_state": self._state,
            "last_timestamp": None if self._last_ts is None else self._last_ts.isoformat(),
            "rows_seen": self.rows_seen,
            "buffer_rows": 0 if self._buffer is None else len(self._buffer),
            "buffer": buf,
        })

    def load_state(self, state: Mapping[str, Any], *, include_buffer: bool = True) -> Monitor:
        """Restore :meth:`state_dict` output (the rules must be the same); return self."""
        if state.get("version") != 1 or state.get("rules") != [r.label for r in self.rules]:
            raise ValueError(f"the monitor state is for rules {state.get('rules')!r}, not "
                             f"{[r.label for r in self.rules]!r}; start a new state file")
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
        return cls(rules, **kwargs).load_state(json.loads(Path(path).read_text("utf-8")))

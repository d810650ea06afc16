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
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from ltr._io import to_jsonable, write_atomic
from ltr._validation import short_repr
from ltr.evaluation.monitor_rules import (
    _RULE_KEYS,
    ALERT_COLUMNS,
    METRICS,
    VALUE_COLUMNS,
    Rule,
    _check_columns,
    _check_empty,
    _check_rule,
    _offset,
    _parse_rule_metric,
    check_sort,
    parse_monitor_config,
    register_metric,
    rule_definition,
)
from ltr.evaluation.timestamps import TIME_UNITS, check_time_unit, infer_unit, parse_timestamps
from ltr.metrics.empty_queries import EmptyQueryRule, count_empty_queries

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
        #: the empty-query rule and how many queries of the last update it applied to
        self.empty_queries: EmptyQueryRule | None = None

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
        self.empty_queries = EmptyQueryRule(
            "monitor", None if isinstance(self.empty, str) else float(self.empty),
            count_empty_queries(grouped["_label"].to_numpy(float), offsets) if n_q else 0, n_q)
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

"""``ltr monitor``: health rules over a logged-impressions file (the library side of the command).

The log is parquet or CSV with one row per impression: ``timestamp, qid,
doc_id, score`` (or ``rank``), ``label`` (or ``click``), optional segment and
business-metric columns; the config (``configs/monitor.yaml``) names the rules.
See :mod:`ltr.evaluation.monitoring` for the window semantics.

Incremental use (``state=PATH``): the state file records the monitor's
progress and how many log rows were consumed.  The next call reads the whole
(append-only) log again, skips the rows already consumed and computes only the
windows that are new; the last window of each call is provisional (reported,
never alerted) and is recomputed by the next call.  Without a state file the
log is taken as complete: every window is final.
"""

from __future__ import annotations

import json
import os
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from ltr._compat import import_matplotlib_figure, import_yaml
from ltr._io import png_bytes, to_jsonable, write_atomic, write_file_set
from ltr.evaluation.monitoring import (
    ALERT_COLUMNS,
    Monitor,
    check_sort,
    parse_monitor_config,
    read_state_file,
)
from ltr.evaluation.timestamps import check_time_unit
from ltr.runs.config import _strict_loader
from ltr.runs.errors import ConfigError

__all__ = ["MonitorResult", "check_monitor_config", "load_monitor_config", "monitor_log"]


@dataclass
class MonitorResult:
    """What :func:`monitor_log` returns.

    Attributes
    ----------
    values : pandas.DataFrame
        One row per rule x window x segment (:data:`ltr.evaluation.monitoring.VALUE_COLUMNS`).
    alerts : pandas.DataFrame
        :data:`ltr.evaluation.monitoring.ALERT_COLUMNS`.
    n_windows_computed : int
        Rule x window pairs computed by this call.
    files : dict of str to Path
        Files written.
    empty : str
        The empty-query rule and how many queries of the log it applied to.
    """

    values: pd.DataFrame
    alerts: pd.DataFrame
    n_windows_computed: int = 0
    files: dict[str, Path] = field(default_factory=dict)
    empty: str = ""

    @property
    def alerted(self) -> bool:
        """Whether any alert fired (the CLI exits with status 3)."""
        return len(self.alerts) > 0

    def summary_lines(self) -> list[str]:
        """Short lines a CLI can print."""
        counts = self.values["status"].value_counts().to_dict() if len(self.values) else {}
        lines = [f"{self.n_windows_computed} windows computed; "
                 + ", ".join(f"{v} {k}" for k, v in sorted(counts.items()))]
        if self.empty:
            lines.append(self.empty)
        for a in self.alerts.itertuples():
            seg = f" [{a.segment}]" if a.segment else ""
            lines.append(f"ALERT {a.window_start}{seg} {a.rule}: {a.metric} = {a.value:.4g} "
                         f"(threshold {a.threshold:.4g})")
        return lines


def load_monitor_config(path: str | os.PathLike[str]) -> dict[str, Any]:
    """Read and check a monitor YAML; errors name the file and the key (``rules[1].min``)."""
    yaml = import_yaml()
    p = Path(path)
    if not p.is_file():
        raise ConfigError(f"monitor config not found: {str(path)!r}")
    try:
        data = yaml.load(p.read_text(encoding="utf-8"), Loader=_strict_loader(yaml))
    except yaml.YAMLError as exc:
        raise ConfigError(f"{path}: not valid YAML ({exc})") from None
    try:
        return parse_monitor_config(data)
    except (TypeError, ValueError) as exc:
        raise ConfigError(f"{path}: {exc}") from None


def check_monitor_config(path: str | os.PathLike[str]) -> str | None:
    """``ltr validate`` of a monitor config: None when *path* is not one, else a summary line.

    A monitor config is a YAML mapping with a top-level ``rules`` key; it is
    checked in full (errors name the file and the key).
    """
    yaml = import_yaml()
    p = Path(path)
    try:
        data = yaml.load(p.read_text(encoding="utf-8"), Loader=_strict_loader(yaml))
    except (OSError, UnicodeDecodeError, yaml.YAMLError):
        return None  # not readable as YAML: the run-config check reports it
    if not isinstance(data, dict) or "rules" not in data:
        return None
    settings = load_monitor_config(p)
    names = ", ".join(r.label for r in settings["rules"])
    return f"ok: {path} (monitor config: {len(settings['rules'])} rules: {names})"


def _read_log(log: Any) -> pd.DataFrame:
    if isinstance(log, pd.DataFrame):
        return log
    p = Path(log)
    if p.is_dir():
        raise ValueError(f"log {str(p)!r} is a folder, not a parquet or CSV file of impressions")
    if not p.is_file():
        raise FileNotFoundError(f"log file not found: {str(log)!r}")
    try:
        if p.suffix.lower() in (".parquet", ".pq"):
            frame = pd.read_parquet(p)
        else:
            frame = pd.read_csv(p)
    except (ValueError, OSError) as exc:  # pandas' EmptyDataError and parser errors too
        first = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        raise ValueError(
            f"log {str(p)!r}: cannot be read as a table of impressions: {first}"
        ) from exc
    if len(frame) == 0:
        raise ValueError(f"log {str(p)!r} has no rows (columns: {list(map(str, frame.columns))!r})"
                         "; nothing to monitor")
    return frame


def monitor_log(
    log: str | os.PathLike[str] | pd.DataFrame,
    config: str | os.PathLike[str] | dict[str, Any] | None = None,
    *,
    metric: str | None = None,
    window: str | int | None = None,
    min: float | None = None,
    max: float | None = None,
    segment_column: str | None = None,
    min_queries: int = 1,
    out: str | os.PathLike[str] | None = None,
    state: str | os.PathLike[str] | None = None,
    sort: bool | None = None,
    time_unit: str | None = None,
) -> MonitorResult:
    """Check a log of impressions against health rules.

    Parameters
    ----------
    log : path-like or pandas.DataFrame
        Parquet (``.parquet``/``.pq``) or CSV file, or a frame.
    config : path-like or dict, optional
        Monitor YAML (or its parsed content).  Without it, the quick form
        ``metric``/``window``/``min``/``max`` makes one rule.
    metric, window, min, max : optional
        Quick form: ``metric="ndcg@10", window="1D", min=0.72``.
    segment_column : str, optional
        Quick form: also check every value of this column.
    min_queries : int, default=1
        Quick form: fewer queries in a window -> ``"not enough data"``.
    out : path-like, optional
        Folder for ``values.csv``, ``alerts.csv``, ``alerts.json`` and one PNG per
        metric, written as one set: an ``INCOMPLETE`` marker while writing, a
        ``manifest.json`` when complete (:func:`ltr.check_file_set`).
    state : path-like, optional
        State file for incremental use (created when missing).  It records the
        full rules; a state computed under other rules is refused, naming the key.
    sort : bool, optional
        Sort the log by timestamp (overrides the config's ``sort``).
    time_unit : {'s', 'ms', 'us', 'ns'}, optional
        Unit of epoch timestamps (overrides the config's ``time_unit``).

    Returns
    -------
    MonitorResult
        ``result.alerted`` says whether any alert fired.
    """
    quick = any(v is not None for v in (metric, window, min, max))
    if config is not None and quick:
        raise ValueError("give a config or metric/window/min/max, not both")
    if config is None:
        if metric is None or window is None or (min is None and max is None):
            raise ValueError("without a config, give metric, window and min and/or max")
        rule = {"metric": metric, "window": window, "min": min, "max": max,
                "by": segment_column, "min_queries": min_queries}
        settings = parse_monitor_config({"rules": [rule]})
    elif isinstance(config, dict):
        settings = parse_monitor_config(config)
    else:
        settings = load_monitor_config(config)
    if sort is not None:
        settings["sort"] = check_sort(sort)
    if time_unit is not None:
        settings["time_unit"] = check_time_unit(time_unit, "time_unit (--time-unit)")
    if out is not None and Path(out).exists() and not Path(out).is_dir():
        raise ValueError(f"out: {str(out)!r} is a file; give a folder for the monitor's files")
    monitor = Monitor(settings["rules"], columns=settings["columns"], empty=settings["empty"],
                      sort=settings["sort"], time_unit=settings["time_unit"])
    saved = None
    if state is not None and Path(state).exists():
        saved = read_state_file(state)
        monitor.load_state(saved, include_buffer=False, source=f"state file {str(state)!r}")
    frame = _read_log(log)
    done = 0
    if saved is not None:
        done = _rows_done(saved, state)
        if done > len(frame):
            raise ValueError(f"the log has {len(frame)} rows but the state {str(state)!r} "
                             f"already consumed {done}: the log is not the same append-only "
                             "file; start a new state file")
        monitor.rows_seen = done
        monitor._last_ts = None  # the re-read rows start at the open window
    if settings["sort"] and len(frame):
        ts_col = settings["columns"]["timestamp"]
        if ts_col in frame.columns:
            ts = monitor.timestamps(frame[ts_col].reset_index(drop=True))
            frame = frame.iloc[np.argsort(ts.to_numpy(), kind="stable")]
    alerts = monitor.update(frame.iloc[done:], final=state is None, row_offset=done)
    result = MonitorResult(values=monitor.values, alerts=alerts,
                           n_windows_computed=monitor.n_windows_computed,
                           empty="" if monitor.empty_queries is None
                           else monitor.empty_queries.describe())
    if state is not None:
        st = monitor.state_dict(include_buffer=False)
        st["log_rows_done"] = monitor.rows_seen - st["buffer_rows"]
        write_atomic(state, json.dumps(st, indent=1) + "\n")
    if out is not None:
        result.files = _write(result, Path(out))
    return result


def _rows_done(saved: dict[str, Any], state: Any) -> int:
    done = saved.get("log_rows_done", 0)
    if isinstance(done, bool) or not isinstance(done, int) or done < 0:
        raise ValueError(f"state file {str(state)!r}: log_rows_done must be a count of rows, got "
                         f"{done!r}; start a new state file")
    return done


def _write(result: MonitorResult, out: Path) -> dict[str, Path]:
    content: dict[str, str | bytes] = {
        "values.csv": result.values.to_csv(index=False),
        "alerts.csv": result.alerts[list(ALERT_COLUMNS)].to_csv(index=False),
        "alerts.json": json.dumps(
            to_jsonable(result.alerts.to_dict(orient="records")), indent=1) + "\n",
    }
    keys = {"values.csv": "values", "alerts.csv": "alerts", "alerts.json": "alerts_json"}
    Figure = import_matplotlib_figure().Figure  # object API: no pyplot state
    v = result.values
    for metric in pd.unique(v["metric"]) if len(v) else []:
        fig = Figure(figsize=(8.0, 3.6))
        ax = fig.add_subplot(1, 1, 1)
        part = v[v["metric"] == metric]
        for (rule, segment), g in part.groupby(["rule", "segment"], sort=True):
            x = pd.to_datetime(g["window_start"], utc=True)
            label = f"{rule} [{segment}]" if segment else str(rule)
            line = ax.plot(x, g["value"], marker="o", markersize=3, label=label)[0]
            for key in ("min", "max"):
                th = g[key].dropna()
                if len(th):
                    ax.axhline(float(th.iloc[0]), color=line.get_color(), linestyle="--",
                               linewidth=0.8)
            hit = result.alerts[(result.alerts["rule"] == rule)
                                & (result.alerts["segment"] == segment)
                                & (result.alerts["metric"] == metric)]
            if len(hit):
                merged = g.merge(hit[["window_start"]], on="window_start")
                ax.scatter(pd.to_datetime(merged["window_start"], utc=True), merged["value"],
                           marker="x", color="#C44E52", s=50, zorder=4)
        ax.set_ylabel(str(metric))
        ax.set_title(f"{metric} per window (dashed: thresholds, x: alerts)", fontsize=10)
        ax.legend(fontsize=7)
        fig.autofmt_xdate()
        fig.tight_layout()
        name = re.sub(r"[^A-Za-z0-9_.-]+", "_", str(metric)) + ".png"
        content[name] = png_bytes(fig, dpi=100)
        keys[name] = f"plot:{metric}"
    written = write_file_set(out, content, producer="ltr monitor")
    return {keys[name]: path for name, path in written.items()}

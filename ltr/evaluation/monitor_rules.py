"""Monitor rules: metric, window, bounds, filters; the log's columns; the metric registry.

The rule half of :mod:`ltr.evaluation.monitoring`: :class:`Rule` and its checks,
:func:`parse_monitor_config` (a monitor YAML as data), the default log columns
and :data:`METRICS`, the per-query functions a rule can watch (every metric of
the one registry, :mod:`ltr.metrics.names`, plus what :func:`register_metric`
adds).
"""

import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from ltr._io import to_jsonable
from ltr.evaluation.timestamps import check_time_unit
from ltr.metrics.names import (
    MONITOR_METRICS,
    MetricName,
    metric_function,
    metric_info,
    parse_metric_name,
)

__all__ = [
    "ALERT_COLUMNS",
    "CONFIG_KEYS",
    "DEFAULT_COLUMNS",
    "METRICS",
    "VALUE_COLUMNS",
    "MetricFn",
    "Rule",
    "check_sort",
    "parse_monitor_config",
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
    """Return *sort* if it is a bool (the ``sort`` key / ``--sort``), else raise."""
    if not isinstance(sort, bool):
        raise _fail("sort", f"must be true or false, got {sort!r}")
    return sort

"""Bad input to ltr.Monitor and ``ltr monitor``: configs, logs, state files, options.

Table-driven: every case asserts the exception type (or the exit status), a message
fragment naming the key, column and row, or file, and the bad value, and that nothing
was written (no state file, no output folder).  The behaviour the issue found wrong
(epoch milliseconds, daylight-saving offsets, windows without data, a state file of
other rules, unsorted logs in the quick form, killed multi-file writes) is checked
against independent references at the end.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any, NamedTuple

import numpy as np
import pandas as pd
import pytest
import yaml

from ltr.cli import main
from ltr.evaluation.monitoring import Monitor, parse_monitor_config
from ltr.metrics import ndcg
from ltr.runs.errors import ConfigError
from ltr.runs.monitor_cmd import load_monitor_config, monitor_log

RULE = {"name": "r", "metric": "ndcg@10", "window": "1h", "min": 0.5}
T0 = pd.Timestamp("2024-05-01T00:00:00Z")


def make_log(hours=(0, 1, 2), per_hour=3, docs=3, bad=()) -> pd.DataFrame:
    """Impressions at the given hours after T0 (ISO text, UTC); ranking reversed in *bad*."""
    rows = []
    for h in hours:
        for q in range(per_hour):
            ts = T0 + pd.Timedelta(hours=h, minutes=10 * q)
            for d in range(docs):
                score = float(d if h in bad else docs - d)
                rows.append((ts.strftime("%Y-%m-%dT%H:%M:%SZ"), f"q{h}_{q}", d, score,
                             int(d == 0), "head" if q % 2 else "tail"))
    return pd.DataFrame(rows, columns=["timestamp", "qid", "doc_id", "score", "label",
                                       "segment"])


def _ms(log: pd.DataFrame) -> pd.DataFrame:
    since = pd.to_datetime(log["timestamp"], utc=True) - pd.Timestamp(0, tz="UTC")
    return log.assign(timestamp=since // pd.Timedelta(milliseconds=1))


def _cfg(**top: Any) -> dict[str, Any]:
    return {"rules": [dict(RULE)], **top}


def _rule(**kw: Any) -> dict[str, Any]:
    return {"rules": [dict(RULE, **kw)]}


# --------------------------------------------------------------------------- configs

CONFIG_CASES = [
    ("time-unit-unknown", _cfg(time_unit="sec"),
     r"time_unit: must be one of \['s', 'ms', 'us', 'ns'\].*got 'sec'"),
    ("time-unit-number", _cfg(time_unit=1000), r"time_unit: must be one of .*got 1000"),
    ("alert-no-data-text", _rule(alert_no_data="yes"),
     r"rules\[0\]\.alert_no_data: must be true or false, got 'yes'"),
    ("alert-no-data-count-window", _rule(window=50, alert_no_data=True),
     r"rules\[0\]\.alert_no_data: needs a time window; a window of 50 queries"),
    ("unknown-top-key", _cfg(timezone="UTC"),
     r"timezone: unknown key; expected one of \['rules', .*'time_unit'\]"),
    ("rules-not-a-list", {"rules": {"a": 1}}, r"rules: must be a non-empty list of rules"),
    ("rule-not-a-mapping", {"rules": ["ndcg@10"]},
     r"rules\[0\]: a rule must be a mapping, got 'ndcg@10'"),
    ("metric-missing", {"rules": [{"window": "1h", "min": 0.5}]}, r"rules\[0\]\.metric: is required"),
    ("metric-unknown", _rule(metric="auc@10"), r"rules\[0\]\.metric: .*unknown metric 'auc'"),
    ("metric-k-huge", _rule(metric="ndcg@99999999999999999999"),
     r"rules\[0\]\.metric: .*K must be <= 9223372036854775807"),
    ("min-nan", _rule(min=float("nan")), r"rules\[0\]\.min: must be a finite number, got nan"),
    ("max-text", _rule(max="high"), r"rules\[0\]\.max: must be a finite number, got 'high'"),
    ("no-bounds", _rule(min=None), r"rules\[0\]: give min and/or max"),
    ("window-calendar", _rule(window="1M"), r"rules\[0\]\.window: '1M' is not a fixed time"),
    ("window-zero-count", _rule(window=0), (r"rules\[0\]\.window: a query count must be >= 1, "
                                           r"got 0")),
    ("window-bool", _rule(window=True), r"rules\[0\]\.window: must be an offset .*got True"),
    ("window-negative", _rule(window="-1h"), r"rules\[0\]\.window: must be positive, got '-1h'"),
    ("min-queries-zero", _rule(min_queries=0), (r"rules\[0\]\.min_queries: must be an integer "
                                               r">= 1, got 0")),
    ("filter-two-pairs", _rule(filter={"a": 1, "b": 2}), (r"rules\[0\]\.filter: must be one "
                                                         r"\{column: value\} pair")),
    ("by-not-a-name", _rule(by=3), r"rules\[0\]\.by: must be a column name, got 3"),
    ("business-no-column", _rule(business={"consecutive": 3}),
     r"rules\[0\]\.business: must be \{column: NAME, consecutive: N\}"),
    ("business-consecutive-zero", _rule(business={"column": "ctr", "consecutive": 0}),
     r"rules\[0\]\.business\.consecutive: must be an integer >= 1, got 0"),
    ("business-extra-key", _rule(business={"column": "ctr", "window": 2}),
     r"rules\[0\]\.business\.window: unknown key"),
    ("drift-not-mapping", _rule(drift=0.01), r"rules\[0\]\.drift: must be \{p_value: P.*got 0\.01"),
    ("drift-reference", _rule(drift={"reference": "last"}),
     r"rules\[0\]\.drift\.reference: must be 'first' or 'previous', got 'last'"),
    ("drift-p-one", _rule(drift={"p_value": 1}), (r"rules\[0\]\.drift\.p_value: must be in "
                                                 r"\(0, 1\), got 1")),
    ("name-not-text", _rule(name=7), r"rules\[0\]\.name: must be a string, got 7"),
    ("unknown-rule-key", _rule(windw="1h"), r"rules\[0\]\.windw: unknown key"),
    ("columns-not-mapping", _cfg(columns=["ts"]), r"columns: must be a mapping of renames"),
    ("columns-unknown-key", _cfg(columns={"time": "ts"}), r"columns\.time: unknown key"),
    ("columns-not-a-name", _cfg(columns={"qid": 3}), (r"columns\.qid: must be a column name, "
                                                     r"got 3")),
    ("empty-out-of-range", _cfg(empty=2), r"empty: must be 'skip' or a number in \[0, 1\], got 2"),
    ("sort-text", _cfg(sort="yes"), r"sort: must be true or false, got 'yes'"),
]


@pytest.mark.parametrize("case", CONFIG_CASES, ids=[c[0] for c in CONFIG_CASES])
def test_monitor_config_errors_name_the_key_and_value(case, tmp_path):
    _, config, match = case
    with pytest.raises(ValueError, match=match):
        parse_monitor_config(config)
    # the same config as a file: the command refuses it naming the file, before writing
    path = tmp_path / "m.yaml"
    path.write_text(yaml.safe_dump(config))
    with pytest.raises(ConfigError, match=r"m\.yaml: " + match):
        load_monitor_config(path)
    log = tmp_path / "log.csv"
    make_log().to_csv(log, index=False)
    before = sorted(p.name for p in tmp_path.iterdir())
    rc = main(["monitor", str(log), "-c", str(path), "--out", str(tmp_path / "out"),
               "--state", str(tmp_path / "state.json")])
    assert rc == 1 and sorted(p.name for p in tmp_path.iterdir()) == before


# --------------------------------------------------------------------------- logs


class Case(NamedTuple):
    call: Callable[[Path], Any]
    exc: type[BaseException]
    match: str


def _update(log: pd.DataFrame, rules: Any = None, **kw: Any) -> Any:
    return Monitor(rules or [RULE], **kw).update(log, final=True)


def _set(log: pd.DataFrame, column: str, row: int, value: Any) -> pd.DataFrame:
    out = log.copy()
    out[column] = out[column].astype(object)
    out.loc[row, column] = value
    return out


def _second_batch_earlier(d: Path) -> Any:
    m = Monitor([RULE])
    m.update(make_log(hours=(2,)))
    return m.update(make_log(hours=(0,)))


LOG_CASES: dict[str, Case] = {
    "ms-read-as-seconds": Case(lambda d: _update(_ms(make_log()), time_unit="s"), ValueError,
                               r"column 'timestamp', row 0: .*1714521600000.* as epoch seconds "
                               r"\(time_unit 's'\) is not a date between 1980 and 2100"),
    "seconds-read-as-ns": Case(lambda d: _update(_ms(make_log()).assign(
        timestamp=lambda f: f["timestamp"] // 1000), time_unit="ns"), ValueError,
        r"1714521600.* as epoch nanoseconds \(time_unit 'ns'\) is not a date"),
    "epochs-without-a-unit": Case(lambda d: _update(make_log().assign(
        timestamp=np.arange(27))), ValueError,
        r"column 'timestamp': epoch timestamps from 0 to 26 do not tell their unit.*set "
        r"time_unit \(ltr monitor --time-unit\)"),
    "unit-given-for-text": Case(lambda d: _update(make_log(), time_unit="ms"), ValueError,
                                r"time_unit 'ms' applies to epoch numbers, but column "
                                r"'timestamp' holds .*'2024-05-01T00:00:00Z'"),
    "unit-in-constructor": Case(lambda d: Monitor([RULE], time_unit="h"), ValueError,
                                r"time_unit: must be one of .*got 'h'"),
    "offset-and-naive-mixed": Case(lambda d: _update(_set(make_log(), "timestamp", 2,
                                                          "2024-05-01T00:00:30")),
                                   ValueError, r"row 0 is '2024-05-01T00:00:00Z' \(with a UTC "
                                   r"offset\) but row 2 is '2024-05-01T00:00:30'"),
    "unparsable-timestamp": Case(lambda d: _update(_set(make_log(), "timestamp", 4, "yesterday")),
                                 ValueError, r"column 'timestamp', row 4: cannot parse 'yesterday'"),
    "missing-epoch": Case(lambda d: _update(_ms(make_log()).astype({"timestamp": float}).pipe(
        _set, "timestamp", 1, np.nan).astype({"timestamp": float}), time_unit="ms"), ValueError,
        r"column 'timestamp', row 1: timestamp is missing"),
    "missing-qid": Case(lambda d: _update(_set(make_log(), "qid", 2, None)), ValueError,
                        r"column 'qid', row 2: value is missing"),
    "nan-score": Case(lambda d: _update(_set(make_log(), "score", 3, np.nan)), ValueError,
                      r"column 'score', row 3: nan is not a finite number"),
    "text-label": Case(lambda d: _update(_set(make_log(), "label", 5, "x")), ValueError,
                       r"column 'label', row 5: 'x' is not a finite number"),
    "infinite-score": Case(lambda d: _update(_set(make_log(), "score", 0, np.inf)), ValueError,
                           r"column 'score', row 0: inf is not a finite number"),
    "no-score-column": Case(lambda d: _update(make_log().drop(columns="score")), ValueError,
                            r"the log has no column 'score' \(columns\.score in the config\) "
                            r"\(or 'rank', columns\.rank\)"),
    "renamed-column-absent": Case(lambda d: _update(make_log(), columns={"qid": "query"}),
                                  ValueError, r"no column 'query' \(columns\.qid"),
    "rule-needs-column": Case(lambda d: _update(make_log().drop(columns="segment"),
                                                [dict(RULE, by="segment")]),
                              ValueError, r"rule 'r' needs column 'segment', which the log lacks"),
    "filter-column-absent": Case(lambda d: _update(make_log(), [dict(RULE, filter={"mkt": "de"})]),
                                 ValueError, r"rule 'r' needs column 'mkt'"),
    "unsorted-without-sort": Case(lambda d: _update(make_log().iloc[::-1].reset_index(drop=True)),
                                  ValueError, r"column 'timestamp', row 3: timestamp "
                                  r"2024-05-01T02:10:00Z is earlier .*set sort: true "
                                  r"\(ltr monitor --sort\)"),
    "batch-before-previous": Case(_second_batch_earlier, ValueError,
                                  r"this batch starts at 2024-05-01T00:00:00Z, before the previous "
                                  r"batch ended \(2024-05-01T02:20:00Z\)"),
    "batch-not-a-frame": Case(lambda d: Monitor([RULE]).update([1, 2]), TypeError,
                              r"batch must be a pandas DataFrame, got list"),
    "duplicate-rule-names": Case(lambda d: Monitor([RULE, dict(RULE, window="1D")]), ValueError,
                                 r"rules: two rules are named 'r'"),
    "rules-a-mapping": Case(lambda d: Monitor(RULE), ValueError,
                            r"rules must be a non-empty list of rules"),
    # files, through monitor_log
    "log-header-only": Case(lambda d: monitor_log(d / "header.csv", _cfg(), out=d / "out"),
                            ValueError, r"log '.*header\.csv' has no rows \(columns: "
                            r"\['timestamp', 'qid'"),
    "log-zero-bytes": Case(lambda d: monitor_log(d / "zero.csv", _cfg(), out=d / "out"),
                           ValueError, r"log '.*zero\.csv': cannot be read as a table of "
                           r"impressions: No columns to parse"),
    "log-is-a-folder": Case(lambda d: monitor_log(d / "sub", _cfg(), out=d / "out"), ValueError,
                            r"log '.*sub' is a folder, not a parquet or CSV file"),
    "log-missing": Case(lambda d: monitor_log(d / "nope.csv", _cfg(), out=d / "out"),
                        FileNotFoundError, r"log file not found: '.*nope\.csv'"),
    "out-is-a-file": Case(lambda d: monitor_log(d / "log.csv", _cfg(), out=d / "log.csv"),
                          ValueError, r"out: '.*log\.csv' is a file; give a folder"),
    "config-and-quick": Case(lambda d: monitor_log(d / "log.csv", _cfg(), metric="ndcg@10"),
                             ValueError, r"give a config or metric/window/min/max, not both"),
    "quick-without-bound": Case(lambda d: monitor_log(d / "log.csv", metric="ndcg@10",
                                                      window="1h"),
                                ValueError, r"without a config, give metric, window and min"),
    "time-unit-option": Case(lambda d: monitor_log(d / "log.csv", _cfg(), time_unit="minutes"),
                             ValueError, r"time_unit \(--time-unit\): must be one of .*"
                             r"got 'minutes'"),
    "sort-option": Case(lambda d: monitor_log(d / "log.csv", _cfg(), sort="yes"), ValueError,
                        r"sort: must be true or false, got 'yes'"),
    "config-file-missing": Case(lambda d: monitor_log(d / "log.csv", d / "none.yaml"),
                                ConfigError, r"monitor config not found: '.*none\.yaml'"),
    "config-bad-yaml": Case(lambda d: monitor_log(d / "log.csv", d / "bad.yaml"), ConfigError,
                            r"bad\.yaml: not valid YAML"),
    "config-a-list": Case(lambda d: monitor_log(d / "log.csv", d / "list.yaml"), ConfigError,
                          r"list\.yaml: monitor config must be a mapping, got list"),
}

# --------------------------------------------------------------------------- state files


def _state_1h(d: Path) -> Path:
    """A state file written by the rule {name: r, window: 1h} over the first two hours."""
    path = d / "state.json"
    monitor_log(d / "early.csv", _cfg(), state=path)
    return path


def _with_state(d: Path, text: str | None = None, **change: Any) -> Path:
    path = _state_1h(d)
    if text is not None:
        path.write_text(text)
    elif change:
        data = json.loads(path.read_text())
        data.update(change)
        path.write_text(json.dumps(data))
    return path


ST = "state.json"


def _log(d: Path, config: Any = None, log: str = "log.csv") -> Any:
    return monitor_log(d / log, _cfg() if config is None else config, state=d / ST,
                       out=d / "out")


# (setup, call, exception, message): the setup writes the state before the snapshot
STATE_CASES: dict[str, tuple[Callable[[Path], Any], Case]] = {
    "state-truncated": (lambda d: _with_state(d, '{"version": 2, "rul'), Case(
        _log, ValueError, r"state file '.*state\.json', line 1: not valid JSON .*truncated")),
    "state-a-list": (lambda d: _with_state(d, "[1, 2]"), Case(
        _log, ValueError, r"state file '.*state\.json' must hold a JSON object .*got list "
        r"\[1, 2\]")),
    "state-not-utf8": (lambda d: (d / ST).write_bytes('{"é": 1}'.encode("latin-1")), Case(
        _log, ValueError, r"state file '.*state\.json' is not UTF-8 text")),
    "state-a-folder": (lambda d: (d / ST).mkdir(), Case(
        _log, ValueError, r"state file '.*state\.json' is a folder")),
    "state-version-1": (lambda d: _with_state(d, version=1, rules=["r"]), Case(
        _log, ValueError, r"state file '.*state\.json': state version 1 is not 2 .*start a new "
        r"state file")),
    "state-window-differs": (_state_1h, Case(
        lambda d: _log(d, _rule(window="1D")), ValueError,
        r"state file '.*state\.json': rules\[0\]\.window differs: the state was computed with "
        r"'1h', the rules now say '1D'")),
    "state-min-differs": (_state_1h, Case(lambda d: _log(d, _rule(min=0.9)), ValueError,
                                          r"rules\[0\]\.min differs: .*0\.5.* 0\.9")),
    "state-metric-differs": (_state_1h, Case(
        lambda d: _log(d, _rule(metric="ndcg@5")), ValueError,
        r"rules\[0\]\.metric differs: .*'ndcg@10'.*'ndcg@5'")),
    "state-no-data-option-differs": (_state_1h, Case(
        lambda d: _log(d, _rule(alert_no_data=True)), ValueError,
        r"rules\[0\]\.alert_no_data differs: the state was computed with False")),
    "state-filter-differs": (_state_1h, Case(
        lambda d: _log(d, _rule(filter={"segment": "head"})), ValueError,
        r"rules\[0\]\.filter differs: the state was computed with None, the rules now say "
        r"\{'segment': 'head'\}")),
    "state-rule-count-differs": (_state_1h, Case(
        lambda d: _log(d, {"rules": [dict(RULE), dict(RULE, name="s")]}), ValueError,
        r"computed under 1 rules, but 2 are given")),
    "state-empty-differs": (_state_1h, Case(
        lambda d: _log(d, _cfg(empty=0.0)), ValueError,
        r"state file .*: empty differs: the state was computed with 'skip', now 0\.0")),
    "state-columns-differ": (_state_1h, Case(
        lambda d: _log(d, _cfg(columns={"label": "click"}), log="clicks.csv"), ValueError,
        r"columns differs: the state was computed with \{.*'label': 'label'.*\}, now "
        r"\{.*'label': 'click'")),
    "state-time-unit-differs": (lambda d: _with_state(d, settings={
        "empty": "skip", "time_unit": "s", "columns": parse_monitor_config(_cfg())["columns"]}),
        Case(
        lambda d: _log(d, _cfg(time_unit="ms")), ValueError,
        r"time_unit differs: the state was computed with 's', now 'ms'")),
    "state-rows-beyond-log": (lambda d: _with_state(d, log_rows_done=10**6), Case(
        lambda d: _log(d, log="early.csv"), ValueError,
        r"the log has 18 rows but the state '.*state\.json' already consumed 1000000")),
    "state-rows-negative": (lambda d: _with_state(d, log_rows_done=-3), Case(
        _log, ValueError, r"log_rows_done must be a count of rows, got -3")),
    "state-rules-missing": (lambda d: _with_state(d, '{"version": 2}'), Case(
        _log, ValueError, r"key 'rules' is missing")),
    "from-state-truncated": (lambda d: _with_state(d, "{"), Case(
        lambda d: Monitor.from_state(d / ST, [RULE]), ValueError,
        r"state file '.*state\.json', line 1: not valid JSON")),
    "load-state-other-rules": (lambda d: None, Case(
        lambda d: Monitor([dict(RULE, window="2h")]).load_state(Monitor([RULE]).state_dict()),
        ValueError, r"the monitor state: rules\[0\]\.window differs: .*'1h'.*'2h'")),
}


def _prepare(d: Path) -> None:
    make_log().to_csv(d / "log.csv", index=False)
    make_log(hours=(0, 1)).to_csv(d / "early.csv", index=False)
    make_log().iloc[:0].to_csv(d / "header.csv", index=False)
    (d / "zero.csv").write_text("")
    (d / "sub").mkdir()
    (d / "bad.yaml").write_text("rules: [\n")
    (d / "list.yaml").write_text("- 1\n- 2\n")
    make_log().rename(columns={"label": "click"}).to_csv(d / "clicks.csv", index=False)
    (d / "latin.json").write_bytes('{"é": 1}'.encode("latin-1"))


def _snapshot(d: Path) -> dict[str, bytes]:
    return {str(p.relative_to(d)): p.read_bytes() for p in sorted(d.rglob("*")) if p.is_file()}


ALL_CASES = {**{k: ((lambda d: None), c) for k, c in LOG_CASES.items()}, **STATE_CASES}


@pytest.mark.parametrize("name", sorted(ALL_CASES))
def test_bad_logs_and_states_are_refused_before_anything_is_written(name, tmp_path):
    setup, case = ALL_CASES[name]
    _prepare(tmp_path)
    setup(tmp_path)
    before = _snapshot(tmp_path)
    with pytest.raises(case.exc, match=case.match):
        case.call(tmp_path)
    assert _snapshot(tmp_path) == before  # no output folder, no state file written or changed
    assert not (tmp_path / "out").exists()


# --------------------------------------------------------------------------- the command


CLI_CASES = [
    # (id, argv after "monitor" ({d}: the folder), exit status, message fragment)
    ("time-unit-choice", ["{d}/log.csv", "--metric", "ndcg@10", "--window", "1h", "--min", "0.5",
                          "--time-unit", "minutes"], 2, "argument --time-unit: invalid choice"),
    ("window-zero", ["{d}/log.csv", "--metric", "ndcg@10", "--window", "0", "--min", "0.5"], 1,
     "rules[0].window: a query count must be >= 1, got 0"),
    ("metric-unknown", ["{d}/log.csv", "--metric", "auc@3", "--window", "1h", "--min", "0.5"], 1,
     "rules[0].metric: metric name 'auc@3': unknown metric 'auc'"),
    ("no-rule", ["{d}/log.csv"], 2, "monitor needs -c CONFIG or a quick rule"),
    ("quick-unsorted", ["{d}/shuffled.csv", "--metric", "ndcg@10", "--window", "1h", "--min",
                        "0.5"], 1, "sort the log, or set sort: true (ltr monitor --sort)"),
    ("epoch-ms-as-seconds", ["{d}/ms.csv", "--metric", "ndcg@10", "--window", "1h", "--min",
                             "0.5", "--time-unit", "s"], 1,
     "as epoch seconds (time_unit 's') is not a date between 1980 and 2100"),
    ("header-only", ["{d}/header.csv", "--metric", "ndcg@10", "--window", "1h", "--min", "0.5"],
     1, "has no rows"),
    ("truncated-state", ["{d}/log.csv", "--metric", "ndcg@10", "--window", "1h", "--min", "0.5",
                         "--state", "{d}/cut.json"], 1, "cut.json', line 1: not valid JSON"),
]


@pytest.mark.parametrize("case", CLI_CASES, ids=[c[0] for c in CLI_CASES])
def test_monitor_command_refuses_bad_input(case, tmp_path, capsys):
    _, argv, status, fragment = case
    _prepare(tmp_path)
    make_log().sample(frac=1.0, random_state=0).to_csv(tmp_path / "shuffled.csv", index=False)
    _ms(make_log()).to_csv(tmp_path / "ms.csv", index=False)
    (tmp_path / "cut.json").write_text('{"version": 2, "rules": [')
    before = _snapshot(tmp_path)
    d = str(tmp_path)
    rc = main(["monitor", *[a.format(d=d) for a in argv], "--out", f"{d}/out"])
    text = "".join(capsys.readouterr())
    assert rc == status, text
    assert fragment.format(d=d) in " ".join(text.split()), text
    assert "Traceback" not in text and "IndexError" not in text
    assert _snapshot(tmp_path) == before and not (tmp_path / "out").exists()


def test_validate_recognises_a_monitor_config(tmp_path, capsys):
    shipped = Path(__file__).parents[1] / "configs" / "monitor.yaml"
    assert main(["validate", str(shipped)]) == 0
    out = capsys.readouterr().out
    assert "monitor config: 3 rules: ndcg10_realtime, ndcg5_hourly, longtail_daily" in out
    bad = tmp_path / "m.yaml"
    bad.write_text(yaml.safe_dump(_rule(window="1M")))
    assert main(["validate", str(bad)]) == 1
    err = capsys.readouterr().err
    assert "m.yaml: rules[0].window: '1M' is not a fixed time offset" in err, err
    assert "unknown key" not in err
    assert main(["validate", str(shipped), "--set", "seed=1"]) == 2
    assert "is a monitor config" in capsys.readouterr().err
    assert main(["train", str(shipped), "--out", str(tmp_path / "run")]) == 1
    err = capsys.readouterr().err
    assert "this is a monitor config (it has 'rules'), not a run config" in err, err
    assert not (tmp_path / "run").exists()


# --------------------------------------------------------------------------- behaviour


def _reference_windows(log: pd.DataFrame) -> pd.Series:
    """nDCG@10 per UTC hour computed directly with ltr.metrics.ndcg (the reference)."""
    ts = pd.to_datetime(log["timestamp"], utc=True, format="ISO8601")
    hour = ts.dt.floor("1h").dt.strftime("%Y-%m-%dT%H:%M:%SZ")
    out = {}
    for h, part in log.groupby(hour, sort=True):
        codes = pd.factorize(part["qid"])[0]
        out[h] = float(ndcg(part["label"], part["score"], qid=codes, k=10))
    return pd.Series(out)


def test_epoch_milliseconds_are_inferred_stated_and_windowed_like_iso_text():
    log = make_log(hours=(0, 1, 2), bad=(1,))
    rule = dict(RULE, min=0.6)  # the reversed hour scores 0.5
    ref = Monitor([rule]).update(log, final=True)
    ref_values = Monitor([rule])
    ref_values.update(log, final=True)
    m = Monitor([rule])
    with pytest.warns(UserWarning, match=r"epoch timestamps read as milliseconds \(inferred "
                                         r"from their magnitude.*set time_unit: ms"):
        alerts = m.update(_ms(log), final=True)
    assert m.time_unit == "ms"
    pd.testing.assert_frame_equal(m.values, ref_values.values)
    pd.testing.assert_frame_equal(alerts, ref)
    expected = _reference_windows(log)
    assert m.values["window_start"].tolist() == expected.index.tolist()
    np.testing.assert_allclose(m.values["value"], expected.to_numpy(), rtol=1e-12)
    assert alerts["window_start"].tolist() == ["2024-05-01T01:00:00Z"]
    explicit = Monitor([rule], time_unit="ms")
    explicit.update(_ms(log), final=True)  # no warning with an explicit unit (filterwarnings)
    pd.testing.assert_frame_equal(explicit.values, ref_values.values)


def test_daylight_saving_offsets_are_one_zone_converted_to_utc():
    log = make_log(hours=(0, 1, 2))
    utc = pd.to_datetime(log["timestamp"], utc=True)
    # the same instants written in Europe/Berlin local time: +02:00 (summer) ...
    local = utc.dt.tz_convert("Europe/Berlin").dt.strftime("%Y-%m-%dT%H:%M:%S%z")
    # ... and, for the first hour, +01:00 as if before the switch: different offsets, one zone
    shifted = utc.dt.tz_convert("Etc/GMT-1").dt.strftime("%Y-%m-%dT%H:%M:%S%z")
    mixed = local.where(utc >= T0 + pd.Timedelta(hours=1), shifted)
    assert mixed.str[-5:].nunique() == 2
    a, b = Monitor([RULE]), Monitor([RULE])
    a.update(log, final=True)
    b.update(log.assign(timestamp=mixed), final=True)
    pd.testing.assert_frame_equal(a.values, b.values)


def test_windows_without_data_are_rows_marked_no_data_and_can_alert(tmp_path):
    log = make_log(hours=(0, 1, 4))
    m = Monitor([dict(RULE, alert_no_data=True)])
    alerts = m.update(log, final=True)
    v = m.values
    assert v["window_start"].tolist() == [f"2024-05-01T0{h}:00:00Z" for h in range(5)]
    assert v["status"].tolist() == ["ok", "ok", "no data", "no data", "ok"]
    assert v.loc[v["status"] == "no data", "n_queries"].tolist() == [0, 0]
    assert alerts["window_start"].tolist() == ["2024-05-01T02:00:00Z", "2024-05-01T03:00:00Z"]
    assert alerts["metric"].unique().tolist() == ["ndcg@10 no data"]
    quiet = Monitor([RULE])
    assert len(quiet.update(log, final=True)) == 0 and (quiet.values["status"] == "no data").sum() == 2
    # incremental: an outage that spans two calls is reported once, in the call that sees it
    make_log(hours=(0, 1)).to_csv(tmp_path / "log.csv", index=False)
    state = tmp_path / "state.json"
    first = monitor_log(tmp_path / "log.csv", _cfg(), state=state)
    assert "no data" not in first.values["status"].tolist()
    pd.concat([make_log(hours=(0, 1)), make_log(hours=(4,))]).to_csv(tmp_path / "log.csv",
                                                                     index=False)
    second = monitor_log(tmp_path / "log.csv", _cfg(), state=state)
    rows = second.values.set_index("window_start")["status"]
    assert rows.loc["2024-05-01T02:00:00Z"] == "no data"
    assert rows.loc["2024-05-01T03:00:00Z"] == "no data"
    assert (second.values["status"] == "no data").sum() == 2


def test_a_state_of_other_rules_is_refused_where_it_used_to_report_ok(tmp_path):
    # a fresh 1D run alerts (the day's mean is below 0.9); a 1h state must not silence it
    log = make_log(hours=(0, 1, 2, 3), bad=(3,))
    log.to_csv(tmp_path / "log.csv", index=False)
    daily = _rule(window="1D", min=0.9)
    assert monitor_log(tmp_path / "log.csv", daily).alerted
    state = tmp_path / "state.json"
    make_log(hours=(0, 1)).to_csv(tmp_path / "early.csv", index=False)
    monitor_log(tmp_path / "early.csv", _rule(min=0.9), state=state)
    saved = state.read_bytes()
    with pytest.raises(ValueError, match=r"rules\[0\]\.window differs: .*'1h'.*'1D'"):
        monitor_log(tmp_path / "log.csv", daily, state=state)
    assert state.read_bytes() == saved
    recorded = json.loads(saved)["rules"][0]
    assert recorded["window"] == "1h" and recorded["min"] == 0.9 and recorded["name"] == "r"


def test_the_quick_form_sorts_with_sort(tmp_path, capsys):
    log = make_log(hours=(0, 1, 2), bad=(2,))
    log.sample(frac=1.0, random_state=1).to_csv(tmp_path / "shuffled.csv", index=False)
    log.to_csv(tmp_path / "sorted.csv", index=False)
    quick = ["--metric", "ndcg@10", "--window", "1h", "--min", "0.6"]
    rc = main(["monitor", str(tmp_path / "shuffled.csv"), *quick, "--sort",
               "--out", str(tmp_path / "a")])
    assert rc == 3, capsys.readouterr()
    assert main(["monitor", str(tmp_path / "sorted.csv"), *quick,
                 "--out", str(tmp_path / "b")]) == 3
    a = pd.read_csv(tmp_path / "a" / "values.csv")
    b = pd.read_csv(tmp_path / "b" / "values.csv")
    pd.testing.assert_frame_equal(a, b)


def test_a_killed_monitor_write_is_visibly_incomplete(tmp_path, monkeypatch):
    from ltr import _io
    from ltr._io import check_file_set

    log = make_log()
    done = monitor_log(log, _cfg(), out=tmp_path / "out")
    assert set(check_file_set(tmp_path / "out")) == {"values.csv", "alerts.csv", "alerts.json",
                                                     "ndcg_10.png"}
    assert set(done.files) == {"values", "alerts", "alerts_json", "plot:ndcg@10"}
    real = _io.write_atomic
    calls = {"n": 0}

    def dies_on_third_file(path: Any, data: Any) -> Any:
        calls["n"] += 1
        if calls["n"] == 4:  # the marker, then two files: the kill comes mid-set
            raise KeyboardInterrupt
        return real(path, data)

    monkeypatch.setattr(_io, "write_atomic", dies_on_third_file)
    with pytest.raises(KeyboardInterrupt):
        monitor_log(make_log(hours=(5, 6)), _cfg(), out=tmp_path / "out")
    monkeypatch.setattr(_io, "write_atomic", real)
    assert (tmp_path / "out" / "INCOMPLETE").is_file()
    assert not (tmp_path / "out" / "manifest.json").exists()
    with pytest.raises(ValueError, match=r"'.*out' is incomplete: its writer was interrupted"):
        check_file_set(tmp_path / "out")
    monitor_log(make_log(hours=(5, 6)), _cfg(), out=tmp_path / "out")  # a rerun completes it
    assert "values.csv" in check_file_set(tmp_path / "out")


def test_an_empty_batch_is_no_error():
    """A stream may deliver an empty batch; only a file without rows is refused (above)."""
    empty = make_log().iloc[:0]
    fresh = Monitor([RULE])
    assert len(fresh.update(empty, final=True)) == 0 and len(fresh.values) == 0
    m = Monitor([RULE])
    m.update(make_log(hours=(0, 1)))  # hour 1 stays open (provisional)
    assert m.state_dict()["buffer_rows"] == 9
    assert len(m.update(empty)) == 0
    assert m.values[["window_start", "status"]].values.tolist() == [
        ["2024-05-01T01:00:00Z", "provisional"]]
    assert len(m.update(empty, final=True)) == 0  # closing it: a complete, healthy window
    assert m.values[["window_start", "status"]].values.tolist() == [
        ["2024-05-01T01:00:00Z", "ok"]]


def test_a_blank_segment_label_does_not_collide_with_the_whole_population():
    log = make_log(hours=(0,))
    log["segment"] = log["segment"].where(log["qid"] != "q0_0", "")  # q0_0 is 'tail' otherwise
    m = Monitor([dict(RULE, by="segment")])
    m.update(log, final=True)
    v = m.values
    assert v["segment"].tolist() == ["", "head", "tail"]
    assert v["n_queries"].tolist() == [3, 1, 1]  # q0_0 counts in the whole population only

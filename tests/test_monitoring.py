"""ltr.evaluation.monitoring and ltr.runs.monitor_cmd: planted breaches, incremental windows, bad input."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest

from ltr.evaluation.monitoring import ALERT_COLUMNS, Monitor, parse_monitor_config


def make_log(n_windows=6, per_window=30, bad=(3,), docs=5, seed=0, start="2024-03-01T00:00:00Z",
             empty_every=10):
    """Hourly windows of queries; in the windows *bad* the ranking is reversed."""
    rng = np.random.default_rng(seed)
    t0 = pd.Timestamp(start)
    rows = []
    q = 0
    for w in range(n_windows):
        for i in range(per_window):
            ts = t0 + pd.Timedelta(hours=w) + pd.Timedelta(seconds=int(i * 3600 / per_window))
            labels = rng.integers(0, 3, docs)
            if q % empty_every == 0:
                labels[:] = 0
            noise = rng.normal(0, 0.1, docs)
            scores = (-labels if w in bad else labels) + noise
            seg = "tail" if i % 3 == 0 else "head"
            ctr = 0.3 - 0.01 * w
            for d in range(docs):
                rows.append((ts, f"q{q}", d, scores[d], labels[d], seg, ctr))
            q += 1
    frame = pd.DataFrame(rows, columns=["timestamp", "qid", "doc_id", "score", "label",
                                        "segment", "ctr"])
    frame["timestamp"] = frame["timestamp"].dt.strftime("%Y-%m-%dT%H:%M:%SZ")
    return frame


RULE = {"metric": "ndcg@10", "window": "1h", "min": 0.72, "min_queries": 5}


def test_monitor_update_finds_exactly_the_planted_breach():
    log = make_log()
    m = Monitor([RULE])
    alerts = m.update(log, final=True)
    assert list(alerts.columns) == list(ALERT_COLUMNS)
    assert alerts["window_start"].tolist() == ["2024-03-01T03:00:00Z"]
    assert alerts["segment"].tolist() == [""] and alerts["threshold"].tolist() == [0.72]
    assert alerts["value"].iloc[0] < 0.72
    v = m.values
    assert len(v) == 6 and (v["n_skipped"] == 3).all() and (v["n_queries"] == 27).all()
    assert v["status"].tolist() == ["ok", "ok", "ok", "breach", "ok", "ok"]


def test_values_equal_ndcg_per_window():
    from ltr.metrics import ndcg

    log = make_log(n_windows=2, bad=())
    m = Monitor([RULE])
    m.update(log, final=True)
    first = log[log["timestamp"] < "2024-03-01T01"]
    expected = ndcg(first["label"], first["score"], qid=first["qid"], k=10, empty="skip")
    assert m.values["value"].iloc[0] == pytest.approx(float(expected))


def test_segments_filter_and_not_enough_data():
    log = make_log(bad=())
    # break only the tail segment in window 2
    hit = (log["timestamp"].str.startswith("2024-03-01T02")) & (log["segment"] == "tail")
    log.loc[hit, "score"] = -log.loc[hit, "label"]
    m = Monitor([dict(RULE, by="segment"),
                 dict(RULE, name="tail", filter={"segment": "tail"}, min_queries=20)])
    alerts = m.update(log, final=True)
    assert alerts[["window_start", "segment", "rule"]].values.tolist() == [
        ["2024-03-01T02:00:00Z", "tail", "ndcg@10/1h"]]
    tail = m.values[m.values["rule"] == "tail"]
    assert (tail["status"] == "not enough data").all() and (tail["segment"] == "tail").all()


def test_count_windows_and_max_threshold():
    log = make_log(n_windows=2, per_window=20, bad=())
    m = Monitor([{"metric": "ndcg@5", "window": 15, "max": 0.5}])
    alerts = m.update(log, final=True)
    assert len(m.values) == 3 and m.values["n_queries"].sum() == 36  # 15 + 15 + 10, 4 empty
    assert len(alerts) == 3 and (alerts["threshold"] == 0.5).all()


def test_business_divergence_and_drift():
    log = make_log(n_windows=6, bad=(0, 1))  # metric rises after window 1 while ctr falls
    rules = [dict(RULE, business={"column": "ctr", "consecutive": 1},
                  drift={"p_value": 0.01, "reference": "previous"})]
    alerts = Monitor(rules).update(log, final=True)
    kinds = alerts.groupby("metric")["window_start"].apply(list).to_dict()
    assert kinds["ndcg@10 drift (KS)"] == ["2024-03-01T02:00:00Z"]
    assert "2024-03-01T02:00:00Z" in kinds["ndcg@10 vs ctr divergence"]
    flat = Monitor(rules).update(log.assign(ctr=0.3), final=True)
    assert "ndcg@10 vs ctr divergence" not in set(flat["metric"])


def test_incremental_state_computes_only_new_windows(tmp_path):
    from ltr.runs.monitor_cmd import monitor_log

    log = make_log(n_windows=6)
    part = log[log["timestamp"] < "2024-03-01T04"]
    state = tmp_path / "state.json"
    first = monitor_log(part, metric="ndcg@10", window="1h", min=0.72, state=state)
    assert first.n_windows_computed == 4  # 3 complete + the provisional hour 3
    assert first.values["complete"].tolist() == [True, True, True, False]
    assert not first.alerted  # hour 3 is provisional: not alerted yet
    second = monitor_log(log, metric="ndcg@10", window="1h", min=0.72, state=state)
    assert second.n_windows_computed == 3  # hour 3 again, 4, provisional 5
    assert second.values["window_start"].tolist()[0] == "2024-03-01T03:00:00Z"
    assert second.alerts["window_start"].tolist() == ["2024-03-01T03:00:00Z"]
    full = monitor_log(log, metric="ndcg@10", window="1h", min=0.72)
    assert full.n_windows_computed == 6
    assert full.values["value"].iloc[3] == pytest.approx(second.values["value"].iloc[0])


def test_monitor_state_round_trips_through_json():
    log = make_log(n_windows=4)
    a = Monitor([RULE])
    a.update(log.iloc[: len(log) // 2])
    restored = Monitor([RULE]).load_state(json.loads(json.dumps(a.state_dict())))
    rest = log.iloc[len(log) // 2:]
    alerts = restored.update(rest, final=True)
    whole = Monitor([RULE])
    assert alerts.equals(whole.update(log, final=True))


def test_monitor_log_quick_form_writes_files(tmp_path):
    from ltr.runs.monitor_cmd import monitor_log

    path = tmp_path / "log.csv"
    make_log().to_csv(path, index=False)
    res = monitor_log(path, metric="ndcg@10", window="1h", min=0.72, segment_column="segment",
                      out=tmp_path / "out")
    assert res.alerted
    assert set(res.alerts["segment"]) == {"", "head", "tail"}
    for name in ("values.csv", "alerts.csv", "alerts.json", "ndcg_10.png"):
        assert (tmp_path / "out" / name).is_file()
    assert pd.read_csv(tmp_path / "out" / "alerts.csv").columns.tolist() == list(ALERT_COLUMNS)


def test_shipped_config_parses():
    from pathlib import Path

    from ltr.runs.monitor_cmd import load_monitor_config

    cfg = load_monitor_config(Path(__file__).parents[1] / "configs" / "monitor.yaml")
    assert [r.metric for r in cfg["rules"]] == ["ndcg@10", "ndcg@5", "ndcg@10"]


@pytest.mark.parametrize(
    "mutate, match",
    [
        (lambda f: f.drop(columns="score"), r"no column 'score' \(columns.score"),
        (lambda f: f.assign(label=f["label"].where(f.index != 7)), "column 'label', row 7"),
        (lambda f: f.assign(score=f["score"].where(f.index != 3)), "column 'score', row 3"),
        (lambda f: f.iloc[::-1].reset_index(drop=True), "row 5: timestamp .* earlier"),
        (lambda f: f.assign(timestamp=f["timestamp"].where(f.index != 5, "yesterday")),
         "row 5: cannot parse 'yesterday'"),
        (lambda f: f.assign(timestamp=f["timestamp"].where(
            f.index != 4, "2024-03-01T00:00:00")), (r"\(with a UTC offset\) but row 4 is "
         "'2024-03-01T00:00:00'")),
    ],
)
def test_bad_logs_are_refused_naming_column_and_row(mutate, match):
    log = make_log(n_windows=1)
    with pytest.raises(ValueError, match=match):
        Monitor([RULE]).update(mutate(log))


def test_unsorted_log_is_accepted_with_sort_true():
    log = make_log(n_windows=3)
    shuffled = log.sample(frac=1.0, random_state=0)
    a = Monitor([RULE], sort=True).update(shuffled, final=True)
    assert a["window_start"].tolist() == []  # no bad window among 0..2


@pytest.mark.parametrize(
    "config, match",
    [
        ({"rules": [{"metric": "ndcg@10", "window": "1h"}]}, r"rules\[0\]: give min"),
        ({"rules": [dict(RULE), dict(RULE, window="1M")]}, r"rules\[1\].window"),
        ({"rules": [dict(RULE, metrc="x")]}, r"rules\[0\].metrc: unknown key"),
        ({"rules": [dict(RULE, metric="foo@3")]}, r"rules\[0\].metric"),
        ({"rules": [dict(RULE, drift={"p_value": 2})]}, r"rules\[0\].drift.p_value"),
        ({"rules": [dict(RULE)], "columns": {"time": "t"}}, r"columns.time"),
        ({"rules": []}, "rules: must be a non-empty list"),
    ],
)
def test_config_errors_name_rule_index_and_key(config, match):
    with pytest.raises(ValueError, match=match):
        parse_monitor_config(config)

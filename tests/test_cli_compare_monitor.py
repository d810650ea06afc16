"""``ltr compare`` and ``ltr monitor`` from the command line (in-process ``main(argv)``).

The statistics themselves are tested against scipy and naive loops in
``test_compare.py`` and ``test_monitoring.py``; here: run folders feed the
comparison, the report files appear, a planted breach exits with status 3.
"""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest
import yaml
from test_monitoring import make_log

from ltr.cli import EXIT_ALERT, main


def _run(argv, capsys) -> tuple[int, str]:
    rc = main([str(a) for a in argv])
    out, err = capsys.readouterr()
    return rc, out + err


def _config(tmp_path: Path, name: str, num_leaves: int) -> Path:
    data = {
        "seed": 0,
        "data": {
            "source": "synthetic",
            "synthetic": {"n_queries": 120, "n_features": 6, "mean_docs": 10, "max_docs": 30,
                          "n_segments": 3},
        },
        "model": {"n_estimators": 8, "num_leaves": num_leaves, "min_child_samples": 3,
                  "n_jobs": 1, "objective": "native", "k": 10},
        "output": {"runs_dir": str(tmp_path / "runs"), "name": name},
    }
    path = tmp_path / f"{name}.yaml"
    path.write_text(yaml.safe_dump(data))
    return path


@pytest.fixture(scope="module")
def two_runs(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("cmp")
    a, b = tmp / "a", tmp / "b"
    assert main(["train", str(_config(tmp, "a", 3)), "--out", str(a)]) == 0
    assert main(["train", str(_config(tmp, "b", 15)), "--out", str(b)]) == 0
    return a, b


def test_compare_reads_two_run_folders_and_writes_the_report(two_runs, tmp_path, capsys):
    a, b = two_runs
    out = tmp_path / "cmp"
    rc, text = _run(["compare", a, b, "--out", out, "--n-resamples", "500",
                     "--min-queries", "5"], capsys)
    assert rc == 0, text
    assert "ndcg@10" in text
    for name in ("report.md", "report.html", "forest.png", "comparison.csv"):
        assert (out / name).is_file(), name
    table = pd.read_csv(out / "comparison.csv")
    assert {"all", "seg0", "seg1", "seg2"} <= set(table["segment"].astype(str))
    per_a = pd.read_csv(a / "per_query_test.csv")
    per_b = pd.read_csv(b / "per_query_test.csv")
    row = table[(table["metric"] == "ndcg@10") & (table["segment"] == "all")].iloc[0]
    assert row["delta"] == pytest.approx(per_b["ndcg@10"].mean() - per_a["ndcg@10"].mean())
    assert row["n"] == len(per_a)


def test_compare_segments_by_a_named_column_and_refuses_an_unknown_one(two_runs, capsys):
    a, b = two_runs
    rc, text = _run(["compare", a, b, "--segment-column", "segment", "--n-resamples", "200"],
                    capsys)
    assert rc == 0, text
    rc, text = _run(["compare", a, b, "--segment-column", "market"], capsys)
    assert rc == 1 and "--segment-column: column 'market' not in" in text


def test_compare_refuses_runs_over_different_queries_unless_asked_to_intersect(
    two_runs, tmp_path, capsys
):
    a, _ = two_runs
    other = tmp_path / "other"
    assert main(["train", str(_config(tmp_path, "o", 7)), "--out", str(other),
                 "--set", "seed=5"]) == 0
    rc, text = _run(["compare", a, other, "--n-resamples", "100"], capsys)
    assert rc == 1 and "queries" in text, text
    rc, text = _run(["compare", a, other, "--intersect", "--n-resamples", "100"], capsys)
    assert rc in (0, 1), text  # few or no shared queries: either compared or a clear error


def test_monitor_quick_form_exits_3_on_exactly_the_planted_breach(tmp_path, capsys):
    log = tmp_path / "log.csv"
    make_log(bad=(3,)).to_csv(log, index=False)
    out = tmp_path / "mon"
    rc, text = _run(["monitor", log, "--metric", "ndcg@10", "--window", "1h", "--min", "0.72",
                     "--out", out], capsys)
    assert rc == EXIT_ALERT, text
    alerts = pd.read_csv(out / "alerts.csv")
    assert list(alerts.columns) == ["window_start", "segment", "rule", "metric", "value",
                                    "threshold"]
    assert list(alerts["window_start"]) == ["2024-03-01T03:00:00Z"]
    assert json.loads((out / "alerts.json").read_text())[0]["metric"] == "ndcg@10"
    healthy = tmp_path / "healthy.csv"
    make_log(bad=()).to_csv(healthy, index=False)
    rc, text = _run(["monitor", healthy, "--metric", "ndcg@10", "--window", "1h",
                     "--min", "0.72"], capsys)
    assert rc == 0, text


def test_monitor_with_the_shipped_config_and_bad_invocations(tmp_path, capsys):
    log = tmp_path / "log.csv"
    frame = make_log()
    frame["conversion"] = 0.05
    frame["coverage"] = 0.9
    frame.to_csv(log, index=False)
    rc, text = _run(["monitor", log], capsys)
    assert rc == 2 and "monitor needs -c CONFIG or a quick rule" in text
    rc, text = _run(["monitor", tmp_path / "missing.csv", "--metric", "ndcg@10",
                     "--window", "1h", "--min", "0.5"], capsys)
    assert rc == 1, text
    repo = Path(__file__).resolve().parents[1]
    rc, text = _run(["monitor", log, "-c", repo / "configs" / "monitor.yaml"], capsys)
    assert rc in (0, EXIT_ALERT), text


def test_predict_writes_trec_files_that_evaluate_scores_like_pytrec_eval(
    two_runs, tmp_path, capsys
):
    pytrec_eval = pytest.importorskip("pytrec_eval")
    from ltr.evaluation.trec import read_qrels, read_run

    a, _ = two_runs
    rows = [f"{(i * 7) % 3} qid:{i // 6} " + " ".join(f"{j}:{((i + 1) * j) % 11 / 11}"
                                                      for j in range(1, 7)) for i in range(60)]
    data = tmp_path / "test.letor"
    data.write_text("\n".join(rows) + "\n")
    run_file, qrels_file = tmp_path / "run.txt", tmp_path / "qrels.txt"
    rc, text = _run(["predict", a, "--data", data, "--trec-run", run_file,
                     "--trec-qrels", qrels_file], capsys)
    assert rc == 0, text
    out = tmp_path / "per_query.csv"
    rc, text = _run(["evaluate", "--qrels", qrels_file, "--ranking", run_file,
                     "--metrics", "ndcg@10", "map", "P@5".replace("P@", "precision@"),
                     "--out", out], capsys)
    assert rc == 0 and "ndcg@10" in text, text
    ours = pd.read_csv(out, index_col=0, dtype={0: str})
    qrels = read_qrels(qrels_file)
    run = read_run(run_file)
    qd: dict = {}
    for q, d, r in zip(qrels["qid"], qrels["doc_id"], qrels["relevance"]):
        qd.setdefault(str(q), {})[str(d)] = int(r)
    rd: dict = {}
    for q, d, s in zip(run["qid"], run["doc_id"], run["score"]):
        rd.setdefault(str(q), {})[str(d)] = float(s)
    peer = pytrec_eval.RelevanceEvaluator(qd, {"ndcg_cut.10", "map", "P.5"}).evaluate(rd)
    for q, row in ours.iterrows():
        assert row["ndcg@10"] == pytest.approx(peer[str(q)]["ndcg_cut_10"], abs=1e-12)
        assert row["map"] == pytest.approx(peer[str(q)]["map"], abs=1e-12)
        assert row["precision@5"] == pytest.approx(peer[str(q)]["P_5"], abs=1e-12)
    rc, text = _run(["evaluate", "--qrels", qrels_file], capsys)
    assert rc == 2 and "evaluate needs --qrels FILE and --run FILE" in text
    rc, text = _run(["evaluate", "--qrels", qrels_file, "--ranking", run_file,
                     "--convention", "lightgbm"], capsys)
    assert rc == 2 and "invalid choice: 'lightgbm'" in text

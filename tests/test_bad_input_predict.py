"""``ltr predict`` and ``ltr validate`` hardening: ids kept, options checked before any write.

Table-driven like ``test_bad_input_cli.py``: every case runs ``ltr.cli.main`` in-process
and asserts the exit status, a message fragment naming the option (or file and line)
and the bad value, and that nothing was written.  Then what the issue found wrong: text
query ids written as 0, 1, 2, ... and ``--doc-id`` read as a feature.
"""

from __future__ import annotations

import json
import shutil
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import yaml

from ltr.cli import main
from ltr.engines import RankingModel
from ltr.evaluation import evaluate
from ltr.metrics import ndcg


def _table(n_q: int = 12, docs: int = 5, seed: int = 0) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    rows = []
    for q in range(n_q):
        for d in range(docs):
            rows.append((f"query_{100 + q}", f"doc-{q}-{d}", int(rng.integers(0, 3)),
                         *rng.normal(size=3)))
    return pd.DataFrame(rows, columns=["qid", "doc", "label", "f1", "f2", "f3"])


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    """A finished run trained on a CSV with text query ids and no document-id column."""
    tmp = tmp_path_factory.mktemp("predict")
    _table(seed=1).drop(columns="doc").to_csv(tmp / "train.csv", index=False)
    cfg = {"seed": 0,
           "data": {"source": "csv", "train": str(tmp / "train.csv"),
                    "split": {"valid": 0.2, "test": 0.2}},
           "model": {"n_estimators": 3, "num_leaves": 4, "min_child_samples": 2, "n_jobs": 1,
                     "objective": "native", "k": 5}}
    (tmp / "c.yaml").write_text(yaml.safe_dump(cfg))
    assert main(["train", str(tmp / "c.yaml"), "--out", str(tmp / "run")]) == 0
    return tmp / "run"


def _prepare(d: Path, run: Path) -> None:
    table = _table()
    table.to_csv(d / "score.csv", index=False)
    table.assign(doc=table["doc"].where(table.index != 3)).to_csv(d / "blank_doc.csv",
                                                                  index=False)
    table.assign(doc=table["doc"].str.replace("-", " ")).to_csv(d / "space_doc.csv",
                                                                index=False)
    table.assign(qid=table["qid"].str.replace("_", " ")).to_csv(d / "space_qid.csv",
                                                                index=False)
    (d / "data.letor").write_text("1 qid:1 1:0.5 2:0.1 3:0.2\n0 qid:1 1:0.1 2:0.3 3:0.9\n")
    (d / "sub").mkdir()
    unfinished = d / "unfinished"
    unfinished.mkdir()
    shutil.copy(run / "config.yaml", unfinished / "config.yaml")
    no_done = d / "no_done"
    no_done.mkdir()
    for name in ("config.yaml", "model.json"):
        shutil.copy(run / name, no_done / name)


def _snapshot(d: Path) -> dict[str, bytes]:
    return {str(p.relative_to(d)): p.read_bytes() for p in sorted(d.rglob("*")) if p.is_file()}


CASES = [
    # (id, argv ({r}: the run, {d}: the folder), exit status, message fragment)
    ("tag-with-space", ["predict", "{r}", "--data", "{d}/score.csv", "--out", "{d}/o.csv",
                        "--trec-run", "{d}/o.run", "--tag", "my run"], 1,
     "--tag must be a non-empty string without whitespace, got 'my run'"),
    ("tag-empty", ["predict", "{r}", "--data", "{d}/score.csv", "--out", "{d}/o.csv",
                   "--trec-run", "{d}/o.run", "--tag", ""], 1,
     "--tag must be a non-empty string without whitespace, got ''"),
    ("out-is-a-folder", ["predict", "{r}", "--data", "{d}/score.csv", "--out", "{d}/sub"], 1,
     "--out: '{d}/sub' is a folder; give a file name"),
    ("trec-run-folder-missing", ["predict", "{r}", "--data", "{d}/score.csv", "--out",
                                 "{d}/o.csv", "--trec-run", "{d}/no/o.run"], 1,
     "--trec-run: folder '{d}/no' does not exist"),
    ("trec-qrels-folder-missing", ["predict", "{r}", "--data", "{d}/score.csv", "--out",
                                   "{d}/o.csv", "--trec-qrels", "{d}/no/q.txt"], 1,
     "--trec-qrels: folder '{d}/no' does not exist"),
    ("doc-id-column-absent", ["predict", "{r}", "--data", "{d}/score.csv", "--out", "{d}/o.csv",
                              "--doc-id", "document"], 1,
     "--doc-id: column 'document' not found in '{d}/score.csv'"),
    ("doc-id-with-letor", ["predict", "{r}", "--data", "{d}/data.letor", "--out", "{d}/o.csv",
                           "--doc-id", "doc"], 1,
     "--doc-id doc: applies to CSV/parquet data; LETOR rows are numbered"),
    ("doc-id-blank-cell", ["predict", "{r}", "--data", "{d}/blank_doc.csv", "--out",
                           "{d}/o.csv", "--doc-id", "doc"], 1,
     "--doc-id doc: '{d}/blank_doc.csv', line 5: the document id is missing"),
    ("doc-id-with-space-for-trec", ["predict", "{r}", "--data", "{d}/space_doc.csv", "--out",
                                    "{d}/o.csv", "--trec-run", "{d}/o.run", "--doc-id", "doc"],
     1, "--trec-run: doc_id[0] = 'doc 0 0': TREC ids must be non-empty and contain no whitespace"),
    ("qid-with-space-for-trec", ["predict", "{r}", "--data", "{d}/space_qid.csv", "--out",
                                 "{d}/o.csv", "--trec-run", "{d}/o.run", "--doc-id", "doc"], 1,
     "--trec-run: qid[0] = 'query 100': TREC ids must be non-empty"),
    ("qid-column-absent", ["predict", "{r}", "--data", "{d}/score.csv", "--out", "{d}/o.csv",
                           "--qid", "query"], 1,
     "--qid: column 'query' not found in '{d}/score.csv'"),
    ("data-is-a-folder", ["predict", "{r}", "--data", "{d}/sub", "--out", "{d}/o.csv"], 1,
     "--data: '{d}/sub' is a folder, not a data file"),
    ("data-missing", ["predict", "{r}", "--data", "{d}/none.csv", "--out", "{d}/o.csv"], 1,
     "--data: file not found: '{d}/none.csv'"),
    ("model-missing", ["predict", "{d}/none", "--data", "{d}/score.csv", "--out", "{d}/o.csv"],
     1, "RUN_DIR|MODEL: file not found: '{d}/none'"),
    ("interrupted-run", ["predict", "{d}/unfinished", "--data", "{d}/score.csv", "--out",
                         "{d}/o.csv"], 1,
     ("RUN_DIR|MODEL: '{d}/unfinished' is an unfinished run folder (interrupted before its model was "
     "saved: no model.json, no DONE marker): finish it with `ltr train --resume "
     "{d}/unfinished`")),
    ("run-without-done", ["predict", "{d}/no_done", "--data", "{d}/score.csv", "--out",
                          "{d}/o.csv"], 1,
     "is not a finished run (no DONE marker): finish it with `ltr train --resume {d}/no_done`"),
    ("no-output", ["predict", "{r}", "--data", "{d}/score.csv"], 2,
     "predict needs --out FILE, --trec-run FILE and/or --trec-qrels FILE"),
    ("score-interrupted-run", ["score", "{d}/unfinished", "--data",
                                  "{d}/score.csv"], 1, "ltr train --resume {d}/unfinished"),
]


@pytest.mark.parametrize("case", CASES, ids=[c[0] for c in CASES])
def test_predict_refuses_bad_input_before_writing(case, tmp_path, run, capsys):
    _, argv, status, fragment = case
    _prepare(tmp_path, run)
    before = _snapshot(tmp_path)
    fill = {"r": str(run), "d": str(tmp_path)}
    rc = main([a.format(**fill) for a in argv])
    text = "".join(capsys.readouterr())
    assert rc == status, text
    assert fragment.format(**fill) in " ".join(text.split()), text
    assert _snapshot(tmp_path) == before  # --out was not written before the refusal


def test_text_query_ids_and_doc_ids_are_kept_in_every_output(tmp_path, run, capsys):
    _prepare(tmp_path, run)
    out, trec_run, trec_qrels = tmp_path / "s.csv", tmp_path / "r.txt", tmp_path / "q.txt"
    rc = main(["predict", str(run), "--data", str(tmp_path / "score.csv"), "--doc-id", "doc",
               "--out", str(out), "--trec-run", str(trec_run), "--trec-qrels", str(trec_qrels)])
    assert rc == 0, capsys.readouterr()
    table = _table()
    scores = pd.read_csv(out, dtype={"qid": str, "doc_id": str})
    assert scores["qid"].tolist() == table["qid"].tolist()  # query_100 ..., not 0, 1, 2
    assert scores["doc_id"].tolist() == table["doc"].tolist()
    # the model scores the three features only: the doc-id column is not read as one
    model = RankingModel.load(run / "model.json")
    np.testing.assert_allclose(scores["score"], model.predict(table[["f1", "f2", "f3"]]
                                                              .to_numpy()), rtol=0, atol=1e-12)
    run_ids = {line.split()[0] for line in trec_run.read_text().splitlines()}
    assert run_ids == set(table["qid"])
    # the TREC files pair with the user's own qrels (keyed by the real ids)
    own = table.rename(columns={"doc": "doc_id", "label": "relevance"})
    res = evaluate(own[["qid", "doc_id", "relevance"]], trec_run, ["ndcg@10"])
    assert res.n_queries == table["qid"].nunique()
    codes = pd.factorize(table["qid"])[0]
    per_query = ndcg(table["label"], scores["score"], qid=codes, k=10, reduce=None,
                     convention="trec_eval", doc_ids=table["doc"].to_numpy())
    assert res.to_frame()["ndcg@10"].to_numpy() == pytest.approx(np.asarray(per_query))
    same = evaluate(trec_qrels, trec_run, ["ndcg@10"])
    assert same.to_frame().index.tolist() == list(pd.unique(table["qid"]))


def test_validate_refuses_a_cluster_config_when_dask_is_missing(tmp_path, monkeypatch, capsys):
    cfg = {"seed": 0, "data": {"source": "synthetic", "synthetic": {"n_queries": 20}},
           "cluster": {"local": {"n_workers": 2}}, "output": {"runs_dir": str(tmp_path / "runs")}}
    path = tmp_path / "c.yaml"
    path.write_text(yaml.safe_dump(cfg))
    monkeypatch.setitem(sys.modules, "distributed", None)  # as if Dask were not installed
    rc = main(["validate", str(path)])
    err = capsys.readouterr().err
    assert rc == 1 and "cluster: 'distributed' is required for the config's cluster section" in err
    assert "pip install" in err and "remove the cluster section" in err
    assert not (tmp_path / "runs").exists()
    assert json.dumps(cfg)  # the config itself is untouched

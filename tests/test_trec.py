"""ltr.evaluation.trec: TREC qrels/run readers and the run writer."""

from __future__ import annotations

import math

import numpy as np
import pytest

from ltr.evaluation import evaluate
from ltr.evaluation.trec import read_qrels, read_run, write_qrels, write_run


def test_read_qrels_and_run(tmp_path):
    qrels = tmp_path / "qrels"
    qrels.write_text("1 0 d1 2\n1 0 d2 0\n\n2\t0\td3\t-1\n")
    frame = read_qrels(qrels)
    assert list(frame.columns) == ["qid", "doc_id", "relevance"]
    assert frame["qid"].tolist() == ["1", "1", "2"]
    assert frame["relevance"].tolist() == [2.0, 0.0, -1.0]
    run = tmp_path / "run"
    run.write_text("1 Q0 d1 1 1.5 tag\n1 Q0 d2 2 -3e-2 tag\n")
    frame = read_run(run)
    assert frame["doc_id"].tolist() == ["d1", "d2"] and frame["score"].tolist() == [1.5, -0.03]


@pytest.mark.parametrize(
    "text, match",
    [
        ("1 0 d1 2\n1 0 d2\n", (r"qrels file '.*', line 2: expected 4 whitespace-separated "
                                r"fields \(qid iter doc_id relevance\): '1 0 d2'")),
        ("1 0 d1 2\n\n1 0 d2 high\n", r"line 3: relevance 'high' is not a number"),
        ("1 0 d1 2 extra\n", r"line 1: expected 4 whitespace-separated fields"),
        ("1 0 d1 2\n1 0 d1 2 3 4 5 6\n",
         r"line 2: expected 4 whitespace-separated fields .*: '1 0 d1 2 3 4 5 6'"),
        ("qid,doc,rel\n", r"line 1: expected 4"),
        ("", r"is empty"),
    ],
)
def test_read_qrels_rejects_malformed_files_naming_the_line(tmp_path, text, match):
    path = tmp_path / "qrels.txt"
    path.write_text(text)
    with pytest.raises(ValueError, match=match):
        read_qrels(path)


def test_read_run_rejects_a_non_numeric_score(tmp_path):
    path = tmp_path / "run.txt"
    path.write_text("1 Q0 d1 1 1.5 t\n1 Q0 d2 2 x t\n")
    with pytest.raises(ValueError, match=r"run file '.*run.txt', line 2: score 'x' is not a number"):
        read_run(path)
    with pytest.raises(FileNotFoundError, match="does not exist"):
        read_run(tmp_path / "nope")


def test_write_run_ranks_like_trec_eval_and_round_trips(tmp_path):
    path = tmp_path / "run.txt"
    scores = [0.1, 0.7, 0.7, -math.inf, 1 / 3]
    write_run(path, ["b", "b", "b", "b", "a"], ["d9", "d10", "d2", "d0", "x"], scores, tag="m1")
    lines = path.read_text().splitlines()
    # ties by doc id descending as strings: "d2" > "d10"; -inf is left out; query order kept
    assert [ln.split()[2:4] for ln in lines] == [["d2", "1"], ["d10", "2"], ["d9", "3"],
                                                   ["x", "1"]]
    assert all(ln.split()[1] == "Q0" and ln.split()[5] == "m1" for ln in lines)
    back = read_run(path)
    assert back["score"].tolist() == [0.7, 0.7, 0.1, 1 / 3]  # exact round trip


def test_write_run_rejects_bad_ids_and_scores(tmp_path):
    path = tmp_path / "run.txt"
    with pytest.raises(ValueError, match=r"doc_id\[0\] = 'a b': TREC ids must"):
        write_run(path, ["q"], ["a b"], [1.0])
    with pytest.raises(ValueError, match=r"score must be finite or -inf; score\[0\] = nan"):
        write_run(path, ["q"], ["a"], [np.nan])
    with pytest.raises(ValueError, match="tag must be a non-empty string"):
        write_run(path, ["q"], ["a"], [1.0], tag="two words")
    with pytest.raises(ValueError, match=r"qid must hold one id per row \(1\)"):
        write_run(path, ["q", "r"], ["a"], [1.0])
    assert not path.exists()


def test_write_qrels_and_run_without_doc_ids_evaluate_rows_you_hold(tmp_path):
    from ltr.metrics import average_precision

    qid = np.array([3, 3, 3, 1, 1])
    y = np.array([0, 2, 1, 1, 0])
    s = np.array([0.2, 0.1, 0.9, 0.3, 0.4])
    write_qrels(tmp_path / "qrels", qid, None, y)
    write_run(tmp_path / "run", qid, None, s, tag="m")
    assert (tmp_path / "qrels").read_text().splitlines()[:2] == ["3 0 0 0", "3 0 1 2"]
    res = evaluate(tmp_path / "qrels", tmp_path / "run", ["map"])
    expected = average_precision(y, s, qid=qid, k=None, empty=0.0, reduce=None)
    assert res.to_frame()["map"].tolist() == pytest.approx(list(expected), abs=1e-15)
    with pytest.raises(ValueError, match=r"relevance must be finite; relevance\[0\] = nan"):
        write_qrels(tmp_path / "q2", ["q"], ["a"], [np.nan])

"""Bad input to the qrels/run evaluation, the TREC files, the rank metrics and ltr.evaluation.recsys.

Table-driven like ``test_bad_input.py``: every case asserts the exception type, a
message fragment naming the argument (or the file and line) and the bad value, and
that nothing was written into the case's folder.  The ``ltr evaluate --qrels`` cases
run the command in-process and assert the exit status instead.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Any, NamedTuple

import numpy as np
import pandas as pd
import pytest
import scipy.sparse as sp

import ltr.metrics as rank_metrics
from ltr.cli import main
from ltr.evaluation import evaluate, recsys, trec

BIG = "99999999999999999999"
Q = {"q1": {"a": 2, "b": 0, "c": 1}, "q2": {"a": 1}}
R = {"q1": {"a": 0.9, "b": 0.8, "x": 0.7}, "q2": {"a": 0.5}}


def _qrels_frame(**change: Any) -> pd.DataFrame:
    frame = pd.DataFrame({"qid": ["q1", "q1", "q2"], "doc_id": ["a", "b", "a"],
                          "relevance": [2.0, 0.0, 1.0]})
    return frame.assign(**change)


def _run_frame(**change: Any) -> pd.DataFrame:
    frame = pd.DataFrame({"qid": ["q1", "q1", "q2"], "doc_id": ["a", "b", "a"],
                          "score": [0.9, 0.8, 0.5]})
    return frame.assign(**change)


def _files(d: Path) -> tuple[Path, Path]:
    """A valid qrels and run file in *d* (written before the snapshot)."""
    (d / "qrels.txt").write_text("q1 0 a 2\nq1 0 b 0\nq2 0 a 1\n")
    (d / "run.txt").write_text("q1 Q0 a 1 0.9 t\nq1 Q0 b 2 0.8 t\nq2 Q0 a 1 0.5 t\n")
    (d / "bad_rel.txt").write_text("q1 0 a 2\nq1 0 b high\n")
    (d / "bad_score.txt").write_text("q1 Q0 a 1 0.9 t\nq1 Q0 b 2 NaNx t\n")
    (d / "empty.txt").write_text("")
    (d / "folder").mkdir()
    return d / "qrels.txt", d / "run.txt"


class Case(NamedTuple):
    call: Callable[[Path], Any]
    exc: type[BaseException]
    match: str


S = np.array([[0.9, 0.1, 0.5, 0.3], [0.2, 0.8, 0.4, 0.6]])
REL = sp.csr_matrix(np.array([[0, 0, 1, 0], [1, 0, 0, 2]], dtype=float))


def _recsys(scores: Any = S, relevant: Any = REL, metrics: Any = "ndcg@2", **kw: Any) -> Any:
    return recsys.evaluate(scores, relevant, metrics, **kw)


def _with_nan() -> np.ndarray:
    s = S.copy()
    s[1, 3] = np.nan
    return s


def _rel(values: list[list[float]]) -> sp.csr_matrix:
    return sp.csr_matrix(np.array(values, dtype=float))


CASES: dict[str, Case] = {
    # ---------------------------------------------------------------- files
    "qrels-is-a-folder": Case(lambda d: evaluate(d / "folder", R, "map"), IsADirectoryError,
                              r"qrels file '.*folder' is a folder, not a TREC qrels file"),
    "run-is-a-folder": Case(lambda d: evaluate(Q, d / "folder", "map"), IsADirectoryError,
                            r"run file '.*folder' is a folder"),
    "qrels-missing": Case(lambda d: evaluate(d / "nope.txt", R, "map"), FileNotFoundError,
                          r"qrels file '.*nope\.txt' does not exist"),
    "run-missing": Case(lambda d: evaluate(Q, d / "nope.txt", "map"), FileNotFoundError,
                        r"run file '.*nope\.txt' does not exist"),
    "qrels-empty-file": Case(lambda d: evaluate(d / "empty.txt", R, "map"), ValueError,
                             r"qrels file '.*empty\.txt' is empty"),
    "run-empty-file": Case(lambda d: evaluate(Q, d / "empty.txt", "map"), ValueError,
                           r"run file '.*empty\.txt' is empty"),
    "run-given-as-qrels": Case(lambda d: evaluate(d / "run.txt", d / "qrels.txt", "map"),
                               ValueError, r"qrels file '.*run\.txt', line 1: expected 4 "
                               r"whitespace-separated fields .*'q1 Q0 a 1 0\.9 t'"),
    "qrels-given-as-run": Case(lambda d: evaluate(Q, d / "qrels.txt", "map"), ValueError,
                               r"run file '.*qrels\.txt', line 1: expected 6 .*'q1 0 a 2'"),
    "qrels-text-relevance": Case(lambda d: evaluate(d / "bad_rel.txt", R, "map"), ValueError,
                                 r"bad_rel\.txt', line 2: relevance 'high' is not a number"),
    "run-text-score": Case(lambda d: evaluate(Q, d / "bad_score.txt", "map"), ValueError,
                           r"bad_score\.txt', line 2: score 'NaNx' is not a number"),
    "read-qrels-folder": Case(lambda d: trec.read_qrels(d / "folder"), IsADirectoryError,
                              r"'.*folder' is a folder"),
    "read-run-missing": Case(lambda d: trec.read_run(d / "none"), FileNotFoundError,
                             r"run file '.*none' does not exist"),
    # ---------------------------------------------------------------- frames and dicts
    "qrels-nan-relevance": Case(lambda d: evaluate(_qrels_frame(relevance=[1, np.nan, 0]), R,
                                                   "map"),
                                ValueError, r"qrels row 1: relevance must be finite, got nan"),
    "run-nan-score": Case(lambda d: evaluate(Q, _run_frame(score=[1, 2, np.nan]), "map"),
                          ValueError, r"run row 2: score must be a number or -inf.*got nan"),
    "run-complex-score": Case(lambda d: evaluate(Q, _run_frame(score=[1, 2 + 1j, 3]), "map"),
                              TypeError, r"run column 'score' must hold real numbers, got "
                              r"complex dtype; row 1 holds .*2\+1j"),
    "qrels-complex-relevance": Case(
        lambda d: evaluate(_qrels_frame(relevance=np.array([1j, 0, 1])), R, "map"),
        TypeError, r"qrels column 'relevance' must hold real numbers.*row 0"),
    "run-string-score": Case(lambda d: evaluate(Q, _run_frame(score=["1", "x", "2"]), "map"),
                             TypeError, r"run column 'score' must be numeric; row 1 holds 'x'"),
    "qrels-duplicate-pair": Case(
        lambda d: evaluate(_qrels_frame(doc_id=["a", "a", "a"]), R, "map"),
        ValueError, r"qrels row 1: duplicated \(qid, doc_id\) = \('q1', 'a'\)"),
    "run-duplicate-pair": Case(lambda d: evaluate(Q, _run_frame(doc_id=["b", "b", "a"]), "map"),
                               ValueError, r"run row 1: duplicated \(qid, doc_id\) = \('q1', 'b'\)"),
    "qrels-inner-not-a-dict": Case(lambda d: evaluate({"q1": [1, 2]}, R, "map"), TypeError,
                                   r"qrels\['q1'\] must be a dict doc_id -> relevance, got \[1, 2\]"),
    "qrels-inner-text": Case(lambda d: evaluate({"q1": {"a": "x"}}, R, "map"), TypeError,
                             r"qrels\['q1'\]\['a'\] = 'x': relevance must be a number"),
    "run-inner-none": Case(lambda d: evaluate(Q, {"q1": {"a": None}}, "map"), TypeError,
                           r"run\['q1'\]\['a'\] = None: score must be a number"),
    "run-inner-complex": Case(lambda d: evaluate(Q, {"q1": {"a": 1 + 2j}}, "map"), TypeError,
                              r"run\['q1'\]\['a'\] = \(1\+2j\): score must be a number"),
    "qrels-frame-lacks-doc-id": Case(
        lambda d: evaluate(_qrels_frame().drop(columns="doc_id"), R, "map"), ValueError,
        r"qrels DataFrame lacks column\(s\) \['doc_id'\]"),
    "run-frame-lacks-score": Case(
        lambda d: evaluate(Q, _run_frame().rename(columns={"score": "s"}), "map"), ValueError,
        r"run DataFrame lacks column\(s\) \['score'\].*'s'"),
    "qrels-a-list": Case(lambda d: evaluate([("q1", "a", 1)], R, "map"), TypeError,
                         r"qrels must be a pandas DataFrame .*got list"),
    "run-a-number": Case(lambda d: evaluate(Q, 3.5, "map"), TypeError,
                         r"run must be a pandas DataFrame .*got float"),
    "qrels-empty-frame": Case(lambda d: evaluate(_qrels_frame().iloc[:0], R, "map"), ValueError,
                              r"qrels is empty"),
    "run-qid-missing": Case(lambda d: evaluate(Q, _run_frame(qid=["q1", None, "q2"]), "map"),
                            ValueError, r"run row 1: qid is missing"),
    "qrels-doc-missing": Case(lambda d: evaluate(_qrels_frame(doc_id=["a", None, "a"]), R, "map"),
                              ValueError, r"qrels row 1: doc_id is missing"),
    "no-query-in-common": Case(lambda d: evaluate(Q, {"z9": {"a": 1.0}}, "map"), ValueError,
                               r"no query in common: the qrels' queries start \['q1', 'q2'\], "
                               r"the run's \['z9'\]"),
    "no-query-in-common-files": Case(
        lambda d: evaluate(d / "qrels.txt", _run_frame(qid=["Q1", "Q1", "Q2"]), "map"),
        ValueError, r"no query in common.*\['Q1', 'Q2'\]"),
    # ---------------------------------------------------------------- metric names and options
    "metric-unknown": Case(lambda d: evaluate(Q, R, "foo@3"), ValueError,
                           r"metric name 'foo@3': unknown metric 'foo'; expected one of .*'map'"),
    "metric-k-beyond-int64": Case(lambda d: evaluate(Q, R, f"ndcg@{BIG}"), ValueError,
                                  rf"'ndcg@{BIG}': K must be <= 9223372036854775807, got {BIG}"),
    "metric-k-zero": Case(lambda d: evaluate(Q, R, "precision@0"), ValueError,
                          r"'precision@0': K must be an integer >= 1, got 0"),
    "metric-rprec-with-k": Case(lambda d: evaluate(Q, R, "r-precision@5"), ValueError,
                                r"'r-precision@5': 'r-precision' takes no @K cut-off"),
    "metric-form-names-map": Case(lambda d: evaluate(Q, R, "map@"), ValueError,
                                  r"'map@' is not of the form METRIC, METRIC@K or "
                                  r"METRIC@K:CONVENTION \(e\.g\. 'ndcg@10', 'map'"),
    "metrics-empty-list": Case(lambda d: evaluate(Q, R, []), TypeError,
                               r"metrics must be a metric name or a non-empty list of names, "
                               r"got \[\]"),
    "metric-not-a-string": Case(lambda d: evaluate(Q, R, [10]), TypeError,
                                r"metric name must be a str like 'ndcg@10', got 10"),
    "metric-with-convention": Case(lambda d: evaluate(Q, R, "ndcg@10:sklearn"), ValueError,
                                   r"'ndcg@10:sklearn': pass the convention to evaluate"),
    "convention-unknown": Case(lambda d: evaluate(Q, R, "map", convention="sklearn"), ValueError,
                               r"convention must be None or one of .*got 'sklearn'"),
    "missing-unknown": Case(lambda d: evaluate(Q, R, "map", missing="drop"), ValueError,
                            r"missing must be 'skip' or 'zero', got 'drop'"),
    "relevance-level-text": Case(lambda d: evaluate(Q, R, "map", relevance_level="high"),
                                 TypeError, r"relevance_level must be a real number, got 'high'"),
    "relevance-level-nan": Case(lambda d: evaluate(Q, R, "map", relevance_level=math.nan),
                                ValueError, r"relevance_level must be finite, got nan"),
    "max-grade-inf": Case(lambda d: evaluate(Q, R, "err@3", max_grade=math.inf), ValueError,
                          r"max_grade must be finite, got inf"),
    # ---------------------------------------------------------------- TREC writers
    "write-run-tag-space": Case(lambda d: trec.write_run(d / "o.txt", ["q"], ["a"], [1.0],
                                                         tag="my run"),
                                ValueError, r"tag must be a non-empty string without whitespace, "
                                r"got 'my run'"),
    "write-run-qid-space": Case(lambda d: trec.write_run(d / "o.txt", ["q", "q 2"], ["a", "b"],
                                                         [1.0, 2.0]),
                                ValueError, r"qid\[1\] = 'q 2': TREC ids must be non-empty"),
    "write-run-nan-score": Case(lambda d: trec.write_run(d / "o.txt", ["q"], ["a"], [np.nan]),
                                ValueError, r"score must be finite or -inf; score\[0\] = nan"),
    "write-run-plus-inf": Case(lambda d: trec.write_run(d / "o.txt", ["q", "q"], ["a", "b"],
                                                        [1.0, np.inf]),
                               ValueError, r"score\[1\] = inf"),
    "write-run-complex": Case(lambda d: trec.write_run(d / "o.txt", ["q"], ["a"], [1 + 1j]),
                              TypeError, r"score must contain real numbers, got complex"),
    "write-run-short-qid": Case(lambda d: trec.write_run(d / "o.txt", ["q"], ["a", "b"],
                                                         [1.0, 2.0]),
                                ValueError, r"qid must hold one id per row \(2\), got shape"),
    "write-qrels-nan": Case(lambda d: trec.write_qrels(d / "o.txt", ["q"], ["a"], [np.nan]),
                            ValueError, r"relevance\[0\] = nan"),
    "write-qrels-empty-doc": Case(lambda d: trec.write_qrels(d / "o.txt", ["q"], [""], [1]),
                                  ValueError, r"doc_id\[0\] = '': TREC ids must be non-empty"),
    "write-run-missing-folder": Case(lambda d: trec.write_run(d / "no" / "o.txt", ["q"], ["a"],
                                                              [1.0]),
                                     OSError, r"cannot write '.*no/o\.txt'"),
    # ---------------------------------------------------------------- rank metrics
    "precision-complex-score": Case(lambda d: rank_metrics.precision([1, 0], [1 + 1j, 0],
                                                                     group=[2]),
                                    TypeError, r"y_score must contain real numbers, got complex"),
    "recall-complex-label": Case(lambda d: rank_metrics.recall(np.array([1j, 0]), [1, 0],
                                                               group=[2]),
                                 TypeError, r"y_true must contain real numbers"),
    "precision-k-beyond-int64": Case(lambda d: rank_metrics.precision([1, 0], [1, 0], group=[2],
                                                                      k=10**30),
                                     ValueError, r"k must be <= 9223372036854775807, got 10{30}"),
    "recall-k-list-zero": Case(lambda d: rank_metrics.recall([1, 0], [1, 0], group=[2],
                                                             k=[3, 0]),
                               ValueError, r"k\[1\] must be >= 1, got 0"),
    "ap-ties-average": Case(lambda d: rank_metrics.average_precision([1, 0], [1, 1], group=[2],
                                                                     ties="average"),
                            ValueError, r"ties.*'average'"),
    "hit-rate-level-nan": Case(lambda d: rank_metrics.hit_rate([1, 0], [1, 0], group=[2],
                                                               relevance_level=math.nan),
                               ValueError, r"relevance_level must be finite, got nan"),
    "err-group-mismatch": Case(lambda d: rank_metrics.err([1, 0, 1], [1, 0, 2], group=[2]),
                               ValueError, r"group"),
    # ---------------------------------------------------------------- ltr.evaluation.recsys.evaluate
    "recsys-csr-scores": Case(lambda d: _recsys(scores=sp.csr_matrix(S)), TypeError,
                              r"scores must be a dense \(n_users, n_items\) array, got a "
                              r"scipy\.sparse csr_matrix of shape \(2, 4\).*toarray"),
    "recsys-ragged-rows": Case(lambda d: _recsys(scores=[[1.0, 2.0, 3.0, 4.0], [1.0, 2.0]]),
                               ValueError, r"scores must be .*row 0 has 4 scores but row 1 has 2"),
    "recsys-string-scores": Case(lambda d: _recsys(scores=np.array([["a"] * 4] * 2)), TypeError,
                                 r"scores must hold numbers, got dtype <U1: user row 0, item 0 "
                                 r"holds .*'a'"),
    "recsys-object-scores": Case(lambda d: _recsys(scores=np.array([[1.0, 2.0, None, 3.0]] * 2,
                                                                   dtype=object)),
                                 TypeError, r"scores must hold numbers.*item 2 holds None"),
    "recsys-complex-scores": Case(lambda d: _recsys(scores=S + 1j), TypeError,
                                  r"scores must hold real numbers, got complex values"),
    "recsys-zero-users": Case(lambda d: _recsys(scores=np.zeros((0, 4)),
                                                relevant=sp.csr_matrix((0, 4))),
                              ValueError, r"scores has shape \(0, 4\): at least one user"),
    "recsys-zero-items": Case(lambda d: _recsys(scores=np.zeros((2, 0)),
                                                relevant=sp.csr_matrix((2, 0))),
                              ValueError, r"scores has shape \(2, 0\): at least one user and one "
                              r"item"),
    "recsys-1d-scores": Case(lambda d: _recsys(scores=np.zeros(4)), ValueError,
                             r"scores must be a 2-d \(n_users, n_items\) array, got shape \(4,\)"),
    "recsys-nan-score": Case(lambda d: _recsys(scores=_with_nan()), ValueError,
                             r"scores: user row 1, item 3: score is NaN"),
    "recsys-dense-relevant": Case(lambda d: _recsys(relevant=REL.toarray()), TypeError,
                                  r"relevant must be a scipy\.sparse matrix \(CSR\) of shape "
                                  r"\(2, 4\)"),
    "recsys-relevant-shape": Case(lambda d: _recsys(relevant=sp.csr_matrix((2, 5))), ValueError,
                                  r"relevant has shape \(2, 5\), but scores has shape \(2, 4\)"),
    "recsys-negative-relevance": Case(lambda d: _recsys(relevant=_rel([[0, -1, 0, 0],
                                                                       [1, 0, 0, 0]])),
                                      ValueError, r"relevant: user row 0, item 1: relevance is "
                                      r"negative \(-1\.0\)"),
    "recsys-nan-relevance": Case(lambda d: _recsys(relevant=_rel([[0, 0, 0, 0],
                                                                  [0, np.nan, 0, 0]])),
                                 ValueError, r"relevant: user row 1, item 1: relevance is NaN"),
    "recsys-excluded-relevant": Case(lambda d: _recsys(exclude=_rel([[0, 0, 1, 0],
                                                                     [0, 0, 0, 0]])),
                                     ValueError, r"user row 0, item 2: a relevant item "
                                     r"\(relevance 1\.0\) is also excluded"),
    "recsys-exclude-shape": Case(lambda d: _recsys(exclude=sp.csr_matrix((3, 4))), ValueError,
                                 r"exclude has shape \(3, 4\), but scores has shape \(2, 4\)"),
    "recsys-complex-relevant": Case(lambda d: _recsys(relevant=sp.csr_matrix(REL.toarray()
                                                                            + 0j)),
                                    TypeError, r"relevant must hold real relevance grades, got "
                                    r"dtype complex128"),
    "recsys-dense-exclude": Case(lambda d: _recsys(exclude=np.zeros((2, 4))), TypeError,
                                 r"exclude must be a scipy\.sparse matrix \(CSR\) of shape "
                                 r"\(2, 4\)"),
    "recsys-batch-size-zero": Case(lambda d: _recsys(batch_size=0), ValueError,
                                   r"batch_size must be >= 1, got 0"),
    "recsys-empty-text": Case(lambda d: _recsys(empty="zero"), ValueError,
                              r"empty must be 'skip' or a number, got 'zero'"),
    "recsys-unknown-option": Case(lambda d: _recsys(foo=1), TypeError,
                                  r"unknown metric option\(s\) \['foo'\]; only 'max_grade'"),
    "recsys-convention": Case(lambda d: _recsys(convention="lightgbm"), ValueError,
                              r"convention must be None or one of .*got 'lightgbm'"),
    "recsys-k-beyond-int64": Case(lambda d: _recsys(metrics=f"recall@{BIG}"), ValueError,
                                  rf"'recall@{BIG}': K must be <= 9223372036854775807"),
    "recsys-metric-unknown": Case(lambda d: _recsys(metrics="auc@3"), ValueError,
                                  r"metric name 'auc@3': unknown metric 'auc'"),
}


def _snapshot(d: Path) -> dict[str, bytes]:
    return {str(p.relative_to(d)): p.read_bytes() for p in sorted(d.rglob("*")) if p.is_file()}


@pytest.mark.parametrize("name", sorted(CASES))
def test_bad_input_is_refused_naming_the_input_and_value(name, tmp_path):
    case = CASES[name]
    _files(tmp_path)
    before = _snapshot(tmp_path)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no library or pandas warning before the error
        with pytest.raises(case.exc, match=case.match):
            case.call(tmp_path)
    assert _snapshot(tmp_path) == before


# --------------------------------------------------------------------------- the CLI

CLI_CASES = [
    # (id, argv after "evaluate" ({d}: the folder), exit status, message fragment)
    ("qrels-folder", ["--qrels", "{d}/folder", "--ranking", "{d}/run.txt"], 1,
     "qrels file '{d}/folder' is a folder"),
    ("ranking-missing", ["--qrels", "{d}/qrels.txt", "--ranking", "{d}/none.txt"], 1,
     "run file '{d}/none.txt' does not exist"),
    ("swapped", ["--qrels", "{d}/run.txt", "--ranking", "{d}/qrels.txt"], 1,
     "qrels file '{d}/run.txt', line 1: expected 4 whitespace-separated fields"),
    ("unknown-metric", ["--qrels", "{d}/qrels.txt", "--ranking", "{d}/run.txt", "--metrics",
                        "ndcg@10", "foo@3"], 1, "metric name 'foo@3': unknown metric 'foo'"),
    ("k-beyond-int64", ["--qrels", "{d}/qrels.txt", "--ranking", "{d}/run.txt", "--metrics",
                        f"ndcg@{BIG}"], 1, f"K must be <= 9223372036854775807, got {BIG}"),
    ("no-common-query", ["--qrels", "{d}/qrels.txt", "--ranking", "{d}/other.txt"], 1,
     "no query in common: the qrels' queries start ['q1', 'q2'], the run's ['z1']"),
    ("bad-score-line", ["--qrels", "{d}/qrels.txt", "--ranking", "{d}/bad_score.txt"], 1,
     "bad_score.txt', line 2: score 'NaNx' is not a number"),
    ("duplicate-run-line", ["--qrels", "{d}/qrels.txt", "--ranking", "{d}/dup.txt"], 1,
     "dup.txt', line 2 ('q1 Q0 a 2 0 t'): duplicated (qid, doc_id) = ('q1', 'a')"),
    ("relevance-level-nan", ["--qrels", "{d}/qrels.txt", "--ranking", "{d}/run.txt",
                             "--relevance-level", "nan"], 1, "relevance_level must be finite"),
    ("qrels-without-ranking", ["--qrels", "{d}/qrels.txt"], 2,
     "evaluate needs --qrels FILE and --run FILE"),
    ("model-convention-with-qrels", ["--qrels", "{d}/qrels.txt", "--ranking", "{d}/run.txt",
                                     "--convention", "lightgbm"], 2,
     "argument --convention: invalid choice: 'lightgbm'"),
    ("out-in-missing-folder", ["--qrels", "{d}/qrels.txt", "--ranking", "{d}/run.txt", "--out",
                               "{d}/no/such/out.csv"], 1, "cannot write '{d}/no/such/out.csv'"),
]


@pytest.mark.parametrize("case", CLI_CASES, ids=[c[0] for c in CLI_CASES])
def test_evaluate_command_refuses_bad_input(case, tmp_path, capsys):
    _, argv, status, fragment = case
    _files(tmp_path)
    (tmp_path / "other.txt").write_text("z1 Q0 a 1 0.9 t\n")
    (tmp_path / "dup.txt").write_text("q1 Q0 a 1 1 t\nq1 Q0 a 2 0 t\n")
    before = _snapshot(tmp_path)
    d = str(tmp_path)
    rc = main(["evaluate", *[a.format(d=d) for a in argv]])
    text = "".join(capsys.readouterr())
    assert rc == status, text
    assert fragment.format(d=d) in " ".join(text.split()), text
    assert "ParserWarning" not in text and "Traceback" not in text
    assert _snapshot(tmp_path) == before


def test_minus_inf_scores_are_stated_once_in_a_warning(tmp_path, capsys):
    """trec_eval ranks -inf last, ltr leaves it unranked: said once, in one warning line."""
    _files(tmp_path)
    run = tmp_path / "inf.txt"
    run.write_text("q1 Q0 a 1 -inf t\nq1 Q0 b 2 -inf t\nq1 Q0 c 3 0.5 t\nq2 Q0 a 1 1 t\n")
    with pytest.warns(UserWarning) as record:
        res = evaluate(tmp_path / "qrels.txt", run, ["map", "ndcg"])
    assert len(record) == 1 and "2 document(s) scored -inf are left unranked" in str(
        record[0].message) and "trec_eval would rank them last" in str(record[0].message)
    # ltr's documented value: the -inf documents are not retrieved, so q1's one relevant
    # document (a) is never found (trec_eval, ranking it after c and b, gives 1/3)
    assert res.to_frame().loc["q1", "map"] == 0.0 and res.to_frame().loc["q2", "map"] == 1.0
    rc = main(["evaluate", "--qrels", str(tmp_path / "qrels.txt"), "--ranking", str(run)])
    err = capsys.readouterr().err
    assert rc == 0 and err.count("ltr: warning: run: 2 document(s) scored -inf") == 1, err

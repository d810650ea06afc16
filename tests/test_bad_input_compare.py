"""Bad input to ltr.compare and ``ltr compare``: a clear error naming the input and value.

Table-driven: every case asserts the exception (or exit status), a message fragment
naming the argument, file and line, or query, and the bad value, and that nothing was
written (no report folder).  Then the silent oddities the issue found: a segment named
``all``, segment labels that disagree, a metric on one side only, a killed report write.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any, NamedTuple

import numpy as np
import pandas as pd
import pytest

from ltr.cli import main
from ltr.evaluation.comparison import compare, read_per_query
from ltr.runs.compare_cmd import compare_runs

N = 30


def frame(values: Any = None, **columns: Any) -> pd.DataFrame:
    rng = np.random.default_rng(0)
    base = pd.DataFrame({"qid": [f"q{i}" for i in range(N)],
                         "ndcg@10": rng.uniform(0.2, 0.9, N) if values is None else values})
    return base.assign(**columns).set_index("qid")


A = frame()
B = frame(A["ndcg@10"].to_numpy() + 0.01)


def _with(f: pd.DataFrame, row: int, column: str, value: Any) -> pd.DataFrame:
    out = f.copy()
    out[column] = out[column].astype(object)
    out.iloc[row, out.columns.get_loc(column)] = value
    return out


class Case(NamedTuple):
    call: Callable[[Path], Any]
    exc: type[BaseException]
    match: str


def _cmp(a: Any = A, b: Any = B, **kw: Any) -> Any:
    kw.setdefault("n_resamples", 50)
    return compare(a, b, **kw)


SEG = pd.Series(["head"] * 15 + ["tail"] * 15, index=A.index)

CASES: dict[str, Case] = {
    "a-a-list": Case(lambda d: _cmp(a=[0.1, 0.2]), TypeError,
                     r"a must be an evaluation result .*got \[0\.1, 0\.2\] \(list\)"),
    "b-a-number": Case(lambda d: _cmp(b=3), TypeError, r"b must be an evaluation result .*\(int\)"),
    "a-duplicate-query": Case(lambda d: _cmp(a=A.rename(index={"q1": "q0"})), ValueError,
                              r"a: query id 'q0' appears more than once"),
    "b-no-queries": Case(lambda d: _cmp(b=B.iloc[:0]), ValueError,
                         r"b: holds no queries \(an empty per-query table\)"),
    "a-text-value": Case(lambda d: _cmp(a=_with(A, 3, "ndcg@10", "x")), ValueError,
                         r"a: column 'ndcg@10' must hold numbers per query; query 'q3' has 'x'"),
    "b-infinite-value": Case(lambda d: _cmp(b=_with(B, 2, "ndcg@10", np.inf).astype(float)),
                             ValueError, r"b: 'ndcg@10' of query 'q2' is infinite"),
    "a-bool-values": Case(lambda d: _cmp(a=frame(np.arange(N) % 2 == 0)), ValueError,
                          r"a: column 'ndcg@10' must hold numbers per query; query 'q0' has "
                          r"True"),
    "tests-unknown": Case(lambda d: _cmp(tests=["t", "wilcoxon"]), ValueError,
                          r"tests must be a sequence of \['t', 'randomization', 'bootstrap'\], "
                          r"got \['t', 'wilcoxon'\]"),
    "tests-a-string": Case(lambda d: _cmp(tests="t"), ValueError,
                           r"tests must be a sequence of .*got 't'"),
    "n-resamples-zero": Case(lambda d: _cmp(n_resamples=0), ValueError,
                             r"n_resamples must be >= 1, got 0"),
    "n-resamples-float": Case(lambda d: _cmp(n_resamples=10.5), TypeError,
                              r"n_resamples must be an integer, got 10\.5"),
    "alpha-above-one": Case(lambda d: _cmp(alpha=1.5), ValueError,
                            r"alpha must be in \(0, 1\), got 1\.5"),
    "alpha-text": Case(lambda d: _cmp(alpha="5%"), TypeError,
                       r"alpha must be a real number, got '5%'"),
    "min-queries-negative": Case(lambda d: _cmp(min_queries=-1), ValueError,
                                 r"min_queries must be >= 0, got -1"),
    "align-unknown": Case(lambda d: _cmp(align="union"), ValueError,
                          r"align must be 'error' or 'intersect', got 'union'"),
    "random-state-text": Case(lambda d: _cmp(random_state="seed"), TypeError,
                              r"random_state must be None, an int or a numpy Generator, "
                              r"got 'seed'"),
    "random-state-bool": Case(lambda d: _cmp(random_state=True), TypeError,
                              r"random_state must be .*got True"),
    "query-sets-differ": Case(lambda d: _cmp(b=B.drop(index="q7")), ValueError,
                              r"the query sets differ: b lacks 1 of a's queries "
                              r"\(e\.g\. \['q7'\]\).*align='intersect'"),
    "no-query-in-common": Case(lambda d: _cmp(b=B.rename(index=lambda q: q.upper()),
                                              align="intersect"),
                               ValueError, r"a and b have no query in common"),
    "metric-not-on-both": Case(lambda d: _cmp(metrics=["map"]), ValueError,
                               r"metrics \['map'\] are not in both a and b \(both have "
                               r"\['ndcg@10'\]\)"),
    "no-shared-metric": Case(lambda d: _cmp(b=B.rename(columns={"ndcg@10": "map"})), ValueError,
                             r"a and b share no metric column \(a: \['ndcg@10'\], b: \['map'\]\)"),
    "segments-a-dict": Case(lambda d: _cmp(segments={"q1": "head"}), TypeError,
                            r"segments must be a pandas Series \(qid -> segment\), got dict"),
    "segment-column-named-all": Case(
        lambda d: _cmp(a=A.assign(segment=["all"] * 5 + ["x"] * (N - 5))), ValueError,
        r"segments: query 'q0' is in a segment named 'all', the name of the whole-population "
        r"row; rename that segment"),
    "segments-series-named-all": Case(
        lambda d: _cmp(segments=SEG.where(SEG.index != "q20", "all")), ValueError,
        r"segments: query 'q20' is in a segment named 'all'"),
    "segment-labels-disagree": Case(
        lambda d: _cmp(a=A.assign(segment=SEG), b=B.assign(segment=SEG.where(
            SEG.index != "q4", "tail"))), ValueError,
        r"the segment columns of a and b disagree on 1 queries: query 'q4' is 'head' in a but "
        r"'tail' in b; give the segments explicitly"),
    "names-one-label": Case(lambda d: _cmp(names=("base",)), TypeError,
                            r"names must be two labels \(baseline, candidate\), got \('base',\)"),
    "names-a-string": Case(lambda d: _cmp(names="ab"), TypeError,
                           r"names must be two labels .*got 'ab'"),
    "metric-string-not-on-both": Case(lambda d: _cmp(metrics="map@5"), ValueError,
                                      r"metrics \['map@5'\] are not in both a and b"),
    "per-query-path-missing": Case(lambda d: read_per_query(d / "none"), FileNotFoundError,
                                   r"no run folder or per-query CSV at '.*none'"),
    "run-folder-without-values": Case(lambda d: read_per_query(d / "empty_run"),
                                      FileNotFoundError,
                                      r"per_query_test\.csv' not found: the run folder has no "
                                      r"per-query values for split 'test'"),
    "split-unknown": Case(lambda d: read_per_query(d / "empty_run", split="train"), ValueError,
                          r"split must be 'test' or 'valid', got 'train'"),
    "csv-without-qid": Case(lambda d: read_per_query(d / "noqid.csv"), ValueError,
                            r"noqid\.csv': no column 'qid' \(columns: \['query', 'ndcg@10'\]\)"),
    "csv-blank-qid": Case(lambda d: read_per_query(d / "blank.csv"), ValueError,
                          r"blank\.csv', line 3: the qid is missing"),
    "csv-ndcg-above-one": Case(lambda d: read_per_query(d / "big.csv"), ValueError,
                               r"big\.csv': 'ndcg@10' must lie in \[0, 1\] per query; query 'q2' "
                               r"\(line 3\) has 1\.7"),
    "compare-runs-bad-folder": Case(lambda d: compare_runs(d / "none", d / "b.csv",
                                                           out=d / "out"),
                                    FileNotFoundError, r"no run folder or per-query CSV at"),
    "compare-runs-out-a-file": Case(lambda d: compare_runs(d / "a.csv", d / "b.csv",
                                                           out=d / "b.csv"),
                                    ValueError, r"--out: '.*b\.csv' is a file; give a folder"),
}


def _prepare(d: Path) -> None:
    (d / "empty_run").mkdir()
    (d / "noqid.csv").write_text("query,ndcg@10\nq1,0.5\n")
    (d / "big.csv").write_text("qid,ndcg@10\nq1,0.5\nq2,1.7\n")
    (d / "blank.csv").write_text("qid,ndcg@10\nq1,0.5\n,0.7\n")
    A.reset_index().to_csv(d / "a.csv", index=False)
    B.reset_index().to_csv(d / "b.csv", index=False)
    A.assign(segment=SEG).reset_index().to_csv(d / "a_seg.csv", index=False)
    SEG.rename("segment").rename_axis("qid").reset_index().to_csv(d / "seg.csv", index=False)
    (d / "seg_cols.csv").write_text("query,segment\nq1,head\n")
    (d / "seg_dup.csv").write_text("qid,segment\nq1,head\nq2,tail\nq1,tail\n")
    (d / "seg_blank.csv").write_text("qid,segment\nq1,head\n,tail\n")
    (d / "seg_empty.csv").write_text("")
    (d / "seg_dir").mkdir()


def _snapshot(d: Path) -> dict[str, bytes]:
    return {str(p.relative_to(d)): p.read_bytes() for p in sorted(d.rglob("*")) if p.is_file()}


@pytest.mark.parametrize("name", sorted(CASES))
def test_bad_compare_input_is_refused_naming_the_input_and_value(name, tmp_path):
    case = CASES[name]
    _prepare(tmp_path)
    before = _snapshot(tmp_path)
    with pytest.raises(case.exc, match=case.match):
        case.call(tmp_path)
    assert _snapshot(tmp_path) == before and not (tmp_path / "out").exists()


CLI_CASES = [
    # (id, argv after "compare" ({d}: the folder), exit status, message fragment)
    ("segments-missing", ["{d}/a.csv", "{d}/b.csv", "--segments", "{d}/nope.csv"], 1,
     "--segments: file not found: '{d}/nope.csv'"),
    ("segments-folder", ["{d}/a.csv", "{d}/b.csv", "--segments", "{d}/seg_dir"], 1,
     "--segments: '{d}/seg_dir' is a folder"),
    ("segments-lack-column", ["{d}/a.csv", "{d}/b.csv", "--segments", "{d}/seg_cols.csv"], 1,
     "--segments: '{d}/seg_cols.csv' lacks columns ['qid'] (its columns: ['query', 'segment'])"),
    ("segments-duplicate-query", ["{d}/a.csv", "{d}/b.csv", "--segments", "{d}/seg_dup.csv"],
     1, "--segments: '{d}/seg_dup.csv', line 4: query 'q1' appears more than once"),
    ("segments-blank-qid", ["{d}/a.csv", "{d}/b.csv", "--segments", "{d}/seg_blank.csv"], 1,
     "--segments: '{d}/seg_blank.csv', line 3: the qid is missing"),
    ("segments-empty-file", ["{d}/a.csv", "{d}/b.csv", "--segments", "{d}/seg_empty.csv"], 1,
     "--segments: '{d}/seg_empty.csv' is not a qid,segment CSV"),
    ("segment-column-absent", ["{d}/a.csv", "{d}/b.csv", "--segment-column", "market"], 1,
     "--segment-column: column 'market' not in '{d}/a.csv'"),
    ("both-segment-options", ["{d}/a.csv", "{d}/b.csv", "--segments", "{d}/seg.csv",
                              "--segment-column", "segment"], 2,
     "give --segments or --segment-column, not both"),
    ("out-is-a-file", ["{d}/a.csv", "{d}/b.csv", "--out", "{d}/b.csv"], 1,
     "--out: '{d}/b.csv' exists and is not a folder"),
    ("alpha-two", ["{d}/a.csv", "{d}/b.csv", "--alpha", "2"], 1, "alpha must be in (0, 1), got 2"),
    ("resamples-zero", ["{d}/a.csv", "{d}/b.csv", "--n-resamples", "0"], 2,
     "argument --n-resamples: must be >= 1, got 0"),
    ("query-sets-differ", ["{d}/a.csv", "{d}/short.csv"], 1,
     "the query sets differ: b lacks 1 of a's queries (e.g. ['q29'])"),
    ("metric-unknown", ["{d}/a.csv", "{d}/b.csv", "--metrics", "map"], 1,
     "metrics ['map'] are not in both a and b"),
    ("run-a-missing", ["{d}/none", "{d}/b.csv"], 1, "no run folder or per-query CSV at"),
]


@pytest.mark.parametrize("case", CLI_CASES, ids=[c[0] for c in CLI_CASES])
def test_compare_command_refuses_bad_input(case, tmp_path, capsys):
    _, argv, status, fragment = case
    _prepare(tmp_path)
    B.iloc[:-1].reset_index().to_csv(tmp_path / "short.csv", index=False)
    before = _snapshot(tmp_path)
    d = str(tmp_path)
    args = [a.format(d=d) for a in argv]
    if "--out" not in args:
        args += ["--out", f"{d}/out"]
    if "--n-resamples" not in args:
        args += ["--n-resamples", "50"]
    rc = main(["compare", *args])
    text = "".join(capsys.readouterr())
    assert rc == status, text
    assert fragment.format(d=d) in " ".join(text.split()), text
    assert _snapshot(tmp_path) == before and not (tmp_path / "out").exists()


# --------------------------------------------------------------------------- behaviour


def test_a_metric_on_one_side_only_is_said_not_dropped_silently():
    with pytest.warns(UserWarning, match=r"metrics present on one side only are not compared: "
                                         r"'map' \(only in b\)"):
        res = _cmp(b=B.assign(map=0.5))
    assert res.to_frame()["metric"].tolist() == ["ndcg@10"]
    assert any("'map' (only in b)" in note for note in res.notes)
    assert "'map' (only in b)" in res.to_markdown()


def test_agreeing_segment_columns_give_one_row_per_segment_and_the_whole_population():
    res = _cmp(a=A.assign(segment=SEG), b=B.assign(segment=SEG))
    t = res.to_frame()
    assert t["segment"].tolist() == ["all", "head", "tail"]
    assert t["n"].tolist() == [N, 15, 15]
    # the whole-population row equals the direct paired means
    assert t.loc[0, "delta"] == pytest.approx(float((B["ndcg@10"] - A["ndcg@10"]).mean()))


def test_a_killed_compare_write_is_visibly_incomplete(tmp_path, monkeypatch):
    from ltr import _io
    from ltr._io import check_file_set

    files = compare_runs(A, B, n_resamples=50, out=tmp_path / "out").files
    assert set(files) == {"plot", "markdown", "html", "csv", "json"}
    names = set(check_file_set(tmp_path / "out"))
    assert names == {"forest.png", "report.md", "report.html", "comparison.csv",
                     "comparison.json"}
    first = json.loads((tmp_path / "out" / "comparison.json").read_text())
    real = _io.write_atomic
    calls = {"n": 0}

    def killed_mid_set(path: Any, data: Any) -> Any:
        calls["n"] += 1
        if calls["n"] == 3:  # the marker, one file, then the kill
            raise KeyboardInterrupt
        return real(path, data)

    monkeypatch.setattr(_io, "write_atomic", killed_mid_set)
    with pytest.raises(KeyboardInterrupt):
        compare_runs(A, frame(A["ndcg@10"].to_numpy() - 0.2), n_resamples=50,
                     out=tmp_path / "out")
    monkeypatch.setattr(_io, "write_atomic", real)
    # one file is new, the others old: the folder says it is incomplete
    assert (tmp_path / "out" / "INCOMPLETE").is_file()
    with pytest.raises(ValueError, match=r"is incomplete: its writer was interrupted"):
        check_file_set(tmp_path / "out")
    assert json.loads((tmp_path / "out" / "comparison.json").read_text()) == first
    # tampering after a complete write is detected too
    compare_runs(A, B, n_resamples=50, out=tmp_path / "out")
    (tmp_path / "out" / "report.md").write_text("edited")
    with pytest.raises(ValueError, match=r"'report\.md' is missing or differs from manifest"):
        check_file_set(tmp_path / "out")

"""The fast input paths of qrels/run evaluation: TREC files scanned in parallel, object id
columns read in place.  Each path is checked against an independent reference: pytrec_eval's
own parsers and evaluator, Python's ``float``, pyarrow's string buffers, and the same
evaluation from ``str`` columns."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from ltr.evaluation import evaluate
from ltr.evaluation.trec import read_qrels, read_run
from ltr.kernels import _judgments as J
from ltr.kernels import _pyobjects as O

pytrec_eval = pytest.importorskip("pytrec_eval")
pa = pytest.importorskip("pyarrow")

METRICS = {"ndcg@10": "ndcg_cut_10", "map": "map", "mrr": "recip_rank", "precision@5": "P_5",
           "recall@100": "recall_100", "ndcg": "ndcg"}


def collection(seed, n_queries=40, long_ids=False):
    """qrels and run DataFrames (object ids; short and > 16-character ids; some ties)."""
    rng = np.random.default_rng(seed)
    q_rows, r_rows = [], []
    for q in range(n_queries):
        qid = f"query-{q}" if not long_ids else f"msmarco_query_{q:012d}"
        pool = [f"doc_{j}" if not long_ids or j % 2 else f"msmarco_doc_00_{j:09d}"
                for j in rng.permutation(400)[:60]]
        for d in pool[: int(rng.integers(1, 25))]:
            q_rows.append((qid, d, int(rng.integers(0, 4))))
        scores = np.round(rng.normal(size=50), 2)  # two decimals: ties happen
        r_rows += [(qid, d, float(s)) for d, s in zip(rng.permutation(pool)[:50], scores)]
    qrels = pd.DataFrame(q_rows, columns=["qid", "doc_id", "relevance"])
    run = pd.DataFrame(r_rows, columns=["qid", "doc_id", "score"])
    return (qrels.astype({"qid": object, "doc_id": object}),
            run.astype({"qid": object, "doc_id": object}))


def peer(qrels, run):
    q, r = {}, {}
    for a, b, c in qrels.itertuples(index=False):
        q.setdefault(a, {})[b] = int(c)
    for a, b, c in run.itertuples(index=False):
        r.setdefault(a, {})[b] = float(c)
    return pytrec_eval.RelevanceEvaluator(q, set(METRICS.values())).evaluate(r)


def assert_equals_peer(frame, expected):
    assert set(frame.index) == set(expected)
    for qid, values in expected.items():
        for ours, theirs in METRICS.items():
            assert frame.loc[qid, ours] == pytest.approx(values[theirs], abs=1e-12), (qid, ours)


@pytest.mark.parametrize("long_ids", [False, True])
def test_object_id_columns_equal_pytrec_eval_and_the_str_columns(long_ids):
    qrels, run = collection(0, long_ids=long_ids)
    expected = peer(qrels, run)
    got = evaluate(qrels, run, list(METRICS)).to_frame()
    assert_equals_peer(got, expected)
    as_str = evaluate(qrels.astype({"qid": "string[pyarrow]", "doc_id": "string[pyarrow]"}),
                      run.astype({"qid": "string[pyarrow]", "doc_id": "string[pyarrow]"}),
                      list(METRICS)).to_frame()
    np.testing.assert_array_equal(got.to_numpy(), as_str.to_numpy())


def test_object_columns_the_fast_read_refuses_still_agree():
    # non-ASCII ids, a str subclass and ids repeated as one object: the portable path
    qrels, run = collection(1, n_queries=12)

    class Id(str):
        pass

    for frame in (qrels, run):
        frame.loc[frame.index[::7], "doc_id"] = frame.loc[frame.index[::7], "doc_id"] + "\u00e9"
    run.loc[run.index[3], "qid"] = Id(run.loc[run.index[3], "qid"])
    assert O.ascii_views(run["doc_id"].to_numpy()) is None
    assert O.run_starts(run["qid"].to_numpy()) is None
    assert_equals_peer(evaluate(qrels, run, list(METRICS)).to_frame(), peer(qrels, run))


def test_missing_object_ids_are_still_named():
    qrels, run = collection(2, n_queries=5)
    run.loc[run.index[4], "doc_id"] = None
    with pytest.raises(ValueError, match="run row 4: doc_id is missing"):
        evaluate(qrels, run, ["map"])


def test_object_strings_read_in_place_equal_pyarrow_buffers():
    assert O.layout() is not None  # CPython: the in-place read is available
    ids = np.array(["", "a", "q17", "x" * 16, "y" * 17, "msmarco_doc_00_000123", "a"],
                   dtype=object)
    keys = np.empty(ids.shape[0], dtype=np.uint64)
    starts, ends, data = O.ascii_views(ids, keys)
    arr = pa.array(ids, type=pa.large_string())
    ref = np.frombuffer(arr.buffers()[1], dtype=np.int64)
    np.testing.assert_array_equal(ends - starts, np.diff(ref))
    got = b"".join(data[s:e].tobytes() for s, e in zip(starts, ends))
    assert got == np.frombuffer(arr.buffers()[2], dtype=np.uint8)[: ref[-1]].tobytes()
    ref_keys = np.empty(ids.shape[0], dtype=np.uint64)
    J.hash_strings(ref, np.frombuffer(arr.buffers()[2], dtype=np.uint8), ref_keys)
    np.testing.assert_array_equal(keys, ref_keys)
    assert keys[1] == keys[-1] and len(set(keys.tolist())) == ids.shape[0] - 1
    run = np.array(["q1", "q1", "q" + str(1), "q2", "q1", "q1"], dtype=object)  # 3rd: a copy
    np.testing.assert_array_equal(O.run_starts(run), [0, 3, 4])
    assert O.ascii_views(np.array(["a", 1], dtype=object)) is None
    assert O.ascii_views(np.array(["a", np.nan], dtype=object)) is None


def test_trec_files_read_like_pytrec_eval_parsers(tmp_path):
    qrels, run = collection(3)
    rng = np.random.default_rng(3)
    # 17-digit reprs; distinct even in float32 (pytrec_eval ties scores closer than that)
    run["score"] = rng.normal(size=len(run))
    run.loc[run.index[:5], "score"] = [1e-30, -2.5e20, 0.0, 123456789012.25, -0.1]
    qpath, rpath = tmp_path / "qrels.txt", tmp_path / "run.txt"
    seps = [" ", "\t", "  ", " \t "]
    lines = [f"{a}{seps[i % 4]}0 {b}{seps[(i + 1) % 4]}{c}"
             for i, (a, b, c) in enumerate(qrels.itertuples(index=False))]
    qpath.write_text("\n\n".join(lines[:10]) + "\r\n" + "\n".join(lines[10:]) + "\n   \n")
    rpath.write_text("".join(f"{a} Q0 {b} {i + 1} {c!r} tag\n"
                             for i, (a, b, c) in enumerate(run.itertuples(index=False))))
    with open(qpath) as fq, open(rpath) as fr:  # pytrec_eval's parsers reject blank lines
        peer_q = pytrec_eval.parse_qrel([line for line in fq if line.strip()])
        peer_r = pytrec_eval.parse_run(fr)
    q, r = read_qrels(qpath), read_run(rpath)
    assert q["qid"].tolist() == qrels["qid"].tolist() == [a for a in peer_q for _ in peer_q[a]]
    assert q["relevance"].tolist() == [v for d in peer_q.values() for v in d.values()]
    assert r["doc_id"].tolist() == [b for d in peer_r.values() for b in d]
    assert r["score"].tolist() == [v for d in peer_r.values() for v in d.values()]
    assert r["score"].tolist() == run["score"].tolist()
    assert_equals_peer(evaluate(qpath, rpath, list(METRICS)).to_frame(),
                       pytrec_eval.RelevanceEvaluator(peer_q, set(METRICS.values()))
                       .evaluate(peer_r))


def test_regular_and_irregular_whitespace_files_read_alike(tmp_path):
    # one space, or runs of spaces and tabs with trailing whitespace: the same frame
    _, run = collection(4, n_queries=8)
    rows = list(run.itertuples(index=False))
    regular, irregular = tmp_path / "a.txt", tmp_path / "b.txt"
    regular.write_text("".join(f"{a} Q0 {b} 1 {c!r} t\n" for a, b, c in rows))
    irregular.write_text("".join(f"{a}  Q0\t{b} 1 {c!r} t \n" for a, b, c in rows))
    pd.testing.assert_frame_equal(read_run(regular), read_run(irregular))
    assert read_run(regular)["score"].tolist() == run["score"].tolist()


@pytest.mark.parametrize("n_judged", [5, 100])  # insertion sort / merge sort per query
def test_a_repeated_judgment_is_named_by_its_second_row(n_judged):
    # the duplicate check runs inside the judgment sort: rows as a plain loop finds them
    qrels = pd.DataFrame({"qid": np.repeat(np.array(["q1", "q2"], dtype=object), n_judged),
                          "doc_id": np.array([f"d{j}" for j in range(2 * n_judged)],
                                             dtype=object),
                          "relevance": 1})
    qrels.loc[n_judged + 3, "doc_id"] = qrels.loc[n_judged + 1, "doc_id"]
    seen, expected = set(), None
    for i, (a, b) in enumerate(zip(qrels["qid"], qrels["doc_id"])):
        if (a, b) in seen:
            expected = i
            break
        seen.add((a, b))
    run = pd.DataFrame({"qid": ["q1"], "doc_id": ["d0"], "score": [1.0]})
    with pytest.raises(ValueError, match=rf"qrels row {expected}: duplicated \(qid, doc_id\) "
                                         r"= \('q2', 'd"):
        evaluate(qrels, run, ["map"])


def test_runs_grouped_in_another_query_order_equal_pytrec_eval():
    # > 10,000 rows: query ids are coded by blocks; one query's rows come in two blocks
    qrels, run = collection(5, n_queries=300)
    blocks = [g for _, g in run.groupby("qid", sort=False)]
    order = np.random.default_rng(5).permutation(len(blocks))
    parts = [blocks[i] for i in order]
    first = parts[0]
    shuffled = pd.concat([first.iloc[:10]] + parts[1:] + [first.iloc[10:]], ignore_index=True)
    assert len(shuffled) > 10_000
    assert_equals_peer(evaluate(qrels, shuffled, list(METRICS)).to_frame(),
                       peer(qrels, shuffled))
    shuffled.loc[len(shuffled) - 1, "qid"] = None  # a missing id, first of its block
    with pytest.raises(ValueError, match=rf"run row {len(shuffled) - 1}: qid is missing"):
        evaluate(qrels, shuffled, ["map"])


@pytest.mark.parametrize("unranked", [False, True])  # checked in the metric pass / before it
def test_a_repeated_run_document_is_named_by_its_second_row(unranked):
    qrels, run = collection(6, n_queries=30)
    run = run.reset_index(drop=True)
    i = len(run) - 7
    run.loc[i, "doc_id"] = run.loc[i - 2, "doc_id"]
    if unranked:
        run.loc[i, "score"] = -np.inf
    qid, doc = run.loc[i, "qid"], run.loc[i, "doc_id"]
    with pytest.raises(ValueError, match=rf"run row {i}: duplicated \(qid, doc_id\) = "
                                         rf"\('{qid}', '{doc}'\)"):
        evaluate(qrels, run, ["map"])


def test_read_only_and_writable_inputs_share_one_compiled_kernel():
    """The kernels take read-only views of their inputs (``frozen``): a frame whose arrays are
    read-only (pandas copy-on-write, ``np.frombuffer``) reuses the kernels a writable one
    compiled, and both equal pytrec_eval."""
    from ltr.kernels import _rank as R
    from ltr.kernels._cache import frozen

    qrels, run = collection(3)
    expected = peer(qrels, run)
    assert_equals_peer(evaluate(qrels, run, list(METRICS)).to_frame(), expected)
    locked = run.copy()
    scores = locked["score"].to_numpy(copy=True)
    scores.flags.writeable = False
    locked["score"] = pd.Series(scores, index=locked.index, copy=False)
    assert_equals_peer(evaluate(qrels, locked, list(METRICS)).to_frame(), expected)
    for kernel in (R._judged_fast, R._order_run):
        assert kernel.signatures  # both ran: the fast path, and the sort for tied queries
        for signature in kernel.signatures:
            assert not signature[0].mutable, (kernel, signature)  # the scores: read-only
    a = np.arange(3.0)
    view = frozen(a)
    assert not view.flags.writeable and a.flags.writeable and np.shares_memory(a, view)
    assert frozen(view) is view and frozen(None) is None

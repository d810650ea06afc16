"""Benchmark: qrels/run evaluation, ltr vs pytrec_eval (and ranx), from DataFrames and TREC files.

Every row is timed in one run against pytrec_eval fed the fastest way (its
dicts built by a loop over ``.tolist()`` copies of the columns, dict building
included) and printed as a ratio ``ltr / pytrec_eval``:

1. DataFrames with ``str`` id columns (pandas' default string dtype: Arrow-backed
   ``str`` in pandas >= 3, ``string[pyarrow]`` made explicitly on pandas 2);
2. DataFrames with ``object`` id columns (pandas 2's default);
3. reading the TREC qrels and run files: ``ltr.evaluation.trec.read_qrels`` +
   ``read_run`` against ``pytrec_eval.parse_qrel`` + ``parse_run``;
4. evaluating from the TREC files: ``ltr.evaluate(path, path)`` against
   ``parse_qrel`` + ``parse_run`` + ``RelevanceEvaluator.evaluate``.

Each tool goes to the mean of ``ndcg@10, map, mrr, precision@10, recall@100``
(pytrec_eval: ``ndcg_cut_10, map, recip_rank, P_10, recall_100``); ltr's
per-query values are checked against pytrec_eval's first.  The run file's
scores are written with Python's ``repr`` (up to 17 digits, as
``ltr.evaluation.trec.write_run`` does).  ``--ranx`` adds ranx's public path
on the ``str`` frames (slow: about 30 s at full size).

Every tool runs once on a small warm-up set first (numba compilation).

``--read-only`` times row 3 alone: ltr's readers and pytrec_eval's parsers
interleaved, ``--repeat`` times each, best wall and best CPU seconds (process
time, every thread) of each; CPU time is less sensitive to a loaded machine.

Usage::

    python experiments/bench_evaluate.py           # 30,000 queries x 100 docs (< 3 min)
    python experiments/bench_evaluate.py --full    # 100,000 x 100 (the issue's size)
    python experiments/bench_evaluate.py --read-only --repeat 5
"""

from __future__ import annotations

import argparse
import os
import platform
import tempfile
import time
from collections import defaultdict
from pathlib import Path

import numpy as np
import pandas as pd
from _perf import result

from ltr.evaluation import evaluate
from ltr.evaluation.trec import read_qrels, read_run

METRICS = ["ndcg@10", "map", "mrr", "precision@10", "recall@100"]
TREC = ["ndcg_cut_10", "map", "recip_rank", "P_10", "recall_100"]


def make_frames(n_queries, n_docs, n_judged_ret, n_judged_unret, seed=0):
    """Run: n_docs per query from a 1M-document collection; qrels: some retrieved, some not."""
    rng = np.random.default_rng(seed)
    collection = 1_000_000
    docs = rng.integers(0, collection, size=(n_queries, n_docs + n_judged_unret))
    # unique documents per query: offset by a per-query permutation of a stride
    docs = (docs[:, :1] + np.arange(docs.shape[1]) * 7919) % collection
    qids = np.array([f"q{i}" for i in range(n_queries)], dtype=object)
    doc_ids = np.array([f"d{j}" for j in range(collection)], dtype=object)
    run = pd.DataFrame({
        "qid": np.repeat(qids, n_docs),
        "doc_id": doc_ids[docs[:, :n_docs].ravel()],
        "score": rng.normal(size=n_queries * n_docs),
    })
    judged = np.concatenate([docs[:, :n_judged_ret], docs[:, n_docs:]], axis=1)
    n_j = judged.shape[1]
    qrels = pd.DataFrame({
        "qid": np.repeat(qids, n_j),
        "doc_id": doc_ids[judged.ravel()],
        "relevance": rng.integers(0, 4, size=n_queries * n_j),
    })
    return qrels, run


def as_ids(frame, dtype):
    """The frame with its id columns converted to *dtype* (``"str"`` or ``object``)."""
    if dtype == "str":
        default = pd.Series(["a"]).dtype
        dtype = default if isinstance(default, pd.StringDtype) else "string[pyarrow]"
    return frame.astype({"qid": dtype, "doc_id": dtype})


def write_files(qrels, run, folder):
    """TREC qrels and run files of the frames (scores written with repr)."""
    qpath, rpath = Path(folder) / "qrels.txt", Path(folder) / "run.txt"
    q = pd.DataFrame({"q": qrels["qid"], "i": 0, "d": qrels["doc_id"], "r": qrels["relevance"]})
    q.to_csv(qpath, sep=" ", header=False, index=False)
    rank = run.groupby("qid", sort=False).cumcount() + 1
    r = pd.DataFrame({"q": run["qid"], "Q0": "Q0", "d": run["doc_id"], "rank": rank,
                      "s": run["score"], "tag": "bench"})
    r.to_csv(rpath, sep=" ", header=False, index=False)
    return qpath, rpath


def run_ltr(qrels, run):
    return evaluate(qrels, run, METRICS).mean


def pytrec_dicts(qrels, run):
    q = defaultdict(dict)
    for a, b, c in zip(qrels["qid"].tolist(), qrels["doc_id"].tolist(),
                       qrels["relevance"].tolist()):
        q[a][b] = int(c)
    r = defaultdict(dict)
    for a, b, c in zip(run["qid"].tolist(), run["doc_id"].tolist(), run["score"].tolist()):
        r[a][b] = float(c)
    return q, r


def pytrec_means(q, r):
    import pytrec_eval

    per_query = pytrec_eval.RelevanceEvaluator(q, set(TREC)).evaluate(r)
    return {m: float(np.mean([v[m] for v in per_query.values()])) for m in TREC}, per_query


def run_pytrec(qrels, run):
    return pytrec_means(*pytrec_dicts(qrels, run))


def read_ltr(qpath, rpath):
    return read_qrels(qpath), read_run(rpath)


def read_pytrec(qpath, rpath):
    import pytrec_eval

    with open(qpath) as fq, open(rpath) as fr:
        return pytrec_eval.parse_qrel(fq), pytrec_eval.parse_run(fr)


def files_pytrec(qpath, rpath):
    return pytrec_means(*read_pytrec(qpath, rpath))


def run_ranx(qrels, run):
    import ranx

    # ranx asserts object-dtype id columns (pandas 3 stores strings as "str")
    qrels = qrels.astype({"qid": object, "doc_id": object})
    run = run.astype({"qid": object, "doc_id": object})
    rq = ranx.Qrels.from_df(qrels, q_id_col="qid", doc_id_col="doc_id", score_col="relevance")
    rr = ranx.Run.from_df(run, q_id_col="qid", doc_id_col="doc_id", score_col="score")
    return ranx.evaluate(rq, rr, METRICS)


def timed(fn, *args, repeat=1):
    best, out = np.inf, None
    for _ in range(repeat):
        t0 = time.perf_counter()
        out = fn(*args)
        best = min(best, time.perf_counter() - t0)
    return best, out


def read_only(qrels, run, repeat):
    """Row 3 alone: ltr's readers and pytrec_eval's parsers, interleaved, best of *repeat*."""
    with tempfile.TemporaryDirectory() as tmp:
        (Path(tmp) / "small").mkdir()
        read_ltr(*write_files(*make_frames(200, 100, 20, 10, seed=1), Path(tmp) / "small"))
        qpath, rpath = write_files(qrels, run, tmp)
        size = (qpath.stat().st_size + rpath.stat().st_size) / 1e6
        best = {"ltr": [np.inf, np.inf], "peer": [np.inf, np.inf]}
        for _ in range(repeat):
            for name, fn in (("ltr", read_ltr), ("peer", read_pytrec)):
                w0, c0 = time.perf_counter(), time.process_time()
                fn(qpath, rpath)
                w, c = time.perf_counter() - w0, time.process_time() - c0
                best[name] = [min(best[name][0], w), min(best[name][1], c)]
    print(f"\nread TREC files ({size:.0f} MB), best of {repeat} interleaved")
    print("\n| tool | wall s | CPU s |\n|---|---:|---:|")
    print(f"| ltr read_qrels + read_run | {best['ltr'][0]:.3f} | {best['ltr'][1]:.3f} |")
    print(f"| pytrec_eval.parse_qrel + parse_run | {best['peer'][0]:.3f} | {best['peer'][1]:.3f} |")
    print(f"| ltr / pytrec_eval | {best['ltr'][0] / best['peer'][0]:.4f} | "
          f"{best['ltr'][1] / best['peer'][1]:.4f} |")
    result("trec_read", best["ltr"][0] / best["peer"][0])
    print(f"load average {os.getloadavg()[0]:.2f} at end")


def worst_difference(qrels, run, per_query):
    frame = evaluate(qrels, run, METRICS).to_frame()
    worst = 0.0
    for qid, values in list(per_query.items())[:5000]:
        for ours, theirs in zip(METRICS, TREC):
            worst = max(worst, abs(frame.loc[qid, ours] - values[theirs]))
    return worst


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--full", action="store_true",
                        help="100,000 queries (the issue's size) instead of 30,000")
    parser.add_argument("--queries", type=int, default=0, help="queries (overrides --full)")
    parser.add_argument("--ranx", action="store_true", help="also time ranx on the str frames")
    parser.add_argument("--read-only", action="store_true",
                        help="time only the TREC readers against pytrec_eval's parsers")
    parser.add_argument("--repeat", type=int, default=3,
                        help="repetitions of each tool with --read-only (best is kept)")
    args = parser.parse_args(argv)
    n_queries = args.queries or (100_000 if args.full else 30_000)
    qrels, run = make_frames(n_queries, 100, 20, 10)
    print(f"# qrels/run evaluation: {n_queries:,} queries x 100 docs "
          f"({len(run):,} run rows, {len(qrels):,} judgments)")
    print(f"python {platform.python_version()}, pandas {pd.__version__}, {os.cpu_count()} CPUs, "
          f"load average {os.getloadavg()[0]:.2f} at start")
    if args.read_only:
        return read_only(qrels, run, args.repeat)

    small_q, small_r = make_frames(200, 100, 20, 10, seed=1)
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        (Path(tmp) / "small").mkdir()
        sq, sr = write_files(small_q, small_r, Path(tmp) / "small")
        for dtype in ("str", object):  # warm-up: numba compilation
            run_ltr(as_ids(small_q, dtype), as_ids(small_r, dtype))
        run_ltr(sq, sr)
        read_ltr(sq, sr)
        worst = 0.0
        for dtype, label in (("str", "DataFrame, `str` ids"), (object, "DataFrame, `object` ids")):
            q, r = as_ids(qrels, dtype), as_ids(run, dtype)
            t_ltr, _ = timed(run_ltr, q, r, repeat=2)
            t_peer, (_, per_query) = timed(run_pytrec, q, r)
            worst = max(worst, worst_difference(q, r, per_query))
            rows.append((label, t_ltr, "pytrec_eval (.tolist() dicts + evaluate)", t_peer))
            del q, r, per_query
        qpath, rpath = write_files(qrels, run, tmp)
        size = (qpath.stat().st_size + rpath.stat().st_size) / 1e6
        t_ltr, _ = timed(read_ltr, qpath, rpath, repeat=2)
        t_peer, _ = timed(read_pytrec, qpath, rpath)
        rows.append((f"read TREC files ({size:.0f} MB)", t_ltr,
                     "pytrec_eval.parse_qrel + parse_run", t_peer))
        t_ltr, means = timed(run_ltr, qpath, rpath, repeat=2)
        t_peer, (_, per_query) = timed(files_pytrec, qpath, rpath)
        worst = max(worst, worst_difference(qpath, rpath, per_query))
        rows.append(("evaluate from TREC files", t_ltr,
                     "pytrec_eval (parse_qrel + parse_run + evaluate)", t_peer))
        del per_query
    if args.ranx:
        q, r = as_ids(qrels, "str"), as_ids(run, "str")
        run_ranx(small_q, small_r)
        t_ranx, _ = timed(run_ranx, q, r)
        t_ltr, _ = timed(run_ltr, q, r)
        rows.append(("DataFrame, `str` ids", t_ltr, "ranx (from_df + evaluate)", t_ranx))

    print(f"\nmax |ltr - pytrec_eval| over 5,000 queries x 5 metrics, every input: {worst:.2e}")
    print("\n| input | ltr s | peer | peer s | ltr / peer |")
    print("|---|---:|---|---:|---:|")
    for label, t_ltr, peer, t_peer in rows:
        print(f"| {label} | {t_ltr:.2f} | {peer} | {t_peer:.2f} | {t_ltr / t_peer:.3f} |")
    keys = ["qrels_str_ids", "qrels_object_ids", "trec_read", "trec_evaluate", "ranx_str_ids"]
    for key, (_, t_ltr, _, t_peer) in zip(keys, rows):
        result(key, t_ltr / t_peer)
    print(f"\nmeans: {', '.join(f'{k}={v:.4f}' for k, v in means.items())}")
    print(f"load average {os.getloadavg()[0]:.2f} at end")


if __name__ == "__main__":
    main()

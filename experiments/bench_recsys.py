"""Speed of ``ltr.evaluation.recsys.evaluate`` against the usual numpy pipeline on a score matrix.

The numpy pipeline, per batch of users: mask the excluded (training) items
with ``-inf``, ``np.argsort`` each row and ``np.take_along_axis`` the top 20,
gather the held-out relevance from the CSR (``toarray`` of the batch), and
compute nDCG@10 (ideal DCG from every relevant item) and recall@20.  Both
paths compute the same two metrics; values are compared on tie-free scores.

Usage::

    python experiments/bench_recsys.py            # 20,000 users x 5,000 items
    python experiments/bench_recsys.py --quick    # 2,000 users x 2,000 items
"""

from __future__ import annotations

import argparse
import os
import time

import numpy as np
import scipy.sparse as sp

from ltr.evaluation.recsys import evaluate


def make_data(n_users: int, n_items: int, n_train: int, n_test: int, seed: int = 0):
    rng = np.random.default_rng(seed)
    scores = rng.random((n_users, n_items), dtype=np.float32)
    picks = np.argsort(rng.random((n_users, n_items), dtype=np.float32), axis=1)
    picks = picks[:, : n_train + n_test]
    rows = np.repeat(np.arange(n_users), n_train)
    train = sp.csr_matrix((np.ones(rows.size), (rows, picks[:, :n_train].ravel())),
                          shape=(n_users, n_items))
    rows = np.repeat(np.arange(n_users), n_test)
    grades = rng.integers(1, 4, rows.size).astype(np.float64)
    test = sp.csr_matrix((grades, (rows, picks[:, n_train:].ravel())), shape=(n_users, n_items))
    return scores, test, train


def numpy_pipeline(scores, test, train, batch_size: int = 4096):
    n_users = scores.shape[0]
    discount = 1.0 / np.log2(np.arange(2, 12))
    ndcg = np.empty(n_users)
    recall = np.empty(n_users)
    for start in range(0, n_users, batch_size):
        stop = min(n_users, start + batch_size)
        s = np.array(scores[start:stop])  # a copy, float32 kept
        s[train[start:stop].toarray() > 0] = -np.inf
        order = np.argsort(-s, axis=1)[:, :20]
        rel = test[start:stop].toarray()
        top = np.take_along_axis(rel, order, axis=1)
        dcg = (top[:, :10] * discount).sum(axis=1)
        ideal = (-np.sort(-rel, axis=1)[:, :10] * discount).sum(axis=1)
        n_rel = (rel >= 1).sum(axis=1)
        with np.errstate(invalid="ignore", divide="ignore"):
            ndcg[start:stop] = np.where(ideal > 0, dcg / ideal, np.nan)
            recall[start:stop] = np.where(n_rel > 0, (top >= 1).sum(axis=1) / n_rel, np.nan)
    return ndcg, recall


def best_of(fn, repeat: int):
    best = np.inf
    out = None
    for _ in range(repeat):
        t0 = time.perf_counter()
        out = fn()
        best = min(best, time.perf_counter() - t0)
    return best, out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="2,000 users x 2,000 items")
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    n_users, n_items = (2_000, 2_000) if args.quick else (20_000, 5_000)
    scores, test, train = make_data(n_users, n_items, n_train=50, n_test=10)
    metrics = ["ndcg@10", "recall@20"]

    # compile (numba caches to disk; the first call in a fresh environment compiles)
    t0 = time.perf_counter()
    evaluate(scores[:64], test[:64], metrics, exclude=train[:64])
    warm = time.perf_counter() - t0

    t_np, (ndcg, recall) = best_of(lambda: numpy_pipeline(scores, test, train), args.repeat)
    t_ltr, res = best_of(lambda: evaluate(scores, test, metrics, exclude=train), args.repeat)
    frame = res.to_frame()
    diff = max(float(np.nanmax(np.abs(frame["ndcg@10"].to_numpy() - ndcg))),
               float(np.nanmax(np.abs(frame["recall@20"].to_numpy() - recall))))
    print(f"{n_users:,} users x {n_items:,} items, float32 scores, 50 excluded + 10 held-out "
          f"items per user; cpus={os.cpu_count()}, best of {args.repeat}")
    print(f"first call (compile or cache load): {warm:.2f} s")
    print(f"numpy pipeline (argsort + take_along_axis): {t_np:.3f} s")
    print(f"ltr.evaluation.recsys.evaluate:                        {t_ltr:.3f} s")
    print(f"ratio ltr / numpy: {t_ltr / t_np:.3f}  (speed-up {t_np / t_ltr:.1f}x)")
    print(f"max |difference| of nDCG@10 and recall@20: {diff:.2e}")


if __name__ == "__main__":
    main()

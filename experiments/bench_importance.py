"""Permutation ΔnDCG importance: ``ltr.inspection`` vs scikit-learn, same numbers, one run.

Full run (136 features x 5 repeats on ``make_ranking(10000)``, about 1.2 M rows,
100-tree LightGBM ranker trained on a separate ``make_ranking(2000, random_state=1)``)::

    python experiments/bench_importance.py

Smoke run (fewer queries and features)::

    python experiments/bench_importance.py --quick

scikit-learn gets a scorer computing the same grouped nDCG@10 with
:func:`ltr.metrics.ndcg`; the script asserts that both importance matrices are
equal (to 1e-12), then prints the timings and the ratio ours / sklearn.
"""

from __future__ import annotations

import argparse
import os
import platform
import sys
import time

import lightgbm as lgb
import numpy as np
import sklearn
from sklearn.inspection import permutation_importance as sk_permutation_importance

from ltr.inspection import permutation_importance
from ltr.metrics import ndcg
from ltr.synthetic import make_ranking


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="300 queries, 68 features, 3 repeats")
    parser.add_argument("--queries", type=int, default=None)
    parser.add_argument("--features", type=int, default=None)
    parser.add_argument("--repeats", type=int, default=None)
    parser.add_argument("--trees", type=int, default=100)
    parser.add_argument("--threads", type=int, default=2, help="LightGBM threads (train and predict)")
    parser.add_argument("--k", type=int, default=10)
    args = parser.parse_args(argv)
    n_queries = args.queries or (300 if args.quick else 10_000)
    n_features = args.features or (68 if args.quick else 136)
    args.repeats = args.repeats or (3 if args.quick else 5)

    t0 = time.perf_counter()
    data = make_ranking(n_queries, n_features=n_features, random_state=0)
    train = make_ranking(max(200, n_queries // 5), n_features=n_features, random_state=1)
    t_data = time.perf_counter() - t0
    t0 = time.perf_counter()
    model = lgb.LGBMRanker(
        n_estimators=args.trees, num_leaves=31, learning_rate=0.1, n_jobs=args.threads,
        random_state=0, verbose=-1,
    )
    model.fit(train.X, train.y, group=np.diff(train.offsets))
    t_train = time.perf_counter() - t0
    X, y, qid, k = data.X, data.y, data.qid, args.k

    def scorer(estimator, X_, y_):  # the equivalent scikit-learn scorer
        return float(ndcg(y_, estimator.predict(X_), qid=qid, k=k))

    # Warm the numba kernels (nDCG and our tree walks; cached on disk after the first
    # run) so neither side pays compilation inside the timing.
    float(ndcg(y[:1000], model.predict(X[:1000]), qid=qid[:1000], k=k))
    permutation_importance(model, X[:1000], y[:1000], qid=qid[:1000], k=k, n_repeats=1,
                           features=[0], progress=False)

    t0 = time.perf_counter()
    ours = permutation_importance(model, X, y, qid=qid, k=k, n_repeats=args.repeats,
                                  random_state=0, progress=False)
    t_ours = time.perf_counter() - t0
    print(f"[progress] data {t_data:.1f} s, training {t_train:.1f} s, ours {t_ours:.2f} s "
          f"({ours.n_rows_predicted} rows re-predicted); running scikit-learn ...", flush=True)
    t0 = time.perf_counter()
    theirs = sk_permutation_importance(model, X, y, scoring=scorer, n_repeats=args.repeats,
                                       random_state=0)
    t_sk = time.perf_counter() - t0

    diff = float(np.max(np.abs(ours.importances - theirs.importances)))
    assert diff <= 1e-12, f"importances differ from scikit-learn's by {diff}"
    assert abs(ours.baseline - scorer(model, X, y)) <= 1e-12

    n_total = X.shape[1] * args.repeats * X.shape[0]
    ratio = t_ours / t_sk
    print(f"# permutation importance: ltr vs scikit-learn {sklearn.__version__}")
    print()
    print(f"command: python experiments/bench_importance.py {' '.join(argv or sys.argv[1:])}".rstrip())
    print(f"data: make_ranking({n_queries}, n_features={n_features}) -> {X.shape[0]} rows x "
          f"{X.shape[1]} features ({X.dtype}), {data.n_queries} queries; built in {t_data:.1f} s")
    print(f"model: LGBMRanker({args.trees} trees, 31 leaves, n_jobs={args.threads}) trained on "
          f"make_ranking({train.n_queries}, random_state=1) in {t_train:.1f} s")
    print(f"machine: {platform.processor() or platform.machine()}, {os.cpu_count()} cpus "
          "(shared with other jobs: timings are noisy)")
    print(f"baseline nDCG@{k}: {ours.baseline:.6f}; max |ours - sklearn| = {diff:.1e} (asserted <= 1e-12)")
    print(f"features with nonzero importance: {int(np.sum(ours.importances_mean != 0))} of "
          f"{X.shape[1]}; rows re-predicted: {ours.n_rows_predicted} of {n_total} "
          f"({ours.n_rows_predicted / n_total:.1%})")
    print()
    print("| implementation | seconds | ratio vs sklearn |")
    print("|---|---|---|")
    print(f"| ltr.inspection.permutation_importance | {t_ours:.2f} | {ratio:.3f} |")
    print(f"| sklearn.inspection.permutation_importance | {t_sk:.2f} | 1.000 |")
    print()
    print(f"ratio (ours / sklearn) = {ratio:.3f} (target <= 0.5); speed-up {1 / ratio:.2f}x")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

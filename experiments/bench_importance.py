"""Permutation ΔnDCG importance: ``ltr.inspection`` vs scikit-learn, same numbers, one run.

Full run (136 features x 5 repeats on ``make_ranking(10000)``, about 1.2 M rows,
100-tree LightGBM ranker trained on a separate ``make_ranking(2000, random_state=1)``)::

    python experiments/bench_importance.py

Smoke run (fewer queries and features)::

    python experiments/bench_importance.py --quick

scikit-learn gets a scorer computing the same grouped nDCG@10 with
:func:`ltr.metrics.ndcg`; the script asserts that both importance matrices are
equal (to 1e-12), then prints the timings and the ratio ours / sklearn.  With
``--reps N`` both sides run N times, interleaved (ours first on even
repetitions, scikit-learn first on odd ones), and the ratio is of the medians.
It also times the nDCG calls alone (one per feature and repeat, as ours makes
them), the floor that rescoring cannot go below.  ``--engine xgboost`` uses an
``XGBRanker`` (100 trees, depth 6) instead.
"""

from __future__ import annotations

import argparse
import os
import platform
import statistics
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
    parser.add_argument("--reps", type=int, default=1, help="interleaved repetitions (medians)")
    parser.add_argument("--engine", choices=["lightgbm", "xgboost"], default="lightgbm")
    args = parser.parse_args(argv)
    n_queries = args.queries or (300 if args.quick else 10_000)
    n_features = args.features or (68 if args.quick else 136)
    args.repeats = args.repeats or (3 if args.quick else 5)

    t0 = time.perf_counter()
    data = make_ranking(n_queries, n_features=n_features, random_state=0)
    train = make_ranking(max(200, n_queries // 5), n_features=n_features, random_state=1)
    t_data = time.perf_counter() - t0
    t0 = time.perf_counter()
    if args.engine == "xgboost":
        import xgboost as xgb

        model = xgb.XGBRanker(n_estimators=args.trees, max_depth=6, learning_rate=0.1,
                              n_jobs=args.threads, random_state=0)
        model.fit(train.X, train.y, qid=train.qid)
        model_desc = f"XGBRanker({args.trees} trees, depth 6, n_jobs={args.threads})"
    else:
        model = lgb.LGBMRanker(
            n_estimators=args.trees, num_leaves=31, learning_rate=0.1, n_jobs=args.threads,
            random_state=0, verbose=-1,
        )
        model.fit(train.X, train.y, group=np.diff(train.offsets))
        model_desc = f"LGBMRanker({args.trees} trees, 31 leaves, n_jobs={args.threads})"
    t_train = time.perf_counter() - t0
    X, y, qid, k = data.X, data.y, data.qid, args.k

    def scorer(estimator, X_, y_):  # the equivalent scikit-learn scorer
        return float(ndcg(y_, estimator.predict(X_), qid=qid, k=k))

    # Warm the numba kernels (nDCG and our tree walks; cached on disk after the first
    # run) so neither side pays compilation inside the timing.
    float(ndcg(y[:1000], model.predict(X[:1000]), qid=qid[:1000], k=k))
    permutation_importance(model, X[:1000], y[:1000], qid=qid[:1000], k=k, n_repeats=1,
                           features=[0], progress=False)

    def run_ours():
        return permutation_importance(model, X, y, qid=qid, k=k, n_repeats=args.repeats,
                                      random_state=0, progress=False)

    def run_sklearn():
        return sk_permutation_importance(model, X, y, scoring=scorer, n_repeats=args.repeats,
                                         random_state=0)

    times: dict[str, list[float]] = {"ours": [], "sklearn": []}
    ours = theirs = None
    for rep in range(args.reps):
        order = [("ours", run_ours), ("sklearn", run_sklearn)]
        for name, fn in order if rep % 2 == 0 else order[::-1]:
            t0 = time.perf_counter()
            out = fn()
            times[name].append(time.perf_counter() - t0)
            if name == "ours":
                ours = out
            else:
                theirs = out
            print(f"[progress] repetition {rep + 1}/{args.reps}: {name} {times[name][-1]:.2f} s",
                  file=sys.stderr, flush=True)
        diff = float(np.max(np.abs(ours.importances - theirs.importances)))
        assert diff <= 1e-12, f"importances differ from scikit-learn's by {diff}"
    assert abs(ours.baseline - scorer(model, X, y)) <= 1e-12
    t_ours = statistics.median(times["ours"])
    t_sk = statistics.median(times["sklearn"])

    # The nDCG floor: one grouped nDCG call per feature and repeat, on these rows.
    scores = model.predict(X).astype(np.float64)
    n_eval = int(np.sum(ours.importances_mean != 0)) * args.repeats  # features evaluated
    n_eval = max(n_eval, 1)
    samples = []
    for _ in range(5):
        t0 = time.perf_counter()
        for _ in range(20):
            ndcg(y, scores, offsets=data.offsets, k=k)
        samples.append((time.perf_counter() - t0) / 20)
    t_ndcg_call = statistics.median(samples)
    t_ndcg = t_ndcg_call * n_eval

    n_total = X.shape[1] * args.repeats * X.shape[0]
    ratio = t_ours / t_sk
    print(f"# permutation importance: ltr vs scikit-learn {sklearn.__version__}")
    print()
    print(f"command: python experiments/bench_importance.py {' '.join(argv or sys.argv[1:])}".rstrip())
    print(f"data: make_ranking({n_queries}, n_features={n_features}) -> {X.shape[0]} rows x "
          f"{X.shape[1]} features ({X.dtype}), {data.n_queries} queries; built in {t_data:.1f} s")
    print(f"model: {model_desc} trained on "
          f"make_ranking({train.n_queries}, random_state=1) in {t_train:.1f} s")
    print(f"machine: {platform.processor() or platform.machine()}, {os.cpu_count()} cpus "
          "(shared with other jobs: timings are noisy)")
    print(f"baseline nDCG@{k}: {ours.baseline:.6f}; max |ours - sklearn| = {diff:.1e} (asserted <= 1e-12)")
    print(f"features with nonzero importance: {int(np.sum(ours.importances_mean != 0))} of "
          f"{X.shape[1]}; rows re-predicted: {ours.n_rows_predicted} of {n_total} "
          f"({ours.n_rows_predicted / n_total:.1%}); prediction: {ours.prediction}")
    print(f"load average at the end: {os.getloadavg()[0]:.2f} (1 min)")
    print()
    print(f"| implementation | median seconds ({args.reps} interleaved) | all | ratio vs sklearn |")
    print("|---|---|---|---|")
    print(f"| ltr.inspection.permutation_importance | {t_ours:.2f} | "
          f"{', '.join(f'{t:.2f}' for t in times['ours'])} | {ratio:.3f} |")
    print(f"| sklearn.inspection.permutation_importance | {t_sk:.2f} | "
          f"{', '.join(f'{t:.2f}' for t in times['sklearn'])} | 1.000 |")
    print()
    per_rep = [a / b for a, b in zip(times["ours"], times["sklearn"])]
    print(f"ratio of medians (ours / sklearn) = {ratio:.3f} (target <= 0.15); speed-up "
          f"{1 / ratio:.2f}x; per repetition: {', '.join(f'{r:.3f}' for r in per_rep)}")
    print(f"nDCG alone: {t_ndcg_call * 1e3:.2f} ms per call x {n_eval} calls (features with "
          f"nonzero importance x repeats) = {t_ndcg:.2f} s, {t_ndcg / t_ours:.0%} of ours; "
          f"as a ratio to sklearn: {t_ndcg / t_sk:.3f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

"""Permutation ΔnDCG importance: ``ltr.inspection`` vs scikit-learn, same numbers, one run.

Default run (about 1-2 minutes on a quiet 2-core machine): both engines on the
small bench set, ``make_ranking(300, n_features=68)`` (36,841 rows), 3 permutation
repeats, 3 interleaved repetitions::

    python experiments/bench_importance.py

The large bench set, ``make_ranking(1000, n_features=136)`` (119,003 rows), 5
repeats, one repetition per engine (about 5 minutes on a quiet machine, most of
it scikit-learn's side)::

    python experiments/bench_importance.py --large

Each model has 100 trees (LightGBM: ``LGBMRanker``, 31 leaves; XGBoost:
``XGBRanker``, depth 6), trained with 2 threads on a separate
``make_ranking(max(200, n_queries // 5), random_state=1)``.  scikit-learn gets a
scorer computing the same grouped nDCG@10 with :func:`ltr.metrics.ndcg`; the
script asserts that both importance matrices are equal (to 1e-12), then prints
wall and CPU seconds and the ratios ours / sklearn.  With ``--reps N`` both
sides run N times, interleaved (ours first on even repetitions, scikit-learn
first on odd ones), and the ratio is of the medians.  It also times the nDCG
calls alone (one per feature and repeat, as both sides make them), a floor that
rescoring cannot go below.  The table of the run replaces the "latest run"
section of ``experiments/results/importance_speed.md`` (``--no-write``: print only).
"""

from __future__ import annotations

import argparse
import os
import platform
import statistics
import sys
import time
from pathlib import Path

import lightgbm as lgb
import numpy as np
import sklearn
from _perf import result
from sklearn.inspection import permutation_importance as sk_permutation_importance

from ltr._io import write_atomic
from ltr.inspection import permutation_importance
from ltr.metrics import ndcg
from ltr.synthetic import make_ranking

RESULTS = Path(__file__).parent / "results" / "importance_speed.md"
BEGIN, END = "<!-- bench_importance: latest run -->", "<!-- /bench_importance -->"


def _model(engine: str, train, trees: int, threads: int):
    if engine == "xgboost":
        import xgboost as xgb

        model = xgb.XGBRanker(n_estimators=trees, max_depth=6, learning_rate=0.1,
                              n_jobs=threads, random_state=0)
        model.fit(train.X, train.y, qid=train.qid)
        return model, f"XGBRanker({trees} trees, depth 6, n_jobs={threads})"
    model = lgb.LGBMRanker(n_estimators=trees, num_leaves=31, learning_rate=0.1, n_jobs=threads,
                           random_state=0, verbose=-1)
    model.fit(train.X, train.y, group=np.diff(train.offsets))
    return model, f"LGBMRanker({trees} trees, 31 leaves, n_jobs={threads})"


def run_case(engine: str, n_queries: int, n_features: int, repeats: int, reps: int,
             trees: int = 100, threads: int = 2, k: int = 10) -> dict:
    """Time ours and scikit-learn's importance on one set; assert equal numbers."""
    data = make_ranking(n_queries, n_features=n_features, random_state=0)
    train = make_ranking(max(200, n_queries // 5), n_features=n_features, random_state=1)
    model, desc = _model(engine, train, trees, threads)
    X, y, qid = data.X, data.y, data.qid

    def scorer(estimator, X_, y_):  # the equivalent scikit-learn scorer
        return float(ndcg(y_, estimator.predict(X_), qid=qid, k=k))

    # Warm the numba kernels (cached on disk after the first run) outside the timing; on
    # the whole set, as a job this size is rescored, not predicted in full (small jobs are).
    permutation_importance(model, X, y, qid=qid, k=k, n_repeats=1, progress=False)

    def run_ours():
        return permutation_importance(model, X, y, qid=qid, k=k, n_repeats=repeats,
                                      random_state=0, progress=False)

    def run_sklearn():
        return sk_permutation_importance(model, X, y, scoring=scorer, n_repeats=repeats,
                                         random_state=0)

    wall: dict[str, list[float]] = {"ours": [], "sklearn": []}
    cpu: dict[str, list[float]] = {"ours": [], "sklearn": []}
    out: dict = {}
    for rep in range(reps):
        order = [("ours", run_ours), ("sklearn", run_sklearn)]
        for name, fn in order if rep % 2 == 0 else order[::-1]:
            c0, t0 = time.process_time(), time.perf_counter()
            out[name] = fn()
            wall[name].append(time.perf_counter() - t0)
            cpu[name].append(time.process_time() - c0)
            print(f"[progress] {engine} {n_queries}x{n_features} repetition {rep + 1}/{reps}: "
                  f"{name} {wall[name][-1]:.2f} s", file=sys.stderr, flush=True)
        diff = float(np.max(np.abs(out["ours"].importances - out["sklearn"].importances)))
        assert diff <= 1e-12, f"importances differ from scikit-learn's by {diff}"
    assert abs(out["ours"].baseline - scorer(model, X, y)) <= 1e-12

    scores = model.predict(X).astype(np.float64)
    samples = []
    for _ in range(5):
        t0 = time.perf_counter()
        for _ in range(10):
            ndcg(y, scores, offsets=data.offsets, k=k)
        samples.append((time.perf_counter() - t0) / 10)
    n_calls = X.shape[1] * repeats
    med = {s: statistics.median(wall[s]) for s in wall}
    med_cpu = {s: statistics.median(cpu[s]) for s in cpu}
    return {
        "engine": engine, "set": f"{n_queries} q x {n_features} f", "rows": X.shape[0],
        "repeats": repeats, "reps": reps, "model": desc, "diff": diff,
        "wall": wall, "cpu": cpu, "ratio": med["ours"] / med["sklearn"],
        "ratio_cpu": med_cpu["ours"] / med_cpu["sklearn"], "med": med, "med_cpu": med_cpu,
        "ndcg_floor": statistics.median(samples) * n_calls / med["sklearn"],
        "prediction": out["ours"].prediction,
        "rescored": out["ours"].n_rows_predicted / (X.shape[0] * n_calls),
    }


def _table(results: list[dict], command: str, load: tuple[float, float]) -> list[str]:
    lines = [
        (f"command: `{command}`; scikit-learn {sklearn.__version__}, LightGBM {lgb.__version__}"
        f"; {platform.processor() or platform.machine()}, {os.cpu_count()} CPUs; load average "
        f"(1 min) {load[0]:.1f} at the start, {load[1]:.1f} at the end."),
        "",
        ("| engine | set (rows) | repeats | ours s (each) | sklearn s (each) | ratio (wall) "
        "| ratio (CPU s) | nDCG floor | rows rescored |"),
        "|---|---|---:|---|---|---:|---:|---:|---:|",
    ]
    for r in results:
        w = r["wall"]
        lines.append(
            f"| {r['engine']} | {r['set']} ({r['rows']:,}) | {r['repeats']} | "
            f"{', '.join(f'{t:.2f}' for t in w['ours'])} | "
            f"{', '.join(f'{t:.2f}' for t in w['sklearn'])} | **{r['ratio']:.3f}** | "
            f"{r['med_cpu']['ours']:.1f} / {r['med_cpu']['sklearn']:.1f} = "
            f"{r['ratio_cpu']:.3f} | {r['ndcg_floor']:.3f} | {r['rescored']:.1%} |")
    lines += [
        "",
        ("Ratios are of the medians over the interleaved repetitions; every repetition "
        "asserted max |ours - sklearn| <= 1e-12 (max seen: "
        f"{max(r['diff'] for r in results):.1e}).  CPU s: process CPU time of each side "
        "(both run threads).  nDCG floor: the nDCG calls alone as a ratio to scikit-learn's "
        f"time.  Ours predicted by: {results[0]['prediction']}."),
    ]
    return lines


def _write(lines: list[str]) -> None:
    text = RESULTS.read_text() if RESULTS.exists() else "# Permutation importance\n"
    block = "\n".join([BEGIN, "## Latest run of experiments/bench_importance.py", "", *lines,
                       END])
    if BEGIN in text and END in text:
        head, rest = text.split(BEGIN, 1)
        text = head + block + rest.split(END, 1)[1]
    else:
        title, _, body = text.partition("\n")
        text = f"{title}\n\n{block}\n{body}"
    write_atomic(RESULTS, text)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--large", action="store_true",
                        help="the 1,000-query x 136-feature set, 5 repeats, 1 repetition")
    parser.add_argument("--engine", choices=["lightgbm", "xgboost", "both"], default="both")
    parser.add_argument("--queries", type=int, default=None)
    parser.add_argument("--features", type=int, default=None)
    parser.add_argument("--repeats", type=int, default=None, help="permutation repeats")
    parser.add_argument("--reps", type=int, default=None, help="interleaved repetitions")
    parser.add_argument("--trees", type=int, default=100)
    parser.add_argument("--threads", type=int, default=2, help="engine threads")
    parser.add_argument("--no-write", action="store_true", help="do not update the results file")
    args = parser.parse_args(argv)
    n_queries = args.queries or (1000 if args.large else 300)
    n_features = args.features or (136 if args.large else 68)
    repeats = args.repeats or (5 if args.large else 3)
    reps = args.reps or (1 if args.large else 3)
    engines = ["lightgbm", "xgboost"] if args.engine == "both" else [args.engine]
    load0 = os.getloadavg()[0]
    results = [run_case(e, n_queries, n_features, repeats, reps, trees=args.trees,
                        threads=args.threads) for e in engines]
    command = ("python experiments/bench_importance.py "
               + " ".join(argv if argv is not None else sys.argv[1:])).rstrip()
    lines = _table(results, command, (load0, os.getloadavg()[0]))
    print("\n".join(lines))
    for engine, r in zip(engines, results):
        result(f"importance_{engine}_{n_queries}x{n_features}", r["ratio"])
    if not args.no_write:
        _write(lines)
        print(f"wrote {RESULTS}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

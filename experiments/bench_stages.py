"""Cost of a staged native schedule: 3 stages of k vs the same rounds at constant k.

A schedule ``Steps([(5, 100), (10, 100), (20, 100)])`` trains three continued
engine trainings (the native objective rebuilt for each stage's ``k``); a
constant ``k=20`` for 300 rounds trains one.  The difference is the price of
stage boundaries (model hand-over, init scores, any per-stage data setup).
Both run in one process on ``make_ranking`` synthetic data (MSLR-shaped, 136
features), interleaved ``--reps`` times, medians reported, with an eval set
recorded every round (nDCG@10, the engine's convention).

Usage::

    python experiments/bench_stages.py                 # LightGBM, 300 queries
    python experiments/bench_stages.py --engine xgboost
    python experiments/bench_stages.py --quick         # smoke run
"""

from __future__ import annotations

import argparse
import os
import platform
import statistics
import time
from collections.abc import Callable

import numpy as np

from ltr.engines import get_adapter, train
from ltr.objectives.schedules import Steps
from ltr.synthetic import make_ranking

STEPS = [(5, 100), (10, 100), (20, 100)]


def _time(fn: Callable[[], None]) -> float:
    start = time.perf_counter()
    fn()
    return time.perf_counter() - start


def main(argv: list[str] | None = None) -> None:
    """Time a 3-stage native schedule against constant k and print the ratio."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--engine", default="lightgbm", choices=["lightgbm", "xgboost"])
    parser.add_argument("--queries", type=int, default=300)
    parser.add_argument("--reps", type=int, default=3)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--quick", action="store_true")
    args = parser.parse_args(argv)
    steps = [(k, 10) for k, _ in STEPS] if args.quick else STEPS
    n_queries = 200 if args.quick else args.queries
    rounds = sum(r for _, r in steps)

    data = make_ranking(n_queries + n_queries // 5, random_state=0)
    tr = data.subset(np.arange(n_queries))
    te = data.subset(np.arange(n_queries, n_queries + n_queries // 5))
    params = ({"num_leaves": 63} if args.engine == "lightgbm" else {"max_depth": 6})
    common = {"engine": args.engine, "params": params, "n_jobs": args.threads,
              "eval_sets": [("test", te.X, te.y, te.offsets)], "eval_at": (10,)}

    def staged() -> None:
        train(tr.X, tr.y, tr.offsets, schedule=Steps(steps), **common)

    def constant() -> None:
        train(tr.X, tr.y, tr.offsets, k=steps[-1][0], num_boost_round=rounds, **common)

    times: dict[str, list[float]] = {"staged": [], "constant": []}
    staged()  # warm-up: numba compilation, page cache
    for _ in range(args.reps):
        times["constant"].append(_time(constant))
        times["staged"].append(_time(staged))
    med = {key: statistics.median(v) for key, v in times.items()}
    ratio = med["staged"] / med["constant"]
    print(f"# staged native schedule vs constant k ({args.engine})")
    print()
    print(f"{tr.X.shape[0]:,} rows x {tr.X.shape[1]} features ({n_queries:,} queries), "
          f"eval set {te.X.shape[0]:,} rows; {rounds} rounds; {args.threads} threads; "
          f"{args.reps} reps (median); {args.engine} {get_adapter(args.engine).version()}, "
          f"Python {platform.python_version()}, {os.cpu_count()} CPUs.")
    print()
    print("| run | median s | all runs s |")
    print("|---|---:|---|")
    print(f"| constant k={steps[-1][0]}, {rounds} rounds | {med['constant']:.2f} | "
          f"{', '.join(f'{t:.2f}' for t in times['constant'])} |")
    print(f"| Steps({steps}) | {med['staged']:.2f} | "
          f"{', '.join(f'{t:.2f}' for t in times['staged'])} |")
    print()
    print(f"ratio staged / constant: **{ratio:.3f}**")


if __name__ == "__main__":
    main()

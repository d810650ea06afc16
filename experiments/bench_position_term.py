"""Seconds per objective call: LambdaRank with the position term vs plain, in one run.

On ``make_ranking`` synthetic data (~120 documents per query, positions a
random display order per query), one objective call per round as the
training makes it (gradients and, for the debiasing objectives, their state
update): plain ``LambdaRankObjective(k=20)``, the same with
``position_term=True`` (and ``position_regularization=0.1``), with
``unbiased=True``, and with both.  Calls are interleaved (background load
hits all alike); the median over ``--reps`` calls is reported with the ratio
to plain.

Usage::

    python experiments/bench_position_term.py           # 2,000 queries, ~1 min on 2 cores
    python experiments/bench_position_term.py --queries 200 --reps 5   # smoke run

Writes ``experiments/results/position_term_speed.md``.
"""

from __future__ import annotations

import argparse
import os
import platform
import statistics
import time
from pathlib import Path

import numpy as np

from ltr._io import write_atomic
from ltr.objectives import LambdaRankObjective
from ltr.synthetic import make_ranking

RESULTS = Path(__file__).resolve().parent / "results"
CONFIGS = {
    "plain": {},
    "position_term": {"position_term": True, "position_regularization": 0.1,
                      "position_learning_rate": 0.1},
    "unbiased": {"unbiased": True},
    "unbiased + position_term": {"unbiased": True, "position_term": True,
                                 "position_regularization": 0.1,
                                 "position_learning_rate": 0.1},
}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--queries", type=int, default=2000)
    parser.add_argument("--reps", type=int, default=15)
    args = parser.parse_args()

    data = make_ranking(args.queries, n_features=4, random_state=0)
    rng = np.random.default_rng(0)
    pos = np.empty(data.n_rows, dtype=np.int64)
    for q in range(data.n_queries):
        s, e = data.offsets[q], data.offsets[q + 1]
        pos[s:e] = rng.permutation(e - s) + 1
    objs = {name: LambdaRankObjective(k=20, **kw) for name, kw in CONFIGS.items()}
    times: dict[str, list[float]] = {name: [] for name in CONFIGS}
    scores = rng.normal(size=data.n_rows)
    for rep in range(args.reps + 1):  # the first call of each compiles / warms the caches
        for name, obj in objs.items():
            kw = {} if name == "plain" else {"position": pos, "update_bias": True}
            t0 = time.perf_counter()
            obj.gradients(scores, data.y, data.offsets, rep, **kw)
            if rep:
                times[name].append(time.perf_counter() - t0)
        scores = scores + 0.01 * rng.normal(size=data.n_rows)  # scores move a little per round

    base = statistics.median(times["plain"])
    lines = [
        "# Position term: cost per objective call",
        "",
        (f"`make_ranking({args.queries})`: {data.n_rows} rows, {data.n_queries} queries; k = 20, "
        f"exact sigmoid; median of {args.reps} calls, interleaved; {os.cpu_count()} cores "
        f"({platform.processor() or 'cpu'}).  Reproduce: "
        f"`python experiments/bench_position_term.py --queries {args.queries} --reps {args.reps}`."),
        "",
        "| objective | ms per call | ratio to plain |",
        "|---|---|---|",
    ]
    for name in CONFIGS:
        med = statistics.median(times[name])
        lines.append(f"| {name} | {1e3 * med:.1f} | {med / base:.2f}x |")
    text = "\n".join(lines) + "\n"
    RESULTS.mkdir(exist_ok=True)
    write_atomic(RESULTS / "position_term_speed.md", text)
    print(text)


if __name__ == "__main__":
    main()

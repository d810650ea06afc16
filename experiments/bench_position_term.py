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
import sys
from pathlib import Path

from ltr._io import write_atomic
from ltr.synthetic import make_ranking

HERE = Path(__file__).resolve().parent
RESULTS = HERE / "results"
sys.path.insert(0, str(HERE))
from bench_objective import K, debias_call_ratios  # the one timing loop

#: Rows of the table: bench_objective's objective names, labelled as this file always was.
LABELS = {"plain": "plain", "position_term": "position_term", "unbiased": "unbiased",
          "unbiased_position_term": "unbiased + position_term"}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--queries", type=int, default=2000)
    parser.add_argument("--reps", type=int, default=15)
    args = parser.parse_args()
    data = make_ranking(args.queries, n_features=4, random_state=0)
    ratios = debias_call_ratios(args.queries, args.reps)
    lines = [
        "# Position term: cost per objective call",
        "",
        (f"`make_ranking({args.queries})`: {data.n_rows} rows, {data.n_queries} queries; k = {K}, "
        f"exact sigmoid; median of {args.reps} calls, interleaved; {os.cpu_count()} cores "
        f"({platform.processor() or 'cpu'}).  Reproduce: "
        f"`python experiments/bench_position_term.py --queries {args.queries} --reps {args.reps}`."),
        "",
        "| objective | ms per call | ratio to plain |",
        "|---|---|---|",
    ]
    for name, label in LABELS.items():
        if name in ratios:
            seconds, ratio = ratios[name]
            lines.append(f"| {label} | {1e3 * seconds:.1f} | {ratio:.2f}x |")
    text = "\n".join(lines) + "\n"
    RESULTS.mkdir(exist_ok=True)
    write_atomic(RESULTS / "position_term_speed.md", text)
    print(text)


if __name__ == "__main__":
    main()

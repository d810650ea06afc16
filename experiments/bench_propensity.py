"""Seconds to estimate propensities from 5 M logged impressions: cascade EM and PBM EM.

Three logs of ``--impressions`` impressions (default 5,000,000: 50,000
queries of 10 documents, 10 sessions each; grades 0-4 uniform):

* a cascade log (click probability 0.4/0.6/0.7/0.8/0.9 by grade, no stop
  after a click, abandonment 0.2, issue 21's cascade setting) under a
  deterministic logger (a noisy grade, sorted): the sessions of a query share
  one order;
* the same cascade under a Plackett-Luce logger (temperature 1): every
  session has its own order;
* a PBM log (examination 1/p) under the Plackett-Luce logger, for the
  existing :func:`ltr.clicks.estimate_propensity_em`.

Each estimator runs ``--reps`` times after one warm-up call (numba
compilation excluded); the median wall time is printed with the iterations
and the ratio cascade / PBM EM (the same machine, one run).  Issue 25's bar
is cascade EM <= 3 s at 5 M impressions.

Usage::

    python experiments/bench_propensity.py            # 5 M impressions
    python experiments/bench_propensity.py --quick    # 200,000 impressions
"""

from __future__ import annotations

import argparse
import platform
import statistics
import time
from pathlib import Path

import numba
import numpy as np

from ltr.clicks import (
    estimate_propensity_cascade,
    estimate_propensity_em,
    simulate_cascade,
    simulate_pbm,
)

CLICK = [0.4, 0.6, 0.7, 0.8, 0.9]
DOCS = 10
SESSIONS = 10


def _timed(fn, reps: int) -> tuple[float, object]:
    times = []
    out = None
    for _ in range(reps):
        start = time.perf_counter()
        out = fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times), out


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--impressions", type=int, default=5_000_000)
    parser.add_argument("--reps", type=int, default=3)
    parser.add_argument("--quick", action="store_true", help="200,000 impressions, 1 rep")
    parser.add_argument("--out", default=str(Path(__file__).parent / "results" /
                                             "propensity_speed.md"))
    args = parser.parse_args(argv)
    n_imp = 200_000 if args.quick else args.impressions
    reps = 1 if args.quick else args.reps
    n_q = max(n_imp // (DOCS * SESSIONS), 2)
    rng = np.random.default_rng(0)
    labels = rng.integers(0, 5, n_q * DOCS)
    logger = labels + rng.normal(scale=1.5, size=labels.size)
    group = [DOCS] * n_q
    common = {"group": group, "logging_scores": logger, "n_sessions": SESSIONS,
              "random_state": 0}
    logs = {
        "cascade, deterministic logger": simulate_cascade(
            labels, click_prob=CLICK, stop_prob=0.0, abandon=0.2, **common),
        "cascade, Plackett-Luce logger": simulate_cascade(
            labels, click_prob=CLICK, stop_prob=0.0, abandon=0.2, temperature=1.0, **common),
    }
    pbm = simulate_pbm(labels, examination=1.0, temperature=1.0, **common)
    small = simulate_cascade(labels[:200], group=[DOCS] * 20, click_prob=CLICK, stop_prob=0.0,
                             abandon=0.2, n_sessions=3, random_state=0)
    estimate_propensity_cascade(small)  # compile
    estimate_propensity_em(simulate_pbm(labels[:200], group=[DOCS] * 20, n_sessions=3,
                                        logging_scores=logger[:200], temperature=1.0,
                                        random_state=0))
    rows = []
    t_em, est_em = _timed(lambda: estimate_propensity_em(pbm), reps)
    for name, log in logs.items():
        t, est = _timed(lambda log=log: estimate_propensity_cascade(log), reps)
        rows.append((f"estimate_propensity_cascade ({name})", log.n_impressions, t,
                     est.n_iter, est.converged))
    rows.append(("estimate_propensity_em (PBM, Plackett-Luce logger)", pbm.n_impressions, t_em,
                 est_em.n_iter, est_em.converged))
    lines = [
        "# Propensity estimation speed",
        "",
        (f"`python experiments/bench_propensity.py{' --quick' if args.quick else ''}`; "
         f"{platform.processor() or platform.machine()}, numba threads "
         f"{numba.get_num_threads()}, median of {reps} run(s) after a warm-up call."),
        "",
        "| estimator (log) | impressions | seconds | iterations | converged | vs PBM EM |",
        "|---|---:|---:|---:|---:|---:|",
    ]
    for name, n, t, it, conv in rows:
        lines.append(f"| {name} | {n:,} | {t:.2f} | {it} | {conv} | {t / t_em:.2f}x |")
    lines += ["", "Issue 25's bar: a cascade EM within 3 s at 5 M impressions."]
    text = "\n".join(lines) + "\n"
    print(text)
    Path(args.out).write_text(text, encoding="utf-8")


if __name__ == "__main__":
    main()

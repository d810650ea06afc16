"""Probe: which pair cost should ltr's learned position debiasing (``unbiased=True``) use?

Issue 21's PBM setting, scaled down to run in a few minutes on 2 cores:

* synthetic MSLR-shaped data (:func:`ltr.synthetic.make_ranking`), split by query
  into training and test queries;
* a deterministic *logger*: LightGBM lambdarank trained on 2 % of the training
  queries (their true grades); every session shows its order (sorted by score);
* clicks by the position-based model (:func:`ltr.clicks.simulate_pbm`) on the top
  10 only: examination ``(1/rank)**eta`` (eta 1 and 2), click probability
  ``0.1 + 0.9 (2**g - 1) / 15`` for grade ``g``; the training rows are the shown
  impressions (one list per query and session);
* three rankers on the clicks, identical but for the debiasing: ``naive``
  (``LambdaRankObjective(k=10)``), ``pair_loss`` and ``reversed_pair_loss``
  (``unbiased=True`` with that ``bias_cost``); nDCG@10 on the test queries' true
  grades (queries without a relevant document left out);
* every seed draws its own data, logger and clicks; the table gives means over
  seeds and the paired difference to ``naive`` with its standard error.

The learned ratio ``t-/t+`` per position is printed too (position 1 = 1): with the
paper's cost it stays near 1 (the two tables cancel), with the reversed cost it
grows with depth toward the true ``1/theta``.

Usage::

    python experiments/probe_bias_cost.py            # 3 seeds, ~2 min on 2 cores
    python experiments/probe_bias_cost.py --full     # the issue's sizes (2,000 / 1,000
                                                     # queries, 20 sessions): much longer

Writes ``experiments/results/probe_bias_cost.md``.
"""

from __future__ import annotations

import argparse
import os
import platform
import time
from pathlib import Path

os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")

import numpy as np

from ltr import ndcg
from ltr._io import write_atomic
from ltr.clicks import simulate_pbm
from ltr.engines import train
from ltr.objectives import LambdaRankObjective
from ltr.synthetic import make_ranking

RESULTS = Path(__file__).resolve().parent / "results"
METHODS = ("naive", "pair_loss", "reversed_pair_loss")
SHOWN = 10
CLICK_PROB = 0.1 + 0.9 * (2.0 ** np.arange(5) - 1.0) / 15.0


def one_seed(seed: int, eta: float, args: argparse.Namespace) -> dict:
    """nDCG@10 of every method (and the learned t-/t+) for one seed and eta."""
    data = make_ranking(args.train_queries + args.test_queries, n_features=args.features,
                        mean_docs=args.mean_docs, max_docs=4 * args.mean_docs,
                        random_state=seed)
    tr = data.subset(np.arange(args.train_queries))
    te = data.subset(np.arange(args.train_queries, data.n_queries))
    rng = np.random.default_rng(1000 + seed)
    small = tr.subset(np.sort(rng.choice(tr.n_queries, max(3, tr.n_queries // 50),
                                         replace=False)))
    logger = train(small.X, small.y, small.offsets, num_boost_round=15, n_jobs=args.jobs,
                   params={"num_leaves": 7, "min_data_in_leaf": 5}, random_state=seed)
    examination = (1.0 / np.arange(1, SHOWN + 1)) ** eta
    log = simulate_pbm(tr.y.astype(np.int64), offsets=tr.offsets,
                       logging_scores=logger.predict(tr.X), examination=examination,
                       click_prob=CLICK_PROB, n_sessions=args.sessions, random_state=seed)
    shown = log.position <= SHOWN
    rows = log.row[shown]
    pos = log.position[shown]
    sizes = np.add.reduceat(shown.astype(np.int64), log.offsets[:-1])
    offsets = np.concatenate([[0], np.cumsum(sizes[sizes > 0])])
    X, click = tr.X[rows], log.click[shown].astype(np.float64)
    has = np.maximum.reduceat(te.y, te.offsets[:-1]) > 0
    out: dict = {}
    for method in METHODS:
        kw = {} if method == "naive" else {"unbiased": True, "bias_cost": method}
        model = train(X, click, offsets, objective=LambdaRankObjective(k=10, **kw),
                      position=None if method == "naive" else pos,
                      num_boost_round=args.rounds, n_jobs=args.jobs, random_state=seed,
                      params={"learning_rate": 0.05, "num_leaves": 31})
        per_query = ndcg(te.y, model.predict(te.X), offsets=te.offsets, k=10, reduce=None)
        out[method] = float(np.mean(per_query[has]))
        bias = model.position_bias
        if bias is not None:
            tp, tm = np.array(bias["t_plus"][:SHOWN]), np.array(bias["t_minus"][:SHOWN])
            out[method + "_ratio"] = (tm / tp).tolist()
    return out


def report(results: dict, args: argparse.Namespace, seconds: float) -> str:
    lines = [
        "# Pair cost of ltr's learned position debiasing (`bias_cost`)",
        "",
        (f"`python experiments/probe_bias_cost.py{' --full' if args.full else ''}` "
         f"({seconds:.0f} s; {platform.machine()}, {os.cpu_count()} CPUs)."),
        "",
        (f"Synthetic MSLR-shaped data, {args.train_queries} training / {args.test_queries} "
         f"test queries ({args.mean_docs} documents on average, {args.features} features), a "
         f"deterministic logger trained on 2 % of the training queries, top {SHOWN} shown, "
         f"examination (1/rank)^eta, click probability 0.1 + 0.9 (2^g - 1)/15, "
         f"{args.sessions} sessions per query, {args.rounds} rounds, {args.seeds} seeds. "
         "nDCG@10 on the test queries' true grades; difference to naive: mean over seeds "
         "± standard error of the paired difference."),
        "",
        "| eta | method | nDCG@10 | − naive | learned t-/t+ at positions 2, 5, 10 |",
        "|---:|---|---:|---:|---|",
    ]
    for eta, per_seed in results.items():
        base = np.array([r["naive"] for r in per_seed])
        for m in METHODS:
            v = np.array([r[m] for r in per_seed])
            d = v - base
            se = d.std(ddof=1) / np.sqrt(d.size) if d.size > 1 else float("nan")
            diff = "" if m == "naive" else f"{d.mean():+.4f} ± {se:.4f}"
            ratio = ""
            if m + "_ratio" in per_seed[0]:
                r = np.mean([s[m + "_ratio"] for s in per_seed], axis=0)
                ratio = ", ".join(f"{r[i]:.2f}" for i in (1, 4, SHOWN - 1))
                truth = ", ".join(f"{p ** eta:.0f}" for p in (2, 5, SHOWN))
                ratio += f" (true 1/θ: {truth})"
            lines.append(f"| {eta:g} | {m} | {v.mean():.4f} | {diff} | {ratio} |")
    return "\n".join(lines) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--full", action="store_true",
                        help="the issue's sizes: 2,000 / 1,000 queries, 20 sessions")
    parser.add_argument("--seeds", type=int, default=3)
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument("--out", default=str(RESULTS / "probe_bias_cost.md"))
    args = parser.parse_args()
    if args.full:
        args.train_queries, args.test_queries, args.sessions = 2000, 1000, 20
        args.mean_docs, args.features, args.rounds = 60, 136, 100
    else:
        args.train_queries, args.test_queries, args.sessions = 600, 400, 10
        args.mean_docs, args.features, args.rounds = 30, 60, 60
    t0 = time.perf_counter()
    results: dict = {}
    for eta in (1.0, 2.0):
        results[eta] = []
        for seed in range(args.seeds):
            r = one_seed(seed, eta, args)
            results[eta].append(r)
            print(f"[{time.perf_counter() - t0:6.1f}s] eta={eta:g} seed={seed}: "
                  + ", ".join(f"{m} {r[m]:.4f}" for m in METHODS), flush=True)
    text = report(results, args, time.perf_counter() - t0)
    write_atomic(args.out, text)
    print(text)


if __name__ == "__main__":
    main()

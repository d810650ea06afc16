"""Seconds per boosting round: native LambdaRank vs ``ltr``'s LambdaRank objective.

On ``make_ranking`` synthetic data (136 features, ~120 docs per query) with 63
leaves and 2 threads, in one run:

* LightGBM ``objective="lambdarank"`` (``lambdarank_truncation_level=20``)
* LightGBM + ``LambdaRankObjective(k=20)`` (all pairs, exact sigmoid)
* LightGBM + ``LambdaRankObjective(k=20, sigmoid="lightgbm")`` (bit-identical mode)
* LightGBM + ``LambdaRankObjective(k=20, sampling=TopKPairSampling(pairs_per_doc=8))``
* XGBoost ``rank:ndcg`` (``lambdarank_pair_method="topk"``, ``num_pair_per_sample=20``)
* XGBoost + ``LambdaRankObjective(k=20)``

Each configuration trains ``--rounds`` rounds; the time of every round is taken
from a per-iteration callback and the median is reported, with the ratio to
the native objective of the same engine.  The objective's own share (median
seconds per call of the gradient function) is timed separately at the native
model's final scores.

Usage::

    python experiments/bench_objective.py            # 2,000 and 10,000 queries
    python experiments/bench_objective.py --quick    # smoke run, small data
"""

from __future__ import annotations

import argparse
import platform
import statistics
import sys
import time
from pathlib import Path

import lightgbm as lgb
import numba
import numpy as np

from ltr.datasets import make_ranking
from ltr.objectives import LambdaRankObjective
from ltr.sampling import TopKPairSampling

K = 20
THREADS = 2
LEAVES = 63


class _RoundTimer:
    """Record wall time at the end of each round (LightGBM callback / XGBoost callback)."""

    def __init__(self) -> None:
        self.stamps: list[float] = []
        self.order = 100  # LightGBM: run after everything else

    def __call__(self, env: object) -> None:  # LightGBM
        self.stamps.append(time.perf_counter())

    def per_round(self, start: float) -> list[float]:
        stamps = [start] + self.stamps
        return [b - a for a, b in zip(stamps, stamps[1:])]


def _median_round_lgb(ds: lgb.Dataset, objective: object, rounds: int) -> float:
    params = {
        "objective": objective, "num_leaves": LEAVES, "learning_rate": 0.1,
        "num_threads": THREADS, "verbose": -1, "force_row_wise": True, "seed": 0,
        "lambdarank_truncation_level": K, "min_data_in_leaf": 50,
    }
    timer = _RoundTimer()
    start = time.perf_counter()
    lgb.train(params, ds, num_boost_round=rounds, callbacks=[timer])
    return statistics.median(timer.per_round(start)[1:] or timer.per_round(start))


def _median_round_xgb(dtrain: object, objective: object | None, rounds: int) -> float:
    import xgboost as xgb

    class Timer(xgb.callback.TrainingCallback):
        def __init__(self) -> None:
            self.stamps: list[float] = []

        def after_iteration(self, model, epoch, evals_log) -> bool:  # noqa: ANN001
            self.stamps.append(time.perf_counter())
            return False

    params = {
        "tree_method": "hist", "grow_policy": "lossguide", "max_leaves": LEAVES, "max_depth": 0,
        "eta": 0.1, "nthread": THREADS, "base_score": 0.0, "seed": 0, "min_child_weight": 0.1,
    }
    if objective is None:
        params.update(objective="rank:ndcg", lambdarank_pair_method="topk",
                      lambdarank_num_pair_per_sample=K)
    timer = Timer()
    start = time.perf_counter()
    xgb.train(params, dtrain, num_boost_round=rounds, obj=objective, callbacks=[timer])
    stamps = [start] + timer.stamps
    rounds_s = [b - a for a, b in zip(stamps, stamps[1:])]
    return statistics.median(rounds_s[1:] or rounds_s)


def _median_call(obj: LambdaRankObjective, scores: np.ndarray, y: np.ndarray,
                 offsets: np.ndarray, reps: int) -> float:
    times = []
    for i in range(reps):
        t = time.perf_counter()
        obj.gradients(scores, y, offsets, iteration=i)
        times.append(time.perf_counter() - t)
    return statistics.median(times)


def run(n_queries: int, rounds: int, with_xgb: bool) -> list[tuple[str, str, float, float]]:
    data = make_ranking(n_queries, n_features=136, random_state=0)
    group = np.diff(data.offsets)
    ds = lgb.Dataset(data.X, data.y, group=group, free_raw_data=False,
                     params={"verbose": -1, "num_threads": THREADS}).construct()
    variants = {
        "ours k=20 all pairs": LambdaRankObjective(k=K),
        "ours k=20 sigmoid=lightgbm": LambdaRankObjective(k=K, sigmoid="lightgbm"),
        "ours k=20 pairs_per_doc=8": LambdaRankObjective(
            k=K, sampling=TopKPairSampling(top=K, pairs_per_doc=8, random_state=0)),
    }
    for obj in variants.values():  # compile / warm up once, outside the timings
        obj.gradients(np.zeros(len(data.y)), data.y, data.offsets)
    rows = []
    native = _median_round_lgb(ds, "lambdarank", rounds)
    rows.append(("lightgbm", "native lambdarank@20", native, 1.0))
    for name, obj in variants.items():
        t = _median_round_lgb(ds, obj, rounds)
        rows.append(("lightgbm", name, t, t / native))
    # objective share alone, at non-trivial scores
    rng = np.random.default_rng(0)
    scores = data.X[:, :8].astype(np.float64) @ rng.normal(size=8)
    for name, obj in variants.items():
        t = _median_call(obj, scores, data.y, data.offsets, reps=max(3, rounds // 2))
        rows.append(("objective call", name, t, float("nan")))
    if with_xgb:
        import xgboost as xgb

        dtrain = xgb.DMatrix(data.X, data.y, nthread=THREADS)
        dtrain.set_group(group)
        xnative = _median_round_xgb(dtrain, None, rounds)
        rows.append(("xgboost", "native rank:ndcg topk@20", xnative, 1.0))
        t = _median_round_xgb(dtrain, LambdaRankObjective(k=K), rounds)
        rows.append(("xgboost", "ours k=20 all pairs", t, t / xnative))
    return rows


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="small smoke run")
    parser.add_argument("--rounds", type=int, default=None)
    parser.add_argument("--sizes", type=int, nargs="*", default=None)
    parser.add_argument("--no-xgboost", action="store_true")
    parser.add_argument("--out", default=str(Path(__file__).parent / "results" / "objective_speed.md"))
    args = parser.parse_args(argv)
    numba.set_num_threads(THREADS)
    sizes = args.sizes or ([300] if args.quick else [2000, 10000])
    rounds = args.rounds or (5 if args.quick else 20)
    command = "python experiments/bench_objective.py " + " ".join(argv if argv is not None else sys.argv[1:])
    lines = [
        "# LambdaRank objective: seconds per boosting round",
        "",
        f"Command: `{command.strip()}`",
        "",
        f"make_ranking data (136 features, ~120 docs/query), {LEAVES} leaves, "
        f"{THREADS} threads (LightGBM/XGBoost and numba), {rounds} rounds, median seconds per "
        f"round (first round excluded); ratio = ours / native of the same engine. "
        f"'objective call' rows: median seconds of one gradient computation alone. "
        f"Python {platform.python_version()}, lightgbm {lgb.__version__}, numba {numba.__version__}.",
        "",
        "Note: measured on a shared 2-core machine while other jobs ran; timings are noisy.",
        "",
    ]
    for n in sizes:
        rows = run(n, rounds, not args.no_xgboost)
        lines += [f"## {n:,} queries", "", "| engine | objective | s / round | ratio |", "|---|---|---|---|"]
        for engine, name, t, ratio in rows:
            r = "" if np.isnan(ratio) else f"{ratio:.2f}x"
            lines.append(f"| {engine} | {name} | {t:.4f} | {r} |")
        lines.append("")
        print("\n".join(lines[-(len(rows) + 4):]), flush=True)
    if not args.quick:
        Path(args.out).write_text("\n".join(lines) + "\n")
        print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

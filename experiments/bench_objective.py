"""Seconds per boosting round: native LambdaRank vs ``ltr``'s LambdaRank objective.

On ``make_ranking`` synthetic data (136 features, ~120 docs per query) with 63
leaves and 2 threads, in one run:

* LightGBM ``objective="lambdarank"`` (``lambdarank_truncation_level=20``)
* LightGBM + ``LambdaRankObjective(k=20)`` (all pairs, exact sigmoid)
* LightGBM + ``LambdaRankObjective(k=20, sigmoid="lightgbm")`` (bit-identical mode)
* LightGBM + ``LambdaRankObjective(k=20, sampling=TopKPairSampling(pairs_per_doc=8))``
* XGBoost ``rank:ndcg`` (``lambdarank_pair_method="topk"``, ``num_pair_per_sample=20``)
* XGBoost + ``LambdaRankObjective(k=20)``

* LightGBM fed the recorded ``pairs_per_doc=8`` gradients of a previous run
  ("replay"): the same trees with no objective work at all, i.e. the floor
  that any custom objective's round costs (tree growth plus LightGBM's
  custom-objective overhead)

Each configuration trains ``--rounds`` rounds, ``--reps`` times, interleaved
with the other configurations (so background load hits all alike); the time
of every round is taken from a per-iteration callback and the median is
reported, with the ratio to the native objective of the same engine.  The
objective's own share ("objective call in training": median seconds of one
call of our objective during those LightGBM trainings) is timed around each
call, at the scores of the round.

Usage::

    python experiments/bench_objective.py            # headline figures (<= 3 min on 2 cores)
    python experiments/bench_objective.py --full     # tables: 2,000 and 10,000 queries
    python experiments/bench_objective.py --quick    # smoke run of the tables, small data

The default (headline) mode prints ``RESULT`` lines (:mod:`_perf`) and writes
``experiments/results/objective_speed.md``; 2 threads (engine and numba):

* ``unbiased_vs_plain``, ``propensity_vs_plain``, ``position_term_vs_plain``,
  ``unbiased_position_term_vs_plain``: seconds of one objective call (with its
  state update, as a training round makes it) over a plain
  ``LambdaRankObjective(k=20)`` call, median of interleaved calls on
  ``make_ranking(2000)`` with a random display order per query;
* ``sampled_vs_native``: seconds per LightGBM round with
  ``TopKPairSampling(pairs_per_doc=8)`` over native ``lambdarank``, 2,000
  queries (~120 docs, 136 features), k = 20, 5 interleaved repetitions.

It runs against older code too (``PYTHONPATH=<old checkout>``): an objective
option the code lacks prints nothing for its key.  The tables of ``--full``
go to ``experiments/results/objective_speed_full.md``.
"""

from __future__ import annotations

import argparse
import os
import platform
import statistics
import sys
import time
from itertools import pairwise
from pathlib import Path

import lightgbm as lgb
import numba
import numpy as np
from _perf import load_average, result

from ltr.objectives import LambdaRankObjective
from ltr.objectives.sampling import TopKPairSampling
from ltr.synthetic import make_ranking

K = 20
THREADS = 2  # default; --threads overrides (several values: one section each)
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
        return [b - a for a, b in pairwise(stamps)]


def _rounds_lgb(ds: lgb.Dataset, objective: object, rounds: int) -> list[float]:
    params = {
        "objective": objective, "num_leaves": LEAVES, "learning_rate": 0.1,
        "num_threads": THREADS, "verbose": -1, "force_row_wise": True, "seed": 0,
        "lambdarank_truncation_level": K, "min_data_in_leaf": 50,
    }
    timer = _RoundTimer()
    start = time.perf_counter()
    lgb.train(params, ds, num_boost_round=rounds, callbacks=[timer])
    return timer.per_round(start)[1:]  # first round excluded (set-up)


def _rounds_xgb(dtrain: object, objective: object | None, rounds: int) -> list[float]:
    import xgboost as xgb

    class Timer(xgb.callback.TrainingCallback):
        def __init__(self) -> None:
            self.stamps: list[float] = []

        def after_iteration(self, model, epoch, evals_log) -> bool:
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
    return [b - a for a, b in pairwise(stamps[1:])]  # first round excluded


class _TimedObjective:
    """Calls the objective and records the seconds of each call."""

    def __init__(self, obj: LambdaRankObjective) -> None:
        self.obj = obj
        self.seconds: list[float] = []

    def __deepcopy__(self, memo: dict) -> _TimedObjective:  # lgb.train deep-copies params
        return self

    def __call__(self, preds: np.ndarray, data: object) -> tuple[np.ndarray, np.ndarray]:
        t = time.perf_counter()
        out = self.obj(preds, data)
        self.seconds.append(time.perf_counter() - t)
        return out


class _Replay:
    """Returns gradients recorded from an earlier training, round by round."""

    def __init__(self, recorded: list[tuple[np.ndarray, np.ndarray]]) -> None:
        self.recorded = recorded
        self.i = 0

    def __deepcopy__(self, memo: dict) -> _Replay:
        return self

    def __call__(self, preds: np.ndarray, data: object) -> tuple[np.ndarray, np.ndarray]:
        out = self.recorded[self.i]
        self.i += 1
        return out


def _record(ds: lgb.Dataset, obj: LambdaRankObjective, rounds: int) -> list[tuple[np.ndarray, np.ndarray]]:
    recorded = []

    def recording(preds: np.ndarray, data: object) -> tuple[np.ndarray, np.ndarray]:
        g, h = obj(preds, data)
        recorded.append((g.copy(), h.copy()))
        return g, h

    obj.reset()
    _rounds_lgb(ds, recording, rounds)
    return recorded


def run(n_queries: int, rounds: int, reps: int, with_xgb: bool, k: int = 20,
        mean_docs: float = 120, max_docs: int = 1000) -> list[tuple[str, str, float, float]]:
    global K
    K = k
    data = make_ranking(n_queries, n_features=136, mean_docs=mean_docs, max_docs=max_docs,
                        random_state=0)
    group = np.diff(data.offsets)
    ds = lgb.Dataset(data.X, data.y, group=group, free_raw_data=False,
                     params={"verbose": -1, "num_threads": THREADS}).construct()
    variants = {
        f"ours k={K} all pairs": LambdaRankObjective(k=K),
        f"ours k={K} sigmoid=lightgbm": LambdaRankObjective(k=K, sigmoid="lightgbm"),
        f"ours k={K} pairs_per_doc=8": LambdaRankObjective(
            k=K, sampling=TopKPairSampling(top=20, pairs_per_doc=8, random_state=0)),
    }
    for obj in variants.values():  # compile / warm up once, outside the timings
        obj.gradients(np.zeros(len(data.y)), data.y, data.offsets)
    native_lgb = f"native lambdarank@{K}"
    native_xgb = f"native rank:ndcg topk@{K}"
    sampled_name = f"ours k={K} pairs_per_doc=8"
    replay_name = "replay of recorded pairs_per_doc=8 gradients (floor: no objective work)"
    recorded = _record(ds, variants[sampled_name], rounds)
    lgb_configs: dict[str, object] = {native_lgb: "lambdarank", **variants, replay_name: None}
    call_seconds: dict[str, list[float]] = {name: [] for name in variants}
    times: dict[tuple[str, str], list[float]] = {}
    dtrain = None
    if with_xgb:
        import xgboost as xgb

        dtrain = xgb.DMatrix(data.X, data.y, nthread=THREADS)
        dtrain.set_group(group)
    # interleave the configurations so that background load hits all of them alike
    for _ in range(reps):
        for name, obj in lgb_configs.items():
            if isinstance(obj, LambdaRankObjective):
                obj.reset()
                timed = _TimedObjective(obj)
                per_round = _rounds_lgb(ds, timed, rounds)
                call_seconds[name].extend(timed.seconds[1:])  # first round excluded
            elif obj is None:
                per_round = _rounds_lgb(ds, _Replay(recorded), rounds)
            else:
                per_round = _rounds_lgb(ds, obj, rounds)
            times.setdefault(("lightgbm", name), []).extend(per_round)
        if dtrain is not None:
            times.setdefault(("xgboost", native_xgb), []).extend(
                _rounds_xgb(dtrain, None, rounds))
            times.setdefault(("xgboost", f"ours k={K} all pairs"), []).extend(
                _rounds_xgb(dtrain, LambdaRankObjective(k=K), rounds))
    rows = []
    for engine, native_name in (("lightgbm", native_lgb), ("xgboost", native_xgb)):
        if (engine, native_name) not in times:
            continue
        base = statistics.median(times[(engine, native_name)])
        for (eng, name), ts in times.items():
            if eng == engine:
                t = statistics.median(ts)
                rows.append((engine, name, t, t / base))
    # the objective's own share, timed around each call inside the LightGBM trainings
    for name, secs in call_seconds.items():
        rows.append(("objective call in training", name, statistics.median(secs), float("nan")))
    return rows


DEBIAS_CONFIGS: dict[str, dict[str, object]] = {
    "unbiased": {"unbiased": True},
    "propensity": {"propensity": 1.0 / np.arange(1.0, 33.0)},
    "position_term": {"position_term": True, "position_regularization": 0.1,
                      "position_learning_rate": 0.1},
    "unbiased_position_term": {"unbiased": True, "position_term": True,
                               "position_regularization": 0.1, "position_learning_rate": 0.1},
}


def debias_call_ratios(n_queries: int, reps: int) -> dict[str, tuple[float, float]]:
    """``{name: (seconds per call, ratio to plain)}`` for the debiasing objectives (and plain)."""
    data = make_ranking(n_queries, n_features=4, random_state=0)
    rng = np.random.default_rng(0)
    pos = np.empty(data.n_rows, dtype=np.int64)
    for q in range(data.n_queries):
        s, e = data.offsets[q], data.offsets[q + 1]
        pos[s:e] = rng.permutation(e - s) + 1
    objs = {"plain": LambdaRankObjective(k=K)}
    for name, kw in DEBIAS_CONFIGS.items():
        try:
            objs[name] = LambdaRankObjective(k=K, **kw)
        except TypeError:  # an option the code under test lacks: no figure for it
            continue
    times: dict[str, list[float]] = {name: [] for name in objs}
    scores = rng.normal(size=data.n_rows)
    for rep in range(reps + 1):  # the first call of each compiles / warms the caches
        for name, obj in objs.items():
            kw = {} if name == "plain" else {"position": pos, "update_bias": True}
            t0 = time.perf_counter()
            obj.gradients(scores, data.y, data.offsets, rep, **kw)
            if rep:
                times[name].append(time.perf_counter() - t0)
        scores = scores + 0.01 * rng.normal(size=data.n_rows)  # scores move a little per round
    base = statistics.median(times["plain"])
    return {name: (statistics.median(ts), statistics.median(ts) / base)
            for name, ts in times.items()}


def sampled_vs_native(n_queries: int, rounds: int, reps: int) -> tuple[float, float, float]:
    """``(native s/round, sampled s/round, ratio)``: LightGBM, interleaved repetitions."""
    data = make_ranking(n_queries, n_features=136, mean_docs=120, random_state=0)
    ds = lgb.Dataset(data.X, data.y, group=np.diff(data.offsets), free_raw_data=False,
                     params={"verbose": -1, "num_threads": THREADS}).construct()
    obj = LambdaRankObjective(k=K, sampling=TopKPairSampling(top=20, pairs_per_doc=8,
                                                             random_state=0))
    obj.gradients(np.zeros(len(data.y)), data.y, data.offsets)  # compile outside the timings
    native: list[float] = []
    sampled: list[float] = []
    for _ in range(reps):
        native.extend(_rounds_lgb(ds, "lambdarank", rounds))
        obj.reset()
        sampled.extend(_rounds_lgb(ds, obj, rounds))
    a, b = statistics.median(native), statistics.median(sampled)
    return a, b, b / a


def headline(n_queries: int, calls: int, rounds: int, reps: int, out: str | None) -> None:
    """The default mode: RESULT lines and ``objective_speed.md`` (see the module notes)."""
    global THREADS
    THREADS = 2
    numba.set_num_threads(min(THREADS, numba.config.NUMBA_NUM_THREADS))
    load0 = load_average()
    calls_t = debias_call_ratios(n_queries, calls)
    for name, (_, ratio) in calls_t.items():
        if name != "plain":
            result(f"{name}_vs_plain", ratio)
    nat, smp, ratio = sampled_vs_native(n_queries, rounds, reps)
    result("sampled_vs_native", ratio)
    if out is None:
        return
    lines = [
        "# LambdaRank objective: debiasing and sampling costs",
        "",
        (f"Command: `python experiments/bench_objective.py` (headline mode); {THREADS} threads "
        f"(numba and LightGBM), load average {load0:.1f} at the start, "
        f"{load_average():.1f} at the end, {os.cpu_count()} cores. Python "
        f"{platform.python_version()}, lightgbm {lgb.__version__}, numba {numba.__version__}."),
        "",
        f"## Objective call vs plain LambdaRankObjective(k={K})",
        "",
        (f"`make_ranking({n_queries})` (~120 docs/query), a random display order per query; one "
        f"call with its state update (`update_bias=True`) as a round makes it; median of {calls} "
        "interleaved calls. Target: <= 1.3x."),
        "",
        "| objective | ms per call | ratio to plain |",
        "|---|---|---|",
    ]
    for name, (sec, r) in calls_t.items():
        lines.append(f"| {name} | {1e3 * sec:.1f} | {r:.2f}x |")
    lines += [
        "",
        "## Sampled pairs vs native LightGBM, per round",
        "",
        (f"`make_ranking({n_queries})` (136 features, ~120 docs/query), {LEAVES} leaves, k={K}, "
        f"`TopKPairSampling(top=20, pairs_per_doc=8)`; {reps} interleaved repetitions of "
        f"{rounds} rounds, median seconds per round (first round excluded). Target: <= 0.9x."),
        "",
        "| objective | s / round | ratio |",
        "|---|---|---|",
        f"| native lambdarank@{K} | {nat:.4f} | 1.00x |",
        f"| ours pairs_per_doc=8 | {smp:.4f} | {ratio:.2f}x |",
        "",
    ]
    Path(out).write_text("\n".join(lines) + "\n")
    print(f"wrote {out}")


def _section(title: str, rows: list[tuple[str, str, float, float]]) -> list[str]:
    lines = [f"## {title}", "", "| engine | objective | s / round | ratio |", "|---|---|---|---|"]
    for engine, name, t, ratio in rows:
        r = "" if np.isnan(ratio) else f"{ratio:.2f}x"
        lines.append(f"| {engine} | {name} | {t:.4f} | {r} |")
    lines.append("")
    print("\n".join(lines), flush=True)
    return lines


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="small smoke run of the tables")
    parser.add_argument("--full", action="store_true",
                        help="the tables (2,000 and 10,000 queries) instead of the headline")
    parser.add_argument("--rounds", type=int, default=None, help="rounds per training")
    parser.add_argument("--reps", type=int, default=None, help="interleaved repetitions")
    parser.add_argument("--sizes", type=int, nargs="*", default=None,
                        help="numbers of queries (default 2000 10000; none with --long only)")
    parser.add_argument("--no-xgboost", action="store_true")
    parser.add_argument("--long", action="store_true",
                        help="add a long-query section (mean 1,000 docs/query, k=100, LightGBM)")
    parser.add_argument("--threads", type=int, nargs="*", default=None,
                        help="thread counts (engine and numba), one section each; default 2")
    parser.add_argument("--out", default=None,
                        help="results file (default: results/objective_speed.md, "
                        "results/objective_speed_full.md with the tables)")
    args = parser.parse_args(argv)
    results = Path(__file__).parent / "results"
    tables = args.full or args.quick or args.long or args.sizes is not None or args.threads
    if not tables:
        headline(2000, 15, args.rounds or 8, args.reps or 5,
                 args.out or str(results / "objective_speed.md"))
        return 0
    args.out = args.out or str(results / "objective_speed_full.md")
    global THREADS
    thread_counts = args.threads or [2]
    sizes = args.sizes if args.sizes is not None else ([300] if args.quick else [2000, 10000])
    rounds = args.rounds or (4 if args.quick else 8)
    reps = args.reps or (1 if args.quick else 3)
    command = "python experiments/bench_objective.py " + " ".join(argv if argv is not None else sys.argv[1:])
    lines = [
        "# LambdaRank objective: seconds per boosting round",
        "",
        f"Command: `{command.strip()}`",
        "",
        (f"make_ranking data (136 features, ~120 docs/query unless stated), {LEAVES} leaves, "
        f"T threads (LightGBM/XGBoost and numba, per section), {reps} interleaved repetitions of "
        f"{rounds} rounds per configuration, median seconds per round (first round of each "
        f"training excluded); ratio = ours / native of the same engine. "
        f"'objective call in training' rows: median seconds of one call of our objective inside "
        f"those LightGBM trainings; 'replay' row: LightGBM fed the recorded pairs_per_doc=8 "
        f"gradients, i.e. the same trees without any objective work (the floor of a custom objective). "
        f"Python {platform.python_version()}, lightgbm {lgb.__version__}, numba {numba.__version__}."),
        "",
        "Note: measured on a shared 2-core machine while other jobs ran; timings are noisy.",
        "",
    ]
    for threads in thread_counts:
        THREADS = threads
        numba.set_num_threads(min(threads, numba.config.NUMBA_NUM_THREADS))
        sections = [(f"{n:,} queries, k=20, {threads} thread(s)",
                     {"n_queries": n, "with_xgb": not args.no_xgboost}) for n in sizes]
        if args.long:
            n_long = 60 if args.quick else 300
            sections.append((
                f"{n_long:,} long queries (mean 1,000 docs, max 5,000), k=100, {threads} thread(s)",
                {"n_queries": n_long, "with_xgb": False, "k": 100, "mean_docs": 1000, "max_docs": 5000}))
        for title, kwargs in sections:
            lines += _section(title, run(rounds=rounds, reps=reps, **kwargs))
            if not args.quick:  # rewrite after every section: partial results survive
                Path(args.out).write_text("\n".join(lines) + "\n")
    if not args.quick:
        print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

"""Study: learning to rank from position-biased clicks, ltr's Unbiased LambdaMART vs the peers.

For each data set (the shared LETOR set: clicks on its training queries, nDCG on its
test queries' true grades; and the MSLR-shaped synthetic set split by query) and seed:

1. a *logger* is trained on a small labelled fraction of the training queries
   (LightGBM native lambdarank, few rounds): a weak production ranker;
2. clicks are simulated on every training query for ``--sessions`` sessions, each
   session showing a Plackett-Luce draw over the logger's scores (a stochastic
   logging policy, temperature ``--temperature``), under a position-based model
   (examination ``(1/p)**eta``, eta 1 and 2) and a cascade model (two severities);
3. rankers are trained on the click log (one list per session, positions 1..n):

   * ``naive``: ltr's LambdaRank on the clicks, positions ignored;
   * ``ours-unbiased``: ltr's Unbiased LambdaMART (``LambdaRankObjective(unbiased=True)``);
   * ``ours-em``: ltr's LambdaRank with IPS-weighted pairs, the propensities estimated from
     the same log by EM (:func:`ltr.clicks.estimate_propensity_em`) and clipped at 0.1;
   * ``xgb-naive`` / ``xgb-unbiased``: XGBoost ``rank:ndcg`` without / with
     ``lambdarank_unbiased`` (``objective="native"`` with positions);
   * ``lgb-naive`` / ``lgb-gam``: LightGBM lambdarank without / with its position GAM;
   * ``oracle``: ltr's LambdaRank on the true grades of the training queries;

4. nDCG@1/3/5/10 of every ranker on the true test grades.

The table gives means over seeds, and ``ours-unbiased`` minus each other method at
nDCG@10 with a paired t-test over seeds and a Wilcoxon signed-rank test over the
pooled per-query differences.

Usage::

    python experiments/study_position_bias.py                 # the committed table
    python experiments/study_position_bias.py --quick         # a smoke run (1-2 min)

Writes ``experiments/results/position_bias.md`` (and ``position_bias.json``).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import time
from pathlib import Path

os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")

import numpy as np
from scipy import stats

from ltr import load_letor, ndcg
from ltr.clicks import estimate_propensity_em, simulate_cascade, simulate_pbm
from ltr.engines import train
from ltr.objectives import LambdaRankObjective
from ltr.synthetic import make_ranking
from ltr.testing import letor_full_path, letor_slice_path

HERE = Path(__file__).resolve().parent
RESULTS = HERE / "results"
KS = (1, 3, 5, 10)
METHODS = ("naive", "ours-unbiased", "ours-em", "xgb-naive", "xgb-unbiased", "lgb-naive",
           "lgb-gam", "oracle")
# click models: (name, simulator, keyword arguments)
SETTINGS = (
    ("pbm eta=1", simulate_pbm, {"examination": 1.0}),
    ("pbm eta=2", simulate_pbm, {"examination": 2.0}),
    ("cascade mild", simulate_cascade, {"stop_prob": [0.0, 0.1, 0.2, 0.35, 0.5]}),
    ("cascade severe", simulate_cascade, {"stop_prob": [0.1, 0.3, 0.5, 0.7, 0.9]}),
)


def load_sets(name: str, n_queries: int, seed: int):
    """(train, test) RankingData of one data set."""
    if name == "letor":
        root = letor_full_path() or letor_slice_path()
        return load_letor(root / "rank.train"), load_letor(root / "rank.test")
    full = make_ranking(n_queries, n_features=136, mean_docs=20, max_docs=60, random_state=seed)
    rng = np.random.default_rng(seed)
    perm = rng.permutation(full.n_queries)
    cut = int(0.8 * full.n_queries)
    return full.subset(np.sort(perm[:cut])), full.subset(np.sort(perm[cut:]))


def logger_scores(tr, seed: int, fraction: float) -> np.ndarray:
    """A weak production ranker: LightGBM lambdarank on a few labelled queries."""
    rng = np.random.default_rng(1000 + seed)
    n = max(3, int(fraction * tr.n_queries))
    small = tr.subset(np.sort(rng.choice(tr.n_queries, n, replace=False)))
    model = train(small.X, small.y, small.offsets, num_boost_round=15, n_jobs=2,
                  params={"num_leaves": 7, "min_data_in_leaf": 5}, random_state=seed)
    return model.predict(tr.X)


def fit_predict(method: str, tr, log, te, seed: int, rounds: int) -> np.ndarray:
    """Train one method on the click log (or the true grades) and score the test rows."""
    X, click, offsets, pos = tr.X[log.row], log.click.astype(np.float64), log.offsets, log.position
    common = {"num_boost_round": rounds, "n_jobs": 2, "random_state": seed,
              "params": {"learning_rate": 0.05}}
    if method == "oracle":
        model = train(tr.X, tr.y, tr.offsets, objective=LambdaRankObjective(k=10), **common)
    elif method == "naive":
        model = train(X, click, offsets, objective=LambdaRankObjective(k=10), **common)
    elif method == "ours-unbiased":
        model = train(X, click, offsets, objective=LambdaRankObjective(k=10, unbiased=True),
                      position=pos, **common)
    elif method == "ours-em":
        theta = estimate_propensity_em(log, n_iter=300).propensity
        theta = np.where(np.isfinite(theta), theta, np.nanmin(theta))
        obj = LambdaRankObjective(k=10, propensity=np.clip(theta, 1e-6, 1.0), propensity_clip=0.1)
        model = train(X, click, offsets, objective=obj, position=pos, **common)
    else:
        engine = "xgboost" if method.startswith("xgb") else "lightgbm"
        debias = method in ("xgb-unbiased", "lgb-gam")
        model = train(X, click, offsets, engine=engine, k=10,
                      position=pos if debias else None, **common)
    return model.predict(te.X)


def run(args: argparse.Namespace) -> dict:
    rows = []
    t0 = time.perf_counter()
    for data_name in args.data:
        for seed in range(args.seeds):
            tr, te = load_sets(data_name, args.synthetic_queries, seed)
            logger = logger_scores(tr, seed, args.labelled_fraction)
            has = np.maximum.reduceat(te.y, te.offsets[:-1]) > 0
            for setting, simulate, extra in SETTINGS[: args.settings]:
                log = simulate(tr.y.astype(np.int64), offsets=tr.offsets, logging_scores=logger,
                               temperature=args.temperature, n_sessions=args.sessions,
                               random_state=seed, **extra)
                for method in METHODS:
                    t = time.perf_counter()
                    scores = fit_predict(method, tr, log, te, seed, args.rounds)
                    # queries without a relevant document have no nDCG: left out
                    per_query = {k: ndcg(te.y, scores, offsets=te.offsets, k=k, reduce=None)[has]
                                 for k in KS}
                    rows.append({"data": data_name, "seed": seed, "setting": setting,
                                 "method": method, "click_rate": float(log.click.mean()),
                                 "seconds": time.perf_counter() - t,
                                 **{f"ndcg@{k}": float(np.mean(v)) for k, v in per_query.items()},
                                 "per_query_ndcg@10": per_query[10].tolist()})
                print(f"[{time.perf_counter() - t0:7.1f}s] {data_name} seed {seed} {setting}: "
                      + ", ".join(f"{r['method']} {r['ndcg@10']:.4f}" for r in rows[-len(METHODS):]),
                      flush=True)
    return {"rows": rows, "seconds": time.perf_counter() - t0}


def table(result: dict, args: argparse.Namespace) -> str:
    rows = result["rows"]
    out = []
    for data_name in args.data:
        for setting, _, _ in SETTINGS[: args.settings]:
            sel = [r for r in rows if r["data"] == data_name and r["setting"] == setting]
            if not sel:
                continue
            by = {m: [r for r in sel if r["method"] == m] for m in METHODS}
            seeds = sorted({r["seed"] for r in sel})
            out.append(f"### {data_name}, {setting} (click rate "
                       f"{np.mean([r['click_rate'] for r in sel]):.3f}, {len(seeds)} seeds)\n")
            out.append("| method | " + " | ".join(f"nDCG@{k}" for k in KS)
                       + " | ours-unbiased − method @10 | paired t (seeds) p | "
                       "Wilcoxon (queries) p |")
            out.append("|---|" + "---:|" * (len(KS) + 3))
            ours = {r["seed"]: r for r in by["ours-unbiased"]}
            for m in METHODS:
                means = [np.mean([r[f"ndcg@{k}"] for r in by[m]]) for k in KS]
                cells = [f"{v:.4f}" for v in means]
                if m == "ours-unbiased":
                    cells += ["", "", ""]
                else:
                    a = np.array([ours[r["seed"]]["ndcg@10"] for r in by[m]])
                    b = np.array([r["ndcg@10"] for r in by[m]])
                    diff = float(np.mean(a - b))
                    p_t = float(stats.ttest_rel(a, b).pvalue) if len(a) > 1 and np.any(a != b) \
                        else float("nan")
                    qa = np.concatenate([ours[r["seed"]]["per_query_ndcg@10"] for r in by[m]])
                    qb = np.concatenate([r["per_query_ndcg@10"] for r in by[m]])
                    p_w = float(stats.wilcoxon(qa, qb).pvalue) if np.any(qa != qb) \
                        else float("nan")
                    cells += [f"{diff:+.4f}", f"{p_t:.3g}", f"{p_w:.3g}"]
                out.append(f"| {m} | " + " | ".join(cells) + " |")
            out.append("")
    return "\n".join(out)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true", help="a smoke run: 1 seed, 20 rounds")
    parser.add_argument("--data", nargs="+", default=["letor", "synthetic"],
                        choices=["letor", "synthetic"])
    parser.add_argument("--seeds", type=int, default=5)
    parser.add_argument("--sessions", type=int, default=8)
    parser.add_argument("--temperature", type=float, default=1.0)
    parser.add_argument("--rounds", type=int, default=100)
    parser.add_argument("--labelled-fraction", type=float, default=0.05)
    parser.add_argument("--synthetic-queries", type=int, default=600)
    parser.add_argument("--settings", type=int, default=len(SETTINGS),
                        help="how many click settings to run (in table order)")
    parser.add_argument("--out", default=str(RESULTS / "position_bias.md"))
    args = parser.parse_args()
    if args.quick:
        args.seeds, args.rounds, args.synthetic_queries, args.settings = 1, 20, 200, 2
    result = run(args)
    text = table(result, args)
    print(text)
    if args.quick:
        return
    header = (
        "# Learning from position-biased clicks: ltr's Unbiased LambdaMART vs the engines\n\n"
        f"Command: `python experiments/study_position_bias.py` ({args.seeds} seeds, "
        f"{args.sessions} sessions per query, Plackett-Luce logging temperature "
        f"{args.temperature}, logger trained on {args.labelled_fraction:.0%} of the training "
        f"queries, {args.rounds} rounds, learning rate 0.05; synthetic: "
        f"{args.synthetic_queries} queries, 80/20 split by query). Machine: "
        f"{platform.processor() or platform.machine()}, {os.cpu_count()} cores, shared with "
        f"other jobs; wall time {result['seconds'] / 60:.1f} min.\n\n"
    )
    Path(args.out).write_text(header + text + "\n")
    slim = [{k: v for k, v in r.items() if k != "per_query_ndcg@10"} for r in result["rows"]]
    Path(args.out).with_suffix(".json").write_text(json.dumps(slim, indent=1) + "\n")


if __name__ == "__main__":
    main()

"""Study: training on one behaviour (watch) vs the composite multi-objective LambdaRank.

Data: ``make_ranking(600, n_features=40, mean_docs=50,
objectives=("watch", "share", "follow"))``; queries 0-399 train, 400-599 are
held out.  Each objective has its own graded label (watch 0-3, share 0-2,
follow 0-3), correlated with a shared relevance.

Variants (LightGBM engine, same tree parameters, 100 rounds):

* watch only, native -- LightGBM ``lambdarank`` (k=20) on the watch label;
* watch only, ours -- ``LambdaRankObjective(k=20)`` on the watch label;
* composite -- ``CompositeLambdaRankObjective`` with weights watch 0.6,
  share 0.25, follow 0.15 (k=20), built by ``train(objective={...}, labels=...)``.

Reported on the held-out queries: composite nDCG@k (the same weights, see
:func:`ltr.metrics.composite.composite_ndcg`) and each objective's nDCG@k, k = 5, 10, 20,
mean ± std over seeds (seeds act through bagging/feature_fraction), plus the
paired difference composite - watch only (ours).

Run::

    python experiments/study_composite.py --seeds 5
"""

from __future__ import annotations

import argparse
import os
import platform
import sys
import time
from pathlib import Path

os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")

import lightgbm
import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from ltr.engines import train
from ltr.metrics.composite import composite_ndcg
from ltr.objectives import LambdaRankObjective
from ltr.synthetic import make_ranking

WEIGHTS = {"watch": 0.6, "share": 0.25, "follow": 0.15}
KS = (5, 10, 20)
PARAMS = {"learning_rate": 0.1, "num_leaves": 31, "min_data_in_leaf": 20,
          "bagging_fraction": 0.8, "bagging_freq": 1, "feature_fraction": 0.8}


def variants(tr):
    return [
        ("watch only, native", lambda s: {"y": tr.labels["watch"], "kw": {"k": 20}}),
        ("watch only, ours", lambda s: {"y": tr.labels["watch"],
                                            "kw": {"objective": LambdaRankObjective(k=20, random_state=s)}}),
        ("composite 0.6/0.25/0.15", lambda s: {"y": tr.labels["watch"],
                                                   "kw": {"objective": WEIGHTS, "labels": tr.labels, "k": 20}}),
    ]


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--seeds", type=int, default=5)
    ap.add_argument("--rounds", type=int, default=100)
    args = ap.parse_args(argv)
    d = make_ranking(600, n_features=40, mean_docs=50, max_docs=200,
                     objectives=tuple(WEIGHTS), random_state=0)
    tr, te = d.subset(np.arange(400)), d.subset(np.arange(400, 600))
    results: dict[str, dict[str, list[float]]] = {}
    t_all = time.perf_counter()
    for seed in range(args.seeds):
        for name, make in variants(tr):
            spec = make(seed)
            t0 = time.perf_counter()
            model = train(tr.X, spec["y"], tr.offsets, num_boost_round=args.rounds, params=PARAMS,
                          n_jobs=1, random_state=seed, **spec["kw"])
            elapsed = time.perf_counter() - t0
            scores = model.predict(te.X)
            rec = results.setdefault(name, {})
            for k in KS:
                comp = composite_ndcg(te.labels, scores, offsets=te.offsets, weights=WEIGHTS, k=k)
                rec.setdefault(f"composite@{k}", []).append(comp.total)
                for obj, value in comp.per_objective.items():
                    rec.setdefault(f"{obj}@{k}", []).append(value)
            rec.setdefault("time", []).append(elapsed)
        print(f"  seed {seed} done", file=sys.stderr, flush=True)

    print(f"Command: `python experiments/study_composite.py --seeds {args.seeds} --rounds {args.rounds}`  ")
    print(f"Python {platform.python_version()}, LightGBM {lightgbm.__version__}, {os.cpu_count()} CPUs "
          "shared with other jobs (timings are noisy), n_jobs=1.  ")
    print(f"Data: make_ranking(600, n_features=40, mean_docs=50, objectives=('watch', 'share', 'follow')), "
          f"{tr.n_queries} train / {te.n_queries} held-out queries ({tr.n_rows} / {te.n_rows} rows).  ")
    print(f"Params: {PARAMS}, {args.rounds} rounds, {args.seeds} seeds (bagging/feature_fraction seed).  ")
    print("nDCG: gain 2^l - 1, log2 discount, ties averaged, queries without relevant documents "
          "skipped (per objective); composite = 0.6 watch + 0.25 share + 0.15 follow.  ")
    print()
    cols = [f"{m}@{k}" for k in KS for m in ("composite", *WEIGHTS)]
    print("| variant | " + " | ".join(cols) + " | train s |")
    print("|---|" + "---|" * (len(cols) + 1))
    for name, rec in results.items():
        cells = [f"{np.mean(rec[c]):.4f} ± {np.std(rec[c], ddof=1):.4f}" for c in cols]
        print(f"| {name} | " + " | ".join(cells) + f" | {np.mean(rec['time']):.2f} |")
    print()
    base = results["watch only, ours"]
    comp = results["composite 0.6/0.25/0.15"]
    print("Paired difference composite - watch only (ours), mean ± std over seeds (wins):")
    print()
    print("| metric | Δ | wins |")
    print("|---|---|---|")
    for c in cols:
        diff = np.asarray(comp[c]) - np.asarray(base[c])
        print(f"| {c} | {diff.mean():+.4f} ± {diff.std(ddof=1):.4f} | {int((diff > 0).sum())}/{len(diff)} |")
    print()
    print(f"Total wall time {time.perf_counter() - t_all:.0f} s.")


if __name__ == "__main__":
    main()

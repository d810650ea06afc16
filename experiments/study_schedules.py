"""Study: truncation schedules, top-k pair weighting and pair sampling for LambdaMART.

Variants (LightGBM engine, same tree parameters everywhere):

* native@20 -- LightGBM ``lambdarank`` with ``lambdarank_truncation_level=20``;
* ours@20 -- :class:`ltr.objectives.LambdaRankObjective` (k=20) as custom objective;
* Steps 5->10->20 and reverse 20->10->5 (thirds of the rounds), native (one
  continued training per stage, objective rebuilt) and ours (k per round);
* Linear 5->20 (ours);
* top-20 weighting: ``TopKPairSampling(top=20, head_weight=2 | 4)`` (ours, all pairs);
* sampling: ``TopKPairSampling(top=20, head_weight=1, pairs_per_doc=4 | 8 | 16)`` (ours).

Data:

* ``real``: LightGBM's examples/lambdarank data, rank.train -> rank.test, 5 seeds;
* ``cv``: 5-fold split by query of rank.train, one seed per fold (seed = fold);
* ``synthetic``: ``make_ranking(450, n_features=40, mean_docs=50)``, first 300
  queries train, last 150 test, 5 seeds.

Seeds act through ``bagging_fraction=0.8, bagging_freq=1, feature_fraction=0.8``
(LightGBM seed = engine ``random_state``) and the objective's ``random_state``
(pair draws), so different seeds give different models.  nDCG is
:func:`ltr.metrics.ndcg` with the library defaults (gain 2^l - 1, log2 discount,
ties averaged, queries without relevant documents left out).

Run::

    python experiments/study_schedules.py              # all three data sets
    python experiments/study_schedules.py --data real --seeds 5 --rounds 100
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

from ltr.datasets import load_letor
from ltr.engines import train
from ltr.metrics import ndcg
from ltr.objectives import LambdaRankObjective
from ltr.objectives.sampling import TopKPairSampling
from ltr.objectives.schedules import Linear, Steps
from ltr.synthetic import make_ranking

DATA_DIR = ROOT.parent / "shared" / "data" / "lightgbm-lambdarank"
KS = (1, 3, 5, 10, 20)
PARAMS = {"learning_rate": 0.1, "num_leaves": 31, "min_data_in_leaf": 20,
          "bagging_fraction": 0.8, "bagging_freq": 1, "feature_fraction": 0.8}
BASELINE = "ours@20"  # the run count is read from it


def thirds(a: int, b: int, c: int, rounds: int) -> Steps:
    n = rounds // 3
    return Steps([(a, n), (b, n), (c, rounds - 2 * n)])


def variants(rounds: int) -> list[tuple[str, object]]:
    def ours(seed: int, **kw):
        return LambdaRankObjective(k=20, random_state=seed, **kw)

    return [
        ("native@20", lambda s: {"k": 20}),
        ("ours@20", lambda s: {"objective": ours(s)}),
        ("native Steps 5->10->20", lambda s: {"schedule": thirds(5, 10, 20, rounds)}),
        ("ours Steps 5->10->20", lambda s: {"objective": ours(s), "schedule": thirds(5, 10, 20, rounds)}),
        ("native reverse 20->10->5", lambda s: {"schedule": thirds(20, 10, 5, rounds)}),
        ("ours reverse 20->10->5", lambda s: {"objective": ours(s), "schedule": thirds(20, 10, 5, rounds)}),
        ("ours Linear 5->20", lambda s: {"objective": ours(s), "schedule": Linear(start=5, end=20, rounds=rounds)}),
        ("ours top-20 head_weight 2", lambda s: {"objective": ours(s, sampling=TopKPairSampling(top=20, head_weight=2.0))}),
        ("ours top-20 head_weight 4", lambda s: {"objective": ours(s, sampling=TopKPairSampling(top=20, head_weight=4.0))}),
        ("ours pairs_per_doc 4", lambda s: {"objective": ours(s, sampling=TopKPairSampling(top=20, head_weight=1.0, pairs_per_doc=4))}),
        ("ours pairs_per_doc 8", lambda s: {"objective": ours(s, sampling=TopKPairSampling(top=20, head_weight=1.0, pairs_per_doc=8))}),
        ("ours pairs_per_doc 16", lambda s: {"objective": ours(s, sampling=TopKPairSampling(top=20, head_weight=1.0, pairs_per_doc=16))}),
    ]


def splits(which: str, n_seeds: int):
    """Yield (seed, train RankingData, test RankingData)."""
    if which in ("real", "cv"):
        tr = load_letor(DATA_DIR / "rank.train")
        if which == "real":
            te = load_letor(DATA_DIR / "rank.test")
            for seed in range(n_seeds):
                yield seed, tr, te
        else:
            order = np.random.default_rng(0).permutation(tr.n_queries)
            folds = np.array_split(order, 5)
            for f, test_q in enumerate(folds):
                train_q = np.sort(np.concatenate([folds[j] for j in range(5) if j != f]))
                yield f, tr.subset(train_q), tr.subset(np.sort(test_q))
    else:
        d = make_ranking(450, n_features=40, mean_docs=50, max_docs=200, random_state=0)
        tr, te = d.subset(np.arange(300)), d.subset(np.arange(300, 450))
        for seed in range(n_seeds):
            yield seed, tr, te


def run(which: str, n_seeds: int, rounds: int) -> dict[str, dict[str, list[float]]]:
    results: dict[str, dict[str, list[float]]] = {}
    vs = variants(rounds)
    for seed, tr, te in splits(which, n_seeds):
        for name, make in vs:
            t0 = time.perf_counter()
            model = train(tr.X, tr.y, tr.offsets, num_boost_round=rounds, params=PARAMS,
                          n_jobs=1, random_state=seed, **make(seed))
            elapsed = time.perf_counter() - t0
            scores = model.predict(te.X)
            values = ndcg(te.y, scores, offsets=te.offsets, k=list(KS))
            rec = results.setdefault(name, {})
            for k in KS:
                rec.setdefault(f"ndcg@{k}", []).append(float(values[k]))
            rec.setdefault("time", []).append(elapsed)
        print(f"  [{which}] seed/fold {seed} done", file=sys.stderr, flush=True)
    return results


def baseline_of(name: str) -> str:
    """Native variants are compared with native@20, ours with ours@20."""
    return "native@20" if name.startswith("native") else "ours@20"


def verdict(diffs: np.ndarray) -> str:
    """Paired t-test, two-sided 5 % (uncorrected for the 10 comparisons per data set)."""
    from scipy import stats

    n = len(diffs)
    if n < 2:
        return "n/a"
    se = diffs.std(ddof=1) / np.sqrt(n)
    crit = stats.t.ppf(0.975, n - 1)
    t = diffs.mean() / se if se > 0 else np.inf * np.sign(diffs.mean())
    if t > crit:
        return "helps"
    if t < -crit:
        return "hurts"
    return "no clear effect"


def table(which: str, results: dict[str, dict[str, list[float]]], n_runs: int) -> list[str]:
    lines = [
        (f"| variant | {' | '.join(f'NDCG@{k}' for k in KS)} | baseline | Δ NDCG@10 (paired) "
         "| Δ mean NDCG@1-20 (wins) | verdict | train s |"),
        "|---|" + "---|" * (len(KS) + 5),
    ]

    def mean_ndcg(rec: dict[str, list[float]]) -> np.ndarray:
        return np.mean([rec[f"ndcg@{k}"] for k in KS], axis=0)

    summary = []
    for name, rec in results.items():
        cells = [f"{np.mean(rec[f'ndcg@{k}']):.4f} ± {np.std(rec[f'ndcg@{k}'], ddof=1):.4f}" for k in KS]
        bname = baseline_of(name)
        base = results[bname]
        d10 = np.asarray(rec["ndcg@10"]) - np.asarray(base["ndcg@10"])
        dmean = mean_ndcg(rec) - mean_ndcg(base)
        if name == bname:
            if name == "native@20":
                bname = "ours@20"
                d10 = np.asarray(rec["ndcg@10"]) - np.asarray(results[bname]["ndcg@10"])
                dmean = mean_ndcg(rec) - mean_ndcg(results[bname])
            else:
                lines.append(f"| {name} | {' | '.join(cells)} | — | — | — | baseline | "
                             f"{np.mean(rec['time']):.2f} |")
                continue
        v = verdict(dmean)
        d10s = f"{d10.mean():+.4f} ± {d10.std(ddof=1):.4f}"
        dms = f"{dmean.mean():+.4f} ({int((dmean > 0).sum())}/{len(dmean)})"
        summary.append((f"{name} vs {bname}", v, dmean.mean()))
        cells.append(bname)
        t = f"{np.mean(rec['time']):.2f}"
        lines.append(f"| {name} | {' | '.join(cells)} | {d10s} | {dms} | {v} | {t} |")
    lines.append("")
    helps = [f"{n} ({d:+.4f})" for n, v, d in summary if v == "helps"]
    hurts = [f"{n} ({d:+.4f})" for n, v, d in summary if v == "hurts"]
    lines.append(f"*{which}* -- better: {', '.join(helps) or 'none'}; "
                 f"worse: {', '.join(hurts) or 'none'}; all others: no clear effect "
                 f"(paired t-test over {n_runs} runs on the mean of NDCG@1,3,5,10,20, two-sided 5 %, "
                 "not corrected for multiple comparisons).")
    return lines


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--data", choices=("real", "cv", "synthetic", "all"), default="all")
    ap.add_argument("--seeds", type=int, default=5)
    ap.add_argument("--rounds", type=int, default=100)
    args = ap.parse_args(argv)
    which = ("real", "cv", "synthetic") if args.data == "all" else (args.data,)
    print(f"Command: `python experiments/study_schedules.py --data {args.data} --seeds {args.seeds} "
          f"--rounds {args.rounds}`  ")
    print(f"Python {platform.python_version()}, LightGBM {lightgbm.__version__}, "
          f"{os.cpu_count()} CPUs shared with other jobs (timings are noisy), n_jobs=1.  ")
    print(f"Params: {PARAMS}, {args.rounds} rounds; seeds vary bagging/feature_fraction and "
          "the objective's pair draws.  ")
    print()
    t_all = time.perf_counter()
    for w in which:
        t0 = time.perf_counter()
        results = run(w, args.seeds, args.rounds)
        n_runs = len(results[BASELINE]["ndcg@10"])
        desc = {"real": f"rank.train -> rank.test, {n_runs} seeds",
                "cv": f"5-fold by query on rank.train, one seed per fold ({n_runs} runs)",
                "synthetic": f"make_ranking(450, n_features=40, mean_docs=50): 300 train / 150 test queries, {n_runs} seeds"}[w]
        print(f"### {w}: {desc}")
        print()
        print("\n".join(table(w, results, n_runs)))
        print()
        print(f"({w}: {time.perf_counter() - t0:.0f} s wall)")
        print()
    print(f"Total wall time {time.perf_counter() - t_all:.0f} s.")


if __name__ == "__main__":
    main()

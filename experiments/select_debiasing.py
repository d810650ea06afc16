"""How well select_debiasing chooses: regret in true nDCG@10 of its choice, PBM and cascade logs.

For each setting and seed: synthetic MSLR-shaped data (300 training queries with clicks,
300 unseen test queries with true grades), a deterministic logger, simulated clicks; then
``select_debiasing`` on the clicks (both ``normalize`` choices), every candidate trained on
all clicks, and the TRUE nDCG@10 of each on the test queries.  Regret = best candidate's
true nDCG minus the chosen one's (the issue-21 bar: <= 0.005).

* PBM: logger = LambdaMART trained on 15 labelled queries, top 10 shown, examination
  (1/p)^2, click probability 0.1 + 0.9 (2^g - 1) / 15, 5 sessions per query.
* cascade: every document shown, logger sorts by one feature (column 23), click
  probability 0.4/0.6/0.7/0.8/0.9 by grade, stop after a click with probability 0.5,
  5 sessions per query (200 training queries).

Writes experiments/results/select_debiasing.md.  Default 3 seeds: about 3 minutes on 2 cores.
    python experiments/select_debiasing.py [--seeds 3]
"""

from __future__ import annotations

import argparse
from pathlib import Path

import numpy as np
from sklearn.base import clone

from ltr import LambdaMARTRanker, select_debiasing
from ltr._io import write_atomic
from ltr.clicks import simulate_cascade, simulate_pbm
from ltr.engines import uses_position
from ltr.estimator import CANDIDATES
from ltr.metrics import ndcg
from ltr.synthetic import make_ranking

PBM_CLICK = 0.1 + 0.9 * (2.0 ** np.arange(5) - 1) / 15


def _setting(name: str, seed: int):
    n_train = 300 if name == "pbm" else 200
    data = make_ranking(n_train + 300, n_features=30, mean_docs=20, max_docs=40,
                        random_state=seed)
    q = np.repeat(np.arange(data.offsets.size - 1), np.diff(data.offsets))
    train = q < n_train
    if name == "pbm":
        small = q < 15
        logger = LambdaMARTRanker(n_estimators=20, num_leaves=7, random_state=0, n_jobs=1).fit(
            data.X[small], data.y[small], qid=q[small]).predict(data.X)
        top = 10
    else:
        logger, top = data.X[:, 23].astype(np.float64), 40
    keep = np.zeros(q.size, bool)
    for i in range(n_train):
        a, b = data.offsets[i], data.offsets[i + 1]
        keep[a + np.argsort(-logger[a:b], kind="stable")[:top]] = True
    sizes = np.bincount(q[keep], minlength=n_train)
    y = data.y[keep].astype(int)
    if name == "pbm":
        log = simulate_pbm(y, group=sizes, logging_scores=logger[keep], examination=2.0,
                           click_prob=PBM_CLICK, n_sessions=5, random_state=seed)
    else:
        log = simulate_cascade(y, group=sizes, logging_scores=logger[keep],
                               click_prob=[0.4, 0.6, 0.7, 0.8, 0.9], stop_prob=[0.5] * 5,
                               n_sessions=5, random_state=seed)
    X = data.X[keep][log.row]
    qid = np.repeat(np.arange(log.offsets.size - 1), np.diff(log.offsets))
    test = ~train
    return X, log.click.astype(np.float64), qid, log.position, data.X[test], data.y[test], q[test]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=3)
    args = parser.parse_args()
    rows = []
    for name in ("pbm", "cascade"):
        for seed in range(args.seeds):
            X, y, qid, pos, Xt, yt, qt = _setting(name, seed)
            base = LambdaMARTRanker(n_estimators=50, num_leaves=15, random_state=0, n_jobs=2)
            sels = {norm: select_debiasing(base, X, y, qid=qid, position=pos, n_bootstrap=200,
                                           normalize=norm, random_state=seed)
                    for norm in ("query", "all")}
            prop = sels["query"].propensity
            true = {}
            for cand in sels["query"].candidates:
                params = {k: (prop if v == "estimated" else v) for k, v in CANDIDATES[cand].items()}
                kw = {"position": pos} if uses_position(params) else {}
                model = clone(base).set_params(**params).fit(X, y, qid=qid, **kw)
                true[cand] = ndcg(yt, model.predict(Xt), qid=qt, k=10)
            best = max(true.values())
            for norm, sel in sels.items():
                rows.append((name, seed, norm, sel.chosen, best - true[sel.chosen], true))
                print(name, seed, norm, sel.chosen, round(best - true[sel.chosen], 4),
                      {k: round(v, 4) for k, v in true.items()}, flush=True)
    lines = ["# select_debiasing: regret of the choice in true nDCG@10", "",
             "`python experiments/select_debiasing.py` (see its docstring for the settings).", "",
             "| setting | seed | normalize | chosen | regret | true nDCG@10 per candidate |",
             "|---|---|---|---|---|---|"]
    for name, seed, norm, chosen, regret, true in rows:
        cells = ", ".join(f"{k} {v:.4f}" for k, v in true.items())
        lines.append(f"| {name} | {seed} | {norm} | {chosen} | {regret:.4f} | {cells} |")
    lines.append("")
    for name in ("pbm", "cascade"):
        for norm in ("query", "all"):
            r = [x[4] for x in rows if x[0] == name and x[2] == norm]
            lines.append(f"- {name}, normalize={norm}: mean regret {np.mean(r):.4f}, "
                         f"max {np.max(r):.4f} over {len(r)} seeds")
    out = Path(__file__).parent / "results" / "select_debiasing.md"
    write_atomic(out, "\n".join(lines) + "\n")
    print(f"wrote {out}")


if __name__ == "__main__":
    main()

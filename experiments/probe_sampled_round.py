"""Where a sampled-pairs LightGBM round goes: the objective's share against the trees' (issue 25).

The runner's row "round: sampled pairs (8/doc) vs native LightGBM" (``bench_objective.py``)
asks for <= 0.9x native ``lambdarank`` per round.  This probe splits a round on the same data
(``make_ranking(2000)``, 136 features, ~120 documents per query, 63 leaves, k=20,
``TopKPairSampling(top=20, pairs_per_doc=8)``, 2 threads):

* the objective called alone, sampled and all pairs (median of 15 calls, ms);
* native and ours per round over 9 rounds, alternating twice, with the seconds spent inside the
  objective's ``round_gradients`` during our rounds;
* the trees alone: a custom objective that hands LightGBM the same precomputed gradients every
  round (no gradient work), the floor of any objective's round.

The tree-building share (native round minus its gradients) bounds what any objective can reach:
ours is that plus the objective's in-training time.  Prints one line per measure.

Usage::

    python experiments/probe_sampled_round.py
"""

from __future__ import annotations

import statistics
import time

import lightgbm as lgb
import numba
import numpy as np
from _perf import load_average

from ltr.objectives import LambdaRankObjective
from ltr.objectives.sampling import TopKPairSampling
from ltr.synthetic import make_ranking

ROUNDS = 9


def main() -> None:
    numba.set_num_threads(min(2, numba.config.NUMBA_NUM_THREADS))
    print(f"load {load_average():.2f}", flush=True)
    data = make_ranking(2000, n_features=136, mean_docs=120, random_state=0)
    ds = lgb.Dataset(data.X, data.y, group=np.diff(data.offsets), free_raw_data=False,
                     params={"verbose": -1, "num_threads": 2}).construct()
    sampled = LambdaRankObjective(k=20, sampling=TopKPairSampling(top=20, pairs_per_doc=8,
                                                                  random_state=0))
    plain = LambdaRankObjective(k=20)
    scores = np.random.default_rng(0).normal(size=data.n_rows)
    for name, obj in (("sampled pairs_per_doc=8", sampled), ("all pairs", plain)):
        obj.gradients(scores, data.y, data.offsets)  # compile outside the timings
        times = []
        for r in range(15):
            t0 = time.perf_counter()
            obj.gradients(scores, data.y, data.offsets, r)
            times.append(time.perf_counter() - t0)
        print(f"objective alone, {name}: {1000 * statistics.median(times):.2f} ms", flush=True)
    inside = [0.0]
    original = LambdaRankObjective.round_gradients

    def timed(self, *args, **kwargs):
        t0 = time.perf_counter()
        out = original(self, *args, **kwargs)
        inside[0] += time.perf_counter() - t0
        return out

    LambdaRankObjective.round_gradients = timed  # type: ignore[method-assign]
    try:
        grad, hess = sampled.gradients(scores, data.y, data.offsets, 0)

        def fixed(preds, train):  # the trees alone: no gradient work per round
            return grad, hess

        for objective in ("lambdarank", sampled, fixed, "lambdarank", sampled, fixed):
            inside[0] = 0.0
            params = {"objective": objective, "num_leaves": 63, "learning_rate": 0.1,
                      "num_threads": 2, "verbose": -1, "force_row_wise": True, "seed": 0,
                      "lambdarank_truncation_level": 20, "min_data_in_leaf": 50}
            t0 = time.perf_counter()
            lgb.train(params, ds, num_boost_round=ROUNDS)
            per_round = (time.perf_counter() - t0) / ROUNDS
            name = ("native lambdarank" if objective == "lambdarank" else
                    "trees alone (fixed gradients)" if objective is fixed else "ours, sampled")
            print(f"{name}: {per_round:.4f} s/round, inside the objective "
                  f"{inside[0] / ROUNDS:.4f} s/round", flush=True)
    finally:
        LambdaRankObjective.round_gradients = original  # type: ignore[method-assign]


if __name__ == "__main__":
    main()

"""Quick start: synthetic MSLR-shaped data, a LightGBM LambdaMART model, NDCG@1/5/10.

    python experiments/quickstart.py
"""

from __future__ import annotations

import lightgbm as lgb
import numpy as np

from ltr.datasets import make_ranking
from ltr.metrics import ndcg


def main() -> None:
    data = make_ranking(600, random_state=0)
    rng = np.random.default_rng(0)
    order = rng.permutation(data.n_queries)
    train, test = data.subset(np.sort(order[:450])), data.subset(np.sort(order[450:]))
    params = {"objective": "lambdarank", "num_leaves": 31, "learning_rate": 0.1,
              "verbosity": -1, "seed": 0, "deterministic": True, "force_row_wise": True}
    booster = lgb.train(params, lgb.Dataset(train.X, train.y, group=np.diff(train.offsets)),
                        num_boost_round=50)
    scores = booster.predict(test.X)
    random_scores = rng.normal(size=test.n_rows)
    print(f"test: {test.n_queries} queries, {test.n_rows} rows")
    for k in (1, 5, 10):
        model = ndcg(test.y, scores, offsets=test.offsets, k=k)
        base = ndcg(test.y, random_scores, offsets=test.offsets, k=k)
        print(f"NDCG@{k}: model {model:.4f}   random {base:.4f}")


if __name__ == "__main__":
    main()

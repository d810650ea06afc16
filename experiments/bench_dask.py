"""Single process vs a Dask LocalCluster (1 and 2 workers): per-round time and fixed overheads.

On the MSLR-shaped synthetic set (``ltr.synthetic.make_ranking``: about 120 documents per
query, 136 float32 features; the default 10,000 queries are about 1.2 M rows):

* single process: ``ltr.engines.train`` on in-memory arrays;
* ``ltr.dask.train`` on a ``LocalCluster(host="127.0.0.1")`` with 1 and 2 worker processes
  (threads split so every run uses all cores).

Each configuration trains twice, with ``--rounds`` and with 2 rounds: the difference gives the
per-round time, the rest is the fixed cost (data handling, Dataset/DMatrix construction, the
shuffle that keeps queries whole, network setup).  The shuffle and the cluster start are
also timed on their own.  Everything is printed as one table plus ratios.

Usage::

    python experiments/bench_dask.py --quick          # 1,000 queries, 10 rounds
    python experiments/bench_dask.py --queries 3000 --rounds 20 --engine lightgbm
    python experiments/bench_dask.py                  # 10,000 queries (~1.2 M rows), 20 rounds
"""

from __future__ import annotations

import argparse
import os
import time
import warnings

import numpy as np
import pandas as pd

REPEAT = 2  # each timing is the best of REPEAT runs (the machine may be shared)


def timed(fn, *args, **kwargs):
    best, out = float("inf"), None
    for _ in range(REPEAT):
        t = time.perf_counter()
        out = fn(*args, **kwargs)
        best = min(best, time.perf_counter() - t)
    return best, out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--queries", type=int, default=10_000)
    ap.add_argument("--features", type=int, default=136)
    ap.add_argument("--rounds", type=int, default=20)
    ap.add_argument("--engine", choices=("lightgbm", "xgboost"), default="lightgbm")
    ap.add_argument("--objective", choices=("native", "ours"), default="native")
    ap.add_argument("--workers", type=int, nargs="+", default=[1, 2])
    ap.add_argument("--partitions", type=int, default=8, help="input partitions of the dask frame")
    ap.add_argument("--quick", action="store_true", help="1,000 queries, 10 rounds")
    ap.add_argument("--repeat", type=int, default=2, help="best of this many runs per timing")
    args = ap.parse_args()
    global REPEAT
    REPEAT = args.repeat
    if args.quick:
        args.queries, args.rounds = 1_000, 10

    import dask.dataframe as dd
    from distributed import Client, LocalCluster

    import ltr.dask as ldask
    from ltr.engines import train
    from ltr.objectives import LambdaRankObjective
    from ltr.synthetic import make_ranking

    cores = os.cpu_count() or 1
    t_gen, d = timed(make_ranking, args.queries, n_features=args.features, random_state=0)
    n_rows = d.X.shape[0]
    feats = [f"f{j}" for j in range(d.X.shape[1])]
    df = pd.DataFrame(d.X, columns=feats)
    df["y"] = d.y.astype(np.float64)
    df["qid"] = np.repeat(np.arange(len(d.offsets) - 1), np.diff(d.offsets))
    mb = df.memory_usage(index=False).sum() / 2**20
    print(f"data: {args.queries} queries, {n_rows} rows x {len(feats)} features "
          f"({mb:.0f} MiB in pandas), generated in {t_gen:.1f} s; engine={args.engine}, "
          f"objective={args.objective}, rounds={args.rounds}, cores={cores}")

    def objective():
        return "native" if args.objective == "native" else LambdaRankObjective(k=10)

    rows = []
    # single process (after a warm-up: library loading and numba compilation are not per-round)
    X, y = d.X, d.y.astype(np.float64)
    small = make_ranking(50, n_features=args.features, random_state=1)
    train(small.X, small.y, small.offsets, engine=args.engine, objective=objective(), k=10,
          num_boost_round=2)
    t_short, _ = timed(train, X, y, d.offsets, engine=args.engine, objective=objective(), k=10,
                       num_boost_round=2)
    t_long, _ = timed(train, X, y, d.offsets, engine=args.engine, objective=objective(), k=10,
                      num_boost_round=args.rounds)
    per_round = (t_long - t_short) / (args.rounds - 2)
    rows.append({"config": "single process", "start": 0.0, "shuffle": 0.0,
                 "fixed": t_short - 2 * per_round, "per_round": per_round, "total": t_long})

    for w in args.workers:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            t0 = time.perf_counter()
            cluster = LocalCluster(
                n_workers=w, threads_per_worker=max(1, cores // w),
                processes=True, host="127.0.0.1", dashboard_address=None,
            )
            client = Client(cluster)
            t_start = time.perf_counter() - t0
        try:
            ddf = dd.from_pandas(df, npartitions=args.partitions, sort=False)
            ddf = client.persist(ddf)  # the data sits on the workers, as it would when read there
            from distributed import wait

            wait(ddf)
            t_shuffle, (frame, _) = timed(ldask.shuffle_by_query, ddf, "qid", label="y",
                                          client=client)
            del frame
            kw = {"label": "y", "qid": "qid", "engine": args.engine, "k": 10}
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                t_short, _ = timed(ldask.train, client, ddf, objective=objective(),
                                   num_boost_round=2, **kw)
                t_long, _ = timed(ldask.train, client, ddf, objective=objective(),
                                  num_boost_round=args.rounds, **kw)
            per_round = (t_long - t_short) / (args.rounds - 2)
            name = f"LocalCluster {w} worker{'s' if w > 1 else ''} x {max(1, cores // w)} thread(s)"
            rows.append({"config": name, "start": t_start, "shuffle": t_shuffle,
                         "fixed": t_short - 2 * per_round, "per_round": per_round, "total": t_long})
        finally:
            client.close()
            cluster.close()

    table = pd.DataFrame(rows).set_index("config")
    print()
    print("seconds (fixed = training time minus rounds x per_round; it includes the shuffle "
          "inside ltr.dask.train)")
    print(table.round(3).to_string())
    base = table.iloc[0]
    print()
    for name, r in table.iloc[1:].iterrows():
        print(f"{name}: per-round x{r.per_round / base.per_round:.2f}, "
              f"total x{r.total / base.total:.2f} vs single process; "
              f"shuffle {r.shuffle / n_rows * 1e6:.2f} us/row, "
              f"per-round {r.per_round / n_rows * 1e9:.1f} ns/row")
    print(f"single process: per-round {base.per_round / n_rows * 1e9:.1f} ns/row, "
          f"fixed {base.fixed / n_rows * 1e6:.2f} us/row")


if __name__ == "__main__":
    main()

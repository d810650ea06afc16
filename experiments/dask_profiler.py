"""Dask workers' profiler paused during training vs left running: per-round cost, one cluster.

``ltr.dask.train`` pauses each worker's statistical profiler while a stage
trains (``ltr.dask._workers.pause_profiler``).  This script trains LightGBM
(native objective) on one ``LocalCluster`` of 2 workers x 1 thread, alternating
trainings with the pause and with it disabled (the client sends a no-op in its
place), and prints per round, median over the trainings of each arm:

* wall seconds (the slower worker's median interval between round ends),
* each worker's process CPU seconds and its training thread's CPU seconds;
  the difference is what the worker's other threads (event loop, profiler,
  LightGBM's sockets) burn per round.

Usage::

    python experiments/dask_profiler.py                  # 10,000 queries (1.2 M rows), 4 x 2 trainings
    python experiments/dask_profiler.py --queries 2000 --repeat 2    # a quick look
"""

from __future__ import annotations

import argparse
import os
import statistics
import warnings

import numpy as np
import pandas as pd
from _perf import load_average
from bench_dask import _fetch_worker, _install_stamps, _median_round


def _no_pause(token, dask_worker=None):
    return False


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--queries", type=int, default=10_000)
    ap.add_argument("--rounds", type=int, default=12)
    ap.add_argument("--repeat", type=int, default=4, help="trainings per arm, alternating")
    args = ap.parse_args()

    import dask.dataframe as dd
    from distributed import Client, LocalCluster, wait

    import ltr.dask as ldask
    from ltr.dask import _workers as W
    from ltr.synthetic import make_ranking

    d = make_ranking(args.queries, n_features=136, random_state=0)
    df = pd.DataFrame(d.X, columns=[f"f{j}" for j in range(d.X.shape[1])])
    df["y"] = d.y.astype(np.float64)
    df["qid"] = np.repeat(np.arange(len(d.offsets) - 1), np.diff(d.offsets))
    load0 = load_average()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        cluster = LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                               host="127.0.0.1", dashboard_address=None)
    client = Client(cluster)
    pause = W.pause_profiler
    arms = {"profiler paused (ltr's default)": pause, "profiler running": _no_pause}
    seen: dict[str, list[tuple[float, float, float]]] = {name: [] for name in arms}
    try:
        _install_stamps()
        client.run(_install_stamps, False)
        ddf = client.persist(dd.from_pandas(df, npartitions=8, sort=False))
        wait(ddf)
        ldask.train(client, ddf, label="y", qid="qid", k=10, num_boost_round=2)  # warm-up
        for _ in range(args.repeat):
            for name, fn in arms.items():
                W.pause_profiler = fn
                client.run(_fetch_worker)
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    ldask.train(client, ddf, label="y", qid="qid", k=10,
                                num_boost_round=args.rounds)
                stamps = client.run(_fetch_worker)
                t = [s[-args.rounds:] for s in stamps.values()]
                wall = max(_median_round(s) for s in t)
                proc = float(np.mean([_median_round(s, 1) for s in t]))
                thread = float(np.mean([_median_round(s, 2) for s in t]))
                seen[name].append((wall, proc, thread))
                print(f"  {name}: wall {wall:.3f} s, worker CPU {proc:.3f} s, training thread "
                      f"{thread:.3f} s per round", flush=True)
    finally:
        W.pause_profiler = pause
        client.close()
        cluster.close()
    print(f"\n{d.X.shape[0]:,} rows, LightGBM native, 2 workers x 1 thread, {args.rounds} rounds "
          f"per training, {args.repeat} trainings per arm alternating; {os.cpu_count()} cores, "
          f"load average {load0:.1f} -> {load_average():.1f}")
    print("\n| arm | wall s / round | worker CPU s / round | training thread | other threads |")
    print("|---|---:|---:|---:|---:|")
    for name, rows in seen.items():
        w, p, th = (statistics.median(col) for col in zip(*rows))
        print(f"| {name} | {w:.3f} | {p:.3f} | {th:.3f} | {p - th:.3f} |")


if __name__ == "__main__":
    main()

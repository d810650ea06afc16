"""Single process vs a Dask LocalCluster (1 and 2 workers): per-round time and fixed overheads.

On the MSLR-shaped synthetic set (``ltr.synthetic.make_ranking``: about 120 documents per
query, 136 float32 features; the default 10,000 queries are about 1.2 M rows):

* single process: ``ltr.engines.train`` on in-memory arrays;
* ``ltr.dask.train`` on a ``LocalCluster(host="127.0.0.1")`` with 1 and 2 worker processes
  (threads split so every run uses all cores).

For each cluster, the single-process and the cluster trainings alternate ``--repeat`` times
(each keeps its best), and the ratios are taken against the single-process runs interleaved
with that cluster's.  The end of every boosting round is stamped (``Recorder.end_round``, in
this process and on every worker, fetched afterwards) with the wall clock and the process's
CPU seconds; the per-round time is the median interval between stamps (robust to a shared
machine's load spikes), the slowest worker's for a cluster.  The rest of the wall time is the fixed
cost (data handling, Dataset/DMatrix construction, the shuffle that keeps queries whole,
network setup).  The shuffle and the cluster start are also timed on their own.  Everything
is printed as one table plus ratios.

Usage::

    python experiments/bench_dask.py --quick          # 1,000 queries, 10 rounds
    python experiments/bench_dask.py --queries 3000 --rounds 20 --engine lightgbm
    python experiments/bench_dask.py                  # 10,000 queries (~1.2 M rows), 20 rounds,
                                                      # both engines
"""

from __future__ import annotations

import argparse
import os
import time
import warnings

import numpy as np
import pandas as pd
from _perf import load_average, result

REPEAT = 1  # single process and cluster interleaved REPEAT times; each keeps its best
STAMPS: list[tuple[float, float]] = []  # round ends here (wall, CPU seconds of this process)


def _stamp_worker(*_args, **_kwargs):
    """Record the end of a round in the worker process (fetched with client.run)."""
    import ltr.dask._workers as W

    W._STATE.setdefault("__bench__", {"t": []})["t"].append(
        (time.perf_counter(), time.process_time(), time.thread_time()))


def _fetch_worker():
    import ltr.dask._workers as W

    return W._STATE.pop("__bench__", {"t": []})["t"]


def _median_round(stamps, column=0):
    """Median interval between round ends: wall seconds (column 0) or process CPU seconds (1)."""
    t = np.asarray([st[column] for st in stamps], dtype=np.float64)
    d = np.diff(t)
    return float(np.median(d)) if d.size else float("nan")


def _install_stamps(local: bool = True) -> None:
    """Stamp the end of every round: ``Recorder.end_round`` runs once per round in one process
    (``ltr.engines``) and on every worker (``ltr.dask``'s eval callbacks), for both engines.

    Run here with ``local=True`` (stamps go to ``STAMPS``) and on each worker with
    ``client.run(_install_stamps, False)`` (stamps kept in the worker, fetched afterwards).
    """
    from ltr.engines import _recorder as R

    orig = getattr(R.Recorder.end_round, "_bench_orig", R.Recorder.end_round)

    def end_round(self):
        if local:
            STAMPS.append((time.perf_counter(), time.process_time(), time.thread_time()))
        else:
            _stamp_worker()
        return orig(self)

    end_round._bench_orig = orig
    R.Recorder.end_round = end_round


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--queries", type=int, default=10_000)
    ap.add_argument("--features", type=int, default=136)
    ap.add_argument("--rounds", type=int, default=20)
    ap.add_argument("--engine", choices=("lightgbm", "xgboost", "both"), default="both")
    ap.add_argument("--objective", choices=("native", "ours"), default="native")
    ap.add_argument("--workers", type=int, nargs="+", default=[1, 2])
    ap.add_argument("--partitions", type=int, default=8, help="input partitions of the dask frame")
    ap.add_argument("--quick", action="store_true", help="1,000 queries, 10 rounds")
    ap.add_argument("--repeat", type=int, default=1, help="interleaved repetitions (single process, cluster); each keeps its best")
    ap.add_argument("--random-order", action="store_true",
                    help="rows in a random order (queries spread over partitions: the hash "
                         "shuffle) instead of grouped by query as files sorted by query give")
    args = ap.parse_args()
    global REPEAT
    REPEAT = args.repeat
    _install_stamps()
    if args.quick:
        args.queries, args.rounds = 1_000, 10

    import dask.dataframe as dd
    from distributed import Client, LocalCluster

    import ltr.dask as ldask
    from ltr.engines import train
    from ltr.objectives import LambdaRankObjective
    from ltr.synthetic import make_ranking

    cores = os.cpu_count() or 1
    t_gen = time.perf_counter()
    d = make_ranking(args.queries, n_features=args.features, random_state=0)
    t_gen = time.perf_counter() - t_gen
    n_rows = d.X.shape[0]
    feats = [f"f{j}" for j in range(d.X.shape[1])]
    df = pd.DataFrame(d.X, columns=feats)
    df["y"] = d.y.astype(np.float64)
    df["qid"] = np.repeat(np.arange(len(d.offsets) - 1), np.diff(d.offsets))
    if args.random_order:
        df = df.sample(frac=1.0, random_state=0).reset_index(drop=True)
    mb = df.memory_usage(index=False).sum() / 2**20
    load = load_average()
    print(f"data: {args.queries} queries, {n_rows} rows x {len(feats)} features "
          f"({mb:.0f} MiB in pandas), generated in {t_gen:.1f} s; engine={args.engine}, "
          f"load average at start {load:.1f}, "
          f"objective={args.objective}, rounds={args.rounds}, cores={cores}")

    def objective():
        return "native" if args.objective == "native" else LambdaRankObjective(k=10)

    engines = ["lightgbm", "xgboost"] if args.engine == "both" else [args.engine]
    rows = []
    X, y = d.X, d.y.astype(np.float64)
    small = make_ranking(50, n_features=args.features, random_state=1)
    for engine in engines:
        # warm-up: library loading, numba compilation are not per-round
        train(small.X, small.y, small.offsets, engine=engine, objective=objective(), k=10,
              num_boost_round=2)

    def single(engine):
        """One single-process training: total seconds, median round interval, its CPU seconds."""
        STAMPS.clear()
        t = time.perf_counter()
        train(X, y, d.offsets, engine=engine, objective=objective(), k=10,
              num_boost_round=args.rounds)
        last = STAMPS[-args.rounds:]
        return time.perf_counter() - t, _median_round(last), _median_round(last, 1)

    for w in args.workers:
        threads = max(1, cores // w)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            t0 = time.perf_counter()
            cluster = LocalCluster(
                n_workers=w, threads_per_worker=threads,
                processes=True, host="127.0.0.1", dashboard_address=None,
            )
            client = Client(cluster)
            t_start = time.perf_counter() - t0
            client.run(_install_stamps, False)
        try:
            ddf = dd.from_pandas(df, npartitions=args.partitions, sort=False)
            ddf = client.persist(ddf)  # the data sits on the workers, as it would when read there
            from distributed import wait

            wait(ddf)
            t0 = time.perf_counter()
            frame, _ = ldask.shuffle_by_query(ddf, "qid", label="y", client=client)
            t_shuffle = time.perf_counter() - t0  # the cold shuffle (a rerun hits dask's cache)
            del frame
            name = f"LocalCluster {w} worker{'s' if w > 1 else ''} x {threads} thread(s)"
            kw = {"label": "y", "qid": "qid", "k": 10}
            best: dict[tuple[str, str], dict[str, float]] = {}
            # single process and cluster interleaved, REPEAT times; each keeps its best
            for _rep in range(REPEAT):
                for engine in engines:
                    t_long, per_round, cpu = single(engine)
                    print(f"  {engine} single process: total {t_long:.1f} s, "
                          f"per round {per_round:.3f} s, CPU per round {cpu:.3f} s", flush=True)
                    b = best.setdefault((engine, "single process"),
                                        {"total": np.inf, "per_round": np.inf})
                    b["total"] = min(b["total"], t_long)
                    b["per_round"] = min(b["per_round"], per_round)
                    client.run(_fetch_worker)
                    with warnings.catch_warnings():
                        warnings.simplefilter("ignore")
                        t = time.perf_counter()
                        model = ldask.train(client, ddf, objective=objective(), engine=engine,
                                            num_boost_round=args.rounds, **kw)
                        t_long = time.perf_counter() - t
                    stamps = client.run(_fetch_worker)
                    per_round = max(_median_round(t[-args.rounds:]) for t in stamps.values())
                    cpus = [_median_round(t[-args.rounds:], 1) for t in stamps.values()]
                    rows_at = model.params["distributed"].get("worker_rows")
                    print(f"  {engine} {name}: total {t_long:.1f} s, per round {per_round:.3f} s, "
                          f"CPU per round per worker {np.round(cpus, 3).tolist()} s "
                          f"(rows per worker {rows_at})", flush=True)
                    b = best.setdefault((engine, name), {"total": np.inf, "per_round": np.inf})
                    b["total"] = min(b["total"], t_long)
                    b["per_round"] = min(b["per_round"], per_round)
            for (engine, config), b in best.items():
                if config == "single process" and any(
                        r["engine"] == engine and r["config"] == config for r in rows):
                    continue  # one single-process row per engine (the first cluster's block)
                dist = config != "single process"
                rows.append({"engine": engine, "config": config,
                             "start": t_start if dist else 0.0,
                             "shuffle": t_shuffle if dist else 0.0,
                             "fixed": b["total"] - args.rounds * b["per_round"],
                             "per_round": b["per_round"], "total": b["total"],
                             "single_per_round": best[(engine, "single process")]["per_round"],
                             "single_fixed": best[(engine, "single process")]["total"]
                             - args.rounds * best[(engine, "single process")]["per_round"],
                             "single_total": best[(engine, "single process")]["total"]})
        finally:
            client.close()
            cluster.close()

    table = pd.DataFrame(rows).set_index(["engine", "config"])
    print()
    print("seconds, best of the interleaved repetitions (per_round = median interval between "
          "round ends; fixed = training time minus rounds x per_round, it includes the shuffle "
          "inside ltr.dask.train); ratios are against the single-process runs interleaved with "
          "each cluster's")
    print(table[["start", "shuffle", "fixed", "per_round", "total"]].round(3).to_string())
    for engine in engines:
        sub = table.loc[engine]
        base = sub.iloc[0]
        print()
        print(f"{engine}: single process per-round {base.per_round / n_rows * 1e9:.1f} ns/row, "
              f"fixed {base.fixed / n_rows * 1e6:.2f} us/row")
        for name, r in sub.iloc[1:].iterrows():
            print(f"{engine} {name}: per-round x{r.per_round / r.single_per_round:.2f}, "
                  f"fixed x{r.fixed / r.single_fixed:.2f}, total x{r.total / r.single_total:.2f} "
                  f"vs single process; cluster start {r.start:.2f} s, shuffle {r.shuffle:.2f} s "
                  f"({r.shuffle / n_rows * 1e6:.2f} us/row), per-round "
                  f"{r.per_round / n_rows * 1e9:.1f} ns/row")
            tag = name.split(" x ")[0].replace("LocalCluster ", "").replace(" ", "")
            result(f"dask_{engine}_{tag}_per_round_vs_single", r.per_round / r.single_per_round)
            result(f"dask_shuffle_{tag}_us_per_row", r.shuffle / n_rows * 1e6, "us")
    print(f"\nload average at the end {load_average():.1f}")

if __name__ == "__main__":
    main()

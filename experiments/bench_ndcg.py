"""Benchmark: mean NDCG@10 from flat arrays + query ids, ltr vs its peers.

Times, in one run, on the same scores:

* ``ltr.metrics.ndcg`` (LightGBM convention and scikit-learn convention),
* LightGBM's C++ ``ndcg@10`` evaluation (a 0-iteration Booster whose init
  score holds the scores; ``eval_train`` re-evaluates them),
* scikit-learn ``ndcg_score`` on the padded 2-D matrix (default: ties averaged),
* ranx's public path (``Qrels``/``Run`` construction and ``evaluate`` timed
  separately; on a slice of queries, compared per row, since building its
  dictionaries for 10M rows takes minutes),
* a plain numpy pass over both arrays (``np.add.reduceat``): the memory-scan floor.

Every ltr row and LightGBM's row are timed by interleaved repetitions (one
call of each in turn, repeated), reported as the median wall-clock time and
the median process CPU time; the headline ratios are ltr's wall time from
ready offsets and from ``qid`` (the conversion included, as users call it)
over LightGBM's.

Usage::

    python experiments/bench_ndcg.py            # headline + every shape vs LightGBM + 10^6 query
    python experiments/bench_ndcg.py --lightgbm-shapes   # ltr from qid vs LightGBM, by shape
    python experiments/bench_ndcg.py --single   # one 10^6-doc query: all threads vs 1 thread
    PYTHONPATH=/work/before python experiments/bench_ndcg.py --single   # ... the code before
    python experiments/bench_ndcg.py --peers    # 100,000 queries x 100 docs + MSLR-shaped set
    python experiments/bench_ndcg.py --quick    # the peer tables on 10,000 x 100, a smoke run
    python experiments/bench_ndcg.py --shapes   # ltr alone on other shapes (short, long, k lists)
    python experiments/bench_ndcg.py --headline # only LightGBM, ltr from offsets, ltr from qid
    python experiments/bench_ndcg.py --kernel   # the serial dcg kernel alone, CPU time per row
    python experiments/bench_ndcg.py --kernel --kernel-file OLD_dcg.py   # another kernel version

``--kernel`` times the serial kernel driver in process CPU time (steady on a
busy machine, where wall-clock medians of the threaded path swing by 30%) on
query shapes that take each selection path: short queries ranked whole, a
small cut-off (threshold and rank counting, ``m <= 16``), the insertion buffer
(``m <= 48``), whole-list sorts, and ``k > 48``.
"""

from __future__ import annotations

import argparse
import os
import platform
import re
import statistics
import sys
import time
import warnings

import numpy as np
from _perf import result

from ltr.metrics import ndcg


def median_time(fn, repeats):
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


def interleaved(fns, repeats):
    """``{name: (median wall s, median CPU s)}``: one call of each fn in turn, ``repeats`` times."""
    for fn in fns.values():
        fn()  # warm up (compilation, first-touch pages)
    wall = {name: [] for name in fns}
    cpu = {name: [] for name in fns}
    for _ in range(repeats):
        for name, fn in fns.items():
            t0, c0 = time.perf_counter(), time.process_time()
            fn()
            wall[name].append(time.perf_counter() - t0)
            cpu[name].append(time.process_time() - c0)
    return {name: (statistics.median(wall[name]), statistics.median(cpu[name])) for name in fns}


def ties_like_a_model(rng, n):
    # Scores with ties, like a boosted model's leaf sums.
    return np.round(rng.normal(size=n), 2)


def bench_set(name, y, s, offsets, *, repeats, ranx_queries, sklearn_queries, out):
    n_rows = len(y)
    n_q = len(offsets) - 1
    sizes = np.diff(offsets)
    print(f"\n## {name}: {n_q:,} queries, {n_rows:,} rows (max {sizes.max()} docs/query)", file=out)
    rows = []

    # numba compiles on the first calls (cached on disk after the first run); the
    # interleaved timer below calls everything once before timing
    for kk in (10, None):
        for conv in ("lightgbm", "sklearn"):
            ndcg(y[: offsets[10]], s[: offsets[10]], offsets=offsets[:11], k=kk, convention=conv)

    import lightgbm as lgb

    ds = lgb.Dataset(np.zeros((n_rows, 1)), y, group=sizes, init_score=s,
                     params={"verbosity": -1})
    bst = lgb.Booster(params={"objective": "lambdarank", "metric": "ndcg", "eval_at": [10],
                              "verbosity": -1}, train_set=ds)
    qid = np.repeat(np.arange(n_q), sizes)
    fns = {
        "ltr from offsets (lightgbm convention, stable ties)":
            lambda: ndcg(y, s, offsets=offsets, k=10, convention="lightgbm"),
        "ltr from qid (lightgbm convention, incl. qid -> offsets)":
            lambda: ndcg(y, s, qid=qid, k=10, convention="lightgbm"),
        "ltr from offsets (sklearn convention, averaged ties)":
            lambda: ndcg(y, s, offsets=offsets, k=10, convention="sklearn"),
        "ltr from qid (sklearn convention)":
            lambda: ndcg(y, s, qid=qid, k=10, convention="sklearn"),
        "ltr from qid (xgboost convention, float32 scores)":
            lambda: ndcg(y, s, qid=qid, k=10, convention="xgboost"),
        "ltr k=None, whole list (lightgbm convention)":
            lambda: ndcg(y, s, offsets=offsets, k=None, convention="lightgbm"),
        "ltr k=None, whole list (sklearn convention)":
            lambda: ndcg(y, s, offsets=offsets, k=None, convention="sklearn"),
        "ltr k=[1, 5, 10, 20] from qid (lightgbm convention)":
            lambda: ndcg(y, s, qid=qid, k=[1, 5, 10, 20], convention="lightgbm"),
        "numpy scan floor (reduceat over both arrays)":
            lambda: (np.add.reduceat(y, offsets[:-1]), np.add.reduceat(s, offsets[:-1])),
        "LightGBM C++ ndcg@10 (eval_train)": bst.eval_train,
    }
    timed = interleaved(fns, repeats)
    cpu_of = {label: c for label, (_, c) in timed.items()}
    v_ltr = ndcg(y, s, qid=qid, k=10, convention="lightgbm")
    v_lgb = bst.eval_train()[0][2]
    values = {
        "ltr from offsets (lightgbm convention, stable ties)": float(v_ltr),
        "ltr from qid (lightgbm convention, incl. qid -> offsets)": float(v_ltr),
        "ltr from offsets (sklearn convention, averaged ties)":
            float(ndcg(y, s, offsets=offsets, k=10, convention="sklearn")),
        "ltr from qid (xgboost convention, float32 scores)":
            float(ndcg(y, s, qid=qid, k=10, convention="xgboost")),
        "ltr k=None, whole list (lightgbm convention)":
            float(ndcg(y, s, offsets=offsets, k=None, convention="lightgbm")),
        "ltr k=None, whole list (sklearn convention)":
            float(ndcg(y, s, offsets=offsets, k=None, convention="sklearn")),
        "LightGBM C++ ndcg@10 (eval_train)": v_lgb,
    }
    values["ltr from qid (sklearn convention)"] = values[
        "ltr from offsets (sklearn convention, averaged ties)"]
    for label, (t, _) in timed.items():
        rows.append((label, t, n_rows, values.get(label, float("nan"))))
    if abs(v_lgb - v_ltr) > 1e-12:
        print(f"WARNING: LightGBM {v_lgb!r} != ltr {float(v_ltr)!r}", file=out)

    from sklearn.metrics import ndcg_score

    nq_sk = min(n_q, sklearn_queries)
    width = int(sizes[:nq_sk].max())
    Y = np.zeros((nq_sk, width))
    S = np.full((nq_sk, width), -1e12)
    for q in range(nq_sk):
        a, b = offsets[q], offsets[q + 1]
        Y[q, : b - a] = y[a:b]
        S[q, : b - a] = s[a:b]
    t_sk = median_time(lambda: ndcg_score(Y, S, k=10), 1)
    v_sk = ndcg_score(Y, S, k=10)
    sk_rows = int(offsets[nq_sk])
    rows.append((f"scikit-learn ndcg_score, padded ({nq_sk:,} queries)", t_sk, sk_rows, v_sk))
    v_ltr_part = ndcg(y[:sk_rows], s[:sk_rows], offsets=offsets[: nq_sk + 1], k=10, convention="sklearn")
    if abs(v_sk - v_ltr_part) > 1e-12:
        print(f"WARNING: sklearn {v_sk!r} != ltr {float(v_ltr_part)!r}", file=out)

    try:
        import ranx

        nq_rx = min(n_q, ranx_queries)
        rx_rows = int(offsets[nq_rx])
        docs = [f"d{i}" for i in range(rx_rows)]

        def build():
            qrels, run = {}, {}
            for q in range(nq_rx):
                a, b = offsets[q], offsets[q + 1]
                qrels[f"q{q}"] = {docs[i]: int(y[i]) for i in range(a, b)}
                run[f"q{q}"] = {docs[i]: float(s[i]) for i in range(a, b)}
            return ranx.Qrels(qrels), ranx.Run(run)

        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            qr, rn = build()
            ranx.evaluate(qr, rn, "ndcg@10")  # compile
            t_build = median_time(build, 1)
            qr, rn = build()

            def ev():
                rn.mean_scores = {}
                rn.scores = {}
                return ranx.evaluate(qr, rn, "ndcg@10", save_results_in_run=False)

            t_eval = median_time(ev, 1)
        rows.append((f"ranx Qrels+Run construction ({nq_rx:,} queries)", t_build, rx_rows, float("nan")))
        rows.append((f"ranx evaluate ({nq_rx:,} queries)", t_eval, rx_rows, float("nan")))
        rows.append((f"ranx public path total ({nq_rx:,} queries)", t_build + t_eval, rx_rows, float("nan")))
    except ImportError:
        print("ranx not installed: skipped", file=out)

    ns_per_row = {label: t / r * 1e9 for label, t, r, _ in rows}
    base_label = "ltr from offsets (lightgbm convention, stable ties)"
    qid_label = "ltr from qid (lightgbm convention, incl. qid -> offsets)"
    lgb_label = "LightGBM C++ ndcg@10 (eval_train)"
    base = ns_per_row[base_label]
    print("\n| method | median wall s | median CPU s | rows | ns/row (wall) | ratio vs ltr "
          "(per row) | nDCG (@10 unless k=None) |", file=out)
    print("|---|---:|---:|---:|---:|---:|---:|", file=out)
    for label, t, r, v in rows:
        cpu = cpu_of.get(label)
        print(f"| {label} | {t:.4f} | {'' if cpu is None else f'{cpu:.4f}'} | {r:,} | "
              f"{ns_per_row[label]:.2f} | {ns_per_row[label] / base:.2f}x | "
              f"{'' if np.isnan(v) else f'{v:.6f}'} |", file=out)
    print("\nRatios (wall clock, medians of interleaved repetitions):", file=out)
    lgb = ns_per_row[lgb_label]
    print(f"- ltr from offsets / LightGBM = {base / lgb:.3f} (CPU time: "
          f"{cpu_of[base_label] / cpu_of[lgb_label]:.3f})", file=out)
    print(f"- ltr from qid / LightGBM = {ns_per_row[qid_label] / lgb:.3f} (target <= 0.3; CPU time: "
          f"{cpu_of[qid_label] / cpu_of[lgb_label]:.3f})", file=out)
    sk_label = next(lbl for lbl in ns_per_row if lbl.startswith("scikit-learn"))
    print(f"- ltr(sklearn conv.) / scikit-learn = "
          f"{ns_per_row['ltr from offsets (sklearn convention, averaged ties)'] / ns_per_row[sk_label]:.4f} "
          "(target <= 1/15 = 0.067)", file=out)
    rx_label = [lbl for lbl in ns_per_row if lbl.startswith("ranx public path")]
    if rx_label:
        print(f"- ltr / ranx public path = {base / ns_per_row[rx_label[0]]:.4f} (target <= 1/50 = 0.02)",
              file=out)
    print(f"- ltr / numpy scan floor = {base / ns_per_row['numpy scan floor (reduceat over both arrays)']:.2f}"
          " (target <= ~3)", file=out)


# label, docs per query, queries, k (LightGBM's eval_at: the same cut-offs; None: the whole query)
LIGHTGBM_SHAPES = [
    ("10-doc queries, k=10", 10, 100_000, 10),
    ("30-doc queries, k=10", 30, 33_333, 10),
    ("100-doc queries, k=10", 100, 10_000, 10),
    ("100-doc queries, k=20", 100, 10_000, 20),
    ("100-doc queries, k=50", 100, 10_000, 50),
    ("100-doc queries, k=100", 100, 10_000, 100),
    ("100-doc queries, k=None (whole list)", 100, 10_000, None),
    ("1000-doc queries, k=1000", 1_000, 1_000, 1_000),
    ("10^4-doc queries, k=1000", 10_000, 100, 1_000),
    ("100-doc queries, k=[1, 5, 10, 20]", 100, 10_000, [1, 5, 10, 20]),
    ("100-doc queries, k=[1, 10, 100, 1000]", 100, 10_000, [1, 10, 100, 1000]),
    ("1000-doc queries, k=[1, 10, 100, 1000]", 1_000, 1_000, [1, 10, 100, 1000]),
]


def _lgb_eval_booster(y, s, sizes, eval_at):
    import lightgbm as lgb

    ds = lgb.Dataset(np.zeros((len(y), 1)), y, group=sizes, init_score=s,
                     params={"verbosity": -1})
    return lgb.Booster(params={"objective": "lambdarank", "metric": "ndcg", "eval_at": eval_at,
                               "verbosity": -1}, train_set=ds)


def bench_lightgbm_shapes(repeats, out):
    """ltr from qid vs LightGBM's eval on every LIGHTGBM_SHAPES case, interleaved per shape."""
    print(f"\n## ltr from qid vs LightGBM's eval by shape (about 10^6 rows each; median of "
          f"{repeats} interleaved runs; load average {os.getloadavg()[0]:.1f})", file=out)
    print("\n| case | rows | LightGBM wall ms | ltr wall ms | ratio (wall) | LightGBM CPU ms | "
          "ltr CPU ms | ratio (CPU) | max abs diff |\n|---|---:|---:|---:|---:|---:|---:|---:|---:|",
          file=out)
    rng = np.random.default_rng(0)
    worst = 0.0
    for label, size, n_q, k in LIGHTGBM_SHAPES:
        n = size * n_q
        y = rng.choice(5, size=n, p=[0.52, 0.32, 0.13, 0.02, 0.01]).astype(np.float64)
        s = ties_like_a_model(rng, n) + 0.5 * y
        qid = np.repeat(np.arange(n_q), size)
        ks = k if isinstance(k, list) else [size if k is None else k]
        bst = _lgb_eval_booster(y, s, np.full(n_q, size), ks)
        timed = interleaved({
            "lgb": bst.eval_train,
            "ltr": lambda y=y, s=s, qid=qid, k=k: ndcg(y, s, qid=qid, k=k, convention="lightgbm"),
        }, repeats)
        v_lgb = [r[2] for r in bst.eval_train()]
        v_ltr = ndcg(y, s, qid=qid, k=k, convention="lightgbm")
        v_ltr = [float(v_ltr[kk]) for kk in k] if isinstance(k, list) else [float(v_ltr)]
        diff = max(abs(a - b) for a, b in zip(v_lgb, v_ltr))
        (lw, lc), (tw, tc) = timed["lgb"], timed["ltr"]
        worst = max(worst, tw / lw)
        result("ndcg_shape_" + re.sub(r"[^0-9A-Za-z]+", "_", label).strip("_"), tw / lw)
        print(f"| {label} | {n:,} | {lw * 1e3:.1f} | {tw * 1e3:.1f} | {tw / lw:.2f} | "
              f"{lc * 1e3:.1f} | {tc * 1e3:.1f} | {tc / lc:.2f} | {diff:.1e} |", file=out,
              flush=True)
        if diff > 1e-12:
            print(f"WARNING: {label}: LightGBM {v_lgb} != ltr {v_ltr}", file=out)
    print(f"\nHighest ratio ltr / LightGBM (wall): {worst:.2f} (target <= 1 in every shape)",
          file=out)
    result("ndcg_worst_shape", worst)


def bench_single_query(repeats, out):
    """One 10^6-document query from qid: all numba threads vs one thread, interleaved.

    With one thread the per-query driver runs (the only path before queries were split);
    run this same mode under ``PYTHONPATH=/work/before`` for the code before the change.
    """
    import numba

    rng = np.random.default_rng(0)
    n = 1_000_000
    y = rng.choice(5, size=n, p=[0.52, 0.32, 0.13, 0.02, 0.01]).astype(np.float64)
    s = ties_like_a_model(rng, n) + 0.5 * y
    qid = np.zeros(n, dtype=np.int64)
    threads = numba.get_num_threads()
    print(f"\n## one 10^6-document query from qid (LightGBM refuses queries over 10,000 rows; "
          f"median of {repeats} interleaved runs; load average {os.getloadavg()[0]:.1f})",
          file=out)
    print(f"\n| case | convention | 1 thread wall ms | {threads} threads wall ms | "
          "speed-up (1 thread / threads) |\n|---|---|---:|---:|---:|", file=out)

    def with_threads(count, fn):
        def run():
            numba.set_num_threads(count)
            try:
                return fn()
            finally:
                numba.set_num_threads(threads)
        return run

    for k in (10, 1000, None):
        for conv in ("lightgbm", "sklearn"):
            def call(k=k, conv=conv):
                return ndcg(y, s, qid=qid, k=k, convention=conv)
            timed = interleaved({"one": with_threads(1, call),
                                 "all": with_threads(threads, call)}, repeats)
            v1 = with_threads(1, call)()
            v2 = call()
            if float(v1) != float(v2):
                print(f"WARNING: k={k} {conv}: {float(v1)!r} != {float(v2)!r}", file=out)
            w1, w2 = timed["one"][0], timed["all"][0]
            result(f"ndcg_single_k{k}_{conv}_1thread_ms", w1 * 1e3, "ms")
            result(f"ndcg_single_k{k}_{conv}_threads_ms", w2 * 1e3, "ms")
            print(f"| k={k} | {conv} | {w1 * 1e3:.1f} | {w2 * 1e3:.1f} | {w1 / w2:.2f} |",
                  file=out, flush=True)


SHAPES = [
    # label, docs per query, queries, k
    ("8-doc queries, k=10", 8, 250_000, 10),
    ("30-doc queries, k=None", 30, 60_000, None),
    ("100-doc queries, k=10", 100, 20_000, 10),
    ("100-doc queries, k=20", 100, 20_000, 20),
    ("100-doc queries, k=[1, 5, 10, 20]", 100, 20_000, [1, 5, 10, 20]),
    ("100-doc queries, k=None", 100, 20_000, None),
    ("10^4-doc queries, k=10", 10_000, 200, 10),
    ("10^4-doc queries, k=None", 10_000, 200, None),
    ("10^5-doc queries, k=10", 100_000, 20, 10),
    ("10^6-doc queries, k=10", 1_000_000, 2, 10),
    ("10^6-doc queries, k=None", 1_000_000, 2, None),
]


def bench_headline(repeats, out):
    """LightGBM's eval, ltr from offsets and ltr from qid on 100,000 x 100 rows, interleaved."""
    import lightgbm as lgb

    rng = np.random.default_rng(0)
    n_q = 100_000
    n = n_q * 100
    offsets = np.arange(0, n + 1, 100, dtype=np.int64)
    y = rng.choice(5, size=n, p=[0.52, 0.32, 0.13, 0.02, 0.01]).astype(np.float64)
    s = ties_like_a_model(rng, n)
    qid = np.repeat(np.arange(n_q), 100)
    ds = lgb.Dataset(np.zeros((n, 1)), y, group=np.diff(offsets), init_score=s,
                     params={"verbosity": -1})
    bst = lgb.Booster(params={"objective": "lambdarank", "metric": "ndcg", "eval_at": [10],
                              "verbosity": -1}, train_set=ds)
    timed = interleaved({
        "LightGBM": bst.eval_train,
        "ltr from offsets": lambda: ndcg(y, s, offsets=offsets, k=10, convention="lightgbm"),
        "ltr from qid": lambda: ndcg(y, s, qid=qid, k=10, convention="lightgbm"),
    }, repeats)
    v_ltr = float(ndcg(y, s, qid=qid, k=10, convention="lightgbm"))
    v_lgb = bst.eval_train()[0][2]
    lw, lc = timed["LightGBM"]
    print(f"load average {os.getloadavg()[0]:.1f}, OMP_WAIT_POLICY="
          f"{os.environ.get('OMP_WAIT_POLICY', '(default)')}, median of {repeats}; "
          f"nDCG@10 ltr {v_ltr!r} LightGBM {v_lgb!r}", file=out)
    for name, (w, c) in timed.items():
        print(f"{name:17s} wall {w * 1e3:7.1f} ms  CPU {c * 1e3:7.1f} ms  "
              f"ratio {w / lw:.3f}  CPU ratio {c / lc:.3f}", file=out)
    result("ndcg_headline_from_qid", timed["ltr from qid"][0] / lw)


def bench_shapes(repeats, out):
    """ltr alone from qid on each SHAPES case: median wall and CPU ns/row, interleaved."""
    rng = np.random.default_rng(0)
    fns, n_rows = {}, {}
    for label, size, n_q, k in SHAPES:
        n = size * n_q
        qid = np.repeat(np.arange(n_q), size)
        y = rng.choice(5, size=n, p=[0.52, 0.32, 0.13, 0.02, 0.01]).astype(np.float64)
        s = ties_like_a_model(rng, n)
        for conv in ("lightgbm", "sklearn"):
            fns[(label, conv)] = (lambda y=y, s=s, qid=qid, k=k, conv=conv:
                                  ndcg(y, s, qid=qid, k=k, convention=conv))
            n_rows[(label, conv)] = n
    timed = interleaved(fns, repeats)
    print(f"\n## other shapes: ltr from qid, median of {repeats} interleaved runs", file=out)
    print("\n| case | convention | rows | wall ns/row | CPU ns/row |\n|---|---|---:|---:|---:|",
          file=out)
    for (label, conv), (t, c) in timed.items():
        n = n_rows[(label, conv)]
        print(f"| {label} | {conv} | {n:,} | {t / n * 1e9:.2f} | {c / n * 1e9:.2f} |", file=out)


KERNEL_CASES = [
    ("8-doc queries, k=10 (whole query, rank counting)", 8, 250_000, 10, 0),
    ("10-doc queries, k=10 (whole query, rank counting)", 10, 200_000, 10, 0),
    ("30-doc queries, k=None (whole query, insertion buffer)", 30, 60_000, 0, 0),
    ("100-doc queries, k=10 (threshold + rank counting)", 100, 20_000, 10, 0),
    ("100-doc queries, k=20 (threshold + rank counting: m <= 24)", 100, 20_000, 20, 0),
    ("100-doc queries, k=None, stable ties (full sort)", 100, 20_000, 0, 0),
    ("100-doc queries, k=None, averaged ties (full sort)", 100, 20_000, 0, 2),
    ("100-doc queries, k=None, doc-id ties (full sort)", 100, 20_000, 0, 1),
    ("1000-doc queries, k=100 (full sort)", 1000, 2_000, 100, 0),
]


def bench_kernel(kernel_file, repeats, out):
    """CPU ns/row of the serial dcg driver (DCG and ideal DCG) for each KERNEL_CASES shape."""
    if kernel_file:
        import importlib.util

        spec = importlib.util.spec_from_file_location("bench_dcg_kernel", kernel_file)
        K = importlib.util.module_from_spec(spec)
        sys.modules[spec.name] = K  # numba's on-disk cache re-imports the module by name
        spec.loader.exec_module(K)
    else:
        from ltr.kernels import _dcg as K
    print(f"\n## serial dcg kernel ({kernel_file or 'ltr.kernels._dcg'}), CPU time, "
          f"median of {repeats}", file=out)
    print("\n| case | rows | CPU ns/row |\n|---|---:|---:|", file=out)
    rng = np.random.default_rng(0)
    for label, size, n_q, k, tie_mode in KERNEL_CASES:
        offsets = np.arange(0, size * n_q + 1, size, dtype=np.int64)
        n = size * n_q
        y = rng.choice(5, size=n, p=[0.52, 0.32, 0.13, 0.02, 0.01]).astype(np.float64)
        s = ties_like_a_model(rng, n)
        keys = rng.permutation(n).astype(np.float64)
        label_gain = 2.0 ** np.arange(32) - 1.0
        length = size if k == 0 else min(k, size)
        disc = 1.0 / np.log2(np.arange(2, length + 2))
        d, i = np.zeros(n_q), np.zeros(n_q)
        args = (y, s, np.empty(0), K.GAIN_EXP2, keys, tie_mode, y, 1, label_gain, disc, offsets,
                k, d, i, True, True)
        K._dcg_idcg_serial(*args)  # compile / load
        times = []
        for _ in range(repeats):
            t0 = time.process_time()
            K._dcg_idcg_serial(*args)
            times.append(time.process_time() - t0)
        print(f"| {label} | {n:,} | {statistics.median(times) / n * 1e9:.2f} |", file=out)


class Tee:
    def __init__(self, *streams):
        self.streams = streams

    def write(self, text):
        for st in self.streams:
            st.write(text)

    def flush(self):
        for st in self.streams:
            st.flush()


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="10,000 queries instead of 100,000")
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--output", default=None, help="also write the tables to this markdown file")
    parser.add_argument("--kernel", action="store_true",
                        help="time the serial dcg kernel alone (CPU time), nothing else")
    parser.add_argument("--kernel-file", default=None,
                        help="with --kernel: a _dcg.py to time instead of ltr.kernels._dcg")
    parser.add_argument("--shapes", action="store_true",
                        help="time ltr alone on other shapes (short, long queries, k lists)")
    parser.add_argument("--headline", action="store_true",
                        help="only the 10M-row headline: LightGBM, ltr from offsets, from qid")
    parser.add_argument("--lightgbm-shapes", action="store_true",
                        help="only ltr from qid vs LightGBM's eval, shape by shape")
    parser.add_argument("--single", action="store_true",
                        help="only one 10^6-document query: all threads vs one thread")
    parser.add_argument("--peers", action="store_true",
                        help="the full peer tables (LightGBM, scikit-learn, ranx, numpy floor)")
    args = parser.parse_args(argv)
    if args.shapes:
        bench_shapes(max(args.repeats, 5), sys.stdout)
        return
    if args.headline:
        bench_headline(max(args.repeats, 7), sys.stdout)
        return
    if args.lightgbm_shapes or args.single or not (args.kernel or args.peers or args.quick):
        fh = open(args.output, "w") if args.output else None  # noqa: SIM115 - closed below
        out = Tee(sys.stdout, fh) if fh else sys.stdout
        everything = not (args.lightgbm_shapes or args.single)
        if everything:
            import lightgbm
            import numba

            print(f"# nDCG speed by shape: ltr vs LightGBM's eval\n\n`python "
                  f"experiments/bench_ndcg.py`; {os.cpu_count()} CPUs, numba "
                  f"{numba.__version__} ({numba.get_num_threads()} threads), LightGBM "
                  f"{lightgbm.__version__}.\n\n## headline: 100,000 queries x 100 docs, k=10\n",
                  file=out)
            bench_headline(max(args.repeats, 7), out)
        if everything or args.lightgbm_shapes:
            # calls of ~10 ms: 15 interleaved runs give a steadier median than 5 on a shared VM
            bench_lightgbm_shapes(max(args.repeats, 15), out)
        if everything or args.single:
            bench_single_query(args.repeats, out)
        if fh:
            fh.close()
        return
    if args.kernel:
        out = sys.stdout
        if args.output:
            with open(args.output, "w") as fh:
                bench_kernel(args.kernel_file, max(args.repeats, 9), Tee(sys.stdout, fh))
        else:
            bench_kernel(args.kernel_file, max(args.repeats, 9), out)
        return

    n_q = 10_000 if args.quick else 100_000
    streams = [sys.stdout]
    fh = open(args.output, "w") if args.output else None  # noqa: SIM115 - closed below
    if fh:
        streams.append(fh)
    out = Tee(*streams)
    import lightgbm
    import numba
    import sklearn

    print("# nDCG@10 speed: ltr vs LightGBM, scikit-learn, ranx and a numpy scan", file=out)
    print(f"\nCommand: `python experiments/bench_ndcg.py{' --quick' if args.quick else ''}`; "
          f"{os.cpu_count()} CPUs, {platform.processor() or platform.machine()}, "
          f"numba {numba.__version__} ({numba.config.NUMBA_NUM_THREADS} threads), "
          f"LightGBM {lightgbm.__version__}, scikit-learn {sklearn.__version__}. "
          f"Median of {args.repeats} interleaved runs (1 for scikit-learn and ranx); "
          f"load average at start {os.getloadavg()[0]:.1f}.", file=out)

    rng = np.random.default_rng(0)
    n_rows = n_q * 100
    offsets = np.arange(0, n_rows + 1, 100, dtype=np.int64)
    y = rng.choice(5, size=n_rows, p=[0.52, 0.32, 0.13, 0.02, 0.01]).astype(np.float64)
    s = ties_like_a_model(rng, n_rows)
    bench_set(f"uniform {n_q:,} x 100", y, s, offsets, repeats=args.repeats,
              ranx_queries=2_000, sklearn_queries=n_q if args.quick else 20_000, out=out)

    from ltr.synthetic import make_ranking

    data = make_ranking(2_000 if args.quick else 10_000, n_features=8, random_state=0)
    s2 = ties_like_a_model(np.random.default_rng(1), data.n_rows) + data.y * 0.5
    bench_set("MSLR-shaped synthetic (make_ranking)", data.y, s2, data.offsets,
              repeats=args.repeats, ranx_queries=500, sklearn_queries=2_000, out=out)
    if fh:
        fh.close()


if __name__ == "__main__":
    main()

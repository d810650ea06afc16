"""Scaling study: how ltr's costs grow with rows, query length, k and features, beside the peers.

Writes ``experiments/results/scaling.md``, ``scaling.json`` (raw numbers) and the plots
``scaling_rows.png``, ``scaling_objective_rows.png``, ``scaling_query_length.png``,
``scaling_k.png``, ``scaling_features.png`` and ``scaling_importance_rows.png``.

Dimensions (each beside the peer doing the same work, timed by interleaved repetitions:
one call of each contender in turn, repeated; medians reported, ratios of medians):

1. nDCG@10 from ``qid`` (as users call it) as rows grow, 100 documents per query, beside
   LightGBM's C++ ``ndcg@10`` on a Dataset whose groups are built (``bench_ndcg.py``'s set-up:
   a 0-iteration Booster with the scores as init score, ``eval_train``).
2. One LambdaRank objective round as rows grow: ``LambdaRankObjective(k=10).gradients`` alone,
   and per-round times of LightGBM trainings (1 feature, 7 leaves, 2 threads): native
   ``lambdarank`` (truncation 10), ltr's objective as a custom objective, and a "floor" custom
   objective returning fixed gradients (tree growth + custom-objective overhead, no objective
   work); native minus floor estimates LightGBM's own objective time.
3. Query length 10 -> 10^6 documents at a fixed 10^6 rows (10^5 with ``--quick``): nDCG@10 and
   one objective round, with LightGBM (refuses queries over 10,000 rows) and XGBoost
   (``rank:ndcg``, ``topk`` pairs, no hard limit) where they run.
4. k in (1, 5, 10, 20, 50, 100, None) for nDCG and the objective (None = whole list; the
   objective needs an int, so None is k = 100 = the whole 100-document query).
5. Features 10 -> 300 for permutation importance as ΔnDCG@10 (``ltr.inspection``) beside
   scikit-learn's ``permutation_importance`` with the equivalent grouped scorer
   (``bench_importance.py``'s), and importance as rows grow at 30 features.  Where
   scikit-learn's predicted time exceeds ``--sk-budget`` seconds it runs on the first queries
   only and its time is scaled by rows; such points are marked extrapolated.
6. A projection to 10^8 rows from the fitted per-row costs.

Memory: the peak resident-set growth of one call, measured as ``VmHWM - VmRSS`` after
resetting the high-water mark through ``/proc/self/clear_refs`` (Linux), after ``gc.collect()``
and ``malloc_trim(0)``: it sees every allocation (numpy, numba's runtime, C++) but not memory
re-used from the allocator's resident free lists; plus, for ltr's kernels, the ``tracemalloc``
peak of a separate call (numpy allocations only; numba's runtime and C++ allocations are
invisible to it).

Usage::

    python experiments/study_scaling.py            # full study, about 20 minutes on 2 cores
    python experiments/study_scaling.py --quick    # smoke run, about 1-2 minutes, written to
                                                   # $TMPDIR/ltr_scaling_quick (or --out DIR)
    python experiments/study_scaling.py --from-json   # re-render md + plots from scaling.json
"""

from __future__ import annotations

import os

# As the ltr CLI does: OpenMP threads (numba's parallel kernels, LightGBM, XGBoost) that spin at
# barriers steal the 2 cores from each other when the engines alternate; set before any OpenMP
# runtime starts.  An explicit OMP_WAIT_POLICY in the environment wins.
os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")

import argparse
import ctypes
import gc
import json
import platform
import statistics
import sys
import time
import tracemalloc
import warnings
from pathlib import Path

import numpy as np

# experiments/ is on sys.path when this file runs as a script: reuse bench_ndcg's score maker
from bench_ndcg import ties_like_a_model

from ltr.metrics import ndcg
from ltr.objectives import LambdaRankObjective

RESULTS = Path(__file__).resolve().parent / "results"
THREADS = 2
P_LABELS = [0.52, 0.32, 0.13, 0.02, 0.01]
LGB_QUERY_LIMIT = 10_000

# --------------------------------------------------------------------------- measurement


def _libc():
    try:
        return ctypes.CDLL("libc.so.6")
    except OSError:
        return None


LIBC = _libc()


def _status_kib(field: str) -> int:
    with open("/proc/self/status") as fh:
        for line in fh:
            if line.startswith(field + ":"):
                return int(line.split()[1])
    raise KeyError(field)


def _reset_hwm() -> bool:
    gc.collect()
    if LIBC is not None:
        LIBC.malloc_trim(0)
    try:
        with open("/proc/self/clear_refs", "w") as fh:
            fh.write("5")
        return True
    except OSError:
        return False


def rss_peak(fn) -> float:
    """Peak RSS growth (MiB) during one call of ``fn`` (nan where /proc cannot be reset)."""
    ok = _reset_hwm()
    rss0 = _status_kib("VmRSS")
    fn()
    hwm = _status_kib("VmHWM")
    return (hwm - rss0) / 1024 if ok else float("nan")


def traced_peak(fn) -> float:
    """tracemalloc peak (MiB) of one call: numpy / Python allocations only."""
    gc.collect()
    tracemalloc.start()
    fn()
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    return peak / 2**20


class Seconds(float):
    """A measurement a timed fn reports itself (e.g. median seconds per boosting round)."""


def interleave(fns: dict, repeats: int, warm: bool = True) -> dict[str, list[float]]:
    """One call of each fn in turn, ``repeats`` times.

    A fn returning :class:`Seconds` reports its own measurement (e.g. the median seconds per
    boosting round); otherwise the call's wall time is recorded.
    """
    if warm:
        for fn in fns.values():
            fn()
    out: dict[str, list[float]] = {name: [] for name in fns}
    for _ in range(repeats):
        for name, fn in fns.items():
            t0 = time.perf_counter()
            r = fn()
            t = time.perf_counter() - t0
            out[name].append(float(r) if isinstance(r, Seconds) else t)
    return out


def med(xs):
    return statistics.median(xs) if xs else float("nan")


def fit_linear(xs, ts):
    """Least squares ``t = a + b x`` weighted by 1/t (relative errors): (a, b)."""
    xs = np.asarray(xs, float)
    ts = np.asarray(ts, float)
    keep = np.isfinite(ts) & (ts > 0)
    xs, ts = xs[keep], ts[keep]
    if len(xs) < 2:
        return float("nan"), float("nan")
    w = 1.0 / ts
    A = np.stack([np.ones_like(xs), xs], axis=1) * w[:, None]
    (a, b), *_ = np.linalg.lstsq(A, ts * w, rcond=None)
    return float(a), float(b)


def labels_scores(n: int, rng):
    y = rng.choice(5, size=n, p=P_LABELS).astype(np.float64)
    s = ties_like_a_model(rng, n) + 0.5 * y
    return y, s


def log(msg: str) -> None:
    print(f"[{time.strftime('%H:%M:%S')} load {os.getloadavg()[0]:.1f}] {msg}", file=sys.stderr,
          flush=True)


# --------------------------------------------------------------------------- engines


def lgb_eval_booster(y, s, group, k):
    import lightgbm as lgb

    ds = lgb.Dataset(np.zeros((len(y), 1)), y, group=group, init_score=s,
                     params={"verbosity": -1, "num_threads": THREADS})
    return lgb.Booster(params={"objective": "lambdarank", "metric": "ndcg", "eval_at": [k],
                               "verbosity": -1, "num_threads": THREADS}, train_set=ds)


def xgb_eval_booster(y, s, qid, k):
    import xgboost as xgb

    dm = xgb.DMatrix(np.zeros((len(y), 1), np.float32), y, qid=qid, base_margin=s,
                     nthread=THREADS)
    bst = xgb.train({"objective": "rank:ndcg", "eval_metric": f"ndcg@{k}", "nthread": THREADS},
                    dm, 0)
    return lambda: bst.eval(dm)


class _Shared:
    """A custom objective LightGBM's deep copy of params leaves shared (no array copies)."""

    def __init__(self, fn):
        self.fn = fn

    def __deepcopy__(self, memo):
        return self

    def __call__(self, preds, data):
        return self.fn(preds, data)


def _const_objective(g, h):
    return _Shared(lambda preds, data: (g, h))


def lgb_dataset(feature, y, group):
    import lightgbm as lgb

    return lgb.Dataset(feature.reshape(-1, 1), y, group=group, free_raw_data=False,
                       params={"verbose": -1, "num_threads": THREADS}).construct()


def lgb_round_seconds(ds, objective, k, rounds):
    """Median seconds per round of a LightGBM training (first round excluded)."""
    import lightgbm as lgb

    stamps: list[float] = []

    def cb(env):
        stamps.append(time.perf_counter())

    cb.order = 100
    params = {"objective": objective, "num_leaves": 7, "learning_rate": 0.1,
              "num_threads": THREADS, "verbose": -1, "force_row_wise": True, "seed": 0,
              "min_data_in_leaf": 50, "lambdarank_truncation_level": k}
    lgb.train(params, ds, num_boost_round=rounds, callbacks=[cb])
    return Seconds(med(list(np.diff(stamps))))


def xgb_dmatrix(feature, y, qid):
    import xgboost as xgb

    return xgb.DMatrix(feature.reshape(-1, 1).astype(np.float32), y, qid=qid, nthread=THREADS)


def xgb_round_seconds(dm, obj, k, rounds):
    import xgboost as xgb

    stamps: list[float] = []

    class Timer(xgb.callback.TrainingCallback):
        def after_iteration(self, model, epoch, evals_log):
            stamps.append(time.perf_counter())
            return False

    params = {"tree_method": "hist", "max_depth": 3, "eta": 0.1, "nthread": THREADS,
              "seed": 0, "base_score": 0.0}
    if obj is None:
        params.update(objective="rank:ndcg", lambdarank_pair_method="topk",
                      lambdarank_num_pair_per_sample=k)
    xgb.train(params, dm, num_boost_round=rounds, obj=obj, callbacks=[Timer()])
    return Seconds(med(list(np.diff(stamps))))


# --------------------------------------------------------------------------- sections


def _record(x, n_rows, times, mem=None, traced=None, extra=None):
    rec = {"x": x, "rows": int(n_rows), "t": {k: med(v) for k, v in times.items()},
           "t_all": times, "rss": mem or {}, "traced": traced or {},
           "load": os.getloadavg()[0]}
    rec.update(extra or {})
    return rec


def _ndcg_rows_point(n_q, docs, repeats):
    n = n_q * docs
    y, s = labels_scores(n, np.random.default_rng(0))
    offsets = np.arange(0, n + 1, docs, dtype=np.int64)
    qid = np.repeat(np.arange(n_q, dtype=np.int64), docs)
    bst = lgb_eval_booster(y, s, np.diff(offsets), 10)
    fns = {
        "ltr from qid": lambda: ndcg(y, s, qid=qid, k=10, convention="lightgbm"),
        "ltr from offsets": lambda: ndcg(y, s, offsets=offsets, k=10, convention="lightgbm"),
        "LightGBM eval": bst.eval_train,
    }
    times = interleave(fns, repeats)
    v_ltr = float(ndcg(y, s, qid=qid, k=10, convention="lightgbm"))
    v_lgb = float(bst.eval_train()[0][2])
    mem = {name: rss_peak(fn) for name, fn in fns.items()}
    traced = {name: traced_peak(fn) for name, fn in fns.items() if name.startswith("ltr")}
    return _record(n, n, times, mem, traced, {"diff": abs(v_ltr - v_lgb)})


def study_ndcg_rows(sizes_q, docs, repeats):
    recs = []
    for n_q in sizes_q:
        log(f"nDCG rows {n_q * docs:,}")
        recs.append(_ndcg_rows_point(n_q, docs, repeats))
        gc.collect()
    return recs


def _objective_rows_point(n_q, docs, repeats, rounds):
    n = n_q * docs
    y, s = labels_scores(n, np.random.default_rng(0))
    offsets = np.arange(0, n + 1, docs, dtype=np.int64)
    obj = LambdaRankObjective(k=10)
    g0, h0 = obj.gradients(s, y, offsets)
    ds = lgb_dataset(s.astype(np.float32), y, np.diff(offsets))
    ours_lgb = _Shared(LambdaRankObjective(k=10))
    floor = _const_objective(g0, h0)
    fns = {
        "ltr gradients": lambda: obj.gradients(s, y, offsets),
        "LightGBM round, ltr objective": lambda: lgb_round_seconds(ds, ours_lgb, 10, rounds),
        "LightGBM round, native lambdarank": lambda: lgb_round_seconds(ds, "lambdarank", 10,
                                                                      rounds),
        "LightGBM round, fixed gradients (floor)": lambda: lgb_round_seconds(ds, floor, 10,
                                                                            rounds),
    }
    times = interleave(fns, repeats, warm=False)
    mem = {"ltr gradients": rss_peak(fns["ltr gradients"]),
           "LightGBM native, 3-round training": rss_peak(
               lambda: lgb_round_seconds(ds, "lambdarank", 10, 3)),
           "LightGBM + ltr objective, 3-round training": rss_peak(
               lambda: lgb_round_seconds(ds, ours_lgb, 10, 3))}
    traced = {"ltr gradients": traced_peak(fns["ltr gradients"])}
    rec = _record(n, n, times, mem, traced)
    rec["t"]["LightGBM native objective (native - floor)"] = (
        rec["t"]["LightGBM round, native lambdarank"]
        - rec["t"]["LightGBM round, fixed gradients (floor)"])
    return rec


def study_objective_rows(sizes_q, docs, repeats, rounds):
    recs = []
    for n_q in sizes_q:
        log(f"objective rows {n_q * docs:,}")
        recs.append(_objective_rows_point(n_q, docs, repeats, rounds))
        gc.collect()
    return recs


def _query_length_point(size, total, repeats, rounds):
    n_q = max(1, total // size)
    n = n_q * size
    y, s = labels_scores(n, np.random.default_rng(0))
    offsets = np.arange(0, n + 1, size, dtype=np.int64)
    qid = np.repeat(np.arange(n_q, dtype=np.int64), size)
    group = np.diff(offsets)
    lgb_ok = size <= LGB_QUERY_LIMIT
    feature = s.astype(np.float32)
    nd = {"nDCG ltr from qid": lambda: ndcg(y, s, qid=qid, k=10, convention="lightgbm")}
    if lgb_ok:
        nd["nDCG LightGBM eval"] = lgb_eval_booster(y, s, group, 10).eval_train
    nd["nDCG XGBoost eval"] = xgb_eval_booster(y, s, qid, 10)
    obj = LambdaRankObjective(k=10)
    g0, h0 = obj.gradients(s, y, offsets)
    ds = lgb_dataset(feature, y, group)
    dm = xgb_dmatrix(feature, y, qid)
    ours_lgb = _Shared(LambdaRankObjective(k=10))
    ours_xgb = LambdaRankObjective(k=10)
    floor_lgb = _const_objective(g0, h0)

    def floor_xgb(preds, dtrain):
        return g0, h0

    ob = {
        "ltr gradients": lambda: obj.gradients(s, y, offsets),
        "LightGBM round, ltr objective": lambda: lgb_round_seconds(ds, ours_lgb, 10, rounds),
        "LightGBM round, fixed gradients (floor)": lambda: lgb_round_seconds(ds, floor_lgb,
                                                                            10, rounds),
        "XGBoost round, ltr objective": lambda: xgb_round_seconds(dm, ours_xgb, 10, rounds),
        "XGBoost round, native rank:ndcg": lambda: xgb_round_seconds(dm, None, 10, rounds),
        "XGBoost round, fixed gradients (floor)": lambda: xgb_round_seconds(dm, floor_xgb,
                                                                           10, rounds),
    }
    if lgb_ok:
        ob["LightGBM round, native lambdarank"] = lambda: lgb_round_seconds(
            ds, "lambdarank", 10, rounds)
    times = interleave(nd, repeats)
    times.update(interleave(ob, 2 if repeats <= 3 else 3, warm=False))
    mem = {name: rss_peak(nd[name]) for name in nd}
    mem["ltr gradients"] = rss_peak(ob["ltr gradients"])
    traced = {"nDCG ltr from qid": traced_peak(nd["nDCG ltr from qid"]),
              "ltr gradients": traced_peak(ob["ltr gradients"])}
    rec = _record(size, n, times, mem, traced, {"queries": n_q})
    t = rec["t"]
    if lgb_ok:
        t["LightGBM native objective (native - floor)"] = (
            t["LightGBM round, native lambdarank"] - t["LightGBM round, fixed gradients (floor)"])
    t["XGBoost native objective (native - floor)"] = (
        t["XGBoost round, native rank:ndcg"] - t["XGBoost round, fixed gradients (floor)"])
    return rec


def study_query_length(sizes, total, repeats, rounds):
    recs = []
    for size in sizes:
        log(f"query length {size:,}")
        recs.append(_query_length_point(size, total, repeats, rounds))
        gc.collect()
    return recs


def _k_point(k, y, s, qid, offsets, ds, floor, docs, repeats, rounds):
    kk = docs if k is None else k  # LightGBM eval_at / truncation and our objective need ints
    bst = lgb_eval_booster(y, s, np.diff(offsets), kk)
    obj = LambdaRankObjective(k=kk)
    ours_lgb = _Shared(LambdaRankObjective(k=kk))
    nd = {"nDCG ltr from qid": lambda: ndcg(y, s, qid=qid, k=k, convention="lightgbm"),
          "nDCG LightGBM eval": bst.eval_train}
    ob = {"ltr gradients": lambda: obj.gradients(s, y, offsets),
          "LightGBM round, ltr objective": lambda: lgb_round_seconds(ds, ours_lgb, kk, rounds),
          "LightGBM round, native lambdarank": lambda: lgb_round_seconds(ds, "lambdarank", kk,
                                                                        rounds),
          "LightGBM round, fixed gradients (floor)": lambda: lgb_round_seconds(ds, floor, kk,
                                                                              rounds)}
    times = interleave(nd, repeats)
    times.update(interleave(ob, 2 if repeats <= 3 else 3, warm=False))
    v_ltr = float(ndcg(y, s, qid=qid, k=k, convention="lightgbm"))
    v_lgb = float(bst.eval_train()[0][2])
    mem = {"nDCG ltr from qid": rss_peak(nd["nDCG ltr from qid"]),
           "nDCG LightGBM eval": rss_peak(nd["nDCG LightGBM eval"]),
           "ltr gradients": rss_peak(ob["ltr gradients"])}
    traced = {"nDCG ltr from qid": traced_peak(nd["nDCG ltr from qid"]),
              "ltr gradients": traced_peak(ob["ltr gradients"])}
    rec = _record("None" if k is None else k, len(y), times, mem, traced,
                  {"diff": abs(v_ltr - v_lgb)})
    t = rec["t"]
    t["LightGBM native objective (native - floor)"] = (
        t["LightGBM round, native lambdarank"] - t["LightGBM round, fixed gradients (floor)"])
    return rec


def study_k(ks, n_q, docs, repeats, rounds):
    n = n_q * docs
    y, s = labels_scores(n, np.random.default_rng(0))
    offsets = np.arange(0, n + 1, docs, dtype=np.int64)
    qid = np.repeat(np.arange(n_q, dtype=np.int64), docs)
    ds = lgb_dataset(s.astype(np.float32), y, np.diff(offsets))
    g0, h0 = LambdaRankObjective(k=10).gradients(s, y, offsets)
    floor = _const_objective(g0, h0)
    recs = []
    for k in ks:
        log(f"k = {k}")
        recs.append(_k_point(k, y, s, qid, offsets, ds, floor, docs, repeats, rounds))
        gc.collect()
    return recs


def _train_model(n_features, trees, leaves, train_queries):
    import lightgbm as lgb

    from ltr.synthetic import make_ranking

    train = make_ranking(train_queries, n_features=n_features, random_state=1)
    model = lgb.LGBMRanker(n_estimators=trees, num_leaves=leaves, learning_rate=0.1,
                           n_jobs=THREADS, random_state=0, verbose=-1)
    model.fit(train.X, train.y, group=np.diff(train.offsets))
    return model


def _importance_pair(model, data, n_repeats, k, reps, sk_budget, sk_cost_per_unit):
    """Time ltr's and scikit-learn's importance; scikit-learn on a subsample if over budget.

    ``sk_cost_per_unit``: seconds per (row x feature) from earlier points (None at first).
    Returns (times, mem, extra) with the sklearn time scaled to the full rows if subsampled.
    """
    from sklearn.inspection import permutation_importance as sk_pi

    from ltr.inspection import permutation_importance

    X, y, qid, offsets = data.X, data.y, data.qid, data.offsets
    n, f = X.shape
    frac = 1.0
    if sk_cost_per_unit is not None:
        predicted = sk_cost_per_unit * n * f  # seconds of one run
        if predicted > sk_budget:
            frac = max(sk_budget / 2 / predicted, 0.005)
    if frac < 1.0:
        n_q_sub = max(10, round(data.n_queries * frac))
        n_sub = int(offsets[n_q_sub])
    else:
        n_sub = n
    Xs, ys, qs = X[:n_sub], y[:n_sub], qid[:n_sub]

    def scorer(estimator, X_, y_):  # bench_importance.py's equivalent scikit-learn scorer
        return float(ndcg(y_, estimator.predict(X_), qid=qs, k=k))

    # warm the kernels: the same call, so the same path (small jobs are predicted in full)
    permutation_importance(model, X, y, qid=qid, k=k, n_repeats=n_repeats, random_state=0,
                           progress=False)
    res: dict = {}

    def ours():
        res["ours"] = permutation_importance(model, X, y, qid=qid, k=k, n_repeats=n_repeats,
                                             random_state=0, progress=False)

    def theirs():
        res["sk"] = sk_pi(model, Xs, ys, scoring=scorer, n_repeats=n_repeats, random_state=0)

    times: dict[str, list[float]] = {"ltr importance": [], "scikit-learn importance": []}
    mem: dict[str, float] = {}
    for rep in range(reps):
        order = [("ltr importance", ours), ("scikit-learn importance", theirs)]
        for name, fn in order if rep % 2 == 0 else order[::-1]:
            if rep == reps - 1:  # the last repetition also gives the peak RSS
                ok = _reset_hwm()
                rss0 = _status_kib("VmRSS")
            t0 = time.perf_counter()
            fn()
            times[name].append(time.perf_counter() - t0)
            if rep == reps - 1:
                mem[name] = (_status_kib("VmHWM") - rss0) / 1024 if ok else float("nan")
    extra = {"sk_rows": n_sub, "sk_extrapolated": n_sub < n}
    if n_sub < n:
        times["scikit-learn importance"] = [t * n / n_sub for t in times["scikit-learn importance"]]
        mem["scikit-learn importance"] = mem["scikit-learn importance"] * n / n_sub
        extra["diff"] = None
    else:
        extra["diff"] = float(np.max(np.abs(res["ours"].importances - res["sk"].importances)))
    extra["rows_repredicted_share"] = float(res["ours"].n_rows_predicted / (n * f * n_repeats))
    return times, mem, extra


def study_features(features, n_queries, trees, leaves, n_repeats, reps, sk_budget):
    from ltr.synthetic import make_ranking

    recs = []
    cost = None
    for f in features:
        log(f"importance, {f} features")
        data = make_ranking(n_queries, n_features=f, random_state=0)
        model = _train_model(f, trees, leaves, max(200, n_queries // 3))
        times, mem, extra = _importance_pair(model, data, n_repeats, 10, reps, sk_budget, cost)
        n = data.n_rows
        cost = med(times["scikit-learn importance"]) / (n * f)
        recs.append(_record(f, n, times, mem, None, extra))
        del data, model
        gc.collect()
    return recs


def study_importance_rows(sizes_q, n_features, trees, leaves, n_repeats, reps, sk_budget):
    from ltr.synthetic import make_ranking

    model = _train_model(n_features, trees, leaves, 1000)
    recs = []
    cost = None
    for n_q in sizes_q:
        data = make_ranking(n_q, n_features=n_features, random_state=0)
        log(f"importance rows {data.n_rows:,}")
        times, mem, extra = _importance_pair(model, data, n_repeats, 10,
                                             reps if data.n_rows <= 2_000_000 else 1,
                                             sk_budget, cost)
        if not extra["sk_extrapolated"]:
            cost = med(times["scikit-learn importance"]) / (data.n_rows * n_features)
        recs.append(_record(data.n_rows, data.n_rows, times, mem, None, extra))
        del data
        gc.collect()
    return recs


# --------------------------------------------------------------------------- reporting


def fmt_t(t):
    if t is None or not np.isfinite(t):
        return "–"
    if abs(t) >= 1:
        return f"{t:.2f} s"
    return f"{t * 1e3:.1f} ms"


def fmt_gib(g):
    if g is None or not np.isfinite(g):
        return "–"
    if g < 0.1:
        return f"{max(g, 0) * 1024:.0f} MiB"
    return f"{g:.1f} GiB"


def fmt_m(m):
    return "–" if m is None or not np.isfinite(m) else f"{m:,.0f}"


def table(recs, xlabel, cols, ratios, mems, per="row"):
    """Markdown table: x, rows, each time (and ns per row), each ratio, each memory."""
    show_rows = xlabel != "rows"
    head = [xlabel] + (["rows"] if show_rows else []) + [f"{c} (ns/{per})" for c in cols] + [r[0] for r in ratios] + [
        f"peak RSS Δ MiB: {m}" for m in mems] + ["load"]
    lines = ["| " + " | ".join(head) + " |", "|" + "---:|" * len(head)]
    for r in recs:
        n = r["rows"]
        cells = [f"{r['x']:,}" if isinstance(r["x"], int) else str(r["x"])]
        cells += [f"{n:,}"] if show_rows else []
        for c in cols:
            t = r["t"].get(c)
            if t is None:
                cells.append("refused" if "LightGBM" in c else "–")
                continue
            mark = "*" if (c.startswith("scikit") and r.get("sk_extrapolated")) else ""
            cells.append(f"{fmt_t(t)}{mark} ({t / n * 1e9:.1f})")
        for _, a, b in ratios:
            ta, tb = r["t"].get(a), r["t"].get(b)
            cells.append(f"{ta / tb:.2f}" if ta and tb and tb > 0 else "–")
        for m in mems:
            cells.append(fmt_m(r["rss"].get(m)))
        cells.append(f"{r['load']:.1f}")
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def plot(path, recs, title, xlabel, panels, *, per="row", vline=None, note=None, xvals=None):
    """One row of three axes (time, ns per row, peak RSS) per ``(label, series, mem_series)``."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, grid = plt.subplots(len(panels), 3, figsize=(16, 4.4 * len(panels)), squeeze=False)
    xs = xvals if xvals is not None else [r["x"] for r in recs]
    numeric = all(isinstance(x, (int, float)) for x in xs)
    for axes, (label, series, mem_series) in zip(grid, panels):
        for name in series:
            pts = [(x, r["t"].get(name), r["rows"],
                    bool(r.get("sk_extrapolated")) and name.startswith("scikit"))
                   for x, r in zip(xs, recs)]
            pts = [p for p in pts if p[1] is not None and np.isfinite(p[1]) and p[1] > 0]
            if not pts:
                continue
            x, t, n, ex = zip(*pts)
            line, = axes[0].plot(x, t, "o-", label=name)
            axes[1].plot(x, np.array(t) / np.array(n) * 1e9, "o-", color=line.get_color())
            for xi, ti, ni, e in zip(x, t, n, ex):
                if e:  # extrapolated from a subsample: hollow marker
                    axes[0].plot([xi], [ti], "o", mfc="white", color=line.get_color())
                    axes[1].plot([xi], [ti / ni * 1e9], "o", mfc="white", color=line.get_color())
        for name in mem_series:
            pts = [(x, r["rss"].get(name)) for x, r in zip(xs, recs)]
            pts = [p for p in pts if p[1] is not None and np.isfinite(p[1])]
            if pts:
                x, m = zip(*pts)
                axes[2].plot(x, np.maximum(m, 0.1), "s-", label=name)
        axes[0].set_ylabel(f"{label}: seconds (median)")
        axes[1].set_ylabel(f"{label}: ns per {per}")
        axes[2].set_ylabel(f"{label}: peak RSS growth, MiB (floor 0.1)")
        for ax in axes:
            ax.set_xlabel(xlabel)
            if numeric:
                ax.set_xscale("log")
            ax.set_yscale("log")
            ax.grid(True, which="both", alpha=0.3)
            if vline is not None:
                ax.axvline(vline[0], color="red", ls="--", lw=1, label=vline[1])
        axes[0].legend(fontsize=7)
        if mem_series:
            axes[2].legend(fontsize=7)
    fig.suptitle(title + (f"\n{note}" if note else ""), fontsize=10)
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)


def make_plots(res):
    ndcg_rows = ["ltr from qid", "ltr from offsets", "LightGBM eval"]
    plot(RESULTS / "scaling_rows.png", res["ndcg_rows"], "nDCG@10 vs rows (100 docs/query)",
         "rows", [("nDCG@10", ndcg_rows, ndcg_rows)])
    plot(RESULTS / "scaling_objective_rows.png", res["objective_rows"],
         "One LambdaRank round (k=10) vs rows (100 docs/query)", "rows",
         [("objective", ["ltr gradients", "LightGBM native objective (native - floor)",
                         "LightGBM round, ltr objective", "LightGBM round, native lambdarank",
                         "LightGBM round, fixed gradients (floor)"],
           ["ltr gradients", "LightGBM native, 3-round training",
            "LightGBM + ltr objective, 3-round training"])])
    plot(RESULTS / "scaling_query_length.png", res["query_length"],
         f"nDCG@10 and one objective round (k=10) vs query length ({res['ql_total']:,} rows)",
         "documents per query",
         [("nDCG@10", ["nDCG ltr from qid", "nDCG LightGBM eval", "nDCG XGBoost eval"],
           ["nDCG ltr from qid", "nDCG LightGBM eval", "nDCG XGBoost eval"]),
          ("objective", ["ltr gradients", "LightGBM native objective (native - floor)",
                         "XGBoost native objective (native - floor)",
                         "LightGBM round, ltr objective", "LightGBM round, native lambdarank",
                         "XGBoost round, ltr objective", "XGBoost round, native rank:ndcg"],
           ["ltr gradients"])],
         vline=(LGB_QUERY_LIMIT, "LightGBM limit: 10,000 rows/query (objective + metric)"),
         note="XGBoost rank:ndcg: no hard limit (topk pairs, O(n·k)); ltr: no limit, O(n·k) "
              "pairs with truncation k")
    ks = [r["x"] for r in res["k"]]
    plot(RESULTS / "scaling_k.png", res["k"], "nDCG and one objective round vs k "
         f"({res['k'][0]['rows']:,} rows, 100 docs/query; None = whole list, drawn at 100)", "k",
         [("nDCG", ["nDCG ltr from qid", "nDCG LightGBM eval"],
           ["nDCG ltr from qid", "nDCG LightGBM eval"]),
          ("objective", ["ltr gradients", "LightGBM native objective (native - floor)",
                         "LightGBM round, ltr objective", "LightGBM round, native lambdarank"],
           ["ltr gradients"])],
         xvals=[100 if k == "None" else k for k in ks])
    imp = ["ltr importance", "scikit-learn importance"]
    plot(RESULTS / "scaling_features.png", res["features"],
         "ΔnDCG@10 permutation importance vs features (hollow: scikit-learn extrapolated "
         "from a subsample)", "features", [("importance", imp, imp)])
    plot(RESULTS / "scaling_importance_rows.png", res["importance_rows"],
         f"ΔnDCG@10 permutation importance vs rows ({res['importance_setup']['rows_features']} "
         "features; hollow: scikit-learn extrapolated from a subsample)", "rows",
         [("importance", imp, imp)])


def ltr_source() -> str:
    """Where ``ltr`` was imported from and at which commit (``LTR_COMMIT`` overrides)."""
    import subprocess

    import ltr

    src = Path(ltr.__file__).resolve().parent
    commit = os.environ.get("LTR_COMMIT")
    if not commit:
        try:
            commit = subprocess.run(["git", "-C", str(src), "rev-parse", "--short", "HEAD"],
                                    capture_output=True, text=True, check=True).stdout.strip()
            dirty = subprocess.run(["git", "-C", str(src), "status", "--porcelain", "--", "."],
                                   capture_output=True, text=True, check=True).stdout.strip()
            commit += " with uncommitted changes" if dirty else ""
        except (OSError, subprocess.CalledProcessError):
            commit = "unknown commit"
    return f"`ltr` {getattr(ltr, '__version__', '')} from `{src}` at {commit}"


def write_report(res, args, elapsed):
    import lightgbm
    import numba
    import sklearn
    import xgboost

    quick = " --quick" if args.quick else ""
    L: list[str] = []
    add = L.append
    add("# Scaling study: nDCG, objective round and ΔnDCG importance vs rows, query length, k, "
        "features\n")
    add(f"Reproduce: `python experiments/study_scaling.py{quick}` "
        f"({'smoke run' if args.quick else 'full study'}; wall time {elapsed / 60:.1f} min); "
        "`--from-json` re-renders this page and the plots from `scaling.json`.\n")
    if "/tmp/" in res["ltr_source"] or str(RESULTS.parent.parent) not in res["ltr_source"]:
        add("This run imported a clean export of the committed `ltr/` through `PYTHONPATH` "
            "(`git archive HEAD ltr | tar -x -C DIR`, `LTR_COMMIT=<sha>` naming it), so that "
            "other engineers' uncommitted edits in the shared working tree did not enter the "
            "measurement.\n")
    mem_gib = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / 2**30
    add(f"Machine: {platform.machine()} {platform.processor() or ''}, {os.cpu_count()} CPUs, "
        f"{mem_gib:.0f} GiB RAM shared with other jobs; Python {platform.python_version()}, "
        f"numpy {np.__version__}, OMP_WAIT_POLICY={os.environ.get('OMP_WAIT_POLICY')} (as the "
        "`ltr` CLI sets it: spinning OpenMP threads of alternating engines steal each other's "
        f"cores), numba {numba.__version__} "
        f"({numba.config.NUMBA_NUM_THREADS} threads), LightGBM {lightgbm.__version__}, "
        f"XGBoost {xgboost.__version__}, scikit-learn {sklearn.__version__}; every engine on "
        f"{THREADS} threads; {res['ltr_source']}. Load average (1 min) {res['load_start']:.1f} at the start, "
        f"{res['load_end']:.1f} at the end, and per row in the tables: the machine was shared, so "
        "absolute times are noisy; the ratios come from interleaved repetitions (one call of each "
        "contender in turn) and are the steadier figures.\n")
    add("Data: labels drawn with MSLR-WEB10K's grade shares (52/32/13/2/1 %), scores = a normal "
        "draw rounded to 0.01 (ties, as a boosted model's leaf sums) + 0.5 x label "
        "(`bench_ndcg.ties_like_a_model`); importance uses `ltr.synthetic.make_ranking` (MSLR-"
        "shaped, about 120 documents per query, float32 features).\n")
    add("Memory: *peak RSS Δ* is the growth of the resident set during one call "
        "(`VmHWM` after resetting it through `/proc/self/clear_refs`, minus `VmRSS` before, after "
        "`gc.collect()` and `malloc_trim(0)`). It sees numpy, numba-runtime and C++ allocations "
        "alike, but misses memory the allocator re-uses from its own free lists, and the engines' "
        "buffers built before the call (LightGBM's Dataset and booster score buffers for its "
        "eval). ltr's kernels are also measured with `tracemalloc` (separate call; it sees only "
        "numpy/Python allocations, not numba's runtime or C++), in `scaling.json`.\n")

    # 1. nDCG rows
    recs = res["ndcg_rows"]
    add("## 1. nDCG@10 as rows grow (100 documents per query)\n")
    add("ltr's `ndcg(y, s, qid=qid, k=10, convention=\"lightgbm\")` (the qid-to-offsets "
        "conversion included, as users call it) and from ready offsets, beside LightGBM's C++ "
        "`ndcg@10` evaluating a Dataset whose groups are already built (`eval_train` of a "
        f"0-iteration Booster, as in `bench_ndcg.py`). Median of {res['repeats']} interleaved "
        "runs. Values equal LightGBM's to "
        f"{max(r['diff'] for r in recs):.1e}.\n")
    add(table(recs, "rows", ["ltr from qid", "ltr from offsets", "LightGBM eval"],
              [("ltr qid / LightGBM", "ltr from qid", "LightGBM eval"),
               ("ltr offsets / LightGBM", "ltr from offsets", "LightGBM eval")],
              ["ltr from qid", "LightGBM eval"]))
    add("\n![nDCG vs rows](scaling_rows.png)\n")

    # 2. objective rows
    recs = res["objective_rows"]
    add("## 2. One LambdaRank objective round as rows grow (100 documents per query, k = 10)\n")
    add("`LambdaRankObjective(k=10).gradients(scores, labels, offsets)` alone, beside per-round "
        f"times of LightGBM trainings ({res['rounds']} rounds, first excluded, median; 1 feature, "
        "7 leaves, 2 threads): native `lambdarank` (truncation 10), ltr's objective as the "
        "custom objective, and fixed gradients (the floor: tree growth plus LightGBM's "
        "custom-objective overhead). *native − floor* estimates LightGBM's own objective time "
        "(the work ltr's `gradients` does). Memory of the trainings is of a whole 3-round "
        "training (booster buffers included).\n")
    add(table(recs, "rows", ["ltr gradients", "LightGBM native objective (native - floor)",
                             "LightGBM round, ltr objective", "LightGBM round, native lambdarank",
                             "LightGBM round, fixed gradients (floor)"],
              [("ltr gradients / native objective", "ltr gradients",
                "LightGBM native objective (native - floor)"),
               ("round ltr / round native", "LightGBM round, ltr objective",
                "LightGBM round, native lambdarank")],
              ["ltr gradients", "LightGBM native, 3-round training",
               "LightGBM + ltr objective, 3-round training"]))
    add("\n![objective vs rows](scaling_objective_rows.png)\n")

    # 3. query length
    recs = res["query_length"]
    add(f"## 3. Query length ({recs[0]['x']:,} → {recs[-1]['x']:,} documents per query, "
        f"{res['ql_total']:,} rows in all)\n")
    add("nDCG@10 and one objective round (k = 10). LightGBM refuses queries over "
        f"{LGB_QUERY_LIMIT:,} rows in both its ranking objective and its ranking metric "
        "(`Number of rows ... exceeds upper limit of 10000 for a query`, checked here): "
        "*refused*. XGBoost's `rank:ndcg` has no hard limit; with `lambdarank_pair_method="
        "\"topk\"` (its default) and `lambdarank_num_pair_per_sample=10` it builds pairs between "
        "each of the top 10 and every document of the query: O(n·k) pairs after an "
        "O(n log n) sort per query. ltr's objective with k = 10 likewise takes all pairs "
        "that touch the top k (O(n·k) per query with truncation, not O(n²)). Training rounds "
        "use 1 feature, 7 leaves (LightGBM) / depth 3 (XGBoost).\n")
    add(table(recs, "docs/query", ["nDCG ltr from qid", "nDCG LightGBM eval", "nDCG XGBoost eval"],
              [("nDCG ltr / LightGBM", "nDCG ltr from qid", "nDCG LightGBM eval"),
               ("nDCG ltr / XGBoost", "nDCG ltr from qid", "nDCG XGBoost eval")],
              ["nDCG ltr from qid", "nDCG LightGBM eval", "nDCG XGBoost eval"]))
    add("")
    add(table(recs, "docs/query",
              ["ltr gradients", "LightGBM native objective (native - floor)",
               "XGBoost native objective (native - floor)", "LightGBM round, ltr objective",
               "LightGBM round, native lambdarank", "XGBoost round, ltr objective",
               "XGBoost round, native rank:ndcg"],
              [("round ltr / LightGBM native", "LightGBM round, ltr objective",
                "LightGBM round, native lambdarank"),
               ("round ltr / XGBoost native", "XGBoost round, ltr objective",
                "XGBoost round, native rank:ndcg")],
              ["ltr gradients"]))
    add("\n![query length](scaling_query_length.png)\n")

    # 4. k
    recs = res["k"]
    add(f"## 4. Truncation k ({recs[0]['rows']:,} rows, 100 documents per query)\n")
    add("k = None is the whole list: `ndcg(k=None)`; LightGBM `eval_at=[100]`, "
        "`lambdarank_truncation_level=100` and `LambdaRankObjective(k=100)` (the objective "
        "takes an int; 100 = every document of these queries). nDCG values equal LightGBM's "
        f"to {max(r['diff'] for r in recs):.1e}.\n")
    add(table(recs, "k", ["nDCG ltr from qid", "nDCG LightGBM eval", "ltr gradients",
                          "LightGBM native objective (native - floor)",
                          "LightGBM round, ltr objective", "LightGBM round, native lambdarank"],
              [("nDCG ltr / LightGBM", "nDCG ltr from qid", "nDCG LightGBM eval"),
               ("round ltr / native", "LightGBM round, ltr objective",
                "LightGBM round, native lambdarank")],
              ["nDCG ltr from qid", "nDCG LightGBM eval", "ltr gradients"]))
    add("\n![k](scaling_k.png)\n")

    # 5. features
    recs = res["features"]
    imp = res["importance_setup"]
    add(f"## 5. ΔnDCG@10 permutation importance as features grow "
        f"(`make_ranking({imp['queries']})`, {imp['n_repeats']} repeats)\n")
    add(f"Model: `LGBMRanker({imp['trees']} trees, {imp['leaves']} leaves)` trained on a separate "
        "`make_ranking(..., random_state=1)` with the same features. ltr: "
        "`ltr.inspection.permutation_importance(model, X, y, qid=qid, k=10, n_repeats=...)` "
        "(global strategy); scikit-learn: `sklearn.inspection.permutation_importance` with "
        "`bench_importance.py`'s equivalent grouped nDCG@10 scorer. Median of "
        f"{imp['reps']} interleaved runs; the peak RSS is from the last one. `*`: scikit-learn "
        f"predicted over the {args.sk_budget:.0f} s budget, so it ran on the first queries only "
        "(the `sk rows` column) and its time and memory were scaled by rows (linear: each of "
        "its predictions is linear in rows); no value check there. Where both ran in full, "
        "the importances are identical (max |Δ| column). Time per row here is per row of X "
        "(all features together).\n")
    add(table(recs, "features", ["ltr importance", "scikit-learn importance"],
              [("ltr / scikit-learn", "ltr importance", "scikit-learn importance")],
              ["ltr importance", "scikit-learn importance"]))
    add("\n| features | sk rows | max abs(ltr − sklearn) | share of (row, feature, repeat) "
        "re-predicted by ltr |\n|---:|---:|---:|---:|")
    for r in recs:
        d = "–" if r["diff"] is None else f"{r['diff']:.1e}"
        add(f"| {r['x']} | {r['sk_rows']:,} | {d} | {r['rows_repredicted_share']:.1%} |")
    add("\n![features](scaling_features.png)\n")

    recs = res["importance_rows"]
    add(f"### Importance as rows grow ({imp['rows_features']} features, same model settings)\n")
    add(table(recs, "rows", ["ltr importance", "scikit-learn importance"],
              [("ltr / scikit-learn", "ltr importance", "scikit-learn importance")],
              ["ltr importance", "scikit-learn importance"]))
    add("\n| rows | sk rows | max abs(ltr − sklearn) |\n|---:|---:|---:|")
    for r in recs:
        d = "–" if r["diff"] is None else f"{r['diff']:.1e}"
        add(f"| {r['rows']:,} | {r['sk_rows']:,} | {d} |")
    add("\n![importance vs rows](scaling_importance_rows.png)\n")

    # fitted costs and projection
    add("## Fitted per-row costs\n")
    add("Least squares `t = a + b·n` over every size of the dimension, weighted by 1/t "
        "(relative errors), on the medians above; b is the marginal cost, a the fixed cost.\n")
    add("| quantity | fixed a | marginal b | unit |\n|---|---:|---:|---|")
    for name, (a, b, unit) in res["fits"].items():
        add(f"| {name} | {fmt_t(a)} | {b * 1e9:.2f} ns | {unit} |")
    add("")
    add("## Projection to 100 M rows\n")
    add("Assumptions: 100 documents per query (10^6 queries), the per-row cost b fitted above "
        "holds linearly (a + b·10^8), the same 2 threads (numba, LightGBM and scikit-learn's "
        "model predictions each on 2); on more cores divide by at most the thread count (the "
        "nDCG kernels are partly memory-bound, so expect less), input arrays in float64 "
        "(labels, scores) and int64 (qid), 24 bytes per row = 2.2 GiB at 10^8 rows, plus the "
        "measured peak RSS growth per row. Importance: the model and settings of section 5 at "
        f"{imp['rows_features']} features ({imp['n_repeats']} repeats); X in float32 takes "
        f"{imp['rows_features'] * 4} bytes per row ({imp['rows_features'] * 4 * 1e8 / 2**30:.1f} "
        "GiB at 10^8 rows), 136 MSLR features 50.7 GiB, beyond one 24 GiB machine (split by "
        "query: `ltr.dask`).\n")
    add("| operation | ltr at 10^8 rows | peer at 10^8 rows | ltr peak RSS Δ at 10^8 | "
        "peer peak RSS Δ at 10^8 |\n|---|---:|---:|---:|---:|")
    for row in res["projection"]:
        add("| " + " | ".join(row) + " |")
    add("")
    add("## Reading\n")
    add(res.get("reading", "").strip() + "\n")
    add("## What was not measured\n")
    add(res.get("not_measured", "").strip() + "\n")
    (RESULTS / "scaling.md").write_text("\n".join(L))


def fits_and_projection(res):
    fits = {}

    def fit(name, recs, key, unit, xkey="rows", scale=1.0):
        xs = [r[xkey] for r in recs if key in r["t"]]
        ts = [r["t"][key] / scale for r in recs if key in r["t"]]
        a, b = fit_linear(xs, ts)
        fits[name] = (a, b, unit)
        return a, b

    def mem_per_row(recs, key):
        xs = [r["rows"] for r in recs if np.isfinite(r["rss"].get(key, np.nan))]
        ms = [r["rss"][key] * 2**20 for r in recs if np.isfinite(r["rss"].get(key, np.nan))]
        if len(xs) < 2:
            return float("nan")
        return float(np.polyfit(xs, ms, 1)[0])  # bytes per row

    nr, orr, ir = res["ndcg_rows"], res["objective_rows"], res["importance_rows"]
    f_q = fit("nDCG@10, ltr from qid", nr, "ltr from qid", "per row")
    f_o = fit("nDCG@10, ltr from offsets", nr, "ltr from offsets", "per row")
    f_l = fit("nDCG@10, LightGBM eval", nr, "LightGBM eval", "per row")
    f_g = fit("objective, ltr gradients (k=10)", orr, "ltr gradients", "per row")
    f_n = fit("objective, LightGBM native (native - floor)", orr,
              "LightGBM native objective (native - floor)", "per row")
    f_rl = fit("round, LightGBM + ltr objective (1 feature, 7 leaves)", orr,
               "LightGBM round, ltr objective", "per row")
    f_rn = fit("round, LightGBM native lambdarank (1 feature, 7 leaves)", orr,
               "LightGBM round, native lambdarank", "per row")
    fit("objective, ltr gradients vs query length (per doc, 10^6 rows)",
               res["query_length"], "ltr gradients", "per doc (x = docs/query, fixed rows)",
               xkey="x")
    fr = res["importance_setup"]["rows_features"] * res["importance_setup"]["n_repeats"]
    f_il = fit("importance, ltr (per row x feature x repeat)", ir, "ltr importance",
               "per row·feature·repeat", scale=fr)
    f_is = fit("importance, scikit-learn (per row x feature x repeat)", ir,
               "scikit-learn importance", "per row·feature·repeat", scale=fr)
    N = 1e8
    proj = []

    def row(label, fl, fp, ml, mp, mult=1.0):
        tl = (fl[0] + fl[1] * N) * mult
        tp = (fp[0] + fp[1] * N) * mult if fp else float("nan")
        gl = ml * N / 2**30
        gp = mp * N / 2**30 if np.isfinite(mp) else float("nan")
        proj.append([label, fmt_t(tl), fmt_t(tp), fmt_gib(gl), fmt_gib(gp)])

    m_q = mem_per_row(nr, "ltr from qid")
    m_l = mem_per_row(nr, "LightGBM eval")
    row("nDCG@10 from qid vs LightGBM eval", f_q, f_l, m_q, m_l)
    row("nDCG@10 from offsets vs LightGBM eval", f_o, f_l, mem_per_row(nr, "ltr from offsets"),
        m_l)
    row("objective: ltr gradients vs LightGBM native objective (native − floor)", f_g, f_n,
        mem_per_row(orr, "ltr gradients"), float("nan"))
    row("one round, 1 feature, 7 leaves: LightGBM + ltr objective vs native", f_rl, f_rn,
        mem_per_row(orr, "LightGBM + ltr objective, 3-round training"),
        mem_per_row(orr, "LightGBM native, 3-round training"))
    row(f"importance, {res['importance_setup']['rows_features']} features x "
        f"{res['importance_setup']['n_repeats']} repeats: ltr vs scikit-learn", f_il, f_is,
        mem_per_row(ir, "ltr importance"), mem_per_row(ir, "scikit-learn importance"), mult=fr)
    res["fits"] = fits
    res["projection"] = proj
    res["mem_per_row"] = {"ndcg ltr from qid": m_q, "ndcg LightGBM eval": m_l,
                          "ltr gradients": mem_per_row(orr, "ltr gradients")}


# --------------------------------------------------------------------------- main


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="smoke run (~2 minutes)")
    parser.add_argument("--repeats", type=int, default=None)
    parser.add_argument("--sk-budget", type=float, default=None,
                        help="seconds one scikit-learn importance run may take before it runs "
                             "on a subsample and is extrapolated")
    parser.add_argument("--only", default=None, help="comma list of sections (debugging)")
    parser.add_argument("--no-write", action="store_true", help="print, write nothing")
    parser.add_argument("--out", default=None,
                        help="folder for scaling.md/json and the plots (default: "
                             "experiments/results; with --quick a temporary folder, so a smoke "
                             "run never overwrites the committed study)")
    parser.add_argument("--from-json", action="store_true",
                        help="re-render scaling.md and the plots from results/scaling.json")
    args = parser.parse_args(argv)
    global RESULTS
    if args.out:
        RESULTS = Path(args.out)
    elif args.quick:
        import tempfile

        RESULTS = Path(tempfile.gettempdir()) / "ltr_scaling_quick"
    if args.from_json:
        res = json.loads((RESULTS / "scaling.json").read_text())
        args.quick = res["quick"]
        args.sk_budget = res.get("sk_budget", args.sk_budget or 60.0)
        return finish(res, args, res["elapsed_s"])
    q = args.quick
    repeats = args.repeats or (3 if q else 5)
    args.sk_budget = args.sk_budget or (10.0 if q else 60.0)
    rounds = 4 if q else 6
    t_start = time.perf_counter()
    warnings.filterwarnings("ignore", category=UserWarning)
    res: dict = {"quick": q, "repeats": repeats, "rounds": rounds,
                 "load_start": os.getloadavg()[0], "ltr_source": ltr_source()}
    only = set(args.only.split(",")) if args.only else None

    def want(name):
        return only is None or name in only

    # warm numba kernels outside every timing
    y, s = labels_scores(1000, np.random.default_rng(1))
    qid = np.repeat(np.arange(10), 100)
    for k in (1, 10, None):
        ndcg(y, s, qid=qid, k=k, convention="lightgbm")
    LambdaRankObjective(k=10).gradients(s, y, np.arange(0, 1001, 100))

    if want("ndcg_rows"):
        sizes = [1_000, 3_000, 10_000] if q else [1_000, 3_000, 10_000, 30_000, 100_000]
        res["ndcg_rows"] = study_ndcg_rows(sizes, 100, repeats)
    if want("objective_rows"):
        sizes = [1_000, 3_000, 10_000] if q else [1_000, 3_000, 10_000, 30_000, 100_000]
        res["objective_rows"] = study_objective_rows(sizes, 100, max(2, repeats // 2 + 1),
                                                     rounds)
    if want("query_length"):
        total = 100_000 if q else 1_000_000
        sizes = ([10, 100, 1_000, 10_000, 100_000] if q else
                 [10, 30, 100, 300, 1_000, 3_000, 10_000, 30_000, 100_000, 1_000_000])
        res["ql_total"] = total
        res["query_length"] = study_query_length(sizes, total, max(3, repeats), rounds)
    if want("k"):
        res["k"] = study_k([1, 10, 100, None] if q else [1, 5, 10, 20, 50, 100, None], 1_000 if q else 10_000, 100,
                           repeats, rounds)
    imp = {"queries": 150 if q else 1_000, "trees": 50, "leaves": 15,
           "n_repeats": 2, "reps": 1 if q else 2, "rows_features": 30}
    res["importance_setup"] = imp
    if want("features"):
        feats = [10, 30, 60] if q else [10, 30, 100, 200, 300]
        res["features"] = study_features(feats, imp["queries"], imp["trees"], imp["leaves"],
                                         imp["n_repeats"], imp["reps"], args.sk_budget)
    if want("importance_rows"):
        sizes = [100, 300, 1_000] if q else [1_000, 3_000, 10_000, 30_000, 83_000]
        res["importance_rows"] = study_importance_rows(sizes, imp["rows_features"],
                                                       imp["trees"], imp["leaves"],
                                                       imp["n_repeats"], imp["reps"],
                                                       args.sk_budget)
    res["load_end"] = os.getloadavg()[0]
    elapsed = time.perf_counter() - t_start
    res["elapsed_s"] = elapsed
    if only is not None or args.no_write:
        print(json.dumps(res, indent=1, default=str)[:20000])
        return 0
    res["sk_budget"] = args.sk_budget
    return finish(res, args, elapsed)


def finish(res, args, elapsed):
    fits_and_projection(res)
    res["reading"] = READING if not args.quick else "(smoke run: see the full study)"
    res["not_measured"] = NOT_MEASURED
    RESULTS.mkdir(parents=True, exist_ok=True)
    (RESULTS / "scaling.json").write_text(json.dumps(res, indent=1, default=str))
    make_plots(res)
    write_report(res, args, elapsed)
    log(f"done in {elapsed / 60:.1f} min: {RESULTS / 'scaling.md'}")
    return 0


READING = """
Written from the committed full run (load average 2.8-6.9 on 2 cores shared with other jobs; a
rerun gives other absolute times, and the same computation timed twice differed by up to 30 %:
k = 100 and k = None are the same objective work, 261 vs 188 ms). Figures below are that run's.

- **nDCG@10 is linear in rows and stays at 0.23-0.26x LightGBM's C++ eval** from 10^5 to 10^7
  rows (called from qid, the conversion included; 65 ms vs 283 ms at 10^7 rows, 6.5-15 ns per row
  against LightGBM's 28-62), with values equal to 1e-15. The fitted marginal cost is 8.7 ns/row
  from qid, 8.2 ns/row from offsets: the qid scan adds about 0.5 ns/row. The call allocates
  almost nothing (peak RSS growth 4 MiB at 10^7 rows: per-query offsets and results).
- **Query length: ltr's nDCG gets cheaper per row as queries grow, the engines' dearer.** LightGBM
  and XGBoost sort every query whole (33 -> 88 ns/row from 10 to 10^3-10^4 documents, O(n log n));
  ltr selects the top k (O(n)): 0.25x LightGBM at 100 documents, 0.07-0.13x from 10^3 to 10^4,
  and 0.05-0.09x XGBoost's eval on 3*10^4-10^6-document queries that LightGBM refuses.
  **Not linear at the short end:** on 10-document queries ltr takes 60 ns/row, 1.8x LightGBM
  (0.6 us per query under this load; about 0.25 us of CPU per query in a quiet check): a fixed
  per-query cost (set-up of the selection and the ideal DCG) that dominates when a query has
  few rows. One query of 10^6 documents takes 8 ms against 3 ms for ten of 10^5: the kernels
  parallelise across queries only, so a single long query runs on one thread.
- **k: nDCG is cheap up to k = 20 (0.2-0.65x LightGBM) and steps up past k = 48**: 42 ms at
  k = 50 and 100 and 75 ms for the whole list (None), 1.45-1.74x LightGBM's 29-43 ms, which does
  not depend on k (it sorts every query anyway). Above 48 the kernel leaves its insertion
  buffer for a full sort per query (the selection paths `bench_ndcg.py --kernel` lists), and
  the whole list costs most.
- **The objective round is linear in rows and on a par with LightGBM's native lambdarank**:
  `LambdaRankObjective(k=10).gradients` costs 82-190 ns/row (fitted 128) against 105-190 ns/row
  for LightGBM's own objective (native round minus the fixed-gradient floor; fitted 118), and a
  whole round with ltr's objective is 0.85-1.14x the native round (1.60 s vs 1.48 s at 10^7
  rows). Its cost grows linearly in k (28 ms at k = 1 to 190-260 ms at k = 100 on 10^6 rows),
  as LightGBM's does (24 -> 209 ms): pairs are (top k) x (query), O(n k) per query, never
  O(n^2). Memory: the gradients allocate their output (grad and hess, float64: 16 B/row; 19 B/row
  measured); a LightGBM training with ltr's objective grows RSS by 62 B/row against 39 B/row
  native (the custom-objective path copies scores out and gradients in).
- **Objective vs query length**: ltr's per-row cost stays flat (96-162 ns/row from 10 to 10^6
  documents, one 39 ns/row point at 3*10^4; the truncation keeps it O(n k)); XGBoost's native rank:ndcg (topk pairs) costs
  85-296 ms per 10^6 rows and a round with ltr's objective in XGBoost is 0.56-1.58x its native
  round. Against LightGBM the round ratio is 0.65-1.84x up to 3,000 documents, but on
  10^4-document queries LightGBM's native objective was 3x cheaper than ltr's (32 vs 96 ms) and
  its round 4.6x faster (45 vs 206 ms: a fast path of LightGBM's at that shape, not
  investigated); past 10^4 LightGBM refuses and ltr's objective runs in either engine. A single 10^6-document query
  again uses one thread (162 ms).
- **Importance: ltr's cost grows far slower than scikit-learn's with features** (0.36x at 10
  features, 0.11x at 30, 0.06x at 100, 0.03x at 200-300 with scikit-learn extrapolated there),
  because a permuted feature only re-walks the trees that split on it and only the rows whose
  leaf can change: 59 % of (row, feature, repeat) re-predicted at 10 features, 5 % at 300.
  scikit-learn re-predicts everything: linear in features (about 3.3 us per row and feature for
  2 repeats). Values identical (max |diff| 0) wherever both ran in full.
- **Importance vs rows is not quite linear for ltr**: 5.4-6.9 us/row up to 3.6*10^5 rows, then
  11-14 us/row at 1.2*10^6-10^7 rows (30 features, 2 repeats), so the ratio to scikit-learn
  rises from 0.08-0.14 to 0.17-0.19 (scikit-learn's large-row times are extrapolated linearly
  from 4.4*10^5-row subsamples, so they miss any cache effect scikit-learn would also pay: the
  real ratio there is likely lower). A separate quieter check (load 1.4-2.3) gave 9.0, 10.6 and
  11.6 us/row at 0.36, 1.2 and 3.6 M rows with CPU time only 1.05-1.09x wall time: the rescoring
  kernel's two row threads overlapped little there, and the global permutation's random reads
  (`perm[i]` over arrays larger than the caches) plausibly explain the rise; not profiled
  further. Peak RSS growth is about 110 B/row (the per-row leaf cache of 50 trees and scores)
  against scikit-learn's 140 B/row (extrapolated; a copy of X per feature).
- **100 M rows** (table above): nDCG@10 under 1 s on 2 threads against 3.7 s for LightGBM's eval,
  with tens of MiB beyond the 2.2 GiB of inputs; one objective call about 13 s and 1.8 GiB of
  gradients; importance over 30 features x 2 repeats about 16 min against about 2 h for
  scikit-learn, with X alone 11 GiB (136 features would not fit in 24 GiB: split by query with
  `ltr.dask`). These are extrapolations of the fitted slopes, with the 2-thread and
  100-documents-per-query assumptions stated; they do not include building LightGBM's Dataset.
"""

NOT_MEASURED = """
- **scikit-learn's importance at 200-300 features and at 1.2*10^6-10^7 rows** was not run in full
  (each run would take 80 s to 12 min here, twice, interleaved): it ran on the first queries
  (31,695-46,632 rows for features, about 442,000 rows for rows) and its time and memory were
  scaled linearly by rows (marked `*`, hollow points). Linear scaling is what its algorithm does
  (one predict of all rows per feature and repeat), but cache effects at 10^7 rows are not in
  the extrapolation, and no value check was possible at those points.
- **LightGBM at queries over 10,000 rows**: refused by its objective and its metric (the limit is
  in LightGBM, so there is nothing to measure); XGBoost is the peer there.
- **LightGBM's objective time** is not exposed on its own: it is estimated as a native round minus
  a round with fixed gradients (the floor), which makes it noisy at small sizes (and negative once
  under load in the smoke runs).
- **Memory of LightGBM's and XGBoost's evals** reads 0-11 MiB because their buffers (Dataset,
  groups, score arrays) are built before the timed call; the cost of building them is in neither
  the times nor the memory. The RSS method also misses memory re-used from the allocator's free
  lists; tracemalloc (in `scaling.json`) sees only numpy allocations.
- **Threads beyond 2** (the machine has 2 cores): the projection's division by the thread count
  is an assumption, not a measurement; the nDCG and objective kernels parallelise across queries
  only, so few very long queries would not speed up.
- **Real 100 M-row data**: the projection extrapolates from at most 10^7 rows; the 24 GiB
  machine shared with other jobs was not asked to hold 10^8 rows.
"""


if __name__ == "__main__":
    raise SystemExit(main())

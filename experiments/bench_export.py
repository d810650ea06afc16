"""Export speed: a 1,000-tree, 255-leaf model per format (target <= 2 s per format).

Trains one LightGBM and one XGBoost model of 1,000 trees with up to 255 leaves
on synthetic data, exports each to every format and times the export (best of
``--repeats``).  Writes experiments/results/export_speed.md with the load
average at the start and the end.

    python experiments/bench_export.py [--repeats 2]
"""

from __future__ import annotations

import argparse
import os
import tempfile
import time
import warnings
from pathlib import Path

import numpy as np

from ltr.export import FORMATS, export_model


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--repeats", type=int, default=2)
    ap.add_argument("--cache", metavar="DIR", help="keep the trained models there between runs")
    args = ap.parse_args()
    load0 = os.getloadavg()
    import lightgbm as lgb
    import xgboost as xgb

    rng = np.random.default_rng(0)
    n_q, docs, n_f = 160, 50, 20
    X = rng.normal(size=(n_q * docs, n_f))
    y = np.clip((X[:, 0] + X[:, 1] + rng.normal(size=len(X))).round(), 0, 4)
    group = np.full(n_q, docs)
    t0 = time.perf_counter()
    cache = Path(args.cache) if args.cache else None
    if cache is not None and (cache / "lgb.txt").exists() and (cache / "xgb.json").exists():
        models = {"lightgbm": lgb.Booster(model_file=str(cache / "lgb.txt")),
                  "xgboost": xgb.Booster(model_file=str(cache / "xgb.json"))}
    else:
        models = {  # the engines' own training: only the export is measured
            "lightgbm": lgb.train({"objective": "lambdarank", "num_leaves": 255,
                                   "min_data_in_leaf": 2, "min_sum_hessian_in_leaf": 0,
                                   "learning_rate": 0.05, "verbose": -1, "num_threads": 2},
                                  lgb.Dataset(X, y, group=group), 1000),
            "xgboost": xgb.train({"objective": "rank:ndcg", "max_depth": 0, "max_leaves": 255,
                                  "grow_policy": "lossguide", "min_child_weight": 0,
                                  "learning_rate": 0.05, "nthread": 2},
                                 xgb.DMatrix(X, y, group=group), 1000),
        }
        if cache is not None:
            cache.mkdir(parents=True, exist_ok=True)
            models["lightgbm"].save_model(str(cache / "lgb.txt"))
            models["xgboost"].save_model(str(cache / "xgb.json"))
    print(f"models ready in {time.perf_counter() - t0:.0f} s", flush=True)
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for engine, model in models.items():
            from ltr.export import ensemble_of

            ens = ensemble_of(model)
            leaves = int(np.diff(ens.trees.leaf_start).max())
            for fmt in FORMATS:
                best = np.inf
                for _ in range(args.repeats):
                    t0 = time.perf_counter()
                    with warnings.catch_warnings():
                        warnings.simplefilter("ignore")
                        kw = {"reference": X, "adjust_thresholds": True} if fmt == "solr-ltr" else {}
                        r = export_model(model, fmt, Path(tmp) / f"m.{fmt}", **kw)
                    best = min(best, time.perf_counter() - t0)
                size = sum(p.stat().st_size for p in r.files)
                rows.append((engine, ens.n_trees, leaves, fmt, best, size, len(r.notes)))
                print(rows[-1], flush=True)
    load1 = os.getloadavg()
    lines = [
        "# Export speed (experiments/bench_export.py)",
        "",
        (f"1,000 trees, up to 255 leaves, 20 features; best of {args.repeats}; "
         f"load average {load0[0]:.1f} at the start, {load1[0]:.1f} at the end "
         f"({os.cpu_count()} CPUs, shared machine).  Solr includes the training-row check "
         "(--adjust-thresholds; 'moved' counts the thresholds it moved, LightGBM's +-1e-35 "
         "zero splits that Solr's +1e-6 slack cannot hold).  Files: the model plus its "
         "companions (the LTR plugin's request body embeds the definition a second time); "
         "time includes parsing the engine's model, writing and hashing the files."),
        "",
        "| engine | trees | max leaves | format | export s | files MB | moved |",
        "|---|---|---|---|---|---|---|",
    ]
    lines += [f"| {e} | {n} | {lv} | {f} | {t:.2f} | {s / 1e6:.1f} | {m} |"
              for e, n, lv, f, t, s, m in rows]
    out = Path(__file__).parent / "results" / "export_speed.md"
    out.write_text("\n".join(lines) + "\n")
    print(out)


if __name__ == "__main__":
    main()

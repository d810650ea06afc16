"""Study: what pruning on the per-round valid nDCG saves in ``configs/tune_optuna.yaml``.

1. ``ltr tune configs/tune_optuna.yaml`` (20 trials, TPE seed 0, median pruner
   with 5 startup trials and 10 warm-up rounds): trials complete / pruned, the
   best valid nDCG@10, the study's seconds and the whole command's seconds
   (study + refit + report).
2. The same 20 parameter points run to the end: an Optuna study with
   ``NopPruner`` whose trials take the first study's points in order, each
   trained by the same code path (``ltr.engines.train`` with the
   run's settings, a ``PruningReporter`` that never prunes).  Its seconds are
   the time of running every trial in full; its best value tells whether
   pruning dropped a trial that would have won.

Complete trials of study 1 must reproduce exactly in study 2 (same settings,
same data, deterministic LightGBM); the script checks it.

Run::

    python experiments/study_optuna_pruning.py     # writes experiments/results/optuna_pruning.md
"""

from __future__ import annotations

import json
import os
import platform
import sys
import tempfile
import time
from pathlib import Path

import optuna
import pandas as pd

from ltr.build import build_training
from ltr.engines import train
from ltr.runs.build import settings_from_config
from ltr.runs.commands import tune_run
from ltr.runs.config import load_config
from ltr.runs.data import load_data
from ltr.runs.folder import prepare_config
from ltr.runs.optuna_search import PruningReporter

ROOT = Path(__file__).resolve().parents[1]
CONFIG = ROOT / "configs" / "tune_optuna.yaml"
OUT = ROOT / "experiments" / "results" / "optuna_pruning.md"


def unpruned(cfg, points: list[dict]) -> tuple[float, pd.DataFrame]:
    """Run *points* to the end (NopPruner, enqueued in order); return seconds and the table."""
    cfg = prepare_config(cfg)
    settings = settings_from_config(cfg)
    sets = load_data(cfg)
    tr, va = sets["train"], sets["valid"]
    optuna.logging.set_verbosity(optuna.logging.WARNING)
    study = optuna.create_study(direction="maximize", pruner=optuna.pruners.NopPruner())

    def objective(trial):
        params = points[trial.number]  # the pruned study's points, in its order
        trial.set_user_attr("params", json.dumps(params))
        reporter = PruningReporter(trial, "ndcg@10")
        model = train(tr.X, tr.y, tr.offsets, **build_training(settings.replace(**params)),
                      eval_sets=[("valid", va.X, va.y, va.offsets)], eval_at=(10,),
                      feature_names=list(tr.feature_names), callbacks=[reporter])
        return model.evals_result["valid"]["ndcg@10"][-1]

    t0 = time.perf_counter()
    study.optimize(objective, n_trials=len(points))
    seconds = time.perf_counter() - t0
    return seconds, pd.DataFrame({"number": [t.number for t in study.trials],
                                  "value": [t.value for t in study.trials]})


def main() -> None:
    cfg = load_config(CONFIG)
    with tempfile.TemporaryDirectory() as tmp:
        t0 = time.perf_counter()
        result = tune_run(cfg, out=Path(tmp) / "run", progress=False)
        total = time.perf_counter() - t0
        table = pd.read_csv(result.run_dir / "search.csv")
    s = result.metrics["search"]
    names = [c[len("param_"):] for c in table.columns if c.startswith("param_")]
    ints = {n for n in names if pd.api.types.is_integer_dtype(table[f"param_{n}"])}
    points = [{n: int(row[f"param_{n}"]) if n in ints else float(row[f"param_{n}"]) for n in names}
              for _, row in table.iterrows()]
    full_seconds, full = unpruned(cfg, points)
    complete = table["state"] == "complete"
    same = (full.loc[complete.values, "value"].to_numpy() == table.loc[complete, "value"].to_numpy()).all()
    pruned_rounds = int(table.loc[~complete, "rounds"].sum())
    all_rounds = cfg.n_rounds * len(table)
    trained = int(table["rounds"].sum())
    lines = [
        "# Optuna pruning on the per-round valid nDCG@10 (configs/tune_optuna.yaml)",
        "",
        (f"Machine: {platform.platform()}, Python {platform.python_version()}, "
         f"{os.cpu_count()} CPUs (shared with other jobs: times are indicative), "
         f"optuna {optuna.__version__}."),
        "Reproduce: `python experiments/study_optuna_pruning.py`.",
        "",
        "| | value |",
        "|---|---|",
        f"| trials | {len(table)} ({s['trials']['complete']} complete, {s['trials']['pruned']} pruned, {s['trials']['fail']} failed) |",
        f"| best valid nDCG@10 (trial {s['best_trial']}) | {s['best_score']:.4f} |",
        f"| best params | `{json.dumps(s['best_params'])}` |",
        f"| boosting rounds trained | {trained} of {all_rounds} ({pruned_rounds} in pruned trials) |",
        f"| pruned study: seconds | {s['seconds']:.1f} |",
        f"| the same {len(table)} trials unpruned: seconds | {full_seconds:.1f} |",
        f"| time saved by pruning | {full_seconds - s['seconds']:.1f} s ({100 * (1 - s['seconds'] / full_seconds):.0f} %) |",
        f"| best value of the unpruned trials | {full['value'].max():.4f} (trial {int(full.loc[full['value'].idxmax(), 'number'])}) |",
        f"| complete trials identical in both studies | {bool(same)} |",
        f"| `ltr tune` wall time (study + refit + report) | {total:.1f} s |",
        "",
    ]
    OUT.write_text("\n".join(lines), encoding="utf-8")
    sys.stdout.write("\n".join(lines))


if __name__ == "__main__":
    main()

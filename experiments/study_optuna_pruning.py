"""Study: what pruning on the per-round valid nDCG saves in ``configs/tune_optuna.yaml``.

1. ``ltr tune configs/tune_optuna.yaml`` (20 trials, TPE seed 0, median pruner
   with 5 startup trials and 10 warm-up rounds): trials complete / pruned, the
   best valid nDCG@10, the study's seconds and the whole command's seconds
   (study + refit + report).
2. Timing, on one code path (``ltr.engines.train`` with the run's settings
   and a ``PruningReporter``, as ``ltr tune``'s trials): the pruned study again
   (it must reproduce step 1's trials), and the same 20 parameter points run to
   the end (``NopPruner``, step 1's points in order), interleaved, best of
   ``REPEATS``, wall and CPU seconds.  The unpruned best value tells whether
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

# idle OpenMP threads sleep instead of spinning: on a shared machine spinning inflates both clocks
os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")

import numpy as np
import optuna
import pandas as pd

from ltr.build import build_training
from ltr.engines import train
from ltr.runs.config import load_config
from ltr.runs.data import load_data
from ltr.runs.folder import prepare_config
from ltr.runs.optuna_search import PruningReporter
from ltr.runs.training_config import training_settings
from ltr.runs.tune_cmd import tune_run

ROOT = Path(__file__).resolve().parents[1]
CONFIG = ROOT / "configs" / "tune_optuna.yaml"
OUT = ROOT / "experiments" / "results" / "optuna_pruning.md"
REPEATS = 3


def _fit(cfg):
    """The trial training of ``ltr tune``: train split, valid nDCG@10 reported every round."""
    cfg = prepare_config(cfg)
    settings = training_settings(cfg.model, cfg.seed)
    sets = load_data(cfg)
    tr, va = sets["train"], sets["valid"]

    def run(trial, params):
        reporter = PruningReporter(trial, "ndcg@10")
        model = train(tr.X, tr.y, tr.offsets, **build_training(settings.replace(**params)),
                      eval_sets=[("valid", va.X, va.y, va.offsets)], eval_at=(10,),
                      feature_names=list(tr.feature_names), callbacks=[reporter])
        trial.set_user_attr("rounds", reporter.rounds)
        return model.evals_result["valid"]["ndcg@10"][-1]

    return run


def study(cfg, fit, points=None) -> tuple[float, float, pd.DataFrame]:
    """Pruned (TPE seed, median pruner as configured) or, with *points*, those run in full.

    Returns wall seconds, CPU seconds (all threads of this process) and the trials.
    """
    from ltr.runs.optuna_search import _suggest
    from ltr.runs.search_space import parse_space

    s = cfg.search
    optuna.logging.set_verbosity(optuna.logging.WARNING)
    if points is None:
        space = parse_space(s.param_distributions, "search.param_distributions")
        st = optuna.create_study(
            direction="maximize", sampler=optuna.samplers.TPESampler(seed=cfg.seed),
            pruner=optuna.pruners.MedianPruner(n_startup_trials=s.startup_trials,
                                               n_warmup_steps=s.warmup_rounds))

        def objective(trial):
            return fit(trial, {n: _suggest(trial, p) for n, p in space.items()})
    else:
        st = optuna.create_study(direction="maximize", pruner=optuna.pruners.NopPruner())

        def objective(trial):
            return fit(trial, points[trial.number])

    w0, c0 = time.perf_counter(), time.process_time()
    st.optimize(objective, n_trials=s.n_trials)
    wall, cpu = time.perf_counter() - w0, time.process_time() - c0
    table = pd.DataFrame({"number": [t.number for t in st.trials],
                          "state": [t.state.name.lower() for t in st.trials],
                          "value": [t.value for t in st.trials],
                          "rounds": [t.user_attrs.get("rounds") for t in st.trials]})
    return wall, cpu, table


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
    fit = _fit(cfg)
    pruned_runs, full_runs = [], []
    for _ in range(REPEATS):  # interleaved, best of REPEATS: the machine is shared
        pruned_runs.append(study(cfg, fit))
        full_runs.append(study(cfg, fit, points))
    p_wall, p_cpu = min(r[0] for r in pruned_runs), min(r[1] for r in pruned_runs)
    f_wall, f_cpu = min(r[0] for r in full_runs), min(r[1] for r in full_runs)
    direct, full = pruned_runs[0][2], full_runs[0][2]
    complete = table["state"] == "complete"
    same_study = (direct["state"].tolist() == table["state"].tolist()
                  and np.allclose(direct["value"], table["value"], rtol=0, atol=1e-12))
    same = bool((full.loc[complete.values, "value"].to_numpy()
                 == table.loc[complete, "value"].to_numpy()).all())
    pruned_rounds = int(table.loc[~complete, "rounds"].sum())
    all_rounds = cfg.n_rounds * len(table)
    trained = int(table["rounds"].sum())
    lines = [
        "# Optuna pruning on the per-round valid nDCG@10 (configs/tune_optuna.yaml)",
        "",
        (f"Machine: {platform.platform()}, Python {platform.python_version()}, "
         f"{os.cpu_count()} CPUs shared with other jobs (times are the best of {REPEATS} "
         f"interleaved runs; CPU seconds count every thread of the process), "
         f"optuna {optuna.__version__}."),
        "Reproduce: `python experiments/study_optuna_pruning.py`.",
        "",
        "| | value |",
        "|---|---|",
        f"| trials | {len(table)} ({s['trials']['complete']} complete, {s['trials']['pruned']} pruned, {s['trials']['fail']} failed) |",
        f"| best valid nDCG@10 (trial {s['best_trial']}) | {s['best_score']:.4f} |",
        f"| best params | `{json.dumps(s['best_params'])}` |",
        f"| boosting rounds trained | {trained} of {all_rounds} ({pruned_rounds} in the pruned trials) |",
        f"| pruned study: wall / CPU seconds | {p_wall:.1f} / {p_cpu:.1f} |",
        f"| the same {len(table)} trials unpruned: wall / CPU seconds | {f_wall:.1f} / {f_cpu:.1f} |",
        f"| time saved by pruning (wall / CPU) | {f_wall - p_wall:.1f} s ({100 * (1 - p_wall / f_wall):.0f} %) / {f_cpu - p_cpu:.1f} s ({100 * (1 - p_cpu / f_cpu):.0f} %) |",
        f"| best value of the unpruned trials | {full['value'].max():.4f} (trial {int(full.loc[full['value'].idxmax(), 'number'])}) |",
        f"| the study outside `ltr tune` reproduces its trials | {same_study} |",
        f"| complete trials identical when run unpruned | {same} |",
        f"| `ltr tune` wall time (study + refit + report, first run: imports, JIT) | {total:.1f} s |",
        "",
    ]
    OUT.write_text("\n".join(lines), encoding="utf-8")
    sys.stdout.write("\n".join(lines))


if __name__ == "__main__":
    main()

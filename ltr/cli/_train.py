"""The training commands: ``train``, ``tune``, ``importance``, ``report``, ``validate``."""

from __future__ import annotations

import argparse
import json

from ltr.cli._common import (
    EXIT_OK,
    Command,
    UsageError,
    add_config,
    add_out_dir,
    add_progress,
    add_set,
    check_out_dir,
    config_of,
    positive_int,
    require_config,
)
from ltr.runs.commands import (
    RunResult,
    importance_run,
    render_report,
    train_run,
    validate,
)
from ltr.runs.config import dump_config, load_config
from ltr.runs.tune_cmd import tune_run

__all__ = ["COMMANDS", "print_summary"]


def print_summary(result: RunResult) -> None:
    """Print a run's final metrics per set (a composite run: which label, and the composite)."""
    m = result.metrics
    composite = m.get("composite") or {}
    # a composite run: say which label the nDCG line is on, and print the composite beside it
    tag = f" (nDCG on label {m['final_label']!r})" if composite and m.get("final_label") else ""
    for name, vals in result.final.items():
        shown = ", ".join(f"{k} {v:.4f}" for k, v in vals.items() if v is not None)
        print(f"{name}{tag}: {shown}")
    if composite:
        mix = " + ".join(f"{w:g} {o}" for o, w in (m.get("composite_weights") or {}).items())
        trained = ", the training objective" if "composite" in str(m.get("objective")) else ""
        shown = ", ".join(f"{n} {v['composite']:.4f}" for n, v in composite.items()
                          if v.get("composite") is not None)
        print(f"composite nDCG@{m.get('composite_k')} ({mix}{trained}): {shown}")
    print(f"run folder: {result.run_dir}")


_CONFIG_HELP = "YAML config, or the name of a shipped example such as quickstart"


def _configure_train(p: argparse.ArgumentParser) -> None:
    add_config(p, what=f"{_CONFIG_HELP} (optional with --resume)")
    add_set(p)
    add_out_dir(p, "run folder to create")
    p.add_argument("--mlflow", metavar="URI", help="log the run to MLflow at URI "
                   "(sqlite:///mlflow.db, http://host:5000; overrides tracking.mlflow)")
    p.add_argument(
        "--resume",
        metavar="RUN_DIR",
        help="finish an interrupted run from its last completed stage",
    )
    add_progress(p)


def _run_train(args: argparse.Namespace) -> int:
    path = config_of(args)
    if path is None and args.resume is None:
        raise UsageError("train needs CONFIG (or --resume RUN_DIR) (see: ltr train --help)")
    if path is None and args.overrides:
        raise UsageError(
            "--set needs CONFIG; with --resume alone the run's own config is used unchanged"
        )
    if args.resume is None:
        check_out_dir(args.out)
    cfg = load_config(path, args.overrides) if path is not None else None
    result = train_run(
        cfg, out=args.out, resume=args.resume, progress=args.progress, mlflow=args.mlflow
    )
    print_summary(result)
    return EXIT_OK


def _configure_tune(p: argparse.ArgumentParser) -> None:
    add_config(p, what=_CONFIG_HELP)
    add_set(p)
    add_out_dir(p, "run folder to create (default <output.runs_dir>/<name>-<timestamp>/)")
    p.add_argument("--mlflow", metavar="URI",
                   help="log the tune to MLflow at URI (a run, nested runs per trial)")
    add_progress(p)


def _run_tune(args: argparse.Namespace) -> int:
    check_out_dir(args.out)
    cfg = load_config(require_config(args, "tune"), args.overrides)
    result = tune_run(cfg, out=args.out, progress=args.progress, mlflow=args.mlflow)
    s = result.metrics["search"]
    print(f"best {s['scoring']} = {s['best_score']:.4f} with {json.dumps(s['best_params'])}")
    if s.get("trials"):
        counts = ", ".join(f"{n} {state}" for state, n in s["trials"].items() if n)
        print(f"study {s['study_name']}: {counts} in {s['seconds']:.1f} s")
    print_summary(result)
    return EXIT_OK


def _configure_importance(p: argparse.ArgumentParser) -> None:
    p.add_argument("target", metavar="RUN_DIR|CONFIG")
    add_set(p)
    p.add_argument("--repeats", type=positive_int, metavar="N", help="permutations per feature")
    p.add_argument("--strategy", choices=("global", "within_query"), help="where to shuffle")
    p.add_argument("--on", choices=("valid", "test"), help="which set to permute on")
    add_out_dir(p, "with a CONFIG: run folder to create")
    add_progress(p)


def _run_importance(args: argparse.Namespace) -> int:
    check_out_dir(args.out)
    result = importance_run(
        args.target,
        args.overrides,
        n_repeats=args.repeats,
        strategy=args.strategy,
        on=args.on,
        out=args.out,
        progress=args.progress,
    )
    print(f"importance written to {result.run_dir / 'importance.csv'}")
    return EXIT_OK


def _configure_report(p: argparse.ArgumentParser) -> None:
    p.add_argument("run_dir", metavar="RUN_DIR")


def _run_report(args: argparse.Namespace) -> int:
    md, page = render_report(args.run_dir)
    print(f"wrote {md} and {page}")
    return EXIT_OK


def _configure_validate(p: argparse.ArgumentParser) -> None:
    add_config(p, what=_CONFIG_HELP)
    add_set(p)
    p.add_argument(
        "--print", dest="show", action="store_true", help="print the resolved config as YAML"
    )
    p.add_argument(
        "--load-data",
        dest="load",
        action="store_true",
        help="also load the data (checks columns, grade mappings and file contents); with "
        "a cluster section and parquet data, the training files are read on the cluster",
    )


def _run_validate(args: argparse.Namespace) -> int:
    path = require_config(args, "validate")
    from ltr.runs.monitor_cmd import check_monitor_config

    monitor_line = check_monitor_config(path)
    if monitor_line is not None:
        if args.overrides or args.load or args.show:
            raise UsageError(
                f"--set, --load-data and --print apply to run configs; {path} is a monitor config"
            )
        print(monitor_line)
        return EXIT_OK
    cfg = validate(path, args.overrides, load=args.load)
    if args.show:
        print(dump_config(cfg), end="")
        return EXIT_OK
    sched = cfg.model.schedule
    plan = (
        f"steps {[(s.k, s.rounds) for s in sched.steps]}"
        if sched and sched.steps
        else f"linear {sched.linear.start}->{sched.linear.end}"
        if sched and sched.linear
        else f"k={cfg.model.k}"
    )
    print(
        f"ok: {path} (data {cfg.data.source}, engine {cfg.model.engine}, "
        f"objective {cfg.settings.objective} {plan}, {cfg.n_rounds} rounds, "
        f"seed {cfg.seed})"
    )
    return EXIT_OK


def _configure_init(p: argparse.ArgumentParser) -> None:
    add_out_dir(p, "folder to copy the example configs into (default: ./configs)")


def _run_init(args: argparse.Namespace) -> int:
    from ltr.runs.init_cmd import init_configs

    out = "configs" if args.out is None else args.out
    check_out_dir(out)
    res = init_configs(out)
    print(f"copied {len(res.files)} example configs into {res.folder}: "
          + ", ".join(p.stem for p in res.files))
    print(f"next: ltr train {res.folder / 'quickstart.yaml'}")
    return EXIT_OK


COMMANDS: tuple[Command, ...] = (
    Command(
        "train",
        "train a run from a YAML config into a new run folder",
        "Train from CONFIG into <output.runs_dir>/<name>-<timestamp>/ (or --out DIR, a new or "
        "empty folder); --resume finishes an interrupted run.",
        _configure_train,
        _run_train,
    ),
    Command(
        "tune",
        "hyper-parameter search from the config's search section",
        "GridSearchCV/RandomizedSearchCV over LambdaMARTRanker with GroupKFold by query and an "
        "nDCG scorer, or an Optuna study pruned on the per-round valid nDCG (search.method: "
        "optuna); refits the best parameters as a full run into "
        "<output.runs_dir>/<name>-<timestamp>/ (or --out DIR) with search.csv beside it.",
        _configure_tune,
        _run_tune,
    ),
    Command(
        "importance",
        "permutation importance (ΔnDCG) of a run or a config",
        "With a finished RUN_DIR: write importance.csv/.png into it and refresh its report (a "
        "cluster run's parquet training files are read on its cluster, and only valid/test "
        "collected here).  With a CONFIG: train a new run with importance enabled.",
        _configure_importance,
        _run_importance,
    ),
    Command(
        "report",
        "re-render report.md/report.html of a finished run",
        "Re-render report.md and the self-contained report.html of RUN_DIR.",
        _configure_report,
        _run_report,
    ),
    Command(
        "validate",
        "check a config (schema, --set overrides, data paths) without running",
        "Validate CONFIG: unknown keys, invalid values and missing data files are reported with "
        "the field path; prints the resolved config with --print.",
        _configure_validate,
        _run_validate,
    ),
    Command(
        "init",
        "copy the example configs shipped with ltr into a folder",
        "Copy the example configs (quickstart, letor, progressive, ...) into DIR (default "
        "./configs, a new or empty folder), so that `ltr train configs/quickstart.yaml` runs "
        "without a clone.  A shipped config also runs by name: `ltr train quickstart`.",
        _configure_init,
        _run_init,
    ),
)

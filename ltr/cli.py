"""Command line: argparse and dispatch only.

::

    ltr train CONFIG [--set key.path=value ...] [--out DIR] [--resume RUN_DIR]
    ltr evaluate --model PATH|RUN_DIR [--data PATH] [--eval-at 1 3 5 10 20]
    ltr importance RUN_DIR|CONFIG [--set ...] [--repeats N] [--strategy S]
    ltr tune CONFIG [--set ...] [--out DIR]
    ltr report RUN_DIR
    ltr validate CONFIG [--set ...]

Every subcommand is a library function of :mod:`ltr.runs.commands` that
returns a result and prints nothing; this module parses arguments, calls it
and prints.  :func:`main` takes ``argv`` so it runs in-process in tests.

Exit status: 0 success, 1 error (one line on stderr, ``ltr: error: ...``;
``--debug`` shows the traceback instead), 2 command-line usage error,
130 interrupted (Ctrl-C or SIGTERM; the message says how to resume).
Status 3 is reserved for monitoring alerts.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import warnings
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from typing import Any

from ltr.metric_names import CONVENTIONS as SCORER_CONVENTIONS
from ltr.metric_names import QRELS_CONVENTIONS
from ltr.runs.commands import (
    RunResult,
    importance_run,
    render_report,
    train_run,
    tune_run,
    validate,
)
from ltr.runs.config import ConfigError, RunError, RunInterrupted, dump_config, load_config
from ltr.runs.evaluate_cmd import evaluate_model, evaluate_ranking, predict_run

__all__ = [
    "EXIT_ALERT",
    "EXIT_ERROR",
    "EXIT_OK",
    "EXIT_USAGE",
    "build_parser",
    "console_main",
    "main",
]

EXIT_OK = 0
EXIT_ERROR = 1
EXIT_USAGE = 2
EXIT_ALERT = 3  # reserved: monitoring alerts
EXIT_INTERRUPTED = 130


class _Parser(argparse.ArgumentParser):
    """ArgumentParser whose usage errors are one line: ``ltr: error: ... (see ltr X --help)``."""

    def error(self, message: str) -> None:  # type: ignore[override]
        raise _UsageError(f"{message} (see: {self.prog} --help)")


class _UsageError(Exception):
    pass


def _add_common(p: argparse.ArgumentParser) -> None:
    p.add_argument("--debug", action="store_true", help="show the full traceback on errors")


def _add_set(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--set",
        dest="overrides",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="override a config field, e.g. --set model.rounds=20 "
        "--set objective.schedule.steps[0].k=3 "
        "(VALUE is parsed as YAML; repeatable)",
    )


def _add_progress(p: argparse.ArgumentParser) -> None:
    g = p.add_mutually_exclusive_group()
    g.add_argument(
        "--progress",
        dest="progress",
        action="store_true",
        default=None,
        help="show progress bars (default: only on a terminal)",
    )
    g.add_argument(
        "--no-progress", dest="progress", action="store_false", help="hide progress bars"
    )


def build_parser() -> argparse.ArgumentParser:
    """Build the ``ltr`` argument parser.

    Subcommands: train, evaluate, importance, tune, report, validate.
    """
    parser = _Parser(
        prog="ltr",
        description="Config-driven learning-to-rank runs on LightGBM/XGBoost (see docs/cli.md).",
    )
    _add_common(parser)
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=_Parser)

    p = sub.add_parser(
        "train",
        help="train a run from a YAML config into a new run folder",
        description="Train from CONFIG into <output.runs_dir>/<name>-<timestamp>/ "
        "(or --out DIR); --resume finishes an interrupted run.",
    )
    p.add_argument(
        "config", nargs="?", metavar="CONFIG", help="YAML config (optional with --resume)"
    )
    _add_set(p)
    p.add_argument("--out", metavar="DIR", help="run folder to create (must not exist or be empty)")
    p.add_argument(
        "--resume",
        metavar="RUN_DIR",
        help="finish an interrupted run from its last completed stage",
    )
    _add_progress(p)
    _add_common(p)

    p = sub.add_parser(
        "evaluate",
        help="metrics of a saved model on a data file, or of a ranking against qrels",
        description="With --model: nDCG@k (and the run's metric matrix) of a model file or a "
        "finished run folder on a data file (LETOR/LibSVM, CSV or parquet), or on the run's own "
        "valid/test sets.  With --qrels and --ranking: trec_eval-style evaluation of a TREC run "
        "file against judgments (judged documents that were not retrieved count in the ideal "
        "DCG), with --metrics such as ndcg@10 map mrr@10 precision@10 recall@100 err@10.",
    )
    p.add_argument("--model", metavar="PATH", help="model file or finished run folder")
    p.add_argument("--qrels", metavar="FILE", help="TREC qrels file (qid 0 doc relevance)")
    p.add_argument(
        "--ranking", metavar="FILE", help="TREC run file (qid Q0 doc rank score tag) to evaluate"
    )
    p.add_argument(
        "--metrics",
        nargs="+",
        metavar="M",
        help="with --qrels: metric names (default: ndcg ndcg@10 map mrr precision@10 recall@100)",
    )
    p.add_argument(
        "--relevance-level",
        type=float,
        default=1,
        help="with --qrels: least relevance a binary metric counts as relevant (trec_eval -l)",
    )
    p.add_argument(
        "--complete",
        action="store_true",
        help="with --qrels: score queries missing from the ranking as 0 (trec_eval -c)",
    )
    p.add_argument("--out", metavar="FILE", help="with --qrels: write per-query values (.csv) "
                   "or the whole result (.json)")
    p.add_argument(
        "--data", metavar="PATH", help="data file (default with a run folder: its valid/test sets)"
    )
    p.add_argument(
        "--format",
        dest="fmt",
        choices=("auto", "letor", "csv", "parquet"),
        default="auto",
        help="data format (default: by suffix; .csv/.tsv, .parquet/.pq, otherwise LETOR)",
    )
    p.add_argument(
        "--label", help="label column of tabular data (default: the run's, else 'label')"
    )
    p.add_argument("--qid", help="query id column of tabular data (default: the run's, else 'qid')")
    p.add_argument(
        "--eval-at", nargs="+", type=int, metavar="K", help="cut-offs (default 1 3 5 10 20)"
    )
    p.add_argument(
        "--convention",
        choices=SCORER_CONVENTIONS + QRELS_CONVENTIONS,
        help="with --model: nDCG convention (lightgbm, xgboost, sklearn; default: the run's); "
        "with --qrels: trec_eval (default) or ranx",
    )
    p.add_argument(
        "--n-features",
        type=int,
        metavar="N",
        help="LETOR --data: feature count when its last features are zero in every row",
    )
    p.add_argument("--json", action="store_true", help="print JSON instead of a table")
    _add_common(p)

    p = sub.add_parser(
        "predict",
        help="write a model's scores for every document of a data file",
        description="Score --data with the model of RUN_DIR (or a model file) and write the "
        "scores as CSV/parquet (--out) and/or a TREC run file (--trec-run), ready for "
        "ltr evaluate --qrels ... --ranking ....",
    )
    p.add_argument("model", metavar="RUN_DIR|MODEL", help="finished run folder or model file")
    p.add_argument("--data", required=True, metavar="PATH", help="LETOR/LibSVM, CSV or parquet")
    p.add_argument("--out", metavar="FILE", help="scores as CSV (.csv) or parquet (.parquet)")
    p.add_argument("--trec-run", metavar="FILE", help="scores as a TREC run file")
    p.add_argument("--trec-qrels", metavar="FILE",
                   help="the file's labels as TREC qrels with the same document ids")
    p.add_argument("--tag", default="ltr", help="run tag of the TREC run file (default: ltr)")
    p.add_argument(
        "--format",
        dest="fmt",
        choices=("auto", "letor", "csv", "parquet"),
        default="auto",
        help="data format (default: by suffix)",
    )
    p.add_argument("--label", help="label column of tabular data (default: the run's)")
    p.add_argument("--qid", help="query id column of tabular data (default: the run's)")
    p.add_argument("--doc-id", help="document id column of tabular data (default: row number)")
    p.add_argument("--n-features", type=int, metavar="N", help="LETOR: feature count")
    p.add_argument("--exported", metavar="FILE",
                   help="score through this file written by ltr export (the artefact deployed)")
    p.add_argument("--exported-format", metavar="F", help="format of --exported (as ltr export)")
    _add_common(p)

    p = sub.add_parser(
        "importance",
        help="permutation importance (ΔnDCG) of a run or a config",
        description="With a finished RUN_DIR: write importance.csv/.png into it and refresh "
        "its report (a cluster run's parquet training files are read on its cluster, and "
        "only valid/test collected here).  With a CONFIG: train a new run with importance "
        "enabled.",
    )
    p.add_argument("target", metavar="RUN_DIR|CONFIG")
    _add_set(p)
    p.add_argument("--repeats", type=int, metavar="N", help="permutations per feature")
    p.add_argument("--strategy", choices=("global", "within_query"), help="where to shuffle")
    p.add_argument("--on", choices=("valid", "test"), help="which set to permute on")
    p.add_argument("--out", metavar="DIR", help="with a CONFIG: run folder to create")
    _add_progress(p)
    _add_common(p)

    p = sub.add_parser(
        "tune",
        help="hyper-parameter search from the config's search section",
        description="GridSearchCV/RandomizedSearchCV over LambdaMARTRanker with GroupKFold "
        "by query and an nDCG scorer; writes a <name>-tune-<timestamp> run folder.",
    )
    p.add_argument("config", metavar="CONFIG")
    _add_set(p)
    p.add_argument("--out", metavar="DIR", help="run folder to create")
    _add_progress(p)
    _add_common(p)

    p = sub.add_parser(
        "compare",
        help="compare two runs per query: deltas, significance, per-segment regressions",
        description="Compare the per-query metrics of RUN_A and RUN_B (per_query_<set>.csv, or "
        "such CSV files): paired t-test, Fisher randomization test, bootstrap interval, Holm "
        "correction, per segment; writes report.md/report.html/forest.png with --out.",
    )
    p.add_argument("run_a", metavar="RUN_A", help="baseline run folder or per-query CSV")
    p.add_argument("run_b", metavar="RUN_B", help="candidate run folder or per-query CSV")
    p.add_argument("--on", dest="split", choices=("test", "valid"), default="test",
                   help="which set's per-query values (default: test)")
    p.add_argument("--segment-column", metavar="C",
                   help="column of RUN_A's per-query file to segment by (default: 'segment' "
                   "when present)")
    p.add_argument("--segments", metavar="CSV", help="a qid,segment CSV to segment by")
    p.add_argument("--metrics", nargs="+", metavar="M", help="metrics to compare (default: all)")
    p.add_argument("--n-resamples", type=int, default=10_000, metavar="N")
    p.add_argument("--alpha", type=float, default=0.05)
    p.add_argument("--min-queries", type=int, default=20, metavar="N",
                   help="segments with fewer queries get no p-values (default 20)")
    p.add_argument("--intersect", action="store_true",
                   help="compare on the queries both runs have (default: differing query sets "
                   "are an error)")
    p.add_argument("--seed", type=int, default=0, help="random seed of the resampling tests")
    p.add_argument("--out", metavar="DIR", help="write the report files into DIR")
    _add_common(p)

    p = sub.add_parser(
        "monitor",
        help="check a log of impressions against health rules (exit 3 on alerts)",
        description="Per-window metrics of LOG (parquet/CSV: timestamp, qid, doc_id, score, "
        "label) against the rules of -c CONFIG, or one quick rule (--metric --window --min/--max). "
        "Exit status 3 when any alert fires.",
    )
    p.add_argument("log", metavar="LOG")
    p.add_argument("-c", "--config", metavar="YAML",
                   help="the metric matrix (see configs/monitor.yaml)")
    p.add_argument("--metric", help="quick rule: metric, e.g. ndcg@10")
    p.add_argument("--window", help="quick rule: window, e.g. 1h, 1D, or a count of queries")
    p.add_argument("--min", type=float, help="quick rule: alert below this value")
    p.add_argument("--max", type=float, help="quick rule: alert above this value")
    p.add_argument("--segment-column", metavar="C", help="check every segment of column C too")
    p.add_argument("--min-queries", type=int, default=1, metavar="N",
                   help="quick rule: fewer queries in a window means 'not enough data'")
    p.add_argument("--out", metavar="DIR", help="write values.csv, alerts.csv/.json and plots")
    p.add_argument("--state", metavar="FILE", help="incremental: compute only new windows")
    _add_common(p)

    p = sub.add_parser(
        "report",
        help="re-render report.md/report.html of a finished run",
        description="Re-render report.md and the self-contained report.html of RUN_DIR.",
    )
    p.add_argument("run_dir", metavar="RUN_DIR")
    _add_common(p)

    p = sub.add_parser(
        "validate",
        help="check a config (schema, --set overrides, data paths) without running",
        description="Validate CONFIG: unknown keys, invalid values and missing data files are "
        "reported with the field path; prints the resolved config with --print.",
    )
    p.add_argument("config", metavar="CONFIG")
    _add_set(p)
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
    _add_common(p)

    p = sub.add_parser(
        "export",
        help="write a run's model in a search engine's format (exact, or refused)",
        description="Export the model of RUN_DIR (or a model file) for OpenSearch/Elasticsearch "
        "LTR, Solr LTR, Vespa, RankLib or ONNX (docs/export.md).  Companion files go beside "
        "--out; exports of a run are recorded in its exports.json and report.",
    )
    p.add_argument("model", metavar="RUN_DIR|MODEL", help="finished run folder or model file")
    p.add_argument("--format", dest="fmt", required=True,
                   choices=("opensearch-ltr", "elasticsearch-ltr", "solr-ltr", "vespa",
                            "ranklib", "onnx"))
    p.add_argument("--out", required=True, metavar="FILE", help="the model file to write")
    p.add_argument("--features", metavar="NAMES",
                   help="text file: one search-engine feature name per line, in column order")
    p.add_argument("--adjust-thresholds", action="store_true",
                   help="move thresholds a float32 format cannot hold, keeping every training "
                   "row on its side (loads the run's training data)")
    p.add_argument("--name", help="model name in the request/store/rank profile (default: "
                   "--out's stem)")
    p.add_argument("--featureset", default="ltr_features",
                   help="LTR featureset / Solr feature store (default: ltr_features)")
    p.add_argument("--onnx-opset", type=int, default=5, choices=(5, 3),
                   help="ONNX: 5 = TreeEnsemble (double), 3 = float32 TreeEnsembleRegressor")
    _add_common(p)
    return parser


def _print_metrics(result: Mapping[str, Mapping[str, float]], as_json: bool) -> None:
    if as_json:
        print(json.dumps(result, indent=2))
        return
    keys: list[str] = []
    for vals in result.values():
        keys += [k for k in vals if k not in keys]
    width = max([len("set")] + [len(n) for n in result])
    print(f"{'set':<{width}}  " + "  ".join(f"{k:>8}" for k in keys))
    for name, vals in result.items():
        print(f"{name:<{width}}  " + "  ".join(f"{vals.get(k, float('nan')):>8.4f}" for k in keys))


def _dispatch(args: argparse.Namespace) -> int:
    cmd = args.command
    if cmd == "train":
        cfg = load_config(args.config, args.overrides) if args.config else None
        if cfg is None and args.resume is None:
            raise _UsageError("train needs CONFIG (or --resume RUN_DIR) (see: ltr train --help)")
        if cfg is None and args.overrides:
            raise RunError(
                "--set needs CONFIG; with --resume alone the run's own config is used unchanged"
            )
        result = train_run(cfg, out=args.out, resume=args.resume, progress=args.progress)
        _print_summary(result)
        return 0
    if cmd == "evaluate":
        if args.qrels is not None or args.ranking is not None:
            return _evaluate_ranking(args)
        if args.model is None:
            raise _UsageError(
                "evaluate needs --model PATH, or --qrels FILE with --ranking FILE "
                "(see: ltr evaluate --help)"
            )
        if args.convention in QRELS_CONVENTIONS:
            raise _UsageError(
                f"--convention {args.convention} applies to --qrels/--ranking; with --model use "
                f"{', '.join(SCORER_CONVENTIONS)}"
            )
        metrics = evaluate_model(
            args.model,
            args.data,
            fmt=args.fmt,
            label=args.label,
            qid=args.qid,
            eval_at=args.eval_at,
            convention=args.convention,
            n_features=args.n_features,
        )
        _print_metrics(metrics, args.json)
        return 0
    if cmd == "predict":
        if args.out is None and args.trec_run is None and args.trec_qrels is None:
            raise _UsageError(
                "predict needs --out FILE and/or --trec-run FILE (see: ltr predict --help)"
            )
        frame = predict_run(
            args.model,
            args.data,
            out=args.out,
            trec_run=args.trec_run,
            trec_qrels=args.trec_qrels,
            fmt=args.fmt,
            label=args.label,
            qid=args.qid,
            doc_id=args.doc_id,
            n_features=args.n_features,
            tag=args.tag,
            exported=args.exported,
            exported_format=args.exported_format,
        )
        files = (args.out, args.trec_run, args.trec_qrels)
        written = ", ".join(str(p) for p in files if p is not None)
        print(f"scored {len(frame)} documents of {frame['qid'].nunique()} queries: {written}")
        return EXIT_OK
    if cmd == "importance":
        if args.repeats is not None and args.repeats < 1:
            raise RunError(f"--repeats: must be >= 1, got {args.repeats}")
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
        return 0
    if cmd == "tune":
        cfg = load_config(args.config, args.overrides)
        result = tune_run(cfg, out=args.out, progress=args.progress)
        s = result.metrics["search"]
        print(f"best {s['scoring']} = {s['best_score']:.4f} with {json.dumps(s['best_params'])}")
        _print_summary(result)
        return 0
    if cmd == "compare":
        from ltr.runs.compare_cmd import compare_runs, segments_from_column

        segments: Any = args.segments
        if args.segment_column is not None:
            if segments is not None:
                raise _UsageError("give --segments or --segment-column, not both")
            segments = segments_from_column(args.run_a, args.split, args.segment_column)
        comparison = compare_runs(
            args.run_a,
            args.run_b,
            split=args.split,
            segments=segments,
            n_resamples=args.n_resamples,
            alpha=args.alpha,
            random_state=args.seed,
            min_queries=args.min_queries,
            align="intersect" if args.intersect else "error",
            metrics=args.metrics,
            out=args.out,
        )
        for line in comparison.summary_lines():
            print(line)
        return EXIT_OK
    if cmd == "monitor":
        from ltr.runs.monitor_cmd import monitor_log

        quick = any(v is not None for v in (args.metric, args.window, args.min, args.max))
        if args.config is None and not quick:
            raise _UsageError(
                "monitor needs -c CONFIG or a quick rule (--metric, --window, --min/--max)"
            )
        window: Any = args.window
        if isinstance(window, str) and window.isdigit():
            window = int(window)
        res = monitor_log(
            args.log,
            args.config,
            metric=args.metric,
            window=window,
            min=args.min,
            max=args.max,
            segment_column=args.segment_column,
            min_queries=args.min_queries,
            out=args.out,
            state=args.state,
        )
        for line in res.summary_lines():
            print(line)
        return EXIT_ALERT if res.alerted else EXIT_OK
    if cmd == "report":
        md, page = render_report(args.run_dir)
        print(f"wrote {md} and {page}")
        return 0
    if cmd == "export":
        return _run_export(args)
    if cmd == "validate":
        cfg = validate(args.config, args.overrides, load=args.load)
        if args.show:
            print(dump_config(cfg), end="")
        else:
            sched = cfg.objective.schedule
            plan = (
                f"steps {[(s.k, s.rounds) for s in sched.steps]}"
                if sched and sched.steps
                else f"linear {sched.linear.start}->{sched.linear.end}"
                if sched and sched.linear
                else f"k={cfg.objective.k}"
            )
            print(
                f"ok: {args.config} (data {cfg.data.source}, engine {cfg.model.engine}, "
                f"objective {cfg.objective.type} {plan}, {cfg.n_rounds} rounds, seed {cfg.seed})"
            )
        return 0
    raise _UsageError(
        "a command is required: train, evaluate, predict, importance, tune, compare, monitor, "
        "report or validate "
        "(see: ltr --help)"
    )


def _evaluate_ranking(args: argparse.Namespace) -> int:
    if args.qrels is None or args.ranking is None:
        raise _UsageError("--qrels and --ranking go together (see: ltr evaluate --help)")
    if args.model is not None or args.data is not None:
        raise _UsageError("--qrels/--ranking evaluate a ranking file; drop --model/--data")
    if args.convention in SCORER_CONVENTIONS:
        raise _UsageError(
            f"--convention {args.convention} applies to --model; with --qrels use "
            f"{', '.join(QRELS_CONVENTIONS)}"
        )
    result = evaluate_ranking(
        args.qrels,
        args.ranking,
        args.metrics,
        convention=args.convention,
        relevance_level=args.relevance_level,
        complete=args.complete,
        out=args.out,
    )
    if args.json:
        print(result.to_json())
    else:
        print(result.to_markdown())
        if result.missing_queries:
            shown = ", ".join(map(str, list(result.missing_queries)[:5]))
            how = "scored 0" if args.complete else "left out (--complete scores them 0)"
            print(f"{len(result.missing_queries)} judged queries not in the ranking, {how}: "
                  f"{shown}{', ...' if len(result.missing_queries) > 5 else ''}")
    return EXIT_OK


def _print_summary(result: RunResult) -> None:
    for name, vals in result.final.items():
        shown = ", ".join(f"{k} {v:.4f}" for k, v in vals.items() if v is not None)
        print(f"{name}: {shown}")
    print(f"run folder: {result.run_dir}")


def _one_line(exc: BaseException) -> str:
    text = str(exc).strip()
    if isinstance(exc, KeyError) and len(exc.args) == 1:
        text = f"missing key {exc.args[0]!r}"
    if not text:
        text = type(exc).__name__
    return " ".join(text.split())


def main(argv: Sequence[str] | None = None) -> int:
    """Run the ``ltr`` command line with *argv* (default ``sys.argv[1:]``); return the exit status.

    Changes no environment variable: in-process callers keep theirs.
    """
    argv = list(sys.argv[1:] if argv is None else argv)
    debug = "--debug" in argv
    parser = build_parser()
    with _sigterm_as_interrupt(), warnings.catch_warnings():
        if not debug:
            warnings.showwarning = _one_line_warning
        return _main(parser, argv, debug)


def _one_line_warning(
    message: Warning | str,
    category: type[Warning],
    filename: str,
    lineno: int,
    file: Any = None,
    line: str | None = None,
) -> None:
    """Show a library warning as one line, ``ltr: warning: ...`` (no source line)."""
    print(f"ltr: warning: {_one_line(Exception(str(message)))}", file=sys.stderr)


def console_main() -> int:
    """Entry point of the ``ltr`` console script and ``python -m ltr``.

    The one place that sets process-wide state: OpenMP threads that spin while
    waiting (the default) slow numba's parallel kernels and LightGBM by 10-100x
    when cores are shared, and passive waiting costs little otherwise.  It only
    takes effect before the first OpenMP runtime starts, which holds for a fresh
    process; an explicit setting wins.
    """
    os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
    return main()


@contextmanager
def _sigterm_as_interrupt() -> Iterator[None]:
    """Treat SIGTERM like Ctrl-C while ``main`` runs, so a stopped run says how to resume."""
    import signal
    import threading

    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def handler(signum: int, frame: Any) -> None:
        raise KeyboardInterrupt

    previous = signal.signal(signal.SIGTERM, handler)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)


def _main(parser: argparse.ArgumentParser, argv: list[str], debug: bool) -> int:
    try:
        args = parser.parse_args(argv)
        if args.command is None:
            parser.print_help()
            return 2
        return _dispatch(args)
    except SystemExit as exc:  # --help / --version from argparse
        return int(exc.code) if isinstance(exc.code, int) else 0
    except _UsageError as exc:
        if debug:
            raise
        print(f"ltr: error: {_one_line(exc)}", file=sys.stderr)
        return 2
    except RunInterrupted as exc:
        if debug:
            raise
        print(f"ltr: {_one_line(exc)}", file=sys.stderr)
        return EXIT_INTERRUPTED
    except KeyboardInterrupt:
        if debug:
            raise
        print("ltr: interrupted", file=sys.stderr)
        return 130
    except (ConfigError, RunError, ValueError, TypeError, OSError, ImportError, KeyError) as exc:
        if debug:
            raise
        print(f"ltr: error: {_one_line(exc)}", file=sys.stderr)
        return 1
    except Exception as exc:
        if debug:
            raise
        print(
            f"ltr: error: {type(exc).__name__}: {_one_line(exc)} "
            "(rerun with --debug for the traceback)",
            file=sys.stderr,
        )
        return 1


def _run_export(args: argparse.Namespace) -> int:
    from ltr.runs.export_cmd import export_run

    result = export_run(args.model, args.fmt, args.out, features=args.features,
                        adjust_thresholds=args.adjust_thresholds, name=args.name,
                        featureset=args.featureset, onnx_opset=args.onnx_opset)
    for note in result.notes[:5]:
        print(f"adjusted: {note}")
    if len(result.notes) > 5:
        print(f"adjusted: ... {len(result.notes) - 5} more (all in the run's exports.json)")
    for path in result.files:
        print(f"wrote {path} (sha256 {result.sha256[path.name]})")
    return EXIT_OK


if __name__ == "__main__":
    raise SystemExit(console_main())

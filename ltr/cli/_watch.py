"""The commands that watch models over time: ``compare`` (two runs) and ``monitor`` (a log)."""

from __future__ import annotations

import argparse
from typing import Any

from ltr.cli._common import (
    EXIT_ALERT,
    EXIT_OK,
    EXIT_REGRESSION,
    Command,
    UsageError,
    add_config,
    add_out_dir,
    check_out_dir,
    config_of,
    positive_int,
)

__all__ = ["COMMANDS"]


def _configure_compare(p: argparse.ArgumentParser) -> None:
    p.add_argument("run_a", metavar="RUN_A", help="baseline run folder or per-query CSV")
    p.add_argument("run_b", metavar="RUN_B", help="candidate run folder or per-query CSV")
    p.add_argument("--on", dest="split", choices=("test", "valid"), default="test",
                   help="which set's per-query values (default: test)")
    p.add_argument("--segment-column", metavar="C",
                   help="column of RUN_A's per-query file to segment by (default: 'segment' "
                   "when present)")
    p.add_argument("--segments", metavar="CSV", help="a qid,segment CSV to segment by")
    p.add_argument("--metrics", nargs="+", metavar="M", help="metrics to compare (default: all)")
    p.add_argument("--n-resamples", type=positive_int, default=10_000, metavar="N")
    p.add_argument("--alpha", type=float, default=0.05)
    p.add_argument("--min-queries", type=int, default=20, metavar="N",
                   help="segments with fewer queries get no p-values (default 20)")
    p.add_argument("--intersect", action="store_true",
                   help="compare on the queries both runs have (default: differing query sets "
                   "are an error)")
    p.add_argument("--seed", type=int, default=0, help="random seed of the resampling tests")
    p.add_argument(
        "--fail-on-regression",
        action="store_true",
        help=f"exit with status {EXIT_REGRESSION} when a metric regressed significantly in any "
        "segment (to gate CI)",
    )
    add_out_dir(p, "write report.md/report.html/forest.png/comparison.json into DIR")


def _run_compare(args: argparse.Namespace) -> int:
    from ltr.runs.compare_cmd import compare_runs, segments_from_column

    segments: Any = args.segments
    if args.segment_column is not None and segments is not None:
        raise UsageError("give --segments or --segment-column, not both")
    check_out_dir(args.out)
    if args.segment_column is not None:
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
    if args.fail_on_regression and comparison.regressed:
        return EXIT_REGRESSION
    return EXIT_OK


def _configure_monitor(p: argparse.ArgumentParser) -> None:
    p.add_argument("log", metavar="LOG")
    add_config(p, what="monitor YAML: the metric matrix (see configs/monitor.yaml)")
    p.add_argument("--metric", help="quick rule: metric, e.g. ndcg@10")
    p.add_argument("--window", help="quick rule: window, e.g. 1h, 1D, or a count of queries")
    p.add_argument("--min", type=float, help="quick rule: alert below this value")
    p.add_argument("--max", type=float, help="quick rule: alert above this value")
    p.add_argument("--segment-column", metavar="C", help="check every segment of column C too")
    p.add_argument("--min-queries", type=int, default=1, metavar="N",
                   help="quick rule: fewer queries in a window means 'not enough data'")
    p.add_argument("--sort", action="store_true", default=None,
                   help="sort the log by timestamp (default: an unsorted log is an error)")
    p.add_argument("--time-unit", choices=("s", "ms", "us", "ns"),
                   help="unit of epoch-number timestamps (default: inferred when unambiguous)")
    add_out_dir(p, "write values.csv, alerts.csv/.json and plots into DIR")
    p.add_argument("--state", metavar="FILE", help="incremental: compute only new windows")


def _run_monitor(args: argparse.Namespace) -> int:
    from ltr.runs.monitor_cmd import monitor_log

    # positional LOG comes first, so a lone second positional is the config
    config = config_of(args)
    quick = any(v is not None for v in (args.metric, args.window, args.min, args.max))
    if config is None and not quick:
        raise UsageError(
            "monitor needs -c CONFIG or a quick rule (--metric, --window, --min/--max)"
        )
    check_out_dir(args.out)
    window: Any = args.window
    if isinstance(window, str) and window.isdigit():
        window = int(window)
    res = monitor_log(
        args.log,
        config,
        metric=args.metric,
        window=window,
        min=args.min,
        max=args.max,
        segment_column=args.segment_column,
        min_queries=args.min_queries,
        out=args.out,
        state=args.state,
        sort=args.sort,
        time_unit=args.time_unit,
    )
    for line in res.summary_lines():
        print(line)
    return EXIT_ALERT if res.alerted else EXIT_OK


COMMANDS: tuple[Command, ...] = (
    Command(
        "compare",
        "compare two runs per query: deltas, significance, per-segment regressions",
        "Compare the per-query metrics of RUN_A and RUN_B (per_query_<set>.csv, or such CSV "
        "files): paired t-test, Fisher randomization test, bootstrap interval, Holm correction, "
        "per segment; writes report.md/report.html/forest.png with --out.  "
        f"--fail-on-regression exits {EXIT_REGRESSION} when a segment regressed.",
        _configure_compare,
        _run_compare,
    ),
    Command(
        "monitor",
        "check a log of impressions against health rules (exit 3 on alerts)",
        "Per-window metrics of LOG (parquet/CSV: timestamp, qid, doc_id, score, label) against "
        "the rules of -c CONFIG, or one quick rule (--metric --window --min/--max).  "
        f"Exit status {EXIT_ALERT} when any alert fires.",
        _configure_monitor,
        _run_monitor,
    ),
)

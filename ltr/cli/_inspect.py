"""The commands that look inside a trained model: ``explain`` (TreeSHAP of one query)."""

from __future__ import annotations

import argparse

from ltr.cli._common import EXIT_OK, Command, positive_int

__all__ = ["COMMANDS"]


def _configure_explain(p: argparse.ArgumentParser) -> None:
    p.add_argument("model", metavar="RUN_DIR|MODEL", help="finished run folder or model file")
    p.add_argument("--data", metavar="PATH", help="LETOR/LibSVM, CSV or parquet file")
    p.add_argument("--query", required=True, metavar="Q", help="the query id to explain")
    p.add_argument(
        "--k", type=positive_int, default=10, help="documents shown, best first (default 10)"
    )
    p.add_argument("--plot", metavar="FILE", help="heat map PNG path")


def _run_explain(args: argparse.Namespace) -> int:
    from ltr.runs.explain_cmd import explain_query

    res = explain_query(args.model, args.query, args.data, k=args.k, plot=args.plot)
    print(res.to_text())
    if res.plot is not None:
        print(f"plot: {res.plot}")
    return EXIT_OK


COMMANDS: tuple[Command, ...] = (
    Command(
        "explain",
        "TreeSHAP explanation of one query's top documents",
        "Explain one query of --data (default: the run's test set) with the model of RUN_DIR: "
        "each top-k document's TreeSHAP contributions centred on the query's mean (what lifted "
        "it above the others of its list); prints a table and writes a heat map (default "
        "RUN_DIR/explain/query_Q.png).",
        _configure_explain,
        _run_explain,
    ),
)

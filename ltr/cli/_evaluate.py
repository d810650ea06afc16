"""The evaluation commands: ``evaluate`` (qrels/run), ``score`` (a model on data), ``predict``."""

from __future__ import annotations

import argparse
import warnings

from ltr.cli._common import EXIT_OK, Command, UsageError, print_metrics
from ltr.metrics.names import NAME_CONVENTIONS as SCORER_CONVENTIONS
from ltr.metrics.names import QRELS_CONVENTIONS
from ltr.runs.score_cmd import evaluate_model, evaluate_ranking, predict_run

__all__ = ["COMMANDS"]

_FORMATS = ("auto", "letor", "csv", "parquet")


def _add_data_options(p: argparse.ArgumentParser, *, required: bool) -> None:
    p.add_argument(
        "--data",
        required=required,
        metavar="PATH",
        help="LETOR/LibSVM, CSV or parquet file"
        + ("" if required else " (default with a run folder: its valid/test sets)"),
    )
    p.add_argument(
        "--format",
        dest="fmt",
        choices=_FORMATS,
        default="auto",
        help="data format (default: by suffix; .csv/.tsv, .parquet/.pq, otherwise LETOR)",
    )
    p.add_argument(
        "--label", help="label column of tabular data (default: the run's, else 'label')"
    )
    p.add_argument("--qid", help="query id column of tabular data (default: the run's, else 'qid')")
    p.add_argument(
        "--n-features",
        type=int,
        metavar="N",
        help="LETOR data: feature count when its last features are zero in every row",
    )


def _configure_evaluate(p: argparse.ArgumentParser) -> None:
    p.add_argument("--qrels", metavar="FILE", help="TREC qrels file (qid 0 doc relevance)")
    p.add_argument(
        "--run",
        "--ranking",
        dest="ranking",
        metavar="FILE",
        help="TREC run file (qid Q0 doc rank score tag) to evaluate (--ranking: the same)",
    )
    p.add_argument(
        "--metrics",
        nargs="+",
        metavar="M",
        help="metric names (default: ndcg ndcg@10 map mrr precision@10 recall@100)",
    )
    p.add_argument(
        "--relevance-level",
        type=float,
        default=1,
        help="least relevance a binary metric counts as relevant (trec_eval -l)",
    )
    p.add_argument(
        "--complete",
        action="store_true",
        help="score queries missing from the run as 0 (trec_eval -c)",
    )
    p.add_argument(
        "--convention", choices=QRELS_CONVENTIONS, help="trec_eval (default) or ranx"
    )
    p.add_argument(
        "--out", metavar="FILE", help="write per-query values (.csv) or the whole result (.json)"
    )
    p.add_argument("--json", action="store_true", help="print JSON instead of a table")
    # ``ltr evaluate --model`` is the old spelling of ``ltr score`` (kept for one release).
    p.add_argument("--model", help=argparse.SUPPRESS)
    _add_data_options(p, required=False)
    p.add_argument("--eval-at", nargs="+", type=int, help=argparse.SUPPRESS)


def _run_evaluate(args: argparse.Namespace) -> int:
    if args.model is not None:
        if args.qrels is not None or args.ranking is not None:
            raise UsageError("--qrels/--run evaluate a ranking file; drop --model/--data")
        warnings.warn(
            "'ltr evaluate --model M' is now 'ltr score M'; the old form goes away in the next "
            "release",
            FutureWarning,
            stacklevel=1,
        )
        return _score(args, args.model)
    if args.qrels is None or args.ranking is None:
        raise UsageError("evaluate needs --qrels FILE and --run FILE (see: ltr evaluate --help)")
    if args.data is not None or args.eval_at is not None:
        raise UsageError(
            "--data/--eval-at score a model: use 'ltr score RUN_DIR --data FILE' "
            "(see: ltr score --help)"
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
        return EXIT_OK
    print(result.to_markdown())
    if result.missing_queries:
        shown = ", ".join(map(str, list(result.missing_queries)[:5]))
        how = "scored 0" if args.complete else "left out (--complete scores them 0)"
        more = ", ..." if len(result.missing_queries) > 5 else ""
        print(f"{len(result.missing_queries)} judged queries not in the run, {how}: {shown}{more}")
    return EXIT_OK


def _configure_score(p: argparse.ArgumentParser) -> None:
    p.add_argument("model", metavar="RUN_DIR|MODEL", help="finished run folder or model file")
    _add_data_options(p, required=False)
    p.add_argument(
        "--eval-at", nargs="+", type=int, metavar="K", help="cut-offs (default 1 3 5 10 20)"
    )
    p.add_argument(
        "--convention",
        choices=SCORER_CONVENTIONS,
        help="nDCG convention (default: the run's, or the model's engine)",
    )
    _add_exported(p)
    p.add_argument("--json", action="store_true", help="print JSON instead of a table")


def _add_exported(p: argparse.ArgumentParser) -> None:
    p.add_argument("--exported", metavar="FILE",
                   help="score through this file written by ltr export (the artefact deployed)")
    p.add_argument("--exported-format", metavar="F", help="format of --exported (as ltr export)")


def _run_score(args: argparse.Namespace) -> int:
    return _score(args, args.model)


def _score(args: argparse.Namespace, model: str) -> int:
    if getattr(args, "convention", None) in QRELS_CONVENTIONS:
        raise UsageError(
            f"--convention {args.convention} applies to 'ltr evaluate --qrels --run'; a model is "
            f"scored under {', '.join(SCORER_CONVENTIONS)}"
        )
    metrics = evaluate_model(
        model,
        args.data,
        fmt=args.fmt,
        label=args.label,
        qid=args.qid,
        eval_at=args.eval_at,
        convention=args.convention,
        n_features=args.n_features,
        exported=getattr(args, "exported", None),
        exported_format=getattr(args, "exported_format", None),
    )
    print_metrics(metrics, args.json)
    if not args.json:
        print("\n".join(f"{n}: {r.describe()}" for n, r in metrics.empty.items()))
    return EXIT_OK


def _configure_predict(p: argparse.ArgumentParser) -> None:
    p.add_argument("model", metavar="RUN_DIR|MODEL", help="finished run folder or model file")
    _add_data_options(p, required=True)
    p.add_argument("--out", metavar="FILE", help="scores as CSV (.csv) or parquet (.parquet)")
    p.add_argument("--trec-run", metavar="FILE", help="scores as a TREC run file")
    p.add_argument(
        "--trec-qrels", metavar="FILE", help="the file's labels as TREC qrels with the same ids"
    )
    p.add_argument("--tag", default="ltr", help="run tag of the TREC run file (default: ltr)")
    p.add_argument("--doc-id", help="document id column of tabular data (default: row number)")
    _add_exported(p)


def _run_predict(args: argparse.Namespace) -> int:
    if args.out is None and args.trec_run is None and args.trec_qrels is None:
        raise UsageError(
            "predict needs --out FILE, --trec-run FILE and/or --trec-qrels FILE "
            "(see: ltr predict --help)"
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


COMMANDS: tuple[Command, ...] = (
    Command(
        "evaluate",
        "evaluate a TREC run file against qrels (trec_eval-style)",
        "trec_eval-style evaluation of a TREC run file against judgments (judged documents "
        "that were not retrieved count in the ideal DCG), with --metrics such as ndcg@10 map "
        "mrr@10 precision@10 recall@100 err@10.  A model on labelled data: 'ltr score'.",
        _configure_evaluate,
        _run_evaluate,
    ),
    Command(
        "score",
        "metrics of a run's model (or a model file) on labelled data",
        "nDCG@k of a finished run folder's model (or a model file) on a data file (LETOR/"
        "LibSVM, CSV or parquet), or on the run's own valid/test sets without --data.",
        _configure_score,
        _run_score,
    ),
    Command(
        "predict",
        "write a model's scores for every document of a data file",
        "Score --data with the model of RUN_DIR (or a model file) and write the scores as "
        "CSV/parquet (--out) and/or a TREC run file (--trec-run), ready for "
        "'ltr evaluate --qrels ... --run ...'.",
        _configure_predict,
        _run_predict,
    ),
)

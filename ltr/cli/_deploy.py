"""The command that takes a model to the search engine that serves it: ``export``."""

from __future__ import annotations

import argparse

from ltr.cli._common import EXIT_OK, Command

__all__ = ["COMMANDS", "EXPORT_FORMATS"]

#: ``ltr export --format`` choices (docs/export.md).
EXPORT_FORMATS = ("opensearch-ltr", "elasticsearch-ltr", "solr-ltr", "vespa", "ranklib", "onnx")


def _configure_export(p: argparse.ArgumentParser) -> None:
    p.add_argument("model", metavar="RUN_DIR|MODEL", help="finished run folder or model file")
    p.add_argument("--format", dest="fmt", required=True, choices=EXPORT_FORMATS)
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


COMMANDS: tuple[Command, ...] = (
    Command(
        "export",
        "write a run's model in a search engine's format (exact, or refused)",
        "Export the model of RUN_DIR (or a model file) for OpenSearch/Elasticsearch LTR, Solr "
        "LTR, Vespa, RankLib or ONNX (docs/export.md).  Companion files go beside --out; "
        "exports of a run are recorded in its exports.json and report.",
        _configure_export,
        _run_export,
    ),
)

"""``ltr export``: a run's model in a search engine's format, recorded in the run folder.

Each export made from a run folder is appended to its ``exports.json``
(format, files, SHA-256 of each file, time, notes) and listed in the run
report.
"""

from __future__ import annotations

import json
import os
from datetime import datetime
from pathlib import Path
from typing import Any

from ltr._io import write_atomic
from ltr.runs.errors import RunError
from ltr.runs.folder import load_run_config, load_run_model

__all__ = ["EXPORTS_FILE", "export_run"]

EXPORTS_FILE = "exports.json"


def export_run(
    model_path: str | os.PathLike[str],
    fmt: str,
    out: str | os.PathLike[str],
    *,
    features: str | os.PathLike[str] | None = None,
    adjust_thresholds: bool = False,
    name: str | None = None,
    featureset: str = "ltr_features",
    onnx_opset: int = 5,
) -> Any:
    """Export the model of a finished run folder (or a model file).

    Parameters
    ----------
    model_path : path-like
        A finished run folder or a ``RankingModel.save`` file.
    fmt : str
        One of :data:`ltr.export.FORMATS`.
    out : path-like
        The model file to write (companions go beside it).
    features : path-like, optional
        Text file with one search-engine feature name per line, in the
        model's column order.
    adjust_thresholds : bool, default=False
        Move thresholds a float32 format cannot hold so that every training
        row stays on its side (needs a run folder: its training data are loaded).
    name, featureset, onnx_opset
        As in :func:`ltr.export.export_model`.

    Returns
    -------
    ltr.export.ExportResult
    """
    from ltr.export import FORMATS, ExportError, export_model, read_feature_names

    if fmt not in FORMATS:
        raise RunError(f"--format: unknown export format {fmt!r}; choose one of "
                       f"{', '.join(sorted(FORMATS))}")
    if onnx_opset not in (3, 5):
        raise RunError(f"--onnx-opset: must be 5 or 3, got {onnx_opset!r}")
    out_path = Path(out)
    if not out_path.parent.is_dir():
        raise RunError(f"--out: folder {str(out_path.parent)!r} does not exist; create it first")
    try:
        names = None if features is None else read_feature_names(features)
    except ValueError as exc:
        raise RunError(f"--features: {exc}") from exc
    model, run_dir = load_run_model(Path(model_path))
    reference = None
    if adjust_thresholds:
        if run_dir is None:
            raise RunError("--adjust-thresholds: needs a run folder (its training data keep "
                           "every training row on its side), not a model file")
        from ltr.runs.data import load_data

        reference = load_data(load_run_config(run_dir))["train"].X
    try:
        result = export_model(model, fmt, out_path, feature_names=names, name=name,
                              featureset=featureset, reference=reference,
                              adjust_thresholds=adjust_thresholds, onnx_opset=onnx_opset)
    except ExportError as exc:
        raise RunError(f"export to {fmt}: {exc}") from exc
    except ValueError as exc:
        raise RunError(f"--features: {exc}" if "feature_names" in str(exc) else str(exc)) from exc
    if run_dir is not None:
        record = {**result.to_dict(), "files": [str(p.resolve()) for p in result.files],
                  "time": datetime.now().isoformat(timespec="seconds")}
        path = run_dir / EXPORTS_FILE
        done = json.loads(path.read_text(encoding="utf-8")) if path.exists() else []
        write_atomic(path, json.dumps(done + [record], indent=1) + "\n")
        from ltr.runs.commands import render_report

        render_report(run_dir)  # the report lists the exports
    return result

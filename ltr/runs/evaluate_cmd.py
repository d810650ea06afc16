"""Scoring data with a trained model: ``ltr evaluate`` and ``ltr predict`` as library functions.

:func:`evaluate_model` computes nDCG@k of a saved model (a model file or a
finished run folder) on a data file or on the run's own sets;
:func:`predict_run` writes a model's scores per document (CSV/parquet with
qid, doc id and score, or a TREC run file) so trained models feed
qrels/run evaluation directly.  Both print nothing.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from ltr._validation import check_eval_at, check_int
from ltr.runs.config import DataConfig, RunConfig, RunError, parse_config
from ltr.runs.data import load_data
from ltr.runs.evaluation import set_metrics
from ltr.runs.folder import check_same_data, load_run_config, load_run_model, prepare_config

if TYPE_CHECKING:  # pragma: no cover
    from ltr.datasets import RankingData

__all__ = ["DEFAULT_RANKING_METRICS", "evaluate_model", "evaluate_ranking", "predict_run"]

#: What ``ltr evaluate --qrels ... --ranking ...`` reports without ``--metrics``.
DEFAULT_RANKING_METRICS = ("ndcg", "ndcg@10", "map", "mrr", "precision@10", "recall@100")

_TABULAR = {
    ".csv": "csv",
    ".tsv": "csv",
    ".tab": "csv",
    ".parquet": "parquet",
    ".pq": "parquet",
}


def _format_of(path: Path, fmt: str) -> str:
    """Return the data format of *path*: *fmt*, or by suffix for ``"auto"`` (else LETOR)."""
    if fmt != "auto":
        return fmt
    compressed = (".gz", ".bz2", ".xz", ".zip")
    suffixes = [x.lower() for x in path.suffixes if x.lower() not in compressed]
    return _TABULAR.get(suffixes[-1] if suffixes else "", "letor")


def _load_scored_file(
    model: Any,
    run_dir: Path | None,
    base: RunConfig,
    data_path: str | os.PathLike[str],
    *,
    fmt: str,
    label: str | None,
    qid: str | None,
    n_features: int | None,
) -> tuple[RunConfig, RankingData]:
    """Read one data file for a model: the run's columns, the file's own feature count."""
    p = Path(data_path)
    if not p.exists():
        raise RunError(f"--data: file not found: {str(p)!r}")
    if not p.is_file():
        raise RunError(f"--data: {str(p)!r} is a folder, not a data file")
    fmt = _format_of(p, fmt)
    n_model = model.n_features
    if n_features is not None:
        try:
            check_int(n_features, "--n-features", minimum=1, maximum=2**31 - 1)
        except (TypeError, ValueError) as exc:
            raise RunError(str(exc)) from exc
    data_cfg: dict[str, Any] = {
        "source": fmt,
        "train": str(p.resolve()),
        "split": {"valid": 0.0, "test": 0.0},  # the whole file is one evaluation set
    }
    if fmt == "letor":
        # the file's own feature count (never padded to the model's): a mismatch is refused below
        data_cfg["n_features"] = n_features
    else:
        data_cfg.update(label=label or base.data.label, qid=qid or base.data.qid)
        if base.data.source in ("csv", "parquet"):  # same columns as the run
            data_cfg["features"] = base.data.features
            if base.data.objectives:
                data_cfg["objectives"] = {
                    n: o.model_dump() for n, o in base.data.objectives.items()
                }
    cfg = base.model_copy(update={"data": DataConfig.model_validate(data_cfg)})
    ds = load_data(cfg, keys={"train": "--data"})["train"]
    if n_model is not None and ds.n_features != n_model:
        hint = (
            f"; if its last features are zero in every row (LETOR files omit zeros), pass "
            f"--n-features {n_model}"
            if fmt == "letor" and ds.n_features < n_model and n_features is None
            else ""
        )
        raise RunError(
            f"--data: {str(p)!r} has {ds.n_features} features but the model expects "
            f"{n_model}; evaluate it on data with the model's features{hint}"
        )
    return cfg, ds


def _model_and_base(model_path: str | os.PathLike[str]) -> tuple[Any, Path | None, RunConfig]:
    model, run_dir = load_run_model(Path(model_path))
    if run_dir is not None:
        base = load_run_config(run_dir)
    else:  # a bare model file: evaluate under its engine's convention unless told otherwise
        base = parse_config({"model": {"engine": model.engine}})
    return model, run_dir, base


def evaluate_model(
    model_path: str | os.PathLike[str],
    data_path: str | os.PathLike[str] | None = None,
    *,
    fmt: str = "auto",
    label: str | None = None,
    qid: str | None = None,
    eval_at: Sequence[int] | None = None,
    convention: str | None = None,
    n_features: int | None = None,
) -> dict[str, dict[str, float]]:
    """nDCG@k of a saved model on a data file (or on a run's own valid/test sets).

    Parameters
    ----------
    model_path : path-like
        A model file (``RankingModel.save``) or a finished run folder.
    data_path : path-like, optional
        LETOR/LibSVM, CSV or parquet file.  Without it *model_path* must be a
        run folder, and its config's valid/test sets are evaluated.
    fmt : {"auto", "letor", "csv", "parquet"}
        File format; ``auto`` decides by suffix (``.csv``/``.tsv``,
        ``.parquet``/``.pq``, anything else LETOR).
    label, qid : str, optional
        Tabular column names (default: the run's config, else ``label``/``qid``).
    eval_at : sequence of int, optional
        Cut-offs (default: the run's config, else 1, 3, 5, 10, 20).
    convention : str, optional
        nDCG convention of :func:`ltr.metrics.ndcg` (default: the run's, else
        the model's engine's).
    n_features : int, optional
        LETOR files: the feature count when the file's last features are zero
        in every row (LETOR omits zeros, so the file alone under-counts).

    Returns
    -------
    dict
        ``{set_name: {"ndcg@k": value}}``.
    """
    model, run_dir, base = _model_and_base(model_path)
    updates: dict[str, Any] = {}
    if eval_at is not None:
        try:
            updates["eval_at"] = sorted(check_eval_at(list(eval_at), "--eval-at"))
        except (TypeError, ValueError) as exc:
            raise RunError(str(exc)) from exc
    if convention is not None:
        updates["convention"] = convention
    if updates:
        base = base.model_copy(update={"evaluation": base.evaluation.model_copy(update=updates)})
    if data_path is None:
        if run_dir is None:
            raise RunError("--data is required when --model is a model file (not a run folder)")
        sets = load_data(prepare_config(base))
        check_same_data(run_dir, sets)
        return {
            n: set_metrics(base, ds, np.asarray(model.predict(ds.X), dtype=np.float64))
            for n, ds in sets.items()
            if n != "train"
        }
    cfg, ds = _load_scored_file(
        model, run_dir, base, data_path, fmt=fmt, label=label, qid=qid, n_features=n_features
    )
    scores = np.asarray(model.predict(ds.X), dtype=np.float64)
    return {Path(data_path).name: set_metrics(cfg, ds, scores)}


def predict_run(
    model_path: str | os.PathLike[str],
    data_path: str | os.PathLike[str],
    *,
    out: str | os.PathLike[str] | None = None,
    trec_run: str | os.PathLike[str] | None = None,
    trec_qrels: str | os.PathLike[str] | None = None,
    fmt: str = "auto",
    label: str | None = None,
    qid: str | None = None,
    doc_id: str | None = None,
    n_features: int | None = None,
    tag: str = "ltr",
    exported: str | os.PathLike[str] | None = None,
    exported_format: str | None = None,
) -> Any:
    """Score every document of a data file with a saved model.

    Parameters
    ----------
    model_path : path-like
        A model file (``RankingModel.save``) or a finished run folder.
    data_path : path-like
        LETOR/LibSVM, CSV or parquet file (the run's columns for tabular data).
    out : path-like, optional
        Write the scores as CSV (``.csv``) or parquet (``.parquet``/``.pq``).
    trec_run : path-like, optional
        Write the scores as a TREC run file (``qid Q0 doc rank score tag``).
    trec_qrels : path-like, optional
        Write the file's labels as TREC qrels (``qid 0 doc relevance``) with the
        same document ids, so ``ltr evaluate --qrels ... --ranking ...`` can
        score the run.
    fmt, label, qid, n_features
        As in :func:`evaluate_model`.
    doc_id : str, optional
        Tabular: the document-id column.  Without it (and for LETOR files)
        the document id is the row's position in the file.
    tag : str, default="ltr"
        The run tag of a TREC run file.
    exported, exported_format : path-like and str, optional
        Score through this file that ``ltr export`` wrote (format
        *exported_format*) instead of the model: ONNX in onnxruntime, other
        formats in :mod:`ltr.testing.exported`'s reference interpreters.  The
        model still supplies the data settings and feature names.

    Returns
    -------
    pandas.DataFrame
        Columns ``qid``, ``doc_id``, ``score``, in the file's row order.
    """
    import pandas as pd

    from ltr._io import write_atomic

    model, run_dir, base = _model_and_base(model_path)
    cfg, ds = _load_scored_file(
        model, run_dir, base, data_path, fmt=fmt, label=label, qid=qid, n_features=n_features
    )
    if (exported is None) != (exported_format is None):
        raise RunError("--exported and --exported-format go together")
    if exported is not None:
        from ltr.export import load_exported

        try:
            scorer = load_exported(exported, str(exported_format), feature_names=None if (
                model.feature_names is None) else list(model.feature_names))
        except ValueError as exc:
            raise RunError(f"--exported: {exc}") from exc
        X = ds.X.toarray() if hasattr(ds.X, "toarray") else ds.X
        scores = np.asarray(scorer.predict(np.asarray(X, dtype=np.float64)), dtype=np.float64)
    else:
        scores = np.asarray(model.predict(ds.X), dtype=np.float64)
    docs: Any = np.arange(ds.n_rows)
    if doc_id is not None:
        if cfg.data.source not in ("csv", "parquet"):
            raise RunError("--doc-id: applies to CSV/parquet data; LETOR rows are numbered")
        from ltr.datasets import read_table

        table = read_table(Path(data_path))
        if doc_id not in table.columns:
            raise RunError(f"--doc-id: column {doc_id!r} not found in {str(data_path)!r}")
        docs = table[doc_id].to_numpy()
    frame = pd.DataFrame({"qid": np.asarray(ds.qid), "doc_id": docs, "score": scores})
    if out is not None:
        target = Path(out)
        if target.suffix.lower() in (".parquet", ".pq"):
            import io

            buf = io.BytesIO()
            frame.to_parquet(buf, index=False)
            write_atomic(target, buf.getvalue())
        else:
            write_atomic(target, frame.to_csv(index=False))
    # without a document-id column, both TREC files number each query's rows 0, 1, ...
    trec_docs = None if doc_id is None else frame["doc_id"]
    if trec_run is not None:
        from ltr import trec

        trec.write_run(trec_run, frame["qid"], trec_docs, frame["score"], tag=tag)
    if trec_qrels is not None:
        from ltr import trec

        trec.write_qrels(trec_qrels, frame["qid"], trec_docs, ds.y)
    return frame


def evaluate_ranking(
    qrels: str | os.PathLike[str],
    ranking: str | os.PathLike[str],
    metrics: Sequence[str] | None = None,
    *,
    convention: str | None = None,
    relevance_level: float = 1,
    complete: bool = False,
    out: str | os.PathLike[str] | None = None,
) -> Any:
    """Evaluate a TREC run file against a TREC qrels file (``ltr evaluate --qrels --ranking``).

    Parameters
    ----------
    qrels, ranking : path-like
        TREC qrels and run files.
    metrics : sequence of str, optional
        Metric names (default :data:`DEFAULT_RANKING_METRICS`).
    convention : {None, "trec_eval", "ranx"}
        As in :func:`ltr.evaluate`.
    relevance_level : float, default=1
        Least relevance a binary metric counts as relevant (trec_eval ``-l``).
    complete : bool, default=False
        Score judged queries missing from the ranking as 0 (trec_eval ``-c``).
    out : path-like, optional
        Write the per-query values (``.csv``) or the whole result (``.json``).

    Returns
    -------
    ltr.evaluation.EvaluationResult
    """
    from ltr._io import write_atomic
    from ltr.evaluation import evaluate

    result = evaluate(
        qrels,
        ranking,
        list(metrics or DEFAULT_RANKING_METRICS),
        convention=convention,
        relevance_level=relevance_level,
        missing="zero" if complete else "skip",
    )
    if out is not None:
        if str(out).lower().endswith(".json"):
            result.save(out)
        else:
            write_atomic(out, result.to_frame().to_csv())
    return result

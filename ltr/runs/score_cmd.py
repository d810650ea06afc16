"""Scoring data with a model: ``ltr score``, ``ltr evaluate``, ``ltr predict`` (library side).

:func:`evaluate_model` computes nDCG@k of a saved model (a model file or a
finished run folder) on a data file or on the run's own sets;
:func:`predict_run` writes a model's scores per document (CSV/parquet with
qid, doc id and score, or a TREC run file) so trained models feed
qrels/run evaluation directly.  Both print nothing.
"""

from __future__ import annotations

import os
import warnings
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from ltr._validation import check_eval_at, check_int
from ltr.metrics.empty_queries import EmptyQueryRule, empty_query_rule
from ltr.runs.config import DataConfig, RunConfig, RunError, parse_config
from ltr.runs.data import load_data
from ltr.runs.folder import check_same_data, load_run_config, load_run_model, prepare_config
from ltr.runs.run_metrics import run_convention, set_metrics

if TYPE_CHECKING:  # pragma: no cover
    from ltr.datasets import RankingData

__all__ = [
    "DEFAULT_RANKING_METRICS",
    "MetricsBySet",
    "evaluate_model",
    "evaluate_ranking",
    "predict_run",
]

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
    exclude: Sequence[str] = (),
    columns: Sequence[Any] | None = None,
) -> tuple[RunConfig, RankingData]:
    """Read one data file for a model: the run's columns, the file's own feature count.

    *exclude*: tabular columns that are never features (``--doc-id``); *columns*:
    the file's columns when already read.
    """
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
        if exclude and data_cfg.get("features") is None:
            if columns is None:
                from ltr.datasets import read_table

                columns = list(read_table(p).columns)
            used = {data_cfg["label"], data_cfg["qid"], *exclude}
            data_cfg["features"] = [str(c) for c in columns if c not in used]
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
    coding = getattr(model, "categorical", None)
    if coding is not None:
        _, unseen = coding.encode(ds.X, count_unseen=True)
        if unseen:
            warnings.warn(
                f"--data: {unseen} of {ds.n_rows} rows of {p.name} have a category unseen in "
                "training; they are scored as missing",
                UserWarning,
                stacklevel=2,
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
    exported: str | os.PathLike[str] | None = None,
    exported_format: str | None = None,
) -> MetricsBySet:
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
    exported, exported_format : path-like and str, optional
        Score through this file that ``ltr export`` wrote (the artefact
        deployed) instead of the model, as in :func:`predict_run`.

    Returns
    -------
    MetricsBySet
        ``{set_name: {"ndcg@k": value}}`` (a dict), with ``.empty``: the
        empty-query rule per set and how many queries it applied to.
    """
    model, run_dir, base = _model_and_base(model_path)
    scorer = _exported_scorer(model, exported, exported_format)
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
        out = MetricsBySet(
            (n, set_metrics(base, ds, _scores(model, ds.X, scorer)))
            for n, ds in sets.items()
            if n != "train"
        )
        out.empty = {n: _empty_rule(base, sets[n]) for n in out}
        return out
    cfg, ds = _load_scored_file(
        model, run_dir, base, data_path, fmt=fmt, label=label, qid=qid, n_features=n_features
    )
    scores = _scores(model, ds.X, scorer)
    name = Path(data_path).name
    out = MetricsBySet({name: set_metrics(cfg, ds, scores)})
    out.empty = {name: _empty_rule(cfg, ds)}
    return out


def _exported_scorer(model: Any, exported: Any, exported_format: str | None) -> Any:
    """Return the scorer of a file ``ltr export`` wrote (``None`` without one), or raise."""
    if (exported is None) != (exported_format is None):
        raise RunError("--exported and --exported-format go together")
    if exported is None:
        return None
    from ltr.export import load_exported

    names = None if model.feature_names is None else list(model.feature_names)
    try:
        return load_exported(exported, str(exported_format), feature_names=names)
    except (OSError, ValueError) as exc:
        raise RunError(f"--exported: {exc}") from exc


def _scores(model: Any, X: Any, scorer: Any) -> np.ndarray:
    """Scores of *X*: the model's, or (the artefact deployed) the exported file's."""
    if scorer is None:
        return np.asarray(model.predict(X), dtype=np.float64)
    dense = X.toarray() if hasattr(X, "toarray") else X
    return np.asarray(scorer.predict(np.asarray(dense, dtype=np.float64)), dtype=np.float64)


class MetricsBySet(dict):  # type: ignore[type-arg]
    """``{set_name: {"ndcg@k": value}}`` plus :attr:`empty`, the empty-query rule per set."""

    empty: dict[str, EmptyQueryRule]


def _empty_rule(cfg: RunConfig, ds: RankingData) -> EmptyQueryRule:
    return empty_query_rule(ds.y, ds.offsets, run_convention(cfg))


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
    from ltr.evaluation import trec

    try:
        trec.check_tag(tag, "--tag")
    except ValueError as exc:
        raise RunError(str(exc)) from None
    outputs = {"--out": out, "--trec-run": trec_run, "--trec-qrels": trec_qrels}
    for option, target in outputs.items():
        if target is not None:
            _check_output(option, Path(target))
    model, run_dir, base = _model_and_base(model_path)
    scorer = _exported_scorer(model, exported, exported_format)  # checked before any write
    p = Path(data_path)
    tabular = p.is_file() and _format_of(p, fmt) in ("csv", "parquet")
    if doc_id is not None and p.is_file() and not tabular:
        raise RunError(f"--doc-id {doc_id}: applies to CSV/parquet data; LETOR rows are numbered")
    table = None
    if tabular:
        from ltr.datasets import read_table

        table = read_table(p)
        qid_column = qid or (base.data.qid if base.data.source in ("csv", "parquet") else "qid")
        for option, column in (("--doc-id", doc_id), ("--qid", qid_column)):
            if column is not None and column not in table.columns:
                raise RunError(f"{option}: column {column!r} not found in {str(p)!r} "
                               f"(columns: {', '.join(map(str, table.columns))})")
    cfg, ds = _load_scored_file(
        model, run_dir, base, data_path, fmt=fmt, label=label, qid=qid, n_features=n_features,
        exclude=() if doc_id is None else (doc_id,),
        columns=None if table is None else list(table.columns),
    )
    scores = _scores(model, ds.X, scorer)
    # the user's ids, as in the file (rows are never reordered: a query split in two is refused)
    qids: Any = np.asarray(ds.qid)
    if table is not None:
        qids = table[cfg.data.qid].to_numpy()
    docs: Any = np.arange(ds.n_rows)
    if doc_id is not None and table is not None:
        docs = table[doc_id].to_numpy()
        missing = pd.isna(docs)
        if missing.any():
            row = int(np.flatnonzero(missing)[0])
            raise RunError(f"--doc-id {doc_id}: {str(p)!r}, line {row + 2}: the document id is "
                           "missing")
    frame = pd.DataFrame({"qid": qids, "doc_id": docs, "score": scores})
    # without a document-id column, both TREC files number each query's rows 0, 1, ...
    trec_docs = None if doc_id is None else frame["doc_id"]
    if trec_run is not None or trec_qrels is not None:  # refuse ids TREC cannot hold first
        option = "--trec-run" if trec_run is not None else "--trec-qrels"
        try:
            trec.check_ids(frame["qid"], f"{option}: qid")
            if trec_docs is not None:
                trec.check_ids(trec_docs, f"{option}: doc_id")
        except ValueError as exc:
            raise RunError(str(exc)) from None
    if out is not None:
        target = Path(out)
        if target.suffix.lower() in (".parquet", ".pq"):
            import io

            buf = io.BytesIO()
            frame.to_parquet(buf, index=False)
            write_atomic(target, buf.getvalue())
        else:
            write_atomic(target, frame.to_csv(index=False))
    if trec_run is not None:
        trec.write_run(trec_run, frame["qid"], trec_docs, frame["score"], tag=tag)
    if trec_qrels is not None:
        trec.write_qrels(trec_qrels, frame["qid"], trec_docs, ds.y)
    return frame


def _check_output(option: str, target: Path) -> None:
    """Refuse an output path that cannot be written, before any work."""
    if target.is_dir():
        raise RunError(f"{option}: {str(target)!r} is a folder; give a file name")
    if not target.parent.is_dir():
        raise RunError(f"{option}: folder {str(target.parent)!r} does not exist (for "
                       f"{str(target)!r})")


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

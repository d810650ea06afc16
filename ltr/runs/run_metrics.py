"""The one evaluation path of a run: final and per-stage metrics, curves, importance.

Every number a run folder holds is computed here, under the run's
convention: ``evaluation.convention`` when set, else the engine's own
(LightGBM's for LightGBM, XGBoost's for XGBoost), the same convention the
per-round curves use (:func:`ltr.engines.train` with ``convention=None``).
"""

from __future__ import annotations

import csv
import io
import logging
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from ltr._io import to_jsonable, write_atomic, write_png
from ltr.metrics.empty_queries import empty_query_rule
from ltr.metrics.names import format_metric_name
from ltr.runs.config import RunConfig, RunError
from ltr.runs.folder import data_summary
from ltr.runs.notices import notice
from ltr.runs.position_bias import position_bias_metrics
from ltr.runs.report import plot_curves

if TYPE_CHECKING:  # pragma: no cover
    from ltr.datasets import RankingData

__all__ = [
    "categorical_summary",
    "compute_metrics",
    "importance_table",
    "per_query_values",
    "run_convention",
    "set_metrics",
    "write_curves",
]

log = logging.getLogger("ltr.runs")


def run_convention(cfg: RunConfig) -> str:
    """Return the nDCG convention of a run: ``evaluation.convention``, else the engine's."""
    return cfg.evaluation.convention or cfg.model.engine


def _ndcg_options(cfg: RunConfig) -> dict[str, Any]:
    return {"convention": run_convention(cfg)}


def per_query_values(
    cfg: RunConfig, ds: RankingData, scores: np.ndarray, eval_at: Sequence[int] | None = None
) -> dict[str, np.ndarray]:
    """Return per-query values of nDCG@k and of every ``evaluation.metrics`` entry.

    ``{"ndcg@k": values}`` at ``evaluation.eval_at`` (or *eval_at*), under the
    run's convention.  The one metric pass of a set: the final metrics are their means, the
    per-query files their columns.
    """
    from ltr.metrics import ndcg

    ks = list(cfg.evaluation.eval_at if eval_at is None else eval_at)
    values = ndcg(ds.y, scores, offsets=ds.offsets, k=ks, reduce=None, **_ndcg_options(cfg))
    out = {format_metric_name("ndcg", k): np.asarray(values[k], dtype=np.float64) for k in ks}
    for name in cfg.evaluation.metrics:
        if name not in out:
            out[name] = np.asarray(
                _extra_metric(cfg, name, ds, scores, reduce=None), dtype=np.float64
            )
    return out


def _means(values: dict[str, np.ndarray]) -> dict[str, float]:
    """Mean of each metric over the queries that have a value (NaN: skipped by the convention)."""
    out = {}
    for key, v in values.items():
        kept = v[~np.isnan(v)]
        out[key] = float(kept.mean()) if kept.size else float("nan")
    return out


def set_metrics(
    cfg: RunConfig, ds: RankingData, scores: np.ndarray, eval_at: Sequence[int] | None = None
) -> dict[str, float]:
    """Return ``{"ndcg@k": mean}`` of one set and its ``evaluation.metrics`` entries.

    The means of :func:`per_query_values`.
    """
    return _means(per_query_values(cfg, ds, scores, eval_at))


def _extra_metric(
    cfg: RunConfig, name: str, ds: RankingData, scores: np.ndarray, *, reduce: str | None
) -> Any:
    """One ``evaluation.metrics`` entry (``map@10``, ``mrr``, ``P_5``...), run's convention."""
    from ltr.metrics.names import SCORER_METRICS, metric_function, parse_metric_name

    parsed = parse_metric_name(name, metrics=SCORER_METRICS)
    options = _ndcg_options(cfg)
    if parsed.convention is not None:
        options["convention"] = parsed.convention
    try:
        return metric_function(parsed.metric)(ds.y, scores, offsets=ds.offsets, k=parsed.k,
                                              reduce=reduce, **options)
    except (TypeError, ValueError) as exc:
        raise RunError(f"evaluation.metrics: {name}: {exc}") from exc


def stage_metrics(model: Any, run_dir: Path) -> list[dict[str, Any]]:
    """Per-stage valid/test metrics at each stage's end, as recorded by ``ltr.engines.train``."""
    out = []
    for i, st in enumerate(getattr(model, "stages", None) or []):
        entry: dict[str, Any] = {
            "stage": i,
            "k": st.get("k"),
            "first_round": int(st.get("first_round", 0)),
            "n_rounds": int(st.get("n_rounds", 0)),
        }
        for key in ("rounds_run", "best_iteration", "early_stopped"):
            if st.get(key) is not None:
                entry[key] = st[key]
        path = st.get("path")
        if path is not None:
            p = Path(path)
            entry["model"] = str(p.relative_to(run_dir)) if p.is_relative_to(run_dir) else str(p)
        entry["metrics"] = {
            k: dict(v) for k, v in (st.get("metrics") or {}).items() if k in ("valid", "test")
        }
        out.append(entry)
    return out


def per_query_table(
    cfg: RunConfig,
    ds: RankingData,
    scores: np.ndarray,
    values: dict[str, np.ndarray] | None = None,
) -> Any:
    """Return the per-query values of one set: ``qid``, ``segment``, one column per metric.

    The format ``ltr compare`` reads from ``per_query_<set>.csv``: the columns
    of :func:`per_query_values` (computed here unless *values* are given; NaN
    where the convention skips a query without relevant documents), and, with
    ``data.objectives``, ``composite_ndcg@k`` (``k`` = ``evaluation.k``).  The
    ``segment`` column is there when the data has segments.
    """
    import pandas as pd

    from ltr.metrics import ndcg

    if values is None:
        values = per_query_values(cfg, ds, scores)
    starts = ds.offsets[:-1]
    columns: dict[str, Any] = {"qid": np.asarray(ds.qid)[starts]}
    if ds.segments is not None:
        columns["segment"] = np.asarray(ds.segments)[starts]
    columns.update(values)
    if cfg.data.objectives:
        # the weighted sum of each objective's per-query nDCG (weights normalised to 1), the
        # per-query form of composite_ndcg's total
        weights = {o: oc.weight for o, oc in cfg.data.objectives.items()}
        total = sum(weights.values())
        k = cfg.evaluation.k
        composite = np.zeros(len(starts))
        for o, w in weights.items():
            per = ndcg(ds.labels[o], scores, offsets=ds.offsets, k=k, reduce=None,
                       **_ndcg_options(cfg))
            composite += (w / total) * np.asarray(per, dtype=np.float64)
        columns[format_metric_name("composite_ndcg", k)] = composite
    return pd.DataFrame(columns)


def compute_metrics(
    cfg: RunConfig, model: Any, sets: Mapping[str, RankingData], run_dir: Path
) -> dict[str, Any]:
    """Return the content of ``metrics.json`` for a trained *model*.

    Final nDCG on every set but train, per-stage metrics, and the composite and
    per-segment tables when the config asks for them; JSON-ready.
    """
    from ltr.metrics.composite import composite_ndcg, ndcg_by_segment

    ev = cfg.evaluation
    scores = {
        name: np.asarray(model.predict(ds.X), dtype=np.float64)
        for name, ds in sets.items()
        if name != "train"
    }
    per_query = {name: per_query_values(cfg, sets[name], s) for name, s in scores.items()}
    for name, s in scores.items():
        frame = per_query_table(cfg, sets[name], s, per_query[name])
        write_atomic(run_dir / f"per_query_{name}.csv", frame.to_csv(index=False))
    metrics: dict[str, Any] = {
        "status": "complete",
        "engine": cfg.model.engine,
        "objective": str(cfg.settings.objective)
        + (" (composite)" if cfg.settings.objectives is not None else ""),
        "seed": cfg.seed,
        "n_trees": int(model.num_trees()),
        "best_iteration": to_jsonable(getattr(model, "best_iteration", None)),
        "convention": run_convention(cfg),
        "data": data_summary(sets),
        "final": {n: _means(per_query[n]) for n in scores},
        "stages": stage_metrics(model, run_dir),
    }
    metrics["empty_queries"] = {
        n: empty_query_rule(sets[n].y, sets[n].offsets, run_convention(cfg)).to_dict()
        for n in scores
    }
    coding = getattr(model, "categorical", None)
    if coding is not None:
        metrics["categorical"] = categorical_summary(coding, sets)
    bias = position_bias_metrics(cfg, model, sets, scores, run_dir)
    if bias is not None:
        metrics["position_bias"] = bias
    if cfg.data.objectives:
        weights = {name: oc.weight for name, oc in cfg.data.objectives.items()}
        metrics["composite_k"] = ev.k
        metrics["composite_weights"] = weights
        # which label "final" is nDCG of: the objective whose grades are y, else data.label
        first = next(iter(scores), None)
        metrics["final_label"] = next(
            (o for o in weights if first is not None
             and np.array_equal(sets[first].y, sets[first].labels[o])),
            cfg.data.label,
        )
        metrics["composite"] = {}
        for n, s in scores.items():
            res = composite_ndcg(
                {o: sets[n].labels[o] for o in weights},
                s,
                offsets=sets[n].offsets,
                weights=weights,
                k=ev.k,
                **_ndcg_options(cfg),
            )
            metrics["composite"][n] = res.to_dict()
    if ev.per_segment:
        metrics["segments_k"] = ev.k
        metrics["segments_smoothing"] = ev.smoothing
        metrics["segments"] = {}
        for n, s in scores.items():
            if sets[n].segments is None:
                continue
            table = ndcg_by_segment(
                sets[n].y,
                s,
                segments=sets[n].segments,
                offsets=sets[n].offsets,
                k=ev.k,
                strength=ev.smoothing,
                **_ndcg_options(cfg),
            )
            metrics["segments"][n] = to_jsonable(table.to_dict(orient="records"))
    return to_jsonable(metrics)


def categorical_summary(coding: Any, sets: Mapping[str, RankingData]) -> dict[str, Any]:
    """Columns, categories and rows with an unseen category per set (logged too)."""
    unseen: dict[str, int] = {}
    for name, ds in sets.items():
        if name == "train":
            continue
        _, count = coding.encode(ds.X, count_unseen=True)
        unseen[name] = int(count)
        log.info(
            "categorical %s: %d of %d rows have a category unseen in training (scored as "
            "missing)", name, count, ds.n_rows,
        )
    return {"columns": list(coding.names), "n_categories": coding.n_categories,
            "unseen_rows": unseen}


def write_curves(
    model: Any, stages: Sequence[Mapping[str, Any]], run_dir: Path, cfg: RunConfig
) -> None:
    """Write ``curves.png`` and ``curves.csv`` from the model's per-round eval results.

    Nothing is written when the model recorded no eval results.
    """
    evals = getattr(model, "evals_result", None) or {}
    if not evals:
        return
    k = cfg.evaluation.k
    composite = cfg.settings.objectives is not None
    key = format_metric_name("composite_ndcg" if composite else "ndcg", k)
    if not any(key in v for v in evals.values()):
        key = format_metric_name("ndcg", k)
    metric = key if any(key in v for v in evals.values()) else None
    sets = ["valid"] if "valid" in evals else list(evals)[:1]
    plot_curves(
        evals,
        run_dir / "curves.png",
        stages=stages,
        metric=metric,
        sets=sets,
        title=f"{sets[0] if sets else 'eval'} nDCG per round ({run_convention(cfg)} convention)",
    )
    # the raw numbers too, for anyone re-plotting
    buf = io.StringIO()
    writer = csv.writer(buf)
    cols = [(s, m) for s, ms in evals.items() for m in ms]
    writer.writerow(["round"] + [f"{s}:{m}" for s, m in cols])
    n = max((len(evals[s][m]) for s, m in cols), default=0)
    for r in range(n):
        writer.writerow(
            [r + 1] + [repr(float(evals[s][m][r])) if r < len(evals[s][m]) else "" for s, m in cols]
        )
    write_atomic(run_dir / "curves.csv", buf.getvalue())


def importance_set(cfg: RunConfig, sets: Mapping[str, RankingData]) -> str:
    """Return the set importance runs on: ``importance.evaluate_on``, which must exist."""
    on = cfg.importance.evaluate_on
    if on not in sets:
        other = next((n for n in ("test", "valid") if n in sets), None)
        fix = f"set importance.evaluate_on: {other}" if other else (
            "give the run a held-out set (data.split.test > 0 or data.test)"
        )
        raise RunError(
            f"importance.evaluate_on: {on!r}, but the run has no {on} set; {fix} "
            "(importance on the training data would reward over-fitting)"
        )
    return on


def importance_features(cfg: RunConfig, ds: RankingData) -> dict[str, list[str]] | None:
    """Return the columns to permute, checked against the data before any training.

    Without ``importance.features`` and ``importance.groups``: every feature
    alone (None).  Groups add to the single features (all of them, or those
    listed in ``importance.features``) unless ``importance.singles`` is false.

    Raises
    ------
    RunError
        Naming the config key and the unknown feature.
    """
    imp = cfg.importance
    if not imp.features and not imp.groups:
        return None
    known = list(ds.feature_names)
    known_set = set(known)
    features: dict[str, list[str]] = {}
    if imp.singles:
        for f in imp.features or known:
            features[f] = [f]
    for g, cols in (imp.groups or {}).items():
        if g in features and [g] != list(cols):
            raise RunError(
                f"importance.groups.{g}: the name is also a feature's; rename the group"
            )
        features[g] = list(cols)
    for g, cols in features.items():
        where = "importance.groups" if g in (imp.groups or {}) else "importance.features"
        for col in cols:
            if col not in known_set:
                shown = ", ".join(known[:10]) + (", ..." if len(known) > 10 else "")
                raise RunError(f"{where}: unknown feature {col!r} (features: {shown})")
    return features


def _with_shap(
    frame: Any, model: Any, ds: RankingData, features: Mapping[str, list[str]] | None,
    run_dir: Path,
) -> Any:
    """Add ``mean_abs_shap`` (mean |TreeSHAP contribution|) beside ΔnDCG; write ``shap.png``.

    Groups get the mean absolute sum of their members' contributions.  The
    beeswarm plot shows every row of the importance set.
    """
    from ltr.inspection import contributions, global_contributions, plot_beeswarm

    contrib = contributions(model, ds.X)
    contrib.columns = [*ds.feature_names, "bias"]
    groups = {g: cols for g, cols in (features or {}).items() if [g] != list(cols)}
    table = global_contributions(contrib, groups)["mean_abs"]
    frame = frame.copy()
    at = list(frame.columns).index("importance_std") + 1
    frame.insert(at, "mean_abs_shap", [float(table.get(str(f), np.nan)) for f in frame["feature"]])
    write_png(plot_beeswarm(contrib, ds.X, top=20), run_dir / "shap.png", dpi=100)
    return frame


def importance_table(
    cfg: RunConfig, model: Any, sets: Mapping[str, RankingData], run_dir: Path, progress: bool
) -> dict[str, Any]:
    """Permutation importance on the run's evaluation set -> ``importance.csv``/``.png``.

    Returns the summary stored under ``metrics.json["importance"]``.
    """
    from ltr.inspection import permutation_importance

    imp = cfg.importance
    name = importance_set(cfg, sets)
    ds = sets[name]
    features = importance_features(cfg, ds)
    notice.info(
        "permutation importance on %s (%d queries, %d features/groups x %d repeats, %s)",
        name,
        ds.n_queries,
        len(features) if features is not None else ds.n_features,
        imp.n_repeats,
        imp.strategy,
    )
    result = permutation_importance(
        model,
        ds.X,
        ds.y,
        qid=ds.qid,
        k=cfg.evaluation.k,
        n_repeats=imp.n_repeats,
        strategy=imp.strategy,
        features=features,
        max_queries=imp.max_queries,
        random_state=cfg.seed,
        progress=progress,
        feature_names=list(ds.feature_names),
        **_ndcg_options(cfg),
    )
    frame = result.to_frame()
    frame = _with_shap(frame, model, ds, features, run_dir)
    write_atomic(run_dir / "importance.csv", frame.to_csv(index=False))
    result.plot(run_dir / "importance.png", top=20)
    top = frame.head(10)
    return {
        "set": name,
        "k": cfg.evaluation.k,
        "n_repeats": imp.n_repeats,
        "strategy": imp.strategy,
        "max_queries": imp.max_queries,
        "queries": int(ds.n_queries if imp.max_queries is None
                       else min(ds.n_queries, imp.max_queries)),
        "seed": cfg.seed,
        "convention": run_convention(cfg),
        "top": to_jsonable(dict(zip(top["feature"].astype(str), top["importance_mean"]))),
    }

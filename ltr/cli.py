"""Command line: config-driven training runs.

::

    ltr train CONFIG [--set key.path=value ...] [--out DIR] [--resume RUN_DIR]
    ltr evaluate --model PATH|RUN_DIR [--data PATH] [--eval-at 1 3 5 10 20]
    ltr importance RUN_DIR|CONFIG [--set ...] [--repeats N] [--strategy S]
    ltr tune CONFIG [--set ...] [--out DIR]
    ltr report RUN_DIR
    ltr validate CONFIG [--set ...]

Every subcommand is a library function of this module (:func:`train_run`,
:func:`evaluate_model`, :func:`importance_run`, :func:`tune_run`,
:func:`render_report`, :func:`validate`), and :func:`main` takes ``argv`` so
it runs in-process in tests.  User errors end as one line on stderr
(``ltr: error: ...``) with exit status 1 (2 for command-line usage errors);
``--debug`` shows the traceback instead.

A run folder ``<output.runs_dir>/<name>-<YYYYmmdd-HHMMSS>/`` is created
exclusively (never reused) and holds ``config.yaml`` (resolved config with
versions), ``models/`` (one engine model file per stage, written as each stage
completes), ``model.json`` (final model, ``RankingModel.save``), ``metrics.json``,
``curves.png``, optional ``importance.csv``/``importance.png``,
``report.md``/``report.html``, ``run.log`` and finally the ``DONE`` marker.
A folder without ``DONE`` is unfinished; ``ltr train --resume`` completes it.
"""

from __future__ import annotations

import argparse
import csv
import io
import json
import logging
import os
import platform
import sys
import time
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from ltr.config import (
    ConfigError,
    DataConfig,
    RunConfig,
    config_fingerprint,
    config_to_dict,
    diff_configs,
    dump_config,
    load_config,
    parse_config,
    resolve_data_paths,
)
from ltr.report import DONE_MARKER, RunReport, plot_curves, plot_importance, write_atomic

if TYPE_CHECKING:  # pragma: no cover
    from ltr.datasets import RankingData

__all__ = [
    "CLIError",
    "RunInterrupted",
    "build_parser",
    "evaluate_model",
    "importance_run",
    "load_data",
    "main",
    "render_report",
    "train_run",
    "tune_run",
    "validate",
]

log = logging.getLogger("ltr.cli")

SETS = ("train", "valid", "test")


class CLIError(Exception):
    """A user-facing error: printed as one line ``ltr: error: <message>``."""


class RunInterrupted(CLIError):
    """A run stopped by Ctrl-C or SIGTERM (exit status 130); the message says how to resume."""


# =========================================================================== data


def _wrap_data_error(label: str, exc: Exception) -> CLIError:
    msg = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
    return CLIError(f"{label}: {msg}")


def _split_queries(
    n_queries: int, fractions: Mapping[str, float], seed: int
) -> dict[str, np.ndarray]:
    """Query-level split: a seeded permutation cut into the requested fractions."""
    perm = np.random.default_rng(seed).permutation(n_queries)
    out: dict[str, np.ndarray] = {}
    start = 0
    for name, frac in fractions.items():
        n = round(frac * n_queries)
        if frac > 0:
            n = max(n, 1)
        out[name] = np.sort(perm[start : start + n])
        start += n
    out["train"] = np.sort(perm[start:])
    if out["train"].size == 0:
        raise CLIError(f"data.split: nothing left for training out of {n_queries} queries")
    return out


def _read_tabular(cfg: RunConfig, path: str, set_name: str) -> RankingData:
    from ltr.datasets import from_frame, read_table

    data = cfg.data
    label = f"data.{set_name} ({path})"
    try:
        df = read_table(path)
    except Exception as exc:
        raise _wrap_data_error(label, exc) from exc
    cols = [str(c) for c in df.columns]
    shown = ", ".join(cols[:15]) + (", ..." if len(cols) > 15 else "")
    # with objectives, a missing label column means: rank by the first objective's grades
    label_from_objective = bool(data.objectives) and data.label not in df.columns
    for field, column in (
        ("data.label", None if label_from_objective else data.label),
        ("data.qid", data.qid),
        ("data.segment", data.segment),
    ):
        if column is not None and column not in df.columns:
            raise CLIError(f"{field}: column {column!r} not found in {path} (columns: {shown})")
    for f in data.features or []:
        if f not in df.columns:
            raise CLIError(f"data.features: column {f!r} not found in {path} (columns: {shown})")
    labels: dict[str, str] = {}
    used_raw: set[str] = set()
    if data.objectives:
        for name, oc in data.objectives.items():
            mapping = oc.grade_mapping()
            if mapping is not None:
                for col in mapping.columns:
                    if col not in df.columns:
                        raise CLIError(
                            f"data.objectives.{name}.grades: raw column {col!r} not found in {path} "
                            f"(columns: {shown})"
                        )
                try:
                    grades = mapping({c: df[c].to_numpy() for c in mapping.columns})
                except (TypeError, ValueError) as exc:
                    raise CLIError(f"data.objectives.{name}.grades ({path}): {exc}") from exc
                used_raw.update(mapping.columns)
                column = f"__grade_{name}"
                df[column] = grades
            else:
                column = oc.column or name
                if column not in df.columns:
                    raise CLIError(
                        f"data.objectives.{name}.column: column {column!r} not found in {path} (columns: {shown})"
                    )
            labels[name] = column
    label_column = next(iter(labels.values())) if label_from_objective else data.label
    features = data.features
    if features is None:
        skip = {label_column, data.qid, data.segment, *labels.values(), *used_raw}
        features = [c for c in df.columns if c not in skip]
    try:
        return from_frame(
            df,
            label=label_column,
            qid=data.qid,
            features=features,
            labels=labels,
            segment=data.segment,
            sort=True,
        )
    except (TypeError, ValueError) as exc:
        raise _wrap_data_error(label, exc) from exc


def _read_letor(cfg: RunConfig, path: str, set_name: str, n_features: int | None) -> RankingData:
    from ltr.datasets import load_letor

    try:
        return load_letor(path, n_features=n_features)
    except Exception as exc:
        raise _wrap_data_error(f"data.{set_name} ({path})", exc) from exc


def load_data(cfg: RunConfig) -> dict[str, RankingData]:
    """Load the train/valid/test sets described by ``cfg.data``.

    Sets without their own file are split from the training data by query
    (``data.split`` fractions, seeded by ``data.split.seed`` or ``seed``).
    A set with fraction 0 and no file is left out.

    Returns
    -------
    dict of str to RankingData
        Keys ``"train"`` and, when present, ``"valid"`` and ``"test"``.
    """
    data = cfg.data
    sets: dict[str, RankingData] = {}
    if data.source == "synthetic":
        from ltr.datasets import make_ranking

        s = data.synthetic
        full = make_ranking(
            s.n_queries,
            n_features=s.n_features,
            mean_docs=s.mean_docs,
            max_docs=s.max_docs,
            objectives=tuple(data.objectives) if data.objectives else None,
            n_segments=s.n_segments,
            random_state=cfg.seed,
        )
        sets["train"] = full
    else:
        paths = {name: getattr(data, name) for name in SETS if getattr(data, name) is not None}
        for name, path in paths.items():
            if data.source == "letor":
                n_feat = data.n_features
                if n_feat is None and name != "train":
                    n_feat = sets["train"].n_features  # align later files with the training file
                sets[name] = _read_letor(cfg, path, name, n_feat)
            else:
                sets[name] = _read_tabular(cfg, path, name)
    train = sets["train"]
    if data.max_queries is not None and train.n_queries > data.max_queries:
        train = sets["train"] = train.subset(np.arange(data.max_queries))
    missing = {
        n: getattr(data.split, n)
        for n in ("valid", "test")
        if n not in sets and getattr(data.split, n) > 0
    }
    if missing:
        seed = data.split.seed if data.split.seed is not None else cfg.seed
        parts = _split_queries(train.n_queries, missing, seed)
        for name in missing:
            sets[name] = train.subset(parts[name])
        sets["train"] = train.subset(parts["train"])
    for name, ds in sets.items():
        if name != "train" and ds.n_features != sets["train"].n_features:
            raise CLIError(
                f"data.{name}: has {ds.n_features} features but data.train has {sets['train'].n_features}"
            )
    return {n: sets[n] for n in SETS if n in sets}


# =========================================================================== model building


def _schedule(cfg: RunConfig) -> Any:
    from ltr.schedules import Linear, Steps

    sched = cfg.objective.schedule
    if sched is None:
        return None
    if sched.steps is not None:
        return Steps([(s.k, s.rounds) for s in sched.steps])
    assert sched.linear is not None
    return Linear(start=sched.linear.start, end=sched.linear.end, rounds=sched.linear.rounds)


def _sampling(cfg: RunConfig) -> Any:
    """``TopKPairSampling`` from ``objective.sampling`` (None when not configured)."""
    spec = cfg.objective.sampling
    if spec is None:
        return None
    from ltr.sampling import TopKPairSampling

    return TopKPairSampling(
        top=spec.top,
        head_weight=spec.head_weight,
        pairs_per_doc=spec.pairs_per_doc,
        random_state=cfg.seed,
    )


def _objective(cfg: RunConfig, train: RankingData) -> Any:
    obj = cfg.objective
    if obj.type == "native":
        return "native"
    from ltr.objectives import CompositeLambdaRankObjective, LambdaRankObjective

    common = {
        "k": obj.k,
        "sigma": obj.sigma,
        "sampling": _sampling(cfg),
        "schedule": _schedule(cfg),
        "sigmoid": obj.sigmoid,
        "random_state": cfg.seed,
    }
    if obj.composite:
        assert cfg.data.objectives is not None
        weights = {name: oc.weight for name, oc in cfg.data.objectives.items()}
        return CompositeLambdaRankObjective(
            weights, {n: train.labels[n] for n in weights}, **common
        )
    return LambdaRankObjective(**common)


def _engine_params(cfg: RunConfig) -> dict[str, Any]:
    m = cfg.model
    if m.engine == "lightgbm":
        params: dict[str, Any] = {
            "learning_rate": m.learning_rate,
            "num_leaves": m.num_leaves,
            "max_depth": m.max_depth,
            "min_data_in_leaf": m.min_data_in_leaf,
        }
    else:
        params = {
            "learning_rate": m.learning_rate,
            "max_leaves": m.num_leaves,
        }
        if m.max_depth > 0:
            params["max_depth"] = m.max_depth
    params.update(m.params)
    return params


def _engine_version(engine: str) -> str:
    try:
        from importlib.metadata import version

        return version("xgboost" if engine == "xgboost" else "lightgbm")
    except Exception:  # noqa: BLE001 - xgboost-cpu registers under another distribution name
        try:
            mod = __import__(engine)
            return str(getattr(mod, "__version__", "unknown"))
        except ImportError:
            return "not installed"


def _versions(cfg: RunConfig) -> dict[str, str]:
    import pandas
    import sklearn

    import ltr

    return {
        "ltr": ltr.__version__,
        cfg.model.engine: _engine_version(cfg.model.engine),
        "numpy": np.__version__,
        "pandas": pandas.__version__,
        "scikit-learn": sklearn.__version__,
        "python": platform.python_version(),
    }


# =========================================================================== run folders


def _new_run_dir(cfg: RunConfig, out: str | os.PathLike[str] | None, suffix: str = "") -> Path:
    """Create a fresh run folder (exclusively; an existing non-empty folder is an error)."""
    if out is not None:
        path = Path(out)
        if path.exists():
            if not path.is_dir():
                raise CLIError(f"--out: {str(path)!r} exists and is not a folder")
            if any(path.iterdir()):
                raise CLIError(
                    f"--out: {str(path)!r} already exists and is not empty; a run never overwrites "
                    "another (choose a new folder, or --resume it)"
                )
            return path
        path.mkdir(parents=True)
        return path
    runs = Path(cfg.output.runs_dir)
    runs.mkdir(parents=True, exist_ok=True)
    stamp = datetime.now().strftime("%Y%m%d-%H%M%S")
    base = f"{cfg.run_name}{suffix}-{stamp}"
    for i in range(1, 1000):
        path = runs / (base if i == 1 else f"{base}-{i}")
        try:
            path.mkdir()
            return path
        except FileExistsError:
            continue
    raise CLIError(f"output.runs_dir: cannot create a new run folder for {base!r} in {str(runs)!r}")


def _remove_run_dir(run_dir: Path, *, keep_folder: bool) -> None:
    """Delete what a failed run wrote (the folder itself too unless the user named it)."""
    import shutil

    if keep_folder:
        for child in run_dir.iterdir():
            if child.is_dir():
                shutil.rmtree(child, ignore_errors=True)
            else:
                child.unlink(missing_ok=True)
    else:
        shutil.rmtree(run_dir, ignore_errors=True)


@contextmanager
def _run_log(run_dir: Path) -> Iterator[logging.Logger]:
    """Log ``ltr.*`` messages (INFO and up) to ``run_dir/run.log`` for the duration."""
    logger = logging.getLogger("ltr")
    handler = logging.FileHandler(run_dir / "run.log", encoding="utf-8")
    handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(name)s: %(message)s"))
    old_level = logger.level
    logger.addHandler(handler)
    if logger.level == logging.NOTSET or logger.level > logging.INFO:
        logger.setLevel(logging.INFO)
    try:
        yield log
    finally:
        logger.removeHandler(handler)
        logger.setLevel(old_level)
        handler.close()


def _progress_enabled(cfg: RunConfig, flag: bool | None) -> bool:
    if flag is not None:
        return flag
    if cfg.output.progress is not None:
        return cfg.output.progress
    return sys.stderr.isatty()


def _model_file(run_dir: Path, engine: str) -> Path:
    """The final model: ``RankingModel.save`` JSON (engine model text embedded)."""
    del engine  # one format for both engines
    return run_dir / "model.json"


def _load_run_config(run_dir: Path) -> RunConfig:
    path = run_dir / "config.yaml"
    if not path.exists():
        raise CLIError(f"{str(run_dir)!r} is not a run folder (no config.yaml)")
    try:
        return load_config(path)
    except ConfigError as exc:
        raise CLIError(f"{path}: {exc}") from exc


def _prepare_config(cfg: RunConfig) -> RunConfig:
    """Resolve data paths (errors when missing) and check cheap cross-field facts."""
    return resolve_data_paths(cfg, check=True)


# =========================================================================== metrics


def _ndcg_options(cfg: RunConfig) -> dict[str, Any]:
    return {"convention": cfg.evaluation.convention} if cfg.evaluation.convention else {}


def _set_metrics(cfg: RunConfig, ds: RankingData, scores: np.ndarray) -> dict[str, float]:
    from ltr.metrics import ndcg

    ks = list(cfg.evaluation.eval_at)
    values = ndcg(ds.y, scores, offsets=ds.offsets, k=ks, **_ndcg_options(cfg))
    return {f"ndcg@{k}": float(values[k]) for k in ks}


def _clean(value: Any) -> Any:
    """JSON-safe plain data (numpy scalars -> Python, NaN -> None)."""
    if isinstance(value, Mapping):
        return {str(k): _clean(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_clean(v) for v in value]
    if isinstance(value, np.ndarray):
        return [_clean(v) for v in value.tolist()]
    if isinstance(value, (np.integer,)):
        return int(value)
    if isinstance(value, (float, np.floating)):
        v = float(value)
        return None if not np.isfinite(v) else v
    if isinstance(value, np.bool_):
        return bool(value)
    return value


def _stage_metrics(model: Any, run_dir: Path) -> list[dict[str, Any]]:
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


def _data_digest(ds: RankingData) -> str:
    """Short hash of a set's features, labels and query ids (detects changed data on reuse)."""
    import hashlib

    h = hashlib.blake2b(digest_size=12)
    for arr in (ds.X, ds.y, ds.qid):
        arr = np.ascontiguousarray(arr)
        h.update(str((arr.dtype.str, arr.shape)).encode())
        h.update(arr.view(np.uint8).reshape(-1))
    return h.hexdigest()


def _data_summary(sets: Mapping[str, RankingData]) -> dict[str, dict[str, Any]]:
    return {
        n: {"queries": int(ds.n_queries), "rows": int(ds.n_rows), "digest": _data_digest(ds)}
        for n, ds in sets.items()
    }


def _check_same_data(run_dir: Path, sets: Mapping[str, RankingData]) -> None:
    """Refuse to reuse a run's config when its data no longer are what the run saw."""
    path = run_dir / "metrics.json"
    if not path.exists():
        return
    recorded = json.loads(path.read_text(encoding="utf-8")).get("data") or {}
    for name, ds in sets.items():
        digest = (recorded.get(name) or {}).get("digest")
        if digest is not None and digest != _data_digest(ds):
            raise CLIError(
                f"data.{name}: the data loaded from the run's config differ from what run "
                f"{str(run_dir)!r} was trained and evaluated on (files changed, or a different "
                "ltr version generates other synthetic data); pass --data explicitly"
            )


def _compute_metrics(
    cfg: RunConfig, model: Any, sets: Mapping[str, RankingData], run_dir: Path
) -> dict[str, Any]:
    from ltr.metrics import composite_ndcg, ndcg_by_segment

    ev = cfg.evaluation
    scores = {
        name: np.asarray(model.predict(ds.X), dtype=np.float64)
        for name, ds in sets.items()
        if name != "train"
    }
    metrics: dict[str, Any] = {
        "status": "complete",
        "engine": cfg.model.engine,
        "objective": cfg.objective.type + (" (composite)" if cfg.objective.composite else ""),
        "seed": cfg.seed,
        "n_trees": int(model.num_trees()),
        "best_iteration": _clean(getattr(model, "best_iteration", None)),
        "convention": ev.convention,
        "data": _data_summary(sets),
        "final": {n: _set_metrics(cfg, sets[n], s) for n, s in scores.items()},
        "stages": _stage_metrics(model, run_dir),
    }
    if cfg.data.objectives:
        weights = {name: oc.weight for name, oc in cfg.data.objectives.items()}
        metrics["composite_k"] = ev.k
        metrics["composite_weights"] = weights
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
            metrics["segments"][n] = _clean(table.to_dict(orient="records"))
    return _clean(metrics)


def _write_curves(
    model: Any, stages: Sequence[Mapping[str, Any]], run_dir: Path, cfg: RunConfig
) -> None:
    evals = getattr(model, "evals_result", None) or {}
    if not evals:
        return
    k = cfg.evaluation.k
    metric = f"ndcg@{k}" if any(f"ndcg@{k}" in v for v in evals.values()) else None
    sets = ["valid"] if "valid" in evals else list(evals)[:1]
    plot_curves(
        evals,
        run_dir / "curves.png",
        stages=stages,
        metric=metric,
        sets=sets,
        title=f"{sets[0] if sets else 'eval'} nDCG per round",
    )
    # the raw numbers too, for anyone re-plotting
    buf = io.StringIO()
    writer = csv.writer(buf)
    cols = [(s, m) for s, ms in evals.items() for m in ms]
    writer.writerow(["round"] + [f"{s}:{m}" for s, m in cols])
    n = max((len(evals[s][m]) for s, m in cols), default=0)
    for r in range(n):
        writer.writerow(
            [r + 1] + [_fmt_num(evals[s][m][r]) if r < len(evals[s][m]) else "" for s, m in cols]
        )
    write_atomic(run_dir / "curves.csv", buf.getvalue())


def _fmt_num(v: Any) -> str:
    return repr(float(v))


# =========================================================================== importance


def _importance(
    cfg: RunConfig, model: Any, sets: Mapping[str, RankingData], run_dir: Path, progress: bool
) -> dict[str, Any]:
    from ltr.inspection import permutation_importance

    imp = cfg.importance
    name = (
        imp.evaluate_on
        if imp.evaluate_on in sets
        else next(n for n in ("test", "valid", "train") if n in sets)
    )
    ds = sets[name]
    features: Any = None
    if imp.features or imp.groups:
        features = {}
        for f in imp.features or []:
            features[f] = [f]
        features.update({g: list(cols) for g, cols in (imp.groups or {}).items()})
        known = set(ds.feature_names)
        for g, cols in features.items():
            for c in cols:
                if c not in known:
                    where = (
                        "importance.groups" if g in (imp.groups or {}) else "importance.features"
                    )
                    raise CLIError(
                        f"{where}: unknown feature {c!r} (features: {', '.join(ds.feature_names[:10])}, ...)"
                    )
    log.info(
        "permutation importance on %s (%d queries, %d repeats, %s)",
        name,
        ds.n_queries,
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
    write_atomic(run_dir / "importance.csv", frame.to_csv(index=False))
    plot_importance(
        frame.to_dict(orient="records"),
        run_dir / "importance.png",
        title=f"Permutation importance (ΔnDCG@{cfg.evaluation.k}, {name})",
    )
    top = frame.head(10)
    return {
        "set": name,
        "k": cfg.evaluation.k,
        "n_repeats": imp.n_repeats,
        "strategy": imp.strategy,
        "top": _clean(dict(zip(top["feature"].astype(str), top["importance_mean"]))),
    }


# =========================================================================== commands


def validate(
    config: str | os.PathLike[str], overrides: Sequence[str] = (), *, load: bool = False
) -> RunConfig:
    """Load, override, validate and resolve a config (data files must exist).

    With *load*, the data are loaded too, so missing columns, bad grade
    mappings or unreadable files are reported as well.
    """
    cfg = _prepare_config(load_config(config, overrides))
    if load:
        load_data(cfg)
    return cfg


def _check_resume(cfg: RunConfig | None, run_dir: Path) -> RunConfig:
    if not run_dir.is_dir():
        raise CLIError(f"--resume: run folder not found: {str(run_dir)!r}")
    saved = _load_run_config(run_dir)
    if (run_dir / DONE_MARKER).exists():
        raise CLIError(
            f"--resume: {str(run_dir)!r} is already finished (it has a {DONE_MARKER} marker)"
        )
    if cfg is None:
        return saved
    a, b = config_to_dict(saved), config_to_dict(cfg)
    if config_fingerprint(a) != config_fingerprint(b):
        a = {k: v for k, v in a.items() if k not in ("output", "versions")}
        b = {k: v for k, v in b.items() if k not in ("output", "versions")}
        diffs = diff_configs(a, b)
        shown = "; ".join(diffs[:3]) + (f"; ... ({len(diffs) - 3} more)" if len(diffs) > 3 else "")
        raise CLIError(
            f"--resume: {str(run_dir)!r} was made by a different config (run vs now: {shown}); "
            "resume with the same config and --set values, or start a new run"
        )
    return saved


def train_run(
    cfg: RunConfig | None,
    *,
    out: str | os.PathLike[str] | None = None,
    resume: str | os.PathLike[str] | None = None,
    progress: bool | None = None,
    force_importance: bool = False,
) -> Path:
    """Train a run described by *cfg* into a new run folder (or finish *resume*).

    Parameters
    ----------
    cfg : RunConfig or None
        Validated config; None only with *resume* (the run's own config is used).
    out : path-like, optional
        Run folder to create (must not exist or be empty); default
        ``<output.runs_dir>/<name>-<timestamp>``.
    resume : path-like, optional
        Unfinished run folder to complete: completed stages are loaded, not
        retrained, so the result equals an uninterrupted run.  *cfg*, when
        given, must equal the run's config (``output`` aside).
    progress : bool, optional
        Progress bar over rounds and stages (default: only on a terminal).
    force_importance : bool
        Compute permutation importance even if ``importance.enabled`` is false.

    Returns
    -------
    Path
        The finished run folder (it contains ``DONE``).
    """
    if resume is not None:
        if out is not None:
            raise CLIError(
                "--out and --resume exclude each other (a resumed run stays in its folder)"
            )
        run_dir = Path(resume)
        if cfg is not None:
            cfg = _prepare_config(cfg)
        cfg = _check_resume(cfg, run_dir)
        cfg = _prepare_config(cfg)
    else:
        if cfg is None:
            raise CLIError("a config is required (or --resume RUN_DIR)")
        cfg = _prepare_config(cfg)
    if force_importance and not cfg.importance.enabled:
        cfg = cfg.model_copy(
            update={"importance": cfg.importance.model_copy(update={"enabled": True})}
        )
    sets = load_data(cfg)  # all input errors surface before a folder exists
    if "valid" not in sets and cfg.model.early_stopping_rounds is not None:
        raise CLIError(
            "model.early_stopping_rounds: needs a validation set (data.valid or data.split.valid > 0)"
        )
    show = _progress_enabled(cfg, progress)

    if resume is None:
        run_dir = _new_run_dir(cfg, out)
        _write_run_config(run_dir, cfg)
    finished = False
    try:
        with _run_log(run_dir):
            t0 = time.perf_counter()
            log.info("%s run %s (seed %d)", "resuming" if resume else "starting", run_dir, cfg.seed)
            for name, ds in sets.items():
                log.info(
                    "data %s: %d queries, %d rows, %d features",
                    name,
                    ds.n_queries,
                    ds.n_rows,
                    ds.n_features,
                )
            try:
                model = _train_model(cfg, sets, run_dir, resume=resume is not None, progress=show)
                model.save(_model_file(run_dir, cfg.model.engine))
                metrics = _compute_metrics(cfg, model, sets, run_dir)
                _write_curves(model, metrics["stages"], run_dir, cfg)
                if cfg.importance.enabled:
                    metrics["importance"] = _importance(cfg, model, sets, run_dir, show)
                write_atomic(
                    run_dir / "metrics.json", json.dumps(metrics, indent=2, sort_keys=False) + "\n"
                )
                RunReport.from_run_dir(run_dir).save(run_dir)
            except BaseException as exc:
                log.error("run stopped: %s: %s", type(exc).__name__, exc)
                raise
            log.info("finished in %.1f s", time.perf_counter() - t0)
            _mark_done(run_dir)
            finished = True
    except KeyboardInterrupt:
        if resume is not None or (run_dir / "models" / "stages.json").exists():
            raise RunInterrupted(
                f"interrupted; completed stages are kept: finish with: ltr train --resume {run_dir}"
            ) from None
        raise RunInterrupted("interrupted before the first stage completed; nothing kept") from None
    finally:
        if not finished and resume is None and not (run_dir / "models" / "stages.json").exists():
            # no stage completed: nothing worth resuming, so leave no half-made folder behind
            _remove_run_dir(run_dir, keep_folder=out is not None)
    return run_dir


def _write_run_config(run_dir: Path, cfg: RunConfig) -> None:
    """``config.yaml``: the resolved config with package/engine versions (seed included)."""
    resolved = cfg.model_copy(update={"versions": _versions(cfg)})
    write_atomic(run_dir / "config.yaml", _config_header(cfg) + dump_config(resolved))


def _mark_done(run_dir: Path) -> None:
    """Write the ``DONE`` marker: the last file of a finished run."""
    stamp = datetime.now().isoformat(timespec="seconds")
    write_atomic(run_dir / DONE_MARKER, json.dumps({"finished": stamp}) + "\n")


def _config_header(cfg: RunConfig) -> str:
    src = f" from {cfg.source}" if cfg.source is not None else ""
    return (
        f"# Resolved ltr run config{src}; written {datetime.now().isoformat(timespec='seconds')}.\n"
        "# Load it with ltr.config.load_config; `versions` is informational.\n"
    )


def _train_model(
    cfg: RunConfig, sets: Mapping[str, RankingData], run_dir: Path, *, resume: bool, progress: bool
) -> Any:
    from ltr.engines import train

    tr = sets["train"]
    eval_sets = [(n, sets[n].X, sets[n].y, sets[n].offsets) for n in ("valid", "test") if n in sets]
    stage_dir = run_dir / "models"
    stage_dir.mkdir(exist_ok=True)
    objective = _objective(cfg, tr)
    return train(
        tr.X,
        tr.y,
        tr.offsets,
        engine=cfg.model.engine,
        objective=objective,
        k=cfg.objective.k,
        schedule=_schedule(cfg),
        params=_engine_params(cfg),
        num_boost_round=cfg.n_rounds,
        eval_sets=eval_sets,
        eval_at=tuple(cfg.evaluation.eval_at),
        early_stopping_rounds=cfg.model.early_stopping_rounds,
        stage_dir=stage_dir,
        resume=resume,
        convention=cfg.evaluation.convention,
        random_state=cfg.seed,
        n_jobs=cfg.model.n_jobs,
        progress=progress,
    )


def render_report(run_dir: str | os.PathLike[str]) -> tuple[Path, Path]:
    """(Re)write ``report.md`` and ``report.html`` of a finished run folder."""
    run_dir = Path(run_dir)
    if not run_dir.is_dir():
        raise CLIError(f"run folder not found: {str(run_dir)!r}")
    if not (run_dir / DONE_MARKER).exists():
        raise CLIError(
            f"{str(run_dir)!r} is not a finished run (no {DONE_MARKER} marker); "
            "finish it with: ltr train --resume " + str(run_dir)
        )
    return RunReport.from_run_dir(run_dir).save(run_dir)


def _load_model(path: Path) -> tuple[Any, Path | None]:
    """Load a model file, or the final model of a run folder; returns (model, run_dir or None)."""
    from ltr.engines import RankingModel

    if path.is_dir():
        for name in ("model.json",):
            if (path / name).exists():
                if not (path / DONE_MARKER).exists():
                    raise CLIError(
                        f"--model: {str(path)!r} is not a finished run (no {DONE_MARKER} marker)"
                    )
                return RankingModel.load(path / name), path
        raise CLIError(f"--model: {str(path)!r} holds no model.json (not a run folder)")
    if not path.exists():
        raise CLIError(f"--model: file not found: {str(path)!r}")
    try:
        return RankingModel.load(path), None
    except Exception as exc:
        raise CLIError(
            f"--model: cannot load {str(path)!r}: {str(exc).splitlines()[0] if str(exc) else type(exc).__name__}"
        ) from exc


def evaluate_model(
    model_path: str | os.PathLike[str],
    data_path: str | os.PathLike[str] | None = None,
    *,
    fmt: str = "auto",
    label: str | None = None,
    qid: str | None = None,
    eval_at: Sequence[int] | None = None,
    convention: str | None = None,
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
        nDCG convention of :func:`ltr.metrics.ndcg`.

    Returns
    -------
    dict
        ``{set_name: {"ndcg@k": value}}``.
    """
    model, run_dir = _load_model(Path(model_path))
    base = _load_run_config(run_dir) if run_dir is not None else parse_config({})
    updates: dict[str, Any] = {}
    if eval_at is not None:
        bad = [k for k in eval_at if k < 1]
        if bad:
            raise CLIError(f"--eval-at: every k must be >= 1, got {bad[0]}")
        updates["eval_at"] = sorted(set(eval_at))
    if convention is not None:
        updates["convention"] = convention
    if updates:
        base = base.model_copy(update={"evaluation": base.evaluation.model_copy(update=updates)})
    if data_path is None:
        if run_dir is None:
            raise CLIError("--data is required when --model is a model file (not a run folder)")
        sets = load_data(_prepare_config(base))
        _check_same_data(run_dir, sets)
        return {
            n: _set_metrics(base, ds, np.asarray(model.predict(ds.X), dtype=np.float64))
            for n, ds in sets.items()
            if n != "train"
        }
    p = Path(data_path)
    if not p.exists():
        raise CLIError(f"--data: file not found: {str(p)!r}")
    if fmt == "auto":
        compressed = (".gz", ".bz2", ".xz", ".zip")
        suffixes = [x.lower() for x in p.suffixes if x.lower() not in compressed]
        last = suffixes[-1] if suffixes else ""
        tabular = {
            ".csv": "csv",
            ".tsv": "csv",
            ".tab": "csv",
            ".parquet": "parquet",
            ".pq": "parquet",
        }
        fmt = tabular.get(last, "letor")
    n_model = _model_n_features(model)
    data_cfg: dict[str, Any] = {
        "source": fmt,
        "train": str(p.resolve()),
        "split": {"valid": 0.0, "test": 0.0},  # the whole file is one evaluation set
    }
    if fmt == "letor":
        data_cfg["n_features"] = n_model or base.data.n_features
    else:
        data_cfg.update(label=label or base.data.label, qid=qid or base.data.qid)
        if base.data.source in ("csv", "parquet"):  # same columns as the run
            data_cfg["features"] = base.data.features
            if base.data.objectives:
                data_cfg["objectives"] = {
                    n: o.model_dump() for n, o in base.data.objectives.items()
                }
    cfg = base.model_copy(update={"data": DataConfig.model_validate(data_cfg)})
    ds = load_data(cfg)["train"]
    if n_model is not None and ds.n_features != n_model:
        raise CLIError(
            f"--data: {str(p)!r} has {ds.n_features} features but the model expects {n_model}"
        )
    return {p.name: _set_metrics(cfg, ds, np.asarray(model.predict(ds.X), dtype=np.float64))}


def _model_n_features(model: Any) -> int | None:
    """Feature count of a LightGBM (``num_feature``) or XGBoost (``num_features``) booster."""
    booster = getattr(model, "booster", None)
    for name in ("num_feature", "num_features"):
        if hasattr(booster, name):
            return int(getattr(booster, name)())
    return None


def importance_run(
    target: str | os.PathLike[str],
    overrides: Sequence[str] = (),
    *,
    n_repeats: int | None = None,
    strategy: str | None = None,
    on: str | None = None,
    out: str | os.PathLike[str] | None = None,
    progress: bool | None = None,
) -> Path:
    """Permutation importance for a finished run folder, or a new run from a config.

    With a run folder, ``importance.csv``/``importance.png`` are (re)written in
    it and the report re-rendered; with a config, a full run is trained with
    importance enabled.  *n_repeats*, *strategy* and *on* override the
    config's ``importance`` section.
    """
    extra = list(overrides)
    if n_repeats is not None:
        extra.append(f"importance.n_repeats={n_repeats}")
    if strategy is not None:
        extra.append(f"importance.strategy={strategy}")
    if on is not None:
        extra.append(f"importance.evaluate_on={on}")
    extra.append("importance.enabled=true")
    path = Path(target)
    if not path.is_dir():
        cfg = load_config(path, extra)
        return train_run(cfg, out=out, progress=progress)
    run_dir = path
    if not (run_dir / DONE_MARKER).exists():
        raise CLIError(f"{str(run_dir)!r} is not a finished run (no {DONE_MARKER} marker)")
    if out is not None:
        raise CLIError(
            "--out applies to a CONFIG; with a run folder the results go into that folder"
        )
    for text in overrides:
        if not text.strip().startswith("importance."):
            raise CLIError(
                f"--set {text!r}: with a finished run folder only importance.* can be changed "
                "(the model and data are the run's)"
            )
    saved = _load_run_config(run_dir)
    raw = config_to_dict(saved)
    cfg = _prepare_config(parse_config(raw, overrides=extra, source=run_dir / "config.yaml"))
    model, _ = _load_model(run_dir)
    sets = load_data(cfg)
    _check_same_data(run_dir, sets)
    with _run_log(run_dir):
        summary = _importance(cfg, model, sets, run_dir, _progress_enabled(cfg, progress))
        metrics = json.loads((run_dir / "metrics.json").read_text(encoding="utf-8"))
        metrics["importance"] = summary
        write_atomic(run_dir / "metrics.json", json.dumps(metrics, indent=2) + "\n")
        RunReport.from_run_dir(run_dir).save(run_dir)
    return run_dir


def _search_distributions(space: Mapping[str, Any]) -> dict[str, Any]:
    """``{name: [values]}`` or ``{name: {dist: uniform|loguniform|randint, low, high}}`` -> scipy objects."""
    from scipy import stats

    out: dict[str, Any] = {}
    for name, spec in space.items():
        if isinstance(spec, list):
            out[name] = spec
            continue
        if not isinstance(spec, Mapping) or "dist" not in spec:
            raise CLIError(
                f"search.param_distributions.{name}: give a list of values or "
                f"{{dist: uniform|loguniform|randint, low: .., high: ..}}, got {spec!r}"
            )
        dist, low, high = spec.get("dist"), spec.get("low"), spec.get("high")
        if (
            not isinstance(low, (int, float))
            or not isinstance(high, (int, float))
            or not low < high
        ):
            raise CLIError(
                f"search.param_distributions.{name}: needs numeric low < high, got low={low!r}, high={high!r}"
            )
        if dist == "uniform":
            out[name] = stats.uniform(low, high - low)
        elif dist == "loguniform":
            if low <= 0:
                raise CLIError(
                    f"search.param_distributions.{name}.low: must be > 0 for loguniform, got {low!r}"
                )
            out[name] = stats.loguniform(low, high)
        elif dist == "randint":
            out[name] = stats.randint(int(low), int(high) + 1)
        else:
            raise CLIError(
                f"search.param_distributions.{name}.dist: must be uniform, loguniform or randint, got {dist!r}"
            )
    return out


def _ranker(cfg: RunConfig) -> Any:
    from ltr.estimator import LambdaMARTRanker

    obj = cfg.objective
    extra = dict(cfg.model.params)
    return LambdaMARTRanker(
        engine=cfg.model.engine,
        n_estimators=cfg.n_rounds,
        learning_rate=cfg.model.learning_rate,
        num_leaves=cfg.model.num_leaves,
        max_depth=cfg.model.max_depth,
        min_child_samples=cfg.model.min_data_in_leaf,
        k=obj.k,
        schedule=_schedule(cfg),
        sampling=_sampling(cfg),
        eval_at=(cfg.evaluation.k,),
        engine_params=extra or None,
        n_jobs=cfg.model.n_jobs,
        random_state=cfg.seed,
    )


def tune_run(
    cfg: RunConfig,
    *,
    out: str | os.PathLike[str] | None = None,
    progress: bool | None = None,
) -> Path:
    """Run the config's ``search`` section (GridSearchCV/RandomizedSearchCV, GroupKFold by query).

    The search runs on the training set; the best estimator (refit on it) is
    evaluated on valid/test.  The run folder gets ``config.yaml``,
    ``search.csv`` (``cv_results_``), ``metrics.json`` (best parameters, CV
    score, final metrics), ``report.md``/``report.html`` and ``DONE``.
    """
    import sklearn
    from sklearn.model_selection import GridSearchCV, GroupKFold, RandomizedSearchCV

    from ltr.scoring import get_scorer

    if cfg.search is None:
        src = f"{cfg.source}: " if cfg.source else ""
        raise CLIError(f"{src}search: the config has no search section (needed by ltr tune)")
    cfg = _prepare_config(cfg)
    search_cfg = cfg.search
    assert search_cfg is not None
    if cfg.objective.composite:
        raise CLIError("objective.composite: ltr tune supports single-objective configs only")
    if cfg.objective.type == "lambdarank" and cfg.objective.sampling is None:
        raise CLIError(
            "objective.type: LambdaMARTRanker (used by ltr tune) trains ltr's LambdaRank only "
            "with objective.sampling set; set it, or use type native"
        )
    try:
        scorer = get_scorer(search_cfg.scoring)
    except (TypeError, ValueError) as exc:
        raise CLIError(f"search.scoring: {exc}") from exc
    estimator = _ranker(cfg)
    valid_params = set(estimator.get_params())
    space = (
        search_cfg.param_grid
        if search_cfg.method == "grid"
        else (search_cfg.param_distributions or search_cfg.param_grid)
    )
    assert space is not None
    field = "param_grid" if search_cfg.method == "grid" else "param_distributions"
    for name in space:
        if name not in valid_params:
            raise CLIError(
                f"search.{field}.{name}: not a LambdaMARTRanker parameter "
                f"(parameters: {', '.join(sorted(valid_params))})"
            )
    sets = load_data(cfg)
    tr = sets["train"]
    if tr.n_queries < search_cfg.folds:
        raise CLIError(
            f"search.folds: {search_cfg.folds} folds need at least as many training queries, got {tr.n_queries}"
        )
    cv = GroupKFold(n_splits=search_cfg.folds)
    if search_cfg.method == "grid":
        search: Any = GridSearchCV(
            estimator, space, scoring=scorer, cv=cv, n_jobs=search_cfg.n_jobs, refit=True
        )
    else:
        search = RandomizedSearchCV(
            estimator,
            _search_distributions(space),
            n_iter=search_cfg.n_iter,
            scoring=scorer,
            cv=cv,
            n_jobs=search_cfg.n_jobs,
            refit=True,
            random_state=cfg.seed,
        )
    run_dir = _new_run_dir(cfg, out, suffix="-tune")
    _write_run_config(run_dir, cfg)
    with _run_log(run_dir):
        log.info(
            "search %s over %s with %d GroupKFold folds on %d queries",
            search_cfg.method,
            sorted(space),
            search_cfg.folds,
            tr.n_queries,
        )
        with sklearn.config_context(enable_metadata_routing=True):
            search.fit(tr.X, tr.y, qid=tr.qid, groups=tr.qid)
        results = search.cv_results_
        import pandas as pd

        frame = pd.DataFrame(
            {
                **{
                    f"param_{k}": [json.dumps(_clean(p.get(k))) for p in results["params"]]
                    for k in space
                },
                "mean_test_score": results["mean_test_score"],
                "std_test_score": results["std_test_score"],
                "rank_test_score": results["rank_test_score"],
            }
        ).sort_values("rank_test_score", kind="stable")
        write_atomic(run_dir / "search.csv", frame.to_csv(index=False))
        best = search.best_estimator_
        final = {
            n: _set_metrics(cfg, ds, np.asarray(best.predict(ds.X), dtype=np.float64))
            for n, ds in sets.items()
            if n != "train"
        }
        metrics = _clean(
            {
                "status": "complete",
                "engine": cfg.model.engine,
                "objective": cfg.objective.type,
                "seed": cfg.seed,
                "data": _data_summary(sets),
                "search": {
                    "method": search_cfg.method,
                    "scoring": search_cfg.scoring,
                    "folds": search_cfg.folds,
                    "best_params": search.best_params_,
                    "best_score": float(search.best_score_),
                    "results": frame.head(20).to_dict(orient="records"),
                },
                "final": final,
            }
        )
        write_atomic(run_dir / "metrics.json", json.dumps(metrics, indent=2) + "\n")
        RunReport.from_run_dir(run_dir).save(run_dir)
        _mark_done(run_dir)
    return run_dir


# =========================================================================== argparse


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
        help="override a config field, e.g. --set model.rounds=20 --set objective.schedule.steps[0].k=3 "
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
    """The ``ltr`` argument parser (subcommands train, evaluate, importance, tune, report, validate)."""
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
        help="nDCG@k of a saved model on a data file",
        description="Evaluate a model file or a finished run folder on a data file "
        "(LETOR/LibSVM, CSV or parquet), or on the run's own valid/test sets.",
    )
    p.add_argument(
        "--model", required=True, metavar="PATH", help="model file or finished run folder"
    )
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
        choices=("lightgbm", "xgboost", "sklearn"),
        help="nDCG convention (see ltr.metrics.ndcg)",
    )
    p.add_argument("--json", action="store_true", help="print JSON instead of a table")
    _add_common(p)

    p = sub.add_parser(
        "importance",
        help="permutation importance (ΔnDCG) of a run or a config",
        description="With a finished RUN_DIR: write importance.csv/.png into it and refresh "
        "its report.  With a CONFIG: train a new run with importance enabled.",
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
        help="also load the data (checks columns, grade mappings and file contents)",
    )
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
            raise CLIError(
                "--set needs CONFIG; with --resume alone the run's own config is used unchanged"
            )
        run_dir = train_run(cfg, out=args.out, resume=args.resume, progress=args.progress)
        _print_summary(run_dir)
        return 0
    if cmd == "evaluate":
        result = evaluate_model(
            args.model,
            args.data,
            fmt=args.fmt,
            label=args.label,
            qid=args.qid,
            eval_at=args.eval_at,
            convention=args.convention,
        )
        _print_metrics(result, args.json)
        return 0
    if cmd == "importance":
        if args.repeats is not None and args.repeats < 1:
            raise CLIError(f"--repeats: must be >= 1, got {args.repeats}")
        run_dir = importance_run(
            args.target,
            args.overrides,
            n_repeats=args.repeats,
            strategy=args.strategy,
            on=args.on,
            out=args.out,
            progress=args.progress,
        )
        print(f"importance written to {run_dir / 'importance.csv'}")
        return 0
    if cmd == "tune":
        cfg = load_config(args.config, args.overrides)
        run_dir = tune_run(cfg, out=args.out, progress=args.progress)
        metrics = json.loads((run_dir / "metrics.json").read_text(encoding="utf-8"))
        s = metrics["search"]
        print(f"best {s['scoring']} = {s['best_score']:.4f} with {json.dumps(s['best_params'])}")
        print(f"run folder: {run_dir}")
        return 0
    if cmd == "report":
        md, page = render_report(args.run_dir)
        print(f"wrote {md} and {page}")
        return 0
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
        "a command is required: train, evaluate, importance, tune, report or validate "
        "(see: ltr --help)"
    )


def _print_summary(run_dir: Path) -> None:
    metrics = json.loads((run_dir / "metrics.json").read_text(encoding="utf-8"))
    for name, vals in (metrics.get("final") or {}).items():
        shown = ", ".join(f"{k} {v:.4f}" for k, v in vals.items() if v is not None)
        print(f"{name}: {shown}")
    print(f"run folder: {run_dir}")


def _one_line(exc: BaseException) -> str:
    text = str(exc).strip()
    if isinstance(exc, KeyError) and len(exc.args) == 1:
        text = f"missing key {exc.args[0]!r}"
    if not text:
        text = type(exc).__name__
    return " ".join(text.split())


def main(argv: Sequence[str] | None = None) -> int:
    """Run the ``ltr`` command line with *argv* (default ``sys.argv[1:]``); return the exit status."""
    argv = list(sys.argv[1:] if argv is None else argv)
    debug = "--debug" in argv
    # OpenMP threads that spin while waiting (the default) slow numba's parallel
    # nDCG kernels and LightGBM by 10-100x when cores are shared or oversubscribed;
    # passive waiting costs little otherwise.  Only effective before the first
    # OpenMP runtime starts (true for the console script); an explicit setting wins.
    os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
    parser = build_parser()
    with _sigterm_as_interrupt():
        return _main(parser, argv, debug)


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
        return 130
    except KeyboardInterrupt:
        if debug:
            raise
        print("ltr: interrupted", file=sys.stderr)
        return 130
    except (ConfigError, CLIError, ValueError, TypeError, OSError, ImportError, KeyError) as exc:
        if debug:
            raise
        print(f"ltr: error: {_one_line(exc)}", file=sys.stderr)
        return 1
    except Exception as exc:
        if debug:
            raise
        print(
            f"ltr: error: {type(exc).__name__}: {_one_line(exc)} (rerun with --debug for the traceback)",
            file=sys.stderr,
        )
        return 1


if __name__ == "__main__":
    raise SystemExit(main())

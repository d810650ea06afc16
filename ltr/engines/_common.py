"""Engine-independent training machinery: validation, stages, evaluation, RankingModel.

The per-engine modules (:mod:`ltr.engines.lightgbm`, :mod:`ltr.engines.xgboost`)
only know how to build their dataset, train a number of rounds continued from a
model, truncate, serialise and predict.  Everything else lives here, once:

* validation of every argument before any training starts;
* the stage plan: :func:`ltr.schedules.stages_of` splits the schedule into runs
  of equal ``k``; each stage is one engine training continued from the previous
  stage's model (with the native objective rebuilt for that stage's ``k``);
* per-round evaluation with :func:`ltr.metrics.ndcg` (and
  :func:`ltr.metrics.composite_ndcg` for eval sets with label columns) and
  per-stage early stopping on the first eval set's ``ndcg@k_stage``;
* stage checkpoints (``stage_dir``) and resume;
* :class:`RankingModel`, the trained result.
"""

from __future__ import annotations

import copy
import hashlib
import json
import math
import os
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from numbers import Integral
from pathlib import Path
from typing import Any, Protocol

import numpy as np

from ltr._validation import check_1d_float, check_int, short_repr
from ltr.schedules import Constant, as_schedule, stages_of

__all__ = ["EvalSet", "RankingModel", "TrainSpec", "run_training"]

ENGINES = ("lightgbm", "xgboost")
_MODEL_FORMAT = "ltr.RankingModel"
_STAGES_FORMAT = "ltr.stages"


# ----------------------------------------------------------------------------
# validation
# ----------------------------------------------------------------------------


def _is_sparse(X: Any) -> bool:
    return hasattr(X, "tocsr") and hasattr(X, "nnz")


def check_matrix(X: Any, name: str) -> Any:
    """Return a 2-D numeric matrix (ndarray, or scipy sparse kept as CSR)."""
    if X is None:
        raise TypeError(f"{name} must be a 2-D array of features, got None")
    if _is_sparse(X):
        X = X.tocsr()
        if X.ndim != 2:
            raise ValueError(f"{name} must be 2-D, got shape {X.shape}")
        return X
    if hasattr(X, "to_numpy") and hasattr(X, "columns"):  # pandas DataFrame
        X = X.to_numpy()
    try:
        arr = np.asarray(X)
    except Exception as exc:  # pragma: no cover - exotic inputs
        raise TypeError(f"{name} must be a 2-D array of numbers, got {short_repr(X)}") from exc
    if arr.dtype == object or not (np.issubdtype(arr.dtype, np.number) or arr.dtype == np.bool_):
        raise TypeError(f"{name} must contain numbers, got dtype {arr.dtype}")
    if arr.ndim != 2:
        raise ValueError(f"{name} must be 2-D (n_rows, n_features), got shape {arr.shape}")
    if arr.shape[0] == 0 or arr.shape[1] == 0:
        raise ValueError(f"{name} is empty: got shape {arr.shape}")
    if arr.dtype not in (np.float32, np.float64):
        arr = arr.astype(np.float64)
    return arr


def check_labels(y: Any, name: str, n_rows: int, *, integer: bool = False) -> np.ndarray:
    """1-D float64 labels of length *n_rows*, finite and >= 0 (integral if *integer*)."""
    arr = check_1d_float(y, name)
    if len(arr) != n_rows:
        raise ValueError(f"{name} has {len(arr)} rows but X has {n_rows}; they must match")
    bad = np.isnan(arr) | np.isinf(arr)
    if bad.any():
        i = int(np.flatnonzero(bad)[0])
        raise ValueError(f"{name} must be finite; {name}[{i}] = {float(arr[i])!r}")
    if (arr < 0).any():
        i = int(np.flatnonzero(arr < 0)[0])
        raise ValueError(f"{name} must be >= 0 (graded relevance); {name}[{i}] = {float(arr[i])!r}")
    if integer and (arr != np.floor(arr)).any():
        i = int(np.flatnonzero(arr != np.floor(arr))[0])
        raise ValueError(
            f"{name} must hold integer grades for the engine's native objective; "
            f"{name}[{i}] = {float(arr[i])!r} (use a LambdaRankObjective for fractional grades)"
        )
    return arr


def check_offsets(offsets: Any, name: str, n_rows: int) -> np.ndarray:
    """int64 query offsets ``[0, ..., n_rows]``, strictly increasing."""
    if offsets is None:
        raise TypeError(f"{name} must be int64 query offsets of length n_queries + 1, got None")
    arr = np.asarray(offsets)
    if arr.ndim != 1:
        raise ValueError(f"{name} must be 1-D, got shape {arr.shape}")
    if arr.dtype == object or not (np.issubdtype(arr.dtype, np.integer) or np.issubdtype(arr.dtype, np.floating)):
        raise TypeError(f"{name} must contain integers, got dtype {arr.dtype}")
    if np.issubdtype(arr.dtype, np.floating) and (
        not np.all(np.isfinite(arr)) or np.any(arr != np.round(arr))
    ):
        raise TypeError(f"{name} must contain integers, got {short_repr(arr)}")
    arr = np.ascontiguousarray(arr, dtype=np.int64)
    if len(arr) < 2:
        raise ValueError(f"{name} must have at least 2 entries (one query), got {short_repr(arr)}")
    if arr[0] != 0:
        raise ValueError(f"{name}[0] must be 0, got {int(arr[0])!r}")
    if arr[-1] != n_rows:
        raise ValueError(
            f"{name}[-1] = {int(arr[-1])} but there are {n_rows} rows: offsets are inconsistent "
            "with the rows (queries must be contiguous and cover every row)"
        )
    steps = np.diff(arr)
    if (steps <= 0).any():
        i = int(np.flatnonzero(steps <= 0)[0])
        raise ValueError(
            f"{name} must be strictly increasing (contiguous, non-empty queries); "
            f"{name}[{i + 1}] = {int(arr[i + 1])} <= {name}[{i}] = {int(arr[i])}"
        )
    return arr


def check_weights(w: Any, name: str, n_rows: int) -> np.ndarray:
    """Per-row non-negative finite weights."""
    arr = check_1d_float(w, name)
    if len(arr) != n_rows:
        raise ValueError(f"{name} has {len(arr)} rows but X has {n_rows}; they must match")
    bad = ~np.isfinite(arr) | (arr < 0)
    if bad.any():
        i = int(np.flatnonzero(bad)[0])
        raise ValueError(f"{name} must be finite and >= 0; {name}[{i}] = {float(arr[i])!r}")
    return arr


def check_label_columns(labels: Any, name: str, n_rows: int) -> dict[str, np.ndarray]:
    """Mapping objective -> label column, each finite, >= 0, of length *n_rows*."""
    if not isinstance(labels, Mapping) or len(labels) == 0:
        raise TypeError(f"{name} must be a non-empty mapping objective -> label column, got {short_repr(labels)}")
    out: dict[str, np.ndarray] = {}
    for key, column in labels.items():
        if not isinstance(key, str):
            raise TypeError(f"{name} keys must be objective names (str), got {key!r}")
        out[key] = check_labels(column, f"{name}[{key!r}]", n_rows)
    return out


@dataclass(frozen=True)
class EvalSet:
    """A validated evaluation set."""

    name: str
    X: Any
    y: np.ndarray
    offsets: np.ndarray
    labels: dict[str, np.ndarray] | None = None


def check_eval_sets(eval_sets: Any, n_features: int) -> list[EvalSet]:
    """Validate ``[(name, X, y, offsets[, labels]), ...]``."""
    if eval_sets is None:
        return []
    if isinstance(eval_sets, (str, bytes, Mapping)) or not isinstance(eval_sets, Sequence):
        raise TypeError(
            "eval_sets must be a sequence of (name, X, y, offsets) tuples, "
            f"got {short_repr(eval_sets)}"
        )
    out: list[EvalSet] = []
    seen: set[str] = set()
    for i, item in enumerate(eval_sets):
        where = f"eval_sets[{i}]"
        if isinstance(item, (str, bytes)) or not isinstance(item, Sequence) or len(item) not in (4, 5):
            raise TypeError(
                f"{where} must be a (name, X, y, offsets) or (name, X, y, offsets, labels) tuple, "
                f"got {short_repr(item)}"
            )
        name = item[0]
        if not isinstance(name, str) or not name:
            raise TypeError(f"{where} name must be a non-empty string, got {name!r}")
        if name in seen:
            raise ValueError(f"{where} name {name!r} is used twice; eval set names must be unique")
        seen.add(name)
        X = check_matrix(item[1], f"{where} X")
        if X.shape[1] != n_features:
            raise ValueError(
                f"{where} X has {X.shape[1]} features but the training X has {n_features}"
            )
        n = X.shape[0]
        y = check_labels(item[2], f"{where} y", n)
        offsets = check_offsets(item[3], f"{where} offsets", n)
        labels = None
        if len(item) == 5 and item[4] is not None:
            labels = check_label_columns(item[4], f"{where} labels", n)
        out.append(EvalSet(name, X, y, offsets, labels))
    return out


def check_eval_at(eval_at: Any) -> tuple[int, ...]:
    """Non-empty tuple of cut-offs >= 1 (sorted, unique)."""
    if isinstance(eval_at, Integral) and not isinstance(eval_at, bool):
        eval_at = (eval_at,)
    if isinstance(eval_at, (str, bytes)) or not isinstance(eval_at, Sequence) or len(eval_at) == 0:
        raise TypeError(f"eval_at must be a non-empty sequence of cut-offs, got {short_repr(eval_at)}")
    ks = [check_int(k, f"eval_at[{i}]", minimum=1) for i, k in enumerate(eval_at)]
    return tuple(sorted(set(ks)))


# ----------------------------------------------------------------------------
# objective handling
# ----------------------------------------------------------------------------


class _ObjectiveCall:
    """What the engine calls: the user's objective, optionally times row weights.

    ``lightgbm.train`` deep-copies its params; ``__deepcopy__`` returns ``self`` so
    the user's objective object (and its ``iteration`` counter) is the one called.
    """

    def __init__(self, objective: Any, weights: np.ndarray | None) -> None:
        self.objective = objective
        self.weights = weights

    def __call__(self, preds: np.ndarray, data: Any) -> tuple[np.ndarray, np.ndarray]:
        grad, hess = self.objective(preds, data)
        grad = np.asarray(grad, dtype=np.float64)
        hess = np.asarray(hess, dtype=np.float64)
        if self.weights is not None:
            grad = grad * self.weights
            hess = hess * self.weights
        return grad, hess

    def __deepcopy__(self, memo: dict[int, Any]) -> _ObjectiveCall:
        return self


def _objective_fields(obj: Any) -> dict[str, Any]:
    """JSON-safe scalar attributes of an objective, for fingerprints and ``params``."""
    out: dict[str, Any] = {"class": type(obj).__qualname__}
    state = getattr(obj, "__dict__", {})
    for key, value in sorted(state.items()):
        if key.startswith("_") or key == "iteration":
            continue
        if isinstance(value, (bool, int, float, str)) or value is None:
            out[key] = value
        elif hasattr(value, "to_dict"):
            try:
                out[key] = value.to_dict()
            except Exception:  # noqa: BLE001  # pragma: no cover - foreign objects
                out[key] = type(value).__qualname__
        elif isinstance(value, Mapping) and all(isinstance(v, (int, float)) for v in value.values()):
            out[key] = {str(k): v for k, v in value.items()}
        else:
            out[key] = type(value).__qualname__
    return out


def _composite_weights(obj: Any) -> dict[str, float] | None:
    """Objective weights of a composite objective, or ``None`` for a single one."""
    for attr in ("objectives", "weights"):
        value = getattr(obj, attr, None)
        if isinstance(value, Mapping) and value and all(
            isinstance(v, (int, float)) and not isinstance(v, bool) for v in value.values()
        ):
            return {str(k): float(v) for k, v in value.items()}
    return None


def _composite_gains(obj: Any) -> dict[str, Any] | None:
    gains = getattr(obj, "gains", None)
    return dict(gains) if isinstance(gains, Mapping) else None


def _resolve_objective(
    objective: Any, *, k: int, schedule: Any, labels: dict[str, np.ndarray] | None, n_rows: int
) -> tuple[Any, Any]:
    """Return ``(objective or None for native, schedule)``."""
    if isinstance(objective, str):
        if objective != "native":
            raise ValueError(
                "objective must be 'native', a LambdaRankObjective/CompositeLambdaRankObjective "
                f"or a mapping of composite weights, got {objective!r}"
            )
        return None, as_schedule(schedule) if schedule is not None else Constant(k)
    if isinstance(objective, Mapping):
        if labels is None:
            raise ValueError(
                "labels is required for a composite objective: pass labels={objective: column} "
                f"with columns {sorted(objective)!r}"
            )
        for name in objective:
            if name not in labels:
                raise ValueError(
                    f"labels is missing column {name!r} required by the composite objective "
                    f"(labels has {sorted(labels)!r})"
                )
        from ltr.objectives import CompositeLambdaRankObjective

        sched = as_schedule(schedule) if schedule is not None else None
        obj = CompositeLambdaRankObjective(
            dict(objective), {name: labels[name] for name in objective}, k=k, schedule=sched
        )
        return obj, sched if sched is not None else Constant(k)
    if not callable(objective) or not hasattr(objective, "reset"):
        raise TypeError(
            "objective must be 'native', a LambdaRankObjective/CompositeLambdaRankObjective "
            "(callable with reset()) or a mapping of composite weights, "
            f"got {short_repr(objective)}"
        )
    obj = objective
    own = getattr(obj, "schedule", None)
    if schedule is not None:
        sched = as_schedule(schedule)
        if own is not None and as_schedule(own) != sched:
            raise ValueError(
                f"schedule is given twice: train(schedule={sched!r}) and the objective's "
                f"schedule={own!r}; set it in one place"
            )
        if own is None:
            obj = copy.copy(objective)
            obj.schedule = sched
    elif own is not None:
        sched = as_schedule(own)
    else:
        obj_k = getattr(obj, "k", None)
        sched = Constant(int(obj_k)) if isinstance(obj_k, Integral) and obj_k >= 1 else Constant(k)
    weights = _composite_weights(obj)
    if weights is not None:
        obj_labels = getattr(obj, "labels", None)
        if isinstance(obj_labels, Mapping):
            for name in weights:
                if name not in obj_labels:
                    raise ValueError(
                        f"the composite objective has no label column {name!r} "
                        f"(its labels have {sorted(obj_labels)!r})"
                    )
                if len(obj_labels[name]) != n_rows:
                    raise ValueError(
                        f"the composite objective's label column {name!r} has "
                        f"{len(obj_labels[name])} rows but X has {n_rows}"
                    )
    return obj, sched


# ----------------------------------------------------------------------------
# the validated request
# ----------------------------------------------------------------------------


@dataclass
class TrainSpec:
    """Everything :func:`run_training` needs, validated."""

    engine: str
    X: Any
    y: np.ndarray
    offsets: np.ndarray
    objective: Any  # None = native
    schedule: Any
    plan: list[tuple[int, int, int]]
    params: dict[str, Any]
    num_boost_round: int
    sample_weight: np.ndarray | None
    eval_sets: list[EvalSet]
    eval_at: tuple[int, ...]
    early_stopping_rounds: int | None
    stage_dir: Path | None
    resume: bool
    convention: str | None
    seed: int
    n_jobs: int | None
    progress: bool
    labels: dict[str, np.ndarray] | None
    composite_weights: dict[str, float] | None = None
    composite_gains: dict[str, Any] | None = None

    @property
    def native(self) -> bool:
        return self.objective is None

    @property
    def n_features(self) -> int:
        return int(self.X.shape[1])


def make_spec(
    X: Any,
    y: Any,
    offsets: Any,
    *,
    engine: Any,
    objective: Any,
    k: Any,
    schedule: Any,
    params: Any,
    num_boost_round: Any,
    sample_weight: Any,
    eval_sets: Any,
    eval_at: Any,
    early_stopping_rounds: Any,
    stage_dir: Any,
    resume: Any,
    convention: Any,
    random_state: Any,
    n_jobs: Any,
    progress: Any,
    labels: Any,
) -> TrainSpec:
    """Validate every argument of :func:`ltr.engines.train`; nothing is trained here."""
    if not isinstance(engine, str) or engine not in ENGINES:
        raise ValueError(f"engine must be one of {list(ENGINES)}, got {engine!r}")
    k = check_int(k, "k", minimum=1)
    if num_boost_round is not None:
        num_boost_round = check_int(num_boost_round, "num_boost_round", minimum=1)
    X = check_matrix(X, "X")
    n_rows = X.shape[0]
    offsets = check_offsets(offsets, "offsets", n_rows)
    native = isinstance(objective, str) and objective == "native"
    y = check_labels(y, "y", n_rows, integer=native)
    label_cols = None if labels is None else check_label_columns(labels, "labels", n_rows)
    weight = None if sample_weight is None else check_weights(sample_weight, "sample_weight", n_rows)
    obj, sched = _resolve_objective(objective, k=k, schedule=schedule, labels=label_cols, n_rows=n_rows)
    if num_boost_round is None:
        num_boost_round = sched.n_rounds if sched.n_rounds is not None else 100
    elif sched.n_rounds is not None and num_boost_round < sched.n_rounds:
        raise ValueError(
            f"num_boost_round={num_boost_round} would cut the schedule, which defines "
            f"{sched.n_rounds} rounds; pass num_boost_round>={sched.n_rounds} or None"
        )
    plan = stages_of(sched, num_boost_round)
    if params is None:
        params = {}
    if not isinstance(params, Mapping):
        raise TypeError(f"params must be a mapping of engine parameters, got {short_repr(params)}")
    for key in params:
        if not isinstance(key, str):
            raise TypeError(f"params keys must be strings, got {key!r}")
    evals = check_eval_sets(eval_sets, X.shape[1])
    ks = check_eval_at(eval_at)
    if early_stopping_rounds is not None:
        early_stopping_rounds = check_int(early_stopping_rounds, "early_stopping_rounds", minimum=1)
        if not evals:
            raise ValueError(
                "early_stopping_rounds needs at least one eval set; pass eval_sets=[(name, X, y, offsets)]"
            )
    if stage_dir is not None:
        if not isinstance(stage_dir, (str, os.PathLike)):
            raise TypeError(f"stage_dir must be a path, got {short_repr(stage_dir)}")
        stage_dir = Path(stage_dir)
        if stage_dir.exists() and not stage_dir.is_dir():
            raise ValueError(f"stage_dir {str(stage_dir)!r} exists and is not a folder")
    if not isinstance(resume, (bool, np.bool_)):
        raise TypeError(f"resume must be a bool, got {short_repr(resume)}")
    if resume and stage_dir is None:
        raise ValueError("resume=True needs stage_dir (the folder holding the completed stages)")
    if convention is not None:
        from ltr.metrics import CONVENTIONS

        if not isinstance(convention, str) or convention not in CONVENTIONS:
            raise ValueError(f"convention must be one of {sorted(CONVENTIONS)} or None, got {convention!r}")
        if evals:
            from ltr.metrics import ndcg

            try:  # fail now, not after the first boosting round
                ndcg(evals[0].y, np.zeros(len(evals[0].y)), offsets=evals[0].offsets, k=1,
                     convention=convention)
            except (ValueError, TypeError) as exc:
                raise ValueError(
                    f"convention={convention!r} cannot evaluate the eval sets: {exc}"
                ) from exc
    if random_state is None:
        seed = 0
    elif isinstance(random_state, np.random.RandomState):
        seed = int(random_state.randint(0, 2**31 - 1))
    elif isinstance(random_state, np.random.Generator):
        seed = int(random_state.integers(0, 2**31 - 1))
    else:
        seed = check_int(random_state, "random_state", minimum=0)
    if n_jobs is not None:
        n_jobs = check_int(n_jobs, "n_jobs")
        if n_jobs == 0:
            raise ValueError("n_jobs must be a positive number of threads or -1 (all), got 0")
    if progress is not None and not isinstance(progress, (bool, np.bool_)):
        raise TypeError(f"progress must be a bool or None, got {short_repr(progress)}")
    show = bool(progress) if progress is not None else sys.stderr.isatty()
    comp_w = _composite_weights(obj) if obj is not None else None
    comp_g = _composite_gains(obj) if obj is not None else None
    if comp_w is not None:
        for ev in evals:
            if ev.labels is not None:
                missing = [name for name in comp_w if name not in ev.labels]
                if missing:
                    raise ValueError(
                        f"eval set {ev.name!r} labels are missing column {missing[0]!r} "
                        "needed for composite nDCG"
                    )
    return TrainSpec(
        engine=engine, X=X, y=y, offsets=offsets, objective=obj, schedule=sched, plan=plan,
        params=dict(params), num_boost_round=num_boost_round, sample_weight=weight,
        eval_sets=evals, eval_at=ks, early_stopping_rounds=early_stopping_rounds,
        stage_dir=stage_dir, resume=bool(resume), convention=convention, seed=seed,
        n_jobs=n_jobs, progress=show, labels=label_cols, composite_weights=comp_w,
        composite_gains=comp_g,
    )


# ----------------------------------------------------------------------------
# evaluation and early stopping
# ----------------------------------------------------------------------------


def _metric_key(k: int) -> str:
    return f"ndcg@{k}"


class Recorder:
    """Per-round metrics of one stage and the early-stopping decision.

    ``record(set_index, preds)`` is called by the engine's metric hook for each
    eval set; ``end_round()`` after each round returns True to stop.
    """

    def __init__(self, spec: TrainSpec, stage_k: int, bar: Any) -> None:
        self.spec = spec
        self.ks = tuple(sorted(set(spec.eval_at) | ({stage_k} if spec.early_stopping_rounds else set())))
        self.history: list[dict[str, list[float]]] = [{} for _ in spec.eval_sets]
        self.rounds = 0
        self.best_round = -1
        self.best_score = -math.inf
        self.bar = bar
        self.stop_metric = None
        if spec.eval_sets:
            first = spec.eval_sets[0]
            composite = spec.composite_weights is not None and first.labels is not None
            self.stop_metric = f"composite_ndcg@{stage_k}" if composite else _metric_key(stage_k)

    def record(self, index: int, preds: np.ndarray) -> dict[str, float]:
        from ltr.metrics import composite_ndcg, ndcg

        ev = self.spec.eval_sets[index]
        scores = np.asarray(preds, dtype=np.float64).reshape(-1)
        values = ndcg(ev.y, scores, offsets=ev.offsets, k=list(self.ks), convention=self.spec.convention)
        out = {_metric_key(kk): float(values[kk]) for kk in self.ks}
        weights = self.spec.composite_weights
        if weights is not None and ev.labels is not None:
            labels = {name: ev.labels[name] for name in weights}
            gains = {n: g for n, g in (self.spec.composite_gains or {}).items() if n in labels}
            for kk in self.ks:
                comp = composite_ndcg(labels, scores, offsets=ev.offsets, weights=weights, k=kk,
                                      gains=gains or None, convention=self.spec.convention)
                out[f"composite_ndcg@{kk}"] = float(comp.total)
                for name, value in comp.per_objective.items():
                    out[f"ndcg@{kk}/{name}"] = float(value)
        hist = self.history[index]
        for key, value in out.items():
            hist.setdefault(key, []).append(value)
        return out

    def end_round(self) -> bool:
        """Advance one round; return True when early stopping says stop."""
        self.rounds += 1
        if self.bar is not None:
            self.bar.update(1)
        if self.stop_metric is None or not self.spec.early_stopping_rounds:
            return False
        values = self.history[0].get(self.stop_metric)
        if not values or len(values) < self.rounds:
            return False
        score = values[-1]
        if score > self.best_score:
            self.best_score = score
            self.best_round = self.rounds - 1
        return self.rounds - 1 - self.best_round >= self.spec.early_stopping_rounds

    def kept_rounds(self) -> int:
        """Rounds of this stage kept in the model (best round + 1 with early stopping)."""
        if self.spec.early_stopping_rounds and self.best_round >= 0:
            return self.best_round + 1
        return self.rounds

    def kept_history(self) -> dict[str, dict[str, list[float]]]:
        n = self.kept_rounds()
        return {
            ev.name: {key: values[:n] for key, values in self.history[i].items()
                      if key in self._public_keys()}
            for i, ev in enumerate(self.spec.eval_sets)
        }

    def _public_keys(self) -> set[str]:
        keys = {_metric_key(kk) for kk in self.spec.eval_at}
        keys |= {f"composite_ndcg@{kk}" for kk in self.spec.eval_at}
        if self.spec.composite_weights:
            keys |= {f"ndcg@{kk}/{n}" for kk in self.spec.eval_at for n in self.spec.composite_weights}
        return keys


# ----------------------------------------------------------------------------
# engine adapter protocol
# ----------------------------------------------------------------------------


def merge_engine_params(
    spec: TrainSpec,
    *,
    defaults: Mapping[str, Any],
    reserved: Mapping[str, str],
    aliases: Mapping[str, Sequence[str]],
    threads_key: str,
) -> dict[str, Any]:
    """User ``params`` over the adapter's defaults (seed, threads), refusing reserved keys.

    A default is dropped when the user set it under any of its engine aliases.
    """
    user = dict(spec.params)
    for key, value in user.items():
        if key in reserved:
            raise ValueError(
                f"params[{key!r}] is set by train(); use {reserved[key]} instead "
                f"(got {short_repr(value)})"
            )
    base = dict(defaults)
    base["seed"] = spec.seed
    if spec.n_jobs is not None and spec.n_jobs > 0:
        base[threads_key] = spec.n_jobs
    merged = {
        key: value for key, value in base.items()
        if not any(alias in user for alias in aliases.get(key, (key,)))
    }
    merged.update(user)
    return merged


class EngineAdapter(Protocol):
    """What an engine module provides to :func:`run_training`."""

    name: str
    suffix: str

    def base_params(self, spec: TrainSpec) -> dict[str, Any]: ...

    def train_stage(
        self,
        spec: TrainSpec,
        params: dict[str, Any],
        stage_index: int,
        k: int,
        n_rounds: int,
        init_booster: Any,
        objective: Any,
        recorder: Recorder,
    ) -> Any: ...

    def truncate(self, booster: Any, n_rounds: int) -> Any: ...

    def num_rounds(self, booster: Any) -> int: ...

    def to_string(self, booster: Any) -> str: ...

    def from_string(self, text: str) -> Any: ...

    def predict(self, booster: Any, X: Any) -> np.ndarray: ...

    def num_features(self, booster: Any) -> int: ...


def get_adapter(engine: str) -> EngineAdapter:
    """The adapter for *engine* (imports the engine lazily)."""
    if engine == "lightgbm":
        from ltr.engines.lightgbm import LightGBMAdapter

        return LightGBMAdapter()
    if engine == "xgboost":
        from ltr.engines.xgboost import XGBoostAdapter

        return XGBoostAdapter()
    raise ValueError(f"engine must be one of {list(ENGINES)}, got {engine!r}")


# ----------------------------------------------------------------------------
# stage checkpoints
# ----------------------------------------------------------------------------


def _json_safe(value: Any) -> Any:
    if isinstance(value, Mapping):
        return {str(k): _json_safe(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_json_safe(v) for v in value]
    if isinstance(value, (bool, str)) or value is None:
        return value
    if isinstance(value, (int, np.integer)):
        return int(value)
    if isinstance(value, (float, np.floating)):
        return float(value)
    if isinstance(value, _ObjectiveCall):
        return _objective_fields(value.objective)
    if callable(value):
        return _objective_fields(value)
    return repr(value)


def _digest_array(h: Any, arr: Any) -> None:
    if arr is None:
        h.update(b"none")
        return
    if _is_sparse(arr):
        for part in (arr.data, arr.indices, arr.indptr):
            h.update(np.ascontiguousarray(part).tobytes())
        h.update(str(arr.shape).encode())
        return
    a = np.ascontiguousarray(arr)
    h.update(str((a.dtype.str, a.shape)).encode())
    h.update(a.tobytes())


def _fingerprint(spec: TrainSpec, params: dict[str, Any]) -> str:
    h = hashlib.sha256()
    settings = {
        "engine": spec.engine,
        "params": _json_safe(params),
        "plan": spec.plan,
        "objective": None if spec.objective is None else _objective_fields(spec.objective),
        "eval_at": spec.eval_at,
        "early_stopping_rounds": spec.early_stopping_rounds,
        "convention": spec.convention,
        "eval_sets": [ev.name for ev in spec.eval_sets],
    }
    h.update(json.dumps(settings, sort_keys=True).encode())
    for arr in (spec.X, spec.y, spec.offsets, spec.sample_weight):
        _digest_array(h, arr)
    for ev in spec.eval_sets:
        for arr in (ev.X, ev.y, ev.offsets):
            _digest_array(h, arr)
    return h.hexdigest()


def _atomic_write(path: Path, text: str) -> None:
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(text, encoding="utf-8")
    os.replace(tmp, path)


def _load_completed(spec: TrainSpec, fingerprint: str) -> list[dict[str, Any]]:
    """Completed stage records in ``stage_dir`` (validated), or ``[]``."""
    assert spec.stage_dir is not None
    index = spec.stage_dir / "stages.json"
    if not index.exists():
        return []
    if not spec.resume:
        raise ValueError(
            f"stage_dir {str(spec.stage_dir)!r} already holds stages of a run (stages.json); "
            "pass resume=True to continue it, or use an empty folder (nothing was overwritten)"
        )
    data = json.loads(index.read_text(encoding="utf-8"))
    if data.get("format") != _STAGES_FORMAT or data.get("fingerprint") != fingerprint:
        raise ValueError(
            f"stage_dir {str(spec.stage_dir)!r} was written by a different run (settings or data "
            "differ), so it cannot be resumed; use a new stage_dir or resume=False in an empty one"
        )
    stages = data.get("stages", [])
    for rec in stages:
        if not (spec.stage_dir / rec["file"]).exists():
            raise ValueError(f"stage file {rec['file']!r} listed in stages.json is missing from stage_dir")
    return stages


# ----------------------------------------------------------------------------
# the training loop
# ----------------------------------------------------------------------------


def run_training(spec: TrainSpec) -> RankingModel:
    """Train stage by stage; see :func:`ltr.engines.train`."""
    from tqdm.auto import tqdm

    adapter = get_adapter(spec.engine)
    params = adapter.base_params(spec)
    fingerprint = _fingerprint(spec, params)
    completed: list[dict[str, Any]] = []
    if spec.stage_dir is not None:
        spec.stage_dir.mkdir(parents=True, exist_ok=True)
        completed = _load_completed(spec, fingerprint)

    evals_result: dict[str, dict[str, list[float]]] = {ev.name: {} for ev in spec.eval_sets}
    stages: list[dict[str, Any]] = []
    booster = None
    any_early_stop = False
    bar = tqdm(total=spec.num_boost_round, disable=not spec.progress, unit="round",
               desc=f"ltr[{spec.engine}]", leave=False)
    restore_threads = _limit_numba_threads(spec.n_jobs)

    def add_stage(index: int, rec: dict[str, Any], stage_evals: dict[str, dict[str, list[float]]]) -> None:
        k, first, n_rounds = spec.plan[index]
        for name, metrics in stage_evals.items():
            for key, values in metrics.items():
                evals_result[name].setdefault(key, []).extend(values)
        stages.append({
            "k": k, "first_round": first, "n_rounds": n_rounds,
            "best_iteration": rec["best_iteration"], "rounds_run": rec["rounds_run"],
            "early_stopped": rec["early_stopped"],
            "path": None if rec.get("file") is None else str(spec.stage_dir / rec["file"]),  # type: ignore[operator]
            "metrics": {name: {key: values[-1] for key, values in metrics.items() if values}
                        for name, metrics in stage_evals.items()},
        })

    # A custom objective follows the schedule round by round by itself; stage boundaries
    # (separate continued trainings) are needed only for per-stage early stopping and
    # checkpoints.  Without those, all rounds run in one engine call.
    one_call = (spec.objective is not None and spec.early_stopping_rounds is None
                and spec.stage_dir is None and len(spec.plan) > 1)
    try:
        if one_call:
            spec.objective.reset(0)
            recorder = Recorder(spec, spec.plan[0][0], bar)
            call = _ObjectiveCall(spec.objective, _objective_weights(spec))
            trained = adapter.train_stage(spec, params, 0, spec.plan[0][0], spec.num_boost_round,
                                          None, call, recorder)
            booster = adapter.truncate(trained, spec.num_boost_round)
            history = recorder.kept_history()
            for index, (_, first, n_rounds) in enumerate(spec.plan):
                rec = {"best_iteration": n_rounds, "rounds_run": n_rounds, "early_stopped": False}
                add_stage(index, rec, {
                    name: {key: values[first:first + n_rounds] for key, values in metrics.items()}
                    for name, metrics in history.items()
                })
        for index, (k, first, n_rounds) in enumerate([] if one_call else spec.plan):
            if index < len(completed):
                rec = completed[index]
                if (rec["k"], rec["first_round"], rec["n_rounds"]) != (k, first, n_rounds):
                    raise ValueError(f"stage {index} in stages.json does not match the schedule")
                if index == len(completed) - 1:
                    text = (spec.stage_dir / rec["file"]).read_text(encoding="utf-8")  # type: ignore[operator]
                    booster = adapter.from_string(text)
                stage_evals = rec.get("evals", {})
                bar.update(n_rounds)
            else:
                bar.set_postfix(stage=index, k=k)
                if spec.objective is not None:
                    spec.objective.reset(first)
                    call: Any = _ObjectiveCall(spec.objective, _objective_weights(spec))
                else:
                    call = None
                recorder = Recorder(spec, k, bar)
                before = 0 if booster is None else adapter.num_rounds(booster)
                trained = adapter.train_stage(spec, params, index, k, n_rounds, booster, call, recorder)
                kept = recorder.kept_rounds()
                bar.update(n_rounds - recorder.rounds)
                booster = adapter.truncate(trained, before + kept)
                stage_evals = recorder.kept_history()
                rec = {
                    "k": k, "first_round": first, "n_rounds": n_rounds,
                    "rounds_run": recorder.rounds,
                    "best_iteration": kept,
                    "early_stopped": recorder.rounds < n_rounds,
                    "n_trees_total": before + kept,
                    "file": None,
                }
                if spec.stage_dir is not None:
                    fname = f"stage_{index:02d}_k{k}{adapter.suffix}"
                    _atomic_write(spec.stage_dir / fname, adapter.to_string(booster))
                    rec["file"] = fname
                    rec["evals"] = stage_evals
                    completed.append(rec)
                    _atomic_write(
                        spec.stage_dir / "stages.json",
                        json.dumps({"format": _STAGES_FORMAT, "engine": spec.engine,
                                    "fingerprint": fingerprint, "stages": completed}, indent=1),
                    )
            any_early_stop = any_early_stop or bool(rec.get("early_stopped"))
            add_stage(index, rec, stage_evals)
    finally:
        bar.close()
        restore_threads()
    assert booster is not None
    total = adapter.num_rounds(booster)
    public_params = _json_safe(params)
    if spec.objective is not None:
        public_params["objective"] = _objective_fields(spec.objective)
    return RankingModel(
        engine=spec.engine,
        booster=booster,
        evals_result=evals_result,
        best_iteration=total if (spec.early_stopping_rounds and any_early_stop) else None,
        stages=stages,
        params=public_params,
    )


def _limit_numba_threads(n_jobs: int | None) -> Any:
    """Let ``n_jobs`` bound the metric kernels' threads too; returns the undo function.

    On a busy machine numba's parallel kernels with more threads than free cores
    are an order of magnitude slower on eval-set sized inputs.
    """
    if n_jobs is None or n_jobs < 1:
        return lambda: None
    import numba

    before = numba.get_num_threads()
    numba.set_num_threads(max(1, min(n_jobs, numba.config.NUMBA_NUM_THREADS)))
    return lambda: numba.set_num_threads(before)


def _objective_weights(spec: TrainSpec) -> np.ndarray | None:
    return spec.sample_weight


# ----------------------------------------------------------------------------
# the model
# ----------------------------------------------------------------------------


@dataclass
class RankingModel:
    """A trained ranking model.

    Attributes
    ----------
    engine : {"lightgbm", "xgboost"}
    booster : lightgbm.Booster or xgboost.Booster
        The final model (truncated to each stage's best round under early stopping).
    evals_result : dict
        ``evals_result[set_name][metric]`` -> list of values, one per boosting
        round kept in the model (``"ndcg@k"``; with composite label columns also
        ``"composite_ndcg@k"`` and ``"ndcg@k/<objective>"``).
    best_iteration : int or None
        With early stopping: number of boosting rounds kept (1-based, as
        LightGBM's ``best_iteration``); ``None`` when no early stopping happened.
    stages : list of dict
        Per stage: ``k``, ``first_round``, ``n_rounds`` (scheduled),
        ``rounds_run``, ``best_iteration`` (rounds kept in that stage),
        ``early_stopped``, ``path`` (checkpoint or None) and ``metrics``
        ``{set: {"ndcg@k": value at the stage's end}}``.
    params : dict
        Engine parameters of the last stage (objective described as data).
    """

    engine: str
    booster: Any
    evals_result: dict[str, dict[str, list[float]]] = field(default_factory=dict)
    best_iteration: int | None = None
    stages: list[dict[str, Any]] = field(default_factory=list)
    params: dict[str, Any] = field(default_factory=dict)

    def predict(self, X: Any) -> np.ndarray:
        """Scores of the rows of *X* (higher ranks first), ``float64`` of shape (n_rows,)."""
        adapter = get_adapter(self.engine)
        X = check_matrix(X, "X")
        n_features = adapter.num_features(self.booster)
        if X.shape[1] != n_features:
            raise ValueError(f"X has {X.shape[1]} features but the model was trained on {n_features}")
        return np.asarray(adapter.predict(self.booster, X), dtype=np.float64).reshape(-1)

    def num_trees(self) -> int:
        """Number of boosting rounds (one tree per round for ranking)."""
        return get_adapter(self.engine).num_rounds(self.booster)

    def to_dict(self) -> dict[str, Any]:
        """Everything but the booster, as plain data."""
        return {
            "engine": self.engine,
            "evals_result": self.evals_result,
            "best_iteration": self.best_iteration,
            "stages": self.stages,
            "params": self.params,
        }

    def save(self, path: str | os.PathLike[str]) -> Path:
        """Write the model and its metadata to one JSON file; returns the path.

        The engine's own model text (LightGBM model string, XGBoost JSON) is
        embedded under ``"model"``; ``model.booster`` can also be saved with the
        engine's API for use without ``ltr``.
        """
        path = Path(path)
        adapter = get_adapter(self.engine)
        data = {"format": _MODEL_FORMAT, "version": 1, **_json_safe(self.to_dict()),
                "model": adapter.to_string(self.booster)}
        path.parent.mkdir(parents=True, exist_ok=True)
        _atomic_write(path, json.dumps(data))
        return path

    @classmethod
    def load(cls, path: str | os.PathLike[str]) -> RankingModel:
        """Read a model written by :meth:`save`."""
        path = Path(path)
        data = json.loads(path.read_text(encoding="utf-8"))
        if not isinstance(data, dict) or data.get("format") != _MODEL_FORMAT:
            raise ValueError(f"{str(path)!r} is not a model written by RankingModel.save")
        engine = data["engine"]
        adapter = get_adapter(engine)
        return cls(
            engine=engine,
            booster=adapter.from_string(data["model"]),
            evals_result=data.get("evals_result", {}),
            best_iteration=data.get("best_iteration"),
            stages=data.get("stages", []),
            params=data.get("params", {}),
        )

    def __repr__(self) -> str:
        ks = [s["k"] for s in self.stages]
        return f"RankingModel(engine={self.engine!r}, num_trees={self.num_trees()}, stage_k={ks})"

"""The validated training request: :class:`TrainSpec`, built by :func:`make_spec`.

Every argument of :func:`ltr.engines.train` is checked here, before any
training starts, with the one rule per input kind of :mod:`ltr._validation`.
Also here: eval sets, objective resolution (native, objective instance or
composite weights), the call wrapper the engines get for a custom objective,
and the merge of user parameters over an adapter's defaults.
"""

from __future__ import annotations

import os
import warnings
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from ltr._validation import (
    INT32_MAX,
    check_eval_at,
    check_int,
    check_label_columns,
    check_labels,
    check_matrix,
    check_n_jobs,
    check_offsets,
    check_positions,
    check_progress,
    check_seed,
    check_weights,
    is_sparse,
    short_repr,
)
from ltr.categorical import CategoricalCoding
from ltr.engines._callbacks import check_callbacks
from ltr.engines._objective import (
    ObjectiveCall,
    attach_position,
    composite_gains,
    composite_weights,
    objective_fields,
    resolve_objective,
)
from ltr.engines._params import (
    check_feature_names,
    merge_engine_params,
)
from ltr.engines._registry import ENGINES
from ltr.objectives.schedules import stages_of

__all__ = [
    "EvalSet",
    "ObjectiveCall",
    "TrainRows",
    "TrainSpec",
    "check_engine",
    "check_eval_sets",
    "check_feature_names",
    "check_k",
    "check_rows",
    "encode_categorical",
    "make_spec",
    "merge_engine_params",
    "objective_fields",
    "spec_from_rows",
    "warn_nothing_to_learn",
]


def warn_nothing_to_learn(
    y: np.ndarray, offsets: np.ndarray, labels: Mapping[str, np.ndarray] | None = None
) -> None:
    """Warn (``UserWarning``) when no query has two documents with different labels.

    LambdaRank learns from pairs of documents of one query with different
    labels; without any such pair every gradient is 0 and the model is
    constant.  Two min/max passes per label column (``reduceat`` over the
    query starts).
    """
    columns = {"y": y} if labels is None else {"y": y, **{f"labels[{k!r}]": v
                                                       for k, v in labels.items()}}
    sizes = np.diff(offsets)
    if int(sizes.max()) < 2:
        why = f"every query has one document ({len(sizes)} queries), so there are no pairs"
    else:
        starts = offsets[:-1]
        for col in columns.values():
            if (np.maximum.reduceat(col, starts) > np.minimum.reduceat(col, starts)).any():
                return
        if all(not col.any() for col in columns.values()):
            why = "every label is 0 (no relevant document)"
        else:
            why = "no query has two documents with different labels"
    warnings.warn(
        f"nothing can be learned: {why}; the model will be constant (LambdaRank learns only "
        "from pairs of documents of one query with different labels). Check the labels and "
        "the query ids",
        UserWarning,
        stacklevel=5,  # warn_nothing_to_learn <- check_rows <- make_spec <- train <- caller
    )


# ----------------------------------------------------------------------------
# eval sets
# ----------------------------------------------------------------------------


@dataclass(frozen=True)
class EvalSet:
    """A validated evaluation set."""

    name: str
    X: Any
    y: np.ndarray
    offsets: np.ndarray
    labels: dict[str, np.ndarray] | None = None


def check_eval_sets(
    eval_sets: Any, n_features: int, feature_names: Any = None
) -> list[EvalSet]:
    """Validate ``[(name, X, y, offsets[, labels]), ...]``.

    *feature_names* (optional) only name a column in the inf error.
    """
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
        if (
            isinstance(item, (str, bytes))
            or not isinstance(item, Sequence)
            or len(item) not in (4, 5)
        ):
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
        X = check_matrix(item[1], f"{where} X", feature_names)
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


def encode_categorical(
    categorical: Any, X: Any, eval_sets: Any, feature_names: Any
) -> tuple[CategoricalCoding, Any, Any]:
    """Fit (or check) the categorical coding and encode ``X`` and the eval sets' ``X``.

    *categorical* is a list of columns (names or indices): the coding is fitted
    on *X* (the training set) and applied to *X* and every eval set.  A fitted
    :class:`ltr.categorical.CategoricalCoding` means *X* and the eval sets
    already hold its codes (as :meth:`CategoricalCoding.encode` writes them);
    they are checked to be codes (integers in ``0..n-1`` or NaN).

    Returns
    -------
    tuple
        ``(coding, X, eval_sets)``.
    """
    if isinstance(categorical, CategoricalCoding):
        coding = categorical
        X = check_matrix(X, "X", feature_names)
        _check_codes(coding, X, "X")
        if isinstance(eval_sets, Sequence) and not isinstance(eval_sets, (str, bytes)):
            for i, item in enumerate(eval_sets):
                if isinstance(item, Sequence) and len(item) >= 2:
                    _check_codes(coding, check_matrix(item[1], f"eval_sets[{i}] X"),
                                 f"eval_sets[{i}] X")
        return coding, X, eval_sets
    names = feature_names
    if names is None and hasattr(X, "columns"):
        names = [str(c) for c in X.columns]
    coding = CategoricalCoding.fit(X, categorical, names)
    X = coding.encode(X)
    if isinstance(eval_sets, Sequence) and not isinstance(eval_sets, (str, bytes)):
        encoded = []
        for item in eval_sets:
            if isinstance(item, Sequence) and not isinstance(item, (str, bytes)) and len(item) >= 2:
                item = (item[0], coding.encode(item[1]), *item[2:])
            encoded.append(item)
        eval_sets = encoded
    return coding, X, eval_sets


def _check_codes(coding: CategoricalCoding, X: Any, where: str) -> None:
    for j, name, cats in zip(coding.columns, coding.names, coding.categories):
        if j >= X.shape[1]:
            raise ValueError(
                f"{where} has {X.shape[1]} columns but the categorical coding names column {j}"
            )
        col = np.asarray(X[:, j].toarray()).ravel() if is_sparse(X) else X[:, j]
        ok = np.isnan(col) | ((col >= 0) & (col < len(cats)) & (col == np.floor(col)))
        if not ok.all():
            i = int(np.flatnonzero(~ok)[0])
            raise ValueError(
                f"categorical={coding!r} is a fitted coding, so {where} must hold its codes, but "
                f"column {name!r} has {col[i]!r} at row {i}; encode the raw table with "
                "coding.encode(X) first, or pass the column names to fit a new coding"
            )


# ----------------------------------------------------------------------------
# the validated request
# ----------------------------------------------------------------------------


@dataclass(frozen=True)
class TrainRows:
    """The training rows, checked: local arrays, or a placement's description of its rows.

    Local training holds the arrays (``X``, ``y``, ``offsets``, ...).  A
    distributed placement (:mod:`ltr.dask`) keeps its rows on the workers:
    the arrays are ``None`` and ``placement`` trains and digests them.
    ``label_max`` is the largest grade (the engines' grade limits need it);
    ``None`` until a placement has seen its rows.
    """

    X: Any
    y: Any
    offsets: Any
    n_features: int
    label_max: float | None
    sample_weight: np.ndarray | None = None
    labels: dict[str, np.ndarray] | None = None
    position: np.ndarray | None = None
    feature_names: list[str] | None = None
    placement: Any = None


def check_rows(
    X: Any, y: Any, offsets: Any, *, native: bool, sample_weight: Any = None,
    labels: Any = None, position: Any = None, feature_names: Any = None,
) -> TrainRows:
    """Check in-memory training rows (the one rule per input kind of :mod:`ltr._validation`).

    Warns (``UserWarning``) when no query has two documents with different labels.
    """
    X = check_matrix(X, "X", feature_names)
    n_rows = X.shape[0]
    offsets = check_offsets(offsets, "offsets", n_rows)
    y = check_labels(y, "y", n_rows, integer=native)
    label_cols = None if labels is None else check_label_columns(labels, "labels", n_rows)
    weight = (
        None if sample_weight is None else check_weights(sample_weight, "sample_weight", n_rows)
    )
    warn_nothing_to_learn(y, offsets, label_cols)
    pos = None if position is None else check_positions(position, "position", offsets)
    names = check_feature_names(feature_names, X.shape[1])
    return TrainRows(
        X=X, y=y, offsets=offsets, n_features=int(X.shape[1]),
        label_max=float(y.max()) if y.size else 0.0, sample_weight=weight, labels=label_cols,
        position=pos, feature_names=names,
    )


@dataclass(frozen=True)
class TrainSpec:
    """Everything :func:`ltr.engines._loop.run_training` needs, validated once, frozen.

    Inner layers (the stage loop, the adapters, the recorder, a placement's
    executor) read it and never check it again.  ``objective`` is the
    resolved objective *as the caller gave it* (or a copy holding the
    positions or the schedule): training never calls it, it trains a copy of
    its own (:func:`ltr.engines._objective.training_objective`).

    ``convention`` is the nDCG convention the recorder uses: the user's, or
    the engine's own (``"lightgbm"``/``"xgboost"``) when none was given --
    unless the engine's convention refuses the eval labels (for example
    fractional grades under ltr's objective, which the engine's nDCG cannot
    score either): then ``None``, ltr's default convention.

    ``placement`` is ``None`` for rows in this process; a distributed
    placement (:mod:`ltr.dask`) trains the stages on its workers
    (:class:`ltr.engines._protocol.Placement`) while the loop stays the same.
    """

    engine: str
    X: Any  # None when a placement holds the rows
    y: Any
    offsets: Any
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
    n_features: int = 0
    label_max: float | None = None
    composite_weights: dict[str, float] | None = None
    composite_gains: dict[str, Any] | None = None
    feature_names: list[str] | None = None
    position: np.ndarray | None = None  # display ranks (1 = top), training-row order
    categorical: tuple[int, ...] = ()  # columns holding category codes (ltr.categorical)
    placement: Any = None
    callbacks: tuple[Any, ...] = ()  # after_round(info) per round (ltr.engines._callbacks)

    @property
    def native(self) -> bool:
        return self.objective is None


def check_engine(engine: Any) -> str:
    """Return *engine* when it names a registered engine (:data:`ENGINES`), else raise."""
    if not isinstance(engine, str) or engine not in ENGINES:
        raise ValueError(f"engine must be one of {list(ENGINES)}, got {engine!r}")
    return engine


def check_k(k: Any) -> int:
    """Apply the one rule for a truncation level: an integer in ``1 .. 2**31 - 1``.

    The engines take it as a C ``int`` (LightGBM ``lambdarank_truncation_level``,
    XGBoost ``lambdarank_num_pair_per_sample``), so every path caps it here.
    """
    return check_int(k, "k", minimum=1, maximum=INT32_MAX)


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
    feature_names: Any = None,
    position: Any = None,
    callbacks: Any = None,
) -> TrainSpec:
    """Validate every argument of :func:`ltr.engines.train`; nothing is trained here.

    Parameters
    ----------
    X, y, offsets, engine, objective, k, schedule, params, num_boost_round, \
sample_weight, eval_sets, eval_at, early_stopping_rounds, stage_dir, resume, \
convention, random_state, n_jobs, progress, labels, feature_names, position, callbacks
        As in :func:`ltr.engines.train`.

    Returns
    -------
    TrainSpec
        The validated request.

    Raises
    ------
    ValueError, TypeError
        For any invalid argument, naming it and quoting the value.
    """
    native = isinstance(objective, str) and objective == "native"
    rows = check_rows(
        X, y, offsets, native=native, sample_weight=sample_weight, labels=labels,
        position=position, feature_names=feature_names,
    )
    return spec_from_rows(
        rows, engine=engine, objective=objective, k=k, schedule=schedule, params=params,
        num_boost_round=num_boost_round, eval_sets=eval_sets, eval_at=eval_at,
        early_stopping_rounds=early_stopping_rounds, stage_dir=stage_dir, resume=resume,
        convention=convention, random_state=random_state, n_jobs=n_jobs, progress=progress,
        callbacks=callbacks,
    )


def spec_from_rows(
    rows: TrainRows,
    *,
    engine: Any,
    objective: Any,
    k: Any,
    schedule: Any,
    params: Any,
    num_boost_round: Any,
    eval_sets: Any,
    eval_at: Any,
    early_stopping_rounds: Any,
    stage_dir: Any,
    resume: Any,
    convention: Any,
    random_state: Any,
    n_jobs: Any,
    progress: Any,
    callbacks: Any = None,
) -> TrainSpec:
    """Validate the training settings over checked *rows*; the one builder of a :class:`TrainSpec`.

    :func:`make_spec` calls it with local rows (:func:`check_rows`),
    :func:`ltr.dask.train` with a placement's rows; every other argument
    follows the same rules on both paths.
    """
    check_engine(engine)
    k = check_k(k)
    if num_boost_round is not None:
        num_boost_round = check_int(
            num_boost_round, "num_boost_round", minimum=1, maximum=INT32_MAX
        )
    native = isinstance(objective, str) and objective == "native"
    local = rows.placement is None
    obj, sched = resolve_objective(
        objective, k=k, schedule=schedule, labels=rows.labels,
        n_rows=int(rows.X.shape[0]) if local else None,
    )
    if obj is not None:
        obj = attach_position(obj, rows.position)
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
    evals = check_eval_sets(eval_sets, rows.n_features, rows.feature_names)
    ks = check_eval_at(eval_at)
    if early_stopping_rounds is not None:
        early_stopping_rounds = check_int(
            early_stopping_rounds, "early_stopping_rounds", minimum=1, maximum=INT32_MAX
        )
        if not evals:
            raise ValueError(
                "early_stopping_rounds needs at least one eval set; "
                "pass eval_sets=[(name, X, y, offsets)]"
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
    user_convention = convention
    if convention is not None:
        from ltr.metrics import CONVENTIONS

        if not isinstance(convention, str) or convention not in CONVENTIONS:
            raise ValueError(
                f"convention must be one of {sorted(CONVENTIONS)} or None, got {convention!r}"
            )
    else:
        convention = engine  # curves follow the engine's own nDCG (ltr.metrics.CONVENTIONS)
    if evals:
        from ltr.metrics import ndcg

        for ev in evals:
            try:  # fail now, not after the first boosting round
                ndcg(ev.y, np.zeros(len(ev.y)), offsets=ev.offsets, k=1, convention=convention)
            except (ValueError, TypeError) as exc:
                if user_convention is None and not native and convention is not None:
                    # The engine's own nDCG refuses these labels (e.g. fractional grades
                    # under our objective): the engine cannot score them either, so the
                    # curves use ltr's default convention (TrainSpec.convention = None).
                    convention = None
                    ndcg(ev.y, np.zeros(len(ev.y)), offsets=ev.offsets, k=1)
                    continue
                raise ValueError(
                    f"convention={convention!r} cannot evaluate the eval sets: {exc} "
                    f"(eval set {ev.name!r})"
                ) from exc
    seed = check_seed(random_state, "random_state")
    if seed is None:
        seed = 0
    n_jobs = check_n_jobs(n_jobs)
    show = check_progress(progress)
    comp_w = composite_weights(obj) if obj is not None else None
    comp_g = composite_gains(obj) if obj is not None else None
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
        engine=engine,
        X=rows.X,
        y=rows.y,
        offsets=rows.offsets,
        objective=obj,
        schedule=sched,
        plan=plan,
        params=dict(params),
        num_boost_round=num_boost_round,
        sample_weight=rows.sample_weight,
        eval_sets=evals,
        eval_at=ks,
        early_stopping_rounds=early_stopping_rounds,
        stage_dir=stage_dir,
        resume=bool(resume),
        convention=convention,
        seed=seed,
        n_jobs=n_jobs,
        progress=show,
        labels=rows.labels,
        n_features=rows.n_features,
        label_max=rows.label_max,
        composite_weights=comp_w,
        composite_gains=comp_g,
        feature_names=rows.feature_names,
        position=rows.position,
        placement=rows.placement,
        callbacks=check_callbacks(callbacks),
    )


# ----------------------------------------------------------------------------
# engine adapter protocol
# ----------------------------------------------------------------------------





"""The one tree form every exporter reads: :class:`Ensemble`, and the threshold arithmetic.

Built from :class:`ltr.engines.trees.FlatTrees` (the tree parser permutation
importance already uses), so the engines' dumps are parsed in one place.  What
this module adds is the *meaning* of each split as one rule a format can be
checked against:

* a value ``v`` that is not missing goes left exactly when ``v <= bound``
  (``bound`` a float64).  LightGBM: ``bound`` is its threshold (``v <= t`` on
  doubles), except that its predict reads ``|v| <= 1e-35`` as 0
  (:func:`lightgbm_bound`).  XGBoost: it compares ``float32(v) < t``; that holds exactly for
  the doubles below the rounding boundary of ``t``, so ``bound`` is the
  largest double that still rounds to a float32 below ``t``;
* ``nan_left``: where NaN goes.  LightGBM missing type NaN or Zero: its
  default direction; missing type None: NaN is read as 0.0 and compared;
  XGBoost: its default direction;
* ``zero_missing``: LightGBM missing type Zero sends ``|v| <= 1e-35`` the
  default way (``kZeroThreshold``), whatever the threshold says.

Formats then need a threshold ``t`` and an operator with the same left set:
doubles with ``<=`` take ``bound``; doubles with ``<`` take the next double
above it; float32 engines (which round every feature to float32 first) with
``<=`` take the largest float32 not above ``bound`` (:func:`floor32`), with
``<`` the float32 after that.  No threshold is ever rounded to *nearest*: a
nearest rounding can land on the wrong side of a float32 feature value.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ltr.engines.trees import (
    FlatTrees,
    find_booster,
    is_lightgbm_booster,
    parse_lightgbm_trees,
    parse_xgboost_trees,
)
from ltr.export._zero import K_ZERO, expand_zero_missing

__all__ = [
    "K_ZERO",
    "Ensemble",
    "ExportError",
    "ensemble_of",
    "floor32",
    "lightgbm_bound",
    "next32",
    "xgboost_bound",
]



class ExportError(ValueError):
    """A model a format cannot express exactly (the message names tree, node and reason)."""


def xgboost_bound(t32: np.ndarray) -> np.ndarray:
    """Largest doubles ``b`` with ``float32(v) < t`` exactly when ``v <= b`` (``t`` float32).

    The doubles rounding below ``t`` are those below the midpoint ``m`` of ``t``
    and the float32 before it; ``m`` itself rounds to the even one of the two.

    >>> float(xgboost_bound(np.array([1.0], dtype=np.float32))[0]) < 1.0
    True
    """
    t = np.asarray(t32, dtype=np.float32)
    prev = np.nextafter(t, np.float32(-np.inf))
    mid = (prev.astype(np.float64) + t.astype(np.float64)) / 2.0  # exact in double
    below = mid.astype(np.float32) < t
    return np.where(below, mid, np.nextafter(mid, -np.inf))


def lightgbm_bound(threshold: np.ndarray) -> np.ndarray:
    """LightGBM's left set ``v <= t`` as ``v <= bound``, with its zero snapping.

    LightGBM's predict reads a value with ``|v| <= 1e-35`` (``kZeroThreshold``)
    as 0.0 (``RowFunctionFromDenseMatric`` keeps only larger values), so a
    threshold in ``[-1e-35, 1e-35)`` sends that whole band one way: below zero
    the band goes right (``bound`` is the double before ``-1e-35``), at or
    above zero it goes left (``bound`` is ``1e-35``).

    >>> bound = lightgbm_bound(np.array([0.5, 0.0]))
    >>> float(bound[0]), float(lightgbm_bound(np.array([0.0]))[0]) == K_ZERO
    (0.5, True)
    """
    t = np.asarray(threshold, dtype=np.float64)
    neg = (t >= -K_ZERO) & (t < 0.0)
    pos = (t >= 0.0) & (t < K_ZERO)
    out = np.where(neg, np.nextafter(-K_ZERO, -np.inf), t)
    return np.where(pos, K_ZERO, out)


def floor32(x: np.ndarray) -> np.ndarray:
    """Largest float32 values not above the doubles *x* (as float32).

    >>> float(floor32(np.array([0.1]))[0]) <= 0.1
    True
    """
    x = np.asarray(x, dtype=np.float64)
    with np.errstate(over="ignore"):
        c = x.astype(np.float32)
    return np.where(c.astype(np.float64) > x, np.nextafter(c, np.float32(-np.inf)), c)


def next32(x: np.ndarray) -> np.ndarray:
    """Return the next float32 above each float32 of *x*."""
    return np.nextafter(np.asarray(x, dtype=np.float32), np.float32(np.inf))


@dataclass
class Ensemble:
    """A model's trees with each split's rule spelled out (see the module docstring).

    ``trees`` holds the structure (node ``k`` of tree ``t`` is ``start[t] + k``;
    children >= 0 are nodes, < 0 ``~leaf``); ``bound``, ``nan_left`` and
    ``zero_missing`` are per node; ``leaf_value`` are float64 (XGBoost's float32
    values widened exactly); ``base`` is what the engine's sum starts from and
    ``float32_sum`` says whether the engine sums in float32 (XGBoost).
    """

    engine: str
    trees: FlatTrees
    bound: np.ndarray
    nan_left: np.ndarray
    zero_missing: np.ndarray
    default_left: np.ndarray
    leaf_value: np.ndarray
    base: float
    float32_sum: bool
    n_features: int
    feature_names: list[str]
    categories: dict[int, np.ndarray] = field(default_factory=dict)
    categories_right: bool = False  # the sets go right (XGBoost) or left (LightGBM)

    @property
    def n_trees(self) -> int:
        """Number of trees."""
        return self.trees.n_trees

    def lists(self) -> tuple[list[int], list[int], list[int]]:
        """``(start, left, right)`` as Python lists (for :func:`preorder`)."""
        tr = self.trees
        return tr.start.tolist(), tr.left.tolist(), tr.right.tolist()

    def node(self, t: int, k: int) -> int:
        """Flat index of node *k* of tree *t*."""
        return int(self.trees.start[t] + k)

    def leaves(self, t: int) -> np.ndarray:
        """Leaf values of tree *t* (float64)."""
        return self.leaf_value[self.trees.leaf_start[t]: self.trees.leaf_start[t + 1]]

    def is_single_leaf(self, t: int) -> bool:
        """Return True when tree *t* is one leaf."""
        return bool(self.trees.start[t + 1] == self.trees.start[t])

    def check_no_categorical(self, fmt: str) -> None:
        """Refuse categorical splits (only ONNX ``TreeEnsemble`` has set membership)."""
        if self.categories:
            t, k = self.locate(min(self.categories))
            raise ExportError(
                f"tree {t} node {k}: a categorical split (set membership); {fmt} has no "
                "set-membership split: export to onnx (opset 5), or train without "
                "categorical features"
            )

    def locate(self, flat: int) -> tuple[int, int]:
        """``(tree, node)`` of a flat node index."""
        t = int(np.searchsorted(self.trees.start, flat, side="right") - 1)
        while self.trees.start[t + 1] == self.trees.start[t]:
            t += 1
        return t, int(flat - self.trees.start[t])


def _unsupported(booster: Any) -> str:
    """Say what the tree parser could not take (for the refusal)."""
    import json

    if is_lightgbm_booster(booster):
        text = booster.model_to_string(num_iteration=booster.current_iteration())
        for t, sec in enumerate(text.split("\nTree=")[1:]):
            kv = dict(line.partition("=")[::2] for line in sec.splitlines()[1:])
            if kv.get("is_linear", "0").strip() != "0":
                return f"tree {t}: a linear tree (linear_tree=True)"
        return "the model has several trees per iteration or averages its trees"
    model = json.loads(bytes(booster.save_raw(raw_format="json")))
    gb = model["learner"]["gradient_booster"]
    if gb.get("name") != "gbtree":
        return f"booster {gb.get('name')!r} (only gbtree is exported)"
    return "vector leaves or several outputs"


def ensemble_of(model: Any, feature_names: list[str] | None = None) -> Ensemble:
    """Return the :class:`Ensemble` of a trained model (only the trees it predicts with).

    Parameters
    ----------
    model : RankingModel, estimator or booster
        Anything :func:`ltr.engines.trees.find_booster` recognises.  Only the
        trees the model predicts with by default: a LightGBM booster's and
        XGBoost's scikit-learn models' ``best_iteration`` (an XGBoost
        ``Booster`` predicts with all its trees; ``ltr`` models are already cut).
    feature_names : list of str, optional
        Search-engine names of the model's columns, in order (default: the
        model's own; ``f0, f1, ...`` when it has none).

    Raises
    ------
    ExportError
        For linear trees, several outputs, dart or gblinear.
    """
    booster = find_booster(model)
    if booster is None:
        raise TypeError(f"model: expected a LightGBM/XGBoost model, got {type(model).__name__}")
    if is_lightgbm_booster(booster):
        engine = "lightgbm"
        best = int(getattr(booster, "best_iteration", 0) or 0)  # as LightGBM's predict
        flat = parse_lightgbm_trees(booster, num_iteration=best if best > 0
                                    else booster.current_iteration(), categorical=True,
                                    paths=False)
        n_features = int(booster.num_feature())
        own: list[str] | None = [str(n) for n in booster.feature_name()]
    else:
        engine = "xgboost"
        # a Booster predicts with every tree; XGBRanker/XGBRegressor stop at best_iteration
        try:
            stop = None if booster is model else getattr(model, "best_iteration", None)
        except AttributeError:  # the scikit-learn wrapper raises without early stopping
            stop = None
        if stop is not None and int(stop) + 1 < booster.num_boosted_rounds():
            booster = booster[: int(stop) + 1]
        flat = parse_xgboost_trees(booster, paths=False, categorical=True)
        n_features = int(booster.num_features())
        own = None if booster.feature_names is None else [str(n) for n in booster.feature_names]
    if flat is None:
        raise ExportError(f"cannot export exactly: {_unsupported(booster)}; no format of "
                          "ltr.export expresses it")
    names = _check_names(feature_names if feature_names is not None else own, n_features)
    dec = flat.decision.astype(np.int64)
    default_left = (dec & 2) != 0
    if engine == "lightgbm":
        missing = (dec >> 2) & 3
        bound = lightgbm_bound(flat.threshold)
        nan_left = np.where(missing == 0, 0.0 <= bound, default_left)
        zero_missing = missing == 1
        leaf = flat.leaf_value.astype(np.float64)
        cats = np.zeros(bound.size, dtype=bool)
        cats[list(flat.categories or {})] = True
        bound[cats] = np.nan  # a categorical node's threshold is an index, not a value
        nan_left[cats] = False  # CategoricalDecision: NaN goes right
        zero_missing[cats] = False
    else:
        bound = xgboost_bound(flat.threshold.astype(np.float32))
        bound[list(flat.categories or {})] = np.nan  # a categorical node has no threshold
        nan_left = default_left.copy()
        zero_missing = np.zeros(bound.size, dtype=bool)
        leaf = flat.leaf_value.astype(np.float64)
    ens = Ensemble(
        engine=engine,
        trees=flat,
        bound=bound,
        nan_left=np.asarray(nan_left, dtype=bool),
        zero_missing=zero_missing,
        default_left=default_left,
        leaf_value=leaf,
        base=float(flat.init),
        float32_sum=engine == "xgboost",
        n_features=n_features,
        feature_names=names,
        categories=dict(flat.categories or {}),
        categories_right=flat.categories_right,
    )
    if engine == "lightgbm":
        ens = expand_zero_missing(ens)
    return ens


def _check_names(names: list[str] | None, n_features: int) -> list[str]:
    if names is None:
        return [f"f{j}" for j in range(n_features)]
    names = [str(n) for n in names]
    if len(names) != n_features:
        raise ValueError(
            f"feature_names: {len(names)} names given but the model has {n_features} features; "
            "give one name per model column, in the model's column order"
        )
    bad = [n for n in names if not n.strip() or n != n.strip()]
    if bad:
        raise ValueError(f"feature_names: empty or space-padded name {bad[0]!r}; fix the name")
    seen: set[str] = set()
    for n in names:
        if n in seen:
            raise ValueError(f"feature_names: {n!r} appears twice; names must be unique")
        seen.add(n)
    return names


def preorder(ens: Ensemble, t: int, out: list[str], lists: tuple[list[int], ...],
             open_: Any, mid: Any, close: Any, leaf: Any) -> None:
    """Append the text of tree *t* to *out*, node by node in pre-order.

    A split contributes ``open_(flat, node, depth)``, its left subtree,
    ``mid(flat, depth)``, its right subtree and ``close(flat, depth)``; a leaf
    ``leaf(i, depth)`` (``i``: its number in the tree).  *lists* is ``(start, left,
    right)`` of the trees as Python lists (:meth:`Ensemble.lists`).  No
    recursion: the text of a subtree is never copied.
    """
    start, left, right = lists
    if start[t + 1] == start[t]:
        out.append(leaf(0, 0))
        return
    base = start[t]
    stack: list[tuple[int, int, int]] = [(0, 0, 0)]
    push, pop, emit = stack.append, stack.pop, out.append
    while stack:
        kind, k, depth = pop()
        if kind == 0:
            if k < 0:
                emit(leaf(~k, depth))
                continue
            flat = base + k
            emit(open_(flat, k, depth))
            push((2, flat, depth))
            push((0, right[flat], depth + 1))
            push((1, flat, depth))
            push((0, left[flat], depth + 1))
        elif kind == 1:
            emit(mid(k, depth))
        else:
            emit(close(k, depth))


def float32_thresholds(ens: Ensemble, op: str) -> tuple[np.ndarray, list[str]]:
    """Float32 thresholds (as float64) for a float32 engine comparing with *op* (``<=``/``<``).

    Exact for every finite float32 feature value (the engines round features
    to float32 before comparing), see :func:`finite_thresholds` for the
    returned notes.
    """
    low = floor32(ens.bound)
    thr = low if op == "<=" else next32(low)
    return finite_thresholds(ens, thr.astype(np.float64), float(np.finfo(np.float32).max))


def finite_thresholds(ens: Ensemble, thr: np.ndarray, big: float) -> tuple[np.ndarray, list[str]]:
    """Replace infinite thresholds by +-*big* (JSON has no infinity); one note per node.

    A split that sends every finite value one way (LightGBM writes such
    thresholds as ``inf``) keeps doing so, except for the value *big* itself.
    """
    bad = np.flatnonzero(~np.isfinite(thr) & ~np.isnan(thr) & (ens.trees.feature >= 0))
    notes = []
    thr = thr.copy()
    for i in bad:
        t, k = ens.locate(int(i))
        thr[i] = big if thr[i] > 0 else -big
        notes.append(f"tree {t} node {k}: threshold {float(ens.bound[i])!r} written as "
                     f"{float(thr[i])!r} (the file format has no infinity; only that value "
                     "itself can change side)")
    return thr, notes


def warn_nan_right(ens: Ensemble, fmt: str) -> None:
    """Warn when a format that sends NaN right gets a model that learned to send it left."""
    import warnings

    learned = ens.nan_left & (ens.zero_missing | (ens.engine == "xgboost")
                              | _lgb_nan_type(ens))
    n = int(np.count_nonzero(learned))
    if n:
        t, k = ens.locate(int(np.flatnonzero(learned)[0]))
        warnings.warn(
            f"{fmt} has no missing-value rule (NaN goes right at every split) but {n} split(s) "
            f"send missing values left (first: tree {t} node {k}); the engine never feeds NaN "
            "(a missing feature is its default value, usually 0), so make sure missing values "
            "at serving time are what the model saw in training",
            UserWarning,
            stacklevel=4,
        )


def _lgb_nan_type(ens: Ensemble) -> np.ndarray:
    if ens.engine != "lightgbm":
        return np.zeros(ens.bound.size, dtype=bool)
    return ((ens.trees.decision.astype(np.int64) >> 2) & 3) == 2


def check_reference(ens: Ensemble, thr32: np.ndarray, op: str, reference: Any, adjust: bool,
                    fmt: str, reachable: Any = None, nearby: Any = None
                    ) -> tuple[np.ndarray, list[str]]:
    """Check float32 thresholds against training rows; rewrite them when *adjust*.

    A row goes left at a node when its double value is ``<= bound``; the
    float32 engine sees ``float32(value)``.  Every row must land on the same
    side.  With *adjust*, a threshold that does not is replaced by the nearest
    float32 that keeps every row on its side (and that *reachable*, when
    given, accepts; *nearby* lists the representable values near an array of
    float32 values);
    otherwise :class:`ExportError`.  Returns the thresholds
    and one note per rewrite.
    """
    thr32 = thr32.copy()
    notes: list[str] = []
    X = None if reference is None else np.asarray(reference, dtype=np.float64)
    internal = np.flatnonzero(ens.trees.feature >= 0)
    need = np.zeros(thr32.size, dtype=bool)
    if reachable is not None:
        need[internal] = ~reachable(thr32[internal])
    if X is None:
        if need.any():
            first = int(np.flatnonzero(need)[0])
            t, k = ens.locate(first)
            raise ExportError(
                f"tree {t} node {k}: {fmt} cannot hold threshold {float(ens.bound[first])!r} "
                "exactly (see docs/export.md); pass adjust_thresholds=True with the training "
                "rows (CLI: --adjust-thresholds) to move it where no training row changes side"
            )
        return thr32, notes
    # the float32 values of the nearest training values on each side of every split
    lo32 = np.full(thr32.size, -np.inf)
    hi32 = np.full(thr32.size, np.inf)
    feature = ens.trees.feature
    for j in np.unique(feature[internal]):
        nodes = internal[feature[internal] == j]
        v = X[:, int(j)]
        v = np.unique(v[~np.isnan(v)])
        pos = np.searchsorted(v, ens.bound[nodes], side="right")  # values <= bound
        has = pos > 0
        lo32[nodes[has]] = v[pos[has] - 1].astype(np.float32)
        has = pos < v.size
        hi32[nodes[has]] = v[pos[has]].astype(np.float32)
    with np.errstate(invalid="ignore"):
        fine = ((lo32 <= thr32) & (thr32 < hi32)) if op == "<=" else (
            (lo32 < thr32) & (thr32 <= hi32))
    for i in internal[~fine[internal] | need[internal]]:
        j = int(feature[i])
        b = float(ens.bound[i])
        lmax, rmin = float(lo32[i]), float(hi32[i])

        x0 = float(thr32[i])
        t, k = ens.locate(int(i))
        if not adjust:
            raise ExportError(
                f"tree {t} node {k}: training values of feature {ens.feature_names[j]!r} on "
                f"both sides of threshold {b!r} round to float32 so that {fmt}'s threshold "
                f"{x0!r} sends one of them the other way; pass adjust_thresholds=True "
                "(CLI: --adjust-thresholds) to move it"
            ) if not need[i] else ExportError(
                f"tree {t} node {k}: {fmt} cannot hold threshold {b!r} exactly and training "
                "rows were given without adjust_thresholds=True; pass it to move the threshold"
            )
        found = None
        seeds = np.array([x0, lmax, rmin, float(next32(np.float32(lmax))),
                          float(np.nextafter(np.float32(rmin), np.float32(-np.inf)))])
        cands = seeds[np.isfinite(seeds)]
        if nearby is not None:
            cands = nearby(cands)
        with np.errstate(invalid="ignore"):
            ok = ((lmax <= cands) & (cands < rmin)) if op == "<=" else (
                (lmax < cands) & (cands <= rmin))
        if reachable is not None:
            ok &= reachable(cands)
        if ok.any():
            good = cands[ok]
            found = float(good[np.argmin(np.abs(good - x0))])
        if found is None:
            raise ExportError(
                f"tree {t} node {k}: no float32 threshold near {b!r} keeps every training row "
                f"of feature {ens.feature_names[j]!r} on its side in {fmt} (two rows that "
                "float32 cannot tell apart go different ways)"
            )
        thr32[i] = found
        notes.append(f"tree {t} node {k}: threshold {x0!r} -> {found!r} (feature "
                     f"{ens.feature_names[j]!r}; every training row stays on its side)")
    return thr32, notes

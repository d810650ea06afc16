"""Permutation feature importance measured as ΔnDCG, query-aware.

The importance of a feature (or of a named group of features) is the drop of
nDCG@k when its column is shuffled:

.. math::

    \\mathrm{imp}_{j,r} = \\mathrm{nDCG@k}(y, f(X)) - \\mathrm{nDCG@k}(y, f(X^{(j,r)}))

where :math:`X^{(j,r)}` is ``X`` with column ``j`` permuted by the ``r``-th
row permutation.  nDCG is :func:`ltr.metrics.ndcg` averaged over queries, with
any of its conventions (``gain=``, ``ties=``, ``convention=``, ...).

With ``strategy="global"`` the permutations are exactly the ones
:func:`sklearn.inspection.permutation_importance` draws for the same
``random_state`` (one seed drawn once, every column re-seeded with it and its
index array shuffled in place once per repeat), so the numbers equal sklearn's
run with a scorer computing the same grouped nDCG.

Speed: ``X`` is never copied per feature and repeat.  For models whose
prediction of a row depends only on that row (LightGBM and XGBoost boosters and
their wrappers), only rows whose prediction can change are re-predicted, with
the engine's threaded native ``predict``; every other row keeps its baseline
score, which is bitwise what a full prediction would give:

* LightGBM numerical trees: the rows that reach another leaf in some tree
  (numba walk of the parsed trees, exactly LightGBM's decision rule, started
  at the first node on the permuted column along each row's path);
* XGBoost trees: the rows whose value crosses a split threshold of the column;
* linear or categorical trees: the rows whose value changed.

A feature the model never splits on costs nothing and scores exactly 0.  Other
models are predicted in full from one working buffer per worker: the column is
permuted, the model is called, the column is restored.
"""

from __future__ import annotations

import json
import math
import sys
import threading
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from numbers import Integral, Real
from pathlib import Path
from typing import Any

import numpy as np
from numba import njit, prange

from ltr._validation import check_int, short_repr
from ltr.groups import resolve_groups

__all__ = ["PermutationImportance", "permutation_importance"]

_STRATEGIES = ("global", "within_query")
# LightGBM treats |x| <= kZeroThreshold as zero (missing_type "Zero").
_LGB_ZERO = 1e-35
_KERNEL_LOCK = threading.Lock()


# --------------------------------------------------------------------------- #
# Result object
# --------------------------------------------------------------------------- #
def _squeeze(arr: np.ndarray, single: bool) -> Any:
    if not single:
        return arr
    out = arr[0]
    return float(out) if np.ndim(out) == 0 else out


def _fmt(value: float, digits: int = 5) -> str:
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "nan"
    return f"{value:.{digits}f}"


def _markdown_table(header: Sequence[str], rows: Sequence[Sequence[Any]]) -> str:
    lines = ["| " + " | ".join(header) + " |", "|" + "|".join("---" for _ in header) + "|"]
    for row in rows:
        lines.append("| " + " | ".join(str(c) for c in row) + " |")
    return "\n".join(lines)


@dataclass(repr=False)
class PermutationImportance:
    """Result of :func:`permutation_importance`.

    Arrays carry a leading *k* axis internally; the public attributes drop it
    when a single ``k`` was requested (``k`` is then an ``int``) and keep it
    when ``k`` was a list (``k`` is then a tuple).  :meth:`at_k` returns the
    single-``k`` view of a multi-``k`` result.

    Attributes
    ----------
    baseline : float or ndarray of shape (n_k,)
        nDCG@k of the unpermuted data.
    importances : ndarray of shape (n_features, n_repeats) or (n_k, n_features, n_repeats)
        ΔnDCG (baseline minus permuted nDCG) per feature and repeat.
    importances_mean, importances_std : ndarray of shape (n_features,) or (n_k, n_features)
        Mean and standard deviation (``ddof=0``, as scikit-learn) over repeats.
    ci_low, ci_high : ndarray, same shape as ``importances_mean``
        Two-sided 95 % Student-t interval of the mean over repeats:
        ``mean ± t(0.975, n_repeats - 1) · sd(ddof=1) / sqrt(n_repeats)``
        (NaN when ``n_repeats == 1``).
    feature_names : list of str
        One name per evaluated feature or feature group.
    feature_columns : list of list of int
        Column indices permuted together for each entry of ``feature_names``.
    k : int or tuple of int
        Cut-off(s).
    strategy : {"global", "within_query"}
    seed : int
        The seed drawn from ``random_state`` (as scikit-learn does); every
        feature's permutations come from ``RandomState(seed)``.
    random_state : int or None
        The ``random_state`` argument when it was an int (else None).
    n_repeats, n_queries, n_rows : int
        Repeats, and queries/rows actually evaluated (after ``max_queries``).
    segment_labels : list or None
        Segment categories, when ``segments`` was given.
    segment_baseline : ndarray of shape (n_segments,) or (n_k, n_segments), or None
    segment_importances : ndarray of shape (n_segments, n_features, n_repeats) (k axis first when several), or None
    ndcg_options : dict
        The extra nDCG options used (``gain``, ``ties``, ...), for the record.
    n_rows_predicted : int
        Rows sent to the model's predict over all features and repeats (not
        counting the baseline); ``n_features * n_repeats * n_rows`` without the
        row-subset shortcut.
    """

    _baseline: np.ndarray
    _importances: np.ndarray
    feature_names: list[str]
    feature_columns: list[list[int]]
    ks: tuple[int, ...]
    single_k: bool
    strategy: str
    seed: int
    random_state: int | None
    n_repeats: int
    n_queries: int
    n_rows: int
    segment_labels: list[Any] | None = None
    _segment_baseline: np.ndarray | None = None
    _segment_importances: np.ndarray | None = None
    ndcg_options: dict[str, Any] = field(default_factory=dict)
    n_rows_predicted: int = 0

    def __repr__(self) -> str:
        base = ", ".join(f"nDCG@{k}={float(b):.4f}" for k, b in zip(self.ks, self._baseline))
        return (
            f"PermutationImportance({len(self.feature_names)} features, {self.n_repeats} repeats, "
            f"strategy={self.strategy!r}, seed={self.seed}, {base})"
        )

    # ------------------------------------------------------------------ views
    @property
    def k(self) -> int | tuple[int, ...]:
        """The cut-off (``int``) or cut-offs (``tuple``) as requested."""
        return self.ks[0] if self.single_k else self.ks

    @property
    def baseline(self) -> Any:
        """Baseline nDCG@k (float, or one per k)."""
        return _squeeze(self._baseline, self.single_k)

    @property
    def importances(self) -> np.ndarray:
        """ΔnDCG per feature and repeat."""
        return _squeeze(self._importances, self.single_k)

    @property
    def importances_mean(self) -> np.ndarray:
        """Mean ΔnDCG over repeats."""
        return _squeeze(self._importances.mean(axis=-1), self.single_k)

    @property
    def importances_std(self) -> np.ndarray:
        """Standard deviation (ddof=0) of ΔnDCG over repeats."""
        return _squeeze(self._importances.std(axis=-1), self.single_k)

    def _half_width(self, imp: np.ndarray) -> np.ndarray:
        n = imp.shape[-1]
        if n < 2:
            return np.full(imp.shape[:-1], np.nan)
        from scipy.stats import t as student_t

        return float(student_t.ppf(0.975, n - 1)) * imp.std(axis=-1, ddof=1) / math.sqrt(n)

    @property
    def ci_low(self) -> np.ndarray:
        """Lower end of the 95 % t interval of the mean ΔnDCG."""
        imp = self._importances
        return _squeeze(imp.mean(axis=-1) - self._half_width(imp), self.single_k)

    @property
    def ci_high(self) -> np.ndarray:
        """Upper end of the 95 % t interval of the mean ΔnDCG."""
        imp = self._importances
        return _squeeze(imp.mean(axis=-1) + self._half_width(imp), self.single_k)

    @property
    def segment_baseline(self) -> Any:
        """Baseline nDCG@k per segment (None without segments)."""
        if self._segment_baseline is None:
            return None
        return _squeeze(self._segment_baseline, self.single_k)

    @property
    def segment_importances(self) -> np.ndarray | None:
        """ΔnDCG per segment, feature and repeat (None without segments)."""
        if self._segment_importances is None:
            return None
        return _squeeze(self._segment_importances, self.single_k)

    def at_k(self, k: int) -> PermutationImportance:
        """Single-``k`` result for one of the requested cut-offs."""
        if k not in self.ks:
            raise ValueError(f"k must be one of the evaluated cut-offs {list(self.ks)}, got {k!r}")
        i = self.ks.index(k)
        return PermutationImportance(
            _baseline=self._baseline[i : i + 1],
            _importances=self._importances[i : i + 1],
            feature_names=list(self.feature_names),
            feature_columns=[list(c) for c in self.feature_columns],
            ks=(k,),
            single_k=True,
            strategy=self.strategy,
            seed=self.seed,
            random_state=self.random_state,
            n_repeats=self.n_repeats,
            n_queries=self.n_queries,
            n_rows=self.n_rows,
            segment_labels=self.segment_labels,
            _segment_baseline=None
            if self._segment_baseline is None
            else self._segment_baseline[i : i + 1],
            _segment_importances=None
            if self._segment_importances is None
            else self._segment_importances[i : i + 1],
            ndcg_options=dict(self.ndcg_options),
            n_rows_predicted=self.n_rows_predicted,
        )

    # ---------------------------------------------------------------- exports
    def _rows(self, i: int) -> list[dict[str, Any]]:
        imp = self._importances[i]
        mean = imp.mean(axis=-1)
        half = self._half_width(imp)
        rows = []
        for f, name in enumerate(self.feature_names):
            rows.append(
                {
                    "feature": name,
                    "k": self.ks[i],
                    "importance_mean": float(mean[f]),
                    "importance_std": float(imp[f].std()),
                    "ci_low": float(mean[f] - half[f]),
                    "ci_high": float(mean[f] + half[f]),
                    "baseline": float(self._baseline[i]),
                }
            )
        return rows

    def to_frame(self) -> Any:
        """One row per feature (and per k when several): mean, std, interval.

        Returns
        -------
        pandas.DataFrame
            Columns ``feature, importance_mean, importance_std, ci_low,
            ci_high, baseline`` (plus ``k`` first when several cut-offs were
            evaluated), sorted by decreasing mean ΔnDCG within each k.
        """
        import pandas as pd

        frames = []
        for i in range(len(self.ks)):
            df = pd.DataFrame(self._rows(i))
            frames.append(df.sort_values("importance_mean", ascending=False, kind="stable"))
        out = pd.concat(frames, ignore_index=True)
        if self.single_k:
            out = out.drop(columns="k")
        return out

    def segment_frame(self) -> Any:
        """Per-segment table: ``segment, feature, [k,] baseline, importance_mean, importance_std``.

        Returns
        -------
        pandas.DataFrame
            Empty when no ``segments`` were given.
        """
        import pandas as pd

        cols = ["segment", "feature", "k", "baseline", "importance_mean", "importance_std"]
        if self._segment_importances is None or self.segment_labels is None:
            return pd.DataFrame(columns=cols)
        rows = []
        for i, k in enumerate(self.ks):
            for s, label in enumerate(self.segment_labels):
                for f, name in enumerate(self.feature_names):
                    imp = self._segment_importances[i, s, f]
                    rows.append(
                        {
                            "segment": label,
                            "feature": name,
                            "k": k,
                            "baseline": float(self._segment_baseline[i, s]),
                            "importance_mean": float(np.mean(imp)),
                            "importance_std": float(np.std(imp)),
                        }
                    )
        out = pd.DataFrame(rows, columns=cols)
        if self.single_k:
            out = out.drop(columns="k")
        return out

    def to_dict(self) -> dict[str, Any]:
        """Plain-Python dictionary of everything (JSON-serialisable)."""
        d: dict[str, Any] = {
            "k": list(self.ks) if not self.single_k else self.ks[0],
            "strategy": self.strategy,
            "seed": int(self.seed),
            "random_state": self.random_state,
            "n_repeats": self.n_repeats,
            "n_queries": self.n_queries,
            "n_rows": self.n_rows,
            "n_rows_predicted": self.n_rows_predicted,
            "ndcg_options": {k: _jsonable(v) for k, v in self.ndcg_options.items()},
            "feature_names": list(self.feature_names),
            "feature_columns": [list(map(int, c)) for c in self.feature_columns],
            "baseline": _jsonable(self.baseline),
            "importances": _jsonable(self.importances),
            "importances_mean": _jsonable(self.importances_mean),
            "importances_std": _jsonable(self.importances_std),
            "ci_low": _jsonable(self.ci_low),
            "ci_high": _jsonable(self.ci_high),
        }
        if self.segment_labels is not None:
            d["segment_labels"] = [_jsonable(s) for s in self.segment_labels]
            d["segment_baseline"] = _jsonable(self.segment_baseline)
            d["segment_importances"] = _jsonable(self.segment_importances)
        return d

    def to_json(self, path: str | Path | None = None, *, indent: int | None = 2) -> str:
        """JSON text of :meth:`to_dict` (NaN written as ``null``); written to *path* when given."""
        text = json.dumps(self.to_dict(), indent=indent)
        if path is not None:
            Path(path).write_text(text + "\n")
        return text

    def plot(self, path: str | Path | None = None, *, top: int | None = 30, k: int | None = None) -> Any:
        """Horizontal bars of mean ΔnDCG (largest on top) with 95 % interval error bars.

        Parameters
        ----------
        path : str or Path, optional
            Where to write the PNG (Agg backend, no window is opened).
        top : int or None, default=30
            Show only the *top* features by mean ΔnDCG (None: all).
        k : int, optional
            Cut-off to plot when several were evaluated (default: the first).

        Returns
        -------
        matplotlib.figure.Figure
        """
        from matplotlib.figure import Figure  # object API: Agg canvas, thread-safe, no pyplot

        res = self if self.single_k else self.at_k(self.ks[0] if k is None else k)
        mean = np.asarray(res.importances_mean, dtype=float)
        low = np.asarray(res.ci_low, dtype=float)
        high = np.asarray(res.ci_high, dtype=float)
        order = np.argsort(-mean, kind="stable")
        if top is not None:
            order = order[: check_int(top, "top", minimum=1)]
        order = order[::-1]  # barh draws bottom-up: largest on top
        names = [res.feature_names[i] for i in order]
        err = np.vstack([mean[order] - low[order], high[order] - mean[order]])
        err = np.where(np.isfinite(err), err, 0.0)
        fig = Figure(figsize=(7.0, max(2.0, 0.28 * len(order) + 1.2)))
        ax = fig.add_subplot(1, 1, 1)
        ax.barh(np.arange(len(order)), mean[order], xerr=err, color="#4C72B0", ecolor="#333333",
                capsize=2)
        ax.set_yticks(np.arange(len(order)))
        ax.set_yticklabels(names, fontsize=8)
        ax.axvline(0.0, color="#888888", linewidth=0.8)
        ax.set_xlabel(f"ΔnDCG@{res.ks[0]} (baseline {res.baseline:.4f})")
        ax.set_title(f"Permutation importance ({res.strategy}, {res.n_repeats} repeats, seed {res.seed})",
                     fontsize=10)
        fig.tight_layout()
        if path is not None:
            fig.savefig(path, dpi=110)
        return fig

    def to_markdown(self, *, include_plot: str | Path | None = None, top: int | None = None) -> str:
        """Markdown summary: baseline, strategy, seed, the table, segments and an optional plot.

        Parameters
        ----------
        include_plot : str or Path, optional
            Write :meth:`plot` there and link it from the markdown.
        top : int, optional
            Only the *top* features by mean ΔnDCG in the table.
        """
        lines = ["# Permutation importance (ΔnDCG)", ""]
        base = ", ".join(f"nDCG@{k} = {float(b):.5f}" for k, b in zip(self.ks, self._baseline))
        lines += [
            f"- baseline: {base}",
            f"- strategy: `{self.strategy}`"
            + (
                " (rows permuted only inside their query: query-level features score 0 by construction)"
                if self.strategy == "within_query"
                else " (rows permuted across all queries, as scikit-learn)"
            ),
            f"- seed: {self.seed} (random_state={self.random_state!r}), repeats: {self.n_repeats}",
            f"- evaluated: {self.n_queries} queries, {self.n_rows} rows",
            "- interval: 95 % Student-t interval of the mean over repeats",
        ]
        if self.ndcg_options:
            lines.append(f"- nDCG options: {self.ndcg_options!r}")
        lines.append("")
        for i, k in enumerate(self.ks):
            rows = sorted(self._rows(i), key=lambda r: -r["importance_mean"])
            if top is not None:
                rows = rows[:top]
            lines.append(f"## ΔnDCG@{k}")
            lines.append("")
            lines.append(
                _markdown_table(
                    ["feature", "mean ΔnDCG", "std", "95 % CI"],
                    [
                        [r["feature"], _fmt(r["importance_mean"]), _fmt(r["importance_std"]),
                         f"[{_fmt(r['ci_low'])}, {_fmt(r['ci_high'])}]"]
                        for r in rows
                    ],
                )
            )
            lines.append("")
        if self._segment_importances is not None and self.segment_labels is not None:
            for i, k in enumerate(self.ks):
                lines.append(f"## ΔnDCG@{k} per segment")
                lines.append("")
                header = ["feature"] + [str(s) for s in self.segment_labels]
                base_row = ["(baseline nDCG)"] + [_fmt(b) for b in self._segment_baseline[i]]
                mean_seg = self._segment_importances[i].mean(axis=-1)  # (n_seg, n_feat)
                order = np.argsort(-self._importances[i].mean(axis=-1), kind="stable")
                if top is not None:
                    order = order[:top]
                rows = [base_row] + [
                    [self.feature_names[f]] + [_fmt(v) for v in mean_seg[:, f]] for f in order
                ]
                lines.append(_markdown_table(header, rows))
                lines.append("")
        if include_plot is not None:
            self.plot(include_plot)
            lines.append(f"![permutation importance]({Path(include_plot).name})")
            lines.append("")
        return "\n".join(lines)

    def report(self, path: str | Path, *, top: int | None = None) -> Path:
        """Write a markdown report to *path* with the plot beside it (``<stem>.png``).

        Returns
        -------
        pathlib.Path
            The markdown file written.
        """
        path = Path(path)
        path.parent.mkdir(parents=True, exist_ok=True)
        png = path.with_suffix(".png")
        path.write_text(self.to_markdown(include_plot=png, top=top))
        return path


def _jsonable(value: Any) -> Any:
    if isinstance(value, np.ndarray):
        return [_jsonable(v) for v in value.tolist()] if value.ndim else _jsonable(value.item())
    if isinstance(value, (list, tuple)):
        return [_jsonable(v) for v in value]
    if isinstance(value, dict):
        return {str(k): _jsonable(v) for k, v in value.items()}
    if isinstance(value, np.generic):
        return _jsonable(value.item())
    if isinstance(value, float):
        return None if not math.isfinite(value) else value
    if isinstance(value, (int, str, bool)) or value is None:
        return value
    return repr(value)


# --------------------------------------------------------------------------- #
# Models: how to predict and whether rows can be re-predicted alone
# --------------------------------------------------------------------------- #
def _module_of(obj: Any) -> str:
    return type(obj).__module__ or ""


def _is_lgb_booster(obj: Any) -> bool:
    lgb = sys.modules.get("lightgbm")
    return lgb is not None and isinstance(obj, lgb.Booster)


def _is_xgb_booster(obj: Any) -> bool:
    xgb = sys.modules.get("xgboost")  # never import xgboost unless the model is one
    return xgb is not None and isinstance(obj, xgb.Booster)


def _find_booster(model: Any) -> Any:
    """The LightGBM/XGBoost booster behind *model* (itself or a known wrapper), or None."""
    if _is_lgb_booster(model) or _is_xgb_booster(model):
        return model
    lgb = sys.modules.get("lightgbm")
    if lgb is not None and isinstance(model, (lgb.LGBMRanker, lgb.LGBMRegressor)):
        return model.booster_
    xgb = sys.modules.get("xgboost")
    if xgb is not None and isinstance(model, (xgb.XGBRanker, xgb.XGBRegressor)):
        return model.get_booster()
    if _module_of(model).startswith("ltr."):
        # Our RankingModel (``.booster``) and LambdaMARTRanker (``booster_`` or ``model_``).
        for attr in ("booster", "booster_"):
            inner = getattr(model, attr, None)
            if _is_lgb_booster(inner) or _is_xgb_booster(inner):
                return inner
        inner = getattr(model, "model_", None)
        if inner is not None and inner is not model:
            return _find_booster(inner)
    return None


@dataclass
class _Model:
    predict: Callable[[Any], Any]
    booster: Any  # lightgbm/xgboost booster when predictions are row-independent, else None
    takes_frame: bool  # pass DataFrames (original column names) to predict


def _resolve_model(model: Any, frame_columns: Any, n_jobs: int | None) -> _Model:
    if _is_lgb_booster(model):
        return _Model(predict=lambda X: model.predict(X), booster=model, takes_frame=False)
    if _is_xgb_booster(model):
        import xgboost as xgb  # the model is an xgboost Booster, so xgboost is importable

        def _xgb_predict(X: Any) -> Any:
            return model.predict(xgb.DMatrix(X, nthread=-1 if n_jobs is None else n_jobs))

        return _Model(predict=_xgb_predict, booster=model, takes_frame=False)
    predict = getattr(model, "predict", None)
    if callable(predict):
        return _Model(predict=predict, booster=_find_booster(model),
                      takes_frame=frame_columns is not None)
    if callable(model):
        return _Model(predict=model, booster=None, takes_frame=frame_columns is not None)
    raise TypeError(
        "model must have a predict method, be a lightgbm/xgboost Booster or a callable "
        f"X -> scores; got {short_repr(model)} ({type(model).__name__})"
    )


# ---- exact leaf check for LightGBM trees (numba, no validation) ----------- #
@dataclass
class _LgbTrees:
    """Numerical LightGBM trees as flat arrays (node ``k`` of tree ``t`` is ``start[t] + k``)."""

    start: np.ndarray  # int64 (n_trees + 1,)
    feature: np.ndarray  # int32
    threshold: np.ndarray  # float64
    decision: np.ndarray  # int8: bit 1 default-left, bits 2-3 missing type
    left: np.ndarray  # int32: >= 0 internal node, < 0 is ~leaf
    right: np.ndarray
    trees_of: dict[int, np.ndarray]  # feature -> int64 ids of the trees splitting on it
    paths: np.ndarray  # int32 (n_trees, max_leaves, max_depth): root->leaf nodes, -1 padded

    def first_nodes(self, cols: Sequence[int], tree_ids: np.ndarray) -> np.ndarray:
        """``out[a, leaf]``: first node on the root->leaf path of tree ``tree_ids[a]`` that
        splits on one of *cols* (-1 if none).  The path above it does not depend on *cols*."""
        paths = self.paths[tree_ids]  # (T, L, D)
        valid = paths >= 0
        nodes = np.where(valid, paths, 0) + self.start[tree_ids][:, None, None]
        hit = valid & np.isin(self.feature[nodes], np.asarray(cols))
        depth = np.argmax(hit, axis=2)
        first = np.take_along_axis(paths, depth[..., None], axis=2)[..., 0]
        return np.where(hit.any(axis=2), first, -1).astype(np.int32)


def _parse_lgb_trees(booster: Any) -> _LgbTrees | None:
    """Flat arrays from ``model_to_string`` (thresholds as LightGBM stores them, 17 digits).

    Returns None when a tree is linear or has categorical splits (the value-code
    check is used then)."""
    text = booster.model_to_string()
    end = text.find("end of trees")
    sections = text[:end if end >= 0 else len(text)].split("\nTree=")[1:]
    start = [0]
    feats, ths, decs, lefts, rights = [], [], [], [], []
    trees_of: dict[int, list[int]] = {}
    paths_of: list[dict[int, list[int]]] = []
    for t, sec in enumerate(sections):
        kv = {}
        for line in sec.splitlines()[1:]:
            key, sep, value = line.partition("=")
            if sep:
                kv[key.strip()] = value.strip()
        if kv.get("is_linear", "0") != "0" or int(kv.get("num_cat", "0")) > 0:
            return None
        if int(kv.get("num_leaves", "1")) < 2 or "split_feature" not in kv:
            start.append(start[-1])  # a single leaf: never changes
            paths_of.append({})
            continue
        f = np.array(kv["split_feature"].split(), dtype=np.int32)
        dec = np.array(kv["decision_type"].split(), dtype=np.int8)
        if np.any(dec & 1):
            return None
        feats.append(f)
        ths.append(np.array(kv["threshold"].split(), dtype=np.float64))
        decs.append(dec)
        lefts.append(np.array(kv["left_child"].split(), dtype=np.int32))
        rights.append(np.array(kv["right_child"].split(), dtype=np.int32))
        tree_paths: dict[int, list[int]] = {}
        stack: list[tuple[int, list[int]]] = [(0, [])]
        while stack:
            node, path = stack.pop()
            path = path + [node]
            for child in (lefts[-1][node], rights[-1][node]):
                if child < 0:
                    tree_paths[int(~child)] = path
                else:
                    stack.append((int(child), path))
        paths_of.append(tree_paths)
        start.append(start[-1] + len(f))
        for j in np.unique(f):
            trees_of.setdefault(int(j), []).append(t)

    def cat(parts: list[np.ndarray], dtype: Any) -> np.ndarray:
        return np.concatenate(parts).astype(dtype) if parts else np.zeros(0, dtype=dtype)

    max_leaves = max([len(p) for p in paths_of] + [1])
    max_depth = max([len(v) for p in paths_of for v in p.values()] + [1])
    paths = np.full((len(paths_of), max_leaves, max_depth), -1, dtype=np.int32)
    for t, tree_paths in enumerate(paths_of):
        for leaf, path in tree_paths.items():
            paths[t, leaf, : len(path)] = path
    return _LgbTrees(
        paths=paths,
        start=np.array(start, dtype=np.int64),
        feature=cat(feats, np.int32),
        threshold=cat(ths, np.float64),
        decision=cat(decs, np.int8),
        left=cat(lefts, np.int32),
        right=cat(rights, np.int32),
        trees_of={j: np.array(v, dtype=np.int64) for j, v in trees_of.items()},
    )


_ZERO_F32 = float(np.float32(1e-35))  # LightGBM kZeroThreshold (a float widened to double)


@njit(cache=True, inline="always")
def _lgb_walk(X, i, cols, vals, base, node, feature, threshold, decision, left, right):
    """Walk one tree from ``node`` for row ``i`` of ``X`` with columns ``cols`` replaced by
    ``vals`` (LightGBM's ``NumericalDecision``).  Returns ``(leaf, first)``: the leaf and the
    first visited node splitting on one of ``cols`` (-1 if none)."""
    first = -1
    while True:
        k = base + node
        f = feature[k]
        found = False
        v = 0.0
        for c in range(cols.shape[0]):
            if cols[c] == f:
                v = vals[c]
                found = True
                break
        if found and first < 0:
            first = node
        if not found:
            v = np.float64(X[i, f])
        dt = decision[k]
        missing = (dt >> 2) & 3
        if np.isnan(v) and missing != 2:
            v = 0.0
        if (missing == 1 and -_ZERO_F32 <= v <= _ZERO_F32) or (missing == 2 and np.isnan(v)):
            nxt = left[k] if (dt & 2) != 0 else right[k]
        elif v <= threshold[k]:
            nxt = left[k]
        else:
            nxt = right[k]
        if nxt < 0:
            return ~nxt, first
        node = nxt


@njit(cache=True, parallel=True)
def _lgb_leaves(X, trees, start, feature, threshold, decision, left, right, out):
    """``out[i, t]``: leaf of row ``i`` in tree ``trees[t]`` (LightGBM ``pred_leaf``)."""
    none = np.empty(0, dtype=np.int64)
    vals = np.empty(0)
    for i in prange(X.shape[0]):
        for a in range(trees.shape[0]):
            t = trees[a]
            if start[t + 1] == start[t]:
                out[i, a] = 0  # a single-leaf tree
                continue
            leaf, _ = _lgb_walk(X, i, none, vals, start[t], 0, feature, threshold,
                                decision, left, right)
            out[i, a] = leaf


@njit(cache=True, parallel=True)
def _lgb_leaf_changed(X, rows, new_vals, cols, trees, first, start, feature, threshold, decision,
                      left, right, leaves, out):
    """``out[r]``: does row ``rows[r]`` with ``cols`` set to ``new_vals[r]`` reach another leaf?

    ``leaves[i, t]`` is the row's leaf in tree ``t``; ``first[a, leaf]`` the first node on
    its path that splits on ``cols``.  The path above that node does not depend on
    ``cols``, so each walk starts there; trees whose path never meets ``cols`` are skipped."""
    for r in prange(rows.shape[0]):
        i = rows[r]
        vals = new_vals[r]
        changed = False
        for a in range(trees.shape[0]):
            t = trees[a]
            leaf0 = leaves[i, t]
            node = first[a, leaf0]
            if node < 0:
                continue
            leaf, _ = _lgb_walk(X, i, cols, vals, start[t], node, feature, threshold, decision,
                                left, right)
            if leaf != leaf0:
                changed = True
                break
        out[r] = changed


def _value_codes(col: np.ndarray) -> np.ndarray:
    """Integer code per distinct value (NaNs share one code)."""
    _, inverse = np.unique(col, return_inverse=True)
    return inverse.reshape(-1).astype(np.int64)


def _lgb_codes(col: np.ndarray, thresholds: np.ndarray) -> np.ndarray:
    """Rows with equal codes take the same branch at every numerical split on this column.

    ``searchsorted`` counts thresholds strictly below the value (LightGBM goes
    left when ``value <= threshold``); NaN and |x| <= 1e-35 (LightGBM's zero)
    get their own codes, which can only mark more rows as changed.
    """
    v = col.astype(np.float64, copy=False)
    codes = np.searchsorted(thresholds, v, side="left").astype(np.int64)
    codes[np.abs(v) <= _LGB_ZERO] = -2
    codes[np.isnan(v)] = -1
    return codes


def _xgb_split_info(booster: Any) -> tuple[dict[int, np.ndarray], set[int]] | None:
    """Numerical split thresholds (float32) per feature and features with categorical
    splits of an XGBoost tree booster; None for other boosters (gblinear)."""
    model = json.loads(bytes(booster.save_raw(raw_format="json")))
    gb = model["learner"]["gradient_booster"]
    if gb.get("name") == "dart":
        gb = gb["gbtree"]
    if "model" not in gb or "trees" not in gb["model"]:
        return None
    thresholds: dict[int, list[np.ndarray]] = {}
    categorical: set[int] = set()
    for tree in gb["model"]["trees"]:
        left = np.asarray(tree["left_children"])
        internal = left >= 0
        feats = np.asarray(tree["split_indices"])[internal]
        conds = np.asarray(tree["split_conditions"], dtype=np.float32)[internal]
        kinds = np.asarray(tree.get("split_type", np.zeros(left.size)))[internal]
        categorical.update(int(j) for j in np.unique(feats[kinds != 0]))
        for j in np.unique(feats[kinds == 0]):
            thresholds.setdefault(int(j), []).append(conds[(feats == j) & (kinds == 0)])
    return {j: np.unique(np.concatenate(v)) for j, v in thresholds.items()}, categorical


def _xgb_codes(col: np.ndarray, thresholds: np.ndarray) -> np.ndarray:
    """Rows with equal codes take the same branch at every numerical XGBoost split on this
    column (``x < threshold`` in float32 goes left); NaN and 0 (a common ``missing``
    value) get codes of their own."""
    v = col.astype(np.float32)
    codes = np.searchsorted(thresholds, v, side="right").astype(np.int64)
    codes[v == 0] = -2
    codes[np.isnan(v)] = -1
    return codes


class _ChangeDetector:
    """Which rows can get another prediction when some columns are permuted.

    For a row-wise model (a LightGBM/XGBoost booster), a row whose inputs do not
    change in any way the trees can see keeps its prediction bitwise.  LightGBM
    numerical trees: a row is flagged only if it reaches another leaf in some
    tree (walked exactly as LightGBM does, from the first node on the permuted
    columns).  XGBoost trees: a row is flagged when a permuted value crosses a
    split threshold of that column (or is NaN/0).  Linear or categorical trees:
    a row is flagged when any permuted value changed.
    """

    def __init__(self, X: np.ndarray, booster: Any) -> None:
        self.X = X
        self.trees = _parse_lgb_trees(booster) if _is_lgb_booster(booster) else None
        self.xgb = _xgb_split_info(booster) if _is_xgb_booster(booster) else None
        self.leaves: np.ndarray | None = None
        if self.trees is not None:
            tr = self.trees
            n_trees = tr.start.size - 1
            small = tr.paths.shape[1] < np.iinfo(np.int16).max
            self.leaves = np.zeros((X.shape[0], n_trees), dtype=np.int16 if small else np.int32)
            _lgb_leaves(X, np.arange(n_trees, dtype=np.int64), tr.start, tr.feature,
                        tr.threshold, tr.decision, tr.left, tr.right, self.leaves)

    def _codes(self, j: int) -> np.ndarray | None:
        """Per-row code of column *j*: rows with equal codes are indistinguishable to the
        model on this column (None: the model never looks at it)."""
        if self.xgb is not None:
            thresholds, categorical = self.xgb
            if j in categorical:
                return _value_codes(self.X[:, j])
            if j not in thresholds:
                return None
            return _xgb_codes(self.X[:, j], thresholds[j])
        if self.trees is None:
            return _value_codes(self.X[:, j])
        ts = self.trees.threshold[self.trees.feature == j]
        if ts.size == 0:
            return None
        return _lgb_codes(self.X[:, j], np.unique(ts))

    def for_columns(self, cols: Sequence[int]) -> Callable[[np.ndarray], np.ndarray]:
        """A function ``perm -> sorted indices of the rows to re-predict``."""
        X, tr = self.X, self.trees
        codes = [c for c in (self._codes(j) for j in cols) if c is not None]
        cols_arr = np.asarray(cols, dtype=np.int64)
        tree_ids = first = None
        if tr is not None and codes:
            tree_ids = np.unique(np.concatenate(
                [tr.trees_of.get(j, np.zeros(0, dtype=np.int64)) for j in cols]))
            first = tr.first_nodes(cols, tree_ids)

        def changed_rows(perm: np.ndarray) -> np.ndarray:
            if not codes:
                return np.zeros(0, dtype=np.int64)
            changed = codes[0][perm] != codes[0]
            for c in codes[1:]:
                changed |= c[perm] != c
            idx = np.flatnonzero(changed)
            if idx.size and tr is not None:
                new_vals = np.ascontiguousarray(X[perm[idx][:, None], cols_arr[None, :]],
                                                dtype=np.float64)
                moved = np.empty(idx.size, dtype=np.bool_)
                with _KERNEL_LOCK:  # numba's workqueue layer is not re-entrant across threads
                    _lgb_leaf_changed(X, idx, new_vals, cols_arr, tree_ids, first, tr.start,
                                      tr.feature, tr.threshold, tr.decision, tr.left, tr.right,
                                      self.leaves, moved)
                idx = idx[moved]
            return idx

        return changed_rows


# --------------------------------------------------------------------------- #
# Input handling
# --------------------------------------------------------------------------- #
def _check_k(k: Any) -> tuple[tuple[int, ...], bool]:
    if isinstance(k, (list, tuple, np.ndarray)):
        if len(k) == 0:
            raise ValueError("k must be an int >= 1 or a non-empty list of them, got []")
        ks = tuple(check_int(v, f"k[{i}]", minimum=1) for i, v in enumerate(k))
        if len(set(ks)) != len(ks):
            raise ValueError(f"k must not repeat a cut-off, got {list(ks)!r}")
        return ks, False
    return (check_int(k, "k", minimum=1),), True


def _check_X(X: Any, feature_names: Sequence[str] | None) -> tuple[bool, list[Any] | None,
                                                                    list[str], int]:
    """``(is_frame, frame_columns, names, n_rows)`` after checking shape, dtype and names."""
    if hasattr(X, "iloc") and hasattr(X, "columns"):
        if X.ndim != 2:
            raise ValueError(f"X must be 2-D, got shape {X.shape}")
        columns = list(X.columns)
        names = [str(c) for c in columns]
        n_rows = X.shape[0]
    else:
        if X is None:
            raise TypeError("X must be a 2-D array or DataFrame, got None")
        arr = np.asarray(X)
        if arr.ndim != 2:
            raise ValueError(f"X must be 2-D (n_rows, n_features), got shape {arr.shape}")
        if arr.dtype == object or not (
            np.issubdtype(arr.dtype, np.number) or np.issubdtype(arr.dtype, np.bool_)
        ):
            raise TypeError(f"X must be numeric, got dtype {arr.dtype}")
        columns = None
        n_rows, n_cols = arr.shape
        if feature_names is not None:
            names = [str(name) for name in feature_names]
            if len(names) != n_cols:
                raise ValueError(f"feature_names has {len(names)} names but X has {n_cols} columns")
        else:
            names = [f"x{i}" for i in range(n_cols)]
    if n_rows == 0:
        raise ValueError("X is empty: at least one row is required")
    if len(set(names)) != len(names):
        raise ValueError(f"feature names must be unique, got {short_repr(names, 120)}")
    return columns is not None, columns, names, n_rows


def _check_max_queries(max_queries: Any, n_queries: int) -> int | None:
    """Number of queries to evaluate (None: all)."""
    if max_queries is None:
        return None
    if isinstance(max_queries, (bool, np.bool_)) or not isinstance(max_queries, Real):
        raise TypeError(f"max_queries must be an int or a float in (0, 1], got {max_queries!r}")
    if isinstance(max_queries, (Integral, np.integer)):
        return check_int(max_queries, "max_queries", minimum=1)
    if not 0.0 < float(max_queries) <= 1.0:
        raise ValueError(f"max_queries as a fraction must be in (0, 1], got {max_queries!r}")
    return max(1, int(float(max_queries) * n_queries))


def _check_random_state(random_state: Any) -> tuple[np.random.RandomState, int | None]:
    """``(rng, int seed for the record or None)``, as ``sklearn.utils.check_random_state``."""
    if isinstance(random_state, (Integral, np.integer)) and not isinstance(random_state, bool):
        return np.random.RandomState(int(random_state)), int(random_state)
    if random_state is None:
        return np.random.mtrand._rand, None
    if isinstance(random_state, np.random.RandomState):
        return random_state, None
    raise TypeError(
        f"random_state must be an int, a RandomState or None, got {short_repr(random_state)}"
    )


def _resolve_features(
    features: Any, names: list[str]
) -> tuple[list[str], list[list[int]]]:
    n = len(names)
    index = {name: i for i, name in enumerate(names)}

    def col(item: Any, where: str) -> int:
        if isinstance(item, (Integral, np.integer)) and not isinstance(item, (bool, np.bool_)):
            i = int(item)
            if not -n <= i < n:
                raise ValueError(f"{where} is column index {i!r} but X has {n} columns")
            return i % n
        if isinstance(item, str):
            if item not in index:
                raise ValueError(
                    f"{where} names unknown feature {item!r}; known features: "
                    f"{short_repr(names, 120)}"
                )
            return index[item]
        raise TypeError(f"{where} must be a feature name or column index, got {short_repr(item)}")

    if features is None:
        return list(names), [[i] for i in range(n)]
    if isinstance(features, (str, Integral)):
        features = [features]
    if isinstance(features, Mapping):
        if len(features) == 0:
            raise ValueError("features must not be empty, got {}")
        out_names, out_cols = [], []
        for gname, members in features.items():
            if isinstance(members, (str, Integral)):
                members = [members]
            members = list(members)
            if not members:
                raise ValueError(f"features[{gname!r}] must list at least one column, got []")
            cols = [col(m, f"features[{gname!r}]") for m in members]
            out_names.append(str(gname))
            out_cols.append(sorted(set(cols)))
        return out_names, out_cols
    items = list(features)
    if not items:
        raise ValueError("features must not be empty, got []")
    cols = [col(item, "features") for item in items]
    return [names[c] for c in cols], [[c] for c in cols]


def _prepare_ndcg_options(
    opts: dict[str, Any], n_rows: int, rows: np.ndarray | None, n_queries: int,
    queries: np.ndarray | None,
) -> dict[str, Any]:
    """Reorder/subset array options: ``weights`` has one entry per query (in order of
    first appearance), ``doc_ids`` one per row."""
    for bad in ("qid", "group", "offsets", "y_true", "y_score", "reduce"):
        if bad in opts:
            raise TypeError(f"{bad} is not an nDCG option of permutation_importance")
    out = dict(opts)
    w = out.get("weights")
    if w is not None:
        w = np.asarray(w)
        if w.ndim != 1 or len(w) != n_queries:
            raise ValueError(
                f"weights must hold one weight per query ({n_queries}), got shape {w.shape}"
            )
        out["weights"] = w if queries is None else w[queries]
    d = out.get("doc_ids")
    if d is not None:
        d = np.asarray(d)
        if d.ndim != 1 or len(d) != n_rows:
            raise ValueError(f"doc_ids must hold one id per row ({n_rows}), got shape {d.shape}")
        out["doc_ids"] = d if rows is None else d[rows]
    return out


# --------------------------------------------------------------------------- #
# Permutations
# --------------------------------------------------------------------------- #
def _global_permutations(n: int, n_repeats: int, seed: int) -> list[np.ndarray]:
    """Exactly scikit-learn's: one index array shuffled in place per repeat, applied to
    the already-permuted column, so repeat ``r`` reads ``col[s_1[s_2[...s_r]]]``."""
    rs = np.random.RandomState(seed)
    shuffling_idx = np.arange(n)
    current = np.arange(n)
    perms = []
    for _ in range(n_repeats):
        rs.shuffle(shuffling_idx)
        current = current[shuffling_idx]
        perms.append(current)
    return perms


def _within_query_permutations(offsets: np.ndarray, n_repeats: int, seed: int) -> list[np.ndarray]:
    rs = np.random.RandomState(seed)
    n = int(offsets[-1])
    qcode = np.repeat(np.arange(len(offsets) - 1), np.diff(offsets))
    perms = []
    for _ in range(n_repeats):
        keys = rs.random_sample(n)
        perms.append(np.lexsort((keys, qcode)).astype(np.int64))
    return perms


# --------------------------------------------------------------------------- #
# Public function
# --------------------------------------------------------------------------- #
def permutation_importance(
    model: Any,
    X: Any,
    y: Any,
    *,
    qid: Any,
    k: int | Sequence[int] = 10,
    n_repeats: int = 5,
    strategy: str = "global",
    features: Sequence[str | int] | Mapping[str, Sequence[str | int]] | None = None,
    segments: Any = None,
    max_queries: float | None = None,
    n_jobs: int | None = None,
    random_state: int | np.random.RandomState | None = None,
    progress: bool | None = None,
    feature_names: Sequence[str] | None = None,
    **ndcg_options: Any,
) -> PermutationImportance:
    """Permutation importance of features as the drop of grouped nDCG@k.

    Parameters
    ----------
    model : object
        Anything with ``predict(X) -> scores`` (:class:`ltr.LambdaMARTRanker`,
        ``LGBMRanker``, ``XGBRanker``, a ``Pipeline``, :class:`ltr.engines.RankingModel`),
        a raw ``lightgbm.Booster`` or ``xgboost.Booster`` (wrapped in a
        ``DMatrix``), or a callable ``X -> scores``.
    X : ndarray or DataFrame of shape (n_rows, n_features)
        Features.  DataFrame column names become feature names; models that
        are not LightGBM/XGBoost boosters receive DataFrames with the original
        columns.  ``X`` itself is never modified.
    y : array-like of shape (n_rows,)
        Graded relevance.
    qid : array-like of shape (n_rows,)
        Query id of each row.  Rows need not be sorted by query.
    k : int or list of int, default=10
        nDCG cut-off; with a list, every array of the result gets a leading
        k axis (see :class:`PermutationImportance`).
    n_repeats : int, default=5
        Permutations per feature.
    strategy : {"global", "within_query"}, default="global"
        ``"global"`` shuffles the column across all rows (scikit-learn's
        definition, with identical permutations for the same ``random_state``).
        ``"within_query"`` shuffles only inside each query: it asks how much
        the *ordering inside a query* relies on the feature.  A query-level
        feature (constant inside every query, e.g. query length) is then left
        unchanged and scores exactly 0 by construction, even if the model uses
        it.
    features : list of str/int, or dict of name -> list of str/int, optional
        Evaluate only these columns, or named groups of columns permuted
        together (one row permutation applied to every column of the group).
        Default: every column on its own.
    segments : array-like of shape (n_rows,), optional
        A category per row.  Baseline and ΔnDCG are also reported per segment:
        each query is restricted to its rows of that segment (a query-level
        category therefore gives the mean nDCG of the segment's queries).
    max_queries : int or float, optional
        Evaluate a random subset of whole queries (an int count, or a
        fraction in (0, 1]); rows of a query are never split.
    n_jobs : int, optional
        Threads evaluating features in parallel (each with its own buffer).
        The native predict of LightGBM/XGBoost is itself multi-threaded, so
        the default (one worker) is usually best on few cores.
    random_state : int, RandomState or None
        Seeds the permutations; the seed drawn from it is stored in ``seed``.
    progress : bool, optional
        tqdm bar over features; default: shown only when stderr is a TTY.
    feature_names : list of str, optional
        Names of the columns of an ndarray ``X`` (default ``x0, x1, ...``).
    **ndcg_options
        Passed to :func:`ltr.metrics.ndcg` (``gain``, ``discount``, ``ties``,
        ``empty``, ``convention``, ...).  Array options with one entry per row
        (e.g. ``doc_ids``) follow the rows.

    Returns
    -------
    PermutationImportance

    Notes
    -----
    Each feature uses the same ``n_repeats`` permutations, generated from
    ``RandomState(seed)`` as scikit-learn does, so with ``strategy="global"``
    the importances equal ``sklearn.inspection.permutation_importance`` with a
    scorer ``lambda est, X, y: ndcg(y, est.predict(X), qid=qid, k=k)``.

    Examples
    --------
    >>> import numpy as np, lightgbm as lgb
    >>> from ltr.inspection import permutation_importance
    >>> rng = np.random.default_rng(0)
    >>> X = rng.normal(size=(200, 3)); qid = np.repeat(np.arange(20), 10)
    >>> y = (X[:, 0] > 0.5).astype(float) + (X[:, 0] > 1.0)
    >>> model = lgb.LGBMRanker(n_estimators=5, verbose=-1).fit(X, y, group=[10] * 20)
    >>> res = permutation_importance(model, X, y, qid=qid, k=5, random_state=0)
    >>> res.importances.shape
    (3, 5)
    >>> bool(res.importances_mean[0] > 0), float(res.importances_mean[2])
    (True, 0.0)
    """
    from ltr.metrics import ndcg

    # ---------------------------------------------------------- validation
    ks, single_k = _check_k(k)
    n_repeats = check_int(n_repeats, "n_repeats", minimum=1)
    if not isinstance(strategy, str) or strategy not in _STRATEGIES:
        raise ValueError(f"strategy must be one of {list(_STRATEGIES)}, got {strategy!r}")
    if n_jobs is not None:
        n_jobs = check_int(n_jobs, "n_jobs")
        if n_jobs == 0:
            raise ValueError("n_jobs must be a positive int, -1 or None, got 0")
    if progress is not None and not isinstance(progress, (bool, np.bool_)):
        raise TypeError(f"progress must be True, False or None, got {short_repr(progress)}")

    is_frame, frame_columns, names, n_rows = _check_X(X, feature_names)
    y_arr = np.asarray(y)
    if y_arr.ndim != 1:
        raise ValueError(f"y must be 1-D (one label per row), got shape {y_arr.shape}")
    if len(y_arr) != n_rows:
        raise ValueError(f"y has {len(y_arr)} rows but X has {n_rows}; they must match")
    if qid is None:
        raise ValueError("qid is required: one query id per row")
    if np.ndim(qid) == 1 and len(qid) != n_rows:
        raise ValueError(f"qid has {len(qid)} entries but X has {n_rows} rows; they must match")
    groups = resolve_groups(n_rows, qid=qid, sort=True)

    feat_names, feat_cols = _resolve_features(features, names)
    model_info = _resolve_model(model, frame_columns, n_jobs)

    seg_arr = None
    if segments is not None:
        seg_arr = np.asarray(segments)
        if seg_arr.ndim != 1 or len(seg_arr) != n_rows:
            raise ValueError(
                f"segments must have one category per row ({n_rows}), got shape {seg_arr.shape}"
            )

    max_q = _check_max_queries(max_queries, groups.n_queries)

    # ---------------------------------------------------------- randomness
    rng, rs_record = _check_random_state(random_state)
    seed = int(rng.randint(np.iinfo(np.int32).max + 1))  # exactly as scikit-learn

    # ---------------------------------------------------------- row selection
    offsets = groups.offsets
    rows: np.ndarray | None = groups.order  # sorted position -> input row
    subset = max_q is not None and max_q < groups.n_queries
    if subset:
        chosen = np.sort(rng.choice(groups.n_queries, size=max_q, replace=False))
        sizes = np.diff(offsets)[chosen]
        starts = offsets[chosen]
        pos = np.concatenate([np.arange(s, s + n) for s, n in zip(starts, sizes)])
        rows = pos if rows is None else rows[pos]
        offsets = np.zeros(len(chosen) + 1, dtype=np.int64)
        np.cumsum(sizes, out=offsets[1:])
    n_eval = int(offsets[-1])

    # ---------------------------------------------------------- data in evaluation order
    frame_path = False
    if is_frame:
        import pandas as pd

        numeric = all(
            pd.api.types.is_numeric_dtype(dt) and not isinstance(dt, pd.CategoricalDtype)
            for dt in X.dtypes
        )
        if model_info.booster is not None and numeric:
            Xs = X.to_numpy()
            Xs = Xs if rows is None else Xs[rows]
        else:
            frame_path = True
            Xs = X if rows is None else X.iloc[rows]
            Xs = Xs.reset_index(drop=True)
    else:
        arr = np.asarray(X)
        Xs = arr if rows is None else arr[rows]
    ys = np.ascontiguousarray(y_arr if rows is None else y_arr[rows], dtype=np.float64)
    opts = _prepare_ndcg_options(dict(ndcg_options), n_rows, rows, groups.n_queries,
                                 chosen if subset else None)

    seg_index = None
    seg_labels = None
    if seg_arr is not None:
        seg_s = seg_arr if rows is None else seg_arr[rows]
        seg_labels_arr, seg_code = np.unique(seg_s, return_inverse=True)
        seg_labels = [s.item() if hasattr(s, "item") else s for s in seg_labels_arr]
        seg_code = seg_code.reshape(-1)
        seg_index = []
        qcode = np.repeat(np.arange(len(offsets) - 1), np.diff(offsets))
        for s in range(len(seg_labels)):
            idx = np.flatnonzero(seg_code == s)  # stays sorted by query, input order inside
            present, counts = np.unique(qcode[idx], return_counts=True)
            off_s = np.zeros(len(counts) + 1, dtype=np.int64)
            np.cumsum(counts, out=off_s[1:])
            seg_opts = dict(opts)
            if seg_opts.get("weights") is not None:
                seg_opts["weights"] = seg_opts["weights"][present]
            if seg_opts.get("doc_ids") is not None:
                seg_opts["doc_ids"] = seg_opts["doc_ids"][idx]
            seg_index.append((idx, off_s, ys[idx], seg_opts))

    def to_model_input(block: Any) -> Any:
        if model_info.takes_frame and not frame_path:
            import pandas as pd

            return pd.DataFrame(block, columns=frame_columns, copy=False)
        return block

    def predict(block: Any) -> np.ndarray:
        out = np.asarray(model_info.predict(to_model_input(block)), dtype=np.float64)
        if out.ndim == 2 and out.shape[1] == 1:
            out = out[:, 0]
        if out.ndim != 1 or len(out) != len(block):
            raise ValueError(
                f"model predictions must be one score per row ({len(block)}), got shape {out.shape}"
            )
        return out

    def evaluate(scores: np.ndarray) -> np.ndarray:
        """nDCG per k, then per segment per k: shape (n_k, 1 + n_segments)."""
        out = np.empty((len(ks), 1 + (len(seg_index) if seg_index else 0)))
        with _KERNEL_LOCK:
            val = ndcg(ys, scores, offsets=offsets, k=list(ks), **opts)
            out[:, 0] = [float(val[kk]) for kk in ks]
            if seg_index:
                for s, (idx, off_s, y_s, o_s) in enumerate(seg_index):
                    v = ndcg(y_s, scores[idx], offsets=off_s, k=list(ks), **o_s)
                    out[:, 1 + s] = [float(v[kk]) for kk in ks]
        return out

    # ---------------------------------------------------------- baseline
    base_scores = predict(Xs)
    base_eval = evaluate(base_scores)

    # ---------------------------------------------------------- permutations (sorted space)
    if strategy == "global":
        if subset or rows is None:
            perms = _global_permutations(n_eval, n_repeats, seed)
        else:
            # sklearn permutes input rows; express the same permutation in sorted order.
            inv = np.empty(n_rows, dtype=np.int64)
            inv[rows] = np.arange(n_rows)
            perms = [inv[c[rows]] for c in _global_permutations(n_eval, n_repeats, seed)]
    else:
        perms = _within_query_permutations(offsets, n_repeats, seed)

    # ---------------------------------------------------------- per-feature work
    row_wise = model_info.booster is not None and not frame_path
    if row_wise:
        Xs = np.ascontiguousarray(Xs)
    detector = _ChangeDetector(Xs, model_info.booster) if row_wise else None
    local = threading.local()

    def buffer() -> Any:
        buf = getattr(local, "buf", None)
        if buf is None:
            buf = Xs.copy()  # one working copy per worker thread
            local.buf = buf
        return buf

    n_out = 1 + (len(seg_index) if seg_index else 0)

    def work(f: int) -> tuple[np.ndarray, int]:
        cols = feat_cols[f]
        res = np.empty((n_repeats, len(ks), n_out))
        if detector is not None:
            # Re-predict only rows whose prediction can change; the others keep their
            # baseline score, bitwise what a full prediction would give.
            n_pred = 0
            changed_rows = detector.for_columns(cols)
            for r, p in enumerate(perms):
                idx = changed_rows(p)
                if idx.size == 0:
                    res[r] = base_eval
                    continue
                block = buffer()[: idx.size]
                np.take(Xs, idx, axis=0, out=block)
                for j in cols:
                    block[:, j] = Xs[p[idx], j]
                scores = base_scores.copy()
                scores[idx] = predict(block)
                n_pred += idx.size
                res[r] = evaluate(scores)
            return res, n_pred
        buf = buffer()
        if frame_path:
            originals = [buf.iloc[:, j].array.copy() for j in cols]  # keeps the dtype
            for r, p in enumerate(perms):
                for j, orig in zip(cols, originals):
                    buf.isetitem(j, orig.take(p))
                res[r] = evaluate(predict(buf))
            for j, orig in zip(cols, originals):
                buf.isetitem(j, orig)
        else:
            for r, p in enumerate(perms):
                for j in cols:
                    buf[:, j] = Xs[p, j]
                res[r] = evaluate(predict(buf))
            for j in cols:
                buf[:, j] = Xs[:, j]
        return res, n_repeats * n_eval

    show = sys.stderr.isatty() if progress is None else bool(progress)
    from tqdm.auto import tqdm

    bar = tqdm(total=len(feat_cols), desc="permutation importance", unit="feature", disable=not show)
    try:
        if n_jobs is None or n_jobs == 1 or len(feat_cols) == 1:
            results = []
            for f in range(len(feat_cols)):
                results.append(work(f))
                bar.update(1)
        else:
            from joblib import Parallel, delayed

            gen = Parallel(n_jobs=n_jobs, prefer="threads", return_as="generator")(
                delayed(work)(f) for f in range(len(feat_cols))
            )
            results = []
            for item in gen:
                results.append(item)
                bar.update(1)
    finally:
        bar.close()

    n_rows_predicted = int(sum(n for _, n in results))
    perm_eval = np.stack([res for res, _ in results])  # (n_features, n_repeats, n_k, n_out)
    # importances: baseline minus permuted, k axis first
    delta = base_eval[None, None, :, :] - perm_eval  # (n_feat, n_rep, n_k, n_out)
    importances = np.ascontiguousarray(delta[..., 0].transpose(2, 0, 1))
    seg_base = seg_imp = None
    if seg_index:
        seg_base = base_eval[:, 1:].copy()  # (n_k, n_seg)
        seg_imp = np.ascontiguousarray(delta[..., 1:].transpose(2, 3, 0, 1))  # (n_k, n_seg, n_feat, n_rep)

    return PermutationImportance(
        _baseline=base_eval[:, 0].copy(),
        _importances=importances,
        feature_names=feat_names,
        feature_columns=[list(c) for c in feat_cols],
        ks=ks,
        single_k=single_k,
        strategy=strategy,
        seed=seed,
        random_state=rs_record,
        n_repeats=n_repeats,
        n_queries=len(offsets) - 1,
        n_rows=n_eval,
        segment_labels=seg_labels,
        _segment_baseline=seg_base,
        _segment_importances=seg_imp,
        ndcg_options={key: v for key, v in ndcg_options.items() if not isinstance(v, np.ndarray)},
        n_rows_predicted=n_rows_predicted,
    )

"""The result object of :func:`ltr.inspection.permutation_importance`."""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from ltr._compat import import_matplotlib_figure
from ltr._io import to_jsonable, write_atomic, write_png
from ltr._validation import check_int


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
    segment_importances : ndarray of shape (n_segments, n_features, n_repeats), or None
        Per-segment importances, the k axis first when several cut-offs were asked for.
    ndcg_options : dict
        The extra nDCG options used (``gain``, ``ties``, ...), for the record.
    n_rows_predicted : int
        Rows sent to the model's predict over all features and repeats (not
        counting the baseline); ``n_features * n_repeats * n_rows`` without the
        row-subset shortcut.  With cached leaves (``prediction`` starting with
        ``"cached leaves"``), the rows rescored from them instead (changed rows
        shown to stay below their query's k-th score are not rescored).
    prediction : str
        How permuted rows were scored: ``"cached leaves"`` (a tree model's
        changed rows re-summed from each row's cached leaves, only the trees
        splitting on the feature re-walked), ``"engine predict of changed
        rows (...)"`` with the reason the cached leaves could not be used,
        ``"full predict (small job)"`` (a tree model whose permuted sets cost
        the engine less to predict than the tree kernels take to compile) or
        ``"full predict"``.
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
    prediction: str = ""

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
            prediction=self.prediction,
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
        seg_base, seg_imp = self._segment_baseline, self._segment_importances
        # (both are set together, from ``segments``)
        if seg_imp is None or seg_base is None or self.segment_labels is None:
            return pd.DataFrame(columns=cols)
        rows = []
        for i, k in enumerate(self.ks):
            for s, label in enumerate(self.segment_labels):
                for f, name in enumerate(self.feature_names):
                    imp = seg_imp[i, s, f]
                    rows.append(
                        {
                            "segment": label,
                            "feature": name,
                            "k": k,
                            "baseline": float(seg_base[i, s]),
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
            "prediction": self.prediction,
            "ndcg_options": {k: to_jsonable(v) for k, v in self.ndcg_options.items()},
            "feature_names": list(self.feature_names),
            "feature_columns": [list(map(int, c)) for c in self.feature_columns],
            "baseline": to_jsonable(self.baseline),
            "importances": to_jsonable(self.importances),
            "importances_mean": to_jsonable(self.importances_mean),
            "importances_std": to_jsonable(self.importances_std),
            "ci_low": to_jsonable(self.ci_low),
            "ci_high": to_jsonable(self.ci_high),
        }
        if self.segment_labels is not None:
            d["segment_labels"] = [to_jsonable(s) for s in self.segment_labels]
            d["segment_baseline"] = to_jsonable(self.segment_baseline)
            d["segment_importances"] = to_jsonable(self.segment_importances)
        return d

    def to_json(self, path: str | Path | None = None, *, indent: int | None = 2) -> str:
        """JSON text of :meth:`to_dict` (NaN written as ``null``); written to *path* when given."""
        text = json.dumps(self.to_dict(), indent=indent)
        if path is not None:
            write_atomic(path, text + "\n")
        return text

    def plot(
        self, path: str | Path | None = None, *, top: int | None = 30, k: int | None = None
    ) -> Any:
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
        Figure = import_matplotlib_figure().Figure  # object API: Agg canvas, no pyplot

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
        ax.set_title(
            f"Permutation importance ({res.strategy}, {res.n_repeats} repeats, seed {res.seed})",
            fontsize=10,
        )
        fig.tight_layout()
        if path is not None:
            write_png(fig, path)
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
                " (rows permuted only inside their query:"
                " query-level features score 0 by construction)"
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
        seg_base, seg_imp = self._segment_baseline, self._segment_importances
        if seg_imp is not None and seg_base is not None and self.segment_labels is not None:
            for i, k in enumerate(self.ks):
                lines.append(f"## ΔnDCG@{k} per segment")
                lines.append("")
                header = ["feature"] + [str(s) for s in self.segment_labels]
                base_row = ["(baseline nDCG)"] + [_fmt(b) for b in seg_base[i]]
                mean_seg = seg_imp[i].mean(axis=-1)  # (n_seg, n_feat)
                order = np.argsort(-self._importances[i].mean(axis=-1), kind="stable")
                if top is not None:
                    order = order[:top]
                table = [base_row] + [
                    [self.feature_names[f]] + [_fmt(v) for v in mean_seg[:, f]] for f in order
                ]
                lines.append(_markdown_table(header, table))
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
        write_atomic(path, self.to_markdown(include_plot=png, top=top))
        return path


"""Paired comparison of two rankers over per-query metric values, per segment.

:func:`compare` takes the per-query values of a baseline ``a`` and a candidate
``b`` (evaluation results, frames, series or run folders), pairs them by query
id and, for every metric and every segment (the whole population being the
segment ``"all"``), reports the mean delta ``b - a`` with a paired t-test, a
Fisher randomization (sign-flip) test, a percentile bootstrap interval of the
mean delta and a Holm correction across all rows.

Random draws (reproducible with an ``int`` ``random_state``): every row starts
its own ``numpy.random.default_rng(random_state)`` and draws, in this order,

1. the randomization test: ``n_resamples`` rows of ``n`` uniforms
   ``rng.random()``; query ``i`` of resample ``r`` has its delta's sign flipped
   when its uniform is below 0.5;
2. the bootstrap: ``n_resamples`` rows of ``n`` uniforms; the resampled query
   index is ``floor(u * n)``.

A test left out of ``tests`` draws nothing.  Both run as matrix operations over
chunks of resamples (bounded memory), drawing the same stream a row-by-row loop
would.
"""

from __future__ import annotations

import html
import math
import os
import warnings
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from ltr._compat import import_matplotlib_figure
from ltr._io import png_bytes, png_img_tag, to_jsonable, write_file_set, write_png
from ltr._validation import check_int, check_real, short_repr
from ltr.evaluation._per_query import (
    per_query_frame,
    read_per_query,
)

__all__ = ["Comparison", "compare", "holm", "per_query_frame", "read_per_query"]

TESTS: tuple[str, ...] = ("t", "randomization", "bootstrap")
ALL = "all"
#: Column names of :meth:`Comparison.to_frame`, in order.
COLUMNS: tuple[str, ...] = (
    "metric", "segment", "n", "mean_a", "mean_b", "delta", "rel_delta", "ci_low", "ci_high",
    "p_t", "p_randomization", "p_adjusted", "wins", "ties", "losses", "regressed",
    "too_few_queries",
)
#: Cells (resamples x queries) held at once by the resampling tests.
_CHUNK_CELLS = 1 << 21








def holm(p_values: Any) -> np.ndarray:
    """Holm step-down adjusted p-values; NaN entries stay NaN and are not counted.

    Examples
    --------
    >>> holm([0.01, 0.04, float("nan"), 0.03]).round(2).tolist()
    [0.03, 0.06, nan, 0.06]
    """
    p = np.asarray(p_values, dtype=float)
    out = np.full(p.shape, np.nan)
    idx = np.flatnonzero(~np.isnan(p))
    m = idx.size
    if m == 0:
        return out
    order = idx[np.argsort(p[idx], kind="stable")]
    scaled = (m - np.arange(m)) * p[order]
    out[order] = np.minimum(1.0, np.maximum.accumulate(scaled))
    return out


def _randomization_p(d: np.ndarray, n_resamples: int, rng: np.random.Generator) -> float:
    """Two-sided sign-flip test: ``(hits + 1) / (n_resamples + 1)``."""
    n = d.size
    observed = abs(float(d.sum()))
    tol = 1e-10 * (float(np.abs(d).sum()) + 1e-300)
    hits = 0
    chunk = max(1, _CHUNK_CELLS // max(n, 1))
    done = 0
    while done < n_resamples:
        c = min(chunk, n_resamples - done)
        signs = np.where(rng.random((c, n)) < 0.5, -1.0, 1.0)
        hits += int(np.count_nonzero(np.abs(signs @ d) >= observed - tol))
        done += c
    return (hits + 1) / (n_resamples + 1)


def _bootstrap_means(d: np.ndarray, n_resamples: int, rng: np.random.Generator) -> np.ndarray:
    """Means of ``n_resamples`` bootstrap resamples of *d*."""
    n = d.size
    means = np.empty(n_resamples)
    chunk = max(1, _CHUNK_CELLS // max(n, 1))
    done = 0
    while done < n_resamples:
        c = min(chunk, n_resamples - done)
        idx = np.minimum((rng.random((c, n)) * n).astype(np.int64), n - 1)
        means[done:done + c] = d[idx].mean(axis=1)
        done += c
    return means


@dataclass
class Comparison:
    """Result of :func:`compare`: one row per metric x segment.

    Attributes
    ----------
    table : pandas.DataFrame
        The rows (see :meth:`to_frame`).
    name_a, name_b : str
        Labels of the baseline and the candidate.
    alpha : float
        Level of the intervals (``1 - alpha``) and of ``regressed``.
    n_resamples : int
    random_state : int or None
    tests : tuple of str
    min_queries : int
    n_only_a, n_only_b : int
        Queries only ``a`` (only ``b``) had, dropped by ``align='intersect'``.
    adjusted_on : str
        The p-value column Holm-corrected into ``p_adjusted``.
    """

    table: pd.DataFrame
    name_a: str = "a"
    name_b: str = "b"
    alpha: float = 0.05
    n_resamples: int = 10_000
    random_state: int | None = None
    tests: tuple[str, ...] = TESTS
    min_queries: int = 20
    n_only_a: int = 0
    n_only_b: int = 0
    adjusted_on: str = "p_randomization"
    notes: list[str] = field(default_factory=list)

    def to_frame(self) -> pd.DataFrame:
        """Return the table.

        Columns ``metric, segment, n, mean_a, mean_b, delta`` (``mean_b - mean_a``),
        ``rel_delta`` (``delta / mean_a``), ``ci_low, ci_high`` (bootstrap),
        ``p_t, p_randomization, p_adjusted`` (Holm), ``wins, ties, losses`` (queries
        where ``b`` is above, equal to, below ``a``), ``regressed``
        (``delta < 0`` and ``p_adjusted < alpha``), ``too_few_queries``.
        """
        return self.table.copy()

    @property
    def regressions(self) -> pd.DataFrame:
        """Rows flagged ``regressed``."""
        return self.table[self.table["regressed"]].reset_index(drop=True)

    @property
    def any_regression(self) -> bool:
        """Whether any metric x segment regressed significantly."""
        return bool(self.table["regressed"].any())

    def to_dict(self) -> dict[str, Any]:
        """Plain JSON-ready data: settings and rows."""
        return to_jsonable({
            "name_a": self.name_a, "name_b": self.name_b, "alpha": self.alpha,
            "n_resamples": self.n_resamples, "random_state": self.random_state,
            "tests": list(self.tests), "min_queries": self.min_queries,
            "n_only_a": self.n_only_a, "n_only_b": self.n_only_b,
            "adjusted_on": self.adjusted_on, "notes": self.notes,
            "rows": self.table.to_dict(orient="records"),
        })

    def _summary_lines(self) -> list[str]:
        lines = [
            f"Baseline (a): `{self.name_a}`; candidate (b): `{self.name_b}`; delta = b - a.",
            (f"Tests: {', '.join(self.tests) or 'none'}; {self.n_resamples} resamples, seed "
             f"{self.random_state}; intervals at {1 - self.alpha:.0%}; Holm over "
             f"{self.adjusted_on}; segments under {self.min_queries} queries get no p-values."),
        ]
        if self.n_only_a or self.n_only_b:
            lines.append(f"Queries dropped (intersect): {self.n_only_a} only in a, "
                         f"{self.n_only_b} only in b.")
        lines += self.notes
        reg = self.regressions
        if len(reg):
            lines.append("**Regressions:** " + "; ".join(
                f"{r.metric} on {r.segment} ({r.delta:+.4f})" for r in reg.itertuples()))
        else:
            lines.append("No significant regression.")
        return lines

    def to_markdown(self, *, plot: str | None = None) -> str:
        """Markdown report: settings, regressions and the table (and a plot link)."""
        out = ["# Comparison", ""] + [f"- {x}" for x in self._summary_lines()] + [""]
        if plot is not None:
            out += [f"![deltas per segment]({plot})", ""]
        out.append(_markdown_table(self.table))
        return "\n".join(out) + "\n"

    def to_html(self, *, plot: str | os.PathLike[str] | bytes | None = None) -> str:
        """Self-contained HTML report with the same content as :meth:`to_markdown`.

        Parameters
        ----------
        plot : path-like or bytes, optional
            A PNG file or its bytes (the forest plot), embedded as a data URI, not linked.
        """
        items = "".join(f"<li>{html.escape(x).replace('**', '')}</li>"
                        for x in self._summary_lines())
        img = f"<p>{png_img_tag(plot, 'deltas per segment')}</p>" if plot is not None else ""
        table = _format(self.table).to_html(index=False, escape=True)
        return ("<!DOCTYPE html>\n<html><head><meta charset=\"utf-8\"><title>Comparison</title>"
                f"</head><body><h1>Comparison</h1><ul>{items}</ul>{img}{table}</body></html>\n")

    def plot(self, path: str | os.PathLike[str] | None = None) -> Any:
        """Forest plot of the delta and interval per metric x segment.

        Parameters
        ----------
        path : path-like, optional
            Write a PNG there (atomically).

        Returns
        -------
        matplotlib.figure.Figure
        """
        Figure = import_matplotlib_figure().Figure  # object API: no pyplot state
        t = self.table.iloc[::-1].reset_index(drop=True)
        fig = Figure(figsize=(7.0, max(2.0, 0.32 * len(t) + 1.2)))
        ax = fig.add_subplot(1, 1, 1)
        y = np.arange(len(t))
        delta = t["delta"].to_numpy(float)
        low = np.where(np.isfinite(t["ci_low"].to_numpy(float)), t["ci_low"], delta)
        high = np.where(np.isfinite(t["ci_high"].to_numpy(float)), t["ci_high"], delta)
        colors = np.where(t["regressed"].to_numpy(bool), "#C44E52", "#4C72B0")
        ax.hlines(y, low, high, colors=colors, linewidth=1.5)
        ax.scatter(delta, y, c=colors, zorder=3, s=18)
        ax.axvline(0.0, color="#888888", linewidth=0.8)
        ax.set_yticks(y)
        ax.set_yticklabels([f"{m} | {s} (n={n})" for m, s, n in
                            zip(t["metric"], t["segment"], t["n"], strict=True)], fontsize=8)
        ax.set_xlabel(f"delta = {self.name_b} - {self.name_a} ({1 - self.alpha:.0%} bootstrap CI)")
        fig.tight_layout()
        if path is not None:
            write_png(fig, path)
        return fig

    def save(self, directory: str | os.PathLike[str]) -> dict[str, Path]:
        """Write ``report.md``, ``report.html``, ``forest.png``, ``comparison.csv`` and ``.json``.

        The files are written as one set (:func:`ltr._io.write_file_set`): a kill
        leaves an ``INCOMPLETE`` marker, a finished set a ``manifest.json``.

        Parameters
        ----------
        directory : path-like
            Created when missing.

        Returns
        -------
        dict of str to Path
            The files written.
        """
        import json

        names = {"plot": "forest.png", "markdown": "report.md", "html": "report.html",
                 "csv": "comparison.csv", "json": "comparison.json"}
        png = png_bytes(self.plot())
        content: dict[str, str | bytes] = {
            names["plot"]: png,
            names["markdown"]: self.to_markdown(plot="forest.png"),
            names["html"]: self.to_html(plot=png),  # embedded: the page opens on its own
            names["csv"]: self.table.to_csv(index=False),
            names["json"]: json.dumps(self.to_dict(), indent=2) + "\n",
        }
        written = write_file_set(directory, content, producer="ltr compare")
        return {key: written[name] for key, name in names.items()}


def _format(table: pd.DataFrame) -> pd.DataFrame:
    out = table.copy()
    for c in out.columns:
        if pd.api.types.is_float_dtype(out[c]):
            out[c] = [("" if not math.isfinite(v) else f"{v:.4g}") for v in out[c]]
    return out


def _markdown_table(table: pd.DataFrame) -> str:
    t = _format(table).astype(str)
    head = "| " + " | ".join(t.columns) + " |"
    rule = "|" + "|".join("---" for _ in t.columns) + "|"
    rows = ["| " + " | ".join(v.replace("|", "\\|") for v in row) + " |"
            for row in t.itertuples(index=False)]
    return "\n".join([head, rule, *rows])


def _row(metric: str, segment: str, a: np.ndarray, b: np.ndarray, *, tests: tuple[str, ...],
         n_resamples: int, alpha: float, random_state: Any, min_queries: int) -> dict[str, Any]:
    from scipy import stats

    n = a.size
    d = b - a
    mean_a = float(a.mean()) if n else math.nan
    mean_b = float(b.mean()) if n else math.nan
    delta = float(d.mean()) if n else math.nan
    row: dict[str, Any] = {
        "metric": metric, "segment": segment, "n": n, "mean_a": mean_a, "mean_b": mean_b,
        "delta": delta, "rel_delta": delta / mean_a if n and mean_a != 0 else math.nan,
        "ci_low": math.nan, "ci_high": math.nan, "p_t": math.nan, "p_randomization": math.nan,
        "p_adjusted": math.nan, "wins": int((d > 0).sum()), "ties": int((d == 0).sum()),
        "losses": int((d < 0).sum()), "regressed": False,
        "too_few_queries": n < min_queries or n < 2,
    }
    if row["too_few_queries"]:
        return row
    if "t" in tests:
        row["p_t"] = float(stats.ttest_rel(b, a).pvalue)
    rng = np.random.default_rng(random_state)
    if "randomization" in tests:
        row["p_randomization"] = _randomization_p(d, n_resamples, rng)
    if "bootstrap" in tests:
        means = _bootstrap_means(d, n_resamples, rng)
        row["ci_low"], row["ci_high"] = (float(v) for v in np.percentile(
            means, [100 * alpha / 2, 100 * (1 - alpha / 2)]))
    return row


def compare(
    a: Any,
    b: Any,
    *,
    segments: pd.Series | None = None,
    tests: Sequence[str] = TESTS,
    n_resamples: int = 10_000,
    alpha: float = 0.05,
    random_state: Any = None,
    min_queries: int = 20,
    align: str = "error",
    metrics: Sequence[str] | None = None,
    names: tuple[str, str] = ("a", "b"),
) -> Comparison:
    """Compare a baseline ``a`` with a candidate ``b`` query by query.

    Parameters
    ----------
    a, b : object with ``to_frame()``, DataFrame, Series or path-like
        Per-query values (see :func:`per_query_frame`): query ids as the index,
        one column per metric name.  A run folder is read through
        :func:`read_per_query` (``per_query_test.csv``).
    segments : pandas.Series, optional
        Query id -> segment.  Default: the ``segment`` column of ``a`` (or ``b``)
        when there is one.  Queries without a segment count in ``"all"`` only.
    tests : sequence of {'t', 'randomization', 'bootstrap'}
        Tests to run; a left-out test leaves its columns NaN.
    n_resamples : int, default=10_000
        Resamples of the randomization test and of the bootstrap.
    alpha : float, default=0.05
        Intervals at ``1 - alpha``; ``regressed`` needs ``p_adjusted < alpha``.
    random_state : int, Generator or None
        Seed of ``numpy.random.default_rng`` (each row starts from it).
    min_queries : int, default=20
        A segment with fewer queries gets no p-values or interval
        (``too_few_queries`` is true).
    align : {'error', 'intersect'}, default='error'
        When the query sets differ: raise, or use the queries both have.
    metrics : sequence of str, optional
        Metrics to compare (default: every numeric column both sides have).
    names : (str, str), default=('a', 'b')
        Labels used in reports.

    Returns
    -------
    Comparison

    Examples
    --------
    >>> import pandas as pd
    >>> a = pd.Series([0.5, 0.6, 0.7, 0.4] * 10, name="ndcg@10")
    >>> r = compare(a, a + 0.01, n_resamples=200, random_state=0)
    >>> round(float(r.to_frame()["delta"][0]), 4), bool(r.to_frame()["p_t"][0] < 0.05)
    (0.01, True)
    """
    unknown = [t for t in tests if t not in TESTS]
    if isinstance(tests, str) or unknown:
        raise ValueError(f"tests must be a sequence of {list(TESTS)!r}, got {tests!r}")
    tests = tuple(tests)
    n_resamples = check_int(n_resamples, "n_resamples", minimum=1)
    alpha = check_real(alpha, "alpha")
    if not 0 < alpha < 1:
        raise ValueError(f"alpha must be in (0, 1), got {alpha!r}")
    min_queries = check_int(min_queries, "min_queries", minimum=0)
    if (isinstance(names, str) or not isinstance(names, Sequence) or len(names) != 2
            or not all(isinstance(n, str) for n in names)):
        raise TypeError(f"names must be two labels (baseline, candidate), got "
                        f"{short_repr(names)}")
    if isinstance(metrics, str):
        metrics = [metrics]
    if align not in ("error", "intersect"):
        raise ValueError(f"align must be 'error' or 'intersect', got {align!r}")
    if isinstance(random_state, (bool, np.bool_)) or not (
        random_state is None or isinstance(random_state, (int, np.integer, np.random.Generator))
    ):
        raise TypeError(f"random_state must be None, an int or a numpy Generator, "
                        f"got {short_repr(random_state)}")
    fa, fb = per_query_frame(a, "a"), per_query_frame(b, "b")

    only_a, only_b = fa.index.difference(fb.index), fb.index.difference(fa.index)
    if (len(only_a) or len(only_b)) and align == "error":
        raise ValueError(
            f"the query sets differ: b lacks {len(only_a)} of a's queries "
            f"(e.g. {list(only_a[:3])!r}) and a lacks {len(only_b)} of b's "
            f"(e.g. {list(only_b[:3])!r}); compare on the "
            f"{len(fa.index.intersection(fb.index))} queries both have with align='intersect' "
            "(ltr compare --intersect)"
        )
    common = fa.index.intersection(fb.index, sort=False)
    if len(common) == 0:
        raise ValueError("a and b have no query in common")
    fa, fb = fa.loc[common], fb.loc[common]

    notes: list[str] = []
    shared = [c for c in fa.columns if c != "segment" and c in fb.columns]
    if metrics is None:
        metrics = shared
        one_side = [(c, side) for side, f, other in (("a", fa, fb), ("b", fb, fa))
                    for c in f.columns if c != "segment" and c not in other.columns]
        if one_side and shared:
            text = ", ".join(f"{c!r} (only in {side})" for c, side in one_side)
            notes.append(f"Metrics not compared, present on one side only: {text}.")
            warnings.warn(f"compare: metrics present on one side only are not compared: {text}",
                          UserWarning, stacklevel=2)
    else:
        missing = [m for m in metrics if m not in shared]
        if missing:
            raise ValueError(f"metrics {missing!r} are not in both a and b (both have {shared!r})")
    if not metrics:
        raise ValueError(f"a and b share no metric column (a: {list(fa.columns)!r}, "
                         f"b: {list(fb.columns)!r})")

    if segments is None:
        seg_source = fa if "segment" in fa.columns else fb if "segment" in fb.columns else None
        seg = None if seg_source is None else seg_source["segment"]
        if "segment" in fa.columns and "segment" in fb.columns:
            sa, sb = fa["segment"].astype(object), fb["segment"].astype(object)
            differ = ~((sa == sb) | (sa.isna() & sb.isna())).to_numpy()
            if differ.any():
                q = fa.index[np.flatnonzero(differ)[0]]
                raise ValueError(
                    f"the segment columns of a and b disagree on {int(differ.sum())} queries: "
                    f"query {q!r} is {sa.loc[q]!r} in a but {sb.loc[q]!r} in b; give the "
                    "segments explicitly (segments=..., ltr compare --segments CSV)"
                )
    else:
        if not isinstance(segments, pd.Series):
            raise TypeError(f"segments must be a pandas Series (qid -> segment), "
                            f"got {type(segments).__name__}")
        seg = segments.copy()
        seg.index = seg.index.astype(str)
        seg = seg.reindex(common)
    if seg is not None and (seg.astype(str) == ALL).any():
        q = seg.index[np.flatnonzero((seg.astype(str) == ALL).to_numpy())[0]]
        raise ValueError(
            f"segments: query {q!r} is in a segment named {ALL!r}, the name of the "
            f"whole-population row; rename that segment (e.g. '{ALL}_')"
        )
    if seg is not None and seg.isna().any():
        notes.append(f"{int(seg.isna().sum())} queries have no segment (counted in 'all' only).")

    rows = []
    opts: dict[str, Any] = {"tests": tests, "n_resamples": n_resamples, "alpha": alpha,
                            "random_state": random_state, "min_queries": min_queries}
    for metric in metrics:
        va = fa[metric].to_numpy(dtype=float)
        vb = fb[metric].to_numpy(dtype=float)
        ok = ~(np.isnan(va) | np.isnan(vb))
        if not ok.all():
            notes.append(f"{metric}: {int((~ok).sum())} queries without a value on one side "
                         "are left out.")
        rows.append(_row(metric, ALL, va[ok], vb[ok], **opts))
        if seg is not None:
            s = seg.to_numpy()
            for name in sorted(pd.unique(seg.dropna()).tolist(), key=str):
                m = ok & (s == name)
                rows.append(_row(metric, str(name), va[m], vb[m], **opts))
    table = pd.DataFrame(rows, columns=list(COLUMNS))
    adjusted_on = "p_randomization" if "randomization" in tests else "p_t"
    table["p_adjusted"] = holm(table[adjusted_on].to_numpy(float))
    table["regressed"] = (table["delta"] < 0) & (table["p_adjusted"] < alpha)
    seed = random_state if isinstance(random_state, (int, np.integer)) else None
    return Comparison(
        table=table, name_a=names[0], name_b=names[1], alpha=alpha, n_resamples=n_resamples,
        random_state=None if seed is None else int(seed), tests=tests, min_queries=min_queries,
        n_only_a=len(only_a), n_only_b=len(only_b), adjusted_on=adjusted_on, notes=notes,
    )



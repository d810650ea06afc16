"""The run report's plots: training curves and the position-bias propensities."""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from ltr._compat import import_matplotlib_pyplot
from ltr._io import write_png
from ltr.metrics.names import format_metric_name


def _save_png(fig: Any, path: str | os.PathLike[str]) -> Path:
    """Lay out *fig* and write it as PNG through :func:`write_atomic`."""
    fig.tight_layout()
    return write_png(fig, path, dpi=100)


def plot_curves(
    evals_result: Mapping[str, Mapping[str, Sequence[float]]],
    path: str | os.PathLike[str],
    *,
    stages: Sequence[Mapping[str, Any]] = (),
    metric: str | None = None,
    sets: Sequence[str] | None = None,
    title: str | None = None,
) -> Path | None:
    """Plot validation nDCG per boosting round with stage boundaries marked.

    Parameters
    ----------
    evals_result : mapping
        ``{set_name: {metric_name: [value per round]}}`` as in
        ``RankingModel.evals_result``.
    path : path-like
        PNG file to write.
    stages : sequence of mapping
        Stages with ``k``, ``first_round`` and ``n_rounds``; a dashed line is
        drawn at each stage's first round (after the first) and labelled ``k=``.
    metric : str, optional
        Metric to plot (default ``"ndcg@10"`` if recorded, else the first one).
    sets : sequence of str, optional
        Eval sets to draw (default: all).
    title : str, optional

    Returns
    -------
    Path or None
        The written file, or None when there was nothing to plot.
    """
    sets = list(sets) if sets is not None else list(evals_result)
    sets = [s for s in sets if evals_result.get(s)]
    if not sets:
        return None
    available = list(evals_result[sets[0]])
    if metric is None:
        default = format_metric_name("ndcg", 10)
        metric = default if default in available else available[0]
    plt = import_matplotlib_pyplot()
    fig, ax = plt.subplots(figsize=(7.0, 4.0), dpi=100)
    try:
        for name in sets:
            values = list(evals_result[name].get(metric, []))
            if values:
                ax.plot(range(1, len(values) + 1), values, label=f"{name} {metric}", linewidth=1.5)
        ymin, ymax = ax.get_ylim()
        for i, st in enumerate(stages):
            first = int(st.get("first_round", 0))
            if i > 0:
                ax.axvline(first + 0.5, color="grey", linestyle="--", linewidth=1)
            ax.text(
                first + 1,
                ymin + 0.02 * (ymax - ymin),
                f"k={st.get('k')}",
                fontsize=8,
                color="dimgrey",
            )
        ax.set_xlabel("boosting round")
        ax.set_ylabel(metric)
        ax.set_title(title or f"{metric} per round")
        ax.grid(True, alpha=0.3)
        ax.legend(loc="lower right", fontsize=8)
        return _save_png(fig, path)
    finally:
        plt.close(fig)


def plot_propensity(
    curves: Mapping[str, Any],
    path: str | os.PathLike[str],
    *,
    counts: tuple[Any, Any] | None = None,
    min_clicks: int = 10,
) -> Path:
    """Plot propensity-like curves (learned t+/t-, IPS propensities) against position.

    Parameters
    ----------
    curves : mapping of str to array-like of float
        ``{label: value per position}`` (index 0 = position 1).
    path : path-like
        PNG file to write.
    counts : (impressions, clicks), optional
        Per position (index 0 = position 1) of the log the curves were
        estimated from.  Drawn as bars under the curves; a position with fewer
        than *min_clicks* clicks (none logged beyond the arrays' end) is drawn
        in grey, not as a measured value.
    min_clicks : int, default=10
        The fewest clicks for a position's estimates to count as measured.

    Returns
    -------
    Path
        The written file.
    """
    import numpy as np

    plt = import_matplotlib_pyplot()
    depth = max(len(list(v)) for v in curves.values())
    enough = np.ones(depth, dtype=bool)
    if counts is not None:
        clicks = np.zeros(depth, dtype=np.int64)
        logged = np.asarray(counts[1], dtype=np.int64)[:depth]
        clicks[: len(logged)] = logged
        enough = clicks >= min_clicks
        fig, (ax, bx) = plt.subplots(
            2, 1, figsize=(7.0, 5.5), dpi=100, sharex=True, gridspec_kw={"height_ratios": [3, 1.4]}
        )
    else:
        fig, ax = plt.subplots(figsize=(7.0, 4.0), dpi=100)
    try:
        for label, values in curves.items():
            v = np.asarray(list(values), dtype=np.float64)
            x = np.arange(1, len(v) + 1)
            ok = enough[: len(v)]
            (line,) = ax.plot(x, np.where(ok, v, np.nan), marker="o", markersize=3, label=label)
            if not ok.all():  # too few clicks: shown, but greyed (not a measurement)
                ax.plot(x, v, color=line.get_color(), alpha=0.25, linewidth=1)
                ax.scatter(x[~ok], v[~ok], s=10, color="lightgrey", edgecolors="grey",
                           linewidths=0.5, zorder=3)
        ax.set_ylabel("relative to position 1")
        title = "Position bias"
        if counts is not None and not enough.all():
            title += f" (grey: fewer than {min_clicks} clicks at the position)"
        ax.set_title(title, fontsize=10)
        ax.grid(True, alpha=0.3)
        ax.legend(loc="upper right", fontsize=8)
        if counts is not None:
            imp = np.asarray(counts[0], dtype=np.int64)
            xs = np.arange(1, len(imp) + 1)
            n_click = np.asarray(counts[1], dtype=np.int64)
            bx.bar(xs, imp, color="#cfd8e3", label="impressions")
            bx.bar(xs, n_click, color=np.where(n_click >= min_clicks, "#4C72B0", "#b0b0b0"),
                   label="clicks")
            bx.axhline(min_clicks, color="grey", linestyle="--", linewidth=0.8)
            bx.set_yscale("symlog", linthresh=1)
            bx.set_ylabel("count (training log)", fontsize=8)
            bx.legend(loc="upper right", fontsize=7)
            bx.grid(True, alpha=0.3)
            bx.set_xlabel("display position")
        else:
            ax.set_xlabel("display position")
        return _save_png(fig, path)
    finally:
        plt.close(fig)

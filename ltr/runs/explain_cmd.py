"""``ltr explain``: one query's TreeSHAP explanation, as a library function.

:func:`explain_query` loads a run's model, scores one query of a data file
(or of the run's own test/valid set) and returns an :class:`Explanation`: each
top-k document's contributions centred on the query's mean
(:func:`ltr.inspection.query_contributions`), plus a heat map written as
PNG.  Nothing is printed here; :mod:`ltr.cli` prints :meth:`Explanation.to_text`.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from ltr._io import write_png
from ltr._validation import check_int
from ltr.runs.config import RunError
from ltr.runs.data import load_data
from ltr.runs.folder import check_same_data, prepare_config
from ltr.runs.score_cmd import _load_scored_file, _model_and_base

__all__ = ["Explanation", "explain_query"]


@dataclass
class Explanation:
    """One query's explanation.

    Attributes
    ----------
    query : str
        The query id, as given.
    source : str
        Where the rows came from (file name or run set).
    table : DataFrame
        :func:`ltr.inspection.query_contributions` of the query: index
        ``(qid, rank)``, columns ``row``, ``score``, ``score_vs_mean`` and one
        centred contribution per feature.
    n_docs : int
        Documents of the query.
    plot : Path or None
        The heat map written.
    """

    query: str
    source: str
    table: pd.DataFrame
    n_docs: int
    plot: Path | None = None

    def top_features(self, n: int = 6) -> list[str]:
        """Return the *n* features with the largest mean |centred contribution| in the top-k."""
        feats = [c for c in self.table.columns if c not in ("row", "score", "score_vs_mean")]
        strength = self.table[feats].abs().mean().sort_values(ascending=False, kind="stable")
        return list(strength.index[:n])

    def to_text(self, n_features: int = 6) -> str:
        """Return a plain-text table: rank, score, score vs the query's mean, top features."""
        shown = self.top_features(n_features)
        frame = self.table[["score", "score_vs_mean", *shown]].copy()
        frame.index = [r for _, r in self.table.index]
        frame.index.name = "rank"
        head = (
            f"query {self.query} ({self.source}): top {len(frame)} of {self.n_docs} documents; "
            "contributions centred on the query's mean (they sum to score_vs_mean over all "
            "features; the largest shown)"
        )
        return head + "\n" + frame.to_string(float_format=lambda v: f"{v:+.4f}")


def explain_query(
    model_path: str | os.PathLike[str],
    query: Any,
    data_path: str | os.PathLike[str] | None = None,
    *,
    k: int = 10,
    fmt: str = "auto",
    label: str | None = None,
    qid: str | None = None,
    plot: str | os.PathLike[str] | None = None,
) -> Explanation:
    """Explain one query: TreeSHAP contributions of its top-*k* documents vs the query's mean.

    Parameters
    ----------
    model_path : path-like
        A finished run folder or a model file (``RankingModel.save``).
    query : scalar
        The query id (compared as text).
    data_path : path-like, optional
        LETOR/CSV/parquet file; default: the run's test set (else valid).
    k : int, default=10
        Documents shown, best first.
    fmt, label, qid
        As for ``ltr evaluate``.
    plot : path-like, optional
        Heat map PNG; default ``<run>/explain/query_<Q>.png`` for a run folder,
        none for a bare model file.

    Returns
    -------
    Explanation
    """
    from ltr.inspection import contributions, plot_query, query_contributions

    try:
        k = check_int(k, "--k", minimum=1)
    except (TypeError, ValueError) as exc:
        raise RunError(str(exc)) from exc
    model, run_dir, base = _model_and_base(model_path)
    if data_path is None:
        if run_dir is None:
            raise RunError("--data is required when the model is a model file (not a run folder)")
        sets = load_data(prepare_config(base))
        check_same_data(run_dir, sets)
        source = "test" if "test" in sets else "valid" if "valid" in sets else "train"
        ds = sets[source]
    else:
        _, ds = _load_scored_file(
            model, run_dir, base, data_path, fmt=fmt, label=label, qid=qid, n_features=None
        )
        source = Path(data_path).name
    ids = np.asarray(ds.qid)
    mask = np.asarray([str(v) for v in ids]) == str(query)
    if not mask.any():
        shown = ", ".join(str(v) for v in pd.unique(ids)[:10])
        raise RunError(f"--query {query!r} is not in {source} (its first query ids: {shown})")
    rows = np.flatnonzero(mask)
    contrib = contributions(model, ds.X[rows])
    contrib.columns = [*ds.feature_names, "bias"]
    contrib.index = rows
    table = query_contributions(contrib, ids[rows], k=k)
    out = Explanation(str(query), source, table, int(rows.size))
    target = Path(plot) if plot is not None else (
        None if run_dir is None else run_dir / "explain" / f"query_{query}.png"
    )
    if target is not None:
        target.parent.mkdir(parents=True, exist_ok=True)
        write_png(plot_query(table), target, dpi=100)
        out.plot = target
    return out

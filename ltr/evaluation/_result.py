"""The result of qrels/run evaluation: per-query values, means, intervals, tables."""

from __future__ import annotations

import json
import math
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pandas as pd

from ltr._io import to_jsonable, write_atomic
from ltr._validation import check_real
from ltr.metrics.empty_queries import EmptyQueryRule


def _t_quantile(n: int, level: float) -> float:
    from scipy.stats import t

    return float(t.ppf(0.5 + level / 2.0, n - 1))


@dataclass
class EvaluationResult:
    """Per-query metric values of one run against one set of judgments.

    The per-query frame is the core: every summary derives from it, and
    comparisons across runs pair queries by its index.

    Attributes
    ----------
    per_query : DataFrame
        One row per evaluated query (index ``qid``, ids as given: strings from
        files), one column per metric, named exactly as passed.
    metrics : list of str
        The metric names, in the order passed.
    missing_queries : list
        Queries of the qrels without any row in the run (scored 0 and kept in
        ``per_query`` when ``missing="zero"``, left out otherwise).
    convention : str
        ``"trec_eval"`` or ``"ranx"``.
    relevance_level : float
        Relevance threshold of the binary metrics.
    missing : str
        ``"skip"`` or ``"zero"``.
    n_without_relevant : int
        Evaluated queries with no relevant judgment (no positive gain): every
        metric scores them 0 under trec_eval's and ranx's rule
        (:attr:`empty_rule`).
    """

    per_query: pd.DataFrame
    metrics: list[str]
    missing_queries: list[Any] = field(default_factory=list)
    convention: str = "trec_eval"
    relevance_level: float = 1.0
    missing: str = "skip"
    n_without_relevant: int = 0

    @property
    def empty_rule(self) -> EmptyQueryRule:
        """The empty-query rule and how many evaluated queries it applied to."""
        return EmptyQueryRule(self.convention, 0.0, self.n_without_relevant, self.n_queries)

    @property
    def n_queries(self) -> int:
        """Number of queries averaged."""
        return int(self.per_query.shape[0])

    @property
    def mean(self) -> dict[str, float]:
        """Mean over queries, per metric (NaN when no query was evaluated)."""
        return {m: float(self.per_query[m].mean()) if self.n_queries else math.nan
                for m in self.metrics}

    def confidence_interval(self, level: float = 0.95) -> dict[str, tuple[float, float]]:
        """Student-t interval of each mean: ``mean -+ t * std / sqrt(n)``.

        Parameters
        ----------
        level : float, default=0.95
            Coverage, in (0, 1).

        Returns
        -------
        dict
            Metric name -> ``(low, high)``; ``(nan, nan)`` with fewer than 2 queries.
        """
        level = check_real(level, "level", minimum=0.0, maximum=1.0, exclusive_minimum=True)
        n = self.n_queries
        out: dict[str, tuple[float, float]] = {}
        for m in self.metrics:
            if n < 2:
                out[m] = (math.nan, math.nan)
                continue
            values = self.per_query[m].to_numpy()
            half = _t_quantile(n, level) * float(values.std(ddof=1)) / math.sqrt(n)
            mean = float(values.mean())
            out[m] = (mean - half, mean + half)
        return out

    @property
    def ci(self) -> dict[str, tuple[float, float]]:
        """95 % confidence interval of each mean (see :meth:`confidence_interval`)."""
        return self.confidence_interval(0.95)

    def to_frame(self) -> pd.DataFrame:
        """Return the per-query values (a copy): index ``qid``, one column per metric."""
        return self.per_query.copy()

    def summary(self, level: float = 0.95) -> pd.DataFrame:
        """One row per metric: ``mean``, ``std``, ``ci_low``, ``ci_high``, ``n_queries``."""
        ci = self.confidence_interval(level)
        rows = {
            m: {
                "mean": self.mean[m],
                "std": float(self.per_query[m].std(ddof=1)) if self.n_queries > 1 else math.nan,
                "ci_low": ci[m][0],
                "ci_high": ci[m][1],
                "n_queries": self.n_queries,
            }
            for m in self.metrics
        }
        frame = pd.DataFrame.from_dict(rows, orient="index")
        frame["n_empty"] = self.n_without_relevant
        frame.attrs["empty"] = self.empty_rule.describe()
        return frame

    def to_dict(self, *, per_query: bool = True) -> dict[str, Any]:
        """Return plain data: settings, means, intervals, missing queries, per-query values."""
        out: dict[str, Any] = {
            "convention": self.convention,
            "relevance_level": self.relevance_level,
            "missing": self.missing,
            "n_queries": self.n_queries,
            "metrics": list(self.metrics),
            "mean": self.mean,
            "ci95": {m: list(v) for m, v in self.ci.items()},
            "missing_queries": list(self.missing_queries),
            "empty_queries": self.empty_rule.to_dict(),
        }
        if per_query:
            out["per_query"] = {
                str(q): dict(zip(self.metrics, map(float, row)))
                for q, row in zip(self.per_query.index, self.per_query.to_numpy())
            }
        return to_jsonable(out)

    def to_json(self, *, per_query: bool = True, indent: int | None = 2) -> str:
        """:meth:`to_dict` as JSON text."""
        return json.dumps(self.to_dict(per_query=per_query), indent=indent)

    def to_markdown(self, digits: int = 4) -> str:
        """Return a markdown table: metric, mean, 95 % interval, number of queries."""
        lines = ["| metric | mean | 95% CI | queries |", "|---|---:|---:|---:|"]
        ci = self.ci
        for m in self.metrics:
            low, high = ci[m]
            interval = "n/a" if math.isnan(low) else f"[{low:.{digits}f}, {high:.{digits}f}]"
            lines.append(f"| {m} | {self.mean[m]:.{digits}f} | {interval} | {self.n_queries} |")
        lines.append("")
        lines.append(self.empty_rule.describe() + ".")
        if self.missing_queries:
            how = "scored 0" if self.missing == "zero" else "left out"
            lines.append("")
            lines.append(f"{len(self.missing_queries)} qrels queries missing from the run ({how}).")
        return "\n".join(lines) + "\n"

    def save(self, path: str | os.PathLike[str]) -> Path:
        """Write :meth:`to_json` to *path* (atomically)."""
        return write_atomic(path, self.to_json())

"""``ltr compare``: compare two runs' per-query values (the library side of the command).

Per-query file format
---------------------
A run folder holds ``per_query_test.csv`` (and ``per_query_valid.csv`` when it
has a validation split): UTF-8 CSV with a header row and

* ``qid``: the query id (read as a string), once per query;
* ``segment`` (optional): the query's segment, constant per query;
* then one numeric column per metric, named as the run's metric keys
  (``ndcg@10``, ``map``, ...); an empty cell is a query without a value (for
  instance an nDCG query with no relevant document under ``empty='skip'``).

Example::

    qid,segment,ndcg@5,ndcg@10
    101,head,0.8123,0.8450
    102,tail,0.0000,0.1931

The two runs must hold the same queries (``align='intersect'`` relaxes that).
"""

from __future__ import annotations

import json
import os
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from ltr.evaluation.comparison import TESTS, Comparison, compare, read_per_query

__all__ = ["CompareResult", "compare_runs"]


@dataclass
class CompareResult:
    """What :func:`compare_runs` returns.

    Attributes
    ----------
    comparison : Comparison
        The statistics (``comparison.to_frame()``).
    files : dict of str to Path
        Files written (empty without ``out``).
    empty : dict of str to str
        Per run folder: the empty-query rule of its per-query values and how
        many queries it applied to (from its ``metrics.json``).
    """

    comparison: Comparison
    files: dict[str, Path] = field(default_factory=dict)
    empty: dict[str, str] = field(default_factory=dict)

    @property
    def regressed(self) -> bool:
        """Whether any metric x segment regressed significantly."""
        return self.comparison.any_regression

    def summary_lines(self) -> list[str]:
        """Short lines a CLI can print: one per row, regressions marked."""
        out = []
        for r in self.comparison.to_frame().itertuples():
            flag = "  REGRESSED" if r.regressed else ("  (too few queries)"
                                                      if r.too_few_queries else "")
            out.append(f"{r.metric:<12} {r.segment:<16} n={r.n:<6} delta={r.delta:+.4f} "
                       f"CI=[{r.ci_low:+.4f}, {r.ci_high:+.4f}] p_adj={r.p_adjusted:.4g}{flag}")
        c = self.comparison
        if c.n_only_a or c.n_only_b:
            out.append(f"note: compared on the queries both runs have; left out {c.n_only_a} "
                       f"only in A and {c.n_only_b} only in B")
        out += [f"note: {note}" for note in c.notes]
        out += [f"note: {name}: {text}" for name, text in self.empty.items()]
        return out


def compare_runs(
    run_a: str | os.PathLike[str] | Any,
    run_b: str | os.PathLike[str] | Any,
    *,
    split: str = "test",
    segments: str | os.PathLike[str] | pd.Series | None = None,
    tests: Sequence[str] = TESTS,
    n_resamples: int = 10_000,
    alpha: float = 0.05,
    random_state: int | None = 0,
    min_queries: int = 20,
    align: str = "error",
    metrics: Sequence[str] | None = None,
    out: str | os.PathLike[str] | None = None,
) -> CompareResult:
    """Compare two run folders (or per-query CSVs / result objects) and write a report.

    Parameters
    ----------
    run_a, run_b : path-like or per-query values
        Baseline and candidate: run folders (``per_query_<split>.csv``, format in
        the module docstring), CSV files, or anything
        :func:`ltr.evaluation.comparison.compare` takes.
    split : {'test', 'valid'}, default='test'
    segments : path-like or pandas.Series, optional
        A CSV with columns ``qid, segment``, or a Series qid -> segment;
        default: the runs' own ``segment`` column.
    tests, n_resamples, alpha, random_state, min_queries, align, metrics
        As in :func:`ltr.evaluation.comparison.compare` (``random_state`` defaults to 0 here so
        that a command is reproducible).
    out : path-like, optional
        Folder for ``report.md``, ``report.html``, ``forest.png``,
        ``comparison.csv`` and ``comparison.json``, written as one set: an
        ``INCOMPLETE`` marker while writing, a ``manifest.json`` when complete.

    Returns
    -------
    CompareResult
    """
    def load(x: Any) -> Any:
        return read_per_query(x, split) if isinstance(x, (str, os.PathLike)) else x

    seg: pd.Series | None
    if out is not None and Path(out).exists() and not Path(out).is_dir():
        raise ValueError(f"--out: {str(out)!r} is a file; give a folder for the report files")
    if isinstance(segments, (str, os.PathLike)):
        seg = _read_segments(Path(segments))
    else:
        seg = segments
    names = tuple(Path(x).name if isinstance(x, (str, os.PathLike)) else n
                  for x, n in ((run_a, "a"), (run_b, "b")))
    comparison = compare(
        load(run_a), load(run_b), segments=seg, tests=tests, n_resamples=n_resamples,
        alpha=alpha, random_state=random_state, min_queries=min_queries, align=align,
        metrics=metrics, names=(names[0], names[1]),
    )
    files: dict[str, Path] = {}
    if out is not None:
        files = comparison.save(out)
    empty = {
        n: text for n, x in zip(names, (run_a, run_b))
        if (text := _empty_rule_text(x, split)) is not None
    }
    return CompareResult(comparison=comparison, files=files, empty=empty)


def _empty_rule_text(run: Any, split: str) -> str | None:
    """Return the empty-query rule a run folder's ``metrics.json`` states for *split*."""
    if not isinstance(run, (str, os.PathLike)) or not (Path(run) / "metrics.json").is_file():
        return None
    try:
        metrics = json.loads((Path(run) / "metrics.json").read_text(encoding="utf-8"))
    except ValueError:
        return None
    rule = (metrics.get("empty_queries") or {}).get(split)
    return rule.get("text") if isinstance(rule, dict) else None


def _read_segments(path: Path) -> pd.Series:
    """Read the ``qid,segment`` CSV as a Series; errors name the file, line and value."""
    if path.is_dir():
        raise ValueError(f"--segments: {str(path)!r} is a folder, not a qid,segment CSV")
    if not path.is_file():
        raise FileNotFoundError(f"--segments: file not found: {str(path)!r}")
    try:
        table = pd.read_csv(path, dtype=str)
    except (ValueError, UnicodeDecodeError) as exc:  # pandas' EmptyDataError and parser errors
        first = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        raise ValueError(f"--segments: {str(path)!r} is not a qid,segment CSV: {first}") from None
    missing = {"qid", "segment"} - set(table.columns)
    if missing:
        raise ValueError(f"--segments: {str(path)!r} lacks columns {sorted(missing)!r} "
                         f"(its columns: {list(map(str, table.columns))!r})")
    if table["qid"].isna().any():
        row = int(np.flatnonzero(table["qid"].isna().to_numpy())[0])
        raise ValueError(f"--segments: {str(path)!r}, line {row + 2}: the qid is missing")
    dup = table["qid"].duplicated()
    if dup.any():
        row = int(np.flatnonzero(dup.to_numpy())[0])
        raise ValueError(f"--segments: {str(path)!r}, line {row + 2}: query "
                         f"{table['qid'].iloc[row]!r} appears more than once")
    return table.set_index("qid")["segment"]


def segments_from_column(run: str | os.PathLike[str], split: str, column: str) -> pd.Series:
    """Return the qid -> segment Series of column *column* of a run's per-query file."""
    path = Path(run)
    if path.is_dir():
        path = path / f"per_query_{split}.csv"
    if not path.is_file():
        raise ValueError(f"--segment-column: {str(path)!r} not found (a run folder or a CSV)")
    table = pd.read_csv(path, dtype={"qid": str})
    if column not in table.columns:
        raise ValueError(
            f"--segment-column: column {column!r} not in {str(path)!r} "
            f"(columns: {', '.join(map(str, table.columns))})"
        )
    return table.set_index("qid")[column]

"""Data of a run: the train/valid/test sets a config describes.

Synthetic data, LETOR/LibSVM files (one feature base and count for the whole
run: later files are read with the training file's feature count) and tabular
files (CSV/parquet, with objective grade mappings).  Sets without a file of
their own are split from the training data by query.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np

from ltr.datasets import RankingData
from ltr.runs.config import RunConfig, RunError, SyntheticClicksConfig

__all__ = ["LOGGED", "SETS", "frame_data", "load_data", "logged_column"]

SETS = ("train", "valid", "test")
#: The logged-ranking columns (``data.<name>``), kept as the sets' fields of the same name.
LOGGED = ("position", "click", "doc", "propensity")


def logged_column(ds: RankingData, name: str, set_name: str = "train") -> np.ndarray:
    """Return the set's ``position``, ``click``, ``doc`` or ``propensity`` field.

    Raises
    ------
    RunError
        Naming ``data.<name>`` when the set has no such column.
    """
    values = getattr(ds, name)
    if values is None:
        raise RunError(
            f"data.{name}: the {set_name} set has no {name} column; name it in data.{name} "
            "(parquet/csv) or simulate clicks with data.synthetic.clicks"
        )
    return np.asarray(values)


def _wrap_data_error(label: str, exc: Exception) -> RunError:
    msg = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
    return RunError(f"{label}: {msg}")


def _split_queries(
    n_queries: int, fractions: Mapping[str, float], seed: int
) -> dict[str, np.ndarray]:
    """Query-level split: a seeded permutation cut into the requested fractions."""
    perm = np.random.default_rng(seed).permutation(n_queries)
    out: dict[str, np.ndarray] = {}
    start = 0
    for name, frac in fractions.items():
        n = round(frac * n_queries)
        if frac > 0:
            n = max(n, 1)
        out[name] = np.sort(perm[start : start + n])
        start += n
    out["train"] = np.sort(perm[start:])
    if out["train"].size == 0:
        raise RunError(f"data.split: nothing left for training out of {n_queries} queries")
    return out


def _read_tabular(cfg: RunConfig, path: str, key: str) -> RankingData:
    from ltr.datasets import read_table
    from ltr.runs.cluster_config import is_glob, read_files

    try:  # a glob of parquet files is read file by file, in name order
        df = read_files(path) if is_glob(path) else read_table(path)
    except Exception as exc:
        raise _wrap_data_error(f"{key} ({path})", exc) from exc
    return frame_data(cfg, df, path, key)


def frame_data(cfg: RunConfig, df: Any, path: str, key: str) -> RankingData:
    """Turn a pandas DataFrame read from *path* into a set, with the columns ``cfg.data`` names.

    Used for tabular files, and for the held-out sets a distributed run collects.
    """
    import pandas as pd

    from ltr.datasets import from_frame

    data = cfg.data
    label = f"{key} ({path})"
    cols = [str(c) for c in df.columns]
    shown = ", ".join(cols[:15]) + (", ..." if len(cols) > 15 else "")
    # with objectives, a missing label column means: rank by the first objective's grades;
    # with clicks, it means: clicks are all there is (valid/test metrics on clicks too)
    label_from_objective = bool(data.objectives) and data.label not in df.columns
    label_from_click = data.click is not None and data.label not in df.columns
    for field, column in (
        ("data.label", None if label_from_objective or label_from_click else data.label),
        ("data.qid", data.qid),
        ("data.segment", data.segment),
        ("data.position", data.position),
        ("data.click", data.click),
        ("data.doc", data.doc),
        ("data.propensity", data.propensity),
    ):
        if column is not None and column not in df.columns:
            raise RunError(f"{field}: column {column!r} not found in {path} (columns: {shown})")
    for f in data.features or []:
        if f not in df.columns:
            raise RunError(f"data.features: column {f!r} not found in {path} (columns: {shown})")
    for c in data.categorical or []:
        if c in df.columns and not (
            pd.api.types.is_numeric_dtype(df[c]) or pd.api.types.is_bool_dtype(df[c])
        ):
            raise RunError(
                f"data.categorical: column {c!r} of {path} holds {df[c].dtype} values; a run "
                "needs category ids (numbers) in its files: map each category to an integer "
                "first (LambdaMARTRanker takes text in pandas 'category' columns)"
            )
    labels: dict[str, str] = {}
    used_raw: set[str] = set()
    if data.objectives:
        for name, oc in data.objectives.items():
            mapping = oc.grade_mapping()
            if mapping is not None:
                for col in mapping.columns:
                    if col not in df.columns:
                        raise RunError(
                            f"data.objectives.{name}.grades: raw column {col!r} "
                            f"not found in {path} (columns: {shown})"
                        )
                try:
                    grades = mapping({c: df[c].to_numpy() for c in mapping.columns})
                except (TypeError, ValueError) as exc:
                    raise RunError(f"data.objectives.{name}.grades ({path}): {exc}") from exc
                used_raw.update(mapping.columns)
                column = f"__grade_{name}"
                df[column] = grades
            else:
                column = oc.column or name
                if column not in df.columns:
                    raise RunError(
                        f"data.objectives.{name}.column: column {column!r} not found in {path} "
                        f"(columns: {shown})"
                    )
            labels[name] = column
    label_column = next(iter(labels.values())) if label_from_objective else data.label
    if label_from_click and not label_from_objective and data.click is not None:
        label_column = data.click
    logged = {f"data.{n}": getattr(data, n) for n in LOGGED if getattr(data, n) is not None}
    labels.update(logged)  # read and checked like label columns, then kept as named fields
    features = data.features
    if features is None:
        skip = {label_column, data.qid, data.segment, *labels.values(), *used_raw}
        features = [c for c in df.columns if c not in skip]
    try:
        ds = from_frame(
            df,
            label=label_column,
            qid=data.qid,
            features=features,
            labels=labels,
            segment=data.segment,
            sort=False,  # a qid that restarts is an error naming the file and line, never merged
            source=path,
            sort_hint=None,
        )
        if not logged:
            return ds
        import dataclasses

        kept = {k: v for k, v in ds.labels.items() if k not in logged}
        fields: dict[str, Any] = {key.split(".", 1)[1]: ds.labels[key] for key in logged}
        return dataclasses.replace(ds, labels=kept, **fields)
    except (TypeError, ValueError) as exc:
        raise _wrap_data_error(label, exc) from exc


def _simulated_log(ds: RankingData, c: SyntheticClicksConfig, seed: int) -> RankingData:
    """One list per query and session: rows in displayed order, true grades kept as ``y``."""
    from ltr.clicks import simulate_cascade, simulate_pbm

    rng = np.random.default_rng(seed)
    logger = ds.y + c.logger_noise * rng.standard_normal(ds.n_rows)
    common: dict[str, Any] = {"offsets": ds.offsets, "logging_scores": logger,
                              "temperature": c.temperature, "n_sessions": c.sessions,
                              "random_state": seed}
    grades = ds.y.astype(np.int64)
    if c.model == "pbm":
        log = simulate_pbm(grades, examination=c.examination, **common)
    else:
        log = simulate_cascade(grades, abandon=c.abandon, **common)
    rows = log.row
    labels = {name: col[rows] for name, col in ds.labels.items()}
    return RankingData(
        X=ds.X[rows],
        y=ds.y[rows],
        qid=np.repeat(np.arange(len(log.offsets) - 1), np.diff(log.offsets)),
        feature_names=list(ds.feature_names),
        labels=labels,
        segments=None if ds.segments is None else ds.segments[rows],
        position=log.position,
        click=log.click,
        doc=rows,
    )


def _read_letor_files(
    paths: Mapping[str, str], keys: Mapping[str, str], n_features: int | None
) -> dict[str, RankingData]:
    """All LETOR files of a run with one feature-index base and one feature count."""
    from ltr.datasets import load_letor_files

    try:
        loaded = load_letor_files(dict(paths), n_features=n_features)
    except Exception as exc:
        text = str(exc)
        name = next((n for n, p in paths.items() if str(p) in text), next(iter(paths)))
        raise _wrap_data_error(f"{keys[name]} ({paths[name]})", exc) from exc
    return dict(loaded)


def load_data(cfg: RunConfig, *, keys: Mapping[str, str] | None = None) -> dict[str, RankingData]:
    """Load the train/valid/test sets described by ``cfg.data``.

    Sets without their own file are split from the training data by query
    (``data.split`` fractions, seeded by ``data.split.seed`` or ``seed``).
    A set with fraction 0 and no file is left out.

    Parameters
    ----------
    cfg : RunConfig
        The run's config (data paths resolved).
    keys : mapping of str to str, optional
        What error messages call each set's file (default ``data.<set>``; ``ltr
        evaluate`` passes ``{"train": "--data"}``).

    Returns
    -------
    dict of str to RankingData
        Keys ``"train"`` and, when present, ``"valid"`` and ``"test"``.
    """
    data = cfg.data
    sets: dict[str, RankingData] = {}

    def key_of(name: str) -> str:
        return (keys or {}).get(name, f"data.{name}")

    if data.source == "synthetic":
        from ltr.synthetic import make_ranking

        s = data.synthetic
        full = make_ranking(
            s.n_queries,
            n_features=s.n_features,
            mean_docs=s.mean_docs,
            max_docs=s.max_docs,
            objectives=tuple(data.objectives) if data.objectives else None,
            n_segments=s.n_segments,
            n_categorical=s.n_categorical,
            random_state=cfg.seed,
        )
        sets["train"] = full
    else:
        paths = {name: getattr(data, name) for name in SETS if getattr(data, name) is not None}
        if data.source == "letor":
            # one feature base and one feature count for all files of the run
            keys_used = {name: key_of(name) for name in paths}
            sets.update(_read_letor_files(paths, keys_used, data.n_features))
        else:
            for name, path in paths.items():
                sets[name] = _read_tabular(cfg, path, key_of(name))
    train = sets["train"]
    if data.max_queries is not None and train.n_queries > data.max_queries:
        train = sets["train"] = train.subset(np.arange(data.max_queries))
    missing = {
        n: getattr(data.split, n)
        for n in ("valid", "test")
        if n not in sets and getattr(data.split, n) > 0
    }
    if missing:
        seed = data.split.seed if data.split.seed is not None else cfg.seed
        parts = _split_queries(train.n_queries, missing, seed)
        for name in missing:
            sets[name] = train.subset(parts[name])
        sets["train"] = train.subset(parts["train"])
    clicks = data.synthetic.clicks if data.source == "synthetic" else None
    if clicks is not None:  # after the split by query: a query's sessions stay in one set
        for i, name in enumerate(SETS):
            if name in sets:
                sets[name] = _simulated_log(sets[name], clicks, cfg.seed + 7919 * (i + 1))
    for name, ds in sets.items():
        if name != "train" and ds.n_features != sets["train"].n_features:
            raise RunError(
                f"data.{name}: has {ds.n_features} features "
                f"but data.train has {sets['train'].n_features}"
            )
    return {n: sets[n] for n in SETS if n in sets}

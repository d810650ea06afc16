"""Checks of a whole config that span sections (pydantic validates one section at a time).

Run by :func:`ltr.runs.config.parse_config` after the schema: every message
names the config key, the value and the fix, so ``ltr validate`` reports what
``ltr train`` would otherwise meet later.
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING

from ltr.runs.errors import ConfigError
from ltr.runs.overrides import got

if TYPE_CHECKING:  # pragma: no cover
    from ltr.runs.config import RunConfig

__all__ = ["check_consistency"]


def check_consistency(cfg: RunConfig, label: str | None) -> None:
    """Run the checks that span sections (pydantic validators see one section at a time)."""
    where = f"{label}: " if label else ""
    model, data = cfg.model, cfg.data
    # the training parameters' combinations are the estimator's rule (RunConfig validates
    # them with ltr.build.validate_settings); here: what they need from the data
    _check_position_bias(cfg, where)
    if model.objectives is not None:
        known = list(data.objectives or {})
        for name in model.objectives:
            if name not in known:
                raise ConfigError(
                    f"{where}model.objectives.{name}: the composite objective trains on "
                    f"data.objectives, which has {known or 'none'}; name one of those"
                )
    if cfg.evaluation.per_segment and data.source in ("letor",):
        raise ConfigError(f"{where}evaluation.per_segment: LETOR files have no segment column")
    if cfg.evaluation.per_segment and data.source in ("parquet", "csv") and data.segment is None:
        raise ConfigError(
            f"{where}evaluation.per_segment: true needs data.segment (the segment column)"
        )
    if cfg.evaluation.per_segment and data.source == "synthetic" and data.synthetic.n_segments < 1:
        raise ConfigError(
            f"{where}evaluation.per_segment: true needs data.synthetic.n_segments >= 1"
        )
    if data.source == "synthetic" and data.objectives:
        for name, oc in data.objectives.items():
            for attr in ("column", "grades"):
                if getattr(oc, attr) is not None:
                    raise ConfigError(
                        f"{where}data.objectives.{name}.{attr}: synthetic data grades each "
                        f"objective itself; {attr} applies to tabular data (parquet/csv), "
                        f"got {got(getattr(oc, attr))}"
                    )
    if data.source == "letor" and data.objectives:
        raise ConfigError(
            f"{where}data.objectives: LETOR files hold one label; "
            "objectives need parquet/csv or synthetic"
        )
    if data.source == "synthetic" and data.synthetic.max_docs < data.synthetic.mean_docs:
        raise ConfigError(
            f"{where}data.synthetic.max_docs: must be >= mean_docs ({data.synthetic.mean_docs}), "
            f"got {data.synthetic.max_docs}"
        )
    ranked = [m for m in cfg.evaluation.metrics if not m.startswith("ndcg")]
    if ranked and cfg.evaluation.convention == "sklearn":
        raise ConfigError(
            f"{where}evaluation.metrics: {ranked[0]} is not defined under the sklearn convention "
            "(it averages over tied orders); use lightgbm or xgboost, or drop it"
        )
    if data.source == "synthetic":
        _check_synthetic_size(cfg, where)
        imp = cfg.importance
        n_cat = data.synthetic.n_categorical
        known_features = {f"f{j + 1}" for j in range(data.synthetic.n_features)}
        known_features |= {f"c{j + 1}" for j in range(n_cat)}
        has = f"f1..f{data.synthetic.n_features}" + (f" and c1..c{n_cat}" if n_cat else "")
        named = [("data.categorical", f) for f in data.categorical or []]
        if imp.enabled:
            named += [("importance.features", f) for f in imp.features or []]
            for g, cols in (imp.groups or {}).items():
                named += [(f"importance.groups.{g}", f) for f in cols]
        for key, feature in named:
            if feature not in known_features:
                raise ConfigError(
                    f"{where}{key}: unknown feature {feature!r}; synthetic data has {has}"
                )


def _check_position_bias(cfg: RunConfig, where: str) -> None:
    """Unbiased training and IPS evaluation need positions (and clicks) from tabular data."""
    data, ips = cfg.data, cfg.evaluation.ips
    unbiased = cfg.settings.unbiased
    ours = cfg.settings.objective == "lambdarank"
    tabular = data.source in ("parquet", "csv")
    for key, column in (
        ("data.position", data.position), ("data.click", data.click), ("data.doc", data.doc),
        ("data.propensity", data.propensity),
    ):
        if column is not None and not tabular:
            raise ConfigError(
                f"{where}{key}: {data.source} data has no {key.split('.')[1]} column; "
                f"positions and clicks come from parquet/csv files, got {got(column)}"
            )
    logged = cfg.logged
    for_ips = ips is not None and ips.propensity == "data"
    if "propensity" in logged and unbiased == "auto" and not for_ips:
        raise ConfigError(
            f"{where}data.propensity: model.unbiased: auto estimates the propensities it "
            "compares methods with; drop data.propensity, set model.unbiased: true, or use "
            "them for evaluation (evaluation.ips.propensity: data)"
        )
    if "propensity" in logged and not (unbiased and ours) and not for_ips:
        raise ConfigError(
            f"{where}data.propensity: per-row propensities weight the pairs of ltr's objective "
            "or the IPS metrics; set model.unbiased: true (with model.objective: lambdarank or "
            "unset) or evaluation.ips.propensity: data, or drop data.propensity"
        )
    if "propensity" in logged and cfg.settings.propensity is not None:
        raise ConfigError(
            f"{where}data.propensity: propensities are given twice, per row (data.propensity) "
            "and per position (model.propensity); give one of them"
        )
    if cfg.settings.position_term and "position" not in logged:
        raise ConfigError(
            f"{where}model.position_term: true needs data.position (the display-position "
            "column of the logged ranking, 1 = top) in parquet/csv data, or "
            "data.synthetic.clicks"
        )
    if unbiased and "position" not in logged:
        raise ConfigError(
            f"{where}model.unbiased: {'auto' if unbiased == 'auto' else 'true'} needs "
            "data.position (the display-position column of the logged ranking, 1 = top) in "
            "parquet/csv data, or data.synthetic.clicks"
        )
    if ips is not None:
        if not {"position", "click"} <= logged:
            raise ConfigError(
                f"{where}evaluation.ips: needs data.position and data.click (the logged "
                "ranking's positions and clicks of valid/test), or data.synthetic.clicks"
            )
        if ips.propensity == "data" and "propensity" not in logged:
            raise ConfigError(
                f"{where}evaluation.ips.propensity: 'data' reads each row's examination "
                "propensity from data.propensity (a column of the parquet/csv data); set it, or "
                "use 'em', 'learned' or a list of propensities per position"
            )
        if ips.propensity == "em" and "doc" not in logged:
            raise ConfigError(
                f"{where}evaluation.ips.propensity: 'em' estimates propensities from documents "
                "logged at several positions and needs data.doc (the document id column); or "
                "give a list of propensities, or 'learned'"
            )
        if ips.propensity == "learned" and unbiased == "auto":
            raise ConfigError(
                f"{where}evaluation.ips.propensity: 'learned' takes the t+ of ltr's unbiased "
                "objective, which model.unbiased: auto may not choose; use 'em' or a list of "
                "propensities"
            )
        if ips.propensity == "learned" and not (unbiased and ours):
            raise ConfigError(
                f"{where}evaluation.ips.propensity: 'learned' takes the t+ that ltr's unbiased "
                "objective learns (model.unbiased: true, objective: lambdarank or null); use "
                "'em' or a list of propensities"
            )


def _check_synthetic_size(cfg: RunConfig, where: str) -> None:
    """Refuse a synthetic set that cannot fit in this machine's memory, before generating it."""
    syn = cfg.data.synthetic
    rows = syn.n_queries * syn.mean_docs
    need = rows * (syn.n_features + 4) * 8  # float64 features plus labels, qid, scores
    total = _physical_memory()
    if total is not None and need > total // 2:
        raise ConfigError(
            f"{where}data.synthetic: about {rows:,} rows x {syn.n_features} features needs "
            f"~{need / 2**30:.1f} GiB, more than half of this machine's "
            f"{total / 2**30:.1f} GiB; lower n_queries, mean_docs or n_features"
        )


def _physical_memory() -> int | None:
    """Bytes of physical memory, or None where the platform does not say."""
    try:
        return int(os.sysconf("SC_PAGE_SIZE")) * int(os.sysconf("SC_PHYS_PAGES"))
    except (AttributeError, OSError, ValueError):
        return None

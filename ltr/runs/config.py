"""Run configuration: a pydantic schema loaded from YAML.

A run is described by one YAML file with the sections ``data``, ``model``,
``evaluation``, ``importance``, ``search`` (optional), ``output`` and
``seed``.  The ``model`` section's keys are the parameters of
:class:`ltr.estimator.LambdaMARTRanker` (generated from its signature, see
:mod:`ltr.runs.training_config`).  Everything is validated before any work starts:
unknown keys and invalid values raise :class:`ConfigError` whose message is one
line per problem, naming the dotted field path and the offending value::

    configs/progressive.yaml: model.schedule.steps[1].k: must be >= 1, got 0

``--set key.path=value`` overrides (see :func:`apply_overrides`) are applied to
the raw mapping before validation, so they are checked the same way.

Relative data paths are resolved by :func:`resolve_data_paths` against, in
order, the current working directory, the config file's folder and that
folder's parent (the repository root for the shipped ``configs/*.yaml``); the
first location where the file exists wins.  The resolved (absolute) paths are
what a run folder's ``config.yaml`` records.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import (
    Field,
    PrivateAttr,
    ValidationError,
    model_validator,
)

from ltr._compat import import_yaml
from ltr._validation import check_eval_at
from ltr.build import TrainSettings, validate_settings
from ltr.runs._schema_errors import format_validation_error
from ltr.runs._section import MAX_INT, Section
from ltr.runs.checks import check_consistency
from ltr.runs.cluster_config import (
    ClusterConfig,
    LocalClusterConfig,
    is_glob,
    path_candidates,
    resolve_glob,
)
from ltr.runs.data_config import (
    DataConfig,
    ObjectiveColumnConfig,
    SplitConfig,
    SyntheticClicksConfig,
    SyntheticConfig,
)
from ltr.runs.errors import ConfigError, RunError, RunInterrupted
from ltr.runs.overrides import apply_overrides, got, parse_override, yaml_reason
from ltr.runs.search_config import MlflowConfig, SearchConfig, TrackingConfig
from ltr.runs.training_config import (
    LinearScheduleConfig,
    ModelConfig,
    SamplingConfig,
    ScheduleConfig,
    StepConfig,
    migrate_legacy,
    refuse_legacy,
    training_settings,
)

#: Largest count or cut-off a config may hold: the engines take 32-bit ints.

#: Longest run name: file systems allow 255 bytes, the folder adds "-YYYYmmdd-HHMMSS-NNN".
_MAX_NAME = 200

__all__ = [
    "ClusterConfig",
    "ConfigError",
    "DataConfig",
    "EvaluationConfig",
    "ImportanceConfig",
    "LinearScheduleConfig",
    "LocalClusterConfig",
    "MlflowConfig",
    "ModelConfig",
    "ObjectiveColumnConfig",
    "OutputConfig",
    "RunConfig",
    "RunError",
    "RunInterrupted",
    "SamplingConfig",
    "ScheduleConfig",
    "SearchConfig",
    "SplitConfig",
    "StepConfig",
    "SyntheticClicksConfig",
    "SyntheticConfig",
    "TrackingConfig",
    "apply_overrides",
    "config_fingerprint",
    "config_to_dict",
    "diff_configs",
    "dump_config",
    "format_validation_error",
    "is_glob",
    "load_config",
    "parse_config",
    "parse_override",
    "resolve_data_paths",
]


# --------------------------------------------------------------------------- data












# --------------------------------------------------------------------------- model

# The model section (ModelConfig) is generated from LambdaMARTRanker's signature and
# constraint table in ltr.runs.training_config.


# --------------------------------------------------------------------------- evaluation etc.


class IPSConfig(Section):
    """Click-based (inverse-propensity-weighted) nDCG of valid/test from data.click and position."""

    propensity: Literal["em", "learned", "data"] | list[Annotated[float, Field(gt=0, le=1)]] = (
        Field(
            "em",
            description="em: estimated from the training clicks (regression EM); learned: the "
            "unbiased objective's t+; data: each valid/test row's data.propensity (per "
            "impression, e.g. cascade estimates); or a list per position",
        )
    )
    clip: float = Field(
        0.01, gt=0, le=1, allow_inf_nan=False,
        description="propensities below this are raised to it (caps the weights)",
    )
    self_normalized: bool = Field(False, description="divide by the mean importance weight")


class EvaluationConfig(Section):
    """What metrics.json reports."""

    eval_at: list[Annotated[int, Field(ge=1, le=MAX_INT)]] = Field(
        default_factory=lambda: [1, 3, 5, 10, 20], min_length=1
    )
    k: int = Field(
        10, ge=1, le=MAX_INT, description="k of composite, per-segment and importance nDCG"
    )
    convention: Literal["lightgbm", "xgboost", "sklearn"] | None = Field(
        None,
        description="nDCG convention of curves and metrics (default: the engine's own; "
        "trec_eval/ranx need document ids)",
    )
    per_segment: bool = False
    smoothing: float = Field(
        0.0,
        ge=0,
        allow_inf_nan=False,
        description="per-segment smoothing strength (pseudo-queries)",
    )
    ips: IPSConfig | None = Field(
        None, description="click-based IPS nDCG@eval_at of valid/test (needs data.click/position)"
    )
    metrics: list[str] = Field(
        default_factory=list,
        description="more metrics of the final model, e.g. [map@10, mrr@10, precision@5, "
        "recall@20, err@10, hit_rate@10, r-precision] or their trec_eval names (P_5, "
        "recip_rank, ...), keyed as written (eval_at keeps meaning nDCG at those cut-offs)",
    )

    @model_validator(mode="after")
    def _metric_names(self) -> EvaluationConfig:
        from ltr.metrics.names import SCORER_METRICS, parse_metric_name

        seen: dict[str, str] = {}
        for i, name in enumerate(self.metrics):
            try:
                canonical = str(parse_metric_name(name, metrics=SCORER_METRICS))
            except (TypeError, ValueError) as exc:
                raise ValueError(f"@metrics[{i}]: {exc}") from None
            if canonical in seen:
                same = "" if seen[canonical] == name else f" (as {seen[canonical]!r})"
                raise ValueError(f"@metrics[{i}]: {name!r} is listed twice{same}")
            seen[canonical] = name
        return self

    @model_validator(mode="after")
    def _cutoffs(self) -> EvaluationConfig:
        try:  # the one rule for lists of cut-offs
            check_eval_at(self.eval_at, "eval_at")
        except (TypeError, ValueError) as exc:
            raise ValueError(f"@eval_at: {exc}") from None
        return self


class ImportanceConfig(Section):
    """Permutation importance (ΔnDCG) after training."""

    enabled: bool = False
    n_repeats: int = Field(5, ge=1, le=MAX_INT)
    strategy: Literal["global", "within_query"] = Field(
        "global",
        description="global: shuffle across all rows; within_query: only inside each query",
    )
    features: list[str] | None = Field(None, description="features to permute (default: all)")
    groups: dict[str, list[str]] | None = Field(
        None, description="feature groups permuted together (added to the single features)"
    )
    singles: bool = Field(
        True,
        description="permute each single feature too (all, or those in 'features'); "
        "false: only the groups",
    )
    max_queries: int | None = Field(None, ge=1, le=MAX_INT)
    evaluate_on: Literal["valid", "test"] = Field(
        "test", description="set whose queries are permuted"
    )


class OutputConfig(Section):
    """Where run folders go: ``<runs_dir>/<name>-<timestamp>/``."""

    runs_dir: str = "runs"
    name: str | None = Field(None, description="run name (default: the config file's stem)")
    progress: bool | None = Field(None, description="progress bar (default: only on a terminal)")

    @model_validator(mode="after")
    def _name(self) -> OutputConfig:
        if self.name is not None and not re.fullmatch(r"[A-Za-z0-9][A-Za-z0-9_.-]*", self.name):
            raise ValueError(f"@name: must be letters, digits, '_', '.', '-', got {self.name!r}")
        if self.name is not None and len(self.name) > _MAX_NAME:
            raise ValueError(
                f"@name: {len(self.name)} characters is too long for a folder name with its "
                f"timestamp; use at most {_MAX_NAME}"
            )
        return self


class RunConfig(Section):
    """A whole run."""

    seed: int = Field(0, ge=0, le=MAX_INT)
    data: DataConfig = Field(default_factory=DataConfig)
    model: ModelConfig = Field(  # type: ignore[valid-type]
        default_factory=ModelConfig,
        description="training parameters: LambdaMARTRanker's, same names and defaults",
    )
    evaluation: EvaluationConfig = Field(default_factory=EvaluationConfig)
    importance: ImportanceConfig = Field(default_factory=ImportanceConfig)
    search: SearchConfig | None = None
    cluster: ClusterConfig | None = Field(
        None, description="train on a Dask cluster (absent: one process)"
    )
    tracking: TrackingConfig | None = Field(None, description="experiment tracking (MLflow)")
    output: OutputConfig = Field(default_factory=OutputConfig)
    versions: dict[str, str] | None = Field(
        None, description="written into a run folder's config.yaml; ignored on load"
    )

    _source: Path | None = PrivateAttr(None)
    _settings: TrainSettings | None = PrivateAttr(None)

    @model_validator(mode="after")
    def _training(self) -> RunConfig:
        # the combinations of the model section, checked once with the estimator's rule
        try:
            self._settings = validate_settings(training_settings(self.model, self.seed))
        except (TypeError, ValueError) as exc:
            raise ValueError(f"@model: {exc}") from None
        return self

    @property
    def settings(self) -> TrainSettings:
        """The validated training settings (``model`` section, ``seed``), objective resolved."""
        if self._settings is None:  # pragma: no cover - set by the validator
            raise RunError("config: training settings were not validated")
        return self._settings

    @property
    def source(self) -> Path | None:
        """The YAML file this config was loaded from (None for a mapping)."""
        return self._source

    @property
    def logged(self) -> frozenset[str]:
        """Which of ``position``, ``click``, ``doc``, ``propensity`` the sets carry."""
        d = self.data
        if d.source == "synthetic" and d.synthetic.clicks is not None:
            return frozenset({"position", "click", "doc"})
        return frozenset(
            k for k in ("position", "click", "doc", "propensity") if getattr(d, k) is not None
        )

    @property
    def n_rounds(self) -> int:
        """Total boosting rounds: ``model.n_estimators``, else the schedule's, else 100."""
        if self.model.n_estimators is not None:
            return int(self.model.n_estimators)
        sched = self.model.schedule
        return sched.n_rounds if sched is not None else 100

    @property
    def run_name(self) -> str:
        """Name used for the run folder."""
        if self.output.name:
            return self.output.name
        if self._source is not None:
            return re.sub(r"[^A-Za-z0-9_.-]", "_", self._source.stem)[:_MAX_NAME] or "run"
        return "run"


# --------------------------------------------------------------------------- overrides

# --------------------------------------------------------------------------- loading


def parse_config(
    data: Mapping[str, Any] | None,
    *,
    overrides: Iterable[str] = (),
    source: str | os.PathLike[str] | None = None,
    migrate: bool = False,
) -> RunConfig:
    """Validate a raw mapping (e.g. parsed YAML) into a :class:`RunConfig`.

    Parameters
    ----------
    data : mapping or None
        The raw configuration (None is an empty config: all defaults).
    overrides : iterable of str
        ``key.path=value`` overrides, applied before validation.
    source : path-like, optional
        File the mapping came from; prefixes error messages and names the run.
    migrate : bool
        Read a config in the layout before the estimator's parameter names (a
        run folder's ``config.yaml``) as the current one, with one warning;
        otherwise such keys are an error naming their new key.

    Raises
    ------
    ConfigError
        On unknown keys or invalid values, naming the dotted path and the value.
    """
    label = str(source) if source is not None else None
    if data is None:
        data = {}
    if not isinstance(data, Mapping):
        where = f"{label}: " if label else ""
        raise ConfigError(f"{where}the config must be a mapping of sections, got {got(data)}")
    where = f"{label}: " if label else ""
    if migrate:
        data = migrate_legacy(data, where)
    try:
        raw = apply_overrides(dict(data), overrides)
    except ConfigError as exc:
        raise ConfigError(where + str(exc)) from None
    refuse_legacy(raw, where)
    try:
        cfg = RunConfig.model_validate(raw)
    except ValidationError as exc:
        raise ConfigError(format_validation_error(exc, label, RunConfig)) from None
    if source is not None:
        cfg._source = Path(source)
    check_consistency(cfg, label)
    return cfg


def load_config(
    path: str | os.PathLike[str], overrides: Iterable[str] = (), *, migrate: bool = False
) -> RunConfig:
    """Read, override and validate the YAML config at *path*.

    *migrate* reads the old layout of a run folder's ``config.yaml`` (see
    :func:`parse_config`).

    A *path* that does not exist and has no folder part (``quickstart``) names
    a config shipped with the package (:func:`ltr.runs.init_cmd.shipped_config`).

    Raises
    ------
    ConfigError
        When the file is missing, is not YAML, or fails validation.
    """
    from ltr.runs.init_cmd import not_found_hint, shipped_config

    yaml = import_yaml()
    p = Path(path)
    if not p.exists():  # a bare name such as `quickstart` runs the shipped example
        shipped = shipped_config(path)
        if shipped is None:
            raise ConfigError(f"config file not found: {str(path)!r}{not_found_hint(path)}")
        p = path = shipped
    if not p.is_file():
        raise ConfigError(f"config path is not a file: {str(path)!r}")
    try:
        text = p.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(f"{path}: cannot read config ({exc})") from None
    try:
        data = yaml.load(text, Loader=_strict_loader(yaml))
    except yaml.YAMLError as exc:
        raise ConfigError(f"{path}: not valid YAML ({yaml_reason(exc)})") from None
    if data is None:
        raise ConfigError(
            f"{path}: the config is empty; write at least one section "
            "(see configs/quickstart.yaml), or an explicit {} for all defaults"
        )
    if isinstance(data, dict) and "rules" in data and "rules" not in RunConfig.model_fields:
        raise ConfigError(
            f"{path}: this is a monitor config (it has 'rules'), not a run config: use it with "
            f"`ltr monitor LOG -c {path}`; `ltr validate {path}` checks it as a monitor config"
        )
    return parse_config(data, overrides=overrides, source=p, migrate=migrate)


def _strict_loader(yaml: Any) -> Any:
    """Return a ``yaml.SafeLoader`` subclass that refuses a key given twice in one mapping."""

    class StrictLoader(yaml.SafeLoader):  # type: ignore[misc,name-defined]
        pass

    def construct_mapping(loader: Any, node: Any, deep: bool = False) -> Any:
        seen: dict[Any, int] = {}
        for key_node, _ in node.value:
            key = loader.construct_object(key_node, deep=deep)
            try:
                line = seen.get(key)
            except TypeError:  # an unhashable key: the base constructor reports it
                break
            if line is not None:
                raise yaml.constructor.ConstructorError(
                    None,
                    None,
                    f"key {key!r} is given twice (lines {line} and "
                    f"{key_node.start_mark.line + 1}); YAML would silently keep the last",
                    key_node.start_mark,
                )
            seen[key] = key_node.start_mark.line + 1
        return yaml.SafeLoader.construct_mapping(loader, node, deep=deep)

    StrictLoader.add_constructor(yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG, construct_mapping)
    return StrictLoader


# --------------------------------------------------------------------------- paths


def resolve_data_paths(cfg: RunConfig, *, check: bool = True) -> RunConfig:
    """Return a copy of *cfg* with absolute data paths.

    A relative path is looked up in the current working directory, then in the
    config file's folder, then in that folder's parent; the first existing file
    wins.  With *check*, a path found nowhere raises :class:`ConfigError`
    listing where it looked.
    """
    updates: dict[str, str] = {}
    label = f"{cfg.source}: " if cfg.source is not None else ""
    for name in ("train", "valid", "test"):
        value = getattr(cfg.data, name)
        if value is None:
            continue
        if cfg.data.source == "parquet" and is_glob(value):
            updates[name] = resolve_glob(value, cfg.source, f"{label}data.{name}", check)
            continue
        cands = path_candidates(value, cfg.source)
        found = next((c for c in cands if c.exists()), None)
        if found is None:
            if check:
                tried = ", ".join(str(c.parent) for c in cands)
                raise ConfigError(
                    f"{label}data.{name}: file not found: {value!r} (looked in {tried})"
                )
            found = cands[0]
        elif check and not found.is_file():
            raise ConfigError(
                f"{label}data.{name}: {str(found)!r} is a folder, not a data file; "
                "name the file itself"
            )
        updates[name] = str(found.resolve())
    new_data = cfg.data.model_copy(update=updates)
    new = cfg.model_copy(update={"data": new_data})
    new._source = cfg._source
    return new


# --------------------------------------------------------------------------- dumping


def config_to_dict(cfg: RunConfig, *, include_versions: bool = True) -> dict[str, Any]:
    """Plain-data form of *cfg* (every field, defaults included)."""
    out = cfg.model_dump(mode="json")
    if not include_versions:
        out.pop("versions", None)
    return out


def dump_config(cfg: RunConfig) -> str:
    """Return the resolved config as YAML text (loadable again with :func:`parse_config`)."""
    yaml = import_yaml()
    return yaml.safe_dump(config_to_dict(cfg), sort_keys=False, default_flow_style=None)


def config_fingerprint(cfg: RunConfig | Mapping[str, Any]) -> str:
    """SHA-256 of what determines a run's result (not ``output``, ``versions``, ``tracking``)."""
    data = config_to_dict(cfg) if isinstance(cfg, RunConfig) else dict(cfg)
    data = {k: v for k, v in data.items() if k not in ("output", "versions", "tracking")}
    return hashlib.sha256(json.dumps(data, sort_keys=True, default=str).encode()).hexdigest()


def diff_configs(a: Mapping[str, Any], b: Mapping[str, Any], prefix: str = "") -> list[str]:
    """Dotted paths where the plain mappings *a* and *b* differ, with both values."""
    out: list[str] = []
    for key in sorted(set(a) | set(b), key=str):
        path = f"{prefix}.{key}" if prefix else str(key)
        va, vb = a.get(key, "<absent>"), b.get(key, "<absent>")
        if isinstance(va, Mapping) and isinstance(vb, Mapping):
            out += diff_configs(va, vb, path)
        elif va != vb:
            out.append(f"{path}: {got(va)} vs {got(vb)}")
    return out

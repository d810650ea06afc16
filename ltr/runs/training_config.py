"""The config's ``model`` section, generated from :class:`ltr.estimator.LambdaMARTRanker`.

A config trains with exactly the estimator's parameters: the ``model``
section's keys are the estimator's ``__init__`` parameters (those a run does
not set from another section, :data:`RUN_PARAMETERS`), with the estimator's
defaults, and each key's accepted values come from the estimator's
``_parameter_constraints`` (translated once, here, into pydantic field
types), the way LightningCLI builds its parser from class signatures.  There
is no second list of parameters to keep in step: a parameter added to the
estimator is a config key, and one that cannot be written in YAML fails at
import with a message naming it.

Parameters that take objects in Python take their YAML form here
(:data:`YAML_FORMS`): ``schedule`` is ``{steps: [{k, rounds}, ...]}`` or
``{linear: {start, end, rounds}}``; ``sampling`` is the keyword arguments of
:class:`ltr.objectives.sampling.TopKPairSampling`.

Configs written before this layout (sections ``model`` *and* ``objective``, keys
such as ``model.rounds``) are refused with the new key's name, except the
``config.yaml`` of a run folder, which :func:`migrate_legacy` rewrites in
memory (with one warning) so older runs still predict, resume and report.
"""

from __future__ import annotations

import inspect
import typing
import warnings
from collections.abc import Mapping
from numbers import Integral, Real
from typing import Annotated, Any, Literal

from pydantic import Field, create_model, model_validator

from ltr._validation import INT32_MAX
from ltr.build import TrainSettings
from ltr.estimator import LambdaMARTRanker
from ltr.runs._section import Section
from ltr.runs.errors import ConfigError

__all__ = [
    "RUN_PARAMETERS",
    "YAML_FORMS",
    "LinearScheduleConfig",
    "ModelConfig",
    "SamplingConfig",
    "ScheduleConfig",
    "StepConfig",
    "legacy_keys",
    "migrate_legacy",
    "training_settings",
]


class StepConfig(Section):
    """One stage of a steps schedule: train *rounds* rounds at truncation *k*."""

    k: int = Field(..., ge=1, le=INT32_MAX)
    rounds: int = Field(..., ge=1, le=INT32_MAX)


class LinearScheduleConfig(Section):
    """k moves linearly from *start* to *end* over *rounds* rounds."""

    start: int = Field(..., ge=1, le=INT32_MAX)
    end: int = Field(..., ge=1, le=INT32_MAX)
    rounds: int = Field(..., ge=1, le=INT32_MAX)


class ScheduleConfig(Section):
    """A truncation schedule: ``steps`` (list of k/rounds) or ``linear``."""

    steps: list[StepConfig] | None = Field(None, min_length=1)
    linear: LinearScheduleConfig | None = None

    @model_validator(mode="after")
    def _exactly_one(self) -> ScheduleConfig:
        if (self.steps is None) == (self.linear is None):
            raise ValueError("give exactly one of 'steps' or 'linear'")
        return self

    @property
    def n_rounds(self) -> int:
        """Total rounds the schedule defines."""
        if self.steps is not None:
            return sum(s.rounds for s in self.steps)
        assert self.linear is not None  # guaranteed by the validator
        return self.linear.rounds

    def build(self) -> Any:
        """Return the :mod:`ltr.objectives.schedules` object this describes."""
        from ltr.objectives.schedules import Linear, Steps

        if self.steps is not None:
            return Steps([(s.k, s.rounds) for s in self.steps])
        assert self.linear is not None  # guaranteed by the validator
        lin = self.linear
        return Linear(start=lin.start, end=lin.end, rounds=lin.rounds)


class _SamplingSection(Section):
    """Top-k weighted pair sampling: ``TopKPairSampling``'s keyword arguments."""

    if typing.TYPE_CHECKING:  # the fields are generated from TopKPairSampling's signature

        def __getattr__(self, name: str) -> Any: ...

    def build(self, seed: int) -> Any:
        """Return the :class:`~ltr.objectives.sampling.TopKPairSampling` this describes (seeded).

        Its values are checked there, by the sampler's own rule.
        """
        from ltr.objectives.sampling import TopKPairSampling

        values = {name: getattr(self, name) for name in type(self).model_fields}
        try:
            return TopKPairSampling(**values, random_state=seed)
        except (TypeError, ValueError) as exc:
            raise type(exc)(f"sampling: {exc}") from None


def _signature_fields(cls: type, skip: tuple[str, ...]) -> dict[str, Any]:
    """Pydantic field definitions from *cls*'s ``__init__`` types and defaults."""
    init = vars(cls)["__init__"]
    hints = typing.get_type_hints(init)
    return {
        name: (hints[name], param.default)
        for name, param in inspect.signature(init).parameters.items()
        if name != "self" and name not in skip
    }


def _sampler() -> type:
    from ltr.objectives.sampling import TopKPairSampling

    return TopKPairSampling


#: YAML form of ``sampling``: TopKPairSampling's keyword arguments (``random_state``: the seed).
SamplingConfig: type[_SamplingSection] = create_model(  # type: ignore[call-overload]
    "SamplingConfig",
    __base__=_SamplingSection,
    **_signature_fields(_sampler(), skip=("random_state",)),
)


#: Estimator parameters a run sets from another part of the config (never ``model.<name>``).
RUN_PARAMETERS: dict[str, str] = {
    "random_state": "seed",
    "eval_at": "evaluation.eval_at",
    "qid_column": "data.qid",
}

#: YAML form of the parameters that take Python objects (their constraint is a type).
YAML_FORMS: dict[str, Any] = {
    "schedule": ScheduleConfig | None,
    "sampling": SamplingConfig | None,
    "objectives": dict[str, Annotated[float, Field(ge=0, allow_inf_nan=False, strict=True)]]
    | None,
    "engine_params": dict[str, Any] | None,
    "unbiased": Annotated[bool, Field(strict=True)] | Literal["auto"],
    "propensity": list[Annotated[float, Field(gt=0, le=1, allow_inf_nan=False, strict=True)]]
    | None,
}


def _interval_field(name: str, intervals: list[Any], default: Any, optional: bool) -> Any:
    """``(annotation, Field)`` of a union of sklearn ``Interval`` constraints (one range)."""
    integral = all(iv.type is Integral for iv in intervals)
    lows = [(iv.left, iv.closed in ("left", "both")) for iv in intervals]
    highs = [(iv.right, iv.closed in ("right", "both")) for iv in intervals]
    bounds: dict[str, Any] = {}
    if all(lo is not None for lo, _ in lows):
        lo, closed = min(lows, key=lambda b: (b[0], not b[1]))
        bounds["ge" if closed else "gt"] = lo
    if all(hi is not None for hi, _ in highs):
        hi, closed = max(highs, key=lambda b: (b[0], b[1]))
        bounds["le" if closed else "lt"] = hi
    if not integral:
        bounds["allow_inf_nan"] = False
    bounds["strict"] = True  # no "5" or true for a number: the estimator refuses them too
    base: Any = int if integral else float
    ann = Annotated[base, Field(**bounds)]
    return (ann | None if optional else ann), default


def _field(name: str, constraints: list[Any], default: Any) -> Any:
    """Translate one parameter's sklearn constraints into a pydantic field definition."""
    from sklearn.utils._param_validation import Hidden, Interval, StrOptions

    if name in YAML_FORMS:
        return YAML_FORMS[name], default
    optional = None in constraints
    rest = [c.constraint if isinstance(c, Hidden) else c for c in constraints if c is not None]
    if rest and all(isinstance(c, StrOptions) for c in rest):
        options = sorted(set().union(*(c.options for c in rest)))
        ann: Any = Literal[tuple(options)]  # type: ignore[valid-type]
        return (ann | None if optional else ann), default
    if rest == ["boolean"]:
        return Annotated[bool, Field(strict=True)], default
    if rest and all(isinstance(c, Interval) and c.type in (Integral, Real) for c in rest):
        return _interval_field(name, rest, default, optional)
    if rest == [Integral]:
        ann = Annotated[int, Field(strict=True)]
        return (ann | None if optional else ann), default
    raise TypeError(
        f"LambdaMARTRanker parameter {name!r} has constraints {constraints!r}, which have no "
        "YAML form; add one to ltr.runs.training_config.YAML_FORMS (or to RUN_PARAMETERS when "
        "another config section sets it)"
    )


def _descriptions() -> dict[str, str]:
    """First sentence of each parameter in the estimator's numpydoc ``Parameters``."""
    doc = inspect.getdoc(LambdaMARTRanker) or ""
    out: dict[str, str] = {}
    lines = doc.split("Parameters\n----------\n", 1)[-1].split("\n\n", 1)[0].splitlines()
    current = None
    for line in lines:
        if line and not line.startswith(" ") and " : " in line:
            current = line.split(" : ", 1)[0]
            out[current] = ""
        elif current is not None and line.strip():
            out[current] = (out[current] + " " + line.strip()).strip()
    return {k: v.split(". ")[0].rstrip(".") for k, v in out.items()}


def _model_fields() -> dict[str, Any]:
    signature = inspect.signature(LambdaMARTRanker.__init__)
    constraints = LambdaMARTRanker._parameter_constraints
    docs = _descriptions()
    fields: dict[str, Any] = {}
    for name, param in signature.parameters.items():
        if name == "self" or name in RUN_PARAMETERS:
            continue
        ann, default = _field(name, constraints[name], param.default)
        fields[name] = (ann, Field(default, description=docs.get(name)))
    return fields


class _ModelSection(Section):
    """Training parameters: the keyword arguments of ``LambdaMARTRanker``."""

    if typing.TYPE_CHECKING:  # the fields are generated from the estimator's signature

        def __getattr__(self, name: str) -> Any: ...


#: The ``model`` section: one key per training parameter of ``LambdaMARTRanker``.
ModelConfig: type[_ModelSection] = create_model(  # type: ignore[call-overload]
    "ModelConfig",
    __base__=_ModelSection,
    __doc__=(
        "Training parameters: LambdaMARTRanker's keyword arguments, same names, defaults "
        "and accepted values (schedule and sampling in their YAML form)."
    ),
    **_model_fields(),
)


def training_settings(model: _ModelSection, seed: int) -> TrainSettings:
    """Return the :class:`~ltr.build.TrainSettings` of a validated ``model`` section and seed.

    Only the YAML forms are turned into their objects; every value is the
    section's own (the names are the same), and ``random_state`` is the run's
    ``seed``.  The combinations are not checked here (see
    :func:`ltr.build.validate_settings`).
    """
    values = {name: getattr(model, name) for name in type(model).model_fields}
    if model.schedule is not None:
        values["schedule"] = model.schedule.build()
    if model.sampling is not None:
        values["sampling"] = model.sampling.build(seed)
    if values.get("engine_params") is not None:
        values["engine_params"] = dict(values["engine_params"])
    return TrainSettings(**values, random_state=seed)


# --------------------------------------------------------------------------- the old layout

#: Where each key of the previous layout (``model`` + ``objective`` sections) went.
_RENAMED: dict[str, str] = {
    "model.rounds": "model.n_estimators",
    "model.min_data_in_leaf": "model.min_child_samples",
    "model.params": "model.engine_params",
    "objective.type": "model.objective",
    "objective.composite": "model.objectives",
    **{
        f"objective.{key}": f"model.{key}"
        for key in ("k", "schedule", "sigma", "sigmoid", "sampling", "unbiased",
                    "bias_norm", "propensity")
    },
}


def legacy_keys(raw: Mapping[str, Any]) -> list[tuple[str, str]]:
    """``(old key, new key)`` for each key of the old layout in the raw mapping *raw*."""
    found: list[tuple[str, str]] = []
    for section in ("model", "objective"):
        values = raw.get(section)
        if section == "objective" and values is not None and not isinstance(values, Mapping):
            found.append(("objective", "model"))
        if not isinstance(values, Mapping):
            continue
        for key in values:
            old = f"{section}.{key}"
            if old in _RENAMED:
                found.append((old, _RENAMED[old]))
            elif section == "objective":
                found.append((old, f"model.{key}"))
    return found


def refuse_legacy(raw: Mapping[str, Any], where: str) -> None:
    """Raise :class:`ConfigError` naming the new key of each old-layout key in *raw*."""
    found = legacy_keys(raw)
    if not found:
        return
    moves = "; ".join(f"{old} is now {new}" for old, new in found)
    raise ConfigError(
        f"{where}the training keys are LambdaMARTRanker's parameters, all in the model "
        f"section (docs/cli.md): {moves}"
    )


def migrate_legacy(raw: Mapping[str, Any], where: str) -> dict[str, Any]:
    """Rewrite a run folder's old-layout config into the current one (one warning), else as is.

    ``objective.composite: true`` becomes ``model.objectives`` with the weights
    of ``data.objectives`` (false: no key); every other key keeps its value
    under its new name, so the run's model is described exactly.
    """
    found = legacy_keys(raw)
    if not found:
        return dict(raw)
    out = {k: v for k, v in raw.items() if k != "objective"}
    model = dict(raw.get("model") or {})
    for key, value in dict(raw.get("objective") or {}).items():
        model[f"objective.{key}"] = value
    new_model: dict[str, Any] = {}
    for key, value in model.items():
        old = key if key.startswith("objective.") else f"model.{key}"
        new = _RENAMED.get(old, f"model.{key.rsplit('.', 1)[-1]}").split(".", 1)[1]
        if old == "objective.composite":
            if not value:
                continue
            objectives = (raw.get("data") or {}).get("objectives") or {}
            value = {name: spec.get("weight") for name, spec in objectives.items()}
        if old == "model.params" and not value:
            continue  # no engine parameters: the default (None)
        new_model[new] = value
    out["model"] = new_model
    warnings.warn(
        f"{where}written in the config layout before LambdaMARTRanker's parameter names; "
        f"read as the current layout ({', '.join(f'{o} -> {n}' for o, n in found)})",
        FutureWarning,
        stacklevel=3,
    )
    return out

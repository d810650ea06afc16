"""The config's data section: sources, columns, splits, the synthetic generator and its clicks."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Literal

from pydantic import (
    AliasChoices,
    Field,
    field_validator,
    model_validator,
)

from ltr.runs._section import MAX_INT, Section
from ltr.runs.overrides import got


class SyntheticClicksConfig(Section):
    """A click log simulated on the synthetic sets after their split by query (ltr.clicks).

    Every query is shown ``sessions`` times, each session in a Plackett-Luce
    order over a noisy logger (grade + ``logger_noise`` x N(0, 1)); each
    session is one list of the set, with its positions, clicks and document ids
    (``data.position``/``click``/``doc`` need not be named).
    """

    model: Literal["pbm", "cascade"] = "pbm"
    examination: float = Field(
        1.0, ge=0, allow_inf_nan=False, description="pbm: examination (1/position)**examination"
    )
    sessions: int = Field(4, ge=1, le=10_000, description="sessions (lists) per query")
    temperature: float = Field(
        1.0, gt=0, allow_inf_nan=False, description="Plackett-Luce logging temperature"
    )
    logger_noise: float = Field(
        1.0, ge=0, allow_inf_nan=False, description="logger score = grade + noise x N(0, 1)"
    )
    abandon: float = Field(
        0.0, ge=0, lt=1, allow_inf_nan=False,
        description="cascade: stop probability after each read result, clicked or not",
    )

    @model_validator(mode="after")
    def _abandon_is_cascade(self) -> SyntheticClicksConfig:
        if self.abandon and self.model != "cascade":
            raise ValueError(
                f"@abandon: abandonment is part of the cascade model; set model: cascade or "
                f"abandon: 0, got model {self.model!r} with abandon {self.abandon}"
            )
        return self


class SyntheticConfig(Section):
    """Options of the deterministic synthetic generator ``ltr.synthetic.make_ranking``."""

    n_queries: int = Field(
        300, ge=3, le=MAX_INT, description="number of queries (split into train/valid/test)"
    )
    n_features: int = Field(20, ge=1, le=MAX_INT, description="number of features")
    mean_docs: int = Field(30, ge=1, le=MAX_INT, description="mean documents per query")
    max_docs: int = Field(100, ge=1, le=MAX_INT, description="maximum documents per query")
    n_segments: int = Field(0, ge=0, le=MAX_INT, description="number of row segments (0: none)")
    n_categorical: int = Field(
        0, ge=0, le=64, description="categorical columns c1..cK appended (see data.categorical)"
    )
    clicks: SyntheticClicksConfig | None = Field(
        None, description="simulate a click log (positions, clicks, document ids) per set"
    )


class ObjectiveColumnConfig(Section):
    """One objective of a multi-objective data set (e.g. watch, share, follow).

    For tabular data the objective's grades come either from ``column`` (a
    column that already holds grades; default: the objective's name) or from
    ``grades``: a preset name of ``ltr.relevance.PRESETS`` (``watch``,
    ``share``, ``follow``, ``ecommerce``) or a grade mapping
    ``{rules: {raw_column: {type: threshold, bins: [[0.3, 0], ...], above: 3}}, combine: max}``
    applied to raw behaviour columns.  Synthetic data generates graded labels
    per objective itself (``column`` and ``grades`` must be left out).
    """

    column: str | None = Field(
        None, description="column already holding grades (default: the name)"
    )
    grades: Any = Field(None, description="preset name or grade-mapping dict (ltr.relevance)")
    weight: float = Field(
        ...,
        gt=0,
        allow_inf_nan=False,
        description="weight in the composite nDCG and composite objective",
    )

    @field_validator("grades")
    @classmethod
    def _grades(cls, value: Any) -> Any:
        if value is None:
            return None
        if not isinstance(value, (str, Mapping)):
            # pydantic turns only ValueError into a field error
            raise ValueError(f"must be a preset name or a grade mapping, got {got(value)}")  # noqa: TRY004
        from ltr.relevance import GradeMapping

        try:
            GradeMapping.from_dict(value)
        except (TypeError, ValueError) as exc:
            raise ValueError(str(exc)) from None
        return value

    def grade_mapping(self) -> Any:
        """Return the ``ltr.relevance.GradeMapping`` (None when ``grades`` is not set)."""
        if self.grades is None:
            return None
        from ltr.relevance import GradeMapping

        return GradeMapping.from_dict(self.grades)


class SplitConfig(Section):
    """Query-level split of the training data, used for sets without their own file."""

    valid: float = Field(0.2, ge=0, lt=1, description="fraction of queries for validation")
    test: float = Field(0.2, ge=0, lt=1, description="fraction of queries for test")
    seed: int | None = Field(
        None, ge=0, le=MAX_INT, description="split seed (default: the run's seed)"
    )

    @model_validator(mode="after")
    def _fractions(self) -> SplitConfig:
        if self.valid + self.test >= 1:
            raise ValueError(f"@test: valid + test must be < 1, got {self.valid} + {self.test}")
        return self


class DataConfig(Section):
    """Where the data comes from and which columns mean what."""

    source: Literal["synthetic", "letor", "parquet", "csv"] = "synthetic"
    synthetic: SyntheticConfig = Field(default_factory=SyntheticConfig)
    train: str | None = Field(None, description="training file (letor/parquet/csv)")
    valid: str | None = Field(None, description="validation file; None: split from train")
    test: str | None = Field(None, description="test file; None: split from train")
    n_features: int | None = Field(
        None, ge=1, le=MAX_INT, description="LETOR: number of features (default: inferred)"
    )
    label: str = Field(
        "label",
        description="tabular: label column; with objectives and no such column, "
        "the first objective's grades",
    )
    qid: str = Field("qid", description="tabular: query id column")
    features: list[str] | None = Field(
        None, description="tabular: feature columns (default: all others)"
    )
    segment: str | None = Field(None, description="tabular: segment column for per-segment metrics")
    position: str | None = Field(
        None,
        validation_alias=AliasChoices("position", "position_column"),
        description="tabular: display position column of the logged ranking (1 = top), for "
        "model.unbiased, model.position_term and evaluation.ips",
    )
    click: str | None = Field(
        None,
        validation_alias=AliasChoices("click", "click_column"),
        description="tabular: click column (0/1): training learns from clicks instead of "
        "data.label (which, when present, stays the graded truth of valid/test metrics)",
    )
    doc: str | None = Field(
        None,
        description="tabular: integer document id column (one query-document pair across the "
        "lists that show it), for evaluation.ips.propensity: em",
    )
    propensity: str | None = Field(
        None,
        validation_alias=AliasChoices("propensity", "propensity_column"),
        description="tabular: known examination propensity of each row (impression) in "
        "(0, 1], e.g. a cascade estimate: model.unbiased weights training pairs by it "
        "instead of learning position biases",
    )
    categorical: list[str] | None = Field(
        None,
        description="categorical feature columns (category ids): one coding fitted on the "
        "training set, stored in the model, applied to valid/test and at predict",
    )
    split: SplitConfig = Field(default_factory=SplitConfig)
    objectives: dict[str, ObjectiveColumnConfig] | None = Field(
        None, description="multi-objective labels: name -> column, grades, weight"
    )
    max_queries: int | None = Field(
        None, ge=3, le=MAX_INT, description="keep only the first N training queries"
    )

    @model_validator(mode="after")
    def _source_files(self) -> DataConfig:
        if self.source != "synthetic" and self.train is None:
            raise ValueError(f"@train: source {self.source!r} needs a 'train' file, got None")
        if self.source == "synthetic" and any(
            p is not None for p in (self.train, self.valid, self.test)
        ):
            raise ValueError(
                "@source: 'synthetic' takes no train/valid/test files; use letor, parquet or csv"
            )
        if self.objectives is not None and not self.objectives:
            raise ValueError("@objectives: must name at least one objective (or be omitted)")
        return self

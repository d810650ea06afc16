"""Grade mappings (one objective: column -> grader rules), presets and ``apply_mappings``."""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType
from typing import Any

import numpy as np
import pandas as pd

from ltr._validation import short_repr
from ltr.relevance._graders import (
    CategoricalGrades,
    Grader,
    ThresholdGrades,
)

__all__ = ["PRESETS", "GradeMapping", "apply_mappings", "from_dict"]


class GradeMapping:
    """Grades of one objective from one or more raw columns.

    Parameters
    ----------
    rules : mapping of str to grader
        ``column -> ThresholdGrades | CategoricalGrades`` (or their dict form).
    combine : {"max", "sum"}, default="max"
        How the rules' grades combine per row.

    Examples
    --------
    >>> m = GradeMapping({"event": CategoricalGrades({"click": 2, "cart": 4}),
    ...                   "dwell": ThresholdGrades([(30, 0)], above=3, right=True)})
    >>> m({"event": ["click", "click", "cart"], "dwell": [10, 31, 31]}).tolist()
    [2.0, 3.0, 4.0]
    """

    __slots__ = ("_combine", "_rules")

    def __init__(
        self, rules: Mapping[str, Grader | Mapping[str, Any]], *, combine: str = "max"
    ) -> None:
        if not isinstance(rules, Mapping):
            raise TypeError(f"rules must be a mapping column -> grader, got {short_repr(rules)}")
        if len(rules) == 0:
            raise ValueError("rules is empty: give at least one column -> grader rule")
        parsed: dict[str, Grader] = {}
        for column, grader in rules.items():
            if not isinstance(column, str):
                raise TypeError(f"rule column names must be strings, got {column!r}")
            if isinstance(grader, Mapping):
                grader = _grader_from_dict(grader)
            if not isinstance(grader, (ThresholdGrades, CategoricalGrades)):
                raise TypeError(
                    f"rules[{column!r}] must be ThresholdGrades or CategoricalGrades, "
                    f"got {short_repr(grader)}"
                )
            parsed[column] = grader
        if combine not in ("max", "sum"):
            raise ValueError(f"combine must be 'max' or 'sum', got {combine!r}")
        self._rules = parsed
        self._combine = combine

    @property
    def rules(self) -> dict[str, Grader]:
        """``column -> grader`` (a copy)."""
        return dict(self._rules)

    @property
    def columns(self) -> list[str]:
        """Raw columns this mapping reads."""
        return list(self._rules)

    @property
    def combine(self) -> str:
        """``"max"`` or ``"sum"``."""
        return self._combine

    def __call__(self, values: Any) -> np.ndarray:
        """Grades from *values*: a mapping/DataFrame of raw columns.

        With a single rule, a bare 1-D array of that column is accepted too.

        Raises
        ------
        ValueError
            If a needed column is missing, columns differ in length, or a
            grader rejects a value (the message names the column).
        """
        if not isinstance(values, (Mapping, pd.DataFrame)):
            if len(self._rules) == 1:
                values = {next(iter(self._rules)): values}
            else:
                raise TypeError(
                    f"values must be a mapping or DataFrame with columns {self.columns!r}, "
                    f"got {short_repr(values)}"
                )
        out: np.ndarray | None = None
        for column, grader in self._rules.items():
            if column not in values:
                have = list(values.columns) if isinstance(values, pd.DataFrame) else list(values)
                raise ValueError(f"values has no column {column!r} (columns: {have!r})")
            raw = values[column]
            try:
                grades = grader(raw.to_numpy() if isinstance(raw, pd.Series) else raw)
            except (ValueError, TypeError) as exc:
                raise type(exc)(f"column {column!r}: {exc}") from exc
            if out is None:
                out = grades
            elif len(grades) != len(out):
                raise ValueError(
                    f"column {column!r} has {len(grades)} rows but {self.columns[0]!r} has "
                    f"{len(out)}; they must match"
                )
            elif self._combine == "max":
                np.maximum(out, grades, out=out)
            else:
                out += grades
        assert out is not None  # rules is non-empty (checked in __init__)
        return out

    def to_dict(self) -> dict[str, Any]:
        """Plain-data form: ``{"rules": {column: grader dict}, "combine": "max"}``."""
        return {
            "rules": {column: grader.to_dict() for column, grader in self._rules.items()},
            "combine": self._combine,
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any] | str) -> GradeMapping:
        """Inverse of :meth:`to_dict`; a string names a preset in :data:`PRESETS`."""
        if isinstance(data, str):
            if data not in PRESETS:
                raise ValueError(f"unknown grade preset {data!r}; known: {sorted(PRESETS)!r}")
            return PRESETS[data]
        if not isinstance(data, Mapping):
            raise TypeError(
                f"grade mapping must be a mapping or preset name, got {short_repr(data)}"
            )
        if "rules" not in data:
            raise ValueError(f"grade mapping needs 'rules', got keys {sorted(data)!r}")
        unknown = set(data) - {"rules", "combine"}
        if unknown:
            raise ValueError(f"unknown keys {sorted(unknown)!r} for a grade mapping")
        return cls(data["rules"], combine=data.get("combine", "max"))

    def __eq__(self, other: object) -> bool:
        return isinstance(other, GradeMapping) and self.to_dict() == other.to_dict()

    def __repr__(self) -> str:
        return f"GradeMapping({self._rules!r}, combine={self._combine!r})"

    def __getstate__(self) -> dict[str, Any]:
        return self.to_dict()

    def __setstate__(self, state: dict[str, Any]) -> None:
        other = GradeMapping.from_dict(state)
        self._rules, self._combine = other._rules, other._combine


def _grader_from_dict(data: Mapping[str, Any]) -> Grader:
    kind = data.get("type")
    if kind == "threshold":
        return ThresholdGrades.from_dict(data)
    if kind == "categorical":
        return CategoricalGrades.from_dict(data)
    raise ValueError(f"grader type must be 'threshold' or 'categorical', got {kind!r}")


def from_dict(data: Mapping[str, Any] | str) -> GradeMapping | Grader:
    """Build a grader or mapping from its ``to_dict()`` form (or a preset name).

    A mapping with ``"rules"`` (or a preset name) gives a :class:`GradeMapping`;
    one with ``"type": "threshold" | "categorical"`` gives that grader.
    """
    if isinstance(data, str) or (isinstance(data, Mapping) and "rules" in data):
        return GradeMapping.from_dict(data)
    if not isinstance(data, Mapping):
        raise TypeError(f"grade config must be a mapping or preset name, got {short_repr(data)}")
    return _grader_from_dict(data)


def apply_mappings(
    values: Any, mappings: Mapping[str, GradeMapping | str | Mapping[str, Any]]
) -> dict[str, np.ndarray]:
    """Return the label columns per objective: ``{objective: mapping(values)}``.

    Parameters
    ----------
    values : mapping or DataFrame
        Raw behaviour columns.
    mappings : mapping of str to GradeMapping, preset name or dict form
        One grade mapping per objective.

    Returns
    -------
    dict of str to ndarray of float64
        Ready for ``labels=`` of a composite objective and ``composite_ndcg``.
    """
    if not isinstance(mappings, Mapping) or len(mappings) == 0:
        raise ValueError(
            "mappings must be a non-empty mapping objective -> GradeMapping, "
            f"got {short_repr(mappings)}"
        )
    out: dict[str, np.ndarray] = {}
    for name, mapping in mappings.items():
        if not isinstance(mapping, GradeMapping):
            mapping = GradeMapping.from_dict(mapping)
        try:
            out[name] = mapping(values)
        except (ValueError, TypeError) as exc:
            raise type(exc)(f"objective {name!r}: {exc}") from exc
    return out


PRESETS: Mapping[str, GradeMapping] = MappingProxyType(
    {
        "watch": GradeMapping(
            {"watch_fraction": ThresholdGrades([(0.3, 0), (0.6, 1), (1.0, 2)], above=3)}
        ),
        "share": GradeMapping(
            {"share": CategoricalGrades({"none": 0, "copy_link": 1, "social": 2})}
        ),
        "follow": GradeMapping(
            {"follow": CategoricalGrades({"none": 0, "like": 1, "follow": 3})}
        ),
        "ecommerce": GradeMapping(
            {
                "event": CategoricalGrades(
                    {"impression": 1, "click": 2, "cart": 4, "order_kept": 5}
                ),
                "dwell_seconds": ThresholdGrades([(30.0, 0)], above=3, right=True),
            },
            combine="max",
        ),
    }
)
"""Named grade mappings (``PRESETS["watch"]`` etc.); see the module docstring."""

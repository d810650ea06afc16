"""The graders a grade mapping combines: numeric threshold bins and category tables."""

from __future__ import annotations

import math
from collections.abc import Hashable, Mapping, Sequence
from numbers import Real
from typing import Any

import numpy as np
import pandas as pd

from ltr._validation import short_repr

__all__ = ["CategoricalGrades", "Grader", "ThresholdGrades"]


def _check_grade(value: Any, name: str) -> float:
    if isinstance(value, bool) or not isinstance(value, Real):
        raise TypeError(f"{name} must be a number, got {short_repr(value)}")
    value = float(value)
    if not math.isfinite(value) or value < 0:
        raise ValueError(f"{name} must be a finite grade >= 0, got {value!r}")
    return value


def _grade_out(value: float) -> int | float:
    """Grades as ints in ``to_dict`` when they are whole numbers (cleaner YAML)."""
    return int(value) if float(value).is_integer() else float(value)


class ThresholdGrades:
    """Numeric value -> grade through sorted threshold bins.

    Parameters
    ----------
    bins : sequence of (float, float)
        ``(upper, grade)`` pairs with strictly increasing ``upper``: a value
        below ``bins[0].upper`` gets ``bins[0].grade``, a value in
        ``[bins[i-1].upper, bins[i].upper)`` gets ``bins[i].grade``.
    above : float, optional
        Grade of values ``>= bins[-1].upper``.  When ``None`` such values
        raise ``ValueError``.
    right : bool, default=False
        Close bins on the right instead: ``(lower, upper]``, so a value equal
        to a threshold falls in the bin below it (``dwell > 30 s`` style).

    Examples
    --------
    >>> watch = ThresholdGrades([(0.3, 0), (0.6, 1), (1.0, 2)], above=3)
    >>> watch([0.0, 0.29, 0.3, 0.6, 0.99, 1.0, 1.7]).tolist()
    [0.0, 0.0, 1.0, 2.0, 2.0, 3.0, 3.0]
    """

    __slots__ = ("_above", "_grades", "_right", "_thresholds")

    def __init__(
        self,
        bins: Sequence[tuple[float, float]],
        *,
        above: float | None = None,
        right: bool = False,
    ) -> None:
        if isinstance(bins, (str, bytes)) or not isinstance(bins, Sequence):
            raise TypeError(
                f"bins must be a sequence of (upper, grade) pairs, got {short_repr(bins)}"
            )
        if len(bins) == 0:
            raise ValueError("bins is empty: give at least one (upper, grade) pair")
        thresholds: list[float] = []
        grades: list[float] = []
        for i, pair in enumerate(bins):
            if isinstance(pair, (str, bytes)) or not isinstance(pair, Sequence) or len(pair) != 2:
                raise TypeError(f"bins[{i}] must be an (upper, grade) pair, got {short_repr(pair)}")
            upper, grade = pair
            if isinstance(upper, bool) or not isinstance(upper, Real):
                raise TypeError(f"bins[{i}].upper must be a number, got {short_repr(upper)}")
            upper = float(upper)
            if math.isnan(upper):
                raise ValueError(f"bins[{i}].upper must not be NaN, got {upper!r}")
            if thresholds and upper <= thresholds[-1]:
                raise ValueError(
                    f"bins must be sorted by strictly increasing threshold; bins[{i}].upper = "
                    f"{upper!r} is not above bins[{i - 1}].upper = {thresholds[-1]!r}"
                )
            thresholds.append(upper)
            grades.append(_check_grade(grade, f"bins[{i}].grade"))
        if not isinstance(right, (bool, np.bool_)):
            raise TypeError(f"right must be a bool, got {short_repr(right)}")
        self._thresholds = np.asarray(thresholds, dtype=np.float64)
        self._grades = np.asarray(grades, dtype=np.float64)
        self._above = None if above is None else _check_grade(above, "above")
        self._right = bool(right)

    @property
    def bins(self) -> list[tuple[float, float]]:
        """The ``(upper, grade)`` pairs."""
        return [(float(t), float(g)) for t, g in zip(self._thresholds, self._grades)]

    @property
    def above(self) -> float | None:
        """Grade of values beyond the last threshold."""
        return self._above

    @property
    def right(self) -> bool:
        """Whether bins are closed on the right."""
        return self._right

    def __call__(self, values: Any) -> np.ndarray:
        """Grades of *values* (1-D numeric array-like) as ``float64``.

        Raises
        ------
        ValueError
            For NaN values, or values beyond the last threshold without ``above``.
        """
        arr = _as_numeric(values, "values")
        nan = np.isnan(arr)
        if nan.any():
            i = int(np.flatnonzero(nan)[0])
            raise ValueError(
                f"values[{i}] is {float(arr[i])!r}: threshold grades need a number in every row "
                "(fill or drop missing values first)"
            )
        idx = np.searchsorted(self._thresholds, arr, side="left" if self._right else "right")
        out = np.empty(arr.shape, dtype=np.float64)
        inside = idx < len(self._thresholds)
        out[inside] = self._grades[idx[inside]]
        if not inside.all():
            if self._above is None:
                i = int(np.flatnonzero(~inside)[0])
                op = ">" if self._right else ">="
                raise ValueError(
                    f"values[{i}] = {float(arr[i])!r} is {op} the last threshold "
                    f"{float(self._thresholds[-1])!r} and no 'above' grade is set"
                )
            out[~inside] = self._above
        return out

    def to_dict(self) -> dict[str, Any]:
        """Plain-data form: ``{"type": "threshold", "bins": [[upper, grade], ...], ...}``."""
        return {
            "type": "threshold",
            "bins": [[float(t), _grade_out(g)] for t, g in zip(self._thresholds, self._grades)],
            "above": None if self._above is None else _grade_out(self._above),
            "right": self._right,
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> ThresholdGrades:
        """Inverse of :meth:`to_dict`."""
        data = _check_type_field(data, "threshold")
        if "bins" not in data:
            raise ValueError(f"threshold grades need 'bins', got keys {sorted(data)!r}")
        unknown = set(data) - {"type", "bins", "above", "right"}
        if unknown:
            raise ValueError(f"unknown keys {sorted(unknown)!r} for threshold grades")
        bins = [tuple(pair) if isinstance(pair, list) else pair for pair in data["bins"]]
        return cls(bins, above=data.get("above"), right=data.get("right", False))

    def __eq__(self, other: object) -> bool:
        return isinstance(other, ThresholdGrades) and self.to_dict() == other.to_dict()

    def __repr__(self) -> str:
        return f"ThresholdGrades({self.bins!r}, above={self._above!r}, right={self._right!r})"

    def __getstate__(self) -> dict[str, Any]:
        return self.to_dict()

    def __setstate__(self, state: dict[str, Any]) -> None:
        other = ThresholdGrades.from_dict(state)
        for slot in self.__slots__:
            setattr(self, slot, getattr(other, slot))


class CategoricalGrades:
    """Category -> grade through a table.

    Parameters
    ----------
    mapping : mapping of hashable to float
        Grade of each known category.
    default : float, optional
        Grade of categories not in *mapping*; when ``None`` they raise
        ``ValueError`` naming the category.
    missing : float, optional
        Grade of missing values (``None``/``NaN``); when ``None`` they raise
        ``ValueError``.

    Examples
    --------
    >>> share = CategoricalGrades({"none": 0, "copy_link": 1, "social": 2})
    >>> share(["social", "none", "copy_link"]).tolist()
    [2.0, 0.0, 1.0]
    """

    __slots__ = ("_default", "_map", "_missing")

    def __init__(
        self,
        mapping: Mapping[Hashable, float],
        *,
        default: float | None = None,
        missing: float | None = None,
    ) -> None:
        if not isinstance(mapping, Mapping):
            raise TypeError(
                f"mapping must be a mapping category -> grade, got {short_repr(mapping)}"
            )
        if len(mapping) == 0:
            raise ValueError("mapping is empty: give at least one category -> grade entry")
        table: dict[Hashable, float] = {}
        for key, grade in mapping.items():
            if key is None or (isinstance(key, float) and math.isnan(key)):
                raise ValueError(
                    f"mapping key {key!r} is not a category; use missing= for missing values"
                )
            table[key] = _check_grade(grade, f"mapping[{key!r}]")
        self._map = table
        self._default = None if default is None else _check_grade(default, "default")
        self._missing = None if missing is None else _check_grade(missing, "missing")

    @property
    def mapping(self) -> dict[Hashable, float]:
        """Category -> grade table (a copy)."""
        return dict(self._map)

    @property
    def default(self) -> float | None:
        """Grade of unknown categories."""
        return self._default

    @property
    def missing(self) -> float | None:
        """Grade of missing values."""
        return self._missing

    def __call__(self, values: Any) -> np.ndarray:
        """Grades of *values* (1-D array-like of categories) as ``float64``.

        Raises
        ------
        ValueError
            For an unknown category without ``default`` or a missing value
            without ``missing``.
        """
        arr = np.asarray(values, dtype=object)
        if arr.ndim != 1:
            raise ValueError(f"values must be 1-D, got shape {arr.shape}")
        codes, uniques = pd.factorize(arr, use_na_sentinel=True)
        table = np.empty(len(uniques), dtype=np.float64)
        for j, cat in enumerate(uniques):
            key = cat.item() if isinstance(cat, np.generic) else cat
            grade = self._map.get(key)
            if grade is None:
                grade = self._default
            if grade is None:
                i = int(np.flatnonzero(codes == j)[0])
                raise ValueError(
                    f"values[{i}] = {key!r} is not a known category "
                    f"{sorted(map(repr, self._map))} and no default grade is set"
                )
            table[j] = grade
        out = np.empty(len(arr), dtype=np.float64)
        known = codes >= 0
        out[known] = table[codes[known]]
        if not known.all():
            if self._missing is None:
                i = int(np.flatnonzero(~known)[0])
                raise ValueError(
                    f"values[{i}] is missing ({arr[i]!r}) and no 'missing' grade is set"
                )
            out[~known] = self._missing
        return out

    def to_dict(self) -> dict[str, Any]:
        """Return the plain-data form.

        ``{"type": "categorical", "map": {...}, "default": ..., "missing": ...}``.
        """
        return {
            "type": "categorical",
            "map": {key: _grade_out(g) for key, g in self._map.items()},
            "default": None if self._default is None else _grade_out(self._default),
            "missing": None if self._missing is None else _grade_out(self._missing),
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> CategoricalGrades:
        """Inverse of :meth:`to_dict`."""
        data = _check_type_field(data, "categorical")
        if "map" not in data:
            raise ValueError(f"categorical grades need 'map', got keys {sorted(data)!r}")
        unknown = set(data) - {"type", "map", "default", "missing"}
        if unknown:
            raise ValueError(f"unknown keys {sorted(unknown)!r} for categorical grades")
        return cls(data["map"], default=data.get("default"), missing=data.get("missing"))

    def __eq__(self, other: object) -> bool:
        return isinstance(other, CategoricalGrades) and self.to_dict() == other.to_dict()

    def __repr__(self) -> str:
        return (
            f"CategoricalGrades({self._map!r}, default={self._default!r}, "
            f"missing={self._missing!r})"
        )

    def __getstate__(self) -> dict[str, Any]:
        return self.to_dict()

    def __setstate__(self, state: dict[str, Any]) -> None:
        other = CategoricalGrades.from_dict(state)
        for slot in self.__slots__:
            setattr(self, slot, getattr(other, slot))


Grader = ThresholdGrades | CategoricalGrades


def _as_numeric(values: Any, name: str) -> np.ndarray:
    try:
        arr = np.asarray(values)
    except Exception as exc:  # pragma: no cover - exotic inputs
        raise TypeError(f"{name} must be numbers, got {short_repr(values)}") from exc
    if arr.ndim != 1:
        raise ValueError(f"{name} must be 1-D, got shape {arr.shape}")
    if arr.dtype == object:
        try:
            arr = arr.astype(np.float64)
        except (TypeError, ValueError) as exc:
            bad = next((v for v in arr if not isinstance(v, Real) and v is not None), arr[0])
            raise TypeError(f"{name} must be numbers, got {bad!r}") from exc
    elif not (np.issubdtype(arr.dtype, np.number) or arr.dtype == np.bool_):
        bad = arr.flat[0].item() if arr.size else values
        raise TypeError(f"{name} must be numbers, got {bad!r} (dtype {arr.dtype})")
    return arr.astype(np.float64, copy=False)


def _check_type_field(data: Any, expected: str) -> Mapping[str, Any]:
    if not isinstance(data, Mapping):
        raise TypeError(f"{expected} grades must be given as a mapping, got {short_repr(data)}")
    kind = data.get("type", expected)
    if kind != expected:
        raise ValueError(f"expected type {expected!r}, got {kind!r}")
    return data

"""Truncation schedules: the nDCG cut-off ``k`` as a pure function of the boosting round.

A schedule maps a 0-based boosting round to the truncation level ``k`` used by
the LambdaRank gradients in that round.  It is a pure function of the round
number (no hidden state), so it pickles, can be restarted at any round and
gives the same answer when training resumes.

* :class:`Constant` -- the same ``k`` every round.
* :class:`Steps` -- piecewise constant stages ``[(k, rounds), ...]``, e.g.
  narrow -> broad ``[(5, 100), (10, 100), (20, 200)]`` or the reverse
  broad -> narrow ``[(20, 100), (10, 100), (5, 100)]`` (Svore et al., 2011).
* :class:`Linear` -- ``k`` moves linearly from ``start`` to ``end`` over
  ``rounds`` rounds (rounded, monotone; ``start > end`` works too).
* any callable ``round -> k`` via :func:`as_schedule`.

:func:`stages_of` splits a schedule into runs of equal ``k``; engines with a
native objective train one continued model per such stage.

References
----------
Svore, Volkovs, Burges. "Learning to rank with multiple objective functions".
WWW 2011.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from numbers import Integral
from typing import Any, Protocol, runtime_checkable

from ltr._validation import check_int, short_repr

__all__ = [
    "Constant",
    "FunctionSchedule",
    "Linear",
    "Schedule",
    "Steps",
    "as_schedule",
    "stages_of",
]


@runtime_checkable
class Schedule(Protocol):
    """A truncation schedule: 0-based boosting round -> ``k``.

    Attributes
    ----------
    n_rounds : int or None
        Total rounds when the schedule defines them (``Steps``, ``Linear``),
        else ``None``.
    """

    n_rounds: int | None

    def __call__(self, iteration: int) -> int:  # pragma: no cover - protocol
        """Return the truncation level ``k >= 1`` for 0-based round *iteration*."""
        ...


def _check_iteration(iteration: Any) -> int:
    return check_int(iteration, "iteration", minimum=0)


@dataclass(frozen=True)
class Constant:
    """The same truncation level every round.

    Parameters
    ----------
    k : int
        Truncation level, ``>= 1``.
    rounds : int, optional
        Total rounds, when the schedule should define them.

    Examples
    --------
    >>> Constant(10)(0), Constant(10)(999)
    (10, 10)
    """

    k: int
    rounds: int | None = None

    def __post_init__(self) -> None:
        object.__setattr__(self, "k", check_int(self.k, "k", minimum=1))
        if self.rounds is not None:
            object.__setattr__(self, "rounds", check_int(self.rounds, "rounds", minimum=1))

    @property
    def n_rounds(self) -> int | None:
        """Total rounds, or ``None``."""
        return self.rounds

    def __call__(self, iteration: int) -> int:
        """Return ``k``."""
        _check_iteration(iteration)
        return self.k

    def to_dict(self) -> dict[str, Any]:
        """Plain-data form for configs (see :func:`as_schedule`)."""
        out: dict[str, Any] = {"type": "constant", "k": self.k}
        if self.rounds is not None:
            out["rounds"] = self.rounds
        return out


class Steps:
    """Piecewise constant schedule from ``(k, rounds)`` stages.

    Parameters
    ----------
    steps : sequence of (int, int)
        ``(k, rounds)`` pairs, in order.  Both must be ``>= 1``.  After the
        last stage the last ``k`` is kept.

    Examples
    --------
    >>> s = Steps([(5, 2), (10, 1), (20, 2)])
    >>> [s(i) for i in range(6)]
    [5, 5, 10, 20, 20, 20]
    >>> s.n_rounds
    5
    """

    __slots__ = ("_bounds", "_stages")

    def __init__(self, steps: Sequence[tuple[int, int]]) -> None:
        if isinstance(steps, (str, bytes)) or not isinstance(steps, Sequence):
            raise TypeError(
                f"steps must be a sequence of (k, rounds) pairs, got {short_repr(steps)}"
            )
        if len(steps) == 0:
            raise ValueError("steps is empty: give at least one (k, rounds) pair")
        stages: list[tuple[int, int]] = []
        for i, step in enumerate(steps):
            if isinstance(step, (str, bytes)) or not isinstance(step, Sequence) or len(step) != 2:
                raise TypeError(f"steps[{i}] must be a (k, rounds) pair, got {short_repr(step)}")
            k = check_int(step[0], f"steps[{i}].k", minimum=1)
            rounds = check_int(step[1], f"steps[{i}].rounds", minimum=1)
            stages.append((k, rounds))
        self._stages = tuple(stages)
        bounds = []
        total = 0
        for _, rounds in stages:
            total += rounds
            bounds.append(total)
        self._bounds = tuple(bounds)

    @property
    def stages(self) -> list[tuple[int, int]]:
        """The ``(k, rounds)`` stages."""
        return list(self._stages)

    @property
    def n_rounds(self) -> int:
        """Sum of the stages' rounds."""
        return self._bounds[-1]

    def __call__(self, iteration: int) -> int:
        """Return the ``k`` of the stage containing round *iteration*."""
        it = _check_iteration(iteration)
        for (k, _), bound in zip(self._stages, self._bounds):
            if it < bound:
                return k
        return self._stages[-1][0]

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Steps) and self._stages == other._stages

    def __hash__(self) -> int:
        return hash(("Steps", self._stages))

    def __repr__(self) -> str:
        return f"Steps({list(self._stages)!r})"

    def __getstate__(self) -> tuple[tuple[int, int], ...]:
        return self._stages

    def __setstate__(self, state: tuple[tuple[int, int], ...]) -> None:
        self.__init__(list(state))  # type: ignore[misc]

    def to_dict(self) -> dict[str, Any]:
        """Plain-data form for configs (see :func:`as_schedule`)."""
        return {"type": "steps", "steps": [list(s) for s in self._stages]}


@dataclass(frozen=True)
class Linear:
    """``k`` moves linearly from *start* to *end* over *rounds* rounds.

    ``k(i) = floor(start + (end - start) * i / (rounds - 1) + 0.5)`` for
    ``i < rounds`` (``start`` when ``rounds == 1``), and ``end`` afterwards.
    The sequence is monotone in either direction and hits both end points.

    Parameters
    ----------
    start, end : int
        First and last truncation levels, ``>= 1``; ``start > end`` gives a
        broad -> narrow (reverse) schedule.
    rounds : int
        Rounds over which to interpolate, ``>= 1``.

    Examples
    --------
    >>> s = Linear(start=5, end=20, rounds=4)
    >>> [s(i) for i in range(5)]
    [5, 10, 15, 20, 20]
    """

    start: int
    end: int
    rounds: int

    def __post_init__(self) -> None:
        object.__setattr__(self, "start", check_int(self.start, "start", minimum=1))
        object.__setattr__(self, "end", check_int(self.end, "end", minimum=1))
        object.__setattr__(self, "rounds", check_int(self.rounds, "rounds", minimum=1))

    @property
    def n_rounds(self) -> int:
        """``rounds``."""
        return self.rounds

    def __call__(self, iteration: int) -> int:
        """Return the interpolated ``k`` for round *iteration*."""
        it = _check_iteration(iteration)
        if it >= self.rounds:
            return self.end
        if self.rounds == 1:
            return self.start
        frac = it / (self.rounds - 1)
        return math.floor(self.start + (self.end - self.start) * frac + 0.5)

    def to_dict(self) -> dict[str, Any]:
        """Plain-data form for configs (see :func:`as_schedule`)."""
        return {"type": "linear", "start": self.start, "end": self.end, "rounds": self.rounds}


class FunctionSchedule:
    """Wrap a callable ``round -> k`` as a :class:`Schedule` that checks its output.

    Parameters
    ----------
    fn : callable
        Pure function of the 0-based round returning an integer ``k >= 1``.
        It must be picklable (a module-level function, not a lambda) for the
        schedule to pickle.
    n_rounds : int, optional
        Total rounds, if the function defines them.
    """

    __slots__ = ("fn", "n_rounds")

    def __init__(self, fn: Callable[[int], int], n_rounds: int | None = None) -> None:
        if not callable(fn):
            raise TypeError(f"fn must be callable (round -> k), got {short_repr(fn)}")
        self.fn = fn
        self.n_rounds = None if n_rounds is None else check_int(n_rounds, "n_rounds", minimum=1)

    def __call__(self, iteration: int) -> int:
        """Return ``fn(iteration)`` after checking it is an integer ``>= 1``."""
        it = _check_iteration(iteration)
        k: Any = self.fn(it)  # user code: checked below
        if isinstance(k, float) and k.is_integer():
            k = int(k)
        if isinstance(k, bool) or not isinstance(k, Integral):
            raise TypeError(f"schedule({it}) must return an integer k, got {short_repr(k)}")
        if k < 1:
            raise ValueError(f"schedule({it}) returned k={int(k)!r}; k must be >= 1")
        return int(k)

    def __getstate__(self) -> tuple[Any, int | None]:
        return (self.fn, self.n_rounds)

    def __setstate__(self, state: tuple[Any, int | None]) -> None:
        self.fn, self.n_rounds = state

    def __repr__(self) -> str:
        return f"FunctionSchedule({self.fn!r}, n_rounds={self.n_rounds!r})"


_KNOWN = (Constant, Steps, Linear, FunctionSchedule)


def as_schedule(obj: Any) -> Constant | Steps | Linear | FunctionSchedule:
    """Coerce *obj* to a schedule.

    Parameters
    ----------
    obj : int, Schedule, list of (k, rounds), mapping or callable
        * ``int`` -> :class:`Constant`;
        * a ``Constant``/``Steps``/``Linear``/``FunctionSchedule`` -> itself;
        * a list of ``(k, rounds)`` pairs -> :class:`Steps`;
        * a mapping as written by ``to_dict()`` (``{"type": "steps", "steps":
          [[5, 100], ...]}``, ``{"type": "linear", "start": 5, "end": 20,
          "rounds": 300}``, ``{"type": "constant", "k": 20}``);
        * any other callable ``round -> k`` -> :class:`FunctionSchedule`
          (its ``n_rounds`` attribute is kept when present).

    Returns
    -------
    Schedule

    Raises
    ------
    TypeError
        If *obj* is none of the above.
    ValueError
        If a ``k`` or ``rounds`` is not positive.
    """
    if isinstance(obj, _KNOWN):
        return obj
    if isinstance(obj, (bool,)) or obj is None:
        raise TypeError(
            "schedule must be an int k, a list of (k, rounds) pairs, a Schedule or a callable "
            f"round -> k, got {short_repr(obj)}"
        )
    if isinstance(obj, Integral):
        return Constant(int(obj))
    if isinstance(obj, Mapping):
        return _from_dict(obj)
    if isinstance(obj, Sequence) and not isinstance(obj, (str, bytes)):
        return Steps(obj)
    if callable(obj):
        return FunctionSchedule(obj, getattr(obj, "n_rounds", None))
    raise TypeError(
        "schedule must be an int k, a list of (k, rounds) pairs, a Schedule or a callable "
        f"round -> k, got {short_repr(obj)}"
    )


def _from_dict(data: Mapping[str, Any]) -> Constant | Steps | Linear:
    kind = data.get("type")
    fields = {key: value for key, value in data.items() if key != "type"}
    try:
        if kind == "constant":
            return Constant(**fields)
        if kind == "steps":
            return Steps(fields["steps"])
        if kind == "linear":
            return Linear(**fields)
    except (KeyError, TypeError) as exc:
        if isinstance(exc, TypeError) and "must be" in str(exc):
            raise
        raise ValueError(f"schedule mapping {dict(data)!r} has wrong fields: {exc}") from exc
    raise ValueError(
        f"schedule type must be 'constant', 'steps' or 'linear', got {kind!r} in {dict(data)!r}"
    )


def stages_of(schedule: Any, n_rounds: int | None = None) -> list[tuple[int, int, int]]:
    """Split a schedule into stages of consecutive rounds with equal ``k``.

    Parameters
    ----------
    schedule : Schedule or anything :func:`as_schedule` accepts
    n_rounds : int, optional
        Rounds to cover; defaults to ``schedule.n_rounds``.

    Returns
    -------
    list of (k, first_round, n_rounds_in_stage)

    Examples
    --------
    >>> stages_of([(5, 2), (10, 3)])
    [(5, 0, 2), (10, 2, 3)]
    >>> stages_of(Linear(start=20, end=5, rounds=4))
    [(20, 0, 1), (15, 1, 1), (10, 2, 1), (5, 3, 1)]
    >>> stages_of(10, 7)
    [(10, 0, 7)]
    """
    sched = as_schedule(schedule)
    if n_rounds is None:
        n_rounds = sched.n_rounds
        if n_rounds is None:
            raise ValueError(
                f"n_rounds is required: schedule {sched!r} does not define its number of rounds"
            )
    n_rounds = check_int(n_rounds, "n_rounds", minimum=1)
    stages: list[tuple[int, int, int]] = []
    current = sched(0)
    first = 0
    for it in range(1, n_rounds):
        k = sched(it)
        if k != current:
            stages.append((current, first, it - first))
            current, first = k, it
    stages.append((current, first, n_rounds - first))
    return stages

"""Tests for ltr.objectives.schedules: pure round -> k functions, stages, validation, pickling."""

from __future__ import annotations

import pickle

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from ltr.objectives.schedules import (
    Constant,
    FunctionSchedule,
    Linear,
    Schedule,
    Steps,
    as_schedule,
    stages_of,
)


def _k_at_even_rounds(iteration: int) -> int:
    return 5 if iteration % 2 == 0 else 10


def test_constant_returns_k_every_round():
    s = Constant(7)
    assert [s(i) for i in range(5)] == [7] * 5
    assert s.n_rounds is None
    assert Constant(7, rounds=30).n_rounds == 30


def test_steps_returns_stage_k_and_keeps_last_k_after_the_end():
    s = Steps([(5, 100), (10, 100), (20, 200)])
    assert s.n_rounds == 400
    assert s.stages == [(5, 100), (10, 100), (20, 200)]
    assert s(0) == 5 and s(99) == 5 and s(100) == 10 and s(199) == 10
    assert s(200) == 20 and s(399) == 20 and s(10_000) == 20


def test_reverse_steps_are_first_class():
    s = Steps([(20, 3), (10, 2), (5, 1)])
    assert [s(i) for i in range(7)] == [20, 20, 20, 10, 10, 5, 5]
    assert stages_of(s) == [(20, 0, 3), (10, 3, 2), (5, 5, 1)]


def test_linear_hits_both_end_points_and_is_monotone():
    up = Linear(start=5, end=20, rounds=300)
    ks = np.array([up(i) for i in range(300)])
    assert ks[0] == 5 and ks[-1] == 20 and up(300) == 20
    assert np.all(np.diff(ks) >= 0)
    assert set(ks) == set(range(5, 21))


def test_linear_reverse_is_monotone_decreasing():
    down = Linear(start=20, end=5, rounds=50)
    ks = np.array([down(i) for i in range(50)])
    assert ks[0] == 20 and ks[-1] == 5
    assert np.all(np.diff(ks) <= 0)


def test_linear_matches_closed_form_rounding():
    s = Linear(start=5, end=20, rounds=4)  # 5, 10, 15, 20
    assert [s(i) for i in range(4)] == [5, 10, 15, 20]
    s = Linear(start=1, end=2, rounds=5)  # 1, 1.25, 1.5, 1.75, 2 -> half rounds up
    assert [s(i) for i in range(5)] == [1, 1, 2, 2, 2]


def test_linear_with_one_round():
    s = Linear(start=5, end=20, rounds=1)
    assert s(0) == 5 and s(1) == 20


@given(
    start=st.integers(1, 100),
    end=st.integers(1, 100),
    rounds=st.integers(1, 400),
)
def test_linear_is_monotone_and_bounded_for_any_parameters(start, end, rounds):
    s = Linear(start=start, end=end, rounds=rounds)
    ks = np.array([s(i) for i in range(rounds + 2)])
    lo, hi = min(start, end), max(start, end)
    assert ks.min() >= lo and ks.max() <= hi
    d = np.diff(ks)
    assert np.all(d >= 0) if end >= start else np.all(d <= 0)
    assert ks[0] == start and ks[-1] == end


def test_as_schedule_accepts_int_list_schedule_mapping_and_callable():
    assert as_schedule(10) == Constant(10)
    assert as_schedule([(5, 2), (10, 3)]) == Steps([(5, 2), (10, 3)])
    lin = Linear(start=5, end=20, rounds=10)
    assert as_schedule(lin) is lin
    f = as_schedule(_k_at_even_rounds)
    assert isinstance(f, FunctionSchedule) and f(0) == 5 and f(1) == 10
    assert f.n_rounds is None
    for s in (Constant(3), Steps([(5, 2), (20, 1)]), lin, Constant(4, rounds=9)):
        assert as_schedule(s.to_dict()) == s
    assert isinstance(f, Schedule) and isinstance(lin, Schedule)


def test_as_schedule_keeps_n_rounds_attribute_of_callables():
    class Half:
        n_rounds = 8

        def __call__(self, iteration):
            return 5 if iteration < 4 else 10

    assert stages_of(as_schedule(Half())) == [(5, 0, 4), (10, 4, 4)]


@pytest.mark.parametrize(
    "schedule",
    [Constant(5), Steps([(5, 10), (10, 10)]), Linear(start=20, end=5, rounds=7),
     FunctionSchedule(_k_at_even_rounds, n_rounds=6)],
)
def test_schedules_pickle_and_give_identical_values(schedule):
    clone = pickle.loads(pickle.dumps(schedule))
    assert [clone(i) for i in range(25)] == [schedule(i) for i in range(25)]
    assert clone.n_rounds == schedule.n_rounds


def test_stages_of_groups_consecutive_equal_k():
    assert stages_of(Steps([(5, 2), (10, 3)])) == [(5, 0, 2), (10, 2, 3)]
    assert stages_of(10, 7) == [(10, 0, 7)]
    assert stages_of(Steps([(5, 2), (5, 3)])) == [(5, 0, 5)]
    # n_rounds overrides the schedule's own length (last k is kept after the end).
    assert stages_of(Steps([(5, 2), (10, 3)]), 8) == [(5, 0, 2), (10, 2, 6)]
    assert stages_of(Steps([(5, 2), (10, 3)]), 1) == [(5, 0, 1)]
    assert stages_of(_k_at_even_rounds, 3) == [(5, 0, 1), (10, 1, 1), (5, 2, 1)]
    stages = stages_of(Linear(start=5, end=20, rounds=300))
    assert sum(n for _, _, n in stages) == 300
    assert [k for k, _, _ in stages] == list(range(5, 21))


@pytest.mark.parametrize(
    ("factory", "exc", "match"),
    [
        (lambda: Steps([(5, 10), (0, 10)]), ValueError, r"steps\[1\]\.k must be >= 1, got 0"),
        (lambda: Steps([(5, 10), (3, -2)]), ValueError, r"steps\[1\]\.rounds must be >= 1, got -2"),
        (lambda: Steps([(5, 0)]), ValueError, r"steps\[0\]\.rounds must be >= 1, got 0"),
        (lambda: Steps([(5.5, 10)]), TypeError, r"steps\[0\]\.k must be an integer, got 5\.5"),
        (lambda: Steps([(5, 10, 3)]), TypeError, r"steps\[0\] must be a \(k, rounds\) pair"),
        (lambda: Steps([]), ValueError, r"steps is empty"),
        (lambda: Steps("5,10"), TypeError, r"steps must be a sequence"),
        (lambda: Constant(0), ValueError, r"k must be >= 1, got 0"),
        (lambda: Constant(-3), ValueError, r"k must be >= 1, got -3"),
        (lambda: Constant(5, rounds=0), ValueError, r"rounds must be >= 1, got 0"),
        (lambda: Linear(start=0, end=5, rounds=10), ValueError, r"start must be >= 1, got 0"),
        (lambda: Linear(start=5, end=-1, rounds=10), ValueError, r"end must be >= 1, got -1"),
        (lambda: Linear(start=5, end=20, rounds=0), ValueError, r"rounds must be >= 1, got 0"),
        (lambda: as_schedule(0), ValueError, r"k must be >= 1, got 0"),
        (lambda: as_schedule(None), TypeError, r"schedule must be .* got None"),
        (lambda: as_schedule("steps"), TypeError, r"schedule must be .* got 'steps'"),
        (lambda: as_schedule(True), TypeError, r"got True"),
        (lambda: as_schedule({"type": "cosine"}), ValueError, r"got 'cosine'"),
        (lambda: as_schedule({"type": "linear", "start": 5}), ValueError, r"wrong fields"),
        (lambda: stages_of(lambda i: 5), ValueError, r"n_rounds is required"),
        (lambda: stages_of(5, 0), ValueError, r"n_rounds must be >= 1, got 0"),
        (lambda: stages_of(lambda i: 5 - i, 10), ValueError, r"schedule\(5\) returned k=0"),
        (lambda: FunctionSchedule(lambda i: "a")(0), TypeError, r"must return an integer k, got 'a'"),
        (lambda: Constant(5)(-1), ValueError, r"iteration must be >= 0, got -1"),
        (lambda: FunctionSchedule(3), TypeError, r"fn must be callable"),
    ],
)
def test_schedules_reject_bad_input_with_informative_errors(factory, exc, match):
    with pytest.raises(exc, match=match):
        factory()

"""The feature workers of permutation importance: results in order, errors propagate."""

from __future__ import annotations

import threading
import time

import pytest

from ltr.inspection._permutation import _in_threads


def test_in_threads_yields_results_in_item_order_from_several_threads():
    names = set()

    def fn(item: int) -> int:
        names.add(threading.current_thread().name)
        time.sleep(0.002 * (item % 3))  # finishing out of order
        return item * item

    items = [5, 0, 3, 8, 1, 2, 7]
    assert list(_in_threads(fn, items, 2)) == [i * i for i in items]
    assert all(n.startswith("ltr-importance") for n in names)


def test_in_threads_raises_the_worker_error_and_cancels_the_rest():
    started = []

    def fn(item: int) -> int:
        started.append(item)
        if item == 1:
            raise ValueError("bad feature 1")
        time.sleep(0.01)
        return item

    with pytest.raises(ValueError, match="bad feature 1"):
        list(_in_threads(fn, list(range(50)), 2))
    assert len(started) < 50

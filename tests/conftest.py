"""Shared fixtures: LightGBM's lambdarank example, as a committed slice and as the full set.

* ``letor_slice_dir``: ``tests/data/lightgbm-lambdarank`` (40 training / 10 test
  queries), always present.
* ``letor_set``: the full set ``../shared/data/lightgbm-lambdarank`` (201 / 50
  queries) when it sits beside the repository, else the slice; a
  :class:`LetorSet` whose ``name`` ("full" or "slice") lets a test pick
  thresholds derived for that set.  For the larger checks.
* ``lambdarank_dir``: ``letor_set.path`` (kept for tests written against the
  full set).
* ``letor_any_dir``: parametrized over every available set (``[slice]`` or
  ``[slice, full]``), for cheap checks worth running on both.
* ``dask_client``: a client of a fresh ``LocalCluster`` per test module: worker
  processes of 1 thread each (2, or the module's ``DASK_WORKERS``), loopback, no
  dashboard; skips without ``distributed``.

``LTR_NO_SHARED=1`` hides ``../shared`` to run the suite as a clean clone does.
Nothing here skips: without ``../shared`` every test runs on the slice.
"""

from __future__ import annotations

import os
import warnings
from pathlib import Path
from typing import NamedTuple

# OpenMP threads that spin while waiting make small numba/LightGBM calls crawl on
# a busy 2-core machine; must be set before any OpenMP runtime starts.
os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
os.environ.setdefault("MPLBACKEND", "Agg")

import pytest

from ltr.testing import letor_full_path, letor_slice_path

REPO_ROOT = Path(__file__).resolve().parents[1]


class LetorSet(NamedTuple):
    """One copy of LightGBM's lambdarank example: ``name`` is "full" or "slice"."""

    name: str
    path: Path


def _available_sets() -> list[LetorSet]:
    sets = [LetorSet("slice", letor_slice_path())]
    full = letor_full_path()
    if full is not None:
        sets.append(LetorSet("full", full))
    return sets


def pytest_report_header(config):
    names = ", ".join(f"{s.name}={s.path}" for s in _available_sets())
    return f"ltr LETOR data: {names}"


@pytest.fixture(scope="session")
def letor_slice_dir() -> Path:
    """The committed slice (40 training / 10 test queries, 300 features)."""
    return letor_slice_path()


@pytest.fixture(scope="session")
def letor_set() -> LetorSet:
    """The full shared set when present, else the committed slice."""
    return _available_sets()[-1]


@pytest.fixture(scope="session")
def lambdarank_dir(letor_set) -> Path:
    """Folder of LightGBM's examples/lambdarank data: the full set, or the slice without it."""
    return letor_set.path


@pytest.fixture(scope="session", params=_available_sets(), ids=lambda s: s.name)
def letor_any_dir(request) -> LetorSet:
    """Each available set in turn: the slice, then the full set when present."""
    return request.param


@pytest.fixture
def rescoring_paths(monkeypatch):
    """Permutation importance takes its tree paths even on the small test sets.

    Below a work threshold (``ltr.inspection._permutation._SMALL_WORK``) the engine
    predicts every permutation in full; the tests of the rescoring and change-detection
    paths use small data, so they lower the threshold to 0 (the small-job path has its
    own tests in ``test_inspection_small_jobs.py``).
    """
    from ltr.inspection import _permutation

    monkeypatch.setattr(_permutation, "_SMALL_WORK", 0)


@pytest.fixture(scope="module")
def dask_client(request):
    pytest.importorskip("distributed")
    from distributed import Client, LocalCluster

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        cluster = LocalCluster(n_workers=getattr(request.module, "DASK_WORKERS", 2),
                               threads_per_worker=1, processes=True, host="127.0.0.1",
                               dashboard_address=None)
    client = Client(cluster)
    yield client
    client.close()
    cluster.close()

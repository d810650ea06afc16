"""Shared fixtures: the real LETOR-style set from ``../shared/data``."""

from __future__ import annotations

import os
from pathlib import Path

# OpenMP threads that spin while waiting make small numba/LightGBM calls crawl on
# a busy 2-core machine; must be set before any OpenMP runtime starts.
os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
os.environ.setdefault("MPLBACKEND", "Agg")

import pytest

REPO_ROOT = Path(__file__).resolve().parents[1]
SHARED_DATA = REPO_ROOT.parent / "shared" / "data" / "lightgbm-lambdarank"


@pytest.fixture(scope="session")
def lambdarank_dir() -> Path:
    """Folder of LightGBM's examples/lambdarank data; skips where it is absent."""
    if not (SHARED_DATA / "rank.train").exists():
        pytest.skip(
            f"real LETOR data not found at {SHARED_DATA} "
            "(expected ../shared/data/lightgbm-lambdarank beside the repository)"
        )
    return SHARED_DATA

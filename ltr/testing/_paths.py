"""Where the real LETOR-style test data live: the committed slice and the shared full set."""

from __future__ import annotations

import os
from pathlib import Path

__all__ = ["NO_SHARED_ENV", "letor_full_path", "letor_path", "letor_slice_path"]

#: Environment variable that hides ``../shared`` (set to anything but ``""``/``"0"``),
#: to run the suite as a clone without the shared data would.
NO_SHARED_ENV = "LTR_NO_SHARED"

# ltr/testing/_paths.py -> the repository root (a source checkout or editable install).
_REPO_ROOT = Path(__file__).resolve().parents[2]
_SLICE = _REPO_ROOT / "tests" / "data" / "lightgbm-lambdarank"
_SHARED = _REPO_ROOT.parent / "shared" / "data" / "lightgbm-lambdarank"


def letor_slice_path() -> Path:
    """Folder of the committed slice of LightGBM's ``examples/lambdarank`` data.

    The slice (``rank.train``: first 40 training queries, 570 rows;
    ``rank.test``: first 10 test queries, 168 rows; their ``.query`` group-size
    files; 300 features, labels 0-4; MIT licence) lives in the repository under
    ``tests/data/lightgbm-lambdarank``.

    Returns
    -------
    pathlib.Path
        The folder holding ``rank.train``, ``rank.train.query``, ``rank.test``
        and ``rank.test.query``.

    Raises
    ------
    FileNotFoundError
        If ``ltr`` is not imported from a source checkout (an installed wheel
        does not carry ``tests/``).

    Examples
    --------
    >>> from ltr.datasets import load_letor
    >>> from ltr.testing import letor_slice_path
    >>> load_letor(letor_slice_path() / "rank.train").n_queries  # doctest: +SKIP
    40
    """
    if not (_SLICE / "rank.train").is_file():
        raise FileNotFoundError(
            f"the committed LETOR slice is not at {_SLICE}: ltr.testing.letor_slice_path() "
            "needs ltr imported from a source checkout (tests/data is not installed)"
        )
    return _SLICE


def letor_full_path() -> Path | None:
    """Folder of the full shared set ``../shared/data/lightgbm-lambdarank``, if present.

    The folder is looked for beside the repository.  Setting the environment
    variable ``LTR_NO_SHARED=1`` hides it, to run as a clone without it would.

    Returns
    -------
    pathlib.Path or None
        The folder (201 training queries, 50 test queries), or ``None`` when it
        is absent or hidden.
    """
    if os.environ.get(NO_SHARED_ENV, "") not in ("", "0"):
        return None
    return _SHARED if (_SHARED / "rank.train").is_file() else None


def letor_path() -> Path:
    """Return the full shared set when present (see :func:`letor_full_path`), else the slice.

    Returns
    -------
    pathlib.Path
    """
    full = letor_full_path()
    return full if full is not None else letor_slice_path()

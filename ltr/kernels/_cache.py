"""Whether numba's on-disk cache holds ltr's compiled kernels (a cold cache means minutes).

The kernels are ``@njit(cache=True)``: the first call in a fresh environment
compiles them (10-50 s in all, on a loaded machine) and writes them to numba's
cache (``__pycache__`` beside the sources, or ``NUMBA_CACHE_DIR``); later
processes load them in well under a second.  The ``ltr`` command uses
:func:`kernels_cached` to announce the compilation once instead of sitting
silent.
"""

from __future__ import annotations

import importlib
import os
import pkgutil

__all__ = ["kernels_cached"]


def kernels_cached() -> bool | None:
    """Return whether any cached kernel of ``ltr.kernels`` has a compiled index on disk.

    Returns
    -------
    bool or None
        ``False`` when no kernel has been compiled into the cache yet (the
        first use will compile), ``True`` when some have, ``None`` when numba's
        cache layout cannot be read (a numba version whose internals differ).

    Examples
    --------
    >>> kernels_cached() in (True, False, None)
    True
    """
    package = __name__.rsplit(".", 1)[0]
    folder = os.path.dirname(__file__)
    seen = False
    try:
        for info in pkgutil.iter_modules([folder]):
            if info.name == "_cache":
                continue
            module = importlib.import_module(f"{package}.{info.name}")
            for obj in vars(module).values():
                cache = getattr(obj, "_cache", None)
                index = getattr(getattr(cache, "_cache_file", None), "_index_path", None)
                if index is None:
                    continue
                seen = True
                if os.path.exists(index):
                    return True
    except (AttributeError, ImportError, OSError, TypeError):  # numba internals differ:
        # say nothing rather than something wrong
        return None
    return False if seen else None

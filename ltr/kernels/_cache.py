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

__all__ = ["frozen", "kernels_cached"]


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


def frozen(array):
    """Return a read-only view of *array* (itself if already read-only; ``None`` stays ``None``).

    Numba compiles a separate machine-code version of a kernel for a
    read-only and for a writable array of the same dtype.  Inputs reach the
    kernels both ways (pandas 3's copy-on-write columns and ``np.frombuffer``
    give read-only arrays, most others writable), so a kernel's wrapper hands
    its read-only inputs over as views made read-only here: one compilation
    instead of up to four (each 2-7 s on a 2-core machine).  No data is copied.
    """
    if array is None or not array.flags.writeable:
        return array
    view = array.view()
    view.flags.writeable = False
    return view

"""UTF-8 bytes of Python ``str`` objects, read in place and in parallel (CPython only).

Copying millions of Python strings into one buffer (``pyarrow.array``) holds
the GIL and touches each object once, single-threaded; this module reads the
objects' own bytes from numba threads instead, hashes them, and hands them
out as views (``(starts, ends, data)``, ``data`` a read-only array over the
memory holding the characters), so nothing is copied.  It relies on CPython's layout
of a *compact ASCII* string (``PyASCIIObject``: type pointer at byte 8, length
at 16, state bits at 32, the characters right after the header, whose size is
``sys.getsizeof("") - 1``).  :func:`layout` checks that layout on probe
strings once per process and returns ``None`` where it does not hold (another
interpreter, a free-threaded build, a layout change): callers then take their
portable path.  Only exact ``str`` objects flagged compact and ASCII are read
(anything else makes :func:`ascii_views` return ``None``); the object array
is held by the caller for the whole read.  Nothing here validates input or
imports from the rest of ``ltr``.
"""

from __future__ import annotations

import ctypes
import platform
import sys
from functools import lru_cache

import numpy as np
from llvmlite import ir
from numba import njit, prange, types
from numba.core.errors import NumbaError
from numba.extending import intrinsic

_TYPE_AT = 8  # PyObject.ob_type
_LENGTH_AT = 16  # PyASCIIObject.length
_STATE_AT = 32  # PyASCIIObject.state (bit field: interned:2, kind:3, compact:1, ascii:1)
_STATE_MASK = 0b1111100  # kind, compact and ascii bits
_STATE_ASCII = 0b1100100  # kind 1 (one byte per character), compact, ascii


@intrinsic
def _load_u8(typingctx, addr):  # type: ignore[no-untyped-def]
    def codegen(context, builder, sig, args):  # type: ignore[no-untyped-def]
        return builder.load(builder.inttoptr(args[0], ir.IntType(8).as_pointer()))

    return types.uint8(types.uint64), codegen


@intrinsic
def _load_u32(typingctx, addr):  # type: ignore[no-untyped-def]
    def codegen(context, builder, sig, args):  # type: ignore[no-untyped-def]
        return builder.load(builder.inttoptr(args[0], ir.IntType(32).as_pointer()))

    return types.uint32(types.uint64), codegen


@intrinsic
def _load_u64(typingctx, addr):  # type: ignore[no-untyped-def]
    def codegen(context, builder, sig, args):  # type: ignore[no-untyped-def]
        return builder.load(builder.inttoptr(args[0], ir.IntType(64).as_pointer()))

    return types.uint64(types.uint64), codegen


def addresses(values: np.ndarray) -> np.ndarray:
    """Return the object pointers of a C-contiguous 1-D object array as a read-only uint64 view."""
    n = values.shape[0]
    if n == 0:
        return np.zeros(0, dtype=np.uint64)
    return np.asarray(_Memory(values.ctypes.data, n, "<u8"))


@njit(cache=True, inline="always")
def _is_ascii_str(p, str_type, state_mask, state_ascii):
    return _load_u64(p + np.uint64(_TYPE_AT)) == str_type and (
        _load_u32(p + np.uint64(_STATE_AT)) & state_mask) == state_ascii


@njit(cache=True, parallel=True)
def _ascii_spans(ptrs, base, str_type, state_mask, state_ascii, header, starts, ends, keys):
    """Write each object's character address range and (given room) FNV-1a hash.

    ``starts[i]``/``ends[i]`` receive the addresses of the first and one past
    the last character, less ``base``.  Returns how many objects are not
    compact ASCII str.
    """
    bad = 0
    hashed = keys.shape[0] > 0
    prime = np.uint64(1099511628211)
    for i in prange(ptrs.shape[0]):
        p = ptrs[i]
        if not _is_ascii_str(p, str_type, state_mask, state_ascii):
            bad += 1
            starts[i] = 0
            ends[i] = 0
            continue
        n = _load_u64(p + np.uint64(_LENGTH_AT))
        src = p + np.uint64(header)
        starts[i] = np.int64(src - base)
        ends[i] = np.int64(src + n - base)
        if hashed:
            h = np.uint64(14695981039346656037)
            for j in range(n):
                h = (h ^ np.uint64(_load_u8(src + np.uint64(j)))) * prime
            keys[i] = h
    return bad


@njit(cache=True, parallel=True)
def _differs(ptrs, at, str_type, state_mask, state_ascii, header, differs):
    """Set ``differs[k]`` where the string at ``ptrs[at[k]]`` differs from the previous one.

    The two objects (``at[k] > 0``) are compared by bytes.  Returns how many
    objects read are not compact ASCII str.
    """
    bad = 0
    for k in prange(at.shape[0]):
        p = ptrs[at[k]]
        q = ptrs[at[k] - 1]
        if not _is_ascii_str(p, str_type, state_mask, state_ascii) or not _is_ascii_str(
                q, str_type, state_mask, state_ascii):
            bad += 1
            continue
        n = _load_u64(p + np.uint64(_LENGTH_AT))
        same = n == _load_u64(q + np.uint64(_LENGTH_AT))
        j = np.uint64(0)
        while same and j < n:
            same = _load_u8(p + np.uint64(header) + j) == _load_u8(q + np.uint64(header) + j)
            j += np.uint64(1)
        differs[k] = not same
    return bad


def memory_view(base: int, size: int) -> np.ndarray:
    """Return a read-only uint8 array over ``size`` bytes of memory at address ``base``.

    Nothing is read or copied; the caller reads only bytes of objects it holds.
    """
    return np.asarray(_Memory(base, size))


class _Memory:
    """``size`` items at address ``base``, through NumPy's array interface (read-only).

    No ctypes array type is made per size (ctypes keeps every one it makes).
    """

    def __init__(self, base: int, size: int, typestr: str = "|u1") -> None:
        self.__array_interface__ = {"data": (base, True), "shape": (size,),
                                    "typestr": typestr, "version": 3}


def _views(values: np.ndarray, header: int,
           keys: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray, np.ndarray] | None:
    values = np.ascontiguousarray(values, dtype=object)
    n = values.shape[0]
    ptrs = addresses(values)
    starts = np.empty(n, dtype=np.int64)
    ends = np.empty(n, dtype=np.int64)
    if n == 0:
        return starts, ends, np.frombuffer(b"", dtype=np.uint8)
    base = ptrs.min()  # every object's characters follow its header
    if _ascii_spans(ptrs, base, np.uint64(id(str)), np.uint32(_STATE_MASK),
                    np.uint32(_STATE_ASCII), header, starts, ends,
                    np.zeros(0, dtype=np.uint64) if keys is None else keys):
        return None
    return starts, ends, memory_view(int(base), int(ends.max()))


@lru_cache(maxsize=1)
def layout() -> int | None:
    """Return the header size of a compact ASCII string if the in-place read works, else None."""
    if (sys.implementation.name != "cpython" or ctypes.sizeof(ctypes.c_void_p) != 8
            or getattr(sys, "_is_gil_enabled", lambda: True)() is False
            or "free-threading" in sys.version or platform.python_implementation() != "CPython"):
        return None
    header = sys.getsizeof("") - 1
    probes = np.array(["", "a", "qid_17", "x" * 100, "doc-" + str(42)], dtype=object)
    try:
        got = _views(probes, header)
        others = np.array(["caf\u00e9", "\u4e2d"], dtype=object)  # not ASCII: must be refused
        refused = all(_views(others[i : i + 1], header) is None for i in range(2))
    except (TypeError, ValueError, OSError, NumbaError):  # pragma: no cover - portable path
        return None
    if got is None or not refused:
        return None
    starts, ends, data = got
    expected = [s.encode() for s in probes]
    ok = all(data[starts[i] : ends[i]].tobytes() == e for i, e in enumerate(expected))
    return header if ok else None


def ascii_views(
    values: np.ndarray, keys: np.ndarray | None = None
) -> tuple[np.ndarray, np.ndarray, np.ndarray] | None:
    """Return ``(starts, ends, data)`` of an object array of ASCII ``str``, or None.

    String ``i`` is ``data[starts[i]:ends[i]]``, where ``data`` views the
    process memory holding the objects' characters: nothing is copied, and the
    views are valid while the caller holds *values*.  None when the
    interpreter's layout is not the one checked by :func:`layout` or when any
    element is not an exact, compact, ASCII ``str`` (None, NaN, numbers,
    non-ASCII text, ``str`` subclasses): the caller then converts the array
    another way.  Given ``keys`` (uint64, one per element), each string's
    64-bit FNV-1a hash is written there in the same pass
    (:func:`ltr.kernels._judgments.hash_strings` of the same bytes).
    """
    header = layout()
    if header is None:
        return None
    return _views(values, header, keys)


def run_starts(values: np.ndarray) -> np.ndarray | None:
    """Positions where an object array of ASCII ``str`` changes value (0 included), or None.

    Neighbours holding the same object are equal without reading it, so a
    column of repeated query ids costs one pass over its pointers.  None as
    for :func:`ascii_views`.
    """
    header = layout()
    if header is None:
        return None
    values = np.ascontiguousarray(values, dtype=object)
    ptrs = addresses(values)
    if ptrs.shape[0] == 0:
        return np.zeros(0, dtype=np.int64)
    at = np.flatnonzero(ptrs[1:] != ptrs[:-1]) + 1  # another object: maybe another string
    differs = np.empty(at.shape[0], dtype=np.bool_)
    if _differs(ptrs, at, np.uint64(id(str)), np.uint32(_STATE_MASK), np.uint32(_STATE_ASCII),
                header, differs) or (ptrs.shape[0] and not _is_str_object(values[0])):
        return None
    return np.r_[0, at[differs]].astype(np.int64)


def _is_str_object(value: object) -> bool:
    return type(value) is str and value.isascii()


__all__ = ["addresses", "ascii_views", "layout", "memory_view", "run_starts"]

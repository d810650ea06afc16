"""The one writer for files, the one JSON sanitiser and the one data digest.

Every file ``ltr`` writes (checkpoints, models, run folders, plots, reports)
goes through :func:`write_atomic`: a temporary file in the same folder,
flushed and synced, then renamed over the target, so a crash leaves either
the old file or the new one, never half of one.
"""

from __future__ import annotations

import errno
import hashlib
import json
import math
import os
import tempfile
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np

__all__ = ["check_file_set", "digest_arrays", "png_bytes", "png_img_tag", "to_jsonable",
           "write_atomic", "write_file_set", "write_png"]


def write_atomic(path: str | os.PathLike[str], data: str | bytes) -> Path:
    """Write *data* to *path* through a temporary file and an atomic rename.

    Parameters
    ----------
    path : path-like
        Target file; its folder must exist.
    data : str or bytes
        Text (written as UTF-8) or raw bytes.

    Returns
    -------
    Path
        *path*.
    """
    path = Path(path)
    mode = "wb" if isinstance(data, bytes) else "w"
    try:
        fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    except OSError as exc:
        raise _named(exc, path) from exc
    try:
        with os.fdopen(fd, mode, encoding=None if mode == "wb" else "utf-8") as fh:
            fh.write(data)
            fh.flush()
            os.fsync(fh.fileno())
        os.chmod(tmp, 0o644)  # mkstemp makes 0600; give the usual file mode
        os.replace(tmp, path)
    except BaseException as exc:
        if os.path.exists(tmp):
            os.unlink(tmp)
        if isinstance(exc, OSError):
            raise _named(exc, path) from exc
        raise
    return path


def write_png(fig: Any, path: str | os.PathLike[str], *, dpi: int = 110) -> Path:
    """Write a matplotlib figure as PNG through :func:`write_atomic` (the one plot writer).

    Parameters
    ----------
    fig : matplotlib.figure.Figure
        A laid-out figure.
    path : path-like
        Target file.
    dpi : int, default=110
        Resolution.

    Returns
    -------
    Path
        *path*.
    """
    return write_atomic(path, png_bytes(fig, dpi=dpi))


def png_bytes(fig: Any, *, dpi: int = 110) -> bytes:
    """Return a matplotlib figure's PNG bytes (for :func:`write_file_set`)."""
    import io

    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=dpi)
    return buf.getvalue()


#: Present while :func:`write_file_set` writes a folder; left behind by an interrupted write.
INCOMPLETE_MARKER = "INCOMPLETE"
#: Written last by :func:`write_file_set`: the files of the set and their digests.
MANIFEST = "manifest.json"


def write_file_set(directory: str | os.PathLike[str], files: Mapping[str, str | bytes], *,
                   producer: str) -> dict[str, Path]:
    """Write several files that belong together so that a kill leaves them visibly incomplete.

    The folder is created when missing.  An :data:`INCOMPLETE_MARKER` file is
    written first (and an older :data:`MANIFEST` removed), then every file
    through :func:`write_atomic`, then :data:`MANIFEST` (names and digests), and
    the marker is removed last.  A folder with the marker, or whose files do not
    match its manifest, is incomplete: :func:`check_file_set` says so.

    Parameters
    ----------
    directory : path-like
        Target folder (other files in it are left alone).
    files : mapping of str to str or bytes
        File name (no folders) -> content.
    producer : str
        What writes the set (``"ltr compare"``), recorded in the marker and the manifest.

    Returns
    -------
    dict of str to Path
        File name -> path written.
    """
    d = Path(directory)
    try:
        d.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise _named(exc, d) from exc
    marker = d / INCOMPLETE_MARKER
    write_atomic(marker, f"{producer} was writing this folder and did not finish: its files "
                         "need not belong to one result; run the command again\n")
    (d / MANIFEST).unlink(missing_ok=True)
    out = {name: write_atomic(d / name, data) for name, data in files.items()}
    digests = {name: hashlib.blake2b(data.encode() if isinstance(data, str) else data,
                                     digest_size=16).hexdigest() for name, data in files.items()}
    write_atomic(d / MANIFEST, json.dumps({"producer": producer, "files": digests},
                                          indent=1) + "\n")
    marker.unlink()
    return out


def check_file_set(directory: str | os.PathLike[str]) -> dict[str, Path]:
    """Check that a folder written by :func:`write_file_set` is complete; return its files.

    ``ltr compare --out`` and ``ltr monitor --out`` write their files as one set;
    a folder left by a killed command still holds the ``INCOMPLETE`` marker.

    Parameters
    ----------
    directory : path-like
        The output folder.

    Returns
    -------
    dict of str to Path
        File name -> path, for every file of the set.

    Raises
    ------
    ValueError
        The folder holds the :data:`INCOMPLETE_MARKER`, has no :data:`MANIFEST`,
        or a file is missing or differs from the manifest (the message names it).
    """
    d = Path(directory)
    if (d / INCOMPLETE_MARKER).exists():
        raise ValueError(f"{str(d)!r} is incomplete: its writer was interrupted "
                         f"({INCOMPLETE_MARKER} is present); run the command again")
    try:
        manifest = json.loads((d / MANIFEST).read_text(encoding="utf-8"))
        files = dict(manifest["files"])
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise ValueError(f"{str(d)!r}: no readable {MANIFEST} ({exc}); the folder is not a "
                         "complete result") from None
    out = {}
    for name, digest in files.items():
        p = d / name
        if not p.is_file() or hashlib.blake2b(p.read_bytes(), digest_size=16).hexdigest() != digest:
            raise ValueError(f"{str(d)!r} is incomplete: {name!r} is missing or differs from "
                             f"{MANIFEST}; run the command again")
        out[name] = p
    return out


def png_img_tag(path: str | os.PathLike[str] | bytes, alt: str) -> str:
    """Return an HTML ``<img>`` with the PNG *path* (a file, or its bytes) embedded as a data URI.

    The one way a report embeds a plot, so every HTML report opens on its own
    (mailed, attached, moved away from its folder).

    Parameters
    ----------
    path : path-like or bytes
        A PNG file, or a PNG's bytes (a plot not yet written, see :func:`png_bytes`).
    alt : str
        The image's text alternative (HTML-escaped here).

    Returns
    -------
    str

    Examples
    --------
    >>> import tempfile, pathlib
    >>> p = pathlib.Path(tempfile.mkdtemp()) / "x.png"
    >>> _ = p.write_bytes(b"PNG")
    >>> png_img_tag(p, "a < b")
    '<img alt="a &lt; b" src="data:image/png;base64,UE5H">'
    """
    import base64
    import html

    raw = path if isinstance(path, bytes) else Path(path).read_bytes()
    data = base64.b64encode(raw).decode("ascii")
    return f'<img alt="{html.escape(alt)}" src="data:image/png;base64,{data}">'


def _named(exc: OSError, path: Path) -> OSError:
    """Return the same kind of OSError, its message naming the file that could not be written."""
    reason = exc.strerror or str(exc)
    hint = " (the disk is full: free space and run again)" if exc.errno == errno.ENOSPC else ""
    out = type(exc)(exc.errno, f"cannot write {str(path)!r}: {reason}{hint}")
    return out


def to_jsonable(value: Any) -> Any:
    """Plain JSON data: numpy scalars and arrays to Python, NaN/inf to None, keys to str.

    Objects that are neither containers nor scalars become their ``to_dict()``
    when they have one, else their ``repr``.
    """
    if isinstance(value, Mapping):
        return {str(k): to_jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [to_jsonable(v) for v in value]
    if isinstance(value, np.ndarray):
        return to_jsonable(value.tolist())  # 0-d arrays become scalars
    if isinstance(value, (bool, np.bool_)):
        return bool(value)
    if isinstance(value, (int, np.integer)):
        return int(value)
    if isinstance(value, (float, np.floating)):
        v = float(value)
        return v if math.isfinite(v) else None
    if value is None or isinstance(value, str):
        return value
    if isinstance(value, os.PathLike):
        return os.fspath(value)
    if hasattr(value, "to_dict"):
        try:
            return to_jsonable(value.to_dict())
        except Exception:  # noqa: BLE001, S110 - foreign objects fall back to repr
            pass
    return repr(value)


def digest_arrays(*arrays: Any) -> str:
    """Hex digest (BLAKE2b, 16 bytes) of arrays' dtypes, shapes and bytes.

    ``None`` entries and scipy sparse matrices are accepted.  Used to detect
    changed data on resume and on reuse of a run's config.
    """
    h = hashlib.blake2b(digest_size=16)
    for arr in arrays:
        if arr is None:
            h.update(b"none")
            continue
        if hasattr(arr, "tocsr") and hasattr(arr, "nnz"):
            csr = arr.tocsr()
            h.update(str(("csr", csr.shape)).encode())
            for part in (csr.data, csr.indices, csr.indptr):
                # numpy's stubs give ndarray __buffer__ only for Python >= 3.12
                h.update(np.ascontiguousarray(part).view(np.uint8).reshape(-1))  # type: ignore[arg-type]
            continue
        a = np.ascontiguousarray(arr)
        h.update(str((a.dtype.str, a.shape)).encode())
        h.update(a.view(np.uint8).reshape(-1))  # type: ignore[arg-type]  # (as above)
    return h.hexdigest()

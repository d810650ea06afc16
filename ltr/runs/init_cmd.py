"""The example configs shipped with the package, and ``ltr init`` that copies them.

The configs live once, in ``configs/`` at the repository root; ``ltr/configs``
is a symbolic link to that folder, and the wheel carries the files as package
data.  So an installed package (no clone) can

* run one by its bare name: ``ltr train quickstart`` (:func:`shipped_config`,
  used by :func:`ltr.runs.config.load_config` when no such file exists), and
* copy them all into a folder to edit: ``ltr init [--out DIR]``
  (:func:`init_configs`).
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path

from ltr._io import write_atomic

__all__ = ["InitResult", "init_configs", "shipped_config", "shipped_configs"]

_SUFFIX = ".yaml"


def shipped_configs() -> dict[str, Path]:
    """Return the example configs carried by the package, by name (the file's stem).

    Returns
    -------
    dict of str to Path
        ``{"quickstart": .../ltr/configs/quickstart.yaml, ...}``, sorted by name;
        empty when the package was installed without them.

    Examples
    --------
    >>> "quickstart" in shipped_configs()
    True
    """
    folder = Path(str(resources.files("ltr") / "configs"))
    if not folder.is_dir():
        return {}
    return {p.stem: p for p in sorted(folder.glob(f"*{_SUFFIX}")) if p.is_file()}


def shipped_config(name: str | os.PathLike[str]) -> Path | None:
    """Return the shipped config a bare *name* stands for, or None.

    A bare name has no folder part: ``quickstart`` or ``quickstart.yaml``.
    Anything with a folder part (``configs/quickstart.yaml``) is a path and is
    never looked up here.

    Parameters
    ----------
    name : str or path-like
        What the user gave as CONFIG.

    Returns
    -------
    Path or None

    Examples
    --------
    >>> shipped_config("quickstart").name
    'quickstart.yaml'
    >>> shipped_config("configs/quickstart.yaml") is None
    True
    """
    text = os.fspath(name)
    if not text or os.sep in text or (os.altsep and os.altsep in text) or "/" in text:
        return None
    return shipped_configs().get(text.removesuffix(_SUFFIX))


def not_found_hint(name: str | os.PathLike[str]) -> str:
    """Return the hint for a 'config file not found' message about a bare *name* (else ``""``)."""
    text = os.fspath(name)
    if "/" in text or os.sep in text:
        return ""
    names = ", ".join(shipped_configs()) or "none installed"
    return f" (shipped examples, run by name: {names}; `ltr init` copies them into ./configs)"


@dataclass
class InitResult:
    """What :func:`init_configs` returns.

    Attributes
    ----------
    folder : Path
        Where the configs were copied.
    files : list of Path
        The files written, in name order.
    """

    folder: Path
    files: list[Path] = field(default_factory=list)


def init_configs(
    out: str | os.PathLike[str] = "configs", *, force: bool = False
) -> InitResult:
    """Copy every shipped example config into the folder *out*.

    Nothing is written when any target file exists already (unless *force*),
    so a second ``ltr init`` never overwrites edited configs half-way.

    Parameters
    ----------
    out : path-like, default='configs'
        Folder to copy into (created when missing).  With the default, the
        commands in the configs' comments (``ltr train configs/quickstart.yaml``)
        run as written from the folder ``ltr init`` ran in.
    force : bool, default=False
        Overwrite existing files of the same names.

    Returns
    -------
    InitResult

    Raises
    ------
    FileExistsError
        When a target file exists and *force* is false (naming the files and
        ``--force``).
    NotADirectoryError
        When *out* exists and is not a folder.
    FileNotFoundError
        When the package carries no configs (a broken install).
    """
    configs = shipped_configs()
    if not configs:
        raise FileNotFoundError(
            "this installation of ltr carries no example configs (ltr/configs is missing); "
            "reinstall ltr-rank"
        )
    folder = Path(out)
    if folder.exists() and not folder.is_dir():
        raise NotADirectoryError(f"--out: {str(folder)!r} exists and is not a folder")
    targets = {folder / p.name: p for p in configs.values()}
    existing = [t for t in targets if t.exists()]
    if existing and not force:
        shown = ", ".join(str(t) for t in existing[:4]) + (", ..." if len(existing) > 4 else "")
        raise FileExistsError(
            f"--out: {len(existing)} of the example configs exist already in {str(folder)!r} "
            f"({shown}); nothing was copied (use --force to overwrite, or another --out)"
        )
    folder.mkdir(parents=True, exist_ok=True)
    written = [write_atomic(t, src.read_bytes()) for t, src in targets.items()]
    return InitResult(folder=folder, files=written)

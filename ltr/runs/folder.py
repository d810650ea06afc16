"""Run folders: creation (never reused), config and version header, logs, resume checks.

A run folder ``<output.runs_dir>/<name>-<YYYYmmdd-HHMMSS>/`` is created
exclusively and holds ``config.yaml`` (the resolved config with versions and
seed), ``models/`` (one engine model per stage, written as the stage ends),
``model.json`` (``RankingModel.save``), ``model.lightgbm.txt``/``model.xgboost.json`` (the
engine's native model with feature names, for serving), ``metrics.json``,
``curves.csv``/``curves.png``, optional ``importance.csv``/``.png``,
``report.md``/``report.html``, ``run.log`` and finally ``DONE``.  A folder
without ``DONE`` is unfinished; ``ltr train --resume`` completes it.
"""

from __future__ import annotations

import json
import logging
import os
import platform
import sys
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from ltr._io import digest_arrays, write_atomic
from ltr.runs.config import (
    ConfigError,
    RunConfig,
    RunError,
    config_fingerprint,
    config_to_dict,
    diff_configs,
    dump_config,
    load_config,
    resolve_data_paths,
)

if TYPE_CHECKING:  # pragma: no cover
    from ltr.datasets import RankingData

__all__ = [
    "DONE_MARKER",
    "MODEL_FILE",
    "check_out_folder",
    "check_resume",
    "check_same_data",
    "data_summary",
    "load_run_config",
    "load_run_model",
    "mark_done",
    "new_run_dir",
    "prepare_config",
    "progress_enabled",
    "remove_run_dir",
    "run_log",
    "versions",
    "write_run_config",
]

log = logging.getLogger("ltr.runs")

DONE_MARKER = "DONE"
MODEL_FILE = "model.json"


def _data_digest(ds: RankingData) -> str:
    """Digest of a set's features, labels and query ids (detects changed data on reuse)."""
    return digest_arrays(ds.X, ds.y, ds.qid)


def versions(cfg: RunConfig) -> dict[str, str]:
    """Return the versions of the package, the run's engine and the libraries it uses."""
    import pandas
    import sklearn

    import ltr
    from ltr.engines import get_adapter

    return {
        "ltr": ltr.__version__,
        cfg.model.engine: get_adapter(cfg.model.engine).version(),
        "numpy": np.__version__,
        "pandas": pandas.__version__,
        "scikit-learn": sklearn.__version__,
        "python": platform.python_version(),
    }


def check_out_folder(out: str | os.PathLike[str], option: str = "--out") -> Path:
    """Check a folder a command writes against the one rule: new, or existing and empty.

    Every ``ltr`` command that writes a folder (train, tune, importance with a
    config, compare, monitor) checks its ``--out`` with this before any work.

    Raises
    ------
    RunError
        *out* is a file, or a folder that is not empty.
    """
    path = Path(out)
    if path.exists():
        if not path.is_dir():
            raise RunError(f"{option}: {str(path)!r} exists and is not a folder; give a new folder")
        if any(path.iterdir()):
            raise RunError(
                f"{option}: {str(path)!r} already exists and is not empty; ltr never overwrites "
                "a folder (choose a new or empty one, or --resume a run)"
            )
    return path


def new_run_dir(cfg: RunConfig, out: str | os.PathLike[str] | None, suffix: str = "") -> Path:
    """Create a fresh run folder (exclusively; an existing non-empty folder is an error)."""
    if out is not None:
        path = check_out_folder(out)
        path.mkdir(parents=True, exist_ok=True)
        return path
    runs = Path(cfg.output.runs_dir)
    runs.mkdir(parents=True, exist_ok=True)
    stamp = datetime.now().strftime("%Y%m%d-%H%M%S")
    base = f"{cfg.run_name}{suffix}-{stamp}"
    for i in range(1, 1000):
        path = runs / (base if i == 1 else f"{base}-{i}")
        try:
            path.mkdir()
            return path
        except FileExistsError:
            continue
    raise RunError(f"output.runs_dir: cannot create a new run folder for {base!r} in {str(runs)!r}")


def remove_run_dir(run_dir: Path, *, keep_folder: bool) -> None:
    """Delete what a failed run wrote (the folder itself too unless the user named it)."""
    import shutil

    if keep_folder:
        for child in run_dir.iterdir():
            if child.is_dir():
                shutil.rmtree(child, ignore_errors=True)
            else:
                child.unlink(missing_ok=True)
    else:
        shutil.rmtree(run_dir, ignore_errors=True)


@contextmanager
def run_log(run_dir: Path) -> Iterator[logging.Logger]:
    """Log ``ltr.*`` messages (INFO and up) to ``run_dir/run.log`` for the duration."""
    logger = logging.getLogger("ltr")
    handler = logging.FileHandler(run_dir / "run.log", encoding="utf-8")
    handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(name)s: %(message)s"))
    old_level = logger.level
    logger.addHandler(handler)
    if logger.level == logging.NOTSET or logger.level > logging.INFO:
        logger.setLevel(logging.INFO)
    try:
        yield log
    finally:
        logger.removeHandler(handler)
        logger.setLevel(old_level)
        handler.close()


def progress_enabled(cfg: RunConfig, flag: bool | None) -> bool:
    """Return whether to show progress bars: *flag*, else ``output.progress``, else a tty."""
    if flag is not None:
        return flag
    if cfg.output.progress is not None:
        return cfg.output.progress
    return sys.stderr.isatty()


def load_run_config(run_dir: Path) -> RunConfig:
    """Load the ``config.yaml`` of a run folder; a missing or invalid one is a ``RunError``."""
    path = run_dir / "config.yaml"
    if not path.exists():
        raise RunError(f"{str(run_dir)!r} is not a run folder (no config.yaml)")
    try:
        return load_config(path, migrate=True)
    except ConfigError as exc:
        raise RunError(f"{path}: {exc}") from exc


def prepare_config(cfg: RunConfig) -> RunConfig:
    """Resolve data paths (errors when missing) and check cheap cross-field facts."""
    return resolve_data_paths(cfg, check=True)


def data_summary(sets: Mapping[str, RankingData]) -> dict[str, dict[str, Any]]:
    """Return queries, rows and content digest per data set (recorded in ``metrics.json``)."""
    return {
        n: {"queries": int(ds.n_queries), "rows": int(ds.n_rows), "digest": _data_digest(ds)}
        for n, ds in sets.items()
    }


def check_same_data(run_dir: Path, sets: Mapping[str, RankingData]) -> None:
    """Refuse to reuse a run's config when its data no longer are what the run saw."""
    path = run_dir / "metrics.json"
    if not path.exists():
        return
    recorded = json.loads(path.read_text(encoding="utf-8")).get("data") or {}
    for name, ds in sets.items():
        digest = (recorded.get(name) or {}).get("digest")
        if digest is not None and digest != _data_digest(ds):
            raise RunError(
                f"data.{name}: the data loaded from the run's config differ from what run "
                f"{str(run_dir)!r} was trained and evaluated on (files changed, or a different "
                "ltr version generates other synthetic data); pass --data explicitly"
            )


def check_resume(cfg: RunConfig | None, run_dir: Path) -> RunConfig:
    """Return the saved config of an unfinished run that *cfg* (if given) agrees with.

    Raises ``RunError`` when the folder is missing, already finished, or was made by a
    different config (``output`` and ``versions`` aside).
    """
    if not run_dir.is_dir():
        raise RunError(f"--resume: run folder not found: {str(run_dir)!r}")
    saved = load_run_config(run_dir)
    if (run_dir / DONE_MARKER).exists():
        raise RunError(
            f"--resume: {str(run_dir)!r} is already finished (it has a {DONE_MARKER} marker)"
        )
    if cfg is None:
        return saved
    a, b = config_to_dict(saved), config_to_dict(cfg)
    if config_fingerprint(a) != config_fingerprint(b):
        a = {k: v for k, v in a.items() if k not in ("output", "versions")}
        b = {k: v for k, v in b.items() if k not in ("output", "versions")}
        diffs = diff_configs(a, b)
        shown = "; ".join(diffs[:3]) + (f"; ... ({len(diffs) - 3} more)" if len(diffs) > 3 else "")
        raise RunError(
            f"--resume: {str(run_dir)!r} was made by a different config (run vs now: {shown}); "
            "resume with the same config and --set values, or start a new run"
        )
    return saved


def write_run_config(run_dir: Path, cfg: RunConfig) -> None:
    """``config.yaml``: the resolved config with package/engine versions (seed included)."""
    resolved = cfg.model_copy(update={"versions": versions(cfg)})
    write_atomic(run_dir / "config.yaml", _config_header(cfg) + dump_config(resolved))


def mark_done(run_dir: Path) -> None:
    """Write the ``DONE`` marker: the last file of a finished run."""
    stamp = datetime.now().isoformat(timespec="seconds")
    write_atomic(run_dir / DONE_MARKER, json.dumps({"finished": stamp}) + "\n")


def _config_header(cfg: RunConfig) -> str:
    src = f" from {cfg.source}" if cfg.source is not None else ""
    return (
        f"# Resolved ltr run config{src}; written {datetime.now().isoformat(timespec='seconds')}.\n"
        "# Load it with ltr.config.load_config; `versions` is informational.\n"
    )


def load_run_model(path: Path) -> tuple[Any, Path | None]:
    """Load a model file, or the final model of a run folder; returns (model, run_dir or None)."""
    from ltr.engines import RankingModel

    if path.is_dir():
        for name in ("model.json",):
            if (path / name).exists():
                if not (path / DONE_MARKER).exists():
                    raise RunError(
                        f"RUN_DIR|MODEL: {str(path)!r} is not a finished run (no {DONE_MARKER} "
                        f"marker): finish it with `ltr train --resume {path}`, then try again"
                    )
                return RankingModel.load(path / name), path
        if (path / "config.yaml").is_file():
            raise RunError(
                f"RUN_DIR|MODEL: {str(path)!r} is an unfinished run folder (interrupted before its "
                f"model was saved: no model.json, no {DONE_MARKER} marker): finish it with "
                f"`ltr train --resume {path}`, then try again"
            )
        raise RunError(f"RUN_DIR|MODEL: {str(path)!r} holds no model.json (not a run folder)")
    if not path.exists():
        raise RunError(f"RUN_DIR|MODEL: file not found: {str(path)!r}")
    try:
        return RankingModel.load(path), None
    except Exception as exc:
        first = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        raise RunError(f"RUN_DIR|MODEL: cannot load {str(path)!r}: {first}") from exc

"""The ``cluster`` section of a run config, and glob paths of parquet sources.

``cluster: {address: tcp://host:port}`` trains on a running Dask scheduler,
``cluster: {local: {n_workers: 2, threads_per_worker: 1, memory_limit: 4GB}}``
starts a ``LocalCluster`` on this machine; without the section a run trains
in one process.  ``data.source: parquet`` takes a glob of files
(``data/train-*.parquet``), read by Dask on a cluster.
"""

from __future__ import annotations

import glob
import re
from pathlib import Path

from pydantic import Field, field_validator, model_validator

from ltr.runs._section import Section
from ltr.runs.errors import ConfigError
from ltr.runs.overrides import got

__all__ = [
    "ClusterConfig", "LocalClusterConfig", "is_glob", "path_candidates", "read_files",
    "resolve_glob",
]

#: a scheduler address: tcp://host:port (or tls://, ucx://, ws://, wss://)
_SCHEDULER = re.compile(r"^(tcp|tls|ucx|ws|wss)://[^\s/:]+(:\d+)?/?$")
_BYTES = re.compile(r"^\d+(\.\d+)?\s*([kKMGT]i?B|B)?$")


class LocalClusterConfig(Section):
    """A Dask ``LocalCluster`` of worker processes on this machine (bound to 127.0.0.1)."""

    n_workers: int = Field(2, ge=1, le=4096, description="worker processes")
    threads_per_worker: int = Field(1, ge=1, le=4096, description="threads per worker")
    memory_limit: str | None = Field(
        None, description="per worker, e.g. '4GB' (default: the machine's memory shared out)"
    )

    @field_validator("memory_limit")
    @classmethod
    def _memory(cls, value: str | None) -> str | None:
        if value is not None and not _BYTES.match(value.strip()):
            raise ValueError(f"must be a size such as '4GB' or '512MiB', got {got(value)}")
        return value


class ClusterConfig(Section):
    """Train on a Dask cluster (``ltr.dask``): a running scheduler, or a local cluster."""

    address: str | None = Field(None, description="tcp://host:port of a running scheduler")
    local: LocalClusterConfig | None = Field(None, description="start a LocalCluster instead")
    timeout: float = Field(
        10.0, gt=0, le=3600, allow_inf_nan=False, description="seconds to wait for the scheduler"
    )

    @model_validator(mode="after")
    def _one_cluster(self) -> ClusterConfig:
        if self.address is not None and self.local is not None:
            raise ValueError(
                "@address: give either 'address' (a running scheduler) or 'local' (start a "
                "LocalCluster), not both"
            )
        if self.address is None and self.local is None:
            raise ValueError(
                "@address: give 'address: tcp://host:port' (a running scheduler) or "
                "'local: {n_workers: 2}' (start a LocalCluster); omit 'cluster' to train in "
                "one process"
            )
        if self.address is not None and not _SCHEDULER.match(self.address):
            raise ValueError(
                f"@address: must look like 'tcp://host:port', got {got(self.address)}"
            )
        return self


def is_glob(path: str) -> bool:
    """Whether *path* is a glob pattern (``*``, ``?`` or ``[``); parquet sources take them.

    >>> is_glob("data/train-*.parquet"), is_glob("data/train.parquet")
    (True, False)
    """
    return any(ch in path for ch in "*?[")


def path_candidates(path: str, config_path: Path | None) -> list[Path]:
    """Where a relative data path is looked up, in order: cwd, the config's folder, its parent.

    >>> [p.is_absolute() for p in path_candidates("train.csv", None)]
    [True]
    """
    p = Path(path).expanduser()
    if p.is_absolute():
        return [p]
    out = [Path.cwd() / p]
    if config_path is not None:
        folder = config_path.resolve().parent
        out += [folder / p, folder.parent / p]
    return list(dict.fromkeys(out))


def resolve_glob(pattern: str, config_path: Path | None, key: str, check: bool) -> str:
    """Return the absolute glob of the first place where *pattern* matches a file.

    Places are tried as for plain data paths: the working directory, the
    config file's folder, its parent.

    Raises
    ------
    ConfigError
        With *check*, when the pattern matches no file anywhere (naming *key*).
    """
    cands = path_candidates(pattern, config_path)
    for c in cands:
        if any(Path(f).is_file() for f in glob.glob(str(c))):
            return str(c)
    if check:
        tried = ", ".join(str(c.parent) for c in cands)
        raise ConfigError(f"{key}: no file matches {pattern!r} (looked in {tried})")
    return str(cands[0])


def read_files(pattern: str) -> object:
    """Read every parquet file matching *pattern*, in name order, into one pandas DataFrame."""
    import pandas as pd

    files = sorted(f for f in glob.glob(pattern) if Path(f).is_file())
    if not files:
        raise FileNotFoundError(f"no file matches {pattern!r}")
    return pd.concat([pd.read_parquet(f) for f in files], ignore_index=True)

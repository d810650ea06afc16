"""Connecting to a cluster: an existing scheduler, or a ``LocalCluster`` on this machine."""

from __future__ import annotations

import re
import warnings
from dataclasses import dataclass
from typing import Any

from ltr._compat import import_distributed
from ltr._validation import check_int, check_real, short_repr

__all__ = ["Connection", "connect"]

_ADDRESS = re.compile(r"^(tcp|tls|ucx|ws|wss)://[^\s/:]+(:\d+)?/?$")


@dataclass
class Connection:
    """A client and, when :func:`connect` started it, the local cluster behind it.

    Attributes
    ----------
    client : distributed.Client
        Pass it to :func:`ltr.dask.train`.
    cluster : distributed.LocalCluster or None
        The cluster :func:`connect` started (closed with the connection), or
        ``None`` for an existing scheduler (left running).
    address : str
        The scheduler's address.
    """

    client: Any
    cluster: Any
    address: str

    def close(self) -> None:
        """Close the client, and the local cluster if this connection started it."""
        try:
            self.client.close()
        finally:
            if self.cluster is not None:
                self.cluster.close()

    def __enter__(self) -> Connection:  # noqa: PYI034 - a dataclass, not subclassed
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def connect(
    address: str | None = None,
    *,
    n_workers: int = 2,
    threads_per_worker: int = 1,
    memory_limit: str | int | None = None,
    timeout: float = 10.0,
) -> Connection:
    """Connect to the scheduler at *address*, or start a ``LocalCluster`` of worker processes.

    Parameters
    ----------
    address : str, optional
        ``tcp://host:port`` of a running scheduler.  ``None`` starts a
        ``LocalCluster`` bound to ``127.0.0.1`` (no dashboard) instead.
    n_workers, threads_per_worker : int, default=2, 1
        Worker processes and threads each, for a local cluster.
    memory_limit : str or int, optional
        Per-worker memory limit of a local cluster (``"4GB"``; default: the
        machine's memory shared out).
    timeout : float, default=10.0
        Seconds to wait for a scheduler (or a local cluster) to answer.

    Returns
    -------
    Connection
        Close it (or use it as a context manager) when done.

    Raises
    ------
    ValueError
        For a malformed address or bad worker counts.
    ConnectionError
        When no scheduler answers at *address* within *timeout* seconds.
    """
    distributed = import_distributed()
    timeout = check_real(timeout, "timeout", minimum=0.0, exclusive_minimum=True)
    if address is not None:
        if not isinstance(address, str) or not _ADDRESS.match(address):
            raise ValueError(
                f"address must look like 'tcp://host:port' (the scheduler's address), got "
                f"{short_repr(address)}"
            )
        try:
            client = distributed.Client(address, timeout=timeout, set_as_default=False)
        except (OSError, TimeoutError) as exc:
            raise ConnectionError(
                f"no Dask scheduler answered at {address!r} within {timeout:g} s ({exc}); start "
                "one there (dask scheduler) or fix the address"
            ) from None
        return Connection(client, None, address)
    n_workers = check_int(n_workers, "n_workers", minimum=1)
    threads_per_worker = check_int(threads_per_worker, "threads_per_worker", minimum=1)
    kwargs: dict[str, Any] = {}
    if memory_limit is not None:
        kwargs["memory_limit"] = memory_limit
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # port-in-use notices of a busy machine
        cluster = distributed.LocalCluster(
            n_workers=n_workers, threads_per_worker=threads_per_worker, processes=True,
            host="127.0.0.1", dashboard_address=None, **kwargs,
        )
    try:
        client = distributed.Client(cluster, timeout=timeout, set_as_default=False)
    except BaseException:
        cluster.close()
        raise
    return Connection(client, cluster, str(cluster.scheduler_address))

"""Connecting to a cluster: an existing scheduler, or a ``LocalCluster`` on this machine.

:func:`connect` has its own deadline: before handing a ``tcp://`` address
to ``distributed.Client`` it opens a plain socket there and waits (until the
deadline) for the greeting every Dask server sends first (a length-prefixed
msgpack handshake).  An address that is not a Dask server -- the
dashboard's HTTP port, a silent TCP listener, a proxy answering something
else -- is refused within the timeout with a ``ConnectionError`` that says
so, instead of a hang or ``MemoryError`` from reading a bogus frame length.
"""

from __future__ import annotations

import re
import socket
import struct
import time
import warnings
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlparse

from ltr._compat import import_distributed
from ltr._validation import check_int, check_real, short_repr

__all__ = ["Connection", "connect", "connected_client", "probe_scheduler"]

_ADDRESS = re.compile(r"^(tcp|tls|ucx|ws|wss)://[^\s/:]+(:\d+)?/?$")
#: a Dask server's greeting is a few hundred bytes; anything longer is not one
_MAX_HANDSHAKE = 1 << 16
_DEFAULT_PORT = 8786


def _recv_exact(sock: socket.socket, n: int, deadline: float) -> bytes:
    chunks: list[bytes] = []
    got = 0
    while got < n:
        left = deadline - time.monotonic()
        if left <= 0:
            raise TimeoutError("deadline")
        sock.settimeout(left)
        chunk = sock.recv(n - got)
        if not chunk:
            raise ConnectionError("the connection was closed")
        chunks.append(chunk)
        got += len(chunk)
    return b"".join(chunks)


def _not_a_scheduler(address: str, why: str) -> ConnectionError:
    return ConnectionError(
        f"{address!r} is not a Dask scheduler: {why}. Give the scheduler's own address "
        "(printed by 'dask scheduler' as 'Scheduler at: tcp://HOST:PORT', port 8786 by default; "
        "not the dashboard's)"
    )


def probe_scheduler(address: str, timeout: float) -> None:
    """Check within *timeout* seconds that a Dask server answers at the ``tcp://`` *address*.

    Parameters
    ----------
    address : str
        ``tcp://host[:port]``.
    timeout : float
        Seconds for the whole check (connect and greeting).

    Raises
    ------
    ConnectionError
        Nothing listens there, it sends no Dask greeting in time, or it sends
        something else (the message says which).
    """
    from distributed.protocol import loads
    from distributed.protocol.utils import unpack_frames

    parsed = urlparse(address)
    host = parsed.hostname or "127.0.0.1"
    port = parsed.port or _DEFAULT_PORT
    deadline = time.monotonic() + timeout
    try:
        sock = socket.create_connection((host, port), timeout=timeout)
    except OSError as exc:
        raise ConnectionError(
            f"no Dask scheduler answered at {address!r} within {timeout:g} s ({exc}); start one "
            "there (dask scheduler) or fix the address"
        ) from None
    with sock:
        try:
            head = _recv_exact(sock, 8, deadline)
            (size,) = struct.unpack("Q", head)
            body = _recv_exact(sock, size, deadline) if 8 <= size <= _MAX_HANDSHAKE else b""
        except TimeoutError:
            raise _not_a_scheduler(
                address, f"it accepted the connection but sent no Dask handshake within "
                f"{timeout:g} s (an HTTP server such as the dashboard, or another service?)"
            ) from None
        except OSError as exc:
            raise _not_a_scheduler(
                address, f"the connection failed before a handshake ({exc})") from None
    if not body:
        raise _not_a_scheduler(address, f"it answered {head!r}, not a Dask handshake")
    try:
        info = loads(unpack_frames(body), deserialize=False)
    except Exception:  # noqa: BLE001 - any garbage: not Dask's framing or msgpack
        info = None
    if not isinstance(info, dict) or "compression" not in info:
        raise _not_a_scheduler(address, "its greeting is not a Dask handshake")


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
        if self in _OPEN:
            _OPEN.remove(self)
        try:
            self.client.close()
        finally:
            if self.cluster is not None:
                self.cluster.close()

    def __enter__(self) -> Connection:  # noqa: PYI034 - a dataclass, not subclassed
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


#: connections made by connect() and not closed yet, newest last
_OPEN: list[Connection] = []


def connected_client() -> Any:
    """Return the client of the newest open :func:`connect` connection, else Dask's default.

    ``None`` when there is neither: Dask then computes in this process.
    """
    if _OPEN:
        return _OPEN[-1].client
    distributed = import_distributed()
    try:
        return distributed.default_client()
    except ValueError:
        return None


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
        Seconds to wait for a scheduler (or a local cluster) to answer.  A
        ``tcp://`` address is first probed with a plain socket within this
        deadline (:func:`probe_scheduler`), so an address that is not a Dask
        scheduler fails in time too.

    Returns
    -------
    Connection
        Close it (or use it as a context manager) when done.

    Raises
    ------
    ValueError
        For a malformed address or bad worker counts.
    ConnectionError
        When no scheduler answers at *address* within *timeout* seconds, or
        what answers there is not a Dask scheduler.
    """
    distributed = import_distributed()
    timeout = check_real(timeout, "timeout", minimum=0.0, exclusive_minimum=True)
    if address is not None:
        if not isinstance(address, str) or not _ADDRESS.match(address):
            raise ValueError(
                f"address must look like 'tcp://host:port' (the scheduler's address), got "
                f"{short_repr(address)}"
            )
        start = time.monotonic()
        if address.startswith("tcp://"):
            probe_scheduler(address, timeout)
        left = max(timeout - (time.monotonic() - start), 1.0)
        try:
            client = distributed.Client(address, timeout=left, set_as_default=False)
        except (OSError, TimeoutError) as exc:
            raise ConnectionError(
                f"no Dask scheduler answered at {address!r} within {timeout:g} s ({exc}); start "
                "one there (dask scheduler) or fix the address"
            ) from None
        conn = Connection(client, None, address)
        _OPEN.append(conn)
        return conn
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
    conn = Connection(client, cluster, str(cluster.scheduler_address))
    _OPEN.append(conn)
    return conn

"""ltr.dask against real ``dask scheduler`` / ``dask worker`` processes: wrong addresses, lost workers.

Every process is started here on 127.0.0.1 with bounded waits and always
stopped (terminate, then kill) when the test ends.
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import threading
import time
import warnings
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

pytestmark = pytest.mark.slow  # clusters started, workers killed: CI runs these (-m slow)

pytest.importorskip("distributed")
pytest.importorskip("xgboost")

import dask.dataframe as dd
import psutil

import ltr.dask as ldask
from ltr.dask import _placement as placement_module
from ltr.dask import _workers as dask_workers
from ltr.objectives import LambdaRankObjective
from ltr.synthetic import make_ranking

START_TIMEOUT = 60  # seconds for a process to come up on a loaded machine


def _start(args: list[str], log: Path) -> subprocess.Popen:
    return subprocess.Popen(
        [sys.executable, "-m", *args], stdout=log.open("w"), stderr=subprocess.STDOUT,
        env={**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)},
    )


def _stop(procs: list[subprocess.Popen]) -> None:
    for p in procs:
        if p.poll() is None:
            p.terminate()
    for p in procs:
        try:
            p.wait(timeout=5)
        except subprocess.TimeoutExpired:
            p.kill()
            p.wait(timeout=10)


class RealCluster:
    """A scheduler and named workers (no nanny: a killed worker stays dead)."""

    def __init__(self, tmp: Path) -> None:
        self.tmp = tmp
        self.file = tmp / "scheduler.json"
        self.procs: list[subprocess.Popen] = []
        self.workers: dict[str, subprocess.Popen] = {}
        self.procs.append(_start(
            ["distributed.cli.dask_scheduler", "--host", "127.0.0.1", "--port", "0",
             "--no-dashboard", "--scheduler-file", str(self.file)], tmp / "scheduler.log"))
        deadline = time.monotonic() + START_TIMEOUT
        while not self.file.exists():
            if time.monotonic() > deadline or self.procs[0].poll() is not None:
                raise RuntimeError((tmp / "scheduler.log").read_text())
            time.sleep(0.1)
        while True:  # the file may be seen before it is complete
            try:
                self.address = json.loads(self.file.read_text())["address"]
                break
            except (ValueError, KeyError):
                time.sleep(0.1)

    def add_workers(self, *names: str) -> None:
        for name in names:
            proc = _start(["distributed.cli.dask_worker", self.address, "--name", name,
                           "--nthreads", "1", "--no-nanny", "--no-dashboard",
                           "--host", "127.0.0.1"], self.tmp / f"{name}.log")
            self.procs.append(proc)
            self.workers[name] = proc

    def close(self) -> None:
        _stop(self.procs)


@pytest.fixture
def real_cluster(tmp_path):
    cluster = RealCluster(tmp_path)
    try:
        yield cluster
    finally:
        cluster.close()


def _guarded(fn, limit: float = 120.0):
    """Run *fn* in a thread; fail (instead of hanging the suite) if it does not return."""
    out: dict = {}

    def run() -> None:
        try:
            out["value"] = fn()
        except BaseException as exc:  # noqa: BLE001 - handed back to the test
            out["error"] = exc

    t = threading.Thread(target=run, daemon=True)
    t.start()
    t.join(limit)
    assert not t.is_alive(), f"still running after {limit} s"
    if "error" in out:
        raise out["error"]
    return out.get("value")


def _frame(n_queries: int = 40, seed: int = 0) -> dd.DataFrame:
    d = make_ranking(n_queries, n_features=4, mean_docs=15, max_docs=30, random_state=seed)
    df = pd.DataFrame(d.X.astype(np.float64), columns=[f"f{j}" for j in range(4)])
    df["y"] = d.y.astype(np.float64)
    df["qid"] = np.repeat(np.arange(len(d.offsets) - 1), np.diff(d.offsets))
    return dd.from_pandas(df, npartitions=2)


def _listener(reply: bytes | None) -> tuple[socket.socket, str]:
    """A localhost TCP listener that stays silent (``None``) or answers *reply* to everyone."""
    srv = socket.socket()
    srv.bind(("127.0.0.1", 0))
    srv.listen(8)
    if reply is not None:
        def serve() -> None:
            while True:
                try:
                    conn, _ = srv.accept()
                except OSError:
                    return
                conn.sendall(reply)
        threading.Thread(target=serve, daemon=True).start()
    return srv, f"tcp://127.0.0.1:{srv.getsockname()[1]}"


# ----------------------------------------------------------------------------- wrong addresses


def test_connect_refuses_every_address_that_is_not_a_dask_scheduler(real_cluster):
    silent, silent_addr = _listener(None)
    proxy, proxy_addr = _listener(b"HTTP/1.1 502 Bad Gateway\r\nContent-Length: 0\r\n\r\n")
    try:
        with pytest.raises(ConnectionError, match=r"is not a Dask scheduler: it accepted the "
                                                  r"connection but sent no Dask handshake"):
            _guarded(lambda: ldask.connect(silent_addr, timeout=1.0))
        with pytest.raises(ConnectionError, match=r"is not a Dask scheduler: it answered "
                                                  r"b'HTTP/1\.1.*not a Dask handshake"):
            _guarded(lambda: ldask.connect(proxy_addr, timeout=5.0))
    finally:
        silent.close()
        proxy.close()
    closed = socket.socket()
    closed.bind(("127.0.0.1", 0))
    port = closed.getsockname()[1]
    closed.close()  # nothing listens there now
    with pytest.raises(ConnectionError, match="no Dask scheduler answered"):
        _guarded(lambda: ldask.connect(f"tcp://127.0.0.1:{port}", timeout=2.0))
    # the real scheduler passes the same probe, and the probe leaves it healthy
    with _guarded(lambda: ldask.connect(real_cluster.address, timeout=30.0)) as conn:
        assert conn.client.scheduler_info()["address"] == real_cluster.address


# ----------------------------------------------------------------------------- lost workers


def _xgboost_has_tracker_timeout() -> bool:
    import inspect

    import xgboost.dask as dxgb

    return "coll_cfg" in inspect.signature(dxgb.train).parameters


def test_a_worker_lost_during_xgboost_training_is_a_distributed_training_error(
    real_cluster, tmp_path, monkeypatch
):
    if not _xgboost_has_tracker_timeout():
        pytest.skip("this XGBoost has no collective Config (XGBoost < 3.0): its tracker waits for "
                    "a lost worker without a timeout (documented in docs/cli.md, cluster section)")
    import cloudpickle

    real_cluster.add_workers("w0", "w1")
    original = dask_workers.xgboost_callbacks

    def with_killer(token, **kw):
        from xgboost.callback import TrainingCallback

        class KillW1(TrainingCallback):  # pickled by value: runs on the workers
            def after_iteration(self, model, epoch, evals_log):
                from distributed import get_worker

                if epoch == 1 and get_worker().name == "w1":
                    os._exit(1)
                return False

        out = original(token, **kw)
        return [*out, KillW1()] if kw["stage_k"] == 5 else out

    monkeypatch.setattr(dask_workers, "xgboost_callbacks", with_killer)
    monkeypatch.setattr(placement_module, "TRACKER_TIMEOUT", 20)  # short, yet time to form
    scheduler = psutil.Process(real_cluster.procs[0].pid)
    cloudpickle.register_pickle_by_value(sys.modules[__name__])
    try:
        with ldask.connect(real_cluster.address, timeout=30) as conn:
            conn.client.wait_for_workers(2, timeout=START_TIMEOUT)
            listening = _listening(scheduler)
            with pytest.raises(ldask.DistributedTrainingError,
                               match=r"stage 1 \(k=5\) failed on the cluster.*XGBoostError"):
                _guarded(lambda: ldask.train(
                    conn.client, _frame(), label="y", qid="qid", engine="xgboost",
                    objective=LambdaRankObjective(), schedule=[(3, 2), (5, 4)],
                    stage_dir=tmp_path / "stages"))
    finally:
        cloudpickle.unregister_pickle_by_value(sys.modules[__name__])
    stages = json.loads((tmp_path / "stages" / "stages.json").read_text())["stages"]
    assert [s["k"] for s in stages] == [3]  # the finished stage is kept for resume
    # the failed training's XGBoost tracker gives its port back (TRACKER_TIMEOUT s)
    deadline = time.monotonic() + START_TIMEOUT
    while _listening(scheduler) != listening:
        assert time.monotonic() < deadline, (listening, _listening(scheduler))
        time.sleep(0.5)


def _listening(proc) -> set[int]:
    return {c.laddr.port for c in proc.net_connections("tcp") if c.status == "LISTEN"}


def test_a_worker_lost_after_the_shuffle_is_not_absorbed_silently(real_cluster, monkeypatch):
    real_cluster.add_workers("w0", "w1")
    original = placement_module.DaskPlacement.place

    def place_then_lose_w1(self, spec):
        out = original(self, spec)
        victim = real_cluster.workers["w1"]
        victim.kill()
        victim.wait(timeout=30)
        deadline = time.monotonic() + START_TIMEOUT
        while len(placement_module._workers(self.client)) > 1:
            assert time.monotonic() < deadline, "the scheduler never noticed the lost worker"
            time.sleep(0.2)
        return out

    monkeypatch.setattr(placement_module.DaskPlacement, "place", place_then_lose_w1)
    with ldask.connect(real_cluster.address, timeout=30) as conn:
        conn.client.wait_for_workers(2, timeout=START_TIMEOUT)
        with warnings.catch_warnings(record=True) as seen:
            warnings.simplefilter("always")
            try:
                model = _guarded(lambda: ldask.train(
                    conn.client, _frame(), label="y", qid="qid", engine="lightgbm",
                    num_boost_round=3, params={"min_data_in_leaf": 5}))
            except ldask.DistributedTrainingError:
                return  # refused: clear, and nothing claims two workers
    # or trained on what was left: said so, and recorded as such
    info = model.params["distributed"]
    assert info["shuffled_to_workers"] == 2 and info["workers"] == 1
    assert any("trained on 1 worker(s), but the rows were shuffled to 2" in str(w.message)
               for w in seen)

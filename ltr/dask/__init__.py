"""Distributed training, prediction and evaluation on a Dask cluster.

When the rows do not fit one machine, :func:`train` trains a LambdaMART
model on a ``dask.dataframe.DataFrame`` through ``lightgbm.dask`` or
``xgboost.dask`` and returns the same :class:`ltr.engines.RankingModel` as
single-machine training (save, load and predict work locally);
:func:`predict` scores a Dask DataFrame partition by partition and
:func:`evaluate` computes per-query metrics where the rows live, then one
reduction.  :func:`connect` reaches a scheduler (or starts a local cluster).

>>> import ltr.dask
>>> sorted(ltr.dask.__all__)[:3]
['Connection', 'DistributedTrainingError', 'LIGHTGBM_MAX_QUERY_ROWS']

Queries are never split: :func:`shuffle_by_query` moves rows so that each
query sits whole in one partition, sorted by query within the partition, and
checks it; the training then spreads the partitions so every worker holds
rows in proportion to its threads (every boosting round waits for the
busiest worker), moving only the partitions it must.  Each worker then
trains on whole local queries: LightGBM gets the
per-partition group sizes, XGBoost one query code per row.  A
:class:`ltr.objectives.LambdaRankObjective` (schedules, pair sampling,
composite labels included) runs on every worker over its local queries; the
truncation level follows the *engine's* round number (passed by a callback
on each worker), never a per-worker call count, so all workers use the same
``k`` in the same round.  Eval sets, early stopping, stage checkpoints and
resume work as in :func:`ltr.engines.train` (eval sets travel whole to every
worker; every worker takes the same early-stopping decision).

Exactness
---------
* XGBoost sums gradient histograms across workers (allreduce) and merges its
  quantile sketches, so with our objective (no pair sampling) the model
  equals single-machine ``ltr.engines.train`` on the same rows (to float
  rounding, about 1e-7 after 50 rounds) whenever both see the same bin edges:
  always when every feature has at most ``max_bin`` distinct values.  On raw
  continuous features the merged sketch cuts elsewhere than the
  single-machine one; compute global edges once with :func:`quantile_edges`
  (approximate quantiles from per-partition summaries, deterministic) and
  bin both trainings' features with :func:`apply_edges`::

      edges = ltr.dask.quantile_edges(ddf, feats, max_bin=256, client=client)
      model = ltr.dask.train(client, ltr.dask.apply_edges(ddf, edges), ...)
      local = ltr.engines.train(ltr.dask.apply_edges(X, edges), y, offsets, ...)

  Each feature then holds at most ``max_bin`` codes (keep ``max_bin`` at
  most the engine's, 256 by default), which every sketch keeps exactly, so
  both paths cut at the same values; predict on coded features too.
* LightGBM's data-parallel learner builds each feature's bins from one
  worker's local sample (``pre_partition=True``: the bin mappers are found per
  worker and shared), so the bin edges, and therefore the splits, differ
  slightly from single-machine training; the quality is the same within
  noise (nDCG@10 within 0.005 on 2,000 test queries in the tests).  For the
  same reason a resumed LightGBM run may differ slightly from an
  uninterrupted one when rows land on other workers.

One loop
--------
:func:`train` builds the same validated spec as :func:`ltr.engines.train`
and runs the same stage loop; a :class:`~ltr.dask._placement.DaskPlacement`
executes each stage with ``lightgbm.dask``/``xgboost.dask`` (as
``xgboost.dask`` calls the core ``train`` on each worker).  The model's params
and stage records equal a one-process run of the same settings, plus
``params["distributed"]`` (the workers that trained each stage).

Networking
----------
XGBoost's tracker is bound to the scheduler's host (``127.0.0.1`` on a local
cluster), passed explicitly, and gives its port back at most
``TRACKER_TIMEOUT`` seconds after a failed training; XGBoost's workers listen
on every interface while training.  LightGBM's distributed training opens one
listening socket per worker on a fresh free port per fit (``lightgbm.dask``
opens the ports on the workers and keeps them until training starts, see
LightGBM issues #3753 and #4960; ``local_listen_port`` in ``params`` fixes
it) and builds ``machines`` from the workers' addresses; its sockets listen
on **every interface**.  Neither engine's traffic is authenticated or
encrypted, so run them only on a private network.  :func:`connect` probes a
``tcp://`` address for a Dask handshake within its timeout before creating
the client, so a wrong port fails in time.  Every worker needs ``ltr-rank``
and the engine installed (checked before any work).

Limits
------
LightGBM's native ``lambdarank`` caps a query at 10,000 rows (C++ check);
:func:`train` refuses such a query with an error naming its size before
training.  :class:`~ltr.objectives.LambdaRankObjective` has no cap, but a
query must fit one worker (:data:`MEMORY_FACTOR` times its bytes).
Position-bias (unbiased) training is refused: its position statistics
would have to be summed over all workers every round; train it
single-machine.  Composite label columns must hold whole grades (they
travel packed in the engine's float32 label); XGBoost's native objective
takes no weights on Dask (ours does).
"""

from __future__ import annotations

from ltr.dask._bins import apply_edges, quantile_edges
from ltr.dask._cluster import Connection, connect
from ltr.dask._frame import QueryLayout, shuffle_by_query
from ltr.dask._metrics import evaluate, predict
from ltr.dask._train import (
    LIGHTGBM_MAX_QUERY_ROWS,
    MEMORY_FACTOR,
    DistributedTrainingError,
    train,
)

__all__ = [
    "LIGHTGBM_MAX_QUERY_ROWS",
    "MEMORY_FACTOR",
    "Connection",
    "DistributedTrainingError",
    "QueryLayout",
    "apply_edges",
    "connect",
    "evaluate",
    "predict",
    "quantile_edges",
    "shuffle_by_query",
    "train",
]

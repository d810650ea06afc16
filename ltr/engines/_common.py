"""Deprecated re-export shim: the contents moved to one-concept modules.

Import from :mod:`ltr.engines` (``train``, ``RankingModel``, ``ENGINES``,
``get_adapter``) or the private modules ``_spec``, ``_recorder``,
``_objective``, ``_checkpoint``, ``_loop``, ``_model``, ``_protocol``, ``_registry``;
validation helpers live in :mod:`ltr._validation`.  This module will be removed.
"""

from __future__ import annotations

from ltr._validation import (
    check_eval_at,
    check_label_columns,
    check_labels,
    check_matrix,
    check_offsets,
    check_weights,
)
from ltr.engines._checkpoint import fingerprint, load_completed
from ltr.engines._loop import limit_numba_threads, run_training
from ltr.engines._model import RankingModel
from ltr.engines._protocol import EngineAdapter
from ltr.engines._recorder import Recorder
from ltr.engines._registry import ENGINES, get_adapter
from ltr.engines._spec import (
    EvalSet,
    ObjectiveCall,
    TrainSpec,
    check_eval_sets,
    make_spec,
    merge_engine_params,
)

__all__ = [
    "ENGINES",
    "EngineAdapter",
    "EvalSet",
    "ObjectiveCall",
    "RankingModel",
    "Recorder",
    "TrainSpec",
    "check_eval_at",
    "check_eval_sets",
    "check_label_columns",
    "check_labels",
    "check_matrix",
    "check_offsets",
    "check_weights",
    "fingerprint",
    "get_adapter",
    "limit_numba_threads",
    "load_completed",
    "make_spec",
    "merge_engine_params",
    "run_training",
]

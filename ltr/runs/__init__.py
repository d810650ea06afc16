"""Config-driven runs: schema, config -> settings, data, run folders, evaluation, reports.

The commands (:mod:`ltr.runs.commands`) are library functions returning
result objects; :mod:`ltr.cli` is only their argparse front end.
"""

from __future__ import annotations

from ltr.runs.commands import (
    RunResult,
    importance_run,
    render_report,
    train_run,
    validate,
)
from ltr.runs.config import ConfigError, RunConfig, RunError, RunInterrupted, load_config
from ltr.runs.score_cmd import evaluate_model, predict_run
from ltr.runs.tune_cmd import tune_run

__all__ = [
    "ConfigError",
    "RunConfig",
    "RunError",
    "RunInterrupted",
    "RunResult",
    "evaluate_model",
    "importance_run",
    "load_config",
    "predict_run",
    "render_report",
    "train_run",
    "tune_run",
    "validate",
]

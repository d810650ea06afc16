"""What an engine adapter provides: the protocol the training loop and the model use.

This module imports neither the adapters nor the training loop, so both can
import it.  The registry of adapters is :mod:`ltr.engines._registry`.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Protocol

import numpy as np

if TYPE_CHECKING:
    from ltr.engines._recorder import Recorder
    from ltr.engines._spec import TrainSpec

__all__ = ["EngineAdapter", "Executor", "Placement"]


class EngineAdapter(Protocol):
    """One engine behind a uniform interface (see ``ltr.engines.lightgbm``/``xgboost``).

    ``prepare`` builds the engine's data objects once per training;
    ``train_stage`` runs one continued training on them.  The other methods
    hold all the engine knowledge the rest of ``ltr`` needs about a booster.
    """

    name: str
    suffix: str
    reserved: Mapping[str, str]  # engine parameter -> the train() argument that sets it

    def version(self) -> str:
        """Return the engine's version string (``module.__version__``)."""
        ...

    def base_params(self, spec: TrainSpec) -> dict[str, Any]:
        """Engine parameters for every stage: defaults, user params, objective."""
        ...

    def prepare(self, spec: TrainSpec, params: dict[str, Any]) -> Any:
        """Engine data (training and eval sets) built once and reused by every stage."""
        ...

    def train_stage(
        self,
        spec: TrainSpec,
        data: Any,
        params: dict[str, Any],
        stage_index: int,
        k: int,
        n_rounds: int,
        init_booster: Any,
        objective: Any,
        recorder: Recorder,
    ) -> Any:
        """Train *n_rounds* rounds continued from *init_booster*; returns the booster."""
        ...

    def stage_params(
        self, spec: TrainSpec, params: dict[str, Any], stage_index: int, k: int, objective: Any
    ) -> dict[str, Any]:
        """Engine parameters of one stage: the seed (``seed + stage_index``) and ``k``.

        *objective* is the callable the engine will call (``None``: the native
        objective, configured here with the stage's truncation level).  Used by
        :meth:`train_stage` and by distributed executors alike.
        """
        ...

    def truncate(self, booster: Any, n_rounds: int) -> Any:
        """Return a standalone booster with the first *n_rounds* rounds."""
        ...

    def num_rounds(self, booster: Any) -> int:
        """Boosting rounds in *booster*."""
        ...

    def num_features(self, booster: Any) -> int:
        """Return the number of input features of *booster*."""
        ...

    def feature_names(self, booster: Any) -> list[str] | None:
        """Feature names stored in *booster*, or None when it has none."""
        ...

    def to_string(self, booster: Any) -> str:
        """Return the engine's native model text (LightGBM model string / XGBoost JSON)."""
        ...

    def from_string(self, text: str, source: str = "model") -> Any:
        """Parse native model text; ``ValueError`` naming *source* when it is damaged."""
        ...

    def save_native(self, booster: Any, path: str | os.PathLike[str]) -> None:
        """Write the native model file, loadable by the engine alone."""
        ...

    def predict(self, booster: Any, X: Any) -> np.ndarray:
        """Raw scores (margins) of the rows of *X*."""
        ...



class Executor(Protocol):
    """Where the stages of :func:`ltr.engines._loop.run_training` run.

    An :class:`EngineAdapter` is the in-process executor; a distributed
    placement (:class:`Placement`) runs the same calls on its workers.
    """

    def prepare(self, spec: TrainSpec, params: dict[str, Any]) -> Any:
        """Engine data built once and reused by every stage."""
        ...

    def train_stage(
        self,
        spec: TrainSpec,
        data: Any,
        params: dict[str, Any],
        stage_index: int,
        k: int,
        n_rounds: int,
        init_booster: Any,
        objective: Any,
        recorder: Recorder,
    ) -> Any:
        """Train one stage; fill *recorder* (rounds run, eval metrics); return the booster.

        *objective* is the training's :class:`~ltr.engines._objective.ObjectiveCall`
        (its ``first_round`` is the stage's first global round) or ``None``.
        """
        ...


class Placement(Executor, Protocol):
    """Rows that live elsewhere (a cluster): the executor plus what checkpoints need."""

    def digest(self) -> str:
        """Digest of the placed rows (equal for the same rows in the same layout)."""
        ...

    def settings(self) -> dict[str, Any]:
        """Placement settings that change the model (partitions, columns), for fingerprints."""
        ...

    def describe(self) -> dict[str, Any]:
        """Return what the training actually ran on (stored in ``RankingModel.params``)."""
        ...

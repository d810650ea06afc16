"""``model.unbiased: auto`` in a run: choose the debiasing method from the training clicks.

The run's settings with ``unbiased: auto`` become the settings of the chosen
candidate (:func:`ltr.estimator.select_debiasing` on the train split's clicks,
positions and, when the data has one, the ``data.doc`` column), and the
selection table is written to the run folder as ``debiasing.csv``.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from ltr._io import write_atomic
from ltr.build import TrainSettings
from ltr.estimator import select_debiasing
from ltr.runs.settings import ranker_from_settings

if TYPE_CHECKING:  # pragma: no cover
    from ltr.datasets import RankingData

__all__ = ["DEBIASING_FILE", "resolve_auto_debiasing"]

#: The selection table of an ``unbiased: auto`` run, in its run folder.
DEBIASING_FILE = "debiasing.csv"


def resolve_auto_debiasing(
    settings: TrainSettings,
    objective: str | None,
    train: RankingData,
    click: np.ndarray,
    position: np.ndarray,
    run_dir: Path | None,
    eval_at: int,
) -> tuple[TrainSettings, Any]:
    """Return the chosen candidate's settings and the selection (settings without "auto" as is).

    Parameters
    ----------
    settings : TrainSettings
        Validated settings; only ``unbiased == "auto"`` does anything.
    objective : str or None
        The ``model.objective`` as written (before it was resolved for "auto"):
        the candidates that set no objective keep it, as the estimator's do.
    train : RankingData
        The train split: one list per query and session (``offsets``).
    click, position : ndarray
        Its clicks and logged positions, in row order.
    run_dir : Path or None
        Where ``debiasing.csv`` is written (nowhere when None).
    eval_at : int
        Cut-off of the held-out DCG (the run's first ``evaluation.eval_at``).

    Returns
    -------
    (TrainSettings, DebiasingSelection or None)
    """
    if settings.unbiased != "auto":
        return settings, None
    from ltr.build import validate_settings

    settings = settings.replace(objective=objective)
    base = ranker_from_settings(settings.replace(unbiased=False))
    qid = np.repeat(np.arange(train.offsets.size - 1), np.diff(train.offsets))
    selection = select_debiasing(
        base, train.X, click, qid=qid, position=position, doc=getattr(train, "doc", None),
        k=eval_at, random_state=0 if settings.random_state is None else settings.random_state,
    )
    if run_dir is not None:
        write_atomic(run_dir / DEBIASING_FILE, selection.to_frame().to_csv(index=False))
    params = dict(selection.params)
    if "propensity" in params:
        params["propensity"] = [float(v) for v in params["propensity"]]
    return validate_settings(settings.replace(**params)), selection

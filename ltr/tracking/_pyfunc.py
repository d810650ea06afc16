"""The pyfunc model ``ltr.tracking`` logs: ltr's scores from an MLflow model URI.

Imported only when MLflow is used (logging or ``mlflow.pyfunc.load_model``):
it subclasses ``mlflow.pyfunc.PythonModel``.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from ltr._compat import import_mlflow

__all__ = ["RankingPyfunc"]

# mlflow is imported at run time (an optional extra): its base class is a value, typed Any here
_PythonModel: Any = import_mlflow().pyfunc.PythonModel


class RankingPyfunc(_PythonModel):
    """Scores rows with an ltr model, applying the run's feature handling.

    With a run's model (artifact ``model``, a ``RankingModel`` file) the frame's
    feature columns are selected by name, in the training order (other columns,
    e.g. ``qid`` or labels, are ignored), exactly as ``ltr predict`` reads a
    file; a frame or array of exactly the model's feature count is used as
    is.  With a fitted estimator (artifact ``estimator``) its ``predict`` is
    called.

    Parameters
    ----------
    features : list of str, optional
        The model's feature columns.
    """

    def __init__(self, features: list[str] | None = None) -> None:
        self.features = None if features is None else list(features)
        self._model: Any = None
        self._estimator: Any = None

    def load_context(self, context: Any) -> None:
        """Load the model or the estimator from the logged artifacts."""
        arts = context.artifacts
        if "estimator" in arts:
            import joblib

            self._estimator = joblib.load(arts["estimator"])
        else:
            from ltr.engines import RankingModel

            self._model = RankingModel.load(arts["model"])

    # a DataFrame hint: MLflow infers no signature from it (nor warns), and converts nothing
    def predict(self, context: Any, model_input: pd.DataFrame, params: Any = None) -> np.ndarray:
        """Return the scores of the rows of *model_input* (higher ranks first)."""
        if self._estimator is not None:
            return np.asarray(self._estimator.predict(model_input), dtype=np.float64)
        X = model_input
        columns = getattr(model_input, "columns", None)
        if columns is not None and self.features is not None:
            missing = [f for f in self.features if f not in columns]
            if not missing:
                X = model_input[self.features]
            elif len(columns) != len(self.features):
                raise ValueError(
                    f"the frame lacks the model's feature column(s) {missing[:5]} and has "
                    f"{len(columns)} columns, not the model's {len(self.features)}"
                )
        return np.asarray(self._model.predict(X), dtype=np.float64)

"""The trained result: :class:`RankingModel`."""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from ltr._io import to_jsonable, write_atomic
from ltr._validation import check_matrix
from ltr.categorical import CategoricalCoding
from ltr.engines._checkpoint import file_sha256
from ltr.engines._registry import get_adapter

__all__ = ["RankingModel"]

_MODEL_FORMAT = "ltr.RankingModel"


@dataclass
class RankingModel:
    """A trained ranking model.

    Attributes
    ----------
    engine : {"lightgbm", "xgboost"}
    booster : lightgbm.Booster or xgboost.Booster
        The final model (truncated to each stage's best round under early stopping).
    evals_result : dict
        ``evals_result[set_name][metric]`` -> list of values, one per boosting
        round kept in the model (``"ndcg@k"``; with composite label columns also
        ``"composite_ndcg@k"`` and ``"ndcg@k/<objective>"``).
    best_iteration : int or None
        With early stopping: number of boosting rounds kept (1-based, as
        LightGBM's ``best_iteration``); ``None`` when no early stopping happened.
    stages : list of dict
        Per stage: ``k``, ``first_round``, ``n_rounds`` (scheduled),
        ``rounds_run``, ``best_iteration`` (rounds kept in that stage),
        ``early_stopped``, ``path`` (checkpoint or None) and ``metrics``
        ``{set: {"ndcg@k": value at the stage's end}}``.
    params : dict
        Engine parameters of the last stage (objective described as data).
    convention : str or None
        The nDCG convention of ``evals_result`` (see :data:`ltr.metrics.CONVENTIONS`):
        the one passed to ``train``, else the engine's own.
    categorical : CategoricalCoding or None
        The categorical coding fitted on the training set (``train(...,
        categorical=...)``); :meth:`predict` applies it to raw features.
    """

    engine: str
    booster: Any
    evals_result: dict[str, dict[str, list[float]]] = field(default_factory=dict)
    best_iteration: int | None = None
    stages: list[dict[str, Any]] = field(default_factory=list)
    params: dict[str, Any] = field(default_factory=dict)
    convention: str | None = None
    categorical: CategoricalCoding | None = None

    @property
    def position_bias(self) -> dict[str, Any] | None:
        """Learned position bias of an unbiased objective (``t_plus``/``t_minus`` per position).

        ``None`` for models trained without ltr's unbiased objective (LightGBM's
        native position factors are not saved in its model).
        """
        state = self.params.get("position_bias")
        return dict(state) if isinstance(state, dict) else None

    @property
    def position_term(self) -> dict[str, Any] | None:
        """Position offsets learned by ``LambdaRankObjective(position_term=True)``, or ``None``.

        ``{"offsets": [...], "regularization", "learning_rate", "rounds"}``:
        ``offsets[p - 1]`` is the score offset learned for display position
        ``p``; :meth:`predict` never adds it (it models the display, not the document).
        """
        state = self.params.get("position_term")
        return dict(state) if isinstance(state, dict) else None

    @property
    def n_features(self) -> int:
        """Number of input features the booster expects."""
        return get_adapter(self.engine).num_features(self.booster)

    @property
    def feature_names(self) -> list[str] | None:
        """Feature names stored in the booster.

        LightGBM names unnamed columns ``Column_j``; XGBoost has None then.
        """
        return get_adapter(self.engine).feature_names(self.booster)

    def predict(self, X: Any) -> np.ndarray:
        """Scores of the rows of *X* (higher ranks first).

        Parameters
        ----------
        X : array-like of shape (n_rows, n_features)
            Features (ndarray, DataFrame or scipy sparse); categorical columns
            hold raw categories, mapped through :attr:`categorical` (an
            unseen category is missing).

        Returns
        -------
        ndarray of float64, shape (n_rows,)
        """
        return self.predict_codes(self.encode(X))

    def encode(self, X: Any) -> Any:
        """Return *X* with its categorical columns coded (*X* itself without a coding)."""
        return X if self.categorical is None else self.categorical.encode(X)

    def predict_codes(self, X: Any) -> np.ndarray:
        """Scores of rows whose categorical columns already hold codes (:meth:`encode`).

        Parameters
        ----------
        X : array-like of shape (n_rows, n_features)
            Coded features.

        Returns
        -------
        ndarray of float64, shape (n_rows,)
        """
        adapter = get_adapter(self.engine)
        X = check_matrix(X, "X")
        n_features = adapter.num_features(self.booster)
        if X.shape[1] != n_features:
            raise ValueError(
                f"X has {X.shape[1]} features but the model was trained on {n_features}"
            )
        return np.asarray(adapter.predict(self.booster, X), dtype=np.float64).reshape(-1)

    def num_trees(self) -> int:
        """Return the number of boosting rounds (one tree per round for ranking)."""
        return get_adapter(self.engine).num_rounds(self.booster)

    def to_dict(self) -> dict[str, Any]:
        """Everything but the booster, as plain data."""
        return {
            "engine": self.engine,
            "evals_result": self.evals_result,
            "best_iteration": self.best_iteration,
            "stages": self.stages,
            "params": self.params,
            "convention": self.convention,
            "categorical": None if self.categorical is None else self.categorical.to_dict(),
        }

    def save(self, path: str | os.PathLike[str]) -> Path:
        """Write the model and its metadata to one JSON file.

        The engine's own model text (LightGBM model string, XGBoost JSON) is
        embedded under ``"model"``; for serving without ``ltr`` use
        :meth:`save_native`.

        Parameters
        ----------
        path : path-like
            Target file (its folder is created).

        Returns
        -------
        Path
        """
        path = Path(path)
        adapter = get_adapter(self.engine)
        text = adapter.to_string(self.booster)
        data = {
            "format": _MODEL_FORMAT,
            "version": 1,
            **to_jsonable(self.to_dict()),
            "engine_version": adapter.version(),
            "model": text,
            "model_sha256": file_sha256(text),
        }
        path.parent.mkdir(parents=True, exist_ok=True)
        write_atomic(path, json.dumps(data))
        return path

    def save_native(self, path: str | os.PathLike[str]) -> Path:
        """Write the engine's native model file, with feature names, for serving.

        LightGBM: the text model (``lightgbm.Booster(model_file=path)``);
        XGBoost: the JSON model (``xgboost.Booster(model_file=path)``, so
        *path* should end in ``.json``).  The engine alone loads it and
        predicts what :meth:`predict` does.

        Parameters
        ----------
        path : path-like
            Target file (its folder is created).

        Returns
        -------
        Path
        """
        path = Path(path)
        path.parent.mkdir(parents=True, exist_ok=True)
        get_adapter(self.engine).save_native(self.booster, path)
        return path

    def export(
        self,
        format: str,
        path: str | os.PathLike[str],
        *,
        feature_names: Any = None,
        reference: Any = None,
        adjust_thresholds: bool = False,
        **options: Any,
    ) -> Any:
        """Write the model in a search engine's format (see :func:`ltr.export.export_model`).

        Parameters
        ----------
        format : {"opensearch-ltr", "elasticsearch-ltr", "solr-ltr", "vespa", "ranklib", "onnx"}
        path : path-like
            The model file (companions go beside it).
        feature_names : sequence of str, optional
            Search-engine feature names in the model's column order.
        reference : array-like, optional
            Training rows, to check (and with *adjust_thresholds* move) float32
            thresholds.
        adjust_thresholds : bool, default=False
        **options
            ``name``, ``featureset``, ``onnx_opset`` of :func:`ltr.export.export_model`.

        Returns
        -------
        ltr.export.ExportResult
        """
        from ltr.export import export_model

        return export_model(self, format, path, feature_names=feature_names,
                            reference=reference, adjust_thresholds=adjust_thresholds,
                            **options)

    @classmethod
    def load(cls, path: str | os.PathLike[str]) -> RankingModel:
        """Read a model written by :meth:`save`.

        Parameters
        ----------
        path : path-like
            A file written by :meth:`save`.

        Returns
        -------
        RankingModel

        Raises
        ------
        ValueError
            Naming *path* when the file is not such a model, or is damaged or
            truncated (the engine's parser never sees a truncated model).
        """
        path = Path(path)
        raw = path.read_text(encoding="utf-8", errors="replace")
        native = (
            "is an engine's own model file (for serving without ltr); give the run folder or "
            "its model.json (RankingModel.save)"
        )
        try:
            data = json.loads(raw)
        except ValueError as exc:
            if raw.startswith("tree\n"):  # LightGBM's text model
                raise ValueError(f"{str(path)!r} {native}") from exc
            raise ValueError(
                f"{str(path)!r} is not a model written by RankingModel.save: it is not valid "
                f"JSON (damaged or truncated?): {exc}"
            ) from exc
        if isinstance(data, dict) and "learner" in data and "format" not in data:
            raise ValueError(f"{str(path)!r} {native}")  # XGBoost's JSON model
        if not isinstance(data, dict) or data.get("format") != _MODEL_FORMAT:
            raise ValueError(f"{str(path)!r} is not a model written by RankingModel.save")
        engine: Any = data.get("engine")  # JSON; get_adapter below rejects a bad one
        text = data.get("model")
        if not isinstance(text, str):
            raise ValueError(f"{str(path)!r} holds no model text (damaged?)")  # noqa: TRY004
        expected = data.get("model_sha256")
        if expected is not None and file_sha256(text) != expected:
            raise ValueError(
                f"{str(path)!r} is damaged: its model text fails the checksum saved with it; "
                "restore the file or train the model again"
            )
        adapter = get_adapter(engine)
        return cls(
            engine=engine,
            booster=adapter.from_string(text, source=str(path)),
            evals_result=data.get("evals_result", {}),
            best_iteration=data.get("best_iteration"),
            stages=data.get("stages", []),
            params=data.get("params", {}),
            convention=data.get("convention"),
            categorical=(
                None if not data.get("categorical")
                else CategoricalCoding.from_dict(data["categorical"])
            ),
        )

    def __repr__(self) -> str:
        ks = [s["k"] for s in self.stages]
        return f"RankingModel(engine={self.engine!r}, num_trees={self.num_trees()}, stage_k={ks})"

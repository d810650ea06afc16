"""MLflow tracking: one run per training, curves as step metrics, the model as pyfunc.

:class:`MlflowCallback` is a training callback (``LambdaMARTRanker.fit(...,
callbacks=[MlflowCallback(...)])``; ``ltr train``/``ltr tune`` use it through
:mod:`ltr.runs.track_run`).  It opens an MLflow run (or logs into a given one),
logs the parameters, tags (``ltr``, engine and library versions), every
round's recorded metrics as step metrics, the final metrics and the model, and
closes the run (``FAILED`` when the fit raised).

MLflow refuses ``@`` in metric names; :func:`mlflow_metric_name` maps ltr's
names one to one (``ndcg@10`` -> ``ndcg_at_10``, ``ndcg@10:sklearn`` ->
``ndcg_at_10_sklearn``, ``composite_ndcg@10`` -> ``composite_ndcg_at_10``,
``ndcg@10/watch`` -> ``ndcg_at_10/watch``).  A curve is logged as
``<set>.<name>`` per round (``valid.ndcg_at_10``, step = 0-based round), a
final metric as ``final.<set>.<name>``.

The model is logged under the artifact path ``model`` as an MLflow pyfunc
model (:class:`ltr.tracking._pyfunc.RankingPyfunc`), so
``mlflow.pyfunc.load_model("runs:/<run id>/model").predict(frame)`` gives the
scores ``ltr predict`` (or the estimator's ``predict``) gives on the same rows.
MLflow is an optional extra (``pip install 'ltr-rank[mlflow]'``).
"""

from __future__ import annotations

import json
import os
import platform
import tempfile
import time
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from ltr._compat import import_mlflow
from ltr.engines import RankingModel, RoundCallback, RoundInfo

__all__ = [
    "MlflowCallback",
    "flatten_params",
    "library_tags",
    "mlflow_metric_name",
]

#: MLflow's limit on a parameter value's length (characters).
_MAX_PARAM = 6000


def mlflow_metric_name(name: str) -> str:
    """Return ltr's metric name in MLflow's alphabet (no ``@`` or ``:``).

    Examples
    --------
    >>> mlflow_metric_name("ndcg@10"), mlflow_metric_name("ndcg@5:sklearn")
    ('ndcg_at_10', 'ndcg_at_5_sklearn')
    >>> mlflow_metric_name("ndcg@10/watch")
    'ndcg_at_10/watch'
    """
    return name.replace("@", "_at_").replace(":", "_")


def flatten_params(mapping: Mapping[str, Any], prefix: str = "") -> dict[str, str]:
    """Flatten nested mappings into dotted keys with string values (MLflow params).

    Lists and other values are written as JSON (values longer than MLflow's
    limit are cut, ending in ``...``).

    Examples
    --------
    >>> flatten_params({"model": {"engine": "lightgbm", "rounds": 50}, "seed": 0})
    {'model.engine': 'lightgbm', 'model.rounds': '50', 'seed': '0'}
    """
    out: dict[str, str] = {}
    for key, value in mapping.items():
        path = f"{prefix}.{key}" if prefix else str(key)
        if isinstance(value, Mapping) and value:
            out.update(flatten_params(value, path))
            continue
        text = value if isinstance(value, str) else json.dumps(value, default=repr)
        out[path] = text if len(text) <= _MAX_PARAM else text[: _MAX_PARAM - 3] + "..."
    return out


def library_tags(engine: str) -> dict[str, str]:
    """Tags of a tracked run: ltr, engine, numpy/scikit-learn/Python versions."""
    from importlib.metadata import PackageNotFoundError, version

    from ltr.engines import get_adapter

    tags = {"ltr.engine": engine, "ltr.python": platform.python_version()}
    for dist, tag in (("ltr-rank", "ltr.version"), ("numpy", "ltr.numpy"),
                      ("scikit-learn", "ltr.sklearn"), ("mlflow", "ltr.mlflow")):
        try:
            tags[tag] = version(dist)
        except PackageNotFoundError:
            tags[tag] = "unknown"
    try:
        tags["ltr.engine_version"] = get_adapter(engine).version()
    except ImportError:
        tags["ltr.engine_version"] = "not installed"
    return tags


def _experiment_id(client: Any, tracking_uri: str | None, name: str) -> str:
    exp = client.get_experiment_by_name(name)
    if exp is not None:
        return str(exp.experiment_id)
    location = None
    if tracking_uri and tracking_uri.startswith("sqlite:///"):  # artifacts beside the database
        folder = Path(tracking_uri[len("sqlite:///") :]).resolve().parent / "mlartifacts"
        location = folder.as_uri()
    try:
        return str(client.create_experiment(name, artifact_location=location))
    except Exception:
        exp = client.get_experiment_by_name(name)
        if exp is None:
            raise
        return str(exp.experiment_id)


@contextmanager
def _quiet_artifacts() -> Iterator[None]:
    """Turn MLflow's artifact progress bars off inside the block (library code prints nothing)."""
    key = "MLFLOW_ENABLE_ARTIFACTS_PROGRESS_BAR"
    before = os.environ.get(key)
    os.environ[key] = "false"
    try:
        yield
    finally:
        if before is None:
            os.environ.pop(key, None)
        else:
            os.environ[key] = before


class MlflowCallback(RoundCallback):
    """Track a training in MLflow: params, tags, per-round curves, final metrics, model.

    Parameters
    ----------
    tracking_uri : str, optional
        MLflow tracking URI (``sqlite:///mlflow.db``, ``http://127.0.0.1:5000``,
        a folder); default: MLflow's own (``MLFLOW_TRACKING_URI``).
    experiment : str, default="ltr"
        Experiment name (created when missing; a ``sqlite:///`` store keeps its
        artifacts in ``mlartifacts/`` beside the database file).
    run_name : str, optional
        Name of the run this callback opens.
    run_id : str, optional
        Log into this existing run instead of opening one (it is not closed).
    parent_run_id : str, optional
        Open the run nested under this run (``ltr tune``'s trials).
    log_model : bool, default=True
        Log the fitted model as a pyfunc model under ``model``.
    flush_every : int, default=200
        Buffered round metrics are sent in batches of this many rounds.

    Attributes
    ----------
    run_id : str or None
        The run being logged to (set when the fit starts).

    Examples
    --------
    >>> from ltr import LambdaMARTRanker                      # doctest: +SKIP
    >>> cb = MlflowCallback(tracking_uri="sqlite:///mlflow.db", experiment="ranking")
    >>> LambdaMARTRanker().fit(X, y, qid=qid, eval_set=[(Xv, yv)], eval_qid=[qv],
    ...                        callbacks=[cb])                # doctest: +SKIP
    """

    def __init__(
        self,
        *,
        tracking_uri: str | None = None,
        experiment: str = "ltr",
        run_name: str | None = None,
        run_id: str | None = None,
        parent_run_id: str | None = None,
        log_model: bool = True,
        flush_every: int = 200,
    ) -> None:
        self.tracking_uri = tracking_uri
        self.experiment = experiment
        self.run_name = run_name
        self.run_id = run_id
        self.parent_run_id = parent_run_id
        self.log_model = log_model
        self.flush_every = flush_every
        self._owned = False
        self._buffer: list[Any] = []
        self._client: Any = None

    # -- the run ------------------------------------------------------------------

    @property
    def client(self) -> Any:
        """The ``MlflowClient`` of the tracking URI."""
        if self._client is None:
            mlflow = import_mlflow()
            self._client = mlflow.tracking.MlflowClient(tracking_uri=self.tracking_uri)
        return self._client

    def start(self, params: Mapping[str, Any] | None = None,
              tags: Mapping[str, str] | None = None) -> str:
        """Open the run (unless ``run_id`` was given); log *params* and *tags*; return its id."""
        if self.run_id is None:
            exp = _experiment_id(self.client, self.tracking_uri, self.experiment)
            run_tags = {"mlflow.parentRunId": self.parent_run_id} if self.parent_run_id else {}
            run = self.client.create_run(exp, run_name=self.run_name, tags=run_tags)
            self.run_id = str(run.info.run_id)
            self._owned = True
        self.log_params(params or {})
        for key, value in (tags or {}).items():
            self.client.set_tag(self.run_id, key, value)
        return self.run_id

    def log_params(self, params: Mapping[str, Any]) -> None:
        """Log flattened *params* (in MLflow's batches of 100)."""
        mlflow = import_mlflow()
        flat = flatten_params(params)
        items = [mlflow.entities.Param(k, v) for k, v in flat.items()]
        for i in range(0, len(items), 100):
            self.client.log_batch(self._id(), params=items[i : i + 100])

    def log_metrics(self, values: Mapping[str, float], step: int = 0) -> None:
        """Log *values* (already MLflow names) at *step*, buffered."""
        mlflow = import_mlflow()
        now = int(time.time() * 1000)
        for key, value in values.items():
            self._buffer.append(mlflow.entities.Metric(key, float(value), now, int(step)))

    def flush(self) -> None:
        """Send the buffered metrics (in MLflow's batches of 1000)."""
        buf, self._buffer = self._buffer, []
        for i in range(0, len(buf), 1000):
            self.client.log_batch(self._id(), metrics=buf[i : i + 1000])

    def end(self, status: str = "FINISHED") -> None:
        """Flush and close the run if this callback opened it."""
        if self.run_id is None:
            return
        self.flush()
        if self._owned:
            self.client.set_terminated(self.run_id, status=status)

    def _id(self) -> str:
        if self.run_id is None:
            raise RuntimeError("the MLflow run is not started; call start() (fit does)")
        return self.run_id

    # -- training hooks -------------------------------------------------------------

    def after_round(self, info: RoundInfo) -> None:
        """Buffer the round's metrics as ``<set>.<name>`` at step ``info.round``."""
        if self.run_id is None:
            return
        self.log_metrics(
            {
                f"{name}.{mlflow_metric_name(key)}": value
                for name, values in info.metrics.items()
                for key, value in values.items()
            },
            step=info.round,
        )
        if len(self._buffer) >= self.flush_every * max(1, len(info.metrics)):
            self.flush()

    def on_fit_start(self, estimator: Any) -> None:
        """Open the run; log the estimator's parameters and the library tags."""
        self.start(estimator.get_params(deep=False), library_tags(estimator.engine))

    def on_fit_end(self, estimator: Any) -> None:
        """Log the final metrics and the fitted estimator as a pyfunc model; close the run."""
        final = {
            f"final.{name}.{mlflow_metric_name(key)}": values[-1]
            for name, metrics in (estimator.evals_result_ or {}).items()
            for key, values in metrics.items()
            if values
        }
        self.log_metrics(final)
        self.log_metrics({"n_trees": estimator.model_.num_trees()})
        if self.log_model:
            self.log_pyfunc(estimator=estimator)
        self.end("FINISHED")

    def on_fit_error(self, exc: BaseException) -> None:
        """Close the run as ``FAILED`` (``KILLED`` on an interrupt)."""
        self.end("KILLED" if isinstance(exc, KeyboardInterrupt) else "FAILED")

    # -- the model ----------------------------------------------------------------

    def log_pyfunc(
        self,
        model: RankingModel | None = None,
        *,
        estimator: Any = None,
        features: list[str] | None = None,
    ) -> str:
        """Log a pyfunc model under ``model``; return its URI ``runs:/<id>/model``.

        Parameters
        ----------
        model : RankingModel, optional
            A run's model: the pyfunc selects the columns *features* (default:
            the model's feature names) from the frame it is given.
        estimator : LambdaMARTRanker, optional
            A fitted estimator instead: the pyfunc calls its ``predict``.
        features : list of str, optional
            The feature columns of *model*.
        """
        import joblib

        mlflow = import_mlflow()
        from ltr.tracking._pyfunc import RankingPyfunc

        with tempfile.TemporaryDirectory() as tmp:
            artifacts: dict[str, str] = {}
            if estimator is not None:
                path = os.path.join(tmp, "estimator.joblib")
                joblib.dump(estimator, path)
                artifacts["estimator"] = path
            elif model is not None:
                path = os.path.join(tmp, "model.json")
                model.save(path)
                artifacts["model"] = path
            else:
                raise ValueError("log_pyfunc needs a model or an estimator")
            names = features if features is not None else (model.feature_names if model else None)
            target = os.path.join(tmp, "pyfunc")
            with _quiet_artifacts():
                mlflow.pyfunc.save_model(
                    target,
                    python_model=RankingPyfunc(names),
                    artifacts=artifacts,
                )
                self.client.log_artifacts(self._id(), target, "model")
        return f"runs:/{self._id()}/model"

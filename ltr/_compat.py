"""Optional imports in one place.

Each helper imports a dependency that part of ``ltr`` needs but ``import ltr``
must not: a missing package raises an ``ImportError`` that says which package
(and which ``pip install`` extra) provides it, instead of a bare
``ModuleNotFoundError`` from deep inside a call.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager
from importlib import import_module
from types import ModuleType
from typing import Any

__all__ = [
    "import_dask",
    "import_distributed",
    "import_matplotlib_figure",
    "import_matplotlib_pyplot",
    "import_mlflow",
    "import_optuna",
    "import_tqdm",
    "import_xgboost",
    "import_yaml",
    "optional_import",
    "passive_omp_wait",
]

#: The distribution name on the package index (the import name is ``ltr``; ``ltr`` on the
#: index is an unrelated project).
DISTRIBUTION = "ltr-rank"

#: module name -> (pip package, pyproject extra or None when it is a core dependency)
_PROVIDERS: dict[str, tuple[str, str | None]] = {
    "xgboost": ("xgboost-cpu", "xgboost"),
    "lightgbm": ("lightgbm", None),
    "yaml": ("PyYAML", None),
    "matplotlib": ("matplotlib", None),
    "tqdm": ("tqdm", None),
    "pyarrow": ("pyarrow", None),  # parquet files; a plain dependency, not the test extra
    "pydantic": ("pydantic", None),
    "dask": ("'dask[dataframe,distributed]'", "dask"),
    "distributed": ("'dask[dataframe,distributed]'", "dask"),
    "shap": ("shap", None),  # ltr.inspection.to_shap_explanation only (shap needs numpy >= 2)
    "optuna": ("optuna", "optuna"),
    "mlflow": ("mlflow", "mlflow"),
    "onnx": ("onnx", "export"),
    "onnxruntime": ("onnxruntime", "export"),
}


@contextmanager
def passive_omp_wait() -> Iterator[None]:
    """``OMP_WAIT_POLICY=PASSIVE`` inside the block, unless the user set it; removed after.

    OpenMP threads that spin while waiting (the default) slow LightGBM,
    XGBoost and numba's parallel kernels 10-100x when cores are shared (an
    in-process 2-thread XGBoost fit took 38 s against 1.5 s on a loaded
    machine); passive waiting costs little otherwise.  GNU OpenMP reads the
    variable when its library loads (the engines' imports run inside this
    block), LLVM OpenMP on the first parallel region (the trainings run
    inside it).  An explicit setting, even ``ACTIVE``, wins; the variable is
    gone again after the block, so child processes and later code see the
    environment the caller had.  An engine imported before ``ltr`` keeps the
    policy it loaded with: set ``OMP_WAIT_POLICY`` yourself in that case.
    """
    if "OMP_WAIT_POLICY" in os.environ:
        yield
        return
    os.environ["OMP_WAIT_POLICY"] = "PASSIVE"
    try:
        yield
    finally:
        if os.environ.get("OMP_WAIT_POLICY") == "PASSIVE":
            del os.environ["OMP_WAIT_POLICY"]


def optional_import(name: str, *, purpose: str | None = None) -> ModuleType:
    """Import module *name* or raise an ``ImportError`` naming what to install.

    Parameters
    ----------
    name : str
        Dotted module name, e.g. ``"xgboost"`` or ``"matplotlib.pyplot"``.
    purpose : str, optional
        What the module is needed for, added to the error message.

    Returns
    -------
    module
        The imported module.
    """
    try:
        return import_module(name)
    except ImportError as exc:
        top = name.split(".")[0]
        package, extra = _PROVIDERS.get(top, (top, None))
        hint = f"pip install {package}"
        if extra is not None:
            hint += f"  (or: pip install '{DISTRIBUTION}[{extra}]')"
        why = f" for {purpose}" if purpose else ""
        raise ImportError(f"{name!r} is required{why} but is not installed: {hint}") from exc


def import_xgboost() -> ModuleType:
    """Return the ``xgboost`` module (extra ``ltr-rank[xgboost]``), loaded with passive OpenMP."""
    with passive_omp_wait():
        return optional_import("xgboost", purpose="engine='xgboost'")


def import_yaml() -> ModuleType:
    """Return the ``yaml`` (PyYAML) module."""
    return optional_import("yaml", purpose="YAML configs")


def import_matplotlib_pyplot() -> ModuleType:
    """Return ``matplotlib.pyplot`` with the non-interactive Agg backend selected."""
    mpl = optional_import("matplotlib", purpose="plots")
    # Never open windows: reports are files.  Only switch when pyplot is not yet in use.
    import sys

    if "matplotlib.pyplot" not in sys.modules:
        mpl.use("Agg")
    return optional_import("matplotlib.pyplot", purpose="plots")


def import_matplotlib_figure() -> ModuleType:
    """Return ``matplotlib.figure`` (the object API: no pyplot state, no window)."""
    return optional_import("matplotlib.figure", purpose="plots")


def import_tqdm() -> Any:
    """Return ``tqdm.auto.tqdm``, the progress bar class."""
    return optional_import("tqdm.auto", purpose="progress bars").tqdm


def import_dask() -> ModuleType:
    """Return the ``dask`` module with ``dask.dataframe`` loaded (extra ``ltr-rank[dask]``)."""
    dask = optional_import("dask", purpose="distributed training (ltr.dask)")
    optional_import("dask.dataframe", purpose="distributed training (ltr.dask)")
    return dask


def import_distributed() -> ModuleType:
    """Return the ``distributed`` module, Dask's cluster scheduler (extra ``ltr-rank[dask]``)."""
    import_dask()
    return optional_import("distributed", purpose="distributed training (ltr.dask)")


def import_optuna() -> ModuleType:
    """Return the ``optuna`` module (extra ``ltr-rank[optuna]``), its warnings kept quiet.

    Optuna logs every trial at INFO level; ``ltr`` reports trials itself (progress
    bar, ``search.csv``), so its logger is set to WARNING.
    """
    optuna = optional_import("optuna", purpose="search.method: optuna (ltr tune)")
    optuna.logging.set_verbosity(optuna.logging.WARNING)
    return optuna


def import_mlflow() -> ModuleType:
    """Return the ``mlflow`` module (extra ``ltr-rank[mlflow]``)."""
    return optional_import("mlflow", purpose="MLflow tracking (tracking.mlflow, --mlflow)")

"""Export a trained ranker to the formats search engines serve: :func:`export_model`.

Formats (:data:`FORMATS`): ``opensearch-ltr`` and ``elasticsearch-ltr`` (the LTR
plugin's ``model/xgboost+json``), ``solr-ltr`` (``MultipleAdditiveTreesModel``),
``vespa`` (LightGBM dump JSON for ``lightgbm(...)``), ``ranklib`` (LambdaMART
ensemble text) and ``onnx`` (``ai.onnx.ml`` ``TreeEnsemble``).  Each format's
module states its split rule, threshold precision, missing-value rule and how
LightGBM's and XGBoost's rules are mapped onto it; what a format cannot
express exactly is refused with an :class:`ExportError` naming the tree and
node.  :func:`load_exported` reads an exported file back (onnxruntime for
ONNX, the reference interpreters of :mod:`ltr.testing.exported` otherwise) so
the artefact that is deployed can be scored.

Modules: ``_ir`` (the one tree form, built from :mod:`ltr.engines.trees`, and
the threshold arithmetic), ``_zero`` (LightGBM zero-as-missing splits as plain
splits), one module per format.
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from ltr.export._ir import ExportError, ensemble_of
from ltr.export._ltr_plugin import write_ltr_plugin
from ltr.export._onnx import write_onnx
from ltr.export._ranklib import write_ranklib
from ltr.export._solr import write_solr
from ltr.export._vespa import write_vespa

__all__ = [
    "FORMATS",
    "ExportError",
    "ExportResult",
    "ensemble_of",
    "export_model",
    "load_exported",
    "read_feature_names",
]

_Writer = Callable[..., tuple[list[Path], list[str]]]

#: format name -> writer (one registry)
FORMATS: dict[str, _Writer] = {
    "opensearch-ltr": write_ltr_plugin,
    "elasticsearch-ltr": write_ltr_plugin,
    "solr-ltr": write_solr,
    "vespa": write_vespa,
    "ranklib": write_ranklib,
    "onnx": write_onnx,
}


@dataclass
class ExportResult:
    """What :func:`export_model` wrote.

    Attributes
    ----------
    format : str
    files : list of Path
        The model file first, then its companions.
    sha256 : dict
        File name -> SHA-256 of its bytes.
    notes : list of str
        One line per threshold moved by ``adjust_thresholds``.
    engine : str
    n_trees : int
    """

    format: str
    files: list[Path]
    sha256: dict[str, str]
    engine: str
    n_trees: int
    notes: list[str] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        """Plain data (paths as strings)."""
        return {"format": self.format, "files": [str(p) for p in self.files],
                "sha256": self.sha256, "engine": self.engine, "n_trees": self.n_trees,
                "notes": self.notes}


def _sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _check_format(fmt: Any, arg: str = "format") -> str:
    if fmt not in FORMATS:
        raise ValueError(f"{arg}: unknown export format {fmt!r}; choose one of "
                         f"{', '.join(sorted(FORMATS))}")
    return str(fmt)


def read_feature_names(path: str | os.PathLike[str]) -> list[str]:
    """Feature names from a text file, one per line (blank lines and ``#`` comments skipped)."""
    p = Path(path)
    if not p.is_file():
        raise ValueError(f"features: file not found: {str(p)!r}")
    lines = [ln.strip() for ln in p.read_text(encoding="utf-8").splitlines()]
    return [ln for ln in lines if ln and not ln.startswith("#")]


def export_model(
    model: Any,
    format: str,
    path: str | os.PathLike[str],
    *,
    feature_names: Sequence[str] | None = None,
    name: str | None = None,
    featureset: str = "ltr_features",
    reference: Any = None,
    adjust_thresholds: bool = False,
    onnx_opset: int = 5,
) -> ExportResult:
    """Write *model* in a search engine's format.

    Parameters
    ----------
    model : RankingModel, estimator or booster
        A LightGBM or XGBoost tree model (only the trees it predicts with:
        ``ltr`` models are already cut at their best iteration).
    format : str
        One of :data:`FORMATS`.
    path : path-like
        The model file; companions go beside it with a suffix added to the
        name: ``.createmodel.json`` (LTR plugin request body),
        ``.feature-store.json`` (Solr), ``.rank-profile.sd`` (Vespa).
    feature_names : sequence of str, optional
        Search-engine feature names, one per model column in order (default:
        the model's own, else ``f0, f1, ...``).
    name : str, optional
        Model name in the request body / store / rank profile (default: the
        file's stem).
    featureset : str, default="ltr_features"
        LTR plugin featureset or Solr feature store.
    reference : array-like of shape (n_rows, n_features), optional
        Training rows.  Float32 formats then check that every row stays on its
        side of every split after float32 rounding (else :class:`ExportError`).
    adjust_thresholds : bool, default=False
        Move a threshold the format cannot hold (see each format) to the
        nearest representable value that keeps every *reference* row on its
        side, and list each move in ``notes`` (needs *reference*).
    onnx_opset : {5, 3}, default=5
        ONNX only: 5 is ``TreeEnsemble`` (double); 3 the float32
        ``TreeEnsembleRegressor`` fallback.

    Returns
    -------
    ExportResult

    Raises
    ------
    ExportError
        What the format cannot express exactly, naming tree, node and reason.
    """
    fmt = _check_format(format)
    if not isinstance(adjust_thresholds, bool):
        raise TypeError(f"adjust_thresholds: expected a bool, got {adjust_thresholds!r}")
    if adjust_thresholds and reference is None:
        raise ValueError("adjust_thresholds=True needs reference= (the training rows), so "
                         "that no training row changes side; pass reference=X_train")
    if fmt != "onnx" and onnx_opset != 5:
        raise ValueError(f"onnx_opset: applies to format='onnx' only, got format={fmt!r}")
    out = Path(path)
    if out.is_dir():
        raise ValueError(f"path: {str(out)!r} is a folder; give a file name")
    if not out.parent.is_dir():
        raise ValueError(f"path: folder {str(out.parent)!r} does not exist; create it first")
    ens = ensemble_of(model, None if feature_names is None else list(feature_names))
    if reference is not None:
        ref = np.asarray(reference, dtype=np.float64)
        if ref.ndim != 2 or ref.shape[1] != ens.n_features:
            raise ValueError(f"reference: expected shape (n_rows, {ens.n_features}), got "
                             f"{ref.shape}")
        reference = ref
    kwargs: dict[str, Any] = {"fmt": fmt, "name": name or out.stem, "featureset": featureset,
                              "reference": reference, "adjust": adjust_thresholds}
    if fmt == "onnx":
        kwargs["opset"] = onnx_opset
    files, notes = FORMATS[fmt](ens, out, **kwargs)
    return ExportResult(format=fmt, files=files, sha256={p.name: _sha256(p) for p in files},
                        engine=ens.engine, n_trees=ens.n_trees, notes=notes)


class _OnnxScorer:
    def __init__(self, path: Path) -> None:
        from ltr._compat import optional_import

        ort = optional_import("onnxruntime", purpose="scoring an exported ONNX model")
        opts = ort.SessionOptions()
        opts.intra_op_num_threads = 1  # trees summed in order
        self.session = ort.InferenceSession(str(path), opts, providers=["CPUExecutionProvider"])
        inp = self.session.get_inputs()[0]
        self.dtype = np.float64 if "double" in inp.type else np.float32
        self.n_features = int(inp.shape[1])

    def predict(self, X: Any) -> np.ndarray:
        X = np.asarray(X, dtype=np.float64)
        if X.ndim != 2 or X.shape[1] != self.n_features:
            raise ValueError(f"X: expected shape (n_rows, {self.n_features}), got {X.shape}")
        out = self.session.run(None, {"X": X.astype(self.dtype)})[0]
        return np.asarray(out, dtype=np.float64).reshape(-1)


def load_exported(path: str | os.PathLike[str], format: str,
                  feature_names: Sequence[str] | None = None) -> Any:
    """Read an exported model back; the result has ``predict(X) -> ndarray of float64``.

    ONNX runs in onnxruntime; the other formats in the reference interpreters
    of :mod:`ltr.testing.exported` (written from each engine's source, for
    checking the artefact, not for speed).

    Parameters
    ----------
    path : path-like
        The model file :func:`export_model` wrote.
    format : str
        One of :data:`FORMATS`.
    feature_names : sequence of str, optional
        The engine's feature vector order (formats that name features); default:
        the names in the file, in the order they appear first, or the model's
        column order where the file lists it (Solr, Vespa).
    """
    fmt = _check_format(format)
    p = Path(path)
    if not p.is_file():
        raise ValueError(f"path: file not found: {str(p)!r}")
    if fmt == "onnx":
        return _OnnxScorer(p)
    from ltr.testing import exported

    return exported.load(p, fmt, None if feature_names is None else list(feature_names))

"""Reference interpreter of RankLib's LambdaMART model text (LTR plugin: ``model/ranklib``).

Written from RankLib 2.x (as in codelibs/ranklib, commit 378a17d):
``ciir/umass/edu/learning/tree/LambdaMART.java`` (``loadFromString``: lines
trimmed, empty and ``##`` lines skipped, the rest concatenated),
``Ensemble.java`` (``Ensemble(String)``, ``eval``) and ``Split.java``
(``eval``).  Independent of ``ltr.export``.

* ``<tree weight>``: ``Float.parseFloat``; a ``<split>`` whose first child is
  ``<feature>`` is a split (children by position: ``feature, threshold,
  left split, right split``), else a stump whose ``<output>`` is read with
  ``Float.parseFloat``;
* ``Split.eval``: ``dp.getFeatureValue(fid) <= threshold`` (float32, 1-based
  ids) goes left; NaN goes right;
* ``Ensemble.eval``: ``float s = 0; s += tree.eval(dp) * weight`` (a double
  product, the sum stored back into the float).
"""

from __future__ import annotations

import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any

import numpy as np

from ltr.testing.exported._java import parse_float

__all__ = ["RankLibModel"]


class RankLibModel:
    """A parsed ensemble; :meth:`predict` scores rows whose column ``j`` is feature ``j + 1``."""

    def __init__(self, text: str) -> None:
        lines = [ln.strip() for ln in text.splitlines()]
        body = "".join(ln for ln in lines if ln and not ln.startswith("##"))
        root = ET.fromstring(body)
        self.trees = []
        for tree in root.iter("tree"):
            weight = parse_float(tree.attrib["weight"])
            self.trees.append((weight, self._create(next(iter(tree)))))

    def _create(self, split: ET.Element) -> Any:
        kids = list(split)
        if kids[0].tag.lower() == "feature":
            fid = int((kids[0].text or "").strip())
            thr = parse_float((kids[1].text or "").strip())
            return ("split", fid, thr, self._create(kids[2]), self._create(kids[3]))
        return ("leaf", parse_float((kids[0].text or "").strip()))

    def _eval(self, node: Any, X: np.ndarray, rows: np.ndarray, out: np.ndarray) -> None:
        if node[0] == "leaf":
            out[rows] = np.float64(node[1])
            return
        _, fid, thr, a, b = node
        left = X[rows, fid - 1] <= thr
        self._eval(a, X, rows[left], out)
        self._eval(b, X, rows[~left], out)

    def predict(self, X: Any) -> np.ndarray:
        """Scores (float32 sum of double products, returned as float64)."""
        X32 = np.asarray(X, dtype=np.float64).astype(np.float32)
        s = np.zeros(X32.shape[0], dtype=np.float32)
        rows = np.arange(X32.shape[0])
        out = np.zeros(X32.shape[0], dtype=np.float64)
        for weight, root in self.trees:
            self._eval(root, X32, rows, out)
            s = (s.astype(np.float64) + out * np.float64(weight)).astype(np.float32)
        return s.astype(np.float64)

    @classmethod
    def load(cls, path: Path) -> RankLibModel:
        """Read a model file."""
        return cls(path.read_text(encoding="utf-8"))

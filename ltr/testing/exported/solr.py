"""Reference interpreter of Solr's ``MultipleAdditiveTreesModel``.

Written from apache/solr (main, 9.x)
``solr/modules/ltr/src/java/org/apache/solr/ltr/model/MultipleAdditiveTreesModel.java``
(commit 1a87471).
Independent of ``ltr.export``.

* ``features`` gives the feature vector's order (``fname2index``);
* ``setThreshold(String)``: ``Float.parseFloat(text) + NODE_SPLIT_SLACK``
  (``1E-6f``, float addition); ``setValue``/``setWeight``: ``Float.parseFloat``;
* ``scoreNode``: a node naming a feature absent from ``features`` scores the
  tree 0; ``featureVector[i] <= threshold`` goes ``left`` (float32; NaN right);
* ``score``: ``float score = 0; score += weight * scoreNode(...)`` in order.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from ltr.testing.exported._java import parse_float, strict_json

__all__ = ["SolrModel"]

NODE_SPLIT_SLACK = np.float32(1e-6)


def _text(v: Any) -> str:
    return v if isinstance(v, str) else repr(v)


class SolrModel:
    """A parsed model; :meth:`predict` scores rows in the order of its ``features``."""

    def __init__(self, text: str) -> None:
        data = strict_json(text)
        if data.get("class") != "org.apache.solr.ltr.model.MultipleAdditiveTreesModel":
            raise ValueError("not a MultipleAdditiveTreesModel")
        self.feature_names = [f["name"] for f in data["features"]]
        self.index = {n: i for i, n in enumerate(self.feature_names)}
        trees = data["params"]["trees"]
        self.trees = []
        for t in trees:
            if "weight" not in t or "root" not in t:
                raise ValueError("MultipleAdditiveTreesModel tree doesn't contain a weight/tree")
            self.trees.append((parse_float(_text(t["weight"])), self._node(t["root"])))

    def _node(self, d: dict[str, Any]) -> Any:
        if "feature" not in d:
            return ("leaf", parse_float(_text(d.get("value", "0"))))
        thr = np.float32(parse_float(_text(d["threshold"])) + NODE_SPLIT_SLACK)
        return ("split", self.index.get(d["feature"], -1), thr,
                self._node(d["left"]), self._node(d["right"]))

    def _eval(self, node: Any, X: np.ndarray, rows: np.ndarray, out: np.ndarray) -> None:
        if node[0] == "leaf":
            out[rows] = node[1]
            return
        _, j, thr, a, b = node
        if j < 0 or j >= X.shape[1]:
            out[rows] = 0.0
            return
        left = X[rows, j] <= thr
        self._eval(a, X, rows[left], out)
        self._eval(b, X, rows[~left], out)

    def predict(self, X: Any) -> np.ndarray:
        """Scores (float32 arithmetic, returned as float64)."""
        X32 = np.asarray(X, dtype=np.float64).astype(np.float32)
        score = np.zeros(X32.shape[0], dtype=np.float32)
        rows = np.arange(X32.shape[0])
        out = np.zeros(X32.shape[0], dtype=np.float32)
        for weight, root in self.trees:
            self._eval(root, X32, rows, out)
            score = score + weight * out
        return score.astype(np.float64)

    @classmethod
    def load(cls, path: Path) -> SolrModel:
        """Read a model file."""
        return cls(path.read_text(encoding="utf-8"))

"""Reference interpreter of the LTR plugin's ``model/xgboost+json`` (OpenSearch and Elasticsearch).

Written from opensearch-project/opensearch-learning-to-rank-base (main, 3.x):
``src/main/java/com/o19s/es/ltr/ranker/parser/XGBoostJsonParser.java`` (commit
3ebd19a) and ``src/main/java/com/o19s/es/ltr/ranker/dectree/
NaiveAdditiveDecisionTree.java`` (commit 090f77e), and
o19s/elasticsearch-learning-to-rank (1.5.x) ``XGBoostJsonParser.java`` (commit
0331fe5), whose ``missing`` field is parsed and ignored.  Independent of ``ltr.export``.

* the definition is an array of trees (or an object with ``splits``);
* a split needs ``nodeid, depth, split, split_condition, yes, no, children``
  with ``children[0].nodeid == yes`` and ``children[1].nodeid == no``; an
  unknown feature name is an error; ``split_condition`` and ``leaf`` are read
  by Jackson's ``getFloatValue`` (double, then float);
* ``Split.eval``: NaN goes to ``yes`` when ``missing == yes`` (OpenSearch;
  o19s: always ``no``), else ``threshold > value`` goes to ``yes``; the
  feature vector is ``float[]``;
* ``score``: ``float sum = 0; sum += 1f * tree.eval(scores)`` in file order.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from ltr.testing.exported._java import jackson_float, strict_json

__all__ = ["LtrPluginModel"]


class LtrPluginModel:
    """A parsed definition; :meth:`predict` scores rows whose columns follow *feature_names*."""

    def __init__(self, text: str, feature_names: list[str], honour_missing: bool = True) -> None:
        data = strict_json(text)
        splits = data["splits"] if isinstance(data, dict) else data
        if not isinstance(splits, list) or not splits:
            raise ValueError("XGBoost model must define at least one tree")
        self.ordinal = {n: i for i, n in enumerate(feature_names)}
        self.honour_missing = honour_missing
        self.trees = [self._node(t) for t in splits]

    def _node(self, d: dict[str, Any]) -> Any:
        if "leaf" in d:
            if "nodeid" not in d:
                raise ValueError("This leaf does not have all the required fields")
            return ("leaf", jackson_float(d["leaf"]))
        need = ("nodeid", "depth", "split", "split_condition", "yes", "no", "children")
        if any(k not in d for k in need) or len(d["children"]) != 2:
            raise ValueError("This split does not have all the required fields")
        a, b = d["children"]
        if a.get("nodeid") != d["yes"] or b.get("nodeid") != d["no"]:
            raise ValueError("Split structure is invalid")
        if d["split"] not in self.ordinal:
            raise ValueError(f"Unknown feature [{d['split']}]")
        missing = d.get("missing")
        if missing is not None and missing not in (d["yes"], d["no"]):
            raise ValueError("missing must point to a child")
        default_left = self.honour_missing and missing is not None and missing == d["yes"]
        return ("split", self.ordinal[d["split"]], jackson_float(d["split_condition"]),
                default_left, self._node(a), self._node(b))

    def _eval(self, node: Any, X: np.ndarray, rows: np.ndarray, out: np.ndarray) -> None:
        if node[0] == "leaf":
            out[rows] = node[1]
            return
        _, j, thr, default_left, a, b = node
        v = X[rows, j]
        nan = np.isnan(v)
        left = np.where(nan, default_left, thr > v)
        self._eval(a, X, rows[left], out)
        self._eval(b, X, rows[~left], out)

    def predict(self, X: Any) -> np.ndarray:
        """Scores (float32 arithmetic, returned as float64)."""
        X32 = np.asarray(X, dtype=np.float64).astype(np.float32)
        total = np.zeros(X32.shape[0], dtype=np.float32)
        rows = np.arange(X32.shape[0])
        tree_out = np.zeros(X32.shape[0], dtype=np.float32)
        for tree in self.trees:
            self._eval(tree, X32, rows, tree_out)
            total = total + np.float32(1.0) * tree_out
        return total.astype(np.float64)

    @classmethod
    def load(cls, path: Path, feature_names: list[str], honour_missing: bool = True
             ) -> LtrPluginModel:
        """Read a definition file."""
        return cls(path.read_text(encoding="utf-8"), feature_names, honour_missing)

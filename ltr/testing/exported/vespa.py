"""Reference interpreter of Vespa's LightGBM import (``lightgbm("file.json")``).

Written from vespa-engine/vespa (8.x)
``model-integration/src/main/java/ai/vespa/rankingexpression/importer/lightgbm/LightGBMParser.java``
(commit 089e174; ``nodeToRankingExpression``, ``applyObjective``).  Independent of ``ltr.export``.

* each tree becomes ``if (cond, left, right)``; numerical nodes (any
  ``decision_type`` but ``==``): ``Double.parseDouble(threshold)``, ``cond`` is
  ``!(f >= t)`` when ``default_left`` else ``f < t``; leaves are
  ``Double.toString(leaf_value)`` literals (exact doubles);
* the trees are joined with ``+`` (evaluated left to right, doubles); the
  objective ``binary*``/``cross_entropy`` wraps ``sigmoid``, ``poisson``/
  ``gamma``/``tweedie`` ``exp``; categorical (``==``) nodes are not covered here;
* a feature is looked up by its name in ``feature_names`` (values are doubles).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from ltr.testing.exported._java import strict_json

__all__ = ["VespaLightGBMModel"]


class VespaLightGBMModel:
    """A parsed dump; :meth:`predict` scores rows in the order of ``feature_names``."""

    def __init__(self, text: str) -> None:
        data = strict_json(text)
        if "tree_info" not in data:
            raise ValueError("not a LightGBM JSON dump (no tree_info)")
        self.objective = str(data.get("objective", "regression"))
        self.feature_names = list(data["feature_names"])
        self.trees = [self._node(t["tree_structure"]) for t in data["tree_info"]]

    def _node(self, d: dict[str, Any]) -> Any:
        if "split_feature" not in d:
            return ("leaf", float(d["leaf_value"]))
        if d.get("decision_type") == "==":
            raise ValueError("categorical nodes are not covered by this interpreter")
        return ("split", int(d["split_feature"]), float(str(d["threshold"])),
                bool(d.get("default_left", False)), self._node(d["left_child"]),
                self._node(d["right_child"]))

    def _eval(self, node: Any, X: np.ndarray, rows: np.ndarray, out: np.ndarray) -> None:
        if node[0] == "leaf":
            out[rows] = node[1]
            return
        _, j, thr, default_left, a, b = node
        v = X[rows, j]
        with np.errstate(invalid="ignore"):
            cond = ~(v >= thr) if default_left else (v < thr)
        self._eval(a, X, rows[cond], out)
        self._eval(b, X, rows[~cond], out)

    def predict(self, X: Any) -> np.ndarray:
        """Scores (double arithmetic)."""
        X = np.asarray(X, dtype=np.float64)
        total = np.zeros(X.shape[0])
        rows = np.arange(X.shape[0])
        out = np.zeros(X.shape[0])
        for i, tree in enumerate(self.trees):
            self._eval(tree, X, rows, out)
            total = out.copy() if i == 0 else total + out
        if self.objective.startswith("binary") or self.objective == "cross_entropy":
            return 1.0 / (1.0 + np.exp(-total))
        if self.objective in ("poisson", "gamma", "tweedie"):
            return np.exp(total)
        return total

    @classmethod
    def load(cls, path: Path) -> VespaLightGBMModel:
        """Read a dump file."""
        return cls(path.read_text(encoding="utf-8"))

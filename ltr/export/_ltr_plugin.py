"""``opensearch-ltr`` / ``elasticsearch-ltr``: the LTR plugin's ``model/xgboost+json``.

What the plugin does (``NaiveAdditiveDecisionTree`` and ``XGBoostJsonParser`` of
opensearch-project/opensearch-learning-to-rank-base, and of its original
o19s/elasticsearch-learning-to-rank):

* **split rule**: ``threshold > value`` goes to the first child (``yes``),
  else the second (``no``); thresholds and feature values are float32
  (``declareFloat``; the feature vector is ``float[]``);
* **missing values**: the OpenSearch plugin sends NaN to the ``missing`` child
  (``defaultLeft`` when ``missing == yes``); the o19s Elasticsearch plugin
  ignores ``missing`` (its parser marks the field "Ignored"), so NaN fails the
  comparison and goes right.  A feature query that does not match scores 0,
  so neither engine feeds NaN in practice;
* **leaves and sum**: float32 leaves, summed in float32 in file order from 0
  (tree weights 1).

How ltr maps the engines onto it: a split ``v <= bound`` becomes ``v <
next_float32(floor_float32(bound))`` (exact for every float32 feature value;
for XGBoost this is its own float32 threshold); NaN's direction is written as
``missing`` (LightGBM missing type None: where 0 goes); LightGBM
zero-as-missing splits arrive rewritten as plain splits
(:mod:`ltr.export._zero`); XGBoost's ``base_score`` becomes a first one-leaf tree (the
plugin adds no base score).  LightGBM's float64 leaves are rounded to float32
(about 6e-8 relative per leaf).

Files: ``FILE`` holds the definition (the dump array); ``FILE.createmodel.json``
the request body for ``POST _ltr/_featureset/FEATURESET/_createmodel``.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np

from ltr._io import write_atomic
from ltr.export._ir import (
    Ensemble,
    check_reference,
    float32_thresholds,
    walk,
    warn_nan_right,
)

__all__ = ["write_ltr_plugin"]

TYPE = "model/xgboost+json"


def _trees(ens: Ensemble, thr: np.ndarray) -> list[Any]:
    leaf32 = ens.leaf_value.astype(np.float32).astype(np.float64).tolist()
    thr_l = thr.tolist()
    nan_left = ens.nan_left.tolist()
    feature = ens.trees.feature.tolist()
    names = ens.feature_names
    out: list[Any] = []
    if ens.base != 0.0:
        out.append({"nodeid": 0, "leaf": float(np.float32(ens.base))})
    for t in range(ens.n_trees):
        n_internal = int(ens.trees.start[t + 1] - ens.trees.start[t])
        lstart = int(ens.trees.leaf_start[t])

        def leaf(i: int, depth: int, n_internal: int = n_internal, lstart: int = lstart) -> Any:
            return {"nodeid": n_internal + i, "leaf": leaf32[lstart + i]}

        def split(flat: int, k: int, depth: int, a: Any, b: Any) -> Any:
            yes, no = a["nodeid"], b["nodeid"]
            return {"nodeid": k, "depth": depth, "split": names[feature[flat]],
                    "split_condition": thr_l[flat], "yes": yes, "no": no,
                    "missing": yes if nan_left[flat] else no, "children": [a, b]}

        out.append(walk(ens, t, split, leaf))
    return out


def write_ltr_plugin(ens: Ensemble, path: Path, *, fmt: str, name: str, featureset: str,
                     reference: Any = None, adjust: bool = False) -> tuple[list[Path], list[str]]:
    """Write the definition and the ``_createmodel`` request body; return (files, notes)."""
    ens.check_no_categorical(fmt)
    if fmt == "elasticsearch-ltr":
        warn_nan_right(ens, fmt)
    thr = float32_thresholds(ens, "<", fmt)
    thr, notes = check_reference(ens, thr, "<", reference, adjust, fmt)
    definition = json.dumps(_trees(ens, thr), separators=(",", ":"))
    body = {"model": {"name": name, "model": {"type": TYPE, "definition": definition}}}
    companion = path.with_name(path.name + ".createmodel.json")
    write_atomic(path, definition)
    write_atomic(companion, json.dumps(body, indent=1) + "\n")
    return [path, companion], notes

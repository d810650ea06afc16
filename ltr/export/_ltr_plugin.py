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
    preorder,
    warn_nan_right,
)

__all__ = ["write_ltr_plugin"]

TYPE = "model/xgboost+json"


def _definition(ens: Ensemble, thr: np.ndarray) -> str:
    """Return the dump array as JSON text (node by node, see :func:`preorder`)."""
    leaf32 = [repr(v) for v in ens.leaf_value.astype(np.float32).astype(np.float64).tolist()]
    thr_s = [repr(v) for v in thr.tolist()]
    nan_left = ens.nan_left.tolist()
    feature = ens.trees.feature.tolist()
    names = [json.dumps(n) for n in ens.feature_names]
    lists = ens.lists()
    start, left, right = lists
    leaf_start = ens.trees.leaf_start.tolist()
    out: list[str] = ["["]
    if ens.base != 0.0:
        out.append(f'{{"nodeid":0,"leaf":{float(np.float32(ens.base))!r}}},')
    for t in range(ens.n_trees):
        n_nodes, base, lstart = start[t + 1] - start[t], start[t], leaf_start[t]

        def ident(c: int, n_nodes: int = n_nodes) -> int:
            return n_nodes + ~c if c < 0 else c

        def open_(flat: int, k: int, depth: int, base: int = base) -> str:
            yes, no = ident(left[flat]), ident(right[flat])
            return (f'{{"nodeid":{k},"depth":{depth},"split":{names[feature[flat]]},'
                    f'"split_condition":{thr_s[flat]},"yes":{yes},"no":{no},'
                    f'"missing":{yes if nan_left[flat] else no},"children":[')

        def leaf(i: int, depth: int, n_nodes: int = n_nodes, lstart: int = lstart) -> str:
            return f'{{"nodeid":{n_nodes + i},"leaf":{leaf32[lstart + i]}}}'

        if t:
            out.append(",")
        preorder(ens, t, out, lists, open_, lambda f, d: ",", lambda f, d: "]}", leaf)
    out.append("]")
    return "".join(out)


def write_ltr_plugin(ens: Ensemble, path: Path, *, fmt: str, name: str, featureset: str,
                     reference: Any = None, adjust: bool = False) -> tuple[list[Path], list[str]]:
    """Write the definition and the ``_createmodel`` request body; return (files, notes)."""
    ens.check_no_categorical(fmt)
    if fmt == "elasticsearch-ltr":
        warn_nan_right(ens, fmt)
    thr, inf_notes = float32_thresholds(ens, "<")
    thr, notes = check_reference(ens, thr, "<", reference, adjust, fmt)
    notes = inf_notes + notes
    definition = _definition(ens, thr)
    body = {"model": {"name": name, "model": {"type": TYPE, "definition": definition}}}
    companion = path.with_name(path.name + ".createmodel.json")
    write_atomic(path, definition)
    write_atomic(companion, json.dumps(body, indent=1) + "\n")
    return [path, companion], notes

"""``solr-ltr``: Solr's ``MultipleAdditiveTreesModel`` JSON and a feature-store stub.

What Solr does (``solr/modules/ltr/src/java/org/apache/solr/ltr/model/
MultipleAdditiveTreesModel.java`` of apache/solr, main branch, 9.x):

* **split rule**: ``featureVector[i] <= threshold`` goes ``left``; feature
  values are float32 and the threshold is ``Float.parseFloat(text) + 1e-6f``
  (``NODE_SPLIT_SLACK``, a float32 addition);
* **missing values**: none; NaN fails ``<=`` and goes right (a missing
  feature gets its feature's default value, 0 unless configured);
* **leaves and sum**: float32 ``value``, times the tree's float32 ``weight``
  (1 here), summed in float32 in file order from 0.

How ltr maps the engines onto it: the wanted float32 threshold is
``floor_float32(bound)`` (exact for every float32 value); ltr writes the
float32 ``p`` whose sum with the slack lands exactly on it.  Where no such
``p`` exists (the slack skips some float32 values near zero) the export is
refused, or with ``adjust_thresholds`` moved to the nearest reachable value
that keeps every training row on its side.  NaN goes right (a warning when
the model learned another direction); zero-as-missing splits arrive
rewritten as plain splits (:mod:`ltr.export._zero`); a base score becomes a
first one-leaf tree.

Files: ``FILE`` (the model, ``PUT /solr/COLLECTION/schema/model-store``) and
``FILE.feature-store.json`` (one ``FieldValueFeature`` per feature, to edit,
``PUT /solr/COLLECTION/schema/feature-store``).
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

__all__ = ["SLACK", "solr_text", "write_solr"]

SLACK = np.float32(1e-6)
CLASS = "org.apache.solr.ltr.model.MultipleAdditiveTreesModel"


def _preimage(target: np.ndarray) -> np.ndarray:
    """Float32 ``p`` with ``float32(p + 1e-6f) == target`` (NaN where none exists)."""
    target = np.asarray(target, dtype=np.float32)
    with np.errstate(over="ignore", invalid="ignore"):
        c = (target.astype(np.float64) - float(SLACK)).astype(np.float32)
        out = np.full(target.shape, np.nan, dtype=np.float32)
        cands = [c]
        for _ in range(3):
            cands.append(np.nextafter(cands[-1], np.float32(np.inf)))
        down = c
        for _ in range(3):
            down = np.nextafter(down, np.float32(-np.inf))
            cands.append(down)
        for cand in cands:
            hit = np.isnan(out) & ((cand + SLACK) == target)
            out[hit] = cand[hit]
    return out


def _reachable(thr: np.ndarray) -> np.ndarray:
    return ~np.isnan(_preimage(thr))


def _nearby(x: np.ndarray) -> np.ndarray:
    """Return the thresholds Solr can reach near *x* (``p + 1e-6f``, ``p`` near ``x - 1e-6``)."""
    p = (np.asarray(x, dtype=np.float64) - float(SLACK)).astype(np.float32)
    ps = [p]
    up = down = p
    for _ in range(16):
        up, down = np.nextafter(up, np.float32(np.inf)), np.nextafter(down, np.float32(-np.inf))
        ps += [up, down]
    return np.unique(np.concatenate(ps) + SLACK).astype(np.float64)


def solr_text(x: float) -> str:
    """Return the text Solr parses back to the float32 *x* exactly."""
    return repr(float(np.float32(x)))


def write_solr(ens: Ensemble, path: Path, *, fmt: str, name: str, featureset: str,
               reference: Any = None, adjust: bool = False) -> tuple[list[Path], list[str]]:
    """Write the model and the feature-store stub; return (files, notes)."""
    ens.check_no_categorical(fmt)
    warn_nan_right(ens, fmt)
    thr, inf_notes = float32_thresholds(ens, "<=")
    thr, notes = check_reference(ens, thr, "<=", reference, adjust, fmt, reachable=_reachable,
                                  nearby=_nearby)
    notes = inf_notes + notes
    pre = _preimage(thr)
    pre_s = [repr(p) for p in pre.astype(np.float64).tolist()]  # float32 values (NaN: unused)
    leaf_s = [repr(v) for v in ens.leaf_value.astype(np.float32).astype(np.float64).tolist()]
    feature = ens.trees.feature.tolist()
    names = ens.feature_names
    jnames = [json.dumps(n) for n in names]
    lists = ens.lists()
    leaf_start = ens.trees.leaf_start.tolist()
    out: list[str] = []
    if ens.base != 0.0:
        out.append(f'{{"weight":"1","root":{{"value":"{solr_text(ens.base)}"}}}}')
    for t in range(ens.n_trees):
        lstart = leaf_start[t]

        def leaf(i: int, depth: int, lstart: int = lstart) -> str:
            return f'{{"value":"{leaf_s[lstart + i]}"}}'

        def open_(flat: int, k: int, depth: int) -> str:
            return f'{{"feature":{jnames[feature[flat]]},"threshold":"{pre_s[flat]}","left":'

        if out:
            out.append(",")
        out.append('{"weight":"1","root":')
        preorder(ens, t, out, lists, open_, lambda f, d: ',"right":', lambda f, d: "}", leaf)
        out.append("}")
    model = {"class": CLASS, "name": name, "store": featureset,
             "features": [{"name": n} for n in names], "params": {"trees": "@TREES@"}}
    store = [{"store": featureset, "name": n,
              "class": "org.apache.solr.ltr.feature.FieldValueFeature", "params": {"field": n}}
             for n in names]
    companion = path.with_name(path.name + ".feature-store.json")
    head = json.dumps(model, separators=(",", ":"))
    write_atomic(path, head.replace('"@TREES@"', "[" + "".join(out) + "]", 1))
    write_atomic(companion, json.dumps(store, indent=1) + "\n")
    return [path, companion], notes

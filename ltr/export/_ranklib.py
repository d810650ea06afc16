"""``ranklib``: the LambdaMART ensemble text RankLib writes (LTR plugin: ``model/ranklib``).

What RankLib does (``ciir/umass/edu/learning/tree/Split.java`` and
``Ensemble.java`` of RankLib 2.x, as in codelibs/ranklib): ``<feature>`` is a
1-based feature id, ``Float.parseFloat`` reads ``<threshold>``, ``<output>``
and the tree ``weight``;

* **split rule**: ``dp.getFeatureValue(id) <= threshold`` (float32) goes to
  ``pos="left"``;
* **missing values**: none; NaN fails ``<=`` and goes right (a feature absent
  from a data line is 0);
* **leaves and sum**: float32 outputs times the float32 weight (1 here), summed
  into a float32 in file order from 0.

How ltr maps the engines onto it: ``v <= bound`` becomes ``v <=
floor_float32(bound)``, exact for every float32 value (XGBoost: the float32
before its threshold); model column ``j`` is feature ``j + 1``; zero-as-missing
and NaN as in :mod:`ltr.export._solr`; a base score is a first one-leaf tree.
"""

from __future__ import annotations

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

__all__ = ["write_ranklib"]


def _f(x: float) -> str:
    return repr(float(np.float32(x)))


def write_ranklib(ens: Ensemble, path: Path, *, fmt: str, name: str, featureset: str,
                  reference: Any = None, adjust: bool = False) -> tuple[list[Path], list[str]]:
    """Write the ensemble text; return (files, notes)."""
    ens.check_no_categorical(fmt)
    warn_nan_right(ens, fmt)
    thr, inf_notes = float32_thresholds(ens, "<=")
    thr, notes = check_reference(ens, thr, "<=", reference, adjust, fmt)
    notes = inf_notes + notes
    thr_s = [_f(x) for x in thr.tolist()]
    leaf_s = [_f(v) for v in ens.leaf_value.tolist()]
    feature = ens.trees.feature.tolist()
    lines = [
        "## LambdaMART",
        f"## exported by ltr from a {ens.engine} model; feature j+1 is model column j",
        f"## No. of trees = {ens.n_trees + (ens.base != 0.0)}",
        "## Learning rate = 1.0",
        "",
        "<ensemble>",
    ]
    tid = 0
    if ens.base != 0.0:
        tid += 1
        lines += [f'\t<tree id="{tid}" weight="1.0">', "\t\t<split>",
                  f"\t\t\t<output> {_f(ens.base)} </output>", "\t\t</split>", "\t</tree>"]
    for t in range(ens.n_trees):
        lstart = int(ens.trees.leaf_start[t])

        def leaf(i: int, depth: int, lstart: int = lstart) -> Any:
            return [f"<output> {leaf_s[lstart + i]} </output>"]

        def split(flat: int, k: int, depth: int, a: Any, b: Any) -> Any:
            return ([f"<feature> {feature[flat] + 1} </feature>",
                     f"<threshold> {thr_s[flat]} </threshold>", '<split pos="left">']
                    + ["\t" + x for x in a] + ["</split>", '<split pos="right">']
                    + ["\t" + x for x in b] + ["</split>"])

        tid += 1
        body = walk(ens, t, split, leaf)
        lines += [f'\t<tree id="{tid}" weight="1.0">', "\t\t<split>"]
        lines += ["\t\t\t" + x for x in body]
        lines += ["\t\t</split>", "\t</tree>"]
    lines.append("</ensemble>")
    write_atomic(path, "\n".join(lines) + "\n")
    return [path], notes

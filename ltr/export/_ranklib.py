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
    preorder,
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
    thr_s = [repr(x) for x in thr.tolist()]  # float32 values already
    leaf_s = [repr(v) for v in ens.leaf_value.astype(np.float32).astype(np.float64).tolist()]
    feature = [j + 1 for j in ens.trees.feature.tolist()]
    lists = ens.lists()
    leaf_start = ens.trees.leaf_start.tolist()
    out = [
        "## LambdaMART\n",
        f"## exported by ltr from a {ens.engine} model; feature j+1 is model column j\n",
        f"## No. of trees = {ens.n_trees + (ens.base != 0.0)}\n",
        "## Learning rate = 1.0\n\n<ensemble>\n",
    ]
    tid = 0
    if ens.base != 0.0:
        tid += 1
        out.append(f'\t<tree id="{tid}" weight="1.0">\n\t\t<split>\n'
                   f"\t\t\t<output> {_f(ens.base)} </output>\n\t\t</split>\n\t</tree>\n")
    for t in range(ens.n_trees):
        lstart = leaf_start[t]

        def leaf(i: int, depth: int, lstart: int = lstart) -> str:
            return "\t" * (3 + depth) + f"<output> {leaf_s[lstart + i]} </output>\n"

        def open_(flat: int, k: int, depth: int) -> str:
            ind = "\t" * (3 + depth)
            return (f"{ind}<feature> {feature[flat]} </feature>\n"
                    f"{ind}<threshold> {thr_s[flat]} </threshold>\n{ind}<split pos=\"left\">\n")

        def mid(flat: int, depth: int) -> str:
            ind = "\t" * (3 + depth)
            return f'{ind}</split>\n{ind}<split pos="right">\n'

        tid += 1
        out.append(f'\t<tree id="{tid}" weight="1.0">\n\t\t<split>\n')
        preorder(ens, t, out, lists, open_, mid, lambda f, d: "\t" * (3 + d) + "</split>\n",
                 leaf)
        out.append("\t\t</split>\n\t</tree>\n")
    out.append("</ensemble>\n")
    write_atomic(path, "".join(out))
    return [path], notes

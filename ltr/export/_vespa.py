"""``vespa``: a LightGBM ``dump_model`` JSON for Vespa's ``lightgbm(...)`` rank feature.

What Vespa does (``model-integration/src/main/java/ai/vespa/rankingexpression/
importer/lightgbm/LightGBMParser.java`` of vespa-engine/vespa, 8.x): every
numerical node becomes the ranking expression ``if (f < threshold, left,
right)``, or ``if (!(f >= threshold), left, right)`` when ``default_left``;
thresholds (``Double.parseDouble``), feature values and leaves are doubles,
the trees are added in file order.

* **split rule**: ``value < threshold`` (doubles) goes left;
* **missing values**: NaN fails every comparison, so it goes left exactly when
  ``default_left`` (the ``!(f >= t)`` form);
* **precision**: doubles throughout.

How ltr maps the engines onto it: LightGBM's ``v <= t`` is written with the
next double above ``t`` (Vespa compares with ``<``); XGBoost's ``float32(v) <
t`` is written with the last double that rounds below ``t``, plus one ulp, so
both engines export exactly for double inputs.  Both engines use this one
format (Vespa's XGBoost importer would round thresholds to float32 and
compare doubles, which is not XGBoost's rule).  ``default_left`` is where NaN
must go (LightGBM missing type None: where 0 goes); zero-as-missing splits
arrive rewritten as plain splits (:mod:`ltr.export._zero`); a base score
is a first one-leaf tree.  Vespa may evaluate large forests with its float32
fast-forest optimisation; this is outside what is checked here.

Files: ``FILE`` (put it under ``models/`` of the application package) and
``FILE.rank-profile.sd`` (a rank profile using it).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np

from ltr._io import write_atomic
from ltr.export._ir import Ensemble, finite_thresholds, preorder

__all__ = ["write_vespa"]


def write_vespa(ens: Ensemble, path: Path, *, fmt: str, name: str, featureset: str,
                reference: Any = None, adjust: bool = False) -> tuple[list[Path], list[str]]:
    """Write the dump JSON and the rank-profile snippet; return (files, notes)."""
    ens.check_no_categorical(fmt)
    thr_a, notes = finite_thresholds(ens, np.nextafter(ens.bound, np.inf),
                                     float(np.finfo(np.float64).max))
    thr = thr_a.tolist()
    leaves = [repr(v) for v in ens.leaf_value.tolist()]
    thr_s = [repr(v) for v in thr]
    nan_left = ["true" if x else "false" for x in ens.nan_left.tolist()]
    feature = ens.trees.feature.tolist()
    lists = ens.lists()
    leaf_start = ens.trees.leaf_start.tolist()
    out: list[str] = []
    if ens.base != 0.0:
        out.append('{"tree_index":0,"num_leaves":1,"shrinkage":1,'
                   f'"tree_structure":{{"leaf_value":{ens.base!r}}}}}')
    for t in range(ens.n_trees):
        lstart = leaf_start[t]

        def leaf(i: int, depth: int, lstart: int = lstart) -> str:
            return f'{{"leaf_index":{i},"leaf_value":{leaves[lstart + i]}}}'

        def open_(flat: int, k: int, depth: int) -> str:
            return (f'{{"split_index":{k},"split_feature":{feature[flat]},'
                    f'"threshold":{thr_s[flat]},"decision_type":"<",'
                    f'"default_left":{nan_left[flat]},"missing_type":"NaN","left_child":')

        if out:
            out.append(",")
        n_leaves = leaf_start[t + 1] - lstart
        out.append(f'{{"tree_index":{t + int(ens.base != 0.0)},"num_leaves":{n_leaves},'
                   '"shrinkage":1,"tree_structure":')
        preorder(ens, t, out, lists, open_, lambda f, d: ',"right_child":', lambda f, d: "}",
                 leaf)
        out.append("}")
    dump = {"name": "tree", "version": "v4", "objective": "lambdarank",
            "max_feature_idx": ens.n_features - 1, "feature_names": ens.feature_names,
            "pandas_categorical": [], "tree_info": "@TREES@"}
    profile = (
        f"# ltr export of a {ens.engine} model: copy {path.name} to models/ of the application\n"
        "# package; every name in feature_names must be a rank feature (or a function) there.\n"
        f"rank-profile {name} inherits default {{\n"
        "    first-phase {\n"
        f'        expression: lightgbm("{path.name}")\n'
        "    }\n"
        "}\n"
    )
    companion = path.with_name(path.name + ".rank-profile.sd")
    head = json.dumps(dump, separators=(",", ":"))
    write_atomic(path, head.replace('"@TREES@"', "[" + "".join(out) + "]", 1))
    write_atomic(companion, profile)
    return [path, companion], notes

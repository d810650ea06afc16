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
from ltr.export._ir import Ensemble, finite_thresholds, walk

__all__ = ["write_vespa"]


def write_vespa(ens: Ensemble, path: Path, *, fmt: str, name: str, featureset: str,
                reference: Any = None, adjust: bool = False) -> tuple[list[Path], list[str]]:
    """Write the dump JSON and the rank-profile snippet; return (files, notes)."""
    ens.check_no_categorical(fmt)
    thr_a, notes = finite_thresholds(ens, np.nextafter(ens.bound, np.inf),
                                     float(np.finfo(np.float64).max))
    thr = thr_a.tolist()
    leaves = ens.leaf_value.tolist()
    nan_left = ens.nan_left.tolist()
    feature = ens.trees.feature.tolist()
    info: list[Any] = []
    if ens.base != 0.0:
        info.append({"tree_index": 0, "num_leaves": 1, "shrinkage": 1,
                     "tree_structure": {"leaf_value": ens.base}})
    for t in range(ens.n_trees):
        lstart = int(ens.trees.leaf_start[t])

        def leaf(i: int, depth: int, lstart: int = lstart) -> Any:
            return {"leaf_index": i, "leaf_value": leaves[lstart + i]}

        def split(flat: int, k: int, depth: int, a: Any, b: Any) -> Any:
            return {"split_index": k, "split_feature": feature[flat], "threshold": thr[flat],
                    "decision_type": "<", "default_left": nan_left[flat],
                    "missing_type": "NaN", "left_child": a, "right_child": b}

        n_leaves = int(ens.trees.leaf_start[t + 1] - lstart)
        info.append({"tree_index": len(info), "num_leaves": n_leaves, "shrinkage": 1,
                     "tree_structure": walk(ens, t, split, leaf)})
    dump = {"name": "tree", "version": "v4", "objective": "lambdarank",
            "max_feature_idx": ens.n_features - 1, "feature_names": ens.feature_names,
            "pandas_categorical": [], "tree_info": info}
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
    write_atomic(path, json.dumps(dump, separators=(",", ":")))
    write_atomic(companion, profile)
    return [path, companion], notes

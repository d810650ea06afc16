"""``onnx``: an ``ai.onnx.ml`` graph run by onnxruntime (extra ``ltr-rank[export]``).

Default: one ``TreeEnsemble`` node of ``ai.onnx.ml`` opset 5 (ONNX IR version
10, default-domain opset 21), input ``X`` double ``(N, n_features)``, output
``scores`` double ``(N, 1)``.

* **split rule**: ``BRANCH_LEQ`` (mode 0), ``x <= split`` goes to the true
  branch, compared in double (``nodes_splits`` is a double tensor);
* **missing values**: ``nodes_missing_value_tracks_true`` sends NaN to the true
  branch per node;
* **leaves and sum**: double ``leaf_weights``, ``aggregate_function`` SUM.

How ltr maps the engines onto it: the split is ``x <= bound`` exactly
(LightGBM: its threshold; XGBoost: the last double that rounds below its
float32 threshold, so ``float32(x) < t`` holds exactly for double inputs);
NaN's direction per node (LightGBM missing type None: where 0 goes);
LightGBM zero-as-missing splits arrive rewritten as plain splits
(:mod:`ltr.export._zero`); a base score is a first tree whose two branches share one leaf.
Categorical splits become ``BRANCH_MEMBER`` (mode 6) nodes
(``membership_values``, NaN-separated): LightGBM's set is the categories going
left (NaN and negative codes go right, as its ``CategoricalDecision``);
XGBoost's the categories going right (the member branch is then the right
child; NaN goes the default way, negative and unseen codes left, as its
``Decision``).  Exact for integer category codes (the engines truncate other
values, ONNX compares them).
Leaves stay doubles: LightGBM's scores are reproduced bit for bit when
onnxruntime sums the trees in order (one thread); XGBoost's float32 sum is
matched to about 1e-7 relative.

Fallback (``opset=3``, explicit): ``TreeEnsembleRegressor`` of ``ai.onnx.ml``
opset 3 (IR version 8), float32 input, thresholds and output: ``BRANCH_LEQ``
with ``floor_float32(bound)``, exact for float32 inputs only; no categorical
splits.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from ltr._compat import optional_import
from ltr._io import write_atomic
from ltr.export._ir import Ensemble, ExportError, floor32

__all__ = ["OPSETS", "onnx_model", "write_onnx"]

OPSETS = (5, 3)


def _onnx() -> Any:
    return optional_import("onnx", purpose="exporting to ONNX")


def _tables(ens: Ensemble) -> dict[str, Any]:
    """Flat node/leaf arrays in ONNX ``TreeEnsemble`` (opset 5) numbering, built vectorised.

    Nodes are ordered tree by tree (a base score first); a one-leaf tree (and the
    base score) is one node whose two branches share its leaf.
    """
    tr = ens.trees
    n_trees = ens.n_trees
    start = tr.start
    internal = tr.feature >= 0  # XGBoost keeps entries for its leaves
    excl = np.concatenate([[0], np.cumsum(internal)])  # internal nodes before each flat index
    per_tree = excl[start[1:]] - excl[start[:-1]]
    single = per_tree == 0
    extra = int(ens.base != 0.0)
    offset = extra + np.concatenate([[0], np.cumsum(np.where(single, 1, per_tree))])[:-1]
    total = extra + int(np.where(single, 1, per_tree).sum())
    tree_of = np.repeat(np.arange(n_trees), np.diff(start))
    flat = np.flatnonzero(internal)
    t_of = tree_of[flat]
    new = offset[t_of] + excl[flat] - excl[start[t_of]]
    leaf_base = extra + tr.leaf_start[:-1]

    feat = np.zeros(total, dtype=np.int64)
    split = np.zeros(total, dtype=np.float64)
    modes = np.zeros(total, dtype=np.uint8)
    miss = np.ones(total, dtype=np.int64)
    ids = {"true": np.zeros(total, dtype=np.int64), "false": np.zeros(total, dtype=np.int64)}
    flags = {"true": np.ones(total, dtype=np.int64), "false": np.ones(total, dtype=np.int64)}
    if extra:
        ids["true"][0] = ids["false"][0] = 0
    dummy = offset[single]
    for side in ("true", "false"):
        ids[side][dummy] = leaf_base[single]
    feat[new] = tr.feature[flat]
    split[new] = ens.bound[flat]
    miss[new] = ens.nan_left[flat]
    for side, child in (("true", tr.left[flat]), ("false", tr.right[flat])):
        is_leaf = child < 0
        c_flat = start[t_of] + np.where(is_leaf, 0, child)
        node_id = offset[t_of] + excl[c_flat] - excl[start[t_of]]
        ids[side][new] = np.where(is_leaf, leaf_base[t_of] + ~child, node_id)
        flags[side][new] = is_leaf
    members: list[float] = []
    cat_nodes = sorted(ens.categories)
    if cat_nodes:
        where = dict(zip(flat.tolist(), new.tolist()))
        order = sorted(cat_nodes, key=lambda f: where[f])
        for f in order:
            n = where[f]
            modes[n] = 6  # BRANCH_MEMBER: a member takes the true branch
            split[n] = 0.0
            members.extend(ens.categories[f].astype(np.float64).tolist() + [np.nan])
            if ens.categories_right:  # XGBoost: the set goes right, NaN the default way
                for d in (ids, flags):
                    d["true"][n], d["false"][n] = d["false"][n], d["true"][n]
                miss[n] = 1 - miss[n]
    leaves = np.concatenate([[ens.base] if extra else [], ens.leaf_value]).astype(np.float64)
    roots = ([0] if extra else []) + offset.tolist()
    return {"feat": feat.tolist(), "true_id": ids["true"].tolist(),
            "true_leaf": flags["true"].tolist(), "false_id": ids["false"].tolist(),
            "false_leaf": flags["false"].tolist(), "split": split, "miss": miss.tolist(),
            "roots": roots, "leaves": leaves, "modes": modes, "members": members}


def onnx_model(ens: Ensemble, opset: int = 5) -> Any:
    """Build the ``onnx.ModelProto`` of *ens* (see the module docstring for *opset*)."""
    onnx = _onnx()
    from onnx import TensorProto, helper, numpy_helper

    if opset not in OPSETS:
        raise ValueError(f"opset: must be 5 (TreeEnsemble) or 3 (TreeEnsembleRegressor "
                         f"fallback), got {opset!r}")
    if opset == 3:
        ens.check_no_categorical("onnx opset 3 (TreeEnsembleRegressor)")
    n = ens.n_features
    if opset == 5:
        tb = _tables(ens)
        extra: dict[str, Any] = {}
        if tb["members"]:
            extra["membership_values"] = numpy_helper.from_array(
                np.asarray(tb["members"], dtype=np.float64))
        node = helper.make_node(
            "TreeEnsemble", ["X"], ["scores"], domain="ai.onnx.ml",
            aggregate_function=1, post_transform=0, n_targets=1,
            tree_roots=tb["roots"],
            nodes_featureids=tb["feat"],
            nodes_splits=numpy_helper.from_array(tb["split"]),
            nodes_modes=numpy_helper.from_array(tb["modes"]),
            nodes_truenodeids=tb["true_id"], nodes_trueleafs=tb["true_leaf"],
            nodes_falsenodeids=tb["false_id"], nodes_falseleafs=tb["false_leaf"],
            nodes_missing_value_tracks_true=tb["miss"],
            leaf_targetids=[0] * len(tb["leaves"]),
            leaf_weights=numpy_helper.from_array(tb["leaves"]),
            **extra,
        )
        dtype, ir, opsets = TensorProto.DOUBLE, 10, [("", 21), ("ai.onnx.ml", 5)]
    else:
        node = _regressor_node(ens, helper)
        dtype, ir, opsets = TensorProto.FLOAT, 8, [("", 17), ("ai.onnx.ml", 3)]
    graph = helper.make_graph(
        [node], "ltr_ranker",
        [helper.make_tensor_value_info("X", dtype, [None, n])],
        [helper.make_tensor_value_info("scores", dtype, [None, 1])],
    )
    model = helper.make_model(
        graph, producer_name="ltr", ir_version=ir,
        opset_imports=[helper.make_opsetid(d, v) for d, v in opsets],
    )
    model.metadata_props.add(key="feature_names", value="\n".join(ens.feature_names))
    model.metadata_props.add(key="engine", value=ens.engine)
    onnx.checker.check_model(model)
    return model


def _regressor_node(ens: Ensemble, helper: Any) -> Any:
    """``TreeEnsembleRegressor`` (opset 3): float32 thresholds, one tree id per tree."""
    tr = ens.trees
    tree_ids, node_ids, feat, modes, values, t_ids, f_ids, miss = ([] for _ in range(8))
    tgt_tree, tgt_node, tgt_w = [], [], []
    trees = ([("base", None)] if ens.base != 0.0 else []) + [("t", t) for t in range(ens.n_trees)]
    for tid, (_, t) in enumerate(trees):
        if t is None or ens.is_single_leaf(t):
            value = ens.base if t is None else float(ens.leaves(t)[0])
            tree_ids.append(tid)
            node_ids.append(0)
            feat.append(0)
            modes.append("LEAF")
            values.append(0.0)
            t_ids.append(0)
            f_ids.append(0)
            miss.append(0)
            tgt_tree.append(tid)
            tgt_node.append(0)
            tgt_w.append(value)
            continue
        s, e = int(tr.start[t]), int(tr.start[t + 1])
        internal = np.flatnonzero(tr.feature[s:e] >= 0)
        n_int = int(e - s)
        thr = floor32(ens.bound[s:e])
        lv = ens.leaves(t)
        for k in internal:
            f = s + int(k)
            tree_ids.append(tid)
            node_ids.append(int(k))
            feat.append(int(tr.feature[f]))
            modes.append("BRANCH_LEQ")
            values.append(float(thr[k]))
            t_ids.append(int(tr.left[f]) if tr.left[f] >= 0 else n_int + int(~tr.left[f]))
            f_ids.append(int(tr.right[f]) if tr.right[f] >= 0 else n_int + int(~tr.right[f]))
            miss.append(int(ens.nan_left[f]))
        for i, v in enumerate(lv.tolist()):
            tree_ids.append(tid)
            node_ids.append(n_int + i)
            feat.append(0)
            modes.append("LEAF")
            values.append(0.0)
            t_ids.append(0)
            f_ids.append(0)
            miss.append(0)
            tgt_tree.append(tid)
            tgt_node.append(n_int + i)
            tgt_w.append(v)
    return helper.make_node(
        "TreeEnsembleRegressor", ["X"], ["scores"], domain="ai.onnx.ml",
        aggregate_function="SUM", post_transform="NONE", n_targets=1,
        nodes_treeids=tree_ids, nodes_nodeids=node_ids, nodes_featureids=feat,
        nodes_modes=modes, nodes_values=values, nodes_truenodeids=t_ids,
        nodes_falsenodeids=f_ids, nodes_missing_value_tracks_true=miss,
        target_treeids=tgt_tree, target_nodeids=tgt_node, target_ids=[0] * len(tgt_w),
        target_weights=tgt_w,
    )


def write_onnx(ens: Ensemble, path: Path, *, fmt: str, name: str, featureset: str,
               reference: Any = None, adjust: bool = False,
               opset: int = 5) -> tuple[list[Path], list[str]]:
    """Write the ONNX model; return (files, notes)."""
    if opset == 3 and (reference is not None or adjust):
        raise ExportError("onnx opset 3 fallback: adjust_thresholds/reference are not supported")
    model = onnx_model(ens, opset)
    write_atomic(path, model.SerializeToString())
    return [path], []

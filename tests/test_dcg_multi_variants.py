"""The several-cut-off nDCG kernel's variants: same values, and only the needed one compiles.

:func:`ltr.kernels._dcg_multi.dcg_idcg_multi` picks one compiled kernel per way
of ordering queries (``ORDER_ANY``: every tie rule and length; ``ORDER_SHORT``:
queries of at most ``RUN`` rows with ties in row order; ``ORDER_RANKED``: the
same ranked whole, ideal lists too, for small inputs) and per averaged or
plain ties.  Every
variant is run here on the same queries and compared with a plain Python sort
(and bitwise with the general variant), and a fresh process with an empty
numba cache checks that a small fit and ``ndcg`` compile exactly the small
input's kernel and its callees, one signature each (no timing).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from ltr.kernels import _dcg as K
from ltr.kernels import _dcg_multi as M
from ltr.kernels._cache import frozen
from ltr.kernels._ranksort import RUN

REPO = Path(__file__).resolve().parents[1]
KS = np.array([1, 3, 10, 17, 33, 0], dtype=np.int64)  # 0: the whole query


def _queries(seed: int, integer_labels: bool) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    sizes = np.concatenate([[1, 2, 16, 17, 48, 49, RUN], rng.integers(1, RUN + 1, 60)])
    offsets = np.concatenate([[0], np.cumsum(sizes)]).astype(np.int64)
    n = int(offsets[-1])
    labels = rng.integers(0, 5, n).astype(np.float64)
    if not integer_labels:
        labels += 0.5  # no label histogram: the ideal list is ordered like the scores
    scores = np.round(rng.normal(size=n), 1)  # many ties
    return labels, scores, offsets


def _run(kernel, labels, scores, offsets, tie_mode, label_gain):
    n_q = offsets.size - 1
    out = np.zeros((n_q, KS.size)), np.zeros((n_q, KS.size))
    discount = 1.0 / np.log2(np.arange(2, RUN + 2))
    empty = np.empty(0)
    bufs = K._block_buffers_np(offsets, 0, label_gain.size)
    # read-only inputs, as the wrapper (dcg_idcg_multi) passes them: one compiled version
    labels, scores, empty = frozen(labels), frozen(scores), frozen(empty)
    kernel(0, 1, labels, scores, empty, K.GAIN_LINEAR, empty, tie_mode, empty, 0, label_gain,
           discount, offsets, KS, 0, *out, True, True, *bufs)
    return out


def _naive(labels, scores, offsets):
    discount = 1.0 / np.log2(np.arange(2, RUN + 2))
    dcg = np.zeros((offsets.size - 1, KS.size))
    idcg = np.zeros_like(dcg)
    for q in range(offsets.size - 1):
        rows = range(offsets[q], offsets[q + 1])
        ranked = [labels[i] for i in sorted(rows, key=lambda i: (-scores[i], i))]
        ideal = sorted((labels[i] for i in rows), reverse=True)
        for j, k in enumerate(KS):
            m = len(ranked) if k == 0 else min(k, len(ranked))
            dcg[q, j] = sum(g * d for g, d in zip(ranked[:m], discount))
            idcg[q, j] = sum(g * d for g, d in zip(ideal[:m], discount))
    return dcg, idcg


@pytest.mark.parametrize("order", [M.ORDER_ANY, M.ORDER_SHORT, M.ORDER_RANKED])
@pytest.mark.parametrize("integer_labels", [True, False])
def test_every_ordering_gives_the_values_of_a_plain_sort(order, integer_labels):
    labels, scores, offsets = _queries(order, integer_labels)
    label_gain = np.arange(5.0) if integer_labels else np.empty(0)
    kernel = M._KERNELS[order, False][0]
    dcg, idcg = _run(kernel, labels, scores, offsets, K.TIES_STABLE, label_gain)
    want_dcg, want_idcg = _naive(labels, scores, offsets)
    np.testing.assert_allclose(dcg, want_dcg, rtol=1e-13, atol=0)
    np.testing.assert_allclose(idcg, want_idcg, rtol=1e-13, atol=0)
    # and bitwise the general kernel's (sums in rank order, whatever found the order)
    general = _run(M._multi_block, labels, scores, offsets, K.TIES_STABLE, label_gain)
    assert np.array_equal(dcg, general[0]) and np.array_equal(idcg, general[1])


@pytest.mark.parametrize("order", [M.ORDER_SHORT, M.ORDER_RANKED])
def test_averaged_ties_are_the_general_kernels(order):
    labels, scores, offsets = _queries(7, True)
    label_gain = np.arange(5.0)
    got = _run(M._KERNELS[order, True][0], labels, scores, offsets, K.TIES_AVERAGE, label_gain)
    want = _run(M._multi_block_average, labels, scores, offsets, K.TIES_AVERAGE, label_gain)
    assert np.array_equal(got[0], want[0]) and np.array_equal(got[1], want[1])
    # averaging changes the value of tied groups cut by k (else this compared nothing)
    plain = _run(M._multi_block, labels, scores, offsets, K.TIES_STABLE, label_gain)
    assert not np.array_equal(got[0], plain[0])


def test_the_wrapper_picks_the_variant_by_tie_rule_length_and_size():
    short = np.array([0, 3, 3 + RUN], dtype=np.int64)
    long = np.array([0, RUN + 1], dtype=np.int64)
    small, mid, big = M.SELECT_MIN_ROWS - 1, M.SELECT_MIN_ROWS, M.PARALLEL_MIN_ROWS
    assert M.multi_kernel(K.TIES_STABLE, short, small) == (M._multi_block_ranked, False)
    assert M.multi_kernel(K.TIES_AVERAGE, short, small) == (M._multi_block_ranked_average, False)
    assert M.multi_kernel(K.TIES_STABLE, short, mid) == (M._multi_block_short, False)
    assert M.multi_kernel(K.TIES_STABLE, short, big) == (M._multi_parallel_short, True)
    assert M.multi_kernel(K.TIES_STABLE, long, small) == (M._multi_block, False)
    assert M.multi_kernel(K.TIES_KEY_DESC, short, small) == (M._multi_block, False)
    assert M.multi_kernel(K.TIES_AVERAGE, long, big) == (M._multi_parallel_average, True)


_PROBE = r"""
import importlib, json, pkgutil
import numpy as np
from numba.core.registry import CPUDispatcher
import ltr.kernels
from ltr import LambdaMARTRanker
from ltr.metrics import ndcg

rng = np.random.default_rng(0)
qid = np.repeat(np.arange(40), rng.integers(5, 60, 40))
X = rng.normal(size=(qid.size, 5))
y = rng.integers(0, 4, qid.size).astype(float)
model = LambdaMARTRanker(n_estimators=5, num_leaves=7, n_jobs=1, random_state=0)
scores = model.fit(X, y, qid=qid).predict(X)
ndcg(y, scores, qid=qid, k=[1, 5, 10], convention="lightgbm")
ndcg(y, scores, qid=qid, k=10, convention="lightgbm")  # one k: the same kernel
signatures = {}
for info in pkgutil.iter_modules(ltr.kernels.__path__):
    module = importlib.import_module(f"ltr.kernels.{info.name}")
    for obj in vars(module).values():
        if isinstance(obj, CPUDispatcher) and obj.signatures:
            signatures[obj.py_func.__qualname__] = [str(s) for s in obj.signatures]
print("PROBE " + json.dumps(signatures))
"""

#: What a small fit and nDCG compile on an empty cache: the small input's kernel and
#: its callees, and no selection, sort, label histogram, tie-rule or threaded code.
SMALL_INPUT_KERNELS = {"_multi_block_ranked", "_rank_whole", "_gain", "ideal_order_key"}


# slow: among the costliest default tests (issue 25: default run <= 4 min); CI runs it (-m slow)
@pytest.mark.slow
def test_a_small_fit_and_ndcg_compile_one_kernel_and_its_callees_once(tmp_path):
    env = dict(os.environ, NUMBA_CACHE_DIR=str(tmp_path / "cache"), PYTHONPATH=os.pathsep.join(
        [str(REPO), os.environ.get("PYTHONPATH", "")]))
    proc = subprocess.run([sys.executable, "-c", _PROBE], env=env, cwd=tmp_path,
                          capture_output=True, text=True, timeout=600, check=False)
    assert proc.returncode == 0, proc.stderr[-3000:]
    line = next(ln for ln in proc.stdout.splitlines() if ln.startswith("PROBE "))
    signatures = json.loads(line[len("PROBE "):])
    assert set(signatures) == SMALL_INPUT_KERNELS
    assert {n: len(s) for n, s in signatures.items() if len(s) != 1} == {}
    (block,) = signatures["_multi_block_ranked"]
    # arrays as the wrapper casts them (contiguous float64 / int64), modes not literals
    assert "Literal" not in block and "float32" not in block and ", A)" not in block

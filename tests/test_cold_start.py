"""The quick start compiles each of its kernels once: one signature per numba dispatcher.

A cold start (empty numba cache) pays for every specialisation of every kernel
it calls; a second signature of a kernel (a literal argument, a float32 or
non-contiguous array that a wrapper passed through) doubles that kernel's
compilation.  This runs a small quick start (the same config, smaller data) in
a fresh process and checks which kernels Python entered and that every ltr
dispatcher holds at most one signature, whether they were compiled or loaded
from the cache.  No timing: ``experiments/cold_start_compile.py`` measures.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

REPO = Path(__file__).resolve().parents[1]

#: The kernels the quick start calls from Python: nDCG at several cut-offs (its permutation
#: importance is a small job, which the engine predicts in full) ...
QUICKSTART_KERNELS = {"ltr.kernels._dcg_multi._multi_block_ranked"}
#: ... and, on data past the small-job threshold, the exact tree rescoring of permutation
#: importance (codes, cached leaves and code ranges, leaf sums, the rows' headroom, one column's
#: path tables, the query cuts and rescoring).
RESCORING_KERNELS = {
    "ltr.kernels._tree_predict._code_rows",
    "ltr.kernels._tree_predict._leaf_sums",
    "ltr.kernels._tree_rescore._code_leaves_ranges",
    "ltr.kernels._tree_rescore._column_paths",
    "ltr.kernels._tree_rescore._headroom",
    "ltr.kernels._tree_rescore._kth_floor",
    "ltr.kernels._tree_rescore._rescore_column",
}

_PROBE = r"""
import importlib, json, pkgutil, sys, tempfile
from numba.core import dispatcher
from numba.core.registry import CPUDispatcher

entered = set()
_compile_for_args = dispatcher.Dispatcher._compile_for_args


def _record(self, *args, **kws):  # runs for calls from Python the dispatcher has not seen
    entered.add(f"{self.py_func.__module__}.{self.py_func.__qualname__}")
    return _compile_for_args(self, *args, **kws)


dispatcher.Dispatcher._compile_for_args = _record
from ltr.cli import main
from ltr.inspection import _permutation

if sys.argv[2] == "rescoring":  # the quick start's importance as a larger job would run it
    _permutation._SMALL_WORK = 0

with tempfile.TemporaryDirectory() as tmp:
    assert main(["train", sys.argv[1], "--out", tmp + "/run", "--no-progress"]) == 0
import ltr.kernels

signatures = {}
for info in pkgutil.iter_modules(ltr.kernels.__path__):
    module = importlib.import_module(f"ltr.kernels.{info.name}")
    for obj in vars(module).values():
        if isinstance(obj, CPUDispatcher) and obj.signatures:
            name = f"{obj.py_func.__module__}.{obj.py_func.__qualname__}"
            signatures[name] = [str(s) for s in obj.signatures]
print("PROBE " + json.dumps({"entered": sorted(entered), "signatures": signatures}))
"""


def _small_quickstart(tmp_path: Path) -> Path:
    config = yaml.safe_load((REPO / "configs" / "quickstart.yaml").read_text())
    config["data"]["synthetic"].update(n_queries=60, mean_docs=20, max_docs=60)
    config["model"]["schedule"]["steps"] = [{"k": 5, "rounds": 3}, {"k": 10, "rounds": 3}]
    config["importance"]["n_repeats"] = 2
    path = tmp_path / "quick.yaml"
    path.write_text(yaml.safe_dump(config))
    return path


# slow: among the costliest default tests (issue 25: default run <= 4 min); CI runs it (-m slow)
@pytest.mark.slow
@pytest.mark.parametrize("importance", ["small", "rescoring"])
def test_quickstart_compiles_one_signature_per_kernel(tmp_path, importance):
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(
        [str(REPO), os.environ.get("PYTHONPATH", "")]))
    proc = subprocess.run([sys.executable, "-c", _PROBE, str(_small_quickstart(tmp_path)),
                           importance],
                          env=env, cwd=tmp_path, capture_output=True, text=True, timeout=600,
                          check=False)
    assert proc.returncode == 0, proc.stderr[-3000:]
    line = next(ln for ln in proc.stdout.splitlines() if ln.startswith("PROBE "))
    found = json.loads(line[len("PROBE "):])
    # the kernels called from Python are the quick start's, and nothing else compiles
    expected = QUICKSTART_KERNELS | (RESCORING_KERNELS if importance == "rescoring" else set())
    assert {n for n in found["entered"] if n.startswith("ltr.")} == expected
    # one specialisation each, callees included (they hold signatures on a cold cache)
    several = {n: s for n, s in found["signatures"].items() if len(s) != 1}
    assert several == {}
    assert expected <= set(found["signatures"])

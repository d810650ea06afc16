"""Which numba kernels the quick start compiles, how many specialisations, and their cost.

Runs ``ltr train configs/quickstart.yaml`` in a fresh process with an empty
numba cache (``NUMBA_CACHE_DIR`` set to a new folder), then again warm (same
folder), each with a listener on numba's ``numba:compile`` events and timers
around the on-disk cache's loads and saves.  For every dispatcher that
compiled it reports the number of specialisations (signatures), the
compilation's CPU seconds (self: excluding the callees compiled inside it;
inclusive: with them), whether it was a top-level call (from Python) and the
signatures themselves; for the warm run, any compilation (a cache miss: the
cache would be useless for that kernel) and the time spent loading the cache.
Last, the first ``ndcg`` call of each variant of the several-cut-off kernel
(:func:`ltr.kernels._dcg_multi.multi_kernel`) on a fresh cache: what the quick
start's variant compiles next to the others.

Usage::

    python experiments/cold_start_compile.py [--repeats 2] [--no-write]

CPU times of compilations are steadier than wall times on a shared machine;
both are listed, with the load average.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
CONFIG = REPO / "configs" / "quickstart.yaml"
OUT = REPO / "experiments" / "results" / "cold_start_compile.md"

PROBE = r"""
import json, sys, tempfile, time
from numba.core import caching, event

stack, records, io = [], [], {"load": [0, 0.0], "save": [0, 0.0]}


def _name(disp):
    return f"{disp.py_func.__module__}.{disp.py_func.__qualname__}"


class Timer(event.Listener):
    def on_start(self, e):
        stack.append([time.perf_counter(), time.process_time(), 0.0, _name(e.data["dispatcher"])])

    def on_end(self, e):
        w0, c0, child, _ = stack.pop()
        cpu = time.process_time() - c0
        if stack:
            stack[-1][2] += cpu
        disp = e.data["dispatcher"]
        records.append({"name": _name(disp), "sig": ", ".join(map(str, e.data["args"])),
                        "wall": time.perf_counter() - w0, "cpu": cpu, "self": cpu - child,
                        "top": not stack, "root": stack[0][3] if stack else None,
                        "parallel": bool(disp.targetoptions.get("parallel"))})


def _timed(kind, f):
    def wrapper(*a, **k):
        t = time.perf_counter()
        try:
            return f(*a, **k)
        finally:
            io[kind][0] += 1
            io[kind][1] += time.perf_counter() - t
    return wrapper


caching.Cache.load_overload = _timed("load", caching.Cache.load_overload)
caching.Cache.save_overload = _timed("save", caching.Cache.save_overload)
event.register("numba:compile", Timer())
t0 = time.perf_counter()
c0 = time.process_time()
from ltr.cli import main

with tempfile.TemporaryDirectory() as tmp:
    main(["train", sys.argv[1], "--out", tmp + "/run", "--no-progress"])
print("PROBE " + json.dumps({"wall": time.perf_counter() - t0, "cpu": time.process_time() - c0,
                             "records": records, "io": io}))
"""


# The first nDCG call of each kernel variant (ltr.kernels._dcg_multi.multi_kernel), compiled
# alone on a fresh cache: the quick start's (a small input, stable ties) and the others.
VARIANT = r"""
import os, sys, tempfile, time
os.environ["NUMBA_CACHE_DIR"] = tempfile.mkdtemp()
import numpy as np
from ltr.metrics import ndcg

n_q, lo, hi, convention = int(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3]), sys.argv[4]
rng = np.random.default_rng(0)
qid = np.repeat(np.arange(n_q), rng.integers(lo, hi, n_q))
y = rng.integers(0, 5, qid.size).astype(float)
doc_ids = np.arange(qid.size) if convention == "trec_eval" else None
c = time.process_time()
ndcg(y, rng.normal(size=qid.size), qid=qid, k=[1, 3, 5, 10, 20], convention=convention,
     **({"doc_ids": doc_ids} if doc_ids is not None else {}))
print(f"VARIANT {time.process_time() - c:.3f}")
"""
VARIANTS = (
    ("small input, stable ties (the quick start's): ranked whole", "300 5 100 lightgbm"),
    ("small input, averaged ties: ranked whole, averaged", "300 5 100 sklearn"),
    ("20,000+ rows, stable ties: threshold selection", "600 5 100 lightgbm"),
    ("queries over 128 rows: every path of the general kernel", "100 5 300 lightgbm"),
)


def variants(repeats: int) -> list[tuple[str, float]]:
    """Best-of-``repeats`` CPU of the first ``ndcg`` call (fresh cache) per variant, interleaved."""
    env = dict(os.environ)
    env["PYTHONPATH"] = env.get("PYTHONPATH") or str(REPO)
    best = {label: float("inf") for label, _ in VARIANTS}
    for _ in range(repeats):
        for label, argv in VARIANTS:
            out = subprocess.run([sys.executable, "-c", VARIANT, *argv.split()], env=env,
                                 cwd=tempfile.gettempdir(), capture_output=True, text=True,
                                 check=True).stdout
            line = next(ln for ln in out.splitlines() if ln.startswith("VARIANT "))
            best[label] = min(best[label], float(line.split()[1]))
    return list(best.items())


def probe(cache_dir: str) -> dict:
    env = dict(os.environ, NUMBA_CACHE_DIR=cache_dir)
    env["PYTHONPATH"] = env.get("PYTHONPATH") or str(REPO)
    out = subprocess.run([sys.executable, "-c", PROBE, str(CONFIG)], env=env, cwd=tempfile.gettempdir(),
                         capture_output=True, text=True, check=True).stdout
    line = next(ln for ln in out.splitlines() if ln.startswith("PROBE "))
    return json.loads(line[len("PROBE "):])


def table(records: list[dict]) -> list[str]:
    by: dict[str, dict] = {}
    for r in records:
        d = by.setdefault(r["name"], {"sigs": [], "cpu": 0.0, "self": 0.0, "wall": 0.0,
                                      "top": False, "parallel": r["parallel"], "roots": set()})
        d["sigs"].append(r["sig"])
        if r["root"]:
            d["roots"].add(r["root"].rsplit(".", 1)[-1])
        d["self"] += r["self"]
        d["top"] |= r["top"]
        if r["top"]:
            d["cpu"] += r["cpu"]
            d["wall"] += r["wall"]
    rows = ["| kernel | specialisations | self CPU s | top-level CPU s (wall s) | called from |",
            "|---|---:|---:|---:|---|"]
    for name, d in sorted(by.items(), key=lambda kv: -kv[1]["self"]):
        top = f"{d['cpu']:.2f} ({d['wall']:.2f})" if d["top"] else "-"
        kind = ", ".join(["Python"] * d["top"] + [f"`{n}`" for n in sorted(d["roots"])])
        par = " (parallel=True)" if d["parallel"] else ""
        rows.append(f"| `{name}`{par} | {len(d['sigs'])} | {d['self']:.2f} | {top} | {kind} |")
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=OUT)
    parser.add_argument("--no-write", action="store_true")
    parser.add_argument("--repeats", type=int, default=2,
                        help="runs per nDCG kernel variant (best of)")
    args = parser.parse_args()
    load0 = os.getloadavg()[0]
    with tempfile.TemporaryDirectory() as cache:
        cold = probe(cache)
        warm = probe(cache)
    variant_cpu = variants(args.repeats)
    load1 = os.getloadavg()[0]
    recs = cold["records"]
    top_cpu = sum(r["cpu"] for r in recs if r["top"])
    top_wall = sum(r["wall"] for r in recs if r["top"])
    lines = [
        "# Kernels compiled by the quick start with an empty numba cache",
        "",
        (f"`python experiments/cold_start_compile.py` ({time.strftime('%Y-%m-%d %H:%M')} UTC, "
         f"load average {load0:.1f} at start, {load1:.1f} at the end, {os.cpu_count()} cores)."),
        "",
        (f"Cold run, in process: {cold['wall']:.2f} s wall, {cold['cpu']:.2f} s CPU; compiling "
         f"{top_wall:.2f} s wall, {top_cpu:.2f} s CPU ({len(recs)} compilations of "
         f"{len({r['name'] for r in recs})} dispatchers); cache: {cold['io']['save'][0]} saves "
         f"in {cold['io']['save'][1]:.2f} s."),
        "",
        (f"Warm run, in process: {warm['wall']:.2f} s wall, {warm['cpu']:.2f} s CPU; "
         f"{len(warm['records'])} compilations (cache misses); cache: {warm['io']['load'][0]} "
         f"loads in {warm['io']['load'][1]:.2f} s."),
        "",
        "Self CPU excludes the callees compiled inside a kernel (each has its own row);",
        "top-level CPU is the whole compilation triggered by a call from Python.",
        "",
        *table(recs),
        "",
        "## Signatures",
        "",
    ]
    for r in recs:
        lines.append(f"- `{r['name'].rsplit('.', 1)[-1]}({r['sig']})`: {r['self']:.2f} s self")
    lines += ["", "## The nDCG kernel variants", "",
              "`dcg_idcg_multi` picks one compiled kernel per way of ordering queries, so a call",
              "compiles only the paths it can take. CPU of the first `ndcg` call (k = 1, 3, 5, 10,",
              f"20), fresh cache, best of {args.repeats}, interleaved (queries of 5-100 rows unless",
              "stated):", "", "| variant | first call CPU s |", "|---|---:|",
              *(f"| {label} | {cpu:.2f} |" for label, cpu in variant_cpu)]
    if warm["records"]:
        lines += ["", "## Compiled again in the warm run (cache misses)", "", *table(warm["records"])]
    text = "\n".join(lines) + "\n"
    print(text)
    if not args.no_write:
        args.out.write_text(text)


if __name__ == "__main__":
    main()

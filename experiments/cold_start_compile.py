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
Last, the dcg kernel compiled alone with its rare paths (merge sort, tie-key
ranks, averaged ties, none of which the quick start takes) replaced by stubs:
what compiling those paths only when a call needs them would save.

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


# The dcg kernel of the quick start compiled alone, with its rare paths (never taken by the
# quick start: k <= 20, stable ties) replaced by stubs: what compiling them lazily would save.
RARE = r"""
import os, sys, tempfile, time
os.environ["NUMBA_CACHE_DIR"] = tempfile.mkdtemp()
import numpy as np
from numba import njit
import ltr.kernels._dcg as D, ltr.kernels._dcg_multi as M, ltr.kernels._ranksort as R
from ltr.metrics import ndcg

stub = sys.argv[1].split(",")
if "sort" in stub:  # the merge sort of selections of more than 48 rows
    D._sort_rows = njit(lambda p, l, g, gm, tk, tm, s, e, m, bi, bt, sf: None)
if "tied" in stub:  # rank counting with a tie key (trec_eval, pessimistic, optimistic ties)
    R.rank_tied = njit(lambda ps, tv, rank: None)
if "average" in stub:  # McSherry-Najork averaged ties
    M._average_ties_dcg = njit(lambda l, s, g, gm, d, st, e, m, bi: 0.0)
rng = np.random.default_rng(0)
qid = np.repeat(np.arange(300), rng.integers(5, 100, 300))
y = rng.integers(0, 5, qid.size).astype(float)
c = time.process_time()
ndcg(y, rng.normal(size=qid.size), qid=qid, k=[1, 3, 5, 10, 20])
print(f"RARE {time.process_time() - c:.3f}")
"""
RARE_VARIANTS = (("as is", ""), ("without the merge sort", "sort"),
                 ("without the merge sort, tie-key ranks, averaged ties", "sort,tied,average"))


def rare_paths(repeats: int) -> list[tuple[str, float]]:
    """Best-of-``repeats`` compile CPU of the dcg kernel per variant, interleaved."""
    env = dict(os.environ)
    env["PYTHONPATH"] = env.get("PYTHONPATH") or str(REPO)
    best = {label: float("inf") for label, _ in RARE_VARIANTS}
    for _ in range(repeats):
        for label, stub in RARE_VARIANTS:
            out = subprocess.run([sys.executable, "-c", RARE, stub], env=env, cwd=tempfile.gettempdir(),
                                 capture_output=True, text=True, check=True).stdout
            cpu = float(next(ln for ln in out.splitlines() if ln.startswith("RARE ")).split()[1])
            best[label] = min(best[label], cpu)
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
                        help="runs per variant of the rare-path study (best of)")
    args = parser.parse_args()
    load0 = os.getloadavg()[0]
    with tempfile.TemporaryDirectory() as cache:
        cold = probe(cache)
        warm = probe(cache)
    rare = rare_paths(args.repeats)
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
    lines += ["", "## The dcg kernel without its rare paths (a study: stubs, wrong values)", "",
              "The quick start's nDCG (k = 1, 3, 5, 10, 20; stable ties) never takes these paths,",
              "but they are compiled with it. Compile CPU of the first `ndcg` call on 300 queries",
              f"of 5-100 rows, fresh cache, best of {args.repeats}, interleaved:", "",
              "| dcg kernel | compile CPU s |", "|---|---:|",
              *(f"| {label} | {cpu:.2f} |" for label, cpu in rare)]
    if warm["records"]:
        lines += ["", "## Compiled again in the warm run (cache misses)", "", *table(warm["records"])]
    text = "\n".join(lines) + "\n"
    print(text)
    if not args.no_write:
        args.out.write_text(text)


if __name__ == "__main__":
    main()

"""Cold start of the quick start: imports, kernel compilation, cold and warm runs.

Measures, each in fresh processes:

1. ``python -X importtime -c "import ltr"`` and the same for ``ltr.cli``
   (cumulative microseconds of the package, and its heaviest imports);
2. each CLI command's start-up: wall time of ``python -m ltr COMMAND --help``
   (imports and parser; the commands import their heavy modules when they run);
3. ``ltr train configs/quickstart.yaml`` cold (an empty numba cache:
   ``NUMBA_CACHE_DIR`` set to a fresh directory, as on a fresh clone, where
   numba caches next to the modules) and warm (the same cache directory again),
   interleaved: cold, warm, cold, warm ...;
4. the kernels compiled during a cold quick start, in process, with the
   wall-clock and CPU time of each top-level compilation (numba's
   ``numba:compile`` events; nested compilations are counted in their caller).

Usage::

    python experiments/bench_cold_start.py [--repeats 3] [--skip-commands]

Wall-clock times swing with the machine's load (reported); CPU times of the
compilations are steadier.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from _perf import result

REPO = Path(__file__).resolve().parents[1]
CONFIG = REPO / "configs" / "quickstart.yaml"
COMMANDS = ["train", "evaluate", "predict", "importance", "tune", "compare", "monitor", "report",
            "validate"]

COMPILES = r"""
import sys, tempfile, time
from numba.core import event

stack, records = [], []


class Timer(event.Listener):
    def on_start(self, e):
        stack.append((time.perf_counter(), time.process_time()))

    def on_end(self, e):
        w0, c0 = stack.pop()
        disp = e.data.get("dispatcher")
        name = f"{disp.py_func.__module__}.{disp.py_func.__qualname__}"
        if not stack:
            records.append((time.perf_counter() - w0, time.process_time() - c0, name))


event.register("numba:compile", Timer())
t0 = time.perf_counter()
from ltr.cli import main

with tempfile.TemporaryDirectory() as tmp:
    main(["train", sys.argv[1], "--out", tmp + "/run", "--no-progress"])
total = time.perf_counter() - t0
print(f"TOTAL {total:.2f} {sum(r[0] for r in records):.2f} {sum(r[1] for r in records):.2f}")
for wall, cpu, name in sorted(records, reverse=True):
    print(f"COMPILE {wall:.2f} {cpu:.2f} {name}")
"""


def env(cache_dir: str | None = None) -> dict[str, str]:
    e = dict(os.environ)
    # the ltr under test: PYTHONPATH when set (run_performance.py sets it per tree), else this one
    e["PYTHONPATH"] = e.get("PYTHONPATH") or str(REPO)
    if cache_dir is not None:
        e["NUMBA_CACHE_DIR"] = cache_dir
    return e


def run(args: list[str], cache_dir: str | None = None) -> tuple[float, str]:
    t = time.perf_counter()
    # not cwd=REPO: `python -m` / `-c` put the working directory first on sys.path, and this
    # tree's ltr would shadow the one PYTHONPATH names (run_performance.py's --before tree)
    with tempfile.TemporaryDirectory() as cwd:
        out = subprocess.run(args, env=env(cache_dir), cwd=cwd, capture_output=True, text=True,
                             check=True)
    return time.perf_counter() - t, out.stdout + out.stderr


def importtime(module: str) -> tuple[float, list[tuple[float, str]]]:
    _, text = run([sys.executable, "-X", "importtime", "-c", f"import {module}"])
    rows = []
    for line in text.splitlines():
        if not line.startswith("import time:") or "cumulative" in line:
            continue
        _, cum_us, name = line.split(":", 1)[1].split("|")
        rows.append((int(cum_us) / 1e6, name[1:]))  # name keeps its indentation (depth)
    end = max(i for i, (_, n) in enumerate(rows) if n == module)  # printed after its imports
    start = end
    while start > 0 and rows[start - 1][1].startswith(" "):
        start -= 1
    heavy = sorted(((c, n.strip()) for c, n in rows[start:end]
                    if n.startswith("  ") and not n.startswith("   ")), reverse=True)[:6]
    return rows[end][0], heavy


def quickstart(cache_dir: str) -> float:
    with tempfile.TemporaryDirectory() as tmp:
        t, _ = run([sys.executable, "-m", "ltr", "train", str(CONFIG), "--out",
                    str(Path(tmp) / "run"), "--no-progress"], cache_dir)
    return t


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--skip-commands", action="store_true")
    args = parser.parse_args()
    print(f"load average at start: {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores\n")

    print("## imports (python -X importtime, cumulative)\n")
    print("| module | seconds | heaviest direct imports |\n|---|---:|---|")
    for module in ("ltr", "ltr.cli"):
        total, heavy = importtime(module)
        print(f"| `import {module}` | {total:.3f} | "
              + ", ".join(f"{n} {c:.3f}" for c, n in heavy) + " |")

    if not args.skip_commands:
        base = statistics.median(run([sys.executable, "-c", "pass"])[0] for _ in range(3))
        print(f"\n## CLI start-up: `python -m ltr COMMAND --help`, median of 3 "
              f"(bare interpreter {base:.3f} s)\n")
        print("| command | wall s |\n|---|---:|")
        for cmd in COMMANDS:
            t = statistics.median(run([sys.executable, "-m", "ltr", cmd, "--help"])[0]
                                  for _ in range(3))
            print(f"| {cmd} | {t:.3f} |")

    print(f"\n## `ltr train configs/quickstart.yaml`, {args.repeats} interleaved cold/warm pairs\n")
    cold, warm = [], []
    for _ in range(args.repeats):
        with tempfile.TemporaryDirectory() as cache:
            cold.append(quickstart(cache))
            warm.append(quickstart(cache))
    print("| run | median wall s | all runs |\n|---|---:|---|")
    print(f"| cold (empty numba cache) | {statistics.median(cold):.2f} | "
          + ", ".join(f"{t:.2f}" for t in cold) + " |")
    print(f"| warm (cache from the cold run) | {statistics.median(warm):.2f} | "
          + ", ".join(f"{t:.2f}" for t in warm) + " |")
    result("cold_start_s", statistics.median(cold), "s")
    result("warm_start_s", statistics.median(warm), "s")
    result("cold_over_warm", statistics.median(cold) / statistics.median(warm))

    with tempfile.TemporaryDirectory() as cache:
        _, text = run([sys.executable, "-c", COMPILES, str(CONFIG)], cache)
    lines = [ln.split(" ", 3) for ln in text.splitlines() if ln.startswith(("TOTAL", "COMPILE"))]
    total = next(ln for ln in lines if ln[0] == "TOTAL")
    print(f"\n## kernels compiled during a cold quick start (in process: {float(total[1]):.2f} s "
          f"wall, of which compiling {float(total[2]):.2f} s wall, {float(total[3]):.2f} s CPU)\n")
    print("| kernel (top-level dispatcher) | wall s | CPU s |\n|---|---:|---:|")
    for ln in lines:
        if ln[0] == "COMPILE":
            print(f"| `{ln[3]}` | {float(ln[1]):.2f} | {float(ln[2]):.2f} |")
    print(f"\nload average at the end: {os.getloadavg()[0]:.1f}")


if __name__ == "__main__":
    main()

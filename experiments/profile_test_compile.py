"""Where the default test run's cold-cache time goes: numba compilations per kernel.

Runs the default test run (``python -m pytest -q``) in this process with an
empty ``NUMBA_CACHE_DIR`` and a listener on numba's ``numba:compile`` events,
then writes ``results/test_suite_compile.md``: the CPU seconds spent compiling
each dispatcher (self time: callees compiled inside a kernel have their own
rows), its number of signatures, and the test files that first called them.
This is the evidence behind the "default test run, empty numba cache" row of
``bench_test_suite.py`` (issue 25): cold minus warm is compilation.

Writes the raw records to ``results/test_suite_compile.json`` too;
``--from-json HEADER`` rebuilds the table from that file with HEADER as its
first line.

Usage::

    python experiments/profile_test_compile.py            # whole default run (~10 min quiet)
    python experiments/profile_test_compile.py tests/test_metrics.py   # a subset
"""

from __future__ import annotations

import collections
import json
import os
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).parent


def main(argv: list[str]) -> int:
    if argv[:1] == ["--from-json"]:
        records = json.loads((HERE / "results" / "test_suite_compile.json").read_text())
        write_report(records, " ".join(argv[1:]))
        return 0
    os.environ["NUMBA_CACHE_DIR"] = tempfile.mkdtemp(prefix="ltr-cold-")  # before numba loads
    import pytest
    from _perf import load_average
    from numba.core import event

    stack: list[list[float]] = []
    records: list[dict] = []
    current = {"test": "?"}

    class Timer(event.Listener):
        def on_start(self, e: event.Event) -> None:
            stack.append([time.process_time(), 0.0])

        def on_end(self, e: event.Event) -> None:
            c0, child = stack.pop()
            cpu = time.process_time() - c0
            if stack:
                stack[-1][1] += cpu
            f = e.data["dispatcher"].py_func
            records.append({"name": f"{f.__module__}.{f.__qualname__}", "self": cpu - child,
                            "cpu": cpu, "top": not stack,
                            "sig": ", ".join(map(str, e.data["args"])), "test": current["test"]})

    class Plugin:
        def pytest_runtest_setup(self, item: pytest.Item) -> None:
            current["test"] = item.nodeid.split("::")[0]

    event.register("numba:compile", Timer())
    load0, t0 = load_average(), time.perf_counter()
    # -n 0: in this process, where the listener is (the default run spreads files over
    # pytest-xdist workers, each compiling what its files need)
    rc = pytest.main(["-q", "-p", "no:cacheprovider", "-n", "0", *argv], plugins=[Plugin()])
    wall = time.perf_counter() - t0
    header = (f"`python experiments/profile_test_compile.py{''.join(' ' + a for a in argv)}`; "
              f"{os.cpu_count()} cores, load average {load0:.1f} at the start, "
              f"{load_average():.1f} at the end; pytest exit code {int(rc)}, "
              f"{wall / 60:.1f} min wall.")
    (HERE / "results" / "test_suite_compile.json").write_text(json.dumps(records), encoding="utf-8")
    write_report(records, header)
    return int(rc)


def write_report(records: list[dict], header: str) -> None:
    """``results/test_suite_compile.md`` from the compile records (kernel and test-file tables)."""
    total = sum(r["self"] for r in records)
    by: dict[str, list] = collections.defaultdict(lambda: [0, 0.0, set()])
    for r in records:
        by[r["name"]][0] += 1
        by[r["name"]][1] += r["self"]
        by[r["name"]][2].add(r["sig"])
    own = sum(v[1] for k, v in by.items() if k.startswith("ltr."))
    files: dict[str, float] = collections.defaultdict(float)
    for r in records:
        if r["top"]:
            files[r["test"]] += r["cpu"]
    lines = [
        "# Numba compilations in the default test run, empty cache",
        "",
        header,
        "",
        (f"{len(records)} compilations of {len(by)} dispatchers, {total:.0f} CPU s compiling in all, "
         f"{own:.0f} s of it in ltr's own kernels (the rest: numba's library overloads and the "
         "peers' numba code, e.g. ranx, run by the fidelity tests). CPU seconds inflate with the "
         "load; the shares are the comparable figures."),
        "",
        "| kernel | compilations | signatures | self CPU s | share |",
        "|---|---:|---:|---:|---:|",
    ]
    for name, (n, sec, sigs) in sorted(by.items(), key=lambda kv: -kv[1][1])[:25]:
        lines.append(f"| `{name}` | {n} | {len(sigs)} | {sec:.1f} | {100 * sec / total:.1f} % |")
    lines += ["", "| test file (first caller) | compile CPU s |", "|---|---:|"]
    for name, sec in sorted(files.items(), key=lambda kv: -kv[1])[:15]:
        lines.append(f"| `{name}` | {sec:.1f} |")
    out = HERE / "results" / "test_suite_compile.md"
    out.write_text("\n".join(lines) + "\n", encoding="utf-8")
    print(f"wrote {out}")


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

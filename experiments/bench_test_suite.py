"""Wall time of the default test run (issue 25, point 6), with an empty and a warm numba cache.

Runs the README's test command, ``python -m pytest -q``, on the tree whose ``ltr`` is imported
(``PYTHONPATH`` picks it, as ``run_performance.py --before`` does), twice in fresh processes:

1. **cold**: ``NUMBA_CACHE_DIR`` set to a new empty directory, so every kernel the tests call is
   compiled, as on a fresh clone;
2. **warm**: the same cache directory again.

It also counts the tests the default run selects and those marked ``slow`` (left out of the
default run, run by CI with ``-m slow``), so a faster default run that dropped checks shows up as a
smaller sum.  Prints ``RESULT`` lines in minutes and test counts; run it on a quiet machine (the
one-minute load average before and after each run is printed).

Usage::

    python experiments/bench_test_suite.py [--warm-only]
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from _perf import load_average, result


def _tree() -> Path:
    """The checkout whose ``ltr`` this script imports (``PYTHONPATH`` first).

    Looked up in this process, whose ``sys.path`` starts with the script's folder and then
    ``PYTHONPATH``: a ``python -c`` child would put its working directory first, and
    ``run_performance.py`` runs every script from the newer checkout's root, so the child
    found the newer ``ltr`` even for ``--before`` (the before figures of the first such run
    were the newer suite's).
    """
    spec = importlib.util.find_spec("ltr")
    if spec is None or spec.origin is None:
        raise SystemExit("ltr is not importable: install it or set PYTHONPATH to a checkout")
    return Path(spec.origin).resolve().parents[1]


def _pytest(tree: Path, env: dict, *args: str) -> tuple[float, str, int]:
    t0 = time.perf_counter()
    proc = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", *args],
                          cwd=tree, env=env, capture_output=True, text=True, check=False)
    return time.perf_counter() - t0, proc.stdout + proc.stderr, proc.returncode


def _summary(text: str) -> str:
    lines = [ln for ln in text.strip().splitlines() if re.search(r"\d+ (passed|failed)", ln)]
    return lines[-1].strip("= ") if lines else "(no summary)"


def _collected(tree: Path, env: dict, *marker: str) -> int:
    _, text, _ = _pytest(tree, env, "--collect-only", *marker)
    found = re.search(r"(\d+)(?:/\d+)? tests? (?:collected|selected)", text)
    if found is None and re.search(r"no tests (?:collected|ran)", text):
        return 0  # e.g. ``-m slow`` on a tree with no slow-marked test
    return int(found.group(1)) if found else -1


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--warm-only", action="store_true",
                    help="skip the cold run (the cache under NUMBA_CACHE_DIR must be filled)")
    args = ap.parse_args(argv)
    tree = _tree()
    with tempfile.TemporaryDirectory(prefix="ltr-suite-numba-") as cache:
        env = dict(os.environ, MPLBACKEND="Agg", NUMBA_CACHE_DIR=cache)
        print(f"tree {tree}; {os.cpu_count()} cores", flush=True)
        default = _collected(tree, env)
        slow = _collected(tree, env, "-m", "slow")
        print(f"tests selected by the default run: {default}; marked slow (CI only): {slow}")
        result("test_suite_default_tests", default, "tests")
        result("test_suite_slow_tests", slow, "tests")
        runs = ["warm"] if args.warm_only else ["cold", "warm"]
        for tag in runs:
            load0 = load_average()
            wall, text, rc = _pytest(tree, env)
            print(f"{tag}: {wall / 60:.2f} min (rc {rc}; load {load0:.2f} -> "
                  f"{load_average():.2f}): {_summary(text)}", flush=True)
            if rc:
                print(text[-3000:], file=sys.stderr)
                return rc
            result(f"test_suite_{tag}_min", wall / 60, "min")
    return 0


if __name__ == "__main__":
    sys.exit(main())

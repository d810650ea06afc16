"""Run every performance benchmark of issue 25 in one go and tabulate its ratios.

Usage::

    git worktree add /tmp/ltr-before <older commit>      # optional: the "before" code
    python experiments/run_performance.py --before /tmp/ltr-before
    python experiments/readme_figures.py                 # README table from the results

Each benchmark script of this folder prints its headline figures as
``RESULT <key> <value> <unit>`` lines (see ``_perf.py``).  This runner runs
them one after another (never two at once: they time themselves), first with
the older checkout's ``ltr`` on ``PYTHONPATH`` (``--before``) and then with
this tree's, and writes ``results/performance.md`` and ``results/performance.json``
with, per figure: the target, the value before and after, whether the target
is met, and the one-minute load average before and after each script.  Run it
on a quiet machine: every ratio is timed against its peer inside one script
run, so slow machines shift both sides, but a busy one adds noise.
"""

from __future__ import annotations

import argparse
import datetime as _dt
import json
import os
import platform
import re
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
RESULTS = HERE / "results"


@dataclass(frozen=True)
class Figure:
    key: str            # RESULT key the script prints
    label: str          # what it measures, for the table
    target: str         # the bar, as text
    best: float | None  # value the figure must not exceed (None: reported only)


@dataclass(frozen=True)
class Bench:
    name: str
    args: tuple[str, ...]
    figures: tuple[Figure, ...] = field(default_factory=tuple)
    timeout: int = 900


BENCHES: tuple[Bench, ...] = ()  # filled below


def _load() -> float:
    return os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")


_LINE = re.compile(r"^RESULT (\S+) (\S+) (\S+)\s*$")


def _run(bench: Bench, tree: Path) -> dict:
    env = dict(os.environ, PYTHONPATH=str(tree), MPLBACKEND="Agg")
    before = _load()
    t0 = time.perf_counter()
    try:
        proc = subprocess.run([sys.executable, str(HERE / bench.name), *bench.args], check=False,
                              cwd=ROOT, env=env, capture_output=True, text=True,
                              timeout=bench.timeout)
        out, rc = proc.stdout + proc.stderr, proc.returncode
    except subprocess.TimeoutExpired as exc:
        out, rc = f"{exc.stdout or ''}{exc.stderr or ''}\ntimed out after {bench.timeout} s", -1
    wall = time.perf_counter() - t0
    values = {}
    for line in out.splitlines():
        m = _LINE.match(line.strip())
        if m:
            values[m.group(1)] = float(m.group(2))
    return {"values": values, "rc": rc, "wall_s": round(wall, 1), "load_before": before,
            "load_after": _load(), "tail": out[-2000:] if rc else ""}


def _fmt(v: float | None) -> str:
    return "n/a" if v is None else f"{v:.3g}"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--before", type=Path, help="checkout of the older code to compare with")
    ap.add_argument("--only", nargs="+", help="run only these scripts (file names)")
    ap.add_argument("--out", type=Path, default=RESULTS / "performance")
    args = ap.parse_args(argv)
    benches = [b for b in BENCHES if not args.only or b.name in args.only]
    trees = ([("before", args.before.resolve())] if args.before else []) + [("after", ROOT)]
    runs: dict[str, dict[str, dict]] = {}
    for bench in benches:
        for tag, tree in trees:
            print(f"[{tag}] {bench.name} {' '.join(bench.args)}", file=sys.stderr, flush=True)
            runs.setdefault(bench.name, {})[tag] = res = _run(bench, tree)
            print(f"    rc {res['rc']}, {res['wall_s']} s, load {res['load_before']:.2f} -> "
                  f"{res['load_after']:.2f}", file=sys.stderr, flush=True)
            if res["rc"]:
                print(res["tail"], file=sys.stderr)
    rows = []
    for bench in benches:
        r = runs[bench.name]
        for fig in bench.figures:
            before = r.get("before", {}).get("values", {}).get(fig.key)
            after = r["after"]["values"].get(fig.key)
            met = None if fig.best is None or after is None else bool(after <= fig.best)
            rows.append({"script": bench.name, "key": fig.key, "label": fig.label,
                         "target": fig.target, "before": before, "after": after, "met": met,
                         "load": [r["after"]["load_before"], r["after"]["load_after"]]})
    meta = {"date": _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"),
            "machine": f"{platform.machine()}, {os.cpu_count()} cores, Python "
                       f"{platform.python_version()}",
            "before": str(args.before) if args.before else None,
            "command": "python experiments/run_performance.py" + (
                " --before <checkout>" if args.before else ""),
            "runs": {name: {tag: {k: v for k, v in res.items() if k != "tail"}
                            for tag, res in r.items()} for name, r in runs.items()}}
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.with_suffix(".json").write_text(json.dumps({"meta": meta, "rows": rows}, indent=1))
    lines = ["# Performance figures (issue 25)", "",
             f"Command: `{meta['command']}` on {meta['date']}; {meta['machine']}.",
             ("Each ratio is ltr's time over the peer's (or over ltr's own reference path), "
              "timed in one run of its script; load = one-minute load average before -> after "
              "the script's run on this tree."), "",
             "| figure | target | before | after | met | script | load |",
             "|---|---|---:|---:|:-:|---|---|"]
    for row in rows:
        met = {True: "yes", False: "**no**", None: "-"}[row["met"]]
        lines.append(f"| {row['label']} | {row['target']} | {_fmt(row['before'])} | "
                     f"{_fmt(row['after'])} | {met} | `{row['script']}` | "
                     f"{row['load'][0]:.2f} -> {row['load'][1]:.2f} |")
    args.out.with_suffix(".md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""Rewrite the README's performance table from ``results/performance.json``.

Usage: ``python experiments/readme_figures.py`` (after ``run_performance.py``).
The table sits between ``<!-- performance:begin -->`` and
``<!-- performance:end -->`` in README.md; nothing else is touched.
``--check`` exits 1 when the README's table differs from the results file.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
BEGIN, END = "<!-- performance:begin -->", "<!-- performance:end -->"


def _fmt(v: float | None) -> str:
    return "n/a" if v is None else f"{v:.3g}"


def table(data: dict) -> str:
    meta = data["meta"]
    loads = [v for r in data["rows"] for v in r["load"]]
    lines = [
        (f"Measured by `{meta['command']}` on {meta['date'][:10]} ({meta['machine']}; "
        f"one-minute load average {min(loads):.2f}-{max(loads):.2f} during the runs); the table "
        "is written by `python experiments/readme_figures.py` from "
        "[performance.md](experiments/results/performance.md). Ratios are ltr's time over the "
        "peer's (lower is better), rows marked (s) or (us/row) are times, and speed-ups are "
        "the old one-thread time over the new time (higher is better)."),
        "",
        "| figure | target | before | now | met |",
        "|---|---|---:|---:|:-:|",
    ]
    for r in data["rows"]:
        met = {True: "yes", False: "no", None: "-"}[r["met"]]
        lines.append(f"| {r['label']} | {r['target']} | {_fmt(r['before'])} | "
                     f"{_fmt(r['after'])} | {met} |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--results", type=Path,
                    default=ROOT / "experiments" / "results" / "performance.json")
    ap.add_argument("--readme", type=Path, default=ROOT / "README.md")
    ap.add_argument("--check", action="store_true")
    args = ap.parse_args(argv)
    text = args.readme.read_text()
    if BEGIN not in text or END not in text:
        print(f"{args.readme}: no {BEGIN} ... {END} block", file=sys.stderr)
        return 2
    head, rest = text.split(BEGIN, 1)
    _, tail = rest.split(END, 1)
    new = f"{head}{BEGIN}\n{table(json.loads(args.results.read_text()))}\n{END}{tail}"
    if args.check:
        return 0 if new == text else 1
    args.readme.write_text(new)
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""Run every performance benchmark of issue 25 in one go and tabulate its ratios.

Usage::

    git worktree add /tmp/ltr-before <older commit>      # optional: the "before" code
    python experiments/run_performance.py --before /tmp/ltr-before
    python experiments/readme_figures.py                 # README table (run_performance does it)

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
    key: str                    # RESULT key the script prints
    label: str                  # what it measures, for the table
    target: str                 # the bar, as text
    best: float | None = None   # value the figure must not exceed (None: reported only)
    least: float | None = None  # value the figure must reach
    # "before" of another key: a speed-up of this tree over the old one (before / after)
    speedup_of: str | None = None


@dataclass(frozen=True)
class Bench:
    name: str
    args: tuple[str, ...]
    figures: tuple[Figure, ...] = field(default_factory=tuple)
    timeout: int = 900
    before: bool = True  # also run it on the --before checkout
    extra: bool = False  # long: only with --all


def _ratio(key: str, label: str, best: float, target: str | None = None) -> Figure:
    return Figure(key, label, target or f"<= {best}", best=best)


_SHAPES = ("10_doc_queries_k_10", "30_doc_queries_k_10", "100_doc_queries_k_10",
           "100_doc_queries_k_50", "100_doc_queries_k_100", "100_doc_queries_k_None_whole_list",
           "1000_doc_queries_k_1000", "10_4_doc_queries_k_1000",
           "100_doc_queries_k_1_5_10_20", "100_doc_queries_k_1_10_100_1000",
           "1000_doc_queries_k_1_10_100_1000")

BENCHES: tuple[Bench, ...] = (
    Bench("bench_ndcg.py", (), (
        _ratio("ndcg_headline_from_qid", "nDCG@10 from qid vs LightGBM's eval (10^7 rows)", 0.25),
        *(_ratio(f"ndcg_shape_{shape}", f"nDCG from qid vs LightGBM: {shape}", 1.0)
          for shape in _SHAPES),
        _ratio("ndcg_worst_shape", "nDCG: worst shape vs LightGBM", 1.0),
        Figure("ndcg_single_k10_lightgbm_threads_ms",
               "one 10^6-doc query, k=10: speed-up over the old one-thread time", ">= 1.6",
               least=1.6, speedup_of="ndcg_single_k10_lightgbm_1thread_ms"),
        Figure("ndcg_single_kNone_lightgbm_threads_ms",
               "one 10^6-doc query, whole list: speed-up over the old one-thread time", ">= 1.6",
               least=1.6, speedup_of="ndcg_single_kNone_lightgbm_1thread_ms"),
    )),
    Bench("bench_evaluate.py", (), (
        _ratio("qrels_object_ids", "qrels/run from object-string DataFrames vs pytrec_eval", 0.1),
        _ratio("qrels_str_ids", "qrels/run from str DataFrames vs pytrec_eval", 0.1),
        _ratio("trec_read", "reading TREC files vs pytrec_eval's parsers", 0.05),
        Figure("trec_evaluate", "evaluating from TREC files vs pytrec_eval", "-"),
    ), timeout=1200),
    Bench("bench_importance.py", ("--no-write",), (
        _ratio("importance_lightgbm_300x68", "importance vs scikit-learn, LightGBM, 300 x 68", 0.1),
        _ratio("importance_xgboost_300x68", "importance vs scikit-learn, XGBoost, 300 x 68", 0.1),
    )),
    # The large set with 2 permutation repeats, one run per engine (the script's --large
    # default is 5 repeats): most of each run is scikit-learn's side, about 3 minutes with
    # LightGBM and 1-2 with XGBoost on a quiet 2-core machine (9.5 min for both at load 5-7).
    Bench("bench_importance.py", ("--no-write", "--large", "--repeats", "2", "--engine",
                                  "lightgbm"), (
        _ratio("importance_lightgbm_1000x136", "importance vs scikit-learn, LightGBM, 1,000 x 136",
               0.1),
    ), timeout=900),
    Bench("bench_importance.py", ("--no-write", "--large", "--repeats", "2", "--engine",
                                  "xgboost"), (
        _ratio("importance_xgboost_1000x136", "importance vs scikit-learn, XGBoost, 1,000 x 136",
               0.1),
    ), timeout=900),
    Bench("bench_objective.py", (), (
        _ratio("unbiased_vs_plain", "objective call: learned position biases vs plain", 1.3),
        _ratio("propensity_vs_plain", "objective call: known propensities vs plain", 1.3),
        _ratio("position_term_vs_plain", "objective call: position term vs plain", 1.3),
        _ratio("unbiased_position_term_vs_plain",
               "objective call: learned biases + position term vs plain", 1.3),
        _ratio("sampled_vs_native", "round: sampled pairs (8/doc) vs native LightGBM", 0.9),
    )),
    Bench("bench_propensity.py", (), (
        Figure("em_5m_seconds", "PBM propensity EM, 5 M impressions (s)", "<= 3 s", best=3.0),
        Figure("cascade_em_5m_seconds", "cascade EM, fixed logger, 5 M impressions (s)",
               "<= 3 s", best=3.0),
        Figure("cascade_em_stochastic_5m_seconds",
               "cascade EM, stochastic logger, 5 M impressions (s)", "<= 3 s", best=3.0),
    )),
    Bench("bench_dask.py", ("--workers", "2", "--engine", "both", "--repeat", "2"), (
        Figure("dask_shuffle_2workers_us_per_row",
               "Dask query shuffle, 1.2 M rows grouped by query (us/row)", "<= 5", best=5.0),
        _ratio("dask_lightgbm_2workers_per_round_vs_single",
               "Dask per round, 2 workers x 1 thread vs one process x 2 threads, LightGBM", 1.2),
        _ratio("dask_xgboost_2workers_per_round_vs_single",
               "Dask per round, 2 workers x 1 thread vs one process x 2 threads, XGBoost", 1.2),
    ), timeout=1500),
    Bench("bench_dask.py", ("--workers", "2", "--random-order", "--engine", "lightgbm",
                            "--rounds", "2"), (
        Figure("dask_shuffle_2workers_us_per_row",
               "Dask query shuffle, 1.2 M rows in random order (us/row)", "-"),
    ), timeout=1500, before=False, extra=True),
    # The README's test command, cold (empty numba cache) and warm; ~10 min on 2 cores.
    Bench("bench_test_suite.py", (), (
        Figure("test_suite_cold_min", "default test run, empty numba cache (min)", "<= 4",
               best=4.0),
        Figure("test_suite_warm_min", "default test run, warm numba cache (min)", "<= 4",
               best=4.0),
        Figure("test_suite_default_tests", "tests in the default run", "-"),
        Figure("test_suite_slow_tests", "tests marked slow (CI runs them with -m slow)", "-"),
    ), timeout=2400),
    Bench("bench_cold_start.py", ("--skip-commands", "--repeats", "2"), (
        _ratio("cold_over_warm", "quick start: empty numba cache vs warm", 2.0),
        Figure("cold_start_s", "quick start, empty numba cache (s)", "-"),
        Figure("warm_start_s", "quick start, warm (s)", "-"),
    )),
)


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
    ap.add_argument("--all", action="store_true",
                    help="also the long runs (Dask from random order)")
    ap.add_argument("--out", type=Path, default=RESULTS / "performance")
    args = ap.parse_args(argv)
    benches = [b for b in BENCHES if (not args.only or b.name in args.only)
               and (args.all or not b.extra)]

    trees = ([("before", args.before.resolve())] if args.before else []) + [("after", ROOT)]
    runs: dict[str, dict[str, dict]] = {}
    for bench in benches:
        for tag, tree in trees:
            if tag == "before" and not bench.before:
                continue
            print(f"[{tag}] {bench.name} {' '.join(bench.args)}", file=sys.stderr, flush=True)
            key = bench.name + " " + " ".join(bench.args)
            runs.setdefault(key, {})[tag] = res = _run(bench, tree)
            print(f"    rc {res['rc']}, {res['wall_s']} s, load {res['load_before']:.2f} -> "
                  f"{res['load_after']:.2f}", file=sys.stderr, flush=True)
            if res["rc"]:
                print(res["tail"], file=sys.stderr)
    rows = []
    now = _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds")
    for bench in benches:
        r = runs[bench.name + " " + " ".join(bench.args)]
        for fig in bench.figures:
            before = r.get("before", {}).get("values", {}).get(fig.key)
            after = r["after"]["values"].get(fig.key)
            if fig.speedup_of is not None:  # old one-thread time over the new time
                old = r.get("before", {}).get("values", {}).get(fig.speedup_of)
                after = None if old is None or not after else old / after
                before = 1.0 if old is not None else None
            met = (None if after is None or (fig.best is None and fig.least is None)
                   else bool((fig.best is None or after <= fig.best)
                             and (fig.least is None or after >= fig.least)))
            rows.append({"script": bench.name, "key": fig.key, "label": fig.label,
                         "target": fig.target, "before": before, "after": after, "met": met,
                         "load": [r["after"]["load_before"], r["after"]["load_after"]],
                         "date": now})
    meta = {"date": now,
            "machine": f"{platform.machine()}, {os.cpu_count()} cores, Python "
                       f"{platform.python_version()}",
            "before": str(args.before) if args.before else None,
            "command": "python experiments/run_performance.py" + (
                " --before <checkout>" if args.before else ""),
            "runs": {name: {tag: {k: v for k, v in res.items() if k != "tail"}
                            for tag, res in r.items()} for name, r in runs.items()}}
    old = args.out.with_suffix(".json")
    if args.only and old.exists():  # keep the other scripts' rows and runs of the earlier run
        prev = json.loads(old.read_text())
        kept = [{"date": prev["meta"]["date"], **r} for r in prev["rows"]
                if r["script"] not in args.only]
        order = {(b.name, f.key): i for i, (b, f) in
                 enumerate((b, f) for b in BENCHES for f in b.figures)}
        rows = sorted(kept + rows, key=lambda r: order.get((r["script"], r["key"]), len(order)))
        meta["runs"] = {**{k: v for k, v in prev["meta"]["runs"].items()
                           if k.split(" ")[0] not in args.only}, **meta["runs"]}
    return _write(rows, meta, args.out)


def _write(rows: list[dict], meta: dict, out: Path) -> int:
    """Write ``out``.json and ``out``.md (and the README's table for the default ``out``)."""
    out.parent.mkdir(parents=True, exist_ok=True)
    out.with_suffix(".json").write_text(json.dumps({"meta": meta, "rows": rows}, indent=1))
    dates: dict[str, list[str]] = {}
    for row in rows:  # each script's rows come from one run of it
        scripts = dates.setdefault(row.get("date", meta["date"]), [])
        if row["script"] not in scripts:
            scripts.append(row["script"])
    when = "; ".join(f"{d} ({', '.join(f'`{x}`' for x in sc)})" for d, sc in sorted(dates.items()))
    lines = ["# Performance figures (issue 25)", "",
             f"Command: `{meta['command']}`; {meta['machine']}. Run on: {when}.",
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
    out.with_suffix(".md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))
    if out == RESULTS / "performance":
        # the README's table follows at once: a README left behind its results file fails
        # tests/test_docs.py, which the test-suite benchmark of a later run would then time
        import readme_figures

        return readme_figures.main(["--results", str(out.with_suffix(".json"))])
    return 0


if __name__ == "__main__":
    sys.exit(main())

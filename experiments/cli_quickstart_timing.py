"""Wall time of `ltr train configs/quickstart.yaml`, and OpenMP's wait policy.

The CLI defaults OMP_WAIT_POLICY to PASSIVE (see ltr/cli.py:main).  This script
runs the quickstart in fresh processes under OMP_WAIT_POLICY=ACTIVE and
PASSIVE, and times a micro-benchmark (100 nDCG@{1,5,10} calls on 16 queries,
~350 rows: the per-round evaluation of a small run) under both, printing the
ratios as a markdown table.

    python experiments/cli_quickstart_timing.py [--repeats 2]

Numbers are noisy on a shared machine: run it twice and report both.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]

MICRO = """
import time, numpy as np
from ltr.metrics import ndcg
from ltr.synthetic import make_ranking
d = make_ranking(16, n_features=5, mean_docs=20, max_docs=60)
s = np.random.default_rng(0).normal(size=d.n_rows)
ndcg(d.y, s, offsets=d.offsets, k=[1, 5, 10])
t = time.perf_counter()
for _ in range(100):
    ndcg(d.y, s, offsets=d.offsets, k=[1, 5, 10])
print((time.perf_counter() - t) * 10)
"""


def env_with(policy: str) -> dict[str, str]:
    env = dict(os.environ, OMP_WAIT_POLICY=policy)
    env["PYTHONPATH"] = str(REPO) + os.pathsep + env.get("PYTHONPATH", "")
    return env


def micro_ms(policy: str) -> float:
    out = subprocess.run(
        [sys.executable, "-c", MICRO],
        env=env_with(policy),
        cwd=REPO,
        capture_output=True,
        text=True,
        check=True,
    )
    return float(out.stdout.strip().splitlines()[-1])


def quickstart_s(policy: str) -> float:
    with tempfile.TemporaryDirectory() as tmp:
        t = time.perf_counter()
        subprocess.run(
            [
                sys.executable,
                "-m",
                "ltr",
                "train",
                str(REPO / "configs" / "quickstart.yaml"),
                "--out",
                str(Path(tmp) / "run"),
                "--no-progress",
            ],
            env=env_with(policy),
            cwd=REPO,
            capture_output=True,
            check=True,
        )
        return time.perf_counter() - t


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=2)
    args = parser.parse_args()
    rows = []
    for _ in range(args.repeats):
        a, p = micro_ms("ACTIVE"), micro_ms("PASSIVE")
        rows.append(("ndcg@{1,5,10}, 16 queries, per call (ms)", a, p))
        a, p = quickstart_s("ACTIVE"), quickstart_s("PASSIVE")
        rows.append(("ltr train configs/quickstart.yaml, wall (s)", a, p))
    print(f"load average at the end: {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores\n")
    print("| measurement | OMP_WAIT_POLICY=ACTIVE | PASSIVE (CLI default) | ACTIVE / PASSIVE |")
    print("|---|---|---|---|")
    for name, a, p in rows:
        print(f"| {name} | {a:.2f} | {p:.2f} | {a / p:.1f}x |")


if __name__ == "__main__":
    main()

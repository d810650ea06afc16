"""CPU time of the debiased LambdaRank kernel vs the plain one, per call, one thread.

Calls the compiled serial driver (:func:`ltr.kernels._lambdarank.lambdarank_gradients_serial`)
directly on ``make_ranking(500)`` (~120 docs/query, k=20, a random display order,
random bias tables), so Python-side work and thread start-up do not blur the
kernels' own cost: plain LambdaRank, known propensities (IPS weights, no pair
costs) and learned biases with each pair cost.  Each configuration is timed
``--reps`` times, interleaved, with ``time.thread_time`` (CPU time of the
calling thread: robust to other jobs on a shared machine); best of the reps.

Usage::

    python experiments/bench_debiased_kernel.py            # ~30 s
    python experiments/bench_debiased_kernel.py --reps 300

Prints ``RESULT kernel_<name>_vs_plain`` lines and writes
``experiments/results/debiased_kernel.md``.
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

import numba
import numpy as np
from _perf import load_average, result

from ltr.kernels import _lambdarank as kern
from ltr.objectives import LambdaRankObjective
from ltr.synthetic import make_ranking


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--queries", type=int, default=500)
    parser.add_argument("--reps", type=int, default=150)
    parser.add_argument("--out", default=str(Path(__file__).parent / "results" / "debiased_kernel.md"))
    args = parser.parse_args(argv)
    load0 = load_average()
    data = make_ranking(args.queries, n_features=4, random_state=0)
    rng = np.random.default_rng(0)
    n = data.n_rows
    pos = np.concatenate([rng.permutation(int(m)) + 1 for m in np.diff(data.offsets)])
    slot = np.minimum(pos, 32) - 1
    obj = LambdaRankObjective(k=20)
    labels, gains, inv, gid, n_grades = obj._prepared(
        [np.asarray(data.y, dtype=float)], [obj._gain_spec], ["labels"], data.offsets, 20)
    disc = kern.position_discounts(int(np.diff(data.offsets).max()))
    scores = rng.normal(size=n)
    tp, tm = rng.uniform(0.5, 1.5, 32), rng.uniform(0.5, 1.5, 32)
    perm, tmp = np.empty(n, np.int64), np.empty(n, np.int64)
    skey, rb = np.empty(2 * n), np.empty(13 * n)  # the debiased kernel needs 11 blocks (5 for the plain one); 13 kept from the older kernel
    ibuf = np.empty(1, np.int32)
    acc_l, acc_h, grad, hess = np.empty(n), np.empty(n), np.empty(n), np.empty(n)
    head = (scores, labels, gains, gid, n_grades, data.offsets, inv, np.ones(1), 20, 1.0, True,
            False, np.zeros(1), 0.0, 0.0, 1.0, disc, 1, 1.0, 0, np.uint64(0), False)
    configs = {
        "plain": (),
        "propensity": ((slot, tp, tm, True, np.empty(0), np.empty(0)),),
        "unbiased": ((slot, tp, tm, True, np.empty(n), np.empty(n)),),
        "unbiased_pair_loss": ((slot, tp, tm, False, np.empty(n), np.empty(n)),),
    }
    for bias in configs.values():  # compile, and the first (cold) sort
        kern.lambdarank_gradients_serial(*head, False, grad, hess, perm, tmp, skey, ibuf, rb,
                                         acc_l, acc_h, *bias)
    best = dict.fromkeys(configs, float("inf"))
    for _ in range(args.reps):
        for name, bias in configs.items():
            t = time.thread_time()
            kern.lambdarank_gradients_serial(*head, True, grad, hess, perm, tmp, skey, ibuf, rb,
                                             acc_l, acc_h, *bias)
            best[name] = min(best[name], time.thread_time() - t)
    lines = [
        "# Debiased LambdaRank kernel vs plain, CPU time per call",
        "",
        (f"Command: `python experiments/bench_debiased_kernel.py --queries {args.queries} --reps "
         f"{args.reps}`; one thread (serial driver), `time.thread_time`, best of {args.reps} "
         f"interleaved calls; load average {load0:.1f} at the start, {load_average():.1f} at "
         f"the end; numba {numba.__version__}."),
        "",
        "| kernel | ms per call | ratio to plain |",
        "|---|---|---|",
    ]
    for name, sec in best.items():
        ratio = sec / best["plain"]
        if name != "plain":
            result(f"kernel_{name}_vs_plain", ratio)
        lines.append(f"| {name} | {1e3 * sec:.2f} | {ratio:.2f}x |")
    Path(args.out).write_text("\n".join(lines) + "\n")
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

"""Check: ltr's position term on cascade clicks vs naive training and LightGBM's position GAM.

The issue-21 cascade setting on the shared LETOR set (LightGBM's lambdarank
example; the committed slice when the shared set is absent):

* a deterministic logger shows every document of a training query, sorted by
  one feature (three loggers: the features ranked 1st, 50th and 150th of 300
  by the training nDCG@10 of their order);
* the user examines documents top down and stops after each examined one with
  probability 0.2 (examination ``0.8 ** (rank - 1)``, clicks or not), and
  clicks an examined document of grade 0..4 with probability
  0.4 / 0.6 / 0.7 / 0.8 / 0.9; ``--sessions`` sessions per query;
* rankers trained on the click log (one list per session):

  - ``naive``: ltr's LambdaRank on the clicks, positions ignored;
  - ``position_term``: ltr's LambdaRank with ``position_term=True``;
  - ``lgb_gam``: LightGBM's native lambdarank with its position GAM
    (``objective="native"`` with positions);
  - ``oracle``: ltr's LambdaRank on the true grades (an upper reference);

* nDCG@3 and nDCG@10 of each on the test queries' true grades, per seed (a
  seed draws the clicks and the engines' seeds), with the mean and the
  paired differences' standard error over seeds.

Usage::

    python experiments/check_position_term.py            # 3 loggers x 3 seeds, ~2.5 min
    python experiments/check_position_term.py --seeds 5 --ranks 50

Writes ``experiments/results/position_term.md``.
"""

from __future__ import annotations

import argparse
import os
import platform
import time
from pathlib import Path

os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")

import numpy as np

from ltr import load_letor, ndcg
from ltr._io import write_atomic
from ltr.clicks import simulate_pbm
from ltr.engines import train
from ltr.objectives import LambdaRankObjective
from ltr.testing import letor_full_path, letor_slice_path

RESULTS = Path(__file__).resolve().parent / "results"
CLICK_BY_GRADE = [0.4, 0.6, 0.7, 0.8, 0.9]
STOP = 0.2
METHODS = ("naive", "position_term", "lgb_gam", "oracle")
EXTRA = ("position_term_unbiased", "unbiased")  # on request (--methods)


def _data():
    try:
        folder = letor_full_path()
    except FileNotFoundError:
        folder = letor_slice_path()
    return load_letor(folder / "rank.train"), load_letor(folder / "rank.test"), folder


def _feature_order(tr) -> np.ndarray:
    """Features by the training nDCG@10 of their sorted order, best first (stable)."""
    values = [ndcg(tr.y, tr.X[:, j], offsets=tr.offsets, k=10) for j in range(tr.X.shape[1])]
    return np.argsort(-np.asarray(values), kind="stable")


def _fit(method: str, X, y, offsets, position, rounds: int, seed: int, jobs: int):
    params = {"num_leaves": 31, "min_data_in_leaf": 20, "learning_rate": 0.1}
    common = {"num_boost_round": rounds, "params": params, "random_state": seed, "n_jobs": jobs}
    if method == "lgb_gam":
        return train(X, y, offsets, k=10, position=position, **common)
    term = method.startswith("position_term")
    unbiased = method.endswith("unbiased")
    obj = LambdaRankObjective(k=10, position_term=term, unbiased=unbiased)
    return train(X, y, offsets, objective=obj,
                 position=position if term or unbiased else None, **common)


def _run(tr, te, feature: int, args) -> tuple[dict[str, np.ndarray], np.ndarray]:
    """nDCG@3/@10 per seed and method, and the mean learned offsets at positions 1-10."""
    methods = list(args.methods)
    depth = int(np.diff(tr.offsets).max())
    examination = (1.0 - STOP) ** np.arange(depth)
    scores: dict[str, list[tuple[float, float]]] = {m: [] for m in methods}
    offsets_at: list[np.ndarray] = []
    for seed in range(args.seeds):
        log = simulate_pbm(tr.y.astype(int), offsets=tr.offsets, logging_scores=tr.X[:, feature],
                           examination=examination, click_prob=CLICK_BY_GRADE,
                           n_sessions=args.sessions, random_state=seed)
        X = tr.X[log.row]
        click = log.click.astype(np.float64)
        for method in methods:
            y = tr.y[log.row] if method == "oracle" else click
            model = _fit(method, X, y, log.offsets, log.position, args.rounds, seed, args.jobs)
            pred = model.predict(te.X)
            scores[method].append((ndcg(te.y, pred, offsets=te.offsets, k=3),
                                   ndcg(te.y, pred, offsets=te.offsets, k=10)))
            if method == "position_term":
                offsets_at.append(np.asarray(model.position_term["offsets"][:10]))
    return {m: np.asarray(v) for m, v in scores.items()}, np.mean(offsets_at, axis=0)


def _table(arr: dict[str, np.ndarray], mean_offsets: np.ndarray, n: int) -> list[str]:
    def se(d: np.ndarray) -> float:
        return float(np.std(d, ddof=1) / np.sqrt(n)) if n > 1 else float("nan")

    lines = [
        "| method | nDCG@3 | nDCG@10 | nDCG@3 - naive (± SE) | nDCG@3 - lgb_gam (± SE) |",
        "|---|---|---|---|---|",
    ]
    for m in arr:
        d_naive = arr[m][:, 0] - arr["naive"][:, 0]
        d_gam = arr[m][:, 0] - arr["lgb_gam"][:, 0]
        lines.append(
            f"| {m} | {arr[m][:, 0].mean():.4f} | {arr[m][:, 1].mean():.4f} | "
            f"{d_naive.mean():+.4f} ± {se(d_naive):.4f} | {d_gam.mean():+.4f} ± {se(d_gam):.4f} |"
        )
    lines += [
        "",
        "| position | " + " | ".join(str(p) for p in range(1, 11)) + " |",
        "|---|" + "---|" * 10,
        "| learned b[p] - b[1] | "
        + " | ".join(f"{v - mean_offsets[0]:+.2f}" for v in mean_offsets) + " |",
        "| log(0.8) (p - 1) | "
        + " | ".join(f"{np.log(0.8) * p:+.2f}" for p in range(10)) + " |",
    ]
    return lines


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=3)
    parser.add_argument("--sessions", type=int, default=5)
    parser.add_argument("--rounds", type=int, default=100)
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument("--ranks", type=int, nargs="+", default=[1, 50, 150],
                        help="loggers: the features ranked so by training nDCG@10 (1 = best)")
    parser.add_argument("--out", default="position_term.md")
    parser.add_argument("--methods", nargs="+", default=list(METHODS),
                        choices=[*METHODS, *EXTRA])
    args = parser.parse_args()
    if not {"naive", "position_term", "lgb_gam"} <= set(args.methods):
        parser.error("--methods must include naive, position_term and lgb_gam (the table's bases)")

    tr, te, folder = _data()
    order = _feature_order(tr)
    start = time.perf_counter()
    lines = [
        "# Position term on cascade clicks (issue 21, point 2)",
        "",
        (f"Data: `{folder.name}` ({tr.n_queries} training / {te.n_queries} test queries); "
        f"stop probability {STOP} after each examined document; click probability by grade "
        f"{CLICK_BY_GRADE}; {args.sessions} sessions per query; {args.rounds} rounds "
        f"(31 leaves, learning rate 0.1, k = 10); {args.seeds} seeds per logger.  Reproduce: "
        f"`python experiments/check_position_term.py --seeds {args.seeds} --sessions "
        f"{args.sessions} --rounds {args.rounds} --ranks {' '.join(map(str, args.ranks))}`."),
        "",
        ("`position_term` is ltr's objective (exact sigmoid); `lgb_gam` LightGBM's position GAM. "
        "The two fit the same model (with `sigmoid=\"lightgbm\"` ltr grows LightGBM's trees "
        "exactly, see tests/test_position_term.py), so their difference is the spread of two "
        "near-identical trainings. Learned offsets: mean over seeds, relative to position 1, "
        "next to the true log-examination `log(0.8) (p - 1)`."),
    ]
    for rank in args.ranks:
        feature = int(order[rank - 1])
        arr, mean_offsets = _run(tr, te, feature, args)
        lines += ["", f"## Logger: feature {feature} (rank {rank} by training nDCG@10)", ""]
        lines += _table(arr, mean_offsets, args.seeds)
    elapsed = time.perf_counter() - start
    lines += ["", (f"Wall time {elapsed:.0f} s on {os.cpu_count()} cores "
              f"({platform.processor() or 'cpu'}).")]
    text = "\n".join(lines) + "\n"
    RESULTS.mkdir(exist_ok=True)
    write_atomic(RESULTS / args.out, text)
    print(text)


if __name__ == "__main__":
    main()

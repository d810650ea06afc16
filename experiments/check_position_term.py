"""Check: ltr's position term on cascade clicks vs naive training and LightGBM's position GAM.

The issue-21 cascade setting on the shared LETOR set (LightGBM's lambdarank
example; the committed slice when the shared set is absent):

* a deterministic logger shows every document of a training query, sorted by
  one feature (the single feature with the best training nDCG@10);
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

    python experiments/check_position_term.py            # 5 seeds, ~2-3 min on 2 cores
    python experiments/check_position_term.py --seeds 2  # quicker

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


def _data():
    try:
        folder = letor_full_path()
    except FileNotFoundError:
        folder = letor_slice_path()
    return load_letor(folder / "rank.train"), load_letor(folder / "rank.test"), folder


def _logger_feature(tr) -> int:
    """The single feature whose sorted order has the best training nDCG@10."""
    best, best_j = -1.0, 0
    for j in range(tr.X.shape[1]):
        value = ndcg(tr.y, tr.X[:, j], offsets=tr.offsets, k=10)
        if value > best:
            best, best_j = value, j
    return best_j


def _fit(method: str, X, y, offsets, position, rounds: int, seed: int, jobs: int):
    params = {"num_leaves": 31, "min_data_in_leaf": 20, "learning_rate": 0.1}
    common = dict(num_boost_round=rounds, params=params, random_state=seed, n_jobs=jobs)
    if method == "lgb_gam":
        return train(X, y, offsets, k=10, position=position, **common)
    obj = LambdaRankObjective(k=10, position_term=method == "position_term")
    return train(X, y, offsets, objective=obj,
                 position=position if method == "position_term" else None, **common)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=5)
    parser.add_argument("--sessions", type=int, default=5)
    parser.add_argument("--rounds", type=int, default=100)
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument("--feature", type=int, default=None,
                        help="the logger's feature (default: the best single feature)")
    parser.add_argument("--out", default="position_term.md")
    args = parser.parse_args()

    tr, te, folder = _data()
    feature = _logger_feature(tr) if args.feature is None else args.feature
    depth = int(np.diff(tr.offsets).max())
    examination = (1.0 - STOP) ** np.arange(depth)
    scores: dict[str, list[tuple[float, float]]] = {m: [] for m in METHODS}
    offsets_at: list[np.ndarray] = []
    start = time.perf_counter()
    for seed in range(args.seeds):
        log = simulate_pbm(tr.y.astype(int), offsets=tr.offsets, logging_scores=tr.X[:, feature],
                           examination=examination, click_prob=CLICK_BY_GRADE,
                           n_sessions=args.sessions, random_state=seed)
        X = tr.X[log.row]
        click = log.click.astype(np.float64)
        for method in METHODS:
            y = tr.y[log.row] if method == "oracle" else click
            model = _fit(method, X, y, log.offsets, log.position, args.rounds, seed, args.jobs)
            pred = model.predict(te.X)
            scores[method].append((ndcg(te.y, pred, offsets=te.offsets, k=3),
                                   ndcg(te.y, pred, offsets=te.offsets, k=10)))
            if method == "position_term":
                offsets_at.append(np.asarray(model.position_term["offsets"][:10]))
    elapsed = time.perf_counter() - start

    arr = {m: np.asarray(v) for m, v in scores.items()}
    lines = [
        "# Position term on cascade clicks (issue 21, point 2)",
        "",
        f"Data: `{folder.name}` ({tr.n_queries} training / {te.n_queries} test queries); "
        f"logger sorts by feature {feature}; stop probability {STOP} after each examined "
        f"document; click probability by grade {CLICK_BY_GRADE}; {args.sessions} sessions "
        f"per query; {args.rounds} rounds (31 leaves, learning rate 0.1, k = 10); "
        f"{args.seeds} seeds.  Reproduce: `python experiments/check_position_term.py "
        f"--seeds {args.seeds} --sessions {args.sessions} --rounds {args.rounds} "
        f"--feature {feature}`.",
        "",
        "| method | nDCG@3 | nDCG@10 | nDCG@3 - naive (± SE) | nDCG@3 - lgb_gam (± SE) |",
        "|---|---|---|---|---|",
    ]
    n = args.seeds
    for m in METHODS:
        d_naive = arr[m][:, 0] - arr["naive"][:, 0]
        d_gam = arr[m][:, 0] - arr["lgb_gam"][:, 0]
        se = (lambda d: float(np.std(d, ddof=1) / np.sqrt(n)) if n > 1 else float("nan"))
        lines.append(
            f"| {m} | {arr[m][:, 0].mean():.4f} | {arr[m][:, 1].mean():.4f} | "
            f"{d_naive.mean():+.4f} ± {se(d_naive):.4f} | {d_gam.mean():+.4f} ± {se(d_gam):.4f} |"
        )
    mean_offsets = np.mean(offsets_at, axis=0)
    lines += [
        "",
        "Learned offsets of `position_term` at positions 1-10 (mean over seeds, relative to "
        "position 1; the true log-examination is `log(0.8) * (p - 1)`):",
        "",
        "| position | " + " | ".join(str(p) for p in range(1, 11)) + " |",
        "|---|" + "---|" * 10,
        "| learned b[p] - b[1] | "
        + " | ".join(f"{v - mean_offsets[0]:+.2f}" for v in mean_offsets) + " |",
        "| log(0.8) (p - 1) | "
        + " | ".join(f"{np.log(0.8) * p:+.2f}" for p in range(10)) + " |",
        "",
        f"Wall time {elapsed:.0f} s on {os.cpu_count()} cores ({platform.processor() or 'cpu'}).",
    ]
    text = "\n".join(lines) + "\n"
    RESULTS.mkdir(exist_ok=True)
    write_atomic(RESULTS / args.out, text)
    print(text)


if __name__ == "__main__":
    main()

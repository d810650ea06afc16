"""Study: which position-debiasing method wins, in a PBM and in a cascade click setting (issue 21).

Two settings, ``--seeds`` seeds each (default 5); every method is a
:class:`ltr.LambdaMARTRanker` configured by one dict of estimator keyword
arguments (:data:`METHODS`), trained on the same click log, and scored by nDCG@3
and nDCG@10 on the *true* grades of held-out test queries.

**PBM** (Hu et al. 2019 style): synthetic MSLR-shaped data
(:func:`ltr.synthetic.make_ranking`, 136 features), 2,000 training and 1,000 test
queries; a deterministic logger (LightGBM lambdarank trained on the true grades
of 2 % of the training queries) shows its top 10; examination ``(1/rank)**eta``
for eta = 1 and 2; an examined document of grade g is clicked with probability
``0.1 + 0.9 * (2**g - 1) / 15``; 20 sessions per query.

**Cascade**: every document is shown, in the order of a logger that sorts by
one feature (by default the feature ranked 50th by its training nDCG@10, as in
experiments/check_position_term.py: a weak signal, far from the oracle, so debiasing has
room; ``--logger-rank 1`` takes the best feature, whose order leaves naive training near
the oracle on LETOR's nDCG@3 and debiasing nothing to gain); the user reads from the top, clicks an examined document with
probability 0.4/0.6/0.7/0.8/0.9 by grade 0-4, and after each examined document
(clicked or not) stops with probability 0.2.  On the shared LETOR set (clicks on
its 201 training queries, nDCG on its 50 test queries) and on a synthetic set
(1,000 training / 1,000 test queries of about 15 documents).  Until
``simulate_cascade(abandon=)`` exists the clicks come from the equivalent
position-based model with examination ``0.8**(r-1)`` (:func:`cascade_log`; with
no stop-after-click the marginal examination of rank r is the same).

Lists (one per query and session) without a click are dropped before training:
every pairwise method (ltr's LambdaRank and both engines' methods) gets exactly
zero gradient from them.  The automatic choice gets the full log (its
propensity estimate needs the click-less sessions), and so do the propensity
estimates.

Methods (:data:`METHODS`; one unavailable in the installed ltr is reported
"n/a", detected from ``LambdaMARTRanker().get_params()`` and the estimator's
own parameter validation): naive click training; ltr's Unbiased LambdaMART with
the paper's pair cost and with the reversed-pair cost; ltr's position term;
pair debiasing plus position term; ltr's objective with propensities estimated
from the log (cascade model, one per row); XGBoost's ``lambdarank_unbiased``;
LightGBM's position GAM; ``unbiased="auto"``; the oracle (true grades).

The report gives, per setting, means with standard errors over seeds, paired
differences (vs naive, XGBoost's ``lambdarank_unbiased`` and LightGBM's GAM)
with the standard error of the paired difference, the learned biases against
the truth per position, and the issue's bars marked pass/fail.

Usage::

    python experiments/study_position_bias.py              # the committed results (~25 min, 2 cores)
    python experiments/study_position_bias.py --quick      # a smoke run (1 seed, small)
    python experiments/study_position_bias.py --report-only  # rewrite the .md/README from the .json
    python experiments/study_position_bias.py --settings pbm --methods naive lgb_gam

Writes ``experiments/results/position_bias.md`` and ``position_bias.json`` and
replaces the table between the ``position-bias-study`` markers in README.md.
Progress goes to stderr.
"""

from __future__ import annotations

import argparse
import hashlib
import inspect
import json
import os
import platform
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")

import numpy as np

from ltr import LambdaMARTRanker, load_letor, ndcg
from ltr._io import write_atomic
from ltr.clicks import simulate_cascade, simulate_pbm
from ltr.synthetic import make_ranking
from ltr.testing import letor_full_path, letor_slice_path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
RESULTS = HERE / "results"
KS = (3, 10)
SHOWN_POSITIONS = 10  # positions reported in the bias tables
PBM_CLICK = [0.1 + 0.9 * (2**g - 1) / 15 for g in range(5)]
CASCADE_CLICK = [0.4, 0.6, 0.7, 0.8, 0.9]
CASCADE_ABANDON = 0.2
README_START = "<!-- position-bias-study:start (written by experiments/study_position_bias.py) -->"
README_END = "<!-- position-bias-study:end -->"


@dataclass(frozen=True)
class Method:
    """One trained method: estimator keyword arguments plus how it is fitted."""

    kwargs: dict[str, Any]
    family: str  # "ltr" (ltr's own objective), "engine", "auto", "reference"
    label: str
    grades: bool = False  # train on the true grades (the oracle)
    fit_propensity: bool = False  # fit(..., propensity=<per-row cascade estimate>)
    true_propensity: bool = False  # fit(..., propensity=<the simulator's examination per row>)
    full_log: bool = False  # gets the click-less lists too


#: The methods, by name: estimator kwargs in one dict each.  The lead switches a method on
#: by merging the helper that adds its parameter; nothing here changes.
METHODS: dict[str, Method] = {
    "naive": Method({"objective": "lambdarank"}, "ltr", "naive (clicks as labels)"),
    "pair_loss": Method({"unbiased": True, "bias_cost": "pair_loss"}, "ltr",
                        "ltr unbiased, paper's cost"),
    "reversed_pair_loss": Method({"unbiased": True, "bias_cost": "reversed_pair_loss"}, "ltr",
                                 "ltr unbiased, reversed-pair cost"),
    "position_term": Method({"objective": "lambdarank", "position_term": True}, "ltr",
                            "ltr position term"),
    "pair+position_term": Method({"unbiased": True, "position_term": True}, "ltr",
                                 "ltr unbiased + position term"),
    "propensity": Method({"unbiased": True}, "ltr", "ltr, estimated cascade propensities",
                         fit_propensity=True),
    "xgb_unbiased": Method({"engine": "xgboost", "objective": "native", "unbiased": True},
                           "engine", "XGBoost lambdarank_unbiased"),
    "lgb_gam": Method({"engine": "lightgbm", "objective": "native", "unbiased": True},
                      "engine", "LightGBM position GAM"),
    "auto": Method({"unbiased": "auto"}, "auto", 'unbiased="auto"', full_log=True),
    "oracle": Method({"objective": "lambdarank"}, "reference", "oracle (true grades)",
                     grades=True),
    "true_propensity": Method({"unbiased": True}, "reference",
                              "ltr, the simulator's true propensities (not known from clicks)",
                              true_propensity=True),
}
#: Keyword arguments that name today's only behaviour: dropped (not "n/a") when the installed
#: estimator lacks the parameter (before ``bias_cost`` existed, the cost was the paper's).
LEGACY = {("bias_cost", "pair_loss")}
#: Candidates of the automatic choice (its bar: within 0.005 of the best of these).
AUTO_CANDIDATES = ("naive", "reversed_pair_loss", "position_term", "pair+position_term")


def method_kwargs(name: str) -> tuple[dict[str, Any] | None, str]:
    """Return ``(estimator kwargs, "")`` or ``(None, why it is n/a)`` for a method."""
    m = METHODS[name]
    params = LambdaMARTRanker().get_params()
    kw = dict(m.kwargs)
    for key, value in m.kwargs.items():
        if key not in params:
            if (key, value) in LEGACY:
                kw.pop(key)
                continue
            return None, f"LambdaMARTRanker has no parameter {key!r}"
    try:
        LambdaMARTRanker(**kw)._validate_params()
    except (TypeError, ValueError) as exc:
        return None, f"LambdaMARTRanker rejects {kw}: {str(exc).splitlines()[0]}"
    if m.fit_propensity:
        import ltr.clicks

        if "propensity" not in inspect.signature(LambdaMARTRanker.fit).parameters:
            return None, "LambdaMARTRanker.fit takes no per-row propensity"
        if not hasattr(ltr.clicks, "estimate_propensity_cascade"):
            return None, "ltr.clicks has no estimate_propensity_cascade"
    return kw, ""


def uses_position(kw: dict[str, Any]) -> bool:
    """Whether a method's fit needs the display positions."""
    return bool(kw.get("unbiased")) or bool(kw.get("position_term"))


# --------------------------------------------------------------------------- #
# Data and clicks                                                              #
# --------------------------------------------------------------------------- #


@dataclass
class Cell:
    """One setting and seed: the data, the click log and the truth."""

    setting: str
    seed: int
    train: Any
    test: Any
    row: np.ndarray  # log impressions: data row, position, click, list id
    position: np.ndarray
    click: np.ndarray
    lists: np.ndarray
    truth: np.ndarray  # true examination per position 1..SHOWN_POSITIONS, relative to 1
    note: str = ""
    n_sessions: int = 1
    propensity_rows: np.ndarray | None = None
    propensity_fit: dict[str, Any] = field(default_factory=dict)

    def log(self, full: bool) -> tuple[np.ndarray, ...]:
        """``(rows, group sizes, positions, clicks, propensities)``; click-less lists dropped."""
        keep = np.ones(self.row.size, dtype=bool)
        if not full:
            clicked = np.bincount(self.lists, weights=self.click, minlength=self.lists.max() + 1)
            keep = clicked[self.lists] > 0
        lists = self.lists[keep]
        _, sizes = np.unique(lists, return_counts=True)  # lists are contiguous and sorted
        prop = None if self.propensity_rows is None else self.propensity_rows[keep]
        return self.row[keep], sizes, self.position[keep], self.click[keep], prop


def _progress(msg: str, t0: float) -> None:
    print(f"[{time.perf_counter() - t0:7.1f}s] {msg}", file=sys.stderr, flush=True)


def _split(data: Any, n_train: int, seed: int) -> tuple[Any, Any]:
    perm = np.random.default_rng(seed).permutation(data.n_queries)
    return data.subset(np.sort(perm[:n_train])), data.subset(np.sort(perm[n_train:]))


def pbm_logger(train: Any, seed: int, fraction: float, n_jobs: int) -> np.ndarray:
    """A deterministic production ranker: LightGBM lambdarank on a few labelled queries."""
    rng = np.random.default_rng(10_000 + seed)
    n = max(3, round(fraction * train.n_queries))
    small = train.subset(np.sort(rng.choice(train.n_queries, n, replace=False)))
    model = LambdaMARTRanker(objective="native", n_estimators=50, num_leaves=15,
                             min_child_samples=5, k=10, n_jobs=n_jobs, random_state=seed)
    model.fit(small.X, small.y, group=np.diff(small.offsets))
    return model.predict(train.X)


def logger_feature(data: Any, rank: int) -> int:
    """The feature ranked ``rank`` (1 = best) by the training nDCG@10 of its descending order.

    The cascade setting's logger sorts by it ("a production ranker sorting by one
    signal"); the same rule as experiments/check_position_term.py (stable order, every
    feature counted).
    """
    values = [float(ndcg(data.y, np.asarray(data.X[:, j], dtype=np.float64),
                         offsets=data.offsets, k=10)) for j in range(data.X.shape[1])]
    order = np.argsort(-np.asarray(values), kind="stable")
    return int(order[min(rank, order.size) - 1])


def cascade_log(labels: np.ndarray, offsets: np.ndarray, scores: np.ndarray, n_sessions: int,
                seed: int) -> tuple[Any, str]:
    """The issue's cascade clicks (abandon 0.2 after each examined document, no stop-after-click).

    The one function to swap at merge: it uses ``simulate_cascade(abandon=)`` when the
    installed ltr has it, else the PBM with examination ``0.8**(r-1)`` (the same marginal
    examination, since without stop-after-click the clicks do not change who reads on).
    """
    if "abandon" in inspect.signature(simulate_cascade).parameters:
        log = simulate_cascade(labels, offsets=offsets, logging_scores=scores,
                               click_prob=CASCADE_CLICK, stop_prob=[0.0] * len(CASCADE_CLICK),
                               abandon=CASCADE_ABANDON, n_sessions=n_sessions, random_state=seed)
        return log, f"simulate_cascade(abandon={CASCADE_ABANDON})"
    longest = int(np.diff(offsets).max())
    exam = (1.0 - CASCADE_ABANDON) ** np.arange(longest)
    log = simulate_pbm(labels, offsets=offsets, logging_scores=scores, examination=exam,
                       click_prob=CASCADE_CLICK, n_sessions=n_sessions, random_state=seed)
    return log, f"emulated: simulate_pbm(examination={1 - CASCADE_ABANDON}**(r-1))"


def _cached_log(cache: Path | None, key: dict[str, Any], make: Any) -> tuple[dict, str]:
    """Return the log arrays (and the simulator note), from the cache when there."""
    digest = hashlib.sha1(json.dumps(key, sort_keys=True).encode()).hexdigest()[:16]
    path = None if cache is None else cache / f"log-{digest}.npz"
    if path is not None and path.exists():
        with np.load(path) as z:
            arrays = {k: z[k] for k in z.files if k != "note"}
            return arrays, str(z["note"])
    log, note = make()
    arrays = {"row": log.row, "position": log.position, "click": log.click,
              "lists": np.repeat(np.arange(log.offsets.size - 1), np.diff(log.offsets))}
    if path is not None:
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_suffix(".tmp.npz")
        np.savez(tmp, note=np.array(note), **arrays)
        os.replace(tmp, path)
    return arrays, note


PROPENSITY_FLOOR = 0.01


def _estimate_cascade_propensity(cell: Cell) -> None:
    """Per-row cascade propensities of the full log, when ltr has the estimator."""
    import ltr.clicks

    estimate = getattr(ltr.clicks, "estimate_propensity_cascade", None)
    if estimate is None:
        return
    from ltr.clicks import ClickLog

    lists = cell.lists
    offsets = np.concatenate([[0], np.cumsum(np.bincount(lists))]).astype(np.int64)
    n_s = cell.n_sessions
    query = lists // n_s
    log = ClickLog(offsets, query, lists % n_s, cell.row, cell.position, cell.click,
                   np.zeros_like(cell.row), n_s, "cascade")
    est = estimate(log)
    prop = np.asarray(getattr(est, "propensity", est), dtype=np.float64)
    if prop.shape != cell.row.shape:
        raise ValueError(f"estimate_propensity_cascade returned shape {prop.shape}, "
                         f"expected one per impression {cell.row.shape}")
    # A row below a skipped document judged fully attractive gets exactly 0 (it has no click);
    # the objective takes propensities in (0, 1]: floor them, which also caps weights at 100.
    cell.propensity_rows = np.clip(prop, PROPENSITY_FLOOR, 1.0)
    cell.propensity_fit = {key: np.asarray(getattr(est, key), dtype=np.float64)
                           [:SHOWN_POSITIONS].tolist()
                           for key in ("continue_after_click", "continue_after_skip")
                           if np.ndim(getattr(est, key, None)) == 1}


def pbm_cells(seed: int, args: argparse.Namespace, t0: float):
    """Yield the PBM cells of one seed (one per eta), data and logger shared."""
    data = make_ranking(args.pbm_train + args.pbm_test, n_features=args.features,
                        random_state=seed)
    train, test = _split(data, args.pbm_train, seed)
    logger = pbm_logger(train, seed, args.logger_fraction, args.n_jobs)
    for eta in args.eta:
        key = {"setting": "pbm", "eta": eta, "seed": seed, "train": args.pbm_train,
               "test": args.pbm_test, "features": args.features, "sessions": args.pbm_sessions,
               "fraction": args.logger_fraction, "shown": 10,
               "logger": hashlib.sha1(logger.tobytes()).hexdigest()}
        exam = (1.0 / np.arange(1, 11)) ** eta

        def make(exam=exam):
            log = simulate_pbm(train.y.astype(np.int64), offsets=train.offsets,
                               logging_scores=logger, examination=exam, click_prob=PBM_CLICK,
                               n_sessions=args.pbm_sessions, random_state=seed)
            return log, "simulate_pbm, top 10 shown"

        arrays, note = _cached_log(args.cache, key, make)
        top = arrays["position"] <= 10
        cell = Cell(f"PBM eta={eta:g}", seed, train, test, arrays["row"][top],
                    arrays["position"][top], arrays["click"][top].astype(np.float64),
                    arrays["lists"][top], exam / exam[0], note, args.pbm_sessions)
        _progress(f"{cell.setting} seed {seed}: {cell.row.size} impressions, click rate "
                  f"{cell.click.mean():.3f}", t0)
        yield cell


def cascade_cells(seed: int, args: argparse.Namespace, t0: float):
    """Yield the cascade cells of one seed (LETOR, synthetic)."""
    for data_name in args.cascade_data:
        if data_name == "letor":
            root = letor_full_path() or letor_slice_path()
            train, test = load_letor(root / "rank.train"), load_letor(root / "rank.test")
        else:
            data = make_ranking(args.cascade_train + args.cascade_test, n_features=args.features,
                                mean_docs=args.cascade_docs, max_docs=4 * args.cascade_docs,
                                random_state=20_000 + seed)
            train, test = _split(data, args.cascade_train, seed)
        feature = (logger_feature(train, args.logger_rank) if args.logger_feature is None
                   else args.logger_feature)
        scores = np.nan_to_num(np.asarray(train.X[:, feature], dtype=np.float64), nan=-1e300)
        key = {"setting": "cascade", "data": data_name, "seed": seed, "feature": feature,
               "n_rows": train.n_rows, "sessions": args.cascade_sessions,
               "train": args.cascade_train, "test": args.cascade_test,
               "docs": args.cascade_docs, "features": args.features,
               "labels": hashlib.sha1(train.y.tobytes()).hexdigest(),
               "simulator": "abandon" in inspect.signature(simulate_cascade).parameters}

        def make(train=train, scores=scores):
            return cascade_log(train.y.astype(np.int64), train.offsets, scores,
                               args.cascade_sessions, seed)

        arrays, note = _cached_log(args.cache, key, make)
        truth = (1.0 - CASCADE_ABANDON) ** np.arange(SHOWN_POSITIONS)
        cell = Cell(f"cascade {data_name}", seed, train, test, arrays["row"],
                    arrays["position"], arrays["click"].astype(np.float64), arrays["lists"],
                    truth, f"{note}; logger sorts by feature {feature}", args.cascade_sessions)
        _progress(f"{cell.setting} seed {seed}: {cell.row.size} impressions, click rate "
                  f"{cell.click.mean():.3f}, logger feature {feature}", t0)
        yield cell


# --------------------------------------------------------------------------- #
# Training and scoring                                                         #
# --------------------------------------------------------------------------- #


def learned_biases(est: Any) -> dict[str, list[float]]:
    """Every per-position table the fitted model learned (t+/t-, offsets, XGBoost's ti+/tj-)."""
    out: dict[str, list[float]] = {}
    model = est.model_
    state = model.position_bias or {}
    for key, value in state.items():
        arr = np.asarray(value, dtype=object)
        if arr.ndim == 1 and arr.size > 1:
            try:
                out[key] = np.asarray(value, dtype=np.float64)[:SHOWN_POSITIONS].tolist()
            except (TypeError, ValueError):
                pass
    term = getattr(model, "position_term", None)  # ltr's position term: {"offsets": [...]}
    if isinstance(term, dict):
        term = term.get("offsets")
    if term is not None and np.ndim(term) == 1 and np.size(term) > 0:
        b = np.asarray(term, dtype=np.float64)
        out["offset b_p - b_1"] = (b - b[0])[:SHOWN_POSITIONS].tolist()
    if model.engine == "xgboost" and est.get_params().get("objective") == "native":
        objective = json.loads(model.booster.save_config())["learner"]["objective"]
        for key in ("ti+", "tj-"):
            if key in objective:
                out[key] = [float(v) for v in objective[key][:SHOWN_POSITIONS]]
    return out


def _choice(est: Any) -> str | None:
    chosen = getattr(est, "debiasing_", None)
    if chosen is None:
        return None
    for attr in ("chosen", "choice", "best", "method"):
        if hasattr(chosen, attr):
            return str(getattr(chosen, attr))
    return str(chosen)


def run_method(name: str, kw: dict[str, Any], cell: Cell, args: argparse.Namespace,
               X_cache: dict) -> dict[str, Any]:
    """Train one method on the cell's log (or grades) and score the test queries."""
    m = METHODS[name]
    common = {"n_estimators": args.rounds, "learning_rate": args.learning_rate,
              "num_leaves": args.num_leaves, "max_depth": args.max_depth, "k": 10,
              "n_jobs": args.n_jobs, "random_state": cell.seed}
    est = LambdaMARTRanker(**{**common, **kw})
    t, cpu = time.perf_counter(), time.process_time()
    if m.grades:
        est.fit(cell.train.X, cell.train.y, group=np.diff(cell.train.offsets))
    else:
        rows, sizes, pos, click, prop = cell.log(full=m.full_log)
        if m.full_log not in X_cache:
            X_cache[m.full_log] = cell.train.X[rows]
        fit_kw: dict[str, Any] = {"group": sizes}
        if uses_position(kw):
            fit_kw["position"] = pos
        if m.fit_propensity:
            fit_kw["propensity"] = prop
        if m.true_propensity:  # the examination the simulator used, per shown row
            fit_kw["propensity"] = (cell.truth[pos - 1] if cell.setting.startswith("PBM")
                                    else (1.0 - CASCADE_ABANDON) ** (pos - 1.0))
            fit_kw["position"] = pos
        est.fit(X_cache[m.full_log], click, **fit_kw)
    seconds, cpu = time.perf_counter() - t, time.process_time() - cpu
    scores = est.predict(cell.test.X)
    has = np.maximum.reduceat(cell.test.y, cell.test.offsets[:-1]) > 0
    row: dict[str, Any] = {"setting": cell.setting, "seed": cell.seed, "method": name,
                           "seconds": seconds, "cpu_seconds": cpu}
    for k in KS:  # queries without a relevant document have no nDCG: left out
        row[f"ndcg@{k}"] = float(np.mean(ndcg(cell.test.y, scores, offsets=cell.test.offsets,
                                              k=k, reduce=None)[has]))
    row["biases"] = learned_biases(est)
    if m.family == "auto":
        row["choice"] = _choice(est)
    return row


def run(args: argparse.Namespace, checkpoint: Any = None) -> dict[str, Any]:
    """Run every (setting, seed, method); return the results dictionary.

    ``checkpoint(result)``, when given, is called after every cell with the results so far
    (``result["complete"]`` False until the end), so a stopped run leaves its figures.
    """
    t0 = time.perf_counter()
    available: dict[str, dict[str, Any]] = {}
    unavailable: dict[str, str] = {}
    for name in args.methods:
        kw, why = method_kwargs(name)
        if kw is None:
            unavailable[name] = why
        else:
            available[name] = kw
    for name, why in unavailable.items():
        _progress(f"{name}: n/a ({why})", t0)
    rows: list[dict[str, Any]] = []
    errors: list[dict[str, Any]] = []
    oracle_memo: dict[tuple, dict[str, Any]] = {}
    cells_info: dict[str, dict[str, Any]] = {}
    for seed in range(args.first_seed, args.first_seed + args.seeds):
        generators = []
        if "pbm" in args.settings:
            generators.append(pbm_cells(seed, args, t0))
        if "cascade" in args.settings:
            generators.append(cascade_cells(seed, args, t0))
        for gen in generators:
            for cell in gen:
                if "propensity" in available:
                    try:
                        _estimate_cascade_propensity(cell)
                    except Exception as exc:  # noqa: BLE001 - a study records and goes on
                        errors.append({"setting": cell.setting, "seed": seed,
                                       "method": "propensity", "error": repr(exc)})
                        _progress(f"  propensity estimate failed: {exc!r}", t0)
                info = cells_info.setdefault(cell.setting, {
                    "truth": cell.truth.tolist(), "notes": [], "click_rate": [],
                    "impressions": [], "estimated_propensity": []})
                info["notes"].append(cell.note)
                info["click_rate"].append(float(cell.click.mean()))
                info["impressions"].append(int(cell.row.size))
                if cell.propensity_rows is not None:
                    per_pos = [float(np.mean(cell.propensity_rows[cell.position == p]))
                               for p in range(1, SHOWN_POSITIONS + 1)]
                    info["estimated_propensity"].append(per_pos)
                    info.setdefault("cascade_fit", []).append(cell.propensity_fit)
                X_cache: dict = {}
                for name, kw in available.items():
                    if METHODS[name].fit_propensity and cell.propensity_rows is None:
                        continue
                    memo_key = ("PBM" if cell.setting.startswith("PBM") else cell.setting, seed)
                    try:
                        if METHODS[name].grades and memo_key in oracle_memo:
                            # trained on the grades: the same model for every click setting
                            # of this data and seed (PBM eta=1 and eta=2)
                            r = {**oracle_memo[memo_key], "setting": cell.setting}
                        else:
                            r = run_method(name, kw, cell, args, X_cache)
                        if METHODS[name].grades:
                            oracle_memo[memo_key] = r
                    except Exception as exc:  # noqa: BLE001 - a study records and goes on
                        errors.append({"setting": cell.setting, "seed": seed, "method": name,
                                       "error": repr(exc)})
                        _progress(f"  {cell.setting} seed {seed} {name}: FAILED {exc!r}", t0)
                        continue
                    rows.append(r)
                    _progress(f"  {cell.setting} seed {seed} {name}: nDCG@3 {r['ndcg@3']:.4f} "
                              f"@10 {r['ndcg@10']:.4f} ({r['seconds']:.1f}s, "
                              f"cpu {r['cpu_seconds']:.1f}s)"
                              + (f" chose {r['choice']}" if r.get("choice") else ""), t0)
                if checkpoint is not None:
                    checkpoint(_result(rows, errors, cells_info, unavailable, args, t0, False))
    return _result(rows, errors, cells_info, unavailable, args, t0, True)


def _result(rows: list, errors: list, cells_info: dict, unavailable: dict,
            args: argparse.Namespace, t0: float, complete: bool) -> dict[str, Any]:
    return {"rows": rows, "errors": errors, "cells": cells_info, "unavailable": unavailable,
            "methods": {n: {"kwargs": METHODS[n].kwargs, "label": METHODS[n].label,
                            "family": METHODS[n].family} for n in args.methods},
            "auto_candidates": list(AUTO_CANDIDATES), "argv": sys.argv[1:],
            "config": {k: (str(v) if isinstance(v, Path) else v) for k, v in vars(args).items()},
            "seconds": time.perf_counter() - t0, "complete": complete,
            "seeds_done": sorted({r["seed"] for r in rows}),
            "machine": f"{platform.processor() or platform.machine()}, {os.cpu_count()} cores"}


def merge(result: dict[str, Any], other: dict[str, Any]) -> None:
    """Add another run's rows to *result*: its (setting, seed, method) rows replace ours.

    Another run of the same settings on other seeds (``--first-seed``) adds those seeds;
    a run of further methods on the same seeds (``--methods auto``) adds those methods.
    """
    theirs = {(r["setting"], r["seed"], r["method"]) for r in other["rows"]}
    known = {(r["setting"], r["seed"]) for r in result["rows"]}
    new_seeds = {(r["setting"], r["seed"]) for r in other["rows"]} - known
    result["rows"] = [r for r in result["rows"]
                      if (r["setting"], r["seed"], r["method"]) not in theirs]
    result["rows"] += other["rows"]
    result["errors"] = result.get("errors", []) + other.get("errors", [])
    result["methods"] = {**result.get("methods", {}), **other.get("methods", {})}
    if other.get("auto_candidates"):
        result["auto_candidates"] = other["auto_candidates"]
    if new_seeds:  # per-seed cell facts (impressions, estimated propensities) of new seeds
        for setting, info in other["cells"].items():
            mine = result["cells"].setdefault(setting, {
                **info, **{k: [] for k, v in info.items() if isinstance(v, list) and k != "truth"}})
            for key, value in info.items():
                if key != "truth" and isinstance(value, list):
                    mine[key] = mine.get(key, []) + value
    result["seeds_done"] = sorted({r["seed"] for r in result["rows"]})
    result["seconds"] += other["seconds"]
    result["complete"] = bool(result.get("complete", True) and other.get("complete", True))
    result["config"]["seeds"] = len(result["seeds_done"])
    result["argv"] = [*result.get("argv", []), "+", *other.get("argv", [])]


def write_readme(table: str, path: Path = ROOT / "README.md") -> bool:
    """Replace the table between the README's study markers; False when they are missing."""
    text = path.read_text(encoding="utf-8")
    start, end = text.find(README_START), text.find(README_END)
    if start < 0 or end < start:
        return False
    new = text[: start + len(README_START)] + "\n" + table + "\n" + text[end:]
    if new != text:
        write_atomic(path, new)
    return True


def write_outputs(result: dict[str, Any], out: Path, readme: bool, quiet: bool = False) -> None:
    """Write the .json and .md results (and the README table)."""
    sys.path.insert(0, str(HERE))
    from position_bias_report import bars, markdown, readme_table

    result["bars"] = bars(result)
    out.parent.mkdir(parents=True, exist_ok=True)
    write_atomic(out.with_suffix(".json"), json.dumps(result, indent=1) + "\n")
    write_atomic(out, markdown(result) + "\n")
    if not quiet:
        print(markdown(result))
    if readme and not write_readme(readme_table(result)):
        print(f"README.md has no {README_START!r} marker: table not written", file=sys.stderr)


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true",
                        help="smoke run: 1 seed, 20 rounds, small data; writes nothing")
    parser.add_argument("--report-only", action="store_true",
                        help="rewrite the .md and the README table from the .json")
    parser.add_argument("--seeds", type=int, default=5)
    parser.add_argument("--first-seed", type=int, default=0,
                        help="run seeds first..first+seeds-1 (split a run; join with --merge)")
    parser.add_argument("--merge", nargs="+", type=Path, default=[],
                        help="with --report-only: add the results of these .json files")
    parser.add_argument("--settings", nargs="+", default=["pbm", "cascade"],
                        choices=["pbm", "cascade"])
    parser.add_argument("--methods", nargs="+", default=list(METHODS), choices=list(METHODS))
    parser.add_argument("--eta", nargs="+", type=float, default=[1.0, 2.0])
    parser.add_argument("--cascade-data", nargs="+", default=["letor", "synthetic"],
                        choices=["letor", "synthetic"])
    parser.add_argument("--rounds", type=int, default=100)
    parser.add_argument("--learning-rate", type=float, default=0.1)
    parser.add_argument("--num-leaves", type=int, default=31)
    parser.add_argument("--max-depth", type=int, default=6)
    parser.add_argument("--n-jobs", type=int, default=2)
    parser.add_argument("--features", type=int, default=136,
                        help="features of the synthetic sets (MSLR has 136)")
    parser.add_argument("--pbm-train", type=int, default=2000)
    parser.add_argument("--pbm-test", type=int, default=1000)
    parser.add_argument("--pbm-sessions", type=int, default=20)
    parser.add_argument("--logger-fraction", type=float, default=0.02)
    parser.add_argument("--cascade-train", type=int, default=1000)
    parser.add_argument("--cascade-test", type=int, default=1000)
    parser.add_argument("--cascade-docs", type=int, default=15,
                        help="mean documents per synthetic cascade query")
    parser.add_argument("--cascade-sessions", type=int, default=10)
    parser.add_argument("--logger-feature", type=int, default=None,
                        help="cascade logger's feature (default: by --logger-rank)")
    parser.add_argument("--logger-rank", type=int, default=50,
                        help="cascade logger: the feature ranked so by its training nDCG@10 "
                        "(1 = the best feature)")
    parser.add_argument("--cache", type=Path, default=HERE / "_out" / "position_bias_cache",
                        help="folder caching the click logs per seed ('' for none)")
    parser.add_argument("--no-readme", action="store_true", help="leave README.md alone")
    parser.add_argument("--out", type=Path, default=RESULTS / "position_bias.md")
    args = parser.parse_args(argv)
    if str(args.cache) in ("", "."):
        args.cache = None
    if args.quick:
        args.seeds, args.rounds, args.features = 1, 20, 40
        args.pbm_train, args.pbm_test, args.pbm_sessions = 300, 200, 10
        args.cascade_train, args.cascade_test, args.cascade_sessions = 200, 200, 5
    return args


def main(argv: list[str] | None = None) -> None:
    args = parse_args(argv)
    if args.report_only:
        result = json.loads(args.out.with_suffix(".json").read_text())
        for path in args.merge:
            merge(result, json.loads(path.read_text()))
        write_outputs(result, args.out, not args.no_readme)
        return
    if args.quick:
        sys.path.insert(0, str(HERE))
        from position_bias_report import markdown

        print(markdown(run(args)))
        return
    result = run(args, checkpoint=lambda partial: write_outputs(partial, args.out, False,
                                                                quiet=True))
    write_outputs(result, args.out, not args.no_readme)


if __name__ == "__main__":
    main()

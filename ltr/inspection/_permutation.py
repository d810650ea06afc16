r"""Permutation feature importance measured as ΔnDCG, query-aware.

The importance of a feature (or of a named group of features) is the drop of
nDCG@k when its column is shuffled:

.. math::

    \mathrm{imp}_{j,r} = \mathrm{nDCG@k}(y, f(X)) - \mathrm{nDCG@k}(y, f(X^{(j,r)}))

where :math:`X^{(j,r)}` is ``X`` with column ``j`` permuted by the ``r``-th
row permutation.  nDCG is :func:`ltr.metrics.ndcg` averaged over queries, with
any of its conventions (``gain=``, ``ties=``, ``convention=``, ...).

With ``strategy="global"`` the permutations are exactly the ones
:func:`sklearn.inspection.permutation_importance` draws for the same
``random_state`` (one seed drawn once, every column re-seeded with it and its
index array shuffled in place once per repeat), so the numbers equal sklearn's
run with a scorer computing the same grouped nDCG.

Speed: ``X`` is never copied per feature and repeat.  For models whose
prediction of a row depends only on that row (LightGBM and XGBoost boosters and
their scikit-learn wrappers, :class:`ltr.engines.RankingModel`,
:class:`ltr.LambdaMARTRanker`), every row keeps its baseline score unless it
can change, which is bitwise what a full prediction would give:

* numerical trees (LightGBM and XGBoost, missing values included): the leaf
  of every row in every tree is cached once (compact integers), with the
  range of each feature's values that keeps all of the row's paths.  For a
  permuted column, only the rows whose new value leaves that range are looked
  at, and only the trees whose path it leaves are walked, from the node on the
  column along the row's cached path.  The
  walks read integer threshold codes of the values (each node's decision is
  branch-free and exact for the engine's comparison and missing rules).  A
  row that reaches another leaf is re-summed over all trees in the engine's
  order (LightGBM: float64 from 0; XGBoost: float32 from ``base_score``), so
  its score is bitwise the engine's.  nDCG@k looks only at each query's top
  k, so a changed row whose score provably stays below its query's k-th score
  (its baseline score plus the most the feature can add, plus the engine's
  rounding, below the k-th largest of the rows' lowest possible scores) is
  not re-walked: it is given that bound, which keeps it out of the top k as
  its exact score would (not with ``segments``, which cut queries into
  shorter lists).  This is used only when re-summing the
  cached leaves reproduces the model's baseline predictions bitwise (every
  tree, or those up to the best iteration);
* otherwise (categorical or linear trees, dart, a transformed output such as
  a logistic objective's): the rows that reach another leaf (LightGBM) or
  whose value crosses a split threshold (XGBoost), or whose value changed
  (categorical or linear trees), are re-predicted with the engine's threaded
  native ``predict``.  The result's ``prediction`` says which path ran, and
  why.

A small job (rows x repeats x features x trees under ``_SMALL_WORK``, about half
a second of the engine's prediction) skips both: every permuted set is predicted
in full by the engine, one call per feature, which the result reports as
``"full predict (small job)"``.  The scores are the same bitwise, and the
rescoring kernels would take longer to compile on a first run than the job.

A feature the model never splits on costs nothing and scores exactly 0.  Other
models are predicted in full from one working buffer per worker: the column is
permuted, the model is called, the column is restored.

The engines' TreeSHAP contributions and their global and per-query summaries
(:func:`contributions`, :func:`global_contributions`, :func:`query_contributions`)
live in :mod:`ltr.inspection` and are re-exported here.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import numba
import numpy as np

from ltr._compat import import_tqdm
from ltr._validation import (
    check_int,
    check_n_jobs,
    check_progress,
)
from ltr.groups import resolve_groups
from ltr.inspection._inputs import (
    _check_k,
    _check_max_queries,
    _check_random_state,
    _check_X,
    _global_permutations,
    _prepare_ndcg_options,
    _resolve_features,
    _resolve_model,
    _within_query_permutations,
)
from ltr.inspection._result import PermutationImportance
from ltr.inspection._tree_changes import (
    _KERNEL_LOCK,
    _ChangeDetector,
    _ExactRescorer,
)

__all__ = ["PermutationImportance", "permutation_importance"]

_STRATEGIES = ("global", "within_query")


#: Row-tree visits (rows x repeats x features x trees) below which the engine predicts
#: every permuted set in full (about half a second of prediction on two cores): the same
#: scores bitwise, and much cheaper than compiling the rescoring kernels with an empty numba
#: cache (about 3 s), which would then cost more than the whole job.
_SMALL_WORK = 3 * 10**7
#: ... as long as one feature's permuted copies (rows x repeats x columns) stay this small.
_SMALL_BLOCK = 2**22


def _small_job(booster: Any, n_rows: int, n_repeats: int, n_features: int,
               n_columns: int) -> bool:
    """Whether the engine's own predict is the cheaper way to score every permutation."""
    count = getattr(booster, "num_trees", None) or getattr(booster, "num_boosted_rounds", None)
    if not callable(count) or n_rows * n_repeats * n_columns > _SMALL_BLOCK:
        return False
    return n_rows * n_repeats * n_features * int(count()) < _SMALL_WORK


def _in_threads(fn: Callable[[int], Any], items: list[int], n_threads: int) -> Iterator[Any]:
    """Yield ``fn(item)`` for *items* in order, computed by *n_threads* threads.

    A pool of this call's own; on an error the items not started are cancelled.
    """
    with ThreadPoolExecutor(max_workers=n_threads,
                            thread_name_prefix="ltr-importance") as pool:
        futures = [pool.submit(fn, item) for item in items]
        try:
            for future in futures:
                yield future.result()
        finally:
            for future in futures:
                future.cancel()


# --------------------------------------------------------------------------- #
# Public function
# --------------------------------------------------------------------------- #
def permutation_importance(
    model: Any,
    X: Any,
    y: Any,
    *,
    qid: Any,
    k: int | Sequence[int] = 10,
    n_repeats: int = 5,
    strategy: str = "global",
    features: Sequence[str | int] | Mapping[str, Sequence[str | int]] | None = None,
    segments: Any = None,
    max_queries: float | None = None,
    n_jobs: int | None = None,
    random_state: int | np.random.RandomState | None = None,
    progress: bool | None = None,
    feature_names: Sequence[str] | None = None,
    **ndcg_options: Any,
) -> PermutationImportance:
    """Permutation importance of features as the drop of grouped nDCG@k.

    Parameters
    ----------
    model : object
        Anything with ``predict(X) -> scores`` (:class:`ltr.LambdaMARTRanker`,
        ``LGBMRanker``, ``XGBRanker``, a ``Pipeline``, :class:`ltr.engines.RankingModel`),
        a raw ``lightgbm.Booster`` or ``xgboost.Booster`` (wrapped in a
        ``DMatrix``), or a callable ``X -> scores``.
    X : ndarray or DataFrame of shape (n_rows, n_features)
        Features.  DataFrame column names become feature names; models that
        are not LightGBM/XGBoost boosters receive DataFrames with the original
        columns.  ``X`` itself is never modified.
    y : array-like of shape (n_rows,)
        Graded relevance.
    qid : array-like of shape (n_rows,)
        Query id of each row.  Rows need not be sorted by query.
    k : int or list of int, default=10
        nDCG cut-off; with a list, every array of the result gets a leading
        k axis (see :class:`PermutationImportance`).
    n_repeats : int, default=5
        Permutations per feature.
    strategy : {"global", "within_query"}, default="global"
        ``"global"`` shuffles the column across all rows (scikit-learn's
        definition, with identical permutations for the same ``random_state``).
        ``"within_query"`` shuffles only inside each query: it asks how much
        the *ordering inside a query* relies on the feature.  A query-level
        feature (constant inside every query, e.g. query length) is then left
        unchanged and scores exactly 0 by construction, even if the model uses
        it.
    features : list of str/int, or dict of name -> list of str/int, optional
        Evaluate only these columns, or named groups of columns permuted
        together (one row permutation applied to every column of the group).
        Default: every column on its own.
    segments : array-like of shape (n_rows,), optional
        A category per row.  Baseline and ΔnDCG are also reported per segment:
        each query is restricted to its rows of that segment (a query-level
        category therefore gives the mean nDCG of the segment's queries).
    max_queries : int or float, optional
        Evaluate a random subset of whole queries (an int count, or a
        fraction in (0, 1]); rows of a query are never split.
    n_jobs : int, optional
        Threads evaluating features in parallel (each with its own buffer).
        Default: when scores are rescored from cached leaves, numba's thread
        count (each feature's rows rescored by one thread); otherwise one
        worker, since the native predict of LightGBM/XGBoost is itself
        multi-threaded.
    random_state : int, RandomState or None
        Seeds the permutations; the seed drawn from it is stored in ``seed``.
    progress : bool, optional
        tqdm bar over features; default: shown only when stderr is a TTY.
    feature_names : list of str, optional
        Names of the columns of an ndarray ``X`` (default ``x0, x1, ...``).
    **ndcg_options
        Passed to :func:`ltr.metrics.ndcg` (``gain``, ``discount``, ``ties``,
        ``empty``, ``convention``, ...).  Array options with one entry per row
        (e.g. ``doc_ids``) follow the rows.

    Returns
    -------
    PermutationImportance

    Notes
    -----
    Each feature uses the same ``n_repeats`` permutations, generated from
    ``RandomState(seed)`` as scikit-learn does, so with ``strategy="global"``
    the importances equal ``sklearn.inspection.permutation_importance`` with a
    scorer ``lambda est, X, y: ndcg(y, est.predict(X), qid=qid, k=k)``.

    Examples
    --------
    >>> import numpy as np, lightgbm as lgb
    >>> from ltr.inspection import permutation_importance
    >>> rng = np.random.default_rng(0)
    >>> X = rng.normal(size=(200, 3)); qid = np.repeat(np.arange(20), 10)
    >>> y = (X[:, 0] > 0.5).astype(float) + (X[:, 0] > 1.0)
    >>> model = lgb.LGBMRanker(n_estimators=5, verbose=-1).fit(X, y, group=[10] * 20)
    >>> res = permutation_importance(model, X, y, qid=qid, k=5, random_state=0)
    >>> res.importances.shape
    (3, 5)
    >>> bool(res.importances_mean[0] > 0), float(res.importances_mean[2])
    (True, 0.0)
    """
    from ltr.metrics import ndcg

    # ---------------------------------------------------------- validation
    ks, single_k = _check_k(k)
    n_repeats = check_int(n_repeats, "n_repeats", minimum=1)
    if not isinstance(strategy, str) or strategy not in _STRATEGIES:
        raise ValueError(f"strategy must be one of {list(_STRATEGIES)}, got {strategy!r}")
    n_jobs = check_n_jobs(n_jobs)
    show = check_progress(progress)

    is_frame, frame_columns, names, n_rows = _check_X(X, feature_names)
    y_arr = np.asarray(y)
    if y_arr.ndim != 1:
        raise ValueError(f"y must be 1-D (one label per row), got shape {y_arr.shape}")
    if len(y_arr) != n_rows:
        raise ValueError(f"y has {len(y_arr)} rows but X has {n_rows}; they must match")
    if qid is None:
        raise ValueError("qid is required: one query id per row")
    if np.ndim(qid) == 1 and len(qid) != n_rows:
        raise ValueError(f"qid has {len(qid)} entries but X has {n_rows} rows; they must match")
    groups = resolve_groups(n_rows, qid=qid, sort=True)

    feat_names, feat_cols = _resolve_features(features, names)
    model_info = _resolve_model(model, frame_columns, n_jobs)

    seg_arr = None
    if segments is not None:
        seg_arr = np.asarray(segments)
        if seg_arr.ndim != 1 or len(seg_arr) != n_rows:
            raise ValueError(
                f"segments must have one category per row ({n_rows}), got shape {seg_arr.shape}"
            )

    max_q = _check_max_queries(max_queries, groups.n_queries)

    # ---------------------------------------------------------- randomness
    rng, rs_record = _check_random_state(random_state)
    seed = int(rng.randint(np.iinfo(np.int32).max + 1))  # exactly as scikit-learn

    # ---------------------------------------------------------- row selection
    offsets = groups.offsets
    rows: np.ndarray | None = groups.order  # sorted position -> input row
    subset = max_q is not None and max_q < groups.n_queries
    if subset:
        chosen = np.sort(rng.choice(groups.n_queries, size=max_q, replace=False))
        sizes = np.diff(offsets)[chosen]
        starts = offsets[chosen]
        pos = np.concatenate([np.arange(s, s + n) for s, n in zip(starts, sizes)])
        rows = pos if rows is None else rows[pos]
        offsets = np.zeros(len(chosen) + 1, dtype=np.int64)
        np.cumsum(sizes, out=offsets[1:])
    n_eval = int(offsets[-1])

    # ---------------------------------------------------------- data in evaluation order
    frame_path = False
    if is_frame:
        import pandas as pd

        numeric = all(
            pd.api.types.is_numeric_dtype(dt) and not isinstance(dt, pd.CategoricalDtype)
            for dt in X.dtypes
        )
        if model_info.booster is not None and numeric:
            Xs = X.to_numpy()
            Xs = Xs if rows is None else Xs[rows]
        else:
            frame_path = True
            Xs = X if rows is None else X.iloc[rows]
            Xs = Xs.reset_index(drop=True)
    else:
        arr = np.asarray(X)
        Xs = arr if rows is None else arr[rows]
    ys = np.ascontiguousarray(y_arr if rows is None else y_arr[rows], dtype=np.float64)
    opts = _prepare_ndcg_options(dict(ndcg_options), n_rows, rows, groups.n_queries,
                                 chosen if subset else None)

    seg_index = None
    seg_labels = None
    if seg_arr is not None:
        seg_s = seg_arr if rows is None else seg_arr[rows]
        seg_labels_arr, seg_code = np.unique(seg_s, return_inverse=True)
        seg_labels = [s.item() if hasattr(s, "item") else s for s in seg_labels_arr]
        seg_code = seg_code.reshape(-1)
        seg_index = []
        qcode = np.repeat(np.arange(len(offsets) - 1), np.diff(offsets))
        for s in range(len(seg_labels)):
            idx = np.flatnonzero(seg_code == s)  # stays sorted by query, input order inside
            present, counts = np.unique(qcode[idx], return_counts=True)
            off_s = np.zeros(len(counts) + 1, dtype=np.int64)
            np.cumsum(counts, out=off_s[1:])
            seg_opts = dict(opts)
            if seg_opts.get("weights") is not None:
                seg_opts["weights"] = seg_opts["weights"][present]
            if seg_opts.get("doc_ids") is not None:
                seg_opts["doc_ids"] = seg_opts["doc_ids"][idx]
            seg_index.append((idx, off_s, ys[idx], seg_opts))

    def to_model_input(block: Any) -> Any:
        if model_info.takes_frame and not frame_path:
            import pandas as pd

            return pd.DataFrame(block, columns=frame_columns, copy=False)
        return block

    def predict(block: Any) -> np.ndarray:
        out = np.asarray(model_info.predict(to_model_input(block)), dtype=np.float64)
        if out.ndim == 2 and out.shape[1] == 1:
            out = out[:, 0]
        if out.ndim != 1 or len(out) != len(block):
            raise ValueError(
                f"model predictions must be one score per row ({len(block)}), got shape {out.shape}"
            )
        return out

    def evaluate(scores: np.ndarray) -> np.ndarray:
        """NDCG per k, then per segment per k: shape (n_k, 1 + n_segments)."""
        out = np.empty((len(ks), 1 + (len(seg_index) if seg_index else 0)))
        with _KERNEL_LOCK:
            val = ndcg(ys, scores, offsets=offsets, k=list(ks), **opts)
            out[:, 0] = [float(val[kk]) for kk in ks]
            if seg_index:
                for s, (idx, off_s, y_s, o_s) in enumerate(seg_index):
                    v = ndcg(y_s, scores[idx], offsets=off_s, k=list(ks), **o_s)
                    out[:, 1 + s] = [float(v[kk]) for kk in ks]
        return out

    # ---------------------------------------------------------- baseline
    base_scores = predict(Xs)
    base_eval = evaluate(base_scores)

    # ---------------------------------------------------------- permutations (sorted space)
    if strategy == "global":
        if subset or rows is None:
            perms = _global_permutations(n_eval, n_repeats, seed)
        else:
            # sklearn permutes input rows; express the same permutation in sorted order.
            inv = np.empty(n_rows, dtype=np.int64)
            inv[rows] = np.arange(n_rows)
            perms = [inv[c[rows]] for c in _global_permutations(n_eval, n_repeats, seed)]
    else:
        perms = _within_query_permutations(offsets, n_repeats, seed)

    # ---------------------------------------------------------- per-feature work
    row_wise = model_info.booster is not None and not frame_path
    exact: _ExactRescorer | None = None
    perm_rows = np.zeros((0, 0), dtype=np.int64)  # the permutations as one array (cached leaves)
    prediction = "full predict"
    small = row_wise and _small_job(model_info.booster, n_eval, n_repeats, len(feat_cols),
                                    Xs.shape[1])
    if small:
        row_wise = False
        prediction = "full predict (small job)"
    if row_wise:
        Xs = np.ascontiguousarray(Xs)
        exact = _ExactRescorer(Xs, model_info.booster, base_scores)
        if exact.ok:
            prediction = "cached leaves"
            perm_rows = np.ascontiguousarray(np.stack(perms), dtype=np.int64)
        else:
            prediction = f"engine predict of changed rows ({exact.reason})"
            exact = None
    detector = (_ChangeDetector(Xs, model_info.booster) if row_wise and exact is None
                else None)
    # Rows that provably stay below their query's k-th score need no exact score: nDCG at
    # every cut-off asked for is the same (segments restrict queries, so they get none; a
    # cut-off as long as every query has no row below it).
    longest = int(np.max(np.diff(offsets))) if len(offsets) > 1 else 0
    cut = None if seg_index or max(ks) >= longest else (offsets, max(ks))
    if exact is not None and cut is not None:
        exact.prepare_cut()
    local = threading.local()

    def scratch(name: str, make: Callable[[], Any]) -> Any:
        """Return the calling thread's working copy *name*, made by *make* on first use."""
        buf = getattr(local, name, None)
        if buf is None:
            buf = make()
            setattr(local, name, buf)
        return buf

    def buffer() -> Any:
        return scratch("buf", Xs.copy)

    def tiled() -> np.ndarray:
        return scratch("tiled", lambda: np.tile(Xs, (n_repeats, 1)))  # every repeat's rows

    n_out = 1 + (len(seg_index) if seg_index else 0)

    def work(f: int) -> tuple[np.ndarray, int]:
        cols = feat_cols[f]
        res = np.empty((n_repeats, len(ks), n_out))
        if exact is not None:
            # Rescore only rows that reach another leaf, from their cached leaves: bitwise
            # the engine's prediction; the others keep their baseline score.
            rescore = exact.for_columns(cols)
            if rescore is None:
                res[:] = base_eval
                return res, 0
            all_scores, n_changed, n_below = rescore(perm_rows, split_rows=n_workers == 1,
                                                     cut=cut)
            for r in range(n_repeats):
                res[r] = base_eval if n_changed[r] + n_below[r] == 0 else evaluate(all_scores[r])
            return res, int(n_changed.sum())
        if detector is not None:
            # Re-predict only rows whose prediction can change; the others keep their
            # baseline score, bitwise what a full prediction would give.
            n_pred = 0
            changed_rows = detector.for_columns(cols)
            for r, p in enumerate(perms):
                idx = changed_rows(p)
                if idx.size == 0:
                    res[r] = base_eval
                    continue
                block = buffer()[: idx.size]
                np.take(Xs, idx, axis=0, out=block)
                for j in cols:
                    block[:, j] = Xs[p[idx], j]
                scores = base_scores.copy()
                scores[idx] = predict(block)
                n_pred += idx.size
                res[r] = evaluate(scores)
            return res, n_pred
        if small:  # every repeat in one engine call: each row is scored on its own
            block = tiled()
            for r, p in enumerate(perms):
                for j in cols:
                    block[r * n_eval:(r + 1) * n_eval, j] = Xs[p, j]
            scores = predict(block)
            for r in range(n_repeats):  # the original columns back for the next feature
                for j in cols:
                    block[r * n_eval:(r + 1) * n_eval, j] = Xs[:, j]
            for r in range(n_repeats):
                res[r] = evaluate(scores[r * n_eval:(r + 1) * n_eval])
            return res, n_repeats * n_eval
        buf = buffer()
        if frame_path:
            originals = [buf.iloc[:, j].array.copy() for j in cols]  # keeps the dtype
            for r, p in enumerate(perms):
                for j, orig in zip(cols, originals):
                    buf.isetitem(j, orig.take(p))
                res[r] = evaluate(predict(buf))
            for j, orig in zip(cols, originals):
                buf.isetitem(j, orig)
        else:
            for r, p in enumerate(perms):
                for j in cols:
                    buf[:, j] = Xs[p, j]
                res[r] = evaluate(predict(buf))
            for j in cols:
                buf[:, j] = Xs[:, j]
        return res, n_repeats * n_eval

    tqdm = import_tqdm()

    bar = tqdm(
        total=len(feat_cols), desc="permutation importance", unit="feature", disable=not show
    )
    n_workers = 1 if n_jobs is None or n_jobs == 1 or len(feat_cols) == 1 else n_jobs
    if exact is not None and n_jobs is None and len(feat_cols) > 1:
        # Rescoring releases the GIL: features go to numba's thread count of workers,
        # each rescoring its rows alone (one nDCG overlaps another feature's rescoring).
        n_workers = min(numba.get_num_threads(), len(feat_cols))
    try:
        if n_workers == 1:
            results = []
            for f in range(len(feat_cols)):
                results.append(work(f))
                bar.update(1)
        else:
            order = list(range(len(feat_cols)))
            if exact is not None:  # costliest first (trees splitting on it): no long tail
                order.sort(key=lambda f: -exact.work_estimate(feat_cols[f]))
            if n_jobs is not None:  # the user's n_jobs, with joblib's meaning (-1: all cores)
                from joblib import effective_n_jobs

                n_workers = effective_n_jobs(n_workers)
            gen = _in_threads(work, order, n_workers)  # no joblib pool to set up per call
            by_feature: dict[int, tuple[np.ndarray, int]] = {}
            for f, item in zip(order, gen, strict=True):
                by_feature[f] = item
                bar.update(1)
            results = [by_feature[f] for f in range(len(feat_cols))]
    finally:
        bar.close()

    n_rows_predicted = int(sum(n for _, n in results))
    perm_eval = np.stack([res for res, _ in results])  # (n_features, n_repeats, n_k, n_out)
    # importances: baseline minus permuted, k axis first
    delta = base_eval[None, None, :, :] - perm_eval  # (n_feat, n_rep, n_k, n_out)
    importances = np.ascontiguousarray(delta[..., 0].transpose(2, 0, 1))
    seg_base = seg_imp = None
    if seg_index:
        seg_base = base_eval[:, 1:].copy()  # (n_k, n_seg)
        # (n_k, n_seg, n_feat, n_rep)
        seg_imp = np.ascontiguousarray(delta[..., 1:].transpose(2, 3, 0, 1))

    return PermutationImportance(
        _baseline=base_eval[:, 0].copy(),
        _importances=importances,
        feature_names=feat_names,
        feature_columns=[list(c) for c in feat_cols],
        ks=ks,
        single_k=single_k,
        strategy=strategy,
        seed=seed,
        random_state=rs_record,
        n_repeats=n_repeats,
        n_queries=len(offsets) - 1,
        n_rows=n_eval,
        segment_labels=seg_labels,
        _segment_baseline=seg_base,
        _segment_importances=seg_imp,
        ndcg_options={key: v for key, v in ndcg_options.items() if not isinstance(v, np.ndarray)},
        n_rows_predicted=n_rows_predicted,
        prediction=prediction,
    )

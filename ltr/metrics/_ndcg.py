"""nDCG over ragged queries, with every peer's convention made explicit.

The public functions validate their input, resolve a convention into plain
arrays and integers, and hand flat arrays plus query offsets to the numba
kernels in :mod:`ltr.kernels._dcg`.

Conventions differ in five places (each verified against the peer itself in
``tests/test_metrics_peers.py``):

========== ========= ============ ===================== ============== ===================
convention gain      discount     ties                  empty query    other
========== ========= ============ ===================== ============== ===================
lightgbm   2^l - 1   1/log2(i+1)  stable (input order)  1              ideal DCG by label
xgboost    2^l - 1   1/log2(i+1)  stable (input order)  1 (``ndcg@k-``: 0)  scores as float32
sklearn    l         1/log2(i+1)  averaged              0
trec_eval  l         1/log2(i+1)  doc id descending     0
ranx       l         1/log2(i+1)  stable (see below)    0              labels < 1 gain 0
========== ========= ============ ===================== ============== ===================

XGBoost's bare ``ndcg`` metric (no ``@k``) truncates at ``k=32``.
LightGBM and XGBoost add an empty query's value with weight 1 to a weighted
mean (its weight still counts in the denominator).  ranx orders tied scores
with numba's quicksort, which keeps input order for queries of up to 16
documents and is unstable beyond; no option reproduces the latter, so the
``ranx`` convention is exact whenever tied scores occur only in short queries.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from numbers import Real
from typing import Any

import numpy as np

from ltr._validation import (
    check_1d_float,
    check_cutoffs,
    check_finite,
    check_offsets,
    check_real,
    check_reduce,
    short_repr,
)
from ltr.clicks.ips import ips_dcg, ips_ndcg
from ltr.groups import resolve_groups
from ltr.kernels import _dcg as K
from ltr.kernels._dcg import PARALLEL_MIN_ROWS
from ltr.kernels._dcg_multi import dcg_idcg_multi
from ltr.kernels._dcg_split import dcg_idcg_split, split_threads
from ltr.kernels._scan import PARALLEL_MIN_ROWS as _SCAN_MIN_ROWS
from ltr.kernels._scan import label_score_stats
from ltr.metrics.gains import GainSpec, check_exp2_labels, parse_gain
from ltr.metrics.names import CONVENTIONS, Convention

__all__ = [
    "CONVENTIONS",
    "Convention",
    "MetricValue",
    "ips_dcg",
    "ips_ndcg",
    "ndcg",
]

DiscountSpec = str | Sequence[float] | np.ndarray | Callable[[np.ndarray], np.ndarray]
KSpec = int | None | Sequence[int]

_TIES = {
    "stable": K.TIES_STABLE,
    "average": K.TIES_AVERAGE,
    "pessimistic": K.TIES_PESSIMISTIC,
    "optimistic": K.TIES_OPTIMISTIC,
    "doc_id_desc": K.TIES_KEY_DESC,
}
_DISCOUNTS = ("log2", "log2_plus_one")


class MetricValue(float):
    """A mean metric value that also says how many queries it covers.

    Behaves as a ``float``; ``n_queries`` counts the queries averaged and
    ``n_skipped`` those left out because their ideal DCG is 0 (``empty="skip"``).
    """

    n_queries: int
    n_skipped: int

    def __new__(cls, value: float, n_queries: int = 0, n_skipped: int = 0) -> MetricValue:  # noqa: PYI034
        """Create the float *value* carrying its query counts."""
        obj = super().__new__(cls, value)
        obj.n_queries = int(n_queries)
        obj.n_skipped = int(n_skipped)
        return obj

    def __reduce__(self) -> tuple[Any, ...]:
        """Pickle with the counts."""
        return (MetricValue, (float(self), self.n_queries, self.n_skipped))

    def __repr__(self) -> str:
        """Return the plain float's repr."""
        return f"{float(self)!r}"


_DEFAULT = Convention(peer="default")
#: LightGBM's default ``label_gain`` has 31 entries (labels 0..30).
_LIGHTGBM_TABLE = 31
#: XGBoost's exponential nDCG gain refuses relevance degrees above 31.
_XGBOOST_EXP2_MAX = 31.0


@dataclass
class _Prepared:
    labels: np.ndarray
    scores: np.ndarray
    offsets: np.ndarray
    gains: np.ndarray
    gain_mode: int
    tie_keys: np.ndarray
    tie_mode: int
    ideal_keys: np.ndarray
    ideal_mode: int
    label_gain: np.ndarray
    conv: Convention
    weights: np.ndarray | None
    _discounts: dict[int, np.ndarray] = field(default_factory=dict)


# ----------------------------------------------------------------------------
# validation helpers
# ----------------------------------------------------------------------------


def resolve_convention(convention: str | None, **overrides: Any) -> Convention:
    """Return the :class:`Convention` of *convention* (``None``: ltr's) with *overrides* set.

    Shared with :mod:`ltr.metrics`; options given as ``None`` keep the convention's.
    """
    if convention is None:
        base = _DEFAULT
    elif isinstance(convention, str) and convention in CONVENTIONS:
        base = CONVENTIONS[convention]
    else:
        raise ValueError(
            f"convention must be one of {sorted(CONVENTIONS)} or None, got {convention!r}"
        )
    given = {name: value for name, value in overrides.items() if value is not None}
    return replace(base, **given)


def _first(mask: np.ndarray) -> int:
    return int(np.flatnonzero(mask)[0])


def _check_peer_labels(labels: np.ndarray, lo: float, hi: float, conv: Convention,
                       kind: str, payload: Any, whole: bool | None = None) -> None:
    """Refuse labels the convention's peer refuses, naming the convention.

    *lo* and *hi* are the labels' min and max (already computed), so a rule
    costs a pass only when a label breaks it; *whole* says whether all labels
    are whole numbers when a scan found out (``None``: look).
    """
    peer = conv.peer
    if peer is None or peer in ("trec_eval", "ranx"):
        return
    if peer == "default":
        if lo < 0 and kind not in ("callable", "exp2"):  # exp2 says it in _gain_rows
            i = _first(labels < 0)
            raise ValueError(
                f"y_true must be >= 0 (graded relevance); y_true[{i}] = {labels[i].item()!r}. "
                "Negative labels give negative gains; scikit-learn and LightGBM refuse them "
                "(pass a callable gain to define their gains)"
            )
        return
    who = f"convention={peer!r}"
    if lo < 0:
        i = _first(labels < 0)
        tool = {"lightgbm": "LightGBM", "xgboost": "XGBoost", "sklearn": "scikit-learn"}[peer]
        raise ValueError(
            f"{who} refuses negative labels (as {tool} does); y_true[{i}] = "
            f"{labels[i].item()!r}"
        )
    if peer == "lightgbm":
        frac = np.zeros(1, dtype=bool) if whole else labels != np.floor(labels)
        if frac.any():
            i = _first(frac)
            raise ValueError(
                f"{who} needs integer labels (LightGBM refuses others); y_true[{i}] = "
                f"{labels[i].item()!r}: round the labels or use convention=None"
            )
        size = payload.size if kind == "table" else (_LIGHTGBM_TABLE if kind == "exp2" else None)
        if size is not None and hi >= size:
            i = _first(labels >= size)
            raise ValueError(
                f"{who} needs labels below the gain table's length {size} (labels 0..{size - 1}"
                f", LightGBM's label_gain); y_true[{i}] = {labels[i].item()!r}: pass a longer "
                "gain table (gain=[...]) or use convention=None"
            )
    elif peer == "xgboost" and kind == "exp2" and hi > _XGBOOST_EXP2_MAX:
        i = _first(labels > _XGBOOST_EXP2_MAX)
        raise ValueError(
            f"{who} with exp2 gain needs labels <= 31 (XGBoost refuses larger relevance "
            f"degrees with the exponential gain); y_true[{i}] = {labels[i].item()!r}: "
            "use gain='linear' or convention=None"
        )


def _gain_rows(labels: np.ndarray, gain: Any, conv: Convention,
               stats: tuple[float, float, bool | None] | None = None) -> tuple[np.ndarray, int]:
    """Return (per-row gains or empty array, gain mode).

    Labels are checked here, in the passes that find their min and max (or
    from *stats*, ``(min, max, all whole or None: unknown)`` of a scan that already read them):
    finite, the convention's peer rules, and exp2 overflow.
    """
    empty = np.empty(0)
    kind, payload = parse_gain(gain, "gain")
    if stats is None:
        lo, hi, whole = float(labels.min()), float(labels.max()), None  # NaN/inf propagate
    else:
        lo, hi, whole = stats
    if not (np.isfinite(lo) and np.isfinite(hi)):
        check_finite(labels, "y_true")
    _check_peer_labels(labels, lo, hi, conv, kind, payload, whole)
    if kind == "exp2":
        if lo < 0:
            bad = int(np.argmin(labels))
            raise ValueError(
                f"y_true must be >= 0 with gain='exp2'; y_true[{bad}] = {labels[bad].item()!r}"
            )
        check_exp2_labels(labels, "y_true", hi)
        mode, rows = K.GAIN_EXP2, empty
    elif kind == "linear":
        mode, rows = K.GAIN_LINEAR, empty
    elif kind == "callable":
        try:
            rows = np.asarray(payload(labels.copy()), dtype=np.float64)
        except Exception as exc:
            raise TypeError(f"gain callable failed on y_true: {exc}") from exc
        if rows.shape != labels.shape:
            raise ValueError(
                f"gain callable must return one gain per label (shape {labels.shape}), "
                f"got shape {rows.shape}"
            )
        check_finite(rows, "gain(y_true)")
        mode = K.GAIN_TABLE
    else:
        table = payload
        as_int = labels.astype(np.int64)
        bad = (labels != as_int) | (as_int < 0) | (as_int >= table.size)
        if bad.any():
            i = int(np.flatnonzero(bad)[0])
            raise ValueError(
                f"y_true[{i}] = {labels[i].item()!r} is not a label of the gain table "
                f"(integer labels 0..{table.size - 1})"
            )
        rows = table[as_int]
        mode = K.GAIN_TABLE
    if conv.min_relevant is not None:
        if mode != K.GAIN_TABLE:
            rows = 2.0 ** labels - 1.0 if mode == K.GAIN_EXP2 else labels.copy()
            mode = K.GAIN_TABLE
        rows = np.where(labels < conv.min_relevant, 0.0, rows)
    return np.ascontiguousarray(rows, dtype=np.float64), mode


def _no_discount(positions: np.ndarray) -> np.ndarray:
    return np.ones_like(positions)


def _discount_table(discount: Any, length: int) -> np.ndarray:
    positions = np.arange(1, length + 1, dtype=np.float64)
    if isinstance(discount, str):
        if discount == "log2":
            return 1.0 / np.log2(positions + 1.0)
        if discount == "log2_plus_one":
            return 1.0 / (np.log2(positions) + 1.0)
        raise ValueError(
            f"discount must be one of {_DISCOUNTS}, an array or a callable, got {discount!r}"
        )
    if callable(discount):
        try:
            table = np.asarray(discount(positions), dtype=np.float64)
        except Exception as exc:
            raise TypeError(f"discount callable failed on positions 1..{length}: {exc}") from exc
        if table.shape != positions.shape:
            raise ValueError(
                f"discount callable must return one value per position (shape ({length},)), "
                f"got shape {table.shape}"
            )
    else:
        table = np.asarray(discount)
        if table.ndim != 1 or not np.issubdtype(table.dtype, np.number):
            raise TypeError(
                "discount must be 'log2', 'log2_plus_one', a 1-D array of per-position "
                f"discounts or a callable, got {short_repr(discount)}"
            )
        table = table.astype(np.float64)
        if table.size < length:
            raise ValueError(
                f"discount has {table.size} positions but {length} are needed "
                "(the cut-off k or the longest query); pass a longer array or a smaller k"
            )
        table = table[:length]
    check_finite(table, "discount")
    return np.ascontiguousarray(table)


_HIST_LABELS = 32


def _label_gain_table(conv: Convention) -> np.ndarray:
    """Gain of integer labels ``0..31`` when label order is an ideal order, else empty.

    The kernel then builds the ideal DCG from a label histogram (one pass per
    query); queries with labels outside the table fall back to selection.
    """
    positions = np.arange(_HIST_LABELS, dtype=np.float64)
    gain = conv.gain
    if isinstance(gain, str):
        table = 2.0**positions - 1.0 if gain == "exp2" else positions.copy()
    elif callable(gain):
        return np.empty(0)
    else:
        table = np.asarray(gain, dtype=np.float64).copy()
    if conv.min_relevant is not None:
        table = np.where(np.arange(table.size) < conv.min_relevant, 0.0, table)
    if not conv.ideal_by_label and np.any(np.diff(table) < 0):
        return np.empty(0)  # the ideal order by gain is not the label order
    return np.ascontiguousarray(table)


def prepare_rows(
    y_true: Any,
    y_score: Any,
    *,
    qid: Any,
    group: Any,
    offsets: np.ndarray | None,
    conv: Convention,
    weights: Any,
    doc_ids: Any,
) -> _Prepared:
    """Validate rows and resolve *conv* into the kernels' flat arrays (also for rank_metrics)."""
    labels = check_1d_float(y_true, "y_true")
    scores = check_1d_float(y_score, "y_score")
    if scores.shape[0] != labels.shape[0]:
        raise ValueError(
            f"y_score has {scores.shape[0]} rows but y_true has {labels.shape[0]}; they must match"
        )
    if labels.size >= _SCAN_MIN_ROWS:  # one pass over both arrays, not numpy's four
        lo, hi, whole, scores_finite = label_score_stats(labels, scores)
        stats: tuple[float, float, bool | None] = (lo, hi, whole)
        if not scores_finite:
            check_finite(scores, "y_score")
    else:
        check_finite(scores, "y_score")  # labels: in _gain_rows
        stats = (float(labels.min()), float(labels.max()), None)  # NaN/inf: seen there
    if offsets is not None:
        if qid is not None or group is not None:
            raise ValueError("pass only one of qid, group or offsets")
        offs = check_offsets(offsets, "offsets", labels.size)
    else:
        offs = resolve_groups(labels.size, qid=qid, group=group).offsets
    n_q = offs.size - 1

    if conv.score_float32 and getattr(y_score, "dtype", None) != np.float32:
        # (float32 input is already float32-exact: no second rounding copy)
        scores = scores.astype(np.float32).astype(np.float64)

    gains, gain_mode = _gain_rows(labels, conv.gain, conv, stats)

    if not isinstance(conv.ties, str) or conv.ties not in _TIES:
        raise ValueError(f"ties must be one of {sorted(_TIES)}, got {conv.ties!r}")
    tie_mode = _TIES[conv.ties]
    tie_keys = np.empty(0)
    if tie_mode == K.TIES_KEY_DESC:
        if doc_ids is None:
            raise ValueError(
                "ties='doc_id_desc' (trec_eval/ranx) orders tied scores by document id: "
                "pass doc_ids (one id per row)"
            )
        ids = np.asarray(doc_ids)
        if ids.ndim != 1 or ids.size != labels.size:
            raise ValueError(
                f"doc_ids must have one id per row ({labels.size}), got shape {ids.shape}"
            )
        # Rank of each id under string comparison (strcmp order, as trec_eval).
        _, inverse = np.unique(ids.astype(str), return_inverse=True)
        tie_keys = inverse.ravel().astype(np.float64)

    ideal_mode = 0
    ideal_keys = np.empty(0)
    if conv.ideal_by_label:
        ideal_mode, ideal_keys = 1, labels
    label_gain = _label_gain_table(conv)
    if label_gain.size and stats[1] < label_gain.size - 1:  # histogram up to the top label
        label_gain = label_gain[: max(int(stats[1]) + 1, 0)]

    empty = conv.empty
    if not (isinstance(empty, str) and empty == "skip"):
        if isinstance(empty, (bool, np.bool_)) or not isinstance(empty, Real):
            raise ValueError(f"empty must be 'skip' or a number, got {empty!r}")
        check_real(empty, "empty")

    w = None
    if weights is not None:
        w = check_1d_float(weights, "weights")
        if w.size != n_q:
            raise ValueError(
                f"weights must hold one weight per query ({n_q} queries), got {w.size}"
            )
        check_finite(w, "weights")
        if (w < 0).any():
            i = int(np.flatnonzero(w < 0)[0])
            raise ValueError(f"weights must be >= 0; weights[{i}] = {w[i].item()!r}")
    return _Prepared(labels, scores, offs, gains, gain_mode, tie_keys, tie_mode, ideal_keys,
                     ideal_mode, label_gain, conv, w)


def _discount_for(prep: _Prepared, k: int | None) -> np.ndarray:
    longest = int(np.max(np.diff(prep.offsets)))
    length = longest if k is None else min(k, longest)
    key = length
    if key not in prep._discounts:
        prep._discounts[key] = _discount_table(prep.conv.discount, length)
    return prep._discounts[key]


def _run_kernel(
    prep: _Prepared, k: int | None, want_dcg: bool, want_idcg: bool
) -> tuple[np.ndarray, np.ndarray]:
    n_q = prep.offsets.size - 1
    out_dcg = np.zeros(n_q)
    out_idcg = np.zeros(n_q)
    discount = _discount_for(prep, k)
    args = (prep.labels, prep.scores, prep.gains, prep.gain_mode, prep.tie_keys, prep.tie_mode,
            prep.ideal_keys, prep.ideal_mode, prep.label_gain, discount, prep.offsets,
            0 if k is None else k, out_dcg, out_idcg, want_dcg, want_idcg)
    threads = split_threads(prep.offsets)  # a few very long queries: split each across threads
    if threads:
        dcg_idcg_split(*args, threads)
    else:
        K.dcg_idcg(*args)
    return out_dcg, out_idcg


def kernel_outputs(
    prep: _Prepared, ks: list[int | None], want_dcg: bool, want_idcg: bool
) -> Callable[[int | None], tuple[np.ndarray, np.ndarray]]:
    """``(dcg, idcg)`` per query for each cut-off of *ks*, as a lookup ``k -> arrays``.

    Several cut-offs are computed in one kernel pass (each query ordered once);
    one cut-off on a large input runs the single-cut-off kernel.  Values are
    identical either way.
    """
    if len(ks) == 1 and (prep.labels.shape[0] >= PARALLEL_MIN_ROWS or split_threads(prep.offsets)):
        return lambda kk: _run_kernel(prep, kk, want_dcg, want_idcg)
    # several cut-offs or a small input: one kernel (a small run compiles one, not two)
    order = sorted(ks, key=lambda kk: np.inf if kk is None else kk)
    n_q = prep.offsets.size - 1
    out_dcg = np.zeros((n_q, len(order)))
    out_idcg = np.zeros((n_q, len(order)))
    discount = _discount_for(prep, order[-1])
    k_arr = np.array([0 if kk is None else kk for kk in order], dtype=np.int64)
    dcg_idcg_multi(prep.labels, prep.scores, prep.gains, prep.gain_mode, prep.tie_keys,
                   prep.tie_mode, prep.ideal_keys, prep.ideal_mode, prep.label_gain, discount,
                   prep.offsets, k_arr, out_dcg, out_idcg, want_dcg, want_idcg)
    column = {kk: j for j, kk in enumerate(order)}
    return lambda kk: (out_dcg[:, column[kk]], out_idcg[:, column[kk]])


def reduce_values(per_query: np.ndarray, weights: np.ndarray | None, n_skipped: int,
            reduce: str | None, unweighted: np.ndarray | None = None) -> Any:
    """Mean of *per_query* (NaN = skipped); rows flagged *unweighted* count 1 in the numerator."""
    if reduce is None:
        return per_query
    valid = ~np.isnan(per_query)
    n_used = int(valid.sum())
    if n_used == 0:
        return MetricValue(np.nan, 0, n_skipped)
    if weights is None:
        value = float(per_query[valid].mean())
    else:
        wv = weights[valid]
        total = wv.sum()
        terms = per_query[valid] * wv
        if unweighted is not None:
            terms = np.where(unweighted[valid], per_query[valid], terms)
        value = float(terms.sum() / total) if total > 0 else np.nan
    return MetricValue(value, n_used, n_skipped)


def per_k(ks: list[int | None], k_arg: Any, compute: Callable[[int | None], Any]) -> Any:
    """``{k: compute(k)}`` when *k_arg* was a list, else ``compute(k)`` of the one cut-off."""
    if isinstance(k_arg, (list, tuple, np.ndarray)):
        return {kk: compute(kk) for kk in ks}
    return compute(ks[0])


# ----------------------------------------------------------------------------
# public API
# ----------------------------------------------------------------------------


def ndcg(
    y_true: Any,
    y_score: Any,
    *,
    qid: Any = None,
    group: Any = None,
    offsets: np.ndarray | None = None,
    k: KSpec = 10,
    gain: GainSpec | None = None,
    discount: DiscountSpec | None = None,
    ties: str | None = None,
    empty: float | str | None = None,
    weights: Any = None,
    doc_ids: Any = None,
    reduce: str | None = "mean",
    convention: str | None = None,
) -> Any:
    r"""Normalised discounted cumulative gain over ragged queries.

    .. math::
        \mathrm{nDCG@k}(q) = \frac{\sum_{i=1}^{k} g(l_{\pi(i)})\, d(i)}
                                  {\sum_{i=1}^{k} g(l_{\pi^*(i)})\, d(i)}

    where :math:`\pi` orders the query's documents by predicted score and
    :math:`\pi^*` by gain.

    Parameters
    ----------
    y_true : array-like of shape (n_rows,)
        Graded relevance labels (float grades are allowed with exp2/linear).
    y_score : array-like of shape (n_rows,)
        Predicted scores; higher ranks first.
    qid, group, offsets : array-like
        Exactly one: a query id per row (contiguous), query sizes, or ``int64``
        offsets of length ``n_queries + 1`` (fast path, no conversion).
    k : int, None or list of int, default=10
        Cut-off. ``None`` is the whole list; a ``k`` larger than a query means
        the whole query. A list returns ``{k: value}``.
    gain : {'exp2', 'linear'}, array or callable, default='exp2'
        ``2**l - 1``, ``l``, a label->gain table (LightGBM ``label_gain``), or a
        vectorised callable labels -> gains.
    discount : {'log2', 'log2_plus_one'}, array or callable, default='log2'
        ``1/log2(i+1)``, ``1/(log2(i)+1)``, per-position discounts, or a
        callable positions (1-based) -> discounts.
    ties : {'average', 'stable', 'pessimistic', 'optimistic', 'doc_id_desc'}, default='average'
        Order among equal scores: averaged over all orders (McSherry & Najork,
        as scikit-learn), input order (LightGBM, XGBoost), worst or best case,
        or document id descending as strings (trec_eval; needs ``doc_ids``).
    empty : 'skip' or float, default='skip'
        Value of a query whose ideal DCG is 0. ``'skip'`` leaves it out of the
        mean (NaN per query); LightGBM/XGBoost use 1, scikit-learn/trec_eval/ranx 0.
    weights : array-like of shape (n_queries,), optional
        Per-query weights for the mean.
    doc_ids : array-like of shape (n_rows,), optional
        Document ids, for ``ties='doc_id_desc'``.
    reduce : {'mean', None}, default='mean'
        ``'mean'`` returns a :class:`MetricValue` (a float with ``n_queries``
        and ``n_skipped``); ``None`` returns the per-query array.
    convention : {'lightgbm', 'xgboost', 'sklearn', 'trec_eval', 'ranx'}, optional
        Start from the settings that reproduce that tool; explicit keyword
        arguments override single fields (``convention='xgboost', empty=0.0``
        is XGBoost's ``ndcg@k-``; ``convention='ranx', gain='exp2'`` is ranx's
        ``ndcg_burges``).

    Returns
    -------
    MetricValue, ndarray or dict
        The mean, the per-query values, or a dict keyed by ``k``.

    Examples
    --------
    >>> from ltr.metrics import ndcg
    >>> round(ndcg([3, 2, 0, 1, 2], [5, 4, 3, 2, 1], group=[5], k=3, gain="linear"), 4)
    0.81
    """
    conv = resolve_convention(convention, gain=gain, discount=discount, ties=ties, empty=empty)
    ks = check_cutoffs(k)
    check_reduce(reduce)
    prep = prepare_rows(y_true, y_score, qid=qid, group=group, offsets=offsets, conv=conv,
                    weights=weights, doc_ids=doc_ids)

    outputs = kernel_outputs(prep, ks, True, True)

    def compute(kk: int | None) -> Any:
        d, i = outputs(kk)
        positive = i > 0
        per_query = np.empty_like(d)
        np.divide(d, i, out=per_query, where=positive)
        n_empty = int((~positive).sum())
        skip = isinstance(conv.empty, str)
        per_query[~positive] = np.nan if skip else float(conv.empty)
        unweighted = None if skip or not conv.empty_unweighted else ~positive
        return reduce_values(per_query, prep.weights, n_empty if skip else 0, reduce, unweighted)

    return per_k(ks, k, compute)

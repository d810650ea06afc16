"""nDCG's input: validation of the rows and a convention resolved into kernel arrays.

:func:`prepare_rows` checks ``y_true``/``y_score``/query ids/weights at the
public boundary (each error names the argument, the bad value and the fix),
and turns a :class:`~ltr.metrics.names.Convention` into the flat arrays and
small integers the numba kernels take (:mod:`ltr.kernels._dcg`): per-row gains
or a gain mode, tie keys and mode, the ideal order, the label-gain table of the
histogram path, and the discount table.  Shared by :mod:`ltr.metrics._ndcg`,
:mod:`ltr.metrics._dcg` and :mod:`ltr.metrics._rank`.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from numbers import Real
from typing import Any

import numpy as np

from ltr._validation import (
    check_1d_float,
    check_finite,
    check_real,
    short_repr,
)
from ltr.groups import resolve_offsets
from ltr.kernels import _dcg as K
from ltr.kernels._scan import PARALLEL_MIN_ROWS as _SCAN_MIN_ROWS
from ltr.kernels._scan import label_score_stats
from ltr.metrics.gains import check_exp2_labels, parse_gain
from ltr.metrics.names import CONVENTIONS, Convention

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
    if isinstance(discount, str):
        # in place: a whole-list table of 10^6 positions, one array (no temporaries' page faults)
        if discount == "log2":
            table = np.arange(2, length + 2, dtype=np.float64)  # position + 1 (exact)
            np.log2(table, out=table)
            return np.divide(1.0, table, out=table)
        if discount == "log2_plus_one":
            table = np.arange(1, length + 1, dtype=np.float64)
            np.log2(table, out=table)
            table += 1.0
            return np.divide(1.0, table, out=table)
        raise ValueError(
            f"discount must be one of {_DISCOUNTS}, an array or a callable, got {discount!r}"
        )
    positions = np.arange(1, length + 1, dtype=np.float64)
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
    offs = resolve_offsets(labels.size, qid=qid, group=group, offsets=offsets)
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


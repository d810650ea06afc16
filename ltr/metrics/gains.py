"""The one gain-spec parser, shared by the metrics and the objectives.

A gain spec says how a relevance label becomes a gain: ``"exp2"``
(``2**label - 1``), ``"linear"`` (``label``), a label->gain table indexed by
integer labels (LightGBM's ``label_gain``), or, where the caller allows it, a
vectorised callable labels -> gains.  :func:`parse_gain` checks the spec once
and normalises it; how labels are then mapped (and which labels are valid)
stays with the caller, whose conventions differ.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, Literal

import numpy as np

from ltr._validation import short_repr

__all__ = [
    "EXP2_LABEL_LIMIT",
    "GAIN_NAMES",
    "GainSpec",
    "ParsedGain",
    "check_exp2_labels",
    "gain_values",
    "parse_gain",
]

#: ``2**label - 1`` overflows float64 from this label on.
EXP2_LABEL_LIMIT = 1024.0

#: Named gains.
GAIN_NAMES: tuple[str, ...] = ("exp2", "linear")

GainSpec = str | Sequence[float] | np.ndarray | Callable[[np.ndarray], np.ndarray]

#: ``("exp2" | "linear", None)``, ``("table", float64 table)`` or ``("callable", fn)``.
ParsedGain = tuple[Literal["exp2", "linear", "table", "callable"], Any]


def _expected(allow_callable: bool) -> str:
    return "'exp2', 'linear', a 1-D label->gain table" + (
        " or a callable" if allow_callable else ""
    )


def parse_gain(
    gain: Any,
    name: str = "gain",
    *,
    allow_callable: bool = True,
    nonnegative: bool = False,
) -> ParsedGain:
    """Check a gain spec and normalise it.

    Parameters
    ----------
    gain : {'exp2', 'linear'}, array-like or callable
        The spec.
    name : str, default='gain'
        Argument name used in error messages.
    allow_callable : bool, default=True
        Accept a callable labels -> gains.
    nonnegative : bool, default=False
        Require the gains of a table to be >= 0.

    Returns
    -------
    tuple
        ``(kind, payload)``: ``("exp2", None)``, ``("linear", None)``,
        ``("table", ndarray of float64)`` or ``("callable", gain)``.

    Raises
    ------
    ValueError
        An unknown name, an empty or non-1-D table, non-finite (or, with
        *nonnegative*, negative) table gains.
    TypeError
        A spec that is none of the above kinds.
    """
    if isinstance(gain, str):
        if gain not in GAIN_NAMES:
            raise ValueError(f"{name} must be {_expected(allow_callable)}, got {gain!r}")
        return gain, None  # type: ignore[return-value]
    if callable(gain) and not isinstance(gain, np.ndarray):
        if not allow_callable:
            raise TypeError(f"{name} must be {_expected(False)}, got a callable {short_repr(gain)}")
        return "callable", gain
    try:
        table = np.asarray(gain)
    except Exception as exc:  # pragma: no cover - exotic inputs
        raise TypeError(
            f"{name} must be {_expected(allow_callable)}, got {short_repr(gain)}"
        ) from exc
    if table.dtype == object or not (
        np.issubdtype(table.dtype, np.number) or np.issubdtype(table.dtype, np.bool_)
    ):
        raise TypeError(f"{name} must be {_expected(allow_callable)}, got {short_repr(gain)}")
    if table.ndim != 1 or table.size == 0:
        raise ValueError(
            f"{name} table must be a non-empty 1-D sequence of gains, got {short_repr(gain)}"
        )
    table = np.ascontiguousarray(table, dtype=np.float64)
    bad = ~np.isfinite(table)
    if nonnegative:
        bad |= table < 0
    if bad.any():
        i = int(np.flatnonzero(bad)[0])
        rule = "finite gains >= 0" if nonnegative else "finite gains"
        raise ValueError(f"{name} table must hold {rule}; {name}[{i}] = {float(table[i])!r}")
    return "table", table


def check_exp2_labels(labels: np.ndarray, name: str, highest: float | None = None) -> None:
    """Raise ``ValueError`` naming the first label whose gain ``2**label - 1`` overflows.

    Parameters
    ----------
    labels : ndarray of float64
        Finite labels.
    name : str
        Argument name used in the message (``y_true``, ``labels['watch']`` ...).
    highest : float, optional
        ``labels.max()`` when the caller already has it (saves a pass).
    """
    top = float(labels.max()) if highest is None else float(highest)
    if top < EXP2_LABEL_LIMIT:
        return
    i = int(np.flatnonzero(labels >= EXP2_LABEL_LIMIT)[0])
    raise ValueError(
        f"{name}[{i}] = {float(labels[i])!r} is too large for gain 'exp2': 2**label overflows "
        f"float64 for labels >= {EXP2_LABEL_LIMIT:g} (the gain would be inf and nDCG NaN); "
        "use gain='linear' or rescale the labels"
    )


def gain_values(y: np.ndarray, spec: tuple[str, np.ndarray | None], name: str) -> np.ndarray:
    """Gain of every label under a parsed non-callable gain *spec* (:func:`parse_gain`).

    Labels must be integers below the table's size for a table, and below
    :data:`EXP2_LABEL_LIMIT` for ``"exp2"``; the error names *name* and the row.

    Examples
    --------
    >>> import numpy as np
    >>> from ltr.metrics.gains import gain_values
    >>> gain_values(np.array([0.0, 2.0]), ("exp2", None), "y").tolist()
    [0.0, 3.0]
    """
    kind, table = spec
    if kind == "linear":
        return y.copy()
    if kind == "exp2":
        check_exp2_labels(y, name)
        return np.exp2(y) - 1.0
    if table is None:  # pragma: no cover - parse_gain always sets a table here
        raise RuntimeError("gain table missing")
    idx = y.astype(np.int64)
    frac = idx != y
    if frac.any():
        i = int(np.flatnonzero(frac)[0])
        raise ValueError(
            f"{name} must be integers to index a gain table; got {float(y[i])!r} at index {i}"
        )
    beyond = idx >= table.size
    if beyond.any():
        i = int(np.flatnonzero(beyond)[0])
        raise ValueError(
            f"{name} value {float(y[i])!r} (index {i}) is beyond the gain table of "
            f"{table.size} entries (labels 0..{table.size - 1})"
        )
    return table[idx]

"""Propensity estimation from click logs: the PBM EM and the swap-intervention ratio."""

from __future__ import annotations

import warnings
from typing import Any

import numpy as np

from ltr._validation import (
    check_1d_float,
    check_clicks,
    check_int,
    check_positions,
    check_real,
)
from ltr.clicks._simulate import ClickLog, PropensityEstimate
from ltr.groups import resolve_offsets
from ltr.kernels import _clicks as K

__all__ = ["estimate_propensity_em", "estimate_propensity_swap"]




def _log_arrays(
    data: Any, position: Any, qid: Any, offsets: Any, extra: Any, extra_name: str,
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """``(click, position, offsets, extra)`` from a ClickLog or checked arrays.

    The clicks are 0/1: the log's own int8 array from a ClickLog (no copy),
    float64 from arrays.
    """
    if isinstance(data, ClickLog):
        if position is not None or qid is not None or offsets is not None or extra is not None:
            raise ValueError(
                f"pass a ClickLog alone, or click, position, {extra_name} and qid/offsets "
                "arrays; not both"
            )
        chosen = data.row if extra_name == "doc" else data.swap
        return data.click, data.position, data.offsets, chosen
    click = check_1d_float(data, "click")
    if qid is None and offsets is None:
        raise TypeError(
            "the displayed lists are missing: pass qid (a list id per impression, one list per "
            "query and session) or offsets, or pass a ClickLog"
        )
    offs = resolve_offsets(click.size, qid=qid, offsets=offsets)
    click = check_clicks(click, "click", click.size)
    if position is None:
        raise TypeError("position is required with click arrays (display rank per row, 1 = top)")
    pos = check_positions(position, "position", offs)
    if extra is None:
        raise TypeError(f"{extra_name} is required with click arrays")
    arr = np.asarray(extra)
    if arr.ndim != 1 or arr.size != click.size:
        raise ValueError(
            f"{extra_name} must have one entry per row ({click.size}), got shape {arr.shape}"
        )
    return click, pos, offs, arr


def _dense_codes(values: np.ndarray, dtype: Any = np.int64) -> tuple[np.ndarray, np.ndarray]:
    """``(uniq, code)``: ``np.unique(values, return_inverse=True)``, the codes of ``dtype``.

    Integer ids spanning a range not much wider than their count are coded by
    a presence table (linear time, one gather); other ids go through
    ``np.unique``.
    """
    if values.size and values.dtype.kind in "iu":
        lo, hi = int(values.min()), int(values.max())
        if hi - lo <= 4 * values.size + 1024:
            shifted = values if lo == 0 else values - lo
            present = np.zeros(hi - lo + 1, dtype=bool)
            present[shifted] = True
            table = np.cumsum(present, dtype=dtype) - 1
            uniq = (np.flatnonzero(present) + lo).astype(values.dtype)
            return uniq, table[shifted]
    uniq, inverse = np.unique(values, return_inverse=True)
    return uniq, inverse.ravel().astype(dtype, copy=False)


def _max_position(max_position: Any, pos: np.ndarray) -> int:
    if max_position is None:
        return int(pos.max())
    return check_int(max_position, "max_position", minimum=1)


def estimate_propensity_em(
    data: ClickLog | Any,
    position: Any = None,
    doc: Any = None,
    *,
    qid: Any = None,
    offsets: Any = None,
    max_position: int | None = None,
    n_iter: int = 1000,
    tol: float = 1e-6,
) -> PropensityEstimate:
    r"""Estimate PBM examination propensities with the EM algorithm.

    The position-based model :math:`P(c = 1 \mid d, p) = \theta_p\,\gamma_d`
    with one relevance :math:`\gamma_d` per query-document pair (the "EM"
    estimator of Wang et al. 2018 and Chuklin et al.; their regression-EM
    replaces the per-pair table by a model of features, which this function
    does not fit).  Each iteration computes the posteriors of examination and
    relevance for non-clicks and re-estimates both in closed form from the
    impressions and clicks per (pair, position).  The scale of
    :math:`\theta` and :math:`\gamma` is not identified; the result is
    normalised to :math:`\theta_1 = 1`.  A pair must be logged at several
    positions (a stochastic logger or interventions): with one fixed order
    per query the propensities are not identifiable.

    Parameters
    ----------
    data : ClickLog or array-like of shape (n_impressions,)
        A simulated log, or the clicks (0/1) of logged impressions.
    position : array-like of shape (n_impressions,)
        With arrays: display position (1 = top), a permutation within each list.
    doc : array-like of shape (n_impressions,)
        With arrays: the query-document pair of each impression (equal across
        the sessions that show it, e.g. ``ClickLog.row``).
    qid, offsets : array-like
        With arrays: one of a list (session) id per impression, or list offsets.
    max_position : int, optional
        Estimate positions ``1..max_position`` (impressions below are unused);
        default the deepest position logged.
    n_iter : int, default=1000
        Maximum EM iterations.
    tol : float, default=1e-6
        Stop when no :math:`\theta_p / \theta_1` moves by more than ``tol``.

    Returns
    -------
    PropensityEstimate
        ``propensity[p - 1]`` estimates :math:`\theta_p / \theta_1`.

    Examples
    --------
    >>> import numpy as np
    >>> from ltr.clicks import simulate_pbm
    >>> labels = np.tile([3, 2, 1, 0, 0], 200)
    >>> log = simulate_pbm(labels, group=[5] * 200, logging_scores=np.zeros(1000),
    ...                    temperature=1.0, examination=1.0, n_sessions=20, random_state=0)
    >>> est = estimate_propensity_em(log)
    >>> np.round(est.propensity, 2).tolist()  # simulated: 1/p
    [1.0, 0.51, 0.33, 0.25, 0.2]
    """
    click, pos, _, pair = _log_arrays(data, position, qid, offsets, doc, "doc")
    click = click.astype(np.float64, copy=False)
    top = _max_position(max_position, pos)
    iters = check_int(n_iter, "n_iter", minimum=1)
    eps = check_real(tol, "tol", minimum=0.0)
    keep = pos <= top
    if keep.all():
        uniq, code = _dense_codes(pair)
    else:
        uniq, kept = _dense_codes(pair[keep])
        code = np.zeros(pair.size, np.int64)
        code[keep] = kept
    n_pairs = uniq.size
    pair_ptr, cell_pos, cell_n, cell_c = K.pbm_cells(code, pos, click, n_pairs, top)
    cell_pair = np.repeat(np.arange(n_pairs), np.diff(pair_ptr))
    imp = np.bincount(cell_pos, weights=cell_n, minlength=top).astype(np.int64)
    clk = np.bincount(cell_pos, weights=cell_c, minlength=top).astype(np.int64)
    linked = _linked_to_top(cell_pair, cell_pos + 1, n_pairs, top)
    theta = np.full(top, 0.5)
    # Start relevance at each pair's click rate (clipped below 1): a fair scale.
    cr = np.bincount(cell_pair, weights=cell_c, minlength=n_pairs) / np.bincount(
        cell_pair, weights=cell_n, minlength=n_pairs
    )
    gamma = np.clip(cr, 0.01, 0.99)
    done, converged = K.propensity_em(pair_ptr, cell_pos, cell_n, cell_c, theta, gamma, iters,
                                      eps, cell_pos.size >= K.PARALLEL_CELLS)
    theta = np.where((imp > 0) & linked, theta, np.nan)
    return PropensityEstimate(theta / theta[0], imp, clk, "em", int(done), bool(converged),
                              theta)


def _linked_to_top(cell_pair: np.ndarray, cell_pos: np.ndarray, n_pairs: int,
                   top: int) -> np.ndarray:
    """Return the positions whose propensity relative to position 1 is identifiable.

    Under the PBM, ``theta_p / theta_1`` is identified only when position ``p``
    is linked to position 1 through pairs logged at several positions (a path in
    the pair-position graph).  With an order that never varies no position is.
    """
    from scipy.sparse import coo_matrix
    from scipy.sparse.csgraph import connected_components

    n = n_pairs + top
    graph = coo_matrix((np.ones(cell_pair.size), (cell_pair, n_pairs + cell_pos - 1)),
                       shape=(n, n))
    _, label = connected_components(graph, directed=False)
    at = label[n_pairs:]
    logged = np.zeros(top, dtype=bool)
    logged[np.unique(cell_pos - 1)] = True
    if not logged[0]:
        raise ValueError("position 1 was never logged: propensities are relative to position 1; "
                         "give impressions at the top position")
    linked = at == at[0]
    if logged.sum() > 1 and not (linked & logged)[1:].any():
        raise ValueError(
            f"doc: each of the {n_pairs} query-document pairs was logged at one position only "
            "(the displayed order never varies), so the PBM propensities are not identifiable "
            "(clicks cannot tell examination from relevance); log with a stochastic logger or swap "
            "interventions (estimate_propensity_swap), or give known propensities"
        )
    unlinked = np.flatnonzero(logged & ~linked) + 1
    if unlinked.size:
        warnings.warn(
            f"positions {unlinked.tolist()[:10]} share no query-document pair with position 1 "
            "(directly or through other positions): their propensities are not identifiable "
            "and are NaN", UserWarning, stacklevel=3)
    return linked


def estimate_propensity_swap(
    data: ClickLog | Any,
    position: Any = None,
    swap: Any = None,
    *,
    qid: Any = None,
    offsets: Any = None,
    max_position: int | None = None,
) -> PropensityEstimate:
    r"""Estimate propensities from swap(1, k) result randomization (Joachims et al. 2017).

    In the sessions of experiment ``k`` the results at positions 1 and ``k``
    are swapped with probability 1/2, so over those sessions both positions
    show the same documents equally often and

    .. math:: \hat p_k / \hat p_1 = \frac{\text{clicks at position } k}
                                         {\text{clicks at position } 1}
              \quad\text{(sessions of experiment } k\text{)}

    is a ratio of two unbiased estimates of :math:`p_k\bar\gamma` and
    :math:`p_1\bar\gamma` under the position-based model.

    Parameters
    ----------
    data : ClickLog or array-like of shape (n_impressions,)
        A log simulated with ``swap_depth``, or clicks (0/1) of impressions.
    position : array-like of shape (n_impressions,)
        With arrays: display position (1 = top) within each list.
    swap : array-like of shape (n_impressions,)
        With arrays: ``k`` of the list's swap experiment, 0 for none (the same
        for every impression of a list).
    qid, offsets : array-like
        With arrays: a list (session) id per impression, or list offsets.
    max_position : int, optional
        Positions to estimate; default the largest ``k`` logged.

    Returns
    -------
    PropensityEstimate
        ``propensity[0] == 1``; NaN where an experiment had no click at position 1.

    Examples
    --------
    >>> import numpy as np
    >>> from ltr.clicks import simulate_pbm
    >>> log = simulate_pbm(np.tile([2, 1, 0, 1], 500), group=[4] * 500, examination=1.0,
    ...                    n_sessions=40, swap_depth=4, random_state=1)
    >>> np.round(estimate_propensity_swap(log).propensity, 2).tolist()  # simulated: 1/p
    [1.0, 0.5, 0.35, 0.24]
    """
    click, pos, offs, k = _log_arrays(data, position, qid, offsets, swap, "swap")
    if not isinstance(data, ClickLog):
        k = check_1d_float(k, "swap")
        bad = ~np.isfinite(k) | (k < 0) | (k != np.floor(k)) | (k == 1)
        if bad.any():
            i = int(np.flatnonzero(bad)[0])
            raise ValueError(f"swap must be 0 (none) or a rank k >= 2; swap[{i}] = {float(k[i])!r}")
        k = k.astype(np.int64)
        first = np.repeat(k[offs[:-1]], np.diff(offs))
        if (k != first).any():
            i = int(np.flatnonzero(k != first)[0])
            raise ValueError(
                f"swap must be the same for every impression of a list; swap[{i}] = {int(k[i])} "
                f"but its list starts with {int(first[i])}"
            )
    if not (k > 0).any():
        raise ValueError(
            "the log has no swap experiment (swap is 0 everywhere): simulate with "
            "swap_depth=K or log a swap(1, k) intervention"
        )
    top = int(k.max()) if max_position is None else check_int(max_position, "max_position",
                                                               minimum=1)
    at_k = (pos == k) & (k > 0) & (k <= top)
    at_1 = (pos == 1) & (k > 0) & (k <= top)
    clicks_k = np.bincount(k[at_k] - 1, weights=click[at_k], minlength=top)[:top]
    clicks_1 = np.bincount(k[at_1] - 1, weights=click[at_1], minlength=top)[:top]
    n_k = np.bincount(k[at_k] - 1, minlength=top)[:top]
    with np.errstate(divide="ignore", invalid="ignore"):
        ratio = np.where(clicks_1 > 0, clicks_k / np.where(clicks_1 > 0, clicks_1, 1), np.nan)
    ratio[0] = 1.0
    clk = clicks_k.astype(np.int64)
    clk[0] = int(clicks_1.sum())
    imp = n_k.astype(np.int64)
    imp[0] = int(at_1.sum())
    return PropensityEstimate(ratio, imp, clk, "swap", 0, True, ratio.copy())

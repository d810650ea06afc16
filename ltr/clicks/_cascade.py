r"""Cascade-aware examination propensities: a dependent click model fitted by EM.

Under a cascade the user reads top-down and stops at some point, so whether a
result was read depends on its position *and* on the clicks above it in the
same session; one propensity per position (the position-based model) cannot
express that.  Following the cascade-model-based IPS of Vardasbi, de Rijke
and Markov (2020), :func:`estimate_propensity_cascade` fits a dependent click
model (DCM, Guo et al. 2009) generalised with a continuation probability
after a skip as well as after a click,

.. math::
    P(\text{read } 1) = 1, \quad
    P(\text{read } j{+}1 \mid \text{read } j, c_j) =
        \begin{cases} \lambda^{+}_{j} & c_j = 1 \\ \lambda^{-}_{j} & c_j = 0 \end{cases},
    \quad P(c_j = 1 \mid \text{read } j) = \alpha_{d_j},

by EM over the log's sessions, and returns for every logged row the
probability that it was read given the clicks above it,

.. math::
    e_1 = 1, \qquad e_{j+1} = \begin{cases}
        \lambda^{+}_{j} & c_j = 1 \\
        \lambda^{-}_{j}\, \dfrac{e_j (1 - \alpha_{d_j})}{1 - e_j \alpha_{d_j}} & c_j = 0
    \end{cases}

(a skip is evidence that the user may have stopped above it).  Since the
attractiveness of row :math:`j` is independent of everything above it,
:math:`E[c_j / e_j \mid c_{<j}] = \alpha_{d_j}`: weighting each click by
:math:`1/e_j` is unbiased for the attractiveness whatever the clicks above.

The simulator's cascade (:func:`ltr.clicks.simulate_cascade`) is this model
with :math:`\lambda^{+} = (1 - s)(1 - a)` (``stop_prob`` s, the same for every
grade, and ``abandon`` a), :math:`\lambda^{-} = 1 - a` at every rank and
:math:`\alpha_d` the click probability of the document's grade.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from ltr._validation import check_int, check_real
from ltr.clicks._propensity import _dense_codes, _log_arrays
from ltr.clicks._simulate import ClickLog
from ltr.kernels import _cascade as K

__all__ = ["CascadeEstimate", "estimate_propensity_cascade"]


@dataclass(frozen=True, eq=False)
class CascadeEstimate:
    r"""A dependent click model fitted to a log, and the per-row propensities it implies.

    Attributes
    ----------
    propensity : ndarray of float64 of shape (n_impressions,)
        Per logged row, the probability it was read given the clicks above it
        in its session (row order of the log or of the arrays given); 1 at
        position 1.  Pass it as a per-row ``propensity``.
    continue_after_click : ndarray of float64 of shape (n_ranks,)
        :math:`\lambda^{+}_p`: probability of reading position ``p + 1`` after a
        click at position ``p`` (index ``p - 1``; the last entry is shared by
        every deeper position); NaN where no click had a result below it.
    continue_after_skip : ndarray of float64 of shape (n_ranks,)
        :math:`\lambda^{-}_p`, the same after a read result was not clicked.
    reads_after_click, reads_after_skip : ndarray of float64 of shape (n_ranks,)
        Expected number of reads behind each continuation estimate (its
        effective sample size).
    doc : ndarray of shape (n_docs,)
        The documents (the log's ``row`` or the ``doc`` ids given), sorted.
    attractiveness : ndarray of float64 of shape (n_docs,)
        :math:`\alpha_d`, the click probability of ``doc[i]`` once read.
    doc_reads : ndarray of float64 of shape (n_docs,)
        Expected number of times ``doc[i]`` was read (the sample size behind
        its attractiveness: without ``smoothing``, ``attractiveness`` is its
        clicks over this).
    log_likelihood : float
        Log-likelihood of the log's sessions under the fitted model (the
        prior of ``smoothing`` left out) (compare
        models on held-out sessions per session: divide by ``n_sessions``).
    n_sessions : int
        Number of lists (sessions) fitted.
    n_iter : int
        EM updates of all parameters run (the cheap sweeps over the documents
        still moving once the continuations have settled are not counted).
    converged : bool
        Whether no parameter moved by more than ``tol`` in the last iteration.
    """

    propensity: np.ndarray
    continue_after_click: np.ndarray
    continue_after_skip: np.ndarray
    reads_after_click: np.ndarray
    reads_after_skip: np.ndarray
    doc: np.ndarray
    attractiveness: np.ndarray
    doc_reads: np.ndarray
    log_likelihood: float
    n_sessions: int
    n_iter: int
    converged: bool


def estimate_propensity_cascade(
    data: ClickLog | Any,
    position: Any = None,
    doc: Any = None,
    *,
    qid: Any = None,
    offsets: Any = None,
    n_ranks: int | None = None,
    smoothing: float = 0.0,
    n_iter: int = 1000,
    tol: float = 1e-6,
) -> CascadeEstimate:
    r"""Estimate per-row examination propensities under a cascade (dependent click model).

    Fits the continuation probabilities after a click and after a skip per
    position and one attractiveness per query-document pair by EM (see the
    module docstring), then returns each row's probability of having been
    read given the clicks above it: the propensity of cascade-model-based IPS
    (Vardasbi et al. 2020).  Unlike the position-based EM this needs no
    document shown at several positions: rows above a session's last click
    were read for sure, so several sessions per query identify the model even
    under a deterministic logger (the continuation at a list's deepest
    position is identified through longer lists or shared ranks, ``n_ranks``).

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
    n_ranks : int >= 1, optional
        Number of continuation probabilities per click state: positions
        ``n_ranks`` and deeper share the last one (``1``: one pair for every
        position).  Default: one per position of the longest list.  Deep
        positions are rarely read under a cascade; sharing them steadies
        their estimates.
    smoothing : float >= 0, default=0.0
        Pseudo-reads added to each document's attractiveness at the log's
        click rate of surely read rows (a Beta prior; the fit is then its
        maximum a posteriori).  A document read a few times then gets no
        extreme attractiveness (which drives the propensities of the rows
        below its skips toward 0 or 1), at the price of a bias toward the
        mean click rate.  ``0``: maximum likelihood.
    n_iter : int, default=1000
        Maximum EM iterations.
    tol : float, default=1e-6
        Stop when no continuation probability or attractiveness moves by more
        than ``tol``.

    Returns
    -------
    CascadeEstimate
        ``propensity`` per row (aligned with the log's rows), the fitted
        continuation tables and attractiveness.

    Raises
    ------
    ValueError
        Clicks not 0/1, bad positions, ``doc`` of the wrong length, a bad
        ``n_ranks``, ``smoothing``, ``n_iter`` or ``tol``.
    TypeError
        Arrays without ``position``, ``doc`` or ``qid``/``offsets``.

    Examples
    --------
    >>> import numpy as np
    >>> from ltr.clicks import simulate_cascade
    >>> labels = np.tile([4, 3, 2, 1, 0], 400)
    >>> log = simulate_cascade(labels, group=[5] * 400, click_prob=[0.4, 0.6, 0.7, 0.8, 0.9],
    ...                        stop_prob=0.0, abandon=0.2, n_sessions=50, random_state=0)
    >>> est = estimate_propensity_cascade(log, n_ranks=1)
    >>> # simulated: 1 - abandon = 0.8 after a skip and after a click
    >>> round(float(est.continue_after_skip[0]), 1), round(float(est.continue_after_click[0]), 1)
    (0.8, 0.8)
    >>> est.propensity.shape == log.click.shape
    True
    """
    click, pos, offs, pair = _log_arrays(data, position, qid, offsets, doc, "doc")
    longest = int(np.diff(offs).max())
    ranks = longest if n_ranks is None else check_int(n_ranks, "n_ranks", minimum=1)
    ranks = max(min(ranks, longest - 1), 1)  # the last position of a list has no next one
    pseudo = check_real(smoothing, "smoothing", minimum=0.0)
    iters = check_int(n_iter, "n_iter", minimum=1)
    eps = check_real(tol, "tol", minimum=0.0)
    # 32-bit document codes (and template row numbers) where they fit: less memory traffic
    ids, code = _dense_codes(pair, np.int32 if click.size < 2**31 else np.int64)
    c = np.ascontiguousarray(click, dtype=np.int8)  # a ClickLog's own array: no copy
    slot = None  # where each row goes in displayed order; None: it is there (a ClickLog's are)
    if not isinstance(data, ClickLog):
        slot = np.repeat(offs[:-1], np.diff(offs)) + pos - 1
        if np.array_equal(slot, np.arange(slot.size)):
            slot = None
    if slot is not None:
        shown_c, shown_code = np.empty_like(c), np.empty_like(code)
        shown_c[slot], shown_code[slot] = c, code
        c, code = shown_c, shown_code
    n_docs = ids.size
    t_offs, t_doc, t_last, t_none, t_rank0, fixed, n_clicks, known = K.summarize(
        c, offs, code, n_docs, ranks)
    doc_ptr, doc_rows = K.doc_index(t_doc, n_docs)
    # start: each document's click rate among the rows surely read, shrunk toward 1/2
    alpha = np.clip((n_clicks + 0.5) / (known + 1.0), 0.01, 0.99)
    lam = np.full((2, ranks), 0.5)
    prior = np.array([pseudo, n_clicks.sum() / known.sum()])
    doc_reads = np.zeros(n_docs)
    n_t = t_offs.size - 1
    # a fixed number of chunks: sums (and so the iterates) do not depend on the thread count
    n_chunks = max(min(64, n_t), 1)
    chunks = np.linspace(0, n_t, n_chunks + 1).astype(np.int64)
    done, converged, reads = K.dcm_em(t_offs, t_doc, t_last, t_none, t_rank0, fixed, n_clicks,
                                      known, prior, doc_ptr, doc_rows, ranks, lam, alpha, chunks,
                                      iters, eps, doc_reads)
    prop = np.empty(c.size)
    loglik = np.empty(offs.size - 1)
    K.dcm_propensity(c, offs, code, ranks, lam, alpha, prop, loglik)
    out = prop if slot is None else prop[slot]
    fitted = np.where(reads > 0, lam, np.nan)
    return CascadeEstimate(out, fitted[1], fitted[0], reads[1], reads[0], ids, alpha,
                           doc_reads, float(loglik.sum()), offs.size - 1, int(done),
                           bool(converged))

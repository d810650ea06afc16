r"""Dependent-click-model EM over click logs (numba, no validation).

The model: a user reads a list from the top (position 1 is always read); a
read result of document :math:`d` is clicked with probability
:math:`\alpha_d`; after reading position :math:`j` the user reads
:math:`j + 1` with probability :math:`\lambda^{+}_{r(j)}` after a click and
:math:`\lambda^{-}_{r(j)}` after a skip, where :math:`r(j) = \min(j, R - 1)`
(0-based) indexes the continuation table ``lam[c, r]`` (``c`` = 0 skip, 1 click).

Everything above a list's last click was read, so its transitions and
skips are observed; below it the only latent quantity is where the user
stopped.  With :math:`\rho_j` = P(no click below :math:`j` | :math:`j` read)

.. math:: \rho_{n-1} = 1, \qquad
          \rho_j = (1 - \lambda_j) + \lambda_j (1 - \alpha_{j+1}) \rho_{j+1},

the posterior probability that position :math:`j` below the last click
:math:`s` was read is :math:`\pi_j \rho_j / \rho_s` with
:math:`\pi_j = \prod_{i=s}^{j-1} \lambda_i (1 - \alpha_{i+1})`.  The E-step
accumulates expected reads and continuations per ``(c, r)`` and the posterior
"not read" of each skipped result; the M-step is closed-form.

Rows are in displayed order within each list (``offsets``); documents are
``0..n_docs - 1`` with a CSR index ``doc_ptr``/``doc_rows`` of their rows.
"""

from __future__ import annotations

import numpy as np
from numba import njit, prange

_TINY = 1e-300
# sweeps of _partial per call: documents still moving after these wait for the next full
# update (100 was the fastest of 30, 100 and 1,000 on bench_propensity's 5 M logs)
_SWEEPS = 100


@njit(cache=True)
def doc_index(doc, n_docs):
    """Return ``(doc_ptr, doc_rows)``, a CSR index of the rows of each document.

    ``doc_rows`` has the type of ``doc``: the caller picks one that holds ``doc.size``.
    """
    ptr = np.zeros(n_docs + 1, dtype=np.int64)
    for i in range(doc.size):
        ptr[doc[i] + 1] += 1
    for d in range(n_docs):
        ptr[d + 1] += ptr[d]
    fill = ptr[:-1].copy()
    rows = np.empty(doc.size, dtype=doc.dtype)  # row numbers fit the ids' type (the caller's)
    for i in range(doc.size):
        rows[fill[doc[i]]] = i
        fill[doc[i]] += 1
    return ptr, rows


@njit(cache=True)
def _last_click(click, a, n):
    for j in range(n - 1, -1, -1):
        if click[a + j] != 0:
            return j
    return -1


@njit(cache=True)
def _rho(click, doc, a, n, s, n_ranks, lam, alpha, rho):
    """Fill ``rho[s:n]`` (P(no click below j | j read)) for the list at ``a``."""
    rho[n - 1] = 1.0
    for j in range(n - 2, s - 1, -1):
        lj = lam[click[a + j], min(j, n_ranks - 1)]
        rho[j] = (1.0 - lj) + lj * (1.0 - alpha[doc[a + j + 1]]) * rho[j + 1]


@njit(cache=True)
def summarize(click, offsets, doc, n_docs, n_ranks):
    """Group the lists and count what the EM never has to recompute.

    Consecutive lists showing the same documents in the same order form one
    *template* (the sessions of a query under a fixed logger).  Returns
    ``(t_offsets, t_doc, t_last, t_none, t_rank0, fixed, clicks, known)``:
    template row ranges and documents; per template row, the sessions whose
    last click is there; per template, the sessions without a click and the
    0-based position of its first row (a template keeps only its rows from the
    first that may hide a latent read: the EM never reads the rows above, and
    a template with nothing latent is dropped); ``fixed[c, r, 0/1]``
    the reads and continuations observed above each last click; per document
    its clicks and its rows surely read (at or above the list's last click).
    """
    n_lists = offsets.size - 1
    t_offsets = np.zeros(n_lists + 1, dtype=np.int64)
    t_doc = np.empty(click.size, dtype=doc.dtype)
    t_last = np.zeros(click.size)
    t_none = np.zeros(n_lists)
    t_rank0 = np.zeros(n_lists, dtype=np.int64)
    fixed = np.zeros((2, n_ranks, 2))
    clicks = np.zeros(n_docs)
    known = np.zeros(n_docs)
    n_t = 0
    for li in range(n_lists):
        a = offsets[li]
        n = offsets[li + 1] - a
        same = n_t > 0 and t_offsets[n_t] - t_offsets[n_t - 1] == n
        if same:
            b = t_offsets[n_t - 1]
            for j in range(n):
                if t_doc[b + j] != doc[a + j]:
                    same = False
                    break
        if not same:
            b = t_offsets[n_t]
            for j in range(n):
                t_doc[b + j] = doc[a + j]
            n_t += 1
            t_offsets[n_t] = b + n
        b = t_offsets[n_t - 1]
        last = _last_click(click, a, n)
        if last < 0:
            t_none[n_t - 1] += 1.0
        else:
            t_last[b + last] += 1.0
        for j in range(max(last, 0) + 1):
            d = doc[a + j]
            known[d] += 1.0
            if click[a + j] != 0:
                clicks[d] += 1.0
            if j < last:
                r = min(j, n_ranks - 1)
                fixed[click[a + j], r, 0] += 1.0
                fixed[click[a + j], r, 1] += 1.0
    # keep of each template only its rows from the first that may be latent (the first
    # last click, or the top where a session has no click); a template whose every session
    # clicked its last row has nothing latent and goes
    m = 0
    k = 0
    end = 0
    for ti in range(n_t):
        a = end  # t_offsets[ti] may be overwritten (in-place compaction)
        end = t_offsets[ti + 1]
        n = end - a
        first = 0
        if t_none[ti] == 0.0:
            while t_last[a + first] == 0.0:
                first += 1
        if n - first < 2:
            continue
        for j in range(first, n):
            t_doc[m + j - first] = t_doc[a + j]
            t_last[m + j - first] = t_last[a + j]
        t_none[k] = t_none[ti]
        t_rank0[k] = first
        m += n - first
        k += 1
        t_offsets[k] = m
    return (t_offsets[: k + 1].copy(), t_doc[:m].copy(), t_last[:m].copy(),
            t_none[:k].copy(), t_rank0[:k].copy(), fixed, clicks, known)


@njit(cache=True, inline="always")
def _template(ti, t_offsets, t_doc, t_last, t_none, t_rank0, n_ranks, lam, alpha, rho, rho_c, kp,
              own, t_read, pos):
    """E-step of one template: expected tail reads of its rows, continuations into ``own``.

    ``rho``, ``rho_c`` and ``kp`` are scratch of the longest template's length
    (``kp[j]``: 1 - the attractiveness of row ``j + 1``, gathered once).  The
    expected reads of template row ``i`` go to ``t_read[pos[i]]`` (document-major
    order, see :func:`dcm_em`).
    """
    a = t_offsets[ti]
    n = t_offsets[ti + 1] - a
    r0 = t_rank0[ti]
    nxt = 1.0  # rho[j + 1]
    rho[n - 1] = 1.0
    rho_c[n - 1] = 1.0
    for j in range(n - 2, -1, -1):
        r = min(j + r0, n_ranks - 1)
        k1 = 1.0 - alpha[t_doc[a + j + 1]]
        kp[j] = k1
        keep = k1 * nxt
        nxt = (1.0 - lam[0, r]) + lam[0, r] * keep
        rho[j] = nxt
        rho_c[j] = (1.0 - lam[1, r]) + lam[1, r] * keep
    g = t_none[ti] / max(nxt, _TINY)
    t_read[pos[a]] = 0.0  # the first row: the top (always read) or a last click
    cur = nxt  # rho[j]
    for j in range(n - 1):
        nxt = rho[j + 1]
        read = g * cur
        r = min(j + r0, n_ranks - 1)
        keep = kp[j]
        f_skip = lam[0, r] * keep
        own[0, r, 0] += read
        own[0, r, 1] += g * f_skip * nxt
        m = t_last[a + j]
        g *= f_skip
        if m > 0.0:
            w = m * lam[1, r] * keep / max(rho_c[j], _TINY)
            own[1, r, 0] += m
            own[1, r, 1] += w * nxt
            g += w
        t_read[pos[a + j + 1]] = g * nxt
        cur = nxt


@njit(cache=True, parallel=True)
def _e_step(t_offsets, t_doc, t_last, t_none, t_rank0, n_ranks, lam, alpha, chunks, longest, acc,
            t_read, pos):
    """Accumulate expected tail reads per template row (``t_read``) and continuations (``acc``)."""
    for ch in prange(chunks.size - 1):
        rho = np.empty(longest)
        rho_c = np.empty(longest)
        kp = np.empty(longest)
        own = np.zeros((2, n_ranks, 2))  # this chunk's sums, written to acc once
        for ti in range(chunks[ch], chunks[ch + 1]):
            _template(ti, t_offsets, t_doc, t_last, t_none, t_rank0, n_ranks, lam, alpha, rho,
                      rho_c, kp, own, t_read, pos)
        acc[ch] = own


@njit(cache=True, inline="always")
def _new_alpha(d, doc_ptr, t_read, clicks, known, prior, alpha, doc_reads):
    """Update ``alpha[d]`` (see :func:`_m_alpha`); returns how far it moved.

    The document's expected reads are ``t_read[doc_ptr[d]:doc_ptr[d + 1]]``
    (document-major), added in row order.
    """
    reads = known[d]
    for t in range(doc_ptr[d], doc_ptr[d + 1]):
        reads += t_read[t]
    doc_reads[d] = reads
    reads += prior[0]
    if reads <= 0.0:
        return 0.0
    new = min((clicks[d] + prior[0] * prior[1]) / reads, 1.0)
    change = abs(new - alpha[d])
    alpha[d] = new
    return change


@njit(cache=True, parallel=True)
def _m_alpha(doc_ptr, t_read, clicks, known, prior, alpha, doc_reads, moved):
    """Attractiveness = (clicks + prior[0] * prior[1]) / (expected reads + prior[0]) per document.

    ``prior``: pseudo-reads and their click rate (a Beta prior; 0 pseudo-reads
    is maximum likelihood).  Expected reads per document go to ``doc_reads``,
    how far each attractiveness moved to ``moved``.  Returns the largest move.
    """
    for d in prange(alpha.size):
        moved[d] = _new_alpha(d, doc_ptr, t_read, clicks, known, prior, alpha, doc_reads)
    return moved.max() if alpha.size else 0.0


@njit(cache=True)
def _em_step(t_offsets, t_doc, t_last, t_none, t_rank0, fixed, clicks, known, prior, doc_ptr,
             pos, n_ranks, lam, alpha, chunks, longest, acc, t_read, reads, doc_reads, moved):
    """One EM update of ``lam`` and ``alpha`` in place; returns the largest change of each."""
    _e_step(t_offsets, t_doc, t_last, t_none, t_rank0, n_ranks, lam, alpha, chunks, longest, acc,
            t_read, pos)
    change = _m_alpha(doc_ptr, t_read, clicks, known, prior, alpha, doc_reads, moved)
    lam_change = 0.0
    for c in range(2):
        for r in range(n_ranks):
            seen = fixed[c, r, 0]
            went = fixed[c, r, 1]
            for ch in range(chunks.size - 1):
                seen += acc[ch, c, r, 0]
                went += acc[ch, c, r, 1]
            reads[c, r] = seen
            if seen > 0.0:
                new = min(went / seen, 1.0)
                lam_change = max(lam_change, abs(new - lam[c, r]))
                lam[c, r] = new
    return change, lam_change


# a sweep lists, recomputes and updates on threads from this many template rows of its documents on
_PAR_MIN = 2048


@njit(cache=True, parallel=True)
def _mark_templates(active, doc_ptr, doc_rows, row_t, in_t):
    """Flag in ``in_t`` the templates showing a document of ``active``, on threads.

    Threads may flag the same template at once: they write the same value.
    """
    for k in prange(active.size):
        d = active[k]
        for t in range(doc_ptr[d], doc_ptr[d + 1]):
            in_t[row_t[doc_rows[t]]] = True


@njit(cache=True, parallel=True)
def _templates_parallel(temps, t_offsets, t_doc, t_last, t_none, t_rank0, n_ranks, lam, alpha,
                        longest, t_read, pos, in_d):
    """:func:`_template` of ``temps`` (continuations dropped) in 64 chunks on threads.

    Flags in ``in_d`` the documents the templates show.  Each template writes
    only its own rows' reads, so the order does not matter.
    """
    n_temps = temps.size
    n_ch = min(64, n_temps)
    for ch in prange(n_ch):
        rho = np.empty(longest)
        rho_c = np.empty(longest)
        kp = np.empty(longest)
        own = np.zeros((2, n_ranks, 2))  # continuations: unused (lam is fixed)
        for k in range(ch * n_temps // n_ch, (ch + 1) * n_temps // n_ch):
            ti = temps[k]
            _template(ti, t_offsets, t_doc, t_last, t_none, t_rank0, n_ranks, lam, alpha,
                      rho, rho_c, kp, own, t_read, pos)
            for i in range(t_offsets[ti], t_offsets[ti + 1]):
                in_d[t_doc[i]] = True


@njit(cache=True, parallel=True)
def _alphas_parallel(docs, doc_ptr, t_read, clicks, known, prior, alpha, doc_reads, moved):
    """:func:`_new_alpha` of ``docs`` into ``moved``, on threads."""
    for k in prange(docs.size):
        d = docs[k]
        moved[d] = _new_alpha(d, doc_ptr, t_read, clicks, known, prior, alpha, doc_reads)


@njit(cache=True)
def _flagged(flags):
    """Return the indices of ``flags`` set, in order, and clear them."""
    out = np.flatnonzero(flags)
    flags[:] = False
    return out


@njit(cache=True)
def _partial(t_offsets, t_doc, t_last, t_none, t_rank0, row_t, clicks, known, prior, doc_ptr,
             doc_rows, pos, n_ranks, lam, alpha, longest, t_read, doc_reads, moved, tol, sweeps):
    """EM of the attractiveness alone, ``lam`` fixed, over the documents still moving.

    A template's expected reads depend on ``lam`` and its documents'
    attractiveness only, so with ``lam`` fixed a sweep recomputes the
    templates of the documents that moved by more than ``tol`` and updates
    the documents they show; the others' reads are current.  Every template
    of a sweep reads the attractiveness as it was at the sweep's start, and a
    document's update reads only its own rows, so neither order matters: a
    sweep whose documents show ``_PAR_MIN`` template rows or more lists,
    recomputes and updates on threads with the same results.  Stops when none
    moves by more than ``tol`` or after ``sweeps`` sweeps; returns the sweeps run.
    """
    n_t = t_offsets.size - 1
    in_t = np.zeros(n_t, dtype=np.bool_)
    in_d = np.zeros(alpha.size, dtype=np.bool_)
    active = np.flatnonzero(moved > tol)
    temps = np.empty(n_t, dtype=np.int64)
    docs = np.empty(alpha.size, dtype=np.int64)
    rho = np.empty(longest)
    rho_c = np.empty(longest)
    kp = np.empty(longest)
    own = np.zeros((2, n_ranks, 2))  # continuations: unused (lam is fixed)
    done = 0
    while active.size and done < sweeps:
        shown = 0  # template rows of the moving documents: at least their templates
        for d in active:
            shown += doc_ptr[d + 1] - doc_ptr[d]
        if shown >= _PAR_MIN:
            # flags set on threads, listed by one scan (in index order: results do not depend
            # on the order)
            _mark_templates(active, doc_ptr, doc_rows, row_t, in_t)
            big = _flagged(in_t)
            _templates_parallel(big, t_offsets, t_doc, t_last, t_none, t_rank0, n_ranks, lam,
                                alpha, longest, t_read, pos, in_d)
            listed = _flagged(in_d)
            _alphas_parallel(listed, doc_ptr, t_read, clicks, known, prior, alpha, doc_reads,
                             moved)
            n_docs = listed.size
            docs[:n_docs] = listed
        else:
            n_temps = 0
            for d in active:
                for t in range(doc_ptr[d], doc_ptr[d + 1]):
                    ti = row_t[doc_rows[t]]
                    if not in_t[ti]:
                        in_t[ti] = True
                        temps[n_temps] = ti
                        n_temps += 1
            n_docs = 0
            for k in range(n_temps):
                ti = temps[k]
                in_t[ti] = False
                for i in range(t_offsets[ti], t_offsets[ti + 1]):
                    d = t_doc[i]
                    if not in_d[d]:
                        in_d[d] = True
                        docs[n_docs] = d
                        n_docs += 1
            for k in range(n_temps):
                _template(temps[k], t_offsets, t_doc, t_last, t_none, t_rank0, n_ranks, lam,
                          alpha, rho, rho_c, kp, own, t_read, pos)
            for k in range(n_docs):
                d = docs[k]
                in_d[d] = False
                moved[d] = _new_alpha(d, doc_ptr, t_read, clicks, known, prior, alpha, doc_reads)
        n_moving = 0
        for k in range(n_docs):
            d = docs[k]
            if moved[d] > tol:
                docs[n_moving] = d
                n_moving += 1
        active = docs[:n_moving].copy()
        done += 1
    return done


@njit(cache=True)
def _extrapolate(x0, x1, x2, out):
    """SQUAREM (Varadhan and Roland 2008, scheme S3) from three iterates, clipped to [0, 1]."""
    sr = 0.0
    sv = 0.0
    for i in range(x0.size):
        r = x1[i] - x0[i]
        v = x2[i] - 2.0 * x1[i] + x0[i]
        sr += r * r
        sv += v * v
    step = -np.sqrt(sr / sv) if sv > 0.0 else -1.0
    step = min(step, -1.0)
    for i in range(x0.size):
        r = x1[i] - x0[i]
        v = x2[i] - 2.0 * x1[i] + x0[i]
        out[i] = min(max(x0[i] - 2.0 * step * r + step * step * v, 0.0), 1.0)


@njit(cache=True)
def dcm_em(t_offsets, t_doc, t_last, t_none, t_rank0, fixed, clicks, known, prior, doc_ptr,
           doc_rows, n_ranks, lam, alpha, chunks, n_iter, tol, doc_reads):
    """Run EM from ``lam`` (2, n_ranks) and ``alpha`` (n_docs,), updated in place.

    Takes the output of :func:`summarize` and a CSR index of the template rows
    by document (:func:`doc_index` of ``t_doc``).  The attractiveness update
    is the fixed point of the EM update, clicks / expected reads, at the
    current posterior, with ``prior = (pseudo_reads, click_rate)`` (MAP).
    Iterations are accelerated by SQUAREM (two EM updates, then an
    extrapolation; each update counts as an iteration).  Once an update moves
    no continuation by more than ``tol``, the documents that moved by more than
    ``tol`` converge alone (:func:`_partial`, ``lam`` fixed; its sweeps touch
    only their templates and are not counted), and SQUAREM extrapolates the
    continuations over two such rounds; the run
    stops when one full update moves nothing by more than ``tol``, so the
    fixed point and the test are those of plain EM.  Expected reads per
    document (at the last E-step) go to ``doc_reads``.  Returns ``(iterations, converged, reads)``:
    ``reads[c, r]`` is the expected number of reads in click state ``c`` at
    rank index ``r`` that had a next result (0: ``lam[c, r]`` has no data).
    """
    n_t = t_offsets.size - 1
    longest = 1
    row_t = np.empty(t_doc.size, dtype=np.int64)  # the template of each row
    for ti in range(n_t):
        longest = max(longest, t_offsets[ti + 1] - t_offsets[ti])
        row_t[t_offsets[ti]:t_offsets[ti + 1]] = ti
    acc = np.zeros((chunks.size - 1, 2, n_ranks, 2))
    t_read = np.zeros(t_doc.size)  # expected reads, document-major: row doc_rows[t] at t
    pos = np.empty_like(doc_rows)  # where each template row's reads go
    for t in range(doc_rows.size):
        pos[doc_rows[t]] = t
    reads = np.zeros((2, n_ranks))
    moved = np.zeros(alpha.size)
    n_lam = 2 * n_ranks
    size = n_lam + alpha.size
    x0 = np.empty(size)
    x1 = np.empty(size)
    x2 = np.empty(size)
    flat = lam.reshape(n_lam)  # a view: lam is C-contiguous
    it = 0
    settled = False
    while it < n_iter:
        x0[:n_lam] = flat
        x0[n_lam:] = alpha
        change, lam_change = _em_step(t_offsets, t_doc, t_last, t_none, t_rank0, fixed, clicks,
                                      known, prior, doc_ptr, pos, n_ranks, lam, alpha, chunks,
                                      longest, acc, t_read, reads, doc_reads, moved)
        it += 1
        if max(change, lam_change) < tol:
            return it, True, reads
        settled = settled or lam_change < tol
        if settled:
            # the continuations have settled: the documents still moving converge alone, and
            # SQUAREM extrapolates the continuations over two such rounds
            _partial(t_offsets, t_doc, t_last, t_none, t_rank0, row_t, clicks, known, prior,
                     doc_ptr, doc_rows, pos, n_ranks, lam, alpha, longest, t_read, doc_reads, moved,
                     tol, _SWEEPS)
            if it + 1 > n_iter:
                continue
            x1[:n_lam] = flat
            change, lam_change = _em_step(t_offsets, t_doc, t_last, t_none, t_rank0, fixed,
                                          clicks, known, prior, doc_ptr, pos, n_ranks, lam,
                                          alpha, chunks, longest, acc, t_read, reads, doc_reads,
                                          moved)
            it += 1
            if max(change, lam_change) < tol:
                return it, True, reads
            _partial(t_offsets, t_doc, t_last, t_none, t_rank0, row_t, clicks, known, prior,
                     doc_ptr, doc_rows, pos, n_ranks, lam, alpha, longest, t_read, doc_reads, moved,
                     tol, _SWEEPS)
            x2[:n_lam] = flat
            _extrapolate(x0[:n_lam], x1[:n_lam], x2[:n_lam], x0[:n_lam])
            flat[:] = x0[:n_lam]
            continue  # the next full update checks convergence
        if it + 2 > n_iter:
            continue
        x1[:n_lam] = flat
        x1[n_lam:] = alpha
        _em_step(t_offsets, t_doc, t_last, t_none, t_rank0, fixed, clicks, known, prior, doc_ptr,
                 pos, n_ranks, lam, alpha, chunks, longest, acc, t_read, reads, doc_reads,
                 moved)
        x2[:n_lam] = flat
        x2[n_lam:] = alpha
        _extrapolate(x0, x1, x2, x0)
        flat[:] = x0[:n_lam]
        alpha[:] = x0[n_lam:]
        it += 1
    return it, False, reads


@njit(cache=True, parallel=True)
def dcm_propensity(click, offsets, doc, n_ranks, lam, alpha, out, loglik):
    """Per row P(read | clicks above it) into ``out``; per list log-likelihood into ``loglik``."""
    n_lists = offsets.size - 1
    for li in prange(n_lists):
        a = offsets[li]
        n = offsets[li + 1] - a
        e = 1.0
        for j in range(n):
            out[a + j] = e
            if j < n - 1:
                lj = lam[click[a + j], min(j, n_ranks - 1)]
                if click[a + j] != 0:
                    e = lj
                else:
                    al = alpha[doc[a + j]]
                    e = lj * e * (1.0 - al) / max(1.0 - e * al, _TINY)
        last = _last_click(click, a, n)
        s = max(last, 0)
        ll = 0.0
        for j in range(s):
            al = alpha[doc[a + j]]
            ll += np.log(max(lam[click[a + j], min(j, n_ranks - 1)], _TINY))
            ll += np.log(max(al if click[a + j] != 0 else 1.0 - al, _TINY))
        al = alpha[doc[a + s]]
        ll += np.log(max(al if last >= 0 else 1.0 - al, _TINY))
        rho = np.empty(n)
        _rho(click, doc, a, n, s, n_ranks, lam, alpha, rho)
        loglik[li] = ll + np.log(max(rho[s], _TINY))

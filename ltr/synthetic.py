"""Deterministic synthetic ranking data shaped like MSLR-WEB10K (:func:`make_ranking`).

Re-exported by :mod:`ltr.datasets`, which holds the :class:`RankingData` container.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from ltr._validation import check_int, check_real, short_repr
from ltr.datasets import RankingData

__all__ = ["make_ranking"]

#: Grade proportions (grade 0 first).  The default is MSLR-WEB10K's
#: (about 52/32/13/2/1 %); named objectives get their own scales.
_DEFAULT_PROPORTIONS = (0.52, 0.32, 0.13, 0.02, 0.01)
_OBJECTIVE_PROPORTIONS: dict[str, tuple[float, ...]] = {
    "watch": (0.50, 0.30, 0.15, 0.05),
    "share": (0.80, 0.16, 0.04),
    "follow": (0.70, 0.20, 0.08, 0.02),
}
# Lognormal docs-per-query: median / mean = exp(-sigma^2 / 2) = 0.8.
_DOCS_SIGMA = float(np.sqrt(2.0 * np.log(1.25)))
# Correlation between an objective's latent relevance and the shared one.
_OBJECTIVE_RHO = 0.75
# Feature looks (see make_ranking) and the number of relevance roles.
_SHIFTED, _HEAVY, _COUNTS, _PERCENT, _QUERY_LEVEL = 0, 1, 2, 3, 4
_N_ROLES = 24
# Rows generated per block: fixed, so the random stream never depends on size.
_BLOCK_ROWS = 8192


def _make_features(
    rng: np.random.Generator,
    n_features: int,
    look: np.ndarray,
    role: np.ndarray,
    row_query: np.ndarray,
    per_query: np.ndarray,
    shift: np.ndarray,
) -> tuple[np.ndarray, dict[int, np.ndarray]]:
    """Fill ``X`` (C-ordered float32) block by block, one contiguous column at a time.

    Role columns start from a standard normal ``z`` (kept in the returned dict
    for the relevance function) and get a monotone look; other columns are
    drawn directly from cheap uniform-based distributions.
    """
    n_rows = row_query.size
    X = np.empty((n_rows, n_features), dtype=np.float32)
    role_cols = [int(j) for j in np.unique(role)]
    is_role = np.zeros(n_features, dtype=bool)
    is_role[role_cols] = True
    latent_inputs = {j: np.empty(n_rows, dtype=np.float32) for j in role_cols}
    block = np.empty((n_features, min(_BLOCK_ROWS, n_rows)), dtype=np.float32)
    for start in range(0, n_rows, _BLOCK_ROWS):
        stop = min(start + _BLOCK_ROWS, n_rows)
        m = stop - start
        rq = row_query[start:stop]
        out = block[:, :m]
        for j in range(n_features):
            kind = look[j]
            dest = out[j]
            if kind == _QUERY_LEVEL:
                np.take(per_query[:, j], rq, out=dest)
                if is_role[j]:
                    latent_inputs[j][start:stop] = dest
                continue
            if is_role[j] or kind == _SHIFTED:
                rng.standard_normal(m, dtype=np.float32, out=dest)
                if is_role[j]:
                    latent_inputs[j][start:stop] = dest
                if kind == _SHIFTED:
                    dest += shift[rq]
                elif kind == _HEAVY:
                    dest *= 0.5
                    np.exp(dest, out=dest)
                else:  # _PERCENT (roles are never counts)
                    dest *= 10.0
                    dest += 50.0
                continue
            rng.random(m, dtype=np.float32, out=dest)
            if kind == _PERCENT:
                dest *= 100.0
                continue
            np.negative(dest, out=dest)
            np.log1p(dest, out=dest)  # log(1 - u) in (-inf, 0]: finite since u < 1
            if kind == _HEAVY:
                dest *= -1.5
            else:  # _COUNTS: geometric counts
                dest *= -3.0
                np.floor(dest, out=dest)
        X[start:stop] = out.T
    return X, latent_inputs


def _seed_sequence(random_state: Any) -> np.random.SeedSequence:
    if random_state is None:
        return np.random.SeedSequence()
    if isinstance(random_state, np.random.Generator):
        return np.random.SeedSequence(int(random_state.integers(0, 2**63 - 1)))
    if isinstance(random_state, (bool, np.bool_)) or not isinstance(
        random_state, (int, np.integer)
    ):
        raise TypeError(
            "random_state must be an int, a numpy Generator or None, "
            f"got {short_repr(random_state)}"
        )
    return np.random.SeedSequence(check_int(random_state, "random_state", minimum=0))


def _check_objectives(objectives: Any) -> list[str]:
    if objectives is None:
        return []
    if isinstance(objectives, str) or not isinstance(objectives, Sequence):
        raise TypeError(
            f"objectives must be a sequence of names such as ('watch', 'share'), got {objectives!r}"
        )
    names = list(objectives)
    if not names:
        raise ValueError("objectives is empty: name at least one objective or pass None")
    for i, name in enumerate(names):
        if not isinstance(name, str) or not name:
            raise TypeError(f"objectives[{i}] must be a non-empty str, got {name!r}")
    if len(set(names)) != len(names):
        raise ValueError(f"objectives must be unique, got {names!r}")
    return names


def _grades(latent: np.ndarray, proportions: Sequence[float]) -> np.ndarray:
    """Grades 0..len(proportions)-1 with the given shares, by quantiles of *latent*."""
    cuts = np.quantile(latent, np.cumsum(proportions)[:-1])
    return np.searchsorted(cuts, latent, side="right").astype(np.float64)


def _categorical_columns(
    rng: np.random.Generator, n_columns: int, n_rows: int
) -> tuple[np.ndarray, np.ndarray]:
    """``(ids of shape (n_rows, n_columns), relevance effect per row)``.

    Column ``i`` (0-based) has ``8 * (i + 1)`` categories drawn with Zipf-like
    weights; ids are distinct integers in 1..999 whose order says nothing about
    their effect (normal, scale ``1.2 / (i + 1)``).
    """
    ids = np.zeros((n_rows, n_columns), dtype=np.int64)
    effect = np.zeros(n_rows)
    for i in range(n_columns):
        n_cats = 8 * (i + 1)
        weights = 1.0 / np.arange(1, n_cats + 1) ** 0.7
        level = rng.choice(n_cats, size=n_rows, p=weights / weights.sum())
        values = rng.choice(np.arange(1, 1000), size=n_cats, replace=False)
        ids[:, i] = values[level]
        effect += (1.2 / (i + 1)) * rng.standard_normal(n_cats)[level]
    return ids, effect


def _standardize(values: np.ndarray) -> np.ndarray:
    std = values.std()
    return (values - values.mean()) / (std if std > 0 else 1.0)


def make_ranking(
    n_queries: int,
    *,
    n_features: int = 136,
    mean_docs: float = 120,
    max_docs: int = 1000,
    objectives: Sequence[str] | None = None,
    n_segments: int = 0,
    n_categorical: int = 0,
    random_state: int | np.random.Generator | None = 0,
) -> RankingData:
    """Deterministic synthetic ranking data shaped like MSLR-WEB10K.

    * Documents per query are log-normal (median about ``0.8 * mean_docs``,
      mean about ``mean_docs``, a long right tail) clipped to
      ``[1, max_docs]``.
    * ``X`` is ``float32``.  About 10 % of the features are query-level
      (constant within a query; one of them reveals part of a hidden
      per-query "how many relevant documents" effect); the others are
      document-level, some heavy-tailed or count-like, some shifted per query.
    * Relevance is a noisy non-linear function of a few features: a linear
      term, a saturating ``tanh``, a threshold, a quadratic penalty, a
      document x document interaction and a query x document interaction, plus
      the hidden query effect and query-specific noise.  Grades 0-4 are cut at
      quantiles so the shares are about 52/32/13/2/1 %, as in MSLR-WEB10K.
    * ``objectives=("watch", "share", "follow")`` adds one graded label per
      objective in ``labels``: each mixes the shared relevance (correlation
      about 0.75) with its own features and noise.  ``"watch"`` and
      ``"follow"`` are graded 0-3, ``"share"`` 0-2, other names 0-4.  ``y`` is
      then the first objective's label.
    * ``n_segments > 0`` adds a per-query category ``"seg0"``, ``"seg1"``, ...
      in ``segments`` (unequal sizes; higher segments tend to have noisier
      labels, so per-segment nDCG differs).  ``X`` and ``y`` do not depend on
      ``n_segments``.
    * ``n_categorical > 0`` appends that many categorical document-level
      columns ``c1``, ``c2``, ... after the numeric ones: integer category ids
      (not ordered by their effect), column ``i`` with ``8 * i`` categories of
      Zipf-like frequencies; each category adds its own effect to the
      relevance, strongest for ``c1`` (``c1`` carries most of the signal).
      The numeric columns do not depend on ``n_categorical``.

    Everything is vectorised numpy (features are filled in blocks of rows, one
    contiguous column at a time); 10,000 queries (about 1.2 million rows x 136
    features, 620 MiB of ``float32``) take about 3 s of CPU time.  ``X`` does
    not depend on ``objectives`` or ``n_segments``, and ``y`` not on
    ``n_segments``.

    Parameters
    ----------
    n_queries : int
        Number of queries, >= 1.
    n_features : int, default=136
        Number of features, >= 1.
    mean_docs : float, default=120
        Mean documents per query (before clipping), in ``[1, max_docs]``.
    max_docs : int, default=1000
        Largest query size.
    objectives : sequence of str, optional
        Names of objectives that get their own label column.
    n_segments : int, default=0
        Number of query segments; 0 for none.
    n_categorical : int, default=0
        Number of categorical columns appended (``c1..cK``).
    random_state : int, numpy.random.Generator or None, default=0
        Seed.  The same int gives identical arrays (on one platform and numpy
        version).

    Returns
    -------
    RankingData
        With ``qid = 0..n_queries-1`` and feature names ``f1..fN`` (then
        ``c1..cK``).

    Examples
    --------
    >>> data = make_ranking(20, n_features=10, mean_docs=15, random_state=1)
    >>> data.n_queries, data.n_features, data.X.dtype
    (20, 10, dtype('float32'))
    >>> multi = make_ranking(20, objectives=("watch", "share"), n_features=10)
    >>> sorted(multi.labels), bool((multi.y == multi.labels["watch"]).all())
    (['share', 'watch'], True)
    """
    n_queries = check_int(n_queries, "n_queries", minimum=1)
    n_features = check_int(n_features, "n_features", minimum=1)
    max_docs = check_int(max_docs, "max_docs", minimum=1)
    mean_docs = check_real(mean_docs, "mean_docs", minimum=1.0)
    if mean_docs > max_docs:
        raise ValueError(
            f"mean_docs must be <= max_docs, got mean_docs={mean_docs!r} and max_docs={max_docs!r}"
        )
    n_segments = check_int(n_segments, "n_segments", minimum=0)
    n_categorical = check_int(n_categorical, "n_categorical", minimum=0, maximum=64)
    names = _check_objectives(objectives)
    seq = _seed_sequence(random_state)
    rng_struct, rng_x, rng_query, rng_noise, rng_obj, rng_seg, rng_cat = (
        np.random.Generator(np.random.PCG64(s)) for s in seq.spawn(7)
    )

    # -- query sizes ------------------------------------------------------
    mu = np.log(mean_docs) - _DOCS_SIGMA**2 / 2.0
    sizes = np.rint(rng_struct.lognormal(mu, _DOCS_SIGMA, size=n_queries))
    sizes = np.clip(sizes, 1, max_docs).astype(np.int64)
    offsets = np.zeros(n_queries + 1, dtype=np.int64)
    np.cumsum(sizes, out=offsets[1:])
    n_rows = int(offsets[-1])
    row_query = np.repeat(np.arange(n_queries, dtype=np.int64), sizes)

    # -- feature layout ---------------------------------------------------
    # Column j is query-level when j % 10 == 9; the other columns cycle through
    # four looks by j % 4: 0 normal shifted per query, 1 heavy-tailed positive
    # (BM25-like), 2 counts, 3 on a 0-100 scale.  Relevance reads a random
    # subset of the columns ("roles"): roles 0, 1 are query-level when there
    # are any (1 also reveals part of the hidden per-query offset), 2..8 the
    # main document features, 9..16 weak ones, 17..23 objective-specific ones.
    columns = np.arange(n_features)
    look = np.where(columns % 10 == 9, _QUERY_LEVEL, columns % 4)
    query_cols = columns[look == _QUERY_LEVEL]
    candidates = rng_struct.permutation(columns[(look != _QUERY_LEVEL) & (look != _COUNTS)])
    role = candidates[np.arange(_N_ROLES) % candidates.size]
    if query_cols.size:
        role[:2] = rng_struct.permutation(query_cols)[np.arange(2) % query_cols.size]

    # -- hidden query effects and query-level features ----------------------
    hidden = rng_query.standard_normal(n_queries)  # per-query relevance offset
    noise_scale = 0.9 * np.exp(0.35 * rng_query.standard_normal(n_queries))
    shift = (0.5 * rng_query.standard_normal(n_queries)).astype(np.float32)
    per_query = rng_query.standard_normal((n_queries, n_features), dtype=np.float32)
    if query_cols.size:
        per_query[:, role[1]] = 0.8 * hidden + 0.6 * per_query[:, role[1]]

    # -- features -----------------------------------------------------------
    X, latent_inputs = _make_features(rng_x, n_features, look, role, row_query, per_query, shift)

    def col(r: int) -> np.ndarray:
        return latent_inputs[int(role[r])].astype(np.float64)

    a, b, c, d, e, g, h = (col(r) for r in range(2, 9))
    u = col(0)
    shared = 1.0 * a + 0.8 * np.tanh(1.5 * b) + 0.6 * c * d + 0.6 * (e > 0.8) - 0.3 * h**2
    shared += 0.5 * u * g
    for r in range(9, 17):
        shared += 0.15 * col(r)
    shared = _standardize(shared)
    cat_columns, cat_effect = _categorical_columns(rng_cat, n_categorical, n_rows)
    shared += cat_effect
    query_effect = 1.5 * hidden[row_query]
    row_noise_scale = noise_scale[row_query]

    if names:
        labels: dict[str, np.ndarray] = {}
        for i, name in enumerate(names):
            own = col(17 + (2 * i) % 7) + 0.7 * np.tanh(2.0 * col(17 + (2 * i + 1) % 7))
            latent = (
                _OBJECTIVE_RHO * shared
                + np.sqrt(1.0 - _OBJECTIVE_RHO**2) * _standardize(own)
                + query_effect
                + row_noise_scale * rng_obj.standard_normal(n_rows)
            )
            labels[name] = _grades(latent, _OBJECTIVE_PROPORTIONS.get(name, _DEFAULT_PROPORTIONS))
        y = labels[names[0]]
    else:
        labels = {}
        latent = shared + query_effect + row_noise_scale * rng_noise.standard_normal(n_rows)
        y = _grades(latent, _DEFAULT_PROPORTIONS)

    segments = None
    if n_segments:
        key = np.log(noise_scale) + 0.25 * rng_seg.standard_normal(n_queries)
        weights = 1.0 / np.sqrt(np.arange(1, n_segments + 1))
        cuts = np.quantile(key, np.cumsum(weights / weights.sum())[:-1])
        code = np.searchsorted(cuts, key, side="right")
        segments = np.array([f"seg{i}" for i in range(n_segments)])[code][row_query]

    names = [f"f{j + 1}" for j in range(n_features)]
    if n_categorical:
        X = np.concatenate([X, cat_columns.astype(np.float32)], axis=1)
        names += [f"c{i + 1}" for i in range(n_categorical)]
    return RankingData(
        X=X,
        y=y,
        qid=row_query,
        feature_names=names,
        labels=labels,
        segments=segments,
    )

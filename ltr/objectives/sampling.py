"""Pair-sampling strategies for the LambdaRank objective.

:class:`TopKPairSampling` re-weights (and optionally subsamples) the document
pairs from which LambdaRank gradients are formed:

* **eligible pairs** are two documents of one query with different grades
  that satisfy the objective's truncation rule (at least one of them is in the
  current top ``k`` by model score);
* a pair whose better-ranked document is in the current top ``top`` by model
  score ("touching the head") gets weight ``head_weight``, every other pair
  weight 1;
* ``pairs_per_doc=None``: every eligible pair's lambda and hessian are
  multiplied by its weight (deterministic);
* ``pairs_per_doc=m``: every round, every document draws ``m`` partners among
  its eligible partners with probability proportional to the pair weight, and
  each draw is rescaled by ``W_d / (2 m)`` (``W_d`` the document's total
  eligible pair weight).  The expected gradient equals the weighted all-pairs
  gradient (exactly when ``norm=False``; with ``norm=True`` LightGBM's
  per-query ``log2(1 + S) / S`` factor is computed from the sampled sum ``S``,
  a ratio estimate).  The cost is ``O(n m)`` per query (one uniform number
  and no ``exp`` per draw, partners of another grade drawn without
  rejection) instead of ``O(n k)`` for all pairs; see
  ``experiments/results/objective_speed.md`` for measured round times.

Random numbers are drawn from a seed derived from ``random_state`` and the
boosting round (:meth:`TopKPairSampling.round_seed`), so every round is
reproducible and independent of the number of threads.
"""

from __future__ import annotations

import numpy as np

from ltr._validation import check_int, check_real, check_seed

__all__ = ["TopKPairSampling", "round_seed"]


def round_seed(base_seed: int, iteration: int) -> np.uint64:
    """64-bit seed for boosting round ``iteration`` derived from ``base_seed``."""
    state = np.random.SeedSequence([int(base_seed), int(iteration)]).generate_state(
        1, dtype=np.uint64
    )
    return np.uint64(state[0])


class TopKPairSampling:
    """Weighted top-k pair sampling for :class:`ltr.objectives.LambdaRankObjective`.

    Parameters
    ----------
    top : int, default=20
        Size of the head: pairs touching the current top ``top`` documents
        (by model score) get weight ``head_weight``.
    head_weight : float, default=2.0
        Weight of head pairs (>= 1); other eligible pairs weigh 1.
    pairs_per_doc : int or None, default=None
        ``None`` weights every eligible pair (deterministic).  An integer
        ``m >= 1`` makes every document draw ``m`` partners per round with
        probability proportional to the pair weights, rescaled so the expected
        gradient equals the weighted all-pairs gradient.
    random_state : int, numpy Generator or None, default=None
        Seed of the per-round draws.  ``None`` falls back to the objective's
        ``random_state`` (and to fresh entropy if that is ``None`` too).

    Examples
    --------
    >>> from ltr.objectives.sampling import TopKPairSampling
    >>> TopKPairSampling(top=10, head_weight=3.0, pairs_per_doc=8, random_state=0)
    TopKPairSampling(top=10, head_weight=3.0, pairs_per_doc=8, random_state=0)
    """

    def __init__(
        self,
        top: int = 20,
        head_weight: float = 2.0,
        pairs_per_doc: int | None = None,
        random_state: int | np.random.Generator | None = None,
    ) -> None:
        self.top = check_int(top, "top", minimum=1)
        self.head_weight = check_real(head_weight, "head_weight", minimum=1.0)
        if pairs_per_doc is not None:
            pairs_per_doc = check_int(pairs_per_doc, "pairs_per_doc", minimum=1)
        self.pairs_per_doc = pairs_per_doc
        self.random_state = random_state
        self._seed = check_seed(random_state, "random_state")

    def __repr__(self) -> str:
        return (
            f"TopKPairSampling(top={self.top!r}, head_weight={self.head_weight!r}, "
            f"pairs_per_doc={self.pairs_per_doc!r}, random_state={self.random_state!r})"
        )

    @property
    def base_seed(self) -> int | None:
        """Integer seed from ``random_state`` (``None`` when not seeded)."""
        return self._seed

    def kernel_args(self) -> tuple[int, float, int]:
        """``(top, head_weight, pairs_per_doc)`` as the kernels take them (0 = all pairs)."""
        return self.top, self.head_weight, 0 if self.pairs_per_doc is None else self.pairs_per_doc

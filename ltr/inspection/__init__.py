"""What a trained ranker relies on.

Permutation importance as ΔnDCG (:mod:`._permutation`), its result object (:mod:`._result`)
and the tree rescoring that makes it fast (:mod:`._tree_changes`).
"""

from __future__ import annotations

from ltr.inspection._permutation import (
    PermutationImportance,
    permutation_importance,
)

__all__ = [
    "PermutationImportance",
    "permutation_importance",
]

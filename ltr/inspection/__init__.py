"""What a trained ranker relies on.

Permutation importance as ΔnDCG (:mod:`._permutation`), its result object
(:mod:`._result`) and the tree rescoring that makes it fast
(:mod:`._tree_changes`); TreeSHAP contributions per row, feature, group and
query from the engines' own ``pred_contrib`` (:mod:`._shap`).
"""

from __future__ import annotations

from ltr.inspection._permutation import PermutationImportance, permutation_importance
from ltr.inspection._shap import (
    contributions,
    global_contributions,
    plot_beeswarm,
    plot_query,
    query_contributions,
    to_shap_explanation,
)

__all__ = [
    "PermutationImportance",
    "contributions",
    "global_contributions",
    "permutation_importance",
    "plot_beeswarm",
    "plot_query",
    "query_contributions",
    "to_shap_explanation",
]

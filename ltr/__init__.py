# ruff: noqa: F401  (the TYPE_CHECKING imports re-export the lazy names for type checkers)
"""ltr: learning-to-rank training on LightGBM and XGBoost.

Progressive nDCG@k schedules, weighted top-k pair sampling, composite
multi-objective nDCG, a scikit-learn ranker and nDCG scorer, and permutation
importance measured as ΔnDCG.
"""

from __future__ import annotations

from importlib import import_module
from typing import TYPE_CHECKING, Any

__version__ = "0.1.0"

# Public name -> module that defines it.  Imported lazily so that ``import ltr``
# stays cheap (no numba compilation, no engine import) until a name is used.
_EXPORTS: dict[str, str] = {
    "QueryGroups": "ltr.groups",
    "resolve_groups": "ltr.groups",
    "ndcg": "ltr.metrics",
    "dcg": "ltr.metrics",
    "idcg": "ltr.metrics",
    "composite_ndcg": "ltr.metrics.composite",
    "ndcg_by_segment": "ltr.metrics.composite",
    "smooth": "ltr.metrics.composite",
    "RankingData": "ltr.datasets",
    "load_letor": "ltr.datasets",
    "load_letor_files": "ltr.datasets",
    "from_frame": "ltr.datasets",
    "make_ranking": "ltr.synthetic",
    "read_table": "ltr.datasets",
    "train": "ltr.engines",
    "RankingModel": "ltr.engines",
    "Constant": "ltr.objectives.schedules",
    "Steps": "ltr.objectives.schedules",
    "Linear": "ltr.objectives.schedules",
    "as_schedule": "ltr.objectives.schedules",
    "stages_of": "ltr.objectives.schedules",
    "ThresholdGrades": "ltr.relevance",
    "CategoricalGrades": "ltr.relevance",
    "GradeMapping": "ltr.relevance",
    "PRESETS": "ltr.relevance",
    "apply_mappings": "ltr.relevance",
    "load_config": "ltr.runs.config",
    "RunConfig": "ltr.runs.config",
    "ConfigError": "ltr.runs.config",
    "TrainSettings": "ltr.build",
    "build_training": "ltr.build",
    "LambdaRankObjective": "ltr.objectives",
    "CompositeLambdaRankObjective": "ltr.objectives",
    "TopKPairSampling": "ltr.objectives.sampling",
    "permutation_importance": "ltr.inspection",
    "PermutationImportance": "ltr.inspection",
    "CategoricalCoding": "ltr.categorical",
    "LambdaMARTRanker": "ltr.estimator",
    "GroupedRanker": "ltr.estimator",
    "select_debiasing": "ltr.estimator",
    "DebiasingSelection": "ltr.estimator",
    "make_ndcg_scorer": "ltr.scoring",
    "NDCGScorer": "ltr.scoring",
    "get_scorer": "ltr.scoring",
    "get_scorer_names": "ltr.scoring",
    "parse_metric_name": "ltr.metrics.names",
    "compare": "ltr.evaluation.comparison",
    "Comparison": "ltr.evaluation.comparison",
    "Monitor": "ltr.evaluation.monitoring",
    "check_file_set": "ltr._io",
    "Rule": "ltr.evaluation.monitoring",
    "evaluate": "ltr.evaluation",
    "EvaluationResult": "ltr.evaluation",
    "read_qrels": "ltr.evaluation.trec",
    "read_run": "ltr.evaluation.trec",
    "write_run": "ltr.evaluation.trec",
    "write_qrels": "ltr.evaluation.trec",
    "precision": "ltr.metrics",
    "recall": "ltr.metrics",
    "average_precision": "ltr.metrics",
    "reciprocal_rank": "ltr.metrics",
    "err": "ltr.metrics",
    "hit_rate": "ltr.metrics",
    "make_rank_scorer": "ltr.scoring",
    "RankScorer": "ltr.scoring",
    "ClickLog": "ltr.clicks",
    "simulate_pbm": "ltr.clicks",
    "simulate_cascade": "ltr.clicks",
    "estimate_propensity_em": "ltr.clicks",
    "estimate_propensity_swap": "ltr.clicks",
    "ips_dcg": "ltr.clicks.ips",
    "ips_ndcg": "ltr.clicks.ips",
    "make_ips_ndcg_scorer": "ltr.scoring",
    "IPSNDCGScorer": "ltr.scoring",
}

if TYPE_CHECKING:  # pragma: no cover - lets type checkers and IDEs see the lazy names
    from ltr._io import check_file_set
    from ltr.build import TrainSettings, build_training
    from ltr.categorical import CategoricalCoding
    from ltr.clicks import (
        ClickLog,
        estimate_propensity_em,
        estimate_propensity_swap,
        simulate_cascade,
        simulate_pbm,
    )
    from ltr.clicks.ips import ips_dcg, ips_ndcg
    from ltr.datasets import RankingData, from_frame, load_letor, load_letor_files, read_table
    from ltr.engines import RankingModel, train
    from ltr.estimator import (
        DebiasingSelection,
        GroupedRanker,
        LambdaMARTRanker,
        select_debiasing,
    )
    from ltr.evaluation import EvaluationResult, evaluate
    from ltr.evaluation.comparison import Comparison, compare
    from ltr.evaluation.monitoring import Monitor, Rule
    from ltr.evaluation.trec import read_qrels, read_run, write_qrels, write_run
    from ltr.groups import QueryGroups, resolve_groups
    from ltr.inspection import PermutationImportance, permutation_importance
    from ltr.metrics import (
        average_precision,
        dcg,
        err,
        hit_rate,
        idcg,
        ndcg,
        precision,
        recall,
        reciprocal_rank,
    )
    from ltr.metrics.composite import composite_ndcg, ndcg_by_segment, smooth
    from ltr.metrics.names import parse_metric_name
    from ltr.objectives import CompositeLambdaRankObjective, LambdaRankObjective
    from ltr.objectives.sampling import TopKPairSampling
    from ltr.objectives.schedules import Constant, Linear, Steps, as_schedule, stages_of
    from ltr.relevance import (
        PRESETS,
        CategoricalGrades,
        GradeMapping,
        ThresholdGrades,
        apply_mappings,
    )
    from ltr.runs.config import ConfigError, RunConfig, load_config
    from ltr.scoring import (
        IPSNDCGScorer,
        NDCGScorer,
        RankScorer,
        get_scorer,
        get_scorer_names,
        make_ips_ndcg_scorer,
        make_ndcg_scorer,
        make_rank_scorer,
    )
    from ltr.synthetic import make_ranking

__all__ = sorted(_EXPORTS) + ["__version__"]  # noqa: PLE0605


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'ltr' has no attribute {name!r}")
    value = getattr(import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return __all__

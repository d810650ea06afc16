"""Reference interpreters of the search engines' tree-model formats (for checking exports).

One module per format, each written from the engine's own source (named in
its docstring) and independent of :mod:`ltr.export`: :class:`LtrPluginModel`
(OpenSearch/Elasticsearch LTR ``model/xgboost+json``), :class:`SolrModel`,
:class:`VespaLightGBMModel` and :class:`RankLibModel`.  They evaluate one node
level at a time over all rows and are meant for tests, not speed.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ltr.testing.exported.ltr_plugin import LtrPluginModel
from ltr.testing.exported.ranklib import RankLibModel
from ltr.testing.exported.solr import SolrModel
from ltr.testing.exported.vespa import VespaLightGBMModel

__all__ = ["LtrPluginModel", "RankLibModel", "SolrModel", "VespaLightGBMModel", "load"]


def load(path: Path, fmt: str, feature_names: list[str] | None = None) -> Any:
    """Return the interpreter for *fmt* over the file *path*.

    ``feature_names``: the LTR featureset's order (the other formats name or
    number their features in the file).
    """
    if fmt in ("opensearch-ltr", "elasticsearch-ltr"):
        if feature_names is None:
            raise ValueError(f"feature_names: required for {fmt} (the featureset's feature "
                             "order, one name per model column)")
        return LtrPluginModel.load(path, feature_names, honour_missing=fmt == "opensearch-ltr")
    if fmt == "solr-ltr":
        return SolrModel.load(path)
    if fmt == "vespa":
        return VespaLightGBMModel.load(path)
    if fmt == "ranklib":
        return RankLibModel.load(path)
    raise ValueError(f"format: no reference interpreter for {fmt!r}")

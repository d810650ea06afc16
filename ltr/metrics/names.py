"""Metric and convention names: the one registry, parser and formatter of ``"ndcg@10"`` keys.

Two registries live here, and every module that names a metric or a
convention reads them:

* :data:`REGISTRY`: each metric the package computes, one :class:`MetricInfo`
  per canonical name (``"ndcg"``, ``"map"``, ``"mrr"``...): its function over
  rows you hold, its kernel code in qrels/run evaluation, whether it takes a
  cut-off, which options and metadata its scorer passes, whether it is bounded
  in [0, 1].  Scorers (:func:`ltr.scoring.get_scorer`), run configs
  (``evaluation.metrics``), qrels/run evaluation (:func:`ltr.evaluate`),
  Dask evaluation, monitoring rules and comparisons all look metrics up here.
* :data:`CONVENTIONS`: each tool whose nDCG conventions the package
  reproduces, one :class:`Convention` per name (read by :mod:`ltr.metrics`);
  :data:`NAME_CONVENTIONS` may follow ``:`` in a metric name,
  :data:`QRELS_CONVENTIONS` are those of :func:`ltr.evaluate`.

A metric name is ``METRIC``, ``METRIC@K`` (cut-off ``K``), with an optional
``:CONVENTION`` (``"ndcg@5:sklearn"``) or ``/OBJECTIVE`` (one label column of
a composite evaluation, ``"ndcg@10/watch"``, a recorded key only).  Names
users bring from other tools are aliases of the canonical ones
(:data:`ALIASES`): trec_eval's ``P_10``, ``ndcg_cut_10``, ``map_cut_10``,
``recip_rank``, ``Rprec``, ``success_10``; ir_measures' ``P@10``, ``R@10``,
``AP``, ``RR``, ``nDCG@10``, ``Success@10``; XGBoost's ``pre@10``.  Callers
key their results by the name the user passed; :func:`parse_metric_name`
returns the canonical parts.  A misspelt name gets a "did you mean".

This module belongs to the metrics layer: it imports nothing from ``ltr``
above :mod:`ltr._validation` (metric functions are imported when asked for).
"""

from __future__ import annotations

import difflib
import importlib
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, NamedTuple

from ltr._validation import check_int, short_repr

__all__ = [
    "ALIASES",
    "CONVENTIONS",
    "EVALUATION_METRICS",
    "METRICS",
    "MONITOR_METRICS",
    "NAME_CONVENTIONS",
    "NO_CUTOFF_METRICS",
    "QRELS_CONVENTIONS",
    "RANK_FUNCTIONS",
    "RANK_SCORER_METRICS",
    "REGISTRY",
    "SCORER_METRICS",
    "Convention",
    "MetricInfo",
    "MetricName",
    "check_convention",
    "format_metric_name",
    "metric_function",
    "metric_info",
    "parse_metric_name",
]


# --------------------------------------------------------------------------- #
# The convention registry                                                      #
# --------------------------------------------------------------------------- #


@dataclass(frozen=True)
class Convention:
    """The settings that reproduce one tool's nDCG (see :mod:`ltr.metrics`).

    ``gain``, ``discount``, ``ties`` and ``empty`` are the public options;
    the remaining fields are quirks no keyword exposes.

    Attributes
    ----------
    ideal_by_label : bool
        Build the ideal ordering by label rather than by gain (LightGBM sorts
        labels and then looks gains up; identical for monotone gain tables).
    score_float32 : bool
        Compare scores after rounding them to float32 (XGBoost).
    min_relevant : float or None
        Labels below this get zero gain (ranx ignores judgments below 1).
    empty_unweighted : bool
        In a weighted mean, an empty query adds its ``empty`` value with
        weight 1 to the numerator while its weight stays in the denominator
        (LightGBM and XGBoost).
    peer : str or None
        Whose input rules the labels must meet (the peer refuses the others):
        ``"lightgbm"``: integer labels ``0 <= l <`` the gain table's length
        (31 with the default ``2**l - 1`` table); ``"xgboost"``: labels
        ``0 <= l <= 31`` with exp2 gain, ``>= 0`` otherwise; ``"sklearn"``:
        no negative labels.  ``None`` (the default convention) also refuses
        negative labels unless ``gain`` is a callable; ``trec_eval`` and
        ``ranx`` accept negative judgments (ranx gives labels < 1 zero gain).
    in_names : bool
        May follow ``:`` in a metric name (scorers, run configs, ``ltr
        score``): the convention needs no document ids.
    qrels : bool
        A convention of qrels/run evaluation (:func:`ltr.evaluate`).
    """

    gain: Any = "exp2"
    discount: Any = "log2"
    ties: str = "average"
    empty: Any = "skip"
    ideal_by_label: bool = False
    score_float32: bool = False
    min_relevant: float | None = None
    empty_unweighted: bool = False
    peer: str | None = None
    in_names: bool = False
    qrels: bool = False


#: The one convention registry: tool name -> its nDCG settings.  ``trec_eval``
#: breaks ties by document id, which a scorer does not receive, and ``ranx``
#: sorts ties with numba's quicksort, so both are conventions of qrels/run
#: evaluation (``make_ndcg_scorer(convention="trec_eval", ...)`` still takes them).
CONVENTIONS: dict[str, Convention] = {
    "lightgbm": Convention(gain="exp2", ties="stable", empty=1.0, ideal_by_label=True,
                           empty_unweighted=True, peer="lightgbm", in_names=True),
    "xgboost": Convention(gain="exp2", ties="stable", empty=1.0, score_float32=True,
                          empty_unweighted=True, peer="xgboost", in_names=True),
    "sklearn": Convention(gain="linear", ties="average", empty=0.0, peer="sklearn",
                          in_names=True),
    "trec_eval": Convention(gain="linear", ties="doc_id_desc", empty=0.0, qrels=True),
    "ranx": Convention(gain="linear", ties="stable", empty=0.0, min_relevant=1.0, qrels=True),
}

#: Conventions accepted after ``:`` in a metric name, by the config and by ``ltr score``.
NAME_CONVENTIONS: tuple[str, ...] = tuple(n for n, c in CONVENTIONS.items() if c.in_names)

#: Conventions of qrels/run evaluation (:func:`ltr.evaluate`, ``ltr evaluate --qrels``).
QRELS_CONVENTIONS: tuple[str, ...] = tuple(n for n, c in CONVENTIONS.items() if c.qrels)


def _did_you_mean(value: str, candidates: Any) -> str:
    close = difflib.get_close_matches(value.lower(), [str(c).lower() for c in candidates], n=1,
                                      cutoff=0.6)
    if not close:
        return ""
    original = {str(c).lower(): str(c) for c in candidates}
    return f" (did you mean {original[close[0]]!r}?)"


def check_convention(
    convention: Any, allowed: tuple[str, ...] = NAME_CONVENTIONS, text: str | None = None
) -> str:
    """Return *convention* lower-cased if it is one of *allowed*, else a ``ValueError``.

    Parameters
    ----------
    convention : str
        A name of :data:`CONVENTIONS`.
    allowed : tuple of str, default=NAME_CONVENTIONS
        The names accepted here.
    text : str, optional
        The metric name it came from (for the message).

    Returns
    -------
    str

    Examples
    --------
    >>> check_convention("LightGBM")
    'lightgbm'
    """
    where = f"metric name {text!r}: " if text is not None else ""
    if not isinstance(convention, str) or convention.lower() not in allowed:
        if isinstance(convention, str) and convention.lower() in CONVENTIONS:
            raise ValueError(
                f"{where}convention {convention!r} does not apply here; got {convention!r}, "
                f"expected one of {list(allowed)!r}"
            )
        hint = _did_you_mean(convention, allowed) if isinstance(convention, str) else ""
        raise ValueError(
            f"{where}unknown convention {convention!r}{hint}; got {convention!r}, expected one "
            f"of {list(allowed)!r}"
        )
    return convention.lower()


# --------------------------------------------------------------------------- #
# The metric registry                                                          #
# --------------------------------------------------------------------------- #

_NDCG_OPTIONS = ("gain", "discount", "ties", "empty", "convention")
_RANK_OPTIONS = ("relevance_level", "ties", "empty", "convention")


@dataclass(frozen=True)
class MetricInfo:
    """One metric of the registry.

    Attributes
    ----------
    name : str
        Canonical name (``"map"``).
    function : str or None
        ``"module:function"`` of its per-query function over rows you hold
        (``ltr.metrics:average_precision``); ``None`` for a recorded key only.
    kernel : str or None
        Its code in :mod:`ltr.kernels._rank` for qrels/run evaluation, or ``None``.
    cutoff : bool
        Takes ``@K`` (R-precision cuts at the number of relevant documents).
    scorer : bool
        :func:`ltr.scoring.get_scorer` builds a scorer from its name.
    recorded : bool
        Written as a ``METRIC@K`` key of per-round curves or run metrics.
    composite : bool
        Also scores composite (multi-objective) labels.
    bounded : bool
        Per-query values lie in [0, 1].
    options : tuple of str
        Keyword options of the function a scorer passes through.
    metadata : tuple of str
        Per-row metadata its scorer needs (requested by default in routing).
    summary : str
        One line for docs and errors.
    """

    name: str
    function: str | None
    kernel: str | None = None
    cutoff: bool = True
    scorer: bool = False
    recorded: bool = False
    composite: bool = False
    bounded: bool = True
    options: tuple[str, ...] = ()
    metadata: tuple[str, ...] = ("qid",)
    summary: str = ""


def _rank(name: str, function: str, kernel: str, summary: str, **more: Any) -> MetricInfo:
    return MetricInfo(name, f"ltr.metrics:{function}", kernel, scorer=True,
                      options=more.pop("options", _RANK_OPTIONS), summary=summary, **more)


#: The one metric registry: canonical name -> :class:`MetricInfo`.
REGISTRY: dict[str, MetricInfo] = {
    info.name: info
    for info in (
        MetricInfo("ndcg", "ltr.metrics:ndcg", "NDCG", scorer=True, recorded=True,
                   composite=True, options=_NDCG_OPTIONS, summary="normalised DCG"),
        MetricInfo("dcg", "ltr.metrics:dcg", "DCG", scorer=True, bounded=False,
                   options=("gain", "discount", "ties", "convention"),
                   summary="discounted cumulative gain"),
        _rank("map", "average_precision", "AP", "average precision (trec_eval map_cut_k)"),
        _rank("mrr", "reciprocal_rank", "RR", "reciprocal rank of the first relevant row"),
        _rank("precision", "precision", "PRECISION", "relevant share of the top k (P_k)"),
        _rank("recall", "recall", "RECALL", "share of the relevant rows in the top k"),
        _rank("r-precision", "r_precision", "RPREC", "precision at R, the relevant count",
              cutoff=False),
        _rank("hit_rate", "hit_rate", "HIT_RATE", "1 when a relevant row is in the top k"),
        _rank("err", "err", "ERR", "expected reciprocal rank (Chapelle et al.)",
              options=(*_RANK_OPTIONS, "max_grade")),
        MetricInfo("composite_ndcg", None, recorded=True,
                   summary="weighted nDCG over several label columns"),
        MetricInfo("ips_ndcg", "ltr.clicks.ips:ips_ndcg", recorded=True, bounded=False,
                   options=("clip", "empty", "discount", "ties"), metadata=("qid", "position"),
                   summary="IPS estimate of nDCG from logged clicks"),
        MetricInfo("snips_dcg", None, recorded=True, bounded=False,
                   summary="self-normalised IPS estimate of DCG"),
        MetricInfo("click_ndcg", None, recorded=True, summary="nDCG with clicks as labels"),
    )
}

#: Every metric recorded under a ``METRIC@K`` key (curves, run metrics, IPS keys).
METRICS: tuple[str, ...] = tuple(n for n, i in REGISTRY.items() if i.recorded)

#: Metrics :func:`ltr.scoring.get_scorer` builds from a name.
SCORER_METRICS: tuple[str, ...] = tuple(n for n, i in REGISTRY.items() if i.scorer)

#: Same as :data:`SCORER_METRICS` (kept for existing imports).
RANK_SCORER_METRICS: tuple[str, ...] = SCORER_METRICS

#: Metrics of qrels/run evaluation (:func:`ltr.evaluation.evaluate`).
EVALUATION_METRICS: tuple[str, ...] = tuple(n for n, i in REGISTRY.items() if i.kernel)

#: Metrics a monitoring rule can watch: every metric of qrels/run evaluation.
MONITOR_METRICS: tuple[str, ...] = EVALUATION_METRICS

#: Metrics that never take a cut-off.
NO_CUTOFF_METRICS: tuple[str, ...] = tuple(n for n, i in REGISTRY.items() if not i.cutoff)

#: Metric -> its function in :mod:`ltr.metrics` (a view of :data:`REGISTRY`).
RANK_FUNCTIONS: dict[str, str] = {
    n: i.function.split(":")[1]
    for n, i in REGISTRY.items()
    if i.function is not None and i.function.startswith("ltr.metrics:")
}

#: Names of other tools -> canonical metric (matched case-insensitively).  A
#: trec_eval name with a numeric suffix (``P_10``, ``P.10``, ``ndcg_cut_10``)
#: is the alias plus ``@K``.
ALIASES: dict[str, str] = {
    # trec_eval / pytrec_eval
    "ndcg_cut": "ndcg", "map_cut": "map", "p": "precision", "recip_rank": "mrr",
    "rprec": "r-precision", "success": "hit_rate",
    # ir_measures / PyTerrier
    "ap": "map", "rr": "mrr", "r": "recall",
    # ranx, XGBoost, LightGBM, common spellings
    "r_precision": "r-precision", "pre": "precision", "prec": "precision",
    "average_precision": "map", "reciprocal_rank": "mrr", "hr": "hit_rate",
    "hits_rate": "hit_rate", "hit-rate": "hit_rate",
}


def metric_info(metric: str) -> MetricInfo:
    """Return the registry entry of a canonical metric or an alias (``"recip_rank"``).

    Examples
    --------
    >>> metric_info("recip_rank").name
    'mrr'
    """
    key = metric.lower() if isinstance(metric, str) else metric
    key = ALIASES.get(key, key)
    if key not in REGISTRY:
        raise ValueError(_unknown(metric, tuple(REGISTRY)))
    return REGISTRY[key]


def metric_function(metric: str) -> Callable[..., Any]:
    """Return the per-query function of *metric* (imported on first use).

    Examples
    --------
    >>> metric_function("map").__name__
    'average_precision'
    """
    info = metric_info(metric)
    if info.function is None:
        raise ValueError(f"{info.name!r} is a recorded key, not a metric of rows you hold")
    module, name = info.function.split(":")
    fn: Callable[..., Any] = getattr(importlib.import_module(module), name)
    return fn


def _unknown(metric: Any, allowed: tuple[str, ...], text: str | None = None) -> str:
    where = f"metric name {text!r}: " if text is not None else ""
    hint = ""
    if isinstance(metric, str):
        hint = _did_you_mean(metric, (*allowed, *(a for a, c in ALIASES.items() if c in allowed)))
    return (
        f"{where}unknown metric {metric!r}{hint}; expected one of {list(allowed)!r} "
        "(or a name of trec_eval/ir_measures such as 'P@10', 'ndcg_cut_10', 'recip_rank', "
        "'Rprec')"
    )


def _check_metric(metric: Any, allowed: tuple[str, ...], text: str | None = None) -> str:
    if not isinstance(metric, str):
        raise TypeError(f"metric must be a str such as 'ndcg', got {short_repr(metric)}")
    key = ALIASES.get(metric.lower(), metric.lower())
    if key in allowed:
        return key
    if key in REGISTRY:
        where = f"metric name {text!r}: " if text is not None else ""
        raise ValueError(
            f"{where}metric {metric!r} is not accepted here; expected one of {list(allowed)!r}"
        )
    raise ValueError(_unknown(metric, allowed, text))


# --------------------------------------------------------------------------- #
# Names: the one parser and the one formatter                                  #
# --------------------------------------------------------------------------- #

_NAME_RE = re.compile(
    r"^\s*(?P<metric>[A-Za-z_][A-Za-z_\-]*)(?:@(?P<k>[^:/\s]*))?"
    r"(?::(?P<conv>[A-Za-z_]+)|/(?P<objective>[^\s]+))?\s*$"
)
# trec_eval's spelling of a cut-off: ``P_10``, ``ndcg_cut_10``, ``P.10``
_SUFFIX_RE = re.compile(r"^\s*(?P<base>[A-Za-z][A-Za-z_\-]*?)[_.](?P<k>\d+)(?P<rest>:\S*)?\s*$")
_FORMS = (
    "is not of the form METRIC, METRIC@K or METRIC@K:CONVENTION "
    "(e.g. 'ndcg@10', 'map', 'mrr@10:lightgbm', 'P_10')"
)


class MetricName(NamedTuple):
    """A parsed metric name: ``"ndcg@10:sklearn"`` -> ``("ndcg", 10, "sklearn")``.

    ``metric`` is the canonical name (``"P@10"`` -> ``"precision"``); ``k`` is
    ``None`` for a name without a cut-off (``"map"``: the whole list).
    """

    metric: str
    k: int | None
    convention: str | None = None

    def __str__(self) -> str:
        """Return the canonical name, as :func:`format_metric_name` spells it."""
        return format_metric_name(self.metric, self.k, convention=self.convention)


def format_metric_name(
    metric: str,
    k: int | None,
    *,
    convention: str | None = None,
    objective: str | None = None,
    metrics: tuple[str, ...] | None = None,
) -> str:
    """Spell a metric key: ``"ndcg@10"``, ``"ndcg@5:sklearn"``, ``"ndcg@10/watch"``, ``"map"``.

    This is the one place that writes metric keys (curves, run metrics, IPS keys).

    Parameters
    ----------
    metric : str
        A metric of :data:`REGISTRY` or an alias (written canonically).
    k : int or None
        Cut-off, >= 1; ``None`` for the whole list (and always for
        :data:`NO_CUTOFF_METRICS`).
    convention : str, optional
        One of :data:`NAME_CONVENTIONS`.
    objective : str, optional
        Label column of a composite evaluation (per-objective curves).
    metrics : tuple of str, optional
        Metrics accepted (default: the whole registry).

    Returns
    -------
    str

    Raises
    ------
    ValueError
        An unknown metric or convention, ``k < 1``, or both *convention* and
        *objective*.
    TypeError
        A non-integer ``k``.

    Examples
    --------
    >>> format_metric_name("composite_ndcg", 10)
    'composite_ndcg@10'
    >>> format_metric_name("ips_ndcg", 5)
    'ips_ndcg@5'
    >>> format_metric_name("P", 10)
    'precision@10'
    >>> format_metric_name("map", None)
    'map'
    """
    metric = _check_metric(metric, tuple(REGISTRY) if metrics is None else metrics)
    if convention is not None and objective is not None:
        raise ValueError("a metric name takes a convention or an objective, not both")
    if k is None or not REGISTRY[metric].cutoff:
        if k is not None:
            raise ValueError(f"{metric!r} takes no cut-off, got k={k!r}")
        if objective is not None:
            raise ValueError("a name without a cut-off takes no objective")
        return metric if convention is None else f"{metric}:{check_convention(convention)}"
    k = check_int(k, "k", minimum=1)
    if convention is not None:
        return f"{metric}@{k}:{check_convention(convention)}"
    if objective is not None:
        if not isinstance(objective, str) or not objective or any(c.isspace() for c in objective):
            raise ValueError(
                f"objective must be a non-empty name without spaces, got {objective!r}"
            )
        return f"{metric}@{k}/{objective}"
    return f"{metric}@{k}"


def parse_metric_name(
    name: str, *, metrics: tuple[str, ...] = SCORER_METRICS, k_optional: bool = True
) -> MetricName:
    """Parse ``"map"``, ``"ndcg@K"``, ``"ndcg@K:CONVENTION"`` or an alias such as ``"P_10"``.

    This is the one place that reads metric-name strings.  Callers key their
    results by the string they were given; the returned parts are canonical.

    Parameters
    ----------
    name : str
        ``"ndcg@10"``, ``"NDCG@5"``, ``"ndcg@10:sklearn"``, ``"map"``,
        ``"recip_rank"``, ``"P@10"``, ``"ndcg_cut_10"``...  ``K`` is an
        integer >= 1; ``CONVENTION`` one of :data:`NAME_CONVENTIONS`.
    metrics : tuple of str, default=SCORER_METRICS
        Canonical metrics accepted (:data:`METRICS` for recorded keys,
        :data:`EVALUATION_METRICS` for qrels/run evaluation...).
    k_optional : bool, default=True
        Accept a name without ``@K`` (``k=None``: the whole list).  Names in
        :data:`NO_CUTOFF_METRICS` (``"r-precision"``) never take ``@K``.

    Returns
    -------
    MetricName

    Raises
    ------
    TypeError
        If *name* is not a string.
    ValueError
        If the format, metric, ``K`` or convention is invalid (an unknown
        metric or convention says which known one is closest).

    Examples
    --------
    >>> parse_metric_name("ndcg@5:sklearn")
    MetricName(metric='ndcg', k=5, convention='sklearn')
    >>> parse_metric_name("P_10")
    MetricName(metric='precision', k=10, convention=None)
    >>> parse_metric_name("recip_rank")
    MetricName(metric='mrr', k=None, convention=None)
    """
    if not isinstance(name, str):
        raise TypeError(f"metric name must be a str like 'ndcg@10', got {short_repr(name)}")
    text = name
    suffix = _SUFFIX_RE.match(name)
    if suffix is not None and "@" not in name:
        base = suffix["base"].lower()
        if ALIASES.get(base, base) in REGISTRY:
            text = f"{suffix['base']}@{suffix['k']}{suffix['rest'] or ''}"
    match = _NAME_RE.match(text)
    if match is None or match["objective"] is not None or match["k"] == "":
        raise ValueError(f"metric name {name!r} {_FORMS}")
    metric = _check_metric(match["metric"], metrics, name)
    no_k = match["k"] is None
    cutoff = metric not in REGISTRY or REGISTRY[metric].cutoff  # a metric a caller added
    if not cutoff:
        if not no_k:
            raise ValueError(f"metric name {name!r}: {metric!r} takes no @K cut-off")
    elif no_k and not k_optional:
        raise ValueError(f"metric name {name!r}: give a cut-off, as in '{metric}@10'")
    conv = match["conv"]
    conv = None if conv is None else check_convention(conv, NAME_CONVENTIONS, name)
    if no_k or not cutoff:
        return MetricName(metric, None, conv)
    try:
        k = int(match["k"])
    except ValueError:
        raise ValueError(
            f"metric name {name!r}: K must be an integer >= 1, got {match['k']!r}"
        ) from None
    if k < 1:
        raise ValueError(f"metric name {name!r}: K must be an integer >= 1, got {k!r}")
    if k > 2**63 - 1:  # the kernels hold cut-offs as int64
        raise ValueError(f"metric name {name!r}: K must be <= {2**63 - 1}, got {k!r}")
    return MetricName(metric, k, conv)

"""Position bias in a run: the propensity curve, click-based IPS nDCG, their plot.

A run trained or evaluated on clicks (``data.click`` and ``data.position``)
gets a ``position_bias`` block in ``metrics.json``:

* ``learned``: the t+ / t- per position that ltr's Unbiased LambdaMART learned
  (``model.position_bias``), when the run trained with it;
* ``position_term``: the score offsets per position that ltr's position term
  learned (``model.position_term``), when the run trained with it; the curve
  ``exp(b - b[1])`` is their multiplicative effect relative to position 1;
* ``propensity``: the examination propensities the IPS metrics used
  (``evaluation.ips.propensity``: ``"em"`` estimated from the training clicks
  with :func:`ltr.clicks.estimate_propensity_em` and the ``data.doc`` ids,
  ``"data"`` each valid/test row's own ``data.propensity``,
  ``"learned"`` the objective's t+, or the configured list);
* ``ips``: per valid/test set, ``ips_ndcg@k`` (:func:`ltr.metrics.ips_ndcg`,
  propensities clipped at ``evaluation.ips.clip``), the self-normalised
  ``snips_dcg@k`` when asked, and the naive ``click_ndcg@k`` (every click
  weight 1; lists without clicks left out, as in the IPS values) beside them.

``propensity.csv`` and ``propensity.png`` (the curve against position) go into
the run folder; the report shows both.  Beside the curves they give the
training log's impressions and clicks per position (``counts`` in
``metrics.json``): a position with fewer than :data:`MIN_CLICKS` clicks has no
estimate worth reading (learned t+ stays at its start value 1, EM drifts to 0
or anywhere), so the plot greys it out and the CSV marks it
``enough_data = 0``.
"""

from __future__ import annotations

import csv
import io
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from ltr._io import write_atomic
from ltr._propensities import rows_as_read
from ltr.metrics.names import format_metric_name
from ltr.runs.config import RunConfig, RunError
from ltr.runs.data import logged_column
from ltr.runs.report_plots import plot_propensity

if TYPE_CHECKING:  # pragma: no cover
    from ltr.datasets import RankingData

__all__ = ["MIN_CLICKS", "position_bias_metrics"]

#: Fewest training clicks at a position for its propensity estimates to be drawn as measured
#: (about a 30 % relative standard error of a click rate); fewer are greyed out in the plot.
MIN_CLICKS = 10


def _ips_propensity(
    cfg: RunConfig, model: Any, train: RankingData
) -> tuple[np.ndarray | None, str] | None:
    """Return the per-position table the IPS metrics use and its source (None: per row)."""
    ips = cfg.evaluation.ips
    if ips is None:
        return None
    source = ips.propensity
    if source == "data":
        return None, "data.propensity (per row)"
    if isinstance(source, list):
        return np.asarray(source, dtype=np.float64), "evaluation.ips.propensity"
    if source == "learned":
        state = model.position_bias
        if state is None:  # pragma: no cover - the config check requires the unbiased objective
            raise RunError("evaluation.ips.propensity: 'learned' but the model learned no t+")
        return np.asarray(state["t_plus"], dtype=np.float64), "learned t+ (Unbiased LambdaMART)"
    from ltr.clicks import estimate_propensity_em

    est = estimate_propensity_em(
        logged_column(train, "click"),
        logged_column(train, "position"),
        logged_column(train, "doc"),
        offsets=train.offsets,
    )
    prop = est.propensity
    # positions never logged have no estimate: carry the deepest estimate down
    for p in range(1, len(prop)):
        if not np.isfinite(prop[p]):
            prop[p] = prop[p - 1]
    return np.clip(prop, 1e-12, 1.0), f"EM on the training clicks ({est.n_iter} iterations)"


def position_bias_metrics(
    cfg: RunConfig,
    model: Any,
    sets: Mapping[str, RankingData],
    scores: Mapping[str, np.ndarray],
    run_dir: Path,
) -> dict[str, Any] | None:
    """Return the ``position_bias`` block of ``metrics.json`` (None when not applicable).

    Writes ``propensity.csv`` and ``propensity.png`` into *run_dir*.

    Parameters
    ----------
    cfg : RunConfig
        The run's config.
    model : RankingModel
        The trained model (``position_bias`` when ltr's unbiased objective learned one).
    sets : mapping of str to RankingData
        The run's data sets.
    scores : mapping of str to ndarray
        The model's scores of every set but train.
    run_dir : Path
        The run folder.

    Returns
    -------
    dict or None
    """
    learned = model.position_bias
    term = model.position_term
    # a run on a Dask cluster keeps train there (and refuses position-bias settings)
    used = _ips_propensity(cfg, model, sets["train"]) if "train" in sets else None
    if learned is None and used is None and term is None:
        return None
    out: dict[str, Any] = {}
    curves: dict[str, np.ndarray] = {}
    counts = _position_counts(sets["train"]) if "train" in sets else None
    if counts is not None:
        out["counts"] = {"impressions": counts[0].tolist(), "clicks": counts[1].tolist(),
                         "min_clicks": MIN_CLICKS}
    if learned is not None:
        out["learned"] = learned
        curves["learned t+"] = np.asarray(learned["t_plus"], dtype=np.float64)
        curves["learned t-"] = np.asarray(learned["t_minus"], dtype=np.float64)
    if term is not None and term["offsets"]:
        out["position_term"] = term
        b = np.asarray(term["offsets"], dtype=np.float64)
        curves["position term exp(b - b[1])"] = np.exp(b - b[0])
    if used is not None:
        from ltr.clicks.ips import ips_dcg, ips_ndcg
        from ltr.metrics import ndcg

        table, source = used
        ips = cfg.evaluation.ips
        assert ips is not None
        out["propensity"] = {"source": source, "clip": ips.clip}
        if table is not None:
            out["propensity"]["values"] = table.tolist()
            curves["IPS propensity"] = table
        elif "train" in sets:  # per row: their mean per position draws the curve
            tr = sets["train"]
            pos = np.asarray(logged_column(tr, "position"), dtype=np.int64) - 1
            mean = (np.bincount(pos, weights=logged_column(tr, "propensity"))
                    / np.maximum(np.bincount(pos), 1))
            curves["IPS propensity (mean per position)"] = mean
        ks = list(cfg.evaluation.eval_at)
        out["ips"] = {}
        for name, s in scores.items():
            ds = sets[name]
            click, pos = logged_column(ds, "click", name), logged_column(ds, "position", name)
            if table is None:  # per row, in the form ips_ndcg reads per row
                prop = rows_as_read(logged_column(ds, "propensity", name), pos, ds.offsets)
            elif int(pos.max()) > len(table):
                raise RunError(
                    f"evaluation.ips.propensity: has {len(table)} positions but data.position "
                    f"({name}) goes to {int(pos.max())}; give a propensity for every position"
                )
            else:
                prop = table
            common: dict[str, Any] = {
                "position": pos, "propensity": prop, "offsets": ds.offsets, "k": ks,
                "clip": ips.clip,
            }
            block: dict[str, float] = {}
            for k, v in ips_ndcg(click, s, **common).items():
                block[format_metric_name("ips_ndcg", k)] = float(v)
            if ips.self_normalized:
                for k, v in ips_dcg(click, s, self_normalize=True, **common).items():
                    block[format_metric_name("snips_dcg", k)] = float(v)
            naive = ndcg(click, s, offsets=ds.offsets, k=ks)  # lists without clicks skipped, as IPS
            for k, v in naive.items():
                block[format_metric_name("click_ndcg", k)] = float(v)
            out["ips"][name] = block
    _write_curves(curves, counts, run_dir)
    return out


def _position_counts(train: RankingData) -> tuple[np.ndarray, np.ndarray] | None:
    """Impressions and clicks per display position (index 0 = position 1) of the training log."""
    if train.click is None or train.position is None:
        return None
    pos = np.asarray(train.position, dtype=np.int64)
    click = np.asarray(train.click, dtype=np.float64)
    if pos.size == 0 or pos.min() < 1:
        return None
    impressions = np.bincount(pos - 1)
    clicks = np.bincount(pos - 1, weights=(click > 0).astype(np.float64)).astype(np.int64)
    return impressions, clicks


def _write_curves(
    curves: Mapping[str, np.ndarray],
    counts: tuple[np.ndarray, np.ndarray] | None,
    run_dir: Path,
) -> None:
    if not curves:
        return
    depth = max(len(v) for v in curves.values())
    if counts is not None:
        depth = max(depth, len(counts[0]))
    buf = io.StringIO()
    writer = csv.writer(buf, lineterminator="\n")
    writer.writerow(["position", *curves, *(("impressions", "clicks", "enough_data")
                                            if counts is not None else ())])
    for p in range(depth):
        row: list[Any] = [p + 1]
        row += [repr(float(v[p])) if p < len(v) else "" for v in curves.values()]
        if counts is not None:
            n_imp = int(counts[0][p]) if p < len(counts[0]) else 0
            n_click = int(counts[1][p]) if p < len(counts[1]) else 0
            row += [n_imp, n_click, int(n_click >= MIN_CLICKS)]
        writer.writerow(row)
    write_atomic(run_dir / "propensity.csv", buf.getvalue())
    plot_propensity(curves, run_dir / "propensity.png", counts=counts, min_clicks=MIN_CLICKS)

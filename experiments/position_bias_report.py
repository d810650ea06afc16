"""Tables of the position-bias study (experiments/study_position_bias.py) from its results.

Everything here reads the results dictionary (``position_bias.json``) only, so
``study_position_bias.py --report-only`` rewrites the markdown and the README
table without training anything.
"""

from __future__ import annotations

from typing import Any

import numpy as np

#: (bar name, metric) per setting family; the issue's bars.
PBM_METRIC, CASCADE_METRIC = "ndcg@10", "ndcg@3"
PBM_GAIN, CASCADE_GAIN, CASCADE_GAM_GAP, AUTO_GAP = 0.005, 0.03, 0.02, 0.005


def _metric(setting: str) -> str:
    return PBM_METRIC if setting.startswith("PBM") else CASCADE_METRIC


def _values(rows: list[dict], setting: str, method: str, metric: str) -> dict[int, float]:
    return {r["seed"]: r[metric] for r in rows
            if r["setting"] == setting and r["method"] == method}


def mean_se(values: list[float]) -> tuple[float, float]:
    """Mean and its standard error over seeds (NaN SE with one seed)."""
    a = np.asarray(values, dtype=np.float64)
    if a.size == 0:
        return float("nan"), float("nan")
    se = float(a.std(ddof=1) / np.sqrt(a.size)) if a.size > 1 else float("nan")
    return float(a.mean()), se


def paired(rows: list[dict], setting: str, a: str, b: str, metric: str) -> tuple[float, float]:
    """Mean paired difference ``a - b`` over the seeds both have, with its standard error."""
    va, vb = _values(rows, setting, a, metric), _values(rows, setting, b, metric)
    seeds = sorted(set(va) & set(vb))
    return mean_se([va[s] - vb[s] for s in seeds])


def _fmt(mean: float, se: float, sign: bool = False) -> str:
    if not np.isfinite(mean):
        return "n/a"
    m = f"{mean:+.4f}" if sign else f"{mean:.4f}"
    return m if not np.isfinite(se) else f"{m} ± {se:.4f}"


def settings_of(result: dict) -> list[str]:
    """Settings in the order they ran."""
    seen: list[str] = []
    for r in result["rows"]:
        if r["setting"] not in seen:
            seen.append(r["setting"])
    return seen


def methods_run(result: dict, setting: str) -> list[str]:
    """Methods with results in a setting, in the study's order."""
    have = {r["method"] for r in result["rows"] if r["setting"] == setting}
    return [m for m in result["methods"] if m in have]


def best_ltr(result: dict, setting: str, metric: str) -> str | None:
    """ltr's best debiasing method (its own objective, not naive, not auto) by mean metric."""
    cands = [m for m in methods_run(result, setting)
             if result["methods"][m]["family"] == "ltr" and m != "naive"]
    if not cands:
        return None
    return max(cands, key=lambda m: mean_se(list(_values(result["rows"], setting, m,
                                                         metric).values()))[0])


def bars(result: dict) -> list[dict[str, Any]]:
    """The issue's bars, one row per (bar, setting), each with its figures and pass/fail."""
    rows, out = result["rows"], []
    for setting in settings_of(result):
        metric = _metric(setting)
        have = set(methods_run(result, setting))
        best = best_ltr(result, setting, metric)

        def add(bar: str, text: str, ok: bool | None, setting: str = setting) -> None:
            out.append({"bar": bar, "setting": setting, "figures": text,
                        "pass": None if ok is None else bool(ok)})

        if best is None or "naive" not in have:
            add("ltr vs naive", "n/a (no ltr debiasing method ran)", None)
        else:
            gain = PBM_GAIN if setting.startswith("PBM") else CASCADE_GAIN
            d, se = paired(rows, setting, best, "naive", metric)
            add(f"ltr best >= naive + {gain} {metric}",
                f"{best}: {_fmt(d, se, True)}", d >= gain)
        peer = "xgb_unbiased" if setting.startswith("PBM") else "lgb_gam"
        if best is None or peer not in have:
            add(f"ltr vs {peer}", f"n/a ({peer} or ltr's methods did not run)", None)
        elif setting.startswith("PBM"):
            d, se = paired(rows, setting, best, peer, metric)
            add(f"ltr best not below {peer} by > 1 SE ({metric})",
                f"{best} − {peer}: {_fmt(d, se, True)}", d >= -(se if np.isfinite(se) else 0.0))
        else:
            d, se = paired(rows, setting, best, peer, metric)
            add(f"ltr best within {CASCADE_GAM_GAP} of {peer} ({metric})",
                f"{best} − {peer}: {_fmt(d, se, True)}", d >= -CASCADE_GAM_GAP)
        cands = [m for m in result.get("auto_candidates", []) if m in have]
        if "auto" not in have or not cands:
            add(f"auto within {AUTO_GAP} of the best candidate", "n/a (auto did not run)", None)
        else:
            means = {m: mean_se(list(_values(rows, setting, m, metric).values()))[0]
                     for m in cands}
            top = max(means, key=means.__getitem__)
            auto = mean_se(list(_values(rows, setting, "auto", metric).values()))[0]
            # like for like: the chosen candidate's row as the study trained it (without the
            # click-less lists that auto's own refit sees), seed by seed
            chosen = {r["seed"]: CHOICE_METHOD.get(str(r.get("choice")))
                      for r in rows if r["setting"] == setting and r["method"] == "auto"}
            same = [_values(rows, setting, m, metric).get(seed, np.nan)
                    for seed, m in chosen.items() if m is not None]
            like = float(np.mean(same)) if same and len(same) == len(chosen) else np.nan
            add(f"auto within {AUTO_GAP} of the best candidate ({metric})",
                f"auto's choices as the study trained them {like:.4f} vs {top} "
                f"{means[top]:.4f} ({like - means[top]:+.4f}); auto's own refit on the whole "
                f"log {auto:.4f} ({auto - means[top]:+.4f})",
                None if not np.isfinite(like) else like >= means[top] - AUTO_GAP)
    return out


#: select_debiasing's candidate names -> the study's methods (``pair`` uses the default cost).
CHOICE_METHOD = {"naive": "naive", "pair": "reversed_pair_loss", "position_term": "position_term",
                 "pair+position_term": "pair+position_term", "propensity": "propensity",
                 "native": "lgb_gam"}


def _pass(ok: bool | None) -> str:
    return "n/a" if ok is None else ("**pass**" if ok else "**FAIL**")


def summary_table(result: dict) -> str:
    """The bars as a markdown table."""
    lines = ["| setting | bar | figures (paired mean ± SE over seeds) | result |",
             "|---|---|---|---|"]
    for b in bars(result):
        lines.append(f"| {b['setting']} | {b['bar']} | {b['figures']} | {_pass(b['pass'])} |")
    return "\n".join(lines)


def setting_table(result: dict, setting: str) -> str:
    """Means ± SE per method and paired differences vs naive and the engines' methods."""
    rows = result["rows"]
    metric = _metric(setting)
    head = ("| method | nDCG@3 | nDCG@10 | − naive @3 | − naive @10 | "
            f"− xgb_unbiased ({metric}) | − lgb_gam ({metric}) | fit s |")
    lines = [head, "|---|" + "---:|" * 7]
    for m in result["methods"]:
        label = f"`{m}`"
        if m in result["unavailable"]:
            lines.append(f"| {label} | n/a | n/a | | | | | |")
            continue
        if m not in methods_run(result, setting):
            continue
        cells = [_fmt(*mean_se(list(_values(rows, setting, m, f"ndcg@{k}").values())))
                 for k in (3, 10)]
        for other, k in (("naive", 3), ("naive", 10), ("xgb_unbiased", None),
                         ("lgb_gam", None)):
            key = metric if k is None else f"ndcg@{k}"
            cells.append("" if m == other or other not in methods_run(result, setting)
                         else _fmt(*paired(rows, setting, m, other, key), sign=True))
        secs = np.mean([r["seconds"] for r in rows if r["setting"] == setting
                        and r["method"] == m])
        lines.append(f"| {label} | " + " | ".join(cells) + f" | {secs:.1f} |")
    failed = [e for e in result.get("errors", []) if e["setting"] == setting]
    if failed:
        lines.append("")
        lines.append("Failed fits (left out of the means): " + "; ".join(
            f"`{e['method']}` seed {e['seed']}: {e['error'][:200]}" for e in failed) + ".")
    choices = [r.get("choice") for r in rows if r["setting"] == setting
               and r["method"] == "auto" and r.get("choice")]
    if choices:
        lines.append("")
        lines.append("Automatic choice per seed: " + ", ".join(map(str, choices)) + ".")
    return "\n".join(lines)


def bias_table(result: dict, setting: str) -> str:
    """Learned biases (means over seeds) against the truth per position."""
    info = result["cells"][setting]
    truth = np.asarray(info["truth"], dtype=np.float64)
    cols: list[tuple[str, np.ndarray]] = [("true θ_p/θ_1", truth), ("true θ_1/θ_p", 1 / truth),
                                          ("true log θ_p/θ_1", np.log(truth))]
    for m in methods_run(result, setting):
        tables: dict[str, list[list[float]]] = {}
        for r in result["rows"]:
            if r["setting"] == setting and r["method"] == m:
                for key, values in r.get("biases", {}).items():
                    tables.setdefault(key, []).append(values)
        for key, values in tables.items():
            n = min(len(v) for v in values)
            cols.append((f"{m} {key}", np.mean([v[:n] for v in values], axis=0)))
        if "t_plus" in tables and "t_minus" in tables:
            n = min(min(len(v) for v in tables["t_plus"]), min(len(v) for v in tables["t_minus"]))
            ratio = np.mean([np.asarray(b[:n]) / np.asarray(a[:n])
                             for a, b in zip(tables["t_plus"], tables["t_minus"])], axis=0)
            cols.append((f"{m} t_minus/t_plus", ratio))
    if info.get("estimated_propensity"):
        cols.append(("estimated propensity (cascade, mean per position)",
                     np.mean(info["estimated_propensity"], axis=0)))
    for key in ("continue_after_click", "continue_after_skip"):
        fits = [f[key] for f in info.get("cascade_fit", []) if key in f]
        if fits:
            n = min(len(f) for f in fits)
            truth_text = "0.8" if setting.startswith("cascade") else "n/a: PBM"
            cols.append((f"estimated {key.replace('_', ' ')} (truth {truth_text})",
                         np.mean([f[:n] for f in fits], axis=0)))
    if len(cols) == 3:
        return "No method of this run exposes learned biases.\n"
    n = len(truth)
    lines = ["| position | " + " | ".join(c for c, _ in cols) + " |",
             "|---:|" + "---:|" * len(cols)]
    for p in range(n):
        cells = [f"{v[p]:.3f}" if p < len(v) and np.isfinite(v[p]) else "" for _, v in cols]
        lines.append(f"| {p + 1} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def readme_table(result: dict) -> str:
    """The README's compact table: per setting, the mean metric of each method family."""
    show = ["naive", "pair_loss", "reversed_pair_loss", "position_term", "pair+position_term",
            "propensity", "xgb_unbiased", "lgb_gam", "auto", "true_propensity", "oracle"]
    show = [m for m in show if m in result["methods"]]
    lines = ["| setting (metric) | " + " | ".join(f"`{m}`" for m in show) + " |",
             "|---|" + "---:|" * len(show)]
    for setting in settings_of(result):
        metric = _metric(setting)
        have = methods_run(result, setting)
        cells = []
        for m in show:
            if m not in have:
                cells.append("n/a")
                continue
            mean = mean_se(list(_values(result["rows"], setting, m, metric).values()))[0]
            if m == "naive" or "naive" not in have:
                cells.append(f"{mean:.3f}")
            else:
                d = paired(result["rows"], setting, m, "naive", metric)[0]
                cells.append(f"{mean:.3f} ({d:+.3f})")
        lines.append(f"| {setting} ({metric.replace('ndcg', 'nDCG')}) | " + " | ".join(cells)
                     + " |")
    seeds = len(result.get("seeds_done", [])) or result["config"]["seeds"]
    lines.append("")
    lines.append(f"Mean over {seeds} seeds on the true test grades; in brackets the difference "
                 "to naive click training. Generated by `python "
                 "experiments/study_position_bias.py`; full tables, standard errors and the "
                 "learned biases in [the study](experiments/results/position_bias.md).")
    return "\n".join(lines)


def markdown(result: dict) -> str:
    """The whole results file."""
    cfg = result["config"]
    out = ["# Position debiasing from clicks: which method wins where (issue 21)", ""]
    out.append(
        f"Command: `python experiments/study_position_bias.py{''.join(' ' + a for a in result.get('argv', []))}` "
        f"({len(result.get('seeds_done', [])) or cfg['seeds']} seeds; "
        f"{cfg['rounds']} rounds, learning rate {cfg['learning_rate']}, {cfg['num_leaves']} "
        f"leaves, max depth {cfg['max_depth']}, LambdaRank truncation k = 10 for every method). "
        f"Machine: {result['machine']}; wall time {result['seconds'] / 60:.1f} min.")
    cpu = sum(r.get("cpu_seconds", 0.0) for r in result["rows"]) / 60
    out.append("")
    out.append(f"CPU time of the fits (all threads): {cpu:.1f} min; the wall time is that of "
               "the machine as it was (shared or not; split runs add up).")
    out.append("")
    if result.get("notes"):
        out.append("How this file was made: " + " ".join(result["notes"]))
        out.append("")
    if not result.get("complete", True):
        out.append(f"**Partial results**: the run stopped after seeds {result['seeds_done']} "
                   f"of {cfg['seeds']}; the figures below are over the seeds done.")
        out.append("")
    out.append(
        f"* **PBM**: synthetic MSLR-shaped data ({cfg['features']} features), "
        f"{cfg['pbm_train']} training / {cfg['pbm_test']} test queries; a deterministic logger "
        f"(LightGBM lambdarank on the grades of {cfg['logger_fraction']:.0%} of the training "
        "queries) shows its top 10; examination (1/rank)^η; click probability "
        f"0.1 + 0.9·(2^g − 1)/15; {cfg['pbm_sessions']} sessions per query. Metric for the bars: "
        "nDCG@10.")
    out.append(
        "* **Cascade**: every document shown in the order of one feature (the feature ranked "
        f"{cfg.get('logger_rank')} by its training nDCG@10, 1 = best); click probability 0.4/0.6/0.7/0.8/0.9 by grade 0–4; "
        "after each examined document the user stops with probability 0.2; "
        f"{cfg['cascade_sessions']} sessions per query. LETOR: the shared set (201 training, 50 "
        f"test queries); synthetic: {cfg['cascade_train']} training / {cfg['cascade_test']} test "
        f"queries of about {cfg['cascade_docs']} documents. Metric for the bars: nDCG@3.")
    out.append(
        "* Lists without a click are dropped before training (zero gradient for every pairwise "
        "method); `auto` and the propensity estimate see the full log. Test queries without a "
        "relevant document are left out of the means.")
    out.append("")
    out.append("Methods (LambdaMARTRanker keyword arguments; every one also gets the common "
               "settings above and `random_state=seed`):")
    out.append("")
    for m, spec in result["methods"].items():
        out.append(f"* `{m}`: {spec['label']}; `{spec['kwargs']}`")
    out.append("")
    if result["unavailable"]:
        out.append("Not available in the ltr this ran on (shown as n/a): "
                   + "; ".join(f"`{m}` ({why})" for m, why in result["unavailable"].items())
                   + ".")
        out.append("")
    out.append("## The issue's bars")
    out.append("")
    out.append(summary_table(result))
    out.append("")
    out.append("## README table")
    out.append("")
    out.append(readme_table(result))
    out.append("")
    for setting in settings_of(result):
        info = result["cells"][setting]
        out.append(f"## {setting}")
        out.append("")
        out.append(f"Click rate {np.mean(info['click_rate']):.3f}, "
                   f"{np.mean(info['impressions']):,.0f} shown impressions per seed; clicks: "
                   f"{info['notes'][0]}.")
        out.append("Means ± standard error over seeds; differences are paired by seed (mean ± "
                   "SE of the per-seed difference).")
        out.append("")
        out.append(setting_table(result, setting))
        out.append("")
        out.append(f"Learned biases against the truth (means over seeds; positions 1–"
                   f"{len(info['truth'])}). ltr's and XGBoost's t+ estimate θ_p/θ_1 (issue 21 reads "
                   "t−/t+ against θ_1/θ_p; a pair is weighted 1/(t+_i·t−_j)); a position term's offsets live on "
                   "the score scale (compare their shape with log θ).")
        out.append("")
        out.append(bias_table(result, setting))
        out.append("")
    return "\n".join(out)

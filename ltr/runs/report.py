"""Run reports: metrics tables and plots rendered as Markdown and self-contained HTML.

A run folder written by ``ltr train`` holds ``config.yaml``, ``metrics.json``,
``curves.png`` and (when enabled) ``importance.csv`` / ``importance.png``.
:class:`RunReport` reads such a folder and renders ``report.md`` (images
linked as files beside it) and ``report.html`` (images embedded as base64, CSS
inline), which opens in any browser without ``ltr`` installed.

Nothing here prints; everything is written through :func:`write_atomic` so a
reader never sees a half-written file.
"""

from __future__ import annotations

import html
import json
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ltr._compat import import_yaml
from ltr._io import png_img_tag, write_atomic
from ltr.runs.report_plots import (
    plot_curves,
)

__all__ = [
    "RunReport",
    "plot_curves",
    "write_atomic",
]





# --------------------------------------------------------------------------- plots




# --------------------------------------------------------------------------- tables




def _empty_query_rows(
    rules: Mapping[str, Mapping[str, Any]], final: Mapping[str, Mapping[str, Any]],
    keys: Sequence[str],
) -> list[list[str]]:
    """Return the table of the empty-query rule per set.

    With the nDCG means under the engines' rule (empty -> 1) and trec_eval's
    (empty -> 0) when they differ by more than 0.001.
    """
    from ltr.metrics.empty_queries import EmptyQueryRule

    ndcg_keys = [k for k in keys if k.startswith("ndcg")]
    rows: list[list[Any]] = []
    for name, info in rules.items():
        rule = EmptyQueryRule(str(info.get("convention")), info.get("score"),
                              int(info.get("n_empty", 0)), int(info.get("n_queries", 0)))
        shifted = []
        if rule.n_queries and rule.n_empty / rule.n_queries > 0.001:
            for k in ndcg_keys:
                mean = (final.get(name) or {}).get(k)
                if isinstance(mean, (int, float)):
                    shifted.append(f"{k}: {rule.shifted_mean(mean, 1.0):.4f} (engines, 1) / "
                                   f"{rule.shifted_mean(mean, 0.0):.4f} (trec_eval, 0)")
        rows.append([name, rule.describe(), "; ".join(shifted) or "same (< 0.001)"])
    return _table(["set", "rule", "nDCG under the other rules"], rows) if rows else []


def _fmt(value: Any) -> str:
    if isinstance(value, float):
        return f"{value:.4f}"
    if value is None:
        return ""
    return str(value)


def _table(header: Sequence[str], rows: Sequence[Sequence[Any]]) -> list[list[str]]:
    return [list(header)] + [[_fmt(v) for v in row] for row in rows]


def _md_table(table: list[list[str]]) -> str:
    if not table:
        return ""
    header, *rows = table
    out = ["| " + " | ".join(header) + " |", "|" + "|".join("---" for _ in header) + "|"]
    out += ["| " + " | ".join(r) + " |" for r in rows]
    return "\n".join(out)


def _html_table(table: list[list[str]]) -> str:
    if not table:
        return ""
    header, *rows = table
    head = "".join(f"<th>{html.escape(h)}</th>" for h in header)
    body = "".join(
        "<tr>" + "".join(f"<td>{html.escape(c)}</td>" for c in r) + "</tr>" for r in rows
    )
    return f"<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"


def _metric_keys(block: Mapping[str, Mapping[str, Any]]) -> list[str]:
    keys: list[str] = []
    for values in block.values():
        for k in values:
            if k not in keys:
                keys.append(k)

    def order(name: str) -> tuple[str, int]:
        base, _, at = name.partition("@")
        return (base, int(at) if at.isdigit() else 0)

    return sorted(keys, key=order)


# --------------------------------------------------------------------------- report


@dataclass
class RunReport:
    """Everything a run report shows, as plain data.

    Attributes
    ----------
    title : str
        Heading (the run folder's name).
    metrics : dict
        Content of ``metrics.json``.
    config : dict
        Content of ``config.yaml``.
    importance : list of dict
        Rows of ``importance.csv`` (empty when importance was off).
    images : dict of str to Path
        ``{"curves": path, "importance": path}`` for images that exist.
    """

    title: str
    metrics: dict[str, Any]
    config: dict[str, Any] = field(default_factory=dict)
    importance: list[dict[str, Any]] = field(default_factory=list)
    images: dict[str, Path] = field(default_factory=dict)
    exports: list[dict[str, Any]] = field(default_factory=list)  # exports.json (ltr export)

    @classmethod
    def from_run_dir(cls, run_dir: str | os.PathLike[str]) -> RunReport:
        """Read a run folder (``metrics.json``, ``config.yaml``, optional importance and images)."""
        run_dir = Path(run_dir)
        metrics_path = run_dir / "metrics.json"
        if not metrics_path.exists():
            raise FileNotFoundError(
                f"{str(run_dir)!r} has no metrics.json (not a finished run folder)"
            )
        metrics = json.loads(metrics_path.read_text(encoding="utf-8"))
        config: dict[str, Any] = {}
        if (run_dir / "config.yaml").exists():
            config = (
                import_yaml().safe_load((run_dir / "config.yaml").read_text(encoding="utf-8")) or {}
            )
        importance: list[dict[str, Any]] = []
        if (run_dir / "importance.csv").exists():
            import csv

            with open(run_dir / "importance.csv", newline="", encoding="utf-8") as fh:
                for row in csv.DictReader(fh):
                    importance.append({k: _maybe_float(v) for k, v in row.items()})
        images = {
            name: run_dir / f"{name}.png"
            for name in (
                "curves", "importance", "shap", "propensity",
                "search_history", "search_importance", "search_parallel",
            )
            if (run_dir / f"{name}.png").exists()
        }
        exports = []
        if (run_dir / "exports.json").exists():
            exports = json.loads((run_dir / "exports.json").read_text(encoding="utf-8"))
        return cls(
            title=run_dir.name, metrics=metrics, config=config, importance=importance,
            images=images, exports=exports,
        )

    # -- data views -------------------------------------------------------------

    def to_dict(self) -> dict[str, Any]:
        """Plain-data form (images as file names)."""
        return {
            "title": self.title,
            "metrics": self.metrics,
            "config": self.config,
            "importance": self.importance,
            "images": {k: v.name for k, v in self.images.items()},
            "exports": self.exports,
        }

    def sections(self) -> list[tuple[str, str, Any]]:
        """``(heading, kind, payload)`` triples; kind is ``"table"``, ``"text"`` or ``"image"``."""
        m = self.metrics
        out: list[tuple[str, str, Any]] = []
        summary = [
            ["status", m.get("status", "?")],
            ["engine", m.get("engine", self.config.get("model", {}).get("engine", "?"))],
            ["objective", m.get("objective", "?")],
            ["seed", m.get("seed", self.config.get("seed", "?"))],
            ["trees", m.get("n_trees", "?")],
        ]
        if m.get("convention"):
            summary.append(
                ["nDCG convention", f"{m['convention']} (curves and every metric below)"]
            )
        for name, info in (m.get("data") or {}).items():
            summary.append(
                [f"{name} set", f"{info.get('queries')} queries, {info.get('rows')} rows"]
            )
        versions = self.config.get("versions") or {}
        if versions:
            summary.append(["versions", ", ".join(f"{k} {v}" for k, v in versions.items())])
        out.append(("Run", "table", _table(["", "value"], summary)))

        final = m.get("final") or {}
        if final:
            keys = _metric_keys(final)
            rows = [[name] + [vals.get(k) for k in keys] for name, vals in final.items()]
            out.append(("Final metrics", "table", _table(["set"] + keys, rows)))
            empty = _empty_query_rows(m.get("empty_queries") or {}, final, keys)
            if empty:
                out.append(("Queries with no relevant document", "table", empty))

        stages = m.get("stages") or []
        if stages:
            found = {s for st in stages for s in (st.get("metrics") or {})}
            sets = [s for s in ("valid", "test") if s in found] + sorted(found - {"valid", "test"})
            metric_keys = _metric_keys(
                {s: v for st in stages for s, v in (st.get("metrics") or {}).items()}
            )
            header = ["stage", "k", "rounds"] + [f"{s} {k}" for s in sets for k in metric_keys]
            rows = []
            for i, st in enumerate(stages):
                first = int(st.get("first_round", 0))
                row: list[Any] = [
                    i,
                    st.get("k"),
                    f"{first + 1}-{first + int(st.get('n_rounds', 0))}",
                ]
                for s in sets:
                    vals = (st.get("metrics") or {}).get(s, {})
                    row += [vals.get(k) for k in metric_keys]
                rows.append(row)
            out.append(("Per stage", "table", _table(header, rows)))

        if "curves" in self.images:
            out.append(("Curves (nDCG per round)", "image", self.images["curves"]))

        composite = m.get("composite") or {}
        if composite:
            keys = _metric_keys(composite)
            rows = [[name] + [vals.get(k) for k in keys] for name, vals in composite.items()]
            k = m.get("composite_k", "")
            out.append((f"Composite nDCG@{k}", "table", _table(["set"] + keys, rows)))

        segments = m.get("segments") or {}
        for set_name, rows_ in segments.items():
            if not rows_:
                continue
            header = list(rows_[0])
            rows = [[r.get(h) for h in header] for r in rows_]
            k = m.get("segments_k", "")
            out.append((f"Per segment nDCG@{k} ({set_name})", "table", _table(header, rows)))

        bias = m.get("position_bias") or {}
        for set_name, vals in (bias.get("ips") or {}).items():
            keys = list(vals)
            out.append((f"Click-based metrics ({set_name})", "table",
                        _table(["metric", "value"], [[k, vals[k]] for k in keys])))
        if bias.get("propensity"):
            out.append(("IPS propensities", "text", (f"source: {bias['propensity']['source']}, "
                        f"clipped at {bias['propensity']['clip']}")))
        counts = bias.get("counts") or {}
        if counts.get("clicks") is not None:
            out.append(("Clicks per position", "text", _thin_positions(counts)))
        if "propensity" in self.images:
            out.append(("Position bias", "image", self.images["propensity"]))

        if self.importance:
            header = list(self.importance[0])
            rows = [[r.get(h) for h in header] for r in self.importance[:30]]
            title = "Permutation importance (ΔnDCG)"
            if "mean_abs_shap" in header:
                title += " beside mean |TreeSHAP contribution|"
            settings = _importance_settings(m.get("importance") or {}, self.config)
            if settings:
                out.append((title, "text", settings))
                title = "Permutation importance table"
            out.append((title, "table", _table(header, rows)))
        if "importance" in self.images:
            out.append(("Importance plot", "image", self.images["importance"]))
        if "shap" in self.images:
            out.append(("TreeSHAP contributions (beeswarm)", "image", self.images["shap"]))

        search = m.get("search") or {}
        if search:
            rows = [
                [k, json.dumps(v) if not isinstance(v, (str, int, float)) else v]
                for k, v in search.items()
                if k != "results"
            ]
            out.append(("Search", "table", _table(["", "value"], rows)))
            for name, heading in (
                ("search_history", "Optimisation history"),
                ("search_importance", "Parameter importances"),
                ("search_parallel", "Parallel coordinates"),
            ):
                if name in self.images:
                    out.append((heading, "image", self.images[name]))
            results = search.get("results") or []
            if results:
                header = list(results[0])
                out.append(
                    (
                        "Search results",
                        "table",
                        _table(header, [[r.get(h) for h in header] for r in results]),
                    )
                )
        if self.exports:
            rows = [[e.get("format"), f, e.get("sha256", {}).get(Path(f).name), e.get("time")]
                    for e in self.exports for f in e.get("files", [])]
            out.append(("Exports", "table", _table(["format", "file", "sha256", "written"], rows)))
        return out

    # -- renderers ----------------------------------------------------------------

    def to_markdown(self) -> str:
        """Markdown with images linked by file name (place it beside the images)."""
        parts = [f"# Run `{self.title}`", ""]
        for heading, kind, payload in self.sections():
            parts.append(f"## {heading}")
            parts.append("")
            if kind == "table":
                parts.append(_md_table(payload))
            elif kind == "image":
                parts.append(f"![{heading}]({Path(payload).name})")
            else:
                parts.append(str(payload))
            parts.append("")
        if self.config:
            parts += [
                "## Config",
                "",
                "```yaml",
                import_yaml().safe_dump(self.config, sort_keys=False).rstrip(),
                "```",
                "",
            ]
        return "\n".join(parts)

    def to_html(self) -> str:
        """Self-contained HTML: inline CSS, images embedded as base64 data URIs."""
        body = [f"<h1>Run <code>{html.escape(self.title)}</code></h1>"]
        for heading, kind, payload in self.sections():
            body.append(f"<h2>{html.escape(heading)}</h2>")
            if kind == "table":
                body.append(_html_table(payload))
            elif kind == "image":
                body.append(png_img_tag(payload, heading))
            else:
                body.append(f"<p>{html.escape(str(payload))}</p>")
        if self.config:
            text = import_yaml().safe_dump(self.config, sort_keys=False)
            body.append(f"<h2>Config</h2><pre>{html.escape(text)}</pre>")
        css = (
            "body{font-family:-apple-system,Segoe UI,Helvetica,Arial,sans-serif;"
            "max-width:1000px;margin:2em auto;"
            "padding:0 1em;color:#222}table{border-collapse:collapse;margin:0.5em 0 1.5em}"
            "th,td{border:1px solid #ccc;padding:3px 8px;text-align:right;font-size:13px}"
            "th{background:#f2f2f2}td:first-child,th:first-child{text-align:left}"
            "pre{background:#f7f7f7;padding:1em;overflow:auto;font-size:12px}img{max-width:100%}"
        )
        return (
            '<!DOCTYPE html>\n<html><head><meta charset="utf-8">'
            f"<title>{html.escape(self.title)}</title><style>{css}</style></head>"
            f"<body>{''.join(body)}</body></html>\n"
        )

    def save(self, run_dir: str | os.PathLike[str]) -> tuple[Path, Path]:
        """Write ``report.md`` and ``report.html`` into *run_dir*; return both paths."""
        run_dir = Path(run_dir)
        md = write_atomic(run_dir / "report.md", self.to_markdown())
        page = write_atomic(run_dir / "report.html", self.to_html())
        return md, page


def _thin_positions(counts: Mapping[str, Any]) -> str:
    """One line: which positions had too few training clicks to estimate (greyed in the plot)."""
    clicks = [int(c) for c in counts.get("clicks") or []]
    least = int(counts.get("min_clicks", 0))
    thin = [p for p, c in enumerate(clicks, start=1) if c < least]
    spans: list[str] = []
    for p in thin:
        if spans and spans[-1].split("-")[-1] == str(p - 1):
            spans[-1] = f"{spans[-1].split('-')[0]}-{p}"
        else:
            spans.append(str(p))
    total = sum(clicks)
    head = f"{total} training clicks over {len(clicks)} positions (propensity.csv lists each). "
    if not thin:
        return head + f"Every position has at least {least} clicks."
    return head + (
        f"Positions with fewer than {least} clicks, greyed in the plot (their estimates are "
        f"not measurements): {', '.join(spans)}."
    )


def _importance_settings(summary: Mapping[str, Any], config: Mapping[str, Any]) -> str:
    """One line: the settings the importance table was computed with (``metrics.json``).

    When ``ltr importance`` recomputed it with other settings than the run's
    config (``--repeats``, ``--strategy``, ``--on``), the line says so, since
    the Config section shows the training run's ``importance`` section.
    """
    if not summary:
        return ""
    k = summary.get("k", "")
    parts = [
        f"ΔnDCG@{k} on the {summary.get('set', '?')} set"
        + (f" ({summary['queries']} queries)" if summary.get("queries") is not None else ""),
        f"{summary.get('n_repeats', '?')} repeats",
        f"strategy {summary.get('strategy', '?')}",
    ]
    if summary.get("seed") is not None:
        parts.append(f"seed {summary['seed']}")
    if summary.get("convention"):
        parts.append(f"convention {summary['convention']}")
    line = "Computed with: " + ", ".join(parts) + "; 95 % t intervals over the repeats."
    if summary.get("computed_by"):
        line += f" Computed by {summary['computed_by']}."
    cfg = config.get("importance") or {}
    differ = [
        f"{key} {cfg[key]}"
        for key, got in (
            ("n_repeats", summary.get("n_repeats")),
            ("strategy", summary.get("strategy")),
            ("evaluate_on", summary.get("set")),
        )
        if key in cfg and got is not None and cfg[key] != got
    ]
    if differ:
        line += (
            " These differ from the config's importance section below (the training run's: "
            + ", ".join(differ) + ")."
        )
    return line


def _maybe_float(value: str | None) -> Any:
    if value is None:
        return None
    try:
        return float(value)
    except ValueError:
        return value

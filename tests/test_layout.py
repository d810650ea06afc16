"""The package's shape: layering, no import cycles, module sizes, doctests of every module.

Layers, bottom to top (a module imports only from its own layer or below, lazy
imports inside functions included):

0. kernels (numba, no ``ltr`` imports)
1. ``_validation``, ``_io``, ``_compat``, ``groups``, ``datasets``, ``synthetic``, ``relevance``,

2. metrics, composite, gains, metric names, objectives, sampling, schedules
3. engine adapters and the one builder
4. scikit-learn layer: estimator, scorers, importance
5. runs
6. CLI
"""

from __future__ import annotations

import ast
import doctest
import importlib
import pkgutil
from pathlib import Path

import pytest

import ltr

PACKAGE = Path(ltr.__file__).resolve().parent

LAYERS: dict[str, int] = {
    "ltr.kernels": 0,
    "ltr.kernels._dcg_select": 0,
    "ltr._validation": 1,
    "ltr._propensities": 1,
    "ltr._io": 1,
    "ltr._compat": 1,
    "ltr.groups": 1,
    "ltr.datasets": 1,
    "ltr.synthetic": 1,
    "ltr.relevance": 1,
    "ltr._frames": 1,
    "ltr.categorical": 1,
    "ltr.testing": 2,
    "ltr.metrics": 2,
    "ltr.metrics._prepare": 2,
    "ltr.evaluation": 2,
    "ltr.clicks": 2,
    "ltr.clicks._cascade": 2,
    "ltr.objectives": 2,
    "ltr.objectives._position_term": 2,
    "ltr.engines": 3,
    "ltr.build": 3,
    "ltr.export": 3,
    "ltr.dask": 3,
    "ltr.estimator": 4,
    "ltr.tracking": 4,
    "ltr.scoring": 4,
    "ltr._sklearn_private": 4,
    "ltr.inspection": 4,
    "ltr.runs": 5,
    "ltr.cli": 6,
    "ltr.__main__": 6,
}

#: Old module paths kept for one release: each only forwards to its new home (same layer).
DEPRECATED_ALIASES: dict[str, str] = {
    "ltr.rank_metrics": "ltr.metrics._rank",
    "ltr.metric_names": "ltr.metrics.names",
    "ltr.composite": "ltr.metrics.composite",
    "ltr.trec": "ltr.evaluation.trec",
    "ltr.recsys": "ltr.evaluation.recsys",
    "ltr.comparison": "ltr.evaluation.comparison",
    "ltr.monitoring": "ltr.evaluation.monitoring",
    "ltr.ips": "ltr.clicks.ips",
    "ltr.sampling": "ltr.objectives.sampling",
    "ltr.schedules": "ltr.objectives.schedules",
}
LAYERS.update({old: 2 for old in DEPRECATED_ALIASES})


def _modules() -> list[str]:
    names = ["ltr"]
    for info in pkgutil.walk_packages([str(PACKAGE)], prefix="ltr."):
        names.append(info.name)
    return sorted(names)


def _layer(module: str) -> int | None:
    best = None
    for prefix, layer in LAYERS.items():
        if (module == prefix or module.startswith(prefix + ".")) and (
            best is None or len(prefix) > len(best[0])
        ):
            best = (prefix, layer)
    return None if best is None else best[1]


def _path(module: str) -> Path:
    rel = module.split(".")[1:]
    candidate = PACKAGE.joinpath(*rel)
    if candidate.is_dir():
        return candidate / "__init__.py"
    return candidate.with_suffix(".py")


def _imports(module: str) -> set[str]:
    """Every ``ltr`` module *module* imports, at top level or lazily, TYPE_CHECKING aside."""
    tree = ast.parse(_path(module).read_text(encoding="utf-8"))
    type_only: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            for child in ast.walk(node):
                type_only.add(id(child))
    out: set[str] = set()
    package = module if _path(module).name == "__init__.py" else module.rsplit(".", 1)[0]
    for node in ast.walk(tree):
        if id(node) in type_only:
            continue
        if isinstance(node, ast.Import):
            out |= {a.name for a in node.names if a.name.startswith("ltr")}
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parts = package.split(".")
                base = ".".join(parts[: len(parts) - node.level + 1] + ([base] if base else []))
            if base.startswith("ltr"):
                out.add(base)
    return out


MODULES = _modules()


def test_every_module_has_a_layer():
    assert [m for m in MODULES if m != "ltr" and _layer(m) is None] == []


@pytest.mark.parametrize("module", [m for m in MODULES if m != "ltr"])
def test_modules_never_import_a_higher_layer(module):
    mine = _layer(module)
    upward = sorted(
        imp for imp in _imports(module) if imp != "ltr" and (_layer(imp) or 0) > (mine or 0)
    )
    assert upward == [], f"{module} (layer {mine}) imports {upward}"


def test_kernels_import_nothing_from_ltr():
    for module in MODULES:
        if module.startswith("ltr.kernels"):
            assert {i for i in _imports(module) if not i.startswith("ltr.kernels")} == set()


def test_there_are_no_import_cycles():
    graph = {
        m: {i for i in _imports(m) if i in MODULES and i != m and i != "ltr"}
        for m in MODULES
        if m != "ltr"
    }
    # a package's __init__ re-exporting its own submodules is not a cycle
    for m, deps in graph.items():
        graph[m] = {d for d in deps if not m.startswith(d + ".")}
    seen: dict[str, int] = {}
    stack: list[str] = []

    def visit(node: str) -> None:
        seen[node] = 1
        stack.append(node)
        for nxt in sorted(graph.get(node, ())):
            if seen.get(nxt) == 1:
                cycle = stack[stack.index(nxt) :] + [nxt]
                raise AssertionError("import cycle: " + " -> ".join(cycle))
            if nxt not in seen:
                visit(nxt)
        stack.pop()
        seen[node] = 2

    for node in sorted(graph):
        if node not in seen:
            visit(node)


@pytest.mark.parametrize("module", MODULES)
def test_no_module_is_past_600_lines(module):
    lines = len(_path(module).read_text(encoding="utf-8").splitlines())
    assert lines <= 600, f"{module} has {lines} lines: split it by concept"


@pytest.mark.parametrize("module", MODULES)
def test_doctests_pass(module):
    mod = importlib.import_module(module)
    finder = doctest.DocTestFinder(exclude_empty=True)
    runner = doctest.DocTestRunner(
        optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE, verbose=False
    )
    tests = [t for t in finder.find(mod, module) if t.examples]
    for test in tests:
        runner.run(test)
    result = runner.summarize(verbose=False)
    assert result.failed == 0, f"{result.failed} doctest example(s) failed in {module}"


def test_convention_names_come_from_one_registry():
    from typing import get_args

    from ltr import metrics, scoring
    from ltr.metrics.names import CONVENTIONS, NAME_CONVENTIONS, QRELS_CONVENTIONS
    from ltr.runs.config import EvaluationConfig

    # one registry object: the metrics, the scorers and the names all read it
    assert metrics.CONVENTIONS is CONVENTIONS and scoring.CONVENTIONS is CONVENTIONS
    assert set(NAME_CONVENTIONS) | set(QRELS_CONVENTIONS) <= set(CONVENTIONS)
    # conventions a metric name, the CLI and the config accept: those that need no document ids
    annotation = EvaluationConfig.model_fields["convention"].annotation
    literal = next(a for a in get_args(annotation) if get_args(a))
    assert set(get_args(literal)) == set(NAME_CONVENTIONS)
    from ltr.cli import build_parser

    commands = build_parser()._subparsers._group_actions[0].choices
    conv = {
        name: next(a for a in commands[name]._actions if a.dest == "convention").choices
        for name in ("evaluate", "score")
    }
    assert tuple(conv["score"]) == NAME_CONVENTIONS
    assert tuple(conv["evaluate"]) == QRELS_CONVENTIONS
    from ltr.engines import ENGINES

    assert set(ENGINES) <= set(CONVENTIONS)  # every engine's own convention exists
    # no other module defines its own CONVENTIONS constant
    for module in MODULES:
        if module == "ltr.metrics.names" or module == "ltr":
            continue
        tree = ast.parse(_path(module).read_text(encoding="utf-8"))
        defined = [
            t.id
            for node in ast.walk(tree)
            if isinstance(node, (ast.Assign, ast.AnnAssign))
            for t in (node.targets if isinstance(node, ast.Assign) else [node.target])
            if isinstance(t, ast.Name)
        ]
        assert "CONVENTIONS" not in defined, f"{module} defines its own CONVENTIONS"


def test_metric_names_come_from_one_registry():
    """No module keeps its own table of metric names: they read ltr.metrics.names.REGISTRY."""
    from ltr.evaluation.monitoring import METRICS as MONITOR
    from ltr.metrics.names import SCORER_METRICS

    assert set(SCORER_METRICS) <= set(MONITOR)  # every rank metric can be a monitor rule
    for module in MODULES:
        if module in ("ltr.metrics.names", "ltr"):
            continue
        text = _path(module).read_text(encoding="utf-8")
        assert "RANK_FUNCTIONS[" not in text, f"{module} maps metric names itself"
        assert '"ips_ndcg@' not in text and "f\"ips_ndcg@" not in text, module


@pytest.mark.parametrize("old", sorted(DEPRECATED_ALIASES))
def test_old_module_paths_forward_with_a_deprecation_warning(old):
    new = importlib.import_module(DEPRECATED_ALIASES[old])
    alias = importlib.import_module(old)
    name = min(getattr(new, "__all__", None) or [n for n in vars(new) if not n.startswith("_")])
    with pytest.warns(DeprecationWarning, match=f"{old} moved to "):
        assert getattr(alias, name) is getattr(new, name)


#: Shared infrastructure every layer may use, private by name but not by concern: the one
#: validation rule set (propensities split out of it), the one writer, the optional imports, and the kernels (whose private
#: modules are the kernel layer's interface to its validating wrappers).
INFRASTRUCTURE = (
    "ltr._validation", "ltr._propensities", "ltr._io", "ltr._compat", "ltr._frames",
    "ltr._sklearn_private", "ltr.kernels",
)


def _subpackage(module: str) -> str:
    parts = module.split(".")
    return ".".join(parts[:2])


def _private_imports(module: str) -> list[str]:
    """Private names (or private modules) *module* imports from another subpackage."""
    tree = ast.parse(_path(module).read_text(encoding="utf-8"))
    out = []
    for node in ast.walk(tree):
        if not isinstance(node, ast.ImportFrom) or node.level or not node.module:
            continue
        base = node.module
        if not base.startswith("ltr.") or _subpackage(base) == _subpackage(module):
            continue
        if base.startswith(INFRASTRUCTURE) or module in DEPRECATED_ALIASES:
            continue
        private_module = any(p.startswith("_") for p in base.split(".")[1:])
        names = [a.name for a in node.names if a.name.startswith("_")]
        if private_module or names:
            out.append(f"{base}: {', '.join(names) or '(private module)'}")
    return out


@pytest.mark.parametrize("module", [m for m in MODULES if m != "ltr"])
def test_no_private_name_is_imported_across_subpackages(module):
    assert _private_imports(module) == []

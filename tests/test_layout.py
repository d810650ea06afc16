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
    "ltr._validation": 1,
    "ltr._io": 1,
    "ltr._compat": 1,
    "ltr.groups": 1,
    "ltr.datasets": 1,
    "ltr.synthetic": 1,
    "ltr.relevance": 1,
    "ltr.testing": 2,
    "ltr._gains": 2,
    "ltr.metric_names": 2,
    "ltr.metrics": 2,
    "ltr.composite": 2,
    "ltr.objectives": 2,
    "ltr._unbiased": 2,
    "ltr.sampling": 2,
    "ltr.schedules": 2,
    "ltr.comparison": 2,
    "ltr.monitoring": 2,
    "ltr.rank_metrics": 2,
    "ltr.trec": 2,
    "ltr.evaluation": 2,
    "ltr.recsys": 2,
    "ltr.clicks": 2,
    "ltr.ips": 2,
    "ltr.engines": 3,
    "ltr._tree_changes": 3,
    "ltr.build": 3,
    "ltr.export": 3,
    "ltr.dask": 3,
    "ltr.estimator": 4,
    "ltr.scoring": 4,
    "ltr.inspection": 4,
    "ltr._importance_result": 4,
    "ltr.runs": 5,
    "ltr.cli": 6,
    "ltr.__main__": 6,
}


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
def test_no_module_is_past_800_lines(module):
    lines = len(_path(module).read_text(encoding="utf-8").splitlines())
    assert lines <= 800, f"{module} has {lines} lines: split it by concept"


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

    from ltr.metric_names import CONVENTIONS as NAMED
    from ltr.metrics import CONVENTIONS
    from ltr.runs.config import EvaluationConfig

    # conventions a metric name, the CLI and the config accept: those that need no document ids
    assert set(NAMED) <= set(CONVENTIONS)
    annotation = EvaluationConfig.model_fields["convention"].annotation
    literal = next(a for a in get_args(annotation) if get_args(a))
    assert set(get_args(literal)) == set(NAMED)
    from ltr.cli import build_parser

    evaluate = build_parser()._subparsers._group_actions[0].choices["evaluate"]
    conv = next(a for a in evaluate._actions if a.dest == "convention")
    from ltr.evaluation import CONVENTIONS as QRELS

    assert tuple(conv.choices) == tuple(NAMED) + tuple(QRELS)
    assert set(QRELS) <= set(CONVENTIONS)
    from ltr.engines import ENGINES

    assert set(ENGINES) <= set(CONVENTIONS)  # every engine's own convention exists

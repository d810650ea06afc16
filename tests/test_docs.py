"""Docs that are checked against the code: the estimator's signature in ``docs/sklearn.md``.

The block between the ``signature`` markers lists every parameter of
``LambdaMARTRanker`` and of its ``fit``/``predict``/``score`` in order with
its default, and a table row per constructor parameter; a parameter added to
the code and not to the docs (or the reverse) fails here.
"""

from __future__ import annotations

import ast
import inspect
import re
from pathlib import Path

import pytest

from ltr import LambdaMARTRanker

DOC = Path(__file__).resolve().parents[1] / "docs" / "sklearn.md"


def _block() -> str:
    text = DOC.read_text(encoding="utf-8")
    start = text.index("<!-- signature: generated from the estimator")
    return text[start : text.index("<!-- signature: end -->", start)]


def _documented() -> dict[str, ast.FunctionDef]:
    code = re.search(r"```python\n(.*?)```", _block(), re.DOTALL)
    assert code is not None, "docs/sklearn.md: the signature block has no python code"
    cls = ast.parse(code.group(1)).body[0]
    assert isinstance(cls, ast.ClassDef) and cls.name == "LambdaMARTRanker"
    return {f.name: f for f in cls.body if isinstance(f, ast.FunctionDef)}


def _doc_params(fn: ast.FunctionDef) -> list[tuple[str, object]]:
    args = fn.args
    out: list[tuple[str, object]] = []
    positional = args.posonlyargs + args.args
    pos_defaults = [inspect.Parameter.empty] * (len(positional) - len(args.defaults))
    pos_defaults += [ast.literal_eval(d) for d in args.defaults]
    out += [(a.arg, d) for a, d in zip(positional, pos_defaults)]
    out += [
        (a.arg, inspect.Parameter.empty if d is None else ast.literal_eval(d))
        for a, d in zip(args.kwonlyargs, args.kw_defaults)
    ]
    return [(n, d) for n, d in out if n != "self"]


def _code_params(fn) -> list[tuple[str, object]]:
    return [
        (p.name, p.default)
        for p in inspect.signature(fn).parameters.values()
        if p.name != "self" and p.kind is not p.VAR_KEYWORD
    ]


@pytest.mark.parametrize("method", ["__init__", "fit", "predict", "score"])
def test_docs_sklearn_lists_every_parameter_with_its_default(method):
    documented = _documented()
    assert method in documented, f"docs/sklearn.md does not list LambdaMARTRanker.{method}"
    assert _doc_params(documented[method]) == _code_params(getattr(LambdaMARTRanker, method))


def test_docs_sklearn_has_a_table_row_per_constructor_parameter():
    rows = re.findall(r"^\| `(\w+)` \|", _block(), re.MULTILINE)
    assert rows == [name for name, _ in _code_params(LambdaMARTRanker.__init__)]


def test_readme_performance_table_is_the_one_the_results_file_gives():
    """The README's speed table is written by experiments/readme_figures.py, never by hand."""
    import subprocess
    import sys

    root = DOC.parents[1]
    proc = subprocess.run([sys.executable, str(root / "experiments" / "readme_figures.py"),
                           "--check"], cwd=root, capture_output=True, text=True, check=False)
    assert proc.returncode == 0, (
        "README.md's performance table differs from experiments/results/performance.json: run "
        f"python experiments/readme_figures.py ({proc.stdout}{proc.stderr})")

"""The README's Python examples run as written (with fewer rounds), in order, in one namespace.

Every ```python block of README.md runs, top to bottom, in one fresh Python process (blocks
build on each other: the importance example uses the ranker trained above it; a separate
process keeps ``sklearn.set_config`` and matplotlib state out of the other tests).  The working
folder is a temporary one holding ``tests`` (a link to this repository's, so the README's
relative paths to the committed LETOR slice resolve) and the small ``qrels.txt``/``run.txt`` the
evaluation example names.

Two kinds of change, both declared below and each checked to still match the README:

* SMALLER: round, fold and session counts cut so the suite stays fast (the examples' sizes are
  for reading, not for CI); the calls are unchanged.
* a block preceded by ``<!-- readme-test: skip: REASON -->`` does not run; REASON must say why
  (only examples that need a Dask cluster are skipped).
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
README = REPO / "README.md"

# first line of a block -> [(text in the block, smaller replacement), ...]
SMALLER: dict[str, list[tuple[str, str]]] = {
    "from ltr import LambdaMARTRanker, Steps, load_letor, ndcg": [
        ("n_estimators=300, schedule=Steps([(5, 100), (10, 100), (20, 100)])",
         "n_estimators=30, schedule=Steps([(5, 10), (10, 10), (20, 10)])"),
    ],
    "import sklearn": [
        ("LambdaMARTRanker(n_estimators=100)", "LambdaMARTRanker(n_estimators=5)"),
        ("GroupKFold(n_splits=5)", "GroupKFold(n_splits=2)"),
    ],
    "import numpy as np": [
        ("n_sessions=8", "n_sessions=2"),
        ("LambdaMARTRanker(unbiased=True)", "LambdaMARTRanker(unbiased=True, n_estimators=5)"),
    ],
}

_BLOCK = re.compile(r"^```python\n(.*?)^```", re.DOTALL | re.MULTILINE)
_SKIP = re.compile(r"<!-- readme-test: skip: (.+?) -->\s*$")


def _blocks() -> list[tuple[int, str, str | None]]:
    """``(line number, code, skip reason or None)`` of every python block of the README."""
    text = README.read_text(encoding="utf-8")
    out = []
    for m in _BLOCK.finditer(text):
        line = text.count("\n", 0, m.start()) + 1
        before = text[: m.start()].rstrip("\n").rsplit("\n", 1)[-1]
        skip = _SKIP.search(before)
        out.append((line, m.group(1), skip.group(1) if skip else None))
    return out


def _smaller(code: str) -> str:
    first = code.split("\n", 1)[0]
    for old, new in SMALLER.get(first, []):
        assert old in code, f"README block {first!r} no longer holds {old!r}: update SMALLER"
        code = code.replace(old, new)
    return code


def _write_trec_files(folder: Path) -> None:
    """Judgments and a ranking for ``ltr.evaluate("qrels.txt", "run.txt", ...)``."""
    (folder / "qrels.txt").write_text(
        "q1 0 d1 2\nq1 0 d2 0\nq1 0 d3 1\nq2 0 d4 1\nq2 0 d5 0\n", encoding="utf-8"
    )
    (folder / "run.txt").write_text(
        "q1 Q0 d3 1 0.9 t\nq1 Q0 d1 2 0.5 t\nq1 Q0 d2 3 0.1 t\n"
        "q2 Q0 d5 1 0.8 t\nq2 Q0 d4 2 0.2 t\n",
        encoding="utf-8",
    )


def test_every_python_block_of_the_readme_runs(tmp_path):
    blocks = _blocks()
    assert len(blocks) >= 5
    skipped = [(line, reason) for line, _, reason in blocks if reason is not None]
    for line, reason in skipped:
        assert "Dask cluster" in reason, f"README line {line}: skipped without a cluster: {reason}"
    used = {code.split("\n", 1)[0] for _, code, reason in blocks if reason is None}
    assert set(SMALLER) <= used, f"SMALLER names blocks the README lost: {set(SMALLER) - used}"
    parts = []
    for line, code, reason in blocks:
        if reason is not None:
            continue
        parts.append(f"print('--- README line {line}', flush=True)\n{_smaller(code)}\n")
    (tmp_path / "tests").symlink_to(REPO / "tests", target_is_directory=True)
    _write_trec_files(tmp_path)
    script = tmp_path / "readme_examples.py"
    script.write_text("\n".join(parts), encoding="utf-8")
    env = dict(os.environ, MPLBACKEND="Agg", PYTHONPATH=os.pathsep.join(
        [str(REPO), *filter(None, [os.environ.get("PYTHONPATH")])]))
    env.setdefault("OMP_WAIT_POLICY", "PASSIVE")
    proc = subprocess.run([sys.executable, str(script)], cwd=tmp_path, env=env,
                          capture_output=True, text=True, check=False, timeout=600)
    last = [ln for ln in proc.stdout.splitlines() if ln.startswith("--- README line")]
    assert proc.returncode == 0, (
        f"the README example at {last[-1][4:] if last else 'the start'} failed:\n"
        f"{proc.stderr[-3000:]}"
    )
    assert len(last) == len(blocks) - len(skipped)
    assert (tmp_path / "importance.png").is_file()  # the importance example's plot

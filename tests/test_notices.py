"""Long phases say so: the cold-kernel notice, phase notices on stderr, the search's bar."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from ltr import cli
from ltr.cli import main

REPO = Path(__file__).resolve().parents[1]
CONFIGS = REPO / "configs"

_CHECK = "from ltr.kernels._cache import kernels_cached; print(kernels_cached())"
_COMPILE = (
    "import numpy as np; from ltr.kernels._dcg import _gain; "
    "_gain(0, np.ones(2), np.ones(2), 1)"
)


def _python(code: str, cache: Path) -> str:
    env = dict(os.environ, NUMBA_CACHE_DIR=str(cache),
               PYTHONPATH=os.pathsep.join([str(REPO), os.environ.get("PYTHONPATH", "")]))
    proc = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True,
                          check=False, timeout=300)
    assert proc.returncode == 0, proc.stderr[-2000:]
    return proc.stdout.strip()


def test_kernel_cache_detection_reads_numbas_own_cache(tmp_path):
    """An empty NUMBA_CACHE_DIR is cold; after one kernel compiled there, a new process sees it."""
    cache = tmp_path / "numba"
    assert _python(_CHECK, cache) == "False"
    _python(_COMPILE, cache)  # numba writes the compiled kernel into the cache
    assert any(cache.rglob("*.nbi"))
    assert _python(_CHECK, cache) == "True"


def test_a_cold_cache_is_announced_once_per_process(tmp_path, capsys, monkeypatch):
    import ltr.kernels._cache as kcache

    monkeypatch.setattr(kcache, "kernels_cached", lambda: False)
    monkeypatch.setattr(cli, "_compile_noticed", False)
    argv = ["evaluate", "--qrels", tmp_path / "q.txt", "--ranking", tmp_path / "r.txt"]
    (tmp_path / "q.txt").write_text("1 0 a 1\n")
    (tmp_path / "r.txt").write_text("1 Q0 a 1 1.0 t\n")
    assert main([str(a) for a in argv]) == 0
    first = capsys.readouterr().err
    assert first.count("compiling numba kernels on first use (cached afterwards") == 1
    assert main([str(a) for a in argv]) == 0
    assert "compiling" not in capsys.readouterr().err
    monkeypatch.setattr(cli, "_compile_noticed", False)
    assert main(["validate", str(CONFIGS / "quickstart.yaml")]) == 0  # no kernels: no notice
    assert "compiling" not in capsys.readouterr().err


def test_a_warm_cache_is_not_announced(tmp_path, capsys, monkeypatch):
    import ltr.kernels._cache as kcache

    monkeypatch.setattr(kcache, "kernels_cached", lambda: True)
    monkeypatch.setattr(cli, "_compile_noticed", False)
    (tmp_path / "q.txt").write_text("1 0 a 1\n")
    (tmp_path / "r.txt").write_text("1 Q0 a 1 1.0 t\n")
    assert main(["evaluate", "--qrels", str(tmp_path / "q.txt"),
                 "--ranking", str(tmp_path / "r.txt")]) == 0
    assert "compiling" not in capsys.readouterr().err


SMALL_TUNE = ["--set", "data.synthetic.n_queries=60", "--set", "data.synthetic.n_features=5",
              "--set", "model.n_estimators=2", "--set", "model.n_jobs=1",
              "--set", "search.param_grid={learning_rate: [0.05, 0.1], num_leaves: [3, 7, 15]}",
              "--set", "search.folds=2"]


def test_tune_announces_its_search_and_counts_fits_on_its_bar(tmp_path, capsys):
    rc = main(["tune", str(CONFIGS / "tune.yaml"), *SMALL_TUNE, "--progress",
               "--out", str(tmp_path / "t")])
    err = capsys.readouterr().err
    assert rc == 0, err
    # 2 x 3 candidates x 2 folds, announced before the search starts, then counted fit by fit
    line = next(ln for ln in err.replace("\r", "\n").splitlines() if ln.startswith("ltr: search"))
    assert "12 fits (2 GroupKFold folds on" in line
    assert "search:" in err and "/12 [" in err and "fit" in err  # the bar counts fits of 12
    assert err.index("ltr: search") < err.index("/12 [")
    log = (tmp_path / "t" / "run.log").read_text()
    assert "search grid over learning_rate, num_leaves: 12 fits" in log  # and in the run's log


def test_a_random_search_on_several_processes_says_it_shows_no_per_fit_progress(tmp_path, capsys):
    import joblib

    with joblib.parallel_config(backend="threading"):  # n_jobs=2 without starting processes
        rc = main(["tune", str(CONFIGS / "tune.yaml"), *SMALL_TUNE,
                   "--set", "search.method=random", "--set", "search.n_iter=3",
                   "--set", "search.n_jobs=2", "--out", str(tmp_path / "t")])
    err = capsys.readouterr().err
    assert rc == 0, err
    assert "ltr: search random over learning_rate, num_leaves: 6 fits" in err
    assert "on 2 processes, no per-fit progress" in err


def test_importance_is_announced_with_its_size(tmp_path, capsys):
    cfg = yaml.safe_load((CONFIGS / "importance.yaml").read_text())
    cfg["data"]["synthetic"].update(n_queries=40, n_features=6)
    cfg["importance"].update(n_repeats=3, groups={"pair": ["f1", "f2"]})
    cfg["model"].update(n_estimators=2, n_jobs=1)
    path = tmp_path / "imp.yaml"
    path.write_text(yaml.safe_dump(cfg))
    rc = main(["train", str(path), "--out", str(tmp_path / "r")])
    err = capsys.readouterr().err
    assert rc == 0, err
    assert "ltr: permutation importance on test (8 queries, 7 features/groups x 3 repeats, " \
           "global)" in err


def test_search_progress_is_a_pass_through_scorer():
    """The wrapper returns the scorer's value, routes qid as it does, and pickles without a bar."""
    import pickle

    import numpy as np

    from ltr import LambdaMARTRanker
    from ltr.runs.notices import SearchProgress
    from ltr.scoring import get_scorer
    from ltr.synthetic import make_ranking

    d = make_ranking(20, n_features=4, random_state=0)
    qid = np.repeat(np.arange(20), np.diff(d.offsets))
    model = LambdaMARTRanker(n_estimators=2, n_jobs=1).fit(d.X, d.y, qid=qid)
    inner = get_scorer("ndcg@5")
    wrapped = SearchProgress(inner, total=1, show=True)
    wrapped.start()
    assert wrapped(model, d.X, d.y, qid=qid) == inner(model, d.X, d.y, qid=qid)
    assert wrapped.bar.n == 1
    assert str(wrapped.get_metadata_routing()) == str(inner.get_metadata_routing())
    copy = pickle.loads(pickle.dumps(wrapped))
    assert copy.bar is None and copy(model, d.X, d.y, qid=qid) == pytest.approx(wrapped(
        model, d.X, d.y, qid=qid))
    wrapped.close()

"""The example configs shipped as package data: `ltr init`, bare config names, the wheel."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import zipfile
from email.parser import Parser
from pathlib import Path

import pytest

from ltr.cli import main
from ltr.runs.init_cmd import init_configs, shipped_config, shipped_configs

REPO = Path(__file__).resolve().parents[1]
CONFIGS = sorted((REPO / "configs").glob("*.yaml"))


def run(argv, capsys):
    rc = main([str(a) for a in argv])
    out, err = capsys.readouterr()
    return rc, out, err


def test_the_package_carries_exactly_the_repository_configs_one_copy():
    shipped = shipped_configs()
    assert sorted(shipped) == [p.stem for p in CONFIGS]
    for path in CONFIGS:
        # ltr/configs is the repository's configs/ (a link), not a second copy of the YAML
        assert shipped[path.stem].resolve() == path.resolve()


def test_bare_names_resolve_to_shipped_configs_and_paths_never_do():
    assert shipped_config("quickstart") == shipped_configs()["quickstart"]
    assert shipped_config("quickstart.yaml") == shipped_configs()["quickstart"]
    assert shipped_config("configs/quickstart.yaml") is None
    assert shipped_config("./quickstart") is None
    assert shipped_config("nosuch") is None
    assert shipped_config("") is None


def test_the_quick_start_runs_by_name_from_any_folder_with_intervals_that_exclude_zero(
    tmp_path, capsys, monkeypatch
):
    """`ltr train quickstart` as shipped: its importance repeats give the top feature an
    interval that excludes zero (2 repeats gave t(0.975, 1) = 12.7 times the spread)."""
    import pandas as pd

    monkeypatch.chdir(tmp_path)  # no configs/ here
    rc, out, err = run(["train", "quickstart", "--out", tmp_path / "q"], capsys)
    assert rc == 0, err
    assert "run folder:" in out
    imp = pd.read_csv(tmp_path / "q" / "importance.csv")
    top = imp.iloc[imp["importance_mean"].idxmax()]
    assert top["ci_low"] > 0 < top["importance_mean"]
    assert json.loads((tmp_path / "q" / "metrics.json").read_text())["importance"][
        "n_repeats"] >= 10


def test_an_unknown_bare_name_lists_the_shipped_examples(tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    rc, _, err = run(["validate", "quickstrt"], capsys)
    assert rc == 1
    assert "config file not found: 'quickstrt'" in err
    assert "quickstart" in err and "ltr init" in err
    rc, _, err = run(["validate", "configs/quickstrt.yaml"], capsys)  # a path: no list
    assert rc == 1 and "shipped examples" not in err


def test_init_copies_every_config_and_the_copy_runs(tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    rc, out, err = run(["init"], capsys)
    assert rc == 0, err
    copied = sorted((tmp_path / "configs").glob("*.yaml"))
    assert [p.name for p in copied] == [p.name for p in CONFIGS]
    for src, dst in zip(CONFIGS, copied, strict=True):
        assert dst.read_bytes() == src.read_bytes()
    assert "ltr train configs/quickstart.yaml" in out
    rc, out, err = run(["validate", "configs/quickstart.yaml"], capsys)
    assert rc == 0 and out.startswith("ok: "), err


def test_init_refuses_to_overwrite_and_writes_nothing(tmp_path, capsys):
    out = tmp_path / "mine"
    out.mkdir()
    (out / "tune.yaml").write_text("edited\n")
    rc, _, err = run(["init", "--out", out], capsys)
    assert rc == 1  # the one --out DIR rule: a new or empty folder
    assert "--out:" in err and "already exists and is not empty" in err
    assert [p.name for p in out.iterdir()] == ["tune.yaml"]
    assert (out / "tune.yaml").read_text() == "edited\n"
    res = init_configs(out, force=True)
    assert len(res.files) == len(CONFIGS)
    assert (out / "tune.yaml").read_bytes() == (REPO / "configs" / "tune.yaml").read_bytes()


def test_init_into_a_file_is_an_error_naming_out(tmp_path, capsys):
    target = tmp_path / "file"
    target.write_text("x")
    rc, _, err = run(["init", "--out", target], capsys)
    assert rc == 1 and "--out" in err and "not a folder" in err
    assert target.read_text() == "x"


# slow: among the costliest default tests (issue 25: default run <= 4 min); CI runs it (-m slow)
@pytest.mark.slow
def test_the_wheel_carries_the_configs_and_project_urls(tmp_path):
    """Build the wheel as a user would (pip, isolated build) and read its contents."""
    src = tmp_path / "src"  # a copy: the build leaves build/ and *.egg-info beside the sources
    skip = shutil.ignore_patterns("__pycache__", "*.pyc", "build", "*.egg-info")
    for name in ("pyproject.toml", "README.md", "LICENSE"):
        src.mkdir(exist_ok=True)
        shutil.copy2(REPO / name, src / name)
    for name in ("ltr", "configs"):  # ltr/configs stays a link to configs/
        shutil.copytree(REPO / name, src / name, symlinks=True, ignore=skip)
    proc = subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--no-deps", "-q", str(src), "-w", str(tmp_path)],
        capture_output=True, text=True, check=False, timeout=300,
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    (wheel,) = tmp_path.glob("ltr_rank-*.whl")
    with zipfile.ZipFile(wheel) as zf:
        names = set(zf.namelist())
        for path in CONFIGS:
            assert zf.read(f"ltr/configs/{path.name}") == path.read_bytes()
        (meta_name,) = [n for n in names if n.endswith(".dist-info/METADATA")]
        meta = Parser().parsestr(zf.read(meta_name).decode())
    assert not any(n.startswith("tests/") for n in names)
    urls = dict(u.split(", ", 1) for u in meta.get_all("Project-URL"))
    assert {"Homepage", "Source", "Issues", "Changelog", "Documentation"} <= set(urls)
    assert all(u.startswith(urls["Source"]) for u in urls.values())


@pytest.mark.parametrize("name", [p.stem for p in CONFIGS if p.stem != "monitor"])
def test_every_shipped_run_config_validates_by_name(name, tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(REPO)  # letor's data paths: the committed slice, found from the clone
    rc, out, err = run(["validate", name], capsys)
    assert rc == 0, err
    assert out.startswith(f"ok: {name} ")

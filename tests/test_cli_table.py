"""The command line's shared rules: one table of commands, one ``--out DIR`` rule, exit codes.

Every command is built from ``ltr.cli.COMMANDS``; every folder a command writes
is ``--out DIR`` (new or empty, otherwise refused before anything is written);
usage errors exit 2; ``ltr compare --fail-on-regression`` gates CI with exit 3.
"""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

import ltr
from ltr.cli import COMMANDS, EXIT_REGRESSION, EXIT_USAGE, build_parser, main

DOCS = Path(__file__).resolve().parents[1] / "docs" / "cli.md"


def _run(argv, capsys) -> tuple[int, str, str]:
    rc = main([str(a) for a in argv])
    out, err = capsys.readouterr()
    return rc, out, err


def _subcommands() -> dict[str, object]:
    parser = build_parser()
    action = next(a for a in parser._actions if a.dest == "command")
    return dict(action.choices)


def test_the_parser_is_built_from_the_command_table():
    assert list(_subcommands()) == [c.name for c in COMMANDS]
    assert len({c.name for c in COMMANDS}) == len(COMMANDS)


def test_version_prints_the_package_version(capsys):
    rc, out, _ = _run(["--version"], capsys)
    assert rc == 0 and out.strip() == f"ltr {ltr.__version__}"


def test_the_module_docstring_and_docs_list_every_command():
    import ltr.cli

    doc = ltr.cli.__doc__ or ""
    text = DOCS.read_text(encoding="utf-8")
    for command in COMMANDS:
        assert f"ltr {command.name} " in doc, command.name
        assert re.search(rf"`ltr {command.name}\b", text), f"docs/cli.md lacks ltr {command.name}"


@pytest.mark.parametrize(
    "argv",
    [
        ["train"],
        ["train", "--set", "seed=1"],
        ["tune"],
        ["validate"],
        ["validate", "a.yaml", "-c", "b.yaml"],
        ["evaluate", "--qrels", "q.txt"],
        ["predict", "run", "--data", "x.csv"],
        ["importance", "run", "--repeats", "0"],
        ["compare", "a.csv", "b.csv", "--n-resamples", "0"],
        ["monitor", "log.csv"],
        ["score"],
        ["nope"],
    ],
)
def test_usage_errors_exit_2_with_one_line(argv, capsys, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    rc, out, err = _run(argv, capsys)
    assert rc == EXIT_USAGE, (out, err)
    assert err.startswith("ltr: error: ") and err.count("\n") == 1
    assert list(tmp_path.iterdir()) == []


def _per_query(path: Path, values: np.ndarray, segment: list[str]) -> Path:
    frame = pd.DataFrame({"qid": [f"q{i}" for i in range(len(values))], "segment": segment,
                          "ndcg@10": values})
    frame.to_csv(path, index=False)
    return path


@pytest.fixture()
def regressed_pair(tmp_path):
    rng = np.random.default_rng(0)
    a = rng.uniform(0.4, 0.9, 60)
    b = a.copy()
    b[:30] -= 0.2  # the first segment regresses by 0.2 on every query
    seg = ["head"] * 30 + ["tail"] * 30
    return _per_query(tmp_path / "a.csv", a, seg), _per_query(tmp_path / "b.csv", b, seg)


def test_compare_fail_on_regression_exits_3_and_plain_compare_exits_0(regressed_pair, capsys):
    a, b = regressed_pair
    args = ["compare", a, b, "--n-resamples", "200", "--min-queries", "5"]
    rc, out, _ = _run(args, capsys)
    assert rc == 0 and "REGRESSED" in out
    rc, out, _ = _run(args + ["--fail-on-regression"], capsys)
    assert rc == EXIT_REGRESSION == 3
    rc, out, _ = _run(["compare", a, a, "--n-resamples", "200", "--fail-on-regression"], capsys)
    assert rc == 0, out


@pytest.mark.parametrize("command", ["compare", "monitor", "train", "tune", "importance"])
def test_out_dir_that_is_not_empty_is_refused_before_any_work(command, tmp_path, capsys,
                                                                regressed_pair):
    out = tmp_path / "out"
    out.mkdir()
    (out / "keep.txt").write_text("mine")
    config = tmp_path / "c.yaml"
    config.write_text("seed: 0\n")
    a, b = regressed_pair
    argv = {
        "compare": ["compare", a, b],
        "monitor": ["monitor", a, "--metric", "ndcg@10", "--window", "10", "--min", "0.5"],
        "train": ["train", config],
        "tune": ["tune", config],
        "importance": ["importance", config],
    }[command]
    rc, _, err = _run(argv + ["--out", out], capsys)
    assert rc == 1
    assert "--out:" in err and "already exists and is not empty" in err
    assert sorted(p.name for p in out.iterdir()) == ["keep.txt"]
    assert (out / "keep.txt").read_text() == "mine"


def test_out_dir_that_is_a_file_is_refused(tmp_path, capsys, regressed_pair):
    a, b = regressed_pair
    target = tmp_path / "file.txt"
    target.write_text("x")
    rc, _, err = _run(["compare", a, b, "--out", target], capsys)
    assert rc == 1 and "exists and is not a folder" in err and target.read_text() == "x"


def test_evaluate_model_still_works_for_one_release_and_names_ltr_score(capsys, tmp_path):
    rc, _, err = _run(["evaluate", "--model", tmp_path / "none"], capsys)
    assert "ltr: warning: 'ltr evaluate --model M' is now 'ltr score M'" in err
    assert rc == 1 and "RUN_DIR|MODEL: file not found" in err


def test_monitor_takes_its_config_like_every_other_command(tmp_path, capsys):
    missing = tmp_path / "none.yaml"
    for argv in (["monitor", "log.csv", "-c", missing], ["monitor", "log.csv", "--config", missing],
                 ["monitor", "log.csv", missing]):
        args = build_parser().parse_args([str(a) for a in argv])
        from ltr.cli._common import config_of

        assert config_of(args) == str(missing)

"""What every ``ltr`` subcommand shares: the parser class, usage errors, the option helpers.

A subcommand is a :class:`Command`: its name, help texts, a ``configure``
function that adds its arguments and a ``run`` function that calls the
library and prints.  The table of commands lives in :mod:`ltr.cli._app`;
nothing here validates values (the library functions do, at their boundary).
"""

from __future__ import annotations

import argparse
import json
import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass

from ltr.runs.folder import check_out_folder

__all__ = [
    "EXIT_ALERT",
    "EXIT_ERROR",
    "EXIT_INTERRUPTED",
    "EXIT_OK",
    "EXIT_REGRESSION",
    "EXIT_USAGE",
    "Command",
    "Parser",
    "UsageError",
    "add_config",
    "add_debug",
    "add_out_dir",
    "add_progress",
    "add_set",
    "check_out_dir",
    "config_of",
    "positive_int",
    "print_metrics",
    "require_config",
]

EXIT_OK = 0
EXIT_ERROR = 1
EXIT_USAGE = 2
EXIT_ALERT = 3  # ltr monitor: an alert fired
EXIT_REGRESSION = 3  # ltr compare --fail-on-regression: a segment regressed significantly
EXIT_INTERRUPTED = 130


class UsageError(Exception):
    """A command-line usage error: one line on stderr and exit status 2."""


class Parser(argparse.ArgumentParser):
    """ArgumentParser whose usage errors are one line: ``ltr: error: ... (see ltr X --help)``."""

    def error(self, message: str) -> None:  # type: ignore[override]
        raise UsageError(f"{message} (see: {self.prog} --help)")


@dataclass(frozen=True)
class Command:
    """One ``ltr`` subcommand: how it is parsed and what it runs.

    Attributes
    ----------
    name : str
        The subcommand (``ltr NAME``).
    help : str
        One line for ``ltr --help``.
    description : str
        The paragraph of ``ltr NAME --help``.
    configure : callable
        Adds the subcommand's arguments to its parser.
    run : callable
        Runs the parsed arguments; returns the exit status.
    """

    name: str
    help: str
    description: str
    configure: Callable[[argparse.ArgumentParser], None]
    run: Callable[[argparse.Namespace], int]


def add_debug(p: argparse.ArgumentParser) -> None:
    """``--debug``: show the traceback instead of the one-line error."""
    p.add_argument("--debug", action="store_true", help="show the full traceback on errors")


def add_set(p: argparse.ArgumentParser) -> None:
    """``--set KEY=VALUE`` (repeatable): override a config field."""
    p.add_argument(
        "--set",
        dest="overrides",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="override a config field, e.g. --set model.n_estimators=20 "
        "--set model.schedule.steps[0].k=3 "
        "(VALUE is parsed as YAML; repeatable)",
    )


def add_config(p: argparse.ArgumentParser, *, what: str = "YAML config") -> None:
    """Add the config argument, the same in every command: ``CONFIG`` or ``-c/--config CONFIG``.

    A command that needs it reads it with :func:`require_config`, one where it
    is optional with :func:`config_of`.
    """
    p.add_argument("config", nargs="?", metavar="CONFIG", help=what)
    p.add_argument(
        "-c", "--config", dest="config_opt", metavar="CONFIG", help="the same as CONFIG"
    )


def config_of(args: argparse.Namespace) -> str | None:
    """Return the ``CONFIG`` or ``-c`` path, or None (a usage error if both are given)."""
    pos, opt = getattr(args, "config", None), getattr(args, "config_opt", None)
    if pos is not None and opt is not None:
        raise UsageError(f"give CONFIG once, not both as {pos!r} and -c {opt!r}")
    return pos if pos is not None else opt


def require_config(args: argparse.Namespace, command: str) -> str:
    """Return the ``CONFIG`` or ``-c`` path of a command that needs one (a usage error if none)."""
    value = config_of(args)
    if value is None:
        raise UsageError(f"{command} needs CONFIG (see: ltr {command} --help)")
    return value


def add_out_dir(p: argparse.ArgumentParser, what: str) -> None:
    """``--out DIR``: the one rule for folders a command writes (a new or empty folder)."""
    p.add_argument(
        "--out", metavar="DIR", help=f"{what} (a new or empty folder; never overwritten)"
    )


def check_out_dir(out: str | os.PathLike[str] | None) -> None:
    """Refuse an ``--out DIR`` that exists and is not an empty folder, before any work."""
    if out is not None:
        check_out_folder(out)


def add_progress(p: argparse.ArgumentParser) -> None:
    """``--progress`` / ``--no-progress`` (default: bars only on a terminal)."""
    g = p.add_mutually_exclusive_group()
    g.add_argument(
        "--progress",
        dest="progress",
        action="store_true",
        default=None,
        help="show progress bars (default: only on a terminal)",
    )
    g.add_argument(
        "--no-progress", dest="progress", action="store_false", help="hide progress bars"
    )


def positive_int(text: str) -> int:
    """Parse a count for argparse: an integer >= 1 (a usage error otherwise)."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected an integer >= 1, got {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be >= 1, got {value}")
    return value


def print_metrics(result: Mapping[str, Mapping[str, float]], as_json: bool) -> None:
    """Print ``{set: {metric: value}}`` as a table (or JSON)."""
    if as_json:
        print(json.dumps(result, indent=2))
        return
    keys: list[str] = []
    for vals in result.values():
        keys += [k for k in vals if k not in keys]
    width = max([len("set")] + [len(n) for n in result])
    print(f"{'set':<{width}}  " + "  ".join(f"{k:>8}" for k in keys))
    for name, vals in result.items():
        print(f"{name:<{width}}  " + "  ".join(f"{vals.get(k, float('nan')):>8.4f}" for k in keys))

"""Command line: argparse and a dispatch table; the library does the work.

::

    ltr train CONFIG [--set KEY=VALUE ...] [--out DIR] [--resume RUN_DIR]
    ltr tune CONFIG [--set ...] [--out DIR]
    ltr importance RUN_DIR|CONFIG [--set ...] [--repeats N] [--strategy S] [--out DIR]
    ltr report RUN_DIR
    ltr validate CONFIG [--set ...] [--print] [--load-data]
    ltr init [--out DIR]
    ltr evaluate --qrels FILE --run FILE [--metrics M ...] [--out FILE]
    ltr score RUN_DIR|MODEL [--data FILE] [--eval-at K ...]
    ltr predict RUN_DIR|MODEL --data FILE [--out FILE] [--trec-run FILE]
    ltr explain RUN_DIR|MODEL --query Q [--data FILE] [--k K] [--plot FILE]
    ltr export RUN_DIR|MODEL --format F --out FILE [--features NAMES] [--adjust-thresholds]
    ltr compare RUN_A RUN_B [--out DIR] [--fail-on-regression]
    ltr monitor LOG (-c CONFIG | --metric M --window W --min X) [--out DIR] [--state FILE]

Each subcommand is one :class:`~ltr.cli._common.Command` (its arguments and a
``run`` function that calls a library function of :mod:`ltr.runs` and prints);
:data:`COMMANDS` is the table the parser and the dispatch are built from.
:func:`main` takes ``argv`` so it runs in-process in tests.

CONFIG is a YAML file, or the bare name of an example shipped with the package
(``ltr train quickstart``); ``ltr init`` copies those examples into a folder.

Rules every command follows: the config is ``CONFIG`` (or ``-c/--config``), a
model is the positional ``RUN_DIR|MODEL``, a folder written is ``--out DIR``
(new or empty, otherwise refused before any work), a file written is
``--out FILE`` (format by suffix).

Exit status: 0 success, 1 error (one line on stderr, ``ltr: error: ...``;
``--debug`` shows the traceback instead), 2 command-line usage error,
3 an alert (``ltr monitor``) or a significant regression
(``ltr compare --fail-on-regression``), 130 interrupted (Ctrl-C or SIGTERM;
the message says how to resume).
"""

from __future__ import annotations

import argparse
import os
import sys
import warnings
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import Any

from ltr.cli import _deploy, _evaluate, _inspect, _train, _watch
from ltr.cli._common import (
    EXIT_ALERT,
    EXIT_ERROR,
    EXIT_INTERRUPTED,
    EXIT_OK,
    EXIT_REGRESSION,
    EXIT_USAGE,
    Command,
    Parser,
    UsageError,
    add_debug,
)
from ltr.runs.config import ConfigError, RunError, RunInterrupted

__all__ = [
    "COMMANDS",
    "EXIT_ALERT",
    "EXIT_ERROR",
    "EXIT_INTERRUPTED",
    "EXIT_OK",
    "EXIT_REGRESSION",
    "EXIT_USAGE",
    "build_parser",
    "console_main",
    "main",
]

#: Every subcommand, in the order ``ltr --help`` lists them.
COMMANDS: tuple[Command, ...] = (
    _train.COMMANDS + _evaluate.COMMANDS + _inspect.COMMANDS + _deploy.COMMANDS
    + _watch.COMMANDS
)
_BY_NAME: dict[str, Command] = {c.name: c for c in COMMANDS}


def _version() -> str:
    from ltr import __version__

    return f"ltr {__version__}"


def build_parser() -> argparse.ArgumentParser:
    """Build the ``ltr`` argument parser from :data:`COMMANDS`."""
    parser = Parser(
        prog="ltr",
        description="Config-driven learning-to-rank runs on LightGBM/XGBoost (see docs/cli.md).",
    )
    parser.add_argument("--version", action="version", version=_version())
    add_debug(parser)
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=Parser)
    for command in COMMANDS:
        p = sub.add_parser(command.name, help=command.help, description=command.description)
        command.configure(p)
        add_debug(p)
    return parser


def _dispatch(args: argparse.Namespace) -> int:
    return _BY_NAME[args.command].run(args)


#: Commands whose first run compiles numba kernels (a one-line notice when the cache is cold).
_KERNEL_COMMANDS = ("train", "tune", "importance", "evaluate", "score", "predict", "monitor",
                    "explain")
_compile_noticed = False


@contextmanager
def _phase_notices(command: str) -> Iterator[None]:
    """Show the library's phase notices (ltr.runs.notices) on stderr, and a cold kernel cache."""
    import logging

    from ltr.runs.notices import NOTICE_LOGGER

    global _compile_noticed
    if command in _KERNEL_COMMANDS and not _compile_noticed:
        from ltr.kernels._cache import kernels_cached

        _compile_noticed = True
        if kernels_cached() is False:
            print("ltr: compiling numba kernels on first use (cached afterwards; "
                  "up to a minute)...", file=sys.stderr, flush=True)
    logger = logging.getLogger(NOTICE_LOGGER)
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(logging.Formatter("ltr: %(message)s"))
    old_level = logger.level
    logger.addHandler(handler)
    logger.setLevel(logging.INFO)
    try:
        yield
    finally:
        logger.removeHandler(handler)
        logger.setLevel(old_level)


def _one_line(exc: BaseException) -> str:
    text = str(exc).strip()
    if isinstance(exc, KeyError) and len(exc.args) == 1:
        text = f"missing key {exc.args[0]!r}"
    if not text:
        text = type(exc).__name__
    return " ".join(text.split())


def main(argv: Sequence[str] | None = None) -> int:
    """Run the ``ltr`` command line with *argv* (default ``sys.argv[1:]``); return the exit status.

    Changes no environment variable: in-process callers keep theirs.
    """
    argv = list(sys.argv[1:] if argv is None else argv)
    debug = "--debug" in argv
    parser = build_parser()
    with _sigterm_as_interrupt(), warnings.catch_warnings():
        if not debug:
            warnings.showwarning = _one_line_warning
        return _main(parser, argv, debug)


def _one_line_warning(
    message: Warning | str,
    category: type[Warning],
    filename: str,
    lineno: int,
    file: Any = None,
    line: str | None = None,
) -> None:
    """Show a library warning as one line, ``ltr: warning: ...`` (no source line)."""
    print(f"ltr: warning: {_one_line(Exception(str(message)))}", file=sys.stderr)


def console_main() -> int:
    """Entry point of the ``ltr`` console script and ``python -m ltr``.

    The one place that sets process-wide state: OpenMP threads that spin while
    waiting (the default) slow numba's parallel kernels and LightGBM by 10-100x
    when cores are shared, and passive waiting costs little otherwise.  It only
    takes effect before the first OpenMP runtime starts, which holds for a fresh
    process; an explicit setting wins.
    """
    os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
    return main()


@contextmanager
def _sigterm_as_interrupt() -> Iterator[None]:
    """Treat SIGTERM like Ctrl-C while ``main`` runs, so a stopped run says how to resume."""
    import signal
    import threading

    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def handler(signum: int, frame: Any) -> None:
        raise KeyboardInterrupt

    previous = signal.signal(signal.SIGTERM, handler)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)


def _main(parser: argparse.ArgumentParser, argv: list[str], debug: bool) -> int:
    try:
        args = parser.parse_args(argv)
        if args.command is None:
            parser.print_help()
            return EXIT_USAGE
        with _phase_notices(args.command):
            return _dispatch(args)
    except SystemExit as exc:  # --help / --version from argparse
        return int(exc.code) if isinstance(exc.code, int) else 0
    except UsageError as exc:
        if debug:
            raise
        print(f"ltr: error: {_one_line(exc)}", file=sys.stderr)
        return EXIT_USAGE
    except RunInterrupted as exc:
        if debug:
            raise
        print(f"ltr: {_one_line(exc)}", file=sys.stderr)
        return EXIT_INTERRUPTED
    except KeyboardInterrupt:
        if debug:
            raise
        print("ltr: interrupted", file=sys.stderr)
        return EXIT_INTERRUPTED
    except (ConfigError, RunError, ValueError, TypeError, OSError, ImportError, KeyError) as exc:
        if debug:
            raise
        print(f"ltr: error: {_one_line(exc)}", file=sys.stderr)
        return 1
    except Exception as exc:
        if debug:
            raise
        print(
            f"ltr: error: {type(exc).__name__}: {_one_line(exc)} "
            "(rerun with --debug for the traceback)",
            file=sys.stderr,
        )
        return 1


if __name__ == "__main__":
    raise SystemExit(console_main())

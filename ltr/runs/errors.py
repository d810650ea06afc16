"""Errors of the runs layer: each message names the config key, option or file and the fix."""

from __future__ import annotations

__all__ = ["ConfigError", "RunError", "RunInterrupted"]


class ConfigError(ValueError):
    """A configuration problem: the message names the file, field path and value."""


class RunError(ValueError):
    """A run cannot go on: bad data for the config, a folder in the way, a damaged run.

    The message names the config key, CLI option or file and says how to fix it.
    """


class RunInterrupted(RunError):
    """A run stopped by Ctrl-C or SIGTERM; the message says how to resume."""

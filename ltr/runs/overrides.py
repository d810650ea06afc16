"""``--set key.path=value`` overrides on a raw config mapping, and field paths in messages."""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Sequence
from typing import Any

from ltr._compat import import_yaml
from ltr.runs.errors import ConfigError

__all__ = ["apply_overrides", "fmt_loc", "got", "parse_override", "yaml_reason"]


def fmt_loc(loc: Sequence[Any]) -> str:
    """Format a field location (pydantic's ``loc``) as a dotted path: ``a.b[0].c``."""
    out = ""
    for part in loc:
        if isinstance(part, int):
            out += f"[{part}]"
        else:
            out += ("." if out else "") + str(part)
    return out or "<top level>"


_SEGMENT = re.compile(r"([A-Za-z_][A-Za-z0-9_\-]*)((?:\[\d+\])*)$")


def _parse_key(key: str) -> list[str | int]:
    parts: list[str | int] = []
    if not key:
        raise ConfigError("--set: empty key")
    for piece in key.split("."):
        m = _SEGMENT.match(piece)
        if m is None:
            raise ConfigError(
                f"--set: invalid key {key!r} (expected e.g. model.n_estimators or steps[1].k)"
            )
        parts.append(m.group(1))
        parts.extend(int(i) for i in re.findall(r"\[(\d+)\]", m.group(2)))
    return parts


def parse_override(text: str) -> tuple[list[str | int], Any]:
    """Split ``key.path=value`` into the key path and the YAML-parsed value."""
    yaml = import_yaml()
    if "=" not in text:
        raise ConfigError(f"--set expects KEY=VALUE (e.g. model.n_estimators=20), got {text!r}")
    key, raw = text.split("=", 1)
    try:
        value = yaml.safe_load(raw) if raw.strip() else None
    except yaml.YAMLError as exc:
        raise ConfigError(
            f"--set {key.strip()}: value {raw!r} is not valid YAML ({yaml_reason(exc)})"
        ) from None
    return _parse_key(key.strip()), value


def apply_overrides(data: dict[str, Any], overrides: Iterable[str]) -> dict[str, Any]:
    """Return a copy of the raw mapping *data* with ``key.path=value`` overrides applied.

    Missing intermediate mappings are created; list items are addressed as
    ``steps[1]``.  Values are parsed as YAML (``3`` -> int, ``[1, 2]`` -> list,
    ``null`` -> None).  The result still has to pass validation.
    """
    out = json.loads(json.dumps(data, default=str))  # deep copy of plain data
    for text in overrides:
        path, value = parse_override(text)
        node: Any = out
        for i, part in enumerate(path[:-1]):
            nxt = path[i + 1]
            where = fmt_loc(path[: i + 1])
            if isinstance(part, int):
                if not isinstance(node, list) or part >= len(node):
                    raise ConfigError(
                        f"--set {fmt_loc(path)}: {fmt_loc(path[:i])} has no item {part}"
                    )
                if node[part] is None:
                    node[part] = [] if isinstance(nxt, int) else {}
                node = node[part]
            else:
                if not isinstance(node, dict):
                    raise ConfigError(
                        f"--set {fmt_loc(path)}: {fmt_loc(path[:i]) or 'config'} is not a mapping"
                    )
                if node.get(part) is None:
                    if isinstance(nxt, int):
                        raise ConfigError(f"--set {fmt_loc(path)}: {where} is not a list")
                    node[part] = {}
                node = node[part]
        last = path[-1]
        if isinstance(last, int):
            if not isinstance(node, list) or last >= len(node):
                raise ConfigError(
                    f"--set {fmt_loc(path)}: {fmt_loc(path[:-1])} has no item {last}"
                )
        elif not isinstance(node, dict):
            raise ConfigError(f"--set {fmt_loc(path)}: {fmt_loc(path[:-1])} is not a mapping")
        node[last] = value
    return out




def yaml_reason(exc: Exception) -> str:
    """Return a YAML error's problem, with line and column when the error has them."""
    mark = getattr(exc, "problem_mark", None)
    problem = getattr(exc, "problem", None) or str(exc).splitlines()[0]
    if mark is not None:
        return f"line {mark.line + 1}, column {mark.column + 1}: {problem}"
    return str(problem)




def got(value: Any) -> str:
    """Return a short ``repr`` of *value* for an error message."""
    text = repr(value)
    if len(text) > 60:
        text = text[:57] + "..."
    return text

"""Pydantic validation errors of a config schema as one line per problem.

Each line names the dotted config key and says what is wrong with the value
(and, for an unknown key, which keys the section allows).
"""

from __future__ import annotations

import types
from collections.abc import Mapping, Sequence
from typing import Any, Union, get_args, get_origin

from pydantic import BaseModel, ValidationError

from ltr.runs.overrides import fmt_loc, got

__all__ = ["format_validation_error"]




def _unwrap(ann: Any) -> Any:
    origin = get_origin(ann)
    if origin is Union or origin is types.UnionType:
        args = [a for a in get_args(ann) if a is not type(None)]
        return _unwrap(args[0]) if len(args) == 1 else ann
    if origin in (list, tuple) and get_args(ann):
        return ("container", _unwrap(get_args(ann)[0]))
    if origin is dict and get_args(ann):
        return ("container", _unwrap(get_args(ann)[1]))
    return ann


def _parent_model(loc: Sequence[Any], root: type[BaseModel]) -> type[BaseModel] | None:
    model: Any = root
    for part in loc:
        if isinstance(model, tuple):  # inside list/dict: skip the index/key
            model = model[1]
            continue
        if not (isinstance(model, type) and issubclass(model, BaseModel)):
            return None
        if not isinstance(part, str) or part not in model.model_fields:
            return None
        model = _unwrap(model.model_fields[part].annotation)
    if isinstance(model, tuple):
        return None
    return model if isinstance(model, type) and issubclass(model, BaseModel) else None


def _describe(error: Mapping[str, Any], root: type[BaseModel]) -> str:
    kind = error.get("type", "")
    ctx = error.get("ctx") or {}
    value = error.get("input")
    loc = tuple(error.get("loc", ()))
    if kind == "extra_forbidden":
        parent = _parent_model(loc[:-1], root)
        allowed = f" (allowed: {', '.join(parent.model_fields)})" if parent is not None else ""
        hint = ""
        if loc and str(loc[-1]).lower() in ("true", "false"):
            hint = " (YAML reads bare on/off/yes/no as booleans: quote the key or rename it)"
        return f"unknown key{allowed}{hint}"
    if kind == "missing":
        return "required field is missing"
    bounds = {
        "greater_than_equal": ">=",
        "greater_than": ">",
        "less_than_equal": "<=",
        "less_than": "<",
    }
    if kind in bounds:
        limit = next(iter(ctx.values()), "?")
        return f"must be {bounds[kind]} {limit}, got {got(value)}"
    if kind == "literal_error":
        return f"must be one of {ctx.get('expected', '?')}, got {got(value)}"
    if kind in ("int_type", "int_parsing", "int_from_float"):
        return f"must be an integer, got {got(value)}"
    if kind == "finite_number":
        return f"must be a finite number, got {got(value)}"
    if kind in ("float_type", "float_parsing"):
        return f"must be a number, got {got(value)}"
    if kind in ("bool_type", "bool_parsing"):
        return f"must be true or false, got {got(value)}"
    if kind in ("string_type",):
        return f"must be a string, got {got(value)}"
    if kind in ("list_type", "tuple_type"):
        return f"must be a list, got {got(value)}"
    if kind in ("dict_type", "model_type", "model_attributes_type"):
        return f"must be a mapping of keys to values, got {got(value)}"
    if kind == "too_short":
        return f"must have at least {ctx.get('min_length', 1)} item(s), got {got(value)}"
    if kind == "too_long":
        return f"must have at most {ctx.get('max_length', '?')} item(s), got {got(value)}"
    if kind == "value_error":
        msg = str(error.get("msg", "")).removeprefix("Value error, ")
        return msg.split(": ", 1)[1] if msg.startswith("@") and ": " in msg else msg
    return f"{error.get('msg', kind)}, got {got(value)}"


def format_validation_error(
    exc: ValidationError, source: str | None, root: type[BaseModel]
) -> str:
    """One line per problem: ``[source: ]dotted.path: reason``, joined with ``'; '``.

    Parameters
    ----------
    exc : pydantic.ValidationError
        The schema's error.
    source : str or None
        What to prefix (the config file).
    root : pydantic model class
        The schema validated (to list the allowed keys of a section).

    Returns
    -------
    str
    """
    lines = []
    seen = set()
    for err in exc.errors():
        loc = list(err.get("loc", ()))
        msg = str(err.get("msg", "")).removeprefix("Value error, ")
        if err.get("type") == "value_error" and msg.startswith("@") and ": " in msg:
            # model-validator messages name their field as "@field: reason"
            loc.append(msg[1:].split(": ", 1)[0])
        line = f"{fmt_loc(loc)}: {_describe(err, root)}"
        if line not in seen:
            seen.add(line)
            lines.append(line)
    prefix = f"{source}: " if source else ""
    return prefix + "; ".join(lines)

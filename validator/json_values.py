"""The JSON value domain: membership, equality and short descriptions for messages.

Arguments reach the validator as Python objects. Only the seven exact types
that a JSON parser produces are JSON values; everything else (tuples, sets,
bytes, NaN, infinities, non-string keys, subclasses) is refused up front so that
no keyword ever sees a value whose JSON meaning is ambiguous.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from typing import Any
from urllib.parse import unquote

# Containers nested deeper than this are refused instead of risking RecursionError
# in the keyword closures or the equality keys below (Python's default limit is 1000 frames).
MAX_DEPTH = 128

_SCALARS = (str, int, bool, type(None))


class NotJson(Exception):
    """A value outside the JSON domain; ``tokens`` locate it, root first."""

    def __init__(self, tokens: list[str | int], reason: str) -> None:
        super().__init__(reason)
        self.tokens = tokens
        self.reason = reason


def _trail(link: tuple | None) -> list[str | int]:
    tokens: list[str | int] = []
    while link is not None:
        link, token = link
        tokens.append(token)
    tokens.reverse()
    return tokens


def check_json(value: Any, max_depth: int = MAX_DEPTH) -> None:
    """Raise NotJson unless ``value`` is a JSON value no deeper than ``max_depth``.

    Iterative on purpose: hostile inputs may nest far beyond the recursion limit.
    Paths are kept as linked pairs so that the happy path allocates almost nothing.
    """
    t = type(value)
    if t is str or t is int or t is bool or value is None:
        return
    if t is float:
        if not math.isfinite(value):
            raise NotJson([], f"{value!r} is not a JSON number (JSON has no NaN or Infinity)")
        return
    stack: list[tuple[Any, tuple | None, int]] = [(value, None, 0)]
    pop, push = stack.pop, stack.append
    while stack:
        item, link, depth = pop()
        t = type(item)
        if t in _SCALARS:
            continue
        if t is float:
            if not math.isfinite(item):
                raise NotJson(_trail(link), f"{item!r} is not a JSON number (JSON has no NaN or Infinity)")
            continue
        if t is dict:
            if depth >= max_depth:
                raise NotJson(_trail(link), f"value nests deeper than {max_depth} levels")
            for key, child in item.items():
                if type(key) is not str:
                    raise NotJson(_trail(link), f"object key {key!r} is not a string")
                ct = type(child)
                if ct is str or ct is int or ct is bool or child is None:
                    continue
                push((child, (link, key), depth + 1))
            continue
        if t is list:
            if depth >= max_depth:
                raise NotJson(_trail(link), f"value nests deeper than {max_depth} levels")
            for index, child in enumerate(item):
                ct = type(child)
                if ct is str or ct is int or ct is bool or child is None:
                    continue
                push((child, (link, index), depth + 1))
            continue
        raise NotJson(_trail(link), f"a Python {t.__name__} is not a JSON value")


def equality_key(value: Any) -> Any:
    """A hashable key with JSON equality: 1 == 1.0, True != 1, containers by content.

    Python compares int and float exactly (2**53 + 1 != 2.0**53), and its hashes
    agree with that equality, so numbers are their own key. Booleans are wrapped
    because Python would otherwise equate True with 1. Only call this on values
    that passed check_json (bounded depth).
    """
    t = type(value)
    if t is str or t is int or t is float or value is None:
        return value
    if t is bool:
        return (bool, value)
    if t is list:
        return (list, tuple(equality_key(v) for v in value))
    return (dict, frozenset((k, equality_key(v)) for k, v in value.items()))


def resolve_pointer(document: Any, reference: str) -> tuple[Any, tuple[str, ...]] | None:
    """A local reference ("#" or "#" + a percent-encoded JSON Pointer) in `document`: (target, tokens), or None."""
    if not reference.startswith("#"):
        return None
    fragment = unquote(reference[1:])
    target: Any = document
    tokens: list[str] = []
    for raw in fragment.split("/")[1:] if fragment else ():
        token = raw.replace("~1", "/").replace("~0", "~")
        if isinstance(target, Mapping) and token in target:
            target = target[token]
        elif type(target) is list and token.isdigit() and int(token) < len(target):
            target = target[int(token)]
        else:
            return None
        tokens.append(token)
    return target, tuple(tokens)


def json_equal(a: Any, b: Any) -> bool:
    return equality_key(a) == equality_key(b)


def type_name(value: Any) -> str:
    """The JSON type of a JSON value, as JSON Schema names it."""
    t = type(value)
    if t is str:
        return "string"
    if t is bool:
        return "boolean"
    if t is int:
        return "integer"
    if t is float:
        return "integer" if value.is_integer() else "number"
    if value is None:
        return "null"
    if t is list:
        return "array"
    return "object"


_quote = json.JSONEncoder(ensure_ascii=False).encode  # one encoder: json.dumps(…, ensure_ascii=False) builds a new one per call


def describe(value: Any, limit: int = 60) -> str:
    """A short, safe rendering of a value for an error message (never huge, never raises)."""
    t = type(value)
    if t is str:
        if len(value) > limit:
            return _quote(value[:limit]) + f"… ({len(value)} characters)"
        return _quote(value)
    if t is bool:
        return "true" if value else "false"
    if value is None:
        return "null"
    if t is int:
        if value.bit_length() > 200:
            return f"an integer of about {int(value.bit_length() * 0.30103)} digits"
        return str(value)
    if t is float:
        return repr(value)
    if t is list:
        return f"an array of {len(value)} item{'s' if len(value) != 1 else ''}"
    if t is dict:
        return "an object"
    return f"a Python {t.__name__}"

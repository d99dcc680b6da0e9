"""Argument members that a lenient server would read as a declared property the validator never checked.

A Go server decoding arguments into a struct (mark3labs/mcp-go, go-sdk
before its strict parser) matches member names ignoring case, with Unicode
folding, and one of its parsers also ignored NUL characters. Under an open
schema (no `additionalProperties: false`) the arguments
`{"Path": "/etc/passwd"}` are valid for the validator — `path` is simply
absent, `Path` is some other member — while such a server runs with
`path = "/etc/passwd"`. The wire rule already refuses two members that fold
alike in one object; this refuses a lone member that folds like a declared
property without being it.

Compiled once per schema into a small tree of the declared names at each
place; a call walks only the objects whose schema declares properties.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from validator import InputSchemaError
from validator.errors import pointer
from validator.json_values import resolve_pointer

from proxy.core.jsonrpc import fold

MAX_DEPTH = 32  # deeper (or recursive) schemas are checked down to here
Check = Callable[[Any], InputSchemaError | None]


@dataclass
class _Node:
    declared: dict[str, str] = field(default_factory=dict)  # folded name -> declared name
    children: dict[str, list[_Node]] = field(default_factory=dict)  # declared name -> nodes for its value
    items: list[_Node] = field(default_factory=list)  # nodes for array elements
    # The declared names themselves: such a member is its own property (declared[fold(name)] is name),
    # which spares the usual member its fold().
    exact: frozenset[str] = frozenset()


def compile_shadow_check(schema: Any) -> Check | None:
    """A check for `schema`'s arguments, or None when the schema declares no property names anywhere."""
    if not isinstance(schema, dict):
        return None
    root = _build([schema], schema, 0)
    if root is None:
        return None

    def check(arguments: Any) -> InputSchemaError | None:
        return _walk(root, arguments, [])

    return check


def _resolve(ref: Any, root: dict[str, Any]) -> Any:
    found = resolve_pointer(root, ref) if isinstance(ref, str) else None
    return found[0] if found is not None else None


def _expand(schemas: list[Any], root: dict[str, Any], depth: int) -> list[dict[str, Any]]:
    """The schema objects that apply together at one place: each one, its composition branches and $refs."""
    out: list[dict[str, Any]] = []
    pending = list(schemas)
    while pending and len(out) < 256:
        schema = pending.pop()
        if not isinstance(schema, dict) or any(schema is seen for seen in out):
            continue
        out.append(schema)
        for keyword in ("allOf", "anyOf", "oneOf"):
            branches = schema.get(keyword)
            if isinstance(branches, list):
                pending.extend(branches)
        for keyword in ("then", "else"):
            pending.append(schema.get(keyword))
        if "$ref" in schema and depth < MAX_DEPTH:
            pending.append(_resolve(schema["$ref"], root))
    return out


def _build(schemas: list[Any], root: dict[str, Any], depth: int) -> _Node | None:
    if depth > MAX_DEPTH:
        return None
    node = _Node()
    children: dict[str, list[Any]] = {}
    items: list[Any] = []
    for schema in _expand(schemas, root, depth):
        properties = schema.get("properties")
        if isinstance(properties, dict):
            for name, sub in properties.items():
                if isinstance(name, str):
                    node.declared.setdefault(fold(name), name)
                    children.setdefault(name, []).append(sub)
        for keyword in ("items", "additionalProperties", "additional_properties"):
            sub = schema.get(keyword)
            if isinstance(sub, dict):
                (items if keyword == "items" else children.setdefault("", [])).append(sub)
        prefix = schema.get("prefixItems")
        if isinstance(prefix, list):
            items.extend(prefix)
    for name, subs in children.items():
        child = _build(subs, root, depth + 1)
        if child is not None:
            node.children[name] = [child]
    if items:
        child = _build(items, root, depth + 1)
        if child is not None:
            node.items = [child]
    if not node.declared and not node.children and not node.items:
        return None
    node.exact = frozenset(node.declared.values())
    return node


def _walk(node: _Node, value: Any, path: list[str | int]) -> InputSchemaError | None:
    if isinstance(value, dict):
        declared, exact = node.declared, node.exact
        for key, member in value.items():
            if not isinstance(key, str):
                continue
            subs = node.children.get(key)
            if subs is None:
                name = declared.get(fold(key)) if declared and key not in exact else None
                if name is not None and name != key:
                    where = pointer([*path, key])
                    return InputSchemaError(
                        "validation",
                        f"{where or 'arguments'}: the member {key!r} differs from the declared property {name!r} only "
                        f"in letter case or NUL characters; some servers would read it as {name!r}, which was not "
                        f"checked, so the call is refused; send it as {name!r}",
                        instance_path=where, keyword="properties")
                subs = node.children.get("")  # additionalProperties with a schema
            for sub in subs or ():
                problem = _walk(sub, member, [*path, key])
                if problem is not None:
                    return problem
    elif isinstance(value, list) and node.items:
        for index, element in enumerate(value):
            for sub in node.items:
                problem = _walk(sub, element, [*path, index])
                if problem is not None:
                    return problem
    return None

"""validator.containment.compare: hand cases, then a soundness property checked with the validator itself."""

from __future__ import annotations

import copy
import json
import os
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import validator
from validator.containment import compare

ROOT = Path(__file__).resolve().parents[2]


def obj(props=None, **kw):
    schema = {"type": "object", "properties": props or {}}
    schema.update(kw)
    return schema


CASES = [
    # (name, old, new, expected kind, dialect)
    ("identical", obj({"a": {"type": "string"}}), obj({"a": {"type": "string"}}), "unchanged", "contract"),
    ("equal as JSON numbers", obj({"n": {"type": "number", "maximum": 1}}), obj({"n": {"type": "number", "maximum": 1.0}}),
     "unchanged", "contract"),
    ("description only", obj({"a": {"type": "string", "description": "x"}}), obj({"a": {"type": "string", "description": "y"}}),
     "narrowed", "contract"),
    ("added optional property under additionalProperties false",
     obj({"a": {"type": "string"}}, additionalProperties=False),
     obj({"a": {"type": "string"}, "b": {"type": "string"}}, additionalProperties=False), "widened", "contract"),
    ("added property to an open object", obj({"a": {"type": "string"}}),
     obj({"a": {"type": "string"}, "b": {"type": "string"}}), "narrowed", "contract"),
    ("removed enum choice", obj({"m": {"enum": ["r", "w"]}}), obj({"m": {"enum": ["r"]}}), "narrowed", "contract"),
    ("added enum choice", obj({"m": {"enum": ["r"]}}), obj({"m": {"enum": ["r", "w"]}}), "widened", "contract"),
    ("enum 1 == 1.0", obj({"m": {"enum": [1]}}), obj({"m": {"enum": [1.0]}}), "unchanged", "contract"),
    ("enum true != 1", obj({"m": {"enum": [1]}}), obj({"m": {"enum": [True]}}), "widened", "contract"),
    ("enum removed", obj({"m": {"enum": ["r"]}}), obj({"m": {}}), "widened", "contract"),
    ("lowered maximum", obj({"n": {"type": "integer", "maximum": 10}}), obj({"n": {"type": "integer", "maximum": 5}}),
     "narrowed", "contract"),
    ("raised maximum", obj({"n": {"type": "integer", "maximum": 10}}), obj({"n": {"type": "integer", "maximum": 11}}),
     "widened", "contract"),
    ("removed minimum", obj({"n": {"type": "integer", "minimum": 1}}), obj({"n": {"type": "integer"}}), "widened", "contract"),
    ("minimum becomes exclusive", obj({"n": {"type": "number", "minimum": 1}}), obj({"n": {"type": "number", "exclusiveMinimum": 1}}),
     "narrowed", "extended"),
    ("exclusive becomes inclusive", obj({"n": {"type": "number", "exclusiveMinimum": 1}}), obj({"n": {"type": "number", "minimum": 1}}),
     "widened", "extended"),
    ("removed required", obj({"a": {"type": "string"}}, required=["a"]), obj({"a": {"type": "string"}}), "widened", "contract"),
    ("added required", obj({"a": {"type": "string"}}), obj({"a": {"type": "string"}}, required=["a"]), "narrowed", "contract"),
    ("pattern identical", obj({"p": {"type": "string", "pattern": "^/safe"}}),
     obj({"p": {"type": "string", "pattern": "^/safe", "description": "d"}}), "narrowed", "contract"),
    ("pattern changed", obj({"p": {"type": "string", "pattern": "^/safe"}}), obj({"p": {"type": "string", "pattern": "^/"}}),
     "widened", "contract"),
    ("pattern changed even if narrower", obj({"p": {"type": "string", "pattern": "^/"}}),
     obj({"p": {"type": "string", "pattern": "^/safe"}}), "widened", "contract"),
    ("pattern added", obj({"p": {"type": "string"}}), obj({"p": {"type": "string", "pattern": "^/safe"}}), "narrowed", "contract"),
    ("pattern removed", obj({"p": {"type": "string", "pattern": "^/safe"}}), obj({"p": {"type": "string"}}), "widened", "contract"),
    ("type list shrink", obj({"v": {"type": ["string", "null"]}}), obj({"v": {"type": "string"}}), "narrowed", "contract"),
    ("type list grow", obj({"v": {"type": "string"}}), obj({"v": {"type": ["string", "null"]}}), "widened", "contract"),
    ("integer within number", obj({"v": {"type": "number"}}), obj({"v": {"type": "integer"}}), "narrowed", "contract"),
    ("number beyond integer", obj({"v": {"type": "integer"}}), obj({"v": {"type": "number"}}), "widened", "contract"),
    ("additionalProperties true to false", obj({"a": {}}, additionalProperties=True), obj({"a": {}}, additionalProperties=False),
     "narrowed", "contract"),
    ("additionalProperties false to true", obj({"a": {}}, additionalProperties=False), obj({"a": {}}), "widened", "contract"),
    ("additionalProperties schema narrowed", obj({}, additionalProperties={"type": ["string", "integer"]}),
     obj({}, additionalProperties={"type": "string"}), "narrowed", "contract"),
    ("property removed from a closed object", obj({"a": {}, "b": {"type": "string"}}, additionalProperties=False),
     obj({"a": {}}, additionalProperties=False), "narrowed", "contract"),
    ("property removed from an open object", obj({"a": {}, "b": {"type": "string"}}), obj({"a": {}}), "widened", "contract"),
    ("minLength raised", obj({"s": {"type": "string", "minLength": 1}}), obj({"s": {"type": "string", "minLength": 2}}),
     "narrowed", "contract"),
    ("minLength lowered", obj({"s": {"type": "string", "minLength": 2}}), obj({"s": {"type": "string", "minLength": 1}}),
     "widened", "contract"),
    ("maxLength added", obj({"s": {"type": "string"}}), obj({"s": {"type": "string", "maxLength": 5}}), "narrowed", "extended"),
    ("maxLength raised", obj({"s": {"type": "string", "maxLength": 5}}), obj({"s": {"type": "string", "maxLength": 6}}),
     "widened", "extended"),
    ("minItems raised", obj({"l": {"type": "array", "minItems": 1}}), obj({"l": {"type": "array", "minItems": 2}}),
     "narrowed", "contract"),
    ("maxItems raised", obj({"l": {"type": "array", "maxItems": 1}}), obj({"l": {"type": "array", "maxItems": 2}}),
     "widened", "contract"),
    ("items narrowed", obj({"l": {"type": "array", "items": {"type": ["string", "null"]}}}),
     obj({"l": {"type": "array", "items": {"type": "string"}}}), "narrowed", "contract"),
    ("items widened", obj({"l": {"type": "array", "items": {"type": "string"}}}),
     obj({"l": {"type": "array", "items": {"type": ["string", "null"]}}}), "widened", "contract"),
    ("items removed", obj({"l": {"type": "array", "items": {"type": "string"}}}), obj({"l": {"type": "array"}}),
     "widened", "contract"),
    ("const kept", obj({"k": {"const": "a"}}), obj({"k": {"const": "a", "title": "t"}}), "narrowed", "extended"),
    ("const changed", obj({"k": {"const": "a"}}), obj({"k": {"const": "b"}}), "widened", "extended"),
    ("enum to const inside", obj({"k": {"enum": ["a", "b"]}}), obj({"k": {"const": "b"}}), "narrowed", "extended"),
    ("multipleOf of the old", obj({"n": {"type": "number", "multipleOf": 0.5}}), obj({"n": {"type": "number", "multipleOf": 1.5}}),
     "narrowed", "extended"),
    ("multipleOf not of the old", obj({"n": {"type": "number", "multipleOf": 2}}), obj({"n": {"type": "number", "multipleOf": 3}}),
     "widened", "extended"),
    ("integer is a multiple of 0.5", obj({"n": {"type": "number", "multipleOf": 0.5}}), obj({"n": {"type": "integer"}}),
     "narrowed", "extended"),
    ("anyOf branch removed", obj({"v": {"anyOf": [{"type": "string"}, {"type": "integer"}]}}),
     obj({"v": {"anyOf": [{"type": "string"}]}}), "narrowed", "contract"),
    ("anyOf branch added", obj({"v": {"anyOf": [{"type": "string"}]}}),
     obj({"v": {"anyOf": [{"type": "string"}, {"type": "integer"}]}}), "widened", "contract"),
    ("anyOf replaced by one branch", obj({"v": {"anyOf": [{"type": "string"}, {"type": "integer"}]}}),
     obj({"v": {"type": "string"}}), "narrowed", "contract"),
    ("oneOf identical with a description", obj({"v": {"oneOf": [{"type": "string"}, {"type": "integer"}]}}),
     obj({"v": {"oneOf": [{"type": "string"}, {"type": "integer"}], "description": "d"}}), "narrowed", "contract"),
    ("oneOf to a disjoint branch", obj({"v": {"oneOf": [{"type": "string"}, {"type": "integer"}]}}),
     obj({"v": {"type": "string"}}), "narrowed", "contract"),
    ("oneOf to an overlapping branch", obj({"v": {"oneOf": [{"type": "number"}, {"type": "integer"}]}}),
     obj({"v": {"type": "integer"}}), "widened", "contract"),
    ("oneOf branch removed", obj({"v": {"oneOf": [{"type": "string", "minLength": 1}, {"type": "string", "maxLength": 3}]}}),
     obj({"v": {"oneOf": [{"type": "string", "minLength": 1}]}}), "widened", "extended"),
    ("not kept", obj({"v": {"not": {"type": "null"}}}), obj({"v": {"not": {"type": "null"}, "type": "string"}}), "narrowed", "contract"),
    ("not removed", obj({"v": {"not": {"type": "null"}}}), obj({"v": {}}), "widened", "contract"),
    ("not replaced by a disjoint type", obj({"v": {"not": {"type": "null"}}}), obj({"v": {"type": "string"}}), "narrowed", "contract"),
    ("ref identical", {"type": "object", "properties": {"a": {"$ref": "#/$defs/s"}}, "$defs": {"s": {"type": "string"}}},
     {"type": "object", "properties": {"a": {"$ref": "#/$defs/s"}}, "$defs": {"s": {"type": "string"}}, "title": "t"},
     "narrowed", "extended"),
    ("ref target widened", {"type": "object", "properties": {"a": {"$ref": "#/$defs/s"}}, "$defs": {"s": {"type": "string"}}},
     {"type": "object", "properties": {"a": {"$ref": "#/$defs/s"}}, "$defs": {"s": {"type": ["string", "null"]}}},
     "widened", "extended"),
    ("ref target narrowed", {"type": "object", "properties": {"a": {"$ref": "#/$defs/s"}}, "$defs": {"s": {"type": ["string", "null"]}}},
     {"type": "object", "properties": {"a": {"$ref": "#/$defs/s"}}, "$defs": {"s": {"type": "string"}}},
     "narrowed", "extended"),
    ("recursive schema unchanged but annotated",
     {"type": "object", "properties": {"kids": {"type": "array", "items": {"$ref": "#"}}}, "additionalProperties": False},
     {"type": "object", "properties": {"kids": {"type": "array", "items": {"$ref": "#"}}}, "additionalProperties": False,
      "description": "a tree"}, "narrowed", "extended"),
    ("allOf added", obj({"a": {"type": "string"}}), {**obj({"a": {"type": "string"}}), "allOf": [{"required": ["a"]}]},
     "narrowed", "extended"),
    ("allOf removed", {**obj({"a": {"type": "string"}}), "allOf": [{"required": ["a"]}]}, obj({"a": {"type": "string"}}),
     "widened", "extended"),
    ("new schema unsupported", obj({"a": {"type": "string"}}), obj({"a": {"const": "x"}}), "unsupported", "contract"),
    ("format, default, examples, x-mcp-header are annotations",
     obj({"a": {"type": "string"}}), obj({"a": {"type": "string", "format": "uri", "default": "x", "x-mcp-header": "h"}}),
     "narrowed", "contract"),
    ("boolean to const", obj({"b": {"type": "boolean"}}), obj({"b": {"const": True}}), "narrowed", "extended"),
    ("const to boolean", obj({"b": {"const": True}}), obj({"b": {"type": "boolean"}}), "widened", "extended"),
    ("discriminated oneOf narrowed",
     obj({"x": {"oneOf": [obj({"kind": {"const": "a"}, "a": {"type": "string"}}, required=["kind"]),
                          obj({"kind": {"const": "b"}}, required=["kind"])]}}),
     obj({"x": obj({"kind": {"const": "a"}, "a": {"type": "string", "minLength": 1}}, required=["kind"])}),
     "narrowed", "extended"),
    # NEW's members, elements or property names may be declared by more than one of its conjuncts (the schema,
    # its allOf branches, its $ref target); any one that implies OLD's proves it.
    ("members proven by an allOf branch, not the first declaration", obj({"a": {"type": "string"}}),
     {**obj({"b": {}}), "allOf": [obj({"a": {"type": "string"}})]}, "narrowed", "extended"),
    ("members implied by no declaration", obj({"a": {"type": "string"}}),
     {**obj({"b": {}}), "allOf": [obj({"a": {"type": "number"}})]}, "widened", "extended"),
    ("elements proven by an allOf branch, not the first declaration",
     obj({"l": {"type": "array", "items": {"type": "string", "maxLength": 3}}}),
     obj({"l": {"type": "array", "items": {"type": "string"}, "allOf": [{"items": {"type": "string", "maxLength": 3}}]}}),
     "narrowed", "extended"),
    ("elements implied by no declaration",
     obj({"l": {"type": "array", "items": {"type": "string", "maxLength": 3}}}),
     obj({"l": {"type": "array", "items": {"type": "string"}, "allOf": [{"items": {"maxLength": 4}}]}}),
     "widened", "extended"),
    ("patternProperties schema narrowed", obj(patternProperties={"^a": {"type": ["string", "null"]}}),
     obj(patternProperties={"^a": {"type": "string"}}), "narrowed", "extended"),
    ("patternProperties schema widened", obj(patternProperties={"^a": {"type": "string"}}),
     obj(patternProperties={"^a": {"type": ["string", "null"]}}), "widened", "extended"),
    ("patternProperties pattern changed", obj(patternProperties={"^a": {"type": "string"}}),
     obj(patternProperties={"^ab": {"type": "string"}}), "widened", "extended"),
    ("property names proven by an allOf branch, not the first declaration", obj(propertyNames={"maxLength": 3}),
     obj(propertyNames={"pattern": "^a"}, allOf=[{"propertyNames": {"maxLength": 3}}]), "narrowed", "extended"),
]


@pytest.mark.parametrize("name,old,new,kind,dialect", CASES, ids=[c[0] for c in CASES])
def test_hand_cases(name, old, new, kind, dialect):
    verdict = compare(old, new, dialect)
    assert verdict.kind == kind, verdict


def test_reason_names_the_pattern_change():
    verdict = compare(obj({"path": {"type": "string", "pattern": "^/safe"}}), obj({"path": {"type": "string", "pattern": "^/"}}))
    assert verdict.pointer == "/properties/path/pattern"
    assert verdict.message == ('/properties/path/pattern: the pattern changed ("^/safe" -> "^/"); '
                               "a different pattern cannot be proven narrower")


def test_reason_names_the_added_property():
    verdict = compare(obj({"a": {}}, additionalProperties=False), obj({"a": {}, "b": {}}, additionalProperties=False))
    assert verdict.pointer == "/properties/b" and '"b" was added' in verdict.reason


def test_reason_names_the_removed_required():
    verdict = compare(obj({"a": {}}, required=["a"]), obj({"a": {}}, required=[]))
    assert verdict.pointer == "/required" and '"a" is no longer required' in verdict.reason


def test_unsupported_new_names_where():
    verdict = compare(obj({"a": {}}), obj({"a": {"const": 1}}))
    assert verdict.kind == "unsupported" and verdict.pointer == "/properties/a/const"


def test_old_unenforceable_is_a_widening():
    assert compare(obj({"a": {"const": 1}}), obj({"a": {}})).kind == "widened"


def test_every_captured_tool_is_unchanged_against_itself_and_narrowed_by_a_required_addition():
    for path in sorted((ROOT / "fixtures" / "catalogs").glob("*.json")):
        document = json.loads(path.read_text())
        for tool in document.get("tools", []) if isinstance(document, dict) else []:
            schema = tool.get("inputSchema")
            try:
                validator.compile(schema, "extended")
            except validator.InputSchemaError:
                continue
            assert compare(schema, copy.deepcopy(schema), "extended").kind == "unchanged", (path.name, tool["name"])
            annotated = {**schema, "description": "pinned"}
            assert compare(schema, annotated, "extended").kind == "narrowed", (path.name, tool["name"])


# --- soundness ----------------------------------------------------------------------------------
# Whenever compare says narrowed or unchanged, no value may be accepted by NEW and refused by OLD.
# Derandomized (the same examples every run) unless CONTAINMENT_RANDOM=1; CONTAINMENT_EXAMPLES scales it.

EXAMPLES = int(os.environ.get("CONTAINMENT_EXAMPLES", "200"))
EXPLORE = os.environ.get("CONTAINMENT_RANDOM") == "1"
PROFILE = settings(
    max_examples=EXAMPLES, deadline=None, derandomize=not EXPLORE,
    database=settings.default.database if EXPLORE else None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much, HealthCheck.data_too_large],
)

SCALARS = st.one_of(st.none(), st.booleans(), st.integers(-5, 5), st.sampled_from([0.5, 1.0, 2.5, -1.5]),
                    st.sampled_from(["", "a", "ab", "/safe/x", "/etc", "abc", "A1"]))
JSON = st.recursive(SCALARS, lambda inner: st.one_of(
    st.lists(inner, max_size=3),
    st.dictionaries(st.sampled_from(["a", "b", "c", "kind"]), inner, max_size=3)), max_leaves=6)
TYPES = ["object", "array", "string", "integer", "number", "boolean", "null"]


def schemas(dialect: str, depth: int = 2):
    leaf_keys = {
        "type": st.one_of(st.sampled_from(TYPES), st.lists(st.sampled_from(TYPES), min_size=1, max_size=3, unique=True)),
        "enum": st.lists(SCALARS, max_size=3),
        "minimum": st.integers(-3, 3), "maximum": st.integers(-3, 3),
        "minLength": st.integers(0, 3), "pattern": st.sampled_from(["^/safe", "^/", "a", "b$"]),
        "minItems": st.integers(0, 2), "maxItems": st.integers(0, 3),
        "required": st.lists(st.sampled_from(["a", "b", "c"]), max_size=2, unique=True),
        "additionalProperties": st.booleans(),
        "description": st.just("d"),
    }
    if dialect == "extended":
        leaf_keys.update({
            "const": SCALARS, "maxLength": st.integers(0, 3), "exclusiveMinimum": st.integers(-3, 3),
            "exclusiveMaximum": st.integers(-3, 3), "multipleOf": st.sampled_from([1, 2, 0.5, 3]),
            "uniqueItems": st.booleans(), "minProperties": st.integers(0, 2), "maxProperties": st.integers(0, 2),
        })
    leaf = st.fixed_dictionaries({}, optional=leaf_keys)
    if depth == 0:
        return leaf
    inner = schemas(dialect, depth - 1)
    nested = {
        "properties": st.dictionaries(st.sampled_from(["a", "b", "c", "kind"]), inner, max_size=3),
        "items": inner,
        "anyOf": st.lists(inner, min_size=1, max_size=3),
        "oneOf": st.lists(inner, min_size=1, max_size=3),
        "not": inner,
        "additionalProperties": st.one_of(st.booleans(), inner),
    }
    if dialect == "extended":
        nested.update({
            "allOf": st.lists(inner, min_size=1, max_size=2),
            "prefixItems": st.lists(inner, min_size=1, max_size=2),
            "contains": inner,
            "propertyNames": st.fixed_dictionaries({}, optional={"pattern": st.sampled_from(["^[ab]", "c"]),
                                                                 "maxLength": st.integers(0, 2)}),
            "patternProperties": st.dictionaries(st.sampled_from(["^a", "b", "^kind$"]), inner, max_size=2),
            "dependentRequired": st.dictionaries(st.sampled_from(["a", "b"]), st.lists(st.sampled_from(["b", "c"]), max_size=2),
                                                 max_size=2),
            "if": inner, "then": inner, "else": inner,
            # References into the root's $defs (see pairs) and to the root itself (recursion).
            "$ref": st.sampled_from(["#/$defs/e", "#/$defs/e", "#/$defs/e", "#/$defs/d", "#"]),
        })
    return st.builds(lambda a, b: {**a, **b}, leaf, st.fixed_dictionaries({}, optional=nested))


def _paths(schema, here=()):
    yield here
    if isinstance(schema, dict):
        for key, value in schema.items():
            if isinstance(value, dict):
                yield from _paths(value, here + (key,))
            elif isinstance(value, list) and key in ("anyOf", "oneOf", "allOf"):
                for i, item in enumerate(value):
                    yield from _paths(item, here + (key, i))


def _one_composition(schema):
    """The contract refuses oneOf beside anyOf; keep the pairs mostly inside the dialect."""
    for node in list(_walk(schema)):
        if "anyOf" in node and "oneOf" in node:
            del node["anyOf"]


def _get(schema, path):
    for token in path:
        schema = schema[token]
    return schema


@st.composite
def pairs(draw, dialect):
    body = draw(schemas(dialect))
    # A root that refuses every object (an enum of scalars, a not) would make every pair trivially contained.
    old = {**{k: v for k, v in body.items() if k not in ("enum", "const", "not", "$ref")}, "type": "object"}
    if dialect == "extended":
        old["$defs"] = {"d": draw(schemas(dialect, 1)), "e": {"type": "object", "properties": {"a": {"$ref": "#/$defs/e"}}}}
    new = copy.deepcopy(old)
    for _ in range(draw(st.integers(1, 3))):
        places = [p for p in _paths(new) if isinstance(_get(new, p), dict)]
        place = _get(new, draw(st.sampled_from(places)))
        choice = draw(st.integers(0, 2))
        if choice == 0 and place:
            del place[draw(st.sampled_from(sorted(place, key=str)))]
        else:
            extra = draw(schemas(dialect, 1))
            place.update(extra)
    new["type"] = "object"
    if dialect == "contract":
        _one_composition(old)
        _one_composition(new)
    if draw(st.booleans()):
        old, new = new, old
    return old, new


def _compiled(schema, dialect):
    try:
        return validator.compile(schema, dialect)
    except validator.InputSchemaError:
        return None


STRINGS = ["", "a", "ab", "abc", "b", "xb", "/", "/safe", "/safe/x", "/etc/passwd", "A1", "kind"]


def _sample(draw, schema, depth=0):
    """A value built to look like what ``schema`` accepts (often it does; the near misses matter too)."""
    if not isinstance(schema, dict) or depth > 4:
        return draw(JSON)
    if draw(st.integers(0, 9)) == 0:
        return draw(JSON)
    for key in ("anyOf", "oneOf", "allOf"):
        if isinstance(schema.get(key), list) and schema[key] and draw(st.booleans()):
            branch = draw(st.sampled_from(schema[key]))
            rest = {k: v for k, v in schema.items() if k != key}
            return _sample(draw, {**rest, **branch} if isinstance(branch, dict) else rest, depth + 1)
    if "const" in schema and draw(st.booleans()):
        return schema["const"]
    if isinstance(schema.get("enum"), list) and schema["enum"] and draw(st.booleans()):
        return draw(st.sampled_from(schema["enum"]))
    declared = schema.get("type", TYPES)
    kind = draw(st.sampled_from([declared] if isinstance(declared, str) else list(declared) or TYPES))
    if kind == "object":
        props = schema.get("properties") if isinstance(schema.get("properties"), dict) else {}
        out = {}
        for name in sorted(set(props) | set(schema.get("required") or [])):
            if name in (schema.get("required") or []) or draw(st.booleans()):
                out[name] = _sample(draw, props.get(name, {}), depth + 1)
        if draw(st.integers(0, 3)) == 0:
            extra = schema.get("additionalProperties", {})
            out[draw(st.sampled_from(["z", "a", "b"]))] = _sample(draw, extra if isinstance(extra, dict) else {}, depth + 1)
        return out
    if kind == "array":
        return [_sample(draw, schema.get("items", {}), depth + 1) for _ in range(draw(st.integers(0, 3)))]
    if kind == "string":
        return draw(st.sampled_from(STRINGS))
    if kind in ("integer", "number"):
        edges = [schema[k] for k in ("minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum") if k in schema]
        base = draw(st.sampled_from(edges)) if edges and draw(st.booleans()) else draw(st.integers(-4, 4))
        value = base + draw(st.sampled_from([0, 1, -1, 0, 2]))
        if kind == "number" and draw(st.booleans()):
            value = value + 0.5
        if "multipleOf" in schema and draw(st.booleans()):
            value = schema["multipleOf"] * draw(st.integers(-3, 3))
        return value
    if kind == "boolean":
        return draw(st.booleans())
    return None


def _instances(draw, old, new):
    values = [_sample(draw, schema) for schema in (old, new) for _ in range(15)]
    values += draw(st.lists(JSON, min_size=5, max_size=10))
    objects = draw(st.lists(st.dictionaries(st.sampled_from(["a", "b", "c", "kind", "z"]), JSON, max_size=4),
                            min_size=20, max_size=40))
    # Values built from the schemas' own enum/const choices and bounds find the edges.
    literals = []
    for schema in (old, new):
        for node in _walk(schema):
            if isinstance(node.get("enum"), list):
                literals.extend(node["enum"])
            if "const" in node:
                literals.append(node["const"])
            for key in ("minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum"):
                if isinstance(node.get(key), (int, float)):
                    literals.extend([node[key], node[key] + 1, node[key] - 1, node[key] + 0.5])
    for literal in literals[:10]:
        for name in ("a", "b", "kind"):
            objects.append({name: literal})
            objects.append({name: [literal]})
    return values + objects


def _resolves(schema, pointer):
    for token in pointer.split("/")[1:] if pointer else ():
        token = token.replace("~1", "/").replace("~0", "~")
        if isinstance(schema, dict) and token in schema:
            schema = schema[token]
        elif isinstance(schema, list) and token.isdigit() and int(token) < len(schema):
            schema = schema[int(token)]
        else:
            return False
    return True


def _walk(schema):
    if isinstance(schema, dict):
        yield schema
        for value in schema.values():
            if isinstance(value, (dict, list)):
                yield from _walk(value)
    elif isinstance(schema, list):
        for item in schema:
            yield from _walk(item)


def _accepts(compiled, value):
    try:
        return compiled.is_valid(value)
    except validator.InputSchemaError:
        return None


@pytest.mark.parametrize("dialect", ["contract", "extended"])
@PROFILE
@given(data=st.data())
def test_narrowed_never_accepts_what_old_refused(dialect, data, evidence):
    old, new = data.draw(pairs(dialect))
    c_old, c_new = _compiled(old, dialect), _compiled(new, dialect)
    verdict = compare(old, new, dialect)
    evidence.count(f"containment soundness ({dialect})", verdict.kind)
    if c_new is None:
        assert verdict.kind == "unsupported"
        return
    if c_old is None:
        assert verdict.kind == "widened"
        return
    if not verdict.contained:
        assert _resolves(new, verdict.pointer), verdict  # the pointer names a place in the new schema
        return
    for value in _instances(data.draw, old, new):
        accepted = _accepts(c_new, value)
        evidence.count(f"containment soundness ({dialect})", "instances accepted by a contained new schema", int(bool(accepted)))
        if accepted and _accepts(c_old, value) is False:
            raise AssertionError(f"{verdict.kind} but {value!r} is accepted by new and refused by old:\n"
                                 f"old={json.dumps(old)}\nnew={json.dumps(new)}")


@pytest.mark.parametrize("dialect", ["contract", "extended"])
@settings(PROFILE, max_examples=max(50, EXAMPLES // 4))
@given(data=st.data())
def test_a_schema_is_unchanged_against_itself(dialect, data):
    schema = {**data.draw(schemas(dialect)), "type": "object"}
    if _compiled(schema, dialect) is None:
        return
    assert compare(schema, copy.deepcopy(schema), dialect).kind == "unchanged"
    assert compare(schema, {**schema, "description": "x"}, dialect).contained


def test_a_ref_to_the_root_in_a_member_is_contained_after_a_description_change():
    # Found by random runs of the test above. In the first, the member "a" refers to the whole schema and
    # declares (empty) properties of its own, which used to be the only declaration asked about members.
    # The second, under patternProperties, was compared as JSON along with the root it refers to.
    member = {"properties": {}, "$ref": "#"}
    for schema in (obj({"a": member}), obj(patternProperties={"^a": member})):
        assert compare(schema, copy.deepcopy(schema), "extended").kind == "unchanged"
        verdict = compare(schema, {**schema, "description": "x"}, "extended")
        assert verdict.contained, (schema, verdict)


def test_a_huge_case_split_gives_up_as_widened_within_the_step_budget(monkeypatch):
    from validator import containment

    branches = [{"type": "object", "properties": {"k": {"enum": [f"v{i}"]}}, "required": ["k"]} for i in range(40)]
    old = {"type": "object", "properties": {"p": {"anyOf": [{"anyOf": [{"anyOf": branches}] * 5}] * 5}}}
    new = {"type": "object", "properties": {"p": {"anyOf": [{"anyOf": [{"anyOf": branches[:-1]}] * 5}] * 5}}}
    # Counted, not timed: the full case split is 40**3 * 25 proof steps, so a comparison that stops within
    # the budget is what keeps it quick, and a count does not depend on how busy the machine is. Once the
    # budget is spent, callers still unwinding may ask again, but those questions fail before any work.
    calls = 0
    sub = containment._Prover._sub

    def counted(self, *args, **kwargs):
        nonlocal calls
        calls += 1
        return sub(self, *args, **kwargs)

    monkeypatch.setattr(containment._Prover, "_sub", counted)
    verdict = compare(old, new, "extended")
    assert verdict.kind == "widened" and "too large to compare" in verdict.reason
    assert calls <= containment.MAX_STEPS


def test_a_discriminated_union_with_many_branches_is_proven():
    branches = [{"type": "object", "properties": {"k": {"const": f"v{i}"}, "x": {"type": "string", "minLength": i}},
                 "required": ["k"]} for i in range(40)]
    old = {"type": "object", "properties": {"p": {"oneOf": branches}}}
    assert compare(old, {"type": "object", "properties": {"p": {"anyOf": branches[::-1]}}}, "extended").kind == "narrowed"
    assert compare(old, {"type": "object", "properties": {"p": {"anyOf": branches[:-1] + [{"type": "object"}]}}},
                   "extended").kind == "widened"

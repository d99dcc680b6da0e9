"""Differential test: our validator against jsonschema's Draft 2020-12 validator.

Hypothesis generates random schemas inside the contract subset (every keyword
of the contract's table except `pattern`, which jsonschema would match with
Python's `re`; patterns have their own ECMAScript differential) wrapped in an
object root, and random JSON instances — half of them built *from* the schema
so that they are valid or nearly so, the rest arbitrary. Both validators must
agree on every instance, and our preflight must accept every generated schema.

Profile: DIFFERENTIAL_EXAMPLES (default 2,000) examples, each comparing several
instances; derandomized so CI runs are reproducible. Set DIFFERENTIAL_RANDOM=1
to explore with fresh randomness (and the example database) instead.

jsonschema facts this relies on (4.x): bool is not an integer or a number;
1.0 is an integer; enum uses JSON equality (1 == 1.0, True != 1, containers by
content); `format` is an annotation unless a format checker is passed (none is);
unknown keywords such as `x-mcp-header` and the alias `additional_properties`
are ignored — so for the oracle the alias is renamed to `additionalProperties`.
"""

from __future__ import annotations

import copy
import math
import os
from typing import Any

import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

import validator
from validator import InputSchemaError

jsonschema = pytest.importorskip("jsonschema", reason="jsonschema (the test oracle, in the `test` extra) is not installed")

SECTION = "jsonschema differential"
EXAMPLES = int(os.environ.get("DIFFERENTIAL_EXAMPLES", "2000"))
EXPLORE = os.environ.get("DIFFERENTIAL_RANDOM") == "1"
INSTANCES_PER_SCHEMA = 4

settings.register_profile(
    "validator-differential",
    max_examples=EXAMPLES,
    deadline=None,
    derandomize=not EXPLORE,
    database=settings.default.database if EXPLORE else None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large, HealthCheck.filter_too_much],
)
PROFILE = settings.get_profile("validator-differential")

TYPE_NAMES = ["object", "array", "string", "integer", "number", "boolean", "null"]
NAMES = ["a", "b", "c", "x/y", "~t", "é"]
BIG_INTS = [2**53, 2**53 + 1, -(2**53) - 1, 2**64, 10**30, -(2**63)]
SPECIAL_FLOATS = [0.0, -0.0, 0.5, 1.0, -1.0, 1.5, 2.0, 1e308, -1e308, float(2**53), float(2**64), 1e-300]

# --- JSON values ----------------------------------------------------------------------

numbers = st.one_of(
    st.integers(-3, 3),
    st.sampled_from(BIG_INTS),
    st.sampled_from(SPECIAL_FLOATS),
    st.integers(-(10**20), 10**20),
    st.floats(allow_nan=False, allow_infinity=False),
    st.integers(-3, 3).map(float),  # integral floats
)
strings = st.text(alphabet=["a", "b", "1", " ", "é", "😀", "\n", "\u2028"], max_size=5)
scalars = st.one_of(st.none(), st.booleans(), numbers, strings)
json_values = st.recursive(
    scalars,
    lambda inner: st.one_of(
        st.lists(inner, max_size=4),
        st.dictionaries(st.sampled_from(NAMES), inner, max_size=4),
    ),
    max_leaves=12,
)
# Enum choices: mostly the values that JSON equality makes interesting.
TRICKY = [1, 1.0, True, 0, 0.0, -0.0, False, None, "1", "a", "", [1], [1.0], [True], [], {"a": 1},
          {"a": 1.0}, {"a": True}, {}, 2**53 + 1, float(2**53), 2**53, 2**64, float(2**64)]
enum_choices = st.one_of(st.sampled_from(TRICKY), json_values)

counts = st.one_of(st.integers(0, 4), st.integers(0, 4).map(float))  # 2.0 counts like 2
bounds = st.one_of(st.integers(-3, 3), st.sampled_from(BIG_INTS + SPECIAL_FLOATS), numbers)


# --- schemas inside the contract subset ---------------------------------------------------


@st.composite
def subschemas(draw, depth: int) -> dict:
    schema: dict[str, Any] = {}
    if draw(st.booleans()):
        if draw(st.integers(0, 3)) == 0:
            schema["type"] = draw(st.lists(st.sampled_from(TYPE_NAMES), min_size=1, max_size=3, unique=True))
        else:
            schema["type"] = draw(st.sampled_from(TYPE_NAMES))
    keywords = draw(st.lists(st.sampled_from(KEYWORD_NAMES), max_size=4, unique=True))
    for keyword in keywords:
        if depth <= 0 and keyword in RECURSIVE:
            continue
        if keyword == "anyOf" and "oneOf" in schema or keyword == "oneOf" and "anyOf" in schema:
            continue  # oneOf beside anyOf is outside the subset
        if keyword in ALIASED and ALIASED - {keyword} & schema.keys():
            continue  # additionalProperties and its alias together are malformed
        schema[keyword] = draw(KEYWORD_VALUES[keyword](depth - 1))
    return schema


def _properties(depth):
    return st.dictionaries(st.sampled_from(NAMES), subschemas(depth), max_size=3)


def _additional(depth):
    return st.one_of(st.booleans(), subschemas(depth))


def _branches(depth):
    return st.lists(subschemas(depth), min_size=1, max_size=3)


KEYWORD_VALUES = {
    "properties": _properties,
    "required": lambda d: st.lists(st.sampled_from(NAMES), max_size=3),
    "additionalProperties": _additional,
    "additional_properties": _additional,
    "description": lambda d: st.text(max_size=5),
    "default": lambda d: json_values,
    "format": lambda d: st.sampled_from(["uri", "email", "date-time", "ipv4", "regex", "whatever"]),
    "contentEncoding": lambda d: st.sampled_from(["base64", "7bit"]),
    "x-mcp-header": lambda d: st.sampled_from(["X-Trace", ""]),
    "enum": lambda d: st.lists(enum_choices, max_size=5),
    "minimum": lambda d: bounds,
    "maximum": lambda d: bounds,
    "minLength": lambda d: counts,
    "items": subschemas,
    "minItems": lambda d: counts,
    "maxItems": lambda d: counts,
    "oneOf": _branches,
    "anyOf": _branches,
    "not": subschemas,
}
KEYWORD_NAMES = list(KEYWORD_VALUES)
ALIASED = {"additionalProperties", "additional_properties"}
RECURSIVE = {"properties", "additionalProperties", "additional_properties", "items", "oneOf", "anyOf", "not"}
OBJECT_ROOT_KEYWORDS = ["properties", "required", "additionalProperties", "additional_properties", "description",
                        "default", "$schema", "enum", "oneOf", "anyOf", "not"]


@st.composite
def root_schemas(draw) -> dict:
    """An object root: type "object" plus object keywords, compositions, enum, annotations."""
    schema: dict[str, Any] = {"type": draw(st.sampled_from(["object", ["object"]]))}
    schema["properties"] = draw(_properties(2))
    for keyword in draw(st.lists(st.sampled_from(OBJECT_ROOT_KEYWORDS[1:]), max_size=3, unique=True)):
        if keyword == "$schema":
            schema[keyword] = "https://json-schema.org/draft/2020-12/schema"
        elif keyword == "required":
            schema[keyword] = draw(st.lists(st.sampled_from(list(schema["properties"]) or NAMES), max_size=3))
        elif keyword == "anyOf" and "oneOf" in schema or keyword == "oneOf" and "anyOf" in schema:
            continue
        elif keyword in ("additionalProperties", "additional_properties") and (
            "additionalProperties" in schema or "additional_properties" in schema
        ):
            continue  # both at once is malformed
        else:
            schema[keyword] = draw(KEYWORD_VALUES[keyword](1))
    return schema


# --- instances built from a schema (valid or nearly so) ---------------------------------------


def _numbers_near(schema: dict, integral: bool):
    edges = [b for b in (schema.get("minimum"), schema.get("maximum")) if b is not None]
    near = []
    for b in edges:
        if isinstance(b, float) and not b.is_integer():
            near += [b, math.floor(b), math.ceil(b)]
        else:
            b = int(b)
            near += [b - 1, b, b + 1, float(b)] if abs(b) < 2**60 else [b - 1, b, b + 1]
    pool = st.integers(-3, 3) if integral else st.one_of(st.integers(-3, 3), st.floats(-4, 4))
    if near:
        pool = st.one_of(pool, st.sampled_from(near))
    if integral:
        return st.one_of(pool.filter(lambda v: not isinstance(v, float) or v.is_integer()), st.integers(-3, 3).map(float))
    return pool


def _typed(t: str, schema: dict, depth: int):
    if t == "null":
        return st.none()
    if t == "boolean":
        return st.booleans()
    if t == "integer":
        return _numbers_near(schema, integral=True)
    if t == "number":
        return _numbers_near(schema, integral=False)
    if t == "string":
        low = int(schema.get("minLength", 0))
        return st.text(alphabet=["a", "é", "😀", "\n"], min_size=max(0, low - 1), max_size=low + 2)
    if t == "array":
        low, high = int(schema.get("minItems", 0)), schema.get("maxItems")
        high = low + 3 if high is None else int(high) + 1
        items = schema.get("items")
        element = instances_for(items, depth + 1) if isinstance(items, dict) else json_values
        return st.lists(element, min_size=max(0, low - 1), max_size=max(high, max(0, low - 1)))
    # object
    props = schema.get("properties") or {}
    required = [n for n in schema.get("required", []) if isinstance(n, str)]
    extra = schema.get("additionalProperties", schema.get("additional_properties", True))
    fixed = {n: instances_for(props.get(n, {}), depth + 1) for n in required}
    optional = {n: instances_for(s, depth + 1) for n, s in props.items() if n not in fixed}
    base = st.fixed_dictionaries(fixed, optional=optional)
    if extra is False:
        return base
    extra_values = instances_for(extra, depth + 1) if isinstance(extra, dict) else json_values
    return st.tuples(base, st.dictionaries(st.sampled_from(["z", "a"]), extra_values, max_size=2)).map(
        lambda pair: {**pair[1], **pair[0]}
    )


def instances_for(schema: Any, depth: int = 0):
    """Values aimed at ``schema``: from its enum, a composition branch, or its type's constraints."""
    if not isinstance(schema, dict) or depth > 5:
        return json_values
    options = []
    if schema.get("enum"):
        options.append(st.sampled_from(schema["enum"]))
    for keyword in ("oneOf", "anyOf"):
        if schema.get(keyword):
            # Satisfy the siblings' type as well where the branch does not say otherwise.
            siblings = {k: v for k, v in schema.items() if k not in ("oneOf", "anyOf", "not", "enum")}
            options.append(st.sampled_from(schema[keyword]).flatmap(
                lambda branch, s=siblings: instances_for({**s, **branch}, depth + 1)))
    declared = schema.get("type")
    types = [declared] if isinstance(declared, str) else (declared or TYPE_NAMES)
    options.extend(_typed(t, schema, depth) for t in types)
    return st.one_of(options)


# --- the test ------------------------------------------------------------------------------


def _oracle_schema(schema: Any) -> Any:
    """The same schema for jsonschema, with our alias spelled the standard way."""
    if isinstance(schema, dict):
        return {
            ("additionalProperties" if k == "additional_properties" else k): _oracle_schema(v)
            if k not in ("enum", "default") else v
            for k, v in schema.items()
        }
    if isinstance(schema, list):
        return [_oracle_schema(v) for v in schema]
    return schema


def _ours(compiled: validator.CompiledSchema, instance: Any) -> bool:
    try:
        compiled.validate(instance)
    except InputSchemaError as exc:
        assert exc.kind == validator.VALIDATION, f"unexpected {exc!r}"
        return False
    return True


def _agree(schema: dict, dialect: str, oracle_schema: dict, data: st.DataObject, tally: dict) -> None:
    """Compile ``schema`` (it must preflight) and compare verdicts on instances aimed at it."""
    try:
        compiled = validator.compile(schema, dialect=dialect)
    except InputSchemaError as exc:
        raise AssertionError(f"{dialect} preflight rejected a schema inside it {schema!r}: {exc!r}") from None
    oracle = jsonschema.Draft202012Validator(oracle_schema)
    tally["examples"] += 1
    near = instances_for(schema)
    for _ in range(INSTANCES_PER_SCHEMA):
        instance = data.draw(st.one_of(near, near, json_values), label="instance")
        ours, theirs = _ours(compiled, instance), oracle.is_valid(instance)
        tally["instances"] += 1
        tally["valid" if theirs else "invalid"] += 1
        assert ours == theirs, (
            f"disagreement: ours={ours}, jsonschema={theirs}\nschema={schema!r}\ninstance={instance!r}"
        )


# Dialects that must agree with jsonschema on these (contract-subset) schemas; a
# superset dialect has to, so adding one is one entry here.
DIALECTS = (validator.CONTRACT,)


@pytest.mark.parametrize("dialect", DIALECTS)
def test_differential_against_jsonschema(dialect: str, evidence) -> None:
    tally = {"examples": 0, "instances": 0, "valid": 0, "invalid": 0}
    section = f"{SECTION} [{dialect}]"

    @PROFILE
    @given(schema=root_schemas(), data=st.data())
    def compare(schema: dict, data: st.DataObject) -> None:
        _agree(schema, dialect, _oracle_schema(schema), data, tally)

    try:
        compare()
    finally:
        for name, n in tally.items():
            evidence.count(section, name, n)
        evidence.note(section, f"profile: max_examples={EXAMPLES}, derandomize={not EXPLORE}")
    assert tally["examples"] >= EXAMPLES
    # The generator must exercise both answers, or agreement would prove little.
    assert tally["valid"] >= tally["instances"] // 10, tally
    assert tally["invalid"] >= tally["instances"] // 10, tally


# --- arguments outside the JSON domain ------------------------------------------------------


class _Str(str):
    pass


class _Int(int):
    pass


class _Dict(dict):
    pass


# Values that are themselves no JSON value: reported as such (keyword "").
NOT_JSON_ITSELF = [float("nan"), float("inf"), float("-inf"), (1,), (), frozenset({1}), {1, 2}, b"x",
                   bytearray(b"x"), 1j, object(), _Str("x"), _Int(1), _Dict(), range(2)]
# JSON containers holding something that is not: a type mismatch at the container may be reported first.
NOT_JSON_INSIDE = [{1: "a"}, {None: 1}, [float("nan")], {"k": (1,)}, [[b"x"]]]
NOT_JSON = st.sampled_from(NOT_JSON_ITSELF + NOT_JSON_INSIDE)


def _slots(value: Any, path: tuple = ()) -> list[tuple]:
    """Every (container path, key) where a value sits inside ``value``."""
    found = []
    if type(value) is dict:
        for k, v in value.items():
            found.append((path, k))
            found.extend(_slots(v, path + (k,)))
    elif type(value) is list:
        for i, v in enumerate(value):
            found.append((path, i))
            found.extend(_slots(v, path + (i,)))
    return found


@pytest.mark.parametrize("dialect", DIALECTS)
def test_non_json_arguments_are_validation_errors(dialect: str, evidence) -> None:
    """Valid arguments with one value replaced by a non-JSON one: always a `validation` error,
    and with keyword "" when the replacement is itself no JSON value (a tuple, NaN, a str
    subclass …). A JSON container *holding* a non-JSON value may instead first fail its
    slot's type (`{1: "a"}` where null is expected): the validator need not walk a value
    that is already wrong.
    """
    tally = {"examples": 0, "at the root": 0}

    @settings(PROFILE, max_examples=max(200, EXAMPLES // 4))
    @given(schema=root_schemas(), data=st.data())
    def check(schema: dict, data: st.DataObject) -> None:
        compiled = validator.compile(schema, dialect=dialect)
        # A copy: values drawn from the schema's enum are the schema's own objects.
        arguments = copy.deepcopy(data.draw(instances_for(schema), label="arguments"))
        assume(jsonschema.Draft202012Validator(_oracle_schema(schema)).is_valid(arguments))
        bad = data.draw(NOT_JSON, label="bad")
        slots = _slots(arguments)
        if not slots or data.draw(st.integers(0, 9), label="root?") == 0:
            # The whole arguments value: a non-JSON value, or a dict subclass of a JSON object.
            arguments = _Dict(arguments) if type(arguments) is dict and data.draw(st.booleans()) else bad
            tally["at the root"] += 1
        else:
            path, key = data.draw(st.sampled_from(slots), label="slot")
            target = arguments
            for token in path:
                target = target[token]
            target[key] = bad
        tally["examples"] += 1
        try:
            compiled.validate(arguments)
        except InputSchemaError as exc:
            itself = any(bad is b for b in NOT_JSON_ITSELF) or type(arguments) is _Dict
            assert exc.kind == validator.VALIDATION and (exc.keyword == "" or not itself), (
                f"{exc!r}\nschema={schema!r}\narguments={arguments!r}")
            return
        raise AssertionError(f"accepted non-JSON arguments {arguments!r} for schema {schema!r}")

    try:
        check()
    finally:
        for name, n in tally.items():
            evidence.count(f"non-JSON arguments [{dialect}]", name, n)


# --- the extended dialect's own keywords ------------------------------------------------------
# Random schemas that mix the contract's keywords with the extended dialect's
# (const, allOf, maxLength, exclusive bounds, integer multipleOf, uniqueItems,
# property counts, propertyNames, patternProperties, dependentRequired/Schemas,
# prefixItems, contains with bounds, if/then/else, boolean schemas, oneOf beside
# anyOf, local $ref into $defs), compared with jsonschema the same way.
# multipleOf uses integer divisors only: for a float divisor jsonschema divides
# in binary floating point (0.3 is not a multiple of 0.1 there) while the
# extended dialect is exact in decimal by design (tests/validator/test_extended.py).

PATTERN_NAMES = ["^a", "b$", "^x/", "é"]  # same meaning in Python's re and ECMAScript on these names


def _ext_values(depth: int, refs: bool) -> dict:
    def sub():
        return st.deferred(lambda: ext_subschemas(depth, refs))
    return {
        "const": st.one_of(st.sampled_from(TRICKY), json_values),
        "allOf": st.lists(sub(), min_size=1, max_size=2),
        "maxLength": counts,
        "exclusiveMinimum": bounds,
        "exclusiveMaximum": bounds,
        "multipleOf": st.sampled_from([1, 2, 3, 7, 2**53 + 1]),
        "uniqueItems": st.booleans(),
        "minProperties": counts,
        "maxProperties": counts,
        "propertyNames": st.one_of(st.just({"maxLength": 1}), st.just({"enum": ["a", "b"]}), sub()),
        "patternProperties": st.dictionaries(st.sampled_from(PATTERN_NAMES), sub(), max_size=2),
        "dependentRequired": st.dictionaries(st.sampled_from(NAMES), st.lists(st.sampled_from(NAMES), max_size=2), max_size=2),
        "dependentSchemas": st.dictionaries(st.sampled_from(NAMES), sub(), max_size=2),
        "prefixItems": st.lists(sub(), min_size=1, max_size=3),
        "contains": sub(),
        "minContains": counts,
        "maxContains": counts,
        "if": sub(),
        "then": sub(),
        "else": sub(),
        "$ref": st.just("#/$defs/d"),
        "title": st.just("T"),
    }


EXT_NAMES = ["const", "allOf", "maxLength", "exclusiveMinimum", "exclusiveMaximum", "multipleOf", "uniqueItems",
             "minProperties", "maxProperties", "propertyNames", "patternProperties", "dependentRequired",
             "dependentSchemas", "prefixItems", "contains", "minContains", "maxContains", "if", "then", "else",
             "$ref", "title"]
EXT_RECURSIVE = {"allOf", "propertyNames", "patternProperties", "dependentSchemas", "prefixItems", "contains",
                 "if", "then", "else"}


@st.composite
def ext_subschemas(draw, depth: int, refs: bool = True) -> Any:
    if draw(st.integers(0, 9)) == 0:
        return draw(st.booleans())  # boolean schemas anywhere
    schema: dict[str, Any] = draw(subschemas(min(depth, 1))) if draw(st.booleans()) else {}
    schema.pop("additional_properties", None)  # the alias is ours alone; keep the oracle's view identical
    values = _ext_values(depth - 1, refs)
    for keyword in draw(st.lists(st.sampled_from(EXT_NAMES), max_size=3, unique=True)):
        if depth <= 0 and keyword in EXT_RECURSIVE or keyword == "$ref" and not refs:
            continue
        schema[keyword] = draw(values[keyword])
    return schema


@st.composite
def ext_root_schemas(draw) -> dict:
    schema = draw(ext_subschemas(2))
    schema = schema if isinstance(schema, dict) else {}
    schema["type"] = "object"
    schema["$defs"] = {"d": draw(ext_subschemas(1, refs=False))}  # so no $ref cycle (those are refused)
    return schema


def test_extended_differential_against_jsonschema(evidence) -> None:
    tally = {"examples": 0, "instances": 0, "valid": 0, "invalid": 0}
    section = f"{SECTION} [extended keywords]"

    @settings(PROFILE, max_examples=max(500, EXAMPLES // 2))
    @given(schema=ext_root_schemas(), data=st.data())
    def compare(schema: dict, data: st.DataObject) -> None:
        _agree(schema, validator.EXTENDED, schema, data, tally)

    try:
        compare()
    finally:
        for name, n in tally.items():
            evidence.count(section, name, n)
    assert tally["valid"] >= tally["instances"] // 20, tally
    assert tally["invalid"] >= tally["instances"] // 10, tally

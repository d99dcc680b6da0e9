"""The generated fast path (validator/fastpath.py) against the closures it stands in front of.

For generated schemas of both dialects and instances aimed at them (some with a
non-JSON value planted inside), the fast path must say yes exactly when the
closures accept, and validate() must raise exactly the closures' error. The
closures alone are a CompiledSchema built without the fast path.
"""

from __future__ import annotations

import copy
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import validator
from validator import CompiledSchema, InputSchemaError
from validator.fastpath import answers

from test_differential import (  # noqa: E402  (tests/validator is on sys.path under pytest)
    NOT_JSON,
    PROFILE,
    _slots,
    ext_root_schemas,
    instances_for,
    json_values,
    root_schemas,
)

EXAMPLES = max(300, PROFILE.max_examples // 4)
PATTERNS = ["^a", "b$", "é", "^$", "a|b", "^[a-z]*$"]
# Subschema positions, so that patterns are planted only into schemas (never into enum or const values).
_ONE = ("items", "additionalProperties", "additional_properties", "not", "contains", "propertyNames", "if", "then", "else")
_MANY = ("oneOf", "anyOf", "allOf", "prefixItems")
_NAMED = ("properties", "patternProperties", "dependentSchemas", "$defs")


def _with_patterns(schema: Any, choose: Any) -> Any:
    """A copy of ``schema`` with a pattern added to some of its schema objects (strings only are affected)."""
    if not isinstance(schema, dict):
        return schema
    out = dict(schema)
    if choose() == 0:
        out["pattern"] = PATTERNS[choose() % len(PATTERNS)]
    for key in _ONE:
        if key in out:
            out[key] = _with_patterns(out[key], choose)
    for key in _MANY:
        if type(out.get(key)) is list:
            out[key] = [_with_patterns(s, choose) for s in out[key]]
    for key in _NAMED:
        if isinstance(out.get(key), dict):
            out[key] = {n: _with_patterns(s, choose) for n, s in out[key].items()}
    return out


def _closure_verdict(closures: CompiledSchema, instance: Any) -> dict | None:
    try:
        closures.validate(instance)
    except InputSchemaError as exc:
        return exc.to_dict()
    return None


def _compare(schema: dict, dialect: str, data: st.DataObject, tally: dict) -> None:
    compiled = validator.compile(schema, dialect=dialect)
    closures = CompiledSchema(schema, dialect, compiled._check, walk_first=compiled._walk_first)
    answer = answers(compiled.validate)
    near = instances_for(schema)
    for _ in range(4):
        instance = copy.deepcopy(data.draw(st.one_of(near, near, json_values), label="instance"))
        if data.draw(st.integers(0, 4), label="plant?") == 0:
            slots = _slots(instance)
            if slots:
                path, key = data.draw(st.sampled_from(slots), label="slot")
                target = instance
                for token in path:
                    target = target[token]
                target[key] = data.draw(NOT_JSON, label="non-JSON")
        if type(instance) is dict and len(instance) > 1:
            # The closures report the first failure in the arguments' own order, the generated
            # code asks in the schema's order: the members are shuffled to tell them apart.
            order = data.draw(st.permutations(list(instance)), label="member order")
            instance = {name: instance[name] for name in order}
        expected = _closure_verdict(closures, instance)
        fast = answer(instance)  # None: not a yes or no (validate() asks the closures)
        tally["yes" if expected is None else "no"] += 1
        if type(fast) is str:  # a "no" inside this root member, which the closures resume from
            assert fast in instance and expected is not None, (
                f"fast path names {fast!r}, closures say {expected}\nschema={schema!r}\ninstance={instance!r}")
            tally["no, naming a member"] += 1
            fast = False
        if fast is not None:
            assert fast == (expected is None), (
                f"fast path says {fast}, closures say {expected}\nschema={schema!r}\ninstance={instance!r}")
        assert _closure_verdict(compiled, instance) == expected, f"schema={schema!r}\ninstance={instance!r}"


@pytest.mark.parametrize("dialect", [validator.CONTRACT, validator.EXTENDED])
def test_fast_path_agrees_with_closures(dialect: str, evidence) -> None:
    tally = {"yes": 0, "no": 0, "no, naming a member": 0}

    @settings(PROFILE, max_examples=EXAMPLES)
    @given(data=st.data())
    def compare(data: st.DataObject) -> None:
        if dialect == validator.EXTENDED and data.draw(st.booleans(), label="extended keywords?"):
            schema = data.draw(ext_root_schemas(), label="schema")
        else:
            schema = data.draw(root_schemas(), label="schema")
        seed = data.draw(st.lists(st.integers(0, 3), min_size=64, max_size=64), label="pattern choices")
        choices = iter(seed * 8)
        schema = _with_patterns(schema, lambda: next(choices, 1))
        _compare(schema, dialect, data, tally)

    try:
        compare()
    finally:
        for name, n in tally.items():
            evidence.count(f"fast path vs closures [{dialect}]", name, n)
    assert tally["yes"] >= (tally["yes"] + tally["no"]) // 10, tally
    assert tally["no"] >= (tally["yes"] + tally["no"]) // 10, tally
    # A floor, not a rate: it keeps the resumed walk exercised (about a tenth of the no's is usual).
    assert tally["no, naming a member"] >= tally["no"] // 20, tally


def _nested(levels: int, leaf: dict) -> dict:
    schema = leaf
    for _ in range(levels):
        schema = {"type": "object", "properties": {"a": schema, "b": {"type": "array", "items": {"type": "string"}}}}
    return schema


def _nested_value(levels: int, leaf: Any) -> Any:
    value = leaf
    for _ in range(levels):
        value = {"a": value, "b": ["x"]}
    return value


@pytest.mark.parametrize("dialect", [validator.CONTRACT, validator.EXTENDED])
def test_deep_schemas_split_into_functions(dialect: str) -> None:
    """Deeper than the inlining limit, children become functions; verdicts stay the closures'."""
    compiled = validator.compile(_nested(60, {"type": "integer", "minimum": 1}), dialect=dialect)
    assert answers(compiled.validate)(_nested_value(59, {"a": 3, "b": ["x"]})) is True
    for bad in (0, 1.5, "1", float("nan"), (1,)):
        value = _nested_value(59, {"a": bad, "b": ["x"]})
        assert answers(compiled.validate)(value) == "a"  # no, somewhere inside the root member "a"
        with pytest.raises(InputSchemaError) as caught:
            compiled.validate(value)
        assert caught.value.instance_path == "/a" * 60
    value = _nested_value(59, {"a": 3, "b": ["x", 2]})
    assert answers(compiled.validate)(value) == "a"


def test_schema_text_never_reaches_the_generated_source() -> None:
    name = "x'] or __import__('os') or d['"
    schema = {"type": "object", "properties": {name: {"type": "string", "pattern": "^'\\)$", "enum": ["\"'", "q"]}},
              "required": [name], "additionalProperties": False}
    compiled = validator.compile(schema)
    source = compiled.validate.__globals__["__source__"]
    assert "import" not in source and "'" not in source and '"' not in source
    assert answers(compiled.validate)({name: "q"}) == name  # the pattern refuses it, in that member
    with pytest.raises(InputSchemaError) as caught:
        compiled.validate({name: "q"})
    assert caught.value.keyword == "pattern"


def test_recursive_and_fallback_keywords_agree() -> None:
    schema = {
        "type": "object",
        "properties": {"tree": {"$ref": "#/$defs/node"}, "n": {"type": "integer", "multipleOf": 3}},
        "$defs": {"node": {"type": "object", "properties": {"kids": {"type": "array", "items": {"$ref": "#/$defs/node"}}},
                           "required": ["kids"]}},
    }
    compiled = validator.compile(schema, dialect=validator.EXTENDED)
    assert answers(compiled.validate)({"tree": {"kids": [{"kids": []}]}, "n": 9}) is True
    assert answers(compiled.validate)({"tree": {"kids": [{}]}}) == "tree"
    assert answers(compiled.validate)({"n": 4}) == "n"  # answered by that member's own closure (multipleOf)
    with pytest.raises(InputSchemaError) as caught:
        compiled.validate({"tree": {"kids": [{"kids": [{}]}]}})
    assert (caught.value.instance_path, caught.value.keyword) == ("/tree/kids/0/kids/0", "required")


@pytest.mark.parametrize("dialect", [validator.CONTRACT, validator.EXTENDED])
def test_deep_required_properties_read_without_a_membership_test_keep_verdicts_and_paths(dialect: str) -> None:
    """Required properties are read straight after the required check (no `in` test, no deeper block)."""
    schema = _nested(60, {"type": "integer", "minimum": 1})
    node = schema
    for _ in range(60):
        node["required"] = ["a", "b"]
        node = node["properties"]["a"]
    compiled = validator.compile(schema, dialect=dialect)
    assert answers(compiled.validate)(_nested_value(59, {"a": 3, "b": ["x"]})) is True
    for bad, keyword in ((0, "minimum"), ("1", "type")):
        with pytest.raises(InputSchemaError) as caught:
            compiled.validate(_nested_value(59, {"a": bad, "b": ["x"]}))
        assert (caught.value.instance_path, caught.value.keyword) == ("/a" * 60, keyword)
    missing = _nested_value(58, {"a": {"b": ["x"]}, "b": ["x"]})
    assert answers(compiled.validate)(missing) == "a"
    with pytest.raises(InputSchemaError) as caught:
        compiled.validate(missing)
    assert (caught.value.instance_path, caught.value.keyword) == ("/a" * 59, "required")


@pytest.mark.parametrize("dialect", [validator.CONTRACT, validator.EXTENDED])
def test_a_member_named_by_the_fast_path_still_yields_the_first_failure_in_the_arguments_order(dialect: str) -> None:
    """The generated code asks in the schema's order, the closures report in the arguments' order."""
    schema = {"type": "object", "additionalProperties": False, "required": ["a"],
              "properties": {"a": {"type": "integer"}, "b": {"type": "string"}, "c": {"type": "string"}}}
    compiled = validator.compile(schema, dialect=dialect)
    for instance, where in (({"c": "ok", "b": 1, "a": "x"}, "/b"), ({"a": "x", "b": 1}, "/a"),
                            ({"b": "ok", "c": 2, "a": 1}, "/c")):
        named = "a" if where != "/c" else "c"
        assert answers(compiled.validate)(instance) == named
        with pytest.raises(InputSchemaError) as caught:
            compiled.validate(instance)
        assert (caught.value.instance_path, caught.value.keyword) == (where, "type")


@pytest.mark.parametrize("dialect", [validator.CONTRACT, validator.EXTENDED])
def test_validate_is_the_generated_entry_and_hands_what_it_cannot_decide_to_the_closures(dialect: str) -> None:
    """A pattern out of its work limit is no answer: the entry asks the closures, which report it."""
    schema = {"type": "object", "properties": {"s": {"type": "string", "pattern": "(x+x+)+y"}}}
    compiled = validator.compile(schema, dialect=dialect)
    assert compiled.validate.__code__.co_filename == "<validator fast path>"
    assert answers(compiled.validate)({"s": "x" * 20 + "y"}) is True
    assert answers(compiled.validate)({"s": "x" * 5000}) is None  # cannot tell: not a yes, not a no
    with pytest.raises(InputSchemaError) as caught:
        compiled.validate({"s": "x" * 5000})
    assert (caught.value.kind, caught.value.keyword, caught.value.instance_path) == (
        validator.EXECUTION_FAILURE, "pattern", "/s")
    assert caught.value.__context__ is None  # raised after the fast path's exception was handled, not inside it


@pytest.mark.parametrize("dialect", [validator.CONTRACT, validator.EXTENDED])
def test_a_no_the_closures_contradict_is_refused_as_an_execution_failure_not_let_through(dialect: str) -> None:
    """Should the fast path ever say no where the closures accept (a bug), the call fails closed."""
    compiled = validator.compile({"type": "object", "properties": {"n": {"type": "integer"}}}, dialect=dialect)
    explain = compiled.validate.__globals__["_no"]
    for verdict in (False, "n"):
        error = explain({"n": 1}, verdict)
        assert (error.kind, error.instance_path) == (validator.EXECUTION_FAILURE, "")
        assert "fast path refused these arguments but its full check accepts them" in error.message
    assert explain({"n": 1}, None) is None  # could not tell: the closures' acceptance stands
    with pytest.raises(InputSchemaError) as caught:
        compiled.validate({"n": "1"})
    assert explain({"n": "1"}, "n").to_dict() == caught.value.to_dict()


def test_a_refusal_is_raised_by_validate_itself_not_from_a_frame_below_it() -> None:
    """The closures return the error and the generated entry raises it: one frame fewer in every traceback."""
    compiled = validator.compile({"type": "object", "properties": {"n": {"type": "integer"}}})
    with pytest.raises(InputSchemaError) as caught:
        compiled.validate({"n": "1"})
    tb = caught.value.__traceback__
    while tb.tb_next is not None:
        tb = tb.tb_next
    assert tb.tb_frame.f_code is compiled.validate.__code__


def test_the_sets_of_types_a_type_check_asks_are_shared_by_every_compiled_schema() -> None:
    """Calls to many tools take turns; one set per distinct list of types stays in the CPU's caches."""

    def type_sets(compiled: CompiledSchema) -> set[int]:
        return {id(value) for name, value in compiled.validate.__globals__.items()
                if name.startswith("c") and type(value) is frozenset and all(isinstance(t, type) for t in value)}

    one = validator.compile({"type": "object", "properties": {"x": {"type": ["integer", "null"]}}})
    other = validator.compile({"type": "object", "properties": {"y": {"type": ["null", "integer"]}}})
    assert type_sets(one) and type_sets(one) == type_sets(other)


def test_an_open_object_under_a_ref_walks_only_the_members_no_applied_schema_declares() -> None:
    """A chain of $refs (and allOf) must not walk every member once per link to hold it to the JSON domain."""
    schema = {
        "type": "object",
        "properties": {"settings": {"$ref": "#/$defs/Settings"}},
        "$defs": {
            "Settings": {"type": "object", "properties": {"doc": {"$ref": "#/$defs/Doc"}},
                         "allOf": [{"properties": {"calc": {"type": "object"}}}]},
            "Doc": {"type": "object", "properties": {"title": {"type": "string"}, "tags": {"type": "array"}}},
        },
    }
    compiled = validator.compile(schema, dialect=validator.EXTENDED)
    closures = CompiledSchema(schema, validator.EXTENDED, compiled._check, walk_first=compiled._walk_first)
    namespace = compiled.validate.__globals__
    walked: list[Any] = []
    member_is_json = namespace["_member_is_json"]

    def counting(value: Any) -> bool:
        walked.append(value)
        return member_is_json(value)

    namespace["_member_is_json"] = counting
    try:
        declared_only = {"settings": {"doc": {"title": "t", "tags": [["deep"]]}, "calc": {"mode": {"x": 1}}}}
        compiled.validate(declared_only)
        assert walked == [{"x": 1}]  # calc's own open member: undeclared there, so walked once
        walked.clear()
        compiled.validate({"settings": {"doc": {"title": "t", "extra": {"k": [1]}}, "other": [{"z": None}]}})
        assert sorted(map(repr, walked)) == ["[{'z': None}]", "{'k': [1]}"]  # each undeclared member once
        # Non-JSON values anywhere are still refused, by both paths alike.
        for bad in ({"settings": {"doc": {"tags": [float("nan")]}}},
                    {"settings": {"doc": {"extra": (1,)}}},
                    {"settings": {"calc": {"mode": {1: "non-str key"}}}},
                    {"settings": {"other": {"k": float("inf")}}}):
            expected = _closure_verdict(closures, bad)
            assert expected is not None, bad
            assert answers(compiled.validate)(bad) in (False, "settings"), bad
            assert _closure_verdict(compiled, bad) == expected
    finally:
        namespace["_member_is_json"] = member_is_json

"""The input-schema contract, sentence by sentence (issue 2, points 1-12)."""

import math
from collections import OrderedDict

import pytest

import validator
from validator import InputSchemaError

UNSUPPORTED, VALIDATION, EXECUTION = "unsupported_capability", "validation", "execution_failure"


def root(**properties):
    return {"type": "object", "properties": properties}


def prop(schema):
    """Wrap a property schema as property "v" of an object root."""
    return root(v=schema)


def schema_error(schema, dialect="contract"):
    with pytest.raises(InputSchemaError) as caught:
        validator.validate_schema(schema, dialect=dialect) if dialect != "contract" else validator.validate_schema(schema)
    return caught.value


def arg_error(schema, arguments):
    compiled = validator.compile(schema)
    with pytest.raises(InputSchemaError) as caught:
        compiled.validate(arguments)
    return caught.value


def ok(schema, arguments):
    validator.compile(schema).validate(arguments)


def ok_v(schema, value):
    ok(prop(schema), {"v": value})


def bad_v(schema, value):
    return arg_error(prop(schema), {"v": value})


# 1. Root is object-only ---------------------------------------------------------


@pytest.mark.parametrize(
    "schema",
    [
        {},
        {"properties": {}},
        {"type": "string"},
        {"type": ["object", "null"]},
        {"type": "array", "items": {}},
    ],
)
def test_root_must_declare_object(schema):
    error = schema_error(schema)
    assert (error.kind, error.keyword, error.schema_path) == (UNSUPPORTED, "type", "/type")


def test_root_object_forms():
    validator.validate_schema({"type": "object"})
    validator.validate_schema({"type": ["object"]})


@pytest.mark.parametrize("schema", [None, "object", 1, [{"type": "object"}]])
def test_non_schema_root_is_malformed(schema):
    assert schema_error(schema).kind == VALIDATION


def test_boolean_root_is_unsupported():
    assert schema_error(True).kind == UNSUPPORTED


def test_root_only_accepts_objects():
    for value in ([], "x", 1, None, True):
        error = arg_error({"type": "object"}, value)
        assert (error.kind, error.keyword, error.instance_path) == (VALIDATION, "type", "")


# 2. Keys and the additional_properties alias ----------------------------------


def test_non_string_schema_keys_are_malformed():
    error = schema_error({"type": "object", "properties": {"a": {1: "x"}}})
    assert (error.kind, error.schema_path) == (VALIDATION, "/properties/a")


def test_mapping_subclasses_are_schemas():
    ok(OrderedDict(type="object", properties=OrderedDict(a={"type": "string"})), {"a": "x"})


def test_additional_properties_alias():
    schema = {"type": "object", "properties": {"a": {}}, "additional_properties": False}
    ok(schema, {"a": 1})
    error = arg_error(schema, {"a": 1, "b": 2})
    assert (error.keyword, error.schema_path) == ("additional_properties", "/additional_properties")


def test_alias_and_keyword_together_is_malformed():
    error = schema_error({"type": "object", "additionalProperties": False, "additional_properties": False})
    assert (error.kind, error.keyword) == (VALIDATION, "additional_properties")


# 3. Every row of the keyword table, and its malformed forms --------------------


@pytest.mark.parametrize(
    "schema, keyword",
    [
        ({"type": []}, "type"),
        ({"type": ["string", "string"]}, "type"),
        ({"type": 3}, "type"),
        ({"type": ["string", 3]}, "type"),
        ({"properties": []}, "properties"),
        ({"properties": {"a": 1}}, ""),
        ({"required": "a"}, "required"),
        ({"required": [1]}, "required"),
        ({"additionalProperties": "no"}, ""),
        ({"description": 1}, "description"),
        ({"format": 1}, "format"),
        ({"contentEncoding": None}, "contentEncoding"),
        ({"$schema": {}}, "$schema"),
        ({"x-mcp-header": 1}, "x-mcp-header"),
        ({"enum": "a"}, "enum"),
        ({"enum": [float("nan")]}, "enum"),
        ({"enum": [(1, 2)]}, "enum"),
        ({"enum": [{1: "a"}]}, "enum"),
        ({"enum": [b"x"]}, "enum"),
        ({"enum": [{"a", "b"}]}, "enum"),
        ({"minimum": "1"}, "minimum"),
        ({"minimum": True}, "minimum"),
        ({"maximum": float("inf")}, "maximum"),
        ({"minLength": -1}, "minLength"),
        ({"minLength": 1.5}, "minLength"),
        ({"minLength": True}, "minLength"),
        ({"pattern": 1}, "pattern"),
        ({"items": 1}, ""),
        ({"minItems": -2}, "minItems"),
        ({"maxItems": "3"}, "maxItems"),
        ({"oneOf": []}, "oneOf"),
        ({"oneOf": {}}, "oneOf"),
        ({"anyOf": []}, "anyOf"),
        ({"not": []}, ""),
        ({"default": float("nan")}, "default"),
        ({"default": (1,)}, "default"),
    ],
)
def test_malformed_forms_are_validation_errors(schema, keyword):
    error = schema_error(prop(schema))
    assert error.kind == VALIDATION, error
    assert error.keyword == keyword
    assert error.schema_path.startswith("/properties/v")


def test_integral_float_counts_are_accepted():
    ok_v({"minLength": 2.0, "type": "string"}, "ab")
    assert bad_v({"minItems": 2.0}, [1]).keyword == "minItems"
    assert bad_v({"maxItems": 1.0}, [1, 2]).keyword == "maxItems"


@pytest.mark.parametrize("name", ["object", "array", "string", "integer", "number", "boolean", "null"])
def test_every_type_name(name):
    samples = {"object": {}, "array": [], "string": "", "integer": 3, "number": 2.5, "boolean": False, "null": None}
    ok_v({"type": name}, samples[name])
    for other, value in samples.items():
        if other == name or (name == "number" and other == "integer"):
            continue
        assert bad_v({"type": name}, value).keyword == "type"


def test_unknown_type_is_unsupported():
    error = schema_error(prop({"type": "date"}))
    assert (error.kind, error.keyword) == (UNSUPPORTED, "type")


def test_type_union():
    schema = {"type": ["string", "null"]}
    ok_v(schema, None)
    ok_v(schema, "x")
    assert "is not of type \"string\" or \"null\"" in bad_v(schema, 1).message


def test_integer_accepts_integral_floats_and_rejects_booleans():
    ok_v({"type": "integer"}, 1.0)
    ok_v({"type": "integer"}, 10**30)
    assert bad_v({"type": "integer"}, 1.5).keyword == "type"
    assert bad_v({"type": "integer"}, True).keyword == "type"
    assert bad_v({"type": "number"}, False).keyword == "type"


def test_minimum_maximum_inclusive_and_exact():
    ok_v({"minimum": 1, "maximum": 3}, 1)
    ok_v({"minimum": 1, "maximum": 3}, 3.0)
    assert bad_v({"minimum": 1}, 0.999).keyword == "minimum"
    assert bad_v({"maximum": 3}, 3.0000001).keyword == "maximum"
    big = 2**53
    # Exact comparison: through float these would be equal.
    assert bad_v({"maximum": big}, big + 1).keyword == "maximum"
    ok_v({"minimum": float(big)}, big)
    assert bad_v({"minimum": float(big)}, big - 1).keyword == "minimum"


def test_min_length_counts_code_points():
    ok_v({"minLength": 2}, "😀😀")
    assert bad_v({"minLength": 3}, "😀😀").keyword == "minLength"
    ok_v({"minLength": 1}, "é")


def test_required_and_properties():
    schema = {"type": "object", "properties": {"a": {"type": "string"}}, "required": ["a", "b"]}
    ok(schema, {"a": "x", "b": None})
    error = arg_error(schema, {"a": "x"})
    assert (error.keyword, error.instance_path, error.schema_path) == ("required", "", "/required")
    assert '"b"' in error.message
    error = arg_error(schema, {"a": 1, "b": 1})
    assert (error.keyword, error.instance_path, error.schema_path) == ("type", "/a", "/properties/a/type")


def test_required_repeats_change_nothing():
    ok({"type": "object", "required": ["a", "a"]}, {"a": 1})


def test_additional_properties_schema():
    schema = {"type": "object", "properties": {"a": {}}, "additionalProperties": {"type": "integer"}}
    ok(schema, {"a": "x", "b": 1})
    error = arg_error(schema, {"a": "x", "b": "y"})
    assert (error.instance_path, error.schema_path) == ("/b", "/additionalProperties/type")


def test_items_and_bounds():
    schema = {"type": "array", "items": {"type": "integer"}, "minItems": 1, "maxItems": 2}
    ok_v(schema, [1])
    assert bad_v(schema, []).keyword == "minItems"
    assert bad_v(schema, [1, 2, 3]).keyword == "maxItems"
    error = bad_v(schema, [1, "2"])
    assert (error.instance_path, error.schema_path) == ("/v/1", "/properties/v/items/type")


# 4. Annotations --------------------------------------------------------------


def test_annotations_never_assert():
    schema = {
        "type": "object",
        "description": "tool",
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "properties": {
            "when": {"type": "string", "format": "date-time", "contentEncoding": "base64", "x-mcp-header": "When"},
        },
    }
    ok(schema, {"when": "not a date, not base64!"})


def test_default_is_never_inserted_validated_or_satisfying_required():
    schema = {
        "type": "object",
        "properties": {"n": {"type": "integer", "minimum": 5, "default": "not even an integer"}},
        "required": ["n"],
        "default": {"n": 7},
    }
    validator.validate_schema(schema)
    arguments = {}
    assert arg_error(schema, arguments).keyword == "required"
    assert arguments == {}  # nothing inserted
    ok(schema, {"n": 5})


def test_default_anywhere():
    schema = {
        "type": "object",
        "default": {},
        "properties": {
            "a": {"type": "array", "default": [], "items": {"type": "string", "default": "x"}},
            "b": {"default": 1, "oneOf": [{"type": "string", "default": "s"}, {"type": "integer", "default": 2}]},
        },
    }
    ok(schema, {"a": ["y"], "b": 3})


# 5. enum --------------------------------------------------------------------------


def test_enum_numbers_by_value_booleans_distinct():
    ok_v({"enum": [1]}, 1.0)
    ok_v({"enum": [1.0]}, 1)
    assert bad_v({"enum": [1]}, True).keyword == "enum"
    assert bad_v({"enum": [True]}, 1).keyword == "enum"
    assert bad_v({"enum": [0]}, False).keyword == "enum"
    ok_v({"enum": [False]}, False)


def test_enum_big_ints_exact():
    big = 2**63 + 1
    ok_v({"enum": [big]}, big)
    assert bad_v({"enum": [big]}, float(big)).keyword == "enum"
    assert bad_v({"enum": [float(2**53)]}, 2**53 + 1).keyword == "enum"
    ok_v({"enum": [float(2**53)]}, 2**53)


def test_enum_containers_by_content():
    ok_v({"enum": [[1, {"a": [True, None]}]]}, [1.0, {"a": [True, None]}])
    assert bad_v({"enum": [[1, 2]]}, [2, 1]).keyword == "enum"
    assert bad_v({"enum": [{"a": 1}]}, {"a": True}).keyword == "enum"
    assert bad_v({"enum": [[True]]}, [1]).keyword == "enum"
    ok_v({"enum": [{"a": 1, "b": 2}]}, {"b": 2.0, "a": 1})


def test_enum_strings_case_sensitive_empty_and_repeats():
    assert bad_v({"enum": ["a"]}, "A").keyword == "enum"
    assert bad_v({"enum": []}, "a").keyword == "enum"
    assert bad_v({"enum": []}, None).keyword == "enum"
    ok_v({"enum": ["a", "a", "b"]}, "b")


def test_enum_narrows_other_keywords():
    schema = {"type": "string", "enum": ["a", 1], "minLength": 1}
    assert bad_v(schema, 1).keyword == "type"
    assert bad_v({"type": "string", "minLength": 2, "enum": ["a", "bb"]}, "a").keyword == "minLength"
    ok_v(schema, "a")
    # typed object enum, at the root
    schema = {"type": "object", "enum": [{"a": 1}], "properties": {"a": {"type": "integer"}}}
    ok(schema, {"a": 1})
    assert arg_error(schema, {"a": 2}).keyword == "enum"


def test_enum_inside_oneof_branches_and_items():
    schema = {"type": "array", "items": {"oneOf": [{"enum": ["x"]}, {"type": "integer", "enum": [1, 2]}]}}
    ok_v(schema, ["x", 2])
    assert bad_v(schema, ["x", 3]).instance_path == "/v/1"


# 6. Keyword applicability without type -----------------------------------------


@pytest.mark.parametrize(
    "schema, others",
    [
        ({"minimum": 5, "maximum": 6}, ["a", [], {}, None, True]),
        ({"minLength": 5, "pattern": "^x$"}, [1, 2.5, [], {}, None, False]),
        ({"items": {"type": "string"}, "minItems": 3, "maxItems": 0}, ["abc", 1, {}, None]),
        ({"properties": {"a": {"type": "string"}}, "required": ["a"], "additionalProperties": False}, ["", 1, [], None]),
    ],
)
def test_keywords_apply_only_to_their_type(schema, others):
    for value in others:
        ok_v(schema, value)


def test_required_only_branch_does_not_turn_scalars_into_objects():
    schema = {"oneOf": [{"required": ["a"]}, {"type": "string"}]}
    # A string matches both branches (required does not apply to strings): exactly-one fails.
    assert bad_v(schema, "x").keyword == "oneOf"
    ok_v(schema, {"a": 1})
    ok_v({"anyOf": [{"required": ["a"]}]}, 5)


def test_empty_schema_accepts_every_json_value():
    for value in ({}, [], "", 0, 1.5, True, None, {"a": [1, {"b": None}]}):
        ok_v({}, value)


# 7. oneOf / anyOf / not ------------------------------------------------------------


def test_oneof_alone_for_scalars_and_objects():
    schema = {"oneOf": [{"type": "string"}, {"type": "integer"}, {"type": "object", "required": ["k"]}]}
    for value in ("x", 3, {"k": 1}):
        ok_v(schema, value)
    for value in (1.5, None, {}):
        assert bad_v(schema, value).keyword == "oneOf"


def test_oneof_beside_object_keywords_at_the_root():
    schema = {
        "type": "object",
        "properties": {"mode": {"enum": ["a", "b"]}},
        "required": ["mode"],
        "oneOf": [
            {"properties": {"mode": {"enum": ["a"]}, "x": {"type": "string"}}, "required": ["x"]},
            {"properties": {"mode": {"enum": ["b"]}, "y": {"type": "integer"}}, "required": ["y"]},
        ],
    }
    ok(schema, {"mode": "a", "x": "s"})
    ok(schema, {"mode": "b", "y": 2})
    assert arg_error(schema, {"x": "s"}).keyword == "required"  # siblings must all match
    error = arg_error(schema, {"mode": "a", "y": 2})
    assert (error.keyword, error.schema_path) == ("oneOf", "/oneOf")


def test_oneof_more_than_one_match():
    error = bad_v({"oneOf": [{"type": "integer"}, {"minimum": 0}]}, 1)
    assert "more than one" in error.message


def test_anyof_and_not():
    ok_v({"anyOf": [{"type": "integer"}, {"minimum": 0}]}, 1)
    assert bad_v({"anyOf": [{"type": "string"}, {"type": "null"}]}, 1).keyword == "anyOf"
    assert bad_v({"not": {"type": "string"}}, "x").keyword == "not"
    ok_v({"not": {"type": "string"}}, 1)
    ok_v({"not": {"not": {"type": "string"}}}, "x")


def test_oneof_and_anyof_together_unsupported():
    error = schema_error(prop({"oneOf": [{}], "anyOf": [{}]}))
    assert (error.kind, error.schema_path) == (UNSUPPORTED, "/properties/v/anyOf")


def test_oneof_in_items():
    schema = {"type": "array", "items": {"oneOf": [{"type": "object", "properties": {"a": {"type": "string"}}, "required": ["a"]}, {"type": "null"}]}}
    ok_v(schema, [{"a": "x"}, None])
    assert bad_v(schema, [{"a": 1}]).instance_path == "/v/0"


# 8. pattern ----------------------------------------------------------------------


def test_pattern_search_semantics():
    ok_v({"pattern": "b"}, "abc")
    assert bad_v({"pattern": "^b"}, "abc").keyword == "pattern"


def test_pattern_dollar_is_end_of_input_and_dot_excludes_line_terminators():
    assert bad_v({"pattern": "^a$"}, "a\n").keyword == "pattern"
    ok_v({"pattern": "^a$"}, "a")
    for terminator in ("\n", "\r", "\u2028", "\u2029"):
        assert bad_v({"pattern": "^a.b$"}, f"a{terminator}b").keyword == "pattern"
    ok_v({"pattern": "^a.b$"}, "a\u0085b")
    ok_v({"pattern": "^.$"}, "😀")  # one code point, Unicode mode


@pytest.mark.parametrize(
    "pattern, kind",
    [
        ("(?=a)", UNSUPPORTED),
        ("(?<n>a)", UNSUPPORTED),
        ("(?i)a", UNSUPPORTED),
        ("(*ACCEPT)", UNSUPPORTED),
        ("a*+", UNSUPPORTED),
        ("a{2}+", UNSUPPORTED),
        ("[[:alpha:]]", UNSUPPORTED),
        ("(a)\\1", UNSUPPORTED),
        ("\\d", UNSUPPORTED),
        ("\\w", UNSUPPORTED),
        ("\\s", UNSUPPORTED),
        ("\\b", UNSUPPORTED),
        ("\\p{L}", UNSUPPORTED),
        ("\\u0041", UNSUPPORTED),
        ("[\\d]", UNSUPPORTED),
        ("\\0", UNSUPPORTED),
        ("a{1001}", UNSUPPORTED),
        ("(?:a{1000}){1000}", UNSUPPORTED),
        ("a" * 1025, UNSUPPORTED),
        ("é" * 513, UNSUPPORTED),
        ("(a", VALIDATION),
        ("a)", VALIDATION),
        ("*a", VALIDATION),
        ("a|*", VALIDATION),
        ("a**", VALIDATION),
        ("a{", VALIDATION),
        ("a}", VALIDATION),
        ("]", VALIDATION),
        ("[a", VALIDATION),
        ("[z-a]", VALIDATION),
        ("a{3,1}", VALIDATION),
        ("a\\", VALIDATION),
        ("^*", VALIDATION),
    ],
)
def test_pattern_rejections_and_their_kinds(pattern, kind):
    error = schema_error(prop({"pattern": pattern}))
    assert (error.kind, error.keyword, error.schema_path) == (kind, "pattern", "/properties/v/pattern"), error


def test_pattern_limit_is_in_utf8_bytes():
    validator.validate_schema(prop({"pattern": "a" * 1024}))
    validator.validate_schema(prop({"pattern": "é" * 512}))


@pytest.mark.parametrize(
    "pattern, good, bad",
    [
        ("^[a-z0-9_-]+$", "ab_9-", "aB"),
        ("^(?:foo|bar)+?$", "foobar", "foob"),
        ("^a{2,3}$", "aaa", "aaaa"),
        ("^\\.\\*\\$$", ".*$", "a*$"),
        ("^[^]$", "\n", ""),
        ("[]", None, "anything"),
        ("^[\\]\\-]$", "-", "a"),
        ("^[😀-😂]$", "😁", "😃"),
        ("^\\:/$", ":/", "x/"),
    ],
)
def test_pattern_subset_meanings(pattern, good, bad):
    if good is not None:
        ok_v({"pattern": pattern}, good)
    assert bad_v({"pattern": pattern}, bad).keyword == "pattern"


def test_pattern_work_limit_is_execution_failure_and_propagates():
    hostile = {"type": "string", "pattern": "(x+x+)+y"}
    value = "x" * 5000
    error = bad_v(hostile, value)
    assert (error.kind, error.keyword, error.instance_path) == (EXECUTION, "pattern", "/v")
    for wrapped in ({"not": hostile}, {"oneOf": [hostile, {"type": "integer"}]}, {"anyOf": [{"type": "integer"}, hostile]},
                    {"anyOf": [hostile, {"type": "string"}]}):
        error = bad_v(wrapped, value)
        assert error.kind == EXECUTION, wrapped


# 9. The complete schema first -------------------------------------------------------


def test_absent_properties_and_every_branch_are_preflighted():
    schema = {"type": "object", "properties": {"absent": {"type": "string", "maxLength": 3}}}
    error = schema_error(schema)
    assert (error.kind, error.schema_path) == (UNSUPPORTED, "/properties/absent/maxLength")
    schema = {"type": "object", "properties": {"v": {"oneOf": [{"type": "string"}, {"type": "integer", "minimum": "x"}]}}}
    assert schema_error(schema).schema_path == "/properties/v/oneOf/1/minimum"


@pytest.mark.parametrize(
    "keyword, value",
    [
        ("$ref", "#"),
        ("$defs", {}),
        ("const", 1),
        ("allOf", [{}]),
        ("maxLength", 3),
        ("exclusiveMinimum", 0),
        ("exclusiveMaximum", 0),
        ("title", "T"),
        ("patternProperties", {}),
        ("uniqueItems", True),
        ("if", {}),
    ],
)
def test_keywords_outside_the_table_are_unsupported(keyword, value):
    error = schema_error(prop({keyword: value}))
    assert (error.kind, error.keyword, error.schema_path) == (UNSUPPORTED, keyword, f"/properties/v/{keyword.replace('/', '~1')}")


def test_tuple_items_and_boolean_subschemas_unsupported():
    assert schema_error(prop({"items": [{}]})).kind == UNSUPPORTED
    assert schema_error(prop({"items": True})).kind == UNSUPPORTED
    assert schema_error(prop(False)).kind == UNSUPPORTED
    assert schema_error(prop({"not": True})).kind == UNSUPPORTED


def test_unsupported_schema_never_validates_arguments():
    with pytest.raises(InputSchemaError) as caught:
        validator.validate({"type": "object", "properties": {"a": {"const": 1}}}, {"a": 2})
    assert caught.value.kind == UNSUPPORTED


# 10. Arguments outside the JSON value domain ---------------------------------------


@pytest.mark.parametrize(
    "value, path",
    [
        (float("nan"), "/v"),
        (float("inf"), "/v"),
        (-math.inf, "/v"),
        ((1, 2), "/v"),
        ({1, 2}, "/v"),
        (b"x", "/v"),
        ({1: "a"}, "/v"),
        ([1, [object()]], "/v/1/0"),
        ({"a": {"b/c": float("nan")}}, "/v/a/b~1c"),
    ],
)
def test_non_json_arguments_are_validation_errors(value, path):
    error = arg_error(root(v={}), {"v": value})
    assert (error.kind, error.instance_path) == (VALIDATION, path)


def test_non_json_root():
    assert arg_error({"type": "object"}, OrderedDict()).kind == VALIDATION
    assert arg_error({"type": "object"}, {("a",): 1}).kind == VALIDATION


# 11. Depth --------------------------------------------------------------------------


def nested(depth, leaf):
    value = leaf
    for _ in range(depth):
        value = [value]
    return value


def test_deep_arguments_are_refused_cleanly():
    error = arg_error(root(v={}), {"v": nested(20_000, 1)})
    assert error.kind == VALIDATION
    deep_object = {}
    cursor = deep_object
    for _ in range(20_000):
        cursor["a"] = {}
        cursor = cursor["a"]
    assert arg_error({"type": "object"}, deep_object).kind == VALIDATION


def test_moderately_deep_arguments_validate():
    ok(root(v={"type": "array"}), {"v": nested(100, "x")})


def test_deep_schemas_are_refused_cleanly():
    schema = {"type": "string"}
    for _ in range(20_000):
        schema = {"type": "array", "items": schema}
    error = schema_error(root(v=schema))
    assert error.kind == UNSUPPORTED
    schema = {}
    for _ in range(20_000):
        schema = {"not": schema}
    assert schema_error(root(v=schema)).kind == UNSUPPORTED
    schema = {}
    for _ in range(20_000):
        schema = {"type": "object", "properties": {"a": schema}}
    assert schema_error({"type": "object", "properties": {"a": schema}}).kind == UNSUPPORTED


def test_self_referencing_python_schema_terminates():
    schema = {"type": "object", "properties": {}}
    schema["properties"]["a"] = schema
    assert schema_error(schema).kind == UNSUPPORTED


def test_deep_enum_choice_is_malformed_not_a_crash():
    assert schema_error(prop({"enum": [nested(20_000, 1)]})).kind == VALIDATION


def test_huge_strings_and_numbers():
    ok_v({"type": "string", "minLength": 1, "pattern": "^a"}, "a" * 5_000_000)
    ok_v({"type": "integer", "minimum": 0}, 10**5000)
    error = bad_v({"maximum": 0}, 10**5000)
    assert "digits" in error.message


# 12. Errors: pointers and messages --------------------------------------------------


def test_pointer_escaping_in_both_paths():
    schema = {"type": "object", "properties": {"a/b": {"type": "object", "properties": {"m~n": {"type": "integer"}}}}}
    error = arg_error(schema, {"a/b": {"m~n": "x"}})
    assert error.instance_path == "/a~1b/m~0n"
    assert error.schema_path == "/properties/a~1b/properties/m~0n/type"


def test_error_message_example_from_the_issue():
    schema = {
        "type": "object",
        "properties": {"edits": {"type": "array", "items": {"type": "object", "properties": {"line": {"type": "integer", "minimum": 1}}}}},
    }
    error = arg_error(schema, {"edits": [{"line": 3}, {"line": 0}]})
    assert error.message == "/edits/1/line: 0 is less than the minimum of 1"
    assert str(error) == error.message
    assert error.to_dict() == {
        "kind": VALIDATION,
        "instancePath": "/edits/1/line",
        "schemaPath": "/properties/edits/items/properties/line/minimum",
        "keyword": "minimum",
        "message": "/edits/1/line: 0 is less than the minimum of 1",
    }


def test_additional_property_message_lists_allowed_names():
    error = arg_error({"type": "object", "properties": {"path": {}}, "additionalProperties": False}, {"pth": 1})
    assert error.message == 'arguments: property "pth" is not allowed (no additional properties; allowed: "path")'


def test_errors_pickle():
    import pickle

    error = arg_error(root(v={"type": "string"}), {"v": 1})
    clone = pickle.loads(pickle.dumps(error))
    assert clone.to_dict() == error.to_dict()


def test_a_refused_value_raises_the_same_error_the_public_constructor_builds():
    """The validator builds its errors without __init__; nothing a caller reads may differ."""
    error = arg_error(root(v={"type": "string"}), {"v": 1})
    public = validator.InputSchemaError(error.kind, error.message, instance_path=error.instance_path,
                                        schema_path=error.schema_path, keyword=error.keyword)
    assert type(error) is type(public)
    assert (error.args, str(error), repr(error), error.to_dict()) == (public.args, str(public), repr(public), public.to_dict())


def test_compile_once_validate_many_is_reentrant():
    compiled = validator.compile(root(v={"type": "array", "items": {"type": "integer", "minimum": 0}}))
    for i in range(100):
        compiled.validate({"v": list(range(i))})
        assert not compiled.is_valid({"v": [-1] * (i + 1)})


def test_unknown_dialect_is_a_value_error():
    with pytest.raises(ValueError):
        validator.compile({"type": "object"}, dialect="draft-07")


# The JSON domain is enforced by every schema shape, not just untyped ones.


@pytest.mark.parametrize(
    "schema",
    [
        {"type": "number"},
        {"type": "integer"},
        {"type": ["number", "null"]},
        {"minimum": 0},
        {"enum": [1]},
        {"type": "array", "items": {"type": "number"}},
        {"type": "object", "properties": {"a": {"type": "number"}}, "additionalProperties": False},
        {"type": "object", "additionalProperties": {"type": "number"}},
        {"oneOf": [{"type": "number"}, {"type": "string"}]},
        {"not": {"type": "string"}},
    ],
)
@pytest.mark.parametrize("bad", [float("nan"), float("inf"), -float("inf")])
def test_non_finite_numbers_are_refused_under_every_schema(schema, bad):
    value = {"a": bad} if schema.get("type") == "object" else ([bad] if schema.get("type") == "array" else bad)
    error = arg_error(root(v=schema), {"v": value})
    assert error.kind == VALIDATION
    assert "not a JSON number" in error.message or error.keyword in ("enum", "oneOf", "not")


@pytest.mark.parametrize(
    "schema, value",
    [
        ({"type": "object", "properties": {"a": {}}, "additionalProperties": False}, {1: "x"}),
        ({"type": "object", "additionalProperties": {"type": "string"}}, {1: "x"}),
        ({"type": "object", "properties": {"a": {}}, "additionalProperties": {"type": "string"}}, {("t",): "x"}),
        ({"type": "object"}, {1: "x"}),
        ({"type": "array", "items": {"type": "string"}}, ("a",)),
        ({"type": "array"}, [{1: 2}]),
        ({"type": "string"}, b"bytes"),
    ],
)
def test_non_json_values_are_refused_under_closed_and_typed_schemas(schema, value):
    assert arg_error(root(v=schema), {"v": value}).kind == VALIDATION

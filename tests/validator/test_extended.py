"""The extended dialect (issue 6): every extra keyword enforced with 2020-12 semantics, nothing fetched."""

import pytest

import validator
from validator import InputSchemaError

EXT = "extended"
UNSUPPORTED, VALIDATION, EXECUTION = "unsupported_capability", "validation", "execution_failure"


def compile_ext(schema):
    return validator.compile(schema, dialect=EXT)


def prop(schema, **more):
    return {"type": "object", "properties": {"v": schema}, **more}


def ok_v(schema, value, **more):
    compile_ext(prop(schema, **more)).validate({"v": value})


def bad_v(schema, value, **more):
    with pytest.raises(InputSchemaError) as caught:
        compile_ext(prop(schema, **more)).validate({"v": value})
    return caught.value


def schema_error(schema, dialect=EXT):
    with pytest.raises(InputSchemaError) as caught:
        validator.validate_schema(schema, dialect=dialect)
    return caught.value


def test_contract_stays_the_default_and_unchanged():
    for keyword, value in [("const", 1), ("allOf", [{}]), ("maxLength", 1), ("$ref", "#"), ("title", "x")]:
        assert schema_error(prop({keyword: value}), dialect="contract").kind == UNSUPPORTED
        with pytest.raises(InputSchemaError):
            validator.validate_schema(prop({keyword: value}))
        validator.validate_schema(prop({keyword: value}), dialect=EXT)
    assert "extended dialect supports it" in schema_error(prop({"pattern": "\\d"}), dialect="contract").message
    assert "supported in the extended dialect" in schema_error(prop({"const": 1}), dialect="contract").message


def test_validate_takes_the_dialect_too():
    validator.validate(prop({"const": 1}), {"v": 1}, dialect=EXT)
    with pytest.raises(InputSchemaError):
        validator.validate(prop({"const": 1}), {"v": 2}, dialect=EXT)


# --- const / enum-like equality -------------------------------------------------------


def test_const_json_equality():
    ok_v({"const": 1}, 1.0)
    assert bad_v({"const": 1}, True).keyword == "const"
    assert bad_v({"const": False}, 0).keyword == "const"
    big = 2**64 + 1
    ok_v({"const": big}, big)
    assert bad_v({"const": big}, float(big)).keyword == "const"
    ok_v({"const": {"a": [1, {"b": None}]}}, {"a": [1.0, {"b": None}]})
    assert bad_v({"const": {"a": [1]}}, {"a": [1], "b": 2}).keyword == "const"
    ok_v({"const": None}, None)


# --- numbers ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    "divisor, good, bad",
    [
        (0.1, [0.3, 0.7, 3, 1e10, -0.2], [0.31, 0.05]),
        (0.01, [19.99, 0.07], [0.075]),
        (3, [9, -3, 0, 9.0, 3 * 10**30], [10, 9.5, 3 * 10**30 + 1]),
        (1.5, [4.5, 3], [4]),
        (1e-8, [12391239123, 0.00000003], [1.000000001e-8 * 3]),
        (0.123456789, [], [1e308]),
    ],
)
def test_multiple_of_is_exact(divisor, good, bad):
    for value in good:
        ok_v({"multipleOf": divisor}, value)
    for value in bad:
        assert bad_v({"multipleOf": divisor}, value).keyword == "multipleOf"


def test_multiple_of_must_be_positive():
    assert schema_error(prop({"multipleOf": 0})).kind == VALIDATION
    assert schema_error(prop({"multipleOf": -1})).kind == VALIDATION


def test_exclusive_bounds():
    ok_v({"exclusiveMinimum": 0, "exclusiveMaximum": 10}, 0.5)
    assert bad_v({"exclusiveMinimum": 0}, 0).keyword == "exclusiveMinimum"
    assert bad_v({"exclusiveMaximum": 2**53}, 2**53).keyword == "exclusiveMaximum"
    ok_v({"exclusiveMaximum": float(2**53)}, 2**53 - 1)
    error = schema_error(prop({"minimum": 0, "exclusiveMinimum": True}))
    assert (error.kind, error.keyword) == (UNSUPPORTED, "exclusiveMinimum")


# --- strings ----------------------------------------------------------------------------


def test_max_length_counts_code_points():
    ok_v({"maxLength": 2}, "😀😀")
    assert bad_v({"maxLength": 1}, "😀😀").keyword == "maxLength"


@pytest.mark.parametrize(
    "pattern, good, bad",
    [
        ("^\\d+$", "0123", "١٢"),  # ECMAScript \d is ASCII only
        ("^\\w+$", "a_Z9", "é"),
        ("^\\s$", "\u00a0", "\u0085"),  # NBSP is ECMAScript whitespace, NEL is not
        ("^\\s$", "\ufeff", "x"),
        ("^\\S+$", "ab", "a b"),
        ("^[\\d\\s]+$", "1 2", "1_2"),
        ("^[^\\W]+$", "abc", "a-c"),
        ("\\bcat\\b", "a cat.", "concat"),
        ("\\Bat", "cat", "at"),
        # Search positions are code points: none lies inside the pair, so every one here is a boundary.
        ("\\B", "a😀", "a😀_"),
        ("^\\t\\n\\r$", "\t\n\r", "tnr"),
        ("^\\u0041\\x42$", "AB", "ab"),
        ("^\\u{1F600}$", "😀", "😁"),
        ("^\\uD83D\\uDE00$", "😀", "\ud83d"),
        ("^[\\b]$", "\b", "b"),
        ("^\\cJ$", "\n", "J"),
    ],
)
def test_extended_pattern_escapes_mean_what_ecmascript_means(pattern, good, bad):
    ok_v({"pattern": pattern}, good)
    assert bad_v({"pattern": pattern}, bad).keyword == "pattern"


@pytest.mark.parametrize("pattern", ["\\p{L}", "(?=a)", "\\1", "\\k<a>", "(?<n>a)"])
def test_extended_patterns_still_refuse_the_rest(pattern):
    assert schema_error(prop({"pattern": pattern})).kind == UNSUPPORTED


@pytest.mark.parametrize("pattern", ["[\\d-z]", "\\x4", "\\u12", "\\u{110000}", "[\\B]"])
def test_malformed_extended_escapes(pattern):
    assert schema_error(prop({"pattern": pattern})).kind == VALIDATION


# --- arrays -----------------------------------------------------------------------------


def test_unique_items_json_equality():
    ok_v({"uniqueItems": True}, [1, "1", True, None, [1], {"a": 1}])
    assert bad_v({"uniqueItems": True}, [1, 1.0]).keyword == "uniqueItems"
    ok_v({"uniqueItems": True}, [1, True])
    ok_v({"uniqueItems": True}, [0, False])
    assert bad_v({"uniqueItems": True}, [{"a": [1], "b": 2}, {"b": 2, "a": [1.0]}]).keyword == "uniqueItems"
    ok_v({"uniqueItems": False}, [1, 1])


def test_prefix_items_and_items_after_them():
    schema = {"prefixItems": [{"type": "string"}, {"type": "integer"}], "items": {"type": "boolean"}}
    ok_v(schema, ["a", 1, True, False])
    ok_v(schema, ["a"])
    error = bad_v(schema, ["a", 1, "x"])
    assert (error.instance_path, error.schema_path) == ("/v/2", "/properties/v/items/type")
    assert bad_v({"prefixItems": [{}], "items": False}, [1, 2]).keyword == "false"


def test_contains_with_bounds():
    schema = {"contains": {"type": "integer"}, "minContains": 2, "maxContains": 3}
    ok_v(schema, [1, "a", 2])
    assert bad_v(schema, [1, "a"]).keyword == "contains"
    assert bad_v(schema, [1, 2, 3, 4]).keyword == "maxContains"
    ok_v({"contains": {"type": "integer"}, "minContains": 0}, [])
    assert bad_v({"contains": {"type": "integer"}}, []).keyword == "contains"


# --- objects ----------------------------------------------------------------------------


def test_property_count_names_patterns_and_dependencies():
    ok_v({"minProperties": 1, "maxProperties": 2}, {"a": 1})
    assert bad_v({"minProperties": 1}, {}).keyword == "minProperties"
    assert bad_v({"maxProperties": 1}, {"a": 1, "b": 2}).keyword == "maxProperties"
    error = bad_v({"propertyNames": {"maxLength": 3}}, {"abcd": 1})
    assert (error.keyword, error.instance_path) == ("propertyNames", "/v")
    assert '"abcd"' in error.message
    schema = {"patternProperties": {"^x-": {"type": "string"}}, "additionalProperties": False}
    ok_v(schema, {"x-a": "s"})
    assert bad_v(schema, {"x-a": 1}).instance_path == "/v/x-a"
    assert bad_v(schema, {"y": "s"}).keyword == "additionalProperties"
    schema = {"dependentRequired": {"card": ["cvv"]}, "dependentSchemas": {"bill": {"required": ["addr"]}}}
    ok_v(schema, {"card": 1, "cvv": 2})
    assert bad_v(schema, {"card": 1}).keyword == "dependentRequired"
    assert bad_v(schema, {"bill": 1}).keyword == "required"
    assert bad_v({"dependencies": {"a": ["b"]}}, {"a": 1}).keyword == "dependencies"


# --- conditionals, composition, booleans -----------------------------------------------


def test_all_of_if_then_else_and_one_of_beside_any_of():
    ok_v({"allOf": [{"type": "integer"}, {"minimum": 1}]}, 2)
    assert bad_v({"allOf": [{"type": "integer"}, {"minimum": 1}]}, 0).schema_path == "/properties/v/allOf/1/minimum"
    schema = {"if": {"properties": {"kind": {"const": "a"}}}, "then": {"required": ["a"]}, "else": {"required": ["b"]}}
    ok_v(schema, {"kind": "a", "a": 1})
    ok_v(schema, {"kind": "z", "b": 1})
    assert bad_v(schema, {"kind": "a", "b": 1}).schema_path == "/properties/v/then/required"
    assert bad_v(schema, {"kind": "z", "a": 1}).schema_path == "/properties/v/else/required"
    schema = {"oneOf": [{"type": "string"}, {"type": "integer"}], "anyOf": [{"minimum": 5}, {"type": "string", "maxLength": 1}]}
    ok_v(schema, 6)
    ok_v(schema, "a")
    assert bad_v(schema, 4).keyword == "anyOf"


def test_boolean_schemas_anywhere():
    ok_v(True, {"anything": [1]})
    assert bad_v(False, 1).keyword == "false"
    ok_v({"not": False}, 1)
    ok_v({"anyOf": [False, True]}, 1)
    assert bad_v({"properties": {"a": False}}, {"a": 1}).instance_path == "/v/a"


def test_annotations_accepted_never_asserted():
    schema = {
        "type": "object",
        "$id": "https://example.com/tool.json",
        "title": "Tool",
        "$comment": "x",
        "properties": {
            "v": {"title": "V", "examples": [1, "a"], "deprecated": True, "readOnly": False, "writeOnly": True,
                  "contentMediaType": "application/json", "type": "integer"},
        },
    }
    compile_ext(schema).validate({"v": 3})
    assert schema_error(prop({"deprecated": "yes"})).kind == VALIDATION
    assert schema_error(prop({"examples": "a"})).kind == VALIDATION


# --- $ref ---------------------------------------------------------------------------------


def test_local_refs_defs_definitions_and_escapes():
    schema = {
        "type": "object",
        "properties": {
            "a": {"$ref": "#/$defs/pos"},
            "b": {"$ref": "#/definitions/name"},
            "c": {"$ref": "#/$defs/a~1b~0c"},
            "d": {"$ref": "#/$defs/with%20space"},
        },
        "$defs": {"pos": {"type": "integer", "minimum": 1}, "a/b~c": {"type": "null"}, "with space": {"const": 2}},
        "definitions": {"name": {"type": "string"}},
    }
    compiled = compile_ext(schema)
    compiled.validate({"a": 1, "b": "x", "c": None, "d": 2})
    with pytest.raises(InputSchemaError) as caught:
        compiled.validate({"a": 0})
    assert (caught.value.instance_path, caught.value.schema_path) == ("/a", "/$defs/pos/minimum")


def test_recursive_refs_are_allowed_and_bounded():
    tree = {
        "type": "object",
        "properties": {"value": {"type": "integer"}, "children": {"type": "array", "items": {"$ref": "#"}}},
        "required": ["value"],
    }
    compiled = compile_ext(tree)
    node = {"value": 0}
    for i in range(40):
        node = {"value": i, "children": [node]}
    compiled.validate(node)
    bad = {"value": 1, "children": [{"value": 2, "children": [{"value": "x"}]}]}
    with pytest.raises(InputSchemaError) as caught:
        compiled.validate(bad)
    assert caught.value.instance_path == "/children/0/children/0/value"
    deep = {"value": 0}
    for i in range(5000):
        deep = {"value": i, "children": [deep]}
    with pytest.raises(InputSchemaError) as caught:
        compiled.validate(deep)
    assert caught.value.kind == VALIDATION  # nesting limit, not a RecursionError


@pytest.mark.parametrize(
    "schema",
    [
        {"type": "object", "$ref": "#"},
        {"type": "object", "allOf": [{"$ref": "#"}]},
        {"type": "object", "properties": {"v": {"$ref": "#/$defs/a"}}, "$defs": {"a": {"$ref": "#/$defs/b"}, "b": {"anyOf": [{"$ref": "#/$defs/a"}]}}},
        {"type": "object", "$defs": {"a": {"not": {"$ref": "#/$defs/a"}}}},
        {"type": "object", "$defs": {"a": {"$ref": "#"}}, "$ref": "#/$defs/a"},
    ],
)
def test_ref_cycles_that_never_descend_are_rejected(schema):
    error = schema_error(schema)
    assert (error.kind, error.keyword) == (UNSUPPORTED, "$ref")
    assert "never terminate" in error.message


@pytest.mark.parametrize(
    "ref, kind",
    [
        ("https://example.com/schema.json", UNSUPPORTED),
        ("other.json#/$defs/a", UNSUPPORTED),
        ("#anchor", UNSUPPORTED),
        ("#/$defs/missing", VALIDATION),
    ],
)
def test_refs_that_are_not_local_or_do_not_resolve(ref, kind):
    error = schema_error(prop({"$ref": ref}, **{"$defs": {}}))
    assert (error.kind, error.keyword) == (kind, "$ref")


@pytest.mark.parametrize(
    "keyword, value",
    [
        ("$dynamicRef", "#a"),
        ("$anchor", "a"),
        ("$dynamicAnchor", "a"),
        ("unevaluatedProperties", False),
        ("unevaluatedItems", False),
        ("$vocabulary", {}),
        ("additionalItems", False),
    ],
)
def test_still_unsupported_in_extended(keyword, value):
    error = schema_error(prop({keyword: value}))
    assert (error.kind, error.keyword) == (UNSUPPORTED, keyword)


def test_nested_id_is_unsupported():
    assert schema_error(prop({"$id": "https://example.com/inner"})).keyword == "$id"


def test_draft07_ref_with_asserting_siblings_is_unsupported():
    schema = {
        "type": "object",
        "$schema": "http://json-schema.org/draft-07/schema#",
        "properties": {"v": {"$ref": "#/definitions/s", "maxLength": 3}},
        "definitions": {"s": {"type": "string"}},
    }
    assert schema_error(schema).keyword == "$ref"
    schema["properties"]["v"] = {"$ref": "#/definitions/s", "description": "annotation siblings are fine"}
    compile_ext(schema).validate({"v": "long string"})


def test_pattern_property_timeout_is_an_execution_failure():
    schema = {"patternProperties": {"(x+x+)+y": {}}}
    error = bad_v(schema, {"x" * 5000: 1})
    assert error.kind == EXECUTION


def test_every_unsupported_reason_in_extended_is_a_value_not_a_crash():
    for schema in ({"$ref": 1}, {"allOf": []}, {"prefixItems": {}}, {"dependentRequired": {"a": "b"}},
                   {"patternProperties": {"(": {}}}, {"contains": 1}, {"if": []}, {"$defs": []}):
        assert schema_error(prop(schema)).kind in (VALIDATION, UNSUPPORTED)


def test_extended_reads_a_typeless_root_as_an_object():
    compiled = compile_ext({"$schema": "http://json-schema.org/draft-07/schema#"})
    compiled.validate({"anything": [1]})
    with pytest.raises(InputSchemaError) as caught:
        compiled.validate([1])
    assert caught.value.keyword == "type"
    assert schema_error({"type": "string"}).kind == UNSUPPORTED
    assert schema_error({"$schema": "x"}, dialect="contract").kind == UNSUPPORTED


# --- vendor keywords ("x-…") ----------------------------------------------------------------


VENDOR_VALUES = [True, False, None, 0, -1.5, "s", "", [], [1, {"a": None}], {}, {"nested": {"x": [True]}}]


@pytest.mark.parametrize("value", VENDOR_VALUES)
def test_vendor_keywords_are_annotations_with_any_json_value(value):
    schema = {
        "type": "object",
        "x-fastmcp-wrap-result": value,
        "properties": {
            "v": {"type": "integer", "x-vendor": value, "x-": value},
            "w": {"type": "array", "items": {"x-item": value, "type": "string"}},
            "c": {"anyOf": [{"type": "null", "x-branch": value}, {"not": {"x-n": value, "type": "string"}}]},
            "r": {"$ref": "#/$defs/d", "x-beside-ref": value},
        },
        "additionalProperties": {"x-extra": value, "type": "boolean"},
        "$defs": {"d": {"type": "number", "x-def": value}},
    }
    compiled = compile_ext(schema)
    compiled.validate({"v": 1, "w": ["a"], "c": None, "r": 1.5, "z": True})
    compiled.validate({"c": 3})
    for bad, path in (({"v": "1"}, "/v"), ({"w": [1]}, "/w/0"), ({"c": "s"}, "/c"), ({"r": "s"}, "/r"), ({"z": 1}, "/z")):
        with pytest.raises(InputSchemaError) as caught:
            compiled.validate(bad)
        assert caught.value.instance_path == path
        assert not caught.value.keyword.startswith("x-")


def test_vendor_keywords_are_never_asserted():
    # Names that look like assertions assert nothing; a vendor keyword alone is an empty schema.
    ok_v({"x-maxLength": 1, "x-enum": ["a"], "x-type": "null"}, "a long string")
    ok_v({"x-required": ["q"]}, {})
    ok_v({"x-const": 1}, [1, {"k": None}])
    assert bad_v({"x-note": "s"}, float("nan")).keyword == ""  # still only JSON values, like {}


def test_vendor_keywords_beside_a_draft07_ref_are_neutral():
    schema = {
        "type": "object",
        "$schema": "http://json-schema.org/draft-07/schema#",
        "properties": {"v": {"$ref": "#/definitions/s", "x-vendor": 1}},
        "definitions": {"s": {"type": "string"}},
    }
    compile_ext(schema).validate({"v": "a"})


def test_vendor_keyword_values_must_be_json():
    error = schema_error(prop({"x-bad": (1, 2)}))
    assert (error.kind, error.keyword, error.schema_path) == (VALIDATION, "x-bad", "/properties/v/x-bad")


@pytest.mark.parametrize("keyword", ["x-fastmcp-wrap-result", "x-unknown", "x-"])
@pytest.mark.parametrize("where", ["root", "nested"])
def test_vendor_keywords_stay_unsupported_in_the_contract(keyword, where):
    schema = {"type": "object", keyword: True} if where == "root" else prop({"type": "string", keyword: True})
    error = schema_error(schema, dialect=validator.CONTRACT)
    assert (error.kind, error.keyword) == (UNSUPPORTED, keyword)
    assert "extended dialect" in error.message
    compile_ext(schema)


@pytest.mark.parametrize("dialect", [validator.CONTRACT, EXT])
def test_x_mcp_header_stays_a_string_annotation(dialect):
    validator.compile(prop({"type": "string", "x-mcp-header": "Region"}), dialect=dialect).validate({"v": "eu"})
    for value in (1, True, None, ["Region"], {}):
        error = schema_error(prop({"type": "string", "x-mcp-header": value}), dialect=dialect)
        assert (error.kind, error.keyword) == (VALIDATION, "x-mcp-header")

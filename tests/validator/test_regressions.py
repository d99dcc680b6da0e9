"""Regressions: validator bugs found by the differential and conformance work, one test each."""

from __future__ import annotations

import pytest

import validator
from validator import InputSchemaError


def test_non_string_property_names_are_malformed() -> None:
    # A property name that is not a string can never name a JSON argument, so its
    # schema would silently never apply: a dropped constraint. Schemas have str keys.
    schema = {"type": "object", "properties": {1: {"type": "string"}}, "required": ["1"]}
    with pytest.raises(InputSchemaError) as caught:
        validator.compile(schema)
    assert caught.value.kind == validator.VALIDATION
    assert caught.value.keyword == "properties"
    assert caught.value.schema_path == "/properties/1"


def test_posix_class_check_stays_inside_its_class() -> None:
    # "[[:a][:]" is two ordinary classes ("[[:a]" and "[:]"), valid ECMAScript; the
    # POSIX-class check used to find the second class's ":]" and refuse the pattern.
    from validator.patterns import PatternError, compile_pattern

    matches = compile_pattern("[[:a][:]")
    assert [matches(s) for s in ("a:", "[:", "::", "a", ":a", "b]")] == [True, True, True, False, False, False]
    for posix in ("[[:alpha:]]", "[x[=a=]]", "[[.a.]]"):
        with pytest.raises(PatternError) as caught:
            compile_pattern(posix)
        assert caught.value.kind == validator.UNSUPPORTED

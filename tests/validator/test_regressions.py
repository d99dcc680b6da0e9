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

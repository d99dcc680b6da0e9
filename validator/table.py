"""The keyword table: one row per keyword, the compile function that enforces it, and its dialects.

Rows follow the contract's keyword table (required moved before properties and
the array bounds before items, because rows are also evaluation order and the
cheap checks should answer first), then the extended dialect's rows. A keyword
outside the rows of a dialect is unsupported in that dialect. Adding a keyword
is one compile function, one row here, and its tests.

One row stands for a family rather than a name: VENDOR, the extended dialect's
vendor extensions, matches every keyword spelled "x-…" that has no row of its
own (Compiler.row and Compiler.node apply it). x-mcp-header keeps its own row,
so it stays a string in both dialects, and the contract dialect has no vendor
row: there, any other "x-" keyword is unsupported, as the contract says.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Optional

from . import extended as x
from .composition import compile_any_of, compile_not, compile_one_of
from .keywords import (
    CONTRACT,
    EXTENDED,
    compile_additional_properties,
    compile_default,
    compile_enum,
    compile_items,
    compile_max_items,
    compile_maximum,
    compile_min_items,
    compile_min_length,
    compile_minimum,
    compile_pattern_keyword,
    compile_properties,
    compile_required,
    compile_schema_uri,
    compile_string_annotation,
    compile_type,
)
from .site import Check, Site

BOTH = frozenset({CONTRACT, EXTENDED})


@dataclass(frozen=True)
class Keyword:
    name: str
    compile: Callable[[Any, Site], Optional[Check]]
    # "type" runs first; "any" checks run after the type-specific ones;
    # "object"/"array"/"string"/"number" checks run only on such values; None = annotation.
    applies: str | None
    dialects: frozenset = BOTH


# --- the table -------------------------------------------------------------------
# The contract's rows first, in the contract's order; then the extended dialect's.
# A keyword outside the rows of a dialect is unsupported in that dialect.

_EXT = frozenset({EXTENDED})

KEYWORDS: dict[str, Keyword] = {
    row.name: row
    for row in (
        Keyword("type", compile_type, "type"),
        # required before properties: a missing property is the first thing to report.
        Keyword("required", compile_required, "object"),
        Keyword("properties", compile_properties, "object"),
        Keyword("additionalProperties", compile_additional_properties, "object"),
        Keyword("additional_properties", compile_additional_properties, "object"),
        Keyword("description", compile_string_annotation, None),
        Keyword("default", compile_default, None),
        Keyword("format", compile_string_annotation, None),
        Keyword("contentEncoding", compile_string_annotation, None),
        Keyword("$schema", compile_schema_uri, None),
        Keyword("x-mcp-header", compile_string_annotation, None),
        Keyword("enum", compile_enum, "any"),
        Keyword("minimum", compile_minimum, "number"),
        Keyword("maximum", compile_maximum, "number"),
        Keyword("minLength", compile_min_length, "string"),
        Keyword("pattern", compile_pattern_keyword, "string"),
        # The size bounds before items: a wrong length is reported without walking the array.
        Keyword("minItems", compile_min_items, "array"),
        Keyword("maxItems", compile_max_items, "array"),
        Keyword("items", compile_items, "array"),
        Keyword("oneOf", compile_one_of, "any"),
        Keyword("anyOf", compile_any_of, "any"),
        Keyword("not", compile_not, "any"),
        # extended dialect: enforced with JSON Schema 2020-12 semantics
        Keyword("const", x.compile_const, "any", _EXT),
        Keyword("allOf", x.compile_all_of, "any", _EXT),
        Keyword("maxLength", x.compile_max_length, "string", _EXT),
        Keyword("exclusiveMinimum", x.compile_exclusive_minimum, "number", _EXT),
        Keyword("exclusiveMaximum", x.compile_exclusive_maximum, "number", _EXT),
        Keyword("multipleOf", x.compile_multiple_of, "number", _EXT),
        Keyword("uniqueItems", x.compile_unique_items, "array", _EXT),
        Keyword("minProperties", x.compile_min_properties, "object", _EXT),
        Keyword("maxProperties", x.compile_max_properties, "object", _EXT),
        Keyword("propertyNames", x.compile_property_names, "object", _EXT),
        Keyword("patternProperties", x.compile_pattern_properties, "object", _EXT),
        Keyword("dependentRequired", x.compile_dependent_required, "object", _EXT),
        Keyword("dependentSchemas", x.compile_dependent_schemas, "object", _EXT),
        Keyword("dependencies", x.compile_dependencies, "object", _EXT),
        Keyword("prefixItems", x.compile_prefix_items, "array", _EXT),
        Keyword("contains", x.compile_contains, "array", _EXT),
        Keyword("minContains", x.compile_contains_bound, None, _EXT),
        Keyword("maxContains", x.compile_contains_bound, None, _EXT),
        Keyword("if", x.compile_if, "any", _EXT),
        Keyword("then", x.compile_then_else, None, _EXT),
        Keyword("else", x.compile_then_else, None, _EXT),
        Keyword("$id", x.compile_id, None, _EXT),  # before $ref: a nested $id would change what $ref means
        Keyword("$ref", x.compile_ref, "any", _EXT),
        Keyword("$defs", x.compile_defs, None, _EXT),
        Keyword("definitions", x.compile_defs, None, _EXT),
        # extended dialect: annotations, accepted and never asserted
        Keyword("title", compile_string_annotation, None, _EXT),
        Keyword("$comment", compile_string_annotation, None, _EXT),
        Keyword("contentMediaType", compile_string_annotation, None, _EXT),
        Keyword("contentSchema", x.compile_content_schema, None, _EXT),
        Keyword("examples", x.compile_examples, None, _EXT),
        Keyword("deprecated", x.compile_boolean_annotation, None, _EXT),
        Keyword("readOnly", x.compile_boolean_annotation, None, _EXT),
        Keyword("writeOnly", x.compile_boolean_annotation, None, _EXT),
    )
}

# extended dialect: vendor extensions, any "x-…" keyword without a row above; an
# annotation with any JSON value, at any schema position, never asserted.
VENDOR_PREFIX = "x-"
VENDOR = Keyword("x-…", x.compile_vendor_annotation, None, _EXT)


"""Compile functions for the extended dialect: the 2020-12 keywords real MCP servers emit.

Each keyword is enforced with JSON Schema 2020-12 semantics, never stripped.
They register in the same table as the contract's keywords (see keywords.py),
marked as extended-only, so the contract dialect is unchanged bit for bit.
"""

from __future__ import annotations

from decimal import Decimal
from fractions import Fraction
from typing import Any, Mapping

from .errors import EXECUTION_FAILURE
from .failures import Exhausted, Failure, Invalid
from .patterns import PatternTimeout
from .json_values import describe, equality_key
from .site import Check, Site

_ANNOTATION_KEYS = frozenset({
    "title", "description", "default", "examples", "deprecated", "readOnly", "writeOnly",
    "$comment", "format", "contentEncoding", "contentMediaType", "$schema", "x-mcp-header",
})


# --- const, allOf -------------------------------------------------------------------


def compile_const(value: Any, site: Site) -> Check:
    key, path, shown = equality_key(site.json_value(value)), site.path, describe(value)

    def check_const(v: Any) -> Failure | None:
        if equality_key(v) != key:
            return Invalid("const", path, f"{describe(v)} is not the required value {shown}")

    return check_const


def compile_all_of(value: Any, site: Site) -> Check:
    branches = tuple(site.sub(b, i) for i, b in enumerate(site.array(value, non_empty=True)))

    def check_all_of(v: Any) -> Failure | None:
        for branch in branches:
            failure = branch(v)
            if failure is not None:
                return failure  # the first failing branch explains itself, with its own schema path
        return None

    return check_all_of


# --- numbers and strings ---------------------------------------------------------------


def compile_max_length(value: Any, site: Site) -> Check:
    bound, path = site.count(value), site.path

    def check_max_length(v: str) -> Failure | None:
        if len(v) > bound:
            return Invalid("maxLength", path, f"{describe(v)} is longer than {bound} character{'s' * (bound != 1)}")

    return check_max_length


def compile_exclusive_minimum(value: Any, site: Site) -> Check:
    if type(value) is bool:
        raise site.unsupported("boolean exclusiveMinimum is draft-04 syntax; use a numeric exclusiveMinimum")
    bound, path = site.number(value), site.path

    def check_exclusive_minimum(v: int | float) -> Failure | None:
        if v <= bound:
            return Invalid("exclusiveMinimum", path, f"{describe(v)} must be greater than {describe(bound)}")

    return check_exclusive_minimum


def compile_exclusive_maximum(value: Any, site: Site) -> Check:
    if type(value) is bool:
        raise site.unsupported("boolean exclusiveMaximum is draft-04 syntax; use a numeric exclusiveMaximum")
    bound, path = site.number(value), site.path

    def check_exclusive_maximum(v: int | float) -> Failure | None:
        if v >= bound:
            return Invalid("exclusiveMaximum", path, f"{describe(v)} must be less than {describe(bound)}")

    return check_exclusive_maximum


def _exact(number: int | float) -> int | Fraction:
    # A float means the decimal it was written as (0.1 is one tenth, not the nearest binary fraction).
    return number if type(number) is int else Fraction(Decimal(repr(number)))


def compile_multiple_of(value: Any, site: Site) -> Check:
    divisor = site.number(value)
    if divisor <= 0:
        raise site.malformed(f"multipleOf must be greater than 0, not {describe(divisor)}")
    exact, path = _exact(divisor), site.path

    def check_multiple_of(v: int | float) -> Failure | None:
        if type(v) is int and type(exact) is int:
            if v % exact == 0:
                return
        elif Fraction(_exact(v)) / exact % 1 == 0:
            return
        return Invalid("multipleOf", path, f"{describe(v)} is not a multiple of {describe(divisor)}")

    return check_multiple_of


# --- objects -------------------------------------------------------------------------


def compile_min_properties(value: Any, site: Site) -> Check | None:
    bound, path = site.count(value), site.path
    if bound == 0:
        return None

    def check_min_properties(v: dict) -> Failure | None:
        if len(v) < bound:
            return Invalid("minProperties", path, f"the object has fewer than {bound} properties")

    return check_min_properties


def compile_max_properties(value: Any, site: Site) -> Check:
    bound, path = site.count(value), site.path

    def check_max_properties(v: dict) -> Failure | None:
        if len(v) > bound:
            return Invalid("maxProperties", path, f"the object has more than {bound} properties ({len(v)})")

    return check_max_properties


def compile_property_names(value: Any, site: Site) -> Check:
    check, path = site.sub(value), site.path

    def check_property_names(v: dict) -> Failure | None:
        for name in v:
            failure = check(name)
            if failure is not None:
                if failure.kind is EXECUTION_FAILURE:
                    return failure
                return Invalid("propertyNames", path, f"the property name {describe(name)} is not allowed:", [failure])
        return None

    return check_property_names


def compile_pattern_properties(value: Any, site: Site) -> Check | None:
    if not isinstance(value, Mapping):
        raise site.malformed(f"patternProperties must be an object mapping patterns to schemas, not {describe(value)}")
    rules = tuple((site.compiler.name_pattern(source, site, source), site.sub(schema, source))
                  for source, schema in value.items())
    if not rules:
        return None
    path = site.path

    def check_pattern_properties(v: dict) -> Failure | None:
        for name, item in v.items():
            for matches, check in rules:
                try:
                    hit = matches(name)
                except PatternTimeout:
                    return Exhausted("patternProperties", path, f"matching the property name {describe(name)} "
                                     "exceeded the work limit; the object could not be checked")
                if hit:
                    failure = check(item)
                    if failure is not None:
                        failure.tokens.append(name)
                        return failure
        return None

    return check_pattern_properties


def compile_dependent_required(value: Any, site: Site) -> Check | None:
    if not isinstance(value, Mapping):
        raise site.malformed(f"dependentRequired must be an object, not {describe(value)}")
    rules = []
    for name, needed in value.items():
        if type(needed) is not list or any(type(n) is not str for n in needed):
            raise site.malformed(f"each {site.keyword} entry must be an array of property names", name)
        if needed:
            rules.append((name, tuple(needed)))
    path, keyword = site.path, site.keyword

    def check_dependent_required(v: dict) -> Failure | None:
        for name, needed in rules:
            if name in v:
                for other in needed:
                    if other not in v:
                        return Invalid(keyword, path, f'property "{other}" is required when "{name}" is present')

    return check_dependent_required if rules else None


def compile_dependent_schemas(value: Any, site: Site) -> Check | None:
    if not isinstance(value, Mapping):
        raise site.malformed(f"dependentSchemas must be an object, not {describe(value)}")
    rules = tuple((name, site.sub(schema, name)) for name, schema in value.items())

    def check_dependent_schemas(v: dict) -> Failure | None:
        for name, check in rules:
            if name in v:
                failure = check(v)
                if failure is not None:
                    return failure
        return None

    return check_dependent_schemas if rules else None


def compile_dependencies(value: Any, site: Site) -> Check | None:
    """draft-07's dependencies: an array means dependentRequired, a schema dependentSchemas."""
    if not isinstance(value, Mapping):
        raise site.malformed(f"dependencies must be an object, not {describe(value)}")
    needed = {n: d for n, d in value.items() if type(d) is list}
    schemas = {n: d for n, d in value.items() if type(d) is not list}
    checks = [c for c in (compile_dependent_required(needed, site), compile_dependent_schemas(schemas, site)) if c]
    if not checks:
        return None
    if len(checks) == 1:
        return checks[0]
    first, second = checks

    def check_dependencies(v: dict) -> Failure | None:
        return first(v) or second(v)

    return check_dependencies


# --- arrays --------------------------------------------------------------------------


def compile_prefix_items(value: Any, site: Site) -> Check:
    checks = tuple(site.sub(schema, i) for i, schema in enumerate(site.array(value, non_empty=True)))

    def check_prefix_items(v: list) -> Failure | None:
        for index, (item, check) in enumerate(zip(v, checks)):
            failure = check(item)
            if failure is not None:
                failure.tokens.append(index)
                return failure

    return check_prefix_items


def compile_unique_items(value: Any, site: Site) -> Check | None:
    if type(value) is not bool:
        raise site.malformed(f"uniqueItems must be true or false, not {describe(value)}")
    if not value:
        return None
    path = site.path

    def check_unique_items(v: list) -> Failure | None:
        seen: dict = {}
        for index, item in enumerate(v):
            first = seen.setdefault(equality_key(item), index)
            if first != index:
                return Invalid("uniqueItems", path, f"items {first} and {index} are equal; all items must be unique")

    return check_unique_items


def compile_contains(value: Any, site: Site) -> Check | None:
    check, path = site.sub(value), site.path
    low = site.sibling("minContains").count(site.schema["minContains"]) if "minContains" in site.schema else 1
    high = site.sibling("maxContains").count(site.schema["maxContains"]) if "maxContains" in site.schema else None

    def check_contains(v: list) -> Failure | None:
        count = 0
        for item in v:
            failure = check(item)
            if failure is None:
                count += 1
            elif failure.kind is EXECUTION_FAILURE:
                return failure
        if count < low:
            return Invalid("contains", path, f"{describe(v)} has {count} item(s) matching the contains schema; at least {low} required")
        if high is not None and count > high:
            return Invalid("maxContains", path, f"{describe(v)} has {count} items matching the contains schema; at most {high} allowed")

    return check_contains


def compile_contains_bound(value: Any, site: Site) -> None:
    site.count(value)  # enforced by compile_contains; without contains it has no effect
    return None


# --- conditionals ----------------------------------------------------------------------


def compile_if(value: Any, site: Site) -> Check | None:
    condition = site.sub(value)
    then = site.sibling("then").sub(site.schema["then"]) if "then" in site.schema else None
    otherwise = site.sibling("else").sub(site.schema["else"]) if "else" in site.schema else None
    if then is None and otherwise is None:
        return None

    def check_if(v: Any) -> Failure | None:
        failure = condition(v)
        if failure is None:
            return then(v) if then is not None else None
        if failure.kind is EXECUTION_FAILURE:
            return failure
        return otherwise(v) if otherwise is not None else None

    return check_if


def compile_then_else(value: Any, site: Site) -> None:
    if "if" not in site.schema:
        site.sub(value)  # without if it has no effect, but the complete schema is still preflighted
    return None


# --- references ----------------------------------------------------------------------


def compile_ref(value: Any, site: Site) -> Check:
    return site.compiler.ref(site.string(value), site)


def compile_defs(value: Any, site: Site) -> None:
    if not isinstance(value, Mapping):
        raise site.malformed(f"{site.keyword} must be an object mapping names to schemas, not {describe(value)}")
    for name, schema in value.items():
        site.compiler.cell(schema, site.tokens + (name,), site.depth + 1)
    return None


def compile_id(value: Any, site: Site) -> None:
    site.string(value)
    if site.tokens != ("$id",):
        raise site.unsupported("$id below the root changes the base URI for $ref; only a root $id is supported")
    return None


# --- annotations ------------------------------------------------------------------------


def compile_boolean_annotation(value: Any, site: Site) -> None:
    if type(value) is not bool:
        raise site.malformed(f"{site.keyword} must be true or false, not {describe(value)}")
    return None


def compile_content_schema(value: Any, site: Site) -> None:
    # An annotation in 2020-12 (it describes decoded content); still preflighted like any schema.
    site.sub(value)
    return None


def compile_vendor_annotation(value: Any, site: Site) -> None:
    # Vendor extensions ("x-fastmcp-wrap-result": true, …) mean something to their
    # vendor only: any JSON value is accepted and nothing is asserted.
    site.json_value(value)
    return None


def compile_examples(value: Any, site: Site) -> None:
    site.json_value(site.array(value))
    return None

"""One compile function per keyword of the contract (the table in table.py registers them).

A compile
function receives the keyword's value and its Site; it checks the value's
shape (malformed → ``validation`` error) and returns a closure that checks one
argument value, or None for an annotation. ``applies`` says which JSON values
a check is for, so keywords without ``type`` follow JSON Schema applicability:
the node only calls an object check with a dict, a number check with an int
or a float, and so on.
"""

from __future__ import annotations

from typing import Any, Iterable, Mapping

from .failures import Exhausted, Failure, Invalid
from .json_values import describe, equality_key
from .nodes import check_member_domain
from .patterns import PatternError, PatternTimeout, compile_pattern
from .site import Check, Site

CONTRACT = "contract"
EXTENDED = "extended"

# JSON Schema type name → the exact Python types a JSON parser produces for it.
TYPES: dict[str, tuple[type, ...]] = {
    "object": (dict,),
    "array": (list,),
    "string": (str,),
    "integer": (int,),
    "number": (int, float),
    "boolean": (bool,),
    "null": (type(None),),
}


# --- type ------------------------------------------------------------------

_JSON_TYPES = frozenset(t for types in TYPES.values() for t in types)
_TYPE_SETS: dict[frozenset, frozenset] = {}


def type_set(types: Iterable[type]) -> frozenset:
    """One shared frozenset per distinct set of types, for every schema compiled in the process.

    A gate validates calls to many tools in turn, so a check's data is often
    out of the CPU's caches when it runs; the few sets of types every type check
    asks are then read from one place that every tool's calls keep warm.
    """
    key = frozenset(types)
    return _TYPE_SETS.setdefault(key, key)


def compile_type(value: Any, site: Site) -> Check:
    names = [value] if type(value) is str else site.array(value, non_empty=True)
    for i, name in enumerate(names):
        if type(name) is not str:
            raise site.malformed(f"type entries must be strings, not {describe(name)}", *([i] if names is value else []))
        if name not in TYPES:
            raise site.unsupported(f'the type "{name}" is not one of {", ".join(TYPES)}')
    if len(set(names)) != len(names):
        raise site.malformed("type must not list a type twice")
    allowed = type_set(t for name in names for t in TYPES[name])
    integral_floats = "integer" in names and "number" not in names
    path = site.path
    expected = " or ".join(f'"{n}"' for n in names)

    def check_type(v: Any) -> Failure | None:
        t = type(v)
        if t is float:
            if v - v != 0:  # NaN or an infinity: not a JSON number at all
                return Invalid("", "", f"{v!r} is not a JSON number (JSON has no NaN or Infinity)")
            if t in allowed or (integral_floats and v.is_integer()):
                return
        elif t in allowed:
            return
        elif t not in _JSON_TYPES:  # a tuple, a set, a dict subclass…: no JSON value at all
            return Invalid("", "", f"a Python {t.__name__} is not a JSON value")
        return Invalid("type", path, f"{describe(v)} is not of type {expected}")

    # Values of these exact types pass without calling check_type (see nodes.combine).
    check_type.exact = type_set(allowed - {float})  # type: ignore[attr-defined]
    return check_type


# --- object keywords --------------------------------------------------------


def _fused_additional(site: Site) -> str | None:
    """The additionalProperties key that properties enforces in its own pass, if any.

    Walking the object once for both is the common case (and the fast one);
    patternProperties also declares names, so then additionalProperties runs alone.
    """
    if site.dialect == EXTENDED and "patternProperties" in site.schema:
        return None
    for key in ("additionalProperties", "additional_properties"):
        if key in site.schema:
            return key
    return None


def compile_properties(value: Any, site: Site) -> Check | None:
    if not isinstance(value, Mapping):
        raise site.malformed(f"properties must be an object mapping names to schemas, not {describe(value)}")
    for name in value:
        if type(name) is not str:
            raise site.malformed(f"property names must be strings, not {describe(name)}", name)
    checks = {name: site.sub(schema, name) for name, schema in value.items()}
    key = _fused_additional(site)
    extra = site.schema[key] if key is not None else True
    required = _required_names(site.sibling("required")) if "required" in site.schema else ()
    required_path = site.sibling("required").path
    if extra is True and not checks and not required:
        return None
    # name → (check, value types that pass it outright): a property whose schema is
    # a bare type check ({"type": "string", "description": …}) costs no call.
    # ``otherwise`` is what such a check does with a value of any other type: the walk,
    # having tested the type already, calls that straight away.
    entries = {name: (getattr(check, "otherwise", check), getattr(check, "passes", _NOTHING))
               for name, check in checks.items()}
    get = entries.get
    order = list(checks)
    later: dict[str, frozenset] = {}  # a declared name → the names declared after it, built on first use

    def resume(v: dict, failed: str) -> Failure | None:
        """The walk of every variant below, started from what the fast path already knows.

        The generated code asks for the required names and every undeclared member
        first, then the declared members in the schema's order, and it said no first
        in the member ``failed``. This walk goes in the arguments' order, so of the
        members before ``failed`` only those declared later in the schema are still
        unknown; every other one passed, and the first failure here is the one the
        whole walk would report. None means the two disagree: the caller then runs
        the whole walk.
        """
        after = later.get(failed)
        if after is None:
            after = later[failed] = frozenset(order[order.index(failed) + 1:])
        for name, item in v.items():
            if name in after or name == failed:
                check, passes = entries[name]
                if type(item) not in passes:
                    failure = check(item)
                    if failure is not None:
                        failure.tokens.append(name)
                        return failure
                if name == failed:
                    return None
        return None

    if extra is True and not site.compiler.ensured[-1] and not _closes(site.schema):
        # An open object whose own value is not yet known to be JSON: the members no
        # subschema declares are held to the JSON domain here, in the same pass.

        def check_open_properties(v: dict) -> Failure | None:
            for name in required:
                if name not in v:
                    return Invalid("required", required_path, f'missing required property "{name}"')
            for name, item in v.items():
                entry = get(name)
                if entry is None:
                    if type(name) is not str:
                        return Invalid("", "", f"object key {name!r} is not a string")
                    t = type(item)
                    if t is str or t is int or t is bool or item is None:
                        continue
                    failure = check_member_domain(item)
                else:
                    check, passes = entry
                    if type(item) in passes:
                        continue
                    failure = check(item)
                if failure is not None:
                    failure.tokens.append(name)
                    return failure
            return None

        check_open_properties.covers_domain = True  # type: ignore[attr-defined]  # see Compiler.node
        check_open_properties.resume = resume  # type: ignore[attr-defined]  # see compiler.explainer
        return check_open_properties
    if extra is True:

        def check_properties(v: dict) -> Failure | None:
            for name in required:
                if name not in v:
                    return Invalid("required", required_path, f'missing required property "{name}"')
            for name, item in v.items():
                entry = get(name)
                if entry is not None:
                    check, passes = entry
                    if type(item) in passes:
                        continue
                    failure = check(item)
                    if failure is not None:
                        failure.tokens.append(name)
                        return failure
            return None

        check_properties.resume = resume  # type: ignore[attr-defined]  # see compiler.explainer
        return check_properties
    extra_path, names = site.sibling(key).path, frozenset(checks)
    allowed = _names(names)
    if extra is False:

        def check_closed(v: dict) -> Failure | None:
            for name in required:
                if name not in v:
                    return Invalid("required", required_path, f'missing required property "{name}"')
            for name, item in v.items():
                entry = get(name)
                if entry is None:
                    if type(name) is not str:
                        return Invalid("", "", f"object key {name!r} is not a string")
                    return Invalid(key, extra_path, _not_allowed(name, allowed))
                check, passes = entry
                if type(item) in passes:
                    continue
                failure = check(item)
                if failure is not None:
                    failure.tokens.append(name)
                    return failure
            return None

        check_closed.resume = resume  # type: ignore[attr-defined]  # see compiler.explainer
        return check_closed
    extra_check = site.sibling(key).sub(extra)

    def check_with_additional(v: dict) -> Failure | None:
        for name in required:
            if name not in v:
                return Invalid("required", required_path, f'missing required property "{name}"')
        for name, item in v.items():
            entry = get(name)
            if entry is None:
                if type(name) is not str:
                    return Invalid("", "", f"object key {name!r} is not a string")
                check = extra_check
            else:
                check = entry[0]
            failure = check(item)
            if failure is not None:
                failure.tokens.append(name)
                return failure

    check_with_additional.resume = resume  # type: ignore[attr-defined]  # see compiler.explainer
    return check_with_additional


_NOTHING: frozenset = frozenset()


def _closes(schema: Mapping) -> bool:
    """additionalProperties (or its alias) is present and not true: every member reaches a check."""
    for key in ("additionalProperties", "additional_properties"):
        if key in schema:
            return schema[key] is not True
    return False


def _not_allowed(name: Any, allowed: str) -> str:
    """``allowed``: _names() of the declared names, rendered once at compile time."""
    return f'property "{name}" is not allowed (no additional properties; allowed: {allowed})'


def _required_names(site: Site) -> tuple[str, ...]:
    names = site.array(site.schema[site.keyword])
    for i, name in enumerate(names):
        if type(name) is not str:
            raise site.malformed(f"required entries must be property names (strings), not {describe(name)}", i)
    return tuple(dict.fromkeys(names))  # repeats change nothing


def compile_required(value: Any, site: Site) -> Check | None:
    names = _required_names(site)
    if not names or isinstance(site.schema.get("properties"), Mapping):
        return None  # none to check, or compile_properties checks them first in its own closure
    path = site.path

    def check_required(v: dict) -> Failure | None:
        for name in names:
            if name not in v:
                return Invalid("required", path, f'missing required property "{name}"')

    return check_required


def compile_additional_properties(value: Any, site: Site) -> Check | None:
    if "properties" in site.schema and _fused_additional(site) == site.keyword:
        return None  # compile_properties enforces it in the same pass
    if value is True:
        return None
    declared = site.compiler.declared_properties(site)
    path, keyword = site.path, site.keyword
    if value is False:
        allowed = _names(declared.names)

        def check_no_additional(v: dict) -> Failure | None:
            for name in v:
                if type(name) is not str:
                    return Invalid("", "", f"object key {name!r} is not a string")
                try:
                    if not declared(name):
                        return Invalid(keyword, path, _not_allowed(name, allowed))
                except PatternTimeout:
                    return name_timeout(name, path)
            return None

        return check_no_additional
    check = site.sub(value)

    def check_additional(v: dict) -> Failure | None:
        for name, item in v.items():
            if type(name) is not str:
                return Invalid("", "", f"object key {name!r} is not a string")
            try:
                if declared(name):
                    continue
            except PatternTimeout:
                return name_timeout(name, path)
            failure = check(item)
            if failure is not None:
                failure.tokens.append(name)
                return failure
        return None

    return check_additional


def name_timeout(name: str, path: str) -> Exhausted:
    return Exhausted("patternProperties", path, f"matching the property name {describe(name)} against "
                     "patternProperties exceeded the work limit; the object could not be checked")


def _names(names: frozenset) -> str:
    shown = sorted(names)[:20]
    text = ", ".join(f'"{n}"' for n in shown)
    return (text + ", …") if len(names) > 20 else (text or "none")


# --- annotations ---------------------------------------------------------------


def compile_string_annotation(value: Any, site: Site) -> None:
    site.string(value)
    return None


# Dialects whose keywords mean what the extended dialect enforces (draft-07 and
# older differ only where the extended keywords say so: $ref siblings, dependencies).
_KNOWN_METASCHEMAS = frozenset({
    "json-schema.org/draft/2020-12/schema", "json-schema.org/draft/2019-09/schema",
    "json-schema.org/draft-07/schema", "json-schema.org/draft-06/schema", "json-schema.org/draft-04/schema",
})


def compile_schema_uri(value: Any, site: Site) -> None:
    uri = site.string(value)
    if site.dialect == EXTENDED:
        bare = uri.split("://", 1)[-1].rstrip("#")
        if bare not in _KNOWN_METASCHEMAS:
            # A custom metaschema may switch vocabularies off or on; enforcing the
            # standard meaning regardless could accept what its author meant to refuse.
            raise site.unsupported(f"the metaschema {describe(uri)} is not a standard JSON Schema dialect")
    return None


def compile_default(value: Any, site: Site) -> None:
    # Never validated against the schema and never inserted: only required to be JSON.
    site.json_value(value)
    return None


# --- any-type assertions ---------------------------------------------------------


def compile_enum(value: Any, site: Site) -> Check:
    choices = site.array(value)
    for i, choice in enumerate(choices):
        site.json_value(choice, i)
    keys = frozenset(equality_key(c) for c in choices)
    path = site.path
    shown = ", ".join(describe(c, limit=30) for c in choices[:10]) + (", …" if len(choices) > 10 else "")

    def check_enum(v: Any) -> Failure | None:
        t = type(v)
        key = v if (t is str or t is int or t is float or v is None) else equality_key(v)
        if key not in keys:
            return Invalid("enum", path, f"{describe(v)} is not one of the allowed values: {shown}" if choices
                          else "no value is allowed here (the enum is empty)")

    return check_enum


# --- numbers -----------------------------------------------------------------


def compile_minimum(value: Any, site: Site) -> Check:
    bound, path = site.number(value), site.path
    if "maximum" in site.schema:  # both bounds in one closure: one call per value, not two
        upper_site = site.sibling("maximum")
        upper, upper_path = upper_site.number(site.schema["maximum"]), upper_site.path

        def check_range(v: int | float) -> Failure | None:
            if v < bound:
                return Invalid("minimum", path, f"{describe(v)} is less than the minimum of {describe(bound)}")
            if v > upper:
                return Invalid("maximum", upper_path, f"{describe(v)} is greater than the maximum of {describe(upper)}")
            return None

        return check_range

    def check_minimum(v: int | float) -> Failure | None:
        if v < bound:
            return Invalid("minimum", path, f"{describe(v)} is less than the minimum of {describe(bound)}")

    return check_minimum


def compile_maximum(value: Any, site: Site) -> Check | None:
    bound, path = site.number(value), site.path
    if "minimum" in site.schema:
        return None  # compile_minimum checks both bounds

    def check_maximum(v: int | float) -> Failure | None:
        if v > bound:
            return Invalid("maximum", path, f"{describe(v)} is greater than the maximum of {describe(bound)}")

    return check_maximum


# --- strings -----------------------------------------------------------------


def compile_min_length(value: Any, site: Site) -> Check | None:
    bound, path = site.count(value), site.path
    if bound == 0:
        return None

    def check_min_length(v: str) -> Failure | None:
        # Python's len() counts code points, which is what JSON Schema counts.
        if len(v) < bound:
            return Invalid("minLength", path, f"{describe(v)} is shorter than {bound} character{'s' * (bound != 1)}")

    return check_min_length


def compile_pattern_keyword(value: Any, site: Site) -> Check:
    source = site.string(value)
    try:
        matches = compile_pattern(source, extended=site.dialect == EXTENDED)
    except PatternError as exc:
        raise site.fail(exc.kind, f"pattern {describe(source)}: {exc.message}") from None
    path, shown = site.path, describe(source)

    def check_pattern(v: str) -> Failure | None:
        try:
            if matches(v):
                return None
        except PatternTimeout:
            return Exhausted(
                "pattern", path,
                f"matching {describe(v)} against the pattern {shown} exceeded the work limit; "
                "the value could not be checked (send a shorter or simpler value)",
            )
        return Invalid("pattern", path, f"{describe(v)} does not match the pattern {shown}")

    return check_pattern


# --- arrays ----------------------------------------------------------------------


def compile_items(value: Any, site: Site) -> Check:
    if type(value) is list:
        hint = "; use prefixItems" if site.dialect == EXTENDED else "; use one schema"
        raise site.unsupported(f"tuple-style items (an array of schemas) are outside the {site.dialect} dialect{hint}")
    check = site.sub(value)
    prefix = site.schema.get("prefixItems") if site.dialect == EXTENDED else None
    # In 2020-12, items applies only to the elements after prefixItems.
    start = len(prefix) if type(prefix) is list else 0

    def check_items(v: list) -> Failure | None:
        for index in range(start, len(v)):
            failure = check(v[index])
            if failure is not None:
                failure.tokens.append(index)
                return failure

    if start == 0:

        def check_items(v: list) -> Failure | None:  # noqa: F811  (the common case, without index arithmetic)
            for index, item in enumerate(v):
                failure = check(item)
                if failure is not None:
                    failure.tokens.append(index)
                    return failure

    return check_items


def compile_min_items(value: Any, site: Site) -> Check | None:
    bound, path = site.count(value), site.path
    if bound == 0:
        return None

    def check_min_items(v: list) -> Failure | None:
        if len(v) < bound:
            return Invalid("minItems", path, f"{describe(v)} has fewer than {bound} item{'s' * (bound != 1)}")

    return check_min_items


def compile_max_items(value: Any, site: Site) -> Check:
    bound, path = site.count(value), site.path

    def check_max_items(v: list) -> Failure | None:
        if len(v) > bound:
            return Invalid("maxItems", path, f"{describe(v)} has more than {bound} item{'s' * (bound != 1)}")

    return check_max_items

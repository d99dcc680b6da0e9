"""The JSON Schema Test Suite (draft 2020-12) run through the validator, group by group.

Where the suite lives: ``$JSON_SCHEMA_TEST_SUITE`` (a draft2020-12 folder), or
else ``<repo>/../shared/json-schema-test-suite/draft2020-12``. Its files are
never copied into this repository. Without them the runner skips, saying why;
with ``REQUIRE_JSON_SCHEMA_TEST_SUITE=1`` in the environment it fails instead.

Each group's schema becomes a property of an object root (tool schemas must
have one) and each test's data that property's value:

    {"type": "object", "properties": {"v": <group schema>}}   with   {"v": <data>}

(local "$ref"s in the group's schema are rebased to keep pointing where they
did: "#/$defs/a" becomes "#/properties/v/$defs/a", and a root "$id" moves to
the new root; this matters only to a dialect that supports "$ref").

Then, for every group, one of two outcomes is required:

- the wrapped schema compiles, and every test's answer equals the suite's
  ``valid`` (a wrong answer is a failure, never a skip); or
- preflight rejects it with ``unsupported_capability`` (or, for the forms listed
  in EXPECTED_OTHER_REJECTIONS, the kind documented there).

An independent oracle (``contract_outside``, written from the contract's text,
not from the validator) also decides whether each group fits the subset, so the
validator can neither reject an in-subset group nor accept one that uses a
keyword outside the table (which would silently drop a constraint).

Adding a dialect is one line in DIALECTS: its name and its oracle (or None to
only require "matches, or rejected as unsupported").
"""

from __future__ import annotations

import json
import os
import re
from pathlib import Path
from typing import Any, Callable, Optional

import pytest

import validator
from validator import InputSchemaError

REPO_ROOT = Path(__file__).resolve().parents[2]
DEFAULT_SUITE = REPO_ROOT.parent / "shared" / "json-schema-test-suite" / "draft2020-12"
SECTION = "JSON Schema Test Suite (draft2020-12)"


def suite_dir() -> Path:
    configured = os.environ.get("JSON_SCHEMA_TEST_SUITE")
    return Path(configured) if configured else DEFAULT_SUITE


# --- an oracle for "does this schema fit the contract subset?" -------------------
# Written from the contract's keyword table, independently of validator/.

CONTRACT_KEYWORDS = frozenset({
    "type", "properties", "required", "additionalProperties", "additional_properties",
    "description", "default", "format", "contentEncoding", "$schema", "x-mcp-header",
    "enum", "minimum", "maximum", "minLength", "pattern", "items", "minItems", "maxItems",
    "oneOf", "anyOf", "not",
})
CONTRACT_TYPES = frozenset({"object", "array", "string", "integer", "number", "boolean", "null"})
# Pattern syntax outside the portable subset: letter or digit escapes, escapes of
# anything but ASCII punctuation, (?…) groups other than (?:…), PCRE verbs, POSIX classes.
_PATTERN_OUTSIDE = re.compile(
    r"\\[A-Za-z0-9]|\\[^!-/:-@\[-`{-~]|\(\?(?!:)|\(\*|\[\[?[:=.][^\]]*[:=.]\]", re.DOTALL
)


def contract_outside(schema: Any, depth: int = 0) -> Optional[str]:
    """Why ``schema`` (a subschema, not a root) is outside the contract subset, or None."""
    if isinstance(schema, bool):
        return "boolean schema"
    if not isinstance(schema, dict):
        return None  # malformed, not unsupported: no suite group has this
    if depth > 64:
        return "nesting deeper than 64"
    for key in schema:
        if key not in CONTRACT_KEYWORDS:
            return f"keyword {key}"
    types = schema.get("type")
    for name in [types] if isinstance(types, str) else types or []:
        if name not in CONTRACT_TYPES:
            return f"type {name}"
    if "oneOf" in schema and "anyOf" in schema:
        return "oneOf beside anyOf"
    if isinstance(schema.get("items"), list):
        return "tuple items"
    pattern = schema.get("pattern")
    if isinstance(pattern, str) and (
        _PATTERN_OUTSIDE.search(pattern) or len(pattern.encode("utf-8")) > 1024
    ):
        return f"pattern {pattern!r}"
    subschemas = list((schema.get("properties") or {}).values())
    for key in ("additionalProperties", "additional_properties"):
        if key in schema and not isinstance(schema[key], bool):
            subschemas.append(schema[key])
    if "items" in schema:
        subschemas.append(schema["items"])
    if "not" in schema:
        subschemas.append(schema["not"])
    for key in ("oneOf", "anyOf"):
        subschemas.extend(schema.get(key) or [])
    for sub in subschemas:
        reason = contract_outside(sub, depth + 1)
        if reason:
            return reason
    return None


# dialect → its oracle (None: no oracle, only "matches or rejected as unsupported";
# test_extended_runs_most_of_the_suite guards the extended dialect against over-rejection).
DIALECTS: dict[str, Optional[Callable[[Any], Optional[str]]]] = {
    "contract": contract_outside,
    "extended": None,
}

# Preflight rejections of a *kind other than* unsupported_capability that are
# expected, keyed by (dialect, file, group description) → (kind, reason). Today
# every out-of-subset group of the suite is rejected as unsupported_capability
# (boolean subschemas and patterns outside the portable subset included), so
# this is empty; keep a reason beside any entry added.
EXPECTED_OTHER_REJECTIONS: dict[tuple[str, str, str], tuple[str, str]] = {}


# --- wrapping a group's schema under an object root ------------------------------------------

# Keywords whose values are schemas (or maps/arrays of schemas); nothing else is
# walked, so a "$ref" inside enum, const, default or examples data stays data.
_SCHEMA_VALUED = {"additionalProperties", "additional_properties", "items", "contains", "not", "if", "then",
                  "else", "propertyNames", "unevaluatedItems", "unevaluatedProperties", "contentSchema"}
_SCHEMA_ARRAYS = {"allOf", "anyOf", "oneOf", "prefixItems"}
_SCHEMA_MAPS = {"properties", "patternProperties", "$defs", "definitions", "dependentSchemas", "dependencies"}


def _rebase_refs(schema: Any, prefix: str) -> Any:
    """``schema`` with each local "$ref" ("#" or "#/…") moved under the JSON Pointer ``prefix``.

    The suite's "#" means the group's schema; once that schema sits at
    /properties/v, "#/$defs/x" must read "#/properties/v/$defs/x" to mean the same.
    """
    if not isinstance(schema, dict):
        return schema
    out = {}
    for key, value in schema.items():
        if key == "$ref" and isinstance(value, str) and (value == "#" or value.startswith("#/")):
            out[key] = "#" + prefix + value[1:]
        elif key in _SCHEMA_VALUED:
            out[key] = _rebase_refs(value, prefix)
        elif key in _SCHEMA_ARRAYS and isinstance(value, list):
            out[key] = [_rebase_refs(v, prefix) for v in value]
        elif key in _SCHEMA_MAPS and isinstance(value, dict):
            out[key] = {k: _rebase_refs(v, prefix) for k, v in value.items()}
        else:
            out[key] = value
    return out


def wrap(schema: Any) -> dict:
    """The group's schema as property "v" of an object root (tool schemas must have one).

    A root "$id" moves up to the new root, which keeps it a root "$id" and keeps
    the base URI of every reference the same.
    """
    root: dict[str, Any] = {"type": "object"}
    if isinstance(schema, dict) and "$id" in schema:
        schema = dict(schema)
        root["$id"] = schema.pop("$id")
    root["properties"] = {"v": _rebase_refs(schema, "/properties/v")}
    return root


# --- collection -----------------------------------------------------------------------


def _groups() -> list:
    root = suite_dir()
    if not root.is_dir():
        return []
    files = sorted(root.glob("*.json")) + sorted((root / "optional").glob("*.json"))
    params = []
    for path in files:
        name = path.relative_to(root).as_posix()
        for index, group in enumerate(json.loads(path.read_text(encoding="utf-8"))):
            for dialect in DIALECTS:
                params.append(pytest.param(
                    dialect, name, index, group,
                    id=f"{dialect}:{name}::{group['description']}",
                ))
    return params


GROUPS = _groups()


def test_suite_is_present(evidence) -> None:
    root = suite_dir()
    if GROUPS:
        evidence.note(SECTION, f"read from {root}")
        return
    reason = (
        f"JSON Schema Test Suite not found at {root} "
        "(set $JSON_SCHEMA_TEST_SUITE to a draft2020-12 folder); the conformance runner did not run"
    )
    evidence.note(SECTION, "SKIPPED: " + reason)
    print("\n*** " + reason + " ***")
    if os.environ.get("REQUIRE_JSON_SCHEMA_TEST_SUITE") == "1":
        pytest.fail(reason + " and REQUIRE_JSON_SCHEMA_TEST_SUITE=1")
    pytest.skip(reason)


def _answer(compiled: validator.CompiledSchema, data: Any) -> Any:
    """True/False, or the InputSchemaError of an execution failure (never an answer)."""
    try:
        compiled.validate({"v": data})
    except InputSchemaError as exc:
        return exc if exc.kind == validator.EXECUTION_FAILURE else False
    return True


@pytest.mark.parametrize("dialect, file, index, group", GROUPS)
def test_group(dialect: str, file: str, index: int, group: dict, evidence) -> None:
    section = f"{SECTION} [{dialect}]"
    for name in ("groups run", "tests run", "groups rejected as unsupported", "tests in rejected groups",
                 "failed groups", "failed tests"):
        evidence.count(section, name, 0)  # print every count, zeros included, in this order
    schema = wrap(group["schema"])
    tests = group["tests"]
    oracle = DIALECTS[dialect]
    outside = oracle(group["schema"]) if oracle else None
    where = f"{file} :: {group['description']}"
    try:
        compiled = validator.compile(schema, dialect=dialect)
    except InputSchemaError as exc:
        expected = EXPECTED_OTHER_REJECTIONS.get((dialect, file, group["description"]))
        if exc.kind == validator.UNSUPPORTED and expected is None:
            if oracle and not outside:
                evidence.count(section, "failed groups")
                pytest.fail(f"{where}: the group fits the {dialect} subset but preflight rejected it: {exc!r}")
            evidence.count(section, "groups rejected as unsupported")
            evidence.count(section, "tests in rejected groups", len(tests))
            return
        if expected is not None and exc.kind == expected[0]:
            evidence.count(section, f"groups rejected as {exc.kind} (expected)")
            return
        evidence.count(section, "failed groups")
        pytest.fail(f"{where}: preflight rejected the group with kind {exc.kind} (expected unsupported_capability): {exc!r}")
    if outside:
        evidence.count(section, "failed groups")
        pytest.fail(f"{where}: the group is outside the {dialect} subset ({outside}) but compiled")
    wrong = []
    for test in tests:
        got = _answer(compiled, test["data"])
        if got is not test["valid"]:
            wrong.append(f"  - {test['description']}: expected valid={test['valid']}, got {got!r} for data {test['data']!r}")
    evidence.count(section, "groups run")
    evidence.count(section, "tests run", len(tests))
    if wrong:
        evidence.count(section, "failed groups")
        evidence.count(section, "failed tests", len(wrong))
        pytest.fail(f"{where}: {len(wrong)} of {len(tests)} tests answered wrongly:\n" + "\n".join(wrong))


def test_oracle_agrees_with_the_contract_table() -> None:
    """The oracle's keyword set is the contract's table; the validator registers the same rows."""
    contract_rows = {name for name, row in validator.KEYWORDS.items() if validator.CONTRACT in row.dialects}
    assert contract_rows == CONTRACT_KEYWORDS


# The extended dialect has no independent oracle; instead, its reach is pinned:
# at least this many of the suite's tests must run (not be rejected at preflight).
# What stays unsupported by design (issue 6): unevaluated*, $dynamicRef/$anchor,
# non-local and $id-relative refs, custom metaschemas, unknown keywords, \p{…}.
EXTENDED_MIN_TESTS_RUN = 1070


def test_extended_runs_most_of_the_suite() -> None:
    if not GROUPS:
        reason = f"JSON Schema Test Suite not found at {suite_dir()}"
        print(f"\n*** {reason} ***")
        if os.environ.get("REQUIRE_JSON_SCHEMA_TEST_SUITE") == "1":
            pytest.fail(reason + " and REQUIRE_JSON_SCHEMA_TEST_SUITE=1")
        pytest.skip(reason)
    run = total = 0
    for param in GROUPS:
        dialect, _file, _index, group = param.values
        if dialect != "extended":
            continue
        total += len(group["tests"])
        try:
            validator.compile(wrap(group["schema"]), dialect="extended")
        except InputSchemaError:
            continue
        run += len(group["tests"])
    print(f"\nextended dialect: {run} of {total} suite tests run ({run / total:.1%})")
    assert run >= EXTENDED_MIN_TESTS_RUN, f"only {run} of {total} tests run under the extended dialect"

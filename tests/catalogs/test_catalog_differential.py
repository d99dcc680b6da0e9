r"""Every supported captured tool: our validator and jsonschema Draft 2020-12 agree.

For each tool whose preflight outcome is "supported" (per
``fixtures/catalogs/expectations.json``, under any recorded dialect), hypothesis
draws arguments from the tool's own ``inputSchema`` — likely-valid values built
from the schema, the same values with one assertion of one node broken
(targeted), and blind mutations (a property dropped, a value replaced by junk or
by a value of a neighbouring type, a number pushed, an unexpected property
added, the root replaced) — and both validators must give the same verdict. ``format`` is asserted by neither (no
format checker is passed to jsonschema, and the contract keeps it an annotation).

Patterns are handled as described in ``catalog_support``: generated strings
never contain LF, CR, U+2028 or U+2029, and strings under a ``pattern`` are
drawn from the pattern over printable ASCII. On such strings ECMAScript
semantics (ours) and Python ``re.search`` (jsonschema's) agree for every
pattern in the captured catalogs, so a pattern-bearing tool is compared like
any other rather than skipped. One residual gap, stated rather than hidden: a
junk string from a blind mutation may land under an extended-dialect pattern
using ``\d``/``\w`` and carry a non-ASCII digit or letter, where Python's
Unicode classes and ECMAScript's ASCII ones differ; no such case arises in the
derandomized run, and ECMAScript pattern semantics are checked against node by
the validator's own pattern differential.

Root rule: ``tools/call`` arguments are a JSON object and the contract keeps the
tool schema root object-only, so a non-object root must be rejected by our
validator even when the schema alone (a root without ``type``) would let
jsonschema accept it; for object roots the verdicts must be identical.

After the random examples, deterministic boundary cases follow: a full exemplar
(every property present) and a required-only one, then, at every node of them,
each value that breaks one assertion of that node's schema (a wrong type, a
non-member of ``enum``/``const``, one past ``minimum``/``maximum``, the
exclusive bound itself, one code point short of ``minLength`` or past
``maxLength`` — astral characters, so UTF-16 counting would be caught —, one
item short/over, a missing required property, an unexpected property under
``additionalProperties: false``, a type no ``oneOf``/``anyOf`` branch allows)
and each value exactly on an inclusive bound (also ``N.0`` for an integer bound).

Every dialect that supports the tool judges the same examples. At least
``EXAMPLES_PER_TOOL`` examples per tool (derandomized, so CI is
reproducible); each tool must also see both a valid and an invalid example, so
the agreement is not vacuous.
"""

from __future__ import annotations

import copy
import os
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings

from tests.catalogs.catalog_support import ArgumentStrategies, count, load_script

jsonschema = pytest.importorskip("jsonschema", reason="jsonschema (the test oracle, in the `test` extra) is not installed")

import validator  # noqa: E402
from validator import InputSchemaError  # noqa: E402

compat = load_script("compat_report")

# At least 20 per tool; CATALOG_EXAMPLES=N explores further (never fewer than 20).
EXAMPLES_PER_TOOL = max(20, int(os.environ.get("CATALOG_EXAMPLES", "20")))
# CATALOG_RANDOM=1: fresh randomness instead of the reproducible derandomized run.
EXPLORE = os.environ.get("CATALOG_RANDOM") == "1"
CATALOGS = compat.load_catalogs()
EXPECTATIONS = compat.load_expectations()


def _supported_cases() -> list[Any]:
    """One case per tool supported under at least one recorded dialect; each case
    checks every dialect that supports the tool on the same generated examples."""
    cases = []
    dialects = sorted(EXPECTATIONS["dialects"])
    for doc in CATALOGS:
        for tool in doc["tools"]:
            supported_in = tuple(
                d for d in dialects
                if EXPECTATIONS["dialects"][d].get(doc["server"], {}).get(tool["name"]) == "supported"
            )
            if supported_in:
                cases.append(pytest.param(supported_in, doc["server"], tool, id=f"{doc['server']}-{tool['name']}"))
    return cases


CASES = _supported_cases()


def _oracle_schema(schema: Any) -> Any:
    """jsonschema ignores the Python-only alias; rename it so the oracle enforces it too."""
    if isinstance(schema, dict):
        out = {}
        for key, value in schema.items():
            if key == "additional_properties" and "additionalProperties" not in schema:
                key = "additionalProperties"
            out[key] = _oracle_schema(value)
        return out
    if isinstance(schema, list):
        return [_oracle_schema(v) for v in schema]
    return schema


@pytest.mark.parametrize(("dialects", "server", "tool"), CASES)
def test_supported_tool_agrees_with_jsonschema(dialects: tuple[str, ...], server: str, tool: dict[str, Any]):
    schema = tool["inputSchema"]
    compiled = {dialect: compat.compiler(dialect)(schema) for dialect in dialects}
    oracle = jsonschema.Draft202012Validator(_oracle_schema(copy.deepcopy(schema)))
    tally = {"examples": 0, "valid": 0, "invalid": 0}

    @settings(
        max_examples=EXAMPLES_PER_TOOL,
        deadline=None,
        derandomize=not EXPLORE,
        database=None,
        suppress_health_check=list(HealthCheck),
    )
    @given(ArgumentStrategies(schema).arguments())
    def check(arguments: Any) -> None:
        before = copy.deepcopy(arguments)
        # MCP arguments are an object; the contract keeps the tool schema root object-only,
        # so a non-object root is invalid for us even where the schema itself (e.g. a
        # root without "type") would let jsonschema accept it.
        expected = oracle.is_valid(arguments) and isinstance(arguments, dict)
        for dialect, validator_ in compiled.items():
            try:
                validator_.validate(arguments)
                ours = True
            except InputSchemaError as err:
                assert err.kind == "validation", (
                    f"{server}/{tool['name']} [{dialect}]: {err.kind} error on {arguments!r}: {err.message}"
                )
                ours = False
            assert arguments == before, "validate() modified the arguments"
            assert ours == expected, (
                f"{server}/{tool['name']} [{dialect}]: arguments {arguments!r} -> ours "
                f"{'valid' if ours else 'invalid'}, jsonschema {'valid' if expected else 'invalid'}"
            )
        tally["examples"] += 1
        tally["valid" if expected else "invalid"] += 1

    check()
    assert tally["examples"] >= EXAMPLES_PER_TOOL, tally
    assert tally["valid"] > 0 and tally["invalid"] > 0, f"{server}/{tool['name']}: one-sided sample {tally}"

    # Deterministic boundary cases: every violation and every inclusive-bound edge
    # value at every node of a full exemplar (and of a required-only one).
    boundary = {"cases": 0, "valid": 0, "invalid": 0}
    for arguments in ArgumentStrategies(schema).boundary_cases():
        expected = oracle.is_valid(arguments) and isinstance(arguments, dict)
        for dialect, validator_ in compiled.items():
            try:
                validator_.validate(arguments)
                ours = True
            except InputSchemaError as err:
                assert err.kind == "validation", (
                    f"{server}/{tool['name']} [{dialect}]: {err.kind} error on {arguments!r}: {err.message}"
                )
                ours = False
            assert ours == expected, (
                f"{server}/{tool['name']} [{dialect}] boundary case: arguments {arguments!r} -> ours "
                f"{'valid' if ours else 'invalid'}, jsonschema {'valid' if expected else 'invalid'}"
            )
        boundary["cases"] += 1
        boundary["valid" if expected else "invalid"] += 1
    assert boundary["cases"] > 0
    section = "jsonschema differential over supported real tools"
    count(section, "tools")
    for dialect in dialects:
        count(section, f"tools supported [{dialect}]")
    count(section, "hypothesis examples", tally["examples"])
    count(section, "hypothesis valid", tally["valid"])
    count(section, "hypothesis invalid", tally["invalid"])
    count(section, "boundary cases", boundary["cases"])
    count(section, "boundary valid", boundary["valid"])
    count(section, "boundary invalid", boundary["invalid"])


def test_differential_covers_every_supported_tool():
    for dialect, servers in sorted(EXPECTATIONS["dialects"].items()):
        supported = {(s, n) for s, tools in servers.items() for n, o in tools.items() if o == "supported"}
        covered = {(p.values[1], p.values[2]["name"]) for p in CASES if dialect in p.values[0]}
        print(f"catalog differential [{dialect}]: {len(covered)} supported tools x >= {EXAMPLES_PER_TOOL} examples")
        assert covered == supported
    assert validator.compile  # the API under test exists

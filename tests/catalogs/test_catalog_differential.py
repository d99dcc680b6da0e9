"""Every supported captured tool: our validator and jsonschema Draft 2020-12 agree.

For each tool whose preflight outcome is "supported" (per
``fixtures/catalogs/expectations.json``, for each recorded dialect), hypothesis
draws arguments from the tool's own ``inputSchema`` — likely-valid values built
from the schema and mutations of them that are likely invalid (a required
property dropped, a value replaced by junk or by a value of a neighbouring type,
a bound overshot, an unexpected property added, the root replaced) — and both
validators must give the same verdict. ``format`` is asserted by neither (no
format checker is passed to jsonschema, and the contract keeps it an annotation).

Patterns are handled as described in ``catalog_support``: generated strings
never contain LF, CR, U+2028 or U+2029, and strings under a ``pattern`` are
drawn from the pattern over printable ASCII. On such strings ECMAScript
semantics (ours) and Python ``re.search`` (jsonschema's) agree for every
pattern in the captured catalogs, so a pattern-bearing tool is compared like
any other rather than skipped.

At least ``EXAMPLES_PER_TOOL`` examples per tool (derandomized, so CI is
reproducible); each tool must also see both a valid and an invalid example, so
the agreement is not vacuous.
"""

from __future__ import annotations

import copy
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings

from catalog_support import ArgumentStrategies, load_script

jsonschema = pytest.importorskip("jsonschema", reason="jsonschema (the test oracle, in the `test` extra) is not installed")

import validator  # noqa: E402
from validator import InputSchemaError  # noqa: E402

compat = load_script("compat_report")

EXAMPLES_PER_TOOL = 20
CATALOGS = compat.load_catalogs()
EXPECTATIONS = compat.load_expectations()


def _supported_cases() -> list[Any]:
    cases = []
    for dialect in sorted(EXPECTATIONS["dialects"]):
        outcomes = EXPECTATIONS["dialects"][dialect]
        for doc in CATALOGS:
            for tool in doc["tools"]:
                if outcomes.get(doc["server"], {}).get(tool["name"]) == "supported":
                    cases.append(
                        pytest.param(dialect, doc["server"], tool, id=f"{dialect}-{doc['server']}-{tool['name']}")
                    )
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


@pytest.mark.parametrize(("dialect", "server", "tool"), CASES)
def test_supported_tool_agrees_with_jsonschema(dialect: str, server: str, tool: dict[str, Any]):
    schema = tool["inputSchema"]
    compiled = compat.compiler(dialect)(schema)
    oracle = jsonschema.Draft202012Validator(_oracle_schema(copy.deepcopy(schema)))
    tally = {"examples": 0, "valid": 0, "invalid": 0}

    @settings(
        max_examples=EXAMPLES_PER_TOOL,
        deadline=None,
        derandomize=True,
        database=None,
        suppress_health_check=list(HealthCheck),
    )
    @given(ArgumentStrategies(schema).arguments())
    def check(arguments: Any) -> None:
        before = copy.deepcopy(arguments)
        expected = oracle.is_valid(arguments)
        try:
            compiled.validate(arguments)
            ours = True
        except InputSchemaError as err:
            assert err.kind == "validation", (
                f"{server}/{tool['name']}: {err.kind} error on {arguments!r}: {err.message}"
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


def test_differential_covers_every_supported_tool():
    supported = sum(
        1 for d in EXPECTATIONS["dialects"].values() for tools in d.values() for o in tools.values() if o == "supported"
    )
    print(f"catalog differential: {len(CASES)} (dialect, tool) cases x >= {EXAMPLES_PER_TOOL} examples")
    assert len(CASES) == supported
    assert validator.compile  # the API under test exists

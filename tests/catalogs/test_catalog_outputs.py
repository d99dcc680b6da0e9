"""The captured outputSchemas (fixtures/catalogs/*.json, `outputSchema` of the tools that declare one).

Every one is preflighted in every dialect without a crash (an InputSchemaError is an
outcome; any other exception propagates and fails), and the share that compiles under
`extended` -- what `--check-output` can check -- is at least 99%. The contract share is
pinned so that a change (a re-capture, a validator change) is noticed and the table in
docs/compatibility.md is regenerated with it.
"""

from __future__ import annotations

import pytest

from tests.catalogs.catalog_support import count, load_script

compat = load_script("compat_report")
CATALOGS = compat.load_catalogs()
DECLARED = sum("outputSchema" in t for doc in CATALOGS for t in doc["tools"])


def _supported(dialect: str) -> int:
    outcomes = compat.compute_output_outcomes(dialect, CATALOGS)
    return sum(1 for server in outcomes.values() for o in server.values() if o == "supported")


def test_captured_output_schemas_exist():
    # 12 of the 31 captured servers declare outputSchemas (191 tools), see docs/compatibility.md.
    assert DECLARED >= 150, DECLARED
    servers = {doc["server"] for doc in CATALOGS if any("outputSchema" in t for t in doc["tools"])}
    assert {"server-filesystem", "server-everything", "mcp-server-time"} <= servers


@pytest.mark.parametrize("dialect", ["contract", "extended"])
def test_every_output_schema_preflights_without_a_crash(dialect: str):
    outcomes = compat.compute_output_outcomes(dialect, CATALOGS)  # raises on a crash
    assert sum(len(o) for o in outcomes.values()) == DECLARED
    for server in outcomes.values():
        for outcome in server.values():
            assert outcome == "supported" or {"kind", "keyword", "schemaPath"} <= set(outcome)
    count("outputSchemas", f"{dialect} compiled", _supported(dialect))


def test_extended_compiles_at_least_99_percent_of_output_schemas():
    ok = _supported("extended")
    assert ok / DECLARED >= 0.99, f"extended compiles {ok} of {DECLARED} captured outputSchemas"


def test_contract_share_of_output_schemas_is_pinned():
    # 77 of 191 (40.3%): mcp-atlassian's vendor keyword `x-fastmcp-wrap-result` (93 tools; an annotation
    # under extended), pydantic's `$defs`/`title`, `propertyNames` and `const` are outside the contract.
    assert (_supported("contract"), DECLARED) == (77, 191)


def test_output_table_is_in_the_compatibility_doc():
    doc = compat.COMPAT_DOC.read_text(encoding="utf-8")
    assert "### outputSchemas" in doc
    assert f"**{DECLARED}**" in doc

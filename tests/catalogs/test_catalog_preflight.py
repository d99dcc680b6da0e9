"""Captured real-server catalogs: shape, and the preflight outcome of every tool.

Every tool of every ``fixtures/catalogs/<server>.json`` is preflighted with
``validator.compile`` under each dialect recorded in
``fixtures/catalogs/expectations.json``; it must not crash, must finish in
bounded time, and must give exactly the recorded outcome ("supported", or the
InputSchemaError's kind, keyword and schemaPath). A changed outcome fails: if
the change is intended, regenerate the file deliberately with
``scripts/compat_report.py --update-expectations [--dialect D]`` and review the diff.
"""

from __future__ import annotations

import json
import signal
import time
from contextlib import contextmanager
from typing import Any

import pytest

import validator
from tests.catalogs.catalog_support import CATALOG_DIR, count, load_script

compat = load_script("compat_report")
capture = load_script("capture_catalog")

CATALOGS = compat.load_catalogs()
EXPECTATIONS = compat.load_expectations()
DIALECTS = sorted(EXPECTATIONS["dialects"])

PER_TOOL_SECONDS = 1.0  # measured bound on one compile
HARD_TIMEOUT_SECONDS = 10  # SIGALRM guard: a hang fails the test instead of the run

MIN_SERVERS = 12
MIN_TOOLS = 250


@contextmanager
def hard_timeout(seconds: int, what: str):
    def on_alarm(signum, frame):  # noqa: ARG001
        raise TimeoutError(f"{what} did not finish within {seconds}s")

    previous = signal.signal(signal.SIGALRM, on_alarm)
    signal.alarm(seconds)
    try:
        yield
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, previous)


def test_catalog_corpus_size():
    servers = len(CATALOGS)
    tools = sum(len(doc["tools"]) for doc in CATALOGS)
    registries = {doc["registry"] for doc in CATALOGS}
    print(f"captured catalogs: {servers} servers, {tools} tools, registries {sorted(registries)}")
    assert servers >= MIN_SERVERS
    assert tools >= MIN_TOOLS
    assert registries == {"npm", "pypi"}


@pytest.mark.parametrize("doc", CATALOGS, ids=[d["server"] for d in CATALOGS])
def test_catalog_fixture_shape(doc: dict[str, Any]):
    assert set(doc) == {"server", "package", "version", "registry", "protocolVersion", "tools"}
    assert doc["registry"] in ("npm", "pypi")
    for key in ("server", "package", "version", "protocolVersion"):
        assert isinstance(doc[key], str) and doc[key]
    # The fixture names a manifest entry with the same pinned package, so --all re-creates it.
    entry = capture.server_entry(doc["server"])
    assert (entry["package"], entry["version"], entry["registry"]) == (doc["package"], doc["version"], doc["registry"])
    names = [t["name"] for t in doc["tools"]]
    assert len(names) == len(set(names)), "duplicate tool names"
    for tool in doc["tools"]:
        assert set(tool) in ({"name", "inputSchema"}, {"name", "inputSchema", "outputSchema"}), tool.get("name")
        assert isinstance(tool["name"], str) and tool["name"]
        assert isinstance(tool["inputSchema"], dict)
        assert isinstance(tool.get("outputSchema", {}), dict)
    # Stored exactly as the capture script writes it (stable diffs on re-capture).
    text = (CATALOG_DIR / f"{doc['server']}.json").read_text(encoding="utf-8")
    assert text == json.dumps(doc, indent=2, ensure_ascii=False) + "\n"


def test_every_manifest_server_has_a_fixture():
    captured = {doc["server"] for doc in CATALOGS}
    assert set(capture.server_names()) == captured


@pytest.mark.parametrize("dialect", DIALECTS)
def test_expectations_cover_exactly_the_captured_tools(dialect: str):
    expected = EXPECTATIONS["dialects"][dialect]
    captured = {doc["server"]: sorted(t["name"] for t in doc["tools"]) for doc in CATALOGS}
    assert sorted(expected) == sorted(captured)
    for server, tools in captured.items():
        assert sorted(expected[server]) == tools, server


@pytest.mark.parametrize("dialect", DIALECTS)
@pytest.mark.parametrize("doc", CATALOGS, ids=[d["server"] for d in CATALOGS])
def test_preflight_outcomes_match_expectations(doc: dict[str, Any], dialect: str):
    compile_fn = compat.compiler(dialect)
    expected = EXPECTATIONS["dialects"][dialect][doc["server"]]
    changed: list[str] = []
    slow: list[str] = []
    for tool in doc["tools"]:
        started = time.perf_counter()
        with hard_timeout(HARD_TIMEOUT_SECONDS, f"compile of {doc['server']}/{tool['name']}"):
            outcome, _ = compat.preflight_outcome(tool["inputSchema"], compile_fn)
        elapsed = time.perf_counter() - started
        if elapsed > PER_TOOL_SECONDS:
            slow.append(f"{tool['name']}: {elapsed:.2f}s")
        if outcome != expected.get(tool["name"]):
            changed.append(f"{tool['name']}: expected {expected.get(tool['name'])!r}, got {outcome!r}")
        # validate_schema is the same preflight without a CompiledSchema.
        try:
            validator.validate_schema(tool["inputSchema"], dialect=dialect)
            again: Any = "supported"
        except validator.InputSchemaError as err:
            again = {"kind": err.kind, "keyword": err.keyword, "schemaPath": err.schema_path}
            assert err.instance_path == "", f"{tool['name']}: a schema error has instance_path {err.instance_path!r}"
            assert err.message.strip(), f"{tool['name']}: empty message"
            assert err.to_dict()["keyword"] == err.keyword
        if again != outcome:
            changed.append(f"{tool['name']}: compile gives {outcome!r} but validate_schema gives {again!r}")
    section = f"preflight [{dialect}]"
    count(section, "servers")
    count(section, "tools", len(doc["tools"]))
    count(section, "supported", sum(1 for o in expected.values() if o == "supported"))
    assert not slow, f"preflight slower than {PER_TOOL_SECONDS}s: {slow}"
    assert not changed, (
        f"{doc['server']} [{dialect}]: preflight outcome changed for {len(changed)} tool(s) "
        "(regenerate deliberately with scripts/compat_report.py --update-expectations):\n" + "\n".join(changed)
    )


def test_unsupported_outcomes_name_a_keyword_and_a_pointer():
    for dialect in DIALECTS:
        for server, tools in EXPECTATIONS["dialects"][dialect].items():
            for name, outcome in tools.items():
                if outcome == "supported":
                    continue
                assert set(outcome) == {"kind", "keyword", "schemaPath"}, (server, name)
                assert outcome["kind"] in ("unsupported_capability", "validation"), (server, name)
                assert outcome["keyword"], (server, name)
                assert outcome["schemaPath"] == "" or outcome["schemaPath"].startswith("/"), (server, name)


def test_compat_report_renders_every_server():
    table = compat.default_report(CATALOGS)
    for doc in CATALOGS:
        assert f"| {doc['server']} |" in table
    total = sum(len(doc["tools"]) for doc in CATALOGS)
    assert f"**{total}**" in table
    for dialect in compat.available_dialects()[1:]:
        assert f" {dialect} supported |" in table


def test_compat_report_dialects_match_expectations():
    """Every dialect the validator has is recorded in the expectations file."""
    assert compat.available_dialects() == DIALECTS


def test_compat_doc_table_is_current():
    """The docs/compatibility.md table is what compat_report.py renders today (run it with --write-docs)."""
    doc = compat.COMPAT_DOC.read_text(encoding="utf-8")
    assert "# Compatibility with real servers" in doc
    assert compat.START_MARKER in doc and compat.END_MARKER in doc
    block = doc.split(compat.START_MARKER, 1)[1].split(compat.END_MARKER, 1)[0]
    assert block.strip() == compat.default_report(CATALOGS).strip(), (
        "docs/compatibility.md table is stale: run scripts/compat_report.py --write-docs"
    )


def test_compat_report_guards_a_validator_without_dialects(monkeypatch: pytest.MonkeyPatch):
    """Before issue 6 validator.compile took no dialect=: contract falls back, others are refused."""
    calls: list[Any] = []

    def old_compile(schema):  # the pre-issue-6 signature
        calls.append(schema)
        return "compiled"

    monkeypatch.setattr(validator, "compile", old_compile)
    assert compat.compiler("contract") is old_compile
    with pytest.raises(compat.DialectUnavailable, match="issue 6"):
        compat.compiler("extended")
    assert compat.available_dialects() == ["contract"]

    def kwargs_compile(schema, **kwargs):  # accepts **kwargs but rejects the keyword at run time
        if kwargs:
            raise TypeError("unexpected keyword argument 'dialect'")
        return "compiled"

    monkeypatch.setattr(validator, "compile", kwargs_compile)
    assert compat.compiler("contract") is kwargs_compile
    with pytest.raises(compat.DialectUnavailable):
        compat.compiler("extended")
    assert compat.main(["--dialect", "extended"]) == 2

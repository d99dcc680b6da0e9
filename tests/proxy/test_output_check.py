"""--check-output off|warn|strict: forwarded tools/call results checked against the tool's outputSchema.

Real processes: the gate driven with JSON lines, in front of the recording
test server listing `shaped` / `shaped2` (an outputSchema; the argument picks
a conforming, violating, missing or isError structured result) and `opaque`
(an outputSchema outside both dialects).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from proxy.core.outputs import OUTPUT_META_KEY
from tests.proxy.conftest import calls, raw_proxy

GOOD = {"content": [{"type": "text", "text": "shaped good"}], "structuredContent": {"total": 3}, "isError": False}
ERROR = {"content": [{"type": "text", "text": "shaped error"}], "structuredContent": {"oops": True}, "isError": True}
BAD = {"content": [{"type": "text", "text": "shaped bad"}], "structuredContent": {"total": -1}, "isError": False}
MISSING = {"content": [{"type": "text", "text": "shaped missing"}], "isError": False}


async def run_calls(record: Path, mode: str, plan: list[tuple[str, str]], *options: str):
    """Call each (tool, result kind) in order through a gate in `mode`; (results by index, gate stderr)."""
    async with raw_proxy(record, "--check-output", mode, *options, UPSTREAM_OUTPUTS="1") as session:
        await session.initialize()
        results = []
        for i, (tool, kind) in enumerate(plan, start=1):
            reply = await session.request(i, "tools/call", {"name": tool, "arguments": {"result": kind}})
            assert "result" in reply, reply
            results.append(reply["result"])
    return results, session.stderr.decode(errors="replace")


def unmeta(result: dict) -> dict:
    return {k: v for k, v in result.items() if k != "_meta"}


@pytest.mark.parametrize("mode", ["off", "warn", "strict"])
async def test_conforming_and_error_results_are_untouched_in_every_mode(record: Path, mode: str) -> None:
    results, stderr = await run_calls(record, mode, [("shaped", "good"), ("shaped", "error"), ("echo", "x")])
    assert unmeta(results[0]) == GOOD
    assert unmeta(results[1]) == ERROR  # isError results are exempt, even with a violating structuredContent
    assert "does not conform" not in stderr
    assert [c["name"] for c in calls(record)] == ["shaped", "shaped"]  # echo's arguments were refused


async def test_off_forwards_violating_results_unchanged(record: Path, tmp_path: Path) -> None:
    audit = tmp_path / "audit.jsonl"
    results, stderr = await run_calls(record, "off", [("shaped", "bad"), ("shaped", "missing")],
                                      "--audit-log", str(audit))
    assert unmeta(results[0]) == BAD
    assert unmeta(results[1]) == MISSING
    assert "outputSchema" not in stderr
    assert not audit.exists() or audit.read_text() == ""


async def test_warn_forwards_and_records_once_per_tool(record: Path, tmp_path: Path) -> None:
    audit = tmp_path / "audit.jsonl"
    plan = [("shaped", "bad"), ("shaped", "bad"), ("shaped", "missing"), ("shaped2", "bad"), ("shaped", "good")]
    results, stderr = await run_calls(record, "warn", plan, "--audit-log", str(audit))
    assert [unmeta(r) for r in results] == [BAD, BAD, MISSING, BAD, GOOD]
    # stderr: once per tool, not once per result
    assert stderr.count("tool 'shaped' returned a result that does not conform") == 1, stderr
    assert stderr.count("tool 'shaped2' returned a result that does not conform") == 1, stderr
    lines = [json.loads(line) for line in audit.read_text().splitlines()]
    assert [(e["tool"], e["kind"], e["requestId"]) for e in lines] == [
        ("shaped", "output_mismatch", 1), ("shaped", "output_mismatch", 2), ("shaped", "output_mismatch", 3),
        ("shaped2", "output_mismatch", 4)]
    assert lines[0]["instancePath"] == "/total" and lines[0]["keyword"] == "minimum"
    assert lines[2]["keyword"] == "structuredContent"
    assert "message" not in lines[0]  # it quotes the result's values: only with --audit-arguments


async def test_strict_replaces_a_violating_result_with_an_error_result(record: Path, tmp_path: Path) -> None:
    audit = tmp_path / "audit.jsonl"
    plan = [("shaped", "bad"), ("shaped", "missing"), ("shaped", "good"), ("shaped", "error")]
    results, stderr = await run_calls(record, "strict", plan, "--audit-log", str(audit))
    bad, missing, good, error = results
    for replaced, keyword, pointer in ((bad, "minimum", "/total"), (missing, "structuredContent", "")):
        assert replaced["isError"] is True
        assert "structuredContent" not in replaced  # the replacement never violates the schema itself
        detail = replaced["_meta"][OUTPUT_META_KEY]
        assert detail["keyword"] == keyword and detail["instancePath"] == pointer
        text = replaced["content"][0]["text"]
        assert "does not conform to the tool's outputSchema" in text and keyword in text
    assert "/total" in bad["content"][0]["text"]
    assert unmeta(good) == GOOD and unmeta(error) == ERROR
    assert [c["name"] for c in calls(record)] == ["shaped"] * 4  # the server did run every call
    assert stderr.count("tool 'shaped' returned a result that does not conform") == 1
    assert "replaced with an error result" in stderr
    assert [json.loads(line)["kind"] for line in audit.read_text().splitlines()] == ["output_mismatch"] * 2


async def test_unsupported_output_schema_is_summarised_and_passed_even_under_strict(record: Path) -> None:
    results, stderr = await run_calls(record, "strict", [("opaque", "bad"), ("opaque", "missing")])
    assert unmeta(results[0]) == BAD and unmeta(results[1]) == MISSING
    assert "1 outputSchema cannot be checked" in stderr
    assert "opaque (outputSchema): unsupported_capability: unevaluatedProperties" in stderr
    assert stderr.count("the outputSchema of tool 'opaque' cannot be checked") == 1


def test_check_reports_output_schema_support(tmp_path: Path) -> None:
    import subprocess
    import sys

    from tests.proxy.conftest import ROOT

    plain = {"type": "object"}
    tools = [
        {"name": "plain", "inputSchema": plain},
        {"name": "shaped", "inputSchema": plain, "outputSchema": {"type": "object", "required": ["total"]}},
        {"name": "opaque", "inputSchema": plain, "outputSchema": {"type": "object", "unevaluatedProperties": False}},
    ]
    path = tmp_path / "catalog.json"
    path.write_text(json.dumps({"tools": tools}))

    def check(*extra: str) -> subprocess.CompletedProcess:
        return subprocess.run([sys.executable, "-m", "proxy", "check", *extra, "--catalog", str(path)],
                              capture_output=True, text=True, cwd=ROOT, timeout=60)

    done = check()
    assert done.returncode == 0, done.stderr  # an unsupported outputSchema does not make the tool unsupported
    line = {row.split()[0]: row for row in done.stdout.splitlines() if row.startswith("  ")}
    assert "output none" in line["plain"]
    assert "output supported" in line["shaped"]
    assert "output UNSUPPORTED (unevaluatedProperties at /unevaluatedProperties)" in line["opaque"]
    assert "outputSchemas (--check-output): 1 checkable, 1 not checkable, 1 tools without one" in done.stdout

    report = json.loads(check("--json").stdout)
    rows = {row["name"]: row for row in report["tools"]}
    assert [rows[n]["outputSchema"] for n in ("plain", "shaped", "opaque")] == ["none", "supported", "unsupported"]
    assert rows["opaque"]["outputError"]["keyword"] == "unevaluatedProperties"
    assert "outputError" not in rows["shaped"]
    assert report["outputSchemas"] == {"none": 1, "supported": 1, "unsupported": 1}


@pytest.mark.parametrize("upstream_kind", ["stdio", "http"])
async def test_strict_over_the_http_listener_and_an_http_upstream(record: Path, upstream_kind: str) -> None:
    """The replacement travels the HTTP answer path like any reply (and results from an HTTP upstream are checked)."""
    from contextlib import AsyncExitStack

    from tests.proxy_http.conftest import answer_messages, http_gate, http_upstream, raw_client

    init = {"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "raw", "version": "0"}}}
    async with AsyncExitStack() as stack:
        upstream = None
        if upstream_kind == "http":
            upstream = f"{await stack.enter_async_context(http_upstream(record, UPSTREAM_OUTPUTS='1'))}/mcp"
        url, _proc = await stack.enter_async_context(
            http_gate(record, "http", upstream, "--check-output", "strict", UPSTREAM_OUTPUTS="1"))
        http = await stack.enter_async_context(raw_client())
        reply = await http.post(url, content=json.dumps(init))
        headers = {"mcp-session-id": reply.headers["mcp-session-id"], "mcp-protocol-version": "2025-11-25"}
        await http.post(url, content=json.dumps({"jsonrpc": "2.0", "method": "notifications/initialized"}),
                        headers=headers)
        results = []
        for i, kind in enumerate(("bad", "good"), start=1):
            call = {"jsonrpc": "2.0", "id": i, "method": "tools/call",
                    "params": {"name": "shaped", "arguments": {"result": kind}}}
            (answer,) = [m for m in answer_messages(await http.post(url, content=json.dumps(call), headers=headers))
                         if m.get("id") == i]
            results.append(answer["result"])
    bad, good = results
    assert bad["isError"] is True and "structuredContent" not in bad
    assert bad["_meta"][OUTPUT_META_KEY]["keyword"] == "minimum"
    assert good["structuredContent"] == {"total": 3}

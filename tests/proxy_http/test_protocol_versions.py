"""The upstream sees the client's own protocol generation and version, including on the gate's own requests."""

from __future__ import annotations

import json
from contextlib import AsyncExitStack
from pathlib import Path

import pytest

from tests.proxy.conftest import calls, records
from tests.proxy_http.conftest import client_for, http_gate, http_upstream, raw_client


@pytest.mark.parametrize("listen", ["stdio", "http"])
async def test_an_auto_client_falling_back_gets_its_calls_through_to_a_legacy_http_upstream(
    record: Path, listen: str
) -> None:
    """The auto client tries 2026-07-28, falls back to 2025-11-25; the gate's own tools/list must follow it."""
    async with AsyncExitStack() as stack:
        base = await stack.enter_async_context(http_upstream(record, UPSTREAM_LEGACY_ONLY="1"))
        if listen == "stdio":
            import sys

            command = [sys.executable, "-m", "proxy", "--upstream", f"{base}/mcp"]
            client = await stack.enter_async_context(client_for("stdio", command, record, mode="auto"))
        else:
            url, _ = await stack.enter_async_context(http_gate(record, "http", f"{base}/mcp"))
            client = await stack.enter_async_context(client_for("http", url, mode="auto"))
        assert client.protocol_version == "2025-11-25"
        result = await client.call_tool("echo", {"text": "no listing first"})  # the client never lists
        assert result.content[0].text == "no listing first"
    assert [c["arguments"] for c in calls(record)] == [{"text": "no listing first"}]
    lists = [p for p in records(record, "post") if p["method"] == "tools/list"]
    assert lists and all(p["version"] == "2025-11-25" for p in lists), lists


async def test_an_older_client_s_version_is_the_one_the_upstream_sees(record: Path) -> None:
    async with http_upstream(record) as base, http_gate(record, "http", f"{base}/mcp") as (url, _):
        async with raw_client() as http:
            init = {"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
                "protocolVersion": "2025-03-26", "capabilities": {}, "clientInfo": {"name": "old", "version": "0"}}}
            reply = await http.post(url, content=json.dumps(init))
            assert reply.json()["result"]["protocolVersion"] == "2025-03-26"
            headers = {"mcp-session-id": reply.headers["mcp-session-id"], "mcp-protocol-version": "2025-03-26"}
            await http.post(url, content=json.dumps({"jsonrpc": "2.0", "method": "notifications/initialized"}),
                            headers=headers)
            call = {"jsonrpc": "2.0", "id": 1, "method": "tools/call",
                    "params": {"name": "echo", "arguments": {"text": "old"}}}
            reply = await http.post(url, content=json.dumps(call), headers=headers)
            assert reply.json()["result"]["content"][0]["text"] == "old"
    posts = [p for p in records(record, "post") if p["method"] != "initialize"]
    assert posts and all(p["version"] == "2025-03-26" for p in posts), posts

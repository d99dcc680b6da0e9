"""A client pinned to 2026-07-28 (no server/discover at all): the first enveloped request opens the catalog."""

from __future__ import annotations

from pathlib import Path

from mcp import Client

from tests.proxy.conftest import calls, environment, params, proxy_command


async def test_pinned_modern_client_without_discover(record: Path) -> None:
    async with Client(params(proxy_command(), environment(record)), mode="2026-07-28", cache=None) as client:
        assert client.protocol_version == "2026-07-28"
        result = await client.call_tool("echo", {"text": "pinned"})  # the very first request
        assert result.content[0].text == "pinned"
        rejected = await client.call_tool("echo", {"text": ""})
        assert rejected.is_error and rejected.structured_content["keyword"] == "minLength"
        assert rejected.result_type == "complete"
    assert [c["arguments"] for c in calls(record)] == [{"text": "pinned"}]

"""The proxy driven by the SDK's own Client, in 2026-07-28 (default) and 2025-11-25 (legacy) mode.

Every test starts real processes: the test's Client, the proxy (`python -m
proxy`), and the recording upstream server behind it; several compare with a
direct session to the same upstream.
"""

from __future__ import annotations

from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import mcp_types as types
import pytest
from mcp import Client
from mcp.shared.exceptions import MCPError

from tests.proxy.conftest import calls, environment, params, proxy_command, records, upstream_command

MODES = {"auto": "2026-07-28", "legacy": "2025-11-25"}
pytestmark = pytest.mark.parametrize("mode", list(MODES))


@asynccontextmanager
async def connect(record: Path, mode: str, *options: str, direct: bool = False, page_size: int = 0, **kwargs: Any):
    command = upstream_command() if direct else proxy_command(*options)
    async with Client(params(command, environment(record, page_size)), mode=mode, cache=None, **kwargs) as client:
        assert client.protocol_version == MODES[mode]
        yield client


async def list_all(client: Client) -> tuple[list[dict[str, Any]], int]:
    tools, cursor, pages = [], None, 0
    while True:
        page = await client.list_tools(cursor=cursor)
        pages += 1
        tools.extend(t.model_dump(by_alias=True, mode="json", exclude_none=True) for t in page.tools)
        cursor = page.next_cursor
        if not cursor:
            return tools, pages


def text_of(result: types.CallToolResult) -> str:
    return result.content[0].text


async def test_listing_through_the_proxy_equals_the_direct_listing(tmp_path: Path, record: Path, mode: str) -> None:
    direct_record = tmp_path / "direct.jsonl"
    async with connect(direct_record, mode, direct=True, page_size=4) as client:
        direct, direct_pages = await list_all(client)
    async with connect(record, mode, page_size=4) as client:
        proxied, pages = await list_all(client)
    assert pages == direct_pages == 3  # 11 tools, 4 per page
    assert proxied == direct
    assert len(proxied) == 11


async def test_the_proxys_own_listing_copies_the_client_envelope(record: Path, mode: str) -> None:
    info = types.Implementation(name="envelope-test", version="9")
    async with connect(record, mode, page_size=4, client_info=info) as client:
        await client.call_tool("echo", {"text": "waits for the catalog"})
    own = [r for r in records(record, "list") if isinstance(r["id"], str)]
    assert len(own) == 3  # every page, with ids the client cannot have used
    assert all(r["id"].startswith("mcp-schema-gate-") for r in own)
    assert len({r["id"] for r in own}) == 3
    for r in own:
        if mode == "legacy":
            assert not (r["meta"] or {}).get("io.modelcontextprotocol/protocolVersion")
        else:
            assert r["meta"]["io.modelcontextprotocol/protocolVersion"] == "2026-07-28"
            assert r["meta"]["io.modelcontextprotocol/clientInfo"]["name"] == "envelope-test"
            assert "io.modelcontextprotocol/clientCapabilities" in r["meta"]


async def test_valid_call_is_forwarded_and_answered(record: Path, mode: str) -> None:
    async with connect(record, mode) as client:
        result = await client.call_tool("echo", {"text": "héllo"})
        assert not result.is_error and text_of(result) == "héllo"
        result = await client.call_tool("add", {"a": 2, "b": 40})
        assert text_of(result) == "42"
    assert [(c["name"], c["arguments"]) for c in calls(record)] == [("echo", {"text": "héllo"}), ("add", {"a": 2, "b": 40})]


INVALID_CALLS = [
    # tool, arguments, kind, keyword, instancePath
    ("echo", {"text": ""}, "validation", "minLength", "/text"),
    ("echo", {"text": "x", "extra": 1}, "validation", "additionalProperties", ""),
    ("echo", {}, "validation", "required", ""),
    ("add", {"a": True, "b": 1}, "validation", "type", "/a"),
    ("titled", {"x": "y"}, "unsupported_capability", "title", ""),
    ("regex", {"s": "a" * 5000}, "execution_failure", "pattern", "/s"),
]


async def test_invalid_calls_are_answered_by_the_gate_and_never_reach_upstream(record: Path, mode: str) -> None:
    async with connect(record, mode) as client:
        for tool, arguments, kind, keyword, instance_path in INVALID_CALLS:
            case = f"{tool} {str(arguments)[:40]}"
            result = await client.call_tool(tool, arguments)
            assert result.is_error is True, case
            data = result.structured_content
            assert (data["kind"], data["keyword"], data["instancePath"]) == (kind, keyword, instance_path), case
            assert set(data) == {"kind", "instancePath", "schemaPath", "keyword", "message", "source"}, case
            assert data["source"] == "inputSchema", case  # the server's own schema refused, not a policy
            assert data["schemaPath"].endswith(keyword) or keyword == "required", case
            assert tool in text_of(result) and data["message"], case
    assert calls(record) == []


async def test_unknown_tool_is_a_protocol_error(record: Path, mode: str) -> None:
    async with connect(record, mode) as client:
        with pytest.raises(MCPError) as caught:
            await client.call_tool("no_such_tool", {})
        assert caught.value.error.code == -32602
        # The session is still usable afterwards.
        assert text_of(await client.call_tool("echo", {"text": "still here"})) == "still here"
    assert [c["name"] for c in calls(record)] == ["echo"]


async def test_reject_as_protocol_error_carries_the_same_object(record: Path, mode: str) -> None:
    async with connect(record, mode, "--reject-as", "protocol-error") as client:
        with pytest.raises(MCPError) as caught:
            await client.call_tool("echo", {"text": ""})
    error = caught.value.error
    assert error.code == -32602
    assert error.data["kind"] == "validation" and error.data["keyword"] == "minLength"
    assert error.data["instancePath"] == "/text"
    assert calls(record) == []


async def test_absent_arguments_validate_as_an_empty_object(record: Path, mode: str) -> None:
    async with connect(record, mode) as client:
        assert text_of(await client.call_tool("noargs")) == "noargs ok"
        result = await client.call_tool("echo")
        assert result.is_error and result.structured_content["keyword"] == "required"
    assert [c["name"] for c in calls(record)] == ["noargs"]


async def test_progress_and_logging_pass_through_as_in_a_direct_session(tmp_path: Path, record: Path, mode: str) -> None:
    async def observe(**connect_args: Any) -> tuple[list, list, str]:
        progress: list[tuple] = []
        logs: list[Any] = []

        async def on_progress(value: float, total: float | None, message: str | None) -> None:
            progress.append((value, total, message))

        async def on_log(params: types.LoggingMessageNotificationParams) -> None:
            logs.append((params.level, params.logger, params.data))

        async with connect(logging_callback=on_log, log_level="info", **connect_args) as client:
            result = await client.call_tool("slow", {"steps": 3}, progress_callback=on_progress)
            await anyio.sleep(0.1)  # notifications are delivered asynchronously
        return progress, logs, text_of(result)

    direct = await observe(record=tmp_path / "direct.jsonl", mode=mode, direct=True)
    proxied = await observe(record=record, mode=mode)
    assert proxied == direct
    assert len(proxied[0]) == 3 and len(proxied[1]) == 3


async def test_elicitation_passes_through(record: Path, mode: str) -> None:
    seen: list[str] = []

    async def on_elicit(context: Any, params: types.ElicitRequestParams) -> types.ElicitResult:
        seen.append(params.message)
        return types.ElicitResult(action="accept", content={"answer": "forty-two"})

    async with connect(record, mode, elicitation_callback=on_elicit) as client:
        result = await client.call_tool("ask", {"question": "what is the answer?"})
    assert seen == ["what is the answer?"]
    assert text_of(result) == 'elicited accept: {"answer": "forty-two"}'
    # 2026-07-28 retries the call with inputResponses; each retry is gated and forwarded.
    assert {c["name"] for c in calls(record)} == {"ask"}


async def test_sampling_passes_through(record: Path, mode: str) -> None:
    prompts: list[str] = []

    async def on_sample(context: Any, params: types.CreateMessageRequestParams) -> types.CreateMessageResult:
        prompts.append(params.messages[0].content.text)
        return types.CreateMessageResult(
            role="assistant", content=types.TextContent(type="text", text="a haiku"), model="test-model"
        )

    async with connect(record, mode, sampling_callback=on_sample) as client:
        result = await client.call_tool("sample", {"prompt": "write a haiku"})
    assert prompts == ["write a haiku"]
    assert text_of(result) == "sampled: a haiku"


async def test_cancellation_reaches_the_upstream(record: Path, mode: str) -> None:
    async with connect(record, mode) as client:
        first_progress = anyio.Event()

        async def on_progress(value: float, total: float | None, message: str | None) -> None:
            first_progress.set()

        async with anyio.create_task_group() as tg:
            tg.start_soon(lambda: client.call_tool("slow", {"steps": 200}, progress_callback=on_progress))
            with anyio.fail_after(10):
                await first_progress.wait()
            tg.cancel_scope.cancel()
        with anyio.fail_after(10):
            while not records(record, "cancelled"):
                await anyio.sleep(0.02)
        # The session goes on after a cancellation.
        assert text_of(await client.call_tool("echo", {"text": "after"})) == "after"
    cancels = [r for r in records(record, "notification") if r["method"] == "notifications/cancelled"]
    assert len(cancels) == 1


async def test_resources_and_prompts_pass_through(tmp_path: Path, record: Path, mode: str) -> None:
    async def observe(**connect_args: Any) -> list[Any]:
        async with connect(**connect_args) as client:
            return [
                (await client.list_resources()).model_dump(exclude={"ttl_ms", "cache_scope"}),
                (await client.read_resource("test://greeting")).model_dump(),
                (await client.list_prompts()).model_dump(exclude={"ttl_ms", "cache_scope"}),
                (await client.get_prompt("greet")).model_dump(),
            ]

    assert await observe(record=record, mode=mode) == await observe(record=tmp_path / "d.jsonl", mode=mode, direct=True)


async def test_a_changed_schema_replaces_the_old_one(record: Path, mode: str) -> None:
    changed = anyio.Event()

    async def on_message(message: Any) -> None:
        if isinstance(message, types.ToolListChangedNotification):
            changed.set()

    async with connect(record, mode, message_handler=on_message) as client:
        assert not (await client.call_tool("mutable", {"x": 1})).is_error
        assert (await client.call_tool("mutable", {"x": "one"})).is_error
        await client.call_tool("flip", {})
        if mode == "legacy":
            # The proxy relists before it forwards list_changed, so by the time
            # the client hears of the change, the gate already enforces it.
            with anyio.fail_after(10):
                await changed.wait()
        else:
            # At 2026-07-28 change notifications travel only on subscriptions/listen;
            # a client learns of the change by listing, and sees the new schema.
            tools, _ = await list_all(client)
            assert next(t for t in tools if t["name"] == "mutable")["inputSchema"]["properties"]["x"] == {
                "type": "string"
            }
        stale = await client.call_tool("mutable", {"x": 1})
        assert stale.is_error and stale.structured_content["keyword"] == "type"
        assert text_of(await client.call_tool("mutable", {"x": "one"})) == "mutable got 'one'"
    assert [c["arguments"] for c in calls(record) if c["name"] == "mutable"] == [{"x": 1}, {"x": "one"}]


async def test_many_concurrent_calls_are_each_answered_once(record: Path, mode: str) -> None:
    count = 500
    outcomes: dict[int, Any] = {}
    async with connect(record, mode) as client:

        async def one(i: int) -> None:
            if i % 5 == 0:
                outcomes[i] = await client.call_tool("add", {"a": i, "b": "not a number"})
            else:
                outcomes[i] = await client.call_tool("add", {"a": i, "b": 1})

        with anyio.fail_after(120):
            async with anyio.create_task_group() as tg:
                for i in range(count):
                    tg.start_soon(one, i)
    assert len(outcomes) == count
    for i, result in outcomes.items():
        if i % 5 == 0:
            assert result.is_error and result.structured_content["instancePath"] == "/b"
        else:
            assert text_of(result) == str(i + 1)
    forwarded = sorted(c["arguments"]["a"] for c in calls(record))
    assert forwarded == [i for i in range(count) if i % 5]

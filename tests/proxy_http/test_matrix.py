"""Every listening side × every upstream side runs the stdio gate's end-to-end scenario.

listen: stdio (the gate as the Client's child), sse://127.0.0.1:0, http://127.0.0.1:0
upstream: the recording test server as a stdio child, or over HTTP+SSE, or over Streamable HTTP.
Plus two gates chained over Streamable HTTP.
"""

from __future__ import annotations

import sys
from contextlib import AsyncExitStack
from pathlib import Path
from typing import Any

import anyio
import mcp_types as types
import pytest

from tests.proxy.conftest import calls
from tests.proxy_http.conftest import client_for, gate_args, http_gate, http_upstream, upstream_command, upstream_url

KINDS = ("stdio", "sse", "http")
_DIRECT: list[list[dict]] = []


def dump_tools(result: types.ListToolsResult) -> list[dict]:
    return [t.model_dump(by_alias=True, mode="json", exclude_none=True) for t in result.tools]


async def direct_listing(tmp_path: Path) -> list[dict]:
    """The upstream's own listing, straight from a direct stdio session (computed once)."""
    if not _DIRECT:
        async with client_for("stdio", upstream_command(), tmp_path / "direct.jsonl") as client:
            _DIRECT.append(dump_tools(await client.list_tools()))
    return _DIRECT[0]


async def scenario(client_factory, record: Path, direct: list[dict]) -> None:
    changed = anyio.Event()
    progress: list[tuple] = []

    async def on_message(message: Any) -> None:
        if isinstance(message, types.ToolListChangedNotification):
            changed.set()

    async def on_progress(value: float, total: float | None, message: str | None) -> None:
        progress.append((value, total, message))

    async def on_elicit(context: Any, params: types.ElicitRequestParams) -> types.ElicitResult:
        return types.ElicitResult(action="accept", content={"answer": "forty-two"})

    async with client_factory(message_handler=on_message, elicitation_callback=on_elicit) as client:
        assert client.protocol_version == "2025-11-25"
        # listing unchanged
        assert dump_tools(await client.list_tools()) == direct
        # a valid call is forwarded and answered
        result = await client.call_tool("echo", {"text": "héllo"})
        assert not result.is_error and result.content[0].text == "héllo"
        # an invalid call is answered by the gate
        rejected = await client.call_tool("echo", {"text": ""})
        assert rejected.is_error and rejected.structured_content["keyword"] == "minLength"
        unsupported = await client.call_tool("titled", {"x": "a"})
        assert unsupported.is_error and unsupported.structured_content["kind"] == "unsupported_capability"
        # progress reaches the caller
        done = await client.call_tool("slow", {"steps": 3}, progress_callback=on_progress)
        assert done.content[0].text == "slow done after 3 steps"
        assert [p[0] for p in progress] == [1, 2, 3]
        # a server-to-client request (elicitation) reaches the client and its answer the server
        asked = await client.call_tool("ask", {"question": "what is the answer?"})
        assert asked.content[0].text == 'elicited accept: {"answer": "forty-two"}'
        # list_changed: relisted before it is forwarded, so the new schema applies at once
        assert (await client.call_tool("mutable", {"x": "one"})).is_error
        await client.call_tool("flip", {})
        with anyio.fail_after(10):
            await changed.wait()
        stale = await client.call_tool("mutable", {"x": 1})
        assert stale.is_error and stale.structured_content["keyword"] == "type"
        assert (await client.call_tool("mutable", {"x": "one"})).content[0].text == "mutable got 'one'"
    # the upstream saw only the valid calls
    assert [(c["name"], c["arguments"]) for c in calls(record)] == [
        ("echo", {"text": "héllo"}), ("slow", {"steps": 3}), ("ask", {"question": "what is the answer?"}),
        ("flip", {}), ("mutable", {"x": "one"}),
    ]


@pytest.mark.parametrize("upstream_kind", KINDS)
@pytest.mark.parametrize("listen_kind", KINDS)
async def test_transport_pair_runs_the_gate_scenario(tmp_path: Path, record: Path, listen_kind: str,
                                                     upstream_kind: str) -> None:
    direct = await direct_listing(tmp_path)
    async with AsyncExitStack() as stack:
        upstream = None
        if upstream_kind != "stdio":
            base = await stack.enter_async_context(http_upstream(record))
            upstream = upstream_url(base, upstream_kind)
        if listen_kind == "stdio":
            target = [sys.executable, "-m", "proxy", *gate_args(upstream)]
        else:
            target, _ = await stack.enter_async_context(http_gate(record, listen_kind, upstream))

        def factory(**kwargs: Any):
            return client_for(listen_kind, target, record, **kwargs)

        with anyio.fail_after(60):
            await scenario(factory, record, direct)


async def test_two_gates_chained_over_streamable_http(tmp_path: Path, record: Path) -> None:
    """The inner gate wants a bearer token; the outer one sends it with --upstream-header."""
    direct = await direct_listing(tmp_path)
    async with http_gate(record, "http", None, "--auth-token-env", "INNER_TOKEN", INNER_TOKEN="chain-token") as (
        inner, _):
        async with http_gate(record, "http", inner, "--upstream-header", "Authorization: Bearer $INNER_TOKEN",
                             INNER_TOKEN="chain-token") as (outer, outer_proc):
            with anyio.fail_after(60):
                await scenario(lambda **kw: client_for("http", outer, **kw), record, direct)
    # both gates built a catalog of their own
    assert f"{len(direct)} tools listed".encode() in outer_proc.stderr, outer_proc.stderr.decode()


@pytest.mark.parametrize("upstream_kind", KINDS)
@pytest.mark.parametrize("listen_kind", ["stdio", "sse", "http"])
async def test_2026_07_28_works_end_to_end(record: Path, listen_kind: str, upstream_kind: str) -> None:
    """The SDK Client's default (auto → 2026-07-28) through every listener (Streamable HTTP: sessionless).

    Toward a Streamable HTTP upstream the gate stamps MCP-Protocol-Version, Mcp-Method,
    Mcp-Name and Mcp-Param-Region (from the tool's x-mcp-header annotation); the SDK
    server refuses a 2026-07-28 request whose headers are missing or disagree.
    """
    async with AsyncExitStack() as stack:
        upstream = None
        if upstream_kind != "stdio":
            base = await stack.enter_async_context(http_upstream(record, UPSTREAM_HEADER_TOOL="1"))
            upstream = upstream_url(base, upstream_kind)
        if listen_kind == "stdio":
            target = [sys.executable, "-m", "proxy", *gate_args(upstream)]
        else:
            target, _ = await stack.enter_async_context(http_gate(record, listen_kind, upstream))
        progress: list[float] = []

        async def on_progress(value: float, total: float | None, message: str | None) -> None:
            progress.append(value)

        with anyio.fail_after(60):
            async with client_for(listen_kind, target, record, mode="auto") as client:
                assert client.protocol_version == "2026-07-28"
                assert (await client.call_tool("echo", {"text": "modern"})).content[0].text == "modern"
                assert (await client.call_tool("echo", {"text": ""})).is_error
                done = await client.call_tool("slow", {"steps": 2}, progress_callback=on_progress)
                assert done.content[0].text == "slow done after 2 steps" and progress == [1, 2]
                if upstream_kind != "stdio":
                    regional = await client.call_tool("regional", {"region": "eu-west 1"})
                    assert not regional.is_error, regional
                    assert regional.content[0].text == "regional called"
    expected = [("echo", {"text": "modern"}), ("slow", {"steps": 2})]
    if upstream_kind != "stdio":
        expected.append(("regional", {"region": "eu-west 1"}))
    assert [(c["name"], c["arguments"]) for c in calls(record)] == expected


ENVELOPE = {"io.modelcontextprotocol/protocolVersion": "2026-07-28",
            "io.modelcontextprotocol/clientInfo": {"name": "raw", "version": "0"},
            "io.modelcontextprotocol/clientCapabilities": {}}


@pytest.mark.parametrize("upstream_kind", KINDS)
async def test_2026_07_28_list_changed_on_a_listen_stream_refreshes_the_gate(record: Path, upstream_kind: str) -> None:
    """At 2026-07-28 a change travels only on `subscriptions/listen`: the gate relists before relaying it.

    The listen request's response is a long-lived stream (toward a Streamable
    HTTP upstream, one POST whose SSE body stays open); its frames reach the
    client, and by the time `notifications/tools/list_changed` does, a call
    valid only under the old schema is refused and never reaches the upstream.
    """
    from tests.proxy.conftest import RawSession, _drain_stderr, environment

    def call(request_id: int, name: str, arguments: dict) -> dict:
        return {"jsonrpc": "2.0", "id": request_id, "method": "tools/call",
                "params": {"name": name, "arguments": arguments, "_meta": ENVELOPE}}

    async with AsyncExitStack() as stack:
        upstream = None
        if upstream_kind != "stdio":
            base = await stack.enter_async_context(http_upstream(record, UPSTREAM_LISTEN="1"))
            upstream = upstream_url(base, upstream_kind)
        command = [sys.executable, "-m", "proxy", *gate_args(upstream)]
        process = await anyio.open_process(command, env=environment(record, UPSTREAM_LISTEN="1"))
        session = RawSession(process)
        async with anyio.create_task_group() as tg:
            tg.start_soon(_drain_stderr, process, session)
            await session.send(call(1, "mutable", {"x": 1}))
            assert (await session.receive_until(lambda m: m.get("id") == 1))[0]["result"]["isError"] is False
            await session.send({"jsonrpc": "2.0", "id": "listen-1", "method": "subscriptions/listen",
                                "params": {"notifications": {"toolsListChanged": True}, "_meta": ENVELOPE}})
            ack, _ = await session.receive_until(lambda m: m.get("method") == "notifications/subscriptions/acknowledged")
            assert ack["params"]["_meta"]["io.modelcontextprotocol/subscriptionId"] == "listen-1"
            await session.send(call(2, "flip", {}))
            changed, _ = await session.receive_until(lambda m: m.get("method") == "notifications/tools/list_changed",
                                                     timeout=15)
            assert changed["params"]["_meta"]["io.modelcontextprotocol/subscriptionId"] == "listen-1"
            await session.send(call(3, "mutable", {"x": 1}))
            stale, _ = await session.receive_until(lambda m: m.get("id") == 3)
            assert stale["result"]["isError"] and stale["result"]["structuredContent"]["keyword"] == "type"
            await session.send(call(4, "mutable", {"x": "one"}))
            fresh, _ = await session.receive_until(lambda m: m.get("id") == 4)
            assert fresh["result"]["content"][0]["text"] == "mutable got 'one'"
            await process.stdin.aclose()
            # The open listen request does not hold the exit for the 10 s answer drain.
            with anyio.fail_after(5):
                await process.wait()
            tg.cancel_scope.cancel()
    assert [c["arguments"] for c in calls(record) if c["name"] == "mutable"] == [{"x": 1}, {"x": "one"}]


@pytest.mark.parametrize("upstream_kind", KINDS)
async def test_2026_07_28_cancellation_reaches_the_upstream(record: Path, upstream_kind: str) -> None:
    """A cancelled 2026-07-28 call stops upstream; toward Streamable HTTP the SDK transport aborts its POST.

    (At 2026-07-28 closing a request's response stream is its cancellation; the
    gate's POST runs on its own connection pool, which must close it.)
    """
    from tests.proxy.conftest import RawSession, _drain_stderr, environment, records, wait_until

    async with AsyncExitStack() as stack:
        upstream = None
        if upstream_kind != "stdio":
            base = await stack.enter_async_context(http_upstream(record))
            upstream = upstream_url(base, upstream_kind)
        process = await anyio.open_process([sys.executable, "-m", "proxy", *gate_args(upstream)],
                                           env=environment(record))
        session = RawSession(process)
        async with anyio.create_task_group() as tg:
            tg.start_soon(_drain_stderr, process, session)
            meta = {**ENVELOPE, "progressToken": "t"}
            await session.send({"jsonrpc": "2.0", "id": 5, "method": "tools/call",
                                "params": {"name": "slow", "arguments": {"steps": 200}, "_meta": meta}})
            await session.receive_until(lambda m: m.get("method") == "notifications/progress")  # it is running
            await session.send({"jsonrpc": "2.0", "method": "notifications/cancelled",
                                "params": {"requestId": 5, "_meta": ENVELOPE}})
            assert await anyio.to_thread.run_sync(lambda: wait_until(lambda: records(record, "cancelled"), timeout=10))
            reply = await session.request(6, "tools/call", {"name": "echo", "arguments": {"text": "after"},
                                                             "_meta": ENVELOPE})
            assert reply["result"]["content"][0]["text"] == "after"  # the session goes on
            await process.stdin.aclose()
            with anyio.fail_after(15):
                await process.wait()
            tg.cancel_scope.cancel()
    assert [c["name"] for c in calls(record)] == ["slow", "echo"]

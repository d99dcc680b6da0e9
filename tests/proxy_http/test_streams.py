"""Streamable HTTP details a naive relay gets wrong, checked on the wire with a raw HTTP client.

- an upstream notification that belongs to a request goes to that request's POST stream
  (progress by its progressToken from a stdio upstream; by the upstream's own POST stream
  from a Streamable HTTP upstream), not to the GET stream;
- a cancelled request's POST stream is released (ended with -32800) and its late answer dropped;
"""

from __future__ import annotations

import json
from contextlib import AsyncExitStack
from pathlib import Path

import anyio
import pytest

from tests.proxy.conftest import calls, records
from tests.proxy_http.conftest import (
    answer_messages,
    http_gate,
    http_upstream,
    raw_client,
    sse_messages,
    wait_for_records,
)

VERSION = "2025-11-25"


async def open_raw_session(http, url: str) -> dict[str, str]:
    init = {"jsonrpc": "2.0", "id": 0, "method": "initialize",
            "params": {"protocolVersion": VERSION, "capabilities": {}, "clientInfo": {"name": "raw", "version": "0"}}}
    reply = await http.post(url, content=json.dumps(init))
    assert reply.status_code == 200, reply.text
    assert "result" in answer_messages(reply)[-1]
    headers = {"mcp-session-id": reply.headers["mcp-session-id"], "mcp-protocol-version": VERSION}
    ack = await http.post(url, content=json.dumps({"jsonrpc": "2.0", "method": "notifications/initialized"}),
                          headers=headers)
    assert ack.status_code == 202
    return headers


async def gate_over(stack: AsyncExitStack, record: Path, upstream_kind: str) -> str:
    upstream = None
    if upstream_kind == "http":
        upstream = f"{await stack.enter_async_context(http_upstream(record))}/mcp"
    url, _ = await stack.enter_async_context(http_gate(record, "http", upstream))
    return url


@pytest.mark.parametrize("upstream_kind", ["stdio", "http"])
async def test_progress_goes_to_the_post_stream_of_its_request(record: Path, upstream_kind: str) -> None:
    async with AsyncExitStack() as stack:
        url = await gate_over(stack, record, upstream_kind)
        async with raw_client() as http:
            headers = await open_raw_session(http, url)
            # No GET stream is open: a notification routed there would be lost.
            call = {"jsonrpc": "2.0", "id": "call-1", "method": "tools/call",
                    "params": {"name": "slow", "arguments": {"steps": 3}, "_meta": {"progressToken": "tok-1"}}}
            with anyio.fail_after(20):
                reply = await http.post(url, content=json.dumps(call), headers=headers)
            assert reply.headers["content-type"].startswith("text/event-stream")  # the call needed a stream
            messages = sse_messages(reply.text)
            progress = [m for m in messages if m.get("method") == "notifications/progress"]
            assert [(p["params"]["progressToken"], p["params"]["progress"]) for p in progress] == [
                ("tok-1", 1), ("tok-1", 2), ("tok-1", 3)]
            assert messages[-1]["id"] == "call-1" and "result" in messages[-1]


@pytest.mark.parametrize("upstream_kind", ["stdio", "http"])
async def test_each_answer_is_json_unless_its_call_sends_more_than_the_reply(record: Path, upstream_kind: str) -> None:
    """A plain call's POST is answered with one JSON body, a call with progress or an elicitation with a stream."""
    async with AsyncExitStack() as stack:
        url = await gate_over(stack, record, upstream_kind)
        async with raw_client() as http:
            headers = await open_raw_session(http, url)
            echo = {"jsonrpc": "2.0", "id": 1, "method": "tools/call",
                    "params": {"name": "echo", "arguments": {"text": "plain"}}}
            reply = await http.post(url, content=json.dumps(echo), headers=headers)
            assert reply.headers["content-type"].startswith("application/json")
            assert reply.json()["result"]["content"][0]["text"] == "plain"
            refused = {"jsonrpc": "2.0", "id": 2, "method": "tools/call",
                       "params": {"name": "echo", "arguments": {"text": ""}}}
            reply = await http.post(url, content=json.dumps(refused), headers=headers)  # the gate's own answer
            assert reply.headers["content-type"].startswith("application/json") and reply.json()["result"]["isError"]
            slow = {"jsonrpc": "2.0", "id": 3, "method": "tools/call",
                    "params": {"name": "slow", "arguments": {"steps": 2}, "_meta": {"progressToken": "p"}}}
            with anyio.fail_after(20):
                reply = await http.post(url, content=json.dumps(slow), headers=headers)
            assert reply.headers["content-type"].startswith("text/event-stream")
            kinds = [m.get("method") or m["id"] for m in sse_messages(reply.text)]
            # (the upstream's log messages name no call, so they go to the GET stream)
            assert [k for k in kinds if k != "notifications/message"] == [
                "notifications/progress", "notifications/progress", 3]
            if upstream_kind == "http":
                # The upstream asks a question on the call's stream (a stdio upstream says nothing of which
                # call a request is for, so there it goes to the GET stream); the answer is a POST of its own.
                ask = {"jsonrpc": "2.0", "id": 4, "method": "tools/call",
                       "params": {"name": "ask", "arguments": {"question": "sure?"}}}
                seen = []
                with anyio.fail_after(20):
                    async with http.stream("POST", url, content=json.dumps(ask), headers=headers) as response:
                        assert response.headers["content-type"].startswith("text/event-stream")
                        async for line in response.aiter_lines():
                            if not (line.startswith("data:") and line[5:].strip()):
                                continue
                            seen.append(json.loads(line[5:]))
                            if seen[-1].get("method") == "elicitation/create":
                                answer = {"jsonrpc": "2.0", "id": seen[-1]["id"],
                                          "result": {"action": "accept", "content": {"answer": "yes"}}}
                                ack = await http.post(url, content=json.dumps(answer), headers=headers)
                                assert ack.status_code == 202
                assert [m.get("method") for m in seen] == ["elicitation/create", None]
                assert seen[-1]["id"] == 4 and "accept" in seen[-1]["result"]["content"][0]["text"], seen
    expected = ["echo", "slow"] + (["ask"] if upstream_kind == "http" else [])
    assert [c["name"] for c in calls(record)] == expected


@pytest.mark.parametrize("upstream_kind", ["stdio", "http"])
async def test_a_cancelled_request_releases_its_stream(record: Path, upstream_kind: str) -> None:
    async with AsyncExitStack() as stack:
        url = await gate_over(stack, record, upstream_kind)
        async with raw_client() as http:
            headers = await open_raw_session(http, url)
            call = {"jsonrpc": "2.0", "id": 7, "method": "tools/call",
                    "params": {"name": "slow", "arguments": {"steps": 400}, "_meta": {"progressToken": 70}}}
            seen: list[dict] = []
            with anyio.fail_after(15):
                async with http.stream("POST", url, content=json.dumps(call), headers=headers) as response:
                    lines = response.aiter_lines()
                    async for line in lines:
                        if line.startswith("data:") and line[5:].strip():
                            seen.append(json.loads(line[5:]))
                            break  # the first progress: the call is running upstream
                    cancel = {"jsonrpc": "2.0", "method": "notifications/cancelled",
                              "params": {"requestId": 7, "reason": "test"}}
                    ack = await http.post(url, content=json.dumps(cancel), headers=headers)
                    assert ack.status_code == 202
                    async for line in lines:  # ends: the stream was released
                        if line.startswith("data:") and line[5:].strip():
                            seen.append(json.loads(line[5:]))
            assert seen[0]["method"] == "notifications/progress"
            assert seen[-1] == {"jsonrpc": "2.0", "id": 7, "error": {"code": -32800, "message": "Request cancelled"}}
            # the session is still usable
            echo = {"jsonrpc": "2.0", "id": 8, "method": "tools/call", "params": {"name": "echo", "arguments": {"text": "x"}}}
            after = answer_messages(await http.post(url, content=json.dumps(echo), headers=headers))
            assert after[-1]["result"]["content"][0]["text"] == "x"
        assert wait_for_records(lambda: records(record, "cancelled"))
    assert [c["name"] for c in calls(record)] == ["slow", "echo"]


@pytest.mark.parametrize("upstream_kind", ["stdio", "http"])
async def test_json_response_mode_answers_in_json_and_moves_progress_to_the_get_stream(
    record: Path, upstream_kind: str
) -> None:
    """--json-response: one JSON body per request POST; a call's progress is not dropped but sent on GET."""
    async with AsyncExitStack() as stack:
        upstream = None
        if upstream_kind == "http":
            upstream = f"{await stack.enter_async_context(http_upstream(record))}/mcp"
        url, _ = await stack.enter_async_context(http_gate(record, "http", upstream, "--json-response"))
        async with raw_client() as http:
            init = {"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
                "protocolVersion": VERSION, "capabilities": {}, "clientInfo": {"name": "raw", "version": "0"}}}
            reply = await http.post(url, content=json.dumps(init))
            assert reply.status_code == 200 and reply.headers["content-type"].startswith("application/json")
            assert reply.json()["result"]["protocolVersion"] == VERSION
            headers = {"mcp-session-id": reply.headers["mcp-session-id"], "mcp-protocol-version": VERSION}
            ack = await http.post(url, content=json.dumps({"jsonrpc": "2.0", "method": "notifications/initialized"}),
                                  headers=headers)
            assert ack.status_code == 202
            on_get: list[dict] = []
            got_three = anyio.Event()

            async def read_get_stream(*, task_status=anyio.TASK_STATUS_IGNORED) -> None:
                async with http.stream("GET", url, headers={**headers, "accept": "text/event-stream"}) as response:
                    assert response.status_code == 200
                    task_status.started()
                    async for line in response.aiter_lines():
                        if line.startswith("data:") and line[5:].strip():
                            on_get.append(json.loads(line[5:]))
                            if len(on_get) == 3:
                                got_three.set()

            with anyio.fail_after(20):
                async with anyio.create_task_group() as tg:
                    await tg.start(read_get_stream)
                    call = {"jsonrpc": "2.0", "id": "call-1", "method": "tools/call", "params": {
                        "name": "slow", "arguments": {"steps": 3}, "_meta": {"progressToken": "tok-1"}}}
                    reply = await http.post(url, content=json.dumps(call), headers=headers)
                    assert reply.headers["content-type"].startswith("application/json")
                    assert reply.json()["id"] == "call-1" and "result" in reply.json()
                    bad = {"jsonrpc": "2.0", "id": "call-2", "method": "tools/call",
                           "params": {"name": "echo", "arguments": {"text": 5}}}
                    refused = (await http.post(url, content=json.dumps(bad), headers=headers)).json()
                    assert refused["id"] == "call-2" and refused["result"]["isError"] is True
                    await got_three.wait()
                    tg.cancel_scope.cancel()
            progress = [(m["params"]["progressToken"], m["params"]["progress"]) for m in on_get
                        if m.get("method") == "notifications/progress"]
            assert progress == [("tok-1", 1), ("tok-1", 2), ("tok-1", 3)]
    assert [c["name"] for c in calls(record)] == ["slow"]  # the invalid echo never reached the upstream

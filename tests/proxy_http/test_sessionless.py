"""The Streamable HTTP listener's sessionless 2026-07-28 path (proxy/listen/sessionless.py), with real processes.

The SDK's Client in its default mode negotiates 2026-07-28 through the gate
(no fallback) in front of a Streamable HTTP upstream and a stdio upstream;
raw POSTs, each on a fresh connection and with no request before them, are
gated like any session's; clients that reuse one another's ids never see
each other's answers; clients with different forwarded credentials are each
checked against the catalog their own credential lists.
"""

from __future__ import annotations

import functools
import json
import sys
from contextlib import AsyncExitStack, asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import mcp_types as types
import pytest
from mcp import Client

from tests.proxy.conftest import calls, environment, params, records, upstream_command
from tests.proxy_http.conftest import (ENVELOPE, SESSIONLESS_VERSION, answer_messages, client_for, http_gate,
                                       http_upstream, raw_client)
from tests.proxy_http.conftest import sessionless_request as request

VERSION = SESSIONLESS_VERSION
UPSTREAMS = ["http", "stdio"]


@asynccontextmanager
async def gate_in_front_of(record: Path, upstream_kind: str, *options: str, **env: str):
    """(gate URL, gate Proc, direct target): the gate's HTTP listener before the recording server."""
    async with AsyncExitStack() as stack:
        upstream = None
        if upstream_kind == "http":
            upstream = f"{await stack.enter_async_context(http_upstream(record, **env))}/mcp"
        url, proc = await stack.enter_async_context(http_gate(record, "http", upstream, *options, **env))
        yield url, proc, upstream


@asynccontextmanager
async def direct_client(record: Path, upstream: str | None, **env: str):
    if upstream is None:
        async with Client(params(upstream_command(), environment(record, **env)), cache=None) as client:
            yield client
    else:
        async with client_for("http", upstream, mode="auto") as client:
            yield client


def listing(result: types.ListToolsResult) -> list[dict[str, Any]]:
    return [tool.model_dump(by_alias=True, mode="json", exclude_none=True) for tool in result.tools]


async def post_fresh(url: str, body: dict, headers: dict[str, str], **extra: str) -> Any:
    """One POST on a connection of its own (a client that shares nothing with any earlier request)."""
    async with raw_client(**headers, **extra) as http:
        return await http.post(url, content=json.dumps(body))


@pytest.mark.parametrize("upstream_kind", UPSTREAMS)
async def test_the_sdk_client_negotiates_2026_07_28_through_the_gate_without_falling_back(
        record: Path, tmp_path: Path, upstream_kind: str) -> None:
    asked: list[str] = []

    async def on_elicit(context: Any, params: types.ElicitRequestParams) -> types.ElicitResult:
        asked.append(params.message)
        return types.ElicitResult(action="accept", content={"answer": "forty-two"})

    progress: list[float] = []

    async def on_progress(value: float, total: float | None, message: str | None) -> None:
        progress.append(value)

    with anyio.fail_after(90):
        async with gate_in_front_of(record, upstream_kind) as (url, proc, upstream):
            async with direct_client(tmp_path / "direct.jsonl", upstream) as direct:
                assert direct.protocol_version == VERSION
                expected = listing(await direct.list_tools())
            before = len(calls(record))
            async with client_for("http", url, mode="auto", elicitation_callback=on_elicit) as client:
                assert client.protocol_version == VERSION
                assert listing(await client.list_tools()) == expected
                assert (await client.call_tool("echo", {"text": "modern"})).content[0].text == "modern"
                refused = await client.call_tool("echo", {"text": 5})
                assert refused.is_error and refused.structured_content["keyword"] == "type"
                # A multi round-trip call: the upstream's input_required result reaches the client, which
                # retries with its answer; the retry is gated again and forwarded.
                asked_result = await client.call_tool("ask", {"question": "what is the answer?"})
                assert asked_result.content[0].text == 'elicited accept: {"answer": "forty-two"}'
                done = await client.call_tool("slow", {"steps": 2}, progress_callback=on_progress)
                assert done.content[0].text == "slow done after 2 steps" and progress == [1, 2]
    assert asked == ["what is the answer?"]
    forwarded = [(c["name"], c["arguments"]) for c in calls(record)[before:]]
    assert ("echo", {"text": 5}) not in forwarded
    assert forwarded[0] == ("echo", {"text": "modern"})
    assert {name for name, _ in forwarded} == {"echo", "ask", "slow"}
    assert b"Mcp-Session-Id" not in proc.stderr


@pytest.mark.parametrize("upstream_kind", UPSTREAMS)
async def test_a_listen_change_refreshes_the_catalog_before_the_client_hears_of_it(
        record: Path, upstream_kind: str) -> None:
    with anyio.fail_after(90):
        async with gate_in_front_of(record, upstream_kind, UPSTREAM_LISTEN="1") as (url, _, _):
            async with client_for("http", url, mode="auto") as client:
                assert client.protocol_version == VERSION
                assert not (await client.call_tool("mutable", {"x": 1})).is_error
                async with client.listen(tools_list_changed=True) as subscription:
                    await client.call_tool("flip", {})
                    async for _event in subscription:
                        break  # the change arrived: the gate has already swapped the new schema in
                    stale = await client.call_tool("mutable", {"x": 1})
                    assert stale.is_error and stale.structured_content["keyword"] == "type"
                    fresh = await client.call_tool("mutable", {"x": "one"})
                    assert fresh.content[0].text == "mutable got 'one'"
    assert [c["arguments"] for c in calls(record) if c["name"] == "mutable"] == [{"x": 1}, {"x": "one"}]


async def test_param_headers_that_disagree_with_the_arguments_are_refused_every_time_and_undeclared_ones_ignored(
        record: Path) -> None:
    """A load balancer in front of the gate may route on `Mcp-Param-*` headers, so one that says something else
    than the body is refused before anything is forwarded, as the SDK's server refuses it; a header that no
    parameter declares is ignored."""
    def call(request_id: int, name: str, arguments: dict) -> tuple[dict, dict[str, str]]:
        return request(request_id, "tools/call", {"name": name, "arguments": arguments})

    with anyio.fail_after(60):
        async with gate_in_front_of(record, "http", UPSTREAM_HEADER_TOOL="1") as (url, _, _):
            body, headers = call(1, "regional", {"region": "eu-west"})
            honest = await post_fresh(url, body, {**headers, "mcp-param-region": "eu-west"})
            assert honest.status_code == 200 and "result" in answer_messages(honest)[-1]
            for request_id in (2, 3):  # the second time, the tool's declarations are known already
                body, headers = call(request_id, "regional", {"region": "eu-west"})
                lying = await post_fresh(url, body, {**headers, "mcp-param-region": "us-east"})
                assert lying.status_code == 400 and lying.json()["error"]["code"] == types.HEADER_MISMATCH
            missing = await post_fresh(url, *call(4, "regional", {"region": "eu-west"}))
            assert missing.status_code == 400 and missing.json()["error"]["code"] == types.HEADER_MISMATCH
            body, headers = call(5, "echo", {"text": "hi"})
            stray = await post_fresh(url, body, {**headers, "mcp-param-region": "us-east"})
            assert stray.status_code == 200 and answer_messages(stray)[-1]["result"]["content"][0]["text"] == "hi"
    assert [(c["name"], c["arguments"]) for c in calls(record)] == [("regional", {"region": "eu-west"}),
                                                                     ("echo", {"text": "hi"})]


async def test_a_lying_param_header_on_the_first_request_a_gate_sees_is_refused_and_audited(
        record: Path, tmp_path: Path) -> None:
    """The headers are compared once the tool's schema is known: a call that arrives before the upstream has
    listed its tools (the first after start) waits for the listing like any other call, and is not let
    through for want of a schema to compare against."""
    audit = tmp_path / "audit.jsonl"
    with anyio.fail_after(60):
        async with gate_in_front_of(record, "http", "--audit-log", str(audit), UPSTREAM_HEADER_TOOL="1") as (url, _, _):
            body, headers = request(1, "tools/call", {"name": "regional", "arguments": {"region": "eu-west"}})
            lying = await post_fresh(url, body, {**headers, "mcp-param-region": "us-east"})
            assert lying.status_code == 400 and lying.json()["error"]["code"] == types.HEADER_MISMATCH
            assert lying.json()["id"] == 1
            body, headers = request(2, "tools/call", {"name": "regional", "arguments": {"region": "eu-west"}})
            honest = await post_fresh(url, body, {**headers, "mcp-param-region": "eu-west"})
            assert honest.status_code == 200 and "result" in answer_messages(honest)[-1]
    assert [(c["name"], c["arguments"]) for c in calls(record)] == [("regional", {"region": "eu-west"})]
    refused = [json.loads(line) for line in audit.read_text().splitlines()]
    assert [(r["tool"], r["kind"]) for r in refused] == [("regional", "header_mismatch")]


@pytest.mark.parametrize("upstream_kind", UPSTREAMS)
async def test_raw_posts_on_fresh_connections_are_gated_with_no_request_before_them(
        record: Path, upstream_kind: str) -> None:
    with anyio.fail_after(60):
        async with gate_in_front_of(record, upstream_kind) as (url, _, _):
            # The very first request the gate ever sees is a call: no discover, no listing before it.
            valid = await post_fresh(url, *request(1, "tools/call", {"name": "echo", "arguments": {"text": "hi"}}))
            assert valid.status_code == 200 and "mcp-session-id" not in valid.headers
            answered = answer_messages(valid)[-1]
            assert answered["id"] == 1 and answered["result"]["content"][0]["text"] == "hi"
            invalid = await post_fresh(url, *request(2, "tools/call", {"name": "echo", "arguments": {"text": ""}}))
            result = answer_messages(invalid)[-1]["result"]
            assert result["isError"] and result["_meta"]["io.github.mcp-schema-gate/refusal"]["keyword"] == "minLength"
            unknown = await post_fresh(url, *request("u", "tools/call", {"name": "nope", "arguments": {}}))
            assert unknown.status_code == 400 and unknown.json()["error"]["code"] == -32602
            assert unknown.json()["id"] == "u"
            # Headers that say something else than the body are refused before anything is forwarded.
            body, headers = request(3, "tools/call", {"name": "echo", "arguments": {"text": "sneaky"}})
            lying = await post_fresh(url, body, {**headers, "mcp-name": "add"})
            assert lying.status_code == 400 and lying.json()["error"]["code"] == types.HEADER_MISMATCH
            no_envelope = await post_fresh(url, {"jsonrpc": "2.0", "id": 4, "method": "tools/list", "params": {}},
                                           {"mcp-protocol-version": VERSION, "mcp-method": "tools/list"})
            assert no_envelope.status_code == 400 and no_envelope.json()["error"]["code"] == -32602
            # No notifications and no standing GET stream on this wire.
            ack = await post_fresh(url, {"jsonrpc": "2.0", "method": "notifications/cancelled",
                                         "params": {"requestId": 1}}, {"mcp-protocol-version": VERSION})
            assert ack.status_code == 202
            async with raw_client(**{"mcp-protocol-version": VERSION}) as http:
                assert (await http.get(url)).status_code == 405
            # No handshake on this path; and one client's attempt must not spoil the shared upstream.
            handshake = await post_fresh(url, *request(6, "initialize", {
                "protocolVersion": VERSION, "capabilities": {}, "clientInfo": {"name": "raw", "version": "0"}}))
            assert handshake.status_code == 404 and handshake.json()["error"]["code"] == -32601
            listed = await post_fresh(url, *request(5, "tools/list"))
            assert "echo" in [tool["name"] for tool in answer_messages(listed)[-1]["result"]["tools"]]
    assert [(c["name"], c["arguments"]) for c in calls(record)] == [("echo", {"text": "hi"})]


@pytest.mark.parametrize("upstream_kind", UPSTREAMS)
async def test_clients_that_reuse_the_same_ids_each_get_their_own_answers(record: Path, upstream_kind: str) -> None:
    """Every client numbers its requests from 1; the shared upstream must never mix them up."""
    clients, rounds = 8, 5
    answers: dict[tuple[int, int], Any] = {}

    async def one_client(n: int) -> None:
        for r in range(rounds):
            text = f"client {n} round {r}"
            reply = await post_fresh(url, *request(1, "tools/call", {"name": "echo", "arguments": {"text": text}}))
            answers[(n, r)] = answer_messages(reply)[-1]

    with anyio.fail_after(90):
        async with gate_in_front_of(record, upstream_kind) as (url, _, _):
            async with anyio.create_task_group() as tg:
                for n in range(clients):
                    tg.start_soon(one_client, n)
    assert len(answers) == clients * rounds
    for (n, r), message in answers.items():
        assert message["id"] == 1
        assert message["result"]["content"][0]["text"] == f"client {n} round {r}"


async def test_each_forwarded_credential_is_checked_against_its_own_catalog(record: Path) -> None:
    """The upstream lists `tenant` with x an integer for alpha and a string for beta."""
    alpha = {"authorization": "Bearer alpha"}
    beta = {"authorization": "Bearer beta"}

    def call(request_id: int, x: Any) -> tuple[dict, dict[str, str]]:
        return request(request_id, "tools/call", {"name": "tenant", "arguments": {"x": x}})

    with anyio.fail_after(60):
        async with gate_in_front_of(record, "http", "--forward-header", "Authorization",
                                    UPSTREAM_TENANT_TOOLS="1") as (url, proc, _):
            outcomes = {}
            for label, credential, x in (("alpha int", alpha, 1), ("beta int", beta, 1),
                                         ("beta str", beta, "b"), ("alpha str", alpha, "a")):
                reply = await post_fresh(url, *call(1, x), **credential)
                outcomes[label] = answer_messages(reply)[-1]["result"]
    assert outcomes["alpha int"]["content"][0]["text"] == "tenant Bearer alpha got 1"
    assert outcomes["beta str"]["content"][0]["text"] == "tenant Bearer beta got 'b'"
    assert outcomes["beta int"]["isError"] and outcomes["alpha str"]["isError"]
    assert [c["arguments"] for c in calls(record) if c["name"] == "tenant"] == [{"x": 1}, {"x": "b"}]
    # Each credential's own listing went upstream with that credential; neither value is ever logged.
    assert b"alpha" not in proc.stderr and b"beta" not in proc.stderr
    assert len([r for r in records(record, "list")]) >= 2


@pytest.mark.parametrize("upstream_kind", UPSTREAMS)
async def test_an_upstream_without_2026_07_28_is_declined_so_clients_fall_back_to_a_session(
        record: Path, upstream_kind: str) -> None:
    with anyio.fail_after(60):
        async with gate_in_front_of(record, upstream_kind, UPSTREAM_LEGACY_ONLY="1") as (url, _, _):
            probe = await post_fresh(url, *request(1, "server/discover"))
            # A JSON body with HTTP 400, or (when the upstream took over a second to answer, as a stdio
            # child that is still starting does) the last event of the request's stream.
            streamed = probe.headers["content-type"].startswith("text/event-stream")
            assert probe.status_code == (200 if streamed else 400)
            error = answer_messages(probe)[-1]["error"]
            assert error["code"] == -32022 and "2025-11-25" in error["data"]["supported"]
            async with client_for("http", url, mode="auto") as client:
                assert client.protocol_version == "2025-11-25"
                assert (await client.call_tool("echo", {"text": "fell back"})).content[0].text == "fell back"


@pytest.mark.parametrize("upstream_kind", UPSTREAMS)
async def test_closing_the_post_cancels_the_call_upstream(record: Path, upstream_kind: str) -> None:
    """At 2026-07-28 a client cancels by closing its request's stream; the upstream's handler is cancelled
    (a stdio child hears notifications/cancelled; toward HTTP the gate closes its upstream POST)."""
    with anyio.fail_after(60):
        async with gate_in_front_of(record, upstream_kind) as (url, _, _):
            body, headers = request(9, "tools/call", {"name": "slow", "arguments": {"steps": 200}})
            body["params"]["_meta"] = {**ENVELOPE, "progressToken": "mine"}
            async with raw_client(**headers) as http:
                async with http.stream("POST", url, content=json.dumps(body)) as response:
                    assert response.headers["content-type"].startswith("text/event-stream")
                    async for line in response.aiter_lines():
                        if line.startswith("data:") and line[5:].strip():
                            first = json.loads(line[5:])
                            assert first["method"] == "notifications/progress"
                            assert first["params"]["progressToken"] == "mine"  # the client's own name, restored
                            break
            while not records(record, "cancelled"):
                await anyio.sleep(0.05)
            after = await post_fresh(url, *request(10, "tools/call", {"name": "echo", "arguments": {"text": "on"}}))
            assert answer_messages(after)[-1]["result"]["content"][0]["text"] == "on"


@pytest.mark.parametrize("upstream_kind", UPSTREAMS)
async def test_json_response_answers_sessionless_calls_in_one_body_and_closing_the_post_still_cancels(
        record: Path, upstream_kind: str) -> None:
    """--json-response: a call's progress is dropped (no GET stream at 2026-07-28) and its reply is one JSON
    body even after more than a second; a subscriptions/listen answer is still a stream; and the client still
    cancels by closing its POST."""
    with anyio.fail_after(60):
        async with gate_in_front_of(record, upstream_kind, "--json-response") as (url, _, _):
            body, headers = request(1, "tools/call", {"name": "slow", "arguments": {"steps": 25}})  # about 1.25 s
            body["params"]["_meta"] = {**ENVELOPE, "progressToken": "mine"}
            slow = await post_fresh(url, body, headers)
            assert slow.status_code == 200 and slow.headers["content-type"] == "application/json"
            assert slow.json()["id"] == 1 and slow.json()["result"]["content"][0]["text"] == "slow done after 25 steps"
            body, headers = request(2, "subscriptions/listen", {"notifications": {"toolsListChanged": True}})
            async with raw_client(**headers) as http:
                async with http.stream("POST", url, content=json.dumps(body)) as listening:
                    assert listening.headers["content-type"].startswith("text/event-stream")
            body, headers = request(3, "tools/call", {"name": "slow", "arguments": {"steps": 200}})
            async with raw_client(**headers) as http:
                async with anyio.create_task_group() as tg:
                    tg.start_soon(functools.partial(http.post, url, content=json.dumps(body)))
                    while len([c for c in calls(record) if c["name"] == "slow"]) < 2:
                        await anyio.sleep(0.05)
                    tg.cancel_scope.cancel()  # the client gives up: its connection closes
            while not records(record, "cancelled"):
                await anyio.sleep(0.05)
            after = await post_fresh(url, *request(4, "tools/call", {"name": "echo", "arguments": {"text": "on"}}))
            assert after.headers["content-type"] == "application/json" and after.json()["result"]["content"][0][
                "text"] == "on"


def test_the_sessionless_path_is_listed_in_help() -> None:
    import subprocess

    out = subprocess.run([sys.executable, "-m", "proxy", "--help"], capture_output=True, text=True, check=True).stdout
    assert "--upstream-pool" in out and "--forward-header" in out and "--catalog-ttl" in out
    assert "sessionless 2026-07-28" in out


async def test_an_upstream_pool_shares_n_stdio_children_among_all_clients(record: Path) -> None:
    """--upstream-pool 2: two children, whatever the number of clients; concurrent calls spread over both."""
    with anyio.fail_after(90):
        async with gate_in_front_of(record, "stdio", "--upstream-pool", "2") as (url, _, _):
            replies: list[Any] = []

            async def slow_call(n: int) -> None:
                reply = await post_fresh(url, *request(1, "tools/call", {"name": "slow", "arguments": {"steps": 3}}))
                replies.append(answer_messages(reply)[-1])

            async with anyio.create_task_group() as tg:
                for n in range(6):
                    tg.start_soon(slow_call, n)
            assert [r["result"]["content"][0]["text"] for r in replies] == ["slow done after 3 steps"] * 6
    assert len({start["pid"] for start in records(record, "start")}) == 2
    assert len([c for c in calls(record) if c["name"] == "slow"]) == 6


@pytest.mark.parametrize("ttl", [None, "0.5"])
async def test_catalog_ttl_relists_a_server_that_changes_its_tools_without_saying_so(
        record: Path, ttl: str | None) -> None:
    """Without subscriptions/listen a 2026-07-28 server's changes are silent; --catalog-ttl bounds how long
    the gate keeps checking calls against the old schema."""
    options = ("--catalog-ttl", ttl) if ttl else ()
    with anyio.fail_after(60):
        async with gate_in_front_of(record, "stdio", *options) as (url, _, _):
            async def mutable(x: Any) -> dict:
                reply = await post_fresh(url, *request(1, "tools/call", {"name": "mutable", "arguments": {"x": x}}))
                return answer_messages(reply)[-1]["result"]

            assert not (await mutable(1))["isError"]
            await post_fresh(url, *request(2, "tools/call", {"name": "flip", "arguments": {}}))
            await anyio.sleep(1.0)
            as_string = await mutable("one")
            as_integer = await mutable(2)
    if ttl:  # relisted: the new schema (x a string) is enforced
        assert not as_string["isError"] and as_integer["isError"]
    else:  # the old schema still holds, as documented: a refusal, never an unchecked call
        assert as_string["isError"] and not as_integer["isError"]


@pytest.mark.parametrize("upstream_kind", UPSTREAMS)
async def test_the_gate_listens_for_tool_changes_itself_when_no_client_does(record: Path, upstream_kind: str) -> None:
    """On a shared upstream that serves subscriptions/listen, the gate keeps a listen stream of its own."""
    async def mutable(url: str, x: Any) -> dict:
        reply = await post_fresh(url, *request(1, "tools/call", {"name": "mutable", "arguments": {"x": x}}))
        return answer_messages(reply)[-1]["result"]

    with anyio.fail_after(60):
        async with gate_in_front_of(record, upstream_kind, UPSTREAM_LISTEN="1") as (url, _, _):
            assert not (await mutable(url, 1))["isError"]
            lists_before = len(records(record, "list"))
            await post_fresh(url, *request(2, "tools/call", {"name": "flip", "arguments": {}}))
            while len(records(record, "list")) == lists_before:  # the gate's own relisting
                await anyio.sleep(0.05)
            await anyio.sleep(0.2)
            assert (await mutable(url, 1))["isError"]
            assert not (await mutable(url, "one"))["isError"]
    assert [c["arguments"] for c in calls(record) if c["name"] == "mutable"] == [{"x": 1}, {"x": "one"}]


async def test_an_idle_shared_child_is_stopped_and_the_next_request_starts_another(record: Path) -> None:
    from tests.proxy.conftest import pid_alive

    async def echo(url: str, text: str) -> str:
        reply = await post_fresh(url, *request(1, "tools/call", {"name": "echo", "arguments": {"text": text}}))
        return answer_messages(reply)[-1]["result"]["content"][0]["text"]

    with anyio.fail_after(60):
        async with gate_in_front_of(record, "stdio", "--idle-timeout", "1") as (url, _, _):
            assert await echo(url, "one") == "one"
            first = records(record, "start")[0]["pid"]
            while pid_alive(first):
                await anyio.sleep(0.1)
            assert await echo(url, "two") == "two"
    assert len(records(record, "start")) == 2


def test_forward_header_with_a_stdio_upstream_is_a_usage_error() -> None:
    import subprocess

    done = subprocess.run([sys.executable, "-m", "proxy", "--listen", "http://127.0.0.1:0", "--forward-header",
                           "X-Tenant", "--", "true"], capture_output=True, text=True, timeout=30)
    assert done.returncode == 2 and "--forward-header" in done.stderr and "HTTP --upstream" in done.stderr


async def test_a_session_is_opened_with_its_forwarded_credential_and_keeps_it(record: Path) -> None:
    """--forward-header applies to sessions too: the session's upstream gets the credential of its initialize,
    and a request in that session carrying another credential is refused (403), never forwarded."""
    from mcp.client.streamable_http import streamable_http_client
    from mcp.shared._httpx_utils import create_mcp_http_client

    with anyio.fail_after(60):
        async with gate_in_front_of(record, "http", "--forward-header", "Authorization",
                                    UPSTREAM_TENANT_TOOLS="1") as (url, _, _):
            async with create_mcp_http_client(headers={"Authorization": "Bearer beta"}) as http:
                async with Client(streamable_http_client(url, http_client=http), mode="legacy", cache=None) as client:
                    assert (await client.call_tool("tenant", {"x": "b"})).content[0].text == "tenant Bearer beta got 'b'"
                    assert (await client.call_tool("tenant", {"x": 1})).is_error
            async with raw_client(authorization="Bearer alpha") as raw:
                init = {"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
                    "protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "raw", "version": "0"}}}
                opened = await raw.post(url, content=json.dumps(init))
                session = {"mcp-session-id": opened.headers["mcp-session-id"], "mcp-protocol-version": "2025-11-25"}
                call = {"jsonrpc": "2.0", "id": 1, "method": "tools/call",
                        "params": {"name": "tenant", "arguments": {"x": 7}}}
                switched = await raw.post(url, content=json.dumps(call),
                                          headers={**session, "authorization": "Bearer beta"})
                assert switched.status_code == 403
                kept = await raw.post(url, content=json.dumps(call), headers=session)
                assert answer_messages(kept)[-1]["result"]["content"][0]["text"] == "tenant Bearer alpha got 7"
    assert [c["arguments"] for c in calls(record) if c["name"] == "tenant"] == [{"x": "b"}, {"x": 7}]


async def test_an_unreachable_upstream_is_said_so_and_tried_again_on_the_next_request(record: Path) -> None:
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]  # nothing listens here once the socket is closed
    with anyio.fail_after(60):
        async with http_gate(record, "http", f"http://127.0.0.1:{port}/mcp") as (url, proc):
            for attempt in range(2):
                reply = await post_fresh(url, *request(attempt, "tools/call",
                                                       {"name": "echo", "arguments": {"text": "x"}}))
                error = answer_messages(reply)[-1]["error"]
                assert error["code"] == types.INTERNAL_ERROR and "cannot be reached" in error["message"]
    assert proc.stderr.count(b"cannot be reached") >= 2  # the second request tried again


HOSTILE_BODIES = {
    "duplicate arguments": '{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo",'
                           '"arguments":{"text":"ok"},"arguments":{"text":5},"_meta":%s}}',
    "case variant of arguments": '{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo",'
                                 '"arguments":{"text":"ok"},"Arguments":{"text":""},"_meta":%s}}',
    "duplicate name": '{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo","name":"add",'
                      '"arguments":{"text":"ok"},"_meta":%s}}',
    "duplicate method": '{"jsonrpc":"2.0","id":1,"method":"ping","method":"tools/call","params":{"name":"echo",'
                        '"arguments":{"text":"ok"},"_meta":%s}}',
    "duplicate member inside the arguments": '{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo",'
                                             '"arguments":{"text":"ok","text":""},"_meta":%s}}',
    "a batch": '[{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo",'
               '"arguments":{"text":"ok"},"_meta":%s}}]',
}


@pytest.mark.parametrize("upstream_kind", UPSTREAMS)
async def test_hostile_frames_on_the_sessionless_path_are_refused_before_the_upstream(
        record: Path, upstream_kind: str) -> None:
    """The wire rule holds on the sessionless path too: a frame two JSON readers would read differently is
    refused with 400 and never forwarded, whatever its envelope and headers say."""
    headers = {"mcp-protocol-version": VERSION, "mcp-method": "tools/call", "mcp-name": "echo"}
    with anyio.fail_after(60):
        async with gate_in_front_of(record, upstream_kind) as (url, _, _):
            for label, body in HOSTILE_BODIES.items():
                async with raw_client(**headers) as http:
                    reply = await http.post(url, content=body % json.dumps(ENVELOPE))
                assert reply.status_code == 400, (label, reply.text)
            valid = await post_fresh(url, *request(2, "tools/call", {"name": "echo", "arguments": {"text": "ok"}}))
            assert answer_messages(valid)[-1]["result"]["content"][0]["text"] == "ok"
    assert [(c["name"], c["arguments"]) for c in calls(record)] == [("echo", {"text": "ok"})]

"""The lean POST path of an open Streamable HTTP session (proxy/listen/posts.py), and where it hands over to the SDK.

What the path answers must look as the SDK transport's answer would (status,
content type, session header, one JSON body); what it does not take must
still get the SDK transport's own refusal; and a request on it keeps the
session alive and gets exactly one answer when the session ends under it.
"""

from __future__ import annotations

import json
from pathlib import Path

import anyio
import pytest
from hypothesis import given, settings, strategies as st
from mcp.server.streamable_http import check_accept_headers
from starlette.requests import Request

from proxy.listen.posts import accepts_json, is_json_content
from tests.proxy.conftest import calls
from tests.support.examples import examples
from tests.proxy_http.conftest import http_gate, raw_client
from tests.proxy_http.test_hardening import open_session

CALL = {"jsonrpc": "2.0", "id": 7, "method": "tools/call", "params": {"name": "echo", "arguments": {"text": "hi"}}}


def request_with(**headers: str) -> Request:
    return Request({"type": "http", "method": "POST", "path": "/mcp",
                    "headers": [(k.encode(), v.encode()) for k, v in headers.items()]})


MEDIA = st.sampled_from(["application/json", "APPLICATION/JSON", "application/*", "*/*", "text/event-stream",
                         "text/*", "text/html", "application/xml", "application/json;q=0.5", " application/json ",
                         "application/jsonx", ""])


@given(st.lists(MEDIA, max_size=4))
@settings(max_examples=examples(300), deadline=None)
def test_the_lean_accept_check_agrees_with_the_sdk_transport_on_every_accept_header(parts: list[str]) -> None:
    accept = ",".join(parts)
    assert accepts_json(accept) == check_accept_headers(request_with(accept=accept))[0]


@given(st.lists(st.sampled_from(["application/json", "Application/JSON", "text/plain", "application/json-seq",
                                 " charset=utf-8", "application/jsonx", ""]), max_size=3),
       st.sampled_from([",", ";"]))
@settings(max_examples=examples(300), deadline=None)
def test_the_lean_path_takes_exactly_the_content_types_both_sdk_checks_pass(parts: list[str], separator: str) -> None:
    from mcp.server.streamable_http import StreamableHTTPServerTransport
    from mcp.server.transport_security import TransportSecurityMiddleware

    content_type = separator.join(parts)
    request = request_with(**{"content-type": content_type})
    both = (StreamableHTTPServerTransport(mcp_session_id="x")._check_content_type(request)
            and TransportSecurityMiddleware()._validate_content_type(content_type))
    assert is_json_content(content_type) == both


async def test_a_call_is_answered_with_one_json_body_and_reaches_a_stdio_upstream_as_one_line(record: Path) -> None:
    async with http_gate(record, "http", None, "--quiet") as (url, _), raw_client() as http:
        headers = await open_session(http, url)
        pretty = json.dumps(CALL, indent=2)  # a body over several lines
        reply = await http.post(url, content=pretty, headers=headers)
        assert reply.status_code == 200, reply.text
        assert reply.headers["content-type"] == "application/json"
        assert reply.headers["mcp-session-id"] == headers["mcp-session-id"]
        assert int(reply.headers["content-length"]) == len(reply.content)
        body = reply.json()
        assert body["id"] == 7 and body["result"]["content"][0]["text"] == "hi"
        notified = await http.post(url, content=json.dumps({"jsonrpc": "2.0", "method": "notifications/progress",
                                                            "params": {"progressToken": "t", "progress": 1}}),
                                   headers=headers)
        assert notified.status_code == 202 and notified.content == b""
        assert notified.headers["mcp-session-id"] == headers["mcp-session-id"]
    assert [c["arguments"] for c in calls(record)] == [{"text": "hi"}]


@pytest.mark.parametrize(("change", "status", "text"), [
    ({"accept": "text/event-stream"}, 406, "Not Acceptable: Client must accept application/json"),
    ({"content-type": "text/plain"}, 400, "Invalid Content-Type header"),
    ({"content-type": "Application/JSON"}, 415, "Unsupported Media Type"),
])
async def test_a_post_the_lean_path_does_not_take_gets_the_sdk_transport_s_refusal(
        record: Path, change: dict[str, str], status: int, text: str) -> None:
    async with http_gate(record, "http", None, "--quiet") as (url, _), raw_client() as http:
        headers = await open_session(http, url)
        reply = await http.post(url, content=json.dumps(CALL), headers={**headers, **change})
        assert reply.status_code == status, reply.text
        assert text in reply.text
        ok = await http.post(url, content=json.dumps(CALL), headers=headers)  # the session is unharmed
        assert ok.status_code == 200 and ok.json()["result"]["content"][0]["text"] == "hi"
    assert len(calls(record)) == 1


async def test_a_call_longer_than_the_idle_timeout_holds_its_session(record: Path) -> None:
    async with http_gate(record, "http", None, "--quiet", "--json-response", "--idle-timeout", "1") as (url, _), \
            raw_client() as http:
        headers = await open_session(http, url)
        slow = {"jsonrpc": "2.0", "id": "slow", "method": "tools/call",
                "params": {"name": "slow", "arguments": {"steps": 40}}}  # 2 s, twice the idle timeout
        reply = await http.post(url, content=json.dumps(slow), headers=headers)
        assert reply.status_code == 200 and "slow done" in reply.json()["result"]["content"][0]["text"], reply.text
        again = await http.post(url, content=json.dumps(CALL), headers=headers)
        assert again.status_code == 200, again.text
        await anyio.sleep(2.0)  # then idle past the timeout: the session is gone
        gone = await http.post(url, content=json.dumps(CALL), headers=headers)
        assert gone.status_code == 404, gone.text


async def test_calls_closer_together_than_the_idle_timeout_keep_their_session_open_past_it(record: Path) -> None:
    # The lean path's countdown is one lazily moved timer (LazyDeadline): it must not end the session
    # at a deadline a later call moved on, and must still end it once the calls stop.
    async with http_gate(record, "http", None, "--quiet", "--json-response", "--idle-timeout", "1") as (url, _), \
            raw_client() as http:
        headers = await open_session(http, url)
        for _ in range(6):  # 2.4 s of calls 0.4 s apart, past the 1 s timeout in all
            reply = await http.post(url, content=json.dumps(CALL), headers=headers)
            assert reply.status_code == 200, reply.text
            await anyio.sleep(0.4)
        await anyio.sleep(1.6)  # then idle past the timeout: the session is gone
        gone = await http.post(url, content=json.dumps(CALL), headers=headers)
        assert gone.status_code == 404, gone.text


@pytest.mark.parametrize("json_response", [False, True])
async def test_a_call_waiting_when_its_session_is_deleted_gets_exactly_one_answer(
        record: Path, json_response: bool) -> None:
    options = ("--quiet", "--json-response") if json_response else ("--quiet",)
    async with http_gate(record, "http", None, *options) as (url, _), raw_client() as http:
        headers = await open_session(http, url)
        slow = {"jsonrpc": "2.0", "id": "slow", "method": "tools/call",
                "params": {"name": "slow", "arguments": {"steps": 200}}}  # 10 s
        replies = []

        async def call() -> None:
            replies.append(await http.post(url, content=json.dumps(slow), headers=headers))

        with anyio.fail_after(8):  # well before the call would end by itself
            async with anyio.create_task_group() as tg:
                tg.start_soon(call)
                await anyio.sleep(0.5)
                deleted = await http.delete(url, headers=headers)
                assert deleted.status_code == 200, deleted.text
        [reply] = replies
        if reply.headers["content-type"].startswith("application/json"):
            assert reply.status_code == 500 and "Session terminated" in reply.json()["error"]["message"]
        else:  # the answer had become a stream (the call took over a second): it ends without a reply
            assert reply.status_code == 200 and "slow done" not in reply.text

"""The lean POST path (proxy/upstream/post_pool.py) against a scripted HTTP server on 127.0.0.1.

The pool: keep-alive reuse, dead and stale connections never reused, a broken
response is an error and not a hang. The transport (`_TaggingTransport` with
a pool): each status and content type answered as the SDK's own POST would.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable
from contextlib import asynccontextmanager

import anyio
import h11
import mcp_types as types
import pytest
from hypothesis import given, settings, strategies as st
from mcp.shared.message import ServerMessageMetadata, SessionMessage

from proxy.upstream import post_pool as http_post
from proxy.upstream.post_pool import HTTPError, PostPool, eligible
from proxy.core.jsonrpc import Frame
from proxy.upstream.streamable_http import _streamable_http
from tests.support.examples import examples


class Scripted:
    """An HTTP/1.1 server whose every answer is `respond(request_head, body, connection_number)` -> raw bytes.

    The bytes are written as they are, so a test can send what h11 would refuse to
    (a body cut short, a 1xx); an answer of None closes the connection unanswered.
    """

    def __init__(self, respond: Callable[[h11.Request, bytes, int], bytes | None]) -> None:
        self.respond = respond
        self.connections = 0
        self.requests: list[tuple[h11.Request, bytes]] = []
        self.writers: list[asyncio.StreamWriter] = []
        self.tasks: set[asyncio.Task] = set()

    async def handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.tasks.add(asyncio.current_task())
        self.connections += 1
        number = self.connections
        self.writers.append(writer)
        conn = h11.Connection(h11.SERVER)
        try:
            while True:
                head, body = None, b""
                while True:
                    event = conn.next_event()
                    if event is h11.NEED_DATA:
                        data = await reader.read(65536)
                        conn.receive_data(data)
                        if not data and conn.their_state is h11.IDLE:
                            return
                    elif isinstance(event, h11.Request):
                        head = event
                    elif isinstance(event, h11.Data):
                        body += event.data
                    elif isinstance(event, h11.EndOfMessage):
                        break
                    else:
                        return
                self.requests.append((head, body))
                answer = self.respond(head, body, number)
                if answer is None:
                    return
                writer.write(answer)
                await writer.drain()
                if b"connection: close" in answer.lower():
                    return
                conn = h11.Connection(h11.SERVER)  # the scripted answer bypassed this one's state machine
        except (ConnectionError, h11.RemoteProtocolError):
            pass
        except asyncio.CancelledError:
            pass  # the test is over (3.11's start_server would log a cancelled handler as an error)
        finally:
            writer.close()


@asynccontextmanager
async def scripted(respond):
    server_state = Scripted(respond)
    server = await asyncio.start_server(server_state.handle, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    try:
        yield server_state, f"http://127.0.0.1:{port}/mcp"
    finally:
        for writer in server_state.writers:
            writer.close()
        server.close()
        for task in server_state.tasks:
            task.cancel()
        await asyncio.gather(*server_state.tasks, return_exceptions=True)


def answer(status: int = 200, body: bytes = b"{}", content_type: str = "application/json", *extra: str) -> bytes:
    head = [f"HTTP/1.1 {status} X", f"content-type: {content_type}", f"content-length: {len(body)}", *extra]
    return ("\r\n".join(head) + "\r\n\r\n").encode() + body


def chunked(*parts: bytes, content_type: str = "text/event-stream") -> bytes:
    head = f"HTTP/1.1 200 OK\r\ncontent-type: {content_type}\r\ntransfer-encoding: chunked\r\n\r\n".encode()
    return head + b"".join(b"%x\r\n%s\r\n" % (len(part), part) for part in parts) + b"0\r\n\r\n"


# ---- the pool ---------------------------------------------------------------------------------


async def test_a_connection_is_kept_alive_and_the_request_goes_out_whole() -> None:
    async with scripted(lambda head, body, n: answer(body=body)) as (server, url):
        pool = PostPool(url, {"Authorization": "Bearer t"})
        for text in (b'{"a":1}', b'{"b":"\xc3\xa9"}'):
            response = await pool.post({"X-One": "1"}, text)
            assert (response.status, await response.read()) == (200, text)
        pool.close()
    assert server.connections == 1
    head, _ = server.requests[0]
    headers = dict(head.headers)
    assert head.method == b"POST" and head.target == b"/mcp"
    assert headers[b"host"] == url.split("/")[2].encode()
    assert headers[b"authorization"] == b"Bearer t" and headers[b"x-one"] == b"1"


async def test_a_chunked_body_arrives_whole_and_an_informational_answer_is_skipped() -> None:
    reply = b"HTTP/1.1 100 Continue\r\n\r\n" + chunked(b"ab", b"cd", content_type="text/plain")
    async with scripted(lambda head, body, n: reply) as (server, url):
        pool = PostPool(url)
        response = await pool.post({}, b"{}")
        assert response.status == 200 and response.headers["content-type"] == "text/plain"
        assert await response.read() == b"abcd"
        response = await pool.post({}, b"{}")  # the connection went back to the pool after the last chunk
        assert await response.read() == b"abcd"
        pool.close()
    assert server.connections == 1


async def test_a_connection_the_server_closed_is_not_reused() -> None:
    async with scripted(lambda head, body, n: answer()) as (server, url):
        pool = PostPool(url)
        await (await pool.post({}, b"{}")).read()
        for writer in server.writers:
            writer.close()
        await anyio.sleep(0.1)  # the close reaches the client's protocol
        assert (await pool.post({}, b"{}")).status == 200
        pool.close()
    assert server.connections == 2


async def test_a_connection_with_unasked_for_bytes_is_not_reused() -> None:
    stray = b"HTTP/1.1 200 OK\r\ncontent-length: 5\r\n\r\nstray"
    async with scripted(lambda head, body, n: answer(body=body) + (stray if n == 1 else b"")) as (server, url):
        pool = PostPool(url)
        assert await (await pool.post({}, b'{"n":1}')).read() == b'{"n":1}'
        await anyio.sleep(0.1)  # the stray answer arrives while the connection sits in the pool
        assert await (await pool.post({}, b'{"n":2}')).read() == b'{"n":2}'  # not "stray"
        pool.close()
    assert server.connections == 2


async def test_an_idle_connection_past_its_age_is_not_reused(monkeypatch) -> None:
    monkeypatch.setattr(http_post, "MAX_IDLE_SECONDS", 0.05)
    async with scripted(lambda head, body, n: answer()) as (server, url):
        pool = PostPool(url)
        await (await pool.post({}, b"{}")).read()
        await anyio.sleep(0.1)
        await (await pool.post({}, b"{}")).read()
        pool.close()
    assert server.connections == 2


async def test_an_abandoned_body_or_connection_close_retires_the_connection() -> None:
    async with scripted(lambda head, body, n: chunked(b"x" * 10, b"y")
                        if n == 1 else answer(200, b"{}", "application/json", "Connection: close")) as (server, url):
        pool = PostPool(url)
        response = await pool.post({}, b"{}")
        async for _ in response.chunks():
            break
        response.close()  # the rest of the body is never read: that connection is unusable
        for _ in range(2):
            await (await pool.post({}, b"{}")).read()
        pool.close()
    assert server.connections == 3  # the abandoned one, then one per "Connection: close" answer


async def test_a_response_cut_short_is_an_error_not_a_hang() -> None:
    cut = b"HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: 100\r\n\r\n{\"partial"
    async with scripted(lambda head, body, n: cut if n == 1 else None) as (server, url):
        pool = PostPool(url)
        response = await pool.post({}, b"{}")
        server.writers[0].close()
        with anyio.fail_after(5), pytest.raises(HTTPError, match="closed the connection mid-response"):
            await response.read()
        with anyio.fail_after(5), pytest.raises(HTTPError, match="without answering"):
            await pool.post({}, b"{}")  # the server hangs up before answering
        pool.close()


async def test_an_upstream_that_goes_silent_is_an_error_after_the_read_timeout(monkeypatch) -> None:
    monkeypatch.setattr(http_post, "READ_TIMEOUT", 0.2)
    head_only = b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ntransfer-encoding: chunked\r\n\r\n"
    async with scripted(lambda head, body, n: head_only if n == 1 else b"") as (_, url):
        pool = PostPool(url)
        response = await pool.post({}, b"{}")  # the head arrives, then nothing
        with anyio.fail_after(5), pytest.raises(HTTPError, match="no data from the upstream for 0.2 s"):
            await response.read()
        with anyio.fail_after(5), pytest.raises(HTTPError, match="no data from the upstream for 0.2 s"):
            await pool.post({}, b"{}")  # not even a head
        pool.close()


async def test_an_upstream_that_trickles_within_the_read_timeout_is_read_whole_however_long_it_takes(
        monkeypatch) -> None:
    # The read timeout bounds each wait, not the response: one timer serves every wait (LazyDeadline),
    # so it must not fire at the deadline of a wait that already ended.
    monkeypatch.setattr(http_post, "READ_TIMEOUT", 0.25)
    parts = [b"data: %d\n\n" % n for n in range(6)]

    async def trickle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await reader.readuntil(b"\r\n\r\n")
        writer.write(b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ntransfer-encoding: chunked\r\n\r\n")
        for part in parts:
            await asyncio.sleep(0.1)  # 0.6 s in all, each gap well inside the 0.25 s timeout
            writer.write(b"%x\r\n%s\r\n" % (len(part), part))
        writer.write(b"0\r\n\r\n")
        await writer.drain()
        writer.close()

    server = await asyncio.start_server(trickle, "127.0.0.1", 0)
    try:
        pool = PostPool(f"http://127.0.0.1:{server.sockets[0].getsockname()[1]}/mcp")
        response = await pool.post({}, b"{}")
        with anyio.fail_after(5):
            assert await response.read() == b"".join(parts)
        pool.close()
    finally:
        server.close()


async def test_a_body_without_length_or_chunking_ends_at_the_close_and_the_connection_is_retired() -> None:
    reply = b"HTTP/1.1 200 OK\r\ncontent-type: application/json\r\n\r\n{\"until\": \"close\"}"
    async with scripted(lambda head, body, n: reply) as (server, url):
        pool = PostPool(url)
        response = await pool.post({}, b"{}")
        for writer in server.writers:
            writer.close()  # the end of the body
        with anyio.fail_after(5):
            assert await response.read() == b'{"until": "close"}'
        assert (await pool.post({}, b"{}")).status == 200
        pool.close()
    assert server.connections == 2


async def test_an_answer_that_is_not_http_is_an_error_and_the_connection_is_retired() -> None:
    async with scripted(lambda head, body, n: b"SSH-2.0-OpenSSH\r\n\r\n" if n == 1 else answer()) as (server, url):
        pool = PostPool(url)
        with anyio.fail_after(5), pytest.raises(HTTPError, match="broke HTTP/1.1"):
            await pool.post({}, b"{}")
        assert (await pool.post({}, b"{}")).status == 200
        pool.close()
    assert server.connections == 2


async def test_each_post_carries_its_own_header_values_however_many_the_pool_has_checked_before(monkeypatch) -> None:
    monkeypatch.setattr(http_post, "MAX_CACHED_FIELDS", 4)  # so the run below also crosses the bound
    async with scripted(lambda head, body, n: answer()) as (server, url):
        pool = PostPool(url)
        sent = [{"Mcp-Session-Id": "s1", "Mcp-Name": f"tool{i % 7}"} for i in range(20)]
        for headers in sent:
            await (await pool.post(headers, b"{}")).read()
            with pytest.raises(HTTPError, match="cannot send this request"):
                await pool.post({"Mcp-Name": headers["Mcp-Name"] + "\r\nX-Injected: 1"}, b"{}")
        pool.close()
    assert [(dict(head.headers)[b"mcp-session-id"], dict(head.headers)[b"mcp-name"]) for head, _ in server.requests] \
        == [(h["Mcp-Session-Id"].encode(), h["Mcp-Name"].encode()) for h in sent]
    assert all(b"x-injected" not in dict(head.headers) for head, _ in server.requests)


@pytest.mark.parametrize("value", ["a\r\nX-Injected: 1", "a\nb", "a\rb", "nul\x00", " padded", "caf\u00e9"])
async def test_a_header_value_that_could_split_the_request_is_refused_before_anything_is_sent(value) -> None:
    async with scripted(lambda head, body, n: answer()) as (server, url):
        pool = PostPool(url)
        with pytest.raises(HTTPError, match="cannot send this request"):
            await pool.post({"Mcp-Param-Q": value}, b"{}")
        pool.close()
    assert server.connections == 0 and server.requests == []


async def test_a_fixed_header_that_could_split_the_request_refuses_every_post_that_does_not_replace_it_and_a_path_is_percent_encoded() -> None:
    async with scripted(lambda head, body, n: answer()) as (server, url):
        pool = PostPool(url, {"X-Fixed": "a\r\nX-Injected: 1"})
        for _ in range(2):  # checked once, at construction: still refused at every POST
            with pytest.raises(HTTPError, match="cannot send this request"):
                await pool.post({}, b"{}")
        assert server.requests == []
        assert (await pool.post({"x-fixed": "clean"}, b"{}")).status == 200
        pool.close()
        pool = PostPool(url.replace("/mcp", "/m\u00e9 p"))  # the path as httpx sends it, percent-encoded
        assert (await pool.post({}, b"{}")).status == 200
        pool.close()
    assert len(server.requests) == 2
    assert [v for k, v in server.requests[0][0].headers if k == b"x-fixed"] == [b"clean"]
    assert server.requests[1][0].target == b"/m%C3%A9%20p"


@settings(max_examples=examples(150), deadline=None)
@given(name=st.text(alphabet=st.characters(codec="latin-1"), min_size=1, max_size=12),
       value=st.text(alphabet=st.sampled_from("ab \t:\r\n\x00\x7f\xe9;,=\"'"), max_size=12))
def test_what_the_pool_sends_another_parser_reads_as_exactly_one_request_with_that_header(name, value) -> None:
    """Generated header names and values: refused before sending, or read back by h11 as sent, never split."""

    async def exchange() -> tuple[bool, Scripted]:
        async with scripted(lambda head, body, n: answer(body=body)) as (server, url):
            pool = PostPool(url)
            try:
                response = await pool.post({name: value}, b'{"x":1}')
                assert await response.read() == b'{"x":1}'
                sent = True
            except HTTPError as exc:
                assert "cannot send this request" in str(exc)
                sent = False
            pool.close()
        return sent, server

    sent, server = asyncio.run(exchange())
    if not sent:
        assert server.requests == []
        return
    assert len(server.requests) == 1
    head, body = server.requests[0]
    received = [(k, v) for k, v in head.headers if k == name.lower().encode("latin-1")]
    assert received == [(name.lower().encode("ascii"), value.encode("ascii"))] and body == b'{"x":1}'


async def test_nothing_listening_is_an_error_naming_the_address() -> None:
    sock = __import__("socket").socket()
    sock.bind(("127.0.0.1", 0))
    port = sock.getsockname()[1]
    sock.close()  # nothing listens on it now
    with pytest.raises(HTTPError, match=f"cannot connect to 127.0.0.1:{port}"):
        await PostPool(f"http://127.0.0.1:{port}/mcp").post({}, b"{}")


def test_only_plain_http_without_a_proxy_takes_the_lean_path(monkeypatch) -> None:
    for name in ("http_proxy", "HTTP_PROXY", "all_proxy", "ALL_PROXY", "no_proxy", "NO_PROXY"):
        monkeypatch.delenv(name, raising=False)
    assert eligible("http://127.0.0.1:8000/mcp")
    assert not eligible("https://hub.example/mcp")
    monkeypatch.setenv("http_proxy", "http://proxy.internal:3128")
    assert not eligible("http://hub.example/mcp")
    monkeypatch.setenv("no_proxy", "hub.example")
    assert eligible("http://hub.example/mcp")


# ---- the transport: the SDK's answers for each status, over the pool ---------------------------


def request(request_id, method="tools/call", params=None) -> SessionMessage:
    return SessionMessage(types.JSONRPCRequest(jsonrpc="2.0", id=request_id, method=method,
                                               params=params or {"name": "echo", "arguments": {}}))


def as_frame(message: SessionMessage) -> Frame:
    return Frame("request", message.message.model_dump(by_alias=True, exclude_unset=True))


async def exchange(url: str, *messages: SessionMessage, expect: int = 1,
                   dispatched: bool = False) -> list[SessionMessage]:
    """Send through the SDK's post_writer, or (`dispatched`) as the gate sends a forwarded request: dispatch."""
    received: list[SessionMessage] = []
    with anyio.fail_after(10):
        async with _streamable_http(url, None) as (read_stream, write_stream, dispatch):
            for message in messages:
                if dispatched:
                    assert dispatch(as_frame(message), {"mcp-method": message.message.method})
                else:
                    await write_stream.send(message)
            while len(received) < expect:
                item = await read_stream.receive()
                assert isinstance(item, SessionMessage), item
                received.append(item)
    return received


def sse(*messages: dict, event_id: str | None = None) -> bytes:
    prefix = f"id: {event_id}\n" if event_id else ""
    return b"".join(f"{prefix}event: message\ndata: {json.dumps(m)}\n\n".encode() for m in messages)


@pytest.mark.parametrize(("reply", "code", "text"), [
    (answer(202, b""), types.INVALID_REQUEST, "202 Accepted"),
    (answer(500, b"oops", "text/plain"), types.INTERNAL_ERROR, "error response"),
    (answer(404, b""), types.METHOD_NOT_FOUND, "Not Found"),  # no session yet: the method is unknown
    (answer(400, json.dumps({"jsonrpc": "2.0", "id": None, "error": {"code": -32602, "message": "bad"}}).encode()),
     -32602, "bad"),
    (answer(200, b"hello", "text/plain"), types.INVALID_REQUEST, "Unexpected content type: text/plain"),
    (answer(200, b"{not json"), types.PARSE_ERROR, "Failed to parse JSON response"),
    (chunked(b": only a comment\n\n"), types.CONNECTION_CLOSED, "ended without a response"),
    (chunked(b"data: " + b"x" * (2 << 20) + b"\n\n"), types.CONNECTION_CLOSED, "SSE stream failed"),
])
@pytest.mark.parametrize("dispatched", [False, True], ids=["post_writer", "dispatch"])
async def test_each_answer_to_a_request_becomes_the_sdk_error_for_it(reply, code, text, dispatched) -> None:
    async with scripted(lambda head, body, n: reply) as (_, url):
        (item,) = await exchange(url, request(7), dispatched=dispatched)
    assert isinstance(item.message, types.JSONRPCError)
    assert item.message.id == 7 and item.message.error.code == code and text in item.message.error.message


async def test_an_sse_answer_tags_its_notifications_and_the_connection_is_reused() -> None:
    def respond(head, body, n):
        call = json.loads(body)
        progress = {"jsonrpc": "2.0", "method": "notifications/progress",
                    "params": {"progressToken": "p", "progress": 1}}
        return chunked(sse(progress), sse({"jsonrpc": "2.0", "id": call["id"], "result": {"content": []}}))

    items: list[SessionMessage] = []
    async with scripted(respond) as (server, url):
        with anyio.fail_after(10):
            async with _streamable_http(url, None) as (read_stream, write_stream, _):
                for request_id in (1, 2, 3):  # one after the other: each finds the last one's connection idle
                    await write_stream.send(request(request_id))
                    items += [await read_stream.receive(), await read_stream.receive()]
    notes = [i for i in items if isinstance(i.message, types.JSONRPCNotification)]
    replies = [i.message.id for i in items if isinstance(i.message, types.JSONRPCResponse)]
    assert replies == [1, 2, 3]
    assert [n.metadata.related_request_id for n in notes if isinstance(n.metadata, ServerMessageMetadata)] == [1, 2, 3]
    assert server.connections == 1  # each stream was read to its end, so its connection went back to the pool
    assert all(json.loads(body)["jsonrpc"] == "2.0" for _, body in server.requests)


@pytest.mark.parametrize("dispatched", [False, True], ids=["post_writer", "dispatch"])
async def test_a_redirect_is_handed_to_the_sdk_which_follows_it_within_the_origin(dispatched) -> None:
    def respond(head, body, n):
        if head.target == b"/mcp":
            return answer(307, b"", "text/plain", "location: /mcp/")
        return answer(200, json.dumps({"jsonrpc": "2.0", "id": json.loads(body)["id"], "result": {}}).encode())

    async with scripted(respond) as (server, url):
        (item,) = await exchange(url, request(3), dispatched=dispatched)
    assert isinstance(item.message, types.JSONRPCResponse) and item.message.id == 3
    # the lean POST met the redirect and handed the message to the SDK, whose POST follows it
    assert [head.target for head, _ in server.requests] == [b"/mcp", b"/mcp", b"/mcp/"]


async def test_a_session_id_from_initialize_goes_on_every_later_post_and_the_delete() -> None:
    def respond(head, body, n):
        if head.method == b"DELETE":
            return answer(200, b"")
        message = json.loads(body)
        if "id" not in message:
            return answer(202, b"")
        extra = ("mcp-session-id: s-42",) if message.get("method") == "initialize" else ()
        return answer(200, json.dumps({"jsonrpc": "2.0", "id": message["id"], "result": {}}).encode(),
                      "application/json", *extra)

    initialize = request(0, "initialize", {"protocolVersion": "2025-11-25", "capabilities": {},
                                           "clientInfo": {"name": "t", "version": "0"}})
    async with scripted(respond) as (server, url):
        with anyio.fail_after(10):
            async with _streamable_http(url, None) as (read_stream, write_stream, _):
                for message in (initialize, request(1, "tools/list", {})):
                    await write_stream.send(message)
                    assert isinstance((await read_stream.receive()).message, types.JSONRPCResponse)
    sessions = [(head.method, dict(head.headers).get(b"mcp-session-id")) for head, _ in server.requests]
    assert sessions == [(b"POST", None), (b"POST", b"s-42"), (b"DELETE", b"s-42")]


@pytest.mark.parametrize("version", ["2025-11-25", "2026-07-28"])
async def test_dispatch_posts_a_request_as_post_writer_would_and_leaves_it_everything_else(version) -> None:
    def respond(head, body, n):
        message = json.loads(body)
        return answer(200, json.dumps({"jsonrpc": "2.0", "id": message["id"], "result": {"n": n}}).encode())

    call = Frame("request", {"jsonrpc": "2.0", "id": 9, "method": "tools/call",
                             "params": {"name": "echo", "arguments": {"big": 10**30}}})
    async with scripted(respond) as (server, url):
        with anyio.fail_after(10):
            async with _streamable_http(url, None) as (read_stream, write_stream, dispatch):
                transport = dispatch.func.__self__
                initialize = Frame("request", {"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {}})
                notification = Frame("notification", {"jsonrpc": "2.0", "method": "notifications/initialized"})
                assert not dispatch(initialize, {"mcp-method": "initialize"})  # post_writer: the session id
                assert not dispatch(notification, {"mcp-method": "notifications/initialized"})
                assert server.requests == []  # nothing it left to post_writer was sent
                assert dispatch(call, {"mcp-method": "tools/call", "mcp-protocol-version": version})
                # At 2026-07-28 registered as post_writer registers it: a cancellation finds its abort scope.
                assert (9 in transport._in_flight_posts) is (version == "2026-07-28")
                reply = await read_stream.receive()
                await anyio.wait_all_tasks_blocked()
                assert 9 not in transport._in_flight_posts  # its task ended and took the entry with it
    assert reply.id == 9
    ((head, body),) = server.requests
    assert json.loads(body) == call.value  # the Frame's value as sent: the big integer exact
    assert dict(head.headers)[b"mcp-protocol-version"] == version.encode()
    assert dict(head.headers)[b"mcp-method"] == b"tools/call"


async def test_before_2026_a_request_whose_id_is_reused_in_flight_still_gets_its_own_answer() -> None:
    def respond(head, body, n):
        message = json.loads(body)
        return answer(200, json.dumps({"jsonrpc": "2.0", "id": message["id"],
                                       "result": message["params"]["arguments"]}).encode())

    replies = []
    async with scripted(respond) as (server, url):
        with anyio.fail_after(10):
            async with _streamable_http(url, None) as (read_stream, write_stream, dispatch):
                for n in (1, 2):  # both in flight at once, under one id
                    assert dispatch(Frame("request", {"jsonrpc": "2.0", "id": 9, "method": "tools/call",
                                                      "params": {"name": "echo", "arguments": {"n": n}}}),
                                    {"mcp-method": "tools/call", "mcp-protocol-version": "2025-11-25"})
                replies = [await read_stream.receive(), await read_stream.receive()]
    assert sorted(r.value["result"]["n"] for r in replies) == [1, 2] and {r.id for r in replies} == {9}
    assert len(server.requests) == 2

"""In-process checks of the HTTP pieces: header stamping, stream routing, --listen parsing, URL → transport."""

from __future__ import annotations

import asyncio
from typing import Any

import anyio
import mcp_types as types
import pytest
from mcp.shared.message import ServerMessageMetadata, SessionMessage

from proxy.core.jsonrpc import Frame, json_frame
from proxy.listen.http import parse_listen
from proxy.upstream.streamable_http import HeaderStamper, transport_for
from proxy.listen.router import StreamRouter

SCHEMA = {"type": "object", "properties": {
    "region": {"type": "string", "x-mcp-header": "Region"},
    "opts": {"type": "object", "properties": {"dry": {"type": "boolean", "x-mcp-header": "Dry"}}},
    "plain": {"type": "string"},
}}


def request(request_id, method, params=None):
    return types.JSONRPCRequest(jsonrpc="2.0", id=request_id, method=method, params=params)


@pytest.mark.parametrize("as_frame", [False, True])
def test_the_negotiated_version_is_read_from_the_initialize_reply_however_it_was_parsed(as_frame: bool) -> None:
    stamper = HeaderStamper(lambda name: None)
    stamper.headers_for(request("init", "initialize", {"protocolVersion": "2025-11-25"}))
    body = b'{"jsonrpc":"2.0","id":"init","result":{"protocolVersion":"2025-03-26","capabilities":{}}}'
    reply = json_frame(body) if as_frame else SessionMessage(
        types.jsonrpc_message_adapter.validate_json(body, by_name=False))
    assert type(reply) is Frame if as_frame else type(reply) is SessionMessage
    stamper.observe_reply(json_frame(b'{"jsonrpc":"2.0","id":"other","result":{"protocolVersion":"1999-01-01"}}'))
    assert stamper.negotiated is None  # only the reply to the initialize it stamped
    stamper.observe_reply(reply)
    assert stamper.negotiated == "2025-03-26"
    assert stamper.headers_for(request(1, "ping"))["mcp-protocol-version"] == "2025-03-26"


def test_an_upstream_json_body_becomes_a_frame_only_in_the_shapes_frame_takes() -> None:
    assert json_frame(b'{"jsonrpc":"2.0","id":3,"result":{"n":12345678901234567890123}}').result == {
        "n": 12345678901234567890123}
    for body in (b'{"jsonrpc":"2.0","id":3,"result":{},"extra":1}', b'{"jsonrpc":"2.0","id":3,"result":[]}',
                 b'[1]', rb'{"jsonrpc":"2.0","id":3,"result":{"s":"\ud800"}}', b'not json'):
        assert json_frame(body) is None, body  # the SDK's parser decides these, as before


def test_header_stamper_follows_the_relayed_handshake_and_the_annotations() -> None:
    stamper = HeaderStamper(lambda name: SCHEMA if name == "deploy" else None)
    init = request(0, "initialize", {"protocolVersion": "2025-11-25", "capabilities": {},
                                     "clientInfo": {"name": "c", "version": "0"}})
    assert stamper.headers_for(init) == {"mcp-method": "initialize"}
    stamper.observe_reply(SessionMessage(types.JSONRPCResponse(jsonrpc="2.0", id=0,
                                                               result={"protocolVersion": "2025-06-18"})))
    call = request(1, "tools/call", {"name": "deploy", "arguments": {"region": "eu-west", "opts": {"dry": True},
                                                                     "plain": "x"}})
    assert stamper.headers_for(call) == {
        "mcp-method": "tools/call", "mcp-protocol-version": "2025-06-18", "mcp-name": "deploy",
        "Mcp-Param-Region": "eu-west", "Mcp-Param-Dry": "true",
    }
    read = request(2, "resources/read", {"uri": "test://é"})
    headers = stamper.headers_for(read)
    assert headers["mcp-name"].startswith("=?base64?")  # not a header-safe value: base64-wrapped, as the SDK does
    # a 2026-07-28 request carries its own version
    modern = request(3, "tools/list", {"_meta": {"io.modelcontextprotocol/protocolVersion": "2026-07-28"}})
    assert stamper.headers_for(modern)["mcp-protocol-version"] == "2026-07-28"
    # a notification is an HTTP request too: the negotiated version, and its method
    notification = types.JSONRPCNotification(jsonrpc="2.0", method="notifications/initialized")
    assert stamper.headers_for(notification) == {"mcp-method": "notifications/initialized",
                                                 "mcp-protocol-version": "2025-06-18"}


async def test_stream_router_routes_by_tag_then_progress_token_else_get_stream() -> None:
    """The router reads the relay's in-flight table: tag first, then progress token, else the GET stream."""
    from proxy.core.relay import Relay

    client_in, relay_reads = anyio.create_memory_object_stream[SessionMessage](10)  # what the client sends
    to_client, client_out = anyio.create_memory_object_stream[SessionMessage](10)  # what the transport writes
    to_upstream, upstream_in = anyio.create_memory_object_stream[SessionMessage](10)
    upstream_out, upstream_reads = anyio.create_memory_object_stream[SessionMessage](10)
    router = StreamRouter(relay_reads, to_client)
    relay = Relay(router.streams, (upstream_reads, to_upstream))
    router.bind(relay)

    async def routed(message, metadata=None):
        meta = router.route(SessionMessage(message, metadata=metadata)).metadata
        return meta.related_request_id if isinstance(meta, ServerMessageMetadata) else None

    async with anyio.create_task_group() as tg:
        tg.start_soon(relay.run)
        await client_in.send(SessionMessage(request("a", "tools/call", {"name": "x", "_meta": {"progressToken": 5}})))
        await client_in.send(SessionMessage(request(7, "tools/call", {"name": "y"})))
        for _ in range(2):
            await upstream_in.receive()  # both forwarded: the relay has registered them
        progress = types.JSONRPCNotification(jsonrpc="2.0", method="notifications/progress",
                                             params={"progressToken": 5, "progress": 1})
        assert await routed(progress) == "a"
        log = types.JSONRPCNotification(jsonrpc="2.0", method="notifications/message", params={"level": "info"})
        assert await routed(log) is None  # GET stream
        assert await routed(log, ServerMessageMetadata(related_request_id=7)) == 7  # tagged by an HTTP upstream
        assert await routed(log, ServerMessageMetadata(related_request_id="7")) is None  # "7" is not 7
        # a cancelled request's stream is ended with -32800 and its late answer dropped
        await client_in.send(SessionMessage(types.JSONRPCNotification(
            jsonrpc="2.0", method="notifications/cancelled", params={"requestId": 7})))
        assert (await upstream_in.receive()).message.method == "notifications/cancelled"  # the upstream stops too
        ended = (await client_out.receive()).message
        assert isinstance(ended, types.JSONRPCError) and ended.id == 7 and ended.error.code == -32800
        await upstream_out.send(SessionMessage(types.JSONRPCResponse(jsonrpc="2.0", id=7, result={})))
        # answered: progress for it goes to the GET stream from now on
        await upstream_out.send(SessionMessage(types.JSONRPCResponse(jsonrpc="2.0", id="a", result={})))
        answered = (await client_out.receive()).message
        assert answered.id == "a"  # the late answer to 7 was dropped before it
        assert await routed(progress) is None
        tg.cancel_scope.cancel()


@pytest.mark.parametrize(("url", "expected"), [
    ("http://h:1/sse", "sse"), ("http://h:1/sse/", "sse"), ("http://h:1/mcp", "http"), ("https://h/api/mcp", "http"),
    ("http://h:1/", "http"),
])
def test_upstream_transport_from_the_url_path(url: str, expected: str) -> None:
    assert transport_for(url) == expected
    assert transport_for(url, "sse") == "sse"


def test_parse_listen() -> None:
    assert parse_listen("stdio") is None
    listen = parse_listen("http://127.0.0.1:0")
    assert (listen.kind, listen.host, listen.port) == ("http", "127.0.0.1", 0)
    listen = parse_listen("sse://[::1]:8080")
    assert (listen.kind, listen.host, listen.port) == ("sse", "::1", 8080)
    for bad in ("tcp://h:1", "http://h", "http://:80", "sse://h:x"):
        with pytest.raises(ValueError):
            parse_listen(bad)


async def test_an_answer_is_the_transports_json_or_a_stream_once_the_call_sends_more() -> None:
    from proxy.listen.answer import Answer

    start = {"type": "http.response.start", "status": 200, "headers": [(b"content-type", b"application/json")]}
    body = {"type": "http.response.body", "body": b'{"jsonrpc":"2.0","id":1,"result":{}}', "more_body": False}

    wire: list[dict] = []

    async def record(message: dict) -> None:
        wire.append(message)

    plain = Answer(record, "s-1")
    await plain.send(start)
    assert not await plain.event(b'{"late":1}')  # the JSON answer has begun: nothing may squeeze in
    await plain.send(body)
    assert wire == [start, body]

    wire.clear()
    streamed = Answer(record, "s-1")
    assert await streamed.event(b'{"jsonrpc":"2.0","method":"notifications/progress"}')
    await streamed.send(start)  # swallowed: the stream's head went out already
    await streamed.send(body)
    assert not await streamed.event(b'{"late":1}')
    assert wire[0]["status"] == 200 and (b"content-type", b"text/event-stream") in wire[0]["headers"]
    assert (b"mcp-session-id", b"s-1") in wire[0]["headers"]
    assert [m["body"] for m in wire[1:]] == [
        b'event: message\r\ndata: {"jsonrpc":"2.0","method":"notifications/progress"}\r\n\r\n',
        b'event: message\r\ndata: {"jsonrpc":"2.0","id":1,"result":{}}\r\n\r\n',
    ]
    assert [m["more_body"] for m in wire[1:]] == [True, False]


async def test_a_call_answered_in_time_starts_no_stream_and_no_task_a_slow_one_streams_with_keepalives(
        monkeypatch: pytest.MonkeyPatch) -> None:
    from proxy.listen import answer as answer_module
    from proxy.listen.answer import Answer

    monkeypatch.setattr(answer_module, "STREAM_AFTER", 0.05)
    monkeypatch.setattr(answer_module, "KEEPALIVE", 0.05)
    wire: list[dict] = []

    async def record(message: dict) -> None:
        wire.append(message)

    before = asyncio.all_tasks()
    fast = Answer(record, "s-1")
    fast.watch()
    await fast.close()  # answered within STREAM_AFTER
    await anyio.sleep(0.15)
    assert wire == [] and not asyncio.all_tasks() - before  # nothing sent, nothing spawned for it

    slow = Answer(record, "s-1")
    slow.watch()
    await anyio.sleep(0.2)
    assert len(asyncio.all_tasks() - before) == 1  # the keep-alive
    assert (b"content-type", b"text/event-stream") in wire[0]["headers"]  # headers before the reply
    comments = [m["body"] for m in wire[1:]]
    assert len(comments) >= 2 and set(comments) == {b": waiting for the reply\r\n\r\n"}
    await slow.close()
    written = len(wire)
    assert not asyncio.all_tasks() - before  # close() returned after the keep-alive ended
    await anyio.sleep(0.15)
    assert len(wire) == written  # and nothing is written after it


async def test_an_abandoned_post_cancels_its_keep_alive_even_mid_write_so_nothing_is_written_after_it(
        monkeypatch: pytest.MonkeyPatch) -> None:
    from proxy.listen import answer as answer_module
    from proxy.listen.answer import Answer

    monkeypatch.setattr(answer_module, "STREAM_AFTER", 0.02)
    wire: list[dict] = []
    stuck = anyio.Event()

    async def blocking(message: dict) -> None:  # a client that stopped reading after the headers
        wire.append(message)
        if message["type"] == "http.response.body":
            stuck.set()
            await anyio.sleep_forever()

    before = asyncio.all_tasks()
    answer = Answer(blocking, "s-1")
    answer.watch()
    with anyio.fail_after(5):
        await stuck.wait()
    closed = anyio.Event()

    async def close() -> None:
        await answer.close(abandoned=True)
        closed.set()

    closer = asyncio.get_running_loop().create_task(close())
    with anyio.move_on_after(5):
        await closed.wait()
    closed_in_time = closed.is_set()
    for task in asyncio.all_tasks() - before - {closer}:
        task.cancel()  # a keep-alive left stuck would hold close() forever: end it so the test can fail
    await closer
    assert closed_in_time and not asyncio.all_tasks() - before
    assert [m["type"] for m in wire] == ["http.response.start", "http.response.body"]


async def test_a_keep_alive_that_failed_raises_its_error_when_the_answer_closes(
        monkeypatch: pytest.MonkeyPatch) -> None:
    from proxy.listen import answer as answer_module
    from proxy.listen.answer import Answer

    monkeypatch.setattr(answer_module, "STREAM_AFTER", 0.02)

    async def broken(message: dict) -> None:
        raise RuntimeError("the server's send is broken")

    answer = Answer(broken, "s-1")
    answer.watch()
    await anyio.sleep(0.1)
    with pytest.raises(RuntimeError, match="send is broken"):
        await answer.close()


def test_whether_a_tool_declares_param_headers_is_worked_out_once_per_catalog_entry(
        monkeypatch: pytest.MonkeyPatch) -> None:
    from proxy.core import catalog
    from proxy.core.catalog import ToolEntry

    walks: list[Any] = []
    real = catalog.x_mcp_header_map

    def counted(schema: Any) -> dict:
        walks.append(schema)
        return real(schema)

    monkeypatch.setattr(catalog, "x_mcp_header_map", counted)
    regional = ToolEntry("regional", SCHEMA, None, None)
    plain = ToolEntry("echo", {"type": "object", "properties": {"text": {"type": "string"}}}, None, None)
    invalid = ToolEntry("bad", {"type": "object", "properties": {"r": {"type": "array", "x-mcp-header": "R"}}},
                        None, None)
    assert [e.declares_param_headers for e in (regional, plain, invalid, regional, plain, invalid)] == [
        True, False, False, True, False, False]
    assert len(walks) == 2  # the invalid schema is rejected before its annotations are mapped, and nothing twice
    relisted = ToolEntry("regional", {"type": "object", "properties": {"region": {"type": "string"}}}, None, None)
    assert relisted.declares_param_headers is False  # a refreshed catalog's entry is its own
    assert relisted == ToolEntry("regional", relisted.input_schema, None, None)  # the answer is not a field


async def test_resumable_answers_keep_a_bounded_log_per_session(monkeypatch: pytest.MonkeyPatch) -> None:
    """Events are kept for resumption only within a per-session budget; the oldest streams are forgotten first."""
    from proxy.listen import answer as answer_module
    from proxy.listen.answer import Answer, Streams

    monkeypatch.setattr(answer_module, "MAX_SESSION_BYTES", 10_000)
    sent: list[dict] = []

    async def send(message: dict) -> None:
        sent.append(message)

    streams = Streams()
    answers = [Answer(send, "s", resumable=True, streams=streams) for _ in range(5)]
    for answer in answers:
        for _ in range(10):
            assert await answer.event(b'{"jsonrpc":"2.0","method":"notifications/progress","params":{"x":"' +
                                      b"y" * 400 + b'"}}')
    assert streams._bytes <= 10_000
    assert streams.find(f"{answers[0].stream_id}:0") is None  # forgotten: a resumption gets a 400
    newest, after = streams.find(f"{answers[-1].stream_id}:3")
    replayed: list[dict] = []

    async def resumed(message: dict) -> None:
        replayed.append(message)

    await newest.send({"type": "http.response.body", "body": b'{"jsonrpc":"2.0","id":1,"result":{}}',
                       "more_body": False})  # the reply: the stream ends
    assert await newest.resume(after, resumed)
    bodies = [m["body"] for m in replayed if m["type"] == "http.response.body" and m["body"]]
    assert len(bodies) == 8 and b'"id":1' in bodies[-1]  # events 4..10, then the reply


async def test_upstream_http_clients_are_the_sdks_but_share_one_tls_context(monkeypatch: pytest.MonkeyPatch) -> None:
    """Opening a session must not read the CA bundle again: one TLS context per process, the SDK's client otherwise."""
    import httpx2
    from mcp.shared._httpx_utils import create_mcp_http_client

    from proxy.upstream import http_client as module

    built: list[object] = []
    real = httpx2.create_ssl_context

    def counting(*args, **kwargs):
        built.append(args or kwargs)
        return real(*args, **kwargs)

    monkeypatch.setattr(module.httpx2, "create_ssl_context", counting)
    module.tls_context.cache_clear()
    try:
        headers = {"X-Tenant": "a"}
        ours = [module.http_client(headers=headers) for _ in range(3)]
        sdk = create_mcp_http_client(headers=headers)
        assert len(built) == 1  # built once, on first use, with httpx2's defaults
        for client in ours:
            assert client.timeout == sdk.timeout
            assert client.headers["x-tenant"] == "a" and client.headers == sdk.headers
            assert (client.follow_redirects, client.trust_env) == (sdk.follow_redirects, sdk.trust_env)
        timeout = httpx2.Timeout(3.0)
        assert module.http_client(timeout=timeout).timeout == create_mcp_http_client(timeout=timeout).timeout
        for client in [*ours, sdk]:
            await client.aclose()
    finally:
        module.tls_context.cache_clear()


@pytest.mark.parametrize("ending", ["end of stream", "closed"])
async def test_the_session_inbox_takes_what_the_transport_parsed_and_ends_when_its_stream_ends(ending: str) -> None:
    from proxy.core.streams import mailbox
    from proxy.listen.http import _forward

    class Source:
        def __init__(self) -> None:
            self.items = ["first", "second"]

        def __aiter__(self) -> Source:
            return self

        async def __anext__(self) -> str:
            if self.items:
                return self.items.pop(0)
            if ending == "closed":
                raise anyio.ClosedResourceError  # what the SDK transport's read stream does once terminated
            raise StopAsyncIteration

        async def receive(self) -> str:
            return await self.__anext__()

    inbox_send, inbox = mailbox()
    got: list[str] = []
    async with anyio.create_task_group() as tg:
        tg.start_soon(_forward, Source(), inbox_send)
        with anyio.fail_after(5):
            async for item in inbox:
                got.append(item)
    assert got == ["first", "second"]


async def test_a_2026_07_28_post_is_aborted_by_cancelling_its_task_and_its_entry_goes_however_it_ends() -> None:
    """dispatch registers each modern POST for abort as the SDK does; the abort cancels the POST's own task
    (before its first step too), the entry is dropped when the task ends, and a reused id cuts its
    predecessor short while the successor stays registered."""
    from proxy.core.tasks import Spawner
    from proxy.upstream.streamable_http import _TaggingTransport

    transport = _TaggingTransport("http://127.0.0.1:9/mcp", pool=object())  # type: ignore[arg-type]
    started: list[Any] = []
    cancelled: list[Any] = []

    async def post(ctx: Any) -> None:
        started.append(ctx.session_message.id)
        try:
            await anyio.sleep_forever()
        except asyncio.CancelledError:
            cancelled.append(ctx.session_message.id)
            raise

    transport._handle_post_request = post  # type: ignore[method-assign]
    headers = {"mcp-protocol-version": "2026-07-28", "mcp-method": "tools/call"}

    def dispatch(spawner: Spawner, request_id: int) -> None:
        frame = Frame("request", {"jsonrpc": "2.0", "id": request_id, "method": "tools/call", "params": {}})
        assert transport.dispatch(frame, headers, client=None, read_stream_writer=None, tasks=spawner)

    with anyio.fail_after(5):
        async with anyio.create_task_group() as tg:
            spawner = Spawner()
            await tg.start(spawner.run)
            dispatch(spawner, 1)
            transport._in_flight_posts[1].scope.cancel()  # before the task's first step
            dispatch(spawner, 2)
            await anyio.sleep(0.01)
            transport._in_flight_posts[2].scope.cancel()  # mid-POST
            dispatch(spawner, 3)
            await anyio.sleep(0.01)
            dispatch(spawner, 3)  # the same id again: the first POST is cut short
            await anyio.sleep(0.01)
            assert started == [2, 3, 3] and cancelled == [2, 3]
            assert list(transport._in_flight_posts) == [3]
            tg.cancel_scope.cancel()
    assert cancelled == [2, 3, 3] and transport._in_flight_posts == {}


class _RecordingTransport:
    """An asyncio transport that records what is written to it."""

    def __init__(self) -> None:
        self.writes: list[bytes] = []
        self.events: list[str] = []
        self.closing = False

    def write(self, data: bytes) -> None:
        self.writes.append(bytes(data))
        self.events.append("write")

    def close(self) -> None:
        self.closing = True
        self.events.append("close")

    def abort(self) -> None:
        self.closing = True
        self.events.append("abort")

    def is_closing(self) -> bool:
        return self.closing

    def get_extra_info(self, name: str, default: Any = None) -> Any:
        return {"peername": ("127.0.0.1", 5), "sockname": ("127.0.0.1", 6)}.get(name, default)

    def pause_reading(self) -> None:
        self.events.append("pause_reading")

    def resume_reading(self) -> None:
        self.events.append("resume_reading")


async def test_writes_within_one_loop_step_leave_as_one_in_order_and_close_sends_what_is_held_first() -> None:
    from proxy.listen.http import _OneWriteTransport

    real = _RecordingTransport()
    transport = _OneWriteTransport(real, asyncio.get_running_loop())  # type: ignore[arg-type]
    buffer = bytearray(b"head ")
    transport.write(buffer)
    buffer[:] = b"XXXXX"  # a caller reusing its buffer does not change what was written
    transport.writelines([b"body ", b"more"])
    assert real.writes == []
    await asyncio.sleep(0)
    assert real.writes == [b"head body more"]
    transport.write(b"last")
    transport.close()
    assert real.events == ["write", "write", "close"] and real.writes[-1] == b"last"
    await asyncio.sleep(0)
    assert len(real.writes) == 2  # nothing sent twice, nothing after the close
    assert transport.get_extra_info("peername") == ("127.0.0.1", 5) and transport.is_closing()


async def test_held_writes_are_dropped_when_the_connection_is_aborted_or_already_closing() -> None:
    from proxy.listen.http import _OneWriteTransport

    real = _RecordingTransport()
    transport = _OneWriteTransport(real, asyncio.get_running_loop())  # type: ignore[arg-type]
    transport.write(b"lost")
    transport.abort()
    await asyncio.sleep(0)
    assert real.writes == [] and real.events == ["abort"]
    other = _RecordingTransport()
    transport = _OneWriteTransport(other, asyncio.get_running_loop())  # type: ignore[arg-type]
    transport.write(b"too late")
    other.closing = True  # the peer went away within the step
    await asyncio.sleep(0)
    assert other.writes == []


async def test_the_listener_s_http_protocol_answers_a_request_with_one_write_of_head_and_body() -> None:
    """Through uvicorn's own protocol, as the gate serves: a response's head and body leave in one write."""
    import uvicorn
    from uvicorn.server import ServerState

    from proxy.listen.http import _HttpProtocol

    async def app(scope: dict, receive: Any, send: Any) -> None:
        await send({"type": "http.response.start", "status": 200,
                    "headers": [(b"content-type", b"application/json"), (b"content-length", b"2")]})
        await send({"type": "http.response.body", "body": b"{}"})

    config = uvicorn.Config(app, lifespan="off", access_log=False, http=_HttpProtocol, proxy_headers=False)
    protocol = _HttpProtocol(config=config, server_state=ServerState(), app_state={},
                             _loop=asyncio.get_running_loop())
    real = _RecordingTransport()
    protocol.connection_made(real)  # type: ignore[arg-type]
    try:
        protocol.data_received(b"GET /x HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
        for _ in range(20):
            await asyncio.sleep(0)
            if real.writes:
                break
        await asyncio.sleep(0)
        assert len(real.writes) == 1, real.writes
        assert real.writes[0].startswith(b"HTTP/1.1 200") and real.writes[0].endswith(b"\r\n\r\n{}")
    finally:
        protocol.connection_lost(None)

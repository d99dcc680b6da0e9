"""The listening side over HTTP: legacy HTTP+SSE and Streamable HTTP, on uvicorn, through the SDK's transports.

  --listen sse://HOST:PORT    GET /sse opens a session, POST /messages/?session_id=… carries client messages
  --listen http://HOST:PORT   Streamable HTTP at /mcp (POST, GET, DELETE; Mcp-Session-Id)

Each client session gets its own upstream (see proxy/session.py:run_session). The
SDK's `StreamableHTTPSessionManager` wants a `Server` object to run, so this
module keeps its own small session table of `StreamableHTTPServerTransport`s
instead; `SseServerTransport` keeps its own.

Every request first passes, in this order: the Host/Origin check (the SDK's
`TransportSecurityMiddleware` with `TransportSecuritySettings`, against DNS
rebinding), the bearer token (`--auth-token`), the body size limit (the SDK's
`RequestBodyLimitMiddleware`; for a message POST, the same limit and answer
while its body is read for the wire rule), then, for a message POST, the wire
rule (proxy/core/jsonrpc.py:strict_loads) on the body before the SDK parses it. A
refusal is an HTTP status with a JSON-RPC error body (the request's id where
the body has one), so any MCP client can show it. uvicorn runs with a
connection cap, a header deadline and a header size limit (`_HttpProtocol`).

Streamable HTTP serves both eras at /mcp, routed as the SDK's session manager
routes them: a request whose MCP-Protocol-Version header names a version past
the handshake era, without an Mcp-Session-Id, is sessionless 2026-07-28 and
answered on its own (proxy/listen/sessionless.py); everything else is session
traffic.
"""

from __future__ import annotations

import asyncio
import hmac
import ipaddress
import json
import logging
import contextlib
import sys
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any
from uuid import uuid4

import anyio
import anyio.abc
import uvicorn
import mcp_types as types
from mcp.server.sse import SseServerTransport
from mcp.server.streamable_http import MCP_SESSION_ID_HEADER, StreamableHTTPServerTransport
from mcp.server.transport_security import (
    RequestBodyLimitMiddleware,
    TransportSecurityMiddleware,
    TransportSecuritySettings,
)
from mcp.shared.inbound import MCP_PROTOCOL_VERSION_HEADER
from mcp.shared.message import SessionMessage
from mcp_types.version import HANDSHAKE_PROTOCOL_VERSIONS
from starlette.datastructures import Headers
from starlette.requests import Request
from starlette.responses import Response
from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol

from proxy.core.deadline import LazyDeadline
from proxy.core.jsonrpc import WireError, wire_value
from proxy.core.streams import MailboxSender, ReadStream, mailbox
from proxy.listen.answer import RESUMABLE_SINCE, SCOPE_KEY, Answer, Streams
from proxy.listen.health import Health
from proxy.listen.posts import LeanPosts
from proxy.listen.router import StreamRouter
from proxy.listen.sessionless import Sessionless, forwarded_spec
from proxy.session import GateSettings, UpstreamSpec, run_session

logger = logging.getLogger("mcp-schema-gate")

DEFAULT_MAX_BODY = 4 * 1024 * 1024
DEFAULT_IDLE_TIMEOUT = 30 * 60.0
DEFAULT_MAX_SESSIONS = 100
LOOPBACK_HOSTS = ("127.0.0.1", "localhost", "[::1]")
MAX_HEAD_BYTES = 16 * 1024  # request line and headers; h11's default, which uvicorn's h11 protocol enforced


@dataclass
class ListenSettings:
    kind: str  # "sse" | "http"
    host: str = "127.0.0.1"
    port: int = 0
    auth_token: str | None = None
    max_body: int = DEFAULT_MAX_BODY
    idle_timeout: float | None = DEFAULT_IDLE_TIMEOUT
    max_sessions: int = DEFAULT_MAX_SESSIONS  # each may hold an upstream child process
    # Each request POST answered with one JSON body: no sse-starlette stream per
    # call, a large share of the listening side's cost (docs/performance.md); messages tied to a
    # call then travel on the GET stream (StreamRouter), since a JSON body has
    # no room for them and the SDK's transport would drop them.
    json_response: bool = False
    allowed_hosts: list[str] = field(default_factory=list)
    allowed_origins: list[str] = field(default_factory=list)
    max_connections: int = 1000
    header_timeout: float | None = 10.0
    # The sessionless path (proxy/listen/sessionless.py): stdio children shared per key, and the
    # client headers passed on to the upstream (each distinct value set gets its own upstream and catalog).
    upstream_pool: int = 1
    forward_headers: tuple[str, ...] = ()

    def security(self) -> TransportSecuritySettings:
        hosts = {*LOOPBACK_HOSTS, self.host if ":" not in self.host else f"[{self.host}]"}
        allowed_hosts = [*self.allowed_hosts] + [f"{h}:*" for h in sorted(hosts)] + sorted(hosts)
        allowed_origins = [*self.allowed_origins] + [f"http://{h}:*" for h in sorted(hosts)] + [
            f"http://{h}" for h in sorted(hosts)
        ]
        return TransportSecuritySettings(
            enable_dns_rebinding_protection=True, allowed_hosts=allowed_hosts, allowed_origins=allowed_origins
        )


def parse_listen(value: str) -> ListenSettings | None:
    """`stdio` → None; `sse://HOST:PORT` or `http://HOST:PORT` → ListenSettings. Raises ValueError.

    The endpoint path the gate prints (`http://HOST:PORT/mcp`, `sse://HOST:PORT/sse`) is accepted too.
    """
    if value == "stdio":
        return None
    scheme, sep, rest = value.partition("://")
    if not sep or scheme not in ("sse", "http"):
        raise ValueError(f"--listen must be stdio, sse://HOST:PORT or http://HOST:PORT, not {value!r}")
    authority, _, path = rest.partition("/")
    endpoint = "mcp" if scheme == "http" else "sse"
    if path.strip("/") not in ("", endpoint):
        raise ValueError(f"--listen {value!r}: the endpoint path is always /{endpoint}; give {scheme}://{authority}")
    host, _, port = authority.rpartition(":")
    if not host or not port.isdigit():
        raise ValueError(f"--listen {value!r}: expected {scheme}://HOST:PORT (port 0 picks a free one)")
    return ListenSettings(kind=scheme, host=host.strip("[]"), port=int(port))


def is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def listen_settings(args: Any, token: str | None) -> ListenSettings | None:
    """The listening side from the command line (None for stdio); raises ValueError with what to change."""
    listen = parse_listen(args.listen)
    if listen is None:
        if token:
            raise ValueError("--auth-token applies to an HTTP --listen only")
        if args.json_response:
            raise ValueError("--json-response applies to --listen http://HOST:PORT only")
        return None
    if args.json_response and listen.kind != "http":
        raise ValueError("--json-response applies to --listen http://HOST:PORT only")
    if not token and not is_loopback(listen.host) and not args.allow_unauthenticated:
        raise ValueError(f"--listen {args.listen}: listening beyond this machine without --auth-token would let "
                         "anyone reach the upstream; add --auth-token-env VAR, or --allow-unauthenticated if "
                         "something in front of the gate checks every request")
    listen.auth_token = token
    listen.max_body = args.max_body_bytes
    listen.idle_timeout = args.idle_timeout if args.idle_timeout > 0 else None
    listen.max_sessions = max(1, args.max_sessions)
    listen.max_connections = max(1, args.max_connections)
    listen.header_timeout = args.header_timeout if args.header_timeout > 0 else None
    listen.json_response = args.json_response
    listen.allowed_hosts = list(args.allow_host)
    listen.allowed_origins = list(args.allow_origin)
    listen.upstream_pool = max(1, args.upstream_pool)
    forwarded = tuple(dict.fromkeys(name.strip().lower() for name in args.forward_header))
    if token and "authorization" in forwarded:
        raise ValueError("--forward-header Authorization with --auth-token: the client's Authorization header "
                         "carries the gate's token; forward another header, or drop --auth-token")
    if any(not name or ":" in name for name in forwarded):
        raise ValueError("--forward-header takes a header name (e.g. X-Tenant), not 'NAME: VALUE'")
    listen.forward_headers = forwarded
    return listen


def refusal(status: int, message: str, code: int = types.INVALID_REQUEST, data: Any = None,
            headers: dict[str, str] | None = None, reply_id: Any = None) -> Response:
    error: dict[str, Any] = {"code": code, "message": message}
    if data is not None:
        error["data"] = data
    body = json.dumps({"jsonrpc": "2.0", "id": reply_id, "error": error})
    return Response(body, status_code=status, media_type="application/json", headers=headers)


async def _too_large(scope: dict, receive: Any, send: Any) -> None:
    """The answer the SDK's `RequestBodyLimitMiddleware` gives a body past the limit."""
    await Response("Request body too large", status_code=413)(scope, receive, send)


class _Replay:
    """An ASGI `receive` that gives the body already read once, then defers to the connection's.

    It carries the body as the wire rule parsed it (`value`), for the lean
    POST path.
    """

    __slots__ = ("body", "value", "_receive", "_replayed")

    def __init__(self, body: bytes, value: Any, receive: Any) -> None:
        self.body = body
        self.value = value
        self._receive = receive
        self._replayed = False

    async def __call__(self) -> dict:
        if not self._replayed:
            self._replayed = True
            return {"type": "http.request", "body": self.body, "more_body": False}
        return await self._receive()


class GateApp:
    """The ASGI application: checks, then the SSE or Streamable HTTP endpoints."""

    def __init__(self, listen: ListenSettings, spec: UpstreamSpec, settings: GateSettings,
                 task_group: anyio.abc.TaskGroup, stop: anyio.Event) -> None:
        self.listen = listen
        self.stop = stop
        self.spec = spec
        self.settings = settings
        self._tg = task_group
        self._security = TransportSecurityMiddleware(listen.security())
        self._token = listen.auth_token.encode() if listen.auth_token else None
        self._sse = SseServerTransport("/messages/", max_request_body_size=listen.max_body)
        self._limited = RequestBodyLimitMiddleware(self._route, listen.max_body)
        self.sessions: dict[str, StreamableHTTPServerTransport] = {}
        self.streams: dict[str, Streams] = {}  # each session's resumable answer streams
        self.session_scopes: dict[str, anyio.CancelScope] = {}
        self.posts: dict[str, LeanPosts] = {}  # each open session's lean POST path (proxy/listen/posts.py)
        # Each session's hash of its --forward-header values: its upstream was opened with them, so a
        # request carrying others must not ride on it.
        self.session_keys: dict[str, str] = {}
        self.sse_sessions = 0
        self.health = Health(spec)
        self.sessionless = Sessionless(spec, settings, task_group, stop, pool=listen.upstream_pool,
                                       forward_headers=listen.forward_headers, idle_timeout=listen.idle_timeout,
                                       max_upstreams=listen.max_sessions, json_response=listen.json_response)

    def _full(self) -> Response | None:
        if len(self.sessions) + self.sse_sessions < self.listen.max_sessions:
            return None
        logger.warning("mcp-schema-gate: refused a new session: %d sessions are open (--max-sessions)",
                       self.listen.max_sessions)
        return refusal(503, f"Too many open sessions ({self.listen.max_sessions}); try again later",
                       types.INTERNAL_ERROR, headers={"Retry-After": "5"})

    async def __call__(self, scope: dict, receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            return
        request = Request(scope, receive)
        refused = await self._security.validate_request(request, is_post=False)
        if refused is not None:
            text = bytes(refused.body).decode(errors="replace")
            return await refusal(refused.status_code, f"Refused: {text}")(scope, receive, send)
        if scope["path"].rstrip("/") == "/healthz":  # before the token: balancers probe without one
            return await self.health(scope, receive, send)
        if self._token is not None:
            given = request.headers.get("authorization", "")
            scheme, _, token = given.partition(" ")
            if scheme.lower() != "bearer" or not hmac.compare_digest(token.strip().encode(), self._token):
                return await refusal(401, "Unauthorized: a valid 'Authorization: Bearer <token>' header is required",
                                     headers={"WWW-Authenticate": 'Bearer realm="mcp-schema-gate"'})(
                    scope, receive, send)
        if scope["method"] == "POST" and (scope["path"].rstrip("/") or "/") in ("/mcp", "/messages"):
            # A message POST: its body is read whole for the wire rule, which enforces the size limit on
            # the way (the SDK's middleware would read and copy it once more for that alone).
            checked = await self._wire_checked(scope, receive, send)
            if checked is not None:
                await self._route(scope, checked, send)
            return
        await self._limited(scope, receive, send)

    async def _route(self, scope: dict, receive: Any, send: Any) -> None:
        path = scope["path"].rstrip("/") or "/"
        if path == "/metrics" and scope["method"] == "GET" and self.settings.metrics.enabled:
            body, content_type = self.settings.metrics.exposition()  # type: ignore[attr-defined]
            return await Response(body, media_type=content_type)(scope, receive, send)
        if self.listen.kind == "http" and path == "/mcp":
            return await self._streamable(scope, receive, send)
        if self.listen.kind == "sse" and path == "/sse" and scope["method"] == "GET":
            return await self._sse_session(scope, receive, send)
        if self.listen.kind == "sse" and path == "/messages":
            return await self._sse.handle_post_message(scope, receive, send)
        where = "/mcp" if self.listen.kind == "http" else "GET /sse and POST /messages/"
        await refusal(404, f"Not Found: this MCP endpoint is at {where}")(scope, receive, send)

    async def _wire_checked(self, scope: dict, receive: Any, send: Any) -> Any:
        """The POST's body, within the size limit, checked against the wire rule before the SDK parses it.

        Returns a `receive` that replays the body, or None once the POST has
        been refused (HTTP 413 past `--max-body-bytes`, declared or sent, as
        the SDK's `RequestBodyLimitMiddleware` answers; HTTP 400 with the
        JSON-RPC error for a frame the wire rule (jsonrpc.strict_loads)
        refuses, the request's id where it has one) or the client has gone.
        """
        limit = self.listen.max_body
        for name, value in scope["headers"]:
            if name == b"content-length":
                if value.isdigit() and int(value) > limit:
                    await _too_large(scope, receive, send)
                    return None
                break
        chunks: list[bytes] = []
        size = 0
        while True:
            message = await receive()
            if message["type"] == "http.disconnect":
                return None
            chunk = message.get("body", b"")
            size += len(chunk)
            if size > limit:
                await _too_large(scope, receive, send)
                return None
            chunks.append(chunk)
            if not message.get("more_body", False):
                break
        body = chunks[0] if len(chunks) == 1 else b"".join(chunks)
        value = wire_value(body)
        if isinstance(value, WireError):
            logger.warning("mcp-schema-gate: refused a client frame at the wire: %s", value.message)
            await refusal(400, value.message, value.code, reply_id=value.reply_id)(scope, receive, send)
            return None
        return _Replay(body, value, receive)

    async def _session(self, streams: Any, bind: Any = None, spec: UpstreamSpec | None = None) -> None:
        """One client session; whatever goes wrong in it ends that session only, never the server."""
        try:
            await run_session(streams, spec or self.spec, self.settings, stop=self.stop, bind=bind)
        except Exception:
            logger.exception("mcp-schema-gate: a session failed; it is closed, the others go on")

    # ---- legacy HTTP+SSE ----------------------------------------------------------

    async def _sse_session(self, scope: dict, receive: Any, send: Any) -> None:
        if (full := self._full()) is not None:
            return await full(scope, receive, send)
        self.sse_sessions += 1
        try:
            async with self._sse.connect_sse(scope, receive, send) as streams:
                await self._session(streams)
        except ValueError:  # the transport already answered the refusal
            return
        finally:
            self.sse_sessions -= 1

    # ---- Streamable HTTP ------------------------------------------------------------

    async def _streamable(self, scope: dict, receive: Any, send: Any) -> None:
        headers = Headers(scope=scope)
        session_id = headers.get(MCP_SESSION_ID_HEADER)
        version = headers.get(MCP_PROTOCOL_VERSION_HEADER)
        if version is not None and version not in HANDSHAKE_PROTOCOL_VERSIONS and session_id is None:
            decoded = receive.value if type(receive) is _Replay else None
            return await self.sessionless.handle(scope, receive, send, decoded)
        if scope["method"] == "GET" and (last_event_id := headers.get("last-event-id")) is not None:
            return await self._resume(session_id, last_event_id, scope, receive, send)
        if session_id is not None:
            transport = self.sessions.get(session_id)
            if transport is None:
                return await refusal(404, "Session not found")(scope, receive, send)
            if self.listen.forward_headers and self._forwarded(headers)[0] != self.session_keys.get(session_id):
                return await refusal(403, "Forbidden: this request's forwarded headers ("
                                     f"{', '.join(self.listen.forward_headers)}) differ from the ones the session "
                                     "was opened with; open a new session")(scope, receive, send)
            await self._handle(transport, scope, receive, send, session_id, headers)
            if transport.is_terminated:
                self._end(session_id)
            return
        if scope["method"] != "POST":
            return await refusal(400, "Bad Request: Missing session ID")(scope, receive, send)
        if (full := self._full()) is not None:
            return await full(scope, receive, send)
        session_id = uuid4().hex
        # JSON mode always: each POST's answer becomes an SSE stream only when its
        # call needs one (proxy/listen/answer.py), unless --json-response says never.
        transport = StreamableHTTPServerTransport(mcp_session_id=session_id, idle_timeout=self.listen.idle_timeout,
                                                  is_json_response_enabled=True)
        self.sessions[session_id] = transport
        key, spec = self._forwarded(headers)
        self.session_keys[session_id] = key
        await self._tg.start(self._run_streamable, session_id, transport, spec)
        status: list[int] = []

        async def watch(message: dict) -> None:
            if message["type"] == "http.response.start":
                status.append(message["status"])
            await send(message)

        await self._handle(transport, scope, receive, watch, session_id, headers)
        if not status or status[0] >= 400:
            self._end(session_id)  # no session was established

    async def _resume(self, session_id: str | None, last_event_id: str, scope: dict, receive: Any,
                      send: Any) -> None:
        """GET with Last-Event-ID: the rest of a request's answer stream that the client lost."""
        streams = self.streams.get(session_id) if session_id is not None else None
        found = streams.find(last_event_id) if streams is not None else None
        if found is not None and await found[0].resume(found[1], send):
            return
        await refusal(400, f"Bad Request: no stream of this session can be resumed from event {last_event_id!r} "
                      "(unknown, or its events are no longer kept); open a new GET stream without "
                      "Last-Event-ID")(scope, receive, send)

    async def _handle(self, transport: StreamableHTTPServerTransport, scope: dict, receive: Any, send: Any,
                      session_id: str, headers: Headers) -> None:
        """Let the transport answer, or the lean path (proxy/listen/posts.py) when it can.

        A request POST's answer goes through an `Answer` (proxy/listen/answer.py)
        unless every answer is one JSON body (--json-response).
        """
        posts = self.posts.get(session_id)
        frame = posts.take(scope, headers, receive.value) if posts is not None and type(receive) is _Replay else None
        if scope["method"] != "POST" or self.listen.json_response:
            if frame is not None:
                assert posts is not None
                return await posts.answer(frame, send)
            return await transport.handle_request(scope, receive, send)
        version = headers.get(MCP_PROTOCOL_VERSION_HEADER) or ""
        streams = self.streams.get(session_id)
        if streams is None:  # not setdefault: that would build a Streams on every POST
            streams = self.streams[session_id] = Streams()
        answer = Answer(send, session_id, resumable=version >= RESUMABLE_SINCE, streams=streams)
        scope[SCOPE_KEY] = answer
        answer.watch()
        try:
            if frame is not None:
                assert posts is not None
                await posts.answer(frame, answer.send)
            else:
                await transport.handle_request(scope, receive, answer.send)
        except BaseException:
            await answer.close(abandoned=True)
            raise
        await answer.close()

    def _forwarded(self, headers: Headers) -> tuple[str, UpstreamSpec]:
        """(key, the upstream spec) for the client's --forward-header values (proxy/listen/sessionless.py)."""
        if not self.listen.forward_headers:
            return "", self.spec
        return forwarded_spec(self.spec, self.listen.forward_headers, {k.lower(): v for k, v in headers.items()})

    async def _run_streamable(self, session_id: str, transport: StreamableHTTPServerTransport, spec: UpstreamSpec,
                              *, task_status: Any = anyio.TASK_STATUS_IGNORED) -> None:
        scope = anyio.CancelScope()
        self.session_scopes[session_id] = scope
        try:
            with scope:
                async with transport.connect() as (read_stream, write_stream), anyio.create_task_group() as inner:
                    # The relay reads one inbox: what the transport parsed is
                    # forwarded into it, and the lean path puts its Frames there directly.
                    inbox_send, inbox = mailbox()
                    inner.start_soon(_forward, read_stream, inbox_send)
                    posts = self.posts[session_id] = LeanPosts(transport, session_id, inbox_send)
                    task_status.started()
                    router = StreamRouter(inbox, write_stream, related_streams=not self.listen.json_response,
                                          posts=posts)
                    idle = transport.idle_scope or anyio.CancelScope()
                    try:
                        with idle:
                            await self._session(router.streams, bind=router.bind, spec=spec)
                        if idle.cancel_called and not scope.cancel_called:
                            logger.warning("mcp-schema-gate: session %s idle for %ss, closed", session_id,
                                           self.listen.idle_timeout)
                    finally:
                        # Terminated before connect() exits: its message router
                        # then ends quietly, and the client's next request gets 404.
                        self.sessions.pop(session_id, None)
                        if not transport.is_terminated:
                            with anyio.CancelScope(shield=True):
                                await transport.terminate()
                        inbox.close()  # a lean POST arriving now is answered as terminated
                        inner.cancel_scope.cancel()  # the forwarder may be parked on an inbox nobody reads
        finally:
            if (posts := self.posts.pop(session_id, None)) is not None:
                posts.close()
            self.sessions.pop(session_id, None)
            self.session_scopes.pop(session_id, None)
            self.streams.pop(session_id, None)
            self.session_keys.pop(session_id, None)

    def _end(self, session_id: str) -> None:
        self.sessions.pop(session_id, None)
        scope = self.session_scopes.get(session_id)
        if scope is not None:
            scope.cancel()


async def _forward(source: ReadStream, inbox: MailboxSender[SessionMessage | Exception]) -> None:
    """Everything the SDK transport parsed, into the session's inbox; the inbox ends when the transport's stream does."""
    with contextlib.suppress(anyio.ClosedResourceError, anyio.BrokenResourceError, anyio.EndOfStream):
        async with inbox:
            async for item in source:
                await inbox.send(item)


class _HttpProtocol(HttpToolsProtocol):
    """uvicorn's httptools protocol with a deadline and a size limit for request headers (uvicorn has neither).

    A connection that has not delivered a request's headers within
    `header_timeout` of opening (or of its previous response ending) is
    closed, so idle or trickling connections cannot pile up; one whose
    headers run past `MAX_HEAD_BYTES` is answered 400 and closed, so headers
    cannot grow without bound until then (uvicorn's h11 protocol has that
    limit, its httptools protocol does not). httptools over h11: the same
    uvicorn, a C parser (docs/performance.md has the A/B). It reads
    `transport` and overrides parser callbacks and `data_received`, uvicorn
    internals pinned and guarded by tests/test_sdk_seams.py. It hands uvicorn
    a `_OneWriteTransport`, so that a response's head and body leave in one
    write (tests/proxy_http/test_http_units.py drives this protocol to check).
    """

    header_timeout: float | None = None
    _headers_pending = False
    _head_bytes = 0
    _header_deadline: LazyDeadline | None = None  # one timer per connection, not per request (core/deadline.py)

    def connection_made(self, transport: Any) -> None:
        super().connection_made(_OneWriteTransport(transport, self.loop))
        if self.header_timeout is not None:
            self._header_deadline = LazyDeadline(self.loop, self._headers_too_slow)
        self._await_headers()

    def connection_lost(self, exc: Exception | None) -> None:
        super().connection_lost(exc)
        if self._header_deadline is not None:
            self._header_deadline.cancel()

    def data_received(self, data: bytes) -> None:
        if self._headers_pending:
            self._head_bytes += len(data)
        super().data_received(data)
        if self._headers_pending and self._head_bytes > MAX_HEAD_BYTES and not self.transport.is_closing():
            self.send_400_response("Request headers too large.")

    def on_headers_complete(self) -> None:
        self._headers_pending = False
        if self._header_deadline is not None:
            self._header_deadline.clear()
        super().on_headers_complete()

    def on_response_complete(self) -> None:
        super().on_response_complete()
        self._await_headers()

    def _await_headers(self) -> None:
        self._headers_pending, self._head_bytes = True, 0
        if self._header_deadline is not None:
            self._header_deadline.set(self.header_timeout)  # type: ignore[arg-type]

    def _headers_too_slow(self) -> None:
        if self._headers_pending and not self.transport.is_closing():
            self.transport.close()


class _OneWriteTransport:
    """A connection's transport whose writes within one step of the event loop go out as one.

    uvicorn writes a response's status line and headers, then its body, as
    two transport writes: two system calls and, with TCP_NODELAY, two
    segments, each of which may wake the client. Held until the current
    step ends, they leave in one write; the order of writes is kept, and
    `close()` (uvicorn closes after a response that ends the connection)
    sends what is held first. Everything else is the transport's own.
    """

    __slots__ = ("_transport", "_loop", "_held")

    def __init__(self, transport: asyncio.Transport, loop: asyncio.AbstractEventLoop) -> None:
        self._transport = transport
        self._loop = loop
        self._held: list[bytes] | None = None

    def write(self, data: bytes) -> None:
        data = data if type(data) is bytes else bytes(data)  # a caller may reuse a mutable buffer
        held = self._held
        if held is None:
            self._held = [data]
            self._loop.call_soon(self._flush)
        else:
            held.append(data)

    def writelines(self, chunks: Any) -> None:
        for chunk in chunks:
            self.write(chunk)

    def _flush(self) -> None:
        held, self._held = self._held, None
        if held and not self._transport.is_closing():
            self._transport.write(held[0] if len(held) == 1 else b"".join(held))

    def close(self) -> None:
        self._flush()
        self._transport.close()

    def write_eof(self) -> None:
        self._flush()
        self._transport.write_eof()

    def abort(self) -> None:
        self._held = None
        self._transport.abort()

    def is_closing(self) -> bool:
        return self._transport.is_closing()

    def get_extra_info(self, name: str, default: Any = None) -> Any:
        return self._transport.get_extra_info(name, default)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._transport, name)


class _Server(uvicorn.Server):
    """uvicorn's Server without its signal handlers: the gate's one signal loop (cli.run_until_signal) decides."""

    @contextlib.contextmanager
    def capture_signals(self) -> Iterator[None]:
        yield


async def serve_http(listen: ListenSettings, spec: UpstreamSpec, settings: GateSettings,
                     stop: anyio.Event, ready: Any = None) -> int:
    """Serve until `stop` is set. `ready(host, port)` is called once the socket is bound."""
    protocol = type("GateHttpProtocol", (_HttpProtocol,), {"header_timeout": listen.header_timeout})
    async with anyio.create_task_group() as tg:
        app = GateApp(listen, spec, settings, tg, stop)
        # proxy_headers off: nothing here reads the client's address or scheme, which that middleware
        # would rewrite from a trusted peer's X-Forwarded-* headers, a layer every request passed through.
        config = uvicorn.Config(app, host=listen.host, port=listen.port, lifespan="off", log_level="warning",
                                access_log=False, timeout_graceful_shutdown=2, http=protocol,
                                limit_concurrency=listen.max_connections, proxy_headers=False)
        server = _Server(config)

        async def stop_serving() -> None:
            await stop.wait()
            server.should_exit = True

        async def announce() -> None:
            while not server.started:
                await anyio.sleep(0.01)
            for sock_server in server.servers:
                for sock in sock_server.sockets:
                    host, port = sock.getsockname()[:2]
                    endpoint = "/mcp" if listen.kind == "http" else "/sse"
                    shown = f"[{host}]" if ":" in host else host
                    print(f"mcp-schema-gate: listening on http://{shown}:{port}{endpoint} "
                          f"({'Streamable HTTP' if listen.kind == 'http' else 'HTTP+SSE'}), "
                          f"upstream {spec.describe()}", file=sys.stderr, flush=True)
                    if ready is not None:
                        ready(host, port)
                    return

        tg.start_soon(announce)
        tg.start_soon(stop_serving)
        try:
            await server.serve()
        finally:
            for scope in list(app.session_scopes.values()):
                scope.cancel()
            tg.cancel_scope.cancel()
    return 0

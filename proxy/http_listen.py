"""The listening side over HTTP: legacy HTTP+SSE and Streamable HTTP, on uvicorn, through the SDK's transports.

  --listen sse://HOST:PORT    GET /sse opens a session, POST /messages/?session_id=… carries client messages
  --listen http://HOST:PORT   Streamable HTTP at /mcp (POST, GET, DELETE; Mcp-Session-Id)

Each client session gets its own upstream (see sessions.run_session). The
SDK's `StreamableHTTPSessionManager` wants a `Server` object to run, so this
module keeps its own small session table of `StreamableHTTPServerTransport`s
instead; `SseServerTransport` keeps its own.

Every request first passes, in this order: the Host/Origin check (the SDK's
`TransportSecurityMiddleware` with `TransportSecuritySettings`, against DNS
rebinding), the bearer token (`--auth-token`), the body size limit (the SDK's
`RequestBodyLimitMiddleware`). A refusal is an HTTP status with a JSON-RPC
error body (id null), so any MCP client can show it.

2026-07-28 (the stateless protocol) is declined on this side: a request whose
MCP-Protocol-Version header is not a handshake-era version gets HTTP 400 with
JSON-RPC -32022 naming the supported versions, which the SDK's auto-mode
client answers by falling back to the initialize handshake.
"""

from __future__ import annotations

import hmac
import json
import logging
import signal
import sys
from dataclasses import dataclass, field
from typing import Any
from uuid import uuid4

import anyio
import mcp_types as types
from mcp.server.sse import SseServerTransport
from mcp.server.streamable_http import MCP_SESSION_ID_HEADER, StreamableHTTPServerTransport
from mcp.server.transport_security import (
    RequestBodyLimitMiddleware,
    TransportSecurityMiddleware,
    TransportSecuritySettings,
)
from mcp.shared.inbound import MCP_PROTOCOL_VERSION_HEADER
from mcp_types.version import HANDSHAKE_PROTOCOL_VERSIONS
from starlette.datastructures import Headers
from starlette.requests import Request
from starlette.responses import Response

from proxy.http_answer import SCOPE_KEY, Answer
from proxy.sessions import GateSettings, StreamRouter, UpstreamSpec, run_session

logger = logging.getLogger("mcp-schema-gate")

DEFAULT_MAX_BODY = 4 * 1024 * 1024
DEFAULT_IDLE_TIMEOUT = 30 * 60.0
DEFAULT_MAX_SESSIONS = 100
LOOPBACK_HOSTS = ("127.0.0.1", "localhost", "[::1]")


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
    # call, which roughly halves the listening side's cost; messages tied to a
    # call then travel on the GET stream (StreamRouter), since a JSON body has
    # no room for them and the SDK's transport would drop them.
    json_response: bool = False
    allowed_hosts: list[str] = field(default_factory=list)
    allowed_origins: list[str] = field(default_factory=list)

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
    """`stdio` → None; `sse://HOST:PORT` or `http://HOST:PORT` → ListenSettings. Raises ValueError."""
    if value == "stdio":
        return None
    scheme, sep, rest = value.partition("://")
    if not sep or scheme not in ("sse", "http"):
        raise ValueError(f"--listen must be stdio, sse://HOST:PORT or http://HOST:PORT, not {value!r}")
    rest = rest.rstrip("/")
    host, _, port = rest.rpartition(":")
    if not host or not port.isdigit():
        raise ValueError(f"--listen {value!r}: expected HOST:PORT (port 0 picks a free one)")
    return ListenSettings(kind=scheme, host=host.strip("[]"), port=int(port))


def refusal(status: int, message: str, code: int = types.INVALID_REQUEST, data: Any = None,
            headers: dict[str, str] | None = None) -> Response:
    error: dict[str, Any] = {"code": code, "message": message}
    if data is not None:
        error["data"] = data
    body = json.dumps({"jsonrpc": "2.0", "id": None, "error": error})
    return Response(body, status_code=status, media_type="application/json", headers=headers)


class GateApp:
    """The ASGI application: checks, then the SSE or Streamable HTTP endpoints."""

    def __init__(self, listen: ListenSettings, spec: UpstreamSpec, settings: GateSettings,
                 task_group: anyio.abc.TaskGroup) -> None:
        self.listen = listen
        self.spec = spec
        self.settings = settings
        self._tg = task_group
        self._security = TransportSecurityMiddleware(listen.security())
        self._token = listen.auth_token.encode() if listen.auth_token else None
        self._sse = SseServerTransport("/messages/", max_request_body_size=listen.max_body)
        self._limited = RequestBodyLimitMiddleware(self._route, listen.max_body)
        self.sessions: dict[str, StreamableHTTPServerTransport] = {}
        self.session_scopes: dict[str, anyio.CancelScope] = {}
        self.sse_sessions = 0

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
        if self._token is not None:
            given = request.headers.get("authorization", "")
            scheme, _, token = given.partition(" ")
            if scheme.lower() != "bearer" or not hmac.compare_digest(token.strip().encode(), self._token):
                return await refusal(401, "Unauthorized: a valid 'Authorization: Bearer <token>' header is required",
                                     headers={"WWW-Authenticate": 'Bearer realm="mcp-schema-gate"'})(
                    scope, receive, send)
        await self._limited(scope, receive, send)

    async def _route(self, scope: dict, receive: Any, send: Any) -> None:
        path = scope["path"].rstrip("/") or "/"
        if self.listen.kind == "http" and path == "/mcp":
            return await self._streamable(scope, receive, send)
        if self.listen.kind == "sse" and path == "/sse" and scope["method"] == "GET":
            return await self._sse_session(scope, receive, send)
        if self.listen.kind == "sse" and path == "/messages":
            return await self._sse.handle_post_message(scope, receive, send)
        where = "/mcp" if self.listen.kind == "http" else "GET /sse and POST /messages/"
        await refusal(404, f"Not Found: this MCP endpoint is at {where}")(scope, receive, send)

    # ---- legacy HTTP+SSE ----------------------------------------------------------

    async def _sse_session(self, scope: dict, receive: Any, send: Any) -> None:
        if (full := self._full()) is not None:
            return await full(scope, receive, send)
        self.sse_sessions += 1
        try:
            async with self._sse.connect_sse(scope, receive, send) as streams:
                await run_session(streams, self.spec, self.settings)
        except ValueError:  # the transport already answered the refusal
            return
        finally:
            self.sse_sessions -= 1

    # ---- Streamable HTTP ------------------------------------------------------------

    async def _streamable(self, scope: dict, receive: Any, send: Any) -> None:
        headers = Headers(scope=scope)
        session_id = headers.get(MCP_SESSION_ID_HEADER)
        version = headers.get(MCP_PROTOCOL_VERSION_HEADER)
        if version is not None and version not in HANDSHAKE_PROTOCOL_VERSIONS:
            supported = list(HANDSHAKE_PROTOCOL_VERSIONS)
            return await refusal(
                400, f"Unsupported protocol version {version!r}: this gate serves the initialize handshake "
                f"({', '.join(supported)})", types.UNSUPPORTED_PROTOCOL_VERSION,
                {"supported": supported, "requested": version})(scope, receive, send)
        if session_id is not None:
            transport = self.sessions.get(session_id)
            if transport is None:
                return await refusal(404, "Session not found")(scope, receive, send)
            await transport.handle_request(scope, receive, self._answer(scope, send, session_id))
            if transport.is_terminated:
                self._end(session_id)
            return
        if scope["method"] != "POST":
            return await refusal(400, "Bad Request: Missing session ID")(scope, receive, send)
        if (full := self._full()) is not None:
            return await full(scope, receive, send)
        session_id = uuid4().hex
        # JSON mode always: each POST's answer becomes an SSE stream only when its
        # call needs one (proxy/http_answer.py), unless --json-response says never.
        transport = StreamableHTTPServerTransport(mcp_session_id=session_id, idle_timeout=self.listen.idle_timeout,
                                                  is_json_response_enabled=True)
        self.sessions[session_id] = transport
        await self._tg.start(self._run_streamable, session_id, transport)
        status: list[int] = []

        async def watch(message: dict) -> None:
            if message["type"] == "http.response.start":
                status.append(message["status"])
            await send(message)

        await transport.handle_request(scope, receive, self._answer(scope, watch, session_id))
        if not status or status[0] >= 400:
            self._end(session_id)  # no session was established

    def _answer(self, scope: dict, send: Any, session_id: str) -> Any:
        """The send a request POST's answer goes through (see proxy/http_answer.py)."""
        if scope["method"] != "POST" or self.listen.json_response:
            return send
        answer = Answer(send, session_id)
        scope[SCOPE_KEY] = answer
        return answer.send

    async def _run_streamable(self, session_id: str, transport: StreamableHTTPServerTransport,
                              *, task_status: Any = anyio.TASK_STATUS_IGNORED) -> None:
        scope = anyio.CancelScope()
        self.session_scopes[session_id] = scope
        try:
            with scope:
                async with transport.connect() as (read_stream, write_stream):
                    task_status.started()
                    router = StreamRouter(read_stream, write_stream, related_streams=not self.listen.json_response)
                    idle = transport.idle_scope or anyio.CancelScope()
                    try:
                        with idle:
                            await run_session(router.streams, self.spec, self.settings)
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
        finally:
            self.sessions.pop(session_id, None)
            self.session_scopes.pop(session_id, None)

    def _end(self, session_id: str) -> None:
        self.sessions.pop(session_id, None)
        scope = self.session_scopes.get(session_id)
        if scope is not None:
            scope.cancel()


async def serve_http(listen: ListenSettings, spec: UpstreamSpec, settings: GateSettings,
                     ready: Any = None) -> int:
    """Serve until cancelled. `ready(host, port)` is called once the socket is bound."""
    import uvicorn

    async with anyio.create_task_group() as tg:
        app = GateApp(listen, spec, settings, tg)
        config = uvicorn.Config(app, host=listen.host, port=listen.port, lifespan="off", log_level="warning",
                                access_log=False, timeout_graceful_shutdown=2)
        server = uvicorn.Server(config)
        status = 0

        async def watch_signals() -> None:
            nonlocal status
            # Server.serve() would install uvicorn's own signal.signal handlers
            # over the event loop's; _serve() is the same loop without that.
            with anyio.open_signal_receiver(signal.SIGTERM, signal.SIGINT, signal.SIGHUP) as signals:
                async for signum in signals:
                    print(f"mcp-schema-gate: received signal {signum}, closing every session", file=sys.stderr,
                          flush=True)
                    status = 128 + signum
                    server.should_exit = True
                    return

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
        tg.start_soon(watch_signals)
        try:
            await server._serve()
        finally:
            for scope in list(app.session_scopes.values()):
                scope.cancel()
            tg.cancel_scope.cancel()
    return status

"""The recording upstream test server (tests/proxy/upstream_server.py), served over HTTP on 127.0.0.1.

Streamable HTTP at /mcp (the SDK's StreamableHTTPSessionManager) and legacy
HTTP+SSE at /sse + /messages/ (SseServerTransport), on a port the OS picks.
Prints `PORT <n>` on stdout once listening; same environment as the stdio one, with the
repository root on PYTHONPATH (tests/proxy/conftest.py:environment sets it).
"""

from __future__ import annotations

import contextlib
import json
import os

import anyio
import uvicorn
from mcp.server.lowlevel.server import NotificationOptions
from mcp.server.sse import SseServerTransport
from mcp.server.streamable_http_manager import StreamableHTTPSessionManager
from mcp_types.version import HANDSHAKE_PROTOCOL_VERSIONS
from starlette.applications import Starlette
from starlette.responses import Response
from starlette.routing import Mount, Route

import tests.proxy.upstream_server as upstream
from tests.proxy.upstream_server import build, record

if os.environ.get("UPSTREAM_HEADER_TOOL") == "1":
    # A tool whose `region` is mirrored in an `Mcp-Param-Region` header: at
    # 2026-07-28 the SDK server refuses a tools/call without that header.
    import mcp_types as types  # noqa: E402

    _tools = upstream.tools

    def tools_with_header_tool() -> list:
        schema = {"type": "object", "properties": {"region": {"type": "string", "x-mcp-header": "Region"}},
                  "required": ["region"]}
        return [*_tools(), types.Tool(name="regional", description="test tool regional", input_schema=schema)]

    upstream.tools = tools_with_header_tool


# 1: refuse every request whose MCP-Protocol-Version is newer than the handshake era (HTTP 400, -32022).
LEGACY_ONLY = os.environ.get("UPSTREAM_LEGACY_ONLY") == "1"


def app() -> Starlette:
    server = build()
    options = server.create_initialization_options(NotificationOptions(tools_changed=True))
    manager = StreamableHTTPSessionManager(server, session_idle_timeout=None)
    sse = SseServerTransport("/messages/")

    async def handle_sse(request):
        async with sse.connect_sse(request.scope, request.receive, request._send) as (read, write):
            await server.run(read, write, options)
        return Response()

    @contextlib.asynccontextmanager
    async def lifespan(_app):
        async with manager.run():
            yield

    async def streamable(scope, receive, send) -> None:
        headers = dict(scope.get("headers", []))
        if scope["type"] == "http" and scope["method"] == "POST":
            version = headers.get(b"mcp-protocol-version", b"").decode() or None
            # `via`: the X-Gate-Replica header a gate was told to send (--upstream-header), for scale-out tests.
            record({"event": "post", "method": headers.get(b"mcp-method", b"").decode(), "version": version,
                    "via": headers.get(b"x-gate-replica", b"").decode() or None})
            if LEGACY_ONLY and version is not None and version not in HANDSHAKE_PROTOCOL_VERSIONS:
                # A server that speaks only the handshake era, as a 2025-11-25 SDK answers a newer version.
                body = json.dumps({"jsonrpc": "2.0", "id": None, "error": {
                    "code": -32022, "message": f"Unsupported protocol version: {version}",
                    "data": {"supported": list(HANDSHAKE_PROTOCOL_VERSIONS), "requested": version}}}).encode()
                await send({"type": "http.response.start", "status": 400,
                            "headers": [(b"content-type", b"application/json")]})
                await send({"type": "http.response.body", "body": body})
                return
        if scope["type"] != "http" or scope["method"] != "DELETE":
            await manager.handle_request(scope, receive, send)
            return
        # A session's end, as the upstream sees it: which session, and what it answered.
        session = dict(scope["headers"]).get(b"mcp-session-id", b"").decode()
        status: list[int] = []

        async def recording_send(message) -> None:
            if message["type"] == "http.response.start":
                status.append(message["status"])
            await send(message)

        await manager.handle_request(scope, receive, recording_send)
        record({"event": "delete", "session": session, "status": status[0] if status else None})

    return Starlette(
        routes=[
            Mount("/mcp", app=streamable),
            Route("/sse", endpoint=handle_sse, methods=["GET"]),
            Mount("/messages/", app=sse.handle_post_message),
        ],
        lifespan=lifespan,
    )


async def main() -> None:
    record({"event": "start", "pid": os.getpid(), "marker": os.environ.get("PROXY_TEST_MARKER")})
    # UPSTREAM_TLS_CERT and UPSTREAM_TLS_KEY (PEM files): serve https instead.
    tls = {"ssl_certfile": os.environ["UPSTREAM_TLS_CERT"], "ssl_keyfile": os.environ["UPSTREAM_TLS_KEY"]} if (
        "UPSTREAM_TLS_CERT" in os.environ) else {}
    config = uvicorn.Config(app(), host="127.0.0.1", port=0, log_level="warning", **tls)
    server = uvicorn.Server(config)

    async def announce() -> None:
        while not server.started:
            await anyio.sleep(0.01)
        port = server.servers[0].sockets[0].getsockname()[1]
        print(f"PORT {port}", flush=True)

    async with anyio.create_task_group() as tg:
        tg.start_soon(announce)
        await server.serve()


if __name__ == "__main__":
    anyio.run(main)
